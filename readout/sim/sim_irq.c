/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_irq.c — the interrupt eventfd over a unix socket (sim_irq.h). */
#include "readout/sim/sim_irq.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/errbuf.h"

#define FETCH_TIMEOUT_S 2

/* The server thread blocks in poll() on the listening socket and stop_fd
 * (an eventfd the stop writes): no timer, so an idle daemon's rc-irq thread
 * never wakes (it used to every 100 ms to look at a stop flag). */
struct rci_sim_irq_server {
    int listen_fd, evfd, stop_fd;
    pthread_t thread;
};

/* Abstract address "\0ringcast-irq-<name>"; returns its length. */
static socklen_t irq_address(const char *shm_name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "ringcast-irq-%s", shm_name);
    if (n < 0 || (size_t)n >= sizeof a->sun_path - 1)
        n = (int)sizeof a->sun_path - 2;
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void send_fd(int conn, int fd)
{
    char byte = 'I';
    struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    (void)sendmsg(conn, &m, MSG_NOSIGNAL);   /* a peer gone meanwhile asks again */
}

static void *serve(void *arg)
{
    struct rci_sim_irq_server *s = arg;
    for (;;) {
        struct pollfd p[2] = { { .fd = s->listen_fd, .events = POLLIN }, { .fd = s->stop_fd, .events = POLLIN } };
        if (poll(p, 2, -1) <= 0)
            continue;   /* EINTR */
        if (p[1].revents)
            return NULL;
        int conn = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
            continue;
        send_fd(conn, s->evfd);
        close(conn);
    }
}

int rci_sim_irq_server_start(const char *shm_name, int evfd, struct rci_sim_irq_server **out,
                            char *err, size_t errlen)
{
    struct rci_sim_irq_server *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->evfd = evfd;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->stop_fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "interrupt socket @ringcast-irq-%s: eventfd: %s", shm_name, strerror(e));
        free(s);
        return -e;
    }
    struct sockaddr_un a;
    socklen_t len = irq_address(shm_name, &a);
    s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, len) != 0 ||
        listen(s->listen_fd, 4) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "interrupt socket @ringcast-irq-%s: %s", shm_name, strerror(e));
        if (s->listen_fd >= 0)
            close(s->listen_fd);
        close(s->stop_fd);
        free(s);
        return -e;
    }
    int rc = pthread_create(&s->thread, NULL, serve, s);
    if (rc != 0) {
        close(s->listen_fd);
        close(s->stop_fd);
        free(s);
        rci_set_err(err, errlen, "interrupt socket @ringcast-irq-%s: thread: %s", shm_name, strerror(rc));
        return -rc;
    }
    pthread_setname_np(s->thread, "rc-irq");
    *out = s;
    return 0;
}

void rci_sim_irq_server_stop(struct rci_sim_irq_server *s)
{
    if (!s)
        return;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof one) != (ssize_t)sizeof one) {
        /* cannot fail on a fresh eventfd (EAGAIN only at its maximum) */
    }
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    close(s->stop_fd);
    free(s);
}

int rci_sim_irq_fetch(const char *shm_name, int *fd, char *err, size_t errlen)
{
    struct sockaddr_un a;
    socklen_t len = irq_address(shm_name, &a);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct timeval tv = { .tv_sec = FETCH_TIMEOUT_S };
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(s, (struct sockaddr *)&a, len) != 0) {
        int e = errno;
        close(s);
        return -e;
    }
    char byte;
    struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf };
    ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    int e = errno;
    close(s);
    struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
        rci_set_err(err, errlen, "interrupt socket @ringcast-irq-%s: no eventfd received (%s)",
                    shm_name, n < 0 ? strerror(e) : "no descriptor in the message");
        return -EPROTO;
    }
    memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return 0;
}
