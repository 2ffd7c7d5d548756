/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The worker's completion page as a device reads it (icd_completion.c):
 * its slots and the waits on it.
 */

#include "icd_object.h"

void icd_device_completion_init(struct icd_device *dev);
void icd_device_completion_finish(struct icd_device *dev);
/* The device of an object just made (r, its creation's result) where the
 * device's page may answer for it; NULL where it is asked about. */
struct icd_device *icd_completion_device(VkDevice device, VkResult r);
/* Slots of the page's tables (with the device's mutex taken here): a free
 * one of n, or -1, and (tag not NULL) a new tag, never 0, for what takes
 * it; given back. */
int icd_completion_slot_take(struct icd_device *dev, uint64_t *used, unsigned *hint, unsigned n,
                             uint32_t *tag);
void icd_completion_slot_give(struct icd_device *dev, uint64_t *used, unsigned *hint, int slot);
/* A fence's slot given back, the first generation of its next fence set. */
void icd_completion_fence_slot_give(struct icd_device *dev, int slot, uint32_t next_generation);
/* Waits on the page until reached(what) says VK_SUCCESS, the timeout ends
 * (VK_TIMEOUT), the device or the daemon is lost (VK_ERROR_DEVICE_LOST), or
 * something must be asked about (VK_NOT_READY, with the timeout left in
 * *left).  last_ns: how long the last wait for the same objects took (0:
 * not known), which it may poll through (icd_completion.c); *waited_ns
 * (not NULL): how long this one took, where it did not find them reached
 * at once (0 there). */
VkResult icd_completion_wait(struct icd_device *dev, VkResult (*reached)(const void *),
                             const void *what, uint64_t timeout, uint64_t *left,
                             uint64_t last_ns, uint64_t *waited_ns);
