/* SPDX-License-Identifier: BSD-3-Clause */
/* test_card.c — the register model: host driver (wupper_dma) against the
 * simulated card stepped by hand (deterministic, no threads), the MMIO
 * accessors on plain memory, a scripted BAR for bad status values, the
 * threaded simulator, and the sim-process card over shared memory. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dma/dma_mem.h"
#include "readout/card.h"
#include "readout/readout.h"
#include "readout/sim/sim_bar.h"
#include "readout/sim/sim_blocks.h"
#include "readout/sim/sim_card.h"
#include "readout/sim/sim_firmware.h"
#include "readout/wupper_dma.h"
#include "readout/wupper_regs.h"
#include "tests/unit/cunit_main.h"

#define KB 1024u
#define RING (8 * KB)
#define DESC 2u

static struct rci_card_params card_params(uint64_t ring_size, uint32_t bs, enum felix_format fmt)
{
    return (struct rci_card_params){ .index = 0, .type = RCI_CARD_SIM, .tag_base = 0x10000,
                                    .dma_descriptor = DESC, .ring_size = ring_size,
                                    .block_size = bs, .block_format = fmt };
}

static struct rci_sim_params sim_params(uint32_t elinks, uint32_t cmin, uint32_t cmax, uint64_t run)
{
    return (struct rci_sim_params){ .elinks = elinks, .chunk_size_min = cmin,
                                   .chunk_size_max = cmax, .fill = RCI_FILL_PATTERN,
                                   .run_chunks = run, .seed = 3 };
}

/* A card over an aligned ring; the host programs it with IOVA = VA. */
struct rig {
    uint8_t *ring;
    struct rci_card *card;
    struct rci_sim_fw *fw;
    struct rci_wupper_dma dma;
    uint64_t start;
};

static void rig_init(struct rig *r, const struct rci_card_params *cp, const struct rci_sim_params *sp)
{
    memset(r, 0, sizeof *r);
    r->ring = aligned_alloc(4096, cp->ring_size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->ring);
    char err[256] = "";
    int rc = rci_sim_card_create(cp, sp, r->ring, cp->ring_size, &r->card, err, sizeof err);
    if (rc)
        fprintf(stderr, "rci_sim_card_create: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    r->fw = rci_sim_card_fw(r->card);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->fw);
    r->start = (uint64_t)(uintptr_t)r->ring;
}

/* The register tests' card: an 8 KiB ring of 1 KiB ABCE blocks, one e-link
 * of 100-byte chunks, running without end. */
static void rig_init_one_elink(struct rig *r)
{
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    struct rci_sim_params sp = sim_params(1, 100, 100, 0);
    rig_init(r, &cp, &sp);
}

static void rig_start(struct rig *r)
{
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&r->dma, &r->card->bar, DESC, r->start,
                                              rci_sim_priv(r->card->bar.ctx)->ring_size), 0);
}

static void rig_free(struct rig *r)
{
    rci_card_destroy(r->card);
    free(r->ring);
}

static uint64_t status_bits(struct rig *r)
{
    return rci_bar_read64(&r->card->bar, WUPPER_STATUS_BITS(DESC));
}
static uint64_t current_address(struct rig *r)
{
    return rci_bar_read64(&r->card->bar, WUPPER_STATUS_CURRENT(DESC));
}
static bool even_dma(struct rig *r) { return status_bits(r) & WUPPER_STATUS_EVEN_DMA; }
static bool even_pc(struct rig *r) { return status_bits(r) & WUPPER_STATUS_EVEN_PC; }

static struct rci_card_stats card_stats(struct rig *r)
{
    struct rci_card_stats s;
    rci_card_get_stats(r->card, &s);
    return s;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* ---- MMIO accessors ----------------------------------------------------------- */

static void test_mmio_accessors(void)
{
    static uint64_t regs[WUPPER_BAR0_SIZE / 8];
    struct rci_bar bar;
    rci_bar_init_mmio(&bar, regs);
    rci_bar_write64(&bar, WUPPER_DESC_START(1), 0x1234000);
    CU_ASSERT_EQUAL(regs[WUPPER_DESC_START(1) / 8], 0x1234000);
    CU_ASSERT_EQUAL(rci_bar_read64(&bar, WUPPER_DESC_START(1)), 0x1234000);
    regs[WUPPER_STATUS_CURRENT(3) / 8] = 0xabcdef00;
    regs[WUPPER_STATUS_BITS(3) / 8] = WUPPER_STATUS_EVEN_DMA | WUPPER_STATUS_EVEN_PC;
    uint64_t lo = 0, hi = 0;
    rci_bar_read128(&bar, WUPPER_STATUS(3), &lo, &hi);
    CU_ASSERT_EQUAL(lo, 0xabcdef00);
    CU_ASSERT_EQUAL(hi, WUPPER_STATUS_EVEN_DMA | WUPPER_STATUS_EVEN_PC);
}

/* ---- register semantics, stepped by hand ------------------------------------ */

static void test_empty_at_start(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);          /* not enabled: nothing */
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_IDLE);
    rig_start(&r);
    CU_ASSERT_EQUAL(current_address(&r), r.start);
    CU_ASSERT_EQUAL(status_bits(&r), 0);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 0), 0);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 0);
    CU_ASSERT_EQUAL(r.dma.bad_status, 0);
    /* what the host programmed */
    CU_ASSERT_EQUAL(rci_bar_read64(&r.card->bar, WUPPER_DESC_END(DESC)), r.start + RING);
    uint64_t ctrl = rci_bar_read64(&r.card->bar, WUPPER_DESC_CTRL(DESC));
    CU_ASSERT_EQUAL(ctrl & WUPPER_CTRL_NUM_WORDS_MASK, RCI_WUPPER_TLP_WORDS);
    CU_ASSERT_TRUE(ctrl & WUPPER_CTRL_WRAP_AROUND);
    CU_ASSERT_FALSE(ctrl & WUPPER_CTRL_READ_WRITE);
    CU_ASSERT_EQUAL(rci_bar_read64(&r.card->bar, WUPPER_DESC_ENABLE), 1u << DESC);
    rig_free(&r);
}

/* Every block in [from, to) carries the next sequence number of e-link 0. */
static void check_headers(struct rig *r, uint64_t from, uint64_t to)
{
    for (uint64_t pos = from; pos < to; pos += KB) {
        const uint8_t *b = r->ring + pos % RING;
        CU_ASSERT_EQUAL((b[0] | b[1] << 8) >> 11, (pos / KB) % 32);
        CU_ASSERT_EQUAL(b[2] | b[3] << 8, 0xABCE);
    }
}

/* Fill, stall, read half, wrap: all four parity combinations, full and
 * empty told apart. */
static void test_full_empty_parities(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    rig_start(&r);

    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 3), 3);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 3 * KB);
    CU_ASSERT_EQUAL(current_address(&r), r.start + 3 * KB);

    /* fill to full: the card wraps, EVEN_DMA = 1, EVEN_PC = 0, CURRENT == RD */
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 100), 5);
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_STALLED);
    CU_ASSERT_EQUAL(current_address(&r), r.start);
    CU_ASSERT_TRUE(even_dma(&r));
    CU_ASSERT_FALSE(even_pc(&r));
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), RING);             /* full, not empty */
    check_headers(&r, 0, RING);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 100), 0);                 /* still full */
    CU_ASSERT_EQUAL(card_stats(&r).stall_events, 1);
    sleep_ms(2);

    /* read half: the card fills the freed half and is full again at RD */
    rci_wupper_dma_set_read(&r.dma, 4 * KB);
    CU_ASSERT_EQUAL(rci_bar_read64(&r.card->bar, WUPPER_DESC_RD_POINTER(DESC)), r.start + 4 * KB);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 100), 4);
    struct rci_card_stats st = card_stats(&r);
    CU_ASSERT_TRUE(st.stall_ns >= 2000000);                        /* the 2 ms stalled */
    CU_ASSERT_EQUAL(st.stall_events, 2);                           /* and full again now */
    CU_ASSERT_EQUAL(current_address(&r), r.start + 4 * KB);
    CU_ASSERT_TRUE(even_dma(&r));
    CU_ASSERT_FALSE(even_pc(&r));
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 12 * KB);
    check_headers(&r, 8 * KB, 12 * KB);

    /* read everything: a full ring in one call = two RD_POINTER writes;
     * RD wraps, EVEN_PC = 1 = EVEN_DMA, CURRENT == RD: empty */
    uint64_t writes = r.dma.rd_writes;
    rci_wupper_dma_set_read(&r.dma, 12 * KB);
    CU_ASSERT_EQUAL(r.dma.rd_writes, writes + 2);
    CU_ASSERT_TRUE(even_pc(&r));
    CU_ASSERT_TRUE(even_dma(&r));
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 12 * KB);

    /* full with EVEN_DMA = 0, EVEN_PC = 1 */
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 100), 8);
    CU_ASSERT_FALSE(even_dma(&r));
    CU_ASSERT_TRUE(even_pc(&r));
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 20 * KB);
    check_headers(&r, 12 * KB, 20 * KB);

    /* partly read, both parities 0 again */
    rci_wupper_dma_set_read(&r.dma, 16 * KB);
    CU_ASSERT_FALSE(even_pc(&r));
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 20 * KB);
    /* empty with both parities 0 in a later lap */
    rci_wupper_dma_set_read(&r.dma, 20 * KB);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 20 * KB);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 1), 1);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 21 * KB);
    CU_ASSERT_EQUAL(r.dma.bad_status, 0);
    CU_ASSERT_EQUAL(card_stats(&r).host_errors, 0);
    CU_ASSERT_EQUAL(card_stats(&r).blocks_written, 21);
    rig_free(&r);
}

/* A BAR that forwards to another and records RD_POINTER writes. */
struct rec_bar {
    const struct rci_bar *inner;
    uint64_t rd[16];
    unsigned nrd;
};
static uint64_t rec_read64(void *ctx, uint32_t off)
{
    struct rec_bar *rb = ctx;
    return rci_bar_read64(rb->inner, off);
}
static void rec_write64(void *ctx, uint32_t off, uint64_t v)
{
    struct rec_bar *rb = ctx;
    if (off == WUPPER_DESC_RD_POINTER(DESC) && rb->nrd < 16)
        rb->rd[rb->nrd++] = v;
    rci_bar_write64(rb->inner, off, v);
}
static void rec_read128(void *ctx, uint32_t off, uint64_t *lo, uint64_t *hi)
{
    struct rec_bar *rb = ctx;
    rci_bar_read128(rb->inner, off, lo, hi);
}
static const struct rci_bar_ops rec_ops = { rec_read64, rec_write64, rec_read128 };

static void test_set_read_split_rule(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    struct rec_bar rb = { .inner = &r.card->bar };
    struct rci_bar bar = { &rec_ops, &rb };
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&r.dma, &bar, DESC, r.start, RING), 0);
    CU_ASSERT_EQUAL(rb.nrd, 1);
    CU_ASSERT_EQUAL(rb.rd[0], r.start);                           /* positioned at START */
    rci_sim_fw_step(r.fw, 100);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), RING);
    rb.nrd = 0;
    rci_wupper_dma_set_read(&r.dma, RING);                         /* a whole ring */
    CU_ASSERT_EQUAL_FATAL(rb.nrd, 2);
    CU_ASSERT_EQUAL(rb.rd[0], r.start + RING / 2);
    CU_ASSERT_EQUAL(rb.rd[1], r.start);
    CU_ASSERT_TRUE(even_pc(&r));                                  /* one wrap */
    CU_ASSERT_EQUAL(rci_sim_priv(r.card->bar.ctx)->desc[DESC].host_read_total, RING);
    /* no advance: no write; backwards or beyond written: refused and counted */
    rb.nrd = 0;
    rci_wupper_dma_set_read(&r.dma, RING);
    rci_wupper_dma_set_read(&r.dma, RING - KB);
    rci_wupper_dma_set_read(&r.dma, RING + KB);
    CU_ASSERT_EQUAL(rb.nrd, 0);
    CU_ASSERT_EQUAL(r.dma.bad_set_read, 2);
    rig_free(&r);
}

static void test_rd_pointer_events(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    rig_start(&r);
    const struct rci_bar *bar = &r.card->bar;
    struct rci_sim_desc_priv *dp = &rci_sim_priv(bar->ctx)->desc[DESC];
    rci_sim_fw_step(r.fw, 100);
    /* raw register writes, as any host would do them */
    rci_bar_write64(bar, WUPPER_DESC_RD_POINTER(DESC), r.start + 6 * KB);
    CU_ASSERT_EQUAL(dp->host_read_total, 6 * KB);
    CU_ASSERT_FALSE(even_pc(&r));
    rci_bar_write64(bar, WUPPER_DESC_RD_POINTER(DESC), r.start + 1 * KB);    /* wrapped */
    CU_ASSERT_EQUAL(dp->host_read_total, 9 * KB);
    CU_ASSERT_TRUE(even_pc(&r));
    rci_bar_write64(bar, WUPPER_DESC_RD_POINTER(DESC), r.start + RING);      /* = END: outside */
    rci_bar_write64(bar, WUPPER_DESC_RD_POINTER(DESC), r.start - KB);
    CU_ASSERT_EQUAL(dp->bad_rd_writes, 2);
    CU_ASSERT_EQUAL(dp->host_read_total, 9 * KB);
    /* 9 KiB read of 8 KiB written: a host error the card counts; meanwhile
     * it trusts only what it wrote, then the host's total once it is real:
     * it writes up to 9 KiB + the ring */
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 100), 9);
    CU_ASSERT_EQUAL(card_stats(&r).host_errors, 3);
    /* status registers are read-only; registers beyond the map read all ones */
    CU_ASSERT_EQUAL(current_address(&r), r.start + KB);
    rci_bar_write64(bar, WUPPER_STATUS_CURRENT(DESC), 0);
    CU_ASSERT_EQUAL(current_address(&r), r.start + KB);
    CU_ASSERT_EQUAL(rci_bar_read64(bar, WUPPER_BAR0_SIZE), ~0ull);
    rig_free(&r);
}

static void test_enable_off_and_reset(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    rig_start(&r);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 2), 2);
    rci_wupper_dma_stop(&r.dma);
    CU_ASSERT_EQUAL(rci_bar_read64(&r.card->bar, WUPPER_DESC_ENABLE), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_IDLE);
    CU_ASSERT_EQUAL(card_stats(&r).blocks_written, 2);

    /* enabled again: a new run from START, empty */
    rig_start(&r);
    CU_ASSERT_EQUAL(current_address(&r), r.start);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 1), 1);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), KB);
    CU_ASSERT_EQUAL(rci_sim_fw_write_total(r.fw), KB);

    /* DMA_RESET: disabled, status cleared, the firmware stops */
    rci_bar_write64(&r.card->bar, WUPPER_DMA_RESET, 1);
    CU_ASSERT_EQUAL(rci_bar_read64(&r.card->bar, WUPPER_DESC_ENABLE), 0);
    CU_ASSERT_EQUAL(current_address(&r), 0);
    CU_ASSERT_EQUAL(status_bits(&r), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_IDLE);
    rig_start(&r);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 2), 2);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&r.dma), 2 * KB);
    rig_free(&r);
}

static void test_refused_programming(void)
{
    struct rig r;
    rig_init_one_elink(&r);
    /* END - START is not the ring the card has mapped */
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&r.dma, &r.card->bar, DESC, r.start, RING / 2), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_REFUSED);
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_sim_priv(r.card->bar.ctx)->fw_error, "not the 8192-byte ring"));
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);
    CU_ASSERT_EQUAL(card_stats(&r).host_errors, 1);                /* counted once per run */
    /* not wrap-around */
    rig_start(&r);
    rci_wupper_dma_stop(&r.dma);
    rci_bar_write64(&r.card->bar, WUPPER_DESC_CTRL(DESC), RCI_WUPPER_TLP_WORDS);
    rci_bar_write64(&r.card->bar, WUPPER_DESC_ENABLE, 1u << DESC);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_sim_priv(r.card->bar.ctx)->fw_error, "WRAP_AROUND"));
    /* programmed right: it runs */
    rig_start(&r);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 4), 4);
    /* the host driver's own checks */
    struct rci_wupper_dma d;
    CU_ASSERT_EQUAL(rci_wupper_dma_start(&d, &r.card->bar, 8, r.start, RING), -EINVAL);
    CU_ASSERT_EQUAL(rci_wupper_dma_start(&d, &r.card->bar, DESC, r.start + 512, RING), -EINVAL);
    CU_ASSERT_EQUAL(rci_wupper_dma_start(&d, &r.card->bar, DESC, r.start, RING + 100), -EINVAL);
    CU_ASSERT_EQUAL(rci_wupper_dma_start(&d, &r.card->bar, DESC, r.start, 0), -EINVAL);
    rig_free(&r);
}

/* ---- bad status values: a scripted BAR --------------------------------------- */

struct script_bar {
    uint64_t cur[8], bits[8];
    unsigned n, next;
    uint64_t regs[WUPPER_BAR0_SIZE / 8];
};
static uint64_t script_read64(void *ctx, uint32_t off) { return ((struct script_bar *)ctx)->regs[off / 8]; }
static void script_write64(void *ctx, uint32_t off, uint64_t v) { ((struct script_bar *)ctx)->regs[off / 8] = v; }
static void script_read128(void *ctx, uint32_t off, uint64_t *lo, uint64_t *hi)
{
    struct script_bar *s = ctx;
    (void)off;
    unsigned i = s->next < s->n ? s->next++ : s->n - 1;
    *lo = s->cur[i];
    *hi = s->bits[i];
}
static const struct rci_bar_ops script_ops = { script_read64, script_write64, script_read128 };

static void script(struct script_bar *s, unsigned n, const uint64_t *cur, const uint64_t *bits)
{
    memcpy(s->cur, cur, n * sizeof *cur);
    memcpy(s->bits, bits, n * sizeof *bits);
    s->n = n;
    s->next = 0;
}

static void test_bad_status(void)
{
    static struct script_bar s;
    struct rci_bar bar = { &script_ops, &s };
    struct rci_wupper_dma d;
    const uint64_t start = 0x100000, size = 0x4000;
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&d, &bar, 0, start, size), 0);
    /* out of range once, then good: re-read */
    script(&s, 2, (uint64_t[]){ start + size, start + 0x1000 }, (uint64_t[]){ 0, 0 });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x1000);
    CU_ASSERT_EQUAL(d.bad_status, 1);
    /* out of range twice: the last good value */
    script(&s, 2, (uint64_t[]){ start - 8, ~0ull }, (uint64_t[]){ 0, 0 });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x1000);
    CU_ASSERT_EQUAL(d.bad_status, 3);
    /* behind the last position in the same lap: cannot be */
    script(&s, 1, (uint64_t[]){ start + 0x800 }, (uint64_t[]){ 0 });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x1000);
    CU_ASSERT_EQUAL(d.bad_status, 5);
    /* EVEN_PC set although the host never wrapped */
    script(&s, 1, (uint64_t[]){ start + 0x2000 }, (uint64_t[]){ WUPPER_STATUS_EVEN_PC });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x1000);
    CU_ASSERT_EQUAL(d.bad_status, 7);
    /* wrapped beyond the host's pointer (would overwrite unread data) */
    rci_wupper_dma_set_read(&d, 0x1000);
    script(&s, 1, (uint64_t[]){ start + 0x1400 }, (uint64_t[]){ WUPPER_STATUS_EVEN_DMA });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x1000);
    CU_ASSERT_EQUAL(d.bad_status, 9);
    /* and a good wrapped value: full */
    script(&s, 1, (uint64_t[]){ start + 0x1000 }, (uint64_t[]){ WUPPER_STATUS_EVEN_DMA });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x5000);
    CU_ASSERT_EQUAL(d.bad_status, 9);
}

/* A card that has not yet taken the host's RD_POINTER write across the ring's
 * end still reports the previous lap's EVEN_PC: judged against the read
 * position it knows (status_lagging), not rejected; a status fitting neither
 * lap is still bad. */
static void test_status_lagging(void)
{
    static struct script_bar s;
    struct rci_bar bar = { &script_ops, &s };
    struct rci_wupper_dma d;
    const uint64_t start = 0x100000, size = 0x4000;
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&d, &bar, 0, start, size), 0);
    script(&s, 1, (uint64_t[]){ start + 0x3000 }, (uint64_t[]){ 0 });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x3000);
    rci_wupper_dma_set_read(&d, 0x3000);
    /* the card wrapped: W = 0x5000 */
    script(&s, 1, (uint64_t[]){ start + 0x1000 }, (uint64_t[]){ WUPPER_STATUS_EVEN_DMA });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x5000);
    rci_wupper_dma_set_read(&d, 0x4400);                 /* crosses the end: lap 1 */
    /* the card has not taken it: EVEN_PC still 0 */
    script(&s, 1, (uint64_t[]){ start + 0x1400 }, (uint64_t[]){ WUPPER_STATUS_EVEN_DMA });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x5400);
    CU_ASSERT_EQUAL(d.status_lagging, 1);
    CU_ASSERT_EQUAL(d.bad_status, 0);
    /* now it has */
    script(&s, 1, (uint64_t[]){ start + 0x1800 },
           (uint64_t[]){ WUPPER_STATUS_EVEN_DMA | WUPPER_STATUS_EVEN_PC });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x5800);
    CU_ASSERT_EQUAL(d.status_lagging, 1);
    CU_ASSERT_EQUAL(d.bad_status, 0);
    /* old parity but a position behind what was seen: bad in both laps */
    script(&s, 1, (uint64_t[]){ start + 0x200 }, (uint64_t[]){ 0 });
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 0x5800);
    CU_ASSERT_EQUAL(d.bad_status, 2);
    CU_ASSERT_EQUAL(d.status_lagging, 1);
}

/* Status reads the host driver rejects are bad card data: they must reach the
 * readout's statistics, not stay inside the driver. A card whose
 * CURRENT_ADDRESS is never inside the ring, under the real readout thread. */
static int script_card_start(struct rci_card *c) { (void)c; return 0; }
static void script_card_nothing(struct rci_card *c) { (void)c; }
static void script_card_stats(struct rci_card *c, struct rci_card_stats *s)
{
    (void)c;
    memset(s, 0, sizeof *s);
}
static const struct rci_card_ops script_card_ops = {
    "script", script_card_start, script_card_nothing, script_card_stats, script_card_nothing };
static unsigned refuse_chunk(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    (void)ctx;
    (void)chunks;
    (void)n;
    return 0;   /* takes none: this test decodes nothing */
}

static void test_bad_status_in_readout_stats(void)
{
    static struct script_bar s;
    struct rci_card card = { &script_card_ops, { &script_ops, &s }, NULL };
    script(&s, 1, (uint64_t[]){ 0 }, (uint64_t[]){ 0 });   /* address 0: outside any ring */
    struct rci_dma_ring_params rp = { .size = RING, .unit_size = KB, .backend = RCI_MEM_ANON };
    struct rci_dma_ring *ring;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&rp, &ring, err, sizeof err), 0);
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    cp.rd_update_bytes = KB;
    cp.max_chunk_size = 4 * KB;
    cp.max_chunk_pieces = 4;
    cp.max_chunks_in_flight = 4;
    cp.poll_sleep_ns = 100000;
    struct rci_readout *r;
    CU_ASSERT_EQUAL_FATAL(rci_readout_create(&cp, ring, &card, refuse_chunk, NULL, &r, err,
                                            sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rci_readout_start(r), 0);
    struct rci_readout_stats st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 5000 && st.card_bad_status < 4; i++) {   /* generous: 5 s */
        sleep_ms(1);
        rci_readout_get_stats(r, &st);
    }
    rci_readout_stop(r);
    rci_readout_get_stats(r, &st);
    CU_ASSERT(st.card_bad_status >= 4);                    /* two rejected reads per poll */
    CU_ASSERT(st.polls >= 2);
    CU_ASSERT_EQUAL(st.blocks, 0);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(ring), 0);
    rci_readout_destroy(r);
    rci_dma_ring_destroy(ring);
}

/* Poll mode spins no longer than its last stretch of work took
 * (readout_thread.c, spin_limit): with poll_spin 10 s and a card that never
 * brings anything, the thread sleeps at once. Before, it spun the whole
 * poll_spin after every stretch of work (and at the start): no sleep in 10 s. */
static void test_poll_spin_bounded_by_work(void)
{
    static struct script_bar s;
    struct rci_card card = { &script_card_ops, { &script_ops, &s }, NULL };
    script(&s, 1, (uint64_t[]){ 0 }, (uint64_t[]){ 0 });   /* never a block */
    struct rci_dma_ring_params rp = { .size = RING, .unit_size = KB, .backend = RCI_MEM_ANON };
    struct rci_dma_ring *ring;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&rp, &ring, err, sizeof err), 0);
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    cp.max_chunk_size = 4 * KB;
    cp.max_chunk_pieces = 4;
    cp.max_chunks_in_flight = 4;
    cp.poll_spin_ns = 10ull * 1000 * 1000 * 1000;
    cp.poll_sleep_ns = 100000;
    struct rci_readout *r;
    CU_ASSERT_EQUAL_FATAL(rci_readout_create(&cp, ring, &card, refuse_chunk, NULL, &r, err,
                                            sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rci_readout_start(r), 0);
    struct rci_readout_stats st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 5000 && st.sleeps < 3; i++) {   /* generous: 5 s, half the spin */
        sleep_ms(1);
        rci_readout_get_stats(r, &st);
    }
    rci_readout_stop(r);
    CU_ASSERT(st.sleeps >= 3);
    rci_readout_destroy(r);
    rci_dma_ring_destroy(ring);
}

/* ---- timing-based behaviour, stepped by hand ---------------------------------- */

/* Step and consume until the firmware finishes; returns elapsed ns. */
static uint64_t run_to_finish(struct rig *r, uint64_t limit_ns)
{
    uint64_t t0 = rci_sim_now_ns();
    while (rci_sim_fw_state(r->fw) != RCI_FW_FINISHED && rci_sim_now_ns() - t0 < limit_ns) {
        rci_sim_fw_step(r->fw, 16);
        rci_wupper_dma_set_read(&r->dma, rci_wupper_dma_poll(&r->dma));
    }
    return rci_sim_now_ns() - t0;
}

static void test_rate_limit(void)
{
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    struct rci_sim_params sp = sim_params(1, 100, 100, 200);
    sp.rate = (struct rci_rate){ RCI_RATE_CHUNKS, 20000.0 };
    struct rig r;
    rig_init(&r, &cp, &sp);
    rig_start(&r);
    uint64_t ns = run_to_finish(&r, 5000000000ull);
    struct rci_card_stats st = card_stats(&r);
    CU_ASSERT_TRUE(st.finished);
    CU_ASSERT_EQUAL(st.chunks_produced, 200);
    /* the bucket holds ~20 chunks and a block may overdraw by one block's
     * worth: the other ~170 need 8.5 ms at 20000/s */
    CU_ASSERT_TRUE(ns >= 5000000);
    rig_free(&r);
}

/* A chunk started is finished in the same step whatever the bucket holds:
 * only new chunks wait for the rate. 8 KiB chunks span three 4 KiB blocks
 * and 8 e-links interleave: the bucket (two tokens) starts a chunk on e-link
 * 0 and one on e-link 1; their middle and last blocks follow at once, and the
 * rest of the last blocks is null trailers (no token for a third chunk).
 * Before, each chunk's next block waited for tokens: 2 chunks started, none
 * finished after the first step. */
static void test_rate_limit_finishes_started(void)
{
    const uint32_t bs = 4 * KB;
    struct rci_card_params cp = card_params(256 * KB, bs, FELIX_FMT_C0CE);
    struct rci_sim_params sp = sim_params(8, 8192, 8192, 0);
    sp.rate = (struct rci_rate){ RCI_RATE_CHUNKS, 10.0 };   /* a token every 100 ms */
    struct rig r;
    rig_init(&r, &cp, &sp);
    rig_start(&r);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 64), 6);
    struct rci_card_stats st = card_stats(&r);
    CU_ASSERT_EQUAL(st.chunks_produced, 2);
    CU_ASSERT_EQUAL(st.bytes_produced, 2 * 8192);
    CU_ASSERT_EQUAL(rci_sim_fw_state(r.fw), RCI_FW_RATE_LIMITED);
    CU_ASSERT_EQUAL(rci_sim_fw_step(r.fw, 64), 0);   /* nothing open, no token yet */
    CU_ASSERT_EQUAL(card_stats(&r).chunks_produced, 2);
    rig_free(&r);
}

static void test_run_time(void)
{
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    struct rci_sim_params sp = sim_params(2, 100, 2500, 0);
    sp.run_ns = 20000000;
    struct rig r;
    rig_init(&r, &cp, &sp);
    rig_start(&r);
    uint64_t ns = run_to_finish(&r, 5000000000ull);
    struct rci_card_stats st = card_stats(&r);
    CU_ASSERT_TRUE(st.finished);
    CU_ASSERT_TRUE(ns >= 20000000);
    CU_ASSERT_TRUE(st.chunks_produced > 0);
    rig_free(&r);
}

/* ---- the firmware thread --------------------------------------------------- */

static void test_threaded_sim(void)
{
    const uint32_t bs = 4 * KB;
    struct rci_card_params cp = card_params(64 * KB, bs, FELIX_FMT_C0CE);
    struct rci_sim_params sp = sim_params(4, 50, 5000, 2000);
    struct rig r;
    rig_init(&r, &cp, &sp);
    rig_start(&r);
    CU_ASSERT_EQUAL_FATAL(rci_card_start(r.card), 0);
    uint64_t read = 0, chunks = 0, bytes = 0, bad = 0, t0 = rci_sim_now_ns();
    for (;;) {
        uint64_t written = rci_wupper_dma_poll(&r.dma);
        for (; read < written; read += bs) {
            struct rci_block_counts bc;
            if (rci_sim_block_count(r.ring + read % (64 * KB), FELIX_FMT_C0CE, bs, &bc) != 0)
                bad++;
            chunks += bc.chunks_completed;
            bytes += bc.payload_bytes;
        }
        rci_wupper_dma_set_read(&r.dma, read);
        if (card_stats(&r).finished && rci_wupper_dma_poll(&r.dma) == read)
            break;
        if (rci_sim_now_ns() - t0 > 10000000000ull)
            break;
        sched_yield();
    }
    rci_card_stop(r.card);
    struct rci_card_stats st = card_stats(&r);
    CU_ASSERT_TRUE(st.finished);
    CU_ASSERT_EQUAL(st.chunks_produced, 2000);
    CU_ASSERT_EQUAL(chunks, 2000);
    CU_ASSERT_EQUAL(bytes, st.bytes_produced);
    CU_ASSERT_EQUAL(read, st.blocks_written * bs);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(r.dma.bad_status, 0);
    CU_ASSERT_EQUAL(st.host_errors, 0);
    rig_free(&r);
}

/* ---- sim-process card over shared memory ------------------------------------- */

struct process_thread {
    pthread_t thread;
    struct rci_sim_process *proc;
    volatile sig_atomic_t stop;
    enum rci_sim_exit why;
};

static void *process_main(void *arg)
{
    struct process_thread *pt = arg;
    pt->why = rci_sim_process_run(pt->proc, &pt->stop);
    return NULL;
}

static void test_shm_process(void)
{
    char base[48], ring_name[RCI_MEM_NAME_MAX + 1], bar_name[RCI_MEM_NAME_MAX + 1], err[512] = "";
    snprintf(base, sizeof base, "rc-test-card-%d", (int)getpid());
    CU_ASSERT_EQUAL_FATAL(rci_sim_shm_names(base, ring_name, bar_name, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(bar_name + strlen(base), "-bar");
    struct rci_card_params cp = card_params(RING, KB, FELIX_FMT_ABCE);
    cp.type = RCI_CARD_SIM_PROCESS;
    snprintf(cp.shm_name, sizeof cp.shm_name, "%s", base);
    struct rci_sim_params sp = sim_params(2, 100, 900, 0);

    /* daemon side: ring + BAR */
    struct rci_mem_region ring = { 0 };
    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_SHM, RING, ring_name, true, false, &ring, err, sizeof err), 0);
    struct rci_card *card = NULL;
    int rc = rci_sim_bar_create_shm(&cp, &card, err, sizeof err);
    if (rc)
        fprintf(stderr, "rci_sim_bar_create_shm: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(card->ops->kind, "sim-process");

    /* process side: its config from the daemon's description */
    struct rci_card_params pcp = { 0 };
    CU_ASSERT_EQUAL_FATAL(rci_sim_bar_describe(base, &pcp, err, sizeof err), 0);
    CU_ASSERT_EQUAL(pcp.ring_size, RING);
    CU_ASSERT_EQUAL(pcp.dma_descriptor, DESC);
    CU_ASSERT_EQUAL(pcp.tag_base, cp.tag_base);
    struct rci_card_params wrong = pcp;
    wrong.block_size = 4 * KB;
    wrong.block_format = FELIX_FMT_C0CE;
    struct rci_sim_process *proc = NULL;
    CU_ASSERT_EQUAL(rci_sim_card_attach(&wrong, &sp, &proc, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "block size 4096 differs from the daemon's 1024"));
    rc = rci_sim_card_attach(&pcp, &sp, &proc, err, sizeof err);
    if (rc)
        fprintf(stderr, "rci_sim_card_attach: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    struct rci_sim_process *second = NULL;
    CU_ASSERT_EQUAL(rci_sim_card_attach(&pcp, &sp, &second, err, sizeof err), -EBUSY);

    /* the host programs the daemon's mapping; the process writes through its own */
    struct rci_wupper_dma d;
    uint64_t bus = (uint64_t)(uintptr_t)ring.addr;
    CU_ASSERT_EQUAL_FATAL(rci_wupper_dma_start(&d, &card->bar, DESC, bus, RING), 0);
    struct rci_sim_fw *fw = rci_sim_process_fw(proc);
    CU_ASSERT_EQUAL(rci_sim_fw_step(fw, 3), 3);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), 3 * KB);
    struct rci_block_counts bc;
    uint64_t chunks = 0;
    for (unsigned i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(rci_sim_block_count(ring.addr + i * KB, FELIX_FMT_ABCE, KB, &bc), 0);
        chunks += bc.chunks_completed;
    }
    struct rci_card_stats st;
    rci_card_get_stats(card, &st);                 /* read by the daemon from the BAR */
    CU_ASSERT_EQUAL(st.blocks_written, 3);
    CU_ASSERT_EQUAL(st.chunks_produced, chunks);

    /* the process's loop in a thread: start / stop are a flag it obeys,
     * destroy tells it to go */
    struct process_thread pt = { .proc = proc };
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt.thread, NULL, process_main, &pt), 0);
    CU_ASSERT_EQUAL(rci_card_start(card), 0);
    uint64_t t0 = rci_sim_now_ns();
    while (rci_wupper_dma_poll(&d) < RING && rci_sim_now_ns() - t0 < 5000000000ull)
        sleep_ms(1);
    CU_ASSERT_EQUAL(rci_wupper_dma_poll(&d), RING);               /* it ran until full */
    rci_card_stop(card);
    CU_ASSERT_TRUE(rci_sim_now_ns() - t0 < 900000000ull);          /* it paused at once */
    CU_ASSERT_EQUAL(rci_sim_priv(card->bar.ctx)->fw_state, RCI_FW_IDLE);
    rci_card_destroy(card);
    pthread_join(pt.thread, NULL);
    CU_ASSERT_EQUAL(pt.why, RCI_SIM_EXIT_HOST_CLOSED);
    rci_sim_card_detach(proc);
    rci_mem_unmap(&ring);
    CU_ASSERT_EQUAL(rci_sim_bar_describe(base, &pcp, err, sizeof err) < 0, 1);  /* unlinked */
}

static void register_tests(void)
{
    RCI_SUITE("accessors", { "mmio on plain memory", test_mmio_accessors },
             { "scripted bad status", test_bad_status },
             { "status lagging a wrapping RD_POINTER write", test_status_lagging },
             { "bad status in the readout's statistics", test_bad_status_in_readout_stats },
             { "poll mode spins no longer than its work", test_poll_spin_bounded_by_work });
    RCI_SUITE("register model", { "empty at start", test_empty_at_start },
             { "full and empty, all parities", test_full_empty_parities },
             { "set_read split rule", test_set_read_split_rule },
             { "RD_POINTER events", test_rd_pointer_events },
             { "enable off and reset", test_enable_off_and_reset },
             { "refused programming", test_refused_programming });
    RCI_SUITE("firmware", { "rate limit", test_rate_limit },
             { "rate limit finishes started chunks", test_rate_limit_finishes_started }, { "run time", test_run_time },
             { "thread", test_threaded_sim }, { "shm process", test_shm_process });
}

RCI_CUNIT_MAIN(register_tests)
