/* SPDX-License-Identifier: MIT */
/*
 * vk_record: the life of command buffers, checked by what they compute.
 * Every recorded command is a push constant and a one-invocation dispatch of
 * tests/shaders/record.comp, which adds a value to one slot of a storage
 * buffer; the program adds up on the CPU what every command buffer it
 * submits should add, and compares each slot after the fence.  What was
 * recorded and then reset, freed or re-begun must add nothing; what was
 * submitted twice, twice.
 *
 *   vk_record [--device NAME] [--test NAME]... [--hold]
 *
 * The tests (all by default; each prints "vk_record: NAME: OK: ..."):
 *
 *   long         one command buffer of 20000 commands, submitted twice
 *   rerecord     vkBeginCommandBuffer on an executable buffer resets it
 *   reset        vkResetCommandBuffer in the middle of a recording
 *   pool-reset   vkResetCommandPool (with and without RELEASE_RESOURCES)
 *   free         buffers freed, and a pool destroyed, while recording
 *   one-time     ONE_TIME_SUBMIT buffers recorded again after their submit
 *   simultaneous a SIMULTANEOUS_USE buffer in one submit three times
 *   secondary    secondaries recorded on four threads, run by one primary
 *   threads      four threads record while the main thread submits
 *   mid-create   a buffer and descriptor set made in the middle of a
 *                recording, and used by the rest of it
 *   batches      as llama.cpp runs a graph: one pool reset, then ten of its
 *                buffers recorded and submitted one after the other (the
 *                last with a fence), round after round, the pool trimmed
 *                and buffers freed and allocated again in between, and
 *                every third round one buffer of it alone
 *
 * --hold begins a command buffer and records into it for ever (printing
 * READY after the first 10000 commands): a client to kill in the middle of a
 * recording.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "record_comp_spv.h"

#define SLOTS 1024u
#define THREADS 4u

struct rec {
   struct vkt_context ctx;
   VkDescriptorSetLayout set_layout;
   VkPipelineLayout layout;
   VkPipeline pipeline;
   VkDescriptorPool desc_pool;
   VkDescriptorSet set;
   struct vkt_buffer slots;
};

/* The values to add: a hash of (seed, i), so that no two command buffers
 * add the same thing to the same slots. */
static uint32_t
mix(uint32_t seed, uint32_t i)
{
   uint32_t x = seed * 0x9e3779b9u ^ (i + 0x7f4a7c15u) * 0x85ebca6bu;
   x ^= x >> 16;
   x *= 0x7feb352du;
   x ^= x >> 15;
   x *= 0x846ca68bu;
   x ^= x >> 16;
   return x;
}

/* Sums what record_adds(seed, n) adds, times `times`. */
static void
expect_adds(uint32_t *expect, uint32_t seed, uint32_t n, uint32_t times)
{
   for (uint32_t i = 0; i < n; i++) {
      uint32_t h = mix(seed, i);
      expect[h % SLOTS] += ((h >> 10) & 0xffu) * times;
   }
}

static void
record_bind(const struct rec *r, VkCommandBuffer cb, VkDescriptorSet set)
{
   vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipeline);
   vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 1, &set, 0, NULL);
}

/* n dispatches, each adding one hashed value to one hashed slot. */
static void
record_adds(const struct rec *r, VkCommandBuffer cb, uint32_t seed, uint32_t n)
{
   for (uint32_t i = 0; i < n; i++) {
      uint32_t h = mix(seed, i);
      const uint32_t pc[2] = {h % SLOTS, (h >> 10) & 0xffu};
      vkCmdPushConstants(cb, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
      vkCmdDispatch(cb, 1, 1, 1);
   }
}

static void
begin(VkCommandBuffer cb, VkCommandBufferUsageFlags flags)
{
   const VkCommandBufferBeginInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = flags,
   };
   VKT_CHECK(vkBeginCommandBuffer(cb, &info));
}

/* A primary bound to the slots, with n adds of seed; not ended. */
static void
begin_adds(const struct rec *r, VkCommandBuffer cb, VkCommandBufferUsageFlags flags,
           uint32_t seed, uint32_t n)
{
   begin(cb, flags);
   record_bind(r, cb, r->set);
   record_adds(r, cb, seed, n);
}

static VkCommandPool
pool_create(const struct rec *r, VkCommandPoolCreateFlags flags)
{
   const VkCommandPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = flags,
      .queueFamilyIndex = r->ctx.queue_family,
   };
   VkCommandPool pool;
   VKT_CHECK(vkCreateCommandPool(r->ctx.device, &info, NULL, &pool));
   return pool;
}

static void
cbs_allocate(const struct rec *r, VkCommandPool pool, VkCommandBufferLevel level, uint32_t n,
             VkCommandBuffer *cbs)
{
   const VkCommandBufferAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = level,
      .commandBufferCount = n,
   };
   VKT_CHECK(vkAllocateCommandBuffers(r->ctx.device, &info, cbs));
}

/* Submits the command buffers (one VkSubmitInfo each) and waits. */
static void
submit_wait(const struct rec *r, const VkCommandBuffer *cbs, uint32_t n)
{
   VkSubmitInfo infos[8];
   if (n > VKT_ARRAY_SIZE(infos))
      vkt_fail("submit_wait: %u command buffers", n);
   for (uint32_t i = 0; i < n; i++) {
      infos[i] = (VkSubmitInfo){
         .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
         .commandBufferCount = 1,
         .pCommandBuffers = &cbs[i],
      };
   }
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(r->ctx.device, &fence_info, NULL, &fence));
   VKT_CHECK(vkQueueSubmit(r->ctx.queue, n, infos, fence));
   VKT_CHECK(vkWaitForFences(r->ctx.device, 1, &fence, VK_TRUE, 60ull * 1000000000ull));
   vkDestroyFence(r->ctx.device, fence, NULL);
}

static void
slots_clear(struct rec *r, uint32_t *expect)
{
   memset(r->slots.map, 0, SLOTS * sizeof(uint32_t));
   vkt_buffer_flush(&r->ctx, &r->slots);
   memset(expect, 0, SLOTS * sizeof(uint32_t));
}

/* The slots must hold expect; `what` says after what. */
static void
check_buffer(const struct rec *r, const struct vkt_buffer *buf, const uint32_t *expect,
             const char *test, const char *what)
{
   vkt_buffer_invalidate(&r->ctx, buf);
   const uint32_t *got = buf->map;
   unsigned bad = 0;
   for (uint32_t i = 0; i < SLOTS; i++) {
      if (got[i] != expect[i] && bad++ < 4)
         fprintf(stderr, "vk_record: %s: slot %u is %u, expected %u\n", test, i, got[i],
                 expect[i]);
   }
   if (bad)
      vkt_fail("%s: %u of %u slots wrong %s", test, bad, SLOTS, what);
}

static void
check(const struct rec *r, const uint32_t *expect, const char *test, const char *what)
{
   check_buffer(r, &r->slots, expect, test, what);
}

static void
ok(const char *test, const char *what)
{
   printf("vk_record: %s: OK: %s\n", test, what);
   fflush(stdout);
}

/* ---- the tests ------------------------------------------------------------------ */

static void
test_long(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   begin_adds(r, cb, 0, 1, 20000);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   expect_adds(expect, 1, 20000, 1);
   check(r, expect, "long", "after one submit");
   submit_wait(r, &cb, 1);
   expect_adds(expect, 1, 20000, 1);
   check(r, expect, "long", "after the second submit");
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("long", "20000 commands, submitted twice");
}

static void
test_rerecord(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   for (uint32_t round = 0; round < 4; round++) {
      const uint32_t n = 3000 + round * 1500;
      begin_adds(r, cb, 0, 10 + round, n);
      VKT_CHECK(vkEndCommandBuffer(cb));
      submit_wait(r, &cb, 1);
      expect_adds(expect, 10 + round, n, 1);
      check(r, expect, "rerecord", "after a recording that began on an executable buffer");
   }
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("rerecord", "4 recordings of one command buffer");
}

static void
test_reset(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   /* reset in the middle of a recording, then an empty recording */
   begin_adds(r, cb, 0, 20, 6000);
   VKT_CHECK(vkResetCommandBuffer(cb, 0));
   begin(cb, 0);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   check(r, expect, "reset", "after an empty recording");
   /* reset (releasing resources) in the middle, then a real one */
   begin_adds(r, cb, 0, 21, 6000);
   VKT_CHECK(vkResetCommandBuffer(cb, VK_COMMAND_BUFFER_RESET_RELEASE_RESOURCES_BIT));
   begin_adds(r, cb, 0, 22, 2500);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   expect_adds(expect, 22, 2500, 1);
   check(r, expect, "reset", "after a recording reset half way");
   /* an executable buffer reset and recorded again */
   VKT_CHECK(vkResetCommandBuffer(cb, 0));
   begin_adds(r, cb, 0, 23, 700);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   expect_adds(expect, 23, 700, 1);
   check(r, expect, "reset", "after an executable buffer was reset");
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("reset", "resets during and after recordings");
}

static void
test_pool_reset(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cbs[3];
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 3, cbs);
   slots_clear(r, expect);
   for (uint32_t i = 0; i < 3; i++) {
      begin_adds(r, cbs[i], 0, 30 + i, 4000);
      if (i != 1)
         VKT_CHECK(vkEndCommandBuffer(cbs[i])); /* cbs[1] is still recording */
   }
   VKT_CHECK(vkResetCommandPool(r->ctx.device, pool, 0));
   begin_adds(r, cbs[1], 0, 33, 1200);
   VKT_CHECK(vkEndCommandBuffer(cbs[1]));
   submit_wait(r, &cbs[1], 1);
   expect_adds(expect, 33, 1200, 1);
   check(r, expect, "pool-reset", "after the pool was reset");

   VKT_CHECK(vkResetCommandPool(r->ctx.device, pool, VK_COMMAND_POOL_RESET_RELEASE_RESOURCES_BIT));
   for (uint32_t i = 0; i < 3; i++) {
      begin_adds(r, cbs[i], 0, 40 + i, 900 + 300 * i);
      VKT_CHECK(vkEndCommandBuffer(cbs[i]));
      expect_adds(expect, 40 + i, 900 + 300 * i, 1);
   }
   submit_wait(r, cbs, 3);
   check(r, expect, "pool-reset", "after the pool released its resources");
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("pool-reset", "both kinds of pool reset");
}

static void
test_free(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cbs[2];
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 2, cbs);
   slots_clear(r, expect);
   begin_adds(r, cbs[0], 0, 50, 5000);
   begin_adds(r, cbs[1], 0, 51, 3000);
   vkFreeCommandBuffers(r->ctx.device, pool, 1, &cbs[0]); /* recording */
   VKT_CHECK(vkEndCommandBuffer(cbs[1]));
   VkCommandBuffer fresh;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &fresh);
   begin_adds(r, fresh, 0, 52, 1000);
   VKT_CHECK(vkEndCommandBuffer(fresh));
   const VkCommandBuffer both[2] = {cbs[1], fresh};
   submit_wait(r, both, 2);
   expect_adds(expect, 51, 3000, 1);
   expect_adds(expect, 52, 1000, 1);
   check(r, expect, "free", "after a buffer was freed while recording");

   /* a pool destroyed while two of its buffers record */
   VkCommandPool doomed = pool_create(r, 0);
   VkCommandBuffer d[2];
   cbs_allocate(r, doomed, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 2, d);
   begin_adds(r, d[0], 0, 53, 4000);
   begin_adds(r, d[1], 0, 54, 10);
   vkDestroyCommandPool(r->ctx.device, doomed, NULL);
   submit_wait(r, &cbs[1], 1);
   expect_adds(expect, 51, 3000, 1);
   check(r, expect, "free", "after a pool was destroyed while recording");
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("free", "freed and destroyed in the middle of recordings");
}

static void
test_one_time(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT |
                                          VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   for (uint32_t round = 0; round < 5; round++) {
      begin_adds(r, cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, 60 + round, 800);
      VKT_CHECK(vkEndCommandBuffer(cb));
      submit_wait(r, &cb, 1);
      expect_adds(expect, 60 + round, 800, 1);
      check(r, expect, "one-time", "after a one-time submit");
   }
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("one-time", "5 one-time recordings of one buffer");
}

static void
test_simultaneous(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   begin_adds(r, cb, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, 70, 3000);
   VKT_CHECK(vkEndCommandBuffer(cb));
   const VkCommandBuffer three[3] = {cb, cb, cb};
   submit_wait(r, three, 3);
   expect_adds(expect, 70, 3000, 3);
   check(r, expect, "simultaneous", "after one submit of the buffer three times");
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("simultaneous", "one buffer three times in one submit");
}

/* ---- threads ---------------------------------------------------------------------- */

struct secondary_thread {
   const struct rec *r;
   uint32_t index;
   VkCommandPool pool;
   VkCommandBuffer cbs[2];
};

static void *
secondary_main(void *data)
{
   struct secondary_thread *t = data;
   const struct rec *r = t->r;
   t->pool = pool_create(r, 0);
   cbs_allocate(r, t->pool, VK_COMMAND_BUFFER_LEVEL_SECONDARY, 2, t->cbs);
   const VkCommandBufferInheritanceInfo inherit = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
   };
   for (uint32_t i = 0; i < 2; i++) {
      const VkCommandBufferBeginInfo info = {
         .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
         .pInheritanceInfo = &inherit,
      };
      VKT_CHECK(vkBeginCommandBuffer(t->cbs[i], &info));
      record_bind(r, t->cbs[i], r->set);
      record_adds(r, t->cbs[i], 100 + t->index * 2 + i, 2000);
      VKT_CHECK(vkEndCommandBuffer(t->cbs[i]));
   }
   return NULL;
}

static void
test_secondary(struct rec *r, uint32_t *expect)
{
   struct secondary_thread t[THREADS];
   pthread_t threads[THREADS];
   slots_clear(r, expect);
   for (uint32_t i = 0; i < THREADS; i++) {
      t[i] = (struct secondary_thread){.r = r, .index = i};
      if (pthread_create(&threads[i], NULL, secondary_main, &t[i]))
         vkt_fail("pthread_create failed");
   }
   /* the primary records beside them */
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   begin_adds(r, cb, 0, 90, 1500);
   expect_adds(expect, 90, 1500, 1);
   VkCommandBuffer secondaries[THREADS * 2];
   for (uint32_t i = 0; i < THREADS; i++) {
      pthread_join(threads[i], NULL);
      secondaries[i * 2] = t[i].cbs[0];
      secondaries[i * 2 + 1] = t[i].cbs[1];
      expect_adds(expect, 100 + i * 2, 2000, 1);
      expect_adds(expect, 100 + i * 2 + 1, 2000, 1);
   }
   vkCmdExecuteCommands(cb, THREADS * 2, secondaries);
   /* secondaries leave the state undefined: bind again */
   record_bind(r, cb, r->set);
   record_adds(r, cb, 91, 1500);
   expect_adds(expect, 91, 1500, 1);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   check(r, expect, "secondary", "after a primary ran the threads' secondaries");
   for (uint32_t i = 0; i < THREADS; i++)
      vkDestroyCommandPool(r->ctx.device, t[i].pool, NULL);
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("secondary", "8 secondaries recorded on 4 threads");
}

#define ROUNDS 12u

/* Hand-over between a recording thread and the submitting main thread. */
struct record_thread {
   const struct rec *r;
   uint32_t index;
   VkCommandPool pool;
   VkCommandBuffer cbs[2];
   VkFence fences[2];
   bool submitted[2]; /* the main thread submitted cbs[i] with fences[i] */
   uint32_t ready;    /* rounds recorded */
};

static pthread_mutex_t handover_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handover_cond = PTHREAD_COND_INITIALIZER;

static uint32_t
round_adds(uint32_t index, uint32_t round)
{
   return 500 + ((index * 7 + round * 13) % 11) * 150;
}

static void *
record_main(void *data)
{
   struct record_thread *t = data;
   const struct rec *r = t->r;
   for (uint32_t round = 0; round < ROUNDS; round++) {
      const uint32_t i = round % 2;
      /* the buffer's previous round must be submitted and done */
      pthread_mutex_lock(&handover_mutex);
      while (round >= 2 && !t->submitted[i])
         pthread_cond_wait(&handover_cond, &handover_mutex);
      bool wait = t->submitted[i];
      t->submitted[i] = false;
      pthread_mutex_unlock(&handover_mutex);
      if (wait) {
         VKT_CHECK(vkWaitForFences(r->ctx.device, 1, &t->fences[i], VK_TRUE,
                                   60ull * 1000000000ull));
         VKT_CHECK(vkResetFences(r->ctx.device, 1, &t->fences[i]));
      }
      begin_adds(r, t->cbs[i], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
                 1000 + t->index * ROUNDS + round, round_adds(t->index, round));
      VKT_CHECK(vkEndCommandBuffer(t->cbs[i]));
      pthread_mutex_lock(&handover_mutex);
      t->ready = round + 1;
      pthread_cond_broadcast(&handover_cond);
      pthread_mutex_unlock(&handover_mutex);
   }
   return NULL;
}

static void
test_threads(struct rec *r, uint32_t *expect)
{
   struct record_thread t[THREADS];
   pthread_t threads[THREADS];
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   slots_clear(r, expect);
   for (uint32_t i = 0; i < THREADS; i++) {
      t[i] = (struct record_thread){.r = r, .index = i};
      t[i].pool = pool_create(r, VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT);
      cbs_allocate(r, t[i].pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 2, t[i].cbs);
      for (uint32_t f = 0; f < 2; f++)
         VKT_CHECK(vkCreateFence(r->ctx.device, &fence_info, NULL, &t[i].fences[f]));
      for (uint32_t round = 0; round < ROUNDS; round++)
         expect_adds(expect, 1000 + i * ROUNDS + round, round_adds(i, round), 1);
   }
   for (uint32_t i = 0; i < THREADS; i++) {
      if (pthread_create(&threads[i], NULL, record_main, &t[i]))
         vkt_fail("pthread_create failed");
   }
   /* submit every round of every thread as it becomes ready, while the
    * others record */
   uint32_t submitted[THREADS] = {0};
   uint32_t left = THREADS * ROUNDS;
   pthread_mutex_lock(&handover_mutex);
   while (left) {
      bool any = false;
      for (uint32_t i = 0; i < THREADS; i++) {
         if (submitted[i] == t[i].ready)
            continue;
         const uint32_t b = submitted[i] % 2;
         pthread_mutex_unlock(&handover_mutex);
         const VkSubmitInfo info = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = 1,
            .pCommandBuffers = &t[i].cbs[b],
         };
         VKT_CHECK(vkQueueSubmit(r->ctx.queue, 1, &info, t[i].fences[b]));
         pthread_mutex_lock(&handover_mutex);
         t[i].submitted[b] = true;
         submitted[i]++;
         left--;
         any = true;
         pthread_cond_broadcast(&handover_cond);
      }
      if (!any && left)
         pthread_cond_wait(&handover_cond, &handover_mutex);
   }
   pthread_mutex_unlock(&handover_mutex);
   for (uint32_t i = 0; i < THREADS; i++)
      pthread_join(threads[i], NULL);
   VKT_CHECK(vkQueueWaitIdle(r->ctx.queue));
   check(r, expect, "threads", "after 4 threads recorded 12 rounds each");
   for (uint32_t i = 0; i < THREADS; i++) {
      for (uint32_t f = 0; f < 2; f++)
         vkDestroyFence(r->ctx.device, t[i].fences[f], NULL);
      vkDestroyCommandPool(r->ctx.device, t[i].pool, NULL);
   }
   ok("threads", "48 recordings submitted while others were recorded");
}

static void
test_mid_create(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   slots_clear(r, expect);
   begin_adds(r, cb, 0, 80, 4000);
   expect_adds(expect, 80, 4000, 1);

   /* made while cb records, and used by the rest of the recording */
   struct vkt_buffer other;
   vkt_buffer_create(&r->ctx, SLOTS * sizeof(uint32_t),
                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                     &other);
   memset(other.map, 0, SLOTS * sizeof(uint32_t));
   vkt_buffer_flush(&r->ctx, &other);
   const VkDescriptorSetAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = r->desc_pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &r->set_layout,
   };
   VkDescriptorSet set;
   VKT_CHECK(vkAllocateDescriptorSets(r->ctx.device, &alloc, &set));
   vkt_write_buffers(&r->ctx, set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &other.buffer, 1);

   /* the new buffer: filled, then added to */
   vkCmdFillBuffer(cb, other.buffer, 0, VK_WHOLE_SIZE, 5);
   const VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
   };
   vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        0, 1, &barrier, 0, NULL, 0, NULL);
   record_bind(r, cb, set);
   record_adds(r, cb, 81, 3000);
   record_bind(r, cb, r->set);
   record_adds(r, cb, 82, 2000);
   expect_adds(expect, 82, 2000, 1);
   VKT_CHECK(vkEndCommandBuffer(cb));
   submit_wait(r, &cb, 1);
   check(r, expect, "mid-create", "in the first buffer");
   uint32_t *other_expect = calloc(SLOTS, sizeof(uint32_t));
   if (!other_expect)
      vkt_fail("out of memory");
   for (uint32_t i = 0; i < SLOTS; i++)
      other_expect[i] = 5;
   expect_adds(other_expect, 81, 3000, 1);
   check_buffer(r, &other, other_expect, "mid-create", "in the buffer made during the recording");
   free(other_expect);
   VKT_CHECK(vkFreeDescriptorSets(r->ctx.device, r->desc_pool, 1, &set));
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   vkt_buffer_destroy(&r->ctx, &other);
   ok("mid-create", "objects made in the middle of a recording");
}

/* Records for ever, never ending: the test kills the process. */
static void
hold(struct rec *r)
{
   VkCommandPool pool = pool_create(r, 0);
   VkCommandBuffer cb;
   cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cb);
   begin_adds(r, cb, 0, 7, 10000);
   printf("READY\n");
   fflush(stdout);
   for (uint32_t seed = 8;; seed++) {
      record_adds(r, cb, seed, 10000);
      /* a recording this long would only grow; start it afresh now and
       * then, so that the process keeps a bounded size */
      if (seed % 16 == 0)
         begin_adds(r, cb, 0, seed, 10);
   }
}

/* ---- set-up ----------------------------------------------------------------------- */

static void
rec_init(struct rec *r, const char *device_name)
{
   vkt_context_init(&r->ctx, "vk_record", device_name, 0);
   const VkDevice dev = r->ctx.device;
   vkt_buffer_create(&r->ctx, SLOTS * sizeof(uint32_t), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true,
                     &r->slots);
   const VkDescriptorSetLayoutBinding binding = {
      0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL,
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(dev, &set_layout_info, NULL, &r->set_layout));
   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &r->set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(dev, &layout_info, NULL, &r->layout));
   r->pipeline =
      vkt_compute_pipeline(&r->ctx, record_comp_spv, sizeof(record_comp_spv), r->layout, 0);
   const VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
      .maxSets = 4,
      .poolSizeCount = 1,
      .pPoolSizes = &pool_size,
   };
   VKT_CHECK(vkCreateDescriptorPool(dev, &pool_info, NULL, &r->desc_pool));
   const VkDescriptorSetAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = r->desc_pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &r->set_layout,
   };
   VKT_CHECK(vkAllocateDescriptorSets(dev, &alloc, &r->set));
   vkt_write_buffers(&r->ctx, r->set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &r->slots.buffer, 1);
}

static void
rec_finish(struct rec *r)
{
   const VkDevice dev = r->ctx.device;
   vkDestroyDescriptorPool(dev, r->desc_pool, NULL);
   vkDestroyPipeline(dev, r->pipeline, NULL);
   vkDestroyPipelineLayout(dev, r->layout, NULL);
   vkDestroyDescriptorSetLayout(dev, r->set_layout, NULL);
   vkt_buffer_destroy(&r->ctx, &r->slots);
   vkt_context_finish(&r->ctx);
}

#define BATCHES 10u

static void
test_batches(struct rec *r, uint32_t *expect)
{
   VkCommandPool pool = pool_create(r, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT);
   VkCommandBuffer cbs[BATCHES];
   uint32_t n_cbs = 0;
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fence;
   VKT_CHECK(vkCreateFence(r->ctx.device, &fence_info, NULL, &fence));
   slots_clear(r, expect);
   for (uint32_t round = 0; round < 24; round++) {
      VKT_CHECK(vkResetCommandPool(r->ctx.device, pool, 0));
      if (round == 8)
         vkTrimCommandPool(r->ctx.device, pool, 0);
      if (round == 16) {
         /* three given back, and taken again as the round needs them */
         vkFreeCommandBuffers(r->ctx.device, pool, 3, &cbs[2]);
         cbs[2] = cbs[7];
         cbs[3] = cbs[8];
         cbs[4] = cbs[9];
         n_cbs = 7;
      }
      /* every third round one buffer alone, a different one each time (as
       * llama.cpp stages an upload between two graphs): the pool's next
       * reset has one recording to undo, and the round after re-begins
       * every buffer */
      const bool one = round % 3 == 2 && n_cbs == BATCHES;
      const uint32_t first = one ? (round / 3) % BATCHES : 0;
      const uint32_t last = one ? first : BATCHES - 1;
      for (uint32_t i = first; i <= last; i++) {
         /* one more as a graph needs it, as llama.cpp allocates them */
         if (i == n_cbs)
            cbs_allocate(r, pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1, &cbs[n_cbs++]);
         uint32_t seed = 100 + round * BATCHES + i;
         uint32_t n = 40 + (mix(seed, 7) % 600);
         begin_adds(r, cbs[i], VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, seed, n);
         VKT_CHECK(vkEndCommandBuffer(cbs[i]));
         vkt_submit(&r->ctx, cbs[i], i == last ? fence : VK_NULL_HANDLE);
         expect_adds(expect, seed, n, 1);
      }
      VKT_CHECK(vkWaitForFences(r->ctx.device, 1, &fence, VK_TRUE, 60ull * 1000000000ull));
      VKT_CHECK(vkResetFences(r->ctx.device, 1, &fence));
      check(r, expect, "batches", "after a round of batches");
   }
   vkDestroyFence(r->ctx.device, fence, NULL);
   vkDestroyCommandPool(r->ctx.device, pool, NULL);
   ok("batches", "24 rounds of 10 buffers of one pool (every third round one of them), "
                 "submitted one after the other");
}

static const struct {
   const char *name;
   void (*run)(struct rec *r, uint32_t *expect);
} tests[] = {
   {"long", test_long},
   {"rerecord", test_rerecord},
   {"reset", test_reset},
   {"pool-reset", test_pool_reset},
   {"free", test_free},
   {"one-time", test_one_time},
   {"simultaneous", test_simultaneous},
   {"secondary", test_secondary},
   {"threads", test_threads},
   {"mid-create", test_mid_create},
   {"batches", test_batches},
};

static void
usage(void)
{
   fprintf(stderr, "usage: vk_record [--device NAME] [--test NAME]... [--hold]\ntests:");
   for (size_t i = 0; i < VKT_ARRAY_SIZE(tests); i++)
      fprintf(stderr, " %s", tests[i].name);
   fprintf(stderr, "\n");
   exit(1);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool chosen[VKT_ARRAY_SIZE(tests)] = {false};
   bool any = false, hold_mode = false;

   vkt_set_prog("vk_record");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--test") && i + 1 < argc) {
         size_t t = 0;
         while (t < VKT_ARRAY_SIZE(tests) && strcmp(tests[t].name, argv[i + 1]))
            t++;
         if (t == VKT_ARRAY_SIZE(tests)) {
            fprintf(stderr, "vk_record: no test named '%s'\n", argv[i + 1]);
            usage();
         }
         chosen[t] = any = true;
         i++;
      } else if (!strcmp(argv[i], "--hold")) {
         hold_mode = true;
      } else {
         usage();
      }
   }

   struct rec r = {0};
   rec_init(&r, device_name);
   if (hold_mode)
      hold(&r);
   uint32_t *expect = calloc(SLOTS, sizeof(uint32_t));
   if (!expect)
      vkt_fail("out of memory");
   for (size_t t = 0; t < VKT_ARRAY_SIZE(tests); t++) {
      if (!any || chosen[t])
         tests[t].run(&r, expect);
   }
   free(expect);
   rec_finish(&r);
   return 0;
}
