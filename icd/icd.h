/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The client ICD's internals: the connection to the daemon (its rings, the
 * queue of asynchronous commands, replies and their cache), the objects the
 * ICD keeps beside the daemon's (instances, devices, queues, memory,
 * buffers, command buffers, fences, semaphores, events, query pools) and the
 * entry points written by hand around the generated ones (icd_gen.h).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <vulkan/vk_icd.h>
#include <vulkan/vulkan_core.h>

#include "wire_completion.h"
#include "wire_gen.h"
#include "wire_icd.h"
#include "icd_gen.h"
#include "util_list.h"
#include "util_ring.h"
#include "util_transport.h"
#include "wire.h"

/* the newest core version of the registry gpud is generated from */
#define ICD_API_VERSION WIRE_API_VERSION
#define ICD_CACHE_MAX_ENTRIES 4096
/* Connect and handshake deadline per daemon (GPUD_CONNECT_TIMEOUT_MS). */
#define ICD_CONNECT_TIMEOUT_MS 1000
/* How long a connection waits for the process's next instance. */
#define ICD_IDLE_CONNECTION_MS 2000

/* Debug output: GPUD_DEBUG=wire,sync,init,waits,all... on stderr. */
enum icd_debug_flags {
   ICD_DEBUG_WIRE = 1u << 0,
   ICD_DEBUG_SYNC = 1u << 1,
   ICD_DEBUG_INIT = 1u << 2,
   ICD_DEBUG_WAITS = 1u << 3, /* each device's waits on its page, summed at its end */
};
extern uint32_t icd_debug;
void icd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define icd_dbg(flag, ...)                                                                   \
   do {                                                                                      \
      if (icd_debug & (flag))                                                                \
         icd_log(__VA_ARGS__);                                                               \
   } while (0)

/* Every object the ICD hands out as a pointer starts with this; the layout
 * matches struct wire_object_header. */
struct icd_object {
   uintptr_t loader_data; /* loader's dispatch pointer (dispatchable types) */
   uint64_t id;
   struct icd_connection *conn;
   VkObjectType type;
};

/* ---- handles and objects -----------------------------------------------------
 *
 * A handle the ICD gives for one of these objects is the object's address
 * (icd_objects.c makes them); icd_<object>_from_handle() is the one way
 * back, checked by type, as Mesa's VK_FROM_HANDLE. */
#define ICD_DEFINE_HANDLE_CASTS(obj, VkType)                                  \
   struct obj;                                                                 \
   static inline struct obj *obj##_from_handle(VkType handle)                  \
   {                                                                           \
      return (struct obj *)(uintptr_t)handle;                                  \
   }                                                                           \
   static inline VkType obj##_to_handle(const struct obj *o)                   \
   {                                                                           \
      return (VkType)(uintptr_t)o;                                             \
   }

ICD_DEFINE_HANDLE_CASTS(icd_instance, VkInstance)
ICD_DEFINE_HANDLE_CASTS(icd_physical_device, VkPhysicalDevice)
ICD_DEFINE_HANDLE_CASTS(icd_device, VkDevice)
ICD_DEFINE_HANDLE_CASTS(icd_queue, VkQueue)
ICD_DEFINE_HANDLE_CASTS(icd_command_buffer, VkCommandBuffer)
ICD_DEFINE_HANDLE_CASTS(icd_command_pool, VkCommandPool)
ICD_DEFINE_HANDLE_CASTS(icd_device_memory, VkDeviceMemory)
ICD_DEFINE_HANDLE_CASTS(icd_fence, VkFence)
ICD_DEFINE_HANDLE_CASTS(icd_semaphore, VkSemaphore)
ICD_DEFINE_HANDLE_CASTS(icd_event, VkEvent)
ICD_DEFINE_HANDLE_CASTS(icd_query_pool, VkQueryPool)
ICD_DEFINE_HANDLE_CASTS(icd_descriptor_pool, VkDescriptorPool)
ICD_DEFINE_HANDLE_CASTS(icd_descriptor_update_template, VkDescriptorUpdateTemplate)
ICD_DEFINE_HANDLE_CASTS(icd_messenger, VkDebugUtilsMessengerEXT)
ICD_DEFINE_HANDLE_CASTS(icd_deferred_operation, VkDeferredOperationKHR)

#define ICD_CACHE_BUCKETS 256

struct icd_cache_entry {
   struct icd_cache_entry *next;
   uint64_t hash;
   void *key;
   size_t key_size;
   void *reply;
   size_t reply_size;
};

struct icd_connection {
   int fd;
   char *socket_path;
   struct icd_instance *instance; /* whose messengers get the daemon's messages */
   uint64_t instance_id;          /* the id of the host instance on it */
   /* between instances (icd_connection_park): since when, in which process */
   struct util_list park_link;
   uint64_t parked_ns;
   pid_t pid;
   char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   atomic_uint_fast64_t next_id;
   /* the client's object limit (the Welcome's; 0: unknown) and the objects
    * the ICD counts on this connection: never fewer than the daemon holds
    * (children the daemon drops with their parent are counted until then) */
   uint64_t max_objects;
   _Atomic int64_t objects;

   /* the rings (util_ring.h): commands out, replies and messages in */
   void *ring_map;
   struct util_ring_wait ring_wait;
   struct util_ring commands; /* under send_mutex */
   struct util_ring replies;  /* the leader's */
   /* recordings' chunks and full queues go without waking the worker
    * (util_ring_send_quiet): on a machine of few CPUs, where the woken
    * worker takes the application's CPU, the submission or wait that
    * follows wakes it once for all */
   bool quiet_streams;
   /* something went quietly since the worker was last woken: the next
    * flush wakes it even with nothing more to send */
   atomic_bool unwoken;

   /* send side: queued async commands and the sequence counter */
   pthread_mutex_t send_mutex;
   struct wire_enc stream;
   uint32_t next_seq;

   /* receive side: one waiting thread reads for all (leader/followers) */
   pthread_mutex_t recv_mutex;
   pthread_cond_t recv_cond;
   bool reader_active;
   atomic_bool lost;
   struct icd_call *pending;
   struct util_msg_reader reader;

   /* replies of physical-device queries, fetched once */
   pthread_mutex_t cache_mutex;
   struct icd_cache_entry *cache[ICD_CACHE_BUCKETS]; /* by key hash */
   unsigned cache_entries;
};

uint64_t icd_connect_timeout_ns(void);
/* Connects and sends the Hello without waiting for the answer. */
int icd_connection_begin(const char *path, uint64_t deadline_ns,
                         struct icd_connection **ret_conn);
/* Waits for the Welcome until the deadline (CLOCK_MONOTONIC ns). */
int icd_connection_complete(struct icd_connection *conn, uint64_t deadline_ns);
int icd_connection_open(const char *path, struct icd_connection **ret_conn);
void icd_connection_destroy(struct icd_connection *conn);
/* A connection whose instance is gone waits a while (GPUD_IDLE_CONNECTION_MS,
 * default ICD_IDLE_CONNECTION_MS) for the process's next instance, which then
 * needs no new connection, worker or host driver start; after that it is
 * closed.  unpark: a waiting connection to path, or NULL. */
void icd_connection_park(struct icd_connection *conn);
struct icd_connection *icd_connection_unpark(const char *path);
void icd_connection_set_lost(struct icd_connection *conn, const char *why);
/* The daemon's socket hung up: delivers what it said last, then lost. */
void icd_connection_hung_up(struct icd_connection *conn);
static inline bool
icd_connection_is_lost(struct icd_connection *conn)
{
   return atomic_load(&conn->lost);
}
static inline uint64_t
icd_connection_new_id(struct icd_connection *conn)
{
   return atomic_fetch_add(&conn->next_id, 1);
}
/* Sends whatever async commands are queued. */
VkResult icd_connection_flush(struct icd_connection *conn);
/* Whether the daemon is gone (lost, or its end of the socket closed: a
 * look without waiting); the connection is lost from then on. */
bool icd_connection_gone(struct icd_connection *conn);
/* Sends a separately recorded stream (a command buffer) after the queue. */
VkResult icd_connection_send_stream(struct icd_connection *conn, const void *data,
                                    size_t size);

struct wsi_device;

struct icd_physical_device {
   struct icd_object base;
   struct icd_instance *instance;
   pthread_mutex_t wsi_mutex;
   struct wsi_device *wsi; /* made on the first window-system command */
};

/* The WSI's state of a physical device, one allocation (icd_wsi.c). */
static inline void
icd_physical_device_free_wsi(struct icd_physical_device *pdev)
{
   free(pdev->wsi);
   pdev->wsi = NULL;
}

struct icd_instance {
   struct icd_object base;
   uint32_t api_version;
   uint32_t n_physical_devices;
   struct icd_physical_device **physical_devices;
   /* VK_EXT_debug_utils messengers (icd_debug.c) */
   pthread_mutex_t messenger_mutex;
   struct util_list messengers;
   bool in_create_or_destroy; /* the create info's messengers are active */
   /* what the daemons were last told the messengers take (filter_mutex:
    * held from reading the messengers to sending, so sends keep order) */
   pthread_mutex_t filter_mutex;
   bool filter_sent;
   uint32_t filter_severities, filter_types;
};

/* Host-visible memory and its memfd (the caller's to close), for the WSI. */
VkResult icd_allocate_shared_memory(VkDevice device, uint32_t type_index, VkDeviceSize size,
                                    VkDeviceMemory *memory, int *fd, void **map);

/* Whether the daemon has the object (false for those only the ICD has:
 * descriptor update templates, messengers, report callbacks, surfaces). */
static inline bool
icd_daemon_knows(VkObjectType type, uint64_t handle)
{
   switch (type) {
   case VK_OBJECT_TYPE_UNKNOWN:
   case VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE:
   case VK_OBJECT_TYPE_DEBUG_UTILS_MESSENGER_EXT:
   case VK_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT:
   case VK_OBJECT_TYPE_SURFACE_KHR:
   case VK_OBJECT_TYPE_SWAPCHAIN_KHR:
   case VK_OBJECT_TYPE_DISPLAY_KHR:
   case VK_OBJECT_TYPE_DISPLAY_MODE_KHR:
      return false;
   default:
      return handle != 0;
   }
}
/* Private data of objects only the ICD has (icd_private.c). */
void icd_private_data_forget(uint64_t handle);

/* Sends a message to the instance's messengers that take it. */
void icd_instance_message(struct icd_instance *instance,
                          VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                          VkDebugUtilsMessageTypeFlagsEXT types,
                          const VkDebugUtilsMessengerCallbackDataEXT *data);
/* The messengers of a VkInstanceCreateInfo chain, for create and destroy. */
VkResult icd_instance_add_create_messengers(struct icd_instance *instance,
                                            const VkInstanceCreateInfo *info);
void icd_instance_free_messengers(struct icd_instance *instance);
/* Tells each daemon what the instance's messengers take (so it sends
 * nothing else). */
void icd_instance_update_message_filter(struct icd_instance *instance);

struct icd_queue {
   struct icd_object base;
   struct icd_device *device;
   uint32_t family;
   uint32_t index;
   VkDeviceQueueCreateFlags flags;
   struct icd_queue *next;
   VkFence idle_fence; /* vkQueueWaitIdle's own, on the completion page */
};
/* The queue's idle fence, reset and submitted; VK_NULL_HANDLE when the
 * daemon must be asked (icd_queue.c). */
VkFence icd_queue_idle_fence(struct icd_queue *q);

/* Slots of memory a device's larger copies made by the ICD go through
 * (icd_queue.c). */
#define ICD_UPLOAD_SLOTS 4u

struct icd_device {
   struct icd_object base;
   struct icd_physical_device *physical_device;
   pthread_mutex_t mutex;
   struct icd_queue *queues;
   /* the worker's completion page (icd_completion.c); NULL: fences are asked
    * about; fence slots in use, and each slot's next first generation
    * (with mutex) */
   struct gpud_completion_header *completion;
   uint64_t *fence_used;
   uint32_t *fence_generation;
   unsigned fence_hint;
   uint64_t *semaphore_used;
   unsigned semaphore_hint;
   uint64_t *event_used;
   unsigned event_hint;
   uint32_t next_tag;
   /* host image copies (icd_hostcopy.c): the images made for them, and the
    * staging memory shared with the worker (with hostcopy_mutex) */
   /* VK_EXT_map_memory_placed enabled: host-visible memory keeps its memfd */
   bool keeps_memfds;
   pthread_mutex_t hostcopy_mutex;
   struct icd_host_image **host_images;
   void *staging;
   uint64_t staging_size;
   /* the submissions sent (vkQueueSubmit, vkQueueSubmit2,
    * vkQueueBindSparse), against the page's `settled` (icd_queue.c), and
    * the memory each buffer is bound to (icd_buffer.c, with buffers_mutex) */
   _Atomic uint64_t submits;
   /* GPUD_DEBUG=waits: the waits on the page, those that slept, their
    * time; the submissions the ICD made itself */
   _Atomic uint64_t dbg_waits, dbg_slept, dbg_wait_ns, dbg_uploads;
   pthread_mutex_t buffers_mutex;
   struct icd_buffer_binding *buffers;
   uint32_t buffers_cap, buffers_n;
   /* the copies the ICD makes (icd_queue.c): memory both processes map,
    * which the worker copies larger ones from, a slot each with the fence
    * the worker raises once it did (with upload_mutex) */
   pthread_mutex_t upload_mutex;
   struct icd_upload_slot {
      VkBuffer buffer;
      VkDeviceMemory memory;
      VkFence done;
      VkDeviceSize size; /* (the bytes: its memory's mapping) */
   } upload_slots[ICD_UPLOAD_SLOTS];
   bool upload_slots_failed;
};

/* Buffers (icd_buffer.c): their ids are their handles; the ICD keeps where
 * each is bound, for the copies it makes itself (icd_queue.c). */
struct icd_buffer_binding {
   uint64_t id; /* 0: an empty entry */
   struct icd_device_memory *memory;
   VkDeviceSize offset;
};
bool icd_buffer_binding(struct icd_device *dev, VkBuffer buffer,
                        struct icd_buffer_binding *ret);
void icd_device_buffers_finish(struct icd_device *dev);

/* The copies the ICD makes: the memory a device keeps for them, given
 * back before the device is destroyed. */
void icd_device_upload_finish(struct icd_device *dev);

/* Host image copies: what a device keeps for them, freed with it. */
void icd_device_hostcopy_finish(struct icd_device *dev);

struct icd_semaphore {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (binary, exported, no slot) */
   int slot;
   uint32_t tag;
};

struct icd_fence {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (no slot) */
   int slot;
   _Atomic uint32_t generation; /* resets so far, from the slot's first */
};

/* An event with a slot on the page: its tag there, the application's host
 * sets and resets so far and the last of them (what the event is while the
 * worker has not run them all, when no submission changes it). */
struct icd_event {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (device-only, no slot) */
   int slot;
   uint32_t tag;
   _Atomic uint32_t host_ops;
   _Atomic bool last_set;
};

/* A query pool whose results the worker copies into a page (icd_query.c);
 * page NULL: asked about.  host_resets: the application's vkResetQueryPool
 * so far. */
struct icd_query_pool {
   struct icd_object base;
   struct gpud_query_page_header *page;
   size_t page_size;
   uint32_t n_queries, n_values;
   _Atomic uint32_t host_resets;
};

void icd_device_completion_init(struct icd_device *dev);
void icd_device_completion_finish(struct icd_device *dev);
/* Slots of the page's tables (with the device's mutex taken here): a free
 * one of n, or -1, and (tag not NULL) a new tag, never 0, for what takes
 * it; given back. */
int icd_completion_slot_take(struct icd_device *dev, uint64_t *used, unsigned *hint, unsigned n,
                             uint32_t *tag);
void icd_completion_slot_give(struct icd_device *dev, uint64_t *used, unsigned *hint, int slot);
/* A fence's slot given back, the first generation of its next fence set. */
void icd_completion_fence_slot_give(struct icd_device *dev, int slot, uint32_t next_generation);
/* Waits on the page until reached(what) says VK_SUCCESS, the timeout ends
 * (VK_TIMEOUT), the device or the daemon is lost (VK_ERROR_DEVICE_LOST), or
 * something must be asked about (VK_NOT_READY, with the timeout left in
 * *left). */
VkResult icd_completion_wait(struct icd_device *dev, VkResult (*reached)(const void *),
                             const void *what, uint64_t timeout, uint64_t *left);
/* The fence's next signal is the host driver's to tell (a window system's
 * acquire): its state is asked about until it is reset. */
void icd_fence_ask(VkFence fence);
/* Whether the page answers for the fence; it signalled there, by the ICD
 * (a submission the ICD made itself: icd_queue.c). */
bool icd_fence_here(VkFence fence);
/* Whether a fence the page answers for is signalled there. */
bool icd_fence_signalled_here(VkFence fence);
void icd_fence_signal_here(VkFence fence);
/* Its payload was imported or exported: asked about from now on. */
void icd_fence_untrack(VkFence fence);
void icd_semaphore_untrack(VkSemaphore semaphore);

/* A descriptor pool: the sets allocated from it, which its reset and its
 * destruction free. */
struct icd_descriptor_pool {
   struct icd_object base;
   _Atomic int64_t sets;
};

struct icd_command_pool {
   struct icd_object base;
   pthread_mutex_t mutex;
   struct icd_command_buffer *buffers;
};

/* Copies a recording may note for the ICD to make itself (icd_queue.c). */
#define ICD_UPLOAD_MAX_COPIES 16u
/* A command of a recording, or the start of one (icd_queue.c notes which
 * keep it to copies). */
void icd_upload_note_op(struct icd_command_buffer *cb, uint32_t op);
/* ... a copy between buffers, a barrier (of images, or moving buffers
 * between queue families: the GPU's). */
void icd_upload_note_copy(VkCommandBuffer commandBuffer, VkBuffer src, VkBuffer dst, uint32_t n,
                          const VkBufferCopy *regions, const VkBufferCopy2 *regions2);
void icd_upload_note_barrier(VkCommandBuffer commandBuffer, uint32_t n_images, bool ownership);
/* A submission of such command buffers alone (or none, with a fence), made
 * by the ICD itself where it can be (icd_upload.c): whether it was, *ret
 * its result. */
bool icd_upload_submit(struct icd_queue *q, struct icd_command_buffer *const *cbs,
                       uint32_t n_cbs, VkFence fence, VkResult *ret);

struct icd_command_buffer {
   struct icd_object base;
   struct icd_device *device;
   struct icd_command_pool *pool;
   struct icd_command_buffer *prev, *next; /* in the pool */
   VkCommandBufferLevel level;
   /* what the recording copies while it holds only copies between buffers
    * and barriers of memory (icd_queue.c); upload_no: it holds more */
   bool upload_no;
   uint32_t n_upload;
   struct icd_upload_copy {
      uint64_t src, dst;
      VkDeviceSize src_offset, dst_offset, size;
   } upload[ICD_UPLOAD_MAX_COPIES];
   /* the recording: the chunk being recorded (a struct wire_chunk_header,
    * then the commands), the chunks sent before it, the last command's
    * start; recording between vkBeginCommandBuffer and vkEndCommandBuffer */
   struct wire_enc stream;
   uint32_t chunk;
   size_t cmd_offset;
   bool recording;
};

struct icd_device_memory {
   struct icd_object base;
   VkDeviceSize size;
   bool coherent;   /* flushes and invalidates need no daemon */
   bool prefaulted; /* its pages were offered to the page tables (icd_memory.c) */
   bool external;   /* imported or exportable: others may see it */
   void *map;       /* whole allocation mapped from the daemon's memfd */
   size_t map_size;
   /* a placed mapping (VK_EXT_map_memory_placed): the memfd (kept where
    * the device enabled it, else -1) mapped again at the application's
    * address, placed_size bytes */
   int fd;
   void *placed;
   size_t placed_size;
};

struct icd_descriptor_update_template {
   struct icd_object base;
   VkDescriptorUpdateTemplateType type;
   VkPipelineBindPoint bind_point; /* of a push descriptor template */
   uint32_t n_entries;
   VkDescriptorUpdateTemplateEntry *entries;
};

static inline struct icd_object *
icd_object(const void *handle)
{
   return (struct icd_object *)handle;
}

void *icd_object_alloc(size_t size, struct icd_connection *conn, VkObjectType type,
                       bool dispatchable);
void icd_object_free(void *object);

