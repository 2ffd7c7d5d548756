/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Lifetimes of a client's objects (gpud_lifetime.c): what a command made
 * (gpud_call_add_object, from wire_gpud.h) and destroyed
 * (gpud_call_forget_objects), pools' children, and the teardown of a device,
 * an instance or everything the client held.
 */
#include "gpud_call.h"

/* Forgets the children of a pool (vkResetDescriptorPool). */
void gpud_lifetime_forget_children(struct gpud_context *ctx, struct gpud_object *pool);
/* Destroys every host object of the client that belongs to device (or to
 * instance, or all when both are NULL), newest first.  No compile job may
 * run (gpud_compile_drain): they use what goes. */
void gpud_lifetime_destroy(struct gpud_context *ctx, struct gpud_object *device,
                           struct gpud_object *instance);

/* Destroys the host pools of an application's command pool but its own
 * (gpud_cmd_buffer.c). */
void gpud_cmd_pool_destroy_shards(const struct gpud_host_dispatch *disp, VkDevice device,
                                  struct gpud_object *pool);
