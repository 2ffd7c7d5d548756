/* SPDX-License-Identifier: MIT */
/*
 * Whether this machine's polls yield (few CPUs), and the adaptive polling
 * window (util_spin.h).
 */
#include "util_spin.h"

#include <pthread.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool yields;

static void
count_cpus(void)
{
   long n = sysconf(_SC_NPROCESSORS_ONLN);
   yields = n > 0 && n < UTIL_SPIN_MIN_CPUS;
}

bool
util_spin_yields(void)
{
   pthread_once(&once, count_cpus);
   return yields;
}

/* How long one epoch of util_spin_window's peaks lasts. */
#define SPIN_WINDOW_EPOCH_NS (10ull * 1000 * 1000)

static void
window_init(struct util_spin_window *w, uint64_t base_ns, uint64_t max_ns, bool may_adapt)
{
   *w = (struct util_spin_window){
      .base_ns = base_ns,
      .max_ns = max_ns > base_ns ? max_ns : base_ns,
      .adapts = may_adapt && max_ns > base_ns,
      .ns = base_ns,
   };
}

void
util_spin_window_init(struct util_spin_window *w, uint64_t base_ns, uint64_t max_ns)
{
   window_init(w, base_ns, max_ns, !util_spin_yields());
}

void
util_spin_window_init_yielding(struct util_spin_window *w, uint64_t base_ns, uint64_t max_ns,
                               uint64_t yield_max_ns)
{
   window_init(w, base_ns, util_spin_yields() ? yield_max_ns : max_ns, true);
}

void
util_spin_window_note(struct util_spin_window *w, uint64_t waited_ns, uint64_t now_ns)
{
   if (!w->adapts)
      return;
   if (waited_ns > w->max_ns) {
      w->peak_ns[0] = w->peak_ns[1] = 0;
      w->ns = w->base_ns;
      return;
   }
   if (now_ns >= w->epoch_end_ns) {
      w->peak_ns[1] = now_ns - w->epoch_end_ns < SPIN_WINDOW_EPOCH_NS ? w->peak_ns[0] : 0;
      w->peak_ns[0] = 0;
      w->epoch_end_ns = now_ns + SPIN_WINDOW_EPOCH_NS;
   }
   if (waited_ns > w->peak_ns[0])
      w->peak_ns[0] = waited_ns;
   uint64_t peak = w->peak_ns[0] > w->peak_ns[1] ? w->peak_ns[0] : w->peak_ns[1];
   uint64_t ns = 2 * peak;
   w->ns = ns < w->base_ns ? w->base_ns : ns > w->max_ns ? w->max_ns : ns;
}
