/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Which host device a daemon serves (daemon_select.c).  A selector names one
 * device the way a user knows it:
 *
 *   index:N             the host driver's Nth device (from 0)
 *   uuid:HEX            VkPhysicalDeviceIDProperties::deviceUUID (dashes optional)
 *   pci:[DOMAIN:]BUS:DEV.FN    the PCI address (VK_EXT_pci_bus_info)
 *   render:renderDN     a DRM render node, as libdrm finds it; also renderDN or
 *                       /dev/dri/renderDN on their own
 *   name:TEXT           the first device whose name contains TEXT
 *
 * Without a prefix, a UUID, a PCI address or a render node is recognised by
 * its shape and anything else is a name.  A render node is matched to a
 * host device by its device number (VK_EXT_physical_device_drm) or else by
 * its PCI address; the render nodes come from libdrm, or from a sysfs tree
 * laid out like /sys (tests).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan_core.h>

struct daemon_pci_address {
   uint32_t domain;
   uint8_t bus, device, function;
};

enum daemon_select_by {
   DAEMON_SELECT_FIRST, /* no selector: the host driver's first device */
   DAEMON_SELECT_INDEX,
   DAEMON_SELECT_UUID,
   DAEMON_SELECT_PCI,
   DAEMON_SELECT_RENDER,
   DAEMON_SELECT_NAME,
};

struct daemon_selector {
   enum daemon_select_by by;
   uint32_t index;
   uint8_t uuid[VK_UUID_SIZE];
   struct daemon_pci_address pci;
   char render[32]; /* renderD128 */
   char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
};

/* A host device as the selection sees it. */
struct daemon_device_info {
   char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   VkPhysicalDeviceType type;
   uint32_t vendor_id, device_id;
   uint8_t uuid[VK_UUID_SIZE];
   bool has_pci;
   struct daemon_pci_address pci;
   bool has_render; /* VK_EXT_physical_device_drm */
   uint32_t render_major, render_minor;
};

struct daemon_render_node {
   char name[32]; /* renderD128 */
   uint32_t major, minor;
   bool has_pci;
   struct daemon_pci_address pci;
   uint32_t vendor_id, device_id;
   char driver[32]; /* the kernel driver, where sysfs names it */
};

#define DAEMON_UUID_TEXT 37 /* 8-4-4-4-12 and the terminator */
#define DAEMON_PCI_TEXT 20  /* 0000:00:00.0 (or a longer domain) and the terminator */

/* 0, or -1 with what is wrong in err.  NULL or "" selects the first. */
int daemon_selector_parse(const char *text, struct daemon_selector *sel, char *err, size_t err_size);
/* The selector's canonical text ("pci:0000:65:00.0", ...; "" for the first). */
void daemon_selector_format(const struct daemon_selector *sel, char *buf, size_t size);

void daemon_uuid_format(const uint8_t uuid[VK_UUID_SIZE], char buf[DAEMON_UUID_TEXT]);
void daemon_pci_format(const struct daemon_pci_address *pci, char buf[DAEMON_PCI_TEXT]);

/*
 * The render nodes: libdrm's (sysfs_root NULL), or those of a sysfs tree
 * laid out like /sys (class/drm/renderD*\/dev and device/uevent).  Sorted by
 * minor number; *nodes is malloc'ed (NULL when there are none).  0 or
 * -errno.
 */
int daemon_render_nodes(const char *sysfs_root, struct daemon_render_node **nodes, size_t *n);

/* The render node that is this host device, or NULL. */
const struct daemon_render_node *daemon_device_render_node(const struct daemon_device_info *dev,
                                                       const struct daemon_render_node *nodes,
                                                       size_t n_nodes);

/*
 * The index of the device sel picks among devs, or -1 with why (a sentence
 * a user can act on) in why.  *matches (optional) counts the devices that
 * match a name, so that the caller can say when a name picks one of several.
 */
int daemon_select_device(const struct daemon_selector *sel, const struct daemon_device_info *devs,
                       size_t n_devs, const struct daemon_render_node *nodes, size_t n_nodes,
                       unsigned *matches, char *why, size_t why_size);
