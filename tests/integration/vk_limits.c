/* SPDX-License-Identifier: MIT */
/*
 * vk_limits: what an application sees at a driver's limits.
 *
 *   vk_limits memory [--chunk-mb N] [--hold] [--device NAME]
 *      Allocates host-visible memory in N MiB chunks (default 64), writing
 *      every page, until an allocation fails; prints
 *        allocated: K chunks of N MiB, then RESULT
 *      then frees one chunk, checks the device still fills a buffer right
 *      and allocates the chunk again (must succeed).  With --hold it then prints
 *      READY and keeps everything until it is killed.  Where the device has
 *      VK_EXT_memory_budget, the heap's usage must be what was allocated and
 *      its budget less than a chunk more, at the limit; prints
 *        budget: heap H usage U budget B
 *   vk_limits objects [--device NAME]
 *      Creates buffers (no memory) until creation fails; prints
 *        objects: K, then RESULT
 *      then destroys 10 and creates 10 again (must succeed).
 *
 * Exit 0 when the first failure was an out-of-memory error (device or host
 * memory for allocations, host memory for objects), the client carried on
 * and the retry succeeded; 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vkt_common.h"

#define MAX_CHUNKS 4096
#define MAX_OBJECTS (1u << 20)

static struct vkt_context ctx;

static VkDeviceMemory
allocate(uint32_t type, VkDeviceSize size, VkResult *ret)
{
   const VkMemoryAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = size,
      .memoryTypeIndex = type,
   };
   VkDeviceMemory memory = VK_NULL_HANDLE;
   *ret = vkAllocateMemory(ctx.device, &info, NULL, &memory);
   if (*ret != VK_SUCCESS)
      return VK_NULL_HANDLE;
   void *map;
   VKT_CHECK(vkMapMemory(ctx.device, memory, 0, VK_WHOLE_SIZE, 0, &map));
   memset(map, 0xa5, size); /* real memory, not just an address range */
   vkUnmapMemory(ctx.device, memory);
   return memory;
}

/* The device still works: fill a buffer and read it back. */
static void
check_device(void)
{
   struct vkt_buffer buf;
   vkt_buffer_create(&ctx, 4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &buf);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0x0badcafe);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &buf);
   for (unsigned i = 0; i < 1024; i++) {
      if (((const uint32_t *)buf.map)[i] != 0x0badcafe)
         vkt_fail("the device no longer fills buffers right");
   }
   vkt_buffer_destroy(&ctx, &buf);
}

static bool
has_memory_budget(void)
{
   uint32_t n = 0;
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(ctx.physical_device, NULL, &n, NULL));
   VkExtensionProperties *exts = calloc(n ? n : 1, sizeof(*exts));
   if (!exts)
      vkt_fail("out of memory");
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(ctx.physical_device, NULL, &n, exts));
   bool found = false;
   for (uint32_t i = 0; i < n; i++)
      found |= !strcmp(exts[i].extensionName, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
   free(exts);
   return found;
}

/* At the limit: usage is what was allocated, and the budget leaves less
 * than another chunk. */
static bool
check_budget(uint32_t heap, VkDeviceSize allocated, VkDeviceSize chunk)
{
   VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
   };
   VkPhysicalDeviceMemoryProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
      .pNext = &budget,
   };
   vkGetPhysicalDeviceMemoryProperties2(ctx.physical_device, &props);
   printf("budget: heap %u usage %llu budget %llu\n", heap,
          (unsigned long long)budget.heapUsage[heap], (unsigned long long)budget.heapBudget[heap]);
   if (budget.heapUsage[heap] < allocated || budget.heapBudget[heap] < budget.heapUsage[heap]) {
      fprintf(stderr, "vk_limits: FAIL: heap usage %llu, budget %llu after allocating %llu\n",
              (unsigned long long)budget.heapUsage[heap],
              (unsigned long long)budget.heapBudget[heap], (unsigned long long)allocated);
      return false;
   }
   return true;
}

static int
test_memory(uint64_t chunk_mb, bool hold)
{
   static VkDeviceMemory chunks[MAX_CHUNKS];
   const VkDeviceSize size = chunk_mb << 20;
   uint32_t type = vkt_memory_type(&ctx, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0);
   if (type == UINT32_MAX)
      vkt_fail("no host-visible memory type");
   /* a full device-local heap is out of device memory, another out of host
    * memory */
   uint32_t heap = ctx.mem_props.memoryTypes[type].heapIndex;
   printf("heap: %u, %s\n", heap,
          ctx.mem_props.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? "device-local"
                                                                                : "host");
   unsigned n = 0;
   VkResult r = VK_SUCCESS;
   while (n < MAX_CHUNKS) {
      chunks[n] = allocate(type, size, &r);
      if (!chunks[n])
         break;
      n++;
   }
   printf("allocated: %u chunks of %llu MiB, then %s\n", n, (unsigned long long)chunk_mb,
          vkt_result_name(r));
   fflush(stdout);
   bool ok = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY;
   if (!ok)
      fprintf(stderr, "vk_limits: FAIL: the allocation failed with %s\n", vkt_result_name(r));
   if (has_memory_budget() && !check_budget(heap, n * size, size))
      ok = false;
   if (n > 0) {
      /* with one chunk freed the device works, and the chunk comes back */
      vkFreeMemory(ctx.device, chunks[--n], NULL);
      check_device();
      chunks[n] = allocate(type, size, &r);
      printf("reallocated: %s\n", vkt_result_name(r));
      if (chunks[n])
         n++;
      else
         ok = false;
   }
   if (hold) {
      printf("READY\n");
      fflush(stdout);
      for (;;)
         pause();
   }
   while (n > 0)
      vkFreeMemory(ctx.device, chunks[--n], NULL);
   return ok ? 0 : 1;
}

static int
test_objects(void)
{
   VkBuffer *buffers = calloc(MAX_OBJECTS, sizeof(*buffers));
   if (!buffers)
      vkt_fail("out of memory");
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = 256,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
   };
   unsigned n = 0;
   VkResult r = VK_SUCCESS;
   while (n < MAX_OBJECTS && (r = vkCreateBuffer(ctx.device, &info, NULL, &buffers[n])) ==
                                VK_SUCCESS)
      n++;
   printf("objects: %u, then %s\n", n, vkt_result_name(r));
   fflush(stdout);
   bool ok = r == VK_ERROR_OUT_OF_HOST_MEMORY;
   if (!ok)
      fprintf(stderr, "vk_limits: FAIL: creation failed with %s\n", vkt_result_name(r));
   unsigned again = n < 10 ? n : 10;
   for (unsigned i = 0; i < again; i++)
      vkDestroyBuffer(ctx.device, buffers[--n], NULL);
   check_device();
   for (unsigned i = 0; i < again; i++) {
      r = vkCreateBuffer(ctx.device, &info, NULL, &buffers[n]);
      if (r != VK_SUCCESS) {
         fprintf(stderr, "vk_limits: FAIL: creating again: %s\n", vkt_result_name(r));
         ok = false;
         break;
      }
      n++;
   }
   printf("recreated: %u\n", again);
   while (n > 0)
      vkDestroyBuffer(ctx.device, buffers[--n], NULL);
   free(buffers);
   return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL, *mode = NULL;
   uint64_t chunk_mb = 64;
   bool hold = false;
   vkt_set_prog("vk_limits");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc)
         device_name = argv[++i];
      else if (!strcmp(argv[i], "--chunk-mb") && i + 1 < argc)
         chunk_mb = vkt_parse_u64(argv[i], argv[i + 1]), i++;
      else if (!strcmp(argv[i], "--hold"))
         hold = true;
      else if (!mode && (!strcmp(argv[i], "memory") || !strcmp(argv[i], "objects")))
         mode = argv[i];
      else
         mode = NULL, i = argc;
   }
   if (!mode || !chunk_mb) {
      fprintf(stderr, "usage: vk_limits memory [--chunk-mb N] [--hold] | objects "
                      "[--device NAME]\n");
      return 2;
   }
   vkt_context_init(&ctx, "vk_limits", device_name, 0);
   int r = !strcmp(mode, "memory") ? test_memory(chunk_mb, hold) : test_objects();
   vkt_context_finish(&ctx);
   if (r == 0)
      printf("vk_limits: OK\n");
   return r;
}
