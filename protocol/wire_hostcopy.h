/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Host image copies (vkCopyMemoryToImage, vkCopyImageToMemory): the pixels
 * go through a staging memfd the worker makes and the ICD maps
 * (vkGetHostCopyStagingGPUD), each region at an offset in it
 * (vkCopy*GPUD). Both sides size a region the same way: the ICD to copy
 * the application's pixels, the daemon to check that the host driver reads
 * and writes inside the staging memory.
 */

#include "wire_gen.h"

/* Offsets of regions in the staging memory are multiples of this. */
#define WIRE_HOST_COPY_ALIGN 16u

/* The bytes a region takes in host memory, by the rules of buffer-image
 * copies: rows of memoryRowLength texels (the extent's width when 0),
 * images of memoryImageHeight rows (the height when 0), array layers or
 * depth slices one image apart, the last row as long as the extent only.
 * layers: the region's layer count (VK_REMAINING_ARRAY_LAYERS resolved).
 * False for a format or aspect without a block size, an empty extent, a
 * row or image shorter than the extent, or more than max bytes. */
static inline bool
wire_host_copy_bytes(VkFormat format, VkImageAspectFlags aspect, uint32_t row_length,
                     uint32_t image_height, VkExtent3D extent, uint32_t layers, uint64_t max,
                     uint64_t *bytes)
{
   uint32_t block, b[3];
   if (!wire_format_block(format, aspect, &block, b) || !extent.width || !extent.height ||
       !extent.depth || !layers)
      return false;
   const uint64_t w = row_length ? row_length : extent.width;
   const uint64_t h = image_height ? image_height : extent.height;
   if (w < extent.width || h < extent.height)
      return false;
   /* in 64 bits, every product checked: a row may take 2^37 bytes */
   const uint64_t images = (uint64_t)layers * (((uint64_t)extent.depth + b[2] - 1) / b[2]);
   const uint64_t rows = ((uint64_t)extent.height + b[1] - 1) / b[1];
   const uint64_t last = ((uint64_t)extent.width + b[0] - 1) / b[0] * block;
   uint64_t row, image, n, within;
   if (__builtin_mul_overflow((w + b[0] - 1) / b[0], (uint64_t)block, &row) ||
       __builtin_mul_overflow((h + b[1] - 1) / b[1], row, &image) ||
       __builtin_mul_overflow(images - 1, image, &n) ||
       __builtin_mul_overflow(rows - 1, row, &within) ||
       __builtin_add_overflow(n, within, &n) || __builtin_add_overflow(n, last, &n) || n > max)
      return false;
   *bytes = n;
   return true;
}

/* A region's layer count, VK_REMAINING_ARRAY_LAYERS resolved against the
 * image's layers (0: none left). */
static inline uint32_t
wire_host_copy_layers(const VkImageSubresourceLayers *s, uint32_t image_layers)
{
   if (s->layerCount != VK_REMAINING_ARRAY_LAYERS)
      return s->layerCount;
   return s->baseArrayLayer < image_layers ? image_layers - s->baseArrayLayer : 0;
}

#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD
/* The bytes of a VK_HOST_IMAGE_COPY_MEMCPY region: the host's own layout of
 * the subresource (VkSubresourceHostMemcpySize, asked with
 * vkGetImageSubresourceLayout2), a layer after another. False when it
 * overflows or is nothing. */
static inline bool
wire_host_copy_memcpy_bytes(PFN_vkGetImageSubresourceLayout2EXT layout2, VkDevice device,
                            VkImage image, const VkImageSubresourceLayers *s, uint32_t layers,
                            uint64_t *bytes)
{
   VkSubresourceHostMemcpySizeEXT memcpy_size = {
      .sType = VK_STRUCTURE_TYPE_SUBRESOURCE_HOST_MEMCPY_SIZE_EXT,
   };
   VkSubresourceLayout2EXT layout = {
      .sType = VK_STRUCTURE_TYPE_SUBRESOURCE_LAYOUT_2_EXT,
      .pNext = &memcpy_size,
   };
   const VkImageSubresource2EXT what = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_SUBRESOURCE_2_EXT,
      .imageSubresource = {s->aspectMask, s->mipLevel, s->baseArrayLayer},
   };
   layout2(device, image, &what, &layout);
   return !__builtin_mul_overflow(memcpy_size.size, (uint64_t)layers, bytes) && *bytes;
}
#endif
