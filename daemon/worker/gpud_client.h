/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A client served by a worker (gpud_client.c): its context and every layer
 * of the worker under it.
 */

#include "gpud_context.h"

/* Takes ownership of fd; status must outlive the client. */
int gpud_client_create(const struct gpud_context_info *info, const struct daemon_host *host,
                       const struct gpud_context_ops *ops, struct daemon_status_page *status,
                       int fd, struct gpud_context **ret_ctx);
/* Serves the client until it leaves, breaks the protocol or stops reading;
 * ctx->end_reason says which. */
void gpud_client_run(struct gpud_context *ctx);
/* Destroys every host object of the client (waiting for its work to end)
 * and frees its context. */
void gpud_client_destroy(struct gpud_context *ctx);
