/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Completions held back by gpudctl, told on the completion pages
 * (gpud_hold.c).
 */
#include "gpud_context.h"

struct gpud_completion_header;

/* The page says from now on whether completions are held back; the
 * context's thread that follows the status page starts with the first.
 * Unwatch a page before it is unmapped; end with the context. */
void gpud_hold_watch_page(struct gpud_context *ctx, struct gpud_completion_header *page);
void gpud_hold_unwatch_page(struct gpud_context *ctx, struct gpud_completion_header *page);
void gpud_hold_end(struct gpud_context *ctx);
