/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A worker serves one client: it loads the host driver (or, with
 * --isolation=thread, uses the server's), tells the server it is ready,
 * takes the client the server hands it, runs the client's context and says
 * goodbye.  It talks to the server only over its control channel (a
 * socketpair; gpud.proto's WorkerMessage) and the status page.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "daemon_host.h"
#include "daemon_version.h"

/* What the server tells a worker process on its command line. */
struct gpud_worker_options {
   int control_fd;
   pid_t parent;
   const char *manifest;
   const struct daemon_selector *device;
   const char *sysfs_root;
   enum daemon_validate_mode validate;
   enum daemon_spirv_mode spirv;
   bool sandbox; /* the system-call filter (off only for debugging) */
   uint32_t restart_grace_ms; /* serve on this long without a server; 0: end with it */
   /* started as root: the identity it takes until it has a client, keeping
    * root as its saved uid to take its client user's then (NULL: it runs
    * as it was started, for good) */
   const char *base_identity;
};

/* A worker's (and the daemon's) exit status when the host driver has no
 * device the selector names, or none at all: EX_UNAVAILABLE, which the units
 * do not restart for (nothing changes until the configuration or the
 * hardware does). */
#define GPUD_EXIT_NO_DEVICE 69

/* Process isolation: the main of `gpud --worker ...`.  Returns the exit
 * status when start-up fails; otherwise exits once its client is gone. */
int gpud_worker_process_main(const struct gpud_worker_options *opt);

/* Thread isolation: serves one client on the calling thread with the
 * server's host driver, releases everything, closes control_fd, returns. */
void gpud_worker_thread_main(int control_fd, const struct daemon_host *host);
