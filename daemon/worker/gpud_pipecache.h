/* SPDX-License-Identifier: MIT */
#pragma once

#include <vulkan/vulkan.h>

struct gpud_context;
struct gpud_object;

/*
 * The host pipeline cache a device keeps across runs of its program: the
 * pipelines an application creates without a cache of its own are created
 * in it, and what it holds is written to the worker's cache directory when
 * the device goes or the client ends (gpud_pipecache.c).
 */

/* Opens (reads) the cache of a device just made; nothing where there is no
 * cache directory or GPUD_PIPELINE_CACHE=off. */
void gpud_pipecache_open(struct gpud_context *ctx, struct gpud_object *device);
/* The host cache for a pipeline creation that names none (VK_NULL_HANDLE:
 * none kept); what it gets is written later. */
VkPipelineCache gpud_pipecache_use(struct gpud_object *device);
/* After pipelines were created with it: writes what is new where the last
 * write is a while ago. */
void gpud_pipecache_created(struct gpud_context *ctx, struct gpud_object *device);
/* Writes what is new, keeping the cache open (the client ended). */
void gpud_pipecache_save(struct gpud_context *ctx, struct gpud_object *device);
/* Writes what is new and destroys the cache (before the host device). */
void gpud_pipecache_close(struct gpud_context *ctx, struct gpud_object *device);
