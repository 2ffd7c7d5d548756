/* SPDX-License-Identifier: MIT */
/*
 * Descriptor update templates live in the ICD: an update with a template is
 * turned into the equivalent vkUpdateDescriptorSets (or, for push
 * descriptors, vkCmdPushDescriptorSetKHR), so the daemon never reads
 * application memory laid out by a template.
 */
#include "icd.h"

#include <stdlib.h>
#include <string.h>

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateDescriptorUpdateTemplate(VkDevice device,
                                     const VkDescriptorUpdateTemplateCreateInfo *pCreateInfo,
                                     const VkAllocationCallbacks *pAllocator,
                                     VkDescriptorUpdateTemplate *pTemplate)
{
   struct icd_descriptor_update_template *t = icd_object_alloc(
      sizeof(*t), icd_connection_of(device), VK_OBJECT_TYPE_DESCRIPTOR_UPDATE_TEMPLATE, false);
   if (!t)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   t->type = pCreateInfo->templateType;
   t->bind_point = pCreateInfo->pipelineBindPoint;
   t->n_entries = pCreateInfo->descriptorUpdateEntryCount;
   t->entries = calloc(t->n_entries ? t->n_entries : 1, sizeof(*t->entries));
   if (!t->entries) {
      icd_object_free(t);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   memcpy(t->entries, pCreateInfo->pDescriptorUpdateEntries,
          sizeof(*t->entries) * t->n_entries);
   *pTemplate = (VkDescriptorUpdateTemplate)t;
   return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroyDescriptorUpdateTemplate(VkDevice device, VkDescriptorUpdateTemplate descriptorUpdateTemplate,
                                      const VkAllocationCallbacks *pAllocator)
{
   struct icd_descriptor_update_template *t =
      icd_descriptor_update_template_from_handle(descriptorUpdateTemplate);
   if (!t)
      return;
   icd_private_data_forget((uint64_t)(uintptr_t)t);
   free(t->entries);
   icd_object_free(t);
}

/* The writes a template update makes from pData; what they point at lives
 * in *infos and *inline_blocks, freed by the caller. */
static VkWriteDescriptorSet *
template_writes(const struct icd_descriptor_update_template *t, VkDescriptorSet set,
                const void *pData, void **infos_ret, void **inline_ret)
{
   const uint8_t *data = pData;
   size_t n_infos = 0;
   for (uint32_t i = 0; i < t->n_entries; i++)
      n_infos += t->entries[i].descriptorCount;

   VkWriteDescriptorSet *writes = calloc(t->n_entries ? t->n_entries : 1, sizeof(*writes));
   /* an entry's extension struct: an inline uniform block's bytes or an
    * acceleration structure list (one union per entry) */
   union template_extra {
      VkWriteDescriptorSetInlineUniformBlock inline_block;
      VkWriteDescriptorSetAccelerationStructureNV acceleration_structures;
   } *inline_blocks = calloc(t->n_entries ? t->n_entries : 1, sizeof(*inline_blocks));
   /* One pool big enough for any kind of info. */
   size_t info_size = sizeof(VkDescriptorImageInfo);
   if (sizeof(VkDescriptorBufferInfo) > info_size)
      info_size = sizeof(VkDescriptorBufferInfo);
   uint8_t *infos = calloc(n_infos ? n_infos : 1, info_size);
   *infos_ret = infos;
   *inline_ret = inline_blocks;
   if (!writes || !inline_blocks || !infos) {
      free(writes);
      return NULL;
   }

   uint8_t *next_info = infos;
   for (uint32_t i = 0; i < t->n_entries; i++) {
      const VkDescriptorUpdateTemplateEntry *entry = &t->entries[i];
      VkWriteDescriptorSet *w = &writes[i];
      w->sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w->dstSet = set;
      w->dstBinding = entry->dstBinding;
      w->dstArrayElement = entry->dstArrayElement;
      w->descriptorCount = entry->descriptorCount;
      w->descriptorType = entry->descriptorType;
      const uint8_t *src = data + entry->offset;

      if (entry->descriptorType == VK_DESCRIPTOR_TYPE_INLINE_UNIFORM_BLOCK) {
         /* descriptorCount is a byte count; the bytes sit at offset. */
         inline_blocks[i].inline_block = (VkWriteDescriptorSetInlineUniformBlock){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_INLINE_UNIFORM_BLOCK,
            .dataSize = entry->descriptorCount,
            .pData = src,
         };
         w->pNext = &inline_blocks[i];
      } else if (entry->descriptorType == VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_NV) {
         VkAccelerationStructureNV *as = (VkAccelerationStructureNV *)next_info;
         for (uint32_t j = 0; j < entry->descriptorCount; j++)
            memcpy(&as[j], src + j * entry->stride, sizeof(as[j]));
         inline_blocks[i].acceleration_structures = (VkWriteDescriptorSetAccelerationStructureNV){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_ACCELERATION_STRUCTURE_NV,
            .accelerationStructureCount = entry->descriptorCount,
            .pAccelerationStructures = as,
         };
         w->pNext = &inline_blocks[i];
      } else if (wire_descriptor_type_uses_image(entry->descriptorType)) {
         VkDescriptorImageInfo *ii = (VkDescriptorImageInfo *)next_info;
         for (uint32_t j = 0; j < entry->descriptorCount; j++)
            memcpy(&ii[j], src + j * entry->stride, sizeof(ii[j]));
         w->pImageInfo = ii;
      } else if (wire_descriptor_type_uses_buffer(entry->descriptorType)) {
         VkDescriptorBufferInfo *bi = (VkDescriptorBufferInfo *)next_info;
         for (uint32_t j = 0; j < entry->descriptorCount; j++)
            memcpy(&bi[j], src + j * entry->stride, sizeof(bi[j]));
         w->pBufferInfo = bi;
      } else if (wire_descriptor_type_uses_texel_buffer(entry->descriptorType)) {
         VkBufferView *views = (VkBufferView *)next_info;
         for (uint32_t j = 0; j < entry->descriptorCount; j++)
            memcpy(&views[j], src + j * entry->stride, sizeof(views[j]));
         w->pTexelBufferView = views;
      }
      next_info += info_size * entry->descriptorCount;
   }
   return writes;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkUpdateDescriptorSetWithTemplate(VkDevice device, VkDescriptorSet descriptorSet,
                                      VkDescriptorUpdateTemplate descriptorUpdateTemplate,
                                      const void *pData)
{
   const struct icd_descriptor_update_template *t =
      icd_descriptor_update_template_from_handle(descriptorUpdateTemplate);
   void *infos, *inline_blocks;
   VkWriteDescriptorSet *writes = template_writes(t, descriptorSet, pData, &infos, &inline_blocks);
   if (writes)
      icd_vkUpdateDescriptorSets(device, t->n_entries, writes, 0, NULL);
   free(writes);
   free(inline_blocks);
   free(infos);
}

/* A pushed write's dstSet is ignored: it goes as VK_NULL_HANDLE, whatever
 * the application left there. */
VKAPI_ATTR void VKAPI_CALL
icd_vkCmdPushDescriptorSetKHR(VkCommandBuffer commandBuffer, VkPipelineBindPoint pipelineBindPoint,
                              VkPipelineLayout layout, uint32_t set,
                              uint32_t descriptorWriteCount,
                              const VkWriteDescriptorSet *pDescriptorWrites)
{
   VkWriteDescriptorSet stack[16] = {0};
   VkWriteDescriptorSet *writes = stack;
   if (descriptorWriteCount > UTIL_ARRAY_SIZE(stack)) {
      writes = malloc(sizeof(*writes) * descriptorWriteCount);
      if (!writes) {
         icd_cmd_buffer_fail(commandBuffer);
         return;
      }
   }
   for (uint32_t i = 0; i < descriptorWriteCount; i++) {
      writes[i] = pDescriptorWrites[i];
      writes[i].dstSet = VK_NULL_HANDLE;
   }
   icd_gen_vkCmdPushDescriptorSetKHR(commandBuffer, pipelineBindPoint, layout, set,
                                     descriptorWriteCount, writes);
   if (writes != stack)
      free(writes);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkCmdPushDescriptorSetWithTemplateKHR(VkCommandBuffer commandBuffer,
                                          VkDescriptorUpdateTemplate descriptorUpdateTemplate,
                                          VkPipelineLayout layout, uint32_t set, const void *pData)
{
   const struct icd_descriptor_update_template *t =
      icd_descriptor_update_template_from_handle(descriptorUpdateTemplate);
   void *infos, *inline_blocks;
   VkWriteDescriptorSet *writes = template_writes(t, VK_NULL_HANDLE, pData, &infos, &inline_blocks);
   if (writes)
      icd_gen_vkCmdPushDescriptorSetKHR(commandBuffer, t->bind_point, layout, set, t->n_entries,
                                        writes);
   else
      icd_cmd_buffer_fail(commandBuffer);
   free(writes);
   free(inline_blocks);
   free(infos);
}

#ifdef WIRE_HAS_vkCmdPushDescriptorSetWithTemplate2KHR
#define RAY_TRACING_STAGES                                                                   \
   (VK_SHADER_STAGE_RAYGEN_BIT_KHR | VK_SHADER_STAGE_ANY_HIT_BIT_KHR |                       \
    VK_SHADER_STAGE_CLOSEST_HIT_BIT_KHR | VK_SHADER_STAGE_MISS_BIT_KHR |                     \
    VK_SHADER_STAGE_INTERSECTION_BIT_KHR | VK_SHADER_STAGE_CALLABLE_BIT_KHR)

/* VK_KHR_maintenance6 (core in 1.4): a template push by info, sent as the
 * vkCmdPushDescriptorSet2 of its writes, for the stages of the template's
 * bind point. */
VKAPI_ATTR void VKAPI_CALL
icd_vkCmdPushDescriptorSetWithTemplate2KHR(
   VkCommandBuffer commandBuffer, const VkPushDescriptorSetWithTemplateInfoKHR *pInfo)
{
   const struct icd_descriptor_update_template *t =
      icd_descriptor_update_template_from_handle(pInfo->descriptorUpdateTemplate);
   void *infos, *inline_blocks;
   VkWriteDescriptorSet *writes =
      template_writes(t, VK_NULL_HANDLE, pInfo->pData, &infos, &inline_blocks);
   if (writes) {
      const VkPushDescriptorSetInfoKHR push = {
         .sType = VK_STRUCTURE_TYPE_PUSH_DESCRIPTOR_SET_INFO_KHR,
         .pNext = pInfo->pNext, /* a VkPipelineLayoutCreateInfo in place of a layout */
         .stageFlags = t->bind_point == VK_PIPELINE_BIND_POINT_COMPUTE
                          ? VK_SHADER_STAGE_COMPUTE_BIT
                       : t->bind_point == VK_PIPELINE_BIND_POINT_GRAPHICS
                          ? VK_SHADER_STAGE_ALL_GRAPHICS
                          : RAY_TRACING_STAGES,
         .layout = pInfo->layout,
         .set = pInfo->set,
         .descriptorWriteCount = t->n_entries,
         .pDescriptorWrites = writes,
      };
      icd_gen_vkCmdPushDescriptorSet2KHR(commandBuffer, &push);
   } else {
      icd_cmd_buffer_fail(commandBuffer);
   }
   free(writes);
   free(inline_blocks);
   free(infos);
}
#endif

/* ---- descriptor pools: the sets they hold, for the object count ---------- */

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkAllocateDescriptorSets(VkDevice device, const VkDescriptorSetAllocateInfo *pAllocateInfo,
                             VkDescriptorSet *pDescriptorSets)
{
   VkResult r = icd_gen_vkAllocateDescriptorSets(device, pAllocateInfo, pDescriptorSets);
   struct icd_descriptor_pool *pool = icd_descriptor_pool_from_handle(pAllocateInfo->descriptorPool);
   if (r == VK_SUCCESS)
      atomic_fetch_add(&pool->sets, pAllocateInfo->descriptorSetCount);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkFreeDescriptorSets(VkDevice device, VkDescriptorPool descriptorPool,
                         uint32_t descriptorSetCount, const VkDescriptorSet *pDescriptorSets)
{
   struct icd_descriptor_pool *pool = icd_descriptor_pool_from_handle(descriptorPool);
   int64_t freed = 0;
   for (uint32_t i = 0; i < descriptorSetCount; i++)
      freed += pDescriptorSets[i] != VK_NULL_HANDLE;
   atomic_fetch_sub(&pool->sets, freed);
   icd_connection_count_objects(pool->base.conn, -freed);
   return icd_gen_vkFreeDescriptorSets(device, descriptorPool, descriptorSetCount,
                                       pDescriptorSets);
}

/* Every set of the pool is freed: the daemon forgets them. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkResetDescriptorPool(VkDevice device, VkDescriptorPool descriptorPool,
                          VkDescriptorPoolResetFlags flags)
{
   struct icd_descriptor_pool *pool = icd_descriptor_pool_from_handle(descriptorPool);
   icd_connection_count_objects(pool->base.conn, -atomic_exchange(&pool->sets, 0));
   return icd_gen_vkResetDescriptorPool(device, descriptorPool, flags);
}

/* ---- VK_EXT_descriptor_buffer: capture-replay data ------------------------ */

#ifdef WIRE_HAS_vkGetBufferOpaqueCaptureDescriptorDataEXT
/* The host writes as many bytes as a device property says: they come back
 * through a buffer of the wire's size, and the application gets that
 * many. */
enum opaque_kind { OPAQUE_BUFFER, OPAQUE_IMAGE, OPAQUE_IMAGE_VIEW, OPAQUE_SAMPLER, OPAQUE_AS };

static size_t
opaque_size(VkDevice device, enum opaque_kind kind)
{
   const struct icd_device *dev = icd_device_from_handle(device);
   VkPhysicalDeviceDescriptorBufferPropertiesEXT db = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_BUFFER_PROPERTIES_EXT,
   };
   VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &db,
   };
   icd_vkGetPhysicalDeviceProperties2((VkPhysicalDevice)dev->physical_device, &props);
   const size_t sizes[] = {
      [OPAQUE_BUFFER] = db.bufferCaptureReplayDescriptorDataSize,
      [OPAQUE_IMAGE] = db.imageCaptureReplayDescriptorDataSize,
      [OPAQUE_IMAGE_VIEW] = db.imageViewCaptureReplayDescriptorDataSize,
      [OPAQUE_SAMPLER] = db.samplerCaptureReplayDescriptorDataSize,
      [OPAQUE_AS] = db.accelerationStructureCaptureReplayDescriptorDataSize,
   };
   return UTIL_MIN(sizes[kind], (size_t)WIRE_MAX_OPAQUE_DATA);
}

#define OPAQUE_DATA(name, info_type, kind)                                                  \
   VKAPI_ATTR VkResult VKAPI_CALL icd_##name(VkDevice device, const info_type *pInfo,       \
                                             void *pData)                                  \
   {                                                                                       \
      uint8_t data[WIRE_MAX_OPAQUE_DATA] = {0};                                            \
      VkResult r = icd_gen_##name(device, pInfo, data);                                    \
      if (r == VK_SUCCESS)                                                                 \
         memcpy(pData, data, opaque_size(device, kind));                                   \
      return r;                                                                            \
   }

OPAQUE_DATA(vkGetBufferOpaqueCaptureDescriptorDataEXT, VkBufferCaptureDescriptorDataInfoEXT,
            OPAQUE_BUFFER)
OPAQUE_DATA(vkGetImageOpaqueCaptureDescriptorDataEXT, VkImageCaptureDescriptorDataInfoEXT,
            OPAQUE_IMAGE)
OPAQUE_DATA(vkGetImageViewOpaqueCaptureDescriptorDataEXT,
            VkImageViewCaptureDescriptorDataInfoEXT, OPAQUE_IMAGE_VIEW)
OPAQUE_DATA(vkGetSamplerOpaqueCaptureDescriptorDataEXT, VkSamplerCaptureDescriptorDataInfoEXT,
            OPAQUE_SAMPLER)
#endif
#ifdef WIRE_HAS_vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT
OPAQUE_DATA(vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT,
            VkAccelerationStructureCaptureDescriptorDataInfoEXT, OPAQUE_AS)
#endif
