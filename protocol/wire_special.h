/* SPDX-License-Identifier: MIT */
#pragma once

/* Conditions the generated code tests for struct members the API ignores
 * in some states (gen_tables.py's CONDITIONAL_MEMBERS says which). */

#include "wire.h"

static inline bool
wire_descriptor_type_uses_image(VkDescriptorType t)
{
   return t == VK_DESCRIPTOR_TYPE_SAMPLER || t == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER ||
          t == VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE || t == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE ||
          t == VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT;
}

static inline bool
wire_descriptor_type_uses_buffer(VkDescriptorType t)
{
   return t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER || t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ||
          t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC ||
          t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
}

static inline bool
wire_descriptor_type_uses_texel_buffer(VkDescriptorType t)
{
   return t == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER ||
          t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
}

static inline bool
wire_descriptor_type_uses_sampler(VkDescriptorType t)
{
   return t == VK_DESCRIPTOR_TYPE_SAMPLER || t == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
}

/* Remembers the type of the descriptor write being encoded, for its image
 * infos; always true so it can sit in a condition. */
static inline bool
wire_enc_set_descriptor_type(struct wire_enc *e, VkDescriptorType t)
{
   e->descriptor_type = t;
   return true;
}

static inline bool
wire_pipeline_has_tessellation(const VkGraphicsPipelineCreateInfo *s)
{
   if (!s->pStages)
      return s->pTessellationState != NULL;
   for (uint32_t i = 0; i < s->stageCount; i++) {
      if (s->pStages[i].stage & (VK_SHADER_STAGE_TESSELLATION_CONTROL_BIT |
                                 VK_SHADER_STAGE_TESSELLATION_EVALUATION_BIT))
         return true;
   }
   return false;
}
