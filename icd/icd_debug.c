/* SPDX-License-Identifier: MIT */
/*
 * VK_EXT_debug_utils in the ICD.  Messengers call back into the
 * application, so they live here; the daemon sends what it has to say about
 * a client (validation messages with --validate, faults) as DebugMessage
 * control messages, which the connection hands to its instance's
 * messengers.  Object names, tags and labels are accepted and, for now,
 * kept nowhere: they change nothing the device does.
 */
#include "icd.h"

#include <stdlib.h>
#include <string.h>

struct icd_messenger {
   struct util_list link;
   VkDebugUtilsMessageSeverityFlagsEXT severities;
   VkDebugUtilsMessageTypeFlagsEXT types;
   PFN_vkDebugUtilsMessengerCallbackEXT callback;
   void *user_data;
   bool create_only; /* from the VkInstanceCreateInfo chain */
};

static struct icd_messenger *
messenger_new(struct icd_instance *instance, const VkDebugUtilsMessengerCreateInfoEXT *info,
              bool create_only)
{
   struct icd_messenger *m = calloc(1, sizeof(*m));
   if (!m)
      return NULL;
   m->severities = info->messageSeverity;
   m->types = info->messageType;
   m->callback = info->pfnUserCallback;
   m->user_data = info->pUserData;
   m->create_only = create_only;
   pthread_mutex_lock(&instance->messenger_mutex);
   util_list_add_tail(&instance->messengers, &m->link);
   pthread_mutex_unlock(&instance->messenger_mutex);
   return m;
}

VkResult
icd_instance_add_create_messengers(struct icd_instance *instance,
                                   const VkInstanceCreateInfo *info)
{
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType != VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT)
         continue;
      if (!messenger_new(instance, (const VkDebugUtilsMessengerCreateInfoEXT *)c, true))
         return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   return VK_SUCCESS;
}

void
icd_instance_free_messengers(struct icd_instance *instance)
{
   struct icd_messenger *m;
   util_list_for_each_safe(m, &instance->messengers, link) {
      util_list_remove(&m->link);
      free(m);
   }
}

void
icd_instance_message(struct icd_instance *instance,
                     VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                     VkDebugUtilsMessageTypeFlagsEXT types,
                     const VkDebugUtilsMessengerCallbackDataEXT *data)
{
   /* Callbacks may not call Vulkan, so holding the lock is safe. */
   pthread_mutex_lock(&instance->messenger_mutex);
   struct icd_messenger *m;
   util_list_for_each(m, &instance->messengers, link) {
      if (m->create_only && !instance->in_create_or_destroy)
         continue;
      if ((m->severities & severity) && (m->types & types) && m->callback)
         m->callback(severity, types, data, m->user_data);
   }
   pthread_mutex_unlock(&instance->messenger_mutex);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDebugUtilsMessengerEXT(VkInstance _instance,
                                   const VkDebugUtilsMessengerCreateInfoEXT *pCreateInfo,
                                   const VkAllocationCallbacks *pAllocator,
                                   VkDebugUtilsMessengerEXT *pMessenger)
{
   struct icd_messenger *m = messenger_new((struct icd_instance *)_instance, pCreateInfo, false);
   if (!m)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   *pMessenger = (VkDebugUtilsMessengerEXT)(uintptr_t)m;
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDebugUtilsMessengerEXT(VkInstance _instance, VkDebugUtilsMessengerEXT messenger,
                                    const VkAllocationCallbacks *pAllocator)
{
   struct icd_instance *instance = (struct icd_instance *)_instance;
   struct icd_messenger *m = (struct icd_messenger *)(uintptr_t)messenger;
   if (!m)
      return;
   pthread_mutex_lock(&instance->messenger_mutex);
   util_list_remove(&m->link);
   pthread_mutex_unlock(&instance->messenger_mutex);
   free(m);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkSubmitDebugUtilsMessageEXT(VkInstance instance,
                                 VkDebugUtilsMessageSeverityFlagBitsEXT messageSeverity,
                                 VkDebugUtilsMessageTypeFlagsEXT messageTypes,
                                 const VkDebugUtilsMessengerCallbackDataEXT *pCallbackData)
{
   icd_instance_message((struct icd_instance *)instance, messageSeverity, messageTypes,
                        pCallbackData);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *pNameInfo)
{
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetDebugUtilsObjectTagEXT(VkDevice device, const VkDebugUtilsObjectTagInfoEXT *pTagInfo)
{
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkQueueBeginDebugUtilsLabelEXT(VkQueue queue, const VkDebugUtilsLabelEXT *pLabelInfo)
{
}

VKAPI_ATTR void VKAPI_CALL
icd_vkQueueEndDebugUtilsLabelEXT(VkQueue queue)
{
}

VKAPI_ATTR void VKAPI_CALL
icd_vkQueueInsertDebugUtilsLabelEXT(VkQueue queue, const VkDebugUtilsLabelEXT *pLabelInfo)
{
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdBeginDebugUtilsLabelEXT(VkCommandBuffer commandBuffer,
                                 const VkDebugUtilsLabelEXT *pLabelInfo)
{
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdEndDebugUtilsLabelEXT(VkCommandBuffer commandBuffer)
{
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdInsertDebugUtilsLabelEXT(VkCommandBuffer commandBuffer,
                                  const VkDebugUtilsLabelEXT *pLabelInfo)
{
}
