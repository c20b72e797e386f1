/* SPDX-License-Identifier: BSD-3-Clause */
/* half_open.c — see half_open.h. Runs on the publisher's timer, never per
 * chunk: a directory read and a few syscalls per descriptor, 4 times a second. */
#include "net/half_open.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "common/errbuf.h"
#include "net/allow_list.h"

int rci_half_open_init(struct rci_half_open *h, uint16_t port, uint32_t cap, uint64_t timeout_ns)
{
    memset(h, 0, sizeof *h);
    h->port = port;
    h->cap = cap ? cap : 1;
    h->timeout_ns = timeout_ns;
    struct rlimit rl;
    h->fd_limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur : 0;
    h->pend = calloc(h->cap, sizeof *h->pend);
    h->next = calloc(h->cap, sizeof *h->next);
    /* Opened once and rewound for each scan: when descriptors run out (the
     * case that matters most) a new opendir() would fail with EMFILE. */
    h->dir = opendir("/proc/self/fd");
    return h->pend && h->next && h->dir ? 0 : -ENOMEM;
}

void rci_half_open_fini(struct rci_half_open *h)
{
    if (h->dir)
        closedir(h->dir);
    h->dir = NULL;
    free(h->pend);
    free(h->next);
    h->pend = h->next = NULL;
}

static uint16_t port_of(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)a)->sin_port);
    if (a->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
    return 0;
}

/* A TCP socket connected to our listening port that we have sent nothing on:
 * a connection still in the provider's handshake. Its peer in *peer. */
static bool is_pending(const struct rci_half_open *h, int fd, struct sockaddr_storage *peer,
                       socklen_t *plen, bool *peer_closed, bool *silent)
{
    struct sockaddr_storage own;
    socklen_t olen = sizeof own;
    if (getsockname(fd, (struct sockaddr *)&own, &olen) != 0 || port_of(&own) != h->port)
        return false;
    *plen = sizeof *peer;
    if (getpeername(fd, (struct sockaddr *)peer, plen) != 0)
        return false;   /* the listening socket itself */
    struct tcp_info ti;
    socklen_t tlen = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) != 0 ||
        tlen < offsetof(struct tcp_info, tcpi_bytes_received))
        return false;
    *peer_closed = ti.tcpi_state == 8;  /* TCP_CLOSE_WAIT: the peer has gone */
    *silent = ti.tcpi_bytes_received == 0;  /* no byte of a connection request yet */
    return ti.tcpi_bytes_acked == 0 && ti.tcpi_unacked == 0 && ti.tcpi_notsent_bytes == 0 &&
           (ti.tcpi_state == 1 /* TCP_ESTABLISHED */ || *peer_closed);
}

static const struct rci_half_open_entry *find(const struct rci_half_open *h, int fd, ino_t ino)
{
    for (uint32_t i = 0; i < h->npend; i++)
        if (h->pend[i].fd == fd && h->pend[i].ino == ino)
            return &h->pend[i];
    return NULL;
}

static void say(char *err, size_t errlen, const struct sockaddr_storage *peer, socklen_t plen,
                const char *why)
{
    char host[INET6_ADDRSTRLEN] = "?";
    const void *a = peer->ss_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)peer)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)peer)->sin_addr;
    (void)plen;
    inet_ntop(peer->ss_family, a, host, sizeof host);
    rci_set_err(err, errlen, "connection from %s:%u closed before its handshake: %s", host,
               (unsigned)port_of(peer), why);
}

/* Abort a connection the provider holds, so that the provider itself closes
 * it: connect(AF_UNSPEC) on a TCP socket resets it (RST to the peer, the
 * socket's error becomes ECONNRESET, epoll reports it), and the provider's
 * read of the request header then fails with ECONNRESET, its own error path:
 * it takes the fd out of its wait set, closes it and frees the handle.
 * Not close(): libfabric's wait set keeps its own list of fds, so the fd
 * number, reused by the next accept, would never be polled again (a real
 * subscriber was then never heard). Not shutdown(): after an end-of-file
 * the provider reads 0 bytes, takes a stale errno (EAGAIN) for "try again",
 * keeps the handle, and spins on the readable socket. */
static void abort_socket(int fd)
{
    struct sockaddr unspec = { .sa_family = AF_UNSPEC };
    connect(fd, &unspec, sizeof unspec);
}

/* One pending socket: keep it (copied to h->next) or shut it down. */
static int judge(struct rci_half_open *h, int fd, ino_t ino, const char *allow, uint64_t now,
                 uint32_t *nnext, const struct sockaddr_storage *peer, socklen_t plen,
                 bool peer_closed, bool silent, char *err, size_t errlen)
{
    const struct rci_half_open_entry *old = find(h, fd, ino);
    const char *why = NULL;
    /* A peer that sent bytes may be in the middle of a real handshake (the
     * provider may have read its request and be about to send our answer):
     * only the timeout closes it. */
    if (peer_closed) {
        why = "the peer closed it";
        h->closed_eof++;
    } else if (silent && allow[0] && !rci_allow_list_text_permits(allow, peer, plen)) {
        why = "address not in [fabric] allow";
        h->closed_allowlist++;
    } else if (old && now - old->since_ns > h->timeout_ns) {
        why = "no connection request within the handshake timeout (peer_timeout)";
        h->closed_timeout++;
    } else if (silent && *nnext == h->cap) {
        why = "too many connections in their handshake (max_subscribers)";
        h->closed_cap++;
    }
    if (why) {
        abort_socket(fd);
        say(err, errlen, peer, plen, why);
        return 1;
    }
    if (*nnext < h->cap)   /* a full table leaves a talking one untracked until the next scan */
        h->next[(*nnext)++] = (struct rci_half_open_entry){ fd, ino, old ? old->since_ns : now };
    return 0;
}

int rci_half_open_scan(struct rci_half_open *h, const char *allow, uint64_t now, char *err,
                      size_t errlen)
{
    if (now < h->next_scan_ns || !h->pend || !h->dir)
        return 0;
    h->next_scan_ns = now + RCI_HALF_OPEN_SCAN_NS;
    DIR *d = h->dir;
    rewinddir(d);
    int closed = 0;
    uint32_t nnext = 0;
    uint64_t fds = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        fds++;
        int fd = atoi(e->d_name);
        struct stat st;
        struct sockaddr_storage peer;
        socklen_t plen;
        bool peer_closed = false, silent = false;
        if (fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            !is_pending(h, fd, &peer, &plen, &peer_closed, &silent))
            continue;
        closed += judge(h, fd, st.st_ino, allow, now, &nnext, &peer, plen, peer_closed, silent,
                        err, errlen);
    }
    struct rci_half_open_entry *t = h->pend;
    h->pend = h->next;
    h->next = t;
    h->npend = nnext;
    h->fds_in_use = fds;
    if (h->fd_limit && fds + 16 >= h->fd_limit) {
        h->fd_pressure++;
        rci_set_err(err, errlen, "file descriptors nearly exhausted: %llu of %llu in use (ulimit -n)",
                   (unsigned long long)fds, (unsigned long long)h->fd_limit);
    }
    return closed;
}
