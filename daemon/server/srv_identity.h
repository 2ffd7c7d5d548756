/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The identities the server gives workers (srv_identity.c): a root
 * daemon runs each client user's workers as a uid (and a gid of the same
 * number) of their own, from a range it owns (--worker-uids), the same
 * one for the same user for as long as the state directory keeps it
 * (across restarts and upgrades), never root, never a uid the system's
 * user or group database names.
 */
#include <stdbool.h>
#include <sys/types.h>

struct srv_server;

/* Whether workers get identities of their own (a root daemon with worker
 * processes and a range), and the state kept: the file read, or why not
 * (its text for gpudctl status; "" when kept). */
bool srv_identity_on(const struct srv_server *server);
const char *srv_identity_state(const struct srv_server *server);

/* Reads what the state directory keeps (at start; a reload keeps it). */
void srv_identity_init(struct srv_server *server);
void srv_identity_finish(struct srv_server *server);

/* The uid of a client user's workers: the one it has, or a new one, kept
 * in the state directory at once.  -ENOSPC: the range has none left;
 * -EPERM: the client's own uid is in the range. */
int srv_identity_for(struct srv_server *server, uid_t client, uid_t *ret);

/* The user a uid given to workers serves, or false: it is none. */
bool srv_identity_client(const struct srv_server *server, uid_t worker, uid_t *ret_client);

/* The state directory (--state-dir, else /var/lib/gpud as root,
 * $XDG_STATE_HOME/gpud or ~/.local/state/gpud otherwise), to free. */
char *srv_identity_state_dir(const struct srv_server *server);

/* An adopted worker runs as worker for user client: what the table says
 * (it learns it where it had lost it, a uid of the range no one else has). */
void srv_identity_learn(struct srv_server *server, uid_t client, uid_t worker);
