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
#include "gpud_host.h"
#include "util_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct gpud_host host;
static struct gpud_status_page *page;

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
   const char *manifest = getenv("GPUD_FUZZ_HOST_DRIVER");
   if (gpud_host_load(&host, manifest ? manifest : GPUD_LAVAPIPE_MANIFEST, NULL, NULL) < 0)
      abort();
   page = calloc(1, GPUD_STATUS_PAGE_SIZE);
   if (!page)
      abort();
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
   if (gpud_context_create(&info, &host, &ops, page, sv[1], &ctx) < 0)
      abort();
   /* the ring hands the decoder a private copy */
   uint8_t *copy = malloc(size ? size : 1);
   if (!copy)
      abort();
   memcpy(copy, data, size);
   gpud_call_process_stream(ctx, copy, size, NULL, 0);
   free(copy);
   gpud_context_destroy(ctx);
   close(sv[0]);
   return 0;
}
