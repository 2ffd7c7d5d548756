/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A 64-bit hash of bytes, for keys that name content (the worker's
 * pipeline cache): eight bytes a step, each mixed by a multiply and a
 * shift.  Not for keys an adversary picks against a table's buckets.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UTIL_HASH_SEED 0xcbf29ce484222325ull

static inline uint64_t
util_hash_mix(uint64_t h, uint64_t v)
{
   h = (h ^ v) * 0x9e3779b97f4a7c15ull;
   return h ^ (h >> 29);
}

static inline uint64_t
util_hash_bytes(uint64_t h, const void *data, size_t size)
{
   const uint8_t *p = data;
   for (; size >= 8; p += 8, size -= 8) {
      uint64_t v;
      memcpy(&v, p, 8);
      h = util_hash_mix(h, v);
   }
   uint64_t tail = 0;
   if (size)
      memcpy(&tail, p, size);
   h = util_hash_mix(h, tail ^ ((uint64_t)size << 56));
   return h ^ (h >> 32);
}
