/* SPDX-License-Identifier: MIT */
/*
 * The server's registry: its clients, workers and per-user accounts, the
 * programs whose workers crashed, and the small operations the server's
 * other files share on them (logging about a client under its user's rate
 * limit, queueing a message to a client, a program's crash back-off).  It
 * calls into none of them.
 */
#include "srv_registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "util_fd.h"
#include "util_log.h"
#include "util_time.h"

static bool account_log_allowed(struct srv_server *server, struct srv_account *a);
static unsigned recent_crashes(const struct srv_server *server,
                               const struct srv_crash_record *c, uint64_t *ret_last);

/* Lines about one user's connections are rate limited per user (root's are
 * not): a user connecting in a loop cannot flood the log. */
void
srv_client_log(struct srv_client *client, int level, const char *fmt, ...)
{
   if (client->account && !account_log_allowed(client->server, client->account))
      return;
   const struct util_log_client who = {
      .id = client->id,
      .pid = (int)client->pid,
      .uid = (unsigned)client->uid,
      .name = client->name,
   };
   va_list ap;
   va_start(ap, fmt);
   util_log_clientv((enum util_log_level)level, &who, fmt, ap);
   va_end(ap);
}

static void
account_refill(struct srv_server *server, struct srv_account *a)
{
   uint64_t now = util_now_ns();
   double burst = server->cfg.limits.log_burst;
   a->log_tokens += (double)(now - a->log_last_ns) / 1e9 * server->cfg.limits.log_per_second;
   if (a->log_tokens > burst)
      a->log_tokens = burst;
   a->log_last_ns = now;
}

static bool
account_log_allowed(struct srv_server *server, struct srv_account *a)
{
   if (a->uid == 0)
      return true;
   account_refill(server, a);
   if (a->log_tokens < 1.0) {
      a->log_suppressed++;
      return false;
   }
   a->log_tokens -= 1.0;
   if (a->log_suppressed) {
      util_warn("uid %u: %u lines about its connections suppressed", (unsigned)a->uid,
                a->log_suppressed);
      a->log_suppressed = 0;
   }
   return true;
}

struct srv_account *
srv_account_get(struct srv_server *server, uid_t uid)
{
   struct srv_account *a;
   util_list_for_each(a, &server->accounts, link) {
      if (a->uid == uid)
         return a;
   }
   a = calloc(1, sizeof(*a));
   if (!a)
      return NULL;
   a->uid = uid;
   a->log_tokens = server->cfg.limits.log_burst;
   a->log_last_ns = util_now_ns();
   util_list_add(&server->accounts, &a->link);
   return a;
}

/* An account goes once nothing is charged to it and its log budget is
 * full again (else reconnecting would reset the rate limit). */
void
srv_account_put(struct srv_server *server, struct srv_account *a)
{
   if (!a || a->connections || a->memory || a->log_suppressed)
      return;
   account_refill(server, a);
   if (a->log_tokens < server->cfg.limits.log_burst)
      return;
   util_list_remove(&a->link);
   free(a);
}

void
srv_client_queue(struct srv_client *client, const void *data, size_t size)
{
   if (util_msg_queue_push(&client->out, UTIL_MSG_CONTROL, data, size, NULL, 0) < 0 ||
       client->out.bytes > DAEMON_MAX_SERVER_QUEUE) {
      /* it does not read what it asked for: end it */
      shutdown(client->fd, SHUT_RDWR);
      return;
   }
   int r = util_msg_queue_flush(client->fd, &client->out);
   if (r == -EAGAIN)
      event_add(client->write_ev, NULL);
}

void
srv_client_queue_control(struct srv_client *client, const Gpud__ControlMessage *m)
{
   size_t size;
   void *buf = wire_control_pack(m, &size);
   if (buf)
      srv_client_queue(client, buf, size);
   free(buf);
}

struct srv_crash_record *
srv_crash_record_find(struct srv_server *server, uid_t uid, const char *name, bool create)
{
   struct srv_crash_record *c, *found = NULL;
   util_list_for_each_safe(c, &server->crashes, link) {
      if (c->uid == uid && !strcmp(c->name, name)) {
         found = c;
         continue;
      }
      /* records whose crashes are all past the cool-down go */
      uint64_t last;
      if (!recent_crashes(server, c, &last)) {
         util_list_remove(&c->link);
         free(c);
      }
   }
   if (found || !create)
      return found;
   c = calloc(1, sizeof(*c));
   if (c) {
      c->uid = uid;
      snprintf(c->name, sizeof(c->name), "%s", name);
      util_list_add(&server->crashes, &c->link);
   }
   return c;
}

/* Crashes of this program in the cool-down window. */
static unsigned
recent_crashes(const struct srv_server *server, const struct srv_crash_record *c,
               uint64_t *ret_last)
{
   uint64_t window = (uint64_t)server->cfg.limits.crash_cooldown_ms * 1000000ull;
   uint64_t now = util_now_ns();
   unsigned n = 0;
   *ret_last = 0;
   unsigned kept = c->count < 8 ? c->count : 8;
   for (unsigned i = 0; i < kept; i++) {
      uint64_t t = c->times_ns[i];
      if (now - t <= window) {
         n++;
         if (t > *ret_last)
            *ret_last = t;
      }
   }
   return n;
}

void
srv_crash_state(const struct srv_server *server, const struct srv_crash_record *c,
                 struct srv_crash_state *state)
{
   const struct daemon_limits *l = &server->cfg.limits;
   *state = (struct srv_crash_state){0};
   state->crashes = recent_crashes(server, c, &state->last_ns);
   state->refused = l->crash_limit && state->crashes >= l->crash_limit;
   if (!state->crashes || !l->crash_backoff_ms)
      return;
   /* the back-off doubles with each crash remembered, up to the maximum */
   uint64_t delay = l->crash_backoff_ms;
   for (unsigned i = 1; i < state->crashes && delay < l->crash_backoff_max_ms; i++)
      delay *= 2;
   if (delay > l->crash_backoff_max_ms)
      delay = l->crash_backoff_max_ms;
   state->backoff_ms = delay;
   state->not_before_ns = state->last_ns + delay * 1000000ull;
}

/* ---- small things the server's files share ------------------------------- */

uint32_t
srv_restart_grace_ms(const struct srv_server *server)
{
   return server->adopt_dir ? server->cfg.limits.restart_grace_ms : 0u;
}

/* Length of the UTF-8 character at s (RFC 3629: no overlong forms, no
 * surrogates); 0 when it is none, -1 when the string ends inside it. */
static int
utf8_char(const unsigned char *s)
{
   unsigned n;
   unsigned char lo = 0x80, hi = 0xbf;
   if (s[0] < 0x80)
      return 1;
   else if (s[0] >= 0xc2 && s[0] <= 0xdf)
      n = 2;
   else if (s[0] >= 0xe0 && s[0] <= 0xef)
      n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
   else if (s[0] >= 0xf0 && s[0] <= 0xf4)
      n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
   else
      return 0;
   for (unsigned i = 1; i < n; i++) {
      if (!s[i])
         return -1;
      if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
         return 0;
   }
   return (int)n;
}

/* A name the worker wrote, made fit to show: control characters and bytes
 * that are not UTF-8 become '?', and a character cut short at the end (the
 * status page's names are bounded) goes. */
void
srv_clean_text(char *name)
{
   unsigned char *p = (unsigned char *)name;
   while (*p) {
      int n = utf8_char(p);
      if (n < 0) {
         *p = 0;
         break;
      }
      if (n == 0 || *p < 0x20 || *p == 0x7f) {
         *p++ = '?';
         continue;
      }
      p += n;
   }
}

void
srv_server_discard_fd(int fd, void *data)
{
   struct srv_server *server = data;
   if (server->closer_fd >= 0 && write(server->closer_fd, &fd, sizeof(fd)) == sizeof(fd))
      return;
   /* The closer is stuck on one already: keep this one open rather than
    * stall the loop (it counts against the fd limit like any other). */
   static uint64_t last_warning;
   uint64_t now = util_now_ns();
   if (now - last_warning > 10ull * 1000000000ull) {
      util_warn("fds sent by peers are not closing; keeping them open");
      last_warning = now;
   }
}

void
srv_server_discard_fds(struct srv_server *server, struct util_msg *msg)
{
   for (unsigned i = 0; i < msg->n_fds && i < UTIL_MSG_MAX_FDS; i++) {
      if (msg->fds[i] >= 0)
         srv_server_discard_fd(util_fd_move(&msg->fds[i]), server);
   }
}
