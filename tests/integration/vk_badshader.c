/* SPDX-License-Identifier: MIT */
/*
 * vk_badshader: invalid SPIR-V (noise, a module cut short, a broken word
 * count) and what the application gets for it.  gpud validates every
 * module (SPIRV-Tools): by default (--spirv=report) it reports what it
 * finds to the application's debug messenger (gpud-invalid-spirv) and
 * passes the module on, so the application gets the host driver's answer;
 * with --spirv=strict it refuses the module with VK_ERROR_INVALID_SHADER_NV
 * and says so to the messenger as an error.  The application carries on
 * either way: a valid module is created after.
 *
 *   vk_badshader [--device NAME] [--expect report|strict|direct]
 *
 * report (default): 3 reports, any answer but VK_ERROR_DEVICE_LOST;
 * strict: 3 reports and VK_ERROR_INVALID_SHADER_NV each time, and a fourth
 * for the noise as a shader object (VK_EXT_shader_object) where the device
 * has them;
 * direct (the host driver alone): no report, any answer but a lost device.
 */
#include <stdio.h>
#include <stdlib.h>
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

/* One invalid module: the answer the mode expects. */
static void
expect_bad(VkDevice device, const char *what, const uint32_t *code, size_t size, bool strict)
{
   VkResult r = create(device, code, size);
   printf("vk_badshader: %s: %s\n", what, vkt_result_name(r));
   if (strict ? r != VK_ERROR_INVALID_SHADER_NV : r == VK_ERROR_DEVICE_LOST)
      vkt_fail("%s: vkCreateShaderModule returned %s", what, vkt_result_name(r));
}

#ifdef VK_EXT_shader_object
/* vkCreateShadersEXT with invalid SPIR-V under --spirv=strict: refused
 * with VK_ERROR_INVALID_SHADER_NV.  False when the device has no shader
 * objects. */
static bool
shader_object_refused(VkInstance instance, const char *device_name, const uint32_t *code,
                      size_t size)
{
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);
   if (!vkt_device_has_extension(pdev, VK_EXT_SHADER_OBJECT_EXTENSION_NAME)) {
      printf("vk_badshader: shader object: the device has no VK_EXT_shader_object\n");
      return false;
   }
   static const char *const exts[] = {VK_EXT_SHADER_OBJECT_EXTENSION_NAME};
   VkPhysicalDeviceShaderObjectFeaturesEXT want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_OBJECT_FEATURES_EXT,
      .shaderObject = VK_TRUE,
   };
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   ctx.prog = "vk_badshader";
   vkt_context_init_physical_ext(&ctx, instance, pdev, 0, exts, 1, &want);
   PFN_vkCreateShadersEXT create_shaders =
      (PFN_vkCreateShadersEXT)vkGetDeviceProcAddr(ctx.device, "vkCreateShadersEXT");
   if (!create_shaders)
      vkt_fail("VK_EXT_shader_object without vkCreateShadersEXT");
   const VkShaderCreateInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_SHADER_CREATE_INFO_EXT,
      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
      .codeType = VK_SHADER_CODE_TYPE_SPIRV_EXT,
      .codeSize = size,
      .pCode = code,
      .pName = "main",
   };
   VkShaderEXT shader = (VkShaderEXT)(uintptr_t)1;
   VkResult r = create_shaders(ctx.device, 1, &info, NULL, &shader);
   printf("vk_badshader: noise as a shader object: %s\n", vkt_result_name(r));
   if (r != VK_ERROR_INVALID_SHADER_NV || shader != VK_NULL_HANDLE)
      vkt_fail("vkCreateShadersEXT of noise returned %s (shader %s)", vkt_result_name(r),
               shader ? "not null" : "null");
   vkt_context_finish_device(&ctx);
   return true;
}
#endif

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   const char *expect = "report";
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--expect") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "report") || !strcmp(argv[i + 1], "strict") ||
                  !strcmp(argv[i + 1], "direct"))) {
         expect = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_badshader [--device NAME] [--expect report|strict|direct]\n");
         return 2;
      }
   }
   const bool strict = !strcmp(expect, "strict");
   const unsigned reports = strcmp(expect, "direct") ? 3 : 0;
   vkt_set_prog("vk_badshader");
   struct vkt_message_count count = {.id_name = "gpud-invalid-spirv"};
   VkInstance instance = vkt_instance_counting("vk_badshader", &count);
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   ctx.prog = "vk_badshader";
   vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, device_name), 0);

   /* A header claiming SPIR-V, then noise. */
   uint32_t noise[64] = {0x07230203, 0x00010000, 0, 100, 0};
   for (unsigned i = 5; i < VKT_ARRAY_SIZE(noise); i++)
      noise[i] = 0x9e3779b9u * i ^ (i << 7);
   expect_bad(ctx.device, "noise", noise, sizeof(noise), strict);

   /* A valid module cut short. */
   expect_bad(ctx.device, "a module cut short", compute_comp_spv,
              sizeof(compute_comp_spv) / 2 & ~3u, strict);

   /* A valid module with one instruction's word count broken. */
   uint32_t broken[sizeof(compute_comp_spv) / 4];
   memcpy(broken, compute_comp_spv, sizeof(broken));
   broken[5] = 0xffff0000u | (broken[5] & 0xffffu);
   expect_bad(ctx.device, "a broken word count", broken, sizeof(broken), strict);

   /* The application carries on. */
   VKT_EXPECT(create(ctx.device, compute_comp_spv, sizeof(compute_comp_spv)), VK_SUCCESS);
   vkt_context_finish_device(&ctx);
   unsigned expected = reports;
#ifdef VK_EXT_shader_object
   /* Shader objects take their SPIR-V themselves: refused as a module's
    * is (only under strict: the host driver parses a shader object's code
    * at once, and what it does with noise is its own affair). */
   if (strict && shader_object_refused(instance, device_name, noise, sizeof(noise)))
      expected++;
#endif
   if (count.count != expected)
      vkt_fail("the messenger saw %u reports of invalid SPIR-V, expected %u", count.count,
               expected);
   printf("vk_badshader: OK (%s): %u reports of invalid SPIR-V on '%s'\n", expect, count.count,
          ctx.props.deviceName);
   vkt_message_count_finish(&count);
   vkDestroyInstance(instance, NULL);
   return 0;
}
