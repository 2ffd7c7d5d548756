/* SPDX-License-Identifier: MIT */
/*
 * Validation.  A host driver trusts the application: an out-of-range copy,
 * a dispatch with no pipeline bound or a submit of a command buffer whose
 * memory is gone is undefined behaviour, and where the host device is a CPU
 * (lavapipe) that behaviour happens inside the daemon.  In validation mode
 * the daemon reaches the host driver through the Vulkan loader with the
 * Khronos validation layer enabled on every client's host instance; when
 * the layer reports an error, its messenger returns VK_TRUE, so the layer
 * does not pass the call on, and the client that made it is disconnected
 * with the rule it broke in the log.
 */
#include "gpud.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static __thread struct gpud_call *current_call;

void
gpud_validate_set_call(struct gpud_call *call)
{
   current_call = call;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
           VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   if (!(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ||
       !(types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT))
      return VK_FALSE;
   const char *id = data->pMessageIdName ? data->pMessageIdName : "validation error";
   struct gpud_call *call = current_call;
   if (!call) {
      util_warn("validation: %s", data->pMessage ? data->pMessage : id);
      return VK_TRUE;
   }
   gpud_client_log(call->client, UTIL_LOG_WARNING, "validation: %s",
                   data->pMessage ? data->pMessage : id);
   if (!call->dec.fatal) {
      snprintf(call->validation_error, sizeof(call->validation_error),
               "breaks %s (the host driver would not survive it)", id);
      gpud_call_fail(call, call->validation_error);
   }
   return VK_TRUE; /* the layer does not pass the call on */
}

int
gpud_host_enable_validation(struct gpud_host *host, bool required)
{
   /* The loader sees the host driver and nothing else: never the gpud ICD,
    * no implicit layers. */
   setenv("VK_DRIVER_FILES", host->manifest, 1);
   setenv("VK_ICD_FILENAMES", host->manifest, 1);
   unsetenv("VK_ADD_DRIVER_FILES");
   unsetenv("VK_INSTANCE_LAYERS");
   setenv("VK_LOADER_LAYERS_DISABLE", "~implicit~", 1);

   void *loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
   PFN_vkGetInstanceProcAddr gipa =
      loader ? (PFN_vkGetInstanceProcAddr)dlsym(loader, "vkGetInstanceProcAddr") : NULL;
   PFN_vkEnumerateInstanceLayerProperties layers =
      gipa ? (PFN_vkEnumerateInstanceLayerProperties)gipa(NULL,
                                                         "vkEnumerateInstanceLayerProperties")
           : NULL;
   bool found = false;
   uint32_t n = 0;
   if (layers && layers(&n, NULL) == VK_SUCCESS && n) {
      VkLayerProperties *props = calloc(n, sizeof(*props));
      if (props && layers(&n, props) >= 0) {
         for (uint32_t i = 0; i < n; i++)
            found |= !strcmp(props[i].layerName, VALIDATION_LAYER);
      }
      free(props);
   }
   if (!found) {
      if (loader)
         dlclose(loader);
      if (required) {
         util_err("validation needs the Vulkan loader and %s (Debian: vulkan-validationlayers)",
                  VALIDATION_LAYER);
         return -ENOENT;
      }
      util_warn("no %s: clients' calls reach the host driver unvalidated", VALIDATION_LAYER);
      return 0;
   }
   host->loader = loader;
   host->get_instance_proc_addr = gipa;
   host->validate = true;
   util_notice("validating every call with %s before the host driver sees it",
               VALIDATION_LAYER);
   return 0;
}

void
gpud_validate_instance_info(struct gpud_call *call, VkInstanceCreateInfo *ci,
                            VkDebugUtilsMessengerCreateInfoEXT *messenger)
{
   static const char *const layer_names[] = {VALIDATION_LAYER};
   static const char *const ext_names[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
   if (!call->client->daemon->host.validate)
      return;
   *messenger = (VkDebugUtilsMessengerCreateInfoEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .pNext = ci->pNext,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      .pfnUserCallback = on_message,
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
   struct gpud_host *host = &call->client->daemon->host;
   if (!host->validate)
      return;
   PFN_vkCreateDebugUtilsMessengerEXT create =
      (PFN_vkCreateDebugUtilsMessengerEXT)host->get_instance_proc_addr(
         instance, "vkCreateDebugUtilsMessengerEXT");
   const VkDebugUtilsMessengerCreateInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
      .pfnUserCallback = on_message,
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
