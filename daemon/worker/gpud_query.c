/* SPDX-License-Identifier: MIT */
/*
 * Query pools: their results pages (the ICD's memfd, mapped here), written
 * as submissions that change them complete, and the host's resets.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"
#include "gpud_wait.h"

#include <stdlib.h>

#include "gpud_gen.h"
#include "wire_completion.h"
#include <sys/mman.h>

#include "util_fd.h"
#include "util_memfd.h"

/* ---- query pools ------------------------------------------------------------ */

void
gpud_exec_vkCreateQueryPool(struct gpud_call *call, struct wire_args_vkCreateQueryPool *a)
{
   const VkQueryPoolCreateInfo *info = a->pCreateInfo;
   call->new_size = info->queryCount;
   call->new_query_values = gpud_query_values(info);
   gpud_gen_exec_vkCreateQueryPool(call, a);
}

/* The pool's results page, a memfd the ICD made: mapped once checked (a
 * page the worker cannot take leaves the pool asked about). */
void
gpud_exec_vkSetQueryPoolPageGPUD(struct gpud_call *call, struct wire_args_vkSetQueryPoolPageGPUD *a)
{
   struct gpud_object *pool =
      gpud_call_named(call, VK_OBJECT_TYPE_QUERY_POOL, (uint64_t)(uintptr_t)a->queryPool);
   struct gpud_device_track *t = call->device ? call->device->dtrack : NULL;
   uint64_t size = pool ? gpud_query_page_size((uint32_t)pool->size, pool->query_values) : 0;
   void *map = MAP_FAILED;
   if (pool && t && !pool->query_page && pool->query_values && pool->size &&
       size <= GPUD_QUERY_PAGE_MAX && a->fd >= 0 && util_memfd_check(a->fd, size) == 0)
      map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
   util_fd_close(&a->fd);
   struct gpud_query_pool_page *p = map != MAP_FAILED ? calloc(1, sizeof(*p)) : NULL;
   if (!p) {
      if (map != MAP_FAILED)
         munmap(map, size);
      return;
   }
   *p = (struct gpud_query_pool_page){
      .owner = pool->id,
      .pool = (VkQueryPool)(uintptr_t)pool->handle,
      .map = map,
      .size = size,
      .n_queries = (uint32_t)pool->size,
      .n_values = pool->query_values,
   };
   struct gpud_query_page_header *h = map;
   h->magic = GPUD_QUERY_PAGE_MAGIC;
   h->n_queries = p->n_queries;
   h->n_values = p->n_values;
   atomic_store(&h->pending, 0);
   atomic_store(&h->host_resets, 0);
   /* a new pool's queries are unavailable until reset and ended: the host
    * says so */
   for (uint32_t i = 0; i < p->n_queries; i++)
      atomic_store(&gpud_query_results(h, p->n_values, i)[p->n_values], 0);
   atomic_store(&h->ready, 1);
   pthread_mutex_lock(&t->mutex);
   util_list_add_tail(&t->pools, &p->link);
   pthread_mutex_unlock(&t->mutex);
   pool->query_page = p;
}

void
gpud_queue_query_pool_gone(struct gpud_object *pool)
{
   struct gpud_device_track *t = pool->device ? pool->device->dtrack : NULL;
   struct gpud_query_pool_page *p = pool->query_page;
   if (!p || !t)
      return;
   pthread_mutex_lock(&t->mutex);
   util_list_remove(&p->link);
   pthread_mutex_unlock(&t->mutex);
   munmap(p->map, p->size);
   free(p);
   pool->query_page = NULL;
}

/* The application's host reset, under the tracker's mutex (it may be
 * reading the pool): the range unavailable on the page, then counted. */
void
gpud_exec_vkResetQueryPool(struct gpud_call *call, struct wire_args_vkResetQueryPool *a)
{
   struct gpud_object *pool =
      gpud_call_named(call, VK_OBJECT_TYPE_QUERY_POOL, (uint64_t)(uintptr_t)a->queryPool);
   struct gpud_query_pool_page *p = pool ? pool->query_page : NULL;
   struct gpud_device_track *t = p && pool->device ? pool->device->dtrack : NULL;
   if (!t) {
      gpud_gen_exec_vkResetQueryPool(call, a);
      return;
   }
   pthread_mutex_lock(&t->mutex);
   gpud_gen_exec_vkResetQueryPool(call, a);
   for (uint64_t i = a->firstQuery;
        i < p->n_queries && i < (uint64_t)a->firstQuery + a->queryCount; i++)
      atomic_store(&gpud_query_results(p->map, p->n_values, (uint32_t)i)[p->n_values], 0);
   p->host_resets++;
   atomic_store(&p->map->host_resets, p->host_resets);
   pthread_mutex_unlock(&t->mutex);
}

void
gpud_exec_vkGetQueryPoolResults(struct gpud_call *call, struct wire_args_vkGetQueryPoolResults *a)
{
   /* The host writes queryCount results at stride, whatever dataSize says:
    * give it room for the largest result (statistics: 11 values, plus
    * availability, 64 bits each) so a lying client cannot overrun. */
   uint64_t need = a->queryCount ? (uint64_t)(a->queryCount - 1) * a->stride + 12 * 8 : 0;
   if (need > WIRE_MAX_OUTPUT_BYTES) {
      gpud_call_fail(call, "results too large");
      return;
   }
   if (a->pData && need > a->dataSize) {
      uint8_t *room = wire_dec_alloc(&call->dec, need);
      if (!room)
         return;
      a->pData = room;
   }
   if (!a->pData) {
      a->ret = VK_SUCCESS;
      return;
   }
   /* results waited for on a thread of their own (gpud_wait.c) */
   if ((a->flags & VK_QUERY_RESULT_WAIT_BIT) && gpud_wait_query(call, a))
      return;
   gpud_gen_exec_vkGetQueryPoolResults(call, a);
}

/* A wait in flight on the pool ends first, and the queue tracker's
 * reading of its results into the page. */
void
gpud_exec_vkDestroyQueryPool(struct gpud_call *call, struct wire_args_vkDestroyQueryPool *a)
{
   struct gpud_object *pool =
      gpud_call_named(call, VK_OBJECT_TYPE_QUERY_POOL, (uint64_t)(uintptr_t)a->queryPool);
   if (a->queryPool)
      gpud_waiters_cancel(call->ctx, call->device, (uint64_t)(uintptr_t)a->queryPool);
   if (pool)
      gpud_queue_query_pool_gone(pool);
   gpud_gen_exec_vkDestroyQueryPool(call, a);
}
