/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The harness of the wire round-trip test.  protocol/gen_roundtrip.py
 * generates one case per command carried on the wire (build/protocol/
 * test_wire_roundtrip_gen.c); each builds a sample call and drives it
 * through the helpers below:
 *
 *   sample call -> wire_enc_vkFoo -> A -> wire_decargs_vkFoo -> args,
 *   and args hold what the sample call does (rt_eq_*: member by member,
 *   through pointers and pNext chains, handles by id);
 *   args -> wire_enc_vkFoo -> B, and A == B byte for byte;
 *   every prefix of A, and A with a count changed, must decode as fatal;
 *   sync commands: args + outputs -> wire_encreply_vkFoo -> R ->
 *   wire_decreply_vkFoo -> the sample's output storage, which must hold
 *   what the daemon side's does, and (re-encoded through
 *   wire_encreply_vkFoo) R2 == R.
 *
 * Each command has a "full" sample call (everything filled) and a
 * "sparse" one (whatever may be absent left out).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util_macros.h"
#include "wire_gen.h"

struct rt {
   const char *cmd;      /* command under test */
   const char *variant;  /* of its sample call */
   bool failed;          /* the command under test failed a check */
   struct wire_enc a;    /* request as the ICD encodes it */
   struct wire_enc b;    /* request re-encoded from the decoded arguments */
   struct wire_enc r;    /* reply as the daemon encodes it */
   struct wire_enc r2;   /* reply re-encoded from what the ICD decoded */
   struct wire_arena *arena;   /* decoded arguments of the command under test */
   struct wire_arena *scratch; /* truncated and corrupted decodes */
   int fds[WIRE_MAX_FDS];      /* the decoder's copy of the fds encoded */
   struct rt_stats {     /* shared with the child running each case */
      unsigned truncations;
      unsigned corruptions;
      unsigned mutations;
   } *stats;
};

/* Decodes one request of a given command into throw-away arguments. */
typedef bool (*rt_decode_fn)(struct wire_dec *d);

struct rt_case {
   const char *name;
   void (*run)(struct rt *t);
};

/* Generated. */
extern const struct rt_case rt_cases[];
extern const unsigned rt_case_count;
bool rt_is_pointer_type(VkObjectType type);

/* Starts a variant of a case: resets the buffers, the arena and the object
 * pools. */
void rt_begin(struct rt *t, const char *cmd, const char *variant);
/* Records a failure of the command under test (the first one is printed). */
void rt_fail(struct rt *t, const char *fmt, ...) UTIL_PRINTF(2, 3);

/* Fails the case because what was decoded differs from what was encoded
 * in `what` (a struct member or parameter); returns false. */
bool rt_differs(struct rt *t, const char *what);

/* A sample pointer handle: a fresh object header holding id. */
void *rt_obj(uint64_t id);
/* The "host handle" the lookup callback gives for id. */
uint64_t rt_host(uint64_t id, VkObjectType type);

/* A decoder over what e holds, with the test's lookup and new_id. */
void rt_dec_init(struct rt *t, struct wire_dec *d, const struct wire_enc *e);
/* Checks a decode ended without a fatal error and consumed everything. */
bool rt_dec_done(struct rt *t, const struct wire_dec *d, bool ok, const char *what);
/* Checks two encodings are the same bytes. */
bool rt_same(struct rt *t, const struct wire_enc *x, const struct wire_enc *y, const char *what);

/* Decodes every proper prefix of t->a; each must be fatal. */
void rt_truncations(struct rt *t, rt_decode_fn decode);
/* Random word replacements of the request: decoded without crashing. */
void rt_mutations(struct rt *t, rt_decode_fn decode);
/* Decodes t->a with the u32 at offset replaced by several wrong values;
 * each must be fatal. */
void rt_corrupt_count(struct rt *t, rt_decode_fn decode, size_t offset, uint32_t expect,
                      const char *what);

/* Deterministic, distinct output values for the daemon side. */
void rt_fill_bytes(void *p, size_t n, uint32_t *seed);

static inline uint32_t
rt_u32(uint32_t *seed)
{
   return (*seed)++ * 2654435761u + 0x1000u;
}

static inline uint64_t
rt_u64(uint32_t *seed)
{
   uint64_t v = rt_u32(seed);
   return v << 32 | (v ^ 0x5a5a5a5au);
}

static inline float
rt_float(uint32_t *seed)
{
   return (float)((*seed)++ & 0xffff) + 0.25f;
}

static inline double
rt_double(uint32_t *seed)
{
   return (double)((*seed)++) + 0.125;
}
