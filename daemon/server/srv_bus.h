/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon on D-Bus (srv_bus.c). */

#include "srv_registry.h"

/* Org.gpud.Daemon1 on D-Bus (cfg.bus), once the device is
 * known; a bus that cannot be reached is logged, never fatal. */
void srv_bus_start(struct srv_server *server);
void srv_bus_stop(struct srv_server *server);
/* Signals, when on a bus. */
void srv_bus_client_connected(struct srv_server *server, const struct srv_client *client);
void srv_bus_client_disconnected(struct srv_server *server, const struct srv_client *client);
void srv_bus_client_faulted(struct srv_server *server, uint64_t client_id, const char *reason);
