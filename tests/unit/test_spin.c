/* SPDX-License-Identifier: MIT */
/* util_spin: the polling windows that follow the waits seen. */
#include "unit_test.h"
#include "util_spin.h"

#define US 1000ull
#define MS (1000ull * US)

/* Where polls yield, the window stays at its base whatever happens. */
static void
test_window_fixed(void)
{
   struct util_spin_window w;
   util_spin_window_init(&w, 50 * US, 250 * US);
   CHECK_EQ(w.adapts, !util_spin_yields());
   w.adapts = false;
   util_spin_window_note(&w, 100 * US, 1 * MS);
   CHECK_EQ(w.ns, 50 * US);

   /* no room to adapt: no window beyond the base */
   util_spin_window_init(&w, 50 * US, 10 * US);
   CHECK(!w.adapts);
   CHECK_EQ(w.max_ns, 50 * US);
}

/* A window of 50-250 us that adapts, whatever this machine's CPUs. */
static struct util_spin_window
adaptive_window(void)
{
   struct util_spin_window w;
   util_spin_window_init(&w, 50 * US, 250 * US);
   w.adapts = true;
   return w;
}

/* A loop whose gaps outgrow the base window gets polled through them. */
static void
test_window_follows_loop(void)
{
   struct util_spin_window w = adaptive_window();
   CHECK_EQ(w.ns, 50 * US);

   uint64_t now = 1 * MS;
   /* short gaps keep the base */
   util_spin_window_note(&w, 5 * US, now += 10 * US);
   CHECK_EQ(w.ns, 50 * US);
   /* a 60 us gap (one that slept): twice it from now on */
   util_spin_window_note(&w, 60 * US, now += 60 * US);
   CHECK_EQ(w.ns, 120 * US);
   /* shorter gaps in between do not shrink it within the epoch */
   for (int i = 0; i < 20; i++)
      util_spin_window_note(&w, 3 * US, now += 3 * US);
   CHECK_EQ(w.ns, 120 * US);
   /* never beyond the maximum */
   util_spin_window_note(&w, 200 * US, now += 200 * US);
   CHECK_EQ(w.ns, 250 * US);
}

/* The longest gap counts for one to two epochs (10 ms each), then the
 * window follows the gaps seen since. */
static void
test_window_forgets(void)
{
   struct util_spin_window w = adaptive_window();
   uint64_t now = 1 * MS;
   util_spin_window_note(&w, 100 * US, now);
   CHECK_EQ(w.ns, 200 * US);
   /* the next epoch still remembers it */
   now += 11 * MS;
   util_spin_window_note(&w, 40 * US, now);
   CHECK_EQ(w.ns, 200 * US);
   /* the one after does not */
   now += 11 * MS;
   util_spin_window_note(&w, 40 * US, now);
   CHECK_EQ(w.ns, 80 * US);
   /* after a long silence, the one before is gone too */
   now += 100 * MS;
   util_spin_window_note(&w, 30 * US, now);
   CHECK_EQ(w.ns, 60 * US);
}

/* A gap longer than the maximum is a peer gone idle, not a loop: back to
 * the base at once. */
static void
test_window_idle_peer(void)
{
   struct util_spin_window w = adaptive_window();
   uint64_t now = 1 * MS;
   util_spin_window_note(&w, 100 * US, now);
   CHECK_EQ(w.ns, 200 * US);
   util_spin_window_note(&w, 16 * MS, now += 16 * MS);
   CHECK_EQ(w.ns, 50 * US);
   util_spin_window_note(&w, 10 * US, now += 10 * US);
   CHECK_EQ(w.ns, 50 * US);
}

/* A window made for a waiter that yields adapts on every machine: up to
 * the yielding maximum where polls yield, up to the other where they spin. */
static void
test_window_yielding(void)
{
   struct util_spin_window w;
   util_spin_window_init_yielding(&w, 20 * US, 200 * US, 500 * US);
   const uint64_t max = util_spin_yields() ? 500 * US : 200 * US;
   CHECK(w.adapts);
   CHECK_EQ(w.max_ns, max);
   uint64_t now = 1 * MS;
   util_spin_window_note(&w, 150 * US, now);
   CHECK_EQ(w.ns, max < 300 * US ? max : 300 * US);
   /* a wait longer than the maximum: back to the base */
   util_spin_window_note(&w, 2 * MS, now += 2 * MS);
   CHECK_EQ(w.ns, 20 * US);

   /* no yielding maximum above the base: fixed where polls yield */
   util_spin_window_init_yielding(&w, 20 * US, 200 * US, 0);
   CHECK_EQ(w.adapts, !util_spin_yields());
}

/* A wait for an object whose last wait was a short round trip polls
 * through the next one, whatever the thread's window says; a long one, or
 * none known, leaves the window as it is. */
static void
test_object_wait(void)
{
   /* ggml's staged copy: 260 us last time, a window back at its base */
   CHECK_EQ(util_spin_object_ns(20 * US, 260 * US, 1 * MS), 520 * US);
   /* not known yet */
   CHECK_EQ(util_spin_object_ns(20 * US, 0, 1 * MS), 20 * US);
   /* a long job's fence: more than half the maximum */
   CHECK_EQ(util_spin_object_ns(20 * US, 600 * US, 1 * MS), 20 * US);
   CHECK_EQ(util_spin_object_ns(20 * US, 500 * US, 1 * MS), 1 * MS);
   /* a window already longer stays */
   CHECK_EQ(util_spin_object_ns(300 * US, 100 * US, 1 * MS), 300 * US);
   /* a lower maximum (GPUD_WAIT_SPIN_MAX_US=200) leaves such waits alone */
   CHECK_EQ(util_spin_object_ns(20 * US, 260 * US, 200 * US), 20 * US);
}

UNIT_MAIN(UNIT_TEST(test_window_fixed), UNIT_TEST(test_window_follows_loop),
          UNIT_TEST(test_window_forgets), UNIT_TEST(test_window_idle_peer),
          UNIT_TEST(test_window_yielding), UNIT_TEST(test_object_wait))
