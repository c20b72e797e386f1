/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_firmware.c — the simulated card's firmware (see sim_firmware.h). */
#include "readout/sim/sim_firmware.h"
#include "common/errbuf.h"
#include "common/monotonic.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "readout/sim/sim_blocks.h"
#include "readout/wupper_regs.h"

#define BATCH_BYTES        (64u << 10)   /* publish the write pointer at least this often */
#define STALL_SPIN_NS      20000ull      /* then sleep between checks: ... */
#define STALL_SLEEP_NS     30000ull      /* ... at least this, half the time stalled so far, ... */
#define STALL_SLEEP_MAX_NS 500000ull     /* ... at most this */
#define IDLE_SLEEP_NS      1000000ull
#define RATE_MAX_SLEEP_NS  1000000ull
#define RATE_MIN_SLEEP_NS  50000ull      /* blocks of a moderate rate gather this long's chunks */
#define RATE_BURST_S       1e-3          /* the bucket holds this much time's worth ... */
#define RATE_BURST_BLOCKS  2.0           /* ... or this many full blocks' worth, if more */
#define FW_TIMER_SLACK_NS  1000ul        /* a card's timers are exact: sleeps overshoot by at most this */

struct rate_bucket {
    enum rci_rate_unit unit;       /* RCI_RATE_UNLIMITED: no bucket */
    double per_ns, burst, tokens;
    uint64_t last_ns;
};

struct rci_sim_fw {
    uint8_t *bar;
    struct rci_sim_priv *priv;
    unsigned desc;
    uint8_t *ring;
    uint64_t ring_size;
    uint32_t block_size;
    unsigned batch;
    struct rci_sim_gen *gen;
    struct rate_bucket rate;
    uint64_t run_ns;              /* 0 = no time limit */
    uint64_t pause_every_ns, pause_for_ns;   /* quiet times of the source (0: none) */
    uint64_t first_arm_ns;        /* the run clock starts at the first enable */

    /* the current DMA run */
    bool armed;
    uint64_t run_gen;
    bool refused;
    uint64_t refused_gen;
    uint64_t start;               /* bus address of ring[0] */
    uint64_t write_total;         /* monotonic bytes written this run */
    uint64_t last_bad_read;       /* last host read total seen beyond write_total */

    bool stalled;
    uint64_t stall_since, stall_ns, stall_events;
    uint64_t host_errors;
    bool finished;
    enum rci_sim_fw_state state;
    uint64_t wait_hint_ns;
    /* data-available interrupt (rci_sim_fw_set_irq) */
    int irq_fd;                   /* -1: none */
    uint32_t irq_blocks;
    uint64_t irq_timeout_ns;
    uint64_t irq_pending;         /* blocks published since the last interrupt */
    uint64_t irq_pending_since;   /* when the oldest of them was published */
    /* What firmware before this one counted in the BAR: counters go on from
     * there, so a restarted simulator never makes them go backwards. */
    struct rci_sim_priv_stats base;
};


static uint64_t *reg(const struct rci_sim_fw *fw, uint32_t off) { return rci_sim_reg(fw->bar, off); }

/* ---- rate limiter -------------------------------------------------------- */

/* Units a full block holds: bytes, or the most chunks of the smallest size. */
static double block_units(const struct rci_sim_params *sp, enum felix_format fmt, uint32_t bs)
{
    if (sp->rate.unit == RCI_RATE_BYTES)
        return bs;
    unsigned tb = rci_felix_trailer_bytes(fmt);
    uint32_t smallest = (sp->chunk_size_min + tb - 1) / tb * tb + tb;
    double n = (double)(bs - FELIX_HEADER_BYTES) / smallest;
    return n < 1 ? 1 : n;
}

static int rate_init(struct rate_bucket *r, const struct rci_sim_params *sp,
                     const struct rci_card_params *cp, char *err, size_t errlen)
{
    r->unit = sp->rate.unit;
    if (r->unit == RCI_RATE_UNLIMITED)
        return 0;
    if ((r->unit != RCI_RATE_BYTES && r->unit != RCI_RATE_CHUNKS) ||
        !(sp->rate.per_second > 0) || isinf(sp->rate.per_second)) {
        rci_set_err(err, errlen, "sim: rate must be unlimited or a positive number of %s per second",
                r->unit == RCI_RATE_CHUNKS ? "chunks" : "bytes");
        return -EINVAL;
    }
    r->per_ns = sp->rate.per_second * 1e-9;
    r->burst = fmax(sp->rate.per_second * RATE_BURST_S,
                    RATE_BURST_BLOCKS * block_units(sp, cp->block_format, cp->block_size));
    r->tokens = r->burst;
    return 0;
}

/* Fill budget from the bucket; false (and a wait hint) if not even one unit
 * is there. Unlimited: *bp = NULL. */
static bool rate_budget(struct rci_sim_fw *fw, uint64_t now, struct rci_sim_budget *b,
                        const struct rci_sim_budget **bp)
{
    struct rate_bucket *r = &fw->rate;
    *bp = NULL;
    if (r->unit == RCI_RATE_UNLIMITED)
        return true;
    if (r->last_ns != 0 && now > r->last_ns)
        r->tokens = fmin(r->burst, r->tokens + (double)(now - r->last_ns) * r->per_ns);
    r->last_ns = now;
    if (r->tokens < 1.0) {
        fw->wait_hint_ns = (uint64_t)((1.0 - r->tokens) / r->per_ns) + 1;
        return false;
    }
    uint64_t units = (uint64_t)r->tokens;
    b->new_chunks = r->unit == RCI_RATE_CHUNKS ? units : UINT64_MAX;
    b->payload_bytes = r->unit == RCI_RATE_BYTES ? units : UINT64_MAX;
    *bp = b;
    return true;
}

/* A block may overdraw the bucket (a started chunk is finished): the debt
 * delays the next block, so the average rate holds. */
static void rate_consume(struct rci_sim_fw *fw, const struct rci_sim_block_info *info)
{
    if (fw->rate.unit == RCI_RATE_CHUNKS)
        fw->rate.tokens -= info->chunks_started;
    else if (fw->rate.unit == RCI_RATE_BYTES)
        fw->rate.tokens -= (double)info->payload_bytes;
}

/* ---- create -------------------------------------------------------------- */

int rci_sim_fw_create(uint8_t *bar, const struct rci_card_params *cp,
                     const struct rci_sim_params *sp, uint8_t *ring, uint64_t ring_size,
                     struct rci_sim_fw **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cp->dma_descriptor >= WUPPER_MAX_DESCRIPTORS) {
        rci_set_err(err, errlen, "card.%u: DMA descriptor %u is not 0..%u", cp->index,
                cp->dma_descriptor, WUPPER_MAX_DESCRIPTORS - 1);
        return -EINVAL;
    }
    if (ring_size == 0 || ring_size % cp->block_size != 0) {
        rci_set_err(err, errlen, "card.%u: ring of %" PRIu64 " bytes is not a non-zero multiple of the %"
                PRIu32 "-byte block size", cp->index, ring_size, cp->block_size);
        return -EINVAL;
    }
    struct rci_sim_fw *fw = calloc(1, sizeof *fw);
    if (!fw) {
        rci_set_err(err, errlen, "card.%u: out of memory", cp->index);
        return -ENOMEM;
    }
    struct rci_sim_gen_config gc = { .format = cp->block_format, .block_size = cp->block_size,
                                    .tag_base = cp->tag_base, .sim = *sp };
    int rc = rci_sim_gen_create(&gc, &fw->gen, err, errlen);
    if (rc == 0)
        rc = rate_init(&fw->rate, sp, cp, err, errlen);
    if (rc == 0 && sp->pause_every_ns && sp->pause_for_ns >= sp->pause_every_ns) {
        rci_set_err(err, errlen, "sim: pause_for must be shorter than pause_every (a source never heard)");
        rc = -EINVAL;
    }
    if (rc != 0) {
        rci_sim_fw_destroy(fw);
        return rc;
    }
    fw->bar = bar;
    fw->priv = rci_sim_priv(bar);
    fw->desc = cp->dma_descriptor;
    fw->ring = ring;
    fw->ring_size = ring_size;
    fw->block_size = cp->block_size;
    fw->batch = BATCH_BYTES / cp->block_size ? BATCH_BYTES / cp->block_size : 1;
    fw->run_ns = sp->run_ns;
    fw->pause_every_ns = sp->pause_every_ns;
    fw->pause_for_ns = sp->pause_every_ns ? sp->pause_for_ns : 0;
    fw->state = RCI_FW_IDLE;
    fw->irq_fd = -1;
    fw->base = fw->priv->stats;
    RCI_SIM_STORE(&fw->priv->fw_state, (uint64_t)RCI_FW_IDLE);
    *out = fw;
    return 0;
}

void rci_sim_fw_destroy(struct rci_sim_fw *fw)
{
    if (!fw)
        return;
    rci_sim_gen_destroy(fw->gen);
    free(fw);
}

enum rci_sim_fw_state rci_sim_fw_state(const struct rci_sim_fw *fw) { return fw->state; }
uint64_t rci_sim_fw_write_total(const struct rci_sim_fw *fw) { return fw->write_total; }

/* ---- descriptor tracking -------------------------------------------------- */

static void end_stall(struct rci_sim_fw *fw, uint64_t now)
{
    if (fw->stalled) {
        fw->stall_ns += now - fw->stall_since;
        fw->stalled = false;
    }
}

static void refuse(struct rci_sim_fw *fw, uint64_t gen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct rci_sim_fw *fw, uint64_t gen, const char *fmt, ...)
{
    char msg[sizeof fw->priv->fw_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(fw->priv->fw_error, msg, sizeof msg);
    fw->refused = true;
    fw->refused_gen = gen;
    fw->host_errors++;
}

/* The write total the host sees in the status register (CURRENT_ADDRESS and
 * EVEN_DMA against the host's read total), as the host computes it. */
static uint64_t published_write_total(const struct rci_sim_fw *fw, uint64_t start)
{
    unsigned n = fw->desc;
    uint64_t s = rci_sim_status_lock(fw->bar, n);
    uint64_t woff = RCI_SIM_LOAD(reg(fw, WUPPER_STATUS_CURRENT(n))) - start;
    bool odd_dma = RCI_SIM_LOAD(reg(fw, WUPPER_STATUS_BITS(n))) & WUPPER_STATUS_EVEN_DMA;
    rci_sim_status_unlock(fw->bar, n, s);
    uint64_t rlap = RCI_SIM_LOAD(&fw->priv->desc[n].host_read_total) / fw->ring_size;
    if (woff >= fw->ring_size)
        woff = 0;
    return (odd_dma == (rlap & 1u) ? rlap : rlap + 1) * fw->ring_size + woff;
}

/* Latch the descriptor the host enabled; refuse what this card cannot do. */
static bool arm(struct rci_sim_fw *fw, uint64_t gen, uint64_t now)
{
    unsigned n = fw->desc;
    uint64_t start = RCI_SIM_LOAD(reg(fw, WUPPER_DESC_START(n)));
    uint64_t end = RCI_SIM_LOAD(reg(fw, WUPPER_DESC_END(n)));
    uint64_t ctrl = RCI_SIM_LOAD(reg(fw, WUPPER_DESC_CTRL(n)));
    uint64_t rd = RCI_SIM_LOAD(reg(fw, WUPPER_DESC_RD_POINTER(n)));
    if (end <= start || end - start != fw->ring_size) {
        refuse(fw, gen, "descriptor %u: END - START = 0x%" PRIx64 " - 0x%" PRIx64
               " is not the %" PRIu64 "-byte ring this card writes", n, end, start, fw->ring_size);
        return false;
    }
    if (ctrl & WUPPER_CTRL_READ_WRITE) {
        refuse(fw, gen, "descriptor %u: READ_WRITE = 1 (FromHost); the simulator only does ToHost", n);
        return false;
    }
    if (!(ctrl & WUPPER_CTRL_WRAP_AROUND)) {
        refuse(fw, gen, "descriptor %u: WRAP_AROUND = 0; the simulator only does endless DMA", n);
        return false;
    }
    /* A predecessor that died armed this very run: go on where it last
     * published CURRENT_ADDRESS (what it wrote after that the host never saw). */
    if (RCI_SIM_LOAD(&fw->priv->fw_armed_gen) == gen && gen != 0 && fw->run_gen != gen) {
        fw->armed = true;
        fw->refused = false;
        fw->run_gen = gen;
        fw->start = start;
        fw->write_total = published_write_total(fw, start);
        if (fw->first_arm_ns == 0)
            fw->first_arm_ns = now;
        return true;
    }
    if (rd != start) {
        refuse(fw, gen, "descriptor %u: RD_POINTER 0x%" PRIx64 " is not START 0x%" PRIx64
               " when enabled", n, rd, start);
        return false;
    }
    fw->armed = true;
    fw->refused = false;
    fw->run_gen = gen;
    fw->start = start;
    fw->write_total = 0;
    RCI_SIM_STORE(&fw->priv->stats.write_total, 0);
    RCI_SIM_STORE(&fw->priv->fw_armed_gen, gen);
    if (fw->first_arm_ns == 0)
        fw->first_arm_ns = now;
    return true;
}

/* React to enable / disable / reset. True if the firmware may write. */
static bool track_descriptor(struct rci_sim_fw *fw, uint64_t now)
{
    unsigned n = fw->desc;
    uint64_t gen = RCI_SIM_LOAD(&fw->priv->desc[n].run_gen);
    bool enabled = (RCI_SIM_LOAD(reg(fw, WUPPER_DESC_ENABLE)) >> n) & 1u;
    if (fw->armed && (gen != fw->run_gen || !enabled)) {
        fw->armed = false;
        end_stall(fw, now);
    }
    if (!enabled) {
        fw->state = RCI_FW_IDLE;
        return false;
    }
    if (!fw->armed) {
        if ((fw->refused && fw->refused_gen == gen) || !arm(fw, gen, now)) {
            fw->state = RCI_FW_REFUSED;
            return false;
        }
    }
    return true;
}

/* ---- writing ---------------------------------------------------------------- */

/* Room for one more block without overtaking the host's read pointer. */
static bool ring_has_room(struct rci_sim_fw *fw, uint64_t now)
{
    uint64_t read = RCI_SIM_LOAD(&fw->priv->desc[fw->desc].host_read_total);
    if (read > fw->write_total) {
        /* The host gave back data never written: a host bug. Count it once
         * per value and trust only what this card wrote. */
        if (read != fw->last_bad_read) {
            fw->last_bad_read = read;
            fw->host_errors++;
        }
        read = fw->write_total;
    }
    if (fw->ring_size - (fw->write_total - read) >= fw->block_size) {
        end_stall(fw, now);
        return true;
    }
    if (!fw->stalled) {
        fw->stalled = true;
        fw->stall_since = now;
        fw->stall_events++;
    }
    return false;
}

/* CURRENT_ADDRESS and EVEN_DMA, unless the host began a new run meanwhile. */
static void publish_position(struct rci_sim_fw *fw)
{
    unsigned n = fw->desc;
    uint64_t s = rci_sim_status_lock(fw->bar, n);
    if (RCI_SIM_LOAD(&fw->priv->desc[n].run_gen) == fw->run_gen) {
        RCI_SIM_RELAXED_STORE(reg(fw, WUPPER_STATUS_CURRENT(n)),
                             fw->start + fw->write_total % fw->ring_size);
        bool odd_lap = (fw->write_total / fw->ring_size) & 1u;
        uint64_t *bits = reg(fw, WUPPER_STATUS_BITS(n));
        bool even_dma = __atomic_load_n(bits, __ATOMIC_RELAXED) & WUPPER_STATUS_EVEN_DMA;
        /* xor, not store: the host toggles EVEN_PC in the same word. */
        if (even_dma != odd_lap)
            __atomic_fetch_xor(bits, WUPPER_STATUS_EVEN_DMA, __ATOMIC_RELAXED);
    }
    rci_sim_status_unlock(fw->bar, n, s);
}

static void publish_stats(struct rci_sim_fw *fw, uint64_t now)
{
    struct rci_sim_gen_stats g;
    rci_sim_gen_get_stats(fw->gen, &g);
    struct rci_sim_priv_stats *ps = &fw->priv->stats;
    uint64_t stall_ns = fw->stall_ns + (fw->stalled ? now - fw->stall_since : 0);
    const struct rci_sim_priv_stats *b = &fw->base;
    RCI_SIM_RELAXED_STORE(&ps->chunks_produced, b->chunks_produced + g.chunks_completed);
    RCI_SIM_RELAXED_STORE(&ps->bytes_produced, b->bytes_produced + g.payload_bytes);
    RCI_SIM_RELAXED_STORE(&ps->blocks_written, b->blocks_written + g.blocks);
    RCI_SIM_RELAXED_STORE(&ps->stall_ns, b->stall_ns + stall_ns);
    RCI_SIM_RELAXED_STORE(&ps->stall_events, b->stall_events + fw->stall_events);
    RCI_SIM_RELAXED_STORE(&ps->injected_truncated, b->injected_truncated + g.injected_truncated);
    RCI_SIM_RELAXED_STORE(&ps->injected_crc, b->injected_crc + g.injected_crc);
    RCI_SIM_RELAXED_STORE(&ps->injected_malformed, b->injected_malformed + g.injected_malformed);
    RCI_SIM_RELAXED_STORE(&ps->injected_seqskip, b->injected_seqskip + g.injected_seqskip);
    RCI_SIM_RELAXED_STORE(&ps->replay_loops, b->replay_loops + g.replay_loops);
    RCI_SIM_RELAXED_STORE(&ps->host_errors, b->host_errors + fw->host_errors);
    RCI_SIM_RELAXED_STORE(&ps->write_total, fw->write_total);
    RCI_SIM_RELAXED_STORE(&ps->finished, (uint64_t)fw->finished);
    RCI_SIM_STORE(&fw->priv->fw_state, (uint64_t)fw->state);
}

static void check_time_limit(struct rci_sim_fw *fw, uint64_t now)
{
    if (fw->run_ns && now - fw->first_arm_ns >= fw->run_ns)
        rci_sim_gen_stop_new_chunks(fw->gen);
}

/* Time left of the source's current quiet time (pause_every/pause_for), 0
 * outside one. A detector without triggers writes nothing for a while: the
 * host must wait without timing out or spinning, then go on. */
static uint64_t pause_left_ns(const struct rci_sim_fw *fw, uint64_t now)
{
    if (!fw->pause_for_ns)
        return 0;
    uint64_t phase = (now - fw->first_arm_ns) % fw->pause_every_ns;
    uint64_t quiet_from = fw->pause_every_ns - fw->pause_for_ns;
    return phase >= quiet_from ? fw->pause_every_ns - phase : 0;
}

/* The bucket is empty: the blocks that finish chunks already started are
 * still written now, only new chunks wait for tokens (a budget of none). The
 * rate counts chunks started (or payload bytes: those blocks overdraw, and the
 * debt delays the next new chunk), and a started chunk's bytes are in the card
 * already: a chunk spanning blocks must not wait a token per block (with
 * e-links interleaved, each of its blocks waited for the other e-links' new
 * chunks: milliseconds for an 8 KiB chunk in 4 KiB blocks at 2000 chunks/s).
 * False for a replay, whose blocks all wait for the rate. */
static bool finish_started_only(const struct rci_sim_fw *fw, struct rci_sim_budget *budget,
                                const struct rci_sim_budget **bp)
{
    if (rci_sim_gen_replay_blocks(fw->gen) > 0)
        return false;
    *budget = (struct rci_sim_budget){ .new_chunks = 0, .payload_bytes = 0 };
    *bp = budget;
    return true;
}

/* Write blocks while everything allows; sets the state that stopped it. */
static unsigned write_blocks(struct rci_sim_fw *fw, unsigned max_blocks, uint64_t now)
{
    unsigned written = 0;
    uint64_t quiet = pause_left_ns(fw, now);
    if (quiet) {   /* waiting for the source, like a rate limit; not backpressure */
        end_stall(fw, now);
        fw->state = RCI_FW_RATE_LIMITED;
        fw->wait_hint_ns = quiet;
        return 0;
    }
    fw->state = RCI_FW_RUNNING;
    while (written < max_blocks) {
        if (!ring_has_room(fw, now)) {
            fw->state = RCI_FW_STALLED;
            break;
        }
        struct rci_sim_budget budget;
        const struct rci_sim_budget *bp;
        if (!rate_budget(fw, now, &budget, &bp) && !finish_started_only(fw, &budget, &bp)) {
            fw->state = RCI_FW_RATE_LIMITED;
            break;
        }
        struct rci_sim_block_info info;
        uint8_t *dst = fw->ring + fw->write_total % fw->ring_size;
        if (!rci_sim_gen_next(fw->gen, dst, bp, &info)) {
            fw->finished = rci_sim_gen_done(fw->gen);
            fw->state = fw->finished ? RCI_FW_FINISHED : RCI_FW_RATE_LIMITED;
            break;
        }
        fw->write_total += fw->block_size;
        rate_consume(fw, &info);
        written++;
    }
    return written;
}

/* Like Wupper's data-available interrupt: after irq_blocks blocks, after
 * irq_timeout for fewer, and at once when the ring is full (the host must
 * not sleep while the card waits for it). */
static void maybe_interrupt(struct rci_sim_fw *fw, unsigned written, uint64_t now)
{
    if (fw->irq_fd < 0)
        return;
    if (written && fw->irq_pending == 0)
        fw->irq_pending_since = now;
    fw->irq_pending += written;
    if (fw->irq_pending == 0)
        return;
    if (fw->irq_pending >= fw->irq_blocks || now - fw->irq_pending_since >= fw->irq_timeout_ns ||
        fw->state == RCI_FW_STALLED || fw->state == RCI_FW_FINISHED) {
        uint64_t one = 1;
        ssize_t rc = write(fw->irq_fd, &one, sizeof one);
        (void)rc;   /* EAGAIN: the counter is at its maximum, the host will wake anyway */
        fw->irq_pending = 0;
    }
}

void rci_sim_fw_set_irq(struct rci_sim_fw *fw, int fd, uint32_t blocks, uint64_t timeout_ns)
{
    fw->irq_fd = fd;
    fw->irq_blocks = blocks ? blocks : 1;
    fw->irq_timeout_ns = timeout_ns;
    fw->irq_pending = 0;
}

unsigned rci_sim_fw_step(struct rci_sim_fw *fw, unsigned max_blocks)
{
    uint64_t now = rci_now_ns();
    unsigned written = 0;
    fw->wait_hint_ns = 0;
    if (track_descriptor(fw, now)) {
        if (fw->finished) {
            fw->state = RCI_FW_FINISHED;
        } else {
            check_time_limit(fw, now);
            written = write_blocks(fw, max_blocks, now);
            if (written)
                publish_position(fw);
        }
        maybe_interrupt(fw, written, now);
    }
    publish_stats(fw, now);
    return written;
}

/* ---- run loop ------------------------------------------------------------- */

/* A host that has not freed room for a while will not free it at once
 * either (it gives back rd_update_bytes at a time): checking every 30 us
 * would spend a core's worth of wake-ups the host's own threads need (a
 * real card costs the host nothing while it waits). The ring ahead of the
 * host still holds up to ring_size of data, so waking later loses nothing. */
static uint64_t stall_sleep_ns(uint64_t stalled_ns)
{
    uint64_t ns = stalled_ns / 2;
    return ns < STALL_SLEEP_NS ? STALL_SLEEP_NS : ns > STALL_SLEEP_MAX_NS ? STALL_SLEEP_MAX_NS : ns;
}

/* Nothing was written this tick: wait in the way that suits why. */
static void idle_wait(struct rci_sim_fw *fw, uint64_t *idle_since)
{
    switch (fw->state) {
    case RCI_FW_STALLED: {
        uint64_t now = rci_now_ns();
        if (*idle_since == 0)
            *idle_since = now;
        uint64_t stalled = now - *idle_since;
        if (stalled < STALL_SPIN_NS)
            rci_sim_cpu_relax();
        else
            rci_sleep_ns(stall_sleep_ns(stalled));
        return;
    }
    case RCI_FW_RATE_LIMITED:
        /* Sleep even for a short wait: spinning would keep a core busy
         * for the whole run, taking it from the host's threads (a real card
         * costs the host nothing). Oversleeping loses no rate: the tokens
         * keep coming into the bucket, which holds RATE_BURST_S of them, and
         * the next tick writes them. At least RATE_MIN_SLEEP_NS (what the
         * kernel's default timer slack made of shorter sleeps before this
         * thread's slack was cut for the interrupt timeout): a block per
         * token would cost a wake-up per chunk. A chunk's stamp (fill =
         * timestamp) is taken when it is written, so this adds no latency
         * the host measures. */
    {
        uint64_t ns = fw->wait_hint_ns < RATE_MIN_SLEEP_NS ? RATE_MIN_SLEEP_NS
                    : fw->wait_hint_ns < RATE_MAX_SLEEP_NS ? fw->wait_hint_ns : RATE_MAX_SLEEP_NS;
        if (fw->irq_fd >= 0 && fw->irq_pending) {   /* wake for the interrupt's timeout */
            uint64_t due = fw->irq_pending_since + fw->irq_timeout_ns, now = rci_now_ns();
            ns = due <= now ? 0 : due - now < ns ? due - now : ns;
        }
        rci_sleep_ns(ns);
        return;
    }
    default:
        rci_sleep_ns(IDLE_SLEEP_NS);
        return;
    }
}

void rci_sim_fw_run(struct rci_sim_fw *fw,
                   enum rci_sim_loop_cmd (*control)(void *ctx, const struct rci_sim_fw *fw),
                   void *ctx)
{
    uint64_t idle_since = 0;
    /* The interrupt's timeout (sim.N.irq_timeout, 20 us) is met by a sleep:
     * the kernel's default slack of 50 us would make every lone block's
     * interrupt late by up to that (a failure keeps the default). */
    (void)prctl(PR_SET_TIMERSLACK, FW_TIMER_SLACK_NS, 0, 0, 0);
    for (;;) {
        RCI_SIM_RELAXED_STORE(&fw->priv->fw_heartbeat_ns, rci_now_ns());
        enum rci_sim_loop_cmd cmd = control(ctx, fw);
        if (cmd == RCI_SIM_LOOP_EXIT)
            return;
        if (cmd == RCI_SIM_LOOP_PAUSE) {
            end_stall(fw, rci_now_ns());     /* paused is not backpressure */
            fw->state = RCI_FW_IDLE;
            RCI_SIM_STORE(&fw->priv->fw_state, (uint64_t)RCI_FW_IDLE);
            idle_since = 0;
            rci_sleep_ns(IDLE_SLEEP_NS);
            continue;
        }
        if (rci_sim_fw_step(fw, fw->batch) > 0) {
            idle_since = 0;
            continue;
        }
        idle_wait(fw, &idle_since);
    }
}
