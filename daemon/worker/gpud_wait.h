/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Blocking waits (gpud_wait.c) on threads of their own, so that the
 * client's stream keeps flowing: the executors of the objects waited on
 * (gpud_fence.c, gpud_semaphore.c, gpud_query.c, gpud_queue.c,
 * gpud_device.c) start them here.
 */
#include "gpud_call.h"

/* What a wait of fences or semaphores found signalled (or reached), told
 * to the page by the objects' own file. */
typedef void (*gpud_wait_reached_fn)(struct gpud_object *device, struct gpud_object *const *objs,
                                     uint32_t n);

/* Each starts a wait on a thread of its own, which answers the call
 * (call->deferred) and, for fences and semaphores, calls reached; false
 * where it did not (no reply is asked, the client has too many waits, no
 * thread): the caller then waits on its own thread.  A wait of fences or
 * semaphores without memory for its record is answered at once instead
 * (true, *ret VK_ERROR_OUT_OF_HOST_MEMORY); the others wait inline. */
bool gpud_wait_fences(struct gpud_call *call, const VkFence *fences, uint32_t n, bool wait_all,
                      uint64_t timeout, gpud_wait_reached_fn reached, VkResult *ret);
bool gpud_wait_semaphores(struct gpud_call *call, const VkSemaphoreWaitInfo *info,
                          uint64_t timeout, gpud_wait_reached_fn reached, VkResult *ret);
bool gpud_wait_queue_idle(struct gpud_call *call, VkQueue queue);
bool gpud_wait_device_idle(struct gpud_call *call);
/* Query results with VK_QUERY_RESULT_WAIT_BIT. */
bool gpud_wait_query(struct gpud_call *call, const struct wire_args_vkGetQueryPoolResults *a);
/* A wait of fences or semaphores (type; handles, an array of VkFence or
 * VkSemaphore) the host answered on the calling thread: what it found goes
 * on the page (reached) before the reply. */
void gpud_wait_publish(struct gpud_call *call, VkObjectType type, const void *handles, uint32_t n,
                       gpud_wait_reached_fn reached);

/* Ends the waits of a device (or every device: NULL) that use handle (or
 * any: 0), before what they use goes. */
void gpud_waiters_cancel(struct gpud_context *ctx, struct gpud_object *device, uint64_t handle);
