/* SPDX-License-Identifier: MIT */
/*
 * Memory and what is bound to it: allocations charged to the client's heap
 * room, exportable and imported memory, bindings checked against the
 * memory's size, and buffers and images made with the external-memory
 * structures gpud needs (buffers that get a twin for the host's copies).
 */
#include "gpud_call.h"
#include "gpud_external.h"
#include "gpud_inject.h"
#include "gpud_transfer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util_fd.h"
#include "util_macros.h"
#include "util_memfd.h"

/* ---- memory --------------------------------------------------------------- */

void
gpud_exec_vkAllocateMemory(struct gpud_call *call, struct wire_args_vkAllocateMemory *a)
{
   const struct gpud_host *host = call->ctx->host;
   const VkMemoryAllocateInfo *info = a->pAllocateInfo;
   /* External memory: an fd to import (the daemon's now: closed on every
    * way out that does not hand it on), and whether the memory may be
    * exported. */
   VkImportMemoryFdInfoKHR *import =
      gpud_chain_find(info->pNext, VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR);
   VkExportMemoryAllocateInfo *export =
      gpud_chain_find(info->pNext, VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO);
   if (info->memoryTypeIndex >= host->memory.memoryTypeCount ||
       gpud_inject_fail_alloc(call->ctx)) {
      if (import)
         util_fd_close(&import->fd);
      a->ret = VK_ERROR_OUT_OF_DEVICE_MEMORY;
      return;
   }
   if (info->allocationSize == 0) {
      if (import)
         util_fd_close(&import->fd);
      gpud_call_fail(call, "allocationSize is 0");
      return;
   }
   const VkMemoryType *type = &host->memory.memoryTypes[info->memoryTypeIndex];
   bool shared = (type->propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                 (host->importable_types & (1u << info->memoryTypeIndex));
   uint64_t size = info->allocationSize;
   if (shared) {
      if (size > (1ull << 46)) {
         if (import)
            util_fd_close(&import->fd);
         a->ret = VK_ERROR_OUT_OF_DEVICE_MEMORY;
         return;
      }
      size = (size + host->import_alignment - 1) & ~(host->import_alignment - 1);
   }
   if (import && !import->handleType) {
      /* no handle type: no import (the fd means nothing) */
      util_fd_close(&import->fd);
      import->fd = -1;
      import = NULL;
   }
   if (import) {
      a->ret = gpud_external_check_memory_import(call, import, shared, size);
      if (a->ret != VK_SUCCESS)
         return;
   }

   /* The worker's limits (per client, per user, the heap's size) first:
    * past them the allocation fails as a full heap would. */
   a->ret = gpud_context_reserve_memory(call->ctx, type->heapIndex, size);
   if (a->ret != VK_SUCCESS) {
      if (import)
         util_fd_close(&import->fd);
      return;
   }
   call->new_bytes = size;
   call->new_heap = type->heapIndex;
   call->new_host_type = info->memoryTypeIndex;
   if (!shared) {
      /* the host's own memory: its import and export as they are */
      if (export)
         export->handleTypes &= VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT |
                                VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT;
      a->ret = call->disp->AllocateMemory(a->device, info, NULL, a->pMemory);
      if (a->ret != VK_SUCCESS && import)
         util_fd_close(&import->fd); /* the host took it only on success */
      return;
   }

   int fd = -1;
   if (import) {
      fd = util_fd_move(&import->fd); /* checked: gpud memory of this size */
   } else if (util_memfd_create("gpud-memory", size, &fd) < 0) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED) {
      util_fd_close(&fd);
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   call->new_map = map;
   call->new_map_size = size;

   /* Of the client's chain only the allocation flags carry over: an
    * imported host allocation cannot be dedicated. */
   const void *chain = NULL;
   VkMemoryAllocateFlagsInfo flags_info;
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO) {
         flags_info = *(const VkMemoryAllocateFlagsInfo *)c;
         flags_info.pNext = NULL;
         chain = &flags_info;
      }
   }
   VkImportMemoryHostPointerInfoEXT host_import = {
      .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
      .pNext = chain,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
      .pHostPointer = map,
   };
   VkMemoryAllocateInfo ai = *info;
   ai.pNext = &host_import;
   ai.allocationSize = size;
   a->ret = call->disp->AllocateMemory(a->device, &ai, NULL, a->pMemory);
   if (a->ret != VK_SUCCESS) {
      util_fd_close(&fd);
      return;
   }
   /* exportable: its memfd stays with the object */
   if (export && (export->handleTypes & VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)) {
      call->new_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (call->new_fd < 0) {
         call->disp->FreeMemory(a->device, *a->pMemory, NULL);
         util_fd_close(&fd);
         a->ret = VK_ERROR_TOO_MANY_OBJECTS;
         return;
      }
   }
   /* Flushes and invalidates of non-coherent memory reach the host on the
    * host's own mapping of it, as the API requires. */
   if (!(type->propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
      void *host_map = NULL;
      if (call->disp->MapMemory(a->device, *a->pMemory, 0, VK_WHOLE_SIZE, 0, &host_map) !=
          VK_SUCCESS)
         gpud_context_log(call->ctx, UTIL_LOG_WARNING,
                          "vkAllocateMemory: the host cannot map non-coherent memory");
   }
   call->reply_fd = fd;
}

/* ---- binding memory --------------------------------------------------------- */

/* A resource must lie inside the memory it is bound to: the host driver
 * trusts the application there, and on lavapipe the memory is the daemon's
 * own. */
static bool
binding_fits(struct gpud_call *call, VkDeviceMemory memory, VkDeviceSize offset,
             const VkMemoryRequirements *req)
{
   const struct gpud_object *mem =
      gpud_call_named(call, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)memory);
   if (!mem)
      return false;
   if (offset > mem->bytes || req->size > mem->bytes - offset)
      return false;
   return req->alignment == 0 || offset % req->alignment == 0;
}

static bool
buffer_fits(struct gpud_call *call, VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize offset)
{
   VkMemoryRequirements req;
   call->disp->GetBufferMemoryRequirements((VkDevice)(uintptr_t)call->device->handle, buffer,
                                           &req);
   return binding_fits(call, memory, offset, &req);
}

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
   return binding_fits(call, memory, offset, &req.memoryRequirements);
}

/* A buffer or image bound once stays bound: binding again is refused. */
static bool
unbound(struct gpud_call *call, VkObjectType type, uint64_t handle)
{
   const struct gpud_object *obj = gpud_call_named(call, type, handle);
   return obj && !obj->bound && !obj->sparse;
}

static void twin_choose(struct gpud_call *call, VkBuffer *buffer, VkDeviceMemory memory);

#define BOUND(type, handle, memory, offset)                                               \
   gpud_call_mark_bound(call, type, (uint64_t)(uintptr_t)(handle), (uint64_t)(uintptr_t)(memory), \
                        (offset))

/* A buffer's binding checked, the buffer's twin chosen first where it has
 * one (twice: the buffer is named again in the same call); false: failed. */
static bool
buffer_binds(struct gpud_call *call, VkBuffer *buffer, VkDeviceMemory memory, VkDeviceSize offset,
             bool twice)
{
   if (!twice && unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)*buffer))
      twin_choose(call, buffer, memory);
   if (twice || !unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)*buffer) ||
       !buffer_fits(call, *buffer, memory, offset)) {
      gpud_call_fail(call, "a buffer is bound already or does not fit in its memory");
      return false;
   }
   return true;
}

void
gpud_exec_vkBindBufferMemory(struct gpud_call *call, struct wire_args_vkBindBufferMemory *a)
{
   if (!buffer_binds(call, &a->buffer, a->memory, a->memoryOffset, false))
      return;
   gpud_gen_exec_vkBindBufferMemory(call, a);
   if (a->ret == VK_SUCCESS)
      BOUND(VK_OBJECT_TYPE_BUFFER, a->buffer, a->memory, a->memoryOffset);
}

void
gpud_exec_vkBindBufferMemory2(struct gpud_call *call, struct wire_args_vkBindBufferMemory2 *a)
{
   for (uint32_t i = 0; i < a->bindInfoCount; i++) {
      VkBindBufferMemoryInfo *b = (VkBindBufferMemoryInfo *)&a->pBindInfos[i]; /* ours */
      bool twice = false;
      for (uint32_t j = 0; j < i; j++)
         twice |= a->pBindInfos[j].buffer == b->buffer;
      if (!buffer_binds(call, &b->buffer, b->memory, b->memoryOffset, twice))
         return;
   }
   gpud_gen_exec_vkBindBufferMemory2(call, a);
   for (uint32_t i = 0; a->ret == VK_SUCCESS && i < a->bindInfoCount; i++)
      BOUND(VK_OBJECT_TYPE_BUFFER, a->pBindInfos[i].buffer, a->pBindInfos[i].memory,
            a->pBindInfos[i].memoryOffset);
}

void
gpud_exec_vkBindImageMemory(struct gpud_call *call, struct wire_args_vkBindImageMemory *a)
{
   if (!unbound(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)a->image) ||
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
      if ((!plane && !unbound(call, VK_OBJECT_TYPE_IMAGE, (uint64_t)(uintptr_t)b->image)) ||
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

/* Host-visible memory is imported host memory, and the API lets only
 * resources created for that handle type be bound to imported memory: the
 * daemon says so on the client's behalf (clients may not send these
 * structures themselves), in the create info of a buffer or image and in
 * that of a requirements query (whose answer must be what such a resource
 * gets: the host may allow fewer memory types for it).  Sparse resources
 * are usable without a memory binding: remember which. */
struct external_patch {
   union {
      VkExternalMemoryBufferCreateInfo buffer;
      VkExternalMemoryImageCreateInfo image;
   } ours;
   const void *next; /* the create info's own chain */
   VkExternalMemoryHandleTypeFlags *theirs; /* the application's handle types */
   VkExternalMemoryHandleTypeFlags their_types;
};

/* Adds the host-allocation handle type to a create info's chain (sType: of
 * the external-memory structure that carries it). */
static void
external_add(const void **pnext, VkStructureType stype, struct external_patch *p)
{
   p->next = *pnext;
   VkBaseOutStructure *theirs = (VkBaseOutStructure *)gpud_chain_find(*pnext, stype);
   if (theirs) {
      /* the application's own handle types stay; host-visible memory is a
       * host allocation besides (both structures keep them after pNext) */
      p->theirs = &((VkExternalMemoryBufferCreateInfo *)theirs)->handleTypes;
      p->their_types = *p->theirs;
      *p->theirs |= VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
      return;
   }
   p->ours.buffer = (VkExternalMemoryBufferCreateInfo){
      .sType = stype,
      .pNext = *pnext,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
   };
   *pnext = &p->ours;
}

static void
external_restore(const void **pnext, struct external_patch *p)
{
   *pnext = p->next;
   if (p->theirs)
      *p->theirs = p->their_types;
}

static void
buffer_info_patch(struct gpud_call *call, VkBufferCreateInfo *info, struct external_patch *p)
{
   memset(p, 0, sizeof(*p));
   p->next = info->pNext;

   if (call->ctx->host->has_external_memory_host &&
       !(info->flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT))
      external_add(&info->pNext, VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, p);
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
image_info_patch(struct gpud_call *call, VkImageCreateInfo *info, struct external_patch *p)
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
   external_add(&info->pNext, VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO, p);
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
         external_restore(&info->pNext, p);
         memset(p, 0, sizeof(*p));
         p->next = info->pNext;
      }
   }
#endif
}

/* Whether a buffer gets a twin for imported host memory (gpud_object.h):
 * where the host imports memfds, but not a sparse buffer (bound piece by
 * piece by the host) nor one whose device address is replayed (a second
 * buffer could not take the same address). */
static bool
wants_twin(struct gpud_call *call, const VkBufferCreateInfo *info)
{
   return call->ctx->host->has_external_memory_host &&
          !(info->flags & (VK_BUFFER_CREATE_SPARSE_BINDING_BIT |
                           VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT));
}

/* A buffer is made as asked, and (where it may be bound to host-visible
 * memory) a twin able to take an imported host allocation: only its memory
 * tells which one it needs, at its bind. */
void
gpud_exec_vkCreateBuffer(struct gpud_call *call, struct wire_args_vkCreateBuffer *a)
{
   VkBufferCreateInfo *info = (VkBufferCreateInfo *)a->pCreateInfo; /* decoded: ours */
   call->new_create_flags = info->flags;
   call->new_size = info->size;
   uint64_t usage = info->usage;
#ifdef VK_KHR_maintenance5
   const VkBufferUsageFlags2CreateInfoKHR *usage2 =
      gpud_chain_find(info->pNext, VK_STRUCTURE_TYPE_BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR);
   if (usage2)
      usage = usage2->usage;
#endif
   call->new_transfer_src = usage & VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
   if (!wants_twin(call, info)) {
      struct external_patch p;
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkCreateBuffer(call, a);
      external_restore(&info->pNext, &p);
      return;
   }
   gpud_gen_exec_vkCreateBuffer(call, a);
   if (a->ret != VK_SUCCESS)
      return;
   struct external_patch p;
   buffer_info_patch(call, info, &p);
   VkBuffer twin = VK_NULL_HANDLE;
   VkResult r = call->disp->CreateBuffer((VkDevice)(uintptr_t)call->device->handle, info, NULL,
                                         &twin);
   external_restore(&info->pNext, &p);
   if (r == VK_SUCCESS) {
      call->new_twin = (uint64_t)(uintptr_t)twin;
      return;
   }
   /* (no twin: the buffer is the host allocation's, as before) */
   call->disp->DestroyBuffer((VkDevice)(uintptr_t)call->device->handle, *a->pBuffer, NULL);
   *a->pBuffer = VK_NULL_HANDLE;
   buffer_info_patch(call, info, &p);
   gpud_gen_exec_vkCreateBuffer(call, a);
   external_restore(&info->pNext, &p);
}

/* What a buffer with a twin needs of its memory: what either of the two
 * takes (the bind keeps the one that takes it). */
static void
twin_requirements(struct gpud_call *call, const struct gpud_object *buf, VkMemoryRequirements *r)
{
   if (!buf || !buf->twin)
      return;
   VkMemoryRequirements t;
   call->disp->GetBufferMemoryRequirements((VkDevice)(uintptr_t)call->device->handle,
                                           (VkBuffer)(uintptr_t)buf->twin, &t);
   r->size = UTIL_MAX(r->size, t.size);
   r->alignment = UTIL_MAX(r->alignment, t.alignment);
   r->memoryTypeBits |= t.memoryTypeBits;
}

/* At a buffer's bind: the twin it keeps, the one its memory takes (an
 * imported host allocation: the twin; else the buffer as made); *buffer
 * names the host buffer kept. */
static void
twin_choose(struct gpud_call *call, VkBuffer *buffer, VkDeviceMemory memory)
{
   struct gpud_object *buf =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)*buffer);
   const struct gpud_object *mem =
      gpud_call_named(call, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)memory);
   if (!buf || !buf->twin || !mem)
      return;
   VkDevice dev = (VkDevice)(uintptr_t)call->device->handle;
   if (mem->map) {
      call->disp->DestroyBuffer(dev, (VkBuffer)(uintptr_t)buf->handle, NULL);
      buf->handle = buf->twin;
      *buffer = (VkBuffer)(uintptr_t)buf->twin;
      /* (its name goes with it; private data was set on both) */
      if (buf->name && buf->name[0] && call->disp->SetDebugUtilsObjectNameEXT) {
         const VkDebugUtilsObjectNameInfoEXT name = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
            .objectType = VK_OBJECT_TYPE_BUFFER,
            .objectHandle = buf->handle,
            .pObjectName = buf->name,
         };
         call->disp->SetDebugUtilsObjectNameEXT(dev, &name);
      }
   } else {
      call->disp->DestroyBuffer(dev, (VkBuffer)(uintptr_t)buf->twin, NULL);
   }
   buf->twin = 0;
}

void
gpud_exec_vkCreateImage(struct gpud_call *call, struct wire_args_vkCreateImage *a)
{
   VkImageCreateInfo *info = (VkImageCreateInfo *)a->pCreateInfo; /* decoded: ours */
   struct external_patch p;
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
   external_restore(&info->pNext, &p);
}

/* A buffer's memory types as gpud_transfer.c steers them (not a sparse
 * one's: its memory is bound piece by piece, by the host). */
void
gpud_exec_vkGetBufferMemoryRequirements(struct gpud_call *call,
                                        struct wire_args_vkGetBufferMemoryRequirements *a)
{
   gpud_gen_exec_vkGetBufferMemoryRequirements(call, a);
   const struct gpud_object *buf =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->buffer);
   twin_requirements(call, buf, a->pMemoryRequirements);
   if (buf && !buf->sparse)
      a->pMemoryRequirements->memoryTypeBits = gpud_transfer_buffer_types(
         call->ctx->host, a->pMemoryRequirements->memoryTypeBits, buf->size);
}

void
gpud_exec_vkGetBufferMemoryRequirements2(struct gpud_call *call,
                                         struct wire_args_vkGetBufferMemoryRequirements2 *a)
{
   gpud_gen_exec_vkGetBufferMemoryRequirements2(call, a);
   const struct gpud_object *buf =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->pInfo->buffer);
   VkMemoryRequirements *r = &a->pMemoryRequirements->memoryRequirements;
   twin_requirements(call, buf, r);
   if (buf && !buf->sparse)
      r->memoryTypeBits = gpud_transfer_buffer_types(call->ctx->host, r->memoryTypeBits, buf->size);
}

void
gpud_exec_vkGetDeviceBufferMemoryRequirements(
   struct gpud_call *call, struct wire_args_vkGetDeviceBufferMemoryRequirements *a)
{
   VkBufferCreateInfo *info = (VkBufferCreateInfo *)a->pInfo->pCreateInfo;
   struct external_patch p;
   VkMemoryRequirements *r = &a->pMemoryRequirements->memoryRequirements;
   if (wants_twin(call, info)) {
      /* a buffer made of it has a twin: what either takes */
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      VkMemoryRequirements plain = *r;
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      external_restore(&info->pNext, &p);
      r->size = UTIL_MAX(r->size, plain.size);
      r->alignment = UTIL_MAX(r->alignment, plain.alignment);
      r->memoryTypeBits |= plain.memoryTypeBits;
   } else {
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      external_restore(&info->pNext, &p);
   }
   if (!(info->flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT))
      r->memoryTypeBits = gpud_transfer_buffer_types(call->ctx->host, r->memoryTypeBits, info->size);
}

void
gpud_exec_vkGetDeviceImageMemoryRequirements(
   struct gpud_call *call, struct wire_args_vkGetDeviceImageMemoryRequirements *a)
{
   VkImageCreateInfo *info = (VkImageCreateInfo *)a->pInfo->pCreateInfo;
   struct external_patch p;
   image_info_patch(call, info, &p);
   gpud_gen_exec_vkGetDeviceImageMemoryRequirements(call, a);
   external_restore(&info->pNext, &p);
}
