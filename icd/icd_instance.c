/* SPDX-License-Identifier: MIT */
/*
 * The loader interface, instances and physical devices.  Each daemon the
 * ICD reaches is one VkPhysicalDevice; no daemon means no physical devices.
 */
#include "icd.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util_macros.h"
#include "util_outarray.h"
#include "util_trace.h"

/* The application's VkInstance id; each connection's host instance has an
 * id of its own (conn->instance_id). */
#define ICD_INSTANCE_ID 1

static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void
init_debug(void)
{
   util_trace_init("icd");
   const char *env = getenv("GPUD_DEBUG");
   if (!env)
      return;
   if (strstr(env, "wire"))
      icd_debug |= ICD_DEBUG_WIRE;
   if (strstr(env, "sync"))
      icd_debug |= ICD_DEBUG_SYNC;
   if (strstr(env, "init"))
      icd_debug |= ICD_DEBUG_INIT;
   if (strstr(env, "waits"))
      icd_debug |= ICD_DEBUG_WAITS;
   if (strstr(env, "uploads"))
      icd_debug |= ICD_DEBUG_UPLOADS;
   if (strstr(env, "all"))
      icd_debug = ~0u;
}

void *
icd_object_alloc(size_t size, struct icd_connection *conn, VkObjectType type,
                 bool dispatchable)
{
   struct icd_object *o = calloc(1, size);
   if (!o)
      return NULL;
   if (dispatchable)
      set_loader_magic_value(o);
   o->conn = conn;
   o->type = type;
   o->id = conn ? icd_connection_new_id(conn) : 0;
   return o;
}

void
icd_object_free(void *object)
{
   free(object);
}

struct icd_connection *
icd_connection_of(const void *dispatchable)
{
   return icd_object(dispatchable)->conn;
}

/* ---- loader interface --------------------------------------------------- */

UTIL_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *pSupportedVersion);
UTIL_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetInstanceProcAddr(VkInstance instance, const char *pName);
UTIL_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetPhysicalDeviceProcAddr(VkInstance instance, const char *pName);

VKAPI_ATTR VkResult VKAPI_CALL
vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *pSupportedVersion)
{
   if (*pSupportedVersion < 5)
      return VK_ERROR_INCOMPATIBLE_DRIVER;
   *pSupportedVersion = 5;
   return VK_SUCCESS;
}

static bool
is_global(const char *name)
{
   return !strcmp(name, "vkCreateInstance") ||
          !strcmp(name, "vkEnumerateInstanceExtensionProperties") ||
          !strcmp(name, "vkEnumerateInstanceLayerProperties") ||
          !strcmp(name, "vkEnumerateInstanceVersion") || !strcmp(name, "vkGetInstanceProcAddr");
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
icd_vkGetInstanceProcAddr(VkInstance instance, const char *pName)
{
   if (!pName)
      return NULL;
   const struct icd_entrypoint *e = icd_entrypoint_lookup(pName);
   if (!e) {
      icd_dbg(ICD_DEBUG_INIT, "no entrypoint %s", pName);
      return NULL;
   }
   if (!instance && !is_global(pName))
      return NULL;
   return e->func;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetInstanceProcAddr(VkInstance instance, const char *pName)
{
   return icd_vkGetInstanceProcAddr(instance, pName);
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetPhysicalDeviceProcAddr(VkInstance instance, const char *pName)
{
   if (!pName)
      return NULL;
   const struct icd_entrypoint *e = icd_entrypoint_lookup(pName);
   if (!e || e->level != ICD_LEVEL_PHYSICAL_DEVICE)
      return NULL;
   return e->func;
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
icd_vkGetDeviceProcAddr(VkDevice device, const char *pName)
{
   if (!pName)
      return NULL;
#ifdef GPUD_TEST_HOOKS
   /* (a build for tests: a system call in the worker, as code that took it
    * over would make one: daemon/worker/gpud_testhook.c) */
   if (!strcmp(pName, "vkTestSyscallGPUD"))
      return (PFN_vkVoidFunction)icd_gen_vkTestSyscallGPUD;
#endif
   const struct icd_entrypoint *e = icd_entrypoint_lookup(pName);
   if (!e || e->level != ICD_LEVEL_DEVICE)
      return NULL;
   return e->func;
}

/* ---- global commands ------------------------------------------------------ */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumerateInstanceVersion(uint32_t *pApiVersion)
{
   *pApiVersion = ICD_API_VERSION;
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumerateInstanceExtensionProperties(const char *pLayerName, uint32_t *pPropertyCount,
                                           VkExtensionProperties *pProperties)
{
   if (pLayerName)
      return VK_ERROR_LAYER_NOT_PRESENT;
   struct util_outarray out;
   util_outarray_init(&out, pProperties, pPropertyCount);
   for (unsigned i = 0; i < wire_extension_count; i++) {
      if (wire_extensions[i].device)
         continue;
      VkExtensionProperties *p = UTIL_OUTARRAY_NEXT(&out, VkExtensionProperties);
      if (!p)
         continue;
      memset(p, 0, sizeof(*p));
      snprintf(p->extensionName, sizeof(p->extensionName), "%s", wire_extensions[i].name);
      p->specVersion = wire_extensions[i].spec_version;
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumerateInstanceLayerProperties(uint32_t *pPropertyCount, VkLayerProperties *pProperties)
{
   *pPropertyCount = 0;
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumerateDeviceLayerProperties(VkPhysicalDevice physicalDevice, uint32_t *pPropertyCount,
                                     VkLayerProperties *pProperties)
{
   *pPropertyCount = 0;
   return VK_SUCCESS;
}

/* Creates this instance's host instance and physical device on one daemon. */
static VkResult
attach_daemon(struct icd_instance *instance, struct icd_connection *conn,
              const VkInstanceCreateInfo *ci)
{
   struct icd_object host_instance = {.id = icd_connection_new_id(conn)};
   conn->instance_id = host_instance.id;
   VkInstance tmp = (VkInstance)&host_instance;

   /* The daemon decides the host instance's layers and extensions. */
   VkInstanceCreateInfo filtered = *ci;
   filtered.pNext = NULL;
   filtered.enabledLayerCount = 0;
   filtered.ppEnabledLayerNames = NULL;
   filtered.enabledExtensionCount = 0;
   filtered.ppEnabledExtensionNames = NULL;

   struct icd_call call;
   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_vkCreateInstance, true, false);
   wire_enc_vkCreateInstance(e, &filtered, NULL, &tmp);
   VkResult result = icd_call_end(&call);
   VkResult ret = VK_ERROR_INITIALIZATION_FAILED;
   if (result == VK_SUCCESS) {
      wire_decreply_vkCreateInstance(&call.reply, &ret, &filtered, NULL, &tmp);
      result = icd_call_reply_done(&call);
   }
   if (result != VK_SUCCESS)
      return result;
   if (ret != VK_SUCCESS)
      return ret;

   struct icd_physical_device *pdev =
      icd_object_alloc(sizeof(*pdev), conn, VK_OBJECT_TYPE_PHYSICAL_DEVICE, true);
   if (!pdev)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   pdev->instance = instance;
   pthread_mutex_init(&pdev->wsi_mutex, NULL);

   uint32_t count = 1;
   VkPhysicalDevice handle = (VkPhysicalDevice)pdev;
   e = icd_call_begin(&call, conn, WIRE_OP_vkEnumeratePhysicalDevices, true, false);
   wire_enc_vkEnumeratePhysicalDevices(e, (VkInstance)&host_instance, &count, &handle);
   result = icd_call_end(&call);
   if (result == VK_SUCCESS) {
      wire_decreply_vkEnumeratePhysicalDevices(&call.reply, &ret, (VkInstance)&host_instance,
                                                &count, &handle);
      result = icd_call_reply_done(&call);
   }
   if (result == VK_SUCCESS && (ret != VK_SUCCESS || count != 1 || !handle))
      result = VK_ERROR_INITIALIZATION_FAILED;
   if (result != VK_SUCCESS) {
      pthread_mutex_destroy(&pdev->wsi_mutex);
      icd_object_free(pdev);
      return result;
   }
   instance->physical_devices[instance->n_physical_devices++] = pdev;
   return VK_SUCCESS;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateInstance(const VkInstanceCreateInfo *pCreateInfo,
                     const VkAllocationCallbacks *pAllocator, VkInstance *pInstance)
{
   pthread_once(&debug_once, init_debug);

   for (uint32_t i = 0; i < pCreateInfo->enabledExtensionCount; i++) {
      bool known = false;
      for (unsigned j = 0; j < wire_extension_count; j++)
         known |= !wire_extensions[j].device &&
                  !strcmp(wire_extensions[j].name, pCreateInfo->ppEnabledExtensionNames[i]);
      if (!known)
         return VK_ERROR_EXTENSION_NOT_PRESENT;
   }

   struct icd_instance *instance =
      icd_object_alloc(sizeof(*instance), NULL, VK_OBJECT_TYPE_INSTANCE, true);
   if (!instance)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   instance->base.id = ICD_INSTANCE_ID;
   instance->api_version = pCreateInfo->pApplicationInfo
                              ? pCreateInfo->pApplicationInfo->apiVersion
                              : VK_API_VERSION_1_0;

   pthread_mutex_init(&instance->messenger_mutex, NULL);
   pthread_mutex_init(&instance->filter_mutex, NULL);
   util_list_init(&instance->messengers);
   instance->in_create_or_destroy = true;
   if (icd_instance_add_create_messengers(instance, pCreateInfo) != VK_SUCCESS) {
      icd_instance_free_messengers(instance);
      icd_object_free(instance);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }

   char **paths = util_socket_paths();
   size_t n_paths = 0;
   for (char **p = paths; p && *p; p++)
      n_paths++;
   instance->physical_devices = calloc(n_paths ? n_paths : 1, sizeof(void *));
   struct icd_connection **conns = calloc(n_paths ? n_paths : 1, sizeof(*conns));
   if (!instance->physical_devices || !conns) {
      free(conns);
      free(instance->physical_devices);
      util_socket_paths_free(paths);
      icd_instance_free_messengers(instance);
      icd_object_free(instance);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   /* Every daemon is asked at once and has the same deadline: daemons that
    * do not answer cost the application one deadline in all. */
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   uint64_t deadline = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
                       icd_connect_timeout_ns();
   bool *reused = calloc(n_paths ? n_paths : 1, sizeof(*reused));
   for (size_t i = 0; i < n_paths && reused; i++) {
      /* the connection of an instance this process had: its worker and the
       * host driver are ready */
      conns[i] = icd_connection_unpark(paths[i]);
      reused[i] = conns[i] != NULL;
      if (!conns[i] && icd_connection_begin(paths[i], deadline, &conns[i]) < 0)
         conns[i] = NULL;
   }
   for (size_t i = 0; i < n_paths && reused; i++) {
      if (!conns[i])
         continue;
      if (!reused[i] && icd_connection_complete(conns[i], deadline) < 0) {
         icd_connection_destroy(conns[i]);
         continue;
      }
      conns[i]->instance = instance;
      VkResult r = attach_daemon(instance, conns[i], pCreateInfo);
      if (r != VK_SUCCESS) {
         icd_dbg(ICD_DEBUG_INIT, "daemon at %s: instance creation failed (%d)", paths[i], r);
         icd_connection_destroy(conns[i]);
      }
   }
   free(reused);
   free(conns);
   util_socket_paths_free(paths);
   icd_dbg(ICD_DEBUG_INIT, "%u physical device(s)", instance->n_physical_devices);
   instance->in_create_or_destroy = false;
   icd_instance_update_message_filter(instance);
   *pInstance = (VkInstance)instance;
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyInstance(VkInstance _instance, const VkAllocationCallbacks *pAllocator)
{
   struct icd_instance *instance = icd_instance_from_handle(_instance);
   if (!instance)
      return;
   instance->in_create_or_destroy = true;
   for (uint32_t i = 0; i < instance->n_physical_devices; i++) {
      struct icd_physical_device *pdev = instance->physical_devices[i];
      struct icd_connection *conn = pdev->base.conn;
      struct icd_object host_instance = {.id = conn->instance_id};
      struct icd_call call;
      struct wire_enc *e =
         icd_call_begin(&call, conn, WIRE_OP_vkDestroyInstance, false, false);
      wire_enc_vkDestroyInstance(e, (VkInstance)&host_instance, NULL);
      icd_call_end(&call);
      icd_connection_park(conn);
      icd_physical_device_free_wsi(pdev);
      pthread_mutex_destroy(&pdev->wsi_mutex);
      icd_object_free(pdev);
   }
   free(instance->physical_devices);
   icd_instance_free_messengers(instance);
   pthread_mutex_destroy(&instance->messenger_mutex);
   pthread_mutex_destroy(&instance->filter_mutex);
   icd_object_free(instance);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumeratePhysicalDevices(VkInstance _instance, uint32_t *pPhysicalDeviceCount,
                               VkPhysicalDevice *pPhysicalDevices)
{
   struct icd_instance *instance = icd_instance_from_handle(_instance);
   struct util_outarray out;
   util_outarray_init(&out, pPhysicalDevices, pPhysicalDeviceCount);
   for (uint32_t i = 0; i < instance->n_physical_devices; i++) {
      VkPhysicalDevice *p = UTIL_OUTARRAY_NEXT(&out, VkPhysicalDevice);
      if (p)
         *p = (VkPhysicalDevice)instance->physical_devices[i];
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkEnumeratePhysicalDeviceGroups(VkInstance _instance, uint32_t *pCount,
                                    VkPhysicalDeviceGroupProperties *pProps)
{
   struct icd_instance *instance = icd_instance_from_handle(_instance);
   struct util_outarray out;
   util_outarray_init(&out, pProps, pCount);
   for (uint32_t i = 0; i < instance->n_physical_devices; i++) {
      VkPhysicalDeviceGroupProperties *p = UTIL_OUTARRAY_NEXT(&out, VkPhysicalDeviceGroupProperties);
      if (!p)
         continue;
      /* (sType and pNext are the application's) */
      p->physicalDeviceCount = 1;
      memset(p->physicalDevices, 0, sizeof(p->physicalDevices));
      p->physicalDevices[0] = (VkPhysicalDevice)instance->physical_devices[i];
      p->subsetAllocation = VK_FALSE;
   }
   return util_outarray_done(&out) ? VK_SUCCESS : VK_INCOMPLETE;
}
