/* SPDX-License-Identifier: MIT */
#pragma once

/* Small macros every part uses: array sizes, alignment, min and max,
 * container_of, printf checking, exported symbols. */

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
