/* SPDX-License-Identifier: BSD-3-Clause */
/* half_open.h — bounding TCP connections that never finish libfabric's
 * connection handshake (MSG publisher over tcp).
 *
 * libfabric 1.17's tcp provider accepts every connection on its listening
 * socket at once and keeps it, invisible to us, until the peer sends its
 * connection request (prov/tcp/src/tcpx_conn_mgr.c: tcpx_accept, then
 * tcpx_cm_recv_req): no timeout, no limit, no FI_CONNREQ before that, so
 * neither the allow list nor max_subscribers can see it. Such sockets are
 * found here, in /proc/self/fd, as TCP sockets on our listening port on
 * which we have sent nothing (tcp_info: nothing acked, unacked or unsent; an
 * accepted endpoint has at least our accept response out), and reset so that
 * the provider closes them itself (half_open.c, abort_socket, says how).
 * See net/README.md ("Half-open connections"). */
#ifndef RCI_HALF_OPEN_H
#define RCI_HALF_OPEN_H
#include <dirent.h>
#include <stdint.h>
#include <sys/types.h>

#define RCI_HALF_OPEN_SCAN_NS 250000000ull   /* how often /proc/self/fd is read */

struct rci_half_open_entry { int fd; ino_t ino; uint64_t since_ns; };

struct rci_half_open {
    uint16_t port;               /* our listening port */
    uint32_t cap;                /* pending handshakes kept at most */
    uint64_t timeout_ns;         /* a handshake must finish within this */
    uint64_t next_scan_ns;
    uint64_t fd_limit;           /* RLIMIT_NOFILE (soft) */
    DIR *dir;                    /* /proc/self/fd, open for good */
    struct rci_half_open_entry *pend, *next;   /* cap entries each */
    uint32_t npend;
    /* counters */
    uint64_t closed_timeout, closed_allowlist, closed_cap, closed_eof, fd_pressure;
    uint64_t fds_in_use;         /* at the last scan */
};

int  rci_half_open_init(struct rci_half_open *h, uint16_t port, uint32_t cap, uint64_t timeout_ns);
void rci_half_open_fini(struct rci_half_open *h);
/* Scan when due (every RCI_HALF_OPEN_SCAN_NS): shut down pending sockets whose
 * peer the allow list (text, empty = everyone) refuses, that are older than
 * the timeout, or beyond the cap. Returns how many were shut down (the last
 * reason in err), or 0. Counts fd_pressure when descriptors run short. */
int  rci_half_open_scan(struct rci_half_open *h, const char *allow, uint64_t now, char *err,
                       size_t errlen);
#endif
