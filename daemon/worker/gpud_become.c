/* SPDX-License-Identifier: MIT */
/*
 * The identities a worker process takes (gpud_become.h).
 *
 * A capability dropped with capset() is dropped on the calling thread
 * alone, and the host driver starts threads while it loads: so the worker
 * keeps root only as its saved uid while it waits (no capability in
 * effect), and becomes its client user's uid with setresuid(), which the
 * C library runs on every thread and for which the kernel clears every
 * capability of each (its uids, none of them 0 any more, had one that
 * was).  Then it reads each thread's status to be sure.
 */
#include "gpud_become.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util_log.h"

#define MAX_GROUPS 32

static bool can_become; /* root is the saved uid */

int
gpud_become_base(const char *spec)
{
   unsigned long uid, gid;
   char *end = NULL;
   errno = 0;
   uid = strtoul(spec, &end, 10);
   if (errno || *end != ':' || uid == 0 || uid > (uid_t)-2)
      return -EINVAL;
   gid = strtoul(end + 1, &end, 10);
   if (errno || *end != ':' || gid > (gid_t)-2)
      return -EINVAL;
   gid_t groups[MAX_GROUPS];
   size_t n = 0;
   for (const char *p = end + 1; *p;) {
      unsigned long g = strtoul(p, &end, 10);
      if (errno || end == p || n == MAX_GROUPS || g > (gid_t)-2 || (*end && *end != ','))
         return -EINVAL;
      groups[n++] = (gid_t)g;
      p = *end ? end + 1 : end;
   }
   if (geteuid() != 0)
      return -EPERM;
   if (setgroups(n, groups) < 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0 ||
       setresuid((uid_t)uid, (uid_t)uid, 0) < 0)
      return -errno;
   can_become = true;
   return 0;
}

int
gpud_become_can(void)
{
   return can_become;
}

/* Every thread of the process: its uids all uid, no capability left. */
static bool
threads_are(uid_t uid, gid_t gid)
{
   DIR *d = opendir("/proc/self/task");
   if (!d)
      return false;
   bool ok = true;
   struct dirent *e;
   while (ok && (e = readdir(d))) {
      if (e->d_name[0] == '.')
         continue;
      char path[300], line[256];
      snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
      FILE *f = fopen(path, "re");
      if (!f)
         continue; /* (a thread that ended meanwhile) */
      unsigned seen = 0;
      while (ok && fgets(line, sizeof(line), f)) {
         unsigned long a, b, c, d4;
         unsigned long long caps;
         if (sscanf(line, "Uid: %lu %lu %lu %lu", &a, &b, &c, &d4) == 4) {
            ok = a == uid && b == uid && c == uid && d4 == uid;
            seen |= 1;
         } else if (sscanf(line, "Gid: %lu %lu %lu %lu", &a, &b, &c, &d4) == 4) {
            ok = a == gid && b == gid && c == gid && d4 == gid;
            seen |= 2;
         } else if (sscanf(line, "CapPrm: %llx", &caps) == 1 ||
                    sscanf(line, "CapEff: %llx", &caps) == 1 ||
                    sscanf(line, "CapAmb: %llx", &caps) == 1) {
            ok = caps == 0;
            seen |= 4;
         }
      }
      fclose(f);
      ok &= seen == 7;
   }
   closedir(d);
   return ok;
}

int
gpud_become_client(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups)
{
   if (!can_become || uid == 0 || gid == 0 || n_groups > MAX_GROUPS)
      return -EPERM;
   can_become = false;
   /* root in effect for the changes, then nothing of it anywhere (each
    * change runs on every thread: the groups, the base's already, are
    * left as they are) */
   gid_t have[MAX_GROUPS];
   int n_have = getgroups(MAX_GROUPS, have);
   bool same = n_have == (int)n_groups && !memcmp(have, groups, n_groups * sizeof(gid_t));
   if (setresuid((uid_t)-1, 0, (uid_t)-1) < 0 || (!same && setgroups(n_groups, groups) < 0) ||
       setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
      return -errno;
   /* (a change of uids resets it to the system's suid_dumpable) */
   prctl(PR_SET_DUMPABLE, 0);
   if (!threads_are(uid, gid)) {
      util_err("worker: a thread kept another identity or a capability");
      return -EPERM;
   }
   return 0;
}

void
gpud_become_cache_dir(const char *dir)
{
   /* a worker started as another user than the server's has none yet
    * (HOME=/nonexistent, Mesa's cache off unless the administrator had it
    * off): its client's directory becomes its home and cache */
   const char *pending = getenv("GPUD_WORKER_CACHE");
   const bool own = pending && !strncmp(pending, "pending", 7);
   const bool mesa_was_on = own && !strcmp(pending, "pending-mesa");
   unsetenv("GPUD_WORKER_CACHE");
   if (dir && dir[0] == '/') {
      if (own)
         setenv("HOME", dir, 1);
      if (mesa_was_on)
         unsetenv("MESA_SHADER_CACHE_DISABLE");
      setenv("XDG_CACHE_HOME", dir, 1);
      unsetenv("MESA_SHADER_CACHE_DIR");
      unsetenv("__GL_SHADER_DISK_CACHE_PATH");
   } else if (own) {
      /* nothing kept: no driver writes where another user's worker reads */
      setenv("GPUD_PIPELINE_CACHE", "off", 1);
   }
}
