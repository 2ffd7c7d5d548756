/* SPDX-License-Identifier: MIT */
/* File descriptors closed once, and told open (util_fd.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "util_fd.h"
#include "util_macros.h"

void
util_fd_close(int *fd)
{
   if (!fd || *fd < 0)
      return;

   /* Like systemd's safe_close(): keep errno for the caller, and never retry
    * on EINTR, since on Linux the fd is gone whatever close() returned. */
   int saved_errno = errno;
   close(*fd);
   *fd = -1;
   errno = saved_errno;
}

bool
util_fd_open(int fd)
{
   return fd >= 0 && fcntl(fd, F_GETFD) >= 0;
}
