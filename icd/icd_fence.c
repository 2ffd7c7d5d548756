/* SPDX-License-Identifier: MIT */
/*
 * Fences answered in the application's process: each fence owns a slot
 * in its device's completion page (icd_completion.c), so vkGetFenceStatus and vkWaitForFences read shared memory
 * and sleep on a futex instead of asking the daemon.  A fence whose state
 * only the host driver knows (an imported payload, a signal from the window
 * system) says GPUD_FENCE_ASK and is asked about as before.
 *
 * Generations: a slot holds (generation << 1) | signalled.  The ICD and the
 * worker count a fence's resets alike (both see every vkResetFences, in
 * order), and a slot's first generation for a new fence continues where its
 * last fence stopped, so whatever the worker writes for an earlier
 * generation, or for the slot's earlier fence, reads as "not signalled".
 */
#include "icd.h"

#include "util_fd.h"
#include "util_spin.h"

#include "util_trace.h"

static int
slot_take(struct icd_device *dev)
{
   return icd_completion_slot_take(dev, dev->fence_used, &dev->fence_hint,
                                   GPUD_COMPLETION_FENCE_SLOTS, NULL);
}

static void
slot_give(struct icd_device *dev, struct icd_fence *f)
{
   /* the slot's next fence starts past this one's generations */
   icd_completion_fence_slot_give(dev, f->slot, atomic_load(&f->generation) + 1);
}

static _Atomic uint32_t *
slot_of(const struct icd_fence *f)
{
   return &gpud_completion_fences(f->device->completion)[f->slot];
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateFence(VkDevice device, const VkFenceCreateInfo *pCreateInfo,
                  const VkAllocationCallbacks *pAllocator, VkFence *pFence)
{
   VkResult r = icd_gen_vkCreateFence(device, pCreateInfo, pAllocator, pFence);
   struct icd_device *dev = icd_completion_device(device, r);
   if (!dev)
      return r;
   /* an exportable fence's payload may leave for another process: the host
    * driver keeps its state */
   for (const VkBaseInStructure *s = pCreateInfo->pNext; s; s = s->pNext) {
      if (s->sType == VK_STRUCTURE_TYPE_EXPORT_FENCE_CREATE_INFO)
         return r;
   }
   struct icd_fence *f = icd_fence_from_handle(*pFence);
   int slot = slot_take(dev);
   if (slot < 0)
      return r; /* asked about, as every fence was before */
   f->device = dev;
   f->slot = slot;
   pthread_mutex_lock(&dev->mutex);
   uint32_t generation = dev->fence_generation[slot];
   pthread_mutex_unlock(&dev->mutex);
   atomic_store(&f->generation, generation);
   atomic_store(slot_of(f),
                gpud_fence_value(generation, pCreateInfo->flags & VK_FENCE_CREATE_SIGNALED_BIT));
   icd_gen_vkSetFenceSlotGPUD(device, *pFence, (uint32_t)slot, generation);
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyFence(VkDevice device, VkFence fence, const VkAllocationCallbacks *pAllocator)
{
   struct icd_fence *f = icd_fence_from_handle(fence);
   if (f && f->device)
      slot_give(f->device, f);
   icd_gen_vkDestroyFence(device, fence, pAllocator);
}

/* The fence's state goes to the host driver alone (its payload was
 * imported, or exported as a sync file): asked about from now on. */
void
icd_fence_untrack(VkFence fence)
{
   struct icd_fence *f = icd_fence_from_handle(fence);
   if (!f || !f->device)
      return;
   atomic_store(slot_of(f), GPUD_FENCE_ASK);
   slot_give(f->device, f);
   f->device = NULL;
}

void
icd_fence_ask(VkFence fence)
{
   struct icd_fence *f = icd_fence_from_handle(fence);
   if (f && f->device)
      atomic_store(slot_of(f), GPUD_FENCE_ASK);
}

bool
icd_fence_here(VkFence fence)
{
   const struct icd_fence *f = icd_fence_from_handle(fence);
   return f && f->device && atomic_load(slot_of(f)) != GPUD_FENCE_ASK;
}

void
icd_fence_signal_here(VkFence fence)
{
   struct icd_fence *f = icd_fence_from_handle(fence);
   atomic_store(slot_of(f), gpud_fence_value(atomic_load(&f->generation), 1));
   gpud_completion_wake(f->device->completion);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetFenceFdKHR(VkDevice device, const VkFenceGetFdInfoKHR *pGetFdInfo, int *pFd)
{
   VkResult r = icd_gen_vkGetFenceFdKHR(device, pGetFdInfo, pFd);
   if (r == VK_SUCCESS)
      icd_fence_untrack(pGetFdInfo->fence);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetFences(VkDevice device, uint32_t fenceCount, const VkFence *pFences)
{
   for (uint32_t i = 0; i < fenceCount; i++) {
      struct icd_fence *f = icd_fence_from_handle(pFences[i]);
      if (f && f->device) {
         uint32_t generation = atomic_fetch_add(&f->generation, 1) + 1;
         atomic_store(slot_of(f), gpud_fence_value(generation, 0));
      }
   }
   return icd_gen_vkResetFences(device, fenceCount, pFences);
}

enum fence_state { FENCE_UNSIGNALED, FENCE_SIGNALED, FENCE_ASK };

static enum fence_state
fence_state(const struct icd_fence *f)
{
   if (!f->device)
      return FENCE_ASK;
   uint32_t v = atomic_load(slot_of(f));
   if (v == GPUD_FENCE_ASK)
      return FENCE_ASK;
   return v == gpud_fence_value(atomic_load(&f->generation), 1) ? FENCE_SIGNALED
                                                                : FENCE_UNSIGNALED;
}


bool
icd_fence_signalled_here(VkFence fence)
{
   const struct icd_fence *f = icd_fence_from_handle(fence);
   return f && fence_state(f) == FENCE_SIGNALED;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetFenceStatus(VkDevice device, VkFence fence)
{
   struct icd_device *dev = icd_device_from_handle(device);
   struct icd_fence *f = icd_fence_from_handle(fence);
   struct gpud_completion_header *h = dev->completion;
   if (!h || !f->device)
      return icd_gen_vkGetFenceStatus(device, fence);
   if (atomic_load(&h->lost) || icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   switch (fence_state(f)) {
   case FENCE_SIGNALED:
      util_trace_fence_status((uint64_t)fence, true);
      return VK_SUCCESS;
   case FENCE_ASK:
      return icd_gen_vkGetFenceStatus(device, fence);
   case FENCE_UNSIGNALED:
      break;
   }
   util_trace_fence_status((uint64_t)fence, false);
   /* what would signal it may still be queued here */
   if (icd_connection_flush(dev->base.conn) != VK_SUCCESS || icd_connection_gone(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   /* A program that polls the status in a loop (ggml, for each graph's end)
    * holds a CPU that, where there are few (util_spin.h), the worker's
    * threads and the host driver's need to get there: each look that finds
    * it unsignalled gives the CPU to any thread that wants it, as the ICD's
    * own waits do there.  (llama.cpp's tiny model on lavapipe, 2 CPUs:
    * 0.63-0.68x the driver's tokens without, 0.93x with: docs/performance.md.) */
   if (util_spin_yields())
      util_spin_pause(true);
   return VK_NOT_READY;
}

/* VK_SUCCESS, VK_TIMEOUT, VK_NOT_READY (a fence must be asked about) */
struct fence_wait {
   uint32_t n;
   const VkFence *fences;
   bool all;
};

static VkResult
fences_reached(const void *data)
{
   const struct fence_wait *w = data;
   bool any = false, every = true;
   for (uint32_t i = 0; i < w->n; i++) {
      switch (fence_state(icd_fence_from_handle(w->fences[i]))) {
      case FENCE_ASK:
         return VK_NOT_READY;
      case FENCE_SIGNALED:
         any = true;
         break;
      case FENCE_UNSIGNALED:
         every = false;
         break;
      }
   }
   return (w->all ? every : any) ? VK_SUCCESS : VK_TIMEOUT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWaitForFences(VkDevice device, uint32_t fenceCount, const VkFence *pFences,
                    VkBool32 waitAll, uint64_t timeout)
{
   struct icd_device *dev = icd_device_from_handle(device);
   const struct fence_wait w = {.n = fenceCount, .fences = pFences, .all = waitAll};
   uint64_t left = timeout;
   util_trace(UTIL_TRACE_WAIT, fenceCount);
   /* the fences' last waits: for all of them the longest, for any the
    * shortest; not known where one's is not */
   uint64_t last_ns = 0;
   for (uint32_t i = 0; i < fenceCount; i++) {
      const struct icd_fence *f = icd_fence_from_handle(pFences[i]);
      uint64_t ns = atomic_load_explicit(&f->last_wait_ns, memory_order_relaxed);
      if (!ns) {
         last_ns = 0;
         break;
      }
      if (!i || (waitAll ? ns > last_ns : ns < last_ns))
         last_ns = ns;
   }
   uint64_t waited_ns = 0;
   VkResult r = dev->completion ? icd_completion_wait(dev, fences_reached, &w, timeout,
                                                      &left, last_ns, &waited_ns)
                                : VK_NOT_READY;
   for (uint32_t i = 0; waited_ns && i < fenceCount; i++)
      atomic_store_explicit(&icd_fence_from_handle(pFences[i])->last_wait_ns, waited_ns,
                            memory_order_relaxed);
   util_trace(UTIL_TRACE_WAITED, (uint32_t)r);
   /* the daemon knows: ask it, for what is left of the timeout */
   return r == VK_NOT_READY ? icd_gen_vkWaitForFences(device, fenceCount, pFences, waitAll, left)
                            : r;
}

/* An fd the application gives must be open: sending a closed one would
 * fail the whole message and lose the connection. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkImportFenceFdKHR(VkDevice device, const VkImportFenceFdInfoKHR *pImportFenceFdInfo)
{
   if (pImportFenceFdInfo->fd != -1 && !util_fd_open(pImportFenceFdInfo->fd))
      return VK_ERROR_INVALID_EXTERNAL_HANDLE;
   VkResult r = icd_gen_vkImportFenceFdKHR(device, pImportFenceFdInfo);
   if (r == VK_SUCCESS) {
      int fd = pImportFenceFdInfo->fd;
      util_fd_close(&fd);
      icd_fence_untrack(pImportFenceFdInfo->fence);
   }
   return r;
}
