/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * gpudctl: one daemon's view comes as a Gpud__StatusReply, whether it was
 * asked on the control socket or over D-Bus, so both print the same.
 */

#include <stdbool.h>
#include <stdint.h>

#include "wire_control.h"

/* The version of the JSON documents (docs/gpudctl-json.md): bumped when a
 * member changes meaning or goes; new members do not bump it. */
#define GPUDCTL_JSON_VERSION 1

/* What gpudctl cache names: one user's (user_given) or every user the
 * caller may see, one program's ("" every program's), and whether to
 * clear it. */
struct gpudctl_cache_query {
   bool user_given;
   uint32_t uid;
   const char *program;
   bool clear;
};

/* How gpudctl reaches one daemon. */
struct gpudctl_daemon {
   const char *where; /* its socket, or its D-Bus object: in every JSON document */
   /* 0 and the status (freed with free_status), or 1 with a message printed */
   int (*status)(struct gpudctl_daemon *d, Gpud__StatusReply **ret);
   void (*free_status)(struct gpudctl_daemon *d, Gpud__StatusReply *s);
   /* 0 done, 1 not found / denied / refused (a message printed) */
   int (*disconnect)(struct gpudctl_daemon *d, uint64_t client_id);
   int (*inject)(struct gpudctl_daemon *d, uint64_t client_id, const char *fault,
                 uint64_t value);
   int (*renice)(struct gpudctl_daemon *d, uint64_t client_id, int nice);
   /* gpudctl cache [clear]: 0 and the reply (freed with free_cache), or 1
    * with a message printed (denied, no cache) */
   int (*cache)(struct gpudctl_daemon *d, const struct gpudctl_cache_query *q,
                Gpud__CacheReply **ret);
   void (*free_cache)(struct gpudctl_daemon *d, Gpud__CacheReply *c);
   void (*close)(struct gpudctl_daemon *d);
};

/* gpudctl_print.c */
void gpudctl_print_status(const Gpud__StatusReply *s, const char *where, bool json);
/* clients, client ID, faults, queues, memory: 0, or 1 when the client asked
 * for is not there (or not this user's to see) */
int gpudctl_print_part(const Gpud__StatusReply *s, const char *where, const char *command,
                       uint64_t id, bool json);
void gpudctl_print_cache(const Gpud__CacheReply *c, const char *where, bool cleared, bool json);
/* One frame of `gpudctl top`: now against the sample before (NULL: none),
 * dt_ns apart. */
void gpudctl_print_top(const Gpud__StatusReply *now, const Gpud__StatusReply *before,
                       uint64_t dt_ns, const char *where, unsigned width);

/* gpudctl_bus.c: the daemons on a bus ("system", "session" or an address);
 * NULL-terminated, each to close. */
struct gpudctl_daemon **gpudctl_bus_daemons(const char *bus);
