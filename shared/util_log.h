/* SPDX-License-Identifier: MIT */
#pragma once

/* Logging for both daemons and gpudctl: lines on stderr with their syslog
 * priority, a level from GPUD_LOG or the command line, an optional sink. */

#include <stdarg.h>
#include <stdbool.h>

#include "util_macros.h"

/* Syslog/journal priorities: lines go to stderr prefixed with "<N>" so the
 * journal assigns the right priority when stderr is a journal stream. */
enum util_log_level {
   UTIL_LOG_ERR = 3,
   UTIL_LOG_WARNING = 4,
   UTIL_LOG_NOTICE = 5,
   UTIL_LOG_INFO = 6,
   UTIL_LOG_DEBUG = 7,
};

/* Messages above this level are dropped; default UTIL_LOG_INFO. */
void util_log_set_max_level(enum util_log_level level);
enum util_log_level util_log_get_max_level(void);
/* Parses a level: err, warning, notice, info, debug or its number 3-7. */
int util_log_parse_level(const char *s, enum util_log_level *ret_level);
void util_log(enum util_log_level level, const char *fmt, ...) UTIL_PRINTF(2, 3);

/* A line about one client: its id, pid, uid and name go with it as fields
 * where the sink takes fields (the journal), and before the message in
 * text ("client ID (pid PID, NAME): ..."). */
struct util_log_client {
   unsigned long long id;
   int pid;
   unsigned uid;
   const char *name;
};
void util_log_client(enum util_log_level level, const struct util_log_client *client,
                     const char *fmt, ...) UTIL_PRINTF(3, 4);
/* The same with the arguments in ap (client may be NULL). */
void util_log_clientv(enum util_log_level level, const struct util_log_client *client,
                      const char *fmt, va_list ap) UTIL_PRINTF(3, 0);

/* Where lines go instead of stderr (the daemon's journal): message without
 * the "<N>" prefix; client may be NULL.  NULL: stderr again. */
typedef void (*util_log_sink)(enum util_log_level level, const struct util_log_client *client,
                              const char *message);
void util_log_set_sink(util_log_sink sink);
/* Lines on stderr carry the time after their "<N>" (a daemon not on the
 * journal). */
void util_log_set_timestamps(bool on);

#define util_err(...) util_log(UTIL_LOG_ERR, __VA_ARGS__)
#define util_warn(...) util_log(UTIL_LOG_WARNING, __VA_ARGS__)
#define util_notice(...) util_log(UTIL_LOG_NOTICE, __VA_ARGS__)
#define util_info(...) util_log(UTIL_LOG_INFO, __VA_ARGS__)
#define util_debug(...) util_log(UTIL_LOG_DEBUG, __VA_ARGS__)
