/* SPDX-License-Identifier: MIT */
/*
 * vk_zinkspirv: SPIR-V that drivers compile and SPIRV-Tools refuses, as
 * OpenGL through Zink writes it, renders as on the host driver directly.
 * Two fragment shaders (tests/shaders/zink_*.spvasm): one decorates
 * BuiltIn SampleId without the SampleRateShading capability, one demotes
 * to a helper invocation without the DemoteToHelperInvocation capability.
 * Each covers a 64x64 target cleared to black; the pixels must be red
 * (SampleId 0 of a single sample) and, for the demote, black left of x = 32
 * and blue from there.  Where the device has VK_EXT_graphics_pipeline_library
 * the SampleId shader renders once more with its code chained to the
 * pipeline stage (VkShaderModuleCreateInfo, no module), as that extension
 * and VK_KHR_maintenance5 allow.  The application's messenger counts gpud's
 * reports of invalid SPIR-V (gpud-invalid-spirv): --reports N says how many
 * must come (one a shader through gpud, the default; 0 on the host driver
 * directly).
 *
 *   vk_zinkspirv [--device NAME] [--reports N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

#include "quad_vert_spv.h"
#include "zink_demote_spv.h"
#include "zink_sampleid_spv.h"

#define PROG "vk_zinkspirv"
#define SIZE 64u

struct quad_push {
   float rect[4];
   float color[4];
};

/* chained: the fragment shader's code in the stage's chain, no module */
static void
render(struct vkt_context *ctx, const uint32_t *frag, size_t frag_size, const char *name,
       bool chained, struct vkt_buffer *readback)
{
   struct vkt_color_target target;
   vkt_color_target_init(ctx, SIZE, &target);
   const VkPushConstantRange push_range = {VK_SHADER_STAGE_VERTEX_BIT, 0,
                                           sizeof(struct quad_push)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &push_range,
   };
   VkPipelineLayout layout;
   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &layout));
   VkShaderModule vs = vkt_shader_module(ctx, quad_vert_spv, sizeof(quad_vert_spv));
   VkShaderModule fs = chained ? VK_NULL_HANDLE : vkt_shader_module(ctx, frag, frag_size);
   const VkShaderModuleCreateInfo code = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
      .codeSize = frag_size,
      .pCode = frag,
   };
   VkPipelineShaderStageCreateInfo stages[] = {
      vkt_shader_stage(VK_SHADER_STAGE_VERTEX_BIT, vs),
      vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs),
   };
   stages[1].pNext = chained ? &code : NULL;
   const struct vkt_graphics g = {
      .stages = stages,
      .n_stages = VKT_ARRAY_SIZE(stages),
      .layout = layout,
      .render_pass = target.render_pass,
      .size = SIZE,
   };
   VkPipeline pipeline;
   VkResult r = vkt_graphics_pipeline_try(ctx, &g, &pipeline);
   if (r != VK_SUCCESS)
      vkt_fail("%s: vkCreateGraphicsPipelines returned %s", name, vkt_result_name(r));
   vkDestroyShaderModule(ctx->device, vs, NULL);
   if (fs)
      vkDestroyShaderModule(ctx->device, fs, NULL);

   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   const VkClearValue clear = {.color = {.float32 = {0, 0, 0, 1}}};
   const VkRenderPassBeginInfo rp_begin = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
      .renderPass = target.render_pass,
      .framebuffer = target.framebuffer,
      .renderArea = {{0, 0}, {SIZE, SIZE}},
      .clearValueCount = 1,
      .pClearValues = &clear,
   };
   vkCmdBeginRenderPass(cmd, &rp_begin, VK_SUBPASS_CONTENTS_INLINE);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   const struct quad_push full = {{-1, -1, 1, 1}, {0, 0, 0, 0}};
   vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(full), &full);
   vkCmdDraw(cmd, 6, 1, 0, 0);
   vkCmdEndRenderPass(cmd);
   const VkImageMemoryBarrier to_copy = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
      .oldLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = target.image,
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                        VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 1, &to_copy);
   const VkBufferImageCopy region = {
      .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
      .imageExtent = {SIZE, SIZE, 1},
   };
   vkCmdCopyImageToBuffer(cmd, target.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                          readback->buffer, 1, &region);
   const VkMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                        &to_host, 0, NULL, 0, NULL);
   vkt_cmd_submit_wait(ctx, cmd);
   vkt_buffer_invalidate(ctx, readback);
   vkDestroyPipeline(ctx->device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx->device, layout, NULL);
   vkt_color_target_finish(ctx, &target);
}

/* Every pixel as want(x) says. */
static void
check(const struct vkt_buffer *readback, const char *name, const uint8_t left[4],
      const uint8_t right[4])
{
   const uint8_t *px = readback->map;
   for (uint32_t y = 0; y < SIZE; y++) {
      for (uint32_t x = 0; x < SIZE; x++) {
         const uint8_t *got = px + (y * SIZE + x) * 4;
         const uint8_t *want = x < SIZE / 2 ? left : right;
         if (memcmp(got, want, 4))
            vkt_fail("%s: pixel (%u,%u) is (%u, %u, %u, %u), expected (%u, %u, %u, %u)", name,
                     x, y, got[0], got[1], got[2], got[3], want[0], want[1], want[2], want[3]);
      }
   }
   printf(PROG ": %s: OK: %u pixels as the shader says\n", name, SIZE * SIZE);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   int reports = -2; /* one a shader */
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--reports") && i + 1 < argc) {
         reports = atoi(argv[++i]);
      } else {
         fprintf(stderr, "usage: " PROG " [--device NAME] [--reports N]\n");
         return 2;
      }
   }
   vkt_set_prog(PROG);
   struct vkt_message_count count = {.id_name = "gpud-invalid-spirv"};
   VkInstance instance = vkt_instance_counting(PROG, &count);
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   ctx.prog = PROG;
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);
   const char *const gpl[] = {VK_EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION_NAME};
   const bool chained = vkt_device_has_extension(pdev, gpl[0]);
   VkPhysicalDeviceGraphicsPipelineLibraryFeaturesEXT gpl_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT,
      .graphicsPipelineLibrary = VK_TRUE,
   };
   if (chained)
      vkt_context_init_physical_ext(&ctx, instance, pdev, 0, gpl, 1, &gpl_features);
   else
      vkt_context_init_physical(&ctx, instance, pdev, 0);
   if (reports == -2)
      reports = chained ? 3 : 2;
   struct vkt_buffer readback;
   vkt_buffer_create(&ctx, SIZE * SIZE * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &readback);

   static const uint8_t red[4] = {255, 0, 0, 255};
   static const uint8_t black[4] = {0, 0, 0, 255};
   static const uint8_t blue[4] = {0, 0, 255, 255};
   render(&ctx, zink_sampleid_spv, sizeof(zink_sampleid_spv), "SampleId without SampleRateShading",
          false, &readback);
   check(&readback, "SampleId without SampleRateShading", red, red);
   render(&ctx, zink_demote_spv, sizeof(zink_demote_spv),
          "OpDemoteToHelperInvocation without its capability", false, &readback);
   check(&readback, "OpDemoteToHelperInvocation without its capability", black, blue);
   if (chained) {
      render(&ctx, zink_sampleid_spv, sizeof(zink_sampleid_spv),
             "SampleId without SampleRateShading, chained to the stage", true, &readback);
      check(&readback, "SampleId without SampleRateShading, chained to the stage", red, red);
   } else {
      printf(PROG ": no VK_EXT_graphics_pipeline_library: no code chained to a stage\n");
   }

   vkt_buffer_destroy(&ctx, &readback);
   vkt_context_finish_device(&ctx);
   if (reports >= 0 && count.count != (unsigned)reports)
      vkt_fail("the messenger saw %u reports of invalid SPIR-V, expected %d", count.count,
               reports);
   printf(PROG ": OK: on '%s', %u reports of invalid SPIR-V\n", ctx.props.deviceName,
          count.count);
   vkt_message_count_finish(&count);
   vkDestroyInstance(instance, NULL);
   return 0;
}
