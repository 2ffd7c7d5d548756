/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define UTIL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UTIL_ALIGN(v, a) (((v) + (a) - 1) & ~((__typeof__(v))(a) - 1))
#define UTIL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define UTIL_MAX(a, b) ((a) > (b) ? (a) : (b))
#define util_container_of(ptr, type, member) \
   ((type *)((char *)(ptr) - offsetof(type, member)))

#define UTIL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define UTIL_EXPORT __attribute__((visibility("default")))

/* Takes ownership of an fd out of a variable, leaving -1 behind. */
static inline int
util_fd_move(int *fd)
{
   int r = *fd;
   *fd = -1;
   return r;
}

/* Closes an fd if it is valid and marks the variable closed. */
void util_fd_close(int *fd);
