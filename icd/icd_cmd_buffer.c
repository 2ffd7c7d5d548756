/* SPDX-License-Identifier: MIT */
/*
 * Command buffers record into their own encoded stream, in the same format
 * as everything else on the wire; vkEndCommandBuffer ships the stream and
 * the daemon replays it into a host command buffer.  Submitting again sends
 * only the submit.
 */
#include "icd.h"

struct wire_enc *
icd_cmd_stream(VkCommandBuffer commandBuffer, uint32_t op)
{
   struct icd_command_buffer *cb = (struct icd_command_buffer *)commandBuffer;
   cb->cmd_offset = wire_enc_begin_cmd(&cb->stream, op, 0, 0);
   return &cb->stream;
}

void
icd_cmd_stream_end(VkCommandBuffer commandBuffer)
{
   struct icd_command_buffer *cb = (struct icd_command_buffer *)commandBuffer;
   wire_enc_end_cmd(&cb->stream, cb->cmd_offset);
}

/* Recording failed in the ICD: vkEndCommandBuffer will say so. */
void
icd_cmd_buffer_fail(VkCommandBuffer commandBuffer)
{
   ((struct icd_command_buffer *)commandBuffer)->stream.oom = true;
}

VkResult
icd_cmd_ship(VkCommandBuffer commandBuffer)
{
   struct icd_command_buffer *cb = (struct icd_command_buffer *)commandBuffer;
   if (cb->stream.oom) {
      wire_enc_reset(&cb->stream);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   VkResult r = icd_connection_send_stream(cb->base.conn, cb->stream.data, cb->stream.size);
   wire_enc_reset(&cb->stream);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo *pAllocateInfo,
                             VkCommandBuffer *pCommandBuffers)
{
   VkResult r = icd_gen_vkAllocateCommandBuffers(device, pAllocateInfo, pCommandBuffers);
   if (r != VK_SUCCESS)
      return r;
   struct icd_command_pool *pool = (struct icd_command_pool *)pAllocateInfo->commandPool;
   pthread_mutex_lock(&pool->mutex);
   for (uint32_t i = 0; i < pAllocateInfo->commandBufferCount; i++) {
      struct icd_command_buffer *cb = (struct icd_command_buffer *)pCommandBuffers[i];
      cb->pool = pool;
      cb->level = pAllocateInfo->level;
      cb->prev = NULL;
      cb->next = pool->buffers;
      if (pool->buffers)
         pool->buffers->prev = cb;
      pool->buffers = cb;
   }
   pthread_mutex_unlock(&pool->mutex);
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkBeginCommandBuffer(VkCommandBuffer commandBuffer, const VkCommandBufferBeginInfo *pBeginInfo)
{
   struct icd_command_buffer *cb = (struct icd_command_buffer *)commandBuffer;
   /* Beginning resets the recording (implicitly, as the API says). */
   wire_enc_reset(&cb->stream);
   VkCommandBufferBeginInfo info = *pBeginInfo;
   /* A primary command buffer ignores its inheritance info. */
   if (cb->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY)
      info.pInheritanceInfo = NULL;
   return icd_gen_vkBeginCommandBuffer(commandBuffer, &info);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetCommandBuffer(VkCommandBuffer commandBuffer, VkCommandBufferResetFlags flags)
{
   struct icd_command_buffer *cb = (struct icd_command_buffer *)commandBuffer;
   wire_enc_reset(&cb->stream);
   /* The reset goes on the connection's stream, not the discarded recording. */
   struct icd_call call;
   struct wire_enc *e =
      icd_call_begin(&call, cb->base.conn, WIRE_OP_vkResetCommandBuffer, false, false);
   wire_enc_vkResetCommandBuffer(e, commandBuffer, flags);
   icd_call_end(&call);
   return icd_connection_is_lost(cb->base.conn) ? ICD_LOST_vkResetCommandBuffer : VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetCommandPool(VkDevice device, VkCommandPool commandPool, VkCommandPoolResetFlags flags)
{
   struct icd_command_pool *pool = (struct icd_command_pool *)commandPool;
   pthread_mutex_lock(&pool->mutex);
   for (struct icd_command_buffer *cb = pool->buffers; cb; cb = cb->next)
      wire_enc_reset(&cb->stream);
   pthread_mutex_unlock(&pool->mutex);
   return icd_gen_vkResetCommandPool(device, commandPool, flags);
}
