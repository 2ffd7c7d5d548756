/* SPDX-License-Identifier: MIT */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vulkan/vulkan_core.h>

#include "gpud_gen.h"
#include "util_idmap.h"
#include "util_log.h"
#include "util_transport.h"
#include "wire.h"

#define GPUD_VERSION "0.1.0"

/* Per-client limits, all in one place. */
#define GPUD_MAX_MESSAGE_SIZE (256u << 20)     /* one stream message */
#define GPUD_MAX_COMMAND_MEMORY (512u << 20)   /* decoded arguments of one command */
#define GPUD_MAX_OBJECTS (1u << 20)            /* live objects per client */
#define GPUD_MAX_WAITERS 64                    /* blocking waits in flight per client */
#define GPUD_WAIT_SLICE_NS (50ull * 1000 * 1000)
#define GPUD_COMMAND_SPIN_NS (50ull * 1000)      /* poll for the next command before sleeping */

/* The host driver and the one host device this daemon serves. */
struct gpud_host {
   char *manifest;
   void *library;
   PFN_vkGetInstanceProcAddr get_instance_proc_addr;
   uint32_t instance_version;
   /* the served device, found once at start-up */
   uint8_t device_uuid[VK_UUID_SIZE];
   char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   VkPhysicalDeviceMemoryProperties memory;
   bool has_external_memory_host;
   VkDeviceSize import_alignment;
   uint32_t importable_types; /* memory types a memfd can be imported into */
   VkPhysicalDeviceType device_type;
   /* Validation: the host driver is reached through the Vulkan loader with
    * the Khronos validation layer, and a call that breaks a rule is not
    * passed on (see gpud_validate.c). */
   bool validate;
   void *loader;
};

enum gpud_validate_mode {
   GPUD_VALIDATE_AUTO, /* on when the host device is a CPU (runs in our process) */
   GPUD_VALIDATE_ON,
   GPUD_VALIDATE_OFF,
};

int gpud_host_load(struct gpud_host *host, const char *manifest, const char *device_match);
/* Reaches the host driver through the loader and the validation layer. */
int gpud_host_enable_validation(struct gpud_host *host, bool required);
void gpud_host_finish(struct gpud_host *host);
/* Picks a host driver manifest when none was named: a GPU driver if one
 * enumerates a GPU, else the embedded default (lavapipe). */
char *gpud_host_default_manifest(void);

struct gpud_daemon {
   struct gpud_host host;
   char *socket_path;
   pthread_mutex_t mutex;
   struct gpud_client *clients;
   uint64_t next_client_id;
   unsigned n_threads;
   pthread_cond_t threads_cond;
   atomic_bool stopping;
};

struct gpud_object {
   uint64_t id;
   VkObjectType type;
   uint64_t handle;                  /* the host handle */
   struct gpud_object *instance;     /* owning instance (for instance children) */
   struct gpud_object *device;       /* owning device (for device children) */
   struct gpud_object *pool;         /* command or descriptor pool of a child */
   struct gpud_host_dispatch *disp;  /* instances and devices: their own table */
   struct gpud_object *prev, *next;  /* client's objects in creation order */
   bool lost;                        /* devices: an asynchronous call failed */
   VkDebugUtilsMessengerEXT messenger; /* instances, when validating */
   /* buffers and images: usable only once bound to memory (or sparse) */
   bool bound;
   bool sparse;
   struct gpud_object *memory;       /* what a buffer or image is bound to */
   uint64_t physical_device;         /* devices: the host physical device */
   struct gpud_queue_info *queues;   /* devices: the queues it was created with */
   uint32_t n_queues;
   /* memory */
   void *map;
   size_t map_size;
   uint64_t bytes;
};

struct gpud_waiter;

struct gpud_queue_info {
   uint32_t family;
   uint32_t count;
   VkDeviceQueueCreateFlags flags;
};

struct gpud_client {
   struct gpud_daemon *daemon;
   struct gpud_client *next;
   uint64_t id;
   pid_t pid;
   uid_t uid;
   char name[64];
   int fd;
   bool control;

   pthread_mutex_t send_mutex;
   struct util_msg_reader reader;
   struct wire_arena *arena;
   struct wire_enc reply;

   /* owned by the client's thread */
   struct util_idmap objects;
   struct gpud_object *first, *last;

   /* read by status requests from other threads */
   atomic_uint_fast64_t n_objects;
   atomic_uint_fast64_t memory_bytes;
   atomic_uint_fast64_t commands;

   /* blocking waits running on their own threads */
   pthread_mutex_t wait_mutex;
   pthread_cond_t wait_cond;
   struct gpud_waiter *waiters;
   unsigned n_waiters;
   atomic_bool closing;
};

void gpud_client_start(struct gpud_daemon *daemon, int fd);
/* Logs with the client's pid and name. */
void gpud_client_log(struct gpud_client *client, enum util_log_level level, const char *fmt, ...)
   __attribute__((format(printf, 3, 4)));
int gpud_client_send_reply(struct gpud_client *client, struct wire_enc *reply, const int *fds,
                           unsigned n_fds);

/* One command being executed. */
struct gpud_call {
   struct gpud_client *client;
   struct wire_dec dec;
   struct wire_enc *reply;   /* NULL when no reply is wanted */
   uint32_t seq;
   uint32_t op;
   const struct gpud_host_dispatch *disp;
   struct gpud_object *instance;
   struct gpud_object *device;
   bool deferred;            /* a waiter thread sends the reply */
   int reply_fd;             /* sent with the reply, then closed */
   /* objects named by the command, in order */
   struct gpud_object **touched;
   unsigned n_touched, cap_touched;
   /* memory of a new allocation, attached to its object */
   void *new_map;
   size_t new_map_size;
   uint64_t new_bytes;
   /* validation messenger of a new instance */
   VkDebugUtilsMessengerEXT new_messenger;
   char validation_error[256];
   /* create flags of a new buffer or image */
   uint32_t new_create_flags;
   /* queues of a new device, attached to its object */
   struct gpud_queue_info *new_queues;
   uint32_t n_new_queues;
};

/* Validation (gpud_validate.c): what gpud_exec_vkCreateInstance and
 * gpud_exec_vkCreateDevice add when validating, and the messenger. */
void gpud_validate_instance_info(struct gpud_call *call, VkInstanceCreateInfo *ci,
                                 VkDebugUtilsMessengerCreateInfoEXT *messenger);
void gpud_validate_instance_created(struct gpud_call *call, VkInstance instance);
void gpud_validate_instance_destroy(struct gpud_object *instance);
/* The command the calling thread executes, for the messenger. */
void gpud_validate_set_call(struct gpud_call *call);

/* Marks a buffer or image bound to memory. */
void gpud_call_mark_bound(struct gpud_call *call, VkObjectType type, uint64_t handle,
                          uint64_t memory);

/* The object the command named with this host handle, or NULL. */
struct gpud_object *gpud_call_named(struct gpud_call *call, VkObjectType type, uint64_t handle);

static inline const struct gpud_host_dispatch *
gpud_call_dispatch(struct gpud_call *call)
{
   return call->disp;
}

void gpud_call_fail(struct gpud_call *call, const char *why);
static inline bool
gpud_call_device_lost(const struct gpud_call *call)
{
   return call->device && call->device->lost;
}
void gpud_call_add_object(struct gpud_call *call, VkObjectType type, uint64_t id, uint64_t handle);
/* Forgets the objects of this type the command named (it destroyed them),
 * and for pools their children. */
void gpud_call_forget_objects(struct gpud_call *call, VkObjectType type);
void gpud_call_async_error(struct gpud_call *call, VkResult result);

/* Object table */
struct gpud_object *gpud_object_find(struct gpud_client *client, uint64_t id);
void gpud_object_forget(struct gpud_client *client, struct gpud_object *obj);
/* Destroys every host object of the client that belongs to device (or all
 * when NULL), newest first. */
void gpud_client_destroy_objects(struct gpud_client *client, struct gpud_object *device,
                                 struct gpud_object *instance);

/* Waiters */
void gpud_waiters_cancel(struct gpud_client *client, struct gpud_object *device,
                         uint64_t handle);

extern struct gpud_daemon *gpud_daemon;
