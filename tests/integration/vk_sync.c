/* SPDX-License-Identifier: MIT */
/*
 * vk_sync: synchronisation primitives and queries.
 *
 *   timeline  wait-before-signal across threads (vkWaitSemaphores in one
 *             thread, vkSignalSemaphore from another), a queue submit that
 *             waits on a value signalled from the host only later, WAIT_ANY,
 *             timeouts, vkQueueSubmit2
 *   fences    status, waits, timeouts, reset, pre-signalled fences, binary
 *             semaphores between submits, an empty submit with a fence, more
 *             fences than gpud's completion page has slots (a wait for a
 *             fence of the page and one past it together)
 *   events    host set/reset/status, vkCmdSetEvent / vkCmdResetEvent, a
 *             vkCmdWaitEvents on a host-set event, the host polling an event
 *             a submission sets before it waits for the host (the answer
 *             cannot wait for the submission's end), events set in a
 *             secondary command buffer and by vkCmdSetEvent2/vkCmdResetEvent2
 *   queries   exact occlusion counts (vkGetQueryPoolResults with and without
 *             availability, vkCmdCopyQueryPoolResults), a host reset of some
 *             of them, and timestamps
 *
 *   vk_sync [--device NAME] [--only timeline|fences|events|queries]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkt_common.h"
#include "quad_vert_spv.h"
#include "solid_frag_spv.h"

#define SECOND 1000000000ull

static void
sleep_ms(unsigned ms)
{
   struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

   while (nanosleep(&ts, &ts) != 0)
      ;
}

static VkSemaphore
semaphore_create(const struct vkt_context *ctx, bool timeline,
                 uint64_t initial)
{
   const VkSemaphoreTypeCreateInfo type_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = initial,
   };
   const VkSemaphoreCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = timeline ? &type_info : NULL,
   };
   VkSemaphore sem;

   VKT_CHECK(vkCreateSemaphore(ctx->device, &info, NULL, &sem));
   return sem;
}

static VkFence
fence_create(const struct vkt_context *ctx, bool signaled)
{
   const VkFenceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
      .flags = signaled ? VK_FENCE_CREATE_SIGNALED_BIT : 0,
   };
   VkFence fence;

   VKT_CHECK(vkCreateFence(ctx->device, &info, NULL, &fence));
   return fence;
}

static uint64_t
counter_value(const struct vkt_context *ctx, VkSemaphore sem)
{
   uint64_t value;

   VKT_CHECK(vkGetSemaphoreCounterValue(ctx->device, sem, &value));
   return value;
}

static VkResult
wait_value(const struct vkt_context *ctx, VkSemaphore sem, uint64_t value,
           uint64_t timeout)
{
   const VkSemaphoreWaitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &sem,
      .pValues = &value,
   };

   return vkWaitSemaphores(ctx->device, &info, timeout);
}

static void
signal_value(const struct vkt_context *ctx, VkSemaphore sem, uint64_t value)
{
   const VkSemaphoreSignalInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
      .semaphore = sem,
      .value = value,
   };

   VKT_CHECK(vkSignalSemaphore(ctx->device, &info));
}

/* A recorded command buffer that fills `buf` with `value`. */
static VkCommandBuffer
fill_cmd(const struct vkt_context *ctx, const struct vkt_buffer *buf,
         uint32_t value)
{
   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   const VkMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };
   VkCommandBuffer cmd;

   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &cmd));
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
   vkCmdFillBuffer(cmd, buf->buffer, 0, VK_WHOLE_SIZE, value);
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                        NULL);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   return cmd;
}

static void
check_filled(const struct vkt_context *ctx, const struct vkt_buffer *buf,
             uint32_t value, const char *what)
{
   const uint32_t *data = buf->map;

   vkt_buffer_invalidate(ctx, buf);
   for (VkDeviceSize i = 0; i < buf->size / 4; i++)
      if (data[i] != value)
         vkt_fail("%s: word %llu is 0x%08x, expected 0x%08x", what,
                  (unsigned long long)i, data[i], value);
}

/* ---- (a) timeline semaphores -------------------------------------------- */

struct waiter {
   const struct vkt_context *ctx;
   VkSemaphore sem;
   atomic_bool started;
   atomic_bool done;
   VkResult result;
   uint64_t done_ns;
};

struct signaler {
   const struct vkt_context *ctx;
   VkSemaphore sem;
   struct waiter *waiter;
   bool waiter_early;     /* the waiter returned before value 2 */
   uint64_t signal_ns;
};

static void *
waiter_thread(void *data)
{
   struct waiter *w = data;

   atomic_store(&w->started, true);
   w->result = wait_value(w->ctx, w->sem, 2, 10 * SECOND);
   w->done_ns = vkt_now_ns();
   atomic_store(&w->done, true);
   return NULL;
}

static void *
signaler_thread(void *data)
{
   struct signaler *s = data;

   while (!atomic_load(&s->waiter->started))
      sleep_ms(1);
   sleep_ms(100);
   if (atomic_load(&s->waiter->done))
      s->waiter_early = true;
   signal_value(s->ctx, s->sem, 1);
   sleep_ms(50);
   if (atomic_load(&s->waiter->done))
      s->waiter_early = true;
   s->signal_ns = vkt_now_ns();
   signal_value(s->ctx, s->sem, 2);
   return NULL;
}

static void
test_timeline(const struct vkt_context *ctx)
{
   VkSemaphore sem = semaphore_create(ctx, true, 0);
   pthread_t ta, tb;

   if (counter_value(ctx, sem) != 0)
      vkt_fail("timeline: new semaphore counter is not 0");
   VKT_EXPECT(wait_value(ctx, sem, 1, 0), VK_TIMEOUT);

   /* Thread A waits for 2 before thread B signals 1, then 2. */
   struct waiter w = { .ctx = ctx, .sem = sem };
   struct signaler s = { .ctx = ctx, .sem = sem, .waiter = &w };
   if (pthread_create(&ta, NULL, waiter_thread, &w) ||
       pthread_create(&tb, NULL, signaler_thread, &s))
      vkt_fail("pthread_create failed");
   pthread_join(tb, NULL);
   pthread_join(ta, NULL);
   if (s.waiter_early)
      vkt_fail("timeline: vkWaitSemaphores(2) returned before 2 was "
               "signalled");
   if (w.result != VK_SUCCESS)
      vkt_fail("timeline: vkWaitSemaphores(2) returned %s",
               vkt_result_name(w.result));
   printf("vk_sync: timeline: waiter woke %.2f ms after the host signal\n",
          (double)(w.done_ns - s.signal_ns) / 1e6);
   if (counter_value(ctx, sem) != 2)
      vkt_fail("timeline: counter is %llu, expected 2",
               (unsigned long long)counter_value(ctx, sem));

   /* A submit waiting on 3 (signals 4) before 3 is signalled. */
   struct vkt_buffer buf;
   vkt_buffer_create(ctx, 65536, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                     &buf);
   memset(buf.map, 0, buf.size);
   vkt_buffer_flush(ctx, &buf);
   VkCommandBuffer cmd = fill_cmd(ctx, &buf, 0x600df00d);
   VkFence fence = fence_create(ctx, false);
   const uint64_t wait3 = 3, signal4 = 4;
   const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
   const VkTimelineSemaphoreSubmitInfo tl_info = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = 1,
      .pWaitSemaphoreValues = &wait3,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &signal4,
   };
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &tl_info,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &sem,
      .pWaitDstStageMask = &stage,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
      .signalSemaphoreCount = 1,
      .pSignalSemaphores = &sem,
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fence));
   sleep_ms(50);
   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_NOT_READY);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 0),
              VK_TIMEOUT);
   if (counter_value(ctx, sem) != 2)
      vkt_fail("timeline: the submit waiting on 3 ran early (counter %llu)",
               (unsigned long long)counter_value(ctx, sem));
   if (((uint32_t *)buf.map)[0] != 0)
      vkt_fail("timeline: the submit waiting on 3 wrote before 3");

   signal_value(ctx, sem, 3);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 10 * SECOND),
              VK_SUCCESS);
   VKT_EXPECT(wait_value(ctx, sem, 4, 10 * SECOND), VK_SUCCESS);
   if (counter_value(ctx, sem) != 4)
      vkt_fail("timeline: counter is %llu after the submit, expected 4",
               (unsigned long long)counter_value(ctx, sem));
   check_filled(ctx, &buf, 0x600df00d, "timeline submit");
   VKT_EXPECT(wait_value(ctx, sem, 5, 0), VK_TIMEOUT);
   VKT_EXPECT(wait_value(ctx, sem, 5, 20000000ull), VK_TIMEOUT);

   /* WAIT_ANY versus waiting for all. */
   VkSemaphore other = semaphore_create(ctx, true, 0);
   const VkSemaphore both[] = { sem, other };
   const uint64_t values[] = { 4, 1 };
   VkSemaphoreWaitInfo wait_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .flags = VK_SEMAPHORE_WAIT_ANY_BIT,
      .semaphoreCount = 2,
      .pSemaphores = both,
      .pValues = values,
   };
   VKT_EXPECT(vkWaitSemaphores(ctx->device, &wait_info, 0), VK_SUCCESS);
   wait_info.flags = 0;
   VKT_EXPECT(vkWaitSemaphores(ctx->device, &wait_info, 0), VK_TIMEOUT);

   /* vkQueueSubmit2: wait for 4 on `sem`, signal 1 on `other`. */
   const VkSemaphoreSubmitInfo wait2 = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
      .semaphore = sem,
      .value = 4,
      .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
   };
   const VkSemaphoreSubmitInfo signal2 = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
      .semaphore = other,
      .value = 1,
      .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
   };
   const VkSubmitInfo2 submit2 = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
      .waitSemaphoreInfoCount = 1,
      .pWaitSemaphoreInfos = &wait2,
      .signalSemaphoreInfoCount = 1,
      .pSignalSemaphoreInfos = &signal2,
   };
   VKT_CHECK(vkQueueSubmit2(ctx->queue, 1, &submit2, VK_NULL_HANDLE));
   VKT_EXPECT(vkWaitSemaphores(ctx->device, &wait_info, 10 * SECOND),
              VK_SUCCESS);

   VKT_CHECK(vkQueueWaitIdle(ctx->queue));
   vkDestroySemaphore(ctx->device, other, NULL);
   vkDestroyFence(ctx->device, fence, NULL);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
   vkt_buffer_destroy(ctx, &buf);
   vkDestroySemaphore(ctx->device, sem, NULL);
   printf("vk_sync: timeline: OK\n");
}

/* ---- (b) fences --------------------------------------------------------- */

static void
test_fences(const struct vkt_context *ctx)
{
   VkFence fence = fence_create(ctx, false);
   struct vkt_buffer buf;
   uint64_t t0;

   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_NOT_READY);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 0),
              VK_TIMEOUT);
   t0 = vkt_now_ns();
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 20000000ull),
              VK_TIMEOUT);
   printf("vk_sync: fences: 20 ms timeout took %.2f ms\n",
          (double)(vkt_now_ns() - t0) / 1e6);

   vkt_buffer_create(ctx, 1 << 20, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                     &buf);
   VkCommandBuffer cmd = fill_cmd(ctx, &buf, 0x12345678);
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fence));
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 10 * SECOND),
              VK_SUCCESS);
   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_SUCCESS);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 0),
              VK_SUCCESS);
   check_filled(ctx, &buf, 0x12345678, "fenced submit");

   VKT_CHECK(vkResetFences(ctx->device, 1, &fence));
   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_NOT_READY);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 0),
              VK_TIMEOUT);

   /* Pre-signalled fence; any-of versus all-of. */
   VkFence signaled = fence_create(ctx, true);
   VKT_EXPECT(vkGetFenceStatus(ctx->device, signaled), VK_SUCCESS);
   const VkFence pair[] = { fence, signaled };
   VKT_EXPECT(vkWaitForFences(ctx->device, 2, pair, VK_FALSE, 0), VK_SUCCESS);
   VKT_EXPECT(vkWaitForFences(ctx->device, 2, pair, VK_TRUE, 0), VK_TIMEOUT);

   /* An empty submit still signals its fence. */
   VKT_CHECK(vkQueueSubmit(ctx->queue, 0, NULL, fence));
   VKT_EXPECT(vkWaitForFences(ctx->device, 2, pair, VK_TRUE, 10 * SECOND),
              VK_SUCCESS);
   VKT_CHECK(vkResetFences(ctx->device, 2, pair));
   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_NOT_READY);
   VKT_EXPECT(vkGetFenceStatus(ctx->device, signaled), VK_NOT_READY);

   /* Binary semaphore from one submit to the next; the fence on the
    * second. */
   VkSemaphore binary = semaphore_create(ctx, false, 0);
   VkCommandBuffer cmd2 = fill_cmd(ctx, &buf, 0x87654321);
   const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
   const VkSubmitInfo chain[] = {
      {
         .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
         .commandBufferCount = 1,
         .pCommandBuffers = &cmd,
         .signalSemaphoreCount = 1,
         .pSignalSemaphores = &binary,
      },
      {
         .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
         .waitSemaphoreCount = 1,
         .pWaitSemaphores = &binary,
         .pWaitDstStageMask = &stage,
         .commandBufferCount = 1,
         .pCommandBuffers = &cmd2,
      },
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &chain[0], VK_NULL_HANDLE));
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &chain[1], fence));
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 10 * SECOND),
              VK_SUCCESS);
   check_filled(ctx, &buf, 0x87654321, "semaphore chain");

   /* More fences than gpud's completion page has slots (8192): the last
    * ones are the host driver's alone, and a wait for one of them together
    * with a fence of the page goes to the daemon, whose host driver must
    * know that one signalled too. */
   enum { MANY = 8300 };
   VkFence *many = calloc(MANY, sizeof(*many));
   if (!many)
      vkt_fail("fences: out of memory");
   for (unsigned i = 0; i < MANY; i++)
      many[i] = fence_create(ctx, false);
   const VkFence mixed[] = { many[0], many[MANY - 1] };
   for (unsigned round = 0; round < 2; round++) {
      VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, mixed[0]));
      VKT_CHECK(vkQueueSubmit(ctx->queue, 0, NULL, mixed[1]));
      VKT_EXPECT(vkWaitForFences(ctx->device, 2, mixed, VK_TRUE, 10 * SECOND),
                 VK_SUCCESS);
      VKT_EXPECT(vkGetFenceStatus(ctx->device, mixed[0]), VK_SUCCESS);
      VKT_EXPECT(vkGetFenceStatus(ctx->device, mixed[1]), VK_SUCCESS);
      check_filled(ctx, &buf, 0x12345678, "fenced beside a fence past the slots");
      VKT_CHECK(vkResetFences(ctx->device, 2, mixed));
      VKT_EXPECT(vkWaitForFences(ctx->device, 2, mixed, VK_FALSE, 0),
                 VK_TIMEOUT);
   }
   for (unsigned i = 0; i < MANY; i++)
      vkDestroyFence(ctx->device, many[i], NULL);
   free(many);

   VKT_CHECK(vkDeviceWaitIdle(ctx->device));
   vkDestroySemaphore(ctx->device, binary, NULL);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd2);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
   vkt_buffer_destroy(ctx, &buf);
   vkDestroyFence(ctx->device, signaled, NULL);
   vkDestroyFence(ctx->device, fence, NULL);
   printf("vk_sync: fences: OK\n");
}

/* ---- (c) events --------------------------------------------------------- */

static void
test_events(const struct vkt_context *ctx)
{
   const VkEventCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO,
   };
   VkEvent host_event, gpu_event;
   struct vkt_buffer buf;

   VKT_CHECK(vkCreateEvent(ctx->device, &info, NULL, &host_event));
   VKT_CHECK(vkCreateEvent(ctx->device, &info, NULL, &gpu_event));

   VKT_EXPECT(vkGetEventStatus(ctx->device, host_event), VK_EVENT_RESET);
   VKT_CHECK(vkSetEvent(ctx->device, host_event));
   VKT_EXPECT(vkGetEventStatus(ctx->device, host_event), VK_EVENT_SET);
   VKT_CHECK(vkResetEvent(ctx->device, host_event));
   VKT_EXPECT(vkGetEventStatus(ctx->device, host_event), VK_EVENT_RESET);
   VKT_CHECK(vkSetEvent(ctx->device, host_event));
   VKT_CHECK(vkSetEvent(ctx->device, host_event));   /* idempotent */
   VKT_EXPECT(vkGetEventStatus(ctx->device, host_event), VK_EVENT_SET);

   /* Wait on the host-set event, fill, then set the other event. */
   vkt_buffer_create(ctx, 4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &buf);
   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   vkCmdWaitEvents(cmd, 1, &host_event, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, 0, NULL, 0, NULL, 0, NULL);
   vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0xe0e0e0e0);
   vkCmdSetEvent(cmd, gpu_event, VK_PIPELINE_STAGE_TRANSFER_BIT);
   const VkMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                        NULL);
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_RESET);
   vkt_cmd_submit_wait(ctx, cmd);
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_SET);
   check_filled(ctx, &buf, 0xe0e0e0e0, "event-gated fill");

   cmd = vkt_cmd_begin(ctx);
   vkCmdResetEvent(cmd, gpu_event, VK_PIPELINE_STAGE_TRANSFER_BIT);
   vkt_cmd_submit_wait(ctx, cmd);
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_RESET);
   VKT_EXPECT(vkGetEventStatus(ctx->device, host_event), VK_EVENT_SET);

   /* The submission sets gpu_event, then waits for go: the host sees the
    * event set while the submission is still running. */
   VkEvent go;
   VKT_CHECK(vkCreateEvent(ctx->device, &info, NULL, &go));
   cmd = vkt_cmd_begin(ctx);
   vkCmdSetEvent(cmd, gpu_event, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
   vkCmdWaitEvents(cmd, 1, &go, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                   NULL, 0, NULL, 0, NULL);
   vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0x60606060);
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                        &to_host, 0, NULL, 0, NULL);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   VkFence fence = fence_create(ctx, false);
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fence));
   uint64_t t0 = vkt_now_ns();
   VkResult st;
   while ((st = vkGetEventStatus(ctx->device, gpu_event)) == VK_EVENT_RESET &&
          vkt_now_ns() - t0 < 30 * SECOND)
      ;
   if (st != VK_EVENT_SET)
      vkt_fail("events: an event set by a running submission read %s", vkt_result_name(st));
   VKT_EXPECT(vkGetFenceStatus(ctx->device, fence), VK_NOT_READY);
   VKT_EXPECT(vkGetEventStatus(ctx->device, go), VK_EVENT_RESET);
   VKT_CHECK(vkSetEvent(ctx->device, go));
   VKT_EXPECT(vkGetEventStatus(ctx->device, go), VK_EVENT_SET);
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 30 * SECOND), VK_SUCCESS);
   check_filled(ctx, &buf, 0x60606060, "fill after the host's go");
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_SET);
   /* host resets of both, one submission after them sets go again */
   VKT_CHECK(vkResetEvent(ctx->device, gpu_event));
   VKT_CHECK(vkResetEvent(ctx->device, go));
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_RESET);
   VKT_EXPECT(vkGetEventStatus(ctx->device, go), VK_EVENT_RESET);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);

   /* A secondary command buffer sets one event and resets another (the
    * second set by the host first), with the synchronization2 commands. */
   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_SECONDARY,
      .commandBufferCount = 1,
   };
   VkCommandBuffer secondary;
   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &secondary));
   const VkCommandBufferInheritanceInfo inherit = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
   };
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .pInheritanceInfo = &inherit,
   };
   VKT_CHECK(vkBeginCommandBuffer(secondary, &begin));
   const VkDependencyInfo dep = {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
   vkCmdSetEvent2(secondary, gpu_event, &dep);
   vkCmdResetEvent2(secondary, go, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
   VKT_CHECK(vkEndCommandBuffer(secondary));
   VKT_CHECK(vkSetEvent(ctx->device, go));
   VKT_CHECK(vkResetFences(ctx->device, 1, &fence));
   cmd = vkt_cmd_begin(ctx);
   vkCmdExecuteCommands(cmd, 1, &secondary);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fence));
   VKT_EXPECT(vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 30 * SECOND), VK_SUCCESS);
   VKT_EXPECT(vkGetEventStatus(ctx->device, gpu_event), VK_EVENT_SET);
   VKT_EXPECT(vkGetEventStatus(ctx->device, go), VK_EVENT_RESET);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &secondary);

   vkDestroyFence(ctx->device, fence, NULL);
   vkDestroyEvent(ctx->device, go, NULL);
   vkt_buffer_destroy(ctx, &buf);
   vkDestroyEvent(ctx->device, gpu_event, NULL);
   vkDestroyEvent(ctx->device, host_event, NULL);
   printf("vk_sync: events: OK\n");
}

/* ---- (d) queries -------------------------------------------------------- */

#define QUERY_FB_SIZE 64

struct quad_push {
   float rect[4];
   float color[4];
};

/* Rectangle in pixels of the 64x64 attachment -> clip space. */
static struct quad_push
quad(float x0, float y0, float x1, float y1)
{
   const float s = 2.0f / QUERY_FB_SIZE;

   return (struct quad_push){
      .rect = { x0 * s - 1, y0 * s - 1, x1 * s - 1, y1 * s - 1 },
      .color = { 1, 0.5f, 0.25f, 1 },
   };
}

static void
test_queries(const struct vkt_context *ctx)
{
   /* Occlusion queries and the samples each one must count exactly. */
   static const struct {
      float x0, y0, x1, y1;
      bool draw;
      uint64_t samples;
   } cases[] = {
      { 0, 0, 64, 64, true, 4096 },     /* full screen */
      { 0, 0, 32, 64, true, 2048 },     /* left half */
      { 0, 0, 0, 0, false, 0 },         /* no draw at all */
      { 8, 40, 24, 48, true, 128 },     /* 16x8 */
      { 80, 0, 96, 64, true, 0 },       /* off screen */
   };
   const uint32_t nq = VKT_ARRAY_SIZE(cases);

   /* Colour target, render pass, framebuffer. */
   struct vkt_color_target target;
   vkt_color_target_init(ctx, QUERY_FB_SIZE, &target);

   /* Pipeline: quad.vert + solid.frag, rectangle and colour pushed. */
   const VkPushConstantRange push_range = {
      VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
      sizeof(struct quad_push)
   };
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &push_range,
   };
   VkPipelineLayout layout;
   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &layout));
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
      .layout = layout,
      .render_pass = target.render_pass,
   };
   VkPipeline pipeline = vkt_graphics_pipeline(ctx, &g);
   vkDestroyShaderModule(ctx->device, vs, NULL);
   vkDestroyShaderModule(ctx->device, fs, NULL);

   /* Query pools and the buffer for vkCmdCopyQueryPoolResults. */
   const VkQueryPoolCreateInfo occ_info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_OCCLUSION,
      .queryCount = nq,
   };
   VkQueryPool occ_pool;
   VKT_CHECK(vkCreateQueryPool(ctx->device, &occ_info, NULL, &occ_pool));
   const VkQueryPoolCreateInfo ts_info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 2,
   };
   VkQueryPool ts_pool;
   VKT_CHECK(vkCreateQueryPool(ctx->device, &ts_info, NULL, &ts_pool));
   struct vkt_buffer results;
   vkt_buffer_create(ctx, 4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                     &results);
   memset(results.map, 0xff, results.size);
   vkt_buffer_flush(ctx, &results);

   const bool timestamps = ctx->timestamp_valid_bits > 0;
   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   vkCmdResetQueryPool(cmd, occ_pool, 0, nq);
   vkCmdResetQueryPool(cmd, ts_pool, 0, 2);
   if (timestamps)
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, ts_pool, 0);
   const VkClearValue clear = { .color = { .float32 = { 0, 0, 0, 1 } } };
   const VkRenderPassBeginInfo rp_begin = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
      .renderPass = target.render_pass,
      .framebuffer = target.framebuffer,
      .renderArea = { { 0, 0 }, { QUERY_FB_SIZE, QUERY_FB_SIZE } },
      .clearValueCount = 1,
      .pClearValues = &clear,
   };
   vkCmdBeginRenderPass(cmd, &rp_begin, VK_SUBPASS_CONTENTS_INLINE);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   const VkViewport viewport = { 0, 0, QUERY_FB_SIZE, QUERY_FB_SIZE, 0, 1 };
   const VkRect2D scissor = { { 0, 0 }, { QUERY_FB_SIZE, QUERY_FB_SIZE } };
   vkCmdSetViewport(cmd, 0, 1, &viewport);
   vkCmdSetScissor(cmd, 0, 1, &scissor);
   for (uint32_t q = 0; q < nq; q++) {
      vkCmdBeginQuery(cmd, occ_pool, q, VK_QUERY_CONTROL_PRECISE_BIT);
      if (cases[q].draw) {
         struct quad_push p = quad(cases[q].x0, cases[q].y0, cases[q].x1,
                                   cases[q].y1);
         vkCmdPushConstants(cmd, layout, push_range.stageFlags, 0, sizeof(p),
                            &p);
         vkCmdDraw(cmd, 6, 1, 0, 0);
      }
      vkCmdEndQuery(cmd, occ_pool, q);
   }
   vkCmdEndRenderPass(cmd);
   if (timestamps)
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ts_pool,
                          1);
   /* Values at 0, values + availability at 1024. */
   vkCmdCopyQueryPoolResults(cmd, occ_pool, 0, nq, results.buffer, 0,
                             sizeof(uint64_t),
                             VK_QUERY_RESULT_64_BIT |
                                VK_QUERY_RESULT_WAIT_BIT);
   vkCmdCopyQueryPoolResults(cmd, occ_pool, 0, nq, results.buffer, 1024,
                             2 * sizeof(uint64_t),
                             VK_QUERY_RESULT_64_BIT |
                                VK_QUERY_RESULT_WAIT_BIT |
                                VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
   const VkMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                        NULL);
   vkt_cmd_submit_wait(ctx, cmd);
   vkt_buffer_invalidate(ctx, &results);

   uint64_t values[VKT_ARRAY_SIZE(cases)];
   uint64_t with_avail[VKT_ARRAY_SIZE(cases)][2];
   uint32_t values32[VKT_ARRAY_SIZE(cases)];
   VKT_CHECK(vkGetQueryPoolResults(ctx->device, occ_pool, 0, nq,
                                   sizeof(values), values, sizeof(values[0]),
                                   VK_QUERY_RESULT_64_BIT |
                                      VK_QUERY_RESULT_WAIT_BIT));
   VKT_CHECK(vkGetQueryPoolResults(ctx->device, occ_pool, 0, nq,
                                   sizeof(with_avail), with_avail,
                                   sizeof(with_avail[0]),
                                   VK_QUERY_RESULT_64_BIT |
                                      VK_QUERY_RESULT_WITH_AVAILABILITY_BIT));
   VKT_CHECK(vkGetQueryPoolResults(ctx->device, occ_pool, 0, nq,
                                   sizeof(values32), values32,
                                   sizeof(values32[0]),
                                   VK_QUERY_RESULT_WAIT_BIT));
   const uint64_t *copied = results.map;
   const uint64_t *copied_avail =
      (const uint64_t *)((const uint8_t *)results.map + 1024);

   for (uint32_t q = 0; q < nq; q++) {
      uint64_t want = cases[q].samples;

      printf("vk_sync: queries: occlusion %u: %llu samples (expected %llu)\n",
             q, (unsigned long long)values[q], (unsigned long long)want);
      if (values[q] != want)
         vkt_fail("occlusion query %u: vkGetQueryPoolResults gave %llu, "
                  "expected %llu", q, (unsigned long long)values[q],
                  (unsigned long long)want);
      if (with_avail[q][0] != want || with_avail[q][1] != 1)
         vkt_fail("occlusion query %u with availability: %llu/%llu, "
                  "expected %llu/1", q,
                  (unsigned long long)with_avail[q][0],
                  (unsigned long long)with_avail[q][1],
                  (unsigned long long)want);
      if (values32[q] != want)
         vkt_fail("occlusion query %u (32-bit): %u, expected %llu", q,
                  values32[q], (unsigned long long)want);
      if (copied[q] != want)
         vkt_fail("occlusion query %u: vkCmdCopyQueryPoolResults gave "
                  "%llu, expected %llu", q, (unsigned long long)copied[q],
                  (unsigned long long)want);
      if (copied_avail[2 * q] != want || copied_avail[2 * q + 1] != 1)
         vkt_fail("occlusion query %u: vkCmdCopyQueryPoolResults with "
                  "availability gave %llu/%llu, expected %llu/1", q,
                  (unsigned long long)copied_avail[2 * q],
                  (unsigned long long)copied_avail[2 * q + 1],
                  (unsigned long long)want);
   }
   if (copied[nq] != UINT64_MAX)
      vkt_fail("vkCmdCopyQueryPoolResults wrote past its last query");

   /* A host reset of queries 1 and 2: the others keep their results, those
    * two are unavailable and their values not written. */
   vkResetQueryPool(ctx->device, occ_pool, 1, 2);
   for (int round = 0; round < 2; round++) {
      memset(with_avail, 0xa5, sizeof(with_avail));
      VKT_EXPECT(vkGetQueryPoolResults(ctx->device, occ_pool, 0, nq, sizeof(with_avail),
                                       with_avail, sizeof(with_avail[0]),
                                       VK_QUERY_RESULT_64_BIT |
                                          VK_QUERY_RESULT_WITH_AVAILABILITY_BIT),
                 VK_NOT_READY);
      for (uint32_t q = 0; q < nq; q++) {
         bool reset = q == 1 || q == 2;
         if (with_avail[q][1] != (reset ? 0 : 1) ||
             with_avail[q][0] != (reset ? 0xa5a5a5a5a5a5a5a5ull : cases[q].samples))
            vkt_fail("occlusion query %u after a host reset of 1 and 2 (read %d): %llx/%llu",
                     q, round, (unsigned long long)with_avail[q][0],
                     (unsigned long long)with_avail[q][1]);
      }
   }

   if (timestamps) {
      uint64_t ts[2];
      uint64_t mask = ctx->timestamp_valid_bits >= 64
                         ? UINT64_MAX
                         : (1ull << ctx->timestamp_valid_bits) - 1;

      VKT_CHECK(vkGetQueryPoolResults(ctx->device, ts_pool, 0, 2, sizeof(ts),
                                      ts, sizeof(ts[0]),
                                      VK_QUERY_RESULT_64_BIT |
                                         VK_QUERY_RESULT_WAIT_BIT));
      ts[0] &= mask;
      ts[1] &= mask;
      printf("vk_sync: queries: timestamps %llu -> %llu (%.3f us)\n",
             (unsigned long long)ts[0], (unsigned long long)ts[1],
             (double)(ts[1] - ts[0]) * ctx->props.limits.timestampPeriod /
                1e3);
      if (ts[1] < ts[0])
         vkt_fail("second timestamp %llu is before the first %llu",
                  (unsigned long long)ts[1], (unsigned long long)ts[0]);
   } else {
      printf("vk_sync: queries: queue has no timestamps, skipped\n");
   }

   vkt_buffer_destroy(ctx, &results);
   vkDestroyQueryPool(ctx->device, ts_pool, NULL);
   vkDestroyQueryPool(ctx->device, occ_pool, NULL);
   vkDestroyPipeline(ctx->device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx->device, layout, NULL);
   vkt_color_target_finish(ctx, &target);
   printf("vk_sync: queries: OK\n");
}

int
main(int argc, char **argv)
{
   static const struct {
      const char *name;
      void (*run)(const struct vkt_context *ctx);
   } tests[] = {
      { "timeline", test_timeline },
      { "fences", test_fences },
      { "events", test_events },
      { "queries", test_queries },
   };
   const char *device_name = NULL, *only = NULL;
   struct vkt_context ctx;

   vkt_set_prog("vk_sync");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
         only = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_sync [--device NAME] "
                         "[--only timeline|fences|events|queries]\n");
         return 1;
      }
   }

   vkt_context_init(&ctx, "vk_sync", device_name,
                    VKT_FEATURE_TIMELINE_SEMAPHORE |
                       VKT_FEATURE_SYNCHRONIZATION2 |
                       VKT_FEATURE_OCCLUSION_PRECISE |
                       VKT_FEATURE_HOST_QUERY_RESET);

   bool ran = false;
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(tests); i++) {
      if (only && strcmp(only, tests[i].name))
         continue;
      tests[i].run(&ctx);
      ran = true;
   }
   if (!ran)
      vkt_fail("unknown test '%s'", only);

   vkt_context_finish(&ctx);
   printf("vk_sync: OK on '%s'\n", ctx.props.deviceName);
   return 0;
}
