/* SPDX-License-Identifier: MIT */
/*
 * Command buffers record into their own encoded stream, in the same format
 * as everything else on the wire, and send it to the daemon in chunks as it
 * grows (docs/protocol.md, "Recording in chunks"): the daemon replays each
 * chunk into the host command buffer while the application goes on
 * recording, and vkEndCommandBuffer sends only the last one.  Submitting
 * sends only the submit.
 *
 * A recording of copies alone, small enough to be one chunk, is held here
 * at its end instead, where the ICD could make a submission of it: the ICD
 * makes such submissions itself where it can (icd_upload.c), and then the
 * daemon never needs it.  The first submission
 * of it that goes to the daemon sends it first (icd_cmd_buffer_release); a
 * reset or a new recording drops it.  The daemon sees what it would have
 * seen, later: a whole recording, begun after every reset of it sent.
 */
#include "icd.h"

#include <stdlib.h>

#include "util_env.h"
#include "util_trace.h"
/* A chunk goes out once the stream passes this size (GPUD_CHUNK_BYTES,
 * for measuring: docs/performance.md). */
#define ICD_CHUNK_BYTES (64u * 1024u)
#define ICD_CHUNK_MIN_BYTES 1024u
#define ICD_CHUNK_MAX_BYTES (16u << 20)

static pthread_once_t chunk_once = PTHREAD_ONCE_INIT;
static size_t chunk_bytes = ICD_CHUNK_BYTES;

static void
init_chunk_bytes(void)
{
   uint64_t v;
   if (util_env_number("GPUD_CHUNK_BYTES", ICD_CHUNK_MIN_BYTES, ICD_CHUNK_MAX_BYTES, &v))
      chunk_bytes = v;
}

static struct icd_command_buffer *
command_buffer(VkCommandBuffer commandBuffer)
{
   return icd_command_buffer_from_handle(commandBuffer);
}

/* Sends the chunk recorded so far (with flags), and starts the next. */
static VkResult
send_chunk(struct icd_command_buffer *cb, uint32_t flags)
{
   struct wire_chunk_header *h = (struct wire_chunk_header *)cb->stream.data;
   *h = (struct wire_chunk_header){
      .cmd = {.op = WIRE_OP_CHUNK, .size = (uint32_t)cb->stream.size, .flags = flags,
              .seq = cb->chunk++},
      .command_buffer = cb->base.id,
   };
   VkResult r = icd_connection_send_stream(cb->base.conn, cb->stream.data, cb->stream.size);
   wire_enc_reset(&cb->stream);
   return r;
}

/* Sends a recording's last chunk; the next recording starts at chunk 0. */
static VkResult
send_last_chunk(struct icd_command_buffer *cb)
{
   VkResult r = send_chunk(cb, WIRE_CHUNK_END);
   cb->chunk = 0;
   return r;
}

/* Room for the chunk's header, at the start of each chunk. */
static void
chunk_start(struct icd_command_buffer *cb)
{
   if (cb->stream.size == 0)
      wire_enc_reserve(&cb->stream, sizeof(struct wire_chunk_header));
}

/* Forgets what was recorded and not sent (a reset or a new begin). */
static void
discard_recording(struct icd_command_buffer *cb)
{
   wire_enc_reset(&cb->stream);
   cb->recording = false;
   cb->held = false;
   cb->chunk = 0;
   cb->upload_no = true;
}

struct wire_enc *
icd_cmd_stream(VkCommandBuffer commandBuffer, uint32_t op)
{
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   /* a command outside vkBeginCommandBuffer..vkEndCommandBuffer (invalid
    * usage) is dropped here: the daemon takes recorded commands only in a
    * recording */
   if (!cb->recording)
      return NULL;
   icd_upload_note_op(cb, op);
   chunk_start(cb);
   cb->cmd_offset = wire_enc_begin_cmd(&cb->stream, op, 0, 0);
   return &cb->stream;
}

void
icd_cmd_stream_end(VkCommandBuffer commandBuffer)
{
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   wire_enc_end_cmd(&cb->stream, cb->cmd_offset);
   if (cb->stream.size >= chunk_bytes && !cb->stream.oom)
      send_chunk(cb, 0);
}

uint8_t *
icd_cmd_reserve(VkCommandBuffer commandBuffer, uint32_t op, uint32_t params)
{
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   if (!cb->recording)
      return NULL;
   icd_upload_note_op(cb, op);
   if (cb->stream.size >= chunk_bytes && !cb->stream.oom)
      send_chunk(cb, 0);
   chunk_start(cb);
   const uint32_t size = (uint32_t)sizeof(struct wire_cmd_header) + params;
   struct wire_cmd_header *h = wire_enc_reserve(&cb->stream, size);
   if (!h)
      return NULL;
   *h = (struct wire_cmd_header){.op = op, .size = size};
   return (uint8_t *)(h + 1);
}

/* Recording failed in the ICD: vkEndCommandBuffer will say so. */
void
icd_cmd_buffer_fail(VkCommandBuffer commandBuffer)
{
   command_buffer(commandBuffer)->stream.oom = true;
}

VkResult
icd_cmd_buffer_end(VkCommandBuffer commandBuffer)
{
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   if (!cb->recording)
      return VK_SUCCESS; /* not begun (invalid usage): nothing to end */
   chunk_start(cb);
   if (cb->stream.oom) {
      /* the recording is incomplete: the application gets the error and
       * must reset or begin again, which the daemon sees */
      discard_recording(cb);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   util_trace(UTIL_TRACE_END, (uint32_t)cb->stream.size);
   cb->recording = false;
   if (cb->chunk == 0 && icd_upload_may_hold(cb)) {
      cb->held = true;
      return VK_SUCCESS;
   }
   VkResult r = send_last_chunk(cb);
   /* only the ICD's own failure is the application's to see here; a host
    * failure to end the recording loses the device */
   return r == VK_ERROR_DEVICE_LOST ? VK_ERROR_OUT_OF_HOST_MEMORY : r;
}

VkResult
icd_cmd_buffer_release(struct icd_command_buffer *cb)
{
   if (!cb || !cb->held)
      return VK_SUCCESS;
   cb->held = false;
   return send_last_chunk(cb);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo *pAllocateInfo,
                             VkCommandBuffer *pCommandBuffers)
{
   VkResult r = icd_gen_vkAllocateCommandBuffers(device, pAllocateInfo, pCommandBuffers);
   if (r != VK_SUCCESS)
      return r;
   struct icd_command_pool *pool = icd_command_pool_from_handle(pAllocateInfo->commandPool);
   pthread_mutex_lock(&pool->mutex);
   for (uint32_t i = 0; i < pAllocateInfo->commandBufferCount; i++) {
      struct icd_command_buffer *cb = icd_command_buffer_from_handle(pCommandBuffers[i]);
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
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   pthread_once(&chunk_once, init_chunk_bytes);
   /* Beginning resets the recording (implicitly, as the API says): the
    * first chunk of the new one starts with it. */
   discard_recording(cb);
   cb->recording = true;
   cb->upload_no = cb->level != VK_COMMAND_BUFFER_LEVEL_PRIMARY ||
                   (pBeginInfo->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
   cb->n_upload = 0;
   VkCommandBufferBeginInfo info = *pBeginInfo;
   /* A primary command buffer ignores its inheritance info. */
   if (cb->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY)
      info.pInheritanceInfo = NULL;
   return icd_gen_vkBeginCommandBuffer(commandBuffer, &info);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetCommandBuffer(VkCommandBuffer commandBuffer, VkCommandBufferResetFlags flags)
{
   struct icd_command_buffer *cb = command_buffer(commandBuffer);
   discard_recording(cb);
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
   struct icd_command_pool *pool = icd_command_pool_from_handle(commandPool);
   pthread_mutex_lock(&pool->mutex);
   for (struct icd_command_buffer *cb = pool->buffers; cb; cb = cb->next)
      discard_recording(cb);
   pthread_mutex_unlock(&pool->mutex);
   return icd_gen_vkResetCommandPool(device, commandPool, flags);
}

/* ---- commands the ICD notes or changes ------------------------------------- */

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdCopyBuffer(VkCommandBuffer commandBuffer, VkBuffer srcBuffer, VkBuffer dstBuffer,
                    uint32_t regionCount, const VkBufferCopy *pRegions)
{
   icd_upload_note_copy(commandBuffer, srcBuffer, dstBuffer, regionCount, pRegions, NULL);
   icd_gen_vkCmdCopyBuffer(commandBuffer, srcBuffer, dstBuffer, regionCount, pRegions);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdPipelineBarrier(VkCommandBuffer commandBuffer, VkPipelineStageFlags srcStageMask,
                         VkPipelineStageFlags dstStageMask, VkDependencyFlags dependencyFlags,
                         uint32_t memoryBarrierCount, const VkMemoryBarrier *pMemoryBarriers,
                         uint32_t bufferMemoryBarrierCount,
                         const VkBufferMemoryBarrier *pBufferMemoryBarriers,
                         uint32_t imageMemoryBarrierCount,
                         const VkImageMemoryBarrier *pImageMemoryBarriers)
{
   bool ownership = false;
   for (uint32_t i = 0; i < bufferMemoryBarrierCount; i++)
      ownership |= pBufferMemoryBarriers[i].srcQueueFamilyIndex !=
                   pBufferMemoryBarriers[i].dstQueueFamilyIndex;
   icd_upload_note_barrier(commandBuffer, imageMemoryBarrierCount, ownership);
   icd_gen_vkCmdPipelineBarrier(commandBuffer, srcStageMask, dstStageMask, dependencyFlags,
                                memoryBarrierCount, pMemoryBarriers, bufferMemoryBarrierCount,
                                pBufferMemoryBarriers, imageMemoryBarrierCount,
                                pImageMemoryBarriers);
}

#ifdef WIRE_HAS_vkCmdCopyBuffer2
VKAPI_ATTR void VKAPI_CALL
icd_vkCmdCopyBuffer2(VkCommandBuffer commandBuffer, const VkCopyBufferInfo2 *pCopyBufferInfo)
{
   if (pCopyBufferInfo->pNext)
      (icd_command_buffer_from_handle(commandBuffer))->upload_no = true;
   for (uint32_t i = 0; i < pCopyBufferInfo->regionCount; i++) {
      if (pCopyBufferInfo->pRegions[i].pNext)
         (icd_command_buffer_from_handle(commandBuffer))->upload_no = true;
   }
   icd_upload_note_copy(commandBuffer, pCopyBufferInfo->srcBuffer, pCopyBufferInfo->dstBuffer,
             pCopyBufferInfo->regionCount, NULL, pCopyBufferInfo->pRegions);
   icd_gen_vkCmdCopyBuffer2(commandBuffer, pCopyBufferInfo);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdPipelineBarrier2(VkCommandBuffer commandBuffer, const VkDependencyInfo *pDependencyInfo)
{
   bool ownership = pDependencyInfo->pNext != NULL;
   for (uint32_t i = 0; i < pDependencyInfo->bufferMemoryBarrierCount; i++)
      ownership |= pDependencyInfo->pBufferMemoryBarriers[i].srcQueueFamilyIndex !=
                   pDependencyInfo->pBufferMemoryBarriers[i].dstQueueFamilyIndex;
   icd_upload_note_barrier(commandBuffer, pDependencyInfo->imageMemoryBarrierCount, ownership);
   icd_gen_vkCmdPipelineBarrier2(commandBuffer, pDependencyInfo);
}
#endif

#ifdef WIRE_HAS_vkCmdSetCheckpointGPUD
/* VK_NV_device_diagnostic_checkpoints: a marker is the application's own
 * pointer, which the driver never reads and hands back after a loss; it
 * travels as 64 bits, and comes back as the pointer it was. */
VKAPI_ATTR void VKAPI_CALL
icd_vkCmdSetCheckpointNV(VkCommandBuffer commandBuffer, const void *pCheckpointMarker)
{
   icd_gen_vkCmdSetCheckpointGPUD(commandBuffer, (uint64_t)(uintptr_t)pCheckpointMarker);
}
#endif
