/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Queues (icd_queue.c).
 */

#include "icd_object.h"

struct icd_queue {
   struct icd_object base;
   struct icd_device *device;
   uint32_t family;
   uint32_t index;
   VkDeviceQueueCreateFlags flags;
   struct icd_queue *next;
   VkFence idle_fence; /* vkQueueWaitIdle's own, on the completion page */
};
/* The queue's idle fence, reset and submitted; VK_NULL_HANDLE when the
 * daemon must be asked (icd_queue.c). */
VkFence icd_queue_idle_fence(struct icd_queue *q);
