/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The client ICD's internals, one header an object as Mesa's runtime cuts
 * them: the object base and handle casts (icd_object.h), the connection to
 * the daemon, and the objects the ICD keeps beside the daemon's.
 */
#include "icd_object.h"
#include "icd_connection.h"
#include "icd_instance.h"
#include "icd_queue.h"
#include "icd_device.h"
#include "icd_completion.h"
#include "icd_buffer.h"
#include "icd_memory.h"
#include "icd_semaphore.h"
#include "icd_fence.h"
#include "icd_event.h"
#include "icd_query.h"
#include "icd_descriptor.h"
#include "icd_cmd_buffer.h"
#include "icd_upload.h"
