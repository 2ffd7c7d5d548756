/* SPDX-License-Identifier: MIT */
/*
 * Queues: the application's submissions, each with a fence of gpud's own
 * for the tracker (gpud_track.c) and what it changes on the completion page
 * gathered first, timestamps around some, the copies the worker makes
 * itself instead (gpud_transfer.c), the worker's own submissions, and a
 * queue settled before what its submissions waited on goes.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_sched_worker.h"
#include "gpud_timing.h"
#include "gpud_track.h"
#include "gpud_transfer.h"
#include "gpud_wait.h"

#include <stdlib.h>
#include <string.h>

#include "gpud_gen.h"
#include "util_env.h"
#include "util_macros.h"
#include "util_time.h"
#include "util_trace.h"
#include "wire_completion.h"

/* gpud_queue_settle waits in slices this long (the device may be lost
 * meanwhile). */
#define SETTLE_SLICE_NS (10ull * 1000 * 1000)

/* ---- the submits --------------------------------------------------------- */

/* Grows a gather list by one (false: no memory; the entry goes untold). */
static bool
gather_grow(void **list, unsigned n, unsigned *cap, size_t size)
{
   if (n < *cap)
      return true;
   unsigned grown = *cap ? *cap * 2 : 4;
   void *l = realloc(*list, grown * size);
   if (!l)
      return false;
   *list = l;
   *cap = grown;
   return true;
}

/* A tracked timeline semaphore a submit signals, with its value. */
static void
gather_signal(struct gpud_call *call, struct track_gather *g, VkSemaphore semaphore,
              uint64_t value)
{
   struct gpud_object *sem =
      gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)semaphore);
   if (!sem || !sem->semaphore_tracked ||
       !gather_grow((void **)&g->signals, g->n_signals, &g->cap_signals, sizeof(*g->signals)))
      return;
   g->signals[g->n_signals++] = (struct track_signal){
      .slot = sem->semaphore_slot, .owner = sem->id, .value = value};
}

/* The tracked events a submitted command buffer sets or resets and the
 * query pools with a page whose queries it changes (what the lists cannot
 * hold is asked about from now on). */
static void
gather_watched(struct gpud_call *call, struct track_gather *g, VkCommandBuffer cb,
               struct gpud_device_track *t)
{
   const struct gpud_object *cmd =
      gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)cb);
   if (!g->key)
      g->key = (uint64_t)(uintptr_t)cb;
   for (uint32_t i = 0; cmd && i < cmd->n_cmd_watched; i++) {
      struct gpud_object *obj = gpud_object_find(call->ctx, cmd->cmd_watched[i]);
      if (obj && obj->type == VK_OBJECT_TYPE_QUERY_POOL && obj->query_page) {
         if (gather_grow((void **)&g->pools, g->n_pools, &g->cap_pools, sizeof(*g->pools))) {
            g->pools[g->n_pools++] = obj->id;
         } else {
            pthread_mutex_lock(&t->mutex);
            gpud_track_pool_write(t, obj->id, 0, true, false);
            pthread_mutex_unlock(&t->mutex);
         }
         continue;
      }
      if (!obj || obj->type != VK_OBJECT_TYPE_EVENT || !obj->event_tracked)
         continue;
      if (!gather_grow((void **)&g->events, g->n_events, &g->cap_events, sizeof(*g->events))) {
         pthread_mutex_lock(&t->mutex);
         gpud_track_event_write(t, obj->event_slot, obj->id, VK_NULL_HANDLE, 0, true, EVENT_KEEP, 0);
         pthread_mutex_unlock(&t->mutex);
         continue;
      }
      g->events[g->n_events++] = (struct track_event){
         .slot = obj->event_slot, .owner = obj->id, .event = (VkEvent)(uintptr_t)obj->handle};
   }
}

static const VkTimelineSemaphoreSubmitInfo *
timeline_info(const void *pnext)
{
   for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
      if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
         return (const VkTimelineSemaphoreSubmitInfo *)s;
   }
   return NULL;
}

/* The signals of n batches of VkSubmitInfo or VkBindSparseInfo shape. */
#define GATHER_SIGNALS(batches, count)                                                      \
   for (uint32_t i = 0; i < (count); i++) {                                                 \
      const VkTimelineSemaphoreSubmitInfo *tl = timeline_info((batches)[i].pNext);         \
      for (uint32_t j = 0; tl && tl->pSignalSemaphoreValues &&                              \
                         j < (batches)[i].signalSemaphoreCount &&                           \
                         j < tl->signalSemaphoreValueCount;                                 \
           j++)                                                                             \
         gather_signal(call, g, (batches)[i].pSignalSemaphores[j],                          \
                       tl->pSignalSemaphoreValues[j]);                                      \
   }

static void
gather_vkQueueSubmit(struct gpud_call *call, const struct wire_args_vkQueueSubmit *a,
                     struct gpud_device_track *t, struct track_gather *g)
{
   GATHER_SIGNALS(a->pSubmits, a->submitCount)
   for (uint32_t i = 0; t && i < a->submitCount; i++) {
      for (uint32_t j = 0; j < a->pSubmits[i].commandBufferCount; j++)
         gather_watched(call, g, a->pSubmits[i].pCommandBuffers[j], t);
   }
}

static void
gather_vkQueueBindSparse(struct gpud_call *call, const struct wire_args_vkQueueBindSparse *a,
                         struct gpud_device_track *t, struct track_gather *g)
{
   (void)t;
   GATHER_SIGNALS(a->pBindInfo, a->bindInfoCount)
}

static void
gather_vkQueueSubmit2(struct gpud_call *call, const struct wire_args_vkQueueSubmit2 *a,
                      struct gpud_device_track *t, struct track_gather *g)
{
   for (uint32_t i = 0; i < a->submitCount; i++) {
      const VkSubmitInfo2 *s = &a->pSubmits[i];
      for (uint32_t j = 0; j < s->signalSemaphoreInfoCount; j++)
         gather_signal(call, g, s->pSignalSemaphoreInfos[j].semaphore,
                       s->pSignalSemaphoreInfos[j].value);
      for (uint32_t j = 0; t && j < s->commandBufferInfoCount; j++)
         gather_watched(call, g, s->pCommandBufferInfos[j].commandBuffer, t);
   }
}

/* ---- the semaphores a submission waits on ---- */

/* Each remembers the submission (gpud_exec_vkDestroySemaphore). */
static void
waited(struct gpud_call *call, VkSemaphore semaphore, const struct gpud_object *queue)
{
   struct gpud_object *sem =
      gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)semaphore);
   if (!sem)
      return;
   sem->sem_waited_queue = queue->id;
   sem->sem_waited_seq = queue->host_submits;
}

static void
waited_vkQueueSubmit(struct gpud_call *call, const struct wire_args_vkQueueSubmit *a,
                     const struct gpud_object *queue)
{
   for (uint32_t i = 0; i < a->submitCount; i++) {
      for (uint32_t j = 0; j < a->pSubmits[i].waitSemaphoreCount; j++)
         waited(call, a->pSubmits[i].pWaitSemaphores[j], queue);
   }
}

static void
waited_vkQueueSubmit2(struct gpud_call *call, const struct wire_args_vkQueueSubmit2 *a,
                      const struct gpud_object *queue)
{
   for (uint32_t i = 0; i < a->submitCount; i++) {
      for (uint32_t j = 0; j < a->pSubmits[i].waitSemaphoreInfoCount; j++)
         waited(call, a->pSubmits[i].pWaitSemaphoreInfos[j].semaphore, queue);
   }
}

static void
waited_vkQueueBindSparse(struct gpud_call *call, const struct wire_args_vkQueueBindSparse *a,
                         const struct gpud_object *queue)
{
   for (uint32_t i = 0; i < a->bindInfoCount; i++) {
      for (uint32_t j = 0; j < a->pBindInfo[i].waitSemaphoreCount; j++)
         waited(call, a->pBindInfo[i].pWaitSemaphores[j], queue);
   }
}

/* ---- timestamps around a submission (gpud_timing.h) ---- */

/* What a submit was before its batches got gpud's timing command buffers,
 * to put back once the host has it. */
struct timed_vkQueueSubmit {
   const VkSubmitInfo *submits;
   VkSubmitInfo *copy;
   VkCommandBuffer *cbs;
};
struct timed_vkQueueSubmit2 {
   const VkSubmitInfo2 *submits;
   VkSubmitInfo2 *copy;
   VkCommandBufferSubmitInfo *cbs;
};
struct timed_vkQueueBindSparse {
   int unused;
};

/* Whether a batch's chain names its command buffers one by one (device
 * groups) or asks for protected work: no command buffers of gpud's there. */
static bool
chain_forbids_timing(const void *pnext)
{
   for (const VkBaseInStructure *c = pnext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO)
         return true;
      if (c->sType == VK_STRUCTURE_TYPE_PROTECTED_SUBMIT_INFO &&
          ((const VkProtectedSubmitInfo *)c)->protectedSubmit)
         return true;
   }
   return false;
}

/* (a submit with no command buffers, semaphores alone, takes no GPU time
 * worth two of gpud's around it) */
static bool
timed_vkQueueSubmit(const struct wire_args_vkQueueSubmit *a)
{
   bool any = false;
   for (uint32_t i = 0; i < a->submitCount; i++) {
      if (chain_forbids_timing(a->pSubmits[i].pNext))
         return false;
      any |= a->pSubmits[i].commandBufferCount > 0;
   }
   return any;
}

static bool
timed_vkQueueSubmit2(const struct wire_args_vkQueueSubmit2 *a)
{
   bool any = false;
   for (uint32_t i = 0; i < a->submitCount; i++) {
      if ((a->pSubmits[i].flags & VK_SUBMIT_PROTECTED_BIT) ||
          chain_forbids_timing(a->pSubmits[i].pNext))
         return false;
      any |= a->pSubmits[i].commandBufferInfoCount > 0;
   }
   return any;
}

static bool
timed_vkQueueBindSparse(const struct wire_args_vkQueueBindSparse *a)
{
   (void)a;
   return false; /* no command buffers to put timestamps around */
}

/* time_CMD: the submit's batches copied, the first beginning with cbs[0]
 * and the last ending with cbs[1] (a command buffer of theirs made by
 * ELEM); untime_CMD: the application's batches back once the host has it.
 * batch_t: the batch's type, elem_t: a command buffer's in it, COUNT and
 * LIST: the batch's members that list them. */
#define TIMED_SUBMIT(cmd, batch_t, elem_t, COUNT, LIST, ELEM)                               \
   static bool time_##cmd(struct wire_args_##cmd *a, const VkCommandBuffer cbs[2],         \
                          struct timed_##cmd *saved)                                        \
   {                                                                                        \
      const uint32_t n = a->submitCount, last = n - 1;                                      \
      size_t n_cbs = 2;                                                                     \
      n_cbs += a->pSubmits[0].COUNT;                                                        \
      if (last)                                                                             \
         n_cbs += a->pSubmits[last].COUNT;                                                  \
      saved->copy = malloc(n * sizeof(*saved->copy));                                       \
      saved->cbs = malloc(n_cbs * sizeof(*saved->cbs));                                     \
      if (!saved->copy || !saved->cbs) {                                                    \
         free(saved->copy);                                                                 \
         free(saved->cbs);                                                                  \
         return false;                                                                      \
      }                                                                                     \
      memcpy(saved->copy, a->pSubmits, n * sizeof(*saved->copy));                           \
      elem_t *p = saved->cbs;                                                               \
      for (uint32_t i = 0; i < n; i += last ? last : 1) {                                   \
         batch_t *b = &saved->copy[i];                                                      \
         elem_t *mine = p;                                                                  \
         if (i == 0)                                                                        \
            *p++ = ELEM(cbs[0]);                                                            \
         if (b->COUNT)                                                                      \
            memcpy(p, b->LIST, b->COUNT * sizeof(*p));                                      \
         p += b->COUNT;                                                                     \
         if (i == last)                                                                     \
            *p++ = ELEM(cbs[1]);                                                            \
         b->COUNT = (uint32_t)(p - mine);                                                   \
         b->LIST = mine;                                                                    \
      }                                                                                     \
      saved->submits = a->pSubmits;                                                         \
      a->pSubmits = saved->copy;                                                            \
      return true;                                                                          \
   }                                                                                        \
                                                                                            \
   static void untime_##cmd(struct wire_args_##cmd *a, struct timed_##cmd *saved)          \
   {                                                                                        \
      a->pSubmits = saved->submits;                                                         \
      free(saved->copy);                                                                    \
      free(saved->cbs);                                                                     \
   }

#define CB_ITSELF(cb) (cb)
#define CB_SUBMIT_INFO(cb)                                                                  \
   ((VkCommandBufferSubmitInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,       \
                                .commandBuffer = (cb)})

TIMED_SUBMIT(vkQueueSubmit, VkSubmitInfo, VkCommandBuffer, commandBufferCount, pCommandBuffers,
             CB_ITSELF)
TIMED_SUBMIT(vkQueueSubmit2, VkSubmitInfo2, VkCommandBufferSubmitInfo, commandBufferInfoCount,
             pCommandBufferInfos, CB_SUBMIT_INFO)

static bool
time_vkQueueBindSparse(struct wire_args_vkQueueBindSparse *a, const VkCommandBuffer cbs[2],
                       struct timed_vkQueueBindSparse *saved)
{
   (void)a;
   (void)cbs;
   (void)saved;
   return false;
}

static void
untime_vkQueueBindSparse(struct wire_args_vkQueueBindSparse *a,
                         struct timed_vkQueueBindSparse *saved)
{
   (void)a;
   (void)saved;
}

/* GPUD_FENCE_IN_PLACE=off in the daemon's environment: an empty submission
 * with gpud's fence after each submission that names a fence of the
 * application's, as before (to compare). */
static bool
fence_in_place_off(void)
{
   static int off = -1;
   if (off < 0)
      off = util_env_off("GPUD_FENCE_IN_PLACE");
   return off;
}

/* Runs a submit with tracking: fence is the application's (a pointer into
 * the args, swapped for gpud's own while the host runs the submit when the
 * application named none, or one the page answers for: "Fences in place"
 * in docs/architecture.md).  The events it changes are pending on the page
 * before the host has it. */
#define TRACKED_SUBMIT(cmd, fence_covers_earlier)                                           \
   void gpud_exec_##cmd(struct gpud_call *call, struct wire_args_##cmd *a)                 \
   {                                                                                        \
      struct gpud_object *queue =                                                           \
         gpud_call_named(call, VK_OBJECT_TYPE_QUEUE, (uint64_t)(uintptr_t)a->queue);        \
      struct gpud_queue_track *q = queue ? queue->track : NULL;                             \
      struct gpud_device_track *dt = queue && queue->device ? queue->device->dtrack : NULL; \
      struct gpud_device_track *t = q ? dt : NULL;                                          \
      const struct gpud_object *app_fence =                                                 \
         a->fence ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence) \
                  : NULL;                                                                   \
      struct track_gather g = {0};                                                          \
      /* after the worker's own copies on other queues (gpud_queue_submit_own) */          \
      if (dt)                                                                               \
         gpud_queue_own_wait(queue->device, queue);                                         \
      /* copies the worker makes itself (gpud_transfer.c) */                               \
      if (q && cpu_##cmd(call, a))                                                          \
         return;                                                                            \
      uint64_t t0 = call->ctx->profile ? util_now_ns() : 0;                                 \
      /* its turn on the GPU first (gpud_sched.c), before any lock of the tracker */        \
      gpud_sched_admit(call->ctx->sched);                                                   \
      gather_##cmd(call, a, dt, &g);                                                        \
      if (dt && !t)                                                                         \
         untracked_watched(dt, &g);                                                         \
      int timing = -1;                                                                      \
      VkCommandBuffer timing_cbs[2];                                                        \
      bool timed = timed_##cmd(a) && gpud_sched_timed(call->ctx->sched);                    \
      VkFence fence = t ? gpud_track_begin(t, q, &g, timed, &timing, &timing_cbs[0],             \
                                      &timing_cbs[1])                                       \
                        : VK_NULL_HANDLE;                                                   \
      /* gpud's fence in place of the application's where the page answers for              \
       * it (its own is owed: gpud_queue_fence_settle) */                                   \
      VkFence app_host_fence = a->fence;                                                    \
      bool in_place = fence && a->fence && app_fence && app_fence->fence_tracked &&         \
                      !app_fence->fence_external && !fence_in_place_off() &&                \
                      (fence_covers_earlier);                                               \
      bool own = fence && (!a->fence || in_place) && (fence_covers_earlier);                \
      if (own)                                                                              \
         a->fence = fence;                                                                  \
      struct timed_##cmd saved = {0};                                                       \
      if (timing >= 0 && !time_##cmd(a, timing_cbs, &saved)) {                              \
         pthread_mutex_lock(&t->mutex);                                                     \
         gpud_timing_drop(q->timing, timing);                                               \
         pthread_mutex_unlock(&t->mutex);                                                   \
         timing = -1;                                                                       \
      }                                                                                     \
      uint64_t began_ns = util_now_ns();                                                    \
      struct gpud_profile *prof = call->ctx->profile;                                       \
      uint64_t pt[4] = {began_ns};                                                          \
      util_trace(UTIL_TRACE_HOST_SUBMIT, 0);                                                \
      gpud_gen_exec_##cmd(call, a);                                                         \
      util_trace(UTIL_TRACE_HOST_SUBMITTED, 0);                                             \
      if (prof)                                                                             \
         pt[1] = util_now_ns();                                                             \
      if (timing >= 0)                                                                      \
         untime_##cmd(a, &saved);                                                           \
      if (own)                                                                              \
         a->fence = app_host_fence;                                                         \
      bool used = own && a->ret == VK_SUCCESS;                                              \
      if (in_place && used)                                                                 \
         ((struct gpud_object *)app_fence)->fence_owed_queue = a->queue;                    \
      if (fence && !own && a->ret == VK_SUCCESS)                                            \
         used = t->disp->QueueSubmit(a->queue, 0, NULL, fence) == VK_SUCCESS;              \
      if (prof)                                                                             \
         pt[2] = util_now_ns();                                                             \
      if (!fence || !used)                                                                  \
         gpud_sched_dropped(call->ctx->sched); /* nothing charges it at its end */         \
      if (t) {                                                                              \
         gpud_track_end(t, q, fence, a->ret == VK_SUCCESS, used, app_fence, &g, timing,          \
                   began_ns, true);                                                         \
      } else {                                                                              \
         if (app_fence)                                                                     \
            gpud_queue_fence_ask((struct gpud_object *)app_fence);                          \
         untracked_signals(call, g.signals, g.n_signals);                                   \
      }                                                                                     \
      if (queue && a->ret == VK_SUCCESS) {                                                  \
         queue->host_submits++;                                                             \
         waited_##cmd(call, a, queue);                                                      \
      }                                                                                     \
      if (prof) {                                                                           \
         pt[3] = util_now_ns();                                                             \
         prof->submit_ns[0] += began_ns - t0;                                               \
         for (unsigned i = 1; i < 4; i++)                                                   \
            prof->submit_ns[i] += pt[i] - pt[i - 1];                                        \
         prof->submits++;                                                                   \
      }                                                                                     \
   }

static void untracked_signals(struct gpud_call *call, struct track_signal *signals,
                              unsigned n_signals);

/* A queue without a tracker (it ran out of memory): what the submission
 * changes is asked about from now on. */
static void
untracked_watched(struct gpud_device_track *t, struct track_gather *g)
{
   pthread_mutex_lock(&t->mutex);
   t->unsettled = true; /* the page cannot say when it ends */
   if (gpud_track_watched_submitted(t, g->events, g->n_events, g->pools, g->n_pools, false))
      gpud_completion_wake(t->page);
   pthread_mutex_unlock(&t->mutex);
   free(g->events);
   free(g->pools);
   g->events = NULL;
   g->pools = NULL;
   g->n_events = g->n_pools = 0;
}

/* A submit's fence signals once all earlier work on the queue is done; a
 * sparse bind's covers the bind alone: gpud's own submit follows it. */
#define cpu_vkQueueSubmit gpud_transfer_submit
#define cpu_vkQueueSubmit2 gpud_transfer_submit2
static bool
cpu_vkQueueBindSparse(struct gpud_call *call, struct wire_args_vkQueueBindSparse *a)
{
   return false;
}

TRACKED_SUBMIT(vkQueueSubmit, true)
TRACKED_SUBMIT(vkQueueSubmit2, true)
TRACKED_SUBMIT(vkQueueBindSparse, false)

/* With the mutex held: copies made outside the host (by the worker, the
 * ICD, or the worker on the GPU) are done.  They had the queue busy, and
 * were its work, for ns, and count as one submission more.  Counted only
 * while nothing is in flight on the queue: otherwise its busy time runs
 * already, and its submissions count in order (a race of the application's
 * threads, rare).  submission: one of those the ICD counts (the page's
 * `settled`).  The application's fence (tracked on the page, or none) is
 * raised there, answered for by the worker while the host's stays
 * unsignalled. */
static void
copies_done(struct gpud_device_track *t, struct gpud_queue_track *q,
            struct gpud_object *app_fence, bool submission, uint64_t ns)
{
   if (q && !q->count) {
      q->submitted++;
      q->completed = q->submitted;
      q->busy_ns += ns;
      q->gpu_ns += ns;
      q->last_done_ns = UTIL_MAX(q->last_done_ns, util_now_ns());
      gpud_track_publish(q);
   }
   if (submission)
      t->processed++;
   gpud_track_settle(t);
   if (app_fence && app_fence->fence_tracked) {
      atomic_store(&app_fence->fence_cpu_signaled, true);
      if (gpud_track_page_write(t, (int32_t)app_fence->fence_slot, app_fence->id,
                     gpud_fence_value(app_fence->fence_generation, 1)))
         gpud_completion_wake(t->page);
   }
}

bool
gpud_queue_run_idle(struct gpud_object *queue, struct gpud_object *app_fence, bool submission,
                    uint64_t more_ns, bool (*run)(void *data), void *data)
{
   struct gpud_queue_track *q = queue->track;
   struct gpud_device_track *t = queue->device ? queue->device->dtrack : NULL;
   if (!q || !t || (app_fence && !app_fence->fence_tracked) ||
       gpud_context_inject_delay_ns(t->ctx))
      return false;
   pthread_mutex_lock(&t->mutex);
   bool idle = !t->lost && t->page;
   struct gpud_queue_track *other;
   util_list_for_each(other, &t->queues, link)
      idle &= other->count == 0;
   /* (the tracker retires nothing while nothing is in flight: the copies
    * run under its lock, as short as they are) */
   uint64_t began = util_now_ns();
   if (!idle || !run(data)) {
      pthread_mutex_unlock(&t->mutex);
      return false;
   }
   copies_done(t, q, app_fence, submission, util_now_ns() - began + more_ns);
   pthread_mutex_unlock(&t->mutex);
   return true;
}

void
gpud_queue_ran(struct gpud_object *queue, struct gpud_object *app_fence, bool submission,
               uint64_t ns)
{
   struct gpud_device_track *t = queue->device ? queue->device->dtrack : NULL;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   copies_done(t, queue->track, app_fence, submission, ns);
   pthread_mutex_unlock(&t->mutex);
}

/* ---- the worker's own submissions --------------------------------------- */

VkResult
gpud_queue_submit_own(struct gpud_call *call, struct gpud_object *queue, VkCommandBuffer cb,
                      struct gpud_object *app_fence, bool counted, uint64_t *ret_seq)
{
   struct gpud_queue_track *q = queue->track;
   struct gpud_device_track *t = queue->device ? queue->device->dtrack : NULL;
   if (!q || !t || (app_fence && !app_fence->fence_tracked) ||
       gpud_context_inject_delay_ns(t->ctx))
      return VK_NOT_READY;
   /* what the worker wrote on other queues first (as for the
    * application's submissions) */
   gpud_queue_own_wait(queue->device, queue);
   gpud_sched_admit(call->ctx->sched);
   struct track_gather g = {0};
   int timing;
   VkCommandBuffer unused[2];
   VkFence fence = gpud_track_begin(t, q, &g, false, &timing, &unused[0], &unused[1]);
   if (!fence) {
      gpud_sched_dropped(call->ctx->sched);
      return VK_NOT_READY; /* (nothing to undo) */
   }
   const VkSubmitInfo si = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cb,
   };
   uint64_t began = util_now_ns();
   VkResult r = t->disp->QueueSubmit(q->queue, 1, &si, fence);
   bool ok = r == VK_SUCCESS;
   gpud_track_end(t, q, fence, ok, ok, app_fence, &g, -1, began, ok && counted);
   if (!ok) {
      gpud_sched_dropped(call->ctx->sched);
      return r;
   }
   pthread_mutex_lock(&t->mutex);
   *ret_seq = q->own_seq = q->submitted;
   atomic_store(&t->own_pending, true);
   pthread_mutex_unlock(&t->mutex);
   if (!t->own_listed) {
      t->own_listed = true;
      t->own_next = call->ctx->own_devices;
      call->ctx->own_devices = t;
   }
   return VK_SUCCESS;
}

VkFence
gpud_queue_marker(struct gpud_object *queue, uint64_t *ret_through)
{
   struct gpud_object *device = queue->device;
   if (!device || atomic_load(&device->lost))
      return VK_NULL_HANDLE;
   const struct gpud_host_dispatch *d = device->disp;
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   if (d->CreateFence(dev, &info, NULL, &fence) != VK_SUCCESS)
      return VK_NULL_HANDLE;
   if (d->QueueSubmit((VkQueue)(uintptr_t)queue->handle, 0, NULL, fence) != VK_SUCCESS) {
      d->DestroyFence(dev, fence, NULL);
      return VK_NULL_HANDLE;
   }
   *ret_through = queue->host_submits;
   return fence;
}

void
gpud_queue_settled(struct gpud_object *queue, uint64_t through)
{
   if (queue->host_settled < through)
      queue->host_settled = through;
}

bool
gpud_queue_settle(struct gpud_object *queue, uint64_t budget_ns)
{
   uint64_t through;
   VkFence fence = gpud_queue_marker(queue, &through);
   if (!fence)
      return false;
   struct gpud_object *device = queue->device;
   const struct gpud_host_dispatch *d = device->disp;
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   const uint64_t until = util_now_ns() + budget_ns;
   VkResult r;
   do
      r = d->WaitForFences(dev, 1, &fence, VK_TRUE, SETTLE_SLICE_NS);
   while (r == VK_TIMEOUT && !atomic_load(&device->lost) && util_now_ns() < until);
   /* one still pending is left to the device */
   if (r == VK_SUCCESS || d->GetFenceStatus(dev, fence) != VK_NOT_READY)
      d->DestroyFence(dev, fence, NULL);
   if (r == VK_SUCCESS)
      gpud_queue_settled(queue, through);
   return r == VK_SUCCESS;
}

bool
gpud_queue_done(struct gpud_object *queue, uint64_t seq)
{
   struct gpud_device_track *t = queue->device ? queue->device->dtrack : NULL;
   if (!t || !queue->track)
      return true;
   pthread_mutex_lock(&t->mutex);
   bool done = queue->track->completed >= seq || t->lost;
   pthread_mutex_unlock(&t->mutex);
   return done;
}

void
gpud_queue_own_wait(struct gpud_object *device, const struct gpud_object *except)
{
   struct gpud_device_track *t = device ? device->dtrack : NULL;
   if (!t || !atomic_load_explicit(&t->own_pending, memory_order_acquire))
      return;
   const struct gpud_queue_track *skip = except ? except->track : NULL;
   pthread_mutex_lock(&t->mutex);
   bool left = false;
   struct gpud_queue_track *q;
   util_list_for_each(q, &t->queues, link) {
      if (q == skip) {
         left |= q->own_seq > q->completed;
         continue;
      }
      /* (in slices: a device lost elsewhere, a client leaving) */
      while (q->own_seq > q->completed && !t->lost && !t->stop && !atomic_load(&device->lost) &&
             !atomic_load(&t->ctx->closing)) {
         const struct timespec until = util_realtime_after(1000000);
         pthread_cond_timedwait(&t->retired, &t->mutex, &until);
      }
   }
   atomic_store(&t->own_pending, left);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_own_settle(struct gpud_context *ctx)
{
   while (ctx->own_devices) {
      struct gpud_device_track *t = ctx->own_devices;
      ctx->own_devices = t->own_next;
      t->own_next = NULL;
      t->own_listed = false;
      gpud_queue_own_wait(t->device, NULL);
   }
}

/* Semaphores of a submission no tracker follows: the host driver tells. */
static void
untracked_signals(struct gpud_call *call, struct track_signal *signals, unsigned n_signals)
{
   for (unsigned i = 0; i < n_signals; i++) {
      struct gpud_object *sem = gpud_object_find(call->ctx, signals[i].owner);
      if (sem && sem->type == VK_OBJECT_TYPE_SEMAPHORE)
         gpud_queue_semaphore_gone(sem, true);
   }
   free(signals);
}

/* ---- a lost device -------------------------------------------------------- */

void
gpud_call_async_error(struct gpud_call *call, VkResult result)
{
   /* Nobody waits for this result: the device is lost from now on, and
    * every later call on it says so (a device lost already says nothing
    * more). */
   if (call->device && call->device->lost)
      return;
   gpud_context_log(call->ctx, UTIL_LOG_WARNING, "%s failed (%d): device lost",
                    wire_op_name(call->op), result);
   char why[160];
   snprintf(why, sizeof(why), "%s failed on the host (%d): the device is lost",
            wire_op_name(call->op), result);
   gpud_context_debug_message(call->ctx, VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                              VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, "gpud-device-lost", 0,
                              why);
   if (call->device) {
      call->device->lost = true;
      gpud_queue_device_lost(call->device);
   }
   if (result == VK_ERROR_DEVICE_LOST)
      gpud_context_host_lost(call->ctx, wire_op_name(call->op));
}

void
gpud_call_host_lost(struct gpud_call *call)
{
   if (call->device) {
      call->device->lost = true;
      gpud_queue_device_lost(call->device);
   }
   gpud_context_host_lost(call->ctx, wire_op_name(call->op));
}

/* A wait on a thread of its own (gpud_wait.c). */
void
gpud_exec_vkQueueWaitIdle(struct gpud_call *call, struct wire_args_vkQueueWaitIdle *a)
{
   if (gpud_wait_queue_idle(call, a->queue))
      return;
   gpud_gen_exec_vkQueueWaitIdle(call, a);
   if (a->ret == VK_SUCCESS)
      gpud_queue_publish(call->device);
}
