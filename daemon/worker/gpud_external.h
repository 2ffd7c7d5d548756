/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * External memory, semaphores and fences (gpud_external.c): fds checked
 * before the host driver sees them.
 */
#include "gpud_call.h"

/* Checks an fd a client gives for a memory import (gpud_external.c): a
 * sealed memfd of at least size bytes for host-visible (shared) memory, the
 * host's kind of handle otherwise.  VK_ERROR_INVALID_EXTERNAL_HANDLE (and
 * the fd closed) when it is not. */
VkResult gpud_external_check_memory_import(struct gpud_call *call,
                                           VkImportMemoryFdInfoKHR *import, bool shared,
                                           uint64_t size);
