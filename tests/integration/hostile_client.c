/* SPDX-License-Identifier: MIT */
/*
 * A client that breaks the protocol on purpose, one way per subcommand:
 *
 *   hostile_client SOCKET CASE
 *   hostile_client --list
 *
 * Each case opens its own connection(s) to the daemon at SOCKET, does a
 * valid handshake (and a valid vkCreateInstance) first where it needs one,
 * then sends the bad input and checks that the daemon answers at most with a
 * Disconnect control message and then closes the connection within
 * RECV_TIMEOUT_S seconds, without executing or answering the bad command.
 * gpud_test.py (subcommand `hostile`) runs every case against a private
 * daemon and checks the daemon's log for the reason.
 *
 * Every connection says Hello with client_name "hostile-CASE" (the foreign
 * case: "hostile-foreign-A" and "-B"), so the log lines can be told apart.
 *
 * Exit status: 0 when the daemon behaved, 1 when it did not, 2 on usage
 * errors.
 *
 * `hostile_client SOCKET no-read` (not listed) is a client that asks for
 * replies and never reads them, for the send-deadline test.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util_futex.h"
#include "util_memfd.h"
#include "util_ring.h"
#include "util_transport.h"
#include "wire_control.h"
#include "wire_gen.h"

#define RECV_TIMEOUT_S 5
#define MAX_REPLY (64u << 20)

/* Ids this client picks, as the ICD does: the instance is 1. */
#define INSTANCE_ID 1
#define PDEV_ID 2
#define DEVICE_ID 3

static const char *socket_path;

static int
fail(const char *fmt, ...)
{
   va_list ap;
   va_start(ap, fmt);
   fputs("FAIL: ", stdout);
   vprintf(fmt, ap);
   fputc('\n', stdout);
   va_end(ap);
   fflush(stdout);
   return -1;
}

static void
note(const char *fmt, ...)
{
   va_list ap;
   va_start(ap, fmt);
   vprintf(fmt, ap);
   fputc('\n', stdout);
   va_end(ap);
   fflush(stdout);
}

/* ---- one connection ------------------------------------------------------- */

#define RING_SIZE (256u * 1024u)

struct conn {
   int fd;
   char name[64];
   uint32_t seq;
   struct util_msg_reader reader;
   struct wire_enc enc;
   /* after the handshake, as the ICD does: every message goes through the
    * rings, the socket carries fds */
   void *ring_map;
   struct util_ring out, in;
   struct util_ring_wait wait;
};

static int
conn_open(struct conn *c, const char *name)
{
   memset(c, 0, sizeof(*c));
   c->fd = -1;
   snprintf(c->name, sizeof(c->name), "%s", name);
   util_msg_reader_init(&c->reader, MAX_REPLY);
   wire_enc_init(&c->enc);
   int r = util_socket_connect(socket_path, &c->fd);
   if (r < 0)
      return fail("%s: cannot connect to %s: %s", c->name, socket_path, strerror(-r));
   struct timeval tv = {.tv_sec = RECV_TIMEOUT_S};
   if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
      return fail("%s: SO_RCVTIMEO: %s", c->name, strerror(errno));
   return 0;
}

static void
conn_close(struct conn *c)
{
   if (c->ring_map) {
      util_ring_finish(&c->out);
      util_ring_finish(&c->in);
      util_ring_unmap(c->ring_map, RING_SIZE, RING_SIZE);
      c->ring_map = NULL;
   }
   if (c->fd >= 0)
      close(c->fd);
   c->fd = -1;
   util_msg_reader_finish(&c->reader);
   wire_enc_finish(&c->enc);
}

static int
send_hello(struct conn *c, uint32_t version, uint64_t hash, Gpud__Role role,
           const int *fds, unsigned n_fds)
{
   Gpud__Hello hello = GPUD__HELLO__INIT;
   hello.protocol_version = version;
   hello.command_table_hash = hash;
   hello.vk_header_version = WIRE_VK_HEADER_VERSION;
   hello.client_name = c->name;
   hello.role = role;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_HELLO;
   m.hello = &hello;
   int r = wire_control_send_timeout(c->fd, &m, fds, n_fds, -1);
   if (r < 0)
      return fail("%s: sending Hello: %s", c->name, strerror(-r));
   return 0;
}

static int
expect_welcome(struct conn *c)
{
   struct util_msg msg;
   int r = util_msg_recv(c->fd, &c->reader, &msg);
   if (r < 0)
      return fail("%s: no answer to a valid Hello: %s", c->name, strerror(-r));
   util_msg_close_fds(&msg);
   Gpud__ControlMessage *m =
       msg.type == UTIL_MSG_CONTROL ? wire_control_unpack(msg.data, msg.size) : NULL;
   if (!m || m->msg_case != GPUD__CONTROL_MESSAGE__MSG_WELCOME) {
      const char *reason = m && m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT
                               ? m->disconnect->reason
                               : "(not a control message)";
      fail("%s: a valid Hello was not welcomed: %s", c->name, reason ? reason : "");
      wire_control_free(m);
      return -1;
   }
   note("%s: welcomed as client %" PRIu64, c->name, m->welcome->client_id);
   wire_control_free(m);
   return 0;
}

/* The rings, as the ICD sets them up after the Welcome. */
static int
setup_rings(struct conn *c)
{
   int fd;
   int r = util_ring_create(RING_SIZE, RING_SIZE, &fd, &c->ring_map);
   if (r < 0)
      return fail("%s: rings: %s", c->name, strerror(-r));
   util_ring_init(&c->out, c->ring_map, RING_SIZE, RING_SIZE, true, true, 0);
   util_ring_init(&c->in, c->ring_map, RING_SIZE, RING_SIZE, false, false, MAX_REPLY);
   c->wait = (struct util_ring_wait){
      .socket_fd = c->fd,
      .spin_ns = 20000,
      .slice_ns = 20000000,
      .timeout_ns = RECV_TIMEOUT_S * 1000000000ull,
   };
   r = wire_control_send_ring_setup(c->fd, RING_SIZE, RING_SIZE, fd, -1);
   close(fd);
   if (r < 0)
      return fail("%s: sending the rings: %s", c->name, strerror(-r));
   return 0;
}

static int
handshake(struct conn *c)
{
   if (send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH,
                  GPUD__ROLE__ROLE_VULKAN, NULL, 0) < 0 ||
       expect_welcome(c) < 0)
      return -1;
   return setup_rings(c);
}

/* The next message from the daemon: from the rings once they are set up
 * (then, when the worker has hung up, what the server said last on the
 * socket), else from the socket.  -EAGAIN when nothing came in time. */
static int
conn_recv(struct conn *c, struct util_msg *msg)
{
   if (!c->ring_map)
      return util_msg_recv(c->fd, &c->reader, msg);
   int r = util_ring_recv(&c->in, &c->wait, msg);
   if (r == -ECONNRESET) {
      r = util_msg_recv_packet(c->fd, &c->reader, msg);
      if (r == -EAGAIN)
         r = -ECONNRESET;
   }
   return r == -ETIMEDOUT ? -EAGAIN : r;
}

/* A control message on the connection (through the rings once set up). */
static int
conn_send_control(struct conn *c, const Gpud__ControlMessage *m)
{
   if (!c->ring_map)
      return wire_control_send(c->fd, m);
   size_t size;
   void *buf = wire_control_pack(m, &size);
   if (!buf)
      return -ENOMEM;
   int r = util_ring_send(&c->out, &c->wait, UTIL_MSG_CONTROL, buf, size, NULL, 0, UINT64_MAX);
   free(buf);
   return r;
}

/* Starts the only command of c->enc. */
static struct wire_enc *
begin_cmd(struct conn *c, uint32_t op, bool sync)
{
   wire_enc_reset(&c->enc);
   wire_enc_begin_cmd(&c->enc, op, sync ? WIRE_CMD_REPLY : 0, sync ? ++c->seq : 0);
   return &c->enc;
}

static void
end_cmd(struct conn *c)
{
   wire_enc_end_cmd(&c->enc, 0);
}

static int
send_stream(struct conn *c, const void *data, size_t size, const int *fds, unsigned n_fds)
{
   int r = c->ring_map ? util_ring_send(&c->out, &c->wait, UTIL_MSG_STREAM, data, size, fds,
                                        n_fds, UINT64_MAX)
                       : util_msg_send(c->fd, UTIL_MSG_STREAM, data, size, fds, n_fds);
   if (r < 0)
      return fail("%s: sending %zu bytes of commands: %s", c->name, size, strerror(-r));
   return 0;
}

/* Sends c->enc (one synchronous command) and reads the reply into *reply,
 * which stays valid until the next receive on c. */
static int
call_sync(struct conn *c, const char *what, struct wire_dec *reply)
{
   if (c->enc.oom)
      return fail("%s: out of memory encoding %s", c->name, what);
   uint32_t seq = c->seq;
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   struct util_msg msg;
   int r = conn_recv(c, &msg);
   if (r == -EAGAIN)
      return fail("%s: no reply to %s within %d s", c->name, what, RECV_TIMEOUT_S);
   if (r < 0)
      return fail("%s: no reply to %s: %s", c->name, what, strerror(-r));
   util_msg_close_fds(&msg);
   if (msg.type == UTIL_MSG_CONTROL) {
      Gpud__ControlMessage *m = wire_control_unpack(msg.data, msg.size);
      const char *reason = m && m->msg_case == GPUD__CONTROL_MESSAGE__MSG_DISCONNECT
                               ? m->disconnect->reason
                               : "a control message";
      fail("%s: a valid %s was answered with %s", c->name, what, reason ? reason : "");
      wire_control_free(m);
      return -1;
   }
   struct wire_cmd_header h;
   if (msg.size < sizeof(h))
      return fail("%s: reply to %s: %zu bytes", c->name, what, msg.size);
   memcpy(&h, msg.data, sizeof(h));
   if (h.op != WIRE_OP_REPLY || h.size != msg.size || h.seq != seq)
      return fail("%s: reply to %s: op %#x size %u (message %zu) seq %u (want %u)",
                  c->name, what, h.op, h.size, msg.size, h.seq, seq);
   wire_dec_init(reply, (const uint8_t *)msg.data + sizeof(h), msg.size - sizeof(h),
                 NULL);
   return 0;
}

static int
reply_done(struct conn *c, const char *what, struct wire_dec *reply)
{
   if (reply->fatal)
      return fail("%s: bad reply to %s: %s", c->name, what, reply->error);
   if (wire_dec_remaining(reply))
      return fail("%s: reply to %s has %zu bytes too many", c->name, what,
                  wire_dec_remaining(reply));
   return 0;
}

/* After the bad input: the daemon may send a Disconnect (required when
 * want_reason is set, whose reason must then contain it) and must then close
 * the connection.  A reply, a Welcome or silence is a failure. */
static int
expect_disconnect(struct conn *c, const char *want_reason)
{
   bool disconnect = false;
   for (;;) {
      struct util_msg msg;
      int r = conn_recv(c, &msg);
      if (r == -ECONNRESET) {
         if (want_reason && !disconnect)
            return fail("%s: the daemon closed the connection without a Disconnect",
                        c->name);
         note("%s: the daemon closed the connection%s", c->name,
              disconnect ? "" : " (no Disconnect message)");
         return 0;
      }
      if (r == -EAGAIN)
         return fail("%s: the daemon did not close the connection within %d s%s", c->name,
                     RECV_TIMEOUT_S, disconnect ? " of its Disconnect" : "");
      if (r < 0)
         return fail("%s: receive error instead of a close: %s", c->name, strerror(-r));
      util_msg_close_fds(&msg);
      if (msg.type == UTIL_MSG_STREAM) {
         struct wire_cmd_header h = {0};
         memcpy(&h, msg.data, msg.size < sizeof(h) ? msg.size : sizeof(h));
         return fail(
             "%s: the daemon answered the bad input (stream message, op %#x seq %u, "
             "%zu bytes) instead of disconnecting",
             c->name, h.op, h.seq, msg.size);
      }
      Gpud__ControlMessage *m = wire_control_unpack(msg.data, msg.size);
      if (!m)
         return fail("%s: malformed control message from the daemon", c->name);
      if (m->msg_case != GPUD__CONTROL_MESSAGE__MSG_DISCONNECT) {
         fail("%s: the daemon sent control message %d instead of disconnecting", c->name,
              (int)m->msg_case);
         wire_control_free(m);
         return -1;
      }
      const char *reason = m->disconnect->reason ? m->disconnect->reason : "";
      note("%s: Disconnect: %s", c->name, reason);
      bool ok = !want_reason || strstr(reason, want_reason);
      wire_control_free(m);
      if (!ok)
         return fail("%s: the Disconnect reason does not mention \"%s\"", c->name,
                     want_reason);
      if (disconnect)
         return fail("%s: two Disconnect messages", c->name);
      disconnect = true;
   }
}

/* ---- valid commands --------------------------------------------------------- */

static void
encode_create_instance(struct conn *c, uint64_t id, const VkInstanceCreateInfo *ci)
{
   struct wire_object_header inst = {.id = id};
   VkInstance handle = (VkInstance)&inst;
   begin_cmd(c, WIRE_OP_vkCreateInstance, true);
   wire_enc_vkCreateInstance(&c->enc, ci, NULL, &handle);
   end_cmd(c);
}

static const VkApplicationInfo app_info = {
    .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
    .pApplicationName = "hostile_client",
    .apiVersion = VK_API_VERSION_1_3,
};

static const VkInstanceCreateInfo instance_info = {
    .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
    .pApplicationInfo = &app_info,
};

static int
create_instance(struct conn *c)
{
   encode_create_instance(c, INSTANCE_ID, &instance_info);
   struct wire_dec d;
   if (call_sync(c, "vkCreateInstance", &d) < 0)
      return -1;
   struct wire_object_header inst = {.id = INSTANCE_ID};
   VkInstance handle = (VkInstance)&inst;
   VkResult ret = VK_ERROR_UNKNOWN;
   wire_decreply_vkCreateInstance(&d, &ret, &instance_info, NULL, &handle);
   if (reply_done(c, "vkCreateInstance", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS || !handle)
      return fail("%s: vkCreateInstance: %d", c->name, ret);
   note("%s: vkCreateInstance (id %d): VK_SUCCESS", c->name, INSTANCE_ID);
   return 0;
}

static void
encode_enumerate(struct conn *c, uint64_t instance_id, uint64_t pdev_id)
{
   struct wire_object_header inst = {.id = instance_id};
   struct wire_object_header pdev = {.id = pdev_id};
   VkPhysicalDevice handle = (VkPhysicalDevice)&pdev;
   uint32_t count = 1;
   begin_cmd(c, WIRE_OP_vkEnumeratePhysicalDevices, true);
   wire_enc_vkEnumeratePhysicalDevices(&c->enc, (VkInstance)&inst, &count, &handle);
   end_cmd(c);
}

/* The physical device as icd/icd_instance.c attach_daemon() makes it. */
static int
enumerate_physical_device(struct conn *c)
{
   encode_enumerate(c, INSTANCE_ID, PDEV_ID);
   struct wire_dec d;
   if (call_sync(c, "vkEnumeratePhysicalDevices", &d) < 0)
      return -1;
   struct wire_object_header inst = {.id = INSTANCE_ID};
   struct wire_object_header pdev = {.id = PDEV_ID};
   VkPhysicalDevice handle = (VkPhysicalDevice)&pdev;
   uint32_t count = 1;
   VkResult ret = VK_ERROR_UNKNOWN;
   wire_decreply_vkEnumeratePhysicalDevices(&d, &ret, (VkInstance)&inst, &count, &handle);
   if (reply_done(c, "vkEnumeratePhysicalDevices", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS || count != 1 || !handle)
      return fail("%s: vkEnumeratePhysicalDevices: %d, count %u", c->name, ret, count);
   note("%s: vkEnumeratePhysicalDevices: physical device id %d", c->name, PDEV_ID);
   return 0;
}

static void
encode_get_properties(struct conn *c, uint64_t pdev_id)
{
   struct wire_object_header pdev = {.id = pdev_id};
   VkPhysicalDeviceProperties props;
   begin_cmd(c, WIRE_OP_vkGetPhysicalDeviceProperties, true);
   wire_enc_vkGetPhysicalDeviceProperties(&c->enc, (VkPhysicalDevice)&pdev, &props);
   end_cmd(c);
}

static int
get_properties(struct conn *c)
{
   encode_get_properties(c, PDEV_ID);
   struct wire_dec d;
   if (call_sync(c, "vkGetPhysicalDeviceProperties", &d) < 0)
      return -1;
   struct wire_object_header pdev = {.id = PDEV_ID};
   VkPhysicalDeviceProperties props;
   memset(&props, 0, sizeof(props));
   wire_decreply_vkGetPhysicalDeviceProperties(&d, (VkPhysicalDevice)&pdev, &props);
   if (reply_done(c, "vkGetPhysicalDeviceProperties", &d) < 0)
      return -1;
   props.deviceName[sizeof(props.deviceName) - 1] = '\0';
   if (strncmp(props.deviceName, "gpud", 4) != 0)
      return fail("%s: vkGetPhysicalDeviceProperties: device name \"%s\"", c->name,
                  props.deviceName);
   note("%s: vkGetPhysicalDeviceProperties: \"%s\"", c->name, props.deviceName);
   return 0;
}

/* Whether the devices made enable VK_KHR_external_memory_fd (the fd cases
 * need it; one case needs it off). */
static bool device_without_extensions;

static void
encode_create_device(struct conn *c, uint64_t pdev_id)
{
   static const float priority = 1.0f;
   static const char *const ext = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
   const VkDeviceQueueCreateInfo queue = {
       .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
       .queueFamilyIndex = 0,
       .queueCount = 1,
       .pQueuePriorities = &priority,
   };
   const VkDeviceCreateInfo ci = {
       .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
       .queueCreateInfoCount = 1,
       .pQueueCreateInfos = &queue,
       .enabledExtensionCount = device_without_extensions ? 0 : 1,
       .ppEnabledExtensionNames = &ext,
   };
   struct wire_object_header pdev = {.id = pdev_id};
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkDevice handle = (VkDevice)&dev;
   begin_cmd(c, WIRE_OP_vkCreateDevice, true);
   wire_enc_vkCreateDevice(&c->enc, (VkPhysicalDevice)&pdev, &ci, NULL, &handle);
   end_cmd(c);
}

static int
create_device(struct conn *c)
{
   encode_create_device(c, PDEV_ID);
   struct wire_dec d;
   if (call_sync(c, "vkCreateDevice", &d) < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkDevice handle = (VkDevice)&dev;
   VkResult ret = VK_ERROR_UNKNOWN;
   wire_decreply_vkCreateDevice(&d, &ret, NULL, NULL, NULL, &handle);
   if (reply_done(c, "vkCreateDevice", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS || !handle)
      return fail("%s: vkCreateDevice: %d", c->name, ret);
   note("%s: vkCreateDevice (id %d): VK_SUCCESS", c->name, DEVICE_ID);
   return 0;
}

/* Reads the u32 at offset off of c->enc, checking it is expected. */
static int
check_u32(struct conn *c, size_t off, uint32_t expected, const char *what)
{
   uint32_t v;
   if (off + 4 > c->enc.size)
      return fail("%s: unexpected encoding: %s beyond the command", c->name, what);
   memcpy(&v, c->enc.data + off, 4);
   if (v != expected)
      return fail("%s: unexpected encoding: %s is %u, expected %u", c->name, what, v,
                  expected);
   return 0;
}

static void
put_u32(struct conn *c, size_t off, uint32_t v)
{
   memcpy(c->enc.data + off, &v, 4);
}

/* A connection that has said Hello and created its instance. */
static int
open_ready(struct conn *c, const char *name)
{
   if (conn_open(c, name) < 0 || handshake(c) < 0 || create_instance(c) < 0)
      return -1;
   return 0;
}

/* ---- the cases ---------------------------------------------------------------- */

/* Random bytes as the first packet: not even a packet header. */
static int
case_garbage(struct conn *c)
{
   if (conn_open(c, "hostile-garbage") < 0)
      return -1;
   uint8_t buf[96];
   uint64_t x = 0x9e3779b97f4a7c15ull;
   for (size_t i = 0; i < sizeof(buf); i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      buf[i] = (uint8_t)x;
   }
   /* make sure the packet type is not a valid one */
   struct util_packet_header h;
   memcpy(&h, buf, sizeof(h));
   if (h.type == UTIL_MSG_CONTROL || h.type == UTIL_MSG_STREAM) {
      h.type = 0xdeadbeef;
      memcpy(buf, &h, sizeof(h));
   }
   if (send(c->fd, buf, sizeof(buf), MSG_NOSIGNAL) != (ssize_t)sizeof(buf))
      return fail("%s: send: %s", c->name, strerror(errno));
   note("%s: sent %zu random bytes", c->name, sizeof(buf));
   return expect_disconnect(c, NULL);
}

/* Random bytes after a valid handshake. */
static int
case_garbage_after_hello(struct conn *c)
{
   if (conn_open(c, "hostile-garbage-after-hello") < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH, GPUD__ROLE__ROLE_VULKAN,
                  NULL, 0) < 0 ||
       expect_welcome(c) < 0)
      return -1;
   static const uint8_t junk[] = {0xef, 0xbe, 0xad, 0xde, 0x55, 0xaa, 0x55, 0xaa,
                                  0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
   if (send(c->fd, junk, sizeof(junk), MSG_NOSIGNAL) != (ssize_t)sizeof(junk))
      return fail("%s: send: %s", c->name, strerror(errno));
   return expect_disconnect(c, NULL);
}

/* A control packet whose payload is no protobuf message. */
static int
case_garbage_control(struct conn *c)
{
   if (conn_open(c, "hostile-garbage-control") < 0)
      return -1;
   /* field 0, wire type 7: invalid in any protobuf message */
   static const uint8_t junk[] = {0x07, 0xff, 0xff, 0xff, 0xff, 0x13, 0x37, 0x00};
   int r = util_msg_send(c->fd, UTIL_MSG_CONTROL, junk, sizeof(junk), NULL, 0);
   if (r < 0)
      return fail("%s: send: %s", c->name, strerror(-r));
   return expect_disconnect(c, NULL);
}

/* Commands before any Hello. */
static int
case_not_hello(struct conn *c)
{
   if (conn_open(c, "hostile-not-hello") < 0)
      return -1;
   encode_create_instance(c, INSTANCE_ID, &instance_info);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

static int
case_version(struct conn *c)
{
   if (conn_open(c, "hostile-version") < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION + 41, WIRE_COMMAND_TABLE_HASH,
                  GPUD__ROLE__ROLE_VULKAN, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, "version");
}

static int
case_hash(struct conn *c)
{
   if (conn_open(c, "hostile-hash") < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH ^ 0x5a5a0000ull,
                  GPUD__ROLE__ROLE_VULKAN, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, "command table");
}

static int
case_role(struct conn *c)
{
   if (conn_open(c, "hostile-role") < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH, (Gpud__Role)77, NULL,
                  0) < 0)
      return -1;
   return expect_disconnect(c, "role");
}

static int
case_handshake_fds(struct conn *c)
{
   if (conn_open(c, "hostile-handshake-fds") < 0)
      return -1;
   int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
   if (fd < 0)
      return fail("%s: /dev/null: %s", c->name, strerror(errno));
   int r = send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH,
                      GPUD__ROLE__ROLE_VULKAN, &fd, 1);
   close(fd);
   if (r < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

/* vkEnumeratePhysicalDevices on an instance id never created. */
static int
case_unknown_id(struct conn *c)
{
   if (open_ready(c, "hostile-unknown-id") < 0)
      return -1;
   encode_enumerate(c, 999, PDEV_ID);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkEnumeratePhysicalDevices on instance id 999", c->name);
   return expect_disconnect(c, NULL);
}

/* vkCreateDevice on a physical device id never enumerated. */
static int
case_unregistered_pdev(struct conn *c)
{
   if (open_ready(c, "hostile-unregistered-pdev") < 0)
      return -1;
   encode_create_device(c, PDEV_ID);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkCreateDevice on physical device id %d, never enumerated", c->name,
        PDEV_ID);
   return expect_disconnect(c, NULL);
}

/* Another client's physical device id: B is disconnected, A goes on. */
static int
case_foreign(struct conn *c)
{
   struct conn b;
   memset(&b, 0, sizeof(b));
   b.fd = -1;
   int r = -1;
   if (open_ready(c, "hostile-foreign-A") < 0 || enumerate_physical_device(c) < 0 ||
       get_properties(c) < 0)
      goto out;
   if (open_ready(&b, "hostile-foreign-B") < 0)
      goto out;
   /* B never enumerated: PDEV_ID is A's */
   encode_get_properties(&b, PDEV_ID);
   if (send_stream(&b, b.enc.data, b.enc.size, NULL, 0) < 0)
      goto out;
   note("%s: sent vkGetPhysicalDeviceProperties on %s's physical device id %d", b.name,
        c->name, PDEV_ID);
   if (expect_disconnect(&b, NULL) < 0)
      goto out;
   /* A is untouched: its objects still work */
   if (get_properties(c) < 0 || create_device(c) < 0)
      goto out;
   r = 0;
out:
   conn_close(&b);
   return r;
}

/* ppEnabledExtensionNames claiming 0x7fffffff strings. */
static int
case_count(struct conn *c)
{
   if (open_ready(c, "hostile-count") < 0)
      return -1;
   static const char *const ext[] = {"VK_KHR_surface"};
   const VkInstanceCreateInfo ci = {
       .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
       .enabledExtensionCount = 1,
       .ppEnabledExtensionNames = ext,
   };
   /* a second instance (id 4): the count is checked before the id */
   encode_create_instance(c, 4, &ci);
   /* header, presence, flags, pApplicationInfo, enabledLayerCount,
    * ppEnabledLayerNames, enabledExtensionCount, ppEnabledExtensionNames,
    * then the array's element count */
   const size_t h = sizeof(struct wire_cmd_header);
   if (check_u32(c, h + 0, 1, "pCreateInfo presence") < 0 ||
       check_u32(c, h + 8, 0, "pApplicationInfo presence") < 0 ||
       check_u32(c, h + 20, 1, "enabledExtensionCount") < 0 ||
       check_u32(c, h + 24, 1, "ppEnabledExtensionNames presence") < 0 ||
       check_u32(c, h + 28, 1, "element count") < 0 ||
       check_u32(c, h + 36, (uint32_t)strlen(ext[0]), "string length") < 0)
      return -1;
   put_u32(c, h + 28, 0x7fffffff);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkCreateInstance whose extension array count is 0x7fffffff", c->name);
   return expect_disconnect(c, NULL);
}

/* A command whose size says more than the message holds. */
static int
case_size(struct conn *c)
{
   if (open_ready(c, "hostile-size") < 0)
      return -1;
   encode_enumerate(c, INSTANCE_ID, PDEV_ID);
   struct wire_cmd_header hdr;
   memcpy(&hdr, c->enc.data, sizeof(hdr));
   hdr.size += 4096;
   memcpy(c->enc.data, &hdr, sizeof(hdr));
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent a %zu-byte message whose command says %u bytes", c->name, c->enc.size,
        hdr.size);
   return expect_disconnect(c, NULL);
}

/* A command size smaller than its header. */
static int
case_size_small(struct conn *c)
{
   if (open_ready(c, "hostile-size-small") < 0)
      return -1;
   begin_cmd(c, WIRE_OP_vkGetPhysicalDeviceProperties, true);
   wire_enc_u64(&c->enc, PDEV_ID);
   wire_enc_u32(&c->enc, 1);
   struct wire_cmd_header hdr;
   memcpy(&hdr, c->enc.data, sizeof(hdr));
   hdr.size = 4;
   memcpy(c->enc.data, &hdr, sizeof(hdr));
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

/* Bytes after the parameters, inside the command's size. */
static int
case_trailing(struct conn *c)
{
   if (open_ready(c, "hostile-trailing") < 0 || enumerate_physical_device(c) < 0)
      return -1;
   begin_cmd(c, WIRE_OP_vkGetPhysicalDeviceProperties, true);
   struct wire_object_header pdev = {.id = PDEV_ID};
   VkPhysicalDeviceProperties props;
   wire_enc_vkGetPhysicalDeviceProperties(&c->enc, (VkPhysicalDevice)&pdev, &props);
   wire_enc_u64(&c->enc, 0x4141414141414141ull);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

/* The instance's id where a physical device is expected. */
static int
case_wrong_type(struct conn *c)
{
   if (open_ready(c, "hostile-wrong-type") < 0 || enumerate_physical_device(c) < 0)
      return -1;
   encode_get_properties(c, INSTANCE_ID);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkGetPhysicalDeviceProperties on the instance's id", c->name);
   return expect_disconnect(c, NULL);
}

/* A null handle where an object is required. */
static int
case_null_handle(struct conn *c)
{
   if (open_ready(c, "hostile-null-handle") < 0)
      return -1;
   encode_enumerate(c, 0, PDEV_ID);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

/* A new object under an id already in use. */
static int
case_reused_id(struct conn *c)
{
   if (open_ready(c, "hostile-reused-id") < 0)
      return -1;
   encode_create_instance(c, INSTANCE_ID, &instance_info);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent a second vkCreateInstance with id %d", c->name, INSTANCE_ID);
   return expect_disconnect(c, NULL);
}

/* VkPhysicalDeviceFeatures2 in VkInstanceCreateInfo's pNext chain. */
static int
case_stype(struct conn *c)
{
   if (conn_open(c, "hostile-stype") < 0 || handshake(c) < 0)
      return -1;
   const VkInstanceCreateInfo ci = {
       .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
   };
   encode_create_instance(c, INSTANCE_ID, &ci);
   /* ... pNext chain terminator (u32 0), instance id (u64) */
   size_t term = c->enc.size - 12;
   if (check_u32(c, term, 0, "pNext terminator") < 0)
      return -1;
   uint8_t tail[12];
   memcpy(tail, c->enc.data + term, sizeof(tail));
   c->enc.size = term;
   wire_enc_u32(&c->enc, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
   VkPhysicalDeviceFeatures features;
   memset(&features, 0, sizeof(features));
   wire_enc_bytes(&c->enc, &features, sizeof(features));
   wire_enc_bytes(&c->enc, tail, sizeof(tail));
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkCreateInstance with VkPhysicalDeviceFeatures2 in its pNext chain",
        c->name);
   return expect_disconnect(c, NULL);
}

/* A valid command with a file descriptor attached. */
static int
case_fds(struct conn *c)
{
   if (open_ready(c, "hostile-fds") < 0)
      return -1;
   encode_enumerate(c, INSTANCE_ID, PDEV_ID);
   int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
   if (fd < 0)
      return fail("%s: /dev/null: %s", c->name, strerror(errno));
   int r = send_stream(c, c->enc.data, c->enc.size, &fd, 1);
   close(fd);
   if (r < 0)
      return -1;
   note("%s: sent vkEnumeratePhysicalDevices with an fd attached", c->name);
   return expect_disconnect(c, NULL);
}

static int
send_op(struct conn *c, uint32_t op)
{
   begin_cmd(c, op, true);
   wire_enc_u64(&c->enc, INSTANCE_ID);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent op %#x", c->name, op);
   return expect_disconnect(c, NULL);
}

static int
case_unknown_op(struct conn *c)
{
   if (open_ready(c, "hostile-unknown-op") < 0)
      return -1;
   return send_op(c, WIRE_OP_COUNT + 0x1000);
}

static int
case_op_zero(struct conn *c)
{
   if (open_ready(c, "hostile-op-zero") < 0)
      return -1;
   return send_op(c, 0);
}

static int
case_op_reply(struct conn *c)
{
   if (open_ready(c, "hostile-op-reply") < 0)
      return -1;
   return send_op(c, WIRE_OP_REPLY);
}

/* A control request only control connections may make. */
static int
case_control_request(struct conn *c)
{
   if (open_ready(c, "hostile-control-request") < 0)
      return -1;
   Gpud__StatusRequest req = GPUD__STATUS_REQUEST__INIT;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REQUEST;
   m.status_request = &req;
   int r = conn_send_control(c, &m);
   if (r < 0)
      return fail("%s: send: %s", c->name, strerror(-r));
   return expect_disconnect(c, NULL);
}

/* Vulkan commands on a control connection. */
static int
case_control_stream(struct conn *c)
{
   if (conn_open(c, "hostile-control-stream") < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH,
                  GPUD__ROLE__ROLE_CONTROL, NULL, 0) < 0 ||
       expect_welcome(c) < 0)
      return -1;
   encode_create_instance(c, INSTANCE_ID, &instance_info);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   return expect_disconnect(c, NULL);
}

/* A device of its own: instance, physical device, device. */
static int
open_device(struct conn *c, const char *name)
{
   if (open_ready(c, name) < 0 || enumerate_physical_device(c) < 0 || create_device(c) < 0)
      return -1;
   return 0;
}

/* A queue the device was not created with (the host would index past its
 * queues). */
static int
case_queue_index(struct conn *c)
{
   if (open_device(c, "hostile-queue-index") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkQueue queue = (VkQueue)(uintptr_t)&(struct wire_object_header){.id = 10};
   begin_cmd(c, WIRE_OP_vkGetDeviceQueue, true);
   wire_enc_vkGetDeviceQueue(&c->enc, (VkDevice)&dev, 0, 7, &queue);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkGetDeviceQueue for queue 7 of family 0", c->name);
   return expect_disconnect(c, "no such queue");
}

/* A 1 MiB buffer bound to 4 KiB of memory: the host would let the buffer's
 * accesses run past the allocation. */
static int
case_bind_overflow(struct conn *c)
{
   if (open_device(c, "hostile-bind-overflow") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   struct wire_object_header mem = {.id = 11};
   VkDeviceMemory memory = (VkDeviceMemory)&mem;
   const VkMemoryAllocateInfo ai = {
       .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
       .allocationSize = 4096,
       .memoryTypeIndex = 0,
   };
   begin_cmd(c, WIRE_OP_vkAllocateMemory, true);
   wire_enc_vkAllocateMemory(&c->enc, (VkDevice)&dev, &ai, NULL, &memory);
   end_cmd(c);
   struct wire_dec d;
   VkResult ret = VK_ERROR_UNKNOWN;
   if (call_sync(c, "vkAllocateMemory", &d) < 0)
      return -1;
   wire_decreply_vkAllocateMemory(&d, &ret, (VkDevice)&dev, &ai, NULL, &memory);
   if (reply_done(c, "vkAllocateMemory", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkAllocateMemory: %d", c->name, ret);

   VkBuffer buffer = (VkBuffer)(uintptr_t)12;
   const VkBufferCreateInfo bi = {
       .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
       .size = 1 << 20,
       .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
   };
   begin_cmd(c, WIRE_OP_vkCreateBuffer, true);
   wire_enc_vkCreateBuffer(&c->enc, (VkDevice)&dev, &bi, NULL, &buffer);
   end_cmd(c);
   if (call_sync(c, "vkCreateBuffer", &d) < 0)
      return -1;
   wire_decreply_vkCreateBuffer(&d, &ret, (VkDevice)&dev, &bi, NULL, &buffer);
   if (reply_done(c, "vkCreateBuffer", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkCreateBuffer: %d", c->name, ret);

   begin_cmd(c, WIRE_OP_vkBindBufferMemory, true);
   wire_enc_vkBindBufferMemory(&c->enc, (VkDevice)&dev, buffer, memory, 0);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkBindBufferMemory of a 1 MiB buffer to 4 KiB of memory", c->name);
   return expect_disconnect(c, "does not fit");
}

/* ---- recordings in chunks ---------------------------------------------------- */

#define POOL_ID 20
#define CB_ID 21

/* A device with a command pool and a command buffer, as the ICD makes them
 * (both ICD pointer handles: the wire carries their ids). */
static int
open_command_buffer(struct conn *c, const char *name)
{
   if (open_device(c, name) < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   struct wire_object_header pool_obj = {.id = POOL_ID};
   VkCommandPool pool = (VkCommandPool)&pool_obj;
   const VkCommandPoolCreateInfo pi = {
       .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
   };
   begin_cmd(c, WIRE_OP_vkCreateCommandPool, true);
   wire_enc_vkCreateCommandPool(&c->enc, (VkDevice)&dev, &pi, NULL, &pool);
   end_cmd(c);
   struct wire_dec d;
   VkResult ret = VK_ERROR_UNKNOWN;
   if (call_sync(c, "vkCreateCommandPool", &d) < 0)
      return -1;
   wire_decreply_vkCreateCommandPool(&d, &ret, (VkDevice)&dev, &pi, NULL, &pool);
   if (reply_done(c, "vkCreateCommandPool", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkCreateCommandPool: %d", c->name, ret);
   struct wire_object_header cb_obj = {.id = CB_ID};
   VkCommandBuffer cb = (VkCommandBuffer)&cb_obj;
   const VkCommandBufferAllocateInfo ai = {
       .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
       .commandPool = pool,
       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
       .commandBufferCount = 1,
   };
   begin_cmd(c, WIRE_OP_vkAllocateCommandBuffers, true);
   wire_enc_vkAllocateCommandBuffers(&c->enc, (VkDevice)&dev, &ai, &cb);
   end_cmd(c);
   if (call_sync(c, "vkAllocateCommandBuffers", &d) < 0)
      return -1;
   wire_decreply_vkAllocateCommandBuffers(&d, &ret, (VkDevice)&dev, &ai, &cb);
   if (reply_done(c, "vkAllocateCommandBuffers", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkAllocateCommandBuffers: %d", c->name, ret);
   return 0;
}

/* Starts a chunk of command buffer cb_id's recording in c->enc. */
static void
chunk_start(struct conn *c, uint64_t cb_id, uint32_t seq, uint32_t flags)
{
   wire_enc_reset(&c->enc);
   struct wire_chunk_header *h = wire_enc_reserve(&c->enc, sizeof(*h));
   *h = (struct wire_chunk_header){
       .cmd = {.op = WIRE_OP_CHUNK, .flags = flags, .seq = seq},
       .command_buffer = cb_id,
   };
}

/* Appends vkBeginCommandBuffer, or a recorded command, on cb_id. */
static void
chunk_begin_cmd(struct conn *c, uint64_t cb_id)
{
   struct wire_object_header obj = {.id = cb_id};
   const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
   size_t o = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkBeginCommandBuffer, 0, 0);
   wire_enc_vkBeginCommandBuffer(&c->enc, (VkCommandBuffer)&obj, &bi);
   wire_enc_end_cmd(&c->enc, o);
}

static void
chunk_recorded_cmd(struct conn *c, uint64_t cb_id)
{
   struct wire_object_header obj = {.id = cb_id};
   size_t o = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkCmdSetLineWidth, 0, 0);
   wire_enc_vkCmdSetLineWidth(&c->enc, (VkCommandBuffer)&obj, 1.0f);
   wire_enc_end_cmd(&c->enc, o);
}

static int
chunk_send(struct conn *c)
{
   ((struct wire_cmd_header *)c->enc.data)->size = (uint32_t)c->enc.size;
   return send_stream(c, c->enc.data, c->enc.size, NULL, 0);
}

/* A valid first chunk: begun, one command. */
static int
send_first_chunk(struct conn *c, uint32_t flags)
{
   chunk_start(c, CB_ID, 0, flags);
   chunk_begin_cmd(c, CB_ID);
   chunk_recorded_cmd(c, CB_ID);
   return chunk_send(c);
}

/* A chunk of a command buffer that never began recording. */
static int
case_chunk_not_recording(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-not-recording") < 0)
      return -1;
   chunk_start(c, CB_ID, 1, 0);
   chunk_recorded_cmd(c, CB_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent chunk 1 of a command buffer that is not recording", c->name);
   return expect_disconnect(c, "not recording");
}

/* A chunk after the one that ended the recording. */
static int
case_chunk_after_end(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-after-end") < 0 ||
       send_first_chunk(c, WIRE_CHUNK_END) < 0)
      return -1;
   chunk_start(c, CB_ID, 1, 0);
   chunk_recorded_cmd(c, CB_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent a chunk after the end of the recording", c->name);
   return expect_disconnect(c, "not recording");
}

/* A chunk of a command buffer whose pool is destroyed. */
static int
case_chunk_freed_pool(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-freed-pool") < 0 || send_first_chunk(c, 0) < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   struct wire_object_header pool_obj = {.id = POOL_ID};
   begin_cmd(c, WIRE_OP_vkDestroyCommandPool, false);
   wire_enc_vkDestroyCommandPool(&c->enc, (VkDevice)&dev, (VkCommandPool)&pool_obj, NULL);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   chunk_start(c, CB_ID, 1, 0);
   chunk_recorded_cmd(c, CB_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent a chunk of a command buffer whose pool is destroyed", c->name);
   return expect_disconnect(c, "unknown command buffer");
}

/* Chunk 2 where chunk 1 was next. */
static int
case_chunk_order(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-order") < 0 || send_first_chunk(c, 0) < 0)
      return -1;
   chunk_start(c, CB_ID, 2, 0);
   chunk_recorded_cmd(c, CB_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent chunk 2 after chunk 0", c->name);
   return expect_disconnect(c, "where 1 was next");
}

/* A recording whose first chunk does not begin it. */
static int
case_chunk_no_begin(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-no-begin") < 0)
      return -1;
   chunk_start(c, CB_ID, 0, 0);
   chunk_recorded_cmd(c, CB_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent a first chunk without vkBeginCommandBuffer", c->name);
   return expect_disconnect(c, "does not begin with vkBeginCommandBuffer");
}

/* A command in a chunk that names another command buffer than the chunk. */
static int
case_chunk_other_cb(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-other-cb") < 0)
      return -1;
   chunk_start(c, CB_ID, 0, 0);
   chunk_begin_cmd(c, CB_ID);
   chunk_recorded_cmd(c, DEVICE_ID);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent a chunk with a command on another object", c->name);
   return expect_disconnect(c, "on another command buffer");
}

/* A recorded command outside any chunk. */
static int
case_recorded_outside(struct conn *c)
{
   if (open_command_buffer(c, "hostile-recorded-outside") < 0 || send_first_chunk(c, 0) < 0)
      return -1;
   begin_cmd(c, WIRE_OP_vkCmdSetLineWidth, false);
   struct wire_object_header obj = {.id = CB_ID};
   wire_enc_vkCmdSetLineWidth(&c->enc, (VkCommandBuffer)&obj, 1.0f);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkCmdSetLineWidth outside a chunk", c->name);
   return expect_disconnect(c, "outside a chunk");
}

/* A command that is not a recorded one inside a chunk. */
static int
case_chunk_foreign_op(struct conn *c)
{
   if (open_command_buffer(c, "hostile-chunk-foreign-op") < 0)
      return -1;
   chunk_start(c, CB_ID, 0, 0);
   chunk_begin_cmd(c, CB_ID);
   struct wire_object_header dev = {.id = DEVICE_ID};
   size_t o = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkDeviceWaitIdle, 0, 0);
   wire_enc_vkDeviceWaitIdle(&c->enc, (VkDevice)&dev);
   wire_enc_end_cmd(&c->enc, o);
   if (chunk_send(c) < 0)
      return -1;
   note("%s: sent vkDeviceWaitIdle inside a chunk", c->name);
   return expect_disconnect(c, "not a recorded command");
}

/* ---- fds on the wire ----------------------------------------------------- */

#define IMPORT_SIZE (64u << 10)

/* Appends a vkAllocateMemory importing fd (an opaque fd of IMPORT_SIZE
 * bytes of memory type 0) as memory id mem_id to c->enc: the encoder names
 * fd by the next index of c->enc.fds.  Returns the offset of the u32 that
 * names it, or 0 when the encoding is not the expected one. */
static size_t
append_import(struct conn *c, uint64_t mem_id, int fd, bool sync)
{
   struct wire_object_header dev = {.id = DEVICE_ID};
   struct wire_object_header mem = {.id = mem_id};
   VkDeviceMemory memory = (VkDeviceMemory)&mem;
   const VkImportMemoryFdInfoKHR import = {
       .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
       .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
       .fd = fd,
   };
   const VkMemoryAllocateInfo ai = {
       .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
       .pNext = &import,
       .allocationSize = IMPORT_SIZE,
       .memoryTypeIndex = 0,
   };
   unsigned index = c->enc.n_fds;
   size_t start = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkAllocateMemory,
                                     sync ? WIRE_CMD_REPLY : 0, sync ? ++c->seq : 0);
   wire_enc_vkAllocateMemory(&c->enc, (VkDevice)&dev, &ai, NULL, &memory);
   wire_enc_end_cmd(&c->enc, start);
   if (c->enc.oom || c->enc.n_fds != index + 1) {
      fail("%s: vkAllocateMemory's import was encoded without its fd", c->name);
      return 0;
   }
   /* the chained struct: sType, handleType, the fd's index */
   const uint32_t want[3] = {VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                             VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, index};
   for (size_t off = start + sizeof(struct wire_cmd_header); off + 12 <= c->enc.size;
        off += 4) {
      if (!memcmp(c->enc.data + off, want, sizeof(want)))
         return off + 8;
   }
   fail("%s: unexpected encoding: no VkImportMemoryFdInfoKHR naming fd %u", c->name,
        index);
   return 0;
}

/* A memfd as gpud's own opaque fds are (sealed against resizing). */
static int
make_memfd(struct conn *c, int *ret_fd)
{
   int r = util_memfd_create("hostile-import", IMPORT_SIZE, ret_fd);
   if (r < 0)
      return fail("%s: memfd: %s", c->name, strerror(-r));
   return 0;
}

/* Host image copies' staging memory of a size the ICD never asks (not whole
 * pages): the worker makes it, so a client must not choose odd sizes. */
static int
case_host_copy_staging(struct conn *c)
{
   if (open_device(c, "hostile-host-copy-staging") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   int fd = -1;
   begin_cmd(c, WIRE_OP_vkGetHostCopyStagingGPUD, true);
   wire_enc_vkGetHostCopyStagingGPUD(&c->enc, (VkDevice)&dev, (1 << 20) + 1, &fd);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: asked for host-copy staging memory of 1 MiB + 1 byte", c->name);
   return expect_disconnect(c, "a staging size the ICD never asks");
}

#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD
/* A host image copy into an image not made for host copies (which the host
 * driver would copy into on the CPU all the same). */
static int
case_host_copy_image(struct conn *c)
{
   if (open_device(c, "hostile-host-copy-image") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkImage image = (VkImage)(uintptr_t)12;
   const VkImageCreateInfo ii = {
       .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
       .imageType = VK_IMAGE_TYPE_2D,
       .format = VK_FORMAT_R8G8B8A8_UNORM,
       .extent = {16, 16, 1},
       .mipLevels = 1,
       .arrayLayers = 1,
       .samples = VK_SAMPLE_COUNT_1_BIT,
       .usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT,
   };
   begin_cmd(c, WIRE_OP_vkCreateImage, true);
   wire_enc_vkCreateImage(&c->enc, (VkDevice)&dev, &ii, NULL, &image);
   end_cmd(c);
   struct wire_dec d;
   VkResult ret = VK_ERROR_UNKNOWN;
   if (call_sync(c, "vkCreateImage", &d) < 0)
      return -1;
   wire_decreply_vkCreateImage(&d, &ret, (VkDevice)&dev, &ii, NULL, &image);
   if (reply_done(c, "vkCreateImage", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkCreateImage: %d", c->name, ret);
   /* bound, as an image must be for any use */
   struct wire_object_header mem = {.id = 11};
   VkDeviceMemory memory = (VkDeviceMemory)&mem;
   const VkMemoryAllocateInfo ai = {
       .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
       .allocationSize = 1 << 16,
       .memoryTypeIndex = 0,
   };
   begin_cmd(c, WIRE_OP_vkAllocateMemory, true);
   wire_enc_vkAllocateMemory(&c->enc, (VkDevice)&dev, &ai, NULL, &memory);
   end_cmd(c);
   if (call_sync(c, "vkAllocateMemory", &d) < 0)
      return -1;
   wire_decreply_vkAllocateMemory(&d, &ret, (VkDevice)&dev, &ai, NULL, &memory);
   if (reply_done(c, "vkAllocateMemory", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkAllocateMemory: %d", c->name, ret);
   begin_cmd(c, WIRE_OP_vkBindImageMemory, true);
   wire_enc_vkBindImageMemory(&c->enc, (VkDevice)&dev, image, memory, 0);
   end_cmd(c);
   if (call_sync(c, "vkBindImageMemory", &d) < 0)
      return -1;
   wire_decreply_vkBindImageMemory(&d, &ret, (VkDevice)&dev, image, memory, 0);
   if (reply_done(c, "vkBindImageMemory", &d) < 0)
      return -1;
   if (ret != VK_SUCCESS)
      return fail("%s: vkBindImageMemory: %d", c->name, ret);
   const VkMemoryToImageCopyEXT region = {
       .sType = VK_STRUCTURE_TYPE_MEMORY_TO_IMAGE_COPY_EXT,
       .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
       .imageExtent = {16, 16, 1},
   };
   const VkCopyMemoryToImageInfoEXT info = {
       .sType = VK_STRUCTURE_TYPE_COPY_MEMORY_TO_IMAGE_INFO_EXT,
       .dstImage = image,
       .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
       .regionCount = 1,
       .pRegions = &region,
   };
   const uint64_t offset = 0;
   wire_enc_reset(&c->enc);
   begin_cmd(c, WIRE_OP_vkCopyMemoryToImageGPUD, true);
   wire_enc_vkCopyMemoryToImageGPUD(&c->enc, (VkDevice)&dev, &info, 1, &offset);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent a host image copy into an image made without HOST_TRANSFER", c->name);
   return expect_disconnect(c, "not made for host copies");
}
#endif

/* vkAllocateMemory importing the fd at index 3 of a message with 1 fd. */
static int
case_fd_index(struct conn *c)
{
   int fd = -1;
   if (open_device(c, "hostile-fd-index") < 0 || make_memfd(c, &fd) < 0)
      return -1;
   wire_enc_reset(&c->enc);
   size_t at = append_import(c, 11, fd, true);
   int r = -1;
   if (!at || check_u32(c, at, 0, "the fd's index") < 0)
      goto out;
   put_u32(c, at, 3);
   if (send_stream(c, c->enc.data, c->enc.size, &fd, 1) < 0)
      goto out;
   note("%s: sent vkAllocateMemory importing fd index 3 with 1 fd attached", c->name);
   r = expect_disconnect(c, "bad file descriptor index");
out:
   close(fd);
   return r;
}

/* Two commands in one message naming the same fd index: vkAllocateMemory
 * (asynchronous) importing the message's only fd takes it, then
 * vkGetMemoryFdPropertiesKHR finds none at that index. */
static int
case_fd_twice(struct conn *c)
{
   int fd = -1;
   if (open_device(c, "hostile-fd-twice") < 0 || make_memfd(c, &fd) < 0)
      return -1;
   wire_enc_reset(&c->enc);
   size_t first = append_import(c, 11, fd, false);
   int r = -1;
   if (!first || check_u32(c, first, 0, "the import's fd index") < 0)
      goto out;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkMemoryFdPropertiesKHR props = {.sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR};
   size_t start = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkGetMemoryFdPropertiesKHR,
                                     WIRE_CMD_REPLY, ++c->seq);
   wire_enc_vkGetMemoryFdPropertiesKHR(
       &c->enc, (VkDevice)&dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT, fd, &props);
   wire_enc_end_cmd(&c->enc, start);
   /* header, device, handleType, then the fd's index */
   size_t second = start + sizeof(struct wire_cmd_header) + 12;
   if (c->enc.oom || c->enc.n_fds != 2 ||
       check_u32(c, second, 1, "the second fd index") < 0)
      goto out;
   put_u32(c, second, 0);
   if (send_stream(c, c->enc.data, c->enc.size, &fd, 1) < 0)
      goto out;
   note("%s: sent vkAllocateMemory, then vkGetMemoryFdPropertiesKHR, both naming fd 0",
        c->name);
   r = expect_disconnect(c, "bad file descriptor index");
out:
   close(fd);
   return r;
}

/* Writes an entry as a producer that breaks the rules might: whatever
 * e says, e->size bytes of data (none when NULL) follow, then the entry's
 * tag goes out. */
static void
ring_publish_raw(struct conn *c, const struct util_ring_entry *e, const void *data)
{
   struct util_ring *r = &c->out;
   const uint64_t at = r->pos;
   const uint8_t *src = (const uint8_t *)e;
   for (size_t i = sizeof(e->tag); i < sizeof(*e); i++)
      r->data[(at + i) & (r->size - 1)] = src[i];
   r->pos += sizeof(*e);
   size_t n = data && e->size <= r->size / 2 ? e->size : 0;
   for (size_t i = 0; i < n; i++)
      r->data[(r->pos + i) & (r->size - 1)] = ((const uint8_t *)data)[i];
   r->pos += n;
   r->pos = (r->pos + 63) & ~(uint64_t)63; /* entries start on cache lines */
   atomic_store((_Atomic uint64_t *)(void *)(r->data + (at & (r->size - 1))), util_ring_tag(at));
   atomic_store(&r->ctrl->head, r->pos);
   atomic_store(&r->ctrl->consumer_state, UTIL_RING_AWAKE);
   util_futex_wake(&r->ctrl->consumer_state);
}

/* A packet with n fds, past util_msg_send()'s bound. */
static int
send_with_fds(struct conn *c, const void *data, size_t size, const int *fds, unsigned n)
{
   struct util_packet_header hdr = {.type = UTIL_MSG_STREAM, .flags = 0};
   struct iovec iov[2] = {
       {.iov_base = &hdr, .iov_len = sizeof(hdr)},
       {.iov_base = (void *)data, .iov_len = size},
   };
   union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(sizeof(int) * 64)];
   } cmsg;
   if (n > 64)
      return fail("%s: %u fds", c->name, n);
   memset(&cmsg, 0, sizeof(cmsg));
   struct msghdr mh = {
       .msg_iov = iov,
       .msg_iovlen = 2,
       .msg_control = cmsg.buf,
       .msg_controllen = CMSG_SPACE(sizeof(int) * n),
   };
   struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
   cm->cmsg_level = SOL_SOCKET;
   cm->cmsg_type = SCM_RIGHTS;
   cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
   memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
   if (c->ring_map) {
      /* the fds beside the ring, the entry counting them in it */
      hdr.type = UTIL_MSG_FDS;
      mh.msg_iovlen = 1;
      if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(hdr))
         return fail("%s: sendmsg: %s", c->name, strerror(errno));
      struct util_ring_entry e = {.type = UTIL_MSG_STREAM, .size = (uint32_t)size, .n_fds = n};
      ring_publish_raw(c, &e, data);
      return 0;
   }
   if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) != (ssize_t)(sizeof(hdr) + size))
      return fail("%s: sendmsg: %s", c->name, strerror(errno));
   return 0;
}

/* A message with UTIL_MSG_MAX_FDS + 1 fds, its only command naming one. */
static int
case_fd_many(struct conn *c)
{
   enum { N = UTIL_MSG_MAX_FDS + 1 };
   int fds[N];
   unsigned n = 0;
   int r = -1;
   if (open_device(c, "hostile-fd-many") < 0)
      return -1;
   for (; n < N; n++) {
      if (make_memfd(c, &fds[n]) < 0)
         goto out;
   }
   wire_enc_reset(&c->enc);
   if (!append_import(c, 11, fds[0], true))
      goto out;
   if (send_with_fds(c, c->enc.data, c->enc.size, fds, N) < 0)
      goto out;
   note("%s: sent vkAllocateMemory with %d fds attached", c->name, N);
   r = expect_disconnect(c, NULL);
out:
   while (n > 0)
      close(fds[--n]);
   return r;
}

/* An fd attached to a message of asynchronous commands that name none. */
static int
case_fd_reply_op(struct conn *c)
{
   if (open_device(c, "hostile-fd-reply-op") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   wire_enc_reset(&c->enc);
   for (unsigned i = 0; i < 2; i++) {
      /* vkDestroyBuffer of VK_NULL_HANDLE: valid, and does nothing */
      size_t off = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkDestroyBuffer, 0, 0);
      wire_enc_vkDestroyBuffer(&c->enc, (VkDevice)&dev, VK_NULL_HANDLE, NULL);
      wire_enc_end_cmd(&c->enc, off);
   }
   int fd = -1;
   if (make_memfd(c, &fd) < 0)
      return -1;
   int r = send_stream(c, c->enc.data, c->enc.size, &fd, 1);
   close(fd);
   if (r < 0)
      return -1;
   note("%s: sent two asynchronous vkDestroyBuffer with an fd attached", c->name);
   return expect_disconnect(c, "unexpected file descriptors");
}

/* A command of an extension the device did not enable. */
static int
case_disabled_extension(struct conn *c)
{
   device_without_extensions = true;
   int r = open_device(c, "hostile-disabled-extension");
   device_without_extensions = false;
   if (r < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkMemoryFdPropertiesKHR props = {.sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR};
   wire_enc_reset(&c->enc);
   size_t start = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkGetMemoryFdPropertiesKHR, WIRE_CMD_REPLY,
                                     ++c->seq);
   wire_enc_vkGetMemoryFdPropertiesKHR(&c->enc, (VkDevice)&dev,
                                       VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, -1, &props);
   wire_enc_end_cmd(&c->enc, start);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkGetMemoryFdPropertiesKHR on a device without VK_KHR_external_memory_fd",
        c->name);
   return expect_disconnect(c, "did not enable the extension");
}

/* An enum value the registry does not define (a host driver would index a
 * table with it). */
static int
case_enum(struct conn *c)
{
   if (open_device(c, "hostile-enum") < 0)
      return -1;
   struct wire_object_header dev = {.id = DEVICE_ID};
   VkSampler sampler = (VkSampler)(uintptr_t)20;
   const VkSamplerCreateInfo si = {
       .sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
       .magFilter = (VkFilter)77,
       .minFilter = VK_FILTER_NEAREST,
   };
   begin_cmd(c, WIRE_OP_vkCreateSampler, true);
   wire_enc_vkCreateSampler(&c->enc, (VkDevice)&dev, &si, NULL, &sampler);
   end_cmd(c);
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: sent vkCreateSampler with magFilter 77", c->name);
   return expect_disconnect(c, "VkFilter value out of range");
}

/* ---- the rings ------------------------------------------------------------ */

/* Rings a worker must refuse before mapping them: sizes out of range, a
 * memfd smaller than they need, one that may shrink (it could make the
 * worker's mapping fault), and no memfd at all. */
static int
ring_setup_bad(struct conn *c, const char *name, uint32_t command_size, uint32_t reply_size,
               int kind)
{
   if (conn_open(c, name) < 0 ||
       send_hello(c, WIRE_PROTOCOL_VERSION, WIRE_COMMAND_TABLE_HASH, GPUD__ROLE__ROLE_VULKAN,
                  NULL, 0) < 0 ||
       expect_welcome(c) < 0)
      return -1;
   int fd = -1;
   if (kind == 0) {
      void *map;
      int r = util_ring_create(RING_SIZE, RING_SIZE, &fd, &map);
      if (r < 0)
         return fail("%s: memfd: %s", c->name, strerror(-r));
      util_ring_unmap(map, RING_SIZE, RING_SIZE);
   } else if (kind == 1) {
      fd = memfd_create("unsealed", MFD_CLOEXEC);
      if (fd < 0 || ftruncate(fd, (off_t)util_ring_map_size(RING_SIZE, RING_SIZE)) < 0)
         return fail("%s: memfd: %s", c->name, strerror(errno));
   } else {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
         return fail("%s: socketpair: %s", c->name, strerror(errno));
      close(sv[1]);
      fd = sv[0];
   }
   int r = wire_control_send_ring_setup(c->fd, command_size, reply_size, fd, -1);
   close(fd);
   if (r < 0)
      return fail("%s: send: %s", c->name, strerror(-r));
   return expect_disconnect(c, "rings");
}

static int
case_ring_sizes(struct conn *c)
{
   return ring_setup_bad(c, "hostile-ring-sizes", RING_SIZE + 4096, RING_SIZE, 0);
}

static int
case_ring_small_memfd(struct conn *c)
{
   return ring_setup_bad(c, "hostile-ring-small-memfd", RING_SIZE * 4, RING_SIZE, 0);
}

static int
case_ring_unsealed(struct conn *c)
{
   return ring_setup_bad(c, "hostile-ring-unsealed", RING_SIZE, RING_SIZE, 1);
}

static int
case_ring_not_memfd(struct conn *c)
{
   return ring_setup_bad(c, "hostile-ring-not-memfd", RING_SIZE, RING_SIZE, 2);
}

/* An entry longer than a quarter of the ring, one of an unknown type, one
 * whose fds never came, and one continuing with another type. */
static int
ring_entry_bad(struct conn *c, const char *name, struct util_ring_entry e1,
               const struct util_ring_entry *e2)
{
   if (open_ready(c, name) < 0)
      return -1;
   static const uint8_t payload[64];
   ring_publish_raw(c, &e1, payload);
   if (e2)
      ring_publish_raw(c, e2, payload);
   return expect_disconnect(c, "ring");
}

static int
case_ring_entry_size(struct conn *c)
{
   return ring_entry_bad(c, "hostile-ring-entry-size",
                         (struct util_ring_entry){.type = UTIL_MSG_STREAM, .size = 1u << 30},
                         NULL);
}

static int
case_ring_entry_type(struct conn *c)
{
   return ring_entry_bad(c, "hostile-ring-entry-type",
                         (struct util_ring_entry){.type = 77, .size = 8}, NULL);
}

static int
case_ring_fds_missing(struct conn *c)
{
   return ring_entry_bad(c, "hostile-ring-fds-missing",
                         (struct util_ring_entry){.type = UTIL_MSG_STREAM, .size = 8, .n_fds = 2},
                         NULL);
}

static int
case_ring_fragment_type(struct conn *c)
{
   const struct util_ring_entry second = {.type = UTIL_MSG_CONTROL, .size = 8};
   return ring_entry_bad(c, "hostile-ring-fragment-type",
                         (struct util_ring_entry){.type = UTIL_MSG_STREAM,
                                                  .flags = UTIL_RING_MORE, .size = 8},
                         &second);
}

/* ---- misbehaviours: not protocol errors, but what the daemon's limits are for
 * (not in --list; gpud_test.py runs each where it tests that limit) ----- */

/* Asks for many replies and never reads them.  Exits 0 once the daemon
 * has closed the connection (its send deadline), 1 if it has not within
 * 60 s. */
static int
misbehave_no_read(struct conn *c)
{
   if (open_ready(c, "hostile-no-read") < 0 || enumerate_physical_device(c) < 0)
      return -1;
   struct wire_object_header pdev = {.id = PDEV_ID};
   VkPhysicalDeviceProperties props;
   wire_enc_reset(&c->enc);
   for (unsigned i = 0; i < 4000; i++) {
      size_t off = wire_enc_begin_cmd(&c->enc, WIRE_OP_vkGetPhysicalDeviceProperties,
                                      WIRE_CMD_REPLY, ++c->seq);
      wire_enc_vkGetPhysicalDeviceProperties(&c->enc, (VkPhysicalDevice)&pdev, &props);
      wire_enc_end_cmd(&c->enc, off);
   }
   if (send_stream(c, c->enc.data, c->enc.size, NULL, 0) < 0)
      return -1;
   note("%s: asked for 4000 replies; reading none", c->name);
   struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};
   int n = poll(&p, 1, 60000);
   if (n <= 0)
      return fail("%s: the daemon still holds the connection after 60 s", c->name);
   note("%s: the daemon closed the connection", c->name);
   return 0;
}

static const struct {
   const char *name;
   int (*run)(struct conn *c);
} misbehaviours[] = {
    {"no-read", misbehave_no_read},
};

static const struct {
   const char *name;
   int (*run)(struct conn *c);
} cases[] = {
    {"garbage", case_garbage},
    {"garbage-after-hello", case_garbage_after_hello},
    {"garbage-control", case_garbage_control},
    {"not-hello", case_not_hello},
    {"version", case_version},
    {"hash", case_hash},
    {"role", case_role},
    {"handshake-fds", case_handshake_fds},
    {"unknown-id", case_unknown_id},
    {"unregistered-pdev", case_unregistered_pdev},
    {"foreign", case_foreign},
    {"count", case_count},
    {"size", case_size},
    {"size-small", case_size_small},
    {"trailing", case_trailing},
    {"wrong-type", case_wrong_type},
    {"null-handle", case_null_handle},
    {"reused-id", case_reused_id},
    {"stype", case_stype},
    {"fds", case_fds},
    {"unknown-op", case_unknown_op},
    {"op-zero", case_op_zero},
    {"op-reply", case_op_reply},
    {"control-request", case_control_request},
    {"control-stream", case_control_stream},
    {"queue-index", case_queue_index},
    {"bind-overflow", case_bind_overflow},
    {"chunk-not-recording", case_chunk_not_recording},
    {"chunk-after-end", case_chunk_after_end},
    {"chunk-freed-pool", case_chunk_freed_pool},
    {"chunk-order", case_chunk_order},
    {"chunk-no-begin", case_chunk_no_begin},
    {"chunk-other-cb", case_chunk_other_cb},
    {"recorded-outside", case_recorded_outside},
    {"chunk-foreign-op", case_chunk_foreign_op},
    {"fd-index", case_fd_index},
    {"host-copy-staging", case_host_copy_staging},
#ifdef WIRE_HAS_vkCopyMemoryToImageGPUD
    {"host-copy-image", case_host_copy_image},
#endif
    {"fd-twice", case_fd_twice},
    {"fd-many", case_fd_many},
    {"fd-reply-op", case_fd_reply_op},
    {"disabled-extension", case_disabled_extension},
    {"enum", case_enum},
    {"ring-sizes", case_ring_sizes},
    {"ring-small-memfd", case_ring_small_memfd},
    {"ring-unsealed", case_ring_unsealed},
    {"ring-not-memfd", case_ring_not_memfd},
    {"ring-entry-size", case_ring_entry_size},
    {"ring-entry-type", case_ring_entry_type},
    {"ring-fds-missing", case_ring_fds_missing},
    {"ring-fragment-type", case_ring_fragment_type},
};

int
main(int argc, char **argv)
{
   if (argc == 2 && !strcmp(argv[1], "--list")) {
      for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
         printf("%s\n", cases[i].name);
      return 0;
   }
   if (argc != 3) {
      fprintf(stderr, "usage: %s SOCKET CASE | --list\n", argv[0]);
      return 2;
   }
   socket_path = argv[1];
   for (size_t i = 0; i < sizeof(misbehaviours) / sizeof(misbehaviours[0]); i++) {
      if (strcmp(argv[2], misbehaviours[i].name) != 0)
         continue;
      struct conn c;
      memset(&c, 0, sizeof(c));
      c.fd = -1;
      int r = misbehaviours[i].run(&c);
      conn_close(&c);
      return r < 0 ? 1 : 0;
   }
   for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
      if (strcmp(argv[2], cases[i].name) != 0)
         continue;
      struct conn c;
      memset(&c, 0, sizeof(c));
      c.fd = -1;
      int r = cases[i].run(&c);
      conn_close(&c);
      if (r < 0)
         return 1;
      printf("PASS: %s\n", cases[i].name);
      return 0;
   }
   fprintf(stderr, "%s: unknown case %s\n", argv[0], argv[2]);
   return 2;
}
