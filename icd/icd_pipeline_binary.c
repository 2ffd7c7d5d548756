/* SPDX-License-Identifier: MIT */
/*
 * VK_KHR_pipeline_binary's two commands that cannot travel as they are:
 * a VkPipelineCreateInfoKHR holds the pipeline's create info in its pNext
 * (no structure extends it, so the wire would not know what it is), and
 * vkCreatePipelineBinariesKHR returns its new binaries inside an output
 * structure. The ICD sends the create info as the structure it is, and the
 * binaries as an array of new handles (gpud's own commands, protocol/
 * gen_wire.py; the daemon's side in daemon/worker/gpud_pipeline.c).
 */
#include "icd.h"

#ifdef WIRE_HAS_vkCreatePipelineBinariesGPUD

/* The create info a VkPipelineCreateInfoKHR carries, as the one of the
 * three kinds it is; false for anything else. */
static bool
pipeline_info_split(const VkPipelineCreateInfoKHR *info,
                    const VkGraphicsPipelineCreateInfo **graphics,
                    const VkComputePipelineCreateInfo **compute,
                    const VkRayTracingPipelineCreateInfoKHR **ray_tracing)
{
   *graphics = NULL;
   *compute = NULL;
   *ray_tracing = NULL;
   if (!info)
      return true;
   const VkBaseInStructure *s = info->pNext;
   if (!s)
      return false;
   switch (s->sType) {
   case VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO:
      *graphics = (const VkGraphicsPipelineCreateInfo *)s;
      return true;
   case VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO:
      *compute = (const VkComputePipelineCreateInfo *)s;
      return true;
   case VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_KHR:
      *ray_tracing = (const VkRayTracingPipelineCreateInfoKHR *)s;
      return true;
   default:
      return false;
   }
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreatePipelineBinariesKHR(VkDevice device, const VkPipelineBinaryCreateInfoKHR *pCreateInfo,
                                const VkAllocationCallbacks *pAllocator,
                                VkPipelineBinaryHandlesInfoKHR *pBinaries)
{
   (void)pAllocator;
   const VkGraphicsPipelineCreateInfo *graphics;
   const VkComputePipelineCreateInfo *compute;
   const VkRayTracingPipelineCreateInfoKHR *ray_tracing;
   if (!pipeline_info_split(pCreateInfo->pPipelineCreateInfo, &graphics, &compute, &ray_tracing))
      return VK_ERROR_INITIALIZATION_FAILED;
   if (!pBinaries->pPipelineBinaries)
      return icd_gen_vkGetPipelineBinaryCountGPUD(device, pCreateInfo->pKeysAndDataInfo,
                                                  pCreateInfo->pipeline, graphics, compute,
                                                  ray_tracing, &pBinaries->pipelineBinaryCount);
   const uint32_t room = pBinaries->pipelineBinaryCount;
   if (!room) {
      /* room for none: as many as there would be are not written */
      uint32_t n = 0;
      VkResult r = icd_gen_vkGetPipelineBinaryCountGPUD(
         device, pCreateInfo->pKeysAndDataInfo, pCreateInfo->pipeline, graphics, compute,
         ray_tracing, &n);
      return r == VK_SUCCESS && n ? VK_INCOMPLETE : r;
   }
   VkResult r = icd_gen_vkCreatePipelineBinariesGPUD(
      device, pCreateInfo->pKeysAndDataInfo, pCreateInfo->pipeline, graphics, compute, ray_tracing,
      room, pBinaries->pPipelineBinaries);
   if (r >= 0) {
      /* the host writes the binaries it made from the first entry on */
      uint32_t n = 0;
      while (n < room && pBinaries->pPipelineBinaries[n] != VK_NULL_HANDLE)
         n++;
      pBinaries->pipelineBinaryCount = n;
   }
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPipelineKeyKHR(VkDevice device, const VkPipelineCreateInfoKHR *pPipelineCreateInfo,
                        VkPipelineBinaryKeyKHR *pPipelineKey)
{
   const VkGraphicsPipelineCreateInfo *graphics;
   const VkComputePipelineCreateInfo *compute;
   const VkRayTracingPipelineCreateInfoKHR *ray_tracing;
   if (!pipeline_info_split(pPipelineCreateInfo, &graphics, &compute, &ray_tracing))
      return VK_ERROR_OUT_OF_HOST_MEMORY; /* (its only errors: out of memory) */
   return icd_gen_vkGetPipelineKeyGPUD(device, graphics, compute, ray_tracing,
                                       pPipelineCreateInfo ? VK_FALSE : VK_TRUE, pPipelineKey);
}

#endif
