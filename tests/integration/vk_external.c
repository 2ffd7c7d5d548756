/* SPDX-License-Identifier: MIT */
/*
 * vk_external: external memory, semaphores and fences by fd, between two
 * Vulkan clients (two processes: through gpud, two workers).
 *
 *   share      VK_KHR_external_memory_fd.  Process A allocates host-visible
 *              memory for export as an opaque fd (a plain allocation, then a
 *              dedicated one), fills a buffer in it on the GPU with pattern
 *              P1 and exports an fd (a real fd: fstat works; a second export
 *              is another fd).  It then runs itself as process B (mode
 *              `import`, the fd inherited): B imports the fd, checks P1
 *              through its mapping and through a GPU copy, fills the memory
 *              with P2 on the GPU and exits.  After B, A checks P2 through
 *              its own mapping and through a GPU copy.  B also checks that a
 *              successful import took its fd (the number is closed).  The
 *              buffers move between the two with queue family ownership
 *              transfers to and from VK_QUEUE_FAMILY_EXTERNAL.  Last, A
 *              checks that the memory handle types of extensions the
 *              device does not list (host allocations, dma-bufs) have no
 *              features, for buffers and for images.
 *   forged     Imports of fds that are not memory a Vulkan implementation
 *              exported: a regular file, a pipe, /dev/null, a socket, a
 *              sealed memfd smaller than the allocation, a memfd of the
 *              right size that may shrink, memfds sealed against writing
 *              (gpud and the ICD map memory shared and writable) and,
 *              where the device has the extensions, a pipe as a
 *              semaphore's and a fence's fd (sync or opaque, as in
 *              semaphore).  Each must fail with exactly
 *              VK_ERROR_INVALID_EXTERNAL_HANDLE, leave the fd the
 *              application's (open, the same file), and the device must
 *              work afterwards.  Meant for gpud only: a driver used
 *              directly may take such an fd or crash on it (the NVIDIA
 *              driver answers a regular file with
 *              VK_ERROR_OUT_OF_DEVICE_MEMORY).
 *   semaphore  VK_KHR_external_semaphore_fd and VK_KHR_external_fence_fd:
 *              each as a sync fd where the device exports and imports
 *              those, else as an opaque fd where it does those (the NVIDIA
 *              driver without DRM), else "semaphore: not supported by this
 *              device, skipped" (the same for fence).  A submits a fill of
 *              shared memory (as in share) signalling an exportable
 *              semaphore and fence, exports both without waiting and runs B
 *              (mode `sync-import`): B imports the fence (a sync fd
 *              temporarily, an opaque fd permanently), waits for it and
 *              checks P1 through its mapping; it imports the semaphore
 *              likewise and waits on it in a submit that copies the memory
 *              (checked: P1) and fills it with P2, which A checks after B.
 *              B says whether each import closed its fd (a driver may keep
 *              it; gpud's ICD must close it).
 *
 *   vk_external [--device NAME] share|forged|semaphore
 *
 * Each mode prints "vk_external: MODE: OK: what was checked" lines (B's
 * lines say `import` or `sync-import`); forged prints one line
 * "vk_external: forged: CASE: VK_ERROR_INVALID_EXTERNAL_HANDLE, ..." per
 * case.  Any failure exits with 1 and says what differed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vkt_common.h"

#define PROG "vk_external"

/* Loads a device command or fails. */
#define LOAD(ctx, fn) ((PFN_##fn)vkt_device_proc((ctx), #fn))

/* Not a multiple of the page size, so that allocations are rounded. */
#define BUFFER_SIZE ((VkDeviceSize)(1u << 20) + 3 * 4096 + 64)
#define P1 0xa5c3e10fu
#define P2 0x5a3c1ef0u

static const char *device_name;

/* ---- helpers ------------------------------------------------------------- */

/* Fails unless every word of the n bytes at p is pattern. */
static void
check_words(const void *p, VkDeviceSize n, uint32_t pattern, const char *what)
{
   const uint32_t *w = p;
   uint64_t bad = 0, first = 0;

   for (uint64_t i = 0; i < n / 4; i++) {
      if (w[i] != pattern) {
         if (!bad)
            first = i;
         bad++;
      }
   }
   if (bad)
      vkt_fail("%s: %llu of %llu words are not 0x%08x; the first, word %llu, "
               "is 0x%08x", what, (unsigned long long)bad,
               (unsigned long long)(n / 4), pattern,
               (unsigned long long)first, w[first]);
}

static void
memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
               VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
               VkAccessFlags dst_access)
{
   const VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = src_access,
      .dstAccessMask = dst_access,
   };

   vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &barrier, 0, NULL,
                        0, NULL);
}

/* A queue family ownership transfer of the whole buffer (release or
 * acquire, as the families say). */
static void
ownership_barrier(VkCommandBuffer cmd, VkBuffer buffer, uint32_t src_family,
                  uint32_t dst_family, VkAccessFlags src_access,
                  VkAccessFlags dst_access)
{
   const VkBufferMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
      .srcAccessMask = src_access,
      .dstAccessMask = dst_access,
      .srcQueueFamilyIndex = src_family,
      .dstQueueFamilyIndex = dst_family,
      .buffer = buffer,
      .size = VK_WHOLE_SIZE,
   };

   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 1,
                        &barrier, 0, NULL);
}

static void
release_to_external(const struct vkt_context *ctx, VkCommandBuffer cmd,
                    VkBuffer buffer)
{
   ownership_barrier(cmd, buffer, ctx->queue_family, VK_QUEUE_FAMILY_EXTERNAL,
                     VK_ACCESS_TRANSFER_WRITE_BIT, 0);
}

static void
acquire_from_external(const struct vkt_context *ctx, VkCommandBuffer cmd,
                      VkBuffer buffer)
{
   ownership_barrier(cmd, buffer, VK_QUEUE_FAMILY_EXTERNAL, ctx->queue_family,
                     0, VK_ACCESS_TRANSFER_READ_BIT |
                        VK_ACCESS_TRANSFER_WRITE_BIT);
}

static void
invalidate(const struct vkt_context *ctx, VkDeviceMemory memory)
{
   const VkMappedMemoryRange range = {
      .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
      .memory = memory,
      .size = VK_WHOLE_SIZE,
   };

   VKT_CHECK(vkInvalidateMappedMemoryRanges(ctx->device, 1, &range));
}

/* A buffer for opaque-fd memory, not bound yet. */
static VkBuffer
external_buffer(const struct vkt_context *ctx)
{
   const VkExternalMemoryBufferCreateInfo ext = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
   };
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .pNext = &ext,
      .size = BUFFER_SIZE,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
   };
   VkBuffer buffer;

   VKT_CHECK(vkCreateBuffer(ctx->device, &info, NULL, &buffer));
   return buffer;
}

/* The buffer's requirements; *dedicated says whether the device prefers or
 * requires a dedicated allocation. */
static VkMemoryRequirements
buffer_requirements(const struct vkt_context *ctx, VkBuffer buffer,
                    bool *dedicated)
{
   VkMemoryDedicatedRequirements ded = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS,
   };
   VkMemoryRequirements2 reqs = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2,
      .pNext = &ded,
   };
   const VkBufferMemoryRequirementsInfo2 info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2,
      .buffer = buffer,
   };

   vkGetBufferMemoryRequirements2(ctx->device, &info, &reqs);
   if (dedicated)
      *dedicated = ded.prefersDedicatedAllocation ||
                   ded.requiresDedicatedAllocation;
   return reqs.memoryRequirements;
}

/* The opaque fd's external memory features for our buffers. */
static VkExternalMemoryFeatureFlags
buffer_fd_features(const struct vkt_context *ctx)
{
   const VkPhysicalDeviceExternalBufferInfo info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
      .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
   };
   VkExternalBufferProperties props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES,
   };

   vkGetPhysicalDeviceExternalBufferProperties(ctx->physical_device, &info,
                                               &props);
   const VkExternalMemoryProperties *m = &props.externalMemoryProperties;
   if (!(m->compatibleHandleTypes &
         VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT))
      vkt_fail("opaque fd memory is not compatible with itself "
               "(compatibleHandleTypes 0x%x)", m->compatibleHandleTypes);
   return m->externalMemoryFeatures;
}

/* Handle types of extensions the device does not list are not supported:
 * no features for a buffer, and no image format (libplacebo imports a host
 * pointer where the query says it may, whether or not the extension is
 * there).  Prints what it checked. */
static void
unlisted_handle_types(const struct vkt_context *ctx)
{
   static const struct {
      VkExternalMemoryHandleTypeFlagBits type;
      const char *extension;
   } types[] = {
      {VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, "VK_EXT_external_memory_host"},
      {VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_MAPPED_FOREIGN_MEMORY_BIT_EXT,
       "VK_EXT_external_memory_host"},
      {VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT, "VK_EXT_external_memory_dma_buf"},
   };
   unsigned checked = 0;
   for (size_t i = 0; i < VKT_ARRAY_SIZE(types); i++) {
      if (vkt_device_has_extension(ctx->physical_device, types[i].extension))
         continue;
      const VkPhysicalDeviceExternalBufferInfo info = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
         .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
         .handleType = types[i].type,
      };
      VkExternalBufferProperties props = {
         .sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES,
      };
      vkGetPhysicalDeviceExternalBufferProperties(ctx->physical_device, &info, &props);
      if (props.externalMemoryProperties.externalMemoryFeatures)
         vkt_fail("handle type 0x%x of %s, which the device does not list, has features 0x%x "
                  "for a buffer", types[i].type, types[i].extension,
                  props.externalMemoryProperties.externalMemoryFeatures);
      const VkPhysicalDeviceExternalImageFormatInfo ext = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_IMAGE_FORMAT_INFO,
         .handleType = types[i].type,
      };
      const VkPhysicalDeviceImageFormatInfo2 fmt = {
         .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGE_FORMAT_INFO_2,
         .pNext = &ext,
         .format = VK_FORMAT_R8G8B8A8_UNORM,
         .type = VK_IMAGE_TYPE_2D,
         .tiling = VK_IMAGE_TILING_LINEAR,
         .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
      };
      VkExternalImageFormatProperties ext_props = {
         .sType = VK_STRUCTURE_TYPE_EXTERNAL_IMAGE_FORMAT_PROPERTIES,
      };
      VkImageFormatProperties2 fmt_props = {
         .sType = VK_STRUCTURE_TYPE_IMAGE_FORMAT_PROPERTIES_2,
         .pNext = &ext_props,
      };
      VkResult r = vkGetPhysicalDeviceImageFormatProperties2(ctx->physical_device, &fmt,
                                                             &fmt_props);
      if (r == VK_SUCCESS && ext_props.externalMemoryProperties.externalMemoryFeatures)
         vkt_fail("handle type 0x%x of %s, which the device does not list, has features 0x%x "
                  "for an image", types[i].type, types[i].extension,
                  ext_props.externalMemoryProperties.externalMemoryFeatures);
      checked++;
   }
   printf(PROG ": share: handle types: OK: %u of extensions the device does not list have "
          "no features\n", checked);
}

/* A host-visible memory type for the requirements, coherent preferred. */
static uint32_t
host_visible_type(const struct vkt_context *ctx,
                  const VkMemoryRequirements *reqs)
{
   uint32_t type = vkt_memory_type(ctx, reqs->memoryTypeBits,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);

   if (type == UINT32_MAX)
      vkt_fail("no host-visible memory type for an external buffer (type "
               "bits 0x%x)", reqs->memoryTypeBits);
   return type;
}

/* Copies `src` into the host-visible readback buffer on the GPU (src is
 * acquired from the external family first when acquire is set) and checks
 * every word. */
static void
gpu_check(const struct vkt_context *ctx, VkBuffer src, bool acquire,
          struct vkt_buffer *readback, uint32_t pattern, const char *what)
{
   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   const VkBufferCopy region = { 0, 0, BUFFER_SIZE };

   memset(readback->map, 0, BUFFER_SIZE);
   vkt_buffer_flush(ctx, readback);
   if (acquire)
      acquire_from_external(ctx, cmd, src);
   vkCmdCopyBuffer(cmd, src, readback->buffer, 1, &region);
   memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
   vkt_cmd_submit_wait(ctx, cmd);
   vkt_buffer_invalidate(ctx, readback);
   check_words(readback->map, BUFFER_SIZE, pattern, what);
}

/* Fails unless fd is an open fd. */
static void
check_open(int fd, const char *what)
{
   if (fcntl(fd, F_GETFD) < 0)
      vkt_fail("%s: fd %d is not open: %s", what, fd, strerror(errno));
}

/* Fails unless fd is closed (F_GETFD fails with EBADF). */
static void
check_closed(int fd, const char *what)
{
   if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
      vkt_fail("%s: fd %d is still open: a successful import owns the fd",
               what, fd);
}

/* What a successful semaphore or fence import did with fd: gpud's ICD
 * closes it; a driver used directly may keep it (the implementation owns
 * it either way), so this is reported, and the harness checks it through
 * gpud. */
static const char *
import_fd_fate(int fd)
{
   if (fd < 0)
      return "no fd: already signalled";
   if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
      return "the fd closed by the import";
   return "the fd kept open by the implementation";
}

/* Lets the fd pass to a child across exec. */
static void
inheritable(int fd)
{
   int flags;

   if (fd < 0)
      return;
   flags = fcntl(fd, F_GETFD);
   if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
      vkt_fail("fcntl(%d): %s", fd, strerror(errno));
}

/* Runs this program with args (NULL-terminated, after --device) and waits;
 * fails unless it exits 0. */
static void
run_child(const char *what, const char *const *args)
{
   const char *argv[32];
   unsigned n = 0;

   argv[n++] = PROG;
   if (device_name) {
      argv[n++] = "--device";
      argv[n++] = device_name;
   }
   for (; *args && n + 1 < VKT_ARRAY_SIZE(argv); args++)
      argv[n++] = *args;
   argv[n] = NULL;

   fflush(stdout);
   fflush(stderr);
   pid_t pid = fork();
   if (pid < 0)
      vkt_fail("fork: %s", strerror(errno));
   if (pid == 0) {
      execv("/proc/self/exe", (char *const *)argv);
      _exit(127);
   }
   int status;
   while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR)
         vkt_fail("waitpid: %s", strerror(errno));
   }
   if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (WIFSIGNALED(status))
         vkt_fail("%s (pid %d) was killed by signal %d", what, (int)pid,
                  WTERMSIG(status));
      vkt_fail("%s (pid %d) exited with status %d", what, (int)pid,
               WEXITSTATUS(status));
   }
}

/* Numbers as arguments for a child: from a ring of buffers, enough for one
 * child's command line. */
static char *
fmt_buffer(void)
{
   static char bufs[8][24];
   static unsigned next;
   return bufs[next++ % VKT_ARRAY_SIZE(bufs)];
}

static const char *
fmt_u64(uint64_t v)
{
   char *s = fmt_buffer();
   snprintf(s, 24, "%llu", (unsigned long long)v);
   return s;
}

static const char *
fmt_int(int v)
{
   char *s = fmt_buffer();
   snprintf(s, 24, "%d", v);
   return s;
}

/* ---- exportable memory (process A) --------------------------------------- */

struct shared {
   VkBuffer buffer;
   VkDeviceMemory memory;
   VkDeviceSize size;   /* allocationSize */
   uint32_t type;
   bool dedicated;
   void *map;
};

static void
shared_create(const struct vkt_context *ctx, bool dedicated,
              struct shared *s)
{
   memset(s, 0, sizeof(*s));
   s->buffer = external_buffer(ctx);
   VkMemoryRequirements reqs = buffer_requirements(ctx, s->buffer, NULL);
   s->type = host_visible_type(ctx, &reqs);
   s->size = reqs.size;
   s->dedicated = dedicated;

   const VkMemoryDedicatedAllocateInfo ded = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
      .buffer = s->buffer,
   };
   const VkExportMemoryAllocateInfo export = {
      .sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
      .pNext = dedicated ? &ded : NULL,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
   };
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &export,
      .allocationSize = s->size,
      .memoryTypeIndex = s->type,
   };
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &s->memory));
   VKT_CHECK(vkBindBufferMemory(ctx->device, s->buffer, s->memory, 0));
   VKT_CHECK(vkMapMemory(ctx->device, s->memory, 0, VK_WHOLE_SIZE, 0,
                         &s->map));
   memset(s->map, 0, BUFFER_SIZE);
   const VkMappedMemoryRange range = {
      .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
      .memory = s->memory,
      .size = VK_WHOLE_SIZE,
   };
   VKT_CHECK(vkFlushMappedMemoryRanges(ctx->device, 1, &range));
}

static void
shared_destroy(const struct vkt_context *ctx, struct shared *s)
{
   vkUnmapMemory(ctx->device, s->memory);
   vkDestroyBuffer(ctx->device, s->buffer, NULL);
   vkFreeMemory(ctx->device, s->memory, NULL);
}

/* Records the fill of the shared buffer with P1, visible to the host, and
 * its release to the external family. */
static void
record_fill_p1(const struct vkt_context *ctx, VkCommandBuffer cmd,
               const struct shared *s)
{
   vkCmdFillBuffer(cmd, s->buffer, 0, BUFFER_SIZE, P1);
   memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
   release_to_external(ctx, cmd, s->buffer);
}

static int
export_fd(const struct vkt_context *ctx, const struct shared *s)
{
   PFN_vkGetMemoryFdKHR get_fd = LOAD(ctx, vkGetMemoryFdKHR);
   const VkMemoryGetFdInfoKHR info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
      .memory = s->memory,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
   };
   int fd = -1;

   VKT_CHECK(get_fd(ctx->device, &info, &fd));
   if (fd < 0)
      vkt_fail("vkGetMemoryFdKHR succeeded with fd %d", fd);
   return fd;
}

/* A's checks after B: P2 through A's mapping and on A's device. */
static void
check_after_child(const struct vkt_context *ctx, const struct shared *s,
                  struct vkt_buffer *readback, const char *what)
{
   char msg[128];

   invalidate(ctx, s->memory);
   snprintf(msg, sizeof(msg), "%s: A's mapping after B", what);
   check_words(s->map, BUFFER_SIZE, P2, msg);
   snprintf(msg, sizeof(msg), "%s: A's GPU copy after B", what);
   gpu_check(ctx, s->buffer, true, readback, P2, msg);
}

/* ---- share --------------------------------------------------------------- */

static const char *const memory_exts[] = { "VK_KHR_external_memory_fd" };

static void
share_round(const struct vkt_context *ctx, bool dedicated,
            struct vkt_buffer *readback)
{
   const char *what = dedicated ? "share: dedicated" : "share: plain";
   struct shared s;
   char msg[128];

   vkt_set_prog(PROG ": share");
   shared_create(ctx, dedicated, &s);

   VkCommandBuffer cmd = vkt_cmd_begin(ctx);
   record_fill_p1(ctx, cmd, &s);
   vkt_cmd_submit_wait(ctx, cmd);
   invalidate(ctx, s.memory);
   snprintf(msg, sizeof(msg), "%s: A's mapping before export", what);
   check_words(s.map, BUFFER_SIZE, P1, msg);

   int fd = export_fd(ctx, &s);
   struct stat st;
   if (fstat(fd, &st) < 0)
      vkt_fail("%s: fstat of the exported fd %d: %s", what, fd,
               strerror(errno));
   /* each export is another fd of the same memory */
   int fd2 = export_fd(ctx, &s);
   struct stat st2;
   if (fd2 == fd || fstat(fd2, &st2) < 0 || st2.st_dev != st.st_dev ||
       st2.st_ino != st.st_ino)
      vkt_fail("%s: a second vkGetMemoryFdKHR gave fd %d, not another fd of "
               "the same file as fd %d", what, fd2, fd);
   close(fd2);

   inheritable(fd);
   const char *args[] = {
      "import", "--fd", fmt_int(fd), "--size", fmt_u64(s.size),
      "--type", fmt_int((int)s.type), dedicated ? "--dedicated" : NULL, NULL,
   };
   run_child("the importing process", args);

   /* A's fd is A's still: B's import took only B's copy */
   if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino)
      vkt_fail("%s: A's exported fd %d changed while B ran", what, fd);
   close(fd);
   check_after_child(ctx, &s, readback, what);
   shared_destroy(ctx, &s);

   vkt_set_prog(PROG);
   printf(PROG ": %s: OK: %llu bytes of memory type %u exported as fd %d "
          "(fstat: mode 0%o, %lld bytes; a second export another fd of the "
          "same file), filled with 0x%08x by A; B imported it and filled it "
          "with 0x%08x; A's mapping and A's GPU copy read 0x%08x in all "
          "%llu words\n", what, (unsigned long long)s.size, s.type, fd,
          (unsigned)(st.st_mode & 07777), (long long)st.st_size, P1, P2, P2,
          (unsigned long long)(BUFFER_SIZE / 4));
}

static int
mode_share(void)
{
   struct vkt_context ctx;
   struct vkt_buffer readback;

   vkt_context_init_ext(&ctx, PROG ": share", device_name, 0, memory_exts,
                        VKT_ARRAY_SIZE(memory_exts), NULL);
   VkExternalMemoryFeatureFlags f = buffer_fd_features(&ctx);
   if (!(f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) ||
       !(f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT))
      vkt_fail("opaque fd memory for buffers is not exportable and "
               "importable (features 0x%x)", f);
   vkt_buffer_create(&ctx, BUFFER_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &readback);
   if (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT)
      printf(PROG ": share: plain: skipped, the device exports opaque fd "
             "memory from dedicated allocations only\n");
   else
      share_round(&ctx, false, &readback);
   share_round(&ctx, true, &readback);
   vkt_buffer_destroy(&ctx, &readback);
   unlisted_handle_types(&ctx);
   printf(PROG ": share: OK: on '%s'\n", ctx.props.deviceName);
   vkt_context_finish(&ctx);
   return 0;
}

/* ---- import (process B of share) ----------------------------------------- */

struct imported {
   VkBuffer buffer;
   VkDeviceMemory memory;
   void *map;
};

/* Imports fd (its size and type as A allocated it) for a buffer of our
 * own; checks that the import took the fd. */
static void
import_memory(const struct vkt_context *ctx, int fd, VkDeviceSize size,
              uint32_t type, bool dedicated, struct imported *m,
              const char *what)
{
   check_open(fd, what);
   m->buffer = external_buffer(ctx);
   VkMemoryRequirements reqs = buffer_requirements(ctx, m->buffer, NULL);
   if (!(reqs.memoryTypeBits & (1u << type)) || reqs.size > size)
      vkt_fail("%s: the buffer needs %llu bytes of types 0x%x, A allocated "
               "%llu bytes of type %u", what, (unsigned long long)reqs.size,
               reqs.memoryTypeBits, (unsigned long long)size, type);

   const VkMemoryDedicatedAllocateInfo ded = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
      .buffer = m->buffer,
   };
   const VkImportMemoryFdInfoKHR import = {
      .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
      .pNext = dedicated ? &ded : NULL,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
      .fd = fd,
   };
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &import,
      .allocationSize = size,
      .memoryTypeIndex = type,
   };
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &m->memory));
   check_closed(fd, what);
   VKT_CHECK(vkBindBufferMemory(ctx->device, m->buffer, m->memory, 0));
   VKT_CHECK(vkMapMemory(ctx->device, m->memory, 0, VK_WHOLE_SIZE, 0,
                         &m->map));
}

static void
imported_destroy(const struct vkt_context *ctx, struct imported *m)
{
   vkUnmapMemory(ctx->device, m->memory);
   vkDestroyBuffer(ctx->device, m->buffer, NULL);
   vkFreeMemory(ctx->device, m->memory, NULL);
}

/* Records B's work on the imported buffer: acquire, copy into the readback
 * buffer, fill with P2, make both visible to the host, release. */
static void
record_copy_fill_p2(const struct vkt_context *ctx, VkCommandBuffer cmd,
                    const struct imported *m, struct vkt_buffer *readback)
{
   const VkBufferCopy region = { 0, 0, BUFFER_SIZE };

   acquire_from_external(ctx, cmd, m->buffer);
   vkCmdCopyBuffer(cmd, m->buffer, readback->buffer, 1, &region);
   /* the fill after the copy's reads */
   memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT);
   vkCmdFillBuffer(cmd, m->buffer, 0, BUFFER_SIZE, P2);
   memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
   release_to_external(ctx, cmd, m->buffer);
}

static int
mode_import(int fd, VkDeviceSize size, uint32_t type, bool dedicated)
{
   const char *what = dedicated ? "import: dedicated" : "import: plain";
   struct vkt_context ctx;
   struct vkt_buffer readback;
   struct imported m;
   char msg[128];

   vkt_context_init_ext(&ctx, PROG ": import", device_name, 0, memory_exts,
                        VKT_ARRAY_SIZE(memory_exts), NULL);
   import_memory(&ctx, fd, size, type, dedicated, &m, what);

   invalidate(&ctx, m.memory);
   snprintf(msg, sizeof(msg), "%s: B's mapping of the imported memory", what);
   check_words(m.map, BUFFER_SIZE, P1, msg);

   vkt_buffer_create(&ctx, BUFFER_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &readback);
   memset(readback.map, 0, BUFFER_SIZE);
   vkt_buffer_flush(&ctx, &readback);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   record_copy_fill_p2(&ctx, cmd, &m, &readback);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &readback);
   snprintf(msg, sizeof(msg), "%s: B's GPU copy of the imported memory", what);
   check_words(readback.map, BUFFER_SIZE, P1, msg);
   invalidate(&ctx, m.memory);
   snprintf(msg, sizeof(msg), "%s: B's mapping after B's fill", what);
   check_words(m.map, BUFFER_SIZE, P2, msg);

   vkt_buffer_destroy(&ctx, &readback);
   imported_destroy(&ctx, &m);
   printf(PROG ": %s: OK: fd %d imported (%llu bytes, type %u%s) and closed "
          "by the import; B's mapping and B's GPU copy read 0x%08x in all "
          "%llu words; filled with 0x%08x on B's GPU\n", what, fd,
          (unsigned long long)size, type, dedicated ? ", dedicated" : "", P1,
          (unsigned long long)(BUFFER_SIZE / 4), P2);
   vkt_context_finish(&ctx);
   return 0;
}

/* ---- forged -------------------------------------------------------------- */

struct forged_ctx {
   const struct vkt_context *ctx;
   VkDeviceSize size;
   uint32_t type;
   unsigned refused;
};

/* An import of fd must fail with VK_ERROR_INVALID_EXTERNAL_HANDLE and leave
 * the fd the application's: open, and the same file. */
static void
check_refused(struct forged_ctx *f, const char *what, int fd, VkResult r)
{
   struct stat after;

   if (r != VK_ERROR_INVALID_EXTERNAL_HANDLE)
      vkt_fail("forged: %s: the import returned %s, expected "
               "VK_ERROR_INVALID_EXTERNAL_HANDLE", what, vkt_result_name(r));
   if (fstat(fd, &after) < 0)
      vkt_fail("forged: %s: the failed import closed the application's fd "
               "%d (%s): it must stay the application's", what, fd,
               strerror(errno));
   f->refused++;
}

static void
forged_memory(struct forged_ctx *f, const char *what, int fd)
{
   struct stat before, after;

   if (fd < 0 || fstat(fd, &before) < 0)
      vkt_fail("forged: %s: making the fd failed: %s", what, strerror(errno));
   const VkImportMemoryFdInfoKHR import = {
      .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
      .fd = fd,
   };
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &import,
      .allocationSize = f->size,
      .memoryTypeIndex = f->type,
   };
   VkDeviceMemory memory = VK_NULL_HANDLE;
   VkResult r = vkAllocateMemory(f->ctx->device, &alloc, NULL, &memory);
   if (r == VK_SUCCESS)
      vkFreeMemory(f->ctx->device, memory, NULL);
   check_refused(f, what, fd, r);
   if (fstat(fd, &after) < 0 || after.st_dev != before.st_dev ||
       after.st_ino != before.st_ino)
      vkt_fail("forged: %s: fd %d is no longer the application's file",
               what, fd);
   close(fd);
   printf(PROG ": forged: %s: VK_ERROR_INVALID_EXTERNAL_HANDLE, the fd still "
          "the application's\n", what);
}

/* A sealable memfd of size bytes with the given seals. */
static int
memfd(const char *name, VkDeviceSize size, int seals)
{
   int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

   if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
       (seals && fcntl(fd, F_ADD_SEALS, seals) < 0))
      vkt_fail("memfd %s: %s", name, strerror(errno));
   return fd;
}

/* How a semaphore or fence crosses between processes: a sync fd where the
 * device exports and imports one, else its opaque fd, else not at all. */
enum sync_kind { SYNC_NONE, SYNC_SYNC_FD, SYNC_OPAQUE_FD };

static const char *
sync_kind_name(enum sync_kind k)
{
   return k == SYNC_SYNC_FD ? "sync fd" : k == SYNC_OPAQUE_FD ? "opaque fd"
                                                            : "none";
}

static enum sync_kind
parse_sync_kind(const char *opt, const char *value)
{
   if (value && !strcmp(value, "sync"))
      return SYNC_SYNC_FD;
   if (value && !strcmp(value, "opaque"))
      return SYNC_OPAQUE_FD;
   vkt_fail("option %s: '%s' is neither sync nor opaque", opt,
            value ? value : "");
}

static VkExternalSemaphoreHandleTypeFlagBits
semaphore_handle(enum sync_kind k)
{
   return k == SYNC_SYNC_FD ? VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT
                            : VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
}

static VkExternalFenceHandleTypeFlagBits
fence_handle(enum sync_kind k)
{
   return k == SYNC_SYNC_FD ? VK_EXTERNAL_FENCE_HANDLE_TYPE_SYNC_FD_BIT
                            : VK_EXTERNAL_FENCE_HANDLE_TYPE_OPAQUE_FD_BIT;
}

static bool
semaphore_handle_supported(VkPhysicalDevice pdev, enum sync_kind k)
{
   const VkPhysicalDeviceExternalSemaphoreInfo info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
      .handleType = semaphore_handle(k),
   };
   VkExternalSemaphoreProperties props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES,
   };
   const VkExternalSemaphoreFeatureFlags want =
      VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT |
      VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;

   vkGetPhysicalDeviceExternalSemaphoreProperties(pdev, &info, &props);
   return (props.externalSemaphoreFeatures & want) == want &&
          (props.compatibleHandleTypes & info.handleType);
}

static bool
fence_handle_supported(VkPhysicalDevice pdev, enum sync_kind k)
{
   const VkPhysicalDeviceExternalFenceInfo info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_FENCE_INFO,
      .handleType = fence_handle(k),
   };
   VkExternalFenceProperties props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_FENCE_PROPERTIES,
   };
   const VkExternalFenceFeatureFlags want =
      VK_EXTERNAL_FENCE_FEATURE_EXPORTABLE_BIT |
      VK_EXTERNAL_FENCE_FEATURE_IMPORTABLE_BIT;

   vkGetPhysicalDeviceExternalFenceProperties(pdev, &info, &props);
   return (props.externalFenceFeatures & want) == want &&
          (props.compatibleHandleTypes & info.handleType);
}

/* How the device can pass semaphores and fences. */
static void
sync_support(enum sync_kind *sem, enum sync_kind *fence)
{
   VkInstance instance = vkt_instance_create(PROG);
   VkPhysicalDevice pdev = vkt_physical_device_pick(instance, device_name);

   *sem = *fence = SYNC_NONE;
   if (vkt_device_has_extension(pdev, "VK_KHR_external_semaphore_fd")) {
      if (semaphore_handle_supported(pdev, SYNC_SYNC_FD))
         *sem = SYNC_SYNC_FD;
      else if (semaphore_handle_supported(pdev, SYNC_OPAQUE_FD))
         *sem = SYNC_OPAQUE_FD;
   }
   if (vkt_device_has_extension(pdev, "VK_KHR_external_fence_fd")) {
      if (fence_handle_supported(pdev, SYNC_SYNC_FD))
         *fence = SYNC_SYNC_FD;
      else if (fence_handle_supported(pdev, SYNC_OPAQUE_FD))
         *fence = SYNC_OPAQUE_FD;
   }
   vkDestroyInstance(instance, NULL);
}

/* The device extensions a semaphore mode needs. */
static uint32_t
sync_exts(const char **exts, enum sync_kind sem, enum sync_kind fence)
{
   uint32_t n = 0;

   exts[n++] = "VK_KHR_external_memory_fd";
   if (sem != SYNC_NONE)
      exts[n++] = "VK_KHR_external_semaphore_fd";
   if (fence != SYNC_NONE)
      exts[n++] = "VK_KHR_external_fence_fd";
   return n;
}

static int
pipe_read_end(void)
{
   int p[2];

   if (pipe2(p, O_CLOEXEC) < 0)
      vkt_fail("pipe: %s", strerror(errno));
   close(p[1]);
   return p[0];
}

static int
mode_forged(void)
{
   enum sync_kind sem, fence;
   const char *exts[3];

   sync_support(&sem, &fence);
   uint32_t n_exts = sync_exts(exts, sem, fence);

   struct vkt_context ctx;
   vkt_context_init_ext(&ctx, PROG ": forged", device_name, 0, exts, n_exts,
                        NULL);
   VkBuffer buffer = external_buffer(&ctx);
   VkMemoryRequirements reqs = buffer_requirements(&ctx, buffer, NULL);
   struct forged_ctx f = {
      .ctx = &ctx,
      .size = reqs.size,
      .type = host_visible_type(&ctx, &reqs),
   };
   /* at least a page more than the allocation: rounding cannot hide it */
   const VkDeviceSize big = (reqs.size + 2 * 65536) & ~(VkDeviceSize)65535;

   /* a regular file of the right size, and larger */
   char path[] = "vk_external-forged-XXXXXX";
   int fd = mkstemp(path);
   if (fd < 0 || unlink(path) < 0 || ftruncate(fd, (off_t)big) < 0)
      vkt_fail("forged: regular file: %s", strerror(errno));
   forged_memory(&f, "regular file", fd);
   forged_memory(&f, "pipe", pipe_read_end());
   forged_memory(&f, "/dev/null", open("/dev/null", O_RDWR | O_CLOEXEC));
   int sv[2];
   if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
      vkt_fail("socketpair: %s", strerror(errno));
   close(sv[1]);
   forged_memory(&f, "socket", sv[0]);
   forged_memory(&f, "memfd too small (sealed)",
                 memfd("vk_external-small", 4096,
                       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
   forged_memory(&f, "memfd that may shrink", memfd("vk_external-unsealed",
                                                    big, 0));
   /* sealed against writing: neither gpud nor the ICD could map it */
   forged_memory(&f, "memfd sealed against writing",
                 memfd("vk_external-write-sealed", big,
                       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE));
   forged_memory(&f, "memfd sealed against future writes",
                 memfd("vk_external-future-write-sealed", big,
                       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE));

   /* a pipe as a semaphore's and a fence's payload, the way the device
    * passes them */
   char what[64];
   if (sem != SYNC_NONE) {
      VkSemaphore sm;
      const VkSemaphoreCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      };
      VKT_CHECK(vkCreateSemaphore(ctx.device, &info, NULL, &sm));
      int pfd = pipe_read_end();
      const VkImportSemaphoreFdInfoKHR import = {
         .sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
         .semaphore = sm,
         .flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
         .handleType = semaphore_handle(sem),
         .fd = pfd,
      };
      snprintf(what, sizeof(what), "semaphore %s: pipe", sync_kind_name(sem));
      check_refused(&f, what, pfd,
                    LOAD(&ctx, vkImportSemaphoreFdKHR)(ctx.device, &import));
      close(pfd);
      vkDestroySemaphore(ctx.device, sm, NULL);
      printf(PROG ": forged: %s: VK_ERROR_INVALID_EXTERNAL_HANDLE, the fd "
             "still the application's\n", what);
   }
   if (fence != SYNC_NONE) {
      VkFence fe;
      const VkFenceCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
      };
      VKT_CHECK(vkCreateFence(ctx.device, &info, NULL, &fe));
      int pfd = pipe_read_end();
      const VkImportFenceFdInfoKHR import = {
         .sType = VK_STRUCTURE_TYPE_IMPORT_FENCE_FD_INFO_KHR,
         .fence = fe,
         .flags = VK_FENCE_IMPORT_TEMPORARY_BIT,
         .handleType = fence_handle(fence),
         .fd = pfd,
      };
      snprintf(what, sizeof(what), "fence %s: pipe", sync_kind_name(fence));
      check_refused(&f, what, pfd,
                    LOAD(&ctx, vkImportFenceFdKHR)(ctx.device, &import));
      close(pfd);
      vkDestroyFence(ctx.device, fe, NULL);
      printf(PROG ": forged: %s: VK_ERROR_INVALID_EXTERNAL_HANDLE, the fd "
             "still the application's\n", what);
   }

   /* the device works: a fill read back */
   struct vkt_buffer buf;
   vkt_buffer_create(&ctx, BUFFER_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &buf);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdFillBuffer(cmd, buf.buffer, 0, BUFFER_SIZE, P1);
   memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &buf);
   check_words(buf.map, BUFFER_SIZE, P1, "forged: a fill after the refusals");
   vkt_buffer_destroy(&ctx, &buf);
   vkDestroyBuffer(ctx.device, buffer, NULL);

   printf(PROG ": forged: OK: %u forged fds refused with "
          "VK_ERROR_INVALID_EXTERNAL_HANDLE and left to the application; "
          "a fill of %llu words read back 0x%08x after them\n", f.refused,
          (unsigned long long)(BUFFER_SIZE / 4), P1);
   vkt_context_finish(&ctx);
   return 0;
}

/* ---- semaphore ----------------------------------------------------------- */

static int
mode_semaphore(void)
{
   enum sync_kind sem, fence;
   const char *exts[3];

   sync_support(&sem, &fence);
   if (sem == SYNC_NONE)
      printf(PROG ": semaphore: not supported by this device, skipped\n");
   if (fence == SYNC_NONE)
      printf(PROG ": fence: not supported by this device, skipped\n");
   if (sem == SYNC_NONE && fence == SYNC_NONE)
      return 0;
   uint32_t n_exts = sync_exts(exts, sem, fence);

   struct vkt_context ctx;
   struct vkt_buffer readback;
   struct shared s;
   vkt_context_init_ext(&ctx, PROG ": semaphore", device_name, 0, exts,
                        n_exts, NULL);
   VkExternalMemoryFeatureFlags f = buffer_fd_features(&ctx);
   shared_create(&ctx, (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT),
                 &s);
   vkt_buffer_create(&ctx, BUFFER_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &readback);

   /* an exportable semaphore and fence */
   const VkExportSemaphoreCreateInfo sem_export = {
      .sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
      .handleTypes = semaphore_handle(sem),
   };
   const VkSemaphoreCreateInfo sem_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = &sem_export,
   };
   const VkExportFenceCreateInfo fence_export = {
      .sType = VK_STRUCTURE_TYPE_EXPORT_FENCE_CREATE_INFO,
      .handleTypes = fence_handle(fence),
   };
   const VkFenceCreateInfo fence_info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
      .pNext = fence != SYNC_NONE ? &fence_export : NULL,
   };
   VkSemaphore semaphore = VK_NULL_HANDLE;
   VkFence submit_fence;
   if (sem != SYNC_NONE)
      VKT_CHECK(vkCreateSemaphore(ctx.device, &sem_info, NULL, &semaphore));
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &submit_fence));

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   record_fill_p1(&ctx, cmd, &s);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
      .signalSemaphoreCount = sem != SYNC_NONE ? 1 : 0,
      .pSignalSemaphores = &semaphore,
   };
   VKT_CHECK(vkQueueSubmit(ctx.queue, 1, &submit, submit_fence));

   /* exported at once, the fill perhaps still running: B must wait (a
    * sync fd is the pending signal's, so it comes after the submit) */
   int sem_fd = -1, fence_fd = -1;
   if (sem != SYNC_NONE) {
      const VkSemaphoreGetFdInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
         .semaphore = semaphore,
         .handleType = semaphore_handle(sem),
      };
      VKT_CHECK(LOAD(&ctx, vkGetSemaphoreFdKHR)(ctx.device, &info, &sem_fd));
      if (sem_fd < 0 && sem == SYNC_OPAQUE_FD)
         vkt_fail("semaphore: vkGetSemaphoreFdKHR gave fd %d", sem_fd);
   }
   if (fence != SYNC_NONE) {
      const VkFenceGetFdInfoKHR info = {
         .sType = VK_STRUCTURE_TYPE_FENCE_GET_FD_INFO_KHR,
         .fence = submit_fence,
         .handleType = fence_handle(fence),
      };
      VKT_CHECK(LOAD(&ctx, vkGetFenceFdKHR)(ctx.device, &info, &fence_fd));
      if (fence_fd < 0 && fence == SYNC_OPAQUE_FD)
         vkt_fail("semaphore: vkGetFenceFdKHR gave fd %d", fence_fd);
   }
   int mem_fd = export_fd(&ctx, &s);
   struct stat st;
   if ((sem_fd >= 0 && fstat(sem_fd, &st) < 0) ||
       (fence_fd >= 0 && fstat(fence_fd, &st) < 0))
      vkt_fail("semaphore: an exported fd is not an open fd: %s",
               strerror(errno));
   inheritable(mem_fd);
   inheritable(sem_fd);
   inheritable(fence_fd);
   const char *args[] = {
      "sync-import", "--fd", fmt_int(mem_fd), "--size", fmt_u64(s.size),
      "--type", fmt_int((int)s.type),
      "--semaphore-fd", sem != SYNC_NONE ? fmt_int(sem_fd) : "none",
      "--semaphore-kind", sem == SYNC_SYNC_FD ? "sync" : "opaque",
      "--fence-fd", fence != SYNC_NONE ? fmt_int(fence_fd) : "none",
      "--fence-kind", fence == SYNC_SYNC_FD ? "sync" : "opaque",
      s.dedicated ? "--dedicated" : NULL, NULL,
   };
   run_child("the importing process", args);
   close(mem_fd);
   if (sem_fd >= 0)
      close(sem_fd);
   if (fence_fd >= 0)
      close(fence_fd);

   /* an exported sync fd resets the fence: the queue says when A's work is
    * done */
   VKT_CHECK(vkQueueWaitIdle(ctx.queue));
   vkFreeCommandBuffers(ctx.device, ctx.cmd_pool, 1, &cmd);
   check_after_child(&ctx, &s, &readback, "semaphore");

   if (sem != SYNC_NONE)
      vkDestroySemaphore(ctx.device, semaphore, NULL);
   vkDestroyFence(ctx.device, submit_fence, NULL);
   vkt_buffer_destroy(&ctx, &readback);
   shared_destroy(&ctx, &s);
   if (sem != SYNC_NONE)
      printf(PROG ": semaphore: OK: as %s: the semaphore signalled by A's "
             "fill of 0x%08x exported as fd %d; B waited on it in the submit "
             "that copied and refilled the memory; A read B's 0x%08x after\n",
             sem == SYNC_SYNC_FD ? "a sync fd" : "an opaque fd", P1, sem_fd,
             P2);
   if (fence != SYNC_NONE)
      printf(PROG ": fence: OK: as %s: the fence of A's fill exported as "
             "fd %d; B waited for it and read 0x%08x through its mapping\n",
             fence == SYNC_SYNC_FD ? "a sync fd" : "an opaque fd", fence_fd,
             P1);
   printf(PROG ": semaphore: done on '%s'\n", ctx.props.deviceName);
   vkt_context_finish(&ctx);
   return 0;
}

/* B of semaphore: sem_fd, fence_fd are -2 when not given, -1 for a sync fd
 * that was already signalled.  A sync fd's import must be temporary; an
 * opaque fd's is permanent here (B's semaphore and fence are A's then). */
static int
mode_sync_import(int mem_fd, VkDeviceSize size, uint32_t type,
                 bool dedicated, int sem_fd, enum sync_kind sem,
                 int fence_fd, enum sync_kind fence)
{
   const char *exts[3];
   struct vkt_context ctx;
   struct vkt_buffer readback;
   struct imported m;

   if (sem_fd == -2)
      sem = SYNC_NONE;
   if (fence_fd == -2)
      fence = SYNC_NONE;
   uint32_t n_exts = sync_exts(exts, sem, fence);
   vkt_context_init_ext(&ctx, PROG ": sync-import", device_name, 0, exts,
                        n_exts, NULL);
   import_memory(&ctx, mem_fd, size, type, dedicated, &m,
                 "sync-import: memory");
   vkt_buffer_create(&ctx, BUFFER_SIZE, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &readback);
   memset(readback.map, 0, BUFFER_SIZE);
   vkt_buffer_flush(&ctx, &readback);

   if (fence != SYNC_NONE) {
      const VkFenceCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
      };
      VkFence fe;
      VKT_CHECK(vkCreateFence(ctx.device, &info, NULL, &fe));
      if (fence_fd >= 0)
         check_open(fence_fd, "sync-import: fence");
      const VkImportFenceFdInfoKHR import = {
         .sType = VK_STRUCTURE_TYPE_IMPORT_FENCE_FD_INFO_KHR,
         .fence = fe,
         .flags = fence == SYNC_SYNC_FD ? VK_FENCE_IMPORT_TEMPORARY_BIT : 0,
         .handleType = fence_handle(fence),
         .fd = fence_fd,
      };
      VKT_CHECK(LOAD(&ctx, vkImportFenceFdKHR)(ctx.device, &import));
      const char *fate = import_fd_fate(fence_fd);
      VkResult r = vkWaitForFences(ctx.device, 1, &fe, VK_TRUE,
                                   60000000000ull);
      if (r == VK_TIMEOUT)
         vkt_fail("sync-import: the imported fence did not signal in 60 s");
      VKT_CHECK(r);
      invalidate(&ctx, m.memory);
      check_words(m.map, BUFFER_SIZE, P1,
                  "sync-import: B's mapping after the imported fence");
      VKT_CHECK(vkResetFences(ctx.device, 1, &fe));
      VKT_EXPECT(vkGetFenceStatus(ctx.device, fe), VK_NOT_READY);
      vkDestroyFence(ctx.device, fe, NULL);
      printf(PROG ": sync-import: fence: OK: %s %d imported (%s; %s), "
             "waited for; B's mapping read 0x%08x in all %llu words; reset, "
             "the fence is unsignalled\n", sync_kind_name(fence), fence_fd,
             fence == SYNC_SYNC_FD ? "temporarily" : "permanently", fate,
             P1, (unsigned long long)(BUFFER_SIZE / 4));
   }

   VkSemaphore semaphore = VK_NULL_HANDLE;
   const char *sem_fate = NULL;
   if (sem != SYNC_NONE) {
      const VkSemaphoreCreateInfo info = {
         .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      };
      VKT_CHECK(vkCreateSemaphore(ctx.device, &info, NULL, &semaphore));
      if (sem_fd >= 0)
         check_open(sem_fd, "sync-import: semaphore");
      const VkImportSemaphoreFdInfoKHR import = {
         .sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
         .semaphore = semaphore,
         .flags = sem == SYNC_SYNC_FD ? VK_SEMAPHORE_IMPORT_TEMPORARY_BIT : 0,
         .handleType = semaphore_handle(sem),
         .fd = sem_fd,
      };
      VKT_CHECK(LOAD(&ctx, vkImportSemaphoreFdKHR)(ctx.device, &import));
      sem_fate = import_fd_fate(sem_fd);
   }

   /* the copy and the refill wait on A's semaphore */
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   record_copy_fill_p2(&ctx, cmd, &m, &readback);
   VKT_CHECK(vkEndCommandBuffer(cmd));
   const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .waitSemaphoreCount = sem != SYNC_NONE ? 1 : 0,
      .pWaitSemaphores = &semaphore,
      .pWaitDstStageMask = &wait_stage,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
   };
   const VkFenceCreateInfo fence_info = {
      .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
   };
   VkFence done;
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &done));
   VKT_CHECK(vkQueueSubmit(ctx.queue, 1, &submit, done));
   VkResult r = vkWaitForFences(ctx.device, 1, &done, VK_TRUE,
                                60000000000ull);
   if (r == VK_TIMEOUT)
      vkt_fail("sync-import: the submit waiting on the imported semaphore "
               "did not complete in 60 s");
   VKT_CHECK(r);
   vkDestroyFence(ctx.device, done, NULL);
   vkFreeCommandBuffers(ctx.device, ctx.cmd_pool, 1, &cmd);
   vkt_buffer_invalidate(&ctx, &readback);
   check_words(readback.map, BUFFER_SIZE, P1,
               "sync-import: B's GPU copy after the semaphore wait");
   invalidate(&ctx, m.memory);
   check_words(m.map, BUFFER_SIZE, P2,
               "sync-import: B's mapping after its fill");
   if (sem != SYNC_NONE) {
      vkDestroySemaphore(ctx.device, semaphore, NULL);
      printf(PROG ": sync-import: semaphore: OK: %s %d imported (%s; %s); "
             "the submit waiting on it copied 0x%08x in all %llu words and "
             "filled 0x%08x\n", sync_kind_name(sem), sem_fd,
             sem == SYNC_SYNC_FD ? "temporarily" : "permanently", sem_fate,
             P1, (unsigned long long)(BUFFER_SIZE / 4), P2);
   }
   vkt_buffer_destroy(&ctx, &readback);
   imported_destroy(&ctx, &m);
   vkt_context_finish(&ctx);
   return 0;
}

/* ---- main ---------------------------------------------------------------- */

static void
usage(void)
{
   fprintf(stderr, "usage: " PROG " [--device NAME] share|forged|semaphore\n");
   exit(1);
}

/* An fd on the command line: a number, -1 (an already signalled sync fd)
 * or "none" (-2). */
static int
parse_fd(const char *opt, const char *value)
{
   if (value && !strcmp(value, "none"))
      return -2;
   if (value && !strcmp(value, "-1"))
      return -1;
   uint64_t v = vkt_parse_u64(opt, value);
   if (v > 1u << 20)
      vkt_fail("option %s: %s is not an fd", opt, value);
   return (int)v;
}

int
main(int argc, char **argv)
{
   const char *mode = NULL;
   int fd = -2, sem_fd = -2, fence_fd = -2;
   enum sync_kind sem_kind = SYNC_SYNC_FD, fence_kind = SYNC_SYNC_FD;
   uint64_t size = 0, type = UINT32_MAX;
   bool dedicated = false;

   vkt_set_prog(PROG);
   for (int i = 1; i < argc; i++) {
      const char *value = i + 1 < argc ? argv[i + 1] : NULL;

      if (!strcmp(argv[i], "--device") && value)
         device_name = argv[++i];
      else if (!strcmp(argv[i], "--fd"))
         fd = parse_fd(argv[i], value), i++;
      else if (!strcmp(argv[i], "--semaphore-fd"))
         sem_fd = parse_fd(argv[i], value), i++;
      else if (!strcmp(argv[i], "--fence-fd"))
         fence_fd = parse_fd(argv[i], value), i++;
      else if (!strcmp(argv[i], "--semaphore-kind"))
         sem_kind = parse_sync_kind(argv[i], value), i++;
      else if (!strcmp(argv[i], "--fence-kind"))
         fence_kind = parse_sync_kind(argv[i], value), i++;
      else if (!strcmp(argv[i], "--size"))
         size = vkt_parse_u64(argv[i], value), i++;
      else if (!strcmp(argv[i], "--type"))
         type = vkt_parse_u64(argv[i], value), i++;
      else if (!strcmp(argv[i], "--dedicated"))
         dedicated = true;
      else if (argv[i][0] != '-' && !mode)
         mode = argv[i];
      else
         usage();
   }
   if (!mode)
      usage();
   if (!strcmp(mode, "share"))
      return mode_share();
   if (!strcmp(mode, "forged"))
      return mode_forged();
   if (!strcmp(mode, "semaphore"))
      return mode_semaphore();
   /* the importing process, run by share and semaphore */
   if (fd < 0 || !size || type >= VK_MAX_MEMORY_TYPES)
      vkt_fail("%s needs --fd, --size and --type", mode);
   if (!strcmp(mode, "import"))
      return mode_import(fd, size, (uint32_t)type, dedicated);
   if (!strcmp(mode, "sync-import")) {
      if (sem_fd == -2 && fence_fd == -2)
         vkt_fail("sync-import needs --semaphore-fd or --fence-fd");
      if ((sem_fd == -1 && sem_kind != SYNC_SYNC_FD) ||
          (fence_fd == -1 && fence_kind != SYNC_SYNC_FD))
         vkt_fail("sync-import: fd -1 is a sync fd's only");
      return mode_sync_import(fd, size, (uint32_t)type, dedicated, sem_fd,
                              sem_kind, fence_fd, fence_kind);
   }
   usage();
}
