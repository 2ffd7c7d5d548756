/* SPDX-License-Identifier: MIT */
/* util_log: levels, priorities and the sink, from threads. */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "unit_test.h"
#include "util_fd.h"
#include "util_log.h"

/* Points stderr at a memfd; capture_end() restores it and returns what was
 * written (NUL-terminated, to be freed). */
struct capture {
   int saved_stderr;
   int fd;
};

static void
capture_begin(struct capture *c)
{
   fflush(stderr);
   c->saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
   CHECK_SYS(c->saved_stderr);
   c->fd = memfd_create("log", MFD_CLOEXEC);
   CHECK_SYS(c->fd);
   /* Reopened with O_APPEND: threads share one open file description, and
    * without O_APPEND the kernel may not serialise their file offsets. */
   char path[64];
   snprintf(path, sizeof(path), "/proc/self/fd/%d", c->fd);
   int append = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
   CHECK_SYS(append);
   CHECK_SYS(dup2(append, STDERR_FILENO));
   util_fd_close(&append);
}

static char *
capture_end(struct capture *c)
{
   CHECK_SYS(dup2(c->saved_stderr, STDERR_FILENO));
   util_fd_close(&c->saved_stderr);

   struct stat st;
   CHECK_SYS(fstat(c->fd, &st));
   char *buf = malloc((size_t)st.st_size + 1);
   CHECK(buf);
   CHECK_EQ(pread(c->fd, buf, (size_t)st.st_size, 0), st.st_size);
   buf[st.st_size] = '\0';
   util_fd_close(&c->fd);
   return buf;
}

static void
check_output(const char *got, const char *want)
{
   if (strcmp(got, want) != 0)
      unit_fail(__FILE__, __LINE__, "log output\n---\n%s---\nexpected\n---\n%s---", got,
                want);
}

static void
test_default_level(void)
{
   unsetenv("GPUD_LOG_LEVEL");
   struct capture c;
   capture_begin(&c);
   util_err("error %d", 1);
   util_warn("warning");
   util_notice("notice");
   util_info("info %s", "x");
   util_debug("debug dropped");
   util_info("already terminated\n");
   util_info("%s", "");
   char *out = capture_end(&c);
   check_output(out, "<3>error 1\n<4>warning\n<5>notice\n<6>info x\n"
                     "<6>already terminated\n<6>\n");
   free(out);
}

static void
test_errno_preserved(void)
{
   unsetenv("GPUD_LOG_LEVEL");
   struct capture c;
   capture_begin(&c);
   errno = ENOENT;
   util_err("open: %m");
   CHECK_EQ(errno, ENOENT);
   util_debug("dropped");
   CHECK_EQ(errno, ENOENT);
   char *out = capture_end(&c);
   check_output(out, "<3>open: No such file or directory\n");
   free(out);
}

static void
test_set_max_level(void)
{
   unsetenv("GPUD_LOG_LEVEL");
   struct capture c;
   capture_begin(&c);
   util_log_set_max_level(UTIL_LOG_DEBUG);
   util_debug("d1");
   util_log_set_max_level(UTIL_LOG_WARNING);
   util_notice("dropped");
   util_warn("w");
   util_err("e");
   char *out = capture_end(&c);
   check_output(out, "<7>d1\n<4>w\n<3>e\n");
   free(out);
}

static void
test_env_level(void)
{
   setenv("GPUD_LOG_LEVEL", "debug", 1);
   struct capture c;
   capture_begin(&c);
   util_debug("visible");
   char *out = capture_end(&c);
   check_output(out, "<7>visible\n");
   free(out);
}

static void
test_env_level_warning(void)
{
   setenv("GPUD_LOG_LEVEL", "warning", 1);
   struct capture c;
   capture_begin(&c);
   util_info("dropped");
   util_notice("dropped");
   util_warn("kept");
   /* An explicit call wins over the environment. */
   util_log_set_max_level(UTIL_LOG_INFO);
   util_info("kept too");
   char *out = capture_end(&c);
   check_output(out, "<4>kept\n<6>kept too\n");
   free(out);
}

static void
test_env_level_invalid(void)
{
   setenv("GPUD_LOG_LEVEL", "verbose", 1);
   struct capture c;
   capture_begin(&c);
   util_info("info");
   util_debug("dropped");
   char *out = capture_end(&c);
   CHECK(strncmp(out, "<4>GPUD_LOG_LEVEL", 17) == 0);
   CHECK(strstr(out, "\n<6>info\n") != NULL);
   CHECK(strstr(out, "dropped") == NULL);
   free(out);
}

static void
test_long_line(void)
{
   unsetenv("GPUD_LOG_LEVEL");
   enum { LEN = 10000 };
   char *msg = malloc(LEN + 1);
   CHECK(msg);
   memset(msg, 'y', LEN);
   msg[LEN] = '\0';

   struct capture c;
   capture_begin(&c);
   util_info("[%s]", msg);
   char *out = capture_end(&c);
   CHECK_EQ(strlen(out), 3 + 1 + LEN + 1 + 1);
   CHECK(strncmp(out, "<6>[", 4) == 0);
   CHECK(strspn(out + 4, "y") == LEN);
   CHECK(strcmp(out + 4 + LEN, "]\n") == 0);
   free(out);
   free(msg);
}

#define THREADS 8
#define LINES 2000

static void *
log_thread(void *arg)
{
   int id = (int)(intptr_t)arg;
   for (int i = 0; i < LINES; i++)
      util_info("thread %d line %d %s", id, i, "padding padding padding padding");
   return NULL;
}

static void
test_threads_do_not_interleave(void)
{
   unsetenv("GPUD_LOG_LEVEL");
   struct capture c;
   capture_begin(&c);
   pthread_t t[THREADS];
   for (int i = 0; i < THREADS; i++)
      CHECK_EQ(pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i), 0);
   for (int i = 0; i < THREADS; i++)
      CHECK_EQ(pthread_join(t[i], NULL), 0);
   char *out = capture_end(&c);

   int next[THREADS] = {0};
   int lines = 0;
   for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
      int id, n, end = 0;
      CHECK_EQ(sscanf(line, "<6>thread %d line %d padding padding padding padding%n", &id,
                      &n, &end),
               2);
      CHECK_EQ(end, (int)strlen(line));
      CHECK(id >= 0 && id < THREADS);
      CHECK_EQ(n, next[id]); /* each thread's lines in order, none lost */
      next[id]++;
      lines++;
   }
   CHECK_EQ(lines, THREADS * LINES);
   free(out);
}

UNIT_MAIN(UNIT_TEST(test_default_level), UNIT_TEST(test_errno_preserved),
          UNIT_TEST(test_set_max_level), UNIT_TEST(test_env_level),
          UNIT_TEST(test_env_level_warning), UNIT_TEST(test_env_level_invalid),
          UNIT_TEST(test_long_line), UNIT_TEST(test_threads_do_not_interleave))
