/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The client side's interface to the generated entrypoints (icd_gen.c):
 * what they call, and the ICD implements: the connection of an object, calls
 * to the daemon, command-buffer streams and handle objects.  The generated
 * code is written against this header alone.
 */

#include <stdbool.h>
#include <stdint.h>

#include "util_transport.h"
#include "wire.h"

struct icd_connection;

/* One call in flight: the request is encoded straight into the connection's
 * stream while its send lock is held (between icd_call_begin and
 * icd_call_end); a synchronous call then waits for its reply. */
struct icd_call {
   struct icd_connection *conn;
   size_t cmd_offset;
   uint32_t op;
   uint32_t seq;
   bool sync;
   bool cacheable;
   bool done;
   VkResult status;
   struct icd_call *next_pending;
   /* the reply */
   struct wire_dec reply;
   void *reply_data;
   size_t reply_size;
   int fds[UTIL_MSG_MAX_FDS];
   unsigned n_fds;
   /* the request, kept for the physical-device query cache */
   void *key;
   size_t key_size;
   /* a small reply's bytes (reply_data points here; larger ones are
    * allocated); last: icd_call_begin clears what comes before */
   uint64_t small[32];
};

struct icd_connection *icd_connection_of(const void *dispatchable);
/* Whether the daemon is gone (every call now returns VK_ERROR_DEVICE_LOST). */
bool icd_connection_lost(struct icd_connection *conn);
/* The objects the daemon keeps for the client, counted as they come and go
 * (never fewer than it holds), and whether a create may go without waiting
 * for its result: far enough from the client's object limit that the
 * daemon cannot refuse it. */
void icd_connection_count_objects(struct icd_connection *conn, int64_t delta);
bool icd_connection_room(struct icd_connection *conn);

struct wire_enc *icd_call_begin(struct icd_call *call, struct icd_connection *conn,
                                uint32_t op, bool sync, bool cacheable);
/* Async: queues the command (flushing when the stream is large).  Sync:
 * sends everything queued and waits for the reply; returns VK_SUCCESS when
 * call->reply holds it, else VK_ERROR_DEVICE_LOST or an allocation error. */
VkResult icd_call_end(struct icd_call *call);
/* Sends what is queued now (after queue submissions). */
VkResult icd_connection_flush(struct icd_connection *conn);
/* Releases the reply; returns VK_ERROR_DEVICE_LOST (and marks the
 * connection lost) when the reply was malformed. */
VkResult icd_call_reply_done(struct icd_call *call);
/* Takes ownership of the reply's first fd, or -1. */
int icd_call_take_fd(struct icd_call *call);

/* Command buffers record into their own stream, sent to the daemon in
 * chunks as it grows: the encoder for the next command (NULL: the command
 * is dropped, outside a recording), and its end (which may send a chunk). */
struct wire_enc *icd_cmd_stream(VkCommandBuffer cb, uint32_t op);
void icd_cmd_stream_end(VkCommandBuffer cb);
/* A recorded command of a fixed size (params bytes after its header) in
 * one piece: where its parameters go (NULL: the command is dropped, outside
 * a recording or out of memory).  A chunk that has grown past its size goes
 * out first. */
uint8_t *icd_cmd_reserve(VkCommandBuffer cb, uint32_t op, uint32_t params);
/* Recording failed in the ICD: vkEndCommandBuffer will say so. */
void icd_cmd_buffer_fail(VkCommandBuffer cb);
/* vkEndCommandBuffer: sends the recording's last chunk, marked as its end. */
VkResult icd_cmd_buffer_end(VkCommandBuffer cb);

/* Client objects for new handles: a pointer object for the types listed in
 * ICD_POINTER_HANDLES, else just a fresh id. */
uint64_t icd_handle_create(struct icd_connection *conn, VkObjectType type, const void *parent);
void icd_handle_destroy(VkObjectType type, uint64_t handle);
void *icd_tmp_handles(size_t count, size_t size);
void icd_tmp_handles_free(void *p);
