/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * This build's version (daemon_version.c, from the project's), and the
 * version of the server-worker protocol it speaks.  A server adopts the
 * workers of another build after a restart (an upgrade), so the two may
 * differ: each side says its versions (WorkerReady, AdoptRequest,
 * WorkerAdopted) and gpudctl shows each worker's.
 */

extern const char daemon_version[];

/* WorkerMessage as this build speaks it; a later build adds fields (an
 * older peer ignores them, and reads their absence as unknown). */
#define DAEMON_CONTROL_VERSION 1u
