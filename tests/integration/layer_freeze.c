/* SPDX-License-Identifier: MIT */
/*
 * VK_LAYER_GPUD_freeze: a test layer that stops a program after its N-th
 * present (GPUD_FREEZE_AFTER=N), so that a screenshot can be taken of a
 * frame every run shows the same way, whatever the program (vkcube and
 * friends quit after their last frame and take their window along).
 *
 * After the N-th vkQueuePresentKHR returns, the layer waits for the queue,
 * lets the display server catch up (GPUD_FREEZE_SETTLE_MS, 300 by default),
 * prints "FROZEN" on stderr and sleeps until the program is killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL freeze_GetDeviceProcAddr(VkDevice device,
                                                                        const char *name);
EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL freeze_GetInstanceProcAddr(VkInstance instance,
                                                                          const char *name);

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetDeviceProcAddr next_gdpa;
static PFN_vkQueuePresentKHR next_present;
static PFN_vkQueueWaitIdle next_wait_idle;
static unsigned presents;

static VKAPI_ATTR VkResult VKAPI_CALL
freeze_QueuePresentKHR(VkQueue queue, const VkPresentInfoKHR *info)
{
   VkResult r = next_present(queue, info);
   const char *after = getenv("GPUD_FREEZE_AFTER");
   if (after && ++presents == (unsigned)strtoul(after, NULL, 10)) {
      next_wait_idle(queue);
      const char *settle = getenv("GPUD_FREEZE_SETTLE_MS");
      usleep((useconds_t)(settle ? strtoul(settle, NULL, 10) : 300) * 1000);
      fprintf(stderr, "FROZEN after %u presents (%d)\n", presents, r);
      fflush(stderr);
      for (;;)
         pause();
   }
   return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
freeze_CreateInstance(const VkInstanceCreateInfo *info, const VkAllocationCallbacks *alloc,
                      VkInstance *instance)
{
   VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)info->pNext;
   while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                    link->function == VK_LAYER_LINK_INFO))
      link = (VkLayerInstanceCreateInfo *)link->pNext;
   if (!link)
      return VK_ERROR_INITIALIZATION_FAILED;
   next_gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
   link->u.pLayerInfo = link->u.pLayerInfo->pNext;
   PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
   return create(info, alloc, instance);
}

static VKAPI_ATTR VkResult VKAPI_CALL
freeze_CreateDevice(VkPhysicalDevice pdev, const VkDeviceCreateInfo *info,
                    const VkAllocationCallbacks *alloc, VkDevice *device)
{
   VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)info->pNext;
   while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                    link->function == VK_LAYER_LINK_INFO))
      link = (VkLayerDeviceCreateInfo *)link->pNext;
   if (!link)
      return VK_ERROR_INITIALIZATION_FAILED;
   PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
   next_gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
   link->u.pLayerInfo = link->u.pLayerInfo->pNext;
   PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(NULL, "vkCreateDevice");
   VkResult r = create(pdev, info, alloc, device);
   if (r == VK_SUCCESS) {
      next_present = (PFN_vkQueuePresentKHR)next_gdpa(*device, "vkQueuePresentKHR");
      next_wait_idle = (PFN_vkQueueWaitIdle)next_gdpa(*device, "vkQueueWaitIdle");
   }
   return r;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
freeze_GetDeviceProcAddr(VkDevice device, const char *name)
{
   if (!strcmp(name, "vkQueuePresentKHR") && next_present)
      return (PFN_vkVoidFunction)freeze_QueuePresentKHR;
   if (!strcmp(name, "vkGetDeviceProcAddr"))
      return (PFN_vkVoidFunction)freeze_GetDeviceProcAddr;
   return next_gdpa ? next_gdpa(device, name) : NULL;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
freeze_GetInstanceProcAddr(VkInstance instance, const char *name)
{
   if (!strcmp(name, "vkCreateInstance"))
      return (PFN_vkVoidFunction)freeze_CreateInstance;
   if (!strcmp(name, "vkCreateDevice"))
      return (PFN_vkVoidFunction)freeze_CreateDevice;
   if (!strcmp(name, "vkGetInstanceProcAddr"))
      return (PFN_vkVoidFunction)freeze_GetInstanceProcAddr;
   if (!strcmp(name, "vkGetDeviceProcAddr"))
      return (PFN_vkVoidFunction)freeze_GetDeviceProcAddr;
   if (!strcmp(name, "vkQueuePresentKHR"))
      return (PFN_vkVoidFunction)freeze_QueuePresentKHR;
   return next_gipa ? next_gipa(instance, name) : NULL;
}
