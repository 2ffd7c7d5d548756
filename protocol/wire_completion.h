/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The completion page: shared memory (a memfd) per device that the worker
 * writes what completed into and the ICD reads, so that an application asks
 * whether a fence is signalled, or waits for one, without a message.
 *
 * The worker only writes it (and reads `waiters`, a hint): what a client
 * writes into its own page fools that client alone.  A fence slot holds
 * (generation << 1) | signalled, where the generation counts the fence's
 * resets on both sides (the ICD's vkResetFences and the daemon's, in stream
 * order); a value of another generation is stale and means "not signalled".
 * GPUD_FENCE_ASK: the fence's state is the host driver's alone (a payload
 * imported, a signal the tracker does not see): the ICD asks the daemon.
 *
 * A timeline semaphore's slot holds a value and a tag: the worker stores
 * the tag the ICD chose for the semaphore (with its initial value) when it
 * takes the slot, and after that raises the value as submissions that
 * signal the semaphore complete; the ICD reads the value only while the tag
 * is its semaphore's (else it asks).  GPUD_SEMAPHORE_ASK: asked about.
 *
 * After writing slots the worker increments `seq` and, when `waiters` is not
 * 0, wakes every futex waiter on it; a waiter increments `waiters`, reads
 * `seq`, checks its slots and sleeps while `seq` is unchanged.
 */

#include <stdatomic.h>
#include <stdint.h>

#include "util_futex.h"

#define GPUD_COMPLETION_SIZE (64u * 1024u)
#define GPUD_COMPLETION_MAGIC 0x63647067u /* "gpdc" */

struct gpud_completion_header {
   uint32_t magic;
   uint32_t fence_slots;
   _Atomic uint32_t seq;
   _Atomic uint32_t waiters;
   _Atomic uint32_t lost; /* the device is lost: every wait ends */
   uint32_t semaphore_slots;
   uint32_t reserved[10];
};

struct gpud_semaphore_slot {
   _Atomic uint64_t value;
   _Atomic uint32_t tag; /* 0: no semaphore */
   uint32_t reserved;
};

#define GPUD_COMPLETION_FENCE_SLOTS 8192u
#define GPUD_COMPLETION_SEMAPHORE_SLOTS                                                  \
   ((GPUD_COMPLETION_SIZE - sizeof(struct gpud_completion_header) -                     \
     GPUD_COMPLETION_FENCE_SLOTS * sizeof(uint32_t)) /                                   \
    sizeof(struct gpud_semaphore_slot))
#define GPUD_FENCE_ASK 0xffffffffu
#define GPUD_SEMAPHORE_ASK UINT64_MAX

static inline _Atomic uint32_t *
gpud_completion_fences(void *page)
{
   return (_Atomic uint32_t *)((char *)page + sizeof(struct gpud_completion_header));
}

static inline struct gpud_semaphore_slot *
gpud_completion_semaphores(void *page)
{
   return (struct gpud_semaphore_slot *)((char *)page + sizeof(struct gpud_completion_header) +
                                         GPUD_COMPLETION_FENCE_SLOTS * sizeof(uint32_t));
}

/* Raises *value to at least v (the worker and the ICD both raise it). */
/* After slots changed: waiters (in the application) look again. */
static inline void
gpud_completion_wake(struct gpud_completion_header *h)
{
   atomic_fetch_add(&h->seq, 1);
   if (atomic_load(&h->waiters))
      util_futex_wake(&h->seq);
}

static inline void
gpud_semaphore_raise(_Atomic uint64_t *value, uint64_t v)
{
   uint64_t old = atomic_load(value);
   while (old < v && old != GPUD_SEMAPHORE_ASK && !atomic_compare_exchange_weak(value, &old, v))
      ;
}

static inline uint32_t
gpud_fence_value(uint32_t generation, int signaled)
{
   return ((generation << 1) | (signaled ? 1u : 0u)) & 0x7fffffffu;
}

_Static_assert(sizeof(struct gpud_completion_header) == 64, "one cache line");
_Static_assert(sizeof(struct gpud_semaphore_slot) == 16, "two words");
