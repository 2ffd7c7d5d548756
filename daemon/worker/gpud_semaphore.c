/* SPDX-License-Identifier: MIT */
/*
 * Timeline semaphores: the slot of each on its device's completion page,
 * their values raised there as the host reaches them or the application
 * signals them; one about to be destroyed, once the host let go of the
 * last submission that waited on it (gpud_queue_marker).
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"
#include "gpud_wait.h"

#include <stdlib.h>

#include "gpud_gen.h"
#include "wire_completion.h"

void
gpud_queue_semaphores_reached(struct gpud_object *device, struct gpud_object *const *sems,
                              uint32_t n)
{
   struct gpud_device_track *t = device ? device->dtrack : NULL;
   if (!t || !t->disp->GetSemaphoreCounterValue)
      return;
   bool wrote = false;
   for (uint32_t i = 0; i < n; i++) {
      struct gpud_object *sem = sems[i];
      uint64_t v;
      if (!sem || !sem->semaphore_tracked ||
          t->disp->GetSemaphoreCounterValue(t->dev, (VkSemaphore)(uintptr_t)sem->handle, &v) !=
             VK_SUCCESS)
         continue;
      pthread_mutex_lock(&t->mutex);
      wrote |= gpud_track_page_raise(t, sem->semaphore_slot, sem->id, v);
      pthread_mutex_unlock(&t->mutex);
   }
   if (wrote)
      gpud_completion_wake(t->page);
}

void
gpud_exec_vkSetSemaphoreSlotGPUD(struct gpud_call *call,
                                 struct wire_args_vkSetSemaphoreSlotGPUD *a)
{
   struct gpud_object *sem =
      gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)a->semaphore);
   struct gpud_device_track *t = call->device ? call->device->dtrack : NULL;
   /* a slot past the page, or no tag: the semaphore is asked about */
   if (!sem || !t || a->slot >= GPUD_COMPLETION_SEMAPHORE_SLOTS || !a->tag ||
       a->initialValue == GPUD_SEMAPHORE_ASK)
      return;
   pthread_mutex_lock(&t->mutex);
   if (t->page && !sem->semaphore_tracked) {
      struct gpud_object *earlier =
         t->sem_owner[a->slot] ? gpud_object_find(call->ctx, t->sem_owner[a->slot]) : NULL;
      if (earlier && earlier->type == VK_OBJECT_TYPE_SEMAPHORE)
         earlier->semaphore_tracked = false;
      t->sem_owner[a->slot] = sem->id;
      sem->semaphore_tracked = true;
      sem->semaphore_slot = a->slot;
      /* its value, then its tag: an ICD that sees the tag sees the value */
      struct gpud_semaphore_slot *slot = &gpud_completion_semaphores(t->page)[a->slot];
      atomic_store(&slot->value, a->initialValue);
      atomic_store(&slot->tag, a->tag);
   }
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_semaphore_signalled(struct gpud_object *sem, uint64_t value)
{
   struct gpud_device_track *t = sem->device ? sem->device->dtrack : NULL;
   if (!sem->semaphore_tracked || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (gpud_track_page_raise(t, sem->semaphore_slot, sem->id, value))
      gpud_completion_wake(t->page);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_exec_vkSignalSemaphore(struct gpud_call *call, struct wire_args_vkSignalSemaphore *a)
{
   gpud_gen_exec_vkSignalSemaphore(call, a);
   struct gpud_object *sem = gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE,
                                             (uint64_t)(uintptr_t)a->pSignalInfo->semaphore);
   if (sem && a->ret == VK_SUCCESS)
      gpud_queue_semaphore_signalled(sem, a->pSignalInfo->value);
}

/* A semaphore the application destroyed while the host may still hold it
 * through a submission that waited on it: the host's destroy waits for an
 * empty submission with a fence (marker) on that queue, submitted after
 * everything the queue had (through: the queue's host_submits then). */
struct gpud_deferred_semaphore {
   struct gpud_deferred_semaphore *next;
   VkSemaphore semaphore;
   VkFence marker;
   uint64_t queue_id, through;
};

/* How long a device's teardown waits for each marker left (a queue stuck
 * on a value nobody will signal: its semaphores are left to the device). */
#define DEFERRED_WAIT_NS (500ull * 1000 * 1000)

void
gpud_semaphores_reap(struct gpud_context *ctx, struct gpud_object *device, bool all)
{
   const struct gpud_host_dispatch *d = device->disp;
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   uint64_t wait_ns = DEFERRED_WAIT_NS; /* (none after one timed out) */
   for (struct gpud_deferred_semaphore **p = &device->deferred_semaphores; *p;) {
      struct gpud_deferred_semaphore *e = *p;
      VkResult r = all ? d->WaitForFences(dev, 1, &e->marker, VK_TRUE, wait_ns)
                       : d->GetFenceStatus(dev, e->marker);
      if (r == VK_TIMEOUT)
         wait_ns = 0;
      if (r != VK_SUCCESS && !(all && r != VK_TIMEOUT)) {
         p = &e->next; /* still held (or, at the end, stuck: left to the device) */
         continue;
      }
      struct gpud_object *queue = gpud_object_find(ctx, e->queue_id);
      if (r == VK_SUCCESS && queue && queue->type == VK_OBJECT_TYPE_QUEUE)
         gpud_queue_settled(queue, e->through);
      d->DestroySemaphore(dev, e->semaphore, NULL);
      d->DestroyFence(dev, e->marker, NULL);
      *p = e->next;
      free(e);
   }
}

bool
gpud_semaphore_settle(struct gpud_context *ctx, struct gpud_object *sem)
{
   struct gpud_object *device = sem->device;
   if (device && device->deferred_semaphores)
      gpud_semaphores_reap(ctx, device, false);
   struct gpud_object *queue =
      sem->sem_waited_queue ? gpud_object_find(ctx, sem->sem_waited_queue) : NULL;
   if (!device || !queue || queue->type != VK_OBJECT_TYPE_QUEUE ||
       sem->sem_waited_seq <= queue->host_settled || atomic_load(&device->lost))
      return true;
   struct gpud_deferred_semaphore *e = calloc(1, sizeof(*e));
   if (e)
      e->marker = gpud_queue_marker(queue, &e->through);
   if (!e || !e->marker) {
      free(e);
      return true; /* (nothing to wait behind: as the application asks) */
   }
   e->semaphore = (VkSemaphore)(uintptr_t)sem->handle;
   e->queue_id = queue->id;
   e->next = device->deferred_semaphores;
   device->deferred_semaphores = e;
   return false;
}

/* ---- gpud's own: an acquired swapchain image is ready ---------------------- */

/* Signals the semaphore and/or fence at once, on the device's first queue
 * (the image was free when the ICD acquired it). */
void
gpud_exec_vkSignalGPUD(struct gpud_call *call, struct wire_args_vkSignalGPUD *a)
{
   const struct gpud_object *dev = call->device;
   if (!dev || dev->n_queues == 0) {
      gpud_call_fail(call, "vkSignalGPUD: the device has no queue");
      return;
   }
   const struct gpud_queue_info *q = &dev->queues[0];
   VkQueue queue = VK_NULL_HANDLE;
   if (q->flags) {
      const VkDeviceQueueInfo2 info = {
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
         .flags = q->flags,
         .queueFamilyIndex = q->family,
      };
      call->disp->GetDeviceQueue2(a->device, &info, &queue);
   } else {
      call->disp->GetDeviceQueue(a->device, q->family, 0, &queue);
   }
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .signalSemaphoreCount = a->semaphore ? 1 : 0,
      .pSignalSemaphores = &a->semaphore,
   };
   VkResult r = call->disp->QueueSubmit(queue, a->semaphore ? 1 : 0, &submit, a->fence);
   if (r != VK_SUCCESS)
      gpud_call_async_error(call, r);
   /* no tracker sees this signal: the ICD asks the host driver's fence,
    * until the fence is reset */
   struct gpud_object *fence =
      a->fence ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence)
               : NULL;
   if (fence)
      gpud_queue_fence_ask(fence);
}

/* A wait with a timeout on a thread of its own (gpud_wait.c). */
void
gpud_exec_vkWaitSemaphores(struct gpud_call *call, struct wire_args_vkWaitSemaphores *a)
{
   if (a->timeout && call->device &&
       gpud_wait_semaphores(call, a->pWaitInfo, a->timeout, gpud_queue_semaphores_reached,
                            &a->ret))
      return;
   gpud_gen_exec_vkWaitSemaphores(call, a);
   if (a->ret == VK_SUCCESS && call->device)
      gpud_wait_publish(call, VK_OBJECT_TYPE_SEMAPHORE, a->pWaitInfo->pSemaphores,
                        a->pWaitInfo->semaphoreCount, gpud_queue_semaphores_reached);
}

void
gpud_exec_vkGetSemaphoreCounterValue(struct gpud_call *call,
                                     struct wire_args_vkGetSemaphoreCounterValue *a)
{
   gpud_gen_exec_vkGetSemaphoreCounterValue(call, a);
   struct gpud_object *sem =
      gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)a->semaphore);
   /* the value the host gave is on the page before the application has it */
   if (a->ret == VK_SUCCESS && sem)
      gpud_queue_semaphore_signalled(sem, *a->pValue);
}

/* A wait in flight on the semaphore ends first, and the host's hold on it
 * through a submission that waited on it is let go (gpud_semaphore_settle). */
void
gpud_exec_vkDestroySemaphore(struct gpud_call *call, struct wire_args_vkDestroySemaphore *a)
{
   if (a->semaphore) {
      gpud_waiters_cancel(call->ctx, call->device, (uint64_t)(uintptr_t)a->semaphore);
      struct gpud_object *sem =
         gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)a->semaphore);
      if (sem && !gpud_semaphore_settle(call->ctx, sem))
         return; /* the host's destroy comes once its queue let go of it */
   }
   gpud_gen_exec_vkDestroySemaphore(call, a);
}
