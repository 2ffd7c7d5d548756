/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * SPIR-V checked before it reaches the host driver (gpud_spirv.c), by the
 * executors of the commands that carry it and by the compile threads.
 */

#include "gpud_call.h"

/* Whether the shader code chained to these pipeline stages (a
 * VkShaderModuleCreateInfo in place of a module) may reach the host: as for
 * vkCreateShaderModule, what the validator finds is reported and refused
 * only under --spirv=strict (gpud_spirv.c). */
bool gpud_spirv_stages_valid(struct gpud_context *ctx, const char *command,
                             const VkPipelineShaderStageCreateInfo *stages, uint32_t count);
/* Whether a module's code (size bytes) may reach the host: what the
 * validator says is logged and reported to the application, and refused
 * only under --spirv=strict (any thread). */
bool gpud_spirv_code_valid(struct gpud_context *ctx, const char *command, const void *code,
                           size_t size);
/* The same for a module's create info. */
bool gpud_spirv_module_valid(struct gpud_context *ctx, const char *command,
                             const VkShaderModuleCreateInfo *info);
/* Whether the shader code chained to a vkCreateComputePipelines,
 * vkCreateGraphicsPipelines or vkCreateRayTracingPipelinesKHR (args) may
 * reach the host (any thread). */
bool gpud_spirv_pipelines_valid(struct gpud_context *ctx, uint32_t op, const void *args);
