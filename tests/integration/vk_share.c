/* SPDX-License-Identifier: MIT */
/*
 * vk_share: the two kinds of clients that share a GPU, for the fair-share
 * test and benchmark (tests/integration/share_test.py, bench/share_bench.py).
 *
 *   vk_share calibrate [--job-ms MS] [--groups G]
 *               prints "rounds R": the rounds of the hash (compute.comp)
 *               that make one dispatch of G workgroups take about MS ms
 *   vk_share greedy --rounds R [--groups G] [--in-flight K] [--seconds S]
 *               [--until FILE] [--dispatches D]
 *               submissions of one such dispatch back to back, K in flight,
 *               for S seconds or until FILE exists: prints "READY" once
 *               going, then "greedy jobs J seconds T"; with D, each job's
 *               rounds are spread over D dispatches in its command buffer,
 *               one after the other (a barrier between), as a compute
 *               framework's job is
 *   vk_share interactive [--rounds R] [--groups G] [--fps F] [--seconds S]
 *               a frame F times a second: a small dispatch submitted, then
 *               waited for; prints "READY" once going, then "interactive
 *               frames N p50_ms A p99_ms B max_ms C": the time from each
 *               frame's submit to the end of its wait
 *
 * The last job of each command buffer is checked on the CPU at the end (every
 * element, or a spread of them for long jobs), so a wrong answer fails the
 * program.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vkt_common.h"

#include "compute_comp_spv.h"

#define MAX_IN_FLIGHT 8

struct params {
   uint32_t count;
   uint32_t rounds;
   uint32_t seed;
};

struct job {
   struct vkt_buffer out;
   VkDescriptorSet set;
   VkCommandBuffer cmd;
   VkFence fence;
   struct params p;
   bool pending;
};

static struct {
   struct vkt_context ctx;
   struct vkt_buffer in;
   VkDescriptorSetLayout set_layout;
   VkDescriptorPool pool;
   VkPipelineLayout layout;
   VkPipeline pipeline;
   uint32_t count;
   uint32_t dispatches; /* a job's, one after the other */
   struct job jobs[MAX_IN_FLIGHT];
   unsigned n_jobs;
} g;

static void
setup(const char *device, uint32_t groups, unsigned n_jobs)
{
   vkt_context_init(&g.ctx, "vk_share", device, 0);
   g.count = groups * 64;
   g.n_jobs = n_jobs;
   const VkDeviceSize size = g.count * sizeof(uint32_t);
   vkt_buffer_create(&g.ctx, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &g.in);
   for (uint32_t i = 0; i < g.count; i++)
      ((uint32_t *)g.in.map)[i] = i * 7u + 3u;
   vkt_buffer_flush(&g.ctx, &g.in);
   const VkDescriptorSetLayoutBinding bindings[] = {
      {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
      {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
   };
   const VkDescriptorSetLayoutCreateInfo sli = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 2,
      .pBindings = bindings,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(g.ctx.device, &sli, NULL, &g.set_layout));
   const VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * MAX_IN_FLIGHT};
   const VkDescriptorPoolCreateInfo pi = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = MAX_IN_FLIGHT,
      .poolSizeCount = 1,
      .pPoolSizes = &ps,
   };
   VKT_CHECK(vkCreateDescriptorPool(g.ctx.device, &pi, NULL, &g.pool));
   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(struct params)};
   const VkPipelineLayoutCreateInfo li = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &g.set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(g.ctx.device, &li, NULL, &g.layout));
   VkShaderModule module = vkt_shader_module(&g.ctx, compute_comp_spv, sizeof(compute_comp_spv));
   const VkComputePipelineCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main"},
      .layout = g.layout,
   };
   VKT_CHECK(vkCreateComputePipelines(g.ctx.device, VK_NULL_HANDLE, 1, &ci, NULL, &g.pipeline));
   vkDestroyShaderModule(g.ctx.device, module, NULL);
   for (unsigned j = 0; j < n_jobs; j++) {
      struct job *job = &g.jobs[j];
      vkt_buffer_create(&g.ctx, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &job->out);
      const VkDescriptorSetAllocateInfo ai = {
         .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
         .descriptorPool = g.pool,
         .descriptorSetCount = 1,
         .pSetLayouts = &g.set_layout,
      };
      VKT_CHECK(vkAllocateDescriptorSets(g.ctx.device, &ai, &job->set));
      const VkBuffer set_buffers[] = {g.in.buffer, job->out.buffer};
      vkt_write_buffers(&g.ctx, job->set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, set_buffers,
                        VKT_ARRAY_SIZE(set_buffers));
      const VkCommandBufferAllocateInfo cai = {
         .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
         .commandPool = g.ctx.cmd_pool,
         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
         .commandBufferCount = 1,
      };
      VKT_CHECK(vkAllocateCommandBuffers(g.ctx.device, &cai, &job->cmd));
      const VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VKT_CHECK(vkCreateFence(g.ctx.device, &fi, NULL, &job->fence));
   }
}

/* Records and submits job j with these rounds. */
static void
submit(unsigned j, uint32_t rounds, uint32_t seed)
{
   struct job *job = &g.jobs[j];
   job->p = (struct params){.count = g.count, .rounds = rounds, .seed = seed};
   VKT_CHECK(vkResetCommandBuffer(job->cmd, 0));
   const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
   VKT_CHECK(vkBeginCommandBuffer(job->cmd, &bi));
   vkCmdBindPipeline(job->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g.pipeline);
   vkCmdBindDescriptorSets(job->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g.layout, 0, 1, &job->set,
                           0, NULL);
   vkCmdPushConstants(job->cmd, g.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(job->p),
                      &job->p);
   for (uint32_t i = 0; i < g.dispatches; i++) {
      if (i) {
         /* each writes what the last wrote: one after the other */
         const VkMemoryBarrier mb = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
         };
         vkCmdPipelineBarrier(job->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
      }
      vkCmdDispatch(job->cmd, (g.count + 63) / 64, 1, 1);
   }
   VKT_CHECK(vkEndCommandBuffer(job->cmd));
   VKT_CHECK(vkResetFences(g.ctx.device, 1, &job->fence));
   const VkSubmitInfo si = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &job->cmd,
   };
   VKT_CHECK(vkQueueSubmit(g.ctx.queue, 1, &si, job->fence));
   job->pending = true;
}

static void
wait_job(unsigned j)
{
   VKT_CHECK(vkWaitForFences(g.ctx.device, 1, &g.jobs[j].fence, VK_TRUE, 60ull * 1000000000ull));
   g.jobs[j].pending = false;
}

/* A done job's results: every element, or as many as the CPU recomputes
 * in a moment (a long job's hash takes the CPU far longer than the GPU),
 * spread over the buffer. */
static void
check_job(unsigned j)
{
   struct job *job = &g.jobs[j];
   vkt_buffer_invalidate(&g.ctx, &job->out);
   const uint32_t *in = g.in.map, *out = job->out.map;
   uint64_t n = 50000000ull / (job->p.rounds ? job->p.rounds : 1);
   if (n < 16)
      n = 16;
   uint32_t step = n >= g.count ? 1 : (uint32_t)(g.count / n);
   for (uint32_t i = 0; i < g.count; i += step) {
      uint32_t want = vkt_compute_expected(i, in[i], job->p.rounds, job->p.seed);
      if (out[i] != want)
         vkt_fail("job %u: element %u is %08x, expected %08x", j, i, out[i], want);
   }
}

static double
now_s(void)
{
   return (double)vkt_now_ns() / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
   double x = *(const double *)a, y = *(const double *)b;
   return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
   vkt_set_prog("vk_share");
   if (argc < 2) {
   usage:
      fprintf(stderr, "usage: vk_share calibrate|greedy|interactive [--device NAME] "
                      "[--rounds R] [--groups G] [--job-ms MS] [--in-flight K] [--fps F] "
                      "[--seconds S] [--until FILE] [--dispatches D]\n");
      return 2;
   }
   const char *mode = argv[1], *device = NULL, *until = NULL;
   uint64_t rounds = 0, groups = 64, job_ms = 20, in_flight = 2, fps = 60, dispatches = 1;
   double seconds = 5;
   for (int i = 2; i < argc; i++) {
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!v)
         goto usage;
      if (!strcmp(argv[i], "--device"))
         device = v;
      else if (!strcmp(argv[i], "--rounds"))
         rounds = vkt_parse_u64(argv[i], v);
      else if (!strcmp(argv[i], "--groups"))
         groups = vkt_parse_u64(argv[i], v);
      else if (!strcmp(argv[i], "--job-ms"))
         job_ms = vkt_parse_u64(argv[i], v);
      else if (!strcmp(argv[i], "--in-flight"))
         in_flight = vkt_parse_u64(argv[i], v);
      else if (!strcmp(argv[i], "--fps"))
         fps = vkt_parse_u64(argv[i], v);
      else if (!strcmp(argv[i], "--seconds"))
         seconds = strtod(v, NULL);
      else if (!strcmp(argv[i], "--until"))
         until = v;
      else if (!strcmp(argv[i], "--dispatches"))
         dispatches = vkt_parse_u64(argv[i], v);
      else
         goto usage;
      i++;
   }
   if (!groups || groups > 65535 || !in_flight || in_flight > MAX_IN_FLIGHT || !fps ||
       !(seconds > 0) || !dispatches || dispatches > 4096)
      goto usage;
   g.dispatches = 1;

   if (!strcmp(mode, "calibrate")) {
      setup(device, (uint32_t)groups, 1);
      /* (the first job pays for the pipeline's compilation) */
      submit(0, 1, 1);
      wait_job(0);
      /* double the rounds until a job takes half the aim, then scale: the
       * cost of a submission and its wait (a millisecond or more under
       * AddressSanitizer) is then a small part of what is scaled */
      uint32_t r = 16;
      double t = 0;
      for (;;) {
         /* (the fastest of three: one job can be slow) */
         t = 1e9;
         for (unsigned k = 0; k < 3; k++) {
            double t0 = now_s();
            submit(0, r, 1);
            wait_job(0);
            double took = now_s() - t0;
            if (took < t)
               t = took;
         }
         if (t * 1000.0 >= (double)job_ms / 2.0 || r >= (1u << 30))
            break;
         r *= 2;
      }
      /* the median of five at those rounds: one job can be slow */
      double ts[5];
      for (unsigned k = 0; k < 5; k++) {
         double t0 = now_s();
         submit(0, r, 1);
         wait_job(0);
         ts[k] = now_s() - t0;
      }
      qsort(ts, 5, sizeof(double), cmp_double);
      t = ts[2];
      double want = (double)r * (double)job_ms / (t * 1000.0);
      printf("rounds %.0f\n", want < 1 ? 1 : want);
      vkt_context_finish(&g.ctx);
      return 0;
   }
   if (!rounds)
      rounds = !strcmp(mode, "interactive") ? 64 : 4096;
   if (!strcmp(mode, "greedy")) {
      /* the job's rounds spread over its dispatches */
      g.dispatches = (uint32_t)dispatches;
      rounds = rounds / dispatches ? rounds / dispatches : 1;
      setup(device, (uint32_t)groups, (unsigned)in_flight);
      for (unsigned j = 0; j < in_flight; j++)
         submit(j, (uint32_t)rounds, j + 1);
      printf("READY\n");
      fflush(stdout);
      double t0 = now_s();
      uint64_t jobs = 0;
      for (unsigned j = 0;; j = (j + 1) % in_flight) {
         wait_job(j);
         jobs++;
         double t = now_s() - t0;
         if (until ? access(until, F_OK) == 0 : t >= seconds) {
            for (unsigned k = 0; k < in_flight; k++) {
               if (g.jobs[k].pending)
                  wait_job(k);
               check_job(k);
            }
            printf("greedy jobs %llu seconds %.3f\n", (unsigned long long)jobs, t);
            break;
         }
         submit(j, (uint32_t)rounds, (uint32_t)jobs + 1);
      }
   } else if (!strcmp(mode, "interactive")) {
      setup(device, (uint32_t)groups, 1);
      size_t cap = (size_t)(seconds * (double)fps) + 16, n = 0;
      double *lat = calloc(cap, sizeof(double));
      if (!lat)
         vkt_fail("out of memory");
      printf("READY\n");
      fflush(stdout);
      const double period = 1.0 / (double)fps;
      double t0 = now_s(), next = t0;
      while (n < cap) {
         double t = now_s();
         if (until ? access(until, F_OK) == 0 : t - t0 >= seconds)
            break;
         submit(0, (uint32_t)rounds, (uint32_t)n + 1);
         wait_job(0);
         lat[n++] = (now_s() - t) * 1000.0;
         next += period;
         double sleep_s = next - now_s();
         if (sleep_s > 0) {
            struct timespec ts = {(time_t)sleep_s, (long)((sleep_s - (double)(time_t)sleep_s) * 1e9)};
            nanosleep(&ts, NULL);
         } else {
            next = now_s(); /* late: no catching up */
         }
      }
      check_job(0);
      qsort(lat, n, sizeof(double), cmp_double);
      printf("interactive frames %zu p50_ms %.3f p99_ms %.3f max_ms %.3f\n", n,
             n ? lat[n / 2] : 0.0, n ? lat[(size_t)((double)(n - 1) * 0.99)] : 0.0,
             n ? lat[n - 1] : 0.0);
      free(lat);
   } else {
      goto usage;
   }
   for (unsigned j = 0; j < g.n_jobs; j++) {
      vkDestroyFence(g.ctx.device, g.jobs[j].fence, NULL);
      vkt_buffer_destroy(&g.ctx, &g.jobs[j].out);
   }
   vkDestroyPipeline(g.ctx.device, g.pipeline, NULL);
   vkDestroyPipelineLayout(g.ctx.device, g.layout, NULL);
   vkDestroyDescriptorPool(g.ctx.device, g.pool, NULL);
   vkDestroyDescriptorSetLayout(g.ctx.device, g.set_layout, NULL);
   vkt_buffer_destroy(&g.ctx, &g.in);
   vkt_context_finish(&g.ctx);
   return 0;
}
