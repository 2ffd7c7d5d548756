/* SPDX-License-Identifier: MIT */
/*
 * The window-system commands: answered in the application's process by
 * wsi/, which reaches back into the ICD through the table set up here (the
 * ICD's own entrypoints, the memory the display server can map, and
 * gpud's vkSignalGPUD for acquired images).
 */
#include "icd.h"

#include <stdlib.h>
#include <string.h>

#include "wsi.h"

static VkResult
signal_acquired(VkDevice device, VkSemaphore semaphore, VkFence fence)
{
   if (!semaphore && !fence)
      return VK_SUCCESS;
   /* no tracker sees this signal: the fence is asked about until reset */
   icd_fence_ask(fence);
   icd_gen_vkSignalGPUD(device, semaphore, fence);
   return icd_connection_lost(icd_object(device)->conn) ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

/* vkQueueSubmit without the flush that makes an application's submission
 * start at once: a present's copy goes out with the present thread's wait
 * for it, in the same message. */
static VkResult
queue_submit_queued(VkQueue queue, uint32_t count, const VkSubmitInfo *submits, VkFence fence)
{
   struct icd_connection *conn = icd_object(queue)->conn;
   struct icd_call call;
   atomic_fetch_add(&(icd_queue_from_handle(queue))->device->submits, 1);
   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_vkQueueSubmit, false, false);
   wire_enc_vkQueueSubmit(e, queue, count, submits, fence);
   icd_call_end(&call);
   return icd_connection_lost(conn) ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

/* Whether the physical device offers the extension. */
static bool
device_has_extension(VkPhysicalDevice pdev, const char *name)
{
   uint32_t n = 0;
   if (icd_vkEnumerateDeviceExtensionProperties(pdev, NULL, &n, NULL) != VK_SUCCESS || !n)
      return false;
   VkExtensionProperties *exts = calloc(n, sizeof(*exts));
   bool found = false;
   if (exts && icd_vkEnumerateDeviceExtensionProperties(pdev, NULL, &n, exts) >= 0) {
      for (uint32_t i = 0; i < n && !found; i++)
         found = !strcmp(exts[i].extensionName, name);
   }
   free(exts);
   return found;
}

/* The physical device's WSI table, made on first use. */
static struct wsi_device *
wsi_of(VkPhysicalDevice _pdev)
{
   struct icd_physical_device *pdev = icd_physical_device_from_handle(_pdev);
   pthread_mutex_lock(&pdev->wsi_mutex);
   if (!pdev->wsi) {
      struct wsi_device *wsi = calloc(1, sizeof(*wsi));
      if (wsi) {
         wsi->physical_device = _pdev;
         wsi->vk = (struct wsi_dispatch){
            .GetPhysicalDeviceMemoryProperties = icd_vkGetPhysicalDeviceMemoryProperties,
            .GetPhysicalDeviceQueueFamilyProperties = icd_vkGetPhysicalDeviceQueueFamilyProperties,
            .GetPhysicalDeviceProperties = icd_vkGetPhysicalDeviceProperties,
            .GetPhysicalDeviceImageFormatProperties = icd_vkGetPhysicalDeviceImageFormatProperties,
            .CreateImage = icd_vkCreateImage,
            .DestroyImage = icd_vkDestroyImage,
            .GetImageMemoryRequirements = icd_vkGetImageMemoryRequirements,
            .GetImageSubresourceLayout = icd_vkGetImageSubresourceLayout,
            .BindImageMemory = icd_vkBindImageMemory,
            .CreateBuffer = icd_vkCreateBuffer,
            .DestroyBuffer = icd_vkDestroyBuffer,
            .GetBufferMemoryRequirements = icd_vkGetBufferMemoryRequirements,
            .BindBufferMemory = icd_vkBindBufferMemory,
            .AllocateMemory = icd_vkAllocateMemory,
            .FreeMemory = icd_vkFreeMemory,
            .CreateCommandPool = icd_vkCreateCommandPool,
            .DestroyCommandPool = icd_vkDestroyCommandPool,
            .AllocateCommandBuffers = icd_vkAllocateCommandBuffers,
            .BeginCommandBuffer = icd_vkBeginCommandBuffer,
            .EndCommandBuffer = icd_vkEndCommandBuffer,
            .CmdPipelineBarrier = icd_vkCmdPipelineBarrier,
            .CmdCopyImageToBuffer = icd_vkCmdCopyImageToBuffer,
            .QueueSubmit = queue_submit_queued,
            .CreateSemaphore = icd_vkCreateSemaphore,
            .DestroySemaphore = icd_vkDestroySemaphore,
            .WaitSemaphores = icd_vkWaitSemaphores,
            .DeviceWaitIdle = icd_vkDeviceWaitIdle,
         };
         wsi->services.allocate_shared_memory = icd_allocate_shared_memory;
         wsi->services.signal = signal_acquired;
         icd_vkGetPhysicalDeviceQueueFamilyProperties(_pdev, &wsi->queue_family_count, NULL);
         VkPhysicalDeviceProperties props;
         icd_vkGetPhysicalDeviceProperties(_pdev, &props);
         wsi->max_extent.width = wsi->max_extent.height = props.limits.maxImageDimension2D;
         wsi->attachment_feedback_loop =
            device_has_extension(_pdev, "VK_EXT_attachment_feedback_loop_layout");
         pdev->wsi = wsi;
      }
   }
   pthread_mutex_unlock(&pdev->wsi_mutex);
   return pdev->wsi;
}

static struct wsi_device *
wsi_of_device(VkDevice device)
{
   return wsi_of((VkPhysicalDevice)(icd_device_from_handle(device))->physical_device);
}

/* ---- surfaces ----------------------------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateXcbSurfaceKHR(VkInstance instance, const VkXcbSurfaceCreateInfoKHR *pCreateInfo,
                          const VkAllocationCallbacks *pAllocator, VkSurfaceKHR *pSurface)
{
   return wsi_create_xcb_surface(pCreateInfo, pSurface);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateXlibSurfaceKHR(VkInstance instance, const VkXlibSurfaceCreateInfoKHR *pCreateInfo,
                           const VkAllocationCallbacks *pAllocator, VkSurfaceKHR *pSurface)
{
   return wsi_create_xlib_surface(pCreateInfo, pSurface);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateWaylandSurfaceKHR(VkInstance instance,
                              const VkWaylandSurfaceCreateInfoKHR *pCreateInfo,
                              const VkAllocationCallbacks *pAllocator, VkSurfaceKHR *pSurface)
{
   return wsi_create_wayland_surface(pCreateInfo, pSurface);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateHeadlessSurfaceEXT(VkInstance instance,
                               const VkHeadlessSurfaceCreateInfoEXT *pCreateInfo,
                               const VkAllocationCallbacks *pAllocator, VkSurfaceKHR *pSurface)
{
   return wsi_create_headless_surface(pCreateInfo, pSurface);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroySurfaceKHR(VkInstance instance, VkSurfaceKHR surface,
                        const VkAllocationCallbacks *pAllocator)
{
   if (surface)
      wsi_destroy_surface(surface);
}

/* ---- surface queries ------------------------------------------------------------ */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfaceSupportKHR(VkPhysicalDevice physicalDevice, uint32_t queueFamilyIndex,
                                         VkSurfaceKHR surface, VkBool32 *pSupported)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   return wsi_get_surface_support(wsi, queueFamilyIndex, surface, pSupported);
}

VKAPI_ATTR VkBool32 VKAPI_CALL
icd_vkGetPhysicalDeviceXcbPresentationSupportKHR(VkPhysicalDevice physicalDevice,
                                                 uint32_t queueFamilyIndex,
                                                 xcb_connection_t *connection,
                                                 xcb_visualid_t visual_id)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   return wsi && wsi_xcb_presentation_support(wsi, connection, visual_id);
}

VKAPI_ATTR VkBool32 VKAPI_CALL
icd_vkGetPhysicalDeviceXlibPresentationSupportKHR(VkPhysicalDevice physicalDevice,
                                                  uint32_t queueFamilyIndex, Display *dpy,
                                                  VisualID visualID)
{
   return wsi_of(physicalDevice) != NULL;
}

VKAPI_ATTR VkBool32 VKAPI_CALL
icd_vkGetPhysicalDeviceWaylandPresentationSupportKHR(VkPhysicalDevice physicalDevice,
                                                     uint32_t queueFamilyIndex,
                                                     struct wl_display *display)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   return wsi && wsi_wayland_presentation_support(wsi, display);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfaceCapabilities2KHR(VkPhysicalDevice physicalDevice,
                                               const VkPhysicalDeviceSurfaceInfo2KHR *pSurfaceInfo,
                                               VkSurfaceCapabilities2KHR *pSurfaceCapabilities)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   return wsi_get_surface_capabilities2(wsi, pSurfaceInfo, pSurfaceCapabilities);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfaceCapabilitiesKHR(VkPhysicalDevice physicalDevice,
                                              VkSurfaceKHR surface,
                                              VkSurfaceCapabilitiesKHR *pSurfaceCapabilities)
{
   const VkPhysicalDeviceSurfaceInfo2KHR info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SURFACE_INFO_2_KHR,
      .surface = surface,
   };
   VkSurfaceCapabilities2KHR caps = {.sType = VK_STRUCTURE_TYPE_SURFACE_CAPABILITIES_2_KHR};
   VkResult r = icd_vkGetPhysicalDeviceSurfaceCapabilities2KHR(physicalDevice, &info, &caps);
   *pSurfaceCapabilities = caps.surfaceCapabilities;
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfaceFormats2KHR(VkPhysicalDevice physicalDevice,
                                          const VkPhysicalDeviceSurfaceInfo2KHR *pSurfaceInfo,
                                          uint32_t *pSurfaceFormatCount,
                                          VkSurfaceFormat2KHR *pSurfaceFormats)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   return wsi_get_surface_formats2(wsi, pSurfaceInfo, pSurfaceFormatCount, pSurfaceFormats);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfaceFormatsKHR(VkPhysicalDevice physicalDevice, VkSurfaceKHR surface,
                                         uint32_t *pSurfaceFormatCount,
                                         VkSurfaceFormatKHR *pSurfaceFormats)
{
   const VkPhysicalDeviceSurfaceInfo2KHR info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SURFACE_INFO_2_KHR,
      .surface = surface,
   };
   if (!pSurfaceFormats)
      return icd_vkGetPhysicalDeviceSurfaceFormats2KHR(physicalDevice, &info,
                                                       pSurfaceFormatCount, NULL);
   VkSurfaceFormat2KHR formats[8];
   uint32_t n = *pSurfaceFormatCount < 8 ? *pSurfaceFormatCount : 8;
   for (uint32_t i = 0; i < n; i++)
      formats[i] = (VkSurfaceFormat2KHR){.sType = VK_STRUCTURE_TYPE_SURFACE_FORMAT_2_KHR};
   VkResult r = icd_vkGetPhysicalDeviceSurfaceFormats2KHR(physicalDevice, &info, &n, formats);
   for (uint32_t i = 0; i < n; i++)
      pSurfaceFormats[i] = formats[i].surfaceFormat;
   *pSurfaceFormatCount = n;
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDeviceSurfacePresentModesKHR(VkPhysicalDevice physicalDevice,
                                              VkSurfaceKHR surface, uint32_t *pPresentModeCount,
                                              VkPresentModeKHR *pPresentModes)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   const VkPhysicalDeviceSurfaceInfo2KHR info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SURFACE_INFO_2_KHR,
      .surface = surface,
   };
   return wsi_get_surface_present_modes(wsi, &info, pPresentModeCount, pPresentModes);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetPhysicalDevicePresentRectanglesKHR(VkPhysicalDevice physicalDevice, VkSurfaceKHR surface,
                                            uint32_t *pRectCount, VkRect2D *pRects)
{
   struct wsi_device *wsi = wsi_of(physicalDevice);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   return wsi_get_present_rectangles(wsi, surface, pRectCount, pRects);
}

/* Each daemon is a device group of one: it presents its own images. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetDeviceGroupPresentCapabilitiesKHR(
   VkDevice device, VkDeviceGroupPresentCapabilitiesKHR *pDeviceGroupPresentCapabilities)
{
   memset(pDeviceGroupPresentCapabilities->presentMask, 0,
          sizeof(pDeviceGroupPresentCapabilities->presentMask));
   pDeviceGroupPresentCapabilities->presentMask[0] = 1;
   pDeviceGroupPresentCapabilities->modes = VK_DEVICE_GROUP_PRESENT_MODE_LOCAL_BIT_KHR;
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetDeviceGroupSurfacePresentModesKHR(VkDevice device, VkSurfaceKHR surface,
                                           VkDeviceGroupPresentModeFlagsKHR *pModes)
{
   *pModes = VK_DEVICE_GROUP_PRESENT_MODE_LOCAL_BIT_KHR;
   return VK_SUCCESS;
}

/* ---- swapchains ------------------------------------------------------------------ */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateSwapchainKHR(VkDevice device, const VkSwapchainCreateInfoKHR *pCreateInfo,
                         const VkAllocationCallbacks *pAllocator, VkSwapchainKHR *pSwapchain)
{
   struct wsi_device *wsi = wsi_of_device(device);
   if (!wsi)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   return wsi_create_swapchain(wsi, device, pCreateInfo, pSwapchain);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroySwapchainKHR(VkDevice device, VkSwapchainKHR swapchain,
                          const VkAllocationCallbacks *pAllocator)
{
   wsi_destroy_swapchain(device, swapchain);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetSwapchainImagesKHR(VkDevice device, VkSwapchainKHR swapchain,
                            uint32_t *pSwapchainImageCount, VkImage *pSwapchainImages)
{
   return wsi_get_swapchain_images(swapchain, pSwapchainImageCount, pSwapchainImages);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAcquireNextImage2KHR(VkDevice device, const VkAcquireNextImageInfoKHR *pAcquireInfo,
                           uint32_t *pImageIndex)
{
   if (icd_connection_lost(icd_object(device)->conn))
      return VK_ERROR_DEVICE_LOST;
   return wsi_acquire_next_image(device, pAcquireInfo, pImageIndex);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAcquireNextImageKHR(VkDevice device, VkSwapchainKHR swapchain, uint64_t timeout,
                          VkSemaphore semaphore, VkFence fence, uint32_t *pImageIndex)
{
   const VkAcquireNextImageInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_ACQUIRE_NEXT_IMAGE_INFO_KHR,
      .swapchain = swapchain,
      .timeout = timeout,
      .semaphore = semaphore,
      .fence = fence,
      .deviceMask = 1,
   };
   return icd_vkAcquireNextImage2KHR(device, &info, pImageIndex);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueuePresentKHR(VkQueue queue, const VkPresentInfoKHR *pPresentInfo)
{
   if (icd_connection_lost(icd_object(queue)->conn))
      return VK_ERROR_DEVICE_LOST;
   return wsi_queue_present(queue, (icd_queue_from_handle(queue))->family, pPresentInfo);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWaitForPresentKHR(VkDevice device, VkSwapchainKHR swapchain, uint64_t presentId,
                        uint64_t timeout)
{
   if (icd_connection_lost(icd_object(device)->conn))
      return VK_ERROR_DEVICE_LOST;
   return wsi_wait_for_present(device, swapchain, presentId, timeout);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkReleaseSwapchainImagesEXT(VkDevice device, const VkReleaseSwapchainImagesInfoEXT *pReleaseInfo)
{
   return wsi_release_images(device, pReleaseInfo);
}

/* ---- features -------------------------------------------------------------------- */

/* The host's features, and those of the window-system extensions, which
 * are the ICD's. */
VKAPI_ATTR void VKAPI_CALL
icd_vkGetPhysicalDeviceFeatures2(VkPhysicalDevice physicalDevice,
                                 VkPhysicalDeviceFeatures2 *pFeatures)
{
   icd_gen_vkGetPhysicalDeviceFeatures2(physicalDevice, pFeatures);
   for (VkBaseOutStructure *c = pFeatures->pNext; c; c = c->pNext) {
      switch ((int)c->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR:
         ((VkPhysicalDevicePresentIdFeaturesKHR *)c)->presentId = VK_TRUE;
         break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR:
         ((VkPhysicalDevicePresentWaitFeaturesKHR *)c)->presentWait = VK_TRUE;
         break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SWAPCHAIN_MAINTENANCE_1_FEATURES_EXT:
         ((VkPhysicalDeviceSwapchainMaintenance1FeaturesEXT *)c)->swapchainMaintenance1 = VK_TRUE;
         break;
      default:
         break;
      }
   }
}
