/* SPDX-License-Identifier: MIT */
/*
 * Queues: a queue handle is fetched once and kept; its submissions (those
 * the ICD makes itself: icd_upload.c), its waits for idle on the
 * completion page, its checkpoints.
 */
#include "icd.h"

#include <stdlib.h>

#include "util_trace.h"

static VkQueue
get_queue(VkDevice _device, uint32_t family, uint32_t index, VkDeviceQueueCreateFlags flags,
          const VkDeviceQueueInfo2 *info)
{
   struct icd_device *dev = icd_device_from_handle(_device);
   pthread_mutex_lock(&dev->mutex);
   for (struct icd_queue *q = dev->queues; q; q = q->next) {
      if (q->family == family && q->index == index && q->flags == flags) {
         pthread_mutex_unlock(&dev->mutex);
         return (VkQueue)q;
      }
   }
   VkQueue queue = VK_NULL_HANDLE;
   if (info)
      icd_gen_vkGetDeviceQueue2(_device, info, &queue);
   else
      icd_gen_vkGetDeviceQueue(_device, family, index, &queue);
   if (queue) {
      struct icd_queue *q = icd_queue_from_handle(queue);
      q->family = family;
      q->index = index;
      q->flags = flags;
      q->next = dev->queues;
      dev->queues = q;
   }
   pthread_mutex_unlock(&dev->mutex);
   return queue;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue(VkDevice device, uint32_t queueFamilyIndex, uint32_t queueIndex,
                     VkQueue *pQueue)
{
   *pQueue = get_queue(device, queueFamilyIndex, queueIndex, 0, NULL);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetDeviceQueue2(VkDevice device, const VkDeviceQueueInfo2 *pQueueInfo, VkQueue *pQueue)
{
   *pQueue = get_queue(device, pQueueInfo->queueFamilyIndex, pQueueInfo->queueIndex,
                       pQueueInfo->flags, pQueueInfo);
}

/* ---- waiting for idle, in the application --------------------------------
 *
 * An empty submission with a fence signals once everything submitted to the
 * queue before it has completed: each queue has a fence of its own for
 * that, on the completion page, so waiting for idle sends two asynchronous
 * commands and waits in this process like vkWaitForFences (a dead daemon
 * wakes it with VK_ERROR_DEVICE_LOST).  Without a slot on the page the
 * daemon waits. */

/* The queue's idle fence, reset and submitted; VK_NULL_HANDLE when the
 * daemon must be asked. */
VkFence
icd_queue_idle_fence(struct icd_queue *q)
{
   VkDevice device = (VkDevice)q->device;
   if (!q->device->completion)
      return VK_NULL_HANDLE;
   if (!q->idle_fence) {
      const VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VkFence f = VK_NULL_HANDLE;
      if (icd_vkCreateFence(device, &info, NULL, &f) != VK_SUCCESS)
         return VK_NULL_HANDLE;
      if (!(icd_fence_from_handle(f))->device) {
         icd_vkDestroyFence(device, f, NULL); /* no slot: it would be asked about */
         return VK_NULL_HANDLE;
      }
      q->idle_fence = f;
   } else if (icd_vkResetFences(device, 1, &q->idle_fence) != VK_SUCCESS) {
      return VK_NULL_HANDLE;
   }
   if (icd_vkQueueSubmit((VkQueue)q, 0, NULL, q->idle_fence) != VK_SUCCESS)
      return VK_NULL_HANDLE;
   return q->idle_fence;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueueWaitIdle(VkQueue queue)
{
   struct icd_queue *q = icd_queue_from_handle(queue);
   VkFence f = icd_queue_idle_fence(q);
   if (!f)
      return icd_gen_vkQueueWaitIdle(queue);
   return icd_vkWaitForFences((VkDevice)q->device, 1, &f, VK_TRUE, UINT64_MAX);
}

#define MAX_UPLOAD_CBS 8u

/* A submission seen as plain (command buffers alone, no semaphores, no
 * more than MAX_UPLOAD_CBS) so far, and its command buffers. */
struct plain_submit {
   struct icd_command_buffer *cbs[MAX_UPLOAD_CBS];
   uint32_t n;
   bool plain;
};

static void
plain_init(struct plain_submit *p, uint32_t submit_count, VkFence fence)
{
   p->n = 0;
   p->plain = submit_count > 0 || fence;
}

/* A batch of count command buffers, plain itself where plain: whether
 * the submission still is, with room for them. */
static bool
plain_batch(struct plain_submit *p, bool plain, uint32_t count)
{
   p->plain &= plain && count <= MAX_UPLOAD_CBS - p->n;
   return p->plain;
}

/* A plain submission whose command buffers hold copies the ICD makes
 * itself is answered here (icd_upload_submit): true, *r its result; else
 * it counts as one the daemon runs, and the caller sends the recordings
 * held for it first (icd_cmd_buffer_release). */
static bool
answered_here(struct icd_queue *q, const struct plain_submit *p, VkFence fence, VkResult *r)
{
   util_trace(UTIL_TRACE_SUBMIT, p->n);
   if (p->plain && icd_upload_submit(q, p->cbs, p->n, fence, r)) {
      util_trace(UTIL_TRACE_SUBMITTED, 1);
      return true;
   }
   atomic_fetch_add(&q->device->submits, 1);
   return false;
}

/* What the daemon answered a submission, traced. */
static VkResult
sent(VkResult r)
{
   util_trace(UTIL_TRACE_SUBMITTED, 0);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueueSubmit(VkQueue queue, uint32_t submitCount, const VkSubmitInfo *pSubmits,
                  VkFence fence)
{
   struct plain_submit p;
   plain_init(&p, submitCount, fence);
   for (uint32_t i = 0; i < submitCount && p.plain; i++) {
      const VkSubmitInfo *s = &pSubmits[i];
      /* a chain of timeline values for no semaphores is as none */
      bool plain = !s->waitSemaphoreCount && !s->signalSemaphoreCount;
      for (const VkBaseInStructure *c = s->pNext; c; c = c->pNext)
         plain &= c->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
      if (plain_batch(&p, plain, s->commandBufferCount)) {
         for (uint32_t k = 0; k < s->commandBufferCount; k++)
            p.cbs[p.n++] = icd_command_buffer_from_handle(s->pCommandBuffers[k]);
      }
   }
   VkResult r;
   if (answered_here(icd_queue_from_handle(queue), &p, fence, &r))
      return r;
   for (uint32_t i = 0; i < submitCount; i++) {
      for (uint32_t k = 0; k < pSubmits[i].commandBufferCount; k++)
         icd_cmd_buffer_release(icd_command_buffer_from_handle(pSubmits[i].pCommandBuffers[k]));
   }
   return sent(icd_gen_vkQueueSubmit(queue, submitCount, pSubmits, fence));
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueueSubmit2(VkQueue queue, uint32_t submitCount, const VkSubmitInfo2 *pSubmits,
                   VkFence fence)
{
   struct plain_submit p;
   plain_init(&p, submitCount, fence);
   for (uint32_t i = 0; i < submitCount && p.plain; i++) {
      const VkSubmitInfo2 *s = &pSubmits[i];
      bool plain = !s->pNext && !s->flags && !s->waitSemaphoreInfoCount &&
                   !s->signalSemaphoreInfoCount;
      for (uint32_t k = 0; k < s->commandBufferInfoCount && plain; k++)
         plain = !s->pCommandBufferInfos[k].pNext && s->pCommandBufferInfos[k].deviceMask <= 1;
      if (plain_batch(&p, plain, s->commandBufferInfoCount)) {
         for (uint32_t k = 0; k < s->commandBufferInfoCount; k++) {
            VkCommandBuffer cb = s->pCommandBufferInfos[k].commandBuffer;
            p.cbs[p.n++] = icd_command_buffer_from_handle(cb);
         }
      }
   }
   VkResult r;
   if (answered_here(icd_queue_from_handle(queue), &p, fence, &r))
      return r;
   for (uint32_t i = 0; i < submitCount; i++) {
      for (uint32_t k = 0; k < pSubmits[i].commandBufferInfoCount; k++)
         icd_cmd_buffer_release(
            icd_command_buffer_from_handle(pSubmits[i].pCommandBufferInfos[k].commandBuffer));
   }
   return sent(icd_gen_vkQueueSubmit2(queue, submitCount, pSubmits, fence));
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkQueueBindSparse(VkQueue queue, uint32_t bindInfoCount, const VkBindSparseInfo *pBindInfo,
                      VkFence fence)
{
   atomic_fetch_add(&(icd_queue_from_handle(queue))->device->submits, 1);
   return icd_gen_vkQueueBindSparse(queue, bindInfoCount, pBindInfo, fence);
}

#ifdef WIRE_HAS_vkCmdSetCheckpointGPUD
/* VK_NV_device_diagnostic_checkpoints: the markers come back as the
 * pointers they were (icd_cmd_buffer.c). */
/* Into VkCheckpointDataNV (stages2 false) or VkCheckpointData2NV. */
static void
checkpoint_data(VkQueue queue, bool stages2, uint32_t *count, void *data)
{
   if (!data) {
      icd_gen_vkGetQueueCheckpointDataGPUD(queue, stages2, count, NULL, NULL);
      return;
   }
   /* (a queue holds far fewer checkpoints than the wire's most) */
   uint32_t n = *count < WIRE_MAX_OUTPUT_ELEMENTS ? *count : WIRE_MAX_OUTPUT_ELEMENTS;
   uint64_t *stages = calloc(n ? n : 1, sizeof(*stages));
   uint64_t *markers = calloc(n ? n : 1, sizeof(*markers));
   if (!stages || !markers) {
      *count = 0;
   } else {
      icd_gen_vkGetQueueCheckpointDataGPUD(queue, stages2, &n, stages, markers);
      for (uint32_t i = 0; i < n; i++) {
         if (stages2) {
            VkCheckpointData2NV *d = &((VkCheckpointData2NV *)data)[i];
            d->stage = stages[i];
            d->pCheckpointMarker = (void *)(uintptr_t)markers[i];
         } else {
            VkCheckpointDataNV *d = &((VkCheckpointDataNV *)data)[i];
            d->stage = (VkPipelineStageFlagBits)stages[i];
            d->pCheckpointMarker = (void *)(uintptr_t)markers[i];
         }
      }
      *count = n;
   }
   free(stages);
   free(markers);
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetQueueCheckpointDataNV(VkQueue queue, uint32_t *pCheckpointDataCount,
                               VkCheckpointDataNV *pCheckpointData)
{
   checkpoint_data(queue, false, pCheckpointDataCount, pCheckpointData);
}

#ifdef VK_KHR_synchronization2
VKAPI_ATTR void VKAPI_CALL
icd_vkGetQueueCheckpointData2NV(VkQueue queue, uint32_t *pCheckpointDataCount,
                                VkCheckpointData2NV *pCheckpointData)
{
   checkpoint_data(queue, true, pCheckpointDataCount, pCheckpointData);
}
#endif
#endif
