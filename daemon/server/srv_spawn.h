/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting and ending workers (srv_spawn.c). */

#include "srv_registry.h"

int srv_spawn_worker(struct srv_server *server, struct srv_worker *worker);
/* Ends a worker the server no longer wants (spare at shutdown, killed
 * client): a process gets SIGKILL, a thread's client socket is shut. */
void srv_kill_worker(struct srv_worker *worker, const char *why);
