/* SPDX-License-Identifier: MIT */
/*
 * gpud: serves one GPU (through its host Vulkan driver) to every client of
 * its socket.  The same executable is the server and, started by the
 * server with --worker, each client's worker.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION /* the sink is no place worth naming */
#include <systemd/sd-journal.h>

#include "srv_config.h"
#include "srv_server.h"
#include "gpud_worker.h"
#include "daemon_host.h"
#include "daemon_status.h"
#include "util_log.h"
#include "util_macros.h"

/* ---- the log: the journal's fields when stderr is the journal ------------- */

/* Whether stderr is the journal stream systemd gave us (JOURNAL_STREAM names
 * its device and inode). */
static bool
stderr_is_journal(void)
{
   const char *e = getenv("JOURNAL_STREAM");
   unsigned long long dev, ino;
   struct stat st;
   if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
      return false;
   return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static const char *log_identifier = "gpud";

/* A line as a journal entry: the client's id, pid, uid and name as fields
 * of their own (journalctl GPUD_CLIENT_ID=7); stderr when the journal
 * cannot take it (a worker's sandbox, say). */
static void
journal_sink(enum util_log_level level, const struct util_log_client *client,
             const char *message)
{
   char priority[16], id[40], pid[32], uid[32], name[96], identifier[48];
   struct iovec iov[7];
   size_t n = 0;
   size_t mlen = strlen(message);
   char *text = malloc(mlen + sizeof("MESSAGE="));
   if (text) {
      memcpy(text, "MESSAGE=", 8);
      memcpy(text + 8, message, mlen + 1);
      iov[n++] = (struct iovec){text, mlen + 8};
   }
   snprintf(priority, sizeof(priority), "PRIORITY=%d", (int)level);
   iov[n++] = (struct iovec){priority, strlen(priority)};
   snprintf(identifier, sizeof(identifier), "SYSLOG_IDENTIFIER=%s", log_identifier);
   iov[n++] = (struct iovec){identifier, strlen(identifier)};
   if (client) {
      snprintf(id, sizeof(id), "GPUD_CLIENT_ID=%llu", client->id);
      snprintf(pid, sizeof(pid), "GPUD_CLIENT_PID=%d", client->pid);
      snprintf(uid, sizeof(uid), "GPUD_CLIENT_UID=%u", client->uid);
      snprintf(name, sizeof(name), "GPUD_CLIENT_NAME=%s", client->name ? client->name : "");
      iov[n++] = (struct iovec){id, strlen(id)};
      iov[n++] = (struct iovec){pid, strlen(pid)};
      iov[n++] = (struct iovec){uid, strlen(uid)};
      iov[n++] = (struct iovec){name, strlen(name)};
   }
   if (!text || sd_journal_sendv(iov, (int)n) < 0) {
      char line[1200];
      int len = snprintf(line, sizeof(line), "<%d>%s\n", (int)level, message);
      if (len > 0) {
         size_t out = (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1;
         ssize_t w = write(STDERR_FILENO, line, out);
         (void)w;
      }
   }
   free(text);
}

static void
log_setup(bool worker)
{
   log_identifier = worker ? "gpud-worker" : "gpud";
   if (stderr_is_journal())
      util_log_set_sink(journal_sink);
   else
      util_log_set_timestamps(true);
}

int
main(int argc, char **argv)
{
   struct srv_config cfg;
   pid_t worker_parent;
   char *error;
   switch (srv_config_build(&cfg, argc, argv, &worker_parent, &error)) {
   case SRV_CONFIG_OK:
      break;
   case SRV_CONFIG_EXIT:
      srv_config_finish(&cfg);
      return 0;
   case SRV_CONFIG_USAGE:
      srv_config_finish(&cfg);
      return 2;
   case SRV_CONFIG_BAD:
      fprintf(stderr, "%s\n", error ? error : "gpud: cannot read the configuration");
      free(error);
      srv_config_finish(&cfg);
      return 78; /* EX_CONFIG: systemd does not restart the unit for it */
   }
   cfg.start_log_level = (int)util_log_get_max_level();
   if (cfg.log_level >= 0)
      util_log_set_max_level((enum util_log_level)cfg.log_level);
   if (cfg.manifest && access(cfg.manifest, R_OK) < 0) {
      fprintf(stderr, "gpud: cannot read host driver manifest '%s': %s\n", cfg.manifest,
              strerror(errno));
      srv_config_finish(&cfg);
      return 2;
   }
   signal(SIGPIPE, SIG_IGN);
   log_setup(worker_parent != 0);

   if (cfg.list_devices) {
      int r = daemon_host_list_devices(stdout, cfg.manifest, cfg.sysfs_root);
      srv_config_finish(&cfg);
      return r < 0 ? 1 : 0;
   }

   if (worker_parent) {
      const struct gpud_worker_options opt = {
         .control_fd = 3,
         .parent = worker_parent,
         .manifest = cfg.manifest,
         .device = &cfg.device_sel,
         .sysfs_root = cfg.sysfs_root,
         .validate = cfg.validate,
         .spirv = cfg.spirv,
         .sandbox = cfg.sandbox,
         .restart_grace_ms = cfg.limits.restart_grace_ms,
         .base_identity = cfg.worker_base,
      };
      int r = gpud_worker_process_main(&opt);
      srv_config_finish(&cfg);
      return r;
   }

   /* Every client costs the server two fds: take what the system allows. */
   struct rlimit rl;
   if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
   }
   /* the server owns cfg now (and frees its strings at the end) */
   return srv_server_run(&cfg);
}
