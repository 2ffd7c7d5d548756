/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Window-system integration, in the application's process.  The ICD calls
 * these for the VK_KHR_surface/swapchain family of commands; the WSI calls
 * back into the ICD only through struct wsi_device (the Vulkan commands it
 * needs, as the ICD's own entrypoints, and two services), so the two never
 * include each other.
 *
 * A swapchain image is an ordinary image of the daemon.  Each has a
 * host-visible buffer beside it whose memory is a memfd the ICD holds; on
 * present, the image is copied into that buffer on the application's queue
 * (one GPU-side copy), and the display server reads the same pages: X11
 * MIT-SHM (xcb_shm_attach_fd) and Present, Wayland wl_shm.  No pixel goes
 * through gpud's socket.
 */

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>
#include <vulkan/vk_icd.h>

/* The Vulkan commands the WSI uses: the ICD's own entrypoints. */
struct wsi_dispatch {
   PFN_vkGetPhysicalDeviceMemoryProperties GetPhysicalDeviceMemoryProperties;
   PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
   PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
   PFN_vkGetPhysicalDeviceImageFormatProperties GetPhysicalDeviceImageFormatProperties;
   PFN_vkCreateImage CreateImage;
   PFN_vkDestroyImage DestroyImage;
   PFN_vkGetImageMemoryRequirements GetImageMemoryRequirements;
   PFN_vkGetImageSubresourceLayout GetImageSubresourceLayout;
   PFN_vkBindImageMemory BindImageMemory;
   PFN_vkCreateBuffer CreateBuffer;
   PFN_vkDestroyBuffer DestroyBuffer;
   PFN_vkGetBufferMemoryRequirements GetBufferMemoryRequirements;
   PFN_vkBindBufferMemory BindBufferMemory;
   PFN_vkAllocateMemory AllocateMemory;
   PFN_vkFreeMemory FreeMemory;
   PFN_vkCreateCommandPool CreateCommandPool;
   PFN_vkDestroyCommandPool DestroyCommandPool;
   PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
   PFN_vkBeginCommandBuffer BeginCommandBuffer;
   PFN_vkEndCommandBuffer EndCommandBuffer;
   PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
   PFN_vkCmdCopyImageToBuffer CmdCopyImageToBuffer;
   /* queues the submit without sending it: the present thread's fence
    * wait that follows sends it */
   PFN_vkQueueSubmit QueueSubmit;
   PFN_vkCreateSemaphore CreateSemaphore;
   PFN_vkDestroySemaphore DestroySemaphore;
   PFN_vkWaitSemaphores WaitSemaphores;
   PFN_vkDeviceWaitIdle DeviceWaitIdle;
};

/* What the ICD does for the WSI besides Vulkan commands. */
struct wsi_services {
   /* Host-visible, coherent memory mapped at *map whose pages are the memfd
    * *fd (the caller's to close): what a display server can map. */
   VkResult (*allocate_shared_memory)(VkDevice device, uint32_t type_index, VkDeviceSize size,
                                      VkDeviceMemory *memory, int *fd, void **map);
   /* Signals a binary semaphore and/or a fence (either may be null) as
    * soon as the device gets to it: an acquired image that is ready. */
   VkResult (*signal)(VkDevice device, VkSemaphore semaphore, VkFence fence);
};

/* One per physical device. */
struct wsi_device {
   VkPhysicalDevice physical_device;
   struct wsi_dispatch vk;
   struct wsi_services services;
   uint32_t queue_family_count;
   VkExtent2D max_extent; /* maxImageDimension2D */
   /* VK_EXT_attachment_feedback_loop_layout: images may use it */
   bool attachment_feedback_loop;
};

/* ---- surfaces (vkCreate*SurfaceKHR, vkDestroySurfaceKHR) ---------------- */

VkResult wsi_create_xcb_surface(const VkXcbSurfaceCreateInfoKHR *info, VkSurfaceKHR *surface);
VkResult wsi_create_xlib_surface(const VkXlibSurfaceCreateInfoKHR *info, VkSurfaceKHR *surface);
VkResult wsi_create_wayland_surface(const VkWaylandSurfaceCreateInfoKHR *info,
                                    VkSurfaceKHR *surface);
VkResult wsi_create_headless_surface(const VkHeadlessSurfaceCreateInfoEXT *info,
                                     VkSurfaceKHR *surface);
void wsi_destroy_surface(VkSurfaceKHR surface);

/* ---- surface queries ------------------------------------------------------- */

VkResult wsi_get_surface_support(struct wsi_device *wsi, uint32_t family, VkSurfaceKHR surface,
                                 VkBool32 *supported);
bool wsi_xcb_presentation_support(struct wsi_device *wsi, xcb_connection_t *connection,
                                  xcb_visualid_t visual);
bool wsi_wayland_presentation_support(struct wsi_device *wsi, struct wl_display *display);
VkResult wsi_get_surface_capabilities2(struct wsi_device *wsi,
                                       const VkPhysicalDeviceSurfaceInfo2KHR *info,
                                       VkSurfaceCapabilities2KHR *caps);
VkResult wsi_get_surface_formats2(struct wsi_device *wsi,
                                  const VkPhysicalDeviceSurfaceInfo2KHR *info, uint32_t *count,
                                  VkSurfaceFormat2KHR *formats);
VkResult wsi_get_surface_present_modes(struct wsi_device *wsi,
                                       const VkPhysicalDeviceSurfaceInfo2KHR *info,
                                       uint32_t *count, VkPresentModeKHR *modes);
VkResult wsi_get_present_rectangles(struct wsi_device *wsi, VkSurfaceKHR surface, uint32_t *count,
                                    VkRect2D *rects);

/* ---- swapchains ------------------------------------------------------------ */

VkResult wsi_create_swapchain(struct wsi_device *wsi, VkDevice device,
                              const VkSwapchainCreateInfoKHR *info, VkSwapchainKHR *swapchain);
void wsi_destroy_swapchain(VkDevice device, VkSwapchainKHR swapchain);
VkResult wsi_get_swapchain_images(VkSwapchainKHR swapchain, uint32_t *count, VkImage *images);
VkResult wsi_acquire_next_image(VkDevice device, const VkAcquireNextImageInfoKHR *info,
                                uint32_t *index);
/* queue_family: of queue (the copy to the display server's buffer runs
 * there). */
VkResult wsi_queue_present(VkQueue queue, uint32_t queue_family, const VkPresentInfoKHR *info);
VkResult wsi_wait_for_present(VkDevice device, VkSwapchainKHR swapchain, uint64_t present_id,
                              uint64_t timeout);
VkResult wsi_release_images(VkDevice device, const VkReleaseSwapchainImagesInfoEXT *info);
