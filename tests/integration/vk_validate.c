/* SPDX-License-Identifier: MIT */
/*
 * vk_validate: a call that breaks a valid-usage rule reaches the
 * application's VK_EXT_debug_utils messenger with its VUID, and its
 * VK_EXT_debug_report callback as an error, and the application carries on.
 *
 * Creates an instance with VK_EXT_debug_utils and VK_EXT_debug_report, a
 * messenger and a report callback in the create info's chain and one of each
 * made with vkCreateDebugUtilsMessengerEXT and
 * vkCreateDebugReportCallbackEXT, names the device with
 * vkSetDebugUtilsObjectNameEXT, then creates a buffer with no usage bits
 * (breaks VUID-VkBufferCreateInfo-usage-requiredbitmask; drivers create it
 * all the same), then fills and reads back a buffer to show the device still
 * works.  Run with the validation layer (directly) or through a gpud started
 * with --validate.  Prints every message it gets as "message: ID: TEXT" (the
 * messengers) or "report: FLAGS CODE PREFIX: TEXT" (the report callbacks),
 * each with "(create info)" when it came to one from the chain.
 *
 *   vk_validate [--device NAME]
 *
 * Exit 0 when the messenger saw the VUID, the report callback saw it with
 * VK_DEBUG_REPORT_ERROR_BIT_EXT, both with the device's name in the text
 * (the validation layer names the objects it speaks of: through gpud, the
 * name reached the daemon's layer), neither of the chain's saw it (they
 * hear only vkCreateInstance and vkDestroyInstance), and the fill read back
 * right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"

#define EXPECTED_VUID "VUID-VkBufferCreateInfo-usage-requiredbitmask"
#define DEVICE_NAME "vk_validate's device"

/* What one messenger or report callback heard (its pUserData). */
struct heard {
   const char *what; /* "" or " (create info)" */
   unsigned seen, seen_expected;
   unsigned expected_errors; /* report callbacks: with ERROR_BIT */
   unsigned expected_named;  /* naming the device by its name */
};

static struct heard messenger_heard = {""}, chain_messenger_heard = {" (create info)"};
static struct heard report_heard = {""}, chain_report_heard = {" (create info)"};

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
           const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
   struct heard *h = user;
   const char *id = data->pMessageIdName ? data->pMessageIdName : "";
   printf("message%s: %s: %.200s\n", h->what, id, data->pMessage ? data->pMessage : "");
   fflush(stdout);
   h->seen++;
   if (strstr(id, EXPECTED_VUID) || (data->pMessage && strstr(data->pMessage, EXPECTED_VUID))) {
      h->seen_expected++;
      h->expected_named += data->pMessage && strstr(data->pMessage, DEVICE_NAME);
   }
   return VK_FALSE;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_report(VkDebugReportFlagsEXT flags, VkDebugReportObjectTypeEXT object_type, uint64_t object,
          size_t location, int32_t code, const char *prefix, const char *message, void *user)
{
   struct heard *h = user;
   printf("report%s: 0x%x %d %s: %.200s\n", h->what, (unsigned)flags, code, prefix ? prefix : "",
          message ? message : "");
   fflush(stdout);
   h->seen++;
   if (message && strstr(message, EXPECTED_VUID)) {
      h->seen_expected++;
      h->expected_errors += !!(flags & VK_DEBUG_REPORT_ERROR_BIT_EXT);
      h->expected_named += !!strstr(message, DEVICE_NAME);
   }
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
      .pUserData = &messenger_heard,
   };
   VkDebugUtilsMessengerCreateInfoEXT chain_messenger_info = messenger_info;
   chain_messenger_info.pUserData = &chain_messenger_heard;
   const VkDebugReportCallbackCreateInfoEXT report_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT,
      .flags = VK_DEBUG_REPORT_ERROR_BIT_EXT | VK_DEBUG_REPORT_WARNING_BIT_EXT,
      .pfnCallback = on_report,
      .pUserData = &report_heard,
   };
   const VkDebugReportCallbackCreateInfoEXT chain_report_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT,
      .pNext = &chain_messenger_info,
      .flags = VK_DEBUG_REPORT_ERROR_BIT_EXT | VK_DEBUG_REPORT_WARNING_BIT_EXT,
      .pfnCallback = on_report,
      .pUserData = &chain_report_heard,
   };
   const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_DEBUG_REPORT_EXTENSION_NAME};
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_validate",
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pNext = &chain_report_info,
      .pApplicationInfo = &app,
      .enabledExtensionCount = VKT_ARRAY_SIZE(exts),
      .ppEnabledExtensionNames = exts,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&ci, NULL, &instance));
   PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance,
                                                               "vkCreateDebugUtilsMessengerEXT");
   PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
      (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
         instance, "vkDestroyDebugUtilsMessengerEXT");
   PFN_vkCreateDebugReportCallbackEXT create_report =
      (PFN_vkCreateDebugReportCallbackEXT)vkGetInstanceProcAddr(instance,
                                                                "vkCreateDebugReportCallbackEXT");
   PFN_vkDestroyDebugReportCallbackEXT destroy_report =
      (PFN_vkDestroyDebugReportCallbackEXT)vkGetInstanceProcAddr(
         instance, "vkDestroyDebugReportCallbackEXT");
   if (!create_messenger || !destroy_messenger)
      vkt_fail("no vkCreateDebugUtilsMessengerEXT");
   if (!create_report || !destroy_report)
      vkt_fail("no vkCreateDebugReportCallbackEXT");
   VkDebugUtilsMessengerEXT messenger;
   VKT_CHECK(create_messenger(instance, &messenger_info, NULL, &messenger));
   VkDebugReportCallbackEXT report;
   VKT_CHECK(create_report(instance, &report_info, NULL, &report));

   struct vkt_context ctx;
   ctx.prog = "vk_validate";
   vkt_context_init_physical(&ctx, instance, vkt_physical_device_pick(instance, device_name), 0);

   /* Named: the layer that says what is wrong names the device (through
    * gpud the name has to reach the daemon's layer for that). */
   PFN_vkSetDebugUtilsObjectNameEXT set_name =
      (PFN_vkSetDebugUtilsObjectNameEXT)vkt_device_proc(&ctx, "vkSetDebugUtilsObjectNameEXT");
   const VkDebugUtilsObjectNameInfoEXT name_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
      .objectType = VK_OBJECT_TYPE_DEVICE,
      .objectHandle = (uint64_t)(uintptr_t)ctx.device,
      .pObjectName = DEVICE_NAME,
   };
   VKT_CHECK(set_name(ctx.device, &name_info));

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
   destroy_report(instance, report, NULL);
   destroy_messenger(instance, messenger, NULL);
   vkDestroyInstance(instance, NULL);

   printf("messages: %u, with %s: %u (%u naming the device)\n", messenger_heard.seen,
          EXPECTED_VUID, messenger_heard.seen_expected, messenger_heard.expected_named);
   printf("reports: %u, with %s: %u (%u as errors, %u naming the device)\n", report_heard.seen,
          EXPECTED_VUID, report_heard.seen_expected, report_heard.expected_errors,
          report_heard.expected_named);
   printf("create info messages: %u, with %s: %u; reports: %u, with %s: %u\n",
          chain_messenger_heard.seen, EXPECTED_VUID, chain_messenger_heard.seen_expected,
          chain_report_heard.seen, EXPECTED_VUID, chain_report_heard.seen_expected);
   if (wrong)
      vkt_fail("%u of 1024 words wrong after the fill", wrong);
   if (!messenger_heard.seen_expected)
      vkt_fail("the messenger never saw %s", EXPECTED_VUID);
   if (!report_heard.seen_expected)
      vkt_fail("the report callback never saw %s", EXPECTED_VUID);
   if (!report_heard.expected_errors)
      vkt_fail("the report callback saw %s, but never with VK_DEBUG_REPORT_ERROR_BIT_EXT",
               EXPECTED_VUID);
   if (!messenger_heard.expected_named || !report_heard.expected_named)
      vkt_fail("the %s message does not name the device \"%s\" (vkSetDebugUtilsObjectNameEXT)",
               EXPECTED_VUID, DEVICE_NAME);
   if (chain_messenger_heard.seen_expected || chain_report_heard.seen_expected)
      vkt_fail("a messenger or callback of the create info's chain saw %s, made after "
               "vkCreateInstance", EXPECTED_VUID);
   printf("vk_validate: OK\n");
   return 0;
}
