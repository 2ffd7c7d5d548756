/* SPDX-License-Identifier: MIT */
#pragma once

/* File descriptors held in variables: moved out, or closed and marked so. */

#include <stdbool.h>

/* Takes ownership of an fd out of a variable, leaving -1 behind. */
static inline int
util_fd_move(int *fd)
{
   int r = *fd;
   *fd = -1;
   return r;
}

/* Closes an fd if it is valid and marks the variable closed. */
void util_fd_close(int *fd);

/* Whether fd is an open file descriptor of this process. */
bool util_fd_open(int fd);
