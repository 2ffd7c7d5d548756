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
 * the mapping and reads it back after vkUnmapMemory2 and a second mapping.
 *
 *   vk_props [--device NAME]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

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
   vkDestroyInstance(instance, NULL);
   return 0;
}
