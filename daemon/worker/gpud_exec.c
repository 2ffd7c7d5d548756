/* SPDX-License-Identifier: MIT */
/*
 * Executors written by hand: the commands whose host call needs more than
 * passing the decoded arguments on (gen_wire.py generates the rest, and
 * each of these overrides its weak generated default).
 */
#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_external.h"
#include "gpud_inject.h"
#include "gpud_lifetime.h"
#include "gpud_pipecache.h"
#include "gpud_queue.h"
#include "gpud_sched_worker.h"
#include "gpud_spirv.h"
#include "gpud_transfer.h"
#include "gpud_validate.h"
#include "gpud_wait.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util_cpus.h"
#include "util_fd.h"
#include "util_macros.h"
#include "util_memfd.h"

/* ---- instances and physical devices --------------------------------------- */

/* An instance's or a device's objects go once the pipelines being made
 * (which use them) are done. */
static void
destroy_all(struct gpud_context *ctx, struct gpud_object *device, struct gpud_object *instance)
{
   gpud_compile_drain(ctx);
   gpud_compile_reap(ctx);
   gpud_lifetime_destroy(ctx, device, instance);
}

/* The lowest API version of the host instance: what gpud's own calls
 * need (properties and features structures, external memory). */
#define HOST_API_FLOOR VK_API_VERSION_1_1

void
gpud_exec_vkCreateInstance(struct gpud_call *call, struct wire_args_vkCreateInstance *a)
{
   const struct gpud_host *host = call->ctx->host;
   /* The host instance is made with the application's own application
    * info (the host driver tunes by its names and versions, and compiles
    * shaders by its API version: the NVIDIA driver's code for one shader
    * differs between 1.3 and 1.4) at gpud's floor at least, with the
    * daemon's extensions (VK_EXT_debug_utils where the host has it, for
    * object names and labels) and no layers.  docs/architecture.md, "What
    * the host driver receives". */
   static const char *const debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
   VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .apiVersion = VK_API_VERSION_1_0,
   };
   if (a->pCreateInfo->pApplicationInfo) {
      app = *a->pCreateInfo->pApplicationInfo;
      app.pNext = NULL;
   }
   if (app.apiVersion < HOST_API_FLOOR)
      app.apiVersion = HOST_API_FLOOR;
   VkInstanceCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
      .enabledExtensionCount = host->has_debug_utils ? 1 : 0,
      .ppEnabledExtensionNames = &debug_utils,
   };
   call->new_api_version = app.apiVersion;
   VkDebugUtilsMessengerCreateInfoEXT messenger;
   gpud_validate_instance_info(call, &ci, &messenger);
   PFN_vkCreateInstance create =
      (PFN_vkCreateInstance)host->get_instance_proc_addr(NULL, "vkCreateInstance");
   a->ret = create(&ci, NULL, a->pInstance);
   if (a->ret == VK_SUCCESS)
      gpud_validate_instance_created(call, *a->pInstance);
}

void
gpud_exec_vkDestroyInstance(struct gpud_call *call, struct wire_args_vkDestroyInstance *a)
{
   if (call->instance)
      destroy_all(call->ctx, NULL, call->instance);
}

void
gpud_exec_vkEnumeratePhysicalDevices(struct gpud_call *call,
                                     struct wire_args_vkEnumeratePhysicalDevices *a)
{
   const struct gpud_host *host = call->ctx->host;
   const struct gpud_host_dispatch *d = call->disp;
   VkInstance instance = (VkInstance)(uintptr_t)call->instance->handle;
   uint32_t n = 0;
   a->ret = d->EnumeratePhysicalDevices(instance, &n, NULL);
   VkPhysicalDevice *all = n ? wire_dec_alloc(&call->dec, sizeof(*all) * n) : NULL;
   if (!all) {
      a->ret = VK_ERROR_INITIALIZATION_FAILED;
      return;
   }
   a->ret = d->EnumeratePhysicalDevices(instance, &n, all);
   VkPhysicalDevice served = VK_NULL_HANDLE;
   for (uint32_t i = 0; i < n; i++) {
      VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
      VkPhysicalDeviceProperties2 p2 = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
         .pNext = &id,
      };
      d->GetPhysicalDeviceProperties2(all[i], &p2);
      if (!memcmp(id.deviceUUID, host->device_uuid, VK_UUID_SIZE)) {
         served = all[i];
         break;
      }
   }
   /* The daemon serves exactly one device. */
   for (uint32_t i = 0; i < a->pPhysicalDevices_count; i++)
      a->pPhysicalDevices[i] = i == 0 ? served : VK_NULL_HANDLE;
   *a->pPhysicalDeviceCount = served ? 1 : 0;
   a->ret = served ? VK_SUCCESS : VK_ERROR_INITIALIZATION_FAILED;
}

/* The features and properties of gpud's own extensions, whatever the host
 * has (a host without the extension leaves its structures as they came). */
static void
own_features(const void *chain)
{
   for (const VkBaseInStructure *c = chain; c; c = c->pNext) {
#ifdef VK_EXT_map_memory_placed
      /* the ICD moves its mapping (icd/icd_memory.c) */
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT) {
         VkPhysicalDeviceMapMemoryPlacedFeaturesEXT *f = (void *)c;
         f->memoryMapPlaced = VK_TRUE;
         f->memoryMapRangePlaced = VK_TRUE;
         f->memoryUnmapReserve = VK_TRUE;
      }
#endif
   }
}

/* What a device asks of gpud's own extensions' features is the ICD's to
 * give: out of the chain the host sees (the decoder's own memory). */
static void
drop_own_features(const void **chain)
{
   for (const void **link = chain; *link;) {
      const VkBaseInStructure *c = *link;
#ifdef VK_EXT_map_memory_placed
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT) {
         *link = c->pNext;
         continue;
      }
#endif
      link = (const void **)&((VkBaseInStructure *)c)->pNext;
   }
}

static void
own_properties(const void *chain)
{
   for (const VkBaseInStructure *c = chain; c; c = c->pNext) {
#ifdef VK_EXT_map_memory_placed
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_PROPERTIES_EXT)
         ((VkPhysicalDeviceMapMemoryPlacedPropertiesEXT *)c)->minPlacedMemoryMapAlignment =
            (VkDeviceSize)sysconf(_SC_PAGESIZE);
#endif
   }
}

/* What applications see of the host device, changed on purpose (each
 * change is listed in docs/architecture.md). */
static void
patch_properties(struct gpud_call *call, VkPhysicalDeviceProperties *p)
{
   const char *host_name = call->ctx->host->device_name;
   char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = "gpud: ";
   size_t prefix = strlen(name);
   size_t n = strnlen(host_name, sizeof(name) - prefix - 1);
   memcpy(name + prefix, host_name, n);
   name[prefix + n] = '\0';
   memcpy(p->deviceName, name, sizeof(name));
   /* gpud carries the core versions of the registry it was generated
    * from (WIRE_API_VERSION): a newer host's is capped there */
   if (VK_API_VERSION_MAJOR(p->apiVersion) > VK_API_VERSION_MAJOR(WIRE_API_VERSION) ||
       (VK_API_VERSION_MAJOR(p->apiVersion) == VK_API_VERSION_MAJOR(WIRE_API_VERSION) &&
        VK_API_VERSION_MINOR(p->apiVersion) > VK_API_VERSION_MINOR(WIRE_API_VERSION)))
      p->apiVersion = WIRE_API_VERSION | VK_API_VERSION_PATCH(VK_HEADER_VERSION_COMPLETE);
}

void
gpud_exec_vkGetPhysicalDeviceProperties(struct gpud_call *call,
                                        struct wire_args_vkGetPhysicalDeviceProperties *a)
{
   gpud_gen_exec_vkGetPhysicalDeviceProperties(call, a);
   patch_properties(call, a->pProperties);
}

void
gpud_exec_vkGetPhysicalDeviceProperties2(struct gpud_call *call,
                                         struct wire_args_vkGetPhysicalDeviceProperties2 *a)
{
   gpud_gen_exec_vkGetPhysicalDeviceProperties2(call, a);
   patch_properties(call, &a->pProperties->properties);
   own_properties(a->pProperties->pNext);
}

/* Features whose commands gpud does not carry are off, whatever the host
 * has (each is listed in docs/architecture.md): in what the application is
 * told, and in what it asks of the host. chain: a pNext chain of the
 * decoder's own memory, changed in place. */
static void
clear_uncarried_features(const void *chain)
{
   for (const VkBaseInStructure *c = chain; c; c = c->pNext) {
      switch ((int)c->sType) {
#ifdef VK_KHR_acceleration_structure
      /* host builds and copies read the application's memory by host
       * address (icd/icd_deferred.c) */
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ACCELERATION_STRUCTURE_FEATURES_KHR:
         ((VkPhysicalDeviceAccelerationStructureFeaturesKHR *)c)
            ->accelerationStructureHostCommands = VK_FALSE;
         break;
#endif
#ifdef VK_KHR_ray_tracing_pipeline
      /* a group's capture-replay handle has no size vk.xml gives */
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_FEATURES_KHR: {
         VkPhysicalDeviceRayTracingPipelineFeaturesKHR *f = (void *)c;
         f->rayTracingPipelineShaderGroupHandleCaptureReplay = VK_FALSE;
         f->rayTracingPipelineShaderGroupHandleCaptureReplayMixed = VK_FALSE;
         break;
      }
#endif
#ifdef VK_EXT_descriptor_buffer
      /* capture-replay data goes back at creation in memory whose size
       * only a property tells (VkOpaqueCaptureDescriptorDataCreateInfoEXT
       * is not carried) */
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_BUFFER_FEATURES_EXT:
         ((VkPhysicalDeviceDescriptorBufferFeaturesEXT *)c)->descriptorBufferCaptureReplay =
            VK_FALSE;
         break;
#endif
      default:
         break;
      }
   }
}

void
gpud_exec_vkGetPhysicalDeviceFeatures2(struct gpud_call *call,
                                       struct wire_args_vkGetPhysicalDeviceFeatures2 *a)
{
   gpud_gen_exec_vkGetPhysicalDeviceFeatures2(call, a);
   clear_uncarried_features(a->pFeatures->pNext);
   own_features(a->pFeatures->pNext);
}

static void
patch_memory(struct gpud_call *call, VkPhysicalDeviceMemoryProperties *m)
{
   const struct gpud_host *host = call->ctx->host;
   /* Host-visible memory must be a memfd both sides map: a type the host
    * cannot import a memfd into is offered as device memory only. */
   for (uint32_t i = 0; i < m->memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++) {
      if (!(host->importable_types & (1u << i)))
         m->memoryTypes[i].propertyFlags &=
            ~(VkMemoryPropertyFlags)(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                     VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
   }
}

void
gpud_exec_vkGetPhysicalDeviceMemoryProperties(
   struct gpud_call *call, struct wire_args_vkGetPhysicalDeviceMemoryProperties *a)
{
   gpud_gen_exec_vkGetPhysicalDeviceMemoryProperties(call, a);
   patch_memory(call, a->pMemoryProperties);
}

void
gpud_exec_vkGetPhysicalDeviceMemoryProperties2(
   struct gpud_call *call, struct wire_args_vkGetPhysicalDeviceMemoryProperties2 *a)
{
   VkPhysicalDeviceMemoryBudgetPropertiesEXT *budget = NULL;
   for (VkBaseOutStructure *c = a->pMemoryProperties->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT) {
         budget = (VkPhysicalDeviceMemoryBudgetPropertiesEXT *)c;
         /* zero where the host has no VK_EXT_memory_budget */
         memset(budget->heapBudget, 0, sizeof(budget->heapBudget));
         memset(budget->heapUsage, 0, sizeof(budget->heapUsage));
      }
   }
   gpud_gen_exec_vkGetPhysicalDeviceMemoryProperties2(call, a);
   patch_memory(call, &a->pMemoryProperties->memoryProperties);
   /* VK_EXT_memory_budget: what the client holds, and what gpud's limits
    * and the host (where it says) let it hold in all. */
   struct gpud_memory_budget ours;
   if (budget && gpud_context_memory_budget(call->ctx, &ours)) {
      uint32_t heaps = a->pMemoryProperties->memoryProperties.memoryHeapCount;
      for (uint32_t h = 0; h < VK_MAX_MEMORY_HEAPS; h++) {
         if (h >= heaps || h >= ours.n_heaps) {
            budget->heapBudget[h] = budget->heapUsage[h] = 0;
            continue;
         }
         VkDeviceSize total = ours.budget[h];
         if (budget->heapBudget[h])
            total = UTIL_MIN(total, budget->heapBudget[h]);
         budget->heapUsage[h] = ours.usage[h];
         budget->heapBudget[h] = UTIL_MAX(total, ours.usage[h]);
      }
   }
}

static const struct wire_extension *
extension_carried(const char *name)
{
   for (unsigned i = 0; i < wire_extension_count; i++) {
      if (wire_extensions[i].device && !strcmp(wire_extensions[i].name, name))
         return &wire_extensions[i];
   }
   return NULL;
}

static bool
host_has_extension(const VkExtensionProperties *exts, uint32_t n, const char *name)
{
   for (uint32_t i = 0; i < n; i++) {
      if (!strcmp(exts[i].extensionName, name))
         return true;
   }
   return false;
}

void
gpud_exec_vkEnumerateDeviceExtensionProperties(
   struct gpud_call *call, struct wire_args_vkEnumerateDeviceExtensionProperties *a)
{
   if (a->pLayerName) {
      a->ret = VK_ERROR_LAYER_NOT_PRESENT;
      return;
   }
   VkPhysicalDevice pdev = (VkPhysicalDevice)(uintptr_t)call->touched[0]->handle;
   uint32_t n = 0;
   call->disp->EnumerateDeviceExtensionProperties(pdev, NULL, &n, NULL);
   VkExtensionProperties *all = wire_dec_alloc(&call->dec, sizeof(*all) * (n ? n : 1));
   if (!all) {
      a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
      return;
   }
   call->disp->EnumerateDeviceExtensionProperties(pdev, NULL, &n, all);
   /* gpud's own extensions, where the host lacks them */
   for (unsigned j = 0; j < wire_extension_count; j++) {
      if (!wire_extensions[j].device || !wire_extensions[j].own ||
          host_has_extension(all, n, wire_extensions[j].name))
         continue;
      VkExtensionProperties *more = wire_dec_alloc(&call->dec, sizeof(*all) * (n + 1));
      if (!more) {
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
         return;
      }
      memcpy(more, all, sizeof(*all) * n);
      memset(&more[n], 0, sizeof(more[n]));
      snprintf(more[n].extensionName, sizeof(more[n].extensionName), "%s",
               wire_extensions[j].name);
      more[n].specVersion = wire_extensions[j].spec_version;
      all = more;
      n++;
   }
   uint32_t total = 0;
   for (uint32_t i = 0; i < n; i++) {
      const struct wire_extension *ext = extension_carried(all[i].extensionName);
      if (!ext)
         continue;
      /* A newer revision on the host may have structures gpud does not
       * carry: the application sees the one gpud knows. */
      all[i].specVersion = UTIL_MIN(all[i].specVersion, ext->spec_version);
      if (a->pProperties && total < a->pProperties_cap && total < *a->pPropertyCount)
         a->pProperties[total] = all[i];
      total++;
   }
   if (!a->pProperties) {
      *a->pPropertyCount = total;
      a->ret = VK_SUCCESS;
   } else {
      uint32_t written = UTIL_MIN(total, UTIL_MIN(*a->pPropertyCount, a->pProperties_cap));
      *a->pPropertyCount = written;
      a->ret = written < total ? VK_INCOMPLETE : VK_SUCCESS;
   }
}

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
   const struct gpud_host *host = call->ctx->host;
   if (!host->has_pci)
      return;
   char address[GPUD_PCI_TEXT];
   gpud_pci_format(&host->pci, address);
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
   if (host_has_extension(host_exts, n_host, VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME))
      ext = VK_KHR_GLOBAL_PRIORITY_EXTENSION_NAME;
   else if (host_has_extension(host_exts, n_host, VK_EXT_GLOBAL_PRIORITY_EXTENSION_NAME))
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
   const struct gpud_host *host = call->ctx->host;
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
      const struct wire_extension *ext = extension_carried(name);
      bool on_host = host_has_extension(host_exts, n_host, name);
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
   const struct wire_extension *swapchain = extension_carried(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
   if (swapchain && enabled[swapchain - wire_extensions]) {
      if (!enable_timeline_semaphores(call, &ci)) {
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY;
         return;
      }
      /* (below Vulkan 1.2 the feature is the extension's) */
      if (call->instance->api_version < VK_API_VERSION_1_2 &&
          host_has_extension(host_exts, n_host, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME) &&
          !ext_listed(exts, n, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME)) {
         exts[n++] = VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME;
         ci.enabledExtensionCount = n;
      }
   }
   /* what gpud reports off is never enabled on the host either, and what
    * gpud does itself is not asked of it */
   clear_uncarried_features(ci.pNext);
   call->new_host_image_copy = host_image_copy_enabled(ci.pNext);
   drop_own_features(&ci.pNext);
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

void
gpud_exec_vkGetDeviceQueue(struct gpud_call *call, struct wire_args_vkGetDeviceQueue *a)
{
   if (!queue_exists(call, a->queueFamilyIndex, a->queueIndex, 0)) {
      gpud_call_fail(call, "no such queue on this device");
      return;
   }
   call->new_queue_family = a->queueFamilyIndex;
   call->new_queue_index = a->queueIndex;
   gpud_gen_exec_vkGetDeviceQueue(call, a);
}

void
gpud_exec_vkGetDeviceQueue2(struct gpud_call *call, struct wire_args_vkGetDeviceQueue2 *a)
{
   const VkDeviceQueueInfo2 *q = a->pQueueInfo;
   if (!queue_exists(call, q->queueFamilyIndex, q->queueIndex, q->flags)) {
      gpud_call_fail(call, "no such queue on this device");
      return;
   }
   call->new_queue_family = q->queueFamilyIndex;
   call->new_queue_index = q->queueIndex;
   gpud_gen_exec_vkGetDeviceQueue2(call, a);
}

void
gpud_exec_vkDestroyDevice(struct gpud_call *call, struct wire_args_vkDestroyDevice *a)
{
   if (call->device)
      destroy_all(call->ctx, call->device, NULL);
}

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

/* ---- pools ---------------------------------------------------------------- */

void
gpud_exec_vkResetDescriptorPool(struct gpud_call *call, struct wire_args_vkResetDescriptorPool *a)
{
   gpud_gen_exec_vkResetDescriptorPool(call, a);
   /* the pool's sets are gone: forget them, keep the pool */
   if (call->n_touched > 1)
      gpud_lifetime_forget_children(call->ctx, call->touched[1]);
}

/* ---- queries -------------------------------------------------------------- */

void
gpud_exec_vkGetQueryPoolResults(struct gpud_call *call, struct wire_args_vkGetQueryPoolResults *a)
{
   /* The host writes queryCount results at stride, whatever dataSize says:
    * give it room for the largest result (statistics: 11 values, plus
    * availability, 64 bits each) so a lying client cannot overrun. */
   uint64_t need = a->queryCount ? (uint64_t)(a->queryCount - 1) * a->stride + 12 * 8 : 0;
   if (need > WIRE_MAX_OUTPUT_BYTES) {
      gpud_call_fail(call, "results too large");
      return;
   }
   if (a->pData && need > a->dataSize) {
      uint8_t *room = wire_dec_alloc(&call->dec, need);
      if (!room)
         return;
      a->pData = room;
   }
   if (!a->pData) {
      a->ret = VK_SUCCESS;
      return;
   }
   if (a->flags & VK_QUERY_RESULT_WAIT_BIT) {
      gpud_wait_query(call, a);
      return;
   }
   gpud_gen_exec_vkGetQueryPoolResults(call, a);
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

void
gpud_exec_vkBindBufferMemory(struct gpud_call *call, struct wire_args_vkBindBufferMemory *a)
{
   if (unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->buffer))
      twin_choose(call, &a->buffer, a->memory);
   if (!unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)a->buffer) ||
       !buffer_fits(call, a->buffer, a->memory, a->memoryOffset)) {
      gpud_call_fail(call, "the buffer is bound already or does not fit in its memory");
      return;
   }
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
      if (!twice && unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)b->buffer))
         twin_choose(call, &b->buffer, b->memory);
      if (twice || !unbound(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)b->buffer) ||
          !buffer_fits(call, b->buffer, b->memory, b->memoryOffset)) {
         gpud_call_fail(call, "a buffer is bound already or does not fit in its memory");
         return;
      }
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

/* ---- transfers -------------------------------------------------------------- */

/* The simplest transfers are checked against the buffers' sizes, which the
 * daemon knows: an out-of-range one would make the host driver write past
 * the client's memory (in its own worker, which it could crash or
 * corrupt).  The check makes that a protocol error, deterministically. */
static bool
range_fits(struct gpud_call *call, VkBuffer buffer, VkDeviceSize offset, VkDeviceSize size,
           const char *what)
{
   const struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_BUFFER, (uint64_t)(uintptr_t)buffer);
   if (!obj || obj->sparse)
      return true;
   if (size == VK_WHOLE_SIZE ? offset < obj->size
                             : offset <= obj->size && size <= obj->size - offset)
      return true;
   snprintf(call->validation_error, sizeof(call->validation_error),
            "%s: %" PRIu64 " bytes at %" PRIu64 " are past the end of a %" PRIu64
            "-byte buffer",
            what, size, offset, obj->size);
   gpud_call_fail(call, call->validation_error);
   return false;
}

void
gpud_exec_vkCmdUpdateBuffer(struct gpud_call *call, struct wire_args_vkCmdUpdateBuffer *a)
{
   if (range_fits(call, a->dstBuffer, a->dstOffset, a->dataSize, "dstBuffer"))
      gpud_gen_exec_vkCmdUpdateBuffer(call, a);
}

void
gpud_exec_vkCmdFillBuffer(struct gpud_call *call, struct wire_args_vkCmdFillBuffer *a)
{
   if (range_fits(call, a->dstBuffer, a->dstOffset, a->size, "dstBuffer"))
      gpud_gen_exec_vkCmdFillBuffer(call, a);
}

static bool
copies_fit(struct gpud_call *call, VkBuffer src, VkBuffer dst, uint32_t n,
           const VkBufferCopy *regions, const VkBufferCopy2 *regions2)
{
   for (uint32_t i = 0; i < n; i++) {
      VkDeviceSize s = regions ? regions[i].srcOffset : regions2[i].srcOffset;
      VkDeviceSize d = regions ? regions[i].dstOffset : regions2[i].dstOffset;
      VkDeviceSize size = regions ? regions[i].size : regions2[i].size;
      if (size == VK_WHOLE_SIZE || !range_fits(call, src, s, size, "source") ||
          !range_fits(call, dst, d, size, "destination")) {
         if (!call->dec.fatal)
            gpud_call_fail(call, "a region of VK_WHOLE_SIZE bytes");
         return false;
      }
   }
   return true;
}

void
gpud_exec_vkCmdCopyBuffer(struct gpud_call *call, struct wire_args_vkCmdCopyBuffer *a)
{
   if (!copies_fit(call, a->srcBuffer, a->dstBuffer, a->regionCount, a->pRegions, NULL))
      return;
   gpud_gen_exec_vkCmdCopyBuffer(call, a);
   gpud_transfer_note_copy(call, a->commandBuffer, a->srcBuffer, a->dstBuffer, a->regionCount,
                           a->pRegions, NULL);
}

void
gpud_exec_vkCmdCopyBuffer2(struct gpud_call *call, struct wire_args_vkCmdCopyBuffer2 *a)
{
   const VkCopyBufferInfo2 *info = a->pCopyBufferInfo;
   if (!copies_fit(call, info->srcBuffer, info->dstBuffer, info->regionCount, NULL,
                   info->pRegions))
      return;
   gpud_gen_exec_vkCmdCopyBuffer2(call, a);
   /* (a chain of its own, on the regions or the info: the GPU's) */
   bool chained = info->pNext != NULL;
   for (uint32_t i = 0; i < info->regionCount; i++)
      chained |= info->pRegions[i].pNext != NULL;
   if (chained)
      gpud_transfer_note_barrier(call, a->commandBuffer, true);
   else
      gpud_transfer_note_copy(call, a->commandBuffer, info->srcBuffer, info->dstBuffer,
                              info->regionCount, NULL, info->pRegions);
}

/* Barriers that only order buffers' memory leave a recording of copies the
 * worker may make itself; one of images (a layout changes) or that moves a
 * buffer between queue families is the GPU's. */
static bool
buffer_barrier_moves(uint32_t src_family, uint32_t dst_family)
{
   return src_family != dst_family;
}

void
gpud_exec_vkCmdPipelineBarrier(struct gpud_call *call, struct wire_args_vkCmdPipelineBarrier *a)
{
   gpud_gen_exec_vkCmdPipelineBarrier(call, a);
   bool gpu = a->imageMemoryBarrierCount != 0;
   for (uint32_t i = 0; i < a->bufferMemoryBarrierCount; i++)
      gpu |= buffer_barrier_moves(a->pBufferMemoryBarriers[i].srcQueueFamilyIndex,
                                  a->pBufferMemoryBarriers[i].dstQueueFamilyIndex) ||
             a->pBufferMemoryBarriers[i].pNext;
   for (uint32_t i = 0; i < a->memoryBarrierCount; i++)
      gpu |= a->pMemoryBarriers[i].pNext != NULL;
   gpud_transfer_note_barrier(call, a->commandBuffer, gpu);
}

#ifdef WIRE_HAS_vkCmdPipelineBarrier2
void
gpud_exec_vkCmdPipelineBarrier2(struct gpud_call *call, struct wire_args_vkCmdPipelineBarrier2 *a)
{
   gpud_gen_exec_vkCmdPipelineBarrier2(call, a);
   const VkDependencyInfo *d = a->pDependencyInfo;
   bool gpu = d->imageMemoryBarrierCount != 0 || d->pNext;
   for (uint32_t i = 0; i < d->bufferMemoryBarrierCount; i++)
      gpu |= buffer_barrier_moves(d->pBufferMemoryBarriers[i].srcQueueFamilyIndex,
                                  d->pBufferMemoryBarriers[i].dstQueueFamilyIndex) ||
             d->pBufferMemoryBarriers[i].pNext;
   for (uint32_t i = 0; i < d->memoryBarrierCount; i++)
      gpu |= d->pMemoryBarriers[i].pNext != NULL;
   gpud_transfer_note_barrier(call, a->commandBuffer, gpu);
}
#endif

/* ---- descriptor sets against their layouts --------------------------------- */

static int
cmp_binding(const void *x, const void *y)
{
   const struct gpud_set_binding *a = x, *b = y;
   return a->binding < b->binding ? -1 : a->binding > b->binding;
}

/* The layout's bindings, for checking the writes into its sets (the host
 * driver indexes its own tables with them). */
void
gpud_exec_vkCreateDescriptorSetLayout(struct gpud_call *call,
                                      struct wire_args_vkCreateDescriptorSetLayout *a)
{
   const VkDescriptorSetLayoutCreateInfo *info = a->pCreateInfo;
   struct gpud_set_layout *l =
      calloc(1, sizeof(*l) + (size_t)info->bindingCount * sizeof(l->b[0]));
   if (l) {
      l->refs = 1;
      l->n = info->bindingCount;
      for (uint32_t i = 0; i < l->n; i++)
         l->b[i] = (struct gpud_set_binding){info->pBindings[i].binding,
                                             info->pBindings[i].descriptorType,
                                             info->pBindings[i].descriptorCount};
      qsort(l->b, l->n, sizeof(l->b[0]), cmp_binding);
   }
   call->new_set_layout = l; /* none: its sets go unchecked */
   gpud_gen_exec_vkCreateDescriptorSetLayout(call, a);
}

void
gpud_exec_vkAllocateDescriptorSets(struct gpud_call *call,
                                   struct wire_args_vkAllocateDescriptorSets *a)
{
   const VkDescriptorSetAllocateInfo *info = a->pAllocateInfo;
   call->new_set_layouts = calloc(info->descriptorSetCount ? info->descriptorSetCount : 1,
                                  sizeof(*call->new_set_layouts));
   for (uint32_t i = 0; call->new_set_layouts && i < info->descriptorSetCount; i++) {
      const struct gpud_object *layout =
         gpud_call_named(call, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT,
                         (uint64_t)(uintptr_t)info->pSetLayouts[i]);
      call->new_set_layouts[i] = gpud_set_layout_ref(layout ? layout->set_layout : NULL);
   }
   call->n_new_set_layouts = call->new_set_layouts ? info->descriptorSetCount : 0;
   gpud_gen_exec_vkAllocateDescriptorSets(call, a);
}

/* Whether count descriptors from element first of binding fit in the set:
 * the binding must exist, and the descriptors from it on (an update rolls
 * over into the next bindings) must number at least first + count.  An
 * upper bound (every later binding counted, whatever its type; a variable
 * count at the layout's maximum), so it refuses no valid update. */
static bool
set_range_fits(struct gpud_call *call, VkDescriptorSet set, uint32_t binding, uint32_t first,
               uint32_t count, const VkDescriptorType *type, const char *what)
{
   const struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_DESCRIPTOR_SET, (uint64_t)(uintptr_t)set);
   const struct gpud_set_layout *l = obj ? obj->set_layout : NULL;
   if (!l)
      return true;
   uint32_t k = 0;
   while (k < l->n && l->b[k].binding != binding)
      k++;
   const char *why = NULL;
   uint64_t room = 0;
   if (k == l->n || !l->b[k].count) {
      why = "a binding its set's layout does not have";
   } else if (type && l->b[k].type != VK_DESCRIPTOR_TYPE_MUTABLE_EXT && l->b[k].type != *type) {
      why = "a descriptor type its binding does not have";
   } else {
      for (uint32_t j = k; j < l->n; j++)
         room += l->b[j].count;
      if ((uint64_t)first + count > room)
         why = "more descriptors than the set has from its binding on";
   }
   if (!why)
      return true;
   snprintf(call->validation_error, sizeof(call->validation_error),
            "vkUpdateDescriptorSets: %s names %s (binding %u, element %u, %u descriptors)", what,
            why, binding, first, count);
   gpud_call_fail(call, call->validation_error);
   return false;
}

/* A write's dstSet is ignored only when it is pushed (the decoder lets it be
 * null for that); an update must name its set, and stay inside it. */
void
gpud_exec_vkUpdateDescriptorSets(struct gpud_call *call,
                                 struct wire_args_vkUpdateDescriptorSets *a)
{
   for (uint32_t i = 0; i < a->descriptorWriteCount; i++) {
      const VkWriteDescriptorSet *w = &a->pDescriptorWrites[i];
      if (!w->dstSet) {
         gpud_call_fail(call, "vkUpdateDescriptorSets: a write without a set");
         return;
      }
      if (!set_range_fits(call, w->dstSet, w->dstBinding, w->dstArrayElement,
                          w->descriptorCount, &w->descriptorType, "a write"))
         return;
   }
   for (uint32_t i = 0; i < a->descriptorCopyCount; i++) {
      const VkCopyDescriptorSet *c = &a->pDescriptorCopies[i];
      if (!set_range_fits(call, c->srcSet, c->srcBinding, c->srcArrayElement,
                          c->descriptorCount, NULL, "a copy's source") ||
          !set_range_fits(call, c->dstSet, c->dstBinding, c->dstArrayElement,
                          c->descriptorCount, NULL, "a copy's destination"))
         return;
   }
   gpud_gen_exec_vkUpdateDescriptorSets(call, a);
}

/* VK_EXT_debug_utils: the name is kept for gpudctl and goes on to the host
 * where it has the extension. */
void
gpud_exec_vkSetDebugUtilsObjectNameEXT(struct gpud_call *call,
                                       struct wire_args_vkSetDebugUtilsObjectNameEXT *a)
{
   /* the named object is the last handle the command decoded */
   if (call->n_touched >= 2)
      gpud_object_set_name(call->ctx, call->touched[call->n_touched - 1],
                           a->pNameInfo->pObjectName);
   /* NULL and "" both unname; some hosts (Mesa 22.3) fail a NULL name */
   const VkDebugUtilsObjectNameInfoEXT *given = a->pNameInfo;
   VkDebugUtilsObjectNameInfoEXT info = *given;
   if (!info.pObjectName)
      info.pObjectName = "";
   a->pNameInfo = &info;
   gpud_gen_exec_vkSetDebugUtilsObjectNameEXT(call, a);
   a->pNameInfo = given;
}

/* Private data of a buffer with a twin goes on both (either stays). */
void
gpud_exec_vkSetPrivateData(struct gpud_call *call, struct wire_args_vkSetPrivateData *a)
{
   gpud_gen_exec_vkSetPrivateData(call, a);
   const struct gpud_object *buf = a->objectType == VK_OBJECT_TYPE_BUFFER
                                      ? gpud_call_named(call, VK_OBJECT_TYPE_BUFFER,
                                                        a->objectHandle)
                                      : NULL;
   if (a->ret == VK_SUCCESS && buf && buf->twin)
      a->ret = call->disp->SetPrivateData(a->device, a->objectType, buf->twin,
                                          a->privateDataSlot, a->data);
}

/* gpud's own: what the client's debug messengers take, so that nothing else
 * is sent. */
void
gpud_exec_vkSetMessageFilterGPUD(struct gpud_call *call,
                                 struct wire_args_vkSetMessageFilterGPUD *a)
{
   atomic_store(&call->ctx->message_severities, a->severities);
   atomic_store(&call->ctx->message_types, a->types);
}

/* ---- pipelines ------------------------------------------------------------ */

/* A creation feedback's stage array must be as long as the pipeline's
 * stages (hosts index one by the other's count). */
static bool
feedback_fits(struct gpud_call *call, const void *chain, uint32_t stages)
{
   const VkPipelineCreationFeedbackCreateInfo *f =
      gpud_chain_find(chain, VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO);
   if (!f || f->pipelineStageCreationFeedbackCount == 0 ||
       f->pipelineStageCreationFeedbackCount == stages)
      return true;
   gpud_call_fail(call, "pipelineStageCreationFeedbackCount differs from the stage count");
   return false;
}

/* Chained shader code refused (--spirv=strict): no pipeline is made. */
static void
refuse_pipelines(VkResult *ret, VkPipeline *pipelines, uint32_t count)
{
   *ret = VK_ERROR_INVALID_SHADER_NV;
   for (uint32_t i = 0; pipelines && i < count; i++)
      pipelines[i] = VK_NULL_HANDLE;
}

void
gpud_exec_vkCreateShaderModule(struct gpud_call *call, struct wire_args_vkCreateShaderModule *a)
{
   /* validated and made on a compile thread (validation takes
    * milliseconds for a big module) */
   if (call->device && call->device->pipecache && a->pCreateInfo)
      call->new_code_hash = gpud_pipecache_code_hash(a->pCreateInfo);
   if (call->disp->CreateShaderModule &&
       gpud_compile_defer(call, WIRE_OP_vkCreateShaderModule, a, false, NULL))
      return;
   if (!gpud_spirv_module_valid(call->ctx, "vkCreateShaderModule", a->pCreateInfo)) {
      a->ret = VK_ERROR_INVALID_SHADER_NV;
      return;
   }
   gpud_gen_exec_vkCreateShaderModule(call, a);
}

/* Chained shader code is validated with the creation itself: on a compile
 * thread (gpud_compile.c) where one takes it, else here. */
void
gpud_exec_vkCreateGraphicsPipelines(struct gpud_call *call,
                                    struct wire_args_vkCreateGraphicsPipelines *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      if (!feedback_fits(call, a->pCreateInfos[i].pNext, a->pCreateInfos[i].stageCount))
         return;
   }
   bool kept = a->pipelineCache == VK_NULL_HANDLE;
   const uint64_t *keys = NULL;
   if (kept) {
      a->pipelineCache = gpud_pipecache_use(call->device);
      keys = gpud_pipecache_keys(call, WIRE_OP_vkCreateGraphicsPipelines, a);
   }
   if (call->disp->CreateGraphicsPipelines &&
       gpud_compile_defer(call, WIRE_OP_vkCreateGraphicsPipelines, a, kept, keys))
      return;
   if (!gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateGraphicsPipelines, a)) {
      refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
      return;
   }
   gpud_gen_exec_vkCreateGraphicsPipelines(call, a);
   if (kept)
      gpud_pipecache_made(call->ctx, call->device, keys, a->pPipelines, a->createInfoCount);
}

void
gpud_exec_vkCreateComputePipelines(struct gpud_call *call,
                                   struct wire_args_vkCreateComputePipelines *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      if (!feedback_fits(call, a->pCreateInfos[i].pNext, 1))
         return;
   }
   bool kept = a->pipelineCache == VK_NULL_HANDLE;
   const uint64_t *keys = NULL;
   if (kept) {
      a->pipelineCache = gpud_pipecache_use(call->device);
      keys = gpud_pipecache_keys(call, WIRE_OP_vkCreateComputePipelines, a);
   }
   if (call->disp->CreateComputePipelines &&
       gpud_compile_defer(call, WIRE_OP_vkCreateComputePipelines, a, kept, keys))
      return;
   if (!gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateComputePipelines, a)) {
      refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
      return;
   }
   gpud_gen_exec_vkCreateComputePipelines(call, a);
   if (kept)
      gpud_pipecache_made(call->ctx, call->device, keys, a->pPipelines, a->createInfoCount);
}

/* The shader groups of each new ray tracing pipeline (groups[i] of
 * pipelines[i]), for the queries that name a group. */
static void
remember_rt_groups(struct gpud_call *call, const uint32_t *groups, const VkPipeline *pipelines,
                   uint32_t n)
{
   struct gpud_rt_groups *r = groups ? wire_dec_alloc(&call->dec, sizeof(*r) * (n + 1)) : NULL;
   if (!r)
      return;
   call->new_rt_groups = r;
   call->n_new_rt_groups = 0;
   for (uint32_t i = 0; pipelines && i < n; i++) {
      if (pipelines[i] != VK_NULL_HANDLE)
         r[call->n_new_rt_groups++] = (struct gpud_rt_groups){(uint64_t)pipelines[i], groups[i]};
   }
}

void
gpud_exec_vkCreateRayTracingPipelinesNV(struct gpud_call *call,
                                        struct wire_args_vkCreateRayTracingPipelinesNV *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      if (!feedback_fits(call, a->pCreateInfos[i].pNext, a->pCreateInfos[i].stageCount))
         return;
      if (!gpud_spirv_stages_valid(call->ctx, "vkCreateRayTracingPipelinesNV",
                                   a->pCreateInfos[i].pStages, a->pCreateInfos[i].stageCount)) {
         refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
         return;
      }
   }
   uint32_t *groups = wire_dec_alloc(&call->dec, sizeof(*groups) * (a->createInfoCount + 1));
   for (uint32_t i = 0; groups && i < a->createInfoCount; i++)
      groups[i] = a->pCreateInfos[i].groupCount;
   gpud_gen_exec_vkCreateRayTracingPipelinesNV(call, a);
   remember_rt_groups(call, groups, a->pPipelines, a->createInfoCount);
}

#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
/* A shader group names its shaders by index into the pipeline's stages
 * (hosts index the array with it). */
static bool
groups_fit(struct gpud_call *call, const VkRayTracingPipelineCreateInfoKHR *ci)
{
   for (uint32_t g = 0; g < ci->groupCount; g++) {
      const VkRayTracingShaderGroupCreateInfoKHR *group = &ci->pGroups[g];
      const uint32_t shaders[] = {group->generalShader, group->closestHitShader,
                                  group->anyHitShader, group->intersectionShader};
      for (unsigned k = 0; k < sizeof(shaders) / sizeof(shaders[0]); k++) {
         if (shaders[k] != VK_SHADER_UNUSED_KHR && shaders[k] >= ci->stageCount) {
            char why[128];
            snprintf(why, sizeof(why), "vkCreateRayTracingPipelinesKHR: group %u names shader "
                     "%u of %u", g, shaders[k], ci->stageCount);
            gpud_call_fail(call, why);
            return false;
         }
      }
   }
   return true;
}

/* The operation to defer on is the ICD's (icd/icd_deferred.c): the decoder
 * gives VK_NULL_HANDLE, and the host compiles before answering. */
void
gpud_exec_vkCreateRayTracingPipelinesKHR(struct gpud_call *call,
                                         struct wire_args_vkCreateRayTracingPipelinesKHR *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      const VkRayTracingPipelineCreateInfoKHR *ci = &a->pCreateInfos[i];
      if (!feedback_fits(call, ci->pNext, ci->stageCount) || !groups_fit(call, ci))
         return;
   }
   /* a pipeline's groups: its own, then its libraries' */
   uint32_t *groups = wire_dec_alloc(&call->dec, sizeof(*groups) * (a->createInfoCount + 1));
   for (uint32_t i = 0; groups && i < a->createInfoCount; i++) {
      const VkRayTracingPipelineCreateInfoKHR *ci = &a->pCreateInfos[i];
      uint64_t n = ci->groupCount;
      for (uint32_t j = 0; ci->pLibraryInfo && j < ci->pLibraryInfo->libraryCount; j++) {
         const struct gpud_object *lib = gpud_call_named(
            call, VK_OBJECT_TYPE_PIPELINE, (uint64_t)ci->pLibraryInfo->pLibraries[j]);
         n += lib ? lib->rt_groups : 0;
      }
      groups[i] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
   }
   /* on a compile thread, the SPIR-V checked there (gpud_compile.c) */
   call->new_pending_groups = groups;
   if (groups && call->disp->CreateRayTracingPipelinesKHR &&
       gpud_compile_defer(call, WIRE_OP_vkCreateRayTracingPipelinesKHR, a, false, NULL))
      return;
   if (!gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateRayTracingPipelinesKHR, a)) {
      refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
      return;
   }
   gpud_gen_exec_vkCreateRayTracingPipelinesKHR(call, a);
   remember_rt_groups(call, groups, a->pPipelines, a->createInfoCount);
}

#ifdef WIRE_HAS_vkCreatePipelineBinariesGPUD
/* VK_KHR_pipeline_binary: the ICD sends the pipeline create info that a
 * VkPipelineCreateInfoKHR holds as the structure it is (at most one of the
 * three; icd/icd_pipeline_binary.c). Checked as a pipeline's: its shader
 * code is what the host reads to make the key. NULL where it refused. */
static const void *
binary_pipeline_info(struct gpud_call *call, const VkGraphicsPipelineCreateInfo *graphics,
                     const VkComputePipelineCreateInfo *compute,
                     const VkRayTracingPipelineCreateInfoKHR *ray_tracing, bool *refused)
{
   *refused = true;
   if (!call->device || !gpud_device_enabled(call->device, VK_KHR_PIPELINE_BINARY_EXTENSION_NAME)) {
      gpud_call_fail(call, "VK_KHR_pipeline_binary: the device did not enable it");
      return NULL;
   }
   if (!!graphics + !!compute + !!ray_tracing > 1) {
      gpud_call_fail(call, "VK_KHR_pipeline_binary: more than one pipeline create info");
      return NULL;
   }
   bool valid = true;
   if (graphics) {
      const struct wire_args_vkCreateGraphicsPipelines g = {
         .createInfoCount = 1, .pCreateInfos = graphics,
      };
      if (!feedback_fits(call, graphics->pNext, graphics->stageCount))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateGraphicsPipelines, &g);
   } else if (compute) {
      const struct wire_args_vkCreateComputePipelines c = {
         .createInfoCount = 1, .pCreateInfos = compute,
      };
      if (!feedback_fits(call, compute->pNext, 1))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateComputePipelines, &c);
   } else if (ray_tracing) {
      const struct wire_args_vkCreateRayTracingPipelinesKHR r = {
         .createInfoCount = 1, .pCreateInfos = ray_tracing,
      };
      if (!feedback_fits(call, ray_tracing->pNext, ray_tracing->stageCount) ||
          !groups_fit(call, ray_tracing))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateRayTracingPipelinesKHR, &r);
   }
   if (!valid)
      return NULL; /* (gpud_spirv.c says why) */
   if (!call->disp->CreatePipelineBinariesKHR || !call->disp->GetPipelineKeyKHR) {
      gpud_call_fail(call, "host driver lacks VK_KHR_pipeline_binary's commands");
      return NULL;
   }
   *refused = false;
   return graphics ? (const void *)graphics : compute ? (const void *)compute : (const void *)ray_tracing;
}

/* What vkCreatePipelineBinariesKHR takes, made again for the host. */
struct binary_source {
   VkPipelineCreateInfoKHR pipeline_info;
   VkPipelineBinaryCreateInfoKHR create;
};

/* False where the inputs were refused (ret set). */
static bool
binary_source_init(struct gpud_call *call, struct binary_source *src,
                   const VkPipelineBinaryKeysAndDataKHR *keys_and_data, VkPipeline pipeline,
                   const VkGraphicsPipelineCreateInfo *graphics,
                   const VkComputePipelineCreateInfo *compute,
                   const VkRayTracingPipelineCreateInfoKHR *ray_tracing, VkResult *ret)
{
   bool refused;
   const void *info = binary_pipeline_info(call, graphics, compute, ray_tracing, &refused);
   if (refused) {
      *ret = VK_ERROR_INITIALIZATION_FAILED;
      return false;
   }
   src->pipeline_info = (VkPipelineCreateInfoKHR){
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATE_INFO_KHR,
      .pNext = (void *)info,
   };
   src->create = (VkPipelineBinaryCreateInfoKHR){
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_CREATE_INFO_KHR,
      .pKeysAndDataInfo = keys_and_data,
      .pipeline = pipeline,
      .pPipelineCreateInfo = info ? &src->pipeline_info : NULL,
   };
   return true;
}

/* vkCreatePipelineBinariesKHR makes binaries of exactly one source: keys
 * and data, a pipeline, or a pipeline's create info. */
static bool
binary_source_single(struct gpud_call *call, const struct binary_source *src)
{
   if (!!src->create.pKeysAndDataInfo + !!src->create.pipeline +
          !!src->create.pPipelineCreateInfo != 1) {
      gpud_call_fail(call, "vkCreatePipelineBinariesKHR: not exactly one source of binaries");
      return false;
   }
   return true;
}

void
gpud_exec_vkGetPipelineBinaryCountGPUD(struct gpud_call *call,
                                       struct wire_args_vkGetPipelineBinaryCountGPUD *a)
{
   struct binary_source src;
   *a->pPipelineBinaryCount = 0;
   if (!binary_source_init(call, &src, a->pKeysAndDataInfo, a->pipeline, a->pGraphicsCreateInfo,
                           a->pComputeCreateInfo, a->pRayTracingCreateInfo, &a->ret) ||
       !binary_source_single(call, &src))
      return;
   VkPipelineBinaryHandlesInfoKHR out = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR,
   };
   a->ret = call->disp->CreatePipelineBinariesKHR(a->device, &src.create, NULL, &out);
   *a->pPipelineBinaryCount = out.pipelineBinaryCount;
}

/* The binaries the host made fill the first entries; the rest stay
 * VK_NULL_HANDLE, and the ICD gives back their ids. */
void
gpud_exec_vkCreatePipelineBinariesGPUD(struct gpud_call *call,
                                       struct wire_args_vkCreatePipelineBinariesGPUD *a)
{
   if (!a->pPipelineBinaries || !a->pipelineBinaryCount) {
      gpud_call_fail(call, "vkCreatePipelineBinariesGPUD: no room for a binary");
      return;
   }
   for (uint32_t i = 0; i < a->pipelineBinaryCount; i++)
      a->pPipelineBinaries[i] = VK_NULL_HANDLE;
   struct binary_source src;
   if (!binary_source_init(call, &src, a->pKeysAndDataInfo, a->pipeline, a->pGraphicsCreateInfo,
                           a->pComputeCreateInfo, a->pRayTracingCreateInfo, &a->ret) ||
       !binary_source_single(call, &src))
      return;
   VkPipelineBinaryHandlesInfoKHR out = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR,
      .pipelineBinaryCount = a->pipelineBinaryCount,
      .pPipelineBinaries = a->pPipelineBinaries,
   };
   a->ret = call->disp->CreatePipelineBinariesKHR(a->device, &src.create, NULL, &out);
   if (a->ret < 0) {
      /* a failed call may leave the binaries it made: the application
       * gets none, so the host keeps none */
      for (uint32_t i = 0; i < a->pipelineBinaryCount; i++) {
         if (a->pPipelineBinaries[i])
            call->disp->DestroyPipelineBinaryKHR(a->device, a->pPipelineBinaries[i], NULL);
         a->pPipelineBinaries[i] = VK_NULL_HANDLE;
      }
   }
}

void
gpud_exec_vkGetPipelineKeyGPUD(struct gpud_call *call, struct wire_args_vkGetPipelineKeyGPUD *a)
{
   struct binary_source src;
   if (!binary_source_init(call, &src, NULL, VK_NULL_HANDLE, a->pGraphicsCreateInfo,
                           a->pComputeCreateInfo, a->pRayTracingCreateInfo, &a->ret)) {
      if (a->ret == VK_ERROR_INITIALIZATION_FAILED)
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY; /* (vkGetPipelineKeyKHR's only errors) */
      return;
   }
   if (!src.create.pPipelineCreateInfo != !!a->global) {
      gpud_call_fail(call, "vkGetPipelineKeyGPUD: a create info and the global key at once, or neither");
      return;
   }
   a->ret = call->disp->GetPipelineKeyKHR(a->device, src.create.pPipelineCreateInfo,
                                          a->pPipelineKey);
}
#endif

/* The size of a shader group's handle on the device (the KHR and the NV
 * property: whichever the host fills). */
static uint32_t
group_handle_size(struct gpud_call *call)
{
   VkPhysicalDeviceRayTracingPropertiesNV nv = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PROPERTIES_NV,
   };
   VkPhysicalDeviceRayTracingPipelinePropertiesKHR khr = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_PROPERTIES_KHR,
      .pNext = &nv,
   };
   VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &khr,
   };
   call->disp->GetPhysicalDeviceProperties2((VkPhysicalDevice)call->device->physical_device,
                                            &props);
   return khr.shaderGroupHandleSize > nv.shaderGroupHandleSize ? khr.shaderGroupHandleSize
                                                               : nv.shaderGroupHandleSize;
}

/* The ray tracing pipeline a query names, with group [first, first + count)
 * among its groups; NULL (the client failed) otherwise: the host indexes
 * its groups with them unchecked. */
static const struct gpud_object *
rt_pipeline_groups(struct gpud_call *call, const char *command, VkPipeline pipeline,
                   uint32_t first, uint32_t count)
{
   const struct gpud_object *p =
      gpud_call_named(call, VK_OBJECT_TYPE_PIPELINE, (uint64_t)pipeline);
   if (p && p->rt_groups && first < p->rt_groups && count <= p->rt_groups - first)
      return p;
   char why[160];
   snprintf(why, sizeof(why), "%s: groups %u+%u of a pipeline with %u", command, first, count,
            p ? p->rt_groups : 0);
   gpud_call_fail(call, why);
   return NULL;
}

void
gpud_exec_vkGetRayTracingShaderGroupHandlesKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingShaderGroupHandlesKHR *a)
{
   if (!call->device || !rt_pipeline_groups(call, "vkGetRayTracingShaderGroupHandlesKHR",
                                            a->pipeline, a->firstGroup, a->groupCount))
      return;
   /* the host writes a whole handle a group, whatever dataSize says */
   if ((uint64_t)a->groupCount * group_handle_size(call) > a->dataSize) {
      gpud_call_fail(call, "vkGetRayTracingShaderGroupHandlesKHR: dataSize too small for the "
                           "groups' handles");
      return;
   }
   gpud_gen_exec_vkGetRayTracingShaderGroupHandlesKHR(call, a);
}

void
gpud_exec_vkGetRayTracingShaderGroupStackSizeKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingShaderGroupStackSizeKHR *a)
{
   if (!rt_pipeline_groups(call, "vkGetRayTracingShaderGroupStackSizeKHR", a->pipeline,
                           a->group, 1))
      return;
   gpud_gen_exec_vkGetRayTracingShaderGroupStackSizeKHR(call, a);
}

/* rayTracingPipelineShaderGroupHandleCaptureReplay is reported off: the
 * groups' capture-replay handles do not travel. */
void
gpud_exec_vkGetRayTracingCaptureReplayShaderGroupHandlesKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingCaptureReplayShaderGroupHandlesKHR *a)
{
   gpud_call_fail(call, "vkGetRayTracingCaptureReplayShaderGroupHandlesKHR: "
                        "shader group capture-replay is not offered");
   a->ret = VK_ERROR_INITIALIZATION_FAILED;
}
#endif

#ifdef WIRE_HAS_vkGetPipelineIndirectMemoryRequirementsNV
/* The host compiles the pipeline to size its indirect memory: its code is
 * checked as the pipeline's would be; refused code (--spirv=strict) needs
 * no memory. */
void
gpud_exec_vkGetPipelineIndirectMemoryRequirementsNV(
   struct gpud_call *call, struct wire_args_vkGetPipelineIndirectMemoryRequirementsNV *a)
{
   if (!gpud_spirv_stages_valid(call->ctx, "vkGetPipelineIndirectMemoryRequirementsNV",
                                &a->pCreateInfo->stage, 1)) {
      a->pMemoryRequirements->memoryRequirements = (VkMemoryRequirements){0};
      return;
   }
   gpud_gen_exec_vkGetPipelineIndirectMemoryRequirementsNV(call, a);
}
#endif

/* ---- what is reported off is refused ---------------------------------------- */

/* Capture-replay data (descriptorBufferCaptureReplay, never enabled): the
 * host would write as many bytes as its properties say into the daemon's
 * WIRE_MAX_OPAQUE_DATA. */
#define REFUSE_CAPTURE(name)                                                           \
   void gpud_exec_##name(struct gpud_call *call, struct wire_args_##name *a)           \
   {                                                                                 \
      gpud_call_fail(call, #name ": descriptor buffer capture-replay is not offered"); \
      a->ret = VK_ERROR_INITIALIZATION_FAILED;                                        \
   }
#ifdef WIRE_HAS_vkGetBufferOpaqueCaptureDescriptorDataEXT
REFUSE_CAPTURE(vkGetBufferOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetImageOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetImageViewOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetSamplerOpaqueCaptureDescriptorDataEXT)
#endif
#ifdef WIRE_HAS_vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT
REFUSE_CAPTURE(vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT)
#endif

#ifdef WIRE_HAS_vkGetDescriptorEXT
/* The host writes a whole descriptor of its own size, whatever dataSize
 * says (the spec makes them equal, so drivers do not look): it writes into
 * room for the largest any driver has, and the application gets dataSize
 * bytes of it. A type that selects no member of the data, or a combined
 * image sampler without its info, is refused before the host sees it. */
#define DESCRIPTOR_ROOM 4096
void
gpud_exec_vkGetDescriptorEXT(struct gpud_call *call, struct wire_args_vkGetDescriptorEXT *a)
{
   const VkDescriptorGetInfoEXT *info = a->pDescriptorInfo;
   const void *p = NULL;
   switch ((int)info->type) {
   case VK_DESCRIPTOR_TYPE_SAMPLER: p = info->data.pSampler; break;
   case VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: p = info->data.pCombinedImageSampler; break;
   case VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT: p = info->data.pInputAttachmentImage; break;
   /* these may be null (VK_EXT_robustness2's nullDescriptor) */
   case VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE:
   case VK_DESCRIPTOR_TYPE_STORAGE_IMAGE:
   case VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER:
   case VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER:
   case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER:
   case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER:
   case VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR:
   case VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_NV: p = info; break;
   default: break;
   }
   if (info->type == VK_DESCRIPTOR_TYPE_SAMPLER && p && !*info->data.pSampler)
      p = NULL;
   if (info->type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER && p &&
       !info->data.pCombinedImageSampler->sampler)
      p = NULL;
   if (!p || !a->pDescriptor || a->dataSize > DESCRIPTOR_ROOM) {
      gpud_call_fail(call, "vkGetDescriptorEXT: a type without data, or no room for it");
      return;
   }
   static _Thread_local uint8_t room[DESCRIPTOR_ROOM];
   memset(room, 0, sizeof(room));
   call->disp->GetDescriptorEXT(a->device, info, a->dataSize, room);
   memcpy(a->pDescriptor, room, UTIL_MIN(a->dataSize, (size_t)a->pDescriptor_cap));
}
#endif

/* ---- gpud's own: an acquired swapchain image is ready ---------------------- */

/* Signals the semaphore and/or fence at once, on the device's first queue
 * (the image was free when the ICD acquired it). */
void
gpud_exec_vkSignalGPUD(struct gpud_call *call, struct wire_args_vkSignalGPUD *a)
{
   const struct gpud_object *dev = call->device;
   if (!dev || dev->n_queues == 0) {
      gpud_call_fail(call, "vkSignalGPUD: the device has no queue");
      return;
   }
   const struct gpud_queue_info *q = &dev->queues[0];
   VkQueue queue = VK_NULL_HANDLE;
   if (q->flags) {
      const VkDeviceQueueInfo2 info = {
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
         .flags = q->flags,
         .queueFamilyIndex = q->family,
      };
      call->disp->GetDeviceQueue2(a->device, &info, &queue);
   } else {
      call->disp->GetDeviceQueue(a->device, q->family, 0, &queue);
   }
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .signalSemaphoreCount = a->semaphore ? 1 : 0,
      .pSignalSemaphores = &a->semaphore,
   };
   VkResult r = call->disp->QueueSubmit(queue, a->semaphore ? 1 : 0, &submit, a->fence);
   if (r != VK_SUCCESS)
      gpud_call_async_error(call, r);
   /* no tracker sees this signal: the ICD asks the host driver's fence,
    * until the fence is reset */
   struct gpud_object *fence =
      a->fence ? gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence)
               : NULL;
   if (fence)
      gpud_queue_fence_ask(fence);
}

/* ---- recordings: the state the replay checks chunks against (gpud_replay.c) ---- */

/* A reset ends the recording (the ICD starts the next at chunk 0). */
void
gpud_exec_vkResetCommandBuffer(struct gpud_call *call, struct wire_args_vkResetCommandBuffer *a)
{
   struct gpud_object *cb = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                            (uint64_t)(uintptr_t)a->commandBuffer);
   if (cb)
      cb->recording = false;
   gpud_gen_exec_vkResetCommandBuffer(call, a);
}

/* ... and so does a reset of its pool, for every command buffer of it. */
void
gpud_exec_vkResetCommandPool(struct gpud_call *call, struct wire_args_vkResetCommandPool *a)
{
   struct gpud_object *pool = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_POOL,
                                              (uint64_t)(uintptr_t)a->commandPool);
   if (pool)
      pool->pool_resets++;
   gpud_gen_exec_vkResetCommandPool(call, a);
}

/* A pool with secondaries: its resets wait for every lane (a primary on
 * another lane may be executing one). */
void
gpud_exec_vkAllocateCommandBuffers(struct gpud_call *call,
                                   struct wire_args_vkAllocateCommandBuffers *a)
{
   if (a->pAllocateInfo && a->pAllocateInfo->level == VK_COMMAND_BUFFER_LEVEL_SECONDARY) {
      struct gpud_object *pool =
         gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_POOL,
                         (uint64_t)(uintptr_t)a->pAllocateInfo->commandPool);
      if (pool)
         pool->secondaries = true;
   }
   gpud_gen_exec_vkAllocateCommandBuffers(call, a);
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
   if (two) {
      VkCheckpointData2NV *d = wire_dec_alloc(&call->dec, sizeof(*d) * (n ? n : 1));
      for (uint32_t i = 0; d && i < n; i++)
         d[i] = (VkCheckpointData2NV){ .sType = VK_STRUCTURE_TYPE_CHECKPOINT_DATA_2_NV };
      if (!d)
         n = 0;
      else
         call->disp->GetQueueCheckpointData2NV(a->queue, &n, d);
      for (uint32_t i = 0; i < n; i++) {
         a->pStages[i] = d[i].stage;
         a->pMarkers[i] = (uint64_t)(uintptr_t)d[i].pCheckpointMarker;
      }
   } else {
      VkCheckpointDataNV *d = wire_dec_alloc(&call->dec, sizeof(*d) * (n ? n : 1));
      for (uint32_t i = 0; d && i < n; i++)
         d[i] = (VkCheckpointDataNV){ .sType = VK_STRUCTURE_TYPE_CHECKPOINT_DATA_NV };
      if (!d)
         n = 0;
      else
         call->disp->GetQueueCheckpointDataNV(a->queue, &n, d);
      for (uint32_t i = 0; i < n; i++) {
         a->pStages[i] = d[i].stage;
         a->pMarkers[i] = (uint64_t)(uintptr_t)d[i].pCheckpointMarker;
      }
   }
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
