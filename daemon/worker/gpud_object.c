/* SPDX-License-Identifier: MIT */
/*
 * A context's object table: every id the client made, mapped to its host
 * handle and what the worker must know about it, kept in creation order so
 * teardown can destroy newest first, and counted on the status page.
 */
#include "gpud_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util_fd.h"
#include "util_futex.h"
#include "util_macros.h"
#include "wire_gen.h"

/* One more (or one fewer) object of a type on the status page. */
static void
count_type(struct gpud_context *ctx, VkObjectType type, int delta)
{
   int i = wire_object_type_index(type);
   if (ctx->status && i >= 0 && i < DAEMON_STATUS_TYPES)
      atomic_fetch_add_explicit(&ctx->status->objects_by_type[i], (uint32_t)delta,
                                memory_order_relaxed);
}

_Static_assert(WIRE_OBJECT_TYPE_COUNT <= DAEMON_STATUS_TYPES,
               "the status page counts every object type");

static void
count_objects(struct gpud_context *ctx)
{
   atomic_store_explicit(&ctx->status->objects, ctx->n_objects, memory_order_relaxed);
   atomic_store_explicit(&ctx->status->memory_bytes, ctx->memory_bytes, memory_order_relaxed);
}

/* The status page's table of named objects: one writer at a time, a
 * sequence count around each change for the server's reads.  The table has
 * no gaps and goes in the order of naming, newest last: a name (or a new
 * one) goes last, and when the table is full the oldest goes out. */
static void
publish_name(struct gpud_context *ctx, const struct gpud_object *obj, const char *name)
{
   struct daemon_status_page *page = ctx->status;
   if (!page)
      return;
   pthread_mutex_lock(&ctx->names_mutex);
   atomic_fetch_add_explicit(&page->names_seq, 1, memory_order_relaxed);
   atomic_thread_fence(memory_order_release); /* the odd count before the names change */
   struct daemon_status_name *names = page->names;
   unsigned n = 0, at = DAEMON_STATUS_NAMES;
   for (; n < DAEMON_STATUS_NAMES && names[n].id; n++) {
      if (names[n].id == obj->id)
         at = n;
   }
   if (at < n || (name && n == DAEMON_STATUS_NAMES)) {
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
   if (n < DAEMON_STATUS_NAMES)
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

int
gpud_object_insert(struct gpud_context *ctx, struct gpud_object *obj)
{
   int r = util_idtable_insert(&ctx->objects, obj->id, obj);
   if (r < 0)
      return r;
   util_list_add_tail(&ctx->object_list, &obj->link);
   ctx->n_objects++;
   ctx->memory_bytes += obj->bytes;
   count_type(ctx, obj->type, 1);
   count_objects(ctx);
   return 0;
}

void
gpud_object_remove(struct gpud_context *ctx, struct gpud_object *obj)
{
   util_idtable_remove(&ctx->objects, obj->id);
   util_list_remove(&obj->link);
   ctx->n_objects--;
   count_type(ctx, obj->type, -1);
   if (obj->bytes && !obj->exported) {
      ctx->memory_bytes -= obj->bytes;
      gpud_context_release_memory(ctx, obj->heap, obj->bytes);
   }
   count_objects(ctx);
   if (obj->name)
      publish_name(ctx, obj, NULL);
   gpud_object_free(obj);
}

void
gpud_object_free(struct gpud_object *obj)
{
   if (!obj)
      return;
   if (obj->map)
      munmap(obj->map, obj->map_size);
   util_fd_close(&obj->fd);
   free(obj->cmd_watched);
   free(obj->shards);
   free(obj->transfer);
   gpud_set_layout_unref(obj->set_layout);
   free(obj->name);
   free(obj->queues);
   free(obj->extensions);
   free(obj->disp);
   free(obj);
}

bool
gpud_device_enabled(const struct gpud_object *device, const char *extension)
{
   for (unsigned i = 0; device->extensions && i < wire_extension_count; i++) {
      if (wire_extensions[i].device && !strcmp(wire_extensions[i].name, extension))
         return device->extensions[i];
   }
   return false;
}

bool
gpud_device_enables_op(const struct gpud_object *device, uint32_t op)
{
   const uint16_t *exts = wire_op_device_extensions(op);
   if (!exts)
      return true;
   for (; *exts != UINT16_MAX; exts++) {
      if (device->extensions && device->extensions[*exts])
         return true;
   }
   return false;
}

/* What the job's host call did comes before the destroy that sees the
 * hold gone (release, then acquire); the last hold wakes the waiter, whose
 * object stays in the table meanwhile. */
void
gpud_object_release(struct gpud_object *obj)
{
   if (atomic_fetch_sub_explicit(&obj->compile_refs, 1, memory_order_release) == 1)
      util_futex_wake(&obj->compile_refs);
}

void
gpud_object_wait_released(struct gpud_object *obj)
{
   uint32_t holds;
   while ((holds = atomic_load_explicit(&obj->compile_refs, memory_order_acquire)))
      util_futex_wait(&obj->compile_refs, holds, 1000000000ull);
}
