/* SPDX-License-Identifier: MIT */
/*
 * The daemon's configuration: its defaults, the configuration files
 * (GPUD_CONFIG_FILE or --config FILE, each with its .d/ drop-ins, read
 * with inih) and the command line, which wins; read again for a reload
 * (SIGHUP).  Bad input gets a message naming the file, line or option.
 */
#include "srv_config.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_status.h"
#include "util_log.h"
#include "util_macros.h"

static void
usage(FILE *f)
{
   struct daemon_limits d = DAEMON_LIMITS_DEFAULT;
   fprintf(f,
           "Usage: gpud [OPTION]...\n"
           "Serve a GPU to Vulkan applications through the gpud ICD.\n\n"
           "  -s, --socket PATH        listen on PATH unless systemd passed a socket\n"
           "                           (default: /run/gpud/gpud.sock as root,\n"
           "                           $XDG_RUNTIME_DIR/gpud/gpud.sock otherwise)\n"
           "  -d, --host-driver FILE   host Vulkan driver's ICD manifest (default: the GPU's\n"
           "                           driver, else lavapipe: %s)\n"
           "  -D, --device SELECTOR    the host device to serve: index:N, uuid:UUID,\n"
           "                           pci:[DOMAIN:]BUS:DEV.FN, render:renderDN (also\n"
           "                           renderDN, /dev/dri/renderDN) or name:TEXT (the\n"
           "                           first whose name contains TEXT; also TEXT alone);\n"
           "                           default: the host driver's first device\n"
           "      --list-devices       list every host driver's devices with their\n"
           "                           selectors, and the render nodes, then exit\n"
           "      --sysfs DIR          find render nodes in DIR/class/drm, a tree laid out\n"
           "                           like /sys, instead of through libdrm (testing)\n"
           "  -c, --config FILE        read settings from FILE and FILE.d/*.conf (default:\n"
           "                           %s and its .d/; the command line wins)\n"
           "      --isolation=MODE     process (default): a worker process per client;\n"
           "                           thread: clients on threads of the daemon (debugging)\n"
           "      --validate[=MODE]    run the Khronos validation layer: report (the\n"
           "                           default of --validate) sends its messages to the\n"
           "                           application's debug messengers and the log; strict\n"
           "                           also disconnects a client that breaks a rule;\n"
           "                           off (default)\n"
           "      --spirv=MODE         SPIR-V that SPIRV-Tools finds invalid: report\n"
           "                           (default) warns in the log and the application's\n"
           "                           debug messengers and lets the host driver decide;\n"
           "                           strict refuses it; off does not validate\n"
           "      --bus BUS            offer org.gpud.Daemon1 on D-Bus: system, session,\n"
           "                           none or a bus address (default: the system bus as\n"
           "                           root, else the session bus, where there is one)\n"
           "  -l, --log-level LEVEL    err, warning, notice, info (default) or debug\n"
           "  -h, --help               show this help\n"
           "  -V, --version            show the version\n"
           "\nAccess (a daemon running as root):\n"
           "      --group GROUP        who may connect besides root, and the socket's group\n"
           "                           (default: render)\n"
           "      --admin-group GROUP  may see and disconnect every user's clients\n"
           "      --user USER          workers run as USER before they have a client, and in\n"
           "                           its groups (default: gpud)\n"
           "      --worker-uids FIRST-LAST  each client user's workers run as a uid (and\n"
           "                           gid) of their own from this range (default:\n"
           "                           %u-%u); none: as USER\n"
           "      --state-dir DIR      what the daemon keeps: the uids it gave (default:\n"
           "                           /var/lib/gpud as root, else $XDG_STATE_HOME/gpud)\n"
           "      --cache-dir DIR      the pipeline and shader caches it keeps for each\n"
           "                           user (default: /var/cache/gpud as root, else\n"
           "                           $XDG_CACHE_HOME/gpud)\n"
           "      --cache-size-user SIZE    one user's caches at most (default: %" PRIu64 "M)\n"
           "      --cache-size-total SIZE   every user's together (default: %" PRIu64 "M)\n"
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
           "      --restart-grace TIME on SIGTERM or a crash of the server, workers serve\n"
           "                           their clients on and wait this long for the next\n"
           "                           gpud, which adopts them (default: %u ms; 0: they\n"
           "                           end with their server)\n"
           "      --drain-timeout TIME with --restart-grace 0, on SIGTERM let clients\n"
           "                           finish this long (%u ms)\n"
           "      --crash-backoff TIME the next worker of a program whose worker crashed\n"
           "                           starts this late, doubling with each crash within\n"
           "                           the cool-down (default: %u ms; 0: at once)\n"
           "      --crash-backoff-max TIME  ... up to this (default: %u ms)\n"
           "      --crash-limit N      refuse a program whose workers crashed N times\n"
           "                           within the cool-down (default: %u; 0: never)\n"
           "      --crash-cooldown TIME     how long crashes are remembered, and a\n"
           "                           program refused (default: %u ms)\n"
           "      --spare-workers N    workers kept ready for new clients (default: 1)\n"
           "      --replay-threads N   threads of each worker that replay command\n"
           "                           buffers, 0 to 8, or auto (default): one a CPU\n"
           "                           beyond two, none on two CPUs or fewer\n"
           "      --log-burst N        log lines about one client (or one user's\n"
           "                           connections) before rate limiting (default: %u)\n"
           "      --log-rate N         ... and per second after that (default: %u)\n"
           "      --no-sandbox         no system-call filter in workers (debugging)\n"
           "\nA fair share of the GPU (also [user NAME] and [program NAME] sections of the\n"
           "configuration files: nice = N, gpu-quota = PERCENT; gpudctl renice ID N):\n"
           "      --fair-share=yes|no  submissions take turns by their clients' weighted GPU\n"
           "                           time (default: yes; no: as the host driver has them)\n",
           GPUD_LAVAPIPE_MANIFEST[0] ? GPUD_LAVAPIPE_MANIFEST : "lvp_icd*.json where the loader looks",
           GPUD_CONFIG_FILE, (unsigned)SRV_WORKER_UID_FIRST, (unsigned)SRV_WORKER_UID_LAST,
           d.cache_user_bytes >> 20, d.cache_total_bytes >> 20, d.client_objects, d.uid_connections, d.max_clients,
           d.handshake_timeout_ms, d.start_timeout_ms, d.send_timeout_ms, d.teardown_timeout_ms,
           d.restart_grace_ms, d.drain_timeout_ms, d.crash_backoff_ms, d.crash_backoff_max_ms, d.crash_limit,
           d.crash_cooldown_ms, d.log_burst, d.log_per_second);
}

/* The decimal number s starts with (no sign): -EINVAL where there is none,
 * or it does not fit; *end: what follows it. */
static int
leading_number(const char *s, char **end, unsigned long long *ret)
{
   errno = 0;
   if (!*s || *s == '-')
      return -EINVAL;
   *ret = strtoull(s, end, 10);
   return errno || *end == s ? -EINVAL : 0;
}

static int
parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
   char *end = NULL;
   unsigned long long v;
   if (leading_number(s, &end, &v) < 0 || *end || v > max)
      return -EINVAL;
   *ret = v;
   return 0;
}

static int
parse_size(const char *s, uint64_t *ret)
{
   if (!strcmp(s, "none") || !strcmp(s, "unlimited")) {
      *ret = DAEMON_UNLIMITED;
      return 0;
   }
   char *end = NULL;
   unsigned long long v;
   if (leading_number(s, &end, &v) < 0)
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
   unsigned long long v;
   if (leading_number(s, &end, &v) < 0)
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
   OPT_SPIRV,
   OPT_ISOLATION,
   OPT_USER,
   OPT_WORKER_UIDS,
   OPT_STATE_DIR,
   OPT_CACHE_DIR,
   OPT_GROUP,
   OPT_ADMIN_GROUP,
   OPT_BUS,
   OPT_SPARE_WORKERS,
   OPT_REPLAY_THREADS,
   OPT_NO_SANDBOX,
   OPT_FAIR_SHARE,
   OPT_WORKER,
   OPT_WORKER_BASE,
   OPT_SYSFS,
   OPT_LIST_DEVICES,
   OPT_LIMIT, /* OPT_LIMIT + i: limit_options[i] */
};

enum limit_kind {
   LIMIT_SIZE,  /* uint64_t bytes, K/M/G/T, 'none' */
   LIMIT_COUNT, /* uint64_t or uint32_t count */
   LIMIT_TIME,  /* uint32_t milliseconds, or with s */
};

/* The options that set struct daemon_limits, one line each. */
static const struct limit_option {
   const char *name;
   enum limit_kind kind;
   size_t offset;
   size_t size;
   uint64_t min, max;
   const char *expected;
} limit_options[] = {
#define LIMIT(name, kind, field, min, max, expected)                                       \
   {name, kind, offsetof(struct daemon_limits, field),                                      \
    sizeof(((struct daemon_limits *)0)->field), min, max, expected}
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
   LIMIT("restart-grace", LIMIT_TIME, restart_grace_ms, 0, 3600000, "a time up to an hour (such as 30s; 0: none)"),
   LIMIT("crash-limit", LIMIT_COUNT, crash_limit, 0, 1000, "a number (0: never refuse)"),
   LIMIT("crash-cooldown", LIMIT_TIME, crash_cooldown_ms, 0, UINT32_MAX / 2, "a time (such as 60s)"),
   LIMIT("crash-backoff", LIMIT_TIME, crash_backoff_ms, 0, 600000, "a time (such as 100 or 1s; 0: none)"),
   LIMIT("crash-backoff-max", LIMIT_TIME, crash_backoff_max_ms, 0, 600000, "a time (such as 5s)"),
   LIMIT("log-burst", LIMIT_COUNT, log_burst, 1, 1u << 20, "a positive number"),
   LIMIT("log-rate", LIMIT_COUNT, log_per_second, 1, 1u << 20, "a positive number"),
   LIMIT("cache-size-user", LIMIT_SIZE, cache_user_bytes, 0, UINT64_MAX, "a size (such as 2G) or 'none'"),
   LIMIT("cache-size-total", LIMIT_SIZE, cache_total_bytes, 0, UINT64_MAX, "a size (such as 16G) or 'none'"),
#undef LIMIT
};

static int
set_limit(const struct limit_option *o, const char *arg, struct daemon_limits *l)
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

/* ---- one option, from the command line or a configuration file -------------- */

/* Strings a configuration owns (values read from files). */
struct srv_config_strings {
   char **v;
   size_t n;
   struct srv_config_strings *older; /* a reload's predecessor, still pointed to */
};

static const char *
keep(struct srv_config *cfg, const char *value)
{
   struct srv_config_strings *s = cfg->strings;
   char *copy = strdup(value);
   char **v = copy ? realloc(s->v, sizeof(*v) * (s->n + 1)) : NULL;
   if (!v) {
      free(copy);
      return NULL;
   }
   s->v = v;
   s->v[s->n++] = copy;
   return copy;
}

static void
config_strings_free(struct srv_config_strings *s)
{
   while (s) {
      struct srv_config_strings *older = s->older;
      for (size_t i = 0; i < s->n; i++)
         free(s->v[i]);
      free(s->v);
      free(s);
      s = older;
   }
}

void
srv_config_keep_older(struct srv_config *cfg, struct srv_config *older)
{
   if (cfg->strings) {
      cfg->strings->older = older->strings;
      older->strings = NULL;
   }
}

static bool
parse_bool(const char *s, bool *ret)
{
   if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on") || !strcmp(s, "1"))
      *ret = true;
   else if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off") || !strcmp(s, "0"))
      *ret = false;
   else
      return false;
   return true;
}

/* set_option()'s answer for a name that is no setting. */
static const char unknown_setting[] = "a known setting";

/*
 * Sets option name (a long option's name, which is also its key in a
 * configuration file) to value; copy: the value must be copied (a file's).
 * NULL, or what was wrong (a static string, "is not ..." completed by the
 * caller with the value).
 */
static const char *
set_option(struct srv_config *cfg, const char *name, const char *value, bool copy)
{
   const char *kept = copy ? keep(cfg, value) : value;
   if (!kept)
      return "could not be stored (out of memory)";
   uint64_t v;
   bool b;
   if (!strcmp(name, "socket")) {
      cfg->socket_path = kept;
   } else if (!strcmp(name, "host-driver")) {
      cfg->manifest = kept;
   } else if (!strcmp(name, "device")) {
      if (daemon_selector_parse(kept, &cfg->device_sel, NULL, 0) < 0)
         return "a device selector (index:N, uuid:HEX, pci:[DOMAIN:]BUS:DEV.FN, "
                "render:renderDN or name:TEXT)";
      cfg->device = kept;
   } else if (!strcmp(name, "user")) {
      cfg->user = kept;
   } else if (!strcmp(name, "worker-uids")) {
      if (!strcmp(value, "none")) {
         cfg->worker_uid_first = 1;
         cfg->worker_uid_last = 0;
      } else {
         char *dash = strchr(kept, '-');
         uint64_t first, last;
         char head[32];
         size_t len = dash ? (size_t)(dash - kept) : 0;
         if (!dash || len >= sizeof(head))
            return "FIRST-LAST (uids, as 2113929216-2113994751) or 'none'";
         memcpy(head, kept, len);
         head[len] = '\0';
         if (parse_u64(head, UINT32_MAX - 2, &first) < 0 ||
             parse_u64(dash + 1, UINT32_MAX - 2, &last) < 0 || first > last || first < 1000)
            return "FIRST-LAST, uids from 1000 up (as 2113929216-2113994751), or 'none'";
         cfg->worker_uid_first = (uid_t)first;
         cfg->worker_uid_last = (uid_t)last;
      }
   } else if (!strcmp(name, "state-dir")) {
      if (kept[0] != '/')
         return "an absolute path";
      cfg->state_dir = kept;
   } else if (!strcmp(name, "cache-dir")) {
      if (kept[0] != '/')
         return "an absolute path";
      cfg->cache_dir = kept;
   } else if (!strcmp(name, "group")) {
      cfg->group = kept;
   } else if (!strcmp(name, "admin-group")) {
      cfg->admin_group = kept;
   } else if (!strcmp(name, "bus")) {
      cfg->bus = kept;
   } else if (!strcmp(name, "validate")) {
      if (!strcmp(value, "report") || !strcmp(value, "on"))
         cfg->validate = DAEMON_VALIDATE_REPORT;
      else if (!strcmp(value, "strict"))
         cfg->validate = DAEMON_VALIDATE_STRICT;
      else if (!strcmp(value, "off"))
         cfg->validate = DAEMON_VALIDATE_OFF;
      else
         return "off, report or strict";
   } else if (!strcmp(name, "spirv")) {
      if (!daemon_spirv_mode_parse(value, &cfg->spirv))
         return "report, strict or off";
   } else if (!strcmp(name, "isolation")) {
      if (!strcmp(value, "process"))
         cfg->isolation = SRV_ISOLATION_PROCESS;
      else if (!strcmp(value, "thread"))
         cfg->isolation = SRV_ISOLATION_THREAD;
      else
         return "process or thread";
   } else if (!strcmp(name, "sandbox")) {
      if (!parse_bool(value, &b))
         return "yes or no";
      cfg->sandbox = b;
   } else if (!strcmp(name, "fair-share")) {
      if (!parse_bool(value, &b))
         return "yes or no";
      cfg->fair_share = b;
   } else if (!strcmp(name, "spare-workers")) {
      if (parse_u64(value, 64, &v) < 0)
         return "a number from 0 to 64";
      cfg->spare_workers = (unsigned)v;
   } else if (!strcmp(name, "replay-threads")) {
      static_assert(DAEMON_STATUS_LANES == 8, "--help says 0 to 8");
      if (!strcmp(value, "auto"))
         cfg->replay_threads = -1;
      else if (parse_u64(value, DAEMON_STATUS_LANES, &v) < 0)
         return "auto or a number from 0 to 8";
      else
         cfg->replay_threads = (int)v;
   } else if (!strcmp(name, "log-level")) {
      enum util_log_level level;
      if (util_log_parse_level(value, &level) < 0)
         return "err, warning, notice, info or debug";
      cfg->log_level = (int)level;
   } else {
      for (size_t i = 0; i < UTIL_ARRAY_SIZE(limit_options); i++) {
         const struct limit_option *o = &limit_options[i];
         if (!strcmp(name, o->name))
            return set_limit(o, value, &cfg->limits) < 0 ? o->expected : NULL;
      }
      return unknown_setting;
   }
   return NULL;
}

/* ---- configuration files ---------------------------------------------------------- */

struct file_state {
   struct srv_config *cfg;
   const char *path;
   char *error; /* the first error, "file:line: ..." */
};

/* A share: "25%", "12.5%" (or "0.25"); millionths of the GPU's time. */
static bool
parse_share(const char *s, uint32_t *ret)
{
   char *end = NULL;
   errno = 0;
   double v = strtod(s, &end);
   if (errno || end == s)
      return false;
   if (*end == '%') {
      v /= 100.0;
      end++;
   }
   if (*end || !(v > 0.0) || v > 1.0)
      return false;
   *ret = (uint32_t)(v * 1000000.0 + 0.5);
   return *ret > 0;
}

/* A key of a [user NAME] or [program NAME] section; NULL, or what is wrong. */
static const char *
set_share_rule(struct srv_config *cfg, const char *section, const char *key, const char *value)
{
   bool user = !strncmp(section, "user ", 5);
   const char *name = section + (user ? 5 : 8);
   while (*name == ' ')
      name++;
   if (!*name)
      return "the section names no user or program";
   struct srv_share_rule *rule = NULL;
   for (unsigned i = 0; i < cfg->n_share_rules; i++) {
      if (cfg->share_rules[i].user == user && !strcmp(cfg->share_rules[i].name, name))
         rule = &cfg->share_rules[i];
   }
   if (!rule) {
      if (cfg->n_share_rules == SRV_MAX_SHARE_RULES)
         return "too many [user] and [program] sections (64 at most)";
      uid_t uid = 0;
      if (user) {
         char *end = NULL;
         errno = 0;
         unsigned long long n = strtoull(name, &end, 10);
         bool number = *name >= '0' && *name <= '9' && !*end;
         struct passwd *pw = number ? NULL : getpwnam(name);
         if (number && (errno || n >= (uid_t)-1))
            return "a user number from 0 to 4294967294";
         if (number)
            uid = (uid_t)n;
         else if (pw)
            uid = pw->pw_uid;
         else
            return "no such user";
      }
      const char *kept = keep(cfg, name);
      if (!kept)
         return "out of memory";
      rule = &cfg->share_rules[cfg->n_share_rules++];
      *rule = (struct srv_share_rule){.user = user, .name = kept, .uid = uid};
   }
   if (!strcmp(key, "nice")) {
      uint64_t v;
      bool negative = value[0] == '-';
      if (parse_u64(value + negative, 20, &v) < 0 || (!negative && v > 19))
         return "a nice level from -20 to 19";
      rule->has_nice = true;
      rule->nice = negative ? -(int)v : (int)v;
      return NULL;
   }
   if (!strcmp(key, "gpu-quota")) {
      if (!strcmp(value, "none")) {
         rule->has_quota = true;
         rule->quota_ppm = 0;
         return NULL;
      }
      if (!parse_share(value, &rule->quota_ppm))
         return "a share of the GPU's time (such as 25%), or none";
      rule->has_quota = true;
      return NULL;
   }
   return "unknown setting (nice, gpu-quota)";
}

/* inih's handler: one key; 0 stops the file (ini_parse_file returns the
 * line). f->error: what was wrong, without the place. */
static int
file_key(void *data, const char *section, const char *name, const char *value)
{
   struct file_state *f = data;
   if (f->error)
      return 0; /* inih goes on after an error; the first is the one told */
   int r;
   if (!strncmp(section, "user ", 5) || !strncmp(section, "program ", 8)) {
      const char *problem = set_share_rule(f->cfg, section, name, value);
      if (!problem)
         return 1;
      r = asprintf(&f->error, "[%s] %s = '%s': %s", section, name, value, problem);
   } else if (*section && strcmp(section, "gpud")) {
      r = asprintf(&f->error, "[%s] %s: settings go in the [gpud] section, or in [user NAME] "
                   "and [program NAME] sections (nice, gpu-quota)", section, name);
   } else if (!strcmp(name, "worker") || !strcmp(name, "config")) {
      r = asprintf(&f->error, "%s: not a setting of configuration files", name);
   } else {
      const char *problem = set_option(f->cfg, name, value, true);
      if (!problem)
         return 1;
      if (problem == unknown_setting)
         r = asprintf(&f->error, "%s: unknown setting", name);
      else
         r = asprintf(&f->error, "%s = '%s': expected %s", name, value, problem);
   }
   if (r < 0)
      f->error = NULL;
   return 0;
}

/* One file into cfg; missing is not an error unless required. 0, or -1 with
 * *error set ("file:line: reason", the caller's to free). */
static int
load_file(struct srv_config *cfg, const char *path, bool required, char **error)
{
   FILE *fp = fopen(path, "re");
   if (!fp) {
      if (errno == ENOENT && !required)
         return 0;
      if (asprintf(error, "gpud: %s: %s", path, strerror(errno)) < 0)
         *error = NULL;
      return -1;
   }
   struct file_state f = {.cfg = cfg, .path = path};
   int r = ini_parse_file(fp, file_key, &f);
   fclose(fp);
   if (r == 0)
      return 0;
   if (asprintf(error, "gpud: %s:%d: %s", path, r > 0 ? r : 0,
                f.error ? f.error : "not a 'key = value' line or a [section]") < 0)
      *error = NULL;
   free(f.error);
   return -1;
}

static int
drop_in_name(const struct dirent *d)
{
   size_t n = strlen(d->d_name);
   return d->d_name[0] != '.' && n > 5 && !strcmp(d->d_name + n - 5, ".conf");
}

/* path, then path.d/\*.conf in name order: later files win. */
static int
load_files(struct srv_config *cfg, const char *path, bool required, char **error)
{
   if (load_file(cfg, path, required, error) < 0)
      return -1;
   char *dir = NULL;
   if (asprintf(&dir, "%s.d", path) < 0)
      return -1;
   struct dirent **names = NULL;
   int n = scandir(dir, &names, drop_in_name, alphasort);
   int r = 0;
   for (int i = 0; i < n; i++) {
      char *file = NULL;
      if (r == 0 && asprintf(&file, "%s/%s", dir, names[i]->d_name) >= 0) {
         r = load_file(cfg, file, true, error);
         free(file);
      }
      free(names[i]);
   }
   free(names);
   free(dir);
   return r;
}

/* ---- the whole configuration: defaults, files, then the command line ---------- */

static const struct option fixed_options[] = {
   {"socket", required_argument, NULL, 's'},
   {"host-driver", required_argument, NULL, 'd'},
   {"device", required_argument, NULL, 'D'},
   {"config", required_argument, NULL, 'c'},
   {"validate", optional_argument, NULL, OPT_VALIDATE},
   {"spirv", required_argument, NULL, OPT_SPIRV},
   {"isolation", required_argument, NULL, OPT_ISOLATION},
   {"user", required_argument, NULL, OPT_USER},
   {"worker-uids", required_argument, NULL, OPT_WORKER_UIDS},
   {"state-dir", required_argument, NULL, OPT_STATE_DIR},
   {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
   {"group", required_argument, NULL, OPT_GROUP},
   {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
   {"bus", required_argument, NULL, OPT_BUS},
   {"spare-workers", required_argument, NULL, OPT_SPARE_WORKERS},
   {"replay-threads", required_argument, NULL, OPT_REPLAY_THREADS},
   {"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
   {"fair-share", required_argument, NULL, OPT_FAIR_SHARE},
   {"worker", required_argument, NULL, OPT_WORKER},
   {"worker-base", required_argument, NULL, OPT_WORKER_BASE},
   {"sysfs", required_argument, NULL, OPT_SYSFS},
   {"list-devices", no_argument, NULL, OPT_LIST_DEVICES},
   {"log-level", required_argument, NULL, 'l'},
   {"help", no_argument, NULL, 'h'},
   {"version", no_argument, NULL, 'V'},
};

/* The command line, kept for reloads. */
/* the command line, read again at each reload */
static int saved_argc;
static char **saved_argv;

static void
config_defaults(struct srv_config *cfg)
{
   *cfg = (struct srv_config){
      .validate = DAEMON_VALIDATE_OFF,
      .spirv = DAEMON_SPIRV_REPORT,
      .isolation = SRV_ISOLATION_PROCESS,
      .sandbox = true,
      .fair_share = true,
      .spare_workers = 1,
      .replay_threads = -1,
      .worker_uid_first = SRV_WORKER_UID_FIRST,
      .worker_uid_last = SRV_WORKER_UID_LAST,
      .limits = DAEMON_LIMITS_DEFAULT,
      .log_level = -1,
   };
}

/*
 * cfg from the defaults, the configuration files (--config FILE, else
 * GPUD_CONFIG_FILE, each with its .d/ drop-ins) and the command line, which
 * wins. quiet: a reload (the command line was checked at start). On
 * SRV_CONFIG_BAD, *error says why.
 */
static enum srv_config_result
build_config(struct srv_config *cfg, pid_t *worker_parent, bool quiet, char **error)
{
   struct option options[UTIL_ARRAY_SIZE(fixed_options) + UTIL_ARRAY_SIZE(limit_options) + 1];
   memcpy(options, fixed_options, sizeof(fixed_options));
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(limit_options); i++)
      options[UTIL_ARRAY_SIZE(fixed_options) + i] =
         (struct option){limit_options[i].name, required_argument, NULL, OPT_LIMIT + (int)i};
   memset(&options[UTIL_ARRAY_SIZE(options) - 1], 0, sizeof(struct option));

   config_defaults(cfg);
   cfg->strings = calloc(1, sizeof(struct srv_config_strings));
   if (!cfg->strings)
      return SRV_CONFIG_BAD;
   *worker_parent = 0;
   *error = NULL;

   /* first the file the command line names, if it does */
   const char *config_path = NULL;
   bool is_worker = false;
   opterr = 0;
   optind = 0;
   int c;
   while ((c = getopt_long(saved_argc, saved_argv, "s:d:D:c:l:hV", options, NULL)) != -1) {
      if (c == 'c')
         config_path = optarg;
      else if (c == OPT_WORKER)
         is_worker = true;
   }
   /* a worker has everything on its command line */
   if (!is_worker &&
       load_files(cfg, config_path ? config_path : GPUD_CONFIG_FILE, config_path != NULL,
                  error) < 0)
      return SRV_CONFIG_BAD;

   opterr = !quiet;
   optind = 0;
   uint64_t v;
   while ((c = getopt_long(saved_argc, saved_argv, "s:d:D:c:l:hV", options, NULL)) != -1) {
      const char *name = NULL;
      const char *value = optarg;
      switch (c) {
      case 's': name = "socket"; break;
      case 'd': name = "host-driver"; break;
      case 'D': name = "device"; break;
      case 'l': name = "log-level"; break;
      case 'c': continue;
      case OPT_VALIDATE:
         name = "validate";
         value = optarg ? optarg : "report";
         break;
      case OPT_SPIRV: name = "spirv"; break;
      case OPT_ISOLATION: name = "isolation"; break;
      case OPT_USER: name = "user"; break;
      case OPT_WORKER_UIDS: name = "worker-uids"; break;
      case OPT_STATE_DIR: name = "state-dir"; break;
      case OPT_CACHE_DIR: name = "cache-dir"; break;
      case OPT_GROUP: name = "group"; break;
      case OPT_ADMIN_GROUP: name = "admin-group"; break;
      case OPT_BUS: name = "bus"; break;
      case OPT_SPARE_WORKERS: name = "spare-workers"; break;
      case OPT_REPLAY_THREADS: name = "replay-threads"; break;
      case OPT_FAIR_SHARE: name = "fair-share"; break;
      case OPT_NO_SANDBOX:
         name = "sandbox";
         value = "no";
         break;
      case OPT_WORKER:
         if (parse_u64(optarg, INT_MAX, &v) < 0 || !v) {
            fprintf(stderr, "gpud: --worker: '%s' is not the server's pid\n", optarg);
            return SRV_CONFIG_USAGE;
         }
         *worker_parent = (pid_t)v;
         continue;
      case OPT_WORKER_BASE:
         cfg->worker_base = optarg;
         continue;
      case OPT_SYSFS:
         cfg->sysfs_root = optarg;
         continue;
      case OPT_LIST_DEVICES:
         cfg->list_devices = true;
         continue;
      case 'h':
         usage(stdout);
         return SRV_CONFIG_EXIT;
      case 'V':
         printf("gpud %s\n", daemon_version);
         return SRV_CONFIG_EXIT;
      default:
         if (c >= OPT_LIMIT && c < OPT_LIMIT + (int)UTIL_ARRAY_SIZE(limit_options)) {
            name = limit_options[c - OPT_LIMIT].name;
            break;
         }
         if (!quiet)
            usage(stderr);
         return SRV_CONFIG_USAGE;
      }
      const char *problem = set_option(cfg, name, value, false);
      if (problem) {
         if (!quiet)
            fprintf(stderr, "gpud: --%s: '%s' is not %s\n", name, value, problem);
         return SRV_CONFIG_USAGE;
      }
   }
   if (optind < saved_argc) {
      if (!quiet) {
         fprintf(stderr, "gpud: unexpected argument '%s'\n", saved_argv[optind]);
         usage(stderr);
      }
      return SRV_CONFIG_USAGE;
   }
   return SRV_CONFIG_OK;
}

enum srv_config_result
srv_config_build(struct srv_config *cfg, int argc, char **argv, pid_t *worker_parent,
                  char **error)
{
   saved_argc = argc;
   saved_argv = argv;
   return build_config(cfg, worker_parent, false, error);
}

int
srv_config_reload(struct srv_config *cfg, char **error)
{
   pid_t unused;
   *error = NULL;
   if (!saved_argv)
      return -1;
   enum srv_config_result r = build_config(cfg, &unused, true, error);
   if (r != SRV_CONFIG_OK) {
      srv_config_finish(cfg);
      if (!*error && asprintf(error, "gpud: the command line no longer parses") < 0)
         *error = NULL;
      return -1;
   }
   return 0;
}

void
srv_config_finish(struct srv_config *cfg)
{
   if (cfg->strings)
      config_strings_free(cfg->strings);
   cfg->strings = NULL;
}
