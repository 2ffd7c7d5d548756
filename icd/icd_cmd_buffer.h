/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Command pools and command buffers (icd_cmd_buffer.c): a recording's
 * chunks, and the copies it holds while it holds nothing else.
 */

#include "icd_object.h"
#include "wire.h"

/* Copies a recording may note for the ICD to make itself (icd_queue.c). */
#define ICD_UPLOAD_MAX_COPIES 16u

struct icd_command_pool {
   struct icd_object base;
   pthread_mutex_t mutex;
   struct icd_command_buffer *buffers;
};

struct icd_command_buffer {
   struct icd_object base;
   struct icd_device *device;
   struct icd_command_pool *pool;
   struct icd_command_buffer *prev, *next; /* in the pool */
   VkCommandBufferLevel level;
   /* what the recording copies while it holds only copies between buffers
    * and barriers of memory (icd_queue.c); upload_no: it holds more */
   bool upload_no;
   uint32_t n_upload;
   struct icd_upload_copy {
      uint64_t src, dst;
      VkDeviceSize src_offset, dst_offset, size;
   } upload[ICD_UPLOAD_MAX_COPIES];
   /* the recording: the chunk being recorded (a struct wire_chunk_header,
    * then the commands), the chunks sent before it, the last command's
    * start; recording between vkBeginCommandBuffer and vkEndCommandBuffer */
   struct wire_enc stream;
   uint32_t chunk;
   size_t cmd_offset;
   bool recording;
   /* held: the whole recording, ended and not sent, since it holds only
    * copies the ICD may make itself; it goes to the daemon with the first
    * submission of it that does (icd_cmd_buffer_release) */
   bool held;
};

/* Sends a held recording (before a submission of it goes to the daemon). */
VkResult icd_cmd_buffer_release(struct icd_command_buffer *cb);
