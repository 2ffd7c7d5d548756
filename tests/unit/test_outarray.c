/* SPDX-License-Identifier: MIT */
/* util_outarray: Vulkan's two-call arrays, counted, filled and cut short. */
#include "unit_test.h"
#include "util_outarray.h"

/* Five values 10..14 into data (NULL: the count), as an enumeration does. */
static bool
enumerate(uint32_t *count, uint32_t *data)
{
   struct util_outarray out;
   util_outarray_init(&out, data, count);
   for (uint32_t i = 0; i < 5; i++) {
      uint32_t *v = UTIL_OUTARRAY_NEXT(&out, uint32_t);
      if (v)
         *v = 10 + i;
   }
   return util_outarray_done(&out);
}

static void
test_count(void)
{
   uint32_t n = 99;
   CHECK(enumerate(&n, NULL));
   CHECK_EQ(n, 5);
}

static void
test_all(void)
{
   uint32_t data[8] = {0}, n = 8;
   CHECK(enumerate(&n, data));
   CHECK_EQ(n, 5);
   for (uint32_t i = 0; i < 5; i++)
      CHECK_EQ(data[i], 10 + i);
   CHECK_EQ(data[5], 0);
}

static void
test_short(void)
{
   uint32_t data[3] = {0, 0, 7}, n = 2;
   CHECK(!enumerate(&n, data));
   CHECK_EQ(n, 2);
   CHECK_EQ(data[0], 10);
   CHECK_EQ(data[1], 11);
   CHECK_EQ(data[2], 7); /* past the room given: untouched */
   n = 0;
   CHECK(!enumerate(&n, data));
   CHECK_EQ(n, 0);
}

UNIT_MAIN(UNIT_TEST(test_count), UNIT_TEST(test_all), UNIT_TEST(test_short))
