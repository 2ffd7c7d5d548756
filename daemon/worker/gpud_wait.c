/* SPDX-License-Identifier: MIT */
/*
 * Blocking waits run on threads of their own, so a client's stream keeps
 * flowing while one of its threads waits: a timeline semaphore one thread
 * waits on can be signalled by the next command of another.  Waits on
 * fences and semaphores sleep in slices and stop when the client goes away
 * or destroys what they wait on.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_wait.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_limits.h"
#include "util_thread.h"
#include "util_time.h"

enum wait_kind {
   WAIT_FENCES,
   WAIT_SEMAPHORES,
   WAIT_QUEUE_IDLE,
   WAIT_DEVICE_IDLE,
   WAIT_QUERY,
};

struct gpud_waiter {
   struct util_list link; /* ctx->waiters */
   struct gpud_context *ctx;
   struct gpud_object *device;
   const struct gpud_host_dispatch *disp;
   enum wait_kind kind;
   uint32_t op;
   uint32_t seq;
   atomic_bool cancel;
   VkDevice dev;
   /* what is waited on (also what cancels the wait when destroyed) */
   uint32_t n_handles;
   uint64_t *handles;
   uint64_t *values;
   struct gpud_object **objs; /* fence or semaphore waits: their objects */
   gpud_wait_reached_fn reached;
   bool wait_all;
   VkSemaphoreWaitFlags sem_flags;
   uint64_t deadline_ns;
   /* queries */
   uint32_t first_query;
   uint32_t query_count;
   size_t data_size;
   size_t room;
   VkDeviceSize stride;
   VkQueryResultFlags query_flags;
   uint8_t *data;
};

static VkResult
wait_sliced(struct gpud_waiter *w)
{
   for (;;) {
      if (atomic_load(&w->cancel) || atomic_load(&w->ctx->closing) ||
          (w->device && atomic_load(&w->device->lost)))
         return VK_ERROR_DEVICE_LOST;
      uint64_t now = util_now_ns();
      uint64_t left = w->deadline_ns > now ? w->deadline_ns - now : 0;
      uint64_t slice = left < DAEMON_WAIT_SLICE_NS ? left : DAEMON_WAIT_SLICE_NS;
      VkResult r;
      if (w->kind == WAIT_FENCES) {
         r = w->disp->WaitForFences(w->dev, w->n_handles, (const VkFence *)w->handles,
                                    w->wait_all, slice);
      } else {
         VkSemaphoreWaitInfo info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            .flags = w->sem_flags,
            .semaphoreCount = w->n_handles,
            .pSemaphores = (const VkSemaphore *)w->handles,
            .pValues = w->values,
         };
         r = w->disp->WaitSemaphores(w->dev, &info, slice);
      }
      if (r != VK_TIMEOUT || left == slice)
         return r;
   }
}

/* gpudctl inject delay-completions: a wait that succeeded is answered
 * later (or times out first); the fences it saw signalled count as seen
 * for vkGetFenceStatus. */
static VkResult
delay_completion(struct gpud_waiter *w)
{
   uint64_t delay = gpud_context_inject_delay_ns(w->ctx);
   if (!delay)
      return VK_SUCCESS;
   VkResult r = VK_SUCCESS;
   uint64_t now = util_now_ns();
   uint64_t until = now + delay;
   if ((w->kind == WAIT_FENCES || w->kind == WAIT_SEMAPHORES) && until > w->deadline_ns) {
      until = w->deadline_ns;
      r = VK_TIMEOUT;
   }
   for (; now < until; now = util_now_ns()) {
      if (atomic_load(&w->cancel) || atomic_load(&w->ctx->closing))
         return VK_ERROR_DEVICE_LOST;
      uint64_t ns = until - now < 10000000 ? until - now : 10000000;
      struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ns};
      nanosleep(&ts, NULL);
   }
   for (uint32_t i = 0; r == VK_SUCCESS && w->kind == WAIT_FENCES && w->objs && i < w->n_handles;
        i++) {
      if (w->objs[i] &&
          w->disp->GetFenceStatus(w->dev, (VkFence)(uintptr_t)w->handles[i]) == VK_SUCCESS)
         atomic_store(&w->objs[i]->signal_seen_ns, 1);
   }
   return r;
}

static void
send_result(struct gpud_waiter *w, VkResult r)
{
   struct wire_enc e;
   wire_enc_init(&e);
   wire_enc_begin_cmd(&e, WIRE_OP_REPLY, 0, w->seq);
   switch (w->kind) {
   case WAIT_QUERY: {
      struct wire_args_vkGetQueryPoolResults a = {
         .dataSize = w->data_size,
         .pData = w->data,
         .pData_cap = (uint32_t)w->data_size,
         .ret = r,
      };
      wire_encreply_vkGetQueryPoolResults(&e, &a);
      break;
   }
   default:
      wire_enc_i32(&e, r);
      break;
   }
   wire_enc_end_cmd(&e, 0);
   /* a reply that cannot go out (the client stopped reading, no memory)
    * ends the client, as on the decoding thread */
   if (gpud_context_send_reply(w->ctx, &e, NULL, 0) < 0 && !atomic_load(&w->ctx->closing))
      gpud_context_end(w->ctx, false, "a reply could not be sent");
   wire_enc_finish(&e);
}

static void
waiter_free(struct gpud_waiter *w)
{
   free(w->handles);
   free(w->values);
   free(w->objs);
   free(w->data);
   free(w);
}

static void *
waiter_thread(void *data)
{
   struct gpud_waiter *w = data;
   VkResult r;
   switch (w->kind) {
   case WAIT_FENCES:
   case WAIT_SEMAPHORES:
      r = wait_sliced(w);
      break;
   case WAIT_QUEUE_IDLE:
      r = w->disp->QueueWaitIdle((VkQueue)(uintptr_t)w->handles[0]);
      break;
   case WAIT_DEVICE_IDLE:
      r = w->disp->DeviceWaitIdle(w->dev);
      break;
   case WAIT_QUERY:
      r = w->disp->GetQueryPoolResults(w->dev, (VkQueryPool)(uintptr_t)w->handles[0],
                                       w->first_query, w->query_count, w->room, w->data,
                                       w->stride, w->query_flags);
      break;
   default:
      r = VK_ERROR_UNKNOWN;
      break;
   }
   if (r == VK_SUCCESS && (w->kind == WAIT_QUEUE_IDLE || w->kind == WAIT_DEVICE_IDLE) &&
       w->device && atomic_load(&w->device->lost))
      r = VK_ERROR_DEVICE_LOST;
   if (r == VK_SUCCESS && w->kind != WAIT_QUERY)
      r = delay_completion(w);
   if (r == VK_SUCCESS && w->kind != WAIT_QUERY) {
      /* what the host said is on the page before the application hears it */
      gpud_queue_publish(w->device);
      if (w->reached && w->objs)
         w->reached(w->device, w->objs, w->n_handles);
   }
   if (r == VK_ERROR_DEVICE_LOST && !atomic_load(&w->cancel) && !atomic_load(&w->ctx->closing))
      gpud_context_host_lost(w->ctx, wire_op_name(w->op));
   if (!atomic_load(&w->ctx->closing))
      send_result(w, r);

   struct gpud_context *ctx = w->ctx;
   pthread_mutex_lock(&ctx->wait_mutex);
   util_list_remove(&w->link);
   ctx->n_waiters--;
   atomic_store(&ctx->status->waits, ctx->n_waiters);
   pthread_cond_broadcast(&ctx->wait_cond);
   pthread_mutex_unlock(&ctx->wait_mutex);
   waiter_free(w);
   return NULL;
}

static struct gpud_waiter *
waiter_new(struct gpud_call *call, enum wait_kind kind, uint32_t n_handles)
{
   struct gpud_waiter *w = calloc(1, sizeof(*w));
   if (!w)
      return NULL;
   w->handles = calloc(n_handles ? n_handles : 1, sizeof(uint64_t));
   w->values = calloc(n_handles ? n_handles : 1, sizeof(uint64_t));
   if (!w->handles || !w->values) {
      free(w->handles);
      free(w->values);
      free(w);
      return NULL;
   }
   util_list_init(&w->link);
   w->ctx = call->ctx;
   w->device = call->device;
   w->disp = call->disp;
   w->dev = (VkDevice)(uintptr_t)call->device->handle;
   w->kind = kind;
   w->op = call->op;
   w->seq = call->seq;
   w->n_handles = n_handles;
   atomic_init(&w->cancel, false);
   return w;
}

/* Starts w on its own thread; false when the client has too many waits
 * already, or no thread could be made (then the caller waits inline). */
static bool
waiter_start(struct gpud_call *call, struct gpud_waiter *w)
{
   struct gpud_context *ctx = call->ctx;
   if (!call->reply)
      return false;
   pthread_mutex_lock(&ctx->wait_mutex);
   if (ctx->n_waiters >= DAEMON_MAX_WAITERS) {
      pthread_mutex_unlock(&ctx->wait_mutex);
      return false;
   }
   util_list_add(&ctx->waiters, &w->link);
   ctx->n_waiters++;
   atomic_store(&ctx->status->waits, ctx->n_waiters);
   int r = util_thread_start_detached(waiter_thread, w);
   if (r != 0) {
      util_list_remove(&w->link);
      ctx->n_waiters--;
      atomic_store(&ctx->status->waits, ctx->n_waiters);
   }
   pthread_mutex_unlock(&ctx->wait_mutex);
   if (r != 0)
      return false;
   call->deferred = true;
   return true;
}

static uint64_t
deadline(uint64_t timeout)
{
   uint64_t now = util_now_ns();
   return timeout > UINT64_MAX - now ? UINT64_MAX : now + timeout;
}

void
gpud_wait_publish(struct gpud_call *call, VkObjectType type, const void *handles, uint32_t n,
                  gpud_wait_reached_fn reached)
{
   gpud_queue_publish(call->device);
   struct gpud_object *objs[64];
   for (uint32_t done = 0; done < n;) {
      uint32_t k = n - done < 64 ? n - done : 64;
      for (uint32_t i = 0; i < k; i++) {
         uint64_t h = type == VK_OBJECT_TYPE_FENCE
                         ? (uint64_t)(uintptr_t)((const VkFence *)handles)[done + i]
                         : (uint64_t)(uintptr_t)((const VkSemaphore *)handles)[done + i];
         objs[i] = gpud_call_named(call, type, h);
      }
      reached(call->device, objs, k);
      done += k;
   }
}

/* The objects of type named by handles, kept for reached once the wait is
 * over. */
static void
waiter_reaches(struct gpud_call *call, struct gpud_waiter *w, VkObjectType type,
               gpud_wait_reached_fn reached)
{
   w->objs = calloc(w->n_handles ? w->n_handles : 1, sizeof(*w->objs));
   for (uint32_t i = 0; w->objs && i < w->n_handles; i++)
      w->objs[i] = gpud_call_named(call, type, w->handles[i]);
   w->reached = reached;
}

/* w started, or freed where it could not be. */
static bool
started(struct gpud_call *call, struct gpud_waiter *w)
{
   if (waiter_start(call, w))
      return true;
   waiter_free(w);
   return false;
}

bool
gpud_wait_fences(struct gpud_call *call, const VkFence *fences, uint32_t n, bool wait_all,
                 uint64_t timeout, gpud_wait_reached_fn reached, VkResult *ret)
{
   struct gpud_waiter *w = waiter_new(call, WAIT_FENCES, n);
   if (!w) {
      *ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return true;
   }
   for (uint32_t i = 0; i < n; i++)
      w->handles[i] = (uint64_t)(uintptr_t)fences[i];
   waiter_reaches(call, w, VK_OBJECT_TYPE_FENCE, reached);
   w->wait_all = wait_all;
   w->deadline_ns = deadline(timeout);
   return started(call, w);
}

bool
gpud_wait_semaphores(struct gpud_call *call, const VkSemaphoreWaitInfo *info, uint64_t timeout,
                     gpud_wait_reached_fn reached, VkResult *ret)
{
   struct gpud_waiter *w = waiter_new(call, WAIT_SEMAPHORES, info->semaphoreCount);
   if (!w) {
      *ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return true;
   }
   for (uint32_t i = 0; i < info->semaphoreCount; i++) {
      w->handles[i] = (uint64_t)(uintptr_t)info->pSemaphores[i];
      w->values[i] = info->pValues[i];
   }
   waiter_reaches(call, w, VK_OBJECT_TYPE_SEMAPHORE, reached);
   w->sem_flags = info->flags;
   w->deadline_ns = deadline(timeout);
   return started(call, w);
}

bool
gpud_wait_queue_idle(struct gpud_call *call, VkQueue queue)
{
   struct gpud_waiter *w = waiter_new(call, WAIT_QUEUE_IDLE, 1);
   if (!w)
      return false;
   w->handles[0] = (uint64_t)(uintptr_t)queue;
   return started(call, w);
}

bool
gpud_wait_device_idle(struct gpud_call *call)
{
   struct gpud_waiter *w = waiter_new(call, WAIT_DEVICE_IDLE, 0);
   return w && started(call, w);
}

bool
gpud_wait_query(struct gpud_call *call, const struct wire_args_vkGetQueryPoolResults *a)
{
   struct gpud_waiter *w = waiter_new(call, WAIT_QUERY, 1);
   size_t room = a->dataSize;
   uint64_t need = a->queryCount ? (uint64_t)(a->queryCount - 1) * a->stride + 12 * 8 : 0;
   if (need > room)
      room = need;
   if (w)
      w->data = calloc(1, room ? room : 1);
   if (!w || !w->data) {
      if (w)
         waiter_free(w);
      return false;
   }
   w->handles[0] = (uint64_t)(uintptr_t)a->queryPool;
   w->first_query = a->firstQuery;
   w->query_count = a->queryCount;
   w->data_size = a->dataSize;
   w->room = room;
   w->stride = a->stride;
   w->query_flags = a->flags;
   return started(call, w);
}

void
gpud_waiters_cancel(struct gpud_context *ctx, struct gpud_object *device, uint64_t handle)
{
   pthread_mutex_lock(&ctx->wait_mutex);
   for (;;) {
      bool busy = false;
      struct gpud_waiter *w;
      util_list_for_each(w, &ctx->waiters, link) {
         if (device && w->device != device)
            continue;
         bool match = handle == 0;
         for (uint32_t i = 0; !match && i < w->n_handles; i++)
            match = w->handles[i] == handle;
         if (!match)
            continue;
         atomic_store(&w->cancel, true);
         busy = true;
      }
      if (!busy)
         break;
      pthread_cond_wait(&ctx->wait_cond, &ctx->wait_mutex);
   }
   pthread_mutex_unlock(&ctx->wait_mutex);
}
