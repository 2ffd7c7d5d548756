/* SPDX-License-Identifier: MIT */
/*
 * The caches the server keeps (srv_cache.h).
 *
 * CACHE_DIR (/var/cache/gpud for a root daemon, $XDG_CACHE_HOME/gpud for a
 * user's) holds users/UID for each client user, made by the server and
 * owned by the uid that user's workers run as (mode 0700: another user's
 * workers cannot even look in); a worker's XDG_CACHE_HOME (and, for a uid
 * with no home, its HOME) is it, so the drivers' disk caches (Mesa's
 * mesa_shader_cache*, NVIDIA's nvidia/GLCache) and gpud's pipeline caches
 * (gpud/pipelines/UID-PROGRAM-VENDOR-DEVICE-UUID.bin) are there.
 *
 * A root server walks a user's directory as its owner: with the file
 * system identity (setfsuid) of the uid of that user's workers, so it
 * reaches what they can reach and nothing more (it needs no capability
 * to override file permissions, and a link they planted leads only where
 * they could go themselves).  And every directory is opened relative to
 * its parent without following a symbolic link (O_NOFOLLOW), every entry
 * looked at without following one, every removal relative to its
 * directory: a worker that planted links, or swapped a directory for one,
 * only makes the server remove the link.  Walks are bounded (entries,
 * depth), so a worker that makes a million files costs the server a
 * bounded time, not a hang.
 */
#include "srv_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "srv_identity.h"
#include "srv_registry.h"
#include "util_dir.h"
#include "util_log.h"

#define WALK_MAX_ENTRIES 200000u
#define WALK_MAX_DEPTH 12u
#define REL_MAX 512

struct cache_stat {
   uid_t uid;
   char program[64];
   uint64_t hits, misses;
};

struct srv_caches {
   char *root;       /* CACHE_DIR */
   char *users;      /* CACHE_DIR/users */
   char state[320];  /* why caches are not kept; "" kept */
   struct cache_stat *stats;
   size_t n_stats, cap_stats;
   struct event *trim; /* a trim soon (srv_cache_trim_soon) */
};

/* how long after a client ends its user's cache is trimmed: out of the
 * way of the next client's start, and one walk for clients ending
 * together */
#define TRIM_DELAY_MS 1000

/* The server's file-system identity while it handles what owner owns
 * (a root server's; a user's own daemon is that user already): the
 * previous one, for as_server. */
static uid_t
as_owner(uid_t owner)
{
   if (geteuid() != 0)
      return (uid_t)-1;
   return (uid_t)setfsuid(owner);
}

static void
as_server(uid_t previous)
{
   if (previous != (uid_t)-1)
      setfsuid(previous);
}

static int open_dir_at(int at, const char *name);
static void remove_below(int fd, unsigned depth);

/* Whether a worker running as uid and gid reaches dir, every directory
 * above it searchable for it (a --cache-dir in a home of mode 0700 is
 * not): 0, or the error its open gets.  Checked once, at start: below
 * CACHE_DIR/users the server makes every directory itself. */
static int
reachable_as(const char *dir, uid_t uid, gid_t gid)
{
   if (geteuid() != 0 || uid == 0)
      return 0;
   uid_t was = as_owner(uid);
   gid_t was_gid = (gid_t)setfsgid(gid);
   int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
   int r = fd < 0 ? -errno : 0;
   if (fd >= 0)
      close(fd);
   setfsgid(was_gid);
   as_server(was);
   return r;
}

/* The uid and gid a worker of the next client runs as, for the check at
 * start: a uid of the range (one no directory above the cache is
 * owned by), or the workers' one user. */
static bool
some_worker(const struct srv_server *server, uid_t *uid, gid_t *gid)
{
   if (srv_identity_on(server)) {
      *uid = server->cfg.worker_uid_first;
      *gid = (gid_t)server->cfg.worker_uid_first;
      return true;
   }
   if (server->access.switch_user && server->cfg.isolation == SRV_ISOLATION_PROCESS) {
      *uid = server->access.worker_uid;
      *gid = server->access.worker_gid;
      return true;
   }
   return false;
}

/* A root daemon's caches are root's: CACHE_DIR and CACHE_DIR/users owned by
 * root, written by nobody else, searchable by the workers that own what
 * is below (0755, 0711: whatever the umask made of them).  Below the
 * default directory (once the gpud user's home, where every user's
 * workers shared the drivers' caches) what is not users/ goes. */
static int
take_root(const struct srv_caches *c, bool legacy)
{
   static const mode_t modes[] = {0755, 0711};
   for (unsigned i = 0; i < 2; i++) {
      const char *path = i ? c->users : c->root;
      int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct stat st;
      if (fd < 0 || fstat(fd, &st) < 0) {
         int r = -errno;
         if (fd >= 0)
            close(fd);
         return r;
      }
      if ((st.st_uid != 0 || st.st_gid != 0) && fchown(fd, 0, 0) < 0) {
         int r = -errno;
         close(fd);
         return r;
      }
      if ((st.st_mode & 07777) != modes[i] && fchmod(fd, modes[i]) < 0) {
         int r = -errno;
         close(fd);
         return r;
      }
      if (i == 0 && legacy && st.st_uid != 0) {
         /* (the shared caches of an earlier gpud) */
         static const char *const old[] = {".cache", "workers", ".nv"};
         for (unsigned k = 0; k < sizeof(old) / sizeof(old[0]); k++) {
            struct stat sub_st;
            if (fstatat(fd, old[k], &sub_st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sub_st.st_mode))
               continue;
            uid_t was = as_owner(sub_st.st_uid);
            int sub = open_dir_at(fd, old[k]);
            if (sub >= 0)
               remove_below(sub, 0);
            as_server(was);
            if (sub < 0)
               continue;
            unlinkat(fd, old[k], AT_REMOVEDIR);
            util_info("%s/%s: removed (the caches every user's workers shared)", c->root,
                      old[k]);
         }
      }
      close(fd);
   }
   return 0;
}

void
srv_cache_init(struct srv_server *server)
{
   if (server->caches)
      return;
   struct srv_caches *c = calloc(1, sizeof(*c));
   if (!c)
      return;
   server->caches = c;
   c->root = server->cfg.cache_dir ? strdup(server->cfg.cache_dir)
                                : util_gpud_dir("/var/cache/gpud", "XDG_CACHE_HOME", ".cache");
   if (!c->root || asprintf(&c->users, "%s/users", c->root) < 0) {
      c->users = NULL;
      snprintf(c->state, sizeof(c->state), "no cache directory (no home, no --cache-dir)");
   } else {
      int r = util_mkdirs(c->users, 0755, 0700);
      if (r == 0 && geteuid() == 0)
         r = take_root(c, !server->cfg.cache_dir);
      if (r == 0 && access(c->users, W_OK | X_OK) < 0)
         r = -errno;
      uid_t uid;
      gid_t gid;
      int reach = 0;
      if (r < 0)
         snprintf(c->state, sizeof(c->state), "cannot write %s: %s", c->users, strerror(-r));
      else if (some_worker(server, &uid, &gid) && (reach = reachable_as(c->users, uid, gid)) < 0)
         snprintf(c->state, sizeof(c->state),
                  "the workers (uid %u) cannot reach %s: %s (a directory above it is not "
                  "searchable for them)",
                  (unsigned)uid, c->users, strerror(-reach));
   }
   if (c->state[0])
      util_warn("pipelines and shaders are not cached across runs: %s (clients are served "
                "without)",
                c->state);
   else
      srv_cache_trim(server);
}

void
srv_cache_finish(struct srv_server *server)
{
   struct srv_caches *c = server->caches;
   if (!c)
      return;
   if (c->trim)
      event_free(c->trim);
   free(c->root);
   free(c->users);
   free(c->stats);
   free(c);
   server->caches = NULL;
}

const char *
srv_cache_state(const struct srv_server *server)
{
   return server->caches ? server->caches->state : "not set up";
}

const char *
srv_cache_root(const struct srv_server *server)
{
   return server->caches && server->caches->root ? server->caches->root : "";
}

static int
open_dir_at(int at, const char *name)
{
   return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* ---- walking a user's directory ------------------------------------------- */

struct walk_file {
   char rel[REL_MAX]; /* its path below the user's directory */
   uint64_t bytes;
   int64_t last;      /* its last use: the later of its access and change (ns) */
   uid_t uid;         /* the client user */
   uid_t owner;       /* who owns the user's directory (their workers' uid) */
};

struct walk {
   struct walk_file *files;
   size_t n, cap;
   unsigned entries;
   bool truncated;
};

static void
note_file(struct walk *w, const char *rel, const struct stat *st, uid_t uid, uid_t owner)
{
   if (w->n == w->cap) {
      size_t cap = w->cap ? w->cap * 2 : 256;
      struct walk_file *f = realloc(w->files, cap * sizeof(*f));
      if (!f) {
         w->truncated = true;
         return;
      }
      w->files = f;
      w->cap = cap;
   }
   struct walk_file *f = &w->files[w->n++];
   snprintf(f->rel, sizeof(f->rel), "%s", rel);
   f->bytes = (uint64_t)st->st_blocks * 512u;
   int64_t m = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
   int64_t a = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
   f->last = m > a ? m : a;
   f->uid = uid;
   f->owner = owner;
}

/* Every file below the directory fd (taken), paths from rel. */
static void
walk_dir(struct walk *w, int fd, char *rel, size_t len, unsigned depth, uid_t uid, uid_t owner)
{
   DIR *d = fdopendir(fd);
   if (!d) {
      close(fd);
      return;
   }
   struct dirent *e;
   while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
         continue;
      if (++w->entries > WALK_MAX_ENTRIES) {
         w->truncated = true;
         break;
      }
      size_t n = strlen(e->d_name);
      if (len + n + 2 > REL_MAX) {
         w->truncated = true;
         continue;
      }
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
         continue;
      size_t at = len;
      if (len)
         rel[at++] = '/';
      memcpy(rel + at, e->d_name, n + 1);
      if (S_ISDIR(st.st_mode)) {
         int sub = depth < WALK_MAX_DEPTH ? open_dir_at(dirfd(d), e->d_name) : -1;
         if (sub >= 0)
            walk_dir(w, sub, rel, at + n, depth + 1, uid, owner);
         else
            w->truncated = true;
      } else {
         note_file(w, rel, &st, uid, owner);
      }
      rel[len] = '\0';
   }
   closedir(d);
}

static int
open_users(const struct srv_server *server)
{
   const struct srv_caches *c = server->caches;
   if (!c || !c->users || c->state[0])
      return -ENOENT;
   int fd = open(c->users, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
   return fd >= 0 ? fd : -errno;
}

/* A user directory's name: its uid. */
static bool
user_name(const char *name, uid_t *ret)
{
   char *end = NULL;
   errno = 0;
   unsigned long v = strtoul(name, &end, 10);
   if (errno || !*name || *end || v > (uid_t)-2)
      return false;
   *ret = (uid_t)v;
   return true;
}

/* The files of one user (uid), or of every user ((uid_t)-1). */
static void
walk_users(const struct srv_server *server, uid_t uid, struct walk *w)
{
   int users = open_users(server);
   if (users < 0)
      return;
   DIR *d = fdopendir(users);
   if (!d) {
      close(users);
      return;
   }
   struct dirent *e;
   while ((e = readdir(d))) {
      uid_t who;
      if (!user_name(e->d_name, &who) || (uid != (uid_t)-1 && who != uid))
         continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
         continue;
      uid_t was = as_owner(st.st_uid);
      int fd = open_dir_at(dirfd(d), e->d_name);
      if (fd >= 0) {
         char rel[REL_MAX] = "";
         walk_dir(w, fd, rel, 0, 0, who, st.st_uid);
      }
      as_server(was);
   }
   closedir(d);
}

/* Removes a file named by its path below its user's directory, every
 * directory of the way opened without following a link. */
static bool
remove_rel(int users, uid_t uid, uid_t owner, const char *rel)
{
   uid_t was = as_owner(owner);
   char name[32];
   snprintf(name, sizeof(name), "%u", (unsigned)uid);
   int fd = open_dir_at(users, name);
   char part[REL_MAX];
   snprintf(part, sizeof(part), "%s", rel);
   char *p = part;
   for (char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
      *slash = '\0';
      int next = open_dir_at(fd, p);
      close(fd);
      fd = next;
   }
   bool done = fd >= 0 && unlinkat(fd, p, 0) == 0;
   if (fd >= 0)
      close(fd);
   as_server(was);
   return done;
}

/* Removes every entry below the directory fd (taken), depth first. */
static void
remove_below(int fd, unsigned depth)
{
   DIR *d = fdopendir(fd);
   if (!d) {
      close(fd);
      return;
   }
   struct dirent *e;
   unsigned entries = 0;
   while ((e = readdir(d)) && entries++ < WALK_MAX_ENTRIES) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
         continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
         continue;
      if (S_ISDIR(st.st_mode)) {
         int sub = depth < WALK_MAX_DEPTH ? open_dir_at(dirfd(d), e->d_name) : -1;
         if (sub >= 0)
            remove_below(sub, depth + 1);
         unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
      } else {
         unlinkat(dirfd(d), e->d_name, 0);
      }
   }
   closedir(d);
}

/* ---- a user's directory ------------------------------------------------------ */

int
srv_cache_user_dir(struct srv_server *server, uid_t client, uid_t owner, gid_t group,
                    char *path, size_t size)
{
   path[0] = '\0';
   int users = open_users(server);
   if (users < 0)
      return users;
   char name[32];
   snprintf(name, sizeof(name), "%u", (unsigned)client);
   int r = 0;
   struct stat st;
   if (mkdirat(users, name, 0700) < 0 && errno != EEXIST)
      r = -errno;
   if (r == 0 && fstatat(users, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      r = -errno;
   if (r == 0 && !S_ISDIR(st.st_mode)) {
      /* (not a directory of the server's making: gone) */
      unlinkat(users, name, 0);
      r = mkdirat(users, name, 0700) < 0 || fstatat(users, name, &st, AT_SYMLINK_NOFOLLOW) < 0
             ? -errno
             : 0;
   }
   if (r == 0 && geteuid() == 0 && (st.st_uid != owner || st.st_gid != group)) {
      /* another uid's (the range changed, or the state was lost): what it
       * holds is not this one's to read, the directory is made anew (as
       * the uid that owns it) */
      if (st.st_uid != 0 && st.st_uid != owner) {
         uid_t was = as_owner(st.st_uid);
         int fd = open_dir_at(users, name);
         if (fd >= 0)
            remove_below(fd, 0);
         as_server(was);
         util_info("cache of user %u: made anew for uid %u (it was uid %u's)",
                   (unsigned)client, (unsigned)owner, (unsigned)st.st_uid);
      }
      if (fchownat(users, name, owner, group, AT_SYMLINK_NOFOLLOW) < 0)
         r = -errno;
   }
   /* (its mode set by its owner: a root server keeps no capability to set
    * another's) */
   uid_t was = as_owner(r == 0 && geteuid() == 0 ? owner : 0);
   if (r == 0 && (st.st_mode & 07777) != 0700 && fchmodat(users, name, 0700, 0) < 0)
      r = -errno;
   as_server(was);
   close(users);
   if (r < 0) {
      util_warn("cache of user %u: %s", (unsigned)client, strerror(-r));
      return r;
   }
   snprintf(path, size, "%s/%s", server->caches->users, name);
   return 0;
}

/* ---- what the caches hold ----------------------------------------------------- */

/* The program a file is the cache of: gpud's pipeline caches are
 * gpud/pipelines/UID-PROGRAM-VENDOR-DEVICE-UUID.bin; the rest is the
 * drivers' (""). */
static void
file_program(const char *rel, char *program, size_t size)
{
   program[0] = '\0';
   static const char dir[] = "gpud/pipelines/";
   if (strncmp(rel, dir, sizeof(dir) - 1))
      return;
   const char *name = rel + sizeof(dir) - 1;
   const char *first = strchr(name, '-');
   const char *end = strrchr(name, '.');
   if (!first || !end || end < first)
      return;
   /* back over -UUID, -DEVICE, -VENDOR */
   const char *p = end;
   for (int i = 0; i < 3 && p > first; i++) {
      do
         p--;
      while (p > first && *p != '-');
   }
   if (p <= first + 1)
      return;
   size_t n = (size_t)(p - first - 1);
   if (n >= size)
      n = size - 1;
   memcpy(program, first + 1, n);
   program[n] = '\0';
}

static struct cache_stat *
stat_of(struct srv_caches *c, uid_t uid, const char *program, bool add)
{
   for (size_t i = 0; i < c->n_stats; i++) {
      if (c->stats[i].uid == uid && !strcmp(c->stats[i].program, program))
         return &c->stats[i];
   }
   if (!add)
      return NULL;
   if (c->n_stats == c->cap_stats) {
      size_t cap = c->cap_stats ? c->cap_stats * 2 : 16;
      struct cache_stat *s = realloc(c->stats, cap * sizeof(*s));
      if (!s)
         return NULL;
      c->stats = s;
      c->cap_stats = cap;
   }
   struct cache_stat *s = &c->stats[c->n_stats++];
   *s = (struct cache_stat){.uid = uid};
   snprintf(s->program, sizeof(s->program), "%s", program);
   return s;
}

void
srv_cache_count(struct srv_server *server, uid_t uid, const char *program, uint64_t hits,
                 uint64_t misses)
{
   struct srv_caches *c = server->caches;
   struct cache_stat *s = c && (hits || misses) ? stat_of(c, uid, program, true) : NULL;
   if (s) {
      s->hits += hits;
      s->misses += misses;
   }
}

static struct srv_cache_entry *
entry_of(struct srv_cache_entry **v, size_t *n, uid_t uid, const char *program)
{
   for (size_t i = 0; i < *n; i++) {
      if ((*v)[i].uid == uid && !strcmp((*v)[i].program, program))
         return &(*v)[i];
   }
   struct srv_cache_entry *grown = realloc(*v, (*n + 1) * sizeof(**v));
   if (!grown)
      return NULL;
   *v = grown;
   struct srv_cache_entry *e = &grown[(*n)++];
   *e = (struct srv_cache_entry){.uid = uid};
   snprintf(e->program, sizeof(e->program), "%s", program);
   return e;
}

int
srv_cache_list(struct srv_server *server, uid_t uid, const char *program,
                struct srv_cache_entry **ret)
{
   *ret = NULL;
   struct srv_caches *c = server->caches;
   if (!c)
      return -ENOENT;
   struct walk w = {0};
   walk_users(server, uid, &w);
   struct srv_cache_entry *v = NULL;
   size_t n = 0;
   for (size_t i = 0; i < w.n; i++) {
      char prog[64];
      file_program(w.files[i].rel, prog, sizeof(prog));
      if (program && strcmp(prog, program))
         continue;
      struct srv_cache_entry *e = entry_of(&v, &n, w.files[i].uid, prog);
      if (!e)
         break;
      e->bytes += w.files[i].bytes;
      e->files++;
      if (w.files[i].last / 1000000000 > e->last_use)
         e->last_use = w.files[i].last / 1000000000;
   }
   free(w.files);
   for (size_t i = 0; i < c->n_stats; i++) {
      const struct cache_stat *s = &c->stats[i];
      if ((uid != (uid_t)-1 && s->uid != uid) || (program && strcmp(s->program, program)))
         continue;
      struct srv_cache_entry *e = entry_of(&v, &n, s->uid, s->program);
      if (e) {
         e->hits = s->hits;
         e->misses = s->misses;
      }
   }
   /* and what the workers serving now count on their pages (theirs until
    * they end: srv_cache_count) */
   const struct srv_worker *wk;
   util_list_for_each(wk, &server->workers, link) {
      if (!wk->served || !wk->status || (uid != (uid_t)-1 && wk->served_uid != uid) ||
          (program && strcmp(wk->served_program, program)))
         continue;
      uint64_t hits = atomic_load(&wk->status->pipelines_cached);
      uint64_t misses = atomic_load(&wk->status->pipelines_compiled);
      struct srv_cache_entry *e =
         hits || misses ? entry_of(&v, &n, wk->served_uid, wk->served_program) : NULL;
      if (e) {
         e->hits += hits;
         e->misses += misses;
      }
   }
   *ret = v;
   return (int)n;
}

int64_t
srv_cache_clear(struct srv_server *server, uid_t uid, const char *program,
                 uint64_t *ret_files)
{
   *ret_files = 0;
   struct walk w = {0};
   walk_users(server, uid, &w);
   int users = open_users(server);
   int64_t removed = 0;
   for (size_t i = 0; users >= 0 && i < w.n; i++) {
      char prog[64];
      file_program(w.files[i].rel, prog, sizeof(prog));
      if (program && strcmp(prog, program))
         continue;
      if (remove_rel(users, w.files[i].uid, w.files[i].owner, w.files[i].rel)) {
         removed += (int64_t)w.files[i].bytes;
         (*ret_files)++;
      }
   }
   if (users >= 0)
      close(users);
   free(w.files);
   struct srv_caches *c = server->caches;
   for (size_t i = 0; c && i < c->n_stats; i++) {
      if ((uid == (uid_t)-1 || c->stats[i].uid == uid) &&
          (!program || !strcmp(c->stats[i].program, program)))
         c->stats[i].hits = c->stats[i].misses = 0;
   }
   return users < 0 ? users : removed;
}

/* ---- bounds ------------------------------------------------------------------ */

static int
older_first(const void *a, const void *b)
{
   const struct walk_file *x = a, *y = b;
   return x->last < y->last ? -1 : x->last > y->last;
}

/* Whether a user has a client now (its files may be in use). */
static bool
user_active(const struct srv_server *server, uid_t uid)
{
   const struct srv_client *client;
   util_list_for_each(client, &server->clients, link) {
      if (client->uid == uid && client->worker)
         return true;
   }
   return false;
}

struct user_total {
   uid_t uid;
   uint64_t bytes;
};

static struct user_total *
total_of(struct user_total *t, size_t *n, uid_t uid)
{
   for (size_t i = 0; i < *n; i++) {
      if (t[i].uid == uid)
         return &t[i];
   }
   t[*n] = (struct user_total){uid, 0};
   return &t[(*n)++];
}

void
srv_cache_trim(struct srv_server *server)
{
   const struct daemon_limits *l = &server->cfg.limits;
   struct walk w = {0};
   walk_users(server, (uid_t)-1, &w);
   int users = w.n ? open_users(server) : -ENOENT;
   struct user_total *totals = users >= 0 ? calloc(w.n, sizeof(*totals)) : NULL;
   if (!totals) {
      if (users >= 0)
         close(users);
      free(w.files);
      return;
   }
   /* oldest first: each user's bound, then the bound of all together */
   qsort(w.files, w.n, sizeof(*w.files), older_first);
   size_t n_users = 0;
   uint64_t all = 0;
   for (size_t i = 0; i < w.n; i++) {
      total_of(totals, &n_users, w.files[i].uid)->bytes += w.files[i].bytes;
      all += w.files[i].bytes;
   }
   for (int pass = 0; pass < 2; pass++) {
      for (size_t i = 0; i < w.n; i++) {
         struct walk_file *f = &w.files[i];
         struct user_total *t = total_of(totals, &n_users, f->uid);
         bool over = pass == 0 ? t->bytes > l->cache_user_bytes : all > l->cache_total_bytes;
         if (!over || !f->bytes || user_active(server, f->uid))
            continue;
         if (remove_rel(users, f->uid, f->owner, f->rel)) {
            util_debug("cache of user %u: %s removed (least recently used)",
                       (unsigned)f->uid, f->rel);
            t->bytes -= f->bytes;
            all -= f->bytes;
            f->bytes = 0; /* (gone: the second pass passes it over) */
         }
      }
   }
   free(totals);
   close(users);
   free(w.files);
}

static void
on_trim(evutil_socket_t fd, short what, void *data)
{
   srv_cache_trim(data);
}

void
srv_cache_trim_soon(struct srv_server *server)
{
   struct srv_caches *c = server->caches;
   if (!c || c->state[0] || !server->base)
      return;
   if (!c->trim)
      c->trim = evtimer_new(server->base, on_trim, server);
   if (!c->trim || evtimer_pending(c->trim, NULL))
      return;
   const struct timeval tv = {TRIM_DELAY_MS / 1000, (TRIM_DELAY_MS % 1000) * 1000};
   evtimer_add(c->trim, &tv);
}
