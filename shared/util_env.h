/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Settings from the environment: the numbers and switches gpud's parts
 * read from variables (limits, timeouts, the knobs its measurements turn).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether the variable name turns something off: "off", "0", "no" or
 * "false" (anything else, unset or empty, leaves it on). */
static inline bool
util_env_off(const char *name)
{
   const char *v = getenv(name);
   return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no") ||
                !strcmp(v, "false"));
}

/* Whether the variable name holds a whole decimal number from min to max
 * (then in *ret); an unset or empty variable, or anything else, leaves
 * *ret alone. */
static inline bool
util_env_number(const char *name, uint64_t min, uint64_t max, uint64_t *ret)
{
   const char *v = getenv(name);
   if (!v || !*v)
      return false;
   char *end;
   unsigned long long n = strtoull(v, &end, 10);
   if (*end || n < min || n > max)
      return false;
   *ret = n;
   return true;
}
