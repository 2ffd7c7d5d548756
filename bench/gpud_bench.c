/* SPDX-License-Identifier: MIT */
/*
 * gpud_bench: the cost of going through gpud, measured in one run against
 * lavapipe used directly.
 *
 * Run with VK_ICD_FILENAMES listing both lavapipe's manifest and gpud's
 * (bench/run_bench.sh does that and starts a private daemon). The device
 * whose name contains "gpud" is measured through the daemon, the other
 * llvmpipe device directly; --direct-only measures lavapipe alone.
 *
 *   (a) round trip of one synchronous call that reaches the host driver:
 *       vkGetPipelineCacheData's size, and a vkCreateBuffer +
 *       vkDestroyBuffer pair; a set event's vkGetEventStatus and a
 *       signalled fence's vkGetFenceStatus (both answered in the
 *       application through gpud), and an
 *       empty submit's reset + submit + vkWaitForFences, a timeline
 *       semaphore's vkGetSemaphoreCounterValue (medians)
 *   (b) write bandwidth into mapped host-visible memory (256 MiB): first
 *       touch (and from vkAllocateMemory to the end of it), memset,
 *       streaming stores
 *   (c) 100k vkCmdDraw into one command buffer (re-binding the pipeline and
 *       pushing constants every 100 draws): recording, then submit + wait
 *   (d) a new process's start: from vkCreateInstance to its first VkDevice,
 *       and from exec to exit, with only one driver listed for it (the host
 *       driver's manifest, or gpud's); medians of --starts runs, 300 ms
 *       apart
 *   (e) a frame loop: record one small draw, submit it with a fence, wait,
 *       reset the fence, --frames times (time per frame)
 *   (f) --clients processes at once (only one driver listed for them), each
 *       running that frame loop for --seconds from a common start: frames
 *       per second of all together
 *   (g) frames recorded afresh, 3 in flight (--in-flight): each frame N x (push constant +
 *       dispatch), a descriptor-set bind every 100, recorded by 1 and by 4
 *       threads (a command pool each per frame in flight; the main thread
 *       submits their command buffers together), for 2000 and 20000 pairs a
 *       frame: frames per second over --frame-seconds
 *   (h) the 100k draws of (c) from the first recorded command to the end of
 *       the wait; a GPU-bound job (50 dispatches of a compute shader whose
 *       work is calibrated on the direct driver to take 10-20 ms): recorded
 *       afresh, submitted and waited for, then submitted again
 *   (i) a new process that makes 3 instances and devices one after the
 *       other (as programs that look at the devices first do): the whole
 *       time from the first vkCreateInstance
 *   (j) staged uploads, as llama.cpp's ggml makes each token's and each
 *       prompt's inputs where it maps no device memory: write 4 KiB,
 *       64 KiB, 512 KiB, 1 MiB or 2 MiB into a mapped staging buffer, record a
 *       copy of it into a device-local buffer afresh, submit it with a
 *       fence, wait, reset the fence (medians; the last bytes checked)
 *
 *   gpud_bench [--direct-only] [--calls N] [--draws N] [--mib N] [--reps N]
 *              [--starts N] [--frames N] [--clients N] [--seconds S]
 *              [--frame-seconds S] [--groups N] [--only LIST]
 *
 * --groups: workgroups per dispatch in (g), default 1 on a GPU and 0 on a
 * CPU device (whose "GPU work" would take the CPUs being measured).  --only
 * runs only the listed parts (letters, e.g. --only ghi).
 */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "vkt_common.h"
#include "compute_comp_spv.h"
#include "quad_vert_spv.h"
#include "solid_frag_spv.h"

#define FB_SIZE 32
#define REBIND_EVERY 100
#define FRAMES_IN_FLIGHT 3     /* (g)'s default */
#define MAX_FRAMES_IN_FLIGHT 8
#define MAX_RECORD_THREADS 4
#define JOB_DISPATCHES 50
#define JOB_ELEMENTS (1u << 20)      /* on a GPU */
#define JOB_ELEMENTS_CPU (1u << 14)  /* on a CPU device */
#define START_CYCLES 3

struct options {
   bool direct_only;
   uint32_t starts;
   uint32_t calls;
   uint32_t draws;
   uint32_t mib;
   uint32_t reps;
   uint32_t frames;
   uint32_t clients;
   uint32_t seconds;
   uint32_t frame_seconds;
   int32_t groups;       /* -1: by the device type */
   uint32_t in_flight;   /* (g)'s frames in flight */
   const char *only;     /* NULL: every part */
   uint32_t job_rounds;  /* calibrated on the direct driver */
   uint64_t job_sum;     /* what the direct driver's job computed */
};

static bool
part(const struct options *o, char letter)
{
   return !o->only || strchr(o->only, letter);
}

enum metric {
   M_HOST_CALL,
   M_EVENT_STATUS,
   M_FENCE_STATUS,
   M_FENCE_SUBMIT_WAIT,
   M_COUNTER_VALUE,
   M_BUFFER_PAIR,
   M_WRITE_FIRST,
   M_WRITE_NEW,
   M_WRITE_MEMSET,
   M_WRITE_STREAM,
   M_RECORD,
   M_SUBMIT_WAIT,
   M_START_DEVICE,
   M_START_PROCESS,
   M_FRAME,
   M_FRAME_MEDIAN,
   M_FRAME_P99,
   M_CLIENTS,
   M_AFRESH_2K_1,
   M_AFRESH_2K_4,
   M_AFRESH_20K_1,
   M_AFRESH_20K_4,
   M_DRAWS_TOTAL,
   M_JOB_FIRST,
   M_JOB_AGAIN,
   M_JOB_GPU,
   M_START_CYCLES,
   M_UPLOAD_4K,
   M_UPLOAD_64K,
   M_UPLOAD_512K,
   M_UPLOAD_1M,
   M_UPLOAD_2M,
   M_COUNT,
};

static const struct {
   const char *name;
   const char *unit;
} metrics[M_COUNT] = {
   [M_HOST_CALL] = { "vkGetPipelineCacheData (size), median", "us" },
   [M_EVENT_STATUS] = { "vkGetEventStatus (set), median", "us" },
   [M_FENCE_STATUS] = { "vkGetFenceStatus (signalled), median", "us" },
   [M_FENCE_SUBMIT_WAIT] = { "empty submit + vkWaitForFences, median", "us" },
   [M_COUNTER_VALUE] = { "vkGetSemaphoreCounterValue, median", "us" },
   [M_BUFFER_PAIR] = { "vkCreateBuffer+vkDestroyBuffer, median", "us" },
   [M_WRITE_FIRST] = { "mapped write, first touch (memset)", "GB/s" },
   [M_WRITE_NEW] = { "mapped write, allocate + map + first touch", "GB/s" },
   [M_WRITE_MEMSET] = { "mapped write, memset, best", "GB/s" },
   [M_WRITE_STREAM] = { "mapped write, streaming stores, best", "GB/s" },
   [M_RECORD] = { "record draws, median", "ms" },
   [M_SUBMIT_WAIT] = { "submit + wait draws, median", "ms" },
   [M_START_DEVICE] = { "new process: instance to 1st device, median", "ms" },
   [M_START_PROCESS] = { "new process: exec to exit, median", "ms" },
   [M_FRAME] = { "frame loop: draw, submit, wait, reset", "us" },
   [M_FRAME_MEDIAN] = { "frame loop: one frame, median", "us" },
   [M_FRAME_P99] = { "frame loop: one frame, 99th percentile", "us" },
   [M_CLIENTS] = { "N processes' frame loops at once", "fps" },
   [M_AFRESH_2K_1] = { "frames afresh, 2000 pairs, 1 thread", "fps" },
   [M_AFRESH_2K_4] = { "frames afresh, 2000 pairs, 4 threads", "fps" },
   [M_AFRESH_20K_1] = { "frames afresh, 20000 pairs, 1 thread", "fps" },
   [M_AFRESH_20K_4] = { "frames afresh, 20000 pairs, 4 threads", "fps" },
   [M_DRAWS_TOTAL] = { "draws: first command to end of wait, median", "ms" },
   [M_JOB_FIRST] = { "GPU-bound job: record+submit+wait, median", "ms" },
   [M_JOB_AGAIN] = { "GPU-bound job: submit again+wait, median", "ms" },
   [M_JOB_GPU] = { "GPU-bound job: on the GPU (timestamps), median", "ms" },
   [M_START_CYCLES] = { "new process: 3 instance+device cycles", "ms" },
   [M_UPLOAD_4K] = { "staged upload 4 KiB: write, copy, wait, median", "us" },
   [M_UPLOAD_64K] = { "staged upload 64 KiB, median", "us" },
   [M_UPLOAD_512K] = { "staged upload 512 KiB, median", "us" },
   [M_UPLOAD_1M] = { "staged upload 1 MiB, median", "us" },
   [M_UPLOAD_2M] = { "staged upload 2 MiB, median", "us" },
};

static int
cmp_u64(const void *a, const void *b)
{
   uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

   return x < y ? -1 : x > y;
}

/* Median of n samples in nanoseconds, in microseconds. */
static double
median_us(uint64_t *samples, uint32_t n)
{
   qsort(samples, n, sizeof(*samples), cmp_u64);
   return (double)samples[n / 2] / 1e3;
}

/* ---- (a) round trips ---------------------------------------------------- */

static void
bench_round_trips(const struct vkt_context *ctx, const struct options *o,
                  double *results)
{
   uint64_t *samples = calloc(o->calls, sizeof(*samples));
   const VkEventCreateInfo event_info = {
      .sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO,
   };
   const VkBufferCreateInfo buffer_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = 4096,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   VkEvent event;

   if (!samples)
      vkt_fail("out of memory");
   VKT_CHECK(vkCreateEvent(ctx->device, &event_info, NULL, &event));
   VKT_CHECK(vkSetEvent(ctx->device, event));
   for (uint32_t i = 0; i < o->calls; i++) {
      uint64_t t0 = vkt_now_ns();
      VkResult r = vkGetEventStatus(ctx->device, event);
      samples[i] = vkt_now_ns() - t0;
      if (r != VK_EVENT_SET)
         vkt_fail("vkGetEventStatus returned %s", vkt_result_name(r));
   }
   results[M_EVENT_STATUS] = median_us(samples, o->calls);
   vkDestroyEvent(ctx->device, event, NULL);

   /* a call only the host driver can answer: the size of a pipeline
    * cache's data */
   const VkPipelineCacheCreateInfo cache_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
   };
   VkPipelineCache cache;
   VKT_CHECK(vkCreatePipelineCache(ctx->device, &cache_info, NULL, &cache));
   for (uint32_t i = 0; i < o->calls; i++) {
      size_t size = 0;
      uint64_t t0 = vkt_now_ns();
      VkResult r = vkGetPipelineCacheData(ctx->device, cache, &size, NULL);
      samples[i] = vkt_now_ns() - t0;
      if (r != VK_SUCCESS)
         vkt_fail("vkGetPipelineCacheData returned %s", vkt_result_name(r));
   }
   results[M_HOST_CALL] = median_us(samples, o->calls);
   vkDestroyPipelineCache(ctx->device, cache, NULL);

   /* a fence: its status once signalled, and an empty submit's round trip
    * through the queue (reset, submit, wait) */
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &fence));
   VKT_CHECK(vkQueueSubmit(ctx->queue, 0, NULL, fence));
   VKT_CHECK(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX));
   for (uint32_t i = 0; i < o->calls; i++) {
      uint64_t t0 = vkt_now_ns();
      VkResult r = vkGetFenceStatus(ctx->device, fence);
      samples[i] = vkt_now_ns() - t0;
      if (r != VK_SUCCESS)
         vkt_fail("vkGetFenceStatus returned %s", vkt_result_name(r));
   }
   results[M_FENCE_STATUS] = median_us(samples, o->calls);
   uint32_t rounds = o->calls < 2000 ? o->calls : 2000;
   for (uint32_t i = 0; i < rounds; i++) {
      uint64_t t0 = vkt_now_ns();
      VKT_CHECK(vkResetFences(ctx->device, 1, &fence));
      VKT_CHECK(vkQueueSubmit(ctx->queue, 0, NULL, fence));
      VKT_CHECK(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX));
      samples[i] = vkt_now_ns() - t0;
   }
   results[M_FENCE_SUBMIT_WAIT] = median_us(samples, rounds);
   vkDestroyFence(ctx->device, fence, NULL);

   /* a timeline semaphore's value */
   const VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 7,
   };
   const VkSemaphoreCreateInfo sem_info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                           .pNext = &type};
   VkSemaphore sem;
   VKT_CHECK(vkCreateSemaphore(ctx->device, &sem_info, NULL, &sem));
   uint64_t value = 0;
   VKT_CHECK(vkGetSemaphoreCounterValue(ctx->device, sem, &value)); /* slot taken */
   for (uint32_t i = 0; i < o->calls; i++) {
      uint64_t t0 = vkt_now_ns();
      VkResult r = vkGetSemaphoreCounterValue(ctx->device, sem, &value);
      samples[i] = vkt_now_ns() - t0;
      if (r != VK_SUCCESS || value != 7)
         vkt_fail("vkGetSemaphoreCounterValue returned %s, %llu", vkt_result_name(r),
                  (unsigned long long)value);
   }
   results[M_COUNTER_VALUE] = median_us(samples, o->calls);
   vkDestroySemaphore(ctx->device, sem, NULL);

   for (uint32_t i = 0; i < o->calls; i++) {
      VkBuffer buffer;
      uint64_t t0 = vkt_now_ns();
      VKT_CHECK(vkCreateBuffer(ctx->device, &buffer_info, NULL, &buffer));
      vkDestroyBuffer(ctx->device, buffer, NULL);
      samples[i] = vkt_now_ns() - t0;
   }
   results[M_BUFFER_PAIR] = median_us(samples, o->calls);
   free(samples);
}

/* ---- (b) mapped-memory bandwidth ---------------------------------------- */

static void
stream_fill(void *dst, size_t size, uint32_t value)
{
#ifdef __SSE2__
   __m128i v = _mm_set1_epi32((int)value);
   __m128i *p = dst;

   for (size_t i = 0; i < size / sizeof(*p); i++)
      _mm_stream_si128(&p[i], v);
   _mm_sfence();
#else
   memset(dst, (int)(value & 0xff), size);
#endif
}

static double
gbs(size_t bytes, uint64_t ns)
{
   return (double)bytes / (double)ns;   /* bytes per ns == GB/s */
}

static void
bench_bandwidth(const struct vkt_context *ctx, const struct options *o,
                double *results)
{
   const size_t size = (size_t)o->mib << 20;
   VkMemoryRequirements reqs = { .memoryTypeBits = ~0u };
   uint32_t type = vkt_memory_type(ctx, reqs.memoryTypeBits,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
   VkDeviceMemory memory;
   void *map;

   if (type == UINT32_MAX)
      vkt_fail("no host-visible memory type");
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = size,
      .memoryTypeIndex = type,
   };
   uint64_t t_alloc = vkt_now_ns();
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &memory));
   VKT_CHECK(vkMapMemory(ctx->device, memory, 0, VK_WHOLE_SIZE, 0, &map));

   uint64_t t0 = vkt_now_ns();
   memset(map, 1, size);
   uint64_t t1 = vkt_now_ns();
   results[M_WRITE_FIRST] = gbs(size, t1 - t0);
   results[M_WRITE_NEW] = gbs(size, t1 - t_alloc);

   results[M_WRITE_MEMSET] = 0;
   results[M_WRITE_STREAM] = 0;
   for (uint32_t rep = 0; rep < o->reps; rep++) {
      t0 = vkt_now_ns();
      memset(map, (int)(rep + 2), size);
      double v = gbs(size, vkt_now_ns() - t0);
      if (v > results[M_WRITE_MEMSET])
         results[M_WRITE_MEMSET] = v;

      t0 = vkt_now_ns();
      stream_fill(map, size, rep * 0x01010101u);
      v = gbs(size, vkt_now_ns() - t0);
      if (v > results[M_WRITE_STREAM])
         results[M_WRITE_STREAM] = v;
   }

   vkUnmapMemory(ctx->device, memory);
   vkFreeMemory(ctx->device, memory, NULL);
}

/* ---- (c) many draws ----------------------------------------------------- */

struct push {
   float rect[4];
   float color[4];
};

/* A render target and pipeline, and one command buffer and fence to
 * record, submit and wait with. */
struct draw_state {
   struct vkt_color_target target;
   VkPipelineLayout layout;
   VkPipeline pipeline;
   VkCommandBuffer cmd;
   VkFence fence;
};

static void
draw_state_init(const struct vkt_context *ctx, struct draw_state *s)
{
   vkt_color_target_init(ctx, FB_SIZE, &s->target);

   const VkPushConstantRange range = {
      VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
      sizeof(struct push)
   };
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &layout_info, NULL,
                                    &s->layout));

   VkShaderModule vs = vkt_shader_module(ctx, quad_vert_spv,
                                         sizeof(quad_vert_spv));
   VkShaderModule fs = vkt_shader_module(ctx, solid_frag_spv,
                                         sizeof(solid_frag_spv));
   const VkPipelineShaderStageCreateInfo stages[] = {
      vkt_shader_stage(VK_SHADER_STAGE_VERTEX_BIT, vs),
      vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs),
   };
   const struct vkt_graphics g = {
      .stages = stages,
      .n_stages = VKT_ARRAY_SIZE(stages),
      .layout = s->layout,
      .render_pass = s->target.render_pass,
      .size = FB_SIZE,
   };
   s->pipeline = vkt_graphics_pipeline(ctx, &g);
   vkDestroyShaderModule(ctx->device, vs, NULL);
   vkDestroyShaderModule(ctx->device, fs, NULL);

   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &s->cmd));
   VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &s->fence));
}

/* Begins the (reset) command buffer and the render pass. */
static void
draw_begin(const struct draw_state *s)
{
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   const VkClearValue clear = {.color = {.float32 = {0, 0, 0, 1}}};
   const VkRenderPassBeginInfo rp_begin = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
      .renderPass = s->target.render_pass,
      .framebuffer = s->target.framebuffer,
      .renderArea = {{0, 0}, {FB_SIZE, FB_SIZE}},
      .clearValueCount = 1,
      .pClearValues = &clear,
   };
   VKT_CHECK(vkBeginCommandBuffer(s->cmd, &begin));
   vkCmdBeginRenderPass(s->cmd, &rp_begin, VK_SUBPASS_CONTENTS_INLINE);
}

/* Ends the render pass and the command buffer. */
static void
draw_end(const struct draw_state *s)
{
   vkCmdEndRenderPass(s->cmd);
   VKT_CHECK(vkEndCommandBuffer(s->cmd));
}

/* Submits the command buffer with the fence and waits for it (the caller
 * resets the fence, outside what it times). */
static void
draw_submit_wait(const struct vkt_context *ctx, const struct draw_state *s)
{
   const VkSubmitInfo submit_info = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &s->cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit_info, s->fence));
   VKT_CHECK(vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, 120000000000ull));
}

static void
draw_state_finish(const struct vkt_context *ctx, struct draw_state *s)
{
   vkDestroyFence(ctx->device, s->fence, NULL);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &s->cmd);
   vkDestroyPipeline(ctx->device, s->pipeline, NULL);
   vkDestroyPipelineLayout(ctx->device, s->layout, NULL);
   vkt_color_target_finish(ctx, &s->target);
}

static void
bench_draws(const struct vkt_context *ctx, const struct options *o,
            double *results)
{
   struct draw_state s;
   uint64_t *record = calloc(o->reps, sizeof(*record));
   uint64_t *submit = calloc(o->reps, sizeof(*submit));
   uint64_t *total = calloc(o->reps, sizeof(*total));

   if (!record || !submit || !total)
      vkt_fail("out of memory");
   draw_state_init(ctx, &s);

   for (uint32_t rep = 0; rep < o->reps; rep++) {
      VKT_CHECK(vkResetCommandBuffer(s.cmd, 0));
      uint64_t t0 = vkt_now_ns();
      draw_begin(&s);
      for (uint32_t i = 0; i < o->draws; i++) {
         if (i % REBIND_EVERY == 0) {
            /* A tiny triangle in a corner that moves a little. */
            const float x = -1.0f + (float)(i / REBIND_EVERY % 16) * 0.1f;
            const struct push p = {
               .rect = { x, -1.0f, x + 0.1f, -0.9f },
               .color = { (float)(i & 0xff) / 255.0f, 0.5f, 0.25f, 1.0f },
            };
            vkCmdBindPipeline(s.cmd, VK_PIPELINE_BIND_POINT_GRAPHICS,
                              s.pipeline);
            vkCmdPushConstants(s.cmd, s.layout,
                               VK_SHADER_STAGE_VERTEX_BIT |
                                  VK_SHADER_STAGE_FRAGMENT_BIT,
                               0, sizeof(p), &p);
         }
         vkCmdDraw(s.cmd, 3, 1, 0, 0);
      }
      draw_end(&s);
      uint64_t t1 = vkt_now_ns();
      draw_submit_wait(ctx, &s);
      uint64_t t2 = vkt_now_ns();
      VKT_CHECK(vkResetFences(ctx->device, 1, &s.fence));

      record[rep] = t1 - t0;
      submit[rep] = t2 - t1;
      total[rep] = t2 - t0;
   }

   results[M_RECORD] = median_us(record, o->reps) / 1e3;
   results[M_SUBMIT_WAIT] = median_us(submit, o->reps) / 1e3;
   results[M_DRAWS_TOTAL] = median_us(total, o->reps) / 1e3;

   draw_state_finish(ctx, &s);
   free(total);
   free(submit);
   free(record);
}

/* ---- (g) frames recorded afresh, (h) a GPU-bound job --------------------- */

/* compute.comp: data_out[i] = hash(data_in[i]) for i < count, rounds of it */
struct compute_push {
   uint32_t count, rounds, seed;
};

/* A compute pipeline and two descriptor sets over device-local buffers of
 * elements each (set 0 reads a and writes b, set 1 the other way). */
struct compute_state {
   VkDescriptorSetLayout set_layout;
   VkDescriptorPool desc_pool;
   VkDescriptorSet sets[2];
   VkPipelineLayout layout;
   VkPipeline pipeline;
   struct vkt_buffer a, b;
   uint32_t elements;
};

static void
compute_state_init(const struct vkt_context *ctx, uint32_t elements, struct compute_state *s)
{
   const VkDeviceSize size = (VkDeviceSize)elements * 4;
   s->elements = elements;
   const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT;
   vkt_buffer_create(ctx, size, usage, false, &s->a);
   vkt_buffer_create(ctx, size, usage, false, &s->b);

   const VkDescriptorSetLayoutBinding bindings[] = {
      {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
      {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 2,
      .pBindings = bindings,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx->device, &set_layout_info, NULL, &s->set_layout));
   const VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 2,
      .poolSizeCount = 1,
      .pPoolSizes = &pool_size,
   };
   VKT_CHECK(vkCreateDescriptorPool(ctx->device, &pool_info, NULL, &s->desc_pool));
   const VkDescriptorSetLayout layouts[2] = {s->set_layout, s->set_layout};
   const VkDescriptorSetAllocateInfo set_alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = s->desc_pool,
      .descriptorSetCount = 2,
      .pSetLayouts = layouts,
   };
   VKT_CHECK(vkAllocateDescriptorSets(ctx->device, &set_alloc, s->sets));
   const VkDescriptorBufferInfo infos[4] = {
      {s->a.buffer, 0, VK_WHOLE_SIZE},
      {s->b.buffer, 0, VK_WHOLE_SIZE},
      {s->b.buffer, 0, VK_WHOLE_SIZE},
      {s->a.buffer, 0, VK_WHOLE_SIZE},
   };
   VkWriteDescriptorSet writes[4];
   for (uint32_t i = 0; i < 4; i++) {
      writes[i] = (VkWriteDescriptorSet){
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = s->sets[i / 2],
         .dstBinding = i % 2,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &infos[i],
      };
   }
   vkUpdateDescriptorSets(ctx->device, 4, writes, 0, NULL);

   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                      sizeof(struct compute_push)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &s->set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &s->layout));
   s->pipeline =
      vkt_compute_pipeline(ctx, compute_comp_spv, sizeof(compute_comp_spv), s->layout, 0);
}

static void
compute_state_finish(const struct vkt_context *ctx, struct compute_state *s)
{
   vkDestroyPipeline(ctx->device, s->pipeline, NULL);
   vkDestroyPipelineLayout(ctx->device, s->layout, NULL);
   vkDestroyDescriptorPool(ctx->device, s->desc_pool, NULL);
   vkDestroyDescriptorSetLayout(ctx->device, s->set_layout, NULL);
   vkt_buffer_destroy(ctx, &s->b);
   vkt_buffer_destroy(ctx, &s->a);
}

/* One recording thread of (g): a command pool and buffer per frame in
 * flight. */
struct afresh_thread {
   const struct vkt_context *ctx;
   const struct compute_state *cs;
   struct afresh *shared;
   VkCommandPool pools[MAX_FRAMES_IN_FLIGHT];
   VkCommandBuffer cmds[MAX_FRAMES_IN_FLIGHT];
   uint32_t first, pairs;
   pthread_t thread;
};

/* What the main thread tells the recording threads: record frame `frame`
 * (into slot frame % in_flight); they count themselves done. */
struct afresh {
   pthread_mutex_t mutex;
   pthread_cond_t go, done;
   uint64_t frame; /* UINT64_MAX: stop */
   uint32_t n_done;
   uint32_t groups;
   uint32_t in_flight;
};

static void
afresh_record(struct afresh_thread *t, uint64_t frame)
{
   const uint32_t slot = (uint32_t)(frame % t->shared->in_flight);
   VkCommandBuffer cmd = t->cmds[slot];
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   VKT_CHECK(vkResetCommandPool(t->ctx->device, t->pools[slot], 0));
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->cs->pipeline);
   for (uint32_t i = 0; i < t->pairs; i++) {
      const uint32_t n = t->first + i;
      if (i % REBIND_EVERY == 0)
         vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, t->cs->layout, 0, 1,
                                 &t->cs->sets[(n / REBIND_EVERY) & 1], 0, NULL);
      const struct compute_push p = {.count = 64, .rounds = 1, .seed = n ^ (uint32_t)frame};
      vkCmdPushConstants(cmd, t->cs->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
      vkCmdDispatch(cmd, t->shared->groups, 1, 1);
   }
   VKT_CHECK(vkEndCommandBuffer(cmd));
}

static void *
afresh_thread_main(void *data)
{
   struct afresh_thread *t = data;
   struct afresh *sh = t->shared;
   uint64_t seen = UINT64_MAX - 1;
   pthread_mutex_lock(&sh->mutex);
   for (;;) {
      while (sh->frame == seen)
         pthread_cond_wait(&sh->go, &sh->mutex);
      if (sh->frame == UINT64_MAX)
         break;
      seen = sh->frame;
      pthread_mutex_unlock(&sh->mutex);
      afresh_record(t, seen);
      pthread_mutex_lock(&sh->mutex);
      sh->n_done++;
      pthread_cond_signal(&sh->done);
   }
   pthread_mutex_unlock(&sh->mutex);
   return NULL;
}

/* Frames per second of frames of `pairs` (push constant + dispatch),
 * recorded afresh by n_threads threads, in_flight in flight. */
static double
afresh_frames(const struct vkt_context *ctx, const struct compute_state *cs, uint32_t pairs,
              uint32_t n_threads, uint32_t groups, uint32_t in_flight, uint32_t seconds)
{
   struct afresh sh = {.frame = UINT64_MAX - 1, .groups = groups, .in_flight = in_flight};
   struct afresh_thread threads[MAX_RECORD_THREADS];
   VkFence fences[MAX_FRAMES_IN_FLIGHT];
   pthread_mutex_init(&sh.mutex, NULL);
   pthread_cond_init(&sh.go, NULL);
   pthread_cond_init(&sh.done, NULL);
   for (uint32_t i = 0; i < n_threads; i++) {
      struct afresh_thread *t = &threads[i];
      *t = (struct afresh_thread){
         .ctx = ctx,
         .cs = cs,
         .shared = &sh,
         .first = pairs / n_threads * i,
         .pairs = pairs / n_threads,
      };
      for (uint32_t f = 0; f < in_flight; f++) {
         const VkCommandPoolCreateInfo pool_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
            .queueFamilyIndex = ctx->queue_family,
         };
         VKT_CHECK(vkCreateCommandPool(ctx->device, &pool_info, NULL, &t->pools[f]));
         const VkCommandBufferAllocateInfo alloc = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = t->pools[f],
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
         };
         VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &t->cmds[f]));
      }
      if (n_threads > 1 && pthread_create(&t->thread, NULL, afresh_thread_main, t) != 0)
         vkt_fail("cannot start a recording thread");
   }
   for (uint32_t f = 0; f < in_flight; f++) {
      const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &fences[f]));
   }

   const uint64_t warm_frames = 10;
   uint64_t t0 = 0, end = 0, frame = 0;
   for (;; frame++) {
      if (frame == warm_frames) {
         t0 = vkt_now_ns();
         end = t0 + (uint64_t)seconds * 1000000000ull;
      } else if (frame > warm_frames && vkt_now_ns() >= end) {
         break;
      }
      const uint32_t slot = (uint32_t)(frame % in_flight);
      if (frame >= in_flight) {
         VKT_CHECK(vkWaitForFences(ctx->device, 1, &fences[slot], VK_TRUE, 60000000000ull));
         VKT_CHECK(vkResetFences(ctx->device, 1, &fences[slot]));
      }
      if (n_threads == 1) {
         afresh_record(&threads[0], frame);
      } else {
         pthread_mutex_lock(&sh.mutex);
         sh.frame = frame;
         sh.n_done = 0;
         pthread_cond_broadcast(&sh.go);
         while (sh.n_done < n_threads)
            pthread_cond_wait(&sh.done, &sh.mutex);
         pthread_mutex_unlock(&sh.mutex);
      }
      VkCommandBuffer cmds[MAX_RECORD_THREADS];
      for (uint32_t i = 0; i < n_threads; i++)
         cmds[i] = threads[i].cmds[slot];
      const VkSubmitInfo submit = {
         .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
         .commandBufferCount = n_threads,
         .pCommandBuffers = cmds,
      };
      VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fences[slot]));
   }
   VKT_CHECK(vkWaitForFences(ctx->device, in_flight, fences, VK_TRUE, 60000000000ull));
   double fps = (double)(frame - warm_frames) * 1e9 / (double)(vkt_now_ns() - t0);

   if (n_threads > 1) {
      pthread_mutex_lock(&sh.mutex);
      sh.frame = UINT64_MAX;
      pthread_cond_broadcast(&sh.go);
      pthread_mutex_unlock(&sh.mutex);
   }
   for (uint32_t i = 0; i < n_threads; i++) {
      if (n_threads > 1)
         pthread_join(threads[i].thread, NULL);
      for (uint32_t f = 0; f < in_flight; f++)
         vkDestroyCommandPool(ctx->device, threads[i].pools[f], NULL);
   }
   for (uint32_t f = 0; f < in_flight; f++)
      vkDestroyFence(ctx->device, fences[f], NULL);
   pthread_cond_destroy(&sh.done);
   pthread_cond_destroy(&sh.go);
   pthread_mutex_destroy(&sh.mutex);
   return fps;
}

static void
bench_afresh(const struct vkt_context *ctx, const struct options *o, double *results)
{
   struct compute_state cs;
   compute_state_init(ctx, 64, &cs);
   uint32_t groups = o->groups >= 0 ? (uint32_t)o->groups
                                    : ctx->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
   fprintf(stderr, "gpud_bench: frames afresh, %u workgroup(s) a dispatch\n", groups);
   results[M_AFRESH_2K_1] = afresh_frames(ctx, &cs, 2000, 1, groups, o->in_flight, o->frame_seconds);
   results[M_AFRESH_2K_4] = afresh_frames(ctx, &cs, 2000, 4, groups, o->in_flight, o->frame_seconds);
   results[M_AFRESH_20K_1] = afresh_frames(ctx, &cs, 20000, 1, groups, o->in_flight, o->frame_seconds);
   results[M_AFRESH_20K_4] = afresh_frames(ctx, &cs, 20000, 4, groups, o->in_flight, o->frame_seconds);
   compute_state_finish(ctx, &cs);
}

/* Records the job: JOB_DISPATCHES passes over the state's elements, each
 * `rounds` rounds of the hash, a barrier between passes. */
static void
job_record(const struct compute_state *cs, VkCommandBuffer cmd, uint32_t rounds,
           VkQueryPool timestamps)
{
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
   if (timestamps) {
      vkCmdResetQueryPool(cmd, timestamps, 0, 2);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps, 0);
   }
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, cs->pipeline);
   for (uint32_t i = 0; i < JOB_DISPATCHES; i++) {
      const struct compute_push p = {.count = cs->elements, .rounds = rounds, .seed = i};
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, cs->layout, 0, 1,
                              &cs->sets[i & 1], 0, NULL);
      vkCmdPushConstants(cmd, cs->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
      vkCmdDispatch(cmd, cs->elements / 64, 1, 1);
      const VkMemoryBarrier barrier = {
         .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
         .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
         .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
      };
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, NULL, 0,
                           NULL);
   }
   if (timestamps)
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, 1);
   VKT_CHECK(vkEndCommandBuffer(cmd));
}

/* The time between the job's two timestamps, in ns (0 without them). */
static uint64_t
job_gpu_ns(const struct vkt_context *ctx, VkQueryPool timestamps)
{
   uint64_t ts[2];
   if (!timestamps)
      return 0;
   VKT_CHECK(vkGetQueryPoolResults(ctx->device, timestamps, 0, 2, sizeof(ts), ts, sizeof(ts[0]),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
   uint64_t mask = ctx->timestamp_valid_bits >= 64 ? UINT64_MAX
                                                   : (1ull << ctx->timestamp_valid_bits) - 1;
   return (uint64_t)((double)((ts[1] - ts[0]) & mask) * ctx->props.limits.timestampPeriod);
}

static uint64_t
job_submit_wait(const struct vkt_context *ctx, VkCommandBuffer cmd, VkFence fence)
{
   uint64_t t0 = vkt_now_ns();
   vkt_submit(ctx, cmd, fence);
   VKT_CHECK(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 120000000000ull));
   uint64_t t = vkt_now_ns() - t0;
   VKT_CHECK(vkResetFences(ctx->device, 1, &fence));
   return t;
}

/* A checksum of the job's buffers (copied into host-visible memory). */
static uint64_t
job_checksum(const struct vkt_context *ctx, const struct compute_state *cs)
{
   const VkDeviceSize size = (VkDeviceSize)cs->elements * 4;
   struct vkt_buffer host;
   vkt_buffer_create(ctx, 2 * size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &host);
   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   const VkBufferCopy to_a = {0, 0, size}, to_b = {0, size, size};
   vkCmdCopyBuffer(cmd, cs->a.buffer, host.buffer, 1, &to_a);
   vkCmdCopyBuffer(cmd, cs->b.buffer, host.buffer, 1, &to_b);
   vkt_cmd_submit_wait(ctx, cmd);
   vkt_buffer_invalidate(ctx, &host);
   uint64_t h = 0xcbf29ce484222325ull;
   const uint32_t *v = host.map;
   for (VkDeviceSize i = 0; i < 2 * size / 4; i++)
      h = (h ^ v[i]) * 0x100000001b3ull;
   vkt_buffer_destroy(ctx, &host);
   return h;
}

/* The GPU-bound job; the direct run (the first) calibrates its rounds so
 * that it takes 10-20 ms there. */
static void
bench_job(const struct vkt_context *ctx, struct options *o, double *results)
{
   struct compute_state cs;
   compute_state_init(ctx,
                      ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? JOB_ELEMENTS_CPU
                                                                         : JOB_ELEMENTS,
                      &cs);
   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkCommandBuffer cmd;
   VkFence fence;
   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &cmd));
   VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &fence));
   VkQueryPool timestamps = VK_NULL_HANDLE;
   if (ctx->timestamp_valid_bits) {
      const VkQueryPoolCreateInfo query_info = {
         .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
         .queryType = VK_QUERY_TYPE_TIMESTAMP,
         .queryCount = 2,
      };
      VKT_CHECK(vkCreateQueryPool(ctx->device, &query_info, NULL, &timestamps));
   }
   if (!o->job_rounds) {
      uint32_t rounds = 1;
      for (;;) {
         VKT_CHECK(vkResetCommandBuffer(cmd, 0));
         job_record(&cs, cmd, rounds, VK_NULL_HANDLE);
         job_submit_wait(ctx, cmd, fence); /* the first run of a pipeline may cost more */
         uint64_t t = job_submit_wait(ctx, cmd, fence);
         if (t >= 10000000ull || rounds >= (1u << 24))
            break;
         uint64_t want = t ? rounds * 15000000ull / t : rounds * 16ull;
         rounds = (uint32_t)(want > rounds * 16ull ? rounds * 16ull
                             : want > rounds      ? want
                                                  : rounds + 1);
      }
      o->job_rounds = rounds;
      fprintf(stderr, "gpud_bench: the GPU-bound job takes %u rounds\n", rounds);
   }
   uint64_t first[64], again[64], gpu[128];
   uint32_t reps = o->reps < 64 ? o->reps : 64;
   /* a GPU lowers its clocks after light work (what came before may have
    * been): 300 ms of this one first brings them up again */
   VKT_CHECK(vkResetCommandBuffer(cmd, 0));
   job_record(&cs, cmd, o->job_rounds, VK_NULL_HANDLE);
   for (uint64_t start = vkt_now_ns(); vkt_now_ns() - start < 300000000ull;)
      job_submit_wait(ctx, cmd, fence);
   /* the same start everywhere, for the checksum */
   VkCommandBuffer fill = vkt_cmd_begin(ctx);
   vkCmdFillBuffer(fill, cs.a.buffer, 0, VK_WHOLE_SIZE, 0);
   vkCmdFillBuffer(fill, cs.b.buffer, 0, VK_WHOLE_SIZE, 0);
   vkt_cmd_submit_wait(ctx, fill);
   for (uint32_t rep = 0; rep < reps; rep++) {
      VKT_CHECK(vkResetCommandBuffer(cmd, 0));
      uint64_t t0 = vkt_now_ns();
      job_record(&cs, cmd, o->job_rounds, timestamps);
      job_submit_wait(ctx, cmd, fence);
      first[rep] = vkt_now_ns() - t0;
      gpu[2 * rep] = job_gpu_ns(ctx, timestamps);
      again[rep] = job_submit_wait(ctx, cmd, fence);
      gpu[2 * rep + 1] = job_gpu_ns(ctx, timestamps);
   }
   /* every device must compute the same (the job is deterministic) */
   uint64_t sum = job_checksum(ctx, &cs);
   if (!o->job_sum)
      o->job_sum = sum;
   else if (sum != o->job_sum)
      vkt_fail("the GPU-bound job computed %016llx on '%s', %016llx directly",
               (unsigned long long)sum, ctx->props.deviceName, (unsigned long long)o->job_sum);
   results[M_JOB_FIRST] = median_us(first, reps) / 1e3;
   results[M_JOB_AGAIN] = median_us(again, reps) / 1e3;
   results[M_JOB_GPU] = timestamps ? median_us(gpu, 2 * reps) / 1e3 : 0;
   if (timestamps)
      vkDestroyQueryPool(ctx->device, timestamps, NULL);
   vkDestroyFence(ctx->device, fence, NULL);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
   compute_state_finish(ctx, &cs);
}

/* ---- (e) a frame loop, (f) many processes running it --------------------- */

/* Records one small draw, submits it with a fence, waits and resets the
 * fence: frames times, or until end_ns (CLOCK_MONOTONIC) when frames is 0.
 * Each frame's time goes to times[] where given (frames of them).  Returns
 * the frames done. */
static uint64_t
frame_loop(const struct vkt_context *ctx, uint64_t frames, uint64_t end_ns, uint64_t *times)
{
   struct draw_state s;
   draw_state_init(ctx, &s);
   uint64_t n = 0;
   uint64_t last = times ? vkt_now_ns() : 0;
   for (; frames ? n < frames : vkt_now_ns() < end_ns; n++) {
      const struct push p = {
         .rect = {-0.5f, -0.5f, 0.5f, 0.5f},
         .color = {(float)(n & 0xff) / 255.0f, 0.5f, 0.25f, 1.0f},
      };
      VKT_CHECK(vkResetCommandBuffer(s.cmd, 0));
      draw_begin(&s);
      vkCmdBindPipeline(s.cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s.pipeline);
      vkCmdPushConstants(s.cmd, s.layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
                         0, sizeof(p), &p);
      vkCmdDraw(s.cmd, 3, 1, 0, 0);
      draw_end(&s);
      draw_submit_wait(ctx, &s);
      VKT_CHECK(vkResetFences(ctx->device, 1, &s.fence));
      if (times) {
         uint64_t now = vkt_now_ns();
         times[n] = now - last;
         last = now;
      }
   }
   draw_state_finish(ctx, &s);
   return n;
}

static void
bench_frames(const struct vkt_context *ctx, const struct options *o, double *results)
{
   uint64_t *times = calloc(o->frames, sizeof(*times));
   if (!times)
      vkt_fail("out of memory");
   frame_loop(ctx, 100, 0, NULL); /* warm up */
   uint64_t t0 = vkt_now_ns();
   frame_loop(ctx, o->frames, 0, times);
   results[M_FRAME] = (double)(vkt_now_ns() - t0) / 1e3 / o->frames;
   results[M_FRAME_MEDIAN] = median_us(times, o->frames); /* sorts them */
   results[M_FRAME_P99] = (double)times[(uint64_t)o->frames * 99 / 100] / 1e3;
   free(times);
}

/* ---- (j) staged uploads ------------------------------------------------ */

#define UPLOAD_ROUNDS 200

static void
bench_uploads(const struct vkt_context *ctx, double *results)
{
   static const struct {
      VkDeviceSize size;
      enum metric metric;
   } sizes[] = {
      {4u << 10, M_UPLOAD_4K},
      {64u << 10, M_UPLOAD_64K},
      {512u << 10, M_UPLOAD_512K},
      {1u << 20, M_UPLOAD_1M},
      {2u << 20, M_UPLOAD_2M},
   };
   const VkDeviceSize max = 2u << 20;
   struct vkt_buffer staging, dst, back;
   vkt_buffer_create(ctx, max, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &staging);
   vkt_buffer_create(ctx, max, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     false, &dst);
   vkt_buffer_create(ctx, max, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &back);
   const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(ctx->device, &fi, NULL, &fence));
   const VkCommandBufferAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   VkCommandBuffer cmd;
   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &ai, &cmd));
   uint64_t times[UPLOAD_ROUNDS];
   for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      const VkDeviceSize size = sizes[s].size;
      for (uint32_t r = 0; r < UPLOAD_ROUNDS + 10; r++) {
         uint64_t t0 = vkt_now_ns();
         memset(staging.map, (int)(r & 0xff), (size_t)size);
         vkt_buffer_flush(ctx, &staging);
         VKT_CHECK(vkResetCommandBuffer(cmd, 0));
         const VkCommandBufferBeginInfo bi = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
         };
         VKT_CHECK(vkBeginCommandBuffer(cmd, &bi));
         const VkBufferCopy region = {.size = size};
         vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &region);
         VKT_CHECK(vkEndCommandBuffer(cmd));
         const VkSubmitInfo si = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &cmd,
         };
         VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &si, fence));
         VKT_CHECK(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX));
         VKT_CHECK(vkResetFences(ctx->device, 1, &fence));
         if (r >= 10)
            times[r - 10] = vkt_now_ns() - t0;
      }
      results[sizes[s].metric] = median_us(times, UPLOAD_ROUNDS);
      /* the last round's bytes reached the device-local buffer */
      VkCommandBuffer rb = vkt_cmd_begin(ctx);
      const VkBufferCopy region = {.size = size};
      vkCmdCopyBuffer(rb, dst.buffer, back.buffer, 1, &region);
      vkt_cmd_submit_wait(ctx, rb);
      vkt_buffer_invalidate(ctx, &back);
      const uint8_t want = (UPLOAD_ROUNDS + 9) & 0xff;
      const uint8_t *got = back.map;
      for (VkDeviceSize i = 0; i < size; i++) {
         if (got[i] != want)
            vkt_fail("staged upload of %llu bytes: byte %llu is %u, not %u",
                     (unsigned long long)size, (unsigned long long)i, got[i], want);
      }
   }
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
   vkDestroyFence(ctx->device, fence, NULL);
   vkt_buffer_destroy(ctx, &back);
   vkt_buffer_destroy(ctx, &dst);
   vkt_buffer_destroy(ctx, &staging);
}

/* --clients-child START_NS END_NS: the frame loop from START_NS to END_NS
 * (CLOCK_MONOTONIC), then prints the frames it did. */
static int
clients_child(const char *start_text, const char *end_text)
{
   uint64_t start = strtoull(start_text, NULL, 10);
   uint64_t end = strtoull(end_text, NULL, 10);
   VkInstance instance = vkt_instance_create("gpud_bench-client");
   struct vkt_context ctx = {.prog = "gpud_bench"};
   vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, NULL), 0);
   frame_loop(&ctx, 20, 0, NULL); /* set up, warm */
   uint64_t now = vkt_now_ns();
   if (now < start) {
      struct timespec ts = {(time_t)((start - now) / 1000000000ull),
                            (long)((start - now) % 1000000000ull)};
      nanosleep(&ts, NULL);
   }
   uint64_t n = frame_loop(&ctx, 0, end, NULL);
   vkt_context_finish(&ctx);
   printf("%llu\n", (unsigned long long)n);
   return 0;
}

/* The environment with only manifest listed for the loader. */
static char **
env_with_manifest(const char *manifest, char *icd, size_t icd_size)
{
   extern char **environ;
   snprintf(icd, icd_size, "VK_ICD_FILENAMES=%s", manifest);
   size_t n_env = 0;
   while (environ[n_env])
      n_env++;
   char **env = calloc(n_env + 2, sizeof(char *));
   if (!env)
      vkt_fail("out of memory");
   size_t j = 0;
   for (size_t i = 0; i < n_env; i++) {
      if (strncmp(environ[i], "VK_ICD_FILENAMES=", 17) &&
          strncmp(environ[i], "VK_DRIVER_FILES=", 16))
         env[j++] = environ[i];
   }
   env[j++] = icd;
   return env;
}

static void
bench_clients(const char *manifest, const struct options *o, double *results)
{
   char icd[4096];
   char **env = env_with_manifest(manifest, icd, sizeof(icd));
   /* everyone has time to start and set up before the common start */
   uint64_t start = vkt_now_ns() + 3000000000ull;
   uint64_t end = start + (uint64_t)o->seconds * 1000000000ull;
   char start_text[32], end_text[32];
   snprintf(start_text, sizeof(start_text), "%llu", (unsigned long long)start);
   snprintf(end_text, sizeof(end_text), "%llu", (unsigned long long)end);
   char *const argv[] = {"gpud_bench", "--clients-child", start_text, end_text, NULL};
   pid_t pids[64];
   int outs[64];
   for (uint32_t i = 0; i < o->clients; i++) {
      int out[2];
      if (pipe(out) < 0)
         vkt_fail("pipe failed");
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_adddup2(&fa, out[1], 1);
      posix_spawn_file_actions_addclose(&fa, out[0]);
      if (posix_spawn(&pids[i], "/proc/self/exe", &fa, NULL, argv, env) != 0)
         vkt_fail("cannot start a client");
      posix_spawn_file_actions_destroy(&fa);
      close(out[1]);
      outs[i] = out[0];
   }
   uint64_t frames = 0;
   for (uint32_t i = 0; i < o->clients; i++) {
      char buf[64] = "";
      ssize_t len = read(outs[i], buf, sizeof(buf) - 1);
      close(outs[i]);
      int status;
      waitpid(pids[i], &status, 0);
      if (len <= 0 || !WIFEXITED(status) || WEXITSTATUS(status))
         vkt_fail("a client failed with %s", manifest);
      frames += strtoull(buf, NULL, 10);
   }
   if (vkt_now_ns() > end + 2000000000ull)
      fprintf(stderr, "gpud_bench: clients ended late: the count may be low\n");
   free(env);
   results[M_CLIENTS] = (double)frames / o->seconds;
}

/* ---- driver ------------------------------------------------------------- */

/* --start-child: what a short program does first, timed. */
static int
start_child(void)
{
   uint64_t t0 = vkt_now_ns();
   VkInstance instance = vkt_instance_create("gpud_bench-start");
   struct vkt_context ctx = { .prog = "gpud_bench" };
   vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, NULL), 0);
   uint64_t t1 = vkt_now_ns();
   vkt_context_finish(&ctx);
   printf("%llu\n", (unsigned long long)(t1 - t0));
   return 0;
}

/* --cycles-child: START_CYCLES instances, each with its device, one after
 * the other, timed from the first vkCreateInstance to the last destroy. */
static int
cycles_child(void)
{
   uint64_t t0 = vkt_now_ns();
   for (int i = 0; i < START_CYCLES; i++) {
      VkInstance instance = vkt_instance_create("gpud_bench-cycles");
      struct vkt_context ctx = {.prog = "gpud_bench"};
      vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, NULL), 0);
      vkt_context_finish(&ctx);
   }
   printf("%llu\n", (unsigned long long)(vkt_now_ns() - t0));
   return 0;
}

/* Runs `/proc/self/exe child_arg` with only `manifest` listed, and returns
 * the number it prints; *process_ns gets the time from exec to exit. */
static uint64_t
run_child(char **env, const char *child_arg, const char *manifest, uint64_t *process_ns)
{
   char *const argv[] = {"gpud_bench", (char *)child_arg, NULL};
   int out[2];
   if (pipe(out) < 0)
      vkt_fail("pipe failed");
   posix_spawn_file_actions_t fa;
   posix_spawn_file_actions_init(&fa);
   posix_spawn_file_actions_adddup2(&fa, out[1], 1);
   posix_spawn_file_actions_addclose(&fa, out[0]);
   uint64_t t0 = vkt_now_ns();
   pid_t pid;
   if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env) != 0)
      vkt_fail("cannot start a child");
   posix_spawn_file_actions_destroy(&fa);
   close(out[1]);
   char buf[64] = "";
   ssize_t len = read(out[0], buf, sizeof(buf) - 1);
   close(out[0]);
   int status;
   waitpid(pid, &status, 0);
   if (process_ns)
      *process_ns = vkt_now_ns() - t0;
   if (len <= 0 || !WIFEXITED(status) || WEXITSTATUS(status))
      vkt_fail("%s failed with %s", child_arg, manifest);
   return strtoull(buf, NULL, 10);
}

/* Runs the start children o->starts times with only `manifest` listed. */
static void
bench_start(const char *manifest, const struct options *o, double *results)
{
   uint64_t device_ns[64], process_ns[64], cycles_ns[64];
   uint32_t n = o->starts;
   char icd[4096];
   char **env = env_with_manifest(manifest, icd, sizeof(icd));
   for (uint32_t i = 0; i < n; i++) {
      /* one application started at a time on a settled machine, as a user
       * starts one (gpud's spare worker is ready again by then) */
      struct timespec pause = { 0, 300 * 1000000L };
      nanosleep(&pause, NULL);
      device_ns[i] = run_child(env, "--start-child", manifest, &process_ns[i]);
      nanosleep(&pause, NULL);
      cycles_ns[i] = run_child(env, "--cycles-child", manifest, NULL);
   }
   free(env);
   results[M_START_DEVICE] = median_us(device_ns, n) / 1e3;
   results[M_START_PROCESS] = median_us(process_ns, n) / 1e3;
   results[M_START_CYCLES] = median_us(cycles_ns, n) / 1e3;
}

/* Which manifest in VK_ICD_FILENAMES is gpud's (its library is). */
static void
split_manifests(char *direct, char *gpud, size_t size)
{
   const char *list = getenv("VK_ICD_FILENAMES");
   direct[0] = gpud[0] = '\0';
   char *copy = strdup(list ? list : "");
   char *save = NULL;
   for (char *m = strtok_r(copy, ":", &save); m; m = strtok_r(NULL, ":", &save)) {
      FILE *f = fopen(m, "r");
      char text[4096] = "";
      if (f) {
         size_t r = fread(text, 1, sizeof(text) - 1, f);
         text[r] = '\0';
         fclose(f);
      }
      if (strstr(text, "vulkan_gpud")) {
         if (!gpud[0])
            snprintf(gpud, size, "%s", m);
      } else if (!direct[0]) {
         snprintf(direct, size, "%s", m);
      }
   }
   free(copy);
}

static void
bench_device(VkInstance instance, VkPhysicalDevice pdev, struct options *o, double *results)
{
   struct vkt_context ctx = { .prog = "gpud_bench" };

   vkt_context_init_physical(&ctx, instance, pdev, VKT_FEATURE_TIMELINE_SEMAPHORE);
   fprintf(stderr, "gpud_bench: measuring '%s'...\n", ctx.props.deviceName);
   if (part(o, 'a'))
      bench_round_trips(&ctx, o, results);
   if (part(o, 'b'))
      bench_bandwidth(&ctx, o, results);
   if (part(o, 'c') || part(o, 'h'))
      bench_draws(&ctx, o, results);
   if (part(o, 'e'))
      bench_frames(&ctx, o, results);
   if (part(o, 'g'))
      bench_afresh(&ctx, o, results);
   if (part(o, 'h'))
      bench_job(&ctx, o, results);
   if (part(o, 'j'))
      bench_uploads(&ctx, results);
   vkt_context_finish_device(&ctx);
}

static uint32_t
parse_u32(const char *opt, const char *value)
{
   uint64_t v = vkt_parse_u64(opt, value);

   if (v == 0 || v > UINT32_MAX / 2)
      vkt_fail("option %s: %s is out of range", opt, value);
   return (uint32_t)v;
}

int
main(int argc, char **argv)
{
   struct options o = {
      .starts = 10,
      .calls = 20000,
      .draws = 100000,
      .mib = 256,
      .reps = 3,
      .frames = 10000,
      .clients = 8,
      .seconds = 3,
      .frame_seconds = 2,
      .groups = -1,
      .in_flight = FRAMES_IN_FLIGHT,
   };

   vkt_set_prog("gpud_bench");
   if (argc == 2 && !strcmp(argv[1], "--start-child"))
      return start_child();
   if (argc == 2 && !strcmp(argv[1], "--cycles-child"))
      return cycles_child();
   if (argc == 4 && !strcmp(argv[1], "--clients-child"))
      return clients_child(argv[2], argv[3]);
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--direct-only")) {
         o.direct_only = true;
      } else if (!strcmp(argv[i], "--calls")) {
         o.calls = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--draws")) {
         o.draws = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--mib")) {
         o.mib = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--reps")) {
         o.reps = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--frames")) {
         o.frames = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--clients")) {
         o.clients = parse_u32(argv[i], argv[i + 1]);
         if (o.clients > 64)
            vkt_fail("--clients: at most 64");
         i++;
      } else if (!strcmp(argv[i], "--seconds")) {
         o.seconds = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--frame-seconds")) {
         o.frame_seconds = parse_u32(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--groups") && i + 1 < argc) {
         o.groups = (int32_t)vkt_parse_u64(argv[i], argv[i + 1]);
         if (o.groups > 65535)
            vkt_fail("--groups: at most 65535");
         i++;
      } else if (!strcmp(argv[i], "--in-flight") && i + 1 < argc) {
         o.in_flight = parse_u32(argv[i], argv[i + 1]);
         if (o.in_flight < 1 || o.in_flight > MAX_FRAMES_IN_FLIGHT)
            vkt_fail("--in-flight: 1 to %u", MAX_FRAMES_IN_FLIGHT);
         i++;
      } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
         o.only = argv[++i];
      } else if (!strcmp(argv[i], "--starts")) {
         o.starts = parse_u32(argv[i], argv[i + 1]);
         if (o.starts > 64)
            vkt_fail("--starts: at most 64");
         i++;
      } else {
         fprintf(stderr, "usage: gpud_bench [--direct-only] [--calls N] "
                         "[--draws N] [--mib N] [--reps N] [--starts N] [--frames N] "
                         "[--clients N] [--seconds S] [--frame-seconds S] [--groups N] "
                         "[--in-flight N] [--only LETTERS]\n");
         return 1;
      }
   }

   VkInstance instance = vkt_instance_create("gpud_bench");
   VkPhysicalDevice devs[16], direct = VK_NULL_HANDLE, gpud = VK_NULL_HANDLE;
   uint32_t count = VKT_ARRAY_SIZE(devs);
   char direct_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = "-";
   char gpud_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = "-";
   VkResult r = vkEnumeratePhysicalDevices(instance, &count, devs);
   if (r != VK_SUCCESS && r != VK_INCOMPLETE)
      vkt_fail("vkEnumeratePhysicalDevices failed: %s", vkt_result_name(r));
   for (uint32_t i = 0; i < count; i++) {
      VkPhysicalDeviceProperties props;

      vkGetPhysicalDeviceProperties(devs[i], &props);
      if (strstr(props.deviceName, "gpud")) {
         if (!gpud) {
            gpud = devs[i];
            snprintf(gpud_name, sizeof(gpud_name), "%s", props.deviceName);
         }
      } else if (!direct) {
         /* the host driver used directly: the first device not served by
          * gpud (lavapipe here, the GPU's driver on a GPU machine) */
         direct = devs[i];
         snprintf(direct_name, sizeof(direct_name), "%s", props.deviceName);
      }
   }
   if (!direct)
      vkt_fail("no host device among %u devices: list the host driver's "
               "manifest (lavapipe's) in VK_ICD_FILENAMES", count);
   if (!gpud && !o.direct_only)
      vkt_fail("no gpud device among %u devices: list gpud's manifest in "
               "VK_ICD_FILENAMES and start the daemon, or use "
               "--direct-only", count);

   double res_direct[M_COUNT] = { 0 }, res_gpud[M_COUNT] = { 0 };
   bench_device(instance, direct, &o, res_direct);
   if (!o.direct_only)
      bench_device(instance, gpud, &o, res_gpud);
   vkDestroyInstance(instance, NULL);

   char direct_manifest[4096], gpud_manifest[4096];
   split_manifests(direct_manifest, gpud_manifest, sizeof(direct_manifest));
   if (part(&o, 'd') || part(&o, 'i')) {
      fprintf(stderr, "gpud_bench: timing %u new processes each...\n", o.starts);
      if (direct_manifest[0])
         bench_start(direct_manifest, &o, res_direct);
      if (gpud_manifest[0] && !o.direct_only)
         bench_start(gpud_manifest, &o, res_gpud);
   }
   if (part(&o, 'f')) {
      fprintf(stderr, "gpud_bench: %u processes' frame loops at once, %u s each...\n",
              o.clients, o.seconds);
      if (direct_manifest[0])
         bench_clients(direct_manifest, &o, res_direct);
      if (gpud_manifest[0] && !o.direct_only)
         bench_clients(gpud_manifest, &o, res_gpud);
   }

   printf("gpud_bench: %u calls, %u MiB mapped, %u draws (re-bind every "
          "%u), %u reps, %u starts, %u frames, %u processes x %u s\n", o.calls, o.mib, o.draws,
          REBIND_EVERY, o.reps, o.starts, o.frames, o.clients, o.seconds);
   printf("direct: %s\n", direct_name);
   printf("gpud:   %s\n\n", gpud_name);
   printf("%-44s %6s %12s %12s %12s\n", "metric", "unit", "direct", "gpud",
          "gpud/direct");
   for (int m = 0; m < M_COUNT; m++) {
      if (res_direct[m] == 0 && res_gpud[m] == 0)
         continue; /* not measured (--only) */
      printf("%-44s %6s %12.3f ", metrics[m].name, metrics[m].unit,
             res_direct[m]);
      if (o.direct_only)
         printf("%12s %12s\n", "-", "-");
      else
         printf("%12.3f %11.2fx\n", res_gpud[m],
                res_direct[m] > 0 ? res_gpud[m] / res_direct[m] : 0.0);
   }
   return 0;
}
