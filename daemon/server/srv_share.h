/* SPDX-License-Identifier: MIT */
#pragma once

/* A fair share of the GPU, the server's side (srv_share.c). */

#include "srv_registry.h"

/* A fair share of the GPU.  init makes the schedule page
 * (failing leaves clients unscheduled); take gives a client a slot with its
 * weight and quotas (-ENODEV: no page, -ENOSPC: full); release frees it;
 * renice sets a client's nice level (one from DAEMON_NICE_MIN to MAX, the
 * caller checked); reload applies the
 * configuration's again; fill puts a client's share into its ClientInfo. */
int srv_share_init(struct srv_server *server);
void srv_share_finish(struct srv_server *server);
int srv_share_take(struct srv_server *server, struct srv_client *client);
void srv_share_release(struct srv_server *server, struct srv_client *client);
void srv_share_wake(struct srv_server *server);
void srv_share_renice(struct srv_server *server, struct srv_client *client, int nice);
void srv_share_reload(struct srv_server *server);
void srv_share_fill(const struct srv_server *server, const struct srv_client *client,
                     Gpud__ClientInfo *info);
