/* SPDX-License-Identifier: MIT */
/*
 * Images: made with the external-memory structures host-visible memory
 * needs and the usages video sessions and host copies want, and their
 * bindings (a disjoint image's planes one by one) checked against the
 * memory.
 */
#include "gpud_call.h"
#include "gpud_memory.h"

#include <string.h>

#define BOUND(type, handle, memory, offset)                                               \
   gpud_call_mark_bound(call, type, (uint64_t)(uintptr_t)(handle), (uint64_t)(uintptr_t)(memory), \
                        (offset))

static bool
image_fits(struct gpud_call *call, VkImage image, VkDeviceMemory memory, VkDeviceSize offset,
           const void *chain)
{
   VkMemoryRequirements2 req = {.sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
   VkImagePlaneMemoryRequirementsInfo plane = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_PLANE_MEMORY_REQUIREMENTS_INFO,
   };
   VkImageMemoryRequirementsInfo2 info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_REQUIREMENTS_INFO_2,
      .image = image,
   };
   /* A plane of a disjoint image is bound on its own. */
   for (const VkBaseInStructure *c = chain; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_BIND_IMAGE_PLANE_MEMORY_INFO) {
         plane.planeAspect = ((const VkBindImagePlaneMemoryInfo *)c)->planeAspect;
         info.pNext = &plane;
      }
   }
   call->disp->GetImageMemoryRequirements2((VkDevice)(uintptr_t)call->device->handle, &info,
                                           &req);
   return gpud_memory_binding_fits(call, memory, offset, &req.memoryRequirements);
}

void
gpud_exec_vkBindImageMemory(struct gpud_call *call, struct wire_args_vkBindImageMemory *a)
{
   if (!gpud_memory_unbound(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)a->image) ||
       !image_fits(call, a->image, a->memory, a->memoryOffset, NULL)) {
      gpud_call_fail(call, "the image is bound already or does not fit in its memory");
      return;
   }
   gpud_gen_exec_vkBindImageMemory(call, a);
   if (a->ret == VK_SUCCESS)
      BOUND(VK_OBJECT_TYPE_IMAGE, a->image, a->memory, a->memoryOffset);
}

void
gpud_exec_vkBindImageMemory2(struct gpud_call *call, struct wire_args_vkBindImageMemory2 *a)
{
   for (uint32_t i = 0; i < a->bindInfoCount; i++) {
      const VkBindImageMemoryInfo *b = &a->pBindInfos[i];
      /* the planes of a disjoint image are bound one by one */
      bool plane = false;
      for (const VkBaseInStructure *c = b->pNext; c; c = c->pNext)
         plane |= c->sType == VK_STRUCTURE_TYPE_BIND_IMAGE_PLANE_MEMORY_INFO;
      if ((!plane && !gpud_memory_unbound(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)b->image)) ||
          !image_fits(call, b->image, b->memory, b->memoryOffset, b->pNext)) {
         gpud_call_fail(call, "an image is bound already or does not fit in its memory");
         return;
      }
   }
   gpud_gen_exec_vkBindImageMemory2(call, a);
   for (uint32_t i = 0; a->ret == VK_SUCCESS && i < a->bindInfoCount; i++)
      BOUND(VK_OBJECT_TYPE_IMAGE, a->pBindInfos[i].image, a->pBindInfos[i].memory,
            a->pBindInfos[i].memoryOffset);
}

/* Pictures of video sessions (decoded, reference, to encode) are made as
 * asked: whether the host can import memory for one is a question of its
 * video profiles (the format query below would need them, and may not be
 * asked without), and they are device memory in practice. */
#ifdef VK_KHR_video_encode_queue /* (provisional in registries before 1.3.274) */
#define VIDEO_ENCODE_IMAGE_USAGE                                                                   \
   (VK_IMAGE_USAGE_VIDEO_ENCODE_DST_BIT_KHR | VK_IMAGE_USAGE_VIDEO_ENCODE_SRC_BIT_KHR |            \
    VK_IMAGE_USAGE_VIDEO_ENCODE_DPB_BIT_KHR)
#else
#define VIDEO_ENCODE_IMAGE_USAGE 0
#endif
#define VIDEO_IMAGE_USAGE                                                                          \
   (VK_IMAGE_USAGE_VIDEO_DECODE_DST_BIT_KHR | VK_IMAGE_USAGE_VIDEO_DECODE_SRC_BIT_KHR |            \
    VK_IMAGE_USAGE_VIDEO_DECODE_DPB_BIT_KHR | VIDEO_ENCODE_IMAGE_USAGE)

static void
image_info_patch(struct gpud_call *call, VkImageCreateInfo *info, struct gpud_external_patch *p)
{
   memset(p, 0, sizeof(*p));
   p->next = info->pNext;
   if (!call->ctx->host->has_external_memory_host || !call->device->physical_device ||
       (info->flags & VK_IMAGE_CREATE_SPARSE_BINDING_BIT) || (info->usage & VIDEO_IMAGE_USAGE))
      return;
#ifdef VK_NV_optical_flow
   /* an optical flow engine's images, as the video engines': made as asked */
   if (gpud_chain_find(info->pNext, VK_STRUCTURE_TYPE_OPTICAL_FLOW_IMAGE_FORMAT_INFO_NV))
      return;
#endif
   /* only where the host can import memory for such an image */
   VkPhysicalDeviceExternalImageFormatInfo ext_info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
   };
   VkPhysicalDeviceImageFormatInfo2 fmt = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
      .pNext = &ext_info,
      .format = info->format,
      .type = info->imageType,
      .tiling = info->tiling,
      .usage = info->usage,
      .flags = info->flags,
   };
   VkExternalImageFormatProperties ext_props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES,
   };
   VkImageFormatProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2,
      .pNext = &ext_props,
   };
   if (call->disp->GetPhysicalDeviceImageFormatProperties2(
          (VkPhysicalDevice)(uintptr_t)call->device->physical_device, &fmt, &props) !=
          VK_SUCCESS ||
       !(ext_props.externalMemoryProperties.externalMemoryFeatures &
         VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT))
      return;
   gpud_memory_external_add(&info->pNext, VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, p);
#ifdef VK_EXT_host_image_copy
   /* An image for host copies may need memory a host allocation cannot be
    * (the NVIDIA driver wants its device-local, host-visible type, which
    * gpud offers as device memory only): the format query says importable,
    * the requirements say no type. Such an image is made as asked. */
   if (info->usage & VK_IMAGE_USAGE_HOST_TRANSFER_BIT_EXT) {
      VkDevice dev = (VkDevice)(uintptr_t)call->device->handle;
      VkImage probe = VK_NULL_HANDLE;
      VkMemoryRequirements req = {0};
      if (call->disp->CreateImage(dev, info, NULL, &probe) == VK_SUCCESS) {
         call->disp->GetImageMemoryRequirements(dev, probe, &req);
         call->disp->DestroyImage(dev, probe, NULL);
      }
      if (!req.memoryTypeBits) {
         gpud_memory_external_restore(&info->pNext, p);
         memset(p, 0, sizeof(*p));
         p->next = info->pNext;
      }
   }
#endif
}

void
gpud_exec_vkCreateImage(struct gpud_call *call, struct wire_args_vkCreateImage *a)
{
   VkImageCreateInfo *info = (VkImageCreateInfo *)a->pCreateInfo; /* decoded: ours */
   struct gpud_external_patch p;
   image_info_patch(call, info, &p);
   call->new_create_flags = info->flags;
#ifdef VK_EXT_host_image_copy
   call->new_image_host_transfer = info->usage & VK_IMAGE_USAGE_HOST_TRANSFER_BIT_EXT;
#endif
   call->new_image_format = (uint32_t)info->format;
   call->new_image_layers = info->arrayLayers;
   call->new_image_levels = info->mipLevels;
   call->new_image_extent[0] = info->extent.width;
   call->new_image_extent[1] = info->extent.height;
   call->new_image_extent[2] = info->extent.depth;
   gpud_gen_exec_vkCreateImage(call, a);
   gpud_memory_external_restore(&info->pNext, &p);
}

void
gpud_exec_vkGetDeviceImageMemoryRequirements(
   struct gpud_call *call, struct wire_args_vkGetDeviceImageMemoryRequirements *a)
{
   VkImageCreateInfo *info = (VkImageCreateInfo *)a->pInfo->pCreateInfo;
   struct gpud_external_patch p;
   image_info_patch(call, info, &p);
   gpud_gen_exec_vkGetDeviceImageMemoryRequirements(call, a);
   gpud_memory_external_restore(&info->pNext, &p);
}
