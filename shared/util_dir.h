/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/*
 * Path lists: a malloc'ed, NULL-terminated array of malloc'ed paths (the
 * daemons' sockets, the host drivers' manifests).
 */

/* Appends path; 0 or -ENOMEM. */
int util_paths_add(char ***paths, size_t *n, const char *path);
/* Appends DIR/NAME for each entry of dir whose name ends in suffix, sorted
 * by name; a folder that cannot be read adds nothing. */
void util_paths_add_dir(char ***paths, size_t *n, const char *dir, const char *suffix);
void util_paths_free(char **paths);
