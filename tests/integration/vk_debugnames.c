/* SPDX-License-Identifier: MIT */
/*
 * vk_debugnames: object names, tags and labels (VK_EXT_debug_utils and
 * VK_EXT_debug_marker), with debug utils messengers and VK_EXT_debug_report
 * callbacks listening: the device keeps working, and a tool (gpudctl
 * status) can see the names while the program holds them.
 *
 * Creates an instance with VK_EXT_debug_utils and VK_EXT_debug_report (a
 * messenger and a report callback in the create info's chain, and one of
 * each made after), a device with VK_EXT_debug_marker where it is
 * advertised, and names, with vkSetDebugUtilsObjectNameEXT unless said:
 *
 *   the device                "dbgnames-device"
 *   its queue                 "dbgnames-queue"
 *   a buffer, before it is    "dbgnames-buffer-first" (and a tag), later
 *   bound to memory           renamed "dbgnames-buffer-renamed"
 *   the buffer's memory       "dbgnames-memory" (vkDebugMarkerSetObjectNameEXT,
 *                             and a tag with vkDebugMarkerSetObjectTagEXT)
 *   a command pool            "dbgnames-pool" (destroyed before READY)
 *   its command buffer        "dbgnames-cmd" (freed with the pool)
 *   a fence                   "dbgnames-fence", then unnamed (a NULL name;
 *                             "" with --no-null-names)
 *   a descriptor update       "dbgnames-template" (and by debug marker)
 *   template
 *   the messenger             "dbgnames-messenger", and the report
 *   and report callback       callback "dbgnames-report" (by debug marker)
 *                             (not with --no-loader-handles: see below)
 *   a descriptor set layout   "dbgnames-layout", a tab, and 20 "é" (62
 *                             bytes: a name to be cut short and cleaned)
 *
 * Records a command buffer with debug utils labels (begin, insert, end) and
 * debug markers (begin, insert, end) around a vkCmdFillBuffer, submits it
 * between queue labels (begin, insert, end), waits, and checks every word
 * of the buffer; updates a descriptor set with the named template. Then
 * renames the buffer, unnames the fence, destroys the command pool, waits
 * for the device to be idle (a synchronous call: the asynchronous ones
 * before it have been run), prints READY and reads stdin to its end before
 * it destroys the rest and exits.
 *
 * A line "many" on stdin names more objects than gpudctl lists (24): events
 * "dbgnames-event-01" to "-30", destroys event 10, names a new one
 * "dbgnames-event-late" and ten more, "-31" to "-40", then waits for the
 * device to be idle and prints MANY. The 24 most recently named live
 * objects are then events 18 to 30, late, and 31 to 40, in that order.
 *
 * Every message and report it gets is printed ("message: ..." and
 * "report: ..."); an error-severity one fails the program, which breaks no
 * rule (run it with the validation layer, or through a gpud with
 * --validate, to have that checked).
 *
 *   vk_debugnames [--device NAME] [--require-marker] [--no-loader-handles]
 *                 [--no-null-names]
 *
 * --require-marker fails when the device does not advertise
 * VK_EXT_debug_marker (gpud always does; lavapipe does not, and the markers
 * are then left out). --no-loader-handles leaves out the names of the
 * messenger and the report callback: the Vulkan loader (1.3.239) hands the
 * driver its own handles for those, which a driver that keeps names in its
 * objects (Mesa's) takes for its own, and crashes. --no-null-names unnames
 * with "" rather than NULL (both valid): Mesa 22.3 answers a NULL name with
 * VK_ERROR_OUT_OF_HOST_MEMORY.
 *
 * Exit 0 when everything worked and no error message came.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

#define FILL_VALUE 0xdeb0a11fu
#define BUFFER_SIZE 65536u

static unsigned messages, reports, errors;

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   printf("message%s: 0x%x %s: %.300s\n", (const char *)user, (unsigned)severity,
          data->pMessageIdName ? data->pMessageIdName : "", data->pMessage ? data->pMessage : "");
   fflush(stdout);
   messages++;
   errors += severity == VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
   return VK_FALSE;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_report(VkDebugReportFlagsEXT flags, VkDebugReportObjectTypeEXT object_type, uint64_t object,
          size_t location, int32_t code, const char *prefix, const char *message, void *user)
{
   printf("report%s: 0x%x %s: %.300s\n", (const char *)user, (unsigned)flags, prefix ? prefix : "",
          message ? message : "");
   fflush(stdout);
   reports++;
   errors += !!(flags & VK_DEBUG_REPORT_ERROR_BIT_EXT);
   return VK_FALSE;
}

static bool
has_extension(const VkExtensionProperties *props, uint32_t n, const char *name)
{
   for (uint32_t i = 0; i < n; i++)
      if (!strcmp(props[i].extensionName, name))
         return true;
   return false;
}

static PFN_vkVoidFunction
instance_proc(VkInstance instance, const char *name)
{
   PFN_vkVoidFunction fn = vkGetInstanceProcAddr(instance, name);
   if (!fn)
      vkt_fail("vkGetInstanceProcAddr(%s) returned NULL", name);
   return fn;
}

/* The extension entry points (none is exported by the loader). */
static PFN_vkSetDebugUtilsObjectNameEXT set_name;
static PFN_vkSetDebugUtilsObjectTagEXT set_tag;
static PFN_vkCmdBeginDebugUtilsLabelEXT cmd_begin_label;
static PFN_vkCmdInsertDebugUtilsLabelEXT cmd_insert_label;
static PFN_vkCmdEndDebugUtilsLabelEXT cmd_end_label;
static PFN_vkQueueBeginDebugUtilsLabelEXT queue_begin_label;
static PFN_vkQueueInsertDebugUtilsLabelEXT queue_insert_label;
static PFN_vkQueueEndDebugUtilsLabelEXT queue_end_label;
static PFN_vkDebugMarkerSetObjectNameEXT marker_set_name;
static PFN_vkDebugMarkerSetObjectTagEXT marker_set_tag;
static PFN_vkCmdDebugMarkerBeginEXT cmd_marker_begin;
static PFN_vkCmdDebugMarkerInsertEXT cmd_marker_insert;
static PFN_vkCmdDebugMarkerEndEXT cmd_marker_end;

static void
name_object(VkDevice device, VkObjectType type, uint64_t handle, const char *name)
{
   const VkDebugUtilsObjectNameInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
      .objectType = type,
      .objectHandle = handle,
      .pObjectName = name,
   };
   VKT_CHECK(set_name(device, &info));
   printf("named %d 0x%llx: %s\n", (int)type, (unsigned long long)handle, name ? name : "(none)");
}

static void
marker_name_object(VkDevice device, VkDebugReportObjectTypeEXT type, uint64_t handle,
                   const char *name)
{
   const VkDebugMarkerObjectNameInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_MARKER_OBJECT_NAME_INFO_EXT,
      .objectType = type,
      .object = handle,
      .pObjectName = name,
   };
   VKT_CHECK(marker_set_name(device, &info));
   printf("marker-named %d 0x%llx: %s\n", (int)type, (unsigned long long)handle, name);
}

static VkDebugUtilsLabelEXT
label(const char *name, float r)
{
   return (VkDebugUtilsLabelEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
      .pLabelName = name,
      .color = {r, 0.5f, 0.25f, 1.0f},
   };
}

static VkDebugMarkerMarkerInfoEXT
marker(const char *name)
{
   return (VkDebugMarkerMarkerInfoEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_MARKER_MARKER_INFO_EXT,
      .pMarkerName = name,
      .color = {0.0f, 1.0f, 0.0f, 1.0f},
   };
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool require_marker = false, name_loader_handles = true, null_names = true;
   vkt_set_prog("vk_debugnames");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--require-marker")) {
         require_marker = true;
      } else if (!strcmp(argv[i], "--no-loader-handles")) {
         name_loader_handles = false;
      } else if (!strcmp(argv[i], "--no-null-names")) {
         null_names = false;
      } else {
         fprintf(stderr, "usage: vk_debugnames [--device NAME] [--require-marker] "
                         "[--no-loader-handles] [--no-null-names]\n");
         return 2;
      }
   }

   /* ---- instance, messengers and report callbacks ---- */
   const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
      .pfnUserCallback = on_message,
      .pUserData = (void *)"",
   };
   VkDebugUtilsMessengerCreateInfoEXT chain_messenger_info = messenger_info;
   chain_messenger_info.pUserData = (void *)" (create info)";
   const VkDebugReportCallbackCreateInfoEXT report_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT,
      .flags = VK_DEBUG_REPORT_ERROR_BIT_EXT | VK_DEBUG_REPORT_WARNING_BIT_EXT,
      .pfnCallback = on_report,
      .pUserData = (void *)"",
   };
   const VkDebugReportCallbackCreateInfoEXT chain_report_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT,
      .pNext = &chain_messenger_info,
      .flags = VK_DEBUG_REPORT_ERROR_BIT_EXT | VK_DEBUG_REPORT_WARNING_BIT_EXT,
      .pfnCallback = on_report,
      .pUserData = (void *)" (create info)",
   };
   const char *instance_exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME,
                                  VK_EXT_DEBUG_REPORT_EXTENSION_NAME};
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_debugnames",
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo instance_info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pNext = &chain_report_info,
      .pApplicationInfo = &app,
      .enabledExtensionCount = VKT_ARRAY_SIZE(instance_exts),
      .ppEnabledExtensionNames = instance_exts,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&instance_info, NULL, &instance));
   PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)instance_proc(instance, "vkCreateDebugUtilsMessengerEXT");
   PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
      (PFN_vkDestroyDebugUtilsMessengerEXT)instance_proc(instance,
                                                         "vkDestroyDebugUtilsMessengerEXT");
   PFN_vkCreateDebugReportCallbackEXT create_report =
      (PFN_vkCreateDebugReportCallbackEXT)instance_proc(instance, "vkCreateDebugReportCallbackEXT");
   PFN_vkDestroyDebugReportCallbackEXT destroy_report =
      (PFN_vkDestroyDebugReportCallbackEXT)instance_proc(instance,
                                                         "vkDestroyDebugReportCallbackEXT");
   VkDebugUtilsMessengerEXT messenger;
   VKT_CHECK(create_messenger(instance, &messenger_info, NULL, &messenger));
   VkDebugReportCallbackEXT report;
   VKT_CHECK(create_report(instance, &report_info, NULL, &report));

   /* ---- device ---- */
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);
   VkPhysicalDeviceProperties props;
   vkGetPhysicalDeviceProperties(pdev, &props);
   VkPhysicalDeviceMemoryProperties mem_props;
   vkGetPhysicalDeviceMemoryProperties(pdev, &mem_props);
   printf("device: %s\n", props.deviceName);

   uint32_t n_exts = 0;
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(pdev, NULL, &n_exts, NULL));
   VkExtensionProperties *exts = calloc(n_exts ? n_exts : 1, sizeof(*exts));
   if (!exts)
      vkt_fail("out of memory");
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(pdev, NULL, &n_exts, exts));
   const bool use_marker = has_extension(exts, n_exts, VK_EXT_DEBUG_MARKER_EXTENSION_NAME);
   free(exts);
   if (!use_marker && require_marker)
      vkt_fail("'%s' does not advertise %s", props.deviceName,
               VK_EXT_DEBUG_MARKER_EXTENSION_NAME);
   printf("%s: %s\n", VK_EXT_DEBUG_MARKER_EXTENSION_NAME,
          use_marker ? "used" : "not advertised, left out");

   VkQueueFamilyProperties families[16];
   uint32_t n_families = VKT_ARRAY_SIZE(families);
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, families);
   uint32_t family = UINT32_MAX;
   for (uint32_t i = 0; i < n_families && family == UINT32_MAX; i++)
      if ((families[i].queueFlags &
           (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT)) &&
          families[i].queueCount)
         family = i;
   if (family == UINT32_MAX)
      vkt_fail("'%s' has no queue family", props.deviceName);
   const float priority = 1.0f;
   const VkDeviceQueueCreateInfo queue_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
   };
   const char *device_exts[] = {VK_EXT_DEBUG_MARKER_EXTENSION_NAME};
   const VkPhysicalDeviceVulkan13Features features13 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .privateData = VK_TRUE,
   };
   const VkDeviceCreateInfo device_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &features13,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue_info,
      .enabledExtensionCount = use_marker ? 1 : 0,
      .ppEnabledExtensionNames = device_exts,
   };
   VkDevice device;
   VKT_CHECK(vkCreateDevice(pdev, &device_info, NULL, &device));
   VkQueue queue;
   vkGetDeviceQueue(device, family, 0, &queue);

#define DEVICE_PROC(var, name)                                                   \
   do {                                                                          \
      var = (void *)vkGetDeviceProcAddr(device, name);                           \
      if (!var)                                                                  \
         vkt_fail("vkGetDeviceProcAddr(%s) returned NULL", name);                \
   } while (0)
   DEVICE_PROC(set_name, "vkSetDebugUtilsObjectNameEXT");
   DEVICE_PROC(set_tag, "vkSetDebugUtilsObjectTagEXT");
   DEVICE_PROC(cmd_begin_label, "vkCmdBeginDebugUtilsLabelEXT");
   DEVICE_PROC(cmd_insert_label, "vkCmdInsertDebugUtilsLabelEXT");
   DEVICE_PROC(cmd_end_label, "vkCmdEndDebugUtilsLabelEXT");
   DEVICE_PROC(queue_begin_label, "vkQueueBeginDebugUtilsLabelEXT");
   DEVICE_PROC(queue_insert_label, "vkQueueInsertDebugUtilsLabelEXT");
   DEVICE_PROC(queue_end_label, "vkQueueEndDebugUtilsLabelEXT");
   if (use_marker) {
      DEVICE_PROC(marker_set_name, "vkDebugMarkerSetObjectNameEXT");
      DEVICE_PROC(marker_set_tag, "vkDebugMarkerSetObjectTagEXT");
      DEVICE_PROC(cmd_marker_begin, "vkCmdDebugMarkerBeginEXT");
      DEVICE_PROC(cmd_marker_insert, "vkCmdDebugMarkerInsertEXT");
      DEVICE_PROC(cmd_marker_end, "vkCmdDebugMarkerEndEXT");
   }
#undef DEVICE_PROC

   name_object(device, VK_OBJECT_TYPE_DEVICE, (uint64_t)(uintptr_t)device, "dbgnames-device");
   name_object(device, VK_OBJECT_TYPE_QUEUE, (uint64_t)(uintptr_t)queue, "dbgnames-queue");

   /* ---- a buffer, named and tagged before it has memory ---- */
   const VkBufferCreateInfo buffer_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = BUFFER_SIZE,
      .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   VkBuffer buffer;
   VKT_CHECK(vkCreateBuffer(device, &buffer_info, NULL, &buffer));
   name_object(device, VK_OBJECT_TYPE_BUFFER, (uint64_t)buffer, "dbgnames-buffer-first");
   static const uint32_t tag[4] = {0x7a6, 0x5ca1ab1e, 0, 0xffffffffu};
   const VkDebugUtilsObjectTagInfoEXT tag_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_TAG_INFO_EXT,
      .objectType = VK_OBJECT_TYPE_BUFFER,
      .objectHandle = (uint64_t)buffer,
      .tagName = 0x6770756475ull,
      .tagSize = sizeof(tag),
      .pTag = tag,
   };
   VKT_CHECK(set_tag(device, &tag_info));

   VkMemoryRequirements reqs;
   vkGetBufferMemoryRequirements(device, buffer, &reqs);
   uint32_t type = UINT32_MAX;
   for (uint32_t i = 0; i < mem_props.memoryTypeCount && type == UINT32_MAX; i++) {
      const VkMemoryPropertyFlags want =
         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      if ((reqs.memoryTypeBits & (1u << i)) &&
          (mem_props.memoryTypes[i].propertyFlags & want) == want)
         type = i;
   }
   if (type == UINT32_MAX)
      vkt_fail("no host-visible coherent memory for the buffer");
   const VkMemoryAllocateInfo alloc_info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = reqs.size,
      .memoryTypeIndex = type,
   };
   VkDeviceMemory memory;
   VKT_CHECK(vkAllocateMemory(device, &alloc_info, NULL, &memory));
   if (use_marker) {
      marker_name_object(device, VK_DEBUG_REPORT_OBJECT_TYPE_DEVICE_MEMORY_EXT, (uint64_t)memory,
                         "dbgnames-memory");
      const VkDebugMarkerObjectTagInfoEXT marker_tag = {
         .sType = VK_STRUCTURE_TYPE_DEBUG_MARKER_OBJECT_TAG_INFO_EXT,
         .objectType = VK_DEBUG_REPORT_OBJECT_TYPE_DEVICE_MEMORY_EXT,
         .object = (uint64_t)memory,
         .tagName = 1,
         .tagSize = sizeof(tag),
         .pTag = tag,
      };
      VKT_CHECK(marker_set_tag(device, &marker_tag));
   } else {
      name_object(device, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)memory, "dbgnames-memory");
   }
   VKT_CHECK(vkBindBufferMemory(device, buffer, memory, 0));
   uint32_t *words;
   VKT_CHECK(vkMapMemory(device, memory, 0, VK_WHOLE_SIZE, 0, (void **)&words));
   memset(words, 0, BUFFER_SIZE);

   /* ---- a descriptor set layout with a long name; objects only the ICD
    * (or a layer) may keep: a descriptor update template (and a set it
    * updates), the messenger and the report callback ---- */
   const VkDescriptorSetLayoutBinding binding = {
      .binding = 0,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .descriptorCount = 1,
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(device, &set_layout_info, NULL, &set_layout));
   char layout_name[64] = "dbgnames-layout\t";
   for (unsigned i = 0; i < 20; i++)
      strcat(layout_name, "\xc3\xa9"); /* é */
   name_object(device, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT, (uint64_t)set_layout, layout_name);
   const VkDescriptorUpdateTemplateEntry entry = {
      .dstBinding = 0,
      .descriptorCount = 1,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .offset = 0,
      .stride = sizeof(VkDescriptorBufferInfo),
   };
   const VkDescriptorUpdateTemplateCreateInfo template_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
      .descriptorUpdateEntryCount = 1,
      .pDescriptorUpdateEntries = &entry,
      .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET,
      .descriptorSetLayout = set_layout,
   };
   VkDescriptorUpdateTemplate templ;
   VKT_CHECK(vkCreateDescriptorUpdateTemplate(device, &template_info, NULL, &templ));
   name_object(device, VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, (uint64_t)templ,
               "dbgnames-template");
   if (use_marker)
      marker_name_object(device, VK_DEBUG_REPORT_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_EXT,
                         (uint64_t)templ, "dbgnames-template");
   /* private data (core 1.3) on it and on a buffer: set, read back */
   {
      const VkPrivateDataSlotCreateInfo slot_info = {
         .sType = VK_STRUCTURE_TYPE_PRIVATE_DATA_SLOT_CREATE_INFO,
      };
      VkPrivateDataSlot slot;
      VKT_CHECK(vkCreatePrivateDataSlot(device, &slot_info, NULL, &slot));
      VKT_CHECK(vkSetPrivateData(device, VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE,
                                 (uint64_t)templ, slot, 0x1234567890abcdefull));
      VKT_CHECK(vkSetPrivateData(device, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT,
                                 (uint64_t)set_layout, slot, 42));
      uint64_t got_template = 0, got_layout = 0;
      vkGetPrivateData(device, VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, (uint64_t)templ, slot,
                       &got_template);
      vkGetPrivateData(device, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT, (uint64_t)set_layout, slot,
                       &got_layout);
      if (got_template != 0x1234567890abcdefull || got_layout != 42)
         vkt_fail("private data read back 0x%llx and %llu, expected 0x1234567890abcdef and 42",
                  (unsigned long long)got_template, (unsigned long long)got_layout);
      vkDestroyPrivateDataSlot(device, slot, NULL);
      printf("vk_debugnames: private data of a template and a layout read back\n");
   }
   if (name_loader_handles) {
      name_object(device, VK_OBJECT_TYPE_DEBUG_UTILS_MESSENGER_EXT, (uint64_t)messenger,
                  "dbgnames-messenger");
      if (use_marker)
         marker_name_object(device, VK_DEBUG_REPORT_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT_EXT,
                            (uint64_t)report, "dbgnames-report");
   }
   const VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
   const VkDescriptorPoolCreateInfo dpool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 1,
      .poolSizeCount = 1,
      .pPoolSizes = &pool_size,
   };
   VkDescriptorPool dpool;
   VKT_CHECK(vkCreateDescriptorPool(device, &dpool_info, NULL, &dpool));
   const VkDescriptorSetAllocateInfo set_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = dpool,
      .descriptorSetCount = 1,
      .pSetLayouts = &set_layout,
   };
   VkDescriptorSet set;
   VKT_CHECK(vkAllocateDescriptorSets(device, &set_info, &set));
   const VkDescriptorBufferInfo buffer_desc = {buffer, 0, VK_WHOLE_SIZE};
   vkUpdateDescriptorSetWithTemplate(device, set, templ, &buffer_desc);

   /* ---- a fence named and unnamed ---- */
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(device, &fence_info, NULL, &fence));
   name_object(device, VK_OBJECT_TYPE_FENCE, (uint64_t)fence, "dbgnames-fence");

   /* ---- a labelled fill ---- */
   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = family,
   };
   VkCommandPool pool;
   VKT_CHECK(vkCreateCommandPool(device, &pool_info, NULL, &pool));
   name_object(device, VK_OBJECT_TYPE_COMMAND_POOL, (uint64_t)pool, "dbgnames-pool");
   const VkCommandBufferAllocateInfo cmd_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   VkCommandBuffer cmd;
   VKT_CHECK(vkAllocateCommandBuffers(device, &cmd_info, &cmd));
   name_object(device, VK_OBJECT_TYPE_COMMAND_BUFFER, (uint64_t)(uintptr_t)cmd, "dbgnames-cmd");
   const VkCommandBufferBeginInfo begin_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin_info));
   VkDebugUtilsLabelEXT l = label("dbgnames: fill", 1.0f);
   cmd_begin_label(cmd, &l);
   l = label("dbgnames: before the fill", 0.5f);
   cmd_insert_label(cmd, &l);
   VkDebugMarkerMarkerInfoEXT m = marker("dbgnames: marker around the fill");
   if (use_marker) {
      cmd_marker_begin(cmd, &m);
      m = marker("dbgnames: marker inserted");
      cmd_marker_insert(cmd, &m);
   }
   vkCmdFillBuffer(cmd, buffer, 0, VK_WHOLE_SIZE, FILL_VALUE);
   if (use_marker)
      cmd_marker_end(cmd);
   cmd_end_label(cmd);
   const VkBufferMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .buffer = buffer,
      .size = VK_WHOLE_SIZE,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0,
                        NULL, 1, &barrier, 0, NULL);
   VKT_CHECK(vkEndCommandBuffer(cmd));

   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   l = label("dbgnames: submit", 0.0f);
   queue_begin_label(queue, &l);
   l = label("dbgnames: in the submit label", 0.25f);
   queue_insert_label(queue, &l);
   VKT_CHECK(vkQueueSubmit(queue, 1, &submit, fence));
   queue_end_label(queue);
   VkResult r = vkWaitForFences(device, 1, &fence, VK_TRUE, 60000000000ull);
   if (r == VK_TIMEOUT)
      vkt_fail("the fill did not complete within 60 s");
   VKT_CHECK(r);
   unsigned wrong = 0;
   for (unsigned i = 0; i < BUFFER_SIZE / 4; i++)
      wrong += words[i] != FILL_VALUE;
   if (wrong)
      vkt_fail("%u of %u words wrong after the labelled fill (first: 0x%08x)", wrong,
               BUFFER_SIZE / 4, words[0]);
   printf("fill: %u words right\n", BUFFER_SIZE / 4);

   /* ---- what the tool sees from here on ---- */
   name_object(device, VK_OBJECT_TYPE_BUFFER, (uint64_t)buffer, "dbgnames-buffer-renamed");
   name_object(device, VK_OBJECT_TYPE_FENCE, (uint64_t)fence, null_names ? NULL : "");
   vkDestroyCommandPool(device, pool, NULL);
   VKT_CHECK(vkDeviceWaitIdle(device));
   printf("READY\n");
   fflush(stdout);
   VkEvent events[41] = {0}, late = VK_NULL_HANDLE;
   char line[64];
   while (fgets(line, sizeof(line), stdin)) {
      if (strcmp(line, "many\n"))
         continue;
      const VkEventCreateInfo event_info = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
      char name[64];
      for (unsigned i = 1; i <= 40; i++) {
         if (i == 31) {
            vkDestroyEvent(device, events[10], NULL);
            events[10] = VK_NULL_HANDLE;
            VKT_CHECK(vkCreateEvent(device, &event_info, NULL, &late));
            name_object(device, VK_OBJECT_TYPE_EVENT, (uint64_t)late, "dbgnames-event-late");
         }
         VKT_CHECK(vkCreateEvent(device, &event_info, NULL, &events[i]));
         snprintf(name, sizeof(name), "dbgnames-event-%02u", i);
         name_object(device, VK_OBJECT_TYPE_EVENT, (uint64_t)events[i], name);
      }
      VKT_CHECK(vkDeviceWaitIdle(device));
      printf("MANY\n");
      fflush(stdout);
   }

   /* ---- the device still works; clean up ---- */
   VKT_CHECK(vkResetFences(device, 1, &fence));
   VKT_CHECK(vkQueueSubmit(queue, 0, NULL, fence));
   VKT_CHECK(vkWaitForFences(device, 1, &fence, VK_TRUE, 60000000000ull));
   vkDestroyFence(device, fence, NULL);
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(events); i++)
      vkDestroyEvent(device, events[i], NULL);
   vkDestroyEvent(device, late, NULL);
   vkDestroyDescriptorPool(device, dpool, NULL);
   vkDestroyDescriptorUpdateTemplate(device, templ, NULL);
   vkDestroyDescriptorSetLayout(device, set_layout, NULL);
   vkUnmapMemory(device, memory);
   vkDestroyBuffer(device, buffer, NULL);
   vkFreeMemory(device, memory, NULL);
   vkDestroyDevice(device, NULL);
   destroy_report(instance, report, NULL);
   destroy_messenger(instance, messenger, NULL);
   vkDestroyInstance(instance, NULL);

   printf("messages: %u, reports: %u, errors: %u\n", messages, reports, errors);
   if (errors)
      vkt_fail("%u error messages or reports", errors);
   printf("vk_debugnames: OK\n");
   return 0;
}
