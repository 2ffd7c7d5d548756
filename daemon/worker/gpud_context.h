/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A context: everything one client has in the daemon -- its host instances
 * and devices, its object table, the decoder of its command stream, its
 * blocking waits.  A context runs inside a worker (a process of its own, or
 * a thread with --isolation=thread) and never reaches the server: what it
 * needs from outside (memory accounting) it asks through its ops.
 */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <vulkan/vulkan_core.h>

#include "daemon_host.h"
#include "daemon_status.h"
#include "util_idtable.h"
#include "util_list.h"
#include "util_ring.h"
#include "util_spin.h"
#include "util_log.h"
#include "util_transport.h"
#include "wire.h"
#include "wire_control.h"
#include "wire_gen.h"

/* A client's memory per heap, as the server accounts it. */
struct gpud_memory_budget {
   uint32_t n_heaps;
   uint64_t usage[VK_MAX_MEMORY_HEAPS];  /* what it holds */
   uint64_t budget[VK_MAX_MEMORY_HEAPS]; /* what it may hold in all */
};

/* What a context asks of the worker that runs it. */
struct gpud_context_ops {
   /* May the client hold bytes more of heap?  VK_SUCCESS, or the VkResult
    * the allocation returns; budget (may be NULL) receives the accounts
    * after it.  bytes 0 only asks for the budget. */
   VkResult (*reserve_memory)(void *data, uint32_t heap, uint64_t bytes,
                              struct gpud_memory_budget *budget);
   void (*release_memory)(void *data, uint32_t heap, uint64_t bytes);
   /* The host driver lost the client's device: a fault to list. */
   void (*fault)(void *data, const char *reason);
   void *data;
};

/* Who the client is and what it may do. */
struct gpud_context_info {
   uint64_t id;
   pid_t pid;
   uid_t uid;
   char name[64];
   uint64_t max_objects;
   uint32_t send_timeout_ms;
   uint32_t log_burst;
   uint32_t log_per_second;
   int replay_threads; /* replay lanes; -1: by the CPUs */
   /* its user's cache directory, which the server made for it (""):
    * none handed, the environment's */
   bool cache_kept;
   char cache_dir[1024];
};

struct gpud_call;
struct gpud_replay;
struct gpud_sched;

/* Where a decoding thread's time goes, per op (the chunks of recordings
 * under GPUD_PROFILE_CHUNKS) and waiting for the client. */
#define GPUD_PROFILE_CHUNKS WIRE_OP_COUNT
struct gpud_profile {
   uint64_t ns[GPUD_PROFILE_CHUNKS + 1];
   uint64_t count[GPUD_PROFILE_CHUNKS + 1];
   uint64_t recorded; /* commands in the chunks */
   /* each recorded command's replay (the decoding thread's and the
    * lanes'), by op: its time and count; vkEndCommandBuffer's too */
   _Atomic uint64_t rec_ns[WIRE_OP_COUNT], rec_count[WIRE_OP_COUNT];
   uint64_t wait_ns;  /* for the next message */
   uint64_t messages, slept; /* messages received; those the thread slept for */
   /* a tracked submit's phases: before the host has it, the host's submit,
    * gpud's fence after it, the tracker's entry */
   uint64_t submit_ns[4];
   uint64_t submits;
   uint64_t worker_copies; /* submissions of copies the worker made itself */
   /* fences the tracker had the host make for a submission on its way (its
    * pool was empty), and the time they took */
   uint64_t track_fences_made, track_fences_ns;
   /* submissions of copies the ICD made itself (vkQueueUploadGPUD): all of
    * them, those that sent bytes for device memory, those the worker wrote
    * on the GPU, those whose bytes came in the ICD's upload memory */
   uint64_t icd_copies, icd_copies_sent, icd_copies_gpu, icd_copies_slot;
};

struct gpud_context {
   struct gpud_context_info info;
   const struct daemon_host *host;
   struct gpud_context_ops ops;
   struct daemon_status_page *status; /* shared with the server */
   struct gpud_sched *sched;        /* its slot on the schedule page (the worker's; NULL:
                                     * its submissions go unscheduled) */
   int fd;                          /* the client's socket */

   /* the client's rings (util_ring.h), from its RingSetup on */
   void *ring_map;
   uint32_t command_ring_size, reply_ring_size;
   struct util_ring_wait ring_wait;
   struct util_spin_window ring_window; /* the decoding thread's, in ring_wait */
   struct util_ring commands; /* the decoding thread's */
   struct util_ring replies;  /* under send_mutex */
   int record_fd;             /* GPUD_RECORD_STREAMS: the client's stream, for fuzzing seeds */
   uint64_t recorded;

   pthread_mutex_t send_mutex;
   struct util_msg_reader reader;
   struct wire_enc reply;
   struct gpud_call *call; /* the command being run */
   struct gpud_replay *replay; /* recordings: lanes and waiting submissions */
   struct gpud_compile *compile; /* pipelines made on threads (gpud_compile.c) */

   /* owned by the decoding thread */
   struct util_idtable objects;
   struct util_list object_list; /* struct gpud_object, in creation order */
   uint64_t n_objects;
   uint64_t memory_bytes;
   /* devices with submissions of the worker's own on their way
    * (gpud_queue_submit_own) */
   struct gpud_device_track *own_devices;

   /* blocking waits running on threads of their own (gpud_wait.c) */
   pthread_mutex_t wait_mutex;
   pthread_cond_t wait_cond;
   struct util_list waiters;
   unsigned n_waiters;
   atomic_bool closing;

   atomic_bool host_lost; /* reported once */

   /* the CPUs the worker's threads keep to (gpud_context_keep_off_cpus),
    * under cpus_mutex; each thread follows when cpus_gen moves */
   pthread_mutex_t cpus_mutex;
   cpu_set_t cpus, cpus_avoided;
   _Atomic uint32_t cpus_gen;

   /* the thread that tells the completion pages about injected delay
    * (gpud_hold.c); NULL until the first page */
   struct gpud_hold *hold;

   /* GPUD_PROFILE: where the decoding thread's time went (logged when the
    * client leaves); NULL when not profiling */
   struct gpud_profile *profile;

   /* why the context ended (set once) */
   char end_reason[256];
   bool fault;

   /* rate limit of log lines about this client */
   pthread_mutex_t log_mutex;
   pthread_mutex_t names_mutex; /* the status page's names */
   /* what the client's messengers take (vkSetMessageFilterGPUD) */
   _Atomic uint32_t message_severities;
   _Atomic uint32_t message_types;
   double log_tokens;
   uint64_t log_last_ns;
   unsigned log_suppressed;
};

/* The worker's threads keep off the CPUs in avoid (the ones that take a
 * GPU's interrupts, what), where at least two of the CPUs they may use
 * remain; the calling thread at once, the others at their next
 * gpud_context_follow_cpus. */
void gpud_context_keep_off_cpus(struct gpud_context *ctx, const cpu_set_t *avoid, const char *what);
/* A worker thread takes on the CPUs of gpud_context_keep_off_cpus when they
 * changed since *seen (0 at first). */
void gpud_context_follow_cpus(struct gpud_context *ctx, uint32_t *seen);

/* Ends the client (the first reason wins): its rings and socket stop, the
 * decoding thread leaves at its next look. */
void gpud_context_end(struct gpud_context *ctx, bool fault, const char *reason);
/* Logs with the client's id, pid and name; lines below UTIL_LOG_ERR are
 * rate limited per client. */
void gpud_context_log(struct gpud_context *ctx, enum util_log_level level, const char *fmt, ...)
   UTIL_PRINTF(3, 4);
/* Sends a reply (with fds) to the client, within the send deadline. */
int gpud_context_send(struct gpud_context *ctx, uint32_t type, const void *data, size_t size,
                      const int *fds, unsigned n_fds);
int gpud_context_send_reply(struct gpud_context *ctx, struct wire_enc *reply, const int *fds,
                            unsigned n_fds);
/* Sends a control message (gpud.proto) to the client. */
int gpud_context_send_control(struct gpud_context *ctx, const Gpud__ControlMessage *m);
/* A message for the client's debug messengers (validation, device loss),
 * if its messengers take messages of this severity and type
 * (vkSetMessageFilterGPUD). */
void gpud_context_debug_message(struct gpud_context *ctx,
                                VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                VkDebugUtilsMessageTypeFlagsEXT types, const char *id_name,
                                int32_t id_number, const char *message);
/* The host driver answered VK_ERROR_DEVICE_LOST for this client (a GPU
 * fault): logged and reported as a fault, once per client. */
void gpud_context_host_lost(struct gpud_context *ctx, const char *command);
/* A lost device told, with reason, to the application's messengers
 * (gpud-device-lost) and to the server (a fault). */
void gpud_context_tell_lost(struct gpud_context *ctx, const char *reason);
/* Ends the client for bad input: logs the reason and tells the client. */
int gpud_context_protocol_error(struct gpud_context *ctx, const char *fmt, ...) UTIL_PRINTF(2, 3);

/* Memory accounting, through the worker's ops. */
VkResult gpud_context_reserve_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes);
/* The client's usage and budget per heap (VK_EXT_memory_budget); false when
 * the server could not say. */
bool gpud_context_memory_budget(struct gpud_context *ctx, struct gpud_memory_budget *budget);
void gpud_context_release_memory(struct gpud_context *ctx, uint32_t heap, uint64_t bytes);

/* gpudctl inject delay-completions: how much later completions are seen
 * (0: as they come). */
uint64_t gpud_context_inject_delay_ns(struct gpud_context *ctx);
