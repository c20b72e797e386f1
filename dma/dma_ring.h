/* dma_ring.h — one contiguous DMA ring in host memory and the key-based
 * release tracker that decides how far the card may write.
 *
 * Positions are monotonic 64-bit byte counts (never wrapped); a position p
 * lives at ring offset p % size. Three positions, always
 *     read <= taken <= written <= read + size:
 *   written  how far the card has written (reported by the reader),
 *   taken    how far a reader has taken ranges for processing,
 *   read     the contiguous released prefix: the card may overwrite below it.
 *
 * Threads: one "owner" thread calls note_written/take/advance; release() may be
 * called from any thread, concurrently, in any order. release() is one atomic
 * store (no locks, no syscalls); advance() is amortised O(1) per unit.
 *
 * This module knows nothing of cards, blocks or networks.
 */
#ifndef RC_DMA_RING_H
#define RC_DMA_RING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dma/dma_mem.h"

struct rc_dma_ring_params {
    size_t size;               /* bytes, multiple of unit_size */
    size_t unit_size;          /* take/release granularity (the block size) */
    enum rc_mem_backend backend;
    const char *shm_name;      /* RC_MEM_SHM only: name under /dev/shm */
    bool lock_memory;          /* mlock the ring (default true) */
};

/* At most two pieces: a range that wraps the end of the ring. */
struct rc_dma_span {
    unsigned count;
    struct { size_t offset; size_t len; } piece[2];
};

struct rc_dma_ring_stats {
    uint64_t size;
    uint64_t written, taken, read;     /* monotonic positions */
    uint64_t in_use;                   /* written - read */
    uint64_t high_water;               /* max in_use seen */
    uint64_t full_ns;                  /* time spent with in_use == size */
    uint64_t takes, releases;
    uint64_t bad_releases;             /* stale, duplicate or corrupt keys, rejected */
};

struct rc_dma_ring;

/* Returns 0, or -errno with a message in err. */
int  rc_dma_ring_create(const struct rc_dma_ring_params *p, struct rc_dma_ring **out,
                        char *err, size_t errlen);
void rc_dma_ring_destroy(struct rc_dma_ring *r);

uint8_t *rc_dma_ring_addr(const struct rc_dma_ring *r);  /* register this once */
size_t   rc_dma_ring_size(const struct rc_dma_ring *r);
size_t   rc_dma_ring_unit(const struct rc_dma_ring *r);
const struct rc_mem_region *rc_dma_ring_region(const struct rc_dma_ring *r);

/* Owner thread: the card has written up to monotonic position `written`. */
void rc_dma_ring_note_written(struct rc_dma_ring *r, uint64_t written);
/* Owner thread: take the next len bytes (multiple of unit) after `taken`.
 * Returns 0 and fills span/key, or -EAGAIN if fewer than len bytes are written. */
int  rc_dma_ring_take(struct rc_dma_ring *r, size_t len, struct rc_dma_span *span,
                      uint64_t *key);
/* Any thread: give a taken range back. Returns 0, or -EINVAL for a bad key
 * (counted in bad_releases, otherwise ignored). */
int  rc_dma_ring_release(struct rc_dma_ring *r, uint64_t key);
/* Owner thread: advance read over the released prefix; returns the new read. */
uint64_t rc_dma_ring_advance(struct rc_dma_ring *r);

uint64_t rc_dma_ring_read_pos(const struct rc_dma_ring *r);
uint64_t rc_dma_ring_written_pos(const struct rc_dma_ring *r);
uint64_t rc_dma_ring_taken_pos(const struct rc_dma_ring *r);
void rc_dma_ring_get_stats(const struct rc_dma_ring *r, struct rc_dma_ring_stats *s);

#endif
