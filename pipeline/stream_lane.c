/* SPDX-License-Identifier: BSD-3-Clause */
/* stream_lane.c — block streams through the pipeline (pipeline/README.md,
 * "Block stream"): a subscriber of a whole card gets the card's ring blocks
 * as they are, in spans of ring-adjacent blocks, written into its own ring
 * (net/publisher.h, rci_publisher_stream_write), and decodes them itself.
 *
 * Readout thread (the block tap, readout.h): every block taken from the
 * ring goes, as its index, into the stream lane of each publisher thread
 * that has stream subscribers of the card; card->block_threads[b] counts the
 * threads holding it. With none the block goes back at once.
 *
 * Publisher thread: forms a span of the blocks queued (adjacent in the ring,
 * at most [fabric] stream_span bytes and what every subscriber may take in
 * one write, never across the ring's end; sent as soon as no more blocks
 * wait: latency stays low) and writes it to each of its stream subscribers
 * of the card. lane->pending[b] is 1 while the span is dispatched plus one
 * per write outstanding; at 0 the thread is done with the block, and the
 * last thread gives it back (rci_readout_release_block). Every block
 * reference comes back exactly once: each queued index is either written
 * and completed (ok, error, or the subscriber gone: the publisher releases
 * every key exactly once), dropped for a subscriber, or given back unsent.
 *
 * Hot path: no malloc, no locks; one queue push per block and thread, one
 * atomic per block and thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "pipeline/publish_internal.h"
#include "readout/readout.h"

#define STREAM_SPAN_DEFAULT (256u * 1024u)

/* ---- the card's side: the block tap (readout thread) --------------------- */

static void block_done(struct rci_publish_card *c, uint32_t block)
{
    if (atomic_fetch_sub_explicit(&c->block_threads[block], 1, memory_order_acq_rel) == 1)
        rci_readout_release_block(c->readout, block);
}

static bool tap_room(void *ctx)
{
    struct rci_publish_card *c = ctx;
    for (unsigned t = 0; t < c->pb->nthreads; t++) {
        struct stream_lane *l = &c->streams[t];
        if (atomic_load_explicit(&l->subscribers, memory_order_acquire) &&
            rci_chunk_queue_count(l->queue) >= c->nblocks)
            return false;
    }
    return true;
}

static void tap_block(void *ctx, uint32_t block, uint64_t ring_offset, uint32_t len)
{
    struct rci_publish_card *c = ctx;
    (void)ring_offset;
    (void)len;
    uint32_t threads = 0;
    for (unsigned t = 0; t < c->pb->nthreads; t++)
        if (atomic_load_explicit(&c->streams[t].subscribers, memory_order_acquire))
            threads |= 1u << t;
    rci_counter_add(&c->stream_blocks, 1);
    if (!threads) {
        rci_counter_add(&c->stream_blocks_unwatched, 1);
        rci_readout_release_block(c->readout, block);
        return;
    }
    /* Set before any thread can see the block. */
    atomic_store_explicit(&c->block_threads[block], (uint8_t)__builtin_popcount(threads), memory_order_relaxed);
    for (uint32_t m = threads; m; m &= m - 1) {
        unsigned t = (unsigned)__builtin_ctz(m);
        if (rci_chunk_queue_enqueue(c->streams[t].queue, &block, 1) != 1) {
            /* Never: a queue holds as many entries as the ring has blocks. */
            rci_counter_add(&c->dispatch_errors, 1);
            block_done(c, block);
        }
    }
    for (uint32_t m = threads; m; m &= m - 1)
        rci_publish_thread_wake(&c->pb->threads[__builtin_ctz(m)]);
}

int rci_stream_set_tap(struct rci_publish_card *c)
{
    return rci_readout_set_block_tap(c->readout, tap_room, tap_block, c);
}

int rci_stream_card_init(struct rci_publish_card *c, struct rci_dma_ring *ring, const struct rci_card_params *cp,
                         char *err, size_t errlen)
{
    c->ring_base = rci_dma_ring_addr(ring);
    c->block_size = cp->block_size;
    c->nblocks = (uint32_t)(rci_dma_ring_size(ring) / cp->block_size);
    c->tag_base = cp->tag_base;
    c->block_threads = calloc(c->nblocks, sizeof *c->block_threads);
    if (!c->block_threads) {
        rci_set_err(err, errlen, "card.%u stream: out of memory", cp->index);
        return -ENOMEM;
    }
    for (unsigned t = 0; t < c->pb->nthreads; t++) {
        struct stream_lane *l = &c->streams[t];
        char name[RCI_CHUNK_QUEUE_NAME_MAX + 1];
        snprintf(name, sizeof name, "rc-card%u-stream%u", cp->index, t);
        struct rci_chunk_queue_params qp = { .name = name, .capacity = c->nblocks, .elem_size = sizeof(uint32_t) };
        int rc = rci_chunk_queue_create(&qp, &l->queue, err, errlen);
        if (rc)
            return rc;
        l->pending = calloc(c->nblocks, sizeof *l->pending);
        if (!l->pending) {
            rci_set_err(err, errlen, "card.%u stream: out of memory", cp->index);
            return -ENOMEM;
        }
    }
    /* Each publisher streams this card (net/stream_write.c checks HELLOs). */
    for (unsigned t = 0; t < c->pb->nthreads; t++) {
        struct publish_thread *th = &c->pb->threads[t];
        struct rci_pub_stream_card cards[RCI_PUB_MAX_STREAM_CARDS];
        unsigned n = 0;
        for (unsigned i = 0; i < c->pb->ncards && n < RCI_PUB_MAX_STREAM_CARDS; i++)
            if (&c->pb->cards[i] != c)
                cards[n++] = (struct rci_pub_stream_card){ c->pb->cards[i].index, c->pb->cards[i].block_size,
                                                          c->pb->cards[i].tag_base };
        cards[n++] = (struct rci_pub_stream_card){ c->index, c->block_size, c->tag_base };
        int rc = rci_publisher_set_stream_cards(th->pub, cards, n);
        if (rc) {
            rci_set_err(err, errlen, "card.%u stream: too many cards", cp->index);
            return rc;
        }
    }
    return 0;
}

void rci_stream_card_fini(struct rci_publish_card *c)
{
    for (unsigned t = 0; t < RCI_MAX_PUBLISHER_THREADS; t++) {
        rci_chunk_queue_destroy(c->streams[t].queue);
        c->streams[t].queue = NULL;
        free(c->streams[t].pending);
        c->streams[t].pending = NULL;
    }
    free(c->block_threads);
    c->block_threads = NULL;
}

/* ---- subscribers (publisher thread) --------------------------------------- */

static struct stream_sub *stream_sub_of(struct publish_thread *th, rci_peer_id peer)
{
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->ssubs[i].in_use && th->ssubs[i].peer == peer)
            return &th->ssubs[i];
    return NULL;
}

bool rci_stream_join(struct publish_thread *th, rci_peer_id peer)
{
    uint32_t index;
    if (!rci_publisher_peer_stream(th->pub, peer, &index))
        return false;
    struct rci_publish_card *c = NULL;
    for (unsigned i = 0; i < th->pb->ncards; i++)
        if (th->pb->cards[i].index == index)
            c = &th->pb->cards[i];
    for (uint32_t i = 0; c && i < th->nsubs_max; i++) {
        struct stream_sub *s = &th->ssubs[i];
        if (s->in_use)
            continue;
        *s = (struct stream_sub){ .in_use = true, .peer = peer, .card = c };
        snprintf(s->name, sizeof s->name, "%s", rci_publisher_peer_name(th->pub, peer));
        th->nssubs++;
        atomic_fetch_add_explicit(&c->streams[th->index].subscribers, 1, memory_order_release);
        pl_info(th->pb, "subscriber %s takes the block stream of card %u (%u B blocks)", s->name, c->index,
                c->block_size);
        return true;
    }
    pl_warn(th->pb, "subscriber %s: no stream record for card %u", rci_publisher_peer_name(th->pub, peer), index);
    rci_publisher_close_peer(th->pub, peer);
    return true;
}

bool rci_stream_leave(struct publish_thread *th, rci_peer_id peer)
{
    struct stream_sub *s = stream_sub_of(th, peer);
    if (!s)
        return false;
    atomic_fetch_sub_explicit(&s->card->streams[th->index].subscribers, 1, memory_order_release);
    pl_info(th->pb, "stream subscriber %s of card %u left: %" PRIu64 " spans, %" PRIu64 " blocks, %" PRIu64
            " B written, %" PRIu64 " blocks dropped, %" PRIu64 " spans failed", s->name, s->card->index,
            s->spans, s->blocks, s->bytes, s->blocks_dropped, s->spans_failed);
    s->in_use = false;
    th->nssubs--;
    return true;
}

/* ---- spans (publisher thread) ---------------------------------------------- */

static void lane_block_release(struct rci_publish_card *c, struct stream_lane *l, uint32_t block)
{
    if (--l->pending[block] == 0)
        block_done(c, block);
}

void rci_stream_token_done(struct publish_thread *th, struct send_token *tok, int status)
{
    struct rci_publish_card *c = tok->stream_card;
    struct stream_lane *l = &c->streams[th->index];
    struct stream_sub *s = NULL;
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->ssubs[i].in_use && th->ssubs[i].peer == tok->handle)
            s = &th->ssubs[i];
    if (s) {
        s->outstanding--;
        if (status == 0) {
            s->spans++;
            s->blocks += tok->nblocks;
            s->bytes += (uint64_t)tok->nblocks * c->block_size;
        } else {
            s->spans_failed++;
        }
    }
    if (status != 0)
        rci_counter_add(&th->stream_spans_failed, 1);
    for (uint32_t b = 0; b < tok->nblocks; b++)
        lane_block_release(c, l, tok->first_block + b);
}

/* The next queued block, or false. */
static bool peek_block(struct stream_lane *l, uint32_t *block)
{
    if (l->hold_pos == l->hold_len) {
        l->hold_pos = 0;
        l->hold_len = rci_chunk_queue_dequeue(l->queue, l->hold, STREAM_HOLD);
        if (l->hold_len == 0)
            return false;
    }
    *block = l->hold[l->hold_pos];
    return true;
}

/* Most blocks of one span: stream_span, and what each subscriber of the
 * card may take in one write when its ring is empty (an eighth of it; shm:
 * its inject size). */
static uint32_t span_limit(struct publish_thread *th, struct rci_publish_card *c)
{
    uint64_t bytes = th->pb->params.fabric.stream_span ? th->pb->params.fabric.stream_span : STREAM_SPAN_DEFAULT;
    uint32_t blocks = (uint32_t)(bytes / c->block_size);
    return blocks ? blocks : 1;
}

/* Form the next span out of the queued blocks: ring-adjacent, never across
 * the ring's end. */
static bool form_span(struct publish_thread *th, struct rci_publish_card *c, struct stream_lane *l)
{
    uint32_t first, next, limit = span_limit(th, c);
    if (!peek_block(l, &first))
        return false;
    l->hold_pos++;
    uint32_t n = 1;
    while (n < limit && first + n < c->nblocks && peek_block(l, &next) && next == first + n) {
        l->hold_pos++;
        n++;
    }
    for (uint32_t b = 0; b < n; b++)
        l->pending[first + b] = 1;   /* the dispatcher's own count */
    l->span_first = first;
    l->span_n = n;
    l->span_next = 0;
    l->span_part = 0;
    return true;
}

static uint32_t take_token(struct publish_thread *th)
{
    uint32_t k = th->free_token;
    if (k != UINT32_MAX)
        th->free_token = th->tokens[k].next_free;
    return k;
}

static void give_token(struct publish_thread *th, uint32_t k)
{
    th->tokens[k].next_free = th->free_token;
    th->free_token = k;
}

/* Write blocks [first, first + n) of the span to s: 0 posted, -EAGAIN wait
 * (retry later), other: not written to it. */
static int write_part(struct publish_thread *th, struct rci_publish_card *c, struct stream_sub *s,
                      uint32_t first, uint32_t n)
{
    uint32_t k = take_token(th);
    if (k == UINT32_MAX)
        return -EAGAIN;
    struct iovec iov = { .iov_base = c->ring_base + (size_t)first * c->block_size,
                         .iov_len = (size_t)n * c->block_size };
    int rc = rci_publisher_stream_write(th->pub, s->peer, &iov, 1, s->gap, k);
    if (rc) {
        give_token(th, k);
        return rc == -ENOBUFS ? -EAGAIN : rc;
    }
    s->gap = false;
    struct send_token *tok = &th->tokens[k];
    tok->stream = true;
    tok->stream_card = c;
    tok->handle = s->peer;
    tok->first_block = first;
    tok->nblocks = n;
    tok->lane = NULL;
    s->outstanding++;
    for (uint32_t b = 0; b < n; b++)
        c->streams[th->index].pending[first + b]++;
    rci_counter_add(&th->stream_spans, 1);
    rci_counter_add(&th->stream_bytes, iov.iov_len);
    return 0;
}

/* The span to one subscriber: as much as its ring takes in one write now,
 * the rest in further writes. 0 done, -EAGAIN wait. */
static int span_to(struct publish_thread *th, struct rci_publish_card *c, struct stream_lane *l,
                   struct stream_sub *s, uint32_t *done_blocks)
{
    while (*done_blocks < l->span_n) {
        uint32_t left = l->span_n - *done_blocks;
        uint64_t room = rci_publisher_stream_room(th->pub, s->peer) / c->block_size;
        if (room == 0) {
            if (th->live.slow_policy != RCI_SLOW_DROP)
                return -EAGAIN;   /* block: the lane, then the readout, wait for it */
            s->blocks_dropped += left;
            rci_counter_add(&th->stream_blocks_dropped, left);
            s->gap = true;   /* its decoder must not join chunks across them */
            return 0;
        }
        uint32_t n = room < left ? (uint32_t)room : left;
        int rc = write_part(th, c, s, l->span_first + *done_blocks, n);
        if (rc == -EAGAIN)
            return rc;
        if (rc) {   /* gone, or refused: it loses these blocks (counted) */
            s->spans_failed++;
            rci_counter_add(&th->stream_spans_failed, 1);
            s->gap = true;
            return 0;
        }
        *done_blocks += n;
    }
    return 0;
}

static void finish_span(struct rci_publish_card *c, struct stream_lane *l)
{
    for (uint32_t b = 0; b < l->span_n; b++)
        lane_block_release(c, l, l->span_first + b);
    l->span_n = 0;
}

unsigned rci_stream_pump(struct publish_thread *th, struct rci_publish_card *c)
{
    struct stream_lane *l = &c->streams[th->index];
    unsigned work = 0;
    for (;;) {
        if (l->span_n == 0) {
            if (!form_span(th, c, l))
                return work;
            work++;
        }
        for (; l->span_next < th->nsubs_max; l->span_next++, l->span_part = 0) {
            struct stream_sub *s = &th->ssubs[l->span_next];
            if (!s->in_use || s->card != c)
                continue;
            if (span_to(th, c, l, s, &l->span_part) == -EAGAIN)
                return work;
        }
        finish_span(c, l);
    }
}

bool rci_stream_holds(const struct publish_thread *th)
{
    const struct rci_pipeline *pb = th->pb;
    for (unsigned i = 0; i < pb->ncards; i++) {
        const struct stream_lane *l = &pb->cards[i].streams[th->index];
        if (l->queue && (l->span_n || l->hold_pos < l->hold_len || rci_chunk_queue_count(l->queue) > 0))
            return true;
    }
    return false;
}

void rci_stream_abandon(struct publish_thread *th)
{
    for (unsigned i = 0; i < th->pb->ncards; i++) {
        struct rci_publish_card *c = &th->pb->cards[i];
        struct stream_lane *l = &c->streams[th->index];
        if (!l->queue)
            continue;
        if (l->span_n)
            finish_span(c, l);
        uint32_t b;
        while (peek_block(l, &b)) {
            l->hold_pos++;
            block_done(c, b);
        }
    }
}

void rci_stream_write_json(const struct rci_pipeline *pb, FILE *f)
{
    uint64_t spans = 0, bytes = 0, dropped = 0, failed = 0, tapped = 0, unwatched = 0;
    unsigned subs = 0;
    for (unsigned t = 0; t < pb->nthreads; t++) {
        const struct publish_thread *th = &pb->threads[t];
        spans += rci_counter_get(&th->stream_spans);
        bytes += rci_counter_get(&th->stream_bytes);
        dropped += rci_counter_get(&th->stream_blocks_dropped);
        failed += rci_counter_get(&th->stream_spans_failed);
        for (unsigned i = 0; i < pb->ncards; i++)
            subs += atomic_load_explicit(&pb->cards[i].streams[t].subscribers, memory_order_relaxed);
    }
    for (unsigned i = 0; i < pb->ncards; i++) {
        tapped += rci_counter_get(&pb->cards[i].stream_blocks);
        unwatched += rci_counter_get(&pb->cards[i].stream_blocks_unwatched);
    }
    fprintf(f, "\"stream\":{\"subscribers\":%u,\"blocks_tapped\":%" PRIu64 ",\"blocks_unwatched\":%" PRIu64
            ",\"spans\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"blocks_dropped\":%" PRIu64 ",\"spans_failed\":%" PRIu64 "}",
            subs, tapped, unwatched, spans, bytes, dropped, failed);
}
