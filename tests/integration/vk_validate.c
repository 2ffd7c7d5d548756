/* SPDX-License-Identifier: MIT */
/*
 * vk_validate: a call that breaks a valid-usage rule reaches the
 * application's VK_EXT_debug_utils messenger with its VUID, and the
 * application carries on.
 *
 * Creates an instance with VK_EXT_debug_utils, a messenger in the create
 * info's chain and one made with vkCreateDebugUtilsMessengerEXT, then
 * creates a buffer with no usage bits (breaks
 * VUID-VkBufferCreateInfo-usage-requiredbitmask; drivers create it all the
 * same), then fills and reads back a buffer to show the device still works.
 * Run with the validation layer (directly) or through a gpud started with
 * --validate.  Prints every message it gets as "message: ID: TEXT".
 *
 *   vk_validate [--device NAME]
 *
 * Exit 0 when the messenger saw the VUID and the fill read back right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

#define EXPECTED_VUID "VUID-VkBufferCreateInfo-usage-requiredbitmask"

static unsigned seen, seen_expected;

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   const char *id = data->pMessageIdName ? data->pMessageIdName : "";
   printf("message: %s: %.200s\n", id, data->pMessage ? data->pMessage : "");
   fflush(stdout);
   seen++;
   if (strstr(id, EXPECTED_VUID) || (data->pMessage && strstr(data->pMessage, EXPECTED_VUID)))
      seen_expected++;
   return VK_FALSE;
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   vkt_set_prog("vk_validate");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_validate [--device NAME]\n");
         return 2;
      }
   }

   const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
      .pfnUserCallback = on_message,
   };
   const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_validate",
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pNext = &messenger_info,
      .pApplicationInfo = &app,
      .enabledExtensionCount = 1,
      .ppEnabledExtensionNames = &ext,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&ci, NULL, &instance));
   PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                               "vkCreateDebugUtilsMessengerEXT");
   PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
      (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
         instance, "vkDestroyDebugUtilsMessengerEXT");
   if (!create_messenger || !destroy_messenger)
      vkt_fail("no vkCreateDebugUtilsMessengerEXT");
   VkDebugUtilsMessengerEXT messenger;
   VKT_CHECK(create_messenger(instance, &messenger_info, NULL, &messenger));

   struct vkt_context ctx;
   ctx.prog = "vk_validate";
   vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, device_name), 0);

   /* The rule breaker: a buffer with no usage. */
   const VkBufferCreateInfo bad = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = 256,
      .usage = 0,
   };
   VkBuffer buffer = VK_NULL_HANDLE;
   VkResult r = vkCreateBuffer(ctx.device, &bad, NULL, &buffer);
   printf("vkCreateBuffer with no usage: %s\n", vkt_result_name(r));
   if (buffer)
      vkDestroyBuffer(ctx.device, buffer, NULL);

   /* The device still works. */
   struct vkt_buffer buf;
   vkt_buffer_create(&ctx, 4096, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &buf);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdFillBuffer(cmd, buf.buffer, 0, VK_WHOLE_SIZE, 0x5eedf00d);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &buf);
   const uint32_t *words = buf.map;
   unsigned wrong = 0;
   for (unsigned i = 0; i < 1024; i++)
      wrong += words[i] != 0x5eedf00d;
   vkt_buffer_destroy(&ctx, &buf);
   vkt_context_finish_device(&ctx);
   destroy_messenger(instance, messenger, NULL);
   vkDestroyInstance(instance, NULL);

   printf("messages: %u, with %s: %u\n", seen, EXPECTED_VUID, seen_expected);
   if (wrong)
      vkt_fail("%u of 1024 words wrong after the fill", wrong);
   if (!seen_expected)
      vkt_fail("the messenger never saw %s", EXPECTED_VUID);
   printf("vk_validate: OK\n");
   return 0;
}
