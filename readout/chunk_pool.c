/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_pool.c — fixed pool of chunk descriptors (see chunk_pool.h). */
#include "common/errbuf.h"
#include "common/prefault.h"
#include "common/tsan.h"
#include "readout/chunk_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_INDEX_MASK 0xffffffffull


int rci_chunk_pool_init(struct rci_chunk_pool *pool, uint32_t count, uint32_t max_pieces,
                       char *err, size_t errlen)
{
    memset(pool, 0, sizeof *pool);
    if (count == 0 || count == UINT32_MAX || max_pieces == 0) {
        rci_set_err(err, errlen, "chunk pool: max_chunks_in_flight (%u) and max_chunk_pieces (%u) "
                 "must be at least 1", count, max_pieces);
        return -EINVAL;
    }
    /* Aligned: a record's lines are the lines of the struct (chunk_pool.h). */
    pool->recs = aligned_alloc(RCI_CHUNK_REC_LINE, (size_t)count * sizeof *pool->recs);
    if (pool->recs)
        memset(pool->recs, 0, (size_t)count * sizeof *pool->recs);
    pool->piece_store = calloc((size_t)count * max_pieces, sizeof *pool->piece_store);
    if (!pool->recs || !pool->piece_store) {
        rci_set_err(err, errlen, "chunk pool: cannot allocate %u descriptors of %u pieces",
                 count, max_pieces);
        rci_chunk_pool_fini(pool);
        return -ENOMEM;
    }
    /* max_chunks_in_flight x max_chunk_pieces x 16 B: 64 MiB at the defaults. */
    rci_prefault(pool->piece_store, (size_t)count * max_pieces * sizeof *pool->piece_store);
    pool->count = count;
    pool->max_pieces = max_pieces;
    pool->batch_max = max_pieces * (uint32_t)(sizeof(struct rci_piece) / sizeof(uint32_t));
    __cds_lfs_init(&pool->free_stack);
    /* Push in reverse so that the first records come out first (nicer to debug). */
    for (uint32_t i = count; i-- > 0;) {
        struct rci_chunk_rec *rec = &pool->recs[i];
        rec->index = i;
        rec->chunk.pieces = &rec->first_piece;
        atomic_init(&rec->live_key, 0);
        cds_lfs_node_init(&rec->node);
        cds_lfs_push(&pool->free_stack, &rec->node);
    }
    return 0;
}

void rci_chunk_pool_fini(struct rci_chunk_pool *pool)
{
    free(pool->recs);
    free(pool->piece_store);
    pool->recs = NULL;
    pool->piece_store = NULL;
}

/* A batch head's piece slots, where the indices of its batch are (free
 * memory while the record is free). Read and written with memcpy: the slots
 * are struct rci_piece while the record is live. */
static unsigned char *batch_slots(struct rci_chunk_pool *pool, const struct rci_chunk_rec *head)
{
    return (unsigned char *)&pool->piece_store[(size_t)head->index * pool->max_pieces];
}

static uint32_t batch_index(struct rci_chunk_pool *pool, uint32_t pos)
{
    uint32_t index;
    memcpy(&index, batch_slots(pool, pool->batch_head) + (size_t)pos * sizeof index, sizeof index);
    return index;
}

/* The cache lines a record's chunk is written into: the record's two (a
 * one-piece chunk is written into the record alone). They were last written by
 * the releasing thread on the other core; asked for ahead, their fetches run
 * while the decoder works instead of stalling it one after the other (in a
 * profile at 64 B chunks, following the free list's links to them was 80 %
 * of this function's time). Read hints: -march=corei7 has no PREFETCHW, and
 * GCC drops a write hint it cannot encode. Written in the functions that use
 * them, not in a helper: GCC found such a helper free of side effects and
 * removed its call. */
#define PREFETCH_RECORD(rec) do {           \
        __builtin_prefetch(&(rec)->chunk);     \
        __builtin_prefetch(&(rec)->node);      \
    } while (0)

/* The next record of the batch being served: its indices first, ahead of
 * each the one RCI_CHUNK_POOL_PREFETCH further asked for; the head last,
 * when its slots are read. */
static struct rci_chunk_rec *serve_batch(struct rci_chunk_pool *pool)
{
    if (pool->batch_pos == pool->batch_n) {
        struct rci_chunk_rec *head = pool->batch_head;
        pool->batch_head = NULL;
        return head;
    }
    uint32_t ahead = pool->batch_pos + RCI_CHUNK_POOL_PREFETCH;
    if (ahead < pool->batch_n) {
        const struct rci_chunk_rec *next = &pool->recs[batch_index(pool, ahead)];
        PREFETCH_RECORD(next);
    }
    return &pool->recs[batch_index(pool, pool->batch_pos++)];
}

/* A batch head taken from the list: serve its records from now on, the
 * first RCI_CHUNK_POOL_PREFETCH of them asked for at once. */
static struct rci_chunk_rec *begin_batch(struct rci_chunk_pool *pool, struct rci_chunk_rec *head)
{
    pool->batch_head = head;
    pool->batch_pos = 0;
    pool->batch_n = head->batch_extra;
    for (uint32_t i = 0; i < pool->batch_n && i < RCI_CHUNK_POOL_PREFETCH; i++) {
        const struct rci_chunk_rec *next = &pool->recs[batch_index(pool, i)];
        PREFETCH_RECORD(next);
    }
    return serve_batch(pool);
}

static struct rci_chunk_rec *take_free(struct rci_chunk_pool *pool)
{
    if (pool->batch_head)
        return serve_batch(pool);
    if (!pool->taken_free) {
        struct cds_lfs_head *all = __cds_lfs_pop_all(&pool->free_stack);
        RCI_TSAN_ACQUIRE(&pool->free_stack);
        pool->taken_free = all ? &all->node : NULL;
        if (!pool->taken_free)
            return NULL;
    }
    struct cds_lfs_node *node = pool->taken_free;
    pool->taken_free = node->next;
    struct rci_chunk_rec *rec = caa_container_of(node, struct rci_chunk_rec, node);
    if (pool->taken_free) {
        const struct rci_chunk_rec *next = caa_container_of(pool->taken_free, struct rci_chunk_rec, node);
        PREFETCH_RECORD(next);
    }
    return rec->batch_extra ? begin_batch(pool, rec) : rec;
}

struct rci_chunk_rec *rci_chunk_pool_get(struct rci_chunk_pool *pool)
{
    struct rci_chunk_rec *rec = take_free(pool);
    if (!rec)
        return NULL;
    /* Generation 0 is skipped so that no key is ever 0 (0 means "not live"). */
    if (++rec->gen == 0)
        rec->gen = 1;
    rec->chunk.key = ((uint64_t)rec->gen << 32) | rec->index;
    rec->chunk.flags = 0;
    rec->chunk.length = 0;
    rec->chunk.npieces = 0;
    rec->chunk.pieces = &rec->first_piece;
    rec->refused_in_sink = false;
    rec->batch_extra = 0;
    return rec;
}

void rci_chunk_pool_put(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec)
{
    rec->batch_extra = 0;
    RCI_TSAN_RELEASE(&pool->free_stack);
    cds_lfs_push(&pool->free_stack, &rec->node);
}

void rci_chunk_pool_put_batch(struct rci_chunk_pool *pool, struct rci_chunk_rec *const *recs, unsigned n)
{
    while (n > 0) {
        struct rci_chunk_rec *head = recs[0];
        uint32_t extra = n - 1 < pool->batch_max ? n - 1 : pool->batch_max;
        unsigned char *slots = batch_slots(pool, head);
        for (uint32_t i = 0; i < extra; i++)
            memcpy(slots + (size_t)i * sizeof recs[1 + i]->index, &recs[1 + i]->index, sizeof recs[1 + i]->index);
        head->batch_extra = extra;
        RCI_TSAN_RELEASE(&pool->free_stack);
        cds_lfs_push(&pool->free_stack, &head->node);
        recs += 1 + extra;
        n -= 1 + extra;
    }
}

struct rci_chunk_rec *rci_chunk_pool_claim(struct rci_chunk_pool *pool, uint64_t key)
{
    uint64_t index = key & KEY_INDEX_MASK;
    if (key == 0 || index >= pool->count)
        return NULL;
    struct rci_chunk_rec *rec = &pool->recs[index];
    uint64_t expected = key;
    /* Acquire: the decoder's writes to the chunk and its pieces happened
     * before it made the key live (release). */
    if (!atomic_compare_exchange_strong_explicit(&rec->live_key, &expected, 0,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return NULL;
    return rec;
}
