/* SPDX-License-Identifier: MIT */
/*
 * gpud: serves one GPU (through its host Vulkan driver) to every client of
 * its socket.  The same executable is the server and, started by the
 * server with --worker, each client's worker.
 */
#include <errno.h>
#include <stddef.h>
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
   OPT_SPARE_WORKERS,
   OPT_NO_SANDBOX,
   OPT_WORKER,
   OPT_LIMIT, /* OPT_LIMIT + i: limit_options[i] */
};

enum limit_kind {
   LIMIT_SIZE,  /* uint64_t bytes, K/M/G/T, 'none' */
   LIMIT_COUNT, /* uint64_t or uint32_t count */
   LIMIT_TIME,  /* uint32_t milliseconds, or with s */
};

/* The options that set struct gpud_limits, one line each. */
static const struct limit_option {
   const char *name;
   enum limit_kind kind;
   size_t offset;
   size_t size;
   uint64_t min, max;
   const char *expected;
} limit_options[] = {
#define LIMIT(name, kind, field, min, max, expected)                                       \
   {name, kind, offsetof(struct gpud_limits, field),                                      \
    sizeof(((struct gpud_limits *)0)->field), min, max, expected}
   LIMIT("client-memory", LIMIT_SIZE, client_memory, 1, UINT64_MAX, "a size (such as 512M) or 'none'"),
   LIMIT("uid-memory", LIMIT_SIZE, uid_memory, 1, UINT64_MAX, "a size (such as 4G) or 'none'"),
   LIMIT("client-objects", LIMIT_COUNT, client_objects, 1, UINT64_MAX, "a positive number"),
   LIMIT("uid-connections", LIMIT_COUNT, uid_connections, 1, 1u << 20, "a positive number"),
   LIMIT("max-clients", LIMIT_COUNT, max_clients, 1, 1u << 20, "a positive number"),
   LIMIT("handshake-timeout", LIMIT_TIME, handshake_timeout_ms, 1, UINT32_MAX / 2, "a time (such as 500 or 5s)"),
   LIMIT("start-timeout", LIMIT_TIME, start_timeout_ms, 1, UINT32_MAX / 2, "a time (such as 20s)"),
   LIMIT("send-timeout", LIMIT_TIME, send_timeout_ms, 1, UINT32_MAX / 2, "a time (such as 500 or 5s)"),
   LIMIT("teardown-timeout", LIMIT_TIME, teardown_timeout_ms, 1, UINT32_MAX / 2, "a time (such as 500 or 5s)"),
   LIMIT("drain-timeout", LIMIT_TIME, drain_timeout_ms, 0, UINT32_MAX / 2, "a time (such as 500 or 5s)"),
   LIMIT("crash-limit", LIMIT_COUNT, crash_limit, 0, 1000, "a number (0: never refuse)"),
   LIMIT("crash-cooldown", LIMIT_TIME, crash_cooldown_ms, 0, UINT32_MAX / 2, "a time (such as 60s)"),
   LIMIT("log-burst", LIMIT_COUNT, log_burst, 1, 1u << 20, "a positive number"),
   LIMIT("log-rate", LIMIT_COUNT, log_per_second, 1, 1u << 20, "a positive number"),
#undef LIMIT
};

static int
set_limit(const struct limit_option *o, const char *arg, struct gpud_limits *l)
{
   uint64_t v;
   uint32_t ms;
   int r;
   switch (o->kind) {
   case LIMIT_SIZE:
      r = parse_size(arg, &v);
      break;
   case LIMIT_TIME:
      r = parse_time(arg, &ms);
      v = ms;
      break;
   default:
      r = parse_u64(arg, UINT64_MAX, &v);
      break;
   }
   if (r < 0 || v < o->min || v > o->max)
      return -EINVAL;
   void *field = (char *)l + o->offset;
   if (o->size == sizeof(uint64_t))
      *(uint64_t *)field = v;
   else
      *(uint32_t *)field = (uint32_t)v;
   return 0;
}

static int
bad_value(const char *option, const char *value, const char *expected)
{
   fprintf(stderr, "gpud: --%s: '%s' is not %s\n", option, value, expected);
   return 2;
}

int
main(int argc, char **argv)
{
   static const struct option fixed_options[] = {
      {"socket", required_argument, NULL, 's'},
      {"host-driver", required_argument, NULL, 'd'},
      {"device", required_argument, NULL, 'D'},
      {"validate", optional_argument, NULL, OPT_VALIDATE},
      {"isolation", required_argument, NULL, OPT_ISOLATION},
      {"user", required_argument, NULL, OPT_USER},
      {"group", required_argument, NULL, OPT_GROUP},
      {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
      {"spare-workers", required_argument, NULL, OPT_SPARE_WORKERS},
      {"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
      {"worker", required_argument, NULL, OPT_WORKER},
      {"log-level", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
   };
   struct option options[UTIL_ARRAY_SIZE(fixed_options) + UTIL_ARRAY_SIZE(limit_options) + 1];
   memcpy(options, fixed_options, sizeof(fixed_options));
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(limit_options); i++)
      options[UTIL_ARRAY_SIZE(fixed_options) + i] =
         (struct option){limit_options[i].name, required_argument, NULL, OPT_LIMIT + (int)i};
   memset(&options[UTIL_ARRAY_SIZE(options) - 1], 0, sizeof(struct option));
   struct gpud_config cfg = {
      .validate = GPUD_VALIDATE_OFF,
      .isolation = GPUD_ISOLATION_PROCESS,
      .sandbox = true,
      .spare_workers = 1,
      .limits = GPUD_LIMITS_DEFAULT,
   };
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
      case OPT_SPARE_WORKERS:
         if (parse_u64(optarg, 64, &v) < 0)
            return bad_value("spare-workers", optarg, "a number from 0 to 64");
         cfg.spare_workers = (unsigned)v;
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
         if (c >= OPT_LIMIT && c < OPT_LIMIT + (int)UTIL_ARRAY_SIZE(limit_options)) {
            const struct limit_option *o = &limit_options[c - OPT_LIMIT];
            if (set_limit(o, optarg, &cfg.limits) < 0)
               return bad_value(o->name, optarg, o->expected);
            break;
         }
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
