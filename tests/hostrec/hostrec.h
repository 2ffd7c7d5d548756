/* SPDX-License-Identifier: MIT */
/*
 * The host-call recorder: a Vulkan driver that records what it is asked
 * (the inputs of the commands that create, allocate, record and submit)
 * and passes every call on to the driver it wraps.  The generated dumpers
 * (gen_hostrec.py) write through these helpers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <vulkan/vulkan_core.h>

#include "util_macros.h"

/* One command's record being written (a thread's own). */
struct hr {
   FILE *out;        /* a memory stream, written out whole at the end */
   char *text;
   size_t text_len;
   char path[2048];  /* the member being written */
   size_t len;
};

struct hostrec_command {
   const char *name;
   PFN_vkVoidFunction wrapper;
   PFN_vkVoidFunction *next;
   bool device_level;
};

extern const struct hostrec_command hostrec_commands[];
extern const size_t hostrec_command_count;

/* NULL where nothing is recorded (no GPUD_HOSTREC_DIR). */
struct hr *hr_begin(const char *command);
void hr_end(struct hr *h, int64_t result, bool has_result);

/* The path: back to `at`, then a member's name; an array index. */
void hr_at(struct hr *h, size_t at, const char *name);
void hr_index(struct hr *h, size_t i);

void hr_int(struct hr *h, int64_t v);
void hr_uint(struct hr *h, uint64_t v);
void hr_hex(struct hr *h, uint64_t v);
void hr_float(struct hr *h, double v);
void hr_string(struct hr *h, const char *s);
void hr_null(struct hr *h);
/* what it is where present ("handle", "address", "fd"), else null */
void hr_opaque(struct hr *h, bool present, const char *what);
/* bytes behind a pointer: their length and a hash */
void hr_bytes(struct hr *h, const void *p, size_t n);
/* a small value's bytes (UUIDs, unions), in hex */
void hr_bytes_value(struct hr *h, const void *p, size_t n);
