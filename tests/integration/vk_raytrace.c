/* SPDX-License-Identifier: MIT */
/*
 * vk_raytrace: ray tracing (VK_KHR_acceleration_structure,
 * VK_KHR_ray_tracing_pipeline, VK_KHR_ray_query) on whatever device it is
 * given, each sub-test on a device of its own with only what it needs, each
 * checking the image the rays produced pixel by pixel against the CPU.
 *
 * The scene: a bottom-level structure of two triangles (vertex and index
 * buffers read by device address) and a top-level one with two instances of
 * it, with different transforms (the second rotated, scaled, mirrored and
 * nearer, so that it hides part of the first) and different custom indices.
 * One orthographic ray per pixel of a 64x64 image, from (x + 0.5, y + 0.5,
 * -1) along +z; a hit writes 0x100 * custom index + primitive + 1, a miss 0.
 * Pixels whose centre lies within 0.01 of a triangle's edge are not
 * compared (which side wins there is the driver's watertightness), only
 * required to hold a miss or some hit.
 *
 *   pipeline  a ray tracing pipeline (raygen, miss, closest hit) created
 *             with a deferred operation, its shader binding table from the
 *             group handles; vkCmdTraceRaysKHR, then (where
 *             rayTracingPipelineTraceRaysIndirect is supported)
 *             vkCmdTraceRaysIndirectKHR, which must give the same image.
 *   query     the same rays from a compute shader with ray queries.
 *   compact   the bottom-level structure built to be compacted: its
 *             compacted and serialisation sizes queried, a compacted copy,
 *             a clone, the compacted one serialised to memory (its header
 *             checked, with vkGetDeviceAccelerationStructureCompatibilityKHR)
 *             and deserialised; top-level structures over the compacted,
 *             cloned and deserialised ones must trace the original's image
 *             (with ray queries, or the pipeline where there are none).
 *
 *   vk_raytrace [--device NAME] [--test NAME]...
 *
 * Without --test every sub-test runs, in the order above. Each prints one
 * line "vk_raytrace: NAME: OK: what was checked ... digest 0x..." (an
 * FNV-1a digest of the image, for a harness to compare two runs), or, on a
 * device without the extensions or features it needs, why and then
 * "vk_raytrace: NAME: not supported by this device, skipped". Any mismatch
 * exits with 1 and says what differed. Only device-side (vkCmd*) builds and
 * copies are used: accelerationStructureHostCommands is optional.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkt_common.h"
#include "rt_rgen_spv.h"
#include "rt_rmiss_spv.h"
#include "rt_rchit_spv.h"
#include "rt_query_comp_spv.h"

#define PROG "vk_raytrace"

/* Loads a device command or fails. */
#define LOAD(ctx, fn) ((PFN_##fn)vkt_device_proc((ctx), #fn))

#define SIZE 64                       /* the image's width and height */
#define PIXELS (SIZE * SIZE)
#define SENTINEL 0xa5a5a5a5u          /* what the image holds before a trace */
#define EDGE_MARGIN 0.01              /* pixels this close to an edge: not compared */

/* The device the last sub-test ran on, for the summary. */
static char device_used[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];

/* ---- the scene ---------------------------------------------------------- */

/* The bottom-level structure: two triangles that share a vertex, with a
 * wedge of nothing between them. */
static const float scene_vertices[][3] = {
   { 0, 0, 0 }, { 24, 0, 0 }, { 0, 24, 0 }, { 28, 6, 0 }, { 12, 28, 0 },
};
static const uint32_t scene_indices[] = { 0, 1, 2, 1, 3, 4 };
#define TRIANGLES 2

/* The top-level structure's instances, transforms row-major 3x4 as in
 * VkTransformMatrixKHR. The first is moved off whole coordinates (so that
 * few pixel centres fall on its edges) and lies at z = 5; the second is
 * rotated, scaled and mirrored (its triangles face the other way) and lies
 * at z = 3, nearer the rays' origin, over part of the first; one of its
 * edges runs through a row of pixel centres (y = 38.5), where either side
 * may win. */
static const struct scene_instance {
   uint32_t custom_index;
   float transform[3][4];
} scene_instances[] = {
   { 3, { { 1, 0, 0, 4.25f }, { 0, 1, 0, 3.6f }, { 0, 0, 1, 5 } } },
   { 7, { { 0, -0.75f, 0, 34 }, { -1, 0, 0, 38.5f }, { 0, 0, 1, 3 } } },
};
#define INSTANCES 2

/* What a hit on a triangle of an instance writes (rt.rchit, rt_query.comp). */
static uint32_t
hit_value(unsigned instance, unsigned primitive)
{
   return 0x100u * scene_instances[instance].custom_index + primitive + 1u;
}

/* ---- the image the CPU expects ------------------------------------------ */

static struct {
   bool done;
   uint32_t value[PIXELS];
   bool near_edge[PIXELS];
   bool hidden[PIXELS];               /* both instances hit: the nearer counts */
} expected;

/* Twice the signed area of (a, b, p): which side of a->b p lies on. */
static double
edge_function(const double *a, const double *b, double px, double py)
{
   return (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
}

/* The squared distance from p to the segment a-b, in the xy plane. */
static double
segment_distance2(const double *a, const double *b, double px, double py)
{
   const double dx = b[0] - a[0], dy = b[1] - a[1];
   double t = ((px - a[0]) * dx + (py - a[1]) * dy) / (dx * dx + dy * dy);

   if (t < 0)
      t = 0;
   if (t > 1)
      t = 1;
   const double qx = a[0] + t * dx - px, qy = a[1] + t * dy - py;
   return qx * qx + qy * qy;
}

/* Triangle `primitive` of instance `instance` in world space. */
static void
world_triangle(unsigned instance, unsigned primitive, double v[3][3])
{
   const float(*m)[4] = scene_instances[instance].transform;

   for (unsigned k = 0; k < 3; k++) {
      const float *p = scene_vertices[scene_indices[primitive * 3 + k]];

      for (unsigned r = 0; r < 3; r++)
         v[k][r] = (double)m[r][0] * p[0] + (double)m[r][1] * p[1] +
                   (double)m[r][2] * p[2] + m[r][3];
   }
}

/* Which instance and triangle each pixel's ray hits first. The rays run
 * along +z, so a hit is a 2D point-in-triangle test and its distance the
 * triangle's z there. */
static void
expected_compute(void)
{
   double tri[INSTANCES][TRIANGLES][3][3];

   if (expected.done)
      return;
   for (unsigned i = 0; i < INSTANCES; i++)
      for (unsigned p = 0; p < TRIANGLES; p++)
         world_triangle(i, p, tri[i][p]);

   for (unsigned y = 0; y < SIZE; y++) {
      for (unsigned x = 0; x < SIZE; x++) {
         const double px = x + 0.5, py = y + 0.5, origin_z = -1.0;
         const unsigned pixel = y * SIZE + x;
         double best_t = 1e30;
         unsigned hits = 0;

         expected.value[pixel] = 0;
         for (unsigned i = 0; i < INSTANCES; i++) {
            for (unsigned p = 0; p < TRIANGLES; p++) {
               const double(*v)[3] = tri[i][p];
               const double e0 = edge_function(v[0], v[1], px, py);
               const double e1 = edge_function(v[1], v[2], px, py);
               const double e2 = edge_function(v[2], v[0], px, py);

               for (unsigned k = 0; k < 3; k++)
                  if (segment_distance2(v[k], v[(k + 1) % 3], px, py) <
                      EDGE_MARGIN * EDGE_MARGIN)
                     expected.near_edge[pixel] = true;
               if (!((e0 >= 0 && e1 >= 0 && e2 >= 0) ||
                     (e0 <= 0 && e1 <= 0 && e2 <= 0)))
                  continue;
               /* e1 weighs v0, e2 v1 and e0 v2 */
               const double z = (e1 * v[0][2] + e2 * v[1][2] + e0 * v[2][2]) /
                                (e0 + e1 + e2);
               const double t = z - origin_z;
               hits++;
               if (t > 0 && t < best_t) {
                  best_t = t;
                  expected.value[pixel] = hit_value(i, p);
               }
            }
         }
         expected.hidden[pixel] = hits > 1;
      }
   }
   expected.done = true;
}

struct image_stats {
   unsigned hits[INSTANCES][TRIANGLES];
   unsigned misses, near_edge, hidden;
};

/* The value of a pixel near an edge may be a miss or any hit, but nothing
 * else (not the sentinel, not rt.rgen's 0xdeadbeef). */
static bool
plausible(uint32_t value)
{
   if (value == 0)
      return true;
   for (unsigned i = 0; i < INSTANCES; i++)
      for (unsigned p = 0; p < TRIANGLES; p++)
         if (value == hit_value(i, p))
            return true;
   return false;
}

/* Checks an image against the CPU's; `what` names the trace. */
static void
check_image(const char *what, const uint32_t *pixels, struct image_stats *st)
{
   expected_compute();
   memset(st, 0, sizeof(*st));
   for (unsigned pixel = 0; pixel < PIXELS; pixel++) {
      const unsigned x = pixel % SIZE, y = pixel / SIZE;
      const uint32_t got = pixels[pixel], want = expected.value[pixel];

      if (got == SENTINEL)
         vkt_fail("%s: pixel (%u, %u) was not written (still 0x%08x)", what, x, y, got);
      if (expected.near_edge[pixel]) {
         if (!plausible(got))
            vkt_fail("%s: pixel (%u, %u), near an edge, is 0x%08x: neither a miss (0) "
                     "nor any hit", what, x, y, got);
         st->near_edge++;
         continue;
      }
      if (got != want)
         vkt_fail("%s: pixel (%u, %u) is 0x%08x, expected 0x%08x (%s)", what, x, y, got,
                  want, want ? "a hit: 0x100 * instance custom index + primitive + 1"
                             : "a miss");
      if (!want) {
         st->misses++;
         continue;
      }
      st->hidden += expected.hidden[pixel];
      for (unsigned i = 0; i < INSTANCES; i++)
         for (unsigned p = 0; p < TRIANGLES; p++)
            st->hits[i][p] += want == hit_value(i, p);
   }

   /* a scene that tests something: every triangle seen, misses around
    * them, and the nearer instance over the farther one */
   for (unsigned i = 0; i < INSTANCES; i++)
      for (unsigned p = 0; p < TRIANGLES; p++)
         if (st->hits[i][p] < 30)
            vkt_fail("%s: only %u pixels of triangle %u of instance %u checked", what,
                     st->hits[i][p], p, scene_instances[i].custom_index);
   if (st->misses < 1000 || st->hidden < 10 || st->near_edge > PIXELS / 20)
      vkt_fail("%s: %u misses, %u pixels where an instance hides the other, %u near "
               "edges: the scene does not test enough", what, st->misses, st->hidden,
               st->near_edge);
}

/* Requires an image to equal the reference exactly, near edges too: the
 * same rays through the same scene on the same device. */
static void
compare_images(const char *what, const uint32_t *got, const uint32_t *want)
{
   unsigned differ = 0, first = 0;

   for (unsigned pixel = 0; pixel < PIXELS; pixel++) {
      if (got[pixel] != want[pixel] && !differ++)
         first = pixel;
   }
   if (differ)
      vkt_fail("%s: %u pixels differ from the first image, first (%u, %u): 0x%08x, "
               "expected 0x%08x", what, differ, first % SIZE, first / SIZE, got[first],
               want[first]);
}

/* 32-bit FNV-1a of the image's bytes. */
static uint32_t
digest(const uint32_t *pixels)
{
   const uint8_t *bytes = (const uint8_t *)pixels;
   uint32_t h = 0x811c9dc5u;

   for (size_t i = 0; i < PIXELS * sizeof(*pixels); i++) {
      h ^= bytes[i];
      h *= 0x01000193u;
   }
   return h;
}

static void
stats_line(const struct image_stats *st, char *buf, size_t size)
{
   snprintf(buf, size,
            "instance %u hit at %u + %u pixels, instance %u at %u + %u (%u where it hides "
            "the other), %u misses, %u near edges not compared",
            scene_instances[0].custom_index, st->hits[0][0], st->hits[0][1],
            scene_instances[1].custom_index, st->hits[1][0], st->hits[1][1], st->hidden,
            st->misses, st->near_edge);
}

/* ---- the device --------------------------------------------------------- */

/* How rays are traced: what a device is created for. */
enum {
   RT_PIPELINE = 1u << 0,             /* VK_KHR_ray_tracing_pipeline */
   RT_QUERY = 1u << 1,                /* VK_KHR_ray_query */
};

struct rt {
   struct vkt_context ctx;
   unsigned kinds;                    /* RT_PIPELINE, RT_QUERY enabled */
   bool trace_indirect;               /* rayTracingPipelineTraceRaysIndirect */
   VkPipelineStageFlags shader_stages; /* those that trace rays */
   VkPhysicalDeviceAccelerationStructurePropertiesKHR as_props;
   VkPhysicalDeviceRayTracingPipelinePropertiesKHR rt_props;
   uint8_t driver_uuid[VK_UUID_SIZE];

   PFN_vkCreateAccelerationStructureKHR create_as;
   PFN_vkDestroyAccelerationStructureKHR destroy_as;
   PFN_vkGetAccelerationStructureBuildSizesKHR build_sizes;
   PFN_vkGetAccelerationStructureDeviceAddressKHR as_address;
   PFN_vkCmdBuildAccelerationStructuresKHR cmd_build;
   PFN_vkCmdWriteAccelerationStructuresPropertiesKHR cmd_write_properties;
   PFN_vkCmdCopyAccelerationStructureKHR cmd_copy;
   PFN_vkCmdCopyAccelerationStructureToMemoryKHR cmd_copy_to_memory;
   PFN_vkCmdCopyMemoryToAccelerationStructureKHR cmd_copy_from_memory;
   PFN_vkGetDeviceAccelerationStructureCompatibilityKHR compatibility;
   PFN_vkCreateDeferredOperationKHR create_deferred;
   PFN_vkDestroyDeferredOperationKHR destroy_deferred;
   PFN_vkDeferredOperationJoinKHR join_deferred;
   PFN_vkGetDeferredOperationResultKHR deferred_result;
   /* RT_PIPELINE only */
   PFN_vkCreateRayTracingPipelinesKHR create_pipelines;
   PFN_vkGetRayTracingShaderGroupHandlesKHR group_handles;
   PFN_vkCmdTraceRaysKHR cmd_trace;
   PFN_vkCmdTraceRaysIndirectKHR cmd_trace_indirect;
};

/* Appends a struct to a pNext chain whose last pNext is *tail. */
static void
chain(void ***tail, void *s)
{
   **tail = s;
   *tail = (void **)&((VkBaseOutStructure *)s)->pNext;
}

/*
 * An instance and a device with VK_KHR_acceleration_structure (and
 * VK_KHR_deferred_host_operations, which it needs), buffer device addresses
 * and those of the kinds wanted (RT_*) that the device has. vkt_common's
 * vkt_context_init_ext cannot be used: its table of feature structs lacks
 * the ray tracing ones. When none of the kinds is there, says why, destroys
 * the instance and returns false.
 */
static bool
rt_init(struct rt *rt, const char *prog, const char *device_name, unsigned kinds)
{
   struct vkt_context *ctx = &rt->ctx;
   char why[512] = "";

   memset(rt, 0, sizeof(*rt));
   ctx->prog = prog;
   vkt_set_prog(prog);
   ctx->instance = vkt_instance_create(prog);
   ctx->physical_device = vkt_physical_device_pick(ctx->instance, device_name);
   VkPhysicalDevice pdev = ctx->physical_device;
   vkGetPhysicalDeviceProperties(pdev, &ctx->props);
   vkGetPhysicalDeviceMemoryProperties(pdev, &ctx->mem_props);
   snprintf(device_used, sizeof(device_used), "%s", ctx->props.deviceName);

   const bool has_as =
      vkt_device_has_extension(pdev, VK_KHR_ACCELERATION_STRUCTURE_EXTENSION_NAME) &&
      vkt_device_has_extension(pdev, VK_KHR_DEFERRED_HOST_OPERATIONS_EXTENSION_NAME);
   const bool has_pipeline = (kinds & RT_PIPELINE) &&
      vkt_device_has_extension(pdev, VK_KHR_RAY_TRACING_PIPELINE_EXTENSION_NAME);
   const bool has_query = (kinds & RT_QUERY) &&
      vkt_device_has_extension(pdev, VK_KHR_RAY_QUERY_EXTENSION_NAME);

   /* what the device has, asking only about extensions it advertises */
   VkPhysicalDeviceVulkan12Features got12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
   };
   VkPhysicalDeviceAccelerationStructureFeaturesKHR got_as = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ACCELERATION_STRUCTURE_FEATURES_KHR,
   };
   VkPhysicalDeviceRayTracingPipelineFeaturesKHR got_pipeline = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_FEATURES_KHR,
   };
   VkPhysicalDeviceRayQueryFeaturesKHR got_query = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_QUERY_FEATURES_KHR,
   };
   VkPhysicalDeviceFeatures2 features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
   };
   void **tail = &features.pNext;
   chain(&tail, &got12);
   if (has_as)
      chain(&tail, &got_as);
   if (has_pipeline)
      chain(&tail, &got_pipeline);
   if (has_query)
      chain(&tail, &got_query);
   vkGetPhysicalDeviceFeatures2(pdev, &features);

   if (!has_as)
      snprintf(why, sizeof(why), "VK_KHR_acceleration_structure or "
               "VK_KHR_deferred_host_operations is not advertised");
   else if (!got_as.accelerationStructure)
      snprintf(why, sizeof(why), "the accelerationStructure feature is not supported");
   else if (!got12.bufferDeviceAddress)
      snprintf(why, sizeof(why), "the bufferDeviceAddress feature is not supported");
   if (has_pipeline && got_pipeline.rayTracingPipeline)
      rt->kinds |= RT_PIPELINE;
   if (has_query && got_query.rayQuery)
      rt->kinds |= RT_QUERY;
   if (!why[0] && !rt->kinds)
      snprintf(why, sizeof(why), "%s%s%s",
               kinds & RT_PIPELINE ? (has_pipeline ? "the rayTracingPipeline feature is "
                                                     "not supported"
                                                   : "VK_KHR_ray_tracing_pipeline is not "
                                                     "advertised")
                                   : "",
               (kinds & RT_PIPELINE) && (kinds & RT_QUERY) ? ", and " : "",
               kinds & RT_QUERY ? (has_query ? "the rayQuery feature is not supported"
                                             : "VK_KHR_ray_query is not advertised")
                                : "");
   if (why[0]) {
      printf("%s: %s on '%s'\n", prog, why, ctx->props.deviceName);
      printf("%s: not supported by this device, skipped\n", prog);
      vkDestroyInstance(ctx->instance, NULL);
      memset(rt, 0, sizeof(*rt));
      return false;
   }

   /* one queue that computes (ray tracing and ray queries are compute
    * work); graphics too, as every other test program's */
   VkQueueFamilyProperties families[16];
   uint32_t family_count = 0;
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &family_count, NULL);
   if (family_count > VKT_ARRAY_SIZE(families))
      family_count = VKT_ARRAY_SIZE(families);
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &family_count, families);
   ctx->queue_family = UINT32_MAX;
   for (uint32_t i = 0; i < family_count; i++) {
      const VkQueueFlags want = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;

      if ((families[i].queueFlags & want) == want && families[i].queueCount) {
         ctx->queue_family = i;
         ctx->timestamp_valid_bits = families[i].timestampValidBits;
         break;
      }
   }
   if (ctx->queue_family == UINT32_MAX)
      vkt_fail("device '%s' has no graphics+compute queue family", ctx->props.deviceName);

   /* only what is asked for, and only what the device reports */
   const char *exts[4];
   uint32_t n_exts = 0;
   exts[n_exts++] = VK_KHR_ACCELERATION_STRUCTURE_EXTENSION_NAME;
   exts[n_exts++] = VK_KHR_DEFERRED_HOST_OPERATIONS_EXTENSION_NAME;
   VkPhysicalDeviceVulkan12Features want12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .bufferDeviceAddress = VK_TRUE,
   };
   VkPhysicalDeviceAccelerationStructureFeaturesKHR want_as = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ACCELERATION_STRUCTURE_FEATURES_KHR,
      .accelerationStructure = VK_TRUE,
   };
   VkPhysicalDeviceRayTracingPipelineFeaturesKHR want_pipeline = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_FEATURES_KHR,
      .rayTracingPipeline = VK_TRUE,
      .rayTracingPipelineTraceRaysIndirect = got_pipeline.rayTracingPipelineTraceRaysIndirect,
   };
   VkPhysicalDeviceRayQueryFeaturesKHR want_query = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_QUERY_FEATURES_KHR,
      .rayQuery = VK_TRUE,
   };
   const VkPhysicalDeviceFeatures want10 = { 0 };
   void *want_chain = NULL;
   tail = &want_chain;
   chain(&tail, &want12);
   chain(&tail, &want_as);
   if (rt->kinds & RT_PIPELINE) {
      exts[n_exts++] = VK_KHR_RAY_TRACING_PIPELINE_EXTENSION_NAME;
      chain(&tail, &want_pipeline);
      rt->trace_indirect = got_pipeline.rayTracingPipelineTraceRaysIndirect;
      rt->shader_stages |= VK_PIPELINE_STAGE_RAY_TRACING_SHADER_BIT_KHR;
   }
   if (rt->kinds & RT_QUERY) {
      exts[n_exts++] = VK_KHR_RAY_QUERY_EXTENSION_NAME;
      chain(&tail, &want_query);
      rt->shader_stages |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
   }

   const float priority = 1.0f;
   const VkDeviceQueueCreateInfo queue_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = ctx->queue_family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
   };
   const VkDeviceCreateInfo device_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = want_chain,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue_info,
      .enabledExtensionCount = n_exts,
      .ppEnabledExtensionNames = exts,
      .pEnabledFeatures = &want10,
   };
   VKT_CHECK(vkCreateDevice(pdev, &device_info, NULL, &ctx->device));
   vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = ctx->queue_family,
   };
   VKT_CHECK(vkCreateCommandPool(ctx->device, &pool_info, NULL, &ctx->cmd_pool));

   /* the limits the structures and the shader binding table honour */
   VkPhysicalDeviceIDProperties id = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
   };
   rt->as_props = (VkPhysicalDeviceAccelerationStructurePropertiesKHR){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ACCELERATION_STRUCTURE_PROPERTIES_KHR,
      .pNext = &id,
   };
   rt->rt_props = (VkPhysicalDeviceRayTracingPipelinePropertiesKHR){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAY_TRACING_PIPELINE_PROPERTIES_KHR,
      .pNext = &rt->as_props,
   };
   VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = rt->kinds & RT_PIPELINE ? (void *)&rt->rt_props : (void *)&rt->as_props,
   };
   vkGetPhysicalDeviceProperties2(pdev, &props);
   rt->as_props.pNext = rt->rt_props.pNext = NULL;
   memcpy(rt->driver_uuid, id.driverUUID, VK_UUID_SIZE);

   rt->create_as = LOAD(ctx, vkCreateAccelerationStructureKHR);
   rt->destroy_as = LOAD(ctx, vkDestroyAccelerationStructureKHR);
   rt->build_sizes = LOAD(ctx, vkGetAccelerationStructureBuildSizesKHR);
   rt->as_address = LOAD(ctx, vkGetAccelerationStructureDeviceAddressKHR);
   rt->cmd_build = LOAD(ctx, vkCmdBuildAccelerationStructuresKHR);
   rt->cmd_write_properties = LOAD(ctx, vkCmdWriteAccelerationStructuresPropertiesKHR);
   rt->cmd_copy = LOAD(ctx, vkCmdCopyAccelerationStructureKHR);
   rt->cmd_copy_to_memory = LOAD(ctx, vkCmdCopyAccelerationStructureToMemoryKHR);
   rt->cmd_copy_from_memory = LOAD(ctx, vkCmdCopyMemoryToAccelerationStructureKHR);
   rt->compatibility = LOAD(ctx, vkGetDeviceAccelerationStructureCompatibilityKHR);
   rt->create_deferred = LOAD(ctx, vkCreateDeferredOperationKHR);
   rt->destroy_deferred = LOAD(ctx, vkDestroyDeferredOperationKHR);
   rt->join_deferred = LOAD(ctx, vkDeferredOperationJoinKHR);
   rt->deferred_result = LOAD(ctx, vkGetDeferredOperationResultKHR);
   if (rt->kinds & RT_PIPELINE) {
      rt->create_pipelines = LOAD(ctx, vkCreateRayTracingPipelinesKHR);
      rt->group_handles = LOAD(ctx, vkGetRayTracingShaderGroupHandlesKHR);
      rt->cmd_trace = LOAD(ctx, vkCmdTraceRaysKHR);
      rt->cmd_trace_indirect = LOAD(ctx, vkCmdTraceRaysIndirectKHR);
   }
   return true;
}

/* ---- buffers and barriers ----------------------------------------------- */

static VkDeviceAddress
align_up(VkDeviceAddress v, VkDeviceSize alignment)
{
   return alignment > 1 ? (v + alignment - 1) / alignment * alignment : v;
}

static VkDeviceAddress
address_of(const struct vkt_context *ctx, VkBuffer buffer)
{
   const VkBufferDeviceAddressInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
      .buffer = buffer,
   };
   VkDeviceAddress address = vkGetBufferDeviceAddress(ctx->device, &info);
   if (!address)
      vkt_fail("vkGetBufferDeviceAddress returned 0");
   return address;
}

/*
 * A buffer whose device address is used (its memory allocated with
 * VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT, which vkt_buffer_create does not
 * do): host visible, coherent and mapped when the host writes or reads it,
 * device-local where there is such memory otherwise. Returns the address.
 */
static VkDeviceAddress
address_buffer(const struct vkt_context *ctx, VkDeviceSize size, VkBufferUsageFlags usage,
               bool host_visible, struct vkt_buffer *buf)
{
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT | usage,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   VkMemoryRequirements req;

   memset(buf, 0, sizeof(*buf));
   buf->size = size;
   VKT_CHECK(vkCreateBuffer(ctx->device, &info, NULL, &buf->buffer));
   vkGetBufferMemoryRequirements(ctx->device, buf->buffer, &req);
   const VkMemoryAllocateFlagsInfo flags = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
      .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
   };
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &flags,
      .allocationSize = req.size,
      .memoryTypeIndex =
         host_visible ? vkt_memory_type(ctx, req.memoryTypeBits,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0)
                      : vkt_memory_type(ctx, req.memoryTypeBits, 0,
                                        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT),
   };
   if (alloc.memoryTypeIndex == UINT32_MAX)
      vkt_fail("no memory type for a buffer of %llu bytes with usage 0x%x (type bits 0x%x)",
               (unsigned long long)size, info.usage, req.memoryTypeBits);
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &buf->memory));
   VKT_CHECK(vkBindBufferMemory(ctx->device, buf->buffer, buf->memory, 0));
   if (host_visible) {
      VKT_CHECK(vkMapMemory(ctx->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->map));
      buf->coherent = true;
   }
   return address_of(ctx, buf->buffer);
}

static void
barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
        VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
   const VkMemoryBarrier b = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = src_access,
      .dstAccessMask = dst_access,
   };

   vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, NULL, 0, NULL);
}

/* Acceleration structure writes (builds, copies) before later ones read it:
 * builds of structures over it, copies, property queries. */
static void
barrier_built(VkCommandBuffer cmd)
{
   barrier(cmd, VK_PIPELINE_STAGE_ACCELERATION_STRUCTURE_BUILD_BIT_KHR,
           VK_ACCESS_ACCELERATION_STRUCTURE_WRITE_BIT_KHR,
           VK_PIPELINE_STAGE_ACCELERATION_STRUCTURE_BUILD_BIT_KHR,
           VK_ACCESS_ACCELERATION_STRUCTURE_READ_BIT_KHR);
}

/* Top-level structures built before the shaders trace rays through them. */
static void
barrier_to_shaders(const struct rt *rt, VkCommandBuffer cmd)
{
   barrier(cmd, VK_PIPELINE_STAGE_ACCELERATION_STRUCTURE_BUILD_BIT_KHR,
           VK_ACCESS_ACCELERATION_STRUCTURE_WRITE_BIT_KHR, rt->shader_stages,
           VK_ACCESS_ACCELERATION_STRUCTURE_READ_BIT_KHR);
}

/* ---- acceleration structures -------------------------------------------- */

struct accel {
   VkAccelerationStructureKHR handle;
   struct vkt_buffer buffer;
   VkDeviceSize size;
   VkDeviceAddress address;           /* what instances refer to it by */
};

static void
accel_create(const struct rt *rt, VkAccelerationStructureTypeKHR type, VkDeviceSize size,
             struct accel *a)
{
   memset(a, 0, sizeof(*a));
   a->size = size;
   address_buffer(&rt->ctx, size, VK_BUFFER_USAGE_ACCELERATION_STRUCTURE_STORAGE_BIT_KHR,
                  false, &a->buffer);
   const VkAccelerationStructureCreateInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_CREATE_INFO_KHR,
      .buffer = a->buffer.buffer,
      .offset = 0,
      .size = size,
      .type = type,
   };
   VKT_CHECK(rt->create_as(rt->ctx.device, &info, NULL, &a->handle));
   const VkAccelerationStructureDeviceAddressInfoKHR address_info = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_DEVICE_ADDRESS_INFO_KHR,
      .accelerationStructure = a->handle,
   };
   a->address = rt->as_address(rt->ctx.device, &address_info);
   if (!a->address)
      vkt_fail("vkGetAccelerationStructureDeviceAddressKHR returned 0");
}

static void
accel_destroy(const struct rt *rt, struct accel *a)
{
   rt->destroy_as(rt->ctx.device, a->handle, NULL);
   vkt_buffer_destroy(&rt->ctx, &a->buffer);
   memset(a, 0, sizeof(*a));
}

/* Scratch memory of `size` bytes for a build: the address returned is
 * aligned to minAccelerationStructureScratchOffsetAlignment (the buffer is
 * that much larger). */
static VkDeviceAddress
scratch_create(const struct rt *rt, VkDeviceSize size, struct vkt_buffer *scratch)
{
   const VkDeviceSize alignment = rt->as_props.minAccelerationStructureScratchOffsetAlignment;
   const VkDeviceAddress address =
      address_buffer(&rt->ctx, size + alignment, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, false,
                     scratch);
   return align_up(address, alignment);
}

/* The bottom-level structure's input: vertices and indices that the build
 * reads by device address. */
struct geometry {
   struct vkt_buffer vertices, indices;
   VkDeviceAddress vertex_address, index_address;
};

static void
geometry_init(const struct rt *rt, struct geometry *g)
{
   const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_ACCELERATION_STRUCTURE_BUILD_INPUT_READ_ONLY_BIT_KHR;

   g->vertex_address = address_buffer(&rt->ctx, sizeof(scene_vertices), usage, true,
                                      &g->vertices);
   memcpy(g->vertices.map, scene_vertices, sizeof(scene_vertices));
   g->index_address = address_buffer(&rt->ctx, sizeof(scene_indices), usage, true,
                                     &g->indices);
   memcpy(g->indices.map, scene_indices, sizeof(scene_indices));
}

static void
geometry_finish(const struct rt *rt, struct geometry *g)
{
   vkt_buffer_destroy(&rt->ctx, &g->indices);
   vkt_buffer_destroy(&rt->ctx, &g->vertices);
}

/* Creates the bottom-level structure and records its build (the geometry
 * given by pGeometries); *scratch lives until the build has run. */
static void
blas_record(const struct rt *rt, VkCommandBuffer cmd, const struct geometry *g,
            VkBuildAccelerationStructureFlagsKHR flags, struct accel *blas,
            struct vkt_buffer *scratch)
{
   const VkAccelerationStructureGeometryKHR geometry = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_GEOMETRY_KHR,
      .geometryType = VK_GEOMETRY_TYPE_TRIANGLES_KHR,
      .geometry.triangles = {
         .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_GEOMETRY_TRIANGLES_DATA_KHR,
         .vertexFormat = VK_FORMAT_R32G32B32_SFLOAT,
         .vertexData.deviceAddress = g->vertex_address,
         .vertexStride = sizeof(scene_vertices[0]),
         .maxVertex = VKT_ARRAY_SIZE(scene_vertices) - 1,
         .indexType = VK_INDEX_TYPE_UINT32,
         .indexData.deviceAddress = g->index_address,
      },
      /* no any-hit shader to run: the closest hit is found by itself */
      .flags = VK_GEOMETRY_OPAQUE_BIT_KHR,
   };
   VkAccelerationStructureBuildGeometryInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_BUILD_GEOMETRY_INFO_KHR,
      .type = VK_ACCELERATION_STRUCTURE_TYPE_BOTTOM_LEVEL_KHR,
      .flags = flags,
      .mode = VK_BUILD_ACCELERATION_STRUCTURE_MODE_BUILD_KHR,
      .geometryCount = 1,
      .pGeometries = &geometry,
   };
   const uint32_t primitives = TRIANGLES;
   VkAccelerationStructureBuildSizesInfoKHR sizes = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_BUILD_SIZES_INFO_KHR,
   };
   rt->build_sizes(rt->ctx.device, VK_ACCELERATION_STRUCTURE_BUILD_TYPE_DEVICE_KHR, &info,
                   &primitives, &sizes);
   if (!sizes.accelerationStructureSize)
      vkt_fail("vkGetAccelerationStructureBuildSizesKHR: bottom-level size 0");
   accel_create(rt, VK_ACCELERATION_STRUCTURE_TYPE_BOTTOM_LEVEL_KHR,
                sizes.accelerationStructureSize, blas);
   info.dstAccelerationStructure = blas->handle;
   info.scratchData.deviceAddress = scratch_create(rt, sizes.buildScratchSize, scratch);

   const VkAccelerationStructureBuildRangeInfoKHR range = { .primitiveCount = TRIANGLES };
   const VkAccelerationStructureBuildRangeInfoKHR *ranges[] = { &range };
   rt->cmd_build(cmd, 1, &info, ranges);
}

/* A top-level structure and the instances it was built from. */
struct tlas {
   struct accel accel;
   struct vkt_buffer instances;
};

/* Creates a top-level structure with the scene's instances of the
 * bottom-level structure at blas_address and records its build (the
 * geometry given by ppGeometries, the array-of-pointers form); *scratch
 * lives until the build has run. */
static void
tlas_record(const struct rt *rt, VkCommandBuffer cmd, VkDeviceAddress blas_address,
            struct tlas *t, struct vkt_buffer *scratch)
{
   VkAccelerationStructureInstanceKHR instances[INSTANCES];

   memset(instances, 0, sizeof(instances));
   for (unsigned i = 0; i < INSTANCES; i++) {
      memcpy(instances[i].transform.matrix, scene_instances[i].transform,
             sizeof(instances[i].transform.matrix));
      instances[i].instanceCustomIndex = scene_instances[i].custom_index & 0xffffff;
      instances[i].mask = 0xff;
      instances[i].instanceShaderBindingTableRecordOffset = 0;
      /* the second instance is mirrored: its triangles face the other
       * way, and must be hit all the same (the rays cull nothing either) */
      instances[i].flags = VK_GEOMETRY_INSTANCE_TRIANGLE_FACING_CULL_DISABLE_BIT_KHR;
      instances[i].accelerationStructureReference = blas_address;
   }
   /* (read by address, which must be 16-byte aligned: buffers are) */
   const VkDeviceAddress instance_address =
      address_buffer(&rt->ctx, sizeof(instances),
                     VK_BUFFER_USAGE_ACCELERATION_STRUCTURE_BUILD_INPUT_READ_ONLY_BIT_KHR, true,
                     &t->instances);
   if (instance_address % 16)
      vkt_fail("instance buffer address 0x%llx is not 16-byte aligned",
               (unsigned long long)instance_address);
   memcpy(t->instances.map, instances, sizeof(instances));

   const VkAccelerationStructureGeometryKHR geometry = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_GEOMETRY_KHR,
      .geometryType = VK_GEOMETRY_TYPE_INSTANCES_KHR,
      .geometry.instances = {
         .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_GEOMETRY_INSTANCES_DATA_KHR,
         .arrayOfPointers = VK_FALSE,
         .data.deviceAddress = instance_address,
      },
      .flags = VK_GEOMETRY_OPAQUE_BIT_KHR,
   };
   const VkAccelerationStructureGeometryKHR *const geometries[] = { &geometry };
   VkAccelerationStructureBuildGeometryInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_BUILD_GEOMETRY_INFO_KHR,
      .type = VK_ACCELERATION_STRUCTURE_TYPE_TOP_LEVEL_KHR,
      .flags = VK_BUILD_ACCELERATION_STRUCTURE_PREFER_FAST_TRACE_BIT_KHR,
      .mode = VK_BUILD_ACCELERATION_STRUCTURE_MODE_BUILD_KHR,
      .geometryCount = VKT_ARRAY_SIZE(geometries),
      .ppGeometries = geometries,
   };
   const uint32_t primitives = INSTANCES;
   VkAccelerationStructureBuildSizesInfoKHR sizes = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_BUILD_SIZES_INFO_KHR,
   };
   rt->build_sizes(rt->ctx.device, VK_ACCELERATION_STRUCTURE_BUILD_TYPE_DEVICE_KHR, &info,
                   &primitives, &sizes);
   if (!sizes.accelerationStructureSize)
      vkt_fail("vkGetAccelerationStructureBuildSizesKHR: top-level size 0");
   accel_create(rt, VK_ACCELERATION_STRUCTURE_TYPE_TOP_LEVEL_KHR,
                sizes.accelerationStructureSize, &t->accel);
   info.dstAccelerationStructure = t->accel.handle;
   info.scratchData.deviceAddress = scratch_create(rt, sizes.buildScratchSize, scratch);

   const VkAccelerationStructureBuildRangeInfoKHR range = { .primitiveCount = INSTANCES };
   const VkAccelerationStructureBuildRangeInfoKHR *ranges[] = { &range };
   rt->cmd_build(cmd, 1, &info, ranges);
}

static void
tlas_destroy(const struct rt *rt, struct tlas *t)
{
   accel_destroy(rt, &t->accel);
   vkt_buffer_destroy(&rt->ctx, &t->instances);
}

/* The whole scene: both structures built in one command buffer. */
struct scene {
   struct geometry geometry;
   struct accel blas;
   struct tlas tlas;
};

static void
scene_build(const struct rt *rt, VkBuildAccelerationStructureFlagsKHR blas_flags,
            struct scene *s)
{
   struct vkt_buffer scratch[2];

   geometry_init(rt, &s->geometry);
   VkCommandBuffer cmd = vkt_cmd_begin(&rt->ctx);
   blas_record(rt, cmd, &s->geometry, blas_flags, &s->blas, &scratch[0]);
   barrier_built(cmd);
   tlas_record(rt, cmd, s->blas.address, &s->tlas, &scratch[1]);
   barrier_to_shaders(rt, cmd);
   vkt_cmd_submit_wait(&rt->ctx, cmd);
   vkt_buffer_destroy(&rt->ctx, &scratch[1]);
   vkt_buffer_destroy(&rt->ctx, &scratch[0]);
}

static void
scene_finish(const struct rt *rt, struct scene *s)
{
   tlas_destroy(rt, &s->tlas);
   accel_destroy(rt, &s->blas);
   geometry_finish(rt, &s->geometry);
}

/* ---- tracing ------------------------------------------------------------ */

/* What traces the rays: a ray tracing pipeline, or a compute pipeline with
 * ray queries; either writes into `image`, one uint per pixel. */
struct tracer {
   bool query;
   VkDescriptorSetLayout set_layout;
   VkPipelineLayout layout;
   VkPipeline pipeline;
   VkDescriptorPool pool;
   VkDescriptorSet set;
   struct vkt_buffer image;
   /* the ray tracing pipeline's */
   VkResult creation;                 /* what vkCreateRayTracingPipelinesKHR returned */
   struct vkt_buffer sbt, indirect;
   VkStridedDeviceAddressRegionKHR raygen, miss, hit, callable;
   VkDeviceAddress indirect_address;
};

/* vkCreateRayTracingPipelinesKHR with a deferred operation: the driver may
 * do it at once (VK_SUCCESS, VK_OPERATION_NOT_DEFERRED_KHR) or leave it to
 * the threads that join the operation (VK_OPERATION_DEFERRED_KHR).
 * (Validation layers older than mid-2023, 1.3.239 included, take the first
 * two answers for the third and leave the pipeline handle unwrapped: the
 * next call that uses it crashes, KhronosGroup/Vulkan-ValidationLayers#5817.
 * Their VK_VALIDATION_FEATURE_DISABLE_UNIQUE_HANDLES_EXT avoids that.) */
static VkPipeline
create_rt_pipeline(const struct rt *rt, const VkRayTracingPipelineCreateInfoKHR *info,
                   VkResult *how)
{
   const VkDevice dev = rt->ctx.device;
   VkDeferredOperationKHR op;
   VkPipeline pipeline = VK_NULL_HANDLE;

   VKT_CHECK(rt->create_deferred(dev, NULL, &op));
   *how = rt->create_pipelines(dev, op, VK_NULL_HANDLE, 1, info, NULL, &pipeline);
   switch (*how) {
   case VK_SUCCESS:
   case VK_OPERATION_NOT_DEFERRED_KHR:
      break;
   case VK_OPERATION_DEFERRED_KHR: {
      const uint64_t deadline = vkt_now_ns() + 60000000000ull;
      VkResult joined = VK_THREAD_IDLE_KHR;

      /* This thread works on it until it is done (VK_SUCCESS), or until
       * the driver says others have the rest (VK_THREAD_DONE_KHR: joining
       * again would only cost) or have it for now (VK_THREAD_IDLE_KHR:
       * joining again may find work); then the result is waited for. */
      for (;;) {
         if (joined != VK_THREAD_DONE_KHR) {
            joined = rt->join_deferred(dev, op);
            if (joined == VK_SUCCESS)
               break;
            if (joined != VK_THREAD_DONE_KHR && joined != VK_THREAD_IDLE_KHR)
               vkt_fail("vkDeferredOperationJoinKHR returned %s", vkt_result_name(joined));
         }
         if (rt->deferred_result(dev, op) != VK_NOT_READY)
            break;
         if (vkt_now_ns() > deadline)
            vkt_fail("the deferred pipeline creation did not complete within 60 s");
         nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
      }
      VkResult result = rt->deferred_result(dev, op);
      if (result != VK_SUCCESS)
         vkt_fail("the deferred vkCreateRayTracingPipelinesKHR completed with %s",
                  vkt_result_name(result));
      break;
   }
   default:
      vkt_fail("vkCreateRayTracingPipelinesKHR with a deferred operation returned %s",
               vkt_result_name(*how));
   }
   rt->destroy_deferred(dev, op, NULL);
   if (pipeline == VK_NULL_HANDLE)
      vkt_fail("vkCreateRayTracingPipelinesKHR (%s) left no pipeline",
               vkt_result_name(*how));
   return pipeline;
}

/* The shader binding table: one record each for the raygen, miss and hit
 * groups, every region starting at a multiple of shaderGroupBaseAlignment
 * and records spaced by the handle size rounded to shaderGroupHandleAlignment.
 * The bytes between regions are garbage, which no trace may read. */
static void
sbt_create(const struct rt *rt, struct tracer *t, uint32_t groups)
{
   const VkPhysicalDeviceRayTracingPipelinePropertiesKHR *p = &rt->rt_props;
   const VkDeviceSize handle_size = p->shaderGroupHandleSize;
   const VkDeviceSize stride = align_up(handle_size, p->shaderGroupHandleAlignment);
   const VkDeviceSize region = align_up(stride, p->shaderGroupBaseAlignment);
   uint8_t *handles = malloc(groups * handle_size);

   if (!handles)
      vkt_fail("out of memory");
   if (!handle_size || stride > p->maxShaderGroupStride)
      vkt_fail("shaderGroupHandleSize %u, handle alignment %u, maxShaderGroupStride %u",
               p->shaderGroupHandleSize, p->shaderGroupHandleAlignment,
               p->maxShaderGroupStride);
   VKT_CHECK(rt->group_handles(rt->ctx.device, t->pipeline, 0, groups, groups * handle_size,
                               handles));

   /* room to move the start up to shaderGroupBaseAlignment */
   const VkDeviceAddress address =
      address_buffer(&rt->ctx, groups * region + p->shaderGroupBaseAlignment,
                     VK_BUFFER_USAGE_SHADER_BINDING_TABLE_BIT_KHR, true, &t->sbt);
   const VkDeviceAddress start = align_up(address, p->shaderGroupBaseAlignment);
   uint8_t *map = (uint8_t *)t->sbt.map + (start - address);
   memset(t->sbt.map, 0xee, t->sbt.size);
   for (uint32_t g = 0; g < groups; g++)
      memcpy(map + g * region, handles + g * handle_size, handle_size);
   free(handles);

   /* the raygen region's size must equal its stride */
   t->raygen = (VkStridedDeviceAddressRegionKHR){ start, stride, stride };
   t->miss = (VkStridedDeviceAddressRegionKHR){ start + region, stride, stride };
   t->hit = (VkStridedDeviceAddressRegionKHR){ start + 2 * region, stride, stride };
   t->callable = (VkStridedDeviceAddressRegionKHR){ 0, 0, 0 };
}

static void
tracer_init_pipeline(const struct rt *rt, struct tracer *t)
{
   const VkDevice dev = rt->ctx.device;
   const VkShaderModule modules[] = {
      vkt_shader_module(&rt->ctx, rt_rgen_spv, sizeof(rt_rgen_spv)),
      vkt_shader_module(&rt->ctx, rt_rmiss_spv, sizeof(rt_rmiss_spv)),
      vkt_shader_module(&rt->ctx, rt_rchit_spv, sizeof(rt_rchit_spv)),
   };
   const VkShaderStageFlagBits stages[] = {
      VK_SHADER_STAGE_RAYGEN_BIT_KHR, VK_SHADER_STAGE_MISS_BIT_KHR,
      VK_SHADER_STAGE_CLOSEST_HIT_BIT_KHR,
   };
   VkPipelineShaderStageCreateInfo stage_info[3];
   for (unsigned i = 0; i < 3; i++)
      stage_info[i] = (VkPipelineShaderStageCreateInfo){
         .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = stages[i],
         .module = modules[i],
         .pName = "main",
      };
   /* raygen, miss, then a triangle hit group with only a closest hit */
   const VkRayTracingShaderGroupCreateInfoKHR groups[] = {
      {
         .sType = VK_STRUCTURE_TYPE_RAY_TRACING_SHADER_GROUP_CREATE_INFO_KHR,
         .type = VK_RAY_TRACING_SHADER_GROUP_TYPE_GENERAL_KHR,
         .generalShader = 0,
         .closestHitShader = VK_SHADER_UNUSED_KHR,
         .anyHitShader = VK_SHADER_UNUSED_KHR,
         .intersectionShader = VK_SHADER_UNUSED_KHR,
      },
      {
         .sType = VK_STRUCTURE_TYPE_RAY_TRACING_SHADER_GROUP_CREATE_INFO_KHR,
         .type = VK_RAY_TRACING_SHADER_GROUP_TYPE_GENERAL_KHR,
         .generalShader = 1,
         .closestHitShader = VK_SHADER_UNUSED_KHR,
         .anyHitShader = VK_SHADER_UNUSED_KHR,
         .intersectionShader = VK_SHADER_UNUSED_KHR,
      },
      {
         .sType = VK_STRUCTURE_TYPE_RAY_TRACING_SHADER_GROUP_CREATE_INFO_KHR,
         .type = VK_RAY_TRACING_SHADER_GROUP_TYPE_TRIANGLES_HIT_GROUP_KHR,
         .generalShader = VK_SHADER_UNUSED_KHR,
         .closestHitShader = 2,
         .anyHitShader = VK_SHADER_UNUSED_KHR,
         .intersectionShader = VK_SHADER_UNUSED_KHR,
      },
   };
   const VkRayTracingPipelineCreateInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_RAY_TRACING_PIPELINE_CREATE_INFO_KHR,
      .stageCount = VKT_ARRAY_SIZE(stage_info),
      .pStages = stage_info,
      .groupCount = VKT_ARRAY_SIZE(groups),
      .pGroups = groups,
      .maxPipelineRayRecursionDepth = 1,
      .layout = t->layout,
   };
   t->pipeline = create_rt_pipeline(rt, &info, &t->creation);
   /* (the modules outlive the creation, deferred or not) */
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(modules); i++)
      vkDestroyShaderModule(dev, modules[i], NULL);

   sbt_create(rt, t, VKT_ARRAY_SIZE(groups));

   if (rt->trace_indirect) {
      const VkTraceRaysIndirectCommandKHR size = { SIZE, SIZE, 1 };

      t->indirect_address = address_buffer(&rt->ctx, sizeof(size),
                                           VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, true,
                                           &t->indirect);
      memcpy(t->indirect.map, &size, sizeof(size));
   }
}

static void
tracer_init_query(const struct rt *rt, struct tracer *t)
{
   t->pipeline = vkt_compute_pipeline(&rt->ctx, rt_query_comp_spv, sizeof(rt_query_comp_spv),
                                      t->layout, 0);
}

static void
tracer_init(const struct rt *rt, bool query, struct tracer *t)
{
   const VkDevice dev = rt->ctx.device;
   const VkShaderStageFlags stage = query ? VK_SHADER_STAGE_COMPUTE_BIT
                                          : VK_SHADER_STAGE_RAYGEN_BIT_KHR;

   memset(t, 0, sizeof(*t));
   t->query = query;
   /* binding 0: the top-level structure, 1: the image */
   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR, 1, stage, NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, stage, NULL },
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = VKT_ARRAY_SIZE(bindings),
      .pBindings = bindings,
   };
   VKT_CHECK(vkCreateDescriptorSetLayout(dev, &set_layout_info, NULL, &t->set_layout));
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &t->set_layout,
   };
   VKT_CHECK(vkCreatePipelineLayout(dev, &layout_info, NULL, &t->layout));

   const VkDescriptorPoolSize pool_sizes[] = {
      { VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR, 1 },
      { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1 },
   };
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 1,
      .poolSizeCount = VKT_ARRAY_SIZE(pool_sizes),
      .pPoolSizes = pool_sizes,
   };
   VKT_CHECK(vkCreateDescriptorPool(dev, &pool_info, NULL, &t->pool));
   const VkDescriptorSetAllocateInfo set_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = t->pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &t->set_layout,
   };
   VKT_CHECK(vkAllocateDescriptorSets(dev, &set_info, &t->set));

   vkt_buffer_create(&rt->ctx, PIXELS * sizeof(uint32_t), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                     true, &t->image);

   if (query)
      tracer_init_query(rt, t);
   else
      tracer_init_pipeline(rt, t);
}

static void
tracer_finish(const struct rt *rt, struct tracer *t)
{
   const VkDevice dev = rt->ctx.device;

   if (t->indirect.buffer)
      vkt_buffer_destroy(&rt->ctx, &t->indirect);
   if (t->sbt.buffer)
      vkt_buffer_destroy(&rt->ctx, &t->sbt);
   vkt_buffer_destroy(&rt->ctx, &t->image);
   vkDestroyPipeline(dev, t->pipeline, NULL);
   vkDestroyDescriptorPool(dev, t->pool, NULL);
   vkDestroyPipelineLayout(dev, t->layout, NULL);
   vkDestroyDescriptorSetLayout(dev, t->set_layout, NULL);
}

/* Traces the image through `tlas` (indirectly: the ray tracing pipeline's
 * vkCmdTraceRaysIndirectKHR) into out. */
static void
tracer_run(const struct rt *rt, struct tracer *t, VkAccelerationStructureKHR tlas,
           bool indirect, uint32_t *out)
{
   const VkWriteDescriptorSetAccelerationStructureKHR as_write = {
      .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_ACCELERATION_STRUCTURE_KHR,
      .accelerationStructureCount = 1,
      .pAccelerationStructures = &tlas,
   };
   const VkDescriptorBufferInfo image_info = { t->image.buffer, 0, VK_WHOLE_SIZE };
   const VkWriteDescriptorSet writes[] = {
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .pNext = &as_write,
         .dstSet = t->set,
         .dstBinding = 0,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_KHR,
      },
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = t->set,
         .dstBinding = 1,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &image_info,
      },
   };
   /* (the set is not in use: the previous trace has been waited for) */
   vkUpdateDescriptorSets(rt->ctx.device, VKT_ARRAY_SIZE(writes), writes, 0, NULL);
   memset(t->image.map, SENTINEL & 0xff, t->image.size);
   vkt_buffer_flush(&rt->ctx, &t->image);

   const VkPipelineBindPoint bind_point = t->query ? VK_PIPELINE_BIND_POINT_COMPUTE
                                                   : VK_PIPELINE_BIND_POINT_RAY_TRACING_KHR;
   VkCommandBuffer cmd = vkt_cmd_begin(&rt->ctx);
   vkCmdBindPipeline(cmd, bind_point, t->pipeline);
   vkCmdBindDescriptorSets(cmd, bind_point, t->layout, 0, 1, &t->set, 0, NULL);
   if (t->query)
      vkCmdDispatch(cmd, SIZE / 8, SIZE / 8, 1);   /* rt_query.comp's groups: 8x8 */
   else if (indirect)
      rt->cmd_trace_indirect(cmd, &t->raygen, &t->miss, &t->hit, &t->callable,
                             t->indirect_address);
   else
      rt->cmd_trace(cmd, &t->raygen, &t->miss, &t->hit, &t->callable, SIZE, SIZE, 1);
   barrier(cmd,
           t->query ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                    : VK_PIPELINE_STAGE_RAY_TRACING_SHADER_BIT_KHR,
           VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
   vkt_cmd_submit_wait(&rt->ctx, cmd);
   vkt_buffer_invalidate(&rt->ctx, &t->image);
   memcpy(out, t->image.map, PIXELS * sizeof(uint32_t));
}

/* ---- pipeline: VK_KHR_ray_tracing_pipeline ------------------------------ */

static bool
test_pipeline(const char *device_name)
{
   struct rt rt;

   if (!rt_init(&rt, PROG ": pipeline", device_name, RT_PIPELINE))
      return false;
   struct scene scene;
   scene_build(&rt, VK_BUILD_ACCELERATION_STRUCTURE_PREFER_FAST_TRACE_BIT_KHR, &scene);
   struct tracer t;
   tracer_init(&rt, false, &t);

   static uint32_t image[PIXELS], indirect[PIXELS];
   struct image_stats st;
   tracer_run(&rt, &t, scene.tlas.accel.handle, false, image);
   check_image("vkCmdTraceRaysKHR", image, &st);
   const char *indirect_what = "not supported, not traced";
   if (rt.trace_indirect) {
      tracer_run(&rt, &t, scene.tlas.accel.handle, true, indirect);
      compare_images("vkCmdTraceRaysIndirectKHR", indirect, image);
      indirect_what = "the same image";
   }

   char stats[512];
   stats_line(&st, stats, sizeof(stats));
   printf(PROG ": pipeline: OK: %ux%u rays of vkCmdTraceRaysKHR through 2 instances of a "
          "2-triangle structure: %s; pipeline created with a deferred operation: %s; "
          "shader binding table records of %llu bytes at %u-byte aligned regions; "
          "vkCmdTraceRaysIndirectKHR: %s; digest 0x%08x\n",
          SIZE, SIZE, stats, vkt_result_name(t.creation), (unsigned long long)t.raygen.stride,
          rt.rt_props.shaderGroupBaseAlignment, indirect_what, digest(image));

   tracer_finish(&rt, &t);
   scene_finish(&rt, &scene);
   vkt_context_finish(&rt.ctx);
   return true;
}

/* ---- query: VK_KHR_ray_query -------------------------------------------- */

static bool
test_query(const char *device_name)
{
   struct rt rt;

   if (!rt_init(&rt, PROG ": query", device_name, RT_QUERY))
      return false;
   struct scene scene;
   scene_build(&rt, VK_BUILD_ACCELERATION_STRUCTURE_PREFER_FAST_TRACE_BIT_KHR, &scene);
   struct tracer t;
   tracer_init(&rt, true, &t);

   static uint32_t image[PIXELS];
   struct image_stats st;
   tracer_run(&rt, &t, scene.tlas.accel.handle, false, image);
   check_image("ray query", image, &st);

   char stats[512];
   stats_line(&st, stats, sizeof(stats));
   printf(PROG ": query: OK: %ux%u ray queries of a compute shader through 2 instances of "
          "a 2-triangle structure: %s; digest 0x%08x\n",
          SIZE, SIZE, stats, digest(image));

   tracer_finish(&rt, &t);
   scene_finish(&rt, &scene);
   vkt_context_finish(&rt.ctx);
   return true;
}

/* ---- compact: compaction, serialisation, clones ------------------------- */

/* The serialised form's header (vkCmdCopyAccelerationStructureToMemoryKHR):
 * the driver's UUID, the compatibility UUID, sizes and the count of
 * bottom-level structure handles that follow. */
struct serialized_header {
   uint8_t driver_uuid[VK_UUID_SIZE];
   uint8_t compat_uuid[VK_UUID_SIZE];
   uint64_t serialized_size;
   uint64_t deserialized_size;
   uint64_t handle_count;
};

static VkQueryPool
query_pool(const struct rt *rt, VkQueryType type, uint32_t count)
{
   const VkQueryPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = type,
      .queryCount = count,
   };
   VkQueryPool pool;

   VKT_CHECK(vkCreateQueryPool(rt->ctx.device, &info, NULL, &pool));
   return pool;
}

static uint64_t
query_result(const struct rt *rt, VkQueryPool pool, uint32_t query, const char *what)
{
   uint64_t value = 0;

   VKT_CHECK(vkGetQueryPoolResults(rt->ctx.device, pool, query, 1, sizeof(value), &value,
                                   sizeof(value),
                                   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
   if (!value)
      vkt_fail("%s: query result 0", what);
   return value;
}

static VkAccelerationStructureCompatibilityKHR
compatibility(const struct rt *rt, const uint8_t *header)
{
   const VkAccelerationStructureVersionInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_ACCELERATION_STRUCTURE_VERSION_INFO_KHR,
      .pVersionData = header,
   };
   VkAccelerationStructureCompatibilityKHR compat = (VkAccelerationStructureCompatibilityKHR)-1;

   rt->compatibility(rt->ctx.device, &info, &compat);
   return compat;
}

static bool
test_compact(const char *device_name)
{
   struct rt rt;

   if (!rt_init(&rt, PROG ": compact", device_name, RT_QUERY | RT_PIPELINE))
      return false;
   const VkDevice dev = rt.ctx.device;
   const bool query = rt.kinds & RT_QUERY;
   struct scene scene;
   scene_build(&rt, VK_BUILD_ACCELERATION_STRUCTURE_ALLOW_COMPACTION_BIT_KHR |
                       VK_BUILD_ACCELERATION_STRUCTURE_PREFER_FAST_TRACE_BIT_KHR,
               &scene);
   struct tracer t;
   tracer_init(&rt, query, &t);

   /* the original's image, checked */
   static uint32_t reference[PIXELS], image[PIXELS];
   struct image_stats st;
   tracer_run(&rt, &t, scene.tlas.accel.handle, false, reference);
   check_image("the original structure", reference, &st);

   /* the original's compacted and serialisation sizes */
   VkQueryPool compacted_pool =
      query_pool(&rt, VK_QUERY_TYPE_ACCELERATION_STRUCTURE_COMPACTED_SIZE_KHR, 1);
   VkQueryPool serial_pool =
      query_pool(&rt, VK_QUERY_TYPE_ACCELERATION_STRUCTURE_SERIALIZATION_SIZE_KHR, 2);
   VkCommandBuffer cmd = vkt_cmd_begin(&rt.ctx);
   vkCmdResetQueryPool(cmd, compacted_pool, 0, 1);
   vkCmdResetQueryPool(cmd, serial_pool, 0, 2);
   barrier_built(cmd);
   rt.cmd_write_properties(cmd, 1, &scene.blas.handle,
                           VK_QUERY_TYPE_ACCELERATION_STRUCTURE_COMPACTED_SIZE_KHR,
                           compacted_pool, 0);
   rt.cmd_write_properties(cmd, 1, &scene.blas.handle,
                           VK_QUERY_TYPE_ACCELERATION_STRUCTURE_SERIALIZATION_SIZE_KHR,
                           serial_pool, 0);
   vkt_cmd_submit_wait(&rt.ctx, cmd);
   const uint64_t compacted_size =
      query_result(&rt, compacted_pool, 0, "compacted size of the original");
   const uint64_t original_serial_size =
      query_result(&rt, serial_pool, 0, "serialisation size of the original");
   if (compacted_size > scene.blas.size)
      vkt_fail("compacted size %llu is larger than the structure (%llu bytes)",
               (unsigned long long)compacted_size, (unsigned long long)scene.blas.size);

   /* a compacted copy and a clone; the compacted one's serialisation size */
   struct accel compacted, clone;
   accel_create(&rt, VK_ACCELERATION_STRUCTURE_TYPE_BOTTOM_LEVEL_KHR, compacted_size,
                &compacted);
   accel_create(&rt, VK_ACCELERATION_STRUCTURE_TYPE_BOTTOM_LEVEL_KHR, scene.blas.size, &clone);
   cmd = vkt_cmd_begin(&rt.ctx);
   const VkCopyAccelerationStructureInfoKHR compact_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_ACCELERATION_STRUCTURE_INFO_KHR,
      .src = scene.blas.handle,
      .dst = compacted.handle,
      .mode = VK_COPY_ACCELERATION_STRUCTURE_MODE_COMPACT_KHR,
   };
   rt.cmd_copy(cmd, &compact_info);
   const VkCopyAccelerationStructureInfoKHR clone_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_ACCELERATION_STRUCTURE_INFO_KHR,
      .src = scene.blas.handle,
      .dst = clone.handle,
      .mode = VK_COPY_ACCELERATION_STRUCTURE_MODE_CLONE_KHR,
   };
   rt.cmd_copy(cmd, &clone_info);
   barrier_built(cmd);
   rt.cmd_write_properties(cmd, 1, &compacted.handle,
                           VK_QUERY_TYPE_ACCELERATION_STRUCTURE_SERIALIZATION_SIZE_KHR,
                           serial_pool, 1);
   vkt_cmd_submit_wait(&rt.ctx, cmd);
   const uint64_t serial_size =
      query_result(&rt, serial_pool, 1, "serialisation size of the compacted copy");
   if (serial_size < sizeof(struct serialized_header))
      vkt_fail("serialisation size %llu is smaller than the header (%zu bytes)",
               (unsigned long long)serial_size, sizeof(struct serialized_header));

   /* the compacted copy serialised into memory the host reads, at a
    * 256-byte aligned address */
   struct vkt_buffer serial;
   const VkDeviceAddress serial_base =
      address_buffer(&rt.ctx, serial_size + 256, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true,
                     &serial);
   const VkDeviceAddress serial_address = align_up(serial_base, 256);
   uint8_t *serial_data = (uint8_t *)serial.map + (serial_address - serial_base);
   memset(serial.map, 0, serial.size);
   cmd = vkt_cmd_begin(&rt.ctx);
   const VkCopyAccelerationStructureToMemoryInfoKHR serialize_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_ACCELERATION_STRUCTURE_TO_MEMORY_INFO_KHR,
      .src = compacted.handle,
      .dst.deviceAddress = serial_address,
      .mode = VK_COPY_ACCELERATION_STRUCTURE_MODE_SERIALIZE_KHR,
   };
   rt.cmd_copy_to_memory(cmd, &serialize_info);
   /* The serialised data is written as transfers write, for the host and
    * for the deserialisation, which reads it as transfers read. */
   barrier(cmd, VK_PIPELINE_STAGE_ACCELERATION_STRUCTURE_BUILD_BIT_KHR,
           VK_ACCESS_TRANSFER_WRITE_BIT,
           VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ACCELERATION_STRUCTURE_BUILD_BIT_KHR,
           VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
   vkt_cmd_submit_wait(&rt.ctx, cmd);

   struct serialized_header header;
   memcpy(&header, serial_data, sizeof(header));
   /* The spec has the header begin with the driverUUID; Mesa 25's lavapipe
    * writes its pipelineCacheUUID there. What matters is that the driver
    * accepts its own data (below), so a difference is only reported. */
   const bool driver_uuid = !memcmp(header.driver_uuid, rt.driver_uuid, VK_UUID_SIZE);
   if (header.serialized_size != serial_size)
      vkt_fail("the serialised header says %llu bytes, the query said %llu",
               (unsigned long long)header.serialized_size, (unsigned long long)serial_size);
   if (!header.deserialized_size || header.handle_count)
      vkt_fail("the serialised header says: deserialise into %llu bytes, %llu handles of "
               "bottom-level structures (a bottom-level structure refers to none)",
               (unsigned long long)header.deserialized_size,
               (unsigned long long)header.handle_count);
   VkAccelerationStructureCompatibilityKHR compat = compatibility(&rt, serial_data);
   if (compat != VK_ACCELERATION_STRUCTURE_COMPATIBILITY_COMPATIBLE_KHR)
      vkt_fail("vkGetDeviceAccelerationStructureCompatibilityKHR says %d for the data the "
               "device serialised, not COMPATIBLE", (int)compat);
   /* The answer looks at the data: with both UUIDs changed it is not
    * compatible (drivers differ in which they compare: RADV both, lavapipe
    * only the first). */
   uint8_t other[2 * VK_UUID_SIZE];
   memcpy(other, serial_data, sizeof(other));
   other[0] ^= 0xff;
   other[VK_UUID_SIZE] ^= 0xff;
   compat = compatibility(&rt, other);
   if (compat != VK_ACCELERATION_STRUCTURE_COMPATIBILITY_INCOMPATIBLE_KHR)
      vkt_fail("vkGetDeviceAccelerationStructureCompatibilityKHR says %d for a header with "
               "both UUIDs changed, not INCOMPATIBLE", (int)compat);

   /* deserialised into a structure as large as the header says (and not
    * smaller than the one serialised), then top-level structures over the
    * compacted, cloned and deserialised ones */
   struct accel deserialized;
   accel_create(&rt, VK_ACCELERATION_STRUCTURE_TYPE_BOTTOM_LEVEL_KHR,
                header.deserialized_size > compacted_size ? header.deserialized_size
                                                          : compacted_size,
                &deserialized);
   static const char *const copy_names[] = { "compacted", "cloned", "deserialised" };
   const struct accel *copies[] = { &compacted, &clone, &deserialized };
   struct tlas tlases[3];
   struct vkt_buffer scratch[3];
   cmd = vkt_cmd_begin(&rt.ctx);
   const VkCopyMemoryToAccelerationStructureInfoKHR deserialize_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_MEMORY_TO_ACCELERATION_STRUCTURE_INFO_KHR,
      .src.deviceAddress = serial_address,
      .dst = deserialized.handle,
      .mode = VK_COPY_ACCELERATION_STRUCTURE_MODE_DESERIALIZE_KHR,
   };
   rt.cmd_copy_from_memory(cmd, &deserialize_info);
   barrier_built(cmd);
   for (unsigned i = 0; i < 3; i++)
      tlas_record(&rt, cmd, copies[i]->address, &tlases[i], &scratch[i]);
   barrier_to_shaders(&rt, cmd);
   vkt_cmd_submit_wait(&rt.ctx, cmd);

   for (unsigned i = 0; i < 3; i++) {
      char what[64];

      vkt_buffer_destroy(&rt.ctx, &scratch[i]);
      snprintf(what, sizeof(what), "the %s structure", copy_names[i]);
      tracer_run(&rt, &t, tlases[i].accel.handle, false, image);
      compare_images(what, image, reference);
   }

   char stats[512];
   stats_line(&st, stats, sizeof(stats));
   printf(PROG ": compact: OK: structure of %llu bytes compacted to %llu (serialised in %llu "
          "before, %llu after); the compacted one serialised (header: %s, deserialise "
          "into %llu bytes; COMPATIBLE, INCOMPATIBLE with other UUIDs) and deserialised; the "
          "compacted, cloned and deserialised structures traced (%s) the original's image: "
          "%s; digest 0x%08x\n",
          (unsigned long long)scene.blas.size, (unsigned long long)compacted_size,
          (unsigned long long)original_serial_size, (unsigned long long)serial_size,
          driver_uuid ? "the driverUUID" : "not the driverUUID",
          (unsigned long long)header.deserialized_size,
          query ? "ray queries" : "ray tracing pipeline", stats, digest(reference));

   for (unsigned i = 0; i < 3; i++)
      tlas_destroy(&rt, &tlases[i]);
   accel_destroy(&rt, &deserialized);
   vkt_buffer_destroy(&rt.ctx, &serial);
   accel_destroy(&rt, &clone);
   accel_destroy(&rt, &compacted);
   vkDestroyQueryPool(dev, serial_pool, NULL);
   vkDestroyQueryPool(dev, compacted_pool, NULL);
   tracer_finish(&rt, &t);
   scene_finish(&rt, &scene);
   vkt_context_finish(&rt.ctx);
   return true;
}

/* ---- main --------------------------------------------------------------- */

static const struct {
   const char *name;
   bool (*run)(const char *device_name);  /* false: skipped */
} tests[] = {
   { "pipeline", test_pipeline },
   { "query", test_query },
   { "compact", test_compact },
};

static void
usage(void)
{
   fprintf(stderr, "usage: vk_raytrace [--device NAME] [--test NAME]...\n"
                   "tests:");
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(tests); i++)
      fprintf(stderr, " %s", tests[i].name);
   fprintf(stderr, "\n");
   exit(1);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool selected[VKT_ARRAY_SIZE(tests)] = { false };
   bool any_selected = false;

   vkt_set_prog(PROG);
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--test") && i + 1 < argc) {
         const char *name = argv[++i];
         unsigned t;

         for (t = 0; t < VKT_ARRAY_SIZE(tests); t++)
            if (!strcmp(tests[t].name, name))
               break;
         if (t == VKT_ARRAY_SIZE(tests)) {
            fprintf(stderr, PROG ": no sub-test named '%s'\n", name);
            usage();
         }
         selected[t] = any_selected = true;
      } else {
         usage();
      }
   }

   unsigned passed = 0, skipped = 0;
   for (unsigned t = 0; t < VKT_ARRAY_SIZE(tests); t++) {
      if (any_selected && !selected[t])
         continue;
      if (tests[t].run(device_name))
         passed++;
      else
         skipped++;
      fflush(stdout);
   }
   vkt_set_prog(PROG);
   printf(PROG ": OK: %u sub-test%s passed, %u skipped on '%s'\n", passed,
          passed == 1 ? "" : "s", skipped, device_used);
   return 0;
}
