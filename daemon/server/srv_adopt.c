/* SPDX-License-Identifier: MIT */
/*
 * Restarts: the server's side of handing workers to the next server.
 *
 * Beside its socket the server keeps a private directory (SOCKET.d, 0700,
 * its user's) holding, for each worker serving a client, a record of the
 * client (client-ID.state: who it is, its worker's pid and user, a random
 * token) and a socket the server bound for that worker, which the worker
 * listens on (client-ID.sock).  When the server goes (SIGTERM, a crash, an
 * upgrade) the worker serves on; the next server on the same socket reads
 * the records, connects to each worker's socket, proves it knows the token
 * (AdoptRequest), checks that the process answering is the recorded worker
 * (its pid and user, as the kernel tells them), and takes the client back
 * into its registry with what the worker holds (WorkerAdopted): "adopts" it.
 *
 * Only the server's user can enter the directory, so only it can reach a
 * worker's socket or read a token; the token also keeps a worker from
 * answering anyone who found its socket otherwise.  Client ids go on from
 * where earlier servers left them (next-id in the directory), so an id
 * names one client for as long as the directory lasts.  See
 * docs/architecture.md, "Restarts".
 */
#include "srv_adopt.h"
#include "srv_share.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util_dir.h"
#include "util_fd.h"
#include "util_log.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "wire_control.h"

#define TOKEN_SIZE 32
#define ANSWER_MS 1000   /* a worker answers an AdoptRequest within this */
#define RETRY_MS 250     /* ... or is asked again this much later */
#define MAX_TRIES 8      /* ... this many times (a worker that has not yet
                          * seen its server go refuses), then left alone */
#define ID_BLOCK 64      /* next-id is written once every this many ids */
#define MAX_ID (1ull << 53) /* a record or next-id above it is no one's */

/* A worker of an earlier server, from its record, while it is asked. */
struct srv_adoption {
   struct util_list link; /* server->adoptions */
   struct srv_server *server;
   struct srv_adopted a; /* the identity from the record */
   uid_t worker_uid;
   uint8_t token[TOKEN_SIZE];
   int fd;
   struct event *read_ev;
   struct event *timer;
   unsigned tries;
   bool takes_page;  /* its worker knows the schedule page (its record says) */
   bool page_sent;   /* ... and may have its slot on this server's */
   struct util_msg_reader reader;
};

/* A client's record (suffix "state") or adopt socket ("sock"); false when
 * it does not fit. */
static bool
path_of(const struct srv_server *server, char *buf, size_t size, uint64_t id,
        const char *suffix)
{
   return (size_t)snprintf(buf, size, "%s/client-%" PRIu64 ".%s", server->adopt_dir, id,
                           suffix) < size;
}

static void
forget_id(struct srv_server *server, uint64_t id)
{
   char path[PATH_MAX];
   path_of(server, path, sizeof(path), id, "sock");
   unlink(path);
   path_of(server, path, sizeof(path), id, "state");
   unlink(path);
}

/* Writes a file in the directory whole, or not at all. */
static int
write_file(struct srv_server *server, const char *name, const char *text)
{
   char path[PATH_MAX], tmp[PATH_MAX];
   snprintf(path, sizeof(path), "%s/%s", server->adopt_dir, name);
   snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", server->adopt_dir, name);
   return util_write_file(path, tmp, text, strlen(text));
}

/* ---- the directory -------------------------------------------------------- */

/* SOCKET.d beside the socket the server listens on (also systemd's). */
static char *
dir_path(struct srv_server *server)
{
   if (server->socket_path) {
      char *dir = NULL;
      return asprintf(&dir, "%s.d", server->socket_path) < 0 ? NULL : dir;
   }
   struct sockaddr_un addr;
   socklen_t len = sizeof(addr);
   memset(&addr, 0, sizeof(addr));
   if (getsockname(server->listen_fd, (struct sockaddr *)&addr, &len) < 0 ||
       addr.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path) ||
       addr.sun_path[0] != '/')
      return NULL; /* unnamed or abstract: no place for the records */
   size_t n = len - offsetof(struct sockaddr_un, sun_path);
   char *dir = NULL;
   return asprintf(&dir, "%.*s.d", (int)strnlen(addr.sun_path, n), addr.sun_path) < 0 ? NULL
                                                                                       : dir;
}

/* The directory, made or checked: a directory of the server's user that
 * nobody else may enter (anything else there is no place for tokens). */
static int
make_dir(const char *dir)
{
   if (mkdir(dir, 0700) < 0 && errno != EEXIST)
      return -errno;
   struct stat st;
   if (lstat(dir, &st) < 0)
      return -errno;
   if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
      return -EPERM;
   return 0;
}

static uint64_t
read_mark(struct srv_server *server)
{
   char path[PATH_MAX];
   snprintf(path, sizeof(path), "%s/next-id", server->adopt_dir);
   FILE *f = fopen(path, "re");
   uint64_t mark = 0;
   if (f) {
      if (fscanf(f, "%" SCNu64, &mark) != 1 || mark > MAX_ID)
         mark = 0;
      fclose(f);
   }
   return mark;
}

/* next-id says an id no server has given yet: written a block ahead, so
 * that the loop writes a file once every ID_BLOCK connections (ids skip
 * what is left of a block at a restart). */
void
srv_adopt_note_id(struct srv_server *server, uint64_t id)
{
   if (!server->adopt_dir || id < server->id_mark)
      return;
   char text[32];
   snprintf(text, sizeof(text), "%" PRIu64 "\n", id + ID_BLOCK);
   if (write_file(server, "next-id", text) == 0)
      server->id_mark = id + ID_BLOCK;
}

/* ---- records -------------------------------------------------------------- */

static int
hex_decode(const char *hex, uint8_t *out, size_t size)
{
   if (strlen(hex) != size * 2)
      return -EINVAL;
   for (size_t i = 0; i < size; i++) {
      unsigned v;
      if (sscanf(hex + 2 * i, "%2x", &v) != 1)
         return -EINVAL;
      out[i] = (uint8_t)v;
   }
   return 0;
}

/* A record, as prepare wrote it; -EINVAL for anything else. */
static int
read_record(struct srv_server *server, const char *name, struct srv_adoption *ad)
{
   char path[PATH_MAX];
   snprintf(path, sizeof(path), "%s/%s", server->adopt_dir, name);
   int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
   if (fd < 0)
      return -errno;
   struct stat st;
   if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) {
      close(fd);
      return -EINVAL;
   }
   FILE *f = fdopen(fd, "r");
   if (!f) {
      close(fd);
      return -ENOMEM;
   }
   char line[256];
   unsigned have = 0;
   unsigned long long v;
   while (fgets(line, sizeof(line), f)) {
      line[strcspn(line, "\n")] = '\0';
      char *value = strchr(line, '=');
      if (!value)
         continue;
      *value++ = '\0';
      if (!strcmp(line, "name")) {
         snprintf(ad->a.name, sizeof(ad->a.name), "%s", value);
         have |= 1u << 0;
      } else if (!strcmp(line, "token")) {
         if (hex_decode(value, ad->token, sizeof(ad->token)) == 0)
            have |= 1u << 1;
      } else if (sscanf(value, "%llu", &v) == 1) {
         if (!strcmp(line, "id"))
            ad->a.client_id = v, have |= 1u << 2;
         else if (!strcmp(line, "pid"))
            ad->a.client_pid = (pid_t)v, have |= 1u << 3;
         else if (!strcmp(line, "uid"))
            ad->a.client_uid = (uid_t)v, have |= 1u << 4;
         else if (!strcmp(line, "connected_ns"))
            ad->a.connected_ns = v, have |= 1u << 5;
         else if (!strcmp(line, "worker_pid"))
            ad->a.worker_pid = (pid_t)v, have |= 1u << 6;
         else if (!strcmp(line, "worker_uid"))
            ad->worker_uid = (uid_t)v, have |= 1u << 7;
         else if (!strcmp(line, "asked_nice")) {
            /* (records of builds from before the schedule page lack it:
             * their workers take no page) */
            ad->takes_page = true;
            if (v <= 19)
               ad->a.asked_nice = (int)v;
         }
      }
   }
   fclose(f);
   char want[64];
   snprintf(want, sizeof(want), "client-%" PRIu64 ".state", ad->a.client_id);
   if (have != 0xff || ad->a.worker_pid <= 0 || ad->a.client_id > MAX_ID || strcmp(name, want))
      return -EINVAL;
   return 0;
}

int
srv_adopt_prepare(struct srv_worker *worker, struct srv_client *client,
                   uint8_t token[32], int *ret_fd)
{
   struct srv_server *server = worker->server;
   *ret_fd = -1;
   if (!server->adopt_dir || !worker->restart_grace_ms || worker->pid <= 0)
      return 0; /* (a worker started without a grace dies with this server) */
   if (getrandom(token, TOKEN_SIZE, 0) != TOKEN_SIZE)
      return -EIO;
   struct sockaddr_un addr = {.sun_family = AF_UNIX};
   if (!path_of(server, addr.sun_path, sizeof(addr.sun_path), client->id, "sock"))
      return -ENAMETOOLONG;
   unlink(addr.sun_path);
   int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
   if (fd < 0)
      return -errno;
   if (bind(fd, (const struct sockaddr *)&addr, sizeof(addr)) < 0) {
      int r = -errno;
      close(fd);
      return r;
   }
   char hex[TOKEN_SIZE * 2 + 1];
   for (size_t i = 0; i < TOKEN_SIZE; i++)
      snprintf(hex + 2 * i, 3, "%02x", token[i]);
   uid_t worker_uid = worker->uid                   ? worker->uid
                      : server->access.switch_user ? server->access.worker_uid
                                                   : geteuid();
   char text[512], name[64];
   snprintf(text, sizeof(text),
            "id=%" PRIu64 "\npid=%d\nuid=%u\nname=%s\nconnected_ns=%" PRIu64
            "\nworker_pid=%d\nworker_uid=%u\ntoken=%s\nasked_nice=%d\n",
            client->id, (int)client->pid, (unsigned)client->uid, client->name,
            client->connected_ns, (int)worker->pid, (unsigned)worker_uid, hex,
            client->asked_nice);
   snprintf(name, sizeof(name), "client-%" PRIu64 ".state", client->id);
   int r = write_file(server, name, text);
   if (r < 0) {
      unlink(addr.sun_path);
      close(fd);
      return r;
   }
   worker->has_record = true;
   worker->record_id = client->id;
   *ret_fd = fd;
   return 0;
}

void
srv_adopt_forget(struct srv_worker *worker)
{
   if (!worker->has_record || !worker->server->adopt_dir)
      return;
   worker->has_record = false;
   forget_id(worker->server, worker->record_id);
}

/* ---- adopting ------------------------------------------------------------- */

/* The client of an adoption as the schedule page's functions take it. */
static struct srv_client
who(const struct srv_adoption *ad)
{
   struct srv_client c = {
      .id = ad->a.client_id,
      .uid = ad->a.client_uid,
      .asked_nice = ad->a.asked_nice,
      .sched_slot = ad->a.sched_slot,
   };
   snprintf(c.name, sizeof(c.name), "%s", ad->a.name);
   return c;
}

static void
adoption_free(struct srv_adoption *ad)
{
   if (ad->a.sched_slot >= 0) {
      /* (not adopted: its slot goes) */
      struct srv_client c = who(ad);
      srv_share_release(ad->server, &c);
   }
   if (ad->read_ev)
      event_free(ad->read_ev);
   if (ad->timer)
      event_free(ad->timer);
   util_fd_close(&ad->fd);
   util_fd_close(&ad->a.pidfd);
   util_fd_close(&ad->a.control_fd);
   /* fds a peer sent close off the loop */
   struct util_msg sent = {.fds = {ad->a.client_fd, ad->a.status_fd}, .n_fds = 2};
   srv_server_discard_fds(ad->server, &sent);
   ad->a.client_fd = ad->a.status_fd = -1;
   util_msg_reader_finish(&ad->reader);
   util_list_remove(&ad->link);
   free(ad);
}

/* Not adopted: the worker is gone, or what answered cannot be trusted (its
 * record and socket go), or it would not let itself be adopted (they stay:
 * its own server may still be there). */
static void
give_up(struct srv_adoption *ad, int level, const char *why, bool forget)
{
   util_log(level, "client %" PRIu64 " (pid %d, %s) of an earlier server: %s",
            ad->a.client_id, (int)ad->a.client_pid, ad->a.name, why);
   /* A worker that got this server's schedule page and lives on (it
    * serves its client until its grace ends) keeps its slot: another
    * client given it would share it with that worker. */
   if (ad->page_sent)
      ad->a.sched_slot = -1;
   if (forget)
      forget_id(ad->server, ad->a.client_id);
   adoption_free(ad);
}

static void try_adopt(struct srv_adoption *ad);

/* Whether fd is the client's connection to this daemon, as the record has
 * it: a socket accepted on the daemon's own address, from the client's pid
 * and user. */
static bool
is_client_socket(struct srv_server *server, int fd, const struct srv_adopted *a)
{
   struct stat st;
   if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
      return false;
   struct sockaddr_un mine, its;
   socklen_t mine_len = sizeof(mine), its_len = sizeof(its);
   memset(&mine, 0, sizeof(mine));
   memset(&its, 0, sizeof(its));
   if (getsockname(server->listen_fd, (struct sockaddr *)&mine, &mine_len) < 0 ||
       getsockname(fd, (struct sockaddr *)&its, &its_len) < 0 || mine_len != its_len ||
       memcmp(&mine, &its, mine_len))
      return false;
   struct ucred cred;
   return util_peer_cred(fd, &cred) == 0 && cred.pid == a->client_pid &&
          cred.uid == a->client_uid;
}

static void
retry(struct srv_adoption *ad)
{
   if (ad->read_ev)
      event_del(ad->read_ev);
   util_fd_close(&ad->fd);
   if (++ad->tries >= MAX_TRIES) {
      give_up(ad, UTIL_LOG_WARNING, "its worker did not let itself be adopted; left alone",
              false);
      return;
   }
   struct timeval tv = {0, RETRY_MS * 1000};
   evtimer_add(ad->timer, &tv);
}

/* The worker's answer: checked against the record, then the client is the
 * loop's again. */
static void
take_answer(struct srv_adoption *ad, struct util_msg *msg)
{
   struct srv_server *server = ad->server;
   Gpud__WorkerMessage *m = msg->type == UTIL_MSG_CONTROL
                               ? wire_worker_unpack(msg->data, msg->size)
                               : NULL;
   struct ucred cred;
   const char *bad = NULL;
   if (!m || m->msg_case != GPUD__WORKER_MESSAGE__MSG_ADOPTED || msg->n_fds != 2)
      bad = "it answered something else";
   else if (util_peer_cred(ad->fd, &cred) < 0 || cred.pid != ad->a.worker_pid ||
            cred.uid != ad->worker_uid)
      bad = "the process answering is not its worker";
   else if (m->adopted->client_id != ad->a.client_id)
      bad = "its worker serves another client";
   else if (m->adopted->device_uuid.len != VK_UUID_SIZE ||
            memcmp(m->adopted->device_uuid.data, server->device_pin.uuid, VK_UUID_SIZE))
      bad = "its worker serves another device than this server";
   else if (util_memfd_check(msg->fds[1], DAEMON_STATUS_PAGE_SIZE) < 0)
      bad = "its worker sent no status page";
   else if (!is_client_socket(server, msg->fds[0], &ad->a))
      bad = "its worker sent no socket of this daemon's client";
   if (bad) {
      wire_worker_free(m);
      srv_server_discard_fds(server, msg);
      give_up(ad, UTIL_LOG_WARNING, bad, true);
      return;
   }
   const Gpud__WorkerAdopted *w = m->adopted;
   ad->a.client_fd = util_fd_move(&msg->fds[0]);
   ad->a.status_fd = util_fd_move(&msg->fds[1]);
   snprintf(ad->a.version, sizeof(ad->a.version), "%s", w->version ? w->version : "");
   srv_clean_text(ad->a.version);
   ad->a.control_version = w->control_version;
   ad->a.worker_uid = ad->worker_uid;
   ad->a.n_heaps = (uint32_t)UTIL_MIN(w->n_heap_usage, (size_t)VK_MAX_MEMORY_HEAPS);
   for (uint32_t h = 0; h < ad->a.n_heaps; h++)
      ad->a.heap_usage[h] = w->heap_usage[h];
   snprintf(ad->a.fault, sizeof(ad->a.fault), "%s", w->fault ? w->fault : "");
   srv_clean_text(ad->a.fault);
   wire_worker_free(m);
   /* To signal it without a pid that could be another process's by then:
    * the pidfd is the answering worker's if the connection is still there
    * once it is open (a process holds its end until it is gone). */
   ad->a.pidfd = pidfd_open(ad->a.worker_pid, 0);
   struct pollfd p = {.fd = ad->fd, .events = POLLRDHUP};
   if (ad->a.pidfd < 0 || (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP)))) {
      give_up(ad, UTIL_LOG_WARNING, "its worker went while it was adopted", true);
      return;
   }
   event_del(ad->read_ev);
   ad->a.control_fd = util_fd_move(&ad->fd);
   server->adopted(server, &ad->a); /* (takes the slot, unless it failed) */
   adoption_free(ad);
}

static void
on_answer(evutil_socket_t fd, short what, void *data)
{
   struct srv_adoption *ad = data;
   struct util_msg msg;
   int r = util_msg_recv_packet(ad->fd, &ad->reader, &msg);
   if (r == -EAGAIN)
      return;
   evtimer_del(ad->timer);
   if (r < 0) {
      /* refused: its server may not look gone to it yet */
      retry(ad);
      return;
   }
   take_answer(ad, &msg);
}

static void
on_timer(evutil_socket_t fd, short what, void *data)
{
   struct srv_adoption *ad = data;
   if (ad->fd >= 0)
      retry(ad); /* no answer in time */
   else
      try_adopt(ad);
}

static void
try_adopt(struct srv_adoption *ad)
{
   struct srv_server *server = ad->server;
   struct sockaddr_un addr = {.sun_family = AF_UNIX};
   path_of(server, addr.sun_path, sizeof(addr.sun_path), ad->a.client_id, "sock");
   ad->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
   if (ad->fd < 0) {
      retry(ad);
      return;
   }
   if (connect(ad->fd, (const struct sockaddr *)&addr, sizeof(addr)) < 0) {
      if (errno == ECONNREFUSED || errno == ENOENT) {
         ad->page_sent = false; /* (nothing holds its slot) */
         give_up(ad, UTIL_LOG_INFO, "its worker is gone", true);
         return;
      }
      retry(ad); /* its backlog is full: later */
      return;
   }
   /* its slot on this server's schedule page, given once */
   if (ad->a.sched_slot < 0 && ad->takes_page) {
      struct srv_client c = who(ad);
      if (srv_share_take(server, &c) == 0) {
         ad->a.sched_slot = c.sched_slot;
         ad->a.nice = c.nice;
      }
   }
   Gpud__AdoptRequest req = GPUD__ADOPT_REQUEST__INIT;
   req.token.data = ad->token;
   req.token.len = sizeof(ad->token);
   req.server_version = (char *)daemon_version;
   req.control_version = DAEMON_CONTROL_VERSION;
   req.scheduled = ad->a.sched_slot >= 0;
   req.sched_slot = req.scheduled ? (uint32_t)ad->a.sched_slot : 0;
   Gpud__WorkerMessage m = GPUD__WORKER_MESSAGE__INIT;
   m.msg_case = GPUD__WORKER_MESSAGE__MSG_ADOPT_REQUEST;
   m.adopt_request = &req;
   if (wire_worker_send(ad->fd, &m, req.scheduled ? &server->sched_fd : NULL,
                        req.scheduled ? 1 : 0) < 0) {
      retry(ad);
      return;
   }
   ad->page_sent |= req.scheduled;
   event_assign(ad->read_ev, server->base, ad->fd, EV_READ | EV_PERSIST, on_answer, ad);
   event_add(ad->read_ev, NULL);
   struct timeval tv = {ANSWER_MS / 1000, (ANSWER_MS % 1000) * 1000};
   evtimer_add(ad->timer, &tv);
}

void
srv_adopt_begin(struct srv_server *server)
{
   struct srv_adoption *ad;
   util_list_for_each_safe(ad, &server->adoptions, link) {
      ad->read_ev = event_new(server->base, -1, 0, on_answer, ad);
      ad->timer = evtimer_new(server->base, on_timer, ad);
      if (!ad->read_ev || !ad->timer) {
         give_up(ad, UTIL_LOG_ERR, "out of memory", false);
         continue;
      }
      try_adopt(ad);
   }
}

/* The records earlier servers left: each a worker to adopt (its id stays
 * taken whatever becomes of it). */
static void
read_records(struct srv_server *server)
{
   DIR *d = opendir(server->adopt_dir);
   if (!d)
      return;
   struct dirent *e;
   while ((e = readdir(d))) {
      size_t len = strlen(e->d_name);
      if (strncmp(e->d_name, "client-", 7) || len < 7 + 6 ||
          strcmp(e->d_name + len - 6, ".state"))
         continue;
      struct srv_adoption *ad = calloc(1, sizeof(*ad));
      if (!ad)
         break;
      ad->server = server;
      ad->fd = ad->a.pidfd = ad->a.control_fd = ad->a.client_fd = ad->a.status_fd = -1;
      ad->a.sched_slot = -1;
      util_msg_reader_init(&ad->reader, 4096);
      util_list_add_tail(&server->adoptions, &ad->link);
      if (read_record(server, e->d_name, ad) < 0) {
         util_warn("%s/%s: not a worker's record; removed", server->adopt_dir, e->d_name);
         char path[PATH_MAX];
         snprintf(path, sizeof(path), "%s/%s", server->adopt_dir, e->d_name);
         unlink(path);
         adoption_free(ad);
         continue;
      }
      if (ad->a.client_id >= server->next_client_id)
         server->next_client_id = ad->a.client_id;
   }
   closedir(d);
}

int
srv_adopt_init(struct srv_server *server)
{
   if (server->cfg.isolation != SRV_ISOLATION_PROCESS)
      return 0; /* threads end with their server */
   char *dir = dir_path(server);
   if (!dir) {
      util_warn("no place beside the socket for workers' records: workers end with this "
                "server");
      return 0;
   }
   int r = make_dir(dir);
   if (r < 0) {
      util_err("%s: %s: workers end with this server", dir,
               r == -EPERM ? "not a directory only gpud's user may enter" : strerror(-r));
      free(dir);
      return 0;
   }
   server->adopt_dir = dir;
   /* ids go on from where earlier servers left them */
   server->id_mark = read_mark(server);
   if (server->id_mark > server->next_client_id + 1)
      server->next_client_id = server->id_mark - 1;
   read_records(server);
   unsigned n = (unsigned)util_list_length(&server->adoptions);
   if (n)
      util_notice("%u worker(s) of an earlier server to adopt", n);
   return 0;
}

void
srv_adopt_finish(struct srv_server *server)
{
   struct srv_adoption *ad;
   util_list_for_each_safe(ad, &server->adoptions, link)
      adoption_free(ad); /* their records stay for the next server */
   free(server->adopt_dir);
   server->adopt_dir = NULL;
}
