/* SPDX-License-Identifier: MIT */
#pragma once

/* Sealed memfds: the shared memory of rings, completion pages and
 * host-visible allocations, made, checked before mapping, and pre-faulted. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Creates a memfd of the given size (MFD_CLOEXEC | MFD_ALLOW_SEALING),
 * sealed with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL so neither side can
 * make a mapping of it fault. */
int util_memfd_create(const char *name, uint64_t size, int *ret_fd);

/* Checks that fd is a memfd sealed against shrinking, not against writing,
 * and at least size bytes long: what a process must know before it maps an
 * fd it was sent (shared and writable).  -EPERM: it may shrink; -EACCES: it
 * is sealed against writing; -ERANGE: too small; else not a memfd. */
int util_memfd_check(int fd, uint64_t size);

/* Maps into this process's page tables, at once, the pages of a shared
 * mapping [addr, addr+length) that already exist in its file (another
 * process made them: a host driver that pinned them), so that the first
 * writes take no page faults.  Allocates nothing: where the sampled pages
 * are not there yet it does nothing.  Returns whether it mapped them. */
bool util_map_prefault(void *addr, size_t length);
