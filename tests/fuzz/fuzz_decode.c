/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the daemon's decoder alone: each input is one
 * stream message, as a client's command ring delivers it, walked command by
 * command as the worker walks it (headers, sizes, ops) and each command's
 * arguments decoded as the worker decodes them (lengths, counts, pointers,
 * strings, sTypes and pNext chains, enum values, handles, new ids, file
 * descriptors), with no host driver behind it.  fuzz_stream runs the same
 * inputs through the executors and a host driver, a thousand times slower;
 * this one reaches the 10^8 executions of a long run.
 *
 * Handles: ids below 2^16 are objects of any type the decoder asks for
 * (the id stands for the host handle), others are unknown; a new object's
 * id must be 2^16 or more.  Each message comes with up to 3 file
 * descriptors (its first byte says how many, mod 4).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KNOWN_IDS (1u << 16)
#define ARENA_LIMIT (64u << 20)

static uint64_t
lookup(struct wire_dec *d, uint64_t id, VkObjectType type)
{
   (void)type;
   if (id >= KNOWN_IDS) {
      wire_dec_fail(d, "unknown object");
      return 0;
   }
   return id;
}

static bool
new_id(struct wire_dec *d, uint64_t id)
{
   (void)d;
   return id >= KNOWN_IDS;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   static struct wire_arena *arena;
   if (!arena)
      arena = wire_arena_create(ARENA_LIMIT);
   int fds[3];
   unsigned n_fds = size ? data[0] % 4 : 0;
   n_fds = n_fds > 3 ? 3 : n_fds;
   for (unsigned i = 0; i < n_fds; i++)
      fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
   /* the worker's walk of a stream message (gpud_stream_process), into the
    * recorded commands of a recording's chunks (gpud_replay.c) */
   size_t in_chunk = 0; /* bytes of the chunk being walked */
   while (size >= sizeof(struct wire_cmd_header)) {
      struct wire_cmd_header h;
      memcpy(&h, data, sizeof(h));
      if (h.size < sizeof(h) || h.size > size || (h.size & 3))
         break;
      if (h.op == WIRE_OP_CHUNK && !in_chunk && h.size >= sizeof(struct wire_chunk_header)) {
         in_chunk = h.size - sizeof(struct wire_chunk_header);
         data += sizeof(struct wire_chunk_header);
         size -= sizeof(struct wire_chunk_header);
         continue;
      }
      if (in_chunk) {
         if (h.size > in_chunk || h.op >= WIRE_OP_COUNT || !wire_op_recorded[h.op])
            break;
         in_chunk -= h.size;
      }
      if (h.op == 0 || h.op >= WIRE_OP_COUNT || !fuzz_decoders[h.op])
         break;
      wire_arena_reset(arena);
      struct wire_dec d;
      wire_dec_init(&d, data + sizeof(h), h.size - sizeof(h), arena);
      d.lookup = lookup;
      d.new_id = new_id;
      d.fds = fds;
      d.n_fds = n_fds;
      d.check_enums = true;
      bool ok = fuzz_decoders[h.op](&d) && !d.fatal;
      /* what the command took is the executor's; here nobody's */
      wire_dec_close_taken(&d);
      if (!ok)
         break;
      data += h.size;
      size -= h.size;
   }
   for (unsigned i = 0; i < n_fds; i++) {
      if (fds[i] >= 0)
         close(fds[i]);
   }
   return 0;
}
