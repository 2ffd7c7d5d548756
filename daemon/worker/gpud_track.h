/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The tracker's state, shared by the files of the objects it publishes on
 * the completion page (gpud_track.c; gpud_queue.c's submissions; gpud_fence.c,
 * gpud_semaphore.c, gpud_event.c and gpud_query.c keep their objects'
 * slots; gpud_cmd_buffer.c notes what a recording changes).  Worker-only.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpud_context.h"
#include "gpud_object.h"
#include "util_list.h"
#include "util_spin.h"
#include "wire_completion.h"

/* Command buffers whose last time a queue keeps (direct-mapped). */
#define TRACK_EXPECT_SLOTS 64u

/* An event slot as the worker keeps it (what the page shows is written
 * from this alone: a client that scribbles on its page misleads only
 * itself). */
struct event_slot {
   uint64_t owner; /* the event's id; 0: none */
   uint32_t tag;
   uint16_t host_ops;
   uint16_t pending;
   bool set;
};

/* A timeline semaphore a submission signals, to publish when it completes. */
struct track_signal {
   uint32_t slot;
   uint64_t owner;
   uint64_t value;
};

/* An event a submission sets or resets, read when it completes. */
struct track_event {
   uint32_t slot;
   uint64_t owner;
   VkEvent event;
};

/* A query pool whose results a page shows (gpud_exec_vkSetQueryPoolPageGPUD):
 * the worker's own copy of its shape and counts. */
struct gpud_query_pool_page {
   struct util_list link; /* dtrack->pools */
   uint64_t owner;        /* the pool's id */
   VkQueryPool pool;
   struct gpud_query_page_header *map;
   size_t size;
   uint32_t n_queries, n_values;
   uint32_t pending, host_resets;
};

/* What a submission changes that the page shows. */
struct track_gather {
   struct track_signal *signals;
   unsigned n_signals, cap_signals;
   struct track_event *events;
   unsigned n_events, cap_events;
   uint64_t *pools; /* the ids of the query pools it changes */
   unsigned n_pools, cap_pools;
   uint64_t key; /* its first command buffer (0: none) */
};

struct track_entry {
   VkFence fence;
   uint64_t seq; /* the submission it completes */
   /* the application's fence it signals on the page: its slot (or -1),
    * its object's id and the value it gets */
   int32_t slot;
   uint64_t owner;
   uint32_t value;
   uint64_t done_ns; /* when the tracker saw it done (completions delayed) */
   struct track_signal *signals; /* timeline semaphores it signals */
   unsigned n_signals;
   struct track_event *events; /* events it sets or resets */
   unsigned n_events;
   uint64_t *pools; /* query pools whose queries it changes */
   unsigned n_pools;
   bool published; /* on the page already (a wait the host answered) */
   int32_t timing;   /* its timing slot (gpud_timing.h); -1: untimed, TIMING_ESTIMATED */
   uint64_t submitted_ns; /* when it went to the host (the call began) */
   bool charged;     /* the schedule knows its end (gpud_sched_worker.h) */
   uint64_t key;     /* its first command buffer: what it takes, expected */
};

struct gpud_queue_track {
   struct util_list link; /* dtrack->queues */
   VkQueue queue;
   struct daemon_status_queue *slot; /* NULL when the page has no free slot */
   struct track_entry *ring;
   unsigned head, count, cap;
   uint64_t submitted, completed;
   uint64_t busy_ns, busy_since_ns;
   /* GPU time: timestamps around each submission where the family writes
    * them (timing), else the time each had the queue busy */
   struct gpud_queue_timing *timing;
   uint32_t family;
   bool timing_tried;
   /* short submissions since the last timed one; GPU time over busy time
    * of the timed ones, in 1/65536 (TIMING_EVERY), once one was timed */
   uint32_t untimed_run;
   uint32_t timing_ratio;
   bool timing_ratio_known;
   uint64_t gpu_ns;
   uint64_t last_done_ns;
   /* the last of the worker's own submissions (gpud_queue_submit_own) */
   uint64_t own_seq;
   /* what the last submission each command buffer began took */
   struct track_expect {
      uint64_t key, ns;
   } expect[TRACK_EXPECT_SLOTS];
};

struct gpud_device_track {
   struct gpud_context *ctx;
   struct gpud_object *device; /* outlives its tracker (gpud_queue_track_device_end) */
   VkDevice dev;
   const struct gpud_host_dispatch *disp;
   pthread_mutex_t mutex;
   pthread_cond_t cond;
   pthread_cond_t retired; /* a queue's completed count moved, or lost */
   pthread_t thread;
   bool started, stop, lost;
   /* a queue has a submission of the worker's own in flight; the device
    * is on its context's own_devices */
   atomic_bool own_pending;
   bool own_listed;
   struct gpud_device_track *own_next;
   _Atomic uint64_t submissions; /* tracked so far: what the idle poll watches */
   /* the page's `settled`: submissions run (each tracked, or done at once),
    * those tracked that are not yet on the page, and whether one went to
    * the host untracked (then the page never says the device settled) */
   uint64_t processed;
   uint64_t unpublished;
   bool unsettled;
   uint64_t poll_ns;
   /* the tracker's: how long it polls for the next submission, and since
    * when it has had nothing in flight (0: something is) */
   struct util_spin_window window;
   uint64_t idle_since_ns;
   uint32_t cpus_seen; /* gpud_context_follow_cpus */
   struct util_list queues;
   VkFence *free_fences;
   unsigned n_free, cap_free;
   /* the completion page, and the id of the fence each slot is (0: none) */
   struct gpud_completion_header *page;
   int page_fd;
   uint64_t *owner;
   uint64_t *sem_owner; /* the id of the semaphore each semaphore slot is */
   struct event_slot *events; /* what each event slot says, the worker's copy */
   struct util_list pools;    /* query pools with a results page */
};

enum { EVENT_KEEP = -1, EVENT_RESET = 0, EVENT_SET = 1, EVENT_READ = 2 };

/* With the device track's mutex held (each: whether the page changed):
 * a timeline semaphore's value raised, if it still owns its slot; a fence
 * slot's value, if the fence still owns it; an event slot changed and its
 * word rewritten, if the event still owns it (the submissions pending
 * changed by delta, or always asked about: ask; the state kept, set, reset
 * or read from the host driver; host_ops_add more host sets and resets
 * run); a query pool's page, if it still has one; a pool's submissions
 * pending changed by delta (or asked about), after its results were read
 * from the host driver into the page (read). */
bool gpud_track_page_raise(struct gpud_device_track *t, uint32_t slot, uint64_t owner,
                           uint64_t value);
bool gpud_track_page_write(struct gpud_device_track *t, int32_t slot, uint64_t owner,
                           uint32_t value);
bool gpud_track_event_write(struct gpud_device_track *t, uint32_t slot, uint64_t owner,
                            VkEvent event, int delta, bool ask, int state, uint32_t host_ops_add);
struct gpud_query_pool_page *gpud_track_pool_find(struct gpud_device_track *t, uint64_t owner);
bool gpud_track_pool_write(struct gpud_device_track *t, uint64_t owner, int delta, bool ask,
                           bool read);

/* What gpud_queue.c's submissions ask of the tracker (gpud_track.c):
 * a fence for the next submission on q (VK_NULL_HANDLE: it goes untracked)
 * with what it changes pending on the page, and its timing slot (timed);
 * the submission recorded once the host has it (or not: submitted); the
 * events and pools a submission changes marked pending (or asked about);
 * with the mutex held, the page's count of settled submissions, and a
 * queue's counts on the status page. */
VkFence gpud_track_begin(struct gpud_device_track *t, struct gpud_queue_track *q,
                         struct track_gather *g, bool timed, int *ret_timing,
                         VkCommandBuffer *ret_begin, VkCommandBuffer *ret_end);
void gpud_track_end(struct gpud_device_track *t, struct gpud_queue_track *q, VkFence fence,
                    bool submitted, bool fence_used, const struct gpud_object *app_fence,
                    struct track_gather *g, int timing, uint64_t began_ns, bool counted);
bool gpud_track_watched_submitted(struct gpud_device_track *t, const struct track_event *events,
                                  unsigned n_events, const uint64_t *pools, unsigned n_pools,
                                  bool tracked);
void gpud_track_settle(struct gpud_device_track *t);
void gpud_track_publish(struct gpud_queue_track *q);
