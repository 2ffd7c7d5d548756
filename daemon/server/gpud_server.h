/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The server: one libevent loop that accepts connections, checks who the
 * peer is against the access policy, does the handshake, keeps the client
 * registry and the accounting (memory per client and per user, connections
 * per user), serves gpudctl, talks to systemd, and starts the workers that
 * run clients.  It never calls the host driver for a client.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vulkan/vulkan_core.h>

#include "gpud_config.h"
#include "gpud_host.h"
#include "gpud_limits.h"
#include "gpud_status.h"
#include "util_list.h"
#include "util_transport.h"
#include "wire_control.h"

struct event;
struct event_base;


/* Who may connect, and who workers run as (gpud_access.c). */
struct gpud_access {
   bool root;
   uid_t self_uid;
   bool have_group;
   gid_t group;
   char group_name[64];
   bool have_admin_group;
   gid_t admin_group;
   /* workers' identity (root daemons) */
   bool switch_user;
   uid_t worker_uid;
   gid_t worker_gid;
   gid_t worker_groups[32];
   int n_worker_groups;
   char *worker_home;
};

/* Per-user accounting. */
struct gpud_account {
   struct util_list link;
   uid_t uid;
   unsigned connections;
   uint64_t memory;
   /* rate limit of log lines about this user's connections */
   double log_tokens;
   uint64_t log_last_ns;
   unsigned log_suppressed;
};

enum gpud_client_state {
   GPUD_CLIENT_HANDSHAKE, /* waiting for its Hello */
   GPUD_CLIENT_CONTROL,   /* gpudctl */
   GPUD_CLIENT_WAITING,   /* welcomed, waiting for a worker */
   GPUD_CLIENT_SERVING,   /* its worker has it */
};

struct gpud_worker;

/* A connection, as the server sees it. */
struct gpud_client {
   struct util_list link; /* server->clients */
   struct gpud_server *server;
   uint64_t id;
   pid_t pid;
   uid_t uid;
   char name[64];
   int fd;
   enum gpud_client_state state;
   bool admin;           /* control: may see and act on every client */
   uint64_t connected_ns;
   struct event *read_ev;
   struct event *write_ev;
   struct event *timer;  /* handshake or worker start deadline */
   uint64_t not_before_ns; /* its worker not before this (its program's crash back-off) */
   struct util_msg_reader reader;
   struct util_msg_queue out;
   struct gpud_account *account;
   struct gpud_worker *worker;
   uint64_t memory;      /* granted to it, all heaps */
   uint64_t heap_memory[VK_MAX_MEMORY_HEAPS];
};

enum gpud_worker_state {
   GPUD_WORKER_STARTING, /* loading the host driver */
   GPUD_WORKER_SPARE,    /* ready, waiting for a client */
   GPUD_WORKER_BUSY,     /* serving its client */
};

struct gpud_worker {
   struct util_list link; /* server->workers */
   struct gpud_server *server;
   enum gpud_worker_state state;
   pid_t pid;             /* 0 for a thread */
   int fd;                /* control channel */
   struct event *read_ev;
   struct event *write_ev;
   struct event *timer;   /* teardown deadline */
   struct util_msg_reader reader;
   struct util_msg_queue out;
   struct gpud_client *client;
   int status_fd;
   struct gpud_status_page *status;
   char goodbye[256];     /* why its client left, as the worker says */
   bool goodbye_fault;
   const char *kill_reason; /* why the server killed it */
   bool channel_closed;
   bool ended;            /* reaped (or its thread gone) */
   bool start_timed_out;
   bool failed_start;     /* its start did not give what the server needs */
   bool reported_fault;
};

struct gpud_fault {
   uint64_t time_ns;
   uint64_t client_id;
   pid_t pid;
   uid_t uid;
   char name[64];
   pid_t worker_pid;
   char reason[192];
};

struct gpud_bus;

struct gpud_crash_record {
   struct util_list link;
   uid_t uid;
   char name[64];
   uint64_t times_ns[8]; /* most recent crashes, newest last */
   unsigned count;
};

struct gpud_server {
   struct gpud_config cfg;
   const char *self_path; /* executable to start workers from */
   char *manifest;        /* the host driver's manifest */
   struct event_base *base;
   int listen_fd;
   int closer_fd;         /* fds peers sent go here to be closed */
   bool own_socket;
   char *socket_path;
   struct event *accept_ev;
   struct event *accept_retry;
   struct event *signal_ev[5];
   struct event *watchdog;
   struct event *drain_timer;
   struct event *spawn_timer; /* retrying after workers failed to start */
   struct event *backoff_timer; /* the next client whose crash back-off ends */
   uint64_t start_ns;     /* CLOCK_MONOTONIC */
   bool stopping;
   bool drain_killed;
   int exit_status;

   /* the served device, from the first ready worker (or the host) */
   bool have_device;
   char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   char device_uuid[GPUD_UUID_TEXT];
   char device_pci[GPUD_PCI_TEXT];
   char render_node[32];
   /* every worker after the first serves the first one's device by its
    * UUID: a render node or index renumbered meanwhile changes nothing */
   struct gpud_selector device_pin;
   char *host_driver;
   uint32_t n_heaps;
   uint64_t heap_size[VK_MAX_MEMORY_HEAPS];
   uint32_t heap_flags[VK_MAX_MEMORY_HEAPS];
   uint64_t total_heap;
   struct gpud_host host; /* --isolation=thread: loaded here */

   struct gpud_access access;
   struct gpud_bus *bus;  /* org.gpud.Daemon1 on D-Bus; NULL: not on a bus */

   struct util_list clients;
   struct util_list workers;
   struct util_list accounts;
   struct util_list crashes;
   unsigned n_clients;
   unsigned n_starting;
   unsigned start_failures;
   uint64_t next_client_id;
   struct gpud_fault faults[GPUD_MAX_FAULTS];
   unsigned n_faults; /* total ever recorded */
};

/* Runs the server until SIGTERM; returns the exit status. */
int gpud_server_run(const struct gpud_config *cfg);

/* gpud_access.c: who may do what.  init (again, on SIGHUP) resolves the
 * groups and the workers' user; on failure the policy stays as it was. */
int gpud_access_init(struct gpud_server *server);
void gpud_access_finish(struct gpud_access *access);
/* Whether the peer may connect; when not, why in reason. */
bool gpud_access_allowed(struct gpud_server *server, int fd, uid_t uid, gid_t gid,
                         char *reason, size_t reason_size, bool *ret_admin);
/* The same for a peer known by its ids (a D-Bus caller). */
bool gpud_access_check(struct gpud_server *server, uid_t uid, gid_t gid, const gid_t *groups,
                       size_t n_groups, char *reason, size_t reason_size, bool *ret_admin);
/* Whether a control connection may see or act on a client. */
bool gpud_access_may_see(const struct gpud_client *control, const struct gpud_client *client);

/* gpud_bus.c: org.gpud.Daemon1 on D-Bus (cfg.bus), once the device is
 * known; a bus that cannot be reached is logged, never fatal. */
void gpud_bus_start(struct gpud_server *server);
void gpud_bus_stop(struct gpud_server *server);
/* Signals, when on a bus. */
void gpud_bus_client_connected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_disconnected(struct gpud_server *server, const struct gpud_client *client);
void gpud_bus_client_faulted(struct gpud_server *server, uint64_t client_id, const char *reason);

/* gpud_spawn.c: starting workers. */
int gpud_spawn_worker(struct gpud_server *server, struct gpud_worker *worker);
/* Ends a worker the server no longer wants (spare at shutdown, killed
 * client): a process gets SIGKILL, a thread's client socket is shut. */
void gpud_kill_worker(struct gpud_worker *worker, const char *why);

/* gpud_control.c: gpudctl's requests; negative when the connection ends. */
int gpud_control_handle(struct gpud_client *control, const void *data, size_t size);
/* Text a worker (or a client) wrote made fit to show: control characters
 * and bytes that are not UTF-8 become '?', a character cut short goes. */
void gpud_control_clean_text(char *text);
/* The daemon as viewer (a control connection, or a D-Bus caller made into
 * one: uid, pid, admin) may see it; freed with gpud_control_status_free. */
struct gpud_status_view;
struct gpud_status_view *gpud_control_status(struct gpud_server *server,
                                             const struct gpud_client *viewer,
                                             const Gpud__StatusReply **ret);
void gpud_control_status_free(struct gpud_status_view *view);
/* 0, -ENOENT (no such client), -EACCES (another user's); via: who asks */
int gpud_control_disconnect(struct gpud_server *server, const struct gpud_client *viewer,
                            uint64_t id, const char *via);
/* ... and -EINVAL with *error saying why the fault cannot be injected */
int gpud_control_inject(struct gpud_server *server, const struct gpud_client *viewer,
                        uint64_t id, const char *fault, uint64_t value, const char *via,
                        const char **error);

/* Closes fds a peer sent, on the closer thread (a peer's fd may take
 * forever to close: a file on its own FUSE mount, say). */
void gpud_server_discard_fds(struct gpud_server *server, struct util_msg *msg);

/* A program's crashes within the cool-down (*ret_last_ns: the last). */
unsigned gpud_server_recent_crashes(const struct gpud_server *server,
                                    const struct gpud_crash_record *c, uint64_t *ret_last_ns);
/* When the program's next worker may start (0 or past: at once), its
 * back-off in *ret_delay_ms. */
uint64_t gpud_server_crash_backoff(const struct gpud_server *server,
                                   const struct gpud_crash_record *c, uint64_t *ret_delay_ms);

/* gpud_server.c, for the files above: messages to a client, queued. */
void gpud_server_queue(struct gpud_client *client, const void *data, size_t size);
void gpud_server_queue_control(struct gpud_client *client, const Gpud__ControlMessage *m);
void gpud_server_client_log(struct gpud_client *client, int level, const char *fmt, ...)
   __attribute__((format(printf, 3, 4)));
