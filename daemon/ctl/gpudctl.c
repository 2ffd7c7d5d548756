/* SPDX-License-Identifier: MIT */
/* gpudctl: inspect the running gpud daemons and act on them. */
#include "gpudctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "daemon_limits.h"
#include "util_macros.h"
#include "util_time.h"
#include "util_transport.h"
#include "wire.h"
#include "wire_gen.h"

static void
usage(FILE *f)
{
   fprintf(f, "Usage: gpudctl [OPTIONS] COMMAND\n"
              "Inspect the running gpud daemons and act on them.\n\n"
              "Commands:\n"
              "  status              the served device and every client: pid, name,\n"
              "                      objects held, memory held, commands run\n"
              "  clients             the clients only\n"
              "  client ID           one client: objects by type and by name, memory per\n"
              "                      heap, queues, faults\n"
              "  queues              every client's queues: submissions, in flight, busy time\n"
              "  memory              the device's heaps and each client's memory per heap\n"
              "  faults              recent faults (workers that crashed, devices lost)\n"
              "  top [-i SECONDS] [-n FRAMES]\n"
              "                      a live view of every client's busy time and memory\n"
              "                      (q quits)\n"
              "  disconnect ID       disconnect the client with this id\n"
              "  inject ID FAULT     inject a fault into a client, to test how it copes:\n"
              "                        lose-device        its devices are lost\n"
              "                        fail-alloc N       its next N allocations fail\n"
              "                        delay-completions MS  its waits end MS later (0: off)\n"
              "                        crash-worker       its worker crashes\n"
              "  renice ID N         a client's nice level (-20 to 19), and so its share of\n"
              "                      the GPU; only root and the admin group may lower it\n"
              "  cache [--user U] [--program P]\n"
              "                      what the users' caches hold, per user and program:\n"
              "                      size, files, last use, pipelines found (hits) and\n"
              "                      compiled (misses) in gpud's pipeline cache\n"
              "  cache clear [--user U] [--program P]\n"
              "                      remove that (a user their own; root and the admin\n"
              "                      group anyone's); without --program the user's whole\n"
              "                      cache, the host drivers' caches too\n\n"
              "Options:\n"
              "  -j, --json          print JSON, documents of version 1 (docs/gpudctl-json.md)\n"
              "  -s, --socket PATH   the daemon's socket (default: every daemon an\n"
              "                      application would find: the list in $GPUD_SOCKET, else\n"
              "                      the sockets in $XDG_RUNTIME_DIR/gpud/ and /run/gpud/)\n"
              "  -b, --bus BUS       ask the daemons on D-Bus instead: system, session or\n"
              "                      a bus address\n"
              "  -d, --daemon NAME   only the daemon on NAME.sock (gpud@NAME), or that path\n"
              "  -h, --help          show this help\n"
              "  -V, --version       show the version\n");
}

/* ---- the control socket --------------------------------------------------- */

struct socket_daemon {
   struct gpudctl_daemon base;
   int fd;
   struct util_msg_reader reader;
   Gpud__ControlMessage *last; /* what the last status came in */
};

static Gpud__ControlMessage *
receive(int fd, struct util_msg_reader *reader)
{
   struct util_msg msg;
   int r = util_msg_recv(fd, reader, &msg);
   if (r < 0) {
      fprintf(stderr, "gpudctl: the daemon closed the connection: %s\n", strerror(-r));
      return NULL;
   }
   util_msg_close_fds(&msg);
   Gpud__ControlMessage *m =
      msg.type == UTIL_MSG_CONTROL ? wire_control_unpack(msg.data, msg.size) : NULL;
   if (!m)
      fprintf(stderr, "gpudctl: malformed answer from the daemon\n");
   else if (m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT) {
      fprintf(stderr, "gpudctl: the daemon refused: %s\n",
              m->disconnect->reason ? m->disconnect->reason : "(no reason)");
      wire_control_free(m);
      return NULL;
   }
   return m;
}

/* Sends req and returns the answer if it is of the case expected. */
static Gpud__ControlMessage *
ask(struct socket_daemon *d, const Gpud__ControlMessage *req, int expected)
{
   Gpud__ControlMessage *reply = NULL;
   if (wire_control_send(d->fd, req) < 0 || !(reply = receive(d->fd, &d->reader)))
      return NULL;
   if ((int)reply->msg_case != expected) {
      fprintf(stderr, "gpudctl: unexpected answer from the daemon\n");
      wire_control_free(reply);
      return NULL;
   }
   return reply;
}

/* The answer ask() got, reply's member, now the caller's; the rest of the
 * reply freed. */
#define TAKE_REPLY(reply, member)                                                         \
   ({                                                                                     \
      __typeof__((reply)->member) taken_ = (reply)->member;                               \
      (reply)->member = NULL;                                                             \
      (reply)->msg_case = GPUD__CONTROL_MESSAGE__MSG__NOT_SET;                            \
      wire_control_free(reply);                                                           \
      taken_;                                                                             \
   })

static int
socket_status(struct gpudctl_daemon *base, Gpud__StatusReply **ret)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__StatusRequest status = GPUD__STATUS_REQUEST__INIT;
   req.msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REQUEST;
   req.status_request = &status;
   Gpud__ControlMessage *reply = ask(d, &req, GPUD__CONTROL_MESSAGE__MSG_STATUS_REPLY);
   if (!reply)
      return 1;
   *ret = TAKE_REPLY(reply, status_reply);
   return 0;
}

static void
socket_free_status(struct gpudctl_daemon *base, Gpud__StatusReply *s)
{
   if (s)
      gpud__status_reply__free_unpacked(s, NULL);
}

/* What the daemon answered about an act on a client (verb object: what
 * failed, with error): 0, or 1 with why. */
static int
act_result(uint64_t client_id, bool found, bool denied, const char *error, const char *verb,
           const char *object)
{
   if (!found)
      fprintf(stderr, "gpudctl: no client %" PRIu64 "\n", client_id);
   else if (error && error[0])
      fprintf(stderr, "gpudctl: cannot %s %s: %s\n", verb, object, error);
   else if (denied)
      fprintf(stderr, "gpudctl: client %" PRIu64 " is another user's: permission denied\n",
              client_id);
   else
      return 0;
   return 1;
}

static int
socket_disconnect(struct gpudctl_daemon *base, uint64_t client_id)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__DisconnectClientRequest disc = GPUD__DISCONNECT_CLIENT_REQUEST__INIT;
   disc.client_id = client_id;
   req.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REQUEST;
   req.disconnect_client_request = &disc;
   Gpud__ControlMessage *reply =
      ask(d, &req, GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REPLY);
   if (!reply)
      return 1;
   int ret = act_result(client_id, reply->disconnect_client_reply->found,
                        reply->disconnect_client_reply->denied, NULL, NULL, NULL);
   wire_control_free(reply);
   return ret;
}

static int
socket_inject(struct gpudctl_daemon *base, uint64_t client_id, const char *fault, uint64_t value)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__InjectRequest in = GPUD__INJECT_REQUEST__INIT;
   in.client_id = client_id;
   in.fault = (char *)fault;
   in.value = value;
   req.msg_case = GPUD__CONTROL_MESSAGE__MSG_INJECT_REQUEST;
   req.inject_request = &in;
   Gpud__ControlMessage *reply = ask(d, &req, GPUD__CONTROL_MESSAGE__MSG_INJECT_REPLY);
   if (!reply)
      return 1;
   int ret = act_result(client_id, reply->inject_reply->found, reply->inject_reply->denied,
                        reply->inject_reply->error, "inject", fault);
   wire_control_free(reply);
   return ret;
}

static int
socket_renice(struct gpudctl_daemon *base, uint64_t client_id, int nice)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__ReniceRequest rn = GPUD__RENICE_REQUEST__INIT;
   rn.client_id = client_id;
   rn.nice = nice;
   req.msg_case = GPUD__CONTROL_MESSAGE__MSG_RENICE_REQUEST;
   req.renice_request = &rn;
   Gpud__ControlMessage *reply = ask(d, &req, GPUD__CONTROL_MESSAGE__MSG_RENICE_REPLY);
   if (!reply)
      return 1;
   char id[24];
   snprintf(id, sizeof(id), "%" PRIu64, client_id);
   int ret = act_result(client_id, reply->renice_reply->found, reply->renice_reply->denied,
                        reply->renice_reply->error, "renice client", id);
   wire_control_free(reply);
   return ret;
}

static int
socket_cache(struct gpudctl_daemon *base, const struct gpudctl_cache_query *q,
             Gpud__CacheReply **ret)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__CacheRequest cr = GPUD__CACHE_REQUEST__INIT;
   cr.user_given = q->user_given;
   cr.uid = q->uid;
   cr.program = (char *)q->program;
   cr.clear = q->clear;
   req.msg_case = GPUD__CONTROL_MESSAGE__MSG_CACHE_REQUEST;
   req.cache_request = &cr;
   Gpud__ControlMessage *reply = ask(d, &req, GPUD__CONTROL_MESSAGE__MSG_CACHE_REPLY);
   if (!reply)
      return 1;
   Gpud__CacheReply *c = reply->cache_reply;
   if (c->error && c->error[0]) {
      fprintf(stderr, "gpudctl: %s%s\n", c->denied ? "permission denied: " : "", c->error);
      wire_control_free(reply);
      return 1;
   }
   *ret = TAKE_REPLY(reply, cache_reply);
   return 0;
}

static void
socket_free_cache(struct gpudctl_daemon *base, Gpud__CacheReply *c)
{
   if (c)
      gpud__cache_reply__free_unpacked(c, NULL);
}

static void
socket_close(struct gpudctl_daemon *base)
{
   struct socket_daemon *d = (struct socket_daemon *)base;
   wire_control_send_disconnect(d->fd, NULL);
   util_msg_reader_finish(&d->reader);
   close(d->fd);
   free(d);
}

/* Connects to the daemon at path and says hello; NULL (a message printed)
 * when it cannot. */
static struct gpudctl_daemon *
socket_open(const char *path)
{
   struct socket_daemon *d = calloc(1, sizeof(*d));
   if (!d)
      return NULL;
   int r = util_socket_connect(path, &d->fd);
   if (r < 0) {
      fprintf(stderr, "gpudctl: cannot reach gpud at %s: %s\n", path, strerror(-r));
      free(d);
      return NULL;
   }
   util_msg_reader_init(&d->reader, 64u << 20);
   d->base = (struct gpudctl_daemon){
      .where = path,
      .status = socket_status,
      .free_status = socket_free_status,
      .disconnect = socket_disconnect,
      .inject = socket_inject,
      .renice = socket_renice,
      .cache = socket_cache,
      .free_cache = socket_free_cache,
      .close = socket_close,
   };
   Gpud__Hello hello = GPUD__HELLO__INIT;
   hello.protocol_version = WIRE_PROTOCOL_VERSION;
   hello.command_table_hash = WIRE_COMMAND_TABLE_HASH;
   hello.vk_header_version = WIRE_VK_HEADER_VERSION;
   hello.client_name = (char *)"gpudctl";
   hello.role = GPUD__ROLE__ROLE_CONTROL;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_HELLO;
   m.hello = &hello;
   Gpud__ControlMessage *reply = ask(d, &m, GPUD__CONTROL_MESSAGE__MSG_WELCOME);
   if (!reply) {
      util_msg_reader_finish(&d->reader);
      close(d->fd);
      free(d);
      return NULL;
   }
   wire_control_free(reply);
   return &d->base;
}

/* ---- top ------------------------------------------------------------------ */

static volatile sig_atomic_t top_stop;

static void
top_signal(int sig)
{
   (void)sig;
   top_stop = 1;
}

/* Refreshes every interval until q, a signal, or frames frames (0: no end). */
static int
top(struct gpudctl_daemon **daemons, size_t n, double interval, unsigned frames)
{
   struct termios saved;
   bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
   if (tty) {
      struct termios raw = saved;
      raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSANOW, &raw);
   }
   struct sigaction sa = {.sa_handler = top_signal};
   sigaction(SIGINT, &sa, NULL);
   sigaction(SIGTERM, &sa, NULL);
   Gpud__StatusReply **before = calloc(n, sizeof(*before));
   uint64_t *when = calloc(n, sizeof(*when));
   int ret = 0;
   for (unsigned frame = 0; before && when && !top_stop && (!frames || frame < frames); frame++) {
      struct winsize ws = {0};
      unsigned width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 100;
      printf("\033[H\033[2J");
      for (size_t i = 0; i < n; i++) {
         Gpud__StatusReply *s = NULL;
         uint64_t now = util_now_ns();
         if (daemons[i]->status(daemons[i], &s) != 0) {
            ret = 1;
            top_stop = 1;
            break;
         }
         gpudctl_print_top(s, before[i], now - when[i], daemons[i]->where, width);
         printf("\n");
         if (before[i])
            daemons[i]->free_status(daemons[i], before[i]);
         before[i] = s;
         when[i] = now;
      }
      fflush(stdout);
      if (frames && frame + 1 == frames)
         break;
      /* sleep, waking for q */
      uint64_t end = util_now_ns() + (uint64_t)(interval * 1e9);
      for (uint64_t now = util_now_ns(); now < end && !top_stop; now = util_now_ns()) {
         struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
         int ms = (int)((end - now) / 1000000) + 1;
         if (tty && poll(&pfd, 1, ms) > 0) {
            char ch;
            if (read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
               top_stop = 1;
         } else if (!tty) {
            usleep((useconds_t)ms * 1000);
         }
      }
   }
   for (size_t i = 0; before && i < n; i++) {
      if (before[i])
         daemons[i]->free_status(daemons[i], before[i]);
   }
   free(before);
   free(when);
   if (tty)
      tcsetattr(STDIN_FILENO, TCSANOW, &saved);
   return ret;
}

/* -d NAME: the socket NAME.sock (as gpud@NAME serves), or that path. */
static bool
daemon_matches(const char *path, const char *name)
{
   if (!strcmp(path, name))
      return true;
   const char *base = strrchr(path, '/');
   base = base ? base + 1 : path;
   size_t len = strlen(name);
   return !strncmp(base, name, len) && !strcmp(base + len, ".sock");
}

/* A whole number from text, or false. */
static bool
parse_u64(const char *text, uint64_t *ret)
{
   char *end = NULL;
   errno = 0;
   unsigned long long v = strtoull(text, &end, 10);
   if (errno || end == text || *end || text[0] == '-')
      return false;
   *ret = v;
   return true;
}

enum command_kind { CMD_VIEW, CMD_DISCONNECT, CMD_INJECT, CMD_RENICE, CMD_TOP, CMD_CACHE };

struct command {
   const char *name;
   enum command_kind kind;
   uint64_t client_id;
   const char *fault;
   uint64_t value;
   int nice;
   double interval;
   unsigned frames;
   struct gpudctl_cache_query cache;
};

/* --user U: a user's name or uid; false with a message. */
static bool
parse_user(const char *text, uint32_t *ret)
{
   uint64_t uid;
   const struct passwd *pw = getpwnam(text);
   if (pw) {
      *ret = (uint32_t)pw->pw_uid;
      return true;
   }
   if (parse_u64(text, &uid) && uid < UINT32_MAX) {
      *ret = (uint32_t)uid;
      return true;
   }
   fprintf(stderr, "gpudctl: no user '%s' (a user name or a uid)\n", text);
   return false;
}

/* cache [clear] [--user U] [--program P] [--json] */
static int
parse_cache(struct command *cmd, int argc, char **argv, bool *json)
{
   cmd->kind = CMD_CACHE;
   cmd->cache.program = "";
   for (int i = 0; i < argc; i++) {
      const char *a = argv[i];
      if (i == 0 && !strcmp(a, "clear")) {
         cmd->cache.clear = true;
      } else if (!strcmp(a, "--json") || !strcmp(a, "-j")) {
         *json = true;
      } else if ((!strcmp(a, "--user") || !strcmp(a, "-u")) && i + 1 < argc) {
         if (!parse_user(argv[++i], &cmd->cache.uid))
            return 2;
         cmd->cache.user_given = true;
      } else if ((!strcmp(a, "--program") || !strcmp(a, "-p")) && i + 1 < argc) {
         cmd->cache.program = argv[++i];
         if (!*cmd->cache.program) {
            fprintf(stderr, "gpudctl: --program needs a program's name\n");
            return 2;
         }
      } else {
         fprintf(stderr, "gpudctl: unexpected argument '%s' to cache (cache [clear] "
                         "[--user U] [--program P])\n", a);
         return 2;
      }
   }
   return 0;
}

/* The command's own arguments; 2 and a message when they are wrong. */
static int
parse_command(struct command *cmd, int argc, char **argv, bool *json)
{
   const char *name = cmd->name;
   if (!strcmp(name, "status") || !strcmp(name, "clients") || !strcmp(name, "faults") ||
       !strcmp(name, "queues") || !strcmp(name, "memory") || !strcmp(name, "client")) {
      bool want_id = !strcmp(name, "client");
      for (int i = 0; i < argc; i++) {
         if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
            *json = true;
         else if (want_id && !cmd->client_id && parse_u64(argv[i], &cmd->client_id) &&
                  cmd->client_id)
            continue;
         else {
            fprintf(stderr, "gpudctl: unexpected argument '%s'\n", argv[i]);
            return 2;
         }
      }
      if (want_id && !cmd->client_id) {
         fprintf(stderr, "gpudctl: client needs a client id (see 'gpudctl clients')\n");
         return 2;
      }
      cmd->kind = CMD_VIEW;
      return 0;
   }
   if (!strcmp(name, "disconnect")) {
      if (argc != 1 || !parse_u64(argv[0], &cmd->client_id) || !cmd->client_id) {
         fprintf(stderr, "gpudctl: disconnect needs one client id (see 'gpudctl status')\n");
         return 2;
      }
      cmd->kind = CMD_DISCONNECT;
      return 0;
   }
   if (!strcmp(name, "inject")) {
      cmd->kind = CMD_INJECT;
      if (argc < 2 || !parse_u64(argv[0], &cmd->client_id) || !cmd->client_id) {
         fprintf(stderr, "gpudctl: inject needs a client id and a fault "
                         "(lose-device, fail-alloc N, delay-completions MS, crash-worker)\n");
         return 2;
      }
      cmd->fault = argv[1];
      bool takes_value = !strcmp(cmd->fault, "fail-alloc") ||
                         !strcmp(cmd->fault, "delay-completions");
      bool known = takes_value || !strcmp(cmd->fault, "lose-device") ||
                   !strcmp(cmd->fault, "crash-worker");
      if (!known) {
         fprintf(stderr, "gpudctl: unknown fault '%s' (lose-device, fail-alloc N, "
                         "delay-completions MS, crash-worker)\n", cmd->fault);
         return 2;
      }
      if (takes_value ? argc != 3 || !parse_u64(argv[2], &cmd->value) : argc != 2) {
         fprintf(stderr, takes_value ? "gpudctl: %s needs a number\n"
                                     : "gpudctl: %s takes no value\n", cmd->fault);
         return 2;
      }
      return 0;
   }
   if (!strcmp(name, "renice")) {
      cmd->kind = CMD_RENICE;
      char *end = NULL;
      long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
      if (argc != 2 || !parse_u64(argv[0], &cmd->client_id) || !cmd->client_id || !*argv[1] ||
          *end || n < -20 || n > 19) {
         fprintf(stderr, "gpudctl: renice needs a client id and a nice level from -20 to 19\n");
         return 2;
      }
      cmd->nice = (int)n;
      return 0;
   }
   if (!strcmp(name, "cache"))
      return parse_cache(cmd, argc, argv, json);
   if (!strcmp(name, "top")) {
      cmd->kind = CMD_TOP;
      cmd->interval = 1.0;
      for (int i = 0; i < argc; i++) {
         uint64_t n;
         char *end = NULL;
         if ((!strcmp(argv[i], "-i") || !strcmp(argv[i], "--interval")) && i + 1 < argc) {
            cmd->interval = strtod(argv[++i], &end);
            if (*end || !(cmd->interval >= 0.1 && cmd->interval <= 3600)) {
               fprintf(stderr, "gpudctl: top -i takes seconds from 0.1 to 3600\n");
               return 2;
            }
         } else if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--frames")) && i + 1 < argc &&
                    parse_u64(argv[i + 1], &n) && n > 0 && n < UINT32_MAX) {
            cmd->frames = (unsigned)n;
            i++;
         } else {
            fprintf(stderr, "gpudctl: unexpected argument '%s' to top\n", argv[i]);
            return 2;
         }
      }
      return 0;
   }
   fprintf(stderr, "gpudctl: unknown command '%s'\n", name);
   usage(stderr);
   return 2;
}

/* One command on one daemon. */
static int
run_on(struct gpudctl_daemon *d, const struct command *cmd, bool json)
{
   switch (cmd->kind) {
   case CMD_DISCONNECT: {
      int r = d->disconnect(d, cmd->client_id);
      if (!r)
         printf("client %" PRIu64 " disconnected\n", cmd->client_id);
      return r;
   }
   case CMD_INJECT: {
      int r = d->inject(d, cmd->client_id, cmd->fault, cmd->value);
      if (!r)
         printf("client %" PRIu64 ": %s injected\n", cmd->client_id, cmd->fault);
      return r;
   }
   case CMD_RENICE: {
      int r = d->renice(d, cmd->client_id, cmd->nice);
      if (!r)
         printf("client %" PRIu64 ": nice %d\n", cmd->client_id, cmd->nice);
      return r;
   }
   case CMD_CACHE: {
      Gpud__CacheReply *c = NULL;
      if (d->cache(d, &cmd->cache, &c) != 0)
         return 1;
      gpudctl_print_cache(c, d->where, cmd->cache.clear, json);
      d->free_cache(d, c);
      return 0;
   }
   default: {
      Gpud__StatusReply *s = NULL;
      if (d->status(d, &s) != 0)
         return 1;
      int r = 0;
      if (!strcmp(cmd->name, "status"))
         gpudctl_print_status(s, d->where, json);
      else
         r = gpudctl_print_part(s, d->where, cmd->name, cmd->client_id, json);
      d->free_status(d, s);
      return r;
   }
   }
}

int
main(int argc, char **argv)
{
   static const struct option options[] = {
      {"socket", required_argument, NULL, 's'},
      {"bus", required_argument, NULL, 'b'},
      {"json", no_argument, NULL, 'j'},
      {"daemon", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {0},
   };
   const char *socket_path = NULL, *bus = NULL, *daemon_name = NULL;
   bool json = false;
   int c;
   while ((c = getopt_long(argc, argv, "+s:b:d:jhV", options, NULL)) != -1) {
      switch (c) {
      case 's':
         socket_path = optarg;
         break;
      case 'b':
         bus = optarg;
         break;
      case 'j':
         json = true;
         break;
      case 'd':
         daemon_name = optarg;
         break;
      case 'h':
         usage(stdout);
         return 0;
      case 'V':
         printf("gpudctl %s (protocol %u)\n", GPUD_PROJECT_VERSION, (unsigned)WIRE_PROTOCOL_VERSION);
         return 0;
      default:
         usage(stderr);
         return 2;
      }
   }
   if (optind >= argc) {
      usage(stderr);
      return 2;
   }
   if (socket_path && bus) {
      fprintf(stderr, "gpudctl: --socket and --bus are two ways to one daemon: pick one\n");
      return 2;
   }
   struct command cmd = {.name = argv[optind]};
   int r = parse_command(&cmd, argc - optind - 1, argv + optind + 1, &json);
   if (r)
      return r;

   /* the daemons: on the bus, or every socket an application would find */
   struct gpudctl_daemon **daemons = NULL;
   size_t n = 0;
   int ret = 0;
   if (bus) {
      daemons = gpudctl_bus_daemons(bus);
      if (!daemons)
         return 1;
      size_t kept = 0;
      for (size_t i = 0; daemons[i]; i++) {
         if (!daemon_name || daemon_matches(daemons[i]->where, daemon_name))
            daemons[kept++] = daemons[i];
         else
            daemons[i]->close(daemons[i]);
      }
      daemons[kept] = NULL;
      n = kept;
   } else {
      char *one[2] = {(char *)socket_path, NULL};
      char **found = socket_path ? NULL : util_socket_paths();
      char **sockets = socket_path ? one : found;
      if (!sockets || !sockets[0]) {
         static char fallback[] = "/run/gpud/gpud.sock"; /* (for the message) */
         one[0] = fallback;
         sockets = one;
      }
      size_t total = 0;
      while (sockets[total])
         total++;
      daemons = calloc(total + 1, sizeof(*daemons));
      for (size_t i = 0; daemons && i < total; i++) {
         if (daemon_name && !daemon_matches(sockets[i], daemon_name))
            continue;
         /* the path lives as long as the daemon */
         struct gpudctl_daemon *d = socket_open(strdup(sockets[i]));
         if (d)
            daemons[n++] = d;
         else
            ret = 1;
      }
      util_socket_paths_free(found);
      if (!daemons)
         return 1;
   }
   if (!n) {
      if (daemon_name)
         fprintf(stderr, "gpudctl: no daemon '%s'\n", daemon_name);
      else if (bus)
         fprintf(stderr, "gpudctl: no gpud on the bus\n");
      ret = 1;
   } else if ((cmd.kind == CMD_DISCONNECT || cmd.kind == CMD_INJECT) && n > 1) {
      fprintf(stderr, "gpudctl: %zu daemons; pick one with -d NAME:", n);
      for (size_t i = 0; i < n; i++)
         fprintf(stderr, " %s", daemons[i]->where);
      fprintf(stderr, "\n");
      ret = 2;
   } else if (cmd.kind == CMD_TOP) {
      ret = top(daemons, n, cmd.interval, cmd.frames);
   } else {
      for (size_t i = 0; i < n; i++) {
         if (n > 1 && !json)
            printf("%s== %s\n", i ? "\n" : "", daemons[i]->where);
         r = run_on(daemons[i], &cmd, json);
         if (r > ret)
            ret = r;
         fflush(stdout);
      }
   }
   for (size_t i = 0; i < n; i++) {
      const char *where = daemons[i]->where;
      daemons[i]->close(daemons[i]);
      if (!bus)
         free((char *)where);
   }
   free(daemons);
   return ret;
}
