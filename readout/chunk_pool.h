/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_pool.h — internal to readout/: the fixed pool of chunk descriptors.
 *
 * Records are allocated once. Free records sit on a liburcu lock-free stack:
 * any thread pushes (release), only the decoder takes — a single consumer, so
 * the stack has no ABA problem. The decoder takes the whole stack at once
 * (one atomic exchange) into a private list and serves records from there
 * without further atomics. A burst of records released together goes on the
 * stack as one node, a batch: its first record carries the indices of the
 * others in its own piece slots (free while the record is), so a release
 * burst costs one push, and the decoder knows the next records' addresses
 * ahead and fetches several from the releasing core at once instead of
 * following a chain of links, one cache miss after the other. A record's key is its index in the low 32 bits
 * and a generation (bumped each time the decoder reuses it) in the high 32
 * bits; the record's `live_key` holds the key while the chunk is handed out
 * and 0 otherwise, so a stale or duplicate release fails its compare-and-swap
 * and is rejected without touching the record.
 */
#ifndef RCI_CHUNK_POOL_H
#define RCI_CHUNK_POOL_H
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>
#include "readout/chunk.h"

/* Two cache lines. The first holds all a consumer reads of a one-piece
 * chunk (the descriptor and its piece): a consumer that prefetches the
 * descriptor it dequeues has the piece too, instead of loading a piece slot
 * elsewhere only once the descriptor has told it where (at 64 B chunks that
 * dependent load was the publisher thread's largest stall). The second holds
 * what the pool and a release use. A chunk of several pieces keeps them all
 * in the record's piece slots. */
#define RCI_CHUNK_REC_LINE 64u
struct rci_chunk_rec {
    struct rci_chunk chunk;          /* chunk.pieces -> first_piece, or this record's piece slots */
    struct rci_piece first_piece;    /* the piece of a one-piece chunk */
    alignas(RCI_CHUNK_REC_LINE) struct cds_lfs_node node;   /* on the free stack while free */
    _Atomic uint64_t live_key;      /* key while handed to the sink, else 0 */
    uint32_t gen;                   /* decoder only */
    uint32_t index;
    uint32_t batch_extra;           /* on the free stack: records of its batch in its piece slots */
    bool refused_in_sink;           /* decoder only: rci_readout_refuse() during the offer */
};
_Static_assert(offsetof(struct rci_chunk_rec, node) == RCI_CHUNK_REC_LINE,
               "a one-piece chunk's descriptor and piece fill the record's first line");
_Static_assert(sizeof(struct rci_chunk_rec) == 2 * RCI_CHUNK_REC_LINE, "a record is two lines");

struct rci_chunk_pool {
    struct rci_chunk_rec *recs;
    struct rci_piece *piece_store;   /* count * max_pieces */
    uint32_t count, max_pieces;
    struct __cds_lfs_stack free_stack;  /* released records, any thread pushes */
    uint32_t batch_max;                 /* indices a batch head's piece slots hold */
    /* Decoder only: */
    struct cds_lfs_node *taken_free;    /* batch heads grabbed from free_stack, and local puts */
    struct rci_chunk_rec *batch_head;   /* the batch being served (last: after its indices) */
    uint32_t batch_pos, batch_n;        /* its next index, and how many it holds */
};

/* How far ahead of the record it serves the decoder fetches a batch's records. */
#define RCI_CHUNK_POOL_PREFETCH 8u

/* Returns 0 or -ENOMEM / -EINVAL with a message in err. */
int  rci_chunk_pool_init(struct rci_chunk_pool *pool, uint32_t count, uint32_t max_pieces,
                        char *err, size_t errlen);
void rci_chunk_pool_fini(struct rci_chunk_pool *pool);

/* Decoder thread only: a free record with a fresh key and an empty chunk, or NULL. */
struct rci_chunk_rec *rci_chunk_pool_get(struct rci_chunk_pool *pool);
/* Any thread: put a record that is not live back on the free stack. */
void rci_chunk_pool_put(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec);
/* Any thread: the same for n records, one push per batch_max + 1 of them. */
void rci_chunk_pool_put_batch(struct rci_chunk_pool *pool, struct rci_chunk_rec *const *recs, unsigned n);
/* Decoder thread only: the same, onto its private list (no atomics). */
static inline void rci_chunk_pool_put_local(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec)
{
    rec->batch_extra = 0;
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
