/* SPDX-License-Identifier: MIT */
/*
 * Recordings: the ICD sends what an application records into a command
 * buffer as it records, in chunks (WIRE_OP_CHUNK, docs/protocol.md), and
 * the worker replays each chunk into the host command buffer as it comes,
 * so that by vkEndCommandBuffer nearly all of it is in the host's command
 * buffer already.
 *
 * The decoding thread checks a chunk against the recording's state: its
 * command buffer must be one of the client's, the first chunk of a
 * recording starts with vkBeginCommandBuffer, every later one follows the
 * last in order while the command buffer is recording (not reset, alone or
 * with its pool, since).  Whoever replays it checks that every command in it
 * is a recorded command on that command buffer.  Anything else is a
 * protocol error.  Each command is decoded on the fast path where it has one
 * (gpud_gen_replay).
 *
 * Replay lanes: on machines with CPUs to spare, chunks are replayed on
 * threads of their own, a host command pool's on one lane (a host driver
 * records a pool's command buffers on one thread at a time, and different
 * pools in parallel; an application's pool is a few host pools there,
 * gpud_cmd_buffer.c), while the decoding thread goes on with the stream.
 * The decoding thread keeps the order where it matters: a command that
 * could touch what a lane works on waits for the lanes first
 * (gpud_replay_order), a reset of a pool waits for its lanes, a chunk that
 * executes secondary command buffers waits until the lanes have replayed
 * what came before it, and submissions wait, in order, until the command
 * buffers they name are replayed (gpud_replay_submit), the decoding thread
 * going on meanwhile: an application recording its next frame while the
 * last is submitted has both replayed at once.  A small last chunk of a
 * host pool whose lane has nothing left of it (a short recording made
 * between two waits) is replayed by the decoding thread itself, which
 * spares the lane's wake-up, unless the client has sent more after it
 * already.  Without lanes every chunk is replayed by the decoding thread as
 * it comes.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_replay.h"
#include "gpud_transfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_limits.h"
#include "util_env.h"
#include "util_spin.h"
#include "util_time.h"
#include "util_trace.h"
#include "wire_gen.h"

/* Large recordings of two pools this close together are replayed side by
 * side on lanes, and for this long after (solo_pool). */
#define REPLAY_SIDE_BY_SIDE_NS (5ull * 1000 * 1000)
#define REPLAY_SIDE_BY_SIDE_HOLD_NS (1000ull * 1000 * 1000)

/* Host pools an application's pool is spread over where there are lanes
 * (gpud_cmd_buffer.c). */
#define REPLAY_POOL_SHARDS 4u

/* Bytes of a submission or so: a client this far ahead of the decoding
 * thread has sent nothing after a recording but its submission. */
#define REPLAY_BEHIND_SUBMIT 256u

/* A chunk a lane replays: a copy of the whole command. */
struct replay_job {
   struct util_list link;
   struct gpud_object *cb;
   struct gpud_replay_unit *unit;
   size_t size;
   uint8_t data[];
};

struct replay_lane {
   struct gpud_replay *replay;
   unsigned index;
   pthread_t thread;
   bool started;
   pthread_mutex_t mutex;
   pthread_cond_t cond;
   struct util_list jobs; /* in order */
   atomic_bool sleeping;
   bool stop;
   uint64_t routed;        /* jobs given it (the decoding thread's) */
   _Atomic uint64_t done;  /* jobs it finished */
   struct gpud_call *call; /* its own command state */
   struct wire_arena *arena;
   uint64_t ns, commands; /* GPUD_PROFILE */
   struct util_spin_window window; /* how long it polls for the next chunk */
   uint32_t cpus_seen;             /* gpud_context_follow_cpus */
};

/* A submission waiting for the command buffers it names. */
struct replay_submit {
   struct util_list link;
   uint32_t op;
   uint32_t n_cbs;
   struct gpud_object **cbs;
   uint64_t *targets; /* each command buffer's chunks routed when it was submitted */
   size_t size;
   uint8_t *data; /* the command, header included */
};

struct gpud_replay {
   struct gpud_context *ctx;
   unsigned n_lanes, next_lane;
   struct replay_lane *lanes;
   _Atomic size_t queued; /* bytes of chunks in the lanes */
   /* lanes' progress, for whoever waits for it */
   pthread_mutex_t progress_mutex;
   pthread_cond_t progress;
   _Atomic unsigned waiters;
   /* submissions in order, and what runs them: submit_mutex is held by the
    * one thread running them (a submission may wait there for its turn on
    * the GPU, gpud_sched.c), list_mutex only while the list changes, so
    * that queueing the next one never waits for that turn */
   pthread_mutex_t submit_mutex;
   pthread_mutex_t list_mutex;
   struct util_list submits;
   _Atomic unsigned n_submits;
   atomic_bool look; /* submit_ready: someone found the lock taken */
   struct gpud_call *submit_call;
   struct wire_arena *submit_arena;
   /* the submitter: a thread that runs the submissions the decoding
    * thread queues while it polls for them, so that the decoding thread
    * goes on with the stream meanwhile (the host's vkQueueSubmit takes
    * microseconds, several times a frame or a token); asked counts the
    * submissions given it, polling says whether it looks */
   struct {
      pthread_t thread;
      bool started;
      pthread_mutex_t mutex;
      pthread_cond_t cond;
      bool sleeping, kicked, stop;
      atomic_bool polling;
      _Atomic uint64_t asked;
      struct util_spin_window window;
      uint32_t cpus_seen;
   } sub;
   /* the decoding thread's: the pool of the last large recording and
    * when it came, and until when large ones are replayed side by side
    * (solo_pool) */
   uint64_t big_pool;
   uint64_t big_ns, side_by_side_until_ns;
   /* the unit of command buffers of no host pool of their own */
   struct gpud_replay_unit stray;
};

/* ---- checks of a recording ------------------------------------------------------ */

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

/* ---- replaying a chunk ----------------------------------------------------------- */

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
}

/* GPUD_PROFILE: a recorded command's replay of op, begun at t0. */
static void
note_replayed(struct gpud_context *ctx, uint32_t op, uint64_t t0)
{
   atomic_fetch_add_explicit(&ctx->profile->rec_ns[op], util_now_ns() - t0,
                             memory_order_relaxed);
   atomic_fetch_add_explicit(&ctx->profile->rec_count[op], 1, memory_order_relaxed);
}

/* Replays the commands of a chunk the decoding thread checked (whole, header
 * included) into cb, reporting each on *op_word; the commands replayed, or
 * -1 when one broke the protocol (the client is ended). */
static int64_t
replay(struct gpud_call *call, struct gpud_object *cb, const uint8_t *data, size_t size,
       _Atomic uint32_t *op_word)
{
   struct gpud_context *ctx = call->ctx;
   struct wire_chunk_header h;
   memcpy(&h, data, sizeof(h));
   util_trace(UTIL_TRACE_CHUNK, (uint32_t)size);
   if (!gpud_call_begin_recorded(call, cb)) {
      gpud_context_protocol_error(ctx, "out of memory");
      return -1;
   }
   const VkCommandBuffer host = (VkCommandBuffer)(uintptr_t)cb->handle;
   const uint8_t *p = data + sizeof(h);
   const uint8_t *end = data + size;
   bool first = h.cmd.seq == 0;
   int64_t n = 0;
   while (p < end) {
      struct wire_cmd_header c;
      if ((size_t)(end - p) < sizeof(c) + 8) {
         gpud_context_protocol_error(ctx, "truncated command in a chunk");
         return -1;
      }
      memcpy(&c, p, sizeof(c));
      if (c.size < sizeof(c) + 8 || c.size > (size_t)(end - p) || (c.size & 3) || c.flags ||
          c.seq) {
         gpud_context_protocol_error(ctx, "command of %u bytes in a chunk with %zu left", c.size,
                                     (size_t)(end - p));
         return -1;
      }
      const char *why = NULL;
      uint64_t id;
      memcpy(&id, p + sizeof(c), 8);
      if (c.op >= WIRE_OP_COUNT || !wire_op_recorded[c.op])
         why = "not a recorded command";
      else if ((c.op == WIRE_OP_vkBeginCommandBuffer) != first)
         why = first ? "a recording that does not begin with vkBeginCommandBuffer"
                     : "vkBeginCommandBuffer inside a recording";
      else if (id != h.command_buffer)
         why = "on another command buffer than its chunk's";
      else if (wire_op_recorded[c.op] == 2 && !gpud_device_enables_op(cb->device, c.op))
         why = "the device did not enable the extension of this command";
      if (why) {
         gpud_context_protocol_error(ctx, "%s in a chunk: %s", wire_op_name(c.op), why);
         return -1;
      }
      atomic_store_explicit(op_word, c.op, memory_order_relaxed);
      gpud_transfer_note_op(cb, c.op);
      uint64_t t0 = ctx->profile ? util_now_ns() : 0;
      struct wire_dec *d = gpud_call_next_recorded(call, c.op, p + sizeof(c), c.size - sizeof(c));
      bool ok = gpud_gen_replay(call, d, c.op, host);
      if (ctx->profile)
         note_replayed(ctx, c.op, t0);
      if (!ok) {
         gpud_context_protocol_error(ctx, "in %s: %s", wire_op_name(c.op),
                                     d->error ? d->error : "bad command");
         return -1;
      }
      first = false;
      p += c.size;
      n++;
   }
   if (h.cmd.flags & WIRE_CHUNK_END) {
      atomic_store_explicit(op_word, WIRE_OP_vkEndCommandBuffer, memory_order_relaxed);
      uint64_t t0 = ctx->profile ? util_now_ns() : 0;
      end_recording(call, cb);
      if (ctx->profile)
         note_replayed(ctx, WIRE_OP_vkEndCommandBuffer, t0);
      n++;
   }
   atomic_store_explicit(op_word, 0, memory_order_relaxed);
   gpud_call_finish_recorded(call);
   util_trace(UTIL_TRACE_CHUNK_DONE, (uint32_t)n);
   return n;
}

/* ---- lanes ----------------------------------------------------------------------- */

static void submit_ready(struct gpud_replay *r);

/* Wakes whoever waits for the lanes' progress. */
static void
progressed(struct gpud_replay *r)
{
   if (!atomic_load(&r->waiters))
      return;
   pthread_mutex_lock(&r->progress_mutex);
   pthread_cond_broadcast(&r->progress);
   pthread_mutex_unlock(&r->progress_mutex);
}

/* Polls cond for spin_ns before its caller sleeps (a lane's chunk is
 * usually done soon, and the next one follows soon); whether it came to
 * hold. */
static bool
spin_until(bool (*cond)(struct gpud_replay *r, const void *arg), struct gpud_replay *r,
           const void *arg, uint64_t spin_ns)
{
   if (cond(r, arg))
      return true; /* before any look at the clock */
   uint64_t start = util_now_ns();
   do {
      for (unsigned i = 0; i < 16; i++) {
         if (cond(r, arg))
            return true;
         util_spin_pause(false);
      }
   } while (util_now_ns() - start < spin_ns);
   return false;
}

/* Waits until done() holds, the lanes' progress telling when to look again
 * (with a bounded sleep: a lane ended by a protocol error makes none). */
static void
wait_progress(struct gpud_replay *r, bool (*done)(struct gpud_replay *r, const void *arg),
              const void *arg)
{
   if (spin_until(done, r, arg, DAEMON_COMMAND_SPIN_NS))
      return;
   atomic_fetch_add(&r->waiters, 1);
   pthread_mutex_lock(&r->progress_mutex);
   while (!done(r, arg) && !atomic_load(&r->ctx->closing)) {
      const struct timespec ts = util_realtime_after(10 * 1000 * 1000);
      pthread_cond_timedwait(&r->progress, &r->progress_mutex, &ts);
   }
   pthread_mutex_unlock(&r->progress_mutex);
   atomic_fetch_sub(&r->waiters, 1);
}

/* Whether a lane has chunks it has not replayed. */
static bool
lane_has_work(struct gpud_replay *r, const void *arg)
{
   (void)r;
   const struct replay_lane *lane = arg;
   return atomic_load(&lane->done) != __atomic_load_n(&lane->routed, __ATOMIC_ACQUIRE);
}

static void *
lane_main(void *data)
{
   struct replay_lane *lane = data;
   struct gpud_replay *r = lane->replay;
   struct gpud_context *ctx = r->ctx;
   char name[16];
   snprintf(name, sizeof(name), "gpud-lane%u", lane->index);
   pthread_setname_np(pthread_self(), name);
   for (;;) {
      pthread_mutex_lock(&lane->mutex);
      uint64_t idle_since = 0;
      while (util_list_empty(&lane->jobs) && !lane->stop) {
         /* the next chunk usually follows: look for a while first */
         if (!idle_since)
            idle_since = util_now_ns();
         pthread_mutex_unlock(&lane->mutex);
         spin_until(lane_has_work, r, lane, lane->window.ns);
         pthread_mutex_lock(&lane->mutex);
         if (!util_list_empty(&lane->jobs) || lane->stop)
            break;
         lane->sleeping = true;
         pthread_cond_wait(&lane->cond, &lane->mutex);
         lane->sleeping = false;
      }
      if (lane->stop && util_list_empty(&lane->jobs)) {
         pthread_mutex_unlock(&lane->mutex);
         break;
      }
      struct replay_job *job = util_list_first(&lane->jobs, struct replay_job, link);
      util_list_remove(&job->link);
      pthread_mutex_unlock(&lane->mutex);
      if (idle_since) {
         uint64_t now = util_now_ns();
         util_spin_window_note(&lane->window, now - idle_since, now);
      }
      gpud_context_follow_cpus(ctx, &lane->cpus_seen);

      if (!atomic_load(&ctx->closing)) {
         uint64_t t0 = ctx->profile ? util_now_ns() : 0;
         int64_t n = replay(lane->call, job->cb, job->data, job->size,
                            &ctx->status->lanes[lane->index % DAEMON_STATUS_LANES].op);
         if (n > 0) {
            atomic_fetch_add_explicit(&ctx->status->commands, (uint64_t)n,
                                      memory_order_relaxed);
            if (ctx->profile) {
               lane->ns += util_now_ns() - t0;
               lane->commands += (uint64_t)n;
            }
         }
      }
      struct gpud_object *cb = job->cb;
      struct gpud_replay_unit *unit = job->unit;
      atomic_fetch_sub(&r->queued, job->size);
      free(job);
      atomic_fetch_add_explicit(&unit->chunks_replayed, 1, memory_order_release);
      atomic_fetch_add_explicit(&cb->chunks_replayed, 1, memory_order_release);
      atomic_fetch_add_explicit(&lane->done, 1, memory_order_release);
      progressed(r);
      if (atomic_load(&r->n_submits))
         submit_ready(r);
   }
   return NULL;
}

static void
lane_finish(struct replay_lane *lane)
{
   if (lane->started) {
      pthread_mutex_lock(&lane->mutex);
      lane->stop = true;
      pthread_cond_signal(&lane->cond);
      pthread_mutex_unlock(&lane->mutex);
      pthread_join(lane->thread, NULL);
   }
   while (!util_list_empty(&lane->jobs)) {
      struct replay_job *job = util_list_first(&lane->jobs, struct replay_job, link);
      util_list_remove(&job->link);
      free(job);
   }
   gpud_call_destroy(lane->call);
   wire_arena_destroy(lane->arena);
   pthread_mutex_destroy(&lane->mutex);
   pthread_cond_destroy(&lane->cond);
}

/* ---- the submitter ------------------------------------------------------------------ */

static void *
submitter_main(void *data)
{
   struct gpud_replay *r = data;
   pthread_setname_np(pthread_self(), "gpud-submit");
   uint64_t seen = 0, idle_since = 0;
   for (;;) {
      uint64_t asked = atomic_load(&r->sub.asked);
      if (asked != seen) {
         seen = asked;
         if (idle_since) {
            uint64_t now = util_now_ns();
            util_spin_window_note(&r->sub.window, now - idle_since, now);
         }
         gpud_context_follow_cpus(r->ctx, &r->sub.cpus_seen);
         submit_ready(r);
         idle_since = util_now_ns();
         continue;
      }
      if (!idle_since)
         idle_since = util_now_ns();
      if (util_now_ns() - idle_since < r->sub.window.ns && !atomic_load(&r->ctx->closing)) {
         for (unsigned i = 0; i < 16 && atomic_load(&r->sub.asked) == seen; i++)
            util_spin_pause(false);
         continue;
      }
      /* no longer looking: the decoding thread runs what comes and wakes
       * it (a submission given just before it said so is seen here) */
      atomic_store(&r->sub.polling, false);
      if (atomic_load(&r->sub.asked) != seen) {
         atomic_store(&r->sub.polling, true);
         continue;
      }
      pthread_mutex_lock(&r->sub.mutex);
      while (!r->sub.kicked && !r->sub.stop) {
         r->sub.sleeping = true;
         pthread_cond_wait(&r->sub.cond, &r->sub.mutex);
         r->sub.sleeping = false;
      }
      r->sub.kicked = false;
      bool stop = r->sub.stop;
      pthread_mutex_unlock(&r->sub.mutex);
      if (stop)
         break;
      atomic_store(&r->sub.polling, true);
      idle_since = 0;
   }
   return NULL;
}

/* Gives the submitter the submissions queued, where it looks for them;
 * else runs them here and wakes it, to look for the next ones. */
static void
submit_queued(struct gpud_replay *r)
{
   if (!r->sub.started) {
      submit_ready(r);
      return;
   }
   atomic_fetch_add(&r->sub.asked, 1);
   if (atomic_load(&r->sub.polling))
      return;
   submit_ready(r);
   pthread_mutex_lock(&r->sub.mutex);
   r->sub.kicked = true;
   if (r->sub.sleeping)
      pthread_cond_signal(&r->sub.cond);
   pthread_mutex_unlock(&r->sub.mutex);
}

static void
submitter_finish(struct gpud_replay *r)
{
   if (r->sub.started) {
      pthread_mutex_lock(&r->sub.mutex);
      r->sub.stop = true;
      pthread_cond_signal(&r->sub.cond);
      pthread_mutex_unlock(&r->sub.mutex);
      pthread_join(r->sub.thread, NULL);
      r->sub.started = false;
   }
}

/* How many lanes: the daemon's replay-threads, else none where polls yield
 * (few CPUs: the decoding thread replays), else one a CPU beyond two, eight
 * at most. */
static unsigned
lanes_wanted(const struct gpud_context *ctx)
{
   if (ctx->info.replay_threads >= 0)
      return (unsigned)UTIL_MIN(ctx->info.replay_threads, DAEMON_STATUS_LANES);
   if (util_spin_yields())
      return 0;
   long cpus = sysconf(_SC_NPROCESSORS_ONLN);
   return cpus > 2 ? (unsigned)UTIL_MIN(cpus - 2, DAEMON_STATUS_LANES) : 0;
}

struct gpud_replay *
gpud_replay_create(struct gpud_context *ctx)
{
   struct gpud_replay *r = calloc(1, sizeof(*r));
   if (!r)
      return NULL;
   r->ctx = ctx;
   pthread_mutex_init(&r->progress_mutex, NULL);
   pthread_cond_init(&r->progress, NULL);
   pthread_mutex_init(&r->submit_mutex, NULL);
   pthread_mutex_init(&r->list_mutex, NULL);
   pthread_mutex_init(&r->sub.mutex, NULL);
   pthread_cond_init(&r->sub.cond, NULL);
   util_list_init(&r->submits);
   unsigned n = lanes_wanted(ctx);
   if (!n)
      return r;
   r->lanes = calloc(n, sizeof(*r->lanes));
   r->submit_arena = wire_arena_create(DAEMON_MAX_COMMAND_MEMORY);
   r->submit_call = gpud_call_create(ctx, r->submit_arena);
   if (!r->lanes || !r->submit_arena || !r->submit_call) {
      gpud_replay_destroy(r);
      return NULL;
   }
   for (unsigned i = 0; i < n; i++) {
      struct replay_lane *lane = &r->lanes[i];
      lane->replay = r;
      lane->index = i;
      util_spin_window_init(&lane->window, DAEMON_COMMAND_SPIN_NS, DAEMON_COMMAND_SPIN_MAX_NS);
      util_list_init(&lane->jobs);
      pthread_mutex_init(&lane->mutex, NULL);
      pthread_cond_init(&lane->cond, NULL);
      lane->arena = wire_arena_create(DAEMON_MAX_COMMAND_MEMORY);
      lane->call = lane->arena ? gpud_call_create(ctx, lane->arena) : NULL;
      r->n_lanes = i + 1;
      if (!lane->call || pthread_create(&lane->thread, NULL, lane_main, lane) != 0) {
         gpud_replay_destroy(r);
         return NULL;
      }
      lane->started = true;
   }
   util_spin_window_init(&r->sub.window, DAEMON_COMMAND_SPIN_NS, DAEMON_COMMAND_SPIN_MAX_NS);
   atomic_store(&r->sub.polling, true);
   if (pthread_create(&r->sub.thread, NULL, submitter_main, r) != 0) {
      gpud_replay_destroy(r);
      return NULL;
   }
   r->sub.started = true;
   return r;
}

void
gpud_replay_destroy(struct gpud_replay *r)
{
   if (!r)
      return;
   submitter_finish(r);
   for (unsigned i = 0; i < r->n_lanes; i++)
      lane_finish(&r->lanes[i]);
   free(r->lanes);
   while (!util_list_empty(&r->submits)) {
      struct replay_submit *s = util_list_first(&r->submits, struct replay_submit, link);
      util_list_remove(&s->link);
      free(s);
   }
   gpud_call_destroy(r->submit_call);
   wire_arena_destroy(r->submit_arena);
   pthread_mutex_destroy(&r->progress_mutex);
   pthread_cond_destroy(&r->progress);
   pthread_mutex_destroy(&r->submit_mutex);
   pthread_mutex_destroy(&r->list_mutex);
   pthread_mutex_destroy(&r->sub.mutex);
   pthread_cond_destroy(&r->sub.cond);
   free(r);
}

void
gpud_replay_profile(struct gpud_replay *r, uint64_t *ret_ns, uint64_t *ret_commands)
{
   *ret_ns = *ret_commands = 0;
   for (unsigned i = 0; r && i < r->n_lanes; i++) {
      *ret_ns += r->lanes[i].ns;
      *ret_commands += r->lanes[i].commands;
   }
}

/* ---- waiting for the lanes --------------------------------------------------------- */

static bool
lanes_done(struct gpud_replay *r, const void *arg)
{
   (void)arg;
   for (unsigned i = 0; i < r->n_lanes; i++) {
      if (atomic_load_explicit(&r->lanes[i].done, memory_order_acquire) != r->lanes[i].routed)
         return false;
   }
   return true;
}

static bool
unit_done(const struct gpud_replay_unit *unit)
{
   return atomic_load_explicit(&unit->chunks_replayed, memory_order_acquire) ==
          unit->chunks_routed;
}

/* Whether the lanes have replayed every chunk of a pool's command buffers. */
static bool
pool_done(struct gpud_replay *r, const void *arg)
{
   const struct gpud_object *pool = arg;
   for (uint32_t s = 0; s < pool->n_shards; s++) {
      if (!unit_done(&pool->shards[s].unit))
         return false;
   }
   return pool->n_shards || unit_done(&r->stray);
}

/* Where a command buffer's chunks are counted: its host pool's. */
static struct gpud_replay_unit *
unit_of(struct gpud_replay *r, struct gpud_object *cb)
{
   return cb->shard ? &cb->shard->unit : &r->stray;
}

/* GPUD_POOL_SHARDS=N in the daemon's environment spreads a pool over up
 * to N host pools instead (1: its own alone; to measure). */
static unsigned
pool_shards_max(void)
{
   static _Atomic unsigned max;
   unsigned m = atomic_load(&max);
   if (!m) {
      uint64_t n = REPLAY_POOL_SHARDS;
      util_env_number("GPUD_POOL_SHARDS", 1, DAEMON_STATUS_LANES, &n);
      m = (unsigned)n;
      atomic_store(&max, m);
   }
   return m;
}

unsigned
gpud_replay_pool_shards(const struct gpud_replay *r)
{
   return r ? UTIL_MIN(r->n_lanes, pool_shards_max()) : 0;
}

static bool
submits_done(struct gpud_replay *r, const void *arg)
{
   (void)arg;
   return !atomic_load(&r->n_submits);
}

static bool
few_submits(struct gpud_replay *r, const void *arg)
{
   (void)arg;
   return atomic_load(&r->n_submits) < DAEMON_REPLAY_SUBMITS_MAX;
}

static bool
little_queued(struct gpud_replay *r, const void *arg)
{
   (void)arg;
   return atomic_load(&r->queued) < DAEMON_REPLAY_QUEUED_MAX;
}

void
gpud_replay_wait(struct gpud_replay *r)
{
   if (!r || !r->n_lanes)
      return;
   wait_progress(r, submits_done, NULL);
   wait_progress(r, lanes_done, NULL);
}

/* Chunks given to a lane and not yet replayed. */
static uint64_t
lane_load(const struct replay_lane *lane)
{
   return lane->routed - atomic_load_explicit(&lane->done, memory_order_relaxed);
}

/*
 * The lane that replays a command buffer's host pool.  A host pool stays on
 * its lane while the lane has chunks of it to replay (it is used by one
 * thread at a time); once they are all replayed, it may move, to the lane
 * with the least to do (its own on a tie).  Pools used in turn (one a
 * frame in flight), and the host pools of one pool (its command buffers
 * recorded one after the other), so land on the lanes that are free, and
 * replay side by side.
 */
static struct replay_lane *
lane_of(struct gpud_replay *r, struct gpud_replay_unit *unit)
{
   if (!unit->lane || unit_done(unit)) {
      unsigned best = unit->lane ? unit->lane - 1 : r->next_lane;
      uint64_t best_load = lane_load(&r->lanes[best]);
      for (unsigned k = 1; k < r->n_lanes && best_load; k++) {
         unsigned i = (r->next_lane + k) % r->n_lanes;
         uint64_t load = lane_load(&r->lanes[i]);
         if (load < best_load) {
            best = i;
            best_load = load;
         }
      }
      if (unit->lane != best + 1)
         r->next_lane = (best + 1) % r->n_lanes;
      unit->lane = best + 1;
   }
   return &r->lanes[unit->lane - 1];
}

/* The command pool a reset names (its id read from the command, which is
 * decoded and checked after), or NULL. */
static const struct gpud_object *
reset_pool(struct gpud_context *ctx, uint32_t op, const uint8_t *params, size_t size)
{
   uint64_t id = 0;
   size_t at = op == WIRE_OP_vkResetCommandPool ? 8 : 0; /* after the device's id */
   if (size < at + 8)
      return NULL;
   memcpy(&id, params + at, 8);
   const struct gpud_object *obj = gpud_object_find(ctx, id);
   if (obj && op == WIRE_OP_vkResetCommandBuffer && obj->type == VK_OBJECT_TYPE_COMMAND_BUFFER)
      obj = obj->pool;
   return obj && obj->type == VK_OBJECT_TYPE_COMMAND_POOL ? obj : NULL;
}

void
gpud_replay_order(struct gpud_replay *r, uint32_t op, const uint8_t *params, size_t size)
{
   if (!r || !r->n_lanes || (op < WIRE_OP_COUNT && gpud_gen_replay_concurrent[op]))
      return;
   switch (op) {
   case WIRE_OP_vkQueueSubmit:
   case WIRE_OP_vkQueueSubmit2:
      return; /* they wait for what they name (gpud_replay_submit) */
   case WIRE_OP_vkResetCommandPool:
   case WIRE_OP_vkResetCommandBuffer: {
      /* a reset waits for its pool's chunks */
      const struct gpud_object *pool = reset_pool(r->ctx, op, params, size);
      if (pool && !pool->secondaries) {
         wait_progress(r, pool_done, pool);
         return;
      }
      gpud_replay_wait(r);
      return;
   }
   default:
      gpud_replay_wait(r);
   }
}

/* ---- chunks ------------------------------------------------------------------------ */

/* Whether a chunk executes secondary command buffers (which another lane
 * may be replaying). */
static bool
executes_secondaries(const uint8_t *data, size_t size)
{
   size_t off = sizeof(struct wire_chunk_header);
   while (off + sizeof(struct wire_cmd_header) <= size) {
      struct wire_cmd_header c;
      memcpy(&c, data + off, sizeof(c));
      if (c.op == WIRE_OP_vkCmdExecuteCommands)
         return true;
      if (c.size < sizeof(c))
         return false; /* malformed: the lane says so */
      off += c.size;
   }
   return false;
}

/* Notes a large chunk of the pool; whether, if it is the recording's last,
 * the decoding thread may replay it: no other pool had one within REPLAY_SIDE_BY_SIDE_NS, for
 * REPLAY_SIDE_BY_SIDE_HOLD_NS (threads recording in pools of their own,
 * or one thread recording the next frame in another pool while the last
 * is replayed, have lanes replay them side by side; one pool's recordings
 * are replayed one after the other on any thread). */
static bool
solo_pool(struct gpud_replay *r, const struct gpud_object *pool)
{
   uint64_t now = util_now_ns();
   if (r->big_pool && r->big_pool != pool->id && now - r->big_ns < REPLAY_SIDE_BY_SIDE_NS)
      r->side_by_side_until_ns = now + REPLAY_SIDE_BY_SIDE_HOLD_NS;
   r->big_pool = pool->id;
   r->big_ns = now;
   return now >= r->side_by_side_until_ns;
}

/* About how many bytes the client sent after a chunk already: the rest of
 * its message, and what waits in the ring (a look at the client's word). */
static uint64_t
client_behind(struct gpud_context *ctx, size_t after)
{
   return after + (ctx->ring_map ? util_ring_pending_bytes(&ctx->commands) : 0);
}

/* Wakes a lane that sleeps, to poll for what comes next. */
static void
lane_wake(struct replay_lane *lane)
{
   pthread_mutex_lock(&lane->mutex);
   if (lane->sleeping)
      pthread_cond_signal(&lane->cond);
   pthread_mutex_unlock(&lane->mutex);
}

/* Replays a chunk on the decoding thread. */
static int
replay_here(struct gpud_call *call, struct gpud_object *cb, const uint8_t *data, uint32_t size)
{
   struct gpud_context *ctx = call->ctx;
   uint64_t t0 = ctx->profile ? util_now_ns() : 0; /* GPUD_PROFILE */
   int64_t n = replay(call, cb, data, size, &ctx->status->op);
   if (n < 0)
      return -EPROTO;
   atomic_fetch_add_explicit(&ctx->status->commands, (uint64_t)n, memory_order_relaxed);
   if (ctx->profile) {
      ctx->profile->ns[GPUD_PROFILE_CHUNKS] += util_now_ns() - t0;
      ctx->profile->count[GPUD_PROFILE_CHUNKS]++;
      ctx->profile->recorded += (uint64_t)n;
   }
   return 0;
}

int
gpud_replay_chunk(struct gpud_call *call, const uint8_t *data, uint32_t size, size_t after)
{
   struct gpud_context *ctx = call->ctx;
   struct gpud_replay *r = ctx->replay;
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
   /* the recording's state is the decoding thread's, in the stream's order */
   if (h.cmd.seq == 0) {
      cb->recording = true;
      cb->pool_resets = pool_resets(cb);
   }
   cb->next_chunk = h.cmd.seq + 1;
   if (h.cmd.flags & WIRE_CHUNK_END)
      cb->recording = false;

   if (!r || !r->n_lanes)
      return replay_here(call, cb, data, size);

   bool secondaries = executes_secondaries(data, size);
   bool big = size > DAEMON_REPLAY_INLINE_MAX;
   bool solo = big && cb->pool && solo_pool(r, cb->pool); /* (notes each large one) */
   struct gpud_replay_unit *unit = unit_of(r, cb);
   /* A last chunk, its host pool's lane done with it, small or of the only
    * pool recording large ones lately: replayed here.  The submission
    * that usually follows waits for it anyway, and its lane, asleep while
    * the application waited for its last job, would have to wake first
    * (tens of microseconds, its core's caches cold: a lane replayed
    * llama.cpp's recordings at 1.3-1.5x the decoding thread's time a
    * command, docs/performance.md).  With the client ahead (more than a
    * submission sent after it) and the pool's next recording free to go to
    * another host pool, a lane that is up (polling) replays it while the
    * decoding thread goes on; one asleep is woken for the next ones (on
    * the H100 a lane took 25 us to start a chunk given it asleep, the
    * median, and 160 us or more one time in ten, every submission after
    * it waiting). */
   bool here = (h.cmd.flags & WIRE_CHUNK_END) && cb->pool && !secondaries && unit_done(unit) &&
               (!big || solo);
   struct replay_lane *lane = NULL; /* (chosen once: the one found up takes it) */
   if (here && cb->pool->shards_max > 1 && client_behind(ctx, after) > REPLAY_BEHIND_SUBMIT) {
      lane = lane_of(r, unit);
      if (!atomic_load(&lane->sleeping))
         here = false;
      else
         lane_wake(lane);
   }
   if (here) {
      if (replay_here(call, cb, data, size) < 0)
         return -EPROTO;
      cb->chunks_routed++;
      unit->chunks_routed++;
      atomic_fetch_add_explicit(&unit->chunks_replayed, 1, memory_order_release);
      atomic_fetch_add_explicit(&cb->chunks_replayed, 1, memory_order_release);
      if (atomic_load(&r->n_submits))
         submit_ready(r);
      return 0;
   }
   /* secondaries it executes are replayed (their lanes have done what came
    * before) by the time its lane gets to it */
   if (secondaries)
      gpud_replay_wait(r);
   /* the lanes hold a bounded amount: past it the client waits (its ring
    * fills) */
   wait_progress(r, little_queued, NULL);
   struct replay_job *job = malloc(sizeof(*job) + size);
   if (!job)
      return gpud_context_protocol_error(ctx, "out of memory");
   job->cb = cb;
   job->unit = unit;
   job->size = size;
   memcpy(job->data, data, size);
   atomic_fetch_add(&r->queued, size);
   if (!lane)
      lane = lane_of(r, unit);
   cb->chunks_routed++;
   unit->chunks_routed++;
   pthread_mutex_lock(&lane->mutex);
   util_list_add_tail(&lane->jobs, &job->link);
   __atomic_store_n(&lane->routed, lane->routed + 1, __ATOMIC_RELEASE);
   if (lane->sleeping)
      pthread_cond_signal(&lane->cond);
   pthread_mutex_unlock(&lane->mutex);
   return 0;
}

/* ---- submissions --------------------------------------------------------------------- */

static bool
submit_is_ready(const struct replay_submit *s)
{
   for (uint32_t i = 0; i < s->n_cbs; i++) {
      if (atomic_load_explicit(&s->cbs[i]->chunks_replayed, memory_order_acquire) <
          s->targets[i])
         return false;
   }
   return true;
}

/* Runs a submission that waited (checked when it came): decoded again,
 * without a reply. */
static void
run_submit(struct gpud_call *call, const uint8_t *cmd, size_t size)
{
   struct wire_dec *d = gpud_call_prepare(call, cmd, size);
   if (!gpud_gen_dispatch(call, d, NULL, call->op))
      gpud_context_protocol_error(call->ctx, "in %s: %s", wire_op_name(call->op),
                                  d->error ? d->error : "bad command");
   gpud_call_finish(call);
}

/* The first waiting submission, when its command buffers are replayed
 * (and the client is still there); NULL otherwise.  submit_mutex held (no
 * one else takes the first one off). */
static struct replay_submit *
first_ready(struct gpud_replay *r)
{
   if (atomic_load(&r->ctx->closing))
      return NULL;
   pthread_mutex_lock(&r->list_mutex);
   struct replay_submit *s = util_list_empty(&r->submits)
                                ? NULL
                                : util_list_first(&r->submits, struct replay_submit, link);
   pthread_mutex_unlock(&r->list_mutex);
   return s && submit_is_ready(s) ? s : NULL;
}

/* Runs the submissions, in order, whose command buffers are replayed.
 * Called by whoever may have made the first one ready: the decoding thread
 * when it queues one, a lane when it finishes a chunk.  One thread runs
 * them at a time; one that finds the lock taken leaves a note (look) that
 * the runner reads once it lets go, so no readiness is missed. */
static void
submit_ready(struct gpud_replay *r)
{
   atomic_store(&r->look, true);
   while (atomic_exchange(&r->look, false)) {
      if (pthread_mutex_trylock(&r->submit_mutex) != 0) {
         atomic_store(&r->look, true);
         return;
      }
      struct replay_submit *s;
      bool ran = false;
      while ((s = first_ready(r))) {
         run_submit(r->submit_call, s->data, s->size);
         pthread_mutex_lock(&r->list_mutex);
         util_list_remove(&s->link);
         pthread_mutex_unlock(&r->list_mutex);
         free(s);
         atomic_fetch_sub(&r->n_submits, 1);
         ran = true;
      }
      pthread_mutex_unlock(&r->submit_mutex);
      if (ran)
         progressed(r);
   }
}

/* The command buffers a submission names (decoded from the command into
 * the call's arena; NULL for an id that is none); n: how many, -1 when it
 * is malformed. */
static int64_t
submitted_cbs(struct gpud_call *call, uint32_t op, struct gpud_object ***ret_cbs)
{
   struct wire_dec *d = &call->dec;
   struct gpud_object **cbs = NULL;
   uint32_t n = 0;
#define NAMED(cb) gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)(cb))
   if (op == WIRE_OP_vkQueueSubmit) {
      struct wire_args_vkQueueSubmit a = {0};
      if (!wire_decargs_vkQueueSubmit(d, &a) || wire_dec_remaining(d))
         return -1;
      for (uint32_t i = 0; i < a.submitCount; i++)
         n += a.pSubmits[i].commandBufferCount;
      cbs = wire_dec_alloc(d, sizeof(*cbs) * (n ? n : 1));
      n = 0;
      for (uint32_t i = 0; cbs && i < a.submitCount; i++) {
         for (uint32_t j = 0; j < a.pSubmits[i].commandBufferCount; j++)
            cbs[n++] = NAMED(a.pSubmits[i].pCommandBuffers[j]);
      }
   } else {
      struct wire_args_vkQueueSubmit2 a = {0};
      if (!wire_decargs_vkQueueSubmit2(d, &a) || wire_dec_remaining(d))
         return -1;
      for (uint32_t i = 0; i < a.submitCount; i++)
         n += a.pSubmits[i].commandBufferInfoCount;
      cbs = wire_dec_alloc(d, sizeof(*cbs) * (n ? n : 1));
      n = 0;
      for (uint32_t i = 0; cbs && i < a.submitCount; i++) {
         for (uint32_t j = 0; j < a.pSubmits[i].commandBufferInfoCount; j++)
            cbs[n++] = NAMED(a.pSubmits[i].pCommandBufferInfos[j].commandBuffer);
      }
   }
#undef NAMED
   if (!cbs)
      return -1;
   *ret_cbs = cbs;
   return n;
}

int
gpud_replay_submit(struct gpud_call *call)
{
   struct gpud_context *ctx = call->ctx;
   struct gpud_replay *r = ctx->replay;
   if (!r || !r->n_lanes || (call->op != WIRE_OP_vkQueueSubmit &&
                             call->op != WIRE_OP_vkQueueSubmit2))
      return 0;
   struct gpud_object **cbs;
   int64_t n = submitted_cbs(call, call->op, &cbs);
   if (n < 0)
      return -EPROTO; /* the dispatch that follows says why */
   /* submissions kept are bounded too: one waiting for its turn on the
    * GPU (gpud_sched.c) holds the rest back, and then the client */
   wait_progress(r, few_submits, NULL);
   struct replay_submit *s = calloc(1, sizeof(*s) + (size_t)n * (sizeof(void *) + sizeof(uint64_t)) +
                                          call->cmd_size);
   if (!s) {
      /* runs now, once what came before ran, decoded afresh */
      gpud_replay_wait(r);
      gpud_call_prepare(call, call->cmd, call->cmd_size);
      return 0;
   }
   s->op = call->op;
   s->cbs = (struct gpud_object **)(s + 1);
   s->targets = (uint64_t *)(s->cbs + n);
   s->data = (uint8_t *)(s->targets + n);
   s->size = call->cmd_size;
   memcpy(s->data, call->cmd, call->cmd_size);
   for (int64_t i = 0; i < n; i++) {
      if (!cbs[i])
         continue;
      s->cbs[s->n_cbs] = cbs[i];
      s->targets[s->n_cbs++] = cbs[i]->chunks_routed;
   }
   pthread_mutex_lock(&r->list_mutex);
   util_list_add_tail(&r->submits, &s->link);
   atomic_fetch_add(&r->n_submits, 1);
   pthread_mutex_unlock(&r->list_mutex);
   submit_queued(r);
   return 1;
}
