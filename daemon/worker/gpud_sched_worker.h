/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A worker's side of the fair share (gpud_sched.c; the page:
 * daemon/common/daemon_sched.h).  Every call takes NULL, and a client bound to no
 * page goes unscheduled.
 */

#include <stdbool.h>
#include <stdint.h>

struct gpud_sched;

struct gpud_sched *gpud_sched_new(void);
/* The schedule page (fd, a server's) and the client's slot on it, in place
 * of any before (a restart's server has a page of its own); false when it
 * cannot be mapped or is of another layout. */
bool gpud_sched_bind(struct gpud_sched *s, int fd, uint32_t slot);
/* No page from now on (a restart's server has none to give). */
void gpud_sched_unbind(struct gpud_sched *s);
void gpud_sched_free(struct gpud_sched *s);
/* The client's nice level as its server set it (0 when unscheduled). */
int gpud_sched_nice(struct gpud_sched *s);
/* Whether the client's GPU time must come from the device's timestamps: it
 * shares the GPU with other clients, or a quota holds it (or no page says
 * either way).  A client alone without a quota has its queues to itself,
 * and the time they are busy is its GPU time, without the timestamps'
 * command buffers around each submission. */
bool gpud_sched_timed(struct gpud_sched *s);
/* Before a submission goes to the host: waits for the client's turn. */
void gpud_sched_admit(struct gpud_sched *s);
/* An admitted submission that did not go to the host, or that nothing
 * tracks to its end. */
void gpud_sched_dropped(struct gpud_sched *s);
/* An admitted submission completed, having taken gpu_ns of GPU time. */
void gpud_sched_done(struct gpud_sched *s, uint64_t gpu_ns);
