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

/* Machines with fewer CPUs than this yield between looks. */
#define UTIL_SPIN_MIN_CPUS 4

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
