/* SPDX-License-Identifier: MIT */
/*
 * Wayland: each image's buffer is a wl_shm buffer over the memfd the
 * compositor maps too.  The swapchain's objects live on an event queue of
 * their own, which the present thread dispatches: wl_buffer.release frees
 * an image, a frame callback paces FIFO and says a present was shown.
 */
#include "wsi_private.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wayland-client.h>

struct wl_data {
   struct wl_display *display;
   struct wl_event_queue *queue;
   struct wl_display *display_wrapper; /* the display, on our queue */
   struct wl_surface *surface;         /* the application's, on our queue */
   struct wl_registry *registry;
   struct wl_shm *shm;
   struct wl_callback *frame;          /* a present not yet shown */
   uint64_t frame_serial;              /* the present frame was asked with */
   uint64_t last_serial;               /* the last present committed */
   struct wsi_swapchain *sc;
};

bool
wsi_wayland_surface_supported(VkIcdSurfaceBase *surface)
{
   return ((VkIcdSurfaceWayland *)surface)->display != NULL;
}

static void
registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface,
                uint32_t version)
{
   struct wl_data *w = data;
   if (!strcmp(interface, wl_shm_interface.name) && !w->shm)
      w->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
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
buffer_release(void *data, struct wl_buffer *buffer)
{
   struct wl_data *w = data;
   struct wsi_swapchain *sc = w->sc;
   pthread_mutex_lock(&sc->mutex);
   for (uint32_t i = 0; i < sc->n_images; i++) {
      if (sc->images[i].wl_buffer == buffer)
         wsi_image_released(sc, &sc->images[i]);
   }
   pthread_mutex_unlock(&sc->mutex);
}

static const struct wl_buffer_listener buffer_listener = {
   .release = buffer_release,
};

static void frame_done(void *data, struct wl_callback *callback, uint32_t time);

static const struct wl_callback_listener frame_listener = {
   .done = frame_done,
};

/* Asks for a frame callback for the present of serial (the mutex held). */
static void
request_frame(struct wl_data *w, uint64_t serial)
{
   w->frame = wl_surface_frame(w->surface);
   wl_callback_add_listener(w->frame, &frame_listener, w);
   w->frame_serial = serial;
}

static void
frame_done(void *data, struct wl_callback *callback, uint32_t time)
{
   struct wl_data *w = data;
   struct wsi_swapchain *sc = w->sc;
   wl_callback_destroy(callback);
   pthread_mutex_lock(&sc->mutex);
   if (w->frame == callback)
      w->frame = NULL;
   wsi_present_completed(sc, w->frame_serial);
   /* Presents committed while this callback was pending (MAILBOX) are
    * not known to be shown: a callback for the newest, with a commit that
    * changes nothing else. */
   bool again = !w->frame && w->last_serial > w->frame_serial;
   if (again)
      request_frame(w, w->last_serial);
   pthread_mutex_unlock(&sc->mutex);
   if (again)
      wl_surface_commit(w->surface);
}

static VkResult
wl_init(struct wsi_swapchain *sc)
{
   VkIcdSurfaceWayland *surface = (VkIcdSurfaceWayland *)sc->surface;
   struct wl_data *w = calloc(1, sizeof(*w));
   if (!w)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   sc->platform_data = w;
   w->sc = sc;
   w->display = surface->display;
   w->queue = wl_display_create_queue(w->display);
   w->display_wrapper = wl_proxy_create_wrapper(w->display);
   w->surface = wl_proxy_create_wrapper(surface->surface);
   if (!w->queue || !w->display_wrapper || !w->surface)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   wl_proxy_set_queue((struct wl_proxy *)w->display_wrapper, w->queue);
   wl_proxy_set_queue((struct wl_proxy *)w->surface, w->queue);
   w->registry = wl_display_get_registry(w->display_wrapper);
   wl_registry_add_listener(w->registry, &registry_listener, w);
   if (wl_display_roundtrip_queue(w->display, w->queue) < 0)
      return VK_ERROR_SURFACE_LOST_KHR;
   if (!w->shm)
      return VK_ERROR_SURFACE_LOST_KHR; /* a compositor without wl_shm */

   /* premultiplied alpha is what wl_shm's ARGB means */
   uint32_t format = sc->composite_alpha == VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR
                        ? WL_SHM_FORMAT_ARGB8888
                        : WL_SHM_FORMAT_XRGB8888;
   for (uint32_t i = 0; i < sc->n_images; i++) {
      struct wsi_image *img = &sc->images[i];
      struct wl_shm_pool *pool = wl_shm_create_pool(w->shm, img->fd, (int32_t)img->buffer_size);
      img->wl_buffer = wl_shm_pool_create_buffer(pool, 0, (int32_t)sc->extent.width,
                                                 (int32_t)sc->extent.height, (int32_t)sc->stride,
                                                 format);
      wl_shm_pool_destroy(pool);
      if (!img->wl_buffer)
         return VK_ERROR_OUT_OF_HOST_MEMORY;
      wl_buffer_add_listener(img->wl_buffer, &buffer_listener, w);
   }
   wl_display_flush(w->display);
   return VK_SUCCESS;
}

static void
wl_finish(struct wsi_swapchain *sc)
{
   struct wl_data *w = sc->platform_data;
   for (uint32_t i = 0; i < sc->n_images; i++) {
      if (sc->images[i].wl_buffer)
         wl_buffer_destroy(sc->images[i].wl_buffer);
   }
   if (w->frame)
      wl_callback_destroy(w->frame);
   if (w->shm)
      wl_shm_destroy(w->shm);
   if (w->registry)
      wl_registry_destroy(w->registry);
   if (w->surface)
      wl_proxy_wrapper_destroy(w->surface);
   if (w->display_wrapper)
      wl_proxy_wrapper_destroy(w->display_wrapper);
   if (w->queue)
      wl_event_queue_destroy(w->queue);
   wl_display_flush(w->display);
   free(w);
   sc->platform_data = NULL;
}

static VkResult
wl_present(struct wsi_swapchain *sc, struct wsi_image *img)
{
   struct wl_data *w = sc->platform_data;
   pthread_mutex_lock(&sc->mutex);
   if (!w->frame)
      request_frame(w, img->serial);
   w->last_serial = img->serial;
   pthread_mutex_unlock(&sc->mutex);
   wl_surface_attach(w->surface, img->wl_buffer, 0, 0);
   wl_surface_damage(w->surface, 0, 0, INT32_MAX, INT32_MAX);
   wl_surface_commit(w->surface);
   if (wl_display_flush(w->display) < 0 && errno != EAGAIN)
      return VK_ERROR_SURFACE_LOST_KHR;
   return VK_SUCCESS;
}

static VkResult
wl_wait_events(struct wsi_swapchain *sc, uint64_t timeout_ns)
{
   struct wl_data *w = sc->platform_data;
   while (wl_display_prepare_read_queue(w->display, w->queue) != 0) {
      if (wl_display_dispatch_queue_pending(w->display, w->queue) < 0)
         return VK_ERROR_SURFACE_LOST_KHR;
   }
   if (wl_display_flush(w->display) < 0 && errno != EAGAIN) {
      wl_display_cancel_read(w->display);
      return VK_ERROR_SURFACE_LOST_KHR;
   }
   struct pollfd pfd[2] = {
      {.fd = wl_display_get_fd(w->display), .events = POLLIN},
      {.fd = sc->wake_fd, .events = POLLIN},
   };
   int r = poll(pfd, 2, (int)(timeout_ns / 1000000));
   if (r > 0 && (pfd[0].revents & POLLIN)) {
      if (wl_display_read_events(w->display) < 0)
         return VK_ERROR_SURFACE_LOST_KHR;
   } else {
      wl_display_cancel_read(w->display);
   }
   if (r > 0 && (pfd[1].revents & POLLIN)) {
      uint64_t v;
      if (read(sc->wake_fd, &v, sizeof(v)) < 0) {
         /* drained by another wake-up */
      }
   }
   return wl_display_dispatch_queue_pending(w->display, w->queue) < 0 ? VK_ERROR_SURFACE_LOST_KHR
                                                                       : VK_SUCCESS;
}

static bool
wl_ready(struct wsi_swapchain *sc)
{
   struct wl_data *w = sc->platform_data;
   /* FIFO: one present per frame the compositor asks for */
   return !(w->frame && sc->mode == VK_PRESENT_MODE_FIFO_KHR);
}

const struct wsi_platform wsi_wayland_platform = {
   .init = wl_init,
   .finish = wl_finish,
   .present = wl_present,
   .wait_events = wl_wait_events,
   .ready = wl_ready,
};
