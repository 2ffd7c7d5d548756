/* SPDX-License-Identifier: MIT */
/*
 * org.gpud.Daemon1 on D-Bus (sd-bus, folded into the server's libevent
 * loop): the daemon's device and totals as properties, its clients, faults,
 * limits and heaps through methods, disconnecting and fault injection, and
 * signals when clients come, go and fault.  Each daemon owns the name
 * org.gpud.Daemon1.NAME (NAME: its socket's name without .sock, as
 * gpud@NAME serves) with one object, /org/gpud/Daemon1.  A caller is who
 * the bus says it is, under the same rules as the socket: it must be
 * allowed to connect, and sees and acts on its own clients (root and the
 * admin group on all).  docs/dbus.md describes the interface.
 */
#include "srv_bus.h"
#include "srv_access.h"
#include "srv_cache.h"
#include "srv_control.h"
#include "srv_identity.h"

#include <errno.h>
#include <inttypes.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>

#include "daemon_bus.h"
#include "util_log.h"
#include "util_time.h"

#define BUS_INTERFACE "org.gpud.Daemon1"
#define BUS_PATH "/org/gpud/Daemon1"
#define BUS_ERROR_NO_CLIENT "org.gpud.Daemon1.Error.NoSuchClient"
#define BUS_ERROR_CANNOT_INJECT "org.gpud.Daemon1.Error.CannotInject"
#define BUS_ERROR_CANNOT_RENICE "org.gpud.Daemon1.Error.CannotRenice"
#define BUS_ERROR_NO_CACHE "org.gpud.Daemon1.Error.NoCache"

/* Who the bus says a connection is, asked once per connection: the
 * bus's answer (GetConnectionCredentials) comes back through the loop, and
 * the connection's calls wait, held, until it has. */
#define CALLERS 128       /* connections known or being asked about */
#define CALLER_HELD 16    /* calls of one connection held meanwhile */

struct bus_caller {
   struct srv_bus *bus;
   char *sender;          /* its unique name; NULL: a free entry */
   bool asking;
   bool known;            /* the bus said who it is (else: it would not) */
   uid_t uid;
   pid_t pid;
   gid_t gid;
   gid_t *groups;
   int n_groups;
   uint64_t used;         /* least recently used goes first */
   sd_bus_slot *query;
   sd_bus_message *held[CALLER_HELD];
   unsigned n_held;
};

struct srv_bus {
   struct srv_server *server;
   sd_bus *bus;
   struct event *io;
   struct event *timer;
   char *name;   /* the well-known name */
   char *socket; /* the path clients connect to */
   char *which;  /* system, session or the address */
   struct bus_caller callers[CALLERS];
   uint64_t tick;
};

static void bus_rearm(struct srv_bus *b);
static void bus_retry_later(struct srv_server *server);

static void
on_bus_event(evutil_socket_t fd, short what, void *data)
{
   struct srv_bus *b = data;
   int r = 0;
   /* a batch, then the loop's other events get their turn (a caller that
    * floods the bus does not starve the clients) */
   for (int i = 0; i < 32 && (r = sd_bus_process(b->bus, NULL)) > 0; i++)
      ;
   if (r > 0) {
      /* more to do: come back at once, after the others */
      event_del(b->timer);
      struct timeval now = {0, 0};
      event_add(b->timer, &now);
      return;
   }
   if (r < 0) {
      struct srv_server *server = b->server;
      util_warn("D-Bus: the connection failed (%s); gpud is no longer on the bus",
                strerror(-r));
      srv_bus_stop(server);
      bus_retry_later(server);
      return;
   }
   bus_rearm(b);
}

static void
on_bus_retry(evutil_socket_t fd, short what, void *data)
{
   srv_bus_start(data);
}

/* A bus that went away (restarted, or a connection it dropped) is asked
 * again: after 1 s, doubling to 30 s while it keeps failing. */
static void
bus_retry_later(struct srv_server *server)
{
   if (!server->bus_retry)
      server->bus_retry = evtimer_new(server->base, on_bus_retry, server);
   if (!server->bus_retry)
      return;
   server->bus_retry_ms = server->bus_retry_ms ? server->bus_retry_ms * 2 : 1000;
   if (server->bus_retry_ms > 30000)
      server->bus_retry_ms = 30000;
   const struct timeval tv = {.tv_sec = server->bus_retry_ms / 1000,
                              .tv_usec = (server->bus_retry_ms % 1000) * 1000};
   event_add(server->bus_retry, &tv);
   util_info("D-Bus: connecting again in %u ms", server->bus_retry_ms);
}

/* Waits for what sd-bus wants next: its fd's events and its timeout. */
static void
bus_rearm(struct srv_bus *b)
{
   int events = sd_bus_get_events(b->bus);
   short what = EV_READ;
   if (events > 0 && (events & POLLOUT))
      what |= EV_WRITE;
   event_del(b->io);
   event_assign(b->io, b->server->base, sd_bus_get_fd(b->bus), what, on_bus_event, b);
   event_add(b->io, NULL);
   uint64_t until;
   event_del(b->timer);
   if (sd_bus_get_timeout(b->bus, &until) >= 0 && until != UINT64_MAX) {
      uint64_t now = util_now_ns() / 1000;
      uint64_t us = until > now ? until - now : 0;
      struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                           .tv_usec = (suseconds_t)(us % 1000000)};
      event_add(b->timer, &tv);
   }
}

/* ---- who calls ------------------------------------------------------------ */

/* The groups of user uid in the user and group databases (its primary
 * group in *gid too); their count, or 0. */
static int
user_groups(uid_t uid, gid_t *gid, gid_t **ret)
{
   *ret = NULL;
   struct passwd pw, *found = NULL;
   char buf[4096];
   if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
      return 0;
   *gid = pw.pw_gid;
   int n = 32;
   for (int tries = 0; tries < 4; tries++) {
      gid_t *list = malloc(sizeof(gid_t) * (size_t)n);
      if (!list)
         return 0;
      int want = n;
      if (getgrouplist(pw.pw_name, pw.pw_gid, list, &want) >= 0) {
         *ret = list;
         return want;
      }
      free(list);
      n = want > n ? want : n * 2;
   }
   return 0;
}

static struct bus_caller *
find_caller(struct srv_bus *b, const char *sender)
{
   for (unsigned i = 0; i < CALLERS; i++) {
      if (b->callers[i].sender && !strcmp(b->callers[i].sender, sender))
         return &b->callers[i];
   }
   return NULL;
}

static void
forget_caller(struct bus_caller *c)
{
   for (unsigned i = 0; i < c->n_held; i++)
      sd_bus_message_unref(c->held[i]);
   sd_bus_slot_unref(c->query);
   free(c->sender);
   free(c->groups);
   struct srv_bus *b = c->bus;
   memset(c, 0, sizeof(*c));
   c->bus = b;
}

/* A free entry, or the least recently used one that is not being asked
 * about; NULL when every entry waits for the bus. */
static struct bus_caller *
new_caller(struct srv_bus *b, const char *sender)
{
   struct bus_caller *pick = NULL;
   for (unsigned i = 0; i < CALLERS; i++) {
      struct bus_caller *c = &b->callers[i];
      if (!c->sender) {
         pick = c;
         break;
      }
      if (!c->asking && (!pick || c->used < pick->used))
         pick = c;
   }
   if (!pick)
      return NULL;
   forget_caller(pick);
   pick->sender = strdup(sender);
   return pick->sender ? pick : NULL;
}

/* The bus's answer: who the connection is; its held calls run now. */
static int
on_credentials(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
   struct bus_caller *c = userdata;
   struct srv_bus *b = c->bus;
   c->query = sd_bus_slot_unref(c->query);
   c->asking = false;
   bool have_uid = false;
   uint32_t uid = 0, pid = 0;
   int r = sd_bus_message_is_method_error(reply, NULL) ? -EACCES
                                                       : sd_bus_message_enter_container(
                                                            reply, 'a', "{sv}");
   while (r > 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
      const char *key;
      r = sd_bus_message_read(reply, "s", &key);
      if (r >= 0 && !strcmp(key, "UnixUserID")) {
         r = sd_bus_message_read(reply, "v", "u", &uid);
         have_uid = r >= 0;
      } else if (r >= 0 && !strcmp(key, "ProcessID")) {
         r = sd_bus_message_read(reply, "v", "u", &pid);
      } else if (r >= 0) {
         r = sd_bus_message_skip(reply, "v");
      }
      if (r >= 0)
         r = sd_bus_message_exit_container(reply);
   }
   if (r >= 0 && have_uid) {
      c->known = true;
      c->uid = uid;
      c->pid = (pid_t)pid;
      c->gid = (gid_t)-1;
      /* dbus-daemon says only who the caller is: its groups are what the
       * group database gives its user (as the bus's own policy takes
       * them) */
      if (uid != 0)
         c->n_groups = user_groups(uid, &c->gid, &c->groups);
   } else {
      util_debug("D-Bus: the bus does not say who %s is", c->sender);
   }
   /* the calls it held, in their order, through the filter again */
   for (unsigned i = 0; i < c->n_held; i++) {
      sd_bus_enqueue_for_read(b->bus, c->held[i]);
      sd_bus_message_unref(c->held[i]);
   }
   c->n_held = 0;
   return 1;
}

/* Every call to the object: on from a connection the bus has said who it
 * is, held (and the bus asked) otherwise. */
static int
on_incoming(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
   struct srv_bus *b = userdata;
   const char *path = sd_bus_message_get_path(m);
   const char *sender = sd_bus_message_get_sender(m);
   if (!sd_bus_message_is_method_call(m, NULL, NULL) || !path || strcmp(path, BUS_PATH) ||
       !sender)
      return 0;
   struct bus_caller *c = find_caller(b, sender);
   if (c && !c->asking) {
      c->used = ++b->tick;
      return 0;
   }
   if (!c) {
      c = new_caller(b, sender);
      if (c && sd_bus_call_method_async(b->bus, &c->query, "org.freedesktop.DBus",
                                        "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetConnectionCredentials", on_credentials, c, "s",
                                        sender) < 0)
         forget_caller(c), c = NULL;
      if (c) {
         c->asking = true;
         c->used = ++b->tick;
      }
   }
   if (!c || c->n_held == CALLER_HELD) {
      sd_bus_reply_method_errorf(m, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                 "too many calls wait for the bus to say who their callers are");
      return 1;
   }
   c->held[c->n_held++] = sd_bus_message_ref(m);
   return 1;
}

/* The caller as a control viewer (uid, pid, admin); false with an error set
 * when it may not use the daemon at all. */
static bool
caller(struct srv_bus *b, sd_bus_message *m, struct srv_client *viewer, sd_bus_error *error)
{
   memset(viewer, 0, sizeof(*viewer));
   viewer->state = SRV_CLIENT_CONTROL;
   viewer->server = b->server;
   const char *sender = sd_bus_message_get_sender(m);
   const struct bus_caller *c = sender ? find_caller(b, sender) : NULL;
   if (!c || !c->known) {
      sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "the bus does not say who you are");
      return false;
   }
   uid_t uid = c->uid;
   pid_t pid = c->pid;
   char reason[160];
   bool admin = false;
   bool ok = srv_access_check(b->server, uid, c->gid, c->n_groups > 0 ? c->groups : NULL,
                               c->n_groups > 0 ? (size_t)c->n_groups : 0, reason,
                               sizeof(reason), &admin);
   if (!ok) {
      sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s", reason);
      return false;
   }
   viewer->uid = uid;
   viewer->pid = pid;
   viewer->admin = admin;
   return true;
}

/* ---- a{sv} ---------------------------------------------------------------- */

static int
put_t(sd_bus_message *m, const char *key, uint64_t v)
{
   return sd_bus_message_append(m, "{sv}", key, "t", v);
}

static int
put_u(sd_bus_message *m, const char *key, uint32_t v)
{
   return sd_bus_message_append(m, "{sv}", key, "u", v);
}

static int
put_i(sd_bus_message *m, const char *key, int32_t v)
{
   return sd_bus_message_append(m, "{sv}", key, "i", v);
}

static int
put_s(sd_bus_message *m, const char *key, const char *v)
{
   return sd_bus_message_append(m, "{sv}", key, "s", v ? v : "");
}

static int
put_b(sd_bus_message *m, const char *key, bool v)
{
   return sd_bus_message_append(m, "{sv}", key, "b", (int)v);
}

/* Opens {key: variant of an array of contents} */
static int
open_array(sd_bus_message *m, const char *key, const char *array_type, const char *contents)
{
   int r = sd_bus_message_open_container(m, 'e', "sv");
   if (r >= 0)
      r = sd_bus_message_append(m, "s", key);
   if (r >= 0)
      r = sd_bus_message_open_container(m, 'v', array_type);
   if (r >= 0)
      r = sd_bus_message_open_container(m, 'a', contents);
   return r;
}

static int
close_array(sd_bus_message *m)
{
   int r = sd_bus_message_close_container(m);
   if (r >= 0)
      r = sd_bus_message_close_container(m);
   if (r >= 0)
      r = sd_bus_message_close_container(m);
   return r;
}

/* A client as a{sv}: the members and names of gpudctl's JSON. */
static int
put_client(sd_bus_message *m, const Gpud__ClientInfo *c)
{
   int r = sd_bus_message_open_container(m, 'a', "{sv}");
   if (r < 0)
      return r;
   put_t(m, "id", c->id);
   put_u(m, "pid", c->pid);
   put_u(m, "uid", c->uid);
   put_s(m, "name", c->name);
   put_s(m, "state", c->state);
   put_u(m, "worker_pid", c->worker_pid);
   put_u(m, "worker_uid", c->worker_uid);
   put_s(m, "worker_version", c->worker_version);
   put_b(m, "adopted", c->adopted);
   put_b(m, "details_unknown", c->details_unknown);
   put_t(m, "objects", c->objects);
   put_t(m, "memory_bytes", c->memory_bytes);
   put_t(m, "commands", c->commands);
   put_t(m, "gpu_ns", c->gpu_ns);
   put_i(m, "nice", c->nice);
   put_u(m, "weight", c->weight);
   put_u(m, "quota_ppm", c->quota_ppm);
   put_u(m, "user_quota_ppm", c->user_quota_ppm);
   put_t(m, "waited_ns", c->waited_ns);
   put_t(m, "send_blocked_ms", c->send_blocked_ms);
   put_t(m, "connected_ms", c->connected_ms);
   open_array(m, "names", "a(tss)", "(tss)");
   for (size_t k = 0; k < c->n_names; k++)
      sd_bus_message_append(m, "(tss)", c->names[k]->id, c->names[k]->type, c->names[k]->name);
   close_array(m);
   open_array(m, "object_types", "a{st}", "{st}");
   for (size_t k = 0; k < c->n_object_types; k++)
      sd_bus_message_append(m, "{st}", c->object_types[k]->type, c->object_types[k]->count);
   close_array(m);
   open_array(m, "heaps", "a(ut)", "(ut)");
   for (size_t k = 0; k < c->n_heaps; k++)
      sd_bus_message_append(m, "(ut)", c->heaps[k]->heap, c->heaps[k]->bytes);
   close_array(m);
   open_array(m, "queues", "a(tuuttttt)", "(tuuttttt)");
   for (size_t k = 0; k < c->n_queues; k++) {
      const Gpud__QueueInfo *q = c->queues[k];
      sd_bus_message_append(m, "(tuuttttt)", q->device, q->family, q->index, q->submissions,
                            q->in_flight, q->completed, q->busy_ns, q->gpu_ns);
   }
   close_array(m);
   open_array(m, "injected", "as", "s");
   for (size_t k = 0; k < c->n_injected; k++)
      sd_bus_message_append(m, "s", c->injected[k]);
   r = close_array(m);
   if (r >= 0)
      r = sd_bus_message_close_container(m);
   return r;
}

static int
put_fault(sd_bus_message *m, const Gpud__FaultInfo *f)
{
   int r = sd_bus_message_open_container(m, 'a', "{sv}");
   if (r < 0)
      return r;
   put_t(m, "client_id", f->client_id);
   put_u(m, "pid", f->pid);
   put_u(m, "uid", f->uid);
   put_s(m, "name", f->name);
   put_u(m, "worker_pid", f->worker_pid);
   put_s(m, "reason", f->reason);
   put_t(m, "age_ms", f->age_ms);
   return sd_bus_message_close_container(m);
}

/* ---- methods -------------------------------------------------------------- */

/* Runs fill(reply, status) for a caller allowed to ask. */
static int
with_status(sd_bus_message *m, void *userdata, sd_bus_error *error,
            int (*fill)(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
                        sd_bus_error *error))
{
   struct srv_bus *b = userdata;
   struct srv_client viewer;
   if (!caller(b, m, &viewer, error))
      return -EACCES;
   const Gpud__StatusReply *s = NULL;
   struct srv_status_view *v = srv_control_status(b->server, &viewer, &s);
   if (!v)
      return -ENOMEM;
   sd_bus_message *reply = NULL;
   int r = sd_bus_message_new_method_return(m, &reply);
   if (r >= 0)
      r = fill(reply, s, m, error);
   if (r >= 0)
      r = sd_bus_send(NULL, reply, NULL);
   sd_bus_message_unref(reply);
   srv_control_status_free(v);
   return r;
}

static int
fill_clients(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
             sd_bus_error *error)
{
   int r = sd_bus_message_open_container(reply, 'a', "a{sv}");
   for (size_t i = 0; r >= 0 && i < s->n_clients; i++)
      r = put_client(reply, s->clients[i]);
   if (r >= 0)
      r = sd_bus_message_close_container(reply);
   if (r >= 0)
      r = sd_bus_message_append(reply, "u", s->hidden_clients);
   return r;
}

static int
method_list_clients(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_clients);
}

static int
fill_client(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
            sd_bus_error *error)
{
   uint64_t id;
   int r = sd_bus_message_read(call, "t", &id);
   if (r < 0)
      return r;
   for (size_t i = 0; i < s->n_clients; i++) {
      if (s->clients[i]->id == id)
         return put_client(reply, s->clients[i]);
   }
   return sd_bus_error_setf(error, BUS_ERROR_NO_CLIENT, "no client %" PRIu64 "%s", id,
                            s->hidden_clients ? " of yours" : "");
}

static int
method_get_client(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_client);
}

static int
fill_faults(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
            sd_bus_error *error)
{
   int r = sd_bus_message_open_container(reply, 'a', "a{sv}");
   for (size_t i = 0; r >= 0 && i < s->n_faults; i++)
      r = put_fault(reply, s->faults[i]);
   if (r >= 0)
      r = sd_bus_message_close_container(reply);
   return r;
}

static int
method_list_faults(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_faults);
}

static int
fill_crashes(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
             sd_bus_error *error)
{
   int r = sd_bus_message_open_container(reply, 'a', "a{sv}");
   for (size_t i = 0; r >= 0 && i < s->n_crashes; i++) {
      const Gpud__CrashInfo *c = s->crashes[i];
      r = sd_bus_message_open_container(reply, 'a', "{sv}");
      if (r < 0)
         break;
      put_u(reply, "uid", c->uid);
      put_s(reply, "name", c->name);
      put_u(reply, "crashes", c->crashes);
      put_t(reply, "last_age_ms", c->last_age_ms);
      put_t(reply, "backoff_ms", c->backoff_ms);
      put_t(reply, "wait_ms", c->wait_ms);
      put_b(reply, "refused", c->refused);
      r = sd_bus_message_close_container(reply);
   }
   if (r >= 0)
      r = sd_bus_message_close_container(reply);
   return r;
}

static int
method_list_crashes(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_crashes);
}

static int
fill_limits(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
            sd_bus_error *error)
{
   const Gpud__Limits *l = s->limits;
   int r = sd_bus_message_open_container(reply, 'a', "{sv}");
   if (r < 0 || !l)
      return r < 0 ? r : sd_bus_message_close_container(reply);
   put_t(reply, "client_memory_bytes", l->client_memory);
   put_t(reply, "uid_memory_bytes", l->uid_memory);
   put_t(reply, "client_objects", l->client_objects);
   put_u(reply, "uid_connections", l->uid_connections);
   put_u(reply, "max_clients", l->max_clients);
   put_u(reply, "spare_workers", l->spare_workers);
   put_s(reply, "validate", l->validate);
   put_s(reply, "replay_threads", l->replay_threads);
   put_s(reply, "spirv", l->spirv);
   put_u(reply, "restart_grace_ms", l->restart_grace_ms);
   put_b(reply, "fair_share", l->fair_share);
   put_t(reply, "cache_user_bytes", l->cache_user_bytes);
   put_t(reply, "cache_total_bytes", l->cache_total_bytes);
   return sd_bus_message_close_container(reply);
}

static int
method_get_limits(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_limits);
}

static int
fill_heaps(sd_bus_message *reply, const Gpud__StatusReply *s, sd_bus_message *call,
           sd_bus_error *error)
{
   int r = sd_bus_message_open_container(reply, 'a', "a{sv}");
   for (size_t i = 0; r >= 0 && i < s->n_heaps; i++) {
      const Gpud__HeapInfo *h = s->heaps[i];
      r = sd_bus_message_open_container(reply, 'a', "{sv}");
      put_u(reply, "heap", h->heap);
      put_t(reply, "size_bytes", h->size_bytes);
      put_b(reply, "device_local", h->device_local);
      put_t(reply, "memory_bytes", h->used_bytes);
      if (r >= 0)
         r = sd_bus_message_close_container(reply);
   }
   if (r >= 0)
      r = sd_bus_message_close_container(reply);
   return r;
}

static int
method_get_heaps(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return with_status(m, userdata, error, fill_heaps);
}

/* A control result as a D-Bus error (or the empty reply). */
static int
act_reply(sd_bus_message *m, int r, uint64_t id, const char *why, const char *failed,
          sd_bus_error *error)
{
   if (r == -ENOENT)
      return sd_bus_error_setf(error, BUS_ERROR_NO_CLIENT, "no client %" PRIu64, id);
   if (r == -EACCES && why)
      return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s", why);
   if (r == -EACCES)
      return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                               "client %" PRIu64 " is another user's", id);
   if (r < 0)
      return sd_bus_error_setf(error, failed, "%s", why ? why : "failed");
   return sd_bus_reply_method_return(m, NULL);
}

static int
method_disconnect(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   struct srv_bus *b = userdata;
   struct srv_client viewer;
   uint64_t id;
   if (!caller(b, m, &viewer, error))
      return -EACCES;
   int r = sd_bus_message_read(m, "t", &id);
   if (r < 0)
      return r;
   return act_reply(m, srv_control_disconnect(b->server, &viewer, id, "D-Bus"), id, NULL,
                    BUS_ERROR_CANNOT_INJECT, error);
}

static int
method_inject(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   struct srv_bus *b = userdata;
   struct srv_client viewer;
   uint64_t id, value;
   const char *fault;
   if (!caller(b, m, &viewer, error))
      return -EACCES;
   int r = sd_bus_message_read(m, "tst", &id, &fault, &value);
   if (r < 0)
      return r;
   const char *why = NULL;
   r = srv_control_inject(b->server, &viewer, id, fault, value, "D-Bus", &why);
   return act_reply(m, r, id, why, BUS_ERROR_CANNOT_INJECT, error);
}

static int
method_renice(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   struct srv_bus *b = userdata;
   struct srv_client viewer;
   uint64_t id;
   int32_t nice;
   if (!caller(b, m, &viewer, error))
      return -EACCES;
   int r = sd_bus_message_read(m, "ti", &id, &nice);
   if (r < 0)
      return r;
   const char *why = NULL;
   r = srv_control_renice(b->server, &viewer, id, nice, "D-Bus", &why);
   return act_reply(m, r, id, why, BUS_ERROR_CANNOT_RENICE, error);
}

/* ListCaches(b user_given, u uid, s program) and ClearCache(...): what
 * gpudctl cache shows and clears. */
static int
cache_call(sd_bus_message *m, void *userdata, sd_bus_error *error, bool clear)
{
   struct srv_bus *b = userdata;
   struct srv_client viewer;
   int user_given = 0;
   uint32_t uid = 0;
   const char *program = NULL;
   if (!caller(b, m, &viewer, error))
      return -EACCES;
   int r = sd_bus_message_read(m, "bus", &user_given, &uid, &program);
   if (r < 0)
      return r;
   const Gpud__CacheReply *c = NULL;
   struct srv_cache_view *v = srv_control_cache(b->server, &viewer, user_given, (uid_t)uid,
                                                  program, clear, "D-Bus", &c);
   if (!v)
      return -ENOMEM;
   if (c->error && c->error[0]) {
      r = sd_bus_error_setf(error, c->denied ? SD_BUS_ERROR_ACCESS_DENIED : BUS_ERROR_NO_CACHE,
                            "%s", c->error);
      srv_control_cache_free(v);
      return r;
   }
   sd_bus_message *reply = NULL;
   r = sd_bus_message_new_method_return(m, &reply);
   if (r >= 0 && clear)
      r = sd_bus_message_append(reply, "tt", c->removed_bytes, c->removed_files);
   if (r >= 0)
      r = sd_bus_message_open_container(reply, 'a', "a{sv}");
   for (size_t i = 0; r >= 0 && i < c->n_entries; i++) {
      const Gpud__CacheEntry *e = c->entries[i];
      r = sd_bus_message_open_container(reply, 'a', "{sv}");
      put_u(reply, "uid", e->uid);
      put_s(reply, "program", e->program);
      put_t(reply, "bytes", e->bytes);
      put_t(reply, "files", e->files);
      put_t(reply, "last_use_s", e->last_use_s);
      put_t(reply, "hits", e->hits);
      put_t(reply, "misses", e->misses);
      if (r >= 0)
         r = sd_bus_message_close_container(reply);
   }
   if (r >= 0)
      r = sd_bus_message_close_container(reply);
   if (r >= 0)
      r = sd_bus_send(NULL, reply, NULL);
   sd_bus_message_unref(reply);
   srv_control_cache_free(v);
   return r;
}

static int
method_list_caches(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return cache_call(m, userdata, error, false);
}

static int
method_clear_cache(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
   return cache_call(m, userdata, error, true);
}

/* ---- properties ----------------------------------------------------------- */

static int
get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
             sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
   struct srv_bus *b = userdata;
   struct srv_server *server = b->server;
   if (!strcmp(property, "Device"))
      return sd_bus_message_append(reply, "s", server->device_name);
   if (!strcmp(property, "DeviceUuid"))
      return sd_bus_message_append(reply, "s", server->device_uuid);
   if (!strcmp(property, "PciAddress"))
      return sd_bus_message_append(reply, "s", server->device_pci);
   if (!strcmp(property, "RenderNode"))
      return sd_bus_message_append(reply, "s", server->render_node);
   if (!strcmp(property, "HostDriver"))
      return sd_bus_message_append(reply, "s", server->host_driver ? server->host_driver : "");
   if (!strcmp(property, "Version"))
      return sd_bus_message_append(reply, "s", daemon_version);
   if (!strcmp(property, "Socket"))
      return sd_bus_message_append(reply, "s", b->socket);
   if (!strcmp(property, "Isolation"))
      return sd_bus_message_append(
         reply, "s", server->cfg.isolation == SRV_ISOLATION_THREAD ? "thread" : "process");
   if (!strcmp(property, "DaemonPid"))
      return sd_bus_message_append(reply, "u", (uint32_t)getpid());
   if (!strcmp(property, "UptimeMs"))
      return sd_bus_message_append(reply, "t", (util_now_ns() - server->start_ns) / 1000000);
   if (!strcmp(property, "WorkerIdentity"))
      return sd_bus_message_append(reply, "s", srv_identity_on(server) ? "per-user" : "shared");
   if (!strcmp(property, "IdentityState"))
      return sd_bus_message_append(reply, "s", srv_identity_state(server));
   if (!strcmp(property, "CacheDirectory"))
      return sd_bus_message_append(reply, "s", srv_cache_root(server));
   if (!strcmp(property, "CacheState"))
      return sd_bus_message_append(reply, "s", srv_cache_state(server));
   /* the totals of what the caller may see */
   struct srv_client viewer;
   sd_bus_message *m = sd_bus_get_current_message(bus);
   if (!m || !caller(b, m, &viewer, error))
      return -EACCES;
   uint64_t clients = 0, memory = 0, objects = 0;
   struct srv_client *c;
   util_list_for_each(c, &server->clients, link) {
      if (c->state == SRV_CLIENT_CONTROL || !srv_access_may_see(&viewer, c))
         continue;
      clients++;
      memory += c->memory;
      if (c->worker && c->worker->status)
         objects += atomic_load_explicit(&c->worker->status->objects, memory_order_relaxed);
   }
   if (!strcmp(property, "Clients"))
      return sd_bus_message_append(reply, "u", (uint32_t)clients);
   if (!strcmp(property, "MemoryBytes"))
      return sd_bus_message_append(reply, "t", memory);
   if (!strcmp(property, "Objects"))
      return sd_bus_message_append(reply, "t", objects);
   return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "no property %s", property);
}

static const sd_bus_vtable daemon_vtable[] = {
   SD_BUS_VTABLE_START(0),
   SD_BUS_PROPERTY("Device", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("DeviceUuid", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("PciAddress", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("RenderNode", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("HostDriver", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("Version", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("Socket", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("Isolation", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("DaemonPid", "u", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
   SD_BUS_PROPERTY("UptimeMs", "t", get_property, 0, 0),
   SD_BUS_PROPERTY("WorkerIdentity", "s", get_property, 0, 0),
   SD_BUS_PROPERTY("IdentityState", "s", get_property, 0, 0),
   SD_BUS_PROPERTY("CacheDirectory", "s", get_property, 0, 0),
   SD_BUS_PROPERTY("CacheState", "s", get_property, 0, 0),
   SD_BUS_PROPERTY("Clients", "u", get_property, 0, 0),
   SD_BUS_PROPERTY("Objects", "t", get_property, 0, 0),
   SD_BUS_PROPERTY("MemoryBytes", "t", get_property, 0, 0),
   SD_BUS_METHOD_WITH_NAMES("ListClients", "", , "aa{sv}u", SD_BUS_PARAM(clients)
                            SD_BUS_PARAM(hidden_clients), method_list_clients,
                            SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("GetClient", "t", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(client),
                            method_get_client, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("ListFaults", "", , "aa{sv}", SD_BUS_PARAM(faults),
                            method_list_faults, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("ListCrashes", "", , "aa{sv}", SD_BUS_PARAM(crashes),
                            method_list_crashes, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("GetLimits", "", , "a{sv}", SD_BUS_PARAM(limits),
                            method_get_limits, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("GetHeaps", "", , "aa{sv}", SD_BUS_PARAM(heaps),
                            method_get_heaps, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("Disconnect", "t", SD_BUS_PARAM(id), "", , method_disconnect,
                            SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("Inject", "tst", SD_BUS_PARAM(id) SD_BUS_PARAM(fault)
                            SD_BUS_PARAM(value), "", , method_inject,
                            SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("Renice", "ti", SD_BUS_PARAM(id) SD_BUS_PARAM(nice), "", ,
                            method_renice, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("ListCaches", "bus", SD_BUS_PARAM(user_given) SD_BUS_PARAM(uid)
                            SD_BUS_PARAM(program), "aa{sv}", SD_BUS_PARAM(entries),
                            method_list_caches, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_METHOD_WITH_NAMES("ClearCache", "bus", SD_BUS_PARAM(user_given) SD_BUS_PARAM(uid)
                            SD_BUS_PARAM(program), "ttaa{sv}", SD_BUS_PARAM(removed_bytes)
                            SD_BUS_PARAM(removed_files) SD_BUS_PARAM(entries),
                            method_clear_cache, SD_BUS_VTABLE_UNPRIVILEGED),
   SD_BUS_SIGNAL_WITH_NAMES("ClientConnected", "tuus", SD_BUS_PARAM(id) SD_BUS_PARAM(pid)
                            SD_BUS_PARAM(uid) SD_BUS_PARAM(name), 0),
   SD_BUS_SIGNAL_WITH_NAMES("ClientDisconnected", "tuus", SD_BUS_PARAM(id) SD_BUS_PARAM(pid)
                            SD_BUS_PARAM(uid) SD_BUS_PARAM(name), 0),
   SD_BUS_SIGNAL_WITH_NAMES("ClientFaulted", "ts", SD_BUS_PARAM(id) SD_BUS_PARAM(reason), 0),
   SD_BUS_VTABLE_END,
};

/* ---- the connection ------------------------------------------------------- */

/* org.gpud.Daemon1.NAME for the socket at path (NAME.sock): characters a
 * bus name may not hold become '_'. */
static char *
bus_name_for(const char *path)
{
   const char *base = strrchr(path, '/');
   base = base ? base + 1 : path;
   size_t len = strlen(base);
   if (len > 5 && !strcmp(base + len - 5, ".sock"))
      len -= 5;
   if (!len || len > 180)
      base = "gpud", len = 4;
   char *name = malloc(sizeof(BUS_INTERFACE) + 2 + len);
   if (!name)
      return NULL;
   char *p = name + sprintf(name, "%s.", BUS_INTERFACE);
   if (base[0] >= '0' && base[0] <= '9')
      *p++ = '_';
   for (size_t i = 0; i < len; i++) {
      char ch = base[i];
      bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '_';
      *p++ = ok ? ch : '_';
   }
   *p = 0;
   return name;
}

static char *
socket_path_of(struct srv_server *server)
{
   if (server->socket_path)
      return strdup(server->socket_path);
   struct sockaddr_un sun;
   socklen_t len = sizeof(sun);
   memset(&sun, 0, sizeof(sun));
   if (getsockname(server->listen_fd, (struct sockaddr *)&sun, &len) < 0 ||
       sun.sun_family != AF_UNIX || !sun.sun_path[0])
      return strdup("");
   return strndup(sun.sun_path, sizeof(sun.sun_path));
}

static int
on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
   struct srv_bus *b = userdata;
   const sd_bus_error *e = sd_bus_message_get_error(reply);
   uint32_t answer = 0;
   if (e)
      util_err("D-Bus: cannot own %s on the %s bus: %s", b->name, b->which,
               e->message ? e->message : e->name);
   else if (sd_bus_message_read(reply, "u", &answer) < 0 || (answer != 1 && answer != 4))
      util_err("D-Bus: cannot own %s on the %s bus: %s", b->name, b->which,
               answer == 3 ? "another process owns it" : "the bus said no");
   else {
      util_notice("D-Bus: %s on the %s bus", b->name, b->which);
      b->server->bus_retry_ms = 0;
   }
   return 1;
}

void
srv_bus_start(struct srv_server *server)
{
   const char *want = server->cfg.bus;
   bool asked = want != NULL;
   if (want && !strcmp(want, "none"))
      return;
   if (!want)
      want = server->access.root ? "system" : "session";
   struct srv_bus *b = calloc(1, sizeof(*b));
   if (!b)
      return;
   b->server = server;
   for (unsigned i = 0; i < CALLERS; i++)
      b->callers[i].bus = b;
   const char *step = "connect";
   int r = daemon_bus_open(want, &b->bus);
   b->which = strdup(want);
   b->socket = socket_path_of(server);
   b->name = b->socket ? bus_name_for(b->socket) : NULL;
   if (r >= 0 && (!b->name || !b->which))
      r = -ENOMEM;
   if (r >= 0) {
      step = "filter calls";
      r = sd_bus_add_filter(b->bus, NULL, on_incoming, b);
   }
   if (r >= 0) {
      step = "offer " BUS_PATH;
      r = sd_bus_add_object_vtable(b->bus, NULL, BUS_PATH, BUS_INTERFACE, daemon_vtable, b);
   }
   if (r >= 0) {
      /* the bus answers through the loop: a slow bus never holds up the
       * start */
      step = "ask for the name";
      r = sd_bus_request_name_async(b->bus, NULL, b->name, 0, on_name, b);
   }
   if (r < 0) {
      /* the socket serves without the bus; say so as loud as it was asked */
      util_log(asked ? UTIL_LOG_ERR : UTIL_LOG_INFO,
               "D-Bus: cannot %s on the %s bus (%s): not on D-Bus", step, want, strerror(-r));
      sd_bus_flush_close_unref(b->bus);
      free(b->name);
      free(b->socket);
      free(b->which);
      free(b);
      return;
   }
   b->io = event_new(server->base, -1, 0, on_bus_event, b);
   b->timer = evtimer_new(server->base, on_bus_event, b);
   if (!b->io || !b->timer) {
      if (b->io)
         event_free(b->io);
      if (b->timer)
         event_free(b->timer);
      sd_bus_flush_close_unref(b->bus);
      free(b->name);
      free(b->socket);
      free(b->which);
      free(b);
      return;
   }
   server->bus = b;
   util_info("D-Bus: connected to the %s bus, asking for %s", want, b->name);
   bus_rearm(b);
}

void
srv_bus_stop(struct srv_server *server)
{
   struct srv_bus *b = server->bus;
   if (!b)
      return;
   server->bus = NULL;
   event_free(b->io);
   event_free(b->timer);
   for (unsigned i = 0; i < CALLERS; i++)
      forget_caller(&b->callers[i]);
   /* no flush: a bus that stops reading must not hold up the shutdown */
   sd_bus_close_unref(b->bus);
   free(b->name);
   free(b->socket);
   free(b->which);
   free(b);
}

static void
emit(struct srv_server *server, const char *signal, const char *types, ...)
{
   struct srv_bus *b = server->bus;
   if (!b)
      return;
   sd_bus_message *m = NULL;
   int r = sd_bus_message_new_signal(b->bus, &m, BUS_PATH, BUS_INTERFACE, signal);
   if (r >= 0) {
      va_list ap;
      va_start(ap, types);
      r = sd_bus_message_appendv(m, types, ap);
      va_end(ap);
   }
   if (r >= 0)
      r = sd_bus_send(b->bus, m, NULL);
   sd_bus_message_unref(m);
   if (r < 0)
      util_debug("D-Bus: cannot send %s: %s", signal, strerror(-r));
   bus_rearm(b);
}

void
srv_bus_client_connected(struct srv_server *server, const struct srv_client *c)
{
   emit(server, "ClientConnected", "tuus", c->id, (uint32_t)c->pid, (uint32_t)c->uid, c->name);
}

void
srv_bus_client_disconnected(struct srv_server *server, const struct srv_client *c)
{
   emit(server, "ClientDisconnected", "tuus", c->id, (uint32_t)c->pid, (uint32_t)c->uid,
        c->name);
}

void
srv_bus_client_faulted(struct srv_server *server, uint64_t client_id, const char *reason)
{
   emit(server, "ClientFaulted", "ts", client_id, reason);
}
