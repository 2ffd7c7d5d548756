/* SPDX-License-Identifier: MIT */
/* The log (util_log.h): levels, priorities on stderr, the sink. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util_log.h"

static atomic_int max_level = UTIL_LOG_INFO;
static _Atomic(util_log_sink) sink;
static atomic_bool timestamps;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const struct {
   const char *name;
   enum util_log_level level;
} level_names[] = {
    {"err", UTIL_LOG_ERR},   {"warning", UTIL_LOG_WARNING}, {"notice", UTIL_LOG_NOTICE},
    {"info", UTIL_LOG_INFO}, {"debug", UTIL_LOG_DEBUG},
};

int
util_log_parse_level(const char *s, enum util_log_level *ret_level)
{
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(level_names); i++) {
      if (strcmp(s, level_names[i].name) == 0) {
         *ret_level = level_names[i].level;
         return 0;
      }
   }
   if (strcmp(s, "error") == 0) {
      *ret_level = UTIL_LOG_ERR;
      return 0;
   }
   if (s[0] >= '3' && s[0] <= '7' && s[1] == '\0') {
      *ret_level = (enum util_log_level)(s[0] - '0');
      return 0;
   }
   return -EINVAL;
}

static void
parse_env(void)
{
   const char *v = getenv("GPUD_LOG_LEVEL");
   if (!v || !*v)
      return;

   enum util_log_level level;
   if (util_log_parse_level(v, &level) == 0) {
      atomic_store(&max_level, level);
      return;
   }

   /* Not util_warn(): that would recurse into pthread_once(). */
   static const char msg[] = "<4>GPUD_LOG_LEVEL not recognised; expected one of "
                             "err, warning, notice, info, debug\n";
   ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
   (void)n;
}

static void
init_once(void)
{
   pthread_once(&env_once, parse_env);
}

void
util_log_set_max_level(enum util_log_level level)
{
   /* Read the environment first so that an explicit call always wins. */
   init_once();
   atomic_store(&max_level, level);
}

enum util_log_level
util_log_get_max_level(void)
{
   init_once();
   return (enum util_log_level)atomic_load(&max_level);
}

static void
write_all(const char *buf, size_t len)
{
   while (len > 0) {
      ssize_t n = write(STDERR_FILENO, buf, len);
      if (n < 0) {
         if (errno == EINTR)
            continue;
         return;
      }
      buf += n;
      len -= (size_t)n;
   }
}

void
util_log_set_sink(util_log_sink fn)
{
   atomic_store(&sink, fn);
}

void
util_log_set_timestamps(bool on)
{
   atomic_store(&timestamps, on);
}

static void log_line(enum util_log_level level, const struct util_log_client *client,
                     int saved_errno, const char *fmt, va_list ap) UTIL_PRINTF(4, 0);

static void
log_line(enum util_log_level level, const struct util_log_client *client, int saved_errno,
         const char *fmt, va_list ap)
{
   /* The prefix and the message go out in a single write() so that lines
    * from different threads do not interleave. */
   char stack_buf[1024];
   char *buf = stack_buf;
   util_log_sink to = atomic_load(&sink);
   int prefix = 0;
   if (!to) {
      prefix = snprintf(stack_buf, sizeof(stack_buf), "<%d>", (int)level);
      if (atomic_load(&timestamps)) {
         struct timespec ts;
         struct tm tm;
         clock_gettime(CLOCK_REALTIME, &ts);
         localtime_r(&ts.tv_sec, &tm);
         prefix += (int)strftime(stack_buf + prefix, sizeof(stack_buf) - (size_t)prefix,
                                 "%Y-%m-%d %H:%M:%S", &tm);
         prefix += snprintf(stack_buf + prefix, sizeof(stack_buf) - (size_t)prefix, ".%03ld ",
                            ts.tv_nsec / 1000000);
      }
   }
   if (client)
      prefix += snprintf(stack_buf + prefix, sizeof(stack_buf) - (size_t)prefix,
                         "client %llu (pid %d, %s): ", client->id, client->pid,
                         client->name && client->name[0] ? client->name : "?");
   if ((size_t)prefix >= sizeof(stack_buf) - 2)
      prefix = (int)sizeof(stack_buf) - 3;

   va_list ap2;
   va_copy(ap2, ap);
   errno = saved_errno; /* for %m */
   int len = vsnprintf(stack_buf + prefix, sizeof(stack_buf) - (size_t)prefix, fmt, ap);
   if (len < 0) {
      va_end(ap2);
      return;
   }

   size_t total = (size_t)prefix + (size_t)len;
   if (total + 2 > sizeof(stack_buf) && client) {
      /* a line about a client may carry what the client sent: it is cut */
      total = sizeof(stack_buf) - 2;
   } else if (total + 2 > sizeof(stack_buf)) {
      char *heap = malloc(total + 2);
      if (heap) {
         memcpy(heap, stack_buf, (size_t)prefix);
         errno = saved_errno;
         vsnprintf(heap + prefix, (size_t)len + 1, fmt, ap2);
         buf = heap;
      } else {
         /* Out of memory: send the truncated line. */
         total = sizeof(stack_buf) - 2;
      }
   }
   va_end(ap2);

   if (to) {
      buf[total] = 0;
      /* the journal has the client's fields: the text keeps its prefix too,
       * for people reading the plain log */
      to(level, client, buf);
   } else {
      if (total == (size_t)prefix || buf[total - 1] != '\n')
         buf[total++] = '\n';
      write_all(buf, total);
   }

   if (buf != stack_buf)
      free(buf);
}

void
util_log_clientv(enum util_log_level level, const struct util_log_client *client, const char *fmt,
                 va_list ap)
{
   int saved_errno = errno;

   init_once();
   if ((int)level <= atomic_load(&max_level))
      log_line(level, client, saved_errno, fmt, ap);
   errno = saved_errno;
}

void
util_log(enum util_log_level level, const char *fmt, ...)
{
   va_list ap;
   va_start(ap, fmt);
   util_log_clientv(level, NULL, fmt, ap);
   va_end(ap);
}

void
util_log_client(enum util_log_level level, const struct util_log_client *client,
                const char *fmt, ...)
{
   va_list ap;
   va_start(ap, fmt);
   util_log_clientv(level, client, fmt, ap);
   va_end(ap);
}
