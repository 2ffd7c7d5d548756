/* SPDX-License-Identifier: MIT */
/*
 * The host driver: loaded straight from its ICD manifest (the daemon is its
 * own loader, so it can never pick up the gpud ICD by accident), and the one
 * host device the daemon serves.
 */
#include "gpud_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpud_gen.h"
#include "util_log.h"
#include "util_macros.h"
#include "util_memfd.h"

typedef VkResult(VKAPI_PTR *PFN_negotiate)(uint32_t *version);

static char *
read_file(const char *path)
{
   FILE *f = fopen(path, "re");
   if (!f)
      return NULL;
   char *buf = NULL;
   size_t size = 0, cap = 0;
   for (;;) {
      if (cap - size < 4096) {
         if (cap > (1u << 20))
            break; /* no manifest is this big */
         cap = cap ? cap * 2 : 8192;
         char *n = realloc(buf, cap);
         if (!n)
            break;
         buf = n;
      }
      size_t r = fread(buf + size, 1, cap - size - 1, f);
      if (r == 0)
         break;
      size += r;
   }
   fclose(f);
   if (buf)
      buf[size] = '\0';
   return buf;
}

/* Extracts the string value of "key" from a JSON manifest.  Manifests are
 * small and flat where it matters; escapes are handled, \u only for ASCII. */
static char *
json_string(const char *json, const char *key)
{
   char pattern[64];
   snprintf(pattern, sizeof(pattern), "\"%s\"", key);
   const char *p = strstr(json, pattern);
   if (!p)
      return NULL;
   p += strlen(pattern);
   while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
      p++;
   if (*p++ != ':')
      return NULL;
   while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
      p++;
   if (*p++ != '"')
      return NULL;
   char *out = malloc(strlen(p) + 1);
   if (!out)
      return NULL;
   size_t n = 0;
   for (; *p && *p != '"'; p++) {
      if (*p != '\\') {
         out[n++] = *p;
         continue;
      }
      p++;
      switch (*p) {
      case 'n': out[n++] = '\n'; break;
      case 't': out[n++] = '\t'; break;
      case 'u': {
         unsigned v = 0;
         if (sscanf(p + 1, "%4x", &v) != 1 || v > 0x7f) {
            free(out);
            return NULL;
         }
         out[n++] = (char)v;
         p += 4;
         break;
      }
      case '\0':
         free(out);
         return NULL;
      default: out[n++] = *p; break;
      }
   }
   if (*p != '"') {
      free(out);
      return NULL;
   }
   out[n] = '\0';
   return out;
}

static char *
manifest_library(const char *manifest)
{
   char *json = read_file(manifest);
   if (!json)
      return NULL;
   char *lib = json_string(json, "library_path");
   free(json);
   if (!lib || lib[0] == '/' || !strchr(lib, '/'))
      return lib;
   /* relative to the manifest's folder */
   char *copy = strdup(manifest);
   char *path = NULL;
   if (copy && asprintf(&path, "%s/%s", dirname(copy), lib) < 0)
      path = NULL;
   free(copy);
   free(lib);
   return path;
}

static bool
is_gpud_library(const char *lib)
{
   return strstr(lib, "vulkan_gpud") != NULL;
}

static int
open_library(struct gpud_host *host, const char *manifest)
{
   char *lib = manifest_library(manifest);
   if (!lib) {
      util_err("host driver manifest %s: cannot read its library_path", manifest);
      return -EINVAL;
   }
   if (is_gpud_library(lib)) {
      util_err("host driver manifest %s names the gpud ICD itself; refusing to recurse",
               manifest);
      free(lib);
      return -ELOOP;
   }
   host->library = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
   if (!host->library) {
      util_err("cannot load host driver %s: %s", lib, dlerror());
      free(lib);
      return -ENOENT;
   }
   free(lib);

   PFN_negotiate negotiate =
      (PFN_negotiate)dlsym(host->library, "vk_icdNegotiateLoaderICDInterfaceVersion");
   if (negotiate) {
      /* Offer the newest interface the daemon can act as a loader for; it
       * calls the driver straight through vk_icdGetInstanceProcAddr. */
      uint32_t version = 7;
      VkResult r = negotiate(&version);
      if (r != VK_SUCCESS || version < 5) {
         util_err("host driver %s: loader interface negotiation failed (%d, version %u)",
                  manifest, r, version);
         return -EINVAL;
      }
      util_debug("host driver %s speaks loader interface %u", manifest, version);
   }
   host->get_instance_proc_addr =
      (PFN_vkGetInstanceProcAddr)dlsym(host->library, "vk_icdGetInstanceProcAddr");
   if (!host->get_instance_proc_addr)
      host->get_instance_proc_addr =
         (PFN_vkGetInstanceProcAddr)dlsym(host->library, "vkGetInstanceProcAddr");
   if (!host->get_instance_proc_addr) {
      util_err("host driver %s exports no vk_icdGetInstanceProcAddr", manifest);
      return -EINVAL;
   }
   return 0;
}

static VkResult
create_probe_instance(struct gpud_host *host, VkInstance *ret)
{
   VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "gpud",
      .apiVersion = VK_API_VERSION_1_3,
   };
   VkInstanceCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
   };
   PFN_vkCreateInstance create =
      (PFN_vkCreateInstance)host->get_instance_proc_addr(NULL, "vkCreateInstance");
   if (!create)
      return VK_ERROR_INITIALIZATION_FAILED;
   VkResult r = create(&ci, NULL, ret);
   return r;
}

/* Measures which memory types a memfd mapping can be imported into. */
static void
probe_import(struct gpud_host *host, struct gpud_host_dispatch *d, VkPhysicalDevice pdev)
{
   uint32_t n = 0;
   d->EnumerateDeviceExtensionProperties(pdev, NULL, &n, NULL);
   VkExtensionProperties *exts = calloc(n ? n : 1, sizeof(*exts));
   if (!exts)
      return;
   d->EnumerateDeviceExtensionProperties(pdev, NULL, &n, exts);
   for (uint32_t i = 0; i < n; i++)
      host->has_external_memory_host |=
         !strcmp(exts[i].extensionName, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
   free(exts);
   if (!host->has_external_memory_host)
      return;

   VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
   };
   VkPhysicalDeviceProperties2 p2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &hp,
   };
   d->GetPhysicalDeviceProperties2(pdev, &p2);
   host->import_alignment = hp.minImportedHostPointerAlignment ? hp.minImportedHostPointerAlignment
                                                               : 4096;
   if (host->import_alignment < (VkDeviceSize)sysconf(_SC_PAGESIZE))
      host->import_alignment = (VkDeviceSize)sysconf(_SC_PAGESIZE);

   float prio = 1.0f;
   VkDeviceQueueCreateInfo q = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueCount = 1,
      .pQueuePriorities = &prio,
   };
   const char *ext = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
   VkDeviceCreateInfo dci = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &q,
      .enabledExtensionCount = 1,
      .ppEnabledExtensionNames = &ext,
   };
   VkDevice dev;
   if (d->CreateDevice(pdev, &dci, NULL, &dev) != VK_SUCCESS)
      return;
   PFN_vkGetMemoryHostPointerPropertiesEXT get_props =
      (PFN_vkGetMemoryHostPointerPropertiesEXT)d->GetDeviceProcAddr(
         dev, "vkGetMemoryHostPointerPropertiesEXT");
   PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)d->GetDeviceProcAddr(dev, "vkDestroyDevice");
   int fd = -1;
   if (get_props && util_memfd_create("gpud-probe", host->import_alignment, &fd) == 0) {
      void *map = mmap(NULL, host->import_alignment, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
         VkMemoryHostPointerPropertiesEXT props = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT,
         };
         if (get_props(dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, map,
                       &props) == VK_SUCCESS)
            host->importable_types = props.memoryTypeBits;
         munmap(map, host->import_alignment);
      }
      util_fd_close(&fd);
   }
   if (destroy)
      destroy(dev, NULL);
}

int
gpud_host_load(struct gpud_host *host, const char *manifest, const char *device_match)
{
   memset(host, 0, sizeof(*host));
   host->manifest = strdup(manifest);
   int r = open_library(host, manifest);
   if (r < 0)
      return r;

   PFN_vkEnumerateInstanceExtensionProperties enum_exts =
      (PFN_vkEnumerateInstanceExtensionProperties)host->get_instance_proc_addr(
         NULL, "vkEnumerateInstanceExtensionProperties");
   uint32_t n_exts = 0;
   if (enum_exts && enum_exts(NULL, &n_exts, NULL) == VK_SUCCESS && n_exts) {
      VkExtensionProperties *exts = calloc(n_exts, sizeof(*exts));
      if (exts && enum_exts(NULL, &n_exts, exts) >= VK_SUCCESS) {
         for (uint32_t i = 0; i < n_exts; i++)
            host->has_debug_utils |=
               !strcmp(exts[i].extensionName, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      }
      free(exts);
   }

   VkInstance instance;
   VkResult vr = create_probe_instance(host, &instance);
   if (vr != VK_SUCCESS) {
      util_err("host driver %s: vkCreateInstance failed (%d)", manifest, vr);
      return -ENODEV;
   }
   struct gpud_host_dispatch d = {.GetInstanceProcAddr = host->get_instance_proc_addr};
   gpud_host_dispatch_load_instance(&d, instance);

   uint32_t n = 0;
   d.EnumeratePhysicalDevices(instance, &n, NULL);
   VkPhysicalDevice *pdevs = calloc(n ? n : 1, sizeof(*pdevs));
   if (pdevs)
      d.EnumeratePhysicalDevices(instance, &n, pdevs);
   r = -ENODEV;
   for (uint32_t i = 0; pdevs && i < n; i++) {
      VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
      VkPhysicalDeviceProperties2 p2 = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
         .pNext = &id,
      };
      d.GetPhysicalDeviceProperties2(pdevs[i], &p2);
      if (device_match && !strstr(p2.properties.deviceName, device_match))
         continue;
      memcpy(host->device_uuid, id.deviceUUID, VK_UUID_SIZE);
      snprintf(host->device_name, sizeof(host->device_name), "%s", p2.properties.deviceName);
      host->device_type = p2.properties.deviceType;
      d.GetPhysicalDeviceMemoryProperties(pdevs[i], &host->memory);
      probe_import(host, &d, pdevs[i]);
      r = 0;
      break;
   }
   free(pdevs);
   /* The probe's instance stays: drivers set themselves up with a process's
    * first instance and tear down with its last, so a worker waiting for a
    * client keeps theirs set up (NVIDIA's takes tens of milliseconds). */
   if (r < 0) {
      d.DestroyInstance(instance, NULL);
   } else {
      host->warm_instance = instance;
      host->warm_destroy = d.DestroyInstance;
   }
   if (r < 0) {
      util_err("host driver %s: no device%s%s", manifest, device_match ? " matching " : "",
               device_match ? device_match : "");
      return r;
   }
   if (!host->has_external_memory_host)
      util_warn("host driver lacks VK_EXT_external_memory_host: no memory is host-visible "
                "to clients");
   return 0;
}

void
gpud_host_finish(struct gpud_host *host)
{
   /* The host driver stays loaded until exit: drivers keep threads and
    * atexit handlers of their own, and unloading one buys nothing. */
   if (host->warm_instance && host->warm_destroy)
      host->warm_destroy(host->warm_instance, NULL);
   free(host->manifest);
   memset(host, 0, sizeof(*host));
}

/* ---- choosing a host driver ------------------------------------------- */

static bool
manifest_has_gpu(const char *manifest)
{
   struct gpud_host probe = {0};
   if (open_library(&probe, manifest) < 0) {
      gpud_host_finish(&probe);
      return false;
   }
   bool gpu = false;
   VkInstance instance;
   if (create_probe_instance(&probe, &instance) == VK_SUCCESS) {
      struct gpud_host_dispatch d = {.GetInstanceProcAddr = probe.get_instance_proc_addr};
      gpud_host_dispatch_load_instance(&d, instance);
      uint32_t n = 0;
      d.EnumeratePhysicalDevices(instance, &n, NULL);
      VkPhysicalDevice pdevs[16];
      n = UTIL_MIN(n, 16u);
      if (n && d.EnumeratePhysicalDevices(instance, &n, pdevs) >= 0) {
         for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            d.GetPhysicalDeviceProperties(pdevs[i], &p);
            gpu |= p.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
         }
      }
      d.DestroyInstance(instance, NULL);
   }
   gpud_host_finish(&probe);
   return gpu;
}

char *
gpud_host_default_manifest(void)
{
   static const char *const dirs[] = {
      "/etc/vulkan/icd.d",
      "/usr/local/share/vulkan/icd.d",
      "/usr/share/vulkan/icd.d",
   };
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(dirs); i++) {
      DIR *d = opendir(dirs[i]);
      if (!d)
         continue;
      struct dirent *de;
      while ((de = readdir(d))) {
         size_t len = strlen(de->d_name);
         if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
         /* software drivers and gpud itself are never "the GPU's driver" */
         if (strstr(de->d_name, "lvp_") || strstr(de->d_name, "gpud"))
            continue;
         char *path = NULL;
         if (asprintf(&path, "%s/%s", dirs[i], de->d_name) < 0)
            continue;
         char *lib = manifest_library(path);
         bool skip = !lib || is_gpud_library(lib);
         free(lib);
         if (!skip && manifest_has_gpu(path)) {
            closedir(d);
            return path;
         }
         free(path);
      }
      closedir(d);
   }
   return strdup(GPUD_LAVAPIPE_MANIFEST);
}
