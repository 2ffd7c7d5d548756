/* SPDX-License-Identifier: MIT */
/*
 * The host-call recorder: an ICD that wraps another (GPUD_HOSTREC_DRIVER,
 * a driver manifest) and writes what each recorded command was asked into
 * GPUD_HOSTREC_DIR/PID.rec, one block a call:
 *
 *   @ vkCreateDevice
 *   pCreateInfo.queueCreateInfoCount = 1
 *   pCreateInfo.pNext<VkPhysicalDeviceVulkan12Features>.timelineSemaphore = 1
 *   = 0
 *
 * The same recorder under an application (the loader loads it as the
 * application's driver) and under gpud (--host-driver its manifest) shows
 * what the host driver receives either way: tests/integration/hostrec_test.py
 * compares the two.  The driver below keeps its own handles; the recorder
 * only hands out wrappers of the recorded commands through its
 * vkGet*ProcAddr.
 */
#include "hostrec.h"

#include "util_trace.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef VkResult(VKAPI_PTR *PFN_negotiate)(uint32_t *);

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version);
EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetInstanceProcAddr(VkInstance instance,
                                                                        const char *name);
EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vk_icdGetPhysicalDeviceProcAddr(VkInstance instance,
                                                                              const char *name);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static PFN_vkGetInstanceProcAddr real_gipa;
static PFN_negotiate real_negotiate;
static PFN_vkVoidFunction(VKAPI_PTR *real_gpdpa)(VkInstance, const char *);
static PFN_vkGetDeviceProcAddr real_gdpa;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static bool out_tried;

static _Thread_local struct hr thread_record;
static _Thread_local bool thread_busy;

/* The manifest's library_path, as the loader reads it (absolute, or
 * relative to the manifest). */
static char *
manifest_library(const char *manifest)
{
   FILE *f = fopen(manifest, "re");
   if (!f)
      return NULL;
   char buf[8192];
   size_t n = fread(buf, 1, sizeof(buf) - 1, f);
   fclose(f);
   buf[n] = '\0';
   char *p = strstr(buf, "\"library_path\"");
   if (!p || !(p = strchr(p + 14, '"')))
      return NULL;
   char *end = strchr(++p, '"');
   if (!end)
      return NULL;
   *end = '\0';
   if (p[0] == '/' || !strchr(p, '/'))
      return strdup(p);
   char *dir = strdup(manifest);
   char *slash = dir ? strrchr(dir, '/') : NULL;
   char *path = NULL;
   if (slash) {
      *slash = '\0';
      if (asprintf(&path, "%s/%s", dir, p) < 0)
         path = NULL;
   }
   free(dir);
   return path;
}

/* GPUD_TRACE without GPUD_HOSTREC_DIR: the timed commands below instead of
 * the recorded ones (load() decides) */
static bool timing;

static void
load(void)
{
   timing = !getenv("GPUD_HOSTREC_DIR") && util_trace_init("hostrec");
   const char *manifest = getenv("GPUD_HOSTREC_DRIVER");
   if (!manifest) {
      fprintf(stderr, "gpud-hostrec: GPUD_HOSTREC_DRIVER names no driver manifest\n");
      return;
   }
   char *lib = manifest_library(manifest);
   void *so = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
   if (!so) {
      fprintf(stderr, "gpud-hostrec: cannot load the driver of %s: %s\n", manifest,
              lib ? dlerror() : "no library_path");
      free(lib);
      return;
   }
   free(lib);
   real_negotiate = (PFN_negotiate)dlsym(so, "vk_icdNegotiateLoaderICDInterfaceVersion");
   real_gipa = (PFN_vkGetInstanceProcAddr)dlsym(so, "vk_icdGetInstanceProcAddr");
   real_gpdpa = (PFN_vkVoidFunction(VKAPI_PTR *)(VkInstance, const char *))dlsym(
      so, "vk_icdGetPhysicalDeviceProcAddr");
}

/* ---- timed commands -------------------------------------------------------
 * With GPUD_TRACE (util_trace.h) and no GPUD_HOSTREC_DIR the recorder
 * times submissions, ends of recordings and fence waits instead, as gpud's
 * ICD does: the same program directly and through gpud, side by side. */

static PFN_vkQueueSubmit next_submit;
static PFN_vkQueueSubmit2 next_submit2;
static PFN_vkEndCommandBuffer next_end;
static PFN_vkWaitForFences next_wait;
static PFN_vkGetFenceStatus next_status;

static uint32_t
cbs_of(uint32_t n, const VkSubmitInfo *s)
{
   uint32_t cbs = 0;
   for (uint32_t i = 0; i < n; i++)
      cbs += s[i].commandBufferCount;
   return cbs;
}

static uint32_t
cbs_of2(uint32_t n, const VkSubmitInfo2 *s)
{
   uint32_t cbs = 0;
   for (uint32_t i = 0; i < n; i++)
      cbs += s[i].commandBufferInfoCount;
   return cbs;
}

static VKAPI_ATTR VkResult VKAPI_CALL
timed_QueueSubmit(VkQueue queue, uint32_t n, const VkSubmitInfo *submits, VkFence fence)
{
   util_trace(UTIL_TRACE_SUBMIT, cbs_of(n, submits));
   VkResult r = next_submit(queue, n, submits, fence);
   util_trace(UTIL_TRACE_SUBMITTED, 0);
   return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
timed_QueueSubmit2(VkQueue queue, uint32_t n, const VkSubmitInfo2 *submits, VkFence fence)
{
   util_trace(UTIL_TRACE_SUBMIT, cbs_of2(n, submits));
   VkResult r = next_submit2(queue, n, submits, fence);
   util_trace(UTIL_TRACE_SUBMITTED, 0);
   return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
timed_EndCommandBuffer(VkCommandBuffer cb)
{
   util_trace(UTIL_TRACE_END, 0);
   return next_end(cb);
}

static VKAPI_ATTR VkResult VKAPI_CALL
timed_WaitForFences(VkDevice device, uint32_t n, const VkFence *fences, VkBool32 all,
                    uint64_t timeout)
{
   util_trace(UTIL_TRACE_WAIT, n);
   VkResult r = next_wait(device, n, fences, all, timeout);
   util_trace(UTIL_TRACE_WAITED, (uint32_t)r);
   return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL
timed_GetFenceStatus(VkDevice device, VkFence fence)
{
   VkResult r = next_status(device, fence);
   util_trace_fence_status((uint64_t)fence, r == VK_SUCCESS);
   return r;
}

static const struct hostrec_command timed_commands[] = {
   {"vkQueueSubmit", (PFN_vkVoidFunction)timed_QueueSubmit, (PFN_vkVoidFunction *)&next_submit,
    true},
   {"vkQueueSubmit2", (PFN_vkVoidFunction)timed_QueueSubmit2,
    (PFN_vkVoidFunction *)&next_submit2, true},
   {"vkQueueSubmit2KHR", (PFN_vkVoidFunction)timed_QueueSubmit2,
    (PFN_vkVoidFunction *)&next_submit2, true},
   {"vkEndCommandBuffer", (PFN_vkVoidFunction)timed_EndCommandBuffer,
    (PFN_vkVoidFunction *)&next_end, true},
   {"vkWaitForFences", (PFN_vkVoidFunction)timed_WaitForFences, (PFN_vkVoidFunction *)&next_wait,
    true},
   {"vkGetFenceStatus", (PFN_vkVoidFunction)timed_GetFenceStatus,
    (PFN_vkVoidFunction *)&next_status, true},
};

static const struct hostrec_command *
find(const char *name)
{
   if (timing) {
      for (size_t i = 0; i < UTIL_ARRAY_SIZE(timed_commands); i++) {
         if (!strcmp(timed_commands[i].name, name))
            return &timed_commands[i];
      }
      return NULL;
   }
   for (size_t i = 0; i < hostrec_command_count; i++) {
      if (!strcmp(hostrec_commands[i].name, name))
         return &hostrec_commands[i];
   }
   return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL rec_GetInstanceProcAddr(VkInstance instance,
                                                                       const char *name);

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
rec_GetDeviceProcAddr(VkDevice device, const char *name)
{
   if (!real_gdpa)
      return NULL;
   PFN_vkVoidFunction real = real_gdpa(device, name);
   if (!strcmp(name, "vkGetDeviceProcAddr"))
      return real ? (PFN_vkVoidFunction)rec_GetDeviceProcAddr : NULL;
   const struct hostrec_command *c = find(name);
   if (!c || !c->device_level || !real)
      return real;
   *c->next = real;
   return c->wrapper;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
rec_GetInstanceProcAddr(VkInstance instance, const char *name)
{
   pthread_once(&load_once, load);
   if (!real_gipa)
      return NULL;
   PFN_vkVoidFunction real = real_gipa(instance, name);
   if (!real)
      return NULL;
   if (!strcmp(name, "vkGetInstanceProcAddr"))
      return (PFN_vkVoidFunction)rec_GetInstanceProcAddr;
   if (!strcmp(name, "vkGetDeviceProcAddr")) {
      real_gdpa = (PFN_vkGetDeviceProcAddr)real;
      return (PFN_vkVoidFunction)rec_GetDeviceProcAddr;
   }
   const struct hostrec_command *c = find(name);
   if (!c)
      return real;
   *c->next = real;
   return c->wrapper;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version)
{
   pthread_once(&load_once, load);
   if (!real_gipa)
      return VK_ERROR_INCOMPATIBLE_DRIVER;
   if (!real_negotiate) {
      *version = 1;
      return VK_SUCCESS;
   }
   return real_negotiate(version);
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetInstanceProcAddr(VkInstance instance, const char *name)
{
   return rec_GetInstanceProcAddr(instance, name);
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vk_icdGetPhysicalDeviceProcAddr(VkInstance instance, const char *name)
{
   pthread_once(&load_once, load);
   return real_gpdpa ? real_gpdpa(instance, name) : NULL;
}

/* ---- records --------------------------------------------------------------- */

static bool
open_output(void)
{
   if (out_tried)
      return out_fd >= 0;
   out_tried = true;
   const char *dir = getenv("GPUD_HOSTREC_DIR");
   if (!dir)
      return false;
   char path[4096];
   snprintf(path, sizeof(path), "%s/%d.rec", dir, (int)getpid());
   out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
   if (out_fd < 0)
      fprintf(stderr, "gpud-hostrec: cannot write %s: %m\n", path);
   return out_fd >= 0;
}

struct hr *
hr_begin(const char *command)
{
   pthread_mutex_lock(&out_lock);
   bool on = open_output();
   pthread_mutex_unlock(&out_lock);
   /* (a recorded command the driver below calls on this thread is not
    * the caller's) */
   if (!on || thread_busy)
      return NULL;
   struct hr *h = &thread_record;
   h->out = open_memstream(&h->text, &h->text_len);
   if (!h->out)
      return NULL;
   thread_busy = true;
   h->len = 0;
   h->path[0] = '\0';
   fprintf(h->out, "@ %s\n", command);
   return h;
}

void
hr_end(struct hr *h, int64_t result, bool has_result)
{
   if (!h)
      return;
   if (has_result)
      fprintf(h->out, "= %" PRId64 "\n", result);
   fclose(h->out);
   pthread_mutex_lock(&out_lock);
   for (size_t done = 0; done < h->text_len;) {
      ssize_t n = write(out_fd, h->text + done, h->text_len - done);
      if (n <= 0)
         break;
      done += (size_t)n;
   }
   pthread_mutex_unlock(&out_lock);
   free(h->text);
   h->text = NULL;
   thread_busy = false;
}

void
hr_at(struct hr *h, size_t at, const char *name)
{
   size_t n = strlen(name);
   if (at + n >= sizeof(h->path))
      n = sizeof(h->path) - 1 - at;
   memcpy(h->path + at, name, n);
   h->len = at + n;
   h->path[h->len] = '\0';
}

void
hr_index(struct hr *h, size_t i)
{
   int n = snprintf(h->path + h->len, sizeof(h->path) - h->len, "[%zu]", i);
   if (n > 0 && h->len + (size_t)n < sizeof(h->path))
      h->len += (size_t)n;
}

void
hr_int(struct hr *h, int64_t v)
{
   fprintf(h->out, "%s = %" PRId64 "\n", h->path, v);
}

void
hr_uint(struct hr *h, uint64_t v)
{
   fprintf(h->out, "%s = %" PRIu64 "\n", h->path, v);
}

void
hr_hex(struct hr *h, uint64_t v)
{
   fprintf(h->out, "%s = 0x%" PRIx64 "\n", h->path, v);
}

void
hr_float(struct hr *h, double v)
{
   fprintf(h->out, "%s = %.9g\n", h->path, v);
}

void
hr_string(struct hr *h, const char *s)
{
   if (s)
      fprintf(h->out, "%s = \"%s\"\n", h->path, s);
   else
      hr_null(h);
}

void
hr_null(struct hr *h)
{
   fprintf(h->out, "%s = null\n", h->path);
}

void
hr_opaque(struct hr *h, bool present, const char *what)
{
   fprintf(h->out, "%s = %s\n", h->path, present ? what : "null");
}

void
hr_bytes(struct hr *h, const void *p, size_t n)
{
   uint64_t hash = 0xcbf29ce484222325ull;
   const unsigned char *b = p;
   for (size_t i = 0; i < n; i++)
      hash = (hash ^ b[i]) * 0x100000001b3ull;
   fprintf(h->out, "%s = <%zu bytes, %016" PRIx64 ">\n", h->path, n, hash);
}

void
hr_bytes_value(struct hr *h, const void *p, size_t n)
{
   const unsigned char *b = p;
   fprintf(h->out, "%s = ", h->path);
   for (size_t i = 0; i < n; i++)
      fprintf(h->out, "%02x", b[i]);
   fputc('\n', h->out);
}
