/* SPDX-License-Identifier: MIT */
/*
 * vk_compute: runs tests/shaders/compute.comp over 1<<20 uints in
 * host-visible storage buffers (descriptor set + push constants) and checks
 * every element against the same integer math on the CPU.
 *
 *   vk_compute [--device NAME] [--iterations N] [--print-ready] [--until FILE]
 *
 * --until FILE keeps iterating (at least N times) until FILE exists: a
 * client that computes throughout whatever a test does beside it.
 *              [--elements N]
 *
 * --print-ready prints "READY" once the device exists (the multi-client test
 * kills the process after that); each iteration uses a new seed and new
 * input, so a stale or partial result never passes.
 *
 * Odd iterations take the other paths: the descriptors are first written
 * swapped, then put right with a descriptor update template (one entry of
 * two descriptors rolling over into the next binding), and the dispatch is
 * recorded in a secondary command buffer run by vkCmdExecuteCommands. The
 * pipeline is created through a pipeline cache whose data is read back,
 * checked and fed to a second cache.
 *
 * --stage-chains makes the pipeline with what programs such as llama.cpp's
 * ggml chain to theirs (its instance is then "vk_chains"): full subgroups
 * of a required size (the device's largest), a specialization of a
 * constant the shader does not use, and robust storage-buffer access
 * through VK_EXT_pipeline_robustness; the results must be the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vkt_common.h"
#include "compute_comp_spv.h"

#define LOCAL_SIZE 64
#define ROUNDS 16

struct params {
   uint32_t count;
   uint32_t rounds;
   uint32_t seed;
};

static uint32_t
input_value(uint32_t i, uint32_t iteration)
{
   uint32_t x = i * 0x9e3779b9u + iteration * 0x85ebca6bu + 1u;

   x ^= x >> 16;
   x *= 0x7feb352du;
   x ^= x >> 15;
   return x;
}


/* Reads a pipeline cache's data back: it must start with the header the
 * API defines for this device, and seed a second cache. */
static void
check_pipeline_cache(const struct vkt_context *ctx, VkPipelineCache cache)
{
   size_t size = 0;
   VKT_CHECK(vkGetPipelineCacheData(ctx->device, cache, &size, NULL));
   if (size < 32)
      vkt_fail("pipeline cache data is %zu bytes, shorter than its header", size);
   uint32_t *data = malloc(size);
   if (!data)
      vkt_fail("out of memory");
   VKT_CHECK(vkGetPipelineCacheData(ctx->device, cache, &size, data));
   if (data[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
       data[2] != ctx->props.vendorID || data[3] != ctx->props.deviceID ||
       memcmp(&data[4], ctx->props.pipelineCacheUUID, VK_UUID_SIZE))
      vkt_fail("pipeline cache header does not describe this device");
   const VkPipelineCacheCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
      .initialDataSize = size,
      .pInitialData = data,
   };
   VkPipelineCache seeded;
   VKT_CHECK(vkCreatePipelineCache(ctx->device, &info, NULL, &seeded));
   VKT_CHECK(vkMergePipelineCaches(ctx->device, seeded, 1, &cache));
   vkDestroyPipelineCache(ctx->device, seeded, NULL);
   free(data);
}

static void
usage(void)
{
   fprintf(stderr, "usage: vk_compute [--device NAME] [--iterations N] [--until FILE] "
                   "[--print-ready] [--elements N] [--stage-chains]\n");
   exit(1);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   uint64_t iterations = 1;
   uint64_t count = 1u << 20;
   bool print_ready = false;
   bool chains = false;
   const char *until = NULL;
   struct vkt_context ctx;

   vkt_set_prog("vk_compute");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc)
         device_name = argv[++i];
      else if (!strcmp(argv[i], "--iterations"))
         iterations = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else if (!strcmp(argv[i], "--elements"))
         count = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else if (!strcmp(argv[i], "--print-ready"))
         print_ready = true;
      else if (!strcmp(argv[i], "--until") && i + 1 < argc)
         until = argv[++i];
      else if (!strcmp(argv[i], "--stage-chains"))
         chains = true;
      else
         usage();
   }
   if (count == 0 || count > UINT32_MAX / 4)
      vkt_fail("--elements must be between 1 and %u", UINT32_MAX / 4);

   VkPhysicalDevicePipelineRobustnessFeaturesEXT robust_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT,
      .pipelineRobustness = VK_TRUE,
   };
   static const char *const robust_ext[] = {VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME};
   if (chains)
      vkt_context_init_ext(&ctx, "vk_chains", device_name, VKT_FEATURE_SUBGROUP_SIZE_CONTROL,
                           robust_ext, 1, &robust_features);
   else
      vkt_context_init(&ctx, "vk_compute", device_name, 0);
   if (print_ready) {
      printf("READY\n");
      fflush(stdout);
   }

   const VkDeviceSize size = count * sizeof(uint32_t);
   struct vkt_buffer in, out;
   vkt_buffer_create(&ctx, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &in);
   vkt_buffer_create(&ctx, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true,
                     &out);

   /* Descriptor set layout, pool and set for the two storage buffers. */
   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
        NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
        NULL },
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = VKT_ARRAY_SIZE(bindings),
      .pBindings = bindings,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL,
                                         &set_layout));

   VkDescriptorPool pool;
   const VkDescriptorSet set =
      vkt_descriptor_set(&ctx, set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2, &pool);

   const VkDescriptorBufferInfo buffer_infos[] = {
      { in.buffer, 0, VK_WHOLE_SIZE },
      { out.buffer, 0, size },
   };
   const VkWriteDescriptorSet writes[] = {
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = set,
         .dstBinding = 0,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &buffer_infos[0],
      },
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = set,
         .dstBinding = 1,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &buffer_infos[1],
      },
   };
   /* Pipeline. */
   const VkPushConstantRange push_range = {
      VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(struct params)
   };
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &push_range,
   };
   VkPipelineLayout layout;
   VKT_CHECK(vkCreatePipelineLayout(ctx.device, &layout_info, NULL, &layout));

   VkShaderModule module =
      vkt_shader_module(&ctx, compute_comp_spv, sizeof(compute_comp_spv));
   /* Creation feedback: the driver writes it through pointers inside the
    * create info (core in 1.3). */
   VkPipelineCreationFeedback feedback = {0}, stage_feedback = {0};
   VkPipelineCreationFeedbackCreateInfo feedback_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
      .pPipelineCreationFeedback = &feedback,
      .pipelineStageCreationFeedbackCount = 1,
      .pPipelineStageCreationFeedbacks = &stage_feedback,
   };
   VkComputePipelineCreateInfo pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .pNext = &feedback_info,
      .stage = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_COMPUTE_BIT,
         .module = module,
         .pName = "main",
      },
      .layout = layout,
   };
   /* --stage-chains: what the stage and the pipeline chain */
   VkPhysicalDeviceSubgroupSizeControlProperties subgroup_sizes = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES,
   };
   VkPhysicalDeviceProperties2 props2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &subgroup_sizes,
   };
   VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required_size = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
   };
   const uint32_t unused_constant = 7;
   const VkSpecializationMapEntry spec_entry = {
      .constantID = 7, .offset = 0, .size = sizeof(unused_constant),
   };
   const VkSpecializationInfo spec = {
      .mapEntryCount = 1,
      .pMapEntries = &spec_entry,
      .dataSize = sizeof(unused_constant),
      .pData = &unused_constant,
   };
   VkPipelineRobustnessCreateInfoEXT robustness = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
      .pNext = pipeline_info.pNext,
      .storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_EXT,
      .uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
      .vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
      .images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT,
   };
   if (chains) {
      vkGetPhysicalDeviceProperties2(ctx.physical_device, &props2);
      if (!(subgroup_sizes.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
          !subgroup_sizes.maxSubgroupSize || LOCAL_SIZE % subgroup_sizes.maxSubgroupSize)
         vkt_fail("no required subgroup size for a compute stage of %u invocations "
                  "(stages 0x%x, largest size %u)", LOCAL_SIZE,
                  subgroup_sizes.requiredSubgroupSizeStages, subgroup_sizes.maxSubgroupSize);
      required_size.requiredSubgroupSize = subgroup_sizes.maxSubgroupSize;
      pipeline_info.stage.pNext = &required_size;
      pipeline_info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
      pipeline_info.stage.pSpecializationInfo = &spec;
      pipeline_info.pNext = &robustness;
      printf("    stage chains: full subgroups of %u, a specialization, robust storage "
             "buffers\n", required_size.requiredSubgroupSize);
   }
   const VkPipelineCacheCreateInfo cache_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
   };
   VkPipelineCache cache;
   VKT_CHECK(vkCreatePipelineCache(ctx.device, &cache_info, NULL, &cache));
   VkPipeline pipeline;
   VKT_CHECK(vkCreateComputePipelines(ctx.device, cache, 1, &pipeline_info,
                                      NULL, &pipeline));
   vkDestroyShaderModule(ctx.device, module, NULL);
   /* (lavapipe leaves the per-stage feedback alone) */
   if (!(feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT))
      vkt_fail("pipeline creation feedback not written (flags 0x%x)", feedback.flags);
   check_pipeline_cache(&ctx, cache);
   vkDestroyPipelineCache(ctx.device, cache, NULL);

   /* The same updates, as a template: both buffers in one entry. */
   const VkDescriptorUpdateTemplateEntry template_entry = {
      .dstBinding = 0,
      .dstArrayElement = 0,
      .descriptorCount = 2,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .offset = 0,
      .stride = sizeof(VkDescriptorBufferInfo),
   };
   const VkDescriptorUpdateTemplateCreateInfo template_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
      .descriptorUpdateEntryCount = 1,
      .pDescriptorUpdateEntries = &template_entry,
      .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET,
      .descriptorSetLayout = set_layout,
   };
   VkDescriptorUpdateTemplate update_template;
   VKT_CHECK(vkCreateDescriptorUpdateTemplate(ctx.device, &template_info, NULL,
                                              &update_template));
   const VkDescriptorBufferInfo swapped_infos[] = {
      { out.buffer, 0, size },
      { in.buffer, 0, size },
   };
   VkWriteDescriptorSet swapped[2];
   memcpy(swapped, writes, sizeof(swapped));
   swapped[0].pBufferInfo = &swapped_infos[0];
   swapped[1].pBufferInfo = &swapped_infos[1];

   uint32_t *in_data = in.map, *out_data = out.map;
   const uint32_t groups = (uint32_t)((count + LOCAL_SIZE - 1) / LOCAL_SIZE);
   if (groups > ctx.props.limits.maxComputeWorkGroupCount[0])
      vkt_fail("%u workgroups exceed maxComputeWorkGroupCount[0] = %u",
               groups, ctx.props.limits.maxComputeWorkGroupCount[0]);

   uint64_t done = 0;
   for (uint64_t it = 0; it < iterations || (until && access(until, F_OK) != 0); it++) {
      done = it + 1;
      const struct params p = {
         .count = (uint32_t)count,
         .rounds = ROUNDS,
         .seed = 0x1234567u + (uint32_t)it * 0x2545f491u,
      };

      for (uint32_t i = 0; i < count; i++)
         in_data[i] = input_value(i, (uint32_t)it);
      memset(out_data, 0xa5, size);
      vkt_buffer_flush(&ctx, &in);
      vkt_buffer_flush(&ctx, &out);

      const bool other_paths = it & 1;
      if (other_paths) {
         vkUpdateDescriptorSets(ctx.device, VKT_ARRAY_SIZE(swapped), swapped,
                                0, NULL);
         vkUpdateDescriptorSetWithTemplate(ctx.device, set, update_template,
                                           buffer_infos);
      } else {
         vkUpdateDescriptorSets(ctx.device, VKT_ARRAY_SIZE(writes), writes, 0,
                                NULL);
      }

      VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
      VkCommandBuffer secondary = VK_NULL_HANDLE;
      VkCommandBuffer rec = cmd;
      if (other_paths) {
         const VkCommandBufferAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = ctx.cmd_pool,
            .level = VK_COMMAND_BUFFER_LEVEL_SECONDARY,
            .commandBufferCount = 1,
         };
         const VkCommandBufferInheritanceInfo inherit = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
         };
         const VkCommandBufferBeginInfo begin = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            .pInheritanceInfo = &inherit,
         };
         VKT_CHECK(vkAllocateCommandBuffers(ctx.device, &alloc, &secondary));
         VKT_CHECK(vkBeginCommandBuffer(secondary, &begin));
         rec = secondary;
      }
      vkCmdBindPipeline(rec, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      vkCmdBindDescriptorSets(rec, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0,
                              1, &set, 0, NULL);
      vkCmdPushConstants(rec, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         sizeof(p), &p);
      vkCmdDispatch(rec, groups, 1, 1);
      if (secondary) {
         VKT_CHECK(vkEndCommandBuffer(secondary));
         vkCmdExecuteCommands(cmd, 1, &secondary);
      }
      const VkMemoryBarrier barrier = {
         .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
         .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
      };
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, NULL,
                           0, NULL);
      vkt_cmd_submit_wait(&ctx, cmd);
      if (secondary)
         vkFreeCommandBuffers(ctx.device, ctx.cmd_pool, 1, &secondary);
      vkt_buffer_invalidate(&ctx, &out);

      uint64_t bad = 0;
      for (uint32_t i = 0; i < count; i++) {
         uint32_t want = vkt_compute_expected(i, in_data[i], p.rounds, p.seed);

         if (out_data[i] == want)
            continue;
         if (bad < 10)
            fprintf(stderr,
                    "vk_compute: iteration %llu element %u: got 0x%08x, "
                    "expected 0x%08x\n",
                    (unsigned long long)it, i, out_data[i], want);
         bad++;
      }
      if (bad)
         vkt_fail("iteration %llu: %llu of %llu elements wrong",
                  (unsigned long long)it, (unsigned long long)bad,
                  (unsigned long long)count);
   }

   printf("vk_compute: OK: %llu elements x %llu iterations on '%s'\n",
          (unsigned long long)count, (unsigned long long)done,
          ctx.props.deviceName);

   vkDestroyDescriptorUpdateTemplate(ctx.device, update_template, NULL);
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &out);
   vkt_buffer_destroy(&ctx, &in);
   vkt_context_finish(&ctx);
   return 0;
}
