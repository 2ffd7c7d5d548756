/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Fault injection (gpud_inject.c): what gpudctl asks for, from what the
 * server wrote on the status page.
 */
#include "gpud_call.h"

/* Before each command: loses every device when asked to. */
void gpud_inject_before_command(struct gpud_call *call);
/* vkAllocateMemory: whether this allocation must fail. */
bool gpud_inject_fail_alloc(struct gpud_context *ctx);
