/* SPDX-License-Identifier: MIT */
/*
 * vk_takeover: system calls made in this client's worker, as code that
 * took the worker over through a host driver's bug would make them
 * (vkTestSyscallGPUD, in builds with -Dtest_hooks=true only).  For
 * identity_test.py, which shows that such code cannot reach another
 * user's workers and caches, nor the server's state.
 *
 * After "ready", one call per line on stdin, its answer on stdout:
 *
 *   NAME ARG...    NAME a system call this program knows (open, openat,
 *                  getdents64, unlinkat, mkdirat, write, read, close, kill,
 *                  ptrace, setpriority, sched_setaffinity, getpid, getuid,
 *                  getgid, pidfd_open, pidfd_send_signal, process_vm_readv,
 *                  setresuid, prctl) or a number; each ARG a number, or
 *                  s:TEXT (the text, nul-terminated, in the worker's
 *                  memory), or b:SIZE (SIZE zero bytes there)
 *   = RESULT       the call's result, or -errno (e.g. -13: EACCES)
 *
 * "none" alone when the ICD hands out no vkTestSyscallGPUD (a build
 * without test hooks, or lavapipe directly).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "vkt_common.h"

typedef void(VKAPI_PTR *PFN_vkTestSyscallGPUD)(VkDevice device, uint64_t number,
                                               uint32_t argCount, const uint64_t *pArgs,
                                               uint32_t dataArgs, uint32_t dataSize,
                                               const void *pData, int64_t *pResult);

static const struct {
   const char *name;
   long nr;
} calls[] = {
   {"open", SYS_open},
   {"openat", SYS_openat},
   {"getdents64", SYS_getdents64},
   {"unlinkat", SYS_unlinkat},
   {"mkdirat", SYS_mkdirat},
   {"write", SYS_write},
   {"read", SYS_read},
   {"close", SYS_close},
   {"kill", SYS_kill},
   {"ptrace", SYS_ptrace},
   {"setpriority", SYS_setpriority},
   {"sched_setaffinity", SYS_sched_setaffinity},
   {"getpid", SYS_getpid},
   {"getuid", SYS_getuid},
   {"getgid", SYS_getgid},
   {"pidfd_open", SYS_pidfd_open},
   {"pidfd_send_signal", SYS_pidfd_send_signal},
   {"process_vm_readv", SYS_process_vm_readv},
   {"setresuid", SYS_setresuid},
   {"prctl", SYS_prctl},
};

int
main(int argc, char **argv)
{
   vkt_set_prog("vk_takeover");
   struct vkt_context ctx;
   vkt_context_init(&ctx, "vk_takeover", NULL, 0);
   PFN_vkTestSyscallGPUD call =
      (PFN_vkTestSyscallGPUD)vkGetDeviceProcAddr(ctx.device, "vkTestSyscallGPUD");
   if (!call) {
      printf("none\n");
      vkt_context_finish(&ctx);
      return 0;
   }
   printf("ready\n");
   fflush(stdout);
   char line[4096];
   while (fgets(line, sizeof(line), stdin)) {
      line[strcspn(line, "\n")] = '\0';
      if (!strcmp(line, "quit"))
         break;
      char *save = NULL, *tok = strtok_r(line, " ", &save);
      if (!tok)
         continue;
      long nr = -1;
      for (size_t i = 0; i < VKT_ARRAY_SIZE(calls); i++) {
         if (!strcmp(tok, calls[i].name))
            nr = calls[i].nr;
      }
      if (nr < 0)
         nr = (long)vkt_parse_u64("a system call", tok);
      uint64_t args[6] = {0};
      uint32_t n = 0, data_args = 0, size = 0;
      static char data[2048];
      memset(data, 0, sizeof(data));
      while ((tok = strtok_r(NULL, " ", &save)) && n < 6) {
         if (!strncmp(tok, "s:", 2) || !strncmp(tok, "b:", 2)) {
            size_t len = tok[0] == 's' ? strlen(tok + 2) + 1 : (size_t)strtoull(tok + 2, NULL, 10);
            if (size + len > sizeof(data))
               vkt_fail("too much data on one line");
            if (tok[0] == 's')
               memcpy(data + size, tok + 2, len);
            args[n] = size;
            data_args |= 1u << n;
            size += (uint32_t)((len + 7) & ~(size_t)7);
         } else {
            args[n] = (uint64_t)strtoll(tok, NULL, 0);
         }
         n++;
      }
      int64_t result = 0;
      call(ctx.device, (uint64_t)nr, n, args, data_args, size, data, &result);
      printf("= %" PRId64 "\n", result);
      fflush(stdout);
   }
   vkt_context_finish(&ctx);
   return 0;
}
