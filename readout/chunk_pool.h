/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_pool.h — internal to readout/: the fixed pool of chunk descriptors.
 *
 * Records are allocated once. Free records sit on a liburcu lock-free stack:
 * any thread pushes (release), only the decoder takes — a single consumer, so
 * the stack has no ABA problem. The decoder takes the whole stack at once
 * (one atomic exchange) into a private list and serves records from there
 * without further atomics. A record's key is its index in the low 32 bits
 * and a generation (bumped each time the decoder reuses it) in the high 32
 * bits; the record's `live_key` holds the key while the chunk is handed out
 * and 0 otherwise, so a stale or duplicate release fails its compare-and-swap
 * and is rejected without touching the record.
 *
 * Layout: each record is followed by its max_pieces piece slots in one
 * block of RCI_CHUNK_REC_ALIGN-aligned memory, so that a chunk's descriptor
 * and its first piece share the first two cache lines of the block. Each
 * record is written by the decoder's thread and read by a publisher thread
 * on another core: one pair of adjacent lines per small chunk instead of
 * two lines far apart, and both can be prefetched without first reading the
 * pieces pointer (rci_chunk_prefetch).
 */
#ifndef RCI_CHUNK_POOL_H
#define RCI_CHUNK_POOL_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>
#include "readout/chunk.h"

#define RCI_CHUNK_REC_ALIGN 128u   /* two cache lines: the pair a core's adjacent-line prefetcher fetches */

struct rci_chunk_rec {
    struct rci_chunk chunk;          /* chunk.pieces -> the piece slots after the record */
    _Atomic uint64_t live_key;      /* key while handed to the sink, else 0 */
    struct cds_lfs_node node;       /* on the free stack while free */
    uint32_t gen;                   /* decoder only */
    uint32_t index;
    bool refused_in_sink;           /* decoder only: rci_readout_refuse() during the offer */
};

/* Where a record's pieces start: after the record, 16-byte aligned (within
 * the first RCI_CHUNK_REC_ALIGN bytes, so that a one-piece chunk is in the
 * first line pair). */
#define RCI_CHUNK_REC_HEAD ((sizeof(struct rci_chunk_rec) + 15u) & ~(size_t)15u)
_Static_assert(RCI_CHUNK_REC_HEAD + sizeof(struct rci_piece) <= RCI_CHUNK_REC_ALIGN,
               "a record and its first piece must fit the first line pair");

struct rci_chunk_pool {
    uint8_t *recs;                   /* count blocks of rec_stride bytes: a record, then its pieces */
    size_t rec_stride;
    uint32_t count, max_pieces;
    struct __cds_lfs_stack free_stack;  /* released records, any thread pushes */
    struct cds_lfs_node *taken_free;    /* decoder only: grabbed from free_stack */
};

/* Record i of the pool. */
static inline struct rci_chunk_rec *rci_chunk_pool_rec(const struct rci_chunk_pool *pool, uint32_t i)
{
    return (struct rci_chunk_rec *)(void *)(pool->recs + (size_t)i * pool->rec_stride);
}

/* The record's piece slots (max_pieces of them, right after it). */
static inline struct rci_piece *rci_chunk_rec_pieces(struct rci_chunk_rec *rec)
{
    return (struct rci_piece *)(void *)((uint8_t *)rec + RCI_CHUNK_REC_HEAD);
}

/* Returns 0 or -ENOMEM / -EINVAL with a message in err. */
int  rci_chunk_pool_init(struct rci_chunk_pool *pool, uint32_t count, uint32_t max_pieces,
                        char *err, size_t errlen);
void rci_chunk_pool_fini(struct rci_chunk_pool *pool);

/* Decoder thread only: a free record with a fresh key and an empty chunk, or NULL. */
struct rci_chunk_rec *rci_chunk_pool_get(struct rci_chunk_pool *pool);
/* Any thread: put a record that is not live back on the free stack. */
void rci_chunk_pool_put(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec);
/* Any thread: put a chain of records that are not live back with one
 * compare-and-swap: first..last linked through node.next (last's is set
 * here). */
void rci_chunk_pool_put_chain(struct rci_chunk_pool *pool, struct cds_lfs_node *first,
                              struct cds_lfs_node *last);
/* Decoder thread only: the same, onto its private list (no atomics). */
static inline void rci_chunk_pool_put_local(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec)
{
    rec->node.next = pool->taken_free;
    pool->taken_free = &rec->node;
}

/* Any thread: claim the live record of key (live -> not live). Returns the
 * record, which the caller then puts back, or NULL for a stale, duplicate or
 * corrupt key. */
struct rci_chunk_rec *rci_chunk_pool_claim(struct rci_chunk_pool *pool, uint64_t key);

/* Decoder thread: publish the record's key so that a release can claim it. */
static inline void rci_chunk_rec_make_live(struct rci_chunk_rec *rec)
{
    atomic_store_explicit(&rec->live_key, rec->chunk.key, memory_order_release);
}

#endif
