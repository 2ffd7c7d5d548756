/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A dense table from 64-bit ids to pointers, for ids that a client hands
 * out from a counter (small, increasing, never reused): a radix tree of
 * three levels (2^20 x 2^20 x 4096 slots), so a lookup is three dependent
 * loads and no hashing.  Pages of 4096 slots are allocated as ids arrive and
 * freed when they empty; the upper levels are reserved address space that is
 * touched only where ids fall.  Ids above UTIL_IDTABLE_MAX_ID are refused.
 *
 * One thread writes.  Other threads may look ids up while it inserts (every
 * slot and page is published with release stores), never while it removes:
 * the writer removes only when no reader is running.
 */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define UTIL_IDTABLE_PAGE_BITS 12u
#define UTIL_IDTABLE_MID_BITS 20u
#define UTIL_IDTABLE_TOP_BITS 20u
#define UTIL_IDTABLE_MAX_ID                                                                   \
   ((1ull << (UTIL_IDTABLE_PAGE_BITS + UTIL_IDTABLE_MID_BITS + UTIL_IDTABLE_TOP_BITS)) - 1)

struct util_idtable_page {
   struct util_idtable_page *prev, *next; /* every page, for util_idtable_finish */
   uint32_t count;                        /* slots in use */
   _Atomic(void *) slots[1u << UTIL_IDTABLE_PAGE_BITS];
};

typedef _Atomic(struct util_idtable_page *) util_idtable_mid[1u << UTIL_IDTABLE_MID_BITS];

struct util_idtable {
   _Atomic(util_idtable_mid *) *top; /* 2^20 mid levels, each made on first use */
   struct util_idtable_page *pages;  /* every page */
   util_idtable_mid **mids;          /* every mid level */
   size_t n_mids;
   size_t count;                     /* ids in the table */
};

/* -ENOMEM when the top level cannot be reserved. */
int util_idtable_init(struct util_idtable *t);
void util_idtable_finish(struct util_idtable *t);
/* -EINVAL for id 0, an id above UTIL_IDTABLE_MAX_ID or a NULL value;
 * -EEXIST when the id is in the table; -ENOMEM. */
int util_idtable_insert(struct util_idtable *t, uint64_t id, void *value);
/* The removed value, or NULL. */
void *util_idtable_remove(struct util_idtable *t, uint64_t id);

static inline void *
util_idtable_get(const struct util_idtable *t, uint64_t id)
{
   if (id > UTIL_IDTABLE_MAX_ID || !t->top)
      return NULL;
   util_idtable_mid *mid = atomic_load_explicit(
      &t->top[id >> (UTIL_IDTABLE_PAGE_BITS + UTIL_IDTABLE_MID_BITS)], memory_order_acquire);
   if (!mid)
      return NULL;
   struct util_idtable_page *page = atomic_load_explicit(
      &(*mid)[(id >> UTIL_IDTABLE_PAGE_BITS) & ((1u << UTIL_IDTABLE_MID_BITS) - 1)],
      memory_order_acquire);
   if (!page)
      return NULL;
   return atomic_load_explicit(&page->slots[id & ((1u << UTIL_IDTABLE_PAGE_BITS) - 1)],
                               memory_order_acquire);
}
