/* SPDX-License-Identifier: MIT */
/*
 * What an application attaches to its objects and asks of the debug
 * messages: VK_EXT_debug_utils names (kept for gpudctl), private data (on a
 * buffer's twin too), and which messages its messengers take.
 */
#include "gpud_call.h"

#include <stdlib.h>

/* VK_EXT_debug_utils: the name is kept for gpudctl and goes on to the host
 * where it has the extension. */
void
gpud_exec_vkSetDebugUtilsObjectNameEXT(struct gpud_call *call,
                                       struct wire_args_vkSetDebugUtilsObjectNameEXT *a)
{
   /* the named object is the last handle the command decoded */
   if (call->n_touched >= 2)
      gpud_object_set_name(call->ctx, call->touched[call->n_touched - 1],
                           a->pNameInfo->pObjectName);
   /* NULL and "" both unname; some hosts (Mesa 22.3) fail a NULL name */
   const VkDebugUtilsObjectNameInfoEXT *given = a->pNameInfo;
   VkDebugUtilsObjectNameInfoEXT info = *given;
   if (!info.pObjectName)
      info.pObjectName = "";
   a->pNameInfo = &info;
   gpud_gen_exec_vkSetDebugUtilsObjectNameEXT(call, a);
   a->pNameInfo = given;
}

/* Private data of a buffer with a twin goes on both (either stays). */
void
gpud_exec_vkSetPrivateData(struct gpud_call *call, struct wire_args_vkSetPrivateData *a)
{
   gpud_gen_exec_vkSetPrivateData(call, a);
   const struct gpud_object *buf = a->objectType == VK_OBJECT_TYPE_BUFFER
                                      ? gpud_call_named(call, VK_OBJECT_TYPE_BUFFER,
                                                        a->objectHandle)
                                      : NULL;
   if (a->ret == VK_SUCCESS && buf && buf->twin)
      a->ret = call->disp->SetPrivateData(a->device, a->objectType, buf->twin,
                                          a->privateDataSlot, a->data);
}

/* gpud's own: what the client's debug messengers take, so that nothing else
 * is sent. */
void
gpud_exec_vkSetMessageFilterGPUD(struct gpud_call *call,
                                 struct wire_args_vkSetMessageFilterGPUD *a)
{
   atomic_store(&call->ctx->message_severities, a->severities);
   atomic_store(&call->ctx->message_types, a->types);
}
