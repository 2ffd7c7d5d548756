/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Fences (icd_fence.c): a slot on the completion page and its generation.
 */

#include "icd_object.h"

struct icd_fence {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (no slot) */
   int slot;
   _Atomic uint32_t generation; /* resets so far, from the slot's first */
   /* how long its last wait that did not find it signalled took (0: none
    * yet), for how long its next polls (icd_completion_wait) */
   _Atomic uint64_t last_wait_ns;
};

/* The fence's next signal is the host driver's to tell (a window system's
 * acquire): its state is asked about until it is reset. */
void icd_fence_ask(VkFence fence);
/* Whether the page answers for the fence; it signalled there, by the ICD
 * (a submission the ICD made itself: icd_queue.c). */
bool icd_fence_here(VkFence fence);
/* Whether a fence the page answers for is signalled there. */
bool icd_fence_signalled_here(VkFence fence);
void icd_fence_signal_here(VkFence fence);
/* Its payload was imported or exported: asked about from now on. */
void icd_fence_untrack(VkFence fence);
