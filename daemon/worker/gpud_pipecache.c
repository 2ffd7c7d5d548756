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
 *
 * Whether a pipeline was found there (gpudctl cache shows hits and misses
 * per program) is the worker's own count, as host drivers say it
 * differently or not at all: each pipeline made with the cache has a key,
 * a hash of its create info as the wire encodes it with every handle
 * cleared and the code of each shader module it names in its place; the
 * file keeps the keys of the pipelines in it ahead of the driver's data
 * (a header, "GPUDPC" and a version, then the keys).  A pipeline whose
 * key the file had is cached, another compiled (its key kept from then
 * on); a pipeline that names pipeline libraries (handles of this run)
 * counts as compiled every time.  The counts go on the status page.
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
#include "util_env.h"
#include "util_hash.h"
#include "util_macros.h"
#include "util_time.h"
#include "wire_gen.h"

/* what one file may hold (NVIDIA's data for llama.cpp's pipelines: tens
 * of MiB) */
#define PIPECACHE_MAX_BYTES (512ull << 20)

/* while pipelines are being created, what they gave is written this
 * often: a client killed in the middle of its compiling (a worker then
 * ends with its decoder busy) keeps what was done; and no more than 1/50
 * of the decoding thread's time goes to writing a big cache */
#define PIPECACHE_SAVE_EVERY_NS (2ull * 1000 * 1000 * 1000)
#define PIPECACHE_SAVE_SHARE 50

/* the keys one file keeps, at most (8 bytes each) */
#define PIPECACHE_MAX_KEYS (1u << 20)

/* the file: this header, n_keys keys, then the host driver's data */
struct pipecache_header {
   char magic[6]; /* "GPUDPC" */
   uint16_t version;
   uint32_t n_keys;
   uint32_t reserved;
};
#define PIPECACHE_VERSION 1

struct gpud_pipecache {
   VkPipelineCache cache;
   char *path;
   atomic_bool dirty;
   /* one write at a time (pipelines are made on the compile threads too) */
   pthread_mutex_t mutex;
   uint64_t saved_ns; /* the last write, or the opening */
   uint64_t save_ns;  /* what the last write took */
   /* the keys of the pipelines it holds: an open-addressed set (0: free;
    * a key is never 0), cap a power of two */
   pthread_mutex_t keys_mutex;
   uint64_t *keys;
   uint32_t n_keys, cap_keys;
};

static bool
keys_has(const struct gpud_pipecache *pc, uint64_t key)
{
   for (uint32_t i = (uint32_t)key & (pc->cap_keys - 1); pc->cap_keys; i = (i + 1) & (pc->cap_keys - 1)) {
      if (pc->keys[i] == key)
         return true;
      if (!pc->keys[i])
         return false;
   }
   return false;
}

/* Adds key (at most PIPECACHE_MAX_KEYS; false: not kept). */
static bool
keys_add(struct gpud_pipecache *pc, uint64_t key)
{
   if (keys_has(pc, key))
      return true;
   if ((pc->n_keys + 1) * 2 > pc->cap_keys) {
      if (pc->n_keys >= PIPECACHE_MAX_KEYS)
         return false;
      uint32_t cap = pc->cap_keys ? pc->cap_keys * 2 : 256;
      uint64_t *grown = calloc(cap, sizeof(*grown));
      if (!grown)
         return false;
      for (uint32_t i = 0; i < pc->cap_keys; i++) {
         uint64_t k = pc->keys[i];
         uint32_t j = (uint32_t)k & (cap - 1);
         while (k && grown[j])
            j = (j + 1) & (cap - 1);
         if (k)
            grown[j] = k;
      }
      free(pc->keys);
      pc->keys = grown;
      pc->cap_keys = cap;
   }
   uint32_t i = (uint32_t)key & (pc->cap_keys - 1);
   while (pc->keys[i])
      i = (i + 1) & (pc->cap_keys - 1);
   pc->keys[i] = key;
   pc->n_keys++;
   return true;
}

static char *
cache_dir(const struct gpud_context *ctx)
{
   if (util_env_off("GPUD_PIPELINE_CACHE"))
      return NULL;
   char *dir = NULL;
   /* the user's cache directory the server made (threads of the server
    * share its environment: the directory comes with the client) */
   if (ctx->info.cache_dir[0] == '/')
      return asprintf(&dir, "%s/gpud/pipelines", ctx->info.cache_dir) < 0 ? NULL : dir;
   const char *xdg = getenv("XDG_CACHE_HOME");
   const char *home = getenv("HOME");
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
   util_file_name_part(ctx->info.name, program, sizeof(program));
   char uuid[2 * VK_UUID_SIZE + 1];
   for (unsigned i = 0; i < VK_UUID_SIZE; i++)
      snprintf(uuid + 2 * i, 3, "%02x", props.pipelineCacheUUID[i]);
   char *dir = cache_dir(ctx);
   if (!dir)
      return NULL;
   char *path = NULL;
   int r = util_mkdirs(dir, 0700, 0700);
   if (r < 0) {
      gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache: %s: %s", dir, strerror(-r));
   } else if (asprintf(&path, "%s/%u-%s-%04x-%04x-%s.bin", dir, (unsigned)ctx->info.uid,
                       program[0] ? program : "_", props.vendorID, props.deviceID, uuid) < 0) {
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
   /* read now: its last use, for the server's trimming (srv_cache.c),
    * whatever the file system's atime updates */
   futimens(fd, (const struct timespec[2]){{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_OMIT}});
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
   const uint8_t *driver = data;
   struct pipecache_header h;
   pthread_mutex_init(&pc->keys_mutex, NULL);
   if (size >= sizeof(h)) {
      memcpy(&h, data, sizeof(h));
      if (!memcmp(h.magic, "GPUDPC", sizeof(h.magic))) {
         /* (a file of gpud's: its keys, then the driver's data) */
         uint64_t keys_size = (uint64_t)h.n_keys * sizeof(uint64_t);
         bool fits = h.version == PIPECACHE_VERSION && h.n_keys <= PIPECACHE_MAX_KEYS &&
                     keys_size <= size - sizeof(h);
         const uint8_t *k = driver + sizeof(h);
         for (uint32_t i = 0; fits && i < h.n_keys; i++) {
            uint64_t key;
            memcpy(&key, k + i * sizeof(key), sizeof(key));
            if (key)
               keys_add(pc, key);
         }
         driver += fits ? sizeof(h) + keys_size : size;
         size -= fits ? sizeof(h) + keys_size : size;
      }
   }
   VkPipelineCacheCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
      .initialDataSize = size,
      .pInitialData = size ? driver : NULL,
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
      pthread_mutex_destroy(&pc->keys_mutex);
      free(pc->keys);
      free(path);
      free(pc);
      return;
   }
   gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache %s: %zu bytes, %u pipelines read",
                    path, size, pc->n_keys);
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

uint64_t
gpud_pipecache_code_hash(const VkShaderModuleCreateInfo *ci)
{
   uint64_t h = util_hash_mix(UTIL_HASH_SEED, ci->flags);
   h = ci->pCode ? util_hash_bytes(h, ci->pCode, ci->codeSize) : h;
   return h ? h : 1;
}

/* The code hash of the shader module a stage names (its handle; 0: none,
 * or not the call's). */
static uint64_t
module_hash(const struct gpud_call *call, VkShaderModule module)
{
   for (unsigned i = 0; module && i < call->n_touched; i++) {
      const struct gpud_object *o = call->touched[i];
      if (o->type == VK_OBJECT_TYPE_SHADER_MODULE && o->handle == (uint64_t)module)
         return o->code_hash;
   }
   return 0;
}

/* A key: the encoding's hash, then each stage's code; never 0. */
static uint64_t
key_of(struct wire_enc *e, uint64_t h, const uint64_t *codes, uint32_t n)
{
   h = e->oom ? util_now_ns() : util_hash_bytes(h, e->data, e->size);
   for (uint32_t i = 0; i < n; i++)
      h = util_hash_mix(h, codes[i]);
   return h ? h : 1;
}

const uint64_t *
gpud_pipecache_keys(struct gpud_call *call, uint32_t op, const void *args)
{
   if (!call->device || !call->device->pipecache)
      return NULL;
   const bool compute = op == WIRE_OP_vkCreateComputePipelines;
   const uint32_t n = compute ? ((const struct wire_args_vkCreateComputePipelines *)args)->createInfoCount
                              : ((const struct wire_args_vkCreateGraphicsPipelines *)args)->createInfoCount;
   uint64_t *keys = wire_dec_alloc(&call->dec, sizeof(*keys) * (n ? n : 1));
   if (!keys)
      return NULL;
   struct wire_enc e;
   wire_enc_init(&e);
   for (uint32_t i = 0; i < n; i++) {
      wire_enc_reset(&e);
      uint64_t codes[8] = {0};
      uint32_t n_codes = 0;
      bool libraries = false;
      if (compute) {
         VkComputePipelineCreateInfo ci =
            ((const struct wire_args_vkCreateComputePipelines *)args)->pCreateInfos[i];
         codes[n_codes++] = module_hash(call, ci.stage.module);
         ci.stage.module = VK_NULL_HANDLE;
         ci.layout = VK_NULL_HANDLE;
         ci.basePipelineHandle = VK_NULL_HANDLE;
         libraries = gpud_chain_find(ci.pNext, VK_STRUCTURE_TYPE_PIPELINE_LIBRARY_CREATE_INFO_KHR);
         wire_key_VkComputePipelineCreateInfo(&e, &ci);
      } else {
         VkGraphicsPipelineCreateInfo ci =
            ((const struct wire_args_vkCreateGraphicsPipelines *)args)->pCreateInfos[i];
         VkPipelineShaderStageCreateInfo *stages =
            ci.stageCount ? wire_dec_alloc(&call->dec, sizeof(*stages) * ci.stageCount) : NULL;
         if (ci.stageCount && (!stages || !ci.pStages)) {
            ci.stageCount = 0;
            libraries = true; /* (no memory: a key of this run only) */
         }
         for (uint32_t s = 0; s < ci.stageCount; s++) {
            stages[s] = ci.pStages[s];
            uint64_t code = module_hash(call, stages[s].module);
            if (s < UTIL_ARRAY_SIZE(codes))
               codes[n_codes++] = code;
            else
               codes[UTIL_ARRAY_SIZE(codes) - 1] ^= util_hash_mix(s, code);
            stages[s].module = VK_NULL_HANDLE;
         }
         ci.pStages = stages;
         ci.layout = VK_NULL_HANDLE;
         ci.renderPass = VK_NULL_HANDLE;
         ci.basePipelineHandle = VK_NULL_HANDLE;
         libraries = libraries ||
                     gpud_chain_find(ci.pNext, VK_STRUCTURE_TYPE_PIPELINE_LIBRARY_CREATE_INFO_KHR);
         wire_key_VkGraphicsPipelineCreateInfo(&e, &ci);
      }
      keys[i] = key_of(&e, util_hash_mix(UTIL_HASH_SEED, op), codes, n_codes);
      if (libraries)
         keys[i] = 0; /* (compiled every time: its libraries are this run's) */
   }
   wire_enc_finish(&e);
   return keys;
}

void
gpud_pipecache_made(struct gpud_context *ctx, struct gpud_object *device, const uint64_t *keys,
                    const VkPipeline *pipelines, uint32_t n)
{
   struct gpud_pipecache *pc = device ? device->pipecache : NULL;
   if (!pc)
      return;
   uint64_t cached = 0, compiled = 0;
   pthread_mutex_lock(&pc->keys_mutex);
   for (uint32_t i = 0; pipelines && i < n; i++) {
      if (pipelines[i] == VK_NULL_HANDLE)
         continue;
      if (keys && keys[i] && keys_has(pc, keys[i])) {
         cached++;
      } else {
         compiled++;
         if (keys && keys[i])
            keys_add(pc, keys[i]);
      }
   }
   pthread_mutex_unlock(&pc->keys_mutex);
   if (ctx->status) {
      atomic_fetch_add_explicit(&ctx->status->pipelines_cached, cached, memory_order_relaxed);
      atomic_fetch_add_explicit(&ctx->status->pipelines_compiled, compiled,
                                memory_order_relaxed);
   }
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
   pthread_mutex_lock(&pc->keys_mutex);
   struct pipecache_header h = {.magic = "GPUDPC", .version = PIPECACHE_VERSION,
                                .n_keys = pc->n_keys};
   size_t head = sizeof(h) + (size_t)pc->n_keys * sizeof(uint64_t);
   uint8_t *data = malloc(head + size);
   if (data) {
      memcpy(data, &h, sizeof(h));
      uint8_t *k = data + sizeof(h);
      for (uint32_t i = 0; i < pc->cap_keys; i++) {
         if (pc->keys[i]) {
            memcpy(k, &pc->keys[i], sizeof(uint64_t));
            k += sizeof(uint64_t);
         }
      }
   }
   pthread_mutex_unlock(&pc->keys_mutex);
   if (!data)
      return;
   char *tmp = NULL;
   if (device->disp->GetPipelineCacheData(dev, pc->cache, &size, data + head) == VK_SUCCESS &&
       asprintf(&tmp, "%s.%d.tmp", pc->path, (int)getpid()) >= 0) {
      if (util_write_file(pc->path, tmp, data, head + size) == 0)
         gpud_context_log(ctx, UTIL_LOG_DEBUG, "pipeline cache %s: %zu bytes, %u pipelines "
                          "written", pc->path, size, h.n_keys);
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
   pthread_mutex_destroy(&pc->keys_mutex);
   free(pc->keys);
   free(pc->path);
   free(pc);
}
