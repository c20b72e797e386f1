/* dma_mem.h — memory for DMA rings and for anything a second process must map
 * (the simulated card's BAR). Backends:
 *   RC_MEM_ANON     anonymous mmap (+ mlock): the default;
 *   RC_MEM_HUGETLB  MAP_HUGETLB (2 MiB pages); fails clearly if none are free;
 *   RC_MEM_SHM      a POSIX shared-memory object /dev/shm/<name>, so that a
 *                   simulator in another process can write into it.
 */
#ifndef RC_DMA_MEM_H
#define RC_DMA_MEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rc_mem_backend { RC_MEM_ANON = 0, RC_MEM_HUGETLB, RC_MEM_SHM };

struct rc_mem_region {
    uint8_t *addr;
    size_t size;
    enum rc_mem_backend backend;
    bool locked;          /* mlock succeeded */
    bool owner;           /* created (and will unlink) the shm object */
    char name[64];        /* shm object name without the leading '/' */
};

const char *rc_mem_backend_name(enum rc_mem_backend b);
/* Parse "anon" | "hugetlb" | "shm"; returns 0 or -EINVAL. */
int rc_mem_backend_parse(const char *s, enum rc_mem_backend *out);

/* Allocate (create = true) or attach to (create = false, SHM only) a region.
 * Returns 0 or -errno with a message naming the backend and size in err. */
int  rc_mem_map(enum rc_mem_backend b, size_t size, const char *shm_name, bool create,
                bool lock, struct rc_mem_region *out, char *err, size_t errlen);
void rc_mem_unmap(struct rc_mem_region *r);

#endif
