/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_bar.c — the simulated card's BAR: Wupper registers in memory, with
 * the firmware's reaction to register writes carried out in the writer's
 * context (a register write is an event in hardware):
 *
 *  RD_POINTER(n)   while descriptor n is enabled: if the new value is below
 *                  the old one the host's pointer wrapped, so EVEN_PC toggles
 *                  (atomic xor); the advance (mod ring size) is added to the
 *                  private monotonic host_read_total, which the firmware uses
 *                  to compute free space. The host never advances by a full
 *                  ring in one write (rci_wupper_dma_set_read splits), so every
 *                  write is unambiguous. While disabled a write only positions
 *                  the pointer. Values outside [START, END) are ignored and
 *                  counted (bad_rd_writes).
 *  DESC_ENABLE     a rising edge of bit n begins a run: CURRENT_ADDRESS =
 *                  START, EVEN_DMA = EVEN_PC = 0, host_read_total = 0, run_gen
 *                  bumped (a firmware still finishing the previous run then
 *                  discards its update). A falling edge: the firmware stops
 *                  before its next block.
 *  DMA_RESET       clears DESC_ENABLE and every descriptor's status and
 *                  totals, bumps run_gen. START/END/CTRL/RD_POINTER keep their
 *                  values.
 *  FIFO_FLUSH      no effect: the simulator has no FIFO (a block is in the
 *                  ring before CURRENT_ADDRESS moves past it).
 *  DMA_DESC_STATUS_n  read-only: writes are ignored.
 * Offsets outside [0, 0x1000) or not 8-byte aligned read as all ones (as an
 * unclaimed PCIe read does) and ignore writes.
 */
#include "common/errbuf.h"
#include "readout/sim/sim_bar.h"
#include "common/monotonic.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "readout/card.h"

#define STEAL_AFTER_NS   100000000ull   /* a live writer holds the lock for nanoseconds */
#define SPINS_BEFORE_YIELD 1024u

void rci_sim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Spin, then yield; true once the wait started at *since exceeds the steal
 * limit. */
static bool wait_a_little(unsigned *spins, uint64_t *since)
{
    if (++*spins < SPINS_BEFORE_YIELD) {
        rci_sim_cpu_relax();
        return false;
    }
    uint64_t now = rci_now_ns();
    if (*since == 0)
        *since = now;
    sched_yield();
    return now - *since > STEAL_AFTER_NS;
}

uint64_t rci_sim_status_lock(uint8_t *bar, unsigned desc)
{
    struct rci_sim_priv *p = rci_sim_priv(bar);
    uint64_t *seq = &p->desc[desc].seq;
    unsigned spins = 0;
    uint64_t since = 0;
    for (;;) {
        uint64_t s = __atomic_load_n(seq, __ATOMIC_RELAXED);
        if (!(s & 1)) {
            if (__atomic_compare_exchange_n(seq, &s, s + 1, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
                s += 1;
                __atomic_thread_fence(__ATOMIC_RELEASE);
                return s;
            }
            continue;
        }
        if (wait_a_little(&spins, &since)) {
            /* The holder died inside its critical section: carry on as the
             * writer of that odd value. */
            __atomic_fetch_add(&p->lock_steals, 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_RELEASE);
            return s;
        }
    }
}

void rci_sim_status_unlock(uint8_t *bar, unsigned desc, uint64_t locked)
{
    __atomic_store_n(&rci_sim_priv(bar)->desc[desc].seq, locked + 1, __ATOMIC_RELEASE);
}

/* ---- host-side accessors ------------------------------------------------ */

static bool reg_ok(uint32_t off) { return off < WUPPER_BAR0_SIZE && off % 8 == 0; }

/* Descriptor whose status register starts at off, or -1. */
static int status_desc(uint32_t off)
{
    if (off < WUPPER_STATUS(0) || off >= WUPPER_STATUS(WUPPER_MAX_DESCRIPTORS))
        return -1;
    return (off - WUPPER_STATUS(0)) % 0x10u == 0 ? (int)((off - WUPPER_STATUS(0)) / 0x10u) : -1;
}

static uint64_t sim_read64(void *ctx, uint32_t off)
{
    return reg_ok(off) ? RCI_SIM_LOAD(rci_sim_reg(ctx, off)) : ~0ull;
}

/* Seqlock read: a status snapshot no writer was changing. */
static void read_status(uint8_t *bar, unsigned n, uint64_t *lo, uint64_t *hi)
{
    struct rci_sim_priv *p = rci_sim_priv(bar);
    uint64_t *seq = &p->desc[n].seq;
    uint64_t *cur = rci_sim_reg(bar, WUPPER_STATUS_CURRENT(n));
    uint64_t *bits = rci_sim_reg(bar, WUPPER_STATUS_BITS(n));
    unsigned spins = 0;
    uint64_t since = 0;
    for (;;) {
        uint64_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        *lo = __atomic_load_n(cur, __ATOMIC_RELAXED);
        *hi = __atomic_load_n(bits, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
        if (s1 == s2 && !(s1 & 1))
            return;
        if (wait_a_little(&spins, &since)) {
            /* A writer died mid-update: return what is there; the host
             * validates it (rci_wupper_dma_poll). */
            __atomic_fetch_add(&p->torn_reads, 1, __ATOMIC_RELAXED);
            return;
        }
    }
}

static void sim_read128(void *ctx, uint32_t off, uint64_t *lo, uint64_t *hi)
{
    if (!reg_ok(off) || !reg_ok(off + 8)) {
        *lo = *hi = ~0ull;
        return;
    }
    int n = status_desc(off);
    if (n >= 0) {
        read_status(ctx, (unsigned)n, lo, hi);
        return;
    }
    *lo = RCI_SIM_LOAD(rci_sim_reg(ctx, off));
    *hi = RCI_SIM_LOAD(rci_sim_reg(ctx, off + 8));
}

static void rd_pointer_written(uint8_t *bar, unsigned n, uint64_t v)
{
    struct rci_sim_desc_priv *dp = &rci_sim_priv(bar)->desc[n];
    uint64_t start = RCI_SIM_LOAD(rci_sim_reg(bar, WUPPER_DESC_START(n)));
    uint64_t end = RCI_SIM_LOAD(rci_sim_reg(bar, WUPPER_DESC_END(n)));
    uint64_t *rd = rci_sim_reg(bar, WUPPER_DESC_RD_POINTER(n));
    if (end <= start || v < start || v >= end) {
        __atomic_fetch_add(&dp->bad_rd_writes, 1, __ATOMIC_RELAXED);
        return;
    }
    uint64_t old = RCI_SIM_LOAD(rd);
    RCI_SIM_STORE(rd, v);
    bool enabled = (RCI_SIM_LOAD(rci_sim_reg(bar, WUPPER_DESC_ENABLE)) >> n) & 1u;
    if (!enabled || old < start || old >= end)
        return;                         /* positioning before (or at) the run's start */
    uint64_t size = end - start;
    uint64_t advance = v >= old ? v - old : v + size - old;
    if (v < old)
        __atomic_fetch_xor(rci_sim_reg(bar, WUPPER_STATUS_BITS(n)), WUPPER_STATUS_EVEN_PC,
                           __ATOMIC_ACQ_REL);
    /* The host is the only writer of its total: one store publishes it. */
    RCI_SIM_STORE(&dp->host_read_total, RCI_SIM_LOAD(&dp->host_read_total) + advance);
}

/* The status and totals of a new run, under the status seqlock so that a
 * firmware still finishing a previous run cannot overwrite them. */
static void reset_desc_status(uint8_t *bar, unsigned n, uint64_t current)
{
    struct rci_sim_desc_priv *dp = &rci_sim_priv(bar)->desc[n];
    uint64_t s = rci_sim_status_lock(bar, n);
    RCI_SIM_RELAXED_STORE(rci_sim_reg(bar, WUPPER_STATUS_CURRENT(n)), current);
    RCI_SIM_RELAXED_STORE(rci_sim_reg(bar, WUPPER_STATUS_BITS(n)), 0);
    RCI_SIM_RELAXED_STORE(&dp->host_read_total, 0);
    RCI_SIM_RELAXED_STORE(&dp->run_gen, dp->run_gen + 1);
    rci_sim_status_unlock(bar, n, s);
}

static void enable_written(uint8_t *bar, uint64_t v)
{
    uint64_t *en = rci_sim_reg(bar, WUPPER_DESC_ENABLE);
    uint64_t old = RCI_SIM_LOAD(en);
    uint64_t rising = v & ~old & ((1u << WUPPER_MAX_DESCRIPTORS) - 1);
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++)
        if (rising & (1ull << n))
            reset_desc_status(bar, n, RCI_SIM_LOAD(rci_sim_reg(bar, WUPPER_DESC_START(n))));
    RCI_SIM_STORE(en, v & ((1u << WUPPER_MAX_DESCRIPTORS) - 1));
}

static void dma_reset_written(uint8_t *bar)
{
    RCI_SIM_STORE(rci_sim_reg(bar, WUPPER_DESC_ENABLE), 0);
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++)
        reset_desc_status(bar, n, 0);
}

static void sim_write64(void *ctx, uint32_t off, uint64_t v)
{
    uint8_t *bar = ctx;
    if (!reg_ok(off) || status_desc(off & ~0xfu) >= 0 || off == WUPPER_FIFO_FLUSH)
        return;
    if (off == WUPPER_DESC_ENABLE) {
        enable_written(bar, v);
    } else if (off == WUPPER_DMA_RESET) {
        dma_reset_written(bar);
    } else if (off < WUPPER_DESC(WUPPER_MAX_DESCRIPTORS) &&
               off % 0x20u == WUPPER_DESC_RD_POINTER(0)) {
        rd_pointer_written(bar, off / 0x20u, v);
    } else {
        RCI_SIM_STORE(rci_sim_reg(bar, off), v);
    }
}

static const struct rci_bar_ops sim_ops = {
    .read64 = sim_read64,
    .write64 = sim_write64,
    .read128 = sim_read128,
};

void rci_sim_bar_init_ops(struct rci_bar *b, uint8_t *bar)
{
    b->ops = &sim_ops;
    b->ctx = bar;
}

/* ---- private page ------------------------------------------------------- */

void rci_sim_bar_format(uint8_t *bar, const struct rci_card_params *cp)
{
    memset(bar, 0, RCI_SIM_BAR_BYTES);
    struct rci_sim_priv *p = rci_sim_priv(bar);
    p->version = RCI_SIM_BAR_VERSION;
    p->bar_bytes = RCI_SIM_BAR_BYTES;
    p->ring_size = cp->ring_size;
    p->block_size = cp->block_size;
    p->block_format = (uint64_t)cp->block_format;
    p->tag_base = cp->tag_base;
    p->descriptor = cp->dma_descriptor;
    p->fw_state = RCI_FW_NONE;
    /* The magic last: an attacher that sees it sees a complete header. */
    RCI_SIM_STORE(&p->magic, RCI_SIM_BAR_MAGIC);
}

int rci_sim_bar_validate(uint8_t *bar, size_t size, const char *where, char *err, size_t errlen)
{
    struct rci_sim_priv *p = rci_sim_priv(bar);
    const char *why = NULL;
    if (size < RCI_SIM_BAR_BYTES)
        why = "too small to be a simulated card's BAR";
    else if (RCI_SIM_LOAD(&p->magic) != RCI_SIM_BAR_MAGIC)
        why = "no simulated-card BAR header (wrong magic)";
    else if (p->version != RCI_SIM_BAR_VERSION)
        why = "simulated-card BAR of another version";
    else if (p->bar_bytes != RCI_SIM_BAR_BYTES)
        why = "simulated-card BAR of another size";
    if (!why)
        return 0;
    if (err && errlen)
        rci_set_err(err, errlen, "%s: %s (this build: version %u, %u bytes)", where, why,
                 RCI_SIM_BAR_VERSION, RCI_SIM_BAR_BYTES);
    return -EPROTO;
}

void rci_sim_bar_read_stats(uint8_t *bar, struct rci_card_stats *s)
{
    const struct rci_sim_priv_stats *ps = &rci_sim_priv(bar)->stats;
#define GET(f) __atomic_load_n(&ps->f, __ATOMIC_RELAXED)
    *s = (struct rci_card_stats){
        .chunks_produced = GET(chunks_produced),
        .bytes_produced = GET(bytes_produced),
        .blocks_written = GET(blocks_written),
        .stall_ns = GET(stall_ns),
        .stall_events = GET(stall_events),
        .injected_truncated = GET(injected_truncated),
        .injected_crc = GET(injected_crc),
        .injected_malformed = GET(injected_malformed),
        .injected_seqskip = GET(injected_seqskip),
        .replay_loops = GET(replay_loops),
        .host_errors = GET(host_errors),
        .finished = GET(finished) != 0,
    };
#undef GET
    /* RD_POINTER writes the BAR refused are host errors too. */
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++)
        s->host_errors += __atomic_load_n(&rci_sim_priv(bar)->desc[n].bad_rd_writes,
                                          __ATOMIC_RELAXED);
}
