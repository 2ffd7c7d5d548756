/* SPDX-License-Identifier: MIT */
/*
 * Fences: the slot of each on its device's completion page (the ICD hands
 * them out, the worker writes them), their own signals owed to the host,
 * and those the host says are signalled published.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"
#include "gpud_wait.h"

#include <stdlib.h>

#include "gpud_gen.h"
#include "util_time.h"
#include "wire_completion.h"

/* A fence's payload may leave as a sync file or an fd: then its state is the
 * host's to tell, which the worker's own copies never signal. */
void
gpud_exec_vkCreateFence(struct gpud_call *call, struct wire_args_vkCreateFence *a)
{
   const VkExportFenceCreateInfo *e =
      gpud_chain_find(a->pCreateInfo->pNext, VK_STRUCTURE_TYPE_EXPORT_FENCE_CREATE_INFO);
   call->new_external = e && e->handleTypes;
   gpud_gen_exec_vkCreateFence(call, a);
}

void
gpud_exec_vkSetFenceSlotGPUD(struct gpud_call *call, struct wire_args_vkSetFenceSlotGPUD *a)
{
   struct gpud_object *fence =
      gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence);
   struct gpud_device_track *t = call->device ? call->device->dtrack : NULL;
   /* a slot past the page: the fence is asked about (the ICD's own
    * business, nothing of the daemon's at stake) */
   if (!fence || !t || a->slot >= GPUD_COMPLETION_FENCE_SLOTS)
      return;
   struct gpud_object *settle = NULL; /* the fence the slot was, now asked about */
   pthread_mutex_lock(&t->mutex);
   if (t->page && !fence->fence_tracked) {
      /* the ICD hands out the slots: a slot it gives again is no longer
       * the earlier fence's */
      struct gpud_object *earlier =
         t->owner[a->slot] ? gpud_object_find(call->ctx, t->owner[a->slot]) : NULL;
      if (earlier && earlier->type == VK_OBJECT_TYPE_FENCE) {
         earlier->fence_tracked = false;
         settle = earlier;
      }
      t->owner[a->slot] = fence->id;
      fence->fence_tracked = true;
      fence->fence_slot = a->slot;
      fence->fence_generation = a->generation;
   }
   pthread_mutex_unlock(&t->mutex);
   gpud_queue_fence_settle(settle);
}

void
gpud_queue_fence_gone(struct gpud_object *fence, bool ask)
{
   struct gpud_device_track *t = fence->device ? fence->device->dtrack : NULL;
   if (ask)
      gpud_queue_fence_settle(fence);
   else
      fence->fence_owed_queue = VK_NULL_HANDLE; /* destroyed: nothing waits for it */
   if (!fence->fence_tracked || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (ask && gpud_track_page_write(t, (int32_t)fence->fence_slot, fence->id, GPUD_FENCE_ASK))
      gpud_completion_wake(t->page);
   if (t->owner && t->owner[fence->fence_slot] == fence->id)
      t->owner[fence->fence_slot] = 0;
   fence->fence_tracked = false;
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_fences_signalled(struct gpud_object *device, struct gpud_object *const *fences,
                            uint32_t n)
{
   struct gpud_device_track *t = device ? device->dtrack : NULL;
   if (!t)
      return;
   bool wrote = false;
   for (uint32_t i = 0; i < n; i++) {
      struct gpud_object *f = fences[i];
      if (!f || !f->fence_tracked ||
          t->disp->GetFenceStatus(t->dev, (VkFence)(uintptr_t)f->handle) != VK_SUCCESS)
         continue;
      pthread_mutex_lock(&t->mutex);
      wrote |= gpud_track_page_write(t, (int32_t)f->fence_slot, f->id, gpud_fence_value(f->fence_generation, 1));
      pthread_mutex_unlock(&t->mutex);
   }
   if (wrote)
      gpud_completion_wake(t->page);
}

/* Fences the worker's own copies signalled are signalled (the host's are
 * not): a wait for any of them is over, one for all of them waits for the
 * others on the host.  Whether the wait is over. */
static bool
fences_signaled_here(struct gpud_call *call, struct wire_args_vkWaitForFences *a)
{
   uint32_t left = 0;
   VkFence *rest = wire_dec_alloc(&call->dec, sizeof(*rest) * (a->fenceCount ? a->fenceCount : 1));
   for (uint32_t i = 0; i < a->fenceCount; i++) {
      const struct gpud_object *f =
         gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->pFences[i]);
      if (f && atomic_load(&f->fence_cpu_signaled)) {
         if (!a->waitAll)
            return true;
      } else if (rest) {
         rest[left++] = a->pFences[i];
      }
   }
   if (!rest || left == a->fenceCount)
      return false;
   if (!left)
      return true;
   a->pFences = rest;
   a->fenceCount = left;
   return false;
}

/* A wait with a timeout on a thread of its own (gpud_wait.c). */
void
gpud_exec_vkWaitForFences(struct gpud_call *call, struct wire_args_vkWaitForFences *a)
{
   /* the host waits: each fence's own signal on the host first */
   for (uint32_t i = 0; i < a->fenceCount; i++)
      gpud_queue_fence_settle(
         gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->pFences[i]));
   if (fences_signaled_here(call, a)) {
      a->ret = VK_SUCCESS;
      return;
   }
   if (a->timeout && call->device &&
       gpud_wait_fences(call, a->pFences, a->fenceCount, a->waitAll, a->timeout,
                        gpud_queue_fences_signalled, &a->ret))
      return;
   gpud_gen_exec_vkWaitForFences(call, a);
   if (a->ret == VK_SUCCESS && call->device)
      gpud_wait_publish(call, VK_OBJECT_TYPE_FENCE, a->pFences, a->fenceCount,
                        gpud_queue_fences_signalled);
}

/* (A delay injected by gpudctl holds a signalled fence unsignalled for a
 * while after it is first seen.) */
void
gpud_exec_vkGetFenceStatus(struct gpud_call *call, struct wire_args_vkGetFenceStatus *a)
{
   struct gpud_object *fence =
      gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence);
   if (fence && atomic_load(&fence->fence_cpu_signaled)) {
      a->ret = VK_SUCCESS; /* signalled by the worker's own copies */
      return;
   }
   gpud_queue_fence_settle(fence);
   gpud_gen_exec_vkGetFenceStatus(call, a);
   uint64_t delay = gpud_context_inject_delay_ns(call->ctx);
   if (a->ret == VK_SUCCESS && fence && !delay) {
      /* the host's word on the page before the application hears it */
      gpud_queue_publish(call->device);
      gpud_queue_fences_signalled(call->device, &fence, 1);
   }
   if (a->ret != VK_SUCCESS || !fence)
      return;
   uint64_t now = util_now_ns();
   uint64_t seen = 0;
   atomic_compare_exchange_strong(&fence->signal_seen_ns, &seen, now);
   seen = seen ? seen : now;
   if (delay && now < seen + delay)
      a->ret = VK_NOT_READY;
}

void
gpud_exec_vkResetFences(struct gpud_call *call, struct wire_args_vkResetFences *a)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      struct gpud_object *fence = call->touched[i];
      if (fence && fence->type == VK_OBJECT_TYPE_FENCE) {
         atomic_store(&fence->signal_seen_ns, 0);
         atomic_store(&fence->fence_cpu_signaled, false);
         fence->fence_owed_queue = VK_NULL_HANDLE; /* unsignalled all the same */
         /* the ICD counted this reset too (the completion page) */
         fence->fence_generation++;
      }
   }
   gpud_gen_exec_vkResetFences(call, a);
}

/* A wait in flight on the fence ends first. */
void
gpud_exec_vkDestroyFence(struct gpud_call *call, struct wire_args_vkDestroyFence *a)
{
   if (a->fence)
      gpud_waiters_cancel(call->ctx, call->device, (uint64_t)(uintptr_t)a->fence);
   gpud_gen_exec_vkDestroyFence(call, a);
}
