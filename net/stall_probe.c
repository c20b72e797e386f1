/* SPDX-License-Identifier: BSD-3-Clause */
/* stall_probe.c — see stall_probe.h. */
#include "net/stall_probe.h"

#include <dirent.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static bool same_address(const struct sockaddr *a, const struct sockaddr_storage *b)
{
    if (a->sa_family != b->ss_family)
        return false;
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr);
    }
    return false;
}

static bool is_connection(int fd, const struct sockaddr *local, const struct sockaddr *peer)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0 || !same_address(local, &a))
        return false;
    len = sizeof a;
    return getpeername(fd, (struct sockaddr *)&a, &len) == 0 && same_address(peer, &a);
}

int rci_stall_probe_watched(int epoll_fd, int fd)
{
    if (epoll_fd < 0)
        return RCI_STALL_WATCH_UNKNOWN;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epoll_fd);
    FILE *f = fopen(path, "r");
    if (!f)
        return RCI_STALL_WATCH_UNKNOWN;
    int watched = RCI_STALL_NOT_WATCHED;
    while (fgets(line, sizeof line, f)) {
        int tfd;
        unsigned events;
        /* "tfd:        7 events:       19 data: ..." (fs/eventpoll.c) */
        if (sscanf(line, "tfd: %d events: %x", &tfd, &events) == 2 && tfd == fd) {
            watched = (int)(events & 0x7fffffffu);
            break;
        }
    }
    fclose(f);
    return watched;
}

int rci_stall_probe_tcp(const struct sockaddr *local, const struct sockaddr *peer, int epoll_fd,
                        struct rci_stall_probe *out)
{
    *out = (struct rci_stall_probe){ .fd = -1, .watched = RCI_STALL_WATCH_UNKNOWN };
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        struct stat st;
        if (fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || !is_connection(fd, local, peer))
            continue;
        out->found = true;
        out->fd = fd;
        break;
    }
    closedir(d);
    if (!out->found)
        return 0;
    if (ioctl(out->fd, SIOCOUTQ, &out->outq) != 0)
        out->outq = -1;
    if (ioctl(out->fd, SIOCINQ, &out->inq) != 0)
        out->inq = -1;
    out->watched = rci_stall_probe_watched(epoll_fd, out->fd);
    return 0;
}
