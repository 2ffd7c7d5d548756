/* SPDX-License-Identifier: MIT */
#pragma once

/* Threads started detached. */

#include <pthread.h>

/* Starts fn(arg) on a detached thread; 0 or a positive pthread error. */
static inline int
util_thread_start_detached(void *(*fn)(void *), void *arg)
{
   pthread_attr_t attr;
   int r = pthread_attr_init(&attr);
   if (r)
      return r;
   pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
   pthread_t thread;
   r = pthread_create(&thread, &attr, fn, arg);
   pthread_attr_destroy(&attr);
   return r;
}
