/* SPDX-License-Identifier: MIT */
/*
 * SPIR-V is validated (SPIRV-Tools) before it reaches the host driver: a
 * driver's compiler is not written to survive hostile input, and on lavapipe
 * it runs inside the daemon.
 */
#include "gpud_call.h"

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
   if (r != SPV_SUCCESS)
      snprintf(why, why_size, "%s", diag && diag->error ? diag->error : "invalid module");
   spvDiagnosticDestroy(diag);
   return r == SPV_SUCCESS;
}

/* Whether a module's code may reach the host (logged when not). */
static bool
module_valid(struct gpud_call *call, const char *command, const VkShaderModuleCreateInfo *info)
{
   char why[512];
   if (info->codeSize % 4 || info->codeSize == 0) {
      snprintf(why, sizeof(why), "code size %zu is not a positive multiple of 4",
               (size_t)info->codeSize);
   } else if (spirv_valid(info->pCode, info->codeSize / 4, why, sizeof(why))) {
      return true;
   }
   gpud_context_log(call->ctx, UTIL_LOG_WARNING, "%s: invalid SPIR-V: %s", command, why);
   return false;
}

void
gpud_exec_vkCreateShaderModule(struct gpud_call *call, struct wire_args_vkCreateShaderModule *a)
{
   if (!module_valid(call, "vkCreateShaderModule", a->pCreateInfo)) {
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
   if (!module_valid(call, "vkGetShaderModuleCreateInfoIdentifierEXT", a->pCreateInfo)) {
      a->pIdentifier->identifierSize = 0; /* no identifier: as for an unknown module */
      return;
   }
   gpud_gen_exec_vkGetShaderModuleCreateInfoIdentifierEXT(call, a);
}
