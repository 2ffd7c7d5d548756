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
 * An event's slot is one word the worker alone writes: the tag the ICD chose
 * for it, how many of the application's vkSetEvent/vkResetEvent the worker
 * has run (16 bits, wrapping), how many submissions that set or reset it
 * are in flight (GPUD_EVENT_ASK_PENDING: always ask) and its state, read
 * from the host driver when such a submission completes (before the
 * submission's fence and semaphores show) and after each host set or reset.
 * The ICD answers vkGetEventStatus from it when no submission that changes
 * the event is in flight: with the word's state when the worker has run
 * every host set and reset the application made, else with the last of
 * those (nothing else can have changed the event since).
 *
 * After writing slots the worker increments `seq` and, when `waiters` is not
 * 0, wakes every futex waiter on it; a waiter increments `waiters`, reads
 * `seq`, checks its slots and sleeps while `seq` is unchanged.
 *
 * `expect_ns` (CLOCK_MONOTONIC, 0: none) is when the worker expects the
 * first of the device's submissions in flight to end, from what the same
 * command buffers took last time: a waiter may sleep until a little before
 * and poll from then, so that a long job's end costs it no wake-up.  A hint
 * only: waits end on the slots alone.
 *
 * `settled` is how many of the device's submissions (vkQueueSubmit,
 * vkQueueSubmit2, vkQueueBindSparse, counted in stream order) the worker had
 * run when it last found every one of them complete, stored before the
 * fence of the last of them: when it equals the ICD's own count of the
 * submissions it sent, nothing the application submitted is in flight
 * (icd_queue.c makes copy-only submissions then, docs/architecture.md).
 * `hold` is non-zero while gpudctl has the client's completions held back
 * (inject delay-completions): the ICD then makes no submission itself.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#include "util_futex.h"

#define GPUD_COMPLETION_SIZE (128u * 1024u)
#define GPUD_COMPLETION_MAGIC 0x63647067u /* "gpdc" */

struct gpud_completion_header {
   uint32_t magic;
   uint32_t fence_slots;
   _Atomic uint32_t seq;
   _Atomic uint32_t waiters;
   _Atomic uint32_t lost; /* the device is lost: every wait ends */
   uint32_t semaphore_slots;
   uint32_t event_slots;
   uint32_t reserved0;
   _Atomic uint64_t expect_ns;
   _Atomic uint64_t settled;
   _Atomic uint32_t hold; /* non-zero: completions are held back (gpudctl inject) */
   uint32_t reserved[3];
};
_Static_assert(sizeof(struct gpud_completion_header) == 64, "the page's layout");

struct gpud_semaphore_slot {
   _Atomic uint64_t value;
   _Atomic uint32_t tag; /* 0: no semaphore */
   uint32_t reserved;
};

#define GPUD_COMPLETION_FENCE_SLOTS 8192u
#define GPUD_COMPLETION_EVENT_SLOTS 4096u
#define GPUD_COMPLETION_SEMAPHORE_SLOTS                                                  \
   ((GPUD_COMPLETION_SIZE - sizeof(struct gpud_completion_header) -                     \
     GPUD_COMPLETION_FENCE_SLOTS * sizeof(uint32_t) -                                    \
     GPUD_COMPLETION_EVENT_SLOTS * sizeof(uint64_t)) /                                   \
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
                                         GPUD_COMPLETION_FENCE_SLOTS * sizeof(uint32_t) +
                                         GPUD_COMPLETION_EVENT_SLOTS * sizeof(uint64_t));
}

/* An event slot's word and its fields (the comment at the top says what
 * they mean). */
#define GPUD_EVENT_ASK_PENDING 0x7fffu

static inline _Atomic uint64_t *
gpud_completion_events(void *page)
{
   return (_Atomic uint64_t *)((char *)page + sizeof(struct gpud_completion_header) +
                               GPUD_COMPLETION_FENCE_SLOTS * sizeof(uint32_t));
}

static inline uint64_t
gpud_event_word(uint32_t tag, uint32_t host_ops, uint32_t pending, bool set)
{
   return (uint64_t)tag | (uint64_t)(host_ops & 0xffffu) << 32 |
          (uint64_t)(pending & 0x7fffu) << 48 | (uint64_t)(set ? 1 : 0) << 63;
}

static inline uint32_t
gpud_event_tag(uint64_t w)
{
   return (uint32_t)w;
}

static inline uint32_t
gpud_event_host_ops(uint64_t w)
{
   return (uint32_t)(w >> 32) & 0xffffu;
}

static inline uint32_t
gpud_event_pending(uint64_t w)
{
   return (uint32_t)(w >> 48) & 0x7fffu;
}

static inline bool
gpud_event_set(uint64_t w)
{
   return w >> 63;
}

/* After slots changed: waiters (in the application) look again. */
static inline void
gpud_completion_wake(struct gpud_completion_header *h)
{
   atomic_fetch_add(&h->seq, 1);
   if (atomic_load(&h->waiters))
      util_futex_wake(&h->seq);
}

/* Raises *value to at least v (the worker and the ICD both raise it). */
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

/*
 * A query pool's results page: a memfd the ICD makes for each occlusion,
 * timestamp or pipeline-statistics pool (sealed against shrinking and
 * growing) and sends with vkSetQueryPoolPageGPUD; the worker maps it and is
 * the only writer.  After the header, each query's n_values 64-bit values
 * and its availability, as vkGetQueryPoolResults writes them with
 * VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT.
 *
 * `pending` counts the submissions in flight whose command buffers reset,
 * begin, end or write queries of the pool (GPUD_QUERY_ASK: always ask);
 * when one completes, the tracker reads every result of the pool from the
 * host driver into the page, then takes it off.  `host_resets` counts the
 * application's vkResetQueryPool the worker has run (it clears the range's
 * availability first).  The ICD answers vkGetQueryPoolResults from the
 * page while `ready` is 1, nothing is pending and host_resets is its own
 * count: the page then holds what the host would answer.
 */
#define GPUD_QUERY_PAGE_MAGIC 0x71647067u /* "gpdq" */
#define GPUD_QUERY_ASK 0xffffffffu
/* A pool whose page would be larger is asked about (the tracker reads
 * every result of a pool when a submission that changes it completes). */
#define GPUD_QUERY_PAGE_MAX (1u << 20)

struct gpud_query_page_header {
   _Atomic uint32_t ready; /* 1: the worker took the page */
   uint32_t magic;
   uint32_t n_queries;
   uint32_t n_values;
   _Atomic uint32_t pending;
   _Atomic uint32_t host_resets;
   uint32_t reserved[10];
};

static inline uint64_t
gpud_query_page_size(uint32_t n_queries, uint32_t n_values)
{
   uint64_t size = sizeof(struct gpud_query_page_header) +
                   (uint64_t)n_queries * (n_values + 1) * sizeof(uint64_t);
   return (size + 4095) & ~(uint64_t)4095;
}

/* The 64-bit values of one query of a pool the page can show (0: a type
 * whose results are asked about). */
static inline uint32_t
gpud_query_values(const VkQueryPoolCreateInfo *info)
{
   switch (info->queryType) {
   case VK_QUERY_TYPE_OCCLUSION:
   case VK_QUERY_TYPE_TIMESTAMP:
      return 1;
   case VK_QUERY_TYPE_PIPELINE_STATISTICS:
      return (uint32_t)__builtin_popcount(info->pipelineStatistics);
   default:
      return 0;
   }
}

/* The first word of query i's results (its availability after n_values;
 * n_values is the reader's own, never the page's). */
static inline _Atomic uint64_t *
gpud_query_results(struct gpud_query_page_header *h, uint32_t n_values, uint32_t i)
{
   return (_Atomic uint64_t *)((char *)h + sizeof(*h)) + (uint64_t)i * (n_values + 1);
}

_Static_assert(sizeof(struct gpud_query_page_header) == 64, "one cache line");

