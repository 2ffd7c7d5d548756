/* SPDX-License-Identifier: MIT */
/*
 * The worker side of the server-worker channel, for both isolation modes.
 *
 * A worker process outlives its server (process isolation, --restart-grace
 * above 0): when its control channel closes (the server stopped, crashed or
 * is being upgraded) it goes on serving its client, allocating within the
 * budget it was last given, and listens on the socket its server bound for
 * it in the server's private directory.  The next server connects there,
 * proves it knows the token this worker was handed with its client, and
 * the connection becomes the worker's control channel (it "adopts" the
 * worker: srv_adopt.c).  A worker nobody adopts within the grace period
 * ends, and its client's device is lost.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpud_become.h"
#include "gpud_client.h"
#include "gpud_sandbox.h"
#include "gpud_sched_worker.h"
#include "daemon_limits.h"
#include "util_fd.h"
#include "util_log.h"
#include "util_memfd.h"
#include "util_thread.h"
#include "util_time.h"
#include "wire_control.h"

/* How long a worker whose client hung up lets its decoder finish before it
 * exits anyway (the decoder may be inside a host call that never returns). */
#define HANGUP_GRACE_MS 500

struct worker {
   /* Under mutex to change, read by the supervisor without it (which must
    * never wait for the lock: a request holds it across a round trip to a
    * server that may be stalled). */
   _Atomic int control_fd; /* -1 while no server has the worker */
   bool said_goodbye; /* under mutex */
   pthread_mutex_t mutex; /* one request on the channel at a time */
   struct util_msg_reader reader;
   const struct daemon_host *host;
   struct daemon_status_page *status;
   int status_fd;
   uint64_t client_id;
   struct gpud_sched *sched; /* its slot on the schedule page (NULL: none) */

   /* restarts (process isolation): see the top of this file */
   int adopt_fd;          /* bound in the server's private directory; -1: none */
   uint8_t token[32];     /* what an adopting server must know */
   size_t token_len;
   uid_t server_uid;      /* who may adopt it: its first server's user */
   bool process;          /* a process of its own (not a thread of the server) */
   uint32_t restart_grace_ms;
   atomic_bool orphaned;  /* its server is gone (the same rules) */
   _Atomic uint64_t orphaned_ns; /* ... since */
   _Atomic int dead_fd;   /* a lost channel, for the supervisor to close */
   char fault[160];       /* under mutex: the fault it reported, for the next server */

   /* memory (under mutex): what the client holds per heap, and what more
    * the last budget let it have; while orphaned it allocates within that:
    * what it takes from any heap counts against every heap's room (the
    * client's and its user's limits are the heaps' together), and only what
    * it took meanwhile, freed, is room again */
   uint32_t n_heaps;
   uint32_t heap_flags[VK_MAX_MEMORY_HEAPS];
   uint64_t usage[VK_MAX_MEMORY_HEAPS];
   uint64_t room[VK_MAX_MEMORY_HEAPS];
   uint64_t orphan_heap_taken[VK_MAX_MEMORY_HEAPS]; /* since the server went, of each heap */
};

/* Under mutex: the server is gone, and this worker serves on for the next
 * (only one that can be adopted: a thread, or a worker started with
 * --restart-grace 0, ends with its server elsewhere).  The channel is
 * closed by the supervisor, which may be polling it. */
static void
lose_server(struct worker *w)
{
   int fd = atomic_load(&w->control_fd);
   if (fd < 0 || w->adopt_fd < 0)
      return;
   shutdown(fd, SHUT_RDWR);
   atomic_store(&w->control_fd, -1);
   int older = atomic_exchange(&w->dead_fd, fd);
   if (older >= 0)
      close(older); /* lost before the supervisor saw the one before */
   memset(w->orphan_heap_taken, 0, sizeof(w->orphan_heap_taken));
   atomic_store(&w->orphaned_ns, util_now_ns());
   atomic_store(&w->orphaned, true);
}

static bool
connection_gone(int r)
{
   return r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN;
}

/* Under mutex. */
static int
send_message(struct worker *w, Gpud__WorkerMessage *m)
{
   int fd = atomic_load(&w->control_fd);
   if (fd < 0)
      return -ENOTCONN;
   int r = wire_worker_send(fd, m, NULL, 0);
   if (connection_gone(r))
      lose_server(w);
   return r;
}

/* Receives the server's next message; NULL when the server is gone (then
 * the worker serves on without it) or sent something malformed.  fds, if not
 * NULL, get the message's fds. */
static Gpud__WorkerMessage *
receive_message(struct worker *w, int *fds, unsigned max_fds, unsigned *ret_n_fds)
{
   struct util_msg msg;
   int fd = atomic_load(&w->control_fd);
   int r = fd < 0 ? -ENOTCONN : util_msg_recv(fd, &w->reader, &msg);
   if (r < 0) {
      if (connection_gone(r))
         lose_server(w);
      return NULL;
   }
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

/* Under mutex: the budget a reply gave (what the client holds, and may). */
static void
note_budget(struct worker *w, const uint64_t *usage, size_t n_usage, const uint64_t *budget,
            size_t n_budget)
{
   for (uint32_t h = 0; h < w->n_heaps && h < n_budget; h++) {
      uint64_t held = h < n_usage ? usage[h] : w->usage[h];
      w->room[h] = budget[h] > held ? budget[h] - held : 0;
   }
}

/* Under mutex: what a client whose server is gone may still allocate from
 * a heap (the room its last budget gave, less what it took since from any
 * heap). */
static uint64_t
orphan_room(const struct worker *w, uint32_t heap)
{
   uint64_t taken = 0;
   for (uint32_t h = 0; h < VK_MAX_MEMORY_HEAPS; h++)
      taken += w->orphan_heap_taken[h];
   return w->room[heap] > taken ? w->room[heap] - taken : 0;
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
   bool answered = false;
   if (!atomic_load(&w->orphaned) && send_message(w, &m) == 0) {
      Gpud__WorkerMessage *reply = receive_message(w, NULL, 0, NULL);
      if (reply && reply->msg_case == GPUD__WORKER_MESSAGE__MSG_RESERVE_REPLY) {
         const Gpud__MemoryReserveReply *rr = reply->reserve_reply;
         answered = true;
         result = (VkResult)rr->result;
         if (result == VK_SUCCESS && bytes && heap < w->n_heaps)
            w->usage[heap] += bytes;
         note_budget(w, rr->heap_usage, rr->n_heap_usage, rr->heap_budget, rr->n_heap_budget);
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
   if (!answered && atomic_load(&w->orphaned)) {
      /* No server to ask: within the budget the last one gave. */
      if (bytes && heap < w->n_heaps && bytes <= orphan_room(w, heap)) {
         w->usage[heap] += bytes;
         w->orphan_heap_taken[heap] += bytes;
         result = VK_SUCCESS;
      } else if (bytes) {
         result = heap < w->n_heaps && !(w->heap_flags[heap] & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
                     ? VK_ERROR_OUT_OF_HOST_MEMORY
                     : VK_ERROR_OUT_OF_DEVICE_MEMORY;
      } else {
         result = VK_SUCCESS;
      }
      if (budget) {
         budget->n_heaps = w->n_heaps;
         for (uint32_t h = 0; h < w->n_heaps; h++) {
            budget->usage[h] = w->usage[h];
            budget->budget[h] = w->usage[h] + orphan_room(w, h);
         }
      }
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
   pthread_mutex_lock(&w->mutex);
   if (heap < w->n_heaps) {
      w->usage[heap] -= UTIL_MIN(bytes, w->usage[heap]);
      /* what it took meanwhile is room again; what it held before is the
       * next server's to count */
      uint64_t back = UTIL_MIN(bytes, w->orphan_heap_taken[heap]);
      w->orphan_heap_taken[heap] -= back;
   }
   if (!atomic_load(&w->orphaned))
      send_message(w, &m);
   pthread_mutex_unlock(&w->mutex);
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
   pthread_mutex_lock(&w->mutex);
   if (!w->fault[0])
      snprintf(w->fault, sizeof(w->fault), "%s", reason);
   send_message(w, &m);
   pthread_mutex_unlock(&w->mutex);
}

static int
send_ready(struct worker *w)
{
   const struct daemon_host *host = w->host;
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
   char pci[DAEMON_PCI_TEXT] = "";
   if (host->has_pci)
      daemon_pci_format(&host->pci, pci);
   ready.pci_address = pci;
   ready.render_node = (char *)host->render_node;
   ready.heap_sizes = sizes;
   ready.n_heap_sizes = n;
   ready.heap_flags = flags;
   ready.n_heap_flags = n;
   ready.version = (char *)daemon_version;
   ready.control_version = DAEMON_CONTROL_VERSION;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_READY;
   m.ready = &ready;
   pthread_mutex_lock(&w->mutex);
   int r = send_message(w, &m);
   pthread_mutex_unlock(&w->mutex);
   return r;
}

/* Once, from whichever thread ends the worker first; the other waits on
 * the lock until it has gone out, so neither exits before it is sent.  A
 * worker no server has says it to nobody. */
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

/* Waits for the server to hand over a client; makes its context.  fds:
 * the client's socket, the status page, the schedule page (when scheduled)
 * and (process isolation with restarts) the adopt socket. */
static int
take_client(struct worker *w, struct gpud_context **ret_ctx)
{
   int fds[4] = {-1, -1, -1, -1};
   unsigned n_fds = 0;
   Gpud__WorkerMessage *m = receive_message(w, fds, 4, &n_fds);
   if (!m)
      return -ECONNRESET; /* the server let this spare go */
   int r = -EPROTO;
   if (m->msg_case != GPUD__WORKER_MESSAGE__MSG_ASSIGN || n_fds < 2 ||
       m->assign->adopt_token.len > sizeof(w->token))
      goto out;
   if (util_memfd_check(fds[1], DAEMON_STATUS_PAGE_SIZE) < 0)
      goto out;
   void *page = mmap(NULL, DAEMON_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
   if (page == MAP_FAILED) {
      r = -errno;
      goto out;
   }
   w->status = page;
   w->status_fd = util_fd_move(&fds[1]);
   const Gpud__WorkerAssign *a = m->assign;
   /* its client user's identity before a byte of the client is read */
   if (a->worker_uid) {
      gid_t groups[32];
      size_t n = a->n_worker_groups < 32 ? a->n_worker_groups : 32;
      for (size_t i = 0; i < n; i++)
         groups[i] = (gid_t)a->worker_groups[i];
      r = gpud_become_client((uid_t)a->worker_uid, (gid_t)a->worker_gid, groups, n);
      if (r < 0) {
         util_err("worker: cannot become uid %u: %s", a->worker_uid, strerror(-r));
         goto out;
      }
   }
   if (w->process)
      gpud_become_cache_dir(a->cache_dir);
   w->client_id = a->client_id;
   pthread_mutex_lock(&w->mutex);
   note_budget(w, NULL, 0, a->heap_budget, a->n_heap_budget);
   pthread_mutex_unlock(&w->mutex);
   unsigned next = 2;
   w->sched = gpud_sched_new();
   if (a->scheduled && next < n_fds) {
      if (!gpud_sched_bind(w->sched, fds[next], a->sched_slot))
         util_warn("worker: no schedule page: its client is not scheduled");
      util_fd_close(&fds[next++]);
   }
   /* the socket a later server adopts this worker on: listened on here,
    * so that the credentials the server sees there are this process's */
   if (next < n_fds && a->adopt_token.len) {
      if (listen(fds[next], 4) == 0) {
         w->adopt_fd = util_fd_move(&fds[next]);
         memcpy(w->token, a->adopt_token.data, a->adopt_token.len);
         w->token_len = a->adopt_token.len;
      } else {
         util_warn("worker: cannot listen for a later server: %s; it ends with this one",
                   strerror(errno));
      }
   }
   struct gpud_context_info info = {
      .id = a->client_id,
      .cache_kept = a->cache_dir && a->cache_dir[0],
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
   snprintf(info.cache_dir, sizeof(info.cache_dir), "%s", a->cache_dir ? a->cache_dir : "");
   const struct gpud_context_ops ops = {
      .reserve_memory = reserve_memory,
      .release_memory = release_memory,
      .fault = report_fault,
      .data = w,
   };
   r = gpud_client_create(&info, w->host, &ops, w->status, util_fd_move(&fds[0]), ret_ctx);
   if (r == 0)
      (*ret_ctx)->sched = w->sched;
out:
   for (unsigned i = 0; i < 4; i++)
      util_fd_close(&fds[i]);
   wire_worker_free(m);
   return r;
}

static void
worker_init(struct worker *w, int control_fd, const struct daemon_host *host)
{
   memset(w, 0, sizeof(*w));
   atomic_init(&w->control_fd, control_fd);
   atomic_init(&w->dead_fd, -1);
   atomic_init(&w->orphaned, false);
   atomic_init(&w->orphaned_ns, 0);
   w->status_fd = -1;
   w->adopt_fd = -1;
   w->host = host;
   w->n_heaps = UTIL_MIN(host->memory.memoryHeapCount, (uint32_t)VK_MAX_MEMORY_HEAPS);
   for (uint32_t h = 0; h < w->n_heaps; h++) {
      w->heap_flags[h] = host->memory.memoryHeaps[h].flags;
      w->room[h] = host->memory.memoryHeaps[h].size;
   }
   pthread_mutex_init(&w->mutex, NULL);
   util_msg_reader_init(&w->reader, 1u << 20);
}

static void
worker_finish(struct worker *w)
{
   if (w->status)
      munmap(w->status, DAEMON_STATUS_PAGE_SIZE);
   util_msg_reader_finish(&w->reader);
   pthread_mutex_destroy(&w->mutex);
   int fd = atomic_exchange(&w->control_fd, -1);
   if (fd >= 0)
      close(fd);
   fd = atomic_exchange(&w->dead_fd, -1);
   if (fd >= 0)
      close(fd);
   util_fd_close(&w->status_fd);
   util_fd_close(&w->adopt_fd);
}

void
gpud_worker_thread_main(int control_fd, const struct daemon_host *host)
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
   gpud_sched_free(w.sched);
   worker_finish(&w);
}

/* ---- process isolation: the supervisor ------------------------------------ */

/* Constant time: nothing about the token leaks through how long a wrong one
 * takes to refuse. */
static bool
same_token(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
   if (a_len != b_len || !a_len)
      return false;
   uint8_t diff = 0;
   for (size_t i = 0; i < a_len; i++)
      diff |= a[i] ^ b[i];
   return diff == 0;
}

/* A connection on the adopt socket: a later server asking for this worker
 * (srv_adopt.c has its side).  It gets the worker only when the worker's
 * own server is gone, it is the user that server was, and it knows the
 * token; the connection then becomes the control channel. */
static void
answer_adopter(struct worker *w, struct gpud_context *ctx)
{
   int fd = accept4(w->adopt_fd, NULL, NULL, SOCK_CLOEXEC);
   if (fd < 0)
      return;
   struct ucred cred;
   if (util_peer_cred(fd, &cred) < 0 || cred.uid != w->server_uid) {
      util_warn("worker: refused an adopter of uid %u (not the daemon's user)",
                (unsigned)cred.uid);
      close(fd);
      return;
   }
   /* the adopter has a moment to ask, and to take the answer (the client's
    * hang-up waits meanwhile: keep it short) */
   const struct timeval tv = {.tv_sec = 1};
   setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
   setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
   struct util_msg_reader reader;
   util_msg_reader_init(&reader, 4096);
   struct util_msg msg;
   Gpud__WorkerMessage *m = NULL;
   int sched_fd = -1; /* the new server's schedule page */
   if (util_msg_recv(fd, &reader, &msg) == 0) {
      if (msg.n_fds <= 1 && msg.type == UTIL_MSG_CONTROL)
         m = wire_worker_unpack(msg.data, msg.size);
      if (msg.n_fds == 1)
         sched_fd = util_fd_move(&msg.fds[0]);
      util_msg_close_fds(&msg);
   }
   const char *refusal = NULL;
   if (!m || m->msg_case != GPUD__WORKER_MESSAGE__MSG_ADOPT_REQUEST)
      refusal = "it did not ask";
   else if (!same_token(m->adopt_request->token.data, m->adopt_request->token.len, w->token,
                        w->token_len))
      refusal = "a wrong token";
   else if (m->adopt_request->scheduled != (sched_fd >= 0))
      refusal = "a schedule page without a slot, or a slot without a page";
   char server_version[64] = "?";
   if (m && !refusal && m->adopt_request->server_version)
      snprintf(server_version, sizeof(server_version), "%s", m->adopt_request->server_version);
   uint32_t sched_slot = m && !refusal ? m->adopt_request->sched_slot : 0;
   wire_worker_free(m);
   util_msg_reader_finish(&reader);
   if (refusal)
      util_fd_close(&sched_fd);

   pthread_mutex_lock(&w->mutex);
   int control = atomic_load(&w->control_fd);
   if (!refusal && !atomic_load(&w->orphaned) && control >= 0) {
      /* its server may be gone with the hangup not yet seen */
      struct pollfd p = {.fd = control, .events = POLLRDHUP};
      if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
         lose_server(w);
   }
   if (!refusal && !atomic_load(&w->orphaned))
      refusal = "its server is still there";
   if (refusal) {
      pthread_mutex_unlock(&w->mutex);
      util_warn("worker: refused an adopter: %s", refusal);
      util_fd_close(&sched_fd);
      close(fd);
      return;
   }
   Gpud__WorkerAdopted adopted = GPUD__WORKER_ADOPTED__INIT;
   adopted.client_id = w->client_id;
   adopted.version = (char *)daemon_version;
   adopted.control_version = DAEMON_CONTROL_VERSION;
   adopted.heap_usage = w->usage;
   adopted.n_heap_usage = w->n_heaps;
   adopted.fault = w->fault;
   adopted.device_uuid.data = (uint8_t *)w->host->device_uuid;
   adopted.device_uuid.len = VK_UUID_SIZE;
   Gpud__WorkerMessage answer = GPUD__WORKER_MESSAGE__INIT;
   answer.msg_case = GPUD__WORKER_MESSAGE__MSG_ADOPTED;
   answer.adopted = &adopted;
   const int fds[2] = {ctx->fd, w->status_fd};
   if (wire_worker_send(fd, &answer, fds, 2) < 0) {
      pthread_mutex_unlock(&w->mutex);
      util_fd_close(&sched_fd);
      close(fd);
      return;
   }
   const struct timeval none = {0};
   setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
   setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
   uint64_t away_ms = (util_now_ns() - atomic_load(&w->orphaned_ns)) / 1000000;
   /* the room it took meanwhile is gone until the new server says more */
   for (uint32_t h = 0; h < w->n_heaps; h++)
      w->room[h] = orphan_room(w, h);
   memset(w->orphan_heap_taken, 0, sizeof(w->orphan_heap_taken));
   atomic_store(&w->control_fd, fd);
   atomic_store(&w->orphaned, false);
   util_msg_reader_finish(&w->reader);
   util_msg_reader_init(&w->reader, 1u << 20);
   pthread_mutex_unlock(&w->mutex);
   /* the new server's schedule page from now on, or none (the earlier
    * server's slot is no one's to free) */
   if (sched_fd < 0 || !gpud_sched_bind(w->sched, sched_fd, sched_slot)) {
      if (sched_fd >= 0)
         util_warn("worker of client %" PRIu64 ": the new server's schedule page cannot be used",
                   w->client_id);
      gpud_sched_unbind(w->sched);
   }
   util_fd_close(&sched_fd);
   util_notice("worker of client %" PRIu64 ": adopted by gpud %s (pid %d) after %" PRIu64
               " ms without a server",
               w->client_id, server_version, (int)cred.pid, away_ms);
}

/* Process isolation: a thread that notices the client hanging up even
 * while the decoder is stuck in a host call (a queue waiting on a value
 * nobody will signal), so the worker, and everything the client held, is
 * gone within a bounded time; that notices its server going; and that
 * answers the next server. */
struct supervisor {
   struct worker *w;
   struct gpud_context *ctx;
};

static void *
supervise(void *data)
{
   struct supervisor *sv = data;
   struct worker *w = sv->w;
   for (;;) {
      /* (no lock: a request may hold it across a stalled server's answer,
       * and the client's hang-up must be seen all the same) */
      int dead = atomic_exchange(&w->dead_fd, -1);
      if (dead >= 0)
         close(dead);
      int control = atomic_load(&w->control_fd);
      bool orphaned = atomic_load(&w->orphaned);
      uint64_t since = atomic_load(&w->orphaned_ns);
      int timeout = -1;
      if (orphaned) {
         uint64_t waited_ms = (util_now_ns() - since) / 1000000;
         if (w->adopt_fd < 0 || waited_ms >= w->restart_grace_ms) {
            util_warn("worker of client %" PRIu64 ": no gpud came back within %u ms; "
                      "its device is lost",
                      w->client_id, w->restart_grace_ms);
            _exit(0);
         }
         timeout = (int)UTIL_MIN(w->restart_grace_ms - waited_ms, (uint64_t)INT32_MAX);
      }
      struct pollfd p[3] = {
         {.fd = sv->ctx->fd, .events = POLLRDHUP},
         {.fd = control, .events = POLLRDHUP},
         {.fd = w->adopt_fd, .events = POLLIN},
      };
      int n = poll(p, 3, timeout);
      if (n < 0 && errno != EINTR)
         _exit(1);
      if (n <= 0)
         continue;
      if (p[0].revents) {
         if (atomic_load(&sv->ctx->closing))
            return NULL; /* the decoder ended the context itself */
         /* The decoder reaches the end of the stream and exits unless it
          * is stuck; give it the chance to finish what the client sent. */
         struct timespec ts = {0, HANGUP_GRACE_MS * 1000000L};
         while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
         /* (it did meanwhile: it ends the client itself, waiting at most
          * DAEMON_COMPILE_END_WAIT_NS for the pipelines being made) */
         if (atomic_load(&sv->ctx->closing))
            return NULL;
         send_goodbye(w, "disconnected while its worker was busy", false);
         _exit(0);
      }
      if (p[1].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) {
         pthread_mutex_lock(&w->mutex);
         if (atomic_load(&w->control_fd) == control)
            lose_server(w);
         pthread_mutex_unlock(&w->mutex);
         if (w->adopt_fd >= 0)
            util_notice("worker of client %" PRIu64 ": its server is gone; serving on, "
                        "waiting up to %u ms for the next",
                        w->client_id, w->restart_grace_ms);
      }
      if (p[2].revents & POLLIN)
         answer_adopter(w, sv->ctx);
   }
}

/* A worker dying of a signal says which on its status page, for a server
 * that is not its parent (an adopted worker's exit status is its first
 * server's to read); then the signal takes its course, through whatever
 * handler was there before (a sanitizer's report, say). */
static struct daemon_status_page *fatal_page;
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
static struct sigaction fatal_before[UTIL_ARRAY_SIZE(fatal_signals)];

static void
on_fatal_signal(int sig, siginfo_t *info, void *context)
{
   int saved_errno = errno;
   /* the first: a handler before may die of another (a sanitizer reports
    * the fault, then aborts) */
   uint32_t none = 0;
   bool first = fatal_page &&
                atomic_compare_exchange_strong(&fatal_page->fatal_signal, &none, (uint32_t)sig);
   const struct sigaction *before = NULL;
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(fatal_signals); i++) {
      if (fatal_signals[i] == sig)
         before = &fatal_before[i];
   }
   if (before && (before->sa_flags & SA_SIGINFO)) {
      before->sa_sigaction(sig, info, context);
   } else if (before && before->sa_handler != SIG_DFL) {
      if (before->sa_handler != SIG_IGN)
         before->sa_handler(sig);
   } else {
      /* the default action: the worker dies of the signal */
      struct sigaction dfl = {.sa_handler = SIG_DFL};
      sigaction(sig, &dfl, NULL);
      raise(sig);
   }
   /* a handler before recovered from it: not dying after all */
   if (first)
      atomic_store(&fatal_page->fatal_signal, 0);
   errno = saved_errno;
}

static void
catch_fatal_signals(struct daemon_status_page *page)
{
   fatal_page = page;
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(fatal_signals); i++) {
      sigaction(fatal_signals[i], NULL, &fatal_before[i]);
      /* on the stack the handler before used (a sanitizer's, for overflows) */
      struct sigaction sa = {.sa_sigaction = on_fatal_signal,
                             .sa_flags = SA_SIGINFO | SA_NODEFER |
                                         (fatal_before[i].sa_flags & SA_ONSTACK)};
      sigemptyset(&sa.sa_mask);
      sigaction(fatal_signals[i], &sa, NULL);
   }
}

int
gpud_worker_process_main(const struct gpud_worker_options *opt)
{
   /* Started as /proc/self/exe: named for ps, top and perf. */
   prctl(PR_SET_NAME, "gpud-worker");
   /* Without restarts, die with the server, whatever happens to it; with
    * them, a worker serving a client outlives it (a spare or a worker still
    * starting ends when its channel closes). */
   if (!opt->restart_grace_ms)
      prctl(PR_SET_PDEATHSIG, SIGKILL);
   if (getppid() != opt->parent)
      return 1;
   /* Nothing but the control channel and the standard streams crosses exec
    * into a worker; make sure of it. */
   if (opt->control_fd > 3)
      close_range(3, (unsigned)opt->control_fd - 1, 0);
   close_range((unsigned)opt->control_fd + 1, ~0u, 0);
   /* started as root: the base user's identity until its client's */
   if (opt->base_identity) {
      int r = gpud_become_base(opt->base_identity);
      if (r < 0) {
         util_err("worker: cannot take the identity %s: %s", opt->base_identity, strerror(-r));
         return 1;
      }
   }
   /* Another process of the same user (another client's worker) cannot
    * read this one's memory or attach to it. */
   prctl(PR_SET_DUMPABLE, 0);
   /* who may adopt it later: the user its server is */
   struct ucred server;
   if (util_peer_cred(opt->control_fd, &server) < 0)
      return 1;

   /* The first worker picks the host driver when the server was not told
    * one (the server never loads a driver to look). */
   char *manifest = NULL;
   int r = opt->manifest ? ((manifest = strdup(opt->manifest)) ? 0 : -ENOMEM)
                         : daemon_host_default_manifest(opt->device, opt->sysfs_root, &manifest);
   static struct daemon_host host;
   if (r == 0)
      r = daemon_host_load(&host, manifest, opt->device, opt->sysfs_root);
   free(manifest);
   if (r < 0)
      return r == -ENODEV ? GPUD_EXIT_NO_DEVICE : 1;
   if (daemon_host_enable_validation(&host, opt->validate) < 0)
      return 1;
   host.spirv = opt->spirv;
   if (opt->sandbox && gpud_sandbox_enter() < 0)
      return 1;

   static struct worker w;
   worker_init(&w, opt->control_fd, &host);
   w.server_uid = server.uid;
   w.process = true;
   w.restart_grace_ms = opt->restart_grace_ms;
   struct gpud_context *ctx = NULL;
   if (send_ready(&w) < 0)
      _exit(1);
   r = take_client(&w, &ctx);
   if (r < 0)
      _exit(r == -ECONNRESET ? 0 : 1);
   if (!w.restart_grace_ms)
      util_fd_close(&w.adopt_fd);
   catch_fatal_signals(w.status);
   static struct supervisor supervisor;
   supervisor = (struct supervisor){.w = &w, .ctx = ctx};
   util_thread_start_detached(supervise, &supervisor);
   gpud_client_run(ctx);
   /* The process's end releases everything the client held, whatever its
    * queues still wait on: no teardown that could hang. */
   send_goodbye(&w, ctx->end_reason, ctx->fault);
   _exit(0);
}
