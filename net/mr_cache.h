/* SPDX-License-Identifier: BSD-3-Clause */
/* mr_cache.h — a registration cache for memory a program hands to the
 * publisher without registering it (after AllocTools' registration cache).
 *
 * rci_mr_cache_acquire(addr, len) finds a registered region that covers
 * [addr, addr + len) (a hit) or registers one (a miss: the range rounded out
 * to whole pages, merged with the cached regions it overlaps, so that cached
 * regions never overlap and a lookup is one binary search). Each acquire
 * holds a reference until rci_mr_cache_release(); a region without
 * references stays registered on an LRU list and is evicted, least recently
 * released first, while the cache holds more than max_bytes. A region is
 * never deregistered while referenced: regions in use may take the cache
 * above max_bytes (counted: over_limit).
 *
 * Forgetting: memory that the program frees must leave the cache first, or
 * a later allocation at the same address would be handed the old
 * registration (on RDMA hardware: the old, pinned pages). rci_mr_cache_forget
 * (owner thread) drops every region overlapping a range: deregistered at once
 * or, when in use, at its last release, and never found again.
 * rci_mr_cache_forget_async (any thread) queues the range on a liburcu
 * lock-free stack; the owner applies queued forgets before every acquire
 * and in rci_mr_cache_apply_forgets(). If the queue cannot get memory, the
 * owner forgets every region instead (never a stale one).
 *
 * Threads: everything but forget_async and stats belongs to the owner
 * thread (the publisher's). No lock. A hit costs a binary search over the
 * cached regions; misses register (a provider call), evictions deregister.
 */
#ifndef RCI_MR_CACHE_H
#define RCI_MR_CACHE_H
#include <stddef.h>
#include <stdint.h>
#include "net/fabric.h"

struct rci_mr_cache_params {
    uint64_t max_bytes;            /* registered bytes kept; LRU eviction above */
    uint32_t max_regions;          /* regions at most (in use and cached), >= 1 */
    uint64_t access;               /* fi_mr_reg access, e.g. FI_SEND */
};

struct rci_mr_cache_stats {
    uint64_t hits, misses;         /* acquires served by a cached region / by registering */
    uint64_t evictions;            /* unreferenced regions deregistered for the byte limit
                                    * or for a free entry */
    uint64_t merged;               /* cached regions replaced by a larger one covering them */
    uint64_t forgets;              /* forget requests applied */
    uint64_t forgotten_regions;    /* regions they removed */
    uint64_t forgotten_in_use;     /* ... of which still referenced (deregistered later) */
    uint64_t forget_all;           /* queue out of memory: everything was forgotten */
    uint64_t registrations;        /* fi_mr_reg calls that succeeded */
    uint64_t failures;             /* acquires refused: registration failed, no entry */
    uint64_t over_limit;           /* acquires that left more than max_bytes registered
                                    * (everything else in use) */
    uint64_t registered_bytes;     /* now: every registered region, in use or not */
    uint64_t regions;              /* now: registered regions */
    uint64_t regions_in_use;       /* now: with references */
};

struct rci_mr_cache;
struct rci_mr_region;

/* f and ep (FI_MR_ENDPOINT) must outlive the cache. 0, -EINVAL, -ENOMEM. */
int  rci_mr_cache_create(const struct rci_mr_cache_params *params, struct rci_fabric *f,
                        struct fid_ep *ep, struct rci_mr_cache **out, char *err, size_t errlen);
/* Deregisters every region, referenced or not (the caller has stopped
 * every operation that used them) and frees queued forgets. NULL is fine. */
void rci_mr_cache_destroy(struct rci_mr_cache *c);

/* A referenced region covering [addr, addr + len) in *out. 0, -EINVAL (len 0,
 * NULL or wrapping range), -ENOSPC (max_regions all in use) or the
 * provider's -errno (err says why). */
int  rci_mr_cache_acquire(struct rci_mr_cache *c, const void *addr, size_t len,
                         struct rci_mr_region **out, char *err, size_t errlen);
void rci_mr_cache_release(struct rci_mr_cache *c, struct rci_mr_region *r);
void *rci_mr_region_desc(const struct rci_mr_region *r);
/* True when [addr, addr + len) lies inside the region. */
bool rci_mr_region_contains(const struct rci_mr_region *r, const void *addr, size_t len);
/* The region's key (fi_mr_key): a new registration gets a new one. */
uint64_t rci_mr_region_key(const struct rci_mr_region *r);
/* Registered range of the region (page aligned). */
const void *rci_mr_region_addr(const struct rci_mr_region *r);
size_t rci_mr_region_len(const struct rci_mr_region *r);

/* Owner thread: drop every region overlapping [addr, addr + len). */
void rci_mr_cache_forget(struct rci_mr_cache *c, const void *addr, size_t len);
/* Any thread: queue the same for the owner (applied before its next
 * acquire). Lock-free; allocates the request (falls back to forgetting
 * everything when that fails). */
void rci_mr_cache_forget_async(struct rci_mr_cache *c, const void *addr, size_t len);
/* Owner thread: apply queued forgets now. Returns how many were applied. */
unsigned rci_mr_cache_apply_forgets(struct rci_mr_cache *c);

/* Owner thread (the figures are plain counters). */
void rci_mr_cache_get_stats(const struct rci_mr_cache *c, struct rci_mr_cache_stats *st);

#endif
