/* SPDX-License-Identifier: MIT */
/* Control requests (gpudctl): the daemon's view of its clients. */
#include "gpud.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire_control.h"

void gpud_control_status(struct gpud_daemon *daemon, Gpud__ControlMessage *reply_msg,
                         Gpud__StatusReply *reply);
void gpud_control_status_free(Gpud__StatusReply *reply);
bool gpud_control_disconnect(struct gpud_daemon *daemon, uint64_t client_id);

void
gpud_control_status(struct gpud_daemon *daemon, Gpud__ControlMessage *reply_msg,
                    Gpud__StatusReply *reply)
{
   reply->device_name = daemon->host.device_name;
   reply->host_driver = daemon->host.manifest;
   reply->daemon_pid = (uint32_t)getpid();
   pthread_mutex_lock(&daemon->mutex);
   size_t n = 0;
   for (struct gpud_client *c = daemon->clients; c; c = c->next)
      n += !c->control;
   reply->clients = calloc(n ? n : 1, sizeof(*reply->clients));
   size_t i = 0;
   for (struct gpud_client *c = daemon->clients; c && reply->clients; c = c->next) {
      if (c->control)
         continue;
      Gpud__ClientInfo *info = calloc(1, sizeof(*info));
      if (!info)
         break;
      gpud__client_info__init(info);
      info->id = c->id;
      info->pid = (uint32_t)c->pid;
      info->uid = (uint32_t)c->uid;
      info->name = strdup(c->name);
      info->objects = atomic_load(&c->n_objects);
      info->memory_bytes = atomic_load(&c->memory_bytes);
      info->commands = atomic_load(&c->commands);
      reply->objects += info->objects;
      reply->memory_bytes += info->memory_bytes;
      reply->clients[i++] = info;
   }
   reply->n_clients = i;
   pthread_mutex_unlock(&daemon->mutex);
   reply_msg->msg_case = GPUD__CONTROL_MESSAGE__MSG_STATUS_REPLY;
   reply_msg->status_reply = reply;
}

void
gpud_control_status_free(Gpud__StatusReply *reply)
{
   for (size_t i = 0; i < reply->n_clients; i++) {
      free(reply->clients[i]->name);
      free(reply->clients[i]);
   }
   free(reply->clients);
}

bool
gpud_control_disconnect(struct gpud_daemon *daemon, uint64_t client_id)
{
   bool found = false;
   pthread_mutex_lock(&daemon->mutex);
   for (struct gpud_client *c = daemon->clients; c; c = c->next) {
      if (c->id == client_id && !c->control) {
         gpud_client_log(c, UTIL_LOG_NOTICE, "disconnected by an administrator");
         atomic_store(&c->closing, true);
         shutdown(c->fd, SHUT_RDWR);
         found = true;
      }
   }
   pthread_mutex_unlock(&daemon->mutex);
   return found;
}
