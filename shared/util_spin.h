/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Polling a word that another thread or process will change (a ring's head,
 * the completion page, a counter): between two looks, machines of few CPUs
 * yield the CPU (the peer the poller waits for may need this one), others
 * spin with the processor's pause hint, since a yield is a system call that
 * alone costs more than the answer takes to come.
 */

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

/* Machines with fewer CPUs than this yield between looks. */
#ifndef UTIL_SPIN_MIN_CPUS
#define UTIL_SPIN_MIN_CPUS 4
#endif

/* Whether polls yield the CPU here (the CPU count, read once). */
bool util_spin_yields(void);

/* One pause between two looks. */
static inline void
util_spin_pause(bool yield)
{
   if (yield) {
      sched_yield();
      return;
   }
#if defined(__x86_64__) || defined(__i386__)
   __builtin_ia32_pause();
#elif defined(__aarch64__)
   __asm__ volatile("yield");
#endif
}

/*
 * An adaptive poll window, for a thread that waits for a peer running in a
 * loop (the application's frames, the worker's submissions).  With a fixed
 * window a loop settles on one of two speeds: while its gaps fit in the
 * window the waiter sees each arrival polling, but once a gap outgrows it
 * the waiter sleeps, its wake-up lengthens the peer's loop and so the next
 * gap, and it sleeps every time after.  The window follows the gaps that
 * ended in an arrival: twice the longest of the last 10-20 ms, at least
 * base_ns and at most max_ns; a gap longer than max_ns (a peer that went
 * idle rather than one looping) returns it to base_ns.  Where polls yield
 * (util_spin_yields) it stays at base_ns, the peer needing the CPU, unless
 * the window was made with util_spin_window_init_yielding: a waiter whose
 * yields give its CPU to the peer it waits for.  One thread uses a window.
 */
struct util_spin_window {
   uint64_t base_ns;
   uint64_t max_ns;
   bool adapts;           /* not where polls yield, but for _init_yielding */
   uint64_t ns;           /* poll this long now */
   uint64_t peak_ns[2];   /* the longest gap of this epoch, of the one before */
   uint64_t epoch_end_ns; /* CLOCK_MONOTONIC */
};

void util_spin_window_init(struct util_spin_window *w, uint64_t base_ns, uint64_t max_ns);

/* The same, but where polls yield it adapts too, up to yield_max_ns. */
void util_spin_window_init_yielding(struct util_spin_window *w, uint64_t base_ns, uint64_t max_ns,
                                    uint64_t yield_max_ns);

/* A wait that polled or slept ended at now_ns with an arrival, waited_ns
 * after it began. */
void util_spin_window_note(struct util_spin_window *w, uint64_t waited_ns, uint64_t now_ns);

/* How long a wait for an object polls, of the thread's window (window_ns)
 * and how long the object's last wait took (last_ns, 0: not known): twice
 * that where it took at most half of max_ns and that is longer, else the
 * window.  A thread that waits in turn for long jobs (whose waits return
 * its window to the base) and for short round trips has the short ones
 * answered polling (the ICD's fences). */
static inline uint64_t
util_spin_object_ns(uint64_t window_ns, uint64_t last_ns, uint64_t max_ns)
{
   if (!last_ns || last_ns > max_ns / 2 || 2 * last_ns <= window_ns)
      return window_ns;
   return 2 * last_ns;
}

/* Sleeping in short slices at first keeps the CPU in a shallow idle state
 * (the kernel's idle governor looks at the next timer): a wait that ends
 * soon is woken without the tens to hundreds of microseconds a deep one
 * takes to leave, while a long wait soon sleeps in long slices (a quarter
 * of what it waited so far, at least UTIL_SLEEP_SLICE_MIN_NS, at most
 * max_ns, and never past the left_ns the wait has left).  Not where polls
 * yield: there every wake-up takes a CPU another thread needs. */
#define UTIL_SLEEP_SLICE_MIN_NS (50ull * 1000)

static inline uint64_t
util_sleep_slice(uint64_t waited_ns, uint64_t max_ns, uint64_t left_ns)
{
   uint64_t slice = max_ns;
   if (!util_spin_yields()) {
      slice = waited_ns / 4 > UTIL_SLEEP_SLICE_MIN_NS ? waited_ns / 4 : UTIL_SLEEP_SLICE_MIN_NS;
      if (slice > max_ns)
         slice = max_ns;
   }
   return slice < left_ns ? slice : left_ns;
}
