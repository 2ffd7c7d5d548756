/* SPDX-License-Identifier: MIT */
#pragma once

/* A fair share of the GPU, the server's side (gpud_share.c). */

#include "gpud_registry.h"

/* A fair share of the GPU.  init makes the schedule page
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
