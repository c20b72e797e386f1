/* SPDX-License-Identifier: BSD-3-Clause */
/* test_decoder.c — the block decoder driven directly (no card, no thread):
 * hand-made blocks are written into a real ring, rci_readout_decode() turns
 * them into chunks, a test sink records them, and the test releases keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "readout/chunk_pool.h"
#include "readout/felix_block.h"
#include "readout/readout.h"
#include "tests/unit/cunit_main.h"

#define TAG_BASE 0x30000ull
#define MAX_GOT  4096u

/* ---- a tiny block builder (independent of the simulator's writer) ------- */

struct tblk {
    uint8_t buf[FELIX_MAX_BLOCK];
    uint32_t size, pos;            /* pos: next free byte after the last trailer */
    unsigned tbytes;
    enum felix_format fmt;
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t marker_of(enum felix_format fmt, uint32_t size)
{
    if (fmt == FELIX_FMT_ABCD)
        return FELIX_MARKER_ABCD;
    if (fmt == FELIX_FMT_ABCE)
        return FELIX_MARKER_ABCE;
    return (uint16_t)(FELIX_MARKER_C0CE | ((size / 1024 - 1) << 8));
}

static void tblk_begin_marker(struct tblk *b, enum felix_format fmt, uint32_t size,
                              unsigned elink, unsigned seq, uint16_t marker)
{
    memset(b->buf, 0, size);
    b->size = size;
    b->fmt = fmt;
    b->pos = FELIX_HEADER_BYTES;
    b->tbytes = fmt == FELIX_FMT_ABCD ? 2 : 4;
    put16(b->buf, (uint16_t)((elink & FELIX_ELINK_MASK) | ((seq % 32) << FELIX_SEQ_SHIFT)));
    put16(b->buf + 2, marker);
}

static void tblk_begin(struct tblk *b, enum felix_format fmt, uint32_t size, unsigned elink,
                       unsigned seq)
{
    tblk_begin_marker(b, fmt, size, elink, seq, marker_of(fmt, size));
}

/* Largest payload a new subchunk can still carry in this block. */
static uint32_t tblk_room(const struct tblk *b)
{
    if (b->size - b->pos < b->tbytes)
        return 0;
    uint32_t room = (b->size - b->pos - b->tbytes) / b->tbytes * b->tbytes;
    return b->tbytes == 2 && room > FELIX_T16_LEN_MASK ? FELIX_T16_LEN_MASK : room;
}

static uint32_t trailer_word(const struct tblk *b, unsigned type, uint32_t len, unsigned flags)
{
    if (b->tbytes == 2)
        return (type << FELIX_T16_TYPE_SHIFT) | (len & FELIX_T16_LEN_MASK) |
               ((flags & RCI_CHUNK_TRUNCATED) ? FELIX_T16_TRUNC : 0) |
               ((flags & RCI_CHUNK_ERROR) ? FELIX_T16_ERROR : 0) |
               ((flags & RCI_CHUNK_CRC_ERROR) ? FELIX_T16_CRC : 0);
    return (type << FELIX_T32_TYPE_SHIFT) | (len & FELIX_T32_LEN_MASK) |
           ((flags & RCI_CHUNK_TRUNCATED) ? FELIX_T32_TRUNC : 0) |
           ((flags & RCI_CHUNK_ERROR) ? FELIX_T32_ERROR : 0) |
           ((flags & RCI_CHUNK_CRC_ERROR) ? FELIX_T32_CRC : 0) |
           ((flags & RCI_CHUNK_BUSY) ? FELIX_T32_BUSY : 0);
}

static void tblk_raw_trailer(struct tblk *b, uint32_t word)
{
    if (b->tbytes == 2)
        put16(b->buf + b->pos, (uint16_t)word);
    else
        put32(b->buf + b->pos, word);
    b->pos += b->tbytes;
}

/* Append a subchunk: payload (data may be NULL: a byte pattern), padding, trailer. */
static void tblk_sub(struct tblk *b, unsigned type, const uint8_t *data, uint32_t len,
                     unsigned flags)
{
    CU_ASSERT_FATAL(len <= tblk_room(b));
    for (uint32_t i = 0; i < len; i++)
        b->buf[b->pos + i] = data ? data[i] : (uint8_t)(i * 7 + type);
    b->pos += (len + b->tbytes - 1) / b->tbytes * b->tbytes;
    tblk_raw_trailer(b, trailer_word(b, type, len, flags));
}

/* ---- fixture: ring + readout + recording sink ------------------------------ */

#define GOT_PIECES 8

struct got {
    struct rci_chunk c;             /* copy; c.pieces -> pc (copied at sink time) */
    struct rci_piece pc[GOT_PIECES];
    uint8_t *bytes;                /* the pieces concatenated at sink time */
    bool released;
};

struct fx {
    struct rci_dma_ring *ring;
    struct rci_readout *r;
    struct rci_card_params p;
    uint8_t *base;
    uint64_t wpos;
    struct got got[MAX_GOT];
    unsigned ngot;
    int again;                     /* say -EAGAIN this many times */
    int fail;                      /* say -EIO this many times */
    uint64_t again_keys[8];
    unsigned nagain_keys;
    bool release_in_sink;
};

static int record_one(void *ctx, const struct rci_chunk *c)
{
    struct fx *f = ctx;
    if (f->again > 0) {
        f->again--;
        if (f->nagain_keys < 8)
            f->again_keys[f->nagain_keys++] = c->key;
        return -EAGAIN;
    }
    if (f->fail > 0) {
        f->fail--;
        return -EIO;
    }
    CU_ASSERT_FATAL(f->ngot < MAX_GOT);
    struct got *g = &f->got[f->ngot++];
    g->c = *c;
    CU_ASSERT_FATAL(c->npieces <= GOT_PIECES);
    memcpy(g->pc, c->pieces, c->npieces * sizeof *c->pieces);
    g->c.pieces = g->pc;   /* a released record is reused: keep our own copy */
    g->bytes = malloc(c->length + 1);
    uint32_t at = 0;
    for (uint32_t i = 0; i < c->npieces; i++) {
        memcpy(g->bytes + at, c->pieces[i].addr, c->pieces[i].len);
        at += c->pieces[i].len;
    }
    CU_ASSERT_EQUAL(at, c->length);
    g->released = false;
    if (f->release_in_sink) {
        rci_readout_release(f->r, c->key);
        g->released = true;
    }
    return 0;
}

/* The burst sink: one chunk at a time through record_one. */
static unsigned record_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct fx *f = ctx;
    return rci_readout_sink_each(f->r, record_one, f, chunks, n);
}

static struct rci_card_params default_params(enum felix_format fmt, unsigned nblocks)
{
    uint32_t bs = fmt == FELIX_FMT_C0CE ? 4096 : 1024;
    return (struct rci_card_params){
        .index = 3, .tag_base = TAG_BASE, .ring_size = (uint64_t)bs * nblocks, .block_size = bs,
        .block_format = fmt, .rd_update_bytes = bs, .max_chunk_size = 1u << 20,
        .max_chunk_pieces = 64, .max_chunks_in_flight = 256 };
}

static struct fx *fx_open_params(const struct rci_card_params *p)
{
    struct fx *f = calloc(1, sizeof *f);
    CU_ASSERT_FATAL(f != NULL);
    f->p = *p;
    char err[256];
    struct rci_dma_ring_params rp = { .size = p->ring_size, .unit_size = p->block_size,
                                     .backend = RCI_MEM_ANON, .lock_memory = false };
    int rc = rci_dma_ring_create(&rp, &f->ring, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = rci_readout_create(p, f->ring, NULL, record_sink, f, &f->r, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "rci_readout_create: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    f->base = rci_dma_ring_addr(f->ring);
    return f;
}

static struct fx *fx_open(enum felix_format fmt, unsigned nblocks)
{
    struct rci_card_params p = default_params(fmt, nblocks);
    return fx_open_params(&p);
}

static void fx_close(struct fx *f)
{
    rci_readout_destroy(f->r);
    rci_dma_ring_destroy(f->ring);
    for (unsigned i = 0; i < f->ngot; i++)
        free(f->got[i].bytes);
    free(f);
}

/* Copy a block into the ring at the write position, as the card would. */
static void fx_put(struct fx *f, const struct tblk *b)
{
    CU_ASSERT_EQUAL_FATAL(b->size, f->p.block_size);
    CU_ASSERT_FATAL(f->wpos + b->size <= rci_dma_ring_read_pos(f->ring) + f->p.ring_size);
    memcpy(f->base + f->wpos % f->p.ring_size, b->buf, b->size);
    f->wpos += b->size;
    rci_dma_ring_note_written(f->ring, f->wpos);
}

static void fx_release(struct fx *f, unsigned i)
{
    CU_ASSERT_FATAL(i < f->ngot);
    CU_ASSERT_FALSE(f->got[i].released);
    rci_readout_release(f->r, f->got[i].c.key);
    f->got[i].released = true;
}

static void fx_release_all(struct fx *f)
{
    for (unsigned i = 0; i < f->ngot; i++)
        if (!f->got[i].released)
            fx_release(f, i);
}

static uint64_t fx_read(struct fx *f)
{
    rci_readout_decode(f->r);        /* also advances the ring */
    return rci_dma_ring_read_pos(f->ring);
}

static struct rci_readout_stats fx_stats(struct fx *f)
{
    struct rci_readout_stats s;
    rci_readout_get_stats(f->r, &s);
    return s;
}

static struct rci_elink_stats fx_elink(struct fx *f, unsigned elink)
{
    struct rci_elink_stats s;
    memset(&s, 0, sizeof s);
    CU_ASSERT_EQUAL(rci_readout_get_elink_stats(f->r, elink, &s), 0);
    return s;
}

static void fill_bytes(uint8_t *d, uint32_t len, unsigned salt)
{
    for (uint32_t i = 0; i < len; i++)
        d[i] = (uint8_t)(salt * 131 + i * 17 + (i >> 8));
}

static const enum felix_format all_formats[] = { FELIX_FMT_ABCD, FELIX_FMT_ABCE, FELIX_FMT_C0CE };
#define FOR_EACH_FORMAT(fmt)                                                   \
    for (unsigned fi_ = 0; fi_ < 3; fi_++)                                     \
        for (int once_ = 1; once_;)                                            \
            for (enum felix_format fmt = all_formats[fi_]; once_; once_ = 0)

/* ---- chunks ------------------------------------------------------------------ */

static void test_whole_chunk(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        struct tblk b;
        const uint8_t msg[] = "hello, felix";
        tblk_begin(&b, fmt, f->p.block_size, 5, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, msg, sizeof msg, 0);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 1);
        struct rci_chunk *c = &f->got[0].c;
        CU_ASSERT_EQUAL(c->tag, TAG_BASE + 5);
        CU_ASSERT_EQUAL(c->elink, 5);
        CU_ASSERT_EQUAL(c->flags, 0);
        CU_ASSERT_EQUAL(c->length, sizeof msg);
        CU_ASSERT_EQUAL_FATAL(c->npieces, 1);
        CU_ASSERT_PTR_EQUAL(c->pieces[0].addr, f->base + 4);    /* no copy */
        CU_ASSERT_EQUAL(c->pieces[0].ring_offset, 4);
        CU_ASSERT_EQUAL(memcmp(f->got[0].bytes, msg, sizeof msg), 0);
        CU_ASSERT_EQUAL(fx_read(f), 0);                          /* held by the chunk */
        CU_ASSERT_FALSE(rci_readout_drained(f->r));
        fx_release(f, 0);
        CU_ASSERT_EQUAL(fx_read(f), f->p.block_size);
        CU_ASSERT_TRUE(rci_readout_drained(f->r));
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.blocks, 1);
        CU_ASSERT_EQUAL(s.chunks, 1);
        CU_ASSERT_EQUAL(s.bytes, sizeof msg);
        CU_ASSERT_EQUAL(s.releases, 1);
        CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
        fx_close(f);
    }
}

static void test_several_whole_per_block(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        struct tblk b;
        uint8_t data[64];
        uint32_t expect_off[12];
        tblk_begin(&b, fmt, f->p.block_size, 2047, 7);
        for (unsigned i = 0; i < 12; i++) {   /* lengths 0..55: all paddings */
            fill_bytes(data, 5 * i, i);
            expect_off[i] = b.pos;
            tblk_sub(&b, FELIX_SUB_WHOLE, data, 5 * i, 0);
        }
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 12);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 12);
        for (unsigned i = 0; i < 12; i++) {
            struct got *g = &f->got[i];
            fill_bytes(data, 5 * i, i);
            CU_ASSERT_EQUAL(g->c.length, 5 * i);
            CU_ASSERT_EQUAL(g->c.tag, TAG_BASE + 2047);
            CU_ASSERT_EQUAL(g->c.npieces, i == 0 ? 0 : 1);    /* empty chunk: no piece */
            if (i > 0)
                CU_ASSERT_EQUAL(g->c.pieces[0].ring_offset, expect_off[i]);
            CU_ASSERT_EQUAL(memcmp(g->bytes, data, 5 * i), 0);
        }
        CU_ASSERT_EQUAL(fx_read(f), f->p.block_size);
        fx_close(f);
    }
}

/* e-link 1: FIRST in block 0, MIDDLE in block 2, MIDDLE in block 3, LAST in
 * block 5; blocks 1 and 4 belong to other e-links. */
static void test_spanning_chunk(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 16);
        uint32_t bs = f->p.block_size;
        struct tblk b;
        static uint8_t data[4 * FELIX_MAX_BLOCK];
        fill_bytes(data, sizeof data, 9);
        uint32_t at = 0, first_off, first_len;

        tblk_begin(&b, fmt, bs, 1, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 10, 0);
        first_off = b.pos;
        first_len = tblk_room(&b);
        tblk_sub(&b, FELIX_SUB_FIRST, data, first_len, 0);
        at += first_len;
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 2, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 20, 0);
        fx_put(f, &b);
        uint32_t mid_len = 0;
        for (unsigned k = 0; k < 2; k++) {
            tblk_begin(&b, fmt, bs, 1, 1 + k);
            mid_len = tblk_room(&b);
            tblk_sub(&b, FELIX_SUB_MIDDLE, data + at, mid_len, 0);
            at += mid_len;
            fx_put(f, &b);
        }
        tblk_begin(&b, fmt, bs, 3, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 30, 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 1, 3);
        tblk_sub(&b, FELIX_SUB_LAST, data + at, 100, 0);
        at += 100;
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 40, 0);
        fx_put(f, &b);

        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 5);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 5);
        /* order of completion: 10, 20, 30, spanning, 40 */
        CU_ASSERT_EQUAL(f->got[0].c.length, 10);
        CU_ASSERT_EQUAL(f->got[1].c.length, 20);
        CU_ASSERT_EQUAL(f->got[2].c.length, 30);
        CU_ASSERT_EQUAL(f->got[4].c.length, 40);
        struct rci_chunk *c = &f->got[3].c;
        CU_ASSERT_EQUAL(c->tag, TAG_BASE + 1);
        CU_ASSERT_EQUAL(c->length, at);
        CU_ASSERT_EQUAL_FATAL(c->npieces, 4);
        CU_ASSERT_EQUAL(memcmp(f->got[3].bytes, data, at), 0);
        /* each piece in place: blocks 0, 2, 3, 5, never 1 or 4 */
        CU_ASSERT_PTR_EQUAL(c->pieces[0].addr, f->base + first_off);
        CU_ASSERT_EQUAL(c->pieces[0].len, first_len);
        CU_ASSERT_PTR_EQUAL(c->pieces[1].addr, f->base + 2 * bs + 4);
        CU_ASSERT_EQUAL(c->pieces[1].len, mid_len);
        CU_ASSERT_PTR_EQUAL(c->pieces[2].addr, f->base + 3 * bs + 4);
        CU_ASSERT_PTR_EQUAL(c->pieces[3].addr, f->base + 5 * bs + 4);
        CU_ASSERT_EQUAL(c->pieces[3].ring_offset, 5 * bs + 4);
        CU_ASSERT_EQUAL(c->pieces[3].len, 100);

        /* Everything but the spanning chunk released: block 0 still held. */
        for (unsigned i = 0; i < 5; i++)
            if (i != 3)
                fx_release(f, i);
        CU_ASSERT_EQUAL(fx_read(f), 0);
        fx_release(f, 3);
        CU_ASSERT_EQUAL(fx_read(f), 6 * bs);
        struct rci_elink_stats e1 = fx_elink(f, 1);
        CU_ASSERT_EQUAL(e1.blocks, 4);
        CU_ASSERT_EQUAL(e1.chunks, 3);
        CU_ASSERT_EQUAL(e1.err_seq_gap, 0);
        CU_ASSERT_FALSE(rci_readout_elink_seen(f->r, 4));
        fx_close(f);
    }
}

static void test_chunk_across_ring_wrap(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 4);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        for (unsigned i = 0; i < 3; i++) {   /* blocks 0..2, released at once */
            tblk_begin(&b, fmt, bs, 6, i);
            tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 8, 0);
            fx_put(f, &b);
        }
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
        f->release_in_sink = false;
        uint8_t data[600];
        fill_bytes(data, sizeof data, 3);
        tblk_begin(&b, fmt, bs, 6, 3);
        tblk_sub(&b, FELIX_SUB_FIRST, data, 300, 0);      /* ring block 3, the last one */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 6, 4);
        tblk_sub(&b, FELIX_SUB_LAST, data + 300, 300, 0); /* ring block 0 again */
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 4);
        struct rci_chunk *c = &f->got[3].c;
        CU_ASSERT_EQUAL_FATAL(c->npieces, 2);
        CU_ASSERT_EQUAL(c->pieces[0].ring_offset, 3 * bs + 4);
        CU_ASSERT_EQUAL(c->pieces[1].ring_offset, 4);
        CU_ASSERT_EQUAL(memcmp(f->got[3].bytes, data, 600), 0);
        CU_ASSERT_EQUAL(fx_read(f), 3 * bs);
        fx_release(f, 3);
        CU_ASSERT_EQUAL(fx_read(f), 5 * bs);
        fx_close(f);
    }
}

static void test_flags_ored(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        bool busy_bit = fmt != FELIX_FMT_ABCD;   /* 16-bit trailers have no busy bit */
        struct tblk b;
        tblk_begin(&b, fmt, bs, 9, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 3, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 3, RCI_CHUNK_TRUNCATED);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 9, 1);
        tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b), busy_bit ? RCI_CHUNK_BUSY : 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 9, 2);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 0, RCI_CHUNK_CRC_ERROR);  /* flags only */
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 4, RCI_CHUNK_ERROR);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 3);
        CU_ASSERT_EQUAL(f->got[0].c.flags, 0);
        uint32_t want = RCI_CHUNK_TRUNCATED | RCI_CHUNK_CRC_ERROR | (busy_bit ? RCI_CHUNK_BUSY : 0);
        CU_ASSERT_EQUAL(f->got[1].c.flags, want);
        CU_ASSERT_EQUAL(f->got[1].c.npieces, 2);              /* the empty LAST adds none */
        CU_ASSERT_EQUAL(f->got[2].c.flags, RCI_CHUNK_ERROR);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.chunks_truncated, 1);
        CU_ASSERT_EQUAL(s.chunks_crc, 1);
        CU_ASSERT_EQUAL(s.chunks_error, 1);
        CU_ASSERT_EQUAL(s.chunks_busy, busy_bit ? 1 : 0);
        CU_ASSERT_EQUAL(fx_read(f), 3 * bs);
        fx_close(f);
    }
}

/* ---- bad blocks -------------------------------------------------------------- */

/* A good block after a bad one still decodes: the decoder never gets stuck. */
static void expect_recovery(struct fx *f, unsigned elink, unsigned seq)
{
    struct tblk b;
    unsigned before = f->ngot;
    tblk_begin(&b, f->p.block_format, f->p.block_size, elink, seq);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 12, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL(f->ngot, before + 1);
}

static void test_bad_marker(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        struct tblk b;
        tblk_begin_marker(&b, fmt, f->p.block_size, 4, 0, 0x1234);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 12, 0);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.bad_header, 1);
        CU_ASSERT_EQUAL(s.blocks, 0);
        CU_ASSERT_EQUAL(s.last_bad_kind, RCI_BAD_MARKER);
        CU_ASSERT_EQUAL(s.last_bad_pos, 0);
        CU_ASSERT_EQUAL(fx_read(f), f->p.block_size);          /* given back at once */
        expect_recovery(f, 4, 1);
        fx_close(f);
    }
}

static void test_block_size_mismatch(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);                  /* 4 KiB blocks */
    f->release_in_sink = true;
    struct tblk b;
    tblk_begin_marker(&b, FELIX_FMT_C0CE, 4096, 1, 0, marker_of(FELIX_FMT_C0CE, 2048));
    fx_put(f, &b);
    tblk_begin_marker(&b, FELIX_FMT_ABCE, 4096, 1, 0, FELIX_MARKER_ABCE);
    fx_put(f, &b);
    tblk_begin_marker(&b, FELIX_FMT_ABCD, 4096, 1, 0, FELIX_MARKER_ABCD);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.bad_header, 3);
    CU_ASSERT_EQUAL(s.last_bad_kind, RCI_BAD_BLOCK_SIZE);
    CU_ASSERT_EQUAL(s.last_bad_pos, 2 * 4096);
    expect_recovery(f, 1, 0);
    fx_close(f);

    /* A 1 KiB ring accepts every marker, c0ce with size code 0. */
    f = fx_open(FELIX_FMT_ABCE, 8);
    f->release_in_sink = true;
    tblk_begin_marker(&b, FELIX_FMT_C0CE, 1024, 1, 0, marker_of(FELIX_FMT_C0CE, 1024));
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
    fx_put(f, &b);
    tblk_begin(&b, FELIX_FMT_ABCD, 1024, 2, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
    CU_ASSERT_EQUAL(fx_stats(f).bad_header, 0);
    fx_close(f);
}

static void test_malformed_length(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        /* e-link 2 opens a chunk, then a block whose only trailer claims a
         * payload longer than the block: the open chunk is lost too. */
        tblk_begin(&b, fmt, bs, 2, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 20, 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 2, 1);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 16, 0);     /* valid, but discarded with its block */
        b.pos = bs - b.tbytes;
        tblk_raw_trailer(&b, trailer_word(&b, FELIX_SUB_LAST, bs - 4, 0));
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        struct rci_elink_stats e = fx_elink(f, 2);
        CU_ASSERT_EQUAL(e.err_malformed, 1);
        CU_ASSERT_EQUAL(e.chunks_incomplete, 1);
        CU_ASSERT_EQUAL(e.err_seq_gap, 0);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.last_bad_kind, RCI_BAD_LENGTH);
        CU_ASSERT_EQUAL(s.last_bad_pos, bs);
        CU_ASSERT_EQUAL(fx_read(f), 2 * bs);               /* both blocks back */
        /* a LAST after the malformed block has nothing to finish */
        tblk_begin(&b, fmt, bs, 2, 2);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 8, 0);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        CU_ASSERT_EQUAL(fx_elink(f, 2).err_orphan, 1);
        expect_recovery(f, 2, 3);
        fx_close(f);
    }
}

/* One malformed block per case; each must be skipped, nothing emitted. */
static void test_malformed_chain(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 16);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        unsigned seq = 0;
        /* FIRST followed by another chunk in its block */
        tblk_begin(&b, fmt, bs, 1, seq++);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 5, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
        fx_put(f, &b);
        /* LAST after a WHOLE */
        tblk_begin(&b, fmt, bs, 1, seq++);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 5, 0);
        fx_put(f, &b);
        /* MIDDLE not alone */
        tblk_begin(&b, fmt, bs, 1, seq++);
        tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, 5, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 5, 0);
        fx_put(f, &b);
        /* a null-type trailer with a length */
        tblk_begin(&b, fmt, bs, 1, seq++);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
        tblk_raw_trailer(&b, trailer_word(&b, FELIX_SUB_NULL, 3, 0));
        fx_put(f, &b);
        /* a chain that ends inside the header: trailer-sized room left */
        tblk_begin(&b, fmt, bs, 1, seq++);
        b.pos = bs - b.tbytes;
        tblk_raw_trailer(&b, trailer_word(&b, FELIX_SUB_WHOLE, bs - 4 - b.tbytes + 1, 0));
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        CU_ASSERT_EQUAL(f->ngot, 0);
        struct rci_elink_stats e = fx_elink(f, 1);
        CU_ASSERT_EQUAL(e.err_malformed, 5);
        CU_ASSERT_EQUAL(e.blocks, 5);
        CU_ASSERT_EQUAL(e.chunks_incomplete, 0);   /* no chunk was ever open */
        CU_ASSERT_EQUAL(fx_stats(f).last_bad_kind, RCI_BAD_LENGTH);
        CU_ASSERT_EQUAL(fx_read(f), 5 * bs);
        expect_recovery(f, 1, seq);
        fx_close(f);
    }
}

static void test_seq_gap(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 16);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        /* no chunk open: 0, 3 (2 missing), 4, then 31 -> 0 wraps cleanly */
        const unsigned seqs[] = { 0, 3, 4, 31, 0 };
        for (unsigned i = 0; i < 5; i++) {
            tblk_begin(&b, fmt, bs, 7, seqs[i]);
            tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 4, 0);
            fx_put(f, &b);
        }
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 5);
        struct rci_elink_stats e = fx_elink(f, 7);
        CU_ASSERT_EQUAL(e.err_seq_gap, 2 + 26);
        CU_ASSERT_EQUAL(e.chunks_dropped_gap, 0);
        /* other e-links keep their own numbering */
        tblk_begin(&b, fmt, bs, 8, 17);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 4, 0);
        fx_put(f, &b);
        /* chunk open across a gap: FIRST at 1, LAST at 3 */
        tblk_begin(&b, fmt, bs, 7, 1);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 40, 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 7, 3);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 40, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 4, 0);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
        e = fx_elink(f, 7);
        CU_ASSERT_EQUAL(e.err_seq_gap, 2 + 26 + 1);
        CU_ASSERT_EQUAL(e.chunks_dropped_gap, 1);
        CU_ASSERT_EQUAL(e.err_orphan, 1);              /* the LAST after the gap */
        CU_ASSERT_EQUAL(e.chunks, 6);
        CU_ASSERT_EQUAL(fx_elink(f, 8).err_seq_gap, 0);
        CU_ASSERT_EQUAL(fx_read(f), 8 * bs);           /* the dropped FIRST's block is back */
        fx_close(f);
    }
}

/* Blocks dropped for a block-stream subscriber (slow_policy = drop) leave a
 * hole the e-link's 5-bit sequence hides when a multiple of 32 of its blocks
 * went: the open chunk's FIRST before the hole and another chunk's LAST
 * after it would make one chunk of two (handed on as good). The publisher
 * marks the span after a hole; rci_readout_mark_gap() before its first
 * block makes the decoder drop what is open there (chunks_dropped_gap) and
 * skip the rest of it. */
static void test_marked_gap(void)
{
    FOR_EACH_FORMAT(fmt) {
        for (int marked = 0; marked < 2; marked++) {
            struct fx *f = fx_open(fmt, 16);
            f->release_in_sink = true;
            uint32_t bs = f->p.block_size;
            struct tblk b;
            tblk_begin(&b, fmt, bs, 5, 9);
            tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 8, 0);
            tblk_sub(&b, FELIX_SUB_FIRST, NULL, 40, 0);    /* chunk A's head */
            fx_put(f, &b);
            CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
            /* 32 blocks of e-link 5 never came: the next one has sequence 10 again */
            if (marked)
                rci_readout_mark_gap(f->r, f->wpos);
            tblk_begin(&b, fmt, bs, 5, 10);
            tblk_sub(&b, FELIX_SUB_LAST, NULL, 24, 0);     /* chunk B's tail */
            tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 12, 0);
            fx_put(f, &b);
            unsigned got = rci_readout_decode(f->r);
            struct rci_elink_stats e = fx_elink(f, 5);
            CU_ASSERT_EQUAL(e.err_seq_gap, 0);             /* the sequence cannot tell */
            if (marked) {
                CU_ASSERT_EQUAL(got, 1);                   /* the WHOLE only */
                CU_ASSERT_EQUAL(f->got[f->ngot - 1].c.length, 12);
                CU_ASSERT_EQUAL(e.chunks_dropped_gap, 1);
                CU_ASSERT_EQUAL(e.err_orphan, 0);          /* B's tail skipped with A */
            } else {
                CU_ASSERT_EQUAL(got, 2);                   /* A's head + B's tail: one chunk of two */
                CU_ASSERT_EQUAL(f->got[1].c.length, 40 + 24);
            }
            CU_ASSERT_EQUAL(fx_read(f), 2 * bs);
            /* The mark is used once: the next lap's block at that offset is not cut. */
            for (unsigned i = 0; i < 16; i++) {
                tblk_begin(&b, fmt, bs, 5, 11 + i);
                tblk_sub(&b, i % 2 ? FELIX_SUB_LAST : FELIX_SUB_FIRST, NULL, 16, 0);
                fx_put(f, &b);
                rci_readout_decode(f->r);
            }
            CU_ASSERT_EQUAL(fx_elink(f, 5).chunks_dropped_gap, marked ? 1 : 0);
            CU_ASSERT_EQUAL(fx_elink(f, 5).chunks, (marked ? 2 : 3) + 8);
            fx_close(f);
        }
    }
}

static void test_orphans_and_restarts(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 16);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        unsigned seq = 0;
        tblk_begin(&b, fmt, bs, 3, seq++);
        tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b), 0);   /* orphan */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 3, seq++);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 10, 0);                /* orphan */
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 11, 0);               /* opens ... */
        fx_put(f, &b);
        uint8_t data[64];
        fill_bytes(data, sizeof data, 77);
        /* A block that must go on with the open chunk starts a new one: one
         * of the two trailers is corrupt, neither is trusted. */
        tblk_begin(&b, fmt, bs, 3, seq++);
        tblk_sub(&b, FELIX_SUB_FIRST, data, 30, 0);               /* dropped with the open one */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 3, seq++);
        tblk_sub(&b, FELIX_SUB_LAST, data + 30, 20, 0);           /* its end: skipped */
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 12, 0);               /* opens ... */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 3, seq++);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 13, 0);               /* ... both dropped */
        tblk_sub(&b, FELIX_SUB_WHOLE, data, 5, 0);                /* a good one after */
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 1);
        CU_ASSERT_EQUAL(f->got[0].c.length, 5);
        CU_ASSERT_EQUAL(memcmp(f->got[0].bytes, data, 5), 0);
        struct rci_elink_stats e = fx_elink(f, 3);
        CU_ASSERT_EQUAL(e.err_orphan, 2);
        CU_ASSERT_EQUAL(e.chunks_incomplete, 2);
        CU_ASSERT_EQUAL(e.err_bad_start, 2);
        CU_ASSERT_EQUAL(e.chunks, 1);
        CU_ASSERT_EQUAL(fx_read(f), 5 * bs);
        fx_close(f);
    }
}

static void test_oversize_by_length(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct rci_card_params p = default_params(fmt, 16);
        p.max_chunk_size = 100;
        struct fx *f = fx_open_params(&p);
        f->release_in_sink = true;
        uint32_t bs = p.block_size;
        struct tblk b;
        unsigned seq = 0;
        tblk_begin(&b, fmt, bs, 4, seq++);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 101, 0);     /* too long by itself */
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 100, 0);     /* exactly the limit: fine */
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 60, 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 4, seq++);
        tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b), 0);   /* over: dropped */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 4, seq++);
        tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b), 0);   /* skipped */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 4, seq++);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 5, 0);                 /* skipped, not an orphan */
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 7, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, bs > 1024 ? 200 : 150, 0); /* FIRST alone too long */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 4, seq++);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 5, 0);                 /* skipped */
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 8, 0);
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 3);
        CU_ASSERT_EQUAL(f->got[0].c.length, 100);
        CU_ASSERT_EQUAL(f->got[1].c.length, 7);
        CU_ASSERT_EQUAL(f->got[2].c.length, 8);
        struct rci_elink_stats e = fx_elink(f, 4);
        CU_ASSERT_EQUAL(e.err_oversize, 3);
        CU_ASSERT_EQUAL(e.err_orphan, 0);
        CU_ASSERT_EQUAL(e.chunks_incomplete, 0);
        CU_ASSERT_EQUAL(fx_read(f), 5 * bs);
        fx_close(f);
    }
}

static void test_oversize_by_pieces(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct rci_card_params p = default_params(fmt, 16);
        p.max_chunk_pieces = 3;
        struct fx *f = fx_open_params(&p);
        f->release_in_sink = true;
        uint32_t bs = p.block_size;
        struct tblk b;
        unsigned seq = 0;
        /* 3 pieces: fits; 4 pieces: dropped at the LAST; 5: dropped at the 2nd MIDDLE */
        for (unsigned middles = 1; middles <= 3; middles++) {
            tblk_begin(&b, fmt, bs, 5, seq++);
            tblk_sub(&b, FELIX_SUB_FIRST, NULL, 10, 0);
            fx_put(f, &b);
            for (unsigned m = 0; m < middles; m++) {
                tblk_begin(&b, fmt, bs, 5, seq++);
                tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b), 0);
                fx_put(f, &b);
            }
            tblk_begin(&b, fmt, bs, 5, seq++);
            tblk_sub(&b, FELIX_SUB_LAST, NULL, 10, 0);
            fx_put(f, &b);
            rci_readout_decode(f->r);
            CU_ASSERT_EQUAL(fx_read(f), (uint64_t)seq * bs);
        }
        CU_ASSERT_EQUAL_FATAL(f->ngot, 1);
        CU_ASSERT_EQUAL(f->got[0].c.npieces, 3);
        struct rci_elink_stats e = fx_elink(f, 5);
        CU_ASSERT_EQUAL(e.err_oversize, 2);
        CU_ASSERT_EQUAL(e.err_orphan, 0);
        fx_close(f);
    }
}

static void test_timeout_oob_reserved(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        tblk_begin(&b, fmt, bs, 6, 0);
        tblk_sub(&b, FELIX_SUB_TIMEOUT, NULL, 0, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 9, 0);
        tblk_sub(&b, FELIX_SUB_OOB, NULL, 0, 0);        /* out-of-band: no payload */
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 9, 0);
        tblk_sub(&b, FELIX_SUB_RESERVED, NULL, 2, 0);   /* after FIRST: not a data subchunk */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 6, 1);
        tblk_sub(&b, FELIX_SUB_TIMEOUT, NULL, 0, 0);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 9, 0);       /* still the first data subchunk */
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 2);
        CU_ASSERT_EQUAL(f->got[1].c.length, 18);
        struct rci_elink_stats e = fx_elink(f, 6);
        CU_ASSERT_EQUAL(e.timeouts, 2);
        CU_ASSERT_EQUAL(e.oob, 1);
        CU_ASSERT_EQUAL(e.reserved, 1);
        CU_ASSERT_EQUAL(e.err_malformed, 0);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.timeouts, 2);
        CU_ASSERT_EQUAL(s.oob, 1);
        CU_ASSERT_EQUAL(fx_read(f), 2 * bs);
        fx_close(f);
    }
}

/* ---- releases ------------------------------------------------------------------ */

static void test_release_out_of_order(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        uint32_t bs = f->p.block_size;
        struct tblk b;
        tblk_begin(&b, fmt, bs, 1, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 10, 0);       /* a: block 0 */
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 10, 0);       /* b: blocks 0, 1 */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 1, 1);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 10, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 10, 0);       /* c: block 1 */
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 2, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 10, 0);       /* d: block 2 */
        fx_put(f, &b);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 4);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 4);                /* a, b, c, d */
        fx_release(f, 3);
        fx_release(f, 2);
        CU_ASSERT_EQUAL(fx_read(f), 0);
        fx_release(f, 0);
        CU_ASSERT_EQUAL(fx_read(f), 0);                   /* b still holds block 0 */
        CU_ASSERT_EQUAL(fx_stats(f).chunks_in_flight, 1);
        fx_release(f, 1);
        CU_ASSERT_EQUAL(fx_read(f), 3 * bs);
        CU_ASSERT_EQUAL(fx_stats(f).releases, 4);
        fx_close(f);
    }
}

static void test_bad_releases(void)
{
    struct rci_card_params p = default_params(FELIX_FMT_ABCE, 8);
    p.max_chunks_in_flight = 1;
    struct fx *f = fx_open_params(&p);
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 10, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 11, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);      /* one descriptor only */
    uint64_t old_key = f->got[0].c.key;
    fx_release(f, 0);
    rci_readout_release(f->r, old_key);                /* duplicate */
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);      /* the record is reused ... */
    CU_ASSERT_EQUAL_FATAL(f->ngot, 2);
    CU_ASSERT_NOT_EQUAL(f->got[1].c.key, old_key);   /* ... with a new key */
    rci_readout_release(f->r, old_key);                /* stale: must not free the new chunk */
    rci_readout_release(f->r, 0);
    rci_readout_release(f->r, 12345ull << 32 | 999);  /* index out of range */
    rci_readout_release(f->r, f->got[1].c.key ^ (1ull << 40));   /* wrong generation */
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.bad_releases, 5);
    CU_ASSERT_EQUAL(s.chunks_in_flight, 1);
    CU_ASSERT_EQUAL(fx_read(f), 0);                   /* the live chunk still holds the block */
    CU_ASSERT_EQUAL(f->got[1].c.length, 11);
    fx_release(f, 1);
    CU_ASSERT_EQUAL(fx_read(f), 1024);
    CU_ASSERT_EQUAL(fx_stats(f).releases, 2);
    fx_close(f);
}

/* rci_readout_release_burst: a burst longer than the 64 keys it handles at
 * once, with chunks spanning blocks and bad keys among the good ones. The
 * ring advances over exactly the blocks whose chunks are all released, and
 * every good key counts once. */
static void test_release_burst(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        uint32_t bs = f->p.block_size;
        struct tblk b;
        unsigned per_block = fmt == FELIX_FMT_ABCD ? 40 : 45;   /* 8-byte chunks, 3 blocks */
        for (unsigned blk = 0; blk < 3; blk++) {
            tblk_begin(&b, fmt, bs, 1, blk);
            if (blk > 0)
                tblk_sub(&b, FELIX_SUB_LAST, NULL, 8, 0);       /* ends the previous FIRST */
            for (unsigned i = 0; i < per_block; i++)
                tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 8, 0);
            if (blk < 2)
                tblk_sub(&b, FELIX_SUB_FIRST, NULL, 8, 0);      /* a chunk over two blocks */
            fx_put(f, &b);
        }
        unsigned n = rci_readout_decode(f->r);
        CU_ASSERT_EQUAL_FATAL(n, 3 * per_block + 2);
        CU_ASSERT_EQUAL_FATAL(f->ngot, n);
        /* Everything but the last block's chunks, with bad keys mixed in. */
        uint64_t keys[3 * 45 + 2 + 4];
        unsigned nkeys = 0, first_of_last = 2 * per_block + 2, good = 0;
        for (unsigned i = 0; i < first_of_last; i++) {
            if (i == 10)
                keys[nkeys++] = 0;
            if (i == 70)
                keys[nkeys++] = f->got[3].c.key;                   /* duplicate in the burst */
            keys[nkeys++] = f->got[i].c.key;
            f->got[i].released = true;
            good++;
        }
        keys[nkeys++] = 12345ull << 32 | 999;                       /* index out of range */
        keys[nkeys++] = f->got[first_of_last].c.key ^ (1ull << 40); /* wrong generation */
        CU_ASSERT_FATAL(nkeys > 64);
        rci_readout_release_burst(f->r, keys, nkeys);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.releases, good);
        CU_ASSERT_EQUAL(s.bad_releases, 4);
        CU_ASSERT_EQUAL(s.chunks_in_flight, n - good);
        CU_ASSERT_EQUAL(fx_read(f), 2 * bs);           /* block 2 is still held */
        rci_readout_release_burst(f->r, keys, 0);       /* nothing: no change */
        CU_ASSERT_EQUAL(fx_stats(f).releases, good);
        fx_release_all(f);
        CU_ASSERT_EQUAL(fx_read(f), 3 * bs);
        CU_ASSERT_TRUE(rci_readout_drained(f->r));
        fx_close(f);
    }
}

static void test_pool_backpressure(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct rci_card_params p = default_params(fmt, 8);
        p.max_chunks_in_flight = 4;
        struct fx *f = fx_open_params(&p);
        uint32_t bs = p.block_size;
        struct tblk b;
        unsigned n = 0;
        for (unsigned blk = 0; blk < 2; blk++) {
            tblk_begin(&b, fmt, bs, 1, blk);
            for (unsigned i = 0; i < 7; i++, n++)
                tblk_sub(&b, FELIX_SUB_WHOLE, NULL, n + 1, 0);
            fx_put(f, &b);
        }
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 4);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);  /* still empty: waits, no loss */
        CU_ASSERT_FALSE(rci_readout_drained(f->r));
        unsigned released = 0;
        while (f->ngot < n) {
            unsigned before = f->ngot;
            fx_release(f, released++);                /* oldest first */
            rci_readout_decode(f->r);
            CU_ASSERT_EQUAL_FATAL(f->ngot, before + 1);
        }
        for (unsigned i = 0; i < n; i++)
            CU_ASSERT_EQUAL(f->got[i].c.length, i + 1);   /* in order, each once */
        CU_ASSERT_TRUE(fx_stats(f).pool_empty_ns > 0);
        CU_ASSERT_EQUAL(fx_stats(f).chunks_dropped_pool, 0);
        fx_release_all(f);
        CU_ASSERT_EQUAL(fx_read(f), 2 * bs);
        CU_ASSERT_TRUE(rci_readout_drained(f->r));
        fx_close(f);
    }
}

/* Every descriptor held by an open chunk and none in flight: nothing would
 * ever free one, so the decoder drops the open chunks instead of hanging. */
static void test_pool_held_by_open_chunks(void)
{
    struct rci_card_params p = default_params(FELIX_FMT_ABCE, 16);
    p.max_chunks_in_flight = 2;
    struct fx *f = fx_open_params(&p);
    f->release_in_sink = true;
    struct tblk b;
    for (unsigned e = 1; e <= 3; e++) {
        tblk_begin(&b, FELIX_FMT_ABCE, 1024, e, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 10, 0);
        fx_put(f, &b);
    }
    for (unsigned e = 1; e <= 3; e++) {
        tblk_begin(&b, FELIX_FMT_ABCE, 1024, e, 1);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 10, 0);
        fx_put(f, &b);
    }
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 1);
    CU_ASSERT_EQUAL(f->got[0].c.elink, 3);
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.chunks_dropped_pool, 2);
    CU_ASSERT_EQUAL(s.err_orphan, 0);                 /* their LASTs were expected */
    CU_ASSERT_EQUAL(fx_read(f), 6 * 1024);
    fx_close(f);
}

/* count blocks of e-link elink (ABCE, 1 KiB), sequence numbers from first
 * on, each one WHOLE chunk of 5 bytes. */
static void put_whole_blocks(struct fx *f, unsigned elink, unsigned first, unsigned count)
{
    struct tblk b;
    for (unsigned i = first; i < first + count; i++) {
        tblk_begin(&b, FELIX_FMT_ABCE, 1024, elink, i);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
        fx_put(f, &b);
    }
}

/* A chunk whose blocks span more than the ring: its LAST could only come in a
 * block the card cannot write until the FIRST's block is back. The ring is
 * full, everything written is decoded, nothing is in flight: the open chunk's
 * head is copied out of the ring (spilled) so that the card can go on, and
 * the chunk is completed by its LAST with every byte. While a chunk in
 * flight shares the oldest block, the decoder waits for that release. */
static void test_open_chunk_holding_full_ring(void)
{
    struct fx *f = fx_open(FELIX_FMT_ABCE, 8);
    struct tblk b;
    uint8_t head[10], tail[10];
    for (unsigned i = 0; i < 10; i++) {
        head[i] = (uint8_t)(0xa0 + i);
        tail[i] = (uint8_t)(0x50 + i);
    }
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 4, 0);        /* in flight, shares block 0 */
    tblk_sub(&b, FELIX_SUB_FIRST, head, 10, 0);       /* its LAST is not in this ring */
    fx_put(f, &b);
    put_whole_blocks(f, 2, 0, 7);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 8);
    for (unsigned i = 1; i < 8; i++)
        fx_release(f, i);
    CU_ASSERT_EQUAL(fx_read(f), 0);                   /* the ring is full */
    CU_ASSERT_EQUAL(fx_stats(f).chunks_spilled, 0);   /* a release can still free it */
    fx_release(f, 0);
    CU_ASSERT_EQUAL(fx_read(f), 8 * 1024);            /* nothing else can: spilled */
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.chunks_spilled, 1);
    CU_ASSERT_EQUAL(s.bytes_spilled, 10);
    CU_ASSERT_EQUAL(s.chunks_dropped_ring, 0);
    CU_ASSERT_EQUAL(fx_elink(f, 1).chunks_spilled, 1);
    memset(f->base, 0xee, 1024);                      /* the card overwrites block 0 */
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 1);
    tblk_sub(&b, FELIX_SUB_LAST, tail, 10, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 3, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 10);
    CU_ASSERT_EQUAL_FATAL(f->got[8].c.length, 20);
    CU_ASSERT_EQUAL(f->got[8].c.npieces, 2);
    CU_ASSERT_EQUAL(f->got[8].pc[0].ring_offset, RCI_PIECE_SPILLED);
    CU_ASSERT_EQUAL(memcmp(f->got[8].bytes, head, 10), 0);
    CU_ASSERT_EQUAL(memcmp(f->got[8].bytes + 10, tail, 10), 0);
    CU_ASSERT_EQUAL(f->got[9].c.length, 3);
    s = fx_stats(f);
    CU_ASSERT_EQUAL(s.err_orphan, 0);
    CU_ASSERT_EQUAL(s.chunks_incomplete, 0);
    fx_release(f, 8);
    fx_release(f, 9);
    CU_ASSERT_EQUAL(fx_read(f), 9 * 1024);
    CU_ASSERT_TRUE(rci_readout_drained(f->r));
    fx_close(f);
}

/* A spilled chunk whose end came as an empty LAST lies wholly in the spill
 * area: held, it holds no ring block, so its ring can be empty (read =
 * written) while it is held. A block-stream subscriber therefore cannot
 * tell by its ring alone that nothing of its decoder is held (it also
 * waits for its views before a new connection may replace the decoder,
 * net/subscriber.c offer_stream_ring). */
static void test_spilled_chunk_holds_no_block(void)
{
    struct fx *f = fx_open(FELIX_FMT_ABCE, 8);
    f->release_in_sink = false;
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 0);
    tblk_sub(&b, FELIX_SUB_FIRST, NULL, 10, 0);
    fx_put(f, &b);
    put_whole_blocks(f, 2, 0, 7);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 7);
    fx_release_all(f);
    CU_ASSERT_EQUAL(fx_read(f), 8 * 1024);            /* the head spilled */
    CU_ASSERT_EQUAL(fx_stats(f).chunks_spilled, 1);
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 1);
    tblk_sub(&b, FELIX_SUB_LAST, NULL, 0, 0);         /* the end: no byte */
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 8);
    CU_ASSERT_EQUAL(f->got[7].c.length, 10);
    CU_ASSERT_EQUAL(f->got[7].c.npieces, 1);
    CU_ASSERT_EQUAL(f->got[7].pc[0].ring_offset, RCI_PIECE_SPILLED);
    CU_ASSERT_EQUAL(fx_read(f), 9 * 1024);            /* the ring is empty ... */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(f->ring), 9 * 1024);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_in_flight, 1);   /* ... with a chunk held */
    fx_release(f, 7);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_in_flight, 0);
    fx_close(f);
}

/* More e-links interleave chunks across blocks than the ring has blocks
 * (each e-link's block ends with a FIRST): every open chunk is spilled,
 * nothing is dropped, and each completes with its bytes. An open part longer
 * than a block (FIRST + MIDDLE) does not fit the spill slot: that one alone
 * is dropped, counted on its e-link. */
static void test_open_chunks_more_elinks_than_ring(void)
{
    struct fx *f = fx_open(FELIX_FMT_ABCE, 4);
    f->release_in_sink = true;
    struct tblk b;
    for (unsigned e = 0; e < 4; e++) {
        tblk_begin(&b, FELIX_FMT_ABCE, 1024, e, 0);
        uint32_t len = tblk_room(&b) - 4;
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, len, 0);  /* fills the block */
        fx_put(f, &b);
    }
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
    CU_ASSERT_EQUAL(fx_read(f), 4 * 1024);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_spilled, 4);
    /* e-link 0 continues with a MIDDLE: its open part is now 2 blocks long */
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 0, 1);
    tblk_sub(&b, FELIX_SUB_MIDDLE, NULL, tblk_room(&b) - 4, 0);
    fx_put(f, &b);
    for (unsigned e = 1; e < 4; e++) {
        tblk_begin(&b, FELIX_FMT_ABCE, 1024, e, 1);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 7, 0);
        fx_put(f, &b);
    }
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 3);
    for (unsigned i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(f->got[i].c.length, 1012 + 7);
    /* Full again, held only by e-link 0's 2-block open part: dropped. */
    CU_ASSERT_EQUAL(fx_read(f), 8 * 1024);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_dropped_ring, 1);
    CU_ASSERT_EQUAL(fx_elink(f, 0).chunks_dropped_ring, 1);
    CU_ASSERT_EQUAL(fx_elink(f, 0).chunks_spilled, 1);
    CU_ASSERT_EQUAL(fx_elink(f, 1).chunks_dropped_ring, 0);
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 0, 2);
    tblk_sub(&b, FELIX_SUB_LAST, NULL, 5, 0);         /* the dropped chunk's end */
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 2, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL(fx_stats(f).err_orphan, 0);
    CU_ASSERT_TRUE(rci_readout_drained(f->r));
    fx_close(f);
}

/* A real card moves CURRENT_ADDRESS per TLP, so the written position may end
 * inside a block the card is still writing: that ring is not full yet, and
 * the open chunk is kept until the card has really filled it. */
static void test_open_chunk_ring_filling_by_tlp(void)
{
    struct fx *f = fx_open(FELIX_FMT_ABCE, 8);
    f->release_in_sink = true;
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 1, 0);
    tblk_sub(&b, FELIX_SUB_FIRST, NULL, 10, 0);
    fx_put(f, &b);
    put_whole_blocks(f, 2, 0, 6);
    tblk_begin(&b, FELIX_FMT_ABCE, 1024, 2, 6);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 5, 0);
    memcpy(f->base + f->wpos, b.buf, b.size);        /* the last block, one TLP short */
    f->wpos += b.size;
    rci_dma_ring_note_written(f->ring, f->wpos - 256);
    CU_ASSERT_EQUAL(fx_read(f), 0);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_spilled, 0);
    rci_dma_ring_note_written(f->ring, f->wpos);      /* the card filled the ring */
    CU_ASSERT_EQUAL(fx_read(f), 8 * 1024);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_spilled, 1);
    CU_ASSERT_EQUAL(fx_stats(f).chunks_dropped_ring, 0);
    CU_ASSERT_EQUAL(f->ngot, 7);
    fx_close(f);
}

static void test_sink_again(void)
{
    FOR_EACH_FORMAT(fmt) {
        struct fx *f = fx_open(fmt, 8);
        f->release_in_sink = true;
        uint32_t bs = f->p.block_size;
        struct tblk b;
        tblk_begin(&b, fmt, bs, 1, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 1, 0);
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 2, 0);
        tblk_sub(&b, FELIX_SUB_FIRST, NULL, 3, 0);
        fx_put(f, &b);
        tblk_begin(&b, fmt, bs, 1, 1);
        tblk_sub(&b, FELIX_SUB_LAST, NULL, 4, 0);
        fx_put(f, &b);
        f->again = 3;
        /* The first pass decodes both blocks (its budget: a quarter of the
         * ring) and offers the burst of three at its end; the decode goes on
         * with a second pass, which offers it again first: two refusals. */
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        CU_ASSERT_EQUAL(f->nagain_keys, 2);
        CU_ASSERT_FALSE(rci_readout_drained(f->r));
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
        CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
        CU_ASSERT_EQUAL_FATAL(f->ngot, 3);
        CU_ASSERT_EQUAL(f->got[0].c.length, 1);
        CU_ASSERT_EQUAL(f->got[1].c.length, 2);
        CU_ASSERT_EQUAL(f->got[2].c.length, 7);
        /* the same chunk was offered each time */
        CU_ASSERT_EQUAL(f->nagain_keys, 3);
        CU_ASSERT_EQUAL(f->again_keys[1], f->again_keys[0]);
        CU_ASSERT_EQUAL(f->again_keys[2], f->again_keys[0]);
        CU_ASSERT_EQUAL(f->got[0].c.key, f->again_keys[0]);
        struct rci_readout_stats s = fx_stats(f);
        CU_ASSERT_EQUAL(s.sink_again, 3);
        CU_ASSERT_EQUAL(s.chunks, 3);
        CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
        CU_ASSERT_EQUAL(fx_read(f), 2 * bs);
        CU_ASSERT_TRUE(rci_readout_drained(f->r));
        fx_close(f);
    }
}

/* A sink that takes at most `take` chunks of each burst, releasing them at once. */
struct partial {
    struct fx *f;
    unsigned take, calls, max_n, got;
    uint32_t lengths[64];
};

static unsigned partial_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct partial *p = ctx;
    p->calls++;
    p->max_n = n > p->max_n ? n : p->max_n;
    unsigned took = n < p->take ? n : p->take;
    for (unsigned i = 0; i < took; i++) {
        CU_ASSERT_FATAL(p->got < 64);
        p->lengths[p->got++] = chunks[i]->length;
        rci_readout_release(p->f->r, chunks[i]->key);
    }
    return took;
}

/* Bursts: 40 chunks in one block reach the sink in bursts of at most
 * RCI_READOUT_BURST; what a burst's sink leaves is offered again first, in
 * order, and nothing new is decoded meanwhile. */
static void test_sink_takes_part_of_a_burst(void)
{
    struct rci_card_params prm = default_params(FELIX_FMT_C0CE, 8);
    struct partial p = { .take = 7 };
    p.f = fx_open_params(&prm);
    struct fx *f = p.f;
    rci_readout_destroy(f->r);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_readout_create(&prm, f->ring, NULL, partial_sink, &p, &f->r, err,
                                            sizeof err), 0);
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_C0CE, prm.block_size, 2, 0);
    for (uint32_t i = 1; i <= 40; i++)
        tblk_sub(&b, FELIX_SUB_WHOLE, NULL, i, 0);
    fx_put(f, &b);
    unsigned emitted = 0;
    for (int i = 0; i < 20 && emitted < 40; i++)
        emitted += rci_readout_decode(f->r);
    CU_ASSERT_EQUAL(emitted, 40);
    CU_ASSERT_EQUAL_FATAL(p.got, 40);
    for (uint32_t i = 0; i < 40; i++)
        CU_ASSERT_EQUAL(p.lengths[i], i + 1);
    CU_ASSERT_EQUAL(p.max_n, RCI_READOUT_BURST);
    struct rci_readout_stats s = fx_stats(f);
    /* Offers of 32, 25, 18, 11 (refused in part), 4 (all taken, decoding goes
     * on), 8 (refused in part), 1: five refusals in seven calls. */
    CU_ASSERT_EQUAL(s.sink_again, 5);
    CU_ASSERT_EQUAL(p.calls, 7);
    CU_ASSERT_EQUAL(s.chunks, 40);
    CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
    CU_ASSERT_EQUAL(s.sink_errors, 0);
    CU_ASSERT_TRUE(rci_readout_drained(f->r));
    fx_close(f);
}

static void test_sink_error_drops(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    f->release_in_sink = true;
    f->fail = 1;
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_C0CE, 4096, 1, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 1, 0);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 2, 0);
    fx_put(f, &b);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 1);
    CU_ASSERT_EQUAL(f->got[0].c.length, 2);
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.sink_errors, 1);
    CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
    CU_ASSERT_EQUAL(fx_read(f), 4096);
    fx_close(f);
}

static void test_create_validation(void)
{
    struct rci_dma_ring *ring;
    char err[256];
    struct rci_dma_ring_params rp = { .size = 8 * 4096, .unit_size = 4096, .backend = RCI_MEM_ANON };
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&rp, &ring, err, sizeof err), 0);
    struct rci_readout *r = NULL;
    struct rci_card_params p = default_params(FELIX_FMT_C0CE, 8);
    struct rci_card_params bad = p;
    bad.block_size = 3000;
    CU_ASSERT_EQUAL(rci_readout_create(&bad, ring, NULL, record_sink, NULL, &r, err, sizeof err),
                    -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "card.3"));
    bad = p;
    bad.ring_size = 7 * 4096;
    CU_ASSERT_EQUAL(rci_readout_create(&bad, ring, NULL, record_sink, NULL, &r, err, sizeof err),
                    -EINVAL);
    bad = p;
    bad.block_size = 1024;
    bad.block_format = FELIX_FMT_ABCE;
    bad.ring_size = 8 * 4096;
    /* 1 KiB blocks in a ring of 4 KiB units cannot be taken one by one */
    CU_ASSERT_EQUAL(rci_readout_create(&bad, ring, NULL, record_sink, NULL, &r, err, sizeof err),
                    -EINVAL);
    bad = p;
    bad.max_chunk_pieces = 0;
    CU_ASSERT_EQUAL(rci_readout_create(&bad, ring, NULL, record_sink, NULL, &r, err, sizeof err),
                    -EINVAL);
    CU_ASSERT_EQUAL(rci_readout_create(&p, ring, NULL, NULL, NULL, &r, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_EQUAL(rci_readout_create(&p, ring, NULL, record_sink, NULL, &r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_readout_start(r), -EINVAL);    /* no card */
    CU_ASSERT_EQUAL(rci_readout_wait_drained(r, 1000), -EINVAL);
    rci_readout_destroy(r);
    rci_dma_ring_destroy(ring);
}

/* ---- randomized: many chunks, interleaved e-links, random release order ------ */

/* Each e-link generates its own block stream like the firmware does (chunks
 * in order, long ones split FIRST / MIDDLE.. / LAST, blocks sometimes closed
 * early); the ring writer interleaves the streams at random. */

#define RND_ELINKS 8
#define RND_HELD   96
#define RND_FIFO   8192u
/* A chunk spans at most 5 blocks (3 block sizes), so at most 4 blocks of
 * every e-link are still to come while its chunk pins the read pointer. */
#define RND_RESERVE (RND_ELINKS * 4 + 2)

struct rnd_expect { uint32_t len, flags; uint64_t seq; };
struct rnd_held { const struct rci_chunk *c; uint64_t seq; };

struct rnd_elink {
    unsigned seq;                       /* next block's sequence number */
    bool in_chunk;                      /* a chunk continues in the next block */
    uint32_t len, at;                   /* its length and bytes written so far */
    uint64_t chunk_seq;                 /* chunks started on this e-link */
    uint64_t first_pos;                 /* ring position of its FIRST */
    struct rnd_expect *fifo;            /* chunks started, not yet emitted */
    unsigned head, tail;
};

struct rnd {
    struct fx *f;
    uint64_t rng;
    struct rnd_elink el[RND_ELINKS];
    uint64_t started, target;           /* chunks started / to start */
    uint32_t max_len;
    struct rnd_held held[RND_HELD];     /* accepted chunks waiting for a release */
    unsigned nheld;
    uint64_t emitted, errors;
};

static uint64_t rnd_next(struct rnd *t)
{
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return t->rng;
}

static uint8_t rnd_byte(unsigned elink, uint64_t seq, uint32_t i)
{
    uint64_t x = (seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)elink << 56) ^ (i * 0xff51afd7ull);
    return (uint8_t)(x ^ (x >> 29) ^ (x >> 41));
}

/* Every byte of the chunk, read in place through its pieces. */
static bool rnd_bytes_ok(struct rnd *t, const struct rci_chunk *c, uint64_t seq)
{
    const uint8_t *base = rci_dma_ring_addr(t->f->ring);
    uint32_t at = 0;
    for (uint32_t p = 0; p < c->npieces; p++) {
        const struct rci_piece *pc = &c->pieces[p];
        if (pc->addr != base + pc->ring_offset || pc->ring_offset + pc->len > t->f->p.ring_size)
            return false;
        for (uint32_t i = 0; i < pc->len; i++)
            if (pc->addr[i] != rnd_byte(c->elink, seq, at + i))
                return false;
        at += pc->len;
    }
    return at == c->length;
}

/* Checked again at release: a block given back too early would have been
 * overwritten by the writer by then. */
static void rnd_check(struct rnd *t, const struct rnd_held *h)
{
    if (!rnd_bytes_ok(t, h->c, h->seq))
        t->errors++;
}

static void rnd_release(struct rnd *t, const struct rnd_held *h)
{
    rnd_check(t, h);
    rci_readout_release(t->f->r, h->c->key);
}

/* The sink: check the chunk against what was written, then release it at
 * once or hold it in a small set released in random order. */
static int rnd_one(void *ctx, const struct rci_chunk *c)
{
    struct rnd *t = ctx;
    t->emitted++;
    if (c->elink >= RND_ELINKS || t->el[c->elink].head == t->el[c->elink].tail) {
        t->errors++;
        return 0;
    }
    struct rnd_elink *el = &t->el[c->elink];
    const struct rnd_expect *x = &el->fifo[el->head++ % RND_FIFO];
    if (c->length != x->len || c->flags != x->flags || c->tag != TAG_BASE + c->elink)
        t->errors++;
    struct rnd_held h = { .c = c, .seq = x->seq };
    if (t->nheld == RND_HELD) {
        unsigned victim = (unsigned)(rnd_next(t) % RND_HELD);
        rnd_release(t, &t->held[victim]);
        t->held[victim] = h;
    } else if (rnd_next(t) % 4 == 0) {
        rnd_release(t, &h);
    } else {
        t->held[t->nheld++] = h;
    }
    return 0;
}

static unsigned rnd_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct rnd *t = ctx;
    return rci_readout_sink_each(t->f->r, rnd_one, t, chunks, n);
}

/* The held chunks in random order, given back in bursts of random length
 * (rci_readout_release_burst) or one by one. */
static void rnd_release_all(struct rnd *t)
{
    uint64_t keys[RND_HELD];
    unsigned nkeys = 0, burst = 1 + (unsigned)(rnd_next(t) % RND_HELD);
    bool one_by_one = rnd_next(t) % 3 == 0;
    while (t->nheld > 0) {
        unsigned i = (unsigned)(rnd_next(t) % t->nheld);
        const struct rnd_held *h = &t->held[i];
        rnd_check(t, h);
        if (one_by_one)
            rci_readout_release(t->f->r, h->c->key);
        else
            keys[nkeys++] = h->c->key;
        t->held[i] = t->held[--t->nheld];
        if (nkeys == burst || (t->nheld == 0 && nkeys > 0)) {
            rci_readout_release_burst(t->f->r, keys, nkeys);
            nkeys = 0;
        }
    }
}

static uint64_t rnd_free_blocks(struct rnd *t)
{
    uint64_t used = t->f->wpos - rci_dma_ring_read_pos(t->f->ring);
    return (t->f->p.ring_size - used) / t->f->p.block_size;
}

static unsigned rnd_flags(struct rnd *t)
{
    unsigned v = (unsigned)(rnd_next(t) % 64);
    unsigned f = v < 4 ? (1u << v) : 0;
    return t->f->p.block_format == FELIX_FMT_ABCD ? f & ~RCI_CHUNK_BUSY : f;
}

/* Append the next piece of the e-link's current chunk to the block. */
static void rnd_write_piece(struct rnd *t, struct rnd_elink *el, unsigned e, struct tblk *b,
                            bool first)
{
    static uint8_t piece[FELIX_MAX_BLOCK];
    struct rnd_expect *x = &el->fifo[(el->tail - 1) % RND_FIFO];
    uint32_t room = tblk_room(b), left = el->len - el->at;
    uint32_t n = left <= room ? left : room;
    for (uint32_t i = 0; i < n; i++)
        piece[i] = rnd_byte(e, x->seq, el->at + i);
    unsigned fl = rnd_flags(t);
    x->flags |= fl;
    unsigned type = left <= room ? (first ? FELIX_SUB_WHOLE : FELIX_SUB_LAST)
                                 : (first ? FELIX_SUB_FIRST : FELIX_SUB_MIDDLE);
    tblk_sub(b, type, piece, n, fl);
    el->at += n;
    el->in_chunk = el->at < el->len;
    if (type == FELIX_SUB_FIRST)
        el->first_pos = t->f->wpos;
}

static uint32_t rnd_chunk_len(struct rnd *t)
{
    uint64_t r = rnd_next(t);
    return (r & 3) == 0 ? (uint32_t)(r >> 8) % (t->max_len + 1)   /* any size */
                        : (uint32_t)(r >> 8) % 64;                /* mostly small */
}

/* Build e-link e's next block: the rest of its open chunk, then new chunks
 * until the block is full or closed early. */
static void rnd_next_block(struct rnd *t, unsigned e, struct tblk *b)
{
    struct rnd_elink *el = &t->el[e];
    tblk_begin(b, t->f->p.block_format, t->f->p.block_size, e, el->seq++);
    if (el->in_chunk) {
        rnd_write_piece(t, el, e, b, false);
        if (el->in_chunk)
            return;                       /* a MIDDLE fills the block alone */
    }
    while (t->started < t->target && rnd_next(t) % 8 != 0) {
        uint32_t room = tblk_room(b);
        if (room < 8 && (room == 0 || b->pos > FELIX_HEADER_BYTES))
            return;                       /* too little left to bother */
        struct rnd_expect *x = &el->fifo[el->tail++ % RND_FIFO];
        CU_ASSERT_FATAL(el->tail - el->head <= RND_FIFO);
        *x = (struct rnd_expect){ .len = rnd_chunk_len(t), .seq = el->chunk_seq++ };
        el->len = x->len;
        el->at = 0;
        t->started++;
        rnd_write_piece(t, el, e, b, true);
        if (el->in_chunk)
            return;                       /* a FIRST ends its block */
    }
}

/* Which e-link writes next: any, unless space is short; then the one whose
 * open chunk pins the read pointer, so that the chunk completes. */
static int rnd_pick_elink(struct rnd *t)
{
    if (rnd_free_blocks(t) < RND_RESERVE) {
        rci_readout_decode(t->f->r);
        rnd_release_all(t);
        rci_readout_decode(t->f->r);
    }
    int oldest = -1;
    for (unsigned e = 0; e < RND_ELINKS; e++)
        if (t->el[e].in_chunk && (oldest < 0 || t->el[e].first_pos < t->el[oldest].first_pos))
            oldest = (int)e;
    if (rnd_free_blocks(t) < RND_RESERVE && oldest >= 0)
        return oldest;
    if (t->started < t->target)
        return (int)(rnd_next(t) % RND_ELINKS);
    return oldest;                        /* -1: every chunk is written */
}

static void run_randomized(enum felix_format fmt, unsigned nchunks, uint64_t seed)
{
    struct rci_card_params p = default_params(fmt, fmt == FELIX_FMT_C0CE ? 64 : 192);
    p.max_chunks_in_flight = RND_HELD + RND_ELINKS + 8;
    struct rnd *t = calloc(1, sizeof *t);
    CU_ASSERT_FATAL(t != NULL);
    t->f = fx_open_params(&p);
    /* fx_open_params wired the recording sink: use this test's instead. */
    rci_readout_destroy(t->f->r);
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_readout_create(&p, t->f->ring, NULL, rnd_sink, t, &t->f->r,
                                            err, sizeof err), 0);
    t->rng = seed;
    t->target = nchunks;
    t->max_len = 3 * p.block_size;
    for (unsigned e = 0; e < RND_ELINKS; e++) {
        t->el[e].fifo = calloc(RND_FIFO, sizeof(struct rnd_expect));
        t->el[e].seq = (unsigned)(rnd_next(t) % 32);
    }
    static struct tblk b;
    for (int e; (e = rnd_pick_elink(t)) >= 0;) {
        rnd_next_block(t, (unsigned)e, &b);
        fx_put(t->f, &b);
        if (rnd_next(t) % 8 == 0)
            rci_readout_decode(t->f->r);
    }
    rci_readout_decode(t->f->r);
    rnd_release_all(t);
    uint64_t read = fx_read(t->f);

    struct rci_readout_stats s = fx_stats(t->f);
    CU_ASSERT_EQUAL(t->errors, 0);
    CU_ASSERT_EQUAL(t->emitted, nchunks);
    CU_ASSERT_EQUAL(s.chunks, nchunks);
    CU_ASSERT_EQUAL(s.releases, nchunks);
    CU_ASSERT_EQUAL(s.bad_releases + s.bad_header + s.err_malformed + s.err_seq_gap +
                    s.err_orphan + s.err_oversize + s.chunks_incomplete, 0);
    CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
    CU_ASSERT_EQUAL(read, t->f->wpos);
    CU_ASSERT_TRUE(rci_readout_drained(t->f->r));
    for (unsigned e = 0; e < RND_ELINKS; e++) {
        CU_ASSERT_EQUAL(t->el[e].head, t->el[e].tail);
        free(t->el[e].fifo);
    }
    fx_close(t->f);
    free(t);
}

static void test_randomized(void)
{
    run_randomized(FELIX_FMT_ABCD, 40000, 0x1234567ull);
    run_randomized(FELIX_FMT_ABCE, 30000, 0xfeedbeefull);
    run_randomized(FELIX_FMT_C0CE, 40000, 0xc0ce5eedull);
}

/* ---- corrupt trailers: every single-bit flip ------------------------------------ */

/* A stream of hand-made blocks over two e-links (whole, first/middle/last,
 * padding, null filler), each chunk with its own bytes. Every bit of every
 * trailer word (null filler included) is flipped in turn and the stream
 * decoded afresh; a delivered chunk is wrong when no chunk of the original
 * has its tag, length and bytes. Wrong chunks only of the kinds no check can
 * see are allowed (readout/README.md, "Corrupt trailers"): a FIRST turned
 * into a WHOLE (the chunk's head delivered alone), a length moved within its
 * own padding (zero bytes added) or lowered over zero payload bytes, a length
 * raised so that the subchunk swallows whole subchunks before it (the chain
 * still tiles the block). */
#define FLIP_BLOCKS 6
#define FLIP_MAX_CHUNKS 16

struct flip_stream {
    enum felix_format fmt;
    uint32_t bs;
    unsigned tbytes;
    uint8_t blk[FLIP_BLOCKS][1024];
    struct { unsigned type; uint32_t len; uint32_t pos; } sub[FLIP_BLOCKS][8];
    unsigned nsub[FLIP_BLOCKS];
    uint32_t data_end[FLIP_BLOCKS];   /* where the null filler starts */
};

struct flip_ref {
    unsigned n;
    uint64_t tag[FLIP_MAX_CHUNKS];
    uint32_t len[FLIP_MAX_CHUNKS];
    uint8_t bytes[FLIP_MAX_CHUNKS][2048];
};

static void flip_sub(struct flip_stream *st, struct tblk *b, unsigned i, unsigned type,
                     const uint8_t *data, uint32_t len)
{
    tblk_sub(b, type, data, len, 0);
    unsigned k = st->nsub[i]++;
    st->sub[i][k].type = type;
    st->sub[i][k].len = len;
    st->sub[i][k].pos = b->pos - b->tbytes;
}

static void flip_build(struct flip_stream *st, enum felix_format fmt)
{
    static uint8_t data[8192];   /* every chunk's bytes taken from its own place */
    memset(st, 0, sizeof *st);
    st->fmt = fmt;
    st->bs = 1024;
    st->tbytes = fmt == FELIX_FMT_ABCD ? 2 : 4;
    fill_bytes(data, sizeof data, 11);
    struct tblk b;
    unsigned seq1 = 0, seq2 = 0;
    uint32_t room, at = 0;
    for (unsigned i = 0; i < FLIP_BLOCKS; i++) {
        static const unsigned elink_of[FLIP_BLOCKS] = { 1, 2, 1, 1, 2, 2 };
        unsigned elink = elink_of[i];
        tblk_begin(&b, fmt, 1024, elink, elink == 1 ? seq1++ : seq2++);
        switch (i) {
        case 0:
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 10);
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 7);
            room = tblk_room(&b);
            flip_sub(st, &b, i, FELIX_SUB_FIRST, data + (at += 100), room);
            at += room;
            break;
        case 1:
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 33);
            break;
        case 2:
            room = tblk_room(&b);
            flip_sub(st, &b, i, FELIX_SUB_MIDDLE, data + at, room);
            at += room;
            break;
        case 3:
            flip_sub(st, &b, i, FELIX_SUB_LAST, data + at, 21);
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 5);
            break;
        case 4:
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 3);
            room = tblk_room(&b) - 40;   /* not a multiple of the trailer size */
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), room - 1);
            at += room;
            break;
        default:
            flip_sub(st, &b, i, FELIX_SUB_WHOLE, data + (at += 100), 1);
            room = tblk_room(&b);
            flip_sub(st, &b, i, FELIX_SUB_FIRST, data + (at += 100), room);
            break;
        }
        st->data_end[i] = b.pos;
        memcpy(st->blk[i], b.buf, 1024);
    }
}

static struct fx *flip_decode(const struct flip_stream *st, const uint8_t blk[][1024])
{
    struct rci_card_params p = default_params(st->fmt, 8);
    p.block_size = 1024;
    p.ring_size = 8 * 1024;
    p.max_chunks_in_flight = 16;
    struct fx *f = fx_open_params(&p);
    f->release_in_sink = true;
    for (unsigned i = 0; i < FLIP_BLOCKS; i++) {
        memcpy(f->base + f->wpos, blk[i], 1024);
        f->wpos += 1024;
    }
    rci_dma_ring_note_written(f->ring, f->wpos);
    rci_readout_decode(f->r);
    return f;
}

static bool flip_matches(const struct flip_ref *ref, const struct got *g)
{
    for (unsigned i = 0; i < ref->n; i++)
        if (ref->tag[i] == g->c.tag && ref->len[i] == g->c.length &&
            memcmp(ref->bytes[i], g->bytes, g->c.length) == 0)
            return true;
    return false;
}

/* pos is where a subchunk of the block starts (or the header ends). */
static bool flip_is_boundary(const struct flip_stream *st, unsigned blk, uint32_t pos)
{
    if (pos == FELIX_HEADER_BYTES)
        return true;
    for (unsigned k = 0; k < st->nsub[blk]; k++)
        if (st->sub[blk][k].pos + st->tbytes == pos)
            return true;
    return false;
}

/* The kinds of corruption no check can see (see the comment above). */
static bool flip_undetectable(const struct flip_stream *st, unsigned blk, uint32_t slot,
                              uint32_t bit)
{
    unsigned T = st->tbytes;
    unsigned type_shift = T == 2 ? FELIX_T16_TYPE_SHIFT : FELIX_T32_TYPE_SHIFT;
    uint32_t len_mask = T == 2 ? FELIX_T16_LEN_MASK : FELIX_T32_LEN_MASK;
    for (unsigned k = 0; k < st->nsub[blk]; k++) {
        if (st->sub[blk][k].pos != slot)
            continue;
        unsigned type = st->sub[blk][k].type;
        uint32_t len = st->sub[blk][k].len;
        if (bit >= type_shift)
            return type == FELIX_SUB_FIRST && (type ^ (1u << (bit - type_shift))) == FELIX_SUB_WHOLE;
        if ((1u << bit) & ~len_mask)
            return false;
        uint32_t nlen = len ^ (1u << bit);
        uint32_t padded = (len + T - 1) / T * T;
        uint32_t nstart = slot - (nlen + T - 1) / T * T;
        if (nlen > len)   /* into its padding, or swallowing whole subchunks before it */
            return nlen <= padded || flip_is_boundary(st, blk, nstart);
        const uint8_t *payload = st->blk[blk] + slot - padded;
        for (uint32_t i = nlen; i < len; i++)
            if (payload[i] != 0)
                return false;
        return (nlen + T - 1) / T * T == padded;
    }
    return false;
}

static void run_flips(enum felix_format fmt, unsigned *wrong_total, unsigned *flips_total)
{
    static struct flip_stream st;
    static struct flip_ref ref;
    static uint8_t work[FLIP_BLOCKS][1024];
    flip_build(&st, fmt);
    struct fx *f = flip_decode(&st, st.blk);
    CU_ASSERT_EQUAL_FATAL(f->ngot, 8);   /* the last FIRST stays open */
    CU_ASSERT_EQUAL(fx_stats(f).err_malformed, 0);
    ref.n = f->ngot;
    for (unsigned i = 0; i < f->ngot; i++) {
        ref.tag[i] = f->got[i].c.tag;
        ref.len[i] = f->got[i].c.length;
        CU_ASSERT_FATAL(ref.len[i] <= sizeof ref.bytes[i]);
        memcpy(ref.bytes[i], f->got[i].bytes, ref.len[i]);
    }
    fx_close(f);
    unsigned T = st.tbytes;
    for (unsigned b = 0; b < FLIP_BLOCKS; b++) {
        /* Trailer words: every subchunk's, and the null filler to the end. */
        uint32_t slots[600];
        unsigned nslots = 0;
        for (unsigned k = 0; k < st.nsub[b]; k++)
            slots[nslots++] = st.sub[b][k].pos;
        for (uint32_t pos = st.data_end[b]; pos < 1024; pos += T)
            slots[nslots++] = pos;
        for (unsigned si = 0; si < nslots; si++) {
            for (uint32_t bit = 0; bit < 8 * T; bit++) {
                memcpy(work, st.blk, sizeof work);
                work[b][slots[si] + bit / 8] ^= (uint8_t)(1u << (bit % 8));
                struct fx *g = flip_decode(&st, (const uint8_t(*)[1024])work);
                (*flips_total)++;
                for (unsigned i = 0; i < g->ngot; i++) {
                    if (flip_matches(&ref, &g->got[i]))
                        continue;
                    (*wrong_total)++;
                    bool allowed = flip_undetectable(&st, b, slots[si], bit);
                    if (!allowed)
                        fprintf(stderr, "\n  fmt %d block %u slot %u bit %u: wrong chunk tag 0x%llx"
                                " length %u delivered", (int)fmt, b, slots[si], bit,
                                (unsigned long long)g->got[i].c.tag, g->got[i].c.length);
                    CU_ASSERT(allowed);
                }
                fx_close(g);
            }
        }
    }
}

static void test_trailer_bit_flips(void)
{
    unsigned wrong = 0, flips = 0;
    FOR_EACH_FORMAT(fmt)
        run_flips(fmt, &wrong, &flips);
    printf("\n  %u single-bit trailer flips: %u wrong chunks delivered as good ", flips, wrong);
    CU_ASSERT(flips > 0);
}

/* ---- block tap (rci_readout_set_block_tap) -------------------------------- */

struct tap_rec {
    uint32_t blocks[64];
    uint64_t offsets[64];
    unsigned n;
    bool room;
    unsigned room_asked;
};

static bool tap_room(void *ctx)
{
    struct tap_rec *t = ctx;
    t->room_asked++;
    return t->room;
}

static void tap_take(void *ctx, uint32_t block, uint64_t offset, uint32_t len)
{
    struct tap_rec *t = ctx;
    CU_ASSERT_FATAL(t->n < 64);
    CU_ASSERT_EQUAL(len, 4096);
    t->blocks[t->n] = block;
    t->offsets[t->n++] = offset;
}

static void put_whole(struct fx *f, unsigned elink, unsigned seq)
{
    struct tblk b;
    tblk_begin(&b, FELIX_FMT_C0CE, f->p.block_size, elink, seq);
    tblk_sub(&b, FELIX_SUB_WHOLE, NULL, 100, 0);
    fx_put(f, &b);
}

/* The tap's reference holds a block after its chunks are released; given
 * back out of order, the ring advances only once the oldest is back. */
static void test_tap_holds_ring(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    uint32_t bs = f->p.block_size;
    struct tap_rec t = { .room = true };
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, tap_room, tap_take, &t), 0);
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, tap_room, tap_take, &t), -EBUSY);
    for (unsigned i = 0; i < 3; i++)
        put_whole(f, 1, i);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 3);
    CU_ASSERT_EQUAL_FATAL(t.n, 3);
    for (unsigned i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(t.blocks[i], i);
        CU_ASSERT_EQUAL(t.offsets[i], (uint64_t)i * bs);
    }
    fx_release_all(f);
    CU_ASSERT_EQUAL(fx_read(f), 0);                  /* chunks gone, stream refs held */
    CU_ASSERT_FALSE(rci_readout_drained(f->r));
    rci_readout_release_block(f->r, 2);
    rci_readout_release_block(f->r, 1);
    CU_ASSERT_EQUAL(fx_read(f), 0);                  /* block 0 still held */
    rci_readout_release_block(f->r, 0);
    CU_ASSERT_EQUAL(fx_read(f), 3 * bs);
    CU_ASSERT_TRUE(rci_readout_drained(f->r));
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.tap_blocks, 3);
    CU_ASSERT_EQUAL(s.tap_releases, 3);
    CU_ASSERT_EQUAL(s.bad_tap_releases, 0);
    fx_close(f);
}

/* Stream released first, chunks later: the chunk is then what holds. */
static void test_tap_released_before_chunks(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    struct tap_rec t = { .room = true };
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, NULL, tap_take, &t), 0);
    put_whole(f, 1, 0);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL_FATAL(t.n, 1);
    rci_readout_release_block(f->r, t.blocks[0]);
    CU_ASSERT_EQUAL(fx_read(f), 0);
    fx_release_all(f);
    CU_ASSERT_EQUAL(fx_read(f), f->p.block_size);
    fx_close(f);
}

/* Released from inside the tap call (a consumer done at once). */
static struct fx *tap_now_fx;
static void tap_release_now(void *ctx, uint32_t block, uint64_t offset, uint32_t len)
{
    tap_take(ctx, block, offset, len);
    rci_readout_release_block(tap_now_fx->r, block);
}

static void test_tap_released_in_call(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    f->release_in_sink = true;
    tap_now_fx = f;
    struct tap_rec t = { .room = true };
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, NULL, tap_release_now, &t), 0);
    for (unsigned i = 0; i < 20; i++) {   /* more than the ring: it must keep moving */
        put_whole(f, 2, i);
        CU_ASSERT_EQUAL(fx_read(f), (i + 1ull) * f->p.block_size);
    }
    CU_ASSERT_EQUAL(t.n, 20);
    CU_ASSERT_TRUE(rci_readout_drained(f->r));
    fx_close(f);
}

/* No room in the tap: nothing taken (a stall, counted), resumed later in
 * order; bad blocks are tapped too (the stream is raw). */
static void test_tap_room_stalls(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    f->release_in_sink = true;
    struct tap_rec t = { .room = false };
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, tap_room, tap_take, &t), 0);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
    CU_ASSERT_EQUAL(t.room_asked, 0);                /* nothing written: not asked */
    put_whole(f, 1, 0);
    struct tblk b;
    tblk_begin_marker(&b, FELIX_FMT_C0CE, f->p.block_size, 1, 1, 0x1234);   /* bad marker */
    fx_put(f, &b);
    put_whole(f, 1, 2);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 0);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_EQUAL(rci_dma_ring_taken_pos(f->ring), 0);
    CU_ASSERT(fx_stats(f).tap_stalls >= 1);
    CU_ASSERT_FALSE(rci_readout_drained(f->r));
    t.room = true;
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
    CU_ASSERT_EQUAL_FATAL(t.n, 3);
    CU_ASSERT_EQUAL(t.blocks[1], 1);                  /* the bad block too */
    CU_ASSERT_EQUAL(fx_stats(f).bad_header, 1);
    CU_ASSERT_EQUAL(fx_read(f), 0);
    for (unsigned i = 0; i < 3; i++)
        rci_readout_release_block(f->r, t.blocks[i]);
    CU_ASSERT_EQUAL(fx_read(f), 3ull * f->p.block_size);
    fx_close(f);
}

/* A block released twice, never tapped or out of range: rejected, counted,
 * the ring's accounting untouched. */
static void test_tap_bad_releases(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    f->release_in_sink = true;
    struct tap_rec t = { .room = true };
    rci_readout_release_block(f->r, 0);               /* no tap yet */
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, NULL, tap_take, &t), 0);
    put_whole(f, 1, 0);
    put_whole(f, 1, 1);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 2);
    rci_readout_release_block(f->r, 0);
    rci_readout_release_block(f->r, 0);               /* twice */
    rci_readout_release_block(f->r, 8);               /* out of range */
    rci_readout_release_block(f->r, 5);               /* never taken */
    CU_ASSERT_EQUAL(fx_read(f), f->p.block_size);     /* block 1 still held */
    struct rci_readout_stats s = fx_stats(f);
    CU_ASSERT_EQUAL(s.bad_tap_releases, 4);
    CU_ASSERT_EQUAL(s.tap_releases, 1);
    CU_ASSERT_EQUAL(s.bad_releases, 0);
    rci_readout_release_block(f->r, 1);
    CU_ASSERT_EQUAL(fx_read(f), 2ull * f->p.block_size);
    fx_close(f);
}

/* A tap set after decoding began would meet blocks it holds no reference on. */
static void test_tap_set_late(void)
{
    struct fx *f = fx_open(FELIX_FMT_C0CE, 8);
    struct tap_rec t = { .room = true };
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, NULL, NULL, &t), -EINVAL);
    put_whole(f, 1, 0);
    CU_ASSERT_EQUAL(rci_readout_decode(f->r), 1);
    CU_ASSERT_EQUAL(rci_readout_set_block_tap(f->r, NULL, tap_take, &t), -EINVAL);
    fx_release_all(f);
    fx_close(f);
}

/* The pool's free list with batches: records released together go back as
 * one push whose head carries the others' indices in its piece slots. With
 * one piece slot per record a head holds 4 indices, so a burst of 23 is five
 * batches. Every record comes back exactly once, whichever way it was put
 * (batch, single, the decoder's local list), and a head is served after its
 * batch (its slots hold the indices until then). */
static void take_all(struct rci_chunk_pool *pool, struct rci_chunk_rec **got, unsigned n)
{
    bool seen[32] = { false };
    for (unsigned i = 0; i < n; i++) {
        got[i] = rci_chunk_pool_get(pool);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got[i]);
        CU_ASSERT_FALSE(seen[got[i]->index]);
        seen[got[i]->index] = true;
        CU_ASSERT_EQUAL(got[i]->chunk.npieces, 0);
        CU_ASSERT_EQUAL(got[i]->batch_extra, 0);
    }
    CU_ASSERT_PTR_NULL(rci_chunk_pool_get(pool));
}

static void test_pool_batches(void)
{
    struct rci_chunk_pool pool;
    char err[128];
    CU_ASSERT_EQUAL_FATAL(rci_chunk_pool_init(&pool, 32, 1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(pool.batch_max, 4);
    struct rci_chunk_rec *got[32];
    take_all(&pool, got, 32);
    rci_chunk_pool_put_batch(&pool, got, 23);           /* 5 + 5 + 5 + 5 + 3 */
    rci_chunk_pool_put(&pool, got[23]);
    rci_chunk_pool_put_batch(&pool, &got[24], 1);        /* a batch of one: no indices */
    rci_chunk_pool_put_batch(&pool, &got[25], 0);        /* nothing */
    for (unsigned i = 25; i < 32; i++)
        rci_chunk_pool_put_local(&pool, got[i]);
    take_all(&pool, got, 32);
    /* One batch of 5 alone: its four records first, in order, then its head. */
    struct rci_chunk_rec *five[5] = { got[7], got[3], got[30], got[0], got[12] };
    rci_chunk_pool_put_batch(&pool, five, 5);
    CU_ASSERT_PTR_EQUAL(rci_chunk_pool_get(&pool), five[1]);
    CU_ASSERT_PTR_EQUAL(rci_chunk_pool_get(&pool), five[2]);
    CU_ASSERT_PTR_EQUAL(rci_chunk_pool_get(&pool), five[3]);
    CU_ASSERT_PTR_EQUAL(rci_chunk_pool_get(&pool), five[4]);
    CU_ASSERT_PTR_EQUAL(rci_chunk_pool_get(&pool), five[0]);
    CU_ASSERT_PTR_NULL(rci_chunk_pool_get(&pool));
    rci_chunk_pool_fini(&pool);
}

static void register_tests(void)
{
    RCI_SUITE("decoder",
             { "whole chunk, each format", test_whole_chunk },
             { "several whole chunks per block", test_several_whole_per_block },
             { "first/middle/last across other e-links' blocks", test_spanning_chunk },
             { "chunk across the ring wrap", test_chunk_across_ring_wrap },
             { "flags are OR'd over subchunks", test_flags_ored },
             { "unknown marker", test_bad_marker },
             { "block size mismatch", test_block_size_mismatch },
             { "malformed: length past header", test_malformed_length },
             { "malformed: chain and type order", test_malformed_chain },
             { "sequence gaps", test_seq_gap },
             { "orphans, first/whole while open", test_orphans_and_restarts },
             { "oversize by length", test_oversize_by_length },
             { "oversize by pieces", test_oversize_by_pieces },
             { "timeout, out-of-band, reserved", test_timeout_oob_reserved },
             { "create validation", test_create_validation });
    RCI_SUITE("release",
             { "out of order", test_release_out_of_order },
             { "duplicate, stale and corrupt keys", test_bad_releases },
             { "burst: bad keys among good ones, over 64 keys", test_release_burst },
             { "free list batches: every record back once, head last", test_pool_batches },
             { "pool exhaustion: backpressure, resume", test_pool_backpressure },
             { "pool held by open chunks", test_pool_held_by_open_chunks },
             { "open chunk holding the full ring", test_open_chunk_holding_full_ring },
             { "ring still filling by TLP", test_open_chunk_ring_filling_by_tlp },
             { "more interleaved e-links than ring blocks", test_open_chunks_more_elinks_than_ring },
             { "sink -EAGAIN", test_sink_again },
             { "sink error drops the chunk", test_sink_error_drops },
             { "sink takes part of a burst", test_sink_takes_part_of_a_burst });
    RCI_SUITE("stream gaps", { "a marked gap drops the open chunk", test_marked_gap },
             { "a spilled chunk ended by an empty last holds no ring block", test_spilled_chunk_holds_no_block });
    RCI_SUITE("block tap",
             { "stream refs hold the ring, released out of order", test_tap_holds_ring },
             { "stream released before the chunks", test_tap_released_before_chunks },
             { "released inside the tap call", test_tap_released_in_call },
             { "no room stalls, bad blocks tapped too", test_tap_room_stalls },
             { "bad block releases counted", test_tap_bad_releases },
             { "set late or without a tap function", test_tap_set_late });
    RCI_SUITE("randomized", { "1e5 chunks, random interleaving and release", test_randomized });
    RCI_SUITE("corrupt trailers", { "every single-bit flip of every trailer", test_trailer_bit_flips });
}

RCI_CUNIT_MAIN(register_tests)
