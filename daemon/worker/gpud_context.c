/* SPDX-License-Identifier: MIT */
/*
 * A client's context as every layer of the worker sees it: who the client
 * is, and what any layer may tell it or say about it -- log lines about it
 * (rate limited), replies and control messages, messages for its
 * messengers, a protocol error that ends it, the host losing its device.
 * Nothing here calls into another layer of the worker.
 */
#include "gpud_context.h"
#include "util_cpus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util_time.h"
#include "wire_control.h"

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
   const struct util_log_client who = {
      .id = ctx->info.id,
      .pid = (int)ctx->info.pid,
      .uid = (unsigned)ctx->info.uid,
      .name = ctx->info.name,
   };
   if (suppressed)
      util_log_client(level, &who, "%u lines about this client suppressed", suppressed);
   va_list ap;
   va_start(ap, fmt);
   util_log_clientv(level, &who, fmt, ap);
   va_end(ap);
}

void
gpud_context_end(struct gpud_context *ctx, bool fault, const char *reason)
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
      gpud_context_end(ctx, true, reason);
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
   Gpud__ControlMessage m;
   Gpud__Disconnect d;
   wire_control_disconnect(&m, &d, reason);
   gpud_context_send_control(ctx, &m);
   char why[600];
   snprintf(why, sizeof(why), "protocol error: %s", reason);
   gpud_context_end(ctx, true, why);
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
   gpud_context_tell_lost(ctx, reason);
}

void
gpud_context_tell_lost(struct gpud_context *ctx, const char *reason)
{
   gpud_context_debug_message(ctx, VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                              VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "gpud-device-lost", 0,
                              reason);
   if (ctx->ops.fault)
      ctx->ops.fault(ctx->ops.data, reason);
}

VkResult
gpud_context_reserve_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes)
{
   return ctx->ops.reserve_memory ? ctx->ops.reserve_memory(ctx->ops.data, heap, bytes, NULL)
                                  : VK_SUCCESS;
}

bool
gpud_context_memory_budget(struct gpud_context *ctx, struct gpud_memory_budget *budget)
{
   budget->n_heaps = 0;
   return ctx->ops.reserve_memory &&
          ctx->ops.reserve_memory(ctx->ops.data, 0, 0, budget) == VK_SUCCESS && budget->n_heaps;
}

void
gpud_context_release_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes)
{
   if (ctx->ops.release_memory && bytes)
      ctx->ops.release_memory(ctx->ops.data, heap, bytes);
}

uint64_t
gpud_context_inject_delay_ns(struct gpud_context *ctx)
{
   if (!ctx->status)
      return 0;
   return (uint64_t)atomic_load_explicit(&ctx->status->inject.delay_ms, memory_order_relaxed) *
          1000000ull;
}

/* ---- the CPUs of the worker's threads ------------------------------------------ */

void
gpud_context_keep_off_cpus(struct gpud_context *ctx, const cpu_set_t *avoid, const char *what)
{
   cpu_set_t allowed, keep;
   if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
      return;
   pthread_mutex_lock(&ctx->cpus_mutex);
   cpu_set_t avoided;
   CPU_OR(&avoided, &ctx->cpus_avoided, avoid);
   /* what the thread may use (the administrator's taskset or cpuset),
    * less every device's interrupt CPUs */
   CPU_XOR(&keep, &allowed, &avoided);
   CPU_AND(&keep, &keep, &allowed);
   bool apply = CPU_COUNT(&keep) >= 2 && !CPU_EQUAL(&keep, &allowed);
   if (apply && sched_setaffinity(0, sizeof(keep), &keep) == 0) {
      ctx->cpus = keep;
      ctx->cpus_avoided = avoided;
      atomic_fetch_add_explicit(&ctx->cpus_gen, 1, memory_order_release);
   } else {
      apply = false;
   }
   pthread_mutex_unlock(&ctx->cpus_mutex);
   if (apply) {
      char off[256], on[256];
      gpud_context_log(ctx, UTIL_LOG_INFO, "threads keep off CPU %s (%s's interrupts), on %s",
                       util_cpus_format(avoid, off, sizeof(off)), what,
                       util_cpus_format(&keep, on, sizeof(on)));
   }
}

void
gpud_context_follow_cpus(struct gpud_context *ctx, uint32_t *seen)
{
   uint32_t gen = atomic_load_explicit(&ctx->cpus_gen, memory_order_acquire);
   if (gen == *seen)
      return;
   pthread_mutex_lock(&ctx->cpus_mutex);
   cpu_set_t cpus = ctx->cpus;
   gen = atomic_load_explicit(&ctx->cpus_gen, memory_order_relaxed);
   pthread_mutex_unlock(&ctx->cpus_mutex);
   pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
   *seen = gen;
}
