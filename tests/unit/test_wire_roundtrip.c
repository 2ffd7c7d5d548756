/* SPDX-License-Identifier: MIT */
/*
 * An encode/decode round trip for every generated command: the cases come
 * from protocol/gen_roundtrip.py, this file is their harness.  Prints one
 * line per failing command and ends with "N passed, N failed".  Each case
 * runs in a child process of its own, so a crash fails its command only.
 * Run the case of one command with `test_wire_roundtrip vkFoo`.
 */
#include "test_wire_roundtrip.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child's exit status when it failed and said why. */
#define RT_EXIT_FAILED 3

/* Object headers behind pointer handles: the sample call's, and the "host
 * handles" the lookup callback hands out (one per id, so decoding the same
 * id twice gives the same handle). */
enum { RT_POOL_SIZE = 4096 };
static struct wire_object_header sample_pool[RT_POOL_SIZE];
static unsigned sample_used;
static struct wire_object_header host_pool[RT_POOL_SIZE];
static unsigned host_used;
static struct rt *current;

void
rt_fail(struct rt *t, const char *fmt, ...)
{
   if (t->failed)
      return;
   t->failed = true;
   printf("FAILED %s (%s call): ", t->cmd, t->variant);
   va_list ap;
   va_start(ap, fmt);
   vprintf(fmt, ap);
   va_end(ap);
   putchar('\n');
}

bool
rt_differs(struct rt *t, const char *what)
{
   rt_fail(t, "decoded %s differs from what was encoded", what);
   return false;
}

void
rt_begin(struct rt *t, const char *cmd, const char *variant)
{
   t->cmd = cmd;
   t->variant = variant;
   wire_enc_reset(&t->a);
   wire_enc_reset(&t->b);
   wire_enc_reset(&t->r);
   wire_enc_reset(&t->r2);
   wire_arena_reset(t->arena);
   sample_used = 0;
   host_used = 0;
}

void *
rt_obj(uint64_t id)
{
   static struct wire_object_header spare;
   if (sample_used == RT_POOL_SIZE) {
      rt_fail(current, "sample object pool exhausted");
      return &spare;
   }
   struct wire_object_header *h = &sample_pool[sample_used++];
   h->loader_data = 0;
   h->id = id;
   return h;
}

uint64_t
rt_host(uint64_t id, VkObjectType type)
{
   static struct wire_object_header spare;
   if (!rt_is_pointer_type(type))
      return id;
   for (unsigned i = 0; i < host_used; i++) {
      if (host_pool[i].id == id)
         return (uint64_t)(uintptr_t)&host_pool[i];
   }
   if (host_used == RT_POOL_SIZE) {
      rt_fail(current, "host object pool exhausted");
      return (uint64_t)(uintptr_t)&spare;
   }
   struct wire_object_header *h = &host_pool[host_used++];
   h->loader_data = 0;
   h->id = id;
   return (uint64_t)(uintptr_t)h;
}

static uint64_t
lookup(struct wire_dec *d, uint64_t id, VkObjectType type)
{
   (void)d;
   return rt_host(id, type);
}

static bool
new_id(struct wire_dec *d, uint64_t id)
{
   (void)d;
   return id != 0;
}

static void
dec_init(struct wire_dec *d, const void *data, size_t size, struct wire_arena *arena)
{
   wire_dec_init(d, data, size, arena);
   d->lookup = lookup;
   d->new_id = new_id;
}

void
rt_dec_init(struct rt *t, struct wire_dec *d, const struct wire_enc *e)
{
   dec_init(d, e->data, e->size, t->arena);
   d->user = t;
   /* fds "travel" as the numbers the encoder was given */
   memcpy(t->fds, e->fds, sizeof(t->fds));
   d->fds = t->fds;
   d->n_fds = e->n_fds;
}

bool
rt_dec_done(struct rt *t, const struct wire_dec *d, bool ok, const char *what)
{
   if (!ok || d->fatal) {
      rt_fail(t, "%s: decode failed (%s)", what, d->error ? d->error : "no reason given");
      return false;
   }
   if (wire_dec_remaining(d)) {
      rt_fail(t, "%s: %zu bytes left after decoding", what, wire_dec_remaining(d));
      return false;
   }
   return true;
}

bool
rt_same(struct rt *t, const struct wire_enc *x, const struct wire_enc *y, const char *what)
{
   if (x->oom || y->oom) {
      rt_fail(t, "%s: encoder out of memory", what);
      return false;
   }
   size_t n = x->size < y->size ? x->size : y->size;
   size_t i = 0;
   while (i < n && x->data[i] == y->data[i])
      i++;
   if (i == n && x->size == y->size)
      return true;
   if (i == n)
      rt_fail(t, "%s: %zu bytes, expected %zu", what, y->size, x->size);
   else
      rt_fail(t, "%s: differs at byte %zu of %zu", what, i, x->size);
   return false;
}

/* Decodes size bytes from an allocation of exactly that size, so that the
 * sanitizers see any read past the end. */
static bool
decode_exact(struct rt *t, rt_decode_fn decode, const uint8_t *data, size_t size,
             const char **error)
{
   uint8_t *copy = malloc(size ? size : 1);
   if (!copy) {
      rt_fail(t, "out of memory");
      return false;
   }
   if (size)
      memcpy(copy, data, size);
   wire_arena_reset(t->scratch);
   struct wire_dec d;
   dec_init(&d, copy, size, t->scratch);
   bool ok = decode(&d);
   *error = d.error;
   bool fatal = d.fatal;
   free(copy);
   return ok || !fatal;
}

void
rt_truncations(struct rt *t, rt_decode_fn decode)
{
   for (size_t n = 0; n < t->a.size; n += 4) {
      const char *error;
      t->stats->truncations++;
      if (decode_exact(t, decode, t->a.data, n, &error)) {
         rt_fail(t, "the first %zu of %zu bytes decoded without a fatal error", n, t->a.size);
         return;
      }
   }
}

/* A bounded fuzz: words of the request replaced by values that tend to
 * matter (counts, presence words, sTypes, ids).  Whatever the decoder says
 * is fine; it must not read or write out of bounds (the sanitizer run sees
 * to that) nor crash.  RT_MUTATIONS sets how many per sample call. */
void
rt_mutations(struct rt *t, rt_decode_fn decode)
{
   static unsigned rounds;
   if (!rounds) {
      const char *env = getenv("RT_MUTATIONS");
      rounds = env ? (unsigned)strtoul(env, NULL, 10) : 64;
      if (!rounds)
         rounds = 1;
   }
   size_t words = t->a.size / 4;
   if (!words)
      return;
   uint8_t *copy = malloc(t->a.size);
   if (!copy) {
      rt_fail(t, "out of memory");
      return;
   }
   static const uint32_t values[] = {0, 1, 2, 3, 4, 0x10000, 0x7fffffff, 0x80000000u,
                                     0xffffffffu, 1000000000};
   uint32_t seed = 0x2545f491u ^ (uint32_t)t->a.size;
   for (unsigned r = 0; r < rounds; r++) {
      memcpy(copy, t->a.data, t->a.size);
      unsigned n = 1 + r % 4;
      for (unsigned k = 0; k < n; k++) {
         seed = seed * 1664525u + 1013904223u;
         size_t w = (seed >> 8) % words;
         seed = seed * 1664525u + 1013904223u;
         uint32_t v = (seed & 1) ? values[(seed >> 1) % UTIL_ARRAY_SIZE(values)] : seed;
         memcpy(copy + w * 4, &v, 4);
      }
      const char *error;
      t->stats->mutations++;
      decode_exact(t, decode, copy, t->a.size, &error);
   }
   free(copy);
}

void
rt_corrupt_count(struct rt *t, rt_decode_fn decode, size_t offset, uint32_t expect,
                 const char *what)
{
   uint32_t v;
   if (offset + 4 > t->a.size) {
      rt_fail(t, "%s: offset %zu is past the end", what, offset);
      return;
   }
   memcpy(&v, t->a.data + offset, 4);
   if (v != expect) {
      rt_fail(t, "%s: %u at offset %zu, expected %u", what, v, offset, expect);
      return;
   }
   uint8_t *copy = malloc(t->a.size);
   if (!copy) {
      rt_fail(t, "out of memory");
      return;
   }
   static const uint32_t wrong[] = {0, 1, 3, 0x10000, 0x40000000, 0xffffffffu};
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(wrong); i++) {
      if (wrong[i] == expect)
         continue;
      memcpy(copy, t->a.data, t->a.size);
      memcpy(copy + offset, &wrong[i], 4);
      const char *error;
      t->stats->corruptions++;
      if (decode_exact(t, decode, copy, t->a.size, &error)) {
         rt_fail(t, "%s changed to %u decoded without a fatal error", what, wrong[i]);
         break;
      }
   }
   free(copy);
}

void
rt_fill_bytes(void *p, size_t n, uint32_t *seed)
{
   uint8_t *b = p;
   for (size_t i = 0; i < n; i++)
      b[i] = (uint8_t)(rt_u32(seed) >> 7);
}

/* Runs one case in a child process, so that a crash (or a sanitizer
 * report) fails that command only.  Returns whether it passed. */
static bool
run_case(struct rt *t, const struct rt_case *c)
{
   fflush(stdout);
   fflush(stderr);
   pid_t pid = fork();
   if (pid < 0) {
      perror("fork");
      exit(1);
   }
   if (pid == 0) {
      c->run(t);
      fflush(stdout);
      _exit(t->failed ? RT_EXIT_FAILED : 0);
   }
   int status;
   while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) {
         perror("waitpid");
         exit(1);
      }
   }
   if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return true;
   if (WIFSIGNALED(status))
      printf("FAILED %s: killed by signal %d\n", c->name, WTERMSIG(status));
   else if (WEXITSTATUS(status) != RT_EXIT_FAILED)
      printf("FAILED %s: exit status %d\n", c->name, WEXITSTATUS(status));
   return false;
}

int
main(int argc, char **argv)
{
   struct rt t;
   memset(&t, 0, sizeof(t));
   current = &t;
   wire_enc_init(&t.a);
   wire_enc_init(&t.b);
   wire_enc_init(&t.r);
   wire_enc_init(&t.r2);
   t.arena = wire_arena_create(64u << 20);
   t.scratch = wire_arena_create(64u << 20);
   /* The children's statistics. */
   t.stats = mmap(NULL, sizeof(*t.stats), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                  -1, 0);
   if (!t.arena || !t.scratch || t.stats == MAP_FAILED) {
      fprintf(stderr, "out of memory\n");
      return 1;
   }
   memset(t.stats, 0, sizeof(*t.stats));

   unsigned passed = 0, failed = 0;
   for (unsigned i = 0; i < rt_case_count; i++) {
      if (argc > 1 && strcmp(argv[1], rt_cases[i].name) != 0)
         continue;
      if (run_case(&t, &rt_cases[i]))
         passed++;
      else
         failed++;
   }

   if (passed + failed == 0) {
      fprintf(stderr, "no command named %s\n", argc > 1 ? argv[1] : "(none)");
      return 1;
   }
   printf("# %u truncated and %u corrupted requests rejected, %u mutated ones survived\n",
          t.stats->truncations, t.stats->corruptions, t.stats->mutations);
   printf("%u passed, %u failed\n", passed, failed);

   munmap(t.stats, sizeof(*t.stats));
   wire_enc_finish(&t.a);
   wire_enc_finish(&t.b);
   wire_enc_finish(&t.r);
   wire_enc_finish(&t.r2);
   wire_arena_destroy(t.arena);
   wire_arena_destroy(t.scratch);
   return failed ? 1 : 0;
}
