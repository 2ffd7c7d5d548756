/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Blocking waits (gpud_wait.c) on threads of their own, so that the
 * client's stream keeps flowing.
 */
#include "gpud_call.h"

/* Ends the waits of a device (or every device: NULL) that use handle (or
 * any: 0), before what they use goes. */
void gpud_waiters_cancel(struct gpud_context *ctx, struct gpud_object *device, uint64_t handle);
