/* SPDX-License-Identifier: MIT */
/*
 * Faults gpudctl injects into one client (`gpudctl inject`), so that people
 * can see how their application survives them.  The server writes the
 * request on the client's status page; the worker acts on it here:
 *
 * - lose-device: at the next command, every device the client has is lost
 *   (every later call on it says VK_ERROR_DEVICE_LOST, waits in flight end
 *   with it), as when the GPU faults;
 * - fail-alloc N: the next N vkAllocateMemory fail with
 *   VK_ERROR_OUT_OF_DEVICE_MEMORY;
 * - delay-completions MS: blocking waits (fences, semaphores, queue and
 *   device idle) that succeed are answered MS later (or time out first),
 *   and vkGetFenceStatus says VK_NOT_READY for MS after it first saw the
 *   fence signalled;
 * - crash-worker is the server's: it kills the worker with SIGSEGV.
 *
 * Completions the ICD answers itself are held back too (gpud_hold.c).
 */
#include "gpud_call.h"
#include "gpud_inject.h"
#include "gpud_queue.h"

#include <stdio.h>

#include "util_futex.h"
#include "util_time.h"

void
gpud_inject_before_command(struct gpud_call *call)
{
   struct gpud_context *ctx = call->ctx;
   struct daemon_status_page *page = ctx->status;
   if (!page || !atomic_load_explicit(&page->inject.lose_device, memory_order_relaxed) ||
       !atomic_exchange(&page->inject.lose_device, 0))
      return;
   /* (the completion pages' hold follows: gpud_hold.c) */
   atomic_fetch_add(&page->inject.seq, 1);
   util_futex_wake((_Atomic uint32_t *)&page->inject.seq);
   struct gpud_object *obj;
   unsigned n = 0;
   util_list_for_each(obj, &ctx->object_list, link) {
      if (obj->type == VK_OBJECT_TYPE_DEVICE) {
         obj->lost = true;
         gpud_queue_device_lost(obj);
         n++;
      }
   }
   atomic_store(&ctx->host_lost, true); /* reported here, not again */
   static const char reason[] = "device lost by fault injection (gpudctl inject lose-device)";
   gpud_context_log(ctx, UTIL_LOG_WARNING, "%s: %u device%s", reason, n, n == 1 ? "" : "s");
   gpud_context_tell_lost(ctx, reason);
}

bool
gpud_inject_fail_alloc(struct gpud_context *ctx)
{
   if (!ctx->status)
      return false;
   atomic_uint_least32_t *left = &ctx->status->inject.fail_alloc;
   uint32_t n = atomic_load_explicit(left, memory_order_relaxed);
   while (n && !atomic_compare_exchange_weak(left, &n, n - 1))
      ;
   return n != 0;
}

void
gpud_exec_vkGetFenceStatus(struct gpud_call *call, struct wire_args_vkGetFenceStatus *a)
{
   struct gpud_object *fence =
      gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->fence);
   if (fence && atomic_load(&fence->fence_cpu_signaled)) {
      a->ret = VK_SUCCESS; /* signalled by the worker's own copies */
      return;
   }
   gpud_queue_fence_settle(fence);
   gpud_gen_exec_vkGetFenceStatus(call, a);
   uint64_t delay = gpud_context_inject_delay_ns(call->ctx);
   if (a->ret == VK_SUCCESS && fence && !delay) {
      /* the host's word on the page before the application hears it */
      gpud_queue_publish(call->device);
      gpud_queue_fences_signalled(call->device, &fence, 1);
   }
   if (a->ret != VK_SUCCESS || !fence)
      return;
   uint64_t now = util_now_ns();
   uint64_t seen = 0;
   atomic_compare_exchange_strong(&fence->signal_seen_ns, &seen, now);
   seen = seen ? seen : now;
   if (delay && now < seen + delay)
      a->ret = VK_NOT_READY;
}

void
gpud_exec_vkResetFences(struct gpud_call *call, struct wire_args_vkResetFences *a)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      struct gpud_object *fence = call->touched[i];
      if (fence && fence->type == VK_OBJECT_TYPE_FENCE) {
         atomic_store(&fence->signal_seen_ns, 0);
         atomic_store(&fence->fence_cpu_signaled, false);
         fence->fence_owed_queue = VK_NULL_HANDLE; /* unsignalled all the same */
         /* the ICD counted this reset too (the completion page) */
         fence->fence_generation++;
      }
   }
   gpud_gen_exec_vkResetFences(call, a);
}
