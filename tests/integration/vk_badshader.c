/* SPDX-License-Identifier: MIT */
/*
 * vk_badshader: invalid SPIR-V must be refused with VK_ERROR_INVALID_SHADER_NV
 * (gpud validates every module before its host driver sees it), and the
 * application must be able to carry on: a valid module is created after.
 *
 *   vk_badshader [--device NAME]
 */
#include <stdio.h>
#include <string.h>

#include "vkt_common.h"

#include "compute_comp_spv.h"

static VkResult
create(VkDevice device, const uint32_t *code, size_t size)
{
   VkShaderModuleCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
      .codeSize = size,
      .pCode = code,
   };
   VkShaderModule module = VK_NULL_HANDLE;
   VkResult r = vkCreateShaderModule(device, &info, NULL, &module);
   if (r == VK_SUCCESS)
      vkDestroyShaderModule(device, module, NULL);
   return r;
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_badshader [--device NAME]\n");
         return 2;
      }
   }
   struct vkt_context ctx;
   vkt_context_init(&ctx, "vk_badshader", device_name, 0);

   /* A header claiming SPIR-V, then noise. */
   uint32_t noise[64] = {0x07230203, 0x00010000, 0, 100, 0};
   for (unsigned i = 5; i < VKT_ARRAY_SIZE(noise); i++)
      noise[i] = 0x9e3779b9u * i ^ (i << 7);
   VKT_EXPECT(create(ctx.device, noise, sizeof(noise)), VK_ERROR_INVALID_SHADER_NV);

   /* A valid module cut short. */
   VKT_EXPECT(create(ctx.device, compute_comp_spv, sizeof(compute_comp_spv) / 2 & ~3u),
              VK_ERROR_INVALID_SHADER_NV);

   /* A valid module with one instruction's word count broken. */
   uint32_t broken[sizeof(compute_comp_spv) / 4];
   memcpy(broken, compute_comp_spv, sizeof(broken));
   broken[5] = 0xffff0000u | (broken[5] & 0xffffu);
   VKT_EXPECT(create(ctx.device, broken, sizeof(broken)), VK_ERROR_INVALID_SHADER_NV);

   /* The application carries on. */
   VKT_EXPECT(create(ctx.device, compute_comp_spv, sizeof(compute_comp_spv)), VK_SUCCESS);
   printf("vk_badshader: OK: invalid SPIR-V refused on '%s'\n", ctx.props.deviceName);
   vkt_context_finish(&ctx);
   return 0;
}
