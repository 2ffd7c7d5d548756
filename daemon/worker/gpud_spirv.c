/* SPDX-License-Identifier: MIT */
/*
 * SPIR-V is validated (SPIRV-Tools) before it reaches the host driver.  By
 * default (--spirv=report) what the validator finds is a warning, in the
 * log and to the application's debug messengers, and the module goes on to
 * the host driver, which decides as it would for the application directly:
 * real programs (Zink's shaders among them) use SPIR-V that drivers compile
 * and the validator refuses, and a compiler that crashes on a module costs
 * only its client's worker.  --spirv=strict refuses such a module
 * (VK_ERROR_INVALID_SHADER_NV); --spirv=off does not validate.  A code size
 * that is no whole number of words is refused in every mode: the module's
 * words are what the wire carries.
 */
#include "gpud_spirv.h"

#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static spv_context context;
static spv_validator_options options;

static void
init(void)
{
   context = spvContextCreate(SPV_ENV_VULKAN_1_3);
   options = spvValidatorOptionsCreate();
   /* Layout rules a device feature may relax: accept them all, the host
    * driver checks its own features. */
   spvValidatorOptionsSetRelaxBlockLayout(options, true);
   spvValidatorOptionsSetUniformBufferStandardLayout(options, true);
   spvValidatorOptionsSetScalarBlockLayout(options, true);
   spvValidatorOptionsSetWorkgroupScalarBlockLayout(options, true);
   spvValidatorOptionsSetAllowLocalSizeId(options, true);
}

/* Returns true when the module is valid; else writes why into why. */
static bool
spirv_valid(const uint32_t *code, size_t words, char *why, size_t why_size)
{
   pthread_once(&once, init);
   if (!context || !options) {
      snprintf(why, why_size, "no SPIR-V validator");
      return false;
   }
   spv_const_binary_t binary = {.code = code, .wordCount = words};
   spv_diagnostic diag = NULL;
   spv_result_t r = spvValidateWithOptions(context, options, &binary, &diag);
   if (r != SPV_SUCCESS) {
      /* on one line (the validator puts the instruction on a line of its
       * own), runs of white space as one space */
      snprintf(why, why_size, "%s", diag && diag->error ? diag->error : "invalid module");
      char *w = why;
      bool space = false;
      for (const char *c = why; *c; c++) {
         if (*c == ' ' || *c == '\n' || *c == '\r' || *c == '\t') {
            space = w > why;
            continue;
         }
         if (space)
            *w++ = ' ';
         space = false;
         *w++ = *c;
      }
      *w = '\0';
   }
   spvDiagnosticDestroy(diag);
   return r == SPV_SUCCESS;
}

bool
gpud_spirv_code_valid(struct gpud_context *ctx, const char *command, const void *code,
                      size_t size)
{
   char why[512];
   if (size % 4 || size == 0) {
      gpud_context_log(ctx, UTIL_LOG_WARNING,
                       "%s: code size %zu is not a positive multiple of 4", command, size);
      return false;
   }
   const enum daemon_spirv_mode mode = ctx->host->spirv;
   if (mode == DAEMON_SPIRV_OFF || spirv_valid(code, size / 4, why, sizeof(why)))
      return true;
   const bool strict = mode == DAEMON_SPIRV_STRICT;
   gpud_context_log(ctx, UTIL_LOG_WARNING, "%s: invalid SPIR-V%s: %s", command,
                    strict ? " (refused: --spirv=strict)" : " (passed to the host driver)", why);
   char message[640];
   snprintf(message, sizeof(message), "%s: SPIRV-Tools finds the module invalid%s: %s", command,
            strict ? "; gpud refuses it (--spirv=strict)" : "", why);
   gpud_context_debug_message(ctx,
                              strict ? VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                                     : VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, "gpud-invalid-spirv",
                              0, message);
   return !strict;
}

bool
gpud_spirv_module_valid(struct gpud_context *ctx, const char *command,
                        const VkShaderModuleCreateInfo *info)
{
   return gpud_spirv_code_valid(ctx, command, info->pCode, info->codeSize);
}

bool
gpud_spirv_stages_valid(struct gpud_context *ctx, const char *command,
                        const VkPipelineShaderStageCreateInfo *stages, uint32_t count)
{
   for (uint32_t i = 0; stages && i < count; i++) {
      for (const VkBaseInStructure *s = stages[i].pNext; s; s = s->pNext) {
         if (s->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO &&
             !gpud_spirv_module_valid(ctx, command, (const VkShaderModuleCreateInfo *)s))
            return false;
      }
   }
   return true;
}

bool
gpud_spirv_pipelines_valid(struct gpud_context *ctx, uint32_t op, const void *args)
{
#ifdef WIRE_HAS_vkCreateRayTracingPipelinesKHR
   if (op == WIRE_OP_vkCreateRayTracingPipelinesKHR) {
      const struct wire_args_vkCreateRayTracingPipelinesKHR *a = args;
      for (uint32_t i = 0; i < a->createInfoCount; i++) {
         if (!gpud_spirv_stages_valid(ctx, "vkCreateRayTracingPipelinesKHR",
                                      a->pCreateInfos[i].pStages, a->pCreateInfos[i].stageCount))
            return false;
      }
      return true;
   }
#endif
   if (op == WIRE_OP_vkCreateComputePipelines) {
      const struct wire_args_vkCreateComputePipelines *a = args;
      for (uint32_t i = 0; i < a->createInfoCount; i++) {
         if (!gpud_spirv_stages_valid(ctx, "vkCreateComputePipelines", &a->pCreateInfos[i].stage,
                                      1))
            return false;
      }
      return true;
   }
   const struct wire_args_vkCreateGraphicsPipelines *a = args;
   for (uint32_t i = 0; i < a->createInfoCount; i++) {
      const VkGraphicsPipelineCreateInfo *ci = &a->pCreateInfos[i];
      if (!gpud_spirv_stages_valid(ctx, "vkCreateGraphicsPipelines", ci->pStages,
                                   ci->stageCount))
         return false;
      /* VK_NV_device_generated_commands: the shader groups' stages too */
      const VkGraphicsPipelineShaderGroupsCreateInfoNV *groups =
         gpud_chain_find(ci->pNext, VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV);
      for (uint32_t g = 0; groups && g < groups->groupCount; g++) {
         if (!gpud_spirv_stages_valid(ctx, "vkCreateGraphicsPipelines",
                                      groups->pGroups[g].pStages, groups->pGroups[g].stageCount))
            return false;
      }
   }
   return true;
}
