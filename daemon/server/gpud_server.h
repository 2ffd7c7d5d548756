/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The server: one libevent loop that accepts connections, checks who the
 * peer is against the access policy, does the handshake, keeps the client
 * registry and the accounting (memory per client and per user, connections
 * per user), serves gpudctl, talks to systemd, and starts the workers that
 * run clients.  It never calls the host driver for a client.
 */

#include "gpud_registry.h"

/* Runs the server until SIGTERM; returns the exit status. */
int gpud_server_run(const struct gpud_config *cfg);

/* gpud_access.c: who may do what.  init (again, on SIGHUP) resolves the
 * groups and the workers' user; on failure the policy stays as it was. */
int gpud_access_init(struct gpud_server *server);
void gpud_access_finish(struct gpud_access *access);
/* Whether the peer may connect; when not, why in reason. */
bool gpud_access_allowed(struct gpud_server *server, int fd, uid_t uid, gid_t gid,
                         char *reason, size_t reason_size, bool *ret_admin);
/* The same for a peer known by its ids (a D-Bus caller). */
bool gpud_access_check(struct gpud_server *server, uid_t uid, gid_t gid, const gid_t *groups,
                       size_t n_groups, char *reason, size_t reason_size, bool *ret_admin);
/* Whether a control connection may see or act on a client. */
bool gpud_access_may_see(const struct gpud_client *control, const struct gpud_client *client);

/* gpud_bus.c: org.gpud.Daemon1 on D-Bus (cfg.bus), once the device is
 * known; a bus that cannot be reached is logged, never fatal. */
void gpud_bus_start(struct gpud_server *server);
void gpud_bus_stop(struct gpud_server *server);
/* Signals, when on a bus. */
void gpud_bus_client_connected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_disconnected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_faulted(struct gpud_server *server, uint64_t client_id, const char *reason);

/* gpud_spawn.c: starting workers. */
int gpud_spawn_worker(struct gpud_server *server, struct gpud_worker *worker);
/* Ends a worker the server no longer wants (spare at shutdown, killed
 * client): a process gets SIGKILL, a thread's client socket is shut. */
void gpud_kill_worker(struct gpud_worker *worker, const char *why);

/* gpud_adopt.c: restarts.  init, at start: the private directory beside
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
/* How long workers wait for the next server (--restart-grace); 0 without
 * the private directory: then they end with this server. */
uint32_t gpud_restart_grace_ms(const struct gpud_server *server);

/* gpud_share.c: a fair share of the GPU.  init makes the schedule page
 * (failing leaves clients unscheduled); take gives a client a slot with its
 * weight and quotas (-ENODEV: no page, -ENOSPC: full); release frees it;
 * renice sets a client's nice level (one from GPUD_NICE_MIN to MAX, the
 * caller checked); reload applies the
 * configuration's again; fill puts a client's share into its ClientInfo. */
int gpud_share_init(struct gpud_server *server);
void gpud_share_finish(struct gpud_server *server);
int gpud_share_take(struct gpud_server *server, struct gpud_client *client);
void gpud_share_release(struct gpud_server *server, struct gpud_client *client);
void gpud_share_wake(struct gpud_server *server);
void gpud_share_renice(struct gpud_server *server, struct gpud_client *client, int nice);
void gpud_share_reload(struct gpud_server *server);
void gpud_share_fill(const struct gpud_server *server, const struct gpud_client *client,
                     Gpud__ClientInfo *info);

/* gpud_control.c: gpudctl's requests; negative when the connection ends. */
int gpud_control_handle(struct gpud_client *control, const void *data, size_t size);
/* Text a worker (or a client) wrote made fit to show: control characters
 * and bytes that are not UTF-8 become '?', a character cut short goes. */
void gpud_control_clean_text(char *text);
/* The daemon as viewer (a control connection, or a D-Bus caller made into
 * one: uid, pid, admin) may see it; freed with gpud_control_status_free. */
struct gpud_status_view;
struct gpud_status_view *gpud_control_status(struct gpud_server *server,
                                             const struct gpud_client *viewer,
                                             const Gpud__StatusReply **ret);
void gpud_control_status_free(struct gpud_status_view *view);
/* 0, -ENOENT (no such client), -EACCES (another user's); via: who asks */
int gpud_control_disconnect(struct gpud_server *server, const struct gpud_client *viewer,
                            uint64_t id, const char *via);
/* ... and -EINVAL with *error saying why the fault cannot be injected */
int gpud_control_inject(struct gpud_server *server, const struct gpud_client *viewer,
                        uint64_t id, const char *fault, uint64_t value, const char *via,
                        const char **error);

/* ... and -EINVAL, -EACCES with *error saying why the client's nice level
 * cannot be set so */
int gpud_control_renice(struct gpud_server *server, const struct gpud_client *viewer,
                        uint64_t id, int nice, const char *via, const char **error);

/* Closes fds a peer sent, on the closer thread (a peer's fd may take
 * forever to close: a file on its own FUSE mount, say). */
void gpud_server_discard_fds(struct gpud_server *server, struct util_msg *msg);


