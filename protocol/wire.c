/* SPDX-License-Identifier: MIT */
/*
 * The wire's primitives (wire.h): the encoder's growing buffer, the
 * decoder's checked reads and its per-command arena, command headers.
 */
#include "wire.h"

#include <stdlib.h>

void
wire_enc_init(struct wire_enc *e)
{
   memset(e, 0, sizeof(*e));
}

void
wire_enc_finish(struct wire_enc *e)
{
   free(e->data);
   memset(e, 0, sizeof(*e));
}

void
wire_enc_reset(struct wire_enc *e)
{
   e->size = 0;
   e->oom = false;
   e->n_fds = 0;
}

void *
wire_enc_grow(struct wire_enc *e, size_t n)
{
   if (e->oom)
      return NULL;
   size_t need = e->size + n;
   if (need < e->size) {
      e->oom = true;
      return NULL;
   }
   size_t cap = e->cap ? e->cap : 4096;
   while (cap < need)
      cap *= 2;
   uint8_t *data = realloc(e->data, cap);
   if (!data) {
      e->oom = true;
      return NULL;
   }
   e->data = data;
   e->cap = cap;
   void *p = e->data + e->size;
   e->size += n;
   return p;
}

size_t
wire_enc_begin_cmd(struct wire_enc *e, uint32_t op, uint32_t flags, uint32_t seq)
{
   size_t offset = e->size;
   struct wire_cmd_header *h = wire_enc_reserve(e, sizeof(*h));
   if (h)
      *h = (struct wire_cmd_header){.op = op, .flags = flags, .seq = seq};
   return offset;
}

void
wire_enc_end_cmd(struct wire_enc *e, size_t offset)
{
   if (e->oom)
      return;
   struct wire_cmd_header *h = (struct wire_cmd_header *)(e->data + offset);
   h->size = (uint32_t)(e->size - offset);
}

/* ---- arena ------------------------------------------------------------ */

struct wire_arena_chunk {
   struct wire_arena_chunk *next;
   size_t size;
   size_t used;
   max_align_t data[];
};

struct wire_arena {
   struct wire_arena_chunk *chunks;
   size_t total;
   size_t limit;
};

struct wire_arena *
wire_arena_create(size_t limit)
{
   struct wire_arena *a = calloc(1, sizeof(*a));
   if (a)
      a->limit = limit;
   return a;
}

void
wire_arena_reset(struct wire_arena *a)
{
   if (!a)
      return;
   /* Keep the first (most recent, largest) chunk for reuse. */
   struct wire_arena_chunk *keep = a->chunks;
   if (!keep)
      return;
   struct wire_arena_chunk *c = keep->next;
   while (c) {
      struct wire_arena_chunk *next = c->next;
      free(c);
      c = next;
   }
   keep->next = NULL;
   keep->used = 0;
   a->total = keep->size;
}

size_t
wire_arena_total(const struct wire_arena *a)
{
   return a->total;
}

void
wire_arena_destroy(struct wire_arena *a)
{
   if (!a)
      return;
   struct wire_arena_chunk *c = a->chunks;
   while (c) {
      struct wire_arena_chunk *next = c->next;
      free(c);
      c = next;
   }
   free(a);
}

void *
wire_arena_alloc(struct wire_arena *a, size_t size)
{
   size = (size + 15) & ~(size_t)15;
   if (size == 0)
      size = 16;
   struct wire_arena_chunk *c = a->chunks;
   if (!c || c->size - c->used < size) {
      size_t chunk = 64 * 1024;
      while (chunk < size)
         chunk *= 2;
      if (a->total + chunk > a->limit || chunk < size)
         return NULL;
      c = malloc(sizeof(*c) + chunk);
      if (!c)
         return NULL;
      c->size = chunk;
      c->used = 0;
      c->next = a->chunks;
      a->chunks = c;
      a->total += chunk;
   }
   void *p = (uint8_t *)c->data + c->used;
   c->used += size;
   memset(p, 0, size);
   return p;
}

void *
wire_dec_alloc(struct wire_dec *d, size_t size)
{
   if (d->fatal)
      return NULL;
   d->allocated = true;
   void *p = wire_arena_alloc(d->arena, size);
   if (!p)
      wire_dec_fail(d, "command needs more memory than a client may use");
   return p;
}

const char *
wire_dec_string(struct wire_dec *d)
{
   if (!wire_dec_u32(d))
      return NULL;
   uint32_t n = wire_dec_count(d, 1);
   char *s = wire_dec_alloc(d, (size_t)n + 1);
   if (!s)
      return NULL;
   wire_dec_bytes(d, s, n);
   s[n] = '\0';
   return s;
}
