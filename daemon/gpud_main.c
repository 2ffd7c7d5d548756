/* SPDX-License-Identifier: MIT */
/*
 * gpud: serves one GPU (through its host Vulkan driver) to every client of
 * its socket.  The libevent loop accepts connections and handles signals
 * and the systemd watchdog; each client is decoded on its own thread.
 */
#include "gpud.h"

#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "util_macros.h"

struct gpud_daemon *gpud_daemon;

static void
usage(FILE *f)
{
   fprintf(f,
           "Usage: gpud [OPTION]...\n"
           "Serve a GPU to Vulkan applications through the gpud ICD.\n\n"
           "  -s, --socket PATH        listen on PATH (default: /run/gpud/gpud.sock as root,\n"
           "                           $XDG_RUNTIME_DIR/gpud/gpud.sock otherwise; a socket\n"
           "                           passed by systemd wins)\n"
           "  -d, --host-driver FILE   host Vulkan driver's ICD manifest (default: the GPU's\n"
           "                           driver, else lavapipe: %s)\n"
           "  -D, --device NAME        serve the host device whose name contains NAME\n"
           "      --validate=WHEN      check every call with the Khronos validation layer\n"
           "                           before the host driver sees it, and disconnect a\n"
           "                           client that breaks a rule: auto (default: when the\n"
           "                           host device is a CPU, which runs in this process),\n"
           "                           on or off\n"
           "  -l, --log-level LEVEL    err, warning, notice, info (default) or debug\n"
           "  -h, --help               show this help\n"
           "  -V, --version            show the version\n",
           GPUD_LAVAPIPE_MANIFEST);
}

static int
parse_level(const char *s, enum util_log_level *ret)
{
   static const struct {
      const char *name;
      enum util_log_level level;
   } levels[] = {
      {"err", UTIL_LOG_ERR},       {"error", UTIL_LOG_ERR}, {"warning", UTIL_LOG_WARNING},
      {"notice", UTIL_LOG_NOTICE}, {"info", UTIL_LOG_INFO}, {"debug", UTIL_LOG_DEBUG},
   };
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(levels); i++) {
      if (!strcmp(s, levels[i].name)) {
         *ret = levels[i].level;
         return 0;
      }
   }
   return -EINVAL;
}

static int
mkdir_parents(const char *path, mode_t mode)
{
   char *copy = strdup(path);
   if (!copy)
      return -ENOMEM;
   char *slash = strrchr(copy, '/');
   if (!slash || slash == copy) {
      free(copy);
      return 0;
   }
   *slash = '\0';
   for (char *p = copy + 1; *p; p++) {
      if (*p != '/')
         continue;
      *p = '\0';
      if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
         int r = -errno;
         free(copy);
         return r;
      }
      *p = '/';
   }
   int r = 0;
   if (mkdir(copy, mode) < 0 && errno != EEXIST)
      r = -errno;
   free(copy);
   return r;
}

static char *
default_socket_path(void)
{
   char *path = NULL;
   if (geteuid() == 0)
      return strdup("/run/gpud/gpud.sock");
   const char *xdg = getenv("XDG_RUNTIME_DIR");
   if (!xdg || !*xdg)
      return NULL;
   if (asprintf(&path, "%s/gpud/gpud.sock", xdg) < 0)
      return NULL;
   return path;
}

static void
on_accept(evutil_socket_t fd, short what, void *data)
{
   struct gpud_daemon *daemon = data;
   for (;;) {
      int cfd;
      int r = util_socket_accept(fd, &cfd);
      if (r == -EAGAIN || r == -EINTR)
         return;
      if (r < 0) {
         util_warn("accept failed: %s", strerror(-r));
         return;
      }
      if (atomic_load(&daemon->stopping)) {
         close(cfd);
         continue;
      }
      gpud_client_start(daemon, cfd);
   }
}

static void
on_signal(evutil_socket_t sig, short what, void *data)
{
   struct event_base *base = data;
   util_notice("signal %d: shutting down", (int)sig);
   event_base_loopbreak(base);
}

static void
on_watchdog(evutil_socket_t fd, short what, void *data)
{
   sd_notify(0, "WATCHDOG=1");
}

static void
stop_clients(struct gpud_daemon *daemon)
{
   atomic_store(&daemon->stopping, true);
   pthread_mutex_lock(&daemon->mutex);
   for (struct gpud_client *c = daemon->clients; c; c = c->next) {
      atomic_store(&c->closing, true);
      shutdown(c->fd, SHUT_RDWR);
   }
   struct timespec deadline;
   clock_gettime(CLOCK_REALTIME, &deadline);
   deadline.tv_sec += 10;
   while (daemon->n_threads > 0) {
      if (pthread_cond_timedwait(&daemon->threads_cond, &daemon->mutex, &deadline) ==
          ETIMEDOUT) {
         util_warn("%u client(s) still busy on the GPU; exiting anyway", daemon->n_threads);
         break;
      }
   }
   pthread_mutex_unlock(&daemon->mutex);
}

int
main(int argc, char **argv)
{
   static const struct option options[] = {
      {"socket", required_argument, NULL, 's'},
      {"host-driver", required_argument, NULL, 'd'},
      {"device", required_argument, NULL, 'D'},
      {"validate", required_argument, NULL, 'v'},
      {"log-level", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {0},
   };
   const char *socket_arg = NULL, *driver_arg = NULL, *device_arg = NULL;
   enum gpud_validate_mode validate = GPUD_VALIDATE_AUTO;
   int c;
   while ((c = getopt_long(argc, argv, "s:d:D:l:hV", options, NULL)) != -1) {
      switch (c) {
      case 's':
         socket_arg = optarg;
         break;
      case 'd':
         driver_arg = optarg;
         break;
      case 'D':
         device_arg = optarg;
         break;
      case 'v':
         if (!strcmp(optarg, "auto")) {
            validate = GPUD_VALIDATE_AUTO;
         } else if (!strcmp(optarg, "on")) {
            validate = GPUD_VALIDATE_ON;
         } else if (!strcmp(optarg, "off")) {
            validate = GPUD_VALIDATE_OFF;
         } else {
            fprintf(stderr, "gpud: --validate takes auto, on or off, not '%s'\n", optarg);
            return 2;
         }
         break;
      case 'l': {
         enum util_log_level level;
         if (parse_level(optarg, &level) < 0) {
            fprintf(stderr, "gpud: unknown log level '%s' (err, warning, notice, info, debug)\n",
                    optarg);
            return 2;
         }
         util_log_set_max_level(level);
         break;
      }
      case 'h':
         usage(stdout);
         return 0;
      case 'V':
         printf("gpud %s\n", GPUD_VERSION);
         return 0;
      default:
         usage(stderr);
         return 2;
      }
   }
   if (optind < argc) {
      fprintf(stderr, "gpud: unexpected argument '%s'\n", argv[optind]);
      usage(stderr);
      return 2;
   }
   if (driver_arg && access(driver_arg, R_OK) < 0) {
      fprintf(stderr, "gpud: cannot read host driver manifest '%s': %s\n", driver_arg,
              strerror(errno));
      return 2;
   }
   signal(SIGPIPE, SIG_IGN);

   static struct gpud_daemon daemon;
   gpud_daemon = &daemon;
   pthread_mutex_init(&daemon.mutex, NULL);
   pthread_cond_init(&daemon.threads_cond, NULL);

   char *manifest = driver_arg ? strdup(driver_arg) : gpud_host_default_manifest();
   if (!manifest || gpud_host_load(&daemon.host, manifest, device_arg) < 0) {
      free(manifest);
      return 1;
   }
   free(manifest);
   if (validate == GPUD_VALIDATE_ON ||
       (validate == GPUD_VALIDATE_AUTO && daemon.host.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU)) {
      if (gpud_host_enable_validation(&daemon.host, validate == GPUD_VALIDATE_ON) < 0)
         return 1;
   }

   /* The listening socket: from systemd, else our own. */
   int listen_fd = -1;
   bool own_socket = false;
   int n = sd_listen_fds(1);
   if (n > 1) {
      util_err("systemd passed %d sockets; expected one", n);
      return 1;
   }
   if (n == 1 && !socket_arg) {
      listen_fd = SD_LISTEN_FDS_START;
   } else {
      daemon.socket_path = socket_arg ? strdup(socket_arg) : default_socket_path();
      if (!daemon.socket_path) {
         fprintf(stderr, "gpud: no socket path: pass --socket or set XDG_RUNTIME_DIR\n");
         return 2;
      }
      int r = mkdir_parents(daemon.socket_path, geteuid() == 0 ? 0755 : 0700);
      if (r >= 0)
         r = util_socket_listen(daemon.socket_path, &listen_fd);
      if (r < 0) {
         util_err("cannot listen on %s: %s", daemon.socket_path, strerror(-r));
         return 1;
      }
      own_socket = true;
      /* A system daemon serves every user, as a render node would. */
      chmod(daemon.socket_path, geteuid() == 0 ? 0666 : 0600);
   }
   evutil_make_socket_nonblocking(listen_fd);

   struct event_base *base = event_base_new();
   if (!base) {
      util_err("cannot create the event loop");
      return 1;
   }
   struct event *accept_ev =
      event_new(base, listen_fd, EV_READ | EV_PERSIST, on_accept, &daemon);
   struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
   struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
   event_add(accept_ev, NULL);
   event_add(sigint, NULL);
   event_add(sigterm, NULL);
   struct event *watchdog = NULL;
   uint64_t watchdog_usec = 0;
   if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec) {
      watchdog = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
      struct timeval tv = {.tv_sec = (time_t)(watchdog_usec / 2 / 1000000),
                           .tv_usec = (suseconds_t)(watchdog_usec / 2 % 1000000)};
      event_add(watchdog, &tv);
   }

   util_notice("serving %s (host driver %s) on %s", daemon.host.device_name,
               daemon.host.manifest, daemon.socket_path ? daemon.socket_path : "systemd socket");
   sd_notifyf(0, "READY=1\nSTATUS=serving %s", daemon.host.device_name);

   event_base_dispatch(base);

   sd_notify(0, "STOPPING=1");
   event_del(accept_ev);
   stop_clients(&daemon);
   if (watchdog)
      event_free(watchdog);
   event_free(accept_ev);
   event_free(sigint);
   event_free(sigterm);
   event_base_free(base);
   close(listen_fd);
   if (own_socket)
      unlink(daemon.socket_path);
   free(daemon.socket_path);
   gpud_host_finish(&daemon.host);
   return 0;
}
