/* SPDX-License-Identifier: MIT */
/* Devices and queues: a queue handle is fetched once and kept. */
#include "icd.h"

#include <inttypes.h>

#include <stdlib.h>
#include <string.h>

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo *pCreateInfo,
                   const VkAllocationCallbacks *pAllocator, VkDevice *pDevice)
{
   VkResult r = icd_gen_vkCreateDevice(physicalDevice, pCreateInfo, pAllocator, pDevice);
   if (r != VK_SUCCESS)
      return r;
   struct icd_device *dev = (struct icd_device *)*pDevice;
#ifdef VK_EXT_map_memory_placed
   /* placed mappings map the memfd again (icd_memory.c): it is kept */
   for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; i++)
      dev->keeps_memfds |= !strcmp(pCreateInfo->ppEnabledExtensionNames[i],
                                   VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME);
#endif
   icd_device_completion_init(dev);
   return VK_SUCCESS;
}

static VkQueue
get_queue(VkDevice _device, uint32_t family, uint32_t index, VkDeviceQueueCreateFlags flags,
          const VkDeviceQueueInfo2 *info)
{
   struct icd_device *dev = (struct icd_device *)_device;
   pthread_mutex_lock(&dev->mutex);
   for (struct icd_queue *q = dev->queues; q; q = q->next) {
      if (q->family == family && q->index == index && q->flags == flags) {
         pthread_mutex_unlock(&dev->mutex);
         return (VkQueue)q;
      }
   }
   VkQueue queue = VK_NULL_HANDLE;
   if (info)
      icd_gen_vkGetDeviceQueue2(_device, info, &queue);
   else
      icd_gen_vkGetDeviceQueue(_device, family, index, &queue);
   if (queue) {
      struct icd_queue *q = (struct icd_queue *)queue;
      q->family = family;
      q->index = index;
      q->flags = flags;
      q->next = dev->queues;
      dev->queues = q;
   }
   pthread_mutex_unlock(&dev->mutex);
   return queue;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue(VkDevice device, uint32_t queueFamilyIndex, uint32_t queueIndex,
                     VkQueue *pQueue)
{
   *pQueue = get_queue(device, queueFamilyIndex, queueIndex, 0, NULL);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2 *pQueueInfo, VkQueue *pQueue)
{
   *pQueue = get_queue(device, pQueueInfo->queueFamilyIndex, pQueueInfo->queueIndex,
                       pQueueInfo->flags, pQueueInfo);
}

/* ---- waiting for idle, in the application --------------------------------
 *
 * An empty submission with a fence signals once everything submitted to the
 * queue before it has completed: each queue has a fence of its own for
 * that, on the completion page, so waiting for idle sends two asynchronous
 * commands and waits in this process like vkWaitForFences (a dead daemon
 * wakes it with VK_ERROR_DEVICE_LOST).  Without a slot on the page the
 * daemon waits. */

/* The queue's idle fence, reset and submitted; VK_NULL_HANDLE when the
 * daemon must be asked. */
static VkFence
submit_idle_fence(struct icd_queue *q)
{
   VkDevice device = (VkDevice)q->device;
   if (!q->device->completion)
      return VK_NULL_HANDLE;
   if (!q->idle_fence) {
      const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VkFence f = VK_NULL_HANDLE;
      if (icd_vkCreateFence(device, &info, NULL, &f) != VK_SUCCESS)
         return VK_NULL_HANDLE;
      if (!((struct icd_fence *)f)->device) {
         icd_vkDestroyFence(device, f, NULL); /* no slot: it would be asked about */
         return VK_NULL_HANDLE;
      }
      q->idle_fence = f;
   } else if (icd_vkResetFences(device, 1, &q->idle_fence) != VK_SUCCESS) {
      return VK_NULL_HANDLE;
   }
   if (icd_vkQueueSubmit((VkQueue)q, 0, NULL, q->idle_fence) != VK_SUCCESS)
      return VK_NULL_HANDLE;
   return q->idle_fence;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDevice(VkDevice device, const VkAllocationCallbacks *pAllocator)
{
   struct icd_device *dev = (struct icd_device *)device;
   if (!dev)
      return;
   icd_dbg(ICD_DEBUG_WAITS,
           "device %" PRIu64 ": %" PRIu64 " waits on the page, %" PRIu64
           " of them slept, %.2f us each; %" PRIu64 " submissions sent, %" PRIu64
           " made by the ICD",
           dev->base.id, atomic_load(&dev->dbg_waits), atomic_load(&dev->dbg_slept),
           atomic_load(&dev->dbg_waits) ? (double)atomic_load(&dev->dbg_wait_ns) / 1e3 /
                                             (double)atomic_load(&dev->dbg_waits)
                                        : 0.0,
           atomic_load(&dev->submits), atomic_load(&dev->dbg_uploads));
   icd_device_upload_finish(dev);
   icd_gen_vkDestroyDevice(device, pAllocator);
   /* the ICD's own part of it: its queues, page, tables */
   icd_handle_destroy(VK_OBJECT_TYPE_DEVICE, (uint64_t)(uintptr_t)device);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueueWaitIdle(VkQueue queue)
{
   struct icd_queue *q = (struct icd_queue *)queue;
   VkFence f = submit_idle_fence(q);
   if (!f)
      return icd_gen_vkQueueWaitIdle(queue);
   return icd_vkWaitForFences((VkDevice)q->device, 1, &f, VK_TRUE, UINT64_MAX);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkDeviceWaitIdle(VkDevice device)
{
   struct icd_device *dev = (struct icd_device *)device;
   /* the application keeps every queue to itself meanwhile (external
    * synchronisation); the list only grows, under the mutex */
   pthread_mutex_lock(&dev->mutex);
   struct icd_queue *first = dev->queues;
   pthread_mutex_unlock(&dev->mutex);
   VkResult r = VK_SUCCESS;
   for (struct icd_queue *q = first; q && r == VK_SUCCESS; q = q->next) {
      VkFence f = submit_idle_fence(q);
      r = f ? icd_vkWaitForFences(device, 1, &f, VK_TRUE, UINT64_MAX)
            : icd_gen_vkQueueWaitIdle((VkQueue)q);
   }
   return r;
}

#ifdef WIRE_HAS_vkCmdSetCheckpointGPUD
/* VK_NV_device_diagnostic_checkpoints: a marker is the application's own
 * pointer, which the driver never reads and hands back after a loss; it
 * travels as 64 bits, and comes back as the pointer it was. */
VKAPI_ATTR void VKAPI_CALL
icd_vkCmdSetCheckpointNV(VkCommandBuffer commandBuffer, const void *pCheckpointMarker)
{
   icd_gen_vkCmdSetCheckpointGPUD(commandBuffer, (uint64_t)(uintptr_t)pCheckpointMarker);
}

/* Into VkCheckpointDataNV (stages2 false) or VkCheckpointData2NV. */
static void
checkpoint_data(VkQueue queue, bool stages2, uint32_t *count, void *data)
{
   if (!data) {
      icd_gen_vkGetQueueCheckpointDataGPUD(queue, stages2, count, NULL, NULL);
      return;
   }
   /* (a queue holds far fewer checkpoints than the wire's most) */
   uint32_t n = *count < WIRE_MAX_OUTPUT_ELEMENTS ? *count : WIRE_MAX_OUTPUT_ELEMENTS;
   uint64_t *stages = calloc(n ? n : 1, sizeof(*stages));
   uint64_t *markers = calloc(n ? n : 1, sizeof(*markers));
   if (!stages || !markers) {
      *count = 0;
   } else {
      icd_gen_vkGetQueueCheckpointDataGPUD(queue, stages2, &n, stages, markers);
      for (uint32_t i = 0; i < n; i++) {
         if (stages2) {
            VkCheckpointData2NV *d = &((VkCheckpointData2NV *)data)[i];
            d->stage = stages[i];
            d->pCheckpointMarker = (void *)(uintptr_t)markers[i];
         } else {
            VkCheckpointDataNV *d = &((VkCheckpointDataNV *)data)[i];
            d->stage = (VkPipelineStageFlagBits)stages[i];
            d->pCheckpointMarker = (void *)(uintptr_t)markers[i];
         }
      }
      *count = n;
   }
   free(stages);
   free(markers);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetQueueCheckpointDataNV(VkQueue queue, uint32_t *pCheckpointDataCount,
                               VkCheckpointDataNV *pCheckpointData)
{
   checkpoint_data(queue, false, pCheckpointDataCount, pCheckpointData);
}

#ifdef VK_KHR_synchronization2
VKAPI_ATTR void VKAPI_CALL
icd_vkGetQueueCheckpointData2NV(VkQueue queue, uint32_t *pCheckpointDataCount,
                                VkCheckpointData2NV *pCheckpointData)
{
   checkpoint_data(queue, true, pCheckpointDataCount, pCheckpointData);
}
#endif
#endif

#ifdef WIRE_HAS_vkGetDeviceFaultInfoGPUD
/* VK_EXT_device_fault: the arrays of a fault are sized by pFaultCounts, not
 * by members of their own structure; each travels as the bytes of its
 * capacity (flat structures, no pointers), the description too. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetDeviceFaultInfoEXT(VkDevice device, VkDeviceFaultCountsEXT *pFaultCounts,
                            VkDeviceFaultInfoEXT *pFaultInfo)
{
   if (!pFaultInfo)
      return icd_gen_vkGetDeviceFaultInfoGPUD(device, pFaultCounts, 0, NULL, 0, NULL, 0, NULL, 0,
                                              NULL);
   /* no more than the daemon gives room for (a driver has a few records) */
   VkDeviceFaultCountsEXT room = *pFaultCounts;
   const size_t most = WIRE_MAX_OUTPUT_BYTES / sizeof(VkDeviceFaultVendorInfoEXT);
   room.addressInfoCount = room.addressInfoCount < most ? room.addressInfoCount : (uint32_t)most;
   room.vendorInfoCount = room.vendorInfoCount < most ? room.vendorInfoCount : (uint32_t)most;
   if (room.vendorBinarySize > WIRE_MAX_OUTPUT_BYTES)
      room.vendorBinarySize = WIRE_MAX_OUTPUT_BYTES;
   void *addresses = pFaultInfo->pAddressInfos;
   void *vendors = pFaultInfo->pVendorInfos;
   void *binary = pFaultInfo->pVendorBinaryData;
   return icd_gen_vkGetDeviceFaultInfoGPUD(
      device, pFaultCounts, sizeof(pFaultInfo->description), pFaultInfo->description,
      addresses ? room.addressInfoCount * sizeof(VkDeviceFaultAddressInfoEXT) : 0, addresses,
      vendors ? room.vendorInfoCount * sizeof(VkDeviceFaultVendorInfoEXT) : 0, vendors,
      binary ? (size_t)room.vendorBinarySize : 0, binary);
}
#endif
