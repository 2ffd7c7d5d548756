/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Devices (icd_device.c): what each keeps beside the daemon's -- the
 * completion page's slots, the buffers' bindings, the memory of the copies
 * the ICD makes, host image copies' staging.
 */

#include "icd_object.h"

/* Slots of memory a device's larger copies made by the ICD go through
 * (icd_queue.c). */
#define ICD_UPLOAD_SLOTS 4u

struct icd_device {
   struct icd_object base;
   struct icd_physical_device *physical_device;
   pthread_mutex_t mutex;
   struct icd_queue *queues;
   /* the worker's completion page (icd_completion.c); NULL: fences are asked
    * about; fence slots in use, and each slot's next first generation
    * (with mutex) */
   struct gpud_completion_header *completion;
   uint64_t *fence_used;
   uint32_t *fence_generation;
   unsigned fence_hint;
   uint64_t *semaphore_used;
   unsigned semaphore_hint;
   uint64_t *event_used;
   unsigned event_hint;
   uint32_t next_tag;
   /* host image copies (icd_hostcopy.c): the images made for them, and the
    * staging memory shared with the worker (with hostcopy_mutex) */
   /* VK_EXT_map_memory_placed enabled: host-visible memory keeps its memfd */
   bool keeps_memfds;
   pthread_mutex_t hostcopy_mutex;
   struct icd_host_image **host_images;
   void *staging;
   uint64_t staging_size;
   /* the submissions sent (vkQueueSubmit, vkQueueSubmit2,
    * vkQueueBindSparse), against the page's `settled` (icd_queue.c), and
    * the memory each buffer is bound to (icd_buffer.c, with buffers_mutex) */
   _Atomic uint64_t submits;
   /* GPUD_DEBUG=waits: the waits on the page, those that slept, their
    * time; the submissions the ICD made itself, their bytes and the time
    * it took to copy them, in the message [0] and in upload memory [1] */
   _Atomic uint64_t dbg_waits, dbg_slept, dbg_wait_ns;
   _Atomic uint64_t dbg_copies[2], dbg_copy_bytes[2], dbg_copy_ns[2];
   pthread_mutex_t buffers_mutex;
   struct icd_buffer_binding *buffers;
   uint32_t buffers_cap, buffers_n;
   /* the copies the ICD makes (icd_queue.c): memory both processes map,
    * which the worker copies larger ones from, a slot each with the fence
    * the worker raises once it did (with upload_mutex) */
   pthread_mutex_t upload_mutex;
   struct icd_upload_slot {
      VkBuffer buffer;
      VkDeviceMemory memory;
      VkFence done;
      VkDeviceSize size; /* (the bytes: its memory's mapping) */
   } upload_slots[ICD_UPLOAD_SLOTS];
   bool upload_slots_failed;
};

/* The copies the ICD makes: the memory a device keeps for them, given
 * back before the device is destroyed. */
void icd_device_upload_finish(struct icd_device *dev);

/* Host image copies: what a device keeps for them, freed with it. */
void icd_device_hostcopy_finish(struct icd_device *dev);
/* An image made for host copies remembered with its format and layers
 * (false: out of memory), and forgotten. */
bool icd_hostcopy_image_add(struct icd_device *dev, VkImage image, VkFormat format,
                            uint32_t layers);
void icd_hostcopy_image_remove(struct icd_device *dev, VkImage image);
