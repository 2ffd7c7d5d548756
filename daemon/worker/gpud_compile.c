/* SPDX-License-Identifier: MIT */
/*
 * Pipelines and shader modules made beside the client's other commands.
 *
 * A pipeline's creation is the host driver compiling shaders: milliseconds,
 * at times seconds (and a shader module's, SPIRV-Tools validating it:
 * milliseconds for a big one).  An application that creates pipelines on several
 * threads (llama.cpp's ggml, game engines, DXVK and vkd3d) has them compiled
 * side by side on the host driver directly; through one decoding thread
 * they would be compiled one after another, and every other command of the
 * client would wait behind them.  So vkCreateGraphicsPipelines,
 * vkCreateComputePipelines, vkCreateRayTracingPipelinesKHR and
 * vkCreateShaderModule, decoded and checked on the decoding thread, are validated (their SPIR-V) and run by a pool of
 * compile threads, and the decoding thread goes on with the stream.
 *
 * - The calling application thread waits for the reply, so nothing of its
 *   own can follow; another thread cannot know the new objects before the
 *   reply names them.  Their ids go into the table at once, marked pending:
 *   a command that names one before the job ends is refused (gpud_call.c),
 *   and a job that fails leaves its ids for the decoding thread to take out
 *   between commands (the table has one writer).
 * - What the command names (its device, layout, shader modules, render
 *   pass, pipeline cache, libraries) is held by the job: a command that
 *   destroys one of them waits until the jobs using it end, and the end of
 *   a device, an instance or the client waits for every job.
 * - The job owns the decoded arguments: the call's arena goes with it and
 *   the decoding thread takes another.
 * - Replies go out of order, as the waiter threads' do (gpud_wait.c).
 *
 * Not deferred: commands without a reply, a client past DAEMON_MAX_COMPILES
 * jobs, commands whose decoded arguments pass DAEMON_MAX_COMPILE_ARGS (each
 * job keeps its own), workers that validate on the host (the validation
 * messenger reports into the command being run on the decoding thread), and
 * every command when GPUD_COMPILE_THREADS=0 (the fuzz harness: inputs
 * replay the same).
 */
#include "gpud_compile.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpud_call.h"
#include "gpud_pipecache.h"
#include "gpud_spirv.h"
#include "daemon_limits.h"
#include "util_list.h"
#include "util_env.h"
#include "util_macros.h"
#include "util_time.h"
#include "wire_gen.h"

#define COMPILE_MAX_THREADS 16

struct compile_job {
   struct util_list link;
   struct gpud_context *ctx;
   struct gpud_object *device;
   uint32_t op;
   uint32_t seq;
   bool kept_cache;
   const uint64_t *cache_keys; /* ... and the keys of its pipelines there (in arena) */
   struct wire_arena *arena; /* the decoded arguments */
   union {
      struct wire_args_vkCreateComputePipelines compute;
      struct wire_args_vkCreateGraphicsPipelines graphics;
      struct wire_args_vkCreateShaderModule module;
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
      struct wire_args_vkCreateRayTracingPipelinesKHR rt;
#endif
   } a;
   /* the new objects, by index (NULL: no id) */
   struct gpud_object **objs;
   uint32_t n_objs;
   /* what the command named, held until the job ends */
   struct gpud_object **held;
   unsigned n_held;
};

struct gpud_compile {
   struct gpud_context *ctx;
   pthread_mutex_t mutex;
   pthread_cond_t work;  /* a job is queued, or stop */
   pthread_cond_t ended; /* a job ended */
   struct util_list jobs;
   unsigned queued, running;
   pthread_t threads[COMPILE_MAX_THREADS];
   unsigned n_threads, max_threads;
   bool stop;
   /* arenas of ended jobs, for the next */
   struct wire_arena *spare[4];
   unsigned n_spare;
   /* objects that jobs failed to make */
   struct gpud_object **dead;
   unsigned n_dead, cap_dead;
   atomic_uint has_dead;
   /* GPUD_PROFILE */
   uint64_t jobs_done, ns;
};

/* GPUD_COMPILE_THREADS, else one thread a CPU the worker may use but the
 * decoding thread's, one at least. */
static unsigned
threads_wanted(void)
{
   uint64_t want;
   if (util_env_number("GPUD_COMPILE_THREADS", 0, UINT64_MAX, &want))
      return (unsigned)UTIL_MIN(want, COMPILE_MAX_THREADS);
   cpu_set_t cpus;
   int n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus)
                                                           : (int)sysconf(_SC_NPROCESSORS_ONLN);
   return n > 2 ? (unsigned)UTIL_MIN(n - 1, COMPILE_MAX_THREADS) : 1;
}

static struct gpud_compile *
compile_get(struct gpud_context *ctx)
{
   if (ctx->compile)
      return ctx->compile;
   struct gpud_compile *c = calloc(1, sizeof(*c));
   if (!c)
      return NULL;
   c->ctx = ctx;
   pthread_mutex_init(&c->mutex, NULL);
   pthread_cond_init(&c->work, NULL);
   pthread_cond_init(&c->ended, NULL);
   util_list_init(&c->jobs);
   atomic_init(&c->has_dead, 0);
   c->max_threads = threads_wanted();
   ctx->compile = c;
   return c;
}

static void
job_free(struct compile_job *job)
{
   free(job->objs);
   free(job->held);
   free(job);
}

/* The size of a command's arguments, for the commands a job runs (0: not
 * one of them). */
static size_t
deferred_args_size(uint32_t op)
{
   switch (op) {
   case WIRE_OP_vkCreateComputePipelines:
      return sizeof(struct wire_args_vkCreateComputePipelines);
   case WIRE_OP_vkCreateGraphicsPipelines:
      return sizeof(struct wire_args_vkCreateGraphicsPipelines);
   case WIRE_OP_vkCreateShaderModule:
      return sizeof(struct wire_args_vkCreateShaderModule);
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
   case WIRE_OP_vkCreateRayTracingPipelinesKHR:
      return sizeof(struct wire_args_vkCreateRayTracingPipelinesKHR);
#endif
   default:
      return 0;
   }
}

/* What a command makes: its ids, their host handles (written by the host
 * call) and their type. */
struct made {
   const uint64_t *ids;
   uint64_t *handles; /* (non-dispatchable handles are 64-bit) */
   uint32_t n;
   VkObjectType type;
};

_Static_assert(sizeof(VkPipeline) == sizeof(uint64_t) && sizeof(VkShaderModule) == sizeof(uint64_t),
               "non-dispatchable handles are 64-bit");

static struct made
made_by(uint32_t op, void *args)
{
   switch (op) {
   case WIRE_OP_vkCreateComputePipelines: {
      struct wire_args_vkCreateComputePipelines *a = args;
      return (struct made){a->pPipelines_ids, (uint64_t *)a->pPipelines, a->pPipelines_count,
                           VK_OBJECT_TYPE_PIPELINE};
   }
   case WIRE_OP_vkCreateGraphicsPipelines: {
      struct wire_args_vkCreateGraphicsPipelines *a = args;
      return (struct made){a->pPipelines_ids, (uint64_t *)a->pPipelines, a->pPipelines_count,
                           VK_OBJECT_TYPE_PIPELINE};
   }
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
   case WIRE_OP_vkCreateRayTracingPipelinesKHR: {
      struct wire_args_vkCreateRayTracingPipelinesKHR *a = args;
      return (struct made){a->pPipelines_ids, (uint64_t *)a->pPipelines, a->pPipelines_count,
                           VK_OBJECT_TYPE_PIPELINE};
   }
#endif
   default: {
      struct wire_args_vkCreateShaderModule *a = args;
      return (struct made){a->pShaderModule_ids, (uint64_t *)a->pShaderModule,
                           a->pShaderModule_count, VK_OBJECT_TYPE_SHADER_MODULE};
   }
   }
}

/* The command's SPIR-V checked (gpud_spirv.c: reported, refused only
 * under --spirv=strict), then the host's call. */
static VkResult
job_run(struct compile_job *job)
{
   const struct gpud_host_dispatch *disp = job->device->disp;
   switch (job->op) {
   case WIRE_OP_vkCreateComputePipelines: {
      struct wire_args_vkCreateComputePipelines *a = &job->a.compute;
      if (!gpud_spirv_pipelines_valid(job->ctx, job->op, a))
         a->ret = VK_ERROR_INVALID_SHADER_NV;
      else
         a->ret = disp->CreateComputePipelines(a->device, a->pipelineCache, a->createInfoCount,
                                               a->pCreateInfos, NULL, a->pPipelines);
      return a->ret;
   }
   case WIRE_OP_vkCreateGraphicsPipelines: {
      struct wire_args_vkCreateGraphicsPipelines *a = &job->a.graphics;
      if (!gpud_spirv_pipelines_valid(job->ctx, job->op, a))
         a->ret = VK_ERROR_INVALID_SHADER_NV;
      else
         a->ret = disp->CreateGraphicsPipelines(a->device, a->pipelineCache, a->createInfoCount,
                                                a->pCreateInfos, NULL, a->pPipelines);
      return a->ret;
   }
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
   case WIRE_OP_vkCreateRayTracingPipelinesKHR: {
      /* (the operation to defer on is the ICD's: none here) */
      struct wire_args_vkCreateRayTracingPipelinesKHR *a = &job->a.rt;
      if (!gpud_spirv_pipelines_valid(job->ctx, job->op, a))
         a->ret = VK_ERROR_INVALID_SHADER_NV;
      else
         a->ret = disp->CreateRayTracingPipelinesKHR(a->device, a->deferredOperation,
                                                     a->pipelineCache, a->createInfoCount,
                                                     a->pCreateInfos, NULL, a->pPipelines);
      return a->ret;
   }
#endif
   case WIRE_OP_vkCreateShaderModule: {
      struct wire_args_vkCreateShaderModule *a = &job->a.module;
      if (!gpud_spirv_module_valid(job->ctx, "vkCreateShaderModule", a->pCreateInfo))
         a->ret = VK_ERROR_INVALID_SHADER_NV;
      else
         a->ret = disp->CreateShaderModule(a->device, a->pCreateInfo, NULL, a->pShaderModule);
      return a->ret;
   }
   default:
      return VK_ERROR_UNKNOWN;
   }
}

static int
job_reply(struct compile_job *job)
{
   struct wire_enc e;
   wire_enc_init(&e);
   wire_enc_begin_cmd(&e, WIRE_OP_REPLY, 0, job->seq);
   if (job->op == WIRE_OP_vkCreateComputePipelines)
      wire_encreply_vkCreateComputePipelines(&e, &job->a.compute);
   else if (job->op == WIRE_OP_vkCreateGraphicsPipelines)
      wire_encreply_vkCreateGraphicsPipelines(&e, &job->a.graphics);
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
   else if (job->op == WIRE_OP_vkCreateRayTracingPipelinesKHR)
      wire_encreply_vkCreateRayTracingPipelinesKHR(&e, &job->a.rt);
#endif
   else
      wire_encreply_vkCreateShaderModule(&e, &job->a.module);
   wire_enc_end_cmd(&e, 0);
   int r = gpud_context_send_reply(job->ctx, &e, NULL, 0);
   wire_enc_finish(&e);
   return r;
}

/* Runs a job and ends it: the objects made are usable, those not made
 * are left for gpud_compile_reap, the reply goes out and what the job held
 * is let go. */
static void
job_finish(struct gpud_compile *c, struct compile_job *job)
{
   struct gpud_context *ctx = job->ctx;
   uint64_t t0 = ctx->profile ? util_now_ns() : 0;
   /* a client gone: nothing made, the pending ids go with its objects */
   const bool run = !atomic_load(&ctx->closing);
   VkResult r = VK_ERROR_DEVICE_LOST;
   if (run) {
      atomic_store_explicit(&ctx->status->compile.op, job->op, memory_order_relaxed);
      r = job_run(job);
   }
   uint64_t *handles = made_by(job->op, &job->a).handles;
   if (run && job->kept_cache && r >= 0)
      gpud_pipecache_made(ctx, job->device, job->cache_keys, (const VkPipeline *)handles,
                          job->n_objs);
   unsigned dead = 0;
   for (uint32_t i = 0; i < job->n_objs; i++) {
      if (r < 0)
         handles[i] = 0;
      struct gpud_object *obj = job->objs[i];
      if (!obj)
         continue;
      if (handles[i]) {
         obj->handle = handles[i];
         atomic_store_explicit(&obj->pending, false, memory_order_release);
      } else {
         job->objs[dead++] = obj; /* stays pending until taken out */
      }
   }
   pthread_mutex_lock(&c->mutex);
   if (dead && c->n_dead + dead > c->cap_dead) {
      unsigned cap = UTIL_MAX(c->cap_dead * 2, c->n_dead + dead);
      struct gpud_object **d = realloc(c->dead, cap * sizeof(*d));
      if (d) {
         c->dead = d;
         c->cap_dead = cap;
      }
   }
   /* (without room they stay, pending, until the device ends) */
   for (unsigned i = 0; i < dead && c->n_dead < c->cap_dead; i++)
      c->dead[c->n_dead++] = job->objs[i];
   if (c->n_dead)
      atomic_store(&c->has_dead, 1);
   pthread_mutex_unlock(&c->mutex);

   /* a reply that cannot go out (the client stopped reading, no memory)
    * ends the client, as on the decoding thread */
   if (run && !atomic_load(&ctx->closing) && job_reply(job) < 0 &&
       !atomic_load(&ctx->closing))
      gpud_context_end(ctx, false, "a reply could not be sent");

   pthread_mutex_lock(&c->mutex);
   for (unsigned i = 0; i < job->n_held; i++)
      gpud_object_release(job->held[i]);
   if (c->n_spare < UTIL_ARRAY_SIZE(c->spare)) {
      wire_arena_reset(job->arena);
      c->spare[c->n_spare++] = job->arena;
   } else {
      wire_arena_destroy(job->arena);
   }
   c->running--;
   if (!c->running)
      atomic_store_explicit(&ctx->status->compile.op, 0, memory_order_relaxed);
   if (ctx->profile) {
      c->jobs_done++;
      c->ns += util_now_ns() - t0;
   }
   pthread_cond_broadcast(&c->ended);
   pthread_mutex_unlock(&c->mutex);
   job_free(job);
}

static void *
compile_main(void *data)
{
   struct gpud_compile *c = data;
   uint32_t cpus_seen = 0; /* gpud_context_follow_cpus */
   pthread_setname_np(pthread_self(), "gpud-compile");
   pthread_mutex_lock(&c->mutex);
   for (;;) {
      while (!c->stop && util_list_empty(&c->jobs))
         pthread_cond_wait(&c->work, &c->mutex);
      if (util_list_empty(&c->jobs))
         break; /* stop, with nothing left */
      struct compile_job *job = util_list_first(&c->jobs, struct compile_job, link);
      util_list_remove(&job->link);
      c->queued--;
      c->running++;
      pthread_mutex_unlock(&c->mutex);
      /* off the CPUs the worker's threads avoid (gpud_context.c) */
      gpud_context_follow_cpus(c->ctx, &cpus_seen);
      job_finish(c, job);
      pthread_mutex_lock(&c->mutex);
   }
   pthread_mutex_unlock(&c->mutex);
   return NULL;
}

bool
gpud_compile_defer(struct gpud_call *call, uint32_t op, const void *args, bool kept_cache,
                   const uint64_t *cache_keys)
{
   struct gpud_context *ctx = call->ctx;
   if (!call->reply || !call->device || ctx->host->validate != DAEMON_VALIDATE_OFF ||
       atomic_load(&ctx->closing))
      return false;
   const size_t args_size = deferred_args_size(op);
   if (!args_size)
      return false;
   if (wire_arena_total(call->arena) > DAEMON_MAX_COMPILE_ARGS)
      return false;
   struct gpud_compile *c = compile_get(ctx);
   if (!c || !c->max_threads)
      return false;
   pthread_mutex_lock(&c->mutex);
   bool room = c->queued + c->running < DAEMON_MAX_COMPILES;
   struct wire_arena *fresh = room && c->n_spare ? c->spare[--c->n_spare] : NULL;
   pthread_mutex_unlock(&c->mutex);
   if (!room)
      return false;
   if (!fresh)
      fresh = wire_arena_create(DAEMON_MAX_COMMAND_MEMORY);
   struct compile_job *job = fresh ? calloc(1, sizeof(*job)) : NULL;
   if (job)
      memcpy(&job->a, args, args_size);
   const struct made made = job ? made_by(op, &job->a) : (struct made){0};
   const uint32_t n = made.n;
   if (job) {
      job->objs = calloc(n ? n : 1, sizeof(*job->objs));
      job->held = calloc(call->n_touched ? call->n_touched : 1, sizeof(*job->held));
   }
   if (!job || !job->objs || !job->held) {
      if (job)
         job_free(job);
      wire_arena_destroy(fresh);
      return false;
   }
   job->ctx = ctx;
   job->device = call->device;
   job->op = op;
   job->seq = call->seq;
   job->kept_cache = kept_cache;
   job->cache_keys = cache_keys;
   job->n_objs = n;

   /* what the command names, held */
   for (unsigned i = 0; i < call->n_touched; i++) {
      if (call->touched[i]) {
         job->held[job->n_held++] = call->touched[i];
         gpud_object_hold(call->touched[i]);
      }
   }
   /* the new ids, pending until the job ends */
   call->new_pending = true;
   for (uint32_t i = 0; i < n && !call->dec.fatal; i++) {
      gpud_call_add_object(call, made.type, made.ids[i], 0);
      struct gpud_object *obj = gpud_object_find(ctx, made.ids[i]);
      job->objs[i] = obj && atomic_load(&obj->pending) ? obj : NULL;
      /* a ray tracing pipeline's shader groups, for the queries naming one */
      if (job->objs[i] && call->new_pending_groups)
         obj->rt_groups = call->new_pending_groups[i];
   }
   call->new_pending = false;
   if (call->dec.fatal) {
      /* a bad id: the client is dropped, the pending ids go with it */
      for (unsigned i = 0; i < job->n_held; i++)
         gpud_object_release(job->held[i]);
      job_free(job);
      wire_arena_destroy(fresh);
      return true;
   }
   /* the decoded arguments go with the job */
   job->arena = call->arena;
   call->arena = fresh;

   pthread_mutex_lock(&c->mutex);
   util_list_add_tail(&c->jobs, &job->link);
   c->queued++;
   unsigned idle = c->n_threads > c->running ? c->n_threads - c->running : 0;
   bool start = c->queued > idle && c->n_threads < c->max_threads;
   if (start && pthread_create(&c->threads[c->n_threads], NULL, compile_main, c) == 0)
      c->n_threads++;
   bool ran = c->n_threads > 0;
   if (!ran) {
      util_list_remove(&job->link);
      c->queued--;
   }
   pthread_cond_signal(&c->work);
   pthread_mutex_unlock(&c->mutex);
   if (!ran) {
      /* no thread at all: run it here */
      pthread_mutex_lock(&c->mutex);
      c->running++;
      pthread_mutex_unlock(&c->mutex);
      job_finish(c, job);
   }
   call->deferred = true;
   return true;
}

void
gpud_compile_drain(struct gpud_context *ctx)
{
   struct gpud_compile *c = ctx->compile;
   if (!c)
      return;
   pthread_mutex_lock(&c->mutex);
   while (c->queued || c->running)
      pthread_cond_wait(&c->ended, &c->mutex);
   pthread_mutex_unlock(&c->mutex);
}

void
gpud_compile_drain_for(struct gpud_context *ctx, uint64_t timeout_ns)
{
   struct gpud_compile *c = ctx->compile;
   if (!c)
      return;
   const struct timespec until = util_realtime_after(timeout_ns);
   pthread_mutex_lock(&c->mutex);
   while ((c->queued || c->running) &&
          pthread_cond_timedwait(&c->ended, &c->mutex, &until) == 0)
      ;
   pthread_mutex_unlock(&c->mutex);
}

bool
gpud_compile_has_dead(const struct gpud_context *ctx)
{
   return ctx->compile && atomic_load_explicit(&ctx->compile->has_dead, memory_order_relaxed);
}

void
gpud_compile_reap(struct gpud_context *ctx)
{
   struct gpud_compile *c = ctx->compile;
   if (!c)
      return;
   pthread_mutex_lock(&c->mutex);
   struct gpud_object **dead = c->dead;
   unsigned n = c->n_dead;
   c->dead = NULL;
   c->n_dead = c->cap_dead = 0;
   atomic_store(&c->has_dead, 0);
   pthread_mutex_unlock(&c->mutex);
   for (unsigned i = 0; i < n; i++)
      gpud_object_remove(ctx, dead[i]);
   free(dead);
}

void
gpud_compile_destroy(struct gpud_context *ctx)
{
   struct gpud_compile *c = ctx->compile;
   if (!c)
      return;
   pthread_mutex_lock(&c->mutex);
   c->stop = true;
   pthread_cond_broadcast(&c->work);
   pthread_mutex_unlock(&c->mutex);
   for (unsigned i = 0; i < c->n_threads; i++)
      pthread_join(c->threads[i], NULL);
   for (unsigned i = 0; i < c->n_spare; i++)
      wire_arena_destroy(c->spare[i]);
   /* failed ids still in the table are the table's (freed with it) */
   free(c->dead);
   pthread_mutex_destroy(&c->mutex);
   pthread_cond_destroy(&c->work);
   pthread_cond_destroy(&c->ended);
   free(c);
   ctx->compile = NULL;
}

void
gpud_compile_profile(const struct gpud_context *ctx, uint64_t *ret_jobs, uint64_t *ret_ns)
{
   struct gpud_compile *c = ctx->compile;
   *ret_jobs = c ? c->jobs_done : 0;
   *ret_ns = c ? c->ns : 0;
}
