/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The host pipeline cache a device keeps across runs of its program: the
 * pipelines an application creates without a cache of its own are created
 * in it, and what it holds is written to the worker's cache directory when
 * the device goes or the client ends (gpud_pipecache.c).
 */

#include <vulkan/vulkan.h>

struct gpud_context;
struct gpud_object;

/* Opens (reads) the cache of a device just made; nothing where there is no
 * cache directory or GPUD_PIPELINE_CACHE=off. */
void gpud_pipecache_open(struct gpud_context *ctx, struct gpud_object *device);
/* The host cache for a pipeline creation that names none (VK_NULL_HANDLE:
 * none kept); what it gets is written later. */
VkPipelineCache gpud_pipecache_use(struct gpud_object *device);
/* The hash of a shader module's code, which the pipelines naming it have
 * in their keys (never 0). */
uint64_t gpud_pipecache_code_hash(const VkShaderModuleCreateInfo *ci);
/* The keys of the pipelines a vkCreateComputePipelines or
 * vkCreateGraphicsPipelines (op, its decoded arguments) makes with the
 * kept cache, one per create info, in the call's arena; taken on the
 * decoding thread (the shader modules are the call's).  NULL: the device
 * keeps none. */
struct gpud_call;
const uint64_t *gpud_pipecache_keys(struct gpud_call *call, uint32_t op, const void *args);
/* After pipelines were created with it: counts those made (pipelines[i]
 * not VK_NULL_HANDLE) as cached or compiled by their keys (NULL: all
 * compiled) on the status page, and writes what is new where the last
 * write is a while ago. */
void gpud_pipecache_made(struct gpud_context *ctx, struct gpud_object *device,
                         const uint64_t *keys, const VkPipeline *pipelines, uint32_t n);
/* Writes what is new, keeping the cache open (the client ended). */
void gpud_pipecache_save(struct gpud_context *ctx, struct gpud_object *device);
/* Writes what is new and destroys the cache (before the host device). */
void gpud_pipecache_close(struct gpud_context *ctx, struct gpud_object *device);
