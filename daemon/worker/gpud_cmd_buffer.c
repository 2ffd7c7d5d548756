/* SPDX-License-Identifier: MIT */
/*
 * Command buffers: the events and query pools a recording changes (so that
 * a submission of it marks them pending on the page), and a recording's
 * start.
 */
#include "gpud_call.h"
#include "gpud_lifetime.h"
#include "gpud_queue.h"
#include "gpud_replay.h"
#include "gpud_track.h"

#include <inttypes.h>
#include <stdlib.h>

#include "gpud_gen.h"
#include "wire_completion.h"
#include "gpud_transfer.h"

/* ---- the events and query pools a recording changes ------------------------ */

/* Distinct objects a command buffer's list holds; another one is asked
 * about from now on. */
#define CMD_WATCHED_MAX 64u

static void
cmd_watch(struct gpud_object *cmd, struct gpud_object *obj)
{
   if (!cmd || !obj ||
       !(obj->type == VK_OBJECT_TYPE_EVENT ? obj->event_tracked : obj->query_page != NULL))
      return;
   for (uint32_t i = 0; i < cmd->n_cmd_watched; i++) {
      if (cmd->cmd_watched[i] == obj->id)
         return;
   }
   if (!cmd->cmd_watched)
      cmd->cmd_watched = calloc(CMD_WATCHED_MAX, sizeof(*cmd->cmd_watched));
   if (cmd->cmd_watched && cmd->n_cmd_watched < CMD_WATCHED_MAX) {
      cmd->cmd_watched[cmd->n_cmd_watched++] = obj->id;
      return;
   }
   struct gpud_device_track *t = obj->device ? obj->device->dtrack : NULL;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (obj->type == VK_OBJECT_TYPE_QUERY_POOL)
      gpud_track_pool_write(t, obj->id, 0, true, false);
   else if (gpud_track_event_write(t, obj->event_slot, obj->id, VK_NULL_HANDLE, 0, true, EVENT_KEEP, 0))
      gpud_completion_wake(t->page);
   pthread_mutex_unlock(&t->mutex);
}

#define CMD_WATCH(cmd, type, member)                                                        \
   void gpud_exec_##cmd(struct gpud_call *call, struct wire_args_##cmd *a)                 \
   {                                                                                        \
      gpud_gen_exec_##cmd(call, a);                                                         \
      cmd_watch(gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,                        \
                                (uint64_t)(uintptr_t)a->commandBuffer),                     \
                gpud_call_named(call, type, (uint64_t)(uintptr_t)a->member));               \
   }

CMD_WATCH(vkCmdSetEvent, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetEvent, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdSetEvent2, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetEvent2, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetQueryPool, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdBeginQuery, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdEndQuery, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdWriteTimestamp, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdWriteTimestamp2, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdBeginQueryIndexedEXT, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdEndQueryIndexedEXT, VK_OBJECT_TYPE_QUERY_POOL, queryPool)

/* A secondary's events and pools are its primary's too. */
void
gpud_exec_vkCmdExecuteCommands(struct gpud_call *call, struct wire_args_vkCmdExecuteCommands *a)
{
   gpud_gen_exec_vkCmdExecuteCommands(call, a);
   struct gpud_object *primary = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                                 (uint64_t)(uintptr_t)a->commandBuffer);
   for (uint32_t i = 0; primary && i < a->commandBufferCount; i++) {
      const struct gpud_object *secondary =
         gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                         (uint64_t)(uintptr_t)a->pCommandBuffers[i]);
      for (uint32_t j = 0; secondary && secondary != primary && j < secondary->n_cmd_watched;
           j++)
         cmd_watch(primary, gpud_object_find(call->ctx, secondary->cmd_watched[j]));
   }
}

/* A new recording starts with nothing watched. */
void
gpud_exec_vkBeginCommandBuffer(struct gpud_call *call, struct wire_args_vkBeginCommandBuffer *a)
{
   struct gpud_object *cmd = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                             (uint64_t)(uintptr_t)a->commandBuffer);
   if (cmd) {
      cmd->n_cmd_watched = 0;
      gpud_transfer_begin(cmd);
      if (cmd->shard)
         atomic_store_explicit(&cmd->shard->recorded, true, memory_order_relaxed);
   }
   gpud_gen_exec_vkBeginCommandBuffer(call, a);
   /* recorded: nobody waits for the result (the ICD answered at once) */
   if (a->ret < 0)
      gpud_call_async_error(call, a->ret);
}

/* ---- transfers -------------------------------------------------------------- */

/* The simplest transfers are checked against the buffers' sizes, which the
 * daemon knows: an out-of-range one would make the host driver write past
 * the client's memory (in its own worker, which it could crash or
 * corrupt).  The check makes that a protocol error, deterministically. */
static bool
range_fits(struct gpud_call *call, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
           const char *what)
{
   const struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)buffer);
   if (!obj || obj->sparse)
      return true;
   if (size == VK_WHOLE_SIZE ? offset < obj->size
                             : offset <= obj->size && size <= obj->size - offset)
      return true;
   snprintf(call->validation_error, sizeof(call->validation_error),
            "%s: %" PRIu64 " bytes at %" PRIu64 " are past the end of a %" PRIu64
            "-byte buffer",
            what, size, offset, obj->size);
   gpud_call_fail(call, call->validation_error);
   return false;
}

void
gpud_exec_vkCmdUpdateBuffer(struct gpud_call *call, struct wire_args_vkCmdUpdateBuffer *a)
{
   if (range_fits(call, a->dstBuffer, a->dstOffset, a->dataSize, "dstBuffer"))
      gpud_gen_exec_vkCmdUpdateBuffer(call, a);
}

void
gpud_exec_vkCmdFillBuffer(struct gpud_call *call, struct wire_args_vkCmdFillBuffer *a)
{
   if (range_fits(call, a->dstBuffer, a->dstOffset, a->size, "dstBuffer"))
      gpud_gen_exec_vkCmdFillBuffer(call, a);
}

static bool
copies_fit(struct gpud_call *call, VkBuffer src, VkBuffer dst, uint32_t n,
           const VkBufferCopy *regions, const VkBufferCopy2 *regions2)
{
   for (uint32_t i = 0; i < n; i++) {
      VkDeviceSize s = regions ? regions[i].srcOffset : regions2[i].srcOffset;
      VkDeviceSize d = regions ? regions[i].dstOffset : regions2[i].dstOffset;
      VkDeviceSize size = regions ? regions[i].size : regions2[i].size;
      if (size == VK_WHOLE_SIZE || !range_fits(call, src, s, size, "source") ||
          !range_fits(call, dst, d, size, "destination")) {
         if (!call->dec.fatal)
            gpud_call_fail(call, "a region of VK_WHOLE_SIZE bytes");
         return false;
      }
   }
   return true;
}

void
gpud_exec_vkCmdCopyBuffer(struct gpud_call *call, struct wire_args_vkCmdCopyBuffer *a)
{
   if (!copies_fit(call, a->srcBuffer, a->dstBuffer, a->regionCount, a->pRegions, NULL))
      return;
   gpud_gen_exec_vkCmdCopyBuffer(call, a);
   gpud_transfer_note_copy(call, a->commandBuffer, a->srcBuffer, a->dstBuffer, a->regionCount,
                           a->pRegions, NULL);
}

void
gpud_exec_vkCmdCopyBuffer2(struct gpud_call *call, struct wire_args_vkCmdCopyBuffer2 *a)
{
   const VkCopyBufferInfo2 *info = a->pCopyBufferInfo;
   if (!copies_fit(call, info->srcBuffer, info->dstBuffer, info->regionCount, NULL,
                   info->pRegions))
      return;
   gpud_gen_exec_vkCmdCopyBuffer2(call, a);
   /* (a chain of its own, on the regions or the info: the GPU's) */
   bool chained = info->pNext != NULL;
   for (uint32_t i = 0; i < info->regionCount; i++)
      chained |= info->pRegions[i].pNext != NULL;
   if (chained)
      gpud_transfer_note_barrier(call, a->commandBuffer, true);
   else
      gpud_transfer_note_copy(call, a->commandBuffer, info->srcBuffer, info->dstBuffer,
                              info->regionCount, NULL, info->pRegions);
}

/* Barriers that only order buffers' memory leave a recording of copies the
 * worker may make itself; one of images (a layout changes) or that moves a
 * buffer between queue families is the GPU's. */
static bool
buffer_barrier_moves(uint32_t src_family, uint32_t dst_family)
{
   return src_family != dst_family;
}

/* A barrier whose buffers move between queue families, or that carries an
 * extension's structure, makes the recording the GPU's (gpud_transfer.c);
 * images always do.  bufs, mems: either generation's barriers. */
#define BARRIERS_NEED_GPU(gpu, bufs, n_bufs, mems, n_mems)                                \
   do {                                                                                  \
      for (uint32_t i = 0; i < (n_bufs); i++)                                            \
         (gpu) |= buffer_barrier_moves((bufs)[i].srcQueueFamilyIndex,                     \
                                       (bufs)[i].dstQueueFamilyIndex) ||                  \
                  (bufs)[i].pNext;                                                       \
      for (uint32_t i = 0; i < (n_mems); i++)                                            \
         (gpu) |= (mems)[i].pNext != NULL;                                               \
   } while (0)

void
gpud_exec_vkCmdPipelineBarrier(struct gpud_call *call, struct wire_args_vkCmdPipelineBarrier *a)
{
   gpud_gen_exec_vkCmdPipelineBarrier(call, a);
   bool gpu = a->imageMemoryBarrierCount != 0;
   BARRIERS_NEED_GPU(gpu, a->pBufferMemoryBarriers, a->bufferMemoryBarrierCount,
                     a->pMemoryBarriers, a->memoryBarrierCount);
   gpud_transfer_note_barrier(call, a->commandBuffer, gpu);
}

#ifdef WIRE_HAS_vkCmdPipelineBarrier2
void
gpud_exec_vkCmdPipelineBarrier2(struct gpud_call *call, struct wire_args_vkCmdPipelineBarrier2 *a)
{
   gpud_gen_exec_vkCmdPipelineBarrier2(call, a);
   const VkDependencyInfo *d = a->pDependencyInfo;
   bool gpu = d->imageMemoryBarrierCount != 0 || d->pNext;
   BARRIERS_NEED_GPU(gpu, d->pBufferMemoryBarriers, d->bufferMemoryBarrierCount,
                     d->pMemoryBarriers, d->memoryBarrierCount);
   gpud_transfer_note_barrier(call, a->commandBuffer, gpu);
}
#endif


/* ---- recordings: the state the replay checks chunks against (gpud_replay.c) ---- */

/* A reset ends the recording (the ICD starts the next at chunk 0). */
void
gpud_exec_vkResetCommandBuffer(struct gpud_call *call, struct wire_args_vkResetCommandBuffer *a)
{
   struct gpud_object *cb = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                            (uint64_t)(uintptr_t)a->commandBuffer);
   if (cb)
      cb->recording = false;
   gpud_gen_exec_vkResetCommandBuffer(call, a);
}

/* ---- command pools: a few host pools where lanes replay ----------------------- */

/*
 * A host driver records a pool's command buffers on one thread at a time,
 * and so would the lanes: where there are lanes, an application's pool is
 * a few host pools of the same flags and family (shards), its command
 * buffers dealt out to them in turn as they are allocated.  A program
 * that records one after the other in one pool (llama.cpp's graph, a
 * batch at a time) has them replayed side by side on lanes, each host
 * pool by one lane at a time (gpud_replay.c).  The first shard is the
 * pool's own host pool; the others are made as command buffers come.
 */

static struct gpud_object *
named_pool(struct gpud_call *call, VkCommandPool pool)
{
   return gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_POOL, (uint64_t)(uintptr_t)pool);
}

void
gpud_exec_vkCreateCommandPool(struct gpud_call *call, struct wire_args_vkCreateCommandPool *a)
{
   gpud_gen_exec_vkCreateCommandPool(call, a);
   call->new_create_flags = a->pCreateInfo->flags;
   call->new_queue_family = a->pCreateInfo->queueFamilyIndex;
}

/* The host pool the next command buffer of pool comes from: a new shard
 * in its turn (the pool's own where one cannot be made). */
static struct gpud_pool_shard *
next_shard(struct gpud_call *call, VkDevice device, struct gpud_object *pool)
{
   uint32_t s = pool->next_shard++ % pool->shards_max;
   if (s < pool->n_shards)
      return &pool->shards[s];
   const VkCommandPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = pool->pool_flags,
      .queueFamilyIndex = pool->queue_family,
   };
   VkCommandPool host = VK_NULL_HANDLE;
   if (call->disp->CreateCommandPool(device, &info, NULL, &host) != VK_SUCCESS) {
      /* as many as there are, then */
      pool->shards_max = pool->n_shards;
      return &pool->shards[s % pool->n_shards];
   }
   pool->shards[pool->n_shards].handle = (uint64_t)(uintptr_t)host;
   return &pool->shards[pool->n_shards++];
}

/* Frees a command buffer into the host pool it came from. */
static void
free_host_cb(struct gpud_call *call, VkDevice device, const struct gpud_object *pool,
             const struct gpud_pool_shard *shard, VkCommandBuffer cb)
{
   VkCommandPool host = (VkCommandPool)(uintptr_t)(shard ? shard->handle : pool->handle);
   call->disp->FreeCommandBuffers(device, host, 1, &cb);
}

/* New command buffers, dealt out to the pool's host pools where lanes
 * replay.  A pool with secondaries: its resets wait for every lane (a
 * primary on another lane may be executing one). */
void
gpud_exec_vkAllocateCommandBuffers(struct gpud_call *call,
                                   struct wire_args_vkAllocateCommandBuffers *a)
{
   const VkCommandBufferAllocateInfo *info = a->pAllocateInfo;
   struct gpud_object *pool = named_pool(call, info->commandPool);
   if (pool && info->level == VK_COMMAND_BUFFER_LEVEL_SECONDARY)
      pool->secondaries = true;
   unsigned want = gpud_replay_pool_shards(call->ctx->replay);
   if (!pool || !want) {
      gpud_gen_exec_vkAllocateCommandBuffers(call, a);
      return;
   }
   if (!pool->shards) {
      pool->shards = calloc(want, sizeof(*pool->shards));
      if (!pool->shards) {
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
         return;
      }
      pool->shards[0].handle = pool->handle;
      pool->n_shards = 1;
      pool->shards_max = want;
   }
   uint32_t n = info->commandBufferCount;
   call->new_cb_shards = wire_dec_alloc(&call->dec, sizeof(*call->new_cb_shards) * (n ? n : 1));
   if (!call->new_cb_shards) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   for (uint32_t i = 0; i < n; i++) {
      struct gpud_pool_shard *shard = next_shard(call, a->device, pool);
      VkCommandBufferAllocateInfo one = *info;
      one.commandPool = (VkCommandPool)(uintptr_t)shard->handle;
      one.commandBufferCount = 1;
      a->ret = call->disp->AllocateCommandBuffers(a->device, &one, &a->pCommandBuffers[i]);
      if (a->ret != VK_SUCCESS) {
         /* all or none, as the API's */
         for (uint32_t j = 0; j < i; j++)
            free_host_cb(call, a->device, pool, call->new_cb_shards[j], a->pCommandBuffers[j]);
         return;
      }
      call->new_cb_shards[i] = shard;
   }
   call->n_new_cb_shards = n;
}

void
gpud_exec_vkFreeCommandBuffers(struct gpud_call *call, struct wire_args_vkFreeCommandBuffers *a)
{
   const struct gpud_object *pool = named_pool(call, a->commandPool);
   if (!pool || !pool->shards) {
      gpud_gen_exec_vkFreeCommandBuffers(call, a);
      return;
   }
   for (uint32_t i = 0; i < a->commandBufferCount; i++) {
      if (!a->pCommandBuffers[i])
         continue;
      const struct gpud_object *cb = gpud_call_named(
         call, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)a->pCommandBuffers[i]);
      free_host_cb(call, a->device, pool, cb ? cb->shard : NULL, a->pCommandBuffers[i]);
   }
}

/* A reset ends the recording of every command buffer of the pool (the ICD
 * starts the next at chunk 0); every host pool of it resets that had a
 * recording begun since its last reset (the others' command buffers are
 * in their initial state already: a program that records one command
 * buffer of a pool at a time, as ggml's staged copies do, resets one host
 * pool, not each), and all of them where the resources go back. */
void
gpud_exec_vkResetCommandPool(struct gpud_call *call, struct wire_args_vkResetCommandPool *a)
{
   struct gpud_object *pool = named_pool(call, a->commandPool);
   if (pool)
      pool->pool_resets++;
   gpud_gen_exec_vkResetCommandPool(call, a);
   if (!pool)
      return;
   /* (the pool's own host pool, the first, was reset above) */
   const bool release = a->flags & VK_COMMAND_POOL_RESET_RELEASE_RESOURCES_BIT;
   for (uint32_t s = 1; a->ret == VK_SUCCESS && s < pool->n_shards; s++) {
      struct gpud_pool_shard *shard = &pool->shards[s];
      if (atomic_exchange_explicit(&shard->recorded, false, memory_order_relaxed) || release)
         a->ret = call->disp->ResetCommandPool(a->device, (VkCommandPool)(uintptr_t)shard->handle,
                                              a->flags);
   }
}

void
gpud_exec_vkTrimCommandPool(struct gpud_call *call, struct wire_args_vkTrimCommandPool *a)
{
   const struct gpud_object *pool = named_pool(call, a->commandPool);
   gpud_gen_exec_vkTrimCommandPool(call, a);
   for (uint32_t s = 1; pool && s < pool->n_shards; s++)
      call->disp->TrimCommandPool(a->device, (VkCommandPool)(uintptr_t)pool->shards[s].handle,
                                  a->flags);
}

void
gpud_cmd_pool_destroy_shards(const struct gpud_host_dispatch *disp, VkDevice device,
                             struct gpud_object *pool)
{
   for (uint32_t s = 1; s < pool->n_shards; s++)
      disp->DestroyCommandPool(device, (VkCommandPool)(uintptr_t)pool->shards[s].handle, NULL);
   pool->n_shards = pool->shards ? 1 : 0;
}

void
gpud_exec_vkDestroyCommandPool(struct gpud_call *call, struct wire_args_vkDestroyCommandPool *a)
{
   struct gpud_object *pool = named_pool(call, a->commandPool);
   if (pool)
      gpud_cmd_pool_destroy_shards(call->disp, a->device, pool);
   gpud_gen_exec_vkDestroyCommandPool(call, a);
}
