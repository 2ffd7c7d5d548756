/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the window systems share: the swapchain, its images and its present
 * thread (wsi_common.c), what the window systems report into it
 * (wsi_state.c), and the hooks each window system fills in
 * (wsi_x11.c, wsi_wayland.c, and headless in wsi_common.c).
 */

#include <pthread.h>

#include "util_time.h"
#include "wsi.h"

#define WSI_MAX_IMAGES 16
#define WSI_MAX_FAMILIES 8

enum wsi_image_state {
   WSI_IMAGE_FREE,       /* the application may acquire it */
   WSI_IMAGE_ACQUIRED,   /* the application has it */
   WSI_IMAGE_QUEUED,     /* presented, waiting for its copy and the present thread */
   WSI_IMAGE_DISPLAYED,  /* the display server has its buffer */
};

struct wsi_image {
   VkImage image;            /* what the application renders to */
   VkDeviceMemory memory;
   VkBuffer buffer;          /* what the display server reads */
   VkDeviceMemory buffer_memory;
   int fd;                   /* the buffer memory's memfd */
   void *map;
   VkDeviceSize buffer_size;
   VkSemaphore copies;       /* timeline: each copy into the buffer signals the next value */
   uint64_t copy_value;      /* when copies reaches it, the last copy is done */
   bool copied;              /* that was waited for since the present */
   VkCommandBuffer copy[WSI_MAX_FAMILIES];
   enum wsi_image_state state;
   uint64_t present_id;      /* VK_KHR_present_id of its last vkQueuePresentKHR, or 0 */
   uint64_t serial;          /* of its last present to the display server */
   uint64_t serial_id;       /* the present id that present had */
   /* the window system's handles for the buffer */
   uint32_t x11_seg, x11_pixmap;
   struct wl_buffer *wl_buffer;
};

struct wsi_swapchain;

/* A window system's part of a swapchain. */
struct wsi_platform {
   /* Creates the display server's handles of each image's buffer. */
   VkResult (*init)(struct wsi_swapchain *sc);
   void (*finish)(struct wsi_swapchain *sc);
   /* Hands an image's buffer (copied already) to the display server; the
    * image stays DISPLAYED until wsi_image_released(). */
   VkResult (*present)(struct wsi_swapchain *sc, struct wsi_image *image);
   /* Waits up to timeout_ns for the display server's events (a released
    * buffer, a completed present, a changed window) and handles them;
    * returns early when wsi_swapchain_wake() is called. */
   VkResult (*wait_events)(struct wsi_swapchain *sc, uint64_t timeout_ns);
   /* Whether a present may go now (FIFO: not while the last one is not
    * shown). */
   bool (*ready)(struct wsi_swapchain *sc);
};

struct wsi_swapchain {
   const struct wsi_platform *platform;
   struct wsi_device *wsi;
   VkDevice device;
   VkIcdSurfaceBase *surface;
   VkExtent2D extent;
   VkFormat format;
   VkPresentModeKHR mode;
   VkCompositeAlphaFlagBitsKHR composite_alpha;
   uint32_t stride; /* bytes per row of the buffers */
   bool linear;     /* the images are the buffers (GPUD_WSI_LINEAR=1) */
   uint32_t n_images;
   struct wsi_image images[WSI_MAX_IMAGES];
   VkCommandPool pools[WSI_MAX_FAMILIES];

   pthread_mutex_t mutex; /* everything below */
   pthread_cond_t cond;   /* an image state, the queue or the status changed */
   uint32_t queue[WSI_MAX_IMAGES]; /* presented image indices, oldest first */
   uint32_t n_queued;
   bool stop;
   VkResult status;       /* SUCCESS, SUBOPTIMAL or an error the swapchain ends with */
   uint64_t completed_id; /* the last present id the display server showed */
   uint64_t serial;       /* of the last present to the display server */
   uint64_t completed_serial; /* the last one the display server showed */
   pthread_t thread;
   bool thread_started;
   int wake_fd;           /* eventfd: wsi_swapchain_wake() */

   void *platform_data;
};

/* Called by the window systems, with the swapchain's mutex held. */
void wsi_image_released(struct wsi_swapchain *sc, struct wsi_image *image);
void wsi_present_completed(struct wsi_swapchain *sc, uint64_t serial);
/* The window changed size (SUBOPTIMAL or OUT_OF_DATE), went away
 * (SURFACE_LOST): the swapchain keeps the worst. */
void wsi_swapchain_set_status(struct wsi_swapchain *sc, VkResult status);
/* Makes a present thread in wait_events() return. */
void wsi_swapchain_wake(struct wsi_swapchain *sc);

/* The window systems' halves. */
extern const struct wsi_platform wsi_x11_platform;
extern const struct wsi_platform wsi_wayland_platform;

/* Surface queries a window system answers. */
VkResult wsi_x11_surface_extent(VkIcdSurfaceBase *surface, VkExtent2D *extent);
bool wsi_x11_surface_supported(VkIcdSurfaceBase *surface);
bool wsi_wayland_surface_supported(VkIcdSurfaceBase *surface);
