/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The daemon's configuration (srv_config.c): defaults, then the files,
 * then the command line.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "daemon_host.h"
#include "daemon_limits.h"
#include "daemon_select.h"
#include "daemon_version.h"

/* The workers' uids by default: in the range systemd's UIDS-GIDS.md leaves
 * unused (1879048192-2147352575, below its foreign range), 65536 of them. */
#define SRV_WORKER_UID_FIRST ((uid_t)2113929216) /* 0x7e000000 */
#define SRV_WORKER_UID_LAST ((uid_t)2113994751)

enum srv_isolation {
   SRV_ISOLATION_PROCESS, /* a worker process per client (the default) */
   SRV_ISOLATION_THREAD,  /* contexts on threads of the server, for debugging */
};

/* A fair share's rule from the configuration files: [user NAME] (a user's
 * clients: its nice level, and a quota its clients share) or [program NAME]
 * (each client of that name: its nice level and quota). */
#define SRV_MAX_SHARE_RULES 64
struct srv_share_rule {
   bool user;
   const char *name;    /* as written */
   uid_t uid;           /* a user's, resolved when read */
   bool has_nice;
   int nice;
   bool has_quota;
   uint32_t quota_ppm;  /* a share in millionths; 0: none */
};

/* Everything the command line sets. */
struct srv_config {
   const char *socket_path; /* NULL: systemd's socket or the default */
   const char *manifest;    /* host driver; NULL: pick one */
   const char *device;      /* the served device's selector, as written */
   struct daemon_selector device_sel; /* ... parsed */
   const char *sysfs_root;  /* render nodes from this sysfs tree, not libdrm */
   bool list_devices;       /* --list-devices */
   enum daemon_validate_mode validate;
   enum daemon_spirv_mode spirv;
   enum srv_isolation isolation;
   bool sandbox;
   bool fair_share;         /* the schedule page (srv_share.c) */
   const char *user;        /* workers run as this user before they have a client, and
                             * as its groups (root daemons) */
   /* a uid (and gid) of their own for each client user's workers, from
    * this range (root daemons); first > last: none, every worker as user */
   uid_t worker_uid_first, worker_uid_last;
   const char *state_dir;   /* what the server keeps (the uids given); NULL: default */
   const char *worker_base; /* a worker's: UID:GID:GROUP,... it runs as until it has
                             * a client, keeping root's saved uid to take the
                             * client user's identity then (gpud_worker.c) */
   const char *cache_dir;   /* the caches it keeps for each user; NULL: default */
   const char *group;       /* socket group and who may connect (root daemons) */
   const char *admin_group; /* may see and act on every client */
   const char *bus;         /* D-Bus: system, session, none or an address;
                             * NULL: the system bus as root, else the session
                             * bus, where there is one */
   unsigned spare_workers;
   int replay_threads;      /* a worker's replay lanes; -1: by its CPUs */
   struct daemon_limits limits;
   struct srv_share_rule share_rules[SRV_MAX_SHARE_RULES];
   unsigned n_share_rules;
   int log_level;           /* enum util_log_level, or -1: the default */
   int start_log_level;     /* the level before the files (a reload without
                             * log-level returns to it) */
   /* the values read from configuration files */
   struct srv_config_strings *strings;
};

/* Frees cfg's strings (and those of the configurations it replaced); cfg
 * keeps older's strings alive (a reload keeps some values of the running
 * configuration). */
void srv_config_finish(struct srv_config *cfg);
void srv_config_keep_older(struct srv_config *cfg, struct srv_config *older);

enum srv_config_result {
   SRV_CONFIG_OK,
   SRV_CONFIG_EXIT,  /* --help, --version: printed */
   SRV_CONFIG_USAGE, /* a bad command line (said on stderr): exit 2 */
   SRV_CONFIG_BAD,   /* a bad configuration file, *error says why: exit 78 */
};

/* cfg from the defaults, the files and argv (kept for reloads).
 * *worker_parent: the server's pid for a worker (--worker), else 0. */
enum srv_config_result srv_config_build(struct srv_config *cfg, int argc, char **argv,
                                          pid_t *worker_parent, char **error);
/* The configuration again, for a reload (SIGHUP): the files read again and
 * the command line applied over them.  -1 with *error ("file:line: reason",
 * to free) when it cannot. */
int srv_config_reload(struct srv_config *cfg, char **error);
