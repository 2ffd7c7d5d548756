/* SPDX-License-Identifier: MIT */
/*
 * Query results answered in the application's process: each occlusion,
 * timestamp and pipeline-statistics pool has a page (a memfd the ICD makes
 * and the worker maps, protocol/wire_completion.h) into which the worker's
 * queue tracker reads the pool's results when a submission that changes
 * them completes.  vkGetQueryPoolResults copies from it while no such
 * submission is in flight and the worker has run every vkResetQueryPool the
 * application made; otherwise, and for partial results or a wait for
 * results not yet there, it asks the daemon.
 */
#include "icd.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util_memfd.h"

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateQueryPool(VkDevice device, const VkQueryPoolCreateInfo *pCreateInfo,
                      const VkAllocationCallbacks *pAllocator, VkQueryPool *pQueryPool)
{
   VkResult r = icd_gen_vkCreateQueryPool(device, pCreateInfo, pAllocator, pQueryPool);
   struct icd_device *dev = icd_device_from_handle(device);
   uint32_t n_values = gpud_query_values(pCreateInfo);
   if (r != VK_SUCCESS)
      return r;
   struct icd_query_pool *pool = icd_query_pool_from_handle(*pQueryPool);
   pool->n_queries = pCreateInfo->queryCount;
   pool->n_values = n_values;
   /* no completion page: the worker has no tracker to fill this one */
   if (!dev->completion || !n_values || !pCreateInfo->queryCount)
      return r;
   uint64_t size = gpud_query_page_size(pCreateInfo->queryCount, n_values);
   int fd = -1;
   if (size > GPUD_QUERY_PAGE_MAX || util_memfd_create("gpud-queries", size, &fd) < 0)
      return r;
   void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED) {
      close(fd);
      return r;
   }
   pool->page = map;
   pool->page_size = size;
   icd_gen_vkSetQueryPoolPageGPUD(device, *pQueryPool, fd);
   /* the fd goes with the queued command: sent before it is closed */
   icd_connection_flush(dev->base.conn);
   close(fd);
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkResetQueryPool(VkDevice device, VkQueryPool queryPool, uint32_t firstQuery,
                     uint32_t queryCount)
{
   struct icd_query_pool *pool = icd_query_pool_from_handle(queryPool);
   atomic_fetch_add(&pool->host_resets, 1);
   icd_gen_vkResetQueryPool(device, queryPool, firstQuery, queryCount);
}

/* Whether the page holds what the host would answer for these queries. */
static bool
page_current(const struct icd_query_pool *pool, uint32_t first, uint32_t count,
             VkQueryResultFlags flags)
{
   struct gpud_query_page_header *h = pool->page;
   return h && !(flags & (VK_QUERY_RESULT_PARTIAL_BIT | VK_QUERY_RESULT_WITH_STATUS_BIT_KHR)) &&
          first < pool->n_queries && count <= pool->n_queries - first &&
          atomic_load(&h->ready) == 1 && atomic_load(&h->pending) == 0 &&
          atomic_load(&h->host_resets) == atomic_load(&pool->host_resets);
}

/* Asks the daemon.  The reply carries the whole of pData, so without
 * WAIT or PARTIAL it would overwrite the values of unavailable queries,
 * which the application's storage must keep: asked with availability into
 * a buffer of the ICD's, and only available queries' values copied. */
static VkResult
ask(VkDevice device, const struct icd_query_pool *pool, uint32_t first, uint32_t count,
    size_t data_size, void *data, VkDeviceSize stride, VkQueryResultFlags flags)
{
   const uint32_t n = pool->n_values;
   if ((flags & (VK_QUERY_RESULT_WAIT_BIT | VK_QUERY_RESULT_PARTIAL_BIT |
                 VK_QUERY_RESULT_WITH_STATUS_BIT_KHR)) ||
       !n || !count)
      return icd_gen_vkGetQueryPoolResults(device, (VkQueryPool)(uintptr_t)pool, first, count,
                                           data_size, data, stride, flags);
   const size_t elem = flags & VK_QUERY_RESULT_64_BIT ? 8 : 4;
   const size_t own_stride = (n + 1) * elem;
   char *own = malloc(count * own_stride);
   if (!own)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   VkResult r = icd_gen_vkGetQueryPoolResults(device, (VkQueryPool)(uintptr_t)pool, first, count,
                                              count * own_stride, own, own_stride,
                                              flags | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
   for (uint32_t i = 0; r >= 0 && i < count; i++) {
      const char *in = own + i * own_stride;
      char *out = (char *)data + i * stride;
      uint64_t available = 0;
      memcpy(&available, in + n * elem, elem);
      if (available)
         memcpy(out, in, n * elem);
      if (flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT)
         memcpy(out + n * elem, in + n * elem, elem);
   }
   free(own);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetQueryPoolResults(VkDevice device, VkQueryPool queryPool, uint32_t firstQuery,
                          uint32_t queryCount, size_t dataSize, void *pData, VkDeviceSize stride,
                          VkQueryResultFlags flags)
{
   struct icd_device *dev = icd_device_from_handle(device);
   const struct icd_query_pool *pool = icd_query_pool_from_handle(queryPool);
   if (!page_current(pool, firstQuery, queryCount, flags))
      return ask(device, pool, firstQuery, queryCount, dataSize, pData, stride, flags);
   if ((dev->completion && atomic_load(&dev->completion->lost)) ||
       icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   struct gpud_query_page_header *h = pool->page;
   const uint32_t n = pool->n_values;
   if (flags & VK_QUERY_RESULT_WAIT_BIT) {
      /* waiting for what is not there yet is the daemon's to do */
      for (uint32_t i = 0; i < queryCount; i++) {
         if (!atomic_load(&gpud_query_results(h, n, firstQuery + i)[n]))
            return ask(device, pool, firstQuery, queryCount, dataSize, pData, stride, flags);
      }
   }
   const bool wide = flags & VK_QUERY_RESULT_64_BIT;
   VkResult r = VK_SUCCESS;
   for (uint32_t i = 0; i < queryCount; i++) {
      _Atomic uint64_t *q = gpud_query_results(h, n, firstQuery + i);
      uint64_t available = atomic_load(&q[n]);
      char *out = (char *)pData + i * stride;
      /* the values of an unavailable query are not written */
      for (uint32_t v = 0; available && v <= n; v++) {
         if (v == n && !(flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT))
            break;
         uint64_t x = v == n ? 1 : atomic_load_explicit(&q[v], memory_order_relaxed);
         if (wide)
            memcpy(out + v * 8, &x, 8);
         else
            memcpy(out + v * 4, &(uint32_t){(uint32_t)x}, 4);
      }
      if (!available) {
         r = VK_NOT_READY;
         if (flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT) {
            if (wide)
               memset(out + n * 8, 0, 8);
            else
               memset(out + n * 4, 0, 4);
         }
      }
   }
   return r;
}
