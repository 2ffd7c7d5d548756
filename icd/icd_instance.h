/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Instances and their physical devices (icd_instance.c), and the
 * instance's debug messengers (icd_debug.c).
 */

#include "icd_object.h"

struct wsi_device;

struct icd_physical_device {
   struct icd_object base;
   struct icd_instance *instance;
   pthread_mutex_t wsi_mutex;
   struct wsi_device *wsi; /* made on the first window-system command */
};

/* The WSI's state of a physical device, one allocation (icd_wsi.c). */
static inline void
icd_physical_device_free_wsi(struct icd_physical_device *pdev)
{
   free(pdev->wsi);
   pdev->wsi = NULL;
}

struct icd_instance {
   struct icd_object base;
   uint32_t api_version;
   uint32_t n_physical_devices;
   struct icd_physical_device **physical_devices;
   /* VK_EXT_debug_utils messengers (icd_debug.c) */
   pthread_mutex_t messenger_mutex;
   struct util_list messengers;
   bool in_create_or_destroy; /* the create info's messengers are active */
   /* what the daemons were last told the messengers take (filter_mutex:
    * held from reading the messengers to sending, so sends keep order) */
   pthread_mutex_t filter_mutex;
   bool filter_sent;
   uint32_t filter_severities, filter_types;
};

/* Sends a message to the instance's messengers that take it. */
void icd_instance_message(struct icd_instance *instance,
                          VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                          VkDebugUtilsMessageTypeFlagsEXT types,
                          const VkDebugUtilsMessengerCallbackDataEXT *data);
/* The messengers of a VkInstanceCreateInfo chain, for create and destroy. */
VkResult icd_instance_add_create_messengers(struct icd_instance *instance,
                                            const VkInstanceCreateInfo *info);
void icd_instance_free_messengers(struct icd_instance *instance);
/* Tells each daemon what the instance's messengers take (so it sends
 * nothing else). */
void icd_instance_update_message_filter(struct icd_instance *instance);
