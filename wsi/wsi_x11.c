/* SPDX-License-Identifier: MIT */
/*
 * X11 (xcb and Xlib windows): each image's buffer is a memfd the X server
 * maps too (MIT-SHM 1.2, xcb_shm_attach_fd) behind a shared-memory pixmap,
 * presented with the Present extension, whose events say when a present was
 * shown (FIFO's pace), when a pixmap is free again, and when the window
 * changed.  Without Present the buffer is copied into the window with
 * xcb_shm_put_image; without MIT-SHM fd passing with xcb_put_image (the
 * pixels then go through the X connection).
 */
#include "wsi_private.h"

#include <X11/Xlib-xcb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xcb/present.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>

/* Serials a swapchain has before the next one's begin (x11_init). */
#define X11_SERIALS_PER_SWAPCHAIN (1ull << 24)

/* Present's PresentWindowDestroyed in a ConfigureNotify's pixmap_flags. */
#define PRESENT_WINDOW_DESTROYED (1u << 0)

struct x11_data {
   xcb_connection_t *conn;
   xcb_window_t window;
   uint8_t depth;
   bool shm;       /* MIT-SHM with fd passing */
   bool present;   /* the Present extension */
   xcb_gcontext_t gc;
   xcb_special_event_t *events;
   uint32_t event_id;
   bool complete_pending; /* a present not yet shown (FIFO waits for it) */
   uint64_t last_msc;     /* the refresh of the last present shown */
   uint64_t quiet_since;  /* no event since (util_now_ns()) */
};

static void
surface_window(VkIcdSurfaceBase *surface, xcb_connection_t **conn, xcb_window_t *window)
{
   if (surface->platform == VK_ICD_WSI_PLATFORM_XLIB) {
      VkIcdSurfaceXlib *s = (VkIcdSurfaceXlib *)surface;
      *conn = XGetXCBConnection(s->dpy);
      *window = (xcb_window_t)s->window;
   } else {
      VkIcdSurfaceXcb *s = (VkIcdSurfaceXcb *)surface;
      *conn = s->connection;
      *window = s->window;
   }
}

/* The window's size and depth; VK_ERROR_SURFACE_LOST_KHR when it is gone.
 * Errors of our requests are taken here or discarded, never left in the
 * connection's event queue: an Xlib program's error handler would see them
 * (and the default one exits). */
static VkResult
window_geometry(xcb_connection_t *conn, xcb_window_t window, VkExtent2D *extent, uint8_t *depth)
{
   xcb_generic_error_t *err = NULL;
   xcb_get_geometry_reply_t *geo = xcb_get_geometry_reply(conn, xcb_get_geometry(conn, window),
                                                          &err);
   free(err);
   if (!geo)
      return VK_ERROR_SURFACE_LOST_KHR;
   extent->width = geo->width;
   extent->height = geo->height;
   if (depth)
      *depth = geo->depth;
   free(geo);
   return VK_SUCCESS;
}

VkResult
wsi_x11_surface_extent(VkIcdSurfaceBase *surface, VkExtent2D *extent)
{
   xcb_connection_t *conn;
   xcb_window_t window;
   surface_window(surface, &conn, &window);
   return window_geometry(conn, window, extent, NULL);
}

bool
wsi_x11_surface_supported(VkIcdSurfaceBase *surface)
{
   xcb_connection_t *conn;
   xcb_window_t window;
   surface_window(surface, &conn, &window);
   return conn && !xcb_connection_has_error(conn);
}

static bool
has_shm_fd(xcb_connection_t *conn)
{
   const xcb_query_extension_reply_t *ext = xcb_get_extension_data(conn, &xcb_shm_id);
   if (!ext || !ext->present)
      return false;
   xcb_shm_query_version_reply_t *v =
      xcb_shm_query_version_reply(conn, xcb_shm_query_version(conn), NULL);
   bool ok = v && v->shared_pixmaps &&
             (v->major_version > 1 || (v->major_version == 1 && v->minor_version >= 2));
   free(v);
   return ok;
}

static bool
has_present(xcb_connection_t *conn)
{
   const xcb_query_extension_reply_t *ext = xcb_get_extension_data(conn, &xcb_present_id);
   if (!ext || !ext->present)
      return false;
   xcb_present_query_version_reply_t *v =
      xcb_present_query_version_reply(conn, xcb_present_query_version(conn, 1, 2), NULL);
   bool ok = v != NULL;
   free(v);
   return ok;
}

static VkResult
x11_init(struct wsi_swapchain *sc)
{
   struct x11_data *x = calloc(1, sizeof(*x));
   if (!x)
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   sc->platform_data = x;
   surface_window(sc->surface, &x->conn, &x->window);
   VkExtent2D extent;
   VkResult r = window_geometry(x->conn, x->window, &extent, &x->depth);
   if (r != VK_SUCCESS)
      return r;
   x->shm = getenv("GPUD_WSI_NO_SHM") == NULL && has_shm_fd(x->conn);
   x->present = x->shm && getenv("GPUD_WSI_NO_PRESENT") == NULL && has_present(x->conn);
   xcb_generic_error_t *err;

   for (uint32_t i = 0; x->shm && i < sc->n_images; i++) {
      struct wsi_image *img = &sc->images[i];
      int fd = dup(img->fd); /* xcb closes what it sends */
      if (fd < 0)
         return VK_ERROR_OUT_OF_HOST_MEMORY;
      img->x11_seg = xcb_generate_id(x->conn);
      err = xcb_request_check(x->conn, xcb_shm_attach_fd_checked(x->conn, img->x11_seg, fd, 0));
      if (err) {
         /* a server that cannot map our memory (remote X): copy instead */
         free(err);
         img->x11_seg = 0;
         x->shm = x->present = false;
         break;
      }
      if (x->present) {
         img->x11_pixmap = xcb_generate_id(x->conn);
         err = xcb_request_check(x->conn, xcb_shm_create_pixmap_checked(
                                             x->conn, img->x11_pixmap, x->window,
                                             sc->extent.width, sc->extent.height, x->depth,
                                             img->x11_seg, 0));
         if (err) {
            /* no pixmap of our memory: put the pixels from it instead */
            free(err);
            img->x11_pixmap = 0;
            x->present = false;
         }
      }
   }
   if (!x->present) {
      x->gc = xcb_generate_id(x->conn);
      uint32_t no_exposures = 0;
      xcb_discard_reply(x->conn, xcb_create_gc_checked(x->conn, x->gc, x->window,
                                                       XCB_GC_GRAPHICS_EXPOSURES, &no_exposures)
                                    .sequence);
   } else {
      /* Present tells every selection on the window of every present to
       * it: a new swapchain hears the completions of the old one's last
       * presents. Serials that no other swapchain of this process uses
       * tell them apart (the server keeps 32 bits of them). */
      static uint64_t serial_base;
      const uint64_t base =
         __atomic_add_fetch(&serial_base, X11_SERIALS_PER_SWAPCHAIN, __ATOMIC_RELAXED);
      pthread_mutex_lock(&sc->mutex);
      sc->serial = sc->completed_serial = base;
      pthread_mutex_unlock(&sc->mutex);
      x->event_id = xcb_generate_id(x->conn);
      x->events = xcb_register_for_special_xge(x->conn, &xcb_present_id, x->event_id, NULL);
      xcb_discard_reply(x->conn, xcb_present_select_input_checked(
                                    x->conn, x->event_id, x->window,
                                    XCB_PRESENT_EVENT_MASK_CONFIGURE_NOTIFY |
                                       XCB_PRESENT_EVENT_MASK_COMPLETE_NOTIFY |
                                       XCB_PRESENT_EVENT_MASK_IDLE_NOTIFY)
                                    .sequence);
      /* a resize between the application's query and now, which no
       * ConfigureNotify will tell */
      r = window_geometry(x->conn, x->window, &extent, NULL);
      if (r == VK_SUCCESS &&
          (extent.width != sc->extent.width || extent.height != sc->extent.height))
         wsi_swapchain_set_status(sc, VK_ERROR_OUT_OF_DATE_KHR);
   }
   x->quiet_since = util_now_ns();
   xcb_flush(x->conn);
   return xcb_connection_has_error(x->conn) ? VK_ERROR_SURFACE_LOST_KHR : VK_SUCCESS;
}

static void
x11_finish(struct wsi_swapchain *sc)
{
   struct x11_data *x = sc->platform_data;
   if (!xcb_connection_has_error(x->conn)) {
      /* the window may be gone: errors are discarded */
      if (x->events) {
         xcb_discard_reply(x->conn, xcb_present_select_input_checked(x->conn, x->event_id,
                                                                     x->window, 0)
                                       .sequence);
         xcb_unregister_for_special_event(x->conn, x->events);
      }
      for (uint32_t i = 0; i < sc->n_images; i++) {
         if (sc->images[i].x11_pixmap)
            xcb_discard_reply(
               x->conn, xcb_free_pixmap_checked(x->conn, sc->images[i].x11_pixmap).sequence);
         if (sc->images[i].x11_seg)
            xcb_discard_reply(x->conn,
                              xcb_shm_detach_checked(x->conn, sc->images[i].x11_seg).sequence);
      }
      if (x->gc)
         xcb_discard_reply(x->conn, xcb_free_gc_checked(x->conn, x->gc).sequence);
      xcb_flush(x->conn);
   }
   free(x);
   sc->platform_data = NULL;
}

/* Without Present: the pixels into the window now, through the connection
 * if the server cannot map our memory. */
static VkResult
put_image(struct wsi_swapchain *sc, struct x11_data *x, struct wsi_image *img)
{
   if (x->shm) {
      xcb_discard_reply(x->conn,
                        xcb_shm_put_image_checked(x->conn, x->window, x->gc, sc->extent.width,
                                                  sc->extent.height, 0, 0, sc->extent.width,
                                                  sc->extent.height, 0, 0, x->depth,
                                                  XCB_IMAGE_FORMAT_Z_PIXMAP, 0, img->x11_seg, 0)
                           .sequence);
   } else {
      /* in bands that fit a request */
      uint32_t max_bytes = xcb_get_maximum_request_length(x->conn) * 4 - 64;
      uint32_t rows = max_bytes / sc->stride;
      if (rows == 0)
         rows = 1;
      for (uint32_t y = 0; y < sc->extent.height; y += rows) {
         uint32_t n = sc->extent.height - y < rows ? sc->extent.height - y : rows;
         xcb_discard_reply(x->conn,
                           xcb_put_image_checked(x->conn, XCB_IMAGE_FORMAT_Z_PIXMAP, x->window,
                                                 x->gc, sc->extent.width, n, 0, (int16_t)y, 0,
                                                 x->depth, n * sc->stride,
                                                 (const uint8_t *)img->map +
                                                    (size_t)y * sc->stride)
                              .sequence);
      }
   }
   /* a round trip: once answered, the server is done with the buffer; a
    * window that is gone is a lost surface */
   free(xcb_get_input_focus_reply(x->conn, xcb_get_input_focus(x->conn), NULL));
   VkExtent2D extent;
   VkResult r = window_geometry(x->conn, x->window, &extent, NULL);
   if (r == VK_SUCCESS && (extent.width != sc->extent.width || extent.height != sc->extent.height))
      r = VK_ERROR_OUT_OF_DATE_KHR;
   pthread_mutex_lock(&sc->mutex);
   wsi_present_completed(sc, img->serial);
   wsi_image_released(sc, img);
   if (r != VK_SUCCESS)
      wsi_swapchain_set_status(sc, r);
   pthread_mutex_unlock(&sc->mutex);
   return xcb_connection_has_error(x->conn) ? VK_ERROR_SURFACE_LOST_KHR : VK_SUCCESS;
}

static VkResult
x11_present(struct wsi_swapchain *sc, struct wsi_image *img)
{
   struct x11_data *x = sc->platform_data;
   if (!x->present)
      return put_image(sc, x, img);
   uint32_t options = XCB_PRESENT_OPTION_NONE;
   uint64_t target_msc = 0; /* the next vertical blank (at once with ASYNC) */
   pthread_mutex_lock(&sc->mutex);
   if (sc->mode == VK_PRESENT_MODE_IMMEDIATE_KHR)
      options |= XCB_PRESENT_OPTION_ASYNC;
   if (sc->mode == VK_PRESENT_MODE_FIFO_RELAXED_KHR && x->last_msc) {
      /* the refresh after the last one shown; at once (tearing) only when
       * that has passed: the application is late */
      options |= XCB_PRESENT_OPTION_ASYNC;
      target_msc = x->last_msc + 1;
   }
   x->complete_pending = true;
   pthread_mutex_unlock(&sc->mutex);
   xcb_discard_reply(x->conn, xcb_present_pixmap_checked(x->conn, x->window, img->x11_pixmap,
                                                         (uint32_t)img->serial, 0, 0, 0, 0, 0, 0,
                                                         0, options, target_msc, 0, 0, 0, NULL)
                                 .sequence);
   xcb_flush(x->conn);
   return xcb_connection_has_error(x->conn) ? VK_ERROR_SURFACE_LOST_KHR : VK_SUCCESS;
}

static void
handle_event(struct wsi_swapchain *sc, struct x11_data *x, xcb_generic_event_t *event)
{
   const xcb_present_generic_event_t *e = (const xcb_present_generic_event_t *)event;
   pthread_mutex_lock(&sc->mutex);
   switch (e->evtype) {
   case XCB_PRESENT_CONFIGURE_NOTIFY: {
      const xcb_present_configure_notify_event_t *c =
         (const xcb_present_configure_notify_event_t *)event;
      if (c->pixmap_flags & PRESENT_WINDOW_DESTROYED)
         wsi_swapchain_set_status(sc, VK_ERROR_SURFACE_LOST_KHR);
      else if (c->width != sc->extent.width || c->height != sc->extent.height)
         wsi_swapchain_set_status(sc, VK_ERROR_OUT_OF_DATE_KHR);
      break;
   }
   case XCB_PRESENT_COMPLETE_NOTIFY: {
      const xcb_present_complete_notify_event_t *c =
         (const xcb_present_complete_notify_event_t *)event;
      if (c->kind == XCB_PRESENT_COMPLETE_KIND_PIXMAP) {
         /* the event has the low 32 bits of one of the last serials; one
          * not sent by this swapchain, or already completed, is another
          * swapchain's present to the window */
         uint64_t serial = (sc->serial & ~(uint64_t)UINT32_MAX) | c->serial;
         if (serial > sc->serial)
            serial -= (uint64_t)UINT32_MAX + 1;
         if (serial > sc->completed_serial && serial <= sc->serial) {
            x->complete_pending = false;
            x->last_msc = c->msc;
            wsi_present_completed(sc, serial);
         }
      }
      break;
   }
   case XCB_PRESENT_EVENT_IDLE_NOTIFY: {
      const xcb_present_idle_notify_event_t *idle = (const xcb_present_idle_notify_event_t *)event;
      for (uint32_t i = 0; i < sc->n_images; i++) {
         if (sc->images[i].x11_pixmap == idle->pixmap)
            wsi_image_released(sc, &sc->images[i]);
      }
      break;
   }
   default:
      break;
   }
   pthread_cond_broadcast(&sc->cond);
   pthread_mutex_unlock(&sc->mutex);
   free(event);
}

static VkResult
x11_wait_events(struct wsi_swapchain *sc, uint64_t timeout_ns)
{
   struct x11_data *x = sc->platform_data;
   uint64_t deadline = util_now_ns() + timeout_ns;
   /* Busy: a present not shown yet, or the application may be waiting for
    * an image. Otherwise only a resize or the window's end can come, and
    * both can wait: the thread sleeps longer and asks the server nothing. */
   pthread_mutex_lock(&sc->mutex);
   bool busy = x->complete_pending || sc->n_queued;
   uint32_t free_images = 0;
   for (uint32_t i = 0; i < sc->n_images; i++)
      free_images += sc->images[i].state == WSI_IMAGE_FREE;
   busy |= free_images == 0;
   pthread_mutex_unlock(&sc->mutex);
   for (;;) {
      if (xcb_connection_has_error(x->conn))
         return VK_ERROR_SURFACE_LOST_KHR;
      bool handled = false;
      xcb_generic_event_t *event;
      while (x->events && (event = xcb_poll_for_special_event(x->conn, x->events))) {
         handle_event(sc, x, event);
         handled = true;
      }
      uint64_t now = util_now_ns();
      if (handled)
         x->quiet_since = now;
      if (handled || now >= deadline) {
         /* A destroyed window sends no more events (a server may not say
          * PresentWindowDestroyed): after a quiet spell, look for it. */
         if (!handled && busy && now - x->quiet_since > 100000000ull) {
            x->quiet_since = now;
            VkExtent2D extent;
            if (window_geometry(x->conn, x->window, &extent, NULL) != VK_SUCCESS)
               return VK_ERROR_SURFACE_LOST_KHR;
         }
         return VK_SUCCESS;
      }
      /* Another thread of the application may read the connection and
       * queue our events without waking this poll: look again soon when
       * busy. */
      struct pollfd pfd[2] = {
         {.fd = xcb_get_file_descriptor(x->conn), .events = POLLIN},
         {.fd = sc->wake_fd, .events = POLLIN},
      };
      uint64_t left_ms = (deadline - now) / 1000000;
      uint64_t slice_ms = busy ? 2 : 50;
      int r = poll(pfd, 2, (int)(left_ms < slice_ms ? left_ms : slice_ms));
      if (r > 0 && (pfd[1].revents & POLLIN)) {
         uint64_t v;
         if (read(sc->wake_fd, &v, sizeof(v)) < 0) {
            /* drained by another wake-up */
         }
         return VK_SUCCESS;
      }
   }
}

static bool
x11_ready(struct wsi_swapchain *sc)
{
   struct x11_data *x = sc->platform_data;
   /* FIFO: one present per vertical blank (relaxed: a late one at once) */
   return !(x->complete_pending && (sc->mode == VK_PRESENT_MODE_FIFO_KHR ||
                                    sc->mode == VK_PRESENT_MODE_FIFO_RELAXED_KHR));
}

const struct wsi_platform wsi_x11_platform = {
   .init = x11_init,
   .finish = x11_finish,
   .present = x11_present,
   .wait_events = x11_wait_events,
   .ready = x11_ready,
};
