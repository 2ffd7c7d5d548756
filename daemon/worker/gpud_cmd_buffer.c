/* SPDX-License-Identifier: MIT */
/*
 * Command buffers: the events and query pools a recording changes (so that
 * a submission of it marks them pending on the page), and a recording's
 * start.
 */
#include "gpud_call.h"
#include "gpud_queue.h"
#include "gpud_track.h"

#include <stdlib.h>

#include "gpud_gen.h"
#include "wire_completion.h"
#include "gpud_transfer.h"

/* ---- the events and query pools a recording changes ------------------------ */

/* Distinct objects a command buffer's list holds; another one is asked
 * about from now on. */
#define CMD_WATCHED_MAX 64u

static void
cmd_watch(struct gpud_object *cmd, struct gpud_object *obj)
{
   if (!cmd || !obj ||
       !(obj->type == VK_OBJECT_TYPE_EVENT ? obj->event_tracked : obj->query_page != NULL))
      return;
   for (uint32_t i = 0; i < cmd->n_cmd_watched; i++) {
      if (cmd->cmd_watched[i] == obj->id)
         return;
   }
   if (!cmd->cmd_watched)
      cmd->cmd_watched = calloc(CMD_WATCHED_MAX, sizeof(*cmd->cmd_watched));
   if (cmd->cmd_watched && cmd->n_cmd_watched < CMD_WATCHED_MAX) {
      cmd->cmd_watched[cmd->n_cmd_watched++] = obj->id;
      return;
   }
   struct gpud_device_track *t = obj->device ? obj->device->dtrack : NULL;
   if (!t)
      return;
   pthread_mutex_lock(&t->mutex);
   if (obj->type == VK_OBJECT_TYPE_QUERY_POOL)
      gpud_track_pool_write(t, obj->id, 0, true, false);
   else if (gpud_track_event_write(t, obj->event_slot, obj->id, VK_NULL_HANDLE, 0, true, EVENT_KEEP, 0))
      gpud_completion_wake(t->page);
   pthread_mutex_unlock(&t->mutex);
}

#define CMD_WATCH(cmd, type, member)                                                        \
   void gpud_exec_##cmd(struct gpud_call *call, struct wire_args_##cmd *a)                 \
   {                                                                                        \
      gpud_gen_exec_##cmd(call, a);                                                         \
      cmd_watch(gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,                        \
                                (uint64_t)(uintptr_t)a->commandBuffer),                     \
                gpud_call_named(call, type, (uint64_t)(uintptr_t)a->member));               \
   }

CMD_WATCH(vkCmdSetEvent, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetEvent, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdSetEvent2, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetEvent2, VK_OBJECT_TYPE_EVENT, event)
CMD_WATCH(vkCmdResetQueryPool, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdBeginQuery, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdEndQuery, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdWriteTimestamp, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdWriteTimestamp2, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdBeginQueryIndexedEXT, VK_OBJECT_TYPE_QUERY_POOL, queryPool)
CMD_WATCH(vkCmdEndQueryIndexedEXT, VK_OBJECT_TYPE_QUERY_POOL, queryPool)

/* A secondary's events and pools are its primary's too. */
void
gpud_exec_vkCmdExecuteCommands(struct gpud_call *call, struct wire_args_vkCmdExecuteCommands *a)
{
   gpud_gen_exec_vkCmdExecuteCommands(call, a);
   struct gpud_object *primary = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                                 (uint64_t)(uintptr_t)a->commandBuffer);
   for (uint32_t i = 0; primary && i < a->commandBufferCount; i++) {
      const struct gpud_object *secondary =
         gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                         (uint64_t)(uintptr_t)a->pCommandBuffers[i]);
      for (uint32_t j = 0; secondary && secondary != primary && j < secondary->n_cmd_watched;
           j++)
         cmd_watch(primary, gpud_object_find(call->ctx, secondary->cmd_watched[j]));
   }
}

/* A new recording starts with nothing watched. */
void
gpud_exec_vkBeginCommandBuffer(struct gpud_call *call, struct wire_args_vkBeginCommandBuffer *a)
{
   struct gpud_object *cmd = gpud_call_named(call, VK_OBJECT_TYPE_COMMAND_BUFFER,
                                             (uint64_t)(uintptr_t)a->commandBuffer);
   if (cmd) {
      cmd->n_cmd_watched = 0;
      gpud_transfer_begin(cmd);
   }
   gpud_gen_exec_vkBeginCommandBuffer(call, a);
   /* recorded: nobody waits for the result (the ICD answered at once) */
   if (a->ret < 0)
      gpud_call_async_error(call, a->ret);
}
