/* SPDX-License-Identifier: MIT */
/* Messages through shared memory (util_ring.h). */
#include "util_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util_futex.h"
#include "util_spin.h"
#include "util_macros.h"
#include "util_memfd.h"
#include "util_time.h"

/* entries start on cache lines: a small one is one line */
#define ENTRY_ALIGN 64u

static bool
ring_size_ok(uint32_t size)
{
   return size >= UTIL_RING_MIN_SIZE && size <= UTIL_RING_MAX_SIZE && !(size & (size - 1));
}

uint64_t
util_ring_map_size(uint32_t command_size, uint32_t reply_size)
{
   if (!ring_size_ok(command_size) || !ring_size_ok(reply_size))
      return 0;
   return (uint64_t)UTIL_RING_HEADER_SIZE + command_size + reply_size;
}

int
util_ring_create(uint32_t command_size, uint32_t reply_size, int *ret_fd, void **ret_map)
{
   uint64_t size = util_ring_map_size(command_size, reply_size);
   if (!size)
      return -EINVAL;
   int fd;
   int r = util_memfd_create("gpud-ring", size, &fd);
   if (r < 0)
      return r;
   void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED) {
      r = -errno;
      close(fd);
      return r;
   }
   *ret_fd = fd;
   *ret_map = map;
   return 0;
}

int
util_ring_map(int fd, uint32_t command_size, uint32_t reply_size, void **ret_map)
{
   uint64_t size = util_ring_map_size(command_size, reply_size);
   if (!size)
      return -EINVAL;
   int r = util_memfd_check(fd, size);
   if (r < 0)
      return r;
   void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
   if (map == MAP_FAILED)
      return -errno;
   *ret_map = map;
   return 0;
}

void
util_ring_unmap(void *map, uint32_t command_size, uint32_t reply_size)
{
   uint64_t size = util_ring_map_size(command_size, reply_size);
   if (map && size)
      munmap(map, size);
}

void
util_ring_init(struct util_ring *r, void *map, uint32_t command_size, uint32_t reply_size,
               bool command, bool producer, size_t max_size)
{
   memset(r, 0, sizeof(*r));
   struct util_ring_header *h = map;
   uint8_t *base = (uint8_t *)map + UTIL_RING_HEADER_SIZE;
   r->ctrl = command ? &h->command : &h->reply;
   r->data = command ? base : base + command_size;
   r->size = command ? command_size : reply_size;
   /* Both ends start where the ring is now (0 for a new one), on an
    * entry's alignment whatever the words say. */
   r->pos = (producer ? atomic_load(&r->ctrl->head) : atomic_load(&r->ctrl->tail)) &
            ~(uint64_t)(ENTRY_ALIGN - 1);
   r->seen = atomic_load(&r->ctrl->tail);
   r->max_size = max_size;
   util_msg_reader_init(&r->fd_reader, 64);
}

void
util_ring_finish(struct util_ring *r)
{
   free(r->buf);
   r->buf = NULL;
   r->cap = 0;
   util_msg_reader_finish(&r->fd_reader);
}

/* ---- waiting ------------------------------------------------------------------ */

/* Whether the peer is gone: the socket hung up, or closing was set. */
static bool
peer_gone(const struct util_ring_wait *w)
{
   if (w->closing && atomic_load(w->closing))
      return true;
   struct pollfd p = {.fd = w->socket_fd, .events = POLLRDHUP};
   return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL));
}

/* Waits until ready(r) or the deadline: polls for spin_ns (or the window
 * given), then sleeps on state in slices.  0, -ETIMEDOUT or -ECONNRESET. */
static int
wait_for(struct util_ring *r, const struct util_ring_wait *w, struct util_spin_window *window,
         _Atomic uint32_t *state, bool (*ready)(struct util_ring *r), uint64_t timeout_ns)
{
   uint64_t start = util_now_ns();
   uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
   const uint64_t spin_ns = window ? window->ns : w->spin_ns;
   /* the clock as last read: what the window notes once the wait is over
    * (reading it again would delay the message by as much) */
   uint64_t now = start;
   bool slept = false;
   for (bool looked = false;; looked = true) {
      if (ready(r)) {
         if (window && looked)
            util_spin_window_note(window, now - start, now);
         if (slept && w->slept)
            (*w->slept)++;
         return 0;
      }
      now = util_now_ns();
      if (now >= deadline)
         return -ETIMEDOUT;
      if (now - start < spin_ns) {
         /* a few looks between two looks at the clock */
         const bool yield = util_spin_yields();
         for (unsigned i = 0; i < (yield ? 1u : 16u) && !ready(r); i++)
            util_spin_pause(yield);
         continue;
      }
      /* a peer publishes before it hangs up: look once more */
      if (peer_gone(w))
         return ready(r) ? 0 : -ECONNRESET;
      atomic_store(state, UTIL_RING_SLEEPING);
      if (ready(r)) {
         atomic_store(state, UTIL_RING_AWAKE);
         continue; /* noted above */
      }
      uint64_t slice = util_sleep_slice(now - start, w->slice_ns, deadline - now);
      util_futex_wait(state, UTIL_RING_SLEEPING, slice);
      atomic_store(state, UTIL_RING_AWAKE);
      slept = true;
      now = util_now_ns(); /* after a sleep, the clock is cheap */
   }
}

/* After publishing: the store before this load (a tag or the tail) and
 * the sleeper's store of its state before it looks again are sequentially
 * consistent, so either it sees what was published or we see it
 * sleeping. */
static void
wake(_Atomic uint32_t *state)
{
   if (atomic_load(state) == UTIL_RING_SLEEPING &&
       atomic_exchange(state, UTIL_RING_AWAKE) == UTIL_RING_SLEEPING)
      util_futex_wake(state);
}

void
util_ring_nudge(struct util_ring *r)
{
   wake(&r->ctrl->consumer_state);
}

void
util_ring_wake_consumer(struct util_ring *r)
{
   atomic_store(&r->ctrl->consumer_state, UTIL_RING_AWAKE);
   util_futex_wake(&r->ctrl->consumer_state);
}

/* ---- copying in and out, wrapping around ---------------------------------------- */

static void
copy_in(struct util_ring *r, uint64_t pos, const void *src, size_t size)
{
   if (!size)
      return;
   uint32_t off = (uint32_t)(pos & (r->size - 1));
   size_t first = r->size - off < size ? r->size - off : size;
   memcpy(r->data + off, src, first);
   memcpy(r->data, (const uint8_t *)src + first, size - first);
}

static void
copy_out(const struct util_ring *r, uint64_t pos, void *dst, size_t size)
{
   if (!size)
      return;
   uint32_t off = (uint32_t)(pos & (r->size - 1));
   size_t first = r->size - off < size ? r->size - off : size;
   memcpy(dst, r->data + off, first);
   memcpy((uint8_t *)dst + first, r->data, size - first);
}

static uint64_t
entry_bytes(uint32_t payload)
{
   return (sizeof(struct util_ring_entry) + (uint64_t)payload + ENTRY_ALIGN - 1) &
          ~(uint64_t)(ENTRY_ALIGN - 1);
}

/* The tag word of the entry at pos (on a cache line, so never split by
 * the ring's end). */
static _Atomic uint64_t *
tag_word(const struct util_ring *r, uint64_t pos)
{
   return (_Atomic uint64_t *)(void *)(r->data + (pos & (r->size - 1)));
}

/* ---- producing ------------------------------------------------------------------ */

/* Whether `want` bytes fit behind the tail last read (the tail is read
 * again only when they do not). */
static bool
has_room(struct util_ring *r)
{
   uint64_t used = r->pos - r->seen;
   if (used <= r->size && r->size - used >= r->want)
      return true;
   uint64_t tail = atomic_load(&r->ctrl->tail);
   /* a consumer claiming more than was published is treated as having read
    * nothing new (it only hurts its own connection) */
   used = r->pos - tail;
   if (used > r->size)
      return false;
   r->seen = tail;
   return r->size - used >= r->want;
}

static int
send_message(struct util_ring *r, const struct util_ring_wait *w, uint32_t type,
             const void *data, size_t size, const int *fds, unsigned n_fds,
             uint64_t timeout_ns, bool wake_consumer)
{
   if (n_fds) {
      int ms = timeout_ns == UINT64_MAX ? -1 : (int)(timeout_ns / 1000000u);
      int ret = util_msg_send_timeout(w->socket_fd, UTIL_MSG_FDS, NULL, 0, fds, n_fds, ms);
      if (ret < 0)
         return ret == -EPIPE ? -ECONNRESET : ret;
   }
   uint64_t start = 0; /* when it first waits for room */
   const uint8_t *p = data;
   size_t left = size;
   uint32_t max_fragment = r->size / 4 - (uint32_t)sizeof(struct util_ring_entry);
   bool first = true;
   do {
      uint32_t n = left > max_fragment ? max_fragment : (uint32_t)left;
      struct util_ring_entry e = {
         .type = type,
         .flags = left > n ? UTIL_RING_MORE : 0,
         .size = n,
         .n_fds = first ? n_fds : 0,
      };
      r->want = entry_bytes(n);
      if (!has_room(r)) {
         /* the consumer may be asleep with work to do: wake it first */
         wake(&r->ctrl->consumer_state);
         uint64_t now = util_now_ns();
         if (!start) {
            start = now;
            if (w->blocked_since)
               atomic_store(w->blocked_since, now);
         }
         uint64_t spent = now - start;
         uint64_t t = timeout_ns == UINT64_MAX ? UINT64_MAX
                      : spent >= timeout_ns   ? 0
                                              : timeout_ns - spent;
         int ret = wait_for(r, w, NULL, &r->ctrl->producer_state, has_room, t);
         if (ret < 0) {
            if (w->blocked_since)
               atomic_store(w->blocked_since, 0);
            return ret;
         }
      }
      /* the payload, the header but for its tag, then the tag: the
       * consumer sees the whole entry when it sees that */
      const uint64_t at = r->pos;
      copy_in(r, at + sizeof(e), p, n);
      copy_in(r, at + sizeof(e.tag), (const uint8_t *)&e + sizeof(e.tag),
              sizeof(e) - sizeof(e.tag));
      r->pos += entry_bytes(n);
      /* a fragment goes out at once: the consumer drains while we write */
      atomic_store(tag_word(r, at), util_ring_tag(at));
      atomic_store_explicit(&r->ctrl->head, r->pos, memory_order_relaxed);
      if (wake_consumer)
         wake(&r->ctrl->consumer_state);
      p += n;
      left -= n;
      first = false;
   } while (left > 0);
   if (start && w->blocked_since)
      atomic_store(w->blocked_since, 0);
   return 0;
}

int
util_ring_send(struct util_ring *r, const struct util_ring_wait *w, uint32_t type,
               const void *data, size_t size, const int *fds, unsigned n_fds,
               uint64_t timeout_ns)
{
   return send_message(r, w, type, data, size, fds, n_fds, timeout_ns, true);
}

int
util_ring_send_quiet(struct util_ring *r, const struct util_ring_wait *w, uint32_t type,
                     const void *data, size_t size)
{
   return send_message(r, w, type, data, size, NULL, 0, UINT64_MAX, false);
}

/* ---- consuming ------------------------------------------------------------------ */

/* Whether the entry at the tail is out: its tag is its position's (a
 * word left from an earlier lap, header or payload, is not). */
static bool
has_entry(struct util_ring *r)
{
   return atomic_load(tag_word(r, r->pos)) == util_ring_tag(r->pos);
}

uint64_t
util_ring_pending_bytes(const struct util_ring *r)
{
   uint64_t head = atomic_load_explicit(&r->ctrl->head, memory_order_relaxed);
   return head > r->pos && head - r->pos <= r->size ? head - r->pos : 0;
}

/* The consumer's tail for the producer to see, waking it if it sleeps for
 * room. */
static void
publish_tail(struct util_ring *r)
{
   if (r->seen == r->pos)
      return;
   atomic_store(&r->ctrl->tail, r->pos);
   r->seen = r->pos;
   wake(&r->ctrl->producer_state);
}

static int
reserve(struct util_ring *r, size_t size)
{
   if (size <= r->cap && r->buf)
      return 0;
   size_t cap = r->cap ? r->cap : 4096;
   while (cap < size)
      cap *= 2;
   uint8_t *buf = realloc(r->buf, cap);
   if (!buf)
      return -ENOMEM;
   r->buf = buf;
   r->cap = cap;
   return 0;
}

/* The fds the socket carries for a message, sent before its entry. */
static int
take_fds(struct util_ring *r, const struct util_ring_wait *w, unsigned n_fds,
         struct util_msg *msg)
{
   struct util_msg fm;
   int ret = util_msg_recv_packet(w->socket_fd, &r->fd_reader, &fm);
   if (ret < 0)
      return ret == -ECONNRESET ? ret : -EPROTO; /* -EAGAIN: announced, not sent */
   if (fm.type != UTIL_MSG_FDS || fm.size != 0 || fm.n_fds != n_fds) {
      util_msg_close_fds(&fm);
      return -EPROTO;
   }
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      msg->fds[i] = fm.fds[i];
   msg->n_fds = fm.n_fds;
   return 0;
}

int
util_ring_recv(struct util_ring *r, const struct util_ring_wait *w, struct util_msg *msg)
{
   memset(msg, 0, sizeof(*msg));
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      msg->fds[i] = -1;
   size_t size = 0;
   bool first = true;
   int ret = 0;
   for (;;) {
      if (!has_entry(r)) {
         /* drained: the producer may have all the room before we wait */
         publish_tail(r);
         ret = wait_for(r, w, w->window, &r->ctrl->consumer_state, has_entry,
                        w->timeout_ns ? w->timeout_ns : UINT64_MAX);
         if (ret < 0)
            goto fail;
      }
      /* has_entry loaded the tag: the copy sees what was stored before it
       * (a producer changing it now only spoils its own message) */
      struct util_ring_entry e;
      copy_out(r, r->pos, &e, sizeof(e));
      if (entry_bytes(e.size) > r->size / 4 ||
          (e.flags & ~(uint32_t)UTIL_RING_MORE) || (first ? e.n_fds > UTIL_MSG_MAX_FDS : e.n_fds) ||
          (first ? (e.type != UTIL_MSG_CONTROL && e.type != UTIL_MSG_STREAM) : e.type != msg->type)) {
         ret = -EPROTO;
         goto fail;
      }
      if (e.size > r->max_size - size) {
         ret = -EMSGSIZE;
         goto fail;
      }
      if (first) {
         msg->type = e.type;
         if (e.n_fds) {
            ret = take_fds(r, w, e.n_fds, msg);
            if (ret < 0)
               goto fail;
         }
      }
      ret = reserve(r, size + e.size);
      if (ret < 0)
         goto fail;
      copy_out(r, r->pos + sizeof(e), r->buf + size, e.size);
      size += e.size;
      r->pos += entry_bytes(e.size);
      if (r->pos - r->seen >= r->size / 8 ||
          atomic_load(&r->ctrl->producer_state) == UTIL_RING_SLEEPING)
         publish_tail(r);
      first = false;
      if (!(e.flags & UTIL_RING_MORE))
         break;
   }
   msg->data = r->buf ? (const void *)r->buf : (const void *)"";
   msg->size = size;
   return 0;
fail:
   util_msg_close_fds(msg);
   msg->n_fds = 0;
   return ret;
}
