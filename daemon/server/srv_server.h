/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The server: one libevent loop that accepts connections, checks who the
 * peer is against the access policy, does the handshake, keeps the client
 * registry and the accounting (memory per client and per user, connections
 * per user), serves gpudctl, talks to systemd, and starts the workers that
 * run clients.  It never calls the host driver for a client.
 */

#include "srv_registry.h"

/* Runs the server until SIGTERM; returns the exit status. */
int srv_server_run(const struct srv_config *cfg);
