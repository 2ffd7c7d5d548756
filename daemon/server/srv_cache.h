/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The caches the server keeps (srv_cache.c): one directory per client
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

struct srv_server;

/* Where the caches are, made and checked at start: the server says in its
 * log, and in srv_cache_state(), when it cannot keep them ("" it can). */
void srv_cache_init(struct srv_server *server);
void srv_cache_finish(struct srv_server *server);
const char *srv_cache_state(const struct srv_server *server);
const char *srv_cache_root(const struct srv_server *server);

/* A client user's directory, made (or taken back from another uid) for
 * owner:group, mode 0700; its path in path.  -errno: none kept (path ""). */
int srv_cache_user_dir(struct srv_server *server, uid_t client, uid_t owner, gid_t group,
                        char *path, size_t size);

/* What a user's cache holds, per program (gpud's pipeline caches are one
 * file per program and device; the drivers' caches are the program "").
 * Hits and misses: pipelines its workers made with gpud's cache since the
 * daemon started (the workers count them: srv_cache_count). */
struct srv_cache_entry {
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
int srv_cache_list(struct srv_server *server, uid_t uid, const char *program,
                    struct srv_cache_entry **ret);
/* Removes what it names the same way (program NULL: the user's whole
 * cache); the bytes removed (and the files, in ret_files), or -errno. */
int64_t srv_cache_clear(struct srv_server *server, uid_t uid, const char *program,
                         uint64_t *ret_files);
/* Brings the users' caches under their bounds: each user's, then all
 * together, least recently used files first (a user whose workers are
 * running is left for later). */
void srv_cache_trim(struct srv_server *server);
/* ... a second from now (a client ended), once for clients ending together. */
void srv_cache_trim_soon(struct srv_server *server);
/* A client's pipelines made with gpud's cache, found there and not. */
void srv_cache_count(struct srv_server *server, uid_t uid, const char *program, uint64_t hits,
                      uint64_t misses);
