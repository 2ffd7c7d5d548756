/* SPDX-License-Identifier: MIT */
/*
 * Device memory: allocations charged to the client's heap room,
 * exportable and imported memory; what a buffer's or an image's binding
 * must fit, and the external-memory structures that let a resource be
 * bound to host-visible memory (gpud_buffer.c, gpud_image.c).
 */
#include "gpud_memory.h"

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
   const struct daemon_host *host = call->ctx->host;
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

/* A resource must lie inside the memory it is bound to: the host driver
 * trusts the application there, and on lavapipe the memory is the daemon's
 * own. */
bool
gpud_memory_binding_fits(struct gpud_call *call, VkDeviceMemory memory, VkDeviceSize offset,
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

/* A buffer or image bound once stays bound: binding again is refused. */
bool
gpud_memory_unbound(struct gpud_call *call, VkObjectType type, uint64_t handle)
{
   const struct gpud_object *obj = gpud_call_named(call, type, handle);
   return obj && !obj->bound && !obj->sparse;
}

/* Adds the host-allocation handle type to a create info's chain (sType: of
 * the external-memory structure that carries it). */
void
gpud_memory_external_add(const void **pnext, VkStructureType stype, struct gpud_external_patch *p)
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

void
gpud_memory_external_restore(const void **pnext, struct gpud_external_patch *p)
{
   *pnext = p->next;
   if (p->theirs)
      *p->theirs = p->their_types;
}
