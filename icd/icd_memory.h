/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Device memory (icd_memory.c): its mapping of the daemon's memfd, and
 * placed mappings.
 */

#include "icd_object.h"

struct icd_device_memory {
   struct icd_object base;
   VkDeviceSize size;
   bool coherent;   /* flushes and invalidates need no daemon */
   bool prefaulted; /* its pages were offered to the page tables (icd_memory.c) */
   bool external;   /* imported or exportable: others may see it */
   void *map;       /* whole allocation mapped from the daemon's memfd */
   size_t map_size;
   /* a placed mapping (VK_EXT_map_memory_placed): the memfd (kept where
    * the device enabled it, else -1) mapped again at the application's
    * address, placed_size bytes */
   int fd;
   void *placed;
   size_t placed_size;
};


/* Host-visible memory and its memfd (the caller's to close), for the WSI. */
VkResult icd_allocate_shared_memory(VkDevice device, uint32_t type_index, VkDeviceSize size,
                                    VkDeviceMemory *memory, int *fd, void **map);
