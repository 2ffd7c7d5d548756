/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The daemon side's interface to the generated command handlers
 * (gpud_gen.c): what they call, and the daemon implements, for the command
 * being executed, which the generated code holds only as an opaque pointer.
 * The generated code is written against this header alone.
 */

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan_core.h>

struct gpud_call;
struct gpud_host_dispatch;

/* The host entrypoints of the command's instance or device: the first
 * member of struct gpud_call (every recorded command reads it, so it is
 * read in place rather than through a call). */
static inline const struct gpud_host_dispatch *
gpud_call_dispatch(struct gpud_call *call)
{
   return *(const struct gpud_host_dispatch *const *)call;
}
/* The command breaks the protocol: the client is disconnected. */
void gpud_call_fail(struct gpud_call *call, const char *why);
/* The command's device is lost (an earlier asynchronous call failed). */
bool gpud_call_device_lost(const struct gpud_call *call);
/* The result the command gets without running (VK_SUCCESS: it runs). */
VkResult gpud_call_refused(const struct gpud_call *call);
/* A waiter thread sends the reply later. */
bool gpud_call_deferred(const struct gpud_call *call);
/* An asynchronous command failed: its device is lost from now on. */
void gpud_call_async_error(struct gpud_call *call, VkResult result);
/* An asynchronous command for tools only (HOST_OPTIONAL) failed on the
 * host: logged, and nothing is lost. */
void gpud_call_host_failed(struct gpud_call *call, const char *command, VkResult result);
/* The host answered a command with VK_ERROR_DEVICE_LOST. */
void gpud_call_host_lost(struct gpud_call *call);
/* A new object: the client's id for the host handle. */
void gpud_call_add_object(struct gpud_call *call, VkObjectType type, uint64_t id, uint64_t handle);
/* Forgets the objects of this type the command named (it destroyed them),
 * and for pools their children. */
void gpud_call_forget_objects(struct gpud_call *call, VkObjectType type);
