/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A tiny test harness: each test is a void function that fails through the
 * CHECK macros (which abort).  unit_main() runs every test in a child
 * process of its own, so a failing or crashing test does not hide the
 * others and fd counts start from a clean slate, then prints
 * "N passed, N failed".  Run one test with `test_foo NAME`.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util_macros.h"

struct unit_test {
   const char *name;
   void (*run)(void);
};

/* clang-format off */
#define UNIT_TEST(fn) {#fn, fn}
/* clang-format on */

static inline void unit_fail(const char *file, int line, const char *fmt, ...)
    UTIL_PRINTF(3, 4) __attribute__((noreturn));

static inline void
unit_fail(const char *file, int line, const char *fmt, ...)
{
   va_list ap;
   fprintf(stderr, "%s:%d: check failed: ", file, line);
   va_start(ap, fmt);
   vfprintf(stderr, fmt, ap);
   va_end(ap);
   fputc('\n', stderr);
   fflush(stderr);
   abort();
}

#define CHECK(cond)                                                                      \
   do {                                                                                  \
      if (!(cond))                                                                       \
         unit_fail(__FILE__, __LINE__, "%s", #cond);                                     \
   } while (0)

#define CHECK_INT(a, op, b)                                                              \
   do {                                                                                  \
      long long unit_a_ = (long long)(a), unit_b_ = (long long)(b);                      \
      if (!(unit_a_ op unit_b_))                                                         \
         unit_fail(__FILE__, __LINE__, "%s %s %s (%lld vs %lld)", #a, #op, #b, unit_a_,  \
                   unit_b_);                                                             \
   } while (0)

#define CHECK_EQ(a, b) CHECK_INT(a, ==, b)

/* For calls that return 0 or a negative errno. */
#define CHECK_OK(expr)                                                                   \
   do {                                                                                  \
      int unit_r_ = (expr);                                                              \
      if (unit_r_ < 0)                                                                   \
         unit_fail(__FILE__, __LINE__, "%s failed: %s", #expr, strerror(-unit_r_));      \
   } while (0)

#define CHECK_ERR(expr, err)                                                             \
   do {                                                                                  \
      int unit_r_ = (expr);                                                              \
      if (unit_r_ != -(err))                                                             \
         unit_fail(__FILE__, __LINE__, "%s returned %d (%s), expected -%s", #expr,       \
                   unit_r_, unit_r_ < 0 ? strerror(-unit_r_) : "success", #err);         \
   } while (0)

/* For libc calls that return -1 and set errno. */
#define CHECK_SYS(expr)                                                                  \
   do {                                                                                  \
      if ((expr) < 0)                                                                    \
         unit_fail(__FILE__, __LINE__, "%s: %s", #expr, strerror(errno));                \
   } while (0)

/* Number of fds open in this process. */
static inline int
unit_count_fds(void)
{
   DIR *d = opendir("/proc/self/fd");
   if (!d)
      unit_fail(__FILE__, __LINE__, "opendir /proc/self/fd: %s", strerror(errno));
   int n = 0;
   struct dirent *e;
   while ((e = readdir(d)))
      if (e->d_name[0] != '.')
         n++;
   closedir(d);
   return n - 1; /* the directory's own fd */
}

static inline bool
unit_fd_is_open(int fd)
{
   return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

static inline bool
unit_fd_is_cloexec(int fd)
{
   int flags = fcntl(fd, F_GETFD);
   return flags >= 0 && (flags & FD_CLOEXEC);
}

static inline int
unit_main(int argc, char **argv, const struct unit_test *tests, size_t n_tests)
{
   unsigned passed = 0, failed = 0;

   for (size_t i = 0; i < n_tests; i++) {
      if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
         continue;

      fflush(stdout);
      fflush(stderr);
      pid_t pid = fork();
      if (pid < 0) {
         perror("fork");
         return 1;
      }
      if (pid == 0) {
         tests[i].run();
         fflush(stdout);
         exit(0);
      }

      int status;
      while (waitpid(pid, &status, 0) < 0) {
         if (errno != EINTR) {
            perror("waitpid");
            return 1;
         }
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
         printf("ok     %s\n", tests[i].name);
         passed++;
      } else {
         if (WIFSIGNALED(status))
            printf("FAILED %s (signal %d)\n", tests[i].name, WTERMSIG(status));
         else
            printf("FAILED %s (exit %d)\n", tests[i].name, WEXITSTATUS(status));
         failed++;
      }
   }

   if (passed + failed == 0) {
      fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(none)");
      return 1;
   }
   printf("%u passed, %u failed\n", passed, failed);
   return failed ? 1 : 0;
}

#define UNIT_MAIN(...)                                                                   \
   int main(int argc, char **argv)                                                       \
   {                                                                                     \
      static const struct unit_test tests[] = {__VA_ARGS__};                             \
      return unit_main(argc, argv, tests, UTIL_ARRAY_SIZE(tests));                       \
   }
