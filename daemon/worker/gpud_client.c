/* SPDX-License-Identifier: MIT */
/*
 * A client, from the worker's side: its context and every layer under it
 * made when it arrives, its rings read (ring -> stream -> replay -> host
 * driver -> completion page) until it leaves, breaks the protocol or stops
 * reading its replies, then everything it held released.  The top of the
 * worker: it calls into every layer, none calls into it.
 */
#include "gpud_client.h"

#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_hold.h"
#include "gpud_lifetime.h"
#include "gpud_pipecache.h"
#include "gpud_replay.h"
#include "gpud_stream.h"
#include "gpud_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_limits.h"
#include "util_fd.h"
#include "util_time.h"
#include "util_trace.h"
#include "wire_control.h"

static const char *
recv_error(int r)
{
   switch (r) {
   case -EPROTO:
      return "malformed packet sequence";
   case -EMSGSIZE:
      return "message larger than the protocol allows";
   default:
      return strerror(-r);
   }
}

int
gpud_client_create(const struct gpud_context_info *info, const struct daemon_host *host,
                    const struct gpud_context_ops *ops, struct daemon_status_page *status,
                    int fd, struct gpud_context **ret_ctx)
{
   struct gpud_context *ctx = calloc(1, sizeof(*ctx));
   if (!ctx) {
      close(fd);
      return -ENOMEM;
   }
   /* The server's end was non-blocking; the context reads in order and
    * sends within its deadline (util_msg_send_timeout never blocks in
    * sendmsg itself). */
   int fl = fcntl(fd, F_GETFL);
   if (fl >= 0)
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
   ctx->info = *info;
   ctx->info.name[sizeof(ctx->info.name) - 1] = '\0';
   ctx->host = host;
   ctx->ops = *ops;
   ctx->status = status;
   ctx->fd = fd;
   ctx->record_fd = -1;
   pthread_mutex_init(&ctx->send_mutex, NULL);
   pthread_mutex_init(&ctx->wait_mutex, NULL);
   pthread_mutex_init(&ctx->log_mutex, NULL);
   pthread_mutex_init(&ctx->names_mutex, NULL);
   pthread_mutex_init(&ctx->cpus_mutex, NULL);
   atomic_init(&ctx->message_severities, UINT32_MAX); /* until the ICD says */
   atomic_init(&ctx->message_types, UINT32_MAX);
   pthread_cond_init(&ctx->wait_cond, NULL);
   util_list_init(&ctx->waiters);
   util_list_init(&ctx->object_list);
   util_msg_reader_init(&ctx->reader, DAEMON_MAX_MESSAGE_SIZE);
   wire_enc_init(&ctx->reply);
   if (getenv("GPUD_PROFILE"))
      ctx->profile = calloc(1, sizeof(*ctx->profile));
   util_trace_init("worker");
   ctx->log_tokens = info->log_burst;
   ctx->log_last_ns = util_now_ns();
   /* (the call's arena: a compile job takes it and leaves another) */
   struct wire_arena *arena = wire_arena_create(DAEMON_MAX_COMMAND_MEMORY);
   ctx->call = arena ? gpud_call_create(ctx, arena) : NULL;
   if (!ctx->call)
      wire_arena_destroy(arena);
   ctx->replay = gpud_replay_create(ctx);
   if (!ctx->call || !ctx->replay || util_idtable_init(&ctx->objects) < 0) {
      gpud_client_destroy(ctx);
      return -ENOMEM;
   }
   *ret_ctx = ctx;
   return 0;
}

/* The client's first message: its rings. */
static int
setup_rings(struct gpud_context *ctx)
{
   struct util_msg msg;
   int r = util_msg_recv(ctx->fd, &ctx->reader, &msg);
   if (r == -ECONNRESET || (r < 0 && atomic_load(&ctx->closing))) {
      gpud_context_end(ctx, false, "disconnected");
      return r;
   }
   if (r < 0)
      return gpud_context_protocol_error(ctx, "%s", recv_error(r));
   Gpud__ControlMessage *m =
      msg.type == UTIL_MSG_CONTROL ? wire_control_unpack(msg.data, msg.size) : NULL;
   if (!m || m->msg_case != GPUD__CONTROL_MESSAGE__MSG_RING_SETUP || msg.n_fds != 1) {
      wire_control_free(m);
      util_msg_close_fds(&msg);
      return gpud_context_protocol_error(ctx, "the first message does not set up the rings");
   }
   uint32_t command_size = m->ring_setup->command_size;
   uint32_t reply_size = m->ring_setup->reply_size;
   wire_control_free(m);
   void *map = NULL;
   r = util_ring_map_size(command_size, reply_size) ? util_ring_map(msg.fds[0], command_size,
                                                                    reply_size, &map)
                                                    : -EDOM;
   util_msg_close_fds(&msg);
   if (r < 0)
      return gpud_context_protocol_error(ctx, "rings of %u and %u bytes: %s", command_size,
                                         reply_size,
                                         r == -EDOM     ? "sizes out of range"
                                         : r == -EPERM  ? "memfd not sealed against shrinking"
                                         : r == -ERANGE ? "memfd smaller than the rings"
                                         : r == -EACCES ? "memfd sealed against writing"
                                         : r == -ENOMEM ? "out of memory"
                                                        : "not a memfd");
   ctx->command_ring_size = command_size;
   ctx->reply_ring_size = reply_size;
   util_spin_window_init(&ctx->ring_window, DAEMON_COMMAND_SPIN_NS, DAEMON_COMMAND_SPIN_MAX_NS);
   ctx->ring_wait = (struct util_ring_wait){
      .socket_fd = ctx->fd,
      .closing = &ctx->closing,
      .spin_ns = DAEMON_COMMAND_SPIN_NS,
      .window = &ctx->ring_window,
      .slice_ns = DAEMON_RING_SLICE_NS,
      .blocked_since = &ctx->status->send_blocked_since_ns,
      .slept = ctx->profile ? &ctx->profile->slept : NULL,
   };
   util_ring_init(&ctx->commands, map, command_size, reply_size, true, false,
                  DAEMON_MAX_MESSAGE_SIZE);
   /* A developer's switch: every command the client sends, in one file
    * per client, to seed the decoder's fuzzer (tests/fuzz). */
   const char *record = getenv("GPUD_RECORD_STREAMS");
   if (record && *record) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/client-%" PRIu64 "-%d.stream", record, ctx->info.id,
               (int)getpid());
      ctx->record_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
   }
   pthread_mutex_lock(&ctx->send_mutex);
   util_ring_init(&ctx->replies, map, command_size, reply_size, false, true, 0);
   ctx->ring_map = map;
   pthread_mutex_unlock(&ctx->send_mutex);
   return 0;
}

/* GPUD_PROFILE: the ops that took the decoding thread longest. */
static void
log_profile(struct gpud_context *ctx)
{
   const struct gpud_profile *p = ctx->profile;
   uint64_t busy = 0;
   for (unsigned i = 0; i <= GPUD_PROFILE_CHUNKS; i++)
      busy += p->ns[i];
   gpud_context_log(ctx, UTIL_LOG_NOTICE,
                    "profile: %.3f s busy, %.3f s waiting for commands; %" PRIu64
                    " messages, %" PRIu64 " of them after a sleep",
                    (double)busy / 1e9, (double)p->wait_ns / 1e9, p->messages, p->slept);
   uint64_t lane_ns, lane_commands;
   gpud_replay_profile(ctx->replay, &lane_ns, &lane_commands);
   if (lane_commands)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: the replay lanes spent %.3f s on %" PRIu64
                       " recorded commands: %.1f ns a command",
                       (double)lane_ns / 1e9, lane_commands,
                       (double)lane_ns / (double)lane_commands);
   if (p->submits)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: %" PRIu64 " tracked submits, us each: %.2f before the host, "
                       "%.2f the host's submit, %.2f gpud's fence, %.2f the entry",
                       p->submits, (double)p->submit_ns[0] / 1e3 / (double)p->submits,
                       (double)p->submit_ns[1] / 1e3 / (double)p->submits,
                       (double)p->submit_ns[2] / 1e3 / (double)p->submits,
                       (double)p->submit_ns[3] / 1e3 / (double)p->submits);
   if (p->worker_copies)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: %" PRIu64 " submissions of copies made by the worker",
                       p->worker_copies);
   if (p->track_fences_made)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: %" PRIu64 " fences made for submissions on their way, "
                       "%.2f us each",
                       p->track_fences_made,
                       (double)p->track_fences_ns / 1e3 / (double)p->track_fences_made);
   if (p->icd_copies)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: %" PRIu64 " submissions of copies made by the ICD, %" PRIu64
                       " with bytes for the worker to write, %" PRIu64 " of them on the GPU, %" PRIu64
                       " from upload memory",
                       p->icd_copies, p->icd_copies_sent, p->icd_copies_gpu,
                       p->icd_copies_slot);
   uint64_t jobs, jobs_ns;
   gpud_compile_profile(ctx, &jobs, &jobs_ns);
   if (jobs)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: the compile threads made %" PRIu64
                       " pipelines and shader modules in %.3f s: %.2f ms a creation",
                       jobs, (double)jobs_ns / 1e9, (double)jobs_ns / 1e6 / (double)jobs);
   /* the recorded commands whose replay took longest, host call included */
   bool rec_shown[WIRE_OP_COUNT] = {0};
   for (unsigned k = 0; k < 8; k++) {
      unsigned top = 0;
      for (unsigned i = 1; i < WIRE_OP_COUNT; i++) {
         if (!rec_shown[i] && atomic_load(&p->rec_ns[i]) > atomic_load(&p->rec_ns[top]))
            top = i;
      }
      if (!atomic_load(&p->rec_ns[top]))
         break;
      rec_shown[top] = true;
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: replayed %" PRIu64 " %s: %.0f ns each, %.3f s in all",
                       atomic_load(&p->rec_count[top]), wire_op_name(top),
                       (double)atomic_load(&p->rec_ns[top]) /
                          (double)atomic_load(&p->rec_count[top]),
                       (double)atomic_load(&p->rec_ns[top]) / 1e9);
   }
   bool shown[GPUD_PROFILE_CHUNKS + 1] = {0};
   for (unsigned k = 0; k < 12; k++) {
      unsigned top = 0;
      for (unsigned i = 1; i <= GPUD_PROFILE_CHUNKS; i++) {
         if (!shown[i] && p->ns[i] > p->ns[top])
            top = i;
      }
      if (!p->ns[top])
         break;
      shown[top] = true;
      if (top == GPUD_PROFILE_CHUNKS)
         gpud_context_log(ctx, UTIL_LOG_NOTICE,
                          "profile: %.3f s in %" PRIu64 " chunks of %" PRIu64
                          " recorded commands: %.1f ns a command",
                          (double)p->ns[top] / 1e9, p->count[top], p->recorded,
                          (double)p->ns[top] / (double)(p->recorded ? p->recorded : 1));
      else
         gpud_context_log(ctx, UTIL_LOG_NOTICE, "profile: %.3f s in %" PRIu64 " %s: %.2f us each",
                          (double)p->ns[top] / 1e9, p->count[top], wire_op_name(top),
                          (double)p->ns[top] / 1e3 / (double)p->count[top]);
   }
}

static void
serve(struct gpud_context *ctx)
{
   if (setup_rings(ctx) < 0)
      return;
   for (;;) {
      struct util_msg msg;
      /* The next command of a busy client usually follows at once: the
       * ring polls before it sleeps. */
      const uint64_t t0 = ctx->profile ? util_now_ns() : 0;
      int r = util_ring_recv(&ctx->commands, &ctx->ring_wait, &msg);
      if (ctx->profile) {
         ctx->profile->wait_ns += util_now_ns() - t0;
         ctx->profile->messages++;
      }
      util_trace(UTIL_TRACE_MSG, r < 0 ? 0 : msg.size);
      if (r == -ECONNRESET || (r < 0 && atomic_load(&ctx->closing))) {
         gpud_context_end(ctx, false, "disconnected");
         return;
      }
      if (r < 0) {
         gpud_context_protocol_error(ctx, "%s",
                                     r == -EPROTO     ? "malformed entry in the command ring"
                                     : r == -EMSGSIZE ? "message larger than the protocol allows"
                                                      : strerror(-r));
         return;
      }
      if (msg.n_fds && msg.type != UTIL_MSG_STREAM) {
         util_msg_close_fds(&msg);
         gpud_context_protocol_error(ctx, "unexpected file descriptors");
         return;
      }
      if (msg.type == UTIL_MSG_CONTROL) {
         Gpud__ControlMessage *m = wire_control_unpack(msg.data, msg.size);
         bool bye = m && m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT;
         wire_control_free(m);
         if (bye) {
            gpud_context_end(ctx, false, "disconnected");
            return;
         }
         gpud_context_protocol_error(ctx, "bad control message");
         return;
      }
      if (ctx->record_fd >= 0) {
         /* whole messages from the start, or the seed would not replay */
         if (ctx->recorded + msg.size > DAEMON_RECORD_MAX ||
             write(ctx->record_fd, msg.data, msg.size) != (ssize_t)msg.size)
            util_fd_close(&ctx->record_fd);
         ctx->recorded += msg.size;
      }
      if (gpud_stream_process(ctx, msg.data, msg.size, msg.fds, msg.n_fds) < 0)
         return;
   }
}

void
gpud_client_run(struct gpud_context *ctx)
{
   serve(ctx);
   /* what the client's devices compiled, for its next run (a worker ends
    * without destroying what is left), with the pipelines still being
    * made (unless the host takes longer than a client's end may) */
   gpud_compile_drain_for(ctx, DAEMON_COMPILE_END_WAIT_NS);
   struct gpud_object *obj;
   util_list_for_each(obj, &ctx->object_list, link) {
      if (obj->type == VK_OBJECT_TYPE_DEVICE)
         gpud_pipecache_save(ctx, obj);
   }
   if (ctx->profile)
      log_profile(ctx);
   util_trace_finish();
}

void
gpud_client_destroy(struct gpud_context *ctx)
{
   if (!ctx)
      return;
   /* Stop reading and writing; waits in flight end at their next slice. */
   atomic_store(&ctx->closing, true);
   if (ctx->fd >= 0)
      shutdown(ctx->fd, SHUT_RDWR);
   uint64_t objects = ctx->n_objects;
   uint64_t bytes = ctx->memory_bytes;
   /* the lanes first: they may be in the middle of the client's objects */
   gpud_replay_destroy(ctx->replay);
   ctx->replay = NULL;

   gpud_compile_drain(ctx);
   gpud_compile_reap(ctx);
   gpud_lifetime_destroy(ctx, NULL, NULL);
   gpud_compile_destroy(ctx);
   gpud_waiters_cancel(ctx, NULL, 0);
   gpud_hold_end(ctx);
   if (objects)
      gpud_context_log(ctx, UTIL_LOG_INFO,
                       "released %" PRIu64 " objects and %" PRIu64 " bytes of memory", objects,
                       bytes);
   util_idtable_finish(&ctx->objects);
   if (ctx->ring_map) {
      util_ring_finish(&ctx->commands);
      util_ring_finish(&ctx->replies);
      util_ring_unmap(ctx->ring_map, ctx->command_ring_size, ctx->reply_ring_size);
   }
   util_msg_reader_finish(&ctx->reader);
   util_fd_close(&ctx->record_fd);
   if (ctx->call)
      wire_arena_destroy(ctx->call->arena);
   gpud_call_destroy(ctx->call);
   free(ctx->profile);
   wire_enc_finish(&ctx->reply);
   util_fd_close(&ctx->fd);
   pthread_mutex_destroy(&ctx->send_mutex);
   pthread_mutex_destroy(&ctx->wait_mutex);
   pthread_mutex_destroy(&ctx->log_mutex);
   pthread_mutex_destroy(&ctx->names_mutex);
   pthread_mutex_destroy(&ctx->cpus_mutex);
   pthread_cond_destroy(&ctx->wait_cond);
   free(ctx);
}
