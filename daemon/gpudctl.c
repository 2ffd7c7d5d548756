/* SPDX-License-Identifier: MIT */
/* gpudctl: inspect a running gpud and act on it. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util_macros.h"
#include "util_transport.h"
#include "wire.h"
#include "wire_control.h"
#include "gpud_limits.h"
#include "wire_gen.h"

static void
usage(FILE *f)
{
   fprintf(f, "Usage: gpudctl [--socket PATH] COMMAND\n"
              "Inspect a running gpud.\n\n"
              "Commands:\n"
              "  status [--json]     the served device and every client: pid, name,\n"
              "                      objects held, memory held, commands run\n"
              "  clients [--json]    the clients only\n"
              "  client ID [--json]  one client, with the objects its application named\n"
              "                      and its faults\n"
              "  faults [--json]     recent faults (workers that crashed, devices lost)\n"
              "  disconnect ID       disconnect the client with this id\n\n"
              "--json: documents of version 1 (docs/gpudctl-json.md)\n\n"
              "Options:\n"
              "  -s, --socket PATH   the daemon's socket (default: every daemon an\n"
              "                      application would find: the list in $GPUD_SOCKET, else\n"
              "                      the sockets in $XDG_RUNTIME_DIR/gpud/ and /run/gpud/)\n"
              "  -d, --daemon NAME   only the daemon on NAME.sock (gpud@NAME), or that path\n"
              "  -h, --help          show this help\n"
              "  -V, --version       show the version\n");
}

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

static void
json_string(const char *s)
{
   putchar('"');
   for (; s && *s; s++) {
      unsigned char ch = (unsigned char)*s;
      if (ch == '"' || ch == '\\')
         printf("\\%c", ch);
      else if (ch < 0x20)
         printf("\\u%04x", ch);
      else
         putchar(ch);
   }
   putchar('"');
}

/* The version of the JSON documents (docs/gpudctl-json.md): bumped when a
 * member changes meaning or goes; new members do not bump it. */
#define GPUDCTL_JSON_VERSION 1

/* The daemon's socket, in every JSON document (several daemons: several). */
static const char *json_socket = "";

static void json_string(const char *s);

static void
json_head(void)
{
   printf("{\"version\": %d, \"socket\": ", GPUDCTL_JSON_VERSION);
   json_string(json_socket);
}

static void
json_limits(const Gpud__Limits *l)
{
   printf("{\"client_memory_bytes\": %" PRIu64 ", \"uid_memory_bytes\": %" PRIu64
          ", \"client_objects\": %" PRIu64
          ", \"uid_connections\": %u, \"max_clients\": %u, \"spare_workers\": %u"
          ", \"validate\": ",
          l->client_memory, l->uid_memory, l->client_objects, l->uid_connections,
          l->max_clients, l->spare_workers);
   json_string(l->validate);
   printf("}");
}

static void
json_client(const Gpud__ClientInfo *c)
{
   printf("{\"id\": %" PRIu64 ", \"pid\": %u, \"uid\": %u, \"name\": ", c->id, c->pid, c->uid);
   json_string(c->name);
   printf(", \"state\": ");
   json_string(c->state);
   printf(", \"worker_pid\": %u, \"objects\": %" PRIu64 ", \"memory_bytes\": %" PRIu64
          ", \"commands\": %" PRIu64 ", \"send_blocked_ms\": %" PRIu64
          ", \"connected_ms\": %" PRIu64 ", \"names\": [",
          c->worker_pid, c->objects, c->memory_bytes, c->commands, c->send_blocked_ms,
          c->connected_ms);
   for (size_t k = 0; k < c->n_names; k++) {
      printf("%s{\"id\": %" PRIu64 ", \"type\": ", k ? ", " : "", c->names[k]->id);
      json_string(c->names[k]->type);
      printf(", \"name\": ");
      json_string(c->names[k]->name);
      printf("}");
   }
   printf("]}");
}

static void
json_fault(const Gpud__FaultInfo *f)
{
   printf("{\"client_id\": %" PRIu64 ", \"pid\": %u, \"uid\": %u, \"name\": ", f->client_id,
          f->pid, f->uid);
   json_string(f->name);
   printf(", \"worker_pid\": %u, \"reason\": ", f->worker_pid);
   json_string(f->reason);
   printf(", \"age_ms\": %" PRIu64 "}", f->age_ms);
}

static void
json_clients(const Gpud__StatusReply *s)
{
   printf("[");
   for (size_t i = 0; i < s->n_clients; i++) {
      printf("%s", i ? ", " : "");
      json_client(s->clients[i]);
   }
   printf("]");
}

static void
json_faults(const Gpud__StatusReply *s)
{
   printf("[");
   for (size_t i = 0; i < s->n_faults; i++) {
      printf("%s", i ? ", " : "");
      json_fault(s->faults[i]);
   }
   printf("]");
}

static void
text_clients(const Gpud__StatusReply *s)
{
   printf("%6s %8s %6s %-20s %-9s %8s %9s %14s %10s\n", "ID", "PID", "UID", "NAME", "STATE",
          "WORKER", "OBJECTS", "MEMORY", "COMMANDS");
   for (size_t i = 0; i < s->n_clients; i++) {
      const Gpud__ClientInfo *c = s->clients[i];
      char state[32];
      if (c->send_blocked_ms >= 1000)
         snprintf(state, sizeof(state), "unread %" PRIu64 "s", c->send_blocked_ms / 1000);
      else
         snprintf(state, sizeof(state), "%s", c->state);
      printf("%6" PRIu64 " %8u %6u %-20s %-9s %8u %9" PRIu64 " %14" PRIu64 " %10" PRIu64 "\n",
             c->id, c->pid, c->uid, c->name, state, c->worker_pid, c->objects, c->memory_bytes,
             c->commands);
      for (size_t k = 0; k < c->n_names; k++)
         printf("%6s named %s '%s'\n", "", c->names[k]->type, c->names[k]->name);
   }
}

static void
text_faults(const Gpud__StatusReply *s)
{
   for (size_t i = 0; i < s->n_faults; i++) {
      const Gpud__FaultInfo *f = s->faults[i];
      printf("  %6.1f s ago  client %" PRIu64 " (pid %u, uid %u, %s): %s\n",
             (double)f->age_ms / 1000.0, f->client_id, f->pid, f->uid, f->name, f->reason);
   }
}

static void
print_status(const Gpud__StatusReply *s, bool json)
{
   if (json) {
      json_head();
      printf(", \"device\": ");
      json_string(s->device_name);
      printf(", \"host_driver\": ");
      json_string(s->host_driver);
      printf(", \"daemon_pid\": %u, \"isolation\": ", s->daemon_pid);
      json_string(s->isolation);
      if (s->limits) {
         printf(", \"limits\": ");
         json_limits(s->limits);
      }
      printf(", \"objects\": %" PRIu64 ", \"memory_bytes\": %" PRIu64
             ", \"hidden_clients\": %u, \"clients\": ",
             s->objects, s->memory_bytes, s->hidden_clients);
      json_clients(s);
      printf(", \"faults\": ");
      json_faults(s);
      printf("}\n");
      return;
   }
   printf("device:       %s\n", s->device_name);
   printf("host driver:  %s\n", s->host_driver);
   printf("daemon pid:   %u (%s isolation)\n", s->daemon_pid, s->isolation);
   if (s->limits) {
      const Gpud__Limits *l = s->limits;
      printf("limits:       client objects %" PRIu64 ", connections per user %u, in all %u; "
             "spare workers %u; validation %s\n",
             l->client_objects, l->uid_connections, l->max_clients, l->spare_workers,
             l->validate);
   }
   printf("clients:      %zu", s->n_clients);
   if (s->hidden_clients)
      printf(" (and %u of other users)", s->hidden_clients);
   printf("\n");
   printf("objects:      %" PRIu64 "\n", s->objects);
   printf("memory:       %" PRIu64 " bytes\n", s->memory_bytes);
   if (s->n_clients) {
      printf("\n");
      text_clients(s);
   }
   if (s->n_faults) {
      printf("\nrecent faults:\n");
      text_faults(s);
   }
}

/* `clients`, `client ID`, `faults`: parts of the status. 0, or 1 when the
 * client asked for is not (or not this user's to see). */
static int
print_part(const Gpud__StatusReply *s, const char *command, uint64_t id, bool json)
{
   if (!strcmp(command, "clients")) {
      if (json) {
         json_head();
         printf(", \"hidden_clients\": %u, \"clients\": ", s->hidden_clients);
         json_clients(s);
         printf("}\n");
      } else {
         text_clients(s);
      }
      return 0;
   }
   if (!strcmp(command, "faults")) {
      if (json) {
         json_head();
         printf(", \"faults\": ");
         json_faults(s);
         printf("}\n");
      } else {
         text_faults(s);
      }
      return 0;
   }
   for (size_t i = 0; i < s->n_clients; i++) {
      const Gpud__ClientInfo *c = s->clients[i];
      if (c->id != id)
         continue;
      if (json) {
         json_head();
         printf(", \"client\": ");
         json_client(c);
         printf(", \"faults\": [");
         bool first = true;
         for (size_t k = 0; k < s->n_faults; k++) {
            if (s->faults[k]->client_id != id)
               continue;
            printf("%s", first ? "" : ", ");
            json_fault(s->faults[k]);
            first = false;
         }
         printf("]}\n");
      } else {
         printf("client:       %" PRIu64 " (%s, pid %u, uid %u)\n", c->id, c->name, c->pid,
                c->uid);
         printf("state:        %s%s\n", c->state, c->send_blocked_ms >= 1000 ? " (not reading)" : "");
         printf("worker:       %u\n", c->worker_pid);
         printf("connected:    %.1f s ago\n", (double)c->connected_ms / 1000.0);
         printf("objects:      %" PRIu64 "\n", c->objects);
         printf("memory:       %" PRIu64 " bytes\n", c->memory_bytes);
         printf("commands:     %" PRIu64 "\n", c->commands);
         for (size_t k = 0; k < c->n_names; k++)
            printf("named:        %s '%s'\n", c->names[k]->type, c->names[k]->name);
      }
      return 0;
   }
   fprintf(stderr, "gpudctl: no client %" PRIu64 "%s\n", id,
           s->hidden_clients ? " of yours" : "");
   return 1;
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

/* One daemon: command on the daemon at socket_path. */
static int
run_on(const char *socket_path, const char *command, bool is_status, uint64_t client_id,
       bool json)
{
   int fd;
   int r = util_socket_connect(socket_path, &fd);
   if (r < 0) {
      fprintf(stderr, "gpudctl: cannot reach gpud at %s: %s\n", socket_path, strerror(-r));
      return 1;
   }
   json_socket = socket_path;
   struct util_msg_reader reader;
   util_msg_reader_init(&reader, 64u << 20);

   Gpud__Hello hello = GPUD__HELLO__INIT;
   hello.protocol_version = WIRE_PROTOCOL_VERSION;
   hello.command_table_hash = WIRE_COMMAND_TABLE_HASH;
   hello.vk_header_version = WIRE_VK_HEADER_VERSION;
   hello.client_name = (char *)"gpudctl";
   hello.role = GPUD__ROLE__ROLE_CONTROL;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_HELLO;
   m.hello = &hello;
   int ret = 1;
   Gpud__ControlMessage *reply = NULL;
   if (wire_control_send(fd, &m) < 0 || !(reply = receive(fd, &reader)))
      goto out;
   wire_control_free(reply);
   reply = NULL;

   Gpud__ControlMessage req = GPUD__CONTROL_MESSAGE__INIT;
   Gpud__StatusRequest status = GPUD__STATUS_REQUEST__INIT;
   Gpud__DisconnectClientRequest disc = GPUD__DISCONNECT_CLIENT_REQUEST__INIT;
   if (is_status) {
      req.msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REQUEST;
      req.status_request = &status;
   } else {
      disc.client_id = client_id;
      req.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REQUEST;
      req.disconnect_client_request = &disc;
   }
   if (wire_control_send(fd, &req) < 0 || !(reply = receive(fd, &reader)))
      goto out;
   if (reply->msg_case == GPUD__CONTROL_MESSAGE__MSG_STATUS_REPLY) {
      if (!strcmp(command, "status")) {
         print_status(reply->status_reply, json);
         ret = 0;
      } else {
         ret = print_part(reply->status_reply, command, client_id, json);
      }
   } else if (reply->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REPLY) {
      if (reply->disconnect_client_reply->denied) {
         fprintf(stderr, "gpudctl: client %" PRIu64 " is another user's: permission denied\n",
                 client_id);
      } else if (reply->disconnect_client_reply->found) {
         printf("client %" PRIu64 " disconnected\n", client_id);
         ret = 0;
      } else {
         fprintf(stderr, "gpudctl: no client %" PRIu64 "\n", client_id);
      }
   } else {
      fprintf(stderr, "gpudctl: unexpected answer from the daemon\n");
   }
out:
   wire_control_free(reply);
   util_msg_reader_finish(&reader);
   close(fd);
   return ret;
}

int
main(int argc, char **argv)
{
   static const struct option options[] = {
      {"socket", required_argument, NULL, 's'},
      {"json", no_argument, NULL, 'j'},
      {"daemon", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {0},
   };
   char *socket_path = NULL;
   bool json = false;
   int c;
   const char *daemon_name = NULL;
   while ((c = getopt_long(argc, argv, "+s:d:jhV", options, NULL)) != -1) {
      switch (c) {
      case 's':
         free(socket_path);
         socket_path = strdup(optarg);
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
         printf("gpudctl %s (protocol %u)\n", GPUD_VERSION, (unsigned)WIRE_PROTOCOL_VERSION);
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
   const char *command = argv[optind++];
   uint64_t client_id = 0;
   bool is_status = !strcmp(command, "status") || !strcmp(command, "clients") ||
                    !strcmp(command, "client") || !strcmp(command, "faults");
   if (is_status) {
      bool want_id = !strcmp(command, "client");
      for (; optind < argc; optind++) {
         char *end = NULL;
         if (!strcmp(argv[optind], "--json")) {
            json = true;
         } else if (want_id && !client_id &&
                    (errno = 0, client_id = strtoull(argv[optind], &end, 10),
                     !errno && !*end && client_id)) {
            continue;
         } else {
            fprintf(stderr, "gpudctl: unexpected argument '%s'\n", argv[optind]);
            return 2;
         }
      }
      if (want_id && !client_id) {
         fprintf(stderr, "gpudctl: client needs a client id (see 'gpudctl clients')\n");
         return 2;
      }
   } else if (!strcmp(command, "disconnect")) {
      char *end = NULL;
      if (optind + 1 != argc ||
          (errno = 0, client_id = strtoull(argv[optind], &end, 10), errno || *end || !client_id)) {
         fprintf(stderr, "gpudctl: disconnect needs one client id (see 'gpudctl status')\n");
         return 2;
      }
   } else {
      fprintf(stderr, "gpudctl: unknown command '%s'\n", command);
      usage(stderr);
      return 2;
   }

   /* one daemon, or every daemon an application would find */
   char *one[2] = {socket_path, NULL};
   char **found = socket_path ? NULL : util_socket_paths();
   char **sockets = socket_path ? one : found;
   if (!sockets || !sockets[0]) {
      static char fallback[] = "/run/gpud/gpud.sock"; /* (for the message) */
      one[0] = fallback;
      sockets = one;
   }
   size_t n_picked = 0;
   for (char **p = sockets; *p; p++)
      n_picked += !daemon_name || daemon_matches(*p, daemon_name);
   int ret = 0;
   if (!n_picked) {
      fprintf(stderr, "gpudctl: no daemon '%s'\n", daemon_name);
      ret = 1;
   } else if (!is_status && n_picked > 1) {
      fprintf(stderr, "gpudctl: %zu daemons; pick one with -d NAME:", n_picked);
      for (char **p = sockets; *p; p++)
         fprintf(stderr, " %s", *p);
      fprintf(stderr, "\n");
      ret = 2;
   } else {
      bool first = true;
      for (char **p = sockets; *p; p++) {
         if (daemon_name && !daemon_matches(*p, daemon_name))
            continue;
         if (n_picked > 1 && !json)
            printf("%s== %s\n", first ? "" : "\n", *p);
         first = false;
         int r = run_on(*p, command, is_status, client_id, json);
         if (r > ret)
            ret = r;
         fflush(stdout);
      }
   }
   util_socket_paths_free(found);
   free(socket_path);
   return ret;
}
