/* SPDX-License-Identifier: MIT */
/*
 * VK_KHR_deferred_host_operations, and what of ray tracing takes one.
 *
 * A deferred operation would run on the application's threads, joined to
 * work that runs in the worker: gpud never defers. Each command given an
 * operation does its work before it returns and says so with
 * VK_OPERATION_NOT_DEFERRED_KHR, as the spec lets any implementation do;
 * the operation itself stays as it was made (nothing deferred on it: its
 * result is VK_SUCCESS, a join has nothing to do). Operations are the
 * ICD's own objects: none goes on the wire.
 *
 * The commands that build and copy acceleration structures on the host
 * read and write the application's memory by host address, which is not
 * the worker's: accelerationStructureHostCommands is reported off
 * (daemon/worker/gpud_instance.c), and they fail here.
 */
#include "icd.h"

#include <stdlib.h>

#ifdef WIRE_HAS_vkCmdBuildAccelerationStructuresKHR

struct icd_deferred_operation {
   uint32_t magic; /* something to point at: the handle is its address */
};

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDeferredOperationKHR(VkDevice device, const VkAllocationCallbacks *pAllocator,
                                 VkDeferredOperationKHR *pDeferredOperation)
{
   (void)device;
   (void)pAllocator;
   struct icd_deferred_operation *op = calloc(1, sizeof(*op));
   if (!op)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   op->magic = 0x64656665; /* "defe" */
   *pDeferredOperation = (VkDeferredOperationKHR)(uintptr_t)op;
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDeferredOperationKHR(VkDevice device, VkDeferredOperationKHR operation,
                                  const VkAllocationCallbacks *pAllocator)
{
   (void)device;
   (void)pAllocator;
   free(icd_deferred_operation_from_handle(operation));
}

VKAPI_ATTR uint32_t VKAPI_CALL
icd_vkGetDeferredOperationMaxConcurrencyKHR(VkDevice device, VkDeferredOperationKHR operation)
{
   (void)device;
   (void)operation;
   return 0; /* nothing pending */
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetDeferredOperationResultKHR(VkDevice device, VkDeferredOperationKHR operation)
{
   (void)device;
   (void)operation;
   return VK_SUCCESS; /* no command has been deferred on it */
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkDeferredOperationJoinKHR(VkDevice device, VkDeferredOperationKHR operation)
{
   (void)device;
   (void)operation;
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateRayTracingPipelinesKHR(VkDevice device, VkDeferredOperationKHR deferredOperation,
                                   VkPipelineCache pipelineCache, uint32_t createInfoCount,
                                   const VkRayTracingPipelineCreateInfoKHR *pCreateInfos,
                                   const VkAllocationCallbacks *pAllocator,
                                   VkPipeline *pPipelines)
{
   VkResult r = icd_gen_vkCreateRayTracingPipelinesKHR(device, VK_NULL_HANDLE, pipelineCache,
                                                       createInfoCount, pCreateInfos,
                                                       pAllocator, pPipelines);
   return deferredOperation && r == VK_SUCCESS ? VK_OPERATION_NOT_DEFERRED_KHR : r;
}

/* What a size query ignores (the spec says so) may be left as anything by
 * the application: the structures named, the mode. The daemon would check
 * a structure it is not given. */
VKAPI_ATTR void VKAPI_CALL
icd_vkGetAccelerationStructureBuildSizesKHR(
   VkDevice device, VkAccelerationStructureBuildTypeKHR buildType,
   const VkAccelerationStructureBuildGeometryInfoKHR *pBuildInfo,
   const uint32_t *pMaxPrimitiveCounts, VkAccelerationStructureBuildSizesInfoKHR *pSizeInfo)
{
   VkAccelerationStructureBuildGeometryInfoKHR info = *pBuildInfo;
   info.mode = VK_BUILD_ACCELERATION_STRUCTURE_MODE_BUILD_KHR;
   info.srcAccelerationStructure = VK_NULL_HANDLE;
   info.dstAccelerationStructure = VK_NULL_HANDLE;
   icd_gen_vkGetAccelerationStructureBuildSizesKHR(device, buildType, &info, pMaxPrimitiveCounts,
                                                   pSizeInfo);
}

/* ---- host commands: reported off ------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkBuildAccelerationStructuresKHR(
   VkDevice device, VkDeferredOperationKHR deferredOperation, uint32_t infoCount,
   const VkAccelerationStructureBuildGeometryInfoKHR *pInfos,
   const VkAccelerationStructureBuildRangeInfoKHR *const *ppBuildRangeInfos)
{
   (void)device;
   (void)deferredOperation;
   (void)infoCount;
   (void)pInfos;
   (void)ppBuildRangeInfos;
   return VK_ERROR_FEATURE_NOT_PRESENT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCopyAccelerationStructureKHR(VkDevice device, VkDeferredOperationKHR deferredOperation,
                                   const VkCopyAccelerationStructureInfoKHR *pInfo)
{
   (void)device;
   (void)deferredOperation;
   (void)pInfo;
   return VK_ERROR_FEATURE_NOT_PRESENT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCopyAccelerationStructureToMemoryKHR(VkDevice device,
                                           VkDeferredOperationKHR deferredOperation,
                                           const VkCopyAccelerationStructureToMemoryInfoKHR *pInfo)
{
   (void)device;
   (void)deferredOperation;
   (void)pInfo;
   return VK_ERROR_FEATURE_NOT_PRESENT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCopyMemoryToAccelerationStructureKHR(VkDevice device,
                                           VkDeferredOperationKHR deferredOperation,
                                           const VkCopyMemoryToAccelerationStructureInfoKHR *pInfo)
{
   (void)device;
   (void)deferredOperation;
   (void)pInfo;
   return VK_ERROR_FEATURE_NOT_PRESENT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWriteAccelerationStructuresPropertiesKHR(
   VkDevice device, uint32_t accelerationStructureCount,
   const VkAccelerationStructureKHR *pAccelerationStructures, VkQueryType queryType,
   size_t dataSize, void *pData, size_t stride)
{
   (void)device;
   (void)accelerationStructureCount;
   (void)pAccelerationStructures;
   (void)queryType;
   (void)dataSize;
   (void)pData;
   (void)stride;
   return VK_ERROR_FEATURE_NOT_PRESENT;
}

#endif
