/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What every part of the ICD stands on: the object base that each object
 * the ICD hands out starts with, the casts from a handle to its object,
 * which objects the daemon knows, the debug log, and the generated entry
 * points' declarations (icd_gen.h) that the hand-written ones override.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <vulkan/vk_icd.h>
#include <vulkan/vulkan_core.h>

#include "wire_completion.h"
#include "wire_gen.h"
#include "wire_icd.h"
#include "icd_gen.h"
#include "util_list.h"
#include "util_ring.h"
#include "util_transport.h"
#include "wire.h"

/* the newest core version of the registry gpud is generated from */
#define ICD_API_VERSION WIRE_API_VERSION
#define ICD_CACHE_MAX_ENTRIES 4096
/* Connect and handshake deadline per daemon (GPUD_CONNECT_TIMEOUT_MS). */
#define ICD_CONNECT_TIMEOUT_MS 1000
/* How long a connection waits for the process's next instance. */
#define ICD_IDLE_CONNECTION_MS 2000

/* Debug output: GPUD_DEBUG=wire,sync,init,waits,uploads,all... on stderr. */
enum icd_debug_flags {
   ICD_DEBUG_WIRE = 1u << 0,
   ICD_DEBUG_SYNC = 1u << 1,
   ICD_DEBUG_INIT = 1u << 2,
   ICD_DEBUG_WAITS = 1u << 3, /* each device's waits on its page, summed at its end */
   ICD_DEBUG_UPLOADS = 1u << 4, /* each submission of copies alone left to the worker, and why */
};
extern uint32_t icd_debug;
void icd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define icd_dbg(flag, ...)                                                                   \
   do {                                                                                      \
      if (icd_debug & (flag))                                                                \
         icd_log(__VA_ARGS__);                                                               \
   } while (0)

/* Every object the ICD hands out as a pointer starts with this; the layout
 * matches struct wire_object_header. */
struct icd_object {
   uintptr_t loader_data; /* loader's dispatch pointer (dispatchable types) */
   uint64_t id;
   struct icd_connection *conn;
   VkObjectType type;
};

/* ---- handles and objects -----------------------------------------------------
 *
 * A handle the ICD gives for one of these objects is the object's address
 * (icd_objects.c makes them); icd_<object>_from_handle() is the one way
 * back, checked by type, as Mesa's VK_FROM_HANDLE. */
#define ICD_DEFINE_HANDLE_CASTS(obj, VkType)                                  \
   struct obj;                                                                 \
   static inline struct obj *obj##_from_handle(VkType handle)                  \
   {                                                                           \
      return (struct obj *)(uintptr_t)handle;                                  \
   }                                                                           \
   static inline VkType obj##_to_handle(const struct obj *o)                   \
   {                                                                           \
      return (VkType)(uintptr_t)o;                                             \
   }

ICD_DEFINE_HANDLE_CASTS(icd_instance, VkInstance)
ICD_DEFINE_HANDLE_CASTS(icd_physical_device, VkPhysicalDevice)
ICD_DEFINE_HANDLE_CASTS(icd_device, VkDevice)
ICD_DEFINE_HANDLE_CASTS(icd_queue, VkQueue)
ICD_DEFINE_HANDLE_CASTS(icd_command_buffer, VkCommandBuffer)
ICD_DEFINE_HANDLE_CASTS(icd_command_pool, VkCommandPool)
ICD_DEFINE_HANDLE_CASTS(icd_device_memory, VkDeviceMemory)
ICD_DEFINE_HANDLE_CASTS(icd_fence, VkFence)
ICD_DEFINE_HANDLE_CASTS(icd_semaphore, VkSemaphore)
ICD_DEFINE_HANDLE_CASTS(icd_event, VkEvent)
ICD_DEFINE_HANDLE_CASTS(icd_query_pool, VkQueryPool)
ICD_DEFINE_HANDLE_CASTS(icd_descriptor_pool, VkDescriptorPool)
ICD_DEFINE_HANDLE_CASTS(icd_descriptor_update_template, VkDescriptorUpdateTemplate)
ICD_DEFINE_HANDLE_CASTS(icd_messenger, VkDebugUtilsMessengerEXT)
ICD_DEFINE_HANDLE_CASTS(icd_deferred_operation, VkDeferredOperationKHR)

/* Whether the daemon has the object (false for those only the ICD has:
 * descriptor update templates, messengers, report callbacks, surfaces). */
static inline bool
icd_daemon_knows(VkObjectType type, uint64_t handle)
{
   switch (type) {
   case VK_OBJECT_TYPE_UNKNOWN:
   case VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE:
   case VK_OBJECT_TYPE_DEBUG_UTILS_MESSENGER_EXT:
   case VK_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT:
   case VK_OBJECT_TYPE_SURFACE_KHR:
   case VK_OBJECT_TYPE_SWAPCHAIN_KHR:
   case VK_OBJECT_TYPE_DISPLAY_KHR:
   case VK_OBJECT_TYPE_DISPLAY_MODE_KHR:
      return false;
   default:
      return handle != 0;
   }
}
/* Private data of objects only the ICD has (icd_private.c). */
void icd_private_data_forget(uint64_t handle);

static inline struct icd_object *
icd_object(const void *handle)
{
   return (struct icd_object *)handle;
}

void *icd_object_alloc(size_t size, struct icd_connection *conn, VkObjectType type,
                       bool dispatchable);
void icd_object_free(void *object);
