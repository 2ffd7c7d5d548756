/* SPDX-License-Identifier: MIT */
/*
 * The tracker of a device's queues: what each queue is doing, for gpudctl
 * (submissions, how many are still in flight, the last one complete, the
 * busy and GPU time), and the completion page the application's waits read.
 *
 * Every submit carries a fence of gpud's own (the application's submit
 * takes it when it names no fence of its own, else an empty submit right
 * after it does: either signals once everything submitted before is done).
 * A tracker thread per device waits on the oldest fence of each queue and
 * publishes completions on the status page; its fences go back to a pool.
 * A queue's busy time is the time it had work submitted and not complete.
 *
 * The tracker also publishes the application's fences on the device's
 * completion page (protocol/wire_completion.h): when a submission that
 * signals one completes, the fence's slot gets its current generation with
 * the signalled bit, and waiters in the application wake.  Events that a
 * submission's command buffers set or reset count as pending on the page
 * from before the host has the submission until it completes; then their
 * state is read from the host driver and published before the submission's
 * semaphores and fence.  The submissions themselves are gpud_queue.c's.
 */
#include "gpud_hold.h"
#include "gpud_queue.h"
#include "gpud_sched_worker.h"
#include "gpud_timing.h"
#include "gpud_track.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "daemon_limits.h"
#include "util_env.h"
#include "util_fd.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "util_spin.h"
#include "util_time.h"
#include "util_trace.h"
#include "wire_completion.h"

/* Submissions tracked at once per queue (the ring grows to this); more
 * are counted and covered by the next tracked one (a fence signals after
 * all earlier work). */
#define TRACK_MAX_PENDING 65536u
#define TRACK_FIRST_RING 64u
/* Fences kept for reuse per device */
#define TRACK_POOL 256u
/* Fences the tracker makes ahead, from the device's start, so that a burst
 * of submissions (a model's first graph: dozens without a wait) takes them
 * from the pool instead of the host making each on the way (tens to
 * hundreds of microseconds each on some drivers). */
#define TRACK_PREFILL 48u
/* The tracker sleeps at most this long in one host wait. */
#define TRACK_SLICE_NS (50ull * 1000 * 1000)
/* Before it sleeps (in the host driver's fence wait, or for the next
 * submission) the tracker polls this long: a short submission's end reaches
 * the page without two thread wake-ups (GPUD_TRACK_POLL_US overrides it).
 * Not on machines where polls yield (util_spin.h: few CPUs): there the poll
 * takes the CPU the work itself needs (a CPU driver's queue, the
 * application). */
#define TRACK_POLL_NS (50ull * 1000)
/* ... and up to this long while an application thread sleeps on the
 * device's page (its `waiters`, a hint): the end of the work it waits for
 * then costs it one wake-up, as the host driver's own wait would, not two
 * (the tracker's in the host's wait, then its own).  Bounded, so a client
 * that always waits costs at most this much polling per submission. */
#define TRACK_WAITED_POLL_NS (2ull * 1000 * 1000)
/* A submission whose command buffers took at least TRACK_EXPECT_MIN_NS the
 * last time is expected to take as long again: the tracker sleeps in the
 * host's wait until TRACK_EXPECT_EARLY_NS before that, then polls until
 * it ends, for up to an eighth of the time expected after (at least
 * TRACK_EXPECT_LATE_NS, at most TRACK_EXPECT_LATE_MAX_NS), so that a long
 * job's end reaches the page without the tracker's wake-up.  The page
 * tells the application's waits the same (its expect_ns).  Only where
 * polls may spin (poll_ns). */
#define TRACK_EXPECT_MIN_NS (1ull * 1000 * 1000)
#define TRACK_EXPECT_EARLY_NS (250ull * 1000)
#define TRACK_EXPECT_LATE_NS (1ull * 1000 * 1000)
#define TRACK_EXPECT_LATE_MAX_NS (4ull * 1000 * 1000)
/* Of a queue's short submissions (expected under TIMING_ALWAYS_NS, or not
 * known) one in TIMING_EVERY gets timestamps; the others are charged their
 * busy time in the proportion of GPU time to busy time the timed ones
 * showed.  Timestamps on every one cost 8 processes' frame loops 4 % on the
 * NVIDIA driver (docs/performance.md, "Fences in place, timestamps
 * sampled"), where a long job pays nothing worth saying for them. */
#define TIMING_EVERY 8u
#define TIMING_ALWAYS_NS (200ull * 1000)

/* A submission's timing slot when it was left untimed among timed ones:
 * its GPU time is estimated (TIMING_EVERY). */
#define TIMING_ESTIMATED (-2)

/* The slot of q's expectations a submission's first command buffer (key)
 * has. */
static struct track_expect *
expect_slot(struct gpud_queue_track *q, uint64_t key)
{
   return &q->expect[(key >> 4) % TRACK_EXPECT_SLOTS];
}

/* With the mutex held: a timeline semaphore's value raised, if it still owns
 * its slot. */
bool
gpud_track_page_raise(struct gpud_device_track *t, uint32_t slot, uint64_t owner, uint64_t value)
{
   if (!t->page || slot >= GPUD_COMPLETION_SEMAPHORE_SLOTS || t->sem_owner[slot] != owner)
      return false;
   gpud_semaphore_raise(&gpud_completion_semaphores(t->page)[slot].value, value);
   return true;
}

/* With the mutex held: an entry's semaphores published (or, ask, handed to
 * the host driver to tell) and dropped. */
static bool
entry_signals(struct gpud_device_track *t, struct track_entry *e, bool ask)
{
   bool wrote = false;
   for (unsigned i = 0; i < e->n_signals; i++) {
      const struct track_signal *s = &e->signals[i];
      if (ask && t->page && s->slot < GPUD_COMPLETION_SEMAPHORE_SLOTS &&
          t->sem_owner[s->slot] == s->owner) {
         atomic_store(&gpud_completion_semaphores(t->page)[s->slot].value, GPUD_SEMAPHORE_ASK);
         wrote = true;
      } else if (!ask) {
         wrote |= gpud_track_page_raise(t, s->slot, s->owner, s->value);
      }
   }
   free(e->signals);
   e->signals = NULL;
   e->n_signals = 0;
   return wrote;
}

/* With the mutex held: the slot's value, if the fence still owns it. */
bool
gpud_track_page_write(struct gpud_device_track *t, int32_t slot, uint64_t owner, uint32_t value)
{
   if (!t->page || slot < 0 || (uint32_t)slot >= GPUD_COMPLETION_FENCE_SLOTS ||
       t->owner[slot] != owner)
      return false;
   atomic_store(&gpud_completion_fences(t->page)[slot], value);
   return true;
}


/* With the mutex held: an event slot changed and its word rewritten, if the
 * event still owns it: the submissions pending changed by delta (or always
 * asked about: ask), the state kept, set, reset or read from the host
 * driver, host_ops_add more host sets and resets run. */
bool
gpud_track_event_write(struct gpud_device_track *t, uint32_t slot, uint64_t owner, VkEvent event,
            int delta, bool ask, int state, uint32_t host_ops_add)
{
   if (!t->page || slot >= GPUD_COMPLETION_EVENT_SLOTS || t->events[slot].owner != owner)
      return false;
   struct event_slot *e = &t->events[slot];
   if (ask || (delta > 0 && e->pending + 1u >= GPUD_EVENT_ASK_PENDING))
      e->pending = GPUD_EVENT_ASK_PENDING;
   else if (e->pending != GPUD_EVENT_ASK_PENDING && delta > 0)
      e->pending++;
   else if (e->pending != GPUD_EVENT_ASK_PENDING && delta < 0 && e->pending)
      e->pending--;
   if (state == EVENT_READ) {
      VkResult r = t->disp->GetEventStatus(t->dev, event);
      if (r == VK_EVENT_SET || r == VK_EVENT_RESET)
         e->set = r == VK_EVENT_SET;
      else
         e->pending = GPUD_EVENT_ASK_PENDING;
   } else if (state != EVENT_KEEP) {
      e->set = state == EVENT_SET;
   }
   e->host_ops = (uint16_t)(e->host_ops + host_ops_add);
   atomic_store(&gpud_completion_events(t->page)[slot],
                gpud_event_word(e->tag, e->host_ops, e->pending, e->set));
   return true;
}

/* With the mutex held: a query pool's page, if it still has one. */
struct gpud_query_pool_page *
gpud_track_pool_find(struct gpud_device_track *t, uint64_t owner)
{
   struct gpud_query_pool_page *p;
   util_list_for_each(p, &t->pools, link) {
      if (p->owner == owner)
         return p;
   }
   return NULL;
}

/* With the mutex held: a pool's submissions pending changed by delta (or
 * always asked about: ask), after its results were read from the host
 * driver into the page (read). */
bool
gpud_track_pool_write(struct gpud_device_track *t, uint64_t owner, int delta, bool ask, bool read)
{
   struct gpud_query_pool_page *p = gpud_track_pool_find(t, owner);
   if (!p)
      return false;
   if (read && p->pending != GPUD_QUERY_ASK && t->disp->GetQueryPoolResults) {
      uint32_t stride = (p->n_values + 1) * (uint32_t)sizeof(uint64_t);
      VkResult r = t->disp->GetQueryPoolResults(
         t->dev, p->pool, 0, p->n_queries, (size_t)p->n_queries * stride,
         gpud_query_results(p->map, p->n_values, 0), stride,
         VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
      ask |= r != VK_SUCCESS && r != VK_NOT_READY;
   }
   if (ask || (delta > 0 && p->pending + 1 >= GPUD_QUERY_ASK))
      p->pending = GPUD_QUERY_ASK;
   else if (p->pending != GPUD_QUERY_ASK && delta > 0)
      p->pending++;
   else if (p->pending != GPUD_QUERY_ASK && delta < 0 && p->pending)
      p->pending--;
   atomic_store(&p->map->pending, p->pending);
   return true;
}

/* With the mutex held: the events and query pools a submission on its way
 * to the host changes, pending (tracked: its completion will be seen) or
 * asked about from now on; whether an event slot changed (waiters look). */
bool
gpud_track_watched_submitted(struct gpud_device_track *t, const struct track_event *events,
                             unsigned n_events, const uint64_t *pools, unsigned n_pools, bool tracked)
{
   bool wrote = false;
   for (unsigned i = 0; i < n_events; i++)
      wrote |= gpud_track_event_write(t, events[i].slot, events[i].owner, events[i].event, 1, !tracked,
                           EVENT_KEEP, 0);
   for (unsigned i = 0; i < n_pools; i++)
      gpud_track_pool_write(t, pools[i], 1, !tracked, false);
   return wrote;
}

void
gpud_track_publish(struct gpud_queue_track *q)
{
   if (!q->slot)
      return;
   atomic_store_explicit(&q->slot->submissions, q->submitted, memory_order_relaxed);
   atomic_store_explicit(&q->slot->completed, q->completed, memory_order_relaxed);
   atomic_store_explicit(&q->slot->busy_ns, q->busy_ns, memory_order_relaxed);
   atomic_store_explicit(&q->slot->busy_since_ns, q->busy_since_ns, memory_order_relaxed);
   atomic_store_explicit(&q->slot->gpu_ns, q->gpu_ns, memory_order_relaxed);
}

/* With the mutex held: a retired submission's GPU time, from its
 * timestamps (no more than the time from its submit to its end), else the
 * time it had the queue to itself since the one before it was done. */
static void
entry_gpu_time(struct gpud_device_track *t, struct gpud_queue_track *q, struct track_entry *e)
{
   uint64_t ns = 0;
   uint64_t wall = e->done_ns > e->submitted_ns ? e->done_ns - e->submitted_ns : 0;
   uint64_t from = UTIL_MAX(e->submitted_ns, q->last_done_ns);
   uint64_t busy = e->done_ns > from ? e->done_ns - from : 0;
   if (e->timing >= 0 && gpud_timing_read(q->timing, e->timing, &ns)) {
      ns = UTIL_MIN(ns, wall);
      if (busy) {
         uint64_t r = UTIL_MIN(ns, busy) * 65536 / busy;
         q->timing_ratio = q->timing_ratio_known ? (uint32_t)((q->timing_ratio * 7ull + r) / 8)
                                                 : (uint32_t)r;
         q->timing_ratio_known = true;
      }
   } else if (e->timing == TIMING_ESTIMATED && q->timing_ratio_known) {
      ns = busy * q->timing_ratio / 65536;
   } else {
      ns = busy;
   }
   e->timing = -1;
   q->gpu_ns += ns;
   q->last_done_ns = UTIL_MAX(q->last_done_ns, e->done_ns);
   if (e->key)
      *expect_slot(q, e->key) = (struct track_expect){.key = e->key, .ns = ns};
   if (!e->charged)
      gpud_sched_done(t->ctx->sched, ns);
   e->charged = true;
}

/* With the mutex held: the schedule is told that the submissions still in
 * the rings will not be seen complete (the device is lost, or nothing
 * watches them). */
static void
uncharge_all(struct gpud_device_track *t)
{
   struct gpud_queue_track *q;
   util_list_for_each(q, &t->queues, link) {
      for (unsigned i = 0; i < q->count; i++) {
         struct track_entry *e = &q->ring[(q->head + i) % q->cap];
         if (!e->charged)
            gpud_sched_dropped(t->ctx->sched);
         e->charged = true;
      }
   }
}

/* Takes the finished submissions off each queue; with the mutex held.
 * Returns when the first submission held back by injected delay may go
 * (0: none is held). */
/* With the mutex held: whether the entry's submission is done (noted). */
static bool
entry_done(struct gpud_device_track *t, struct track_entry *e, uint64_t now)
{
   if (!e->done_ns) {
      if (t->disp->GetFenceStatus(t->dev, e->fence) != VK_SUCCESS)
         return false;
      e->done_ns = now;
   }
   return true;
}

/* With the mutex held: when every submission run is complete, the page
 * says how many (before the fence of the last of them). */
void
gpud_track_settle(struct gpud_device_track *t)
{
   if (!t->unpublished && !t->unsettled && !t->lost && t->page)
      atomic_store(&t->page->settled, t->processed);
}

/* With the mutex held: a done entry's semaphores and fence on the page. */
static bool
entry_publish(struct gpud_device_track *t, struct track_entry *e)
{
   if (e->published)
      return false;
   e->published = true;
   util_trace(UTIL_TRACE_DONE, (uint32_t)e->seq);
   if (t->unpublished)
      t->unpublished--;
   /* the events and semaphores first: a fence signals after its batch's
    * work; then the count of submissions settled, which lets the ICD
    * signal a later fence itself (an empty submission's: everything of
    * this batch must show by then), then this batch's fence */
   bool wrote = false;
   for (unsigned i = 0; i < e->n_events; i++)
      wrote |= gpud_track_event_write(t, e->events[i].slot, e->events[i].owner, e->events[i].event, -1,
                           false, EVENT_READ, 0);
   free(e->events);
   e->events = NULL;
   e->n_events = 0;
   for (unsigned i = 0; i < e->n_pools; i++)
      gpud_track_pool_write(t, e->pools[i], -1, false, true);
   free(e->pools);
   e->pools = NULL;
   e->n_pools = 0;
   wrote |= entry_signals(t, e, false);
   gpud_track_settle(t);
   return gpud_track_page_write(t, e->slot, e->owner, e->value) || wrote;
}

/* With the mutex held, on any thread: every done submission on the page,
 * whatever delay is injected (the host answered a wait already), and
 * nothing retired: the tracker thread alone recycles fences, which it may
 * be waiting on. */
static void
publish_done(struct gpud_device_track *t)
{
   uint64_t now = util_now_ns();
   bool wrote = false;
   struct gpud_queue_track *q;
   util_list_for_each(q, &t->queues, link) {
      for (unsigned i = 0; i < q->count; i++) {
         struct track_entry *e = &q->ring[(q->head + i) % q->cap];
         if (!entry_done(t, e, now))
            break;
         wrote |= entry_publish(t, e);
      }
   }
   if (wrote) {
      gpud_completion_wake(t->page);
      pthread_cond_signal(&t->cond); /* the tracker retires them */
   }
}

static uint64_t
collect(struct gpud_device_track *t)
{
   uint64_t now = util_now_ns();
   uint64_t delay = gpud_context_inject_delay_ns(t->ctx);
   uint64_t release = 0;
   bool wrote = false;
   struct gpud_queue_track *q;
   util_list_for_each(q, &t->queues, link) {
      bool changed = false;
      while (q->count) {
         struct track_entry *e = &q->ring[q->head];
         if (!entry_done(t, e, now))
            break;
         if (delay && !e->published &&
             (e->slot >= 0 || e->n_signals || e->n_events || e->n_pools) &&
             now < e->done_ns + delay) {
            /* gpudctl inject delay-completions: the application's fence
             * and semaphores signal for it this much later */
            uint64_t at = e->done_ns + delay;
            release = !release || at < release ? at : release;
            break;
         }
         wrote |= entry_publish(t, e);
         entry_gpu_time(t, q, e);
         if (t->n_free < t->cap_free) {
            t->disp->ResetFences(t->dev, 1, &e->fence);
            t->free_fences[t->n_free++] = e->fence;
         } else {
            t->disp->DestroyFence(t->dev, e->fence, NULL);
         }
         q->completed = e->seq;
         q->head = (q->head + 1) % q->cap;
         q->count--;
         changed = true;
      }
      if (changed && atomic_load_explicit(&t->own_pending, memory_order_relaxed))
         pthread_cond_broadcast(&t->retired);
      /* idle once the last submission is done (one that went untracked
       * after the last tracked one keeps it busy until the next is done) */
      if (changed && q->completed == q->submitted) {
         if (q->busy_since_ns && now > q->busy_since_ns)
            q->busy_ns += now - q->busy_since_ns;
         q->busy_since_ns = 0;
      }
      if (changed)
         gpud_track_publish(q);
   }
   if (wrote)
      gpud_completion_wake(t->page);
   return release;
}

static void
page_lost(struct gpud_device_track *t)
{
   if (t->page && !atomic_exchange(&t->page->lost, 1))
      gpud_completion_wake(t->page);
}

/* Whether an application thread sleeps on the device's page. */
static bool
page_waited(const struct gpud_device_track *t)
{
   return t->page && atomic_load_explicit(&t->page->waiters, memory_order_relaxed) != 0;
}

/* With the mutex held: polls the fences for t->poll_ns, longer while the
 * application waits (without the mutex); whether one signalled.  An error
 * (a lost device) ends the poll without one: the host's wait that follows
 * reports it. */
static bool
poll_fences(struct gpud_device_track *t, const VkFence *fences, uint32_t n, uint64_t until)
{
   if (!t->poll_ns)
      return false;
   pthread_mutex_unlock(&t->mutex);
   uint64_t start = util_now_ns(), now = start, elapsed = 0;
   VkResult r = VK_NOT_READY;
   do {
      for (uint32_t i = 0; i < n && r == VK_NOT_READY; i++)
         r = t->disp->GetFenceStatus(t->dev, fences[i]);
      now = util_now_ns();
      elapsed = now - start;
   } while (r == VK_NOT_READY &&
            (elapsed < t->poll_ns || now < until ||
             (elapsed < TRACK_WAITED_POLL_NS && page_waited(t))));
   pthread_mutex_lock(&t->mutex);
   return r == VK_SUCCESS;
}

/* With the mutex held: when the first submission in flight is expected to
 * end (0: none known), and until when the tracker polls for it
 * (*ret_until); on the page for the application's waits. */
static uint64_t
expected_end(struct gpud_device_track *t, uint64_t *ret_until)
{
   uint64_t end = 0;
   *ret_until = 0;
   if (t->poll_ns) {
      struct gpud_queue_track *q;
      util_list_for_each(q, &t->queues, link) {
         if (!q->count)
            continue;
         const struct track_entry *e = &q->ring[q->head];
         const struct track_expect *x = expect_slot(q, e->key);
         if (e->done_ns || !e->key || x->key != e->key || x->ns < TRACK_EXPECT_MIN_NS)
            continue;
         uint64_t ns = x->ns;
         uint64_t at = UTIL_MAX(e->submitted_ns, q->last_done_ns) + ns;
         if (!end || at < end) {
            end = at;
            *ret_until = at + UTIL_MIN(UTIL_MAX(ns / 8, TRACK_EXPECT_LATE_NS),
                                       TRACK_EXPECT_LATE_MAX_NS);
         }
      }
   }
   if (t->page && atomic_load_explicit(&t->page->expect_ns, memory_order_relaxed) != end) {
      atomic_store(&t->page->expect_ns, end);
      if (end)
         gpud_completion_wake(t->page); /* a waiter asleep looks again */
   }
   return end;
}

/* With the mutex held, when nothing is in flight: polls for t->poll_ns for
 * a new submission (the worker may be submitting the next one). */
static void
poll_for_submission(struct gpud_device_track *t)
{
   if (!t->poll_ns)
      return;
   uint64_t seen = atomic_load(&t->submissions);
   pthread_mutex_unlock(&t->mutex);
   uint64_t start = util_now_ns();
   if (!t->idle_since_ns)
      t->idle_since_ns = start;
   bool came = false;
   do {
      came = atomic_load(&t->submissions) != seen;
      if (!came)
         util_spin_pause(false); /* only where there are CPUs to spare */
   } while (!came && util_now_ns() - start < t->window.ns);
   pthread_mutex_lock(&t->mutex);
}

/* Without the mutex: the pool of free fences filled to TRACK_PREFILL (the
 * host makes them while nothing waits for one). */
static void
prefill(struct gpud_device_track *t)
{
   const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   for (;;) {
      pthread_mutex_lock(&t->mutex);
      bool more = !t->stop && !t->lost && t->n_free < TRACK_PREFILL && t->n_free < t->cap_free;
      pthread_mutex_unlock(&t->mutex);
      VkFence fence = VK_NULL_HANDLE;
      if (!more || t->disp->CreateFence(t->dev, &info, NULL, &fence) != VK_SUCCESS)
         return;
      pthread_mutex_lock(&t->mutex);
      bool kept = t->n_free < t->cap_free;
      if (kept)
         t->free_fences[t->n_free++] = fence;
      pthread_mutex_unlock(&t->mutex);
      if (!kept) {
         t->disp->DestroyFence(t->dev, fence, NULL);
         return;
      }
   }
}

static void *
tracker_thread(void *data)
{
   struct gpud_device_track *t = data;
   pthread_setname_np(pthread_self(), "gpud-track");
   VkFence fences[64];
   uint64_t release = 0; /* a completion held back by injected delay goes then */
   bool polled = false;
   prefill(t);
   pthread_mutex_lock(&t->mutex);
   while (!t->stop) {
      /* what is done retires, also what another thread published (it
       * noted those done: they are waited on no more) */
      release = collect(t);
      uint32_t n = 0;
      struct gpud_queue_track *q;
      util_list_for_each(q, &t->queues, link) {
         if (q->count && n < 64 && !q->ring[q->head].done_ns)
            fences[n++] = q->ring[q->head].fence;
      }
      if (t->lost || (!n && !release)) {
         uint64_t unused;
         expected_end(t, &unused); /* (none: off the page) */
         /* once polled, asleep (the loop looks at stop in between) */
         if (!t->lost && !polled) {
            polled = true;
            poll_for_submission(t);
            continue;
         }
         pthread_cond_wait(&t->cond, &t->mutex);
         continue;
      }
      polled = false;
      gpud_context_follow_cpus(t->ctx, &t->cpus_seen);
      if (t->idle_since_ns) {
         uint64_t now = util_now_ns();
         util_spin_window_note(&t->window, now - t->idle_since_ns, now);
         t->idle_since_ns = 0;
      }
      /* a long job expected to end soon is polled for; until then the
       * host's wait sleeps */
      uint64_t until = 0;
      uint64_t end = expected_end(t, &until);
      uint64_t now = util_now_ns();
      if (n && poll_fences(t, fences, n, end && now + TRACK_EXPECT_EARLY_NS >= end ? until : 0))
         continue;
      now = util_now_ns();
      uint64_t slice = TRACK_SLICE_NS;
      if (release)
         slice = release > now ? UTIL_MIN(slice, release - now) : 0;
      if (end && now + TRACK_EXPECT_EARLY_NS < end)
         slice = UTIL_MIN(slice, end - TRACK_EXPECT_EARLY_NS - now);
      pthread_mutex_unlock(&t->mutex);
      VkResult r = VK_TIMEOUT;
      if (n) {
         r = t->disp->WaitForFences(t->dev, n, fences, VK_FALSE, slice);
      } else {
         struct timespec ts = {.tv_sec = (time_t)(slice / 1000000000ull),
                               .tv_nsec = (long)(slice % 1000000000ull)};
         nanosleep(&ts, NULL);
      }
      pthread_mutex_lock(&t->mutex);
      if (r == VK_ERROR_DEVICE_LOST) {
         t->lost = true; /* nothing completes any more: stop watching */
         pthread_cond_broadcast(&t->retired);
         page_lost(t);
         uncharge_all(t);
         /* a fault, as when a call the application waits for says so (the
          * application's waits end on the page, not in a host call) */
         atomic_store(&t->device->lost, true);
         pthread_mutex_unlock(&t->mutex);
         gpud_context_host_lost(t->ctx, "its queues' work");
         pthread_mutex_lock(&t->mutex);
      } else if (r < 0) {
         /* out of memory, say: look again a little later */
         struct timespec ts = {.tv_nsec = 10000000};
         pthread_mutex_unlock(&t->mutex);
         nanosleep(&ts, NULL);
         pthread_mutex_lock(&t->mutex);
      }
   }
   pthread_mutex_unlock(&t->mutex);
   return NULL;
}

static struct gpud_device_track *
device_track(struct gpud_context *ctx, struct gpud_object *device)
{
   if (device->dtrack)
      return device->dtrack;
   struct gpud_device_track *t = calloc(1, sizeof(*t));
   if (!t)
      return NULL;
   t->ctx = ctx;
   t->device = device;
   t->dev = (VkDevice)(uintptr_t)device->handle;
   t->disp = device->disp;
   t->free_fences = calloc(TRACK_POOL, sizeof(*t->free_fences));
   if (!t->free_fences || !t->disp->WaitForFences || !t->disp->GetFenceStatus ||
       !t->disp->ResetFences || !t->disp->CreateFence || !t->disp->DestroyFence ||
       !t->disp->QueueSubmit) {
      free(t->free_fences);
      free(t);
      return NULL;
   }
   t->cap_free = TRACK_POOL;
   t->page_fd = -1;
   t->poll_ns = util_spin_yields() ? 0 : TRACK_POLL_NS;
   uint64_t poll_us;
   if (util_env_number("GPUD_TRACK_POLL_US", 0, 1000 * 1000, &poll_us))
      t->poll_ns = poll_us * 1000;
   util_spin_window_init(&t->window, t->poll_ns, t->poll_ns ? DAEMON_COMMAND_SPIN_MAX_NS : 0);
   pthread_mutex_init(&t->mutex, NULL);
   pthread_cond_init(&t->cond, NULL);
   pthread_cond_init(&t->retired, NULL);
   util_list_init(&t->queues);
   util_list_init(&t->pools);
   device->dtrack = t;
   /* from the start: it makes the fences ahead (else at the first
    * submission) */
   t->started = pthread_create(&t->thread, NULL, tracker_thread, t) == 0;
   return t;
}

void
gpud_queue_track_add(struct gpud_context *ctx, struct gpud_object *queue)
{
   struct gpud_object *device = queue->device;
   struct gpud_device_track *t = device ? device_track(ctx, device) : NULL;
   if (!t)
      return;
   struct gpud_queue_track *q = calloc(1, sizeof(*q));
   if (!q)
      return;
   q->queue = (VkQueue)(uintptr_t)queue->handle;
   q->family = queue->queue_family;
   q->ring = calloc(TRACK_FIRST_RING, sizeof(*q->ring));
   if (!q->ring) {
      free(q);
      return;
   }
   q->cap = TRACK_FIRST_RING;
   for (unsigned i = 0; ctx->status && i < DAEMON_STATUS_QUEUES; i++) {
      struct daemon_status_queue *slot = &ctx->status->queues[i];
      if (atomic_load_explicit(&slot->device, memory_order_relaxed))
         continue;
      atomic_store_explicit(&slot->family, queue->queue_family, memory_order_relaxed);
      atomic_store_explicit(&slot->index, queue->queue_index, memory_order_relaxed);
      q->slot = slot;
      gpud_track_publish(q);
      atomic_store_explicit(&slot->device, device->id, memory_order_release);
      break;
   }
   pthread_mutex_lock(&t->mutex);
   util_list_add_tail(&t->queues, &q->link);
   pthread_mutex_unlock(&t->mutex);
   queue->track = q;
}

/* A fence for the next submission on q, or VK_NULL_HANDLE when it goes
 * untracked; the events it changes are pending on the page from now (or,
 * untracked, asked about).  timed: a tracked one gets a timing slot where
 * there is one (*ret_timing, -1: none, TIMING_ESTIMATED: its time estimated)
 * and its command buffers. */
VkFence
gpud_track_begin(struct gpud_device_track *t, struct gpud_queue_track *q, struct track_gather *g,
                 bool timed, int *ret_timing, VkCommandBuffer *ret_begin, VkCommandBuffer *ret_end)
{
   *ret_timing = -1;
   VkFence fence = VK_NULL_HANDLE;
   pthread_mutex_lock(&t->mutex);
   if (q->count == q->cap && q->cap < TRACK_MAX_PENDING) {
      /* a bigger ring, the entries in order from its start */
      struct track_entry *ring = calloc(q->cap * 2, sizeof(*ring));
      if (ring) {
         for (unsigned i = 0; i < q->count; i++)
            ring[i] = q->ring[(q->head + i) % q->cap];
         free(q->ring);
         q->ring = ring;
         q->head = 0;
         q->cap *= 2;
      }
   }
   if (!t->lost && q->count < q->cap) {
      if (t->n_free) {
         fence = t->free_fences[--t->n_free];
      } else {
         const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
         uint64_t began = util_now_ns();
         if (t->disp->CreateFence(t->dev, &info, NULL, &fence) != VK_SUCCESS)
            fence = VK_NULL_HANDLE;
         struct gpud_profile *prof = t->ctx->profile;
         if (prof) {
            prof->track_fences_made++;
            prof->track_fences_ns += util_now_ns() - began;
         }
      }
   }
   if (fence && timed) {
      if (!q->timing_tried) {
         q->timing_tried = true;
         q->timing = gpud_timing_create(t->disp,
                                        (VkPhysicalDevice)(uintptr_t)t->device->physical_device,
                                        t->dev, q->family);
      }
      /* a short one among the others of its kind is estimated */
      const struct track_expect *x = expect_slot(q, g->key);
      bool long_one = g->key && x->key == g->key && x->ns >= TIMING_ALWAYS_NS;
      if (q->timing && q->timing_ratio_known && !long_one &&
          ++q->untimed_run < TIMING_EVERY) {
         *ret_timing = TIMING_ESTIMATED;
      } else {
         q->untimed_run = 0;
         *ret_timing = gpud_timing_take(q->timing, ret_begin, ret_end);
      }
   }
   if (gpud_track_watched_submitted(t, g->events, g->n_events, g->pools, g->n_pools,
                         fence != VK_NULL_HANDLE))
      gpud_completion_wake(t->page);
   if (!fence) {
      /* asked about: nothing to read when it completes */
      free(g->events);
      free(g->pools);
      g->events = NULL;
      g->n_events = 0;
      g->pools = NULL;
      g->n_pools = 0;
   }
   pthread_mutex_unlock(&t->mutex);
   return fence;
}

/* The submission went to the host (submitted), with fence when that is not
 * VK_NULL_HANDLE (then fence_used says whether the host took it); what it
 * changes on the page (g) goes with its entry or is asked about. */
void
gpud_track_end(struct gpud_device_track *t, struct gpud_queue_track *q, VkFence fence,
               bool submitted, bool fence_used, const struct gpud_object *app_fence,
               struct track_gather *g, int timing, uint64_t began_ns, bool counted)
{
   pthread_mutex_lock(&t->mutex);
   uint64_t now = util_now_ns();
   if (submitted) {
      q->submitted++;
      if (!q->busy_since_ns)
         q->busy_since_ns = now;
   }
   bool tracked_app = app_fence && app_fence->fence_tracked;
   bool wrote = false;
   if (fence && fence_used) {
      q->ring[(q->head + q->count) % q->cap] = (struct track_entry){
         .fence = fence,
         .seq = q->submitted,
         .slot = tracked_app ? (int32_t)app_fence->fence_slot : -1,
         .owner = tracked_app ? app_fence->id : 0,
         .value = tracked_app ? gpud_fence_value(app_fence->fence_generation, 1) : 0,
         .signals = g->signals,
         .n_signals = g->n_signals,
         .events = g->events,
         .n_events = g->n_events,
         .pools = g->pools,
         .n_pools = g->n_pools,
         .timing = timing,
         .submitted_ns = began_ns,
         .key = g->key,
      };
      timing = -1;
      *g = (struct track_gather){0};
      tracked_app = false;
      q->count++;
      t->unpublished++;
      t->processed += counted;
      atomic_fetch_add(&t->submissions, 1);
      if (!t->started)
         t->started = pthread_create(&t->thread, NULL, tracker_thread, t) == 0;
      if (!t->started) {
         /* nothing will watch it: the host driver tells (the fence stays
          * in the ring, in flight) */
         struct track_entry *e = &q->ring[(q->head + q->count - 1) % q->cap];
         /* all of them, whatever the first says */
         wrote |= gpud_track_page_write(t, e->slot, e->owner, GPUD_FENCE_ASK);
         wrote |= entry_signals(t, e, true);
         wrote |= gpud_track_watched_submitted(t, e->events, e->n_events, e->pools, e->n_pools, false);
         e->slot = -1;
         uncharge_all(t); /* (this one, and any before) */
      }
      pthread_cond_signal(&t->cond);
   } else {
      if (fence && t->n_free < t->cap_free)
         t->free_fences[t->n_free++] = fence;
      else if (fence)
         t->disp->DestroyFence(t->dev, fence, NULL);
      /* a submission that failed left nothing in flight; one the host has
       * without gpud's fence leaves the page unable to say when it ends */
      if (submitted)
         t->unsettled = true;
      else
         t->processed += counted;
      gpud_track_settle(t);
   }
   /* a slot no entry took is free again, unless the host has its command
    * buffers (the submit went, gpud's fence after it did not): then it is
    * given up, not reused while they may run */
   if (!submitted)
      gpud_timing_drop(q->timing, timing);
   /* untracked: the host driver's fence, semaphores and events tell */
   wrote |= tracked_app && submitted &&
            gpud_track_page_write(t, (int32_t)app_fence->fence_slot, app_fence->id, GPUD_FENCE_ASK);
   /* (a submit that failed signals nothing: its device is lost) */
   struct track_entry untracked = {.signals = g->signals,
                                   .n_signals = submitted ? g->n_signals : 0};
   wrote |= entry_signals(t, &untracked, true);
   wrote |= gpud_track_watched_submitted(t, g->events, g->n_events, g->pools, g->n_pools, false);
   free(g->events);
   free(g->pools);
   *g = (struct track_gather){0};
   if (wrote)
      gpud_completion_wake(t->page);
   gpud_track_publish(q);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_track_device_end(struct gpud_context *ctx, struct gpud_object *device)
{
   (void)ctx;
   struct gpud_device_track *t = device->dtrack;
   if (!t)
      return;
   for (struct gpud_device_track **p = &ctx->own_devices; *p; p = &(*p)->own_next) {
      if (*p == t) {
         *p = t->own_next;
         break;
      }
   }
   pthread_mutex_lock(&t->mutex);
   t->stop = true;
   pthread_cond_signal(&t->cond);
   pthread_mutex_unlock(&t->mutex);
   if (t->started)
      pthread_join(t->thread, NULL);
   /* the device is idle (or lost): every fence may go */
   struct gpud_queue_track *q;
   util_list_for_each_safe(q, &t->queues, link) {
      for (unsigned i = 0; i < q->count; i++) {
         struct track_entry *e = &q->ring[(q->head + i) % q->cap];
         if (!e->charged)
            gpud_sched_dropped(ctx->sched); /* (never seen complete) */
         t->disp->DestroyFence(t->dev, e->fence, NULL);
         free(e->signals);
         free(e->events);
         free(e->pools);
      }
      if (q->slot)
         atomic_store_explicit(&q->slot->device, 0, memory_order_release);
      gpud_timing_destroy(q->timing);
      free(q->ring);
      free(q);
   }
   for (unsigned i = 0; i < t->n_free; i++)
      t->disp->DestroyFence(t->dev, t->free_fences[i], NULL);
   if (t->page) {
      page_lost(t); /* nothing signals any more: waiters stop */
      gpud_hold_unwatch_page(t->ctx, t->page);
      munmap(t->page, GPUD_COMPLETION_SIZE);
   }
   util_fd_close(&t->page_fd);
   free(t->owner);
   free(t->sem_owner);
   free(t->events);
   struct gpud_query_pool_page *p;
   util_list_for_each_safe(p, &t->pools, link) {
      munmap(p->map, p->size);
      free(p);
   }
   struct gpud_object *obj;
   util_list_for_each(obj, &ctx->object_list, link) {
      if (obj->type == VK_OBJECT_TYPE_QUEUE && obj->device == device)
         obj->track = NULL;
      if (obj->type == VK_OBJECT_TYPE_QUERY_POOL && obj->device == device)
         obj->query_page = NULL;
   }
   pthread_mutex_destroy(&t->mutex);
   pthread_cond_destroy(&t->cond);
   pthread_cond_destroy(&t->retired);
   free(t->free_fences);
   free(t);
   device->dtrack = NULL;
}

/* ---- the completion page ------------------------------------------------ */

void
gpud_exec_vkGetCompletionPageGPUD(struct gpud_call *call,
                                  struct wire_args_vkGetCompletionPageGPUD *a)
{
   *a->pFd = -1;
   a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
   struct gpud_device_track *t = call->device ? device_track(call->ctx, call->device) : NULL;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (!t->page) {
      int fd = -1;
      void *map = MAP_FAILED;
      uint64_t *owner = calloc(GPUD_COMPLETION_FENCE_SLOTS, sizeof(*owner));
      uint64_t *sem_owner = calloc(GPUD_COMPLETION_SEMAPHORE_SLOTS, sizeof(*sem_owner));
      struct event_slot *events = calloc(GPUD_COMPLETION_EVENT_SLOTS, sizeof(*events));
      if (owner && sem_owner && events &&
          util_memfd_create("gpud-completion", GPUD_COMPLETION_SIZE, &fd) == 0)
         map = mmap(NULL, GPUD_COMPLETION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) {
         util_fd_close(&fd);
         free(owner);
         free(sem_owner);
         free(events);
      } else {
         struct gpud_completion_header *h = map;
         h->magic = GPUD_COMPLETION_MAGIC;
         h->fence_slots = GPUD_COMPLETION_FENCE_SLOTS;
         h->semaphore_slots = GPUD_COMPLETION_SEMAPHORE_SLOTS;
         h->event_slots = GPUD_COMPLETION_EVENT_SLOTS;
         atomic_store(&h->lost, atomic_load(&call->device->lost) ? 1 : 0);
         gpud_hold_watch_page(call->ctx, h);
         t->page = h;
         t->page_fd = fd;
         t->owner = owner;
         t->sem_owner = sem_owner;
         t->events = events;
      }
   }
   if (t->page) {
      *a->pFd = fcntl(t->page_fd, F_DUPFD_CLOEXEC, 3);
      a->ret = *a->pFd >= 0 ? VK_SUCCESS : VK_ERROR_TOO_MANY_OBJECTS;
   }
   pthread_mutex_unlock(&t->mutex);
}

/* The page's word on a fence or a semaphore handed back to the host (used
 * by the submissions here and by gpud_fence.c and gpud_semaphore.c). */

void
gpud_queue_fence_settle(struct gpud_object *fence)
{
   VkQueue queue = fence ? fence->fence_owed_queue : VK_NULL_HANDLE;
   struct gpud_device_track *t = fence && fence->device ? fence->device->dtrack : NULL;
   if (!queue || !t)
      return;
   fence->fence_owed_queue = VK_NULL_HANDLE;
   /* after everything before it on that queue, the submission it was
    * owed for included (or it will be asked about in vain) */
   VkResult r = t->disp->QueueSubmit(queue, 0, NULL, (VkFence)(uintptr_t)fence->handle);
   if (r != VK_SUCCESS)
      gpud_context_log(t->ctx, UTIL_LOG_WARNING, "a fence's own signal could not be submitted (%d)",
                       r);
}

void
gpud_queue_fence_ask(struct gpud_object *fence)
{
   struct gpud_device_track *t = fence->device ? fence->device->dtrack : NULL;
   gpud_queue_fence_settle(fence);
   if (!fence->fence_tracked || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (gpud_track_page_write(t, (int32_t)fence->fence_slot, fence->id, GPUD_FENCE_ASK))
      gpud_completion_wake(t->page);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_semaphore_gone(struct gpud_object *sem, bool ask)
{
   struct gpud_device_track *t = sem->device ? sem->device->dtrack : NULL;
   if (!sem->semaphore_tracked || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (t->sem_owner && t->sem_owner[sem->semaphore_slot] == sem->id) {
      if (ask) {
         atomic_store(&gpud_completion_semaphores(t->page)[sem->semaphore_slot].value,
                      GPUD_SEMAPHORE_ASK);
         gpud_completion_wake(t->page);
      }
      t->sem_owner[sem->semaphore_slot] = 0;
   }
   sem->semaphore_tracked = false;
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_publish(struct gpud_object *device)
{
   struct gpud_device_track *t = device ? device->dtrack : NULL;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   publish_done(t);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_queue_device_lost(struct gpud_object *device)
{
   struct gpud_device_track *t = device->dtrack;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   page_lost(t);
   pthread_mutex_unlock(&t->mutex);
}
