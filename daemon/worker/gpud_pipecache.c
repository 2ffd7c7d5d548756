/* SPDX-License-Identifier: MIT */
/*
 * A host pipeline cache per device, kept across runs of a program.
 *
 * A program run directly finds its pipelines in the host driver's own disk
 * cache the second time.  Through gpud the driver runs in a worker that
 * ends with _exit (gpud_worker.c: no teardown that could hang), where a
 * driver that writes its disk cache at exit writes nothing, so every run
 * compiled every pipeline again: seconds of compiling for llama.cpp on the
 * NVIDIA driver, after which the GPU had gone back to its idle clocks and
 * the run stayed there (docs/performance.md, "llama.cpp").
 *
 * So the worker keeps a VkPipelineCache of its own for each device: read
 * when the device is made, used for every pipeline the application creates
 * without a cache of its own (an application with its own cache keeps it,
 * and its data goes through vkGetPipelineCacheData as always), and written
 * while pipelines are created (every 2 s at most), when the device is
 * destroyed and when the client ends.  The file lies in the
 * worker's cache directory ($XDG_CACHE_HOME/gpud/pipelines, else
 * $HOME/.cache/gpud/pipelines: the gpud user's home, where the drivers'
 * own caches are), one per client user, program and host device, named by
 * the device's pipelineCacheUUID, so that another driver version starts
 * afresh.  The host driver checks the data's header when it reads it.
 * GPUD_PIPELINE_CACHE=off turns it off.
 */
#include "gpud_pipecache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpud_call.h"
#include "util_dir.h"
#include "util_macros.h"
#include "util_time.h"

/* what one file may hold (NVIDIA's data for llama.cpp's pipelines: tens
 * of MiB) */
#define PIPECACHE_MAX_BYTES (512ull << 20)

/* while pipelines are being created, what they gave is written this
 * often: a client killed in the middle of its compiling (a worker then
 * ends with its decoder busy) keeps what was done; and no more than 1/50
 * of the decoding thread's time goes to writing a big cache */
#define PIPECACHE_SAVE_EVERY_NS (2ull * 1000 * 1000 * 1000)
#define PIPECACHE_SAVE_SHARE 50

struct gpud_pipecache {
   VkPipelineCache cache;
   char *path;
   atomic_bool dirty;
   /* one write at a time (pipelines are made on the compile threads too) */
   pthread_mutex_t mutex;
   uint64_t saved_ns; /* the last write, or the opening */
   uint64_t save_ns;  /* what the last write took */
};

static char *
cache_dir(void)
{
   const char *off = getenv("GPUD_PIPELINE_CACHE");
   if (off && (!strcmp(off, "off") || !strcmp(off, "0") || !strcmp(off, "no")))
      return NULL;
   const char *xdg = getenv("XDG_CACHE_HOME");
   const char *home = getenv("HOME");
   char *dir = NULL;
   if (xdg && xdg[0] == '/') {
      if (asprintf(&dir, "%s/gpud/pipelines", xdg) < 0)
         return NULL;
   } else if (home && home[0] == '/' && strcmp(home, "/")) {
      if (asprintf(&dir, "%s/.cache/gpud/pipelines", home) < 0)
         return NULL;
   }
   return dir;
}

static char *
cache_path(struct gpud_context *ctx, struct gpud_object *device)
{
   VkPhysicalDeviceProperties props;
   memset(&props, 0, sizeof(props));
   device->disp->GetPhysicalDeviceProperties(
      (VkPhysicalDevice)(uintptr_t)device->physical_device, &props);
   char program[sizeof(ctx->info.name)];
   size_t n = 0;
   for (const char *c = ctx->info.name; *c && n + 1 < sizeof(program); c++) {
      bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                   (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
      program[n] = plain && !(n == 0 && *c == '.') ? *c : '_';
      n++;
   }
   program[n] = '\0';
   char uuid[2 * VK_UUID_SIZE + 1];
   for (unsigned i = 0; i < VK_UUID_SIZE; i++)
      snprintf(uuid + 2 * i, 3, "%02x", props.pipelineCacheUUID[i]);
   char *dir = cache_dir();
   if (!dir)
      return NULL;
   char *path = NULL;
   int r = util_mkdirs(dir, 0700, 0700);
   if (r < 0) {
      gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache: %s: %s", dir, strerror(-r));
   } else if (asprintf(&path, "%s/%u-%s-%04x-%04x-%s.bin", dir, (unsigned)ctx->info.uid,
                       n ? program : "_", props.vendorID, props.deviceID, uuid) < 0) {
      path = NULL;
   }
   free(dir);
   return path;
}

/* The file's bytes (malloc'ed; NULL: none or unreadable). */
static void *
read_file(const char *path, size_t *ret_size)
{
   *ret_size = 0;
   int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
   if (fd < 0)
      return NULL;
   struct stat st;
   void *data = NULL;
   if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
       (uint64_t)st.st_size <= PIPECACHE_MAX_BYTES) {
      size_t size = (size_t)st.st_size, got = 0;
      data = malloc(size);
      while (data && got < size) {
         ssize_t r = read(fd, (char *)data + got, size - got);
         if (r < 0 && errno == EINTR)
            continue;
         if (r <= 0)
            break;
         got += (size_t)r;
      }
      if (data && got == size) {
         *ret_size = size;
      } else {
         free(data);
         data = NULL;
      }
   }
   close(fd);
   return data;
}

static void save_locked(struct gpud_context *ctx, struct gpud_object *device);

void
gpud_pipecache_open(struct gpud_context *ctx, struct gpud_object *device)
{
   if (device->pipecache || !device->disp->CreatePipelineCache)
      return;
   char *path = cache_path(ctx, device);
   if (!path)
      return;
   struct gpud_pipecache *pc = calloc(1, sizeof(*pc));
   if (!pc) {
      free(path);
      return;
   }
   size_t size = 0;
   void *data = read_file(path, &size);
   VkPipelineCacheCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
      .initialDataSize = size,
      .pInitialData = data,
   };
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   VkResult r = device->disp->CreatePipelineCache(dev, &ci, NULL, &pc->cache);
   if (r != VK_SUCCESS && data) {
      /* (data the driver refuses: start afresh) */
      ci.initialDataSize = 0;
      ci.pInitialData = NULL;
      r = device->disp->CreatePipelineCache(dev, &ci, NULL, &pc->cache);
   }
   free(data);
   if (r != VK_SUCCESS) {
      free(path);
      free(pc);
      return;
   }
   gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache %s: %zu bytes read", path, size);
   pc->path = path;
   pthread_mutex_init(&pc->mutex, NULL);
   pc->saved_ns = util_now_ns();
   device->pipecache = pc;
}

VkPipelineCache
gpud_pipecache_use(struct gpud_object *device)
{
   struct gpud_pipecache *pc = device ? device->pipecache : NULL;
   return pc ? pc->cache : VK_NULL_HANDLE;
}

void
gpud_pipecache_created(struct gpud_context *ctx, struct gpud_object *device)
{
   struct gpud_pipecache *pc = device ? device->pipecache : NULL;
   if (!pc)
      return;
   /* the pipeline is in the cache now: a write that starts later has it
    * (one under way on another thread may not, and leaves it dirty) */
   atomic_store(&pc->dirty, true);
   if (pthread_mutex_trylock(&pc->mutex) != 0)
      return;
   if (util_now_ns() - pc->saved_ns >=
       UTIL_MAX(PIPECACHE_SAVE_EVERY_NS, PIPECACHE_SAVE_SHARE * pc->save_ns))
      save_locked(ctx, device);
   pthread_mutex_unlock(&pc->mutex);
}

void
gpud_pipecache_save(struct gpud_context *ctx, struct gpud_object *device)
{
   struct gpud_pipecache *pc = device->pipecache;
   if (!pc)
      return;
   pthread_mutex_lock(&pc->mutex);
   save_locked(ctx, device);
   pthread_mutex_unlock(&pc->mutex);
}

static void
save_locked(struct gpud_context *ctx, struct gpud_object *device)
{
   struct gpud_pipecache *pc = device->pipecache;
   if (!atomic_exchange(&pc->dirty, false))
      return;
   uint64_t began = util_now_ns();
   pc->saved_ns = began; /* (a write that fails waits as long) */
   VkDevice dev = (VkDevice)(uintptr_t)device->handle;
   size_t size = 0;
   if (device->disp->GetPipelineCacheData(dev, pc->cache, &size, NULL) != VK_SUCCESS || !size ||
       size > PIPECACHE_MAX_BYTES)
      return;
   void *data = malloc(size);
   if (!data)
      return;
   char *tmp = NULL;
   if (device->disp->GetPipelineCacheData(dev, pc->cache, &size, data) == VK_SUCCESS &&
       asprintf(&tmp, "%s.%d.tmp", pc->path, (int)getpid()) >= 0) {
      if (util_write_file(pc->path, tmp, data, size) == 0)
         gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache %s: %zu bytes written",
                          pc->path, size);
      free(tmp);
   }
   free(data);
   pc->saved_ns = util_now_ns();
   pc->save_ns = pc->saved_ns - began;
}

void
gpud_pipecache_close(struct gpud_context *ctx, struct gpud_object *device)
{
   struct gpud_pipecache *pc = device->pipecache;
   if (!pc)
      return;
   gpud_pipecache_save(ctx, device);
   device->disp->DestroyPipelineCache((VkDevice)(uintptr_t)device->handle, pc->cache, NULL);
   device->pipecache = NULL;
   pthread_mutex_destroy(&pc->mutex);
   free(pc->path);
   free(pc);
}
