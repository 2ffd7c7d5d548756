/* SPDX-License-Identifier: MIT */
/*
 * A queue's GPU time from timestamps (gpud_timing.h).  A slot is two
 * queries and two command buffers recorded once: the first resets the
 * slot's queries and writes a timestamp at the top of the pipe, the second
 * one at the bottom; the submission's own command buffers go between them.
 * Slots are made in blocks as submissions in flight need them, up to
 * TIMING_MAX; the caller (the queue's tracker) serialises every call.
 */
#include "gpud_timing.h"

#include <stdlib.h>
#include <string.h>

#include "gpud_gen.h"
#include "util_env.h"
#include "util_macros.h"

#define TIMING_BLOCK 16u /* slots made at a time */
#define TIMING_MAX 256u  /* slots in all: submissions in flight beyond go untimed */

struct gpud_queue_timing {
   const struct gpud_host_dispatch *disp;
   VkDevice dev;
   uint32_t family;
   VkCommandPool pool;
   VkQueryPool queries; /* 2 a slot */
   uint64_t mask;       /* the family's timestampValidBits */
   double period_ns;    /* a tick */
   VkCommandBuffer cbs[2 * TIMING_MAX];
   unsigned n_slots;              /* made */
   unsigned free_slots[TIMING_MAX];
   unsigned n_free;
   uint64_t last_end;   /* ticks: the end of the last submission read */
};

struct gpud_queue_timing *
gpud_timing_create(const struct gpud_host_dispatch *disp, VkPhysicalDevice physical,
                   VkDevice dev, uint32_t family)
{
   /* GPUD_GPU_TIMING=0: the fence-based busy time alone (to measure what
    * the timestamps cost) */
   if (util_env_off("GPUD_GPU_TIMING"))
      return NULL;
   if (!disp->GetPhysicalDeviceQueueFamilyProperties || !disp->GetPhysicalDeviceProperties ||
       !disp->CreateCommandPool || !disp->AllocateCommandBuffers || !disp->BeginCommandBuffer ||
       !disp->EndCommandBuffer || !disp->CmdResetQueryPool || !disp->CmdWriteTimestamp ||
       !disp->CreateQueryPool || !disp->GetQueryPoolResults || !disp->DestroyQueryPool ||
       !disp->DestroyCommandPool)
      return NULL;
   uint32_t n = 0;
   disp->GetPhysicalDeviceQueueFamilyProperties(physical, &n, NULL);
   if (family >= n)
      return NULL;
   VkQueueFamilyProperties *props = calloc(n, sizeof(*props));
   if (!props)
      return NULL;
   disp->GetPhysicalDeviceQueueFamilyProperties(physical, &n, props);
   VkQueueFamilyProperties fp = props[family];
   free(props);
   /* a reset of the queries needs graphics or compute; the timestamps any
    * family with valid bits */
   if (!fp.timestampValidBits || !(fp.queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)))
      return NULL;
   VkPhysicalDeviceProperties dp;
   disp->GetPhysicalDeviceProperties(physical, &dp);
   if (!(dp.limits.timestampPeriod > 0.0f))
      return NULL;
   struct gpud_queue_timing *tm = calloc(1, sizeof(*tm));
   if (!tm)
      return NULL;
   tm->disp = disp;
   tm->dev = dev;
   tm->family = family;
   tm->mask = fp.timestampValidBits >= 64 ? UINT64_MAX : (1ull << fp.timestampValidBits) - 1;
   tm->period_ns = dp.limits.timestampPeriod;
   const VkCommandPoolCreateInfo pi = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = family,
   };
   const VkQueryPoolCreateInfo qi = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 2 * TIMING_MAX,
   };
   if (disp->CreateCommandPool(dev, &pi, NULL, &tm->pool) != VK_SUCCESS) {
      free(tm);
      return NULL;
   }
   if (disp->CreateQueryPool(dev, &qi, NULL, &tm->queries) != VK_SUCCESS) {
      disp->DestroyCommandPool(dev, tm->pool, NULL);
      free(tm);
      return NULL;
   }
   return tm;
}

void
gpud_timing_destroy(struct gpud_queue_timing *tm)
{
   if (!tm)
      return;
   /* the pool's command buffers go with it */
   tm->disp->DestroyCommandPool(tm->dev, tm->pool, NULL);
   tm->disp->DestroyQueryPool(tm->dev, tm->queries, NULL);
   free(tm);
}

/* Records slot s's two command buffers. */
static bool
record_slot(struct gpud_queue_timing *tm, unsigned s)
{
   const struct gpud_host_dispatch *d = tm->disp;
   const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
   VkCommandBuffer begin = tm->cbs[2 * s], end = tm->cbs[2 * s + 1];
   if (d->BeginCommandBuffer(begin, &bi) != VK_SUCCESS)
      return false;
   d->CmdResetQueryPool(begin, tm->queries, 2 * s, 2);
   d->CmdWriteTimestamp(begin, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, tm->queries, 2 * s);
   if (d->EndCommandBuffer(begin) != VK_SUCCESS || d->BeginCommandBuffer(end, &bi) != VK_SUCCESS)
      return false;
   d->CmdWriteTimestamp(end, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, tm->queries, 2 * s + 1);
   return d->EndCommandBuffer(end) == VK_SUCCESS;
}

/* A block of new slots, free. */
static void
grow(struct gpud_queue_timing *tm)
{
   unsigned n = UTIL_MIN(TIMING_BLOCK, TIMING_MAX - tm->n_slots);
   if (!n)
      return;
   const VkCommandBufferAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = tm->pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 2 * n,
   };
   if (tm->disp->AllocateCommandBuffers(tm->dev, &ai, &tm->cbs[2 * tm->n_slots]) != VK_SUCCESS)
      return;
   unsigned first = tm->n_slots;
   tm->n_slots += n; /* allocated: freed with the pool whatever follows */
   for (unsigned s = first; s < first + n; s++) {
      if (record_slot(tm, s))
         tm->free_slots[tm->n_free++] = s;
   }
}

int
gpud_timing_take(struct gpud_queue_timing *tm, VkCommandBuffer *ret_begin,
                 VkCommandBuffer *ret_end)
{
   if (!tm)
      return -1;
   if (!tm->n_free)
      grow(tm);
   if (!tm->n_free)
      return -1;
   unsigned s = tm->free_slots[--tm->n_free];
   *ret_begin = tm->cbs[2 * s];
   *ret_end = tm->cbs[2 * s + 1];
   return (int)s;
}

void
gpud_timing_drop(struct gpud_queue_timing *tm, int slot)
{
   if (tm && slot >= 0 && (unsigned)slot < tm->n_slots && tm->n_free < TIMING_MAX)
      tm->free_slots[tm->n_free++] = (unsigned)slot;
}

bool
gpud_timing_read(struct gpud_queue_timing *tm, int slot, uint64_t *ret_ns)
{
   if (!tm || slot < 0 || (unsigned)slot >= tm->n_slots)
      return false;
   uint64_t ts[2];
   VkResult r = tm->disp->GetQueryPoolResults(tm->dev, tm->queries, 2 * (uint32_t)slot, 2,
                                              sizeof(ts), ts, sizeof(ts[0]),
                                              VK_QUERY_RESULT_64_BIT);
   gpud_timing_drop(tm, slot);
   if (r != VK_SUCCESS)
      return false;
   uint64_t begin = ts[0] & tm->mask, end = ts[1] & tm->mask;
   uint64_t ticks;
   if (end >= begin) {
      /* from the end of the one before where they overlap */
      uint64_t from = UTIL_MAX(begin, tm->last_end);
      ticks = end > from ? end - from : 0;
      tm->last_end = UTIL_MAX(tm->last_end, end);
   } else {
      ticks = (end - begin) & tm->mask; /* the counter wrapped */
      tm->last_end = end;
   }
   *ret_ns = (uint64_t)((double)ticks * tm->period_ns);
   return true;
}
