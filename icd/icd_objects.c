/* SPDX-License-Identifier: MIT */
/* Client-side objects behind new handles, created before the call that
 * names them and dropped when it fails or the object is destroyed. */
#include "icd.h"
#include "util_fd.h"

#include <stdlib.h>
#include <sys/mman.h>

void *
icd_tmp_handles(size_t count, size_t size)
{
   return calloc(count ? count : 1, size);
}

void
icd_tmp_handles_free(void *p)
{
   free(p);
}

static void
command_buffer_unlink(struct icd_command_buffer *cb)
{
   struct icd_command_pool *pool = cb->pool;
   if (!pool)
      return;
   pthread_mutex_lock(&pool->mutex);
   if (cb->prev)
      cb->prev->next = cb->next;
   else
      pool->buffers = cb->next;
   if (cb->next)
      cb->next->prev = cb->prev;
   pthread_mutex_unlock(&pool->mutex);
   cb->pool = NULL;
}

static void
command_buffer_free(struct icd_command_buffer *cb)
{
   wire_enc_finish(&cb->stream);
   icd_object_free(cb);
}

uint64_t
icd_handle_create(struct icd_connection *conn, VkObjectType type, const void *parent)
{
   switch (type) {
   case VK_OBJECT_TYPE_DEVICE: {
      struct icd_device *dev = icd_object_alloc(sizeof(*dev), conn, type, true);
      if (!dev)
         return 0;
      dev->physical_device = (struct icd_physical_device *)parent;
      pthread_mutex_init(&dev->mutex, NULL);
      pthread_mutex_init(&dev->hostcopy_mutex, NULL);
      pthread_mutex_init(&dev->buffers_mutex, NULL);
      pthread_mutex_init(&dev->upload_mutex, NULL);
      return (uint64_t)(uintptr_t)dev;
   }
   case VK_OBJECT_TYPE_QUEUE: {
      struct icd_queue *q = icd_object_alloc(sizeof(*q), conn, type, true);
      if (!q)
         return 0;
      q->device = (struct icd_device *)parent;
      return (uint64_t)(uintptr_t)q;
   }
   case VK_OBJECT_TYPE_COMMAND_BUFFER: {
      struct icd_command_buffer *cb = icd_object_alloc(sizeof(*cb), conn, type, true);
      if (!cb)
         return 0;
      cb->device = (struct icd_device *)parent;
      wire_enc_init(&cb->stream);
      return (uint64_t)(uintptr_t)cb;
   }
   case VK_OBJECT_TYPE_COMMAND_POOL: {
      struct icd_command_pool *pool = icd_object_alloc(sizeof(*pool), conn, type, false);
      if (!pool)
         return 0;
      pthread_mutex_init(&pool->mutex, NULL);
      return (uint64_t)(uintptr_t)pool;
   }
   case VK_OBJECT_TYPE_DEVICE_MEMORY: {
      struct icd_device_memory *mem = icd_object_alloc(sizeof(*mem), conn, type, false);
      if (mem)
         mem->fd = -1;
      return (uint64_t)(uintptr_t)mem;
   }
   case VK_OBJECT_TYPE_FENCE: {
      struct icd_fence *f = icd_object_alloc(sizeof(*f), conn, type, false);
      if (f)
         f->slot = -1;
      return (uint64_t)(uintptr_t)f;
   }
   case VK_OBJECT_TYPE_SEMAPHORE: {
      struct icd_semaphore *s = icd_object_alloc(sizeof(*s), conn, type, false);
      if (s)
         s->slot = -1;
      return (uint64_t)(uintptr_t)s;
   }
   case VK_OBJECT_TYPE_EVENT: {
      struct icd_event *e = icd_object_alloc(sizeof(*e), conn, type, false);
      if (e)
         e->slot = -1;
      return (uint64_t)(uintptr_t)e;
   }
   case VK_OBJECT_TYPE_QUERY_POOL:
      return (uint64_t)(uintptr_t)icd_object_alloc(sizeof(struct icd_query_pool), conn, type,
                                                   false);
   case VK_OBJECT_TYPE_DESCRIPTOR_POOL:
      return (uint64_t)(uintptr_t)icd_object_alloc(sizeof(struct icd_descriptor_pool), conn,
                                                   type, false);
   default:
      return icd_connection_new_id(conn);
   }
}

void
icd_handle_destroy(VkObjectType type, uint64_t handle)
{
   if (!handle)
      return;
   void *ptr = (void *)(uintptr_t)handle;
   switch (type) {
   case VK_OBJECT_TYPE_DEVICE: {
      struct icd_device *dev = ptr;
      struct icd_queue *q = dev->queues;
      while (q) {
         struct icd_queue *next = q->next;
         /* the daemon destroyed the idle fence with the device */
         if (q->idle_fence)
            icd_object_free((void *)(uintptr_t)q->idle_fence);
         icd_object_free(q);
         q = next;
      }
      icd_device_completion_finish(dev);
      icd_device_hostcopy_finish(dev);
      icd_device_buffers_finish(dev);
      pthread_mutex_destroy(&dev->mutex);
      pthread_mutex_destroy(&dev->hostcopy_mutex);
      pthread_mutex_destroy(&dev->buffers_mutex);
      pthread_mutex_destroy(&dev->upload_mutex);
      icd_object_free(dev);
      break;
   }
   case VK_OBJECT_TYPE_FENCE:
   case VK_OBJECT_TYPE_SEMAPHORE:
   case VK_OBJECT_TYPE_EVENT:
   case VK_OBJECT_TYPE_QUEUE:
      icd_object_free(ptr);
      break;
   case VK_OBJECT_TYPE_COMMAND_BUFFER:
      command_buffer_unlink(ptr);
      command_buffer_free(ptr);
      break;
   case VK_OBJECT_TYPE_COMMAND_POOL: {
      struct icd_command_pool *pool = ptr;
      struct icd_command_buffer *cb = pool->buffers;
      while (cb) {
         struct icd_command_buffer *next = cb->next;
         /* the daemon frees them with their pool */
         icd_connection_count_objects(pool->base.conn, -1);
         command_buffer_free(cb);
         cb = next;
      }
      pthread_mutex_destroy(&pool->mutex);
      icd_object_free(pool);
      break;
   }
   case VK_OBJECT_TYPE_DEVICE_MEMORY: {
      struct icd_device_memory *mem = ptr;
      if (mem->placed)
         munmap(mem->placed, mem->placed_size);
      if (mem->map)
         munmap(mem->map, mem->map_size);
      util_fd_close(&mem->fd);
      icd_object_free(mem);
      break;
   }
   case VK_OBJECT_TYPE_DESCRIPTOR_POOL: {
      /* its sets go with it */
      struct icd_descriptor_pool *pool = ptr;
      icd_connection_count_objects(pool->base.conn, -atomic_load(&pool->sets));
      icd_object_free(pool);
      break;
   }
   case VK_OBJECT_TYPE_QUERY_POOL: {
      struct icd_query_pool *pool = ptr;
      if (pool->page)
         munmap(pool->page, pool->page_size);
      icd_object_free(pool);
      break;
   }
   default:
      break; /* the handle is just an id */
   }
}
