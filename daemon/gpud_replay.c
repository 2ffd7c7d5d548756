/* SPDX-License-Identifier: MIT */
/*
 * Recordings: the ICD sends what an application records into a command
 * buffer as it records, in chunks (WIRE_OP_CHUNK, docs/protocol.md), and
 * the worker replays each chunk into the host command buffer as it comes,
 * so that by vkEndCommandBuffer nearly all of it is in the host's command
 * buffer already.
 *
 * A chunk is checked against the recording's state before anything of it
 * runs: its command buffer must be one of the client's, the first chunk of a
 * recording starts with vkBeginCommandBuffer, every later one follows the
 * last in order while the command buffer is recording (not reset, alone or
 * with its pool, since), and every command in it is a recorded command on
 * that command buffer.  Anything else is a protocol error.  Each command is
 * decoded on the fast path where it has one (gpud_gen_replay).
 */
#include "gpud_call.h"

#include <string.h>

#include "util_time.h"
#include "wire_gen.h"

/* The pool's resets so far: a recording that began before the last one is
 * over. */
static uint32_t
pool_resets(const struct gpud_object *cb)
{
   return cb->pool ? cb->pool->pool_resets : 0;
}

static bool
recording(const struct gpud_object *cb)
{
   return cb->recording && cb->pool_resets == pool_resets(cb);
}

/* Whether the device enabled an extension that brings the op (core ops:
 * always). */
static bool
op_enabled(const struct gpud_object *device, uint32_t op)
{
   const uint16_t *exts = wire_op_device_extensions(op);
   if (!exts)
      return true;
   for (; *exts != UINT16_MAX; exts++) {
      if (device->extensions && device->extensions[*exts])
         return true;
   }
   return false;
}

/* The end of a recording: its host command buffer ends; a failure loses
 * the device (nobody waits for the result). */
static void
end_recording(struct gpud_call *call, struct gpud_object *cb)
{
   call->op = WIRE_OP_vkEndCommandBuffer;
   struct wire_args_vkEndCommandBuffer a = {
      .commandBuffer = (VkCommandBuffer)(uintptr_t)cb->handle,
   };
   gpud_exec_vkEndCommandBuffer(call, &a);
   if (a.ret < 0)
      gpud_call_async_error(call, a.ret);
   cb->recording = false;
}

int
gpud_replay_chunk(struct gpud_call *call, const uint8_t *data, uint32_t size)
{
   struct gpud_context *ctx = call->ctx;
   struct wire_chunk_header h;
   if (size < sizeof(h))
      return gpud_context_protocol_error(ctx, "truncated chunk header");
   memcpy(&h, data, sizeof(h));
   if (h.cmd.flags & ~(uint32_t)WIRE_CHUNK_END)
      return gpud_context_protocol_error(ctx, "unknown chunk flags 0x%x", h.cmd.flags);
   struct gpud_object *cb = gpud_object_find(ctx, h.command_buffer);
   if (!cb || cb->type != VK_OBJECT_TYPE_COMMAND_BUFFER)
      return gpud_context_protocol_error(ctx, "chunk of an unknown command buffer");
   if (h.cmd.seq != 0) {
      if (!recording(cb))
         return gpud_context_protocol_error(ctx, "chunk of a command buffer that is not recording");
      if (h.cmd.seq != cb->next_chunk)
         return gpud_context_protocol_error(ctx, "chunk %u of a recording where %u was next",
                                            h.cmd.seq, cb->next_chunk);
   }

   const uint64_t t0 = ctx->profile ? util_now_ns() : 0; /* GPUD_PROFILE */
   /* every command runs on the command buffer's device */
   if (!gpud_call_begin_recorded(call, cb))
      return gpud_context_protocol_error(ctx, "out of memory");
   const VkCommandBuffer host = (VkCommandBuffer)(uintptr_t)cb->handle;
   const uint8_t *p = data + sizeof(h);
   const uint8_t *end = data + size;
   bool first = h.cmd.seq == 0;
   uint32_t n = 0, last = 0;
   while (p < end) {
      struct wire_cmd_header c;
      if ((size_t)(end - p) < sizeof(c) + 8)
         return gpud_context_protocol_error(ctx, "truncated command in a chunk");
      memcpy(&c, p, sizeof(c));
      if (c.size < sizeof(c) + 8 || c.size > (size_t)(end - p) || (c.size & 3) || c.flags ||
          c.seq)
         return gpud_context_protocol_error(ctx, "command of %u bytes in a chunk with %zu left",
                                            c.size, (size_t)(end - p));
      if (c.op >= WIRE_OP_COUNT || !wire_op_recorded[c.op])
         return gpud_context_protocol_error(ctx, "%s in a chunk: not a recorded command",
                                            wire_op_name(c.op));
      if ((c.op == WIRE_OP_vkBeginCommandBuffer) != first)
         return gpud_context_protocol_error(ctx, first ? "a recording that does not begin with "
                                                         "vkBeginCommandBuffer"
                                                       : "vkBeginCommandBuffer inside a recording");
      uint64_t id;
      memcpy(&id, p + sizeof(c), 8);
      if (id != h.command_buffer)
         return gpud_context_protocol_error(ctx, "%s on another command buffer in a chunk",
                                            wire_op_name(c.op));
      if (wire_op_recorded[c.op] == 2 && !op_enabled(cb->device, c.op))
         return gpud_context_protocol_error(
            ctx, "in %s: the device did not enable the extension of this command",
            wire_op_name(c.op));
      atomic_store_explicit(&ctx->status->op, c.op, memory_order_relaxed);
      struct wire_dec *d = gpud_call_next_recorded(call, c.op, p + sizeof(c), c.size - sizeof(c));
      if (!gpud_gen_replay(call, d, c.op, host))
         return gpud_context_protocol_error(ctx, "in %s: %s", wire_op_name(c.op),
                                            d->error ? d->error : "bad command");
      first = false;
      p += c.size;
      last = c.op;
      n++;
   }
   if (first)
      return gpud_context_protocol_error(ctx, "a recording that does not begin with "
                                              "vkBeginCommandBuffer");
   if (h.cmd.seq == 0) {
      cb->recording = true;
      cb->pool_resets = pool_resets(cb);
   }
   cb->next_chunk = h.cmd.seq + 1;
   if (h.cmd.flags & WIRE_CHUNK_END) {
      atomic_store_explicit(&ctx->status->op, WIRE_OP_vkEndCommandBuffer, memory_order_relaxed);
      end_recording(call, cb);
      last = WIRE_OP_vkEndCommandBuffer;
      n++;
   }
   atomic_store_explicit(&ctx->status->op, 0, memory_order_relaxed);
   atomic_fetch_add_explicit(&ctx->status->commands, n, memory_order_relaxed);
   if (ctx->profile) {
      ctx->profile->ns[GPUD_PROFILE_CHUNKS] += util_now_ns() - t0;
      ctx->profile->count[GPUD_PROFILE_CHUNKS]++;
      ctx->profile->recorded += n;
   }
   if (last)
      atomic_store_explicit(&ctx->status->last_op, last, memory_order_relaxed);
   return 0;
}

/* A reset ends the recording (the ICD starts the next at chunk 0). */
void
gpud_exec_vkResetCommandBuffer(struct gpud_call *call, struct wire_args_vkResetCommandBuffer *a)
{
   struct gpud_object *cb = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                            (uint64_t)(uintptr_t)a->commandBuffer);
   if (cb)
      cb->recording = false;
   gpud_gen_exec_vkResetCommandBuffer(call, a);
}

/* ... and so does a reset of its pool, for every command buffer of it. */
void
gpud_exec_vkResetCommandPool(struct gpud_call *call, struct wire_args_vkResetCommandPool *a)
{
   struct gpud_object *pool = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_POOL,
                                              (uint64_t)(uintptr_t)a->commandPool);
   if (pool)
      pool->pool_resets++;
   gpud_gen_exec_vkResetCommandPool(call, a);
}
