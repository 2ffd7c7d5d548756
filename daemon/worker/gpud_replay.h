/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Recordings (gpud_replay.c): chunks checked and replayed, by the decoding
 * thread or by replay lanes, and submissions waiting for the command
 * buffers they name.
 */
#include "gpud_call.h"

/* The replay lanes and the submissions waiting for them (NULL: out of
 * memory; no lanes where there are few CPUs). */
struct gpud_replay *gpud_replay_create(struct gpud_context *ctx);
/* Stops the lanes (what they hold is dropped). */
void gpud_replay_destroy(struct gpud_replay *r);
/* Checks a chunk (a whole WIRE_OP_CHUNK command) and replays it, or gives
 * it to its host pool's lane (after: the bytes of its message after it);
 * negative when the client must be disconnected (the reason is logged and
 * sent). */
int gpud_replay_chunk(struct gpud_call *call, const uint8_t *data, uint32_t size,
                      size_t after);
/* Host pools an application's command pool is spread over where lanes
 * replay (0: no lanes, its own alone; gpud_cmd_buffer.c). */
unsigned gpud_replay_pool_shards(const struct gpud_replay *r);
/* Before the decoding thread runs a command (op, its parameters): waits for
 * the lanes and the waiting submissions where it could touch what they use
 * (a reset of a pool, for the pool's chunks). */
void gpud_replay_order(struct gpud_replay *r, uint32_t op, const uint8_t *params, size_t size);
/* Waits for everything the lanes and the submissions have. */
void gpud_replay_wait(struct gpud_replay *r);
/* A submission (the prepared call: vkQueueSubmit or vkQueueSubmit2) waits,
 * in order with the others, for the replay of the command buffers it names,
 * the decoding thread going on: 1 when it waits (it runs later), 0 when it
 * is to run now, negative when it is malformed (running it says why). */
int gpud_replay_submit(struct gpud_call *call);
/* GPUD_PROFILE: the lanes' replaying time and commands. */
void gpud_replay_profile(struct gpud_replay *r, uint64_t *ret_ns, uint64_t *ret_commands);
