/* SPDX-License-Identifier: MIT */
#pragma once

/* Restarts: the server's side of handing workers to the next server (gpud_adopt.c). */

#include "gpud_registry.h"

/* Restarts.  init, at start: the private directory beside
 * the socket and the ids earlier servers gave (their workers keep theirs);
 * begin, once the device is known: the workers of earlier servers still
 * serving are adopted (server->adopted takes each). */
int gpud_adopt_init(struct gpud_server *server);
void gpud_adopt_begin(struct gpud_server *server);
/* For a worker about to serve a client: a token, the record an adopting
 * server reads and the socket it adopts on (bound, for the worker to
 * listen on); *ret_fd -1 when there are no restarts. */
int gpud_adopt_prepare(struct gpud_worker *worker, struct gpud_client *client,
                       uint8_t token[32], int *ret_fd);
/* The worker ended: its record and socket go. */
void gpud_adopt_forget(struct gpud_worker *worker);
/* A client id was given: the mark stays ahead of it. */
void gpud_adopt_note_id(struct gpud_server *server, uint64_t id);
void gpud_adopt_finish(struct gpud_server *server);
