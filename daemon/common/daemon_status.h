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

/* An object the application named (VK_EXT_debug_utils). */
#define DAEMON_STATUS_NAMES 24
#define DAEMON_STATUS_NAME_SIZE 48
struct daemon_status_name {
   uint64_t id;   /* the client's object id; 0: a free slot */
   uint32_t type; /* VkObjectType */
   char name[DAEMON_STATUS_NAME_SIZE];
};

/* A queue of one of the client's devices.  Busy time is the time the queue
 * had work submitted and not yet complete (as the worker saw completions):
 * busy_ns for the periods that ended, plus now - busy_since_ns while one
 * lasts. */
#define DAEMON_STATUS_QUEUES 16
struct daemon_status_queue {
   atomic_uint_least64_t device;        /* the client's device id; 0: a free slot */
   atomic_uint_least32_t family;
   atomic_uint_least32_t index;
   atomic_uint_least64_t submissions;   /* submits (and sparse binds) so far */
   atomic_uint_least64_t completed;     /* the last submission known complete */
   atomic_uint_least64_t busy_ns;
   atomic_uint_least64_t busy_since_ns; /* CLOCK_MONOTONIC; 0: idle */
   atomic_uint_least64_t gpu_ns;        /* the GPU time of its completed submissions:
                                         * timestamps around each where the family
                                         * writes them, else the time each had the
                                         * queue busy (gpud_timing.h) */
};

/* Live objects by type, indexed by wire_object_type_index(). */
#define DAEMON_STATUS_TYPES 48

/* Faults gpudctl injects: the server writes, the worker acts (gpud_inject.c). */
struct daemon_status_inject {
   atomic_uint_least32_t lose_device;  /* non-zero: lose every device now */
   atomic_uint_least32_t fail_alloc;   /* the next this many allocations fail */
   atomic_uint_least32_t delay_ms;     /* completions are seen this much later */
   /* one more after every change of the above (a futex word: the worker's
    * thread that tells the completion pages sleeps on it, gpud_hold.c) */
   atomic_uint_least32_t seq;
   /* non-zero while that thread runs; the seq its pages reflect (a futex
    * word: the server waits on it before it answers an injection) */
   atomic_uint_least32_t watching;
   atomic_uint_least32_t taken;
};

/* Replay lanes (threads replaying recordings), at most. */
#define DAEMON_STATUS_LANES 8

/* What a replay lane does: written at every command it replays, so a cache
 * line of its own (the lanes and the decoding thread never share one). */
struct daemon_status_lane {
   _Alignas(64) atomic_uint_least32_t op; /* the recorded command executing now; 0 between */
};

/* The layout of the page below; a server that adopts a worker of another
 * build (an upgrade) reads nothing else of a page of another layout.  Grows
 * with every change to struct daemon_status_page. */
#define DAEMON_STATUS_LAYOUT 6u

struct daemon_status_page {
   atomic_uint_least32_t layout;        /* DAEMON_STATUS_LAYOUT, the server writes it: first */
   atomic_uint_least32_t fatal_signal;  /* the signal the worker is dying of; 0: none */
   atomic_uint_least32_t op;            /* the command executing now; 0 between commands */
   atomic_uint_least32_t last_op;       /* the last command that started */
   atomic_uint_least32_t waits;         /* blocking waits in flight */
   atomic_uint_least64_t commands;      /* commands executed */
   atomic_uint_least64_t objects;       /* live objects */
   atomic_uint_least64_t memory_bytes;  /* memory held */
   atomic_uint_least64_t send_blocked_since_ns; /* CLOCK_MONOTONIC; 0: not blocked */
   /* the most recently named live objects; odd while the worker writes them */
   atomic_uint_least32_t names_seq;
   struct daemon_status_name names[DAEMON_STATUS_NAMES];
   struct daemon_status_queue queues[DAEMON_STATUS_QUEUES];
   atomic_uint_least32_t objects_by_type[DAEMON_STATUS_TYPES];
   struct daemon_status_inject inject;
   struct daemon_status_lane lanes[DAEMON_STATUS_LANES];
   /* the command the last compile job to start runs (gpud_compile.c); 0
    * once none runs */
   struct daemon_status_lane compile;
   /* pipelines made with the pipeline cache the worker keeps
    * (gpud_pipecache.c): those the cache had from an earlier run of the
    * program, and those it had not */
   atomic_uint_least64_t pipelines_cached;
   atomic_uint_least64_t pipelines_compiled;
};

#define DAEMON_STATUS_PAGE_SIZE 4096u
_Static_assert(sizeof(struct daemon_status_page) <= DAEMON_STATUS_PAGE_SIZE,
               "the status page is one page");
