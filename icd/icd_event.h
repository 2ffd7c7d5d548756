/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Events (icd_event.c).
 */

#include "icd_object.h"

/* An event with a slot on the page: its tag there, the application's host
 * sets and resets so far and the last of them (what the event is while the
 * worker has not run them all, when no submission changes it). */
struct icd_event {
   struct icd_object base;
   struct icd_device *device; /* NULL: asked about (device-only, no slot) */
   int slot;
   uint32_t tag;
   _Atomic uint32_t host_ops;
   _Atomic bool last_set;
};
