/* SPDX-License-Identifier: MIT */
/*
 * A context's object table: every id the client made, mapped to its host
 * handle and what the daemon must know about it, kept in creation order so
 * teardown can destroy newest first.
 */
#include "gpud_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One more (or one fewer) object of a type on the status page. */
static void
count_type(struct gpud_context *ctx, VkObjectType type, int delta)
{
   int i = wire_object_type_index(type);
   if (ctx->status && i >= 0 && i < GPUD_STATUS_TYPES)
      atomic_fetch_add_explicit(&ctx->status->objects_by_type[i], (uint32_t)delta,
                                memory_order_relaxed);
}

_Static_assert(WIRE_OBJECT_TYPE_COUNT <= GPUD_STATUS_TYPES,
               "the status page counts every object type");

static void
count_objects(struct gpud_context *ctx)
{
   atomic_store_explicit(&ctx->status->objects, ctx->n_objects, memory_order_relaxed);
   atomic_store_explicit(&ctx->status->memory_bytes, ctx->memory_bytes, memory_order_relaxed);
}

VkResult
gpud_context_reserve_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes)
{
   return ctx->ops.reserve_memory ? ctx->ops.reserve_memory(ctx->ops.data, heap, bytes, NULL)
                                  : VK_SUCCESS;
}

bool
gpud_context_memory_budget(struct gpud_context *ctx, struct gpud_memory_budget *budget)
{
   budget->n_heaps = 0;
   return ctx->ops.reserve_memory &&
          ctx->ops.reserve_memory(ctx->ops.data, 0, 0, budget) == VK_SUCCESS && budget->n_heaps;
}

void
gpud_context_release_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes)
{
   if (ctx->ops.release_memory && bytes)
      ctx->ops.release_memory(ctx->ops.data, heap, bytes);
}

/* The status page's table of named objects: one writer at a time, a
 * sequence count around each change for the server's reads.  The table has
 * no gaps and goes in the order of naming, newest last: a name (or a new
 * one) goes last, and when the table is full the oldest goes out. */
static void
publish_name(struct gpud_context *ctx, const struct gpud_object *obj, const char *name)
{
   struct gpud_status_page *page = ctx->status;
   if (!page)
      return;
   pthread_mutex_lock(&ctx->names_mutex);
   atomic_fetch_add_explicit(&page->names_seq, 1, memory_order_relaxed);
   atomic_thread_fence(memory_order_release); /* the odd count before the names change */
   struct gpud_status_name *names = page->names;
   unsigned n = 0, at = GPUD_STATUS_NAMES;
   for (; n < GPUD_STATUS_NAMES && names[n].id; n++) {
      if (names[n].id == obj->id)
         at = n;
   }
   if (at < n || (name && n == GPUD_STATUS_NAMES)) {
      if (at >= n)
         at = 0; /* full: the oldest goes */
      memmove(&names[at], &names[at + 1], (n - at - 1) * sizeof(*names));
      n--;
   }
   if (name) {
      names[n].id = obj->id;
      names[n].type = (uint32_t)obj->type;
      snprintf(names[n].name, sizeof(names[n].name), "%s", name);
      n++;
   }
   if (n < GPUD_STATUS_NAMES)
      memset(&names[n], 0, sizeof(names[n]));
   atomic_fetch_add_explicit(&page->names_seq, 1, memory_order_release);
   pthread_mutex_unlock(&ctx->names_mutex);
}

void
gpud_object_set_name(struct gpud_context *ctx, struct gpud_object *obj, const char *name)
{
   free(obj->name);
   obj->name = name && *name ? strndup(name, 255) : NULL;
   publish_name(ctx, obj, obj->name);
}

struct gpud_object *
gpud_object_find(struct gpud_context *ctx, uint64_t id)
{
   return util_idtable_get(&ctx->objects, id);
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
   if (obj->type == VK_OBJECT_TYPE_FENCE)
      gpud_queue_fence_gone(obj, false);
   if (obj->type == VK_OBJECT_TYPE_SEMAPHORE)
      gpud_queue_semaphore_gone(obj, false);
   if (obj->type == VK_OBJECT_TYPE_EVENT)
      gpud_queue_event_gone(obj);
   if (obj->type == VK_OBJECT_TYPE_QUERY_POOL)
      gpud_queue_query_pool_gone(obj);
   free(obj->cmd_watched);
   gpud_set_layout_unref(obj->set_layout);
   util_idtable_remove(&ctx->objects, obj->id);
   util_list_remove(&obj->link);
   ctx->n_objects--;
   count_type(ctx, obj->type, -1);
   if (obj->bytes && !obj->exported) {
      ctx->memory_bytes -= obj->bytes;
      gpud_context_release_memory(ctx, obj->heap, obj->bytes);
   }
   count_objects(ctx);
   if (obj->map)
      munmap(obj->map, obj->map_size);
   util_fd_close(&obj->fd);
   if (obj->name)
      publish_name(ctx, obj, NULL);
   free(obj->name);
   free(obj->queues);
   free(obj->extensions);
   free(obj->disp);
   free(obj);
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
      *obj->disp = *call->instance->disp;
      gpud_host_dispatch_load_device(obj->disp, (VkDevice)(uintptr_t)obj->handle);
   }
   return true;
}

void
gpud_call_add_object(struct gpud_call *call, VkObjectType type, uint64_t id, uint64_t handle)
{
   struct gpud_context *ctx = call->ctx;
   struct gpud_object *obj = calloc(1, sizeof(*obj));
   if (!obj || util_idtable_insert(&ctx->objects, id, obj) < 0) {
      /* a duplicate id inside one command, or no memory: the host object
       * cannot be named, so destroy it right away */
      free(obj);
      if (call->disp)
         gpud_gen_destroy_object(call->disp,
                                 call->device ? call->device->handle : call->instance->handle,
                                 type, handle);
      gpud_call_fail(call, "bad id for a new object");
      return;
   }
   obj->id = id;
   obj->type = type;
   obj->handle = handle;
   obj->fd = -1;
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
      break;
   case VK_OBJECT_TYPE_IMAGE:
      obj->sparse = call->new_create_flags & VK_IMAGE_CREATE_SPARSE_BINDING_BIT;
      break;
   case VK_OBJECT_TYPE_QUERY_POOL:
      obj->size = call->new_size;
      obj->query_values = call->new_query_values;
      break;
   case VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT:
      obj->set_layout = call->new_set_layout;
      call->new_set_layout = NULL;
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
      call->new_map = NULL;
      call->new_bytes = 0;
      ctx->memory_bytes += obj->bytes;
      break;
   default:
      break;
   }
   if (!ok) {
      util_idtable_remove(&ctx->objects, id);
      free(obj);
      gpud_call_fail(call, "out of memory");
      return;
   }
   util_list_add_tail(&ctx->object_list, &obj->link);
   ctx->n_objects++;
   count_type(ctx, type, 1);
   count_objects(ctx);
   if (type == VK_OBJECT_TYPE_QUEUE)
      gpud_queue_track_add(ctx, obj);
}

void
gpud_object_forget_children(struct gpud_context *ctx, struct gpud_object *pool)
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
         gpud_object_forget_children(call->ctx, obj);
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
         obj->disp->DestroyDevice((VkDevice)(uintptr_t)obj->handle, NULL);
      } else if (obj->type == VK_OBJECT_TYPE_INSTANCE) {
         gpud_validate_instance_destroy(obj);
         obj->disp->DestroyInstance((VkInstance)(uintptr_t)obj->handle, NULL);
      } else if (obj->device) {
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
gpud_context_destroy_objects(struct gpud_context *ctx, struct gpud_object *device,
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
      gpud_queue_track_device_end(ctx, obj);
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
            gpud_object_forget_children(ctx, obj);
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
