/* SPDX-License-Identifier: MIT */
/*
 * VK_EXT_debug_utils and VK_EXT_debug_report in the ICD.  Messengers and
 * report callbacks call back into the application, so they live here; the
 * daemon sends what it has to say about a client (validation messages with
 * --validate, faults) as DebugMessage control messages, which the
 * connection hands to its instance's messengers and callbacks.  Object
 * names, tags and labels go to the daemon (gpudctl shows names; the host
 * driver gets them where it has the extension); VK_EXT_debug_marker is
 * turned into them here.
 */
#include "icd.h"

#include <stdlib.h>
#include <string.h>

/* A debug utils messenger, or a debug report callback (report set). */
struct icd_messenger {
   struct util_list link;
   VkDebugUtilsMessageSeverityFlagsEXT severities;
   VkDebugUtilsMessageTypeFlagsEXT types;
   PFN_vkDebugUtilsMessengerCallbackEXT callback;
   PFN_vkDebugReportCallbackEXT report;
   VkDebugReportFlagsEXT report_flags;
   void *user_data;
   bool create_only; /* from the VkInstanceCreateInfo chain */
};

static struct icd_messenger *
messenger_add(struct icd_instance *instance, struct icd_messenger *m)
{
   if (!m)
      return NULL;
   pthread_mutex_lock(&instance->messenger_mutex);
   util_list_add_tail(&instance->messengers, &m->link);
   pthread_mutex_unlock(&instance->messenger_mutex);
   return m;
}

static struct icd_messenger *
messenger_new(struct icd_instance *instance, const VkDebugUtilsMessengerCreateInfoEXT *info,
              bool create_only)
{
   struct icd_messenger *m = calloc(1, sizeof(*m));
   if (m) {
      m->severities = info->messageSeverity;
      m->types = info->messageType;
      m->callback = info->pfnUserCallback;
      m->user_data = info->pUserData;
      m->create_only = create_only;
   }
   return messenger_add(instance, m);
}

static struct icd_messenger *
report_callback_new(struct icd_instance *instance, const VkDebugReportCallbackCreateInfoEXT *info,
                    bool create_only)
{
   struct icd_messenger *m = calloc(1, sizeof(*m));
   if (m) {
      m->report = info->pfnCallback;
      m->report_flags = info->flags;
      m->user_data = info->pUserData;
      m->create_only = create_only;
   }
   return messenger_add(instance, m);
}

VkResult
icd_instance_add_create_messengers(struct icd_instance *instance,
                                   const VkInstanceCreateInfo *info)
{
   for (const VkBaseInStructure *c = info->pNext; c; c = c->pNext) {
      if (c->sType == VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT &&
          !messenger_new(instance, (const VkDebugUtilsMessengerCreateInfoEXT *)c, true))
         return VK_ERROR_OUT_OF_HOST_MEMORY;
      if (c->sType == VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT &&
          !report_callback_new(instance, (const VkDebugReportCallbackCreateInfoEXT *)c, true))
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

/* What a debug utils severity and type are to a report callback. */
static VkDebugReportFlagsEXT
report_flags(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types)
{
   switch (severity) {
   case VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT:
      return VK_DEBUG_REPORT_ERROR_BIT_EXT;
   case VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT:
      return (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)
                ? VK_DEBUG_REPORT_PERFORMANCE_WARNING_BIT_EXT
                : VK_DEBUG_REPORT_WARNING_BIT_EXT;
   case VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT:
      return VK_DEBUG_REPORT_INFORMATION_BIT_EXT;
   default:
      return VK_DEBUG_REPORT_DEBUG_BIT_EXT;
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
   VkDebugReportFlagsEXT flags = report_flags(severity, types);
   util_list_for_each(m, &instance->messengers, link) {
      if (m->create_only && !instance->in_create_or_destroy)
         continue;
      if ((m->severities & severity) && (m->types & types) && m->callback)
         m->callback(severity, types, data, m->user_data);
      if ((m->report_flags & flags) && m->report)
         m->report(flags, VK_DEBUG_REPORT_OBJECT_TYPE_UNKNOWN_EXT, 0, 0, data->messageIdNumber,
                   "gpud", data->pMessage, m->user_data);
   }
   pthread_mutex_unlock(&instance->messenger_mutex);
}

/* What a report callback's flags take, as severities and types. */
static void
report_takes(VkDebugReportFlagsEXT flags, uint32_t *severities, uint32_t *types)
{
   if (flags & VK_DEBUG_REPORT_ERROR_BIT_EXT)
      *severities |= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
   if (flags & (VK_DEBUG_REPORT_WARNING_BIT_EXT | VK_DEBUG_REPORT_PERFORMANCE_WARNING_BIT_EXT))
      *severities |= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
   if (flags & VK_DEBUG_REPORT_INFORMATION_BIT_EXT)
      *severities |= VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
   if (flags & VK_DEBUG_REPORT_DEBUG_BIT_EXT)
      *severities |= VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT;
   *types |= VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
             VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
             VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
}

void
icd_instance_update_message_filter(struct icd_instance *instance)
{
   uint32_t severities = 0, types = 0;
   pthread_mutex_lock(&instance->filter_mutex);
   pthread_mutex_lock(&instance->messenger_mutex);
   struct icd_messenger *m;
   util_list_for_each(m, &instance->messengers, link) {
      if (m->create_only)
         continue; /* nothing comes from the daemon during create or destroy */
      if (m->callback) {
         severities |= m->severities;
         types |= m->types;
      }
      if (m->report)
         report_takes(m->report_flags, &severities, &types);
   }
   bool same = instance->filter_sent && severities == instance->filter_severities &&
               types == instance->filter_types;
   instance->filter_sent = true;
   instance->filter_severities = severities;
   instance->filter_types = types;
   pthread_mutex_unlock(&instance->messenger_mutex);
   for (uint32_t i = 0; !same && i < instance->n_physical_devices; i++)
      icd_gen_vkSetMessageFilterGPUD((VkPhysicalDevice)instance->physical_devices[i], severities,
                                     types);
   pthread_mutex_unlock(&instance->filter_mutex);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDebugUtilsMessengerEXT(VkInstance _instance,
                                   const VkDebugUtilsMessengerCreateInfoEXT *pCreateInfo,
                                   const VkAllocationCallbacks *pAllocator,
                                   VkDebugUtilsMessengerEXT *pMessenger)
{
   struct icd_messenger *m = messenger_new(icd_instance_from_handle(_instance), pCreateInfo, false);
   if (!m)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   *pMessenger = (VkDebugUtilsMessengerEXT)(uintptr_t)m;
   icd_instance_update_message_filter(icd_instance_from_handle(_instance));
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDebugUtilsMessengerEXT(VkInstance _instance, VkDebugUtilsMessengerEXT messenger,
                                    const VkAllocationCallbacks *pAllocator)
{
   struct icd_instance *instance = icd_instance_from_handle(_instance);
   struct icd_messenger *m = icd_messenger_from_handle(messenger);
   if (!m)
      return;
   pthread_mutex_lock(&instance->messenger_mutex);
   util_list_remove(&m->link);
   pthread_mutex_unlock(&instance->messenger_mutex);
   icd_private_data_forget((uint64_t)(uintptr_t)m);
   free(m);
   if (!instance->in_create_or_destroy)
      icd_instance_update_message_filter(instance);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkSubmitDebugUtilsMessageEXT(VkInstance instance,
                                 VkDebugUtilsMessageSeverityFlagBitsEXT messageSeverity,
                                 VkDebugUtilsMessageTypeFlagsEXT messageTypes,
                                 const VkDebugUtilsMessengerCallbackDataEXT *pCallbackData)
{
   icd_instance_message(icd_instance_from_handle(instance), messageSeverity, messageTypes,
                        pCallbackData);
}

/* ---- VK_EXT_debug_report ------------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDebugReportCallbackEXT(VkInstance instance,
                                   const VkDebugReportCallbackCreateInfoEXT *pCreateInfo,
                                   const VkAllocationCallbacks *pAllocator,
                                   VkDebugReportCallbackEXT *pCallback)
{
   struct icd_messenger *m =
      report_callback_new(icd_instance_from_handle(instance), pCreateInfo, false);
   if (!m)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   *pCallback = (VkDebugReportCallbackEXT)(uintptr_t)m;
   icd_instance_update_message_filter(icd_instance_from_handle(instance));
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDebugReportCallbackEXT(VkInstance instance, VkDebugReportCallbackEXT callback,
                                    const VkAllocationCallbacks *pAllocator)
{
   icd_vkDestroyDebugUtilsMessengerEXT(instance, (VkDebugUtilsMessengerEXT)(uintptr_t)callback,
                                       pAllocator);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDebugReportMessageEXT(VkInstance _instance, VkDebugReportFlagsEXT flags,
                            VkDebugReportObjectTypeEXT objectType, uint64_t object,
                            size_t location, int32_t messageCode, const char *pLayerPrefix,
                            const char *pMessage)
{
   struct icd_instance *instance = icd_instance_from_handle(_instance);
   pthread_mutex_lock(&instance->messenger_mutex);
   struct icd_messenger *m;
   util_list_for_each(m, &instance->messengers, link) {
      if (m->create_only && !instance->in_create_or_destroy)
         continue;
      if ((m->report_flags & flags) && m->report)
         m->report(flags, objectType, object, location, messageCode, pLayerPrefix, pMessage,
                   m->user_data);
   }
   pthread_mutex_unlock(&instance->messenger_mutex);
}

/* ---- names, tags and labels ----------------------------------------------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *pNameInfo)
{
   if (!icd_daemon_knows(pNameInfo->objectType, pNameInfo->objectHandle))
      return VK_SUCCESS;
   return icd_gen_vkSetDebugUtilsObjectNameEXT(device, pNameInfo);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetDebugUtilsObjectTagEXT(VkDevice device, const VkDebugUtilsObjectTagInfoEXT *pTagInfo)
{
   if (!icd_daemon_knows(pTagInfo->objectType, pTagInfo->objectHandle))
      return VK_SUCCESS;
   return icd_gen_vkSetDebugUtilsObjectTagEXT(device, pTagInfo);
}

/* VK_EXT_debug_marker's object types are VkObjectType's by other numbers. */
static VkObjectType
object_type(VkDebugReportObjectTypeEXT type)
{
   switch (type) {
   case VK_DEBUG_REPORT_OBJECT_TYPE_SURFACE_KHR_EXT:
      return VK_OBJECT_TYPE_SURFACE_KHR;
   case VK_DEBUG_REPORT_OBJECT_TYPE_SWAPCHAIN_KHR_EXT:
      return VK_OBJECT_TYPE_SWAPCHAIN_KHR;
   case VK_DEBUG_REPORT_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT_EXT:
      return VK_OBJECT_TYPE_DEBUG_REPORT_CALLBACK_EXT;
   case VK_DEBUG_REPORT_OBJECT_TYPE_DISPLAY_KHR_EXT:
      return VK_OBJECT_TYPE_DISPLAY_KHR;
   case VK_DEBUG_REPORT_OBJECT_TYPE_DISPLAY_MODE_KHR_EXT:
      return VK_OBJECT_TYPE_DISPLAY_MODE_KHR;
   case VK_DEBUG_REPORT_OBJECT_TYPE_VALIDATION_CACHE_EXT_EXT:
      return VK_OBJECT_TYPE_VALIDATION_CACHE_EXT;
   default:
      /* the core types and later extensions' share their numbers */
      return (VkObjectType)type;
   }
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkDebugMarkerSetObjectNameEXT(VkDevice device, const VkDebugMarkerObjectNameInfoEXT *pNameInfo)
{
   const VkDebugUtilsObjectNameInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
      .objectType = object_type(pNameInfo->objectType),
      .objectHandle = pNameInfo->object,
      .pObjectName = pNameInfo->pObjectName,
   };
   return icd_vkSetDebugUtilsObjectNameEXT(device, &info);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkDebugMarkerSetObjectTagEXT(VkDevice device, const VkDebugMarkerObjectTagInfoEXT *pTagInfo)
{
   const VkDebugUtilsObjectTagInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_TAG_INFO_EXT,
      .objectType = object_type(pTagInfo->objectType),
      .objectHandle = pTagInfo->object,
      .tagName = pTagInfo->tagName,
      .tagSize = pTagInfo->tagSize,
      .pTag = pTagInfo->pTag,
   };
   return icd_vkSetDebugUtilsObjectTagEXT(device, &info);
}

static VkDebugUtilsLabelEXT
label_of(const VkDebugMarkerMarkerInfoEXT *marker)
{
   VkDebugUtilsLabelEXT label = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
      .pLabelName = marker->pMarkerName,
   };
   memcpy(label.color, marker->color, sizeof(label.color));
   return label;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdDebugMarkerBeginEXT(VkCommandBuffer commandBuffer,
                             const VkDebugMarkerMarkerInfoEXT *pMarkerInfo)
{
   const VkDebugUtilsLabelEXT label = label_of(pMarkerInfo);
   icd_vkCmdBeginDebugUtilsLabelEXT(commandBuffer, &label);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdDebugMarkerEndEXT(VkCommandBuffer commandBuffer)
{
   icd_vkCmdEndDebugUtilsLabelEXT(commandBuffer);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdDebugMarkerInsertEXT(VkCommandBuffer commandBuffer,
                              const VkDebugMarkerMarkerInfoEXT *pMarkerInfo)
{
   const VkDebugUtilsLabelEXT label = label_of(pMarkerInfo);
   icd_vkCmdInsertDebugUtilsLabelEXT(commandBuffer, &label);
}
