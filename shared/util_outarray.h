/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Vulkan's two-call arrays (a count, then the elements into the room the
 * caller gives), once, as Mesa's vk_outarray:
 *
 *   struct util_outarray out;
 *   util_outarray_init(&out, pItems, pCount);
 *   for (...) {
 *      VkItem *item = UTIL_OUTARRAY_NEXT(&out, VkItem);
 *      if (item)
 *         *item = ...;
 *   }
 *   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
 *
 * Without room (pItems NULL) *pCount becomes how many there are; with it,
 * how many were written, and done says whether that was all.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct util_outarray {
   void *data;
   uint32_t *count;
   uint32_t room, written, wanted;
};

static inline void
util_outarray_init(struct util_outarray *o, void *data, uint32_t *count)
{
   o->data = data;
   o->count = count;
   o->room = data ? *count : 0;
   o->written = 0;
   o->wanted = 0;
}

/* The next element's place (zeroed by the caller as it needs), or NULL
 * where there is no room for it: it is counted all the same. */
static inline void *
util_outarray_next(struct util_outarray *o, size_t size)
{
   o->wanted++;
   if (!o->data || o->written >= o->room)
      return NULL;
   return (char *)o->data + size * o->written++;
}

#define UTIL_OUTARRAY_NEXT(o, type) ((type *)util_outarray_next((o), sizeof(type)))

/* Sets the count; false where some did not fit (VK_INCOMPLETE). */
static inline bool
util_outarray_done(struct util_outarray *o)
{
   *o->count = o->data ? o->written : o->wanted;
   return !o->data || o->written == o->wanted;
}
