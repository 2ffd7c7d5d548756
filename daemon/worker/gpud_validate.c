/* SPDX-License-Identifier: MIT */
/*
 * Validation, a diagnostic (--validate): the worker reaches the host driver
 * through the Vulkan loader with the Khronos validation layer enabled on
 * the client's host instances.  Each message the layer reports about a
 * client's call goes to that client's debug messengers (as a DebugMessage
 * the ICD delivers) and to the log, with its VUID; the call goes on.  With
 * --validate=strict a call that breaks a rule is not passed on and its
 * client is disconnected.  The loader and the layer are found, for both
 * processes, by daemon_host_enable_validation (daemon_host.c).
 */
#include "gpud_call.h"
#include "gpud_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_control.h"

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
           VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   const struct daemon_host *host = user;
   const char *id = data->pMessageIdName ? data->pMessageIdName : "validation";
   const char *text = data->pMessage ? data->pMessage : id;
   bool error = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
   struct gpud_call *call = gpud_call_current();
   if (!call) {
      util_log(error ? UTIL_LOG_WARNING : UTIL_LOG_INFO, "validation: %s", text);
      return VK_FALSE;
   }
   gpud_context_log(call->ctx, error ? UTIL_LOG_WARNING : UTIL_LOG_INFO, "validation: %s",
                    text);
   gpud_context_debug_message(call->ctx, severity, types, data->pMessageIdName,
                              data->messageIdNumber, data->pMessage);
   if (host->validate != DAEMON_VALIDATE_STRICT || !error ||
       !(types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT))
      return VK_FALSE;
   if (!call->dec.fatal) {
      snprintf(call->validation_error, sizeof(call->validation_error),
               "breaks %s (--validate=strict)", id);
      gpud_call_fail(call, call->validation_error);
   }
   return VK_TRUE; /* the layer does not pass the call on */
}

static const VkDebugUtilsMessageSeverityFlagsEXT reported_severities =
   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
static const VkDebugUtilsMessageTypeFlagsEXT reported_types =
   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;

void
gpud_validate_instance_info(struct gpud_call *call, VkInstanceCreateInfo *ci,
                            VkDebugUtilsMessengerCreateInfoEXT *messenger)
{
   static const char *const layer_names[] = {DAEMON_VALIDATION_LAYER};
   static const char *const ext_names[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
   const struct daemon_host *host = call->ctx->host;
   if (host->validate == DAEMON_VALIDATE_OFF)
      return;
   *messenger = (VkDebugUtilsMessengerCreateInfoEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .pNext = ci->pNext,
      .messageSeverity = reported_severities,
      .messageType = reported_types,
      .pfnUserCallback = on_message,
      .pUserData = (void *)host,
   };
   ci->pNext = messenger;
   ci->enabledLayerCount = 1;
   ci->ppEnabledLayerNames = layer_names;
   ci->enabledExtensionCount = 1;
   ci->ppEnabledExtensionNames = ext_names;
}

void
gpud_validate_instance_created(struct gpud_call *call, VkInstance instance)
{
   const struct daemon_host *host = call->ctx->host;
   if (host->validate == DAEMON_VALIDATE_OFF)
      return;
   PFN_vkCreateDebugUtilsMessengerEXT create =
      (PFN_vkCreateDebugUtilsMessengerEXT)host->get_instance_proc_addr(
         instance, "vkCreateDebugUtilsMessengerEXT");
   const VkDebugUtilsMessengerCreateInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = reported_severities,
      .messageType = reported_types,
      .pfnUserCallback = on_message,
      .pUserData = (void *)host,
   };
   if (!create || create(instance, &info, NULL, &call->new_messenger) != VK_SUCCESS)
      call->new_messenger = VK_NULL_HANDLE;
}

void
gpud_validate_instance_destroy(struct gpud_object *instance)
{
   if (!instance->messenger)
      return;
   PFN_vkDestroyDebugUtilsMessengerEXT destroy =
      (PFN_vkDestroyDebugUtilsMessengerEXT)instance->disp->GetInstanceProcAddr(
         (VkInstance)(uintptr_t)instance->handle, "vkDestroyDebugUtilsMessengerEXT");
   if (destroy)
      destroy((VkInstance)(uintptr_t)instance->handle, instance->messenger, NULL);
   instance->messenger = VK_NULL_HANDLE;
}
