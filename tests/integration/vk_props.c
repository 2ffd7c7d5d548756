/* SPDX-License-Identifier: MIT */
/*
 * vk_props: prints what a device says of itself in the core feature and
 * property structures, Vulkan 1.1 to the newest the headers know, as lines
 * the test compares between a host driver used directly and gpud:
 *
 *   apiVersion: 1.4.305
 *   VkPhysicalDeviceVulkan14Features.hostImageCopy: 1
 *   VkPhysicalDeviceVulkan13Properties: 0100000080000000...
 *   VkPhysicalDeviceVulkan14Properties.pCopySrcLayouts[0]: 1
 *
 * Structures are printed as hex after their header (the 1.4 ones member
 * by member), arrays the application sizes (the host image copy layouts)
 * element by element after a first call that asks only their count.  With
 * a Vulkan 1.4 device it also maps memory with vkMapMemory2, writes through
 * the mapping and reads it back after vkUnmapMemory2 and a second mapping;
 * with VK_KHR_pipeline_executable_properties it prints a compute pipeline's
 * executables, statistics and internal representations (a hash of each).
 * Where the device offers them, the properties compute programs choose
 * their kernels by (llama.cpp's ggml: the multiprocessor count, the
 * cooperative-matrix shapes and limits), asked for in one chain behind the
 * core ones, as ggml asks.
 *
 *   vk_props [--device NAME]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "props_comp_spv.h"

static void
hex(const char *name, const void *s, size_t size)
{
   /* after sType and pNext */
   const unsigned char *b = (const unsigned char *)s + sizeof(VkBaseOutStructure);
   printf("%s: ", name);
   for (size_t i = 0; i < size - sizeof(VkBaseOutStructure); i++)
      printf("%02x", b[i]);
   printf("\n");
}

/* n output structures of size bytes for the two-call idiom's second call,
 * each with its sType (room for one where n is 0). */
static void *
out_array(uint32_t n, size_t size, VkStructureType stype)
{
   unsigned char *a = calloc(n + 1, size);
   if (!a)
      vkt_fail("out of memory");
   for (uint32_t i = 0; i < n; i++)
      ((VkBaseOutStructure *)(a + i * size))->sType = stype;
   return a;
}

#if defined(VK_KHR_cooperative_matrix) || defined(VK_NV_cooperative_matrix2)
/* Each of n structures of size bytes as hex, named NAME[i]. */
static void
hex_each(const char *name, const void *a, uint32_t n, size_t size)
{
   for (uint32_t i = 0; i < n; i++) {
      char label[96];
      snprintf(label, sizeof(label), "%s[%u]", name, i);
      hex(label, (const unsigned char *)a + i * size, size);
   }
}
#endif

#ifdef VK_VERSION_1_4
static void
print_layouts(const char *owner, const char *what, uint32_t count, const VkImageLayout *layouts)
{
   printf("%s.%sCount: %u\n", owner, what, count);
   for (uint32_t i = 0; layouts && i < count; i++)
      printf("%s.%s[%u]: %d\n", owner, what, i, (int)layouts[i]);
}

/* vkMapMemory2 and vkUnmapMemory2 on host-visible memory: what is written
 * through one mapping is read through the next. */
static void
map_memory2(VkInstance instance, VkPhysicalDevice pdev)
{
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   vkt_context_init_physical(&ctx, instance, pdev, 0);
   const uint32_t type = vkt_memory_type(&ctx, ~0u,
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                         0);
   if (type == UINT32_MAX)
      vkt_fail("no host-visible coherent memory");
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = 65536,
      .memoryTypeIndex = type,
   };
   VkDeviceMemory memory;
   VKT_CHECK(vkAllocateMemory(ctx.device, &alloc, NULL, &memory));
   PFN_vkMapMemory2 map2 = (PFN_vkMapMemory2)vkGetDeviceProcAddr(ctx.device, "vkMapMemory2");
   PFN_vkUnmapMemory2 unmap2 =
      (PFN_vkUnmapMemory2)vkGetDeviceProcAddr(ctx.device, "vkUnmapMemory2");
   if (!map2 || !unmap2)
      vkt_fail("a Vulkan 1.4 device without vkMapMemory2 or vkUnmapMemory2");
   VkMemoryMapInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_MAP_INFO,
      .memory = memory,
      .offset = 4096,
      .size = VK_WHOLE_SIZE,
   };
   const VkMemoryUnmapInfo unmap = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_UNMAP_INFO,
      .memory = memory,
   };
   uint32_t *p;
   VKT_CHECK(map2(ctx.device, &info, (void **)&p));
   for (uint32_t i = 0; i < 1024; i++)
      p[i] = i * 2654435761u;
   VKT_CHECK(unmap2(ctx.device, &unmap));
   info.offset = 0;
   VKT_CHECK(map2(ctx.device, &info, (void **)&p));
   for (uint32_t i = 0; i < 1024; i++) {
      if (p[1024 + i] != i * 2654435761u)
         vkt_fail("vkMapMemory2: word %u reads 0x%x after a remap", i, p[1024 + i]);
   }
   VKT_CHECK(unmap2(ctx.device, &unmap));
   vkFreeMemory(ctx.device, memory, NULL);
   vkt_context_finish_device(&ctx);
   printf("vkMapMemory2: 4096 bytes written at offset 4096 read back\n");
}
#endif

#ifdef VK_KHR_pipeline_executable_properties
/* FNV-1a of an internal representation's bytes. */
static uint64_t
fnv1a(const void *data, size_t size)
{
   uint64_t h = 0xcbf29ce484222325ull;
   for (size_t i = 0; i < size; i++)
      h = (h ^ ((const uint8_t *)data)[i]) * 0x100000001b3ull;
   return h;
}

/* VK_KHR_pipeline_executable_properties: a compute pipeline's executables,
 * their statistics and internal representations (what profilers show),
 * each asked for with the two-call idiom. */
static void
executables(VkInstance instance, VkPhysicalDevice pdev)
{
   if (!vkt_device_has_extension(pdev, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
      printf("pipeline executables: the device has no "
             "VK_KHR_pipeline_executable_properties\n");
      return;
   }
   static const char *const exts[] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
   VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
      .pipelineExecutableInfo = VK_TRUE,
   };
   struct vkt_context ctx;
   memset(&ctx, 0, sizeof(ctx));
   vkt_context_init_physical_ext(&ctx, instance, pdev, 0, exts, 1, &want);
#define LOAD(name) ((PFN_##name)vkGetDeviceProcAddr(ctx.device, #name))
   PFN_vkGetPipelineExecutablePropertiesKHR get_props =
      LOAD(vkGetPipelineExecutablePropertiesKHR);
   PFN_vkGetPipelineExecutableStatisticsKHR get_stats =
      LOAD(vkGetPipelineExecutableStatisticsKHR);
   PFN_vkGetPipelineExecutableInternalRepresentationsKHR get_irs =
      LOAD(vkGetPipelineExecutableInternalRepresentationsKHR);
#undef LOAD
   if (!get_props || !get_stats || !get_irs)
      vkt_fail("VK_KHR_pipeline_executable_properties without its commands");
   const VkDescriptorSetLayoutBinding binding = {
      0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL,
   };
   const VkDescriptorSetLayoutCreateInfo set_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_info, NULL, &set_layout));
   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &set_layout,
   };
   VkPipelineLayout layout;
   VKT_CHECK(vkCreatePipelineLayout(ctx.device, &layout_info, NULL, &layout));
   VkPipeline pipeline =
      vkt_compute_pipeline(&ctx, props_comp_spv, sizeof(props_comp_spv), layout,
                           VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                              VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR);

   const VkPipelineInfoKHR pinfo = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
      .pipeline = pipeline,
   };
   uint32_t n = 0;
   VKT_CHECK(get_props(ctx.device, &pinfo, &n, NULL));
   VkPipelineExecutablePropertiesKHR *props =
      out_array(n, sizeof(*props), VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR);
   VKT_CHECK(get_props(ctx.device, &pinfo, &n, props));
   printf("pipeline executables: %u\n", n);
   for (uint32_t e = 0; e < n; e++) {
      printf("executable %u: %s (%s) stages 0x%x subgroup %u\n", e, props[e].name,
             props[e].description, props[e].stages, props[e].subgroupSize);
      const VkPipelineExecutableInfoKHR einfo = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
         .pipeline = pipeline,
         .executableIndex = e,
      };
      uint32_t ns = 0;
      VKT_CHECK(get_stats(ctx.device, &einfo, &ns, NULL));
      VkPipelineExecutableStatisticKHR *stats =
         out_array(ns, sizeof(*stats), VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR);
      VKT_CHECK(get_stats(ctx.device, &einfo, &ns, stats));
      for (uint32_t i = 0; i < ns; i++) {
         printf("executable %u statistic %s: ", e, stats[i].name);
         switch (stats[i].format) {
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
            printf("%u\n", stats[i].value.b32);
            break;
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
            printf("%lld\n", (long long)stats[i].value.i64);
            break;
         case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            printf("%llu\n", (unsigned long long)stats[i].value.u64);
            break;
         default:
            printf("%g\n", stats[i].value.f64);
            break;
         }
      }
      free(stats);
      /* the internal representations: counts, then sizes, then the data */
      uint32_t nr = 0;
      VKT_CHECK(get_irs(ctx.device, &einfo, &nr, NULL));
      VkPipelineExecutableInternalRepresentationKHR *irs = out_array(
         nr, sizeof(*irs), VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR);
      VKT_CHECK(get_irs(ctx.device, &einfo, &nr, irs));
      for (uint32_t i = 0; i < nr; i++) {
         irs[i].pData = malloc(irs[i].dataSize + 1);
         if (!irs[i].pData)
            vkt_fail("out of memory");
      }
      VKT_CHECK(get_irs(ctx.device, &einfo, &nr, irs));
      for (uint32_t i = 0; i < nr; i++) {
         printf("executable %u representation %s: %s, %zu bytes, fnv1a %016llx\n", e,
                irs[i].name, irs[i].isText ? "text" : "binary", irs[i].dataSize,
                (unsigned long long)fnv1a(irs[i].pData, irs[i].dataSize));
         free(irs[i].pData);
      }
      free(irs);
   }
   free(props);
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_context_finish_device(&ctx);
}
#endif

/* The extension properties compute programs tune their kernels by, each
 * where the device offers its extension, all in one chain behind the core
 * structures as ggml asks for them (Vulkan 1.1's structure beside the
 * subgroup one, which the specification does not allow and drivers answer
 * all the same); then the cooperative-matrix shapes. */
static void
tuning_properties(VkInstance instance, VkPhysicalDevice pdev)
{
   VkPhysicalDeviceSubgroupProperties subgroup = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
   VkPhysicalDeviceVulkan11Properties p11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES,
                                             &subgroup};
   VkPhysicalDeviceVulkan12Properties p12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES,
                                             &p11};
   VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p12};
   VkBaseOutStructure *last = (VkBaseOutStructure *)&subgroup;
#define CHAIN(ext, type, stype)                                                   \
   type ext##_props = {.sType = stype};                                          \
   const bool ext##_on = vkt_device_has_extension(pdev, #ext);                   \
   if (ext##_on) {                                                                \
      last->pNext = (VkBaseOutStructure *)&ext##_props;                          \
      last = (VkBaseOutStructure *)&ext##_props;                                 \
   }
#ifdef VK_NV_shader_sm_builtins
   CHAIN(VK_NV_shader_sm_builtins, VkPhysicalDeviceShaderSMBuiltinsPropertiesNV,
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV)
#endif
#ifdef VK_AMD_shader_core_properties2
   CHAIN(VK_AMD_shader_core_properties2, VkPhysicalDeviceShaderCoreProperties2AMD,
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD)
#endif
#ifdef VK_KHR_cooperative_matrix
   CHAIN(VK_KHR_cooperative_matrix, VkPhysicalDeviceCooperativeMatrixPropertiesKHR,
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR)
#endif
#ifdef VK_NV_cooperative_matrix2
   CHAIN(VK_NV_cooperative_matrix2, VkPhysicalDeviceCooperativeMatrix2PropertiesNV,
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV)
#endif
#undef CHAIN
   vkGetPhysicalDeviceProperties2(pdev, &props);
   hex("VkPhysicalDeviceSubgroupProperties (chained)", &subgroup, sizeof(subgroup));
#ifdef VK_NV_shader_sm_builtins
   if (VK_NV_shader_sm_builtins_on)
      hex("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", &VK_NV_shader_sm_builtins_props,
          sizeof(VK_NV_shader_sm_builtins_props));
#endif
#ifdef VK_AMD_shader_core_properties2
   if (VK_AMD_shader_core_properties2_on)
      hex("VkPhysicalDeviceShaderCoreProperties2AMD", &VK_AMD_shader_core_properties2_props,
          sizeof(VK_AMD_shader_core_properties2_props));
#endif
#ifdef VK_KHR_cooperative_matrix
   if (VK_KHR_cooperative_matrix_on) {
      hex("VkPhysicalDeviceCooperativeMatrixPropertiesKHR", &VK_KHR_cooperative_matrix_props,
          sizeof(VK_KHR_cooperative_matrix_props));
      PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
         (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
      uint32_t n = 0;
      if (get && get(pdev, &n, NULL) == VK_SUCCESS && n) {
         VkCooperativeMatrixPropertiesKHR *m =
            out_array(n, sizeof(*m), VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
         VKT_CHECK(get(pdev, &n, m));
         hex_each("VkCooperativeMatrixPropertiesKHR", m, n, sizeof(*m));
         free(m);
      }
   }
#endif
#ifdef VK_NV_cooperative_matrix2
   if (VK_NV_cooperative_matrix2_on) {
      hex("VkPhysicalDeviceCooperativeMatrix2PropertiesNV", &VK_NV_cooperative_matrix2_props,
          sizeof(VK_NV_cooperative_matrix2_props));
      PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV get =
         (PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)
            vkGetInstanceProcAddr(instance,
                                  "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
      uint32_t n = 0;
      if (get && get(pdev, &n, NULL) == VK_SUCCESS && n) {
         VkCooperativeMatrixFlexibleDimensionsPropertiesNV *m = out_array(
            n, sizeof(*m), VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV);
         VKT_CHECK(get(pdev, &n, m));
         hex_each("VkCooperativeMatrixFlexibleDimensionsPropertiesNV", m, n, sizeof(*m));
         free(m);
      }
   }
#endif
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   vkt_set_prog("vk_props");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_props [--device NAME]\n");
         return 2;
      }
   }
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_props",
      .apiVersion = VK_MAKE_API_VERSION(0, 1, 4, 0),
   };
   const VkInstanceCreateInfo instance_info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&instance_info, NULL, &instance));
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);

   VkPhysicalDeviceProperties base;
   vkGetPhysicalDeviceProperties(pdev, &base);
   printf("apiVersion: %u.%u.%u\n", VK_API_VERSION_MAJOR(base.apiVersion),
          VK_API_VERSION_MINOR(base.apiVersion), VK_API_VERSION_PATCH(base.apiVersion));
   const bool is14 = base.apiVersion >= VK_MAKE_API_VERSION(0, 1, 4, 0);
   (void)is14; /* (headers older than 1.4 know nothing to ask) */

   VkPhysicalDeviceVulkan11Properties p11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
   VkPhysicalDeviceVulkan12Properties p12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES,
                                             &p11};
   VkPhysicalDeviceVulkan13Properties p13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES,
                                             &p12};
   VkPhysicalDeviceProperties2 props = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p13};
   VkPhysicalDeviceVulkan11Features f11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
   VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                           &f11};
   VkPhysicalDeviceVulkan13Features f13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                           &f12};
   VkPhysicalDeviceFeatures2 features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f13};
#ifdef VK_VERSION_1_4
   VkPhysicalDeviceVulkan14Properties p14 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_4_PROPERTIES,
                                             &p13};
   VkPhysicalDeviceVulkan14Features f14 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_4_FEATURES,
                                           &f13};
   if (is14) {
      props.pNext = &p14;
      features.pNext = &f14;
   }
#endif
   vkGetPhysicalDeviceProperties2(pdev, &props);
   vkGetPhysicalDeviceFeatures2(pdev, &features);
   /* (the 1.2 strings name the driver, which gpud passes on as it is) */
   hex("VkPhysicalDeviceVulkan11Properties", &p11, sizeof(p11));
   hex("VkPhysicalDeviceVulkan12Properties", &p12, sizeof(p12));
   hex("VkPhysicalDeviceVulkan13Properties", &p13, sizeof(p13));
   hex("VkPhysicalDeviceVulkan11Features", &f11, sizeof(f11));
   hex("VkPhysicalDeviceVulkan12Features", &f12, sizeof(f12));
   hex("VkPhysicalDeviceVulkan13Features", &f13, sizeof(f13));
#ifdef VK_VERSION_1_4
   if (is14) {
#define F(m) printf("VkPhysicalDeviceVulkan14Features." #m ": %u\n", f14.m)
      F(globalPriorityQuery); F(shaderSubgroupRotate); F(shaderSubgroupRotateClustered);
      F(shaderFloatControls2); F(shaderExpectAssume); F(rectangularLines);
      F(bresenhamLines); F(smoothLines); F(stippledRectangularLines);
      F(stippledBresenhamLines); F(stippledSmoothLines); F(vertexAttributeInstanceRateDivisor);
      F(vertexAttributeInstanceRateZeroDivisor); F(indexTypeUint8); F(dynamicRenderingLocalRead);
      F(maintenance5); F(maintenance6); F(pipelineProtectedAccess); F(pipelineRobustness);
      F(hostImageCopy); F(pushDescriptor);
#undef F
#define P(m) printf("VkPhysicalDeviceVulkan14Properties." #m ": %llu\n", (unsigned long long)p14.m)
      P(lineSubPixelPrecisionBits); P(maxVertexAttribDivisor);
      P(supportsNonZeroFirstInstance); P(maxPushDescriptors);
      P(dynamicRenderingLocalReadDepthStencilAttachments);
      P(dynamicRenderingLocalReadMultisampledAttachments);
      P(earlyFragmentMultisampleCoverageAfterSampleCounting);
      P(earlyFragmentSampleMaskTestBeforeSampleCounting); P(depthStencilSwizzleOneSupport);
      P(polygonModePointSize); P(nonStrictSinglePixelWideLinesUseParallelogram);
      P(nonStrictWideLinesUseParallelogram); P(blockTexelViewCompatibleMultipleLayers);
      P(maxCombinedImageSamplerDescriptorCount); P(fragmentShadingRateClampCombinerInputs);
      P(defaultRobustnessStorageBuffers); P(defaultRobustnessUniformBuffers);
      P(defaultRobustnessVertexInputs); P(defaultRobustnessImages);
      P(identicalMemoryTypeRequirements);
#undef P
      printf("VkPhysicalDeviceVulkan14Properties.optimalTilingLayoutUUID: ");
      for (unsigned i = 0; i < VK_UUID_SIZE; i++)
         printf("%02x", p14.optimalTilingLayoutUUID[i]);
      printf("\n");
      /* the layout arrays: counts first, then the arrays */
      VkImageLayout *src = calloc(p14.copySrcLayoutCount + 1, sizeof(*src));
      VkImageLayout *dst = calloc(p14.copyDstLayoutCount + 1, sizeof(*dst));
      if (!src || !dst)
         vkt_fail("out of memory");
      p14.pCopySrcLayouts = src;
      p14.pCopyDstLayouts = dst;
      vkGetPhysicalDeviceProperties2(pdev, &props);
      print_layouts("VkPhysicalDeviceVulkan14Properties", "copySrcLayout",
                    p14.copySrcLayoutCount, src);
      print_layouts("VkPhysicalDeviceVulkan14Properties", "copyDstLayout",
                    p14.copyDstLayoutCount, dst);
      free(src);
      free(dst);
   }
#endif
#ifdef VK_VERSION_1_4
   if (is14)
      map_memory2(instance, pdev);
#endif
   tuning_properties(instance, pdev);
#ifdef VK_KHR_pipeline_executable_properties
   executables(instance, pdev);
#endif
   vkDestroyInstance(instance, NULL);
   return 0;
}
