/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting and ending workers (gpud_spawn.c). */

#include "gpud_registry.h"

int gpud_spawn_worker(struct gpud_server *server, struct gpud_worker *worker);
/* Ends a worker the server no longer wants (spare at shutdown, killed
 * client): a process gets SIGKILL, a thread's client socket is shut. */
void gpud_kill_worker(struct gpud_worker *worker, const char *why);
