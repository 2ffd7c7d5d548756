/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What executors (generated in gpud_gen.c, or written by hand) work with:
 * the command being executed, the objects it names, and the helpers that
 * add, forget and check them.
 */

#include "gpud_context.h"
#include "gpud_gen.h"
#include "wire_gpud.h"

struct gpud_queue_info {
   uint32_t family;
   uint32_t count;
   VkDeviceQueueCreateFlags flags;
};

/* A descriptor set layout's bindings, sorted by number, shared by the
 * layout and the sets allocated with it (a set outlives its layout). */
struct gpud_set_layout {
   unsigned refs;
   uint32_t n;
   struct gpud_set_binding {
      uint32_t binding;
      VkDescriptorType type;
      uint32_t count;
   } b[];
};

struct gpud_object {
   struct util_list link;            /* ctx->object_list, in creation order */
   uint64_t id;
   VkObjectType type;
   uint64_t handle;                  /* the host handle */
   struct gpud_object *instance;     /* owning instance (for instance children) */
   struct gpud_object *device;       /* owning device (for device children) */
   struct gpud_object *pool;         /* command or descriptor pool of a child */
   struct gpud_host_dispatch *disp;  /* instances and devices: their own table */
   atomic_bool lost;                 /* devices: an asynchronous call failed (or
                                      * gpudctl inject lose-device) */
   VkDebugUtilsMessengerEXT messenger; /* instances, when validating */
   /* buffers and images: usable only once bound to memory (or sparse) */
   bool bound;
   bool sparse;
   uint64_t size;                    /* buffers: their size */
   struct gpud_object *memory;       /* what a buffer or image is bound to */
   uint64_t physical_device;         /* devices: the host physical device */
   struct gpud_queue_info *queues;   /* devices: the queues it was created with */
   uint32_t n_queues;
   bool *extensions;                 /* devices: which of wire_extensions it enabled */
   /* memory */
   void *map;
   size_t map_size;
   uint64_t bytes;
   uint32_t heap;
   int fd; /* exportable host-visible memory: its memfd; else -1 */
   /* memory an fd was exported of: it may outlive the object, so it stays
    * charged to the client until the client ends */
   bool exported;
   char *name; /* VK_EXT_debug_utils */
   /* queues: which one, and its completion tracking (gpud_queue.c) */
   uint32_t queue_family, queue_index;
   struct gpud_queue_track *track;
   /* devices: the tracker of their queues */
   struct gpud_device_track *dtrack;
   /* fences, while completions are delayed (gpud_inject.c): when the worker
    * first saw it signalled */
   atomic_uint_least64_t signal_seen_ns;
   /* fences with a slot on their device's completion page (gpud_queue.c):
    * the slot, and the resets so far (from the slot's first generation) */
   bool fence_tracked;
   uint32_t fence_slot;
   uint32_t fence_generation;
   /* timeline semaphores with a slot on the page */
   bool semaphore_tracked;
   uint32_t semaphore_slot;
   /* events with a slot on the page */
   bool event_tracked;
   uint32_t event_slot;
   /* command buffers: the ids of the events their recording sets or resets
    * and of the query pools whose queries it resets, begins, ends or
    * writes (gpud_queue.c) */
   uint64_t *cmd_watched;
   uint32_t n_cmd_watched;
   /* query pools: their queries (size) and values per query (0: a type
    * whose results the page does not show), and their results page */
   uint32_t query_values;
   struct gpud_query_pool_page *query_page;
   /* set layouts and descriptor sets: the layout's bindings */
   struct gpud_set_layout *set_layout;
   /* command buffers: whether a recording is open, the chunk it expects
    * next and its pool's resets when it began; command pools: their resets
    * (gpud_replay.c) */
   bool recording;
   uint32_t next_chunk;
   uint32_t pool_resets;
   /* command buffers and pools: the chunks (of their command buffers)
    * given to a lane (the decoding thread's) and replayed; command pools:
    * their lane (0: none yet), and whether they have secondaries
    * (gpud_replay.c) */
   uint64_t chunks_routed;
   _Atomic uint64_t chunks_replayed;
   unsigned lane;
   bool secondaries;
};

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
   bool deferred;            /* a waiter thread sends the reply */
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
   char validation_error[256];
   /* create flags of a new buffer or image, and a buffer's size (a query
    * pool's queries, and values per query) */
   uint32_t new_create_flags;
   uint64_t new_size;
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
   /* which queue a new queue is */
   uint32_t new_queue_family, new_queue_index;
};

_Static_assert(offsetof(struct gpud_call, disp) == 0, "wire_gpud.h reads the dispatch first");

/* Decodes and runs every command in a stream message; negative when the
 * client must be disconnected (the reason is logged and sent). */
/* Checks an fd a client gives for a memory import (gpud_external.c): a
 * sealed memfd of at least size bytes for host-visible (shared) memory, the
 * host's kind of handle otherwise.  VK_ERROR_INVALID_EXTERNAL_HANDLE (and
 * the fd closed) when it is not. */
VkResult gpud_external_check_memory_import(struct gpud_call *call,
                                           VkImportMemoryFdInfoKHR *import, bool shared,
                                           uint64_t size);

/* Command state, kept from one command to the next (the decoding
 * thread's, a replay lane's, the submissions'), decoding into arena. */
struct gpud_call *gpud_call_create(struct gpud_context *ctx, struct wire_arena *arena);
void gpud_call_destroy(struct gpud_call *call);
/* Readies call for a command (header included, its size checked) and
 * returns the decoder of its parameters; finish releases what it made that
 * no object took over. */
struct wire_dec *gpud_call_prepare(struct gpud_call *call, const uint8_t *cmd, size_t size);
void gpud_call_finish(struct gpud_call *call);

/* Runs the commands of one message; fds are the message's (-1 once a
 * command took one), the rest are closed. */
int gpud_call_process_stream(struct gpud_context *ctx, const uint8_t *data, size_t size,
                             int *fds, unsigned n_fds);

/* Recordings (gpud_replay.c): the replay lanes and the submissions waiting
 * for them (NULL: out of memory; no lanes where there are few CPUs). */
struct gpud_replay *gpud_replay_create(struct gpud_context *ctx);
/* Stops the lanes (what they hold is dropped). */
void gpud_replay_destroy(struct gpud_replay *r);
/* Checks a chunk (a whole WIRE_OP_CHUNK command) and replays it, or gives
 * it to its pool's lane; negative when the client must be disconnected (the
 * reason is logged and sent). */
int gpud_replay_chunk(struct gpud_call *call, const uint8_t *data, uint32_t size);
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
/* What the replay of a chunk needs of a call: every command runs on cb's
 * device (false: out of memory); the decoder of the next recorded command,
 * on cb, whose id the caller checked. */
bool gpud_call_begin_recorded(struct gpud_call *call, struct gpud_object *cb);
static inline struct wire_dec *gpud_call_next_recorded(struct gpud_call *call, uint32_t op,
                                                       const uint8_t *params, size_t size);

/* The object the command named with this host handle, or NULL. */
struct gpud_object *gpud_call_named(struct gpud_call *call, VkObjectType type, uint64_t handle);
/* Marks a buffer or image bound to memory. */
void gpud_call_mark_bound(struct gpud_call *call, VkObjectType type, uint64_t handle,
                          uint64_t memory);

/* A set layout's bindings: one more holder, one fewer (freed with the
 * last). */
struct gpud_set_layout *gpud_set_layout_ref(struct gpud_set_layout *l);
void gpud_set_layout_unref(struct gpud_set_layout *l);

/* Object table (gpud_object.c) */
struct gpud_object *gpud_object_find(struct gpud_context *ctx, uint64_t id);
/* Forgets the children of a pool (vkResetDescriptorPool). */
void gpud_object_forget_children(struct gpud_context *ctx, struct gpud_object *pool);
/* Destroys every host object of the client that belongs to device (or to
 * instance, or all when both are NULL), newest first. */
void gpud_context_destroy_objects(struct gpud_context *ctx, struct gpud_object *device,
                                  struct gpud_object *instance);

/* Completion tracking per queue (gpud_queue.c): what gpudctl shows as a
 * queue's submissions, in flight and busy time. */
/* A new queue object: its status slot and tracker. */
void gpud_queue_track_add(struct gpud_context *ctx, struct gpud_object *queue);
/* Before a device's objects go: stops its tracker, frees its queues'. */
void gpud_queue_track_device_end(struct gpud_context *ctx, struct gpud_object *device);
/* The completion page: a fence destroyed, or whose state only the host
 * driver knows from now on (its slot says "ask"); a device lost. */
void gpud_queue_fence_gone(struct gpud_object *fence, bool ask);
/* This signal of the fence is the host driver's to tell: its slot says
 * "ask" (until the ICD resets it). */
void gpud_queue_fence_ask(struct gpud_object *fence);
void gpud_queue_device_lost(struct gpud_object *device);
/* What completed is on the page now: before a wait answered by the host
 * (idle, fences, semaphores) replies, so that the application never sees a
 * fence unsignalled on the page after the host said its work is done. */
void gpud_queue_publish(struct gpud_object *device);
/* Fences and timeline semaphores a wait through the daemon found signalled
 * (the host's word, before the tracker's): on the page before it replies. */
void gpud_queue_fences_signalled(struct gpud_object *device, struct gpud_object *const *fences,
                                 uint32_t n);
void gpud_queue_semaphores_reached(struct gpud_object *device, struct gpud_object *const *sems,
                                   uint32_t n);
/* A timeline semaphore destroyed, or asked about from now on (ask); one the
 * host signalled, or said it has reached, value. */
void gpud_queue_semaphore_gone(struct gpud_object *semaphore, bool ask);
void gpud_queue_semaphore_signalled(struct gpud_object *semaphore, uint64_t value);
/* An event or a query pool destroyed (before the host destroys it: the
 * tracker reads it). */
void gpud_queue_event_gone(struct gpud_object *event);
void gpud_queue_query_pool_gone(struct gpud_object *pool);

/* Fault injection (gpud_inject.c), from what the server wrote on the status
 * page.  Before each command: loses every device when asked to. */
void gpud_inject_before_command(struct gpud_call *call);
/* vkAllocateMemory: whether this allocation must fail. */
bool gpud_inject_fail_alloc(struct gpud_context *ctx);
/* The delay to add to a completion, in ns (0: none). */
uint64_t gpud_inject_delay_ns(struct gpud_context *ctx);

/* Validation (gpud_validate.c): what gpud_exec_vkCreateInstance adds when
 * validating, and the messenger. */
void gpud_validate_instance_info(struct gpud_call *call, VkInstanceCreateInfo *ci,
                                 VkDebugUtilsMessengerCreateInfoEXT *messenger);
void gpud_validate_instance_created(struct gpud_call *call, VkInstance instance);
void gpud_validate_instance_destroy(struct gpud_object *instance);
/* The command the calling thread executes, for the messenger. */
void gpud_validate_set_call(struct gpud_call *call);

/* Waits (gpud_wait.c) */
void gpud_waiters_cancel(struct gpud_context *ctx, struct gpud_object *device, uint64_t handle);
void gpud_wait_query(struct gpud_call *call, struct wire_args_vkGetQueryPoolResults *a);

/* Memory accounting, through the worker (gpud_object.c) */
VkResult gpud_context_reserve_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes);
/* The object's debug name (NULL or "": none), shown by gpudctl. */
void gpud_object_set_name(struct gpud_context *ctx, struct gpud_object *obj, const char *name);
/* The client's usage and budget per heap (VK_EXT_memory_budget); false when
 * the server could not say. */
bool gpud_context_memory_budget(struct gpud_context *ctx, struct gpud_memory_budget *budget);
void gpud_context_release_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes);

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
