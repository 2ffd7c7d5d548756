/* SPDX-License-Identifier: MIT */
/*
 * vk_crashshader: runs a valid compute shader that writes through a wild
 * device address (tests/shaders/wild_write.comp): a GPU faults, lavapipe
 * crashes.
 * Through gpud only this client's worker dies: the program must see
 * VK_ERROR_DEVICE_LOST from its submit or wait, and nothing worse. With
 * --fault, where the device has VK_EXT_device_fault (a GPU that faults and
 * lives), what the driver says of the fault is printed once the device is
 * lost (the NVIDIA driver takes about a minute to report the loss with the
 * feature on, and describes nothing). With --checkpoints, where the device
 * has VK_NV_device_diagnostic_checkpoints, a checkpoint is set before the
 * dispatch and another after it, and once the device is lost the queue's
 * checkpoints are read with both queries: each marker must be one of the two
 * pointers set.
 *
 *   vk_crashshader [--device NAME] [--fault] [--checkpoints]
 *
 * Prints each call's result.  Exit 0 when the device was lost, 1 when the
 * shader ran (the host driver survived it), 77 when the device lacks
 * buffer device addresses or 64-bit integers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "wild_write_comp_spv.h"

static bool lost;

static VkResult
note(const char *call, VkResult r)
{
   printf("vk_crashshader: %s: %s\n", call, vkt_result_name(r));
   fflush(stdout);
   lost |= r == VK_ERROR_DEVICE_LOST;
   return r;
}

/* What the driver says about the loss (gpud: why its worker died). */
static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   printf("vk_crashshader: message %s: %s\n", data->pMessageIdName ? data->pMessageIdName : "",
          data->pMessage ? data->pMessage : "");
   fflush(stdout);
   return VK_FALSE;
}

/* The counts, then the fault: a description the driver must give, its
 * addresses and vendor records (vkGetDeviceFaultInfoEXT). */
static void
report_fault(VkDevice device)
{
   PFN_vkGetDeviceFaultInfoEXT get_fault =
      (PFN_vkGetDeviceFaultInfoEXT)vkGetDeviceProcAddr(device, "vkGetDeviceFaultInfoEXT");
   VkDeviceFaultCountsEXT counts = {.sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_COUNTS_EXT};
   VkResult r = get_fault(device, &counts, NULL);
   printf("vk_crashshader: vkGetDeviceFaultInfoEXT (counts): %s: %u addresses, %u vendor "
          "records, %llu bytes of vendor data\n", vkt_result_name(r), counts.addressInfoCount,
          counts.vendorInfoCount, (unsigned long long)counts.vendorBinarySize);
   if (r != VK_SUCCESS)
      vkt_fail("vkGetDeviceFaultInfoEXT failed on the lost device");
   VkDeviceFaultAddressInfoEXT addresses[16];
   VkDeviceFaultVendorInfoEXT vendors[16];
   counts.addressInfoCount = counts.addressInfoCount < 16 ? counts.addressInfoCount : 16;
   counts.vendorInfoCount = counts.vendorInfoCount < 16 ? counts.vendorInfoCount : 16;
   counts.vendorBinarySize = 0;
   VkDeviceFaultInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_FAULT_INFO_EXT,
      .pAddressInfos = addresses,
      .pVendorInfos = vendors,
   };
   r = get_fault(device, &counts, &info);
   if (r != VK_SUCCESS && r != VK_INCOMPLETE)
      vkt_fail("vkGetDeviceFaultInfoEXT: %s", vkt_result_name(r));
   info.description[VK_MAX_DESCRIPTION_SIZE - 1] = '\0';
   printf("vk_crashshader: fault: \"%s\"\n", info.description);
   for (uint32_t i = 0; i < counts.addressInfoCount; i++)
      printf("vk_crashshader: fault address %u: type %d, 0x%llx (precision 0x%llx)\n", i,
             (int)addresses[i].addressType, (unsigned long long)addresses[i].reportedAddress,
             (unsigned long long)addresses[i].addressPrecision);
   for (uint32_t i = 0; i < counts.vendorInfoCount; i++) {
      vendors[i].description[VK_MAX_DESCRIPTION_SIZE - 1] = '\0';
      printf("vk_crashshader: fault vendor record %u: \"%s\" code 0x%llx\n", i,
             vendors[i].description, (unsigned long long)vendors[i].vendorFaultCode);
   }
}

/* The two markers: pointers the driver hands back, never reads. */
static const char marker_before[] = "before the dispatch";
static const char marker_after[] = "after the dispatch";

static const char *
marker_name(const void *marker)
{
   return marker == marker_before ? marker_before : marker == marker_after ? marker_after : NULL;
}

/* The lost queue's checkpoints, by both queries. */
static void
report_checkpoints(VkDevice device, VkQueue queue)
{
   PFN_vkGetQueueCheckpointDataNV get = (PFN_vkGetQueueCheckpointDataNV)vkGetDeviceProcAddr(
      device, "vkGetQueueCheckpointDataNV");
   PFN_vkGetQueueCheckpointData2NV get2 = (PFN_vkGetQueueCheckpointData2NV)vkGetDeviceProcAddr(
      device, "vkGetQueueCheckpointData2NV");
   VkCheckpointDataNV data[8];
   uint32_t n = 0;
   get(queue, &n, NULL);
   printf("vk_crashshader: vkGetQueueCheckpointDataNV: %u checkpoints\n", n);
   if (!n || n > 8)
      vkt_fail("the lost queue has %u checkpoints", n);
   for (uint32_t i = 0; i < n; i++)
      data[i] = (VkCheckpointDataNV){ .sType = VK_STRUCTURE_TYPE_CHECKPOINT_DATA_NV };
   get(queue, &n, data);
   for (uint32_t i = 0; i < n; i++) {
      const char *name = marker_name(data[i].pCheckpointMarker);
      printf("vk_crashshader: checkpoint %u: stage 0x%x, marker %p (%s)\n", i,
             (unsigned)data[i].stage, data[i].pCheckpointMarker, name ? name : "not one set");
      if (!name)
         vkt_fail("checkpoint %u's marker %p is none of those set", i,
                  data[i].pCheckpointMarker);
   }
   if (!get2)
      return;
   VkCheckpointData2NV data2[8];
   uint32_t n2 = 8;
   for (uint32_t i = 0; i < n2; i++)
      data2[i] = (VkCheckpointData2NV){ .sType = VK_STRUCTURE_TYPE_CHECKPOINT_DATA_2_NV };
   get2(queue, &n2, data2);
   for (uint32_t i = 0; i < n2; i++) {
      const char *name = marker_name(data2[i].pCheckpointMarker);
      printf("vk_crashshader: checkpoint (2) %u: stage 0x%llx, marker %s\n", i,
             (unsigned long long)data2[i].stage, name ? name : "not one set");
      if (!name)
         vkt_fail("checkpoint (2) %u's marker %p is none of those set", i,
                  data2[i].pCheckpointMarker);
   }
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool ask_fault = false, ask_checkpoints = false;
   vkt_set_prog("vk_crashshader");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--fault")) {
         ask_fault = true;
      } else if (!strcmp(argv[i], "--checkpoints")) {
         ask_checkpoints = true;
      } else {
         fprintf(stderr, "usage: vk_crashshader [--device NAME] [--fault] [--checkpoints]\n");
         return 2;
      }
   }
   /* with a debug messenger, for the driver's word on the loss */
   const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_crashshader",
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo instance_info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
      .enabledExtensionCount = 1,
      .ppEnabledExtensionNames = &ext,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&instance_info, NULL, &instance));
   PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                                 "vkCreateDebugUtilsMessengerEXT");
   const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      .pfnUserCallback = on_message,
   };
   VkDebugUtilsMessengerEXT messenger;
   VKT_CHECK(create_messenger(instance, &messenger_info, NULL, &messenger));
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);

   VkPhysicalDeviceVulkan12Features has12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
   };
   VkPhysicalDeviceFeatures2 has = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      .pNext = &has12,
   };
   vkGetPhysicalDeviceFeatures2(pdev, &has);
   if (!has12.bufferDeviceAddress || !has.features.shaderInt64) {
      printf("vk_crashshader: SKIP: no buffer device addresses or 64-bit integers\n");
      return 77;
   }
   /* VK_EXT_device_fault, where the device has it: what the driver says
    * the fault was */
   bool fault_ext =
      ask_fault && vkt_device_has_extension(pdev, VK_EXT_DEVICE_FAULT_EXTENSION_NAME);
   VkPhysicalDeviceFaultFeaturesEXT has_fault = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FAULT_FEATURES_EXT,
   };
   if (fault_ext) {
      VkPhysicalDeviceFeatures2 q = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
         .pNext = &has_fault,
      };
      vkGetPhysicalDeviceFeatures2(pdev, &q);
      fault_ext = has_fault.deviceFault;
   }
   VkPhysicalDeviceFaultFeaturesEXT want_fault = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FAULT_FEATURES_EXT,
      .deviceFault = VK_TRUE,
   };
   /* (checkpoints: synchronization2 for the second query too) */
   VkPhysicalDeviceVulkan13Features f13 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .pNext = fault_ext ? &want_fault : NULL,
      .synchronization2 = VK_TRUE,
   };
   VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = fault_ext ? &want_fault : NULL,
      .bufferDeviceAddress = VK_TRUE,
   };
   const bool checkpoints_ext =
      ask_checkpoints &&
      vkt_device_has_extension(pdev, VK_NV_DEVICE_DIAGNOSTIC_CHECKPOINTS_EXTENSION_NAME);
   if (ask_checkpoints && !checkpoints_ext)
      printf("vk_crashshader: the device has no %s\n",
             VK_NV_DEVICE_DIAGNOSTIC_CHECKPOINTS_EXTENSION_NAME);
   if (checkpoints_ext)
      f12.pNext = &f13;
   const char *ext_names[2];
   uint32_t n_ext_names = 0;
   if (fault_ext)
      ext_names[n_ext_names++] = VK_EXT_DEVICE_FAULT_EXTENSION_NAME;
   if (checkpoints_ext)
      ext_names[n_ext_names++] = VK_NV_DEVICE_DIAGNOSTIC_CHECKPOINTS_EXTENSION_NAME;
   VkPhysicalDeviceFeatures2 f2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      .pNext = &f12,
      .features.shaderInt64 = VK_TRUE,
   };
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   ctx.prog = "vk_crashshader";
   ctx.instance = instance;
   ctx.physical_device = pdev;
   vkGetPhysicalDeviceMemoryProperties(pdev, &ctx.mem_props);
   uint32_t n_families = 0;
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, NULL);
   VkQueueFamilyProperties families[16];
   n_families = n_families > 16 ? 16 : n_families;
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, families);
   ctx.queue_family = UINT32_MAX;
   for (uint32_t i = 0; i < n_families && ctx.queue_family == UINT32_MAX; i++) {
      if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
         ctx.queue_family = i;
   }
   if (ctx.queue_family == UINT32_MAX)
      vkt_fail("no compute queue");
   const float priority = 1.0f;
   const VkDeviceQueueCreateInfo queue_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = ctx.queue_family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
   };
   const VkDeviceCreateInfo device_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &f2,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue_info,
      .enabledExtensionCount = n_ext_names,
      .ppEnabledExtensionNames = ext_names,
   };
   VKT_CHECK(vkCreateDevice(pdev, &device_info, NULL, &ctx.device));
   vkGetDeviceQueue(ctx.device, ctx.queue_family, 0, &ctx.queue);
   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = ctx.queue_family,
   };
   VKT_CHECK(vkCreateCommandPool(ctx.device, &pool_info, NULL, &ctx.cmd_pool));

   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint64_t)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VkPipelineLayout layout;
   VKT_CHECK(vkCreatePipelineLayout(ctx.device, &layout_info, NULL, &layout));
   VkShaderModule module =
      vkt_shader_module(&ctx, wild_write_comp_spv, sizeof(wild_write_comp_spv));
   const VkComputePipelineCreateInfo pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_COMPUTE_BIT,
         .module = module,
         .pName = "main",
      },
      .layout = layout,
   };
   VkPipeline pipeline = VK_NULL_HANDLE;
   note("vkCreateComputePipelines",
        vkCreateComputePipelines(ctx.device, VK_NULL_HANDLE, 1, &pipeline_info, NULL,
                                 &pipeline));

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   const uint64_t address = 0x1000;
   vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(address), &address);
   PFN_vkCmdSetCheckpointNV set_checkpoint =
      checkpoints_ext
         ? (PFN_vkCmdSetCheckpointNV)vkGetDeviceProcAddr(ctx.device, "vkCmdSetCheckpointNV")
         : NULL;
   if (set_checkpoint)
      set_checkpoint(cmd, marker_before);
   vkCmdDispatch(cmd, 1, 1, 1);
   if (set_checkpoint)
      set_checkpoint(cmd, marker_after);
   note("vkEndCommandBuffer", vkEndCommandBuffer(cmd));
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   note("vkQueueSubmit", vkQueueSubmit(ctx.queue, 1, &submit, VK_NULL_HANDLE));
   note("vkQueueWaitIdle", vkQueueWaitIdle(ctx.queue));
   note("vkDeviceWaitIdle", vkDeviceWaitIdle(ctx.device));
   if (lost && fault_ext)
      report_fault(ctx.device);
   if (lost && checkpoints_ext)
      report_checkpoints(ctx.device, ctx.queue);

   /* Tear down: must neither crash nor hang on a lost device. */
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyShaderModule(ctx.device, module, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkt_context_finish_device(&ctx);
   PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
      (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
         instance, "vkDestroyDebugUtilsMessengerEXT");
   destroy_messenger(instance, messenger, NULL);
   vkDestroyInstance(instance, NULL);
   if (!lost) {
      printf("vk_crashshader: the shader ran: the host driver survived it\n");
      return 1;
   }
   printf("vk_crashshader: the device is lost to this client\n");
   return 0;
}
