/* SPDX-License-Identifier: MIT */
#pragma once

/* Who may connect and who may see what (srv_access.c). */

#include "srv_registry.h"

/* Who may do what.  init (again, on SIGHUP) resolves the
 * groups and the workers' user; on failure the policy stays as it was. */
int srv_access_init(struct srv_server *server);
void srv_access_finish(struct srv_access *access);
/* Whether the peer may connect; when not, why in reason. */
bool srv_access_allowed(struct srv_server *server, int fd, uid_t uid, gid_t gid,
                         char *reason, size_t reason_size, bool *ret_admin);
/* The same for a peer known by its ids (a D-Bus caller). */
bool srv_access_check(struct srv_server *server, uid_t uid, gid_t gid, const gid_t *groups,
                       size_t n_groups, char *reason, size_t reason_size, bool *ret_admin);
/* Whether a control connection may see or act on a client. */
bool srv_access_may_see(const struct srv_client *control, const struct srv_client *client);
