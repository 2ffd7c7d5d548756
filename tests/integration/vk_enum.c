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
 *   vk_enum [--instances N] [--linger MS] [--devices N]
 *
 * --instances N does it N times, an instance after another (programs that
 * look at the devices before they make their real instance); --linger MS
 * then waits MS milliseconds and prints "linger cpu: T ms", the CPU time
 * the process spent meanwhile (nothing of the driver's should run).
 * --devices N then makes a device of the first physical device N times,
 * a fence signalled by an empty submission on each, and destroys it;
 * "mappings: A B": the process's mappings after the first device and after
 * the last (what a driver keeps of a destroyed device shows there).
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

/* The process's memory mappings now. */
static unsigned
mappings(void)
{
   FILE *f = fopen("/proc/self/maps", "r");
   if (!f)
      vkt_fail("/proc/self/maps: cannot read it");
   unsigned n = 0;
   for (int c; (c = fgetc(f)) != EOF;)
      n += c == '\n';
   fclose(f);
   return n;
}

/* A device made, used and destroyed n times. */
static void
devices(uint64_t n)
{
   VkInstance instance = vkt_instance_create("vk_enum");
   uint32_t count = 1;
   VkPhysicalDevice pdev;
   VkResult r = vkEnumeratePhysicalDevices(instance, &count, &pdev);
   if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || !count)
      vkt_fail("--devices: no physical device (%s)", vkt_result_name(r));
   unsigned first = 0;
   for (uint64_t i = 0; i < n; i++) {
      const float priority = 1.0f;
      const VkDeviceQueueCreateInfo queue = {
         .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
         .queueFamilyIndex = 0,
         .queueCount = 1,
         .pQueuePriorities = &priority,
      };
      const VkDeviceCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
         .queueCreateInfoCount = 1,
         .pQueueCreateInfos = &queue,
      };
      VkDevice device;
      VKT_CHECK(vkCreateDevice(pdev, &info, NULL, &device));
      VkQueue q;
      vkGetDeviceQueue(device, 0, 0, &q);
      const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VkFence fence;
      VKT_CHECK(vkCreateFence(device, &fi, NULL, &fence));
      VKT_CHECK(vkQueueSubmit(q, 0, NULL, fence));
      VKT_CHECK(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX));
      vkDestroyFence(device, fence, NULL);
      vkDestroyDevice(device, NULL);
      if (!i)
         first = mappings();
   }
   printf("mappings: %u %u\n", first, mappings());
   vkDestroyInstance(instance, NULL);
}

int
main(int argc, char **argv)
{
   uint64_t instances = 1, linger_ms = 0, n_devices = 0;

   vkt_set_prog("vk_enum");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--instances") && i + 1 < argc) {
         instances = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--linger") && i + 1 < argc) {
         linger_ms = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--devices") && i + 1 < argc) {
         n_devices = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else {
         fprintf(stderr, "usage: vk_enum [--instances N] [--linger MS] [--devices N]\n");
         return 1;
      }
   }

   for (uint64_t i = 0; i < instances; i++)
      enumerate();
   if (n_devices)
      devices(n_devices);
   if (linger_ms) {
      double before = cpu_ms();
      const struct timespec ts = {(time_t)(linger_ms / 1000), (long)(linger_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
      printf("linger cpu: %.0f ms\n", cpu_ms() - before);
   }
   return 0;
}
