/* SPDX-License-Identifier: MIT */
/*
 * The control channels' messages (wire_control.h): protobuf messages
 * between the ICD and its worker (ControlMessage) and between the server
 * and a worker (WorkerMessage), packed and sent with their fds.
 */
#include "wire_control.h"

#include <errno.h>
#include <stdlib.h>

#include "util_transport.h"

/* Either message packed into a buffer of its own (never of size 0). */
static void *
pack(const ProtobufCMessage *msg, size_t *ret_size)
{
   size_t size = protobuf_c_message_get_packed_size(msg);
   uint8_t *buf = malloc(size ? size : 1);
   if (buf)
      protobuf_c_message_pack(msg, buf);
   *ret_size = size;
   return buf;
}

static int
send_packed(int fd, const ProtobufCMessage *msg, const int *fds, unsigned n_fds, int timeout_ms)
{
   size_t size;
   void *buf = pack(msg, &size);
   if (!buf)
      return -ENOMEM;
   int r = util_msg_send_timeout(fd, UTIL_MSG_CONTROL, buf, size, fds, n_fds, timeout_ms);
   free(buf);
   return r;
}

void *
wire_control_pack(const Gpud__ControlMessage *msg, size_t *ret_size)
{
   return pack(&msg->base, ret_size);
}

int
wire_control_send_timeout(int fd, const Gpud__ControlMessage *msg, const int *fds,
                          unsigned n_fds, int timeout_ms)
{
   return send_packed(fd, &msg->base, fds, n_fds, timeout_ms);
}

int
wire_control_send(int fd, const Gpud__ControlMessage *msg)
{
   return wire_control_send_timeout(fd, msg, NULL, 0, -1);
}

int
wire_control_send_ring_setup(int fd, uint32_t command_size, uint32_t reply_size, int memfd,
                             int timeout_ms)
{
   Gpud__RingSetup setup = GPUD__RING_SETUP__INIT;
   setup.command_size = command_size;
   setup.reply_size = reply_size;
   Gpud__ControlMessage m = GPUD__CONTROL_MESSAGE__INIT;
   m.msg_case = GPUD__CONTROL_MESSAGE__MSG_RING_SETUP;
   m.ring_setup = &setup;
   return wire_control_send_timeout(fd, &m, &memfd, 1, timeout_ms);
}

void *
wire_worker_pack(const Gpud__WorkerMessage *msg, size_t *ret_size)
{
   return pack(&msg->base, ret_size);
}

int
wire_worker_send(int fd, const Gpud__WorkerMessage *msg, const int *fds, unsigned n_fds)
{
   return send_packed(fd, &msg->base, fds, n_fds, -1);
}

Gpud__WorkerMessage *
wire_worker_unpack(const void *data, size_t size)
{
   return gpud__worker_message__unpack(NULL, size, data);
}

void
wire_worker_free(Gpud__WorkerMessage *msg)
{
   if (msg)
      gpud__worker_message__free_unpacked(msg, NULL);
}

Gpud__ControlMessage *
wire_control_unpack(const void *data, size_t size)
{
   return gpud__control_message__unpack(NULL, size, data);
}

void
wire_control_free(Gpud__ControlMessage *msg)
{
   if (msg)
      gpud__control_message__free_unpacked(msg, NULL);
}

void
wire_control_disconnect(Gpud__ControlMessage *m, Gpud__Disconnect *d, const char *reason)
{
   *d = (Gpud__Disconnect)GPUD__DISCONNECT__INIT;
   if (reason)
      d->reason = (char *)reason;
   *m = (Gpud__ControlMessage)GPUD__CONTROL_MESSAGE__INIT;
   m->msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT;
   m->disconnect = d;
}

void
wire_control_send_disconnect(int fd, const char *reason)
{
   Gpud__ControlMessage m;
   Gpud__Disconnect d;
   wire_control_disconnect(&m, &d, reason);
   wire_control_send(fd, &m);
}
