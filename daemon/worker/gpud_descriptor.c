/* SPDX-License-Identifier: MIT */
/*
 * Descriptors: pools reset with their sets, sets allocated against their
 * layouts and updates checked against them, and the descriptor-buffer
 * queries whose answers gpud cannot carry refused.
 */
#include "gpud_call.h"
#include "gpud_lifetime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_macros.h"

/* ---- pools ---------------------------------------------------------------- */

void
gpud_exec_vkResetDescriptorPool(struct gpud_call *call, struct wire_args_vkResetDescriptorPool *a)
{
   gpud_gen_exec_vkResetDescriptorPool(call, a);
   /* the pool's sets are gone: forget them, keep the pool */
   if (call->n_touched > 1)
      gpud_lifetime_forget_children(call->ctx, call->touched[1]);
}

/* ---- descriptor sets against their layouts --------------------------------- */

static int
cmp_binding(const void *x, const void *y)
{
   const struct gpud_set_binding *a = x, *b = y;
   return a->binding < b->binding ? -1 : a->binding > b->binding;
}

/* The layout's bindings, for checking the writes into its sets (the host
 * driver indexes its own tables with them). */
void
gpud_exec_vkCreateDescriptorSetLayout(struct gpud_call *call,
                                      struct wire_args_vkCreateDescriptorSetLayout *a)
{
   const VkDescriptorSetLayoutCreateInfo *info = a->pCreateInfo;
   struct gpud_set_layout *l =
      calloc(1, sizeof(*l) + (size_t)info->bindingCount * sizeof(l->b[0]));
   if (l) {
      l->refs = 1;
      l->n = info->bindingCount;
      for (uint32_t i = 0; i < l->n; i++)
         l->b[i] = (struct gpud_set_binding){info->pBindings[i].binding,
                                             info->pBindings[i].descriptorType,
                                             info->pBindings[i].descriptorCount};
      qsort(l->b, l->n, sizeof(l->b[0]), cmp_binding);
   }
   call->new_set_layout = l; /* none: its sets go unchecked */
   gpud_gen_exec_vkCreateDescriptorSetLayout(call, a);
}

void
gpud_exec_vkAllocateDescriptorSets(struct gpud_call *call,
                                   struct wire_args_vkAllocateDescriptorSets *a)
{
   const VkDescriptorSetAllocateInfo *info = a->pAllocateInfo;
   call->new_set_layouts = calloc(info->descriptorSetCount ? info->descriptorSetCount : 1,
                                  sizeof(*call->new_set_layouts));
   for (uint32_t i = 0; call->new_set_layouts && i < info->descriptorSetCount; i++) {
      const struct gpud_object *layout =
         gpud_call_named(call, VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT,
                         (uint64_t)(uintptr_t)info->pSetLayouts[i]);
      call->new_set_layouts[i] = gpud_set_layout_ref(layout ? layout->set_layout : NULL);
   }
   call->n_new_set_layouts = call->new_set_layouts ? info->descriptorSetCount : 0;
   gpud_gen_exec_vkAllocateDescriptorSets(call, a);
}

/* Whether count descriptors from element first of binding fit in the set:
 * the binding must exist, and the descriptors from it on (an update rolls
 * over into the next bindings) must number at least first + count.  An
 * upper bound (every later binding counted, whatever its type; a variable
 * count at the layout's maximum), so it refuses no valid update. */
static bool
set_range_fits(struct gpud_call *call, VkDescriptorSet set, uint32_t binding, uint32_t first,
               uint32_t count, const VkDescriptorType *type, const char *what)
{
   const struct gpud_object *obj =
      gpud_call_named(call, VK_OBJECT_TYPE_DESCRIPTOR_SET, (uint64_t)(uintptr_t)set);
   const struct gpud_set_layout *l = obj ? obj->set_layout : NULL;
   if (!l)
      return true;
   uint32_t k = 0;
   while (k < l->n && l->b[k].binding != binding)
      k++;
   const char *why = NULL;
   uint64_t room = 0;
   if (k == l->n || !l->b[k].count) {
      why = "a binding its set's layout does not have";
   } else if (type && l->b[k].type != VK_DESCRIPTOR_TYPE_MUTABLE_EXT && l->b[k].type != *type) {
      why = "a descriptor type its binding does not have";
   } else {
      for (uint32_t j = k; j < l->n; j++)
         room += l->b[j].count;
      if ((uint64_t)first + count > room)
         why = "more descriptors than the set has from its binding on";
   }
   if (!why)
      return true;
   snprintf(call->validation_error, sizeof(call->validation_error),
            "vkUpdateDescriptorSets: %s names %s (binding %u, element %u, %u descriptors)", what,
            why, binding, first, count);
   gpud_call_fail(call, call->validation_error);
   return false;
}

/* A write's dstSet is ignored only when it is pushed (the decoder lets it be
 * null for that); an update must name its set, and stay inside it. */
void
gpud_exec_vkUpdateDescriptorSets(struct gpud_call *call,
                                 struct wire_args_vkUpdateDescriptorSets *a)
{
   for (uint32_t i = 0; i < a->descriptorWriteCount; i++) {
      const VkWriteDescriptorSet *w = &a->pDescriptorWrites[i];
      if (!w->dstSet) {
         gpud_call_fail(call, "vkUpdateDescriptorSets: a write without a set");
         return;
      }
      if (!set_range_fits(call, w->dstSet, w->dstBinding, w->dstArrayElement,
                          w->descriptorCount, &w->descriptorType, "a write"))
         return;
   }
   for (uint32_t i = 0; i < a->descriptorCopyCount; i++) {
      const VkCopyDescriptorSet *c = &a->pDescriptorCopies[i];
      if (!set_range_fits(call, c->srcSet, c->srcBinding, c->srcArrayElement,
                          c->descriptorCount, NULL, "a copy's source") ||
          !set_range_fits(call, c->dstSet, c->dstBinding, c->dstArrayElement,
                          c->descriptorCount, NULL, "a copy's destination"))
         return;
   }
   gpud_gen_exec_vkUpdateDescriptorSets(call, a);
}

/* ---- what is reported off is refused ---------------------------------------- */

/* Capture-replay data (descriptorBufferCaptureReplay, never enabled): the
 * host would write as many bytes as its properties say into the daemon's
 * WIRE_MAX_OPAQUE_DATA. */
#define REFUSE_CAPTURE(name)                                                           \
   void gpud_exec_##name(struct gpud_call *call, struct wire_args_##name *a)           \
   {                                                                                 \
      gpud_call_fail(call, #name ": descriptor buffer capture-replay is not offered"); \
      a->ret = VK_ERROR_INITIALIZATION_FAILED;                                        \
   }
#ifdef WIRE_HAS_vkGetBufferOpaqueCaptureDescriptorDataEXT
REFUSE_CAPTURE(vkGetBufferOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetImageOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetImageViewOpaqueCaptureDescriptorDataEXT)
REFUSE_CAPTURE(vkGetSamplerOpaqueCaptureDescriptorDataEXT)
#endif
#ifdef WIRE_HAS_vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT
REFUSE_CAPTURE(vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT)
#endif

#ifdef WIRE_HAS_vkGetDescriptorEXT
/* The host writes a whole descriptor of its own size, whatever dataSize
 * says (the spec makes them equal, so drivers do not look): it writes into
 * room for the largest any driver has, and the application gets dataSize
 * bytes of it. A type that selects no member of the data, or a combined
 * image sampler without its info, is refused before the host sees it. */
#define DESCRIPTOR_ROOM 4096
void
gpud_exec_vkGetDescriptorEXT(struct gpud_call *call, struct wire_args_vkGetDescriptorEXT *a)
{
   const VkDescriptorGetInfoEXT *info = a->pDescriptorInfo;
   const void *p = NULL;
   switch ((int)info->type) {
   case VK_DESCRIPTOR_TYPE_SAMPLER: p = info->data.pSampler; break;
   case VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: p = info->data.pCombinedImageSampler; break;
   case VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT: p = info->data.pInputAttachmentImage; break;
   /* these may be null (VK_EXT_robustness2's nullDescriptor) */
   case VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE:
   case VK_DESCRIPTOR_TYPE_STORAGE_IMAGE:
   case VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER:
   case VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER:
   case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER:
   case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER:
   case VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR:
   case VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_NV: p = info; break;
   default: break;
   }
   if (info->type == VK_DESCRIPTOR_TYPE_SAMPLER && p && !*info->data.pSampler)
      p = NULL;
   if (info->type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER && p &&
       !info->data.pCombinedImageSampler->sampler)
      p = NULL;
   if (!p || !a->pDescriptor || a->dataSize > DESCRIPTOR_ROOM) {
      gpud_call_fail(call, "vkGetDescriptorEXT: a type without data, or no room for it");
      return;
   }
   static _Thread_local uint8_t room[DESCRIPTOR_ROOM];
   memset(room, 0, sizeof(room));
   call->disp->GetDescriptorEXT(a->device, info, a->dataSize, room);
   memcpy(a->pDescriptor, room, UTIL_MIN(a->dataSize, (size_t)a->pDescriptor_cap));
}
#endif
