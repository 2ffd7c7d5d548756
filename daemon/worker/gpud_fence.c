/* SPDX-License-Identifier: MIT */
/*
 * Fences: the slot of each on its device's completion page (the ICD hands
 * them out, the worker writes them), their own signals owed to the host,
 * and those the host says are signalled published.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"

#include <stdlib.h>

#include "gpud_gen.h"
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
