/* SPDX-License-Identifier: MIT */
/*
 * What gpud carries of the host's extensions and features, as the
 * instance tells the application of them (gpud_instance.c) and a device
 * asks the host for them (gpud_device.c).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan_core.h>

#include "wire_gen.h"

/* The extension gpud carries by that name, or NULL. */
const struct wire_extension *gpud_instance_extension_carried(const char *name);
bool gpud_instance_host_has_extension(const VkExtensionProperties *exts, uint32_t n,
                                      const char *name);
/* The features of extensions gpud does not carry cleared in a pNext chain
 * of the decoder's own memory (what the application is told, and what it
 * asks of the host). */
void gpud_instance_clear_uncarried(const void *chain);
/* gpud's own extensions' feature structures out of a chain the host sees. */
void gpud_instance_drop_own_features(const void **chain);
