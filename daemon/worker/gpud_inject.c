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
