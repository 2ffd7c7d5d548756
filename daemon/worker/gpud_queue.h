/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The queues of a client's devices (gpud_queue.c, the submissions;
 * gpud_track.c, the tracker): each submission tracked to its completion,
 * what gpudctl shows of it (submissions, in flight, busy time), and the
 * completion page the application reads its fences, timeline semaphores,
 * events and query results from.  The executors of submissions and of the
 * page's slots.
 */
#include "gpud_call.h"

/* A new queue object: its status slot and tracker. */
void gpud_queue_track_add(struct gpud_context *ctx, struct gpud_object *queue);
/* Before a device's objects go: stops its tracker, frees its queues'. */
void gpud_queue_track_device_end(struct gpud_context *ctx, struct gpud_object *device);
/* The completion page: a fence destroyed, or whose state only the host
 * driver knows from now on (its slot says "ask"); a device lost. */
void gpud_queue_fence_gone(struct gpud_object *fence, bool ask);
/* This signal of the fence is the host driver's to tell: its slot says
 * "ask" (until the ICD resets it). */
void gpud_queue_fence_ask(struct gpud_object *fence);
/* A fence whose last submission carried gpud's fence in its place, the
 * page answering for it: where the host's word on it counts again (a wait
 * or a status the host answers, the fence leaving the page), an empty
 * submission with it on that queue, after everything before it. */
void gpud_queue_fence_settle(struct gpud_object *fence);
void gpud_queue_device_lost(struct gpud_object *device);
/* What completed is on the page now: before a wait answered by the host
 * (idle, fences, semaphores) replies, so that the application never sees a
 * fence unsignalled on the page after the host said its work is done. */
void gpud_queue_publish(struct gpud_object *device);
/* Fences and timeline semaphores a wait through the daemon found signalled
 * (the host's word, before the tracker's): on the page before it replies. */
void gpud_queue_fences_signalled(struct gpud_object *device, struct gpud_object *const *fences,
                                 uint32_t n);
void gpud_queue_semaphores_reached(struct gpud_object *device, struct gpud_object *const *sems,
                                   uint32_t n);
/* A timeline semaphore destroyed, or asked about from now on (ask); one the
 * host signalled, or said it has reached, value. */
void gpud_queue_semaphore_gone(struct gpud_object *semaphore, bool ask);
void gpud_queue_semaphore_signalled(struct gpud_object *semaphore, uint64_t value);
/* Before the host destroys a semaphore: true, it may now; false, the queue
 * that last waited on it may still hold it, and the host's destroy is left
 * to gpud_semaphores_reap, once that queue let go of it (a marker submitted
 * after its work signalled: gpud_queue_marker says why).  A device's
 * semaphores so left are destroyed as their markers signal (all: at the
 * device's end, waiting for each a while). */
bool gpud_semaphore_settle(struct gpud_context *ctx, struct gpud_object *semaphore);
void gpud_semaphores_reap(struct gpud_context *ctx, struct gpud_object *device, bool all);
/* Copies the worker makes itself instead of the host: where the queue's
 * device has nothing in flight (and no completions are held back),
 * run(data), then the queue counts it submitted and complete, busy and at
 * work for the time it took and more_ns more, and the application's fence
 * (tracked on the page, or none) is raised there.  submission: it is one
 * the ICD counts (the page's `settled`).  False, with nothing run:
 * something is in flight, or run() said no. */
bool gpud_queue_run_idle(struct gpud_object *queue, struct gpud_object *app_fence, bool submission,
                         uint64_t more_ns, bool (*run)(void *data), void *data);
/* Copies the ICD made or sent, done otherwise (by the ICD, or by the
 * worker on the GPU and waited for): the same counts, for ns. */
void gpud_queue_ran(struct gpud_object *queue, struct gpud_object *app_fence, bool submission,
                    uint64_t ns);
/* A command buffer of the worker's own (copies the ICD sent, written on the
 * GPU) submitted to the queue as one of its submissions, tracked as the
 * application's are: app_fence (tracked on the page, or NULL) is raised
 * there when it is done; counted: the ICD counts it among its submissions
 * (the page's `settled`).  The command buffer must end in a barrier of all
 * memory: later submissions to the same queue see its writes through it;
 * those to other queues wait for it (gpud_queue_own_wait), and so does every
 * other command that could see them (gpud_queue_own_settle).  VK_SUCCESS:
 * on its way, *ret_seq its number on the queue (gpud_queue_done);
 * VK_NOT_READY: it cannot be tracked, nothing went; else the host's error. */
VkResult gpud_queue_submit_own(struct gpud_call *call, struct gpud_object *queue,
                               VkCommandBuffer cb, struct gpud_object *app_fence, bool counted,
                               uint64_t *ret_seq);
bool gpud_queue_done(struct gpud_object *queue, uint64_t seq);
/* A marker: an empty submission with a fence of its own on the queue, after
 * everything the queue has (*ret_through: the queue's host_submits then);
 * VK_NULL_HANDLE when none could be submitted.  Once it signals, the host
 * has let go of everything submitted before it.  Mesa's runtime, where it
 * submits from a thread of its own (lavapipe's queue, once a submission
 * waits for a value not yet signalled), lets go of a submission's wait
 * semaphores on that thread after the submission's fence may have
 * signalled, and lavapipe's vkDeviceWaitIdle does not wait for that
 * thread: what a submission waited on is destroyed on the host only after
 * a marker behind it signalled (gpud_queue_settled records it). */
VkFence gpud_queue_marker(struct gpud_object *queue, uint64_t *ret_through);
void gpud_queue_settled(struct gpud_object *queue, uint64_t through);
/* A marker waited for, at most budget_ns.  False: not signalled in time
 * (the fence is then left to the device), or the device is lost. */
bool gpud_queue_settle(struct gpud_object *queue, uint64_t budget_ns);
/* Waits until the worker's own submissions on the device's queues but
 * except's (NULL: all) are done (or the device lost, or the client gone). */
void gpud_queue_own_wait(struct gpud_object *device, const struct gpud_object *except);
/* The same on every device of the context, by its decoding thread, before
 * a command that could see what they write: every command but those the
 * generator lists (gpud_gen_own_unaffected: submissions, which wait as they
 * must, those that run beside replay lanes, those of the application's
 * command buffers, descriptor sets and fences). */
void gpud_queue_own_settle(struct gpud_context *ctx);
/* An event or a query pool destroyed (before the host destroys it: the
 * tracker reads it). */
void gpud_queue_event_gone(struct gpud_object *event);
void gpud_queue_query_pool_gone(struct gpud_object *pool);


/* A device is lost (nobody waited for the result of what failed: an
 * asynchronous command, or the host said so): every later call on it says
 * so, the completion page too (these implement wire_gpud.h). */
void gpud_call_async_error(struct gpud_call *call, VkResult result);
void gpud_call_host_lost(struct gpud_call *call);
