/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The identities a worker process takes (gpud_become.c): started as root
 * by a root server that gives each client user's workers a uid of their
 * own, it runs as the base user (--user) with root as its saved uid while
 * it loads the host driver and waits; given a client, it becomes that
 * user's uid and gid for good, every thread of it, with no capabilities
 * left.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* "UID:GID:GROUP,GROUP,...": the base identity, taken at once (root's
 * saved uid kept).  -EPERM: not root; -EINVAL: a bad text. */
int gpud_become_base(const char *spec);

/* Whether the worker can still take a client's identity. */
int gpud_become_can(void);

/* The client user's identity, for good: uid, gid (its own group) and the
 * base's groups of the GPU's device nodes; every thread checked. */
int gpud_become_client(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups);

/* The worker's caches in dir from now on (its XDG_CACHE_HOME, and its
 * HOME where it runs as another user than the server: the host drivers'
 * disk caches and gpud's pipeline cache), or none kept (dir NULL or ""). */
void gpud_become_cache_dir(const char *dir);
