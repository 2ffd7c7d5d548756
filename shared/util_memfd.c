/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util_macros.h"
#include "util_memfd.h"

int
util_memfd_create(const char *name, uint64_t size, int *ret_fd)
{
   if (!name || !ret_fd)
      return -EINVAL;
   if (size > (uint64_t)INT64_MAX)
      return -EFBIG;

   int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
   if (fd < 0)
      return -errno;

   int r;
   if (ftruncate(fd, (off_t)size) < 0) {
      r = -errno;
      goto err_close;
   }
   if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
      r = -errno;
      goto err_close;
   }

   *ret_fd = fd;
   return 0;

err_close:
   util_fd_close(&fd);
   return r;
}

int
util_memfd_check(int fd, uint64_t size)
{
   /* F_GET_SEALS fails with EINVAL on anything that does not support
    * sealing (pipes, sockets, regular files on disk).  A tmpfs file that was
    * not created with memfd_create(MFD_ALLOW_SEALING) reports F_SEAL_SEAL
    * only, and is rejected below as unsealed. */
   int seals = fcntl(fd, F_GET_SEALS);
   if (seals < 0)
      return -errno;

   /* Only shrinking can make a mapping of the first `size` bytes fault;
    * growth is harmless to the side that maps. */
   if (!(seals & F_SEAL_SHRINK))
      return -EPERM;
   /* Every user maps it shared and writable, which a write seal forbids. */
   if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
      return -EACCES;

   struct stat st;
   if (fstat(fd, &st) < 0)
      return -errno;
   if (!S_ISREG(st.st_mode))
      return -EINVAL;
   if (st.st_size < 0 || (uint64_t)st.st_size < size)
      return -ERANGE;

   return 0;
}
