/* SPDX-License-Identifier: MIT */
/*
 * External memory, semaphores and fences by fd.  Every fd a client sends is
 * checked for its kind (and, for memory, its size and seals) before the
 * host driver sees it; a wrong one fails the call with
 * VK_ERROR_INVALID_EXTERNAL_HANDLE and a log line, and the client carries
 * on.
 *
 * Host-visible memory is a memfd in gpud (the daemon maps it and imports
 * it into the host driver), so an opaque fd of such memory is that memfd,
 * sealed against shrinking: a client of the same daemon imports it by
 * mapping the same pages.  Other memory, semaphores and fences are the host
 * driver's own: their fds go to and come from it unchanged.
 */
#include "gpud_call.h"
#include "gpud_external.h"
#include "gpud_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util_fd.h"
#include "util_memfd.h"
#include "wire_gen.h"

#define DMA_BUF_MAGIC 0x444d4142

static bool
is_sync_file(int fd)
{
   char path[64], target[64];
   snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
   ssize_t n = readlink(path, target, sizeof(target) - 1);
   if (n < 0)
      return false;
   target[n] = '\0';
   return !strcmp(target, "anon_inode:sync_file");
}

static bool
is_dma_buf(int fd)
{
   struct statfs fs;
   return fstatfs(fd, &fs) == 0 && fs.f_type == DMA_BUF_MAGIC;
}

/* Why fd cannot be a host driver's opaque handle, or NULL: files, pipes,
 * sockets and memfds are what a client could forge one from. */
static const char *
not_opaque(int fd)
{
   struct stat st;
   if (fstat(fd, &st) < 0)
      return "not an open file";
   switch (st.st_mode & S_IFMT) {
   case S_IFREG:
      return fcntl(fd, F_GET_SEALS) >= 0 ? "gpud memory of a type the host keeps itself"
                                          : "a regular file";
   case S_IFDIR:
      return "a directory";
   case S_IFIFO:
      return "a pipe";
   case S_IFSOCK:
      return "a socket";
   case S_IFBLK:
      return "a block device";
   case S_IFLNK:
      return "a symbolic link";
   default:
      return NULL; /* a character device or an anonymous inode */
   }
}

static VkResult
refuse(struct gpud_call *call, int *fd, const char *what, const char *why)
{
   gpud_context_log(call->ctx, UTIL_LOG_WARNING, "%s: refused the client's fd: %s", what, why);
   util_fd_close(fd);
   return VK_ERROR_INVALID_EXTERNAL_HANDLE;
}

/* Checks a memory import; the fd is the daemon's (closed when refused). */
VkResult
gpud_external_check_memory_import(struct gpud_call *call, VkImportMemoryFdInfoKHR *import,
                                  bool shared, uint64_t size)
{
   if (import->fd < 0)
      return refuse(call, &import->fd, "vkAllocateMemory", "no fd");
   if (shared) {
      /* gpud's own opaque fd: a memfd that cannot shrink under the mapping */
      if (import->handleType != VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT)
         return refuse(call, &import->fd, "vkAllocateMemory",
                       "host-visible memory is imported from an opaque fd only");
      int r = util_memfd_check(import->fd, size);
      if (r == -ERANGE)
         return refuse(call, &import->fd, "vkAllocateMemory", "memory smaller than the allocation");
      if (r == -EPERM)
         return refuse(call, &import->fd, "vkAllocateMemory", "a memfd that may shrink");
      if (r == -EACCES)
         return refuse(call, &import->fd, "vkAllocateMemory", "a memfd sealed against writing");
      if (r < 0)
         return refuse(call, &import->fd, "vkAllocateMemory", "not gpud memory (a sealed memfd)");
      return VK_SUCCESS;
   }
   const char *why = NULL;
   switch (import->handleType) {
   case VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT:
      why = not_opaque(import->fd);
      break;
   case VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT:
      why = is_dma_buf(import->fd) ? NULL : "not a dma-buf";
      break;
   default:
      why = "a handle type gpud does not carry";
      break;
   }
   return why ? refuse(call, &import->fd, "vkAllocateMemory", why) : VK_SUCCESS;
}

void
gpud_exec_vkGetMemoryFdKHR(struct gpud_call *call, struct wire_args_vkGetMemoryFdKHR *a)
{
   struct gpud_object *mem = call->touched[call->n_touched - 1];
   *a->pFd = -1;
   if (mem->map) {
      /* host-visible: its memfd, if it was made exportable */
      if (mem->fd < 0 ||
          a->pGetFdInfo->handleType != VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT) {
         gpud_context_log(call->ctx, UTIL_LOG_INFO,
                          "vkGetMemoryFdKHR: the memory was not allocated for export as an "
                          "opaque fd");
         a->ret = VK_ERROR_TOO_MANY_OBJECTS;
         return;
      }
      *a->pFd = fcntl(mem->fd, F_DUPFD_CLOEXEC, 3);
      a->ret = *a->pFd >= 0 ? VK_SUCCESS : VK_ERROR_TOO_MANY_OBJECTS;
   } else {
      gpud_gen_exec_vkGetMemoryFdKHR(call, a);
   }
   if (a->ret != VK_SUCCESS)
      *a->pFd = -1;
   else
      mem->exported = true; /* whoever holds the fd holds the memory */
}

void
gpud_exec_vkGetMemoryFdPropertiesKHR(struct gpud_call *call,
                                     struct wire_args_vkGetMemoryFdPropertiesKHR *a)
{
   if (a->handleType != VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT || !is_dma_buf(a->fd)) {
      a->ret = refuse(call, &a->fd, "vkGetMemoryFdPropertiesKHR", "not a dma-buf");
      return;
   }
   gpud_gen_exec_vkGetMemoryFdPropertiesKHR(call, a);
   util_fd_close(&a->fd); /* not the implementation's: only looked at */
   /* host-visible memory is gpud's memfd: a dma-buf cannot become that */
   const struct daemon_host *host = call->ctx->host;
   for (uint32_t i = 0; i < host->memory.memoryTypeCount; i++) {
      if ((host->memory.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
          (host->importable_types & (1u << i)))
         a->pMemoryFdProperties->memoryTypeBits &= ~(1u << i);
   }
}

/* A semaphore's or fence's payload: a sync file (or -1, signalled) or the
 * host's opaque fd. */
static const char *
payload_problem(int fd, bool sync_fd)
{
   if (sync_fd)
      return fd < 0 || is_sync_file(fd) ? NULL : "not a sync file";
   if (fd < 0)
      return "no fd";
   return not_opaque(fd);
}

void
gpud_exec_vkImportSemaphoreFdKHR(struct gpud_call *call,
                                 struct wire_args_vkImportSemaphoreFdKHR *a)
{
   VkImportSemaphoreFdInfoKHR *info = (VkImportSemaphoreFdInfoKHR *)a->pImportSemaphoreFdInfo;
   const char *why = payload_problem(
      info->fd, info->handleType == VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT);
   if (why) {
      a->ret = refuse(call, &info->fd, "vkImportSemaphoreFdKHR", why);
      return;
   }
   gpud_gen_exec_vkImportSemaphoreFdKHR(call, a);
   if (a->ret != VK_SUCCESS || call->dec.fatal)
      util_fd_close(&info->fd); /* the host took it only on success */
   struct gpud_object *sem =
      gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE, (uint64_t)(uintptr_t)info->semaphore);
   if (sem && a->ret == VK_SUCCESS)
      gpud_queue_semaphore_gone(sem, true);
}

void
gpud_exec_vkImportFenceFdKHR(struct gpud_call *call, struct wire_args_vkImportFenceFdKHR *a)
{
   VkImportFenceFdInfoKHR *info = (VkImportFenceFdInfoKHR *)a->pImportFenceFdInfo;
   const char *why =
      payload_problem(info->fd, info->handleType == VK_EXTERNAL_FENCE_HANDLE_TYPE_SYNC_FD_BIT);
   if (why) {
      a->ret = refuse(call, &info->fd, "vkImportFenceFdKHR", why);
      return;
   }
   struct gpud_object *fence =
      gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)info->fence);
   if (fence)
      fence->fence_owed_queue = VK_NULL_HANDLE; /* the payload is the imported one now */
   gpud_gen_exec_vkImportFenceFdKHR(call, a);
   if (a->ret != VK_SUCCESS || call->dec.fatal)
      util_fd_close(&info->fd);
   /* its state is the imported payload's: the ICD asks (it said so) */
   if (fence && a->ret == VK_SUCCESS) {
      fence->fence_external = true;
      atomic_store(&fence->fence_cpu_signaled, false);
      gpud_queue_fence_gone(fence, true);
   }
}

void
gpud_exec_vkGetSemaphoreFdKHR(struct gpud_call *call, struct wire_args_vkGetSemaphoreFdKHR *a)
{
   *a->pFd = -1;
   gpud_gen_exec_vkGetSemaphoreFdKHR(call, a);
   struct gpud_object *sem = gpud_call_named(call, VK_OBJECT_TYPE_SEMAPHORE,
                                             (uint64_t)(uintptr_t)a->pGetFdInfo->semaphore);
   if (sem && a->ret == VK_SUCCESS)
      gpud_queue_semaphore_gone(sem, true);
}

void
gpud_exec_vkGetFenceFdKHR(struct gpud_call *call, struct wire_args_vkGetFenceFdKHR *a)
{
   *a->pFd = -1;
   gpud_gen_exec_vkGetFenceFdKHR(call, a);
   struct gpud_object *fence =
      gpud_call_named(call, VK_OBJECT_TYPE_FENCE, (uint64_t)(uintptr_t)a->pGetFdInfo->fence);
   if (fence && a->ret == VK_SUCCESS)
      gpud_queue_fence_gone(fence, true);
}

/* ---- what can be asked about external memory ------------------------------------ */

/* The memory handle types a client can use through gpud: fds.  A host
 * allocation (VK_EXT_external_memory_host) is an address in the
 * application's process, which gpud does not carry (it uses it itself, for
 * host-visible memory), and the host's answers about it, or about handle
 * types of other platforms, are not the client's: an application that took
 * them would import a host pointer with commands it does not have. */
#define CARRIED_MEMORY_HANDLES                                                                     \
   (VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT | VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT)

static void
carried_memory_only(VkExternalMemoryProperties *p)
{
   p->exportFromImportedHandleTypes &= CARRIED_MEMORY_HANDLES;
   p->compatibleHandleTypes &= CARRIED_MEMORY_HANDLES;
}

void
gpud_exec_vkGetPhysicalDeviceExternalBufferProperties(
   struct gpud_call *call, struct wire_args_vkGetPhysicalDeviceExternalBufferProperties *a)
{
   VkExternalMemoryProperties *p = &a->pExternalBufferProperties->externalMemoryProperties;
   if (!(a->pExternalBufferInfo->handleType & CARRIED_MEMORY_HANDLES)) {
      /* a handle type the implementation does not support: no features */
      memset(p, 0, sizeof(*p));
      return;
   }
   gpud_gen_exec_vkGetPhysicalDeviceExternalBufferProperties(call, a);
   carried_memory_only(p);
}

void
gpud_exec_vkGetPhysicalDeviceImageFormatProperties2(
   struct gpud_call *call, struct wire_args_vkGetPhysicalDeviceImageFormatProperties2 *a)
{
   const VkPhysicalDeviceExternalImageFormatInfo *info = gpud_chain_find(
      a->pImageFormatInfo->pNext, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO);
   if (info && info->handleType && !(info->handleType & CARRIED_MEMORY_HANDLES)) {
      a->ret = VK_ERROR_FORMAT_NOT_SUPPORTED;
      return;
   }
   gpud_gen_exec_vkGetPhysicalDeviceImageFormatProperties2(call, a);
   VkExternalImageFormatProperties *props = gpud_chain_find(
      a->pImageFormatProperties->pNext, VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES);
   if (a->ret == VK_SUCCESS && props)
      carried_memory_only(&props->externalMemoryProperties);
}
