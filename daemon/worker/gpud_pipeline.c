/* SPDX-License-Identifier: MIT */
/*
 * Pipelines, shader modules and shader objects: SPIR-V checked
 * (gpud_spirv.c), pipelines made beside the stream (gpud_compile.c) or at
 * once, ray tracing groups remembered, and pipeline binaries and keys
 * (gpud's own commands).
 */
#include "gpud_call.h"
#include "gpud_compile.h"
#include "gpud_pipecache.h"
#include "gpud_spirv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- pipelines ------------------------------------------------------------ */

/* A creation feedback's stage array must be as long as the pipeline's
 * stages (hosts index one by the other's count). */
static bool
feedback_fits(struct gpud_call *call, const void *chain, uint32_t stages)
{
   const VkPipelineCreationFeedbackCreateInfo *f =
      gpud_chain_find(chain, VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO);
   if (!f || f->pipelineStageCreationFeedbackCount == 0 ||
       f->pipelineStageCreationFeedbackCount == stages)
      return true;
   gpud_call_fail(call, "pipelineStageCreationFeedbackCount differs from the stage count");
   return false;
}

/* Chained shader code refused (--spirv=strict): no pipeline is made. */
static void
refuse_pipelines(VkResult *ret, VkPipeline *pipelines, uint32_t count)
{
   *ret = VK_ERROR_INVALID_SHADER_NV;
   for (uint32_t i = 0; pipelines && i < count; i++)
      pipelines[i] = VK_NULL_HANDLE;
}

void
gpud_exec_vkCreateShaderModule(struct gpud_call *call, struct wire_args_vkCreateShaderModule *a)
{
   /* validated and made on a compile thread (validation takes
    * milliseconds for a big module) */
   if (call->device && call->device->pipecache && a->pCreateInfo)
      call->new_code_hash = gpud_pipecache_code_hash(a->pCreateInfo);
   if (call->disp->CreateShaderModule &&
       gpud_compile_defer(call, WIRE_OP_vkCreateShaderModule, a, false, NULL))
      return;
   if (!gpud_spirv_module_valid(call->ctx, "vkCreateShaderModule", a->pCreateInfo)) {
      a->ret = VK_ERROR_INVALID_SHADER_NV;
      return;
   }
   gpud_gen_exec_vkCreateShaderModule(call, a);
}

/* VK_EXT_shader_module_identifier: the host reads the code here too. */
void
gpud_exec_vkGetShaderModuleCreateInfoIdentifierEXT(
   struct gpud_call *call, struct wire_args_vkGetShaderModuleCreateInfoIdentifierEXT *a)
{
   if (!gpud_spirv_module_valid(call->ctx, "vkGetShaderModuleCreateInfoIdentifierEXT",
                                a->pCreateInfo)) {
      a->pIdentifier->identifierSize = 0; /* no identifier: as for an unknown module */
      return;
   }
   gpud_gen_exec_vkGetShaderModuleCreateInfoIdentifierEXT(call, a);
}

#ifdef WIRE_HAS_vkCreateShadersEXT
/* VK_EXT_shader_object: SPIR-V in the create infos themselves (a binary
 * the host made earlier is the host's to check). */
void
gpud_exec_vkCreateShadersEXT(struct gpud_call *call, struct wire_args_vkCreateShadersEXT *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      const VkShaderCreateInfoEXT *ci = &a->pCreateInfos[i];
      /* a binary is the host's own format, which no validator reads:
       * --spirv=strict takes none */
      const bool binary_refused = ci->codeType != VK_SHADER_CODE_TYPE_SPIRV_EXT &&
                                  call->ctx->host->spirv == DAEMON_SPIRV_STRICT;
      if (binary_refused)
         gpud_context_log(call->ctx, UTIL_LOG_WARNING,
                          "vkCreateShadersEXT: a binary shader (refused: --spirv=strict)");
      if (binary_refused ||
          (ci->codeType == VK_SHADER_CODE_TYPE_SPIRV_EXT &&
           !gpud_spirv_code_valid(call->ctx, "vkCreateShadersEXT", ci->pCode, ci->codeSize))) {
         a->ret = VK_ERROR_INVALID_SHADER_NV;
         for (uint32_t j = 0; a->pShaders && j < a->createInfoCount; j++)
            a->pShaders[j] = VK_NULL_HANDLE;
         return;
      }
   }
   gpud_gen_exec_vkCreateShadersEXT(call, a);
}
#endif

/* Chained shader code is validated with the creation itself: on a compile
 * thread (gpud_compile.c) where one takes it, else here.  Without a cache
 * of the application's the device's kept one is used (gpud_pipecache.c).
 * stages: how many stages create info i names. */
#define CREATE_PIPELINES(cmd, host_fn, stages)                                            \
   void gpud_exec_##cmd(struct gpud_call *call, struct wire_args_##cmd *a)               \
   {                                                                                      \
      for (uint32_t i = 0; i < a->createInfoCount; i++) {                                 \
         if (!feedback_fits(call, a->pCreateInfos[i].pNext, (stages)))                    \
            return;                                                                       \
      }                                                                                   \
      bool kept = a->pipelineCache == VK_NULL_HANDLE;                                     \
      const uint64_t *keys = NULL;                                                        \
      if (kept) {                                                                         \
         a->pipelineCache = gpud_pipecache_use(call->device);                             \
         keys = gpud_pipecache_keys(call, WIRE_OP_##cmd, a);                              \
      }                                                                                   \
      if (call->disp->host_fn && gpud_compile_defer(call, WIRE_OP_##cmd, a, kept, keys))  \
         return;                                                                          \
      if (!gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_##cmd, a)) {                     \
         refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);                    \
         return;                                                                          \
      }                                                                                   \
      gpud_gen_exec_##cmd(call, a);                                                       \
      if (kept)                                                                           \
         gpud_pipecache_made(call->ctx, call->device, keys, a->pPipelines,                \
                             a->createInfoCount);                                         \
   }

CREATE_PIPELINES(vkCreateGraphicsPipelines, CreateGraphicsPipelines, a->pCreateInfos[i].stageCount)
CREATE_PIPELINES(vkCreateComputePipelines, CreateComputePipelines, 1)

/* The shader groups of each new ray tracing pipeline (groups[i] of
 * pipelines[i]), for the queries that name a group. */
static void
remember_rt_groups(struct gpud_call *call, const uint32_t *groups, const VkPipeline *pipelines,
                   uint32_t n)
{
   struct gpud_rt_groups *r = groups ? wire_dec_alloc(&call->dec, sizeof(*r) * (n + 1)) : NULL;
   if (!r)
      return;
   call->new_rt_groups = r;
   call->n_new_rt_groups = 0;
   for (uint32_t i = 0; pipelines && i < n; i++) {
      if (pipelines[i] != VK_NULL_HANDLE)
         r[call->n_new_rt_groups++] = (struct gpud_rt_groups){(uint64_t)pipelines[i], groups[i]};
   }
}

void
gpud_exec_vkCreateRayTracingPipelinesNV(struct gpud_call *call,
                                        struct wire_args_vkCreateRayTracingPipelinesNV *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      if (!feedback_fits(call, a->pCreateInfos[i].pNext, a->pCreateInfos[i].stageCount))
         return;
      if (!gpud_spirv_stages_valid(call->ctx, "vkCreateRayTracingPipelinesNV",
                                   a->pCreateInfos[i].pStages, a->pCreateInfos[i].stageCount)) {
         refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
         return;
      }
   }
   uint32_t *groups = wire_dec_alloc(&call->dec, sizeof(*groups) * (a->createInfoCount + 1));
   for (uint32_t i = 0; groups && i < a->createInfoCount; i++)
      groups[i] = a->pCreateInfos[i].groupCount;
   gpud_gen_exec_vkCreateRayTracingPipelinesNV(call, a);
   remember_rt_groups(call, groups, a->pPipelines, a->createInfoCount);
}

#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
/* A shader group names its shaders by index into the pipeline's stages
 * (hosts index the array with it). */
static bool
groups_fit(struct gpud_call *call, const VkRayTracingPipelineCreateInfoKHR *ci)
{
   for (uint32_t g = 0; g < ci->groupCount; g++) {
      const VkRayTracingShaderGroupCreateInfoKHR *group = &ci->pGroups[g];
      const uint32_t shaders[] = {group->generalShader, group->closestHitShader,
                                  group->anyHitShader, group->intersectionShader};
      for (unsigned k = 0; k < sizeof(shaders) / sizeof(shaders[0]); k++) {
         if (shaders[k] != VK_SHADER_UNUSED_KHR && shaders[k] >= ci->stageCount) {
            char why[128];
            snprintf(why, sizeof(why), "vkCreateRayTracingPipelinesKHR: group %u names shader "
                     "%u of %u", g, shaders[k], ci->stageCount);
            gpud_call_fail(call, why);
            return false;
         }
      }
   }
   return true;
}

/* The operation to defer on is the ICD's (icd/icd_deferred.c): the decoder
 * gives VK_NULL_HANDLE, and the host compiles before answering. */
void
gpud_exec_vkCreateRayTracingPipelinesKHR(struct gpud_call *call,
                                         struct wire_args_vkCreateRayTracingPipelinesKHR *a)
{
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      const VkRayTracingPipelineCreateInfoKHR *ci = &a->pCreateInfos[i];
      if (!feedback_fits(call, ci->pNext, ci->stageCount) || !groups_fit(call, ci))
         return;
   }
   /* a pipeline's groups: its own, then its libraries' */
   uint32_t *groups = wire_dec_alloc(&call->dec, sizeof(*groups) * (a->createInfoCount + 1));
   for (uint32_t i = 0; groups && i < a->createInfoCount; i++) {
      const VkRayTracingPipelineCreateInfoKHR *ci = &a->pCreateInfos[i];
      uint64_t n = ci->groupCount;
      for (uint32_t j = 0; ci->pLibraryInfo && j < ci->pLibraryInfo->libraryCount; j++) {
         const struct gpud_object *lib = gpud_call_named(
            call, VK_OBJECT_TYPE_PIPELINE, (uint64_t)ci->pLibraryInfo->pLibraries[j]);
         n += lib ? lib->rt_groups : 0;
      }
      groups[i] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
   }
   /* on a compile thread, the SPIR-V checked there (gpud_compile.c) */
   call->new_pending_groups = groups;
   if (groups && call->disp->CreateRayTracingPipelinesKHR &&
       gpud_compile_defer(call, WIRE_OP_vkCreateRayTracingPipelinesKHR, a, false, NULL))
      return;
   if (!gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateRayTracingPipelinesKHR, a)) {
      refuse_pipelines(&a->ret, a->pPipelines, a->createInfoCount);
      return;
   }
   gpud_gen_exec_vkCreateRayTracingPipelinesKHR(call, a);
   remember_rt_groups(call, groups, a->pPipelines, a->createInfoCount);
}

#ifdef WIRE_HAS_vkCreatePipelineBinariesGPUD
/* VK_KHR_pipeline_binary: the ICD sends the pipeline create info that a
 * VkPipelineCreateInfoKHR holds as the structure it is (at most one of the
 * three; icd/icd_pipeline_binary.c). Checked as a pipeline's: its shader
 * code is what the host reads to make the key. NULL where it refused. */
static const void *
binary_pipeline_info(struct gpud_call *call, const VkGraphicsPipelineCreateInfo *graphics,
                     const VkComputePipelineCreateInfo *compute,
                     const VkRayTracingPipelineCreateInfoKHR *ray_tracing, bool *refused)
{
   *refused = true;
   if (!call->device || !gpud_device_enabled(call->device, VK_KHR_PIPELINE_BINARY_EXTENSION_NAME)) {
      gpud_call_fail(call, "VK_KHR_pipeline_binary: the device did not enable it");
      return NULL;
   }
   if (!!graphics + !!compute + !!ray_tracing > 1) {
      gpud_call_fail(call, "VK_KHR_pipeline_binary: more than one pipeline create info");
      return NULL;
   }
   bool valid = true;
   if (graphics) {
      const struct wire_args_vkCreateGraphicsPipelines g = {
         .createInfoCount = 1, .pCreateInfos = graphics,
      };
      if (!feedback_fits(call, graphics->pNext, graphics->stageCount))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateGraphicsPipelines, &g);
   } else if (compute) {
      const struct wire_args_vkCreateComputePipelines c = {
         .createInfoCount = 1, .pCreateInfos = compute,
      };
      if (!feedback_fits(call, compute->pNext, 1))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateComputePipelines, &c);
   } else if (ray_tracing) {
      const struct wire_args_vkCreateRayTracingPipelinesKHR r = {
         .createInfoCount = 1, .pCreateInfos = ray_tracing,
      };
      if (!feedback_fits(call, ray_tracing->pNext, ray_tracing->stageCount) ||
          !groups_fit(call, ray_tracing))
         return NULL;
      valid = gpud_spirv_pipelines_valid(call->ctx, WIRE_OP_vkCreateRayTracingPipelinesKHR, &r);
   }
   if (!valid)
      return NULL; /* (gpud_spirv.c says why) */
   if (!call->disp->CreatePipelineBinariesKHR || !call->disp->GetPipelineKeyKHR) {
      gpud_call_fail(call, "host driver lacks VK_KHR_pipeline_binary's commands");
      return NULL;
   }
   *refused = false;
   return graphics ? (const void *)graphics : compute ? (const void *)compute : (const void *)ray_tracing;
}

/* What vkCreatePipelineBinariesKHR takes, made again for the host. */
struct binary_source {
   VkPipelineCreateInfoKHR pipeline_info;
   VkPipelineBinaryCreateInfoKHR create;
};

/* False where the inputs were refused (ret set). */
static bool
binary_source_init(struct gpud_call *call, struct binary_source *src,
                   const VkPipelineBinaryKeysAndDataKHR *keys_and_data, VkPipeline pipeline,
                   const VkGraphicsPipelineCreateInfo *graphics,
                   const VkComputePipelineCreateInfo *compute,
                   const VkRayTracingPipelineCreateInfoKHR *ray_tracing, VkResult *ret)
{
   bool refused;
   const void *info = binary_pipeline_info(call, graphics, compute, ray_tracing, &refused);
   if (refused) {
      *ret = VK_ERROR_INITIALIZATION_FAILED;
      return false;
   }
   src->pipeline_info = (VkPipelineCreateInfoKHR){
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATE_INFO_KHR,
      .pNext = (void *)info,
   };
   src->create = (VkPipelineBinaryCreateInfoKHR){
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_CREATE_INFO_KHR,
      .pKeysAndDataInfo = keys_and_data,
      .pipeline = pipeline,
      .pPipelineCreateInfo = info ? &src->pipeline_info : NULL,
   };
   return true;
}

/* vkCreatePipelineBinariesKHR makes binaries of exactly one source: keys
 * and data, a pipeline, or a pipeline's create info. */
static bool
binary_source_single(struct gpud_call *call, const struct binary_source *src)
{
   if (!!src->create.pKeysAndDataInfo + !!src->create.pipeline +
          !!src->create.pPipelineCreateInfo != 1) {
      gpud_call_fail(call, "vkCreatePipelineBinariesKHR: not exactly one source of binaries");
      return false;
   }
   return true;
}

/* The host's vkCreatePipelineBinariesKHR on what the ICD sent: into no
 * room, how many binaries it would make; else the binaries. */
static void
binaries_create(struct gpud_call *call, VkDevice device,
                const VkPipelineBinaryKeysAndDataKHR *keys_and_data, VkPipeline pipeline,
                const VkGraphicsPipelineCreateInfo *graphics,
                const VkComputePipelineCreateInfo *compute,
                const VkRayTracingPipelineCreateInfoKHR *ray_tracing,
                VkPipelineBinaryHandlesInfoKHR *out, VkResult *ret)
{
   struct binary_source src;
   if (binary_source_init(call, &src, keys_and_data, pipeline, graphics, compute, ray_tracing,
                          ret) &&
       binary_source_single(call, &src))
      *ret = call->disp->CreatePipelineBinariesKHR(device, &src.create, NULL, out);
}

void
gpud_exec_vkGetPipelineBinaryCountGPUD(struct gpud_call *call,
                                       struct wire_args_vkGetPipelineBinaryCountGPUD *a)
{
   VkPipelineBinaryHandlesInfoKHR out = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR,
   };
   binaries_create(call, a->device, a->pKeysAndDataInfo, a->pipeline, a->pGraphicsCreateInfo,
                   a->pComputeCreateInfo, a->pRayTracingCreateInfo, &out, &a->ret);
   *a->pPipelineBinaryCount = out.pipelineBinaryCount;
}

/* The binaries the host made fill the first entries; the rest stay
 * VK_NULL_HANDLE, and the ICD gives back their ids. */
void
gpud_exec_vkCreatePipelineBinariesGPUD(struct gpud_call *call,
                                       struct wire_args_vkCreatePipelineBinariesGPUD *a)
{
   if (!a->pPipelineBinaries || !a->pipelineBinaryCount) {
      gpud_call_fail(call, "vkCreatePipelineBinariesGPUD: no room for a binary");
      return;
   }
   for (uint32_t i = 0; i < a->pipelineBinaryCount; i++)
      a->pPipelineBinaries[i] = VK_NULL_HANDLE;
   VkPipelineBinaryHandlesInfoKHR out = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR,
      .pipelineBinaryCount = a->pipelineBinaryCount,
      .pPipelineBinaries = a->pPipelineBinaries,
   };
   binaries_create(call, a->device, a->pKeysAndDataInfo, a->pipeline, a->pGraphicsCreateInfo,
                   a->pComputeCreateInfo, a->pRayTracingCreateInfo, &out, &a->ret);
   if (a->ret < 0) {
      /* a failed call may leave the binaries it made: the application
       * gets none, so the host keeps none */
      for (uint32_t i = 0; i < a->pipelineBinaryCount; i++) {
         if (a->pPipelineBinaries[i])
            call->disp->DestroyPipelineBinaryKHR(a->device, a->pPipelineBinaries[i], NULL);
         a->pPipelineBinaries[i] = VK_NULL_HANDLE;
      }
   }
}

void
gpud_exec_vkGetPipelineKeyGPUD(struct gpud_call *call, struct wire_args_vkGetPipelineKeyGPUD *a)
{
   struct binary_source src;
   if (!binary_source_init(call, &src, NULL, VK_NULL_HANDLE, a->pGraphicsCreateInfo,
                           a->pComputeCreateInfo, a->pRayTracingCreateInfo, &a->ret)) {
      if (a->ret == VK_ERROR_INITIALIZATION_FAILED)
         a->ret = VK_ERROR_OUT_OF_HOST_MEMORY; /* (vkGetPipelineKeyKHR's only errors) */
      return;
   }
   if (!src.create.pPipelineCreateInfo != !!a->global) {
      gpud_call_fail(call, "vkGetPipelineKeyGPUD: a create info and the global key at once, or neither");
      return;
   }
   a->ret = call->disp->GetPipelineKeyKHR(a->device, src.create.pPipelineCreateInfo,
                                          a->pPipelineKey);
}
#endif

/* The size of a shader group's handle on the device (the KHR and the NV
 * property: whichever the host fills). */
static uint32_t
group_handle_size(struct gpud_call *call)
{
   VkPhysicalDeviceRayTracingPropertiesNV nv = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PROPERTIES_NV,
   };
   VkPhysicalDeviceRayTracingPipelinePropertiesKHR khr = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_PROPERTIES_KHR,
      .pNext = &nv,
   };
   VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &khr,
   };
   call->disp->GetPhysicalDeviceProperties2((VkPhysicalDevice)call->device->physical_device,
                                            &props);
   return khr.shaderGroupHandleSize > nv.shaderGroupHandleSize ? khr.shaderGroupHandleSize
                                                               : nv.shaderGroupHandleSize;
}

/* The ray tracing pipeline a query names, with group [first, first + count)
 * among its groups; NULL (the client failed) otherwise: the host indexes
 * its groups with them unchecked. */
static const struct gpud_object *
rt_pipeline_groups(struct gpud_call *call, const char *command, VkPipeline pipeline,
                   uint32_t first, uint32_t count)
{
   const struct gpud_object *p =
      gpud_call_named(call, VK_OBJECT_TYPE_PIPELINE, (uint64_t)pipeline);
   if (p && p->rt_groups && first < p->rt_groups && count <= p->rt_groups - first)
      return p;
   char why[160];
   snprintf(why, sizeof(why), "%s: groups %u+%u of a pipeline with %u", command, first, count,
            p ? p->rt_groups : 0);
   gpud_call_fail(call, why);
   return NULL;
}

void
gpud_exec_vkGetRayTracingShaderGroupHandlesKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingShaderGroupHandlesKHR *a)
{
   if (!call->device || !rt_pipeline_groups(call, "vkGetRayTracingShaderGroupHandlesKHR",
                                            a->pipeline, a->firstGroup, a->groupCount))
      return;
   /* the host writes a whole handle a group, whatever dataSize says */
   if ((uint64_t)a->groupCount * group_handle_size(call) > a->dataSize) {
      gpud_call_fail(call, "vkGetRayTracingShaderGroupHandlesKHR: dataSize too small for the "
                           "groups' handles");
      return;
   }
   gpud_gen_exec_vkGetRayTracingShaderGroupHandlesKHR(call, a);
}

void
gpud_exec_vkGetRayTracingShaderGroupStackSizeKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingShaderGroupStackSizeKHR *a)
{
   if (!rt_pipeline_groups(call, "vkGetRayTracingShaderGroupStackSizeKHR", a->pipeline,
                           a->group, 1))
      return;
   gpud_gen_exec_vkGetRayTracingShaderGroupStackSizeKHR(call, a);
}

/* rayTracingPipelineShaderGroupHandleCaptureReplay is reported off: the
 * groups' capture-replay handles do not travel. */
void
gpud_exec_vkGetRayTracingCaptureReplayShaderGroupHandlesKHR(
   struct gpud_call *call, struct wire_args_vkGetRayTracingCaptureReplayShaderGroupHandlesKHR *a)
{
   gpud_call_fail(call, "vkGetRayTracingCaptureReplayShaderGroupHandlesKHR: "
                        "shader group capture-replay is not offered");
   a->ret = VK_ERROR_INITIALIZATION_FAILED;
}
#endif

#ifdef WIRE_HAS_vkGetPipelineIndirectMemoryRequirementsNV
/* The host compiles the pipeline to size its indirect memory: its code is
 * checked as the pipeline's would be; refused code (--spirv=strict) needs
 * no memory. */
void
gpud_exec_vkGetPipelineIndirectMemoryRequirementsNV(
   struct gpud_call *call, struct wire_args_vkGetPipelineIndirectMemoryRequirementsNV *a)
{
   if (!gpud_spirv_stages_valid(call->ctx, "vkGetPipelineIndirectMemoryRequirementsNV",
                                &a->pCreateInfo->stage, 1)) {
      a->pMemoryRequirements->memoryRequirements = (VkMemoryRequirements){0};
      return;
   }
   gpud_gen_exec_vkGetPipelineIndirectMemoryRequirementsNV(call, a);
}
#endif
