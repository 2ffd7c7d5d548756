/* SPDX-License-Identifier: MIT */
/*
 * Events.  An event the host may ask about owns a slot in its device's
 * completion page (icd_completion.c), where the worker keeps its state:
 * vkGetEventStatus reads it there, and vkSetEvent and vkResetEvent do not
 * wait.
 */
#include "icd.h"

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateEvent(VkDevice device, const VkEventCreateInfo *pCreateInfo,
                  const VkAllocationCallbacks *pAllocator, VkEvent *pEvent)
{
   VkResult r = icd_gen_vkCreateEvent(device, pCreateInfo, pAllocator, pEvent);
   struct icd_device *dev = icd_completion_device(device, r);
   /* a device-only event is never asked about on the host */
   if (!dev || (pCreateInfo->flags & VK_EVENT_CREATE_DEVICE_ONLY_BIT))
      return r;
   struct icd_event *e = icd_event_from_handle(*pEvent);
   uint32_t tag;
   int slot = icd_completion_slot_take(dev, dev->event_used, &dev->event_hint,
                                       GPUD_COMPLETION_EVENT_SLOTS, &tag);
   if (slot < 0)
      return r;
   e->device = dev;
   e->slot = slot;
   e->tag = tag;
   icd_gen_vkSetEventSlotGPUD(device, *pEvent, (uint32_t)slot, tag);
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyEvent(VkDevice device, VkEvent event, const VkAllocationCallbacks *pAllocator)
{
   struct icd_event *e = icd_event_from_handle(event);
   if (e && e->device) {
      icd_completion_slot_give(e->device, e->device->event_used, &e->device->event_hint,
                               e->slot);
      e->device = NULL;
   }
   icd_gen_vkDestroyEvent(device, event, pAllocator);
}

/* Host-side sets and resets are asynchronous and go out at once (a queue
 * may wait for them); the event remembers the last one first, so that a
 * vkGetEventStatus after it answers it before the daemon has run it. */
static VkResult
event_host_op(VkDevice device, VkEvent event, bool set)
{
   struct icd_event *e = icd_event_from_handle(event);
   if (e && e->device) {
      atomic_store(&e->last_set, set);
      atomic_fetch_add(&e->host_ops, 1);
   }
   VkResult r = set ? icd_gen_vkSetEvent(device, event) : icd_gen_vkResetEvent(device, event);
   return r == VK_SUCCESS ? icd_connection_flush((icd_device_from_handle(device))->base.conn) : r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetEvent(VkDevice device, VkEvent event)
{
   return event_host_op(device, event, true);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetEvent(VkDevice device, VkEvent event)
{
   return event_host_op(device, event, false);
}

/* From the page while no submission that sets or resets the event is in
 * flight; else (or before the worker took its slot) the daemon asks the
 * host driver. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetEventStatus(VkDevice device, VkEvent event)
{
   struct icd_device *dev = icd_device_from_handle(device);
   const struct icd_event *e = icd_event_from_handle(event);
   struct gpud_completion_header *h = dev->completion;
   if (!h || !e->device)
      return icd_gen_vkGetEventStatus(device, event);
   uint64_t w = atomic_load(&gpud_completion_events(h)[e->slot]);
   if (gpud_event_tag(w) != e->tag || gpud_event_pending(w))
      return icd_gen_vkGetEventStatus(device, event);
   if (atomic_load(&h->lost) || icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   bool set = gpud_event_host_ops(w) == (atomic_load(&e->host_ops) & 0xffffu)
                 ? gpud_event_set(w)
                 : atomic_load(&e->last_set);
   if (set)
      return VK_EVENT_SET;
   /* what would set it may still be queued here; a poll must see the
    * daemon go */
   if (icd_connection_flush(dev->base.conn) != VK_SUCCESS || icd_connection_gone(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   return VK_EVENT_RESET;
}
