/* SPDX-License-Identifier: MIT */
/* util_list: order, removal while iterating, empty lists. */
#include "unit_test.h"
#include "util_list.h"

struct item {
   struct util_list link;
   int value;
};

static void
fill(struct util_list *head, struct item *items, int n)
{
   util_list_init(head);
   for (int i = 0; i < n; i++) {
      items[i].value = i;
      util_list_add_tail(head, &items[i].link);
   }
}

static void
test_order(void)
{
   struct util_list head;
   struct item items[5];
   fill(&head, items, 5);
   CHECK_EQ(util_list_length(&head), 5);
   int expect = 0;
   struct item *it;
   util_list_for_each(it, &head, link)
      CHECK_EQ(it->value, expect++);
   expect = 4;
   util_list_for_each_reverse_safe(it, &head, link)
      CHECK_EQ(it->value, expect--);
   CHECK_EQ(util_list_first(&head, struct item, link)->value, 0);
   struct item front = {.value = -1};
   util_list_add(&head, &front.link);
   CHECK_EQ(util_list_first(&head, struct item, link)->value, -1);
}

static void
test_remove_while_iterating(void)
{
   struct util_list head;
   struct item items[6];
   fill(&head, items, 6);
   struct item *it;
   util_list_for_each_safe(it, &head, link) {
      if (it->value % 2)
         util_list_remove(&it->link);
   }
   CHECK_EQ(util_list_length(&head), 3);
   util_list_for_each_reverse_safe(it, &head, link)
      util_list_remove(&it->link);
   CHECK(util_list_empty(&head));
   CHECK(util_list_first(&head, struct item, link) == NULL);
   /* removed links point at themselves: removing again is harmless */
   CHECK(!util_list_linked(&items[0].link));
   util_list_remove(&items[0].link);
   CHECK(util_list_empty(&head));
}

static void
test_empty_iteration(void)
{
   struct util_list head;
   util_list_init(&head);
   struct item *it;
   int n = 0;
   util_list_for_each_safe(it, &head, link)
      n++;
   util_list_for_each_reverse_safe(it, &head, link)
      n++;
   util_list_for_each(it, &head, link)
      n++;
   CHECK_EQ(n, 0);
}

UNIT_MAIN(UNIT_TEST(test_order), UNIT_TEST(test_remove_while_iterating),
          UNIT_TEST(test_empty_iteration))
