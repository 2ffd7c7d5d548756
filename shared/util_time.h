/* SPDX-License-Identifier: MIT */
#pragma once

/* Clocks in nanoseconds: the monotonic clock, deadlines and sleeps. */

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t
util_now_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CLOCK_REALTIME time ns from now: the deadline pthread_cond_timedwait
 * takes on a condition variable of the default clock. */
static inline struct timespec
util_realtime_after(uint64_t ns)
{
   struct timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   ns += (uint64_t)ts.tv_nsec;
   ts.tv_sec += (time_t)(ns / 1000000000ull);
   ts.tv_nsec = (long)(ns % 1000000000ull);
   return ts;
}
