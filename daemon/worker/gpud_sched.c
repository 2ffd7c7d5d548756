/* SPDX-License-Identifier: MIT */
/*
 * A worker's side of the fair share (daemon/common/daemon_sched.h): before each of
 * its client's submissions goes to the host, the worker decides from the
 * schedule page whether it is the client's turn, and holds the submission
 * until it is; as each completes it charges the client its GPU time.
 *
 * Its turn, when other clients have work too: its virtual time (weighted
 * GPU time, the submission in flight counted as it runs) is at most a slice
 * ahead of the furthest behind of theirs, and it has nothing in flight
 * while another waits (so the device queue stays short and an interactive
 * client's frame waits behind at most one submission of a greedy one).
 * A client with a quota also needs GPU time left in its bucket (and its
 * user's), which refills at its share of wall time.  A client alone, and
 * clients within their shares, go at once: the common path is an atomic
 * load of the number of clients.
 */
#include "gpud_sched_worker.h"
#include "daemon_sched.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "util_futex.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "util_time.h"

/* A held submission looks again this often (and whenever a client's work
 * completes or it goes idle). */
#define RECHECK_NS (2ull * 1000 * 1000)
#define DEFAULT_SLICE_NS (2ull * 1000 * 1000)
/* Another client that submitted this recently shares the GPU: one
 * submission in flight at a time. */
#define LATELY_NS (100ull * 1000 * 1000)
/* The longest a submission waits for one of the client's own in flight to
 * complete: the one in flight may wait (on the GPU) for a semaphore that a
 * later submission, or the host, signals only once the one held goes. */
#define MAX_IN_FLIGHT_HOLD_NS (100ull * 1000 * 1000)

struct gpud_sched {
   struct daemon_sched_page *page;
   struct daemon_sched_slot *me;
   unsigned slot;
   pthread_mutex_t mutex; /* the counts below */
   unsigned in_flight;    /* submissions at the host, not yet complete */
   unsigned waiting;      /* submissions held back */
   bool active;
};

static void
wake(struct daemon_sched_page *page)
{
   atomic_fetch_add(&page->epoch, 1);
   if (atomic_load(&page->waiters))
      util_futex_wake(&page->epoch);
}

/* How far ahead of the furthest behind a client may go. */
static uint64_t
page_slice(struct daemon_sched_page *page)
{
   uint64_t slice = (uint64_t)atomic_load(&page->slice_us) * 1000;
   return slice ? slice : DEFAULT_SLICE_NS;
}

/* Whether a client that last submitted then did so lately (0: never). */
static bool
lately(uint64_t last, uint64_t now)
{
   return last && now > last && now - last < LATELY_NS;
}

/* The user entry of a slot with a user quota; NULL: none. */
static struct daemon_sched_user *
quota_user(struct daemon_sched_page *page, const struct daemon_sched_slot *slot)
{
   uint32_t user = atomic_load(&slot->user);
   if (!user || user > DAEMON_SCHED_USERS || !atomic_load(&page->users[user - 1].quota_ppm))
      return NULL;
   return &page->users[user - 1];
}

/* With the mutex held: the client no longer active on its page (nor waiting
 * there), whoever waits on it told; s->active is the caller's. */
static void
leave_page(struct gpud_sched *s)
{
   if (!s->page || !s->active)
      return;
   atomic_fetch_and(&s->me->state,
                    ~(DAEMON_SCHED_ACTIVE | DAEMON_SCHED_WAITING | DAEMON_SCHED_QUOTA_HELD));
   atomic_fetch_sub(&s->page->active, 1);
   wake(s->page);
}

struct gpud_sched *
gpud_sched_new(void)
{
   struct gpud_sched *s = calloc(1, sizeof(*s));
   if (s)
      pthread_mutex_init(&s->mutex, NULL);
   return s;
}

bool
gpud_sched_bind(struct gpud_sched *s, int fd, uint32_t slot)
{
   if (!s || slot >= DAEMON_SCHED_SLOTS || util_memfd_check(fd, DAEMON_SCHED_SIZE) < 0)
      return false; /* (a page that could shrink under the others is none) */
   void *map = mmap(NULL, DAEMON_SCHED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED)
      return false;
   struct daemon_sched_page *page = map;
   if (atomic_load(&page->magic) != DAEMON_SCHED_MAGIC ||
       atomic_load(&page->layout) != DAEMON_SCHED_LAYOUT) {
      munmap(map, DAEMON_SCHED_SIZE);
      return false;
   }
   pthread_mutex_lock(&s->mutex);
   /* The page before is left as it is mapped (a thread of this worker may
    * sleep on it: a futex of unmapped memory would fail at once), with
    * this client no longer active on it. */
   leave_page(s);
   s->page = page;
   s->slot = slot;
   s->me = &page->slots[slot];
   if (s->active) {
      /* (a submission held sets its bits here when it looks again) */
      atomic_store(&s->me->busy_since_ns, s->in_flight ? util_now_ns() : 0);
      atomic_fetch_or(&s->me->state, DAEMON_SCHED_ACTIVE);
      atomic_fetch_add(&page->active, 1);
   }
   pthread_mutex_unlock(&s->mutex);
   return true;
}

void
gpud_sched_unbind(struct gpud_sched *s)
{
   if (!s)
      return;
   pthread_mutex_lock(&s->mutex);
   leave_page(s);
   /* (left mapped, as by gpud_sched_bind) */
   s->page = NULL;
   s->me = NULL;
   s->active = false;
   pthread_mutex_unlock(&s->mutex);
}

int
gpud_sched_nice(struct gpud_sched *s)
{
   if (!s)
      return 0;
   pthread_mutex_lock(&s->mutex);
   int nice = s->me ? atomic_load(&s->me->nice) : 0;
   pthread_mutex_unlock(&s->mutex);
   return nice;
}

void
gpud_sched_free(struct gpud_sched *s)
{
   if (!s)
      return;
   leave_page(s);
   if (s->page)
      munmap(s->page, DAEMON_SCHED_SIZE);
   pthread_mutex_destroy(&s->mutex);
   free(s);
}

/* A slot's virtual time now: what its completed submissions took, and the
 * one in flight as long as it has run (a long submission must not keep the
 * others waiting for its end to be charged). */
static uint64_t
effective_vtime(const struct daemon_sched_slot *slot, uint64_t now)
{
   uint64_t v = atomic_load_explicit(&slot->vtime, memory_order_relaxed);
   uint64_t since = atomic_load_explicit(&slot->busy_since_ns, memory_order_relaxed);
   uint32_t weight = atomic_load_explicit(&slot->weight, memory_order_relaxed);
   if (since && now > since && weight)
      v += (now - since) * DAEMON_SCHED_WEIGHT_0 / weight;
   return v;
}

/* A token bucket of a share (quota_ppm of wall time) up to bucket_ms of it:
 * refilled to now; the tokens left (negative: owed). */
static int64_t
refill(_Atomic int64_t *tokens, _Atomic uint64_t *refill_ns, uint32_t quota_ppm,
       uint32_t bucket_ms, uint64_t now)
{
   int64_t cap = (int64_t)bucket_ms * 1000000 * quota_ppm / 1000000;
   uint64_t last = atomic_load(refill_ns);
   if (!last) {
      /* a new bucket starts full */
      if (atomic_compare_exchange_strong(refill_ns, &last, now))
         atomic_store(tokens, cap);
      return atomic_load(tokens);
   }
   if (now <= last)
      return atomic_load(tokens);
   /* (a bucket full after bucket_ms: longer adds nothing, and keeps the
    * product below from overflowing) */
   uint64_t elapsed = UTIL_MIN(now - last, (uint64_t)bucket_ms * 1000000 + 1000000);
   int64_t add = (int64_t)(elapsed * quota_ppm / 1000000);
   /* the clock moves on only by what it added: slivers of time too short
    * to add a nanosecond add up */
   if (add > 0 && atomic_compare_exchange_strong(refill_ns, &last, now)) {
      int64_t t = atomic_fetch_add(tokens, add) + add;
      if (t > cap)
         atomic_fetch_sub(tokens, t - cap);
   }
   return atomic_load(tokens);
}

/* How long until the client's quota (and its user's) lets it submit; 0: now.
 * A client under a quota has one submission in flight at a time (for up to
 * MAX_IN_FLIGHT_HOLD_NS): what it takes is charged when it completes, so
 * two at once could overdraw the bucket by two. */
static uint64_t
quota_wait_ns(struct gpud_sched *s, uint64_t now, bool hold_in_flight)
{
   struct daemon_sched_page *page = s->page;
   uint32_t bucket_ms = atomic_load(&page->bucket_ms);
   uint64_t wait = 0;
   uint32_t q = atomic_load(&s->me->quota_ppm);
   struct daemon_sched_user *u = quota_user(page, s->me);
   if ((q || u) && s->in_flight && hold_in_flight)
      return RECHECK_NS; /* (its completion wakes it) */
   if (q) {
      int64_t t = refill(&s->me->tokens_ns, &s->me->refill_ns, q, bucket_ms, now);
      if (t <= 0)
         wait = (uint64_t)(-t + 1) * 1000000 / q;
   }
   uint32_t uq = u ? atomic_load(&u->quota_ppm) : 0;
   if (uq) {
      int64_t t = refill(&u->tokens_ns, &u->refill_ns, uq, bucket_ms, now);
      if (t <= 0)
         wait = UTIL_MAX(wait, (uint64_t)(-t + 1) * 1000000 / uq);
   }
   return wait;
}

/* Whether another client should go first: the client is more than a slice
 * ahead of another with work, or has work in flight (and may still hold
 * for it) while another no further ahead waits or submitted lately (its
 * next frame would queue behind this client's second submission: a client
 * that shares the GPU has one in flight).  A client held by its quota is
 * not competing: it is no one's reason to wait. */
static bool
others_first(struct gpud_sched *s, uint64_t now, bool hold_in_flight)
{
   struct daemon_sched_page *page = s->page;
   if (atomic_load_explicit(&page->clients, memory_order_relaxed) <= 1)
      return false; /* alone */
   uint64_t slice = page_slice(page);
   uint64_t mine = effective_vtime(s->me, now);
   uint32_t n = UTIL_MIN(atomic_load(&page->n_slots), DAEMON_SCHED_SLOTS);
   bool others = false, another_waits = false, another_lately = false;
   uint64_t least = UINT64_MAX;
   for (uint32_t i = 0; i < n; i++) {
      const struct daemon_sched_slot *o = &page->slots[i];
      if (i == s->slot || !atomic_load_explicit(&o->client_id, memory_order_relaxed))
         continue;
      uint32_t state = atomic_load_explicit(&o->state, memory_order_relaxed);
      if (state & DAEMON_SCHED_QUOTA_HELD)
         continue;
      uint64_t theirs = effective_vtime(o, now);
      if (theirs <= mine + slice)
         another_lately |=
            lately(atomic_load_explicit(&o->submitted_ns, memory_order_relaxed), now);
      if (!(state & DAEMON_SCHED_ACTIVE))
         continue;
      others = true;
      another_waits |= (state & DAEMON_SCHED_WAITING) && theirs <= mine + slice;
      least = UTIL_MIN(least, theirs);
   }
   if (others && mine > least + slice)
      return true;
   return (another_waits || another_lately) && s->in_flight > 0 && hold_in_flight;
}

/* With the mutex held: the client has work from now on.  It comes back no
 * further behind the furthest behind of the others that have work or had
 * some lately than a slice: idle time earns no credit, and a new client,
 * at 0, does not take the GPU until it caught up.  A client idle for a
 * while comes back no further ahead than a slice either: what it took long
 * ago is no debt that keeps it waiting for clients that came since (one
 * that waits for each submission before the next is idle between them,
 * and keeps what it owes). */
static void
become_active(struct gpud_sched *s, uint64_t now)
{
   if (s->active)
      return;
   struct daemon_sched_page *page = s->page;
   uint64_t slice = page_slice(page);
   uint64_t least = UINT64_MAX;
   uint32_t n = UTIL_MIN(atomic_load(&page->n_slots), DAEMON_SCHED_SLOTS);
   for (uint32_t i = 0; i < n; i++) {
      const struct daemon_sched_slot *o = &page->slots[i];
      if (i == s->slot || !atomic_load(&o->client_id))
         continue;
      uint32_t state = atomic_load(&o->state);
      if ((state & DAEMON_SCHED_ACTIVE || lately(atomic_load(&o->submitted_ns), now)) &&
          !(state & DAEMON_SCHED_QUOTA_HELD))
         least = UTIL_MIN(least, effective_vtime(o, now));
   }
   uint64_t v = atomic_load(&s->me->vtime);
   bool was_idle = !lately(atomic_load(&s->me->submitted_ns), now);
   if (least != UINT64_MAX) {
      if (least > slice && v < least - slice)
         atomic_store(&s->me->vtime, least - slice);
      else if (was_idle && least <= UINT64_MAX - slice && v > least + slice)
         atomic_store(&s->me->vtime, least + slice);
   }
   atomic_fetch_or(&s->me->state, DAEMON_SCHED_ACTIVE);
   atomic_fetch_add(&page->active, 1);
   s->active = true;
}

/* With the mutex held: idle once nothing is in flight or held. */
static void
maybe_idle(struct gpud_sched *s)
{
   if (!s->active || s->in_flight || s->waiting)
      return;
   leave_page(s);
   s->active = false;
}

bool
gpud_sched_timed(struct gpud_sched *s)
{
   if (!s)
      return true;
   pthread_mutex_lock(&s->mutex);
   bool timed = !s->page || atomic_load_explicit(&s->page->clients, memory_order_relaxed) > 1 ||
                atomic_load_explicit(&s->me->quota_ppm, memory_order_relaxed) ||
                quota_user(s->page, s->me);
   pthread_mutex_unlock(&s->mutex);
   return timed;
}

void
gpud_sched_admit(struct gpud_sched *s)
{
   if (!s)
      return;
   uint64_t now = util_now_ns();
   pthread_mutex_lock(&s->mutex);
   if (!s->page) {
      s->in_flight++; /* counted all the same: a page may come (a restart) */
      pthread_mutex_unlock(&s->mutex);
      return;
   }
   uint64_t held_since = 0;
   uint32_t held = 0; /* the state bits it set ... */
   struct daemon_sched_page *held_page = NULL; /* ... there */
   for (;;) {
      /* (the page may change while it waits: a restart; a server without
       * one leaves the client unscheduled) */
      struct daemon_sched_page *page = s->page;
      if (!page)
         break;
      become_active(s, util_now_ns()); /* (again on a new page) */
      if (page != held_page)
         held = 0; /* (gpud_sched_bind cleared them there) */
      uint32_t epoch = atomic_load(&page->epoch);
      now = util_now_ns();
      bool hold_in_flight = !held_since || now - held_since < MAX_IN_FLIGHT_HOLD_NS;
      uint64_t quota = quota_wait_ns(s, now, hold_in_flight);
      bool others = !quota && others_first(s, now, hold_in_flight);
      if (!quota && !others)
         break;
      if (!held_since) {
         held_since = now;
         s->waiting++;
      }
      /* held by its quota, it does not compete; held for others, it does */
      uint32_t want = quota ? DAEMON_SCHED_QUOTA_HELD : DAEMON_SCHED_WAITING;
      if (want != held) {
         if (held)
            atomic_fetch_and(&s->me->state, ~held);
         atomic_fetch_or(&s->me->state, want);
         held = want;
         held_page = page;
         wake(page); /* (whether it competes changed) */
      }
      pthread_mutex_unlock(&s->mutex);
      atomic_fetch_add(&page->waiters, 1);
      uint64_t timeout = quota ? UTIL_MIN(quota, RECHECK_NS) : RECHECK_NS;
      util_futex_wait(&page->epoch, epoch, timeout);
      atomic_fetch_sub(&page->waiters, 1);
      pthread_mutex_lock(&s->mutex);
   }
   if (held_since) {
      s->waiting--;
      now = util_now_ns();
      if (held && held_page == s->page)
         atomic_fetch_and(&s->me->state, ~held);
      if (s->page)
         atomic_fetch_add(&s->me->waited_ns, now - held_since);
   }
   if (!s->page) {
      s->in_flight++;
      pthread_mutex_unlock(&s->mutex);
      return;
   }
   if (!s->in_flight++)
      atomic_store(&s->me->busy_since_ns, now);
   atomic_store_explicit(&s->me->submitted_ns, now, memory_order_relaxed);
   pthread_mutex_unlock(&s->mutex);
}

void
gpud_sched_dropped(struct gpud_sched *s)
{
   if (!s)
      return;
   pthread_mutex_lock(&s->mutex);
   if (s->in_flight && !--s->in_flight && s->page)
      atomic_store(&s->me->busy_since_ns, 0);
   maybe_idle(s);
   pthread_mutex_unlock(&s->mutex);
}

void
gpud_sched_done(struct gpud_sched *s, uint64_t gpu_ns)
{
   if (!s)
      return;
   uint64_t now = util_now_ns();
   pthread_mutex_lock(&s->mutex);
   if (!s->page) {
      if (s->in_flight)
         s->in_flight--;
      pthread_mutex_unlock(&s->mutex);
      return;
   }
   uint32_t weight = atomic_load(&s->me->weight);
   if (!weight)
      weight = DAEMON_SCHED_WEIGHT_0;
   atomic_fetch_add(&s->me->vtime, gpu_ns * DAEMON_SCHED_WEIGHT_0 / weight);
   atomic_fetch_add(&s->me->gpu_ns, gpu_ns);
   if (atomic_load(&s->me->quota_ppm))
      atomic_fetch_sub(&s->me->tokens_ns, (int64_t)gpu_ns);
   struct daemon_sched_user *u = quota_user(s->page, s->me);
   if (u)
      atomic_fetch_sub(&u->tokens_ns, (int64_t)gpu_ns);
   if (s->in_flight && !--s->in_flight)
      atomic_store(&s->me->busy_since_ns, 0);
   else
      atomic_store(&s->me->busy_since_ns, now); /* the next one runs from now */
   maybe_idle(s);
   wake(s->page);
   pthread_mutex_unlock(&s->mutex);
}
