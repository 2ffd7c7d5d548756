/* SPDX-License-Identifier: MIT */
/*
 * The rings (shared/util_ring.h) between two processes: messages of every
 * size through a small ring (wrapping around, filling it, fragments), both
 * sides sleeping and being woken, fds beside the ring, a peer dying at each
 * step, and a hostile producer or consumer scribbling on shared memory.
 */
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "unit_test.h"
#include "util_ring.h"
#include "util_time.h"

#define SMALL (64u * 1024u)

struct pair {
   int sv[2];  /* sv[0]: the client's (producer of commands), sv[1]: the worker's */
   int memfd;
   void *client_map;
   void *worker_map;
   struct util_ring client_out, client_in; /* commands out, replies in */
   struct util_ring worker_in, worker_out;
   struct util_ring_wait client_wait, worker_wait;
};

static void
pair_open(struct pair *p, uint32_t size, size_t max_size)
{
   CHECK_SYS(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->sv));
   CHECK_OK(util_ring_create(size, size, &p->memfd, &p->client_map));
   CHECK_OK(util_ring_map(p->memfd, size, size, &p->worker_map));
   util_ring_init(&p->client_out, p->client_map, size, size, true, true, 0);
   util_ring_init(&p->client_in, p->client_map, size, size, false, false, max_size);
   util_ring_init(&p->worker_in, p->worker_map, size, size, true, false, max_size);
   util_ring_init(&p->worker_out, p->worker_map, size, size, false, true, 0);
   p->client_wait = (struct util_ring_wait){
      .socket_fd = p->sv[0], .spin_ns = 20000, .slice_ns = 20000000};
   p->worker_wait = (struct util_ring_wait){
      .socket_fd = p->sv[1], .spin_ns = 20000, .slice_ns = 20000000};
}

/* Writes an entry at pos as a producer might, whatever it says (tag 0:
 * its position's), `payload` bytes long; the position after it. */
static uint64_t
put_entry(uint8_t *ring, uint32_t size, uint64_t pos, struct util_ring_entry e, uint64_t payload)
{
   if (!e.tag)
      e.tag = util_ring_tag(pos);
   for (unsigned b = sizeof(e.tag); b < sizeof(e); b++)
      ring[(pos + b) & (size - 1)] = ((uint8_t *)&e)[b];
   atomic_store((_Atomic uint64_t *)(void *)(ring + (pos & (size - 1))), e.tag);
   return (pos + sizeof(e) + payload + 63) & ~(uint64_t)63;
}

static void
pair_close(struct pair *p)
{
   util_ring_finish(&p->client_out);
   util_ring_finish(&p->client_in);
   util_ring_finish(&p->worker_in);
   util_ring_finish(&p->worker_out);
   util_ring_unmap(p->client_map, p->client_out.size, p->client_in.size);
   util_ring_unmap(p->worker_map, p->client_out.size, p->client_in.size);
   close(p->memfd);
   if (p->sv[0] >= 0)
      close(p->sv[0]);
   if (p->sv[1] >= 0)
      close(p->sv[1]);
}

/* The pattern of message i, byte j. */
static uint8_t
pattern(unsigned i, size_t j)
{
   return (uint8_t)(i * 131u + j * 7u + (j >> 9));
}

static size_t
message_size(unsigned i)
{
   /* small ones, ones about the fragment size, and ones many times the ring */
   static const size_t sizes[] = {0, 1, 7, 8, 9, 100, 4096, SMALL / 4 - 16, SMALL / 4,
                                  SMALL / 2 + 3, SMALL, 3 * SMALL + 5, 1u << 20};
   return sizes[(i * 7u) % UTIL_ARRAY_SIZE(sizes)];
}

static void
fill(uint8_t *buf, unsigned i, size_t size)
{
   for (size_t j = 0; j < size; j++)
      buf[j] = pattern(i, j);
}

static void
check_message(const struct util_msg *m, unsigned i)
{
   CHECK_EQ(m->type, (i & 1) ? UTIL_MSG_CONTROL : UTIL_MSG_STREAM);
   CHECK_EQ(m->size, message_size(i));
   const uint8_t *d = m->data;
   for (size_t j = 0; j < m->size; j++) {
      if (d[j] != pattern(i, j))
         unit_fail(__FILE__, __LINE__, "message %u byte %zu: %u, expected %u", i, j, d[j],
                   pattern(i, j));
   }
   CHECK_EQ(m->n_fds, 0);
}

/* A child producing messages 0..n-1 on the command ring, pausing now and
 * then so the consumer sleeps. */
static pid_t
start_producer(struct pair *p, unsigned n, unsigned pause_every)
{
   pid_t pid = fork();
   CHECK_SYS(pid);
   if (pid == 0) {
      close(p->sv[1]); /* the worker's end: its hang-up is the parent's exit */
      static uint8_t buf[1u << 20];
      for (unsigned i = 0; i < n; i++) {
         size_t size = message_size(i);
         fill(buf, i, size);
         int r = util_ring_send(&p->client_out, &p->client_wait,
                                (i & 1) ? UTIL_MSG_CONTROL : UTIL_MSG_STREAM, buf, size, NULL, 0,
                                UINT64_MAX);
         if (r < 0)
            _exit(10);
         if (pause_every && i % pause_every == 0) {
            struct timespec ts = {0, 30 * 1000000L};
            nanosleep(&ts, NULL);
         }
      }
      _exit(0);
   }
   return pid;
}

static int
wait_child(pid_t pid)
{
   int status;
   CHECK_SYS(waitpid(pid, &status, 0));
   return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Every size, wrapping around a 64 KiB ring hundreds of times, with a
 * consumer that sometimes lags (the ring fills, the producer waits) and a
 * producer that sometimes pauses (the consumer sleeps). */
static void
test_wrap_and_fragments(void)
{
   struct pair p;
   pair_open(&p, SMALL, 2u << 20);
   const unsigned n = 400;
   pid_t pid = start_producer(&p, n, 37);
   close(p.sv[0]);
   for (unsigned i = 0; i < n; i++) {
      struct util_msg m;
      CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
      check_message(&m, i);
      if (i % 53 == 0) {
         struct timespec ts = {0, 20 * 1000000L};
         nanosleep(&ts, NULL);
      }
   }
   CHECK_EQ(wait_child(pid), 0);
   /* all of it went through a ring of SMALL bytes */
   CHECK(atomic_load(&p.client_out.ctrl->head) > 100ull * SMALL);
   p.sv[0] = -1;
   pair_close(&p);
}

/* Waits until the consumer of r sleeps. */
static void
wait_consumer_sleeps(struct util_ring *r)
{
   uint64_t deadline = util_now_ns() + 5000000000ull;
   while (atomic_load(&r->ctrl->consumer_state) != UTIL_RING_SLEEPING)
      CHECK(util_now_ns() < deadline);
}

/* The producer blocks on a full ring until the consumer reads; the
 * consumer, asleep on an empty ring, wakes for the next message. */
static void
test_full_ring_and_sleep(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   static uint8_t buf[SMALL / 4 - 16];
   memset(buf, 0x5a, sizeof(buf));
   /* fill it: four entries of exactly a quarter each (headers included) */
   unsigned fitted = 0;
   while (util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, buf, sizeof(buf), NULL,
                         0, 10 * 1000000ull) == 0)
      fitted++;
   CHECK_EQ(fitted, 4);
   /* a child drains it after a while; the blocked producer gets through */
   pid_t pid = fork();
   CHECK_SYS(pid);
   if (pid == 0) {
      close(p.sv[0]);
      struct timespec ts = {0, 100 * 1000000L};
      nanosleep(&ts, NULL);
      for (unsigned i = 0; i < fitted + 2; i++) {
         struct util_msg m;
         if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != sizeof(buf))
            _exit(1);
      }
      /* now empty: this one sleeps until the parent sends */
      struct util_msg m;
      if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != 3)
         _exit(2);
      _exit(0);
   }
   uint64_t start = util_now_ns();
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, buf, sizeof(buf),
                           NULL, 0, UINT64_MAX));
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, buf, sizeof(buf),
                           NULL, 0, UINT64_MAX));
   CHECK(util_now_ns() - start > 50 * 1000000ull); /* it waited for the reader */
   /* wait until the consumer sleeps, then wake it */
   wait_consumer_sleeps(&p.client_out);
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "abc", 3, NULL, 0,
                           UINT64_MAX));
   CHECK_EQ(wait_child(pid), 0);
   pair_close(&p);
}

/* fds travel beside the ring and arrive with their message. */
static void
test_fds(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   int pipefd[2];
   CHECK_SYS(pipe(pipefd));
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "one", 3, NULL, 0,
                           UINT64_MAX));
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "two", 3, pipefd, 2,
                           UINT64_MAX));
   struct util_msg m;
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK_EQ(m.n_fds, 0);
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK_EQ(m.n_fds, 2);
   CHECK(!memcmp(m.data, "two", 3));
   CHECK_SYS(write(m.fds[1], "x", 1));
   char c;
   CHECK_EQ(read(pipefd[0], &c, 1), 1);
   util_msg_close_fds(&m);
   /* an entry announcing fds the socket does not carry */
   p.client_out.pos = put_entry(p.client_out.data, SMALL, p.client_out.pos,
                                (struct util_ring_entry){.type = UTIL_MSG_STREAM, .n_fds = 1},
                                0);
   CHECK_ERR(util_ring_recv(&p.worker_in, &p.worker_wait, &m), EPROTO);
   close(pipefd[0]);
   close(pipefd[1]);
   pair_close(&p);
}

/* A peer that dies at each step never leaves the other side waiting. */
static void
test_peer_dies(void)
{
   static uint8_t big[3 * SMALL];
   for (unsigned step = 0; step < 4; step++) {
      struct pair p;
      pair_open(&p, SMALL, 1u << 20);
      pid_t pid = fork();
      CHECK_SYS(pid);
      if (pid == 0) {
         close(p.sv[1]);
         switch (step) {
         case 0: /* before anything */
            break;
         case 1: /* after the first fragment of a message */
         {
            put_entry(p.client_out.data, SMALL, 0,
                      (struct util_ring_entry){.type = UTIL_MSG_STREAM, .flags = UTIL_RING_MORE,
                                               .size = 100},
                      100);
            break;
         }
         case 2: /* after a whole message */
            util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "ok", 2, NULL, 0,
                           UINT64_MAX);
            break;
         case 3: /* while waiting for a reply that never comes */
            alarm(1);
            {
               struct util_msg m;
               util_ring_recv(&p.client_in, &p.client_wait, &m);
            }
            break;
         }
         _exit(0);
      }
      close(p.sv[0]);
      uint64_t start = util_now_ns();
      struct util_msg m;
      int r;
      do
         r = util_ring_recv(&p.worker_in, &p.worker_wait, &m);
      while (r == 0);
      CHECK_ERR(r, ECONNRESET);
      CHECK(util_now_ns() - start < 3000000000ull);
      wait_child(pid);
      p.sv[0] = -1;
      pair_close(&p);
   }
   /* a consumer that dies while the producer waits for room */
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   pid_t pid = fork();
   CHECK_SYS(pid);
   if (pid == 0) {
      struct timespec ts = {0, 50 * 1000000L};
      nanosleep(&ts, NULL);
      _exit(0);
   }
   close(p.sv[1]);
   int r;
   do
      r = util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, big, sizeof(big), NULL,
                         0, UINT64_MAX);
   while (r == 0);
   /* the socket is still open in the child until it dies, then hangs up */
   CHECK_ERR(r, ECONNRESET);
   wait_child(pid);
   p.sv[1] = -1;
   pair_close(&p);
}

/* A consumer that reads nothing: the producer gives up at its limit. */
static void
test_timeout(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   static uint8_t big[2 * SMALL];
   uint64_t start = util_now_ns();
   CHECK_ERR(util_ring_send(&p.worker_out, &p.worker_wait, UTIL_MSG_STREAM, big, sizeof(big),
                            NULL, 0, 100 * 1000000ull),
             ETIMEDOUT);
   CHECK(util_now_ns() - start >= 100 * 1000000ull);
   /* a consumer claiming to have read more than was written: once the
    * producer needs the tail (the ring is full by what it saw last), it
    * waits as for a consumer that reads nothing */
   struct pair q;
   pair_open(&q, SMALL, 1u << 20);
   atomic_store(&q.worker_out.ctrl->tail, UINT64_MAX / 2);
   CHECK_ERR(util_ring_send(&q.worker_out, &q.worker_wait, UTIL_MSG_STREAM, big, sizeof(big),
                            NULL, 0, 50 * 1000000ull),
             ETIMEDOUT);
   pair_close(&p);
   pair_close(&q);
}

static uint64_t
xorshift(uint64_t *s)
{
   *s ^= *s << 13;
   *s ^= *s >> 7;
   *s ^= *s << 17;
   return *s;
}

/* A hostile producer: random entries and tags.  The consumer returns a
 * message or an error, never reads outside the ring (AddressSanitizer
 * watches in CI) and never takes more than max_size. */
static void
test_hostile_producer(void)
{
   uint64_t rng = 0x9e3779b97f4a7c15ull;
#define NEXT() xorshift(&rng)
   unsigned errors = 0, messages = 0;
   for (unsigned iter = 0; iter < 20000; iter++) {
      struct pair p;
      pair_open(&p, SMALL, 4096);
      p.worker_wait.slice_ns = 1000000;
      p.worker_wait.spin_ns = 0;
      uint8_t *ring = p.client_out.data;
      uint64_t start = NEXT() & ~(uint64_t)63;
      /* both ends start at a random place */
      atomic_store(&p.worker_in.ctrl->tail, start);
      p.worker_in.pos = start;
      unsigned n = 1 + (unsigned)(NEXT() % 4);
      uint64_t pos = start;
      for (unsigned k = 0; k < n; k++) {
         struct util_ring_entry e;
         /* a tag of another position now and then: the consumer waits
          * for its own (the producer is gone: -ECONNRESET) */
         e.tag = NEXT() % 6 == 0 ? NEXT() : 0;
         e.type = (uint8_t)(NEXT() % 4);
         e.flags = (uint8_t)(NEXT() % 8 == 0 ? NEXT() : NEXT() % 2);
         e.size = (uint32_t)(NEXT() % 5 == 0 ? NEXT() : NEXT() % 5000);
         e.n_fds = (uint16_t)(NEXT() % 10 == 0 ? NEXT() % 12 : 0);
         /* the next entry where the size says, or somewhere else */
         uint64_t payload = NEXT() % 3 != 0 ? e.size : NEXT() % 200;
         pos = put_entry(ring, SMALL, pos, e, payload);
      }
      /* the producer is gone, so an incomplete message ends in an error */
      close(p.sv[0]);
      for (;;) {
         struct util_msg m;
         int r = util_ring_recv(&p.worker_in, &p.worker_wait, &m);
         if (r < 0) {
            CHECK(r == -EPROTO || r == -EMSGSIZE || r == -ECONNRESET);
            errors++;
            break;
         }
         CHECK(m.size <= 4096);
         CHECK(m.type == UTIL_MSG_STREAM || m.type == UTIL_MSG_CONTROL);
         messages++;
         util_msg_close_fds(&m);
      }
      util_ring_finish(&p.worker_in);
      util_ring_finish(&p.client_in);
      util_ring_unmap(p.client_map, SMALL, SMALL);
      util_ring_unmap(p.worker_map, SMALL, SMALL);
      close(p.memfd);
      close(p.sv[1]);
   }
   CHECK(messages > 100 && errors == 20000);
#undef NEXT
}

/* What an earlier lap left where the next entry will be (its tag, or a
 * payload holding that position's number) is not an entry; the entry is,
 * once its tag is stored. */
static void
test_stale_laps(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   p.worker_wait.spin_ns = 0;
   p.worker_wait.timeout_ns = 20 * 1000000ull;
   const uint64_t pos = 3 * (uint64_t)SMALL + 4096; /* the fourth lap */
   atomic_store(&p.worker_in.ctrl->tail, pos);
   p.worker_in.pos = pos;
   uint64_t *word = (uint64_t *)(void *)(p.client_out.data + (pos & (SMALL - 1)));
   const uint64_t stale[] = {util_ring_tag(pos - SMALL), util_ring_tag(pos - 2 * SMALL), pos,
                             pos >> 2, (pos >> 2) | 1, 0};
   struct util_msg m;
   for (unsigned i = 0; i < UTIL_ARRAY_SIZE(stale); i++) {
      *word = stale[i];
      CHECK_ERR(util_ring_recv(&p.worker_in, &p.worker_wait, &m), ETIMEDOUT);
   }
   memcpy(p.client_out.data + (pos & (SMALL - 1)) + sizeof(struct util_ring_entry), "lap", 3);
   put_entry(p.client_out.data, SMALL, pos,
             (struct util_ring_entry){.type = UTIL_MSG_STREAM, .size = 3}, 3);
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK(m.size == 3 && !memcmp(m.data, "lap", 3));
   pair_close(&p);
}

/* A quiet message leaves a sleeping consumer asleep until a nudge, or the
 * next message sent as usual, wakes it.  Quiet messages many times the
 * ring's size still get through (the producer wakes the consumer for
 * room). */
static void
test_quiet(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   int told[2];
   CHECK_SYS(pipe(told));
   pid_t pid = fork();
   CHECK_SYS(pid);
   if (pid == 0) {
      close(p.sv[0]);
      close(told[0]);
      /* slices longer than the test: only a wake-up ends the sleep */
      p.worker_wait.spin_ns = 0;
      p.worker_wait.slice_ns = 60ull * 1000000000ull;
      struct util_msg m;
      if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != 5 ||
          memcmp(m.data, "quiet", 5))
         _exit(1);
      if (write(told[1], "q", 1) != 1)
         _exit(2);
      if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != 6 ||
          memcmp(m.data, "quiet2", 6))
         _exit(5);
      if (write(told[1], "q", 1) != 1)
         _exit(6);
      if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != 4 ||
          memcmp(m.data, "loud", 4))
         _exit(3);
      /* then quiet messages of 64 times the ring, in order */
      for (unsigned i = 0; i < 256; i++) {
         if (util_ring_recv(&p.worker_in, &p.worker_wait, &m) < 0 || m.size != SMALL / 4 - 16 ||
             ((const uint8_t *)m.data)[0] != (uint8_t)i)
            _exit(4);
      }
      _exit(0);
   }
   close(told[1]);
   wait_consumer_sleeps(&p.client_out);
   CHECK_OK(util_ring_send_quiet(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "quiet", 5));
   /* still asleep, the message unread */
   struct pollfd pfd = {.fd = told[0], .events = POLLIN};
   CHECK_EQ(poll(&pfd, 1, 200), 0);
   CHECK_EQ(atomic_load(&p.client_out.ctrl->consumer_state), UTIL_RING_SLEEPING);
   util_ring_nudge(&p.client_out);
   CHECK_EQ(poll(&pfd, 1, 5000), 1);
   char c;
   CHECK_EQ(read(told[0], &c, 1), 1);
   /* asleep again: a quiet one, then one as usual bring both */
   wait_consumer_sleeps(&p.client_out);
   CHECK_OK(util_ring_send_quiet(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "quiet2", 6));
   CHECK_EQ(poll(&pfd, 1, 200), 0);
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, "loud", 4, NULL, 0,
                           UINT64_MAX));
   CHECK_EQ(poll(&pfd, 1, 5000), 1);
   static uint8_t buf[SMALL / 4 - 16];
   wait_consumer_sleeps(&p.client_out);
   for (unsigned i = 0; i < 256; i++) {
      memset(buf, (int)i, sizeof(buf));
      CHECK_OK(util_ring_send_quiet(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, buf,
                                    sizeof(buf)));
   }
   /* the last few wait for the next message as usual */
   CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, NULL, 0, NULL, 0,
                           UINT64_MAX));
   CHECK_EQ(wait_child(pid), 0);
   close(told[0]);
   pair_close(&p);
}

/* What the worker checks before it maps a client's memfd. */
static void
test_map_checks(void)
{
   int fd;
   void *map;
   CHECK_ERR(util_ring_create(SMALL + 1, SMALL, &fd, &map), EINVAL);
   CHECK_ERR(util_ring_create(SMALL, UTIL_RING_MAX_SIZE * 2u, &fd, &map), EINVAL);
   CHECK_OK(util_ring_create(SMALL, SMALL, &fd, &map));
   void *other;
   CHECK_ERR(util_ring_map(fd, SMALL * 2, SMALL, &other), ERANGE);
   util_ring_unmap(map, SMALL, SMALL);
   close(fd);
   /* a memfd that may shrink */
   fd = memfd_create("unsealed", MFD_CLOEXEC);
   CHECK_SYS(fd);
   CHECK_SYS(ftruncate(fd, (off_t)util_ring_map_size(SMALL, SMALL)));
   CHECK(util_ring_map(fd, SMALL, SMALL, &other) < 0);
   close(fd);
}

/* What the consumer sees of the producer's lead without taking it: the
 * entries' bytes, none once taken, and nothing from a head out of bounds. */
static void
test_pending_bytes(void)
{
   struct pair p;
   pair_open(&p, SMALL, 1u << 20);
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 0);
   uint8_t buf[100] = {0};
   for (unsigned i = 0; i < 3; i++)
      CHECK_OK(util_ring_send(&p.client_out, &p.client_wait, UTIL_MSG_STREAM, buf, sizeof(buf),
                              NULL, 0, UINT64_MAX));
   /* 16 bytes of entry header and 100 of payload, on a cache line */
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 3 * 128);
   struct util_msg m;
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 2 * 128);
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK_OK(util_ring_recv(&p.worker_in, &p.worker_wait, &m));
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 0);
   /* a producer that writes what it likes there */
   atomic_store(&p.worker_in.ctrl->head, UINT64_MAX);
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 0);
   atomic_store(&p.worker_in.ctrl->head, p.worker_in.pos + 3u * SMALL);
   CHECK_EQ(util_ring_pending_bytes(&p.worker_in), 0);
   pair_close(&p);
}

UNIT_MAIN(UNIT_TEST(test_wrap_and_fragments), UNIT_TEST(test_pending_bytes), UNIT_TEST(test_full_ring_and_sleep),
          UNIT_TEST(test_fds), UNIT_TEST(test_peer_dies), UNIT_TEST(test_timeout),
          UNIT_TEST(test_hostile_producer), UNIT_TEST(test_stale_laps),
          UNIT_TEST(test_map_checks), UNIT_TEST(test_quiet))
