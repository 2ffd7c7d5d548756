/* SPDX-License-Identifier: MIT */
/* util_transport: messages and fds across socket pairs, split packets,
 * malformed ones from a hostile peer, listening, queued sends, timeouts. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "unit_test.h"
#include "util_fd.h"
#include "util_memfd.h"
#include "util_transport.h"

#define MAX_PAYLOAD UTIL_PACKET_MAX_PAYLOAD

static void
make_pair(int sv[2])
{
   CHECK_SYS(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
}

static void
close_pair(int sv[2])
{
   util_fd_close(&sv[0]);
   util_fd_close(&sv[1]);
}

static void
set_nonblock(int fd)
{
   int fl = fcntl(fd, F_GETFL);
   CHECK_SYS(fl);
   CHECK_SYS(fcntl(fd, F_SETFL, fl | O_NONBLOCK));
}

static bool
same_file(int a, int b)
{
   struct stat sa, sb;
   CHECK_SYS(fstat(a, &sa));
   CHECK_SYS(fstat(b, &sb));
   return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void
fill_pattern(uint8_t *p, size_t size, uint32_t seed)
{
   uint32_t x = seed * 2654435761u + 1;
   for (size_t i = 0; i < size; i++) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      p[i] = (uint8_t)x;
   }
}

/* Sends one hand-made packet, as a hostile peer would. */
static void
raw_send(int fd, uint32_t type, uint32_t flags, const void *payload, size_t size,
         const int *fds, unsigned n_fds)
{
   struct util_packet_header hdr = {.type = type, .flags = flags};
   struct iovec iov[2] = {
       {.iov_base = &hdr, .iov_len = sizeof(hdr)},
       {.iov_base = (void *)payload, .iov_len = size},
   };
   union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(sizeof(int) * 32)];
   } cbuf;
   struct msghdr mh = {.msg_iov = iov, .msg_iovlen = size ? 2 : 1};

   CHECK(n_fds <= 32);
   if (n_fds) {
      memset(&cbuf, 0, sizeof(cbuf));
      mh.msg_control = cbuf.buf;
      mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
      struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
      memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
   }
   CHECK_EQ(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)(sizeof(hdr) + size));
}

/* Sends raw bytes as one packet (for headers that are too short). */
static void
raw_send_bytes(int fd, const void *bytes, size_t size, const int *fds, unsigned n_fds)
{
   struct iovec iov = {.iov_base = (void *)bytes, .iov_len = size};
   union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(sizeof(int) * 8)];
   } cbuf;
   struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

   CHECK(n_fds <= 8);
   if (n_fds) {
      memset(&cbuf, 0, sizeof(cbuf));
      mh.msg_control = cbuf.buf;
      mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
      struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
      memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
   }
   CHECK_EQ(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)size);
}

/* Opens n throwaway fds (pipe ends) to send. */
static void
open_fds(int *fds, unsigned n)
{
   for (unsigned i = 0; i < n; i += 2) {
      int p[2];
      CHECK_SYS(pipe2(p, O_CLOEXEC));
      fds[i] = p[0];
      if (i + 1 < n)
         fds[i + 1] = p[1];
      else
         close(p[1]);
   }
}

static void
close_fds(int *fds, unsigned n)
{
   for (unsigned i = 0; i < n; i++)
      util_fd_close(&fds[i]);
}

/* After a failed receive: the fd numbers our in-flight fds were sent from
 * (now free again, so the lowest-numbered ones the kernel would hand out
 * on receipt) must not be open, and the process must hold exactly the fds
 * it held before. */
static void
check_no_leak(int base_count, const int *numbers, unsigned n)
{
   CHECK_EQ(unit_count_fds(), base_count);
   for (unsigned i = 0; i < n; i++)
      CHECK(!unit_fd_is_open(numbers[i]));
}

struct sender {
   pthread_t thread;
   int fd;
   uint32_t type;
   const void *data;
   size_t size;
   const int *fds;
   unsigned n_fds;
   unsigned repeat;
   int result;
};

static void *
sender_main(void *arg)
{
   struct sender *s = arg;
   unsigned repeat = s->repeat ? s->repeat : 1;
   s->result = 0;
   for (unsigned i = 0; i < repeat && s->result == 0; i++)
      s->result = util_msg_send(s->fd, s->type, s->data, s->size, s->fds, s->n_fds);
   return NULL;
}

static void
sender_start(struct sender *s)
{
   CHECK_EQ(pthread_create(&s->thread, NULL, sender_main, s), 0);
}

static int
sender_join(struct sender *s)
{
   CHECK_EQ(pthread_join(s->thread, NULL), 0);
   return s->result;
}

static void
test_roundtrip_small(void)
{
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;

   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, "hello", 5, NULL, 0));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.type, UTIL_MSG_CONTROL);
   CHECK_EQ(msg.size, 5);
   CHECK(memcmp(msg.data, "hello", 5) == 0);
   CHECK_EQ(msg.n_fds, 0);
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      CHECK_EQ(msg.fds[i], -1);

   /* Empty payload: one header-only packet, still a message. */
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_STREAM, NULL, 0, NULL, 0));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.type, UTIL_MSG_STREAM);
   CHECK_EQ(msg.size, 0);
   CHECK_EQ(msg.n_fds, 0);

   /* A message is exactly one packet when it fits. */
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_STREAM, "x", 1, NULL, 0));
   char raw[64];
   ssize_t n = recv(sv[1], raw, sizeof(raw), 0);
   CHECK_EQ(n, sizeof(struct util_packet_header) + 1);
   struct util_packet_header hdr;
   memcpy(&hdr, raw, sizeof(hdr));
   CHECK_EQ(hdr.type, UTIL_MSG_STREAM);
   CHECK_EQ(hdr.flags, 0);

   util_msg_reader_finish(&r);
   util_msg_reader_finish(&r); /* idempotent */
   util_msg_reader_finish(NULL);
   close_pair(sv);
}

static void
test_roundtrip_fds(void)
{
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;

   int p[2];
   CHECK_SYS(pipe2(p, O_CLOEXEC));
   int mfd;
   CHECK_OK(util_memfd_create("test", 4096, &mfd));
   int fds[3] = {p[0], p[1], mfd};

   int base = unit_count_fds();

   /* Fds with an empty payload. */
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, NULL, 0, fds, 3));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.size, 0);
   CHECK_EQ(msg.n_fds, 3);
   CHECK_EQ(unit_count_fds(), base + 3);
   for (unsigned i = 0; i < 3; i++) {
      CHECK(msg.fds[i] >= 0);
      CHECK(msg.fds[i] != fds[i]);
      CHECK(same_file(msg.fds[i], fds[i]));
      CHECK(unit_fd_is_cloexec(msg.fds[i]));
   }
   for (unsigned i = 3; i < UTIL_MSG_MAX_FDS; i++)
      CHECK_EQ(msg.fds[i], -1);

   /* The received pipe end works. */
   CHECK_EQ(write(msg.fds[1], "abc", 3), 3);
   char buf[3];
   CHECK_EQ(read(p[0], buf, 3), 3);
   CHECK(memcmp(buf, "abc", 3) == 0);
   CHECK_OK(util_memfd_check(msg.fds[2], 4096));

   /* The caller may move an fd out; close_fds closes the rest. */
   int moved = util_fd_move(&msg.fds[0]);
   CHECK_EQ(msg.fds[0], -1);
   util_msg_close_fds(&msg);
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      CHECK_EQ(msg.fds[i], -1);
   CHECK(unit_fd_is_open(moved));
   util_fd_close(&moved);
   CHECK_EQ(unit_count_fds(), base);
   util_msg_close_fds(NULL);

   /* The full UTIL_MSG_MAX_FDS, with a payload. */
   int many[UTIL_MSG_MAX_FDS];
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      many[i] = fds[i % 3];
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_STREAM, "payload", 7, many, UTIL_MSG_MAX_FDS));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.n_fds, UTIL_MSG_MAX_FDS);
   CHECK_EQ(msg.size, 7);
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++) {
      CHECK(same_file(msg.fds[i], many[i]));
      CHECK(unit_fd_is_cloexec(msg.fds[i]));
   }
   util_msg_close_fds(&msg);
   CHECK_EQ(unit_count_fds(), base);

   close_fds(fds, 3);
   util_msg_reader_finish(&r);
   close_pair(sv);
}

static void
roundtrip_size(int sv[2], struct util_msg_reader *r, size_t size, unsigned n_fds)
{
   uint8_t *data = malloc(size ? size : 1);
   CHECK(data);
   fill_pattern(data, size, (uint32_t)size);

   int fds[UTIL_MSG_MAX_FDS];
   open_fds(fds, n_fds);
   int base = unit_count_fds();

   struct sender s = {
       .fd = sv[0],
       .type = UTIL_MSG_STREAM,
       .data = data,
       .size = size,
       .fds = fds,
       .n_fds = n_fds,
   };
   sender_start(&s);

   /* Wait for the start of the message, as an event loop would on a
    * non-blocking socket. */
   struct pollfd pfd = {.fd = sv[1], .events = POLLIN};
   CHECK_EQ(poll(&pfd, 1, -1), 1);

   struct util_msg msg;
   CHECK_OK(util_msg_recv(sv[1], r, &msg));
   CHECK_OK(sender_join(&s));

   CHECK_EQ(msg.type, UTIL_MSG_STREAM);
   CHECK_EQ(msg.size, size);
   CHECK(size == 0 || memcmp(msg.data, data, size) == 0);
   CHECK_EQ(msg.n_fds, n_fds);
   for (unsigned i = 0; i < n_fds; i++) {
      CHECK(same_file(msg.fds[i], fds[i]));
      CHECK(unit_fd_is_cloexec(msg.fds[i]));
   }
   CHECK_EQ(unit_count_fds(), base + (int)n_fds);
   util_msg_close_fds(&msg);
   CHECK_EQ(unit_count_fds(), base);

   close_fds(fds, n_fds);
   free(data);
}

static void
test_roundtrip_multi_packet(void)
{
   static const size_t sizes[] = {
       0,
       1,
       MAX_PAYLOAD - 1,
       MAX_PAYLOAD,
       MAX_PAYLOAD + 1,
       2 * MAX_PAYLOAD,
       3 * MAX_PAYLOAD - 5,
       1 << 20,
       (1 << 20) + 7,
       4 << 20,
   };
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 8 << 20);

   for (size_t i = 0; i < UTIL_ARRAY_SIZE(sizes); i++) {
      roundtrip_size(sv, &r, sizes[i], 0);
      roundtrip_size(sv, &r, sizes[i], 1 + (unsigned)i % UTIL_MSG_MAX_FDS);
   }
   roundtrip_size(sv, &r, 1 << 20, UTIL_MSG_MAX_FDS);
   CHECK(r.cap <= r.max_size);

   util_msg_reader_finish(&r);
   close_pair(sv);
}

static void
test_packet_layout(void)
{
   /* 2.5 packets: MORE, MORE, last; fds only on the first. */
   int sv[2];
   make_pair(sv);
   size_t size = 2 * MAX_PAYLOAD + MAX_PAYLOAD / 2;
   uint8_t *data = calloc(1, size);
   uint8_t *buf = malloc(MAX_PAYLOAD + 64);
   CHECK(data && buf);
   int fd = sv[0];

   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, data, size, &fd, 1));
   for (int i = 0; i < 3; i++) {
      union {
         struct cmsghdr align;
         char buf[CMSG_SPACE(sizeof(int) * 8)];
      } cbuf;
      struct iovec iov = {.iov_base = buf, .iov_len = MAX_PAYLOAD + 64};
      struct msghdr mh = {
          .msg_iov = &iov,
          .msg_iovlen = 1,
          .msg_control = cbuf.buf,
          .msg_controllen = sizeof(cbuf.buf),
      };
      ssize_t n = recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC);
      struct util_packet_header hdr;
      memcpy(&hdr, buf, sizeof(hdr));
      CHECK_EQ(hdr.type, UTIL_MSG_CONTROL);
      CHECK_EQ(hdr.flags, i < 2 ? UTIL_PACKET_MORE : 0);
      CHECK_EQ(n, sizeof(hdr) + (i < 2 ? MAX_PAYLOAD : MAX_PAYLOAD / 2));
      struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
      if (i == 0) {
         CHECK(c && c->cmsg_type == SCM_RIGHTS);
         CHECK_EQ(c->cmsg_len, CMSG_LEN(sizeof(int)));
         int got;
         memcpy(&got, CMSG_DATA(c), sizeof(int));
         util_fd_close(&got);
      } else {
         CHECK(c == NULL);
      }
   }
   free(buf);
   free(data);
   close_pair(sv);
}

static void
test_many_messages(void)
{
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   size_t size = 3 * MAX_PAYLOAD + 11;
   uint8_t *data = malloc(size);
   CHECK(data);
   fill_pattern(data, size, 7);

   struct sender s = {
       .fd = sv[0],
       .type = UTIL_MSG_CONTROL,
       .data = data,
       .size = size,
       .repeat = 200,
   };
   sender_start(&s);
   for (int i = 0; i < 200; i++) {
      struct util_msg msg;
      CHECK_OK(util_msg_recv(sv[1], &r, &msg));
      CHECK_EQ(msg.size, size);
      CHECK(memcmp(msg.data, data, size) == 0);
   }
   CHECK_OK(sender_join(&s));

   free(data);
   util_msg_reader_finish(&r);
   close_pair(sv);
}

/* Runs one hostile case: send() writes packets on sv[0] carrying the fds
 * given, then util_msg_recv() on sv[1] must fail with err and leave no fd
 * behind. */
static void
expect_recv_error(void (*send_fn)(int fd, const int *fds, unsigned n_fds), unsigned n_fds,
                  int err, size_t max_size)
{
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, max_size);

   int base = unit_count_fds();
   int fds[32];
   CHECK(n_fds <= 32);
   open_fds(fds, n_fds);
   int numbers[32];
   memcpy(numbers, fds, sizeof(int) * n_fds);

   send_fn(sv[0], fds, n_fds);
   close_fds(fds, n_fds); /* in flight now: only the socket holds them */
   CHECK_EQ(unit_count_fds(), base);

   struct util_msg msg;
   memset(&msg, 0x5a, sizeof(msg));
   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), err);
   check_no_leak(base, numbers, n_fds);
   CHECK(r.cap <= max_size); /* the buffer never outgrows the limit */

   util_msg_reader_finish(&r);
   close_pair(sv);
}

static void
send_short_header(int fd, const int *fds, unsigned n_fds)
{
   uint32_t type = UTIL_MSG_CONTROL;
   raw_send_bytes(fd, &type, sizeof(type), fds, n_fds);
}

static void
send_unknown_type(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, 99, 0, "abc", 3, fds, n_fds);
}

static void
send_type_zero(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, 0, 0, NULL, 0, fds, n_fds);
}

static void
send_unknown_flags(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, UTIL_MSG_CONTROL, 1u << 7, "abc", 3, fds, n_fds);
}

static void
send_oversized_packet(int fd, const int *fds, unsigned n_fds)
{
   uint8_t *p = calloc(1, MAX_PAYLOAD + 1);
   CHECK(p);
   raw_send(fd, UTIL_MSG_CONTROL, 0, p, MAX_PAYLOAD + 1, fds, n_fds);
   free(p);
}

static void
send_over_max_single(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, UTIL_MSG_CONTROL, 0, "0123456789abcdefg", 17, fds, n_fds);
}

static void
send_fds_on_continuation(int fd, const int *fds, unsigned n_fds)
{
   uint8_t *p = calloc(1, MAX_PAYLOAD);
   CHECK(p);
   CHECK(n_fds >= 2);
   raw_send(fd, UTIL_MSG_STREAM, UTIL_PACKET_MORE, p, MAX_PAYLOAD, fds, 1);
   raw_send(fd, UTIL_MSG_STREAM, 0, "tail", 4, fds + 1, n_fds - 1);
   free(p);
}

static void
send_type_change(int fd, const int *fds, unsigned n_fds)
{
   uint8_t *p = calloc(1, MAX_PAYLOAD);
   CHECK(p);
   raw_send(fd, UTIL_MSG_STREAM, UTIL_PACKET_MORE, p, MAX_PAYLOAD, fds, n_fds);
   raw_send(fd, UTIL_MSG_CONTROL, 0, "tail", 4, NULL, 0);
   free(p);
}

static void
send_short_continuation(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, UTIL_MSG_STREAM, UTIL_PACKET_MORE, "short", 5, fds, n_fds);
   raw_send(fd, UTIL_MSG_STREAM, 0, "tail", 4, NULL, 0);
}

static void
send_too_many_fds(int fd, const int *fds, unsigned n_fds)
{
   raw_send(fd, UTIL_MSG_CONTROL, 0, "x", 1, fds, n_fds);
}

static void
send_empty_packet(int fd, const int *fds, unsigned n_fds)
{
   raw_send_bytes(fd, NULL, 0, fds, n_fds);
}

static void
send_more_then_close(int fd, const int *fds, unsigned n_fds)
{
   uint8_t *p = calloc(1, MAX_PAYLOAD);
   CHECK(p);
   raw_send(fd, UTIL_MSG_STREAM, UTIL_PACKET_MORE, p, MAX_PAYLOAD, fds, n_fds);
   free(p);
   CHECK_SYS(shutdown(fd, SHUT_WR));
}

static void
send_nothing_then_close(int fd, const int *fds, unsigned n_fds)
{
   CHECK_SYS(shutdown(fd, SHUT_WR));
}

static void
test_truncated_header(void)
{
   expect_recv_error(send_short_header, 0, EPROTO, 1 << 20);
   expect_recv_error(send_short_header, 2, EPROTO, 1 << 20);
   /* A zero-length packet is no message either. */
   expect_recv_error(send_empty_packet, 0, ECONNRESET, 1 << 20);
   expect_recv_error(send_empty_packet, 1, ECONNRESET, 1 << 20);
}

static void
test_unknown_type(void)
{
   expect_recv_error(send_unknown_type, 0, EPROTO, 1 << 20);
   expect_recv_error(send_unknown_type, 3, EPROTO, 1 << 20);
   expect_recv_error(send_type_zero, 1, EPROTO, 1 << 20);
   expect_recv_error(send_unknown_flags, 2, EPROTO, 1 << 20);
}

static void
test_oversized_packet(void)
{
   expect_recv_error(send_oversized_packet, 0, EMSGSIZE, 1 << 20);
   expect_recv_error(send_oversized_packet, 4, EMSGSIZE, 1 << 20);
}

static void
test_fds_on_continuation(void)
{
   expect_recv_error(send_fds_on_continuation, 2, EPROTO, 1 << 20);
   expect_recv_error(send_fds_on_continuation, 9, EPROTO, 1 << 20);
}

static void
test_too_many_fds(void)
{
   /* One more than allowed, and more than fit the receive buffer (which
    * makes the kernel truncate the control data). */
   expect_recv_error(send_too_many_fds, UTIL_MSG_MAX_FDS + 1, EPROTO, 1 << 20);
   expect_recv_error(send_too_many_fds, 20, EPROTO, 1 << 20);
   expect_recv_error(send_too_many_fds, 32, EPROTO, 1 << 20);

   int sv[2];
   make_pair(sv);
   int fds[UTIL_MSG_MAX_FDS + 1];
   for (unsigned i = 0; i < UTIL_ARRAY_SIZE(fds); i++)
      fds[i] = sv[0];
   CHECK_ERR(util_msg_send(sv[0], UTIL_MSG_CONTROL, "x", 1, fds, UTIL_ARRAY_SIZE(fds)),
             EINVAL);
   close_pair(sv);
}

static void
test_type_change(void)
{
   expect_recv_error(send_type_change, 0, EPROTO, 1 << 20);
   expect_recv_error(send_type_change, 2, EPROTO, 1 << 20);
}

static void
test_short_continuation(void)
{
   expect_recv_error(send_short_continuation, 1, EPROTO, 1 << 20);
}

static void
test_peer_closed(void)
{
   expect_recv_error(send_nothing_then_close, 0, ECONNRESET, 1 << 20);
   expect_recv_error(send_more_then_close, 0, ECONNRESET, 1 << 20);
   expect_recv_error(send_more_then_close, 3, ECONNRESET, 1 << 20);

   /* Full close rather than shutdown. */
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1024);
   struct util_msg msg;
   util_fd_close(&sv[0]);
   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), ECONNRESET);

   /* Sending to a closed peer: an error, not SIGPIPE. */
   make_pair(sv);
   util_fd_close(&sv[1]);
   CHECK_ERR(util_msg_send(sv[0], UTIL_MSG_CONTROL, "x", 1, NULL, 0), ECONNRESET);
   close_pair(sv);
   util_msg_reader_finish(&r);
}

static void
test_over_max_size(void)
{
   /* One packet over the limit. */
   expect_recv_error(send_over_max_single, 0, EPROTO, 16);
   expect_recv_error(send_over_max_single, 2, EPROTO, 16);

   /* Exactly at the limit is fine. */
   int sv[2];
   make_pair(sv);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 16);
   struct util_msg msg;
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, "0123456789abcdef", 16, NULL, 0));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.size, 16);
   CHECK(memcmp(msg.data, "0123456789abcdef", 16) == 0);
   CHECK_EQ(r.cap, 16);
   util_msg_reader_finish(&r);

   /* A reader that takes empty messages only. */
   util_msg_reader_init(&r, 0);
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_STREAM, NULL, 0, NULL, 0));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.size, 0);
   CHECK(msg.data != NULL);
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_STREAM, "x", 1, NULL, 0));
   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), EPROTO);
   CHECK_EQ(r.cap, 0);
   util_msg_reader_finish(&r);

   /* A 1 MiB message against a 200000-byte limit, sent for real: the reader
    * fails, keeps its buffer bounded and closes the fds; the sender then
    * finds the connection gone. */
   util_msg_reader_init(&r, 200000);
   size_t size = 1 << 20;
   uint8_t *data = calloc(1, size);
   CHECK(data);
   int fds[2];
   open_fds(fds, 2);
   int numbers[2] = {fds[0], fds[1]};
   int expected = unit_count_fds() - 4; /* once the pair and fds are closed */

   struct sender s = {
       .fd = sv[0],
       .type = UTIL_MSG_STREAM,
       .data = data,
       .size = size,
       .fds = fds,
       .n_fds = 2,
   };
   sender_start(&s);
   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), EPROTO);
   CHECK(r.cap <= 200000);
   util_fd_close(&sv[1]);
   CHECK_ERR(sender_join(&s), ECONNRESET);
   close_fds(fds, 2);
   util_fd_close(&sv[0]);
   check_no_leak(expected, numbers, 2);

   free(data);
   util_msg_reader_finish(&r);
}

static void
test_reader_reuse_after_error(void)
{
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;
   int sv[2];

   make_pair(sv);
   raw_send(sv[0], 9, 0, "bad", 3, NULL, 0);
   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), EPROTO);
   close_pair(sv);

   make_pair(sv);
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, "good", 4, NULL, 0));
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.size, 4);
   CHECK(memcmp(msg.data, "good", 4) == 0);
   close_pair(sv);
   util_msg_reader_finish(&r);
}

static void
test_send_invalid(void)
{
   int sv[2];
   make_pair(sv);
   CHECK_ERR(util_msg_send(sv[0], 0, "x", 1, NULL, 0), EINVAL);
   CHECK_ERR(util_msg_send(sv[0], 99, "x", 1, NULL, 0), EINVAL);
   CHECK_ERR(util_msg_send(sv[0], UTIL_MSG_CONTROL, NULL, 1, NULL, 0), EINVAL);
   CHECK_ERR(util_msg_send(sv[0], UTIL_MSG_CONTROL, "x", 1, NULL, 1), EINVAL);
   int bad = 1000;
   CHECK_ERR(util_msg_send(sv[0], UTIL_MSG_CONTROL, "x", 1, &bad, 1), EBADF);
   close_pair(sv);
}

static void
test_nonblocking(void)
{
   int sv[2];
   make_pair(sv);
   set_nonblock(sv[0]);
   set_nonblock(sv[1]);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 8 << 20);
   struct util_msg msg;

   CHECK_ERR(util_msg_recv(sv[1], &r, &msg), EAGAIN);

   /* Larger than the socket buffers: both sides wait in the middle. */
   roundtrip_size(sv, &r, 4 << 20, 2);

   util_msg_reader_finish(&r);
   close_pair(sv);
}

static void
make_tmpdir(char *dir, size_t size)
{
   const char *base = getenv("TMPDIR");
   snprintf(dir, size, "%s/gpud-unit-XXXXXX", base && *base ? base : "/tmp");
   CHECK(mkdtemp(dir) != NULL);
}

static void
test_listen_connect(void)
{
   char dir[256], path[300];
   make_tmpdir(dir, sizeof(dir));
   snprintf(path, sizeof(path), "%s/socket", dir);
   int base = unit_count_fds();

   int lfd, cfd, afd;
   CHECK_OK(util_socket_listen(path, &lfd));
   CHECK(unit_fd_is_cloexec(lfd));

   CHECK_OK(util_socket_connect(path, &cfd));
   CHECK_OK(util_socket_accept(lfd, &afd));
   CHECK(unit_fd_is_cloexec(cfd));
   CHECK(unit_fd_is_cloexec(afd));
   int type;
   socklen_t len = sizeof(type);
   CHECK_SYS(getsockopt(afd, SOL_SOCKET, SO_TYPE, &type, &len));
   CHECK_EQ(type, SOCK_SEQPACKET);

   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;
   CHECK_OK(util_msg_send(cfd, UTIL_MSG_CONTROL, "hi", 2, &cfd, 1));
   CHECK_OK(util_msg_recv(afd, &r, &msg));
   CHECK_EQ(msg.size, 2);
   CHECK_EQ(msg.n_fds, 1);
   CHECK(same_file(msg.fds[0], cfd));
   util_msg_close_fds(&msg);

   /* Someone listens: not stale, not touched.  The liveness probe shows up
    * as a connection that is closed at once. */
   int lfd2 = -1;
   CHECK_ERR(util_socket_listen(path, &lfd2), EADDRINUSE);
   CHECK_EQ(lfd2, -1);
   int probe;
   CHECK_OK(util_socket_accept(lfd, &probe));
   CHECK_ERR(util_msg_recv(probe, &r, &msg), ECONNRESET);
   util_fd_close(&probe);
   util_msg_reader_finish(&r);

   /* Nothing pending on a non-blocking listener. */
   set_nonblock(lfd);
   int none = -1;
   CHECK_ERR(util_socket_accept(lfd, &none), EAGAIN);
   CHECK_EQ(none, -1);

   util_fd_close(&afd);
   util_fd_close(&cfd);
   util_fd_close(&lfd);

   /* The socket file is left behind: stale now, so it is replaced. */
   struct stat st;
   CHECK_SYS(lstat(path, &st));
   CHECK(S_ISSOCK(st.st_mode));
   CHECK_ERR(util_socket_connect(path, &cfd), ECONNREFUSED);
   CHECK_OK(util_socket_listen(path, &lfd));
   CHECK_OK(util_socket_connect(path, &cfd));
   util_fd_close(&cfd);
   util_fd_close(&lfd);
   CHECK_SYS(unlink(path));

   /* Something that is not a socket is never unlinked. */
   int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
   CHECK_SYS(f);
   util_fd_close(&f);
   CHECK_ERR(util_socket_listen(path, &lfd), EADDRINUSE);
   CHECK_SYS(lstat(path, &st));
   CHECK(S_ISREG(st.st_mode));
   CHECK_SYS(unlink(path));

   CHECK_ERR(util_socket_connect(path, &cfd), ENOENT);

   char long_path[200];
   memset(long_path, 'a', sizeof(long_path) - 1);
   long_path[sizeof(long_path) - 1] = '\0';
   CHECK_ERR(util_socket_listen(long_path, &lfd), ENAMETOOLONG);
   CHECK_ERR(util_socket_connect(long_path, &cfd), ENAMETOOLONG);

   CHECK_EQ(unit_count_fds(), base);
   CHECK_SYS(rmdir(dir));
}

/* ---- non-blocking queued sends, single-packet receives, send deadlines ---- */

static void
test_queue_roundtrip(void)
{
   int sv[2];
   make_pair(sv);
   set_nonblock(sv[0]);
   struct util_msg_queue q;
   util_msg_queue_init(&q);
   static uint8_t big[3 * MAX_PAYLOAD + 17];
   fill_pattern(big, sizeof(big), 9);
   int fd = -1;
   CHECK_OK(util_memfd_create("q", 4096, &fd));
   CHECK_OK(util_msg_queue_push(&q, UTIL_MSG_CONTROL, "hello", 5, &fd, 1));
   CHECK_OK(util_msg_queue_push(&q, UTIL_MSG_STREAM, big, sizeof(big), NULL, 0));
   CHECK(q.bytes > sizeof(big));
   CHECK_OK(util_msg_queue_flush(sv[0], &q));
   CHECK_EQ(q.bytes, 0);

   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.type, UTIL_MSG_CONTROL);
   CHECK_EQ(msg.size, 5);
   CHECK(!memcmp(msg.data, "hello", 5));
   CHECK_EQ(msg.n_fds, 1);
   /* the queue duplicated the fd: the caller's copy is still its own */
   CHECK(same_file(msg.fds[0], fd));
   util_msg_close_fds(&msg);
   CHECK_OK(util_msg_recv(sv[1], &r, &msg));
   CHECK_EQ(msg.size, sizeof(big));
   CHECK(!memcmp(msg.data, big, sizeof(big)));
   util_fd_close(&fd);
   util_msg_reader_finish(&r);
   util_msg_queue_finish(&q);
   close_pair(sv);
}

/* A peer that does not read: flush stops with -EAGAIN and never blocks;
 * reading lets the rest go. */
static void
test_queue_full_socket(void)
{
   int sv[2];
   make_pair(sv);
   set_nonblock(sv[0]);
   struct util_msg_queue q;
   util_msg_queue_init(&q);
   static uint8_t chunk[MAX_PAYLOAD];
   unsigned pushed = 0;
   int r = 0;
   while (r == 0 && pushed < 1000) {
      CHECK_OK(util_msg_queue_push(&q, UTIL_MSG_STREAM, chunk, sizeof(chunk), NULL, 0));
      pushed++;
      r = util_msg_queue_flush(sv[0], &q);
   }
   CHECK_EQ(r, -EAGAIN);
   CHECK(q.bytes > 0);
   struct util_msg_reader rd;
   util_msg_reader_init(&rd, 1 << 20);
   unsigned received = 0;
   set_nonblock(sv[1]);
   while (received < pushed) {
      struct util_msg msg;
      int rr = util_msg_recv_packet(sv[1], &rd, &msg);
      if (rr == -EAGAIN) {
         int f = util_msg_queue_flush(sv[0], &q);
         CHECK(f == 0 || f == -EAGAIN);
         continue;
      }
      CHECK_OK(rr);
      CHECK_EQ(msg.size, sizeof(chunk));
      received++;
   }
   CHECK_EQ(q.bytes, 0);
   util_msg_reader_finish(&rd);
   util_msg_queue_finish(&q);
   close_pair(sv);
}

static void
test_queue_finish_closes_fds(void)
{
   struct util_msg_queue q;
   util_msg_queue_init(&q);
   int fd = -1;
   CHECK_OK(util_memfd_create("q", 4096, &fd));
   unsigned before = unit_count_fds();
   CHECK_OK(util_msg_queue_push(&q, UTIL_MSG_CONTROL, "x", 1, &fd, 1));
   CHECK_EQ(unit_count_fds(), before + 1);
   util_msg_queue_finish(&q);
   CHECK_EQ(unit_count_fds(), before);
   CHECK_ERR(util_msg_queue_push(&q, 99, "x", 1, NULL, 0), EINVAL);
   util_fd_close(&fd);
}

static void
test_recv_packet(void)
{
   int sv[2];
   make_pair(sv);
   set_nonblock(sv[1]);
   struct util_msg_reader r;
   util_msg_reader_init(&r, 1 << 20);
   struct util_msg msg;
   /* nothing there: no waiting */
   CHECK_ERR(util_msg_recv_packet(sv[1], &r, &msg), EAGAIN);
   CHECK_OK(util_msg_send(sv[0], UTIL_MSG_CONTROL, "abc", 3, NULL, 0));
   CHECK_OK(util_msg_recv_packet(sv[1], &r, &msg));
   CHECK_EQ(msg.size, 3);
   /* the first packet of a longer message is refused, not waited on */
   static uint8_t zeros[MAX_PAYLOAD];
   raw_send(sv[0], UTIL_MSG_STREAM, UTIL_PACKET_MORE, zeros, MAX_PAYLOAD, NULL, 0);
   CHECK_ERR(util_msg_recv_packet(sv[1], &r, &msg), EPROTO);
   util_msg_reader_finish(&r);
   close_pair(sv);
}

static void
test_send_timeout(void)
{
   int sv[2];
   make_pair(sv);
   static uint8_t chunk[MAX_PAYLOAD];
   int r = 0;
   unsigned sent = 0;
   /* a blocking socket whose peer never reads */
   while (r == 0 && sent < 1000) {
      r = util_msg_send_timeout(sv[0], UTIL_MSG_STREAM, chunk, sizeof(chunk), NULL, 0, 50);
      sent++;
   }
   CHECK_ERR(r, ETIMEDOUT);
   close_pair(sv);
}

UNIT_MAIN(UNIT_TEST(test_queue_roundtrip), UNIT_TEST(test_queue_full_socket),
          UNIT_TEST(test_queue_finish_closes_fds), UNIT_TEST(test_recv_packet),
          UNIT_TEST(test_send_timeout), UNIT_TEST(test_roundtrip_small), UNIT_TEST(test_roundtrip_fds),
          UNIT_TEST(test_roundtrip_multi_packet), UNIT_TEST(test_packet_layout),
          UNIT_TEST(test_many_messages), UNIT_TEST(test_truncated_header),
          UNIT_TEST(test_unknown_type), UNIT_TEST(test_oversized_packet),
          UNIT_TEST(test_fds_on_continuation), UNIT_TEST(test_too_many_fds),
          UNIT_TEST(test_type_change), UNIT_TEST(test_short_continuation),
          UNIT_TEST(test_peer_closed), UNIT_TEST(test_over_max_size),
          UNIT_TEST(test_reader_reuse_after_error), UNIT_TEST(test_send_invalid),
          UNIT_TEST(test_nonblocking), UNIT_TEST(test_listen_connect))
