/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The copies the ICD makes itself (icd_upload.c): what a recording notes
 * of them and a submission of such recordings alone.
 */

#include "icd_object.h"

/* A command of a recording, or the start of one (icd_queue.c notes which
 * keep it to copies). */
void icd_upload_note_op(struct icd_command_buffer *cb, uint32_t op);
/* ... a copy between buffers, a barrier (of images, or moving buffers
 * between queue families: the GPU's). */
void icd_upload_note_copy(VkCommandBuffer commandBuffer, VkBuffer src, VkBuffer dst, uint32_t n,
                          const VkBufferCopy *regions, const VkBufferCopy2 *regions2);
/* Whether a recording just ended may be held for the ICD to make
 * (icd_cmd_buffer.c). */
bool icd_upload_may_hold(const struct icd_command_buffer *cb);
void icd_upload_note_barrier(VkCommandBuffer commandBuffer, uint32_t n_images, bool ownership);
/* A submission of such command buffers alone (or none, with a fence), made
 * by the ICD itself where it can be (icd_upload.c): whether it was, *ret
 * its result. */
bool icd_upload_submit(struct icd_queue *q, struct icd_command_buffer *const *cbs,
                       uint32_t n_cbs, VkFence fence, VkResult *ret);
