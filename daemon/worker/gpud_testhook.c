/* SPDX-License-Identifier: MIT */
/*
 * vkTestSyscallGPUD: a system call run in the worker, as code that took
 * the worker over (through a host driver's bug) would run it, so that a
 * test can show what such code cannot reach: another user's workers and
 * caches, the server's state (tests/integration/identity_test.py).  Built
 * only with -Dtest_hooks=true; any other build takes the command for a
 * client's protocol error.
 *
 * The arguments are numbers, except those dataArgs marks: those are
 * offsets into a copy of pData in the worker's memory (a path, a buffer
 * to read into), with a page of zeroes after it.  The result is the
 * call's, or -errno.
 */
#include "gpud_call.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void
gpud_exec_vkTestSyscallGPUD(struct gpud_call *call, struct wire_args_vkTestSyscallGPUD *a)
{
#ifdef GPUD_TEST_HOOKS
   enum { MAX_ARGS = 6, ROOM = 4096 };
   if (a->argCount > MAX_ARGS) {
      gpud_call_fail(call, "vkTestSyscallGPUD: more than 6 arguments");
      return;
   }
   char *data = calloc(1, (size_t)a->dataSize + ROOM);
   if (!data) {
      *a->pResult = -ENOMEM;
      return;
   }
   if (a->dataSize && a->pData)
      memcpy(data, a->pData, a->dataSize);
   long args[MAX_ARGS] = {0};
   for (uint32_t i = 0; i < a->argCount; i++) {
      uint64_t v = a->pArgs[i];
      if (a->dataArgs & (1u << i)) {
         if (v > (uint64_t)a->dataSize + ROOM - 1) {
            free(data);
            gpud_call_fail(call, "vkTestSyscallGPUD: an offset past the data");
            return;
         }
         v = (uint64_t)(uintptr_t)(data + v);
      }
      args[i] = (long)v;
   }
   errno = 0;
   long r = syscall((long)a->number, args[0], args[1], args[2], args[3], args[4], args[5]);
   *a->pResult = r < 0 ? -(int64_t)errno : r;
   gpud_context_log(call->ctx, UTIL_LOG_NOTICE, "test hook: system call %llu: %lld",
                    (unsigned long long)a->number, (long long)*a->pResult);
   free(data);
#else
   (void)a;
   gpud_call_fail(call, "vkTestSyscallGPUD: this build has no test hooks (-Dtest_hooks)");
#endif
}
