/* SPDX-License-Identifier: MIT */
/* Sealed memfds made, checked and pre-faulted (util_memfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util_fd.h"
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

   if (ftruncate(fd, (off_t)size) < 0 ||
       fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
      int r = -errno;
      util_fd_close(&fd);
      return r;
   }
   *ret_fd = fd;
   return 0;
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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

bool
util_map_prefault(void *addr, size_t length)
{
   const size_t page = (size_t)sysconf(_SC_PAGESIZE);
   uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
   uintptr_t end = ((uintptr_t)addr + length + page - 1) & ~(uintptr_t)(page - 1);
   if (!length || end <= start)
      return false;
   /* the first, a middle and the last page: there, or none is mapped */
   const size_t pages = (end - start) / page;
   const size_t samples[] = {0, pages / 2, pages - 1};
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(samples); i++) {
      unsigned char resident = 0;
      if (mincore((void *)(start + samples[i] * page), page, &resident) < 0 || !(resident & 1))
         return false;
   }
   return madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0;
}
