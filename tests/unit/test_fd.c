/* SPDX-License-Identifier: MIT */
/* util_fd: descriptors closed once and marked closed, errno kept; told
 * open or not. */
#include "unit_test.h"
#include "util_fd.h"

static void
test_close(void)
{
   int base = unit_count_fds();
   int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
   CHECK_SYS(fd);
   int number = fd;

   errno = EXDEV;
   util_fd_close(&fd);
   CHECK_EQ(errno, EXDEV);
   CHECK_EQ(fd, -1);
   CHECK(!unit_fd_is_open(number));
   CHECK_EQ(unit_count_fds(), base);

   /* Already closed, NULL: no-ops. */
   util_fd_close(&fd);
   CHECK_EQ(fd, -1);
   util_fd_close(NULL);
   fd = -5;
   util_fd_close(&fd);
   CHECK_EQ(fd, -5);
}

static void
test_move(void)
{
   int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
   CHECK_SYS(fd);
   int number = fd;
   int owner = util_fd_move(&fd);
   CHECK_EQ(fd, -1);
   CHECK_EQ(owner, number);
   util_fd_close(&fd);
   CHECK(unit_fd_is_open(owner));
   util_fd_close(&owner);
   CHECK(!unit_fd_is_open(number));
}

/* What the ICD checks of an fd an application hands it: a closed or
 * negative one is refused before it could fail a whole message. */
static void
test_open(void)
{
   CHECK(!util_fd_open(-1));
   int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
   CHECK_SYS(fd);
   int number = fd;
   CHECK(util_fd_open(fd));
   util_fd_close(&fd);
   CHECK(!util_fd_open(number));
}

UNIT_MAIN(UNIT_TEST(test_close), UNIT_TEST(test_move), UNIT_TEST(test_open))
