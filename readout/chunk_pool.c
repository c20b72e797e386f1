/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_pool.c — fixed pool of chunk descriptors (see chunk_pool.h). */
#include "common/errbuf.h"
#include "common/tsan.h"
#include "readout/chunk_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/uatomic.h>

#define KEY_INDEX_MASK 0xffffffffull


/* Make every page of the pool resident now. The pieces (max_chunks_in_flight
 * x max_chunk_pieces x 16 B: 64 MiB at the defaults) would otherwise be
 * touched record by record as more chunks are in flight at once than ever
 * before, so the daemon's RSS grew with each subscriber that made chunks pile
 * up (issue 12 item 8) until the whole pool was in; now it is in from the
 * start and RSS stays flat. A volatile store per page: the compiler may drop
 * a memset of fresh memory (as calloc). */
static void prefault(void *mem, size_t bytes)
{
    volatile char *p = mem;
    for (size_t off = 0; off < bytes; off += 4096)
        p[off] = 0;
}

int rci_chunk_pool_init(struct rci_chunk_pool *pool, uint32_t count, uint32_t max_pieces,
                       char *err, size_t errlen)
{
    memset(pool, 0, sizeof *pool);
    if (count == 0 || count == UINT32_MAX || max_pieces == 0) {
        rci_set_err(err, errlen, "chunk pool: max_chunks_in_flight (%u) and max_chunk_pieces (%u) "
                 "must be at least 1", count, max_pieces);
        return -EINVAL;
    }
    size_t stride = RCI_CHUNK_REC_HEAD + (size_t)max_pieces * sizeof(struct rci_piece);
    stride = (stride + RCI_CHUNK_REC_ALIGN - 1) & ~(size_t)(RCI_CHUNK_REC_ALIGN - 1);
    size_t bytes = (size_t)count * stride;
    pool->recs = bytes / stride == count ? aligned_alloc(RCI_CHUNK_REC_ALIGN, bytes) : NULL;
    if (!pool->recs) {
        rci_set_err(err, errlen, "chunk pool: cannot allocate %u descriptors of %u pieces",
                 count, max_pieces);
        return -ENOMEM;
    }
    memset(pool->recs, 0, bytes);
    prefault(pool->recs, bytes);
    pool->rec_stride = stride;
    pool->count = count;
    pool->max_pieces = max_pieces;
    __cds_lfs_init(&pool->free_stack);
    /* Push in reverse so that the first records come out first (nicer to debug). */
    for (uint32_t i = count; i-- > 0;) {
        struct rci_chunk_rec *rec = rci_chunk_pool_rec(pool, i);
        rec->index = i;
        rec->chunk.pieces = rci_chunk_rec_pieces(rec);
        atomic_init(&rec->live_key, 0);
        cds_lfs_node_init(&rec->node);
        cds_lfs_push(&pool->free_stack, &rec->node);
    }
    return 0;
}

void rci_chunk_pool_fini(struct rci_chunk_pool *pool)
{
    free(pool->recs);
    pool->recs = NULL;
}

struct rci_chunk_rec *rci_chunk_pool_get(struct rci_chunk_pool *pool)
{
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
    /* The next record was last written by the thread that released it (on
     * another core): ask for its line pair now, for writing, so that the
     * next call does not wait for it. */
    if (pool->taken_free) {
        const struct rci_chunk_rec *next = caa_container_of(pool->taken_free, struct rci_chunk_rec, node);
        __builtin_prefetch(next, 1);
        __builtin_prefetch((const uint8_t *)next + RCI_CHUNK_REC_ALIGN / 2, 1);
    }
    /* Generation 0 is skipped so that no key is ever 0 (0 means "not live"). */
    if (++rec->gen == 0)
        rec->gen = 1;
    rec->chunk.key = ((uint64_t)rec->gen << 32) | rec->index;
    rec->chunk.flags = 0;
    rec->chunk.length = 0;
    rec->chunk.npieces = 0;
    rec->refused_in_sink = false;
    return rec;
}

void rci_chunk_pool_put(struct rci_chunk_pool *pool, struct rci_chunk_rec *rec)
{
    RCI_TSAN_RELEASE(&pool->free_stack);
    cds_lfs_push(&pool->free_stack, &rec->node);
}

/* liburcu's push (urcu/static/lfstack.h, _cds_lfs_push) for a chain: the
 * same compare-and-swap of the head, with the chain's last node linked to
 * the old head. Safe with the one consumer, which only pops all at once. */
void rci_chunk_pool_put_chain(struct rci_chunk_pool *pool, struct cds_lfs_node *first,
                              struct cds_lfs_node *last)
{
    RCI_TSAN_RELEASE(&pool->free_stack);
    struct cds_lfs_head *new_head = caa_container_of(first, struct cds_lfs_head, node);
    struct cds_lfs_head *head = NULL;
    for (;;) {
        struct cds_lfs_head *old_head = head;
        last->next = head ? &head->node : NULL;
        head = uatomic_cmpxchg(&pool->free_stack.head, old_head, new_head);
        if (old_head == head)
            break;
    }
}

struct rci_chunk_rec *rci_chunk_pool_claim(struct rci_chunk_pool *pool, uint64_t key)
{
    uint64_t index = key & KEY_INDEX_MASK;
    if (key == 0 || index >= pool->count)
        return NULL;
    struct rci_chunk_rec *rec = rci_chunk_pool_rec(pool, (uint32_t)index);
    uint64_t expected = key;
    /* Acquire: the decoder's writes to the chunk and its pieces happened
     * before it made the key live (release). */
    if (!atomic_compare_exchange_strong_explicit(&rec->live_key, &expected, 0,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return NULL;
    return rec;
}
