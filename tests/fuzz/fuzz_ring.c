/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the ring consumer (shared/util_ring.c), as a
 * worker reads a hostile client's command ring: the input is where the
 * consumer's tail starts, how far the producer claims to have published
 * and the bytes in the ring.  The consumer must return messages or an
 * error, never read outside the ring or take more than its limit.
 *
 *   input: u64 start, u32 published (bytes past start), ring bytes...
 *
 * Walking the entries from start as their sizes say, the harness turns
 * tag words of 1 within `published` bytes into their positions' tags
 * (util_ring_tag), up to the first other word, so that inputs reach past
 * the first entry; a consumer that finds no tag waits for the producer,
 * which is gone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util_ring.h"

#define RING (64u * 1024u)
#define MAX_MESSAGE (256u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   static void *map;
   static int sv[2] = {-1, -1};
   if (!map) {
      int fd;
      if (util_ring_create(RING, RING, &fd, &map) < 0 ||
          socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
         abort();
      close(fd);
      close(sv[0]); /* the producer is gone: an empty ring ends in an error */
   }
   uint64_t start = 0;
   uint32_t published = 0;
   if (size >= sizeof(start)) {
      memcpy(&start, data, sizeof(start));
      data += sizeof(start);
      size -= sizeof(start);
   }
   if (size >= sizeof(published)) {
      memcpy(&published, data, sizeof(published));
      data += sizeof(published);
      size -= sizeof(published);
   }
   struct util_ring_header *h = map;
   uint8_t *ring = (uint8_t *)map + UTIL_RING_HEADER_SIZE;
   /* the ring as zeroes but for this input's bytes: clear what the last
    * one wrote */
   static uint64_t last_start;
   static size_t last_size;
   for (size_t i = 0; i < last_size; i++)
      ring[(last_start + i) & (RING - 1)] = 0;
   if (size > RING)
      size = RING;
   for (size_t i = 0; i < size; i++)
      ring[(start + i) & (RING - 1)] = data[i];
   last_start = start;
   last_size = size;
   const uint64_t base = start & ~(uint64_t)63; /* where the consumer starts */
   for (uint64_t pos = base; pos - base < published && pos - base < RING;) {
      uint8_t *tag = ring + (pos & (RING - 1));
      uint64_t t;
      uint32_t n;
      memcpy(&t, tag, sizeof(t));
      memcpy(&n, ring + ((pos + 8) & (RING - 1)), sizeof(n));
      if (t != 1)
         break;
      t = util_ring_tag(pos);
      memcpy(tag, &t, sizeof(t));
      pos = (pos + sizeof(struct util_ring_entry) + n + 63) & ~(uint64_t)63;
   }
   atomic_store(&h->command.tail, start);
   atomic_store(&h->command.head, start + published);
   atomic_store(&h->command.consumer_state, 0);

   struct util_ring r;
   util_ring_init(&r, map, RING, RING, true, false, MAX_MESSAGE);
   const struct util_ring_wait w = {.socket_fd = sv[1], .slice_ns = 1000000};
   for (unsigned n = 0; n < 64; n++) {
      struct util_msg m;
      if (util_ring_recv(&r, &w, &m) < 0)
         break;
      if (m.size > MAX_MESSAGE || (m.type != UTIL_MSG_STREAM && m.type != UTIL_MSG_CONTROL))
         abort();
      /* touch every byte, as a decoder would */
      volatile uint8_t sum = 0;
      for (size_t i = 0; i < m.size; i++)
         sum += ((const uint8_t *)m.data)[i];
      (void)sum;
      util_msg_close_fds(&m);
   }
   util_ring_finish(&r);
   return 0;
}
