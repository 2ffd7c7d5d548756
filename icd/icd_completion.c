/* SPDX-License-Identifier: MIT */
/*
 * The worker's completion page (protocol/wire_completion.h), mapped by
 * each device: its fences, timeline semaphores and events own slots in it
 * (icd_fence.c, icd_semaphore.c, icd_event.c), so that their states are
 * read from shared memory, and waits for them poll it and sleep on its
 * futex instead of asking the daemon.  Here: the page's mapping, the
 * tables of slots in use, and the wait.
 */
#include "icd.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util_env.h"
#include "util_spin.h"
#include "util_time.h"

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
/* A wait for a fence whose last wait took less than half of this polls
 * for up to twice that (once more than the thread's window), however long
 * the thread's other waits: a program that waits in turn for a long job
 * (a graph, a frame) and for short round trips (its staged copies, a few
 * hundred microseconds each) has the short ones answered polling, not by a
 * wake-up tens of microseconds after the work's end.  Not where polls
 * yield. */
#define FENCE_SPIN_OBJECT_MAX_NS (1000u * 1000u)
/* Where the page expects a long job's end (its expect_ns), a wait sleeps
 * until FENCE_EXPECT_EARLY_NS before it and polls from then, for up to
 * FENCE_EXPECT_LATE_NS after: its end costs no wake-up.  Not where polls
 * yield (few CPUs). */
#define FENCE_EXPECT_EARLY_NS (200u * 1000u)
#define FENCE_EXPECT_LATE_NS (1000u * 1000u)
#define FENCE_SLICE_NS (20u * 1000u * 1000u)

static __thread struct util_spin_window fence_window;

/* GPUD_WAIT_SPIN_MAX_US in the application's environment (from
 * FENCE_SPIN_NS to 100 ms; to measure): the longest poll of any wait, the
 * thread's window and a fence's own alike; 0: not set (FENCE_SPIN_MAX_NS
 * and FENCE_SPIN_OBJECT_MAX_NS).  Read by the first wait, on any thread. */
static uint64_t
wait_spin_max_setting_ns(void)
{
   static _Atomic uint64_t max_ns = UINT64_MAX;
   uint64_t m = atomic_load(&max_ns);
   if (m == UINT64_MAX) {
      uint64_t us = 0;
      util_env_number("GPUD_WAIT_SPIN_MAX_US", FENCE_SPIN_NS / 1000, 100 * 1000, &us);
      m = us * 1000;
      atomic_store(&max_ns, m);
   }
   return m;
}

/* How long a wait polls, of the thread's window and (last_ns) the same
 * objects' last wait. */
static uint64_t
poll_ns(const struct util_spin_window *window, uint64_t last_ns)
{
   uint64_t set = wait_spin_max_setting_ns();
   if (util_spin_yields())
      return window->ns;
   return util_spin_object_ns(window->ns, last_ns, set ? set : FENCE_SPIN_OBJECT_MAX_NS);
}

/* Maps the device's completion page (where the worker gives one that is
 * gpud's, of this build's layout) and the tables of its slots; without it
 * every fence, semaphore and event is asked about. */
void
icd_device_completion_init(struct icd_device *dev)
{
   int fd = -1;
   if (icd_gen_vkGetCompletionPageGPUD((VkDevice)dev, &fd) != VK_SUCCESS || fd < 0)
      return; /* every fence is asked about */
   void *map = mmap(NULL, GPUD_COMPLETION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   close(fd);
   if (map == MAP_FAILED)
      return;
   const struct gpud_completion_header *h = map;
   if (h->magic != GPUD_COMPLETION_MAGIC || h->fence_slots != GPUD_COMPLETION_FENCE_SLOTS ||
       h->semaphore_slots != GPUD_COMPLETION_SEMAPHORE_SLOTS ||
       h->event_slots != GPUD_COMPLETION_EVENT_SLOTS) {
      munmap(map, GPUD_COMPLETION_SIZE);
      return;
   }
   dev->fence_generation = calloc(GPUD_COMPLETION_FENCE_SLOTS, sizeof(uint32_t));
   dev->fence_used = calloc((GPUD_COMPLETION_FENCE_SLOTS + 63) / 64, sizeof(uint64_t));
   dev->semaphore_used = calloc((GPUD_COMPLETION_SEMAPHORE_SLOTS + 63) / 64, sizeof(uint64_t));
   dev->event_used = calloc((GPUD_COMPLETION_EVENT_SLOTS + 63) / 64, sizeof(uint64_t));
   if (!dev->fence_generation || !dev->fence_used || !dev->semaphore_used || !dev->event_used) {
      icd_device_completion_finish(dev);
      munmap(map, GPUD_COMPLETION_SIZE);
      return;
   }
   dev->completion = map;
}

struct icd_device *
icd_completion_device(VkDevice device, VkResult r)
{
   struct icd_device *dev = icd_device_from_handle(device);
   return r == VK_SUCCESS && dev->completion ? dev : NULL;
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

int
icd_completion_slot_take(struct icd_device *dev, uint64_t *used, unsigned *hint, unsigned n,
                         uint32_t *tag)
{
   pthread_mutex_lock(&dev->mutex);
   int slot = bitmap_take(used, hint, n);
   if (tag)
      *tag = ++dev->next_tag ? dev->next_tag : ++dev->next_tag;
   pthread_mutex_unlock(&dev->mutex);
   return slot;
}

void
icd_completion_slot_give(struct icd_device *dev, uint64_t *used, unsigned *hint, int slot)
{
   pthread_mutex_lock(&dev->mutex);
   bitmap_give(used, hint, slot);
   pthread_mutex_unlock(&dev->mutex);
}

VkResult
icd_completion_wait(struct icd_device *dev, VkResult (*reached)(const void *),
                    const void *what, uint64_t timeout, uint64_t *left, uint64_t last_ns,
                    uint64_t *waited_ns)
{
   struct gpud_completion_header *h = dev->completion;
   struct icd_connection *conn = dev->base.conn;
   uint64_t start = util_now_ns();
   uint64_t deadline = timeout > UINT64_MAX - start ? UINT64_MAX : start + timeout;
   bool flushed = false, slept = false;
   struct util_spin_window *window = &fence_window;
   if (!window->base_ns) {
      uint64_t set = wait_spin_max_setting_ns();
      util_spin_window_init_yielding(window, FENCE_SPIN_NS, set ? set : FENCE_SPIN_MAX_NS,
                                     FENCE_SPIN_YIELD_MAX_NS);
   }
   const uint64_t poll = poll_ns(window, last_ns);
   if (waited_ns)
      *waited_ns = 0;
   for (bool looked = false;; looked = true) {
      if (atomic_load(&h->lost) || icd_connection_is_lost(conn))
         return VK_ERROR_DEVICE_LOST;
      uint32_t seq = atomic_load(&h->seq);
      VkResult r = reached(what);
      if (r == VK_SUCCESS) {
         if (looked) {
            uint64_t now = util_now_ns();
            util_spin_window_note(window, now - start, now);
            if (waited_ns)
               *waited_ns = now - start;
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
      if (now - start < poll) {
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

void
icd_completion_fence_slot_give(struct icd_device *dev, int slot, uint32_t next_generation)
{
   pthread_mutex_lock(&dev->mutex);
   dev->fence_generation[slot] = next_generation;
   bitmap_give(dev->fence_used, &dev->fence_hint, slot);
   pthread_mutex_unlock(&dev->mutex);
}
