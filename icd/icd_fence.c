/* SPDX-License-Identifier: MIT */
/*
 * Fences answered in the application's process: each device maps the
 * worker's completion page (protocol/wire_completion.h) and each fence owns
 * a slot in it, so vkGetFenceStatus and vkWaitForFences read shared memory
 * and sleep on a futex instead of asking the daemon.  A fence whose state
 * only the host driver knows (an imported payload, a signal from the window
 * system) says GPUD_FENCE_ASK and is asked about as before.
 *
 * Timeline semaphores and events have slots too (their values, their
 * states); vkSignalSemaphore, vkSetEvent and vkResetEvent do not wait.
 *
 * Generations: a slot holds (generation << 1) | signalled.  The ICD and the
 * worker count a fence's resets alike (both see every vkResetFences, in
 * order), and a slot's first generation for a new fence continues where its
 * last fence stopped, so whatever the worker writes for an earlier
 * generation, or for the slot's earlier fence, reads as "not signalled".
 */
#include "icd.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util_spin.h"
#include "util_time.h"
#include "util_trace.h"

/* How long a waiter polls the page before it sleeps (longer for a thread
 * whose recent waits were short: a frame loop, util_spin.h), and the
 * longest sleep between looks at whether the daemon is still there. */
#define FENCE_SPIN_NS (20u * 1000u)
#define FENCE_SPIN_MAX_NS (200u * 1000u)
/* ... and where polls yield (few CPUs): each look gives the CPU to any
 * thread that wants it (the host driver's, the worker's), and a frame's
 * end seen polling saves the wake-up of a CPU the hypervisor may have
 * halted.  Longer, because a frame there takes longer and its waits vary
 * more; a wait that outgrows it (other processes' work on the same CPUs)
 * returns the window to FENCE_SPIN_NS. */
#define FENCE_SPIN_YIELD_MAX_NS (500u * 1000u)
/* Where the page expects a long job's end (its expect_ns), a wait sleeps
 * until FENCE_EXPECT_EARLY_NS before it and polls from then, for up to
 * FENCE_EXPECT_LATE_NS after: its end costs no wake-up.  Not where polls
 * yield (few CPUs). */
#define FENCE_EXPECT_EARLY_NS (200u * 1000u)
#define FENCE_EXPECT_LATE_NS (1000u * 1000u)
#define FENCE_SLICE_NS (20u * 1000u * 1000u)

static __thread struct util_spin_window fence_window;

static struct gpud_completion_header *
page_of(const struct icd_device *dev)
{
   return dev->completion;
}

/* ---- the device's page -------------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo *pCreateInfo,
                   const VkAllocationCallbacks *pAllocator, VkDevice *pDevice)
{
   VkResult r = icd_gen_vkCreateDevice(physicalDevice, pCreateInfo, pAllocator, pDevice);
   if (r != VK_SUCCESS)
      return r;
   struct icd_device *dev = (struct icd_device *)*pDevice;
#ifdef VK_EXT_map_memory_placed
   /* placed mappings map the memfd again (icd_memory.c): it is kept */
   for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; i++)
      dev->keeps_memfds |= !strcmp(pCreateInfo->ppEnabledExtensionNames[i],
                                   VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME);
#endif
   int fd = -1;
   if (icd_gen_vkGetCompletionPageGPUD(*pDevice, &fd) != VK_SUCCESS || fd < 0)
      return VK_SUCCESS; /* every fence is asked about */
   void *map = mmap(NULL, GPUD_COMPLETION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   close(fd);
   if (map == MAP_FAILED)
      return VK_SUCCESS;
   const struct gpud_completion_header *h = map;
   if (h->magic != GPUD_COMPLETION_MAGIC || h->fence_slots != GPUD_COMPLETION_FENCE_SLOTS ||
       h->semaphore_slots != GPUD_COMPLETION_SEMAPHORE_SLOTS ||
       h->event_slots != GPUD_COMPLETION_EVENT_SLOTS) {
      munmap(map, GPUD_COMPLETION_SIZE);
      return VK_SUCCESS;
   }
   dev->fence_generation = calloc(GPUD_COMPLETION_FENCE_SLOTS, sizeof(uint32_t));
   dev->fence_used = calloc((GPUD_COMPLETION_FENCE_SLOTS + 63) / 64, sizeof(uint64_t));
   dev->semaphore_used = calloc((GPUD_COMPLETION_SEMAPHORE_SLOTS + 63) / 64, sizeof(uint64_t));
   dev->event_used = calloc((GPUD_COMPLETION_EVENT_SLOTS + 63) / 64, sizeof(uint64_t));
   if (!dev->fence_generation || !dev->fence_used || !dev->semaphore_used || !dev->event_used) {
      icd_device_completion_finish(dev);
      munmap(map, GPUD_COMPLETION_SIZE);
      return VK_SUCCESS;
   }
   dev->completion = map;
   return VK_SUCCESS;
}

void
icd_device_completion_finish(struct icd_device *dev)
{
   if (dev->completion)
      munmap(dev->completion, GPUD_COMPLETION_SIZE);
   free(dev->fence_generation);
   free(dev->fence_used);
   free(dev->semaphore_used);
   free(dev->event_used);
   dev->completion = NULL;
   dev->fence_generation = NULL;
   dev->fence_used = NULL;
   dev->semaphore_used = NULL;
   dev->event_used = NULL;
}

/* ---- fences ---------------------------------------------------------------- */

/* A free slot of a bitmap of n (with the device's mutex), or -1. */
static int
bitmap_take(uint64_t *used, unsigned *hint, unsigned n)
{
   for (unsigned w = *hint; w < (n + 63) / 64; w++) {
      if (used[w] == ~0ull)
         continue;
      unsigned bit = (unsigned)__builtin_ctzll(~used[w]);
      if (w * 64 + bit >= n)
         break;
      used[w] |= 1ull << bit;
      *hint = w;
      return (int)(w * 64 + bit);
   }
   return -1;
}

static void
bitmap_give(uint64_t *used, unsigned *hint, int slot)
{
   used[slot / 64] &= ~(1ull << (slot % 64));
   if ((unsigned)slot / 64 < *hint)
      *hint = (unsigned)slot / 64;
}

/* A free slot of a bitmap of n and a new tag (never 0) for what takes it,
 * or -1. */
static int
tagged_slot_take(struct icd_device *dev, uint64_t *used, unsigned *hint, unsigned n,
                 uint32_t *tag)
{
   pthread_mutex_lock(&dev->mutex);
   int slot = bitmap_take(used, hint, n);
   *tag = ++dev->next_tag ? dev->next_tag : ++dev->next_tag;
   pthread_mutex_unlock(&dev->mutex);
   return slot;
}

static int
slot_take(struct icd_device *dev)
{
   pthread_mutex_lock(&dev->mutex);
   int slot = bitmap_take(dev->fence_used, &dev->fence_hint, GPUD_COMPLETION_FENCE_SLOTS);
   pthread_mutex_unlock(&dev->mutex);
   return slot;
}

static void
slot_give(struct icd_device *dev, struct icd_fence *f)
{
   pthread_mutex_lock(&dev->mutex);
   /* the slot's next fence starts past this one's generations */
   dev->fence_generation[f->slot] = atomic_load(&f->generation) + 1;
   bitmap_give(dev->fence_used, &dev->fence_hint, f->slot);
   pthread_mutex_unlock(&dev->mutex);
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
   struct icd_device *dev = (struct icd_device *)device;
   if (r != VK_SUCCESS || !dev->completion)
      return r;
   /* an exportable fence's payload may leave for another process: the host
    * driver keeps its state */
   for (const VkBaseInStructure *s = pCreateInfo->pNext; s; s = s->pNext) {
      if (s->sType == VK_STRUCTURE_TYPE_EXPORT_FENCE_CREATE_INFO)
         return r;
   }
   struct icd_fence *f = (struct icd_fence *)*pFence;
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
   struct icd_fence *f = (struct icd_fence *)fence;
   if (f && f->device)
      slot_give(f->device, f);
   icd_gen_vkDestroyFence(device, fence, pAllocator);
}

/* The fence's state goes to the host driver alone (its payload was
 * imported, or exported as a sync file): asked about from now on. */
void
icd_fence_untrack(VkFence fence)
{
   struct icd_fence *f = (struct icd_fence *)fence;
   if (!f || !f->device)
      return;
   atomic_store(slot_of(f), GPUD_FENCE_ASK);
   slot_give(f->device, f);
   f->device = NULL;
}

void
icd_fence_ask(VkFence fence)
{
   struct icd_fence *f = (struct icd_fence *)fence;
   if (f && f->device)
      atomic_store(slot_of(f), GPUD_FENCE_ASK);
}

bool
icd_fence_here(VkFence fence)
{
   const struct icd_fence *f = (const struct icd_fence *)fence;
   return f && f->device && atomic_load(slot_of(f)) != GPUD_FENCE_ASK;
}

bool
icd_fence_signalled_here(VkFence fence)
{
   const struct icd_fence *f = (const struct icd_fence *)fence;
   return f && f->device &&
          atomic_load(slot_of(f)) == gpud_fence_value(atomic_load(&f->generation), 1);
}

void
icd_fence_signal_here(VkFence fence)
{
   struct icd_fence *f = (struct icd_fence *)fence;
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
      struct icd_fence *f = (struct icd_fence *)pFences[i];
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


VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetFenceStatus(VkDevice device, VkFence fence)
{
   struct icd_device *dev = (struct icd_device *)device;
   struct icd_fence *f = (struct icd_fence *)fence;
   struct gpud_completion_header *h = page_of(dev);
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
      switch (fence_state((const struct icd_fence *)w->fences[i])) {
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

/*
 * Waits on the page until reached(what) says VK_SUCCESS, the timeout ends
 * (VK_TIMEOUT), the device or the daemon is lost (VK_ERROR_DEVICE_LOST), or
 * something must be asked about (VK_NOT_READY, with the timeout left in
 * *left).
 */
static VkResult
page_wait(struct icd_device *dev, VkResult (*reached)(const void *), const void *what,
          uint64_t timeout, uint64_t *left)
{
   struct gpud_completion_header *h = page_of(dev);
   struct icd_connection *conn = dev->base.conn;
   uint64_t start = util_now_ns();
   uint64_t deadline = timeout > UINT64_MAX - start ? UINT64_MAX : start + timeout;
   bool flushed = false, slept = false;
   struct util_spin_window *window = &fence_window;
   if (!window->base_ns)
      util_spin_window_init_yielding(window, FENCE_SPIN_NS, FENCE_SPIN_MAX_NS,
                                     FENCE_SPIN_YIELD_MAX_NS);
   for (bool looked = false;; looked = true) {
      if (atomic_load(&h->lost) || icd_connection_is_lost(conn))
         return VK_ERROR_DEVICE_LOST;
      uint32_t seq = atomic_load(&h->seq);
      VkResult r = reached(what);
      if (r == VK_SUCCESS) {
         if (looked) {
            uint64_t now = util_now_ns();
            util_spin_window_note(window, now - start, now);
         }
         if (icd_debug & ICD_DEBUG_WAITS) {
            atomic_fetch_add_explicit(&dev->dbg_waits, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&dev->dbg_slept, slept, memory_order_relaxed);
            atomic_fetch_add_explicit(&dev->dbg_wait_ns, util_now_ns() - start,
                                      memory_order_relaxed);
         }
         return VK_SUCCESS;
      }
      uint64_t now = util_now_ns();
      if (r == VK_NOT_READY) {
         *left = now >= deadline ? 0 : deadline == UINT64_MAX ? UINT64_MAX : deadline - now;
         return VK_NOT_READY;
      }
      if (now >= deadline)
         return VK_TIMEOUT;
      if (!flushed) {
         /* what would signal them may still be queued here */
         if (icd_connection_flush(conn) != VK_SUCCESS)
            return VK_ERROR_DEVICE_LOST;
         flushed = true;
      }
      if (now - start < window->ns) {
         util_spin_pause(util_spin_yields());
         continue;
      }
      uint64_t slice = util_sleep_slice(now - start, FENCE_SLICE_NS, deadline - now);
      uint64_t expect = atomic_load_explicit(&h->expect_ns, memory_order_relaxed);
      if (expect && !util_spin_yields()) {
         if (now + FENCE_EXPECT_EARLY_NS < expect) {
            if (expect - FENCE_EXPECT_EARLY_NS - now < slice)
               slice = expect - FENCE_EXPECT_EARLY_NS - now;
         } else if (now < expect + FENCE_EXPECT_LATE_NS) {
            util_spin_pause(false);
            continue;
         }
      }
      atomic_fetch_add(&h->waiters, 1);
      if (atomic_load(&h->seq) == seq) {
         util_futex_wait(&h->seq, seq, slice);
         slept = true;
      }
      atomic_fetch_sub(&h->waiters, 1);
      if (icd_connection_gone(conn))
         return VK_ERROR_DEVICE_LOST;
   }
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWaitForFences(VkDevice device, uint32_t fenceCount, const VkFence *pFences,
                    VkBool32 waitAll, uint64_t timeout)
{
   struct icd_device *dev = (struct icd_device *)device;
   const struct fence_wait w = {.n = fenceCount, .fences = pFences, .all = waitAll};
   uint64_t left = timeout;
   util_trace(UTIL_TRACE_WAIT, fenceCount);
   VkResult r = page_of(dev) ? page_wait(dev, fences_reached, &w, timeout, &left)
                             : VK_NOT_READY;
   util_trace(UTIL_TRACE_WAITED, (uint32_t)r);
   /* the daemon knows: ask it, for what is left of the timeout */
   return r == VK_NOT_READY ? icd_gen_vkWaitForFences(device, fenceCount, pFences, waitAll, left)
                            : r;
}

/* ---- timeline semaphores ----------------------------------------------------- */

static struct gpud_semaphore_slot *
sem_slot(const struct icd_semaphore *s)
{
   return &gpud_completion_semaphores(s->device->completion)[s->slot];
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateSemaphore(VkDevice device, const VkSemaphoreCreateInfo *pCreateInfo,
                      const VkAllocationCallbacks *pAllocator, VkSemaphore *pSemaphore)
{
   VkResult r = icd_gen_vkCreateSemaphore(device, pCreateInfo, pAllocator, pSemaphore);
   struct icd_device *dev = (struct icd_device *)device;
   if (r != VK_SUCCESS || !dev->completion)
      return r;
   uint64_t initial = 0;
   bool timeline = false;
   for (const VkBaseInStructure *s = pCreateInfo->pNext; s; s = s->pNext) {
      if (s->sType == VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO)
         return r; /* others may signal it: the host driver keeps its value */
      if (s->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO) {
         const VkSemaphoreTypeCreateInfo *t = (const VkSemaphoreTypeCreateInfo *)s;
         timeline = t->semaphoreType == VK_SEMAPHORE_TYPE_TIMELINE;
         initial = t->initialValue;
      }
   }
   if (!timeline || initial == GPUD_SEMAPHORE_ASK)
      return r;
   struct icd_semaphore *sem = (struct icd_semaphore *)*pSemaphore;
   uint32_t tag;
   int slot = tagged_slot_take(dev, dev->semaphore_used, &dev->semaphore_hint,
                               GPUD_COMPLETION_SEMAPHORE_SLOTS, &tag);
   if (slot < 0)
      return r;
   sem->device = dev;
   sem->slot = slot;
   sem->tag = tag;
   /* the worker stores the tag and the initial value when it takes the
    * slot; until then this semaphore is asked about */
   icd_gen_vkSetSemaphoreSlotGPUD(device, *pSemaphore, (uint32_t)slot, tag, initial);
   return r;
}

static void
semaphore_give(struct icd_semaphore *s)
{
   struct icd_device *dev = s->device;
   pthread_mutex_lock(&dev->mutex);
   bitmap_give(dev->semaphore_used, &dev->semaphore_hint, s->slot);
   pthread_mutex_unlock(&dev->mutex);
   s->device = NULL;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroySemaphore(VkDevice device, VkSemaphore semaphore,
                       const VkAllocationCallbacks *pAllocator)
{
   struct icd_semaphore *s = (struct icd_semaphore *)semaphore;
   if (s && s->device)
      semaphore_give(s);
   icd_gen_vkDestroySemaphore(device, semaphore, pAllocator);
}

void
icd_semaphore_untrack(VkSemaphore semaphore)
{
   struct icd_semaphore *s = (struct icd_semaphore *)semaphore;
   if (s && s->device)
      semaphore_give(s);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetSemaphoreFdKHR(VkDevice device, const VkSemaphoreGetFdInfoKHR *pGetFdInfo, int *pFd)
{
   VkResult r = icd_gen_vkGetSemaphoreFdKHR(device, pGetFdInfo, pFd);
   if (r == VK_SUCCESS)
      icd_semaphore_untrack(pGetFdInfo->semaphore);
   return r;
}

/* Its value on the page, or false when it must be asked about. */
static bool
semaphore_value(const struct icd_semaphore *s, uint64_t *value)
{
   if (!s || !s->device)
      return false;
   const struct gpud_semaphore_slot *slot = sem_slot(s);
   if (atomic_load(&slot->tag) != s->tag)
      return false; /* the worker has not taken the slot for it yet */
   uint64_t v = atomic_load(&slot->value);
   if (v == GPUD_SEMAPHORE_ASK || atomic_load(&slot->tag) != s->tag)
      return false;
   *value = v;
   return true;
}

/* Host-side signals are asynchronous and go out at once (a queue may wait
 * for them); a timeline value the page shows is raised here first, so this
 * thread and every other reading the page sees it before the daemon has run
 * the signal, and their waits wake. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSignalSemaphore(VkDevice device, const VkSemaphoreSignalInfo *pSignalInfo)
{
   struct icd_device *dev = (struct icd_device *)device;
   struct icd_semaphore *s = (struct icd_semaphore *)pSignalInfo->semaphore;
   VkResult r = icd_gen_vkSignalSemaphore(device, pSignalInfo);
   uint64_t v;
   struct gpud_completion_header *h = page_of(dev);
   if (r == VK_SUCCESS && h && semaphore_value(s, &v) && v < pSignalInfo->value) {
      gpud_semaphore_raise(&sem_slot(s)->value, pSignalInfo->value);
      gpud_completion_wake(h);
   }
   if (r == VK_SUCCESS)
      r = icd_connection_flush(dev->base.conn);
   return r;
}

/* ---- events ---------------------------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateEvent(VkDevice device, const VkEventCreateInfo *pCreateInfo,
                  const VkAllocationCallbacks *pAllocator, VkEvent *pEvent)
{
   VkResult r = icd_gen_vkCreateEvent(device, pCreateInfo, pAllocator, pEvent);
   struct icd_device *dev = (struct icd_device *)device;
   /* a device-only event is never asked about on the host */
   if (r != VK_SUCCESS || !dev->completion ||
       (pCreateInfo->flags & VK_EVENT_CREATE_DEVICE_ONLY_BIT))
      return r;
   struct icd_event *e = (struct icd_event *)*pEvent;
   uint32_t tag;
   int slot = tagged_slot_take(dev, dev->event_used, &dev->event_hint,
                               GPUD_COMPLETION_EVENT_SLOTS, &tag);
   if (slot < 0)
      return r;
   e->device = dev;
   e->slot = slot;
   e->tag = tag;
   icd_gen_vkSetEventSlotGPUD(device, *pEvent, (uint32_t)slot, tag);
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyEvent(VkDevice device, VkEvent event, const VkAllocationCallbacks *pAllocator)
{
   struct icd_event *e = (struct icd_event *)event;
   if (e && e->device) {
      pthread_mutex_lock(&e->device->mutex);
      bitmap_give(e->device->event_used, &e->device->event_hint, e->slot);
      pthread_mutex_unlock(&e->device->mutex);
      e->device = NULL;
   }
   icd_gen_vkDestroyEvent(device, event, pAllocator);
}

/* Host-side sets and resets are asynchronous and go out at once (a queue
 * may wait for them); the event remembers the last one first, so that a
 * vkGetEventStatus after it answers it before the daemon has run it. */
static VkResult
event_host_op(VkDevice device, VkEvent event, bool set)
{
   struct icd_event *e = (struct icd_event *)event;
   if (e && e->device) {
      atomic_store(&e->last_set, set);
      atomic_fetch_add(&e->host_ops, 1);
   }
   VkResult r = set ? icd_gen_vkSetEvent(device, event) : icd_gen_vkResetEvent(device, event);
   return r == VK_SUCCESS ? icd_connection_flush(((struct icd_device *)device)->base.conn) : r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetEvent(VkDevice device, VkEvent event)
{
   return event_host_op(device, event, true);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetEvent(VkDevice device, VkEvent event)
{
   return event_host_op(device, event, false);
}

/* From the page while no submission that sets or resets the event is in
 * flight; else (or before the worker took its slot) the daemon asks the
 * host driver. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetEventStatus(VkDevice device, VkEvent event)
{
   struct icd_device *dev = (struct icd_device *)device;
   const struct icd_event *e = (const struct icd_event *)event;
   struct gpud_completion_header *h = page_of(dev);
   if (!h || !e->device)
      return icd_gen_vkGetEventStatus(device, event);
   uint64_t w = atomic_load(&gpud_completion_events(h)[e->slot]);
   if (gpud_event_tag(w) != e->tag || gpud_event_pending(w))
      return icd_gen_vkGetEventStatus(device, event);
   if (atomic_load(&h->lost) || icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   bool set = gpud_event_host_ops(w) == (atomic_load(&e->host_ops) & 0xffffu)
                 ? gpud_event_set(w)
                 : atomic_load(&e->last_set);
   if (set)
      return VK_EVENT_SET;
   /* what would set it may still be queued here; a poll must see the
    * daemon go */
   if (icd_connection_flush(dev->base.conn) != VK_SUCCESS || icd_connection_gone(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   return VK_EVENT_RESET;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetSemaphoreCounterValue(VkDevice device, VkSemaphore semaphore, uint64_t *pValue)
{
   struct icd_device *dev = (struct icd_device *)device;
   struct gpud_completion_header *h = page_of(dev);
   uint64_t v;
   if (!h || !semaphore_value((const struct icd_semaphore *)semaphore, &v))
      return icd_gen_vkGetSemaphoreCounterValue(device, semaphore, pValue);
   if (atomic_load(&h->lost) || icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   *pValue = v;
   return VK_SUCCESS;
}

/* VK_SUCCESS, VK_TIMEOUT, VK_NOT_READY (one must be asked about) */
static VkResult
semaphores_reached(const void *data)
{
   const VkSemaphoreWaitInfo *info = data;
   bool any_flag = info->flags & VK_SEMAPHORE_WAIT_ANY_BIT;
   bool any = false, every = true;
   for (uint32_t i = 0; i < info->semaphoreCount; i++) {
      uint64_t v;
      if (!semaphore_value((const struct icd_semaphore *)info->pSemaphores[i], &v))
         return VK_NOT_READY;
      if (v >= info->pValues[i])
         any = true;
      else
         every = false;
   }
   return (any_flag ? any : every) ? VK_SUCCESS : VK_TIMEOUT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo *pWaitInfo, uint64_t timeout)
{
   struct icd_device *dev = (struct icd_device *)device;
   uint64_t left = timeout;
   VkResult r = page_of(dev) ? page_wait(dev, semaphores_reached, pWaitInfo, timeout, &left)
                             : VK_NOT_READY;
   return r == VK_NOT_READY ? icd_gen_vkWaitSemaphores(device, pWaitInfo, left) : r;
}
