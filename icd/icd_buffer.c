/* SPDX-License-Identifier: MIT */
/*
 * Buffers.  A buffer's handle is its id (no object of the ICD's): what the
 * ICD keeps of each is the memory it is bound to and where, in a table of
 * its device (open addressing by id), so that a copy from a buffer the
 * application maps can be read here (icd_queue.c).
 */
#include "icd.h"

#include <stdlib.h>

static uint32_t
slot_of(uint64_t id, uint32_t cap)
{
   /* (ids are small and dense: spread them) */
   return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* With buffers_mutex: the entry of id, or the empty one it would take. */
static struct icd_buffer_binding *
find(struct icd_device *dev, uint64_t id)
{
   uint32_t i = slot_of(id, dev->buffers_cap);
   while (dev->buffers[i].id && dev->buffers[i].id != id)
      i = (i + 1) & (dev->buffers_cap - 1);
   return &dev->buffers[i];
}

static bool
grow(struct icd_device *dev)
{
   uint32_t cap = dev->buffers_cap ? dev->buffers_cap * 2 : 256;
   struct icd_buffer_binding *old = dev->buffers, *table = calloc(cap, sizeof(*table));
   if (!table)
      return false;
   uint32_t old_cap = dev->buffers_cap;
   dev->buffers = table;
   dev->buffers_cap = cap;
   for (uint32_t i = 0; i < old_cap; i++) {
      if (old[i].id)
         *find(dev, old[i].id) = old[i];
   }
   free(old);
   return true;
}

static void
note_bind(struct icd_device *dev, VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize offset)
{
   uint64_t id = (uint64_t)buffer;
   if (!id || !memory)
      return;
   pthread_mutex_lock(&dev->buffers_mutex);
   /* at most half full */
   if ((dev->buffers_n + 1) * 2 <= dev->buffers_cap || grow(dev)) {
      struct icd_buffer_binding *b = find(dev, id);
      if (!b->id)
         dev->buffers_n++;
      *b = (struct icd_buffer_binding){
         .id = id,
         .memory = icd_device_memory_from_handle(memory),
         .offset = offset,
      };
   }
   pthread_mutex_unlock(&dev->buffers_mutex);
}

bool
icd_buffer_binding(struct icd_device *dev, VkBuffer buffer, struct icd_buffer_binding *ret)
{
   uint64_t id = (uint64_t)buffer;
   pthread_mutex_lock(&dev->buffers_mutex);
   bool found = false;
   if (id && dev->buffers_cap) {
      const struct icd_buffer_binding *b = find(dev, id);
      if ((found = b->id == id))
         *ret = *b;
   }
   pthread_mutex_unlock(&dev->buffers_mutex);
   return found;
}

void
icd_device_buffers_finish(struct icd_device *dev)
{
   free(dev->buffers);
   dev->buffers = NULL;
   dev->buffers_cap = dev->buffers_n = 0;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkBindBufferMemory(VkDevice device, VkBuffer buffer, VkDeviceMemory memory,
                       VkDeviceSize memoryOffset)
{
   VkResult r = icd_gen_vkBindBufferMemory(device, buffer, memory, memoryOffset);
   if (r == VK_SUCCESS)
      note_bind(icd_device_from_handle(device), buffer, memory, memoryOffset);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkBindBufferMemory2(VkDevice device, uint32_t bindInfoCount,
                        const VkBindBufferMemoryInfo *pBindInfos)
{
   VkResult r = icd_gen_vkBindBufferMemory2(device, bindInfoCount, pBindInfos);
   for (uint32_t i = 0; i < bindInfoCount; i++) {
      VkResult one = r;
#ifdef VK_KHR_maintenance6
      /* where the call failed, each bind's own result, where the
       * application asked for them (the daemon wrote them) */
      for (const VkBaseInStructure *c = pBindInfos[i].pNext; c && r != VK_SUCCESS; c = c->pNext) {
         if (c->sType == VK_STRUCTURE_TYPE_BIND_MEMORY_STATUS_KHR)
            one = *((const VkBindMemoryStatusKHR *)c)->pResult;
      }
#endif
      if (one == VK_SUCCESS)
         note_bind(icd_device_from_handle(device), pBindInfos[i].buffer, pBindInfos[i].memory,
                   pBindInfos[i].memoryOffset);
   }
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyBuffer(VkDevice device, VkBuffer buffer, const VkAllocationCallbacks *pAllocator)
{
   struct icd_device *dev = icd_device_from_handle(device);
   uint64_t id = (uint64_t)buffer;
   pthread_mutex_lock(&dev->buffers_mutex);
   if (id && dev->buffers_cap) {
      struct icd_buffer_binding *b = find(dev, id);
      if (b->id == id) {
         /* the entries after it that it displaced move back */
         uint32_t hole = (uint32_t)(b - dev->buffers), i = hole;
         dev->buffers[hole].id = 0;
         dev->buffers_n--;
         for (;;) {
            i = (i + 1) & (dev->buffers_cap - 1);
            if (!dev->buffers[i].id)
               break;
            uint32_t home = slot_of(dev->buffers[i].id, dev->buffers_cap);
            /* it may fill the hole if its home is not between the hole
             * and it (cyclically) */
            bool between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
            if (!between) {
               dev->buffers[hole] = dev->buffers[i];
               dev->buffers[i].id = 0;
               hole = i;
            }
         }
      }
   }
   pthread_mutex_unlock(&dev->buffers_mutex);
   icd_gen_vkDestroyBuffer(device, buffer, pAllocator);
}
