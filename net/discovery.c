/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery.c — the discovery front (URL -> backend) and the dir: backend:
 * one JSON file per entry, written to a temporary name and renamed over the
 * old one, so a reader sees the old or the new entry, never half of one. */
#include "net/discovery_internal.h"
#include "common/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int dir_open(struct rci_disc *d, const char *path, char *err, size_t errlen)
{
    if (!path[0] || strlen(path) >= sizeof d->path - 140) {
        rci_set_err(err, errlen, "discovery url 'dir:%s': the directory is empty or too long", path);
        return -EINVAL;
    }
    snprintf(d->path, sizeof d->path, "%s", path);
    d->kind = RCI_DISC_DIR;
    return 0;
}

int rci_disc_open(const struct rci_discovery_params *p, struct rci_disc **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!p->url[0]) {
        rci_set_err(err, errlen, "no discovery url");
        return -ENOENT;
    }
    if (p->ttl_ns < 1000000000ull) {
        rci_set_err(err, errlen, "discovery ttl must be at least 1 s");
        return -EINVAL;
    }
    struct rci_disc *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->p = *p;
    int rc;
    if (strncmp(p->url, "dir:", 4) == 0) {
        rc = dir_open(d, p->url + 4, err, errlen);
    } else if (strncmp(p->url, "etcd://", 7) == 0) {
        rc = rci_disc_etcd_open(d, p->url + 7, err, errlen);
    } else {
        rci_set_err(err, errlen, "discovery url '%s': expected dir:PATH or etcd://HOST:PORT[,HOST:PORT...]",
                    p->url);
        rc = -EINVAL;
    }
    if (rc) {
        rci_disc_close(d);
        return rc;
    }
    *out = d;
    return 0;
}

void rci_disc_close(struct rci_disc *d)
{
    if (!d)
        return;
    if (d->kind == RCI_DISC_ETCD)
        rci_disc_etcd_close(d);
    free(d);
}

const char *rci_disc_url(const struct rci_disc *d) { return d->p.url; }

uint64_t rci_disc_leases_lost(const struct rci_disc *d) { return d->leases_lost; }

/* ---- dir: ------------------------------------------------------------------- */

static int write_file(const char *tmp, const char *path, const char *text)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return -e;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return -e;
    }
    return 0;
}

int rci_disc_remember(struct rci_disc *d, const char *name)
{
    for (size_t i = 0; i < d->nown; i++)
        if (strcmp(d->own[i], name) == 0)
            return 0;
    if (d->nown == RCI_DISC_MAX_OWN)
        return -ENOSPC;
    snprintf(d->own[d->nown++], sizeof d->own[0], "%s", name);
    return 0;
}

static bool dead_local_pid(const struct rci_disc_entry *e);
static int read_small_file(int dirfd, const char *name, char *buf, size_t cap, size_t *len);
static bool is_entry_name(const char *name);

/* Files of daemons of this host whose pid is gone (killed, crashed) are
 * removed by the next daemon that announces here; entries of other hosts
 * are left to their own hosts (they are skipped as stale when not refreshed). */
static void dir_remove_dead(struct rci_disc *d)
{
    DIR *dir = opendir(d->path);
    char *buf = malloc(RCI_DISC_ENTRY_MAX + 1);
    struct dirent *de;
    while (dir && buf && (de = readdir(dir)) != NULL) {
        size_t len = 0;
        struct rci_disc_entry e;
        if (is_entry_name(de->d_name) &&
            read_small_file(dirfd(dir), de->d_name, buf, RCI_DISC_ENTRY_MAX + 1, &len) == 0 &&
            rci_disc_entry_from_json(buf, len, &e, NULL, 0) == 0 && dead_local_pid(&e) &&
            unlinkat(dirfd(dir), de->d_name, 0) == 0)
            d->dead_removed++;
    }
    free(buf);
    if (dir)
        closedir(dir);
}

static int dir_announce(struct rci_disc *d, const struct rci_disc_entry *e, size_t n, char *err, size_t errlen)
{
    if (mkdir(d->path, 0755) != 0 && errno != EEXIST) {
        rci_set_err(err, errlen, "discovery directory %s: %s", d->path, strerror(errno));
        return -errno;
    }
    if (d->nown == 0)
        dir_remove_dead(d);
    uint64_t now = rci_disc_wall_ms();
    for (size_t i = 0; i < n; i++) {
        struct rci_disc_entry fresh = e[i];
        fresh.refreshed_ms = now;
        fresh.ttl_ms = d->p.ttl_ns / 1000000u;
        char name[128], path[512], tmp[512];
        rci_disc_entry_name(&fresh, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s.json", d->path, name);
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp", d->path, name);
        char *text = rci_disc_entry_to_json(&fresh);
        int rc = text ? write_file(tmp, path, text) : -ENOMEM;
        free(text);
        if (rc == 0)
            rc = rci_disc_remember(d, name);
        if (rc) {
            rci_set_err(err, errlen, "discovery entry %s: %s", path, strerror(-rc));
            return rc;
        }
    }
    return 0;
}

static int dir_withdraw(struct rci_disc *d, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < d->nown; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", d->path, d->own[i]);
        if (unlink(path) != 0 && errno != ENOENT && rc == 0) {
            rc = -errno;
            rci_set_err(err, errlen, "discovery entry %s: %s", path, strerror(errno));
        }
    }
    d->nown = 0;
    return rc;
}

/* A file that will not fit an entry is malformed: read one byte more than
 * the largest entry to know. */
static int read_small_file(int dirfd, const char *name, char *buf, size_t cap, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    ssize_t r;
    while (got < cap && (r = read(fd, buf + got, cap - got)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return 0;
}

static bool is_entry_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int dir_list(struct rci_disc *d, struct rci_disc_entry *out, size_t max, size_t *n,
                    struct rci_disc_list_stats *st, char *err, size_t errlen)
{
    DIR *dir = opendir(d->path);
    if (!dir) {
        if (errno == ENOENT)   /* nobody announced yet */
            return 0;
        rci_set_err(err, errlen, "discovery directory %s: %s", d->path, strerror(errno));
        return -errno;
    }
    uint64_t now = rci_disc_wall_ms();
    char *buf = malloc(RCI_DISC_ENTRY_MAX + 1);
    if (!buf) {
        closedir(dir);
        return -ENOMEM;
    }
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (!is_entry_name(de->d_name))
            continue;
        size_t len = 0;
        if (read_small_file(dirfd(dir), de->d_name, buf, RCI_DISC_ENTRY_MAX + 1, &len) != 0) {
            if (errno != ENOENT)   /* removed between readdir and open: gone, not broken */
                st->malformed++;
            continue;
        }
        char where[300];
        snprintf(where, sizeof where, "%s/%s", d->path, de->d_name);
        rci_disc_take(buf, len, where, out, max, n, st, now, true);
    }
    free(buf);
    closedir(dir);
    return 0;
}

/* ---- shared ------------------------------------------------------------------ */

/* A pid on this host that no longer exists: its daemon died without
 * withdrawing (an entry of another host cannot be checked this way). */
static bool dead_local_pid(const struct rci_disc_entry *e)
{
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    return strcmp(host, e->hostname) == 0 && kill((pid_t)e->pid, 0) != 0 && errno == ESRCH;
}

void rci_disc_take(const char *text, size_t len, const char *where, struct rci_disc_entry *out, size_t max,
                   size_t *n, struct rci_disc_list_stats *st, uint64_t now_ms, bool check_pid)
{
    (void)where;
    struct rci_disc_entry e;
    char why[160];
    int rc = rci_disc_entry_from_json(text, len, &e, why, sizeof why);
    if (rc == -ENOENT) {
        st->foreign++;
        return;
    }
    if (rc) {
        st->malformed++;
        return;
    }
    if ((now_ms && e.refreshed_ms + e.ttl_ms < now_ms) || (check_pid && dead_local_pid(&e))) {
        st->stale++;
        return;
    }
    if (*n == max) {
        st->truncated++;
        return;
    }
    out[(*n)++] = e;
    st->entries++;
}

int rci_disc_announce(struct rci_disc *d, const struct rci_disc_entry *e, size_t n, char *err, size_t errlen)
{
    if (n > RCI_DISC_MAX_OWN) {
        rci_set_err(err, errlen, "%zu discovery entries, at most %u", n, RCI_DISC_MAX_OWN);
        return -EINVAL;
    }
    return d->kind == RCI_DISC_DIR ? dir_announce(d, e, n, err, errlen)
                                   : rci_disc_etcd_announce(d, e, n, err, errlen);
}

int rci_disc_withdraw(struct rci_disc *d, char *err, size_t errlen)
{
    return d->kind == RCI_DISC_DIR ? dir_withdraw(d, err, errlen) : rci_disc_etcd_withdraw(d, err, errlen);
}

int rci_disc_list(struct rci_disc *d, struct rci_disc_entry *out, size_t max, size_t *n,
                  struct rci_disc_list_stats *st, char *err, size_t errlen)
{
    *n = 0;
    memset(st, 0, sizeof *st);
    return d->kind == RCI_DISC_DIR ? dir_list(d, out, max, n, st, err, errlen)
                                   : rci_disc_etcd_list(d, out, max, n, st, err, errlen);
}
