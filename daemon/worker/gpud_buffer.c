/* SPDX-License-Identifier: MIT */
/*
 * Buffers: made with the external-memory structures host-visible memory
 * needs, a twin where the host's copies want one (gpud_object.h), their
 * memory requirements as gpud_transfer.c steers them, and their bindings
 * checked against the memory (the twin its memory takes chosen then).
 */
#include "gpud_call.h"
#include "gpud_memory.h"
#include "gpud_transfer.h"

#include <stdlib.h>
#include <string.h>

static void twin_choose(struct gpud_call *call, VkBuffer *buffer, VkDeviceMemory memory);

#define BOUND(type, handle, memory, offset)                                               \
   gpud_call_mark_bound(call, type, (uint64_t)(uintptr_t)(handle), (uint64_t)(uintptr_t)(memory), \
                        (offset))

static bool
buffer_fits(struct gpud_call *call, VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize offset)
{
   VkMemoryRequirements req;
   call->disp->GetBufferMemoryRequirements((VkDevice)(uintptr_t)call->device->handle, buffer,
                                           &req);
   return gpud_memory_binding_fits(call, memory, offset, &req);
}

/* A buffer's binding checked, the buffer's twin chosen first where it has
 * one (twice: the buffer is named again in the same call); false: failed. */
static bool
buffer_binds(struct gpud_call *call, VkBuffer *buffer, VkDeviceMemory memory, VkDeviceSize offset,
             bool twice)
{
   if (!twice && gpud_memory_unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)*buffer))
      twin_choose(call, buffer, memory);
   if (twice || !gpud_memory_unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)*buffer) ||
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

static void
buffer_info_patch(struct gpud_call *call, VkBufferCreateInfo *info, struct gpud_external_patch *p)
{
   memset(p, 0, sizeof(*p));
   p->next = info->pNext;

   if (call->ctx->host->has_external_memory_host &&
       !(info->flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT))
      gpud_memory_external_add(&info->pNext, VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, p);
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
      struct gpud_external_patch p;
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkCreateBuffer(call, a);
      gpud_memory_external_restore(&info->pNext, &p);
      return;
   }
   gpud_gen_exec_vkCreateBuffer(call, a);
   if (a->ret != VK_SUCCESS)
      return;
   struct gpud_external_patch p;
   buffer_info_patch(call, info, &p);
   VkBuffer twin = VK_NULL_HANDLE;
   VkResult r = call->disp->CreateBuffer((VkDevice)(uintptr_t)call->device->handle, info, NULL,
                                         &twin);
   gpud_memory_external_restore(&info->pNext, &p);
   if (r == VK_SUCCESS) {
      call->new_twin = (uint64_t)(uintptr_t)twin;
      return;
   }
   /* (no twin: the buffer is the host allocation's, as before) */
   call->disp->DestroyBuffer((VkDevice)(uintptr_t)call->device->handle, *a->pBuffer, NULL);
   *a->pBuffer = VK_NULL_HANDLE;
   buffer_info_patch(call, info, &p);
   gpud_gen_exec_vkCreateBuffer(call, a);
   gpud_memory_external_restore(&info->pNext, &p);
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
   struct gpud_external_patch p;
   VkMemoryRequirements *r = &a->pMemoryRequirements->memoryRequirements;
   if (wants_twin(call, info)) {
      /* a buffer made of it has a twin: what either takes */
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      VkMemoryRequirements plain = *r;
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      gpud_memory_external_restore(&info->pNext, &p);
      r->size = UTIL_MAX(r->size, plain.size);
      r->alignment = UTIL_MAX(r->alignment, plain.alignment);
      r->memoryTypeBits |= plain.memoryTypeBits;
   } else {
      buffer_info_patch(call, info, &p);
      gpud_gen_exec_vkGetDeviceBufferMemoryRequirements(call, a);
      gpud_memory_external_restore(&info->pNext, &p);
   }
   if (!(info->flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT))
      r->memoryTypeBits = gpud_transfer_buffer_types(call->ctx->host, r->memoryTypeBits, info->size);
}
