/* SPDX-License-Identifier: BSD-3-Clause */
/* client_stream.c — rc_sub_create(), and the block-stream subscriber's
 * decoder (README.md, "Block stream"; net/sub_stream.h).
 *
 * A stream subscriber's ring holds the card's blocks as the card wrote them;
 * they are decoded here with the daemon's own decoder (readout/readout.h,
 * an rci_readout with card = NULL over that ring, the way the decoder's
 * tests drive it), whose sink hands each chunk to net/ as a view whose
 * pieces point into the ring; the view's last release gives the chunk's key
 * back (rci_readout_release), which gives its blocks back to the ring, which
 * net/ credits to the publisher. net/ may not include readout/
 * (tests/check-includes.sh): the two meet through struct
 * rci_sub_stream_ops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/errbuf.h"
#include "net/sub_stream.h"
#include "readout/felix_block.h"
#include "readout/readout.h"
#include "readout/readout_internal.h"
#include "ringcast/sub.h"

/* Descriptors of the decoder: chunks handed on and not yet released (views
 * held), chunks decoded and waiting, open chunks. With none free it waits
 * (the ring fills, credit stops: the publisher's slow policy applies). */
#define STREAM_RECORDS 1024u
/* Pieces of one chunk: one per block it spans; a 1 MiB chunk in 4 KiB
 * blocks has 257. Larger chunks are dropped and counted (oversize). */
#define STREAM_MAX_PIECES 260u

struct stream_dec {
    struct rc_sub *s;
    struct rci_readout *r;
    struct rci_dma_ring *ring;
    uint32_t card, block_size;
    uint32_t max_chunk_size;
    uint64_t tag_base;
    struct rci_readout_stats past;          /* figures of decoders replaced (block size changed) */
    struct iovec iov[STREAM_MAX_PIECES];
};

static void release_key(void *ctx, uint64_t key)
{
    struct stream_dec *d = ctx;
    rci_readout_release(d->r, key);
}

static int hand_on(void *ctx, const struct rci_chunk *c)
{
    struct stream_dec *d = ctx;
    for (uint32_t i = 0; i < c->npieces; i++)
        d->iov[i] = (struct iovec){ .iov_base = (void *)c->pieces[i].addr, .iov_len = c->pieces[i].len };
    rci_sub_stream_deliver(d->s, c->tag, c->flags, d->iov, c->npieces, c->length, c->key, release_key, d);
    return 0;
}

static unsigned sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct stream_dec *d = ctx;
    return rci_readout_sink_each(d->r, hand_on, d, chunks, n);
}

static void add_past(struct rci_readout_stats *a, const struct rci_readout_stats *b)
{
#define ADD(f) a->f += b->f;
    ADD(blocks) ADD(chunks) ADD(bad_header) ADD(err_seq_gap) ADD(err_malformed) ADD(err_orphan)
    ADD(err_oversize) ADD(err_bad_start) ADD(chunks_dropped_gap) ADD(chunks_incomplete)
    ADD(chunks_cut_at_stop) ADD(chunks_truncated) ADD(chunks_error) ADD(chunks_crc) ADD(chunks_busy)
    ADD(timeouts) ADD(oob) ADD(chunks_dropped_pool) ADD(chunks_dropped_ring)
#undef ADD
}

static int dec_open(void *ctx, struct rc_sub *s, struct rci_dma_ring *ring, uint32_t block_size, uint64_t tag_base,
                    bool new_publisher, char *err, size_t errlen)
{
    struct stream_dec *d = ctx;
    d->s = s;
    if (d->r && d->block_size == block_size && d->tag_base == tag_base && !new_publisher)
        return 0;   /* a reconnect: the same decoder goes on (missed blocks show as sequence gaps) */
    /* The card changed, or the daemon restarted (its e-links' block
     * sequences start anew: the old decoder would count the jump as gaps).
     * A new decoder; the ring is idle: nothing is held. */
    if (d->r) {
        struct rci_readout_stats st;
        rci_readout_get_stats(d->r, &st);
        add_past(&d->past, &st);
        rci_readout_destroy(d->r);
        d->r = NULL;
    }
    uint32_t pieces = d->max_chunk_size / block_size + 2;
    if (pieces > STREAM_MAX_PIECES)
        pieces = STREAM_MAX_PIECES;
    struct rci_card_params p = {
        .index = d->card, .tag_base = tag_base, .ring_size = rci_dma_ring_size(ring), .block_size = block_size,
        .block_format = FELIX_FMT_C0CE,   /* checks only that the size fits: blocks carry their marker */
        .rd_update_bytes = block_size, .max_chunk_size = d->max_chunk_size, .max_chunk_pieces = pieces,
        .max_chunks_in_flight = STREAM_RECORDS,
    };
    int rc = rci_readout_create(&p, ring, NULL, sink, d, &d->r, err, errlen);
    if (rc)
        return rc;
    d->ring = ring;
    d->block_size = block_size;
    d->tag_base = tag_base;
    return 0;
}

static void dec_decode(void *ctx)
{
    struct stream_dec *d = ctx;
    if (d->r)
        rci_readout_decode(d->r);
}

static void dec_disconnect(void *ctx)
{
    struct stream_dec *d = ctx;
    if (!d->r)
        return;
    rci_readout_decode(d->r);
    rci_readout_cut_open_chunks(d->r);   /* their ends will not come: the blocks go back */
    rci_readout_decode(d->r);            /* advances the ring over them */
}

/* The publisher dropped blocks for us before ring position pos. */
static void dec_gap(void *ctx, uint64_t pos)
{
    struct stream_dec *d = ctx;
    if (d->r)
        rci_readout_mark_gap(d->r, pos);
}

/* The ring moved on while idle (net/ realigned it for the next connection):
 * the decoder's position follows; one made later starts there anyway. */
static void dec_moved(void *ctx)
{
    struct stream_dec *d = ctx;
    if (d->r)
        rci_readout_ring_moved(d->r);
}

static void dec_stats(void *ctx, struct rc_sub_stats *st)
{
    struct stream_dec *d = ctx;
    struct rci_readout_stats r = d->past;
    if (d->r) {
        struct rci_readout_stats now;
        rci_readout_get_stats(d->r, &now);
        add_past(&r, &now);
    }
    st->stream_blocks = r.blocks;
    st->stream_bad_header = r.bad_header;
    st->stream_seq_gaps = r.err_seq_gap;
    st->stream_malformed = r.err_malformed;
    st->stream_orphans = r.err_orphan;
    st->stream_oversize = r.err_oversize;
    st->stream_bad_start = r.err_bad_start;
    st->stream_chunks_dropped_gap = r.chunks_dropped_gap + r.chunks_dropped_pool + r.chunks_dropped_ring;
    st->stream_chunks_incomplete = r.chunks_incomplete;
    st->stream_chunks_cut = r.chunks_cut_at_stop;
    st->stream_chunks_truncated = r.chunks_truncated;
    st->stream_chunks_error = r.chunks_error;
    st->stream_chunks_crc = r.chunks_crc;
    st->stream_chunks_busy = r.chunks_busy;
    st->stream_timeouts = r.timeouts;
    st->stream_oob = r.oob;
}

static void dec_destroy(void *ctx)
{
    struct stream_dec *d = ctx;
    rci_readout_destroy(d->r);
    free(d);
}

int rc_sub_create(const struct rc_sub_params *params, struct rc_sub **out, char *err, size_t errlen)
{
    if (params->delivery != RC_SUB_DELIVERY_STREAM)
        return rci_sub_create(params, NULL, out, err, errlen);
    struct stream_dec *d = calloc(1, sizeof *d);
    if (!d) {
        *out = NULL;
        rci_set_err(err, errlen, "rc_sub_create(%s:%u): out of memory", params->host, (unsigned)params->port);
        return -ENOMEM;
    }
    d->card = params->stream_card;
    d->max_chunk_size = params->max_chunk_size;
    struct rci_sub_stream_ops ops = { .open = dec_open, .decode = dec_decode, .disconnect = dec_disconnect,
                                      .moved = dec_moved, .stats = dec_stats, .destroy = dec_destroy,
                                      .gap = dec_gap, .ctx = d };
    return rci_sub_create(params, &ops, out, err, errlen);
}
