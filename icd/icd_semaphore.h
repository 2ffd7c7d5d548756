/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Semaphores (icd_semaphore.c): a timeline's slot on the completion page.
 */

#include "icd_object.h"

struct icd_semaphore {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (binary, exported, no slot) */
   int slot;
   uint32_t tag;
};

void icd_semaphore_untrack(VkSemaphore semaphore);
