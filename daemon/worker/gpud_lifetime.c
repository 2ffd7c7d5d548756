/* SPDX-License-Identifier: MIT */
/*
 * Lifetimes of a client's objects: what a command made goes into the table
 * with what the worker must know of it (gpud_call_add_object, which the
 * generated handlers call), what it destroyed comes out with what the
 * worker held for it -- the completion page's slots, pool children, the
 * users of freed memory (gpud_call_forget_objects) -- and the teardown of a
 * device, an instance or everything the client held, newest first, once
 * their waits are cancelled and their queues idle.
 */
#include "gpud_lifetime.h"

#include "gpud_pipecache.h"
#include "gpud_queue.h"
#include "gpud_transfer.h"
#include "gpud_validate.h"
#include "gpud_wait.h"
#include "util_fd.h"

#include <stdlib.h>
#include <string.h>

/* How long a teardown waits for each queue to let go of its submissions
 * after the host said the device is idle (a queue stuck on a value nobody
 * will signal is not waited for longer). */
#define TEARDOWN_SETTLE_NS (500ull * 1000 * 1000)

/* A new host object that cannot be named: destroyed at once. */
static void
destroy_new(struct gpud_call *call, VkObjectType type, uint64_t handle)
{
   if (call->disp)
      gpud_gen_destroy_object(call->disp,
                              call->device ? call->device->handle : call->instance->handle,
                              type, handle);
}

/* Releases what the daemon holds besides the host object (which the caller
 * destroyed, or which died with its parent). */
static void
object_forget(struct gpud_context *ctx, struct gpud_object *obj)
{
   if (obj->type == VK_OBJECT_TYPE_DEVICE_MEMORY && !atomic_load(&ctx->closing)) {
      /* what was bound to it can no longer be used */
      struct gpud_object *o;
      util_list_for_each(o, &ctx->object_list, link) {
         if (o->memory == obj) {
            o->memory = NULL;
            o->bound = false;
         }
      }
   }
   if (obj->type == VK_OBJECT_TYPE_BUFFER && obj->twin && obj->device &&
       !atomic_load(&ctx->closing)) {
      obj->device->disp->DestroyBuffer((VkDevice)(uintptr_t)obj->device->handle,
                                       (VkBuffer)(uintptr_t)obj->twin, NULL);
      obj->twin = 0;
   }
   if (obj->type == VK_OBJECT_TYPE_FENCE)
      gpud_queue_fence_gone(obj, false);
   if (obj->type == VK_OBJECT_TYPE_SEMAPHORE)
      gpud_queue_semaphore_gone(obj, false);
   if (obj->type == VK_OBJECT_TYPE_EVENT)
      gpud_queue_event_gone(obj);
   if (obj->type == VK_OBJECT_TYPE_QUERY_POOL)
      gpud_queue_query_pool_gone(obj);
   if (obj->type == VK_OBJECT_TYPE_DEVICE)
      gpud_hostcopy_device_gone(ctx, obj);
   gpud_object_remove(ctx, obj);
}

static struct gpud_object *
touched_of_type(struct gpud_call *call, VkObjectType type)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      if (call->touched[i]->type == type)
         return call->touched[i];
   }
   return NULL;
}

/* What an instance or device keeps of the command that made it. */
static bool
adopt_dispatchable(struct gpud_call *call, struct gpud_object *obj)
{
   obj->disp = calloc(1, sizeof(*obj->disp));
   if (!obj->disp)
      return false;
   if (obj->type == VK_OBJECT_TYPE_INSTANCE) {
      obj->instance = NULL;
      obj->messenger = call->new_messenger;
      call->new_messenger = VK_NULL_HANDLE;
      obj->api_version = call->new_api_version;
      obj->disp->GetInstanceProcAddr = call->ctx->host->get_instance_proc_addr;
      gpud_host_dispatch_load_instance(obj->disp, (VkInstance)(uintptr_t)obj->handle);
   } else {
      obj->device = NULL;
      obj->physical_device = call->n_touched ? call->touched[0]->handle : 0;
      obj->queues = call->new_queues;
      obj->n_queues = call->n_new_queues;
      call->new_queues = NULL;
      obj->extensions = call->new_extensions;
      call->new_extensions = NULL;
      obj->host_image_copy = call->new_host_image_copy;
      *obj->disp = *call->instance->disp;
      gpud_host_dispatch_load_device(obj->disp, (VkDevice)(uintptr_t)obj->handle);
      gpud_pipecache_open(call->ctx, obj);
   }
   return true;
}

void
gpud_call_add_object(struct gpud_call *call, VkObjectType type, uint64_t id, uint64_t handle)
{
   struct gpud_context *ctx = call->ctx;
   struct gpud_object *obj = calloc(1, sizeof(*obj));
   if (!obj || gpud_object_find(ctx, id)) {
      /* a duplicate id inside one command, or no memory: the host object
       * cannot be named, so destroy it right away */
      free(obj);
      destroy_new(call, type, handle);
      gpud_call_fail(call, obj ? "bad id for a new object" : "out of memory");
      return;
   }
   obj->id = id;
   obj->type = type;
   obj->handle = handle;
   obj->fd = -1;
   atomic_init(&obj->pending, call->new_pending);
   obj->instance = call->instance;
   obj->device = call->device;
   bool ok = true;
   switch (type) {
   case VK_OBJECT_TYPE_INSTANCE:
   case VK_OBJECT_TYPE_DEVICE:
      ok = adopt_dispatchable(call, obj);
      break;
   case VK_OBJECT_TYPE_COMMAND_BUFFER:
      obj->pool = touched_of_type(call, VK_OBJECT_TYPE_COMMAND_POOL);
      if (call->new_cbs_adopted < call->n_new_cb_shards)
         obj->shard = call->new_cb_shards[call->new_cbs_adopted];
      call->new_cbs_adopted++;
      break;
   case VK_OBJECT_TYPE_COMMAND_POOL:
      obj->pool_flags = call->new_create_flags;
      obj->queue_family = call->new_queue_family;
      break;
   case VK_OBJECT_TYPE_DESCRIPTOR_SET:
      obj->pool = touched_of_type(call, VK_OBJECT_TYPE_DESCRIPTOR_POOL);
      if (call->new_sets_adopted < call->n_new_set_layouts)
         obj->set_layout =
            gpud_set_layout_ref(call->new_set_layouts[call->new_sets_adopted]);
      call->new_sets_adopted++;
      break;
   case VK_OBJECT_TYPE_BUFFER:
      obj->sparse = call->new_create_flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT;
      obj->size = call->new_size;
      obj->buffer_transfer_src = call->new_transfer_src;
      obj->twin = call->new_twin;
      call->new_twin = 0;
      break;
   case VK_OBJECT_TYPE_IMAGE:
      obj->sparse = call->new_create_flags & VK_IMAGE_CREATE_SPARSE_BINDING_BIT;
      obj->image_host_transfer = call->new_image_host_transfer;
      obj->image_format = call->new_image_format;
      obj->image_layers = call->new_image_layers;
      obj->image_levels = call->new_image_levels;
      memcpy(obj->image_extent, call->new_image_extent, sizeof(obj->image_extent));
      break;
   case VK_OBJECT_TYPE_PIPELINE:
      for (uint32_t i = 0; i < call->n_new_rt_groups; i++) {
         if (call->new_rt_groups[i].handle == handle)
            obj->rt_groups = call->new_rt_groups[i].groups;
      }
      break;
   case VK_OBJECT_TYPE_SHADER_MODULE:
      obj->code_hash = call->new_code_hash;
      break;
   case VK_OBJECT_TYPE_QUERY_POOL:
      obj->size = call->new_size;
      obj->query_values = call->new_query_values;
      break;
   case VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT:
      obj->set_layout = call->new_set_layout;
      call->new_set_layout = NULL;
      break;
   case VK_OBJECT_TYPE_FENCE:
      obj->fence_external = call->new_external;
      break;
   case VK_OBJECT_TYPE_QUEUE:
      obj->queue_family = call->new_queue_family;
      obj->queue_index = call->new_queue_index;
      break;
   case VK_OBJECT_TYPE_DEVICE_MEMORY:
      obj->map = call->new_map;
      obj->map_size = call->new_map_size;
      obj->fd = util_fd_move(&call->new_fd);
      obj->bytes = call->new_bytes;
      obj->heap = call->new_heap;
      obj->host_type = call->new_host_type;
      call->new_map = NULL;
      call->new_bytes = 0;
      break;
   default:
      break;
   }
   if (!ok || gpud_object_insert(ctx, obj) < 0) {
      obj->fd = -1; /* still the call's, which releases it */
      obj->map = NULL;
      obj->bytes = 0;
      gpud_object_free(obj);
      destroy_new(call, type, handle);
      gpud_call_fail(call, "out of memory");
      return;
   }
   if (type == VK_OBJECT_TYPE_QUEUE)
      gpud_queue_track_add(ctx, obj);
}

void
gpud_lifetime_forget_children(struct gpud_context *ctx, struct gpud_object *pool)
{
   struct gpud_object *obj;
   util_list_for_each_safe(obj, &ctx->object_list, link) {
      if (obj->pool == pool)
         object_forget(ctx, obj);
   }
}

void
gpud_call_forget_objects(struct gpud_call *call, VkObjectType type)
{
   /* the first touched object is the dispatchable parent: skip it */
   for (unsigned i = 1; i < call->n_touched; i++) {
      struct gpud_object *obj = call->touched[i];
      if (!obj || obj->type != type)
         continue;
      /* the same object may be named twice; forget it once */
      for (unsigned j = i + 1; j < call->n_touched; j++) {
         if (call->touched[j] == obj)
            call->touched[j] = NULL;
      }
      if (type == VK_OBJECT_TYPE_COMMAND_POOL || type == VK_OBJECT_TYPE_DESCRIPTOR_POOL)
         gpud_lifetime_forget_children(call->ctx, obj);
      object_forget(call->ctx, obj);
   }
}

/* Objects that die with their parent and need no call of their own. */
static bool
dies_with_parent(const struct gpud_object *obj)
{
   return obj->pool || obj->type == VK_OBJECT_TYPE_QUEUE ||
          obj->type == VK_OBJECT_TYPE_PHYSICAL_DEVICE;
}

static void
destroy_object(struct gpud_context *ctx, struct gpud_object *obj)
{
   if (!dies_with_parent(obj)) {
      if (obj->type == VK_OBJECT_TYPE_DEVICE) {
         gpud_pipecache_close(ctx, obj);
         obj->disp->DestroyDevice((VkDevice)(uintptr_t)obj->handle, NULL);
      } else if (obj->type == VK_OBJECT_TYPE_INSTANCE) {
         gpud_validate_instance_destroy(obj);
         obj->disp->DestroyInstance((VkInstance)(uintptr_t)obj->handle, NULL);
      } else if (obj->device) {
         if (obj->type == VK_OBJECT_TYPE_COMMAND_POOL)
            gpud_cmd_pool_destroy_shards(obj->device->disp,
                                         (VkDevice)(uintptr_t)obj->device->handle, obj);
         gpud_gen_destroy_object(obj->device->disp, obj->device->handle, obj->type,
                                 obj->handle);
      } else if (obj->instance) {
         gpud_gen_destroy_object(obj->instance->disp, obj->instance->handle, obj->type,
                                 obj->handle);
      }
   }
   object_forget(ctx, obj);
}

static bool
in_scope(const struct gpud_object *obj, const struct gpud_object *device,
         const struct gpud_object *instance)
{
   if (device)
      return obj->device == device;
   if (instance)
      return obj == instance || obj->instance == instance ||
             (obj->device && obj->device->instance == instance);
   return true;
}

void
gpud_lifetime_destroy(struct gpud_context *ctx, struct gpud_object *device,
                             struct gpud_object *instance)
{
   struct gpud_object *obj;
   /* Let in-flight work end first. */
   util_list_for_each(obj, &ctx->object_list, link) {
      if (obj->type != VK_OBJECT_TYPE_DEVICE)
         continue;
      if (device ? obj != device : !in_scope(obj, NULL, instance))
         continue;
      gpud_waiters_cancel(ctx, obj, 0);
      obj->disp->DeviceWaitIdle((VkDevice)(uintptr_t)obj->handle);
      /* ... and what the host's idle may not wait for (gpud_queue_marker) */
      struct gpud_object *queue;
      util_list_for_each(queue, &ctx->object_list, link) {
         if (queue->type == VK_OBJECT_TYPE_QUEUE && queue->device == obj)
            gpud_queue_settle(queue, TEARDOWN_SETTLE_NS);
      }
      gpud_semaphores_reap(ctx, obj, true);
      gpud_queue_track_device_end(ctx, obj);
      gpud_transfer_device_end(obj);
   }
   /* Device children, newest first.  Pool children go with their pool; a
    * pool's children may sit anywhere, so start over after each pool. */
   bool again = true;
   while (again) {
      again = false;
      util_list_for_each_reverse_safe(obj, &ctx->object_list, link) {
         if (!obj->device || obj->pool || !in_scope(obj, device, instance))
            continue;
         if (obj->type == VK_OBJECT_TYPE_COMMAND_POOL ||
             obj->type == VK_OBJECT_TYPE_DESCRIPTOR_POOL) {
            gpud_lifetime_forget_children(ctx, obj);
            destroy_object(ctx, obj);
            again = true;
            break;
         }
         destroy_object(ctx, obj);
      }
   }
   /* The devices. */
   util_list_for_each_reverse_safe(obj, &ctx->object_list, link) {
      if (obj->type == VK_OBJECT_TYPE_DEVICE &&
          (device ? obj == device : in_scope(obj, NULL, instance)))
         destroy_object(ctx, obj);
   }
   if (device)
      return;
   /* Physical devices and instances. */
   util_list_for_each_reverse_safe(obj, &ctx->object_list, link) {
      if (in_scope(obj, NULL, instance))
         destroy_object(ctx, obj);
   }
}
