/* SPDX-License-Identifier: MIT */
/*
 * gpudctl's requests on a control connection: the daemon's view of its
 * clients and recent faults, and disconnecting a client.  A user sees and
 * acts on their own clients; root and the admin group on all.
 */
#include "gpud_server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util_log.h"
#include "wire_control.h"
#include "wire_gen.h"
#include "util_time.h"

static const char *
state_name(const struct gpud_client *c)
{
   switch (c->state) {
   case GPUD_CLIENT_HANDSHAKE:
      return "handshake";
   case GPUD_CLIENT_WAITING:
      return "waiting";
   case GPUD_CLIENT_SERVING:
      return c->worker && c->worker->goodbye[0] ? "closing" : "serving";
   default:
      return "control";
   }
}

/* The names the worker published, read whole (the sequence count the same,
 * and even, around the copy); NULL when they kept changing. */
static bool
read_names(const struct gpud_status_page *page, struct gpud_status_name *names)
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

/* Length of the UTF-8 character at s (RFC 3629: no overlong forms, no
 * surrogates); 0 when it is none, -1 when the string ends inside it. */
static int
utf8_char(const unsigned char *s)
{
   unsigned n;
   unsigned char lo = 0x80, hi = 0xbf;
   if (s[0] < 0x80)
      return 1;
   else if (s[0] >= 0xc2 && s[0] <= 0xdf)
      n = 2;
   else if (s[0] >= 0xe0 && s[0] <= 0xef)
      n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
   else if (s[0] >= 0xf0 && s[0] <= 0xf4)
      n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
   else
      return 0;
   for (unsigned i = 1; i < n; i++) {
      if (!s[i])
         return -1;
      if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
         return 0;
   }
   return (int)n;
}

/* A name the worker wrote, made fit to show: control characters and bytes
 * that are not UTF-8 become '?', and a character cut short at the end (the
 * status page's names are bounded) goes. */
static void
clean_name(char *name)
{
   unsigned char *p = (unsigned char *)name;
   while (*p) {
      int n = utf8_char(p);
      if (n < 0) {
         *p = 0;
         break;
      }
      if (n == 0 || *p < 0x20 || *p == 0x7f) {
         *p++ = '?';
         continue;
      }
      p += n;
   }
}

static void
fill_names(Gpud__ClientInfo *info, const struct gpud_status_page *page)
{
   struct gpud_status_name names[GPUD_STATUS_NAMES];
   if (!read_names(page, names))
      return;
   size_t n = 0;
   for (unsigned i = 0; i < GPUD_STATUS_NAMES; i++)
      n += names[i].id != 0;
   if (!n)
      return;
   Gpud__ObjectName *objs = calloc(n, sizeof(*objs));
   Gpud__ObjectName **ptrs = calloc(n, sizeof(*ptrs));
   char *text = calloc(n, GPUD_STATUS_NAME_SIZE);
   if (!objs || !ptrs || !text) {
      free(objs);
      free(ptrs);
      free(text);
      return;
   }
   size_t j = 0;
   for (unsigned i = 0; i < GPUD_STATUS_NAMES; i++) {
      if (!names[i].id)
         continue;
      /* the worker wrote these: bounded, printable, or not shown */
      char *name = text + j * GPUD_STATUS_NAME_SIZE;
      memcpy(name, names[i].name, GPUD_STATUS_NAME_SIZE - 1);
      clean_name(name);
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

static void
fill_client(Gpud__ClientInfo *info, const struct gpud_client *c, uint64_t now)
{
   gpud__client_info__init(info);
   info->id = c->id;
   info->pid = (uint32_t)c->pid;
   info->uid = (uint32_t)c->uid;
   info->name = (char *)c->name;
   info->memory_bytes = c->memory;
   info->state = (char *)state_name(c);
   info->connected_ms = (now - c->connected_ns) / 1000000;
   const struct gpud_worker *w = c->worker;
   if (w) {
      info->worker_pid = (uint32_t)w->pid;
      if (w->status) {
         /* the worker writes these: shown, never trusted */
         info->objects = atomic_load(&w->status->objects);
         info->commands = atomic_load(&w->status->commands);
         uint64_t since = atomic_load(&w->status->send_blocked_since_ns);
         if (since && since < now)
            info->send_blocked_ms = (now - since) / 1000000;
         fill_names(info, w->status);
      }
   }
}

static void
status(struct gpud_client *control)
{
   struct gpud_server *server = control->server;
   uint64_t now = util_now_ns();
   Gpud__StatusReply reply = GPUD__STATUS_REPLY__INIT;
   reply.device_name = server->device_name;
   reply.host_driver = server->host_driver;
   reply.daemon_pid = (uint32_t)getpid();
   reply.isolation =
      (char *)(server->cfg.isolation == GPUD_ISOLATION_THREAD ? "thread" : "process");
   const struct gpud_limits *l = &server->cfg.limits;
   Gpud__Limits limits = GPUD__LIMITS__INIT;
   limits.client_memory = l->client_memory == GPUD_UNLIMITED ? 0 : l->client_memory;
   limits.uid_memory = l->uid_memory == GPUD_UNLIMITED ? 0 : l->uid_memory;
   limits.client_objects = l->client_objects == GPUD_UNLIMITED ? 0 : l->client_objects;
   limits.uid_connections = l->uid_connections;
   limits.max_clients = l->max_clients;
   limits.spare_workers = server->cfg.spare_workers;
   static const char *const validate[] = {"off", "report", "strict"};
   limits.validate = (char *)validate[server->cfg.validate <= GPUD_VALIDATE_STRICT
                                         ? server->cfg.validate
                                         : GPUD_VALIDATE_OFF];
   reply.limits = &limits;

   size_t n = 0;
   struct gpud_client *c;
   util_list_for_each(c, &server->clients, link)
      n += c->state != GPUD_CLIENT_CONTROL;
   Gpud__ClientInfo *infos = calloc(n ? n : 1, sizeof(*infos));
   Gpud__ClientInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
   size_t i = 0;
   util_list_for_each(c, &server->clients, link) {
      if (c->state == GPUD_CLIENT_CONTROL || !infos || !ptrs)
         continue;
      if (!gpud_access_may_see(control, c)) {
         reply.hidden_clients++;
         continue;
      }
      fill_client(&infos[i], c, now);
      reply.objects += infos[i].objects;
      reply.memory_bytes += infos[i].memory_bytes;
      ptrs[i] = &infos[i];
      i++;
   }
   reply.clients = ptrs;
   reply.n_clients = i;

   Gpud__FaultInfo faults[GPUD_MAX_FAULTS];
   Gpud__FaultInfo *fault_ptrs[GPUD_MAX_FAULTS];
   unsigned kept = server->n_faults < GPUD_MAX_FAULTS ? server->n_faults : GPUD_MAX_FAULTS;
   size_t nf = 0;
   for (unsigned k = server->n_faults - kept; k < server->n_faults; k++) {
      const struct gpud_fault *f = &server->faults[k % GPUD_MAX_FAULTS];
      if (!control->admin && f->uid != control->uid)
         continue;
      gpud__fault_info__init(&faults[nf]);
      faults[nf].client_id = f->client_id;
      faults[nf].pid = (uint32_t)f->pid;
      faults[nf].uid = (uint32_t)f->uid;
      faults[nf].name = (char *)f->name;
      faults[nf].worker_pid = (uint32_t)f->worker_pid;
      faults[nf].reason = (char *)f->reason;
      faults[nf].age_ms = (now - f->time_ns) / 1000000;
      fault_ptrs[nf] = &faults[nf];
      nf++;
   }
   reply.faults = fault_ptrs;
   reply.n_faults = nf;

   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REPLY;
   m.status_reply = &reply;
   gpud_server_queue_control(control, &m);
   for (size_t k = 0; k < i; k++)
      free_names(&infos[k]);
   free(infos);
   free(ptrs);
}

static void
disconnect(struct gpud_client *control, uint64_t id)
{
   struct gpud_server *server = control->server;
   Gpud__DisconnectClientReply dr = GPUD__DISCONNECT_CLIENT_REPLY__INIT;
   struct gpud_client *c;
   util_list_for_each(c, &server->clients, link) {
      if (c->id != id || c->state == GPUD_CLIENT_CONTROL)
         continue;
      dr.found = true;
      if (!gpud_access_may_see(control, c)) {
         dr.denied = true;
         gpud_server_client_log(c, UTIL_LOG_WARNING,
                                "uid %u (pid %d) may not disconnect this client",
                                (unsigned)control->uid, (int)control->pid);
         break;
      }
      gpud_server_client_log(c, UTIL_LOG_NOTICE, "disconnected by uid %u (pid %d, gpudctl)",
                             (unsigned)control->uid, (int)control->pid);
      if (c->worker)
         gpud_kill_worker(c->worker, "disconnected by an administrator");
      else
         shutdown(c->fd, SHUT_RDWR);
      break;
   }
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REPLY;
   m.disconnect_client_reply = &dr;
   gpud_server_queue_control(control, &m);
}

int
gpud_control_handle(struct gpud_client *control, const void *data, size_t size)
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
   case GPUD__CONTROL_MESSAGE__MSG_DISCONNECT:
      r = -ECONNRESET;
      break;
   default:
      gpud_server_client_log(control, UTIL_LOG_ERR, "protocol error: bad control message");
      r = -EPROTO;
      break;
   }
   wire_control_free(m);
   return r;
}
