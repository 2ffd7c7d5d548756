/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Intrusive doubly-linked lists with a sentinel head (the shape of Mesa's
 * list.h and wayland's wl_list): a struct util_list is embedded in each
 * element and the head is a struct util_list of its own.  An unlinked
 * element's link points at itself, so removing it twice is harmless.
 */

#include <stdbool.h>
#include <stddef.h>

#include "util_macros.h"

struct util_list {
   struct util_list *prev, *next;
};

static inline void
util_list_init(struct util_list *list)
{
   list->prev = list->next = list;
}

static inline bool
util_list_empty(const struct util_list *list)
{
   return list->next == list;
}

/* Whether an element initialised with util_list_init (or removed) is in a
 * list. */
static inline bool
util_list_linked(const struct util_list *link)
{
   return link->next != link;
}

static inline void
util_list_insert_after(struct util_list *pos, struct util_list *link)
{
   link->prev = pos;
   link->next = pos->next;
   pos->next->prev = link;
   pos->next = link;
}

/* Appends at the end (the newest element is head->prev). */
static inline void
util_list_add_tail(struct util_list *head, struct util_list *link)
{
   util_list_insert_after(head->prev, link);
}

static inline void
util_list_add(struct util_list *head, struct util_list *link)
{
   util_list_insert_after(head, link);
}

static inline void
util_list_remove(struct util_list *link)
{
   link->prev->next = link->next;
   link->next->prev = link->prev;
   util_list_init(link);
}

static inline size_t
util_list_length(const struct util_list *head)
{
   size_t n = 0;
   for (const struct util_list *l = head->next; l != head; l = l->next)
      n++;
   return n;
}

#define util_list_entry(link, type, member) util_container_of(link, type, member)

#define util_list_first(head, type, member)                                                \
   (util_list_empty(head) ? NULL : util_list_entry((head)->next, type, member))

/* Oldest to newest; the current element may be removed (not its successor).
 * pos is a variable the caller declared. */
#define util_list_for_each_safe(pos, head, member)                                         \
   for (__typeof__(pos) pos##_next =                                                       \
           (pos = util_list_entry((head)->next, __typeof__(*pos), member),                 \
            util_list_entry(pos->member.next, __typeof__(*pos), member));                  \
        &pos->member != (head);                                                            \
        pos = pos##_next,                                                                  \
        pos##_next = util_list_entry(pos##_next->member.next, __typeof__(*pos), member))

/* Newest to oldest; the current element may be removed (not its predecessor). */
#define util_list_for_each_reverse_safe(pos, head, member)                                 \
   for (__typeof__(pos) pos##_prev =                                                       \
           (pos = util_list_entry((head)->prev, __typeof__(*pos), member),                 \
            util_list_entry(pos->member.prev, __typeof__(*pos), member));                  \
        &pos->member != (head);                                                            \
        pos = pos##_prev,                                                                  \
        pos##_prev = util_list_entry(pos##_prev->member.prev, __typeof__(*pos), member))

#define util_list_for_each(pos, head, member)                                              \
   for (pos = util_list_entry((head)->next, __typeof__(*pos), member);                     \
        &pos->member != (head); pos = util_list_entry(pos->member.next, __typeof__(*pos), member))
