/* SPDX-License-Identifier: MIT */
/*
 * The server's event loop: connections from accept to handshake to worker,
 * workers from start to end, the accounting, signals and systemd.
 *
 * Nothing here ever waits for a peer: every socket is non-blocking, reads
 * take one packet at a time (a peer cannot make the server wait for the
 * rest of a message), and writes go through a queue drained when the
 * socket has room.  A peer that lets its queue grow past
 * DAEMON_MAX_SERVER_QUEUE is dropped.
 */
#include "srv_server.h"
#include "srv_access.h"
#include "srv_adopt.h"
#include "srv_bus.h"
#include "srv_control.h"
#include "srv_cache.h"
#include "srv_identity.h"
#include "srv_share.h"
#include "srv_spawn.h"
#include "gpud_worker.h"
#include "daemon_sched.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "util_dir.h"
#include "util_fd.h"
#include "util_log.h"
#include "util_thread.h"
#include "util_memfd.h"
#include "wire_control.h"
#include "wire_gen.h"
#include "util_time.h"

#define MAX_STARTING 4            /* workers starting at once */
#define ACCEPT_BACKOFF_MS 250     /* after accept() ran out of fds */
#define SPAWN_BACKOFF_MS 1000     /* after workers failed to start */
#define KILL_GRACE_MS 2000        /* reaping killed workers at shutdown */

/* Starts (or restarts) a timer to fire in ms milliseconds. */
static void
timer_in(struct event *timer, uint32_t ms)
{
   struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000};
   evtimer_add(timer, &tv);
}

static void ensure_workers(struct srv_server *server);
static void worker_ended(struct srv_worker *worker, int wstatus, bool reaped);
static void check_stopped(struct srv_server *server);

/* ---- fds peers sent ------------------------------------------------------ */

/* Closing an fd can block for as long as whoever serves it likes (a file on
 * the sender's own FUSE mount): fds that peers send are closed on a thread
 * of their own, never in the loop. */
static void *
closer_thread(void *data)
{
   int fd = (int)(intptr_t)data;
   for (;;) {
      int victim;
      ssize_t n = read(fd, &victim, sizeof(victim));
      if (n == sizeof(victim)) {
         close(victim);
         continue;
      }
      if (n < 0 && errno == EINTR)
         continue;
      break; /* the server closed its end */
   }
   close(fd);
   return NULL;
}

static int
closer_start(struct srv_server *server)
{
   int p[2];
   if (pipe2(p, O_CLOEXEC) < 0)
      return -errno;
   fcntl(p[1], F_SETFL, O_NONBLOCK);
   int r = util_thread_start_detached(closer_thread, (void *)(intptr_t)p[0]);
   if (r) {
      close(p[0]);
      close(p[1]);
      return -r;
   }
   server->closer_fd = p[1];
   return 0;
}

static void
reader_init(struct srv_server *server, struct util_msg_reader *reader)
{
   util_msg_reader_init(reader, UTIL_PACKET_MAX_PAYLOAD);
   reader->close_fd = srv_server_discard_fd;
   reader->close_data = server;
}

/* ---- clients --------------------------------------------------------------- */

static void
client_free(struct srv_client *client)
{
   struct srv_server *server = client->server;
   if (client->state == SRV_CLIENT_WAITING || client->state == SRV_CLIENT_SERVING)
      srv_bus_client_disconnected(server, client);
   if (client->worker)
      client->worker->client = NULL;
   srv_share_release(server, client);
   if (client->read_ev)
      event_free(client->read_ev);
   if (client->write_ev)
      event_free(client->write_ev);
   if (client->timer)
      event_free(client->timer);
   util_msg_queue_finish(&client->out);
   util_msg_reader_finish(&client->reader);
   util_fd_close(&client->fd);
   if (client->account) {
      client->account->connections--;
      client->account->memory -= client->memory;
      srv_account_put(server, client->account);
   }
   util_list_remove(&client->link);
   server->n_clients--;
   free(client);
   /* an fd is free again: accept if accept() had run out */
   if (server->accept_retry && evtimer_pending(server->accept_retry, NULL)) {
      evtimer_del(server->accept_retry);
      event_add(server->accept_ev, NULL);
   }
   check_stopped(server);
}

static void
on_client_write(evutil_socket_t fd, short what, void *data)
{
   struct srv_client *client = data;
   int r = util_msg_queue_flush(client->fd, &client->out);
   if (r == -EAGAIN)
      return;
   event_del(client->write_ev);
   if (r < 0 && client->state != SRV_CLIENT_SERVING)
      client_free(client);
}

/* Tells the client why it is being let go (best effort: it never waits). */
static void
send_disconnect(struct srv_client *client, const char *reason)
{
   Gpud__ControlMessage m;
   Gpud__Disconnect d;
   wire_control_disconnect(&m, &d, reason);
   srv_client_queue_control(client, &m);
}

static void
refuse(struct srv_client *client, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
refuse(struct srv_client *client, const char *fmt, ...)
{
   char reason[512];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(reason, sizeof(reason), fmt, ap);
   va_end(ap);
   srv_client_log(client, UTIL_LOG_ERR, "refused: %s", reason);
   send_disconnect(client, reason);
   /* Closing with unread input would reset the connection, and the client
    * would read the reset instead of the reason: read what came. */
   for (int i = 0; i < 4; i++) {
      struct util_msg msg;
      if (util_msg_recv_packet(client->fd, &client->reader, &msg) < 0)
         break;
      srv_server_discard_fds(client->server, &msg);
   }
   client_free(client);
}

static void on_client_read(evutil_socket_t fd, short what, void *data);
static void on_client_timer(evutil_socket_t fd, short what, void *data);

/* The client's events on the loop and its user's account (counted);
 * false when one is missing (client_free lets go of the rest). */
static bool
client_watch(struct srv_server *server, struct srv_client *client)
{
   client->read_ev =
      event_new(server->base, client->fd, EV_READ | EV_PERSIST, on_client_read, client);
   client->write_ev =
      event_new(server->base, client->fd, EV_WRITE | EV_PERSIST, on_client_write, client);
   client->timer = evtimer_new(server->base, on_client_timer, client);
   client->account = srv_account_get(server, client->uid);
   if (client->account)
      client->account->connections++;
   return client->read_ev && client->write_ev && client->timer && client->account;
}

static struct srv_client *
client_new(struct srv_server *server, int fd)
{
   struct srv_client *client = calloc(1, sizeof(*client));
   if (!client) {
      close(fd);
      return NULL;
   }
   client->server = server;
   client->fd = fd;
   client->sched_slot = -1;
   client->id = ++server->next_client_id;
   srv_adopt_note_id(server, client->id);
   client->connected_ns = util_now_ns();
   util_msg_queue_init(&client->out);
   reader_init(server, &client->reader);
   util_list_add_tail(&server->clients, &client->link);
   server->n_clients++;
   struct ucred cred;
   if (util_peer_cred(fd, &cred) < 0) {
      /* a peer nobody can name is nobody's to serve */
      util_fd_close(&client->fd);
      util_list_remove(&client->link);
      server->n_clients--;
      util_msg_queue_finish(&client->out);
      util_msg_reader_finish(&client->reader);
      free(client);
      return NULL;
   }
   client->pid = cred.pid;
   client->uid = cred.uid;
   if (!client_watch(server, client)) {
      client_free(client);
      return NULL;
   }

   char reason[256];
   bool admin = false;
   if (!srv_access_allowed(server, fd, cred.uid, cred.gid, reason, sizeof(reason), &admin)) {
      refuse(client, "%s", reason);
      return NULL;
   }
   client->admin = admin;
   if (client->account->connections > server->cfg.limits.uid_connections) {
      refuse(client, "uid %u has %u connections, the most one user may have",
             (unsigned)cred.uid, server->cfg.limits.uid_connections);
      return NULL;
   }
   if (server->n_clients > server->cfg.limits.max_clients) {
      refuse(client, "the daemon serves %u connections, its most",
             server->cfg.limits.max_clients);
      return NULL;
   }
   event_add(client->read_ev, NULL);
   timer_in(client->timer, server->cfg.limits.handshake_timeout_ms);
   return client;
}

/* ---- crashes -------------------------------------------------------------- */

static void
record_fault(struct srv_server *server, struct srv_client *client, pid_t worker_pid,
             const char *reason, bool crash)
{
   struct srv_fault *f = &server->faults[server->n_faults++ % DAEMON_MAX_FAULTS];
   f->time_ns = util_now_ns();
   f->client_id = client->id;
   f->pid = client->pid;
   f->uid = client->uid;
   snprintf(f->name, sizeof(f->name), "%s", client->name);
   f->worker_pid = worker_pid;
   snprintf(f->reason, sizeof(f->reason), "%s", reason);
   srv_clean_text(f->reason);
   srv_clean_text(f->name);
   srv_bus_client_faulted(server, client->id, f->reason);
   if (!crash)
      return;
   struct srv_crash_record *c =
      srv_crash_record_find(server, client->uid, client->name, true);
   if (c) {
      if (c->count >= 8)
         memmove(c->times_ns, c->times_ns + 1, sizeof(c->times_ns[0]) * 7);
      c->times_ns[c->count < 8 ? c->count : 7] = f->time_ns;
      c->count++;
   }
}

/* ---- the handshake ---------------------------------------------------------- */

static void
welcome(struct srv_client *client)
{
   struct srv_server *server = client->server;
   Gpud__Welcome welcome = GPUD__WELCOME__INIT;
   welcome.daemon_version = (char *)daemon_version;
   welcome.device_name = server->device_name;
   welcome.host_driver = server->host_driver;
   welcome.client_id = client->id;
   /* the ICD creates without waiting while well inside it */
   welcome.max_objects = server->cfg.limits.client_objects;
   Gpud__ControlMessage w = GPUD__CONTROL_MESSAGE__INIT;
   w.msg_case = GPUD__CONTROL_MESSAGE__MSG_WELCOME;
   w.welcome = &welcome;
   srv_client_queue_control(client, &w);
}

/* Returns false when the client was refused (and freed). */
static bool
check_hello(struct srv_client *client, const Gpud__Hello *hello)
{
   struct srv_server *server = client->server;
   if (hello->client_name && hello->client_name[0]) {
      /* keep what is printable */
      size_t n = 0;
      for (const char *c = hello->client_name; *c && n < sizeof(client->name) - 1; c++)
         client->name[n++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
      client->name[n] = '\0';
   }
   if (hello->protocol_version != WIRE_PROTOCOL_VERSION) {
      refuse(client, "protocol version mismatch: client speaks %u, daemon speaks %u",
             hello->protocol_version, WIRE_PROTOCOL_VERSION);
      return false;
   }
   /* the application's own nice level: only lower priorities count */
   if (hello->nice > 0)
      client->asked_nice = hello->nice > DAEMON_NICE_MAX ? DAEMON_NICE_MAX : hello->nice;
   if (hello->role != GPUD__ROLE__ROLE_CONTROL && hello->role != GPUD__ROLE__ROLE_VULKAN) {
      refuse(client, "unknown role %d", hello->role);
      return false;
   }
   if (hello->role == GPUD__ROLE__ROLE_VULKAN &&
       hello->command_table_hash != WIRE_COMMAND_TABLE_HASH) {
      refuse(client, "command table mismatch: client %016" PRIx64 " (vk.xml %u), daemon %016llx "
             "(vk.xml %u); install matching gpud and ICD builds",
             hello->command_table_hash, hello->vk_header_version, WIRE_COMMAND_TABLE_HASH,
             WIRE_VK_HEADER_VERSION);
      return false;
   }
   struct srv_crash_record *c =
      hello->role == GPUD__ROLE__ROLE_VULKAN
         ? srv_crash_record_find(server, client->uid, client->name, false)
         : NULL;
   if (c) {
      struct srv_crash_state st;
      srv_crash_state(server, c, &st);
      uint64_t now = util_now_ns();
      if (st.not_before_ns > now) {
         client->not_before_ns = st.not_before_ns;
         srv_client_log(client, UTIL_LOG_NOTICE,
                         "its workers crashed %u times in the last %u s: its worker "
                         "starts in %" PRIu64 " ms (back-off %" PRIu64 " ms)",
                         st.crashes, server->cfg.limits.crash_cooldown_ms / 1000,
                         (st.not_before_ns - now + 999999) / 1000000, st.backoff_ms);
      }
      if (st.refused) {
         uint64_t until =
            st.last_ns + (uint64_t)server->cfg.limits.crash_cooldown_ms * 1000000ull;
         refuse(client, "its workers crashed %u times in the last %u s; refused for %" PRIu64
                " s more",
                st.crashes, server->cfg.limits.crash_cooldown_ms / 1000,
                (uint64_t)((until - now) / 1000000000ull + 1));
         return false;
      }
   }
   return true;
}

static void
handle_hello(struct srv_client *client, const struct util_msg *msg)
{
   struct srv_server *server = client->server;
   if (msg->n_fds) {
      refuse(client, "file descriptors in the handshake");
      return;
   }
   Gpud__ControlMessage *m =
      msg->type == UTIL_MSG_CONTROL ? wire_control_unpack(msg->data, msg->size) : NULL;
   if (!m || m->msg_case != GPUD__CONTROL_MESSAGE__MSG_HELLO) {
      wire_control_free(m);
      refuse(client, "the first message is not a Hello");
      return;
   }
   bool ok = check_hello(client, m->hello);
   bool control = ok && m->hello->role == GPUD__ROLE__ROLE_CONTROL;
   wire_control_free(m);
   if (!ok)
      return;
   evtimer_del(client->timer);
   welcome(client);
   if (control) {
      client->state = SRV_CLIENT_CONTROL;
      srv_client_log(client, UTIL_LOG_DEBUG, "connected (control)");
      return;
   }
   /* From here the client's stream is its worker's to read. */
   event_del(client->read_ev);
   client->state = SRV_CLIENT_WAITING;
   srv_client_log(client, UTIL_LOG_INFO, "connected");
   srv_bus_client_connected(server, client);
   /* a client waiting out its program's back-off has that time more */
   uint64_t now = util_now_ns();
   uint64_t backoff_ms =
      client->not_before_ns > now ? (client->not_before_ns - now) / 1000000 : 0;
   timer_in(client->timer, server->cfg.limits.start_timeout_ms + (uint32_t)backoff_ms);
   ensure_workers(server);
}

static void
on_client_read(evutil_socket_t fd, short what, void *data)
{
   struct srv_client *client = data;
   struct srv_server *server = client->server; /* the client may go */
   struct util_msg msg;
   int r = util_msg_recv_packet(client->fd, &client->reader, &msg);
   if (r == -EAGAIN)
      return;
   if (r < 0) {
      if (r != -ECONNRESET && client->state == SRV_CLIENT_HANDSHAKE)
         refuse(client, "%s",
                r == -EPROTO ? "malformed or oversized handshake" : strerror(-r));
      else
         client_free(client);
      return;
   }
   if (client->state == SRV_CLIENT_HANDSHAKE) {
      handle_hello(client, &msg);
      srv_server_discard_fds(server, &msg);
      return;
   }
   /* a control connection */
   if (msg.n_fds) {
      srv_server_discard_fds(server, &msg);
      srv_client_log(client, UTIL_LOG_ERR, "protocol error: unexpected file descriptors");
      client_free(client);
      return;
   }
   if (msg.type != UTIL_MSG_CONTROL) {
      srv_client_log(client, UTIL_LOG_ERR,
                      "protocol error: commands on a control connection");
      send_disconnect(client, "commands on a control connection");
      client_free(client);
      return;
   }
   if (srv_control_handle(client, msg.data, msg.size) < 0)
      client_free(client);
}

static void
on_client_timer(evutil_socket_t fd, short what, void *data)
{
   struct srv_client *client = data;
   if (client->state == SRV_CLIENT_HANDSHAKE)
      refuse(client, "no Hello within %u ms", client->server->cfg.limits.handshake_timeout_ms);
   else if (client->state == SRV_CLIENT_WAITING)
      refuse(client, "no worker could be started for it within %u ms",
             client->server->cfg.limits.start_timeout_ms);
}

/* ---- workers -------------------------------------------------------------- */

static void
worker_free(struct srv_worker *worker)
{
   struct srv_server *server = worker->server;
   if (worker->state == SRV_WORKER_STARTING)
      server->n_starting--;
   if (worker->client)
      worker->client->worker = NULL;
   if (worker->read_ev)
      event_free(worker->read_ev);
   if (worker->write_ev)
      event_free(worker->write_ev);
   if (worker->timer)
      event_free(worker->timer);
   util_msg_queue_finish(&worker->out);
   util_msg_reader_finish(&worker->reader);
   util_fd_close(&worker->fd);
   if (worker->served && worker->status) {
      /* its pipelines, found in its user's cache and not */
      const struct daemon_status_page *page = worker->status;
      srv_cache_count(server, worker->served_uid, worker->served_program,
                       atomic_load(&page->pipelines_cached),
                       atomic_load(&page->pipelines_compiled));
   }
   if (worker->served && !server->stopping)
      srv_cache_trim_soon(server);
   if (worker->status)
      munmap(worker->status, DAEMON_STATUS_PAGE_SIZE);
   util_fd_close(&worker->status_fd);
   util_fd_close(&worker->pidfd);
   util_list_remove(&worker->link);
   free(worker);
}

static void
worker_queue(struct srv_worker *worker, const Gpud__WorkerMessage *m, const int *fds,
             unsigned n_fds)
{
   size_t size;
   void *buf = wire_worker_pack(m, &size);
   int r = buf ? util_msg_queue_push(&worker->out, UTIL_MSG_CONTROL, buf, size, fds, n_fds)
               : -ENOMEM;
   free(buf);
   if (r < 0 || worker->out.bytes > DAEMON_MAX_SERVER_QUEUE) {
      srv_kill_worker(worker, "its control channel broke down");
      return;
   }
   r = util_msg_queue_flush(worker->fd, &worker->out);
   if (r == -EAGAIN)
      event_add(worker->write_ev, NULL);
}

static void
on_worker_write(evutil_socket_t fd, short what, void *data)
{
   struct srv_worker *worker = data;
   int r = util_msg_queue_flush(worker->fd, &worker->out);
   if (r != -EAGAIN)
      event_del(worker->write_ev);
}

static VkResult
heap_full_result(struct srv_server *server, uint32_t heap)
{
   return (server->heap_flags[heap] & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
             ? VK_ERROR_OUT_OF_DEVICE_MEMORY
             : VK_ERROR_OUT_OF_HOST_MEMORY;
}

static uint64_t
limit_or_heaps(struct srv_server *server, uint64_t limit)
{
   return limit ? limit : server->total_heap;
}

/* What is left under a limit; none once it is reached or passed (a reload
 * lowered it, or workers adopted after a restart brought more). */
static uint64_t
room_under(uint64_t limit, uint64_t used)
{
   return limit > used ? limit - used : 0;
}

static VkResult
reserve(struct srv_worker *worker, uint32_t heap, uint64_t bytes)
{
   struct srv_server *server = worker->server;
   struct srv_client *client = worker->client;
   if (!client || heap >= server->n_heaps)
      return VK_ERROR_OUT_OF_DEVICE_MEMORY;
   const struct daemon_limits *l = &server->cfg.limits;
   const char *over = NULL;
   if (bytes > room_under(server->heap_size[heap], client->heap_memory[heap]))
      over = "the heap's size";
   else if (bytes > room_under(limit_or_heaps(server, l->client_memory), client->memory))
      over = "the client's memory limit";
   else if (bytes > room_under(limit_or_heaps(server, l->uid_memory), client->account->memory))
      over = "the user's memory limit";
   if (over) {
      srv_client_log(client, UTIL_LOG_INFO,
                      "allocation of %" PRIu64 " bytes from heap %u refused: over %s",
                      bytes, heap, over);
      return heap_full_result(server, heap);
   }
   client->heap_memory[heap] += bytes;
   client->memory += bytes;
   client->account->memory += bytes;
   return VK_SUCCESS;
}

/* What the worker's client holds of each heap, and what it may hold in all
 * (VK_EXT_memory_budget's usage and budget). */
static void
budget(struct srv_worker *worker, uint64_t *usage, uint64_t *total)
{
   struct srv_server *server = worker->server;
   struct srv_client *client = worker->client;
   const struct daemon_limits *l = &server->cfg.limits;
   for (uint32_t h = 0; h < server->n_heaps; h++) {
      usage[h] = client ? client->heap_memory[h] : 0;
      uint64_t more = room_under(server->heap_size[h], usage[h]);
      if (client) {
         more = UTIL_MIN(more, room_under(limit_or_heaps(server, l->client_memory),
                                          client->memory));
         more = UTIL_MIN(more, room_under(limit_or_heaps(server, l->uid_memory),
                                          client->account->memory));
      }
      total[h] = usage[h] + more;
   }
}

static void
release(struct srv_worker *worker, uint32_t heap, uint64_t bytes)
{
   struct srv_client *client = worker->client;
   if (!client || heap >= worker->server->n_heaps)
      return;
   /* never more than was granted, whatever the worker says */
   if (bytes > client->heap_memory[heap])
      bytes = client->heap_memory[heap];
   client->heap_memory[heap] -= bytes;
   client->memory -= bytes;
   client->account->memory -= bytes;
}

/* The worker serves client from now on (for the caches' counts). */
static void
worker_serves(struct srv_worker *worker, const struct srv_client *client)
{
   worker->served = true;
   worker->served_uid = client->uid;
   util_file_name_part(client->name, worker->served_program, sizeof(worker->served_program));
   if (!worker->served_program[0])
      snprintf(worker->served_program, sizeof(worker->served_program), "_");
}

/* The identity a worker takes for its client (a uid of the client user's
 * workers, in the groups of the GPU's nodes) and its user's cache
 * directory; false: the client is refused (why says why). */
static bool
worker_identity(struct srv_worker *worker, struct srv_client *client, gid_t *groups,
                size_t *n_groups, char *cache, size_t cache_size, const char **why)
{
   struct srv_server *server = worker->server;
   const struct srv_access *ac = &server->access;
   worker->uid = 0;
   *n_groups = 0;
   if (worker->can_become) {
      int r = srv_identity_for(server, client->uid, &worker->uid);
      if (r < 0) {
         *why = r == -EPERM ? "its uid is one gpud gives its workers"
                            : "gpud has no uid left for its user's workers (--worker-uids)";
         return false;
      }
      /* the base user's groups (of the GPU's nodes), not its own group */
      for (int i = 0; i < ac->n_worker_groups && *n_groups < 32; i++) {
         if (ac->worker_groups[i] != ac->worker_gid)
            groups[(*n_groups)++] = ac->worker_groups[i];
      }
   }
   uid_t owner = worker->uid ? worker->uid
                 : ac->switch_user && worker->pid ? ac->worker_uid
                                                  : geteuid();
   gid_t group = worker->uid ? (gid_t)worker->uid
                 : ac->switch_user && worker->pid ? ac->worker_gid
                                                  : getegid();
   if (srv_cache_user_dir(server, client->uid, owner, group, cache, cache_size) < 0)
      cache[0] = '\0';
   return true;
}

static void
assign(struct srv_worker *worker, struct srv_client *client)
{
   struct srv_server *server = worker->server;
   gid_t groups[32];
   size_t n_groups;
   char cache[1024];
   const char *why = NULL;
   if (!worker_identity(worker, client, groups, &n_groups, cache, sizeof(cache), &why)) {
      refuse(client, "%s", why);
      return;
   }
   int status_fd = -1;
   void *page = MAP_FAILED;
   if (util_memfd_create("gpud-status", DAEMON_STATUS_PAGE_SIZE, &status_fd) == 0)
      page = mmap(NULL, DAEMON_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, status_fd, 0);
   if (page == MAP_FAILED) {
      util_fd_close(&status_fd);
      refuse(client, "out of memory");
      return;
   }
   atomic_store(&((struct daemon_status_page *)page)->layout, DAEMON_STATUS_LAYOUT);
   /* a worker that outlives this server: a later one adopts it */
   uint8_t token[32];
   int adopt_fd = -1;
   int r = srv_adopt_prepare(worker, client, token, &adopt_fd);
   if (r < 0)
      srv_client_log(client, UTIL_LOG_WARNING,
                      "no record for a later server (%s): its worker ends with this one",
                      strerror(-r));
   worker->status = page;
   worker->status_fd = status_fd;
   worker->state = SRV_WORKER_BUSY;
   worker_serves(worker, client);
   worker->client = client;
   client->worker = worker;
   client->state = SRV_CLIENT_SERVING;
   evtimer_del(client->timer);

   const struct daemon_limits *l = &server->cfg.limits;
   Gpud__WorkerAssign a = GPUD__WORKER_ASSIGN__INIT;
   a.client_id = client->id;
   a.pid = (uint32_t)client->pid;
   a.uid = (uint32_t)client->uid;
   a.name = client->name;
   a.max_objects = l->client_objects;
   a.send_timeout_ms = l->send_timeout_ms;
   a.log_burst = l->log_burst;
   a.log_per_second = l->log_per_second;
   if (server->cfg.replay_threads >= 0) {
      a.replay_case = GPUD__WORKER_ASSIGN__REPLAY_REPLAY_THREADS;
      a.replay_threads = (uint32_t)server->cfg.replay_threads;
   }
   uint64_t usage[VK_MAX_MEMORY_HEAPS], total[VK_MAX_MEMORY_HEAPS];
   budget(worker, usage, total);
   a.heap_budget = total;
   a.n_heap_budget = server->n_heaps;
   a.worker_uid = (uint32_t)worker->uid;
   a.worker_gid = (uint32_t)worker->uid;
   uint32_t groups32[32];
   for (size_t i = 0; i < n_groups; i++)
      groups32[i] = (uint32_t)groups[i];
   a.worker_groups = groups32;
   a.n_worker_groups = n_groups;
   a.cache_dir = cache;
   int fds[4] = {client->fd, status_fd};
   unsigned n_fds = 2;
   if (srv_share_take(server, client) == 0) {
      a.scheduled = true;
      a.sched_slot = (uint32_t)client->sched_slot;
      fds[n_fds++] = server->sched_fd;
   }
   if (adopt_fd >= 0) {
      a.adopt_token.data = token;
      a.adopt_token.len = sizeof(token);
      fds[n_fds++] = adopt_fd;
   }
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_ASSIGN;
   m.assign = &a;
   worker_queue(worker, &m, fds, n_fds);
   util_fd_close(&adopt_fd); /* the worker's now */
   if (worker->pid)
      srv_client_log(client, UTIL_LOG_DEBUG, "served by worker %d", (int)worker->pid);
}

static void
worker_ready(struct srv_worker *worker, const Gpud__WorkerReady *ready)
{
   struct srv_server *server = worker->server;
   if (worker->state != SRV_WORKER_STARTING) {
      srv_kill_worker(worker, "it broke the worker protocol");
      return;
   }
   server->n_starting--;
   worker->state = SRV_WORKER_SPARE;
   evtimer_del(worker->timer);
   snprintf(worker->version, sizeof(worker->version), "%s", ready->version ? ready->version : "");
   srv_clean_text(worker->version);
   worker->control_version = ready->control_version;
   if (!server->manifest) {
      /* the driver the first worker picked: every later one loads it */
      if (!ready->host_driver || ready->host_driver[0] != '/' ||
          access(ready->host_driver, R_OK) < 0) {
         srv_kill_worker(worker, "it named no host driver");
         worker->failed_start = true;
         return;
      }
      server->manifest = strdup(ready->host_driver);
      server->host_driver = server->manifest;
   }
   if (!server->have_device) {
      if (ready->device_uuid.len != VK_UUID_SIZE) {
         srv_kill_worker(worker, "it named no device");
         worker->failed_start = true;
         return;
      }
      server->device_pin.by = DAEMON_SELECT_UUID;
      memcpy(server->device_pin.uuid, ready->device_uuid.data, VK_UUID_SIZE);
      daemon_uuid_format(server->device_pin.uuid, server->device_uuid);
      snprintf(server->device_name, sizeof(server->device_name), "%s",
               ready->device_name ? ready->device_name : "?");
      snprintf(server->device_pci, sizeof(server->device_pci), "%s",
               ready->pci_address ? ready->pci_address : "");
      snprintf(server->render_node, sizeof(server->render_node), "%s",
               ready->render_node ? ready->render_node : "");
      server->n_heaps = 0;
      server->total_heap = 0;
      for (size_t i = 0; i < ready->n_heap_sizes && i < VK_MAX_MEMORY_HEAPS; i++) {
         server->heap_size[i] = ready->heap_sizes[i];
         server->heap_flags[i] = i < ready->n_heap_flags ? ready->heap_flags[i] : 0;
         server->total_heap += ready->heap_sizes[i];
         server->n_heaps++;
      }
      server->have_device = true;
   }
   server->start_failures = 0;
}

static void
worker_message(struct srv_worker *worker, const struct util_msg *msg)
{
   Gpud__WorkerMessage *m =
      msg->type == UTIL_MSG_CONTROL && !msg->n_fds ? wire_worker_unpack(msg->data, msg->size)
                                                   : NULL;
   switch (m ? m->msg_case : GPUD__WORKER_MESSAGE__MSG__NOT_SET) {
   case GPUD__WORKER_MESSAGE__MSG_READY:
      if (worker->ended)
         break; /* read after its end: never a spare */
      worker_ready(worker, m->ready);
      ensure_workers(worker->server);
      break;
   case GPUD__WORKER_MESSAGE__MSG_RESERVE: {
      Gpud__MemoryReserveReply rr = GPUD__MEMORY_RESERVE_REPLY__INIT;
      rr.result = m->reserve->bytes ? reserve(worker, m->reserve->heap, m->reserve->bytes)
                                    : VK_SUCCESS;
      uint64_t usage[VK_MAX_MEMORY_HEAPS], total[VK_MAX_MEMORY_HEAPS];
      budget(worker, usage, total);
      rr.n_heap_usage = rr.n_heap_budget = worker->server->n_heaps;
      rr.heap_usage = usage;
      rr.heap_budget = total;
      Gpud__WorkerMessage reply = GPUD__WORKER_MESSAGE__INIT;
      reply.msg_case = GPUD__WORKER_MESSAGE__MSG_RESERVE_REPLY;
      reply.reserve_reply = &rr;
      worker_queue(worker, &reply, NULL, 0);
      break;
   }
   case GPUD__WORKER_MESSAGE__MSG_RELEASE:
      release(worker, m->release->heap, m->release->bytes);
      break;
   case GPUD__WORKER_MESSAGE__MSG_FAULT:
      /* one per worker: what it reports is its own client's */
      if (worker->client && !worker->reported_fault) {
         worker->reported_fault = true;
         char reason[160];
         snprintf(reason, sizeof(reason), "%s", m->fault->reason ? m->fault->reason : "?");
         srv_client_log(worker->client, UTIL_LOG_WARNING, "%s", reason);
         record_fault(worker->server, worker->client, worker->pid, reason, false);
      }
      break;
   case GPUD__WORKER_MESSAGE__MSG_GOODBYE:
      if (worker->goodbye[0])
         break; /* one goodbye, one deadline */
      snprintf(worker->goodbye, sizeof(worker->goodbye), "%s",
               m->goodbye->reason && m->goodbye->reason[0] ? m->goodbye->reason : "disconnected");
      worker->goodbye_fault = m->goodbye->fault;
      /* the process ends next; if it does not, it is made to */
      if (worker->pid) {
         timer_in(worker->timer, worker->server->cfg.limits.teardown_timeout_ms);
      }
      break;
   default:
      srv_kill_worker(worker, "it broke the worker protocol");
      break;
   }
   wire_worker_free(m);
}

/* Reads what the worker sent, at most a batch at a time (a worker that
 * floods its channel cannot keep the loop from everyone else); false once
 * the channel is closed. */
#define WORKER_BATCH 32

static bool
drain_worker(struct srv_worker *worker)
{
   for (unsigned i = 0; i < WORKER_BATCH; i++) {
      struct util_msg msg;
      int r = util_msg_recv_packet(worker->fd, &worker->reader, &msg);
      if (r == -EAGAIN)
         return true;
      if (r < 0) {
         if (r != -ECONNRESET)
            srv_kill_worker(worker, "it broke the worker protocol");
         return false;
      }
      worker_message(worker, &msg);
      srv_server_discard_fds(worker->server, &msg);
   }
   return true;
}

static void
on_worker_read(evutil_socket_t fd, short what, void *data)
{
   struct srv_worker *worker = data;
   if (drain_worker(worker))
      return;
   event_del(worker->read_ev);
   worker->channel_closed = true;
   /* A thread's end is its channel's, and so is an adopted worker's (not
    * this server's child: whatever it did, it is made sure of); a child's
    * is its exit status. */
   if (worker->adopted)
      srv_kill_worker(worker, NULL);
   if (!worker->pid || worker->adopted)
      worker_ended(worker, 0, false);
}

static void
on_worker_timer(evutil_socket_t fd, short what, void *data)
{
   struct srv_worker *worker = data;
   if (worker->state == SRV_WORKER_STARTING) {
      worker->start_timed_out = true;
      srv_kill_worker(worker, "it did not start in time");
   } else
      srv_kill_worker(worker, "it did not end after its client left");
}

/* The worker's control channel's events on the loop; false when one is
 * missing. */
static bool
worker_watch(struct srv_server *server, struct srv_worker *worker)
{
   worker->read_ev =
      event_new(server->base, worker->fd, EV_READ | EV_PERSIST, on_worker_read, worker);
   worker->write_ev =
      event_new(server->base, worker->fd, EV_WRITE | EV_PERSIST, on_worker_write, worker);
   worker->timer = evtimer_new(server->base, on_worker_timer, worker);
   return worker->read_ev && worker->write_ev && worker->timer;
}

static struct srv_worker *
worker_start(struct srv_server *server)
{
   struct srv_worker *worker = calloc(1, sizeof(*worker));
   if (!worker)
      return NULL;
   worker->server = server;
   worker->fd = -1;
   worker->status_fd = -1;
   worker->pidfd = -1;
   util_msg_queue_init(&worker->out);
   reader_init(server, &worker->reader);
   util_list_add_tail(&server->workers, &worker->link);
   worker->state = SRV_WORKER_STARTING;
   server->n_starting++;
   int r = srv_spawn_worker(server, worker);
   if (r < 0) {
      util_err("cannot start a worker: %s", strerror(-r));
      worker_free(worker);
      return NULL;
   }
   if (!worker_watch(server, worker)) {
      srv_kill_worker(worker, "out of memory");
      if (!worker->pid)
         worker_free(worker);
      return NULL;
   }
   event_add(worker->read_ev, NULL);
   /* a worker stuck loading the host driver must not hold its place */
   timer_in(worker->timer, server->cfg.limits.start_timeout_ms);
   return worker;
}

static struct srv_worker *
first_worker(struct srv_server *server, enum srv_worker_state state)
{
   struct srv_worker *w;
   util_list_for_each(w, &server->workers, link) {
      if (w->state == state && !w->kill_reason && !w->ended)
         return w;
   }
   return NULL;
}

static void
on_spawn_timer(evutil_socket_t fd, short what, void *data)
{
   ensure_workers(data);
}

/* Hands waiting clients to spare workers and starts workers so that every
 * waiting client gets one and cfg.spare_workers are ready for the next. */
static void
ensure_workers(struct srv_server *server)
{
   if (!server->have_device && server->n_starting)
      return; /* the first worker tells what the device is */
   unsigned waiting = 0;
   uint64_t now = util_now_ns(), next_backoff = 0;
   struct srv_client *c;
   util_list_for_each_safe(c, &server->clients, link) {
      if (c->state != SRV_CLIENT_WAITING)
         continue;
      if (c->not_before_ns > now) {
         /* its program's crash back-off: no worker yet, none started for it */
         if (!next_backoff || c->not_before_ns < next_backoff)
            next_backoff = c->not_before_ns;
         continue;
      }
      struct srv_worker *w = first_worker(server, SRV_WORKER_SPARE);
      if (w)
         assign(w, c);
      else
         waiting++;
   }
   if (next_backoff) {
      uint64_t ms = (next_backoff - now + 999999) / 1000000;
      timer_in(server->backoff_timer, (uint32_t)(ms < UINT32_MAX ? ms : UINT32_MAX));
   }
   if (server->stopping || evtimer_pending(server->spawn_timer, NULL))
      return;
   unsigned spare = 0;
   struct srv_worker *w;
   util_list_for_each(w, &server->workers, link)
      spare += w->state == SRV_WORKER_SPARE && !w->kill_reason && !w->ended;
   unsigned want = waiting + server->cfg.spare_workers;
   if (!server->have_device && want == 0)
      want = 1;
   while (spare + server->n_starting < want && server->n_starting < MAX_STARTING) {
      if (!worker_start(server)) {
         timer_in(server->spawn_timer, SPAWN_BACKOFF_MS);
         break;
      }
   }
}

/* Where a dying worker was, as its status page says: the worker wrote it,
 * so names only for op numbers that exist. */
static void
describe_where(const struct srv_worker *worker, char *where, size_t size)
{
   where[0] = '\0';
   if (!worker->status)
      return;
   uint32_t op = atomic_load(&worker->status->op);
   uint32_t last = atomic_load(&worker->status->last_op);
   uint32_t replaying = 0; /* a lane's command, when the decoding thread is idle */
   for (unsigned i = 0; !replaying && i < DAEMON_STATUS_LANES; i++)
      replaying = atomic_load(&worker->status->lanes[i].op);
   uint32_t compiling = atomic_load(&worker->status->compile.op);
   if (op && op < WIRE_OP_COUNT)
      snprintf(where, size, " in %s", wire_op_name(op));
   else if (compiling && compiling < WIRE_OP_COUNT)
      snprintf(where, size, " in %s (on a compile thread)", wire_op_name(compiling));
   else if (replaying && replaying < WIRE_OP_COUNT)
      snprintf(where, size, " in %s (replaying a recording)", wire_op_name(replaying));
   else if (last && last < WIRE_OP_COUNT)
      snprintf(where, size, " (idle after %s)", wire_op_name(last));
}

static void
describe_end(struct srv_worker *worker, int wstatus, bool reaped, char *buf, size_t size,
             bool *ret_crash)
{
   *ret_crash = false;
   char where[96];
   if (worker->adopted && worker->kill_reason) {
      snprintf(buf, size, "%s", worker->kill_reason);
      return;
   }
   if (worker->adopted && !worker->goodbye[0]) {
      /* not this server's child: its status page says how it died, if it
       * could (not after SIGKILL) */
      uint32_t fatal = worker->status ? atomic_load(&worker->status->fatal_signal) : 0;
      const char *sig = fatal && fatal < (uint32_t)NSIG ? sigabbrev_np((int)fatal) : NULL;
      describe_where(worker, where, sizeof(where));
      if (sig)
         snprintf(buf, size, "its worker %d was killed by SIG%s%s", (int)worker->pid, sig,
                  where);
      else
         snprintf(buf, size, "its worker %d ended without saying why%s", (int)worker->pid,
                  where);
      *ret_crash = true;
      return;
   }
   if (!reaped || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
      snprintf(buf, size, "%s", worker->goodbye[0] ? worker->goodbye : "disconnected");
      return;
   }
   if (worker->kill_reason) {
      snprintf(buf, size, "%s", worker->kill_reason);
      return;
   }
   if (WIFSIGNALED(wstatus)) {
      describe_where(worker, where, sizeof(where));
      const char *sig = sigabbrev_np(WTERMSIG(wstatus));
      snprintf(buf, size, "its worker %d was killed by %s%s%s", (int)worker->pid,
               sig ? "SIG" : "a signal", sig ? sig : "", where);
      *ret_crash = true;
      return;
   }
   snprintf(buf, size, "its worker %d exited with status %d", (int)worker->pid,
            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
   *ret_crash = true;
}

static void
worker_ended(struct srv_worker *worker, int wstatus, bool reaped)
{
   struct srv_server *server = worker->server;
   /* Gone: never signalled again (its pid may be another process's now),
    * never made a spare by what it sent before it went. */
   worker->ended = true;
   if (worker->fd >= 0 && !worker->channel_closed) {
      while (drain_worker(worker) && !worker->channel_closed) {
         struct pollfd p = {.fd = worker->fd, .events = POLLIN};
         if (poll(&p, 1, 0) <= 0)
            break; /* a goodbye may still have been on its way */
      }
   }
   struct srv_client *client = worker->client;
   if (!client) {
      /* (a starting worker killed at shutdown did not fail) */
      bool failed = worker->failed_start || (worker->state == SRV_WORKER_STARTING &&
                                             (!worker->kill_reason || worker->start_timed_out));
      if (failed) {
         server->start_failures++;
         if (reaped && WIFSIGNALED(wstatus))
            util_err("a worker died starting up (signal %d)", WTERMSIG(wstatus));
         else if (reaped)
            util_err("a worker failed to start (exit status %d)",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
         else
            util_err("a worker failed to start");
         if (!server->have_device) {
            bool no_device = reaped && WIFEXITED(wstatus) &&
                             WEXITSTATUS(wstatus) == GPUD_EXIT_NO_DEVICE;
            util_err("%s: giving up", no_device ? "no such device"
                                                : "no worker could load the host driver");
            server->exit_status = no_device ? GPUD_EXIT_NO_DEVICE : 1;
            event_base_loopbreak(server->base);
         } else {
            timer_in(server->spawn_timer, SPAWN_BACKOFF_MS);
         }
      }
      worker_free(worker);
      check_stopped(server);
      ensure_workers(server); /* a spare that went is replaced */
      return;
   }
   char reason[256];
   bool crash;
   describe_end(worker, wstatus, reaped, reason, sizeof(reason), &crash);
   bool fault = crash || worker->goodbye_fault;
   if (crash) {
      srv_client_log(client, UTIL_LOG_ERR, "%s; its device is lost", reason);
      record_fault(server, client, worker->pid, reason, true);
   } else if (fault) {
      record_fault(server, client, worker->pid, reason, false);
   } else {
      srv_client_log(client, UTIL_LOG_INFO, "%s", reason);
   }
   if (crash || worker->kill_reason) {
      char why[300];
      snprintf(why, sizeof(why), "%s", reason);
      send_disconnect(client, why);
   }
   srv_adopt_forget(worker); /* nothing left to adopt */
   worker->client = NULL;
   client->worker = NULL;
   worker_free(worker);
   client_free(client);
   ensure_workers(server);
}

/* A worker of an earlier server, adopted (srv_adopt.c): its client in the
 * registry again, as the earlier server had it, with what it holds. */
static void
adopted(struct srv_server *server, struct srv_adopted *a)
{
   struct srv_client *client = calloc(1, sizeof(*client));
   struct srv_worker *worker = calloc(1, sizeof(*worker));
   void *page = MAP_FAILED;
   if (client && worker)
      page = mmap(NULL, DAEMON_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, a->status_fd,
                  0);
   if (page == MAP_FAILED) {
      /* its worker serves on without a server until its grace ends (this
       * server does not ask it again) */
      util_err("client %" PRIu64 ": cannot adopt its worker: out of memory", a->client_id);
      free(client);
      free(worker);
      return; /* (its fds close with the adoption) */
   }
   client->server = server;
   client->id = a->client_id;
   client->pid = a->client_pid;
   client->uid = a->client_uid;
   snprintf(client->name, sizeof(client->name), "%s", a->name);
   srv_clean_text(client->name);
   client->fd = util_fd_move(&a->client_fd);
   client->state = SRV_CLIENT_SERVING;
   client->connected_ns = a->connected_ns;
   client->asked_nice = a->asked_nice;
   client->sched_slot = a->sched_slot; /* taken for it when it was asked */
   client->nice = a->nice;
   a->sched_slot = -1;
   util_msg_queue_init(&client->out);
   reader_init(server, &client->reader);
   util_list_add_tail(&server->clients, &client->link);
   server->n_clients++;
   bool watched = client_watch(server, client);

   worker->server = server;
   worker->state = SRV_WORKER_BUSY;
   worker->pid = a->worker_pid;
   /* a uid of its user's own (else the base user's or the server's) */
   if (a->worker_uid != server->access.worker_uid && a->worker_uid != geteuid()) {
      worker->uid = a->worker_uid;
      srv_identity_learn(server, a->client_uid, a->worker_uid);
   }
   worker->pidfd = util_fd_move(&a->pidfd);
   worker->fd = util_fd_move(&a->control_fd);
   worker->status_fd = util_fd_move(&a->status_fd);
   worker->adopted = true;
   worker->has_record = true;
   worker->record_id = client->id;
   snprintf(worker->version, sizeof(worker->version), "%s", a->version);
   worker->control_version = a->control_version;
   util_msg_queue_init(&worker->out);
   reader_init(server, &worker->reader);
   util_list_add_tail(&server->workers, &worker->link);
   /* a page of another build's layout is not read */
   if (atomic_load(&((struct daemon_status_page *)page)->layout) == DAEMON_STATUS_LAYOUT) {
      worker->status = page;
   } else {
      munmap(page, DAEMON_STATUS_PAGE_SIZE);
      worker->details_unknown = true;
   }
   worker_serves(worker, client);
   worker->client = client;
   client->worker = worker;
   fcntl(worker->fd, F_SETFL, O_NONBLOCK);
   if (!worker_watch(server, worker) || !watched) {
      /* not served: its worker goes (it would wait for nobody) */
      srv_kill_worker(worker, "out of memory");
      srv_adopt_forget(worker);
      worker->client = NULL;
      client->worker = NULL;
      worker_free(worker);
      client_free(client);
      return;
   }
   event_add(worker->read_ev, NULL);

   /* what it holds, charged again (over the limits if they shrank: it
    * allocates nothing more until it is under them) */
   for (uint32_t h = 0; h < a->n_heaps && h < server->n_heaps; h++) {
      uint64_t bytes = UTIL_MIN(a->heap_usage[h], server->heap_size[h]);
      client->heap_memory[h] = bytes;
      client->memory += bytes;
      client->account->memory += bytes;
   }
   srv_client_log(client, UTIL_LOG_NOTICE,
                   "adopted: its worker %d (gpud %s) serves on for this server",
                   (int)worker->pid, worker->version[0] ? worker->version : "of unknown version");
   srv_bus_client_connected(server, client);
   if (a->fault[0]) {
      worker->reported_fault = true;
      record_fault(server, client, worker->pid, a->fault, false);
   }
}

static void
reap_children(struct srv_server *server)
{
   for (;;) {
      int wstatus;
      pid_t pid = waitpid(-1, &wstatus, WNOHANG);
      if (pid <= 0)
         return;
      struct srv_worker *w, *found = NULL;
      util_list_for_each(w, &server->workers, link) {
         if (w->pid == pid && !w->adopted) /* (an adopted one is no child) */
            found = w;
      }
      if (found)
         worker_ended(found, wstatus, true);
   }
}

/* ---- accepting ------------------------------------------------------------ */

static void
on_accept_retry(evutil_socket_t fd, short what, void *data)
{
   struct srv_server *server = data;
   if (!server->stopping)
      event_add(server->accept_ev, NULL);
}

static void
on_accept(evutil_socket_t fd, short what, void *data)
{
   struct srv_server *server = data;
   for (int i = 0; i < 64; i++) {
      int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (cfd >= 0) {
         client_new(server, cfd);
         continue;
      }
      if (errno == EINTR || errno == ECONNABORTED)
         continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
         return;
      /* Out of fds or memory: stop accepting for a while (or until a
       * client leaves) instead of spinning on the listening socket. */
      static uint64_t last_warning;
      uint64_t now = util_now_ns();
      if (now - last_warning > 10ull * 1000000000ull) {
         util_warn("accept failed: %s; pausing new connections", strerror(errno));
         last_warning = now;
      }
      event_del(server->accept_ev);
      timer_in(server->accept_retry, ACCEPT_BACKOFF_MS);
      return;
   }
}

/* ---- signals and stopping ------------------------------------------------- */

static bool
busy_workers(struct srv_server *server)
{
   return !util_list_empty(&server->workers);
}

static void
check_stopped(struct srv_server *server)
{
   if (server->stopping && !busy_workers(server))
      event_base_loopbreak(server->base);
}

static void
on_drain_timeout(evutil_socket_t fd, short what, void *data)
{
   struct srv_server *server = data;
   if (server->drain_killed) {
      /* killed workers are reaped as they go; these never went */
      util_warn("workers still running %u ms after they were killed; exiting anyway",
                KILL_GRACE_MS);
      event_base_loopbreak(server->base);
      return;
   }
   server->drain_killed = true;
   struct srv_worker *w;
   unsigned n = 0;
   util_list_for_each(w, &server->workers, link) {
      if (w->client) {
         srv_kill_worker(w, "the daemon stopped");
         n++;
      }
   }
   if (server->cfg.isolation == SRV_ISOLATION_THREAD) {
      /* threads cannot be killed: their sockets are shut, but a thread
       * stuck in the host driver stays stuck */
      if (n)
         util_warn("%u client(s) still busy after %u ms; exiting anyway", n,
                   server->cfg.limits.drain_timeout_ms);
      event_base_loopbreak(server->base);
      return;
   }
   util_notice("%u client(s) still connected after %u ms: ended", n,
               server->cfg.limits.drain_timeout_ms);
   timer_in(server->drain_timer, KILL_GRACE_MS);
}

/* Whether a worker stays for the next server when this one stops: it
 * serves a client (its Assign went out), has a record, and is not ending. */
static bool
worker_stays(const struct srv_worker *w)
{
   return w->client && w->has_record && !w->goodbye[0] && !w->out.bytes && !w->kill_reason &&
          !w->ended;
}

static void
begin_stop(struct srv_server *server)
{
   if (server->stopping)
      return;
   server->stopping = true;
   sd_notify(0, "STOPPING=1");
   event_del(server->accept_ev);
   evtimer_del(server->accept_retry);
   if (server->own_socket)
      unlink(server->socket_path);
   /* Connections that have no worker yet go now; spares too. */
   struct srv_client *c;
   util_list_for_each_safe(c, &server->clients, link) {
      if (c->state != SRV_CLIENT_SERVING)
         client_free(c);
   }
   struct srv_worker *w;
   util_list_for_each_safe(w, &server->workers, link) {
      if (!w->client)
         srv_kill_worker(w, "the daemon stopped");
   }
   /* With restarts, the workers serving clients stay: each serves on and
    * waits for the next server (srv_adopt.c), which adopts it. */
   if (srv_restart_grace_ms(server)) {
      unsigned staying = 0;
      util_list_for_each(w, &server->workers, link)
         staying += worker_stays(w);
      server->handing_over = true;
      util_notice("stopping: %u client(s) stay with their workers, which wait up to %u ms "
                  "for the next gpud",
                  staying, srv_restart_grace_ms(server));
      event_base_loopbreak(server->base);
      return;
   }
   unsigned busy = 0;
   util_list_for_each(w, &server->workers, link)
      busy += w->client != NULL;
   if (busy)
      util_notice("stopping: letting %u client(s) finish for up to %u ms", busy,
                  server->cfg.limits.drain_timeout_ms);
   timer_in(server->drain_timer, server->cfg.limits.drain_timeout_ms);
   check_stopped(server);
}

static bool
same_string(const char *a, const char *b)
{
   return a == b || (a && b && !strcmp(a, b));
}

/* SIGHUP: the configuration files read again (the command line still
 * wins). Limits, access, spare workers, validation (of workers started from
 * now on) and the log level change at once; a bad file changes nothing. */
static void
reload(struct srv_server *server)
{
   struct srv_config next;
   char *error = NULL;
   if (srv_config_reload(&next, &error) < 0) {
      const char *why = error ? error : "no configuration to read";
      if (!strncmp(why, "gpud: ", 6))
         why += 6;
      util_err("reload: %s; the configuration is unchanged", why);
      free(error);
      return;
   }
   /* what only a restart changes */
   static const struct {
      const char *what;
      size_t offset;
   } restart_strings[] = {
      {"socket", offsetof(struct srv_config, socket_path)},
      {"host-driver", offsetof(struct srv_config, manifest)},
      {"device", offsetof(struct srv_config, device)},
      {"bus", offsetof(struct srv_config, bus)},
      {"state-dir", offsetof(struct srv_config, state_dir)},
      {"cache-dir", offsetof(struct srv_config, cache_dir)},
   };
   for (size_t i = 0; i < sizeof(restart_strings) / sizeof(restart_strings[0]); i++) {
      const char **was = (const char **)((char *)&server->cfg + restart_strings[i].offset);
      const char **now = (const char **)((char *)&next + restart_strings[i].offset);
      if (!same_string(*was, *now))
         util_warn("reload: %s changed; it takes effect when gpud restarts",
                   restart_strings[i].what);
      *now = *was;
   }
   if (next.isolation != server->cfg.isolation || next.sandbox != server->cfg.sandbox ||
       next.fair_share != server->cfg.fair_share)
      util_warn("reload: isolation, sandbox and fair-share take effect when gpud restarts");
   if (next.worker_uid_first != server->cfg.worker_uid_first ||
       next.worker_uid_last != server->cfg.worker_uid_last)
      util_warn("reload: worker-uids takes effect when gpud restarts");
   next.worker_uid_first = server->cfg.worker_uid_first;
   next.worker_uid_last = server->cfg.worker_uid_last;
   next.isolation = server->cfg.isolation;
   next.sandbox = server->cfg.sandbox;
   next.fair_share = server->cfg.fair_share;
   next.start_log_level = server->cfg.start_log_level;
   /* spare workers started for the old settings go (all when who workers
    * are or what they load changed; else those beyond the new count) */
   bool respawn = !same_string(next.user, server->cfg.user) ||
                  next.validate != server->cfg.validate || next.spirv != server->cfg.spirv ||
                  next.limits.restart_grace_ms != server->cfg.limits.restart_grace_ms;
   unsigned keep = respawn ? 0 : next.spare_workers;
   struct srv_worker *w;
   util_list_for_each(w, &server->workers, link) {
      if (w->state != SRV_WORKER_SPARE || w->client || w->kill_reason || w->ended)
         continue;
      if (keep) {
         keep--;
         continue;
      }
      srv_kill_worker(w, "replaced after a reload");
   }
   srv_config_keep_older(&next, &server->cfg);
   server->cfg = next;
   srv_share_reload(server);
   util_log_set_max_level((enum util_log_level)(next.log_level >= 0 ? next.log_level
                                                                    : next.start_log_level));
   if (srv_access_init(server) < 0)
      util_err("reload: the access policy is unchanged where it could not be read");
   ensure_workers(server);
   util_notice("reloaded the configuration");
}

static void
on_signal(evutil_socket_t sig, short what, void *data)
{
   struct srv_server *server = data;
   switch (sig) {
   case SIGCHLD:
      reap_children(server);
      break;
   case SIGHUP:
      reload(server);
      break;
   default:
      util_notice("signal %d: shutting down", (int)sig);
      begin_stop(server);
      break;
   }
}

static void
on_watchdog(evutil_socket_t fd, short what, void *data)
{
   sd_notify(0, "WATCHDOG=1");
}

/* ---- start-up --------------------------------------------------------------- */

static int
mkdir_parents(const char *path, mode_t mode)
{
   char *copy = strdup(path);
   if (!copy)
      return -ENOMEM;
   char *slash = strrchr(copy, '/');
   int r = 0;
   if (slash && slash != copy) {
      *slash = '\0';
      r = util_mkdirs(copy, 0755, mode);
   }
   free(copy);
   return r;
}

static char *
default_socket_path(void)
{
   char *path = NULL;
   if (geteuid() == 0)
      return strdup("/run/gpud/gpud.sock");
   const char *xdg = getenv("XDG_RUNTIME_DIR");
   if (!xdg || !*xdg)
      return NULL;
   if (asprintf(&path, "%s/gpud/gpud.sock", xdg) < 0)
      return NULL;
   return path;
}

static int
open_socket(struct srv_server *server)
{
   int n = sd_listen_fds(1);
   if (n > 1) {
      util_err("systemd passed %d sockets; expected one", n);
      return -EINVAL;
   }
   if (n == 1) {
      /* systemd's socket wins: the unit's socket is what clients find */
      if (server->cfg.socket_path)
         util_notice("serving the socket systemd passed, not %s", server->cfg.socket_path);
      server->listen_fd = SD_LISTEN_FDS_START;
   } else {
      server->socket_path =
         server->cfg.socket_path ? strdup(server->cfg.socket_path) : default_socket_path();
      if (!server->socket_path) {
         util_err("no socket path: pass --socket or set XDG_RUNTIME_DIR");
         return -EINVAL;
      }
      int r = mkdir_parents(server->socket_path, server->access.root ? 0755 : 0700);
      if (r >= 0)
         r = util_socket_listen(server->socket_path, &server->listen_fd);
      if (r < 0) {
         util_err("cannot listen on %s: %s", server->socket_path, strerror(-r));
         return r;
      }
      server->own_socket = true;
      /* The kernel checks what the server checks again: a system daemon's
       * socket is its group's, a user's daemon's its user's. */
      if (server->access.root) {
         chmod(server->socket_path, 0660);
         if (server->access.have_group && chown(server->socket_path, 0, server->access.group) < 0)
            util_warn("cannot give %s to group %s: %s", server->socket_path,
                      server->access.group_name, strerror(errno));
      } else {
         chmod(server->socket_path, 0600);
      }
   }
   evutil_make_socket_nonblocking(server->listen_fd);
   fcntl(server->listen_fd, F_SETFD, FD_CLOEXEC);
   return 0;
}

static int
load_host(struct srv_server *server)
{
   if (daemon_host_load(&server->host, server->manifest, &server->cfg.device_sel,
                      server->cfg.sysfs_root) < 0)
      return -ENODEV;
   server->host.spirv = server->cfg.spirv;
   if (daemon_host_enable_validation(&server->host, server->cfg.validate) < 0)
      return -ENOENT;
   snprintf(server->device_name, sizeof(server->device_name), "%s", server->host.device_name);
   daemon_uuid_format(server->host.device_uuid, server->device_uuid);
   if (server->host.has_pci)
      daemon_pci_format(&server->host.pci, server->device_pci);
   snprintf(server->render_node, sizeof(server->render_node), "%s", server->host.render_node);
   const VkPhysicalDeviceMemoryProperties *mem = &server->host.memory;
   for (uint32_t i = 0; i < mem->memoryHeapCount; i++) {
      server->heap_size[i] = mem->memoryHeaps[i].size;
      server->heap_flags[i] = mem->memoryHeaps[i].flags;
      server->total_heap += mem->memoryHeaps[i].size;
   }
   server->n_heaps = mem->memoryHeapCount;
   server->have_device = true;
   return 0;
}

/* Runs the loop until the first worker tells what the device is. */
static int
wait_for_device(struct srv_server *server)
{
   ensure_workers(server);
   while (!server->have_device && !server->exit_status && !server->stopping) {
      if (event_base_loop(server->base, EVLOOP_ONCE) < 0)
         return -EIO;
   }
   return server->have_device ? 0 : -ENODEV;
}

static void
server_finish(struct srv_server *server)
{
   srv_bus_stop(server);
   if (server->bus_retry)
      event_free(server->bus_retry);
   struct srv_worker *w;
   util_list_for_each_safe(w, &server->workers, link) {
      /* (handing over: what it has is the next server's to adopt) */
      if (!server->handing_over || !worker_stays(w)) {
         srv_kill_worker(w, "the daemon stopped");
         srv_adopt_forget(w);
      }
      worker_free(w);
   }
   struct srv_client *c;
   util_list_for_each_safe(c, &server->clients, link)
      client_free(c);
   srv_adopt_finish(server);
   srv_share_finish(server);
   struct srv_account *a;
   util_list_for_each_safe(a, &server->accounts, link) {
      util_list_remove(&a->link);
      free(a);
   }
   struct srv_crash_record *cr;
   util_list_for_each_safe(cr, &server->crashes, link) {
      util_list_remove(&cr->link);
      free(cr);
   }
   for (size_t i = 0; i < sizeof(server->signal_ev) / sizeof(server->signal_ev[0]); i++) {
      if (server->signal_ev[i])
         event_free(server->signal_ev[i]);
   }
   if (server->watchdog)
      event_free(server->watchdog);
   if (server->accept_ev)
      event_free(server->accept_ev);
   if (server->accept_retry)
      event_free(server->accept_retry);
   if (server->drain_timer)
      event_free(server->drain_timer);
   if (server->spawn_timer)
      event_free(server->spawn_timer);
   if (server->backoff_timer)
      event_free(server->backoff_timer);
   srv_cache_finish(server); /* (its timer before the loop) */
   if (server->base)
      event_base_free(server->base);
   if (server->listen_fd >= 0)
      close(server->listen_fd);
   if (server->own_socket && !server->stopping)
      unlink(server->socket_path);
   free(server->socket_path);
   free(server->manifest);
   srv_access_finish(&server->access);
   srv_identity_finish(server);
   util_fd_close(&server->closer_fd);
   daemon_host_finish(&server->host);
}

int
srv_server_run(const struct srv_config *cfg)
{
   static struct srv_server server_storage;
   struct srv_server *server = &server_storage;
   server->cfg = *cfg;
   server->listen_fd = -1;
   server->closer_fd = -1;
   server->sched_fd = -1;
   server->self_path = "/proc/self/exe";
   server->start_ns = util_now_ns();
   util_list_init(&server->clients);
   util_list_init(&server->workers);
   util_list_init(&server->accounts);
   util_list_init(&server->crashes);
   util_list_init(&server->adoptions);

   int status = 1;
   if (srv_access_init(server) < 0)
      goto out;
   srv_identity_init(server);
   srv_cache_init(server);
   /* In process isolation without --host-driver the first worker picks
    * the driver: the server never loads one. */
   if (cfg->manifest)
      server->manifest = strdup(cfg->manifest);
   else if (cfg->isolation == SRV_ISOLATION_THREAD &&
            daemon_host_default_manifest(&cfg->device_sel, cfg->sysfs_root, &server->manifest) ==
               -ENODEV)
      status = GPUD_EXIT_NO_DEVICE;
   if ((cfg->manifest || cfg->isolation == SRV_ISOLATION_THREAD) && !server->manifest)
      goto out;
   server->host_driver = server->manifest;
   int loaded = 0;
   if (cfg->isolation == SRV_ISOLATION_THREAD && (loaded = load_host(server)) < 0) {
      if (loaded == -ENODEV)
         status = GPUD_EXIT_NO_DEVICE;
      goto out;
   }

   if (closer_start(server) < 0) {
      util_err("cannot start a thread");
      goto out;
   }
   server->base = event_base_new();
   if (!server->base) {
      util_err("cannot create the event loop");
      goto out;
   }
   if (open_socket(server) < 0)
      goto out;
   /* the ids earlier servers gave stay theirs: known before the first
    * client gets one */
   server->adopted = adopted;
   srv_adopt_init(server);
   srv_share_init(server);
   server->accept_ev =
      event_new(server->base, server->listen_fd, EV_READ | EV_PERSIST, on_accept, server);
   server->accept_retry = evtimer_new(server->base, on_accept_retry, server);
   server->drain_timer = evtimer_new(server->base, on_drain_timeout, server);
   server->spawn_timer = evtimer_new(server->base, on_spawn_timer, server);
   server->backoff_timer = evtimer_new(server->base, on_spawn_timer, server);
   static const int signals[] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD};
   for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
      server->signal_ev[i] = evsignal_new(server->base, signals[i], on_signal, server);
      if (server->signal_ev[i])
         event_add(server->signal_ev[i], NULL);
   }
   uint64_t watchdog_usec = 0;
   if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec) {
      server->watchdog = event_new(server->base, -1, EV_PERSIST, on_watchdog, NULL);
      struct timeval tv = {.tv_sec = (time_t)(watchdog_usec / 2 / 1000000),
                           .tv_usec = (suseconds_t)(watchdog_usec / 2 % 1000000)};
      event_add(server->watchdog, &tv);
   }

   /* Clients are welcomed at once, also while the first worker is still
    * loading the host driver (their commands wait in their sockets): a
    * client's connect deadline is short.  In process isolation the server
    * never loads the host driver: the first worker says what the device
    * is. */
   event_add(server->accept_ev, NULL);
   if (wait_for_device(server) < 0) {
      /* stopped before the device was known: a clean stop all the same */
      status = server->stopping ? 0 : server->exit_status ? server->exit_status : 1;
      if (!server->stopping && status != GPUD_EXIT_NO_DEVICE)
         util_err("cannot serve: no worker could start");
      goto out;
   }
   util_notice("serving %s (host driver %s) on %s, %s isolation", server->device_name,
               server->manifest, server->socket_path ? server->socket_path : "systemd's socket",
               cfg->isolation == SRV_ISOLATION_THREAD ? "thread" : "process");
   srv_bus_start(server);
   srv_adopt_begin(server);
   sd_notifyf(0, "READY=1\nSTATUS=serving %s", server->device_name);
   ensure_workers(server);

   server->exit_status = 0;
   event_base_dispatch(server->base);
   status = server->exit_status;
   if (cfg->isolation == SRV_ISOLATION_THREAD && !util_list_empty(&server->workers)) {
      /* contexts stuck in the host driver still use what would be freed */
      util_warn("exiting with %zu client thread(s) still in the host driver",
                util_list_length(&server->workers));
      _exit(status);
   }
out:
   server_finish(server);
   srv_config_finish(&server->cfg);
   return status;
}
