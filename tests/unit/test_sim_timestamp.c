/* SPDX-License-Identifier: BSD-3-Clause */
/* test_sim_timestamp.c — the simulator's fill = timestamp (latency
 * measurements): every chunk's first 8 bytes hold CLOCK_MONOTONIC taken
 * while the block with the chunk's first bytes was written, whole in that
 * block; nothing else of the payload is written; chunks shorter than the
 * stamp are refused. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "common/monotonic.h"
#include "readout/block_parse.h"
#include "readout/sim/sim_blocks.h"
#include "tests/unit/cunit_main.h"

#define BLOCK 4096u
#define UNTOUCHED 0xEE

static struct rci_sim_gen_config stamp_config(uint32_t min, uint32_t max, uint64_t run)
{
    struct rci_sim_gen_config c = { .format = FELIX_FMT_C0CE, .block_size = BLOCK, .tag_base = 0 };
    c.sim.elinks = 3;
    c.sim.chunk_size_min = min;
    c.sim.chunk_size_max = max;
    c.sim.fill = RCI_FILL_TIMESTAMP;
    c.sim.run_chunks = run;
    c.sim.seed = 7;
    return c;
}

static void test_refuses_chunks_shorter_than_the_stamp(void)
{
    struct rci_sim_gen_config c = stamp_config(7, 100, 10);
    struct rci_sim_gen *g = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL(rci_sim_gen_create(&c, &g, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "timestamp"));
    c = stamp_config(8, 100, 10);
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_create(&c, &g, err, sizeof err), 0);
    rci_sim_gen_destroy(g);
}

struct stamp_counts {
    uint64_t stamped, later_pieces;
};

/* Check one block written between t0 and t1. */
static void check_block(const uint8_t *blk, uint64_t t0, uint64_t t1, struct stamp_counts *n)
{
    struct rci_block_header h;
    CU_ASSERT_EQUAL_FATAL(rci_block_parse_header(blk, BLOCK, &h), RCI_BAD_NONE);
    static struct rci_subchunk subs[BLOCK / 2];
    unsigned first = 0;
    CU_ASSERT_EQUAL_FATAL(rci_block_parse_subchunks(blk, BLOCK, h.trailer_bytes, subs, BLOCK / 2, &first),
                          RCI_BAD_NONE);
    for (unsigned i = first; i < BLOCK / 2; i++) {
        const uint8_t *p = blk + subs[i].offset;
        if (subs[i].type == FELIX_SUB_WHOLE || subs[i].type == FELIX_SUB_FIRST) {
            CU_ASSERT_FATAL(subs[i].len >= RCI_SIM_STAMP_BYTES);
            uint64_t le;
            memcpy(&le, p, sizeof le);
            uint64_t stamp = le64toh(le);
            CU_ASSERT(stamp >= t0 && stamp <= t1);
            n->stamped++;
        } else if (subs[i].len > 0) {
            CU_ASSERT_EQUAL(p[0], UNTOUCHED);   /* only the stamp is written */
            n->later_pieces++;
        }
    }
}

/* Chunks of 8 B .. 20 KB on 3 e-links: whole ones, and ones cut over
 * several blocks (a first piece must hold the whole stamp). */
static void test_every_chunk_is_stamped_when_its_first_block_is_written(void)
{
    struct rci_sim_gen_config c = stamp_config(8, 20000, 2000);
    struct rci_sim_gen *g;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_sim_gen_create(&c, &g, err, sizeof err), 0);
    static uint8_t blk[BLOCK];
    struct stamp_counts n = {0};
    for (;;) {
        memset(blk, UNTOUCHED, sizeof blk);
        uint64_t t0 = rci_now_ns();
        int more = rci_sim_gen_next(g, blk, NULL, NULL);
        uint64_t t1 = rci_now_ns();
        if (!more)
            break;
        check_block(blk, t0, t1, &n);
    }
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    CU_ASSERT_EQUAL(st.chunks_completed, 2000);
    CU_ASSERT_EQUAL(n.stamped, st.chunks_started);
    CU_ASSERT(n.later_pieces > 0);
    rci_sim_gen_destroy(g);
}

static void register_tests(void)
{
    RCI_SUITE("sim_timestamp",
             {"refuses chunks shorter than the stamp", test_refuses_chunks_shorter_than_the_stamp},
             {"every chunk is stamped when its first block is written",
              test_every_chunk_is_stamped_when_its_first_block_is_written});
}

RCI_CUNIT_MAIN(register_tests)
