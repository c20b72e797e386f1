/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_rma.c — the subscriber's RMA receive ring and the checks of every
 * record (sub_rma.h; placement rule: rma_ring.h). */
#include "net/sub_rma.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/rma_ring.h"

#define UNIT 8u   /* records are 8-byte aligned: the ring's take/release unit */

int rci_sub_ring_create(const char *what, uint64_t size, uint32_t unit, struct rci_dma_ring **ring,
                        char *err, size_t errlen)
{
    if (size % unit || size < RCI_WIRE_RMA_MIN_RING || size > RCI_WIRE_RMA_MAX_RING) {
        rci_set_err(err, errlen, "%s %" PRIu64 ": a multiple of %u in [%u, %llu] bytes", what, size, unit,
                    RCI_WIRE_RMA_MIN_RING, (unsigned long long)RCI_WIRE_RMA_MAX_RING);
        return -EINVAL;
    }
    struct rci_dma_ring_params p = { .size = size, .unit_size = unit, .backend = RCI_MEM_ANON,
                                     .lock_memory = false };
    return rci_dma_ring_create(&p, ring, err, errlen);
}

int rci_sub_rma_create(struct rci_sub_rma *r, uint64_t size, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int rc = rci_sub_ring_create("rma_ring_size", size, UNIT, &r->ring, err, errlen);
    if (rc)
        return rc;
    r->mem = rci_dma_ring_addr(r->ring);
    r->size = size;
    return 0;
}

void rci_sub_rma_destroy(struct rci_sub_rma *r)
{
    rci_fabric_mr_close(&r->mr);
    rci_dma_ring_destroy(r->ring);
    memset(r, 0, sizeof *r);
}

/* Give back at once a range nobody hands on (a skipped ring end). */
static void pass_over(struct rci_sub_rma *r, uint64_t len)
{
    struct rci_dma_span span;
    uint64_t key;
    if (len == 0)
        return;
    rci_dma_ring_note_written(r->ring, rci_dma_ring_taken_pos(r->ring) + len);
    if (rci_dma_ring_take(r->ring, len, &span, &key) == 0)
        rci_dma_ring_release(r->ring, key);
    rci_dma_ring_advance(r->ring);
}

void rci_sub_rma_start(struct rci_sub_rma *r)
{
    uint64_t read = rci_dma_ring_advance(r->ring);
    /* The publisher numbers positions from 0 per connection; ours go on.
     * A connection starts at a multiple of the ring size, so offsets agree. */
    if (read % r->size)
        pass_over(r, r->size - read % r->size);
    r->base = rci_dma_ring_advance(r->ring);
    r->expect = 0;
    r->credit_sent = 0;
    r->nheld = 0;
    r->on = false;
}

int rci_sub_rma_connect(struct rci_sub_rma *r, struct rci_fabric *f, struct fid_ep *ep,
                        struct rci_wire_hello_rma *announce, char *err, size_t errlen)
{
    rci_sub_rma_start(r);
    return rci_sub_ring_announce(f, ep, r->mem, r->size, &r->mr, announce, err, errlen);
}

int rci_sub_ring_announce(struct rci_fabric *f, struct fid_ep *ep, void *mem, uint64_t size,
                          struct rci_fabric_mr *mr, struct rci_wire_hello_rma *announce, char *err, size_t errlen)
{
    int rc = rci_fabric_mr_reg(f, mem, size, FI_REMOTE_WRITE, ep, mr, err, errlen);
    if (rc)
        return rc;
    *announce = (struct rci_wire_hello_rma){
        .base = f->mr_virt_addr ? (uint64_t)(uintptr_t)mem : 0,
        .len = size,
        .key = fi_mr_key(mr->mr),
    };
    return 0;
}

void rci_sub_rma_disconnect(struct rci_sub_rma *r)
{
    rci_fabric_mr_close(&r->mr);
    r->on = false;
    r->nheld = 0;
}

static int bad(struct rci_sub_rma *r, const char *fmt, uint64_t a, uint64_t b)
{
    char what[96];
    snprintf(what, sizeof what, fmt, a, b);
    rci_set_err(r->why, sizeof r->why, "bad RMA record: %s", what);
    return -EPROTO;
}

static bool seq_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* Inside the ring and a valid DATA message of len bytes. */
static int check_record(struct rci_sub_rma *r, uint64_t off, uint32_t len)
{
    if (len < sizeof(struct rci_wire_data) || off >= r->size || rci_rma_span(len) > r->size - off)
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " outside the ring", len, off);
    enum rci_wire_error why = rci_wire_check_data(r->mem + off, len, NULL);
    if (why != RCI_WIRE_OK)
        return bad(r, "header rejected (%" PRIu64 ") at offset %" PRIu64, (uint64_t)why, off);
    return 0;
}

/* The record's turn: it must be where the placement rule puts it and in
 * space we released; then its space is taken. */
static int take(struct rci_sub_rma *r, uint64_t off, uint32_t len, struct rci_sub_rma_record *rec)
{
    uint64_t start;
    if (!rci_rma_place(r->expect, r->size, len, &start) || start % r->size != off)
        return bad(r, "at offset %" PRIu64 ", due at %" PRIu64, off, start % r->size);
    uint64_t base = r->base;
    uint64_t read = rci_dma_ring_read_pos(r->ring);
    uint64_t end = base + start + rci_rma_span(len);
    if (end > read + r->size)
        return bad(r, "written into space not released (up to %" PRIu64 ", released %" PRIu64 ")",
                   end - base, read - base);
    pass_over(r, start - r->expect);   /* the ring's end, skipped by the writer */
    r->skipped += start - r->expect;
    struct rci_dma_span span;
    rci_dma_ring_note_written(r->ring, end);
    if (rci_dma_ring_take(r->ring, rci_rma_span(len), &span, &rec->key) != 0 || span.count != 1 ||
        span.piece[0].offset != off)
        return bad(r, "ring out of step at offset %" PRIu64 " (%" PRIu64 ")", off, (uint64_t)span.count);
    r->expect = start + rci_rma_span(len);
    rec->buf = r->mem + off;
    rec->len = len;
    return 1;
}

static bool is_held(const struct rci_sub_rma *r, uint32_t seq)
{
    for (uint32_t i = 0; i < r->nheld; i++)
        if (r->held[i].seq == seq)
            return true;
    return false;
}

int rci_sub_rma_arrived(struct rci_sub_rma *r, uint64_t imm, uint32_t next_seq,
                        struct rci_sub_rma_record *rec)
{
    uint64_t off = rci_rma_imm_offset(imm);
    uint32_t len = rci_rma_imm_len(imm);
    if (!r->on)
        return bad(r, "%" PRIu64 " B at offset %" PRIu64 " while RMA delivery is off", len, off);
    int rc = check_record(r, off, len);
    if (rc)
        return rc;
    uint32_t seq = rci_wire_stream_seq(r->mem + off);
    if (seq == next_seq)
        return take(r, off, len, rec);
    if (seq_before(seq, next_seq) || is_held(r, seq))
        return bad(r, "sequence number %" PRIu64 " again (due: %" PRIu64 ")", seq, next_seq);
    if (r->nheld == RCI_SUB_RMA_HOLD)
        return bad(r, "%" PRIu64 " records before their turn (due: %" PRIu64 ")", r->nheld + 1u, next_seq);
    r->held[r->nheld++] = (struct rci_sub_rma_held){ .seq = seq, .len = len, .off = off };
    return 0;
}

int rci_sub_rma_next_held(struct rci_sub_rma *r, uint32_t next_seq, struct rci_sub_rma_record *rec)
{
    for (uint32_t i = 0; i < r->nheld; i++) {
        if (r->held[i].seq != next_seq)
            continue;
        struct rci_sub_rma_held h = r->held[i];
        r->held[i] = r->held[--r->nheld];
        /* Checked when it came; the header cannot have changed since (the
         * writer never writes unreleased space: take() checks that too). */
        int rc = check_record(r, h.off, h.len);
        return rc ? rc : take(r, h.off, h.len, rec);
    }
    return 0;
}

void rci_sub_rma_release(struct rci_sub_rma *r, uint64_t key)
{
    rci_dma_ring_release(r->ring, key);
}

bool rci_sub_rma_busy(struct rci_sub_rma *r)
{
    return rci_dma_ring_advance(r->ring) != rci_dma_ring_taken_pos(r->ring);
}

uint64_t rci_sub_rma_credit_due(struct rci_sub_rma *r, bool force)
{
    uint64_t released = rci_dma_ring_advance(r->ring) - r->base;
    if (released <= r->credit_sent)
        return 0;
    if (!force && released - r->credit_sent < r->size / 4)
        return 0;
    return released;
}
