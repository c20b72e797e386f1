/* SPDX-License-Identifier: BSD-3-Clause */
/* stall_probe.h — what the kernel says about one tcp connection whose sends
 * have waited long (tcp MSG publisher, net/README.md "Stalled sends"): its
 * socket, found among this process's descriptors by both of its addresses,
 * the bytes in its send and receive queues, and what the CQ's wait set (an
 * epoll descriptor) watches it for. With the send queue empty the kernel
 * has nothing of ours to deliver: the subscriber is not what holds those
 * sends, the provider is (it did not write them). Run on the publisher's
 * timer, at most once per stalled send and peer_timeout: a directory read
 * and a few syscalls per descriptor. */
#ifndef RCI_STALL_PROBE_H
#define RCI_STALL_PROBE_H

#include <stdbool.h>
#include <sys/socket.h>

#define RCI_STALL_NOT_WATCHED (-1)   /* the wait set does not hold the socket */
#define RCI_STALL_WATCH_UNKNOWN (-2) /* no wait set given, or its fdinfo unreadable */

struct rci_stall_probe {
    bool found;        /* the connection's socket was found */
    int fd;            /* its descriptor */
    int outq;          /* bytes in its send queue (SIOCOUTQ: not sent or not acked) */
    int inq;           /* bytes received and not read yet (SIOCINQ) */
    int watched;       /* epoll events the wait set watches it for (EPOLLIN 0x1,
                        * EPOLLOUT 0x4), or RCI_STALL_NOT_WATCHED / _WATCH_UNKNOWN */
};

/* Find the socket whose own address is `local` and whose peer is `peer`
 * (family, address and port must match) and fill *out. epoll_fd: the wait
 * set to look the socket up in, or -1. Returns 0 (out->found says whether it
 * was found) or -errno when /proc/self/fd cannot be read. */
int rci_stall_probe_tcp(const struct sockaddr *local, const struct sockaddr *peer, int epoll_fd,
                        struct rci_stall_probe *out);

/* The events epoll descriptor epoll_fd watches descriptor fd for, from
 * /proc/self/fdinfo; RCI_STALL_NOT_WATCHED or RCI_STALL_WATCH_UNKNOWN. */
int rci_stall_probe_watched(int epoll_fd, int fd);

#endif
