/* SPDX-License-Identifier: MIT */
/*
 * The worker side of the server-worker channel, for both isolation modes.
 */
#include "gpud_worker.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "gpud_client.h"
#include "gpud_limits.h"
#include "util_memfd.h"
#include "util_thread.h"
#include "wire_control.h"

/* How long a worker whose client hung up lets its decoder finish before it
 * exits anyway (the decoder may be inside a host call that never returns). */
#define HANGUP_GRACE_MS 500

struct worker {
   int control_fd;
   bool said_goodbye; /* under mutex */
   pthread_mutex_t mutex; /* one request on the channel at a time */
   struct util_msg_reader reader;
   const struct gpud_host *host;
   struct gpud_status_page *status;
};

static int
send_message(struct worker *w, Gpud__WorkerMessage *m)
{
   return wire_worker_send(w->control_fd, m, NULL, 0);
}

/* Any thread: one message at a time on the channel (a reserve request
 * holds the lock until its reply is in). */
static void
send_locked(struct worker *w, Gpud__WorkerMessage *m)
{
   pthread_mutex_lock(&w->mutex);
   send_message(w, m);
   pthread_mutex_unlock(&w->mutex);
}

/* Receives the server's next message; NULL when the server is gone or sent
 * something malformed.  fds, if not NULL, get the message's fds. */
static Gpud__WorkerMessage *
receive_message(struct worker *w, int *fds, unsigned max_fds, unsigned *ret_n_fds)
{
   struct util_msg msg;
   if (util_msg_recv(w->control_fd, &w->reader, &msg) < 0)
      return NULL;
   unsigned n = 0;
   for (unsigned i = 0; i < msg.n_fds; i++) {
      if (fds && n < max_fds)
         fds[n++] = util_fd_move(&msg.fds[i]);
   }
   util_msg_close_fds(&msg);
   if (ret_n_fds)
      *ret_n_fds = n;
   Gpud__WorkerMessage *m =
      msg.type == UTIL_MSG_CONTROL ? wire_worker_unpack(msg.data, msg.size) : NULL;
   if (!m) {
      for (unsigned i = 0; i < n; i++)
         util_fd_close(&fds[i]);
   }
   return m;
}

static VkResult
reserve_memory(void *data, uint32_t heap, uint64_t bytes, struct gpud_memory_budget *budget)
{
   struct worker *w = data;
   Gpud__MemoryReserve req = GPUD__MEMORY_RESERVE__INIT;
   req.heap = heap;
   req.bytes = bytes;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_RESERVE;
   m.reserve = &req;
   VkResult result = VK_ERROR_OUT_OF_DEVICE_MEMORY;
   pthread_mutex_lock(&w->mutex);
   if (send_message(w, &m) == 0) {
      Gpud__WorkerMessage *reply = receive_message(w, NULL, 0, NULL);
      if (reply && reply->msg_case == GPUD__WORKER_MESSAGE__MSG_RESERVE_REPLY) {
         const Gpud__MemoryReserveReply *rr = reply->reserve_reply;
         result = (VkResult)rr->result;
         if (budget) {
            budget->n_heaps = (uint32_t)UTIL_MIN(UTIL_MIN(rr->n_heap_usage, rr->n_heap_budget),
                                                 (size_t)VK_MAX_MEMORY_HEAPS);
            for (uint32_t h = 0; h < budget->n_heaps; h++) {
               budget->usage[h] = rr->heap_usage[h];
               budget->budget[h] = rr->heap_budget[h];
            }
         }
      }
      wire_worker_free(reply);
   }
   pthread_mutex_unlock(&w->mutex);
   return result;
}

static void
release_memory(void *data, uint32_t heap, uint64_t bytes)
{
   struct worker *w = data;
   Gpud__MemoryRelease rel = GPUD__MEMORY_RELEASE__INIT;
   rel.heap = heap;
   rel.bytes = bytes;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_RELEASE;
   m.release = &rel;
   send_locked(w, &m);
}

static void
report_fault(void *data, const char *reason)
{
   struct worker *w = data;
   Gpud__WorkerFault f = GPUD__WORKER_FAULT__INIT;
   f.reason = (char *)reason;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_FAULT;
   m.fault = &f;
   send_locked(w, &m);
}

static int
send_ready(struct worker *w)
{
   const struct gpud_host *host = w->host;
   uint64_t sizes[VK_MAX_MEMORY_HEAPS];
   uint32_t flags[VK_MAX_MEMORY_HEAPS];
   uint32_t n = host->memory.memoryHeapCount;
   for (uint32_t i = 0; i < n && i < VK_MAX_MEMORY_HEAPS; i++) {
      sizes[i] = host->memory.memoryHeaps[i].size;
      flags[i] = host->memory.memoryHeaps[i].flags;
   }
   Gpud__WorkerReady ready = GPUD__WORKER_READY__INIT;
   ready.device_name = (char *)host->device_name;
   ready.device_uuid.data = (uint8_t *)host->device_uuid;
   ready.device_uuid.len = VK_UUID_SIZE;
   ready.host_driver = host->manifest;
   char pci[GPUD_PCI_TEXT] = "";
   if (host->has_pci)
      gpud_pci_format(&host->pci, pci);
   ready.pci_address = pci;
   ready.render_node = (char *)host->render_node;
   ready.heap_sizes = sizes;
   ready.n_heap_sizes = n;
   ready.heap_flags = flags;
   ready.n_heap_flags = n;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_READY;
   m.ready = &ready;
   return send_message(w, &m);
}

/* Once, from whichever thread ends the worker first; the other waits on
 * the lock until it has gone out, so neither exits before it is sent. */
static void
send_goodbye(struct worker *w, const char *reason, bool fault)
{
   Gpud__WorkerGoodbye bye = GPUD__WORKER_GOODBYE__INIT;
   bye.reason = (char *)(reason[0] ? reason : "disconnected");
   bye.fault = fault;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_GOODBYE;
   m.goodbye = &bye;
   pthread_mutex_lock(&w->mutex);
   if (!w->said_goodbye) {
      w->said_goodbye = true;
      send_message(w, &m);
   }
   pthread_mutex_unlock(&w->mutex);
}

/* Waits for the server to hand over a client; makes its context. */
static int
take_client(struct worker *w, struct gpud_context **ret_ctx)
{
   int fds[2] = {-1, -1};
   unsigned n_fds = 0;
   Gpud__WorkerMessage *m = receive_message(w, fds, 2, &n_fds);
   if (!m)
      return -ECONNRESET; /* the server let this spare go */
   int r = -EPROTO;
   if (m->msg_case != GPUD__WORKER_MESSAGE__MSG_ASSIGN || n_fds != 2)
      goto out;
   if (util_memfd_check(fds[1], GPUD_STATUS_PAGE_SIZE) < 0)
      goto out;
   void *page = mmap(NULL, GPUD_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
   if (page == MAP_FAILED) {
      r = -errno;
      goto out;
   }
   w->status = page;
   const Gpud__WorkerAssign *a = m->assign;
   struct gpud_context_info info = {
      .id = a->client_id,
      .pid = (pid_t)a->pid,
      .uid = (uid_t)a->uid,
      .max_objects = a->max_objects,
      .send_timeout_ms = a->send_timeout_ms,
      .log_burst = a->log_burst,
      .log_per_second = a->log_per_second,
      .replay_threads = a->replay_case == GPUD__WORKER_ASSIGN__REPLAY_REPLAY_THREADS
                           ? (int)UTIL_MIN(a->replay_threads, 64u) : -1,
   };
   snprintf(info.name, sizeof(info.name), "%s", a->name ? a->name : "");
   const struct gpud_context_ops ops = {
      .reserve_memory = reserve_memory,
      .release_memory = release_memory,
      .fault = report_fault,
      .data = w,
   };
   r = gpud_client_create(&info, w->host, &ops, w->status, util_fd_move(&fds[0]), ret_ctx);
out:
   util_fd_close(&fds[0]);
   util_fd_close(&fds[1]);
   wire_worker_free(m);
   return r;
}

static void
worker_init(struct worker *w, int control_fd, const struct gpud_host *host)
{
   memset(w, 0, sizeof(*w));
   w->control_fd = control_fd;
   w->host = host;
   pthread_mutex_init(&w->mutex, NULL);
   util_msg_reader_init(&w->reader, 1u << 20);
}

static void
worker_finish(struct worker *w)
{
   if (w->status)
      munmap(w->status, GPUD_STATUS_PAGE_SIZE);
   util_msg_reader_finish(&w->reader);
   pthread_mutex_destroy(&w->mutex);
   util_fd_close(&w->control_fd);
}

void
gpud_worker_thread_main(int control_fd, const struct gpud_host *host)
{
   struct worker w;
   worker_init(&w, control_fd, host);
   struct gpud_context *ctx = NULL;
   if (send_ready(&w) == 0 && take_client(&w, &ctx) == 0) {
      gpud_client_run(ctx);
      /* Release everything first: the server counts the client as gone
       * when the goodbye arrives. */
      char reason[sizeof(ctx->end_reason)];
      bool fault = ctx->fault;
      memcpy(reason, ctx->end_reason, sizeof(reason));
      gpud_client_destroy(ctx);
      send_goodbye(&w, reason, fault);
   }
   worker_finish(&w);
}

/* Process isolation: notices the client hanging up even while the decoder
 * is stuck in a host call (a queue waiting on a value nobody will signal),
 * so the worker, and everything the client held, is gone within a bounded
 * time. */
struct watcher {
   struct worker *w;
   struct gpud_context *ctx;
};

static void *
watch_hangup(void *data)
{
   struct watcher *wt = data;
   struct pollfd p = {.fd = wt->ctx->fd, .events = POLLRDHUP};
   while (poll(&p, 1, -1) < 0 && errno == EINTR)
      ;
   if (atomic_load(&wt->ctx->closing))
      return NULL; /* the decoder ended the context itself */
   /* The decoder reaches the end of the stream and exits unless it is
    * stuck; give it the chance to finish what the client sent. */
   struct timespec ts = {0, HANGUP_GRACE_MS * 1000000L};
   while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
      ;
   send_goodbye(wt->w, "disconnected while its worker was busy", false);
   _exit(0);
}

int
gpud_worker_process_main(const struct gpud_worker_options *opt)
{
   /* Started as /proc/self/exe: named for ps, top and perf. */
   prctl(PR_SET_NAME, "gpud-worker");
   /* Die with the server, whatever happens to it. */
   prctl(PR_SET_PDEATHSIG, SIGKILL);
   if (getppid() != opt->parent)
      return 1;
   /* Nothing but the control channel and the standard streams crosses exec
    * into a worker; make sure of it. */
   if (opt->control_fd > 3)
      close_range(3, (unsigned)opt->control_fd - 1, 0);
   close_range((unsigned)opt->control_fd + 1, ~0u, 0);
   /* Another process of the same user (another client's worker) cannot
    * read this one's memory or attach to it. */
   prctl(PR_SET_DUMPABLE, 0);

   /* The first worker picks the host driver when the server was not told
    * one (the server never loads a driver to look). */
   char *manifest = NULL;
   int r = opt->manifest ? ((manifest = strdup(opt->manifest)) ? 0 : -ENOMEM)
                         : gpud_host_default_manifest(opt->device, opt->sysfs_root, &manifest);
   static struct gpud_host host;
   if (r == 0)
      r = gpud_host_load(&host, manifest, opt->device, opt->sysfs_root);
   free(manifest);
   if (r < 0)
      return r == -ENODEV ? GPUD_EXIT_NO_DEVICE : 1;
   if (gpud_host_enable_validation(&host, opt->validate) < 0)
      return 1;
   host.spirv = opt->spirv;
   if (opt->sandbox && gpud_sandbox_enter() < 0)
      return 1;

   struct worker w;
   worker_init(&w, opt->control_fd, &host);
   struct gpud_context *ctx = NULL;
   if (send_ready(&w) < 0)
      _exit(1);
   r = take_client(&w, &ctx);
   if (r < 0)
      _exit(r == -ECONNRESET ? 0 : 1);
   static struct watcher watcher;
   watcher = (struct watcher){.w = &w, .ctx = ctx};
   util_thread_start_detached(watch_hangup, &watcher);
   gpud_client_run(ctx);
   /* The process's end releases everything the client held, whatever its
    * queues still wait on: no teardown that could hang. */
   send_goodbye(&w, ctx->end_reason, ctx->fault);
   _exit(0);
}
