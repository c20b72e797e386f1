/* SPDX-License-Identifier: BSD-3-Clause */
/* dma_ring.h — one contiguous DMA ring in host memory and the key-based
 * release tracker that decides how far the card may write.
 *
 * Positions are monotonic 64-bit byte counts (never wrapped); a position p
 * lives at ring offset p % size. Three positions, always
 *     read <= taken <= written <= read + size:
 *   written  how far the card has written (reported by the reader),
 *   taken    how far a reader has taken ranges for processing,
 *   read     the contiguous released prefix: the card may overwrite below it.
 * taken and read are always multiples of unit_size; written need not be.
 *
 * Threads: one "owner" thread calls note_written/take/advance; release() may be
 * called from any thread, concurrently, in any order. release() is one atomic
 * compare-and-swap (no locks, no syscalls, no allocation); advance() is
 * amortised O(1) per released take. The key must reach the releasing thread
 * through something that orders memory (a queue, a lock, a release/acquire
 * pair): release() relies on seeing the take that produced the key.
 * Getters and get_stats may be called from any thread.
 *
 * Keys are opaque. release() rejects (-EINVAL, counted in bad_releases) keys
 * that are duplicate (already released), stale (already advanced past, even if
 * the unit was taken again since), or corrupt (not a live take). Of two threads
 * racing to release one key exactly one wins. A stale key is misread as live
 * only if its take and a live take of the same length start 2^(63 - b) units
 * apart, b = bits of (size / unit_size): at least 2^31 units.
 *
 * This module knows nothing of cards, blocks or networks.
 */
#ifndef RCI_DMA_RING_H
#define RCI_DMA_RING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dma/dma_mem.h"

/* size / unit_size must not exceed this (the key holds a unit count). */
#define RCI_DMA_RING_MAX_UNITS 0xffffffffull

struct rci_dma_ring_params {
    size_t size;               /* bytes, multiple of unit_size */
    size_t unit_size;          /* take/release granularity (the block size) */
    enum rci_mem_backend backend;
    const char *shm_name;      /* RCI_MEM_SHM only: name under /dev/shm */
    bool lock_memory;          /* mlock the ring (default true) */
    bool bind_node;            /* move and bind the ring's pages to numa_node */
    int numa_node;
};

/* At most two pieces: a range that wraps the end of the ring. */
struct rci_dma_span {
    unsigned count;
    struct { size_t offset; size_t len; } piece[2];
};

struct rci_dma_ring_stats {
    uint64_t size;
    uint64_t written, taken, read;     /* monotonic positions */
    uint64_t in_use;                   /* written - read */
    uint64_t high_water;               /* max in_use seen */
    uint64_t full_ns;                  /* time spent with in_use == size (incl. now) */
    uint64_t takes;
    uint64_t releases;                 /* releases retired by advance(); accepted
                                          releases ahead of read are not yet counted */
    uint64_t bad_releases;             /* stale, duplicate or corrupt keys, rejected */
    uint64_t bad_written;              /* note_written calls that went backwards or
                                          past read + size, clamped */
};

struct rci_dma_ring;

/* Returns 0, or -errno with a message in err. On success err is "" or holds a
 * warning from the memory backend (e.g. mlock failed) that the caller should log. */
int  rci_dma_ring_create(const struct rci_dma_ring_params *p, struct rci_dma_ring **out,
                        char *err, size_t errlen);
void rci_dma_ring_destroy(struct rci_dma_ring *r);

uint8_t *rci_dma_ring_addr(const struct rci_dma_ring *r);  /* register this once */
size_t   rci_dma_ring_size(const struct rci_dma_ring *r);
size_t   rci_dma_ring_unit(const struct rci_dma_ring *r);
const struct rci_mem_region *rci_dma_ring_region(const struct rci_dma_ring *r);

/* Owner thread: the card has written up to monotonic position `written`.
 * Returns 0, or -EINVAL if written went backwards (ignored) or beyond
 * read + size (clamped to read + size); both are counted in bad_written. */
int  rci_dma_ring_note_written(struct rci_dma_ring *r, uint64_t written);
/* Owner thread: take the next len bytes (multiple of unit, 0 < len <= size)
 * after `taken`. Returns 0 and fills span/key, -EAGAIN if fewer than len bytes
 * are written, or -EINVAL for a bad len. */
int  rci_dma_ring_take(struct rci_dma_ring *r, size_t len, struct rci_dma_span *span,
                      uint64_t *key);
/* Any thread: give a taken range back. Returns 0, or -EINVAL for a bad key
 * (counted in bad_releases, otherwise ignored). */
int  rci_dma_ring_release(struct rci_dma_ring *r, uint64_t key);
/* Owner thread: advance read over the released prefix; returns the new read.
 * The caller writes it to the card (batched as it sees fit). */
uint64_t rci_dma_ring_advance(struct rci_dma_ring *r);

uint64_t rci_dma_ring_read_pos(const struct rci_dma_ring *r);
uint64_t rci_dma_ring_written_pos(const struct rci_dma_ring *r);
uint64_t rci_dma_ring_taken_pos(const struct rci_dma_ring *r);
void rci_dma_ring_get_stats(const struct rci_dma_ring *r, struct rci_dma_ring_stats *s);

#endif
