/* SPDX-License-Identifier: MIT */
/*
 * Device memory.  Host-visible memory is a sealed memfd the daemon maps,
 * imports into the host driver and passes here with the allocation's reply;
 * the ICD maps the same pages once, so vkMapMemory is local and zero-copy.
 */
#include "icd.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util_fd.h"
#include "util_macros.h"
#include "util_memfd.h"

/* vkAllocateMemory; keep_fd (may be NULL) receives a copy of the memfd of
 * host-visible memory (-1 for other memory). */
static VkResult
allocate_memory(VkDevice device, const VkMemoryAllocateInfo *pAllocateInfo,
                VkDeviceMemory *pMemory, int *keep_fd)
{
   if (keep_fd)
      *keep_fd = -1;
   /* an fd the application gives must be open: sending a closed one would
    * fail the whole message and lose the connection */
   for (const VkBaseInStructure *c = pAllocateInfo->pNext; c; c = c->pNext) {
      const VkImportMemoryFdInfoKHR *import = (const VkImportMemoryFdInfoKHR *)c;
      if (c->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR && import->handleType &&
          !util_fd_open(import->fd)) {
         *pMemory = VK_NULL_HANDLE;
         return VK_ERROR_INVALID_EXTERNAL_HANDLE;
      }
   }
   struct icd_connection *conn = icd_connection_of(device);
   struct icd_device_memory *mem = icd_device_memory_from_handle(
      (VkDeviceMemory)icd_handle_create(conn, VK_OBJECT_TYPE_DEVICE_MEMORY, device));
   if (!mem)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   mem->size = pAllocateInfo->allocationSize;
   for (const VkBaseInStructure *c = pAllocateInfo->pNext; c; c = c->pNext) {
      mem->external |= c->sType == VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO ||
                       c->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR ||
                       c->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
   }
   /* Flushes and invalidates of coherent memory need no daemon. */
   struct icd_device *dev = icd_device_from_handle(device);
   VkPhysicalDeviceMemoryProperties props;
   icd_vkGetPhysicalDeviceMemoryProperties((VkPhysicalDevice)dev->physical_device, &props);
   mem->coherent = pAllocateInfo->memoryTypeIndex < props.memoryTypeCount &&
                   (props.memoryTypes[pAllocateInfo->memoryTypeIndex].propertyFlags &
                    VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
   VkDeviceMemory handle = (VkDeviceMemory)mem;

   struct icd_call call;
   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_vkAllocateMemory, true, false);
   wire_enc_vkAllocateMemory(e, device, pAllocateInfo, NULL, &handle);
   VkResult result = icd_call_end(&call);
   VkResult ret = ICD_LOST_vkAllocateMemory;
   int fd = -1;
   if (result == VK_SUCCESS) {
      wire_decreply_vkAllocateMemory(&call.reply, &ret, device, pAllocateInfo, NULL, &handle);
      fd = icd_call_take_fd(&call);
      result = icd_call_reply_done(&call);
   }
   if (result != VK_SUCCESS)
      result = ICD_LOST_vkAllocateMemory;
   else
      result = ret;
   if (result == VK_SUCCESS && !handle)
      result = ICD_LOST_vkAllocateMemory;
   if (result == VK_SUCCESS && fd >= 0) {
      struct stat st;
      if (util_memfd_check(fd, mem->size) < 0 || fstat(fd, &st) < 0) {
         /* not memory the daemon could have sent: it is not to be trusted */
         icd_connection_set_lost(conn, "vkAllocateMemory: a bad memfd");
         result = ICD_LOST_vkAllocateMemory;
      } else {
         mem->map_size = (size_t)st.st_size;
         mem->map = mmap(NULL, mem->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
         if (mem->map != MAP_FAILED && keep_fd)
            *keep_fd = util_fd_move(&fd);
         else if (mem->map != MAP_FAILED && (icd_device_from_handle(device))->keeps_memfds)
            mem->fd = util_fd_move(&fd);
         if (mem->map == MAP_FAILED) {
            mem->map = NULL;
            /* The daemon holds the allocation: give it back. */
            icd_vkFreeMemory(device, (VkDeviceMemory)mem, NULL);
            util_fd_close(&fd);
            *pMemory = VK_NULL_HANDLE;
            return VK_ERROR_OUT_OF_HOST_MEMORY;
         }
      }
   }
   util_fd_close(&fd);
   if (result != VK_SUCCESS) {
      icd_handle_destroy(VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)mem);
      *pMemory = VK_NULL_HANDLE;
      return result;
   }
   *pMemory = (VkDeviceMemory)mem;
   /* An imported fd belongs to the implementation once the import
    * succeeded: the daemon has its copy. */
   for (const VkBaseInStructure *c = pAllocateInfo->pNext; c; c = c->pNext) {
      const VkImportMemoryFdInfoKHR *import = (const VkImportMemoryFdInfoKHR *)c;
      if (c->sType == VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR && import->handleType) {
         int imported = import->fd;
         util_fd_close(&imported);
      }
   }
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAllocateMemory(VkDevice device, const VkMemoryAllocateInfo *pAllocateInfo,
                     const VkAllocationCallbacks *pAllocator, VkDeviceMemory *pMemory)
{
   return allocate_memory(device, pAllocateInfo, pMemory, NULL);
}

VkResult
icd_allocate_shared_memory(VkDevice device, uint32_t type_index, VkDeviceSize size,
                           VkDeviceMemory *memory, int *fd, void **map)
{
   const VkMemoryAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = size,
      .memoryTypeIndex = type_index,
   };
   VkResult r = allocate_memory(device, &info, memory, fd);
   if (r != VK_SUCCESS)
      return r;
   struct icd_device_memory *mem = icd_device_memory_from_handle(*memory);
   if (*fd < 0 || !mem->map) {
      util_fd_close(fd);
      icd_vkFreeMemory(device, *memory, NULL);
      *memory = VK_NULL_HANDLE;
      return VK_ERROR_OUT_OF_HOST_MEMORY; /* not memory both sides map */
   }
   *map = mem->map;
   return VK_SUCCESS;
}

/* A program fills what it maps: where the host driver made the pages
 * already (the NVIDIA driver pins imported memory), they go into this
 * process's page tables at its first map, in one call rather than one page
 * fault a page (half the speed of filling them: docs/performance.md,
 * "Mapped memory").  Small ranges fault as they are touched. */
#define PREFAULT_MIN (256u << 10)

static void
prefault(struct icd_device_memory *mem, void *at, VkDeviceSize offset, VkDeviceSize size)
{
   if (mem->prefaulted)
      return;
   mem->prefaulted = true;
   VkDeviceSize length = size == VK_WHOLE_SIZE || size > mem->size - offset ? mem->size - offset
                                                                           : size;
   if (length >= PREFAULT_MIN)
      util_map_prefault(at, (size_t)length);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkMapMemory(VkDevice device, VkDeviceMemory memory, VkDeviceSize offset, VkDeviceSize size,
                VkMemoryMapFlags flags, void **ppData)
{
   struct icd_device_memory *mem = icd_device_memory_from_handle(memory);
   if (icd_connection_is_lost(mem->base.conn))
      return ICD_LOST_vkMapMemory;
   if (!mem->map || offset > mem->size)
      return VK_ERROR_MEMORY_MAP_FAILED;
   *ppData = (uint8_t *)mem->map + offset;
   prefault(mem, *ppData, offset, size);
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkUnmapMemory(VkDevice device, VkDeviceMemory memory)
{
   /* The mapping lives as long as the allocation; a placed one (only by
    * vkMapMemory2, unmapped here as by vkUnmapMemory2 without flags) does
    * not. */
   struct icd_device_memory *mem = icd_device_memory_from_handle(memory);
   if (mem && mem->placed)
      munmap(mem->placed, mem->placed_size);
   if (mem)
      mem->placed = NULL;
}

#ifdef WIRE_HAS_vkMapMemory2KHR
#ifdef VK_EXT_map_memory_placed
/* A placed mapping (VK_EXT_map_memory_placed, gpud's own on every host):
 * the memfd mapped again, over the range the application reserved at its
 * address (MAP_FIXED replaces its reservation at once); unmapping leaves
 * the range unmapped or, with VK_MEMORY_UNMAP_RESERVE_BIT_EXT, reserved
 * again, as one mmap. The range is whole pages
 * (minPlacedMemoryMapAlignment is the page size). */
static VkResult
map_placed(struct icd_device_memory *mem, const VkMemoryMapInfoKHR *info, void *address,
           void **ppData)
{
   const size_t page = (size_t)sysconf(_SC_PAGESIZE);
   const VkDeviceSize size = info->size == VK_WHOLE_SIZE ? mem->size - info->offset : info->size;
   const size_t length = (size_t)((size + page - 1) & ~(VkDeviceSize)(page - 1));
   if (mem->fd < 0 || mem->placed || !address || (uintptr_t)address % page ||
       info->offset % page || info->offset > mem->size || size > mem->size - info->offset ||
       info->offset + length > mem->map_size || !length)
      return VK_ERROR_MEMORY_MAP_FAILED;
   void *map = mmap(address, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem->fd,
                    (off_t)info->offset);
   if (map == MAP_FAILED)
      return VK_ERROR_MEMORY_MAP_FAILED;
   mem->placed = map;
   mem->placed_size = length;
   *ppData = map;
   if (length >= PREFAULT_MIN)
      util_map_prefault(map, length);
   return VK_SUCCESS;
}

static VkResult
unmap_placed(struct icd_device_memory *mem, VkMemoryUnmapFlagsKHR flags)
{
   if ((flags & VK_MEMORY_UNMAP_RESERVE_BIT_EXT)
          ? mmap(mem->placed, mem->placed_size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED
          : munmap(mem->placed, mem->placed_size) < 0)
      return VK_ERROR_MEMORY_MAP_FAILED;
   mem->placed = NULL;
   mem->placed_size = 0;
   return VK_SUCCESS;
}
#endif

/* VK_KHR_map_memory2 (core in 1.4): the same mapping, or a placed one. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkMapMemory2KHR(VkDevice device, const VkMemoryMapInfoKHR *pMemoryMapInfo, void **ppData)
{
#ifdef VK_EXT_map_memory_placed
   if (pMemoryMapInfo->flags & VK_MEMORY_MAP_PLACED_BIT_EXT) {
      const VkMemoryMapPlacedInfoEXT *placed = NULL;
      for (const VkBaseInStructure *c = pMemoryMapInfo->pNext; c; c = c->pNext) {
         if (c->sType == VK_STRUCTURE_TYPE_MEMORY_MAP_PLACED_INFO_EXT)
            placed = (const VkMemoryMapPlacedInfoEXT *)c;
      }
      struct icd_device_memory *mem = icd_device_memory_from_handle(pMemoryMapInfo->memory);
      if (icd_connection_is_lost(mem->base.conn))
         return ICD_LOST_vkMapMemory;
      return map_placed(mem, pMemoryMapInfo, placed ? placed->pPlacedAddress : NULL, ppData);
   }
#endif
   return icd_vkMapMemory(device, pMemoryMapInfo->memory, pMemoryMapInfo->offset,
                          pMemoryMapInfo->size, pMemoryMapInfo->flags, ppData);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkUnmapMemory2KHR(VkDevice device, const VkMemoryUnmapInfoKHR *pMemoryUnmapInfo)
{
#ifdef VK_EXT_map_memory_placed
   struct icd_device_memory *mem = icd_device_memory_from_handle(pMemoryUnmapInfo->memory);
   if (mem->placed)
      return unmap_placed(mem, pMemoryUnmapInfo->flags);
#endif
   icd_vkUnmapMemory(device, pMemoryUnmapInfo->memory);
   return VK_SUCCESS;
}
#endif

/* Both processes map the same pages: for coherent memory a flush or an
 * invalidate has nothing to do (and the host driver, which never mapped the
 * memory through Vulkan, would call it invalid). Non-coherent memory goes to
 * the daemon, which maps it on the host for exactly this. */
static bool
all_coherent(uint32_t n, const VkMappedMemoryRange *ranges)
{
   for (uint32_t i = 0; i < n; i++) {
      const struct icd_device_memory *mem = icd_device_memory_from_handle(ranges[i].memory);
      if (!mem || !mem->coherent)
         return false;
   }
   return true;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkFlushMappedMemoryRanges(VkDevice device, uint32_t memoryRangeCount,
                              const VkMappedMemoryRange *pMemoryRanges)
{
   if (all_coherent(memoryRangeCount, pMemoryRanges))
      return icd_connection_lost(icd_connection_of(device)) ? ICD_LOST_vkFlushMappedMemoryRanges
                                                            : VK_SUCCESS;
   return icd_gen_vkFlushMappedMemoryRanges(device, memoryRangeCount, pMemoryRanges);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkInvalidateMappedMemoryRanges(VkDevice device, uint32_t memoryRangeCount,
                                   const VkMappedMemoryRange *pMemoryRanges)
{
   if (all_coherent(memoryRangeCount, pMemoryRanges))
      return icd_connection_lost(icd_connection_of(device))
                ? ICD_LOST_vkInvalidateMappedMemoryRanges
                : VK_SUCCESS;
   return icd_gen_vkInvalidateMappedMemoryRanges(device, memoryRangeCount, pMemoryRanges);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetMemoryFdPropertiesKHR(VkDevice device, VkExternalMemoryHandleTypeFlagBits handleType,
                               int fd, VkMemoryFdPropertiesKHR *pMemoryFdProperties)
{
   if (!util_fd_open(fd))
      return VK_ERROR_INVALID_EXTERNAL_HANDLE;
   return icd_gen_vkGetMemoryFdPropertiesKHR(device, handleType, fd, pMemoryFdProperties);
}
