/* SPDX-License-Identifier: MIT */
/*
 * Devices: their creation (the completion page mapped, icd_completion.c),
 * destruction, wait for idle and fault reports.
 */
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
   struct icd_device *dev = icd_device_from_handle(*pDevice);
#ifdef VK_EXT_map_memory_placed
   /* placed mappings map the memfd again (icd_memory.c): it is kept */
   for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; i++)
      dev->keeps_memfds |= !strcmp(pCreateInfo->ppEnabledExtensionNames[i],
                                   VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME);
#endif
   icd_device_completion_init(dev);
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDevice(VkDevice device, const VkAllocationCallbacks *pAllocator)
{
   struct icd_device *dev = icd_device_from_handle(device);
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
           atomic_load(&dev->submits),
           atomic_load(&dev->dbg_copies[0]) + atomic_load(&dev->dbg_copies[1]));
   for (int u = 0; u < 2; u++) {
      uint64_t n = atomic_load(&dev->dbg_copies[u]);
      icd_dbg(ICD_DEBUG_WAITS,
              "device %" PRIu64 ": %" PRIu64 " copies made by the ICD %s, %.1f KiB and %.2f us "
              "each",
              dev->base.id, n, u ? "in upload memory" : "in the message",
              n ? (double)atomic_load(&dev->dbg_copy_bytes[u]) / 1024.0 / (double)n : 0.0,
              n ? (double)atomic_load(&dev->dbg_copy_ns[u]) / 1e3 / (double)n : 0.0);
   }
   icd_device_upload_finish(dev);
   icd_gen_vkDestroyDevice(device, pAllocator);
   /* the ICD's own part of it: its queues, page, tables */
   icd_handle_destroy(VK_OBJECT_TYPE_DEVICE, (uint64_t)(uintptr_t)device);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkDeviceWaitIdle(VkDevice device)
{
   struct icd_device *dev = icd_device_from_handle(device);
   /* the application keeps every queue to itself meanwhile (external
    * synchronisation); the list only grows, under the mutex */
   pthread_mutex_lock(&dev->mutex);
   struct icd_queue *first = dev->queues;
   pthread_mutex_unlock(&dev->mutex);
   VkResult r = VK_SUCCESS;
   for (struct icd_queue *q = first; q && r == VK_SUCCESS; q = q->next) {
      VkFence f = icd_queue_idle_fence(q);
      r = f ? icd_vkWaitForFences(device, 1, &f, VK_TRUE, UINT64_MAX)
            : icd_gen_vkQueueWaitIdle((VkQueue)q);
   }
   return r;
}

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
