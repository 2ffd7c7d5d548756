/* SPDX-License-Identifier: MIT */
#pragma once

/* Restarts: the server's side of handing workers to the next server (srv_adopt.c). */

#include "srv_registry.h"

/* Restarts.  init, at start: the private directory beside
 * the socket and the ids earlier servers gave (their workers keep theirs);
 * begin, once the device is known: the workers of earlier servers still
 * serving are adopted (server->adopted takes each). */
int srv_adopt_init(struct srv_server *server);
void srv_adopt_begin(struct srv_server *server);
/* For a worker about to serve a client: a token, the record an adopting
 * server reads and the socket it adopts on (bound, for the worker to
 * listen on); *ret_fd -1 when there are no restarts. */
int srv_adopt_prepare(struct srv_worker *worker, struct srv_client *client,
                       uint8_t token[32], int *ret_fd);
/* The worker ended: its record and socket go. */
void srv_adopt_forget(struct srv_worker *worker);
/* A client id was given: the mark stays ahead of it. */
void srv_adopt_note_id(struct srv_server *server, uint64_t id);
void srv_adopt_finish(struct srv_server *server);
