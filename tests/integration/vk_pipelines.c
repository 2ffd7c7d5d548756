/* SPDX-License-Identifier: MIT */
/*
 * vk_pipelines: compute pipelines created on several threads at once, as
 * llama.cpp, game engines and translation layers create them, each checked
 * by what it computes.
 *
 *   vk_pipelines [--device NAME] [--threads N] [--rounds N] [--compile-required N]
 *
 * Every thread, every round: a shader module, pipelines whose
 * specialization constants are the thread's and the round's (one, or three
 * made by one vkCreateComputePipelines), the module destroyed at once, the
 * pipelines run one after the other over a buffer of the thread's and the
 * result checked against the CPU's; then the pipelines destroyed.  Then each
 * thread asks N times for a pipeline with
 * VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT: the answer must
 * be VK_PIPELINE_COMPILE_REQUIRED with no pipeline, or VK_SUCCESS with one
 * that computes right; the counts are printed.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "spec_comp_spv.h"

#define ELEMENTS 4096
#define LOCAL_SIZE 64

struct shared {
   struct vkt_context ctx;
   pthread_mutex_t queue_mutex; /* the queue is externally synchronized */
   VkDescriptorSetLayout set_layout;
   VkPipelineLayout layout;
   uint32_t rounds;
   uint32_t compile_required;
};

struct worker {
   struct shared *s;
   uint32_t index;
   pthread_t thread;
   VkCommandPool pool;
   VkDescriptorPool descriptor_pool;
   VkDescriptorSet set;
   struct vkt_buffer buf;
   /* what the compile-required requests answered */
   uint32_t required, made;
};

static VkShaderModule
spec_module(const struct vkt_context *ctx)
{
   return vkt_shader_module(ctx, spec_comp_spv, sizeof(spec_comp_spv));
}

/* Creates n pipelines in one call, pipeline k multiplying by mul + k and
 * adding add + k. */
static VkResult
create_pipelines(const struct shared *s, VkShaderModule module, uint32_t n, uint32_t mul,
                 uint32_t add, VkPipelineCreateFlags flags, VkPipeline *pipelines)
{
   const VkSpecializationMapEntry entries[2] = {
      {.constantID = 0, .offset = 0, .size = 4},
      {.constantID = 1, .offset = 4, .size = 4},
   };
   uint32_t values[3][2];
   VkSpecializationInfo spec[3];
   VkComputePipelineCreateInfo infos[3];
   for (uint32_t k = 0; k < n; k++) {
      values[k][0] = mul + k;
      values[k][1] = add + k;
      spec[k] = (VkSpecializationInfo){
         .mapEntryCount = 2,
         .pMapEntries = entries,
         .dataSize = sizeof(values[k]),
         .pData = values[k],
      };
      infos[k] = (VkComputePipelineCreateInfo){
         .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
         .flags = flags,
         .stage =
            {
               .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
               .stage = VK_SHADER_STAGE_COMPUTE_BIT,
               .module = module,
               .pName = "main",
               .pSpecializationInfo = &spec[k],
            },
         .layout = s->layout,
         .basePipelineIndex = -1,
      };
   }
   return vkCreateComputePipelines(s->ctx.device, VK_NULL_HANDLE, n, infos, NULL, pipelines);
}

/* Runs the pipelines one after the other over the thread's buffer, whose
 * element i starts as seed ^ i, and checks every element. */
static void
run_and_check(struct worker *w, const VkPipeline *pipelines, uint32_t n, uint32_t mul,
              uint32_t add, uint32_t seed)
{
   const struct vkt_context *ctx = &w->s->ctx;
   uint32_t *data = w->buf.map;
   for (uint32_t i = 0; i < ELEMENTS; i++)
      data[i] = seed ^ i;
   vkt_buffer_flush(ctx, &w->buf);

   VkCommandBuffer cmd = vkt_cmd_begin_pool(ctx, w->pool);
   const uint32_t count = ELEMENTS;
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, w->s->layout, 0, 1, &w->set, 0,
                           NULL);
   vkCmdPushConstants(cmd, w->s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(count), &count);
   for (uint32_t k = 0; k < n; k++) {
      if (k) {
         const VkMemoryBarrier barrier = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
         };
         vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, NULL, 0,
                              NULL);
      }
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines[k]);
      vkCmdDispatch(cmd, ELEMENTS / LOCAL_SIZE, 1, 1);
   }
   VKT_CHECK(vkEndCommandBuffer(cmd));

   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &fence));
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   pthread_mutex_lock(&w->s->queue_mutex);
   VkResult r = vkQueueSubmit(ctx->queue, 1, &submit, fence);
   pthread_mutex_unlock(&w->s->queue_mutex);
   VKT_CHECK(r);
   r = vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 60000000000ull);
   if (r == VK_TIMEOUT)
      vkt_fail("thread %u: the dispatches did not complete within 60 s", w->index);
   VKT_CHECK(r);
   vkDestroyFence(ctx->device, fence, NULL);
   VKT_CHECK(vkResetCommandPool(ctx->device, w->pool, 0));

   vkt_buffer_invalidate(ctx, &w->buf);
   for (uint32_t i = 0; i < ELEMENTS; i++) {
      uint32_t v = seed ^ i;
      for (uint32_t k = 0; k < n; k++)
         v = v * (mul + k) + add + k;
      if (data[i] != v)
         vkt_fail("thread %u: element %u is %u, expected %u (pipelines %u, x%u + %u)", w->index,
                  i, data[i], v, n, mul, add);
   }
}

static void *
worker_main(void *data)
{
   struct worker *w = data;
   const struct shared *s = w->s;
   for (uint32_t round = 0; round < s->rounds; round++) {
      uint32_t n = round % 3 == 2 ? 3 : 1;
      uint32_t mul = 3 + 2 * (w->index * s->rounds + round);
      uint32_t add = 1000 * w->index + round;
      VkShaderModule module = spec_module(&s->ctx);
      VkPipeline pipelines[3] = {VK_NULL_HANDLE};
      VKT_CHECK(create_pipelines(s, module, n, mul, add, 0, pipelines));
      /* a module may go once its pipelines exist */
      vkDestroyShaderModule(s->ctx.device, module, NULL);
      for (uint32_t k = 0; k < n; k++) {
         if (pipelines[k] == VK_NULL_HANDLE)
            vkt_fail("thread %u: vkCreateComputePipelines succeeded without pipeline %u",
                     w->index, k);
      }
      run_and_check(w, pipelines, n, mul, add, 0x5eed0000u + w->index * 977u + round);
      for (uint32_t k = 0; k < n; k++)
         vkDestroyPipeline(s->ctx.device, pipelines[k], NULL);
   }

   VkShaderModule module = spec_module(&s->ctx);
   for (uint32_t i = 0; i < s->compile_required; i++) {
      VkPipeline pipeline = VK_NULL_HANDLE;
      uint32_t mul = 7 + 2 * i, add = w->index;
      VkResult r = create_pipelines(s, module, 1, mul, add,
                                    VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT,
                                    &pipeline);
      if (r == VK_PIPELINE_COMPILE_REQUIRED) {
         if (pipeline != VK_NULL_HANDLE)
            vkt_fail("thread %u: VK_PIPELINE_COMPILE_REQUIRED with a pipeline", w->index);
         w->required++;
      } else if (r == VK_SUCCESS) {
         if (pipeline == VK_NULL_HANDLE)
            vkt_fail("thread %u: VK_SUCCESS without a pipeline", w->index);
         /* (a host that had it: it must compute as asked) */
         if (w->made < 4)
            run_and_check(w, &pipeline, 1, mul, add, i);
         vkDestroyPipeline(s->ctx.device, pipeline, NULL);
         w->made++;
      } else {
         vkt_fail("thread %u: a creation that may fail returned %s", w->index,
                  vkt_result_name(r));
      }
   }
   vkDestroyShaderModule(s->ctx.device, module, NULL);
   return NULL;
}

static void
worker_init(struct worker *w, struct shared *s, uint32_t index)
{
   const struct vkt_context *ctx = &s->ctx;
   w->s = s;
   w->index = index;
   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = ctx->queue_family,
   };
   VKT_CHECK(vkCreateCommandPool(ctx->device, &pool_info, NULL, &w->pool));
   w->set = vkt_descriptor_set(ctx, s->set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                               &w->descriptor_pool);
   vkt_buffer_create(ctx, ELEMENTS * sizeof(uint32_t), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true,
                     &w->buf);
   vkt_write_buffers(ctx, w->set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &w->buf.buffer, 1);
}

static void
worker_finish(struct worker *w)
{
   const struct vkt_context *ctx = &w->s->ctx;
   vkt_buffer_destroy(ctx, &w->buf);
   vkDestroyDescriptorPool(ctx->device, w->descriptor_pool, NULL);
   vkDestroyCommandPool(ctx->device, w->pool, NULL);
}

static void
usage(void)
{
   fprintf(stderr, "usage: vk_pipelines [--device NAME] [--threads N] [--rounds N] "
                   "[--compile-required N]\n");
   exit(1);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   uint64_t threads = 8, rounds = 6, compile_required = 0;
   vkt_set_prog("vk_pipelines");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc)
         device_name = argv[++i];
      else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
         threads = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
         rounds = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else if (!strcmp(argv[i], "--compile-required") && i + 1 < argc)
         compile_required = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else
         usage();
   }
   if (threads == 0 || threads > 64 || rounds > 100000 || compile_required > 1000000)
      vkt_fail("--threads must be 1 to 64, --rounds at most 100000, --compile-required at "
               "most 1000000");

   static struct shared s;
   vkt_context_init(&s.ctx, "vk_pipelines", device_name,
                    compile_required ? VKT_FEATURE_PIPELINE_CACHE_CONTROL : 0);
   pthread_mutex_init(&s.queue_mutex, NULL);
   s.rounds = (uint32_t)rounds;
   s.compile_required = (uint32_t)compile_required;
   const VkDescriptorSetLayoutBinding binding = {
      .binding = 0,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .descriptorCount = 1,
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(s.ctx.device, &set_layout_info, NULL, &s.set_layout));
   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &s.set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(s.ctx.device, &layout_info, NULL, &s.layout));

   struct worker *workers = calloc(threads, sizeof(*workers));
   if (!workers)
      vkt_fail("out of memory");
   for (uint32_t i = 0; i < threads; i++)
      worker_init(&workers[i], &s, i);
   uint64_t t0 = vkt_now_ns();
   for (uint32_t i = 0; i < threads; i++) {
      if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0)
         vkt_fail("pthread_create failed");
   }
   uint32_t required = 0, made = 0;
   for (uint32_t i = 0; i < threads; i++) {
      pthread_join(workers[i].thread, NULL);
      required += workers[i].required;
      made += workers[i].made;
   }
   uint64_t t1 = vkt_now_ns();
   for (uint32_t i = 0; i < threads; i++)
      worker_finish(&workers[i]);
   free(workers);
   vkDestroyPipelineLayout(s.ctx.device, s.layout, NULL);
   vkDestroyDescriptorSetLayout(s.ctx.device, s.set_layout, NULL);
   vkt_context_finish(&s.ctx);
   printf("pipelines: %" PRIu64 " threads x %" PRIu64 " rounds computed right in %.3f s\n",
          threads, rounds, (double)(t1 - t0) / 1e9);
   printf("compile required: %u answered VK_PIPELINE_COMPILE_REQUIRED, %u made\n", required,
          made);
   return 0;
}
