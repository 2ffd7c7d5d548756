/* SPDX-License-Identifier: MIT */
/*
 * gpud: serves one GPU (through its host Vulkan driver) to every client of
 * its socket.  The same executable is the server and, started by the
 * server with --worker, each client's worker.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gpud_limits.h"
#include "gpud_server.h"
#include "gpud_worker.h"
#include "util_log.h"
#include "util_macros.h"

static void
usage(FILE *f)
{
   struct gpud_limits d = GPUD_LIMITS_DEFAULT;
   fprintf(f,
           "Usage: gpud [OPTION]...\n"
           "Serve a GPU to Vulkan applications through the gpud ICD.\n\n"
           "  -s, --socket PATH        listen on PATH (default: a socket passed by systemd,\n"
           "                           else /run/gpud/gpud.sock as root,\n"
           "                           $XDG_RUNTIME_DIR/gpud/gpud.sock otherwise)\n"
           "  -d, --host-driver FILE   host Vulkan driver's ICD manifest (default: the GPU's\n"
           "                           driver, else lavapipe: %s)\n"
           "  -D, --device NAME        serve the host device whose name contains NAME\n"
           "      --isolation=MODE     process (default): a worker process per client;\n"
           "                           thread: clients on threads of the daemon (debugging)\n"
           "      --validate[=MODE]    run the Khronos validation layer: report (the\n"
           "                           default of --validate) sends its messages to the\n"
           "                           application's debug messengers and the log; strict\n"
           "                           also disconnects a client that breaks a rule;\n"
           "                           off (default)\n"
           "  -l, --log-level LEVEL    err, warning, notice, info (default) or debug\n"
           "  -h, --help               show this help\n"
           "  -V, --version            show the version\n"
           "\nAccess (a daemon running as root):\n"
           "      --group GROUP        who may connect besides root, and the socket's group\n"
           "                           (default: render)\n"
           "      --admin-group GROUP  may see and disconnect every user's clients\n"
           "      --user USER          workers run as USER (default: gpud)\n"
           "\nLimits (SIZE: bytes with K, M, G or T, or 'none'; TIME: ms, or with s):\n"
           "      --client-memory SIZE memory one client may hold (default: the device's)\n"
           "      --uid-memory SIZE    memory one user's clients may hold (default: the\n"
           "                           device's)\n"
           "      --client-objects N   objects one client may hold (default: %" PRIu64 ")\n"
           "      --uid-connections N  connections one user may have (default: %u)\n"
           "      --max-clients N      connections in all (default: %u)\n"
           "      --handshake-timeout TIME  close connections silent this long (%u ms)\n"
           "      --start-timeout TIME kill a worker not ready this long, and let a client\n"
           "                           go that waited this long for one (%u ms)\n"
           "      --send-timeout TIME  drop a client that does not read for this long (%u ms)\n"
           "      --teardown-timeout TIME   kill a worker this long after its client left\n"
           "                           if it has not ended (%u ms)\n"
           "      --drain-timeout TIME on SIGTERM, let clients finish this long (%u ms)\n"
           "      --crash-limit N      refuse a program whose workers crashed N times\n"
           "                           within the cool-down (default: %u; 0: never)\n"
           "      --crash-cooldown TIME     (default: %u ms)\n"
           "      --spare-workers N    workers kept ready for new clients (default: 1)\n"
           "      --log-burst N        log lines about one client (or one user's\n"
           "                           connections) before rate limiting (default: %u)\n"
           "      --log-rate N         ... and per second after that (default: %u)\n"
           "      --no-sandbox         no system-call filter in workers (debugging)\n",
           GPUD_LAVAPIPE_MANIFEST, d.client_objects, d.uid_connections, d.max_clients,
           d.handshake_timeout_ms, d.start_timeout_ms, d.send_timeout_ms, d.teardown_timeout_ms,
           d.drain_timeout_ms, d.crash_limit, d.crash_cooldown_ms, d.log_burst, d.log_per_second);
}

static int
parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
   char *end = NULL;
   errno = 0;
   if (!*s || *s == '-')
      return -EINVAL;
   unsigned long long v = strtoull(s, &end, 10);
   if (errno || *end || v > max)
      return -EINVAL;
   *ret = v;
   return 0;
}

static int
parse_size(const char *s, uint64_t *ret)
{
   if (!strcmp(s, "none") || !strcmp(s, "unlimited")) {
      *ret = GPUD_UNLIMITED;
      return 0;
   }
   char *end = NULL;
   errno = 0;
   if (!*s || *s == '-')
      return -EINVAL;
   unsigned long long v = strtoull(s, &end, 10);
   if (errno || end == s)
      return -EINVAL;
   unsigned shift = 0;
   switch (*end) {
   case '\0':
      break;
   case 'K': case 'k':
      shift = 10;
      break;
   case 'M': case 'm':
      shift = 20;
      break;
   case 'G': case 'g':
      shift = 30;
      break;
   case 'T': case 't':
      shift = 40;
      break;
   default:
      return -EINVAL;
   }
   if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
      return -EINVAL;
   if (v == 0 || v > (UINT64_MAX >> shift))
      return -EINVAL;
   *ret = v << shift;
   return 0;
}

static int
parse_time(const char *s, uint32_t *ret)
{
   char *end = NULL;
   errno = 0;
   if (!*s || *s == '-')
      return -EINVAL;
   unsigned long long v = strtoull(s, &end, 10);
   if (errno || end == s)
      return -EINVAL;
   if (!strcmp(end, "s"))
      v *= 1000;
   else if (*end && strcmp(end, "ms"))
      return -EINVAL;
   if (v > UINT32_MAX / 2)
      return -EINVAL;
   *ret = (uint32_t)v;
   return 0;
}

enum {
   OPT_VALIDATE = 256,
   OPT_ISOLATION,
   OPT_USER,
   OPT_GROUP,
   OPT_ADMIN_GROUP,
   OPT_CLIENT_MEMORY,
   OPT_UID_MEMORY,
   OPT_CLIENT_OBJECTS,
   OPT_UID_CONNECTIONS,
   OPT_MAX_CLIENTS,
   OPT_HANDSHAKE_TIMEOUT,
   OPT_SEND_TIMEOUT,
   OPT_TEARDOWN_TIMEOUT,
   OPT_DRAIN_TIMEOUT,
   OPT_CRASH_LIMIT,
   OPT_CRASH_COOLDOWN,
   OPT_SPARE_WORKERS,
   OPT_START_TIMEOUT,
   OPT_LOG_BURST,
   OPT_LOG_RATE,
   OPT_NO_SANDBOX,
   OPT_WORKER,
};

static int
bad_value(const char *option, const char *value, const char *expected)
{
   fprintf(stderr, "gpud: --%s: '%s' is not %s\n", option, value, expected);
   return 2;
}

int
main(int argc, char **argv)
{
   static const struct option options[] = {
      {"socket", required_argument, NULL, 's'},
      {"host-driver", required_argument, NULL, 'd'},
      {"device", required_argument, NULL, 'D'},
      {"validate", optional_argument, NULL, OPT_VALIDATE},
      {"isolation", required_argument, NULL, OPT_ISOLATION},
      {"user", required_argument, NULL, OPT_USER},
      {"group", required_argument, NULL, OPT_GROUP},
      {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
      {"client-memory", required_argument, NULL, OPT_CLIENT_MEMORY},
      {"uid-memory", required_argument, NULL, OPT_UID_MEMORY},
      {"client-objects", required_argument, NULL, OPT_CLIENT_OBJECTS},
      {"uid-connections", required_argument, NULL, OPT_UID_CONNECTIONS},
      {"max-clients", required_argument, NULL, OPT_MAX_CLIENTS},
      {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
      {"send-timeout", required_argument, NULL, OPT_SEND_TIMEOUT},
      {"teardown-timeout", required_argument, NULL, OPT_TEARDOWN_TIMEOUT},
      {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
      {"crash-limit", required_argument, NULL, OPT_CRASH_LIMIT},
      {"crash-cooldown", required_argument, NULL, OPT_CRASH_COOLDOWN},
      {"spare-workers", required_argument, NULL, OPT_SPARE_WORKERS},
      {"start-timeout", required_argument, NULL, OPT_START_TIMEOUT},
      {"log-burst", required_argument, NULL, OPT_LOG_BURST},
      {"log-rate", required_argument, NULL, OPT_LOG_RATE},
      {"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
      {"worker", required_argument, NULL, OPT_WORKER},
      {"log-level", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {0},
   };
   struct gpud_config cfg = {
      .validate = GPUD_VALIDATE_OFF,
      .isolation = GPUD_ISOLATION_PROCESS,
      .sandbox = true,
      .spare_workers = 1,
      .limits = GPUD_LIMITS_DEFAULT,
   };
   struct gpud_limits *l = &cfg.limits;
   pid_t worker_parent = 0;
   uint64_t v;
   int c;
   while ((c = getopt_long(argc, argv, "s:d:D:l:hV", options, NULL)) != -1) {
      switch (c) {
      case 's':
         cfg.socket_path = optarg;
         break;
      case 'd':
         cfg.manifest = optarg;
         break;
      case 'D':
         cfg.device = optarg;
         break;
      case OPT_VALIDATE:
         if (!optarg || !strcmp(optarg, "report") || !strcmp(optarg, "on"))
            cfg.validate = GPUD_VALIDATE_REPORT;
         else if (!strcmp(optarg, "strict"))
            cfg.validate = GPUD_VALIDATE_STRICT;
         else if (!strcmp(optarg, "off"))
            cfg.validate = GPUD_VALIDATE_OFF;
         else
            return bad_value("validate", optarg, "off, report or strict");
         break;
      case OPT_ISOLATION:
         if (!strcmp(optarg, "process"))
            cfg.isolation = GPUD_ISOLATION_PROCESS;
         else if (!strcmp(optarg, "thread"))
            cfg.isolation = GPUD_ISOLATION_THREAD;
         else
            return bad_value("isolation", optarg, "process or thread");
         break;
      case OPT_USER:
         cfg.user = optarg;
         break;
      case OPT_GROUP:
         cfg.group = optarg;
         break;
      case OPT_ADMIN_GROUP:
         cfg.admin_group = optarg;
         break;
      case OPT_CLIENT_MEMORY:
         if (parse_size(optarg, &l->client_memory) < 0)
            return bad_value("client-memory", optarg, "a size (such as 512M) or 'none'");
         break;
      case OPT_UID_MEMORY:
         if (parse_size(optarg, &l->uid_memory) < 0)
            return bad_value("uid-memory", optarg, "a size (such as 4G) or 'none'");
         break;
      case OPT_CLIENT_OBJECTS:
         if (parse_u64(optarg, UINT64_MAX, &l->client_objects) < 0 || !l->client_objects)
            return bad_value("client-objects", optarg, "a positive number");
         break;
      case OPT_UID_CONNECTIONS:
         if (parse_u64(optarg, 1u << 20, &v) < 0 || !v)
            return bad_value("uid-connections", optarg, "a positive number");
         l->uid_connections = (uint32_t)v;
         break;
      case OPT_MAX_CLIENTS:
         if (parse_u64(optarg, 1u << 20, &v) < 0 || !v)
            return bad_value("max-clients", optarg, "a positive number");
         l->max_clients = (uint32_t)v;
         break;
      case OPT_HANDSHAKE_TIMEOUT:
         if (parse_time(optarg, &l->handshake_timeout_ms) < 0 || !l->handshake_timeout_ms)
            return bad_value("handshake-timeout", optarg, "a time (such as 500 or 5s)");
         break;
      case OPT_SEND_TIMEOUT:
         if (parse_time(optarg, &l->send_timeout_ms) < 0 || !l->send_timeout_ms)
            return bad_value("send-timeout", optarg, "a time (such as 500 or 5s)");
         break;
      case OPT_TEARDOWN_TIMEOUT:
         if (parse_time(optarg, &l->teardown_timeout_ms) < 0 || !l->teardown_timeout_ms)
            return bad_value("teardown-timeout", optarg, "a time (such as 500 or 5s)");
         break;
      case OPT_DRAIN_TIMEOUT:
         if (parse_time(optarg, &l->drain_timeout_ms) < 0)
            return bad_value("drain-timeout", optarg, "a time (such as 500 or 5s)");
         break;
      case OPT_CRASH_LIMIT:
         if (parse_u64(optarg, 1000, &v) < 0)
            return bad_value("crash-limit", optarg, "a number (0: never refuse)");
         l->crash_limit = (uint32_t)v;
         break;
      case OPT_CRASH_COOLDOWN:
         if (parse_time(optarg, &l->crash_cooldown_ms) < 0)
            return bad_value("crash-cooldown", optarg, "a time (such as 60s)");
         break;
      case OPT_SPARE_WORKERS:
         if (parse_u64(optarg, 64, &v) < 0)
            return bad_value("spare-workers", optarg, "a number from 0 to 64");
         cfg.spare_workers = (unsigned)v;
         break;
      case OPT_START_TIMEOUT:
         if (parse_time(optarg, &l->start_timeout_ms) < 0 || !l->start_timeout_ms)
            return bad_value("start-timeout", optarg, "a time (such as 20s)");
         break;
      case OPT_LOG_BURST:
         if (parse_u64(optarg, 1u << 20, &v) < 0 || !v)
            return bad_value("log-burst", optarg, "a positive number");
         l->log_burst = (uint32_t)v;
         break;
      case OPT_LOG_RATE:
         if (parse_u64(optarg, 1u << 20, &v) < 0 || !v)
            return bad_value("log-rate", optarg, "a positive number");
         l->log_per_second = (uint32_t)v;
         break;
      case OPT_NO_SANDBOX:
         cfg.sandbox = false;
         break;
      case OPT_WORKER:
         if (parse_u64(optarg, INT_MAX, &v) < 0 || !v)
            return bad_value("worker", optarg, "the server's pid");
         worker_parent = (pid_t)v;
         break;
      case 'l': {
         enum util_log_level level;
         if (util_log_parse_level(optarg, &level) < 0) {
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
   if (cfg.manifest && access(cfg.manifest, R_OK) < 0) {
      fprintf(stderr, "gpud: cannot read host driver manifest '%s': %s\n", cfg.manifest,
              strerror(errno));
      return 2;
   }
   signal(SIGPIPE, SIG_IGN);

   if (worker_parent) {
      const struct gpud_worker_options opt = {
         .control_fd = 3,
         .parent = worker_parent,
         .manifest = cfg.manifest,
         .device = cfg.device,
         .validate = cfg.validate,
         .sandbox = cfg.sandbox,
      };
      return gpud_worker_process_main(&opt);
   }

   /* Every client costs the server two fds: take what the system allows. */
   struct rlimit rl;
   if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
   }
   return gpud_server_run(&cfg);
}
