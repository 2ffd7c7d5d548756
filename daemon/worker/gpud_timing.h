/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A queue's GPU time, measured on the device (gpud_timing.c): each tracked
 * submission gets a timing slot, two command buffers of gpud's own that
 * write a timestamp before its work and one after, and the tracker reads
 * the pair once the submission is done.  Where the queue's family writes no
 * timestamps (or a submission cannot carry them) the tracker counts the
 * time the submission had the queue busy instead (gpud_track.c).
 */

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan_core.h>

struct gpud_host_dispatch;
struct gpud_queue_timing;

/* A queue's timing, or NULL where its family has no timestamps or the host
 * would not give what it takes. */
struct gpud_queue_timing *gpud_timing_create(const struct gpud_host_dispatch *disp,
                                             VkPhysicalDevice physical, VkDevice dev,
                                             uint32_t family);
/* The device is idle (or lost): everything goes. */
void gpud_timing_destroy(struct gpud_queue_timing *tm);
/* A slot for a submission, or -1 when all are in flight (the submission
 * goes untimed); its command buffers then, to submit before and after the
 * submission's own. */
int gpud_timing_take(struct gpud_queue_timing *tm, VkCommandBuffer *ret_begin,
                     VkCommandBuffer *ret_end);
/* A done submission's GPU time from its slot's timestamps (false: not
 * written, the submission did not run them); the slot is free again.  Done
 * submissions are read in the order they went: what ran while the one
 * before still ran (the top of a pipe starts early) is counted once. */
bool gpud_timing_read(struct gpud_queue_timing *tm, int slot, uint64_t *ret_ns);
/* A slot whose submission never went to the host. */
void gpud_timing_drop(struct gpud_queue_timing *tm, int slot);
