/* SPDX-License-Identifier: MIT */
/* util_idtable: ids inserted, found, removed and reused, from threads. */
#include <pthread.h>

#include "unit_test.h"
#include "util_idtable.h"

/* Values are never dereferenced: encode the id in a fake pointer. */
static void *
val(uint64_t id)
{
   return (void *)(uintptr_t)(id * 2 + 1);
}

static size_t
n_pages(const struct util_idtable *t)
{
   size_t n = 0;
   for (const struct util_idtable_page *p = t->pages; p; p = p->next)
      n++;
   return n;
}

static void
test_basic(void)
{
   struct util_idtable t;
   CHECK_OK(util_idtable_init(&t));

   CHECK(util_idtable_get(&t, 1) == NULL);
   CHECK(util_idtable_remove(&t, 1) == NULL);
   CHECK_ERR(util_idtable_insert(&t, 0, val(0)), EINVAL);
   CHECK_ERR(util_idtable_insert(&t, 5, NULL), EINVAL);
   CHECK_ERR(util_idtable_insert(&t, UTIL_IDTABLE_MAX_ID + 1, val(1)), EINVAL);
   CHECK_ERR(util_idtable_insert(&t, UINT64_MAX, val(1)), EINVAL);
   CHECK(util_idtable_get(&t, UINT64_MAX) == NULL);
   CHECK_EQ(t.count, 0);

   CHECK_OK(util_idtable_insert(&t, 5, val(5)));
   CHECK_OK(util_idtable_insert(&t, UTIL_IDTABLE_MAX_ID, val(7)));
   CHECK_OK(util_idtable_insert(&t, 1ull << 32, val(9)));
   CHECK_ERR(util_idtable_insert(&t, 5, val(6)), EEXIST);
   CHECK_EQ(t.count, 3);
   CHECK(util_idtable_get(&t, 5) == val(5));
   CHECK(util_idtable_get(&t, UTIL_IDTABLE_MAX_ID) == val(7));
   CHECK(util_idtable_get(&t, 1ull << 32) == val(9));
   CHECK(util_idtable_get(&t, 6) == NULL);
   CHECK(util_idtable_get(&t, 0) == NULL);
   CHECK(util_idtable_get(&t, (1ull << 32) + 5) == NULL);

   CHECK(util_idtable_remove(&t, 5) == val(5));
   CHECK(util_idtable_remove(&t, 5) == NULL);
   CHECK(util_idtable_get(&t, 5) == NULL);
   CHECK_EQ(t.count, 2);
   util_idtable_finish(&t);
   util_idtable_finish(&t); /* twice is harmless */
}

/* Ids from a counter, as a client hands them out: pages come as ids
 * arrive and go once every id of theirs is removed, so a client that
 * creates and destroys for ever holds only the pages of its live ids. */
static void
test_churn(void)
{
   struct util_idtable t;
   CHECK_OK(util_idtable_init(&t));
   enum { LIVE = 1000 };
   uint64_t next = 1;
   for (; next <= LIVE; next++)
      CHECK_OK(util_idtable_insert(&t, next, val(next)));
   for (int round = 0; round < 300000; round++) {
      uint64_t old = next - LIVE;
      CHECK(util_idtable_remove(&t, old) == val(old));
      CHECK_OK(util_idtable_insert(&t, next, val(next)));
      next++;
      CHECK(n_pages(&t) <= 2);
   }
   CHECK_EQ(t.count, LIVE);
   for (uint64_t id = next - LIVE; id < next; id++)
      CHECK(util_idtable_get(&t, id) == val(id));
   for (uint64_t id = 1; id < next - LIVE; id += 997)
      CHECK(util_idtable_get(&t, id) == NULL);
   util_idtable_finish(&t);
}

/* Readers look ids up while the writer inserts: every id they find holds
 * its value, and every id inserted before a reader started is found. */
struct reader {
   struct util_idtable *t;
   _Atomic uint64_t *published;
   atomic_bool *stop;
   uint64_t bad;
};

static void *
reader_main(void *data)
{
   struct reader *r = data;
   while (!atomic_load(r->stop)) {
      uint64_t n = atomic_load_explicit(r->published, memory_order_acquire);
      for (uint64_t id = n > 64 ? n - 64 : 1; id <= n + 64; id++) {
         void *v = util_idtable_get(r->t, id);
         if ((id <= n && v != val(id)) || (v && v != val(id)))
            r->bad++;
      }
   }
   return NULL;
}

static void
test_concurrent_readers(void)
{
   struct util_idtable t;
   CHECK_OK(util_idtable_init(&t));
   _Atomic uint64_t published = 0;
   atomic_bool stop = false;
   struct reader readers[2];
   pthread_t threads[2];
   for (int i = 0; i < 2; i++) {
      readers[i] = (struct reader){.t = &t, .published = &published, .stop = &stop};
      CHECK(pthread_create(&threads[i], NULL, reader_main, &readers[i]) == 0);
   }
   for (uint64_t id = 1; id <= 200000; id++) {
      CHECK_OK(util_idtable_insert(&t, id, val(id)));
      atomic_store_explicit(&published, id, memory_order_release);
   }
   atomic_store(&stop, true);
   for (int i = 0; i < 2; i++) {
      pthread_join(threads[i], NULL);
      CHECK_EQ(readers[i].bad, 0);
   }
   util_idtable_finish(&t);
}

UNIT_MAIN(UNIT_TEST(test_basic), UNIT_TEST(test_churn), UNIT_TEST(test_concurrent_readers))
