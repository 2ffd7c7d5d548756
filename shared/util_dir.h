/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Path lists: a malloc'ed, NULL-terminated array of malloc'ed paths (the
 * daemons' sockets, the host drivers' manifests).
 */

#include <stddef.h>
#include <sys/types.h>

/* Appends path; 0 or -ENOMEM. */
int util_paths_add(char ***paths, size_t *n, const char *path);
/* Appends DIR/NAME for each entry of dir whose name ends in suffix, sorted
 * by name; a folder that cannot be read adds nothing. */
void util_paths_add_dir(char ***paths, size_t *n, const char *dir, const char *suffix);
void util_paths_free(char **paths);

/*
 * Directories and files.
 */

/* Makes dir and the folders above it that are missing: those with
 * parents_mode, dir itself with mode; 0 (also where it was there) or
 * -errno. */
int util_mkdirs(const char *dir, mode_t parents_mode, mode_t mode);
/* Writes size bytes of data to tmp (0600, no symbolic link followed) and
 * renames it onto path: a reader finds the old file or the new one whole,
 * never part of one.  0 or -errno (tmp is gone then). */
int util_write_file(const char *path, const char *tmp, const void *data, size_t size);
/* Name as a part of a file name: letters, digits, '-', '_' and '.' kept
 * (no '.' first), anything else '_', cut to size - 1 bytes; "" stays "". */
void util_file_name_part(const char *name, char *out, size_t size);
/* gpud's folder of a kind: system (/var/cache/gpud) for root, else
 * $XDG_VAR/gpud, else $HOME/home_rel/gpud (.cache, .local/state); malloc'ed,
 * NULL where there is none. */
char *util_gpud_dir(const char *system, const char *xdg_var, const char *home_rel);
