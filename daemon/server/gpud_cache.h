/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The caches the server keeps (gpud_cache.c): one directory per client
 * user, CACHE_DIR/users/UID, which the server makes and gives to the uid
 * that user's workers run as; the host drivers' disk caches and gpud's
 * pipeline cache live there (the worker's XDG_CACHE_HOME).  The server
 * bounds them (per user and in all, least recently used files first),
 * shows them (gpudctl cache) and clears them.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gpud_server;

/* Where the caches are, made and checked at start: the server says in its
 * log, and in gpud_cache_state(), when it cannot keep them ("" it can). */
void gpud_cache_init(struct gpud_server *server);
void gpud_cache_finish(struct gpud_server *server);
const char *gpud_cache_state(const struct gpud_server *server);
const char *gpud_cache_root(const struct gpud_server *server);

/* A client user's directory, made (or taken back from another uid) for
 * owner:group, mode 0700; its path in path.  -errno: none kept (path ""). */
int gpud_cache_user_dir(struct gpud_server *server, uid_t client, uid_t owner, gid_t group,
                        char *path, size_t size);

/* What a user's cache holds, per program (gpud's pipeline caches are one
 * file per program and device; the drivers' caches are the program "").
 * Hits and misses: pipelines its workers made with gpud's cache since the
 * daemon started (the workers count them: gpud_cache_count). */
struct gpud_cache_entry {
   uid_t uid;
   char program[64];
   uint64_t bytes;
   uint64_t files;
   int64_t last_use; /* seconds since the epoch; 0: never */
   uint64_t hits, misses;
};

/* The entries of the users `uid` names (every user: uid (uid_t)-1) and of
 * programs named `program` (NULL: all), into a malloc'ed array; their
 * count, or -errno. */
int gpud_cache_list(struct gpud_server *server, uid_t uid, const char *program,
                    struct gpud_cache_entry **ret);
/* Removes what it names the same way (program NULL: the user's whole
 * cache); the bytes removed (and the files, in ret_files), or -errno. */
int64_t gpud_cache_clear(struct gpud_server *server, uid_t uid, const char *program,
                         uint64_t *ret_files);
/* Brings the users' caches under their bounds: each user's, then all
 * together, least recently used files first (a user whose workers are
 * running is left for later). */
void gpud_cache_trim(struct gpud_server *server);
/* ... a second from now (a client ended), once for clients ending together. */
void gpud_cache_trim_soon(struct gpud_server *server);
/* A client's pipelines made with gpud's cache, found there and not. */
void gpud_cache_count(struct gpud_server *server, uid_t uid, const char *program, uint64_t hits,
                      uint64_t misses);
