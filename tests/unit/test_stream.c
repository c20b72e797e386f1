/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stream.c — block streams without a fabric (README.md, "Block
 * stream"): the wire's stream parts of HELLO and WELCOME (built, checked,
 * read back; every bad field rejected), and the subscriber's span checks
 * (net/sub_stream.[ch]): spans in turn, out of turn (held, then taken),
 * and every kind of bad span; the credit rule; the ring moved on before a
 * new connection to an offset every block size the ring can take divides
 * (and the decoder's position with it). The whole path through the daemon
 * is tests/integration/test_daemon_stream.sh. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "net/rma_ring.h"
#include "net/sub_stream.h"
#include "net/wire.h"
#include "readout/felix_block.h"
#include "readout/readout.h"
#include "readout/readout_internal.h"
#include "tests/unit/cunit_main.h"

/* ---- wire ----------------------------------------------------------------------- */

static size_t stream_hello(uint8_t *msg, size_t cap, const struct rci_wire_hello_stream *st)
{
    static const uint8_t addr[16] = {1, 2, 3};
    ssize_t len = rci_wire_build_hello(msg, cap, 42, 8192, addr, sizeof addr);
    struct rci_wire_hello_rma ring = { .base = 0, .len = 1u << 20, .key = 7 };
    len = rci_wire_add_hello_rma(msg, cap, (size_t)len, &ring);
    CU_ASSERT_FATAL(len > 0);
    return (size_t)rci_wire_add_hello_stream(msg, cap, (size_t)len, st);
}

static void test_wire_hello(void)
{
    uint8_t msg[256];
    struct rci_wire_hello_stream st = { .card = 3, .start_offset = 8192 }, got;
    ssize_t len = (ssize_t)stream_hello(msg, sizeof msg, &st);
    CU_ASSERT_EQUAL_FATAL(len, 24 + 16 + 24 + 16);
    CU_ASSERT_EQUAL(rci_wire_check(msg, (size_t)len, RCI_WIRE_TO_PUBLISHER, NULL), RCI_MSG_HELLO);
    CU_ASSERT_TRUE(rci_wire_hello_stream(msg, (size_t)len, &got));
    CU_ASSERT_EQUAL(got.card, 3);
    CU_ASSERT_EQUAL(got.start_offset, 8192);
    struct rci_wire_hello_rma ring;
    CU_ASSERT_TRUE(rci_wire_hello_rma(msg, (size_t)len, &ring));
    CU_ASSERT_EQUAL(ring.len, 1u << 20);
    /* The encoder refuses what the checker would reject. */
    uint8_t bad[256];
    struct rci_wire_hello_stream b1 = { .card = 256 }, b2 = { .start_offset = 100 }, b3 = { .start_offset = 1u << 20 },
                                 b4 = { .flags = 1 };
    CU_ASSERT((ssize_t)stream_hello(bad, sizeof bad, &b1) < 0);
    CU_ASSERT((ssize_t)stream_hello(bad, sizeof bad, &b2) < 0);
    CU_ASSERT((ssize_t)stream_hello(bad, sizeof bad, &b3) < 0);
    CU_ASSERT((ssize_t)stream_hello(bad, sizeof bad, &b4) < 0);
    /* Fields corrupted on the wire: rejected as bad fields. */
    size_t at = (size_t)len - 16;
    struct { size_t off; uint32_t v; } cases[] = { { 0, 300 }, { 4, 1 }, { 8, 1000 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, msg, (size_t)len);
        memcpy(bad + at + cases[i].off, &cases[i].v, 4);
        enum rci_wire_error why = RCI_WIRE_OK;
        CU_ASSERT_EQUAL(rci_wire_check(bad, (size_t)len, RCI_WIRE_TO_PUBLISHER, &why), 0);
        CU_ASSERT_EQUAL(why, RCI_WIRE_BAD_FIELD);
    }
    /* An offset at or past the ring's end. */
    memcpy(bad, msg, (size_t)len);
    uint64_t past = 1u << 20;
    memcpy(bad + at + 8, &past, 8);
    CU_ASSERT_EQUAL(rci_wire_check(bad, (size_t)len, RCI_WIRE_TO_PUBLISHER, NULL), 0);
    /* A stream part without its RMA part is a wrong length. */
    CU_ASSERT_EQUAL(rci_wire_check(msg, (size_t)len - 8, RCI_WIRE_TO_PUBLISHER, NULL), 0);
}

static void test_wire_welcome(void)
{
    uint8_t msg[64];
    ssize_t len = rci_wire_build_welcome(msg, sizeof msg, 0, 1000, 99);
    struct rci_wire_welcome_stream w = { .card = 2, .block_size = 4096, .tag_base = 0x20000 }, got;
    len = rci_wire_add_welcome_stream(msg, sizeof msg, (size_t)len, &w);
    CU_ASSERT_EQUAL_FATAL(len, 48);
    CU_ASSERT_EQUAL(rci_wire_check(msg, (size_t)len, RCI_WIRE_TO_SUBSCRIBER, NULL), RCI_MSG_WELCOME);
    CU_ASSERT_TRUE(rci_wire_welcome_stream(msg, (size_t)len, &got));
    CU_ASSERT_EQUAL(got.card, 2);
    CU_ASSERT_EQUAL(got.block_size, 4096);
    CU_ASSERT_EQUAL(got.tag_base, 0x20000);
    struct rci_wire_welcome_rma r;
    CU_ASSERT_TRUE(rci_wire_welcome_rma(msg, (size_t)len, &r));
    CU_ASSERT_EQUAL(r.delivery, RCI_DELIVERY_STREAM);
    uint8_t bad[64];
    struct { size_t off; uint32_t v; } cases[] = {
        { 24, RCI_DELIVERY_RMA },   /* a stream part needs delivery stream */
        { 28, 1 },                  /* fallback */
        { 32, 300 },                /* card */
        { 36, 0 }, { 36, 1000 }, { 36, 128 * 1024 },   /* block sizes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, msg, (size_t)len);
        memcpy(bad + cases[i].off, &cases[i].v, 4);
        CU_ASSERT_EQUAL(rci_wire_check(bad, (size_t)len, RCI_WIRE_TO_SUBSCRIBER, NULL), 0);
    }
    /* Delivery stream without the stream part is bad too. */
    ssize_t short_len = rci_wire_build_welcome(bad, sizeof bad, 0, 1000, 99);
    short_len = rci_wire_add_welcome_rma(bad, sizeof bad, (size_t)short_len, RCI_DELIVERY_RMA, RCI_RMA_OK);
    uint32_t stream = RCI_DELIVERY_STREAM;
    memcpy(bad + 24, &stream, 4);
    CU_ASSERT_EQUAL(rci_wire_check(bad, (size_t)short_len, RCI_WIRE_TO_SUBSCRIBER, NULL), 0);
    struct rci_wire_welcome_stream badw = { .block_size = 1500 };
    len = rci_wire_build_welcome(bad, sizeof bad, 0, 1000, 99);
    CU_ASSERT(rci_wire_add_welcome_stream(bad, sizeof bad, (size_t)len, &badw) < 0);
}

/* ---- the subscriber's span checks ------------------------------------------------ */

#define RING (64u * 1024u)
#define BS 4096u

static void open_ring(struct rci_sub_stream *r)
{
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_sub_stream_create(r, RING, err, sizeof err), 0);
    rci_sub_stream_start(r);
    r->block_size = BS;
    r->on = true;
}

/* The decoder's part: take and give back everything written. */
static void consume(struct rci_sub_stream *r)
{
    struct rci_dma_span span;
    uint64_t key;
    while (rci_dma_ring_take(r->ring, BS, &span, &key) == 0)
        CU_ASSERT_EQUAL(rci_dma_ring_release(r->ring, key), 0);
    rci_dma_ring_advance(r->ring);
}

static void test_spans_in_turn(void)
{
    struct rci_sub_stream r;
    open_ring(&r);
    uint64_t spans = 0, bytes = 0, pos = 0;
    /* 100 laps of the ring in spans of 1..4 blocks, split at the ring's end
     * as the publisher does, credit given back as the subscriber does. */
    for (unsigned i = 0; pos < 100ull * RING; i++) {
        uint32_t n = 1 + i % 4;
        uint64_t to_end = RING - pos % RING;
        uint32_t len = n * BS < to_end ? n * BS : (uint32_t)to_end;
        if (pos + len > r.credit_sent + RING) {   /* the publisher waits for CREDIT */
            consume(&r);
            uint64_t c = rci_sub_stream_credit_due(&r, true);
            CU_ASSERT_FATAL(c > r.credit_sent);
            r.credit_sent = c;
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(rci_sub_stream_arrived(&r, rci_rma_imm(pos % RING, len), &spans, &bytes), 1);
        pos += len;
        CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), pos);
    }
    CU_ASSERT_EQUAL(bytes, 100ull * RING);
    CU_ASSERT(spans > 100);
    consume(&r);
    CU_ASSERT_TRUE(rci_sub_stream_idle(&r));
    /* A new connection starts where the ring's read position is. */
    rci_sub_stream_start(&r);
    CU_ASSERT_EQUAL(r.start, 0);
    rci_sub_stream_destroy(&r);
}

static void test_spans_out_of_turn(void)
{
    struct rci_sub_stream r;
    open_ring(&r);
    uint64_t spans = 0, bytes = 0;
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(2 * BS, BS), &spans, &bytes), 0);   /* held */
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(BS, BS), &spans, &bytes), 0);       /* held */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 0);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(0, BS), &spans, &bytes), 1);        /* all three */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 3 * BS);
    CU_ASSERT_EQUAL(spans, 3);
    CU_ASSERT_EQUAL(r.nheld, 0);
    rci_sub_stream_destroy(&r);
}

static void expect_bad(struct rci_sub_stream *r, uint64_t off, uint32_t len, const char *what)
{
    uint64_t spans = 0, bytes = 0;
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(r, rci_rma_imm(off, len), &spans, &bytes), -EPROTO);
    if (!strstr(r->why, what))
        fprintf(stderr, "\n  expected \"%s\" in \"%s\"", what, r->why);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->why, what));
}

static void test_bad_spans(void)
{
    struct rci_sub_stream r;
    open_ring(&r);
    expect_bad(&r, 0, 100, "not whole blocks");
    expect_bad(&r, 8, BS, "not whole blocks");
    expect_bad(&r, 0, 0, "not whole blocks");
    expect_bad(&r, RING - BS, 2 * BS, "outside the ring");
    expect_bad(&r, RING, BS, "outside the ring");
    uint64_t spans = 0, bytes = 0;
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(BS, BS), &spans, &bytes), 0);   /* held */
    expect_bad(&r, BS, BS, "written twice");
    rci_sub_stream_destroy(&r);

    open_ring(&r);   /* the whole ring written, nothing given back: one block more is past the credit */
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(0, RING), &spans, &bytes), 1);
    expect_bad(&r, 0, BS, "past the credited space");
    rci_sub_stream_destroy(&r);

    open_ring(&r);
    r.on = false;
    expect_bad(&r, 0, BS, "before WELCOME");
    rci_sub_stream_destroy(&r);
}

/* Spans that overlap one held out of turn: a publisher writing the same
 * ring space twice. Taken, the held one would later move the written
 * position over space no write of this lap filled (old blocks decoded as
 * new). */
static void test_overlapping_spans(void)
{
    struct rci_sub_stream r;
    uint64_t spans = 0, bytes = 0;
    open_ring(&r);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(2 * BS, BS), &spans, &bytes), 0);   /* held */
    expect_bad(&r, 0, 3 * BS, "overlaps");   /* in turn, over the held one */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 0);
    rci_sub_stream_destroy(&r);

    open_ring(&r);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(2 * BS, BS), &spans, &bytes), 0);   /* held */
    expect_bad(&r, BS, 2 * BS, "overlaps");  /* out of turn, over the held one */
    rci_sub_stream_destroy(&r);

    open_ring(&r);   /* adjacent is fine: all three taken in order */
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(3 * BS, BS), &spans, &bytes), 0);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(BS, 2 * BS), &spans, &bytes), 0);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(0, BS), &spans, &bytes), 1);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 4 * BS);
    CU_ASSERT_EQUAL(r.nheld, 0);
    rci_sub_stream_destroy(&r);
}

static void test_credit_rule(void)
{
    struct rci_sub_stream r;
    open_ring(&r);
    uint64_t spans = 0, bytes = 0;
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(0, 2 * BS), &spans, &bytes), 1);
    consume(&r);
    CU_ASSERT_EQUAL(rci_sub_stream_credit_due(&r, false), 0);          /* an eighth: not yet */
    CU_ASSERT_EQUAL(rci_sub_stream_credit_due(&r, true), 2 * BS);      /* heartbeat: anything */
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(2 * BS, 12 * BS), &spans, &bytes), 1);
    /* 14 of 16 blocks written, 2 given back: the publisher has 4 left, under
     * a quarter: whatever was given back goes at once. */
    CU_ASSERT_EQUAL(rci_sub_stream_credit_due(&r, false), 2 * BS);
    rci_sub_stream_destroy(&r);
}

/* ---- a new connection's start: the ring realigned ---------------------------------- */

/* Move an idle ring on by len bytes as a connection and its decoder would
 * (written, taken, given back). */
static void pass_over(struct rci_sub_stream *r, uint64_t len)
{
    while (len) {   /* half a ring at a time */
        uint64_t step = len < r->size / 2 ? len : r->size / 2;
        struct rci_dma_span span;
        uint64_t key;
        uint64_t read = rci_dma_ring_read_pos(r->ring);
        CU_ASSERT_EQUAL_FATAL(rci_dma_ring_note_written(r->ring, read + step), 0);
        CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r->ring, step, &span, &key), 0);
        CU_ASSERT_EQUAL_FATAL(rci_dma_ring_release(r->ring, key), 0);
        rci_dma_ring_advance(r->ring);
        len -= step;
    }
}

/* Every block size (1 KiB steps up to 64 KiB) a ring of `size` can take
 * divides start_offset: what the publisher checks (stream_write.c). */
static void expect_start_suits_every_block(const struct rci_sub_stream *r)
{
    unsigned fits = 0;
    for (uint64_t bs = 1024; bs <= 65536; bs += 1024) {
        if (r->size % bs)
            continue;
        fits++;
        if (r->start % bs)
            fprintf(stderr, "\n  ring %llu B: start %llu not a multiple of %llu", (unsigned long long)r->size,
                    (unsigned long long)r->start, (unsigned long long)bs);
        CU_ASSERT_EQUAL(r->start % bs, 0);
    }
    CU_ASSERT(fits > 0);
}

/* A ring of size B read up to `at`: realigned by want bytes, then started. */
static void realign_case(uint64_t size, uint64_t at, int64_t want, uint64_t want_start)
{
    struct rci_sub_stream r;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_sub_stream_create(&r, size, err, sizeof err), 0);
    pass_over(&r, at);
    CU_ASSERT_EQUAL(rci_sub_stream_realign(&r), want);
    CU_ASSERT_TRUE(rci_sub_stream_idle(&r));
    CU_ASSERT_EQUAL(rci_dma_ring_read_pos(r.ring), at + (uint64_t)want);
    rci_sub_stream_start(&r);
    CU_ASSERT_EQUAL(r.start, want_start);
    CU_ASSERT_EQUAL(r.base + r.start, at + (uint64_t)want);
    expect_start_suits_every_block(&r);
    CU_ASSERT_EQUAL(rci_sub_stream_realign(&r), 0);   /* aligned now: nothing more */
    rci_sub_stream_destroy(&r);
}

static void test_realign(void)
{
    /* Power-of-two rings: 64 KiB, whatever the block size. A connection of
     * 1 KiB blocks ended 5 KiB into the ring: a 4 KiB card would refuse 5 KiB. */
    realign_case(1u << 20, 5 * 1024, 59 * 1024, 64 * 1024);
    realign_case(8u << 20, 64 * 1024, 0, 64 * 1024);                       /* aligned: no skip */
    realign_case(8u << 20, 0, 0, 0);                                       /* the first connection */
    realign_case(256 * 1024, 256 * 1024 - 1024, 1024, 0);                  /* the next lap's start */
    realign_case(256 * 1024, 3 * 256 * 1024 + 7 * 1024, 57 * 1024, 64 * 1024);   /* fourth lap */
    /* 3 MiB takes 3, 6, 12, 24, 48 KiB blocks besides the powers of two:
     * 192 KiB (64 KiB would not suit 3 KiB blocks). */
    realign_case(3u << 20, 100 * 1024, 92 * 1024, 192 * 1024);
    realign_case(3u << 20, (3u << 20) - 3 * 1024, 3 * 1024, 0);
    /* 63 KiB x 16: takes 1, 3, 7, 9, 21, 63 KiB ... blocks. */
    realign_case(63u * 16 * 1024, 2 * 1024, (int64_t)(63u * 16 * 1024) - 2 * 1024, 0);

    /* Blocks still held (not idle): nothing moves. */
    struct rci_sub_stream r;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_sub_stream_create(&r, 1u << 20, err, sizeof err), 0);
    pass_over(&r, 5 * 1024);
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_note_written(r.ring, 6 * 1024), 0);
    CU_ASSERT_FALSE(rci_sub_stream_idle(&r));
    CU_ASSERT_EQUAL(rci_sub_stream_realign(&r), -EBUSY);
    CU_ASSERT_EQUAL(rci_dma_ring_read_pos(r.ring), 5 * 1024);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 6 * 1024);
    rci_sub_stream_destroy(&r);
}

static unsigned no_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    (void)ctx;
    (void)chunks;
    (void)n;
    return 0;
}

/* The decoder over the ring (api/client_stream.c's, card = NULL) follows a
 * realignment: without rci_readout_ring_moved its mirror of the taken
 * position lags, and once a pass saw the new written position it counts the
 * skipped bytes as written and not taken (never drained). */
static void test_decoder_follows_realign(void)
{
    struct rci_sub_stream r;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_sub_stream_create(&r, 1u << 20, err, sizeof err), 0);
    pass_over(&r, 5 * 1024);   /* a connection of 1 KiB blocks ended here */
    struct rci_card_params p = {
        .index = 0, .tag_base = 0, .ring_size = 1u << 20, .block_size = 1024, .block_format = FELIX_FMT_C0CE,
        .rd_update_bytes = 1024, .max_chunk_size = 1u << 16, .max_chunk_pieces = 66, .max_chunks_in_flight = 64,
    };
    struct rci_readout *dec = NULL;
    CU_ASSERT_EQUAL_FATAL(rci_readout_create(&p, r.ring, NULL, no_sink, NULL, &dec, err, sizeof err), 0);
    CU_ASSERT_TRUE(rci_readout_drained(dec));
    CU_ASSERT_EQUAL(rci_sub_stream_realign(&r), 59 * 1024);
    CU_ASSERT_EQUAL(rci_readout_decode(dec), 0);   /* nothing there to decode */
    CU_ASSERT_FALSE(rci_readout_drained(dec));     /* the lag the hook is for */
    rci_readout_ring_moved(dec);
    CU_ASSERT_TRUE(rci_readout_drained(dec));
    CU_ASSERT_EQUAL(rci_readout_decode(dec), 0);
    CU_ASSERT_TRUE(rci_readout_drained(dec));
    CU_ASSERT_EQUAL(rci_dma_ring_taken_pos(r.ring), 64 * 1024);
    rci_readout_destroy(dec);
    rci_sub_stream_destroy(&r);
}

/* Spans marked RCI_RMA_IMM_STREAM_GAP (blocks dropped for this subscriber
 * before them): the mark is told once, with the ring position of the
 * span's first block, when the span is taken in turn (held ones too),
 * before its blocks are noted written; the length is the rest. */
static uint64_t gap_pos[8];
static unsigned ngap;
static void record_gap(void *ctx, uint64_t pos)
{
    struct rci_sub_stream *r = ctx;
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r->ring), pos);   /* its blocks not written yet */
    if (ngap < 8)
        gap_pos[ngap++] = pos;
}

static void test_gap_marks(void)
{
    struct rci_sub_stream r;
    uint64_t spans = 0, bytes = 0;
    open_ring(&r);
    r.on_gap = record_gap;
    r.gap_ctx = &r;
    ngap = 0;
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(0, BS), &spans, &bytes), 1);
    CU_ASSERT_EQUAL(ngap, 0);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(BS, 2 * BS | RCI_RMA_IMM_STREAM_GAP), &spans, &bytes), 1);
    CU_ASSERT_EQUAL(ngap, 1);
    CU_ASSERT_EQUAL(gap_pos[0], BS);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 3 * BS);
    CU_ASSERT_EQUAL(bytes, 3 * BS);
    /* out of turn: told when its turn comes, in order */
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(5 * BS, BS | RCI_RMA_IMM_STREAM_GAP), &spans, &bytes), 0);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(4 * BS, BS), &spans, &bytes), 0);
    CU_ASSERT_EQUAL(ngap, 1);
    CU_ASSERT_EQUAL(rci_sub_stream_arrived(&r, rci_rma_imm(3 * BS, BS), &spans, &bytes), 1);
    CU_ASSERT_EQUAL(ngap, 2);
    CU_ASSERT_EQUAL(gap_pos[1], 5 * BS);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r.ring), 6 * BS);
    CU_ASSERT_EQUAL(r.gaps, 2);
    /* the mark alone is no span */
    expect_bad(&r, 6 * BS, RCI_RMA_IMM_STREAM_GAP, "not whole blocks");
    CU_ASSERT_EQUAL(r.gaps, 2);
    rci_sub_stream_destroy(&r);
}

/* Spans from a publisher that writes anything (random offsets, lengths,
 * marks, in and out of turn; credit and consumption at random): whatever
 * comes, nothing taken lies outside the ring or past the credited space,
 * nothing held overlaps, and a bad span never moves the written position. */
static void test_random_spans(void)
{
    struct rci_sub_stream r;
    open_ring(&r);
    uint64_t spans = 0, bytes = 0, seed = 12345, bad = 0, taken = 0;
    for (unsigned i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t x = seed >> 16;
        uint64_t off = x % 4 ? (r.expect + (x >> 4) % 6 * BS) % RING : (x >> 8) % (2 * RING);
        uint32_t len = (uint32_t)((x >> 20) % 5 ? ((x >> 24) % 4 + 1) * BS : (x >> 28) % (2 * RING));
        len |= (uint32_t)((x >> 40) & 1);
        uint64_t written = rci_dma_ring_written_pos(r.ring);
        int rc = rci_sub_stream_arrived(&r, rci_rma_imm(off, len), &spans, &bytes);
        if (rc < 0) {
            bad++;
            CU_ASSERT_EQUAL_FATAL(rci_dma_ring_written_pos(r.ring), written);
            consume(&r);   /* the connection ends; the next starts where the ring is */
            rci_sub_stream_start(&r);
            r.block_size = BS;
            r.on = true;
            continue;
        }
        taken += rc == 1;
        uint64_t now = rci_dma_ring_written_pos(r.ring);
        CU_ASSERT_FATAL(now - r.base <= r.credit_sent + RING);
        CU_ASSERT_FATAL(now - rci_dma_ring_read_pos(r.ring) <= RING);
        for (uint32_t h = 0; h < r.nheld; h++) {
            CU_ASSERT_FATAL(r.held[h].off + r.held[h].len <= RING);
            CU_ASSERT_FATAL(r.held[h].len % BS == 0 && r.held[h].len > 0);
        }
        if ((x >> 44) % 3 == 0) {
            consume(&r);
            uint64_t c = rci_sub_stream_credit_due(&r, (x >> 46) & 1);
            if (c)
                r.credit_sent = c;
        }
    }
    CU_ASSERT(bad > 1000);
    CU_ASSERT(taken > 1000);
    rci_sub_stream_destroy(&r);
}

static void register_tests(void)
{
    RCI_SUITE("wire",
             { "HELLO's stream part", test_wire_hello },
             { "WELCOME's stream part", test_wire_welcome });
    RCI_SUITE("subscriber spans",
             { "in turn, 100 laps, split at the end", test_spans_in_turn },
             { "out of turn: held, then taken", test_spans_out_of_turn },
             { "bad spans", test_bad_spans },
             { "spans overlapping a held one", test_overlapping_spans },
             { "credit rule", test_credit_rule },
             { "gap marks told in turn", test_gap_marks },
             { "random spans: nothing outside the ring or the credit", test_random_spans });
    RCI_SUITE("a new connection's start",
             { "realigned for any block size the ring can take", test_realign },
             { "the decoder follows", test_decoder_follows_realign });
}

RCI_CUNIT_MAIN(register_tests)
