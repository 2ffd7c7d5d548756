/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Every limit the daemon applies, in one place: the fixed caps on what one
 * message or command may make the daemon hold, and the configurable limits
 * (command-line options) with their defaults.
 */

#include <stdint.h>

/* Fixed caps, per client. */
#define DAEMON_MAX_MESSAGE_SIZE (256u << 20)   /* one stream message */
#define DAEMON_MAX_COMMAND_MEMORY (512u << 20) /* decoded arguments of one command */
#define DAEMON_MAX_WAITERS 64                  /* blocking waits in flight */
#define DAEMON_MAX_COMPILES 32                 /* pipeline creations in flight */
#define DAEMON_MAX_COMPILE_ARGS (8u << 20)     /* decoded arguments of one of them */
#define DAEMON_COMPILE_END_WAIT_NS (5ull * 1000000000) /* for them at a client's end */
#define DAEMON_WAIT_SLICE_NS (50ull * 1000 * 1000)
#define DAEMON_COMMAND_SPIN_NS (50ull * 1000) /* poll for the next command before sleeping */
#define DAEMON_COMMAND_SPIN_MAX_NS (250ull * 1000) /* ... longer for a client that loops (util_spin.h) */
#define DAEMON_REPLAY_QUEUED_MAX (32u << 20) /* bytes of chunks waiting in the replay lanes */
/* Submissions a worker keeps until what they name is replayed and the
 * submitter runs them (gpud_replay.c); past it the decoding thread waits. */
#define DAEMON_REPLAY_SUBMITS_MAX 256u
/* A recording's last chunk up to this size, of a pool whose lane has
 * nothing left of it, is replayed by the decoding thread itself
 * (gpud_replay.c). */
#define DAEMON_REPLAY_INLINE_MAX (16u * 1024u)
#define DAEMON_RECORD_MAX (4u << 20) /* GPUD_RECORD_STREAMS: bytes recorded per client */
#define DAEMON_RING_SLICE_NS (50ull * 1000 * 1000) /* asleep on the ring, check the client this often */
#define DAEMON_MAX_SERVER_QUEUE (1u << 20)    /* bytes the server queues for one peer */
#define DAEMON_MAX_FAULTS 32                  /* recent faults gpudctl shows */

/* A limit of this value is "no limit". */
#define DAEMON_UNLIMITED UINT64_MAX

/* Configurable limits (gpud --help lists the options). */
struct daemon_limits {
   /* Memory, all heaps together; 0: the device's total heap size. */
   uint64_t client_memory;
   uint64_t uid_memory;
   uint64_t client_objects;
   uint32_t uid_connections;
   uint32_t max_clients;
   uint32_t handshake_timeout_ms; /* Hello to arrive after connecting */
   uint32_t start_timeout_ms;     /* a worker to be ready for a new client */
   uint32_t send_timeout_ms;      /* a client to make room for a reply */
   uint32_t teardown_timeout_ms;  /* a worker to end after its client left */
   uint32_t drain_timeout_ms;     /* clients to finish after SIGTERM (no restarts) */
   uint32_t restart_grace_ms;     /* workers serve on this long for the next server; 0: they
                                   * end with theirs */
   uint32_t crash_limit;          /* crashes of one program before it is refused; 0: never */
   uint32_t crash_cooldown_ms;    /* crashes are remembered (and a program refused) this long */
   uint32_t crash_backoff_ms;     /* a crashed program's next worker waits this, doubling
                                   * with each crash remembered; 0: none */
   uint32_t crash_backoff_max_ms; /* ... up to this */
   uint32_t log_burst;            /* lines about one client before rate limiting */
   uint32_t log_per_second;       /* ... and the rate after that */
   uint64_t cache_user_bytes;     /* one user's caches (srv_cache.c) */
   uint64_t cache_total_bytes;    /* ... every user's together */
};

#define DAEMON_LIMITS_DEFAULT                                                                \
   ((struct daemon_limits){                                                                  \
      .client_memory = 0,                                                                  \
      .uid_memory = 0,                                                                     \
      .client_objects = 1u << 20,                                                          \
      .uid_connections = 64,                                                               \
      .max_clients = 1024,                                                                 \
      .handshake_timeout_ms = 5000,                                                        \
      .start_timeout_ms = 20000,                                                           \
      .send_timeout_ms = 10000,                                                            \
      .teardown_timeout_ms = 5000,                                                         \
      .drain_timeout_ms = 10000,                                                           \
      .restart_grace_ms = 30000,                                                           \
      .crash_limit = 0,                                                                    \
      .crash_cooldown_ms = 60000,                                                          \
      .crash_backoff_ms = 100,                                                             \
      .crash_backoff_max_ms = 5000,                                                        \
      .log_burst = 20,                                                                     \
      .log_per_second = 2,                                                                 \
      .cache_user_bytes = 2ull << 30,                                                      \
      .cache_total_bytes = 16ull << 30,                                                    \
   })
