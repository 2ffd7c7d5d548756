/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A worker's status page: one page of shared memory (a sealed memfd the
 * server creates) where the worker's context publishes what it is doing, so
 * the server can show it (gpudctl) and name the command a crashed worker
 * was executing without asking the worker anything.  The server treats
 * every value as untrusted: it only displays them, after range checks.
 */

#include <stdatomic.h>
#include <stdint.h>

struct gpud_status_page {
   atomic_uint_least32_t op;            /* the command executing now; 0 between commands */
   atomic_uint_least32_t last_op;       /* the last command that started */
   atomic_uint_least32_t waits;         /* blocking waits in flight */
   atomic_uint_least64_t commands;      /* commands executed */
   atomic_uint_least64_t objects;       /* live objects */
   atomic_uint_least64_t memory_bytes;  /* memory held */
   atomic_uint_least64_t send_blocked_since_ns; /* CLOCK_MONOTONIC; 0: not blocked */
};

#define GPUD_STATUS_PAGE_SIZE 4096u
_Static_assert(sizeof(struct gpud_status_page) <= GPUD_STATUS_PAGE_SIZE,
               "the status page is one page");
