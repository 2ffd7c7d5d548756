/* SPDX-License-Identifier: MIT */
/*
 * The identities the server gives workers (srv_identity.h).  The table of
 * client user -> worker uid lives in STATE_DIR/worker-uids, a line "CLIENT
 * WORKER" each, written whole beside it and renamed into place whenever a
 * uid is given; a line that cannot be read, names a uid outside the range
 * or one given twice is dropped (with a warning), and the user it named
 * gets a new uid.  A state directory that cannot be written leaves the
 * table in memory only: the daemon says so (gpudctl status), and a user's
 * workers may get another uid after a restart (their caches, made anew,
 * are the only files they own).
 *
 * Daemons of several GPUs (gpud@NAME) share the state directory: a uid is
 * given under an exclusive lock on STATE_DIR/worker-uids.lock, after
 * reading what the others gave, so that a user's workers have one uid on
 * every GPU and no uid serves two users.
 */
#include "srv_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srv_registry.h"
#include "util_dir.h"
#include "util_log.h"

struct identity {
   uid_t client, worker;
};

struct srv_identities {
   struct identity *v;
   size_t n, cap;
   char *path;       /* the table's file; NULL: no state directory */
   char state[256];  /* why it is not kept; "" kept */
};

bool
srv_identity_on(const struct srv_server *server)
{
   return server->ids && server->access.root && server->access.switch_user &&
          server->cfg.isolation == SRV_ISOLATION_PROCESS &&
          server->cfg.worker_uid_first <= server->cfg.worker_uid_last;
}

const char *
srv_identity_state(const struct srv_server *server)
{
   return server->ids ? server->ids->state : "";
}

char *
srv_identity_state_dir(const struct srv_server *server)
{
   if (server->cfg.state_dir)
      return strdup(server->cfg.state_dir);
   return util_gpud_dir("/var/lib/gpud", "XDG_STATE_HOME", ".local/state");
}

static bool
in_range(const struct srv_server *server, uid_t uid)
{
   return uid >= server->cfg.worker_uid_first && uid <= server->cfg.worker_uid_last;
}

static struct identity *
find_client(struct srv_identities *ids, uid_t client)
{
   for (size_t i = 0; i < ids->n; i++) {
      if (ids->v[i].client == client)
         return &ids->v[i];
   }
   return NULL;
}

static bool
worker_taken(const struct srv_identities *ids, uid_t worker)
{
   for (size_t i = 0; i < ids->n; i++) {
      if (ids->v[i].worker == worker)
         return true;
   }
   return false;
}

static int
add(struct srv_identities *ids, uid_t client, uid_t worker)
{
   if (ids->n == ids->cap) {
      size_t cap = ids->cap ? ids->cap * 2 : 16;
      struct identity *v = realloc(ids->v, cap * sizeof(*v));
      if (!v)
         return -ENOMEM;
      ids->v = v;
      ids->cap = cap;
   }
   ids->v[ids->n++] = (struct identity){client, worker};
   return 0;
}

static void
not_kept(struct srv_identities *ids, const char *what, int err)
{
   char text[sizeof(ids->state)];
   snprintf(text, sizeof(text), "%s %s: %s", what, ids->path ? ids->path : "(none)",
            strerror(err));
   if (strcmp(text, ids->state))
      util_warn("workers' uids are not kept across restarts: %s", text);
   memcpy(ids->state, text, sizeof(text));
}

/* The table, written whole and renamed into place. */
static void
save(struct srv_identities *ids)
{
   if (!ids->path)
      return;
   char *dir = strdup(ids->path);
   char *slash = dir ? strrchr(dir, '/') : NULL;
   if (slash)
      *slash = '\0';
   int r = dir ? util_mkdirs(dir, 0755, 0700) : -ENOMEM;
   free(dir);
   char *text = NULL, *tmp = NULL;
   size_t size = 0;
   FILE *f = r == 0 ? open_memstream(&text, &size) : NULL;
   if (r == 0 && !f)
      r = -ENOMEM;
   if (f) {
      fprintf(f, "# gpud: the uid each client user's workers run as (CLIENT WORKER)\n");
      for (size_t i = 0; i < ids->n; i++)
         fprintf(f, "%u %u\n", (unsigned)ids->v[i].client, (unsigned)ids->v[i].worker);
      fclose(f);
      r = asprintf(&tmp, "%s.new", ids->path) < 0 ? -ENOMEM
                                                 : util_write_file(ids->path, tmp, text, size);
   }
   free(text);
   free(tmp);
   if (r < 0)
      not_kept(ids, "cannot write", -r);
   else
      ids->state[0] = '\0';
}

/* Takes in what the file has that the table has not (warn: say what is
 * dropped); whether a line was dropped. */
static bool
read_table(struct srv_server *server, bool warn)
{
   struct srv_identities *ids = server->ids;
   FILE *f = ids->path ? fopen(ids->path, "re") : NULL;
   if (!f) {
      if (errno != ENOENT && ids->path)
         not_kept(ids, "cannot read", errno);
      return false;
   }
   char line[128];
   unsigned n_line = 0;
   bool dropped = false;
   while (fgets(line, sizeof(line), f)) {
      n_line++;
      if (line[0] == '#' || line[0] == '\n')
         continue;
      unsigned long client, worker;
      char end;
      bool fits = sscanf(line, "%lu %lu%c", &client, &worker, &end) == 3 && end == '\n' &&
                  client <= (uid_t)-2 && in_range(server, (uid_t)worker) && client != worker;
      const struct identity *known = fits ? find_client(ids, (uid_t)client) : NULL;
      if (known && known->worker == (uid_t)worker)
         continue; /* (the table has it) */
      if (!fits || known || worker_taken(ids, (uid_t)worker)) {
         if (warn)
            util_warn("%s:%u: not a uid of this range given once (dropped; that user's "
                      "workers get a new one)",
                      ids->path, n_line);
         dropped = true;
         continue;
      }
      add(ids, (uid_t)client, (uid_t)worker);
   }
   fclose(f);
   return dropped;
}

/* The lock of the table's file, taken (-1: none, the table is this
 * daemon's alone then). */
static int
lock_table(const struct srv_identities *ids)
{
   char *path = NULL;
   if (!ids->path || asprintf(&path, "%s.lock", ids->path) < 0)
      return -1;
   int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
   free(path);
   while (fd >= 0 && flock(fd, LOCK_EX) < 0) {
      if (errno != EINTR) {
         close(fd);
         fd = -1;
      }
   }
   return fd;
}

void
srv_identity_init(struct srv_server *server)
{
   if (server->ids)
      return; /* (a reload keeps the table) */
   struct srv_identities *ids = calloc(1, sizeof(*ids));
   if (!ids)
      return;
   server->ids = ids;
   char *dir = srv_identity_state_dir(server);
   if (!dir || asprintf(&ids->path, "%s/worker-uids", dir) < 0)
      ids->path = NULL;
   bool on = srv_identity_on(server);
   /* the server's alone: no worker lists it (save() says when it cannot
    * be written) */
   if (on && dir && util_mkdirs(dir, 0755, 0700) == 0)
      chmod(dir, 0700);
   free(dir);
   if (!on)
      return;
   int lock = lock_table(ids);
   if (read_table(server, true))
      save(ids);
   if (lock >= 0)
      close(lock);
   util_info("workers of %zu users have uids of their own (%s)", ids->n,
             ids->path ? ids->path : "in memory only");
}

void
srv_identity_finish(struct srv_server *server)
{
   if (!server->ids)
      return;
   free(server->ids->v);
   free(server->ids->path);
   free(server->ids);
   server->ids = NULL;
}

/* Whether a uid may be given: nobody's account or group, in no use. */
static bool
free_uid(const struct srv_server *server, uid_t uid, uid_t client)
{
   return uid != client && uid != 0 && !worker_taken(server->ids, uid) && !getpwuid(uid) &&
          !getgrgid((gid_t)uid);
}

int
srv_identity_for(struct srv_server *server, uid_t client, uid_t *ret)
{
   struct srv_identities *ids = server->ids;
   if (!ids)
      return -ENOMEM;
   if (in_range(server, client))
      return -EPERM;
   const struct identity *known = find_client(ids, client);
   if (known) {
      *ret = known->worker;
      return 0;
   }
   /* what other daemons gave since, under the lock (another GPU's daemon
    * may have given this user one) */
   int lock = lock_table(ids);
   read_table(server, false);
   known = find_client(ids, client);
   int r = -ENOSPC;
   if (known) {
      *ret = known->worker;
      r = 0;
   }
   for (uint64_t uid = server->cfg.worker_uid_first; !known && uid <= server->cfg.worker_uid_last;
        uid++) {
      if (!free_uid(server, (uid_t)uid, client))
         continue;
      r = add(ids, client, (uid_t)uid);
      if (r < 0)
         break;
      save(ids);
      util_info("user %u's workers run as uid %u", (unsigned)client, (unsigned)uid);
      *ret = (uid_t)uid;
      break;
   }
   if (lock >= 0)
      close(lock);
   return r;
}

bool
srv_identity_client(const struct srv_server *server, uid_t worker, uid_t *ret_client)
{
   const struct srv_identities *ids = server->ids;
   for (size_t i = 0; ids && i < ids->n; i++) {
      if (ids->v[i].worker == worker) {
         *ret_client = ids->v[i].client;
         return true;
      }
   }
   return false;
}

void
srv_identity_learn(struct srv_server *server, uid_t client, uid_t worker)
{
   struct srv_identities *ids = server->ids;
   if (!ids || !srv_identity_on(server) || !in_range(server, worker) || client == worker ||
       find_client(ids, client) || worker_taken(ids, worker))
      return;
   int lock = lock_table(ids);
   read_table(server, false);
   if (!find_client(ids, client) && !worker_taken(ids, worker) && add(ids, client, worker) == 0) {
      save(ids);
      util_info("user %u's workers run as uid %u (learnt from an adopted worker)",
                (unsigned)client, (unsigned)worker);
   }
   if (lock >= 0)
      close(lock);
}
