/* SPDX-License-Identifier: MIT */
/* Devices and queues: a queue handle is fetched once and kept. */
#include "icd.h"

static VkQueue
get_queue(VkDevice _device, uint32_t family, uint32_t index, VkDeviceQueueCreateFlags flags,
          const VkDeviceQueueInfo2 *info)
{
   struct icd_device *dev = (struct icd_device *)_device;
   pthread_mutex_lock(&dev->mutex);
   for (struct icd_queue *q = dev->queues; q; q = q->next) {
      if (q->family == family && q->index == index && q->flags == flags) {
         pthread_mutex_unlock(&dev->mutex);
         return (VkQueue)q;
      }
   }
   VkQueue queue = VK_NULL_HANDLE;
   if (info)
      icd_gen_vkGetDeviceQueue2(_device, info, &queue);
   else
      icd_gen_vkGetDeviceQueue(_device, family, index, &queue);
   if (queue) {
      struct icd_queue *q = (struct icd_queue *)queue;
      q->family = family;
      q->index = index;
      q->flags = flags;
      q->next = dev->queues;
      dev->queues = q;
   }
   pthread_mutex_unlock(&dev->mutex);
   return queue;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue(VkDevice device, uint32_t queueFamilyIndex, uint32_t queueIndex,
                     VkQueue *pQueue)
{
   *pQueue = get_queue(device, queueFamilyIndex, queueIndex, 0, NULL);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2 *pQueueInfo, VkQueue *pQueue)
{
   *pQueue = get_queue(device, pQueueInfo->queueFamilyIndex, pQueueInfo->queueIndex,
                       pQueueInfo->flags, pQueueInfo);
}
