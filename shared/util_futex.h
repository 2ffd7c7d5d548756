/* SPDX-License-Identifier: MIT */
#pragma once

/* Futexes on words in shared memory (the rings, the completion page): not
 * FUTEX_PRIVATE, so a waiter in one process is woken from another. */

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word == value, for at most ns nanoseconds. */
static inline void
util_futex_wait(_Atomic uint32_t *word, uint32_t value, uint64_t ns)
{
   struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                         .tv_nsec = (long)(ns % 1000000000ull)};
   syscall(SYS_futex, word, FUTEX_WAIT, value, &ts, NULL, 0);
}

/* Wakes every waiter on word. */
static inline void
util_futex_wake(_Atomic uint32_t *word)
{
   syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
