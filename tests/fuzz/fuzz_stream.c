/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the worker's command decoder: each input is one
 * stream message, as a client's command ring delivers it, run by a fresh
 * context on the host driver (lavapipe, or GPUD_FUZZ_HOST_DRIVER's
 * manifest) exactly as a worker runs it -- decoding, checks, host calls,
 * replies -- then the context's teardown.  Whatever the input, the decoder
 * must answer or end the client, never crash, read out of bounds or leak.
 *
 * Seeds: streams the test suite records from real programs
 * (GPUD_RECORD_STREAMS=DIR in a worker's environment, tests/fuzz/README).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpud_call.h"
#include "gpud_client.h"
#include "gpud_stream.h"
#include "daemon_host.h"
#include "daemon_select.h"
#include "util_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct daemon_host host;
static struct daemon_status_page *page;

/* ---- the host, one submission at a time ----------------------------------
 *
 * A stream replayed without its application never waits where the
 * application waited (fences and semaphores are answered in the
 * application's process): it would destroy what the host is still
 * executing, which no host driver survives and which says nothing about
 * the decoder.  So each submission is finished before the next command
 * runs, and runs without its semaphore waits: nothing later in the stream
 * could signal them before the harness waits (and the teardown of a device
 * whose queue waits forever would never end). */
#define MAX_QUEUES 64
static PFN_vkGetInstanceProcAddr real_gipa;
static PFN_vkGetDeviceProcAddr real_gdpa;
static PFN_vkGetDeviceQueue real_get_queue;
static PFN_vkGetDeviceQueue2 real_get_queue2;
static PFN_vkQueueSubmit real_submit;
static PFN_vkQueueSubmit2 real_submit2;
static PFN_vkQueueBindSparse real_bind_sparse;
static PFN_vkCreateFence real_create_fence;
static PFN_vkDestroyFence real_destroy_fence;
static PFN_vkWaitForFences real_wait;
static struct {
   VkQueue queue;
   VkDevice device;
} queues[MAX_QUEUES];
static unsigned n_queues;

static void
note_queue(VkDevice device, VkQueue queue)
{
   for (unsigned i = 0; i < n_queues; i++) {
      if (queues[i].queue == queue) {
         queues[i].device = device;
         return;
      }
   }
   if (n_queues < MAX_QUEUES)
      queues[n_queues++] = (__typeof__(queues[0])){queue, device};
}

static void
finish(VkQueue queue)
{
   VkDevice device = VK_NULL_HANDLE;
   for (unsigned i = 0; i < n_queues; i++) {
      if (queues[i].queue == queue)
         device = queues[i].device;
   }
   const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   if (!device || real_create_fence(device, &info, NULL, &fence) != VK_SUCCESS)
      return;
   if (real_submit(queue, 0, NULL, fence) == VK_SUCCESS)
      real_wait(device, 1, &fence, VK_TRUE, 1000000000ull);
   real_destroy_fence(device, fence, NULL);
}

static VKAPI_ATTR void VKAPI_CALL
get_queue(VkDevice device, uint32_t family, uint32_t index, VkQueue *queue)
{
   real_get_queue(device, family, index, queue);
   note_queue(device, *queue);
}

static VKAPI_ATTR void VKAPI_CALL
get_queue2(VkDevice device, const VkDeviceQueueInfo2 *info, VkQueue *queue)
{
   real_get_queue2(device, info, queue);
   if (*queue)
      note_queue(device, *queue);
}

/* A submit-like call with its batches' semaphore waits taken out, then
 * finished. */
#define SUBMIT_WITHOUT_WAITS(fn, real, info_type, wait_count)                              \
   static VKAPI_ATTR VkResult VKAPI_CALL fn(VkQueue queue, uint32_t n, const info_type *infos, \
                                            VkFence fence)                                 \
   {                                                                                        \
      info_type *copy = n ? malloc(sizeof(*copy) * n) : NULL;                               \
      if (n && !copy)                                                                       \
         return VK_ERROR_OUT_OF_HOST_MEMORY;                                                \
      for (uint32_t i = 0; i < n; i++) {                                                    \
         copy[i] = infos[i];                                                                \
         copy[i].wait_count = 0;                                                            \
      }                                                                                     \
      VkResult r = real(queue, n, copy, fence);                                             \
      free(copy);                                                                           \
      if (r == VK_SUCCESS)                                                                  \
         finish(queue);                                                                     \
      return r;                                                                             \
   }

SUBMIT_WITHOUT_WAITS(submit, real_submit, VkSubmitInfo, waitSemaphoreCount)
SUBMIT_WITHOUT_WAITS(submit2, real_submit2, VkSubmitInfo2, waitSemaphoreInfoCount)
SUBMIT_WITHOUT_WAITS(bind_sparse, real_bind_sparse, VkBindSparseInfo, waitSemaphoreCount)

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
gdpa(VkDevice device, const char *name)
{
   PFN_vkVoidFunction f = real_gdpa(device, name);
   if (!f)
      return NULL;
#define HOOK(vk, real, mine)                                                              \
   if (!strcmp(name, vk)) {                                                                \
      real = (__typeof__(real))f;                                                         \
      return (PFN_vkVoidFunction)mine;                                                    \
   }
   if (!real_create_fence) {
      real_create_fence = (PFN_vkCreateFence)real_gdpa(device, "vkCreateFence");
      real_destroy_fence = (PFN_vkDestroyFence)real_gdpa(device, "vkDestroyFence");
      real_wait = (PFN_vkWaitForFences)real_gdpa(device, "vkWaitForFences");
      real_submit = (PFN_vkQueueSubmit)real_gdpa(device, "vkQueueSubmit");
   }
   HOOK("vkGetDeviceQueue", real_get_queue, get_queue)
   HOOK("vkGetDeviceQueue2", real_get_queue2, get_queue2)
   HOOK("vkQueueSubmit", real_submit, submit)
   HOOK("vkQueueSubmit2", real_submit2, submit2)
   HOOK("vkQueueSubmit2KHR", real_submit2, submit2)
   HOOK("vkQueueBindSparse", real_bind_sparse, bind_sparse)
#undef HOOK
   return f;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
gipa(VkInstance instance, const char *name)
{
   PFN_vkVoidFunction f = real_gipa(instance, name);
   if (f && !strcmp(name, "vkGetDeviceProcAddr")) {
      real_gdpa = (PFN_vkGetDeviceProcAddr)f;
      return (PFN_vkVoidFunction)gdpa;
   }
   return f;
}

static VkResult
reserve_memory(void *data, uint32_t heap, uint64_t bytes, struct gpud_memory_budget *budget)
{
   (void)data;
   (void)heap;
   if (budget)
      budget->n_heaps = 0;
   /* a budget, as the server keeps one */
   return bytes > (256ull << 20) ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

static void
release_memory(void *data, uint32_t heap, uint64_t bytes)
{
   (void)data;
   (void)heap;
   (void)bytes;
}

static void
fault(void *data, const char *reason)
{
   (void)data;
   (void)reason;
}

/* Every input ends a client with a logged reason: not worth a line each. */
static void
quiet(enum util_log_level level, const struct util_log_client *client, const char *message)
{
   (void)level;
   (void)client;
   (void)message;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
   (void)argc;
   (void)argv;
   if (!getenv("GPUD_FUZZ_LOG"))
      util_log_set_sink(quiet);
   /* every command on the decoding thread, as inputs replay the same */
   setenv("GPUD_COMPILE_THREADS", "0", 1);
   /* the daemon's embedded default (lavapipe, wherever the loader finds it) */
   char *manifest = getenv("GPUD_FUZZ_HOST_DRIVER") ? strdup(getenv("GPUD_FUZZ_HOST_DRIVER"))
                                                    : daemon_host_lavapipe_manifest();
   static const struct daemon_selector first = {.by = DAEMON_SELECT_FIRST};
   if (!manifest || daemon_host_load(&host, manifest, &first, NULL) < 0)
      abort();
   free(manifest);
   real_gipa = host.get_instance_proc_addr;
   host.get_instance_proc_addr = gipa;
   /* a page, aligned as the worker's mapping is */
   page = aligned_alloc(DAEMON_STATUS_PAGE_SIZE, DAEMON_STATUS_PAGE_SIZE);
   if (!page)
      abort();
   memset(page, 0, DAEMON_STATUS_PAGE_SIZE);
   return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   int sv[2];
   if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
      abort();
   const struct gpud_context_info info = {
      .id = 1,
      .pid = getpid(),
      .uid = getuid(),
      .name = "fuzz",
      .max_objects = 4096,
      .send_timeout_ms = 0, /* nobody reads the replies: the first that finds the
                               socket full ends the client */
      .log_burst = 1,
      .log_per_second = 1,
   };
   const struct gpud_context_ops ops = {
      .reserve_memory = reserve_memory,
      .release_memory = release_memory,
      .fault = fault,
   };
   struct gpud_context *ctx;
   if (gpud_client_create(&info, &host, &ops, page, sv[1], &ctx) < 0)
      abort();
   /* the ring hands the decoder a private copy */
   uint8_t *copy = malloc(size ? size : 1);
   if (!copy)
      abort();
   memcpy(copy, data, size);
   gpud_stream_process(ctx, copy, size, NULL, 0);
   free(copy);
   gpud_client_destroy(ctx);
   close(sv[0]);
   return 0;
}
