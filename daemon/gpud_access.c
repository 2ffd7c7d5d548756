/* SPDX-License-Identifier: MIT */
/*
 * Who may do what.  A root daemon serves root and the members of one group
 * (default "render", the group that owns DRM render nodes, as a native
 * driver's device node would), and its workers run as an unprivileged user
 * (default "gpud").  A user's daemon serves that user only.  gpudctl shows
 * and acts on its user's own clients; root and an optional admin group on
 * all of them.  The socket's mode says the same to the kernel; the server
 * checks the peer's credentials as well, so a socket passed in by someone
 * else (or a mode changed by hand) opens nothing.
 */
#include "gpud_server.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util_log.h"

/* A group by name or number. */
static int
resolve_group(const char *name, gid_t *ret)
{
   char *end = NULL;
   errno = 0;
   unsigned long n = strtoul(name, &end, 10);
   if (*name && !*end && !errno && n < (gid_t)-1) {
      *ret = (gid_t)n;
      return 0;
   }
   struct group *g = getgrnam(name);
   if (!g)
      return -ENOENT;
   *ret = g->gr_gid;
   return 0;
}

static int
resolve_user(struct gpud_server *server, const char *name)
{
   struct passwd *pw = NULL;
   char *end = NULL;
   errno = 0;
   unsigned long n = strtoul(name, &end, 10);
   if (*name && !*end && !errno)
      pw = getpwuid((uid_t)n);
   else
      pw = getpwnam(name);
   if (!pw) {
      util_err("workers' user '%s' does not exist: create it (systemd-sysusers "
               "with gpud's sysusers.d file makes 'gpud') or name another with --user",
               name);
      return -ENOENT;
   }
   if (pw->pw_uid == 0) {
      util_err("workers never run as root: --user names root");
      return -EPERM;
   }
   server->worker_uid = pw->pw_uid;
   server->worker_gid = pw->pw_gid;
   free(server->worker_home);
   server->worker_home = strdup(pw->pw_dir ? pw->pw_dir : "/");
   int n_groups = (int)(sizeof(server->worker_groups) / sizeof(server->worker_groups[0]));
   if (getgrouplist(pw->pw_name, pw->pw_gid, server->worker_groups, &n_groups) < 0) {
      /* more groups than we keep: the primary group and the first ones */
      n_groups = (int)(sizeof(server->worker_groups) / sizeof(server->worker_groups[0]));
   }
   server->n_worker_groups = n_groups;
   server->switch_user = true;
   return 0;
}

int
gpud_access_init(struct gpud_server *server)
{
   server->self_uid = geteuid();
   server->root = server->self_uid == 0;
   server->have_group = false;
   server->have_admin_group = false;
   if (server->cfg.admin_group) {
      if (resolve_group(server->cfg.admin_group, &server->admin_group) < 0) {
         util_err("--admin-group: no group '%s'", server->cfg.admin_group);
         return -ENOENT;
      }
      server->have_admin_group = true;
   }
   if (!server->root)
      return 0;
   const char *group = server->cfg.group ? server->cfg.group : "render";
   if (resolve_group(group, &server->group) == 0) {
      server->have_group = true;
      struct group *g = getgrgid(server->group);
      snprintf(server->group_name, sizeof(server->group_name), "%s", g ? g->gr_name : group);
   } else if (server->cfg.group) {
      util_err("--group: no group '%s'", group);
      return -ENOENT;
   } else {
      util_warn("there is no group '%s': only root may use this daemon (--group names "
                "another)",
                group);
   }
   if (server->cfg.isolation == GPUD_ISOLATION_PROCESS)
      return resolve_user(server, server->cfg.user ? server->cfg.user : "gpud");
   return 0;
}

/* The peer's supplementary groups include gid (SO_PEERGROUPS, Linux 4.13). */
static bool
peer_in_group(int fd, gid_t primary, gid_t gid)
{
   if (primary == gid)
      return true;
   gid_t groups[64];
   socklen_t len = sizeof(groups);
   gid_t *list = groups;
   if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
      if (errno != ERANGE)
         return false;
      list = malloc(len);
      if (!list || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, list, &len) < 0) {
         free(list);
         return false;
      }
   }
   bool found = false;
   for (size_t i = 0; i < len / sizeof(gid_t); i++)
      found |= list[i] == gid;
   if (list != groups)
      free(list);
   return found;
}

bool
gpud_access_allowed(struct gpud_server *server, int fd, uid_t uid, gid_t gid, char *reason,
                    size_t reason_size, bool *ret_admin)
{
   *ret_admin = false;
   if (!server->root) {
      /* a user's daemon is that user's */
      if (uid != server->self_uid) {
         snprintf(reason, reason_size, "uid %u may not use the daemon of uid %u",
                  (unsigned)uid, (unsigned)server->self_uid);
         return false;
      }
      *ret_admin = true;
      return true;
   }
   if (uid == 0) {
      *ret_admin = true;
      return true;
   }
   if (server->have_admin_group && peer_in_group(fd, gid, server->admin_group))
      *ret_admin = true;
   if (server->have_group && peer_in_group(fd, gid, server->group))
      return true;
   if (*ret_admin)
      return true;
   if (server->have_group) {
      snprintf(reason, reason_size, "uid %u is not in group %s (gid %u)", (unsigned)uid,
               server->group_name, (unsigned)server->group);
   } else {
      snprintf(reason, reason_size, "uid %u is not root, and no group may use this daemon",
               (unsigned)uid);
   }
   return false;
}

bool
gpud_access_may_see(const struct gpud_client *control, const struct gpud_client *client)
{
   return control->admin || control->uid == client->uid;
}
