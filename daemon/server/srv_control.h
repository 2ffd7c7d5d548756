/* SPDX-License-Identifier: MIT */
#pragma once

/* gpudctl's requests, and the daemon's view of its clients (srv_control.c). */

#include "srv_registry.h"

/* Gpudctl's requests; negative when the connection ends. */
int srv_control_handle(struct srv_client *control, const void *data, size_t size);
/* The daemon as viewer (a control connection, or a D-Bus caller made into
 * one: uid, pid, admin) may see it; freed with srv_control_status_free. */
struct srv_status_view;
struct srv_status_view *srv_control_status(struct srv_server *server,
                                             const struct srv_client *viewer,
                                             const Gpud__StatusReply **ret);
void srv_control_status_free(struct srv_status_view *view);
/* 0, -ENOENT (no such client), -EACCES (another user's); via: who asks */
int srv_control_disconnect(struct srv_server *server, const struct srv_client *viewer,
                            uint64_t id, const char *via);
/* ... and -EINVAL with *error saying why the fault cannot be injected */
int srv_control_inject(struct srv_server *server, const struct srv_client *viewer,
                        uint64_t id, const char *fault, uint64_t value, const char *via,
                        const char **error);

/* ... and -EINVAL, -EACCES with *error saying why the client's nice level
 * cannot be set so */
int srv_control_renice(struct srv_server *server, const struct srv_client *viewer,
                        uint64_t id, int nice, const char *via, const char **error);

/* gpudctl cache [clear]: what the users' caches hold (only uid's where
 * user_given, only program's where program is not ""), after removing it
 * where clear says so; a user may name only their own (reply->denied);
 * freed with srv_control_cache_free. */
struct srv_cache_view;
struct srv_cache_view *srv_control_cache(struct srv_server *server,
                                           const struct srv_client *viewer, bool user_given,
                                           uid_t uid, const char *program, bool clear,
                                           const char *via, const Gpud__CacheReply **ret);
void srv_control_cache_free(struct srv_cache_view *view);
