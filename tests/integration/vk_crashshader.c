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
 * feature on, and describes nothing).
 *
 *   vk_crashshader [--device NAME] [--fault]
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

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool ask_fault = false;
   vkt_set_prog("vk_crashshader");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--fault")) {
         ask_fault = true;
      } else {
         fprintf(stderr, "usage: vk_crashshader [--device NAME] [--fault]\n");
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
   VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = fault_ext ? &want_fault : NULL,
      .bufferDeviceAddress = VK_TRUE,
   };
   const char *fault_name = VK_EXT_DEVICE_FAULT_EXTENSION_NAME;
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
      .enabledExtensionCount = fault_ext ? 1 : 0,
      .ppEnabledExtensionNames = &fault_name,
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
   vkCmdDispatch(cmd, 1, 1, 1);
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
