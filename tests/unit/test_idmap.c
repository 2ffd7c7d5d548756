/* SPDX-License-Identifier: MIT */
#include "unit_test.h"
#include "util_idmap.h"

/* Values are never dereferenced: encode the key in a fake pointer. */
static void *
val(uint64_t key)
{
   return (void *)(uintptr_t)(key * 2 + 1);
}

static uint64_t
random_key(uint64_t *state)
{
   /* xorshift64*: random-looking 64-bit ids, never 0 */
   uint64_t x = *state;
   x ^= x >> 12;
   x ^= x << 25;
   x ^= x >> 27;
   *state = x;
   uint64_t k = x * 0x2545f4914f6cdd1dull;
   return k ? k : 1;
}

static void
test_basic(void)
{
   struct util_idmap map;
   util_idmap_init(&map);

   /* Empty map. */
   CHECK(util_idmap_get(&map, 1) == NULL);
   CHECK(util_idmap_remove(&map, 1) == NULL);
   size_t it = 0;
   uint64_t k;
   void *v;
   CHECK(!util_idmap_next(&map, &it, &k, &v));

   CHECK_ERR(util_idmap_insert(&map, 0, val(0)), EINVAL);
   CHECK_ERR(util_idmap_insert(&map, 5, NULL), EINVAL);
   CHECK_EQ(map.count, 0);

   CHECK_OK(util_idmap_insert(&map, 5, val(5)));
   CHECK_OK(util_idmap_insert(&map, UINT64_MAX, val(7)));
   CHECK_ERR(util_idmap_insert(&map, 5, val(6)), EEXIST);
   CHECK_EQ(map.count, 2);
   CHECK(util_idmap_get(&map, 5) == val(5));
   CHECK(util_idmap_get(&map, UINT64_MAX) == val(7));
   CHECK(util_idmap_get(&map, 6) == NULL);
   CHECK(util_idmap_get(&map, 0) == NULL);

   CHECK(util_idmap_remove(&map, 5) == val(5));
   CHECK(util_idmap_remove(&map, 5) == NULL);
   CHECK(util_idmap_get(&map, 5) == NULL);
   CHECK_EQ(map.count, 1);
   CHECK_OK(util_idmap_insert(&map, 5, val(8)));
   CHECK(util_idmap_get(&map, 5) == val(8));

   util_idmap_finish(&map);
   CHECK_EQ(map.count, 0);
   CHECK_EQ(map.cap, 0);
   util_idmap_finish(&map);
   util_idmap_finish(NULL);
}

static void
test_iteration(void)
{
   struct util_idmap map;
   util_idmap_init(&map);
   enum { N = 1000 };
   uint64_t state = 42;
   static uint64_t keys[N];
   static bool seen[N];

   for (int i = 0; i < N; i++) {
      keys[i] = random_key(&state);
      CHECK_OK(util_idmap_insert(&map, keys[i], (void *)(uintptr_t)(i + 1)));
   }

   /* Every entry exactly once. */
   size_t it = 0;
   uint64_t k;
   void *v;
   int n = 0;
   while (util_idmap_next(&map, &it, &k, &v)) {
      int i = (int)(uintptr_t)v - 1;
      CHECK(i >= 0 && i < N);
      CHECK_EQ(keys[i], k);
      CHECK(!seen[i]);
      seen[i] = true;
      n++;
   }
   CHECK_EQ(n, N);
   /* Exhausted iterators stay exhausted. */
   CHECK(!util_idmap_next(&map, &it, &k, &v));

   /* Removing the entry just returned: remove the odd ones, still visit
    * every entry exactly once. */
   memset(seen, 0, sizeof(seen));
   n = 0;
   for (it = 0; util_idmap_next(&map, &it, &k, &v);) {
      int i = (int)(uintptr_t)v - 1;
      CHECK(!seen[i]);
      seen[i] = true;
      n++;
      if (i % 2)
         CHECK(util_idmap_remove(&map, k) == v);
   }
   CHECK_EQ(n, N);
   CHECK_EQ(map.count, N / 2);
   for (int i = 0; i < N; i++)
      CHECK(util_idmap_get(&map, keys[i]) == (i % 2 ? NULL : (void *)(uintptr_t)(i + 1)));

   /* Draining the whole map while iterating. */
   n = 0;
   for (it = 0; util_idmap_next(&map, &it, &k, NULL);) {
      CHECK(util_idmap_remove(&map, k) != NULL);
      n++;
   }
   CHECK_EQ(n, N / 2);
   CHECK_EQ(map.count, 0);
   it = 0;
   CHECK(!util_idmap_next(&map, &it, NULL, NULL));

   util_idmap_finish(&map);
}

static void
test_growth(void)
{
   struct util_idmap map;
   util_idmap_init(&map);
   enum { N = 100000 };
   uint64_t state = 1;

   for (int i = 0; i < N; i++) {
      uint64_t key = random_key(&state);
      CHECK_OK(util_idmap_insert(&map, key, val(key)));
      CHECK(map.used * 10 <= map.cap * 7);
   }
   CHECK_EQ(map.count, N);
   CHECK((map.cap & (map.cap - 1)) == 0);
   CHECK(map.cap <= 4 * (size_t)N);

   state = 1;
   for (int i = 0; i < N; i++) {
      uint64_t key = random_key(&state);
      CHECK(util_idmap_get(&map, key) == val(key));
      CHECK_ERR(util_idmap_insert(&map, key, val(key)), EEXIST);
   }
   CHECK(util_idmap_get(&map, 0x1234) == NULL);

   /* Sequential keys: the hash must spread them too. */
   struct util_idmap seq;
   util_idmap_init(&seq);
   for (uint64_t key = 1; key <= N; key++)
      CHECK_OK(util_idmap_insert(&seq, key, val(key)));
   for (uint64_t key = 1; key <= N; key++)
      CHECK(util_idmap_get(&seq, key) == val(key));
   for (uint64_t key = 1; key <= N; key += 2)
      CHECK(util_idmap_remove(&seq, key) == val(key));
   for (uint64_t key = 1; key <= N; key++)
      CHECK(util_idmap_get(&seq, key) == (key % 2 ? NULL : val(key)));
   CHECK_EQ(seq.count, N / 2);
   util_idmap_finish(&seq);

   state = 1;
   for (int i = 0; i < N; i++) {
      uint64_t key = random_key(&state);
      CHECK(util_idmap_remove(&map, key) == val(key));
   }
   CHECK_EQ(map.count, 0);
   util_idmap_finish(&map);
}

static void
test_tombstones(void)
{
   struct util_idmap map;
   util_idmap_init(&map);
   enum { N = 1000 };
   uint64_t state = 99;

   uint64_t keys[N];
   for (int i = 0; i < N; i++) {
      keys[i] = random_key(&state);
      CHECK_OK(util_idmap_insert(&map, keys[i], val(keys[i])));
   }
   size_t cap = map.cap;

   /* Remove everything and insert the same keys again: the table reuses
    * the slots instead of growing. */
   for (int i = 0; i < N; i++)
      CHECK(util_idmap_remove(&map, keys[i]) == val(keys[i]));
   CHECK_EQ(map.count, 0);
   CHECK(map.used <= (size_t)N);
   for (int i = 0; i < N; i++)
      CHECK_OK(util_idmap_insert(&map, keys[i], val(keys[i])));
   CHECK_EQ(map.cap, cap);
   CHECK_EQ(map.count, N);
   for (int i = 0; i < N; i++)
      CHECK(util_idmap_get(&map, keys[i]) == val(keys[i]));

   /* Churn: a steady 1000 live entries while 200000 distinct keys come and
    * go.  Tombstones must be recycled by rehashing, not grow the table. */
   for (int round = 0; round < 200000; round++) {
      int i = round % N;
      CHECK(util_idmap_remove(&map, keys[i]) == val(keys[i]));
      keys[i] = random_key(&state);
      CHECK_OK(util_idmap_insert(&map, keys[i], val(keys[i])));
      CHECK(map.used * 10 <= map.cap * 7);
   }
   CHECK_EQ(map.count, N);
   CHECK(map.cap <= 2 * cap);
   for (int i = 0; i < N; i++)
      CHECK(util_idmap_get(&map, keys[i]) == val(keys[i]));

   size_t it = 0;
   int n = 0;
   while (util_idmap_next(&map, &it, NULL, NULL))
      n++;
   CHECK_EQ(n, N);

   util_idmap_finish(&map);
}

UNIT_MAIN(UNIT_TEST(test_basic), UNIT_TEST(test_iteration), UNIT_TEST(test_growth),
          UNIT_TEST(test_tombstones))
