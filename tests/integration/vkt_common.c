/* SPDX-License-Identifier: MIT */
/*
 * What the test programs and benchmarks share (vkt_common.h): failing with
 * a message, contexts, buffers, images, pipelines, command buffers.
 */
#include "vkt_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *vkt_prog = "vkt";

void
vkt_set_prog(const char *prog)
{
   vkt_prog = prog;
}

const char *
vkt_result_name(VkResult result)
{
   switch (result) {
#define NAME(r) case r: return #r
   NAME(VK_SUCCESS);
   NAME(VK_NOT_READY);
   NAME(VK_TIMEOUT);
   NAME(VK_EVENT_SET);
   NAME(VK_EVENT_RESET);
   NAME(VK_INCOMPLETE);
   NAME(VK_ERROR_OUT_OF_HOST_MEMORY);
   NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY);
   NAME(VK_ERROR_INITIALIZATION_FAILED);
   NAME(VK_ERROR_DEVICE_LOST);
   NAME(VK_ERROR_MEMORY_MAP_FAILED);
   NAME(VK_ERROR_LAYER_NOT_PRESENT);
   NAME(VK_ERROR_EXTENSION_NOT_PRESENT);
   NAME(VK_ERROR_FEATURE_NOT_PRESENT);
   NAME(VK_ERROR_INCOMPATIBLE_DRIVER);
   NAME(VK_ERROR_TOO_MANY_OBJECTS);
   NAME(VK_ERROR_FORMAT_NOT_SUPPORTED);
   NAME(VK_ERROR_FRAGMENTED_POOL);
   NAME(VK_ERROR_UNKNOWN);
   NAME(VK_ERROR_OUT_OF_POOL_MEMORY);
   NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE);
   NAME(VK_ERROR_FRAGMENTATION);
   NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS);
   NAME(VK_PIPELINE_COMPILE_REQUIRED);
   NAME(VK_ERROR_SURFACE_LOST_KHR);
   NAME(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR);
   NAME(VK_SUBOPTIMAL_KHR);
   NAME(VK_ERROR_OUT_OF_DATE_KHR);
   NAME(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR);
   NAME(VK_ERROR_VALIDATION_FAILED_EXT);
   NAME(VK_ERROR_INVALID_SHADER_NV);
   NAME(VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT);
   NAME(VK_ERROR_NOT_PERMITTED_KHR);
   NAME(VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT);
   NAME(VK_THREAD_IDLE_KHR);
   NAME(VK_THREAD_DONE_KHR);
   NAME(VK_OPERATION_DEFERRED_KHR);
   NAME(VK_OPERATION_NOT_DEFERRED_KHR);
   NAME(VK_ERROR_COMPRESSION_EXHAUSTED_EXT);
#undef NAME
   default:
      break;
   }
   /* Unknown codes: a small ring of buffers so two can be printed at once. */
   static _Thread_local char buf[4][32];
   static _Thread_local unsigned next;
   char *s = buf[next++ % 4];
   snprintf(s, sizeof(buf[0]), "VkResult(%d)", (int)result);
   return s;
}

void
vkt_fail(const char *fmt, ...)
{
   va_list ap;

   fflush(stdout);
   fprintf(stderr, "%s: FAIL: ", vkt_prog);
   va_start(ap, fmt);
   vfprintf(stderr, fmt, ap);
   va_end(ap);
   fputc('\n', stderr);
   exit(1);
}

void
vkt_fail_result(const char *call, VkResult result, const char *file, int line)
{
   vkt_fail("%s:%d: %s failed: %s", file, line, call,
            vkt_result_name(result));
}

uint64_t
vkt_now_ns(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
vkt_parse_u64(const char *opt, const char *value)
{
   char *end;
   unsigned long long v;

   if (!value)
      vkt_fail("option %s needs a value", opt);
   errno = 0;
   v = strtoull(value, &end, 10);
   if (errno || end == value || *end || value[0] == '-')
      vkt_fail("option %s: '%s' is not an unsigned number", opt, value);
   return v;
}

VkInstance
vkt_instance_create(const char *app_name)
{
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = app_name,
      .applicationVersion = 1,
      .pEngineName = "gpud-tests",
      .engineVersion = 1,
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
   };
   VkInstance instance;

   VKT_CHECK(vkCreateInstance(&info, NULL, &instance));
   return instance;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
count_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
              VkDebugUtilsMessageTypeFlagsEXT types,
              const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   struct vkt_message_count *c = user;
   (void)types;
   printf("%s: messenger (%s): %s: %s\n", vkt_prog ? vkt_prog : "vkt",
          severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
          data->pMessageIdName ? data->pMessageIdName : "(no name)",
          data->pMessage ? data->pMessage : "");
   if (data->pMessageIdName && !strcmp(data->pMessageIdName, c->id_name))
      c->count++;
   return VK_FALSE;
}

VkInstance
vkt_instance_counting(const char *app_name, struct vkt_message_count *c)
{
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = app_name,
      .applicationVersion = 1,
      .pEngineName = "gpud-tests",
      .engineVersion = 1,
      .apiVersion = VK_API_VERSION_1_3,
   };
   const char *const exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
   const VkInstanceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
      .enabledExtensionCount = 1,
      .ppEnabledExtensionNames = exts,
   };
   VKT_CHECK(vkCreateInstance(&info, NULL, &c->instance));
   const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = count_message,
      .pUserData = c,
   };
   PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
      vkGetInstanceProcAddr(c->instance, "vkCreateDebugUtilsMessengerEXT");
   if (!create)
      vkt_fail("no vkCreateDebugUtilsMessengerEXT");
   VKT_CHECK(create(c->instance, &messenger_info, NULL, &c->messenger));
   return c->instance;
}

void
vkt_message_count_finish(struct vkt_message_count *c)
{
   PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
      vkGetInstanceProcAddr(c->instance, "vkDestroyDebugUtilsMessengerEXT");
   if (destroy && c->messenger)
      destroy(c->instance, c->messenger, NULL);
   c->messenger = VK_NULL_HANDLE;
}

VkPhysicalDevice
vkt_physical_device_pick(VkInstance instance, const char *name)
{
   VkPhysicalDevice devs[16];
   uint32_t count = VKT_ARRAY_SIZE(devs);
   VkResult r;

   r = vkEnumeratePhysicalDevices(instance, &count, devs);
   if (r == VK_ERROR_INITIALIZATION_FAILED)
      vkt_fail("vkEnumeratePhysicalDevices failed: %s (the loader's answer "
               "when no driver has a device: is the daemon running?)",
               vkt_result_name(r));
   if (r != VK_SUCCESS && r != VK_INCOMPLETE)
      vkt_fail("vkEnumeratePhysicalDevices failed: %s", vkt_result_name(r));
   if (count == 0)
      vkt_fail("no Vulkan physical device found");

   for (uint32_t i = 0; i < count; i++) {
      VkPhysicalDeviceProperties props;

      vkGetPhysicalDeviceProperties(devs[i], &props);
      if (name && !strstr(props.deviceName, name))
         continue;
      if (props.apiVersion < VK_API_VERSION_1_3)
         vkt_fail("device '%s' supports Vulkan %u.%u only, 1.3 needed",
                  props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion),
                  VK_API_VERSION_MINOR(props.apiVersion));
      return devs[i];
   }
   vkt_fail("no physical device name contains '%s' (%u devices)", name,
            count);
}

static void
check_features(VkPhysicalDevice pdev, uint32_t features)
{
   VkPhysicalDeviceVulkan13Features f13 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
   };
   VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = &f13,
   };
   VkPhysicalDeviceFeatures2 f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      .pNext = &f12,
   };

   vkGetPhysicalDeviceFeatures2(pdev, &f);
   if ((features & VKT_FEATURE_TIMELINE_SEMAPHORE) && !f12.timelineSemaphore)
      vkt_fail("device lacks the timelineSemaphore feature");
   if ((features & VKT_FEATURE_DYNAMIC_RENDERING) && !f13.dynamicRendering)
      vkt_fail("device lacks the dynamicRendering feature");
   if ((features & VKT_FEATURE_SYNCHRONIZATION2) && !f13.synchronization2)
      vkt_fail("device lacks the synchronization2 feature");
   if ((features & VKT_FEATURE_OCCLUSION_PRECISE) &&
       !f.features.occlusionQueryPrecise)
      vkt_fail("device lacks the occlusionQueryPrecise feature");
   if ((features & VKT_FEATURE_BUFFER_DEVICE_ADDRESS) && !f12.bufferDeviceAddress)
      vkt_fail("device lacks the bufferDeviceAddress feature");
   if ((features & VKT_FEATURE_HOST_QUERY_RESET) && !f12.hostQueryReset)
      vkt_fail("device lacks the hostQueryReset feature");
   if ((features & VKT_FEATURE_PIPELINE_CACHE_CONTROL) && !f13.pipelineCreationCacheControl)
      vkt_fail("device lacks the pipelineCreationCacheControl feature");
   if ((features & VKT_FEATURE_SUBGROUP_SIZE_CONTROL) &&
       (!f13.subgroupSizeControl || !f13.computeFullSubgroups))
      vkt_fail("device lacks the subgroupSizeControl or computeFullSubgroups feature");
}

/*
 * Extension feature structs vkt_context_init_ext accepts in its chain: their
 * size and how many VkBool32 members follow sType and pNext (up to and
 * including `last`, so that trailing padding is never read).
 */
#define FEATURE_STRUCT(stype, type, last)                                    \
   { stype, #type, sizeof(type),                                             \
     (offsetof(type, last) + sizeof(VkBool32) -                              \
      sizeof(VkBaseOutStructure)) / sizeof(VkBool32) }

static const struct feature_struct {
   VkStructureType stype;
   const char *name;
   size_t size;
   uint32_t bools;
} feature_structs[] = {
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT,
                  VkPhysicalDeviceConditionalRenderingFeaturesEXT,
                  inheritedConditionalRendering),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CUSTOM_BORDER_COLOR_FEATURES_EXT,
                  VkPhysicalDeviceCustomBorderColorFeaturesEXT,
                  customBorderColorWithoutFormat),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TRANSFORM_FEEDBACK_FEATURES_EXT,
                  VkPhysicalDeviceTransformFeedbackFeaturesEXT,
                  geometryStreams),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTI_DRAW_FEATURES_EXT,
                  VkPhysicalDeviceMultiDrawFeaturesEXT, multiDraw),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTENDED_DYNAMIC_STATE_FEATURES_EXT,
                  VkPhysicalDeviceExtendedDynamicStateFeaturesEXT,
                  extendedDynamicState),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTENDED_DYNAMIC_STATE_2_FEATURES_EXT,
                  VkPhysicalDeviceExtendedDynamicState2FeaturesEXT,
                  extendedDynamicState2PatchControlPoints),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTENDED_DYNAMIC_STATE_3_FEATURES_EXT,
                  VkPhysicalDeviceExtendedDynamicState3FeaturesEXT,
                  extendedDynamicState3ShadingRateImageEnable),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT,
                  VkPhysicalDeviceRobustness2FeaturesEXT, nullDescriptor),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR,
                  VkPhysicalDevicePresentIdFeaturesKHR, presentId),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
                  VkPhysicalDevicePresentWaitFeaturesKHR, presentWait),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SWAPCHAIN_MAINTENANCE_1_FEATURES_EXT,
                  VkPhysicalDeviceSwapchainMaintenance1FeaturesEXT, swapchainMaintenance1),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT,
                  VkPhysicalDeviceGraphicsPipelineLibraryFeaturesEXT, graphicsPipelineLibrary),
#ifdef VK_EXT_host_image_copy
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_IMAGE_COPY_FEATURES_EXT,
                  VkPhysicalDeviceHostImageCopyFeaturesEXT, hostImageCopy),
#endif
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT,
                  VkPhysicalDevicePipelineRobustnessFeaturesEXT, pipelineRobustness),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
                  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR, pipelineExecutableInfo),
#ifdef VK_EXT_shader_object
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_OBJECT_FEATURES_EXT,
                  VkPhysicalDeviceShaderObjectFeaturesEXT, shaderObject),
#endif
#ifdef VK_EXT_device_generated_commands
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DEVICE_GENERATED_COMMANDS_FEATURES_EXT,
                  VkPhysicalDeviceDeviceGeneratedCommandsFeaturesEXT,
                  dynamicGeneratedPipelineLayout),
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR,
                  VkPhysicalDeviceMaintenance5FeaturesKHR, maintenance5),
#endif
#ifdef VK_EXT_descriptor_buffer
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_BUFFER_FEATURES_EXT,
                  VkPhysicalDeviceDescriptorBufferFeaturesEXT, descriptorBufferPushDescriptors),
#endif
#ifdef VK_EXT_mesh_shader
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MESH_SHADER_FEATURES_EXT,
                  VkPhysicalDeviceMeshShaderFeaturesEXT, meshShaderQueries),
#endif
#ifdef VK_NV_cooperative_vector
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_VECTOR_FEATURES_NV,
                  VkPhysicalDeviceCooperativeVectorFeaturesNV, cooperativeVectorTraining),
#endif
#ifdef VK_NV_optical_flow
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_OPTICAL_FLOW_FEATURES_NV,
                  VkPhysicalDeviceOpticalFlowFeaturesNV, opticalFlow),
#endif
#ifdef VK_KHR_pipeline_binary
   FEATURE_STRUCT(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_BINARY_FEATURES_KHR,
                  VkPhysicalDevicePipelineBinaryFeaturesKHR, pipelineBinaries),
#endif
};

#undef FEATURE_STRUCT

static const struct feature_struct *
find_feature_struct(VkStructureType stype)
{
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(feature_structs); i++)
      if (feature_structs[i].stype == stype)
         return &feature_structs[i];
   vkt_fail("feature struct with sType %d in the device's pNext chain is "
            "not in vkt_common.c's feature_structs table", (int)stype);
}

/* The device's extensions (freed by the caller), their count in *count. */
static VkExtensionProperties *
device_extensions(VkPhysicalDevice pdev, uint32_t *count)
{
   *count = 0;
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(pdev, NULL, count, NULL));
   VkExtensionProperties *props = calloc(*count ? *count : 1, sizeof(*props));
   if (!props)
      vkt_fail("out of memory");
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(pdev, NULL, count, props));
   return props;
}

static bool
listed(const VkExtensionProperties *props, uint32_t count, const char *name)
{
   for (uint32_t j = 0; j < count; j++)
      if (!strcmp(props[j].extensionName, name))
         return true;
   return false;
}

bool
vkt_device_has_extension(VkPhysicalDevice pdev, const char *name)
{
   uint32_t count;
   VkExtensionProperties *props = device_extensions(pdev, &count);
   bool found = listed(props, count, name);
   free(props);
   return found;
}

static void
check_extensions(VkPhysicalDevice pdev, const char *device_name,
                 const char *const *exts, uint32_t n_exts)
{
   if (!n_exts)
      return;
   uint32_t count;
   VkExtensionProperties *props = device_extensions(pdev, &count);
   for (uint32_t i = 0; i < n_exts; i++) {
      if (!listed(props, count, exts[i]))
         vkt_fail("device '%s' does not advertise %s (%u device extensions "
                  "listed)", device_name, exts[i], count);
   }
   free(props);
}

/*
 * Queries a copy of each struct of the chain and checks that every VkBool32
 * member wanted (VK_TRUE in the chain) is supported.
 */
static void
check_ext_features(VkPhysicalDevice pdev, const char *device_name,
                   const void *pnext)
{
   VkPhysicalDeviceFeatures2 f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
   };
   VkBaseOutStructure **tail = (VkBaseOutStructure **)&f.pNext;

   for (const VkBaseInStructure *in = pnext; in; in = in->pNext) {
      const struct feature_struct *fs = find_feature_struct(in->sType);
      VkBaseOutStructure *copy = calloc(1, fs->size);

      if (!copy)
         vkt_fail("out of memory");
      copy->sType = in->sType;
      *tail = copy;
      tail = &copy->pNext;
   }
   vkGetPhysicalDeviceFeatures2(pdev, &f);

   const VkBaseInStructure *in = pnext;
   VkBaseOutStructure *got = f.pNext;
   for (; in; in = in->pNext) {
      const struct feature_struct *fs = find_feature_struct(in->sType);
      const VkBool32 *want_b = (const VkBool32 *)(in + 1);
      const VkBool32 *got_b = (const VkBool32 *)(got + 1);
      VkBaseOutStructure *next = got->pNext;

      for (uint32_t i = 0; i < fs->bools; i++)
         if (want_b[i] && !got_b[i])
            vkt_fail("device '%s' lacks a feature: %s's VkBool32 member "
                     "%u (counting from 0 after pNext) is VK_FALSE",
                     device_name, fs->name, i);
      free(got);
      got = next;
   }
}

static void
context_init_device(struct vkt_context *ctx, VkInstance instance,
                    VkPhysicalDevice pdev, uint32_t features,
                    const char *const *exts, uint32_t n_exts, void *pnext,
                    uint32_t other_family)
{
   VkQueueFamilyProperties families[16];
   uint32_t family_count = VKT_ARRAY_SIZE(families);
   const float priority = 1.0f;

   ctx->instance = instance;
   ctx->physical_device = pdev;
   vkGetPhysicalDeviceProperties(pdev, &ctx->props);
   vkGetPhysicalDeviceMemoryProperties(pdev, &ctx->mem_props);

   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &family_count, families);
   ctx->queue_family = UINT32_MAX;
   for (uint32_t i = 0; i < family_count; i++) {
      const VkQueueFlags want = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;

      if ((families[i].queueFlags & want) == want && families[i].queueCount) {
         ctx->queue_family = i;
         ctx->timestamp_valid_bits = families[i].timestampValidBits;
         break;
      }
   }
   if (ctx->queue_family == UINT32_MAX)
      vkt_fail("device '%s' has no graphics+compute queue family",
               ctx->props.deviceName);

   check_features(pdev, features);
   check_extensions(pdev, ctx->props.deviceName, exts, n_exts);
   check_ext_features(pdev, ctx->props.deviceName, pnext);

   VkPhysicalDeviceVulkan13Features f13 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .pNext = pnext,
      .dynamicRendering = !!(features & VKT_FEATURE_DYNAMIC_RENDERING),
      .synchronization2 = !!(features & VKT_FEATURE_SYNCHRONIZATION2),
      .pipelineCreationCacheControl = !!(features & VKT_FEATURE_PIPELINE_CACHE_CONTROL),
      .subgroupSizeControl = !!(features & VKT_FEATURE_SUBGROUP_SIZE_CONTROL),
      .computeFullSubgroups = !!(features & VKT_FEATURE_SUBGROUP_SIZE_CONTROL),
   };
   VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = &f13,
      .timelineSemaphore = !!(features & VKT_FEATURE_TIMELINE_SEMAPHORE),
      .bufferDeviceAddress = !!(features & VKT_FEATURE_BUFFER_DEVICE_ADDRESS),
      .hostQueryReset = !!(features & VKT_FEATURE_HOST_QUERY_RESET),
   };
   const VkPhysicalDeviceFeatures f10 = {
      .occlusionQueryPrecise = !!(features & VKT_FEATURE_OCCLUSION_PRECISE),
   };
   if (other_family == ctx->queue_family)
      other_family = UINT32_MAX;
   const VkDeviceQueueCreateInfo queue_info[2] = {
      {
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = ctx->queue_family,
         .queueCount = 1,
         .pQueuePriorities = &priority,
      },
      {
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = other_family,
         .queueCount = 1,
         .pQueuePriorities = &priority,
      },
   };
   const VkDeviceCreateInfo device_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &f12,
      .queueCreateInfoCount = other_family == UINT32_MAX ? 1 : 2,
      .pQueueCreateInfos = queue_info,
      .enabledExtensionCount = n_exts,
      .ppEnabledExtensionNames = exts,
      .pEnabledFeatures = &f10,
   };
   VKT_CHECK(vkCreateDevice(pdev, &device_info, NULL, &ctx->device));
   vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
   ctx->other_family = other_family;
   ctx->other_queue = VK_NULL_HANDLE;
   if (other_family != UINT32_MAX)
      vkGetDeviceQueue(ctx->device, other_family, 0, &ctx->other_queue);

   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = ctx->queue_family,
   };
   VKT_CHECK(vkCreateCommandPool(ctx->device, &pool_info, NULL,
                                 &ctx->cmd_pool));
}

void
vkt_context_init_physical(struct vkt_context *ctx, VkInstance instance,
                          VkPhysicalDevice pdev, uint32_t features)
{
   context_init_device(ctx, instance, pdev, features, NULL, 0, NULL, UINT32_MAX);
}

void
vkt_context_init_physical_ext(struct vkt_context *ctx, VkInstance instance,
                              VkPhysicalDevice pdev, uint32_t features,
                              const char *const *exts, uint32_t n_exts,
                              void *pnext)
{
   context_init_device(ctx, instance, pdev, features, exts, n_exts, pnext, UINT32_MAX);
}

void
vkt_context_init_physical_family(struct vkt_context *ctx, VkInstance instance,
                                 VkPhysicalDevice pdev, uint32_t features,
                                 const char *const *exts, uint32_t n_exts,
                                 void *pnext, uint32_t other_family)
{
   context_init_device(ctx, instance, pdev, features, exts, n_exts, pnext, other_family);
}

void
vkt_context_init_ext(struct vkt_context *ctx, const char *prog,
                     const char *device_name, uint32_t features,
                     const char *const *exts, uint32_t n_exts, void *pnext)
{
   VkInstance instance;

   memset(ctx, 0, sizeof(*ctx));
   ctx->prog = prog;
   vkt_set_prog(prog);
   instance = vkt_instance_create(prog);
   context_init_device(ctx, instance,
                       vkt_physical_device_pick(instance, device_name),
                       features, exts, n_exts, pnext, UINT32_MAX);
}

void
vkt_context_init(struct vkt_context *ctx, const char *prog,
                 const char *device_name, uint32_t features)
{
   vkt_context_init_ext(ctx, prog, device_name, features, NULL, 0, NULL);
}

PFN_vkVoidFunction
vkt_device_proc(const struct vkt_context *ctx, const char *name)
{
   PFN_vkVoidFunction fn = vkGetDeviceProcAddr(ctx->device, name);

   if (!fn)
      vkt_fail("vkGetDeviceProcAddr(%s) returned NULL on '%s'", name,
               ctx->props.deviceName);
   return fn;
}

void
vkt_context_finish_device(struct vkt_context *ctx)
{
   if (ctx->device) {
      vkDestroyCommandPool(ctx->device, ctx->cmd_pool, NULL);
      vkDestroyDevice(ctx->device, NULL);
   }
   ctx->cmd_pool = VK_NULL_HANDLE;
   ctx->device = VK_NULL_HANDLE;
}

void
vkt_context_finish(struct vkt_context *ctx)
{
   vkt_context_finish_device(ctx);
   if (ctx->instance)
      vkDestroyInstance(ctx->instance, NULL);
   ctx->instance = VK_NULL_HANDLE;
}

uint32_t
vkt_memory_type(const struct vkt_context *ctx, uint32_t type_bits,
                VkMemoryPropertyFlags required,
                VkMemoryPropertyFlags preferred)
{
   uint32_t fallback = UINT32_MAX;

   for (uint32_t i = 0; i < ctx->mem_props.memoryTypeCount; i++) {
      VkMemoryPropertyFlags flags = ctx->mem_props.memoryTypes[i].propertyFlags;

      if (!(type_bits & (1u << i)) || (flags & required) != required)
         continue;
      if ((flags & preferred) == preferred)
         return i;
      if (fallback == UINT32_MAX)
         fallback = i;
   }
   return fallback;
}

void
vkt_buffer_create(const struct vkt_context *ctx, VkDeviceSize size,
                  VkBufferUsageFlags usage, bool host_visible,
                  struct vkt_buffer *buf)
{
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = usage,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   VkMemoryRequirements reqs;
   VkMemoryPropertyFlags required, preferred;
   uint32_t type;

   memset(buf, 0, sizeof(*buf));
   buf->size = size;
   VKT_CHECK(vkCreateBuffer(ctx->device, &info, NULL, &buf->buffer));
   vkGetBufferMemoryRequirements(ctx->device, buf->buffer, &reqs);

   if (host_visible) {
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   } else {
      required = 0;
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
   }
   type = vkt_memory_type(ctx, reqs.memoryTypeBits, required, preferred);
   if (type == UINT32_MAX)
      vkt_fail("no memory type for a buffer of %llu bytes (type bits 0x%x)",
               (unsigned long long)size, reqs.memoryTypeBits);

   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = reqs.size,
      .memoryTypeIndex = type,
   };
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &buf->memory));
   VKT_CHECK(vkBindBufferMemory(ctx->device, buf->buffer, buf->memory, 0));

   buf->coherent = ctx->mem_props.memoryTypes[type].propertyFlags &
                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
   if (host_visible)
      VKT_CHECK(vkMapMemory(ctx->device, buf->memory, 0, VK_WHOLE_SIZE, 0,
                            &buf->map));
}

void
vkt_buffer_destroy(const struct vkt_context *ctx, struct vkt_buffer *buf)
{
   if (buf->map)
      vkUnmapMemory(ctx->device, buf->memory);
   vkDestroyBuffer(ctx->device, buf->buffer, NULL);
   vkFreeMemory(ctx->device, buf->memory, NULL);
   memset(buf, 0, sizeof(*buf));
}

void
vkt_buffer_flush(const struct vkt_context *ctx, const struct vkt_buffer *buf)
{
   const VkMappedMemoryRange range = {
      .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
      .memory = buf->memory,
      .size = VK_WHOLE_SIZE,
   };

   if (!buf->coherent)
      VKT_CHECK(vkFlushMappedMemoryRanges(ctx->device, 1, &range));
}

void
vkt_buffer_invalidate(const struct vkt_context *ctx,
                      const struct vkt_buffer *buf)
{
   const VkMappedMemoryRange range = {
      .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
      .memory = buf->memory,
      .size = VK_WHOLE_SIZE,
   };

   if (!buf->coherent)
      VKT_CHECK(vkInvalidateMappedMemoryRanges(ctx->device, 1, &range));
}

VkDescriptorSet
vkt_descriptor_set(const struct vkt_context *ctx, VkDescriptorSetLayout layout,
                   VkDescriptorType type, uint32_t count, VkDescriptorPool *pool)
{
   const VkDescriptorPoolSize pool_size = {type, count};
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 1,
      .poolSizeCount = 1,
      .pPoolSizes = &pool_size,
   };
   VKT_CHECK(vkCreateDescriptorPool(ctx->device, &pool_info, NULL, pool));
   const VkDescriptorSetAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = *pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &layout,
   };
   VkDescriptorSet set;
   VKT_CHECK(vkAllocateDescriptorSets(ctx->device, &alloc, &set));
   return set;
}

void
vkt_write_buffers(const struct vkt_context *ctx, VkDescriptorSet set, VkDescriptorType type,
                  const VkBuffer *buffers, uint32_t n)
{
   VkDescriptorBufferInfo infos[8];
   VkWriteDescriptorSet writes[8];

   if (n > VKT_ARRAY_SIZE(writes))
      vkt_fail("vkt_write_buffers: %u buffers", n);
   for (uint32_t i = 0; i < n; i++) {
      infos[i] = (VkDescriptorBufferInfo){buffers[i], 0, VK_WHOLE_SIZE};
      writes[i] = (VkWriteDescriptorSet){
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = set,
         .dstBinding = i,
         .descriptorCount = 1,
         .descriptorType = type,
         .pBufferInfo = &infos[i],
      };
   }
   vkUpdateDescriptorSets(ctx->device, n, writes, 0, NULL);
}

VkDeviceMemory
vkt_image_bind_memory(const struct vkt_context *ctx, VkImage image)
{
   VkMemoryRequirements reqs;
   VkDeviceMemory memory;
   uint32_t type;

   vkGetImageMemoryRequirements(ctx->device, image, &reqs);
   type = vkt_memory_type(ctx, reqs.memoryTypeBits, 0,
                          VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
   if (type == UINT32_MAX)
      vkt_fail("no memory type for an image (type bits 0x%x)",
               reqs.memoryTypeBits);

   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = reqs.size,
      .memoryTypeIndex = type,
   };
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &memory));
   VKT_CHECK(vkBindImageMemory(ctx->device, image, memory, 0));
   return memory;
}

VkShaderModule
vkt_shader_module(const struct vkt_context *ctx, const uint32_t *code,
                  size_t size)
{
   const VkShaderModuleCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
      .codeSize = size,
      .pCode = code,
   };
   VkShaderModule module;

   VKT_CHECK(vkCreateShaderModule(ctx->device, &info, NULL, &module));
   return module;
}

VkPipelineShaderStageCreateInfo
vkt_shader_stage(VkShaderStageFlagBits stage, VkShaderModule module)
{
   return (VkPipelineShaderStageCreateInfo){
      .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
      .stage = stage,
      .module = module,
      .pName = "main",
   };
}

VkPipeline
vkt_compute_pipeline(const struct vkt_context *ctx, const uint32_t *code, size_t size,
                     VkPipelineLayout layout, VkPipelineCreateFlags flags)
{
   VkShaderModule module = vkt_shader_module(ctx, code, size);
   const VkComputePipelineCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .flags = flags,
      .stage = vkt_shader_stage(VK_SHADER_STAGE_COMPUTE_BIT, module),
      .layout = layout,
   };
   VkPipeline pipeline;
   VKT_CHECK(vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &info, NULL, &pipeline));
   vkDestroyShaderModule(ctx->device, module, NULL);
   return pipeline;
}

VkResult
vkt_graphics_pipeline_try(const struct vkt_context *ctx, const struct vkt_graphics *g,
                          VkPipeline *pipeline)
{
   bool vertex = false;
   for (uint32_t i = 0; i < g->n_stages; i++)
      vertex |= g->stages[i].stage == VK_SHADER_STAGE_VERTEX_BIT;
   const VkPipelineVertexInputStateCreateInfo no_vertex_buffers = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
   };
   const VkPipelineInputAssemblyStateCreateInfo input_assembly = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
      .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
   };
   const VkViewport viewport = {0, 0, (float)g->size, (float)g->size, 0.0f, 1.0f};
   const VkRect2D scissor = {{0, 0}, {g->size, g->size}};
   const VkPipelineViewportStateCreateInfo viewport_state = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
      .viewportCount = 1,
      .pViewports = g->size ? &viewport : NULL,
      .scissorCount = 1,
      .pScissors = g->size ? &scissor : NULL,
   };
   const VkPipelineRasterizationStateCreateInfo raster = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
      .polygonMode = VK_POLYGON_MODE_FILL,
      .cullMode = VK_CULL_MODE_NONE,
      .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
      .lineWidth = 1.0f,
   };
   const VkPipelineMultisampleStateCreateInfo multisample = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
      .rasterizationSamples = g->samples ? g->samples : VK_SAMPLE_COUNT_1_BIT,
   };
   const VkPipelineColorBlendAttachmentState blend_attachment = {
      .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                        VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT,
   };
   const VkPipelineColorBlendStateCreateInfo blend = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
      .attachmentCount = 1,
      .pAttachments = &blend_attachment,
   };
   VkDynamicState dynamic_states[16];
   uint32_t n_dynamic = 0;
   if (!g->size) {
      dynamic_states[n_dynamic++] = VK_DYNAMIC_STATE_VIEWPORT;
      dynamic_states[n_dynamic++] = VK_DYNAMIC_STATE_SCISSOR;
   }
   if (g->n_dynamic_states > VKT_ARRAY_SIZE(dynamic_states) - n_dynamic)
      vkt_fail("vkt_graphics_pipeline: %u dynamic states", g->n_dynamic_states);
   for (uint32_t i = 0; i < g->n_dynamic_states; i++)
      dynamic_states[n_dynamic++] = g->dynamic_states[i];
   const VkPipelineDynamicStateCreateInfo dynamic = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
      .dynamicStateCount = n_dynamic,
      .pDynamicStates = dynamic_states,
   };
   const VkFormat color_format = g->color_format ? g->color_format : VK_FORMAT_R8G8B8A8_UNORM;
   const VkPipelineRenderingCreateInfo rendering = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
      .colorAttachmentCount = 1,
      .pColorAttachmentFormats = &color_format,
      .depthAttachmentFormat = g->depth_format,
   };
   const VkGraphicsPipelineCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
      .pNext = g->render_pass ? NULL : &rendering,
      .flags = g->flags,
      .stageCount = g->n_stages,
      .pStages = g->stages,
      .pVertexInputState =
         !vertex ? NULL : g->vertex_input ? g->vertex_input : &no_vertex_buffers,
      .pInputAssemblyState = vertex ? &input_assembly : NULL,
      .pViewportState = &viewport_state,
      .pRasterizationState = &raster,
      .pMultisampleState = &multisample,
      .pDepthStencilState = g->depth,
      .pColorBlendState = &blend,
      .pDynamicState = n_dynamic ? &dynamic : NULL,
      .layout = g->layout,
      .renderPass = g->render_pass,
   };
   return vkCreateGraphicsPipelines(ctx->device, VK_NULL_HANDLE, 1, &info, NULL, pipeline);
}

VkPipeline
vkt_graphics_pipeline(const struct vkt_context *ctx, const struct vkt_graphics *g)
{
   VkPipeline pipeline;
   VKT_CHECK(vkt_graphics_pipeline_try(ctx, g, &pipeline));
   return pipeline;
}

VkCommandBuffer
vkt_cmd_begin(const struct vkt_context *ctx)
{
   return vkt_cmd_begin_pool(ctx, ctx->cmd_pool);
}

VkCommandBuffer
vkt_cmd_begin_pool(const struct vkt_context *ctx, VkCommandPool pool)
{
   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   VkCommandBuffer cmd;

   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, &cmd));
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
   return cmd;
}

void
vkt_submit(const struct vkt_context *ctx, VkCommandBuffer cmd, VkFence fence)
{
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx->queue, 1, &submit, fence));
}

void
vkt_cmd_submit_wait(const struct vkt_context *ctx, VkCommandBuffer cmd)
{
   const VkFenceCreateInfo fence_info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
   };
   VkFence fence;
   VkResult r;

   VKT_CHECK(vkEndCommandBuffer(cmd));
   VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &fence));
   vkt_submit(ctx, cmd, fence);
   r = vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, 60000000000ull);
   if (r == VK_TIMEOUT)
      vkt_fail("command buffer did not complete within 60 s");
   VKT_CHECK(r);
   vkDestroyFence(ctx->device, fence, NULL);
   vkFreeCommandBuffers(ctx->device, ctx->cmd_pool, 1, &cmd);
}

void
vkt_color_target_init(const struct vkt_context *ctx, uint32_t size,
                      struct vkt_color_target *t)
{
   const VkImageCreateInfo image_info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = VK_FORMAT_R8G8B8A8_UNORM,
      .extent = { size, size, 1 },
      .mipLevels = 1,
      .arrayLayers = 1,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
   };
   VKT_CHECK(vkCreateImage(ctx->device, &image_info, NULL, &t->image));
   t->memory = vkt_image_bind_memory(ctx, t->image);
   const VkImageViewCreateInfo view_info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
      .image = t->image,
      .viewType = VK_IMAGE_VIEW_TYPE_2D,
      .format = image_info.format,
      .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
   };
   VKT_CHECK(vkCreateImageView(ctx->device, &view_info, NULL, &t->view));

   const VkAttachmentDescription attachment = {
      .format = image_info.format,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
      .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
      .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
      .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
   };
   const VkAttachmentReference ref = {
      0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL
   };
   const VkSubpassDescription subpass = {
      .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
      .colorAttachmentCount = 1,
      .pColorAttachments = &ref,
   };
   const VkRenderPassCreateInfo rp_info = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
      .attachmentCount = 1,
      .pAttachments = &attachment,
      .subpassCount = 1,
      .pSubpasses = &subpass,
   };
   VKT_CHECK(vkCreateRenderPass(ctx->device, &rp_info, NULL, &t->render_pass));
   const VkFramebufferCreateInfo fb_info = {
      .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
      .renderPass = t->render_pass,
      .attachmentCount = 1,
      .pAttachments = &t->view,
      .width = size,
      .height = size,
      .layers = 1,
   };
   VKT_CHECK(vkCreateFramebuffer(ctx->device, &fb_info, NULL, &t->framebuffer));
}

void
vkt_color_target_finish(const struct vkt_context *ctx, struct vkt_color_target *t)
{
   vkDestroyFramebuffer(ctx->device, t->framebuffer, NULL);
   vkDestroyRenderPass(ctx->device, t->render_pass, NULL);
   vkDestroyImageView(ctx->device, t->view, NULL);
   vkDestroyImage(ctx->device, t->image, NULL);
   vkFreeMemory(ctx->device, t->memory, NULL);
}
