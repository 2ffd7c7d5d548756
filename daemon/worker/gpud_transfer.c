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

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpud_queue.h"
#include "util_env.h"
#include "util_macros.h"
#include "util_time.h"
#include "wire_copies.h"

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
   /* (the copies' and barriers' executors note the rest) */
   if (!wire_op_copies_only(op) && cb->transfer)
      cb->transfer->gpu = true;
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
object_bytes(struct run *r, struct gpud_object *buf, bool write)
{
   struct gpud_object *mem = buf && buf->type == VK_OBJECT_TYPE_BUFFER ? buf->memory : NULL;
   if (!mem || !buf->bound || buf->sparse)
      return NULL;
   if (mem->map)
      return (uint8_t *)mem->map + buf->memory_offset;
   const struct daemon_host *host = r->call->ctx->host;
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

static uint8_t *
buffer_bytes(struct run *r, uint64_t id, bool write)
{
   return object_bytes(r, gpud_object_find(r->call->ctx, id), write);
}

/* Bytes the worker's CPU writes into device memory (through the host's
 * mapping: uncached, over the bus) for one submission, at most: beyond
 * that the GPU's copy, reading host memory at the bus's speed, ends sooner
 * (gpud_bench's staged uploads on an H100: 2 MiB took 1.5x the driver's
 * time written by the CPU). */
#define CPU_DEVICE_BYTES_MAX (1u << 20)

/* Every copy's ends first, then the copies, in the order recorded. */
static bool
run_copies(void *data)
{
   struct run *r = data;
   uint64_t device_bytes = 0;
   for (int pass = 0; pass < 2; pass++) {
      for (uint32_t i = 0; i < r->n_cbs; i++) {
         const struct gpud_transfer *t = r->cbs[i]->transfer;
         for (uint32_t k = 0; k < t->n; k++) {
            const struct transfer_copy *c = &t->copies[k];
            struct gpud_object *d = gpud_object_find(r->call->ctx, c->dst);
            uint8_t *src = buffer_bytes(r, c->src, false);
            uint8_t *dst = object_bytes(r, d, true);
            if (!src || !dst)
               return false;
            if (pass)
               memmove(dst + c->dst_offset, src + c->src_offset, c->size);
            else if (!d->memory->map && (device_bytes += c->size) > CPU_DEVICE_BYTES_MAX)
               return false;
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
   if (!r.disp->MapMemory || !gpud_queue_run_idle(q, f, true, 0, run_copies, &r))
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
   if (on < 0)
      on = !util_env_off("GPUD_WORKER_COPIES");
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

/* ---- copies the ICD made a submission of ----------------------------------- */

/* What the ICD may send at once (icd_queue.c sends less). */
#define UPLOAD_MAX_REGIONS 64u
#define UPLOAD_MAX_BYTES (1u << 20)
/* The time the ICD may say its copies took, at most. */
#define UPLOAD_MAX_ICD_NS (1000ull * 1000 * 1000)

/* A command buffer for copies the ICD sent, with its own pool (reset whole)
 * and fence (the way without the tracker); in flight on queue as its
 * submission seq (gpud_queue_submit_own) until that is done. */
struct gpud_upload {
   struct gpud_upload *next;
   uint32_t family;
   VkCommandPool pool;
   VkCommandBuffer cb;
   VkFence fence;
   struct gpud_object *queue; /* NULL: free */
   uint64_t seq;
   /* for larger copies: a buffer in memory the host maps, copied from on
    * the GPU (VK_NULL_HANDLE until one is that large) */
   VkBuffer staging;
   VkDeviceMemory staging_memory;
   void *staging_map;
   VkDeviceSize staging_size;
};

/* Copies of more bytes than this go through the command buffer's staging
 * buffer (vkCmdCopyBuffer); fewer are written inline (vkCmdUpdateBuffer,
 * which the NVIDIA driver runs slower for large ones). */
#define UPLOAD_INLINE_BYTES (64u << 10)

/* Command buffers a device keeps for them at most: beyond, the next waits
 * for those in flight. */
#define UPLOAD_SLOTS 8u

struct upload_run {
   struct run r;
   const struct wire_args_vkQueueUploadGPUD *a;
   struct gpud_object **bufs;
   struct gpud_object *src; /* the ICD's upload memory (NULL: the bytes sent) */
};

/* The copies into memory the worker maps, once nothing is in flight. */
static bool
upload_cpu(void *data)
{
   struct upload_run *u = data;
   const uint8_t *src = u->src ? object_bytes(&u->r, u->src, false) : u->a->pData;
   if (!src)
      return false;
   for (int pass = 0; pass < 2; pass++) {
      for (uint32_t i = 0; i < u->a->regionCount; i++) {
         const VkBufferCopy *c = &u->a->pRegions[i];
         uint8_t *dst = object_bytes(&u->r, u->bufs[i], true);
         if (!dst)
            return false;
         /* (upload memory is the client's: it may be bound where dst is) */
         if (pass)
            memmove(dst + c->dstOffset, src + c->srcOffset, c->size);
      }
   }
   return true;
}

/* The device's first command buffer of the family that is not in flight
 * (NULL: none); *ret_n how many the device has. */
static struct gpud_upload *
upload_free(struct gpud_object *device, uint32_t family, unsigned *ret_n)
{
   *ret_n = 0;
   for (struct gpud_upload *u = device->upload; u; u = u->next, (*ret_n)++) {
      if (u->family != family)
         continue;
      if (u->queue && gpud_queue_done(u->queue, u->seq))
         u->queue = NULL;
      if (!u->queue)
         return u;
   }
   return NULL;
}

/* A free command buffer of the family's, made where none is. */
static struct gpud_upload *
upload_of(struct run *r, struct gpud_object *device, uint32_t family)
{
   unsigned n;
   struct gpud_upload *u = upload_free(device, family, &n);
   if (!u && n >= UPLOAD_SLOTS) {
      /* every one in flight: once they are done, the first of the family */
      gpud_queue_own_wait(device, NULL);
      u = upload_free(device, family, &n);
   }
   if (u)
      return u;
   const struct gpud_host_dispatch *d = r->disp;
   if (!d->CreateCommandPool || !d->AllocateCommandBuffers || !d->CreateFence ||
       !d->CmdUpdateBuffer || !d->CmdPipelineBarrier || !d->WaitForFences || !d->ResetFences ||
       !d->ResetCommandPool || !d->DestroyCommandPool || !d->DestroyFence)
      return NULL;
   u = calloc(1, sizeof(*u));
   if (!u)
      return NULL;
   u->family = family;
   const VkCommandPoolCreateInfo pi = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
      .queueFamilyIndex = family,
   };
   const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   if (d->CreateCommandPool(r->dev, &pi, NULL, &u->pool) != VK_SUCCESS) {
      free(u);
      return NULL;
   }
   const VkCommandBufferAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = u->pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   if (d->AllocateCommandBuffers(r->dev, &ai, &u->cb) != VK_SUCCESS ||
       d->CreateFence(r->dev, &fi, NULL, &u->fence) != VK_SUCCESS) {
      d->DestroyCommandPool(r->dev, u->pool, NULL);
      free(u);
      return NULL;
   }
   u->next = device->upload;
   device->upload = u;
   return u;
}

static void
staging_free(const struct gpud_host_dispatch *d, VkDevice dev, struct gpud_upload *u)
{
   if (u->staging)
      d->DestroyBuffer(dev, u->staging, NULL);
   if (u->staging_memory)
      d->FreeMemory(dev, u->staging_memory, NULL); /* (unmapped with it) */
   u->staging = VK_NULL_HANDLE;
   u->staging_memory = VK_NULL_HANDLE;
   u->staging_map = NULL;
   u->staging_size = 0;
}

/* The command buffer's staging buffer, of at least size bytes (made, or
 * made larger, in whole MiB); false: none (the copies go inline). */
static bool
staging_of(struct run *r, struct gpud_upload *u, VkDeviceSize size)
{
   if (u->staging_size >= size)
      return true;
   const struct gpud_host_dispatch *d = r->disp;
   if (!d->CreateBuffer || !d->GetBufferMemoryRequirements || !d->AllocateMemory ||
       !d->BindBufferMemory || !d->MapMemory || !d->DestroyBuffer || !d->FreeMemory ||
       !d->CmdCopyBuffer)
      return false;
   staging_free(d, r->dev, u);
   size = (size + (1u << 20) - 1) & ~(VkDeviceSize)((1u << 20) - 1);
   const VkBufferCreateInfo bi = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   if (d->CreateBuffer(r->dev, &bi, NULL, &u->staging) != VK_SUCCESS) {
      u->staging = VK_NULL_HANDLE;
      return false;
   }
   VkMemoryRequirements req;
   d->GetBufferMemoryRequirements(r->dev, u->staging, &req);
   /* host memory the CPU writes through (coherent), device-local last */
   const VkPhysicalDeviceMemoryProperties *m = &r->call->ctx->host->memory;
   const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   uint32_t type = UINT32_MAX;
   for (int pass = 0; pass < 2 && type == UINT32_MAX; pass++) {
      for (uint32_t i = 0; i < m->memoryTypeCount && i < 32; i++) {
         VkMemoryPropertyFlags f = m->memoryTypes[i].propertyFlags;
         if ((req.memoryTypeBits & (1u << i)) && (f & want) == want &&
             !(f & VK_MEMORY_PROPERTY_PROTECTED_BIT) &&
             (pass || !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))) {
            type = i;
            break;
         }
      }
   }
   const VkMemoryAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = type,
   };
   if (type == UINT32_MAX ||
       d->AllocateMemory(r->dev, &ai, NULL, &u->staging_memory) != VK_SUCCESS) {
      u->staging_memory = VK_NULL_HANDLE;
      staging_free(d, r->dev, u);
      return false;
   }
   if (d->BindBufferMemory(r->dev, u->staging, u->staging_memory, 0) != VK_SUCCESS ||
       d->MapMemory(r->dev, u->staging_memory, 0, VK_WHOLE_SIZE, 0, &u->staging_map) !=
          VK_SUCCESS) {
      staging_free(d, r->dev, u);
      return false;
   }
   u->staging_size = size;
   return true;
}

void
gpud_transfer_device_end(struct gpud_object *device)
{
   const struct gpud_host_dispatch *d = device->disp;
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   while (device->upload) {
      struct gpud_upload *u = device->upload;
      device->upload = u->next;
      staging_free(d, dev, u);
      d->DestroyFence(dev, u->fence, NULL);
      d->DestroyCommandPool(dev, u->pool, NULL); /* (its command buffer with it) */
      free(u);
   }
}

/* The worker waits for its own copies on the GPU in slices of this, until
 * the host says they are done or the device lost, or the client leaves. */
#define UPLOAD_WAIT_NS (1000ull * 1000 * 1000)

enum upload_way {
   UPLOAD_FAILED,
   UPLOAD_TRACKED, /* on its way, counted by the queue's tracker */
   UPLOAD_WAITED,  /* done (no tracker: waited for) */
};

/* The copies on the GPU, after everything submitted to the queue before
 * and before everything after (barriers of all memory on both sides): as
 * one of the queue's tracked submissions, which raises app_fence when it is
 * done and holds back what could see them on other queues
 * (gpud_queue_submit_own), or, where the queue has no tracker, waited for. */
static enum upload_way
upload_gpu(struct upload_run *u, struct gpud_object *queue, struct gpud_object *app_fence,
           bool counted)
{
   const struct gpud_host_dispatch *d = u->r.disp;
   struct gpud_upload *up = upload_of(&u->r, queue->device, queue->queue_family);
   if (!up)
      return UPLOAD_FAILED;
   const VkCommandBufferBeginInfo bi = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   const VkMemoryBarrier mb = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT,
   };
   if (d->ResetCommandPool(u->r.dev, up->pool, 0) != VK_SUCCESS ||
       d->BeginCommandBuffer(up->cb, &bi) != VK_SUCCESS)
      return UPLOAD_FAILED;
   d->CmdPipelineBarrier(up->cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
   if (u->src) {
      /* from the ICD's upload memory, where the ICD wrote the bytes */
      for (uint32_t i = 0; i < u->a->regionCount; i++)
         d->CmdCopyBuffer(up->cb, u->a->srcBuffer, u->a->pBuffers[i], 1, &u->a->pRegions[i]);
   } else if (u->a->dataSize > UPLOAD_INLINE_BYTES && staging_of(&u->r, up, u->a->dataSize)) {
      /* the bytes as sent, each region copied from where it is in them */
      memcpy(up->staging_map, u->a->pData, u->a->dataSize);
      for (uint32_t i = 0; i < u->a->regionCount; i++) {
         const VkBufferCopy *c = &u->a->pRegions[i];
         d->CmdCopyBuffer(up->cb, up->staging, u->a->pBuffers[i], 1, c);
      }
   } else {
      for (uint32_t i = 0; i < u->a->regionCount; i++) {
         const VkBufferCopy *c = &u->a->pRegions[i];
         for (VkDeviceSize at = 0; at < c->size; at += 65536) {
            VkDeviceSize n = UTIL_MIN(c->size - at, 65536);
            d->CmdUpdateBuffer(up->cb, u->a->pBuffers[i], c->dstOffset + at, n,
                               (const uint8_t *)u->a->pData + c->srcOffset + at);
         }
      }
   }
   d->CmdPipelineBarrier(up->cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
   if (d->EndCommandBuffer(up->cb) != VK_SUCCESS)
      return UPLOAD_FAILED;
   uint64_t seq = 0;
   VkResult res = gpud_queue_submit_own(u->r.call, queue, up->cb, app_fence, counted, &seq);
   if (res == VK_SUCCESS) {
      up->queue = queue;
      up->seq = seq;
      return UPLOAD_TRACKED;
   }
   if (res != VK_NOT_READY)
      return UPLOAD_FAILED;
   const VkSubmitInfo si = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &up->cb,
   };
   res = d->QueueSubmit(u->a->queue, 1, &si, up->fence);
   if (res == VK_SUCCESS) {
      /* (the queue may wait behind another queue's long work) */
      do
         res = d->WaitForFences(u->r.dev, 1, &up->fence, VK_TRUE, UPLOAD_WAIT_NS);
      while (res == VK_TIMEOUT && !atomic_load(&u->r.call->ctx->closing));
   }
   if (res == VK_SUCCESS)
      res = d->ResetFences(u->r.dev, 1, &up->fence);
   return res == VK_SUCCESS ? UPLOAD_WAITED : UPLOAD_FAILED;
}

/* Copies the ICD took for made that the worker could not make: the
 * application's bytes are not where it was told they are, so its device is
 * lost (every wait on the page ends). */
static void
upload_lost(struct gpud_call *call, struct gpud_object *device, const char *why)
{
   if (atomic_exchange(&device->lost, true))
      return;
   gpud_queue_device_lost(device);
   gpud_context_log(call->ctx, UTIL_LOG_WARNING,
                    "copies the ICD sent could not be made (%s): the device is lost", why);
}

/* GPUD_TEST_UPLOAD=gpu (the tests, a build with test hooks): the copies on
 * the GPU even where the worker could make them. */
static bool
upload_gpu_always(void)
{
#ifdef GPUD_TEST_HOOKS
   static int on = -1;
   if (on < 0) {
      const char *v = getenv("GPUD_TEST_UPLOAD");
      on = v && !strcmp(v, "gpu");
   }
   return on;
#else
   return false;
#endif
}

void
gpud_exec_vkQueueUploadGPUD(struct gpud_call *call, struct wire_args_vkQueueUploadGPUD *a)
{
   struct gpud_object *queue =
      gpud_call_named(call, VK_OBJECT_TYPE_QUEUE, (uint64_t)(uintptr_t)a->queue);
   struct gpud_object *fence =
      a->fence ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence)
               : NULL;
   struct gpud_object *src =
      a->srcBuffer
         ? gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->srcBuffer)
         : NULL;
   struct gpud_object *done =
      a->doneFence
         ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->doneFence)
         : NULL;
   if (!queue || !queue->device || (a->fence && !fence) || (a->srcBuffer && !src) ||
       (a->doneFence && !done)) {
      gpud_call_fail(call, "vkQueueUploadGPUD: no such queue, buffer or fence");
      return;
   }
   if (a->regionCount > UPLOAD_MAX_REGIONS || a->dataSize > UPLOAD_MAX_BYTES) {
      gpud_call_fail(call, "vkQueueUploadGPUD: too many copies");
      return;
   }
   /* upload memory: a buffer to copy from, bound to memory the worker maps,
    * instead of bytes; the fence raised once the copies are done is the
    * ICD's own (the application's was signalled by the ICD) */
   if (src && (src->device != queue->device || !src->bound || src->sparse ||
               !src->buffer_transfer_src || !src->memory || !src->memory->map || a->dataSize)) {
      gpud_call_fail(call, "vkQueueUploadGPUD: not upload memory");
      return;
   }
   if (done && (done->device != queue->device || !done->fence_tracked || done->fence_external ||
                (fence && !a->signalled))) {
      gpud_call_fail(call, "vkQueueUploadGPUD: not a fence for the upload memory");
      return;
   }
   const VkDeviceSize src_size = src ? src->size : a->dataSize;
   struct gpud_object *bufs[UPLOAD_MAX_REGIONS];
   for (uint32_t i = 0; i < a->regionCount; i++) {
      const VkBufferCopy *c = &a->pRegions[i];
      bufs[i] = gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->pBuffers[i]);
      const struct gpud_object *b = bufs[i];
      /* what vkCmdUpdateBuffer takes, inside the bytes sent (or the upload
       * memory) and the buffer */
      if (!b || b->device != queue->device || !b->bound || b->sparse || !c->size ||
          (c->dstOffset | c->size) & 3 || c->srcOffset > src_size ||
          c->size > src_size - c->srcOffset || c->dstOffset > b->size ||
          c->size > b->size - c->dstOffset) {
         gpud_call_fail(call, "vkQueueUploadGPUD: a copy outside its buffer");
         return;
      }
   }
   if (queue->device->lost)
      return;
   struct upload_run u = {
      .r =
         {
            .call = call,
            .disp = call->disp,
            .dev = (VkDevice)(uintptr_t)queue->device->handle,
         },
      .a = a,
      .bufs = bufs,
      .src = src,
   };
   bool tracked = fence && fence->fence_tracked && !fence->fence_external;
   /* the fence the worker raises on the page: not one the ICD signalled
    * there (by now the application may have reset it, or destroyed it and
    * given its slot to another), but the upload memory's */
   struct gpud_object *app_fence = tracked && !a->signalled ? fence : done;
   /* (counted: the ICD counts it among its submissions, and waits for the
    * page to count it before it reads the memory it writes) */
   bool counted = a->counted && a->regionCount;
   bool cpu = false;
   /* the client's own word, on its own time alone: bounded, so that no sum
    * wraps */
   a->copyNs = UTIL_MIN(a->copyNs, UPLOAD_MAX_ICD_NS);
   if (!a->regionCount) {
      /* the ICD made every copy: the queue counts them */
      gpud_queue_ran(queue, app_fence, false, a->copyNs);
   } else if (!upload_gpu_always() && u.r.disp->MapMemory &&
              gpud_queue_run_idle(queue, app_fence, counted, a->copyNs, upload_cpu, &u)) {
      cpu = true; /* (counted with the ICD's time and the worker's) */
   } else {
      uint64_t began = util_now_ns();
      enum upload_way way = upload_gpu(&u, queue, app_fence, counted);
      if (way == UPLOAD_FAILED) {
         upload_lost(call, queue->device, "on the GPU");
         return;
      }
      if (way == UPLOAD_WAITED)
         gpud_queue_ran(queue, app_fence, counted, a->copyNs + (util_now_ns() - began));
   }
   /* the host's fence stays unsignalled: the worker answers for it */
   if (tracked && a->signalled)
      atomic_store(&fence->fence_cpu_signaled, true);
   struct gpud_profile *prof = call->ctx->profile;
   if (prof) {
      prof->icd_copies++;
      prof->icd_copies_sent += a->regionCount > 0;
      prof->icd_copies_gpu += a->regionCount > 0 && !cpu;
      prof->icd_copies_slot += src != NULL;
   }
   /* a fence the page does not answer for is the host's to signal */
   if (fence && !tracked && call->disp->QueueSubmit(a->queue, 0, NULL, a->fence) != VK_SUCCESS)
      upload_lost(call, queue->device, "its fence");
}

/* ---- buffers' memory types ---------------------------------------------------- */

/* Buffers up to this size are steered: the GPU reads a large one, a model's
 * weights, slower from the mappable memory (llama.cpp's prompt processing
 * on the H200: 0.86x with every buffer there, 0.93x with those up to
 * 64 MiB, docs/performance.md), and it is the small ones a program stages
 * its inputs into. */
#define STEER_MAX_BYTES (64ull << 20)

/* GPUD_STEER_MAX_MB=N in the daemon's environment steers buffers of up to
 * N MiB instead (0: none; to measure). */
static uint64_t
steer_max(void)
{
   static _Atomic uint64_t max = UINT64_MAX;
   uint64_t m = atomic_load(&max);
   if (m == UINT64_MAX) {
      m = STEER_MAX_BYTES;
      uint64_t mb;
      if (util_env_number("GPUD_STEER_MAX_MB", 0, (1ull << 40) - 1, &mb))
         m = mb << 20;
      atomic_store(&max, m);
   }
   return m;
}

uint32_t
gpud_transfer_buffer_types(const struct daemon_host *host, uint32_t types, uint64_t size)
{
   if (size > steer_max() || !steer_max())
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
