/* SPDX-License-Identifier: MIT */
/*
 * Devices: made on the host with what gpud needs of them (timeline
 * semaphores, a global priority for the client's nice value, the device
 * extensions carried), their queues, their end; the diagnostics a lost device
 * still answers (checkpoints, fault info).
 */
#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_instance.h"
#include "gpud_lifetime.h"
#include "gpud_queue.h"
#include "gpud_sched_worker.h"
#include "gpud_wait.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "util_cpus.h"
#include "util_macros.h"

/* ---- devices -------------------------------------------------------------- */

static bool
ext_listed(const char *const *exts, uint32_t n, const char *name)
{
   for (uint32_t i = 0; i < n; i++) {
      if (!strcmp(exts[i], name))
         return true;
   }
   return false;
}

/* The ICD's WSI waits for its present copies on a timeline semaphore: a
 * device with VK_KHR_swapchain gets the (Vulkan 1.2 core) feature whether
 * the application asked for it or not. The chain is the decoder's own
 * memory, so it is changed in place. */
static bool
enable_timeline_semaphores(struct gpud_call *call, VkDeviceCreateInfo *ci)
{
   for (const VkBaseInStructure *c = ci->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
         ((VkPhysicalDeviceVulkan12Features *)c)->timelineSemaphore = VK_TRUE;
         return true;
      }
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES) {
         ((VkPhysicalDeviceTimelineSemaphoreFeatures *)c)->timelineSemaphore = VK_TRUE;
         return true;
      }
   }
   VkPhysicalDeviceTimelineSemaphoreFeatures *f = wire_dec_alloc(&call->dec, sizeof(*f));
   if (!f)
      return false;
   *f = (VkPhysicalDeviceTimelineSemaphoreFeatures){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
      .pNext = (void *)ci->pNext,
      .timelineSemaphore = VK_TRUE,
   };
   ci->pNext = f;
   return true;
}

/* The GPU interrupts a CPU as work completes, and its handler holds that CPU
 * for tens of microseconds (about 23 us a submission on an H100 in a
 * virtual machine): the worker's threads, which poll, keep to the others. */
static void
keep_off_interrupt_cpus(struct gpud_call *call)
{
   const struct daemon_host *host = call->ctx->host;
   if (!host->has_pci)
      return;
   char address[DAEMON_PCI_TEXT];
   daemon_pci_format(&host->pci, address);
   cpu_set_t cpus;
   if (util_pci_irq_cpus("", address, &cpus) > 0)
      gpud_context_keep_off_cpus(call->ctx, &cpus, address);
}

/* Whether a device's features enable host image copies (their commands run
 * only then: gpud_hostcopy.c). */
static bool
host_image_copy_enabled(const void *chain)
{
   for (const VkBaseInStructure *c = chain; c; c = c->pNext) {
#ifdef VK_VERSION_1_4
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_4_FEATURES &&
          ((const VkPhysicalDeviceVulkan14Features *)c)->hostImageCopy)
         return true;
#endif
#ifdef VK_EXT_host_image_copy
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_IMAGE_COPY_FEATURES_EXT &&
          ((const VkPhysicalDeviceHostImageCopyFeaturesEXT *)c)->hostImageCopy)
         return true;
#endif
   }
   return false;
}

/* The host's global queue priority for a client's queues, from its nice
 * level when the device is made (the fair share orders what enters the
 * queues; the GPU's own scheduler, where it has priorities, then prefers
 * the work of clients of higher priority, and may time-slice or preempt
 * for it): below 0 high, above 0 low.  Only where the host has the
 * extension and the application chose no priority for any queue itself.
 * The chain and the create infos are the decoder's own memory: each queue
 * create info gets a copy with the priority in front.  Returns the
 * priority given (0: none). */
static VkQueueGlobalPriorityEXT
add_global_priority(struct gpud_call *call, int nice, VkDeviceCreateInfo *ci, const char **exts,
                    uint32_t *n_exts, const VkExtensionProperties *host_exts, uint32_t n_host)
{
   if (!nice || !ci->queueCreateInfoCount)
      return 0;
   const char *ext = NULL;
   if (gpud_instance_host_has_extension(host_exts, n_host, VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME))
      ext = VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME;
   else if (gpud_instance_host_has_extension(host_exts, n_host, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME))
      ext = VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME;
   if (!ext)
      return 0;
   for (uint32_t i = 0; i < ci->queueCreateInfoCount; i++) {
      for (const VkBaseInStructure *c = ci->pQueueCreateInfos[i].pNext; c; c = c->pNext) {
         if (c->sType == VK_STRUCTURE_TYPE_DEVICE_QUEUE_GLOBAL_PRIORITY_CREATE_INFO_EXT)
            return 0;
      }
   }
   VkDeviceQueueCreateInfo *queues =
      wire_dec_alloc(&call->dec, sizeof(*queues) * ci->queueCreateInfoCount);
   VkDeviceQueueGlobalPriorityCreateInfoEXT *prio =
      wire_dec_alloc(&call->dec, sizeof(*prio) * ci->queueCreateInfoCount);
   if (!queues || !prio)
      return 0;
   VkQueueGlobalPriorityEXT level =
      nice < 0 ? VK_QUEUE_GLOBAL_PRIORITY_HIGH_EXT : VK_QUEUE_GLOBAL_PRIORITY_LOW_EXT;
   for (uint32_t i = 0; i < ci->queueCreateInfoCount; i++) {
      queues[i] = ci->pQueueCreateInfos[i];
      prio[i] = (VkDeviceQueueGlobalPriorityCreateInfoEXT){
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_GLOBAL_PRIORITY_CREATE_INFO_EXT,
         .pNext = queues[i].pNext,
         .globalPriority = level,
      };
      queues[i].pNext = &prio[i];
   }
   ci->pQueueCreateInfos = queues;
   if (!ext_listed(exts, *n_exts, VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME) &&
       !ext_listed(exts, *n_exts, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME))
      exts[(*n_exts)++] = ext;
   ci->enabledExtensionCount = *n_exts;
   ci->ppEnabledExtensionNames = exts;
   return level;
}

void
gpud_exec_vkCreateDevice(struct gpud_call *call, struct wire_args_vkCreateDevice *a)
{
   const struct daemon_host *host = call->ctx->host;
   const VkDeviceCreateInfo *in = a->pCreateInfo;
   keep_off_interrupt_cpus(call); /* before the host device starts its threads */
   const char **exts = wire_dec_alloc(&call->dec, sizeof(char *) * (in->enabledExtensionCount + 4));
   if (!exts) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   uint32_t n_host = 0;
   call->disp->EnumerateDeviceExtensionProperties(a->physicalDevice, NULL, &n_host, NULL);
   VkExtensionProperties *host_exts =
      wire_dec_alloc(&call->dec, sizeof(*host_exts) * (n_host ? n_host : 1));
   if (!host_exts) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   call->disp->EnumerateDeviceExtensionProperties(a->physicalDevice, NULL, &n_host, host_exts);
   uint32_t n = 0;
   bool *enabled = calloc(wire_extension_count ? wire_extension_count : 1, sizeof(*enabled));
   if (!enabled) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   for (uint32_t i = 0; i < in->enabledExtensionCount; i++) {
      const char *name = in->ppEnabledExtensionNames[i];
      const struct wire_extension *ext = gpud_instance_extension_carried(name);
      bool on_host = gpud_instance_host_has_extension(host_exts, n_host, name);
      if (!ext || (!on_host && !ext->own)) {
         free(enabled);
         a->ret = VK_ERROR_EXTENSION_NOT_PRESENT;
         return;
      }
      enabled[ext - wire_extensions] = true;
      if (on_host && strcmp(name, VK_EXT_DEBUG_MARKER_EXTENSION_NAME))
         exts[n++] = name; /* (debug markers are debug utils on the host) */
   }
   call->new_extensions = enabled;
   if (host->has_external_memory_host)
      exts[n++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
   /* Queues the host device has, asked for once each. */
   uint32_t n_families = 0;
   call->disp->GetPhysicalDeviceQueueFamilyProperties(a->physicalDevice, &n_families, NULL);
   VkQueueFamilyProperties *families =
      wire_dec_alloc(&call->dec, sizeof(*families) * (n_families ? n_families : 1));
   struct gpud_queue_info *queues =
      calloc(in->queueCreateInfoCount ? in->queueCreateInfoCount : 1, sizeof(*queues));
   if (!families || !queues) {
      free(queues);
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   call->disp->GetPhysicalDeviceQueueFamilyProperties(a->physicalDevice, &n_families, families);
   for (uint32_t i = 0; i < in->queueCreateInfoCount; i++) {
      const VkDeviceQueueCreateInfo *q = &in->pQueueCreateInfos[i];
      bool ok = q->queueFamilyIndex < n_families && q->queueCount >= 1 &&
                q->queueCount <= families[q->queueFamilyIndex].queueCount;
      for (uint32_t j = 0; ok && j < i; j++)
         ok = queues[j].family != q->queueFamilyIndex || queues[j].flags != q->flags;
      if (!ok) {
         free(queues);
         gpud_context_log(call->ctx, UTIL_LOG_WARNING,
                         "vkCreateDevice: queue family %u x%u does not exist on the host",
                         q->queueFamilyIndex, q->queueCount);
         a->ret = VK_ERROR_INITIALIZATION_FAILED;
         return;
      }
      queues[i] = (struct gpud_queue_info){q->queueFamilyIndex, q->queueCount, q->flags};
   }

   VkDeviceCreateInfo ci = *in;
   ci.enabledLayerCount = 0;
   ci.ppEnabledLayerNames = NULL;
   ci.enabledExtensionCount = n;
   ci.ppEnabledExtensionNames = exts;
   const struct wire_extension *swapchain = gpud_instance_extension_carried(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
   if (swapchain && enabled[swapchain - wire_extensions]) {
      if (!enable_timeline_semaphores(call, &ci)) {
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
         return;
      }
      /* (below Vulkan 1.2 the feature is the extension's) */
      if (call->instance->api_version < VK_API_VERSION_1_2 &&
          gpud_instance_host_has_extension(host_exts, n_host, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME) &&
          !ext_listed(exts, n, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME)) {
         exts[n++] = VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME;
         ci.enabledExtensionCount = n;
      }
   }
   /* what gpud reports off is never enabled on the host either, and what
    * gpud does itself is not asked of it */
   gpud_instance_clear_uncarried(ci.pNext);
   call->new_host_image_copy = host_image_copy_enabled(ci.pNext);
   gpud_instance_drop_own_features(&ci.pNext);
   VkDeviceCreateInfo plain = ci;
   const int nice = gpud_sched_nice(call->ctx->sched);
   VkQueueGlobalPriorityEXT priority =
      add_global_priority(call, nice, &ci, exts, &n, host_exts, n_host);
   a->ret = call->disp->CreateDevice(a->physicalDevice, &ci, NULL, a->pDevice);
   if (priority && a->ret != VK_SUCCESS) {
      /* (not allowed, say: a high priority may need privileges) */
      gpud_context_log(call->ctx, UTIL_LOG_INFO,
                       "vkCreateDevice: the host's %s global priority refused (%d): without",
                       priority == VK_QUEUE_GLOBAL_PRIORITY_LOW_EXT ? "low" : "high", a->ret);
      priority = 0;
      a->ret = call->disp->CreateDevice(a->physicalDevice, &plain, NULL, a->pDevice);
   } else if (priority) {
      gpud_context_log(call->ctx, UTIL_LOG_INFO,
                       "its device's queues at the host's %s global priority (nice %d)",
                       priority == VK_QUEUE_GLOBAL_PRIORITY_LOW_EXT ? "low" : "high", nice);
   }
   if (a->ret == VK_SUCCESS) {
      call->new_queues = queues;
      call->n_new_queues = in->queueCreateInfoCount;
   } else {
      free(queues);
   }
}

/* A queue must be one the device was created with: the host does not check. */
static bool
queue_exists(struct gpud_call *call, uint32_t family, uint32_t index,
             VkDeviceQueueCreateFlags flags)
{
   const struct gpud_object *dev = call->device;
   for (uint32_t i = 0; dev && i < dev->n_queues; i++) {
      if (dev->queues[i].family == family && dev->queues[i].flags == flags)
         return index < dev->queues[i].count;
   }
   return false;
}

/* The queue a vkGetDeviceQueue names, checked to exist, becomes the new
 * object's (false: failed). */
static bool
queue_named(struct gpud_call *call, uint32_t family, uint32_t index, VkDeviceQueueCreateFlags flags)
{
   if (!queue_exists(call, family, index, flags)) {
      gpud_call_fail(call, "no such queue on this device");
      return false;
   }
   call->new_queue_family = family;
   call->new_queue_index = index;
   return true;
}

void
gpud_exec_vkGetDeviceQueue(struct gpud_call *call, struct wire_args_vkGetDeviceQueue *a)
{
   if (queue_named(call, a->queueFamilyIndex, a->queueIndex, 0))
      gpud_gen_exec_vkGetDeviceQueue(call, a);
}

void
gpud_exec_vkGetDeviceQueue2(struct gpud_call *call, struct wire_args_vkGetDeviceQueue2 *a)
{
   const VkDeviceQueueInfo2 *q = a->pQueueInfo;
   if (queue_named(call, q->queueFamilyIndex, q->queueIndex, q->flags))
      gpud_gen_exec_vkGetDeviceQueue2(call, a);
}

void
gpud_exec_vkDestroyDevice(struct gpud_call *call, struct wire_args_vkDestroyDevice *a)
{
   if (call->device) {
      /* once the pipelines being made (which use them) are done */
      gpud_compile_drain(call->ctx);
      gpud_compile_reap(call->ctx);
      gpud_lifetime_destroy(call->ctx, call->device, NULL);
   }
}

#ifdef WIRE_HAS_vkCmdSetCheckpointGPUD
/* VK_NV_device_diagnostic_checkpoints: a marker travels as 64 bits
 * (icd/icd_device.c); the host keeps it as the pointer it was. */
void
gpud_exec_vkCmdSetCheckpointGPUD(struct gpud_call *call, struct wire_args_vkCmdSetCheckpointGPUD *a)
{
   if (!call->disp->CmdSetCheckpointNV || !call->device ||
       !gpud_device_enabled(call->device, VK_NV_DEVICE_DIAGNOSTIC_CHECKPOINTS_EXTENSION_NAME)) {
      gpud_call_fail(call, "vkCmdSetCheckpointNV: the device did not enable "
                           "VK_NV_device_diagnostic_checkpoints");
      return;
   }
   call->disp->CmdSetCheckpointNV(a->commandBuffer, (const void *)(uintptr_t)a->marker);
}

/* It runs on a lost device, which is when it has something to say. */
void
gpud_exec_vkGetQueueCheckpointDataGPUD(struct gpud_call *call,
                                       struct wire_args_vkGetQueueCheckpointDataGPUD *a)
{
   bool two = a->stages2;
   if (!call->device ||
       !gpud_device_enabled(call->device, VK_NV_DEVICE_DIAGNOSTIC_CHECKPOINTS_EXTENSION_NAME)) {
      gpud_call_fail(call, "vkGetQueueCheckpointDataNV: the device did not enable "
                           "VK_NV_device_diagnostic_checkpoints");
      return;
   }
   /* (the second query where the host has it: with synchronization2;
    * where not, no checkpoints, as the driver would have no entry point) */
   if (!(two ? (void *)call->disp->GetQueueCheckpointData2NV
             : (void *)call->disp->GetQueueCheckpointDataNV)) {
      *a->pCheckpointDataCount = 0;
      return;
   }
   uint32_t n = *a->pCheckpointDataCount;
   if (!a->pStages || !a->pMarkers) {
      if (two)
         call->disp->GetQueueCheckpointData2NV(a->queue, a->pCheckpointDataCount, NULL);
      else
         call->disp->GetQueueCheckpointDataNV(a->queue, a->pCheckpointDataCount, NULL);
      return;
   }
   /* either generation's structures, their stages and markers copied out */
#define CHECKPOINTS(type, stype, fn)                                                    \
   do {                                                                                \
      type *d = wire_dec_alloc(&call->dec, sizeof(*d) * (n ? n : 1));                  \
      for (uint32_t i = 0; d && i < n; i++)                                            \
         d[i] = (type){.sType = (stype)};                                              \
      if (!d)                                                                          \
         n = 0;                                                                        \
      else                                                                             \
         call->disp->fn(a->queue, &n, d);                                              \
      for (uint32_t i = 0; i < n; i++) {                                               \
         a->pStages[i] = d[i].stage;                                                   \
         a->pMarkers[i] = (uint64_t)(uintptr_t)d[i].pCheckpointMarker;                 \
      }                                                                                \
   } while (0)
   if (two)
      CHECKPOINTS(VkCheckpointData2NV, VK_STRUCTURE_TYPE_CHECKPOINT_DATA_2_NV,
                  GetQueueCheckpointData2NV);
   else
      CHECKPOINTS(VkCheckpointDataNV, VK_STRUCTURE_TYPE_CHECKPOINT_DATA_NV,
                  GetQueueCheckpointDataNV);
#undef CHECKPOINTS
   *a->pCheckpointDataCount = n;
}
#endif

#ifdef WIRE_HAS_vkGetDeviceFaultInfoGPUD
/* VK_EXT_device_fault, asked by the ICD with each array as bytes of its
 * capacity (icd/icd_device.c); it runs on a lost device, which is when it
 * has something to say. The capacities are what the bytes hold, whatever
 * the counts the application gave. */
void
gpud_exec_vkGetDeviceFaultInfoGPUD(struct gpud_call *call,
                                   struct wire_args_vkGetDeviceFaultInfoGPUD *a)
{
   if (!call->disp->GetDeviceFaultInfoEXT || !call->device ||
       !gpud_device_enabled(call->device, VK_EXT_DEVICE_FAULT_EXTENSION_NAME)) {
      gpud_call_fail(call, "vkGetDeviceFaultInfoEXT: the device did not enable VK_EXT_device_fault");
      return;
   }
   VkDeviceFaultCountsEXT *counts = a->pFaultCounts;
   counts->addressInfoCount =
      a->pAddressInfos ? (uint32_t)(a->addressInfosSize / sizeof(VkDeviceFaultAddressInfoEXT)) : 0;
   counts->vendorInfoCount =
      a->pVendorInfos ? (uint32_t)(a->vendorInfosSize / sizeof(VkDeviceFaultVendorInfoEXT)) : 0;
   counts->vendorBinarySize = a->pVendorBinaryData ? a->vendorBinarySize : 0;
   if (!a->pDescription || a->descriptionSize < VK_MAX_DESCRIPTION_SIZE) {
      a->ret = call->disp->GetDeviceFaultInfoEXT(a->device, counts, NULL);
      return;
   }
   VkDeviceFaultInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT,
      /* (the decoder's allocations are aligned for any structure) */
      .pAddressInfos = counts->addressInfoCount ? (void *)a->pAddressInfos : NULL,
      .pVendorInfos = counts->vendorInfoCount ? (void *)a->pVendorInfos : NULL,
      .pVendorBinaryData = counts->vendorBinarySize ? (void *)a->pVendorBinaryData : NULL,
   };
   a->ret = call->disp->GetDeviceFaultInfoEXT(a->device, counts, &info);
   memcpy(a->pDescription, info.description, VK_MAX_DESCRIPTION_SIZE);
}
#endif

/* A wait on a thread of its own (gpud_wait.c). */
void
gpud_exec_vkDeviceWaitIdle(struct gpud_call *call, struct wire_args_vkDeviceWaitIdle *a)
{
   if (gpud_wait_device_idle(call))
      return;
   gpud_gen_exec_vkDeviceWaitIdle(call, a);
   if (a->ret == VK_SUCCESS)
      gpud_queue_publish(call->device);
}
