/* SPDX-License-Identifier: BSD-3-Clause */
/* readout.c — creating a readout over a ring, and its statistics. The
 * decoder is in decoder.c, the thread in readout_thread.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "common/errbuf.h"
#include "readout/felix_block.h"
#include "readout/readout_internal.h"
#include "common/cpus.h"

#define RCI_COUNT_FIELD(f) +1
_Static_assert(sizeof(struct rci_elink_stats) ==
                   (0 RCI_ELINK_STAT_FIELDS(RCI_COUNT_FIELD)) * sizeof(uint64_t),
               "RCI_ELINK_STAT_FIELDS must list every field of struct rci_elink_stats");

static int validate_params(const struct rci_card_params *p, struct rci_dma_ring *ring,
                           rci_chunk_sink_fn sink, char *err, size_t errlen)
{
    size_t ring_size = rci_dma_ring_size(ring), unit = rci_dma_ring_unit(ring);
    const char *problem = NULL;
    if (!sink)
        problem = "no chunk sink";
    else if (p->block_size < FELIX_MIN_BLOCK || p->block_size > FELIX_MAX_BLOCK ||
             p->block_size % 1024 != 0)
        problem = "block_size must be 1 KiB .. 64 KiB in steps of 1 KiB";
    else if (p->block_format != FELIX_FMT_C0CE && p->block_size != FELIX_MIN_BLOCK)
        problem = "block formats abcd and abce have 1 KiB blocks";
    else if (p->ring_size != ring_size)
        problem = "ring_size differs from the ring's actual size";
    else if (ring_size % p->block_size != 0 || ring_size / p->block_size < 2)
        problem = "ring_size must be a multiple of block_size, at least 2 blocks";
    else if (ring_size > (1ull << 32))
        problem = "ring_size above 4 GiB (piece offsets are 32-bit)";
    else if (unit == 0 || p->block_size % unit != 0)
        problem = "the ring's unit size does not divide block_size";
    else if (p->max_chunk_size == 0 || p->max_chunk_pieces == 0 || p->max_chunks_in_flight == 0)
        problem = "max_chunk_size, max_chunk_pieces and max_chunks_in_flight must be non-zero";
    if (!problem)
        return 0;
    rci_set_err(err, errlen, "card.%u readout: %s (block_size %u, ring_size %llu, ring %zu bytes)",
             p->index, problem, p->block_size, (unsigned long long)p->ring_size, ring_size);
    return -EINVAL;
}

static int allocate_tables(struct rci_readout *r, char *err, size_t errlen)
{
    r->subs_cap = rci_block_max_subchunks(r->p.block_size);
    r->blocks = calloc(r->nblocks, sizeof *r->blocks);
    r->elinks = calloc(RCI_READOUT_MAX_ELINKS, sizeof *r->elinks);
    r->elink_stats = calloc(RCI_READOUT_MAX_ELINKS, sizeof *r->elink_stats);
    r->subs = calloc(r->subs_cap, sizeof *r->subs);
    if (!r->blocks || !r->elinks || !r->elink_stats || !r->subs) {
        rci_set_err(err, errlen, "card.%u readout: cannot allocate tables for %u blocks",
                 r->p.index, r->nblocks);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < r->nblocks; i++) {
        atomic_init(&r->blocks[i].refs, 0);
        atomic_init(&r->blocks[i].tap_held, false);
    }
    /* Reserved, not committed: only the slots of e-links whose chunks were
     * ever copied out of a full ring get memory. */
    r->spill_slot = r->p.block_size;
    r->spill_bytes = (size_t)RCI_READOUT_MAX_ELINKS * r->spill_slot;
    void *spill = mmap(NULL, r->spill_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (spill == MAP_FAILED) {
        rci_set_err(err, errlen, "card.%u readout: cannot map a %zu MiB spill area",
                   r->p.index, r->spill_bytes >> 20);
        return -ENOMEM;
    }
    r->spill = spill;
    return rci_chunk_pool_init(&r->pool, r->p.max_chunks_in_flight, r->p.max_chunk_pieces,
                              err, errlen);
}

int rci_readout_create(const struct rci_card_params *p, struct rci_dma_ring *ring,
                      struct rci_card *card, rci_chunk_sink_fn sink, void *sink_ctx,
                      struct rci_readout **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = validate_params(p, ring, sink, err, errlen);
    if (rc != 0)
        return rc;
    struct rci_readout *r = aligned_alloc(64, (sizeof *r + 63) / 64 * 64);
    if (!r) {
        rci_set_err(err, errlen, "card.%u readout: out of memory", p->index);
        return -ENOMEM;
    }
    memset(r, 0, sizeof *r);
    r->p = *p;
    r->ring = ring;
    r->card = card;
    r->irq_fd = -1;
    if (p->wait == RCI_WAIT_INTERRUPT && card) {
        r->irq_fd = rci_card_irq_fd(card);
        if (r->irq_fd < 0) {
            rci_set_err(err, errlen, "card.%u readout: wait = interrupt, but a %s card raises no "
                        "interrupt here (sim and sim-process cards do)", p->index, card->ops->kind);
            free(r);
            return -ENOTSUP;
        }
    }
    if (p->cpus[0]) {
        char why[160];
        int missing = -1;
        if (rci_cpus_parse(p->cpus, &r->cpuset, why, sizeof why) != 0 ||
            (missing = rci_cpus_first_missing(&r->cpuset)) >= 0) {
            if (missing >= 0)
                snprintf(why, sizeof why, "CPU %d does not exist", missing);
            rci_set_err(err, errlen, "card.%u readout: cpus %s", p->index, why);
            free(r);
            return -EINVAL;
        }
        r->pinned = true;
    }
    r->sink = sink;
    r->sink_ctx = sink_ctx;
    r->ring_base = rci_dma_ring_addr(ring);
    r->ring_size = rci_dma_ring_size(ring);
    r->nblocks = (uint32_t)(r->ring_size / p->block_size);
    atomic_init(&r->stop_requested, false);
    atomic_init(&r->loop_iter, 0);
    atomic_init(&r->drained_iter, 0);
    atomic_init(&r->drain_waiters, 0);
    atomic_init(&r->shared.releases, 0);
    atomic_init(&r->shared.tap_releases, 0);
    atomic_init(&r->st.taken, rci_dma_ring_taken_pos(ring));
    rci_counter_set(&r->st.written_seen, rci_dma_ring_written_pos(ring));
    rc = allocate_tables(r, err, errlen);
    if (rc != 0) {
        rci_readout_destroy(r);
        return rc;
    }
    *out = r;
    return 0;
}

void rci_readout_destroy(struct rci_readout *r)
{
    if (!r || r->thread_abandoned)
        return;   /* an abandoned thread may still use all of it */
    if (r->thread_running)
        rci_readout_stop(r);
    rci_chunk_pool_fini(&r->pool);
    free(r->blocks);
    free(r->elinks);
    free(r->elink_stats);
    free(r->subs);
    if (r->spill)
        munmap(r->spill, r->spill_bytes);
    free(r);
}

bool rci_readout_drained(const struct rci_readout *r)
{
    /* taken first (acquire): it is stored after the busy flag is set. */
    uint64_t taken = atomic_load_explicit(&r->st.taken, memory_order_acquire);
    uint64_t written = rci_counter_get(&r->st.written_seen);
    bool busy = rci_counter_get(&r->st.pending_or_active) != 0;
    return written - taken < r->p.block_size && !busy && rci_readout_in_flight(r) == 0 &&
           rci_readout_tap_in_flight(r) == 0;
}

static void copy_elink_stats(const struct rci_elink_counters *src, struct rci_elink_stats *dst)
{
#define RCI_COPY_FIELD(f) dst->f = rci_counter_get(&src->f);
    RCI_ELINK_STAT_FIELDS(RCI_COPY_FIELD)
#undef RCI_COPY_FIELD
}

static void add_elink_stats(struct rci_elink_stats *sum, const struct rci_elink_stats *s)
{
#define RCI_ADD_FIELD(f) sum->f += s->f;
    RCI_ELINK_STAT_FIELDS(RCI_ADD_FIELD)
#undef RCI_ADD_FIELD
}

void rci_readout_get_stats(const struct rci_readout *r, struct rci_readout_stats *s)
{
    struct rci_elink_stats sum = {0}, one;
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++) {
        copy_elink_stats(&r->elink_stats[i], &one);
        add_elink_stats(&sum, &one);
    }
    *s = (struct rci_readout_stats){
        .blocks = sum.blocks, .chunks = sum.chunks, .bytes = sum.bytes,
        .bad_header = rci_counter_get(&r->st.bad_header),
        .err_malformed = sum.err_malformed, .err_seq_gap = sum.err_seq_gap,
        .err_oversize = sum.err_oversize, .err_orphan = sum.err_orphan,
        .malformed_length = sum.malformed_length, .malformed_null = sum.malformed_null,
        .malformed_order = sum.malformed_order, .malformed_padding = sum.malformed_padding,
        .malformed_split = sum.malformed_split, .err_bad_start = sum.err_bad_start,
        .chunks_dropped_gap = sum.chunks_dropped_gap, .chunks_incomplete = sum.chunks_incomplete,
        .timeouts = sum.timeouts, .oob = sum.oob, .reserved = sum.reserved,
        .chunks_truncated = sum.err_truncated, .chunks_error = sum.err_flag,
        .chunks_crc = sum.err_crc, .chunks_busy = sum.err_busy,
        .releases = atomic_load_explicit(&r->shared.releases, memory_order_relaxed) +
                    rci_counter_get(&r->st.releases_local),
        .bad_releases = rci_shared_counter_get(&r->shared.bad_releases),
        .chunks_in_flight = rci_readout_in_flight(r),
        .sink_again = rci_counter_get(&r->st.sink_again),
        .sink_errors = rci_shared_counter_get(&r->shared.sink_errors),
        .chunks_dropped_pool = sum.chunks_dropped_pool,
        .chunks_dropped_ring = sum.chunks_dropped_ring,
        .chunks_spilled = sum.chunks_spilled,
        .bytes_spilled = rci_counter_get(&r->st.bytes_spilled),
        .chunks_cut_at_stop = rci_counter_get(&r->st.chunks_cut_at_stop),
        .bytes_cut_at_stop = rci_counter_get(&r->st.bytes_cut_at_stop),
        .pool_empty_ns = rci_counter_get(&r->st.pool_empty_ns),
        .polls = rci_counter_get(&r->st.polls), .sleeps = rci_counter_get(&r->st.sleeps),
        .irq_waits = rci_counter_get(&r->st.irq_waits), .interrupts = rci_counter_get(&r->st.interrupts),
        .rd_writes = rci_counter_get(&r->st.rd_writes),
        .card_bad_status = rci_counter_get(&r->st.card_bad_status),
        .card_status_lagging = rci_counter_get(&r->st.card_status_lagging),
        .tap_blocks = rci_counter_get(&r->st.tap_blocks),
        .tap_releases = atomic_load_explicit(&r->shared.tap_releases, memory_order_relaxed),
        .tap_stalls = rci_counter_get(&r->st.tap_stalls),
        .bad_tap_releases = rci_shared_counter_get(&r->shared.bad_tap_releases),
        .last_bad_pos = rci_counter_get(&r->st.last_bad_pos),
        .last_bad_kind = (enum rci_readout_bad_kind)rci_counter_get(&r->st.last_bad_kind),
    };
}

void rci_readout_spill_area(const struct rci_readout *r, void **addr, size_t *len)
{
    *addr = r->spill;
    *len = r->spill_bytes;
}

bool rci_readout_elink_seen(const struct rci_readout *r, unsigned elink)
{
    return elink < RCI_READOUT_MAX_ELINKS && rci_counter_get(&r->elink_stats[elink].blocks) != 0;
}

int rci_readout_get_elink_stats(const struct rci_readout *r, unsigned elink,
                               struct rci_elink_stats *out)
{
    if (!rci_readout_elink_seen(r, elink))
        return -ENOENT;
    copy_elink_stats(&r->elink_stats[elink], out);
    return 0;
}
