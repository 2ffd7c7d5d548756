/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Pipelines and shader modules made on threads of their own
 * (gpud_compile.c): a client's vkCreate*Pipelines and vkCreateShaderModule
 * run beside its other commands, as an application's threads compile side
 * by side on the host driver directly.
 */

#include <stdbool.h>
#include <stdint.h>

struct gpud_call;
struct gpud_context;
struct gpud_object;

/* Takes the command over when it can run on a compile thread (a reply is
 * wanted, nothing needs this thread's command state, room for another
 * job): its new ids are in the table, not usable until the job ends, and
 * the job sends the reply.  args is the command's decoded arguments, kept
 * (with the call's arena) until then; kept_cache whether its pipeline cache
 * is the device's kept one, and cache_keys its pipelines' keys there (in
 * the arena: gpud_pipecache_keys).  False: the caller runs it here. */
bool gpud_compile_defer(struct gpud_call *call, uint32_t op, const void *args, bool kept_cache,
                        const uint64_t *cache_keys);
/* Waits until every compile job has ended (or for at most timeout_ns). */
void gpud_compile_drain(struct gpud_context *ctx);
void gpud_compile_drain_for(struct gpud_context *ctx, uint64_t timeout_ns);
/* Takes the ids of objects that jobs failed to make out of the table (the
 * decoding thread, between commands; no lane runs meanwhile). */
void gpud_compile_reap(struct gpud_context *ctx);
/* Whether jobs left failed ids to take out. */
bool gpud_compile_has_dead(const struct gpud_context *ctx);
/* Ends the threads (after gpud_compile_drain) and frees what they kept. */
void gpud_compile_destroy(struct gpud_context *ctx);
/* GPUD_PROFILE: the jobs so far and the time they took. */
void gpud_compile_profile(const struct gpud_context *ctx, uint64_t *ret_jobs, uint64_t *ret_ns);
