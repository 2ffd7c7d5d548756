/* SPDX-License-Identifier: MIT */
/*
 * Completions held back by gpudctl (inject delay-completions, gpud_inject.c)
 * told to the ICD, which answers some itself (the copies it makes,
 * icd_queue.c) and must then leave them to the worker: a thread of the
 * worker's sleeps on the status page's delay (the server wakes it when it
 * writes one) and says on each device's completion page whether one is
 * set (`hold`, protocol/wire_completion.h).
 */
#include "gpud_hold.h"

#include <pthread.h>
#include <stdlib.h>

#include "daemon_status.h"
#include "util_futex.h"
#include "wire_completion.h"

struct gpud_hold {
   pthread_mutex_t mutex;
   pthread_t thread;
   bool started;
   _Atomic bool stop;
   struct gpud_completion_header **pages; /* under mutex */
   uint32_t n_pages, cap_pages;
};

/* With the mutex held: every page says whether completions are held
 * back (a delay is set, or the devices are about to be lost). */
static void
hold_all(struct gpud_hold *w, bool hold)
{
   for (uint32_t i = 0; i < w->n_pages; i++)
      atomic_store(&w->pages[i]->hold, hold);
}

static void *
watch(void *data)
{
   struct gpud_context *ctx = data;
   struct gpud_hold *w = ctx->hold;
   struct daemon_status_inject *in = &ctx->status->inject;
   _Atomic uint32_t *seq = (_Atomic uint32_t *)&in->seq;
   while (!atomic_load(&w->stop)) {
      /* the word first: a change after this look wakes the sleep below */
      uint32_t seen = atomic_load(seq);
      bool hold = atomic_load(&in->delay_ms) || atomic_load(&in->lose_device);
      pthread_mutex_lock(&w->mutex);
      hold_all(w, hold);
      pthread_mutex_unlock(&w->mutex);
      /* the request is in effect: the server answers gpudctl now */
      atomic_store(&in->taken, seen);
      util_futex_wake((_Atomic uint32_t *)&in->taken);
      if (!atomic_load(&w->stop))
         util_futex_wait(seq, seen, 3600ull * 1000000000ull); /* (a backstop) */
   }
   return NULL;
}

void
gpud_hold_watch_page(struct gpud_context *ctx, struct gpud_completion_header *page)
{
   if (!ctx->status)
      return;
   struct gpud_hold *w = ctx->hold;
   if (!w) {
      w = calloc(1, sizeof(*w));
      if (!w)
         return;
      pthread_mutex_init(&w->mutex, NULL);
      ctx->hold = w; /* (the decoding thread's, as are the pages) */
   }
   pthread_mutex_lock(&w->mutex);
   if (w->n_pages == w->cap_pages) {
      uint32_t cap = w->cap_pages ? w->cap_pages * 2 : 4;
      void *pages = realloc(w->pages, cap * sizeof(*w->pages));
      if (!pages) {
         /* unwatched, it says hold: the ICD leaves its copies to the worker */
         atomic_store(&page->hold, 1);
         pthread_mutex_unlock(&w->mutex);
         return;
      }
      w->pages = pages;
      w->cap_pages = cap;
   }
   w->pages[w->n_pages++] = page;
   atomic_store(&page->hold, atomic_load(&ctx->status->inject.delay_ms) ||
                                atomic_load(&ctx->status->inject.lose_device));
   pthread_mutex_unlock(&w->mutex);
   if (!w->started) {
      /* (set first: the thread's first look answers whatever came before) */
      atomic_store(&ctx->status->inject.watching, 1);
      w->started = pthread_create(&w->thread, NULL, watch, ctx) == 0;
      if (!w->started) {
         atomic_store(&ctx->status->inject.watching, 0);
         atomic_store(&page->hold, 1);
      }
   }
}

void
gpud_hold_unwatch_page(struct gpud_context *ctx, struct gpud_completion_header *page)
{
   struct gpud_hold *w = ctx->hold;
   if (!w)
      return;
   pthread_mutex_lock(&w->mutex);
   for (uint32_t i = 0; i < w->n_pages; i++) {
      if (w->pages[i] == page) {
         w->pages[i] = w->pages[--w->n_pages];
         break;
      }
   }
   pthread_mutex_unlock(&w->mutex);
}

void
gpud_hold_end(struct gpud_context *ctx)
{
   struct gpud_hold *w = ctx->hold;
   if (!w)
      return;
   if (w->started) {
      atomic_store(&ctx->status->inject.watching, 0);
      atomic_store(&w->stop, true);
      /* (the word moves, so a thread about to sleep on it does not) */
      atomic_fetch_add(&ctx->status->inject.seq, 1);
      util_futex_wake((_Atomic uint32_t *)&ctx->status->inject.seq);
      pthread_join(w->thread, NULL);
   }
   pthread_mutex_destroy(&w->mutex);
   free(w->pages);
   free(w);
   ctx->hold = NULL;
}
