/* SPDX-License-Identifier: MIT */
#include "util_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
