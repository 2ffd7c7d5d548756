/* SPDX-License-Identifier: MIT */
/*
 * Instances and physical devices: the host instance made with what gpud's
 * own calls need, and what the host says of its devices patched to what
 * gpud carries (features, properties, memory, extensions).
 */
#include "gpud_instance.h"

#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_lifetime.h"
#include "gpud_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util_macros.h"
#include "util_outarray.h"

/* ---- instances and physical devices --------------------------------------- */

/* The lowest API version of the host instance: what gpud's own calls
 * need (properties and features structures, external memory). */
#define HOST_API_FLOOR VK_API_VERSION_1_1

void
gpud_exec_vkCreateInstance(struct gpud_call *call, struct wire_args_vkCreateInstance *a)
{
   const struct daemon_host *host = call->ctx->host;
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
   if (call->instance) {
      /* once the pipelines being made (which use them) are done */
      gpud_compile_drain(call->ctx);
      gpud_compile_reap(call->ctx);
      gpud_lifetime_destroy(call->ctx, NULL, call->instance);
   }
}

void
gpud_exec_vkEnumeratePhysicalDevices(struct gpud_call *call,
                                     struct wire_args_vkEnumeratePhysicalDevices *a)
{
   const struct daemon_host *host = call->ctx->host;
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
void
gpud_instance_drop_own_features(const void **chain)
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
void
gpud_instance_clear_uncarried(const void *chain)
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
   gpud_instance_clear_uncarried(a->pFeatures->pNext);
   own_features(a->pFeatures->pNext);
}

static void
patch_memory(struct gpud_call *call, VkPhysicalDeviceMemoryProperties *m)
{
   const struct daemon_host *host = call->ctx->host;
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

const struct wire_extension *
gpud_instance_extension_carried(const char *name)
{
   for (unsigned i = 0; i < wire_extension_count; i++) {
      if (wire_extensions[i].device && !strcmp(wire_extensions[i].name, name))
         return &wire_extensions[i];
   }
   return NULL;
}

bool
gpud_instance_host_has_extension(const VkExtensionProperties *exts, uint32_t n, const char *name)
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
          gpud_instance_host_has_extension(all, n, wire_extensions[j].name))
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
   struct util_outarray out;
   util_outarray_init(&out, a->pProperties, a->pPropertyCount);
   out.room = UTIL_MIN(out.room, a->pProperties_cap); /* (the room the reply carries) */
   for (uint32_t i = 0; i < n; i++) {
      const struct wire_extension *ext = gpud_instance_extension_carried(all[i].extensionName);
      if (!ext)
         continue;
      /* A newer revision on the host may have structures gpud does not
       * carry: the application sees the one gpud knows. */
      all[i].specVersion = UTIL_MIN(all[i].specVersion, ext->spec_version);
      VkExtensionProperties *p = UTIL_OUTARRAY_NEXT(&out, VkExtensionProperties);
      if (p)
         *p = all[i];
   }
   a->ret = util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}
