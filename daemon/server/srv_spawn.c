/* SPDX-License-Identifier: MIT */
/*
 * Starting workers.  A worker process is always a fresh program: the
 * server forks and at once execs its own executable in worker mode (never
 * a fork of a process that initialised a host driver), with nothing but
 * the control channel as fd 3, as the workers' user, with no new
 * privileges.  With --isolation=thread a worker is a thread of the server
 * using the server's host driver.
 */
#include "srv_spawn.h"
#include "srv_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpud_worker.h"
#include "util_fd.h"
#include "util_log.h"
#include "util_thread.h"

extern char **environ;

struct thread_start {
   int fd;
   const struct daemon_host *host;
};

static void *
worker_thread(void *data)
{
   struct thread_start *ts = data;
   gpud_worker_thread_main(ts->fd, ts->host);
   free(ts);
   return NULL;
}

static const char *
validate_name(enum daemon_validate_mode mode)
{
   switch (mode) {
   case DAEMON_VALIDATE_REPORT:
      return "--validate=report";
   case DAEMON_VALIDATE_STRICT:
      return "--validate=strict";
   default:
      return "--validate=off";
   }
}

/* The worker's environment: the server's, without systemd's notification
 * and socket variables.  A worker that runs as another user than the
 * server keeps nothing of the server's home and caches: its own cache
 * directory comes with its client (gpud_become_cache_dir), and until
 * then (a spare loading the host driver) nothing is cached. */
static char **
worker_environ(struct srv_server *server)
{
   size_t n = 0;
   while (environ[n])
      n++;
   char **env = calloc(n + 4, sizeof(char *));
   if (!env)
      return NULL;
   size_t j = 0;
   static const char *const dropped[] = {
      /* systemd's, for the server alone */
      "NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID=", "LISTEN_FDS=", "LISTEN_PID=",
      "LISTEN_FDNAMES=", "GPUD_WORKER_CACHE=",
   };
   static const char *const server_own[] = {"HOME=", "XDG_CACHE_HOME="};
   const bool other = server->access.switch_user;
   bool mesa_off = false;
   for (size_t i = 0; i < n; i++) {
      bool drop = false;
      for (size_t k = 0; k < sizeof(dropped) / sizeof(dropped[0]); k++)
         drop |= !strncmp(environ[i], dropped[k], strlen(dropped[k]));
      for (size_t k = 0; other && k < sizeof(server_own) / sizeof(server_own[0]); k++)
         drop |= !strncmp(environ[i], server_own[k], strlen(server_own[k]));
      mesa_off |= !strncmp(environ[i], "MESA_SHADER_CACHE_DISABLE=", 26);
      if (!drop)
         env[j++] = environ[i];
   }
   if (other) {
      env[j++] = (char *)"HOME=/nonexistent";
      /* (what the administrator set stays, with the client too) */
      if (!mesa_off)
         env[j++] = (char *)"MESA_SHADER_CACHE_DISABLE=true";
      env[j++] = (char *)(mesa_off ? "GPUD_WORKER_CACHE=pending" : "GPUD_WORKER_CACHE=pending-mesa");
   }
   env[j] = NULL;
   return env;
}

static void
free_environ(struct srv_server *server, char **env)
{
   (void)server;
   free(env);
}

static int
spawn_process(struct srv_server *server, struct srv_worker *worker, int child_fd)
{
   char parent[32], level[16], device[128], grace[40], base[48 + 12 * 32];
   snprintf(parent, sizeof(parent), "--worker=%d", (int)getpid());
   snprintf(level, sizeof(level), "--log-level=%d", (int)util_log_get_max_level());
   const char *argv[20];
   int n = 0;
   argv[n++] = "gpud-worker";
   argv[n++] = parent;
   if (server->manifest) {
      argv[n++] = "--host-driver";
      argv[n++] = server->manifest;
   }
   /* the first worker finds the device; the others serve the one it found */
   const struct daemon_selector *sel =
      server->have_device && server->device_pin.by == DAEMON_SELECT_UUID ? &server->device_pin
                                                                       : &server->cfg.device_sel;
   daemon_selector_format(sel, device, sizeof(device));
   if (device[0]) {
      argv[n++] = "--device";
      argv[n++] = device;
   }
   if (server->cfg.sysfs_root) {
      argv[n++] = "--sysfs";
      argv[n++] = server->cfg.sysfs_root;
   }
   argv[n++] = validate_name(server->cfg.validate);
   argv[n++] = "--spirv";
   argv[n++] = daemon_spirv_mode_name(server->cfg.spirv);
   argv[n++] = level;
   /* a worker no later server can find (no private directory) ends with
    * its server */
   worker->restart_grace_ms = srv_restart_grace_ms(server);
   snprintf(grace, sizeof(grace), "--restart-grace=%u", worker->restart_grace_ms);
   argv[n++] = grace;
   if (!server->cfg.sandbox)
      argv[n++] = "--no-sandbox";
   /* each client user's own uid: started as root, the worker waits as the
    * base user with root as its saved uid (gpud_become.c) */
   const bool become = srv_identity_on(server);
   if (become) {
      const struct srv_access *ac = &server->access;
      int len = snprintf(base, sizeof(base), "--worker-base=%u:%u:", (unsigned)ac->worker_uid,
                         (unsigned)ac->worker_gid);
      /* the groups its client's identity has too (the base user's own
       * group is its gid): the worker then keeps them as they are */
      for (int i = 0, k = 0; i < ac->n_worker_groups && len < (int)sizeof(base) - 12; i++) {
         if (ac->worker_groups[i] != ac->worker_gid)
            len += snprintf(base + len, sizeof(base) - (size_t)len, "%s%u", k++ ? "," : "",
                            (unsigned)ac->worker_groups[i]);
      }
      argv[n++] = base;
   }
   worker->can_become = become;
   argv[n] = NULL;
   char **env = worker_environ(server);
   if (!env)
      return -ENOMEM;

   /* No signal runs the server's handlers in the child between fork and
    * exec (they would write to the server's signal socketpair). */
   sigset_t all, old_mask;
   sigfillset(&all);
   sigprocmask(SIG_SETMASK, &all, &old_mask);
   pid_t pid = fork();
   if (pid < 0) {
      int r = -errno;
      sigprocmask(SIG_SETMASK, &old_mask, NULL);
      free_environ(server, env);
      return r;
   }
   if (pid == 0) {
      /* The child: async-signal-safe calls only, then exec. */
      struct sigaction dfl = {.sa_handler = SIG_DFL};
      for (int sig = 1; sig < NSIG; sig++) {
         if (sig != SIGKILL && sig != SIGSTOP && sig != SIGPIPE)
            sigaction(sig, &dfl, NULL);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, NULL);
      if (child_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(child_fd, 3) < 0)
         _exit(127);
      /* a session of its own: a terminal's ^C is the server's, never its
       * workers' (which may outlive it) */
      setsid();
      /* no terminal to read from (or to type into) */
      int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (null >= 0 && null != 0) {
         dup2(null, 0);
         close(null);
      }
      if (server->access.switch_user && !become &&
          (setgroups((size_t)server->access.n_worker_groups, server->access.worker_groups) < 0 ||
           setgid(server->access.worker_gid) < 0 || setuid(server->access.worker_uid) < 0))
         _exit(126);
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      execve(server->self_path, (char *const *)argv, env);
      _exit(127);
   }
   sigprocmask(SIG_SETMASK, &old_mask, NULL);
   free_environ(server, env);
   worker->pid = pid;
   return 0;
}

int
srv_spawn_worker(struct srv_server *server, struct srv_worker *worker)
{
   int sv[2];
   if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
      return -errno;
   int r;
   if (server->cfg.isolation == SRV_ISOLATION_THREAD) {
      struct thread_start *ts = malloc(sizeof(*ts));
      r = ts ? 0 : -ENOMEM;
      if (ts) {
         ts->fd = sv[1];
         ts->host = &server->host;
         r = -util_thread_start_detached(worker_thread, ts);
         if (r < 0)
            free(ts);
      }
      if (r == 0)
         sv[1] = -1; /* the thread owns it */
   } else {
      r = spawn_process(server, worker, sv[1]);
   }
   util_fd_close(&sv[1]);
   if (r < 0) {
      util_fd_close(&sv[0]);
      return r;
   }
   fcntl(sv[0], F_SETFL, O_NONBLOCK);
   worker->fd = sv[0];
   return 0;
}

void
srv_kill_worker(struct srv_worker *worker, const char *why)
{
   if (!worker->kill_reason)
      worker->kill_reason = why;
   if (worker->ended)
      return; /* reaped: its pid may be another process's */
   if (worker->pidfd >= 0) {
      /* adopted: not a child, its pid could be reused unseen */
      pidfd_send_signal(worker->pidfd, SIGKILL, NULL, 0);
      return;
   }
   if (worker->pid > 0) {
      kill(worker->pid, SIGKILL);
      return;
   }
   /* A thread cannot be killed: end its client's stream, and its channel
    * (a thread still waiting for its client ends with that). */
   if (worker->client)
      shutdown(worker->client->fd, SHUT_RDWR);
   shutdown(worker->fd, SHUT_RDWR);
}
