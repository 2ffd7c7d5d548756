/* SPDX-License-Identifier: MIT */
/*
 * The copies the ICD makes of a submission itself.
 *
 * A program that stages what it writes to the GPU submits a command
 * buffer of copies alone and waits for it (llama.cpp's ggml, for every
 * token's inputs, where it has no device memory it can map).  When such a
 * submission reaches the ICD while nothing the application submitted is in
 * flight (the completion page's `settled` equals the submissions sent), the
 * ICD makes it at once: a copy into memory the application maps is
 * memmove() here; one into device memory is sent with the bytes it reads
 * (vkQueueUploadGPUD), which the worker writes before anything that
 * follows on the connection (into its own mapping of that memory, or on
 * the GPU), and the fence is signalled on the page here.  Nothing can tell
 * the difference: the copies' sources were read after every earlier write
 * to them was done, as the GPU would have read them; their destinations
 * are only seen through what comes later, which the worker runs after
 * them; the memory is no other process's (neither imported nor
 * exportable).  An empty submission with a fence (ggml's wait for what it
 * submitted, and for such copies) is made the same way: with nothing in
 * flight its fence is signalled at once.  Everything else goes to the
 * daemon as before.
 */
#include "icd.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util_env.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "util_time.h"
#include "wire_completion.h"
#include "wire_copies.h"

/* The bytes of device memory one submission may send in its message (it
 * waits for the GPU beyond that, where no slot of upload memory takes
 * them). */
#define UPLOAD_MAX_BYTES (256u << 10)
/* More bytes than this, up to UPLOAD_SLOT_MAX, are written into a slot of
 * the device's upload memory instead, which the worker copies them from on
 * the GPU (or its CPU): one copy of them rather than three (into the
 * message, out of the socket, into the worker's staging memory).  More
 * than a slot is the GPU's: the application's thread copying them would
 * take longer than the GPU's copy and its round trip (docs/architecture.md,
 * "Copies the ICD makes"). */
#define UPLOAD_INLINE_MAX (64u << 10)
#define UPLOAD_SLOT_MAX (1u << 20)

/* ---- what a recording copies ----------------------------------------------- */

void
icd_upload_note_op(struct icd_command_buffer *cb, uint32_t op)
{
   /* (the copies' and barriers' entry points below note the rest) */
   if (!wire_op_copies_only(op))
      cb->upload_no = true;
}

void
icd_upload_note_copy(VkCommandBuffer commandBuffer, VkBuffer src, VkBuffer dst, uint32_t n,
                     const VkBufferCopy *regions, const VkBufferCopy2 *regions2)
{
   struct icd_command_buffer *cb = icd_command_buffer_from_handle(commandBuffer);
   if (cb->upload_no || !cb->recording)
      return;
   if (n > ICD_UPLOAD_MAX_COPIES - cb->n_upload) {
      cb->upload_no = true;
      return;
   }
   for (uint32_t i = 0; i < n; i++) {
      cb->upload[cb->n_upload++] = (struct icd_upload_copy){
         .src = (uint64_t)src,
         .dst = (uint64_t)dst,
         .src_offset = regions ? regions[i].srcOffset : regions2[i].srcOffset,
         .dst_offset = regions ? regions[i].dstOffset : regions2[i].dstOffset,
         .size = regions ? regions[i].size : regions2[i].size,
      };
   }
}

/* A barrier of images, or one that moves a buffer between queue families,
 * is the GPU's. */
void
icd_upload_note_barrier(VkCommandBuffer commandBuffer, uint32_t n_images, bool ownership)
{
   struct icd_command_buffer *cb = icd_command_buffer_from_handle(commandBuffer);
   if (n_images || ownership)
      cb->upload_no = true;
}

/* ---- which copies ------------------------------------------------------------- */

/* GPUD_ICD_UPLOADS=off in the application's environment sends every
 * submission to the daemon (to compare); =inline sends every copy's bytes
 * in its message, none through upload memory (to compare); =worker (a build with test hooks)
 * sends the copies into memory the ICD maps to the worker too, as those
 * into device memory go; =device (the same) takes memory the application
 * never mapped for device memory, as a GPU's is: copies into it are sent,
 * uncounted, the fence signalled here, and copies from it go to the worker. */
enum upload_mode { UPLOAD_ON, UPLOAD_OFF, UPLOAD_INLINE, UPLOAD_WORKER, UPLOAD_DEVICE };

static enum upload_mode
upload_mode(void)
{
   static _Atomic int mode = -1;
   int m = atomic_load(&mode);
   if (m < 0) {
      const char *v = getenv("GPUD_ICD_UPLOADS");
      m = UPLOAD_ON;
      if (util_env_off("GPUD_ICD_UPLOADS"))
         m = UPLOAD_OFF;
      if (v && !strcmp(v, "inline"))
         m = UPLOAD_INLINE;
#ifdef GPUD_TEST_HOOKS
      if (v && !strcmp(v, "worker"))
         m = UPLOAD_WORKER;
      if (v && !strcmp(v, "device"))
         m = UPLOAD_DEVICE;
#endif
      atomic_store(&mode, m);
   }
   return (enum upload_mode)m;
}

/* Whether an ended recording holds only copies the ICD may make. */
static bool
copies_only(const struct icd_command_buffer *cb)
{
   return !cb->recording && !cb->upload_no && !cb->stream.oom &&
          cb->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY;
}

/* Whether the ICD may read or write a copy's memory itself: memory it maps,
 * but in the tests' "device" mode only where the application mapped it too
 * (what it never mapped stands for device memory, as on a GPU). */
static bool
here_mappable(const struct icd_device_memory *m)
{
   return m->map && (upload_mode() != UPLOAD_DEVICE || m->prefaulted || m->placed);
}

/* Where a copy reads or writes (in memory the ICD maps), or NULL. */
static uint8_t *
mapped(const struct icd_buffer_binding *b, VkDeviceSize offset, VkDeviceSize size)
{
   const struct icd_device_memory *m = b->memory;
   if (!m->map || b->offset > m->map_size || offset > m->map_size - b->offset ||
       size > m->map_size - b->offset - offset)
      return NULL;
   return (uint8_t *)m->map + b->offset + offset;
}

/* ---- upload memory ------------------------------------------------------------- */

static void
upload_slot_free(struct icd_device *dev, struct icd_upload_slot *s)
{
   if (s->buffer)
      icd_vkDestroyBuffer((VkDevice)dev, s->buffer, NULL);
   if (s->memory)
      icd_vkFreeMemory((VkDevice)dev, s->memory, NULL);
   s->buffer = VK_NULL_HANDLE;
   s->memory = VK_NULL_HANDLE;
   s->size = 0;
}

void
icd_device_upload_finish(struct icd_device *dev)
{
   for (unsigned i = 0; i < ICD_UPLOAD_SLOTS; i++) {
      struct icd_upload_slot *s = &dev->upload_slots[i];
      upload_slot_free(dev, s);
      if (s->done)
         icd_vkDestroyFence((VkDevice)dev, s->done, NULL);
      s->done = VK_NULL_HANDLE;
   }
}

/* A memory type for upload memory: one the ICD maps (host-visible memory is
 * a memfd both processes map) and need not flush, cached where there is
 * one, device-local last. */
static uint32_t
upload_slot_type(struct icd_device *dev, uint32_t bits)
{
   VkPhysicalDeviceMemoryProperties m;
   icd_vkGetPhysicalDeviceMemoryProperties((VkPhysicalDevice)dev->physical_device, &m);
   const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   for (int pass = 0; pass < 3; pass++) {
      for (uint32_t i = 0; i < m.memoryTypeCount && i < 32; i++) {
         VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
         if (!(bits & (1u << i)) || (f & want) != want || (f & VK_MEMORY_PROPERTY_PROTECTED_BIT))
            continue;
         if (pass == 0 && (f & (VK_MEMORY_PROPERTY_HOST_CACHED_BIT |
                                VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) !=
                             VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
            continue;
         if (pass == 1 && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            continue;
         return i;
      }
   }
   return UINT32_MAX;
}

/* The slot's memory made, UPLOAD_SLOT_MAX bytes. */
static bool
upload_slot_make(struct icd_device *dev, struct icd_upload_slot *s)
{
   VkDevice device = (VkDevice)dev;
   const VkDeviceSize want = UPLOAD_SLOT_MAX;
   const VkBufferCreateInfo bi = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = want,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   if (icd_vkCreateBuffer(device, &bi, NULL, &s->buffer) != VK_SUCCESS) {
      s->buffer = VK_NULL_HANDLE;
      return false;
   }
   VkMemoryRequirements req;
   icd_vkGetBufferMemoryRequirements(device, s->buffer, &req);
   const VkMemoryAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = upload_slot_type(dev, req.memoryTypeBits),
   };
   if (ai.memoryTypeIndex == UINT32_MAX ||
       icd_vkAllocateMemory(device, &ai, NULL, &s->memory) != VK_SUCCESS) {
      s->memory = VK_NULL_HANDLE;
      upload_slot_free(dev, s);
      return false;
   }
   struct icd_device_memory *mem = icd_device_memory_from_handle(s->memory);
   if (!mem->map || mem->map_size < want ||
       icd_vkBindBufferMemory(device, s->buffer, s->memory, 0) != VK_SUCCESS) {
      upload_slot_free(dev, s);
      return false;
   }
   /* (the host made the pages: into this process's tables now, not one
    * fault a page in the application's submission) */
   util_map_prefault(mem->map, (size_t)want);
   s->size = want;
   return true;
}

/* A slot of upload memory that no copies are reading (its fence
 * signalled), its fence reset; NULL: none. */
static struct icd_upload_slot *
upload_slot_take(struct icd_device *dev)
{
   VkDevice device = (VkDevice)dev;
   struct icd_upload_slot *take = NULL;
   pthread_mutex_lock(&dev->upload_mutex);
   for (unsigned i = 0; i < ICD_UPLOAD_SLOTS && !dev->upload_slots_failed; i++) {
      struct icd_upload_slot *s = &dev->upload_slots[i];
      if (!s->done) {
         const VkFenceCreateInfo fi = {
            .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
            .flags = VK_FENCE_CREATE_SIGNALED_BIT,
         };
         if (icd_vkCreateFence(device, &fi, NULL, &s->done) != VK_SUCCESS) {
            s->done = VK_NULL_HANDLE;
            dev->upload_slots_failed = true;
            break;
         }
         if (!icd_fence_here(s->done)) {
            /* (no slot on the page: it would be asked about) */
            dev->upload_slots_failed = true;
            break;
         }
      }
      if (icd_fence_signalled_here(s->done)) {
         take = s;
         break;
      }
   }
   if (take && !take->size && !upload_slot_make(dev, take)) {
      dev->upload_slots_failed = true;
      take = NULL;
   }
   if (take && icd_vkResetFences(device, 1, &take->done) != VK_SUCCESS)
      take = NULL;
   pthread_mutex_unlock(&dev->upload_mutex);
   return take;
}

/* ---- making them --------------------------------------------------------------- */

struct upload_copy {
   const uint8_t *src;
   uint8_t *dst; /* NULL: sent for the worker to write */
   bool visible; /* sent, into memory the application maps */
   VkBuffer buffer;
   VkDeviceSize offset, size;
};

/* The copies of the command buffers, resolved; false: not the ICD's (why:
 * what of them makes them the worker's whenever they are submitted; NULL:
 * not copies alone). */
static bool
resolve(struct icd_device *dev, const struct icd_command_buffer *const *cbs,
        uint32_t n_cbs, struct upload_copy *out, uint32_t *ret_n, uint32_t *ret_bytes,
        const char **why)
{
   const bool to_worker = upload_mode() == UPLOAD_WORKER;
   uint32_t n = 0;
   uint64_t bytes = 0;
   for (uint32_t i = 0; i < n_cbs; i++) {
      const struct icd_command_buffer *cb = cbs[i];
      if (!cb || !copies_only(cb) || cb->n_upload > ICD_UPLOAD_MAX_COPIES - n) {
         *why = NULL; /* not copies alone */
         return false;
      }
      for (uint32_t k = 0; k < cb->n_upload; k++) {
         const struct icd_upload_copy *c = &cb->upload[k];
         struct icd_buffer_binding s, d;
         if (!c->size || !icd_buffer_binding(dev, (VkBuffer)c->src, &s) ||
             !icd_buffer_binding(dev, (VkBuffer)c->dst, &d) || s.memory->external ||
             d.memory->external) {
            *why = "an empty copy, an unbound buffer or external memory";
            return false;
         }
         struct upload_copy *u = &out[n++];
         const bool dst_here = here_mappable(d.memory);
         *u = (struct upload_copy){
            .src = here_mappable(s.memory) ? mapped(&s, c->src_offset, c->size) : NULL,
            .dst = dst_here ? mapped(&d, c->dst_offset, c->size) : NULL,
            .buffer = (VkBuffer)c->dst,
            .offset = c->dst_offset,
            .size = c->size,
         };
         if (!u->src || (dst_here && !u->dst)) {
            *why = u->src ? "a destination not mapped here" : "a source in device memory";
            return false;
         }
         if (to_worker && u->dst && !((c->dst_offset | c->size) & 3)) {
            u->dst = NULL;
            u->visible = true;
         }
         if (!u->dst) {
            /* what vkCmdUpdateBuffer takes (the worker may make it so) */
            if ((c->dst_offset | c->size) & 3 || c->size > UPLOAD_SLOT_MAX - bytes) {
               *why = (c->dst_offset | c->size) & 3 ? "an offset or size not a multiple of 4"
                                                    : "more bytes than a slot of upload memory";
               return false;
            }
            bytes += c->size;
         }
      }
   }
   *ret_n = n;
   *ret_bytes = (uint32_t)bytes;
   /* an empty submission (a fence alone) is made here too */
   return n > 0 || !n_cbs;
}

/* Whether a recording just ended is held for the ICD to make: copies alone
 * that a submission of it alone could have the ICD make, whether anything
 * is in flight then or not.  The others' recordings go to the worker at
 * once (icd_cmd_buffer.c), which replays them while the application goes
 * on: ggml writes a staged copy's source after ending its recording and
 * before submitting it, a copy larger than a slot of upload memory taking
 * it longer than the worker's replay of the recording and its wake-up.
 * (Submitted beside others, copies take more than alone: a recording sent
 * here is never one the ICD makes.) */
bool
icd_upload_may_hold(const struct icd_command_buffer *cb)
{
   if (!copies_only(cb) || !cb->n_upload || upload_mode() == UPLOAD_OFF)
      return false;
   struct upload_copy copies[ICD_UPLOAD_MAX_COPIES];
   uint32_t n = 0, bytes = 0;
   const char *why = NULL;
   const struct icd_command_buffer *const cbs[] = {cb};
   return resolve(cb->device, cbs, 1, copies, &n, &bytes, &why);
}

/* GPUD_DEBUG=uploads: a submission of copies alone that goes to the worker,
 * and why (false, for the caller to return). */
static bool
declined(struct icd_command_buffer *const *cbs, uint32_t n_cbs, const char *why)
{
   if (!(icd_debug & ICD_DEBUG_UPLOADS))
      return false;
   uint64_t size = 0;
   uint32_t copies = 0;
   for (uint32_t i = 0; i < n_cbs; i++) {
      if (!cbs[i] || !copies_only(cbs[i]))
         return false;
      for (uint32_t k = 0; k < cbs[i]->n_upload; k++)
         size += cbs[i]->upload[k].size;
      copies += cbs[i]->n_upload;
   }
   icd_log("uploads: %u cop%s of %" PRIu64 " bytes%s to the worker: %s", copies,
           copies == 1 ? "y" : "ies", size, n_cbs ? "" : " (a fence alone)", why);
   return false;
}

bool
icd_upload_submit(struct icd_queue *q, struct icd_command_buffer *const *cbs, uint32_t n_cbs,
                  VkFence fence, VkResult *ret)
{
   struct icd_device *dev = q->device;
   const struct gpud_completion_header *h = dev->completion;
   if (!h || (!n_cbs && !fence) || upload_mode() == UPLOAD_OFF || atomic_load(&h->lost) ||
       atomic_load(&h->hold))
      return false;
   /* nothing submitted is in flight: every earlier write to the sources is
    * done (the page says so before the fence of the last submission) */
   if (atomic_load(&h->settled) != atomic_load(&dev->submits))
      return declined(cbs, n_cbs, "earlier submissions in flight");
   if (fence && !icd_fence_here(fence))
      return declined(cbs, n_cbs, "a fence the page does not answer for");
   struct upload_copy copies[ICD_UPLOAD_MAX_COPIES];
   uint32_t n = 0, bytes = 0;
   const char *why = NULL;
   if (!resolve(dev, (const struct icd_command_buffer *const *)cbs, n_cbs, copies, &n,
                &bytes, &why))
      return why ? declined(cbs, n_cbs, why) : false;
   /* a worker that is gone answers nothing: the submission goes the way
    * that says the device is lost (a look at the socket, no wake-up; only
    * for submissions the ICD would make, not every one) */
   if (icd_connection_gone(dev->base.conn))
      return false;
   bool visible = false;
   for (uint32_t i = 0; i < n; i++)
      visible |= copies[i].visible;
   /* larger ones through upload memory, where a slot is free (not for
    * copies the worker raises the fence of: the tests') */
   struct icd_upload_slot *slot =
      bytes > UPLOAD_INLINE_MAX && !visible && upload_mode() != UPLOAD_INLINE
         ? upload_slot_take(dev)
         : NULL;
   if (bytes > UPLOAD_MAX_BYTES && !slot)
      return declined(cbs, n_cbs, "no free slot of upload memory");
   VkBuffer buffers[ICD_UPLOAD_MAX_COPIES];
   VkBufferCopy regions[ICD_UPLOAD_MAX_COPIES];
   uint8_t *data = slot ? icd_device_memory_from_handle(slot->memory)->map
                        : bytes ? malloc(bytes)
                                : NULL;
   if (bytes && !data)
      return false;
   /* in the order recorded: a copy reads what the ones before it wrote */
   uint64_t began = util_now_ns();
   uint32_t k = 0, at = 0;
   for (uint32_t i = 0; i < n; i++) {
      const struct upload_copy *c = &copies[i];
      if (c->dst) {
         memmove(c->dst, c->src, c->size);
         continue;
      }
      memcpy(data + at, c->src, c->size);
      buffers[k] = c->buffer;
      regions[k++] = (VkBufferCopy){.srcOffset = at, .dstOffset = c->offset, .size = c->size};
      at += (uint32_t)c->size;
   }
   /* copies the worker makes into memory mapped here (the tests'): later
    * copies made here wait for the page to count them */
   bool counted = k && upload_mode() == UPLOAD_WORKER;
   if (counted)
      atomic_fetch_add(&dev->submits, 1);
   /* The fence is signalled here where nothing the application reads is
    * left to write: device memory is only seen through later commands,
    * which the worker runs after these.  Bytes the worker writes into
    * memory mapped here (the tests' mode) are the worker's to signal.  Sent
    * even with nothing for the worker to write: the queue counts the
    * submission and the time the copies took (gpudctl). */
   bool here = fence && !visible;
   uint64_t copy_ns = util_now_ns() - began;
   icd_gen_vkQueueUploadGPUD((VkQueue)q, fence, k, buffers, regions, slot ? 0 : at,
                             slot ? NULL : data, slot ? slot->buffer : VK_NULL_HANDLE,
                             slot ? slot->done : VK_NULL_HANDLE, counted, here, copy_ns);
   icd_connection_flush(dev->base.conn);
   if (!slot)
      free(data);
   if (icd_debug & ICD_DEBUG_WAITS) {
      atomic_fetch_add_explicit(&dev->dbg_copies[!!slot], 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&dev->dbg_copy_bytes[!!slot], at, memory_order_relaxed);
      atomic_fetch_add_explicit(&dev->dbg_copy_ns[!!slot], copy_ns, memory_order_relaxed);
   }
   if (here)
      icd_fence_signal_here(fence);
   *ret = icd_connection_is_lost(dev->base.conn) ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
   return true;
}
