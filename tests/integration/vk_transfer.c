/* SPDX-License-Identifier: MIT */
/*
 * vk_transfer: buffer copies staged the way llama.cpp's ggml stages them
 * (host-visible memory to device memory and back, each submitted alone and
 * waited for), racing the GPU's own work on the same memory, behind
 * semaphores and timelines, on every queue; each copy's bytes checked.
 * Through gpud the worker makes some of these copies itself
 * (daemon/worker/gpud_transfer.c): the bytes must be what the host driver's
 * own copies give.
 *
 *   vk_transfer [--device NAME] [--rounds N]
 *
 * Cases, each N rounds of fresh bytes:
 *
 *   upload     host-visible to device memory, then back to another
 *              host-visible buffer, each a submission of copies alone
 *   racing     a long compute job writes one buffer; at once a copy of
 *              another is submitted (the device is busy), then, once the
 *              job is waited for, a copy of what the job wrote
 *   again      one copy's command buffer submitted three times (nothing in
 *              flight, beside the compute job, nothing in flight), then
 *              recorded anew and submitted beside the job
 *   semaphore  copies behind a binary semaphore and a timeline one that the
 *              compute job signals
 *   fences     a fence a copy signalled is reset and signalled again by a
 *              compute job; vkGetFenceStatus and zero-timeout waits
 *   empty      a fence given to an empty submission (ggml's wait for what it
 *              submitted): after a long compute job, whose output must be
 *              complete once it signals; after copies submitted without a
 *              fence, while nothing else is in flight (the ICD makes both
 *              itself then); one submit of no command buffers too
 *   queues     the same copies on every queue the device has
 *   burst      ten uploads of 96 KiB to 1.25 MiB into one device buffer,
 *              through one staging buffer refilled after each wait (every
 *              other one after the copy's recording ended, as ggml does),
 *              on the queues in turn, then one copy back of the whole
 *              (gpud's ICD writes the larger ones into slots of memory it
 *              shares with the worker, more of them than it has slots; the
 *              largest is the worker's, its recording sent as it ends)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "compute_comp_spv.h"

#define ELEMENTS (1u << 16)
#define JOB_ELEMENTS (1u << 18)
#define JOB_ROUNDS 1000

struct params {
   uint32_t count;
   uint32_t rounds;
   uint32_t seed;
};

struct state {
   struct vkt_context ctx;
   struct vkt_buffer stage, device, back;  /* ELEMENTS uints each */
   struct vkt_buffer job_in, job_out;      /* JOB_ELEMENTS uints each */
   VkDescriptorSetLayout set_layout;
   VkDescriptorPool pool;
   VkDescriptorSet set;
   VkPipelineLayout layout;
   VkPipeline pipeline;
   /* the queues copies go to, each with a command pool of its family */
   uint32_t n_queues;
   VkQueue queues[2];
   VkCommandPool pools[2];
};

static uint32_t
pattern(uint32_t i, uint32_t round)
{
   uint32_t x = i * 0x9e3779b9u + round * 0x85ebca6bu + 7u;
   x ^= x >> 15;
   return x * 0x2c1b3c6du;
}

static VkCommandBuffer
begin(struct state *s, VkCommandPool pool)
{
   return vkt_cmd_begin_pool(&s->ctx, pool);
}

/* The pool of queue q's family. */
static VkCommandPool
pool_of(const struct state *s, VkQueue q)
{
   for (uint32_t i = 0; i < s->n_queues; i++) {
      if (s->queues[i] == q)
         return s->pools[i];
   }
   return s->ctx.cmd_pool;
}

static VkFence
fence_new(struct state *s)
{
   const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence f;
   VKT_CHECK(vkCreateFence(s->ctx.device, &info, NULL, &f));
   return f;
}

static void
wait(struct state *s, VkFence f)
{
   VKT_CHECK(vkWaitForFences(s->ctx.device, 1, &f, VK_TRUE, 60000000000ull));
}

/* A copy of n uints, alone in its command buffer (with the barriers ggml
 * records around its copies), submitted on queue q with a fence. */
static void
record_copy(VkCommandBuffer cmd, const struct vkt_buffer *src, VkDeviceSize src_off,
            const struct vkt_buffer *dst, VkDeviceSize dst_off, uint32_t n)
{
   const VkMemoryBarrier before = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
   const VkBufferCopy region = {src_off * 4, dst_off * 4, (VkDeviceSize)n * 4};
   vkCmdCopyBuffer(cmd, src->buffer, dst->buffer, 1, &region);
   const VkMemoryBarrier after = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                        &after, 0, NULL, 0, NULL);
   VKT_CHECK(vkEndCommandBuffer(cmd));
}

static void
submit_one(VkQueue q, VkCommandBuffer cmd, VkFence fence, const VkSubmitInfo *base)
{
   VkSubmitInfo submit =
       base ? *base : (VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
   submit.commandBufferCount = 1;
   submit.pCommandBuffers = &cmd;
   VKT_CHECK(vkQueueSubmit(q, 1, &submit, fence));
}

static VkCommandBuffer
submit_copy(struct state *s, VkQueue q, const struct vkt_buffer *src, VkDeviceSize src_off,
            const struct vkt_buffer *dst, VkDeviceSize dst_off, uint32_t n, VkFence fence,
            const VkSubmitInfo *base)
{
   VkCommandBuffer cmd = begin(s, pool_of(s, q));
   record_copy(cmd, src, src_off, dst, dst_off, n);
   submit_one(q, cmd, fence, base);
   return cmd;
}

static void
free_cmd(struct state *s, VkCommandBuffer cmd, VkQueue q)
{
   vkFreeCommandBuffers(s->ctx.device, pool_of(s, q), 1, &cmd);
}

static void
fill(const struct state *s, const struct vkt_buffer *b, uint32_t n, uint32_t round)
{
   uint32_t *p = b->map;
   for (uint32_t i = 0; i < n; i++)
      p[i] = pattern(i, round);
   vkt_buffer_flush(&s->ctx, b);
}

static void
check(const struct state *s, const char *test, const struct vkt_buffer *b, uint32_t n,
      uint32_t round)
{
   vkt_buffer_invalidate(&s->ctx, b);
   const uint32_t *p = b->map;
   for (uint32_t i = 0; i < n; i++) {
      if (p[i] != pattern(i, round))
         vkt_fail("%s: round %u: element %u is %08x, %08x expected", test, round, i, p[i],
                  pattern(i, round));
   }
}

/* Host-visible -> device -> host-visible, each a submission of its own. */
static void
round_trip(struct state *s, VkQueue q, uint32_t round, const char *test)
{
   fill(s, &s->stage, ELEMENTS, round);
   memset(s->back.map, 0, (size_t)ELEMENTS * 4);
   vkt_buffer_flush(&s->ctx, &s->back);
   VkFence f = fence_new(s);
   VkCommandBuffer up = submit_copy(s, q, &s->stage, 0, &s->device, 0, ELEMENTS, f, NULL);
   wait(s, f);
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   VkCommandBuffer down = submit_copy(s, q, &s->device, 0, &s->back, 0, ELEMENTS, f, NULL);
   wait(s, f);
   check(s, test, &s->back, ELEMENTS, round);
   free_cmd(s, up, q);
   free_cmd(s, down, q);
   vkDestroyFence(s->ctx.device, f, NULL);
}

/* The burst's uploads, in uints. */
static const uint32_t burst_sizes[] = {24u << 10, 64u << 10, 128u << 10, 96u << 10, 320u << 10,
                                       64u << 10, 128u << 10, 24u << 10, 128u << 10, 128u << 10};
#define BURST_STAGE (320u << 10)

static void
test_burst(struct state *s, uint32_t round)
{
   const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
   uint32_t total = 0;
   for (size_t i = 0; i < VKT_ARRAY_SIZE(burst_sizes); i++)
      total += burst_sizes[i];
   struct vkt_buffer stage, dev, back;
   vkt_buffer_create(&s->ctx, (VkDeviceSize)BURST_STAGE * 4, usage, true, &stage);
   vkt_buffer_create(&s->ctx, (VkDeviceSize)total * 4, usage, false, &dev);
   vkt_buffer_create(&s->ctx, (VkDeviceSize)total * 4, usage, true, &back);
   VkFence f = fence_new(s);
   VkCommandBuffer cmds[VKT_ARRAY_SIZE(burst_sizes)];
   VkQueue qs[VKT_ARRAY_SIZE(burst_sizes)];
   uint32_t at = 0;
   for (size_t i = 0; i < VKT_ARRAY_SIZE(burst_sizes); i++) {
      qs[i] = s->queues[i % s->n_queues];
      /* every other one as ggml stages: the copy recorded first, its
       * source written between the recording's end and the submission */
      const bool recorded_first = i % 2 == 0;
      if (recorded_first) {
         cmds[i] = begin(s, pool_of(s, qs[i]));
         record_copy(cmds[i], &stage, 0, &dev, at, burst_sizes[i]);
      }
      uint32_t *p = stage.map;
      for (uint32_t k = 0; k < burst_sizes[i]; k++)
         p[k] = pattern(at + k, round);
      vkt_buffer_flush(&s->ctx, &stage);
      if (recorded_first)
         submit_one(qs[i], cmds[i], f, NULL);
      else
         cmds[i] = submit_copy(s, qs[i], &stage, 0, &dev, at, burst_sizes[i], f, NULL);
      wait(s, f);
      VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
      at += burst_sizes[i];
   }
   memset(back.map, 0, (size_t)total * 4);
   vkt_buffer_flush(&s->ctx, &back);
   VkCommandBuffer down = submit_copy(s, s->ctx.queue, &dev, 0, &back, 0, total, f, NULL);
   wait(s, f);
   check(s, "burst", &back, total, round);
   for (size_t i = 0; i < VKT_ARRAY_SIZE(burst_sizes); i++)
      free_cmd(s, cmds[i], qs[i]);
   free_cmd(s, down, s->ctx.queue);
   vkDestroyFence(s->ctx.device, f, NULL);
   vkt_buffer_destroy(&s->ctx, &stage);
   vkt_buffer_destroy(&s->ctx, &dev);
   vkt_buffer_destroy(&s->ctx, &back);
}

/* The compute job: JOB_ROUNDS rounds of the hash over job_in into job_out,
 * seeded with round; signals what base says. */
static VkCommandBuffer
submit_job(struct state *s, uint32_t round, VkFence fence, const VkSubmitInfo *base)
{
   VkCommandBuffer cmd = begin(s, s->ctx.cmd_pool);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline);
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout, 0, 1, &s->set, 0,
                           NULL);
   const struct params p = {JOB_ELEMENTS, JOB_ROUNDS, round};
   vkCmdPushConstants(cmd, s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
   vkCmdDispatch(cmd, JOB_ELEMENTS / 64, 1, 1);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   VkSubmitInfo submit = base ? *base : (VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
   submit.commandBufferCount = 1;
   submit.pCommandBuffers = &cmd;
   VKT_CHECK(vkQueueSubmit(s->ctx.queue, 1, &submit, fence));
   return cmd;
}

static void
check_job(struct state *s, const char *test, const struct vkt_buffer *b, uint32_t from,
          uint32_t n, uint32_t round)
{
   vkt_buffer_invalidate(&s->ctx, b);
   const uint32_t *in = s->job_in.map;
   const uint32_t *p = b->map;
   for (uint32_t i = 0; i < n; i++) {
      uint32_t want = vkt_compute_expected(from + i, in[from + i], JOB_ROUNDS, round);
      if (p[i] != want)
         vkt_fail("%s: round %u: element %u of the job's output is %08x, %08x expected", test,
                  round, from + i, p[i], want);
   }
}

static void
test_racing(struct state *s, uint32_t round)
{
   VkFence job_fence = fence_new(s), copy_fence = fence_new(s);
   VkCommandBuffer job = submit_job(s, round, job_fence, NULL);
   /* the device is busy: this copy is the GPU's (or waits for the job) */
   fill(s, &s->stage, ELEMENTS, round);
   VkCommandBuffer c1 =
      submit_copy(s, s->ctx.queue, &s->stage, 0, &s->back, 0, ELEMENTS, copy_fence, NULL);
   wait(s, copy_fence);
   check(s, "racing (busy device)", &s->back, ELEMENTS, round);
   wait(s, job_fence);
   /* what the job wrote, copied once it is done: the last ELEMENTS */
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &copy_fence));
   VkCommandBuffer c2 = submit_copy(s, s->ctx.queue, &s->job_out, JOB_ELEMENTS - ELEMENTS,
                                    &s->back, 0, ELEMENTS, copy_fence, NULL);
   wait(s, copy_fence);
   check_job(s, "racing (after the job)", &s->back, JOB_ELEMENTS - ELEMENTS, ELEMENTS, round);
   free_cmd(s, job, s->ctx.queue);
   free_cmd(s, c1, s->ctx.queue);
   free_cmd(s, c2, s->ctx.queue);
   vkDestroyFence(s->ctx.device, job_fence, NULL);
   vkDestroyFence(s->ctx.device, copy_fence, NULL);
}

/* A copy's command buffer submitted again: first with nothing in flight,
 * then beside a compute job, then with nothing in flight again; then
 * recorded anew into the same command buffer and submitted beside the job;
 * one recorded and freed unsubmitted.  (gpud's ICD holds a recording of
 * copies back until a submission of it goes to the daemon.) */
static void
test_again(struct state *s, uint32_t round)
{
   VkQueue q = s->ctx.queue;
   VkFence f = fence_new(s), job_fence = fence_new(s);
   const VkCommandBufferBeginInfo begin_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VkCommandBuffer unsubmitted = begin(s, s->ctx.cmd_pool);
   record_copy(unsubmitted, &s->stage, 0, &s->back, 0, ELEMENTS);
   free_cmd(s, unsubmitted, q);

   fill(s, &s->stage, ELEMENTS, round);
   VkCommandBuffer c = submit_copy(s, q, &s->stage, 0, &s->back, 0, ELEMENTS, f, NULL);
   wait(s, f);
   check(s, "again (first)", &s->back, ELEMENTS, round);
   const VkSubmitInfo again = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &c,
   };
   for (uint32_t i = 1; i <= 2; i++) {
      /* the second time beside the job, the third with nothing in flight */
      VkCommandBuffer job = i == 1 ? submit_job(s, round, job_fence, NULL) : VK_NULL_HANDLE;
      VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
      fill(s, &s->stage, ELEMENTS, round + 1000 * i);
      VKT_CHECK(vkQueueSubmit(q, 1, &again, f));
      wait(s, f);
      check(s, i == 1 ? "again (beside a job)" : "again (third)", &s->back, ELEMENTS,
            round + 1000 * i);
      if (job) {
         wait(s, job_fence);
         free_cmd(s, job, q);
      }
   }
   /* recorded anew: the device buffer, then back beside the job */
   VKT_CHECK(vkBeginCommandBuffer(c, &begin_info));
   record_copy(c, &s->stage, 0, &s->device, 0, ELEMENTS);
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &job_fence));
   fill(s, &s->stage, ELEMENTS, round + 3000);
   VkCommandBuffer job = submit_job(s, round, job_fence, NULL);
   VKT_CHECK(vkQueueSubmit(q, 1, &again, f));
   wait(s, f);
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   memset(s->back.map, 0, (size_t)ELEMENTS * 4);
   vkt_buffer_flush(&s->ctx, &s->back);
   VkCommandBuffer down = submit_copy(s, q, &s->device, 0, &s->back, 0, ELEMENTS, f, NULL);
   wait(s, f);
   check(s, "again (recorded anew)", &s->back, ELEMENTS, round + 3000);
   wait(s, job_fence);
   free_cmd(s, job, q);
   free_cmd(s, down, q);
   free_cmd(s, c, q);
   vkDestroyFence(s->ctx.device, f, NULL);
   vkDestroyFence(s->ctx.device, job_fence, NULL);
}

static void
test_semaphore(struct state *s, uint32_t round)
{
   const VkSemaphoreTypeCreateInfo timeline_type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
   };
   const VkSemaphoreCreateInfo binary_info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
   const VkSemaphoreCreateInfo timeline_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = &timeline_type,
   };
   VkSemaphore binary, timeline;
   VKT_CHECK(vkCreateSemaphore(s->ctx.device, &binary_info, NULL, &binary));
   VKT_CHECK(vkCreateSemaphore(s->ctx.device, &timeline_info, NULL, &timeline));
   /* the job signals both; one copy waits on each */
   const VkSemaphore signals[2] = {binary, timeline};
   const uint64_t values[2] = {0, 1};
   const VkTimelineSemaphoreSubmitInfo job_values = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .signalSemaphoreValueCount = 2,
      .pSignalSemaphoreValues = values,
   };
   const VkSubmitInfo job_submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &job_values,
      .signalSemaphoreCount = 2,
      .pSignalSemaphores = signals,
   };
   VkCommandBuffer job = submit_job(s, round, VK_NULL_HANDLE, &job_submit);
   const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
   VkFence f = fence_new(s);
   const VkSubmitInfo after_binary = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &binary,
      .pWaitDstStageMask = &stage,
   };
   VkCommandBuffer c1 = submit_copy(s, s->ctx.queue, &s->job_out, 0, &s->back, 0, ELEMENTS,
                                    f, &after_binary);
   wait(s, f);
   check_job(s, "semaphore (binary)", &s->back, 0, ELEMENTS, round);
   const uint64_t one = 1;
   const VkTimelineSemaphoreSubmitInfo wait_one = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = 1,
      .pWaitSemaphoreValues = &one,
   };
   const VkSubmitInfo after_timeline = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &wait_one,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &timeline,
      .pWaitDstStageMask = &stage,
   };
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   VkCommandBuffer c2 = submit_copy(s, s->ctx.queue, &s->job_out, ELEMENTS, &s->back, 0,
                                    ELEMENTS, f, &after_timeline);
   wait(s, f);
   check_job(s, "semaphore (timeline)", &s->back, ELEMENTS, ELEMENTS, round);
   free_cmd(s, job, s->ctx.queue);
   free_cmd(s, c1, s->ctx.queue);
   free_cmd(s, c2, s->ctx.queue);
   vkDestroyFence(s->ctx.device, f, NULL);
   vkDestroySemaphore(s->ctx.device, binary, NULL);
   vkDestroySemaphore(s->ctx.device, timeline, NULL);
}

/* Polls the fence as ggml polls (vkGetFenceStatus) until it signals. */
static void
poll_fence(struct state *s, VkFence f, const char *what)
{
   uint64_t start = vkt_now_ns();
   VkResult r;
   while ((r = vkGetFenceStatus(s->ctx.device, f)) == VK_NOT_READY) {
      if (vkt_now_ns() - start > 60000000000ull)
         vkt_fail("%s did not signal within 60 s", what);
   }
   VKT_CHECK(r);
}

/* An empty submission with a fence, the fence polled. */
static void
submit_empty(struct state *s, uint32_t submit_count, VkFence f)
{
   const VkSubmitInfo none = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
   VKT_CHECK(vkQueueSubmit(s->ctx.queue, submit_count, submit_count ? &none : NULL, f));
   poll_fence(s, f, "empty: an empty submission's fence");
}

static void
test_empty(struct state *s, uint32_t round)
{
   VkFence f = fence_new(s);
   /* behind a long job: the fence signals once the job's output is all
    * there */
   VkCommandBuffer job = submit_job(s, round, VK_NULL_HANDLE, NULL);
   submit_empty(s, 0, f);
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   VkCommandBuffer out = submit_copy(s, s->ctx.queue, &s->job_out, JOB_ELEMENTS - ELEMENTS,
                                     &s->back, 0, ELEMENTS, f, NULL);
   wait(s, f);
   check_job(s, "empty (after a job)", &s->back, JOB_ELEMENTS - ELEMENTS, ELEMENTS, round);
   /* copies without a fence (nothing in flight), then the empty one: the
    * bytes are where the copies put them */
   fill(s, &s->stage, ELEMENTS, round);
   memset(s->back.map, 0, (size_t)ELEMENTS * 4);
   vkt_buffer_flush(&s->ctx, &s->back);
   VkCommandBuffer up = submit_copy(s, s->ctx.queue, &s->stage, 0, &s->device, 0, ELEMENTS,
                                    VK_NULL_HANDLE, NULL);
   VkCommandBuffer down = submit_copy(s, s->ctx.queue, &s->device, 0, &s->back, 0, ELEMENTS,
                                      VK_NULL_HANDLE, NULL);
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   submit_empty(s, 1, f);
   check(s, "empty (after copies)", &s->back, ELEMENTS, round);
   /* and with nothing at all before it */
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   submit_empty(s, 0, f);
   free_cmd(s, job, s->ctx.queue);
   free_cmd(s, out, s->ctx.queue);
   free_cmd(s, up, s->ctx.queue);
   free_cmd(s, down, s->ctx.queue);
   vkDestroyFence(s->ctx.device, f, NULL);
}

static void
test_fences(struct state *s, uint32_t round)
{
   VkFence f = fence_new(s);
   fill(s, &s->stage, ELEMENTS, round);
   VkCommandBuffer c = submit_copy(s, s->ctx.queue, &s->stage, 0, &s->back, 0, ELEMENTS, f, NULL);
   poll_fence(s, f, "fences: a copy's fence");
   VKT_EXPECT(vkWaitForFences(s->ctx.device, 1, &f, VK_TRUE, 0), VK_SUCCESS);
   check(s, "fences", &s->back, ELEMENTS, round);
   /* the same fence, reset, signalled by the GPU's work */
   VKT_CHECK(vkResetFences(s->ctx.device, 1, &f));
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, f), VK_NOT_READY);
   VkCommandBuffer job = submit_job(s, round, f, NULL);
   wait(s, f);
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, f), VK_SUCCESS);
   VKT_CHECK(vkQueueWaitIdle(s->ctx.queue));
   free_cmd(s, c, s->ctx.queue);
   free_cmd(s, job, s->ctx.queue);
   vkDestroyFence(s->ctx.device, f, NULL);

   /* A copy's fence destroyed as soon as it signalled, and one made
    * signalled right after (in its place, where a driver reuses places);
    * then a fence reset and signalled by a copy twice: each reads as it
    * should, also once the device has caught up with everything sent. */
   VkFence g = fence_new(s);
   VkCommandBuffer c2 = submit_copy(s, s->ctx.queue, &s->stage, 0, &s->back, 0, ELEMENTS, g, NULL);
   wait(s, g);
   vkDestroyFence(s->ctx.device, g, NULL);
   const VkFenceCreateInfo signalled = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
                                        .flags = VK_FENCE_CREATE_SIGNALED_BIT};
   VkFence h;
   VKT_CHECK(vkCreateFence(s->ctx.device, &signalled, NULL, &h));
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, h), VK_SUCCESS);
   VKT_CHECK(vkDeviceWaitIdle(s->ctx.device));
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, h), VK_SUCCESS);
   VKT_EXPECT(vkWaitForFences(s->ctx.device, 1, &h, VK_TRUE, 0), VK_SUCCESS);
   VkCommandBuffer c3[2];
   for (unsigned i = 0; i < 2; i++) {
      VKT_CHECK(vkResetFences(s->ctx.device, 1, &h));
      c3[i] = submit_copy(s, s->ctx.queue, &s->stage, 0, &s->back, 0, ELEMENTS, h, NULL);
      wait(s, h);
   }
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, h), VK_SUCCESS);
   VKT_CHECK(vkDeviceWaitIdle(s->ctx.device));
   VKT_EXPECT(vkGetFenceStatus(s->ctx.device, h), VK_SUCCESS);
   check(s, "fences", &s->back, ELEMENTS, round);
   free_cmd(s, c2, s->ctx.queue);
   free_cmd(s, c3[0], s->ctx.queue);
   free_cmd(s, c3[1], s->ctx.queue);
   vkDestroyFence(s->ctx.device, h, NULL);
}

static void
buffers(struct state *s)
{
   const VkBufferUsageFlags usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
   const VkDeviceSize size = (VkDeviceSize)ELEMENTS * 4;
   vkt_buffer_create(&s->ctx, size, usage, true, &s->stage);
   vkt_buffer_create(&s->ctx, size, usage, false, &s->device);
   vkt_buffer_create(&s->ctx, size, usage, true, &s->back);
   vkt_buffer_create(&s->ctx, (VkDeviceSize)JOB_ELEMENTS * 4, usage, true, &s->job_in);
   vkt_buffer_create(&s->ctx, (VkDeviceSize)JOB_ELEMENTS * 4, usage, false, &s->job_out);
   uint32_t *in = s->job_in.map;
   for (uint32_t i = 0; i < JOB_ELEMENTS; i++)
      in[i] = pattern(i, 0xabcd);
   vkt_buffer_flush(&s->ctx, &s->job_in);

   const VkDescriptorSetLayoutBinding bindings[2] = {
      {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
      {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 2,
      .pBindings = bindings,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(s->ctx.device, &set_layout_info, NULL, &s->set_layout));
   s->set = vkt_descriptor_set(&s->ctx, s->set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2,
                               &s->pool);
   const VkBuffer set_buffers[] = {s->job_in.buffer, s->job_out.buffer};
   vkt_write_buffers(&s->ctx, s->set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, set_buffers,
                     VKT_ARRAY_SIZE(set_buffers));
   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(struct params)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &s->set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(s->ctx.device, &layout_info, NULL, &s->layout));
   s->pipeline = vkt_compute_pipeline(&s->ctx, compute_comp_spv, sizeof(compute_comp_spv),
                                      s->layout, 0);
}

/* The context's queue, and one of another family where there is one. */
static void
queues(struct state *s)
{
   s->n_queues = 1;
   s->queues[0] = s->ctx.queue;
   s->pools[0] = s->ctx.cmd_pool;
   if (s->ctx.other_queue) {
      const VkCommandPoolCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
         .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
         .queueFamilyIndex = s->ctx.other_family,
      };
      VKT_CHECK(vkCreateCommandPool(s->ctx.device, &info, NULL, &s->pools[1]));
      s->queues[s->n_queues++] = s->ctx.other_queue;
   }
}

int
main(int argc, char **argv)
{
   const char *device = NULL;
   uint32_t rounds = 8;
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc)
         device = argv[++i];
      else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
         rounds = (uint32_t)vkt_parse_u64("--rounds", argv[++i]);
      else {
         fprintf(stderr, "usage: vk_transfer [--device NAME] [--rounds N]\n");
         return 2;
      }
   }
   struct state s;
   memset(&s, 0, sizeof(s));
   vkt_set_prog("vk_transfer");
   VkInstance instance = vkt_instance_create("vk_transfer");
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device);
   /* a second queue family, where there is one with transfers */
   uint32_t n_families = 0;
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, NULL);
   VkQueueFamilyProperties families[16];
   n_families = n_families < 16 ? n_families : 16;
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, families);
   uint32_t other = UINT32_MAX;
   for (uint32_t i = 1; i < n_families && other == UINT32_MAX; i++) {
      if (families[i].queueFlags &
          (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))
         other = i;
   }
   vkt_context_init_physical_family(&s.ctx, instance, pdev, VKT_FEATURE_TIMELINE_SEMAPHORE, NULL,
                                    0, NULL, other);
   s.ctx.prog = "vk_transfer";
   buffers(&s);
   queues(&s);

   for (uint32_t r = 0; r < rounds; r++)
      round_trip(&s, s.ctx.queue, r, "upload");
   printf("vk_transfer: upload: OK: %u round trips of %u bytes\n", rounds, ELEMENTS * 4);
   for (uint32_t r = 0; r < rounds; r++)
      test_racing(&s, r);
   printf("vk_transfer: racing: OK: %u rounds beside a compute job\n", rounds);
   for (uint32_t r = 0; r < rounds; r++)
      test_again(&s, r);
   printf("vk_transfer: again: OK: %u rounds of a command buffer submitted again\n", rounds);
   for (uint32_t r = 0; r < rounds; r++)
      test_semaphore(&s, r);
   printf("vk_transfer: semaphore: OK: %u rounds behind binary and timeline semaphores\n",
          rounds);
   for (uint32_t r = 0; r < rounds; r++)
      test_fences(&s, r);
   printf("vk_transfer: fences: OK: %u rounds\n", rounds);
   /* (each round a long job: one is enough beside the other cases') */
   const uint32_t empty_rounds = rounds < 1 ? rounds : 1;
   for (uint32_t r = 0; r < empty_rounds; r++)
      test_empty(&s, r);
   printf("vk_transfer: empty: OK: %u rounds of empty submissions with a fence\n",
          empty_rounds);
   for (uint32_t q = 0; q < s.n_queues; q++) {
      for (uint32_t r = 0; r < rounds; r++)
         round_trip(&s, s.queues[q], rounds + r, "queues");
   }
   printf("vk_transfer: queues: OK: %u queue(s)\n", s.n_queues);
   for (uint32_t r = 0; r < rounds; r++)
      test_burst(&s, r);
   printf("vk_transfer: burst: OK: %u rounds of %zu uploads\n", rounds,
          VKT_ARRAY_SIZE(burst_sizes));

   VKT_CHECK(vkDeviceWaitIdle(s.ctx.device));
   if (s.n_queues > 1)
      vkDestroyCommandPool(s.ctx.device, s.pools[1], NULL);
   vkDestroyPipeline(s.ctx.device, s.pipeline, NULL);
   vkDestroyPipelineLayout(s.ctx.device, s.layout, NULL);
   vkDestroyDescriptorPool(s.ctx.device, s.pool, NULL);
   vkDestroyDescriptorSetLayout(s.ctx.device, s.set_layout, NULL);
   const struct vkt_buffer *all[] = {&s.stage, &s.device, &s.back, &s.job_in, &s.job_out};
   for (size_t i = 0; i < VKT_ARRAY_SIZE(all); i++)
      vkt_buffer_destroy(&s.ctx, (struct vkt_buffer *)all[i]);
   vkt_context_finish(&s.ctx);
   return 0;
}
