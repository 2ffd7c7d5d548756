/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The transport: one SOCK_SEQPACKET Unix socket per client connection.
 *
 * A *message* is what the layers above exchange: a type, a payload and up to
 * UTIL_MSG_MAX_FDS file descriptors.  On the socket a message travels as one
 * or more *packets*, each starting with a struct util_packet_header.  Every
 * packet of a message but the last carries UTIL_PACKET_MORE; the fds travel
 * with the first packet only.  A packet carries at most UTIL_PACKET_MAX_PAYLOAD
 * payload bytes, so any message fits the default socket buffers.
 *
 * All functions return 0 or a negative errno; none logs above debug.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util_list.h"

#define UTIL_MSG_MAX_FDS 8
#define UTIL_PACKET_MAX_PAYLOAD (64u * 1024u)

enum util_msg_type {
   UTIL_MSG_CONTROL = 1, /* protobuf-c control plane (protocol/gpud.proto) */
   UTIL_MSG_STREAM = 2,  /* Vulkan command stream (protocol/wire.h) */
   UTIL_MSG_FDS = 3,     /* no payload: the fds of a message in a ring (util_ring.h) */
};

enum util_packet_flags {
   UTIL_PACKET_MORE = 1u << 0,
};

struct util_packet_header {
   uint32_t type;  /* enum util_msg_type */
   uint32_t flags; /* enum util_packet_flags */
};

/* Receives messages from one socket, reassembling packets.  The payload of
 * the last message stays valid until the next util_msg_recv() or
 * util_msg_reader_finish() on the same reader. */
struct util_msg_reader {
   uint8_t *buf;
   size_t size;
   size_t cap;
   size_t max_size; /* messages larger than this are a protocol error */
   /* How the fds of a refused message are closed (NULL: close()); a server
    * may want that off its loop. */
   void (*close_fd)(int fd, void *data);
   void *close_data;
};

struct util_msg {
   uint32_t type;
   const void *data;
   size_t size;
   int fds[UTIL_MSG_MAX_FDS]; /* owned by the caller after a successful recv */
   unsigned n_fds;
};

/* Creates a listening socket at path (unlinking a stale socket file first).
 * The parent directory must exist. */
int util_socket_listen(const char *path, int *ret_fd);
/* Accepts with SOCK_CLOEXEC; returns -EAGAIN when nothing is pending on a
 * non-blocking listener. */
int util_socket_accept(int listen_fd, int *ret_fd);
int util_socket_connect(const char *path, int *ret_fd);

/* Every daemon's socket a client looks for: GPUD_SOCKET's colon-separated
 * list, else the *.sock in $XDG_RUNTIME_DIR/gpud/ and /run/gpud/ (each
 * folder in name order). NULL-terminated; NULL when out of memory. */
char **util_socket_paths(void);
void util_socket_paths_free(char **paths);

/* Sends a whole message (blocking; MSG_NOSIGNAL).  Callers that share a
 * socket between threads serialise calls themselves. */
int util_msg_send(int fd, uint32_t type, const void *data, size_t size,
                  const int *fds, unsigned n_fds);

/* The same with a time limit: the whole message goes out within timeout_ms
 * (-1: no limit), never blocking inside sendmsg(); returns -ETIMEDOUT when
 * the peer did not read it in time.  Part of the message may have
 * gone out then: the connection is unusable. */
int util_msg_send_timeout(int fd, uint32_t type, const void *data, size_t size,
                          const int *fds, unsigned n_fds, int timeout_ms);

/* Messages waiting to go out on a non-blocking socket, for event loops that
 * must never wait for a peer to read. */
struct util_msg_queue {
   struct util_list packets;
   size_t bytes; /* queued, headers included */
};

void util_msg_queue_init(struct util_msg_queue *q);
void util_msg_queue_finish(struct util_msg_queue *q);
/* Queues a whole message; the fds are duplicated (the caller keeps its own). */
int util_msg_queue_push(struct util_msg_queue *q, uint32_t type, const void *data,
                        size_t size, const int *fds, unsigned n_fds);
/* Sends what the socket takes without blocking: 0 when the queue is empty,
 * -EAGAIN when the socket is full (wait for POLLOUT), else an error. */
int util_msg_queue_flush(int fd, struct util_msg_queue *q);

void util_msg_reader_init(struct util_msg_reader *r, size_t max_size);
void util_msg_reader_finish(struct util_msg_reader *r);

/* Receives one whole message (blocking).  Returns -ECONNRESET on orderly
 * shutdown or reset by the peer, -EPROTO for a malformed packet sequence
 * (short header, unknown type, type changing inside a message, fds on a
 * continuation packet, more than UTIL_MSG_MAX_FDS fds, truncated control
 * data, message over max_size), -EMSGSIZE for a truncated packet.  On any
 * error every fd that arrived is closed. */
int util_msg_recv(int fd, struct util_msg_reader *r, struct util_msg *ret_msg);

/* Receives one message without blocking, for event loops: -EAGAIN when
 * nothing is waiting, and a message of more than one packet is -EPROTO (so
 * a peer can never make the caller wait for the rest of one). */
int util_msg_recv_packet(int fd, struct util_msg_reader *r, struct util_msg *ret_msg);

/* Closes every fd in msg that the caller has not moved out (set to -1). */
void util_msg_close_fds(struct util_msg *msg);

struct ucred;
/* Who a Unix socket's peer was when it connected (SO_PEERCRED): 0, or a
 * negative errno with *ret zeroed. */
int util_peer_cred(int fd, struct ucred *ret);
