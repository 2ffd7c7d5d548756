/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The objects of a client (gpud_object.c): every id it made, mapped to the
 * host handle and what the worker must know about it, in a dense table and
 * in creation order.
 */

#include <stdlib.h>

#include "gpud_context.h"

struct gpud_device_track;
struct gpud_queue_track;
struct gpud_query_pool_page;

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

/* One more holder of a set layout's bindings, one fewer (freed with the
 * last). */
static inline struct gpud_set_layout *
gpud_set_layout_ref(struct gpud_set_layout *l)
{
   if (l)
      l->refs++;
   return l;
}

static inline void
gpud_set_layout_unref(struct gpud_set_layout *l)
{
   if (l && !--l->refs)
      free(l);
}

/* Where replay lanes take a host command pool's command buffers
 * (gpud_replay.c): the chunks given to a lane and replayed, and the lane
 * (0: none yet).  A host pool is used by one thread at a time. */
struct gpud_replay_unit {
   uint64_t chunks_routed;
   _Atomic uint64_t chunks_replayed;
   unsigned lane;
};

/* One of the host command pools behind an application's command pool
 * where lanes replay (gpud_cmd_buffer.c): its command buffers are spread
 * over a few, so that lanes replay them side by side. */
struct gpud_pool_shard {
   uint64_t handle; /* the host's VkCommandPool (the first: the pool's own) */
   struct gpud_replay_unit unit;
   /* a command buffer of it began a recording since its last reset (set
    * by the thread replaying it, read at the pool's reset, after the
    * lanes are done with the pool; not the first's, which always resets) */
   _Atomic bool recorded;
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
   /* made by a compile job that has not ended (gpud_compile.c): not usable
    * yet; and the jobs that use this object */
   atomic_bool pending;
   _Atomic uint32_t compile_refs; /* gpud_object_hold */
   atomic_bool lost;                 /* devices: an asynchronous call failed (or
                                      * gpudctl inject lose-device) */
   VkDebugUtilsMessengerEXT messenger; /* instances, when validating */
   uint32_t api_version;             /* instances: the host instance's */
   /* buffers and images: usable only once bound to memory (or sparse) */
   bool bound;
   bool sparse;
   uint64_t size;                    /* buffers: their size */
   bool buffer_transfer_src;         /* ... and whether copies may read them */
   /* images made for host copies (VK_IMAGE_USAGE_HOST_TRANSFER_BIT): what
    * sizes their regions (gpud_hostcopy.c) */
   bool image_host_transfer;
   uint32_t image_format, image_layers, image_levels;
   uint32_t image_extent[3];
   struct gpud_object *memory;       /* what a buffer or image is bound to */
   uint64_t memory_offset;           /* ... and where in it */
   /* buffers not bound yet: a second host buffer that can be bound to an
    * imported host allocation (the first, made as asked, cannot: the
    * NVIDIA driver leaves its mappable device memory out of a buffer made
    * for both); the bind keeps the one its memory takes (gpud_buffer.c) */
   uint64_t twin;
   /* memory: its host memory type, and the worker's own mapping of it where
    * it is no memfd but the host lets the worker map it (made when a copy
    * the worker makes needs it: gpud_transfer.c) */
   uint32_t host_type;
   void *host_map;
   uint64_t physical_device;         /* devices: the host physical device */
   struct gpud_queue_info *queues;   /* devices: the queues it was created with */
   uint32_t n_queues;
   bool *extensions;                 /* devices: which of wire_extensions it enabled */
   bool host_image_copy;             /* devices: hostImageCopy enabled */
   uint32_t rt_groups;               /* ray tracing pipelines: their shader groups */
   uint64_t code_hash;               /* shader modules: their code's, where the device keeps
                                      * a pipeline cache (gpud_pipecache.c) */
   uint32_t staging_heap;            /* devices: what their staging memory is charged to */
   /* memory: its mapping; devices: the host copies' staging memory
    * (gpud_hostcopy.c) */
   void *map;
   size_t map_size;
   uint64_t bytes;
   uint32_t heap;
   int fd; /* exportable host-visible memory: its memfd; else -1 */
   /* memory an fd was exported of: it may outlive the object, so it stays
    * charged to the client until the client ends */
   bool exported;
   char *name; /* VK_EXT_debug_utils */
   /* queues: which one, and its completion tracking (gpud_track.c) */
   uint32_t queue_family, queue_index;
   struct gpud_queue_track *track;
   /* devices: the tracker of their queues */
   struct gpud_device_track *dtrack;
   /* devices: the host pipeline cache kept across runs (gpud_pipecache.c) */
   struct gpud_pipecache *pipecache;
   /* fences, while completions are delayed (gpud_inject.c): when the worker
    * first saw it signalled */
   atomic_uint_least64_t signal_seen_ns;
   /* fences with a slot on their device's completion page (gpud_track.c):
    * the slot, and the resets so far (from the slot's first generation) */
   bool fence_tracked;
   uint32_t fence_slot;
   uint32_t fence_generation;
   /* timeline semaphores with a slot on the page */
   bool semaphore_tracked;
   uint32_t semaphore_slot;
   /* semaphores: the queue (its object's id) of the last host submission
    * that waited on one, and that submission's host_submits there; queues:
    * the submissions of the application's the host took, and how many of
    * them a signalled marker covered (gpud_queue_marker, gpud_semaphore.c) */
   uint64_t sem_waited_queue, sem_waited_seq;
   uint64_t host_submits, host_settled;
   /* events with a slot on the page */
   bool event_tracked;
   uint32_t event_slot;
   /* command buffers: the ids of the events their recording sets or resets
    * and of the query pools whose queries it resets, begins, ends or
    * writes (gpud_queue.c) */
   uint64_t *cmd_watched;
   uint32_t n_cmd_watched;
   /* command buffers: what their recording copies, where it holds nothing
    * else (gpud_transfer.c) */
   struct gpud_transfer *transfer;
   /* devices: what the worker records the ICD's copies into where it makes
    * them on the GPU (gpud_transfer.c) */
   struct gpud_upload *upload;
   /* devices: semaphores the application destroyed whose host destroy
    * waits for a queue to let go of them (gpud_semaphore.c) */
   struct gpud_deferred_semaphore *deferred_semaphores;
   /* fences with a payload of the host's: imported, or exportable */
   bool fence_external;
   /* fences the worker signalled itself (its own copies, gpud_transfer.c):
    * the host's stays unsignalled until the next reset, so the worker
    * answers for it where it asks the host (gpud_wait.c, gpud_inject.c) */
   atomic_bool fence_cpu_signaled;
   /* fences whose last submission carried gpud's fence in their place
    * (gpud_queue.c): the host queue on which their own signal is owed,
    * submitted where the host's word on them counts again */
   VkQueue fence_owed_queue;
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
   /* command buffers: the chunks given to a lane (the decoding thread's)
    * and replayed; command pools: whether they have secondaries
    * (gpud_replay.c) */
   uint64_t chunks_routed;
   _Atomic uint64_t chunks_replayed;
   bool secondaries;
   /* command pools: their flags, and where lanes replay, their host pools
    * (n_shards made of shards_max, the next command buffer's); command
    * buffers: the host pool they came from (NULL: the pool's own, no
    * lanes) */
   VkCommandPoolCreateFlags pool_flags;
   struct gpud_pool_shard *shards;
   uint32_t n_shards, shards_max, next_shard;
   struct gpud_pool_shard *shard;
};

/* The object with this id, or NULL. */
struct gpud_object *gpud_object_find(struct gpud_context *ctx, uint64_t id);
/* A compile job's hold on an object it uses, from another thread
 * (gpud_compile.c), let go when the job ends; a command that destroys the
 * object waits for every hold to go first. */
static inline void
gpud_object_hold(struct gpud_object *obj)
{
   atomic_fetch_add_explicit(&obj->compile_refs, 1, memory_order_relaxed);
}
void gpud_object_release(struct gpud_object *obj);
void gpud_object_wait_released(struct gpud_object *obj);
/* Puts a new object in the table and counts it (-EEXIST: the id is taken;
 * -ENOMEM); takes it out again and uncounts it. */
int gpud_object_insert(struct gpud_context *ctx, struct gpud_object *obj);
void gpud_object_remove(struct gpud_context *ctx, struct gpud_object *obj);
/* Frees an object and what it holds (a memfd, a mapping, names...). */
void gpud_object_free(struct gpud_object *obj);
/* The object's debug name (NULL or "": none), shown by gpudctl. */
void gpud_object_set_name(struct gpud_context *ctx, struct gpud_object *obj, const char *name);
/* A device's host-copy staging memory released (gpud_hostcopy.c). */
void gpud_hostcopy_device_gone(struct gpud_context *ctx, struct gpud_object *dev);
/* Whether a device enabled the device extension of this name. */
bool gpud_device_enabled(const struct gpud_object *device, const char *extension);
/* Whether a device enabled an extension that brings the op (a core op:
 * always): the host would otherwise be asked for what it may not have set
 * up, or have at all. */
bool gpud_device_enables_op(const struct gpud_object *device, uint32_t op);
