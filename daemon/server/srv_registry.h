/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The server's registry (srv_registry.c): the server's state, its
 * clients, workers, accounts, faults and crashed programs, and the small
 * operations the server's files share on them.  The files above it (the
 * loop in srv_server.c, srv_control.c, srv_bus.c, srv_access.c,
 * srv_spawn.c) use it; it uses none of them.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vulkan/vulkan_core.h>

#include "srv_config.h"
#include "daemon_host.h"
#include "daemon_limits.h"
#include "daemon_status.h"
#include "util_list.h"
#include "util_transport.h"
#include "wire_control.h"

struct event;
struct event_base;

/* Who may connect, and who workers run as (srv_access.c). */
struct srv_access {
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
};

/* Per-user accounting. */
struct srv_account {
   struct util_list link;
   uid_t uid;
   unsigned connections;
   uint64_t memory;
   /* rate limit of log lines about this user's connections */
   double log_tokens;
   uint64_t log_last_ns;
   unsigned log_suppressed;
};

enum srv_client_state {
   SRV_CLIENT_HANDSHAKE, /* waiting for its Hello */
   SRV_CLIENT_CONTROL,   /* gpudctl */
   SRV_CLIENT_WAITING,   /* welcomed, waiting for a worker */
   SRV_CLIENT_SERVING,   /* its worker has it */
};

struct srv_worker;

/* A connection, as the server sees it. */
struct srv_client {
   struct util_list link; /* server->clients */
   struct srv_server *server;
   uint64_t id;
   pid_t pid;
   uid_t uid;
   char name[64];
   int fd;
   enum srv_client_state state;
   bool admin;           /* control: may see and act on every client */
   uint64_t connected_ns;
   struct event *read_ev;
   struct event *write_ev;
   struct event *timer;  /* handshake or worker start deadline */
   uint64_t not_before_ns; /* its worker not before this (its program's crash back-off) */
   struct util_msg_reader reader;
   struct util_msg_queue out;
   struct srv_account *account;
   struct srv_worker *worker;
   /* its share of the GPU (srv_share.c) */
   int sched_slot;       /* on the schedule page; -1: none */
   int nice;             /* its nice level now */
   int asked_nice;       /* the application's own ask (Hello) */
   bool reniced;         /* gpudctl renice set nice: the configuration no longer does */
   uint64_t memory;      /* granted to it, all heaps */
   uint64_t heap_memory[VK_MAX_MEMORY_HEAPS];
};

enum srv_worker_state {
   SRV_WORKER_STARTING, /* loading the host driver */
   SRV_WORKER_SPARE,    /* ready, waiting for a client */
   SRV_WORKER_BUSY,     /* serving its client */
};

struct srv_worker {
   struct util_list link; /* server->workers */
   struct srv_server *server;
   enum srv_worker_state state;
   pid_t pid;             /* 0 for a thread */
   uid_t uid;             /* the identity it took for its client (0: as started) */
   bool can_become;       /* started as root, it can take its client user's uid */
   int fd;                /* control channel */
   struct event *read_ev;
   struct event *write_ev;
   struct event *timer;   /* teardown deadline */
   struct util_msg_reader reader;
   struct util_msg_queue out;
   struct srv_client *client;
   int status_fd;
   struct daemon_status_page *status;
   char goodbye[256];     /* why its client left, as the worker says */
   bool goodbye_fault;
   const char *kill_reason; /* why the server killed it */
   bool channel_closed;
   bool ended;            /* reaped (or its thread gone) */
   bool start_timed_out;
   bool failed_start;     /* its start did not give what the server needs */
   bool reported_fault;
   char version[32];      /* the gpud version it runs, as it says; "" unknown */
   uint32_t control_version;
   /* restarts (srv_adopt.c) */
   uint32_t restart_grace_ms; /* what it was started with: it waits this long for the
                               * next server (0: it dies with this one) */
   bool has_record;       /* its record and adopt socket are in adopt_dir ... */
   uint64_t record_id;    /* ... under its client's id */
   bool adopted;          /* from an earlier server: not this one's child */
   int pidfd;             /* an adopted worker's, to signal it; -1 */
   bool details_unknown;  /* its status page is of another layout: not read */
   /* whom it served (a client was assigned or adopted), for the caches'
    * counts when it ends: its client's uid and program (as a file name
    * part, as the pipeline caches name it) */
   bool served;
   uid_t served_uid;
   char served_program[64];
};

struct srv_fault {
   uint64_t time_ns;
   uint64_t client_id;
   pid_t pid;
   uid_t uid;
   char name[64];
   pid_t worker_pid;
   char reason[192];
};

struct srv_bus;
struct srv_identities;
struct srv_caches;
struct srv_adoption;
struct daemon_sched_page;

/* A worker of an earlier server that this one adopted (srv_adopt.c), as
 * the server's loop takes it in: the client's identity from the earlier
 * server's record, the rest from the worker. */
struct srv_adopted {
   uint64_t client_id;
   pid_t client_pid;
   uid_t client_uid;
   char name[64];
   uint64_t connected_ns;  /* CLOCK_MONOTONIC, one clock for every process */
   pid_t worker_pid;
   uid_t worker_uid;       /* the uid it runs as (its record's, its socket's) */
   int pidfd;
   int control_fd;         /* the connection adopted on, its control channel now */
   int client_fd;          /* the client's socket, as the worker has it */
   int status_fd;          /* its status page */
   char version[32];
   uint32_t control_version;
   uint32_t n_heaps;
   uint64_t heap_usage[VK_MAX_MEMORY_HEAPS];
   char fault[160];        /* a fault it had reported */
   int asked_nice;         /* the application's own nice level (its record's) */
   int sched_slot;         /* its slot on this server's schedule page; -1: none */
   int nice;               /* ... and the nice level written there */
};

struct srv_crash_record {
   struct util_list link;
   uid_t uid;
   char name[64];
   uint64_t times_ns[8]; /* most recent crashes, newest last */
   unsigned count;
};

struct srv_server {
   struct srv_config cfg;
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
   char device_uuid[DAEMON_UUID_TEXT];
   char device_pci[DAEMON_PCI_TEXT];
   char render_node[32];
   /* every worker after the first serves the first one's device by its
    * UUID: a render node or index renumbered meanwhile changes nothing */
   struct daemon_selector device_pin;
   char *host_driver;
   uint32_t n_heaps;
   uint64_t heap_size[VK_MAX_MEMORY_HEAPS];
   uint32_t heap_flags[VK_MAX_MEMORY_HEAPS];
   uint64_t total_heap;
   struct daemon_host host; /* --isolation=thread: loaded here */

   struct srv_access access;
   struct srv_identities *ids; /* the workers' uids (srv_identity.c) */
   struct srv_caches *caches;  /* the users' caches (srv_cache.c) */
   struct srv_bus *bus;  /* org.gpud.Daemon1 on D-Bus; NULL: not on a bus */
   struct event *bus_retry; /* a lost bus connection is made again */
   unsigned bus_retry_ms;   /* after this long, doubling to 30 s */

   struct util_list clients;
   struct util_list workers;
   struct util_list accounts;
   struct util_list crashes;

   /* restarts (srv_adopt.c): the private directory where each worker's
    * record and adopt socket are (NULL: workers end with this server) */
   char *adopt_dir;
   struct util_list adoptions; /* workers of earlier servers being adopted */
   uint64_t id_mark;           /* the next client id, as adopt_dir's next-id says */
   bool handing_over;          /* stopping: busy workers wait for the next server */
   /* the loop's side of an adoption (srv_server.c): takes every fd */
   void (*adopted)(struct srv_server *server, struct srv_adopted *a);

   /* the fair share (srv_share.c): the schedule page every worker maps */
   struct daemon_sched_page *sched;
   int sched_fd;
   unsigned n_clients;
   unsigned n_starting;
   unsigned start_failures;
   uint64_t next_client_id;
   struct srv_fault faults[DAEMON_MAX_FAULTS];
   unsigned n_faults; /* total ever recorded */
};

/* A line about a client, under its user's rate limit (root's are not). */
void srv_client_log(struct srv_client *client, int level, const char *fmt, ...)
   __attribute__((format(printf, 3, 4)));
/* A message to a client, queued and flushed as its socket takes it; a
 * client that lets too much pile up is shut down. */
void srv_client_queue(struct srv_client *client, const void *data, size_t size);
void srv_client_queue_control(struct srv_client *client, const Gpud__ControlMessage *m);

/* A user's account (made on first use; NULL when out of memory), and its
 * end once nothing is charged to it and its log budget is full again. */
struct srv_account *srv_account_get(struct srv_server *server, uid_t uid);
void srv_account_put(struct srv_server *server, struct srv_account *a);

/* The crash record of a program (user and name), made when create; records
 * whose crashes are all forgotten go on the way. */
struct srv_crash_record *srv_crash_record_find(struct srv_server *server, uid_t uid,
                                                 const char *name, bool create);
/* Where a program stands after its crashes. */
struct srv_crash_state {
   unsigned crashes;       /* within the cool-down */
   uint64_t last_ns;       /* the last of them */
   uint64_t backoff_ms;    /* its next worker starts this long after the last */
   uint64_t not_before_ns; /* ... then (0 or past: at once) */
   bool refused;           /* at the crash limit (when there is one) */
};
void srv_crash_state(const struct srv_server *server, const struct srv_crash_record *c,
                      struct srv_crash_state *state);

/* How long workers wait for the next server (--restart-grace); 0 without
 * the private directory (srv_adopt.c): then they end with this server. */
uint32_t srv_restart_grace_ms(const struct srv_server *server);
/* Text a worker (or a client) wrote made fit to show: control characters
 * and bytes that are not UTF-8 become '?', a character cut short goes. */
void srv_clean_text(char *text);
/* Closes fds a peer sent, on the closer thread (a peer's fd may take
 * forever to close: a file on its own FUSE mount, say); one fd, as a
 * reader's close_fd (data: the server). */
void srv_server_discard_fds(struct srv_server *server, struct util_msg *msg);
void srv_server_discard_fd(int fd, void *server);
