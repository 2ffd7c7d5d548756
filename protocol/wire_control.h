/* SPDX-License-Identifier: MIT */
#pragma once

/* Control-plane helpers: protobuf-c messages of protocol/gpud.proto sent as
 * UTIL_MSG_CONTROL messages. */

#include <stddef.h>
#include <stdint.h>

#include "gpud.pb-c.h"

/* Packs and sends msg. */
int wire_control_send(int fd, const Gpud__ControlMessage *msg);
/* The same with fds beside it (may be NULL) and a time limit in ms
 * (negative: none). */
int wire_control_send_timeout(int fd, const Gpud__ControlMessage *msg, const int *fds,
                              unsigned n_fds, int timeout_ms);

/* Unpacks a received control payload; NULL when it is malformed. */
Gpud__ControlMessage *wire_control_unpack(const void *data, size_t size);
void wire_control_free(Gpud__ControlMessage *msg);

/* Packs msg into a new buffer (free() it); NULL when out of memory. */
void *wire_control_pack(const Gpud__ControlMessage *msg, size_t *ret_size);

/* The server-worker channel. */
int wire_worker_send(int fd, const Gpud__WorkerMessage *msg, const int *fds, unsigned n_fds);
void *wire_worker_pack(const Gpud__WorkerMessage *msg, size_t *ret_size);
Gpud__WorkerMessage *wire_worker_unpack(const void *data, size_t size);
void wire_worker_free(Gpud__WorkerMessage *msg);

/* Sends a client's RingSetup with its memfd (util_ring.h), within
 * timeout_ms (-1: no limit). */
int wire_control_send_ring_setup(int fd, uint32_t command_size, uint32_t reply_size, int memfd,
                                 int timeout_ms);

/* m made a Disconnect (d) carrying reason (NULL: none), for whichever way
 * the caller sends it. */
void wire_control_disconnect(Gpud__ControlMessage *m, Gpud__Disconnect *d, const char *reason);
/* Sends a Disconnect carrying reason (best effort). */
void wire_control_send_disconnect(int fd, const char *reason);
