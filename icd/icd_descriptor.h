/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Descriptor pools and update templates (icd_descriptor.c).
 */

#include "icd_object.h"

/* A descriptor pool: the sets allocated from it, which its reset and its
 * destruction free. */
struct icd_descriptor_pool {
   struct icd_object base;
   _Atomic int64_t sets;
};

struct icd_descriptor_update_template {
   struct icd_object base;
   VkDescriptorUpdateTemplateType type;
   VkPipelineBindPoint bind_point; /* of a push descriptor template */
   uint32_t n_entries;
   VkDescriptorUpdateTemplateEntry *entries;
};
