/* SPDX-License-Identifier: MIT */
#pragma once

/* Recordings that hold copies between buffers alone, which the ICD
 * (icd/icd_queue.c) and the worker (daemon/worker/gpud_transfer.c) may make
 * without the GPU: the commands such a recording may hold. */

#include <stdbool.h>
#include <stdint.h>

#include "wire_gen.h"

/* Whether a recording may hold the command op and still be copies alone
 * (the copies and barriers are looked at further where they are recorded:
 * no image barriers, no queue-family transfers). */
static inline bool
wire_op_copies_only(uint32_t op)
{
   switch (op) {
   case WIRE_OP_vkBeginCommandBuffer:
   case WIRE_OP_vkCmdCopyBuffer:
   case WIRE_OP_vkCmdPipelineBarrier:
#ifdef WIRE_HAS_vkCmdCopyBuffer2
   case WIRE_OP_vkCmdCopyBuffer2:
   case WIRE_OP_vkCmdPipelineBarrier2:
#endif
      return true;
   default:
      return false;
   }
}
