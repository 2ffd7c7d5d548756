/* SPDX-License-Identifier: MIT */
/* util_memfd: seals, sizes and the checks before a mapping. */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "unit_test.h"
#include "util_fd.h"
#include "util_memfd.h"

static void
test_create(void)
{
   int base = unit_count_fds();
   int fd = -1;
   CHECK_OK(util_memfd_create("gpud-test", 8192, &fd));
   CHECK(fd >= 0);
   CHECK(unit_fd_is_cloexec(fd));

   struct stat st;
   CHECK_SYS(fstat(fd, &st));
   CHECK_EQ(st.st_size, 8192);

   int seals = fcntl(fd, F_GET_SEALS);
   CHECK_SYS(seals);
   CHECK_EQ(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);

   /* The seals hold. */
   CHECK(ftruncate(fd, 4096) < 0 && errno == EPERM);
   CHECK(ftruncate(fd, 16384) < 0 && errno == EPERM);
   CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM);

   /* Mappable and shared. */
   uint8_t *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   CHECK(p != MAP_FAILED);
   p[8191] = 0xab;
   CHECK_EQ(pread(fd, &p[0], 1, 8191), 1);
   CHECK_EQ(p[0], 0xab);
   munmap(p, 8192);

   CHECK_OK(util_memfd_check(fd, 0));
   CHECK_OK(util_memfd_check(fd, 8192));
   CHECK_ERR(util_memfd_check(fd, 8193), ERANGE);
   CHECK_ERR(util_memfd_check(fd, UINT64_MAX), ERANGE);

   util_fd_close(&fd);
   CHECK_EQ(fd, -1);

   CHECK_OK(util_memfd_create("empty", 0, &fd));
   CHECK_OK(util_memfd_check(fd, 0));
   CHECK_ERR(util_memfd_check(fd, 1), ERANGE);
   util_fd_close(&fd);

   CHECK_ERR(util_memfd_create("huge", UINT64_MAX, &fd), EFBIG);
   CHECK_EQ(fd, -1);
   CHECK_EQ(unit_count_fds(), base);
}

static void
test_check_rejects(void)
{
   int base = unit_count_fds();

   /* Not a memfd at all. */
   int p[2];
   CHECK_SYS(pipe2(p, O_CLOEXEC));
   CHECK_ERR(util_memfd_check(p[0], 0), EINVAL);
   util_fd_close(&p[0]);
   util_fd_close(&p[1]);

   int sv[2];
   CHECK_SYS(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
   CHECK_ERR(util_memfd_check(sv[0], 0), EINVAL);
   util_fd_close(&sv[0]);
   util_fd_close(&sv[1]);

   int dev = open("/dev/null", O_RDWR | O_CLOEXEC);
   CHECK_SYS(dev);
   CHECK_ERR(util_memfd_check(dev, 0), EINVAL);
   util_fd_close(&dev);

   CHECK_ERR(util_memfd_check(-1, 0), EBADF);

   /* A memfd that cannot be sealed. */
   int fd = memfd_create("unsealable", MFD_CLOEXEC);
   CHECK_SYS(fd);
   CHECK_SYS(ftruncate(fd, 4096));
   CHECK_ERR(util_memfd_check(fd, 4096), EPERM);
   util_fd_close(&fd);

   /* Sealable but not sealed, and sealed against the wrong thing. */
   fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
   CHECK_SYS(fd);
   CHECK_SYS(ftruncate(fd, 4096));
   CHECK_ERR(util_memfd_check(fd, 4096), EPERM);
   CHECK_SYS(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
   CHECK_ERR(util_memfd_check(fd, 4096), EPERM);
   CHECK_SYS(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
   CHECK_OK(util_memfd_check(fd, 4096));
   util_fd_close(&fd);

   /* Sealed against writing: no one could map it writable. */
   int write_seals[] = { F_SEAL_WRITE, F_SEAL_FUTURE_WRITE };
   for (unsigned i = 0; i < 2; i++) {
      fd = memfd_create("write-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      CHECK_SYS(fd);
      CHECK_SYS(ftruncate(fd, 4096));
      CHECK_SYS(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | write_seals[i]));
      CHECK_ERR(util_memfd_check(fd, 4096), EACCES);
      util_fd_close(&fd);
   }

   /* Sealed, but too short. */
   CHECK_OK(util_memfd_create("short", 100, &fd));
   CHECK_ERR(util_memfd_check(fd, 4096), ERANGE);
   util_fd_close(&fd);

   CHECK_EQ(unit_count_fds(), base);
}

static long
minor_faults(void)
{
   struct rusage ru;
   getrusage(RUSAGE_SELF, &ru);
   return ru.ru_minflt;
}

/* One byte into each page, without the sanitizers' checks (whose shadow
 * memory takes page faults of its own). */
__attribute__((no_sanitize("address", "undefined"))) static void
touch_pages(uint8_t *p, size_t size, size_t page)
{
   for (size_t i = 0; i < size; i += page)
      p[i] = (uint8_t)i;
}

/* Pages another mapping made go into a second mapping's page tables at
 * once, so that writing them takes no page faults; a file whose pages do
 * not exist yet gets none made. */
static void
test_prefault(void)
{
   const size_t size = 16u << 20;
   const size_t page = (size_t)sysconf(_SC_PAGESIZE);
   int fd = -1;
   CHECK_OK(util_memfd_create("prefault", size, &fd));
   uint8_t *second = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   CHECK(second != MAP_FAILED);
   /* nothing there yet: nothing made */
   CHECK(!util_map_prefault(second, size));
   struct stat st;
   CHECK_SYS(fstat(fd, &st));
   CHECK_EQ(st.st_blocks, 0);

   /* another mapping (the host driver's) makes every page */
   uint8_t *first = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   CHECK(first != MAP_FAILED);
   memset(first, 0x5a, size);
   CHECK(util_map_prefault(second, size));
   long before = minor_faults();
   touch_pages(second, size, page);
   long taken = minor_faults() - before;
   /* (faults of the test's own stack and heap, a few at most) */
   CHECK(taken < 16);
   CHECK_EQ(first[page], (uint8_t)page);
   munmap(first, size);
   munmap(second, size);
   util_fd_close(&fd);
}

UNIT_MAIN(UNIT_TEST(test_create), UNIT_TEST(test_check_rejects), UNIT_TEST(test_prefault))
