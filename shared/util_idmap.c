/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "util_idmap.h"

/*
 * Open addressing with linear probing over a power-of-two table.
 *
 * A slot is live when its key is non-zero, empty when key and value are
 * both 0/NULL, and a tombstone when the key is 0 and the value is
 * TOMBSTONE.  Removal only ever turns slots into tombstones (or empties),
 * never moves entries, so iteration by slot index survives removing the
 * entry just returned.  Insertion grows (or rehashes in place, dropping
 * the tombstones) when live + tombstones would exceed 70% of the table.
 */

struct util_idmap_entry {
   uint64_t key;
   void *value;
};

static char tombstone_marker;
#define TOMBSTONE ((void *)&tombstone_marker)

#define MIN_CAP 16

static inline uint64_t
hash_key(uint64_t x)
{
   /* splitmix64 finalizer */
   x ^= x >> 30;
   x *= 0xbf58476d1ce4e5b9ull;
   x ^= x >> 27;
   x *= 0x94d049bb133111ebull;
   x ^= x >> 31;
   return x;
}

static inline bool
slot_is_empty(const struct util_idmap_entry *e)
{
   return e->key == 0 && e->value == NULL;
}

static inline bool
slot_is_tombstone(const struct util_idmap_entry *e)
{
   return e->key == 0 && e->value == TOMBSTONE;
}

void
util_idmap_init(struct util_idmap *map)
{
   map->entries = NULL;
   map->count = 0;
   map->used = 0;
   map->cap = 0;
}

void
util_idmap_finish(struct util_idmap *map)
{
   if (!map)
      return;
   free(map->entries);
   util_idmap_init(map);
}

/* Index of the live slot holding key, or SIZE_MAX. */
static size_t
find_slot(const struct util_idmap *map, uint64_t key)
{
   if (map->cap == 0 || key == 0)
      return SIZE_MAX;

   size_t mask = map->cap - 1;
   for (size_t i = hash_key(key) & mask, n = 0; n < map->cap; i = (i + 1) & mask, n++) {
      const struct util_idmap_entry *e = &map->entries[i];
      if (e->key == key)
         return i;
      if (slot_is_empty(e))
         return SIZE_MAX;
   }
   return SIZE_MAX;
}

static bool
over_load(size_t n, size_t cap)
{
   /* n > 0.7 * cap */
   return n > cap / 10 * 7 + cap % 10 * 7 / 10;
}

static int
resize(struct util_idmap *map)
{
   size_t new_cap = map->cap ? map->cap : MIN_CAP;

   /* Keep the load after the rehash at 35% or below, so that the next
    * resize is at least as far away as this one was. */
   while (over_load(2 * (map->count + 1), new_cap)) {
      if (new_cap > SIZE_MAX / 2 / sizeof(struct util_idmap_entry))
         return -ENOMEM;
      new_cap *= 2;
   }

   struct util_idmap_entry *entries = calloc(new_cap, sizeof(*entries));
   if (!entries)
      return -ENOMEM;

   size_t mask = new_cap - 1;
   for (size_t j = 0; j < map->cap; j++) {
      const struct util_idmap_entry *e = &map->entries[j];
      if (e->key == 0)
         continue;
      size_t i = hash_key(e->key) & mask;
      while (entries[i].key != 0)
         i = (i + 1) & mask;
      entries[i] = *e;
   }

   free(map->entries);
   map->entries = entries;
   map->cap = new_cap;
   map->used = map->count;
   return 0;
}

int
util_idmap_insert(struct util_idmap *map, uint64_t key, void *value)
{
   if (key == 0 || value == NULL)
      return -EINVAL;

   for (;;) {
      if (map->cap == 0) {
         int r = resize(map);
         if (r < 0)
            return r;
      }

      size_t mask = map->cap - 1;
      size_t slot = SIZE_MAX;
      size_t i = hash_key(key) & mask;
      size_t n;
      for (n = 0; n < map->cap; i = (i + 1) & mask, n++) {
         struct util_idmap_entry *e = &map->entries[i];
         if (e->key == key)
            return -EEXIST;
         if (slot_is_tombstone(e)) {
            if (slot == SIZE_MAX)
               slot = i;
         } else if (slot_is_empty(e)) {
            break;
         }
      }

      if (slot != SIZE_MAX) {
         /* Reuse the first tombstone on the probe path: used is unchanged. */
         map->entries[slot].key = key;
         map->entries[slot].value = value;
         map->count++;
         return 0;
      }

      if (n < map->cap && !over_load(map->used + 1, map->cap)) {
         map->entries[i].key = key;
         map->entries[i].value = value;
         map->count++;
         map->used++;
         return 0;
      }

      int r = resize(map);
      if (r < 0)
         return r;
   }
}

void *
util_idmap_get(const struct util_idmap *map, uint64_t key)
{
   size_t i = find_slot(map, key);
   return i == SIZE_MAX ? NULL : map->entries[i].value;
}

void *
util_idmap_remove(struct util_idmap *map, uint64_t key)
{
   size_t i = find_slot(map, key);
   if (i == SIZE_MAX)
      return NULL;

   struct util_idmap_entry *e = &map->entries[i];
   void *value = e->value;
   map->count--;

   /* A slot followed by an empty one ends no probe chain that continues past
    * it, so it can become empty rather than a tombstone. */
   if (slot_is_empty(&map->entries[(i + 1) & (map->cap - 1)])) {
      e->key = 0;
      e->value = NULL;
      map->used--;
   } else {
      e->key = 0;
      e->value = TOMBSTONE;
   }
   return value;
}

bool
util_idmap_next(const struct util_idmap *map, size_t *iter, uint64_t *ret_key,
                void **ret_value)
{
   for (size_t i = *iter; i < map->cap; i++) {
      const struct util_idmap_entry *e = &map->entries[i];
      if (e->key == 0)
         continue;
      *iter = i + 1;
      if (ret_key)
         *ret_key = e->key;
      if (ret_value)
         *ret_value = e->value;
      return true;
   }
   *iter = map->cap;
   return false;
}
