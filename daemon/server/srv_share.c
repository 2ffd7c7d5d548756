/* SPDX-License-Identifier: MIT */
/*
 * A fair share of the GPU, the server's side: the schedule page
 * (daemon/common/daemon_sched.h), a sealed memfd every worker maps, and each
 * client's slot on it: its weight (its nice level: [user NAME] and
 * [program NAME] sections of the configuration, the application's own
 * GPUD_NICE, which may only lower it, and gpudctl renice) and its quota
 * (a program's, each client's own; a user's, shared by its clients).  The
 * workers decide whose turn it is from the page (daemon/worker/gpud_sched.c);
 * the server only says who weighs what, and shows what each took.
 */
#include "srv_share.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon_sched.h"
#include "util_fd.h"
#include "util_futex.h"
#include "util_log.h"
#include "util_macros.h"
#include "util_memfd.h"

#define SLICE_US 2000   /* how far ahead of the furthest behind a client may go */
#define BUCKET_MS 100   /* a quota's bucket: this much wall time of its share */

int
srv_share_init(struct srv_server *server)
{
   if (!server->cfg.fair_share)
      return -ENODEV; /* clients go as the host driver has them */
   int fd = -1;
   void *map = MAP_FAILED;
   int r = util_memfd_create("gpud-schedule", DAEMON_SCHED_SIZE, &fd);
   if (r == 0) {
      map = mmap(NULL, DAEMON_SCHED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      r = map == MAP_FAILED ? -errno : 0;
   }
   if (r < 0) {
      util_fd_close(&fd);
      util_warn("no schedule page (%s): clients share the GPU as the host driver has them",
                strerror(-r));
      return r;
   }
   struct daemon_sched_page *page = map;
   atomic_store(&page->slice_us, SLICE_US);
   atomic_store(&page->bucket_ms, BUCKET_MS);
   atomic_store(&page->layout, DAEMON_SCHED_LAYOUT);
   atomic_store(&page->magic, DAEMON_SCHED_MAGIC);
   server->sched = page;
   server->sched_fd = fd;
   return 0;
}

void
srv_share_finish(struct srv_server *server)
{
   if (server->sched)
      munmap(server->sched, DAEMON_SCHED_SIZE);
   server->sched = NULL;
   util_fd_close(&server->sched_fd);
}

/* The nice level and quotas the configuration gives a client, and the
 * application's own ask.  A program is known by the name its client gives
 * (any program may give any name): its rule may lower the priority its
 * user's rule (or nice 0) gives, never raise it, and its quota holds for
 * programs that say who they are.  The application may only lower its
 * priority too. */
static void
configured(const struct srv_server *server, const struct srv_client *client, int *ret_nice,
           uint32_t *ret_quota, uint32_t *ret_user_quota)
{
   int nice = 0;
   uint32_t quota = 0, user_quota = 0;
   const struct srv_config *cfg = &server->cfg;
   for (unsigned i = 0; i < cfg->n_share_rules; i++) {
      const struct srv_share_rule *r = &cfg->share_rules[i];
      if (r->user && r->uid == client->uid) {
         if (r->has_nice)
            nice = r->nice;
         if (r->has_quota)
            user_quota = r->quota_ppm;
      }
   }
   for (unsigned i = 0; i < cfg->n_share_rules; i++) {
      const struct srv_share_rule *r = &cfg->share_rules[i];
      if (!r->user && !strcmp(r->name, client->name)) {
         if (r->has_nice && r->nice > nice)
            nice = r->nice;
         if (r->has_quota)
            quota = r->quota_ppm;
      }
   }
   if (client->asked_nice > nice)
      nice = client->asked_nice;
   *ret_nice = nice;
   *ret_quota = quota;
   *ret_user_quota = user_quota;
}

/* The user entry for uid with that quota (0 for none), made when needed. */
static uint32_t
user_entry(struct daemon_sched_page *page, uid_t uid, uint32_t quota)
{
   if (!quota)
      return 0;
   int free_entry = -1;
   for (unsigned i = 0; i < DAEMON_SCHED_USERS; i++) {
      struct daemon_sched_user *u = &page->users[i];
      uint32_t q = atomic_load(&u->quota_ppm);
      if (q && atomic_load(&u->uid) == uid) {
         if (q != quota)
            atomic_store(&u->quota_ppm, quota);
         return i + 1;
      }
      if (!q && free_entry < 0)
         free_entry = (int)i;
   }
   if (free_entry < 0)
      return 0;
   struct daemon_sched_user *u = &page->users[free_entry];
   atomic_store(&u->uid, uid);
   atomic_store(&u->tokens_ns, 0);
   atomic_store(&u->refill_ns, 0);
   atomic_store(&u->quota_ppm, quota);
   return (uint32_t)free_entry + 1;
}

/* With the client's slot taken: its weight and quotas written. */
static void
apply(struct srv_server *server, struct srv_client *client)
{
   struct daemon_sched_slot *slot = &server->sched->slots[client->sched_slot];
   int nice;
   uint32_t quota, user_quota;
   configured(server, client, &nice, &quota, &user_quota);
   if (client->reniced)
      nice = client->nice;
   client->nice = nice;
   atomic_store(&slot->nice, nice);
   atomic_store(&slot->weight, gpud_sched_weight(nice));
   if (atomic_load(&slot->quota_ppm) != quota) {
      atomic_store(&slot->refill_ns, 0); /* a new bucket, full */
      atomic_store(&slot->quota_ppm, quota);
   }
   atomic_store(&slot->user, user_entry(server->sched, client->uid, user_quota));
   /* whoever waits looks at the weights again */
   atomic_fetch_add(&server->sched->epoch, 1);
}

int
srv_share_take(struct srv_server *server, struct srv_client *client)
{
   client->sched_slot = -1;
   struct daemon_sched_page *page = server->sched;
   if (!page)
      return -ENODEV;
   for (unsigned i = 0; i < DAEMON_SCHED_SLOTS; i++) {
      struct daemon_sched_slot *slot = &page->slots[i];
      if (atomic_load(&slot->client_id))
         continue;
      /* a clean slot; its worker writes the rest */
      atomic_store(&slot->state, 0);
      atomic_store(&slot->vtime, 0);
      atomic_store(&slot->busy_since_ns, 0);
      atomic_store(&slot->gpu_ns, 0);
      atomic_store(&slot->tokens_ns, 0);
      atomic_store(&slot->refill_ns, 0);
      atomic_store(&slot->waited_ns, 0);
      atomic_store(&slot->submitted_ns, 0);
      atomic_store(&slot->quota_ppm, 0);
      atomic_store(&slot->uid, (uint32_t)client->uid);
      atomic_store(&slot->client_id, client->id);
      if (i + 1 > atomic_load(&page->n_slots))
         atomic_store(&page->n_slots, i + 1);
      atomic_fetch_add(&page->clients, 1);
      client->sched_slot = (int)i;
      apply(server, client);
      return 0;
   }
   util_warn("the schedule page is full (%u clients): client %" PRIu64 " is not scheduled",
             DAEMON_SCHED_SLOTS, client->id);
   return -ENOSPC;
}

void
srv_share_release(struct srv_server *server, struct srv_client *client)
{
   if (!server->sched || client->sched_slot < 0)
      return;
   struct daemon_sched_slot *slot = &server->sched->slots[client->sched_slot];
   /* a worker that ended with work in flight leaves nobody waiting on it */
   if (atomic_exchange(&slot->state, 0) & DAEMON_SCHED_ACTIVE)
      atomic_fetch_sub(&server->sched->active, 1);
   atomic_store(&slot->client_id, 0);
   atomic_fetch_sub(&server->sched->clients, 1);
   client->sched_slot = -1;
   atomic_fetch_add(&server->sched->epoch, 1);
   srv_share_wake(server);
}

void
srv_share_wake(struct srv_server *server)
{
   if (server->sched && atomic_load(&server->sched->waiters))
      util_futex_wake(&server->sched->epoch);
}

void
srv_share_renice(struct srv_server *server, struct srv_client *client, int nice)
{
   client->nice = nice;
   client->reniced = true;
   if (server->sched && client->sched_slot >= 0) {
      apply(server, client);
      srv_share_wake(server);
   }
}

void
srv_share_reload(struct srv_server *server)
{
   if (!server->sched)
      return;
   struct srv_client *c;
   util_list_for_each(c, &server->clients, link) {
      if (c->sched_slot >= 0)
         apply(server, c);
   }
   srv_share_wake(server);
}

void
srv_share_fill(const struct srv_server *server, const struct srv_client *client,
                Gpud__ClientInfo *info)
{
   if (!server->sched || client->sched_slot < 0)
      return;
   const struct daemon_sched_slot *slot = &server->sched->slots[client->sched_slot];
   info->nice = client->nice;
   info->weight = atomic_load(&slot->weight);
   info->quota_ppm = atomic_load(&slot->quota_ppm);
   uint32_t user = atomic_load(&slot->user);
   if (user && user <= DAEMON_SCHED_USERS)
      info->user_quota_ppm = atomic_load(&server->sched->users[user - 1].quota_ppm);
   info->waited_ns = atomic_load(&slot->waited_ns);
}
