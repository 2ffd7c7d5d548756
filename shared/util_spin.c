/* SPDX-License-Identifier: MIT */
#include "util_spin.h"

#include <pthread.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool yields;

static void
count_cpus(void)
{
   long n = sysconf(_SC_NPROCESSORS_ONLN);
   yields = n > 0 && n < UTIL_SPIN_MIN_CPUS;
}

bool
util_spin_yields(void)
{
   pthread_once(&once, count_cpus);
   return yields;
}
