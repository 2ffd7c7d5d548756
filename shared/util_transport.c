/* SPDX-License-Identifier: MIT */
/* The transport (util_transport.h): messages in packets over SEQPACKET
 * sockets with fds beside them, listening and connecting, queued
 * non-blocking sends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util_dir.h"
#include "util_fd.h"
#include "util_macros.h"
#include "util_transport.h"
#include "util_time.h"

/*
 * Wire rules enforced by util_msg_recv(), beyond those in the header:
 *  - flags other than UTIL_PACKET_MORE are a protocol error;
 *  - every packet of a message but the last carries exactly
 *    UTIL_PACKET_MAX_PAYLOAD payload bytes (util_msg_send() always splits
 *    that way), so a peer cannot keep the reader busy with empty
 *    continuation packets and the packet sequence of a message is unique.
 */

/* Room for one fd more than allowed, so that "too many fds" is told apart
 * from a control buffer the kernel had to truncate.  Either is -EPROTO. */
#define RECV_MAX_FDS (UTIL_MSG_MAX_FDS + 1)

union fd_cmsg_buf {
   struct cmsghdr align;
   char buf[CMSG_SPACE(sizeof(int) * RECV_MAX_FDS)];
};

static int
make_sockaddr(const char *path, struct sockaddr_un *ret_addr, socklen_t *ret_len)
{
   if (!path || !*path)
      return -EINVAL;

   size_t len = strlen(path);
   if (len >= sizeof(ret_addr->sun_path))
      return -ENAMETOOLONG;

   memset(ret_addr, 0, sizeof(*ret_addr));
   ret_addr->sun_family = AF_UNIX;
   memcpy(ret_addr->sun_path, path, len + 1);
   *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
   return 0;
}

static int
connect_retry(int fd, const struct sockaddr_un *addr, socklen_t len)
{
   /* An interrupted connect() on an AF_UNIX socket leaves it unconnected,
    * so trying again is correct. */
   while (connect(fd, (const struct sockaddr *)addr, len) < 0) {
      if (errno != EINTR)
         return -errno;
   }
   return 0;
}

/* -EADDRINUSE if something listens at path, 0 if nothing does. */
static int
check_stale(const struct sockaddr_un *addr, socklen_t len)
{
   int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
   if (fd < 0)
      return -errno;

   int r = connect_retry(fd, addr, len);
   util_fd_close(&fd);

   if (r == 0 || r == -EAGAIN)
      return -EADDRINUSE; /* live listener (EAGAIN: its backlog is full) */
   return 0;
}

int
util_socket_listen(const char *path, int *ret_fd)
{
   struct sockaddr_un addr;
   socklen_t len;
   int r = make_sockaddr(path, &addr, &len);
   if (r < 0)
      return r;

   /* Only a socket nobody listens on is stale; anything else at the path is
    * left alone and bind() reports EADDRINUSE. */
   struct stat st;
   if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
      r = check_stale(&addr, len);
      if (r < 0)
         return r;
      if (unlink(path) < 0 && errno != ENOENT)
         return -errno;
   }

   int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
   if (fd < 0)
      return -errno;

   if (bind(fd, (const struct sockaddr *)&addr, len) < 0 || listen(fd, 128) < 0) {
      r = -errno;
      util_fd_close(&fd);
      return r;
   }
   *ret_fd = fd;
   return 0;
}

int
util_socket_accept(int listen_fd, int *ret_fd)
{
   for (;;) {
      int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
         *ret_fd = fd;
         return 0;
      }
      if (errno == EINTR)
         continue;
      if (errno == EWOULDBLOCK)
         return -EAGAIN;
      return -errno;
   }
}

int
util_socket_connect(const char *path, int *ret_fd)
{
   struct sockaddr_un addr;
   socklen_t len;
   int r = make_sockaddr(path, &addr, &len);
   if (r < 0)
      return r;

   int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
   if (fd < 0)
      return -errno;

   r = connect_retry(fd, &addr, len);
   if (r < 0) {
      util_fd_close(&fd);
      return r;
   }

   *ret_fd = fd;
   return 0;
}

static int
map_conn_errno(int e)
{
   if (e == ECONNRESET || e == EPIPE)
      return -ECONNRESET;
   return -e;
}

/* Waits until fd is ready for events, at most timeout_ms (-1: no limit);
 * -ETIMEDOUT when the time ran out. */
static int
wait_fd(int fd, short events, int timeout_ms)
{
   struct pollfd pfd = {.fd = fd, .events = events};
   for (;;) {
      int n = poll(&pfd, 1, timeout_ms);
      if (n > 0)
         return 0;
      if (n == 0)
         return -ETIMEDOUT;
      if (errno != EINTR)
         return -errno;
   }
}

static bool
valid_type(uint32_t type)
{
   return type == UTIL_MSG_CONTROL || type == UTIL_MSG_STREAM || type == UTIL_MSG_FDS;
}

int
util_msg_send(int fd, uint32_t type, const void *data, size_t size, const int *fds,
              unsigned n_fds)
{
   return util_msg_send_timeout(fd, type, data, size, fds, n_fds, -1);
}

/* Fills in packet i of a message: its header and iovecs; true for the last
 * packet. */
static bool
packet_iov(uint32_t type, const uint8_t *p, size_t size, size_t off,
           struct util_packet_header *hdr, struct iovec iov[2], size_t *ret_chunk)
{
   size_t chunk = UTIL_MIN(size - off, (size_t)UTIL_PACKET_MAX_PAYLOAD);
   bool last = off + chunk == size;
   hdr->type = type;
   hdr->flags = last ? 0 : UTIL_PACKET_MORE;
   iov[0] = (struct iovec){.iov_base = hdr, .iov_len = sizeof(*hdr)};
   iov[1] = (struct iovec){.iov_base = chunk ? (void *)(p + off) : NULL, .iov_len = chunk};
   *ret_chunk = chunk;
   return last;
}

static void
attach_fds(struct msghdr *mh, union fd_cmsg_buf *buf, const int *fds, unsigned n_fds)
{
   memset(buf, 0, sizeof(*buf));
   mh->msg_control = buf->buf;
   mh->msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
   struct cmsghdr *c = CMSG_FIRSTHDR(mh);
   c->cmsg_level = SOL_SOCKET;
   c->cmsg_type = SCM_RIGHTS;
   c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
   memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
}

int
util_msg_send_timeout(int fd, uint32_t type, const void *data, size_t size, const int *fds,
                      unsigned n_fds, int timeout_ms)
{
   if (!valid_type(type) || n_fds > UTIL_MSG_MAX_FDS || (n_fds > 0 && !fds) ||
       (size > 0 && !data))
      return -EINVAL;

   union fd_cmsg_buf cmsg_buf;
   const uint8_t *p = data;
   size_t off = 0;
   /* With a time limit, never block inside sendmsg(): poll instead, for what
    * is left of the limit (one limit for the whole message). */
   int flags = MSG_NOSIGNAL | (timeout_ms >= 0 ? MSG_DONTWAIT : 0);
   uint64_t deadline = timeout_ms >= 0 ? util_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;

   do {
      struct util_packet_header hdr;
      struct iovec iov[2];
      size_t chunk;
      packet_iov(type, p, size, off, &hdr, iov, &chunk);
      struct msghdr mh = {
          .msg_iov = iov,
          .msg_iovlen = chunk ? 2 : 1,
      };
      if (off == 0 && n_fds > 0)
         attach_fds(&mh, &cmsg_buf, fds, n_fds);

      for (;;) {
         ssize_t n = sendmsg(fd, &mh, flags);
         if (n >= 0) {
            /* SOCK_SEQPACKET sends whole packets or nothing. */
            if ((size_t)n != sizeof(hdr) + chunk)
               return -EIO;
            break;
         }
         if (errno == EINTR)
            continue;
         if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int left = -1;
            if (timeout_ms >= 0) {
               uint64_t now = util_now_ns();
               if (now >= deadline)
                  return -ETIMEDOUT;
               left = (int)((deadline - now + 999999) / 1000000);
            }
            int r = wait_fd(fd, POLLOUT, left);
            if (r < 0)
               return r;
            continue;
         }
         return map_conn_errno(errno);
      }

      off += chunk;
   } while (off < size);

   return 0;
}

/* ---- queued, non-blocking sending ---------------------------------------- */

struct util_msg_packet {
   struct util_list link;
   struct util_packet_header hdr;
   int fds[UTIL_MSG_MAX_FDS];
   unsigned n_fds;
   size_t size;
   uint8_t data[];
};

void
util_msg_queue_init(struct util_msg_queue *q)
{
   util_list_init(&q->packets);
   q->bytes = 0;
}

static void
packet_free(struct util_msg_packet *pk)
{
   for (unsigned i = 0; i < pk->n_fds; i++)
      util_fd_close(&pk->fds[i]);
   free(pk);
}

void
util_msg_queue_finish(struct util_msg_queue *q)
{
   struct util_msg_packet *pk;
   util_list_for_each_safe(pk, &q->packets, link)
      packet_free(pk);
   util_list_init(&q->packets);
   q->bytes = 0;
}

int
util_msg_queue_push(struct util_msg_queue *q, uint32_t type, const void *data, size_t size,
                    const int *fds, unsigned n_fds)
{
   if (!valid_type(type) || n_fds > UTIL_MSG_MAX_FDS || (n_fds > 0 && !fds) ||
       (size > 0 && !data))
      return -EINVAL;
   struct util_list added;
   util_list_init(&added);
   size_t off = 0, bytes = 0;
   int r = 0;
   do {
      struct util_packet_header hdr;
      struct iovec iov[2];
      size_t chunk;
      packet_iov(type, data, size, off, &hdr, iov, &chunk);
      struct util_msg_packet *pk = malloc(sizeof(*pk) + chunk);
      if (!pk) {
         r = -ENOMEM;
         break;
      }
      pk->hdr = hdr;
      pk->size = chunk;
      pk->n_fds = 0;
      if (chunk)
         memcpy(pk->data, iov[1].iov_base, chunk);
      util_list_add_tail(&added, &pk->link);
      for (unsigned i = 0; off == 0 && i < n_fds; i++) {
         pk->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
         if (pk->fds[i] < 0) {
            r = -errno;
            break;
         }
         pk->n_fds++;
      }
      bytes += sizeof(hdr) + chunk;
      off += chunk;
   } while (r == 0 && off < size);
   if (r < 0) {
      struct util_msg_packet *pk;
      util_list_for_each_safe(pk, &added, link)
         packet_free(pk);
      return r;
   }
   /* splice the new packets onto the queue */
   while (!util_list_empty(&added)) {
      struct util_list *l = added.next;
      util_list_remove(l);
      util_list_add_tail(&q->packets, l);
   }
   q->bytes += bytes;
   return 0;
}

int
util_msg_queue_flush(int fd, struct util_msg_queue *q)
{
   while (!util_list_empty(&q->packets)) {
      struct util_msg_packet *pk = util_list_first(&q->packets, struct util_msg_packet, link);
      struct iovec iov[2] = {
          {.iov_base = &pk->hdr, .iov_len = sizeof(pk->hdr)},
          {.iov_base = pk->data, .iov_len = pk->size},
      };
      struct msghdr mh = {.msg_iov = iov, .msg_iovlen = pk->size ? 2 : 1};
      union fd_cmsg_buf cmsg_buf;
      if (pk->n_fds)
         attach_fds(&mh, &cmsg_buf, pk->fds, pk->n_fds);
      ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
         if (errno == EINTR)
            continue;
         if (errno == EAGAIN || errno == EWOULDBLOCK)
            return -EAGAIN;
         return map_conn_errno(errno);
      }
      if ((size_t)n != sizeof(pk->hdr) + pk->size)
         return -EIO;
      q->bytes -= sizeof(pk->hdr) + pk->size;
      util_list_remove(&pk->link);
      packet_free(pk);
   }
   return 0;
}

void
util_msg_reader_init(struct util_msg_reader *r, size_t max_size)
{
   r->buf = NULL;
   r->size = 0;
   r->cap = 0;
   r->max_size = max_size;
   r->close_fd = NULL;
   r->close_data = NULL;
}

void
util_msg_reader_finish(struct util_msg_reader *r)
{
   if (!r)
      return;
   free(r->buf);
   r->buf = NULL;
   r->size = 0;
   r->cap = 0;
}

/* Makes room for the payload of the next packet: as much of a full packet
 * as max_size still allows.  Returns how many bytes that is.  The buffer
 * never grows past max_size, whatever the peer sends. */
static int
reader_reserve(struct util_msg_reader *r, size_t *ret_room)
{
   size_t room = UTIL_MIN(r->max_size - r->size, (size_t)UTIL_PACKET_MAX_PAYLOAD);
   size_t want = r->size + room;
   *ret_room = room;
   if (want <= r->cap)
      return 0;

   size_t new_cap = r->cap > SIZE_MAX / 2 ? SIZE_MAX : r->cap * 2;
   new_cap = UTIL_MAX(new_cap, want);
   new_cap = UTIL_MIN(new_cap, r->max_size);

   uint8_t *buf = realloc(r->buf, new_cap);
   if (!buf)
      return -ENOMEM;
   r->buf = buf;
   r->cap = new_cap;
   return 0;
}

static void
close_fd(struct util_msg_reader *r, int *fd)
{
   if (r->close_fd && *fd >= 0)
      r->close_fd(util_fd_move(fd), r->close_data);
   else
      util_fd_close(fd);
}

static void
close_fds(struct util_msg_reader *r, int *fds, unsigned n)
{
   for (unsigned i = 0; i < n; i++)
      close_fd(r, &fds[i]);
}

/* Moves the fds of every SCM_RIGHTS message into fds[*n_fds...], up to
 * max_fds in all; returns how many arrived (which may exceed what was
 * stored only if the caller's array is too small: never with
 * RECV_MAX_FDS-sized control buffers).  Other control messages carry no
 * fds and are ignored. */
static unsigned
collect_fds(struct util_msg_reader *r, struct msghdr *mh, int *fds, unsigned *n_fds,
            unsigned max_fds)
{
   unsigned arrived = 0;
   for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
         continue;
      size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const unsigned char *data = CMSG_DATA(c);
      for (size_t i = 0; i < n; i++) {
         int fd;
         memcpy(&fd, data + i * sizeof(int), sizeof(int));
         arrived++;
         if (*n_fds < max_fds) {
            fds[(*n_fds)++] = fd;
         } else {
            close_fd(r, &fd);
         }
      }
   }
   return arrived;
}

static int
recv_message(int fd, struct util_msg_reader *r, struct util_msg *ret_msg, bool one_packet)
{
   /* Every fd that arrives is held here until success hands them over.
    * Two packets' worth of room: the first packet's fds plus those of a
    * continuation packet, which are only held to be closed. */
   int fds[2 * RECV_MAX_FDS];
   unsigned n_fds = 0;
   uint32_t type = 0;
   bool first = true;
   int ret;

   r->size = 0;

   for (;;) {
      size_t room;
      ret = reader_reserve(r, &room);
      if (ret < 0)
         goto err_close_fds;

      struct util_packet_header hdr;
      struct iovec iov[2] = {
          {.iov_base = &hdr, .iov_len = sizeof(hdr)},
          {.iov_base = room ? r->buf + r->size : NULL, .iov_len = room},
      };
      union fd_cmsg_buf cmsg_buf;
      struct msghdr mh = {
          .msg_iov = iov,
          .msg_iovlen = 2,
          .msg_control = cmsg_buf.buf,
          .msg_controllen = sizeof(cmsg_buf.buf),
      };

      /* With MSG_TRUNC a SOCK_SEQPACKET socket returns the real length of
       * the packet (Linux >= 3.4) even when it did not fit: that tells an
       * oversized packet from one that merely overruns max_size, without a
       * buffer larger than max_size. */
      ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_TRUNC | (one_packet ? MSG_DONTWAIT : 0));
      if (n < 0) {
         if (errno == EINTR)
            continue;
         if (errno == EAGAIN || errno == EWOULDBLOCK) {
            /* Nothing consumed yet: let an event loop come back later.
             * Mid-message: the rest is on its way, wait for it. */
            if (first) {
               ret = -EAGAIN;
               goto err_close_fds;
            }
            ret = wait_fd(fd, POLLIN, -1);
            if (ret < 0)
               goto err_close_fds;
            continue;
         }
         ret = map_conn_errno(errno);
         goto err_close_fds;
      }

      unsigned arrived = collect_fds(r, &mh, fds, &n_fds, UTIL_ARRAY_SIZE(fds));

      if (n == 0) {
         /* Orderly shutdown (every real packet has a header). */
         ret = -ECONNRESET;
         goto err_close_fds;
      }
      if (mh.msg_flags & MSG_CTRUNC) {
         ret = -EPROTO;
         goto err_close_fds;
      }
      if ((size_t)n < sizeof(hdr)) {
         ret = -EPROTO;
         goto err_close_fds;
      }
      size_t payload = (size_t)n - sizeof(hdr);
      if (payload > UTIL_PACKET_MAX_PAYLOAD) {
         ret = -EMSGSIZE;
         goto err_close_fds;
      }
      if (!valid_type(hdr.type) || (hdr.flags & ~(uint32_t)UTIL_PACKET_MORE)) {
         ret = -EPROTO;
         goto err_close_fds;
      }
      if (first) {
         type = hdr.type;
         if (arrived > UTIL_MSG_MAX_FDS) {
            ret = -EPROTO;
            goto err_close_fds;
         }
      } else if (hdr.type != type || arrived > 0) {
         ret = -EPROTO;
         goto err_close_fds;
      }

      bool more = hdr.flags & UTIL_PACKET_MORE;
      if (more && one_packet) {
         ret = -EPROTO;
         goto err_close_fds;
      }
      if (more && payload != UTIL_PACKET_MAX_PAYLOAD) {
         ret = -EPROTO;
         goto err_close_fds;
      }
      /* Over max_size (the part that did not fit was dropped). */
      if (payload > room) {
         ret = -EPROTO;
         goto err_close_fds;
      }

      /* Kernels before 3.4 ignore MSG_TRUNC on receive: never accept a
       * packet the kernel says was cut. */
      if (mh.msg_flags & MSG_TRUNC) {
         ret = -EMSGSIZE;
         goto err_close_fds;
      }

      r->size += payload;
      first = false;
      if (!more)
         break;
   }

   ret_msg->type = type;
   ret_msg->data = r->buf ? (const void *)r->buf : (const void *)"";
   ret_msg->size = r->size;
   for (unsigned i = 0; i < UTIL_MSG_MAX_FDS; i++)
      ret_msg->fds[i] = i < n_fds ? fds[i] : -1;
   ret_msg->n_fds = n_fds;
   return 0;

err_close_fds:
   close_fds(r, fds, n_fds);
   r->size = 0;
   return ret;
}

int
util_msg_recv(int fd, struct util_msg_reader *r, struct util_msg *ret_msg)
{
   return recv_message(fd, r, ret_msg, false);
}

int
util_msg_recv_packet(int fd, struct util_msg_reader *r, struct util_msg *ret_msg)
{
   return recv_message(fd, r, ret_msg, true);
}

void
util_msg_close_fds(struct util_msg *msg)
{
   if (!msg)
      return;
   for (unsigned i = 0; i < msg->n_fds && i < UTIL_MSG_MAX_FDS; i++)
      util_fd_close(&msg->fds[i]);
}

int
util_peer_cred(int fd, struct ucred *ret)
{
   struct ucred cred = {0};
   socklen_t len = sizeof(cred);
   if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
      int r = -errno;
      *ret = (struct ucred){0};
      return r;
   }
   *ret = len == sizeof(cred) ? cred : (struct ucred){0};
   return len == sizeof(cred) ? 0 : -EPROTO;
}

/* ---- finding daemons ---------------------------------------------------- */

char **
util_socket_paths(void)
{
   char **paths = NULL;
   size_t n = 0;
   const char *env = getenv("GPUD_SOCKET");
   if (env && *env) {
      char *copy = strdup(env);
      char *save = NULL;
      for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
           tok = strtok_r(NULL, ":", &save))
         util_paths_add(&paths, &n, tok);
      free(copy);
   } else {
      const char *xdg = getenv("XDG_RUNTIME_DIR");
      if (xdg && *xdg) {
         char dir[4096];
         if (snprintf(dir, sizeof(dir), "%s/gpud", xdg) < (int)sizeof(dir))
            util_paths_add_dir(&paths, &n, dir, ".sock");
      }
      util_paths_add_dir(&paths, &n, "/run/gpud", ".sock");
   }
   return paths;
}

void
util_socket_paths_free(char **paths)
{
   util_paths_free(paths);
}
