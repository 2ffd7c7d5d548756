/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Validation (gpud_validate.c), with --validate: the Khronos layer on every
 * client host instance, its messages to the log and the client's
 * messengers.
 */
#include "gpud_call.h"

/* What gpud_exec_vkCreateInstance adds when validating, and the messenger. */
void gpud_validate_instance_info(struct gpud_call *call, VkInstanceCreateInfo *ci,
                                 VkDebugUtilsMessengerCreateInfoEXT *messenger);
void gpud_validate_instance_created(struct gpud_call *call, VkInstance instance);
void gpud_validate_instance_destroy(struct gpud_object *instance);
