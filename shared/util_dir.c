/* SPDX-License-Identifier: MIT */
/* Path lists and directory helpers (util_dir.h). */
#include "util_dir.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
util_paths_add(char ***paths, size_t *n, const char *path)
{
   char **p = realloc(*paths, sizeof(char *) * (*n + 2));
   if (!p)
      return -ENOMEM;
   *paths = p;
   p[*n] = strdup(path);
   if (!p[*n])
      return -ENOMEM;
   (*n)++;
   p[*n] = NULL;
   return 0;
}

static int
compare_names(const void *a, const void *b)
{
   return strcmp(*(char *const *)a, *(char *const *)b);
}

void
util_paths_add_dir(char ***paths, size_t *n, const char *dir, const char *suffix)
{
   DIR *d = opendir(dir);
   if (!d)
      return;
   size_t first = *n;
   size_t suffix_len = strlen(suffix);
   struct dirent *de;
   while ((de = readdir(d))) {
      size_t len = strlen(de->d_name);
      if (len <= suffix_len || strcmp(de->d_name + len - suffix_len, suffix) != 0)
         continue;
      char path[4096];
      if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
         continue;
      util_paths_add(paths, n, path);
   }
   closedir(d);
   if (*n > first + 1)
      qsort(*paths + first, *n - first, sizeof(char *), compare_names);
}

void
util_paths_free(char **paths)
{
   if (!paths)
      return;
   for (char **p = paths; *p; p++)
      free(*p);
   free(paths);
}

int
util_mkdirs(const char *dir, mode_t parents_mode, mode_t mode)
{
   char *copy = strdup(dir);
   if (!copy)
      return -ENOMEM;
   int r = 0;
   for (char *p = copy + 1; *p && r == 0; p++) {
      if (*p != '/')
         continue;
      *p = '\0';
      if (mkdir(copy, parents_mode) < 0 && errno != EEXIST)
         r = -errno;
      *p = '/';
   }
   if (r == 0 && mkdir(copy, mode) < 0 && errno != EEXIST)
      r = -errno;
   free(copy);
   return r;
}

int
util_write_file(const char *path, const char *tmp, const void *data, size_t size)
{
   int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
   if (fd < 0)
      return -errno;
   int r = 0;
   for (size_t put = 0; put < size && r == 0;) {
      ssize_t n = write(fd, (const char *)data + put, size - put);
      if (n > 0)
         put += (size_t)n;
      else if (n == 0)
         r = -EIO;
      else if (errno != EINTR)
         r = -errno;
   }
   if (close(fd) < 0 && r == 0)
      r = -errno;
   if (r == 0 && rename(tmp, path) < 0)
      r = -errno;
   if (r < 0)
      unlink(tmp);
   return r;
}

void
util_file_name_part(const char *name, char *out, size_t size)
{
   size_t n = 0;
   for (const char *c = name; size && *c && n + 1 < size; c++, n++) {
      bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                   (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
      out[n] = plain && !(n == 0 && *c == '.') ? *c : '_';
   }
   if (size)
      out[n] = '\0';
}

char *
util_gpud_dir(const char *system, const char *xdg_var, const char *home_rel)
{
   char *dir = NULL;
   if (geteuid() == 0)
      return strdup(system);
   const char *xdg = getenv(xdg_var);
   const char *home = getenv("HOME");
   if (xdg && xdg[0] == '/')
      return asprintf(&dir, "%s/gpud", xdg) < 0 ? NULL : dir;
   if (home && home[0] == '/')
      return asprintf(&dir, "%s/%s/gpud", home, home_rel) < 0 ? NULL : dir;
   return NULL;
}
