/* SPDX-License-Identifier: MIT */
#pragma once

/* Who may connect and who may see what (gpud_access.c). */

#include "gpud_registry.h"

/* Who may do what.  init (again, on SIGHUP) resolves the
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
