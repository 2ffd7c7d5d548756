/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The rings: a connection's messages travel through shared memory.
 *
 * One memfd per connection, created and sealed (against shrinking and
 * growing) by the client and sent to the daemon once, holds a header page
 * and two byte rings: commands (client to worker) and replies (worker to
 * client, daemon messages included).  Each ring has one producer and one
 * consumer; head (bytes written) and tail (bytes read) are free-running
 * 64-bit counters on cache lines of their own.
 *
 * A message is one or more entries: a struct util_ring_entry and its
 * payload, starting on a cache line, wrapping around the end of the ring as
 * it falls.  An entry is published by its tag (util_ring_tag of its
 * position), stored last: the consumer polls the tag word at its tail, so
 * a message of up to 48 bytes is one cache line, written once and read
 * once, with no separate head to read first.  A tag is the position mixed
 * with a constant, so no word an earlier lap left there (an older tag, or
 * a payload's offsets and counts) passes for it.  A message larger than a
 * quarter of the ring streams through it in fragments (UTIL_RING_MORE on
 * all but the last), the producer waiting for room as the consumer drains:
 * what a connection has in flight is bounded by the ring, whatever the
 * message size.  File descriptors never enter shared memory: the producer
 * sends them on the socket (a UTIL_MSG_FDS packet) before the entry that
 * counts them, and the consumer takes them from there.
 *
 * Sleeping: a consumer that found the ring empty for spin_ns sets its
 * state word to UTIL_RING_SLEEPING, looks once more and sleeps on it (a
 * futex); a producer that publishes (the tag's store and its look at the
 * word are sequentially consistent) swaps the word back and wakes it only
 * when it was sleeping, so a busy connection makes no system call.  A
 * producer waiting for room does the same on the other word.  Sleeps last at
 * most slice_ns, after which the waiter checks that its peer is still there
 * (the socket has not hung up): a dead peer never leaves anyone waiting.
 *
 * Each end keeps what it needs of the other's word: the producer the tail
 * it last read (it reads the tail again only when that leaves no room), the
 * consumer publishes its tail when it has drained an eighth of the ring,
 * when the producer sleeps for room, and before it waits itself, so a busy
 * connection's messages cost no cache line that nobody needs now.
 *
 * The consumer trusts nothing in shared memory: it keeps its own tail,
 * reads each entry's header once after its tag, checks its bounds (a
 * fragment is at most a quarter of the ring) and copies each message out before
 * anyone decodes it, so a producer scribbling on the ring can only hurt its
 * own messages.  Any inconsistency is -EPROTO.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util_transport.h"

#define UTIL_RING_HEADER_SIZE 4096u
#define UTIL_RING_MIN_SIZE (64u * 1024u)
#define UTIL_RING_MAX_SIZE (64u << 20)

enum util_ring_state {
   UTIL_RING_AWAKE = 0,
   UTIL_RING_SLEEPING = 1,
};

/* One direction's words. */
struct util_ring_ctrl {
   /* bytes published by the producer, for observers: the consumer goes by
    * the entries' tags */
   _Alignas(64) _Atomic uint64_t head;
   _Alignas(64) _Atomic uint64_t tail;          /* bytes consumed by the consumer */
   _Alignas(64) _Atomic uint32_t consumer_state; /* enum util_ring_state */
   _Alignas(64) _Atomic uint32_t producer_state; /* enum util_ring_state: waits for room */
};

/* The header page. */
struct util_ring_header {
   struct util_ring_ctrl command; /* client -> worker */
   struct util_ring_ctrl reply;   /* worker -> client */
};
_Static_assert(sizeof(struct util_ring_header) <= UTIL_RING_HEADER_SIZE, "one page");

enum util_ring_entry_flags {
   UTIL_RING_MORE = 1u << 0, /* more fragments of this message follow */
};

struct util_ring_entry {
   uint64_t tag;   /* util_ring_tag(position), stored last */
   uint32_t size;  /* payload bytes of this entry */
   uint8_t type;   /* enum util_msg_type (every fragment the same) */
   uint8_t flags;  /* enum util_ring_entry_flags */
   uint16_t n_fds; /* first fragment: fds the socket carries for the message */
};
_Static_assert(sizeof(struct util_ring_entry) == 16, "two words");

/* The tag of an entry at pos: different for every position, never 0, and
 * not a number a payload holds by chance. */
static inline uint64_t
util_ring_tag(uint64_t pos)
{
   return pos ^ 0xa0761d6478bd642full;
}

/* How long and on what a side waits. */
struct util_ring_wait {
   int socket_fd;              /* the connection's socket: its hang-up ends waits */
   const atomic_bool *closing; /* NULL, or set by another thread to end waits */
   uint64_t spin_ns;           /* polling (util_spin.h) before sleeping */
   /* NULL, or the receiver's adaptive window (util_spin.h), in place of
    * spin_ns for util_ring_recv */
   struct util_spin_window *window;
   uint64_t slice_ns;          /* longest sleep between checks of the peer */
   uint64_t timeout_ns;        /* util_ring_recv: -ETIMEDOUT after this (0: never) */
   /* util_ring_send: when it began to wait for room (CLOCK_MONOTONIC ns),
    * 0 when it does not wait (NULL: not noted) */
   _Atomic uint64_t *blocked_since;
   /* NULL, or counts the waits that slept before what they waited for came
    * (profiles) */
   uint64_t *slept;
};

/* One end's view of one direction. */
struct util_ring {
   struct util_ring_ctrl *ctrl;
   uint8_t *data;
   uint32_t size; /* a power of two */
   uint64_t pos;  /* our own head (producer) or tail (consumer) */
   uint64_t want; /* producer: the room it waits for */
   uint64_t seen; /* producer: the tail last read; consumer: the tail last published */
   /* consumer: the message being reassembled */
   uint8_t *buf;
   size_t cap;
   size_t max_size;
   struct util_msg_reader fd_reader;
};

/* The memfd's size for rings of these sizes (powers of two within
 * UTIL_RING_MIN_SIZE..UTIL_RING_MAX_SIZE): 0 when they are not. */
uint64_t util_ring_map_size(uint32_t command_size, uint32_t reply_size);

/* Creates the client's memfd (sealed against shrinking and growing) and
 * maps it. */
int util_ring_create(uint32_t command_size, uint32_t reply_size, int *ret_fd, void **ret_map);
/* Maps a memfd a client sent after checking that it is one, sealed against
 * shrinking, of the size the sizes need. */
int util_ring_map(int fd, uint32_t command_size, uint32_t reply_size, void **ret_map);
void util_ring_unmap(void *map, uint32_t command_size, uint32_t reply_size);

/* Sets up one end: command true for the command ring, producer true for the
 * side that writes it.  A consumer takes messages of at most max_size. */
void util_ring_init(struct util_ring *r, void *map, uint32_t command_size, uint32_t reply_size,
                    bool command, bool producer, size_t max_size);
void util_ring_finish(struct util_ring *r);

/* Publishes a message (fds first, on the socket, then the entries),
 * waiting for room while the consumer drains; timeout_ns UINT64_MAX waits
 * as long as the peer lives.  -ETIMEDOUT: the consumer did not make room in
 * time (part of the message may be out: the connection is unusable);
 * -ECONNRESET: the peer is gone or closing was set. */
int util_ring_send(struct util_ring *r, const struct util_ring_wait *w, uint32_t type,
                   const void *data, size_t size, const int *fds, unsigned n_fds,
                   uint64_t timeout_ns);

/* util_ring_send without waking a sleeping consumer but to make room: the
 * message waits for the next util_ring_send (or the consumer's next look,
 * at the end of its sleep's slice).  For messages nothing waits on yet,
 * where waking the consumer would cost more than it gains: on a machine of
 * few CPUs the woken consumer takes the producer's own CPU. */
int util_ring_send_quiet(struct util_ring *r, const struct util_ring_wait *w, uint32_t type,
                         const void *data, size_t size);
/* Wakes the consumer if it sleeps: what util_ring_send_quiet left for it
 * goes now (the producer's side; any thread). */
void util_ring_nudge(struct util_ring *r);

/* Takes the next whole message, waiting for it as long as the peer lives
 * (msg's payload stays valid until the next call; its fds are the
 * caller's).  -ECONNRESET: the peer is gone or closing was set; -EPROTO:
 * the ring or the socket broke the protocol; -EMSGSIZE: over max_size. */
int util_ring_recv(struct util_ring *r, const struct util_ring_wait *w, struct util_msg *msg);

/* About how many bytes the producer has put out that the consumer has not
 * taken (the consumer's side: a look without waiting, at a word the
 * producer writes, so a hint and no more: util_ring_recv checks what it
 * takes). */
uint64_t util_ring_pending_bytes(const struct util_ring *r);

/* Wakes the consumer of r (for a thread that set closing). */
void util_ring_wake_consumer(struct util_ring *r);
