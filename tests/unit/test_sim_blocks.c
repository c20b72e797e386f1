/* SPDX-License-Identifier: BSD-3-Clause */
/* test_sim_blocks.c — the simulator's block writer, byte by byte against the
 * layout of readout/README.md ("Block format"), the payload pattern, error
 * injection and block-file replay. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readout/sim/pattern.h"
#include "readout/sim/sim_blocks.h"
#include "tests/unit/cunit_main.h"

#define KB 1024u

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static struct rci_sim_gen_config config(enum felix_format fmt, uint32_t bs, uint32_t elinks,
                                       uint32_t chunk_min, uint32_t chunk_max, uint64_t run)
{
    struct rci_sim_gen_config c = { .format = fmt, .block_size = bs, .tag_base = 0x100 };
    c.sim.elinks = elinks;
    c.sim.chunk_size_min = chunk_min;
    c.sim.chunk_size_max = chunk_max;
    c.sim.fill = RCI_FILL_PATTERN;
    c.sim.run_chunks = run;
    c.sim.seed = 1;
    return c;
}

static struct rci_sim_gen *make_gen(const struct rci_sim_gen_config *c)
{
    struct rci_sim_gen *g = NULL;
    char err[256] = "";
    int rc = rci_sim_gen_create(c, &g, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "rci_sim_gen_create: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

/* Generate up to max blocks into buf; returns how many were written. */
static unsigned gen_all(struct rci_sim_gen *g, uint8_t *buf, uint32_t bs, unsigned max)
{
    unsigned n = 0;
    while (n < max && rci_sim_gen_next(g, buf + (size_t)n * bs, NULL, NULL) == 1)
        n++;
    return n;
}

/* ---- encoding ------------------------------------------------------------- */

static void test_markers(void)
{
    CU_ASSERT_EQUAL(rci_felix_marker(FELIX_FMT_ABCD, KB), 0xABCD);
    CU_ASSERT_EQUAL(rci_felix_marker(FELIX_FMT_ABCE, KB), 0xABCE);
    CU_ASSERT_EQUAL(rci_felix_marker(FELIX_FMT_C0CE, 1 * KB), 0xC0CE);
    CU_ASSERT_EQUAL(rci_felix_marker(FELIX_FMT_C0CE, 4 * KB), 0xC3CE);
    CU_ASSERT_EQUAL(rci_felix_marker(FELIX_FMT_C0CE, 64 * KB), 0xFFCE);
    CU_ASSERT_TRUE(rci_felix_marker_ok(0xC3CE, FELIX_FMT_C0CE, 4 * KB));
    CU_ASSERT_FALSE(rci_felix_marker_ok(0xC3CE, FELIX_FMT_C0CE, 8 * KB));
    CU_ASSERT_FALSE(rci_felix_marker_ok(0xABCD, FELIX_FMT_ABCE, KB));
    char err[128];
    CU_ASSERT_EQUAL(rci_felix_check_format(FELIX_FMT_ABCD, 4 * KB, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "abcd"));
    CU_ASSERT_EQUAL(rci_felix_check_format(FELIX_FMT_C0CE, 1536, NULL, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_felix_check_format(FELIX_FMT_C0CE, 65 * KB, NULL, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_felix_check_format(FELIX_FMT_C0CE, 64 * KB, NULL, 0), 0);
}

static void test_trailer_bits(void)
{
    /* 16-bit: length [9:0], CRC [10], error [11], truncation [12], type [15:13] */
    uint32_t all = RCI_CHUNK_TRUNCATED | RCI_CHUNK_CRC_ERROR | RCI_CHUNK_ERROR | RCI_CHUNK_BUSY;
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_ABCD, FELIX_SUB_FIRST, 1018, all), 0x3FFA);
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_ABCD, FELIX_SUB_MIDDLE, 3, 0), 0x8003);
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_ABCD, FELIX_SUB_WHOLE, 1, RCI_CHUNK_TRUNCATED), 0x7001);
    /* 32-bit: length [15:0], busy [25], CRC [26], error [27], truncation [28], type [31:29] */
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_ABCE, FELIX_SUB_WHOLE, 10,
                                     RCI_CHUNK_BUSY | RCI_CHUNK_CRC_ERROR), 0x6600000Au);
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_C0CE, FELIX_SUB_LAST, 0xffff, RCI_CHUNK_TRUNCATED),
                    0x5000FFFFu);
    CU_ASSERT_EQUAL(rci_felix_trailer(FELIX_FMT_C0CE, FELIX_SUB_MIDDLE, 65528, RCI_CHUNK_ERROR),
                    0x8800FFF8u);
    CU_ASSERT_EQUAL(rci_felix_max_len(FELIX_FMT_ABCD), 1023u);
    CU_ASSERT_EQUAL(rci_felix_max_len(FELIX_FMT_ABCE), 65535u);
}

/* ---- hand-composed blocks -------------------------------------------------- */

static void test_composer(void)
{
    uint8_t blk[KB];
    memset(blk, 0x55, sizeof blk);
    struct rci_blk b;
    CU_ASSERT_EQUAL(rci_blk_begin(&b, blk, FELIX_FMT_ABCE, KB, 2048, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_blk_begin(&b, blk, FELIX_FMT_ABCE, 2 * KB, 1, 0), -EINVAL);
    CU_ASSERT_EQUAL_FATAL(rci_blk_begin(&b, blk, FELIX_FMT_ABCE, KB, 5, 33), 0);
    CU_ASSERT_EQUAL(le16(blk), 0x0805);           /* e-link 5, seq 33 % 32 = 1 */
    CU_ASSERT_EQUAL(le16(blk + 2), 0xABCE);
    uint8_t *p = rci_blk_add(&b, FELIX_SUB_WHOLE, 5, RCI_CHUNK_ERROR);
    CU_ASSERT_PTR_EQUAL(p, blk + 4);
    memcpy(p, "hello", 5);
    CU_ASSERT_TRUE(all_zero(blk + 9, 3));         /* padding to 4 bytes */
    CU_ASSERT_EQUAL(le32(blk + 12), 0x68000005u);
    CU_ASSERT_EQUAL(rci_blk_space(&b), KB - 16);
    CU_ASSERT_EQUAL(rci_blk_room(&b), KB - 20);
    CU_ASSERT_PTR_NULL(rci_blk_add(&b, FELIX_SUB_WHOLE, KB - 19, 0));  /* one byte too many */
    CU_ASSERT_PTR_NOT_NULL(rci_blk_add(&b, FELIX_SUB_FIRST, KB - 20, 0));
    CU_ASSERT_EQUAL(rci_blk_space(&b), 0);
    CU_ASSERT_EQUAL(le32(blk + KB - 4), 0x20000000u | (KB - 20));
    CU_ASSERT_PTR_NULL(rci_blk_add(&b, FELIX_SUB_WHOLE, 0, 0));
    CU_ASSERT_EQUAL(memcmp(blk + 4, "hello", 5), 0);

    /* 16-bit trailers refuse lengths above 1023 even where room would allow. */
    CU_ASSERT_EQUAL_FATAL(rci_blk_begin(&b, blk, FELIX_FMT_ABCD, KB, 0, 0), 0);
    CU_ASSERT_PTR_NULL(rci_blk_add(&b, FELIX_SUB_WHOLE, 1024, 0));
    CU_ASSERT_PTR_NOT_NULL(rci_blk_add(&b, FELIX_SUB_WHOLE, 0, 0));
    CU_ASSERT_EQUAL(le16(blk + 4), 0x6000);       /* empty whole subchunk: trailer only */
    rci_blk_finish(&b);
    CU_ASSERT_TRUE(all_zero(blk + 6, KB - 6));
}

/* ---- generator: exact bytes ------------------------------------------------ */

static void test_whole_abce(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 10, 10, 1);
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t blk[KB], want[KB] = { 0 };
    memset(blk, 0xEE, sizeof blk);
    struct rci_sim_block_info info;
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g, blk, NULL, &info), 1);
    want[2] = 0xCE, want[3] = 0xAB;               /* e-link 0, seq 0; marker */
    /* payload: bytes 0..7 = sequence number 0, bytes 8..9 = word 1 of the pattern */
    uint64_t w1 = rci_pattern_word(0x100, 0, 1);
    want[12] = (uint8_t)w1, want[13] = (uint8_t)(w1 >> 8);
    want[16] = 0x0A, want[19] = 0x60;             /* trailer: whole, length 10; then null trailers */
    CU_ASSERT_EQUAL(memcmp(blk, want, KB), 0);
    CU_ASSERT_EQUAL(info.chunks_started, 1);
    CU_ASSERT_EQUAL(info.chunks_completed, 1);
    CU_ASSERT_EQUAL(info.payload_bytes, 10);
    CU_ASSERT_EQUAL(rci_sim_gen_next(g, blk, NULL, &info), 0);
    CU_ASSERT_TRUE(rci_sim_gen_done(g));
    rci_sim_gen_destroy(g);
}

static void test_abcd_16bit(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCD, KB, 1, 3, 3, 2);
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t blk[KB], want[KB] = { 0 };
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g, blk, NULL, NULL), 1);
    want[2] = 0xCD, want[3] = 0xAB;
    /* chunk seq 0 at 4..6, pad at 7, trailer 0x6003 at 8 */
    want[8] = 0x03, want[9] = 0x60;
    /* chunk seq 1 at 10..12 (its first byte is 1), pad at 13, trailer at 14 */
    want[10] = 0x01;
    want[14] = 0x03, want[15] = 0x60;
    CU_ASSERT_EQUAL(memcmp(blk, want, KB), 0);
    rci_sim_gen_destroy(g);
}

static void test_spanning_first_middle_last(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 3000, 3000, 2);
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t buf[8 * KB];
    CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, KB, 8), 6);
    const uint8_t *b0 = buf, *b1 = buf + KB, *b2 = buf + 2 * KB, *b5 = buf + 5 * KB;
    /* block 0: first subchunk filling the block: 1024 - 4 - 4 = 1016 bytes */
    CU_ASSERT_EQUAL(le16(b0), 0x0000);
    CU_ASSERT_EQUAL(le32(b0 + KB - 4), 0x20000000u | 1016);
    CU_ASSERT_EQUAL(rci_pattern_check(b0 + 4, 0, 1016, 0x100, 0), -1);
    /* block 1: seq 1, one middle subchunk */
    CU_ASSERT_EQUAL(le16(b1), 1u << 11);
    CU_ASSERT_EQUAL(le32(b1 + KB - 4), 0x80000000u | 1016);
    CU_ASSERT_EQUAL(rci_pattern_check(b1 + 4, 1016, 1016, 0x100, 0), -1);
    /* block 2: seq 2, last subchunk 3000 - 2032 = 968 bytes first; then the
     * next chunk's first subchunk in the 44 bytes left */
    CU_ASSERT_EQUAL(le16(b2), 2u << 11);
    CU_ASSERT_EQUAL(rci_pattern_check(b2 + 4, 2032, 968, 0x100, 0), -1);
    CU_ASSERT_EQUAL(le32(b2 + 972), 0x40000000u | 968);
    CU_ASSERT_EQUAL(rci_pattern_check(b2 + 976, 0, 44, 0x100, 1), -1);
    CU_ASSERT_EQUAL(le32(b2 + KB - 4), 0x20000000u | 44);
    /* blocks 3, 4: middles of chunk 1 (44 + 2 * 1016 = 2076 done) */
    CU_ASSERT_EQUAL(le32(buf + 3 * KB + KB - 4), 0x80000000u | 1016);
    CU_ASSERT_EQUAL(le32(buf + 4 * KB + KB - 4), 0x80000000u | 1016);
    /* block 5: last 924 bytes, then null trailers to the end */
    CU_ASSERT_EQUAL(le16(b5), 5u << 11);
    CU_ASSERT_EQUAL(rci_pattern_check(b5 + 4, 2076, 924, 0x100, 1), -1);
    CU_ASSERT_EQUAL(le32(b5 + 928), 0x40000000u | 924);
    CU_ASSERT_TRUE(all_zero(b5 + 932, KB - 932));
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.chunks_completed, 2);
    CU_ASSERT_EQUAL(st.payload_bytes, 6000);
    CU_ASSERT_EQUAL(st.blocks, 6);
    rci_sim_gen_destroy(g);
}

static void test_interleaved_elinks(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 2, 3000, 3000, 2);
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t buf[8 * KB];
    CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, KB, 8), 6);
    static const unsigned types[6] = { FELIX_SUB_FIRST, FELIX_SUB_FIRST, FELIX_SUB_MIDDLE,
                                       FELIX_SUB_MIDDLE, FELIX_SUB_LAST, FELIX_SUB_LAST };
    for (unsigned i = 0; i < 6; i++) {
        const uint8_t *b = buf + i * KB;
        unsigned elink = i % 2, seq = i / 2;
        CU_ASSERT_EQUAL(le16(b), elink | seq << 11);
        unsigned last_type = le32(b + KB - 4) >> 29;
        unsigned first_type = types[i] == FELIX_SUB_LAST ? le32(b + 972) >> 29 : last_type;
        CU_ASSERT_EQUAL(first_type, types[i]);
    }
    /* each e-link's chunk carries its own tag's pattern, sequence 0 */
    CU_ASSERT_EQUAL(rci_pattern_check(buf + 4, 0, 1016, 0x100, 0), -1);
    CU_ASSERT_EQUAL(rci_pattern_check(buf + KB + 4, 0, 1016, 0x101, 0), -1);
    CU_ASSERT_EQUAL(rci_pattern_check(buf + 5 * KB + 4, 2032, 968, 0x101, 0), -1);
    rci_sim_gen_destroy(g);
}

static void test_sequence_wraps(void)
{
    /* 1016 bytes exactly fill a block as one whole subchunk */
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 1016, 1016, 40);
    struct rci_sim_gen *g = make_gen(&c);
    static uint8_t buf[41 * KB];
    CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, KB, 41), 40);
    for (unsigned i = 0; i < 40; i++) {
        CU_ASSERT_EQUAL(le16(buf + i * KB) >> 11, i % 32);
        CU_ASSERT_EQUAL(le32(buf + i * KB + KB - 4), 0x60000000u | 1016);
        CU_ASSERT_EQUAL(rci_pattern_seq(buf + i * KB + 4, 1016), i);
    }
    rci_sim_gen_destroy(g);
}

static void test_c0ce_sizes(void)
{
    static const uint32_t sizes[] = { 1 * KB, 4 * KB, 64 * KB };
    static const uint16_t markers[] = { 0xC0CE, 0xC3CE, 0xFFCE };
    static uint8_t buf[3 * 64 * KB];
    for (unsigned i = 0; i < 3; i++) {
        uint32_t bs = sizes[i];
        struct rci_sim_gen_config c = config(FELIX_FMT_C0CE, bs, 1, 2 * bs, 2 * bs, 1);
        struct rci_sim_gen *g = make_gen(&c);
        CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, bs, 3), 3);
        CU_ASSERT_EQUAL(le16(buf + 2), markers[i]);
        CU_ASSERT_EQUAL(le16(buf + 2 * bs + 2), markers[i]);
        CU_ASSERT_EQUAL(le32(buf + bs - 4), 0x20000000u | (bs - 8));          /* first */
        CU_ASSERT_EQUAL(le32(buf + 2 * bs - 4), 0x80000000u | (bs - 8));      /* middle */
        /* last: 2 bs - 2 (bs - 8) = 16 bytes, trailer at 4 + 16 */
        CU_ASSERT_EQUAL(le32(buf + 2 * bs + 20), 0x40000000u | 16);
        CU_ASSERT_TRUE(all_zero(buf + 2 * bs + 24, bs - 24));
        rci_sim_gen_destroy(g);
    }
}

static void test_fill_none(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 10, 10, 2);
    c.sim.fill = RCI_FILL_NONE;
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t blk[KB];
    memset(blk, 0xEE, sizeof blk);
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g, blk, NULL, NULL), 1);
    CU_ASSERT_EQUAL(le16(blk + 2), 0xABCE);
    for (unsigned i = 4; i < 14; i++)
        CU_ASSERT_EQUAL(blk[i], 0xEE);            /* payload untouched */
    CU_ASSERT_TRUE(all_zero(blk + 14, 2));        /* padding */
    CU_ASSERT_EQUAL(le32(blk + 16), 0x6000000Au);
    CU_ASSERT_EQUAL(blk[20], 0xEE);
    CU_ASSERT_EQUAL(le32(blk + 32), 0x6000000Au);
    CU_ASSERT_TRUE(all_zero(blk + 36, KB - 36));  /* null trailers */
    rci_sim_gen_destroy(g);
}

static void test_budget(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 10, 10, 0);
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t blk[KB];
    struct rci_sim_block_info info;
    struct rci_sim_budget one_chunk = { .new_chunks = 1, .payload_bytes = UINT64_MAX };
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g, blk, &one_chunk, &info), 1);
    CU_ASSERT_EQUAL(info.chunks_started, 1);
    CU_ASSERT_TRUE(all_zero(blk + 20, KB - 20));
    struct rci_sim_budget fifteen = { .new_chunks = UINT64_MAX, .payload_bytes = 15 };
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g, blk, &fifteen, &info), 1);
    CU_ASSERT_EQUAL(info.chunks_started, 2);      /* 10 < 15: one more; 20 >= 15: stop */
    CU_ASSERT_EQUAL(info.payload_bytes, 20);
    struct rci_sim_budget none = { 0, 0 };
    CU_ASSERT_EQUAL(rci_sim_gen_next(g, blk, &none, &info), 0);
    CU_ASSERT_FALSE(rci_sim_gen_done(g));
    rci_sim_gen_destroy(g);
}

static void test_chunk_size_distribution(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_C0CE, 4 * KB, 3, 1, 9000, 500);
    struct rci_sim_gen *g = make_gen(&c), *g2 = make_gen(&c);
    static uint8_t a[4 * KB], b[4 * KB];
    uint64_t blocks = 0, chunks = 0, bytes = 0;
    bool same = true;
    struct rci_block_counts bc;
    while (rci_sim_gen_next(g, a, NULL, NULL) == 1) {
        CU_ASSERT_EQUAL_FATAL(rci_sim_gen_next(g2, b, NULL, NULL), 1);
        same = same && memcmp(a, b, sizeof a) == 0;
        CU_ASSERT_EQUAL_FATAL(rci_sim_block_count(a, FELIX_FMT_C0CE, 4 * KB, &bc), 0);
        chunks += bc.chunks_completed;
        bytes += bc.payload_bytes;
        blocks++;
    }
    CU_ASSERT_TRUE(same);                         /* same seed, same bytes */
    CU_ASSERT_EQUAL(chunks, 500);
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.payload_bytes, bytes);
    CU_ASSERT_EQUAL(st.blocks, blocks);
    /* the mean of 1..9000 is 4500: far from either end */
    CU_ASSERT_TRUE(bytes > 500ull * 3000 && bytes < 500ull * 6000);
    rci_sim_gen_destroy(g);
    rci_sim_gen_destroy(g2);
}

/* ---- pattern --------------------------------------------------------------- */

static void test_pattern(void)
{
    uint8_t a[300], b[300];
    rci_pattern_fill(a, 0, sizeof a, 7, 42);
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, sizeof a, 7, 42), -1);
    CU_ASSERT_EQUAL(rci_pattern_seq(a, sizeof a), 42);
    CU_ASSERT_EQUAL(rci_pattern_seq(a, 1), 42);
    /* the same bytes written in uneven pieces */
    rci_pattern_fill(b, 0, 3, 7, 42);
    rci_pattern_fill(b + 3, 3, 10, 7, 42);
    rci_pattern_fill(b + 13, 13, 287, 7, 42);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
    /* byte i >= 8 is byte i % 8 of word i / 8 */
    CU_ASSERT_EQUAL(a[8 * 5 + 3], (uint8_t)(rci_pattern_word(7, 42, 5) >> 24));
    /* a piece checked on its own, from its chunk offset */
    CU_ASSERT_EQUAL(rci_pattern_check(a + 13, 13, 100, 7, 42), -1);
    /* the first wrong byte is found, in the aligned body and in a partial word */
    a[37] ^= 1;
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, sizeof a, 7, 42), 37);
    CU_ASSERT_EQUAL(rci_pattern_check(a + 35, 35, 10, 7, 42), 37);
    a[37] ^= 1;
    a[299] ^= 0x80;
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, sizeof a, 7, 42), 299);
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, 299, 7, 42), -1);
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, sizeof a, 8, 42), 8);   /* other tag: word 1 differs */
    CU_ASSERT_EQUAL(rci_pattern_check(a, 0, sizeof a, 7, 43), 0);   /* other seq: byte 0 */
}

/* ---- error injection ------------------------------------------------------- */

static void test_flags_on_final_subchunk(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 3000, 3000, 2);
    c.sim.err_truncated = 1.0;
    c.sim.err_crc = 1.0;
    struct rci_sim_gen *g = make_gen(&c);
    uint8_t buf[8 * KB];
    CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, KB, 8), 6);
    uint32_t flags = FELIX_T32_TRUNC | FELIX_T32_CRC;
    CU_ASSERT_EQUAL(le32(buf + KB - 4) & flags, 0);                 /* first */
    CU_ASSERT_EQUAL(le32(buf + 2 * KB - 4) & flags, 0);             /* middle */
    CU_ASSERT_EQUAL(le32(buf + 2 * KB + 972) & flags, flags);       /* last */
    CU_ASSERT_EQUAL(le32(buf + 5 * KB + 928) & flags, flags);
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.injected_truncated, 2);
    CU_ASSERT_EQUAL(st.injected_crc, 2);
    rci_sim_gen_destroy(g);

    c = config(FELIX_FMT_ABCD, KB, 1, 10, 10, 1);
    c.sim.err_truncated = 1.0;
    g = make_gen(&c);
    CU_ASSERT_EQUAL_FATAL(gen_all(g, buf, KB, 2), 1);
    CU_ASSERT_EQUAL(le16(buf + 14), 0x6000 | FELIX_T16_TRUNC | 10);
    rci_sim_gen_destroy(g);
}

/* A small forward reader for the test: reassembles every e-link's chunks and
 * checks each byte against the pattern. Like a decoder it drops a chunk in
 * progress when a block of its e-link is missing or malformed. */
struct reader {
    uint64_t chunks, malformed, seq_gaps, bad_bytes, orphans, dropped;
    int next_seq[8];
    uint64_t next_tag_seq[8];
    bool open[8];
    uint32_t open_len[8];
    uint64_t open_seq[8];
};

static void read_block(struct reader *r, const uint8_t *blk, uint32_t bs, uint64_t tag_base)
{
    struct rci_block_counts bc;
    unsigned elink = le16(blk) & 0x7ff, seq = le16(blk) >> 11;
    bool gap = r->next_seq[elink] >= 0 && (int)seq != r->next_seq[elink];
    bool bad = rci_sim_block_count(blk, FELIX_FMT_ABCE, bs, &bc) != 0;
    r->seq_gaps += gap;
    r->malformed += bad;
    r->next_seq[elink] = (int)(seq + 1) % 32;
    if ((gap || bad) && r->open[elink]) {
        r->open[elink] = false;
        r->dropped++;
    }
    if (bad)
        return;
    uint32_t offs[256], lens[256], n = 0, pos = bs;
    unsigned types[256];
    while (pos > 4) {                             /* backwards, as a decoder does */
        pos -= 4;
        uint32_t t = le32(blk + pos);
        if (!t)
            continue;
        lens[n] = t & 0xffff;
        types[n] = t >> 29;
        pos -= (lens[n] + 3) / 4 * 4;
        offs[n++] = pos;
    }
    while (n--) {                                 /* forwards */
        uint64_t tag = tag_base + elink;
        if (types[n] == FELIX_SUB_WHOLE || types[n] == FELIX_SUB_FIRST) {
            r->open[elink] = true;
            r->open_len[elink] = 0;
            r->open_seq[elink] = rci_pattern_seq(blk + offs[n], lens[n]);
            if (r->open_seq[elink] != r->next_tag_seq[elink])
                r->bad_bytes++;
            r->next_tag_seq[elink]++;
        } else if (!r->open[elink]) {
            r->orphans++;
            continue;
        }
        if (rci_pattern_check(blk + offs[n], r->open_len[elink], lens[n], tag, r->open_seq[elink]) >= 0)
            r->bad_bytes++;
        r->open_len[elink] += lens[n];
        if (types[n] == FELIX_SUB_WHOLE || types[n] == FELIX_SUB_LAST) {
            r->open[elink] = false;
            r->chunks++;
        }
    }
}

static void test_malformed_and_seqskip(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 3, 100, 3000, 400);
    c.sim.err_malformed = 0.2;
    c.sim.err_seqskip = 0.2;
    struct rci_sim_gen *g = make_gen(&c);
    struct reader r = { 0 };
    memset(r.next_seq, -1, sizeof r.next_seq);
    uint8_t blk[KB];
    struct rci_sim_block_info info;
    uint64_t infos_malformed = 0, infos_skip = 0;
    while (rci_sim_gen_next(g, blk, NULL, &info) == 1) {
        infos_malformed += info.malformed;
        infos_skip += info.seqskip;
        read_block(&r, blk, KB, c.tag_base);
    }
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_TRUE(st.injected_malformed > 10);
    CU_ASSERT_TRUE(st.injected_seqskip > 10);
    CU_ASSERT_EQUAL(st.injected_malformed, r.malformed);
    CU_ASSERT_EQUAL(st.injected_malformed, infos_malformed);
    CU_ASSERT_EQUAL(st.injected_seqskip, r.seq_gaps);
    CU_ASSERT_EQUAL(st.injected_seqskip, infos_skip);
    /* injected at chunk boundaries: every chunk still arrives intact */
    CU_ASSERT_EQUAL(r.chunks, 400);
    CU_ASSERT_EQUAL(r.bad_bytes, 0);
    CU_ASSERT_EQUAL(r.orphans, 0);
    CU_ASSERT_EQUAL(r.dropped, 0);
    rci_sim_gen_destroy(g);
}

/* ---- replay ---------------------------------------------------------------- */

static void temp_path(char *path, size_t len, const char *what)
{
    snprintf(path, len, "/tmp/rc-test-sim-blocks-%d-%s.bin", (int)getpid(), what);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_replay(void)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 2, 700, 2500, 7);
    struct rci_sim_gen *g = make_gen(&c);
    static uint8_t file[16 * KB], out[40 * KB];
    unsigned n = gen_all(g, file, KB, 16);
    CU_ASSERT_FATAL(n > 3 && n < 16);
    rci_sim_gen_destroy(g);
    char path[128];
    temp_path(path, sizeof path, "good");
    write_file(path, file, (size_t)n * KB);

    struct rci_sim_gen_config rcfg = config(FELIX_FMT_ABCE, KB, 1, 1, 1, 0);
    snprintf(rcfg.sim.replay_file, sizeof rcfg.sim.replay_file, "%s", path);
    g = make_gen(&rcfg);                          /* once */
    CU_ASSERT_EQUAL(rci_sim_gen_replay_blocks(g), n);
    CU_ASSERT_EQUAL(gen_all(g, out, KB, 40), n);
    CU_ASSERT_EQUAL(memcmp(out, file, (size_t)n * KB), 0);
    CU_ASSERT_TRUE(rci_sim_gen_done(g));
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.chunks_completed, 7);
    rci_sim_gen_destroy(g);

    rcfg.sim.replay_loop = true;                  /* looped: 2.5 passes */
    g = make_gen(&rcfg);
    unsigned want = 2 * n + n / 2;
    CU_ASSERT_EQUAL(gen_all(g, out, KB, want), want);
    for (unsigned i = 0; i < want; i++)
        CU_ASSERT_EQUAL(memcmp(out + i * KB, file + (i % n) * KB, KB), 0);
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.replay_loops, 2);
    CU_ASSERT_FALSE(rci_sim_gen_done(g));
    rci_sim_gen_destroy(g);

    rcfg.sim.run_chunks = 10;                     /* looped, stopped by a run length */
    g = make_gen(&rcfg);
    gen_all(g, out, KB, 40);
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_TRUE(st.chunks_completed >= 10 && st.chunks_completed < 10 + 7);
    CU_ASSERT_TRUE(rci_sim_gen_done(g));
    rci_sim_gen_destroy(g);
    unlink(path);
}

static void expect_replay_error(const char *path, const char *needle)
{
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 1, 1, 1, 0);
    snprintf(c.sim.replay_file, sizeof c.sim.replay_file, "%s", path);
    struct rci_sim_gen *g = NULL;
    char err[512] = "";
    CU_ASSERT_NOT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), 0);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    if (!strstr(err, needle))
        fprintf(stderr, "expected \"%s\" in: %s\n", needle, err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));
}

static void test_replay_bad_files(void)
{
    static uint8_t data[3 * KB];
    struct rci_blk b;
    for (unsigned i = 0; i < 3; i++) {
        rci_blk_begin(&b, data + i * KB, FELIX_FMT_ABCE, KB, 0, i);
        rci_blk_finish(&b);
    }
    char path[128];
    temp_path(path, sizeof path, "bad");
    write_file(path, data, 2 * KB + 100);
    expect_replay_error(path, "byte offset 2048");
    data[KB + 2] = 0xCD;                          /* block 1 says abcd */
    write_file(path, data, 3 * KB);
    expect_replay_error(path, "byte offset 1024");
    write_file(path, data, 0);
    expect_replay_error(path, "empty");
    unlink(path);
    expect_replay_error(path, "cannot open");
}

static void test_config_errors(void)
{
    struct rci_sim_gen *g = NULL;
    char err[256];
    struct rci_sim_gen_config c = config(FELIX_FMT_ABCE, KB, 0, 10, 10, 0);
    CU_ASSERT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "elinks"));
    c = config(FELIX_FMT_ABCE, KB, 1, 20, 10, 0);
    CU_ASSERT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "chunk size"));
    c = config(FELIX_FMT_ABCE, KB, 1, 10, 10, 0);
    c.sim.err_crc = 1.5;
    CU_ASSERT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "err_crc"));
    c = config(FELIX_FMT_ABCD, 2 * KB, 1, 10, 10, 0);
    CU_ASSERT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(g);
}

static void test_block_count(void)
{
    uint8_t blk[KB];
    struct rci_blk b;
    struct rci_block_counts bc;
    rci_blk_begin(&b, blk, FELIX_FMT_ABCE, KB, 0, 0);
    rci_blk_add(&b, FELIX_SUB_LAST, 7, 0);
    rci_blk_add(&b, FELIX_SUB_WHOLE, 9, 0);
    rci_blk_add(&b, FELIX_SUB_FIRST, 16, 0);
    rci_blk_finish(&b);
    CU_ASSERT_EQUAL(rci_sim_block_count(blk, FELIX_FMT_ABCE, KB, &bc), 0);
    CU_ASSERT_EQUAL(bc.subchunks, 3);
    CU_ASSERT_EQUAL(bc.chunks_completed, 2);
    CU_ASSERT_EQUAL(bc.chunks_started, 2);
    CU_ASSERT_EQUAL(bc.payload_bytes, 32);
    /* a length that runs past the header */
    uint32_t bad = rci_felix_trailer(FELIX_FMT_ABCE, FELIX_SUB_WHOLE, 1017, 0);
    memcpy(blk + KB - 4, &bad, 4);
    CU_ASSERT_EQUAL(rci_sim_block_count(blk, FELIX_FMT_ABCE, KB, &bc), -EINVAL);
    CU_ASSERT_EQUAL(rci_sim_block_count(blk, FELIX_FMT_ABCD, KB, &bc), -EINVAL);   /* marker */
}

static void register_tests(void)
{
    RCI_SUITE("encoding", { "markers", test_markers }, { "trailer bits", test_trailer_bits },
             { "composer", test_composer }, { "block count", test_block_count });
    RCI_SUITE("generator", { "whole abce", test_whole_abce }, { "abcd 16-bit", test_abcd_16bit },
             { "first/middle/last", test_spanning_first_middle_last },
             { "interleaved e-links", test_interleaved_elinks },
             { "sequence wraps", test_sequence_wraps }, { "c0ce sizes", test_c0ce_sizes },
             { "fill none", test_fill_none }, { "budget", test_budget },
             { "size distribution", test_chunk_size_distribution },
             { "config errors", test_config_errors });
    RCI_SUITE("pattern", { "fill/check/seq", test_pattern });
    RCI_SUITE("errors", { "flags on final subchunk", test_flags_on_final_subchunk },
             { "malformed and seqskip", test_malformed_and_seqskip });
    RCI_SUITE("replay", { "once and loop", test_replay }, { "bad files", test_replay_bad_files });
}

RCI_CUNIT_MAIN(register_tests)
