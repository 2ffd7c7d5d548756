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
 *
 *   vk_enum [--instances N] [--linger MS]
 *
 * --instances N does it N times, an instance after another (programs that
 * look at the devices before they make their real instance); --linger MS
 * then waits MS milliseconds and prints "linger cpu: T ms", the CPU time
 * the process spent meanwhile (nothing of the driver's should run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

/* The process's CPU time, user and system, in milliseconds. */
static double
cpu_ms(void)
{
   struct rusage ru;
   getrusage(RUSAGE_SELF, &ru);
   return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
          (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void
enumerate(void)
{
   VkInstance instance;
   VkPhysicalDevice *devs;
   uint32_t count = 0;
   VkResult r;

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
}

int
main(int argc, char **argv)
{
   uint64_t instances = 1, linger_ms = 0;

   vkt_set_prog("vk_enum");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--instances") && i + 1 < argc) {
         instances = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--linger") && i + 1 < argc) {
         linger_ms = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else {
         fprintf(stderr, "usage: vk_enum [--instances N] [--linger MS]\n");
         return 1;
      }
   }

   for (uint64_t i = 0; i < instances; i++)
      enumerate();
   if (linger_ms) {
      double before = cpu_ms();
      const struct timespec ts = {(time_t)(linger_ms / 1000), (long)(linger_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
      printf("linger cpu: %.0f ms\n", cpu_ms() - before);
   }
   return 0;
}
