/* SPDX-License-Identifier: MIT */
/*
 * Decoding and running a client's commands.  Nothing a client sends is
 * trusted: every command's size, every id, count and sType is checked by
 * the generated decoder or here, and the first violation disconnects that
 * client with the reason logged.
 */
#include "gpud_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util_fd.h"
#include "util_time.h"
#include "wire_gen.h"

/* Commands that may name a buffer or image before it is bound to memory;
 * any other use of one would make the host driver touch memory that is not
 * there. */
static bool
op_allows_unbound(uint32_t op)
{
   switch (op) {
   case WIRE_OP_vkAllocateMemory: /* VkMemoryDedicatedAllocateInfo */
   case WIRE_OP_vkDestroyBuffer:
   case WIRE_OP_vkDestroyImage:
   case WIRE_OP_vkBindBufferMemory:
   case WIRE_OP_vkBindBufferMemory2:
   case WIRE_OP_vkBindImageMemory:
   case WIRE_OP_vkBindImageMemory2:
   case WIRE_OP_vkGetBufferMemoryRequirements:
   case WIRE_OP_vkGetBufferMemoryRequirements2:
   case WIRE_OP_vkGetImageMemoryRequirements:
   case WIRE_OP_vkGetImageMemoryRequirements2:
   case WIRE_OP_vkGetImageSparseMemoryRequirements:
   case WIRE_OP_vkGetImageSparseMemoryRequirements2:
   case WIRE_OP_vkGetImageSubresourceLayout:
   case WIRE_OP_vkSetPrivateData:
   case WIRE_OP_vkGetPrivateData:
   case WIRE_OP_vkSetDebugUtilsObjectNameEXT:
   case WIRE_OP_vkSetDebugUtilsObjectTagEXT:
      return true;
   default:
      return false;
   }
}

/* Commands that destroy what they name after the dispatchable object. */
static bool
op_destroys(uint32_t op)
{
   const char *name = wire_op_name(op);
   return name && !strncmp(name, "vkDestroy", 9);
}

struct gpud_call *
gpud_call_create(struct gpud_context *ctx, struct wire_arena *arena)
{
   struct gpud_call *call = calloc(1, sizeof(*call));
   if (call) {
      call->ctx = ctx;
      call->arena = arena;
      call->reply_fd = -1;
      call->new_fd = -1;
   }
   return call;
}

void
gpud_call_destroy(struct gpud_call *call)
{
   if (!call)
      return;
   free(call->touched);
   free(call);
}

/* The command each thread runs, for the validation messenger. */
static __thread struct gpud_call *current;

struct gpud_call *
gpud_call_current(void)
{
   return current;
}

/* ---- what the generated handlers call (wire_gpud.h) ------------------------ */

bool
gpud_call_device_lost(const struct gpud_call *call)
{
   return call->device && call->device->lost;
}

VkResult
gpud_call_refused(const struct gpud_call *call)
{
   return call->refused;
}

bool
gpud_call_deferred(const struct gpud_call *call)
{
   return call->deferred;
}

void
gpud_call_host_failed(struct gpud_call *call, const char *command, VkResult result)
{
   gpud_context_log(call->ctx, UTIL_LOG_INFO, "%s failed on the host (%d); ignored", command,
                    result);
}

/* The dispatchable first parameter sets the scope of the command. */
static bool
set_scope(struct gpud_call *call, struct gpud_object *obj)
{
   switch (obj->type) {
   case VK_OBJECT_TYPE_INSTANCE:
      call->instance = obj;
      break;
   case VK_OBJECT_TYPE_PHYSICAL_DEVICE:
      call->instance = obj->instance;
      break;
   case VK_OBJECT_TYPE_DEVICE:
      call->device = obj;
      call->instance = obj->instance;
      break;
   case VK_OBJECT_TYPE_QUEUE:
   case VK_OBJECT_TYPE_COMMAND_BUFFER:
      call->device = obj->device;
      call->instance = obj->device->instance;
      break;
   default:
      return false;
   }
   call->disp = call->device ? call->device->disp : call->instance->disp;
   return true;
}

static bool
touched_grow(struct gpud_call *call)
{
   unsigned cap = call->cap_touched ? call->cap_touched * 2 : 16;
   struct gpud_object **t = realloc(call->touched, sizeof(*t) * cap);
   if (!t)
      return false;
   call->touched = t;
   call->cap_touched = cap;
   return true;
}

static uint64_t
lookup(struct wire_dec *d, uint64_t id, VkObjectType type)
{
   struct gpud_call *call = d->user;
   struct gpud_object *obj = gpud_object_find(call->ctx, id);
   if (!obj) {
      wire_dec_fail(d, "unknown object id");
      return 0;
   }
   if (obj->type != type) {
      wire_dec_fail(d, "object of the wrong type");
      return 0;
   }
   if (atomic_load_explicit(&obj->pending, memory_order_acquire)) {
      /* a compile job's: named before the reply that made it known */
      wire_dec_fail(d, "object used before the command that makes it returned");
      return 0;
   }
   /* a destroy of what a compile job uses waits for the job (the device:
    * gpud_lifetime_destroy waits for every job) */
   if (atomic_load_explicit(&obj->compile_refs, memory_order_acquire) && call->n_touched &&
       op_destroys(call->op))
      gpud_object_wait_released(obj);
   if ((type == VK_OBJECT_TYPE_BUFFER || type == VK_OBJECT_TYPE_IMAGE) && !obj->bound &&
       !obj->sparse && !op_allows_unbound(call->op)) {
      wire_dec_fail(d, type == VK_OBJECT_TYPE_BUFFER ? "buffer used before it is bound to memory"
                                                     : "image used before it is bound to memory");
      return 0;
   }
   if (call->n_touched == 0) {
      if (!set_scope(call, obj)) {
         wire_dec_fail(d, "command does not start with a dispatchable object");
         return 0;
      }
      /* a command of a device extension runs only on a device that
       * enabled one that brings it */
      if (call->device && !gpud_device_enables_op(call->device, call->op)) {
         wire_dec_fail(d, "the device did not enable the extension of this command");
         return 0;
      }
   } else if (obj->device && call->device && obj->device != call->device) {
      wire_dec_fail(d, "object belongs to another device");
      return 0;
   } else if (obj->instance && call->instance && obj->instance != call->instance) {
      wire_dec_fail(d, "object belongs to another instance");
      return 0;
   }
   if (call->n_touched == call->cap_touched && !touched_grow(call)) {
      wire_dec_fail(d, "out of memory");
      return 0;
   }
   call->touched[call->n_touched++] = obj;
   return obj->handle;
}

/* ---- recorded commands (gpud_replay.c) ------------------------------------- */

bool
gpud_call_begin_recorded(struct gpud_call *call, struct gpud_object *cb)
{
   if (!call->cap_touched && !touched_grow(call))
      return false;
   call->touched[0] = cb;
   call->device = cb->device;
   call->instance = cb->device->instance;
   call->disp = cb->device->disp;
   call->deferred = false;
   call->refused = VK_SUCCESS;
   wire_arena_reset(call->arena);
   wire_dec_init(&call->dec, NULL, 0, call->arena);
   call->dec.lookup = lookup;
   call->dec.user = call;
   call->dec.check_enums = true;
   current = call;
   return true;
}



static bool
new_id(struct wire_dec *d, uint64_t id)
{
   struct gpud_call *call = d->user;
   struct gpud_context *ctx = call->ctx;
   if (id == 0 || id > UTIL_IDTABLE_MAX_ID || gpud_object_find(ctx, id))
      return false;
   /* Past the object limit the command fails as a driver out of memory
    * would, and the client carries on. */
   if (ctx->n_objects + ++call->n_new_ids > ctx->info.max_objects)
      call->refused = VK_ERROR_OUT_OF_HOST_MEMORY;
   return true;
}

void
gpud_call_fail(struct gpud_call *call, const char *why)
{
   wire_dec_fail(&call->dec, why);
}

struct gpud_object *
gpud_call_named(struct gpud_call *call, VkObjectType type, uint64_t handle)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      if (call->touched[i] && call->touched[i]->type == type &&
          call->touched[i]->handle == handle)
         return call->touched[i];
   }
   return NULL;
}

void
gpud_call_mark_bound(struct gpud_call *call, VkObjectType type, uint64_t handle,
                     uint64_t memory, uint64_t offset)
{
   struct gpud_object *obj = gpud_call_named(call, type, handle);
   if (!obj)
      return;
   obj->bound = true;
   obj->memory = gpud_call_named(call, VK_OBJECT_TYPE_DEVICE_MEMORY, memory);
   obj->memory_offset = offset;
}

/* Resets what one command left in call, keeping its buffers. */
static void
call_reset(struct gpud_call *call, const struct wire_cmd_header *h)
{
   call->n_touched = 0;
   call->disp = NULL;
   call->device = call->instance = NULL;
   call->deferred = false;
   call->new_pending = false;
   call->new_pending_groups = NULL;
   call->op = h->op;
   call->seq = h->seq;
   call->n_new_ids = 0;
   call->refused = VK_SUCCESS;
   call->new_map = NULL;
   call->new_fd = -1;
   call->new_bytes = 0;
   call->new_heap = 0;
   call->new_create_flags = 0;
   call->new_size = 0;
   call->new_transfer_src = false;
   call->new_external = false;
   call->new_image_host_transfer = false;
   call->new_image_format = call->new_image_layers = call->new_image_levels = 0;
   memset(call->new_image_extent, 0, sizeof(call->new_image_extent));
   call->new_query_values = 0;
   call->new_sets_adopted = 0;
   call->new_rt_groups = NULL;
   call->n_new_rt_groups = 0;
   call->new_cb_shards = NULL;
   call->n_new_cb_shards = call->new_cbs_adopted = 0;
   call->new_code_hash = 0;
   call->new_messenger = VK_NULL_HANDLE;
   call->reply = NULL;
}

/* Releases what a command made that no object took over. */
static void
call_cleanup(struct gpud_call *call)
{
   /* a buffer's twin whose buffer was never made */
   if (call->new_twin && call->device)
      call->device->disp->DestroyBuffer((VkDevice)(uintptr_t)call->device->handle,
                                        (VkBuffer)(uintptr_t)call->new_twin, NULL);
   call->new_twin = 0;
   /* an allocation whose object was never made */
   if (call->new_map) {
      munmap(call->new_map, call->new_map_size);
      call->new_map = NULL;
   }
   util_fd_close(&call->new_fd);
   if (call->new_bytes) {
      gpud_context_release_memory(call->ctx, call->new_heap, call->new_bytes);
      call->new_bytes = 0;
   }
   free(call->new_queues);
   call->new_queues = NULL;
   free(call->new_extensions);
   call->new_extensions = NULL;
   call->new_host_image_copy = false;
   gpud_set_layout_unref(call->new_set_layout);
   call->new_set_layout = NULL;
   for (uint32_t i = 0; i < call->n_new_set_layouts; i++)
      gpud_set_layout_unref(call->new_set_layouts[i]);
   free(call->new_set_layouts);
   call->new_set_layouts = NULL;
   call->n_new_set_layouts = 0;
}

struct wire_dec *
gpud_call_prepare(struct gpud_call *call, const uint8_t *cmd, size_t size)
{
   struct wire_cmd_header h;
   memcpy(&h, cmd, sizeof(h));
   wire_arena_reset(call->arena);
   call_reset(call, &h);
   call->cmd = cmd;
   call->cmd_size = size;
   wire_dec_init(&call->dec, cmd + sizeof(h), size - sizeof(h), call->arena);
   call->dec.lookup = lookup;
   call->dec.new_id = new_id;
   call->dec.user = call;
   call->dec.check_enums = true;
   current = call;
   return &call->dec;
}

void
gpud_call_finish_recorded(struct gpud_call *call)
{
   (void)call;
   current = NULL;
}

void
gpud_call_finish(struct gpud_call *call)
{
   current = NULL;
   call_cleanup(call);
}

