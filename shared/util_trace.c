/* SPDX-License-Identifier: MIT */
/* GPUD_TRACE: events kept in memory, written at the process's end
 * (util_trace.h). */
#include "util_trace.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util_time.h"

#define TRACE_ENTRIES (2u << 20)

struct util_trace_entry *util_trace_buf;
static struct util_trace_entry *trace_all;
static _Atomic size_t trace_n;
static FILE *trace_file;
static pid_t trace_pid; /* the process that writes it (not a forked child) */
static atomic_bool trace_written;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static __thread const char *trace_name; /* the first caller's, for trace_start */
static __thread uint32_t trace_tid;

static const char *const event_names[UTIL_TRACE_EVENT_COUNT] = {
   [UTIL_TRACE_SUBMIT] = "submit",
   [UTIL_TRACE_SUBMITTED] = "submitted",
   [UTIL_TRACE_END] = "end",
   [UTIL_TRACE_WAIT] = "wait",
   [UTIL_TRACE_WAITED] = "waited",
   [UTIL_TRACE_POLL] = "poll",
   [UTIL_TRACE_POLLED] = "polled",
   [UTIL_TRACE_MSG] = "msg",
   [UTIL_TRACE_CHUNK] = "chunk",
   [UTIL_TRACE_CHUNK_DONE] = "chunk_done",
   [UTIL_TRACE_HOST_SUBMIT] = "host_submit",
   [UTIL_TRACE_HOST_SUBMITTED] = "host_submitted",
   [UTIL_TRACE_DONE] = "done",
   [UTIL_TRACE_CMD] = "cmd",
};

void
util_trace_finish(void)
{
   struct util_trace_entry *buf = util_trace_buf;
   if (!buf || !trace_file || getpid() != trace_pid || atomic_exchange(&trace_written, true))
      return;
   util_trace_buf = NULL;
   size_t n = atomic_load(&trace_n);
   if (n > TRACE_ENTRIES)
      n = TRACE_ENTRIES;
   for (size_t i = 0; i < n; i++) {
      if (!buf[i].ns)
         continue; /* taken by a thread that had not written it yet */
      fprintf(trace_file, "%llu %s %u %u\n", (unsigned long long)buf[i].ns,
              buf[i].event < UTIL_TRACE_EVENT_COUNT ? event_names[buf[i].event] : "?",
              buf[i].arg, buf[i].tid);
   }
   fclose(trace_file);
   trace_file = NULL;
}

static void
trace_start(void)
{
   const char *dir = getenv("GPUD_TRACE");
   if (!dir || !*dir)
      return;
   char path[PATH_MAX];
   snprintf(path, sizeof(path), "%s/trace-%d-%s", dir, (int)getpid(), trace_name);
   trace_pid = getpid();
   int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
   trace_file = fd >= 0 ? fdopen(fd, "w") : NULL;
   if (!trace_file) {
      if (fd >= 0)
         close(fd);
      return;
   }
   /* (kept in trace_all too: reachable after the events stop, as threads
    * that read util_trace_buf before may still write) */
   util_trace_buf = trace_all = calloc(TRACE_ENTRIES, sizeof(*util_trace_buf));
   if (util_trace_buf)
      atexit(util_trace_finish);
}

bool
util_trace_init(const char *name)
{
   trace_name = name;
   pthread_once(&trace_once, trace_start);
   return util_trace_buf != NULL;
}

void
util_trace_add(unsigned event, uint32_t arg)
{
   struct util_trace_entry *buf = util_trace_buf;
   size_t i = atomic_fetch_add_explicit(&trace_n, 1, memory_order_relaxed);
   if (!buf || i >= TRACE_ENTRIES)
      return;
   if (!trace_tid)
      trace_tid = (uint32_t)syscall(SYS_gettid);
   buf[i] = (struct util_trace_entry){
      .ns = util_now_ns(), .arg = arg, .event = event, .tid = trace_tid};
}

void
util_trace_fence_status(uint64_t fence, bool signalled)
{
   static __thread uint64_t polling;
   if (!util_trace_buf)
      return;
   if (!signalled && polling != fence) {
      polling = fence;
      util_trace_add(UTIL_TRACE_POLL, 0);
   } else if (signalled && polling == fence) {
      polling = 0;
      util_trace_add(UTIL_TRACE_POLLED, 0);
   }
}
