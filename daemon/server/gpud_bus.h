/* SPDX-License-Identifier: MIT */
#pragma once

/* The daemon on D-Bus (gpud_bus.c). */

#include "gpud_registry.h"

/* Org.gpud.Daemon1 on D-Bus (cfg.bus), once the device is
 * known; a bus that cannot be reached is logged, never fatal. */
void gpud_bus_start(struct gpud_server *server);
void gpud_bus_stop(struct gpud_server *server);
/* Signals, when on a bus. */
void gpud_bus_client_connected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_disconnected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_faulted(struct gpud_server *server, uint64_t client_id, const char *reason);
