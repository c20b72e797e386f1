/* SPDX-License-Identifier: BSD-3-Clause */
/* dma_mem.h — memory for DMA rings and for anything a second process must map
 * (the simulated card's BAR). Backends:
 *   RCI_MEM_ANON     anonymous mmap (+ mlock): the default;
 *   RCI_MEM_HUGETLB  MAP_HUGETLB (2 MiB pages); fails clearly if none are free;
 *   RCI_MEM_SHM      a POSIX shared-memory object /dev/shm/<name>, so that a
 *                   simulator in another process can write into it;
 *   RCI_MEM_HUGETLBFS the same on 2 MiB huge pages: the file <mount>/<name> in
 *                   the first hugetlbfs mount with 2 MiB pages (/proc/mounts);
 *                   the size must be a multiple of 2 MiB. Same naming, stale
 *                   object and attach rules as RCI_MEM_SHM.
 *
 * All mappings are populated at map time (MAP_POPULATE), so the hot path never
 * takes a first-touch page fault. Not thread-safe per region: map and unmap a
 * region from one thread.
 */
#ifndef RCI_DMA_MEM_H
#define RCI_DMA_MEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rci_mem_backend { RCI_MEM_ANON = 0, RCI_MEM_HUGETLB, RCI_MEM_SHM, RCI_MEM_HUGETLBFS };

#define RCI_MEM_HUGE_PAGE   ((size_t)2 << 20)   /* RCI_MEM_HUGETLB sizes are multiples of this */
#define RCI_MEM_NAME_MAX    63                  /* longest shm name (without the '/') */

struct rci_mem_region {
    uint8_t *addr;        /* NULL when not mapped */
    size_t size;
    enum rci_mem_backend backend;
    bool locked;          /* mlock succeeded */
    int lock_errno;       /* why mlock failed (0: it did not, or was not asked for) */
    bool owner;           /* created (and will unlink) the shm object */
    int fd;               /* owner's shm descriptor, holds the liveness lock; else -1 */
    char name[RCI_MEM_NAME_MAX + 1];   /* shm object name without the leading '/' */
};

const char *rci_mem_backend_name(enum rci_mem_backend b);
/* Parse "anon" | "hugetlb" | "shm"; returns 0 or -EINVAL. */
int rci_mem_backend_parse(const char *s, enum rci_mem_backend *out);

/* Allocate (create = true) or attach to (create = false, SHM only) a region.
 * Returns 0 or -errno with a message naming the backend and size in err.
 * On success err is "" or holds a warning the caller should log:
 *  - lock requested but mlock failed (region usable, not pinned: locked=false,
 *    lock_errno set; the caller decides whether that is acceptable);
 *  - SHM create replaced a stale object left by a killed process.
 *
 * SHM names: 1..RCI_MEM_NAME_MAX characters of [A-Za-z0-9._-], not starting
 * with '.'. Create uses O_EXCL. If /dev/shm/<name> already exists, the creator
 * checks whether its owner is alive: a live owner holds an exclusive flock()
 * on the object for as long as it is mapped, so
 *  - lock held   -> -EEXIST (another running instance uses this name);
 *  - lock free   -> the object is stale (its owner died): it is unlinked and
 *                   recreated, and err says so.
 * Attach (create = false) maps an existing object whose size must equal size.
 * The owner unlinks the object in rci_mem_unmap(); attached mappings stay valid
 * until they are unmapped too. */
int  rci_mem_map(enum rci_mem_backend b, size_t size, const char *shm_name, bool create,
                bool lock, struct rci_mem_region *out, char *err, size_t errlen);
/* The SHM name rule above without its length bound (a caller may add a
 * suffix before mapping): only [A-Za-z0-9._-], not starting with '.'. */
bool rci_mem_shm_name_chars_ok(const char *name);
/* The first hugetlbfs mount with 2 MiB pages: 0 with its path in dir, or
 * -ENOENT when none is mounted. */
int  rci_mem_hugetlbfs_mount(char *dir, size_t len);
/* Move the region's pages to NUMA node `node` and keep them there
 * (mbind MPOL_BIND with MPOL_MF_MOVE | MPOL_MF_STRICT). 0 or -errno with the
 * reason in err. */
int  rci_mem_bind_node(struct rci_mem_region *r, int node, char *err, size_t errlen);
/* Unmap (and, for the shm owner, unlink). Safe on a zeroed or already
 * unmapped region. */
void rci_mem_unmap(struct rci_mem_region *r);

#endif
