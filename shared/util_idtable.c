/* SPDX-License-Identifier: MIT */
/* The dense id table: ids to pointers in pages of slots (util_idtable.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util_idtable.h"

#define TOP_SHIFT (UTIL_IDTABLE_PAGE_BITS + UTIL_IDTABLE_MID_BITS)
#define MID_MASK ((1u << UTIL_IDTABLE_MID_BITS) - 1)
#define SLOT_MASK ((1u << UTIL_IDTABLE_PAGE_BITS) - 1)

int
util_idtable_init(struct util_idtable *t)
{
   /* reserved address space: calloc maps it, pages are touched as used */
   t->top = calloc(1u << UTIL_IDTABLE_TOP_BITS, sizeof(*t->top));
   t->pages = NULL;
   t->mids = NULL;
   t->n_mids = 0;
   t->count = 0;
   return t->top ? 0 : -ENOMEM;
}

void
util_idtable_finish(struct util_idtable *t)
{
   if (!t || !t->top)
      return;
   while (t->pages) {
      struct util_idtable_page *next = t->pages->next;
      free(t->pages);
      t->pages = next;
   }
   for (size_t i = 0; i < t->n_mids; i++)
      free(t->mids[i]);
   free(t->mids);
   t->mids = NULL;
   t->n_mids = 0;
   free(t->top);
   t->top = NULL;
   t->count = 0;
}

/* The page an id falls in, made when create is set (NULL: none, or no
 * memory). */
static struct util_idtable_page *
page_of(struct util_idtable *t, uint64_t id, _Atomic(struct util_idtable_page *) **ret_ref,
        bool create)
{
   _Atomic(util_idtable_mid *) *top = &t->top[id >> TOP_SHIFT];
   util_idtable_mid *mid = atomic_load_explicit(top, memory_order_relaxed);
   if (!mid) {
      if (!create)
         return NULL;
      util_idtable_mid **mids = realloc(t->mids, (t->n_mids + 1) * sizeof(*mids));
      if (!mids)
         return NULL;
      t->mids = mids;
      mid = calloc(1, sizeof(*mid));
      if (!mid)
         return NULL;
      t->mids[t->n_mids++] = mid;
      atomic_store_explicit(top, mid, memory_order_release);
   }
   _Atomic(struct util_idtable_page *) *ref = &(*mid)[(id >> UTIL_IDTABLE_PAGE_BITS) & MID_MASK];
   struct util_idtable_page *page = atomic_load_explicit(ref, memory_order_relaxed);
   if (!page && create) {
      page = calloc(1, sizeof(*page));
      if (!page)
         return NULL;
      page->next = t->pages;
      if (t->pages)
         t->pages->prev = page;
      t->pages = page;
      atomic_store_explicit(ref, page, memory_order_release);
   }
   *ret_ref = ref;
   return page;
}

int
util_idtable_insert(struct util_idtable *t, uint64_t id, void *value)
{
   if (!id || id > UTIL_IDTABLE_MAX_ID || !value)
      return -EINVAL;
   _Atomic(struct util_idtable_page *) *ref;
   struct util_idtable_page *page = page_of(t, id, &ref, true);
   if (!page)
      return -ENOMEM;
   _Atomic(void *) *slot = &page->slots[id & SLOT_MASK];
   if (atomic_load_explicit(slot, memory_order_relaxed))
      return -EEXIST;
   atomic_store_explicit(slot, value, memory_order_release);
   page->count++;
   t->count++;
   return 0;
}

void *
util_idtable_remove(struct util_idtable *t, uint64_t id)
{
   if (!id || id > UTIL_IDTABLE_MAX_ID)
      return NULL;
   _Atomic(struct util_idtable_page *) *ref;
   struct util_idtable_page *page = page_of(t, id, &ref, false);
   if (!page)
      return NULL;
   _Atomic(void *) *slot = &page->slots[id & SLOT_MASK];
   void *value = atomic_load_explicit(slot, memory_order_relaxed);
   if (!value)
      return NULL;
   atomic_store_explicit(slot, NULL, memory_order_relaxed);
   t->count--;
   if (--page->count == 0) {
      /* no reader runs while the writer removes: the page can go */
      atomic_store_explicit(ref, NULL, memory_order_relaxed);
      if (page->prev)
         page->prev->next = page->next;
      else
         t->pages = page->next;
      if (page->next)
         page->next->prev = page->prev;
      free(page);
   }
   return value;
}
