/* SPDX-License-Identifier: MIT */
/*
 * vk_lost: device loss when the daemon dies.
 *
 * Submits a command buffer that waits on a timeline semaphore value nobody
 * signals, with a fence, prints "WAITING" and blocks in vkWaitForFences. The
 * harness kills the daemon at that point; every call below must then return
 * VK_ERROR_DEVICE_LOST promptly:
 *
 *   vkWaitForFences: RESULT elapsed_ms=MS
 *   vkQueueSubmit: RESULT
 *   vkDeviceWaitIdle: RESULT
 *   vkAllocateMemory: RESULT
 *
 * Exit 0 when the first three are VK_ERROR_DEVICE_LOST and vkAllocateMemory
 * fails with an error it may return (it has no VK_ERROR_DEVICE_LOST). The program then destroys
 * everything it created, which must not crash or hang either.
 *
 * --hold-mb N first allocates and writes N MiB of host-visible memory, so a
 * test can see that memory come back when the client is killed.
 *
 * --selftest-timeout-ms N waits N ms instead of forever (for a driver with
 * no daemon to kill): the wait must give VK_TIMEOUT, then the program
 * signals the semaphore itself and expects VK_SUCCESS from the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool selftest = false;
   uint64_t hold_mb = 0;
   uint64_t selftest_ms = 0;
   struct vkt_context ctx;
   VkResult r;
   bool ok = true;

   vkt_set_prog("vk_lost");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--hold-mb") && i + 1 < argc) {
         hold_mb = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else if (!strcmp(argv[i], "--selftest-timeout-ms")) {
         selftest = true;
         selftest_ms = vkt_parse_u64(argv[i], argv[i + 1]);
         i++;
      } else {
         fprintf(stderr, "usage: vk_lost [--device NAME] [--hold-mb N] "
                         "[--selftest-timeout-ms N]\n");
         return 1;
      }
   }

   vkt_context_init(&ctx, "vk_lost", device_name,
                    VKT_FEATURE_TIMELINE_SEMAPHORE);

   const VkSemaphoreTypeCreateInfo timeline_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 0,
   };
   const VkSemaphoreCreateInfo sem_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = &timeline_info,
   };
   VkSemaphore sem;
   VKT_CHECK(vkCreateSemaphore(ctx.device, &sem_info, NULL, &sem));

   const VkFenceCreateInfo fence_info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
   };
   VkFence fence;
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &fence));

   VkDeviceMemory held = VK_NULL_HANDLE;
   if (hold_mb) {
      const VkMemoryAllocateInfo hold_info = {
         .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
         .allocationSize = hold_mb << 20,
         .memoryTypeIndex = vkt_memory_type(&ctx, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0),
      };
      void *map;
      VKT_CHECK(vkAllocateMemory(ctx.device, &hold_info, NULL, &held));
      VKT_CHECK(vkMapMemory(ctx.device, held, 0, VK_WHOLE_SIZE, 0, &map));
      memset(map, 0x5a, hold_info.allocationSize);
      vkUnmapMemory(ctx.device, held);
   }

   /* Some real work behind the wait. */
   struct vkt_buffer buf;
   vkt_buffer_create(&ctx, 4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, false,
                     &buf);
   const VkCommandBufferAllocateInfo cmd_alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx.cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
   };
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
   };
   VkCommandBuffer cmd;
   VKT_CHECK(vkAllocateCommandBuffers(ctx.device, &cmd_alloc, &cmd));
   VKT_CHECK(vkBeginCommandBuffer(cmd, &begin));
   vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0xdeadbeef);
   VKT_CHECK(vkEndCommandBuffer(cmd));

   const uint64_t wait_value = 1;
   const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
   const VkTimelineSemaphoreSubmitInfo timeline_submit = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = 1,
      .pWaitSemaphoreValues = &wait_value,
   };
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &timeline_submit,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &sem,
      .pWaitDstStageMask = &wait_stage,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx.queue, 1, &submit, fence));

   printf("WAITING\n");
   fflush(stdout);

   uint64_t timeout = selftest ? selftest_ms * 1000000ull : UINT64_MAX;
   uint64_t t0 = vkt_now_ns();
   r = vkWaitForFences(ctx.device, 1, &fence, VK_TRUE, timeout);
   double elapsed_ms = (double)(vkt_now_ns() - t0) / 1e6;
   printf("vkWaitForFences: %s elapsed_ms=%.1f\n", vkt_result_name(r),
          elapsed_ms);
   fflush(stdout);

   VkResult expect = VK_ERROR_DEVICE_LOST;
   if (selftest) {
      if (r != VK_TIMEOUT) {
         fprintf(stderr, "vk_lost: FAIL: vkWaitForFences: expected "
                         "VK_TIMEOUT in selftest mode\n");
         ok = false;
      }
      /* Release the queue so the calls below can complete. */
      const VkSemaphoreSignalInfo signal = {
         .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
         .semaphore = sem,
         .value = wait_value,
      };
      VKT_CHECK(vkSignalSemaphore(ctx.device, &signal));
      VKT_CHECK(vkWaitForFences(ctx.device, 1, &fence, VK_TRUE,
                                10000000000ull));
      expect = VK_SUCCESS;
   } else if (r != VK_ERROR_DEVICE_LOST) {
      fprintf(stderr, "vk_lost: FAIL: vkWaitForFences returned %s, expected "
                      "VK_ERROR_DEVICE_LOST\n", vkt_result_name(r));
      ok = false;
   }

   r = vkQueueSubmit(ctx.queue, 0, NULL, VK_NULL_HANDLE);
   printf("vkQueueSubmit: %s\n", vkt_result_name(r));
   fflush(stdout);
   if (r != expect) {
      fprintf(stderr, "vk_lost: FAIL: vkQueueSubmit returned %s, expected "
                      "%s\n", vkt_result_name(r), vkt_result_name(expect));
      ok = false;
   }

   r = vkDeviceWaitIdle(ctx.device);
   printf("vkDeviceWaitIdle: %s\n", vkt_result_name(r));
   fflush(stdout);
   if (r != expect) {
      fprintf(stderr, "vk_lost: FAIL: vkDeviceWaitIdle returned %s, "
                      "expected %s\n", vkt_result_name(r),
              vkt_result_name(expect));
      ok = false;
   }

   /* vkAllocateMemory cannot return VK_ERROR_DEVICE_LOST (vk.xml lists
    * OUT_OF_HOST/DEVICE_MEMORY, INVALID_EXTERNAL_HANDLE and
    * INVALID_OPAQUE_CAPTURE_ADDRESS): once the device is lost it must fail
    * with one of those and make no memory. */
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = 65536,
      .memoryTypeIndex = vkt_memory_type(&ctx, ~0u,
                                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                         0),
   };
   VkDeviceMemory memory = VK_NULL_HANDLE;
   r = vkAllocateMemory(ctx.device, &alloc, NULL, &memory);
   printf("vkAllocateMemory: %s\n", vkt_result_name(r));
   fflush(stdout);
   bool legal = selftest ? r == VK_SUCCESS
                         : (r == VK_ERROR_OUT_OF_HOST_MEMORY ||
                            r == VK_ERROR_OUT_OF_DEVICE_MEMORY) &&
                              memory == VK_NULL_HANDLE;
   if (!legal) {
      fprintf(stderr, "vk_lost: FAIL: vkAllocateMemory returned %s, expected %s\n",
              vkt_result_name(r),
              selftest ? "VK_SUCCESS" : "an out-of-memory error and no memory");
      ok = false;
   }

   /* Informational: the spec allows either the status or DEVICE_LOST. */
   r = vkGetFenceStatus(ctx.device, fence);
   printf("vkGetFenceStatus: %s (not checked)\n", vkt_result_name(r));
   fflush(stdout);

   /* Tear down: must neither crash nor hang on a lost device. */
   if (memory != VK_NULL_HANDLE)
      vkFreeMemory(ctx.device, memory, NULL);
   if (held != VK_NULL_HANDLE)
      vkFreeMemory(ctx.device, held, NULL);
   vkFreeCommandBuffers(ctx.device, ctx.cmd_pool, 1, &cmd);
   vkt_buffer_destroy(&ctx, &buf);
   vkDestroyFence(ctx.device, fence, NULL);
   vkDestroySemaphore(ctx.device, sem, NULL);
   vkt_context_finish(&ctx);
   printf("cleanup: done\n");

   if (!ok)
      return 1;
   printf("vk_lost: OK (%s)\n", selftest ? "selftest" : "device lost");
   return 0;
}
