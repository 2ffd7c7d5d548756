/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Copies the worker makes itself (gpud_transfer.c): a submission whose
 * command buffers only copy between buffers whose memory the worker maps
 * (a memfd it shares with the application, or device memory the host lets
 * it map) runs as memmove() in the worker once the device has nothing in
 * flight, its fence raised on the completion page: a program that stages
 * what it writes and reads through copies, submitting and waiting for each
 * (llama.cpp's ggml where it has no mappable device memory), waits for the
 * worker's CPU, not for a round of the GPU's queue.
 */
#include "gpud_call.h"

/* A recording begins (nothing noted), a command of it is replayed (one that
 * is no copy and no barrier of buffers makes the recording the GPU's). */
void gpud_transfer_begin(struct gpud_object *cb);
void gpud_transfer_note_op(struct gpud_object *cb, uint32_t op);
/* A copy command's regions (checked against the buffers' sizes), or a
 * barrier (one of images, or that moves a buffer between queue families,
 * makes the recording the GPU's). */
void gpud_transfer_note_copy(struct gpud_call *call, VkCommandBuffer cb, VkBuffer src,
                             VkBuffer dst, uint32_t n, const VkBufferCopy *regions,
                             const VkBufferCopy2 *regions2);
void gpud_transfer_note_barrier(struct gpud_call *call, VkCommandBuffer cb, bool gpu_only);
/* A command buffer object's notes freed. */
void gpud_transfer_free(struct gpud_object *cb);

/* A submission run by the worker itself where it can be: every command
 * buffer of it copies only, between memory the worker maps, with no
 * semaphores, and the device has nothing in flight (gpud_queue.c says).
 * Returns whether it ran (a->ret VK_SUCCESS); false: it goes to the host. */
bool gpud_transfer_submit(struct gpud_call *call, struct wire_args_vkQueueSubmit *a);
bool gpud_transfer_submit2(struct gpud_call *call, struct wire_args_vkQueueSubmit2 *a);

/* What a device kept for the copies the ICD sends (vkQueueUploadGPUD),
 * freed once it is idle, before it is destroyed. */
void gpud_transfer_device_end(struct gpud_object *device);

/* Buffers' memory types for the application: where the host has device
 * memory it lets the worker map in the same heap as device memory it does
 * not (resizable BAR), the requirements of a buffer of up to 64 MiB name
 * only the former, so that the worker can make the buffer's copies itself
 * (the application sees both as device memory: gpud_buffer.c). */
uint32_t gpud_transfer_buffer_types(const struct daemon_host *host, uint32_t types, uint64_t size);
