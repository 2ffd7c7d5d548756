/* SPDX-License-Identifier: MIT */
/*
 * Host image copies, the worker's side (icd/icd_hostcopy.c has the
 * application's): the worker makes a device's staging memfd, charged to
 * the client's memory limits, and hands it to the ICD
 * (vkGetHostCopyStagingGPUD); each region of a copy names an offset in it.
 * The worker sizes every region itself, as the ICD did
 * (protocol/wire_hostcopy.h), from the format and layers the image was made
 * with, and the host driver sees only regions inside the staging memory;
 * a region outside it, or one that cannot be sized, breaks the protocol.
 */
#include "gpud_call.h"

#include <stdio.h>
#include <sys/mman.h>

#include "util_fd.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "wire_hostcopy.h"

/* The largest staging memory a device takes (the ICD's ICD_STAGING_MAX). */
#define STAGING_MAX (256ull << 20)

/* The heap host-visible memory comes from: what staging memory is charged
 * to, as an allocation of that much would be. */
static uint32_t
staging_heap(const struct daemon_host *host)
{
   for (uint32_t i = 0; i < host->memory.memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++) {
      if (host->memory.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
         return host->memory.memoryTypes[i].heapIndex;
   }
   return 0;
}

/* A device's staging memory, made by the worker (a sealed memfd both sides
 * map, in place of the last) and charged to the client's limits like
 * memory it allocated; past them the ICD hears VK_ERROR_OUT_OF_HOST_MEMORY. */
void
gpud_exec_vkGetHostCopyStagingGPUD(struct gpud_call *call,
                                   struct wire_args_vkGetHostCopyStagingGPUD *a)
{
   struct gpud_object *dev = call->device;
   *a->pFd = -1;
   if (!dev || !a->size || a->size > STAGING_MAX || a->size % 4096) {
      gpud_call_fail(call, "vkGetHostCopyStagingGPUD: a staging size the ICD never asks");
      return;
   }
   const uint32_t heap = staging_heap(call->ctx->host);
   a->ret = gpud_context_reserve_memory(call->ctx, heap, a->size);
   if (a->ret != VK_SUCCESS)
      return;
   int fd = -1;
   void *map = MAP_FAILED;
   if (util_memfd_create("gpud-host-copy", a->size, &fd) == 0)
      map = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED) {
      util_fd_close(&fd);
      gpud_context_release_memory(call->ctx, heap, a->size);
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   gpud_hostcopy_device_gone(call->ctx, dev);
   dev->map = map;
   dev->map_size = a->size;
   dev->staging_heap = heap;
   *a->pFd = fd; /* sent with the reply, then closed */
}

void
gpud_hostcopy_device_gone(struct gpud_context *ctx, struct gpud_object *dev)
{
   if (!dev->map)
      return;
   munmap(dev->map, dev->map_size);
   gpud_context_release_memory(ctx, dev->staging_heap, dev->map_size);
   dev->map = NULL;
   dev->map_size = 0;
}

#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD

/* The host's commands by the names of the registry gpud is built from. */
#ifdef VK_VERSION_1_4
#define HOST_COPY_MEMORY_TO_IMAGE CopyMemoryToImage
#define HOST_COPY_IMAGE_TO_MEMORY CopyImageToMemory
#define HOST_GET_SUBRESOURCE_LAYOUT2 GetImageSubresourceLayout2
#else
#define HOST_COPY_MEMORY_TO_IMAGE CopyMemoryToImageEXT
#define HOST_COPY_IMAGE_TO_MEMORY CopyImageToMemoryEXT
#define HOST_GET_SUBRESOURCE_LAYOUT2 GetImageSubresourceLayout2EXT
#endif

/* Whether a subresource's layers and level exist in the image, and a box
 * at offset of extent texels lies inside that level (up to the edge of its
 * last texel block, as compressed images' copies may reach). The host
 * driver copies on the CPU over what the region says. */
static bool
region_fits(const struct gpud_object *img, const VkImageSubresourceLayers *s,
            VkOffset3D offset, VkExtent3D extent)
{
   const uint32_t layers = wire_host_copy_layers(s, img->image_layers);
   if (s->mipLevel >= img->image_levels || !layers || s->baseArrayLayer >= img->image_layers ||
       layers > img->image_layers - s->baseArrayLayer || __builtin_popcount(s->aspectMask) != 1)
      return false;
   /* an aspect the format has, its texel blocks and (a plane) its size */
   uint32_t block_bytes, block[3], div[3] = {1, 1, 1};
   if (!wire_format_block((VkFormat)img->image_format, s->aspectMask, &block_bytes, block))
      return false;
   wire_format_plane_divisor((VkFormat)img->image_format, s->aspectMask, div);
   const int64_t at[3] = {offset.x, offset.y, offset.z};
   const uint64_t size[3] = {extent.width, extent.height, extent.depth};
   for (int d = 0; d < 3; d++) {
      uint64_t level = s->mipLevel < 32 ? img->image_extent[d] >> s->mipLevel : 0;
      if (!level)
         level = 1;
      level = (level + div[d] - 1) / div[d];
      level = (level + block[d] - 1) / block[d] * block[d];
      if (at[d] < 0 || !size[d] || (uint64_t)at[d] > level || size[d] > level - (uint64_t)at[d])
         return false;
   }
   return true;
}

/* Whether a region is its whole mip level, from the origin. */
static bool
region_whole(const struct gpud_object *img, const VkImageSubresourceLayers *s,
             VkOffset3D offset, VkExtent3D extent)
{
   const uint32_t size[3] = {extent.width, extent.height, extent.depth};
   if (offset.x || offset.y || offset.z || s->mipLevel >= 32)
      return false;
   for (int d = 0; d < 3; d++) {
      uint32_t level = img->image_extent[d] >> s->mipLevel;
      if (size[d] != (level ? level : 1))
         return false;
   }
   return true;
}

/* A region of either direction. */
struct region {
   const VkImageSubresourceLayers *sub;
   uint32_t row_length, image_height;
   VkOffset3D offset;
   VkExtent3D extent;
};

/* Where in the staging memory a region's bytes lie, once they are known to
 * lie there; NULL (the client failed) otherwise. */
static void *
place_region(struct gpud_call *call, const char *command, const struct gpud_object *img,
             VkHostImageCopyFlagsEXT flags, const struct region *r, uint32_t i, uint64_t offset)
{
   const struct gpud_object *dev = call->device;
   const VkImageSubresourceLayers *s = r->sub;
   const uint32_t layers = wire_host_copy_layers(s, img->image_layers);
   uint64_t bytes = 0;
   bool sized;
   if (flags & VK_HOST_IMAGE_COPY_MEMCPY_EXT) {
      /* asked of the host only for a subresource the image has */
      sized = call->disp->HOST_GET_SUBRESOURCE_LAYOUT2 && s->mipLevel < img->image_levels &&
              s->baseArrayLayer < img->image_layers &&
              __builtin_popcount(s->aspectMask) == 1 &&
              wire_host_copy_memcpy_bytes(call->disp->HOST_GET_SUBRESOURCE_LAYOUT2,
                                          (VkDevice)(uintptr_t)dev->handle,
                                          (VkImage)(uintptr_t)img->handle, s, layers, &bytes) &&
              bytes <= dev->map_size;
   } else {
      sized = wire_host_copy_bytes((VkFormat)img->image_format, s->aspectMask, r->row_length,
                                   r->image_height, r->extent, layers, dev->map_size, &bytes);
   }
   if (!sized || offset % WIRE_HOST_COPY_ALIGN || offset > dev->map_size ||
       bytes > dev->map_size - offset ||
       !region_fits(img, s, r->offset, r->extent)) {
      char why[160];
      snprintf(why, sizeof(why), "%s: region %u (offset %llu) is not inside the staging "
               "memory or the image", command, i, (unsigned long long)offset);
      gpud_call_fail(call, why);
      return NULL;
   }
   return (char *)dev->map + offset;
}

/* The image of a copy, when the device has staging memory and the image
 * was made for host copies; NULL (the client failed) otherwise. */
static const struct gpud_object *
copy_image(struct gpud_call *call, const char *command, VkImage image, bool counts_match)
{
   const struct gpud_object *img =
      gpud_call_named(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)image);
   if (counts_match && call->device && call->device->host_image_copy && call->device->map &&
       img && img->image_host_transfer)
      return img;
   char why[160];
   snprintf(why, sizeof(why), "%s: regions and offsets differ, hostImageCopy not enabled, no "
            "staging memory, or an image not made for host copies", command);
   gpud_call_fail(call, why);
   return NULL;
}

void
gpud_exec_vkCopyMemoryToImageGPUD(struct gpud_call *call,
                                  struct wire_args_vkCopyMemoryToImageGPUD *a)
{
   /* decoded: the worker's own memory, regions included */
   VkCopyMemoryToImageInfoEXT *info = (VkCopyMemoryToImageInfoEXT *)a->pCopyMemoryToImageInfo;
   VkMemoryToImageCopyEXT *regions = (VkMemoryToImageCopyEXT *)info->pRegions;
   const struct gpud_object *img =
      copy_image(call, "vkCopyMemoryToImage", info->dstImage,
                 info->regionCount == a->regionCount && call->disp->HOST_COPY_MEMORY_TO_IMAGE);
   for (uint32_t i = 0; img && i < info->regionCount; i++) {
      const struct region r = {&regions[i].imageSubresource, regions[i].memoryRowLength,
                               regions[i].memoryImageHeight, regions[i].imageOffset,
                               regions[i].imageExtent};
      regions[i].pHostPointer =
         place_region(call, "vkCopyMemoryToImage", img, info->flags, &r, i, a->pOffsets[i]);
      if (!regions[i].pHostPointer)
         return;
   }
   if (img)
      a->ret = call->disp->HOST_COPY_MEMORY_TO_IMAGE(a->device, info);
}

void
gpud_exec_vkCopyImageToMemoryGPUD(struct gpud_call *call,
                                  struct wire_args_vkCopyImageToMemoryGPUD *a)
{
   VkCopyImageToMemoryInfoEXT *info = (VkCopyImageToMemoryInfoEXT *)a->pCopyImageToMemoryInfo;
   VkImageToMemoryCopyEXT *regions = (VkImageToMemoryCopyEXT *)info->pRegions;
   const struct gpud_object *img =
      copy_image(call, "vkCopyImageToMemory", info->srcImage,
                 info->regionCount == a->regionCount && call->disp->HOST_COPY_IMAGE_TO_MEMORY);
   for (uint32_t i = 0; img && i < info->regionCount; i++) {
      const struct region r = {&regions[i].imageSubresource, regions[i].memoryRowLength,
                               regions[i].memoryImageHeight, regions[i].imageOffset,
                               regions[i].imageExtent};
      regions[i].pHostPointer =
         place_region(call, "vkCopyImageToMemory", img, info->flags, &r, i, a->pOffsets[i]);
      if (!regions[i].pHostPointer)
         return;
   }
   if (img)
      a->ret = call->disp->HOST_COPY_IMAGE_TO_MEMORY(a->device, info);
}

/* Copies and layout transitions on the host name images and subresources
 * the host driver takes on trust: each must be one made for host copies,
 * with the layers, levels and texels the command names. */
static bool
host_image(struct gpud_call *call, const char *command, VkImage image,
           const struct gpud_object **img)
{
   *img = gpud_call_named(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)image);
   if (call->device && call->device->host_image_copy && *img && (*img)->image_host_transfer)
      return true;
   char why[160];
   snprintf(why, sizeof(why), "%s: hostImageCopy not enabled, or an image not made for host "
            "copies", command);
   gpud_call_fail(call, why);
   return false;
}

void
gpud_exec_vkCopyImageToImage(struct gpud_call *call, struct wire_args_vkCopyImageToImage *a)
{
   const VkCopyImageToImageInfoEXT *info = a->pCopyImageToImageInfo;
   const struct gpud_object *src, *dst;
   if (!host_image(call, "vkCopyImageToImage", info->srcImage, &src) ||
       !host_image(call, "vkCopyImageToImage", info->dstImage, &dst))
      return;
   for (uint32_t i = 0; i < info->regionCount; i++) {
      const VkImageCopy2 *r = &info->pRegions[i];
      /* a copy as the host lays images out takes a whole subresource of the
       * source's size: the destination's must be as large, the same format */
      const bool whole = !(info->flags & VK_HOST_IMAGE_COPY_MEMCPY_EXT) ||
                         (src->image_format == dst->image_format &&
                          region_whole(src, &r->srcSubresource, r->srcOffset, r->extent) &&
                          region_whole(dst, &r->dstSubresource, r->dstOffset, r->extent));
      if (!whole || !region_fits(src, &r->srcSubresource, r->srcOffset, r->extent) ||
          !region_fits(dst, &r->dstSubresource, r->dstOffset, r->extent)) {
         char why[128];
         snprintf(why, sizeof(why), "vkCopyImageToImage: region %u is not inside its images", i);
         gpud_call_fail(call, why);
         return;
      }
   }
   gpud_gen_exec_vkCopyImageToImage(call, a);
}

void
gpud_exec_vkTransitionImageLayout(struct gpud_call *call,
                                  struct wire_args_vkTransitionImageLayout *a)
{
   for (uint32_t i = 0; i < a->transitionCount; i++) {
      const VkHostImageLayoutTransitionInfoEXT *t = &a->pTransitions[i];
      const VkImageSubresourceRange *r = &t->subresourceRange;
      const struct gpud_object *img;
      if (!host_image(call, "vkTransitionImageLayout", t->image, &img))
         return;
      const uint32_t levels = r->levelCount == VK_REMAINING_MIP_LEVELS && r->baseMipLevel <
         img->image_levels ? img->image_levels - r->baseMipLevel : r->levelCount;
      const uint32_t layers = r->layerCount == VK_REMAINING_ARRAY_LAYERS && r->baseArrayLayer <
         img->image_layers ? img->image_layers - r->baseArrayLayer : r->layerCount;
      if (r->baseMipLevel >= img->image_levels || levels > img->image_levels - r->baseMipLevel ||
          r->baseArrayLayer >= img->image_layers ||
          layers > img->image_layers - r->baseArrayLayer) {
         gpud_call_fail(call, "vkTransitionImageLayout: a range beyond the image's levels or "
                              "layers");
         return;
      }
   }
   gpud_gen_exec_vkTransitionImageLayout(call, a);
}

#endif

#ifdef WIRE_HAS_vkConvertCooperativeVectorMatrixGPUD
/* A component's bytes, or 0 for a type this does not know. */
static uint64_t
component_bytes(VkComponentTypeKHR type)
{
   switch (type) {
   case VK_COMPONENT_TYPE_SINT8_KHR:
   case VK_COMPONENT_TYPE_UINT8_KHR:
   case VK_COMPONENT_TYPE_FLOAT_E4M3_NV:
   case VK_COMPONENT_TYPE_FLOAT_E5M2_NV:
      return 1;
   case VK_COMPONENT_TYPE_FLOAT16_KHR:
   case VK_COMPONENT_TYPE_SINT16_KHR:
   case VK_COMPONENT_TYPE_UINT16_KHR:
      return 2;
   case VK_COMPONENT_TYPE_FLOAT32_KHR:
   case VK_COMPONENT_TYPE_SINT32_KHR:
   case VK_COMPONENT_TYPE_UINT32_KHR:
      return 4;
   case VK_COMPONENT_TYPE_FLOAT64_KHR:
   case VK_COMPONENT_TYPE_SINT64_KHR:
   case VK_COMPONENT_TYPE_UINT64_KHR:
      return 8;
   default:
      return 0;
   }
}

enum coopvec_fit { COOPVEC_FITS, COOPVEC_BEYOND, COOPVEC_UNKNOWN };

/*
 * Whether the source matrix lies within srcSize, which the host would
 * otherwise trust: the host reads as much as the matrix's shape, type and
 * layout take.  The host itself says how much that is (the size of the
 * same matrix converted to its own type and layout); a row- or
 * column-major matrix of a known type is also measured here by its stride.
 * COOPVEC_UNKNOWN: neither can tell (a host that does not size the
 * identity conversion, and a layout or type only it knows).
 */
static enum coopvec_fit
coopvec_source_fits(const struct gpud_call *call, VkDevice device,
                    const VkConvertCooperativeVectorMatrixInfoNV *info)
{
   VkConvertCooperativeVectorMatrixInfoNV same = *info;
   size_t host_need = 0;
   same.pNext = NULL;
   same.srcData.hostAddress = NULL;
   same.dstData.hostAddress = NULL;
   same.dstComponentType = info->srcComponentType;
   same.dstLayout = info->srcLayout;
   same.dstStride = info->srcStride;
   same.pDstSize = &host_need;
   const bool host_knows =
      call->disp->ConvertCooperativeVectorMatrixNV(device, &same) == VK_SUCCESS;
   if (host_knows && host_need > info->srcSize)
      return COOPVEC_BEYOND;

   const uint64_t size = component_bytes(info->srcComponentType);
   uint64_t lines, length;
   if (info->srcLayout == VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_ROW_MAJOR_NV)
      lines = info->numRows, length = info->numColumns;
   else if (info->srcLayout == VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_COLUMN_MAJOR_NV)
      lines = info->numColumns, length = info->numRows;
   else /* the driver's own layout: only the host can size it */
      return host_knows ? COOPVEC_FITS : COOPVEC_UNKNOWN;
   if (!size)
      return host_knows ? COOPVEC_FITS : COOPVEC_UNKNOWN;
   if (!lines || !length)
      return COOPVEC_FITS;
   /* (each factor below 2^32, the stride a size_t: no overflow in 128 bits) */
   const unsigned __int128 need =
      (unsigned __int128)(lines - 1) * info->srcStride + length * size;
   return need <= info->srcSize ? COOPVEC_FITS : COOPVEC_BEYOND;
}

/* VK_NV_cooperative_vector's conversion on the host, between matrices in
 * the staging memory (icd/icd_hostcopy.c); asked for the size alone, the
 * host gets no matrices. */
void
gpud_exec_vkConvertCooperativeVectorMatrixGPUD(
   struct gpud_call *call, struct wire_args_vkConvertCooperativeVectorMatrixGPUD *a)
{
   const struct gpud_object *dev = call->device;
   if (!dev || !call->disp->ConvertCooperativeVectorMatrixNV ||
       !gpud_device_enabled(dev, VK_NV_COOPERATIVE_VECTOR_EXTENSION_NAME)) {
      gpud_call_fail(call, "vkConvertCooperativeVectorMatrixNV: the device did not enable "
                           "VK_NV_cooperative_vector");
      return;
   }
   VkConvertCooperativeVectorMatrixInfoNV info = *a->pInfo;
   size_t dst_size = *a->pInfo->pDstSize; /* (the decoder's: never NULL) */
   info.pDstSize = &dst_size;
   info.srcData.hostAddress = NULL;
   info.dstData.hostAddress = NULL;
   if (a->convert) {
      if (!dev->map || a->srcOffset > dev->map_size ||
          info.srcSize > dev->map_size - a->srcOffset || a->dstOffset > dev->map_size ||
          dst_size > dev->map_size - a->dstOffset) {
         gpud_call_fail(call, "vkConvertCooperativeVectorMatrixNV: a matrix not inside the "
                              "staging memory");
         return;
      }
      switch (coopvec_source_fits(call, a->device, &info)) {
      case COOPVEC_FITS:
         break;
      case COOPVEC_BEYOND:
         gpud_call_fail(call, "vkConvertCooperativeVectorMatrixNV: a source matrix larger "
                              "than srcSize says");
         return;
      case COOPVEC_UNKNOWN:
         /* not knowing how much the host would read, the worker does not
          * let it read; the application gets what a host short of memory
          * for the conversion would give */
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
         *a->pDstSize = dst_size;
         return;
      }
      info.srcData.hostAddress = (const char *)dev->map + a->srcOffset;
      info.dstData.hostAddress = (char *)dev->map + a->dstOffset;
   }
   a->ret = call->disp->ConvertCooperativeVectorMatrixNV(a->device, &info);
   *a->pDstSize = dst_size;
}
#endif
