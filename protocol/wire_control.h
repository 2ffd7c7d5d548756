/* SPDX-License-Identifier: MIT */
#pragma once

/* Control-plane helpers: protobuf-c messages of protocol/gpud.proto sent as
 * UTIL_MSG_CONTROL messages. */

#include <stddef.h>

#include "gpud.pb-c.h"

/* Packs and sends msg; fds (may be NULL) travel with it. */
int wire_control_send(int fd, const Gpud__ControlMessage *msg);

/* Unpacks a received control payload; NULL when it is malformed. */
Gpud__ControlMessage *wire_control_unpack(const void *data, size_t size);
void wire_control_free(Gpud__ControlMessage *msg);

/* Sends a Disconnect carrying reason (best effort). */
void wire_control_send_disconnect(int fd, const char *reason);
