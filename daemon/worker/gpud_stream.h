/* SPDX-License-Identifier: MIT */
#pragma once

/* A client's stream of commands, decoded and run (gpud_stream.c). */

#include <stddef.h>
#include <stdint.h>

struct gpud_context;

/* Runs the commands of one message from the client's ring; fds are the
 * message's (-1 once a command took one), the rest are closed.  Negative
 * when the client must be disconnected (the reason is logged and sent). */
int gpud_stream_process(struct gpud_context *ctx, const uint8_t *data, size_t size, int *fds,
                        unsigned n_fds);
