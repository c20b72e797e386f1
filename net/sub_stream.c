/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_stream.c — the block-stream subscriber's ring and the checks of every
 * span (sub_stream.h). */
#include "net/sub_stream.h"
#include "common/intmath.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/rma_ring.h"
#include "net/sub_rma.h"


/* The least common multiple of every block size (1 KiB steps up to 64 KiB)
 * that divides size: the publisher refuses the others for this ring. It
 * divides size, so ring offsets that are its multiples repeat every lap.
 * 64 KiB for a power-of-two ring, 192 KiB for 3 MiB (3 KiB, 48 KiB ...). */
static uint64_t any_block_align(uint64_t size)
{
    uint64_t a = RCI_SUB_STREAM_UNIT;
    for (uint64_t bs = RCI_SUB_STREAM_UNIT; bs <= RCI_SUB_STREAM_MAX_BLOCK; bs += RCI_SUB_STREAM_UNIT)
        if (size % bs == 0)
            a = a / rci_gcd_u64(a, bs) * bs;
    return a;
}

int rci_sub_stream_create(struct rci_sub_stream *r, uint64_t size, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int rc = rci_sub_ring_create("stream_ring_size", size, RCI_SUB_STREAM_UNIT, &r->ring, err, errlen);
    if (rc)
        return rc;
    r->mem = rci_dma_ring_addr(r->ring);
    r->size = size;
    r->align = any_block_align(size);
    return 0;
}

void rci_sub_stream_destroy(struct rci_sub_stream *r)
{
    rci_fabric_mr_close(&r->mr);
    rci_dma_ring_destroy(r->ring);
    memset(r, 0, sizeof *r);
}

bool rci_sub_stream_idle(const struct rci_sub_stream *r)
{
    return rci_dma_ring_read_pos(r->ring) == rci_dma_ring_written_pos(r->ring);
}

int64_t rci_sub_stream_realign(struct rci_sub_stream *r)
{
    if (!rci_sub_stream_idle(r))
        return -EBUSY;
    uint64_t read = rci_dma_ring_read_pos(r->ring);
    uint64_t skip = (r->align - read % r->align) % r->align;
    if (skip == 0)
        return 0;
    /* read, taken and written are equal (idle) and multiples of the ring's
     * unit, skip is one too and below align <= size: each step holds. */
    struct rci_dma_span span;
    uint64_t key;
    int rc = rci_dma_ring_note_written(r->ring, read + skip);
    if (rc == 0)
        rc = rci_dma_ring_take(r->ring, skip, &span, &key);
    if (rc == 0)
        rc = rci_dma_ring_release(r->ring, key);
    if (rc)
        return rc;
    rci_dma_ring_advance(r->ring);
    return (int64_t)skip;
}

void rci_sub_stream_start(struct rci_sub_stream *r)
{
    uint64_t read = rci_dma_ring_read_pos(r->ring);
    r->base = read - read % r->size;
    r->start = r->expect = r->credit_sent = read % r->size;
    r->nheld = 0;
    r->on = false;
}

int rci_sub_stream_connect(struct rci_sub_stream *r, struct rci_fabric *f, struct fid_ep *ep,
                           struct rci_wire_hello_rma *ring, uint64_t *start_offset, char *err, size_t errlen)
{
    rci_sub_stream_start(r);
    int rc = rci_sub_ring_announce(f, ep, r->mem, r->size, &r->mr, ring, err, errlen);
    if (rc)
        return rc;
    *start_offset = r->start;
    return 0;
}

void rci_sub_stream_disconnect(struct rci_sub_stream *r)
{
    rci_fabric_mr_close(&r->mr);
    r->on = false;
    r->nheld = 0;
}

static int bad(struct rci_sub_stream *r, const char *fmt, uint64_t a, uint64_t b)
{
    char what[120];
    snprintf(what, sizeof what, fmt, a, b);
    rci_set_err(r->why, sizeof r->why, "bad stream span: %s", what);
    return -EPROTO;
}

/* Whole blocks, inside the ring, not past the space we gave back. */
static int check_span(struct rci_sub_stream *r, uint64_t off, uint32_t len)
{
    if (len == 0 || len % r->block_size || off % r->block_size)
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " not whole blocks", len, off);
    if (off >= r->size || len > r->size - off)
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " outside the ring", len, off);
    return 0;
}

/* Connection position of a span at ring offset off that comes after expect. */
static uint64_t position_of(const struct rci_sub_stream *r, uint64_t off)
{
    return r->expect + (off + r->size - r->expect % r->size) % r->size;
}

/* Does [pos, pos + len) (connection positions) overlap a span held out of
 * turn? Such a span writes ring space twice: taken later, the held one
 * would move the written position over space no write filled in its lap. */
static bool overlaps_held(const struct rci_sub_stream *r, uint64_t pos, uint32_t len)
{
    for (uint32_t i = 0; i < r->nheld; i++) {
        uint64_t hpos = position_of(r, r->held[i].off);
        if (hpos < pos + len && pos < hpos + r->held[i].len)
            return true;
    }
    return false;
}

static int take(struct rci_sub_stream *r, uint32_t len, bool gap)
{
    if (r->expect + len > r->credit_sent + r->size)
        return bad(r, "%" PRIu64 " B at position %" PRIu64 " past the credited space", len, r->expect);
    if (gap) {   /* before the span's blocks are noted written: the decoder has not taken them */
        r->gaps++;
        if (r->on_gap)
            r->on_gap(r->gap_ctx, r->base + r->expect);
    }
    r->expect += len;
    rci_dma_ring_note_written(r->ring, r->base + r->expect);
    return 0;
}

int rci_sub_stream_arrived(struct rci_sub_stream *r, uint64_t imm, uint64_t *spans, uint64_t *bytes)
{
    uint64_t off = rci_rma_imm_offset(imm);
    uint32_t len = rci_rma_imm_len(imm) & ~RCI_RMA_IMM_STREAM_GAP;
    bool gap = rci_rma_imm_len(imm) & RCI_RMA_IMM_STREAM_GAP;
    if (!r->on)
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " written before WELCOME granted the stream", len, off);
    if (check_span(r, off, len))
        return -EPROTO;
    if (off != r->expect % r->size) {   /* before its turn */
        uint64_t pos = position_of(r, off);
        if (pos + len > r->credit_sent + r->size)
            return bad(r, "%" PRIu64 " B at offset %" PRIu64 " out of turn, past the credited space", len, off);
        if (r->nheld == RCI_SUB_STREAM_HOLD)
            return bad(r, "more than %" PRIu64 " spans out of turn (at offset %" PRIu64 ")",
                       RCI_SUB_STREAM_HOLD, off);
        for (uint32_t i = 0; i < r->nheld; i++)
            if (r->held[i].off == off)
                return bad(r, "%" PRIu64 " B at offset %" PRIu64 " written twice", len, off);
        if (overlaps_held(r, pos, len))
            return bad(r, "%" PRIu64 " B at offset %" PRIu64 " overlaps a span held out of turn", len, off);
        r->held[r->nheld++] = (struct rci_sub_stream_held){ off, len, gap };
        return 0;
    }
    if (overlaps_held(r, r->expect, len))
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " overlaps a span held out of turn", len, off);
    if (take(r, len, gap))
        return -EPROTO;
    (*spans)++;
    *bytes += len;
    for (uint32_t i = 0; i < r->nheld;) {   /* held spans whose turn came */
        if (r->held[i].off != r->expect % r->size) {
            i++;
            continue;
        }
        uint32_t hlen = r->held[i].len;
        bool hgap = r->held[i].gap;
        r->held[i] = r->held[--r->nheld];
        if (take(r, hlen, hgap))
            return -EPROTO;
        (*spans)++;
        *bytes += hlen;
        i = 0;
    }
    return 1;
}

uint64_t rci_sub_stream_credit_due(struct rci_sub_stream *r, bool force)
{
    uint64_t read = rci_dma_ring_read_pos(r->ring) - r->base;
    if (read <= r->credit_sent)
        return 0;
    /* A quarter of the ring at a time, but everything once the publisher
     * is (nearly) out of room: decoded blocks then wait for CREDIT, and
     * chunks left open in the ring are copied out or dropped by the
     * decoder only when it sees the ring completely full. */
    bool publisher_short = r->credit_sent + r->size - r->expect < r->size / 4;
    if (!force && !publisher_short && read - r->credit_sent < r->size / 4)
        return 0;
    return read;
}
