/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker's system-call filter and process hardening (gpud_sandbox.c),
 * entered once the worker holds what it needs: 0 or -errno. */
int gpud_sandbox_enter(void);
