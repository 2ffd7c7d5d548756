/* SPDX-License-Identifier: MIT */
/*
 * One client connection, decoded in order on its own thread: the handshake,
 * the command loop, the client's object table, and its teardown.
 *
 * Nothing a client sends is trusted: every command's size, every id, count
 * and sType is checked by the generated decoder or here, and the first
 * violation disconnects that client with the reason logged.
 */
#include "gpud.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util_macros.h"
#include "util_thread.h"
#include "wire_control.h"
#include "wire_gen.h"

void
gpud_client_log(struct gpud_client *client, enum util_log_level level, const char *fmt, ...)
{
   char msg[1024];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(msg, sizeof(msg), fmt, ap);
   va_end(ap);
   util_log(level, "client %" PRIu64 " (pid %d, %s): %s", client->id, (int)client->pid,
            client->name[0] ? client->name : "?", msg);
}

int
gpud_client_send_reply(struct gpud_client *client, struct wire_enc *reply, const int *fds,
                       unsigned n_fds)
{
   if (reply->oom)
      return -ENOMEM;
   pthread_mutex_lock(&client->send_mutex);
   int r = util_msg_send(client->fd, UTIL_MSG_STREAM, reply->data, reply->size, fds, n_fds);
   pthread_mutex_unlock(&client->send_mutex);
   return r;
}

/* Ends a client for bad input: logs the reason and tells the client. */
static int __attribute__((format(printf, 2, 3)))
protocol_error(struct gpud_client *client, const char *fmt, ...)
{
   char reason[512];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(reason, sizeof(reason), fmt, ap);
   va_end(ap);
   gpud_client_log(client, UTIL_LOG_ERR, "protocol error: %s", reason);
   pthread_mutex_lock(&client->send_mutex);
   wire_control_send_disconnect(client->fd, reason);
   pthread_mutex_unlock(&client->send_mutex);
   return -EPROTO;
}

static const char *
recv_error(int r)
{
   switch (r) {
   case -EPROTO:
      return "malformed packet sequence";
   case -EMSGSIZE:
      return "packet larger than the protocol allows";
   default:
      return strerror(-r);
   }
}

/* ---- objects ------------------------------------------------------------ */

struct gpud_object *
gpud_object_find(struct gpud_client *client, uint64_t id)
{
   return util_idmap_get(&client->objects, id);
}

static void
object_unlink(struct gpud_client *client, struct gpud_object *obj)
{
   if (obj->prev)
      obj->prev->next = obj->next;
   else
      client->first = obj->next;
   if (obj->next)
      obj->next->prev = obj->prev;
   else
      client->last = obj->prev;
   obj->prev = obj->next = NULL;
}

/* Releases what the daemon holds besides the host object (which the caller
 * destroyed, or which died with its parent). */
void
gpud_call_mark_bound(struct gpud_call *call, VkObjectType type, uint64_t handle,
                     uint64_t memory)
{
   struct gpud_object *obj = gpud_call_named(call, type, handle);
   if (!obj)
      return;
   obj->bound = true;
   obj->memory = gpud_call_named(call, VK_OBJECT_TYPE_DEVICE_MEMORY, memory);
}

void
gpud_object_forget(struct gpud_client *client, struct gpud_object *obj)
{
   if (obj->type == VK_OBJECT_TYPE_DEVICE_MEMORY && !atomic_load(&client->closing)) {
      /* what was bound to it can no longer be used */
      for (struct gpud_object *o = client->first; o; o = o->next) {
         if (o->memory == obj) {
            o->memory = NULL;
            o->bound = false;
         }
      }
   }
   util_idmap_remove(&client->objects, obj->id);
   object_unlink(client, obj);
   atomic_fetch_sub(&client->n_objects, 1);
   if (obj->bytes)
      atomic_fetch_sub(&client->memory_bytes, obj->bytes);
   if (obj->map)
      munmap(obj->map, obj->map_size);
   free(obj->queues);
   free(obj->disp);
   free(obj);
}

/* Commands that may name a buffer or image before it is bound to memory;
 * any other use of one would make the host driver touch memory that is not
 * there. */
static bool
op_allows_unbound(uint32_t op)
{
   switch (op) {
   case WIRE_OP_vkDestroyBuffer:
   case WIRE_OP_vkDestroyImage:
   case WIRE_OP_vkBindBufferMemory:
   case WIRE_OP_vkBindBufferMemory2:
   case WIRE_OP_vkBindImageMemory:
   case WIRE_OP_vkBindImageMemory2:
   case WIRE_OP_vkGetBufferMemoryRequirements:
   case WIRE_OP_vkGetBufferMemoryRequirements2:
   case WIRE_OP_vkGetImageMemoryRequirements:
   case WIRE_OP_vkGetImageMemoryRequirements2:
   case WIRE_OP_vkGetImageSparseMemoryRequirements:
   case WIRE_OP_vkGetImageSparseMemoryRequirements2:
   case WIRE_OP_vkGetImageSubresourceLayout:
   case WIRE_OP_vkSetPrivateData:
   case WIRE_OP_vkGetPrivateData:
      return true;
   default:
      return false;
   }
}

static uint64_t
lookup(struct wire_dec *d, uint64_t id, VkObjectType type)
{
   struct gpud_call *call = d->user;
   struct gpud_object *obj = gpud_object_find(call->client, id);
   if (!obj) {
      wire_dec_fail(d, "unknown object id");
      return 0;
   }
   if (obj->type != type) {
      wire_dec_fail(d, "object of the wrong type");
      return 0;
   }
   if ((type == VK_OBJECT_TYPE_BUFFER || type == VK_OBJECT_TYPE_IMAGE) && !obj->bound &&
       !obj->sparse && !op_allows_unbound(call->op)) {
      wire_dec_fail(d, type == VK_OBJECT_TYPE_BUFFER ? "buffer used before it is bound to memory"
                                                     : "image used before it is bound to memory");
      return 0;
   }
   if (call->n_touched == 0) {
      /* the dispatchable first parameter sets the scope of the command */
      switch (type) {
      case VK_OBJECT_TYPE_INSTANCE:
         call->instance = obj;
         break;
      case VK_OBJECT_TYPE_PHYSICAL_DEVICE:
         call->instance = obj->instance;
         break;
      case VK_OBJECT_TYPE_DEVICE:
         call->device = obj;
         call->instance = obj->instance;
         break;
      case VK_OBJECT_TYPE_QUEUE:
      case VK_OBJECT_TYPE_COMMAND_BUFFER:
         call->device = obj->device;
         call->instance = obj->device->instance;
         break;
      default:
         wire_dec_fail(d, "command does not start with a dispatchable object");
         return 0;
      }
      call->disp = call->device ? call->device->disp : call->instance->disp;
   } else if (obj->device && call->device && obj->device != call->device) {
      wire_dec_fail(d, "object belongs to another device");
      return 0;
   } else if (obj->instance && call->instance && obj->instance != call->instance) {
      wire_dec_fail(d, "object belongs to another instance");
      return 0;
   }
   if (call->n_touched == call->cap_touched) {
      unsigned cap = call->cap_touched ? call->cap_touched * 2 : 16;
      struct gpud_object **t = realloc(call->touched, sizeof(*t) * cap);
      if (!t) {
         wire_dec_fail(d, "out of memory");
         return 0;
      }
      call->touched = t;
      call->cap_touched = cap;
   }
   call->touched[call->n_touched++] = obj;
   return obj->handle;
}

static bool
new_id(struct wire_dec *d, uint64_t id)
{
   struct gpud_call *call = d->user;
   return id != 0 && !gpud_object_find(call->client, id) &&
          atomic_load(&call->client->n_objects) < GPUD_MAX_OBJECTS;
}

void
gpud_call_fail(struct gpud_call *call, const char *why)
{
   wire_dec_fail(&call->dec, why);
}

void
gpud_call_async_error(struct gpud_call *call, VkResult result)
{
   /* Nobody waits for this result: the device is lost from now on, and
    * every later call on it says so. */
   gpud_client_log(call->client, UTIL_LOG_WARNING, "%s failed (%d): device lost",
                   wire_op_name(call->op), result);
   if (call->device)
      call->device->lost = true;
}

struct gpud_object *
gpud_call_named(struct gpud_call *call, VkObjectType type, uint64_t handle)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      if (call->touched[i] && call->touched[i]->type == type &&
          call->touched[i]->handle == handle)
         return call->touched[i];
   }
   return NULL;
}

static struct gpud_object *
touched_of_type(struct gpud_call *call, VkObjectType type)
{
   for (unsigned i = 0; i < call->n_touched; i++) {
      if (call->touched[i]->type == type)
         return call->touched[i];
   }
   return NULL;
}

void
gpud_call_add_object(struct gpud_call *call, VkObjectType type, uint64_t id, uint64_t handle)
{
   struct gpud_client *client = call->client;
   struct gpud_object *obj = calloc(1, sizeof(*obj));
   if (!obj || util_idmap_insert(&client->objects, id, obj) < 0) {
      /* a duplicate id inside one command, or no memory: the host object
       * cannot be named, so destroy it right away */
      free(obj);
      if (call->disp)
         gpud_gen_destroy_object(call->disp,
                                 call->device ? call->device->handle : call->instance->handle,
                                 type, handle);
      gpud_call_fail(call, "bad id for a new object");
      return;
   }
   obj->id = id;
   obj->type = type;
   obj->handle = handle;
   obj->instance = call->instance;
   obj->device = call->device;
   switch (type) {
   case VK_OBJECT_TYPE_INSTANCE:
      obj->instance = NULL;
      obj->messenger = call->new_messenger;
      call->new_messenger = VK_NULL_HANDLE;
      obj->disp = calloc(1, sizeof(*obj->disp));
      if (obj->disp) {
         obj->disp->GetInstanceProcAddr = client->daemon->host.get_instance_proc_addr;
         gpud_host_dispatch_load_instance(obj->disp, (VkInstance)(uintptr_t)handle);
      }
      break;
   case VK_OBJECT_TYPE_DEVICE:
      obj->device = NULL;
      obj->physical_device = call->n_touched ? call->touched[0]->handle : 0;
      obj->queues = call->new_queues;
      obj->n_queues = call->n_new_queues;
      call->new_queues = NULL;
      obj->disp = calloc(1, sizeof(*obj->disp));
      if (obj->disp) {
         *obj->disp = *call->instance->disp;
         gpud_host_dispatch_load_device(obj->disp, (VkDevice)(uintptr_t)handle);
      }
      break;
   case VK_OBJECT_TYPE_COMMAND_BUFFER:
      obj->pool = touched_of_type(call, VK_OBJECT_TYPE_COMMAND_POOL);
      break;
   case VK_OBJECT_TYPE_DESCRIPTOR_SET:
      obj->pool = touched_of_type(call, VK_OBJECT_TYPE_DESCRIPTOR_POOL);
      break;
   case VK_OBJECT_TYPE_BUFFER:
      obj->sparse = call->new_create_flags & VK_BUFFER_CREATE_SPARSE_BINDING_BIT;
      break;
   case VK_OBJECT_TYPE_IMAGE:
      obj->sparse = call->new_create_flags & VK_IMAGE_CREATE_SPARSE_BINDING_BIT;
      break;
   case VK_OBJECT_TYPE_DEVICE_MEMORY:
      obj->map = call->new_map;
      obj->map_size = call->new_map_size;
      obj->bytes = call->new_bytes;
      call->new_map = NULL;
      atomic_fetch_add(&client->memory_bytes, obj->bytes);
      break;
   default:
      break;
   }
   if ((type == VK_OBJECT_TYPE_INSTANCE || type == VK_OBJECT_TYPE_DEVICE) && !obj->disp) {
      util_idmap_remove(&client->objects, id);
      free(obj);
      gpud_call_fail(call, "out of memory");
      return;
   }
   obj->prev = client->last;
   if (client->last)
      client->last->next = obj;
   else
      client->first = obj;
   client->last = obj;
   atomic_fetch_add(&client->n_objects, 1);
}

static void
forget_children(struct gpud_client *client, struct gpud_object *pool)
{
   struct gpud_object *obj = client->first;
   while (obj) {
      struct gpud_object *next = obj->next;
      if (obj->pool == pool)
         gpud_object_forget(client, obj);
      obj = next;
   }
}

void
gpud_call_forget_objects(struct gpud_call *call, VkObjectType type)
{
   /* the first touched object is the dispatchable parent: skip it */
   for (unsigned i = 1; i < call->n_touched; i++) {
      struct gpud_object *obj = call->touched[i];
      if (!obj || obj->type != type)
         continue;
      /* the same object may be named twice; forget it once */
      for (unsigned j = i + 1; j < call->n_touched; j++) {
         if (call->touched[j] == obj)
            call->touched[j] = NULL;
      }
      if (type == VK_OBJECT_TYPE_COMMAND_POOL || type == VK_OBJECT_TYPE_DESCRIPTOR_POOL)
         forget_children(call->client, obj);
      gpud_object_forget(call->client, obj);
   }
}

/* Objects that die with their parent and need no call of their own. */
static bool
dies_with_parent(const struct gpud_object *obj)
{
   return obj->pool || obj->type == VK_OBJECT_TYPE_QUEUE ||
          obj->type == VK_OBJECT_TYPE_PHYSICAL_DEVICE;
}

static void
destroy_object(struct gpud_client *client, struct gpud_object *obj)
{
   if (!dies_with_parent(obj)) {
      if (obj->type == VK_OBJECT_TYPE_DEVICE) {
         obj->disp->DestroyDevice((VkDevice)(uintptr_t)obj->handle, NULL);
      } else if (obj->type == VK_OBJECT_TYPE_INSTANCE) {
         gpud_validate_instance_destroy(obj);
         obj->disp->DestroyInstance((VkInstance)(uintptr_t)obj->handle, NULL);
      } else if (obj->device) {
         gpud_gen_destroy_object(obj->device->disp, obj->device->handle, obj->type,
                                 obj->handle);
      } else if (obj->instance) {
         gpud_gen_destroy_object(obj->instance->disp, obj->instance->handle, obj->type,
                                 obj->handle);
      }
   }
   gpud_object_forget(client, obj);
}

static bool
in_scope(const struct gpud_object *obj, const struct gpud_object *device,
         const struct gpud_object *instance)
{
   if (device)
      return obj->device == device;
   if (instance)
      return obj == instance || obj->instance == instance ||
             (obj->device && obj->device->instance == instance);
   return true;
}

void
gpud_client_destroy_objects(struct gpud_client *client, struct gpud_object *device,
                            struct gpud_object *instance)
{
   /* Let in-flight work end first. */
   for (struct gpud_object *obj = client->first; obj; obj = obj->next) {
      if (obj->type != VK_OBJECT_TYPE_DEVICE)
         continue;
      if (device ? obj != device : !in_scope(obj, NULL, instance))
         continue;
      gpud_waiters_cancel(client, obj, 0);
      obj->disp->DeviceWaitIdle((VkDevice)(uintptr_t)obj->handle);
   }
   /* Device children, newest first.  Pool children go with their pool; a
    * pool's children may sit anywhere, so start over after each pool. */
   struct gpud_object *obj = client->last;
   while (obj) {
      struct gpud_object *prev = obj->prev;
      if (obj->device && !obj->pool && in_scope(obj, device, instance)) {
         if (obj->type == VK_OBJECT_TYPE_COMMAND_POOL ||
             obj->type == VK_OBJECT_TYPE_DESCRIPTOR_POOL) {
            forget_children(client, obj);
            destroy_object(client, obj);
            obj = client->last;
            continue;
         }
         destroy_object(client, obj);
      }
      obj = prev;
   }
   /* The devices. */
   for (obj = client->last; obj;) {
      struct gpud_object *prev = obj->prev;
      if (obj->type == VK_OBJECT_TYPE_DEVICE &&
          (device ? obj == device : in_scope(obj, NULL, instance)))
         destroy_object(client, obj);
      obj = prev;
   }
   if (device)
      return;
   /* Physical devices and instances. */
   for (obj = client->last; obj;) {
      struct gpud_object *prev = obj->prev;
      if (in_scope(obj, NULL, instance))
         destroy_object(client, obj);
      obj = prev;
   }
}

/* ---- the command loop ---------------------------------------------------- */

static int
process_stream(struct gpud_client *client, const uint8_t *data, size_t size)
{
   struct gpud_call call;
   memset(&call, 0, sizeof(call));
   call.client = client;
   call.reply_fd = -1;
   while (size > 0) {
      struct wire_cmd_header h;
      if (size < sizeof(h)) {
         free(call.touched);
         return protocol_error(client, "truncated command header");
      }
      memcpy(&h, data, sizeof(h));
      if (h.size < sizeof(h) || h.size > size || (h.size & 3)) {
         free(call.touched);
         return protocol_error(client, "command size %u with %zu bytes left", h.size, size);
      }
      wire_arena_reset(client->arena);
      call.n_touched = 0;
      call.disp = NULL;
      call.device = call.instance = NULL;
      call.deferred = false;
      call.op = h.op;
      call.seq = h.seq;
      call.new_map = NULL;
      call.new_bytes = 0;
      call.new_create_flags = 0;
      call.new_messenger = VK_NULL_HANDLE;
      wire_dec_init(&call.dec, data + sizeof(h), h.size - sizeof(h), client->arena);
      call.dec.lookup = lookup;
      call.dec.new_id = new_id;
      call.dec.user = &call;
      call.reply = NULL;
      if (h.flags & WIRE_CMD_REPLY) {
         wire_enc_reset(&client->reply);
         wire_enc_begin_cmd(&client->reply, WIRE_OP_REPLY, 0, h.seq);
         call.reply = &client->reply;
      }
      atomic_fetch_add(&client->commands, 1);

      gpud_validate_set_call(&call);
      bool ok = h.op != 0 && h.op < WIRE_OP_COUNT && gpud_gen_dispatch(&call, h.op);
      gpud_validate_set_call(NULL);
      if (call.new_map) {
         /* an allocation whose object was never made */
         munmap(call.new_map, call.new_map_size);
         call.new_map = NULL;
      }
      free(call.new_queues);
      call.new_queues = NULL;
      if (!ok) {
         util_fd_close(&call.reply_fd);
         free(call.touched);
         if (h.op == 0 || h.op >= WIRE_OP_COUNT)
            return protocol_error(client, "unknown op %u", h.op);
         return protocol_error(client, "in %s: %s", wire_op_name(h.op),
                               call.dec.error ? call.dec.error : "bad command");
      }
      if (call.reply && !call.deferred) {
         wire_enc_end_cmd(&client->reply, 0);
         int r = gpud_client_send_reply(client, &client->reply, call.reply_fd >= 0 ? &call.reply_fd : NULL,
                                        call.reply_fd >= 0 ? 1 : 0);
         util_fd_close(&call.reply_fd);
         if (r < 0) {
            free(call.touched);
            return r;
         }
      }
      util_fd_close(&call.reply_fd);
      data += h.size;
      size -= h.size;
   }
   free(call.touched);
   return 0;
}

static int
send_control(struct gpud_client *client, Gpud__ControlMessage *m)
{
   pthread_mutex_lock(&client->send_mutex);
   int r = wire_control_send(client->fd, m);
   pthread_mutex_unlock(&client->send_mutex);
   return r;
}

static void
refuse(struct gpud_client *client, const char *reason)
{
   gpud_client_log(client, UTIL_LOG_ERR, "refused: %s", reason);
   pthread_mutex_lock(&client->send_mutex);
   wire_control_send_disconnect(client->fd, reason);
   pthread_mutex_unlock(&client->send_mutex);
}

void gpud_control_status(struct gpud_daemon *daemon, Gpud__ControlMessage *reply_msg,
                         Gpud__StatusReply *reply);
void gpud_control_status_free(Gpud__StatusReply *reply);
bool gpud_control_disconnect(struct gpud_daemon *daemon, uint64_t client_id);

static int
handle_control(struct gpud_client *client, Gpud__ControlMessage *m)
{
   Gpud__ControlMessage reply = GPUD__CONTROL_MESSAGE__INIT;
   switch (m->msg_case) {
   case GPUD__CONTROL_MESSAGE__MSG_STATUS_REQUEST: {
      if (!client->control)
         return -EPROTO;
      Gpud__StatusReply status = GPUD__STATUS_REPLY__INIT;
      gpud_control_status(client->daemon, &reply, &status);
      int r = send_control(client, &reply);
      gpud_control_status_free(&status);
      return r;
   }
   case GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REQUEST: {
      if (!client->control)
         return -EPROTO;
      Gpud__DisconnectClientReply dr = GPUD__DISCONNECT_CLIENT_REPLY__INIT;
      dr.found = gpud_control_disconnect(client->daemon, m->disconnect_client_request->client_id);
      reply.msg_case = GPUD__CONTROL_MESSAGE__MSG_DISCONNECT_CLIENT_REPLY;
      reply.disconnect_client_reply = &dr;
      return send_control(client, &reply);
   }
   case GPUD__CONTROL_MESSAGE__MSG_DISCONNECT:
      return -ECONNRESET;
   default:
      return -EPROTO;
   }
}

static int
handshake(struct gpud_client *client)
{
   struct util_msg msg;
   int r = util_msg_recv(client->fd, &client->reader, &msg);
   if (r == -ECONNRESET)
      return r; /* connected and left: nothing to say */
   if (r < 0) {
      refuse(client, recv_error(r));
      return r;
   }
   if (msg.n_fds) {
      util_msg_close_fds(&msg);
      refuse(client, "file descriptors in the handshake");
      return -EPROTO;
   }
   Gpud__ControlMessage *m =
      msg.type == UTIL_MSG_CONTROL ? wire_control_unpack(msg.data, msg.size) : NULL;
   if (!m || m->msg_case != GPUD__CONTROL_MESSAGE__MSG_HELLO) {
      wire_control_free(m);
      refuse(client, "the first message is not a Hello");
      return -EPROTO;
   }
   const Gpud__Hello *hello = m->hello;
   if (hello->client_name && hello->client_name[0]) {
      /* keep what is printable */
      size_t n = 0;
      for (const char *c = hello->client_name; *c && n < sizeof(client->name) - 1; c++)
         client->name[n++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
      client->name[n] = '\0';
   }
   char reason[256];
   r = 0;
   if (hello->protocol_version != WIRE_PROTOCOL_VERSION) {
      snprintf(reason, sizeof(reason),
               "protocol version mismatch: client speaks %u, daemon speaks %u",
               hello->protocol_version, WIRE_PROTOCOL_VERSION);
      r = -EPROTO;
   } else if (hello->role == GPUD__ROLE__ROLE_CONTROL) {
      client->control = true;
   } else if (hello->role != GPUD__ROLE__ROLE_VULKAN) {
      snprintf(reason, sizeof(reason), "unknown role %d", hello->role);
      r = -EPROTO;
   } else if (hello->command_table_hash != WIRE_COMMAND_TABLE_HASH) {
      snprintf(reason, sizeof(reason),
               "command table mismatch: client %016" PRIx64 " (vk.xml %u), daemon %016llx "
               "(vk.xml %u); install matching gpud and ICD builds",
               hello->command_table_hash, hello->vk_header_version, WIRE_COMMAND_TABLE_HASH,
               WIRE_VK_HEADER_VERSION);
      r = -EPROTO;
   }
   wire_control_free(m);
   if (r < 0) {
      refuse(client, reason);
      return r;
   }
   Gpud__Welcome welcome = GPUD__WELCOME__INIT;
   welcome.daemon_version = (char *)GPUD_VERSION;
   welcome.device_name = client->daemon->host.device_name;
   welcome.host_driver = client->daemon->host.manifest;
   welcome.client_id = client->id;
   Gpud__ControlMessage w = GPUD__CONTROL_MESSAGE__INIT;
   w.msg_case = GPUD__CONTROL_MESSAGE__MSG_WELCOME;
   w.welcome = &welcome;
   gpud_client_log(client, client->control ? UTIL_LOG_DEBUG : UTIL_LOG_INFO, "connected%s",
                   client->control ? " (control)" : "");
   return send_control(client, &w);
}

static void
client_loop(struct gpud_client *client)
{
   for (;;) {
      struct util_msg msg;
      /* The next command of a busy client usually follows at once. */
      util_socket_spin_readable(client->fd, GPUD_COMMAND_SPIN_NS);
      int r = util_msg_recv(client->fd, &client->reader, &msg);
      if (r == -ECONNRESET) {
         gpud_client_log(client, client->control ? UTIL_LOG_DEBUG : UTIL_LOG_INFO,
                         "disconnected");
         return;
      }
      if (r < 0) {
         if (!atomic_load(&client->closing))
            protocol_error(client, "%s", recv_error(r));
         return;
      }
      if (msg.n_fds) {
         util_msg_close_fds(&msg);
         protocol_error(client, "unexpected file descriptors");
         return;
      }
      if (msg.type == UTIL_MSG_CONTROL) {
         Gpud__ControlMessage *m = wire_control_unpack(msg.data, msg.size);
         r = m ? handle_control(client, m) : -EPROTO;
         wire_control_free(m);
         if (r == -ECONNRESET)
            return;
         if (r < 0) {
            protocol_error(client, "bad control message");
            return;
         }
         continue;
      }
      if (client->control) {
         protocol_error(client, "commands on a control connection");
         return;
      }
      if (process_stream(client, msg.data, msg.size) < 0)
         return;
   }
}

static void
client_free(struct gpud_client *client)
{
   util_idmap_finish(&client->objects);
   util_msg_reader_finish(&client->reader);
   wire_arena_destroy(client->arena);
   wire_enc_finish(&client->reply);
   util_fd_close(&client->fd);
   pthread_mutex_destroy(&client->send_mutex);
   pthread_mutex_destroy(&client->wait_mutex);
   pthread_cond_destroy(&client->wait_cond);
   free(client);
}

static void *
client_thread(void *data)
{
   struct gpud_client *client = data;
   struct gpud_daemon *daemon = client->daemon;

   if (handshake(client) == 0)
      client_loop(client);

   /* Stop reading and writing; waits in flight end at their next slice. */
   atomic_store(&client->closing, true);
   shutdown(client->fd, SHUT_RDWR);
   uint64_t objects = atomic_load(&client->n_objects);
   uint64_t bytes = atomic_load(&client->memory_bytes);
   gpud_client_destroy_objects(client, NULL, NULL);
   gpud_waiters_cancel(client, NULL, 0);
   if (objects)
      gpud_client_log(client, UTIL_LOG_INFO,
                      "released %" PRIu64 " objects and %" PRIu64 " bytes of memory", objects,
                      bytes);

   pthread_mutex_lock(&daemon->mutex);
   for (struct gpud_client **p = &daemon->clients; *p; p = &(*p)->next) {
      if (*p == client) {
         *p = client->next;
         break;
      }
   }
   daemon->n_threads--;
   pthread_cond_broadcast(&daemon->threads_cond);
   pthread_mutex_unlock(&daemon->mutex);
   client_free(client);
   return NULL;
}

void
gpud_client_start(struct gpud_daemon *daemon, int fd)
{
   struct gpud_client *client = calloc(1, sizeof(*client));
   if (!client) {
      close(fd);
      return;
   }
   client->daemon = daemon;
   client->fd = fd;
   struct ucred cred;
   socklen_t len = sizeof(cred);
   if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      client->pid = cred.pid;
      client->uid = cred.uid;
   }
   pthread_mutex_init(&client->send_mutex, NULL);
   pthread_mutex_init(&client->wait_mutex, NULL);
   pthread_cond_init(&client->wait_cond, NULL);
   util_msg_reader_init(&client->reader, GPUD_MAX_MESSAGE_SIZE);
   util_idmap_init(&client->objects);
   wire_enc_init(&client->reply);
   client->arena = wire_arena_create(GPUD_MAX_COMMAND_MEMORY);
   if (!client->arena) {
      client_free(client);
      return;
   }

   pthread_mutex_lock(&daemon->mutex);
   client->id = ++daemon->next_client_id;
   client->next = daemon->clients;
   daemon->clients = client;
   daemon->n_threads++;
   pthread_mutex_unlock(&daemon->mutex);

   int r = util_thread_start_detached(client_thread, client);
   if (r != 0) {
      util_err("cannot start a client thread: %s", strerror(r));
      pthread_mutex_lock(&daemon->mutex);
      daemon->clients = client->next;
      daemon->n_threads--;
      pthread_mutex_unlock(&daemon->mutex);
      client_free(client);
   }
}
