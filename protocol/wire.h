/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Vulkan command stream: primitives shared by the generated encoders and
 * decoders.  docs/protocol.md describes the format; in short:
 *
 *  - a stream message is a sequence of commands, each a struct
 *    wire_cmd_header followed by its parameters;
 *  - every value takes a multiple of 4 bytes: 8-, 16- and 32-bit values take
 *    4 bytes, 64-bit values (and size_t) 8 bytes, byte arrays are padded;
 *  - handles travel as the client-assigned 64-bit object id;
 *  - a pointer travels as a u32 presence word then what it points to; an
 *    array as presence, u32 element count and elements; a string as
 *    presence, u32 length and bytes; a pNext chain as a list of (sType, body)
 *    terminated by a zero sType.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <vulkan/vulkan_core.h>

#define WIRE_PROTOCOL_VERSION 2u

struct wire_cmd_header {
   uint32_t op;    /* WIRE_OP_* */
   uint32_t size;  /* bytes, header included, multiple of 4 */
   uint32_t flags; /* enum wire_cmd_flags */
   uint32_t seq;   /* echoed in the reply when WIRE_CMD_REPLY is set */
};

enum wire_cmd_flags {
   WIRE_CMD_REPLY = 1u << 0, /* the sender waits for a reply */
};

/* A reply is a message holding one command with this op; its seq names the
 * command it answers. */
#define WIRE_OP_REPLY 0xffffffffu

/* A chunk of one command buffer's recording: the ICD sends what an
 * application records as it records, in chunks (docs/protocol.md, "Recording
 * in chunks").  A chunk is one command of this op: a struct wire_chunk_header
 * (cmd.seq: the chunk's number in its recording, 0 for the first, whose first
 * command is vkBeginCommandBuffer; cmd.flags: enum wire_chunk_flags), then
 * recorded commands on that command buffer, each with its own header (flags
 * and seq 0).  Recorded commands travel only in chunks. */
#define WIRE_OP_CHUNK 0xfffffffeu

struct wire_chunk_header {
   struct wire_cmd_header cmd;
   uint64_t command_buffer; /* its id */
};

enum wire_chunk_flags {
   WIRE_CHUNK_END = 1u << 1, /* the recording ends after it (vkEndCommandBuffer) */
};

/* Every object the ICD hands out as a pointer starts with this header; for
 * the other non-dispatchable types the handle value is the id itself. */
struct wire_object_header {
   uintptr_t loader_data;
   uint64_t id;
};

static inline uint64_t
wire_object_id(const void *object)
{
   return object ? ((const struct wire_object_header *)object)->id : 0;
}

/* ---- encoder ---------------------------------------------------------- */

/* File descriptors travel beside the bytes of a message (SCM_RIGHTS); the
 * bytes name one by its index among the message's fds, or WIRE_NO_FD for
 * -1.  The same bound as the transport's. */
#define WIRE_MAX_FDS 8
#define WIRE_NO_FD UINT32_MAX

struct wire_enc {
   uint8_t *data;
   size_t size;
   size_t cap;
   bool oom; /* sticky: an allocation failed, the content is incomplete */
   VkDescriptorType descriptor_type; /* of the descriptor write being encoded */
   uint32_t video_sublayers; /* of the H.265 parameter set being encoded */
   /* fds to send with the bytes: borrowed (the ICD sends the application's;
    * the daemon closes its own once sent) */
   int fds[WIRE_MAX_FDS];
   unsigned n_fds;
};

void wire_enc_init(struct wire_enc *e);
void wire_enc_finish(struct wire_enc *e);
void wire_enc_reset(struct wire_enc *e);
void *wire_enc_grow(struct wire_enc *e, size_t n);

static inline void *
wire_enc_reserve(struct wire_enc *e, size_t n)
{
   n = (n + 3) & ~(size_t)3;
   if (e->cap - e->size < n)
      return wire_enc_grow(e, n);
   void *p = e->data + e->size;
   e->size += n;
   return p;
}

/* The scalars, each in as many bytes as its type, in the host's byte
 * order: wire_enc_u32, _i32, _u64, _i64, _float, _double (and wire_dec_
 * of each below). */
#define WIRE_ENC_SCALAR(name, type)                                                   \
   static inline void wire_enc_##name(struct wire_enc *e, type v)                     \
   {                                                                                  \
      void *p = wire_enc_reserve(e, sizeof(v));                                       \
      if (p)                                                                          \
         memcpy(p, &v, sizeof(v));                                                    \
   }
WIRE_ENC_SCALAR(u32, uint32_t)
WIRE_ENC_SCALAR(i32, int32_t)
WIRE_ENC_SCALAR(u64, uint64_t)
WIRE_ENC_SCALAR(i64, int64_t)
WIRE_ENC_SCALAR(float, float)
WIRE_ENC_SCALAR(double, double)

static inline void
wire_enc_fd(struct wire_enc *e, int fd)
{
   if (fd < 0) {
      wire_enc_u32(e, WIRE_NO_FD);
      return;
   }
   if (e->n_fds == WIRE_MAX_FDS) {
      e->oom = true;
      return;
   }
   wire_enc_u32(e, e->n_fds);
   e->fds[e->n_fds++] = fd;
}

static inline void
wire_enc_bytes(struct wire_enc *e, const void *src, size_t n)
{
   uint8_t *p = wire_enc_reserve(e, n);
   if (!p)
      return;
   if (n)
      memcpy(p, src, n);
   size_t padded = (n + 3) & ~(size_t)3;
   memset(p + n, 0, padded - n);
}

static inline void
wire_enc_string(struct wire_enc *e, const char *s)
{
   wire_enc_u32(e, s != NULL);
   if (!s)
      return;
   size_t n = strlen(s);
   wire_enc_u32(e, (uint32_t)n);
   wire_enc_bytes(e, s, n);
}

/* Starts a command; returns its offset for wire_enc_end_cmd(). */
size_t wire_enc_begin_cmd(struct wire_enc *e, uint32_t op, uint32_t flags, uint32_t seq);
void wire_enc_end_cmd(struct wire_enc *e, size_t offset);

/* ---- decoder ---------------------------------------------------------- */

struct wire_arena;

struct wire_dec;
typedef uint64_t (*wire_lookup_fn)(struct wire_dec *d, uint64_t id, VkObjectType type);
typedef bool (*wire_new_id_fn)(struct wire_dec *d, uint64_t id);

struct wire_dec {
   const uint8_t *p;
   const uint8_t *end;
   bool fatal;          /* sticky: the stream is malformed */
   const char *error;   /* static string saying why */
   struct wire_arena *arena;
   /* Daemon side: translates a client id into a host handle; sets fatal
    * and returns 0 when the id is unknown, foreign or of the wrong type. */
   wire_lookup_fn lookup;
   /* Daemon side: checks that an id the client picked for a new object is
    * non-zero and unused. */
   wire_new_id_fn new_id;
   void *user;
   /* the fds that came with the message; one decoded is taken (-1 here)
    * and belongs to the decoder's caller */
   int *fds;
   unsigned n_fds;
   /* the fds this command took: wire_dec_close_taken() closes them when it
    * fails (or is answered) before its executor owns them */
   int taken[WIRE_MAX_FDS];
   unsigned n_taken;
   /* Daemon side: an enum value the registry does not define is a
    * malformed command (host drivers index tables with them). */
   bool check_enums;
   /* wire_dec_alloc() used the arena since this was last cleared */
   bool allocated;
};

static inline void
wire_dec_init(struct wire_dec *d, const void *data, size_t size, struct wire_arena *arena)
{
   memset(d, 0, sizeof(*d));
   d->p = data;
   d->end = data ? d->p + size : d->p; /* NULL: nothing to decode yet */
   d->arena = arena;
}

static inline bool
wire_dec_fail(struct wire_dec *d, const char *why)
{
   if (!d->fatal) {
      d->fatal = true;
      d->error = why;
   }
   d->p = d->end;
   return false;
}

static inline size_t
wire_dec_remaining(const struct wire_dec *d)
{
   return (size_t)(d->end - d->p);
}

static inline const void *
wire_dec_take(struct wire_dec *d, size_t n)
{
   size_t padded = (n + 3) & ~(size_t)3;
   if (padded < n || wire_dec_remaining(d) < padded) {
      wire_dec_fail(d, "truncated command");
      return NULL;
   }
   const void *p = d->p;
   d->p += padded;
   return p;
}

/* 0 where the command has no more. */
#define WIRE_DEC_SCALAR(name, type)                                                   \
   static inline type wire_dec_##name(struct wire_dec *d)                             \
   {                                                                                  \
      type v = 0;                                                                     \
      const void *p = wire_dec_take(d, sizeof(v));                                    \
      if (p)                                                                          \
         memcpy(&v, p, sizeof(v));                                                    \
      return v;                                                                       \
   }
WIRE_DEC_SCALAR(u32, uint32_t)
WIRE_DEC_SCALAR(i32, int32_t)
WIRE_DEC_SCALAR(u64, uint64_t)
WIRE_DEC_SCALAR(i64, int64_t)
WIRE_DEC_SCALAR(float, float)
WIRE_DEC_SCALAR(double, double)

/* The next 32-bit value, not taken (0 when there is none). */
static inline int32_t
wire_peek_i32(const struct wire_dec *d)
{
   int32_t v = 0;
   if (wire_dec_remaining(d) >= 4)
      memcpy(&v, d->p, 4);
   return v;
}

/* An enum value; ok says whether the registry defines it. */
static inline int32_t
wire_dec_enum(struct wire_dec *d, bool ok, const char *why)
{
   int32_t v = wire_dec_i32(d);
   if (d->check_enums && !ok && !d->fatal)
      wire_dec_fail(d, why);
   return v;
}

/* Copies n bytes out of the stream (the stream may be shared memory the
 * client can still write). */
static inline void
wire_dec_bytes(struct wire_dec *d, void *dst, size_t n)
{
   const void *p = wire_dec_take(d, n);
   if (p && n)
      memcpy(dst, p, n);
   else if (n)
      memset(dst, 0, n);
}

/* Reads an element count and checks that that many elements, each taking at
 * least min_wire_size bytes, can still be in the command. */
static inline uint32_t
wire_dec_count(struct wire_dec *d, size_t min_wire_size)
{
   uint32_t n = wire_dec_u32(d);
   if (min_wire_size && n > wire_dec_remaining(d) / min_wire_size) {
      wire_dec_fail(d, "element count exceeds the command");
      return 0;
   }
   return n;
}

/* An fd: taken from the message's fds (the caller owns it), or -1. */
static inline int
wire_dec_fd(struct wire_dec *d)
{
   uint32_t i = wire_dec_u32(d);
   if (d->fatal || i == WIRE_NO_FD)
      return -1;
   if (i >= d->n_fds || !d->fds || d->fds[i] < 0) {
      wire_dec_fail(d, "bad file descriptor index");
      return -1;
   }
   int fd = d->fds[i];
   d->fds[i] = -1;
   if (d->n_taken < WIRE_MAX_FDS)
      d->taken[d->n_taken++] = fd;
   return fd;
}

/* Closes the fds the command took, for a command that ends before its
 * executor ran (a decoding error, a lost device, a refusal). */
static inline void
wire_dec_close_taken(struct wire_dec *d)
{
   for (unsigned i = 0; i < d->n_taken; i++)
      close(d->taken[i]);
   d->n_taken = 0;
}

/* A handle: the client's id, translated into the host handle. */
static inline uint64_t
wire_dec_handle(struct wire_dec *d, VkObjectType type, bool nullable)
{
   uint64_t id = wire_dec_u64(d);
   if (d->fatal)
      return 0;
   if (!id) {
      if (!nullable)
         wire_dec_fail(d, "null handle where an object is required");
      return 0;
   }
   if (!d->lookup) {
      wire_dec_fail(d, "unexpected handle");
      return 0;
   }
   return d->lookup(d, id, type);
}

/* A handle whose id was read already (the replay's fast path). */
static inline uint64_t
wire_dec_handle_id(struct wire_dec *d, uint64_t id, VkObjectType type, bool nullable)
{
   if (!id) {
      if (!nullable)
         wire_dec_fail(d, "null handle where an object is required");
      return 0;
   }
   return d->lookup(d, id, type);
}

static inline uint64_t
wire_dec_new_id(struct wire_dec *d, uint64_t id)
{
   if (d->fatal)
      return 0;
   if (!d->new_id || !d->new_id(d, id)) {
      wire_dec_fail(d, "bad id for a new object");
      return 0;
   }
   return id;
}

/* Zeroed memory that lives until the command has been executed. */
void *wire_dec_alloc(struct wire_dec *d, size_t size);

/* A string: NULL when absent; copied and NUL-terminated. */
const char *wire_dec_string(struct wire_dec *d);

/* ---- arena ------------------------------------------------------------ */

struct wire_arena *wire_arena_create(size_t limit);
/* The bytes its chunks hold. */
size_t wire_arena_total(const struct wire_arena *a);
void wire_arena_destroy(struct wire_arena *a);
void wire_arena_reset(struct wire_arena *a);
void *wire_arena_alloc(struct wire_arena *a, size_t size);
