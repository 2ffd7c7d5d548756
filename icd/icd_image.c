/* SPDX-License-Identifier: MIT */
/*
 * Images: those made for host copies (VK_IMAGE_USAGE_HOST_TRANSFER_BIT)
 * are remembered with their format and layers, which size the copies
 * (icd_hostcopy.c); every other image is the daemon's alone.
 */
#include "icd.h"

/* (with the registry that has host image copies; else the generated
 * entry points serve) */
#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateImage(VkDevice device, const VkImageCreateInfo *pCreateInfo,
                  const VkAllocationCallbacks *pAllocator, VkImage *pImage)
{
   VkResult r = icd_gen_vkCreateImage(device, pCreateInfo, pAllocator, pImage);
   if (r != VK_SUCCESS || !(pCreateInfo->usage & VK_IMAGE_USAGE_HOST_TRANSFER_BIT_EXT))
      return r;
   if (!icd_hostcopy_image_add(icd_device_from_handle(device), *pImage, pCreateInfo->format,
                               pCreateInfo->arrayLayers)) {
      icd_gen_vkDestroyImage(device, *pImage, pAllocator);
      *pImage = VK_NULL_HANDLE;
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyImage(VkDevice device, VkImage image, const VkAllocationCallbacks *pAllocator)
{
   if (image)
      icd_hostcopy_image_remove(icd_device_from_handle(device), image);
   icd_gen_vkDestroyImage(device, image, pAllocator);
}
#endif
