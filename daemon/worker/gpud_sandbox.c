/* SPDX-License-Identifier: MIT */
/*
 * The worker's system-call filter.  A worker runs a host driver on input a
 * client chose, so the threat is a client that gets code running in its
 * worker through a driver bug.  The worker already runs as an unprivileged
 * user, with no new privileges, not dumpable (so other processes of that
 * user, such as other clients' workers, cannot read or trace it); this
 * filter takes away what such code could use to reach further: running
 * programs, tracing or signalling other processes, the network and
 * connections to local services, new processes and namespaces, and the
 * kernel's administrative interfaces.
 *
 * (clone's flags are its first argument on x86-64 and arm64, the machines
 * gpud is built for; s390x would need the second.)
 *
 * It is a deny list: host drivers open device nodes, map memory, issue
 * ioctls and start threads in ways no allow list can predict across
 * vendors, and a denied call they might make fails with EPERM instead of
 * killing the worker.  See docs/security.md.
 */
#include "gpud_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "util_log.h"
#include "util_macros.h"

/* Denied outright (EPERM).  Names the architecture lacks are skipped. */
static const char *const denied[] = {
   /* other programs and processes */
   "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
   "pidfd_getfd", "pidfd_send_signal", "tkill", "kcmp", "process_madvise",
   /* namespaces, mounts, identities */
   "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
   "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
   /* io_uring does I/O (sockets too) the filter cannot see */
   "io_uring_setup", "io_uring_enter", "io_uring_register",
   /* the kernel's administrative interfaces */
   "bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
   "delete_module", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
   "clock_adjtime", "adjtimex", "syslog", "quotactl", "quotactl_fd", "keyctl", "add_key",
   "request_key", "userfaultfd", "iopl", "ioperm", "lookup_dcookie", "open_by_handle_at",
   "name_to_handle_at", "fanotify_init", "mknod", "mknodat", "vhangup", "sethostname",
   "setdomainname", "personality", "uselib", "nfsservctl",
};

static int
deny(scmp_filter_ctx f, const char *name)
{
   int nr = seccomp_syscall_resolve_name(name);
   if (nr == __NR_SCMP_ERROR)
      return 0;
   return seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

int
gpud_sandbox_enter(void)
{
   scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
   if (!f) {
      util_err("worker: cannot create the system-call filter");
      return -ENOMEM;
   }
   int r = 0;
   for (size_t i = 0; r == 0 && i < UTIL_ARRAY_SIZE(denied); i++)
      r = deny(f, denied[i]);
   /* No network, and no connection to anything already listening (the
    * daemon, D-Bus): sockets of the local domain only, and a connect finds
    * nobody there. A host driver may still make its own sockets, bind and
    * listen (NVIDIA's ray tracing starts CUDA, which listens on an abstract
    * socket for other processes to pass it memory, and looks for an MPS
    * server, which is not there). */
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                           SCMP_A0(SCMP_CMP_NE, AF_UNIX));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1,
                           SCMP_A0(SCMP_CMP_NE, AF_UNIX));
   /* connectionless sockets could send to anything bound (the journal,
    * syslog): streams and sequenced packets only */
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(ECONNREFUSED), SCMP_SYS(connect), 0);
   /* Signals only to itself: workers of different clients share a user. */
   const scmp_datum_t self = (scmp_datum_t)getpid();
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
                           SCMP_A0(SCMP_CMP_NE, self));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tgkill), 1,
                           SCMP_A0(SCMP_CMP_NE, self));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_sigqueueinfo), 1,
                           SCMP_A0(SCMP_CMP_NE, self));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_tgsigqueueinfo), 1,
                           SCMP_A0(SCMP_CMP_NE, self));
   /* Limits of itself only, named as pid 0 as libc does (another worker of
    * the same user could be killed with RLIMIT_CPU; a filter compares an
    * argument once, so the worker's own pid is refused too); no priorities
    * of a whole user or group. */
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 1,
                           SCMP_A0(SCMP_CMP_NE, 0));
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setpriority), 1,
                           SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS));
   /* No signals by way of fd ownership (SIGIO, or any signal with F_SETSIG,
    * to another process), no typing into a terminal. */
   static const scmp_datum_t fcntl_denied[] = {F_SETOWN, F_SETOWN_EX, F_SETSIG};
   for (size_t i = 0; r == 0 && i < UTIL_ARRAY_SIZE(fcntl_denied); i++)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 1,
                           SCMP_A1(SCMP_CMP_EQ, fcntl_denied[i]));
   static const scmp_datum_t ioctl_denied[] = {FIOSETOWN, SIOCSPGRP, TIOCSTI, TIOCLINUX};
   for (size_t i = 0; r == 0 && i < UTIL_ARRAY_SIZE(ioctl_denied); i++)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctl_denied[i]));
   /* The filter covers every thread, also those the host driver started
    * while it loaded. */
   if (r == 0)
      r = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
   /* Threads, never processes: clone() must share the thread group; clone3
    * hides its flags from the filter, so it is "not implemented" and libc
    * falls back to clone(). */
   if (r == 0)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
   if (r == 0 && seccomp_syscall_resolve_name("clone3") != __NR_SCMP_ERROR)
      r = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), seccomp_syscall_resolve_name("clone3"), 0);
   if (r == 0)
      r = seccomp_load(f);
   seccomp_release(f);
   if (r < 0) {
      util_err("worker: cannot install the system-call filter: %s", strerror(-r));
      return r;
   }
   return 0;
}
