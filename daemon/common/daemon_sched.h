/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A fair share of the GPU: the schedule page, one page of shared memory
 * that the server makes (a file in its private directory, so that a
 * restarted server finds it again, or a memfd) and every worker maps.
 *
 * The server gives each client a slot and writes its weight (from its nice
 * level) and its quota there; the client's worker writes the GPU time its
 * completed submissions took (gpud_timing.h) as a virtual time, the GPU
 * time divided by its weight.  Before a submission goes to the host, the
 * worker looks at the slots of the other clients with work: while it is
 * ahead of the one furthest behind by more than a slice, or has a
 * submission in flight while others wait, its submission waits
 * (daemon/worker/gpud_sched.c): weighted fair queuing over GPU time,
 * decided by each worker on its own, with no call into another worker or
 * the server.  A client alone never waits; a quota (a share of the GPU a
 * client, or a user's clients together, may not pass, enforced with a
 * token bucket) holds whether others compete or not.
 *
 * Every value a worker reads here another worker may have written: a
 * worker that lies about its own virtual time gets more than its share,
 * as a worker running hostile code could by submitting to the host driver
 * directly.  The page decides nothing for the server.
 */

#include <stdatomic.h>
#include <stdint.h>

#define DAEMON_SCHED_MAGIC 0x67707564736368ull /* "gpudsch" */
#define DAEMON_SCHED_LAYOUT 2u
#define DAEMON_SCHED_SLOTS 1024u
#define DAEMON_SCHED_USERS 256u

/* The weight of nice 0; each nice level is 1.25 times less (as the Linux
 * scheduler's). */
#define DAEMON_SCHED_WEIGHT_0 1024u
#define DAEMON_NICE_MIN (-20)
#define DAEMON_NICE_MAX 19

/* state bits */
#define DAEMON_SCHED_ACTIVE 1u  /* work in flight or waiting to go */
#define DAEMON_SCHED_WAITING 2u /* a submission held back for others */
#define DAEMON_SCHED_QUOTA_HELD 4u /* a submission held back by its quota (or its
                                  * user's): it does not compete meanwhile */

struct daemon_sched_slot {
   /* the server's */
   _Atomic uint64_t client_id;  /* 0: free */
   _Atomic uint32_t uid;
   _Atomic uint32_t weight;     /* DAEMON_SCHED_WEIGHT_0 at nice 0 */
   _Atomic int32_t nice;
   _Atomic uint32_t quota_ppm;  /* the share it may take, in millionths; 0: none */
   _Atomic uint32_t user;       /* its user's entry + 1 (users[]); 0: none */
   /* its worker's */
   _Atomic uint32_t state;
   _Atomic uint64_t vtime;      /* weighted GPU time, ns at DAEMON_SCHED_WEIGHT_0 */
   _Atomic uint64_t busy_since_ns; /* its oldest submission in flight went then (0: none):
                                 * a long one ages it while it runs */
   _Atomic uint64_t gpu_ns;     /* GPU time of its completed submissions */
   _Atomic int64_t tokens_ns;   /* its quota's bucket: GPU time it may still take */
   _Atomic uint64_t refill_ns;  /* ... as of then (CLOCK_MONOTONIC) */
   _Atomic uint64_t waited_ns;  /* time its submissions were held back */
   _Atomic uint64_t submitted_ns; /* its last submission went then */
};
_Static_assert(sizeof(struct daemon_sched_slot) == 88, "a slot's size is part of the layout");

/* A user's quota, shared by all its clients. */
struct daemon_sched_user {
   _Atomic uint32_t uid;
   _Atomic uint32_t quota_ppm;  /* 0: none */
   _Atomic int64_t tokens_ns;
   _Atomic uint64_t refill_ns;
   uint8_t pad[8];
};

struct daemon_sched_page {
   _Atomic uint64_t magic;
   _Atomic uint32_t layout;
   _Atomic uint32_t epoch;      /* futex: bumped when a client's work completes or it goes
                                 * idle, for submissions waiting their turn */
   _Atomic uint32_t waiters;
   _Atomic uint32_t active;     /* clients with DAEMON_SCHED_ACTIVE */
   _Atomic uint32_t clients;    /* slots in use (the server's): one alone never scans */
   _Atomic uint32_t n_slots;    /* slots ever used: scans stop there */
   _Atomic uint32_t slice_us;   /* how far ahead of the furthest behind a client may go */
   _Atomic uint32_t bucket_ms;  /* a quota's bucket holds this much of its share */
   struct daemon_sched_user users[DAEMON_SCHED_USERS];
   struct daemon_sched_slot slots[DAEMON_SCHED_SLOTS];
};

#define DAEMON_SCHED_SIZE ((sizeof(struct daemon_sched_page) + 4095u) & ~4095u)

/* The weight of a nice level (clamped to DAEMON_NICE_MIN..MAX). */
static inline uint32_t
gpud_sched_weight(int nice)
{
   /* the Linux scheduler's table: 1024 / 1.25^nice */
   static const uint32_t table[40] = {
      88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
      9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
      1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
      110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
   };
   if (nice < DAEMON_NICE_MIN)
      nice = DAEMON_NICE_MIN;
   if (nice > DAEMON_NICE_MAX)
      nice = DAEMON_NICE_MAX;
   return table[nice - DAEMON_NICE_MIN];
}
