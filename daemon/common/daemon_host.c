/* SPDX-License-Identifier: MIT */
/*
 * The host driver: loaded straight from its ICD manifest (the daemon is its
 * own loader, so it can never pick up the gpud ICD by accident), and the one
 * host device the daemon serves.
 */
#include "daemon_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpud_gen.h"
#include "util_dir.h"
#include "util_fd.h"
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
open_library(struct daemon_host *host, const char *manifest)
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
create_probe_instance(struct daemon_host *host, VkInstance *ret)
{
   VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "gpud",
      .apiVersion = WIRE_API_VERSION,
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
probe_import(struct daemon_host *host, struct gpud_host_dispatch *d, VkPhysicalDevice pdev)
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

/* ---- the host's devices ----------------------------------------------------- */

static bool
has_device_extension(const struct gpud_host_dispatch *d, VkPhysicalDevice pdev, const char *name)
{
   uint32_t n = 0;
   if (d->EnumerateDeviceExtensionProperties(pdev, NULL, &n, NULL) < 0 || !n)
      return false;
   VkExtensionProperties *exts = calloc(n, sizeof(*exts));
   bool found = false;
   if (exts && d->EnumerateDeviceExtensionProperties(pdev, NULL, &n, exts) >= 0) {
      for (uint32_t i = 0; i < n && !found; i++)
         found = !strcmp(exts[i].extensionName, name);
   }
   free(exts);
   return found;
}

/* What the selection needs to know of a device: name, UUID, and where the
 * host driver tells them, its PCI address and DRM device numbers. */
static void
describe_device(const struct gpud_host_dispatch *d, VkPhysicalDevice pdev,
                struct daemon_device_info *info)
{
   VkPhysicalDeviceDrmPropertiesEXT drm = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRM_PROPERTIES_EXT,
   };
   VkPhysicalDevicePCIBusInfoPropertiesEXT pci = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
   };
   VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
   VkPhysicalDeviceProperties2 p2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &id,
   };
   bool has_pci = has_device_extension(d, pdev, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
   bool has_drm = has_device_extension(d, pdev, VK_EXT_PHYSICAL_DEVICE_DRM_EXTENSION_NAME);
   if (has_pci) {
      pci.pNext = p2.pNext;
      p2.pNext = &pci;
   }
   if (has_drm) {
      drm.pNext = p2.pNext;
      p2.pNext = &drm;
   }
   d->GetPhysicalDeviceProperties2(pdev, &p2);
   memset(info, 0, sizeof(*info));
   snprintf(info->name, sizeof(info->name), "%s", p2.properties.deviceName);
   info->type = p2.properties.deviceType;
   info->vendor_id = p2.properties.vendorID;
   info->device_id = p2.properties.deviceID;
   memcpy(info->uuid, id.deviceUUID, VK_UUID_SIZE);
   if (has_pci) {
      info->has_pci = true;
      info->pci = (struct daemon_pci_address){
         .domain = pci.pciDomain,
         .bus = (uint8_t)pci.pciBus,
         .device = (uint8_t)pci.pciDevice,
         .function = (uint8_t)pci.pciFunction,
      };
   }
   if (has_drm && drm.hasRender) {
      info->has_render = true;
      info->render_major = (uint32_t)drm.renderMajor;
      info->render_minor = (uint32_t)drm.renderMinor;
   }
}

/* The instance's devices and their descriptions (both malloc'ed). */
static uint32_t
enumerate_devices(const struct gpud_host_dispatch *d, VkInstance instance,
                  VkPhysicalDevice **pdevs_out, struct daemon_device_info **infos_out)
{
   *pdevs_out = NULL;
   *infos_out = NULL;
   uint32_t n = 0;
   if (d->EnumeratePhysicalDevices(instance, &n, NULL) < 0 || !n)
      return 0;
   n = UTIL_MIN(n, 64u);
   VkPhysicalDevice *pdevs = calloc(n, sizeof(*pdevs));
   struct daemon_device_info *infos = calloc(n, sizeof(*infos));
   if (!pdevs || !infos || d->EnumeratePhysicalDevices(instance, &n, pdevs) < 0) {
      free(pdevs);
      free(infos);
      return 0;
   }
   for (uint32_t i = 0; i < n; i++)
      describe_device(d, pdevs[i], &infos[i]);
   *pdevs_out = pdevs;
   *infos_out = infos;
   return n;
}

/* The render nodes, or none with a warning: a device is still found by
 * anything but its render node. */
static size_t
find_render_nodes(const char *sysfs_root, struct daemon_render_node **nodes)
{
   size_t n = 0;
   int r = daemon_render_nodes(sysfs_root, nodes, &n);
   if (r < 0)
      util_warn("cannot list render nodes%s%s: %s", sysfs_root ? " in " : "",
                sysfs_root ? sysfs_root : "", strerror(-r));
   return n;
}

int
daemon_host_load(struct daemon_host *host, const char *manifest, const struct daemon_selector *sel,
               const char *sysfs_root)
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

   VkPhysicalDevice *pdevs;
   struct daemon_device_info *infos;
   uint32_t n = enumerate_devices(&d, instance, &pdevs, &infos);
   struct daemon_render_node *nodes = NULL;
   size_t n_nodes = find_render_nodes(sysfs_root, &nodes);
   unsigned matches = 0;
   char why[512];
   int i = daemon_select_device(sel, infos, n, nodes, n_nodes, &matches, why, sizeof(why));
   if (i >= 0) {
      const struct daemon_device_info *info = &infos[i];
      memcpy(host->device_uuid, info->uuid, VK_UUID_SIZE);
      snprintf(host->device_name, sizeof(host->device_name), "%s", info->name);
      host->device_type = info->type;
      host->has_pci = info->has_pci;
      host->pci = info->pci;
      const struct daemon_render_node *node = daemon_device_render_node(info, nodes, n_nodes);
      if (node)
         snprintf(host->render_node, sizeof(host->render_node), "%s", node->name);
      d.GetPhysicalDeviceMemoryProperties(pdevs[i], &host->memory);
      probe_import(host, &d, pdevs[i]);
      if (matches > 1) {
         char uuid[DAEMON_UUID_TEXT];
         daemon_uuid_format(info->uuid, uuid);
         util_notice("%u devices' names contain '%s': serving the first, uuid:%s (name "
                     "one by uuid:, pci: or index: to be sure)", matches, sel->name, uuid);
      }
   }
   free(nodes);
   free(infos);
   free(pdevs);
   /* The probe's instance stays: drivers set themselves up with a process's
    * first instance and tear down with its last, so a worker waiting for a
    * client keeps theirs set up (NVIDIA's takes tens of milliseconds). */
   if (i < 0) {
      d.DestroyInstance(instance, NULL);
      util_err("host driver %s: %s (gpud --list-devices shows what there is)", manifest, why);
      return -ENODEV;
   }
   host->warm_instance = instance;
   host->warm_destroy = d.DestroyInstance;
   if (!host->has_external_memory_host)
      util_warn("host driver lacks VK_EXT_external_memory_host: no memory is host-visible "
                "to clients");
   return 0;
}

void
daemon_host_finish(struct daemon_host *host)
{
   /* The host driver stays loaded until exit: drivers keep threads and
    * atexit handlers of their own, and unloading one buys nothing. */
   if (host->warm_instance && host->warm_destroy)
      host->warm_destroy(host->warm_instance, NULL);
   free(host->manifest);
   memset(host, 0, sizeof(*host));
}

/* ---- choosing a host driver ------------------------------------------- */

/* A driver's devices, seen through an instance of its own that is gone
 * again; 0 when it cannot be loaded. */
static uint32_t
probe_devices(const char *manifest, struct daemon_device_info **infos)
{
   *infos = NULL;
   struct daemon_host probe = {0};
   uint32_t n = 0;
   VkInstance instance;
   if (open_library(&probe, manifest) == 0 &&
       create_probe_instance(&probe, &instance) == VK_SUCCESS) {
      struct gpud_host_dispatch d = {.GetInstanceProcAddr = probe.get_instance_proc_addr};
      gpud_host_dispatch_load_instance(&d, instance);
      VkPhysicalDevice *pdevs;
      n = enumerate_devices(&d, instance, &pdevs, infos);
      free(pdevs);
      d.DestroyInstance(instance, NULL);
   }
   daemon_host_finish(&probe);
   return n;
}

/* Appends the manifests of one folder that a daemon could serve: gpud's own
 * never, lavapipe only with_software, a name found in an earlier folder
 * never again (it shadows this one, as for the loader). */
static void
add_manifests(char ***paths, size_t *n, const char *dir, bool with_software)
{
   size_t first = *n;
   util_paths_add_dir(paths, n, dir, ".json");
   size_t kept = first;
   for (size_t i = first; i < *n; i++) {
      char *path = (*paths)[i];
      const char *name = strrchr(path, '/') + 1;
      char *lib = manifest_library(path);
      bool skip = !lib || is_gpud_library(lib) || strstr(name, "gpud") ||
                  (!with_software && strstr(name, "lvp_"));
      free(lib);
      for (size_t j = 0; j < first && !skip; j++)
         skip = !strcmp(strrchr((*paths)[j], '/') + 1, name);
      if (skip)
         free(path);
      else
         (*paths)[kept++] = path;
   }
   *n = kept;
   if (*paths)
      (*paths)[kept] = NULL;
}

/* Every folder of a colon-separated list (or of fallback when it is unset
 * or empty), each with suffix. */
static void
add_manifest_dirs(char ***paths, size_t *n, const char *list, const char *fallback,
                  bool with_software)
{
   char *copy = strdup(list && *list ? list : fallback);
   char *save = NULL;
   for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
        dir = strtok_r(NULL, ":", &save)) {
      char *full = NULL;
      if (dir[0] == '/' && asprintf(&full, "%s/vulkan/icd.d", dir) >= 0)
         add_manifests(paths, n, full, with_software);
      free(full);
   }
   free(copy);
}

/* The ICD manifests a daemon could serve, where the Vulkan loader looks for
 * them (XDG_CONFIG_DIRS, /etc, XDG_DATA_DIRS; a name found earlier shadows
 * the same name later), never gpud's own; lavapipe only with_software. */
static char **
manifest_paths(bool with_software, size_t *count)
{
   char **paths = NULL;
   size_t n = 0;
   add_manifest_dirs(&paths, &n, getenv("XDG_CONFIG_DIRS"), "/etc/xdg", with_software);
   add_manifest_dirs(&paths, &n, "/etc", "/etc", with_software);
   add_manifest_dirs(&paths, &n, getenv("XDG_DATA_DIRS"), "/usr/local/share:/usr/share",
                     with_software);
   *count = n;
   return paths;
}

/* Whether the driver serves what sel asks for: with no selector, a device
 * other than a CPU (a software driver is never "the GPU's driver"). */
static bool
manifest_serves(const char *manifest, const struct daemon_selector *sel, const char *sysfs_root)
{
   struct daemon_device_info *infos;
   uint32_t n = probe_devices(manifest, &infos);
   bool serves = false;
   if (sel->by == DAEMON_SELECT_FIRST) {
      for (uint32_t i = 0; i < n; i++)
         serves |= infos[i].type != VK_PHYSICAL_DEVICE_TYPE_CPU;
   } else if (n) {
      struct daemon_render_node *nodes = NULL;
      size_t n_nodes = sel->by == DAEMON_SELECT_RENDER ? find_render_nodes(sysfs_root, &nodes) : 0;
      serves = daemon_select_device(sel, infos, n, nodes, n_nodes, NULL, NULL, 0) >= 0;
      free(nodes);
   }
   free(infos);
   return serves;
}

int
daemon_host_default_manifest(const struct daemon_selector *sel, const char *sysfs_root,
                           char **manifest)
{
   size_t n;
   /* a selector may name lavapipe's device too; without one, lavapipe is
    * only the fallback */
   char **paths = manifest_paths(sel->by != DAEMON_SELECT_FIRST, &n);
   char *chosen = NULL;
   for (size_t i = 0; i < n && !chosen; i++) {
      if (manifest_serves(paths[i], sel, sysfs_root) && !(chosen = strdup(paths[i]))) {
         util_paths_free(paths);
         return -ENOMEM;
      }
   }
   util_paths_free(paths);
   if (!chosen && sel->by != DAEMON_SELECT_FIRST) {
      char text[128];
      daemon_selector_format(sel, text, sizeof(text));
      util_err("no host driver has the device %s (gpud --list-devices shows what there is)",
               text);
      *manifest = NULL;
      return -ENODEV;
   }
   if (!chosen) {
      chosen = daemon_host_lavapipe_manifest();
      if (!chosen) {
         util_err("no host driver: neither a GPU's driver nor lavapipe is installed");
         *manifest = NULL;
         return -ENODEV;
      }
   }
   *manifest = chosen;
   return 0;
}

char *
daemon_host_lavapipe_manifest(void)
{
   if (GPUD_LAVAPIPE_MANIFEST[0])
      return strdup(GPUD_LAVAPIPE_MANIFEST);
   /* lavapipe's own manifest, wherever the loader would find it: Mesa 25
    * names it lvp_icd.json, Mesa 22 lvp_icd.ARCH.json (of this machine's
    * ARCH: a multiarch system has others) */
   struct utsname u;
   char arch_name[sizeof(u.machine) + 16] = "lvp_icd.json";
   if (uname(&u) == 0)
      snprintf(arch_name, sizeof(arch_name), "lvp_icd.%s.json", u.machine);
   size_t n;
   char **paths = manifest_paths(true, &n);
   char *found = NULL;
   for (int pass = 0; pass < 2 && !found; pass++) {
      for (size_t i = 0; i < n && !found; i++) {
         if (!strcmp(strrchr(paths[i], '/') + 1, pass ? arch_name : "lvp_icd.json"))
            found = strdup(paths[i]);
      }
   }
   util_paths_free(paths);
   return found;
}

static const char *
type_name(VkPhysicalDeviceType type)
{
   switch (type) {
   case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
   case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
   case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
   case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
   default: return "other";
   }
}

int
daemon_host_list_devices(FILE *f, const char *manifest, const char *sysfs_root)
{
   size_t n_paths = 0;
   char **paths = NULL;
   if (manifest) {
      if (util_paths_add(&paths, &n_paths, manifest) < 0) {
         util_paths_free(paths);
         return -ENOMEM;
      }
   } else {
      paths = manifest_paths(true, &n_paths);
   }
   struct daemon_render_node *nodes = NULL;
   size_t n_nodes = find_render_nodes(sysfs_root, &nodes);
   bool *served = calloc(n_nodes ? n_nodes : 1, sizeof(*served));
   unsigned total = 0;
   for (size_t p = 0; p < n_paths; p++) {
      struct daemon_device_info *infos;
      uint32_t n = probe_devices(paths[p], &infos);
      fprintf(f, "%s%s\n", paths[p], n ? ":" : ": no device here");
      for (uint32_t i = 0; i < n; i++) {
         const struct daemon_device_info *info = &infos[i];
         char uuid[DAEMON_UUID_TEXT], pci[DAEMON_PCI_TEXT] = "-";
         daemon_uuid_format(info->uuid, uuid);
         if (info->has_pci)
            daemon_pci_format(&info->pci, pci);
         const struct daemon_render_node *node = daemon_device_render_node(info, nodes, n_nodes);
         if (node && served)
            served[node - nodes] = true;
         fprintf(f, "  index:%u  %s (%s, %04x:%04x)\n", i, info->name, type_name(info->type),
                 info->vendor_id, info->device_id);
         fprintf(f, "           uuid:%s  pci:%s  render:%s\n", uuid, pci,
                 node ? node->name : "-");
      }
      total += n;
      free(infos);
   }
   fprintf(f, "render nodes (%s%s):%s\n", sysfs_root ? "sysfs tree " : "libdrm",
           sysfs_root ? sysfs_root : "", n_nodes ? "" : " none");
   for (size_t i = 0; i < n_nodes; i++) {
      char pci[DAEMON_PCI_TEXT] = "-";
      if (nodes[i].has_pci)
         daemon_pci_format(&nodes[i].pci, pci);
      fprintf(f, "  %s  %u:%u  pci:%s  %04x:%04x  %s%s\n", nodes[i].name, nodes[i].major,
              nodes[i].minor, pci, nodes[i].vendor_id, nodes[i].device_id,
              nodes[i].driver[0] ? nodes[i].driver : "?",
              served && served[i] ? "" : "  (no listed driver's device)");
   }
   free(served);
   free(nodes);
   util_paths_free(paths);
   return total ? 0 : -ENODEV;
}

static const char *const spirv_modes[] = {
   [DAEMON_SPIRV_REPORT] = "report",
   [DAEMON_SPIRV_STRICT] = "strict",
   [DAEMON_SPIRV_OFF] = "off",
};

const char *
daemon_spirv_mode_name(enum daemon_spirv_mode mode)
{
   return (unsigned)mode < UTIL_ARRAY_SIZE(spirv_modes) ? spirv_modes[mode] : "report";
}

bool
daemon_spirv_mode_parse(const char *name, enum daemon_spirv_mode *ret)
{
   for (unsigned i = 0; i < UTIL_ARRAY_SIZE(spirv_modes); i++) {
      if (!strcmp(name, spirv_modes[i])) {
         *ret = (enum daemon_spirv_mode)i;
         return true;
      }
   }
   return false;
}

/* ---- validation (--validate) ---------------------------------------------- */

int
daemon_host_enable_validation(struct daemon_host *host, enum daemon_validate_mode mode)
{
   if (mode == DAEMON_VALIDATE_OFF)
      return 0;
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
            found |= !strcmp(props[i].layerName, DAEMON_VALIDATION_LAYER);
      }
      free(props);
   }
   if (!found) {
      if (loader)
         dlclose(loader);
      util_err("--validate needs the Vulkan loader and %s (Debian: vulkan-validationlayers)",
               DAEMON_VALIDATION_LAYER);
      return -ENOENT;
   }
   host->loader = loader;
   host->get_instance_proc_addr = gipa;
   host->validate = mode;
   util_debug("validating every call with %s", DAEMON_VALIDATION_LAYER);
   return 0;
}
