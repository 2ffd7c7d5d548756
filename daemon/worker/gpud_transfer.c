/* SPDX-License-Identifier: MIT */
/*
 * Copies the worker makes itself (gpud_transfer.h).  While a command
 * buffer is recorded, the worker notes whether it holds anything but
 * buffer-to-buffer copies and barriers of buffers, and the copies' regions
 * (already checked against the buffers' sizes).  A submission of such
 * command buffers alone, with no semaphores, whose copies read memory the
 * worker maps cached (a memfd shared with the application) and write
 * memory it maps (that, or coherent device memory the host lets it map),
 * runs as memmove() once the device has nothing in flight: what the GPU
 * would have done in the same order, the fence raised on the completion
 * page at once.  Everything else goes to the host as before.
 *
 * The host never sees such a submission: its command buffers stay
 * executable there (a later reset or begin is as valid as after a
 * submission), the application's fence stays unsignalled there, which is
 * why only a fence the page answers for qualifies (not one imported or
 * exported: the host's state of those is what counts), and the copies see
 * what the GPU's earlier work wrote because all of it is complete (the
 * device idle) and coherent.
 */
#include "gpud_transfer.h"

#include <stdlib.h>
#include <string.h>

#include "gpud_queue.h"
#include "util_macros.h"

/* Regions a recording may note (beyond that it is the GPU's). */
#define TRANSFER_MAX_REGIONS 64u

struct transfer_copy {
   uint64_t src, dst; /* the buffers' ids */
   VkDeviceSize src_offset, dst_offset, size;
};

struct gpud_transfer {
   bool gpu; /* it holds what only the GPU does */
   uint32_t n;
   struct transfer_copy copies[TRANSFER_MAX_REGIONS];
};

static struct gpud_transfer *
transfer_of(struct gpud_call *call, VkCommandBuffer cb)
{
   struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)cb);
   return obj ? obj->transfer : NULL;
}

void
gpud_transfer_begin(struct gpud_object *cb)
{
   if (!cb->transfer)
      cb->transfer = malloc(sizeof(*cb->transfer));
   if (cb->transfer) {
      cb->transfer->gpu = false;
      cb->transfer->n = 0;
   }
}

void
gpud_transfer_note_op(struct gpud_object *cb, uint32_t op)
{
   switch (op) {
   case WIRE_OP_vkBeginCommandBuffer:
   case WIRE_OP_vkCmdCopyBuffer:
   case WIRE_OP_vkCmdPipelineBarrier:
#ifdef WIRE_HAS_vkCmdCopyBuffer2
   case WIRE_OP_vkCmdCopyBuffer2:
   case WIRE_OP_vkCmdPipelineBarrier2:
#endif
      return; /* (their executors note the rest) */
   default:
      if (cb->transfer)
         cb->transfer->gpu = true;
   }
}

void
gpud_transfer_note_copy(struct gpud_call *call, VkCommandBuffer cb, VkBuffer src, VkBuffer dst,
                        uint32_t n, const VkBufferCopy *regions, const VkBufferCopy2 *regions2)
{
   struct gpud_transfer *t = transfer_of(call, cb);
   const struct gpud_object *s =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)src);
   const struct gpud_object *d =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)dst);
   if (!t || t->gpu)
      return;
   if (!s || !d || s->sparse || d->sparse || n > TRANSFER_MAX_REGIONS - t->n) {
      t->gpu = true;
      return;
   }
   for (uint32_t i = 0; i < n; i++) {
      t->copies[t->n++] = (struct transfer_copy){
         .src = s->id,
         .dst = d->id,
         .src_offset = regions ? regions[i].srcOffset : regions2[i].srcOffset,
         .dst_offset = regions ? regions[i].dstOffset : regions2[i].dstOffset,
         .size = regions ? regions[i].size : regions2[i].size,
      };
   }
}

void
gpud_transfer_note_barrier(struct gpud_call *call, VkCommandBuffer cb, bool gpu_only)
{
   struct gpud_transfer *t = transfer_of(call, cb);
   if (t && gpu_only)
      t->gpu = true;
}

void
gpud_transfer_free(struct gpud_object *cb)
{
   free(cb->transfer);
   cb->transfer = NULL;
}

/* ---- running them ------------------------------------------------------------ */

struct run {
   struct gpud_call *call;
   const struct gpud_host_dispatch *disp;
   VkDevice dev;
   const struct gpud_object *const *cbs;
   uint32_t n_cbs;
};

/* Where the worker reads (cached: a memfd) or writes (also coherent device
 * memory the host maps for it, mapped now) a buffer's bytes; NULL: not. */
static uint8_t *
buffer_bytes(struct run *r, uint64_t id, bool write)
{
   struct gpud_object *buf = gpud_object_find(r->call->ctx, id);
   struct gpud_object *mem = buf && buf->type == VK_OBJECT_TYPE_BUFFER ? buf->memory : NULL;
   if (!mem || !buf->bound)
      return NULL;
   if (mem->map)
      return (uint8_t *)mem->map + buf->memory_offset;
   const struct gpud_host *host = r->call->ctx->host;
   if (!write || mem->host_type >= host->memory.memoryTypeCount)
      return NULL;
   const VkMemoryPropertyFlags flags = host->memory.memoryTypes[mem->host_type].propertyFlags;
   const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   if ((flags & want) != want)
      return NULL;
   if (!mem->host_map) {
      void *p = NULL;
      if (r->disp->MapMemory(r->dev, (VkDeviceMemory)(uintptr_t)mem->handle, 0, VK_WHOLE_SIZE,
                             0, &p) != VK_SUCCESS)
         return NULL;
      mem->host_map = p;
   }
   return (uint8_t *)mem->host_map + buf->memory_offset;
}

/* Every copy's ends first, then the copies, in the order recorded. */
static bool
run_copies(void *data)
{
   struct run *r = data;
   for (int pass = 0; pass < 2; pass++) {
      for (uint32_t i = 0; i < r->n_cbs; i++) {
         const struct gpud_transfer *t = r->cbs[i]->transfer;
         for (uint32_t k = 0; k < t->n; k++) {
            const struct transfer_copy *c = &t->copies[k];
            uint8_t *src = buffer_bytes(r, c->src, false);
            uint8_t *dst = buffer_bytes(r, c->dst, true);
            if (!src || !dst)
               return false;
            if (pass)
               memmove(dst + c->dst_offset, src + c->src_offset, c->size);
         }
      }
   }
   return true;
}

/* Whether a command buffer's recording is copies alone, and ready. */
static const struct gpud_object *
copy_only(struct gpud_call *call, VkCommandBuffer cb)
{
   const struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)cb);
   if (!obj || obj->recording || !obj->transfer || obj->transfer->gpu)
      return NULL;
   return obj;
}

static bool
run_idle(struct gpud_call *call, VkQueue queue, VkFence fence,
         const struct gpud_object *const *cbs, uint32_t n_cbs)
{
   struct gpud_object *q = gpud_call_named(call, VK_OBJECT_TYPE_QUEUE, (uint64_t)(uintptr_t)queue);
   struct gpud_object *f =
      fence ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)fence) : NULL;
   if (!q || !q->device || (fence && (!f || f->fence_external)))
      return false;
   struct run r = {
      .call = call,
      .disp = call->disp,
      .dev = (VkDevice)(uintptr_t)q->device->handle,
      .cbs = cbs,
      .n_cbs = n_cbs,
   };
   if (!r.disp->MapMemory || !gpud_queue_run_idle(q, f, run_copies, &r))
      return false;
   if (call->ctx->profile)
      call->ctx->profile->worker_copies++;
   return true;
}

#define MAX_CBS 16u

/* A submission's chain: nothing, or timeline values for no semaphores (ggml
 * chains them to every submission). */
static bool
plain_chain(const void *next)
{
   for (const VkBaseInStructure *c = next; c; c = c->pNext) {
      if (c->sType != VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
         return false;
   }
   return true;
}

/* GPUD_WORKER_COPIES=off in the daemon's environment gives every
 * submission to the host (to compare, or to measure). */
static bool
worker_copies(void)
{
   static int on = -1;
   if (on < 0) {
      const char *v = getenv("GPUD_WORKER_COPIES");
      on = !(v && (!strcmp(v, "off") || !strcmp(v, "0")));
   }
   return on;
}

bool
gpud_transfer_submit(struct gpud_call *call, struct wire_args_vkQueueSubmit *a)
{
   const struct gpud_object *cbs[MAX_CBS];
   uint32_t n = 0;
   if (!worker_copies())
      return false;
   for (uint32_t i = 0; i < a->submitCount; i++) {
      const VkSubmitInfo *s = &a->pSubmits[i];
      if (!plain_chain(s->pNext) || s->waitSemaphoreCount || s->signalSemaphoreCount ||
          s->commandBufferCount > MAX_CBS - n)
         return false;
      for (uint32_t k = 0; k < s->commandBufferCount; k++) {
         if (!(cbs[n++] = copy_only(call, s->pCommandBuffers[k])))
            return false;
      }
   }
   if (!n || !run_idle(call, a->queue, a->fence, cbs, n))
      return false;
   a->ret = VK_SUCCESS;
   return true;
}

bool
gpud_transfer_submit2(struct gpud_call *call, struct wire_args_vkQueueSubmit2 *a)
{
   const struct gpud_object *cbs[MAX_CBS];
   uint32_t n = 0;
   if (!worker_copies())
      return false;
   for (uint32_t i = 0; i < a->submitCount; i++) {
      const VkSubmitInfo2 *s = &a->pSubmits[i];
      if (!plain_chain(s->pNext) || s->flags || s->waitSemaphoreInfoCount ||
          s->signalSemaphoreInfoCount ||
          s->commandBufferInfoCount > MAX_CBS - n)
         return false;
      for (uint32_t k = 0; k < s->commandBufferInfoCount; k++) {
         const VkCommandBufferSubmitInfo *c = &s->pCommandBufferInfos[k];
         if (c->pNext || c->deviceMask > 1 || !(cbs[n++] = copy_only(call, c->commandBuffer)))
            return false;
      }
   }
   if (!n || !run_idle(call, a->queue, a->fence, cbs, n))
      return false;
   a->ret = VK_SUCCESS;
   return true;
}

/* ---- buffers' memory types ---------------------------------------------------- */

/* Buffers up to this size are steered: the GPU reads a large one, a model's
 * weights, slower from the mappable memory (llama.cpp's prompt processing
 * on the H200: 0.86x with every buffer there, 0.93x with those up to
 * 64 MiB, docs/performance.md), and it is the small ones a program stages
 * its inputs into. */
#define STEER_MAX_BYTES (64ull << 20)

uint32_t
gpud_transfer_buffer_types(const struct gpud_host *host, uint32_t types, uint64_t size)
{
   if (size > STEER_MAX_BYTES)
      return types;
   const VkPhysicalDeviceMemoryProperties *m = &host->memory;
   const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   uint32_t out = types;
   for (uint32_t b = 0; b < m->memoryTypeCount && b < 32; b++) {
      /* device memory the worker may map, which the application sees as
       * device memory only (no memfd can be imported into it) */
      if (!(types & (1u << b)) || (host->importable_types & (1u << b)) ||
          (m->memoryTypes[b].propertyFlags & mappable) != mappable ||
          (m->memoryTypes[b].propertyFlags & VK_MEMORY_PROPERTY_PROTECTED_BIT))
         continue;
      /* ... stands for the plain device memory of its heap */
      for (uint32_t p = 0; p < m->memoryTypeCount && p < 32; p++) {
         if (m->memoryTypes[p].heapIndex == m->memoryTypes[b].heapIndex &&
             m->memoryTypes[p].propertyFlags == VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            out &= ~(1u << p);
      }
   }
   return out;
}
