/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The connection to a daemon (icd_connection.c): its socket and rings, the
 * queue of asynchronous commands, the replies and their cache, and a
 * connection parked between a process's instances.
 */

#include "icd_object.h"

#define ICD_CACHE_BUCKETS 256

struct icd_cache_entry {
   struct icd_cache_entry *next;
   uint64_t hash;
   void *key;
   size_t key_size;
   void *reply;
   size_t reply_size;
};

struct icd_connection {
   int fd;
   char *socket_path;
   struct icd_instance *instance; /* whose messengers get the daemon's messages */
   uint64_t instance_id;          /* the id of the host instance on it */
   /* between instances (icd_connection_park): since when, in which process */
   struct util_list park_link;
   uint64_t parked_ns;
   pid_t pid;
   char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
   atomic_uint_fast64_t next_id;
   /* the client's object limit (the Welcome's; 0: unknown) and the objects
    * the ICD counts on this connection: never fewer than the daemon holds
    * (children the daemon drops with their parent are counted until then) */
   uint64_t max_objects;
   _Atomic int64_t objects;

   /* the rings (util_ring.h): commands out, replies and messages in */
   void *ring_map;
   struct util_ring_wait ring_wait;
   struct util_ring commands; /* under send_mutex */
   struct util_ring replies;  /* the leader's */
   /* recordings' chunks and full queues go without waking the worker
    * (util_ring_send_quiet): on a machine of few CPUs, where the woken
    * worker takes the application's CPU, the submission or wait that
    * follows wakes it once for all */
   bool quiet_streams;
   /* something went quietly since the worker was last woken: the next
    * flush wakes it even with nothing more to send */
   atomic_bool unwoken;

   /* send side: queued async commands and the sequence counter */
   pthread_mutex_t send_mutex;
   struct wire_enc stream;
   uint32_t next_seq;

   /* receive side: one waiting thread reads for all (leader/followers) */
   pthread_mutex_t recv_mutex;
   pthread_cond_t recv_cond;
   bool reader_active;
   atomic_bool lost;
   struct icd_call *pending;
   struct util_msg_reader reader;

   /* replies of physical-device queries, fetched once */
   pthread_mutex_t cache_mutex;
   struct icd_cache_entry *cache[ICD_CACHE_BUCKETS]; /* by key hash */
   unsigned cache_entries;
};

uint64_t icd_connect_timeout_ns(void);
/* Connects and sends the Hello without waiting for the answer. */
int icd_connection_begin(const char *path, uint64_t deadline_ns,
                         struct icd_connection **ret_conn);
/* Waits for the Welcome until the deadline (CLOCK_MONOTONIC ns). */
int icd_connection_complete(struct icd_connection *conn, uint64_t deadline_ns);
int icd_connection_open(const char *path, struct icd_connection **ret_conn);
void icd_connection_destroy(struct icd_connection *conn);
/* A connection whose instance is gone waits a while (GPUD_IDLE_CONNECTION_MS,
 * default ICD_IDLE_CONNECTION_MS) for the process's next instance, which then
 * needs no new connection, worker or host driver start; after that it is
 * closed.  unpark: a waiting connection to path, or NULL. */
void icd_connection_park(struct icd_connection *conn);
struct icd_connection *icd_connection_unpark(const char *path);
void icd_connection_set_lost(struct icd_connection *conn, const char *why);
/* The daemon's socket hung up: delivers what it said last, then lost. */
void icd_connection_hung_up(struct icd_connection *conn);
static inline bool
icd_connection_is_lost(struct icd_connection *conn)
{
   return atomic_load(&conn->lost);
}
static inline uint64_t
icd_connection_new_id(struct icd_connection *conn)
{
   return atomic_fetch_add(&conn->next_id, 1);
}
/* Sends whatever async commands are queued. */
VkResult icd_connection_flush(struct icd_connection *conn);
/* Whether the daemon is gone (lost, or its end of the socket closed: a
 * look without waiting); the connection is lost from then on. */
bool icd_connection_gone(struct icd_connection *conn);
/* Sends a separately recorded stream (a command buffer) after the queue. */
VkResult icd_connection_send_stream(struct icd_connection *conn, const void *data,
                                    size_t size);
