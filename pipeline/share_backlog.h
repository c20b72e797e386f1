/* SPDX-License-Identifier: BSD-3-Clause */
/* share_backlog.h — one subscriber's deferred shares (slow_policy = block).
 *
 * Why: under block, a subscriber that cannot take a share now (it holds all
 * it may: sub_send_limit shares outstanding, its fair share of the
 * publisher's slots or pages, or an RMA ring full of views it has not
 * released) used to keep its lane's current chunk waiting, and with it every
 * other subscriber of that publisher thread (head-of-line). Instead the share
 * goes into this FIFO of the subscriber and the lane moves on; while the FIFO
 * is not empty the subscriber's new shares go in behind (its order is kept);
 * the publisher thread sends from the FIFO first on each turn of its loop.
 * The FIFO is bounded (readout.block_backlog entries per subscriber, storage
 * allocated once when the thread starts, no malloc per chunk): when it is full
 * the lane waits as before, the ring fills and the card is held back, which
 * is what block means. pipeline/README.md, "Publishing flow".
 *
 * A deferred share keeps what it needs to be sent and to give its key back
 * later, when the lane has long moved on: the chunk, its lane, and the handle
 * its completion settles (the ring key itself for a chunk with one share on
 * the thread, else the fan-out send handle). The chunk descriptor stays valid
 * until that key is released, which only this share's settlement can do.
 *
 * Single-threaded (the publisher thread that owns the subscriber); no
 * allocation, no atomics. Unit test: tests/unit/test_share_backlog.c. */
#ifndef RCI_PIPELINE_SHARE_BACKLOG_H
#define RCI_PIPELINE_SHARE_BACKLOG_H
#include <stdbool.h>
#include <stdint.h>

struct rci_chunk;

struct rci_deferred_share {
    const struct rci_chunk *chunk;
    void *lane;                 /* struct publish_lane (publish_internal.h) */
    uint64_t handle;            /* direct: the key; else the fan-out send handle */
    bool direct;                /* the chunk's only share on its thread: no fan-out record */
    bool buffered, gather;      /* its send mode, decided when the chunk was begun */
    uint64_t deferred_ns;       /* when it was deferred: the backlog's head is its subscriber's
                                 * oldest share for the cut-off bound (block_cut_after) */
};

struct rci_share_backlog {
    struct rci_deferred_share *e;   /* cap entries (not owned) */
    uint32_t cap, head, count;
    uint32_t high_water;            /* the most entries held at once */
};

static inline void rci_share_backlog_init(struct rci_share_backlog *b, struct rci_deferred_share *storage,
                                          uint32_t cap)
{
    b->e = storage;
    b->cap = storage ? cap : 0;
    b->head = b->count = b->high_water = 0;
}

static inline bool rci_share_backlog_empty(const struct rci_share_backlog *b) { return b->count == 0; }
static inline bool rci_share_backlog_full(const struct rci_share_backlog *b) { return b->count == b->cap; }

/* Append at the tail; false (nothing changed) when full. */
static inline bool rci_share_backlog_push(struct rci_share_backlog *b, const struct rci_deferred_share *d)
{
    if (b->count == b->cap)
        return false;
    uint32_t tail = b->head + b->count;
    if (tail >= b->cap)
        tail -= b->cap;
    b->e[tail] = *d;
    if (++b->count > b->high_water)
        b->high_water = b->count;
    return true;
}

/* The oldest entry, NULL when empty. */
static inline struct rci_deferred_share *rci_share_backlog_head(struct rci_share_backlog *b)
{
    return b->count ? &b->e[b->head] : NULL;
}

/* Remove the oldest entry (call only when not empty). */
static inline void rci_share_backlog_pop(struct rci_share_backlog *b)
{
    if (++b->head == b->cap)
        b->head = 0;
    b->count--;
}

#endif
