/* SPDX-License-Identifier: MIT */
/*
 * vk_wsi: a windowed Vulkan program for the WSI tests, on any of the four
 * surfaces (xcb, Xlib, Wayland with xdg-shell, headless).
 *
 *   vk_wsi [options] TEST
 *
 * Each frame is a pattern the CPU writes into a buffer and copies into the
 * swapchain image (pattern_pixel(): the harness computes the same pixels and
 * compares them with a screenshot), so what is shown depends only on the
 * frame number and --seed. With --clear the device clears each frame to a
 * colour instead (for frame rates of large swapchains).
 *
 * Tests:
 *   frames      queries, then --frames frames in --mode; prints the window's
 *               id and the frame rate. With --until FILE it stops early,
 *               once FILE exists (it prints "RUNNING" after its first
 *               frame). With --hold it then prints "HOLDING" and waits to be
 *               killed (for a screenshot).
 *   modes       every present mode the surface offers: the frame rate of
 *               each. With --check-pacing: FIFO and FIFO_RELAXED must be
 *               paced by the display (60 Hz), IMMEDIATE and MAILBOX not
 *               (lavapipe's own WSI does not pace FIFO on Xvfb).
 *   timeout     vkAcquireNextImageKHR with no image free: VK_NOT_READY for a
 *               timeout of 0, VK_TIMEOUT after a finite one; a fence and a
 *               semaphore signalled by acquire.
 *   presentwait VK_KHR_present_id/present_wait: every id completes, a
 *               future one times out.
 *   maintenance VK_EXT_swapchain_maintenance1: a swapchain made for FIFO
 *               and MAILBOX switched between them present by present
 *               (--check-pacing: MAILBOX must not be paced), a fence
 *               signalled by every present.
 *   resize      (X11) the window resized: VK_ERROR_OUT_OF_DATE_KHR or
 *               VK_SUBOPTIMAL_KHR, the new extent, a new swapchain made from
 *               the old one; --hold shows the last frame at the new size.
 *   destroy     (X11) the window destroyed under the swapchain:
 *               VK_ERROR_SURFACE_LOST_KHR.
 *   lost        frames until the device is lost (the harness kills the
 *               daemon after "RUNNING"): prints which call returned
 *               VK_ERROR_DEVICE_LOST and exits 0; any hang is a failure.
 *
 * Exit status 0 when the test's checks hold, 1 otherwise, 77 when the
 * platform is not available (no $DISPLAY, no compositor).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <X11/Xlib.h>
#include <wayland-client.h>
#include <xcb/xcb.h>

#define VK_USE_PLATFORM_XCB_KHR
#define VK_USE_PLATFORM_XLIB_KHR
#define VK_USE_PLATFORM_WAYLAND_KHR
#include <vulkan/vulkan.h>

#include "vkt_common.h"
#include "xdg-shell-client-protocol.h"

enum platform { P_XCB, P_XLIB, P_WAYLAND, P_HEADLESS };

static const char *const platform_names[] = {"xcb", "xlib", "wayland", "headless"};

static struct {
   enum platform platform;
   VkPresentModeKHR mode;
   uint32_t frames;
   uint32_t width, height;
   int32_t x, y;
   uint32_t seed;
   uint32_t images;
   bool hold;
   bool check_pacing;
   bool clear; /* frames cleared by the device, not drawn by the CPU */
   const char *until; /* frames: stop once this file exists */
   const char *test;
} opt = {
   .platform = P_XCB,
   .mode = VK_PRESENT_MODE_FIFO_KHR,
   .frames = 30,
   .width = 160,
   .height = 120,
   .x = 0,
   .y = 0,
   .seed = 1,
   .images = 0,
};

/* ---- the window ------------------------------------------------------------- */

static struct {
   xcb_connection_t *xcb;
   xcb_window_t xcb_window;
   Display *dpy;
   Window xlib_window;
   struct wl_display *wl;
   struct wl_compositor *compositor;
   struct xdg_wm_base *wm_base;
   struct wl_surface *wl_surface;
   struct xdg_surface *xdg_surface;
   struct xdg_toplevel *toplevel;
   bool configured;
} win;

static void
wm_base_ping(void *data, struct xdg_wm_base *base, uint32_t serial)
{
   xdg_wm_base_pong(base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {.ping = wm_base_ping};

static void
registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface,
                uint32_t version)
{
   if (strcmp(interface, wl_compositor_interface.name) == 0) {
      win.compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 1);
   } else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
      win.wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
      xdg_wm_base_add_listener(win.wm_base, &wm_base_listener, NULL);
   }
}

static void
registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
   .global = registry_global,
   .global_remove = registry_global_remove,
};

static void
xdg_surface_configure(void *data, struct xdg_surface *surface, uint32_t serial)
{
   xdg_surface_ack_configure(surface, serial);
   win.configured = true;
}

static const struct xdg_surface_listener xdg_surface_listener = {.configure = xdg_surface_configure};

static void
toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width, int32_t height,
                   struct wl_array *states)
{
   /* the size stays ours: the compositor centres what it cannot fit */
}

static void
toplevel_close(void *data, struct xdg_toplevel *toplevel)
{
}

static const struct xdg_toplevel_listener toplevel_listener = {
   .configure = toplevel_configure,
   .close = toplevel_close,
};

static void
skip(const char *why)
{
   fprintf(stderr, "vk_wsi: SKIP: %s\n", why);
   exit(77);
}

static void
window_open(void)
{
   switch (opt.platform) {
   case P_XCB: {
      win.xcb = xcb_connect(NULL, NULL);
      if (xcb_connection_has_error(win.xcb))
         skip("cannot connect to the X server");
      xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(win.xcb)).data;
      win.xcb_window = xcb_generate_id(win.xcb);
      xcb_create_window(win.xcb, XCB_COPY_FROM_PARENT, win.xcb_window, screen->root,
                        (int16_t)opt.x, (int16_t)opt.y, (uint16_t)opt.width,
                        (uint16_t)opt.height, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                        screen->root_visual, 0, NULL);
      xcb_map_window(win.xcb, win.xcb_window);
      free(xcb_get_input_focus_reply(win.xcb, xcb_get_input_focus(win.xcb), NULL));
      printf("window 0x%x\n", win.xcb_window);
      break;
   }
   case P_XLIB:
      win.dpy = XOpenDisplay(NULL);
      if (!win.dpy)
         skip("cannot open the X display");
      win.xlib_window = XCreateSimpleWindow(win.dpy, DefaultRootWindow(win.dpy), opt.x, opt.y,
                                            opt.width, opt.height, 0, 0, 0);
      XMapWindow(win.dpy, win.xlib_window);
      XSync(win.dpy, False);
      printf("window 0x%lx\n", win.xlib_window);
      break;
   case P_WAYLAND: {
      win.wl = wl_display_connect(NULL);
      if (!win.wl)
         skip("cannot connect to a Wayland compositor");
      struct wl_registry *registry = wl_display_get_registry(win.wl);
      wl_registry_add_listener(registry, &registry_listener, NULL);
      wl_display_roundtrip(win.wl);
      if (!win.compositor || !win.wm_base)
         skip("the compositor has no wl_compositor or xdg_wm_base");
      win.wl_surface = wl_compositor_create_surface(win.compositor);
      win.xdg_surface = xdg_wm_base_get_xdg_surface(win.wm_base, win.wl_surface);
      xdg_surface_add_listener(win.xdg_surface, &xdg_surface_listener, NULL);
      win.toplevel = xdg_surface_get_toplevel(win.xdg_surface);
      xdg_toplevel_add_listener(win.toplevel, &toplevel_listener, NULL);
      xdg_toplevel_set_title(win.toplevel, "vk_wsi");
      wl_surface_commit(win.wl_surface);
      while (!win.configured) {
         if (wl_display_dispatch(win.wl) < 0)
            vkt_fail("lost the Wayland connection before the first configure");
      }
      wl_registry_destroy(registry);
      printf("window wayland\n");
      break;
   }
   case P_HEADLESS:
      printf("window headless\n");
      break;
   }
   fflush(stdout);
}

/* Between frames: the events the window system sends the program itself. */
static void
window_pump(void)
{
   if (opt.platform == P_WAYLAND) {
      wl_display_dispatch_pending(win.wl);
      wl_display_flush(win.wl);
   }
}

static void
window_resize(uint32_t width, uint32_t height)
{
   const uint32_t values[] = {width, height};
   if (opt.platform == P_XCB) {
      xcb_configure_window(win.xcb, win.xcb_window,
                           XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, values);
      free(xcb_get_input_focus_reply(win.xcb, xcb_get_input_focus(win.xcb), NULL));
   } else if (opt.platform == P_XLIB) {
      XResizeWindow(win.dpy, win.xlib_window, width, height);
      XSync(win.dpy, False);
   }
}

static void
window_destroy(void)
{
   if (opt.platform == P_XCB) {
      xcb_destroy_window(win.xcb, win.xcb_window);
      free(xcb_get_input_focus_reply(win.xcb, xcb_get_input_focus(win.xcb), NULL));
   } else if (opt.platform == P_XLIB) {
      XDestroyWindow(win.dpy, win.xlib_window);
      XSync(win.dpy, False);
   }
}

static void
window_close(void)
{
   switch (opt.platform) {
   case P_XCB:
      xcb_disconnect(win.xcb);
      break;
   case P_XLIB:
      XCloseDisplay(win.dpy);
      break;
   case P_WAYLAND:
      xdg_toplevel_destroy(win.toplevel);
      xdg_surface_destroy(win.xdg_surface);
      wl_surface_destroy(win.wl_surface);
      xdg_wm_base_destroy(win.wm_base);
      wl_compositor_destroy(win.compositor);
      wl_display_disconnect(win.wl);
      break;
   case P_HEADLESS:
      break;
   }
}

/* ---- Vulkan ------------------------------------------------------------------- */

static struct vkt_context ctx;
static VkSurfaceKHR surface;

static const char *
mode_name(VkPresentModeKHR mode)
{
   switch (mode) {
   case VK_PRESENT_MODE_IMMEDIATE_KHR: return "IMMEDIATE";
   case VK_PRESENT_MODE_MAILBOX_KHR: return "MAILBOX";
   case VK_PRESENT_MODE_FIFO_KHR: return "FIFO";
   case VK_PRESENT_MODE_FIFO_RELAXED_KHR: return "FIFO_RELAXED";
   default: return "?";
   }
}

/* The optional extensions the driver offers (all of them through gpud; the
 * harness checks that), printed on one line. */
static struct {
   bool surface_maintenance1;
   bool present_id;
   bool present_wait;
   bool swapchain_maintenance1;
} have;

static bool
in_list(const VkExtensionProperties *props, uint32_t n, const char *name)
{
   for (uint32_t i = 0; i < n; i++) {
      if (strcmp(props[i].extensionName, name) == 0)
         return true;
   }
   return false;
}

static VkInstance
instance_create(void)
{
   const char *const platform_ext[] = {
      VK_KHR_XCB_SURFACE_EXTENSION_NAME, VK_KHR_XLIB_SURFACE_EXTENSION_NAME,
      VK_KHR_WAYLAND_SURFACE_EXTENSION_NAME, VK_EXT_HEADLESS_SURFACE_EXTENSION_NAME};
   VkExtensionProperties props[256];
   uint32_t n = VKT_ARRAY_SIZE(props);
   VKT_CHECK(vkEnumerateInstanceExtensionProperties(NULL, &n, props));
   if (!in_list(props, n, platform_ext[opt.platform]))
      skip("the instance has no surface extension for this platform");
   const char *exts[5] = {VK_KHR_SURFACE_EXTENSION_NAME,
                          VK_KHR_GET_SURFACE_CAPABILITIES_2_EXTENSION_NAME,
                          platform_ext[opt.platform]};
   uint32_t n_exts = 3;
   have.surface_maintenance1 = in_list(props, n, VK_EXT_SURFACE_MAINTENANCE_1_EXTENSION_NAME);
   if (have.surface_maintenance1)
      exts[n_exts++] = VK_EXT_SURFACE_MAINTENANCE_1_EXTENSION_NAME;
   const VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vk_wsi",
      .apiVersion = VK_API_VERSION_1_3,
   };
   const VkInstanceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
      .enabledExtensionCount = n_exts,
      .ppEnabledExtensionNames = exts,
   };
   VkInstance instance;
   VKT_CHECK(vkCreateInstance(&info, NULL, &instance));
   return instance;
}

static void
surface_create(void)
{
   switch (opt.platform) {
   case P_XCB: {
      const VkXcbSurfaceCreateInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_XCB_SURFACE_CREATE_INFO_KHR,
         .connection = win.xcb,
         .window = win.xcb_window,
      };
      VKT_CHECK(vkCreateXcbSurfaceKHR(ctx.instance, &info, NULL, &surface));
      break;
   }
   case P_XLIB: {
      const VkXlibSurfaceCreateInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_XLIB_SURFACE_CREATE_INFO_KHR,
         .dpy = win.dpy,
         .window = win.xlib_window,
      };
      VKT_CHECK(vkCreateXlibSurfaceKHR(ctx.instance, &info, NULL, &surface));
      break;
   }
   case P_WAYLAND: {
      const VkWaylandSurfaceCreateInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_WAYLAND_SURFACE_CREATE_INFO_KHR,
         .display = win.wl,
         .surface = win.wl_surface,
      };
      VKT_CHECK(vkCreateWaylandSurfaceKHR(ctx.instance, &info, NULL, &surface));
      break;
   }
   case P_HEADLESS: {
      const VkHeadlessSurfaceCreateInfoEXT info = {
         .sType = VK_STRUCTURE_TYPE_HEADLESS_SURFACE_CREATE_INFO_EXT,
      };
      PFN_vkCreateHeadlessSurfaceEXT create = (PFN_vkCreateHeadlessSurfaceEXT)
         vkGetInstanceProcAddr(ctx.instance, "vkCreateHeadlessSurfaceEXT");
      VKT_CHECK(create(ctx.instance, &info, NULL, &surface));
      break;
   }
   }
}

/* The surface queries: what every test relies on, checked once. */
static void
check_queries(void)
{
   VkBool32 supported = VK_FALSE;
   VKT_CHECK(vkGetPhysicalDeviceSurfaceSupportKHR(ctx.physical_device, ctx.queue_family, surface,
                                                  &supported));
   if (!supported)
      vkt_fail("queue family %u cannot present to the surface", ctx.queue_family);
   if (opt.platform == P_XCB) {
      xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(win.xcb)).data;
      if (!vkGetPhysicalDeviceXcbPresentationSupportKHR(ctx.physical_device, ctx.queue_family,
                                                        win.xcb, screen->root_visual))
         vkt_fail("vkGetPhysicalDeviceXcbPresentationSupportKHR: no");
   } else if (opt.platform == P_XLIB) {
      if (!vkGetPhysicalDeviceXlibPresentationSupportKHR(
             ctx.physical_device, ctx.queue_family, win.dpy,
             XVisualIDFromVisual(DefaultVisual(win.dpy, DefaultScreen(win.dpy)))))
         vkt_fail("vkGetPhysicalDeviceXlibPresentationSupportKHR: no");
   } else if (opt.platform == P_WAYLAND) {
      if (!vkGetPhysicalDeviceWaylandPresentationSupportKHR(ctx.physical_device,
                                                            ctx.queue_family, win.wl))
         vkt_fail("vkGetPhysicalDeviceWaylandPresentationSupportKHR: no");
   }

   VkSurfaceCapabilitiesKHR caps;
   VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(ctx.physical_device, surface, &caps));
   bool window_sized = opt.platform == P_XCB || opt.platform == P_XLIB;
   if (window_sized && (caps.currentExtent.width != opt.width ||
                        caps.currentExtent.height != opt.height))
      vkt_fail("currentExtent %ux%u, the window is %ux%u", caps.currentExtent.width,
               caps.currentExtent.height, opt.width, opt.height);
   if (!window_sized && caps.currentExtent.width != UINT32_MAX)
      vkt_fail("currentExtent %ux%u, expected the application to choose (0xFFFFFFFF)",
               caps.currentExtent.width, caps.currentExtent.height);
   if (caps.minImageCount < 1 || (caps.maxImageCount && caps.maxImageCount < caps.minImageCount))
      vkt_fail("image counts %u..%u", caps.minImageCount, caps.maxImageCount);
   if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) ||
       !(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
      vkt_fail("supportedUsageFlags 0x%x lack colour attachment or transfer dst",
               caps.supportedUsageFlags);

   /* the same through VK_KHR_get_surface_capabilities2, with a present
    * mode (VK_EXT_surface_maintenance1) */
   VkSurfacePresentModeEXT mode = {
      .sType = VK_STRUCTURE_TYPE_SURFACE_PRESENT_MODE_EXT,
      .presentMode = VK_PRESENT_MODE_FIFO_KHR,
   };
   const VkPhysicalDeviceSurfaceInfo2KHR info2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SURFACE_INFO_2_KHR,
      .pNext = have.surface_maintenance1 ? &mode : NULL,
      .surface = surface,
   };
   VkPresentModeKHR compatible[4];
   VkSurfacePresentModeCompatibilityEXT compat = {
      .sType = VK_STRUCTURE_TYPE_SURFACE_PRESENT_MODE_COMPATIBILITY_EXT,
      .presentModeCount = 4,
      .pPresentModes = compatible,
   };
   VkSurfaceCapabilities2KHR caps2 = {
      .sType = VK_STRUCTURE_TYPE_SURFACE_CAPABILITIES_2_KHR,
      .pNext = have.surface_maintenance1 ? &compat : NULL,
   };
   VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilities2KHR(ctx.physical_device, &info2, &caps2));
   /* a present mode may need other image counts (VK_EXT_surface_maintenance1),
    * nothing else */
   VkSurfaceCapabilitiesKHR same = caps2.surfaceCapabilities;
   if (have.surface_maintenance1) {
      if (same.minImageCount < 1 || (same.maxImageCount && same.maxImageCount < same.minImageCount))
         vkt_fail("FIFO's image counts %u..%u", same.minImageCount, same.maxImageCount);
      same.minImageCount = caps.minImageCount;
      same.maxImageCount = caps.maxImageCount;
   }
   if (memcmp(&same, &caps, sizeof(caps)) != 0)
      vkt_fail("vkGetPhysicalDeviceSurfaceCapabilities2KHR differs from ...CapabilitiesKHR");
   bool fifo_compatible = false;
   for (uint32_t i = 0; i < compat.presentModeCount && i < 4; i++)
      fifo_compatible |= compatible[i] == VK_PRESENT_MODE_FIFO_KHR;
   if (have.surface_maintenance1 && !fifo_compatible)
      vkt_fail("FIFO is not compatible with itself (%u modes)", compat.presentModeCount);
   if (have.surface_maintenance1) {
      /* the mode asked about comes first, also in a short array; the count
       * alone is all of them */
      compat.presentModeCount = 1;
      compatible[0] = VK_PRESENT_MODE_MAX_ENUM_KHR;
      VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilities2KHR(ctx.physical_device, &info2, &caps2));
      if (compat.presentModeCount != 1 || compatible[0] != VK_PRESENT_MODE_FIFO_KHR)
         vkt_fail("a 1-mode compatibility array holds %u modes, the first %d",
                  compat.presentModeCount, compatible[0]);
      compat.pPresentModes = NULL;
      compat.presentModeCount = 0;
      VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilities2KHR(ctx.physical_device, &info2, &caps2));
      if (compat.presentModeCount < 1)
         vkt_fail("no present mode is compatible with FIFO");
   }

   uint32_t n = 0;
   VKT_CHECK(vkGetPhysicalDeviceSurfaceFormatsKHR(ctx.physical_device, surface, &n, NULL));
   VkSurfaceFormatKHR formats[16];
   if (n == 0 || n > 16)
      vkt_fail("%u surface formats", n);
   if (n > 1) {
      /* (first: a layer keeps what the last call returned) */
      uint32_t fewer = 1;
      VKT_EXPECT(vkGetPhysicalDeviceSurfaceFormatsKHR(ctx.physical_device, surface, &fewer,
                                                      formats),
                 VK_INCOMPLETE);
   }
   VKT_CHECK(vkGetPhysicalDeviceSurfaceFormatsKHR(ctx.physical_device, surface, &n, formats));
   bool bgra = false;
   for (uint32_t i = 0; i < n; i++)
      bgra |= formats[i].format == VK_FORMAT_B8G8R8A8_UNORM;
   if (!bgra)
      vkt_fail("VK_FORMAT_B8G8R8A8_UNORM is not a surface format");

   VkPresentModeKHR modes[8];
   n = 8;
   VKT_CHECK(vkGetPhysicalDeviceSurfacePresentModesKHR(ctx.physical_device, surface, &n, modes));
   bool fifo = false;
   printf("present modes:");
   for (uint32_t i = 0; i < n; i++) {
      printf(" %s", mode_name(modes[i]));
      fifo |= modes[i] == VK_PRESENT_MODE_FIFO_KHR;
   }
   printf("\n");
   if (!fifo)
      vkt_fail("FIFO is not offered; every surface must have it");

   VkRect2D rects[2];
   n = 2;
   VKT_CHECK(vkGetPhysicalDevicePresentRectanglesKHR(ctx.physical_device, surface, &n, rects));
   if (window_sized && (n != 1 || rects[0].extent.width != opt.width ||
                        rects[0].extent.height != opt.height))
      vkt_fail("present rectangles: %u, the first %ux%u", n, n ? rects[0].extent.width : 0,
               n ? rects[0].extent.height : 0);
}

static bool
mode_offered(VkPresentModeKHR mode)
{
   VkPresentModeKHR modes[8];
   uint32_t n = 8;
   VKT_CHECK(vkGetPhysicalDeviceSurfacePresentModesKHR(ctx.physical_device, surface, &n, modes));
   for (uint32_t i = 0; i < n; i++) {
      if (modes[i] == mode)
         return true;
   }
   return false;
}

/* ---- the swapchain and its frames ------------------------------------------------ */

#define MAX_IMAGES 8

struct chain {
   VkSwapchainKHR swapchain;
   VkExtent2D extent;
   VkPresentModeKHR mode;
   uint32_t n_images;
   VkImage images[MAX_IMAGES];
   /* per image: the pattern's buffer, its copy, and when they are free */
   struct vkt_buffer staging[MAX_IMAGES];
   VkCommandBuffer cmds[MAX_IMAGES];
   VkFence done[MAX_IMAGES];
   VkSemaphore rendered[MAX_IMAGES];
   /* per frame in flight: the acquire semaphore */
   VkSemaphore acquired[MAX_IMAGES + 1];
   uint32_t next_acquired;
   uint64_t present_id;
   /* VK_EXT_swapchain_maintenance1: a fence each present signals, and the
    * mode of each present (when switch_mode) */
   VkFence present_fence;
   bool switch_mode;
   VkPresentModeKHR present_mode;
};

static PFN_vkWaitForPresentKHR wait_for_present;

/* The colour of pixel (x, y) in frame `frame`, as B, G, R, A bytes; the
 * harness has the same formula. */
static void
pattern_pixel(uint32_t x, uint32_t y, uint32_t frame, uint8_t px[4])
{
   px[0] = (uint8_t)(x + frame * 3u);
   px[1] = (uint8_t)(y * 2u + opt.seed * 50u);
   px[2] = (uint8_t)((x ^ y) + frame);
   px[3] = 255;
}

static void
chain_create_modes(struct chain *c, VkPresentModeKHR mode, struct chain *old,
                   const VkPresentModeKHR *modes, uint32_t n_modes);

static void
chain_create(struct chain *c, VkPresentModeKHR mode, struct chain *old)
{
   chain_create_modes(c, mode, old, NULL, 0);
}

/* With modes: a swapchain made for each of them
 * (VkSwapchainPresentModesCreateInfoEXT). */
static void
chain_create_modes(struct chain *c, VkPresentModeKHR mode, struct chain *old,
                   const VkPresentModeKHR *modes, uint32_t n_modes)
{
   VkSurfaceCapabilitiesKHR caps;
   VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(ctx.physical_device, surface, &caps));
   VkExtent2D extent = caps.currentExtent;
   if (extent.width == UINT32_MAX)
      extent = (VkExtent2D){opt.width, opt.height};
   uint32_t count = opt.images ? opt.images : caps.minImageCount + 1;
   if (caps.maxImageCount && count > caps.maxImageCount)
      count = caps.maxImageCount;
   const VkSwapchainPresentModesCreateInfoEXT modes_info = {
      .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_PRESENT_MODES_CREATE_INFO_EXT,
      .presentModeCount = n_modes,
      .pPresentModes = modes,
   };
   const VkSwapchainCreateInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR,
      .pNext = n_modes ? &modes_info : NULL,
      .surface = surface,
      .minImageCount = count,
      .imageFormat = VK_FORMAT_B8G8R8A8_UNORM,
      .imageColorSpace = VK_COLOR_SPACE_SRGB_NONLINEAR_KHR,
      .imageExtent = extent,
      .imageArrayLayers = 1,
      .imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
      .imageSharingMode = VK_SHARING_MODE_EXCLUSIVE,
      .preTransform = VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR,
      .compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR,
      .presentMode = mode,
      .clipped = VK_TRUE,
      .oldSwapchain = old ? old->swapchain : VK_NULL_HANDLE,
   };
   memset(c, 0, sizeof(*c));
   c->extent = extent;
   c->mode = mode;
   VKT_CHECK(vkCreateSwapchainKHR(ctx.device, &info, NULL, &c->swapchain));
   c->n_images = MAX_IMAGES;
   VKT_CHECK(vkGetSwapchainImagesKHR(ctx.device, c->swapchain, &c->n_images, c->images));
   if (c->n_images < count)
      vkt_fail("asked for %u images at least, got %u", count, c->n_images);

   const VkSemaphoreCreateInfo sem_info = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
   const VkFenceCreateInfo fence_info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
      .flags = VK_FENCE_CREATE_SIGNALED_BIT,
   };
   const VkCommandBufferAllocateInfo cmd_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = ctx.cmd_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = c->n_images,
   };
   VKT_CHECK(vkAllocateCommandBuffers(ctx.device, &cmd_info, c->cmds));
   for (uint32_t i = 0; i < c->n_images; i++) {
      vkt_buffer_create(&ctx, (VkDeviceSize)extent.width * extent.height * 4,
                        VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &c->staging[i]);
      VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &c->done[i]));
      VKT_CHECK(vkCreateSemaphore(ctx.device, &sem_info, NULL, &c->rendered[i]));
   }
   for (uint32_t i = 0; i <= c->n_images; i++)
      VKT_CHECK(vkCreateSemaphore(ctx.device, &sem_info, NULL, &c->acquired[i]));
}

static void
chain_destroy(struct chain *c)
{
   /* the device may be lost: nothing here may fail the program */
   vkDeviceWaitIdle(ctx.device);
   for (uint32_t i = 0; i < c->n_images; i++) {
      vkt_buffer_destroy(&ctx, &c->staging[i]);
      vkDestroyFence(ctx.device, c->done[i], NULL);
      vkDestroySemaphore(ctx.device, c->rendered[i], NULL);
   }
   for (uint32_t i = 0; i <= c->n_images; i++)
      vkDestroySemaphore(ctx.device, c->acquired[i], NULL);
   vkFreeCommandBuffers(ctx.device, ctx.cmd_pool, c->n_images, c->cmds);
   vkDestroySwapchainKHR(ctx.device, c->swapchain, NULL);
   memset(c, 0, sizeof(*c));
}

/* Where a frame's calls stopped when they did not succeed. */
struct frame_result {
   VkResult result;
   const char *call;
};

#define FRAME_CALL(fr, expr)                                                \
   do {                                                                     \
      VkResult r_ = (expr);                                                 \
      if (r_ != VK_SUCCESS) {                                               \
         (fr).result = r_;                                                  \
         (fr).call = #expr;                                                 \
         if (r_ < 0)                                                        \
            return (fr);                                                    \
      }                                                                     \
   } while (0)

/* Acquires an image, fills it with frame `frame`'s pattern and presents it. */
static struct frame_result
frame_draw(struct chain *c, uint32_t frame)
{
   struct frame_result fr = {VK_SUCCESS, NULL};
   VkSemaphore acquired = c->acquired[c->next_acquired];
   uint32_t index;
   FRAME_CALL(fr, vkAcquireNextImageKHR(ctx.device, c->swapchain, 10ull * 1000000000ull,
                                        acquired, VK_NULL_HANDLE, &index));
   if (fr.result == VK_TIMEOUT || fr.result == VK_NOT_READY)
      vkt_fail("vkAcquireNextImageKHR: %s after 10 s", vkt_result_name(fr.result));
   if (index >= c->n_images)
      vkt_fail("vkAcquireNextImageKHR: index %u of %u images", index, c->n_images);
   c->next_acquired = (c->next_acquired + 1) % (c->n_images + 1);

   FRAME_CALL(fr, vkWaitForFences(ctx.device, 1, &c->done[index], VK_TRUE, 10ull * 1000000000ull));
   FRAME_CALL(fr, vkResetFences(ctx.device, 1, &c->done[index]));

   struct vkt_buffer *buf = &c->staging[index];
   if (!opt.clear) {
      uint8_t *p = buf->map;
      for (uint32_t y = 0; y < c->extent.height; y++) {
         for (uint32_t x = 0; x < c->extent.width; x++, p += 4)
            pattern_pixel(x, y, frame, p);
      }
      vkt_buffer_flush(&ctx, buf);
   }

   VkCommandBuffer cmd = c->cmds[index];
   const VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
   };
   FRAME_CALL(fr, vkBeginCommandBuffer(cmd, &begin));
   VkImageMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .srcAccessMask = 0,
      .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
      .newLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = c->images[index],
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                        0, NULL, 0, NULL, 1, &barrier);
   if (opt.clear) {
      const VkClearColorValue color = {
         .float32 = {(float)(frame % 256) / 255.0f, 0.5f, 1.0f - (float)(frame % 256) / 255.0f,
                     1.0f},
      };
      vkCmdClearColorImage(cmd, c->images[index], VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &color, 1,
                           &barrier.subresourceRange);
   } else {
      const VkBufferImageCopy region = {
         .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
         .imageExtent = {c->extent.width, c->extent.height, 1},
      };
      vkCmdCopyBufferToImage(cmd, buf->buffer, c->images[index],
                             VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
   }
   barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
   barrier.dstAccessMask = 0;
   barrier.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
   barrier.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL, 0, NULL, 1, &barrier);
   FRAME_CALL(fr, vkEndCommandBuffer(cmd));

   const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &acquired,
      .pWaitDstStageMask = &wait_stage,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
      .signalSemaphoreCount = 1,
      .pSignalSemaphores = &c->rendered[index],
   };
   FRAME_CALL(fr, vkQueueSubmit(ctx.queue, 1, &submit, c->done[index]));

   const uint64_t id = ++c->present_id;
   const VkPresentIdKHR present_id = {
      .sType = VK_STRUCTURE_TYPE_PRESENT_ID_KHR,
      .swapchainCount = 1,
      .pPresentIds = &id,
   };
   const VkSwapchainPresentModeInfoEXT mode_info = {
      .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_PRESENT_MODE_INFO_EXT,
      /* (void *: so the 1.3.239 headers declare it) */
      .pNext = have.present_id ? (void *)&present_id : NULL,
      .swapchainCount = 1,
      .pPresentModes = &c->present_mode,
   };
   const VkSwapchainPresentFenceInfoEXT fence_info = {
      .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_PRESENT_FENCE_INFO_EXT,
      .pNext = c->switch_mode ? (void *)&mode_info : mode_info.pNext,
      .swapchainCount = 1,
      .pFences = &c->present_fence,
   };
   const void *present_next = have.present_id ? &present_id : NULL;
   if (c->present_fence)
      present_next = &fence_info;
   else if (c->switch_mode)
      present_next = &mode_info;
   const VkPresentInfoKHR present = {
      .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR,
      .pNext = present_next,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &c->rendered[index],
      .swapchainCount = 1,
      .pSwapchains = &c->swapchain,
      .pImageIndices = &index,
   };
   FRAME_CALL(fr, vkQueuePresentKHR(ctx.queue, &present));
   window_pump();
   return fr;
}

/* Draws frames first..first+n-1 (fewer when --until's file appears: *n
 * says how many); fails on anything but success. Returns the frames per
 * second over all but the first few frames. */
static double
frames_run_until(struct chain *c, uint32_t first, uint32_t *ret_n)
{
   uint32_t n = *ret_n;
   const uint32_t warm = n > 10 ? 5 : 0;
   uint64_t t0 = vkt_now_ns();
   for (uint32_t f = first; f < first + n; f++) {
      if (f == first + warm)
         t0 = vkt_now_ns();
      struct frame_result fr = frame_draw(c, f);
      if (fr.result != VK_SUCCESS)
         vkt_fail("frame %u: %s returned %s", f, fr.call, vkt_result_name(fr.result));
      if (opt.until && f == first) {
         printf("RUNNING\n");
         fflush(stdout);
      }
      if (opt.until && f > first + warm && access(opt.until, F_OK) == 0)
         n = f - first + 1;
   }
   *ret_n = n;
   /* the last present is on the screen */
   VKT_CHECK(vkQueueWaitIdle(ctx.queue));
   if (wait_for_present)
      VKT_CHECK(wait_for_present(ctx.device, c->swapchain, c->present_id, 10ull * 1000000000ull));
   return (double)(n - warm) * 1e9 / (double)(vkt_now_ns() - t0);
}

static double
frames_run(struct chain *c, uint32_t first, uint32_t n)
{
   return frames_run_until(c, first, &n);
}

static void
hold(void)
{
   if (!opt.hold)
      return;
   printf("HOLDING\n");
   fflush(stdout);
   for (;;) {
      window_pump();
      if (opt.platform == P_WAYLAND)
         wl_display_dispatch(win.wl);
      else
         pause();
   }
}

/* ---- tests ------------------------------------------------------------------------ */

static void
test_frames(void)
{
   struct chain c;
   chain_create(&c, opt.mode, NULL);
   printf("swapchain %ux%u, %u images, %s\n", c.extent.width, c.extent.height, c.n_images,
          mode_name(opt.mode));
   uint32_t n = opt.frames;
   double fps = frames_run_until(&c, 0, &n);
   printf("frames %u last %u fps %.1f\n", n, n - 1, fps);
   fflush(stdout);
   hold();
   chain_destroy(&c);
}

static void
test_modes(void)
{
   static const VkPresentModeKHR all[] = {
      VK_PRESENT_MODE_FIFO_KHR, VK_PRESENT_MODE_FIFO_RELAXED_KHR,
      VK_PRESENT_MODE_IMMEDIATE_KHR, VK_PRESENT_MODE_MAILBOX_KHR,
   };
   double fifo_fps = 0;
   uint32_t frame = 0;
   for (uint32_t i = 0; i < VKT_ARRAY_SIZE(all); i++) {
      if (!mode_offered(all[i]))
         continue;
      struct chain c;
      chain_create(&c, all[i], NULL);
      double fps = frames_run(&c, frame, opt.frames);
      frame += opt.frames;
      chain_destroy(&c);
      printf("mode %s fps %.1f\n", mode_name(all[i]), fps);
      fflush(stdout);
      if (all[i] == VK_PRESENT_MODE_FIFO_KHR)
         fifo_fps = fps;
      /* FIFO: one image per refresh (the X server's and Weston's are
       * 60 Hz); the others: as fast as the program draws */
      bool paced = all[i] == VK_PRESENT_MODE_FIFO_KHR ||
                   all[i] == VK_PRESENT_MODE_FIFO_RELAXED_KHR;
      if (opt.platform == P_HEADLESS || !opt.check_pacing)
         continue; /* nothing paces a headless surface */
      if (paced && (fps > 75.0 || fps < 20.0))
         vkt_fail("%s ran at %.1f frames/s; the display runs at 60", mode_name(all[i]), fps);
      if (!paced && fps < 1.5 * fifo_fps)
         vkt_fail("%s ran at %.1f frames/s, not faster than FIFO (%.1f)", mode_name(all[i]),
                  fps, fifo_fps);
   }
}

static void
test_timeout(void)
{
   struct chain c;
   chain_create(&c, VK_PRESENT_MODE_FIFO_KHR, NULL);
   frames_run(&c, 0, 3);

   /* the spec lets an application hold all but minImageCount - 1 */
   VkSurfaceCapabilitiesKHR caps;
   VKT_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(ctx.physical_device, surface, &caps));
   uint32_t may_hold = c.n_images - caps.minImageCount + 1;

   /* acquire every image the swapchain lets go of, with fences; one the
    * display server has not released yet (a loaded machine, a driver whose
    * WSI thread returns images late) is waited for: up to 2 s while fewer
    * than the spec promises are held, 300 ms after that */
   uint32_t held = 0;
   uint32_t indices[MAX_IMAGES];
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VkFence fences[MAX_IMAGES + 1];
   for (;;) {
      VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &fences[held]));
      VkResult r = vkAcquireNextImageKHR(ctx.device, c.swapchain, 0, VK_NULL_HANDLE,
                                         fences[held], &indices[held]);
      if (r == VK_NOT_READY)
         r = vkAcquireNextImageKHR(ctx.device, c.swapchain,
                                   (held < may_hold ? 2000ull : 300ull) * 1000000,
                                   VK_NULL_HANDLE, fences[held], &indices[held]);
      if (r == VK_NOT_READY || r == VK_TIMEOUT)
         break;
      if (r != VK_SUCCESS)
         vkt_fail("acquire %u with timeout 0: %s", held, vkt_result_name(r));
      VKT_CHECK(vkWaitForFences(ctx.device, 1, &fences[held], VK_TRUE, 5ull * 1000000000ull));
      if (++held > c.n_images)
         vkt_fail("acquired %u of %u images", held, c.n_images);
   }
   /* none free: a timeout of 0 says so at once */
   uint32_t none;
   VKT_EXPECT(vkAcquireNextImageKHR(ctx.device, c.swapchain, 0, VK_NULL_HANDLE, fences[held],
                                    &none),
              VK_NOT_READY);
   printf("acquired %u of %u images, then VK_NOT_READY\n", held, c.n_images);
   if (held < may_hold)
      vkt_fail("only %u of %u images could be acquired after the presents completed "
               "(minImageCount %u)", held, c.n_images, caps.minImageCount);

   /* none left: a finite timeout returns VK_TIMEOUT, not before it (a
    * driver that sees that none can come back may say VK_NOT_READY at
    * once; the harness wants VK_TIMEOUT from gpud) */
   uint64_t t0 = vkt_now_ns();
   uint32_t index;
   VkResult r = vkAcquireNextImageKHR(ctx.device, c.swapchain, 50ull * 1000000, VK_NULL_HANDLE,
                                      fences[held], &index);
   double ms = (double)(vkt_now_ns() - t0) / 1e6;
   printf("acquire with a 50 ms timeout: %s after %.1f ms\n", vkt_result_name(r), ms);
   if (r != VK_TIMEOUT && r != VK_NOT_READY)
      vkt_fail("expected VK_TIMEOUT");
   if (r == VK_TIMEOUT && (ms < 49.0 || ms > 2000.0))
      vkt_fail("a 50 ms acquire timeout returned after %.1f ms", ms);
   /* the fence of an acquire that timed out is not signalled */
   VKT_EXPECT(vkGetFenceStatus(ctx.device, fences[held]), VK_NOT_READY);

   /* hand one image back by presenting it; then one is free again within
    * a few refreshes, and acquire signals a semaphore that a submit waits
    * for */
   const VkPresentInfoKHR present = {
      .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR,
      .swapchainCount = 1,
      .pSwapchains = &c.swapchain,
      .pImageIndices = &indices[0],
   };
   /* its contents are undefined (UNDEFINED layout): the pattern is not
    * checked by this test */
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   VkImageMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
      .newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = c.images[indices[0]],
      .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                        VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL, 0, NULL, 1, &barrier);
   vkt_cmd_submit_wait(&ctx, cmd);
   VKT_CHECK(vkQueuePresentKHR(ctx.queue, &present));
   t0 = vkt_now_ns();
   VKT_CHECK(vkAcquireNextImageKHR(ctx.device, c.swapchain, 5ull * 1000000000ull,
                                   c.acquired[0], fences[held], &index));
   printf("an image came back %.1f ms after a present\n", (double)(vkt_now_ns() - t0) / 1e6);
   const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .waitSemaphoreCount = 1,
      .pWaitSemaphores = &c.acquired[0],
      .pWaitDstStageMask = &stage,
   };
   VkFence waited;
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &waited));
   VKT_CHECK(vkQueueSubmit(ctx.queue, 1, &submit, waited));
   VKT_CHECK(vkWaitForFences(ctx.device, 1, &waited, VK_TRUE, 5ull * 1000000000ull));
   VKT_CHECK(vkWaitForFences(ctx.device, 1, &fences[held], VK_TRUE, 5ull * 1000000000ull));
   vkDestroyFence(ctx.device, waited, NULL);

   /* the others go back unpresented (VK_EXT_swapchain_maintenance1) */
   uint32_t back[MAX_IMAGES];
   uint32_t n_back = 0;
   for (uint32_t i = 1; i < held; i++)
      back[n_back++] = indices[i];
   back[n_back++] = index;
   if (!have.swapchain_maintenance1) {
      printf("no VK_EXT_swapchain_maintenance1: the images stay acquired\n");
      for (uint32_t i = 0; i <= held; i++)
         vkDestroyFence(ctx.device, fences[i], NULL);
      chain_destroy(&c);
      return;
   }
   PFN_vkReleaseSwapchainImagesEXT release =
      (PFN_vkReleaseSwapchainImagesEXT)vkt_device_proc(&ctx, "vkReleaseSwapchainImagesEXT");
   const VkReleaseSwapchainImagesInfoEXT release_info = {
      .sType = VK_STRUCTURE_TYPE_RELEASE_SWAPCHAIN_IMAGES_INFO_EXT,
      .swapchain = c.swapchain,
      .imageIndexCount = n_back,
      .pImageIndices = back,
   };
   VKT_CHECK(release(ctx.device, &release_info));
   for (uint32_t i = 0; i <= held; i++)
      vkDestroyFence(ctx.device, fences[i], NULL);
   double fps = frames_run(&c, 3, 5);
   printf("frames after the release: %.1f fps\n", fps);
   chain_destroy(&c);
}

/* VK_EXT_swapchain_maintenance1: a fence per present that signals once
 * the present's waits are done, and the mode switched between presents. */
static void
test_maintenance(void)
{
   if (!have.swapchain_maintenance1)
      skip("the device has no VK_EXT_swapchain_maintenance1");
   const VkPresentModeKHR modes[] = {VK_PRESENT_MODE_FIFO_KHR, VK_PRESENT_MODE_MAILBOX_KHR};
   uint32_t n_modes = mode_offered(VK_PRESENT_MODE_MAILBOX_KHR) ? 2 : 1;
   struct chain c;
   chain_create_modes(&c, VK_PRESENT_MODE_FIFO_KHR, NULL, modes, n_modes);
   const VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &c.present_fence));
   c.switch_mode = true;
   double fps[2] = {0, 0};
   uint32_t f = 0;
   for (uint32_t m = 0; m < n_modes; m++) {
      c.present_mode = modes[m];
      uint64_t t0 = 0;
      for (uint32_t i = 0; i < opt.frames; i++, f++) {
         if (i == 5)
            t0 = vkt_now_ns();
         struct frame_result fr = frame_draw(&c, f);
         if (fr.result != VK_SUCCESS)
            vkt_fail("frame %u: %s returned %s", f, fr.call, vkt_result_name(fr.result));
         /* the present's fence: signalled, then reused */
         VKT_CHECK(vkWaitForFences(ctx.device, 1, &c.present_fence, VK_TRUE,
                                   5ull * 1000000000ull));
         VKT_CHECK(vkResetFences(ctx.device, 1, &c.present_fence));
      }
      fps[m] = (double)(opt.frames - 5) * 1e9 / (double)(vkt_now_ns() - t0);
      printf("present mode %s by VkSwapchainPresentModeInfoEXT: %.1f fps, every present "
             "fence signalled\n", mode_name(modes[m]), fps[m]);
   }
   if (opt.check_pacing && n_modes == 2 && opt.platform != P_HEADLESS && fps[1] < 1.5 * fps[0])
      vkt_fail("MAILBOX presents (%.1f fps) were paced like FIFO (%.1f fps)", fps[1], fps[0]);
   vkDestroyFence(ctx.device, c.present_fence, NULL);
   c.present_fence = VK_NULL_HANDLE;
   chain_destroy(&c);
}

static void
test_presentwait(void)
{
   if (!wait_for_present)
      skip("the device has no VK_KHR_present_wait");
   struct chain c;
   chain_create(&c, opt.mode, NULL);
   for (uint32_t f = 0; f < opt.frames; f++) {
      struct frame_result fr = frame_draw(&c, f);
      if (fr.result != VK_SUCCESS)
         vkt_fail("frame %u: %s returned %s", f, fr.call, vkt_result_name(fr.result));
      if (f % 3 == 2) {
         /* waited for in order, as a frame pacer does */
         VKT_CHECK(wait_for_present(ctx.device, c.swapchain, c.present_id - 1,
                                    5ull * 1000000000ull));
      }
   }
   VKT_CHECK(wait_for_present(ctx.device, c.swapchain, c.present_id, 5ull * 1000000000ull));
   /* an id not presented yet: not completed */
   VKT_EXPECT(wait_for_present(ctx.device, c.swapchain, c.present_id + 5, 0), VK_TIMEOUT);
   uint64_t t0 = vkt_now_ns();
   VKT_EXPECT(wait_for_present(ctx.device, c.swapchain, c.present_id + 5, 30ull * 1000000),
              VK_TIMEOUT);
   double ms = (double)(vkt_now_ns() - t0) / 1e6;
   if (ms < 29.0 || ms > 2000.0)
      vkt_fail("a 30 ms vkWaitForPresentKHR timeout returned after %.1f ms", ms);
   printf("presents 1..%" PRIu64 " completed; %" PRIu64 " timed out after %.1f ms\n",
          c.present_id, c.present_id + 5, ms);
   chain_destroy(&c);
}

static void
test_resize(void)
{
   struct chain c;
   chain_create(&c, opt.mode, NULL);
   frames_run(&c, 0, 5);
   const uint32_t width = opt.width + 40, height = opt.height + 30;
   window_resize(width, height);
   uint32_t f = 5;
   struct frame_result fr = {VK_SUCCESS, NULL};
   for (; f < 200 && fr.result == VK_SUCCESS; f++)
      fr = frame_draw(&c, f);
   if (fr.result != VK_ERROR_OUT_OF_DATE_KHR && fr.result != VK_SUBOPTIMAL_KHR)
      vkt_fail("frames after the window was resized: %s returned %s, expected "
               "VK_ERROR_OUT_OF_DATE_KHR or VK_SUBOPTIMAL_KHR",
               fr.call ? fr.call : "every call", vkt_result_name(fr.result));
   printf("resized to %ux%u: %s from %s after %u frames\n", width, height,
          vkt_result_name(fr.result), fr.call, f - 5);
   opt.width = width;
   opt.height = height;
   check_queries();

   struct chain next;
   chain_create(&next, opt.mode, &c);
   if (next.extent.width != width || next.extent.height != height)
      vkt_fail("the new swapchain is %ux%u, the window %ux%u", next.extent.width,
               next.extent.height, width, height);
   chain_destroy(&c);
   frames_run(&next, f, opt.frames);
   printf("frames %u last %u on the new swapchain (%ux%u)\n", opt.frames, f + opt.frames - 1,
          width, height);
   fflush(stdout);
   hold();
   chain_destroy(&next);
}

static void
test_destroy(void)
{
   struct chain c;
   chain_create(&c, opt.mode, NULL);
   frames_run(&c, 0, 5);
   window_destroy();
   struct frame_result fr = {VK_SUCCESS, NULL};
   uint32_t f = 5;
   for (; f < 200 && fr.result >= 0; f++)
      fr = frame_draw(&c, f);
   printf("window destroyed: %s from %s after %u frames\n", vkt_result_name(fr.result),
          fr.call ? fr.call : "-", f - 5);
   if (fr.result != VK_ERROR_SURFACE_LOST_KHR)
      vkt_fail("expected VK_ERROR_SURFACE_LOST_KHR");
   VkSurfaceCapabilitiesKHR caps;
   VKT_EXPECT(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(ctx.physical_device, surface, &caps),
              VK_ERROR_SURFACE_LOST_KHR);
   chain_destroy(&c);
}

static void
test_lost(void)
{
   struct chain c;
   chain_create(&c, opt.mode, NULL);
   uint64_t t_first = 0;
   for (uint32_t f = 0;; f++) {
      struct frame_result fr = frame_draw(&c, f);
      if (f == 10) {
         printf("RUNNING\n");
         fflush(stdout);
      }
      if (fr.result == VK_ERROR_DEVICE_LOST) {
         printf("DEVICE_LOST from %s at frame %u\n", fr.call, f);
         break;
      }
      if (fr.result < 0 && !t_first) {
         t_first = vkt_now_ns();
         printf("frame %u: %s returned %s\n", f, fr.call, vkt_result_name(fr.result));
      }
      if (t_first && vkt_now_ns() - t_first > 5ull * 1000000000ull)
         vkt_fail("errors but no VK_ERROR_DEVICE_LOST for 5 s");
   }
   fflush(stdout);
   chain_destroy(&c);
}

/* ---- main ----------------------------------------------------------------------- */

static void
usage(void)
{
   fprintf(stderr,
           "usage: vk_wsi [--platform xcb|xlib|wayland|headless] [--mode fifo|relaxed|"
           "immediate|mailbox]\n"
           "              [--frames N] [--size WxH] [--pos X,Y] [--seed N] [--images N] "
           "[--until FILE] [--hold] [--check-pacing] [--clear]\n"
           "              frames|modes|timeout|presentwait|maintenance|resize|destroy|lost\n");
   exit(2);
}

int
main(int argc, char **argv)
{
   vkt_set_prog("vk_wsi");
   for (int i = 1; i < argc; i++) {
      const char *a = argv[i];
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (strcmp(a, "--hold") == 0) {
         opt.hold = true;
         continue;
      }
      if (strcmp(a, "--check-pacing") == 0) {
         opt.check_pacing = true;
         continue;
      }
      if (strcmp(a, "--clear") == 0) {
         opt.clear = true;
         continue;
      }
      if (a[0] != '-') {
         opt.test = a;
         continue;
      }
      if (!v)
         usage();
      i++;
      if (strcmp(a, "--platform") == 0) {
         bool found = false;
         for (unsigned p = 0; p < VKT_ARRAY_SIZE(platform_names); p++) {
            if (strcmp(v, platform_names[p]) == 0) {
               opt.platform = p;
               found = true;
            }
         }
         if (!found)
            usage();
      } else if (strcmp(a, "--mode") == 0) {
         if (strcmp(v, "fifo") == 0)
            opt.mode = VK_PRESENT_MODE_FIFO_KHR;
         else if (strcmp(v, "relaxed") == 0)
            opt.mode = VK_PRESENT_MODE_FIFO_RELAXED_KHR;
         else if (strcmp(v, "immediate") == 0)
            opt.mode = VK_PRESENT_MODE_IMMEDIATE_KHR;
         else if (strcmp(v, "mailbox") == 0)
            opt.mode = VK_PRESENT_MODE_MAILBOX_KHR;
         else
            usage();
      } else if (strcmp(a, "--frames") == 0) {
         opt.frames = (uint32_t)vkt_parse_u64(a, v);
      } else if (strcmp(a, "--until") == 0) {
         opt.until = v;
      } else if (strcmp(a, "--seed") == 0) {
         opt.seed = (uint32_t)vkt_parse_u64(a, v);
      } else if (strcmp(a, "--images") == 0) {
         opt.images = (uint32_t)vkt_parse_u64(a, v);
      } else if (strcmp(a, "--size") == 0) {
         if (sscanf(v, "%ux%u", &opt.width, &opt.height) != 2 || !opt.width || !opt.height)
            usage();
      } else if (strcmp(a, "--pos") == 0) {
         if (sscanf(v, "%d,%d", &opt.x, &opt.y) != 2)
            usage();
      } else {
         usage();
      }
   }
   if (!opt.test || opt.frames == 0)
      usage();
   void (*test)(void) = NULL;
   static const struct {
      const char *name;
      void (*run)(void);
   } tests[] = {
      {"frames", test_frames}, {"modes", test_modes}, {"timeout", test_timeout},
      {"presentwait", test_presentwait}, {"maintenance", test_maintenance},
      {"resize", test_resize},
      {"destroy", test_destroy}, {"lost", test_lost},
   };
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(tests); i++) {
      if (strcmp(opt.test, tests[i].name) == 0)
         test = tests[i].run;
   }
   if (!test)
      usage();
   if ((test == test_resize || test == test_destroy) &&
       opt.platform != P_XCB && opt.platform != P_XLIB)
      skip("resize and destroy are tests of X11 windows");
   /* a lost display connection must be reported, not kill the program */
   signal(SIGPIPE, SIG_IGN);

   window_open();
   ctx.instance = instance_create();
   ctx.physical_device = vkt_physical_device_pick(ctx.instance, getenv("VK_WSI_DEVICE"));
   VkExtensionProperties props[512];
   uint32_t n_props = VKT_ARRAY_SIZE(props);
   VKT_CHECK(vkEnumerateDeviceExtensionProperties(ctx.physical_device, NULL, &n_props, props));
   have.present_id = in_list(props, n_props, VK_KHR_PRESENT_ID_EXTENSION_NAME);
   have.present_wait = have.present_id && in_list(props, n_props, VK_KHR_PRESENT_WAIT_EXTENSION_NAME);
   have.swapchain_maintenance1 =
      have.surface_maintenance1 &&
      in_list(props, n_props, VK_EXT_SWAPCHAIN_MAINTENANCE_1_EXTENSION_NAME);
   printf("extensions: surface_maintenance1=%d present_id=%d present_wait=%d "
          "swapchain_maintenance1=%d\n",
          have.surface_maintenance1, have.present_id, have.present_wait,
          have.swapchain_maintenance1);
   const char *exts[4] = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
   uint32_t n_exts = 1;
   void *chain = NULL;
   VkPhysicalDevicePresentIdFeaturesKHR present_id = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR,
      .presentId = VK_TRUE,
   };
   VkPhysicalDevicePresentWaitFeaturesKHR present_wait = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
      .presentWait = VK_TRUE,
   };
   VkPhysicalDeviceSwapchainMaintenance1FeaturesEXT maintenance = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SWAPCHAIN_MAINTENANCE_1_FEATURES_EXT,
      .swapchainMaintenance1 = VK_TRUE,
   };
   if (have.present_id) {
      exts[n_exts++] = VK_KHR_PRESENT_ID_EXTENSION_NAME;
      present_id.pNext = chain;
      chain = &present_id;
   }
   if (have.present_wait) {
      exts[n_exts++] = VK_KHR_PRESENT_WAIT_EXTENSION_NAME;
      present_wait.pNext = chain;
      chain = &present_wait;
   }
   if (have.swapchain_maintenance1) {
      exts[n_exts++] = VK_EXT_SWAPCHAIN_MAINTENANCE_1_EXTENSION_NAME;
      maintenance.pNext = chain;
      chain = &maintenance;
   }
   vkt_context_init_physical_ext(&ctx, ctx.instance, ctx.physical_device, 0, exts, n_exts,
                                 chain);
   if (have.present_wait)
      wait_for_present = (PFN_vkWaitForPresentKHR)vkt_device_proc(&ctx, "vkWaitForPresentKHR");
   printf("device %s, platform %s\n", ctx.props.deviceName, platform_names[opt.platform]);

   surface_create();
   check_queries();
   if (!mode_offered(opt.mode))
      vkt_fail("present mode %s is not offered", mode_name(opt.mode));
   test();

   vkDestroyCommandPool(ctx.device, ctx.cmd_pool, NULL);
   vkDestroyDevice(ctx.device, NULL);
   vkDestroySurfaceKHR(ctx.instance, surface, NULL);
   vkDestroyInstance(ctx.instance, NULL);
   window_close();
   printf("vk_wsi: PASS: %s on %s\n", opt.test, platform_names[opt.platform]);
   return 0;
}
