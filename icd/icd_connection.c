/* SPDX-License-Identifier: MIT */
/*
 * One connection to a daemon: the handshake, queued asynchronous commands,
 * synchronous calls and their replies, and the physical-device query cache.
 *
 * Replies are read by whichever waiting thread gets there first (the
 * leader); it hands other threads' replies over by sequence number.  When
 * the daemon goes away the leader sees it at once and every waiter, present
 * and future, gets VK_ERROR_DEVICE_LOST.
 */
#include "icd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util_fd.h"
#include "util_env.h"
#include "util_macros.h"
#include "util_spin.h"
#include "wire_control.h"
#include "wire_gen.h"
#include "util_time.h"

#define ICD_FLUSH_THRESHOLD (256u * 1024u)
#define ICD_MAX_REPLY (512u << 20)
/* A reply usually comes within microseconds: polling for it (yielding the
 * CPU) beats sleeping, whose wake-up alone can cost tens of microseconds
 * when the daemon runs on another CPU. */
#define ICD_REPLY_SPIN_NS (50u * 1000u)
/* The rings: the command ring bounds what the application has in flight
 * (a larger message streams through it); replies and the daemon's
 * messages come back through the other.  Pages are only touched as the
 * rings fill. */
#define ICD_COMMAND_RING_SIZE (4u << 20)
#define ICD_REPLY_RING_SIZE (1u << 20)
/* Sleeping for the daemon, look at its socket this often. */
#define ICD_RING_SLICE_NS (20ull * 1000 * 1000)

uint32_t icd_debug;

void
icd_log(const char *fmt, ...)
{
   char buf[1024];
   va_list ap;
   va_start(ap, fmt);
   int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
   va_end(ap);
   if (n < 0)
      return;
   if ((size_t)n > sizeof(buf) - 2)
      n = sizeof(buf) - 2;
   buf[n++] = '\n';
   ssize_t w = write(STDERR_FILENO, "gpud-icd: ", 10);
   w = write(STDERR_FILENO, buf, (size_t)n);
   (void)w;
}

static const char *
program_name(void)
{
   extern char *program_invocation_short_name;
   return program_invocation_short_name ? program_invocation_short_name : "vulkan-app";
}

/* How long connecting and the handshake may take per daemon:
 * GPUD_CONNECT_TIMEOUT_MS, default ICD_CONNECT_TIMEOUT_MS.  A daemon that
 * does not answer (or something else listening in the socket folder) costs
 * an application at most this at vkCreateInstance. */
uint64_t
icd_connect_timeout_ns(void)
{
   uint64_t ms = ICD_CONNECT_TIMEOUT_MS;
   util_env_number("GPUD_CONNECT_TIMEOUT_MS", 1, 3599999, &ms);
   return ms * 1000000ull;
}

/* Waits for events until the deadline; what is ready already counts even
 * when the deadline has passed (answers that came while another daemon was
 * being waited for). */
static int
poll_until(int fd, short events, uint64_t deadline_ns)
{
   for (;;) {
      uint64_t now = util_now_ns();
      struct pollfd p = {.fd = fd, .events = events};
      int ms = now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
      int n = poll(&p, 1, ms);
      if (n > 0)
         return 0;
      if (n < 0 && errno != EINTR)
         return -errno;
      if (n == 0 && ms == 0)
         return -ETIMEDOUT;
   }
}

static int
send_hello(struct icd_connection *conn, uint64_t deadline_ns)
{
   Gpud__Hello hello = GPUD__HELLO__INIT;
   hello.protocol_version = WIRE_PROTOCOL_VERSION;
   hello.command_table_hash = WIRE_COMMAND_TABLE_HASH;
   hello.vk_header_version = WIRE_VK_HEADER_VERSION;
   hello.client_name = (char *)program_name();
   hello.role = GPUD__ROLE__ROLE_VULKAN;
   /* GPUD_NICE: a lower priority on the GPU for this program (only lower:
    * the daemon takes a nice level above the one it would give) */
   const char *nice = getenv("GPUD_NICE");
   if (nice && *nice) {
      char *end = NULL;
      long n = strtol(nice, &end, 10);
      if (*end || n < -20 || n > 19)
         icd_dbg(ICD_DEBUG_INIT, "GPUD_NICE=%s: not a nice level from -20 to 19", nice);
      else
         hello.nice = (int32_t)n;
   }
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_HELLO;
   m.hello = &hello;
   uint64_t now = util_now_ns();
   int ms = deadline_ns > now ? (int)((deadline_ns - now) / 1000000) : 0;
   return wire_control_send_timeout(conn->fd, &m, NULL, 0, ms);
}

static int
receive_welcome(struct icd_connection *conn, uint64_t deadline_ns)
{
   int r = poll_until(conn->fd, POLLIN, deadline_ns);
   if (r < 0)
      return r;
   struct util_msg msg;
   r = util_msg_recv_packet(conn->fd, &conn->reader, &msg);
   /* A daemon that refused and closed before reading the Hello resets the
    * connection; its reason may still wait behind the reset. */
   if (r == -ECONNRESET)
      r = util_msg_recv_packet(conn->fd, &conn->reader, &msg);
   if (r < 0)
      return r == -EAGAIN ? -ECONNRESET : r;
   util_msg_close_fds(&msg);
   if (msg.type != UTIL_MSG_CONTROL)
      return -EPROTO;
   Gpud__ControlMessage *reply = wire_control_unpack(msg.data, msg.size);
   if (!reply)
      return -EPROTO;
   r = 0;
   if (reply->msg_case == GPUD__CONTROL_MESSAGE__MSG_WELCOME) {
      snprintf(conn->device_name, sizeof(conn->device_name), "%s",
               reply->welcome->device_name ? reply->welcome->device_name : "");
      conn->max_objects = reply->welcome->max_objects;
   } else if (reply->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT) {
      /* A refusal is something the user must see: say it once. */
      icd_log("daemon at %s refused the connection: %s", conn->socket_path,
              reply->disconnect->reason ? reply->disconnect->reason : "(no reason)");
      r = -ECONNREFUSED;
   } else {
      r = -EPROTO;
   }
   wire_control_free(reply);
   return r;
}

/* Connects without blocking: a listener whose backlog is full is tried
 * again until the deadline. */
static int
connect_nonblocking(const char *path, uint64_t deadline_ns, int *ret_fd)
{
   struct sockaddr_un addr = {.sun_family = AF_UNIX};
   if (strlen(path) >= sizeof(addr.sun_path))
      return -ENAMETOOLONG;
   memcpy(addr.sun_path, path, strlen(path) + 1);
   int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
   if (fd < 0)
      return -errno;
   for (;;) {
      if (connect(fd, (const struct sockaddr *)&addr, sizeof(addr)) == 0)
         break;
      int e = errno;
      if (e == EINTR)
         continue;
      if (e == EINPROGRESS) {
         int r = poll_until(fd, POLLOUT, deadline_ns);
         int err = 0;
         socklen_t len = sizeof(err);
         if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
            r = -err;
         if (r < 0) {
            close(fd);
            return r;
         }
         break;
      }
      if (e != EAGAIN || util_now_ns() >= deadline_ns) {
         close(fd);
         return e == EAGAIN ? -ETIMEDOUT : -e;
      }
      struct timespec ts = {0, 5 * 1000000L}; /* its backlog is full: again soon */
      nanosleep(&ts, NULL);
   }
   *ret_fd = fd;
   return 0;
}

int
icd_connection_begin(const char *path, uint64_t deadline_ns, struct icd_connection **ret_conn)
{
   struct icd_connection *conn = calloc(1, sizeof(*conn));
   if (!conn)
      return -ENOMEM;
   conn->fd = -1;
   util_list_init(&conn->park_link);
   conn->socket_path = strdup(path);
   atomic_init(&conn->next_id, 1);
   atomic_init(&conn->lost, false);
   pthread_mutex_init(&conn->send_mutex, NULL);
   pthread_mutex_init(&conn->recv_mutex, NULL);
   pthread_cond_init(&conn->recv_cond, NULL);
   pthread_mutex_init(&conn->cache_mutex, NULL);
   wire_enc_init(&conn->stream);
   util_msg_reader_init(&conn->reader, ICD_MAX_REPLY);

   int r = conn->socket_path ? connect_nonblocking(path, deadline_ns, &conn->fd) : -ENOMEM;
   if (r >= 0)
      r = send_hello(conn, deadline_ns);
   /* A daemon that refuses a peer says why and closes at once, perhaps
    * before the Hello arrived: the reason is still there to read. */
   if (r == -ECONNRESET)
      r = 0;
   if (r < 0) {
      icd_dbg(ICD_DEBUG_INIT, "no daemon at %s: %s", path, strerror(-r));
      icd_connection_destroy(conn);
      return r;
   }
   *ret_conn = conn;
   return 0;
}

/* The rings, and the message that hands them to the daemon: the first
 * after the Welcome.  Commands may go into them before a worker reads. */
static int
send_ring_setup(struct icd_connection *conn, uint64_t deadline_ns)
{
   int fd;
   int r = util_ring_create(ICD_COMMAND_RING_SIZE, ICD_REPLY_RING_SIZE, &fd, &conn->ring_map);
   if (r < 0)
      return r;
   util_ring_init(&conn->commands, conn->ring_map, ICD_COMMAND_RING_SIZE, ICD_REPLY_RING_SIZE,
                  true, true, 0);
   util_ring_init(&conn->replies, conn->ring_map, ICD_COMMAND_RING_SIZE, ICD_REPLY_RING_SIZE,
                  false, false, ICD_MAX_REPLY);
   conn->ring_wait = (struct util_ring_wait){
      .socket_fd = conn->fd,
      .closing = &conn->lost,
      .spin_ns = ICD_REPLY_SPIN_NS,
      .slice_ns = ICD_RING_SLICE_NS,
   };
   /* GPUD_QUIET_STREAMS=0 or 1 overrides the machine's choice (for
    * measuring) */
   const char *quiet = getenv("GPUD_QUIET_STREAMS");
   conn->quiet_streams = quiet && (!strcmp(quiet, "0") || !strcmp(quiet, "1"))
                            ? quiet[0] == '1'
                            : util_spin_yields();
   uint64_t now = util_now_ns();
   int ms = deadline_ns > now ? (int)((deadline_ns - now) / 1000000) : 0;
   r = wire_control_send_ring_setup(conn->fd, ICD_COMMAND_RING_SIZE, ICD_REPLY_RING_SIZE, fd, ms);
   close(fd);
   return r;
}

int
icd_connection_complete(struct icd_connection *conn, uint64_t deadline_ns)
{
   int r = receive_welcome(conn, deadline_ns);
   if (r >= 0)
      r = send_ring_setup(conn, deadline_ns);
   if (r < 0) {
      icd_dbg(ICD_DEBUG_INIT, "daemon at %s: %s", conn->socket_path,
              r == -ETIMEDOUT ? "no answer in time" : strerror(-r));
      return r;
   }
   /* From here on calls block (sends within the daemon's flow control). */
   int fl = fcntl(conn->fd, F_GETFL);
   if (fl >= 0)
      fcntl(conn->fd, F_SETFL, fl & ~O_NONBLOCK);
   icd_dbg(ICD_DEBUG_INIT, "connected to %s (%s)", conn->socket_path, conn->device_name);
   return 0;
}

int
icd_connection_open(const char *path, struct icd_connection **ret_conn)
{
   uint64_t deadline = util_now_ns() + icd_connect_timeout_ns();
   struct icd_connection *conn;
   int r = icd_connection_begin(path, deadline, &conn);
   if (r < 0)
      return r;
   r = icd_connection_complete(conn, deadline);
   if (r < 0) {
      icd_connection_destroy(conn);
      return r;
   }
   *ret_conn = conn;
   return 0;
}

void
icd_connection_destroy(struct icd_connection *conn)
{
   if (!conn)
      return;
   if (conn->fd >= 0 && !icd_connection_is_lost(conn))
      icd_connection_flush(conn);
   util_fd_close(&conn->fd);
   for (unsigned b = 0; b < ICD_CACHE_BUCKETS; b++) {
      struct icd_cache_entry *c = conn->cache[b];
      while (c) {
         struct icd_cache_entry *next = c->next;
         free(c->key);
         free(c->reply);
         free(c);
         c = next;
      }
   }
   if (conn->ring_map) {
      util_ring_finish(&conn->commands);
      util_ring_finish(&conn->replies);
      util_ring_unmap(conn->ring_map, ICD_COMMAND_RING_SIZE, ICD_REPLY_RING_SIZE);
   }
   wire_enc_finish(&conn->stream);
   util_msg_reader_finish(&conn->reader);
   pthread_mutex_destroy(&conn->send_mutex);
   pthread_mutex_destroy(&conn->recv_mutex);
   pthread_cond_destroy(&conn->recv_cond);
   pthread_mutex_destroy(&conn->cache_mutex);
   free(conn->socket_path);
   free(conn);
}

bool
icd_connection_lost(struct icd_connection *conn)
{
   return icd_connection_is_lost(conn);
}

void
icd_connection_set_lost(struct icd_connection *conn, const char *why)
{
   if (!atomic_exchange(&conn->lost, true))
      icd_dbg(ICD_DEBUG_WIRE | ICD_DEBUG_SYNC, "connection to %s lost: %s",
              conn->socket_path, why);
   /* Wake every waiter; shutting the socket down also ends a blocked
    * leader's recvmsg. */
   if (conn->fd >= 0)
      shutdown(conn->fd, SHUT_RDWR);
   if (conn->ring_map)
      util_ring_wake_consumer(&conn->replies);
   pthread_mutex_lock(&conn->recv_mutex);
   pthread_cond_broadcast(&conn->recv_cond);
   pthread_mutex_unlock(&conn->recv_mutex);
}

/* Called with send_mutex held: a message into the command ring; a quiet
 * one (without fds) leaves a sleeping worker asleep, noted for the next
 * flush that wakes it. */
static int
ring_send(struct icd_connection *conn, const void *data, size_t size, const int *fds,
          unsigned n_fds, bool quiet)
{
   quiet = quiet && !n_fds;
   int r = quiet ? util_ring_send_quiet(&conn->commands, &conn->ring_wait, UTIL_MSG_STREAM, data,
                                        size)
                 : util_ring_send(&conn->commands, &conn->ring_wait, UTIL_MSG_STREAM, data, size,
                                  fds, n_fds, UINT64_MAX);
   atomic_store(&conn->unwoken, quiet);
   return r;
}

/* Called with send_mutex held.  quiet: without waking the worker (what is
 * queued waits for the next flush that does). */
static VkResult
flush_locked(struct icd_connection *conn, bool quiet)
{
   if (conn->stream.size == 0) {
      if (!quiet && atomic_load_explicit(&conn->unwoken, memory_order_relaxed) &&
          atomic_exchange(&conn->unwoken, false))
         util_ring_nudge(&conn->commands);
      return VK_SUCCESS;
   }
   if (icd_connection_is_lost(conn)) {
      wire_enc_reset(&conn->stream);
      return VK_ERROR_DEVICE_LOST;
   }
   icd_dbg(ICD_DEBUG_WIRE, "send %zu bytes, %u fds", conn->stream.size, conn->stream.n_fds);
   /* the application's fds the commands name (the daemon gets copies) */
   int r = ring_send(conn, conn->stream.data, conn->stream.size, conn->stream.fds,
                     conn->stream.n_fds, quiet);
   wire_enc_reset(&conn->stream);
   if (r < 0) {
      icd_connection_set_lost(conn, strerror(-r));
      return VK_ERROR_DEVICE_LOST;
   }
   return VK_SUCCESS;
}

bool
icd_connection_gone(struct icd_connection *conn)
{
   if (icd_connection_is_lost(conn))
      return true;
   struct pollfd p = {.fd = conn->fd, .events = 0};
   if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) {
      icd_connection_hung_up(conn);
      return true;
   }
   return false;
}

VkResult
icd_connection_flush(struct icd_connection *conn)
{
   pthread_mutex_lock(&conn->send_mutex);
   VkResult r = flush_locked(conn, false);
   pthread_mutex_unlock(&conn->send_mutex);
   return r;
}

/* Sends a separately recorded stream after what is queued. */
VkResult
icd_connection_send_stream(struct icd_connection *conn, const void *data, size_t size)
{
   pthread_mutex_lock(&conn->send_mutex);
   VkResult result = flush_locked(conn, conn->quiet_streams);
   if (result == VK_SUCCESS && size) {
      int r = ring_send(conn, data, size, NULL, 0, conn->quiet_streams);
      if (r < 0) {
         icd_connection_set_lost(conn, strerror(-r));
         result = VK_ERROR_DEVICE_LOST;
      }
   }
   pthread_mutex_unlock(&conn->send_mutex);
   return result;
}

struct wire_enc *
icd_call_begin(struct icd_call *call, struct icd_connection *conn, uint32_t op, bool sync,
               bool cacheable)
{
   memset(call, 0, offsetof(struct icd_call, small));
   call->conn = conn;
   call->op = op;
   call->sync = sync;
   call->cacheable = cacheable;
   pthread_mutex_lock(&conn->send_mutex);
   if (sync)
      call->seq = ++conn->next_seq;
   call->cmd_offset = wire_enc_begin_cmd(&conn->stream, op, sync ? WIRE_CMD_REPLY : 0,
                                         call->seq);
   return &conn->stream;
}

/* Where a reply of size bytes goes: the call's own room when it fits. */
static void *
reply_buffer(struct icd_call *call, size_t size)
{
   return size <= sizeof(call->small) ? (void *)call->small : malloc(size ? size : 1);
}

/* FNV-1a of a cache key */
static uint64_t
key_hash(const void *key, size_t size)
{
   const uint8_t *p = key;
   uint64_t h = 0xcbf29ce484222325ull;
   for (size_t i = 0; i < size; i++)
      h = (h ^ p[i]) * 0x100000001b3ull;
   return h;
}

static bool
cache_lookup(struct icd_call *call, const void *key, size_t key_size)
{
   struct icd_connection *conn = call->conn;
   bool found = false;
   uint64_t hash = key_hash(key, key_size);
   pthread_mutex_lock(&conn->cache_mutex);
   for (struct icd_cache_entry *c = conn->cache[hash % ICD_CACHE_BUCKETS]; c; c = c->next) {
      if (c->hash == hash && c->key_size == key_size && memcmp(c->key, key, key_size) == 0) {
         call->reply_data = reply_buffer(call, c->reply_size);
         if (call->reply_data) {
            memcpy(call->reply_data, c->reply, c->reply_size);
            call->reply_size = c->reply_size;
            found = true;
         }
         break;
      }
   }
   pthread_mutex_unlock(&conn->cache_mutex);
   return found;
}

static void
cache_store(struct icd_call *call)
{
   struct icd_connection *conn = call->conn;
   struct icd_cache_entry *c = calloc(1, sizeof(*c));
   if (!c)
      return;
   c->reply = malloc(call->reply_size ? call->reply_size : 1);
   if (!c->reply) {
      free(c);
      return;
   }
   memcpy(c->reply, call->reply_data, call->reply_size);
   c->reply_size = call->reply_size;
   c->key = call->key;
   c->key_size = call->key_size;
   c->hash = key_hash(c->key, c->key_size);
   call->key = NULL;
   pthread_mutex_lock(&conn->cache_mutex);
   if (conn->cache_entries < ICD_CACHE_MAX_ENTRIES) {
      c->next = conn->cache[c->hash % ICD_CACHE_BUCKETS];
      conn->cache[c->hash % ICD_CACHE_BUCKETS] = c;
      conn->cache_entries++;
      c = NULL;
   }
   pthread_mutex_unlock(&conn->cache_mutex);
   if (c) {
      free(c->key);
      free(c->reply);
      free(c);
   }
}

/* A message the daemon has for this client: to its instance's messengers. */
static void
deliver_debug_message(struct icd_connection *conn, const Gpud__DebugMessage *dm)
{
   icd_dbg(ICD_DEBUG_INIT, "daemon: %s", dm->message ? dm->message : "");
   if (!conn->instance)
      return;
   VkDebugUtilsMessageSeverityFlagBitsEXT severity =
      (VkDebugUtilsMessageSeverityFlagBitsEXT)dm->severity;
   /* one severity bit, of the four that exist */
   if (__builtin_popcount(dm->severity) != 1 || dm->severity > 0x1000)
      severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
   VkDebugUtilsMessageTypeFlagsEXT types =
      dm->types & (VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT);
   if (!types)
      types = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
   const VkDebugUtilsMessengerCallbackDataEXT data = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT,
      .pMessageIdName = dm->message_id_name,
      .messageIdNumber = dm->message_id_number,
      .pMessage = dm->message ? dm->message : "",
   };
   icd_instance_message(conn->instance, severity, types, &data);
}

/* Hands a received reply to the call waiting for it.  recv_mutex held. */
static bool
deliver(struct icd_connection *conn, struct util_msg *msg)
{
   if (msg->type == UTIL_MSG_CONTROL) {
      Gpud__ControlMessage *m = wire_control_unpack(msg->data, msg->size);
      bool ok = false;
      if (m && m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DEBUG_MESSAGE) {
         deliver_debug_message(conn, m->debug_message);
         ok = true;
      } else if (m && m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT) {
         const char *reason = m->disconnect->reason ? m->disconnect->reason : "(no reason)";
         icd_log("daemon disconnected this client: %s", reason);
         /* why the device is lost, for the application's messengers too */
         char text[512];
         snprintf(text, sizeof(text), "gpud disconnected this client: %s", reason);
         Gpud__DebugMessage dm = GPUD__DEBUG_MESSAGE__INIT;
         dm.severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
         dm.types = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
         dm.message_id_name = (char *)"gpud-disconnected";
         dm.message = text;
         deliver_debug_message(conn, &dm);
      }
      wire_control_free(m);
      return ok;
   }
   struct wire_cmd_header h;
   if (msg->size < sizeof(h))
      return false;
   memcpy(&h, msg->data, sizeof(h));
   if (h.op != WIRE_OP_REPLY || h.size != msg->size)
      return false;
   for (struct icd_call *c = conn->pending; c; c = c->next_pending) {
      if (c->seq != h.seq || c->done)
         continue;
      size_t size = msg->size - sizeof(h);
      c->reply_data = reply_buffer(c, size);
      if (!c->reply_data) {
         c->status = VK_ERROR_OUT_OF_HOST_MEMORY;
      } else {
         memcpy(c->reply_data, (const uint8_t *)msg->data + sizeof(h), size);
         c->reply_size = size;
      }
      for (unsigned i = 0; i < msg->n_fds; i++)
         c->fds[i] = util_fd_move(&msg->fds[i]);
      c->n_fds = msg->n_fds;
      c->done = true;
      return true;
   }
   return false;
}

/* The daemon hung up: what the server said last on the socket (why the
 * worker crashed, say) goes to the application's messengers.  recv_mutex
 * held. */
static void
drain_socket(struct icd_connection *conn)
{
   struct util_msg msg;
   while (util_msg_recv_packet(conn->fd, &conn->reader, &msg) == 0) {
      if (msg.type == UTIL_MSG_CONTROL)
         deliver(conn, &msg);
      util_msg_close_fds(&msg);
   }
}

void
icd_connection_hung_up(struct icd_connection *conn)
{
   pthread_mutex_lock(&conn->recv_mutex);
   if (!icd_connection_is_lost(conn))
      drain_socket(conn);
   pthread_mutex_unlock(&conn->recv_mutex);
   icd_connection_set_lost(conn, "the daemon closed the connection");
}

static VkResult
wait_reply(struct icd_call *call)
{
   struct icd_connection *conn = call->conn;
   pthread_mutex_lock(&conn->recv_mutex);
   while (!call->done && !icd_connection_is_lost(conn)) {
      if (conn->reader_active) {
         pthread_cond_wait(&conn->recv_cond, &conn->recv_mutex);
         continue;
      }
      conn->reader_active = true;
      pthread_mutex_unlock(&conn->recv_mutex);
      struct util_msg msg;
      int r = util_ring_recv(&conn->replies, &conn->ring_wait, &msg);
      pthread_mutex_lock(&conn->recv_mutex);
      conn->reader_active = false;
      if (r < 0) {
         if (r == -ECONNRESET)
            drain_socket(conn);
         pthread_mutex_unlock(&conn->recv_mutex);
         icd_connection_set_lost(conn, r == -ECONNRESET ? "the daemon closed the connection"
                                                        : strerror(-r));
         pthread_mutex_lock(&conn->recv_mutex);
      } else {
         bool ok = deliver(conn, &msg);
         util_msg_close_fds(&msg);
         if (!ok) {
            pthread_mutex_unlock(&conn->recv_mutex);
            icd_connection_set_lost(conn, "unexpected message from the daemon");
            pthread_mutex_lock(&conn->recv_mutex);
         }
      }
      pthread_cond_broadcast(&conn->recv_cond);
   }
   /* unlink */
   for (struct icd_call **p = &conn->pending; *p; p = &(*p)->next_pending) {
      if (*p == call) {
         *p = call->next_pending;
         break;
      }
   }
   bool done = call->done;
   pthread_mutex_unlock(&conn->recv_mutex);
   if (!done)
      return VK_ERROR_DEVICE_LOST;
   return call->status;
}

VkResult
icd_call_end(struct icd_call *call)
{
   struct icd_connection *conn = call->conn;
   struct wire_enc *e = &conn->stream;
   wire_enc_end_cmd(e, call->cmd_offset);
   if (e->oom) {
      /* Drop the partial command; what was queued before is lost too, so
       * the connection can no longer be trusted. */
      wire_enc_reset(e);
      pthread_mutex_unlock(&conn->send_mutex);
      icd_connection_set_lost(conn, "out of memory encoding a command");
      return VK_ERROR_OUT_OF_HOST_MEMORY;
   }
   if (!call->sync) {
      VkResult r = VK_SUCCESS;
      if (icd_connection_is_lost(conn))
         wire_enc_reset(e);
      else if (e->size >= ICD_FLUSH_THRESHOLD)
         r = flush_locked(conn, conn->quiet_streams);
      pthread_mutex_unlock(&conn->send_mutex);
      (void)r;
      return VK_SUCCESS;
   }

   if (call->cacheable) {
      /* The key is the op and the parameters (not the sequence number). */
      const uint8_t *params = e->data + call->cmd_offset + sizeof(struct wire_cmd_header);
      size_t size = e->size - call->cmd_offset - sizeof(struct wire_cmd_header);
      call->key = malloc(size + sizeof(uint32_t));
      if (call->key) {
         memcpy(call->key, &call->op, sizeof(uint32_t));
         memcpy((uint8_t *)call->key + sizeof(uint32_t), params, size);
         call->key_size = size + sizeof(uint32_t);
      }
      if (call->key && cache_lookup(call, call->key, call->key_size)) {
         free(call->key);
         call->key = NULL;
         e->size = call->cmd_offset;
         pthread_mutex_unlock(&conn->send_mutex);
         call->cacheable = false; /* nothing to store */
         call->done = true;
         wire_dec_init(&call->reply, call->reply_data, call->reply_size, NULL);
         return VK_SUCCESS;
      }
   }

   icd_dbg(ICD_DEBUG_SYNC, "round trip: %s", wire_op_name(call->op));
   /* Register before sending so that a quick reply finds us. */
   pthread_mutex_lock(&conn->recv_mutex);
   call->next_pending = conn->pending;
   conn->pending = call;
   pthread_mutex_unlock(&conn->recv_mutex);

   VkResult r = flush_locked(conn, false);
   pthread_mutex_unlock(&conn->send_mutex);
   if (r == VK_SUCCESS)
      r = wait_reply(call);
   else
      wait_reply(call); /* unlinks; the connection is lost */
   if (r != VK_SUCCESS) {
      free(call->key);
      call->key = NULL;
      return r;
   }
   wire_dec_init(&call->reply, call->reply_data, call->reply_size, NULL);
   call->reply.fds = call->fds;
   call->reply.n_fds = call->n_fds;
   return VK_SUCCESS;
}

VkResult
icd_call_reply_done(struct icd_call *call)
{
   VkResult r = VK_SUCCESS;
   if (call->reply.fatal || call->reply.p != call->reply.end) {
      icd_dbg(ICD_DEBUG_WIRE, "bad reply to %s: %s (%zu bytes left)", wire_op_name(call->op),
              call->reply.error ? call->reply.error : "too long",
              (size_t)(call->reply.end - call->reply.p));
      icd_connection_set_lost(call->conn, call->reply.error ? call->reply.error
                                                             : "reply longer than expected");
      r = VK_ERROR_DEVICE_LOST;
   } else if (call->cacheable && call->key) {
      cache_store(call);
   }
   free(call->key);
   call->key = NULL;
   if (call->reply_data != (void *)call->small)
      free(call->reply_data);
   call->reply_data = NULL;
   for (unsigned i = 0; i < call->n_fds; i++)
      util_fd_close(&call->fds[i]);
   call->n_fds = 0;
   return r;
}

int
icd_call_take_fd(struct icd_call *call)
{
   for (unsigned i = 0; i < call->n_fds; i++) {
      if (call->fds[i] >= 0)
         return util_fd_move(&call->fds[i]);
   }
   return -1;
}

void
icd_connection_count_objects(struct icd_connection *conn, int64_t delta)
{
   atomic_fetch_add_explicit(&conn->objects, delta, memory_order_relaxed);
}

/* ICD_OBJECT_MARGIN covers creates racing from other threads. */
#define ICD_OBJECT_MARGIN 4096

bool
icd_connection_room(struct icd_connection *conn)
{
   int64_t n = atomic_load_explicit(&conn->objects, memory_order_relaxed);
   return conn->max_objects > ICD_OBJECT_MARGIN &&
          (uint64_t)(n > 0 ? n : 0) < conn->max_objects - ICD_OBJECT_MARGIN;
}

/* ---- connections between instances ----------------------------------------- */

/* Parked connections, oldest first, and the thread that closes them when
 * they have waited long enough (it ends when none is left). */
static struct {
   pthread_mutex_t mutex;
   pthread_cond_t cond;
   struct util_list conns;
   bool reaper;
} parked = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {&parked.conns, &parked.conns},
            false};

static pthread_once_t idle_once = PTHREAD_ONCE_INIT;
static uint64_t idle_wait_ns = (uint64_t)ICD_IDLE_CONNECTION_MS * 1000000ull;

static void
read_idle_wait(void)
{
   uint64_t ms;
   if (util_env_number("GPUD_IDLE_CONNECTION_MS", 0, 3599999, &ms))
      idle_wait_ns = ms * 1000000ull;
}

static void *
reaper_main(void *data)
{
   (void)data;
   pthread_mutex_lock(&parked.mutex);
   while (!util_list_empty(&parked.conns)) {
      struct icd_connection *oldest =
         util_list_first(&parked.conns, struct icd_connection, park_link);
      uint64_t due = oldest->parked_ns + idle_wait_ns;
      uint64_t now = util_now_ns();
      if (now < due) {
         /* parked.cond has the default clock: a realtime deadline */
         const struct timespec ts = util_realtime_after(due - now);
         pthread_cond_timedwait(&parked.cond, &parked.mutex, &ts);
         continue;
      }
      util_list_remove(&oldest->park_link);
      pthread_mutex_unlock(&parked.mutex);
      icd_dbg(ICD_DEBUG_INIT, "closing the idle connection to %s", oldest->socket_path);
      icd_connection_destroy(oldest);
      pthread_mutex_lock(&parked.mutex);
   }
   parked.reaper = false;
   pthread_mutex_unlock(&parked.mutex);
   return NULL;
}

void
icd_connection_park(struct icd_connection *conn)
{
   pthread_once(&idle_once, read_idle_wait);
   /* what the last instance queued (its destruction) goes now */
   if (icd_connection_flush(conn) != VK_SUCCESS || !idle_wait_ns) {
      icd_connection_destroy(conn);
      return;
   }
   conn->instance = NULL;
   /* the daemon destroyed every child of the instance with it */
   atomic_store(&conn->objects, 0);
   conn->parked_ns = util_now_ns();
   conn->pid = getpid();
   pthread_mutex_lock(&parked.mutex);
   util_list_add_tail(&parked.conns, &conn->park_link);
   if (!parked.reaper) {
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      pthread_t thread;
      parked.reaper = pthread_create(&thread, &attr, reaper_main, NULL) == 0;
      pthread_attr_destroy(&attr);
      if (!parked.reaper)
         util_list_remove(&conn->park_link);
   }
   bool kept = util_list_linked(&conn->park_link);
   pthread_mutex_unlock(&parked.mutex);
   if (!kept)
      icd_connection_destroy(conn);
}

struct icd_connection *
icd_connection_unpark(const char *path)
{
   struct icd_connection *found = NULL, *conn;
   pthread_mutex_lock(&parked.mutex);
   util_list_for_each(conn, &parked.conns, park_link) {
      /* a forked child has copies of its parent's: never its to use */
      if (conn->pid == getpid() && !strcmp(conn->socket_path, path)) {
         found = conn;
         util_list_remove(&conn->park_link);
         break;
      }
   }
   pthread_mutex_unlock(&parked.mutex);
   if (!found)
      return NULL;
   /* a daemon that went away meanwhile: a new connection instead */
   struct pollfd p = {.fd = found->fd, .events = POLLRDHUP};
   if (icd_connection_is_lost(found) ||
       (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))) {
      icd_connection_destroy(found);
      return NULL;
   }
   icd_dbg(ICD_DEBUG_INIT, "reusing the connection to %s", path);
   return found;
}
