/* SPDX-License-Identifier: BSD-3-Clause */
/* control.c — the daemon's control socket (control.h). */
#include "tools/control.h"
#include "common/errbuf.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define CONTROL_IO_TIMEOUT_MS 500
#define CONTROL_BACKLOG 8

struct rci_control {
    int fd;
    char path[RCI_CONTROL_SOCKET_MAX];
    struct rci_control_stats st;
};

static int unix_address(const char *path, struct sockaddr_un *sa, char *err, size_t errlen)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa->sun_path) {
        rci_set_err(err, errlen, "control socket %s: path too long", path);
        return -ENAMETOOLONG;
    }
    memcpy(sa->sun_path, path, strlen(path) + 1);
    return 0;
}

/* A socket file left by a daemon that died is removed; one a running daemon
 * listens on is refused (two daemons with one socket would confuse ringcast-ctl). */
static int remove_stale(const struct sockaddr_un *sa, char *err, size_t errlen)
{
    struct stat stt;
    if (lstat(sa->sun_path, &stt) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(stt.st_mode)) {
        rci_set_err(err, errlen, "control socket %s: exists and is not a socket", sa->sun_path);
        return -EEXIST;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
        return -errno;
    bool live = connect(probe, (const struct sockaddr *)sa, sizeof *sa) == 0;
    close(probe);
    if (live) {
        rci_set_err(err, errlen, "control socket %s: another process listens on it", sa->sun_path);
        return -EADDRINUSE;
    }
    return unlink(sa->sun_path) == 0 ? 0 : -errno;
}

/* Mode 0660 and, if configured, the group. */
static int set_owner(const char *path, const char *group, char *err, size_t errlen)
{
    if (group[0]) {
        struct group gr, *found = NULL;
        char buf[4096];
        char *end;
        unsigned long gid = strtoul(group, &end, 10);
        if (*end == '\0') {
            gr.gr_gid = (gid_t)gid;
            found = &gr;
        } else if (getgrnam_r(group, &gr, buf, sizeof buf, &found) != 0 || !found) {
            rci_set_err(err, errlen, "control socket %s: [control] group '%s': no such group", path, group);
            return -ENOENT;
        }
        if (chown(path, (uid_t)-1, found->gr_gid) != 0) {
            int rc = -errno;
            rci_set_err(err, errlen, "control socket %s: group %s: %s", path, group, strerror(-rc));
            return rc;
        }
    }
    if (chmod(path, 0660) != 0) {
        int rc = -errno;
        rci_set_err(err, errlen, "control socket %s: chmod: %s", path, strerror(-rc));
        return rc;
    }
    return 0;
}

int rci_control_open(const struct rci_control_params *p, struct rci_control **out, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    int rc = unix_address(p->socket, &sa, err, errlen);
    if (rc == 0 && (rc = remove_stale(&sa, err, errlen)) != 0 && !err[0])
        rci_set_err(err, errlen, "control socket %s: %s", p->socket, strerror(-rc));
    if (rc != 0)
        return rc;
    struct rci_control *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    snprintf(c->path, sizeof c->path, "%s", p->socket);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || bind(c->fd, (const struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(c->fd, CONTROL_BACKLOG) != 0) {
        rc = -errno;
        rci_set_err(err, errlen, "control socket %s: %s", p->socket, strerror(-rc));
        if (c->fd >= 0)
            close(c->fd);
        free(c);
        return rc;
    }
    rc = set_owner(c->path, p->group, err, errlen);
    if (rc != 0) {
        rci_control_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* A request longer than the parser takes: read the rest of it (bounded by
 * the socket's timeout and CONTROL_DRAIN_MAX) so that the client, still
 * writing, gets its error answer instead of a reset connection. */
#define CONTROL_DRAIN_MAX (1u << 20)
static void drain_line(int fd)
{
    char scratch[4096];
    size_t total = 0;
    while (total < CONTROL_DRAIN_MAX) {
        ssize_t n = read(fd, scratch, sizeof scratch);
        if (n <= 0 || memchr(scratch, '\n', (size_t)n))
            return;
        total += (size_t)n;
    }
}

/* Read the request line: up to the newline or the client's end of writing,
 * within the timeout. Returns its length, or -1 (nothing usable in time).
 * A line longer than the buffer is passed on long: the parser refuses it. */
static ssize_t read_request(int fd, char *buf, size_t cap)
{
    size_t used = 0;
    while (used < cap) {
        ssize_t n = read(fd, buf + used, cap - used);
        if (n == 0)
            break;
        if (n < 0)
            return errno == EINTR ? (ssize_t)-1 : (used ? (ssize_t)used : -1);
        used += (size_t)n;
        if (memchr(buf + used - (size_t)n, '\n', (size_t)n))
            break;
    }
    char *nl = memchr(buf, '\n', used);
    if (nl)
        return nl - buf + 1;
    if (used == cap)
        drain_line(fd);
    return (ssize_t)used;
}

static int write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

static void answer_client(struct rci_control *c, int fd, rci_control_handler fn, void *ctx)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = CONTROL_IO_TIMEOUT_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char line[RCI_CTL_MAX_LINE + 2];
    ssize_t len = read_request(fd, line, sizeof line);
    if (len < 0) {
        c->st.io_errors++;
        return;
    }
    c->st.requests++;
    json_t *answer = json_object();
    struct rci_ctl_cmd cmd;
    char err[512] = "";
    int rc = rci_ctl_parse(line, (size_t)len, &cmd, err, sizeof err);
    if (rc != 0)
        c->st.refused++;
    else {
        json_object_set_new(answer, "command", json_string(rci_ctl_op_name(cmd.op)));
        rc = fn(ctx, &cmd, answer, err, sizeof err);
        if (rc != 0)
            c->st.failed++;
    }
    json_object_set_new(answer, "ok", json_boolean(rc == 0));
    if (rc != 0)
        json_object_set_new(answer, "error", json_string(err[0] ? err : strerror(-rc)));
    char *text = json_dumps(answer, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(answer);
    if (!text || write_all(fd, text, strlen(text)) != 0 || write_all(fd, "\n", 1) != 0)
        c->st.io_errors++;
    free(text);
}

void rci_control_serve(struct rci_control *c, uint64_t wait_ns, rci_control_handler fn, void *ctx)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int wait_ms = (int)(wait_ns / 1000000u);
    if (poll(&pfd, 1, wait_ms) <= 0)
        return;
    for (;;) {
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return;   /* EAGAIN: nobody else waiting; other errors: next time */
        answer_client(c, fd, fn, ctx);
        close(fd);
    }
}

void rci_control_get_stats(const struct rci_control *c, struct rci_control_stats *s)
{
    *s = c->st;
}

void rci_control_close(struct rci_control *c)
{
    if (!c)
        return;
    close(c->fd);
    unlink(c->path);
    free(c);
}
