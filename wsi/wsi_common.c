/* SPDX-License-Identifier: MIT */
/*
 * Surfaces and swapchains, whatever the window system.
 *
 * An image's life: FREE -> vkAcquireNextImageKHR -> ACQUIRED ->
 * vkQueuePresentKHR (the copy into its buffer is submitted on the
 * application's queue) -> QUEUED -> the present thread waits for the copy
 * and hands the buffer to the display server -> DISPLAYED -> the server
 * releases it -> FREE.  The present thread paces FIFO by the server's
 * completion events; MAILBOX presents the newest queued image and frees the
 * older ones; IMMEDIATE presents at once.
 */
#include "wsi_private.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util_outarray.h"

/* ---- surfaces ---------------------------------------------------------------- */

static VkResult
surface_new(size_t size, VkIcdWsiPlatform platform, const void *fields, size_t fields_size,
            VkSurfaceKHR *surface)
{
   VkIcdSurfaceBase *s = calloc(1, size);
   if (!s)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   if (fields_size)
      memcpy((char *)s + sizeof(*s), fields, fields_size);
   s->platform = platform;
   *surface = (VkSurfaceKHR)(uintptr_t)s;
   return VK_SUCCESS;
}

VkResult
wsi_create_xcb_surface(const VkXcbSurfaceCreateInfoKHR *info, VkSurfaceKHR *surface)
{
   VkIcdSurfaceXcb s = {.connection = info->connection, .window = info->window};
   return surface_new(sizeof(s), VK_ICD_WSI_PLATFORM_XCB, (char *)&s + sizeof(s.base),
                      sizeof(s) - sizeof(s.base), surface);
}

VkResult
wsi_create_xlib_surface(const VkXlibSurfaceCreateInfoKHR *info, VkSurfaceKHR *surface)
{
   VkIcdSurfaceXlib s = {.dpy = info->dpy, .window = info->window};
   return surface_new(sizeof(s), VK_ICD_WSI_PLATFORM_XLIB, (char *)&s + sizeof(s.base),
                      sizeof(s) - sizeof(s.base), surface);
}

VkResult
wsi_create_wayland_surface(const VkWaylandSurfaceCreateInfoKHR *info, VkSurfaceKHR *surface)
{
   VkIcdSurfaceWayland s = {.display = info->display, .surface = info->surface};
   return surface_new(sizeof(s), VK_ICD_WSI_PLATFORM_WAYLAND, (char *)&s + sizeof(s.base),
                      sizeof(s) - sizeof(s.base), surface);
}

VkResult
wsi_create_headless_surface(const VkHeadlessSurfaceCreateInfoEXT *info, VkSurfaceKHR *surface)
{
   return surface_new(sizeof(VkIcdSurfaceHeadless), VK_ICD_WSI_PLATFORM_HEADLESS, NULL, 0,
                      surface);
}

void
wsi_destroy_surface(VkSurfaceKHR surface)
{
   free((void *)(uintptr_t)surface);
}

static VkIcdSurfaceBase *
surface_of(VkSurfaceKHR surface)
{
   return (VkIcdSurfaceBase *)(uintptr_t)surface;
}

static bool
is_x11(const VkIcdSurfaceBase *s)
{
   return s->platform == VK_ICD_WSI_PLATFORM_XCB || s->platform == VK_ICD_WSI_PLATFORM_XLIB;
}

/* ---- surface queries --------------------------------------------------------- */

VkResult
wsi_get_surface_support(struct wsi_device *wsi, uint32_t family, VkSurfaceKHR surface,
                        VkBool32 *supported)
{
   VkIcdSurfaceBase *s = surface_of(surface);
   bool ok;
   switch ((int)s->platform) {
   case VK_ICD_WSI_PLATFORM_XCB:
   case VK_ICD_WSI_PLATFORM_XLIB:
      ok = wsi_x11_surface_supported(s);
      break;
   case VK_ICD_WSI_PLATFORM_WAYLAND:
      ok = wsi_wayland_surface_supported(s);
      break;
   case VK_ICD_WSI_PLATFORM_HEADLESS:
      ok = true;
      break;
   default:
      ok = false;
      break;
   }
   /* every queue family can copy: presenting is a copy on the queue */
   *supported = ok && family < wsi->queue_family_count;
   return VK_SUCCESS;
}

bool
wsi_xcb_presentation_support(struct wsi_device *wsi, xcb_connection_t *connection,
                             xcb_visualid_t visual)
{
   return true;
}

bool
wsi_wayland_presentation_support(struct wsi_device *wsi, struct wl_display *display)
{
   return true;
}

static const VkPresentModeKHR x11_modes[] = {
   VK_PRESENT_MODE_IMMEDIATE_KHR, VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_FIFO_KHR,
   VK_PRESENT_MODE_FIFO_RELAXED_KHR,
};
static const VkPresentModeKHR wayland_modes[] = {
   VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_FIFO_KHR,
};
static const VkPresentModeKHR headless_modes[] = {
   VK_PRESENT_MODE_IMMEDIATE_KHR, VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_FIFO_KHR,
};

static const VkPresentModeKHR *
surface_modes(const VkIcdSurfaceBase *s, uint32_t *n)
{
   if (is_x11(s)) {
      *n = sizeof(x11_modes) / sizeof(x11_modes[0]);
      return x11_modes;
   }
   if (s->platform == VK_ICD_WSI_PLATFORM_WAYLAND) {
      *n = sizeof(wayland_modes) / sizeof(wayland_modes[0]);
      return wayland_modes;
   }
   *n = sizeof(headless_modes) / sizeof(headless_modes[0]);
   return headless_modes;
}

static bool
mode_supported(const VkIcdSurfaceBase *s, VkPresentModeKHR mode)
{
   uint32_t n;
   const VkPresentModeKHR *modes = surface_modes(s, &n);
   for (uint32_t i = 0; i < n; i++) {
      if (modes[i] == mode)
         return true;
   }
   return false;
}

VkResult
wsi_get_surface_capabilities2(struct wsi_device *wsi, const VkPhysicalDeviceSurfaceInfo2KHR *info,
                              VkSurfaceCapabilities2KHR *caps2)
{
   VkIcdSurfaceBase *s = surface_of(info->surface);
   VkSurfaceCapabilitiesKHR *caps = &caps2->surfaceCapabilities;
   caps->minImageCount = 2;
   caps->maxImageCount = WSI_MAX_IMAGES;
   caps->currentExtent = (VkExtent2D){UINT32_MAX, UINT32_MAX};
   caps->minImageExtent = (VkExtent2D){1, 1};
   caps->maxImageExtent = wsi->max_extent;
   caps->supportedCompositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR | VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR;
   if (is_x11(s)) {
      /* the window's size, and one image more: one the server shows, one
       * queued, one the application draws */
      VkResult r = wsi_x11_surface_extent(s, &caps->currentExtent);
      if (r != VK_SUCCESS)
         return r;
      caps->minImageExtent = caps->maxImageExtent = caps->currentExtent;
      caps->minImageCount = 3;
   } else if (s->platform == VK_ICD_WSI_PLATFORM_WAYLAND) {
      caps->supportedCompositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR |
                             VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR |
                             VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR;
   }
   caps->maxImageArrayLayers = 1;
   caps->supportedTransforms = VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR;
   caps->currentTransform = VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR;
   caps->supportedUsageFlags =
      VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
      VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_STORAGE_BIT |
      VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_INPUT_ATTACHMENT_BIT;
#ifdef VK_EXT_attachment_feedback_loop_layout
   if (wsi->attachment_feedback_loop)
      caps->supportedUsageFlags |= VK_IMAGE_USAGE_ATTACHMENT_FEEDBACK_LOOP_BIT_EXT;
#endif

   const VkSurfacePresentModeEXT *mode = NULL;
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_SURFACE_PRESENT_MODE_EXT)
         mode = (const VkSurfacePresentModeEXT *)c;
   }
   for (VkBaseOutStructure *c = caps2->pNext; c; c = c->pNext) {
      switch ((int)c->sType) {
      case VK_STRUCTURE_TYPE_SURFACE_PROTECTED_CAPABILITIES_KHR:
         ((VkSurfaceProtectedCapabilitiesKHR *)c)->supportsProtected = VK_FALSE;
         break;
      case VK_STRUCTURE_TYPE_SURFACE_PRESENT_MODE_COMPATIBILITY_EXT: {
         /* a swapchain made for several modes may switch between any of
          * the surface's at each present (VkSwapchainPresentModeInfoEXT);
          * the mode asked about comes first, so that it is there even in
          * a short array.  Without a mode asked about (which the spec
          * requires) the count is still given, as other drivers do. */
         VkSurfacePresentModeCompatibilityEXT *compat = (VkSurfacePresentModeCompatibilityEXT *)c;
         uint32_t n;
         const VkPresentModeKHR *modes = surface_modes(s, &n);
         if (mode && !mode_supported(s, mode->presentMode))
            n = 0;
         if (compat->pPresentModes) {
            uint32_t written = 0;
            if (mode && n && compat->presentModeCount)
               compat->pPresentModes[written++] = mode->presentMode;
            for (uint32_t i = 0; i < n && written < compat->presentModeCount; i++) {
               if (!mode || modes[i] != mode->presentMode)
                  compat->pPresentModes[written++] = modes[i];
            }
            n = written;
         }
         compat->presentModeCount = n;
         break;
      }
      case VK_STRUCTURE_TYPE_SURFACE_PRESENT_SCALING_CAPABILITIES_EXT: {
         VkSurfacePresentScalingCapabilitiesEXT *scaling =
            (VkSurfacePresentScalingCapabilitiesEXT *)c;
         scaling->supportedPresentScaling = 0;
         scaling->supportedPresentGravityX = 0;
         scaling->supportedPresentGravityY = 0;
         scaling->minScaledImageExtent = caps->minImageExtent;
         scaling->maxScaledImageExtent = caps->maxImageExtent;
         break;
      }
      default:
         break;
      }
   }
   return VK_SUCCESS;
}

VkResult
wsi_get_surface_formats2(struct wsi_device *wsi, const VkPhysicalDeviceSurfaceInfo2KHR *info,
                         uint32_t *count, VkSurfaceFormat2KHR *formats)
{
   /* 32-bit BGRX: what X11's depth-24 visuals and wl_shm's XRGB8888 hold */
   static const VkFormat supported[] = {VK_FORMAT_B8G8R8A8_SRGB, VK_FORMAT_B8G8R8A8_UNORM};
   const uint32_t n = sizeof(supported) / sizeof(supported[0]);
   struct util_outarray out;
   util_outarray_init(&out, formats, count);
   for (uint32_t i = 0; i < n; i++) {
      VkSurfaceFormat2KHR *f = UTIL_OUTARRAY_NEXT(&out, VkSurfaceFormat2KHR);
      if (!f)
         continue;
      f->surfaceFormat.format = supported[i];
      f->surfaceFormat.colorSpace = VK_COLOR_SPACE_SRGB_NONLINEAR_KHR;
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

VkResult
wsi_get_surface_present_modes(struct wsi_device *wsi, const VkPhysicalDeviceSurfaceInfo2KHR *info,
                              uint32_t *count, VkPresentModeKHR *modes)
{
   uint32_t n;
   const VkPresentModeKHR *supported = surface_modes(surface_of(info->surface), &n);
   struct util_outarray out;
   util_outarray_init(&out, modes, count);
   for (uint32_t i = 0; i < n; i++) {
      VkPresentModeKHR *m = UTIL_OUTARRAY_NEXT(&out, VkPresentModeKHR);
      if (m)
         *m = supported[i];
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

VkResult
wsi_get_present_rectangles(struct wsi_device *wsi, VkSurfaceKHR surface, uint32_t *count,
                           VkRect2D *rects)
{
   VkIcdSurfaceBase *s = surface_of(surface);
   VkRect2D rect = {{0, 0}, {UINT32_MAX, UINT32_MAX}};
   if (is_x11(s)) {
      VkResult r = wsi_x11_surface_extent(s, &rect.extent);
      if (r != VK_SUCCESS)
         return r;
   }
   struct util_outarray out;
   util_outarray_init(&out, rects, count);
   VkRect2D *r = UTIL_OUTARRAY_NEXT(&out, VkRect2D);
   if (r)
      *r = rect;
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

/* ---- the swapchain's images --------------------------------------------------- */

static uint32_t
memory_type(struct wsi_swapchain *sc, uint32_t bits, VkMemoryPropertyFlags want,
            VkMemoryPropertyFlags prefer)
{
   VkPhysicalDeviceMemoryProperties props;
   sc->wsi->vk.GetPhysicalDeviceMemoryProperties(sc->wsi->physical_device, &props);
   uint32_t fallback = UINT32_MAX;
   for (uint32_t i = 0; i < props.memoryTypeCount; i++) {
      VkMemoryPropertyFlags flags = props.memoryTypes[i].propertyFlags;
      if (!(bits & (1u << i)) || (flags & want) != want)
         continue;
      if ((flags & prefer) == prefer)
         return i;
      if (fallback == UINT32_MAX)
         fallback = i;
   }
   return fallback;
}

/* The shared memory's type: host visible and coherent, cached preferred. */
static uint32_t
shared_memory_type(struct wsi_swapchain *sc, uint32_t bits)
{
   return memory_type(sc, bits,
                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                      VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
}

/* The timeline semaphore an image's copies signal (copy_value each). */
static VkResult
image_timeline(struct wsi_swapchain *sc, struct wsi_image *img)
{
   const VkSemaphoreTypeCreateInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
   };
   const VkSemaphoreCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = &timeline,
   };
   return sc->wsi->vk.CreateSemaphore(sc->device, &info, NULL, &img->copies);
}

/* GPUD_WSI_LINEAR=1: the image itself is linear and lives in the shared
 * memory, and the display server reads it where the application rendered
 * (no copy). VK_ERROR_FORMAT_NOT_SUPPORTED when the driver cannot make such
 * an image with packed rows: the swapchain is made the usual way then. */
static VkResult
linear_image_init(struct wsi_swapchain *sc, const VkImageCreateInfo *image_info,
                  struct wsi_image *img)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   VkImageFormatProperties props;
   VkResult r = vk->GetPhysicalDeviceImageFormatProperties(
      sc->wsi->physical_device, image_info->format, image_info->imageType, image_info->tiling,
      image_info->usage, image_info->flags, &props);
   if (r != VK_SUCCESS || props.maxExtent.width < image_info->extent.width ||
       props.maxExtent.height < image_info->extent.height)
      return VK_ERROR_FORMAT_NOT_SUPPORTED;
   r = vk->CreateImage(sc->device, image_info, NULL, &img->image);
   if (r != VK_SUCCESS)
      return r;
   const VkImageSubresource sub = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0};
   VkSubresourceLayout layout;
   vk->GetImageSubresourceLayout(sc->device, img->image, &sub, &layout);
   if (layout.offset != 0 || layout.rowPitch != sc->stride)
      return VK_ERROR_FORMAT_NOT_SUPPORTED;
   VkMemoryRequirements req;
   vk->GetImageMemoryRequirements(sc->device, img->image, &req);
   uint32_t type = shared_memory_type(sc, req.memoryTypeBits);
   if (type == UINT32_MAX)
      return VK_ERROR_FORMAT_NOT_SUPPORTED;
   img->buffer_size = req.size;
   r = sc->wsi->services.allocate_shared_memory(sc->device, type, req.size, &img->memory,
                                                &img->fd, &img->map);
   if (r == VK_SUCCESS)
      r = vk->BindImageMemory(sc->device, img->image, img->memory, 0);
   if (r != VK_SUCCESS)
      return r;
   return image_timeline(sc, img);
}

static VkResult
image_init(struct wsi_swapchain *sc, const VkSwapchainCreateInfoKHR *info, struct wsi_image *img)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   VkDevice device = sc->device;
   img->fd = -1;

   /* a format list of a mutable-format swapchain goes to its images */
   const void *chain = NULL;
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_IMAGE_FORMAT_LIST_CREATE_INFO)
         chain = c;
   }
   VkImageFormatListCreateInfo list;
   if (chain) {
      list = *(const VkImageFormatListCreateInfo *)chain;
      list.pNext = NULL;
      chain = &list;
   }
   VkImageCreateFlags flags = 0;
   if (info->flags & VK_SWAPCHAIN_CREATE_MUTABLE_FORMAT_BIT_KHR)
      flags |= VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT | VK_IMAGE_CREATE_EXTENDED_USAGE_BIT;
   VkImageCreateInfo image_info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .pNext = chain,
      .flags = flags,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = info->imageFormat,
      .extent = {info->imageExtent.width, info->imageExtent.height, 1},
      .mipLevels = 1,
      .arrayLayers = info->imageArrayLayers,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = info->imageUsage | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
      .sharingMode = info->imageSharingMode,
      .queueFamilyIndexCount = info->queueFamilyIndexCount,
      .pQueueFamilyIndices = info->pQueueFamilyIndices,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
   };
   if (sc->linear) {
      image_info.tiling = VK_IMAGE_TILING_LINEAR;
      image_info.usage = info->imageUsage;
      return linear_image_init(sc, &image_info, img);
   }
   VkResult r = vk->CreateImage(device, &image_info, NULL, &img->image);
   if (r != VK_SUCCESS)
      return r;
   VkMemoryRequirements req;
   vk->GetImageMemoryRequirements(device, img->image, &req);
   VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = memory_type(sc, req.memoryTypeBits, 0,
                                     VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
   };
   if (alloc.memoryTypeIndex == UINT32_MAX)
      return VK_ERROR_OUT_OF_DEVICE_MEMORY;
   r = vk->AllocateMemory(device, &alloc, NULL, &img->memory);
   if (r == VK_SUCCESS)
      r = vk->BindImageMemory(device, img->image, img->memory, 0);
   if (r != VK_SUCCESS)
      return r;

   /* the buffer the display server reads: rows of the image, packed */
   img->buffer_size = (VkDeviceSize)sc->stride * info->imageExtent.height;
   const VkBufferCreateInfo buffer_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = img->buffer_size,
      .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   r = vk->CreateBuffer(device, &buffer_info, NULL, &img->buffer);
   if (r != VK_SUCCESS)
      return r;
   vk->GetBufferMemoryRequirements(device, img->buffer, &req);
   uint32_t type = shared_memory_type(sc, req.memoryTypeBits);
   if (type == UINT32_MAX)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   r = sc->wsi->services.allocate_shared_memory(device, type, req.size, &img->buffer_memory,
                                                &img->fd, &img->map);
   if (r == VK_SUCCESS)
      r = vk->BindBufferMemory(device, img->buffer, img->buffer_memory, 0);
   if (r != VK_SUCCESS)
      return r;
   return image_timeline(sc, img);
}

static void
image_finish(struct wsi_swapchain *sc, struct wsi_image *img)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   VkDevice device = sc->device;
   if (img->copies)
      vk->DestroySemaphore(device, img->copies, NULL);
   if (img->buffer)
      vk->DestroyBuffer(device, img->buffer, NULL);
   if (img->buffer_memory)
      vk->FreeMemory(device, img->buffer_memory, NULL);
   if (img->image)
      vk->DestroyImage(device, img->image, NULL);
   if (img->memory)
      vk->FreeMemory(device, img->memory, NULL);
   if (img->fd >= 0)
      close(img->fd);
   img->fd = -1;
}

/* The copy of image into its buffer on a queue of family, recorded once. */
static VkResult
copy_command(struct wsi_swapchain *sc, uint32_t family, struct wsi_image *img,
             VkCommandBuffer *cmd)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   if (family >= WSI_MAX_FAMILIES)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   if (img->copy[family]) {
      *cmd = img->copy[family];
      return VK_SUCCESS;
   }
   if (!sc->pools[family]) {
      const VkCommandPoolCreateInfo pool_info = {
         .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
         .queueFamilyIndex = family,
      };
      VkResult r = vk->CreateCommandPool(sc->device, &pool_info, NULL, &sc->pools[family]);
      if (r != VK_SUCCESS)
         return r;
   }
   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = sc->pools[family],
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   VkResult r = vk->AllocateCommandBuffers(sc->device, &alloc, cmd);
   if (r != VK_SUCCESS)
      return r;
   const VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
   vk->BeginCommandBuffer(*cmd, &begin);
   const VkImageSubresourceRange range = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
   VkImageMemoryBarrier to_copy = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .srcAccessMask = 0,
      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
      .oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = img->image,
      .subresourceRange = range,
   };
   if (sc->linear) {
      /* the rendering, made visible to the host (the display server) */
      const VkMemoryBarrier to_host = {
         .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
         .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
         .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
      };
      vk->CmdPipelineBarrier(*cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &to_host, 0, NULL, 0, NULL);
      r = vk->EndCommandBuffer(*cmd);
      if (r == VK_SUCCESS)
         img->copy[family] = *cmd;
      return r;
   }
   vk->CmdPipelineBarrier(*cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                          0, NULL, 0, NULL, 1, &to_copy);
   const VkBufferImageCopy region = {
      .bufferOffset = 0,
      .bufferRowLength = sc->stride / 4,
      .bufferImageHeight = sc->extent.height,
      .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
      .imageExtent = {sc->extent.width, sc->extent.height, 1},
   };
   vk->CmdCopyImageToBuffer(*cmd, img->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, img->buffer, 1,
                            &region);
   VkImageMemoryBarrier back = to_copy;
   back.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
   back.dstAccessMask = 0;
   back.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
   back.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
   const VkBufferMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .buffer = img->buffer,
      .offset = 0,
      .size = VK_WHOLE_SIZE,
   };
   vk->CmdPipelineBarrier(*cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0,
                          NULL, 1, &to_host, 1, &back);
   r = vk->EndCommandBuffer(*cmd);
   if (r == VK_SUCCESS)
      img->copy[family] = *cmd;
   return r;
}

/* ---- headless -------------------------------------------------------------------- */

static VkResult
headless_init(struct wsi_swapchain *sc)
{
   return VK_SUCCESS;
}

static void
headless_finish(struct wsi_swapchain *sc)
{
}

static VkResult
headless_present(struct wsi_swapchain *sc, struct wsi_image *image)
{
   /* nobody shows it: shown at once */
   pthread_mutex_lock(&sc->mutex);
   wsi_present_completed(sc, image->serial);
   wsi_image_released(sc, image);
   pthread_mutex_unlock(&sc->mutex);
   return VK_SUCCESS;
}

static VkResult
headless_wait_events(struct wsi_swapchain *sc, uint64_t timeout_ns)
{
   struct pollfd pfd = {.fd = sc->wake_fd, .events = POLLIN};
   if (poll(&pfd, 1, (int)(timeout_ns / 1000000)) > 0) {
      uint64_t v;
      if (read(sc->wake_fd, &v, sizeof(v)) < 0) {
         /* nothing to drain */
      }
   }
   return VK_SUCCESS;
}

static bool
headless_ready(struct wsi_swapchain *sc)
{
   return true;
}

static const struct wsi_platform headless_platform = {
   .init = headless_init,
   .finish = headless_finish,
   .present = headless_present,
   .wait_events = headless_wait_events,
   .ready = headless_ready,
};

/* ---- the present thread ----------------------------------------------------------- */

/* Waits for the copy into image's buffer; false when the device is lost.
 * Each image's copies signal its own timeline semaphore (presents may come
 * from several queues): nothing to reset, so a present costs this one
 * wait. */
static bool
wait_copy(struct wsi_swapchain *sc, struct wsi_image *img)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   const VkSemaphoreWaitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &img->copies,
      .pValues = &img->copy_value,
   };
   for (;;) {
      VkResult r = vk->WaitSemaphores(sc->device, &info, 100000000ull);
      if (r == VK_SUCCESS)
         return true;
      if (r != VK_TIMEOUT)
         return false;
      pthread_mutex_lock(&sc->mutex);
      bool stop = sc->stop;
      pthread_mutex_unlock(&sc->mutex);
      if (stop)
         return false;
   }
}

static bool
anything_displayed(const struct wsi_swapchain *sc)
{
   for (uint32_t i = 0; i < sc->n_images; i++) {
      if (sc->images[i].state == WSI_IMAGE_DISPLAYED)
         return true;
   }
   return false;
}

static void *
present_thread(void *data)
{
   struct wsi_swapchain *sc = data;
   pthread_mutex_lock(&sc->mutex);
   while (!sc->stop) {
      if (sc->status < 0 && sc->status != VK_ERROR_OUT_OF_DATE_KHR) {
         /* surface or device lost: nothing will be shown or come back;
          * every image is free (acquire and present say why) */
         for (uint32_t i = 0; i < sc->n_images; i++) {
            if (sc->images[i].state != WSI_IMAGE_ACQUIRED)
               sc->images[i].state = WSI_IMAGE_FREE;
         }
         sc->n_queued = 0;
         sc->completed_serial = sc->serial;
         pthread_cond_broadcast(&sc->cond);
         pthread_cond_wait(&sc->cond, &sc->mutex);
         continue;
      }
      if (sc->n_queued && sc->platform->ready(sc)) {
         uint32_t index;
         if (sc->mode == VK_PRESENT_MODE_MAILBOX_KHR) {
            /* the newest; the older ones are never shown. The queue is
             * taken whole first: presents made while this thread waits
             * below queue up again for the next round. */
            uint32_t taken[WSI_MAX_IMAGES];
            uint32_t n = sc->n_queued;
            memcpy(taken, sc->queue, sizeof(taken[0]) * n);
            sc->n_queued = 0;
            index = taken[n - 1];
            for (uint32_t i = 0; i + 1 < n; i++) {
               struct wsi_image *skipped = &sc->images[taken[i]];
               if (!skipped->copied) {
                  pthread_mutex_unlock(&sc->mutex);
                  bool ok = wait_copy(sc, skipped);
                  pthread_mutex_lock(&sc->mutex);
                  if (!ok)
                     wsi_swapchain_set_status(sc, VK_ERROR_DEVICE_LOST);
               }
               skipped->state = WSI_IMAGE_FREE;
               pthread_cond_broadcast(&sc->cond);
            }
         } else {
            index = sc->queue[0];
            memmove(sc->queue, sc->queue + 1, sizeof(sc->queue[0]) * --sc->n_queued);
         }
         struct wsi_image *img = &sc->images[index];
         img->serial = ++sc->serial;
         img->serial_id = img->present_id;
         bool copied = img->copied;
         pthread_mutex_unlock(&sc->mutex);
         VkResult r = copied || wait_copy(sc, img) ? VK_SUCCESS : VK_ERROR_DEVICE_LOST;
         if (r == VK_SUCCESS) {
            pthread_mutex_lock(&sc->mutex);
            img->state = WSI_IMAGE_DISPLAYED;
            pthread_mutex_unlock(&sc->mutex);
            r = sc->platform->present(sc, img);
         }
         pthread_mutex_lock(&sc->mutex);
         if (r != VK_SUCCESS) {
            wsi_swapchain_set_status(sc, r);
            img->state = WSI_IMAGE_FREE;
         }
         pthread_cond_broadcast(&sc->cond);
         continue;
      }
      if (sc->n_queued && !sc->images[sc->queue[0]].copied) {
         /* Not to be shown yet (FIFO): wait for its copy now all the same.
          * The wait sends the copy's submit, which present_one() only
          * queued: one message to the daemon and one back a present. */
         struct wsi_image *img = &sc->images[sc->queue[0]];
         pthread_mutex_unlock(&sc->mutex);
         bool ok = wait_copy(sc, img);
         pthread_mutex_lock(&sc->mutex);
         if (!ok)
            wsi_swapchain_set_status(sc, VK_ERROR_DEVICE_LOST);
         img->copied = true;
         continue;
      }
      /* nothing queued, shown or waiting to be shown: nothing to wait for
       * (an image may come back before its present completes) */
      if (!sc->n_queued && !anything_displayed(sc) && sc->completed_serial >= sc->serial) {
         pthread_cond_wait(&sc->cond, &sc->mutex);
         continue;
      }
      pthread_mutex_unlock(&sc->mutex);
      VkResult r = sc->platform->wait_events(sc, 50000000ull);
      pthread_mutex_lock(&sc->mutex);
      if (r != VK_SUCCESS)
         wsi_swapchain_set_status(sc, r);
   }
   pthread_mutex_unlock(&sc->mutex);
   return NULL;
}

/* ---- swapchains ---------------------------------------------------------------- */

static struct wsi_swapchain *
swapchain_of(VkSwapchainKHR swapchain)
{
   return (struct wsi_swapchain *)(uintptr_t)swapchain;
}

static void
swapchain_free(struct wsi_swapchain *sc)
{
   if (sc->thread_started) {
      pthread_mutex_lock(&sc->mutex);
      sc->stop = true;
      pthread_cond_broadcast(&sc->cond);
      pthread_mutex_unlock(&sc->mutex);
      wsi_swapchain_wake(sc);
      pthread_join(sc->thread, NULL);
   }
   if (sc->platform_data)
      sc->platform->finish(sc);
   /* copies in flight end before their images go (a lost device ends
    * them too; one whose waits never come is given 5 s) */
   for (uint32_t i = 0; i < sc->n_images; i++) {
      struct wsi_image *img = &sc->images[i];
      if (!img->copies || !img->copy_value)
         continue;
      const VkSemaphoreWaitInfo wait = {
         .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
         .semaphoreCount = 1,
         .pSemaphores = &img->copies,
         .pValues = &img->copy_value,
      };
      sc->wsi->vk.WaitSemaphores(sc->device, &wait, 5000000000ull);
   }
   for (uint32_t i = 0; i < sc->n_images; i++)
      image_finish(sc, &sc->images[i]);
   for (uint32_t f = 0; f < WSI_MAX_FAMILIES; f++) {
      if (sc->pools[f])
         sc->wsi->vk.DestroyCommandPool(sc->device, sc->pools[f], NULL);
   }
   if (sc->wake_fd >= 0)
      close(sc->wake_fd);
   pthread_cond_destroy(&sc->cond);
   pthread_mutex_destroy(&sc->mutex);
   free(sc);
}

VkResult
wsi_create_swapchain(struct wsi_device *wsi, VkDevice device,
                     const VkSwapchainCreateInfoKHR *info, VkSwapchainKHR *swapchain)
{
   VkIcdSurfaceBase *surface = surface_of(info->surface);
   if (info->minImageCount > WSI_MAX_IMAGES || info->imageArrayLayers != 1 ||
       !mode_supported(surface, info->presentMode))
      return VK_ERROR_INITIALIZATION_FAILED;
   if (info->oldSwapchain) {
      /* it presents what it has, but acquires nothing more */
      struct wsi_swapchain *old = swapchain_of(info->oldSwapchain);
      pthread_mutex_lock(&old->mutex);
      wsi_swapchain_set_status(old, VK_ERROR_OUT_OF_DATE_KHR);
      pthread_mutex_unlock(&old->mutex);
   }

   struct wsi_swapchain *sc = calloc(1, sizeof(*sc));
   if (!sc)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   pthread_mutex_init(&sc->mutex, NULL);
   pthread_condattr_t attr;
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&sc->cond, &attr);
   pthread_condattr_destroy(&attr);
   sc->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
   sc->wsi = wsi;
   sc->device = device;
   sc->surface = surface;
   sc->extent = info->imageExtent;
   sc->format = info->imageFormat;
   sc->mode = info->presentMode;
   sc->composite_alpha = info->compositeAlpha;
   sc->stride = info->imageExtent.width * 4;
   sc->n_images = info->minImageCount < 2 ? 2 : info->minImageCount;
   switch ((int)surface->platform) {
   case VK_ICD_WSI_PLATFORM_XCB:
   case VK_ICD_WSI_PLATFORM_XLIB:
      sc->platform = &wsi_x11_platform;
      break;
   case VK_ICD_WSI_PLATFORM_WAYLAND:
      sc->platform = &wsi_wayland_platform;
      break;
   default:
      sc->platform = &headless_platform;
      break;
   }
   VkResult r = sc->wake_fd >= 0 ? VK_SUCCESS : VK_ERROR_OUT_OF_HOST_MEMORY;
   for (uint32_t i = 0; i < sc->n_images; i++)
      sc->images[i].fd = -1;
   const char *linear = getenv("GPUD_WSI_LINEAR");
   sc->linear = linear && strcmp(linear, "1") == 0;
   for (uint32_t i = 0; r == VK_SUCCESS && i < sc->n_images; i++) {
      r = image_init(sc, info, &sc->images[i]);
      if (r == VK_ERROR_FORMAT_NOT_SUPPORTED && sc->linear) {
         /* no linear image the display server can read: copies, then */
         for (uint32_t j = 0; j <= i; j++) {
            image_finish(sc, &sc->images[j]);
            memset(&sc->images[j], 0, sizeof(sc->images[j]));
            sc->images[j].fd = -1;
         }
         sc->linear = false;
         i = UINT32_MAX; /* from the first again */
         r = VK_SUCCESS;
      }
   }
   if (r == VK_SUCCESS)
      r = sc->platform->init(sc);
   if (r == VK_SUCCESS) {
      if (pthread_create(&sc->thread, NULL, present_thread, sc) == 0)
         sc->thread_started = true;
      else
         r = VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   if (r != VK_SUCCESS) {
      swapchain_free(sc);
      return r;
   }
   *swapchain = (VkSwapchainKHR)(uintptr_t)sc;
   return VK_SUCCESS;
}

void
wsi_destroy_swapchain(VkDevice device, VkSwapchainKHR swapchain)
{
   if (swapchain)
      swapchain_free(swapchain_of(swapchain));
}

VkResult
wsi_get_swapchain_images(VkSwapchainKHR swapchain, uint32_t *count, VkImage *images)
{
   struct wsi_swapchain *sc = swapchain_of(swapchain);
   struct util_outarray out;
   util_outarray_init(&out, images, count);
   for (uint32_t i = 0; i < sc->n_images; i++) {
      VkImage *img = UTIL_OUTARRAY_NEXT(&out, VkImage);
      if (img)
         *img = sc->images[i].image;
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

static void
deadline_of(uint64_t timeout, struct timespec *ts)
{
   const uint64_t now = util_now_ns();
   uint64_t ns = timeout > UINT64_MAX - now ? UINT64_MAX : now + timeout;
   ts->tv_sec = (time_t)(ns / 1000000000ull);
   ts->tv_nsec = (long)(ns % 1000000000ull);
}

VkResult
wsi_acquire_next_image(VkDevice device, const VkAcquireNextImageInfoKHR *info, uint32_t *index)
{
   struct wsi_swapchain *sc = swapchain_of(info->swapchain);
   struct timespec deadline;
   deadline_of(info->timeout, &deadline);
   pthread_mutex_lock(&sc->mutex);
   VkResult r = VK_SUCCESS;
   for (;;) {
      if (sc->status < 0) {
         r = sc->status;
         break;
      }
      uint32_t i = 0;
      while (i < sc->n_images && sc->images[i].state != WSI_IMAGE_FREE)
         i++;
      if (i < sc->n_images) {
         sc->images[i].state = WSI_IMAGE_ACQUIRED;
         *index = i;
         r = sc->status;
         break;
      }
      if (info->timeout == 0) {
         r = VK_NOT_READY;
         break;
      }
      if (info->timeout == UINT64_MAX) {
         pthread_cond_wait(&sc->cond, &sc->mutex);
      } else if (pthread_cond_timedwait(&sc->cond, &sc->mutex, &deadline) == ETIMEDOUT) {
         r = VK_TIMEOUT;
         break;
      }
   }
   pthread_mutex_unlock(&sc->mutex);
   if (r == VK_SUCCESS || r == VK_SUBOPTIMAL_KHR) {
      /* the image is free already: its semaphore and fence may signal */
      VkResult s = sc->wsi->services.signal(device, info->semaphore, info->fence);
      if (s != VK_SUCCESS)
         r = s;
   }
   return r;
}

/* The present's wait semaphores (waits may be NULL: none) and a present
 * fence, by a submit of cmd (or of nothing) that signals timeline_semaphore
 * to value (0: nothing). */
static VkResult
present_submit(const struct wsi_dispatch *vk, VkQueue queue, const VkPresentInfoKHR *waits,
               VkCommandBuffer cmd, VkSemaphore timeline_semaphore, uint64_t value,
               VkFence fence)
{
   uint32_t n_waits = waits ? waits->waitSemaphoreCount : 0;
   VkPipelineStageFlags stack[16];
   VkPipelineStageFlags *stages = n_waits <= 16 ? stack : malloc(sizeof(*stages) * n_waits);
   if (!stages)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   for (uint32_t i = 0; i < n_waits; i++)
      stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
   const VkTimelineSemaphoreSubmitInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &value,
   };
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = value ? &timeline : NULL,
      .waitSemaphoreCount = n_waits,
      .pWaitSemaphores = n_waits ? waits->pWaitSemaphores : NULL,
      .pWaitDstStageMask = n_waits ? stages : NULL,
      .commandBufferCount = cmd ? 1 : 0,
      .pCommandBuffers = cmd ? &cmd : NULL,
      .signalSemaphoreCount = value ? 1 : 0,
      .pSignalSemaphores = value ? &timeline_semaphore : NULL,
   };
   VkResult r = VK_SUCCESS;
   if (submit.waitSemaphoreCount || cmd || fence)
      r = vk->QueueSubmit(queue, 1, &submit, fence);
   if (stages != stack)
      free(stages);
   return r;
}

/* One swapchain's part of a present: waits (NULL when another part took
 * them) are the present's semaphores; fence, a VkSwapchainPresentFenceInfoEXT
 * fence; mode, a VkSwapchainPresentModeInfoEXT mode or NULL. *waited: the
 * waits went with this part's copy. */
static VkResult
present_one(VkQueue queue, uint32_t family, struct wsi_swapchain *sc, uint32_t index,
            uint64_t present_id, const VkPresentInfoKHR *waits, VkFence fence,
            const VkPresentModeKHR *mode, bool *waited)
{
   const struct wsi_dispatch *vk = &sc->wsi->vk;
   pthread_mutex_lock(&sc->mutex);
   VkResult status = sc->status;
   pthread_mutex_unlock(&sc->mutex);
   VkCommandBuffer cmd = VK_NULL_HANDLE;
   VkResult r = index >= sc->n_images ? VK_ERROR_OUT_OF_DATE_KHR
                : status < 0 && status != VK_ERROR_OUT_OF_DATE_KHR ? status
                : copy_command(sc, family, &sc->images[index], &cmd);
   if (r != VK_SUCCESS) {
      /* not presented: its fence still signals (the waits go with the
       * next part's copy, or on their own at the end) */
      VkResult s = present_submit(vk, queue, NULL, VK_NULL_HANDLE, VK_NULL_HANDLE, 0, fence);
      return s == VK_ERROR_DEVICE_LOST ? s : r;
   }
   struct wsi_image *img = &sc->images[index];
   /* the image is the application's until it is queued below */
   const uint64_t value = img->copy_value + 1;
   r = present_submit(vk, queue, waits, cmd, img->copies, value, fence);
   if (r != VK_SUCCESS)
      return r;
   *waited = true;

   pthread_mutex_lock(&sc->mutex);
   if (mode)
      sc->mode = *mode; /* one of those it was made for */
   img->state = WSI_IMAGE_QUEUED;
   img->copied = false;
   img->copy_value = value;
   img->present_id = present_id;
   sc->queue[sc->n_queued++] = index;
   status = sc->status;
   pthread_cond_broadcast(&sc->cond);
   pthread_mutex_unlock(&sc->mutex);
   wsi_swapchain_wake(sc);
   return status;
}

VkResult
wsi_queue_present(VkQueue queue, uint32_t family, const VkPresentInfoKHR *info)
{
   const VkPresentIdKHR *ids = NULL;
   const VkSwapchainPresentFenceInfoEXT *fences = NULL;
   const VkSwapchainPresentModeInfoEXT *modes = NULL;
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_PRESENT_ID_KHR)
         ids = (const VkPresentIdKHR *)c;
      else if (c->sType == VK_STRUCTURE_TYPE_SWAPCHAIN_PRESENT_FENCE_INFO_EXT)
         fences = (const VkSwapchainPresentFenceInfoEXT *)c;
      else if (c->sType == VK_STRUCTURE_TYPE_SWAPCHAIN_PRESENT_MODE_INFO_EXT)
         modes = (const VkSwapchainPresentModeInfoEXT *)c;
   }
   VkResult result = VK_SUCCESS;
   bool waited = false;
   const struct wsi_dispatch *vk = NULL;
   for (uint32_t i = 0; i < info->swapchainCount; i++) {
      vk = &swapchain_of(info->pSwapchains[i])->wsi->vk;
      uint64_t id = ids && ids->pPresentIds && i < ids->swapchainCount ? ids->pPresentIds[i] : 0;
      VkFence fence = fences && i < fences->swapchainCount ? fences->pFences[i] : VK_NULL_HANDLE;
      const VkPresentModeKHR *mode =
         modes && i < modes->swapchainCount ? &modes->pPresentModes[i] : NULL;
      VkResult r = present_one(queue, family, swapchain_of(info->pSwapchains[i]),
                               info->pImageIndices[i], id, waited ? NULL : info, fence, mode,
                               &waited);
      if (info->pResults)
         info->pResults[i] = r;
      if (r < 0 && (result >= 0 || r == VK_ERROR_DEVICE_LOST))
         result = r;
      else if (r == VK_SUBOPTIMAL_KHR && result == VK_SUCCESS)
         result = r;
   }
   if (!waited && vk && info->waitSemaphoreCount) {
      /* nothing was presented: the waits happen all the same, as the spec
       * wants of a present that failed */
      VkResult s = present_submit(vk, queue, info, VK_NULL_HANDLE, VK_NULL_HANDLE, 0,
                                  VK_NULL_HANDLE);
      if (s == VK_ERROR_DEVICE_LOST)
         result = s;
   }
   return result;
}

VkResult
wsi_wait_for_present(VkDevice device, VkSwapchainKHR swapchain, uint64_t present_id,
                     uint64_t timeout)
{
   struct wsi_swapchain *sc = swapchain_of(swapchain);
   struct timespec deadline;
   deadline_of(timeout, &deadline);
   VkResult r = VK_SUCCESS;
   pthread_mutex_lock(&sc->mutex);
   while (sc->completed_id < present_id) {
      if (sc->status < 0) {
         r = sc->status;
         break;
      }
      if (timeout == 0 || (timeout != UINT64_MAX &&
                           pthread_cond_timedwait(&sc->cond, &sc->mutex, &deadline) == ETIMEDOUT)) {
         r = VK_TIMEOUT;
         break;
      }
      if (timeout == UINT64_MAX)
         pthread_cond_wait(&sc->cond, &sc->mutex);
   }
   pthread_mutex_unlock(&sc->mutex);
   return r;
}

VkResult
wsi_release_images(VkDevice device, const VkReleaseSwapchainImagesInfoEXT *info)
{
   struct wsi_swapchain *sc = swapchain_of(info->swapchain);
   pthread_mutex_lock(&sc->mutex);
   for (uint32_t i = 0; i < info->imageIndexCount; i++) {
      uint32_t index = info->pImageIndices[i];
      if (index < sc->n_images && sc->images[index].state == WSI_IMAGE_ACQUIRED)
         sc->images[index].state = WSI_IMAGE_FREE;
   }
   pthread_cond_broadcast(&sc->cond);
   pthread_mutex_unlock(&sc->mutex);
   return VK_SUCCESS;
}
