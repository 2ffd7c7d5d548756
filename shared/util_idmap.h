/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open-addressing hash map from non-zero 64-bit keys to non-NULL pointers.
 * Not thread-safe. */
struct util_idmap {
   struct util_idmap_entry *entries;
   size_t count;      /* live entries */
   size_t used;       /* live + tombstones */
   size_t cap;        /* power of two, or 0 */
};

void util_idmap_init(struct util_idmap *map);
void util_idmap_finish(struct util_idmap *map);
/* -EEXIST if key is present, -EINVAL for key 0 or value NULL, -ENOMEM. */
int util_idmap_insert(struct util_idmap *map, uint64_t key, void *value);
void *util_idmap_get(const struct util_idmap *map, uint64_t key);
/* Returns the removed value or NULL. */
void *util_idmap_remove(struct util_idmap *map, uint64_t key);

/* Iteration: for (size_t it = 0; util_idmap_next(map, &it, &k, &v);) ...
 * Removing the entry just returned is allowed during iteration. */
bool util_idmap_next(const struct util_idmap *map, size_t *iter,
                     uint64_t *ret_key, void **ret_value);
