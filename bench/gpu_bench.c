/* SPDX-License-Identifier: MIT */
/*
 * gpu_bench: the GPU's own work through gpud against the host driver used
 * directly, in one run: the same shaders, dispatches and buffers on both,
 * their time on the GPU read from timestamps.
 *
 * Run with VK_ICD_FILENAMES listing the host driver's manifest and gpud's
 * (bench/run_bench.sh --gpu does that and starts a private daemon): the
 * device whose name contains "gpud" is measured through the daemon, the
 * other directly.
 *
 * Jobs: three compute shaders (bench/shaders/gpu_*.comp), each as one
 * dispatch, as 16 dispatches with a barrier between each two and as 16
 * without, and the ALU-bound one once more at a tenth of the length; and
 * 256 short ALU dispatches with barriers in 16 submissions (a command
 * buffer each, one vkQueueSubmit each, as a compute program submits its
 * graph in batches), the last one fenced, or every one:
 *
 *   alu  an integer hash, `rounds` rounds, its result written once at the
 *        end (a dispatch of 4096 workgroups of 64)
 *   mem  a strided copy with a little arithmetic over 256 MiB (4 MiB on a
 *        CPU device), `passes` times
 *   mix  the same with 24 rounds of the hash on each element
 *
 * Each job is calibrated on the direct driver to take --ms (8) on the GPU,
 * then measured --reps times, the two sides alternated: recorded afresh,
 * submitted and waited for ("first"), then submitted again ("again"). The
 * table gives the medians of the GPU time (timestamps before and after the
 * job) and of the wall time (from the submit, or from the first recorded
 * command, to the end of the wait), and gpud / direct.  Both sides must
 * compute the same bytes.
 *
 *   gpu_bench [--direct-only] [--stats] [--ms N | --fixed N] [--reps N] [--only alu,mem,mix,subs]
 *
 * --fixed N gives every job N rounds (alu) or passes (mem, mix), with no
 * calibration and no warm-up: the same calls on every run, for comparing
 * what two drivers are asked (the hostrec test).
 * --stats prints what each side's driver says of the compiled shaders
 * (VK_KHR_pipeline_executable_properties' statistics: registers, say),
 * with the pipelines made for it.
 * --direct-only measures one device: the host driver's, or gpud's where
 * only gpud's manifest is listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "gpu_alu_comp_spv.h"
#include "gpu_mem_comp_spv.h"
#include "gpu_mix_comp_spv.h"

#define GROUPS 4096
#define MANY 16
#define MIX_ROUNDS 24
#define MEM_ELEMENTS_GPU (64u << 20) /* 256 MiB a buffer */
#define MEM_ELEMENTS_CPU (1u << 20)
#define MAX_REPS 64
#define SUBMITS 16   /* the batched jobs' submissions */
#define BATCHED 256  /* and their dispatches */

struct push {
   uint32_t rounds;
   uint32_t passes;
   uint32_t count;
   uint32_t seed;
};

enum shader { ALU, MEM, MIX, SHADER_COUNT };

static const char *const shader_names[SHADER_COUNT] = {"alu", "mem", "mix"};

struct job {
   enum shader shader;
   uint32_t dispatches;
   bool barriers;
   uint32_t tenths;        /* of --ms */
   uint32_t submits;       /* 0: one */
   bool fence_each;        /* a fence on every submission, not the last alone */
   struct push push;       /* calibrated on the direct driver */
};

/* One device's objects. */
struct side {
   struct vkt_context ctx;
   struct vkt_buffer in, out;
   uint32_t elements;
   VkDescriptorSetLayout set_layout;
   VkDescriptorPool pool;
   VkDescriptorSet set;
   VkPipelineLayout layout;
   VkPipeline pipelines[SHADER_COUNT];
   VkCommandBuffer cmds[SUBMITS];
   VkFence fences[SUBMITS];
   VkQueryPool timestamps;
   bool stats;
};

struct sample {
   uint64_t gpu_first[MAX_REPS], gpu_again[MAX_REPS];
   uint64_t wall_first[MAX_REPS], wall_again[MAX_REPS];
};

static void
side_init(struct side *s, VkInstance instance, VkPhysicalDevice pdev, bool stats)
{
   memset(s, 0, sizeof(*s));
   VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
      .pipelineExecutableInfo = VK_TRUE,
   };
   static const char *const exec_ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
   if (stats && !vkt_device_has_extension(pdev, exec_ext)) {
      printf("gpu_bench: this device has no %s: no statistics\n", exec_ext);
      stats = false;
   }
   s->stats = stats;
   if (stats)
      vkt_context_init_physical_ext(&s->ctx, instance, pdev, 0, &exec_ext, 1, &exec);
   else
      vkt_context_init_physical(&s->ctx, instance, pdev, 0);
   const struct vkt_context *ctx = &s->ctx;
   if (!ctx->timestamp_valid_bits)
      vkt_fail("'%s' writes no timestamps on its queue", ctx->props.deviceName);
   s->elements =
      ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? MEM_ELEMENTS_CPU : MEM_ELEMENTS_GPU;
   const VkDeviceSize size = (VkDeviceSize)s->elements * 4;
   const VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT;
   vkt_buffer_create(ctx, size, usage, false, &s->in);
   vkt_buffer_create(ctx, size, usage, false, &s->out);

   const VkDescriptorSetLayoutBinding bindings[] = {
      {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
      {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 2,
      .pBindings = bindings,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx->device, &set_layout_info, NULL, &s->set_layout));
   s->set = vkt_descriptor_set(ctx, s->set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2, &s->pool);
   const VkBuffer set_buffers[] = {s->in.buffer, s->out.buffer};
   vkt_write_buffers(ctx, s->set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, set_buffers,
                     VKT_ARRAY_SIZE(set_buffers));

   const VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(struct push)};
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &s->set_layout,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
   };
   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &s->layout));
   const struct {
      const uint32_t *code;
      size_t size;
   } code[SHADER_COUNT] = {
      [ALU] = {gpu_alu_comp_spv, sizeof(gpu_alu_comp_spv)},
      [MEM] = {gpu_mem_comp_spv, sizeof(gpu_mem_comp_spv)},
      [MIX] = {gpu_mix_comp_spv, sizeof(gpu_mix_comp_spv)},
   };
   for (uint32_t i = 0; i < SHADER_COUNT; i++) {
      s->pipelines[i] =
         vkt_compute_pipeline(ctx, code[i].code, code[i].size, s->layout,
                              stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0);
   }

   const VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx->cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = SUBMITS,
   };
   VKT_CHECK(vkAllocateCommandBuffers(ctx->device, &alloc, s->cmds));
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   for (uint32_t i = 0; i < SUBMITS; i++)
      VKT_CHECK(vkCreateFence(ctx->device, &fence_info, NULL, &s->fences[i]));
   const VkQueryPoolCreateInfo query_info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 2,
   };
   VKT_CHECK(vkCreateQueryPool(ctx->device, &query_info, NULL, &s->timestamps));

   /* the same input everywhere */
   VkCommandBuffer fill = vkt_cmd_begin(ctx);
   vkCmdFillBuffer(fill, s->in.buffer, 0, VK_WHOLE_SIZE, 0x12345678);
   vkCmdFillBuffer(fill, s->out.buffer, 0, VK_WHOLE_SIZE, 0);
   vkt_cmd_submit_wait(ctx, fill);
}

/* What the driver says of its compiled shaders (their registers, say). */
static void
print_statistics(const struct side *s)
{
   const VkDevice dev = s->ctx.device;
   PFN_vkGetPipelineExecutableStatisticsKHR get_stats =
      (PFN_vkGetPipelineExecutableStatisticsKHR)vkt_device_proc(
         &s->ctx, "vkGetPipelineExecutableStatisticsKHR");
   printf("%s:\n", s->ctx.props.deviceName);
   const VkPhysicalDeviceMemoryProperties *m = &s->ctx.mem_props;
   for (uint32_t i = 0; i < m->memoryTypeCount; i++)
      printf("  memory type %u: flags 0x%x, heap %u (%llu MiB%s)\n", i,
             m->memoryTypes[i].propertyFlags, m->memoryTypes[i].heapIndex,
             (unsigned long long)(m->memoryHeaps[m->memoryTypes[i].heapIndex].size >> 20),
             m->memoryHeaps[m->memoryTypes[i].heapIndex].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
                ? ", device-local" : "");
   VkMemoryRequirements req;
   vkGetBufferMemoryRequirements(dev, s->out.buffer, &req);
   printf("  a storage buffer's memory types: 0x%x\n", req.memoryTypeBits);
   for (uint32_t i = 0; i < SHADER_COUNT; i++) {
      const VkPipelineExecutableInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
         .pipeline = s->pipelines[i],
         .executableIndex = 0,
      };
      VkPipelineExecutableStatisticKHR st[32];
      uint32_t n = VKT_ARRAY_SIZE(st);
      for (uint32_t k = 0; k < n; k++)
         st[k] = (VkPipelineExecutableStatisticKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
      VkResult r = get_stats(dev, &info, &n, st);
      if (r != VK_SUCCESS && r != VK_INCOMPLETE)
         vkt_fail("vkGetPipelineExecutableStatisticsKHR: %s", vkt_result_name(r));
      printf("  %s:", shader_names[i]);
      for (uint32_t k = 0; k < n; k++) {
         switch (st[k].format) {
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
            printf(" %s=%u", st[k].name, st[k].value.b32);
            break;
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
            printf(" %s=%lld", st[k].name, (long long)st[k].value.i64);
            break;
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            printf(" %s=%llu", st[k].name, (unsigned long long)st[k].value.u64);
            break;
         default:
            printf(" %s=%g", st[k].name, st[k].value.f64);
            break;
         }
      }
      printf("\n");
   }
}

static void
side_finish(struct side *s)
{
   const VkDevice dev = s->ctx.device;
   vkDestroyQueryPool(dev, s->timestamps, NULL);
   for (uint32_t i = 0; i < SUBMITS; i++)
      vkDestroyFence(dev, s->fences[i], NULL);
   vkFreeCommandBuffers(dev, s->ctx.cmd_pool, SUBMITS, s->cmds);
   for (uint32_t i = 0; i < SHADER_COUNT; i++)
      vkDestroyPipeline(dev, s->pipelines[i], NULL);
   vkDestroyPipelineLayout(dev, s->layout, NULL);
   vkDestroyDescriptorPool(dev, s->pool, NULL);
   vkDestroyDescriptorSetLayout(dev, s->set_layout, NULL);
   vkt_buffer_destroy(&s->ctx, &s->in);
   vkt_buffer_destroy(&s->ctx, &s->out);
   vkt_context_finish_device(&s->ctx);
}

static uint32_t
job_submits(const struct job *j)
{
   return j->submits ? j->submits : 1;
}

static void
compute_barrier(VkCommandBuffer cmd)
{
   const VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, NULL, 0, NULL);
}

/* The job's dispatches in its command buffers, evenly; each batch after the
 * first waits for the one before (a barrier at its start), as its work
 * would depend on it. */
static void
record(struct side *s, const struct job *j)
{
   const uint32_t n = job_submits(j), per = j->dispatches / n;
   const VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
   for (uint32_t b = 0; b < n; b++) {
      VkCommandBuffer cmd = s->cmds[b];
      VKT_CHECK(vkResetCommandBuffer(cmd, 0));
      VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
      if (b == 0) {
         vkCmdResetQueryPool(cmd, s->timestamps, 0, 2);
         vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->timestamps, 0);
      } else if (j->barriers) {
         compute_barrier(cmd);
      }
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipelines[j->shader]);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout, 0, 1, &s->set,
                              0, NULL);
      for (uint32_t i = b * per; i < (b + 1) * per; i++) {
         struct push p = j->push;
         p.seed = i;
         vkCmdPushConstants(cmd, s->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
         vkCmdDispatch(cmd, GROUPS, 1, 1);
         if (j->barriers && i + 1 < (b + 1) * per)
            compute_barrier(cmd);
      }
      if (b + 1 == n)
         vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->timestamps, 1);
      VKT_CHECK(vkEndCommandBuffer(cmd));
   }
}

/* Submits the recorded job, a vkQueueSubmit a command buffer, and waits:
 * the wall time from the first submit. */
static uint64_t
submit_wait(struct side *s, const struct job *j)
{
   const uint32_t n = job_submits(j);
   uint64_t t0 = vkt_now_ns();
   for (uint32_t b = 0; b < n; b++) {
      const VkSubmitInfo submit = {
         .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
         .commandBufferCount = 1,
         .pCommandBuffers = &s->cmds[b],
      };
      const bool fenced = b + 1 == n || j->fence_each;
      VKT_CHECK(vkQueueSubmit(s->ctx.queue, 1, &submit, fenced ? s->fences[b] : VK_NULL_HANDLE));
   }
   const uint32_t first = j->fence_each ? 0 : n - 1;
   VKT_CHECK(vkWaitForFences(s->ctx.device, n - first, &s->fences[first], VK_TRUE,
                             600000000000ull));
   uint64_t t = vkt_now_ns() - t0;
   VKT_CHECK(vkResetFences(s->ctx.device, n - first, &s->fences[first]));
   return t;
}

static uint64_t
gpu_ns(const struct side *s)
{
   uint64_t ts[2];
   VKT_CHECK(vkGetQueryPoolResults(s->ctx.device, s->timestamps, 0, 2, sizeof(ts), ts,
                                   sizeof(ts[0]), VK_QUERY_RESULT_64_BIT |
                                                     VK_QUERY_RESULT_WAIT_BIT));
   const uint32_t bits = s->ctx.timestamp_valid_bits;
   const uint64_t mask = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
   return (uint64_t)((double)((ts[1] - ts[0]) & mask) * s->ctx.props.limits.timestampPeriod);
}

/* The job's parameters, for its share of the wanted GPU time. */
static void
job_params(const struct side *s, struct job *j)
{
   j->push = (struct push){.rounds = 1, .passes = 1, .count = s->elements};
   if (j->shader == ALU)
      j->push.count = GROUPS * 64;
   if (j->shader == MIX)
      j->push.rounds = MIX_ROUNDS;
}

static void
calibrate(struct side *s, struct job *j, double want_ns)
{
   job_params(s, j);
   uint32_t *knob = j->shader == ALU ? &j->push.rounds : &j->push.passes;
   for (;;) {
      record(s, j);
      submit_wait(s, j);
      submit_wait(s, j); /* (the first of a pipeline may cost more) */
      /* (want_ns is a dispatch's share) */
      uint64_t t = gpu_ns(s) / j->dispatches;
      if (t >= want_ns * 0.9 || *knob >= (1u << 24))
         break;
      double next = t ? *knob * want_ns / (double)t : *knob * 16.0;
      if (next > *knob * 16.0)
         next = *knob * 16.0;
      *knob = next > *knob + 1 ? (uint32_t)next : *knob + 1;
   }
}

static uint64_t
checksum(struct side *s)
{
   const struct vkt_context *ctx = &s->ctx;
   const VkDeviceSize size = (VkDeviceSize)s->elements * 4;
   struct vkt_buffer host;
   vkt_buffer_create(ctx, size, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &host);
   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   const VkBufferCopy region = {0, 0, size};
   vkCmdCopyBuffer(cmd, s->out.buffer, host.buffer, 1, &region);
   vkt_cmd_submit_wait(ctx, cmd);
   vkt_buffer_invalidate(ctx, &host);
   uint64_t h = 0xcbf29ce484222325ull;
   const uint32_t *v = host.map;
   for (VkDeviceSize i = 0; i < size / 4; i++)
      h = (h ^ v[i]) * 0x100000001b3ull;
   vkt_buffer_destroy(ctx, &host);
   return h;
}

static int
cmp_u64(const void *a, const void *b)
{
   uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
   return x < y ? -1 : x > y;
}

static double
median_ms(uint64_t *v, uint32_t n)
{
   qsort(v, n, sizeof(*v), cmp_u64);
   return (double)v[n / 2] / 1e6;
}

static void
measure(struct side *s, const struct job *j, struct sample *out, uint32_t rep)
{
   uint64_t t0 = vkt_now_ns();
   record(s, j);
   submit_wait(s, j);
   out->wall_first[rep] = vkt_now_ns() - t0;
   out->gpu_first[rep] = gpu_ns(s);
   out->wall_again[rep] = submit_wait(s, j);
   out->gpu_again[rep] = gpu_ns(s);
}

static void
usage(void)
{
   fprintf(stderr, "usage: gpu_bench [--direct-only] [--stats] [--ms N | --fixed N] [--reps N] [--only alu,mem,mix,subs]\n");
   exit(2);
}

int
main(int argc, char **argv)
{
   vkt_set_prog("gpu_bench");
   bool direct_only = false, stats = false;
   uint32_t ms = 8, reps = 10, fixed = 0;
   const char *only = NULL;
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--direct-only"))
         direct_only = true;
      else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
         ms = (uint32_t)vkt_parse_u64("--ms", argv[++i]);
      else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
         reps = (uint32_t)vkt_parse_u64("--reps", argv[++i]);
      else if (!strcmp(argv[i], "--fixed") && i + 1 < argc)
         fixed = (uint32_t)vkt_parse_u64("--fixed", argv[++i]);
      else if (!strcmp(argv[i], "--stats"))
         stats = true;
      else if (!strcmp(argv[i], "--only") && i + 1 < argc)
         only = argv[++i];
      else
         usage();
   }
   if (!ms || !reps || reps > MAX_REPS) {
      fprintf(stderr, "gpu_bench: --ms must be at least 1, --reps 1 to %u\n", MAX_REPS);
      return 2;
   }

   VkInstance instance = vkt_instance_create("gpu_bench");
   VkPhysicalDevice devs[16], direct = VK_NULL_HANDLE, gpud = VK_NULL_HANDLE;
   uint32_t count = VKT_ARRAY_SIZE(devs);
   VkResult r = vkEnumeratePhysicalDevices(instance, &count, devs);
   if (r != VK_SUCCESS && r != VK_INCOMPLETE)
      vkt_fail("vkEnumeratePhysicalDevices failed: %s", vkt_result_name(r));
   for (uint32_t i = 0; i < count; i++) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(devs[i], &props);
      if (strstr(props.deviceName, "gpud")) {
         if (!gpud)
            gpud = devs[i];
      } else if (!direct) {
         direct = devs[i];
      }
   }
   /* (--direct-only with gpud's manifest alone measures gpud alone) */
   if (direct_only && !direct)
      direct = gpud;
   if (!direct)
      vkt_fail("no host device among %u devices: list the host driver's manifest in "
               "VK_ICD_FILENAMES", count);
   if (!gpud && !direct_only)
      vkt_fail("no gpud device among %u devices: list gpud's manifest in VK_ICD_FILENAMES "
               "and start the daemon, or use --direct-only", count);

   struct side sides[2];
   const uint32_t n_sides = direct_only ? 1 : 2;
   side_init(&sides[0], instance, direct, stats);
   if (!direct_only)
      side_init(&sides[1], instance, gpud, stats);
   printf("gpu_bench: '%s' directly%s%s, %u ms a job, %u repetitions, alternated\n",
          sides[0].ctx.props.deviceName, direct_only ? "" : " and '",
          direct_only ? "" : sides[1].ctx.props.deviceName, ms, reps);
   if (!direct_only)
      printf("(through gpud: %s)\n", sides[1].ctx.props.deviceName);
   for (uint32_t i = 0; i < n_sides; i++) {
      if (sides[i].stats)
         print_statistics(&sides[i]);
   }

   struct job jobs[16];
   uint32_t n_jobs = 0;
   for (uint32_t sh = 0; sh < SHADER_COUNT; sh++) {
      if (only && !strstr(only, shader_names[sh]))
         continue;
      jobs[n_jobs++] = (struct job){sh, 1, false, 10};
      jobs[n_jobs++] = (struct job){sh, MANY, true, 10};
      jobs[n_jobs++] = (struct job){sh, MANY, false, 10};
      if (sh == ALU)
         jobs[n_jobs++] = (struct job){sh, 1, false, 1};
   }
   if (!only || strstr(only, "subs")) {
      jobs[n_jobs++] = (struct job){ALU, BATCHED, true, 10, SUBMITS, false};
      jobs[n_jobs++] = (struct job){ALU, BATCHED, true, 10, SUBMITS, true};
   }

   printf("\n%-34s %-12s %10s %10s %8s\n", "job", "what", "direct", "gpud", "ratio");
   for (uint32_t k = 0; k < n_jobs; k++) {
      struct job *j = &jobs[k];
      if (fixed) {
         job_params(&sides[0], j);
         *(j->shader == ALU ? &j->push.rounds : &j->push.passes) = fixed;
      } else {
         calibrate(&sides[0], j, ms * 1e6 * j->tenths / 10.0 / j->dispatches);
      }
      /* a GPU lowers its clocks after light work: 300 ms of the job first */
      for (uint32_t i = 0; i < n_sides && !fixed; i++) {
         record(&sides[i], j);
         for (uint64_t start = vkt_now_ns(); vkt_now_ns() - start < 300000000ull;)
            submit_wait(&sides[i], j);
      }
      struct sample samples[2];
      for (uint32_t rep = 0; rep < reps; rep++) {
         for (uint32_t i = 0; i < n_sides; i++)
            measure(&sides[i], j, &samples[i], rep);
      }
      if (!direct_only && checksum(&sides[0]) != checksum(&sides[1]))
         vkt_fail("job %s x%u: gpud computed other bytes than the driver directly",
                  shader_names[j->shader], j->dispatches);
      char name[64];
      char in[32] = "";
      if (j->submits)
         snprintf(in, sizeof(in), " in %u%s", j->submits, j->fence_each ? ", fenced" : "");
      snprintf(name, sizeof(name), "%s x%u%s%s%s", shader_names[j->shader], j->dispatches,
               j->dispatches > 1 ? (j->barriers ? " barriers" : " no barriers") : "",
               j->tenths != 10 ? " short" : "", in);
      const struct {
         const char *what;
         uint64_t *direct, *gpud;
      } rows[] = {
         {"gpu first", samples[0].gpu_first, samples[1].gpu_first},
         {"gpu again", samples[0].gpu_again, samples[1].gpu_again},
         {"wall first", samples[0].wall_first, samples[1].wall_first},
         {"wall again", samples[0].wall_again, samples[1].wall_again},
      };
      for (uint32_t row = 0; row < VKT_ARRAY_SIZE(rows); row++) {
         double d = median_ms(rows[row].direct, reps);
         if (direct_only) {
            printf("%-34s %-12s %9.3fms\n", row ? "" : name, rows[row].what, d);
            continue;
         }
         double g = median_ms(rows[row].gpud, reps);
         printf("%-34s %-12s %9.3fms %9.3fms %7.3fx\n", row ? "" : name, rows[row].what, d, g,
                d > 0 ? g / d : 0);
      }
      fflush(stdout);
   }
   for (uint32_t i = n_sides; i-- > 0;)
      side_finish(&sides[i]);
   vkDestroyInstance(instance, NULL);
   return 0;
}
