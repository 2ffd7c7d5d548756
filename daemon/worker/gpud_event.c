/* SPDX-License-Identifier: MIT */
/*
 * Events: the slot of each on its device's completion page, and the host's
 * sets and resets published there in the order they ran.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"

#include <stdlib.h>

#include "gpud_gen.h"
#include "wire_completion.h"

/* ---- events ---------------------------------------------------------------- */

void
gpud_exec_vkSetEventSlotGPUD(struct gpud_call *call, struct wire_args_vkSetEventSlotGPUD *a)
{
   struct gpud_object *ev =
      gpud_call_named(call, VK_OBJECT_TYPE_EVENT, (uint64_t)(uintptr_t)a->event);
   struct gpud_device_track *t = call->device ? call->device->dtrack : NULL;
   /* a slot past the page, or no tag: the event is asked about */
   if (!ev || !t || a->slot >= GPUD_COMPLETION_EVENT_SLOTS || !a->tag)
      return;
   pthread_mutex_lock(&t->mutex);
   if (t->page && !ev->event_tracked) {
      struct event_slot *e = &t->events[a->slot];
      struct gpud_object *earlier = e->owner ? gpud_object_find(call->ctx, e->owner) : NULL;
      if (earlier && earlier->type == VK_OBJECT_TYPE_EVENT)
         earlier->event_tracked = false;
      ev->event_tracked = true;
      ev->event_slot = a->slot;
      /* a new event is reset, and the ICD sends this before anything else
       * about it */
      *e = (struct event_slot){.owner = ev->id, .tag = a->tag};
      gpud_track_event_write(t, a->slot, ev->id, VK_NULL_HANDLE, 0, false, EVENT_KEEP, 0);
   }
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_event_gone(struct gpud_object *ev)
{
   struct gpud_device_track *t = ev->device ? ev->device->dtrack : NULL;
   if (!ev->event_tracked || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (t->events && t->events[ev->event_slot].owner == ev->id)
      t->events[ev->event_slot].owner = 0;
   ev->event_tracked = false;
   pthread_mutex_unlock(&t->mutex);
}

/* The tracker may be reading the event's state: it stops first. */
void
gpud_exec_vkDestroyEvent(struct gpud_call *call, struct wire_args_vkDestroyEvent *a)
{
   struct gpud_object *ev =
      gpud_call_named(call, VK_OBJECT_TYPE_EVENT, (uint64_t)(uintptr_t)a->event);
   if (ev)
      gpud_queue_event_gone(ev);
   gpud_gen_exec_vkDestroyEvent(call, a);
}

/* The application's vkSetEvent and vkResetEvent run under the tracker's
 * mutex, so that the state the tracker reads when a submission completes
 * and the one a host call leaves reach the page in the order they happened
 * on the host. */
#define HOST_EVENT_OP(cmd, state)                                                           \
   void gpud_exec_##cmd(struct gpud_call *call, struct wire_args_##cmd *a)                 \
   {                                                                                        \
      struct gpud_object *ev =                                                              \
         gpud_call_named(call, VK_OBJECT_TYPE_EVENT, (uint64_t)(uintptr_t)a->event);        \
      struct gpud_device_track *t =                                                         \
         ev && ev->event_tracked && ev->device ? ev->device->dtrack : NULL;                 \
      if (!t) {                                                                             \
         gpud_gen_exec_##cmd(call, a);                                                      \
         return;                                                                            \
      }                                                                                     \
      pthread_mutex_lock(&t->mutex);                                                        \
      gpud_gen_exec_##cmd(call, a);                                                         \
      bool ok = a->ret == VK_SUCCESS;                                                       \
      if (gpud_track_event_write(t, ev->event_slot, ev->id, a->event, 0, !ok, ok ? (state) : EVENT_KEEP, \
                      1))                                                                   \
         gpud_completion_wake(t->page);                                                     \
      pthread_mutex_unlock(&t->mutex);                                                      \
   }

HOST_EVENT_OP(vkSetEvent, EVENT_SET)
HOST_EVENT_OP(vkResetEvent, EVENT_RESET)
