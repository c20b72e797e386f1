/* SPDX-License-Identifier: BSD-3-Clause */
/* mem_pool.h — registered memory pool with size classes (after AllocTools'
 * memory_pool: small / medium / large / huge stacks of registered buffers).
 *
 * Each class is one backing block of `count` buffers of `size` bytes,
 * allocated once (page aligned, zeroed) and registered with libfabric once per
 * fabric domain (rci_mem_pool_register: one MR per block, not per buffer).
 * A buffer's descriptor is its block's.
 *
 * Free buffers of a class sit on a liburcu lock-free stack (cds_lfs):
 *  - put: ANY thread, lock-free (one compare-and-swap push);
 *  - get: ANY thread, also several at once on one class. liburcu's
 *    lock-free pop is safe only with a single popper (or RCU grace periods
 *    before a node is reused, which a pool cannot wait for), so gets use its
 *    multi-popper pop, cds_lfs_pop_blocking: the class's pop mutex is held
 *    for the one compare-and-swap of the pop (no ABA). Uncontended (one
 *    getter per class, as the subscriber's buffers at create) it costs an
 *    atomic pair and no syscall; getters of one class only wait for each
 *    other, never for a put.
 * Counters per class are atomics (in use, high-water, gets, puts,
 * exhausted, bad puts) and may be read from any thread.
 *
 * No malloc or syscall after create (get's mutex is uncontended with one
 * getter per class); put is lock-free.
 * A get from an empty class returns NULL and counts `exhausted`; it does not
 * borrow from a larger class (a caller that may use a larger buffer asks for
 * that class itself), so each class's figures say what that size needed.
 */
#ifndef RCI_MEM_POOL_H
#define RCI_MEM_POOL_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>
#include "net/fabric.h"

enum rci_mem_class { RCI_MEM_SMALL, RCI_MEM_MEDIUM, RCI_MEM_LARGE, RCI_MEM_HUGE, RCI_MEM_CLASSES };

#define RCI_MEM_POOL_ALIGN 4096u      /* buffers and blocks start on a page */
#define RCI_MEM_POOL_MAX_COUNT (1u << 24)

struct rci_mem_pool_params {
    /* Buffer size per class, each a multiple of 64 and larger than the
     * previous class's (classes with count 0 are skipped in that check). */
    size_t size[RCI_MEM_CLASSES];
    /* Buffers per class (0: the class has none). */
    uint32_t count[RCI_MEM_CLASSES];
};

/* Sizes 4 KiB, 16 KiB, 64 KiB, 1 MiB; counts 0 (the caller says how many). */
void rci_mem_pool_params_default(struct rci_mem_pool_params *p);

struct rci_mem_buf {
    struct cds_lfs_node node;      /* on its class's free stack while free */
    uint8_t *data;                 /* size bytes, registered with the block */
    size_t size;
    uint8_t cls;                   /* enum rci_mem_class */
    atomic_bool out;               /* handed out: a second put is refused */
};

struct rci_mem_class_stats {
    const char *use;               /* what the class holds (rci_mem_pool_create_uses), or "" */
    size_t size;                   /* buffer size */
    uint32_t count;                /* buffers */
    uint32_t in_use;               /* handed out now */
    uint32_t high_water;           /* most ever handed out at once */
    uint64_t gets, puts;
    uint64_t exhausted;            /* gets that found the class empty (NULL) */
    uint64_t bad_puts;             /* puts of a buffer not handed out (refused) */
};

struct rci_mem_pool;

/* Allocate every class's block and buffer headers. 0 or -EINVAL / -ENOMEM
 * with the reason in err ("mem pool: class medium: size 1000 is not ..."). */
int  rci_mem_pool_create(const struct rci_mem_pool_params *params, struct rci_mem_pool **out,
                        char *err, size_t errlen);
/* A pool for a program's fixed uses (the publisher: control send and
 * receive buffers, buffered pages; the subscriber: receive and control send
 * buffers): each use with a count gets a class of its own, the classes in
 * the order of the uses' sizes (each rounded up to 64 B; a use as large as
 * the one before it gets 64 B more, since each class must be larger than
 * the one below). cls_of[i] is use i's class, -1 for a use of count 0. At
 * most RCI_MEM_CLASSES uses; `name` must outlive the pool (a literal). */
struct rci_mem_use {
    const char *name;
    size_t size;
    uint32_t count;
};
int  rci_mem_pool_create_uses(const struct rci_mem_use *uses, unsigned n, struct rci_mem_pool **out,
                             int *cls_of, char *err, size_t errlen);
/* Deregisters if registered. Buffers still handed out become invalid. */
void rci_mem_pool_destroy(struct rci_mem_pool *pool);

/* Register each class's block once in f's domain with `access` (FI_SEND,
 * FI_RECV, FI_REMOTE_WRITE, ...); with FI_MR_ENDPOINT bound to ep. Done
 * whatever FI_MR_LOCAL says, so that a descriptor is always at hand (with
 * FI_MR_LOCAL it must be passed, without it is harmless). 0 or -errno (err
 * names the class and the provider's reason); on failure nothing stays
 * registered. Owner thread; not while registered already (-EBUSY). */
int  rci_mem_pool_register(struct rci_mem_pool *pool, struct rci_fabric *f, struct fid_ep *ep,
                          uint64_t access, char *err, size_t errlen);
/* Close the MRs (before f's domain closes). Safe when not registered or NULL. */
void rci_mem_pool_deregister(struct rci_mem_pool *pool);
/* Registrations made so far (one per class block per rci_mem_pool_register). */
uint64_t rci_mem_pool_registrations(const struct rci_mem_pool *pool);

/* The smallest class with buffers of at least `size` bytes, or -1. */
int  rci_mem_pool_class_for(const struct rci_mem_pool *pool, size_t size);
/* A free buffer of class cls, or NULL (empty: counted as exhausted; or no
 * such class). Any thread (see above). */
struct rci_mem_buf *rci_mem_pool_get_class(struct rci_mem_pool *pool, enum rci_mem_class cls);
/* A free buffer of the smallest class holding size bytes, or NULL. */
struct rci_mem_buf *rci_mem_pool_get(struct rci_mem_pool *pool, size_t size);
/* Give a buffer back: any thread, lock-free. A buffer not handed out (a
 * double put) is refused and counted (bad_puts), never pushed twice. */
void rci_mem_pool_put(struct rci_mem_pool *pool, struct rci_mem_buf *buf);

/* Descriptor for iov/fi_recv desc (NULL while not registered). */
void *rci_mem_pool_desc(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf);
/* For RMA: what the peer names this buffer with: its virtual address with
 * FI_MR_VIRT_ADDR, its offset in the registered block otherwise; and the
 * block's key (fi_mr_key). Valid while registered. */
uint64_t rci_mem_pool_remote_addr(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf);
uint64_t rci_mem_pool_key(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf);

void rci_mem_pool_class_stats(const struct rci_mem_pool *pool, enum rci_mem_class cls,
                             struct rci_mem_class_stats *st);
const char *rci_mem_class_name(enum rci_mem_class cls);

#endif
