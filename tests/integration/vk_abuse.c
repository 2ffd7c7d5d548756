/* SPDX-License-Identifier: MIT */
/*
 * vk_abuse: records a command buffer that breaks a rule the host driver
 * trusts the application with (each one crashes lavapipe used directly).
 * Through gpud the daemon must refuse it: the program sees
 * VK_ERROR_DEVICE_LOST, and the daemon, and everyone else, carry on.
 *
 *   vk_abuse CASE      (vk_abuse --list shows the cases)
 *
 * Exit status 0 when some call returned VK_ERROR_DEVICE_LOST, 1 when the
 * abuse went through unnoticed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

static struct vkt_context ctx;
static bool lost;
/* What the program made, destroyed at the end (even with the device lost). */
static VkBuffer buffers[16];
static VkDeviceMemory memories[16];
static unsigned n_buffers, n_memories;

static VkResult
note(const char *call, VkResult r)
{
   printf("vk_abuse: %s: %s\n", call, vkt_result_name(r));
   lost |= r == VK_ERROR_DEVICE_LOST;
   return r;
}

/* A 4 KiB transfer buffer, bound to memory of its own unless told not to. */
static VkBuffer
buffer(bool bind, VkDeviceMemory *ret_memory)
{
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = 4096,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
   };
   VkBuffer b = VK_NULL_HANDLE;
   if (note("vkCreateBuffer", vkCreateBuffer(ctx.device, &info, NULL, &b)) != VK_SUCCESS)
      return b;
   buffers[n_buffers++] = b;
   if (!bind)
      return b;
   VkMemoryRequirements req;
   vkGetBufferMemoryRequirements(ctx.device, b, &req);
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .allocationSize = req.size,
      .memoryTypeIndex = (uint32_t)__builtin_ctz(req.memoryTypeBits),
   };
   VkDeviceMemory m = VK_NULL_HANDLE;
   if (note("vkAllocateMemory", vkAllocateMemory(ctx.device, &alloc, NULL, &m)) == VK_SUCCESS &&
       !ret_memory)
      memories[n_memories++] = m;
   note("vkBindBufferMemory", vkBindBufferMemory(ctx.device, b, m, 0));
   if (ret_memory)
      *ret_memory = m;
   return b;
}

/* A set of one binding (2 storage buffers) written at a binding its layout
 * lacks, or past its end. */
static void
write_outside_layout(bool missing)
{
   const VkDescriptorSetLayoutBinding binding = {
      .binding = 0,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .descriptorCount = 2,
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
   };
   const VkDescriptorSetLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout layout;
   note("vkCreateDescriptorSetLayout",
        vkCreateDescriptorSetLayout(ctx.device, &layout_info, NULL, &layout));
   const VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 1,
      .poolSizeCount = 1,
      .pPoolSizes = &size,
   };
   VkDescriptorPool pool;
   note("vkCreateDescriptorPool", vkCreateDescriptorPool(ctx.device, &pool_info, NULL, &pool));
   const VkDescriptorSetAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &layout,
   };
   VkDescriptorSet set = VK_NULL_HANDLE;
   note("vkAllocateDescriptorSets", vkAllocateDescriptorSets(ctx.device, &alloc, &set));
   VkDescriptorBufferInfo infos[8];
   for (unsigned i = 0; i < 8; i++)
      infos[i] = (VkDescriptorBufferInfo){buffer(true, NULL), 0, VK_WHOLE_SIZE};
   const VkWriteDescriptorSet write = {
      .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
      .dstSet = set,
      .dstBinding = missing ? 5 : 0,
      .dstArrayElement = missing ? 0 : 1,
      .descriptorCount = missing ? 1 : 8,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .pBufferInfo = infos,
   };
   vkUpdateDescriptorSets(ctx.device, 1, &write, 0, NULL);
   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, layout, NULL);
}

int
main(int argc, char **argv)
{
   static const char *const cases[] = {
      "dispatch-without-pipeline", "copy-out-of-range",   "fill-out-of-range",
      "update-out-of-range",       "fill-unbound-buffer", "submit-after-free",
      "write-missing-binding",     "write-past-binding",
   };
   if (argc == 2 && !strcmp(argv[1], "--list")) {
      for (size_t i = 0; i < VKT_ARRAY_SIZE(cases); i++)
         printf("%s\n", cases[i]);
      return 0;
   }
   if (argc != 2) {
      fprintf(stderr, "usage: vk_abuse CASE | --list\n");
      return 2;
   }
   const char *c = argv[1];
   vkt_context_init(&ctx, "vk_abuse", NULL, 0);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   VkDeviceMemory memory = VK_NULL_HANDLE;
   if (!strcmp(c, "dispatch-without-pipeline")) {
      vkCmdDispatch(cmd, 1, 1, 1);
   } else if (!strcmp(c, "copy-out-of-range")) {
      VkBuffer a = buffer(true, NULL), b = buffer(true, NULL);
      const VkBufferCopy region = {0, 0, 16u << 20};
      vkCmdCopyBuffer(cmd, a, b, 1, &region);
   } else if (!strcmp(c, "fill-out-of-range")) {
      vkCmdFillBuffer(cmd, buffer(true, NULL), 1u << 20, 4096, 7);
   } else if (!strcmp(c, "update-out-of-range")) {
      static const uint32_t data[128];
      vkCmdUpdateBuffer(cmd, buffer(true, NULL), 4000, sizeof(data), data);
   } else if (!strcmp(c, "fill-unbound-buffer")) {
      vkCmdFillBuffer(cmd, buffer(false, NULL), 0, VK_WHOLE_SIZE, 7);
   } else if (!strcmp(c, "submit-after-free")) {
      vkCmdFillBuffer(cmd, buffer(true, &memory), 0, VK_WHOLE_SIZE, 7);
   } else if (!strcmp(c, "write-missing-binding") || !strcmp(c, "write-past-binding")) {
      write_outside_layout(!strcmp(c, "write-missing-binding"));
   } else {
      fprintf(stderr, "vk_abuse: unknown case %s\n", c);
      return 2;
   }
   note("vkEndCommandBuffer", vkEndCommandBuffer(cmd));
   if (memory)
      vkFreeMemory(ctx.device, memory, NULL);
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   note("vkQueueSubmit", vkQueueSubmit(ctx.queue, 1, &submit, VK_NULL_HANDLE));
   note("vkQueueWaitIdle", vkQueueWaitIdle(ctx.queue));
   for (unsigned i = 0; i < n_buffers; i++)
      vkDestroyBuffer(ctx.device, buffers[i], NULL);
   for (unsigned i = 0; i < n_memories; i++)
      vkFreeMemory(ctx.device, memories[i], NULL);
   vkt_context_finish(&ctx);
   if (!lost) {
      printf("vk_abuse: %s went through unnoticed\n", c);
      return 1;
   }
   printf("vk_abuse: %s: the device is lost to this client\n", c);
   return 0;
}
