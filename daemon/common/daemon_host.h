/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The host driver and the one host device a daemon serves: loaded straight
 * from the driver's ICD manifest (daemon_host.c), optionally behind the
 * Khronos validation layer (gpud_validate.c).  A worker process loads it
 * for itself; with --isolation=thread the server loads it once for every
 * context.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <vulkan/vulkan_core.h>

#include "daemon_select.h"

enum daemon_validate_mode {
   DAEMON_VALIDATE_OFF,
   DAEMON_VALIDATE_REPORT, /* messages to the application and the log */
   DAEMON_VALIDATE_STRICT, /* ... and a call that breaks a rule disconnects its client */
};

/* What happens to SPIR-V that SPIRV-Tools finds invalid (gpud_spirv.c). */
enum daemon_spirv_mode {
   DAEMON_SPIRV_REPORT, /* a warning to the log and the application; the host driver decides */
   DAEMON_SPIRV_STRICT, /* ... and the module is refused (VK_ERROR_INVALID_SHADER_NV) */
   DAEMON_SPIRV_OFF,    /* not validated */
};

struct daemon_host {
   char *manifest;
   void *library;
   PFN_vkGetInstanceProcAddr get_instance_proc_addr;
   /* the served device, found once at start-up */
   uint8_t device_uuid[VK_UUID_SIZE];
   char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   VkPhysicalDeviceMemoryProperties memory;
   bool has_external_memory_host;
   bool has_debug_utils; /* instance extension: object names and labels reach the host */
   VkDeviceSize import_alignment;
   uint32_t importable_types; /* memory types a memfd can be imported into */
   VkPhysicalDeviceType device_type;
   bool has_pci;
   struct daemon_pci_address pci;
   char render_node[32]; /* "" when it is none (or none was found) */
   /* Validation: the host driver is reached through the Vulkan loader with
    * the Khronos validation layer (see gpud_validate.c). */
   enum daemon_validate_mode validate;
   enum daemon_spirv_mode spirv;
   void *loader;
   VkInstance warm_instance; /* kept so the driver stays set up */
   PFN_vkDestroyInstance warm_destroy;
};

/* A --spirv mode's name, and the mode a name gives (false: none). */
const char *daemon_spirv_mode_name(enum daemon_spirv_mode mode);
bool daemon_spirv_mode_parse(const char *name, enum daemon_spirv_mode *ret);

/* Loads the driver and finds the device sel names (render nodes from libdrm,
 * or from the sysfs tree sysfs_root). */
int daemon_host_load(struct daemon_host *host, const char *manifest, const struct daemon_selector *sel,
                   const char *sysfs_root);
/* Reaches the host driver through the loader and the validation layer
 * (the worker's side of it: worker/gpud_validate.c). */
#define DAEMON_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"
int daemon_host_enable_validation(struct daemon_host *host, enum daemon_validate_mode mode);
void daemon_host_finish(struct daemon_host *host);
/* Picks a host driver manifest when none was named: the first GPU driver
 * with a GPU (with a selector: with the device it names), else the embedded
 * default (lavapipe). */
int daemon_host_default_manifest(const struct daemon_selector *sel, const char *sysfs_root,
                               char **manifest);
/* The embedded default's manifest: the one configured at build time, else
 * lavapipe's where the loader finds it; NULL when there is none. */
char *daemon_host_lavapipe_manifest(void);
/* gpud --list-devices: every driver's devices (or manifest's) with the
 * selectors that name them, and the render nodes.  -ENODEV: none. */
int daemon_host_list_devices(FILE *f, const char *manifest, const char *sysfs_root);
