/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_decoder.c — libFuzzer target: the block decoder (readout/decoder.c,
 * readout/block_parse.c) on arbitrary ring contents and write pointers, with
 * a sink that accepts, pushes back or refuses, and keys released in any order
 * (including keys that were never handed out). Input layout: fuzz_decoder.h.
 *
 * Besides the sanitizers, it checks what the decoder promises for any input:
 * every chunk's pieces lie inside the ring and add up to its length, respect
 * the configured limits and carry tag = tag_base + e-link; never more chunks
 * are in flight than the descriptor pool holds; once every key is back
 * nothing is in flight; the ring's positions stay ordered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "readout/readout.h"
#include "tests/fuzz/fuzz_decoder.h"

#define FZ_TAG_BASE 0x50000ull
/* The pool holds at most 64 chunks; a bogus key can release a held one
 * early (the fuzzer learns keys from comparisons), so the list has room. */
#define FZ_MAX_HELD 256u

#define FZ_TARGET "fuzz_decoder"
#include "tests/fuzz/fuzz_check.h"

struct fz {
    struct rci_dma_ring *ring;
    struct rci_readout *r;
    struct rci_card_params p;
    const uint8_t *base;
    uint64_t wpos;                 /* where the next block write goes */
    enum fz_sink sink_mode;
    unsigned offers;
    uint64_t held[FZ_MAX_HELD];    /* keys accepted, oldest first */
    unsigned nheld;
    uint64_t checksum;             /* every payload byte is read */
};


/* A piece lies in the ring, or (an open chunk's head copied out of a full
 * ring) is the first piece and lies in the readout's spill area. */
static void check_piece(struct fz *f, const struct rci_piece *pc, uint32_t i)
{
    if (pc->ring_offset == RCI_PIECE_SPILLED) {
        void *spill;
        size_t spill_len;
        rci_readout_spill_area(f->r, &spill, &spill_len);
        FZ_CHECK(i == 0, "spilled piece %u is not the first", i);
        FZ_CHECK(pc->addr >= (const uint8_t *)spill &&
                 pc->addr + pc->len <= (const uint8_t *)spill + spill_len,
                 "spilled piece %u outside the spill area", i);
        return;
    }
    FZ_CHECK((uint64_t)pc->ring_offset + pc->len <= f->p.ring_size,
             "piece %u at %u+%u leaves the ring of %llu", i, pc->ring_offset, pc->len,
             (unsigned long long)f->p.ring_size);
    FZ_CHECK(pc->addr == f->base + pc->ring_offset, "piece %u address/offset disagree", i);
}

static void check_chunk(struct fz *f, const struct rci_chunk *c)
{
    FZ_CHECK(c->elink <= FELIX_ELINK_MASK, "elink %u", c->elink);
    FZ_CHECK(c->tag == f->p.tag_base + c->elink, "tag %#llx elink %u", (unsigned long long)c->tag,
             c->elink);
    FZ_CHECK(c->length <= f->p.max_chunk_size, "length %u > max %u", c->length,
             f->p.max_chunk_size);
    FZ_CHECK(c->npieces <= f->p.max_chunk_pieces, "%u pieces > max %u", c->npieces,
             f->p.max_chunk_pieces);
    FZ_CHECK(c->npieces == 0 || c->pieces != NULL, "no piece array");
    uint64_t sum = 0;
    for (uint32_t i = 0; i < c->npieces; i++) {
        const struct rci_piece *pc = &c->pieces[i];
        check_piece(f, pc, i);
        for (uint32_t b = 0; b < pc->len; b++)
            f->checksum += pc->addr[b];
        sum += pc->len;
    }
    FZ_CHECK(sum == c->length, "pieces add up to %llu, length %u", (unsigned long long)sum,
             c->length);
}

static void release_held(struct fz *f, unsigned i);

static int fuzz_one(void *ctx, const struct rci_chunk *c)
{
    struct fz *f = ctx;
    check_chunk(f, c);
    f->offers++;
    if (f->sink_mode == FZ_SINK_AGAIN && f->offers % 3 == 0)
        return -EAGAIN;
    if (f->sink_mode == FZ_SINK_REFUSE && f->offers % 5 == 0)
        return -EIO;
    if (f->sink_mode == FZ_SINK_RELEASE_NOW) {
        rci_readout_release(f->r, c->key);
        return 0;
    }
    struct rci_readout_stats s;
    rci_readout_get_stats(f->r, &s);
    /* the decoder counts a chunk as accepted before it calls the sink */
    FZ_CHECK(s.chunks_in_flight <= f->p.max_chunks_in_flight,
             "%llu chunks in flight with this one, pool of %u",
             (unsigned long long)s.chunks_in_flight, f->p.max_chunks_in_flight);
    if (f->nheld == FZ_MAX_HELD)   /* only after bogus keys released held ones */
        release_held(f, 0);
    f->held[f->nheld++] = c->key;
    return 0;
}

static unsigned fuzz_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct fz *f = ctx;
    return rci_readout_sink_each(f->r, fuzz_one, f, chunks, n);
}

static void release_held(struct fz *f, unsigned i)
{
    rci_readout_release(f->r, f->held[i]);
    memmove(&f->held[i], &f->held[i + 1], (f->nheld - i - 1) * sizeof f->held[0]);
    f->nheld--;
}

/* The card writes one block (or what is left of the input) at wpos, as DMA
 * would: only below read + ring size. Returns the input bytes used. */
static size_t write_block(struct fz *f, const uint8_t *data, size_t avail)
{
    size_t n = avail < FZ_BLOCK_SIZE ? avail : FZ_BLOCK_SIZE;
    if (f->wpos + FZ_BLOCK_SIZE > rci_dma_ring_read_pos(f->ring) + f->p.ring_size)
        return n;   /* ring full: the card stalls, the data is not written */
    uint8_t block[FZ_BLOCK_SIZE] = { 0 };
    memcpy(block, data, n);
    uint8_t *ring = rci_dma_ring_addr(f->ring);
    for (uint32_t i = 0; i < FZ_BLOCK_SIZE; i++)   /* wpos may be unaligned: wrap bytewise */
        ring[(f->wpos + i) % f->p.ring_size] = block[i];
    f->wpos += FZ_BLOCK_SIZE;
    rci_dma_ring_note_written(f->ring, f->wpos);
    return n;
}

static void check_positions(const struct fz *f)
{
    uint64_t read = rci_dma_ring_read_pos(f->ring), taken = rci_dma_ring_taken_pos(f->ring),
             written = rci_dma_ring_written_pos(f->ring);
    FZ_CHECK(read <= taken && taken <= written && written <= read + f->p.ring_size,
             "positions read %llu taken %llu written %llu", (unsigned long long)read,
             (unsigned long long)taken, (unsigned long long)written);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void run_ops(struct fz *f, const uint8_t *data, size_t size)
{
    size_t at = 0;
    while (at < size) {
        enum fz_op op = (enum fz_op)(data[at++] % FZ_OPS);
        size_t left = size - at;
        switch (op) {
        case FZ_OP_WRITE:
        case FZ_OP_WRITE2:
            at += write_block(f, data + at, left);
            break;
        case FZ_OP_POINTER:
            if (left >= 2) {
                uint64_t d = (uint64_t)data[at] | (uint64_t)data[at + 1] << 8;
                rci_dma_ring_note_written(f->ring, rci_dma_ring_read_pos(f->ring) + d);
                if (rci_dma_ring_written_pos(f->ring) > f->wpos)
                    f->wpos = rci_dma_ring_written_pos(f->ring);
            }
            at += left < 2 ? left : 2;
            break;
        case FZ_OP_DECODE:
            rci_readout_decode(f->r);
            break;
        case FZ_OP_RELEASE_OLDEST:
            if (f->nheld)
                release_held(f, 0);
            break;
        case FZ_OP_RELEASE_ONE:
            if (left >= 1 && f->nheld)
                release_held(f, data[at] % f->nheld);
            at += left < 1 ? left : 1;
            break;
        case FZ_OP_RELEASE_BOGUS:
            if (left >= 8)
                rci_readout_release(f->r, get_u64(data + at));
            at += left < 8 ? left : 8;
            break;
        default:
            break;
        }
        check_positions(f);
    }
}

static struct rci_card_params params_of(const uint8_t *h)
{
    static const enum felix_format formats[] = { FELIX_FMT_ABCD, FELIX_FMT_ABCE, FELIX_FMT_C0CE };
    return (struct rci_card_params){
        .index = 5, .tag_base = FZ_TAG_BASE, .block_size = FZ_BLOCK_SIZE,
        .block_format = formats[h[0] % 3], .ring_size = (uint64_t)FZ_BLOCK_SIZE * (2 + h[1] % 7),
        .rd_update_bytes = FZ_BLOCK_SIZE, .max_chunks_in_flight = 1 + (h[2] & 63u),
        .max_chunk_pieces = 1 + (h[3] & 15u), .max_chunk_size = 64u << (h[3] >> 4) };
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FZ_HEADER_BYTES)
        return 0;
    static struct fz f;
    memset(&f, 0, sizeof f);
    f.p = params_of(data);
    f.sink_mode = (enum fz_sink)(data[2] >> 6);
    char err[256];
    struct rci_dma_ring_params rp = { .size = f.p.ring_size, .unit_size = f.p.block_size,
                                     .backend = RCI_MEM_ANON, .lock_memory = false };
    int rc = rci_dma_ring_create(&rp, &f.ring, err, sizeof err);
    FZ_CHECK(rc == 0, "rci_dma_ring_create: %s", err);
    rc = rci_readout_create(&f.p, f.ring, NULL, fuzz_sink, &f, &f.r, err, sizeof err);
    FZ_CHECK(rc == 0, "rci_readout_create: %s", err);
    f.base = rci_dma_ring_addr(f.ring);

    run_ops(&f, data + FZ_HEADER_BYTES, size - FZ_HEADER_BYTES);

    /* Whatever happened, every key handed out can be given back. */
    rci_readout_decode(f.r);
    while (f.nheld)
        release_held(&f, f.nheld - 1);
    struct rci_readout_stats s;
    rci_readout_get_stats(f.r, &s);
    FZ_CHECK(s.chunks_in_flight == 0, "%llu chunks in flight after every key came back",
             (unsigned long long)s.chunks_in_flight);
    rci_readout_decode(f.r);
    check_positions(&f);
    if (getenv("FUZZ_DECODER_VERBOSE"))   /* what a seed exercises: for writing seeds */
        fprintf(stderr, "blocks %llu chunks %llu bytes %llu bad_header %llu malformed %llu "
                "seq_gap %llu oversize %llu orphan %llu sink_again %llu sink_errors %llu "
                "releases %llu bad_releases %llu dropped_pool %llu dropped_ring %llu\n",
                (unsigned long long)s.blocks, (unsigned long long)s.chunks,
                (unsigned long long)s.bytes, (unsigned long long)s.bad_header,
                (unsigned long long)s.err_malformed, (unsigned long long)s.err_seq_gap,
                (unsigned long long)s.err_oversize, (unsigned long long)s.err_orphan,
                (unsigned long long)s.sink_again, (unsigned long long)s.sink_errors,
                (unsigned long long)s.releases, (unsigned long long)s.bad_releases,
                (unsigned long long)s.chunks_dropped_pool, (unsigned long long)s.chunks_dropped_ring);

    rci_readout_destroy(f.r);
    rci_dma_ring_destroy(f.ring);
    return 0;
}
