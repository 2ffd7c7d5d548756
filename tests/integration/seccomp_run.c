/* SPDX-License-Identifier: MIT */
/*
 * seccomp_run ALLOWED COMMAND [ARG]...: runs COMMAND under a system-call
 * filter that allows the calls named in the file ALLOWED (one a line) and
 * fails every other with EPERM, with no_new_privs set: what systemd applies
 * for SystemCallFilter= (an allow list), SystemCallErrorNumber=EPERM,
 * SystemCallArchitectures=native and NoNewPrivileges=yes.  The systemd test
 * expands the unit's own filter into ALLOWED and runs gpud under it, so
 * the filter is checked with the host drivers where no systemd runs them.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
   if (argc < 3) {
      fprintf(stderr, "usage: seccomp_run ALLOWED COMMAND [ARG]...\n");
      return 2;
   }
   FILE *f = fopen(argv[1], "re");
   if (!f) {
      fprintf(stderr, "seccomp_run: %s: %s\n", argv[1], strerror(errno));
      return 2;
   }
   scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
   if (!ctx) {
      fclose(f);
      return 2;
   }
   char line[128];
   unsigned allowed = 0;
   while (fgets(line, sizeof(line), f)) {
      line[strcspn(line, " \t\r\n")] = '\0';
      if (!line[0] || line[0] == '#')
         continue;
      int nr = seccomp_syscall_resolve_name(line);
      if (nr == __NR_SCMP_ERROR)
         continue; /* not a call of this architecture */
      if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) == 0)
         allowed++;
   }
   fclose(f);
   int r = seccomp_load(ctx);
   seccomp_release(ctx);
   if (r < 0) {
      fprintf(stderr, "seccomp_run: cannot load the filter: %s\n", strerror(-r));
      return 2;
   }
   fprintf(stderr, "seccomp_run: %u system calls allowed\n", allowed);
   execvp(argv[2], argv + 2);
   fprintf(stderr, "seccomp_run: %s: %s\n", argv[2], strerror(errno));
   return 127;
}
