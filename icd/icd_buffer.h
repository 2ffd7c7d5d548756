/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Buffers (icd_buffer.c).
 */

#include "icd_object.h"

/* Buffers (icd_buffer.c): their ids are their handles; the ICD keeps where
 * each is bound, for the copies it makes itself (icd_queue.c). */
struct icd_buffer_binding {
   uint64_t id; /* 0: an empty entry */
   struct icd_device_memory *memory;
   VkDeviceSize offset;
};
bool icd_buffer_binding(struct icd_device *dev, VkBuffer buffer,
                        struct icd_buffer_binding *ret);
void icd_device_buffers_finish(struct icd_device *dev);
