/* SPDX-License-Identifier: MIT */
/*
 * gpudctl over D-Bus: the daemons that own org.gpud.Daemon1.* on a bus,
 * asked through their org.gpud.Daemon1 object.  What they answer becomes
 * the Gpud__StatusReply the control socket would have sent, so both ways
 * print the same.
 */
#include "gpudctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "daemon_bus.h"

#define BUS_INTERFACE "org.gpud.Daemon1"
#define BUS_PATH "/org/gpud/Daemon1"

struct bus_daemon {
   struct gpudctl_daemon base;
   sd_bus *bus;
   char *name;
   char *socket;
};

/* ---- reading a{sv} into protobuf-c messages --------------------------------- */

/* Grows a protobuf-c repeated field by one element of size bytes. */
static void *
append(void ***items, size_t *n, size_t size)
{
   void **grown = realloc(*items, (*n + 1) * sizeof(void *));
   if (!grown)
      return NULL;
   *items = grown;
   void *item = calloc(1, size);
   if (item)
      grown[(*n)++] = item;
   return item;
}

static int
read_string(sd_bus_message *m, char **ret)
{
   const char *s;
   int r = sd_bus_message_read(m, "v", "s", &s);
   if (r < 0)
      return r;
   if (*ret && *ret != protobuf_c_empty_string)
      free(*ret);
   *ret = strdup(s);
   return *ret ? 1 : -ENOMEM;
}

/* A boolean variant (D-Bus's b is an int). */
static int
read_bool(sd_bus_message *m, protobuf_c_boolean *ret)
{
   int b = 0;
   int r = sd_bus_message_read(m, "v", "b", &b);
   *ret = b != 0;
   return r;
}

/* Enters the variant and the array in it. */
static int
enter_array(sd_bus_message *m, const char *variant, const char *contents)
{
   int r = sd_bus_message_enter_container(m, 'v', variant);
   if (r >= 0)
      r = sd_bus_message_enter_container(m, 'a', contents);
   return r;
}

static int
exit_array(sd_bus_message *m)
{
   int r = sd_bus_message_exit_container(m);
   if (r >= 0)
      r = sd_bus_message_exit_container(m);
   return r < 0 ? r : 1;
}

/* One member of an a{sv}: 1 read, 0 unknown (skipped by the caller), < 0 error. */
typedef int (*member_fn)(sd_bus_message *m, const char *key, void *obj);

static int
read_dict(sd_bus_message *m, member_fn fn, void *obj)
{
   int r = sd_bus_message_enter_container(m, 'a', "{sv}");
   if (r < 0)
      return r;
   while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
      const char *key;
      r = sd_bus_message_read(m, "s", &key);
      if (r >= 0)
         r = fn(m, key, obj);
      if (r == 0)
         r = sd_bus_message_skip(m, "v");
      if (r >= 0)
         r = sd_bus_message_exit_container(m);
      if (r < 0)
         return r;
   }
   if (r < 0)
      return r;
   return sd_bus_message_exit_container(m);
}

#define READ_NUMBER(key_, type_, field_)                                                     \
   if (!strcmp(key, key_))                                                                  \
      return sd_bus_message_read(m, "v", type_, &(field_));

static int
client_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__ClientInfo *c = obj;
   int r;
   READ_NUMBER("id", "t", c->id)
   READ_NUMBER("pid", "u", c->pid)
   READ_NUMBER("uid", "u", c->uid)
   READ_NUMBER("worker_pid", "u", c->worker_pid)
   READ_NUMBER("worker_uid", "u", c->worker_uid)
   READ_NUMBER("objects", "t", c->objects)
   READ_NUMBER("memory_bytes", "t", c->memory_bytes)
   READ_NUMBER("commands", "t", c->commands)
   READ_NUMBER("gpu_ns", "t", c->gpu_ns)
   READ_NUMBER("nice", "i", c->nice)
   READ_NUMBER("weight", "u", c->weight)
   READ_NUMBER("quota_ppm", "u", c->quota_ppm)
   READ_NUMBER("user_quota_ppm", "u", c->user_quota_ppm)
   READ_NUMBER("waited_ns", "t", c->waited_ns)
   READ_NUMBER("send_blocked_ms", "t", c->send_blocked_ms)
   READ_NUMBER("connected_ms", "t", c->connected_ms)
   if (!strcmp(key, "name"))
      return read_string(m, &c->name);
   if (!strcmp(key, "worker_version"))
      return read_string(m, &c->worker_version);
   if (!strcmp(key, "adopted"))
      return read_bool(m, &c->adopted);
   if (!strcmp(key, "details_unknown"))
      return read_bool(m, &c->details_unknown);
   if (!strcmp(key, "state"))
      return read_string(m, &c->state);
   if (!strcmp(key, "names")) {
      if ((r = enter_array(m, "a(tss)", "(tss)")) < 0)
         return r;
      uint64_t id;
      const char *type, *name;
      while ((r = sd_bus_message_read(m, "(tss)", &id, &type, &name)) > 0) {
         Gpud__ObjectName *o = append((void ***)&c->names, &c->n_names, sizeof(*o));
         if (!o)
            return -ENOMEM;
         gpud__object_name__init(o);
         o->id = id;
         o->type = strdup(type);
         o->name = strdup(name);
      }
      return r < 0 ? r : exit_array(m);
   }
   if (!strcmp(key, "object_types")) {
      if ((r = enter_array(m, "a{st}", "{st}")) < 0)
         return r;
      const char *type;
      uint64_t count;
      while ((r = sd_bus_message_read(m, "{st}", &type, &count)) > 0) {
         Gpud__ObjectCount *o = append((void ***)&c->object_types, &c->n_object_types,
                                       sizeof(*o));
         if (!o)
            return -ENOMEM;
         gpud__object_count__init(o);
         o->type = strdup(type);
         o->count = count;
      }
      return r < 0 ? r : exit_array(m);
   }
   if (!strcmp(key, "heaps")) {
      if ((r = enter_array(m, "a(ut)", "(ut)")) < 0)
         return r;
      uint32_t heap;
      uint64_t bytes;
      while ((r = sd_bus_message_read(m, "(ut)", &heap, &bytes)) > 0) {
         Gpud__HeapUsage *h = append((void ***)&c->heaps, &c->n_heaps, sizeof(*h));
         if (!h)
            return -ENOMEM;
         gpud__heap_usage__init(h);
         h->heap = heap;
         h->bytes = bytes;
      }
      return r < 0 ? r : exit_array(m);
   }
   if (!strcmp(key, "queues")) {
      if ((r = enter_array(m, "a(tuuttttt)", "(tuuttttt)")) < 0)
         return r;
      Gpud__QueueInfo q;
      gpud__queue_info__init(&q);
      while ((r = sd_bus_message_read(m, "(tuuttttt)", &q.device, &q.family, &q.index,
                                      &q.submissions, &q.in_flight, &q.completed,
                                      &q.busy_ns, &q.gpu_ns)) > 0) {
         Gpud__QueueInfo *o = append((void ***)&c->queues, &c->n_queues, sizeof(*o));
         if (!o)
            return -ENOMEM;
         *o = q;
      }
      return r < 0 ? r : exit_array(m);
   }
   if (!strcmp(key, "injected")) {
      if ((r = enter_array(m, "as", "s")) < 0)
         return r;
      const char *s;
      while ((r = sd_bus_message_read(m, "s", &s)) > 0) {
         char **grown = realloc(c->injected, (c->n_injected + 1) * sizeof(char *));
         if (!grown)
            return -ENOMEM;
         c->injected = grown;
         if (!(grown[c->n_injected] = strdup(s)))
            return -ENOMEM;
         c->n_injected++;
      }
      return r < 0 ? r : exit_array(m);
   }
   return 0;
}

static int
fault_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__FaultInfo *f = obj;
   READ_NUMBER("client_id", "t", f->client_id)
   READ_NUMBER("pid", "u", f->pid)
   READ_NUMBER("uid", "u", f->uid)
   READ_NUMBER("worker_pid", "u", f->worker_pid)
   READ_NUMBER("age_ms", "t", f->age_ms)
   if (!strcmp(key, "name"))
      return read_string(m, &f->name);
   if (!strcmp(key, "reason"))
      return read_string(m, &f->reason);
   return 0;
}

static int
crash_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__CrashInfo *c = obj;
   READ_NUMBER("uid", "u", c->uid)
   READ_NUMBER("crashes", "u", c->crashes)
   READ_NUMBER("last_age_ms", "t", c->last_age_ms)
   READ_NUMBER("backoff_ms", "t", c->backoff_ms)
   READ_NUMBER("wait_ms", "t", c->wait_ms)
   if (!strcmp(key, "name"))
      return read_string(m, &c->name);
   if (!strcmp(key, "refused"))
      return read_bool(m, &c->refused);
   return 0;
}

static int
limits_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__Limits *l = obj;
   READ_NUMBER("client_memory_bytes", "t", l->client_memory)
   READ_NUMBER("uid_memory_bytes", "t", l->uid_memory)
   READ_NUMBER("client_objects", "t", l->client_objects)
   READ_NUMBER("uid_connections", "u", l->uid_connections)
   READ_NUMBER("max_clients", "u", l->max_clients)
   READ_NUMBER("spare_workers", "u", l->spare_workers)
   READ_NUMBER("restart_grace_ms", "u", l->restart_grace_ms)
   READ_NUMBER("cache_user_bytes", "t", l->cache_user_bytes)
   READ_NUMBER("cache_total_bytes", "t", l->cache_total_bytes)
   if (!strcmp(key, "fair_share"))
      return read_bool(m, &l->fair_share);
   if (!strcmp(key, "validate"))
      return read_string(m, &l->validate);
   if (!strcmp(key, "replay_threads"))
      return read_string(m, &l->replay_threads);
   if (!strcmp(key, "spirv"))
      return read_string(m, &l->spirv);
   return 0;
}

static int
heap_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__HeapInfo *h = obj;
   READ_NUMBER("heap", "u", h->heap)
   READ_NUMBER("size_bytes", "t", h->size_bytes)
   READ_NUMBER("memory_bytes", "t", h->used_bytes)
   if (!strcmp(key, "device_local"))
      return read_bool(m, &h->device_local);
   return 0;
}

/* An array of a{sv}, each read into a new element of a repeated field. */
static int
read_list(sd_bus_message *m, void ***items, size_t *n, size_t size, void (*init)(void *),
          member_fn fn)
{
   int r = sd_bus_message_enter_container(m, 'a', "a{sv}");
   if (r < 0)
      return r;
   while ((r = sd_bus_message_at_end(m, false)) == 0) {
      void *item = append(items, n, size);
      if (!item)
         return -ENOMEM;
      init(item);
      if ((r = read_dict(m, fn, item)) < 0)
         return r;
   }
   return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* ---- the daemon ------------------------------------------------------------- */

/* Calls method on the daemon; the reply or NULL with a message printed. */
static sd_bus_message *
call(struct bus_daemon *d, const char *method, const char *types, ...)
{
   sd_bus_error error = SD_BUS_ERROR_NULL;
   sd_bus_message *m = NULL, *reply = NULL;
   int r = sd_bus_message_new_method_call(d->bus, &m, d->name, BUS_PATH, BUS_INTERFACE, method);
   if (r >= 0 && types) {
      va_list ap;
      va_start(ap, types);
      r = sd_bus_message_appendv(m, types, ap);
      va_end(ap);
   }
   if (r >= 0)
      r = sd_bus_call(d->bus, m, 0, &error, &reply);
   sd_bus_message_unref(m);
   if (r < 0) {
      fprintf(stderr, "gpudctl: %s.%s: %s\n", d->name, method,
              error.message ? error.message : strerror(-r));
      sd_bus_error_free(&error);
      return NULL;
   }
   sd_bus_error_free(&error);
   return reply;
}

static int
get_string(struct bus_daemon *d, const char *property, char **ret)
{
   sd_bus_error error = SD_BUS_ERROR_NULL;
   int r = sd_bus_get_property_string(d->bus, d->name, BUS_PATH, BUS_INTERFACE, property,
                                      &error, ret);
   if (r < 0)
      fprintf(stderr, "gpudctl: %s %s: %s\n", d->name, property,
              error.message ? error.message : strerror(-r));
   sd_bus_error_free(&error);
   return r;
}

static int
get_number(struct bus_daemon *d, const char *property, char type, void *ret)
{
   sd_bus_error error = SD_BUS_ERROR_NULL;
   int r = sd_bus_get_property_trivial(d->bus, d->name, BUS_PATH, BUS_INTERFACE, property,
                                       &error, type, ret);
   if (r < 0)
      fprintf(stderr, "gpudctl: %s %s: %s\n", d->name, property,
              error.message ? error.message : strerror(-r));
   sd_bus_error_free(&error);
   return r;
}

static void
init_client(void *p)
{
   gpud__client_info__init(p);
}

static void
init_fault(void *p)
{
   gpud__fault_info__init(p);
}

static void
init_crash(void *p)
{
   gpud__crash_info__init(p);
}

static void
init_heap(void *p)
{
   gpud__heap_info__init(p);
}

static int
bus_status(struct gpudctl_daemon *base, Gpud__StatusReply **ret)
{
   struct bus_daemon *d = (struct bus_daemon *)base;
   Gpud__StatusReply *s = calloc(1, sizeof(*s));
   Gpud__Limits *limits = calloc(1, sizeof(*limits));
   if (!s || !limits) {
      free(s);
      free(limits);
      return 1;
   }
   gpud__status_reply__init(s);
   gpud__limits__init(limits);
   s->limits = limits;
   int r = 0;
   if (get_string(d, "Device", &s->device_name) < 0 ||
       get_string(d, "DeviceUuid", &s->device_uuid) < 0 ||
       get_string(d, "PciAddress", &s->device_pci) < 0 ||
       get_string(d, "RenderNode", &s->render_node) < 0 ||
       get_string(d, "HostDriver", &s->host_driver) < 0 ||
       get_string(d, "Version", &s->daemon_version) < 0 ||
       get_string(d, "Isolation", &s->isolation) < 0 ||
       get_number(d, "DaemonPid", 'u', &s->daemon_pid) < 0 ||
       get_number(d, "UptimeMs", 't', &s->uptime_ms) < 0 ||
       get_string(d, "WorkerIdentity", &s->worker_identity) < 0 ||
       get_string(d, "IdentityState", &s->identity_state) < 0 ||
       get_string(d, "CacheDirectory", &s->cache_dir) < 0 ||
       get_string(d, "CacheState", &s->cache_state) < 0)
      goto fail;

   sd_bus_message *reply = call(d, "ListClients", NULL);
   if (!reply)
      goto fail;
   r = read_list(reply, (void ***)&s->clients, &s->n_clients, sizeof(Gpud__ClientInfo),
                 init_client, client_member);
   if (r >= 0)
      r = sd_bus_message_read(reply, "u", &s->hidden_clients);
   sd_bus_message_unref(reply);
   if (r < 0)
      goto malformed;
   for (size_t i = 0; i < s->n_clients; i++) {
      s->objects += s->clients[i]->objects;
      s->memory_bytes += s->clients[i]->memory_bytes;
   }

   if (!(reply = call(d, "ListFaults", NULL)))
      goto fail;
   r = read_list(reply, (void ***)&s->faults, &s->n_faults, sizeof(Gpud__FaultInfo), init_fault,
                 fault_member);
   sd_bus_message_unref(reply);
   if (r < 0)
      goto malformed;

   if (!(reply = call(d, "ListCrashes", NULL)))
      goto fail;
   r = read_list(reply, (void ***)&s->crashes, &s->n_crashes, sizeof(Gpud__CrashInfo),
                 init_crash, crash_member);
   sd_bus_message_unref(reply);
   if (r < 0)
      goto malformed;

   if (!(reply = call(d, "GetLimits", NULL)))
      goto fail;
   r = read_dict(reply, limits_member, limits);
   sd_bus_message_unref(reply);
   if (r < 0)
      goto malformed;

   if (!(reply = call(d, "GetHeaps", NULL)))
      goto fail;
   r = read_list(reply, (void ***)&s->heaps, &s->n_heaps, sizeof(Gpud__HeapInfo), init_heap,
                 heap_member);
   sd_bus_message_unref(reply);
   if (r < 0)
      goto malformed;
   *ret = s;
   return 0;

malformed:
   fprintf(stderr, "gpudctl: %s: malformed answer (%s)\n", d->name, strerror(-r));
fail:
   gpud__status_reply__free_unpacked(s, NULL);
   return 1;
}

static void
bus_free_status(struct gpudctl_daemon *base, Gpud__StatusReply *s)
{
   if (s)
      gpud__status_reply__free_unpacked(s, NULL);
}

static int
bus_disconnect(struct gpudctl_daemon *base, uint64_t client_id)
{
   sd_bus_message *reply = call((struct bus_daemon *)base, "Disconnect", "t", client_id);
   sd_bus_message_unref(reply);
   return reply ? 0 : 1;
}

static int
bus_inject(struct gpudctl_daemon *base, uint64_t client_id, const char *fault, uint64_t value)
{
   sd_bus_message *reply =
      call((struct bus_daemon *)base, "Inject", "tst", client_id, fault, value);
   sd_bus_message_unref(reply);
   return reply ? 0 : 1;
}

static int
bus_renice(struct gpudctl_daemon *base, uint64_t client_id, int nice)
{
   sd_bus_message *reply = call((struct bus_daemon *)base, "Renice", "ti", client_id, (int32_t)nice);
   sd_bus_message_unref(reply);
   return reply ? 0 : 1;
}

static int
cache_member(sd_bus_message *m, const char *key, void *obj)
{
   Gpud__CacheEntry *e = obj;
   READ_NUMBER("uid", "u", e->uid)
   READ_NUMBER("bytes", "t", e->bytes)
   READ_NUMBER("files", "t", e->files)
   READ_NUMBER("last_use_s", "t", e->last_use_s)
   READ_NUMBER("hits", "t", e->hits)
   READ_NUMBER("misses", "t", e->misses)
   if (!strcmp(key, "program"))
      return read_string(m, &e->program);
   return 0;
}

static void
init_cache_entry(void *p)
{
   gpud__cache_entry__init(p);
}

static int
bus_cache(struct gpudctl_daemon *base, const struct gpudctl_cache_query *q, Gpud__CacheReply **ret)
{
   struct bus_daemon *d = (struct bus_daemon *)base;
   Gpud__CacheReply *c = calloc(1, sizeof(*c));
   if (!c)
      return 1;
   gpud__cache_reply__init(c);
   Gpud__Limits limits = GPUD__LIMITS__INIT;
   sd_bus_message *reply = call(d, q->clear ? "ClearCache" : "ListCaches", "bus",
                                (int)q->user_given, q->uid, q->program);
   if (!reply)
      goto fail;
   int r = q->clear ? sd_bus_message_read(reply, "tt", &c->removed_bytes, &c->removed_files) : 0;
   if (r >= 0)
      r = read_list(reply, (void ***)&c->entries, &c->n_entries, sizeof(Gpud__CacheEntry),
                    init_cache_entry, cache_member);
   sd_bus_message_unref(reply);
   if (r < 0) {
      fprintf(stderr, "gpudctl: %s: malformed answer (%s)\n", d->name, strerror(-r));
      goto fail;
   }
   if (get_string(d, "CacheDirectory", &c->cache_dir) < 0 ||
       get_string(d, "CacheState", &c->cache_state) < 0 || !(reply = call(d, "GetLimits", NULL)))
      goto fail;
   r = read_dict(reply, limits_member, &limits);
   sd_bus_message_unref(reply);
   c->user_limit_bytes = limits.cache_user_bytes;
   c->total_limit_bytes = limits.cache_total_bytes;
   /* (the strings read into limits) */
   for (char **str = (char *[]){limits.validate, limits.replay_threads, limits.spirv, NULL}; *str;
        str++) {
      if (*str != protobuf_c_empty_string)
         free(*str);
   }
   if (r < 0)
      goto fail;
   *ret = c;
   return 0;
fail:
   gpud__cache_reply__free_unpacked(c, NULL);
   return 1;
}

static void
bus_free_cache(struct gpudctl_daemon *base, Gpud__CacheReply *c)
{
   if (c)
      gpud__cache_reply__free_unpacked(c, NULL);
}

static void
bus_close(struct gpudctl_daemon *base)
{
   struct bus_daemon *d = (struct bus_daemon *)base;
   sd_bus_unref(d->bus);
   free(d->name);
   free(d->socket);
   free(d);
}

static int
compare_names(const void *a, const void *b)
{
   return strcmp(*(char *const *)a, *(char *const *)b);
}

struct gpudctl_daemon **
gpudctl_bus_daemons(const char *which)
{
   sd_bus *bus = NULL;
   int r = daemon_bus_open(which, &bus);
   if (r < 0) {
      fprintf(stderr, "gpudctl: cannot connect to the %s bus: %s\n", which, strerror(-r));
      sd_bus_unref(bus);
      return NULL;
   }
   char **names = NULL;
   r = sd_bus_list_names(bus, &names, NULL);
   if (r < 0) {
      fprintf(stderr, "gpudctl: cannot list the names on the bus: %s\n", strerror(-r));
      sd_bus_unref(bus);
      return NULL;
   }
   size_t n = 0, total = 0;
   while (names && names[total])
      total++;
   qsort(names, total, sizeof(char *), compare_names);
   struct gpudctl_daemon **daemons = calloc(total + 1, sizeof(*daemons));
   static const char prefix[] = BUS_INTERFACE ".";
   for (size_t i = 0; daemons && i < total; i++) {
      if (strncmp(names[i], prefix, sizeof(prefix) - 1))
         continue;
      struct bus_daemon *d = calloc(1, sizeof(*d));
      if (!d)
         break;
      d->bus = sd_bus_ref(bus);
      d->name = strdup(names[i]);
      d->base = (struct gpudctl_daemon){
         .status = bus_status,
         .free_status = bus_free_status,
         .disconnect = bus_disconnect,
         .inject = bus_inject,
         .renice = bus_renice,
         .cache = bus_cache,
         .free_cache = bus_free_cache,
         .close = bus_close,
      };
      /* named by its socket, as without the bus */
      if (!d->name || get_string(d, "Socket", &d->socket) < 0) {
         bus_close(&d->base);
         continue;
      }
      d->base.where = d->socket;
      daemons[n++] = &d->base;
   }
   for (size_t i = 0; i < total; i++)
      free(names[i]);
   free(names);
   sd_bus_unref(bus);
   return daemons;
}
