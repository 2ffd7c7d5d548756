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
#include "srv_access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
resolve_user(struct srv_access *a, const char *name)
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
   a->worker_uid = pw->pw_uid;
   a->worker_gid = pw->pw_gid;
   int n_groups = (int)(sizeof(a->worker_groups) / sizeof(a->worker_groups[0]));
   if (getgrouplist(pw->pw_name, pw->pw_gid, a->worker_groups, &n_groups) < 0) {
      /* more groups than we keep: the primary group and the first ones */
      n_groups = (int)(sizeof(a->worker_groups) / sizeof(a->worker_groups[0]));
   }
   a->n_worker_groups = n_groups;
   a->switch_user = true;
   return 0;
}

int
srv_access_init(struct srv_server *server)
{
   /* Resolved into a new policy and applied only whole: a reload that
    * fails (a directory service down, say) leaves the old one. */
   const struct srv_config *cfg = &server->cfg;
   struct srv_access a = {.self_uid = geteuid()};
   a.root = a.self_uid == 0;
   if (cfg->admin_group) {
      if (resolve_group(cfg->admin_group, &a.admin_group) < 0) {
         util_err("--admin-group: no group '%s'", cfg->admin_group);
         return -ENOENT;
      }
      a.have_admin_group = true;
   }
   if (a.root) {
      const char *group = cfg->group ? cfg->group : "render";
      if (resolve_group(group, &a.group) == 0) {
         a.have_group = true;
         struct group *g = getgrgid(a.group);
         snprintf(a.group_name, sizeof(a.group_name), "%s", g ? g->gr_name : group);
      } else if (cfg->group) {
         util_err("--group: no group '%s'", group);
         return -ENOENT;
      } else {
         util_warn("there is no group '%s': only root may use this daemon (--group names "
                   "another)",
                   group);
      }
      if (cfg->isolation == SRV_ISOLATION_PROCESS &&
          resolve_user(&a, cfg->user ? cfg->user : "gpud") < 0)
         return -ENOENT;
   }
   server->access = a;
   return 0;
}

void
srv_access_finish(struct srv_access *access)
{
   (void)access;
}

/* The peer's supplementary groups (SO_PEERGROUPS, Linux 4.13): their
 * count, in *ret (to free; NULL when there are none to read). */
static size_t
peer_groups(int fd, gid_t **ret)
{
   *ret = NULL;
   socklen_t len = 64 * sizeof(gid_t);
   for (int tries = 0; tries < 3; tries++) {
      gid_t *list = malloc(len ? len : sizeof(gid_t));
      if (!list)
         return 0;
      if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, list, &len) == 0) {
         *ret = list;
         return len / sizeof(gid_t);
      }
      free(list);
      if (errno != ERANGE)
         return 0;
   }
   return 0;
}

static bool
in_group(gid_t primary, const gid_t *groups, size_t n_groups, gid_t gid)
{
   if (primary == gid)
      return true;
   for (size_t i = 0; i < n_groups; i++) {
      if (groups[i] == gid)
         return true;
   }
   return false;
}

bool
srv_access_check(struct srv_server *server, uid_t uid, gid_t gid, const gid_t *groups,
                  size_t n_groups, char *reason, size_t reason_size, bool *ret_admin)
{
   *ret_admin = false;
   if (!server->access.root) {
      /* a user's daemon is that user's */
      if (uid != server->access.self_uid) {
         snprintf(reason, reason_size, "uid %u may not use the daemon of uid %u",
                  (unsigned)uid, (unsigned)server->access.self_uid);
         return false;
      }
      *ret_admin = true;
      return true;
   }
   if (uid == 0) {
      *ret_admin = true;
      return true;
   }
   if (server->access.have_admin_group &&
       in_group(gid, groups, n_groups, server->access.admin_group))
      *ret_admin = true;
   if (server->access.have_group && in_group(gid, groups, n_groups, server->access.group))
      return true;
   if (*ret_admin)
      return true;
   if (server->access.have_group) {
      snprintf(reason, reason_size, "uid %u is not in group %s (gid %u)", (unsigned)uid,
               server->access.group_name, (unsigned)server->access.group);
   } else {
      snprintf(reason, reason_size, "uid %u is not root, and no group may use this daemon",
               (unsigned)uid);
   }
   return false;
}

bool
srv_access_allowed(struct srv_server *server, int fd, uid_t uid, gid_t gid, char *reason,
                    size_t reason_size, bool *ret_admin)
{
   gid_t *groups = NULL;
   size_t n = server->access.root && uid != 0 ? peer_groups(fd, &groups) : 0;
   bool ok = srv_access_check(server, uid, gid, groups, n, reason, reason_size, ret_admin);
   free(groups);
   return ok;
}

bool
srv_access_may_see(const struct srv_client *control, const struct srv_client *client)
{
   return control->admin || control->uid == client->uid;
}
