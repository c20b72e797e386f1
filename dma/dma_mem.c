/* SPDX-License-Identifier: BSD-3-Clause */
/* dma_mem.c — anonymous, hugetlb and POSIX shared-memory regions for DMA rings. */
#include "dma/dma_mem.h"
#include "common/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <numaif.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
/* Ask for 2 MiB pages explicitly: the default huge page size may be 1 GiB. */
#define RCI_MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)

static const char *const backend_names[] = {
    [RCI_MEM_ANON] = "anon", [RCI_MEM_HUGETLB] = "hugetlb", [RCI_MEM_SHM] = "shm", [RCI_MEM_HUGETLBFS] = "hugetlbfs",
};

static void add_warning(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* Warnings accumulate ("; "-separated): a replaced stale object and a failed
 * mlock can both happen in one call. */
static void add_warning(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    size_t used = strnlen(err, errlen);
    if (used > 0 && used + 2 < errlen) {
        memcpy(err + used, "; ", 3);
        used += 2;
    }
    if (used + 1 >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, errlen - used, fmt, ap);
    va_end(ap);
}

const char *rci_mem_backend_name(enum rci_mem_backend b)
{
    if ((unsigned)b < sizeof backend_names / sizeof backend_names[0]) return backend_names[b];
    return "unknown";
}

int rci_mem_backend_parse(const char *s, enum rci_mem_backend *out)
{
    for (unsigned i = 0; s && i < sizeof backend_names / sizeof backend_names[0]; i++) {
        if (strcmp(s, backend_names[i]) == 0) {
            *out = (enum rci_mem_backend)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Pin the pages so the card's DMA target never moves or swaps. A failure is
 * not fatal here: the region works, the caller is told and decides. */
static void lock_region(struct rci_mem_region *r, char *err, size_t errlen)
{
    if (mlock(r->addr, r->size) == 0) {
        r->locked = true;
        return;
    }
    r->lock_errno = errno;
    add_warning(err, errlen,
            "%s: mlock of %zu bytes failed (%s): memory is usable but not pinned; "
            "raise RLIMIT_MEMLOCK (ulimit -l) or grant CAP_IPC_LOCK",
            rci_mem_backend_name(r->backend), r->size, strerror(r->lock_errno));
}

static int map_anon(struct rci_mem_region *r, char *err, size_t errlen)
{
    void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        rci_set_err(err, errlen, "anon: mmap of %zu bytes failed: %s", r->size, strerror(e));
        return -e;
    }
    r->addr = p;
    return 0;
}

/* Read one number from a sysfs/procfs file; -1 if unreadable. */
static long read_long_file(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f) return -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

static int map_hugetlb(struct rci_mem_region *r, char *err, size_t errlen)
{
    if (r->size % RCI_MEM_HUGE_PAGE != 0) {
        rci_set_err(err, errlen, "hugetlb: size %zu is not a multiple of 2 MiB (%zu bytes)",
                r->size, RCI_MEM_HUGE_PAGE);
        return -EINVAL;
    }
    void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | RCI_MAP_HUGE_2MB | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        const char *dir = "/sys/kernel/mm/hugepages/hugepages-2048kB";
        char path[128];
        snprintf(path, sizeof path, "%s/nr_hugepages", dir);
        long total = read_long_file(path);
        snprintf(path, sizeof path, "%s/free_hugepages", dir);
        long free_pages = read_long_file(path);
        rci_set_err(err, errlen,
                "hugetlb: cannot map %zu bytes (%zu pages of 2 MiB): %s; 2 MiB huge pages "
                "reserved %ld, free %ld; reserve them in /proc/sys/vm/nr_hugepages "
                "(or %s/nr_hugepages)",
                r->size, r->size / RCI_MEM_HUGE_PAGE, strerror(e), total, free_pages, dir);
        return -e;
    }
    r->addr = p;
    return 0;
}

static bool shm_name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

bool rci_mem_shm_name_chars_ok(const char *name)
{
    if (name[0] == '.') return false;
    for (; *name; name++)
        if (!shm_name_char_ok(*name)) return false;
    return true;
}

static int check_shm_name(const char *name, char *err, size_t errlen)
{
    if (!name || !name[0]) {
        rci_set_err(err, errlen, "shm: empty object name");
        return -EINVAL;
    }
    size_t len = strlen(name);
    if (len > RCI_MEM_NAME_MAX) {
        rci_set_err(err, errlen, "shm: object name '%.*s...' is %zu characters, at most %d allowed",
                20, name, len, RCI_MEM_NAME_MAX);
        return -EINVAL;
    }
    if (name[0] == '.') {
        rci_set_err(err, errlen, "shm: object name '%s' must not start with '.'", name);
        return -EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        if (!shm_name_char_ok(name[i])) {
            rci_set_err(err, errlen,
                    "shm: object name '%s' has '%c' at %zu; only [A-Za-z0-9._-] allowed "
                    "(no '/': the name lives directly in /dev/shm)",
                    name, name[i], i);
            return -EINVAL;
        }
    }
    return 0;
}

/* Shared objects live in /dev/shm (shm) or in a hugetlbfs mount (hugetlbfs).
 * path is "/NAME". */
static const char *obj_dir(enum rci_mem_backend b, char *buf, size_t len)
{
    if (b == RCI_MEM_SHM)
        return "/dev/shm";
    return rci_mem_hugetlbfs_mount(buf, len) == 0 ? buf : "(no hugetlbfs mounted)";
}

static int obj_open(enum rci_mem_backend b, const char *path, int flags, mode_t mode)
{
    if (b == RCI_MEM_SHM)
        return shm_open(path, flags, mode);
    char dir[PATH_MAX], full[PATH_MAX + RCI_MEM_NAME_MAX + 2];
    if (rci_mem_hugetlbfs_mount(dir, sizeof dir) != 0) {
        errno = ENODEV;
        return -1;
    }
    snprintf(full, sizeof full, "%s%s", dir, path);
    return open(full, flags | O_CLOEXEC, mode);
}

static int obj_unlink(enum rci_mem_backend b, const char *path)
{
    if (b == RCI_MEM_SHM)
        return shm_unlink(path);
    char dir[PATH_MAX], full[PATH_MAX + RCI_MEM_NAME_MAX + 2];
    if (rci_mem_hugetlbfs_mount(dir, sizeof dir) != 0) {
        errno = ENODEV;
        return -1;
    }
    snprintf(full, sizeof full, "%s%s", dir, path);
    return unlink(full);
}

int rci_mem_hugetlbfs_mount(char *dir, size_t len)
{
    FILE *f = fopen("/proc/mounts", "r");
    char line[1024];
    int rc = -ENOENT;
    while (f && rc != 0 && fgets(line, sizeof line, f)) {
        char mnt[PATH_MAX], type[64], opts[512];
        if (sscanf(line, "%*s %4095s %63s %511s", mnt, type, opts) != 3 || strcmp(type, "hugetlbfs") != 0)
            continue;
        char *ps = strstr(opts, "pagesize=");
        if (ps && strncmp(ps + 9, "2M", 2) != 0)
            continue;   /* 1 GiB pages: not what ring sizes are checked against */
        if (strlen(mnt) >= len)
            continue;
        memcpy(dir, mnt, strlen(mnt) + 1);
        rc = 0;
    }
    if (f)
        fclose(f);
    return rc;
}

/* An existing object whose creator still maps it is locked (see rci_mem_map).
 * Returns 0 if it was stale and is now unlinked, -EEXIST if it is in use. */
static int remove_if_stale(enum rci_mem_backend b, const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    int fd = obj_open(b, path, O_RDWR, 0);
    if (fd < 0) return errno == ENOENT ? 0 : -errno;   /* vanished meanwhile: fine */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK) return -e;
        rci_set_err(err, errlen,
                "%s: %s%s exists and is in use by a running process "
                "(another ringcast instance with the same name?)",
                rci_mem_backend_name(b), obj_dir(b, dir, sizeof dir), path);
        return -EEXIST;
    }
    /* Unlink while holding the lock so that a concurrent creator cannot take
     * the same object for stale too. */
    int rc = (obj_unlink(b, path) == 0 || errno == ENOENT) ? 0 : -errno;
    close(fd);
    return rc;
}

static int shm_create_fd(struct rci_mem_region *r, const char *path, char *err, size_t errlen)
{
    enum rci_mem_backend b = r->backend;
    const char *bn = rci_mem_backend_name(b);
    char dir[PATH_MAX];
    int fd = obj_open(b, path, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        int rc = remove_if_stale(b, path, err, errlen);
        if (rc == -EEXIST) return rc;
        if (rc < 0) {
            rci_set_err(err, errlen, "%s: cannot remove stale %s%s: %s", bn, obj_dir(b, dir, sizeof dir),
                        path, strerror(-rc));
            return rc;
        }
        fd = obj_open(b, path, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0)
            rci_set_err(err, errlen, "%s: replaced stale %s%s left by a process that died", bn,
                        obj_dir(b, dir, sizeof dir), path);
    }
    if (fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "%s: cannot create %s%s (%zu bytes): %s%s", bn,
                    obj_dir(b, dir, sizeof dir), path, r->size, strerror(e),
                    e == ENODEV ? ": mount one (mount -t hugetlbfs nodev /dev/hugepages)" : "");
        return -e;
    }
    /* Liveness lock: held for the owner's lifetime (released by the kernel if
     * the process dies), so a later creator can tell stale from in use. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || ftruncate(fd, (off_t)r->size) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "%s: cannot set up %s%s (%zu bytes): %s%s", bn,
                    obj_dir(b, dir, sizeof dir), path, r->size, strerror(e),
                    b == RCI_MEM_HUGETLBFS ? " (2 MiB huge pages free? /proc/sys/vm/nr_hugepages)" : "");
        obj_unlink(b, path);
        close(fd);
        return -e;
    }
    return fd;
}

static int shm_attach_fd(struct rci_mem_region *r, const char *path, char *err, size_t errlen)
{
    enum rci_mem_backend b = r->backend;
    const char *bn = rci_mem_backend_name(b);
    char dir[PATH_MAX];
    int fd = obj_open(b, path, O_RDWR, 0);
    if (fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "%s: cannot attach to %s%s: %s%s", bn, obj_dir(b, dir, sizeof dir),
                    path, strerror(e), e == ENOENT ? " (is the creating process running?)" : "");
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        rci_set_err(err, errlen, "%s: cannot stat %s%s: %s", bn, obj_dir(b, dir, sizeof dir), path,
                    strerror(e));
        return -e;
    }
    if ((uint64_t)st.st_size != r->size) {
        close(fd);
        rci_set_err(err, errlen, "%s: %s%s has %lld bytes, expected %zu", bn,
                    obj_dir(b, dir, sizeof dir), path, (long long)st.st_size, r->size);
        return -EINVAL;
    }
    return fd;
}

static int map_shm(struct rci_mem_region *r, const char *name, bool create, char *err,
                   size_t errlen)
{
    int rc = check_shm_name(name, err, errlen);
    if (rc < 0) return rc;
    if (r->backend == RCI_MEM_HUGETLBFS && r->size % RCI_MEM_HUGE_PAGE != 0) {
        rci_set_err(err, errlen, "hugetlbfs: size %zu is not a multiple of 2 MiB", r->size);
        return -EINVAL;
    }
    char dir[PATH_MAX];
    char path[RCI_MEM_NAME_MAX + 2];
    snprintf(path, sizeof path, "/%s", name);
    int fd = create ? shm_create_fd(r, path, err, errlen) : shm_attach_fd(r, path, err, errlen);
    if (fd < 0) return fd;
    void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        rci_set_err(err, errlen, "%s: mmap of %s%s (%zu bytes) failed: %s",
                    rci_mem_backend_name(r->backend), obj_dir(r->backend, dir, sizeof dir), path,
                    r->size, strerror(e));
        if (create) obj_unlink(r->backend, path);
        close(fd);
        return -e;
    }
    r->addr = p;
    snprintf(r->name, sizeof r->name, "%s", name);
    if (create) {
        r->owner = true;
        r->fd = fd;        /* keep it open: it carries the liveness lock */
    } else {
        close(fd);         /* the mapping stays valid without the descriptor */
    }
    return 0;
}

int rci_mem_map(enum rci_mem_backend b, size_t size, const char *shm_name, bool create,
               bool lock, struct rci_mem_region *out, char *err, size_t errlen)
{
    rci_set_err(err, errlen, "%s", "");
    memset(out, 0, sizeof *out);
    out->fd = -1;
    out->backend = b;
    out->size = size;
    if (size == 0) {
        rci_set_err(err, errlen, "%s: size 0", rci_mem_backend_name(b));
        return -EINVAL;
    }
    if (!create && b != RCI_MEM_SHM && b != RCI_MEM_HUGETLBFS) {
        rci_set_err(err, errlen, "%s: only shm and hugetlbfs regions can be attached to",
                    rci_mem_backend_name(b));
        return -EINVAL;
    }
    int rc;
    switch (b) {
    case RCI_MEM_ANON:    rc = map_anon(out, err, errlen); break;
    case RCI_MEM_HUGETLB: rc = map_hugetlb(out, err, errlen); break;
    case RCI_MEM_SHM:
    case RCI_MEM_HUGETLBFS: rc = map_shm(out, shm_name, create, err, errlen); break;
    default:
        rci_set_err(err, errlen, "memory backend %d unknown", (int)b);
        rc = -EINVAL;
    }
    if (rc < 0) {
        out->addr = NULL;
        return rc;
    }
    if (lock) lock_region(out, err, errlen);
    return 0;
}

int rci_mem_bind_node(struct rci_mem_region *r, int node, char *err, size_t errlen)
{
    unsigned long mask[16] = { 0 };
    if (node < 0 || node >= (int)(sizeof mask * 8)) {
        rci_set_err(err, errlen, "NUMA node %d out of range", node);
        return -EINVAL;
    }
    mask[node / (8 * sizeof mask[0])] = 1ul << (node % (8 * sizeof mask[0]));
    if (mbind(r->addr, r->size, MPOL_BIND, mask, sizeof mask * 8, MPOL_MF_MOVE | MPOL_MF_STRICT) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "%s: cannot place %zu bytes on NUMA node %d: %s",
                    rci_mem_backend_name(r->backend), r->size, node, strerror(e));
        return -e;
    }
    return 0;
}

void rci_mem_unmap(struct rci_mem_region *r)
{
    if (!r || !r->addr) return;
    munmap(r->addr, r->size);   /* also drops the mlock */
    if (r->owner) {
        char path[RCI_MEM_NAME_MAX + 2];
        snprintf(path, sizeof path, "/%s", r->name);
        obj_unlink(r->backend, path);
        close(r->fd);           /* releases the liveness lock */
    }
    r->addr = NULL;
    r->owner = false;
    r->locked = false;
    r->fd = -1;
}
