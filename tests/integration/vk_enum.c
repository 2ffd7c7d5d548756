/* SPDX-License-Identifier: MIT */
/*
 * vk_enum: lists the physical devices the loader sees.
 *
 *   devices: N
 *   device: NAME
 *   apiVersion: MAJOR.MINOR.PATCH
 *   deviceType: TYPE
 *   ...
 *
 * Exit 0 when the instance was created and the devices enumerated (zero
 * devices included: gpud's ICD reports none when no daemon answers, and the
 * loader then returns VK_ERROR_INITIALIZATION_FAILED, counted as zero).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

static const char *
device_type_name(VkPhysicalDeviceType type)
{
   switch (type) {
   case VK_PHYSICAL_DEVICE_TYPE_OTHER: return "other";
   case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
   case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
   case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
   case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
   default: return "unknown";
   }
}

int
main(int argc, char **argv)
{
   VkInstance instance;
   VkPhysicalDevice *devs;
   uint32_t count = 0;
   VkResult r;

   vkt_set_prog("vk_enum");
   if (argc > 1) {
      fprintf(stderr, "usage: vk_enum\n");
      return 1;
   }

   instance = vkt_instance_create("vk_enum");

   r = vkEnumeratePhysicalDevices(instance, &count, NULL);
   if (r == VK_ERROR_INITIALIZATION_FAILED) {
      /*
       * The Vulkan loader (1.3.239 at least) answers this, rather than zero
       * devices, when no driver has a device: gpud's ICD with no daemon.
       */
      fprintf(stderr, "vk_enum: vkEnumeratePhysicalDevices returned "
                      "VK_ERROR_INITIALIZATION_FAILED: no driver has a "
                      "device\n");
      count = 0;
   } else if (r != VK_SUCCESS) {
      vkt_fail("vkEnumeratePhysicalDevices (count) failed: %s",
               vkt_result_name(r));
   }
   devs = calloc(count ? count : 1, sizeof(*devs));
   if (!devs)
      vkt_fail("out of memory");
   if (count) {
      r = vkEnumeratePhysicalDevices(instance, &count, devs);
      if (r != VK_SUCCESS)
         vkt_fail("vkEnumeratePhysicalDevices failed: %s",
                  vkt_result_name(r));
   }

   printf("devices: %u\n", count);
   for (uint32_t i = 0; i < count; i++) {
      VkPhysicalDeviceProperties props;

      vkGetPhysicalDeviceProperties(devs[i], &props);
      printf("device: %s\n", props.deviceName);
      printf("apiVersion: %u.%u.%u\n", VK_API_VERSION_MAJOR(props.apiVersion),
             VK_API_VERSION_MINOR(props.apiVersion),
             VK_API_VERSION_PATCH(props.apiVersion));
      printf("deviceType: %s\n", device_type_name(props.deviceType));
   }

   free(devs);
   vkDestroyInstance(instance, NULL);
   return 0;
}
