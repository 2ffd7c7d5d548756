/* SPDX-License-Identifier: MIT */
/*
 * vk_inject: a Vulkan application that does what the test tells it, one line
 * on stdin at a time, and prints what it saw, so the service test can check
 * the effect of `gpudctl inject` (and of nothing injected) from outside:
 *
 *   alloc N    N allocations of 64 KiB (each freed at once): prints
 *              "alloc RESULT RESULT ..." (VkResult names)
 *   fence      a small copy submitted with a fence, then vkWaitForFences:
 *              prints "fence RESULT MS" (the time from submit to wake-up)
 *   poll       the same, polling vkGetFenceStatus every 1 ms: "poll RESULT MS"
 *   work MS    submits copies back to back for MS milliseconds (a busy queue)
 *              and prints "work RESULT SUBMITS"
 *   idle       vkDeviceWaitIdle: "idle RESULT"
 *   status N   N vkGetFenceStatus and N/10 vkWaitForFences (timeouts 0 and
 *              1 s) on the fence "fence" signalled: "status RESULT" (the
 *              first that was not VK_SUCCESS, else VK_SUCCESS)
 *   threads N  N threads (at most 8) each reset a fence of their own, submit
 *              an empty batch with it and wait for it: "threads RESULT..."
 *   settled N  N times: a copy submitted with the fence, vkQueueWaitIdle
 *              (or vkDeviceWaitIdle every other time), then vkGetFenceStatus
 *              at once: "settled RESULT UNSIGNALLED" (how many times the
 *              fence was not signalled after the idle wait said done)
 *   timeline N an empty batch signals the timeline semaphore's next value,
 *              vkWaitSemaphores waits for it, N vkGetSemaphoreCounterValue
 *              read it, vkSignalSemaphore signals the one after and N more
 *              reads see that: "timeline RESULT VALUE"
 *   events N   a copy that then sets the event, submitted with the fence; 4
 *              threads wait for the fence and read the event N times
 *              (set), the host resets it and they read it N times, the host
 *              sets it (N reads), a submission resets it (the threads wait
 *              for its fence, N reads): "events RESULT" (VK_ERROR_UNKNOWN:
 *              a read saw the wrong state)
 *   queries N  a submission resets 4 timestamp queries and writes them (the
 *              fence signals it); 4 threads wait for the fence and read the
 *              4 results with availability N times (all available, the same
 *              each time, in order); a submission resets them and the
 *              threads read them N times (none available):
 *              "queries RESULT" (VK_ERROR_UNKNOWN: a read saw wrong results)
 *   requirements N  N vkGetDeviceBufferMemoryRequirements of one create
 *              info and of a second, each compared with a buffer created
 *              with it: "requirements RESULT" (VK_ERROR_UNKNOWN: they differ)
 *   block N    N threads wait for fences nothing will signal, with no time
 *              limit; prints "blocked" once they wait, then "block
 *              RESULT..." when they return (the test kills the daemon)
 *   hold N     allocates N MiB and keeps it: "hold RESULT"
 *   release    frees what hold allocated: "release"
 *   quit       exits 0
 *
 * It prints "READY" once its device exists.  Nothing it sees is fatal: a
 * lost device is a result to print.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkt_common.h"

struct app {
   struct vkt_context ctx;
   struct vkt_buffer src, dst;
   VkCommandBuffer cmd;
   VkFence fence;
   VkDeviceMemory held;
   VkFence thread_fences[8];
   VkSemaphore timeline;
   uint64_t timeline_value;
   VkEvent event;
   VkCommandBuffer event_cmd[2]; /* copy then set the event; reset it */
   VkQueryPool timestamps;
   VkCommandBuffer query_cmd[2]; /* reset and write the 4 queries; reset them */
   pthread_mutex_t queue_mutex; /* submits from several threads */
};

struct waiter {
   struct app *a;
   VkFence fence;
   bool submit;
   VkResult result;
};

static void
record(struct app *a)
{
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VKT_CHECK(vkBeginCommandBuffer(a->cmd, &begin));
   const VkBufferCopy copy = {.size = a->src.size};
   vkCmdCopyBuffer(a->cmd, a->src.buffer, a->dst.buffer, 1, &copy);
   VKT_CHECK(vkEndCommandBuffer(a->cmd));
}

static VkResult
submit(struct app *a, VkFence fence)
{
   const VkSubmitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &a->cmd,
   };
   return vkQueueSubmit(a->ctx.queue, 1, &info, fence);
}

static void
do_alloc(struct app *a, unsigned n)
{
   printf("alloc");
   for (unsigned i = 0; i < n; i++) {
      const VkMemoryAllocateInfo info = {
         .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
         .allocationSize = 64 * 1024,
         .memoryTypeIndex = 0,
      };
      VkDeviceMemory mem = VK_NULL_HANDLE;
      VkResult r = vkAllocateMemory(a->ctx.device, &info, NULL, &mem);
      printf(" %s", vkt_result_name(r));
      if (r == VK_SUCCESS)
         vkFreeMemory(a->ctx.device, mem, NULL);
   }
   printf("\n");
}

static void
do_fence(struct app *a, bool poll)
{
   VkResult r = vkResetFences(a->ctx.device, 1, &a->fence);
   uint64_t start = vkt_now_ns();
   if (r == VK_SUCCESS)
      r = submit(a, a->fence);
   if (r == VK_SUCCESS && !poll) {
      r = vkWaitForFences(a->ctx.device, 1, &a->fence, VK_TRUE, 30ull * 1000 * 1000 * 1000);
   } else if (r == VK_SUCCESS) {
      while ((r = vkGetFenceStatus(a->ctx.device, a->fence)) == VK_NOT_READY &&
             vkt_now_ns() - start < 30ull * 1000 * 1000 * 1000) {
         const struct timespec ms = {.tv_nsec = 1000000};
         nanosleep(&ms, NULL);
      }
   }
   printf("%s %s %.1f\n", poll ? "poll" : "fence", vkt_result_name(r),
          (double)(vkt_now_ns() - start) / 1e6);
}

static void
do_status(struct app *a, unsigned n)
{
   VkResult r = VK_SUCCESS;
   for (unsigned i = 0; i < n && r == VK_SUCCESS; i++)
      r = vkGetFenceStatus(a->ctx.device, a->fence);
   for (unsigned i = 0; i < n / 10 && r == VK_SUCCESS; i++)
      r = vkWaitForFences(a->ctx.device, 1, &a->fence, VK_TRUE, i % 2 ? 0 : 1000000000ull);
   printf("status %s\n", vkt_result_name(r));
}

static void
do_settled(struct app *a, unsigned n)
{
   VkResult r = VK_SUCCESS;
   unsigned unsignalled = 0;
   for (unsigned i = 0; i < n && r == VK_SUCCESS; i++) {
      r = vkResetFences(a->ctx.device, 1, &a->fence);
      if (r == VK_SUCCESS)
         r = submit(a, a->fence);
      if (r == VK_SUCCESS)
         r = i % 2 ? vkDeviceWaitIdle(a->ctx.device) : vkQueueWaitIdle(a->ctx.queue);
      if (r == VK_SUCCESS) {
         VkResult s = vkGetFenceStatus(a->ctx.device, a->fence);
         if (s == VK_NOT_READY)
            unsignalled++;
         else if (s != VK_SUCCESS)
            r = s;
      }
   }
   printf("settled %s %u\n", vkt_result_name(r), unsignalled);
}

static VkResult
read_counter(struct app *a, unsigned n, uint64_t want)
{
   VkResult r = VK_SUCCESS;
   for (unsigned i = 0; i < n && r == VK_SUCCESS; i++) {
      uint64_t v = 0;
      r = vkGetSemaphoreCounterValue(a->ctx.device, a->timeline, &v);
      if (r == VK_SUCCESS && v != want)
         r = VK_ERROR_UNKNOWN;
   }
   return r;
}

static void
do_timeline(struct app *a, unsigned n)
{
   uint64_t next = a->timeline_value + 1;
   const VkTimelineSemaphoreSubmitInfo tl = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &next,
   };
   const VkSubmitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &tl,
      .signalSemaphoreCount = 1,
      .pSignalSemaphores = &a->timeline,
   };
   VkResult r = vkQueueSubmit(a->ctx.queue, 1, &info, VK_NULL_HANDLE);
   const VkSemaphoreWaitInfo wait = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &a->timeline,
      .pValues = &next,
   };
   if (r == VK_SUCCESS)
      r = vkWaitSemaphores(a->ctx.device, &wait, 30ull * 1000 * 1000 * 1000);
   if (r == VK_SUCCESS)
      r = read_counter(a, n, next);
   const VkSemaphoreSignalInfo signal = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
      .semaphore = a->timeline,
      .value = next + 1,
   };
   if (r == VK_SUCCESS)
      r = vkSignalSemaphore(a->ctx.device, &signal);
   if (r == VK_SUCCESS)
      r = read_counter(a, n, next + 1);
   if (r == VK_SUCCESS)
      a->timeline_value = next + 1;
   printf("timeline %s %llu\n", vkt_result_name(r), (unsigned long long)a->timeline_value);
}

static VkResult
submit_cmd(struct app *a, VkCommandBuffer cmd)
{
   VkResult r = vkResetFences(a->ctx.device, 1, &a->fence);
   const VkSubmitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   return r == VK_SUCCESS ? vkQueueSubmit(a->ctx.queue, 1, &info, a->fence) : r;
}

/* A thread that waits for the fence, then reads an event (expecting
 * expect) or the timestamp queries (available or not) n times. */
struct reader {
   struct app *a;
   unsigned n;
   VkResult expect;
   bool available;
   VkResult result;
};

/* 4 readers at once; the first failure. */
static VkResult
run_readers(struct app *a, void *(*fn)(void *), unsigned n, VkResult expect, bool available)
{
   struct reader r[4];
   pthread_t t[4];
   for (unsigned i = 0; i < 4; i++) {
      r[i] = (struct reader){.a = a, .n = n, .expect = expect, .available = available};
      if (pthread_create(&t[i], NULL, fn, &r[i]) != 0)
         vkt_fail("pthread_create");
   }
   VkResult result = VK_SUCCESS;
   for (unsigned i = 0; i < 4; i++) {
      pthread_join(t[i], NULL);
      if (r[i].result != VK_SUCCESS && result == VK_SUCCESS)
         result = r[i].result;
   }
   return result;
}

static void *
event_reader_thread(void *data)
{
   struct reader *r = data;
   r->result = vkWaitForFences(r->a->ctx.device, 1, &r->a->fence, VK_TRUE,
                               30ull * 1000 * 1000 * 1000);
   for (unsigned i = 0; i < r->n && r->result == VK_SUCCESS; i++) {
      VkResult st = vkGetEventStatus(r->a->ctx.device, r->a->event);
      if (st != r->expect)
         r->result = st < 0 ? st : VK_ERROR_UNKNOWN;
   }
   return NULL;
}

static void
do_events(struct app *a, unsigned n)
{
   VkResult r = submit_cmd(a, a->event_cmd[0]);
   if (r == VK_SUCCESS)
      r = run_readers(a, event_reader_thread, n, VK_EVENT_SET, false);
   if (r == VK_SUCCESS)
      r = vkResetEvent(a->ctx.device, a->event);
   if (r == VK_SUCCESS)
      r = run_readers(a, event_reader_thread, n, VK_EVENT_RESET, false);
   if (r == VK_SUCCESS)
      r = vkSetEvent(a->ctx.device, a->event);
   if (r == VK_SUCCESS)
      r = run_readers(a, event_reader_thread, n, VK_EVENT_SET, false);
   if (r == VK_SUCCESS)
      r = submit_cmd(a, a->event_cmd[1]);
   if (r == VK_SUCCESS)
      r = run_readers(a, event_reader_thread, n, VK_EVENT_RESET, false);
   printf("events %s\n", vkt_result_name(r));
}

static void
record_events(struct app *a)
{
   const VkCommandBufferAllocateInfo cb = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = a->ctx.cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 2,
   };
   VKT_CHECK(vkAllocateCommandBuffers(a->ctx.device, &cb, a->event_cmd));
   const VkEventCreateInfo ei = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
   VKT_CHECK(vkCreateEvent(a->ctx.device, &ei, NULL, &a->event));
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VKT_CHECK(vkBeginCommandBuffer(a->event_cmd[0], &begin));
   const VkBufferCopy copy = {.size = a->src.size};
   vkCmdCopyBuffer(a->event_cmd[0], a->src.buffer, a->dst.buffer, 1, &copy);
   vkCmdSetEvent(a->event_cmd[0], a->event, VK_PIPELINE_STAGE_TRANSFER_BIT);
   VKT_CHECK(vkEndCommandBuffer(a->event_cmd[0]));
   VKT_CHECK(vkBeginCommandBuffer(a->event_cmd[1], &begin));
   vkCmdResetEvent(a->event_cmd[1], a->event, VK_PIPELINE_STAGE_TRANSFER_BIT);
   VKT_CHECK(vkEndCommandBuffer(a->event_cmd[1]));
}

static void *
query_reader_thread(void *data)
{
   struct reader *r = data;
   r->result = vkWaitForFences(r->a->ctx.device, 1, &r->a->fence, VK_TRUE,
                               30ull * 1000 * 1000 * 1000);
   uint64_t first[8] = {0};
   for (unsigned i = 0; i < r->n && r->result == VK_SUCCESS; i++) {
      uint64_t res[8];
      memset(res, 0xa5, sizeof(res));
      VkResult st = vkGetQueryPoolResults(r->a->ctx.device, r->a->timestamps, 0, 4, sizeof(res),
                                          res, 2 * sizeof(uint64_t),
                                          VK_QUERY_RESULT_64_BIT |
                                             VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
      if (st < 0) {
         r->result = st;
         break;
      }
      bool ok = st == (r->available ? VK_SUCCESS : VK_NOT_READY);
      for (unsigned q = 0; q < 4; q++) {
         ok = ok && res[2 * q + 1] == (r->available ? 1 : 0);
         if (r->available && q > 0)
            ok = ok && res[2 * q] >= res[2 * q - 2];
         if (!r->available)
            ok = ok && res[2 * q] == 0xa5a5a5a5a5a5a5a5ull; /* not written */
      }
      if (r->available && i == 0)
         memcpy(first, res, sizeof(first));
      if (r->available && memcmp(first, res, sizeof(first)))
         ok = false;
      if (!ok)
         r->result = VK_ERROR_UNKNOWN;
   }
   return NULL;
}

static void
do_queries(struct app *a, unsigned n)
{
   VkResult r = submit_cmd(a, a->query_cmd[0]);
   if (r == VK_SUCCESS)
      r = run_readers(a, query_reader_thread, n, VK_SUCCESS, true);
   if (r == VK_SUCCESS)
      r = submit_cmd(a, a->query_cmd[1]);
   if (r == VK_SUCCESS)
      r = run_readers(a, query_reader_thread, n, VK_NOT_READY, false);
   printf("queries %s\n", vkt_result_name(r));
}

static void
record_queries(struct app *a)
{
   const VkCommandBufferAllocateInfo cb = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = a->ctx.cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 2,
   };
   VKT_CHECK(vkAllocateCommandBuffers(a->ctx.device, &cb, a->query_cmd));
   const VkQueryPoolCreateInfo qi = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 4,
   };
   VKT_CHECK(vkCreateQueryPool(a->ctx.device, &qi, NULL, &a->timestamps));
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VKT_CHECK(vkBeginCommandBuffer(a->query_cmd[0], &begin));
   vkCmdResetQueryPool(a->query_cmd[0], a->timestamps, 0, 4);
   for (uint32_t q = 0; q < 4; q++)
      vkCmdWriteTimestamp(a->query_cmd[0], VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, a->timestamps, q);
   VKT_CHECK(vkEndCommandBuffer(a->query_cmd[0]));
   VKT_CHECK(vkBeginCommandBuffer(a->query_cmd[1], &begin));
   vkCmdResetQueryPool(a->query_cmd[1], a->timestamps, 0, 4);
   VKT_CHECK(vkEndCommandBuffer(a->query_cmd[1]));
}

static VkResult
check_requirements(struct app *a, const VkBufferCreateInfo *info)
{
   VkBuffer buffer;
   VkResult r = vkCreateBuffer(a->ctx.device, info, NULL, &buffer);
   if (r != VK_SUCCESS)
      return r;
   VkMemoryRequirements direct;
   vkGetBufferMemoryRequirements(a->ctx.device, buffer, &direct);
   vkDestroyBuffer(a->ctx.device, buffer, NULL);
   const VkDeviceBufferMemoryRequirements query = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_BUFFER_MEMORY_REQUIREMENTS,
      .pCreateInfo = info,
   };
   VkMemoryRequirements2 reqs = {.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
   vkGetDeviceBufferMemoryRequirements(a->ctx.device, &query, &reqs);
   const VkMemoryRequirements *m = &reqs.memoryRequirements;
   if (m->size == direct.size && m->alignment == direct.alignment &&
       m->memoryTypeBits == direct.memoryTypeBits)
      return VK_SUCCESS;
   fprintf(stderr, "vk_inject: requirements of a buffer: size %llu alignment %llu types 0x%x; "
           "of its create info: size %llu alignment %llu types 0x%x\n",
           (unsigned long long)direct.size, (unsigned long long)direct.alignment,
           direct.memoryTypeBits, (unsigned long long)reqs.memoryRequirements.size,
           (unsigned long long)reqs.memoryRequirements.alignment,
           reqs.memoryRequirements.memoryTypeBits);
   return VK_ERROR_UNKNOWN;
}

static void
do_requirements(struct app *a, unsigned n)
{
   VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = 65536 + 3,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
   };
   VkResult r = check_requirements(a, &info);
   const VkDeviceBufferMemoryRequirements query = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_BUFFER_MEMORY_REQUIREMENTS,
      .pCreateInfo = &info,
   };
   for (unsigned i = 0; i < n && r == VK_SUCCESS; i++) {
      VkMemoryRequirements2 reqs = {.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
      vkGetDeviceBufferMemoryRequirements(a->ctx.device, &query, &reqs);
      if (reqs.memoryRequirements.size < info.size)
         r = VK_ERROR_UNKNOWN;
   }
   info.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
   info.size = 12345;
   if (r == VK_SUCCESS)
      r = check_requirements(a, &info);
   printf("requirements %s\n", vkt_result_name(r));
}

static void *
waiter_thread(void *data)
{
   struct waiter *w = data;
   VkResult r = vkResetFences(w->a->ctx.device, 1, &w->fence);
   if (w->submit) {
      pthread_mutex_lock(&w->a->queue_mutex);
      if (r == VK_SUCCESS)
         r = vkQueueSubmit(w->a->ctx.queue, 0, NULL, w->fence);
      pthread_mutex_unlock(&w->a->queue_mutex);
   }
   if (r == VK_SUCCESS)
      r = vkWaitForFences(w->a->ctx.device, 1, &w->fence, VK_TRUE,
                          w->submit ? 30ull * 1000 * 1000 * 1000 : UINT64_MAX);
   w->result = r;
   return NULL;
}

/* N threads waiting at once: on fences they submit, or on fences nothing
 * signals. */
static void
do_threads(struct app *a, unsigned n, bool submit)
{
   struct waiter w[8];
   pthread_t t[8];
   n = n > 8 ? 8 : n;
   for (unsigned i = 0; i < n; i++) {
      w[i] = (struct waiter){.a = a, .fence = a->thread_fences[i], .submit = submit};
      if (pthread_create(&t[i], NULL, waiter_thread, &w[i]) != 0)
         vkt_fail("pthread_create");
   }
   if (!submit) {
      const struct timespec wait = {.tv_nsec = 300000000};
      nanosleep(&wait, NULL);
      printf("blocked\n");
   }
   for (unsigned i = 0; i < n; i++)
      pthread_join(t[i], NULL);
   printf("%s", submit ? "threads" : "block");
   for (unsigned i = 0; i < n; i++)
      printf(" %s", vkt_result_name(w[i].result));
   printf("\n");
}

static void
do_work(struct app *a, unsigned ms)
{
   uint64_t end = vkt_now_ns() + (uint64_t)ms * 1000000;
   unsigned n = 0;
   VkResult r = VK_SUCCESS;
   while (r == VK_SUCCESS && vkt_now_ns() < end) {
      r = vkResetFences(a->ctx.device, 1, &a->fence);
      if (r == VK_SUCCESS)
         r = submit(a, a->fence);
      if (r == VK_SUCCESS)
         r = vkWaitForFences(a->ctx.device, 1, &a->fence, VK_TRUE, 30ull * 1000 * 1000 * 1000);
      n += r == VK_SUCCESS;
   }
   printf("work %s %u\n", vkt_result_name(r), n);
}

int
main(int argc, char **argv)
{
   const char *device = NULL;
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc)
         device = argv[++i];
      else
         vkt_fail("usage: vk_inject [--device NAME] (commands on stdin)");
   }
   struct app a = {0};
   vkt_context_init(&a.ctx, "vk_inject", device, VKT_FEATURE_TIMELINE_SEMAPHORE);
   /* big enough that a copy takes a moment on a CPU */
   vkt_buffer_create(&a.ctx, 4u << 20, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &a.src);
   vkt_buffer_create(&a.ctx, 4u << 20, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &a.dst);
   const VkCommandBufferAllocateInfo cb = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = a.ctx.cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   VKT_CHECK(vkAllocateCommandBuffers(a.ctx.device, &cb, &a.cmd));
   record(&a);
   const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VKT_CHECK(vkCreateFence(a.ctx.device, &fi, NULL, &a.fence));
   for (unsigned i = 0; i < 8; i++)
      VKT_CHECK(vkCreateFence(a.ctx.device, &fi, NULL, &a.thread_fences[i]));
   pthread_mutex_init(&a.queue_mutex, NULL);
   const VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 0,
   };
   const VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                     .pNext = &type};
   VKT_CHECK(vkCreateSemaphore(a.ctx.device, &si, NULL, &a.timeline));
   record_events(&a);
   record_queries(&a);
   setvbuf(stdout, NULL, _IOLBF, 0);
   printf("READY\n");

   char line[128];
   while (fgets(line, sizeof(line), stdin)) {
      unsigned n = 0;
      if (sscanf(line, "alloc %u", &n) == 1 && n <= 1000)
         do_alloc(&a, n);
      else if (!strncmp(line, "fence", 5))
         do_fence(&a, false);
      else if (!strncmp(line, "poll", 4))
         do_fence(&a, true);
      else if (sscanf(line, "work %u", &n) == 1)
         do_work(&a, n);
      else if (sscanf(line, "hold %u", &n) == 1 && !a.held) {
         const VkMemoryAllocateInfo info = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            .allocationSize = (VkDeviceSize)n << 20,
            .memoryTypeIndex = 0,
         };
         printf("hold %s\n", vkt_result_name(vkAllocateMemory(a.ctx.device, &info, NULL,
                                                              &a.held)));
      } else if (!strncmp(line, "release", 7)) {
         vkFreeMemory(a.ctx.device, a.held, NULL);
         a.held = VK_NULL_HANDLE;
         printf("release\n");
      } else if (!strncmp(line, "idle", 4))
         printf("idle %s\n", vkt_result_name(vkDeviceWaitIdle(a.ctx.device)));
      else if (sscanf(line, "status %u", &n) == 1)
         do_status(&a, n);
      else if (sscanf(line, "threads %u", &n) == 1)
         do_threads(&a, n, true);
      else if (sscanf(line, "settled %u", &n) == 1)
         do_settled(&a, n);
      else if (sscanf(line, "timeline %u", &n) == 1)
         do_timeline(&a, n);
      else if (sscanf(line, "queries %u", &n) == 1)
         do_queries(&a, n);
      else if (sscanf(line, "events %u", &n) == 1)
         do_events(&a, n);
      else if (sscanf(line, "requirements %u", &n) == 1)
         do_requirements(&a, n);
      else if (sscanf(line, "block %u", &n) == 1)
         do_threads(&a, n, false);
      else if (!strncmp(line, "quit", 4))
         break;
      else
         printf("unknown command\n");
   }
   /* a lost device may still be destroyed */
   vkDeviceWaitIdle(a.ctx.device);
   vkDestroyFence(a.ctx.device, a.fence, NULL);
   for (unsigned i = 0; i < 8; i++)
      vkDestroyFence(a.ctx.device, a.thread_fences[i], NULL);
   vkDestroySemaphore(a.ctx.device, a.timeline, NULL);
   vkDestroyEvent(a.ctx.device, a.event, NULL);
   vkDestroyQueryPool(a.ctx.device, a.timestamps, NULL);
   vkt_buffer_destroy(&a.ctx, &a.src);
   vkt_buffer_destroy(&a.ctx, &a.dst);
   vkt_context_finish(&a.ctx);
   return 0;
}
