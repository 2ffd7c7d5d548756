/* SPDX-License-Identifier: MIT */
/*
 * A context's life: created for one client by its worker, it reads the
 * client's stream in order until the client leaves, breaks the protocol or
 * stops reading its replies, then releases everything the client held.
 */
#include "gpud_call.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpud_limits.h"
#include "wire_control.h"
#include "util_time.h"

/* Token bucket: log_burst lines at once, then log_per_second. */
static bool
log_allowed(struct gpud_context *ctx, unsigned *ret_suppressed)
{
   bool ok;
   pthread_mutex_lock(&ctx->log_mutex);
   uint64_t now = util_now_ns();
   double burst = ctx->info.log_burst;
   ctx->log_tokens += (double)(now - ctx->log_last_ns) / 1e9 * ctx->info.log_per_second;
   if (ctx->log_tokens > burst)
      ctx->log_tokens = burst;
   ctx->log_last_ns = now;
   ok = ctx->log_tokens >= 1.0;
   if (ok) {
      ctx->log_tokens -= 1.0;
      *ret_suppressed = ctx->log_suppressed;
      ctx->log_suppressed = 0;
   } else {
      ctx->log_suppressed++;
   }
   pthread_mutex_unlock(&ctx->log_mutex);
   return ok;
}

void
gpud_context_log(struct gpud_context *ctx, enum util_log_level level, const char *fmt, ...)
{
   unsigned suppressed = 0;
   if (level > UTIL_LOG_ERR && !log_allowed(ctx, &suppressed))
      return;
   char msg[1024];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(msg, sizeof(msg), fmt, ap);
   va_end(ap);
   const struct util_log_client who = {
      .id = ctx->info.id,
      .pid = (int)ctx->info.pid,
      .uid = (unsigned)ctx->info.uid,
      .name = ctx->info.name,
   };
   if (suppressed)
      util_log_client(level, &who, "%u lines about this client suppressed", suppressed);
   util_log_client(level, &who, "%s", msg);
}

/* Records why the context ends (the first reason wins) and stops it. */
static void
end_context(struct gpud_context *ctx, bool fault, const char *reason)
{
   pthread_mutex_lock(&ctx->log_mutex);
   if (!ctx->end_reason[0]) {
      snprintf(ctx->end_reason, sizeof(ctx->end_reason), "%s", reason);
      ctx->fault = fault;
   }
   pthread_mutex_unlock(&ctx->log_mutex);
   atomic_store(&ctx->closing, true);
   shutdown(ctx->fd, SHUT_RDWR);
   if (ctx->ring_map)
      util_ring_wake_consumer(&ctx->commands);
}

int
gpud_context_send(struct gpud_context *ctx, uint32_t type, const void *data, size_t size,
                  const int *fds, unsigned n_fds)
{
   pthread_mutex_lock(&ctx->send_mutex);
   int r;
   if (ctx->ring_map) {
      /* the ring notes on the status page when it waits for room */
      r = util_ring_send(&ctx->replies, &ctx->ring_wait, type, data, size, fds, n_fds,
                         (uint64_t)ctx->info.send_timeout_ms * 1000000ull);
   } else {
      /* no rings yet: why the client is refused */
      atomic_store(&ctx->status->send_blocked_since_ns, util_now_ns());
      r = util_msg_send_timeout(ctx->fd, type, data, size, fds, n_fds,
                                (int)ctx->info.send_timeout_ms);
      atomic_store(&ctx->status->send_blocked_since_ns, 0);
   }
   pthread_mutex_unlock(&ctx->send_mutex);
   if (r == -ETIMEDOUT) {
      char reason[128];
      snprintf(reason, sizeof(reason), "stopped reading its replies for %u ms",
               ctx->info.send_timeout_ms);
      gpud_context_log(ctx, UTIL_LOG_ERR, "dropped: %s", reason);
      end_context(ctx, true, reason);
   }
   return r;
}

int
gpud_context_send_control(struct gpud_context *ctx, const Gpud__ControlMessage *m)
{
   size_t size;
   void *buf = wire_control_pack(m, &size);
   if (!buf)
      return -ENOMEM;
   int r = gpud_context_send(ctx, UTIL_MSG_CONTROL, buf, size, NULL, 0);
   free(buf);
   return r;
}

int
gpud_context_send_reply(struct gpud_context *ctx, struct wire_enc *reply, const int *fds,
                        unsigned n_fds)
{
   if (reply->oom)
      return -ENOMEM;
   return gpud_context_send(ctx, UTIL_MSG_STREAM, reply->data, reply->size, fds, n_fds);
}

int
gpud_context_protocol_error(struct gpud_context *ctx, const char *fmt, ...)
{
   char reason[512];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(reason, sizeof(reason), fmt, ap);
   va_end(ap);
   gpud_context_log(ctx, UTIL_LOG_ERR, "protocol error: %s", reason);
   Gpud__Disconnect d = GPUD__DISCONNECT__INIT;
   d.reason = reason;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT;
   m.disconnect = &d;
   gpud_context_send_control(ctx, &m);
   char why[600];
   snprintf(why, sizeof(why), "protocol error: %s", reason);
   end_context(ctx, true, why);
   return -EPROTO;
}

void
gpud_context_debug_message(struct gpud_context *ctx,
                           VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                           VkDebugUtilsMessageTypeFlagsEXT types, const char *id_name,
                           int32_t id_number, const char *message)
{
   if (!(atomic_load(&ctx->message_severities) & severity) ||
       !(atomic_load(&ctx->message_types) & types))
      return; /* no messenger of the client's takes it */
   Gpud__DebugMessage dm = GPUD__DEBUG_MESSAGE__INIT;
   dm.severity = severity;
   dm.types = types;
   dm.message_id_name = (char *)(id_name ? id_name : "");
   dm.message_id_number = id_number;
   dm.message = (char *)(message ? message : "");
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_DEBUG_MESSAGE;
   m.debug_message = &dm;
   gpud_context_send_control(ctx, &m);
}

void
gpud_context_host_lost(struct gpud_context *ctx, const char *command)
{
   if (atomic_exchange(&ctx->host_lost, true))
      return;
   char reason[160];
   snprintf(reason, sizeof(reason), "the host driver lost its device (%s)", command);
   gpud_context_log(ctx, UTIL_LOG_WARNING, "%s", reason);
   gpud_context_debug_message(ctx, VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                              VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "gpud-device-lost", 0,
                              reason);
   if (ctx->ops.fault)
      ctx->ops.fault(ctx->ops.data, reason);
}

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
gpud_context_create(const struct gpud_context_info *info, const struct gpud_host *host,
                    const struct gpud_context_ops *ops, struct gpud_status_page *status,
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
   atomic_init(&ctx->message_severities, UINT32_MAX); /* until the ICD says */
   atomic_init(&ctx->message_types, UINT32_MAX);
   pthread_cond_init(&ctx->wait_cond, NULL);
   util_list_init(&ctx->waiters);
   util_list_init(&ctx->object_list);
   util_msg_reader_init(&ctx->reader, GPUD_MAX_MESSAGE_SIZE);
   wire_enc_init(&ctx->reply);
   if (getenv("GPUD_PROFILE"))
      ctx->profile = calloc(1, sizeof(*ctx->profile));
   ctx->log_tokens = info->log_burst;
   ctx->log_last_ns = util_now_ns();
   ctx->arena = wire_arena_create(GPUD_MAX_COMMAND_MEMORY);
   ctx->call = ctx->arena ? gpud_call_create(ctx, ctx->arena) : NULL;
   ctx->replay = gpud_replay_create(ctx);
   if (!ctx->arena || !ctx->call || !ctx->replay || util_idtable_init(&ctx->objects) < 0) {
      gpud_context_destroy(ctx);
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
      end_context(ctx, false, "disconnected");
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
   ctx->ring_wait = (struct util_ring_wait){
      .socket_fd = ctx->fd,
      .closing = &ctx->closing,
      .spin_ns = GPUD_COMMAND_SPIN_NS,
      .slice_ns = GPUD_RING_SLICE_NS,
      .blocked_since = &ctx->status->send_blocked_since_ns,
   };
   util_ring_init(&ctx->commands, map, command_size, reply_size, true, false,
                  GPUD_MAX_MESSAGE_SIZE);
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
   gpud_context_log(ctx, UTIL_LOG_NOTICE, "profile: %.3f s busy, %.3f s waiting for commands",
                    (double)busy / 1e9, (double)p->wait_ns / 1e9);
   uint64_t lane_ns, lane_commands;
   gpud_replay_profile(ctx->replay, &lane_ns, &lane_commands);
   if (lane_commands)
      gpud_context_log(ctx, UTIL_LOG_NOTICE,
                       "profile: the replay lanes spent %.3f s on %" PRIu64
                       " recorded commands: %.1f ns a command",
                       (double)lane_ns / 1e9, lane_commands,
                       (double)lane_ns / (double)lane_commands);
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
      if (ctx->profile)
         ctx->profile->wait_ns += util_now_ns() - t0;
      if (r == -ECONNRESET || (r < 0 && atomic_load(&ctx->closing))) {
         end_context(ctx, false, "disconnected");
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
            end_context(ctx, false, "disconnected");
            return;
         }
         gpud_context_protocol_error(ctx, "bad control message");
         return;
      }
      if (ctx->record_fd >= 0) {
         /* whole messages from the start, or the seed would not replay */
         if (ctx->recorded + msg.size > GPUD_RECORD_MAX ||
             write(ctx->record_fd, msg.data, msg.size) != (ssize_t)msg.size)
            util_fd_close(&ctx->record_fd);
         ctx->recorded += msg.size;
      }
      if (gpud_call_process_stream(ctx, msg.data, msg.size, msg.fds, msg.n_fds) < 0)
         return;
   }
}

void
gpud_context_run(struct gpud_context *ctx)
{
   serve(ctx);
   if (ctx->profile)
      log_profile(ctx);
}

void
gpud_context_destroy(struct gpud_context *ctx)
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

   gpud_context_destroy_objects(ctx, NULL, NULL);
   gpud_waiters_cancel(ctx, NULL, 0);
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
   wire_arena_destroy(ctx->arena);
   gpud_call_destroy(ctx->call);
   free(ctx->profile);
   wire_enc_finish(&ctx->reply);
   util_fd_close(&ctx->fd);
   pthread_mutex_destroy(&ctx->send_mutex);
   pthread_mutex_destroy(&ctx->wait_mutex);
   pthread_mutex_destroy(&ctx->log_mutex);
   pthread_mutex_destroy(&ctx->names_mutex);
   pthread_cond_destroy(&ctx->wait_cond);
   free(ctx);
}
