/* SPDX-License-Identifier: MIT */
#pragma once

/* gpudctl's requests, and the daemon's view of its clients (gpud_control.c). */

#include "gpud_registry.h"

/* Gpudctl's requests; negative when the connection ends. */
int gpud_control_handle(struct gpud_client *control, const void *data, size_t size);
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

/* gpudctl cache [clear]: what the users' caches hold (only uid's where
 * user_given, only program's where program is not ""), after removing it
 * where clear says so; a user may name only their own (reply->denied);
 * freed with gpud_control_cache_free. */
struct gpud_cache_view;
struct gpud_cache_view *gpud_control_cache(struct gpud_server *server,
                                           const struct gpud_client *viewer, bool user_given,
                                           uid_t uid, const char *program, bool clear,
                                           const char *via, const Gpud__CacheReply **ret);
void gpud_control_cache_free(struct gpud_cache_view *view);
