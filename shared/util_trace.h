/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A measuring aid: with GPUD_TRACE=DIR in its environment a process keeps
 * what happened when (an event, a number, CLOCK_MONOTONIC nanoseconds,
 * the thread) in memory and writes it as text to DIR/trace-PID-NAME at its
 * end.  The ICD's file and its worker's, merged by time
 * (bench/trace_timeline.py), show where a submission's way goes.  Without
 * the variable an event costs a load and a branch.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum util_trace_event {
   /* a driver's entry points, on the application's threads (the ICD's, or
    * the host-call recorder's over a host driver) */
   UTIL_TRACE_SUBMIT,      /* vkQueueSubmit(2) entered: its command buffers */
   UTIL_TRACE_SUBMITTED,   /* ... returned: 1 made by the ICD itself */
   UTIL_TRACE_END,         /* vkEndCommandBuffer (the ICD: the stream's bytes) */
   UTIL_TRACE_WAIT,        /* vkWaitForFences entered: the fences */
   UTIL_TRACE_WAITED,      /* ... returned: its result */
   UTIL_TRACE_POLL,        /* vkGetFenceStatus: not ready (the first of a row) */
   UTIL_TRACE_POLLED,      /* vkGetFenceStatus: signalled after a poll not ready */
   /* the worker */
   UTIL_TRACE_MSG,            /* the decoding thread took a message: its size */
   UTIL_TRACE_CHUNK,          /* a chunk's replay began: its size */
   UTIL_TRACE_CHUNK_DONE,     /* ... ended: its commands */
   UTIL_TRACE_HOST_SUBMIT,    /* the host's vkQueueSubmit(2) entered */
   UTIL_TRACE_HOST_SUBMITTED, /* ... returned */
   UTIL_TRACE_DONE,           /* the tracker found a submission complete: the queue's count */
   UTIL_TRACE_CMD,            /* the decoding thread began a command of a message: its op */
   UTIL_TRACE_EVENT_COUNT,
};

struct util_trace_entry {
   uint64_t ns; /* 0: not written yet */
   uint32_t arg;
   uint32_t event;
   uint32_t tid;
};

extern struct util_trace_entry *util_trace_buf;

/* Reads GPUD_TRACE (once); whether tracing.  The file is written at
 * exit, or by util_trace_finish. */
bool util_trace_init(const char *name);
void util_trace_finish(void);
void util_trace_add(unsigned event, uint32_t arg);

static inline void
util_trace(unsigned event, uint32_t arg)
{
   if (__builtin_expect(util_trace_buf != NULL, 0))
      util_trace_add(event, arg);
}

/* A fence status the application polled: the first "not ready" of a row
 * and the "signalled" that ends it (one row at a time per thread). */
void util_trace_fence_status(uint64_t fence, bool signalled);
