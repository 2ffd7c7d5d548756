/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Device memory as buffers and images need it (gpud_memory.c): a binding
 * checked against the memory's size and the resource's requirements, a
 * resource bound once, and the external-memory structures a create info
 * gets for host-visible memory (added, then restored).
 */
#include "gpud_call.h"

bool gpud_memory_binding_fits(struct gpud_call *call, VkDeviceMemory memory, VkDeviceSize offset,
                              const VkMemoryRequirements *req);
bool gpud_memory_unbound(struct gpud_call *call, VkObjectType type, uint64_t handle);

/* Host-visible memory is imported host memory, and the API lets only
 * resources created for that handle type be bound to imported memory: the
 * daemon says so on the client's behalf (clients may not send these
 * structures themselves), in the create info of a buffer or image and in
 * that of a requirements query (whose answer must be what such a resource
 * gets: the host may allow fewer memory types for it).  Sparse resources
 * are usable without a memory binding: remember which. */
struct gpud_external_patch {
   union {
      VkExternalMemoryBufferCreateInfo buffer;
      VkExternalMemoryImageCreateInfo image;
   } ours;
   const void *next; /* the create info's own chain */
   VkExternalMemoryHandleTypeFlags *theirs; /* the application's handle types */
   VkExternalMemoryHandleTypeFlags their_types;
};

void gpud_memory_external_add(const void **pnext, VkStructureType stype,
                              struct gpud_external_patch *p);
void gpud_memory_external_restore(const void **pnext, struct gpud_external_patch *p);
