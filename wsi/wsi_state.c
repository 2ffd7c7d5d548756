/* SPDX-License-Identifier: MIT */
/*
 * What a window system reports into its swapchain (wsi_x11.c, wsi_wayland.c,
 * headless in wsi_common.c): an image the server released, a present it
 * completed, an error or a changed window; each wakes the present thread and
 * the application's waits on the swapchain (wsi_common.c).
 */
#include "wsi_private.h"

#include <unistd.h>

void
wsi_image_released(struct wsi_swapchain *sc, struct wsi_image *image)
{
   if (image->state == WSI_IMAGE_DISPLAYED) {
      image->state = WSI_IMAGE_FREE;
      pthread_cond_broadcast(&sc->cond);
   }
}

void
wsi_present_completed(struct wsi_swapchain *sc, uint64_t serial)
{
   for (uint32_t i = 0; i < sc->n_images; i++) {
      struct wsi_image *img = &sc->images[i];
      if (img->serial == serial && img->serial_id > sc->completed_id)
         sc->completed_id = img->serial_id;
   }
   if (serial > sc->completed_serial)
      sc->completed_serial = serial;
   pthread_cond_broadcast(&sc->cond);
}

/* The worse of two: success < suboptimal < any error. */
void
wsi_swapchain_set_status(struct wsi_swapchain *sc, VkResult status)
{
   if (sc->status < 0)
      return; /* an error stays */
   if (status < 0 || status == VK_SUBOPTIMAL_KHR)
      sc->status = status;
   pthread_cond_broadcast(&sc->cond);
}

void
wsi_swapchain_wake(struct wsi_swapchain *sc)
{
   uint64_t one = 1;
   if (sc->wake_fd >= 0 && write(sc->wake_fd, &one, sizeof(one)) < 0) {
      /* the counter is full: the thread is awake anyway */
   }
}
