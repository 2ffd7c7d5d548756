/* SPDX-License-Identifier: MIT */
/*
 * The client's stream: each message's commands in order, every size, op
 * and fd checked; a recording's chunks to the replay, a submission to it to
 * wait for its command buffers, every other command decoded and run once
 * what it could touch is no lane's, and its reply sent.  The first
 * violation disconnects the client with the reason logged.
 */
#include "gpud_stream.h"

#include <string.h>
#include <unistd.h>

#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_inject.h"
#include "gpud_queue.h"
#include "gpud_replay.h"
#include "util_fd.h"
#include "util_time.h"
#include "util_trace.h"
#include "wire_gen.h"

int
gpud_stream_process(struct gpud_context *ctx, const uint8_t *data, size_t size, int *fds,
                         unsigned n_fds)
{
   /* the context's, kept from message to message (its buffers grow once) */
   struct gpud_call *call = ctx->call;
   call->reply_fd = -1;
   call->new_fd = -1;
   int r = 0;
   if (size == 0 && n_fds > 0)
      r = gpud_context_protocol_error(ctx, "unexpected file descriptors: no command names them");
   while (r == 0 && size > 0) {
      struct wire_cmd_header h;
      if (size < sizeof(h)) {
         r = gpud_context_protocol_error(ctx, "truncated command header");
         break;
      }
      memcpy(&h, data, sizeof(h));
      if (h.size < sizeof(h) || h.size > size || (h.size & 3)) {
         r = gpud_context_protocol_error(ctx, "command size %u with %zu bytes left", h.size,
                                         size);
         break;
      }
      if (h.op == WIRE_OP_CHUNK) {
         r = gpud_replay_chunk(call, data, h.size, size - h.size);
         if (r < 0)
            break;
         data += h.size;
         size -= h.size;
         continue;
      }
      if (h.op < WIRE_OP_COUNT && wire_op_recorded[h.op]) {
         r = gpud_context_protocol_error(ctx, "%s outside a chunk of a recording",
                                         wire_op_name(h.op));
         break;
      }
      /* pipelines that compile jobs failed to make leave the table (which
       * the lanes read) */
      if (gpud_compile_has_dead(ctx)) {
         gpud_replay_wait(ctx->replay);
         gpud_compile_reap(ctx);
      }
      gpud_replay_order(ctx->replay, h.op, data + sizeof(h), h.size - sizeof(h));
      /* the worker's own copies on the GPU, before what could see them */
      if (ctx->own_devices && !(h.op < WIRE_OP_COUNT && gpud_gen_own_unaffected[h.op]))
         gpud_queue_own_settle(ctx);
      gpud_call_prepare(call, data, h.size);
      call->dec.fds = fds;
      call->dec.n_fds = n_fds;
      if (h.flags & WIRE_CMD_REPLY) {
         wire_enc_reset(&ctx->reply);
         wire_enc_begin_cmd(&ctx->reply, WIRE_OP_REPLY, 0, h.seq);
         call->reply = &ctx->reply;
      }
      atomic_fetch_add_explicit(&ctx->status->commands, 1, memory_order_relaxed);
      atomic_store_explicit(&ctx->status->op, h.op, memory_order_relaxed);
      atomic_store_explicit(&ctx->status->last_op, h.op, memory_order_relaxed);

      const uint64_t t0 = ctx->profile ? util_now_ns() : 0; /* GPUD_PROFILE */
      util_trace(UTIL_TRACE_CMD, h.op);
      gpud_inject_before_command(call);
      /* a submission may wait for the replay of its command buffers */
      int waits = gpud_replay_submit(call);
      bool ok = h.op != 0 && h.op < WIRE_OP_COUNT &&
                (waits > 0 || gpud_gen_dispatch(call, &call->dec, call->reply, h.op));
      atomic_store_explicit(&ctx->status->op, 0, memory_order_relaxed);
      gpud_call_finish(call);
      if (!ok) {
         util_fd_close(&call->reply_fd);
         if (h.op == 0 || h.op >= WIRE_OP_COUNT)
            r = gpud_context_protocol_error(ctx, "unknown op %u", h.op);
         else
            r = gpud_context_protocol_error(ctx, "in %s: %s", wire_op_name(h.op),
                                            call->dec.error ? call->dec.error : "bad command");
         break;
      }
      /* every fd of a message is one its commands name */
      bool stray = false;
      for (unsigned i = 0; h.size == size && i < n_fds; i++)
         stray |= fds[i] >= 0;
      if (stray) {
         for (unsigned i = 0; call->reply && i < ctx->reply.n_fds; i++)
            close(ctx->reply.fds[i]);
         util_fd_close(&call->reply_fd);
         r = gpud_context_protocol_error(ctx, "unexpected file descriptors: no command names them");
         break;
      }
      if (call->reply && !call->deferred) {
         wire_enc_end_cmd(&ctx->reply, 0);
         /* the fds the outputs named, then the memory's memfd */
         if (call->reply_fd >= 0 && ctx->reply.n_fds < WIRE_MAX_FDS)
            ctx->reply.fds[ctx->reply.n_fds++] = util_fd_move(&call->reply_fd);
         r = gpud_context_send_reply(ctx, &ctx->reply, ctx->reply.fds, ctx->reply.n_fds);
      }
      if (call->reply) {
         for (unsigned i = 0; i < ctx->reply.n_fds; i++)
            close(ctx->reply.fds[i]);
         ctx->reply.n_fds = 0;
      }
      util_fd_close(&call->reply_fd);
      if (ctx->profile) {
         ctx->profile->ns[h.op] += util_now_ns() - t0;
         ctx->profile->count[h.op]++;
      }
      if (r < 0)
         break;
      data += h.size;
      size -= h.size;
   }
   for (unsigned i = 0; i < n_fds; i++)
      util_fd_close(&fds[i]);
   return r;
}
