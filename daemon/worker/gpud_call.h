/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Command state (gpud_call.c): what executors (generated in gpud_gen.c, or
 * written by hand) work with -- the command being executed, its decoder, the
 * objects it names and those it makes.
 */

#include "gpud_context.h"
#include "gpud_gen.h"
#include "gpud_object.h"
#include "wire_gpud.h"

/* One command being executed. */
struct gpud_call {
   /* first: generated code reads it directly (gpud_call_dispatch) */
   const struct gpud_host_dispatch *disp;
   struct gpud_context *ctx;
   struct wire_arena *arena; /* what its commands decode into */
   struct wire_dec dec;
   /* the command, header included */
   const uint8_t *cmd;
   size_t cmd_size;
   struct wire_enc *reply;   /* NULL when no reply is wanted */
   uint32_t seq;
   uint32_t op;
   struct gpud_object *instance;
   struct gpud_object *device;
   bool deferred;            /* a waiter or compile thread sends the reply */
   bool new_pending;         /* new objects wait for a compile job */
   /* ... and the shader groups of each new ray tracing pipeline, by index */
   const uint32_t *new_pending_groups;
   int reply_fd;             /* sent with the reply, then closed */
   /* objects named by the command, in order */
   struct gpud_object **touched;
   unsigned n_touched, cap_touched;
   /* new ids the command names, and the result it gets instead of running
    * when they would take the client past its object limit */
   unsigned n_new_ids;
   VkResult refused;
   /* memory of a new allocation (reserved bytes, and the mapping of
    * host-visible memory), attached to its object or released */
   void *new_map;
   size_t new_map_size;
   int new_fd; /* its memfd, kept for export */
   uint64_t new_bytes;
   uint32_t new_heap;
   /* validation messenger of a new instance */
   VkDebugUtilsMessengerEXT new_messenger;
   uint32_t new_api_version; /* a new instance: its host apiVersion */
   uint32_t new_host_type;   /* new memory: its host memory type */
   bool new_external;        /* a new fence: exportable */
   uint64_t new_twin;        /* a new buffer: its twin (gpud_buffer.c) */
   uint64_t new_code_hash;   /* a new shader module: its code's (gpud_pipecache.c) */
   char validation_error[256];
   /* create flags of a new buffer or image, and a buffer's size (a query
    * pool's queries, and values per query) */
   uint32_t new_create_flags;
   uint64_t new_size;
   bool new_transfer_src; /* a new buffer's usage has TRANSFER_SRC */
   /* a new image's, for host copies (usage has HOST_TRANSFER) */
   bool new_image_host_transfer;
   uint32_t new_image_format, new_image_layers, new_image_levels;
   uint32_t new_image_extent[3];
   uint32_t new_query_values;
   /* the bindings of a new set layout; the layouts of new descriptor sets,
    * in order (new_sets_adopted of them taken) */
   struct gpud_set_layout *new_set_layout;
   struct gpud_set_layout **new_set_layouts;
   uint32_t n_new_set_layouts, new_sets_adopted;
   /* queues of a new device, attached to its object */
   struct gpud_queue_info *new_queues;
   uint32_t n_new_queues;
   bool *new_extensions; /* ... and its extensions */
   bool new_host_image_copy; /* ... and whether it enabled hostImageCopy */
   /* the shader groups of new ray tracing pipelines, by host handle (in
    * the decoder's memory) */
   struct gpud_rt_groups {
      uint64_t handle;
      uint32_t groups;
   } *new_rt_groups;
   uint32_t n_new_rt_groups;
   /* which queue a new queue is (a new command pool: its family) */
   uint32_t new_queue_family, new_queue_index;
   /* the host pools of new command buffers, in order (new_cbs_adopted of
    * them taken; in the decoder's memory) */
   struct gpud_pool_shard **new_cb_shards;
   uint32_t n_new_cb_shards, new_cbs_adopted;
};

_Static_assert(offsetof(struct gpud_call, disp) == 0, "wire_gpud.h reads the dispatch first");

/* Command state, kept from one command to the next (the decoding
 * thread's, a replay lane's, the submissions'), decoding into arena. */
struct gpud_call *gpud_call_create(struct gpud_context *ctx, struct wire_arena *arena);
void gpud_call_destroy(struct gpud_call *call);
/* Readies call for a command (header included, its size checked) and
 * returns the decoder of its parameters; finish releases what it made that
 * no object took over. */
struct wire_dec *gpud_call_prepare(struct gpud_call *call, const uint8_t *cmd, size_t size);
void gpud_call_finish(struct gpud_call *call);

/* What the replay of a chunk needs of a call: every command runs on cb's
 * device (false: out of memory); the decoder of the next recorded command,
 * on cb, whose id the caller checked; the end of the chunk. */
bool gpud_call_begin_recorded(struct gpud_call *call, struct gpud_object *cb);
void gpud_call_finish_recorded(struct gpud_call *call);
static inline struct wire_dec *gpud_call_next_recorded(struct gpud_call *call, uint32_t op,
                                                       const uint8_t *params, size_t size);

/* The object the command named with this host handle, or NULL. */
struct gpud_object *gpud_call_named(struct gpud_call *call, VkObjectType type, uint64_t handle);
/* The command the calling thread runs (for the validation messenger), or
 * NULL between commands. */
struct gpud_call *gpud_call_current(void);
/* A structure of the given type in a decoded (so writable) chain, or NULL. */
static inline void *
gpud_chain_find(const void *chain, VkStructureType type)
{
   for (VkBaseOutStructure *c = (VkBaseOutStructure *)chain; c; c = c->pNext) {
      if (c->sType == type)
         return c;
   }
   return NULL;
}
/* Marks a buffer or image bound to memory, at offset. */
void gpud_call_mark_bound(struct gpud_call *call, VkObjectType type, uint64_t handle,
                          uint64_t memory, uint64_t offset);

/* Recorded commands take no fds and make no objects: only what a command's
 * decoding changes is set again. */
static inline struct wire_dec *
gpud_call_next_recorded(struct gpud_call *call, uint32_t op, const uint8_t *params, size_t size)
{
   struct wire_dec *d = &call->dec;
   if (d->allocated) {
      wire_arena_reset(d->arena);
      d->allocated = false;
   }
   call->op = op;
   call->n_touched = 1; /* the command buffer, whose id the caller checked */
   d->p = params;
   d->end = params + size;
   d->fatal = false;
   d->error = NULL;
   return d;
}
