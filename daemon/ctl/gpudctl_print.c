/* SPDX-License-Identifier: MIT */
/* gpudctl's output: text for people, JSON (docs/gpudctl-json.md) for tools. */
#include "gpudctl.h"

#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

static void
json_head(const char *where)
{
   printf("{\"version\": %d, \"socket\": ", GPUDCTL_JSON_VERSION);
   json_string(where);
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
   printf(", \"replay_threads\": ");
   json_string(l->replay_threads);
   printf(", \"spirv\": ");
   json_string(l->spirv);
   printf(", \"restart_grace_ms\": %u, \"fair_share\": %s, \"cache_user_bytes\": %" PRIu64
          ", \"cache_total_bytes\": %" PRIu64 "}",
          l->restart_grace_ms, l->fair_share ? "true" : "false", l->cache_user_bytes,
          l->cache_total_bytes);
}

static void
json_queue(const Gpud__QueueInfo *q)
{
   printf("{\"device\": %" PRIu64 ", \"family\": %u, \"index\": %u, \"submissions\": %" PRIu64
          ", \"in_flight\": %" PRIu64 ", \"completed\": %" PRIu64 ", \"busy_ns\": %" PRIu64
          ", \"gpu_ns\": %" PRIu64 "}",
          q->device, q->family, q->index, q->submissions, q->in_flight, q->completed,
          q->busy_ns, q->gpu_ns);
}

static void
json_client(const Gpud__ClientInfo *c)
{
   printf("{\"id\": %" PRIu64 ", \"pid\": %u, \"uid\": %u, \"name\": ", c->id, c->pid, c->uid);
   json_string(c->name);
   printf(", \"state\": ");
   json_string(c->state);
   printf(", \"worker_pid\": %u, \"worker_uid\": %u, \"worker_version\": ", c->worker_pid,
          c->worker_uid);
   json_string(c->worker_version);
   printf(", \"adopted\": %s, \"details_unknown\": %s, \"objects\": %" PRIu64
          ", \"memory_bytes\": %" PRIu64 ", \"commands\": %" PRIu64 ", \"gpu_ns\": %" PRIu64
          ", \"nice\": %d, \"weight\": %u, \"quota_ppm\": %u, \"user_quota_ppm\": %u"
          ", \"waited_ns\": %" PRIu64
          ", \"send_blocked_ms\": %" PRIu64 ", \"connected_ms\": %" PRIu64 ", \"names\": [",
          c->adopted ? "true" : "false", c->details_unknown ? "true" : "false", c->objects,
          c->memory_bytes, c->commands, c->gpu_ns, c->nice, c->weight, c->quota_ppm,
          c->user_quota_ppm, c->waited_ns, c->send_blocked_ms, c->connected_ms);
   for (size_t k = 0; k < c->n_names; k++) {
      printf("%s{\"id\": %" PRIu64 ", \"type\": ", k ? ", " : "", c->names[k]->id);
      json_string(c->names[k]->type);
      printf(", \"name\": ");
      json_string(c->names[k]->name);
      printf("}");
   }
   printf("], \"object_types\": {");
   for (size_t k = 0; k < c->n_object_types; k++) {
      printf("%s", k ? ", " : "");
      json_string(c->object_types[k]->type);
      printf(": %" PRIu64, c->object_types[k]->count);
   }
   printf("}, \"heaps\": [");
   for (size_t k = 0; k < c->n_heaps; k++)
      printf("%s{\"heap\": %u, \"memory_bytes\": %" PRIu64 "}", k ? ", " : "",
             c->heaps[k]->heap, c->heaps[k]->bytes);
   printf("], \"queues\": [");
   for (size_t k = 0; k < c->n_queues; k++) {
      printf("%s", k ? ", " : "");
      json_queue(c->queues[k]);
   }
   printf("], \"injected\": [");
   for (size_t k = 0; k < c->n_injected; k++) {
      printf("%s", k ? ", " : "");
      json_string(c->injected[k]);
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
json_crashes(const Gpud__StatusReply *s)
{
   printf("[");
   for (size_t i = 0; i < s->n_crashes; i++) {
      const Gpud__CrashInfo *c = s->crashes[i];
      printf("%s{\"uid\": %u, \"name\": ", i ? ", " : "", c->uid);
      json_string(c->name);
      printf(", \"crashes\": %u, \"last_age_ms\": %" PRIu64 ", \"backoff_ms\": %" PRIu64
             ", \"wait_ms\": %" PRIu64 ", \"refused\": %s}",
             c->crashes, c->last_age_ms, c->backoff_ms, c->wait_ms,
             c->refused ? "true" : "false");
   }
   printf("]");
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
json_heaps(const Gpud__StatusReply *s)
{
   printf("[");
   for (size_t i = 0; i < s->n_heaps; i++) {
      const Gpud__HeapInfo *h = s->heaps[i];
      printf("%s{\"heap\": %u, \"size_bytes\": %" PRIu64 ", \"device_local\": %s"
             ", \"memory_bytes\": %" PRIu64 "}",
             i ? ", " : "", h->heap, h->size_bytes, h->device_local ? "true" : "false",
             h->used_bytes);
   }
   printf("]");
}

/* A size for people: 1023 B, 1.5 MiB, ... */
static const char *
human(uint64_t bytes, char *buf, size_t size)
{
   static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
   double v = (double)bytes;
   unsigned u = 0;
   while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
      v /= 1024;
      u++;
   }
   if (u == 0)
      snprintf(buf, size, "%" PRIu64 " B", bytes);
   else
      snprintf(buf, size, "%.1f %s", v, units[u]);
   return buf;
}

static void
text_clients(const Gpud__StatusReply *s)
{
   printf("%6s %8s %6s %-20s %-9s %8s %-11s %9s %14s %10s\n", "ID", "PID", "UID", "NAME",
          "STATE", "WORKER", "VERSION", "OBJECTS", "MEMORY", "COMMANDS");
   for (size_t i = 0; i < s->n_clients; i++) {
      const Gpud__ClientInfo *c = s->clients[i];
      char state[32], objects[24], commands[24], version[40];
      if (c->send_blocked_ms >= 1000)
         snprintf(state, sizeof(state), "unread %" PRIu64 "s", c->send_blocked_ms / 1000);
      else
         snprintf(state, sizeof(state), "%s", c->state);
      /* an adopted worker's version, marked; unknown where it did not say */
      snprintf(version, sizeof(version), "%s%s",
               c->worker_version && *c->worker_version ? c->worker_version : "?",
               c->adopted ? "*" : "");
      if (c->details_unknown) {
         snprintf(objects, sizeof(objects), "?");
         snprintf(commands, sizeof(commands), "?");
      } else {
         snprintf(objects, sizeof(objects), "%" PRIu64, c->objects);
         snprintf(commands, sizeof(commands), "%" PRIu64, c->commands);
      }
      printf("%6" PRIu64 " %8u %6u %-20s %-9s %8u %-11s %9s %14" PRIu64 " %10s\n", c->id,
             c->pid, c->uid, c->name, state, c->worker_pid, c->worker_pid ? version : "-",
             objects, c->memory_bytes, commands);
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

/* Programs whose workers crashed lately: their back-off, or refusal. */
static void
text_crashes(const Gpud__StatusReply *s)
{
   for (size_t i = 0; i < s->n_crashes; i++) {
      const Gpud__CrashInfo *c = s->crashes[i];
      printf("  %s (uid %u): %u crash%s, the last %.1f s ago: ", c->name, c->uid, c->crashes,
             c->crashes == 1 ? "" : "es", (double)c->last_age_ms / 1000.0);
      if (c->refused)
         printf("refused (crash limit)\n");
      else if (c->wait_ms)
         printf("its next worker starts in %" PRIu64 " ms (back-off %" PRIu64 " ms)\n",
                c->wait_ms, c->backoff_ms);
      else
         printf("back-off %" PRIu64 " ms, over\n", c->backoff_ms);
   }
}

static void
text_queue_header(void)
{
   printf("%6s %-20s %7s %6s %5s %12s %9s %12s %12s\n", "ID", "NAME", "DEVICE", "FAMILY",
          "INDEX", "SUBMISSIONS", "IN FLIGHT", "BUSY", "GPU");
}

static void
text_queues(const Gpud__ClientInfo *c)
{
   for (size_t k = 0; k < c->n_queues; k++) {
      const Gpud__QueueInfo *q = c->queues[k];
      printf("%6" PRIu64 " %-20s %7" PRIu64 " %6u %5u %12" PRIu64 " %9" PRIu64
             " %10.3f s %10.3f s\n",
             c->id, c->name, q->device, q->family, q->index, q->submissions, q->in_flight,
             (double)q->busy_ns / 1e9, (double)q->gpu_ns / 1e9);
   }
}

static void
text_heaps(const Gpud__StatusReply *s)
{
   printf("%4s %-13s %12s %12s\n", "HEAP", "KIND", "SIZE", "USED");
   for (size_t i = 0; i < s->n_heaps; i++) {
      const Gpud__HeapInfo *h = s->heaps[i];
      char a[32], b[32];
      printf("%4u %-13s %12s %12s\n", h->heap, h->device_local ? "device-local" : "host",
             human(h->size_bytes, a, sizeof(a)), human(h->used_bytes, b, sizeof(b)));
   }
}

static void
text_client_heaps(const Gpud__ClientInfo *c)
{
   for (size_t k = 0; k < c->n_heaps; k++) {
      char a[32];
      printf("%6" PRIu64 " %-20s %4u %12s %14" PRIu64 "\n", c->id, c->name, c->heaps[k]->heap,
             human(c->heaps[k]->bytes, a, sizeof(a)), c->heaps[k]->bytes);
   }
}

/* A string, or null when it is empty (a fact the daemon does not know). */
static void
json_string_or_null(const char *s)
{
   if (s && *s)
      json_string(s);
   else
      printf("null");
}

void
gpudctl_print_status(const Gpud__StatusReply *s, const char *where, bool json)
{
   if (json) {
      json_head(where);
      printf(", \"device\": ");
      json_string(s->device_name);
      printf(", \"device_uuid\": ");
      json_string_or_null(s->device_uuid);
      printf(", \"device_pci\": ");
      json_string_or_null(s->device_pci);
      printf(", \"render_node\": ");
      json_string_or_null(s->render_node);
      printf(", \"host_driver\": ");
      json_string(s->host_driver);
      printf(", \"daemon_version\": ");
      json_string(s->daemon_version);
      printf(", \"daemon_pid\": %u, \"uptime_ms\": %" PRIu64 ", \"isolation\": ",
             s->daemon_pid, s->uptime_ms);
      json_string(s->isolation);
      printf(", \"worker_identity\": ");
      json_string(s->worker_identity);
      printf(", \"identity_state\": ");
      json_string_or_null(s->identity_state);
      printf(", \"cache_dir\": ");
      json_string_or_null(s->cache_dir);
      printf(", \"cache_state\": ");
      json_string_or_null(s->cache_state);
      if (s->limits) {
         printf(", \"limits\": ");
         json_limits(s->limits);
      }
      printf(", \"heaps\": ");
      json_heaps(s);
      printf(", \"objects\": %" PRIu64 ", \"memory_bytes\": %" PRIu64
             ", \"hidden_clients\": %u, \"clients\": ",
             s->objects, s->memory_bytes, s->hidden_clients);
      json_clients(s);
      printf(", \"faults\": ");
      json_faults(s);
      printf(", \"crashes\": ");
      json_crashes(s);
      printf("}\n");
      return;
   }
   printf("device:       %s\n", s->device_name);
   if (s->device_uuid && *s->device_uuid)
      printf("device id:    uuid:%s  pci:%s  render:%s\n", s->device_uuid,
             s->device_pci && *s->device_pci ? s->device_pci : "-",
             s->render_node && *s->render_node ? s->render_node : "-");
   printf("host driver:  %s\n", s->host_driver);
   printf("daemon:       gpud %s, pid %u (%s isolation), up %.0f s\n", s->daemon_version,
          s->daemon_pid, s->isolation, (double)s->uptime_ms / 1000.0);
   if (s->limits) {
      const Gpud__Limits *l = s->limits;
      printf("limits:       client objects %" PRIu64 ", connections per user %u, in all %u; "
             "spare workers %u; replay threads %s; validation %s; invalid SPIR-V %s\n",
             l->client_objects, l->uid_connections, l->max_clients, l->spare_workers,
             l->replay_threads, l->validate, l->spirv && *l->spirv ? l->spirv : "-");
      if (l->restart_grace_ms)
         printf("restarts:     workers serve on and wait %.1f s for the next gpud\n",
                (double)l->restart_grace_ms / 1000.0);
      else
         printf("restarts:     workers end with this gpud\n");
      printf("fair share:   %s\n", l->fair_share ? "on: submissions take turns by weighted GPU time"
                                                  : "off");
   }
   printf("workers:      %s%s%s\n",
          s->worker_identity && !strcmp(s->worker_identity, "per-user")
             ? "each client user's run as a uid of their own"
          : s->isolation && !strcmp(s->isolation, "thread") ? "threads of the daemon, as its user"
                                                            : "every client's run as one user",
          s->identity_state && *s->identity_state ? "; not kept: " : "",
          s->identity_state && *s->identity_state ? s->identity_state : "");
   if (s->cache_state && *s->cache_state)
      printf("caches:       none kept: %s\n", s->cache_state);
   else
      printf("caches:       %s (gpudctl cache)\n", s->cache_dir ? s->cache_dir : "");
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
   if (s->n_crashes) {
      printf("\nprograms whose workers crashed lately:\n");
      text_crashes(s);
   }
   if (s->n_faults) {
      printf("\nrecent faults:\n");
      text_faults(s);
   }
}

static void
text_client(const Gpud__StatusReply *s, const Gpud__ClientInfo *c)
{
   printf("client:       %" PRIu64 " (%s, pid %u, uid %u)\n", c->id, c->name, c->pid, c->uid);
   printf("state:        %s%s\n", c->state, c->send_blocked_ms >= 1000 ? " (not reading)" : "");
   printf("worker:       %u", c->worker_pid);
   if (c->worker_pid)
      printf(" (gpud %s%s)", c->worker_version && *c->worker_version ? c->worker_version : "of unknown version",
             c->adopted ? ", adopted from an earlier server" : "");
   printf("\n");
   if (c->details_unknown)
      printf("details:      unknown (its worker's status page is another build's)\n");
   printf("connected:    %.1f s ago\n", (double)c->connected_ms / 1000.0);
   printf("objects:      %" PRIu64 "\n", c->objects);
   for (size_t k = 0; k < c->n_object_types; k++)
      printf("  %-24s %" PRIu64 "\n", c->object_types[k]->type, c->object_types[k]->count);
   printf("memory:       %" PRIu64 " bytes\n", c->memory_bytes);
   for (size_t k = 0; k < c->n_heaps; k++)
      printf("  heap %-19u %" PRIu64 " bytes\n", c->heaps[k]->heap, c->heaps[k]->bytes);
   printf("commands:     %" PRIu64 "\n", c->commands);
   printf("gpu time:     %.3f s\n", (double)c->gpu_ns / 1e9);
   if (c->weight) {
      printf("share:        nice %d (weight %u)", c->nice, c->weight);
      if (c->quota_ppm)
         printf(", quota %.1f %%", (double)c->quota_ppm / 1e4);
      if (c->user_quota_ppm)
         printf(", its user's quota %.1f %%", (double)c->user_quota_ppm / 1e4);
      printf("; waited %.3f s for its turn\n", (double)c->waited_ns / 1e9);
   }
   for (size_t k = 0; k < c->n_queues; k++) {
      const Gpud__QueueInfo *q = c->queues[k];
      printf("queue:        device %" PRIu64 " family %u index %u: %" PRIu64
             " submissions, %" PRIu64 " in flight, busy %.3f s, gpu %.3f s\n",
             q->device, q->family, q->index, q->submissions, q->in_flight,
             (double)q->busy_ns / 1e9, (double)q->gpu_ns / 1e9);
   }
   for (size_t k = 0; k < c->n_injected; k++)
      printf("injected:     %s (pending)\n", c->injected[k]);
   for (size_t k = 0; k < c->n_names; k++)
      printf("named:        %s '%s'\n", c->names[k]->type, c->names[k]->name);
   for (size_t k = 0; k < s->n_faults; k++) {
      const Gpud__FaultInfo *f = s->faults[k];
      if (f->client_id == c->id)
         printf("fault:        %.1f s ago: %s\n", (double)f->age_ms / 1000.0, f->reason);
   }
}

int
gpudctl_print_part(const Gpud__StatusReply *s, const char *where, const char *command,
                   uint64_t id, bool json)
{
   if (!strcmp(command, "clients")) {
      if (json) {
         json_head(where);
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
         json_head(where);
         printf(", \"faults\": ");
         json_faults(s);
         printf(", \"crashes\": ");
         json_crashes(s);
         printf("}\n");
      } else {
         text_faults(s);
         if (s->n_crashes) {
            printf("programs whose workers crashed lately:\n");
            text_crashes(s);
         }
      }
      return 0;
   }
   if (!strcmp(command, "queues")) {
      if (json) {
         json_head(where);
         printf(", \"hidden_clients\": %u, \"queues\": [", s->hidden_clients);
         bool first = true;
         for (size_t i = 0; i < s->n_clients; i++) {
            for (size_t k = 0; k < s->clients[i]->n_queues; k++) {
               printf("%s{\"client_id\": %" PRIu64 ", \"queue\": ", first ? "" : ", ",
                      s->clients[i]->id);
               json_queue(s->clients[i]->queues[k]);
               printf("}");
               first = false;
            }
         }
         printf("]}\n");
      } else {
         text_queue_header();
         for (size_t i = 0; i < s->n_clients; i++)
            text_queues(s->clients[i]);
      }
      return 0;
   }
   if (!strcmp(command, "memory")) {
      if (json) {
         json_head(where);
         printf(", \"hidden_clients\": %u, \"heaps\": ", s->hidden_clients);
         json_heaps(s);
         printf(", \"clients\": [");
         for (size_t i = 0; i < s->n_clients; i++) {
            const Gpud__ClientInfo *c = s->clients[i];
            printf("%s{\"id\": %" PRIu64 ", \"memory_bytes\": %" PRIu64 ", \"heaps\": [",
                   i ? ", " : "", c->id, c->memory_bytes);
            for (size_t k = 0; k < c->n_heaps; k++)
               printf("%s{\"heap\": %u, \"memory_bytes\": %" PRIu64 "}", k ? ", " : "",
                      c->heaps[k]->heap, c->heaps[k]->bytes);
            printf("]}");
         }
         printf("]}\n");
      } else {
         text_heaps(s);
         printf("\n%6s %-20s %4s %12s %14s\n", "ID", "NAME", "HEAP", "MEMORY", "BYTES");
         for (size_t i = 0; i < s->n_clients; i++)
            text_client_heaps(s->clients[i]);
      }
      return 0;
   }
   for (size_t i = 0; i < s->n_clients; i++) {
      const Gpud__ClientInfo *c = s->clients[i];
      if (c->id != id)
         continue;
      if (json) {
         json_head(where);
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
         text_client(s, c);
      }
      return 0;
   }
   fprintf(stderr, "gpudctl: no client %" PRIu64 "%s\n", id,
           s->hidden_clients ? " of yours" : "");
   return 1;
}

/* ---- top ------------------------------------------------------------------ */

static const Gpud__ClientInfo *
find_client(const Gpud__StatusReply *s, uint64_t id)
{
   for (size_t i = 0; s && i < s->n_clients; i++) {
      if (s->clients[i]->id == id)
         return s->clients[i];
   }
   return NULL;
}

static const Gpud__QueueInfo *
find_queue(const Gpud__ClientInfo *c, const Gpud__QueueInfo *q)
{
   for (size_t k = 0; c && k < c->n_queues; k++) {
      const Gpud__QueueInfo *o = c->queues[k];
      if (o->device == q->device && o->family == q->family && o->index == q->index)
         return o;
   }
   return NULL;
}

static void
bar(double fraction, unsigned width)
{
   if (fraction < 0)
      fraction = 0;
   if (fraction > 1)
      fraction = 1;
   unsigned n = (unsigned)(fraction * width + 0.5);
   putchar('[');
   for (unsigned i = 0; i < width; i++)
      putchar(i < n ? '|' : ' ');
   putchar(']');
}

void
gpudctl_print_top(const Gpud__StatusReply *s, const Gpud__StatusReply *before, uint64_t dt_ns,
                  const char *where, unsigned width)
{
   double dt = dt_ns ? (double)dt_ns : 1.0;
   printf("gpud %s on %s  (%s)  up %.0f s  clients %zu", s->daemon_version, s->device_name,
          where, (double)s->uptime_ms / 1000.0, s->n_clients);
   if (s->hidden_clients)
      printf(" (+%u hidden)", s->hidden_clients);
   printf("\n");
   unsigned bw = width > 60 ? width - 50 : 10;
   for (size_t i = 0; i < s->n_heaps; i++) {
      const Gpud__HeapInfo *h = s->heaps[i];
      char a[32], b[32];
      printf("heap %u %-12s ", h->heap, h->device_local ? "device-local" : "host");
      bar(h->size_bytes ? (double)h->used_bytes / (double)h->size_bytes : 0, bw);
      printf(" %s / %s\n", human(h->used_bytes, a, sizeof(a)), human(h->size_bytes, b, sizeof(b)));
   }
   printf("\n%6s %8s %-18s %6s %10s %5s %3s %9s %11s %8s  %s\n", "ID", "PID", "NAME", "BUSY",
          "SUBMITS/s", "GPU", "NI", "IN FLIGHT", "MEMORY", "OBJECTS", "QUEUES (busy %)");
   for (size_t i = 0; i < s->n_clients; i++) {
      const Gpud__ClientInfo *c = s->clients[i];
      const Gpud__ClientInfo *old = find_client(before, c->id);
      double busiest = 0, submits = 0, gpu = 0;
      uint64_t in_flight = 0;
      char queues[128] = "";
      size_t ql = 0;
      for (size_t k = 0; k < c->n_queues; k++) {
         const Gpud__QueueInfo *q = c->queues[k];
         const Gpud__QueueInfo *o = find_queue(old, q);
         double busy = 0;
         if (o && q->busy_ns >= o->busy_ns)
            busy = (double)(q->busy_ns - o->busy_ns) / dt;
         if (busy > 1)
            busy = 1;
         if (o && q->submissions >= o->submissions)
            submits += (double)(q->submissions - o->submissions) * 1e9 / dt;
         if (o && q->gpu_ns >= o->gpu_ns)
            gpu += (double)(q->gpu_ns - o->gpu_ns) / dt;
         if (busy > busiest)
            busiest = busy;
         in_flight += q->in_flight;
         if (ql < sizeof(queues) - 24)
            ql += (size_t)snprintf(queues + ql, sizeof(queues) - ql, "%s%u.%u:%.0f", ql ? " " : "",
                                   q->family, q->index, busy * 100);
      }
      char mem[32];
      /* the GPU time its queues took, as a share of the interval (all its
       * queues together: over 100 % where they ran side by side) */
      printf("%6" PRIu64 " %8u %-18.18s %5.0f%% %10.1f %4.0f%% %3d %9" PRIu64 " %11s %8" PRIu64
             "  %s\n",
             c->id, c->pid, c->name, old ? busiest * 100 : 0.0, submits, old ? gpu * 100 : 0.0,
             c->nice, in_flight, human(c->memory_bytes, mem, sizeof(mem)), c->objects,
             old ? queues : "");
   }
   if (s->n_faults) {
      const Gpud__FaultInfo *f = s->faults[s->n_faults - 1];
      printf("\nlast fault %.0f s ago: client %" PRIu64 " (%s): %s\n", (double)f->age_ms / 1000.0,
             f->client_id, f->name, f->reason);
   }
}

/* ---- gpudctl cache ------------------------------------------------------- */

void
gpudctl_print_cache(const Gpud__CacheReply *c, const char *where, bool cleared, bool json)
{
   if (json) {
      json_head(where);
      printf(", \"cache_dir\": ");
      json_string_or_null(c->cache_dir);
      printf(", \"cache_state\": ");
      json_string_or_null(c->cache_state);
      printf(", \"user_limit_bytes\": %" PRIu64 ", \"total_limit_bytes\": %" PRIu64,
             c->user_limit_bytes, c->total_limit_bytes);
      if (cleared)
         printf(", \"removed_bytes\": %" PRIu64 ", \"removed_files\": %" PRIu64,
                c->removed_bytes, c->removed_files);
      printf(", \"entries\": [");
      for (size_t i = 0; i < c->n_entries; i++) {
         const Gpud__CacheEntry *e = c->entries[i];
         printf("%s{\"uid\": %u, \"program\": ", i ? ", " : "", e->uid);
         json_string_or_null(e->program);
         printf(", \"bytes\": %" PRIu64 ", \"files\": %" PRIu64 ", \"last_use_s\": %" PRIu64
                ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64 "}",
                e->bytes, e->files, e->last_use_s, e->hits, e->misses);
      }
      printf("]}\n");
      return;
   }
   char a[32], b[32];
   if (c->cache_state && *c->cache_state) {
      printf("caches:   none kept: %s\n", c->cache_state);
   } else {
      printf("caches:   %s", c->cache_dir);
      if (c->user_limit_bytes)
         printf(" (a user's at most %s", human(c->user_limit_bytes, a, sizeof(a)));
      if (c->total_limit_bytes)
         printf("%s all together at most %s", c->user_limit_bytes ? "," : " (",
                human(c->total_limit_bytes, b, sizeof(b)));
      printf("%s\n", c->user_limit_bytes || c->total_limit_bytes ? ")" : "");
   }
   if (cleared)
      printf("removed:  %" PRIu64 " files, %s\n", c->removed_files,
             human(c->removed_bytes, a, sizeof(a)));
   if (!c->n_entries) {
      printf("(nothing cached)\n");
      return;
   }
   printf("\n%-12s %-24s %10s %6s %-19s %7s %7s\n", "USER", "PROGRAM", "SIZE", "FILES",
          "LAST USE", "HITS", "MISSES");
   for (size_t i = 0; i < c->n_entries; i++) {
      const Gpud__CacheEntry *e = c->entries[i];
      char user[32], when[32] = "-";
      const struct passwd *pw = getpwuid((uid_t)e->uid);
      if (pw && strlen(pw->pw_name) < sizeof(user))
         snprintf(user, sizeof(user), "%s", pw->pw_name);
      else
         snprintf(user, sizeof(user), "%u", e->uid);
      time_t t = (time_t)e->last_use_s;
      struct tm tm;
      if (e->last_use_s && localtime_r(&t, &tm))
         strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
      printf("%-12s %-24s %10s %6" PRIu64 " %-19s %7" PRIu64 " %7" PRIu64 "\n", user,
             e->program && *e->program ? e->program : "(host drivers')",
             human(e->bytes, a, sizeof(a)), e->files, when, e->hits, e->misses);
   }
}
