/* SPDX-License-Identifier: MIT */
/*
 * gpudctl's requests on a control connection: the daemon's view of its
 * clients and recent faults, and disconnecting a client.  A user sees and
 * acts on their own clients; root and the admin group on all.
 */
#include "srv_control.h"
#include "srv_access.h"
#include "srv_cache.h"
#include "srv_identity.h"
#include "util_dir.h"
#include "srv_spawn.h"
#include "srv_share.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon_sched.h"
#include "util_futex.h"
#include "util_log.h"
#include "wire_control.h"
#include "wire_gen.h"
#include "util_time.h"

static const char *
state_name(const struct srv_client *c)
{
   switch (c->state) {
   case SRV_CLIENT_HANDSHAKE:
      return "handshake";
   case SRV_CLIENT_WAITING:
      return "waiting";
   case SRV_CLIENT_SERVING:
      return c->worker && c->worker->goodbye[0] ? "closing" : "serving";
   default:
      return "control";
   }
}

/* The names the worker published, read whole (the sequence count the same,
 * and even, around the copy); NULL when they kept changing. */
static bool
read_names(const struct daemon_status_page *page, struct daemon_status_name *names)
{
   for (int tries = 0; tries < 8; tries++) {
      uint32_t seq = atomic_load_explicit(&page->names_seq, memory_order_acquire);
      if (seq & 1)
         continue;
      memcpy(names, (const void *)page->names, sizeof(page->names));
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&page->names_seq, memory_order_relaxed) == seq)
         return true;
   }
   return false;
}

static void
fill_names(Gpud__ClientInfo *info, const struct daemon_status_page *page)
{
   struct daemon_status_name names[DAEMON_STATUS_NAMES];
   if (!read_names(page, names))
      return;
   size_t n = 0;
   for (unsigned i = 0; i < DAEMON_STATUS_NAMES; i++)
      n += names[i].id != 0;
   if (!n)
      return;
   Gpud__ObjectName *objs = calloc(n, sizeof(*objs));
   Gpud__ObjectName **ptrs = calloc(n, sizeof(*ptrs));
   char *text = calloc(n, DAEMON_STATUS_NAME_SIZE);
   if (!objs || !ptrs || !text) {
      free(objs);
      free(ptrs);
      free(text);
      return;
   }
   size_t j = 0;
   for (unsigned i = 0; i < DAEMON_STATUS_NAMES; i++) {
      if (!names[i].id)
         continue;
      /* the worker wrote these: bounded, printable, or not shown */
      char *name = text + j * DAEMON_STATUS_NAME_SIZE;
      memcpy(name, names[i].name, DAEMON_STATUS_NAME_SIZE - 1);
      srv_clean_text(name);
      const char *type = wire_object_type_name((VkObjectType)names[i].type);
      gpud__object_name__init(&objs[j]);
      objs[j].id = names[i].id;
      objs[j].type = (char *)(type ? type : "object");
      objs[j].name = name;
      ptrs[j] = &objs[j];
      j++;
   }
   info->n_names = j;
   info->names = ptrs;
}

static void
free_names(Gpud__ClientInfo *info)
{
   if (!info->n_names)
      return;
   free(info->names[0]->name); /* the text of all */
   free(info->names[0]);       /* the array of all */
   free(info->names);
}

/* What fill_client allocates, freed by free_client. */
struct client_parts {
   Gpud__QueueInfo queues[DAEMON_STATUS_QUEUES];
   Gpud__QueueInfo *queue_ptrs[DAEMON_STATUS_QUEUES];
   Gpud__HeapUsage heaps[VK_MAX_MEMORY_HEAPS];
   Gpud__HeapUsage *heap_ptrs[VK_MAX_MEMORY_HEAPS];
   Gpud__ObjectCount types[DAEMON_STATUS_TYPES];
   Gpud__ObjectCount *type_ptrs[DAEMON_STATUS_TYPES];
   char *injected[3];
   char injected_text[3][48];
};

/* The queues the worker published: shown, never trusted. */
static void
fill_queues(Gpud__ClientInfo *info, struct client_parts *parts,
            const struct daemon_status_page *page, uint64_t now)
{
   for (unsigned i = 0; i < DAEMON_STATUS_QUEUES; i++) {
      const struct daemon_status_queue *q = &page->queues[i];
      uint64_t device = atomic_load_explicit(&q->device, memory_order_acquire);
      if (!device)
         continue;
      Gpud__QueueInfo *out = &parts->queues[info->n_queues];
      gpud__queue_info__init(out);
      out->device = device;
      out->family = atomic_load_explicit(&q->family, memory_order_relaxed);
      out->index = atomic_load_explicit(&q->index, memory_order_relaxed);
      out->submissions = atomic_load_explicit(&q->submissions, memory_order_relaxed);
      out->completed = atomic_load_explicit(&q->completed, memory_order_relaxed);
      if (out->completed > out->submissions)
         out->completed = out->submissions;
      out->in_flight = out->submissions - out->completed;
      out->busy_ns = atomic_load_explicit(&q->busy_ns, memory_order_relaxed);
      uint64_t since = atomic_load_explicit(&q->busy_since_ns, memory_order_relaxed);
      if (since && since < now)
         out->busy_ns += now - since;
      out->gpu_ns = atomic_load_explicit(&q->gpu_ns, memory_order_relaxed);
      info->gpu_ns += out->gpu_ns;
      parts->queue_ptrs[info->n_queues++] = out;
   }
   info->queues = parts->queue_ptrs;
}

static void
fill_types(Gpud__ClientInfo *info, struct client_parts *parts,
           const struct daemon_status_page *page)
{
   for (unsigned i = 0; i < WIRE_OBJECT_TYPE_COUNT && i < DAEMON_STATUS_TYPES; i++) {
      uint32_t n = atomic_load_explicit(&page->objects_by_type[i], memory_order_relaxed);
      const char *type = wire_object_type_name(wire_object_type_at(i));
      if (!n || n > (1u << 31) || !type)
         continue;
      Gpud__ObjectCount *out = &parts->types[info->n_object_types];
      gpud__object_count__init(out);
      out->type = (char *)type;
      out->count = n;
      parts->type_ptrs[info->n_object_types++] = out;
   }
   info->object_types = parts->type_ptrs;
}

/* Faults injected that the worker has not acted on yet. */
static void
fill_injected(Gpud__ClientInfo *info, struct client_parts *parts,
              const struct daemon_status_page *page)
{
   const struct daemon_status_inject *in = &page->inject;
   uint32_t fail = atomic_load_explicit(&in->fail_alloc, memory_order_relaxed);
   uint32_t delay = atomic_load_explicit(&in->delay_ms, memory_order_relaxed);
   size_t n = 0;
   if (atomic_load_explicit(&in->lose_device, memory_order_relaxed))
      snprintf(parts->injected_text[n++], sizeof(parts->injected_text[0]), "lose-device");
   if (fail)
      snprintf(parts->injected_text[n++], sizeof(parts->injected_text[0]), "fail-alloc %u",
               fail);
   if (delay)
      snprintf(parts->injected_text[n++], sizeof(parts->injected_text[0]),
               "delay-completions %u", delay);
   for (size_t i = 0; i < n; i++)
      parts->injected[i] = parts->injected_text[i];
   info->n_injected = n;
   info->injected = parts->injected;
}

/* The uid a worker runs as: its user's, else the base user's (--user), else
 * the daemon's own (a thread). */
static uid_t
worker_uid(const struct srv_worker *w)
{
   const struct srv_access *ac = &w->server->access;
   if (w->uid)
      return w->uid;
   return ac->switch_user && w->pid ? ac->worker_uid : geteuid();
}

static void
fill_client(Gpud__ClientInfo *info, struct client_parts *parts, const struct srv_client *c,
            uint64_t now)
{
   gpud__client_info__init(info);
   info->id = c->id;
   info->pid = (uint32_t)c->pid;
   info->uid = (uint32_t)c->uid;
   info->name = (char *)c->name;
   info->memory_bytes = c->memory;
   info->state = (char *)state_name(c);
   info->connected_ms = (now - c->connected_ns) / 1000000;
   const struct srv_server *server = c->server;
   for (uint32_t h = 0; h < server->n_heaps; h++) {
      if (!c->heap_memory[h])
         continue;
      Gpud__HeapUsage *u = &parts->heaps[info->n_heaps];
      gpud__heap_usage__init(u);
      u->heap = h;
      u->bytes = c->heap_memory[h];
      parts->heap_ptrs[info->n_heaps++] = u;
   }
   info->heaps = parts->heap_ptrs;
   const struct srv_worker *w = c->worker;
   if (w) {
      info->worker_pid = (uint32_t)w->pid;
      info->worker_uid = (uint32_t)worker_uid(w);
      info->worker_version = (char *)w->version;
      srv_share_fill(c->server, c, info);
      info->adopted = w->adopted;
      info->details_unknown = w->details_unknown;
      if (w->status) {
         /* the worker writes these: shown, never trusted */
         info->objects = atomic_load(&w->status->objects);
         info->commands = atomic_load(&w->status->commands);
         uint64_t since = atomic_load(&w->status->send_blocked_since_ns);
         if (since && since < now)
            info->send_blocked_ms = (now - since) / 1000000;
         fill_names(info, w->status);
         fill_queues(info, parts, w->status, now);
         fill_types(info, parts, w->status);
         fill_injected(info, parts, w->status);
      }
   }
}

/* A status and what it points to. */
struct srv_status_view {
   Gpud__StatusReply reply;
   Gpud__Limits limits;
   char replay_threads[16];
   Gpud__HeapInfo heaps[VK_MAX_MEMORY_HEAPS];
   Gpud__HeapInfo *heap_ptrs[VK_MAX_MEMORY_HEAPS];
   Gpud__FaultInfo faults[DAEMON_MAX_FAULTS];
   Gpud__FaultInfo *fault_ptrs[DAEMON_MAX_FAULTS];
   Gpud__ClientInfo *infos;
   Gpud__ClientInfo **info_ptrs;
   struct client_parts *parts;
   Gpud__CrashInfo *crashes;
   Gpud__CrashInfo **crash_ptrs;
};

struct srv_status_view *
srv_control_status(struct srv_server *server, const struct srv_client *viewer,
                    const Gpud__StatusReply **ret)
{
   struct srv_status_view *v = calloc(1, sizeof(*v));
   if (!v)
      return NULL;
   uint64_t now = util_now_ns();
   Gpud__StatusReply *reply = &v->reply;
   gpud__status_reply__init(reply);
   reply->device_name = server->device_name;
   reply->host_driver = server->host_driver;
   reply->device_uuid = server->device_uuid;
   reply->device_pci = server->device_pci;
   reply->render_node = server->render_node;
   reply->daemon_pid = (uint32_t)getpid();
   reply->isolation =
      (char *)(server->cfg.isolation == SRV_ISOLATION_THREAD ? "thread" : "process");
   const struct daemon_limits *l = &server->cfg.limits;
   Gpud__Limits *limits = &v->limits;
   gpud__limits__init(limits);
   limits->client_memory = l->client_memory == DAEMON_UNLIMITED ? 0 : l->client_memory;
   limits->uid_memory = l->uid_memory == DAEMON_UNLIMITED ? 0 : l->uid_memory;
   limits->client_objects = l->client_objects == DAEMON_UNLIMITED ? 0 : l->client_objects;
   limits->uid_connections = l->uid_connections;
   limits->max_clients = l->max_clients;
   limits->spare_workers = server->cfg.spare_workers;
   limits->restart_grace_ms = srv_restart_grace_ms(server);
   limits->fair_share = server->sched != NULL;
   limits->cache_user_bytes = l->cache_user_bytes == DAEMON_UNLIMITED ? 0 : l->cache_user_bytes;
   limits->cache_total_bytes = l->cache_total_bytes == DAEMON_UNLIMITED ? 0 : l->cache_total_bytes;
   limits->spirv = (char *)daemon_spirv_mode_name(server->cfg.spirv);
   static const char *const validate[] = {"off", "report", "strict"};
   limits->validate = (char *)validate[server->cfg.validate <= DAEMON_VALIDATE_STRICT
                                          ? server->cfg.validate
                                          : DAEMON_VALIDATE_OFF];
   if (server->cfg.replay_threads < 0)
      snprintf(v->replay_threads, sizeof(v->replay_threads), "auto");
   else
      snprintf(v->replay_threads, sizeof(v->replay_threads), "%d", server->cfg.replay_threads);
   limits->replay_threads = v->replay_threads;
   reply->limits = limits;
   reply->daemon_version = (char *)daemon_version;
   reply->uptime_ms = (now - server->start_ns) / 1000000;
   reply->cache_dir = (char *)srv_cache_root(server);
   reply->cache_state = (char *)srv_cache_state(server);
   reply->worker_identity = (char *)(srv_identity_on(server) ? "per-user" : "shared");
   reply->identity_state = (char *)srv_identity_state(server);
   Gpud__HeapInfo *heaps = v->heaps;
   for (uint32_t h = 0; h < server->n_heaps && h < VK_MAX_MEMORY_HEAPS; h++) {
      gpud__heap_info__init(&heaps[h]);
      heaps[h].heap = h;
      heaps[h].size_bytes = server->heap_size[h];
      heaps[h].device_local = server->heap_flags[h] & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
      v->heap_ptrs[h] = &heaps[h];
   }
   reply->heaps = v->heap_ptrs;
   reply->n_heaps = server->n_heaps;

   size_t n = 0;
   struct srv_client *c;
   util_list_for_each(c, &server->clients, link)
      n += c->state != SRV_CLIENT_CONTROL;
   v->infos = calloc(n ? n : 1, sizeof(*v->infos));
   v->info_ptrs = calloc(n ? n : 1, sizeof(*v->info_ptrs));
   v->parts = calloc(n ? n : 1, sizeof(*v->parts));
   size_t i = 0;
   util_list_for_each(c, &server->clients, link) {
      if (c->state == SRV_CLIENT_CONTROL || !v->infos || !v->info_ptrs || !v->parts)
         continue;
      if (!srv_access_may_see(viewer, c)) {
         reply->hidden_clients++;
         continue;
      }
      fill_client(&v->infos[i], &v->parts[i], c, now);
      reply->objects += v->infos[i].objects;
      reply->memory_bytes += v->infos[i].memory_bytes;
      for (uint32_t h = 0; h < server->n_heaps && h < VK_MAX_MEMORY_HEAPS; h++)
         heaps[h].used_bytes += c->heap_memory[h];
      v->info_ptrs[i] = &v->infos[i];
      i++;
   }
   reply->clients = v->info_ptrs;
   reply->n_clients = i;

   unsigned kept = server->n_faults < DAEMON_MAX_FAULTS ? server->n_faults : DAEMON_MAX_FAULTS;
   size_t nf = 0;
   for (unsigned k = server->n_faults - kept; k < server->n_faults; k++) {
      const struct srv_fault *f = &server->faults[k % DAEMON_MAX_FAULTS];
      if (!viewer->admin && f->uid != viewer->uid)
         continue;
      Gpud__FaultInfo *out = &v->faults[nf];
      gpud__fault_info__init(out);
      out->client_id = f->client_id;
      out->pid = (uint32_t)f->pid;
      out->uid = (uint32_t)f->uid;
      out->name = (char *)f->name;
      out->worker_pid = (uint32_t)f->worker_pid;
      out->reason = (char *)f->reason;
      out->age_ms = (now - f->time_ns) / 1000000;
      v->fault_ptrs[nf++] = out;
   }
   reply->faults = v->fault_ptrs;
   reply->n_faults = nf;

   /* programs backing off after crashes (a user sees their own) */
   size_t n_records = 0;
   const struct srv_crash_record *cr;
   util_list_for_each(cr, &server->crashes, link)
      n_records++;
   v->crashes = n_records ? calloc(n_records, sizeof(*v->crashes)) : NULL;
   v->crash_ptrs = n_records ? calloc(n_records, sizeof(*v->crash_ptrs)) : NULL;
   size_t nc = 0;
   util_list_for_each(cr, &server->crashes, link) {
      struct srv_crash_state st;
      srv_crash_state(server, cr, &st);
      if (!v->crashes || !v->crash_ptrs || !st.crashes ||
          (!viewer->admin && cr->uid != viewer->uid))
         continue;
      Gpud__CrashInfo *out = &v->crashes[nc];
      gpud__crash_info__init(out);
      out->uid = (uint32_t)cr->uid;
      out->name = (char *)cr->name;
      out->crashes = st.crashes;
      out->last_age_ms = (now - st.last_ns) / 1000000;
      out->backoff_ms = st.backoff_ms;
      out->wait_ms = st.not_before_ns > now ? (st.not_before_ns - now + 999999) / 1000000 : 0;
      out->refused = st.refused;
      v->crash_ptrs[nc++] = out;
   }
   reply->crashes = v->crash_ptrs;
   reply->n_crashes = nc;
   *ret = reply;
   return v;
}

void
srv_control_status_free(struct srv_status_view *v)
{
   if (!v)
      return;
   for (size_t k = 0; k < v->reply.n_clients; k++)
      free_names(&v->infos[k]);
   free(v->infos);
   free(v->info_ptrs);
   free(v->parts);
   free(v->crashes);
   free(v->crash_ptrs);
   free(v);
}

static void
status(struct srv_client *control)
{
   const Gpud__StatusReply *reply = NULL;
   struct srv_status_view *v = srv_control_status(control->server, control, &reply);
   Gpud__StatusReply empty = GPUD__STATUS_REPLY__INIT;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REPLY;
   m.status_reply = v ? (Gpud__StatusReply *)reply : &empty;
   srv_client_queue_control(control, &m);
   srv_control_status_free(v);
}

static struct srv_client *
find_client(struct srv_server *server, uint64_t id)
{
   struct srv_client *c;
   util_list_for_each(c, &server->clients, link) {
      if (c->id == id && c->state != SRV_CLIENT_CONTROL)
         return c;
   }
   return NULL;
}

int
srv_control_disconnect(struct srv_server *server, const struct srv_client *viewer,
                        uint64_t id, const char *via)
{
   struct srv_client *c = find_client(server, id);
   if (!c)
      return -ENOENT;
   if (!srv_access_may_see(viewer, c)) {
      srv_client_log(c, UTIL_LOG_WARNING,
                      "uid %u (pid %d) may not disconnect this client",
                      (unsigned)viewer->uid, (int)viewer->pid);
      return -EACCES;
   }
   srv_client_log(c, UTIL_LOG_NOTICE, "disconnected by uid %u (pid %d, %s)",
                   (unsigned)viewer->uid, (int)viewer->pid, via);
   if (c->worker)
      srv_kill_worker(c->worker, "disconnected by an administrator");
   else
      shutdown(c->fd, SHUT_RDWR);
   return 0;
}

static void
disconnect(struct srv_client *control, uint64_t id)
{
   Gpud__DisconnectClientReply dr = GPUD__DISCONNECT_CLIENT_REPLY__INIT;
   int r = srv_control_disconnect(control->server, control, id, "gpudctl");
   dr.found = r != -ENOENT;
   dr.denied = r == -EACCES;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REPLY;
   m.disconnect_client_reply = &dr;
   srv_client_queue_control(control, &m);
}

/* The ICD answers some completions itself while its completion pages do not
 * say hold (gpud_hold.c): a delay or a lost device is in effect once the
 * worker's thread that tells them has taken the request in.  That thread
 * does nothing else, so it answers within microseconds; one that does not
 * (a worker stopped in a debugger) is not waited for long. */
static void
wait_taken(struct daemon_status_inject *in, uint32_t seq)
{
   _Atomic uint32_t *taken = (_Atomic uint32_t *)&in->taken;
   uint64_t deadline = util_now_ns() + 100 * 1000000ull;
   for (;;) {
      uint32_t t = atomic_load(taken);
      uint64_t now = util_now_ns();
      if (!atomic_load(&in->watching) || (int32_t)(t - seq) >= 0 || now >= deadline)
         return;
      util_futex_wait(taken, t, deadline - now);
   }
}

/* gpudctl inject ID FAULT [VALUE]: written on the client's status page for
 * its worker (gpud_inject.c), or, for crash-worker, a SIGSEGV to the
 * worker as if its host driver had crashed. */
int
srv_control_inject(struct srv_server *server, const struct srv_client *viewer, uint64_t id,
                    const char *fault, uint64_t value, const char *via, const char **error)
{
   *error = NULL;
   struct srv_client *c = find_client(server, id);
   if (!c)
      return -ENOENT;
   if (!srv_access_may_see(viewer, c)) {
      srv_client_log(c, UTIL_LOG_WARNING,
                      "uid %u (pid %d) may not inject faults into this client",
                      (unsigned)viewer->uid, (int)viewer->pid);
      return -EACCES;
   }
   struct srv_worker *w = c->worker;
   if (!w || !w->status || c->state != SRV_CLIENT_SERVING) {
      *error = "the client has no worker yet";
      return -EINVAL;
   }
   struct daemon_status_inject *in = &w->status->inject;
   if (!strcmp(fault, "lose-device")) {
      atomic_store(&in->lose_device, 1);
   } else if (!strcmp(fault, "fail-alloc")) {
      if (!value || value > UINT32_MAX) {
         *error = "fail-alloc needs a count from 1 to 4294967295";
         return -EINVAL;
      }
      atomic_store(&in->fail_alloc, (uint32_t)value);
   } else if (!strcmp(fault, "delay-completions")) {
      if (value > 3600 * 1000) {
         *error = "delay-completions takes at most 3600000 ms (0 ends the delay)";
         return -EINVAL;
      }
      atomic_store(&in->delay_ms, (uint32_t)value);
   } else if (!strcmp(fault, "crash-worker")) {
      if (!w->pid) {
         *error = "crash-worker needs process isolation (this daemon runs clients on threads)";
         return -EINVAL;
      }
      if (w->pidfd >= 0)
         pidfd_send_signal(w->pidfd, SIGSEGV, NULL, 0); /* adopted: not a child */
      else
         kill(w->pid, SIGSEGV);
   } else {
      *error = "unknown fault (lose-device, fail-alloc N, delay-completions MS, crash-worker)";
      return -EINVAL;
   }
   /* (the worker's thread that tells the ICD sleeps on seq) */
   uint32_t seq = atomic_fetch_add(&in->seq, 1) + 1;
   util_futex_wake((_Atomic uint32_t *)&in->seq);
   if (!strcmp(fault, "delay-completions") || !strcmp(fault, "lose-device"))
      wait_taken(in, seq);
   srv_client_log(c, UTIL_LOG_NOTICE,
                   "fault injected by uid %u (pid %d, %s): %s %" PRIu64,
                   (unsigned)viewer->uid, (int)viewer->pid, via, fault, value);
   return 0;
}

static void
inject(struct srv_client *control, const Gpud__InjectRequest *req)
{
   Gpud__InjectReply ir = GPUD__INJECT_REPLY__INIT;
   const char *error = NULL;
   int r = srv_control_inject(control->server, control, req->client_id,
                               req->fault ? req->fault : "", req->value, "gpudctl", &error);
   ir.found = r != -ENOENT;
   ir.denied = r == -EACCES;
   ir.error = (char *)(error ? error : "");
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_INJECT_REPLY;
   m.inject_reply = &ir;
   srv_client_queue_control(control, &m);
}

/* gpudctl renice ID N: the client's nice level, so its share of the GPU.
 * Its own user may only lower its priority (raise N); root and the admin
 * group may set any. */
int
srv_control_renice(struct srv_server *server, const struct srv_client *viewer, uint64_t id,
                    int nice, const char *via, const char **error)
{
   *error = NULL;
   struct srv_client *c = find_client(server, id);
   if (!c)
      return -ENOENT;
   if (!srv_access_may_see(viewer, c)) {
      srv_client_log(c, UTIL_LOG_WARNING, "uid %u (pid %d) may not renice this client",
                      (unsigned)viewer->uid, (int)viewer->pid);
      return -EACCES;
   }
   if (c->state != SRV_CLIENT_SERVING || c->sched_slot < 0) {
      *error = server->sched ? "the client has no share yet (no worker)"
                             : "this daemon shares the GPU as the host driver does (no "
                               "schedule page)";
      return -EINVAL;
   }
   if (nice < DAEMON_NICE_MIN || nice > DAEMON_NICE_MAX) {
      *error = "a nice level goes from -20 to 19";
      return -EINVAL;
   }
   bool privileged = viewer->uid == 0 || viewer->admin;
   if (nice < c->nice && !privileged) {
      srv_client_log(c, UTIL_LOG_WARNING,
                      "uid %u (pid %d) may not raise this client's priority (nice %d to %d)",
                      (unsigned)viewer->uid, (int)viewer->pid, c->nice, nice);
      *error = "only root and the admin group may raise a client's priority";
      return -EACCES;
   }
   int was = c->nice;
   srv_share_renice(server, c, nice);
   srv_client_log(c, UTIL_LOG_NOTICE, "reniced from %d to %d by uid %u (pid %d, %s)", was, nice,
                   (unsigned)viewer->uid, (int)viewer->pid, via);
   return 0;
}

static void
renice(struct srv_client *control, const Gpud__ReniceRequest *req)
{
   Gpud__ReniceReply rr = GPUD__RENICE_REPLY__INIT;
   const char *error = NULL;
   int r = srv_control_renice(control->server, control, req->client_id, req->nice, "gpudctl",
                               &error);
   rr.found = r != -ENOENT;
   rr.denied = r == -EACCES;
   rr.error = (char *)(error ? error : "");
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_RENICE_REPLY;
   m.renice_reply = &rr;
   srv_client_queue_control(control, &m);
}

/* ---- gpudctl cache ------------------------------------------------------- */

struct srv_cache_view {
   Gpud__CacheReply reply;
   struct srv_cache_entry *entries;
   Gpud__CacheEntry *out;
   Gpud__CacheEntry **ptrs;
};

struct srv_cache_view *
srv_control_cache(struct srv_server *server, const struct srv_client *viewer, bool user_given,
                   uid_t uid, const char *program, bool clear, const char *via,
                   const Gpud__CacheReply **ret)
{
   struct srv_cache_view *v = calloc(1, sizeof(*v));
   if (!v)
      return NULL;
   Gpud__CacheReply *reply = &v->reply;
   gpud__cache_reply__init(reply);
   reply->cache_dir = (char *)srv_cache_root(server);
   reply->cache_state = (char *)srv_cache_state(server);
   const struct daemon_limits *l = &server->cfg.limits;
   reply->user_limit_bytes = l->cache_user_bytes == DAEMON_UNLIMITED ? 0 : l->cache_user_bytes;
   reply->total_limit_bytes = l->cache_total_bytes == DAEMON_UNLIMITED ? 0 : l->cache_total_bytes;
   *ret = reply;
   const bool privileged = viewer->uid == 0 || viewer->admin;
   if (user_given && uid != viewer->uid && !privileged) {
      reply->denied = true;
      reply->error = (char *)"only root and the admin group may see or clear another user's "
                             "cache";
      return v;
   }
   /* (a user sees their own; root and the admin group everyone's) */
   uid_t who = user_given ? uid : privileged ? (uid_t)-1 : viewer->uid;
   char name[64];
   util_file_name_part(program ? program : "", name, sizeof(name));
   const char *prog = program && program[0] ? name : NULL;
   if (clear) {
      uint64_t files = 0;
      int64_t removed = srv_cache_clear(server, who, prog, &files);
      if (removed < 0) {
         reply->error = (char *)"no cache is kept";
      } else {
         reply->removed_bytes = (uint64_t)removed;
         reply->removed_files = files;
         char user[24];
         snprintf(user, sizeof(user), "%u", (unsigned)who);
         util_notice("cache of %s%s%s%s cleared by uid %u (pid %d, %s): %" PRIu64
                     " files, %" PRIu64 " bytes",
                     who == (uid_t)-1 ? "every user" : "user ", who == (uid_t)-1 ? "" : user,
                     prog ? ", program " : "", prog ? prog : "", (unsigned)viewer->uid,
                     (int)viewer->pid, via, files, (uint64_t)removed);
      }
   }
   int n = srv_cache_list(server, who, prog, &v->entries);
   v->out = n > 0 ? calloc((size_t)n, sizeof(*v->out)) : NULL;
   v->ptrs = n > 0 ? calloc((size_t)n, sizeof(*v->ptrs)) : NULL;
   for (int i = 0; v->out && v->ptrs && i < n; i++) {
      const struct srv_cache_entry *e = &v->entries[i];
      Gpud__CacheEntry *o = &v->out[i];
      gpud__cache_entry__init(o);
      o->uid = (uint32_t)e->uid;
      o->program = (char *)e->program;
      o->bytes = e->bytes;
      o->files = e->files;
      o->last_use_s = e->last_use > 0 ? (uint64_t)e->last_use : 0;
      o->hits = e->hits;
      o->misses = e->misses;
      v->ptrs[reply->n_entries++] = o;
   }
   reply->entries = v->ptrs;
   return v;
}

void
srv_control_cache_free(struct srv_cache_view *v)
{
   if (!v)
      return;
   free(v->entries);
   free(v->out);
   free(v->ptrs);
   free(v);
}

static void
cache(struct srv_client *control, const Gpud__CacheRequest *req)
{
   const Gpud__CacheReply *reply = NULL;
   struct srv_cache_view *v =
      srv_control_cache(control->server, control, req->user_given, (uid_t)req->uid,
                         req->program, req->clear, "gpudctl", &reply);
   Gpud__CacheReply empty = GPUD__CACHE_REPLY__INIT;
   empty.error = (char *)"out of memory";
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_CACHE_REPLY;
   m.cache_reply = v ? (Gpud__CacheReply *)reply : &empty;
   srv_client_queue_control(control, &m);
   srv_control_cache_free(v);
}

int
srv_control_handle(struct srv_client *control, const void *data, size_t size)
{
   Gpud__ControlMessage *m = wire_control_unpack(data, size);
   int r = 0;
   switch (m ? m->msg_case : GPUD__CONTROL_MESSAGE__MSG__NOT_SET) {
   case GPUD__CONTROL_MESSAGE__MSG_STATUS_REQUEST:
      status(control);
      break;
   case GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REQUEST:
      disconnect(control, m->disconnect_client_request->client_id);
      break;
   case GPUD__CONTROL_MESSAGE__MSG_INJECT_REQUEST:
      inject(control, m->inject_request);
      break;
   case GPUD__CONTROL_MESSAGE__MSG_RENICE_REQUEST:
      renice(control, m->renice_request);
      break;
   case GPUD__CONTROL_MESSAGE__MSG_CACHE_REQUEST:
      cache(control, m->cache_request);
      break;
   case GPUD__CONTROL_MESSAGE__MSG_DISCONNECT:
      r = -ECONNRESET;
      break;
   default:
      srv_client_log(control, UTIL_LOG_ERR, "protocol error: bad control message");
      r = -EPROTO;
      break;
   }
   wire_control_free(m);
   return r;
}
