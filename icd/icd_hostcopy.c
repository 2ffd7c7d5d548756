/* SPDX-License-Identifier: MIT */
/*
 * Host image copies (VK_EXT_host_image_copy, Vulkan 1.4's hostImageCopy):
 * the host driver copies between an image and host memory on the CPU, in
 * the worker, where the application's pointers mean nothing. The pixels
 * cross in a staging memfd the worker makes, charged to the client's
 * memory limits, and both map (vkGetHostCopyStagingGPUD):
 * vkCopyMemoryToImage copies the application's regions into it and asks
 * the worker to copy them into the image; vkCopyImageToMemory asks the
 * worker to copy the image into it and hands the regions to the
 * application. A region's size comes from its format's
 * texel blocks (protocol/wire_hostcopy.h), which both sides compute: the
 * ICD remembers the format and layers of each image made for host copies
 * (icd_image.c adds and removes them).
 *
 * One copy at a time per device uses the staging memory; it grows to the
 * largest copy, up to ICD_STAGING_MAX, and larger copies go in parts (a
 * single region larger than that fails with VK_ERROR_OUT_OF_HOST_MEMORY).
 */
#include "icd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util_memfd.h"
#include "wire_hostcopy.h"

#define ICD_STAGING_MIN (1ull << 20)
#define ICD_STAGING_MAX (256ull << 20)
#define HOST_IMAGE_BUCKETS 256u

struct icd_host_image {
   struct icd_host_image *next;
   uint64_t id;
   VkFormat format;
   uint32_t layers;
};

void
icd_device_hostcopy_finish(struct icd_device *dev)
{
   for (unsigned i = 0; dev->host_images && i < HOST_IMAGE_BUCKETS; i++) {
      while (dev->host_images[i]) {
         struct icd_host_image *next = dev->host_images[i]->next;
         free(dev->host_images[i]);
         dev->host_images[i] = next;
      }
   }
   free(dev->host_images);
   dev->host_images = NULL;
   if (dev->staging)
      munmap(dev->staging, dev->staging_size);
   dev->staging = NULL;
   dev->staging_size = 0;
}

#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD

static unsigned
bucket(uint64_t id)
{
   return (unsigned)((id * 0x9e3779b97f4a7c15ull) >> 56) % HOST_IMAGE_BUCKETS;
}

/* With hostcopy_mutex. */
static struct icd_host_image *
host_image_find(struct icd_device *dev, uint64_t id)
{
   if (!dev->host_images)
      return NULL;
   for (struct icd_host_image *i = dev->host_images[bucket(id)]; i; i = i->next) {
      if (i->id == id)
         return i;
   }
   return NULL;
}

bool
icd_hostcopy_image_add(struct icd_device *dev, VkImage image, VkFormat format, uint32_t layers)
{
   struct icd_host_image *img = calloc(1, sizeof(*img));
   pthread_mutex_lock(&dev->hostcopy_mutex);
   if (!dev->host_images)
      dev->host_images = calloc(HOST_IMAGE_BUCKETS, sizeof(*dev->host_images));
   bool added = img && dev->host_images;
   if (added) {
      *img = (struct icd_host_image){
         .id = (uint64_t)image,
         .format = format,
         .layers = layers,
         .next = dev->host_images[bucket((uint64_t)image)],
      };
      dev->host_images[bucket(img->id)] = img;
      img = NULL;
   }
   pthread_mutex_unlock(&dev->hostcopy_mutex);
   free(img);
   return added;
}

void
icd_hostcopy_image_remove(struct icd_device *dev, VkImage image)
{
   pthread_mutex_lock(&dev->hostcopy_mutex);
   if (dev->host_images) {
      for (struct icd_host_image **p = &dev->host_images[bucket((uint64_t)image)]; *p;
           p = &(*p)->next) {
         if ((*p)->id == (uint64_t)image) {
            struct icd_host_image *gone = *p;
            *p = gone->next;
            free(gone);
            break;
         }
      }
   }
   pthread_mutex_unlock(&dev->hostcopy_mutex);
}

/* The bytes region i takes in host memory (0: a region gpud cannot size,
 * which the host would copy beyond what the application gave). */
static uint64_t
region_bytes(VkDevice device, VkImage image, const struct icd_host_image *img,
             VkHostImageCopyFlagsEXT flags, const VkImageSubresourceLayers *sub,
             uint32_t row_length, uint32_t image_height, VkExtent3D extent)
{
   const uint32_t layers = wire_host_copy_layers(sub, img->layers);
   uint64_t bytes = 0;
   if (flags & VK_HOST_IMAGE_COPY_MEMCPY_EXT)
      return wire_host_copy_memcpy_bytes(icd_vkGetImageSubresourceLayout2EXT, device, image, sub,
                                         layers, &bytes)
                ? bytes
                : 0;
   if (!wire_host_copy_bytes(img->format, sub->aspectMask, row_length, image_height, extent,
                             layers, UINT64_MAX, &bytes))
      return 0;
   return bytes;
}

/* Staging memory of at least size bytes, shared with the worker (with
 * hostcopy_mutex). */
static VkResult
staging_reserve(struct icd_device *dev, VkDevice device, uint64_t size)
{
   if (dev->staging && dev->staging_size >= size)
      return VK_SUCCESS;
   uint64_t want = dev->staging_size * 2;
   if (want < ICD_STAGING_MIN)
      want = ICD_STAGING_MIN;
   if (want < size)
      want = size;
   if (want > ICD_STAGING_MAX)
      want = ICD_STAGING_MAX;
   want = (want + 4095) & ~4095ull;
   if (size > want)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   /* the worker makes it, within the client's memory limits */
   int fd = -1;
   VkResult r = icd_gen_vkGetHostCopyStagingGPUD(device, want, &fd);
   if (r != VK_SUCCESS || fd < 0) {
      if (fd >= 0)
         close(fd);
      return r != VK_SUCCESS ? r : VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   if (util_memfd_check(fd, want) < 0) {
      close(fd);
      icd_connection_set_lost(dev->base.conn, "vkGetHostCopyStagingGPUD: a bad memfd");
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   void *map = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   close(fd);
   /* the worker has let its last staging memory go: so does the ICD */
   if (dev->staging)
      munmap(dev->staging, dev->staging_size);
   dev->staging = NULL;
   dev->staging_size = 0;
   if (map == MAP_FAILED)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   dev->staging = map;
   dev->staging_size = want;
   return VK_SUCCESS;
}

/* What vkCopyMemoryToImage and vkCopyImageToMemory share. */
struct copy {
   VkDevice device;
   VkImage image;
   VkHostImageCopyFlagsEXT flags;
   uint32_t count;
   const VkMemoryToImageCopyEXT *to_image;   /* one of the two */
   const VkImageToMemoryCopyEXT *to_memory;
   const void *info;                         /* the application's */
   uint64_t *bytes;                          /* each region's */
};

/* Copies regions [first, first + count) through the staging memory, at
 * offsets (with hostcopy_mutex). */
static VkResult
send_part(const struct copy *c, uint32_t first, uint32_t count, const uint64_t *offsets)
{
   struct icd_device *dev = icd_device_from_handle(c->device);
   VkResult r;
   if (c->to_image) {
      for (uint32_t i = 0; i < count; i++)
         memcpy((char *)dev->staging + offsets[i], c->to_image[first + i].pHostPointer,
                c->bytes[first + i]);
      VkCopyMemoryToImageInfoEXT part = *(const VkCopyMemoryToImageInfoEXT *)c->info;
      part.regionCount = count;
      part.pRegions = c->to_image + first;
      r = icd_gen_vkCopyMemoryToImageGPUD(c->device, &part, count, offsets);
   } else {
      VkCopyImageToMemoryInfoEXT part = *(const VkCopyImageToMemoryInfoEXT *)c->info;
      part.regionCount = count;
      part.pRegions = c->to_memory + first;
      r = icd_gen_vkCopyImageToMemoryGPUD(c->device, &part, count, offsets);
      for (uint32_t i = 0; r == VK_SUCCESS && i < count; i++)
         memcpy(c->to_memory[first + i].pHostPointer, (char *)dev->staging + offsets[i],
                c->bytes[first + i]);
   }
   return r;
}

/* Sizes every region, then copies them in parts that fit the staging
 * memory. */
static VkResult
host_copy(struct copy *c)
{
   struct icd_device *dev = icd_device_from_handle(c->device);
   const size_t n = c->count ? c->count : 1;
   uint64_t *offsets = calloc(n, sizeof(*offsets));
   c->bytes = calloc(n, sizeof(*c->bytes));
   if (!offsets || !c->bytes) {
      free(offsets);
      free(c->bytes);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   pthread_mutex_lock(&dev->hostcopy_mutex);
   const struct icd_host_image *img = host_image_find(dev, (uint64_t)c->image);
   /* an image made without VK_IMAGE_USAGE_HOST_TRANSFER_BIT, or a region
    * gpud cannot size: the host driver would refuse the one and could run
    * past the application's memory with the other */
   VkResult r = img ? VK_SUCCESS : VK_ERROR_INITIALIZATION_FAILED;
   for (uint32_t i = 0; r == VK_SUCCESS && i < c->count; i++) {
      const VkImageSubresourceLayers *sub;
      VkExtent3D extent;
      uint32_t row_length, image_height;
      if (c->to_image) {
         const VkMemoryToImageCopyEXT *g = &c->to_image[i];
         sub = &g->imageSubresource, extent = g->imageExtent;
         row_length = g->memoryRowLength, image_height = g->memoryImageHeight;
      } else {
         const VkImageToMemoryCopyEXT *g = &c->to_memory[i];
         sub = &g->imageSubresource, extent = g->imageExtent;
         row_length = g->memoryRowLength, image_height = g->memoryImageHeight;
      }
      c->bytes[i] = region_bytes(c->device, c->image, img, c->flags, sub, row_length,
                                 image_height, extent);
      if (!c->bytes[i])
         r = VK_ERROR_INITIALIZATION_FAILED;
      else if (c->bytes[i] > ICD_STAGING_MAX)
         r = VK_ERROR_OUT_OF_HOST_MEMORY; /* one region larger than the staging memory */
   }
   for (uint32_t first = 0; r == VK_SUCCESS && first < c->count;) {
      /* as many regions as fit (one at least) */
      uint64_t end = 0;
      uint32_t count = 0;
      while (first + count < c->count) {
         uint64_t at = (end + WIRE_HOST_COPY_ALIGN - 1) & ~(uint64_t)(WIRE_HOST_COPY_ALIGN - 1);
         if (count && at + c->bytes[first + count] > ICD_STAGING_MAX)
            break;
         offsets[first + count] = at;
         end = at + c->bytes[first + count];
         count++;
      }
      r = staging_reserve(dev, c->device, end);
      if (r == VK_SUCCESS)
         r = send_part(c, first, count, offsets + first);
      first += count;
   }
   pthread_mutex_unlock(&dev->hostcopy_mutex);
   free(offsets);
   free(c->bytes);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCopyMemoryToImageEXT(VkDevice device, const VkCopyMemoryToImageInfoEXT *pCopyMemoryToImageInfo)
{
   const VkCopyMemoryToImageInfoEXT *info = pCopyMemoryToImageInfo;
   struct copy c = {
      .device = device,
      .image = info->dstImage,
      .flags = info->flags,
      .count = info->regionCount,
      .to_image = info->pRegions,
      .info = info,
   };
   return host_copy(&c);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCopyImageToMemoryEXT(VkDevice device, const VkCopyImageToMemoryInfoEXT *pCopyImageToMemoryInfo)
{
   const VkCopyImageToMemoryInfoEXT *info = pCopyImageToMemoryInfo;
   struct copy c = {
      .device = device,
      .image = info->srcImage,
      .flags = info->flags,
      .count = info->regionCount,
      .to_memory = info->pRegions,
      .info = info,
   };
   return host_copy(&c);
}


#ifdef WIRE_HAS_vkConvertCooperativeVectorMatrixGPUD
/* VK_NV_cooperative_vector's conversion on the host reads and writes the
 * application's memory: the matrices cross in the staging memory, the
 * source first, the destination after it (aligned). Asked for the size
 * alone (no destination), nothing crosses. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkConvertCooperativeVectorMatrixNV(VkDevice device,
                                       const VkConvertCooperativeVectorMatrixInfoNV *pInfo)
{
   struct icd_device *dev = icd_device_from_handle(device);
   VkConvertCooperativeVectorMatrixInfoNV info = *pInfo;
   info.srcData.deviceAddress = 0;
   info.dstData.deviceAddress = 0;
   uint64_t dst_size = *pInfo->pDstSize;
   if (!pInfo->dstData.hostAddress) {
      VkResult r =
         icd_gen_vkConvertCooperativeVectorMatrixGPUD(device, &info, 0, VK_FALSE, 0, &dst_size);
      if (r == VK_SUCCESS)
         *pInfo->pDstSize = (size_t)dst_size;
      return r;
   }
   const uint64_t dst_at = ((uint64_t)info.srcSize + WIRE_HOST_COPY_ALIGN - 1) &
                           ~(uint64_t)(WIRE_HOST_COPY_ALIGN - 1);
   if (dst_at > ICD_STAGING_MAX || dst_size > ICD_STAGING_MAX - dst_at)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   pthread_mutex_lock(&dev->hostcopy_mutex);
   VkResult r = staging_reserve(dev, device, dst_at + (dst_size ? dst_size : 1));
   if (r == VK_SUCCESS) {
      if (info.srcSize)
         memcpy(dev->staging, pInfo->srcData.hostAddress, info.srcSize);
      r = icd_gen_vkConvertCooperativeVectorMatrixGPUD(device, &info, 0, VK_TRUE, dst_at,
                                                       &dst_size);
      if (r == VK_SUCCESS && dst_size <= *pInfo->pDstSize) {
         memcpy(pInfo->dstData.hostAddress, (char *)dev->staging + dst_at, dst_size);
         *pInfo->pDstSize = (size_t)dst_size;
      } else if (r == VK_SUCCESS) {
         /* (more than the destination holds: not a host's answer) */
         r = VK_ERROR_OUT_OF_HOST_MEMORY;
      } else if (r == VK_INCOMPLETE) {
         /* too small a destination: nothing written, the size as the host
          * left it */
         *pInfo->pDstSize = (size_t)dst_size;
      }
   }
   pthread_mutex_unlock(&dev->hostcopy_mutex);
   return r;
}
#endif

#endif
