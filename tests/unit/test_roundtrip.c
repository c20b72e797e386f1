/* SPDX-License-Identifier: BSD-3-Clause */
/* test_roundtrip.c — simulated card (in-process firmware thread, fill =
 * pattern) -> DMA ring -> readout thread -> a sink that checks every payload
 * byte and the per-tag sequence -> a releaser thread that gives the keys back
 * late and out of order. At the end every chunk produced was decoded exactly
 * once, nothing was counted as an error and the ring is empty. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "readout/sim/pattern.h"
#include "readout/readout.h"
#include "readout/sim/sim_card.h"
#include "tests/unit/cunit_main.h"

#define RT_ELINKS   8
#define RT_QUEUE    1024u          /* sink -> releaser, power of 2 */
#define RT_BATCH    64u
#define RT_TIMEOUT_NS (120ull * 1000000000ull)

struct rt_held { const struct rci_chunk *chunk; uint64_t seq; };

struct rt {
    struct rci_dma_ring *ring;
    struct rci_card *card;
    struct rci_readout *r;
    uint64_t tag_base;
    /* readout thread only */
    uint64_t next_seq[RT_ELINKS];
    uint64_t rng;
    /* sink -> releaser single-producer single-consumer queue */
    struct rt_held queue[RT_QUEUE];
    _Atomic uint64_t q_head, q_tail;
    _Atomic bool releaser_stop;
    pthread_t releaser;
    /* results */
    _Atomic uint64_t chunks, bytes, bad_bytes, bad_seq, bad_tag, again;
    _Atomic uint64_t recheck_failures;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };
    nanosleep(&ts, NULL);
}

/* Every byte of the chunk against the pattern of (tag, seq), in place. */
static bool pattern_ok(const struct rci_chunk *c, uint64_t seq)
{
    size_t at = 0;
    for (uint32_t i = 0; i < c->npieces; i++) {
        if (rci_pattern_check(c->pieces[i].addr, at, c->pieces[i].len, c->tag, seq) >= 0)
            return false;
        at += c->pieces[i].len;
    }
    return at == c->length;
}

/* The sequence number in the chunk's first bytes, which may span pieces. */
static uint64_t chunk_seq(const struct rci_chunk *c)
{
    uint8_t first[8];
    size_t n = 0;
    for (uint32_t i = 0; i < c->npieces && n < 8; i++)
        for (uint32_t b = 0; b < c->pieces[i].len && n < 8; b++)
            first[n++] = c->pieces[i].addr[b];
    return rci_pattern_seq(first, n);
}

static int rt_one(void *ctx, const struct rci_chunk *c)
{
    struct rt *t = ctx;
    uint64_t head = atomic_load_explicit(&t->q_head, memory_order_relaxed);
    if (head - atomic_load_explicit(&t->q_tail, memory_order_acquire) == RT_QUEUE) {
        atomic_fetch_add_explicit(&t->again, 1, memory_order_relaxed);
        return -EAGAIN;             /* the releaser is behind: offered again later */
    }
    unsigned e = c->elink;
    if (e >= RT_ELINKS || c->tag != t->tag_base + e) {
        atomic_fetch_add_explicit(&t->bad_tag, 1, memory_order_relaxed);
        rci_readout_release(t->r, c->key);
        return 0;
    }
    uint64_t seq = t->next_seq[e]++;
    if (c->length >= 8 && chunk_seq(c) != seq)
        atomic_fetch_add_explicit(&t->bad_seq, 1, memory_order_relaxed);
    if (!pattern_ok(c, seq))        /* also checks a short chunk's partial seq */
        atomic_fetch_add_explicit(&t->bad_bytes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->bytes, c->length, memory_order_relaxed);
    t->queue[head % RT_QUEUE] = (struct rt_held){ .chunk = c, .seq = seq };
    atomic_store_explicit(&t->q_head, head + 1, memory_order_release);
    atomic_fetch_add_explicit(&t->chunks, 1, memory_order_release);
    return 0;
}

static unsigned rt_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct rt *t = ctx;
    return rci_readout_sink_each(t->r, rt_one, t, chunks, n);
}

/* Releases what the sink queued, a batch at a time in shuffled order; every
 * 4th chunk is checked again first (its blocks must not have been reused). */
static void *releaser_main(void *arg)
{
    struct rt *t = arg;
    struct rt_held batch[RT_BATCH];
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (;;) {
        uint64_t tail = atomic_load_explicit(&t->q_tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&t->q_head, memory_order_acquire);
        unsigned n = (unsigned)(head - tail < RT_BATCH ? head - tail : RT_BATCH);
        if (n == 0) {
            if (atomic_load_explicit(&t->releaser_stop, memory_order_acquire))
                return NULL;
            sleep_us(50);
            continue;
        }
        for (unsigned i = 0; i < n; i++)
            batch[i] = t->queue[(tail + i) % RT_QUEUE];
        atomic_store_explicit(&t->q_tail, tail + n, memory_order_release);
        for (unsigned i = n; i > 1; i--) {          /* Fisher-Yates */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            unsigned j = (unsigned)(rng % i);
            struct rt_held tmp = batch[i - 1];
            batch[i - 1] = batch[j];
            batch[j] = tmp;
        }
        for (unsigned i = 0; i < n; i++) {
            if (((tail + i) & 3) == 0 && !pattern_ok(batch[i].chunk, batch[i].seq))
                atomic_fetch_add_explicit(&t->recheck_failures, 1, memory_order_relaxed);
            rci_readout_release(t->r, batch[i].chunk->key);
        }
    }
}

struct rt_case {
    enum felix_format fmt;
    uint32_t block_size;
    uint64_t ring_size;
    uint64_t chunks;
    uint32_t size_min, size_max;
    bool interrupt;                 /* card.N.wait = interrupt (the firmware raises an eventfd) */
    double rate_chunks;             /* 0: unlimited */
};

static bool wait_until(bool (*pred)(struct rt *), struct rt *t)
{
    uint64_t deadline = now_ns() + RT_TIMEOUT_NS;
    while (!pred(t)) {
        if (now_ns() > deadline)
            return false;
        sleep_us(1000);
    }
    return true;
}

static bool card_finished(struct rt *t)
{
    struct rci_card_stats cs;
    rci_card_get_stats(t->card, &cs);
    return cs.finished;
}

static bool releaser_idle(struct rt *t)
{
    return atomic_load(&t->q_head) == atomic_load(&t->q_tail);
}

static void setup(struct rt *t, const struct rt_case *k)
{
    char err[256];
    struct rci_dma_ring_params rp = { .size = k->ring_size, .unit_size = k->block_size,
                                     .backend = RCI_MEM_ANON, .lock_memory = false };
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&rp, &t->ring, err, sizeof err), 0);
    t->tag_base = 0x20000;
    struct rci_card_params cp = {
        .index = 2, .type = RCI_CARD_SIM, .tag_base = t->tag_base, .dma_descriptor = 0,
        .ring_size = k->ring_size, .block_size = k->block_size, .block_format = k->fmt,
        .memory = RCI_MEM_ANON, .poll_spin_ns = 20000, .poll_sleep_ns = 50000,
        .wait = k->interrupt ? RCI_WAIT_INTERRUPT : RCI_WAIT_POLL,
        .rd_update_bytes = 64 * 1024, .max_chunk_size = 1u << 20, .max_chunk_pieces = 64,
        .max_chunks_in_flight = 4096 };
    struct rci_sim_params sp = {
        .elinks = RT_ELINKS, .chunk_size_min = k->size_min, .chunk_size_max = k->size_max,
        .rate = { k->rate_chunks > 0 ? RCI_RATE_CHUNKS : RCI_RATE_UNLIMITED, k->rate_chunks },
        .fill = RCI_FILL_PATTERN, .run_chunks = k->chunks, .seed = 42,
        .irq_blocks = 16, .irq_timeout_ns = 1000000 };
    int rc = rci_sim_card_create(&cp, &sp, rci_dma_ring_addr(t->ring), k->ring_size, &t->card,
                                err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "rci_sim_card_create: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = rci_readout_create(&cp, t->ring, t->card, rt_sink, t, &t->r, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "rci_readout_create: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static void check_results(struct rt *t, const struct rt_case *k)
{
    struct rci_readout_stats s;
    struct rci_card_stats cs;
    struct rci_dma_ring_stats ring;
    rci_readout_get_stats(t->r, &s);
    rci_card_get_stats(t->card, &cs);
    rci_dma_ring_get_stats(t->ring, &ring);
    CU_ASSERT_EQUAL(cs.chunks_produced, k->chunks);
    CU_ASSERT_EQUAL(s.chunks, cs.chunks_produced);
    CU_ASSERT_EQUAL(atomic_load(&t->chunks), cs.chunks_produced);
    CU_ASSERT_EQUAL(s.bytes, cs.bytes_produced);
    CU_ASSERT_EQUAL(atomic_load(&t->bytes), cs.bytes_produced);
    CU_ASSERT_EQUAL(s.blocks, cs.blocks_written);
    CU_ASSERT_EQUAL(atomic_load(&t->bad_bytes), 0);
    CU_ASSERT_EQUAL(atomic_load(&t->bad_seq), 0);
    CU_ASSERT_EQUAL(atomic_load(&t->bad_tag), 0);
    CU_ASSERT_EQUAL(atomic_load(&t->recheck_failures), 0);
    CU_ASSERT_EQUAL(s.bad_header + s.err_malformed + s.err_seq_gap + s.err_oversize +
                    s.err_orphan + s.chunks_incomplete + s.chunks_dropped_gap +
                    s.chunks_dropped_pool + s.sink_errors, 0);
    CU_ASSERT_EQUAL(s.chunks_truncated + s.chunks_crc + s.chunks_error + s.chunks_busy, 0);
    CU_ASSERT_EQUAL(s.releases, s.chunks);
    CU_ASSERT_EQUAL(s.bad_releases, 0);
    CU_ASSERT_EQUAL(s.chunks_in_flight, 0);
    CU_ASSERT_EQUAL(s.sink_again, atomic_load(&t->again));
    CU_ASSERT_EQUAL(ring.read, ring.written);
    CU_ASSERT_EQUAL(ring.written, cs.blocks_written * k->block_size);
    CU_ASSERT_EQUAL(ring.bad_releases, 0);
    if (k->rate_chunks == 0)
        CU_ASSERT_TRUE(ring.written > 4 * k->ring_size);   /* wrapped many times */
    CU_ASSERT_TRUE(s.polls > 0);
    CU_ASSERT_TRUE(s.rd_writes > 0);
    if (k->interrupt) {
        CU_ASSERT_TRUE(s.irq_waits > 0);
        CU_ASSERT_TRUE(s.interrupts > 0);
    }
    for (unsigned e = 0; e < RT_ELINKS; e++)
        CU_ASSERT_TRUE(rci_readout_elink_seen(t->r, e));
}

/* running (may be NULL): the readout's counters when the card had finished,
 * before the stop and the drain. */
static void run_case(const struct rt_case *k, struct rci_readout_stats *running)
{
    struct rt *t = calloc(1, sizeof *t);
    CU_ASSERT_FATAL(t != NULL);
    uint64_t t0 = now_ns();
    setup(t, k);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t->releaser, NULL, releaser_main, t), 0);
    CU_ASSERT_EQUAL_FATAL(rci_readout_start(t->r), 0);
    CU_ASSERT_EQUAL(rci_readout_start(t->r), -EINVAL);         /* once only */

    /* The documented stop order: the card stops, the readout drains, then stops. */
    CU_ASSERT_TRUE(wait_until(card_finished, t));
    if (running)   /* before the drain, whose waiter makes the thread watch releases */
        rci_readout_get_stats(t->r, running);
    rci_card_stop(t->card);
    CU_ASSERT_EQUAL(rci_readout_wait_drained(t->r, RT_TIMEOUT_NS), 0);
    CU_ASSERT_TRUE(wait_until(releaser_idle, t));
    CU_ASSERT_EQUAL(rci_readout_wait_drained(t->r, RT_TIMEOUT_NS), 0);
    rci_readout_stop(t->r);
    atomic_store(&t->releaser_stop, true);
    pthread_join(t->releaser, NULL);
    CU_ASSERT_TRUE(rci_readout_drained(t->r));

    check_results(t, k);
    struct rci_readout_stats s;
    rci_readout_get_stats(t->r, &s);
    fprintf(stderr, "\n    %s %u B blocks: %llu chunks, %.1f MB in %.2f s; sink -EAGAIN %llu,"
            " polls %llu, sleeps %llu, irq waits %llu, interrupts %llu, RD_POINTER writes %llu ",
            k->fmt == FELIX_FMT_ABCD ? "abcd" : k->fmt == FELIX_FMT_ABCE ? "abce" : "c0ce",
            k->block_size, (unsigned long long)s.chunks, (double)s.bytes / 1e6,
            (double)(now_ns() - t0) / 1e9, (unsigned long long)s.sink_again,
            (unsigned long long)s.polls, (unsigned long long)s.sleeps,
            (unsigned long long)s.irq_waits, (unsigned long long)s.interrupts,
            (unsigned long long)s.rd_writes);
    rci_readout_destroy(t->r);
    rci_card_destroy(t->card);
    rci_dma_ring_destroy(t->ring);
    free(t);
}

static void test_c0ce_million(void)
{
    const struct rt_case k = { .fmt = FELIX_FMT_C0CE, .block_size = 4096,
                               .ring_size = 4u << 20, .chunks = 1000000,
                               .size_min = 16, .size_max = 6000 };
    run_case(&k, NULL);
}

static void test_abcd_abce(void)
{
    const struct rt_case abcd = { .fmt = FELIX_FMT_ABCD, .block_size = 1024,
                                  .ring_size = 256u << 10, .chunks = 50000,
                                  .size_min = 16, .size_max = 3000 };
    const struct rt_case abce = { .fmt = FELIX_FMT_ABCE, .block_size = 1024,
                                  .ring_size = 256u << 10, .chunks = 50000,
                                  .size_min = 1, .size_max = 3000 };
    run_case(&abcd, NULL);
    run_case(&abce, NULL);
}

/* wait = interrupt at full rate: the ring fills (the releaser lags), the
 * card stalls and raises its interrupt; every chunk arrives, nothing hangs. */
static void test_interrupt_full_rate(void)
{
    const struct rt_case k = { .fmt = FELIX_FMT_C0CE, .block_size = 4096,
                               .ring_size = 1u << 20, .chunks = 200000,
                               .size_min = 16, .size_max = 6000, .interrupt = true };
    run_case(&k, NULL);
}

/* wait = interrupt at a low rate: between chunks the thread sleeps on the
 * interrupt, also while the chunk it just emitted is still in flight (the
 * card has the ring's free half: its releases need no poll of their own;
 * a 4 MiB ring, so that a releaser the loaded machine holds up for less than
 * about 0.2 s does not take the card below half the ring, where the thread
 * rightly polls).
 * Nor does it spin poll_spin before each wait while spins find nothing.
 * Before, every chunk in flight cost poll_sleep wake-ups until its release
 * (`sleeps` 318 for 1000 chunks) and every wait a spin (`polls` 119 425). */
static void test_interrupt_low_rate(void)
{
    const struct rt_case k = { .fmt = FELIX_FMT_C0CE, .block_size = 4096,
                               .ring_size = 4u << 20, .chunks = 1000,
                               .size_min = 16, .size_max = 3000, .interrupt = true,
                               .rate_chunks = 2000 };
    struct rci_readout_stats s;
    run_case(&k, &s);
    CU_ASSERT_TRUE(s.sleeps < k.chunks / 10);
    CU_ASSERT_TRUE(s.polls < 20 * k.chunks);        /* no poll_spin before each wait (before: ~120 per chunk) */
}

static void register_tests(void)
{
    RCI_SUITE("roundtrip",
             { "c0ce 4 KiB blocks, 1e6 chunks of 16..6000 B", test_c0ce_million },
             { "abcd and abce 1 KiB blocks", test_abcd_abce },
             { "wait = interrupt, full rate, 1 MiB ring", test_interrupt_full_rate },
             { "wait = interrupt, 2000 chunks/s: no polls for chunks in flight", test_interrupt_low_rate });
}

RCI_CUNIT_MAIN(register_tests)
