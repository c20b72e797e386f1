/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_metrics.c — the families of /metrics (daemon_metrics.h). Names follow
 * Prometheus's conventions: ringcast_ prefix, counters end in _total, times
 * in seconds, sizes in bytes. A family's HELP ends with "(json: WHERE)":
 * WHERE names the --stats-json figure each series equals, "cards[].K" (the
 * card of its card label), "publishers[].K", "publishers[].publisher.K",
 * "subscribers[].K", "cards[].elinks_lost[].K" ({label} in K stands for that
 * label's value), or "K" at the top; "sum K" says that the series of all
 * families so marked add up to the top-level K. */
#include "tools/daemon_metrics.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/monotonic.h"
#include "net/wire.h"
#include "tools/daemon_figures.h"

#define NS_PER_S 1e9

/* ---- helpers ------------------------------------------------------------------ */

static int family(struct rci_prom *p, const char *name, enum rci_prom_type type, const char *help)
{
    return rci_prom_family(p, name, type, help);
}

/* ---- cards ---------------------------------------------------------------------- */

/* One card's figures, taken once per scrape. */
struct card_fig {
    struct rci_readout_stats rs;
    struct rci_dma_ring_stats ring;
    struct rci_card_stats cs;
    struct rci_publish_totals sink;
    uint64_t chunks_lost, decode_errors, chunks_flagged, firmware_losses, alarms_high, alarms_full, alarms_cleared;
};

enum value_kind { V_COUNT, V_NS, V_GAUGE, V_GAUGE_NS };

struct card_row {
    const char *name;           /* without the ringcast_card_ prefix */
    enum value_kind kind;
    size_t offset;              /* a uint64_t in struct card_fig */
    const char *help;
};

#define F(member) offsetof(struct card_fig, member)
static const struct card_row card_rows[] = {
    {"chunks_produced_total", V_COUNT, F(cs.chunks_produced), "Chunks the card produced (json: cards[].chunks_produced; sum chunks_produced)"},
    {"bytes_produced_total", V_COUNT, F(cs.bytes_produced), "Payload bytes the card produced (json: cards[].bytes_produced)"},
    {"stall_seconds_total", V_NS, F(cs.stall_ns), "Time the card was stalled by a full ring (json: cards[].card_stall_ns)"},
    {"chunks_decoded_total", V_COUNT, F(rs.chunks), "Chunks decoded (json: cards[].chunks_decoded; sum chunks_decoded)"},
    {"bytes_decoded_total", V_COUNT, F(rs.bytes), "Payload bytes decoded (json: cards[].bytes_decoded; sum bytes_decoded)"},
    {"blocks_total", V_COUNT, F(rs.blocks), "Blocks taken from the ring (json: cards[].blocks)"},
    {"bad_header_total", V_COUNT, F(rs.bad_header), "Blocks with an unknown marker or block size, skipped (json: cards[].bad_header)"},
    {"err_malformed_total", V_COUNT, F(rs.err_malformed), "Blocks with a bad trailer chain, skipped (json: cards[].err_malformed)"},
    {"err_seq_gap_total", V_COUNT, F(rs.err_seq_gap), "Blocks missing by sequence number (json: cards[].err_seq_gap)"},
    {"err_oversize_total", V_COUNT, F(rs.err_oversize), "Chunks over the size or piece limit, dropped (json: cards[].err_oversize)"},
    {"err_orphan_total", V_COUNT, F(rs.err_orphan), "Middle or last subchunks without a first, dropped (json: cards[].err_orphan)"},
    {"chunks_dropped_gap_total", V_COUNT, F(rs.chunks_dropped_gap), "Open chunks dropped for missing blocks (json: cards[].chunks_dropped_gap)"},
    {"chunks_incomplete_total", V_COUNT, F(rs.chunks_incomplete), "Open chunks ended early (json: cards[].chunks_incomplete)"},
    {"chunks_dropped_pool_total", V_COUNT, F(rs.chunks_dropped_pool), "Open chunks dropped: they held every descriptor (json: cards[].chunks_dropped_pool)"},
    {"chunks_dropped_ring_total", V_COUNT, F(rs.chunks_dropped_ring), "Open chunks dropped: they held a full ring (json: cards[].chunks_dropped_ring)"},
    {"chunks_lost_total", V_COUNT, F(chunks_lost), "Chunks the readout dropped whole, all causes (json: cards[].chunks_lost)"},
    {"chunks_spilled_total", V_COUNT, F(rs.chunks_spilled), "Open chunk heads copied out of a full ring, not lost (json: cards[].chunks_spilled)"},
    {"bytes_spilled_total", V_COUNT, F(rs.bytes_spilled), "Bytes those copies took (json: cards[].bytes_spilled)"},
    {"err_bad_start_total", V_COUNT, F(rs.err_bad_start), "Blocks that did not go on with the open chunk (json: cards[].err_bad_start)"},
    {"malformed_length_total", V_COUNT, F(rs.malformed_length), "Malformed blocks: a length past the header (json: cards[].malformed_length)"},
    {"malformed_null_total", V_COUNT, F(rs.malformed_null), "Malformed blocks: a bad null trailer (json: cards[].malformed_null)"},
    {"malformed_order_total", V_COUNT, F(rs.malformed_order), "Malformed blocks: subchunk type order (json: cards[].malformed_order)"},
    {"malformed_padding_total", V_COUNT, F(rs.malformed_padding), "Malformed blocks: non-zero padding (json: cards[].malformed_padding)"},
    {"malformed_split_total", V_COUNT, F(rs.malformed_split), "Malformed blocks: an empty first or middle (json: cards[].malformed_split)"},
    {"sink_errors_total", V_COUNT, F(rs.sink_errors), "Chunks the publishing sink refused for good (json: cards[].sink_errors)"},
    {"bad_status_total", V_COUNT, F(rs.card_bad_status), "Card status reads that could not be right, rejected (json: cards[].card_bad_status)"},
    {"status_lagging_total", V_COUNT, F(rs.card_status_lagging), "Card status reads one read-pointer lap behind, used (json: cards[].card_status_lagging)"},
    {"irq_waits_total", V_COUNT, F(rs.irq_waits), "Times the idle readout slept on the card's interrupt (json: cards[].irq_waits)"},
    {"interrupts_total", V_COUNT, F(rs.interrupts), "Interrupts that ended such a sleep (json: cards[].interrupts)"},
    {"chunks_truncated_total", V_COUNT, F(rs.chunks_truncated), "Chunks the card flagged truncated (json: cards[].chunks_truncated)"},
    {"chunks_error_total", V_COUNT, F(rs.chunks_error), "Chunks the card flagged in error (json: cards[].chunks_error)"},
    {"chunks_crc_total", V_COUNT, F(rs.chunks_crc), "Chunks the card flagged with a CRC error (json: cards[].chunks_crc)"},
    {"chunks_busy_total", V_COUNT, F(rs.chunks_busy), "Chunks the card flagged busy (json: cards[].chunks_busy)"},
    {"chunks_flagged_total", V_COUNT, F(chunks_flagged), "Chunks the card flagged, every kind (json: cards[].chunks_flagged)"},
    {"keys_outstanding", V_GAUGE, F(rs.chunks_in_flight), "Chunks handed to the publishers, not yet released (json: cards[].keys_outstanding; sum keys_outstanding)"},
    {"bad_releases_total", V_COUNT, F(rs.bad_releases), "Stale, duplicate or corrupt key releases, rejected (json: cards[].bad_releases)"},
    {"tap_blocks_total", V_COUNT, F(rs.tap_blocks), "Blocks handed to the block stream's tap (json: cards[].tap_blocks)"},
    {"tap_releases_total", V_COUNT, F(rs.tap_releases), "Block-stream references given back (json: cards[].tap_releases)"},
    {"tap_stalls_total", V_COUNT, F(rs.tap_stalls), "Decoder passes stalled: the block stream's tap had no room (json: cards[].tap_stalls)"},
    {"bad_tap_releases_total", V_COUNT, F(rs.bad_tap_releases), "Block-stream references released twice or never taken, rejected (json: cards[].bad_tap_releases)"},
    {"chunks_cut_at_stop_total", V_COUNT, F(rs.chunks_cut_at_stop), "Open chunks cut off by the stop (json: cards[].chunks_cut_at_stop; sum chunks_cut_at_stop)"},
    {"bytes_cut_at_stop_total", V_COUNT, F(rs.bytes_cut_at_stop), "Their bytes so far (json: cards[].bytes_cut_at_stop; sum bytes_cut_at_stop)"},
    {"ring_size_bytes", V_GAUGE, F(ring.size), "Size of the card's DMA ring (json: cards[].ring_size)"},
    {"ring_bytes_in_use", V_GAUGE, F(ring.in_use), "Bytes of the ring written and not yet given back (json: cards[].ring_bytes_in_use; sum ring_bytes_in_use)"},
    {"ring_high_water_bytes", V_GAUGE, F(ring.high_water), "Most bytes of the ring ever in use (json: cards[].ring_high_water)"},
    {"ring_full_seconds_total", V_NS, F(ring.full_ns), "Time the ring was full (json: cards[].ring_full_ns)"},
    {"injected_truncated_total", V_COUNT, F(cs.injected_truncated), "Simulator: chunks flagged truncated on purpose (json: cards[].injected_truncated)"},
    {"injected_crc_total", V_COUNT, F(cs.injected_crc), "Simulator: chunks flagged CRC error on purpose (json: cards[].injected_crc)"},
    {"injected_malformed_total", V_COUNT, F(cs.injected_malformed), "Simulator: blocks malformed on purpose (json: cards[].injected_malformed)"},
    {"injected_seqskip_total", V_COUNT, F(cs.injected_seqskip), "Simulator: block sequence numbers skipped on purpose (json: cards[].injected_seqskip)"},
    {"host_errors_total", V_COUNT, F(cs.host_errors), "Host protocol errors the card saw (json: cards[].card_host_errors)"},
    {"firmware_losses_total", V_COUNT, F(firmware_losses), "Times the card's firmware was found dead or hung (json: cards[].firmware_losses)"},
    {"decode_errors_total", V_COUNT, F(decode_errors), "Everything the decoder counted wrong in the card's data (json: cards[].decode_errors; sum decode_errors)"},
    {"ring_alarms_high_total", V_COUNT, F(alarms_high), "Ring occupancy alarms: passed 90 % (json: cards[].ring_alarms_high)"},
    {"ring_alarms_full_total", V_COUNT, F(alarms_full), "Ring occupancy alarms: full, the card stalls (json: cards[].ring_alarms_full)"},
    {"ring_alarms_cleared_total", V_COUNT, F(alarms_cleared), "Ring occupancy alarms: back under 80 % (json: cards[].ring_alarms_cleared)"},
    {"sink_chunks_no_subscriber_total", V_COUNT, F(sink.chunks_no_subscriber), "Chunks released at once by the readout: no subscriber of their tag (json: sum chunks_no_subscriber)"},
    {"chunks_dispatched_total", V_COUNT, F(sink.chunks_dispatched), "Chunks queued to one publisher thread or more (json: sum chunks_dispatched)"},
    {"dispatch_errors_total", V_COUNT, F(sink.dispatch_errors), "Enqueues refused after the room check, never expected (json: sum dispatch_errors)"},
    {"records_exhausted_total", V_COUNT, F(sink.records_exhausted), "No card-level fan-out record free, never expected (json: sum records_exhausted)"},
    {"fanout_refused_total", V_COUNT, F(sink.fanout_refused), "Card-level fan-out completions refused: bookkeeping errors (json: sum fanout_refused)"},
    {"sink_again_total", V_COUNT, F(rs.sink_again), "Times the publishing sink said not now (backpressure)"},
    {"polls_total", V_COUNT, F(rs.polls), "Polls of the card's write pointer by the readout thread"},
};
#undef F

static void take_card(const struct rci_daemon_metrics *m, unsigned i, struct card_fig *f)
{
    const struct rci_metrics_card_src *c = &m->cards[i];
    memset(f, 0, sizeof *f);
    rci_readout_get_stats(c->readout, &f->rs);
    rci_dma_ring_get_stats(c->ring, &f->ring);
    rci_card_get_stats(c->card, &f->cs);
    rci_pipeline_get_card_totals(m->pipeline, i, &f->sink);
    f->chunks_lost = rci_chunks_lost(&f->rs);
    f->decode_errors = rci_decode_errors(&f->rs);
    f->chunks_flagged = rci_chunks_flagged(&f->rs);
    f->firmware_losses = atomic_load_explicit(c->firmware_losses, memory_order_relaxed);
    f->alarms_high = rci_counter_get(&c->alarm->high);
    f->alarms_full = rci_counter_get(&c->alarm->full);
    f->alarms_cleared = rci_counter_get(&c->alarm->cleared);
}

static int sample(struct rci_prom *p, enum value_kind kind, const struct rci_prom_label *l, unsigned n,
                  uint64_t v)
{
    switch (kind) {
    case V_COUNT: return rci_prom_counter(p, l, n, v);
    case V_NS: return rci_prom_counter_f(p, l, n, (double)v / NS_PER_S);
    case V_GAUGE: return rci_prom_gauge(p, l, n, (double)v);
    case V_GAUGE_NS: return rci_prom_gauge(p, l, n, (double)v / NS_PER_S);
    }
    return -1;
}

static enum rci_prom_type type_of(enum value_kind k)
{
    return k == V_COUNT || k == V_NS ? RCI_PROM_COUNTER : RCI_PROM_GAUGE;
}

static int collect_cards(const struct rci_daemon_metrics *m, struct rci_prom *p)
{
    static struct card_fig figs[RCI_MAX_CARDS]; /* one scrape at a time (the server's thread) */
    char names[RCI_MAX_CARDS][12];
    for (unsigned i = 0; i < m->ncards; i++) {
        take_card(m, i, &figs[i]);
        snprintf(names[i], sizeof names[i], "%u", m->cards[i].index);
    }
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < sizeof card_rows / sizeof card_rows[0]; r++) {
        char name[128];
        snprintf(name, sizeof name, "ringcast_card_%s", card_rows[r].name);
        rc = family(p, name, type_of(card_rows[r].kind), card_rows[r].help);
        for (unsigned i = 0; rc == 0 && i < m->ncards; i++) {
            struct rci_prom_label l[] = {{"card", names[i]}};
            uint64_t v;
            memcpy(&v, (const char *)&figs[i] + card_rows[r].offset, sizeof v);
            rc = sample(p, card_rows[r].kind, l, 1, v);
        }
    }
    if (rc == 0)
        rc = family(p, "ringcast_card_ring_occupancy_ratio", RCI_PROM_GAUGE,
                    "Fraction of the ring in use now (alarms at 0.9 and 1, all clear under 0.8)");
    for (unsigned i = 0; rc == 0 && i < m->ncards; i++) {
        struct rci_prom_label l[] = {{"card", names[i]}};
        const struct rci_dma_ring_stats *s = &figs[i].ring;
        rc = rci_prom_gauge(p, l, 1, s->size ? (double)s->in_use / (double)s->size : 0.0);
    }
    return rc;
}

/* ---- e-links -------------------------------------------------------------------- */

struct elink_row {
    const char *family;
    const char *label;          /* the kind label's name, NULL: none */
    const char *value;          /* its value */
    size_t offset;              /* a uint64_t in struct rci_elink_stats */
};

#define E(member) offsetof(struct rci_elink_stats, member)
static const struct elink_row elink_rows[] = {
    {"ringcast_elink_blocks_total", NULL, NULL, E(blocks)},
    {"ringcast_elink_chunks_total", NULL, NULL, E(chunks)},
    {"ringcast_elink_bytes_total", NULL, NULL, E(bytes)},
    {"ringcast_elink_flagged_chunks_total", "kind", "truncated", E(err_truncated)},
    {"ringcast_elink_flagged_chunks_total", "kind", "crc", E(err_crc)},
    {"ringcast_elink_flagged_chunks_total", "kind", "error", E(err_flag)},
    {"ringcast_elink_flagged_chunks_total", "kind", "busy", E(err_busy)},
    {"ringcast_elink_errors_total", "kind", "malformed", E(err_malformed)},
    {"ringcast_elink_errors_total", "kind", "bad_start", E(err_bad_start)},
    {"ringcast_elink_errors_total", "kind", "seq_gap", E(err_seq_gap)},
    {"ringcast_elink_errors_total", "kind", "oversize", E(err_oversize)},
    {"ringcast_elink_errors_total", "kind", "orphan", E(err_orphan)},
    {"ringcast_elink_malformed_blocks_total", "kind", "length", E(malformed_length)},
    {"ringcast_elink_malformed_blocks_total", "kind", "null", E(malformed_null)},
    {"ringcast_elink_malformed_blocks_total", "kind", "order", E(malformed_order)},
    {"ringcast_elink_malformed_blocks_total", "kind", "padding", E(malformed_padding)},
    {"ringcast_elink_malformed_blocks_total", "kind", "split", E(malformed_split)},
    {"ringcast_elink_chunks_dropped_total", "cause", "gap", E(chunks_dropped_gap)},
    {"ringcast_elink_chunks_dropped_total", "cause", "pool", E(chunks_dropped_pool)},
    {"ringcast_elink_chunks_dropped_total", "cause", "ring", E(chunks_dropped_ring)},
    {"ringcast_elink_chunks_incomplete_total", NULL, NULL, E(chunks_incomplete)},
    {"ringcast_elink_subchunks_skipped_total", "kind", "timeout", E(timeouts)},
    {"ringcast_elink_subchunks_skipped_total", "kind", "oob", E(oob)},
    {"ringcast_elink_subchunks_skipped_total", "kind", "reserved", E(reserved)},
    {"ringcast_elink_chunks_spilled_total", NULL, NULL, E(chunks_spilled)},
};
#undef E

static const char *elink_help(const char *family)
{
    if (strcmp(family, "ringcast_elink_blocks_total") == 0)
        return "Blocks of the e-link (json: cards[].elinks[].blocks)";
    if (strcmp(family, "ringcast_elink_chunks_total") == 0)
        return "Chunks of the e-link decoded (json: cards[].elinks[].chunks)";
    if (strcmp(family, "ringcast_elink_bytes_total") == 0)
        return "Payload bytes of the e-link decoded (json: cards[].elinks[].bytes)";
    if (strcmp(family, "ringcast_elink_flagged_chunks_total") == 0)
        return "Chunks the card flagged, by kind (json: cards[].elinks[].chunks_{kind})";
    if (strcmp(family, "ringcast_elink_errors_total") == 0)
        return "Decode errors by kind (json: cards[].elinks_lost[].err_{kind})";
    if (strcmp(family, "ringcast_elink_malformed_blocks_total") == 0)
        return "Malformed blocks by kind (json: cards[].elinks_lost[].malformed_{kind})";
    if (strcmp(family, "ringcast_elink_chunks_dropped_total") == 0)
        return "Open chunks dropped whole, by cause: blocks missing, no descriptor, full ring (json: cards[].elinks_lost[].chunks_dropped_{cause})";
    if (strcmp(family, "ringcast_elink_chunks_incomplete_total") == 0)
        return "Open chunks ended early by a first/whole or a malformed block, dropped (json: cards[].elinks_lost[].chunks_incomplete)";
    if (strcmp(family, "ringcast_elink_subchunks_skipped_total") == 0)
        return "Subchunks of these types, counted and skipped";
    return "Open chunk heads copied out of a full ring (not lost)";
}

/* The e-links a card has seen. */
static unsigned seen_elinks(const struct rci_readout *r, uint16_t *out)
{
    unsigned n = 0;
    struct rci_elink_stats es;
    for (unsigned e = 0; e < RCI_READOUT_MAX_ELINKS; e++)
        if (rci_readout_get_elink_stats(r, e, &es) == 0)
            out[n++] = (uint16_t)e;
    return n;
}

static int collect_elinks(const struct rci_daemon_metrics *m, struct rci_prom *p)
{
    static uint16_t seen[RCI_MAX_CARDS][RCI_READOUT_MAX_ELINKS];
    unsigned nseen[RCI_MAX_CARDS];
    for (unsigned i = 0; i < m->ncards; i++)
        nseen[i] = seen_elinks(m->cards[i].readout, seen[i]);
    int rc = 0;
    size_t nrows = sizeof elink_rows / sizeof elink_rows[0];
    for (size_t r = 0; rc == 0 && r < nrows; r++) {
        const struct elink_row *row = &elink_rows[r];
        bool first_of_family = r == 0 || strcmp(elink_rows[r - 1].family, row->family) != 0;
        if (!first_of_family)
            continue;
        rc = family(p, row->family, RCI_PROM_COUNTER, elink_help(row->family));
        for (unsigned i = 0; rc == 0 && i < m->ncards; i++) {
            char card[12];
            snprintf(card, sizeof card, "%u", m->cards[i].index);
            for (unsigned k = 0; rc == 0 && k < nseen[i]; k++) {
                struct rci_elink_stats es;
                if (rci_readout_get_elink_stats(m->cards[i].readout, seen[i][k], &es) != 0)
                    continue;
                char elink[12];
                snprintf(elink, sizeof elink, "%u", seen[i][k]);
                /* Every row of this family (they are next to each other). */
                for (size_t q = r; rc == 0 && q < nrows && strcmp(elink_rows[q].family, row->family) == 0; q++) {
                    struct rci_prom_label l[] = {{"card", card}, {"elink", elink},
                                                 {elink_rows[q].label, elink_rows[q].value}};
                    uint64_t v;
                    memcpy(&v, (const char *)&es + elink_rows[q].offset, sizeof v);
                    rc = rci_prom_counter(p, l, elink_rows[q].label ? 3 : 2, v);
                }
            }
        }
    }
    return rc;
}

/* ---- publisher threads ------------------------------------------------------------ */

struct totals_row {
    const char *name;
    const char *json;
    size_t offset;              /* in struct rci_publish_totals */
    const char *help;
};

#define P(member) offsetof(struct rci_publish_totals, member)
static const struct totals_row totals_rows[] = {
    {"chunks_sent", "chunks_sent", P(chunks_sent), "Shares sent and completed"},
    {"sent_bytes", "bytes_sent", P(bytes_sent), "Bytes of the shares sent and completed"},
    {"chunks_dropped", "chunks_dropped", P(chunks_dropped), "Shares dropped by slow_policy = drop"},
    {"chunks_no_subscriber", "chunks_no_subscriber", P(chunks_no_subscriber), "Chunks this thread found no subscriber of its own for"},
    {"chunks_published", "chunks_published", P(chunks_published), "Chunks begun with one share or more"},
    {"shares", "shares", P(shares), "Shares begun (one per chunk and subscriber)"},
    {"shares_failed", "shares_failed", P(shares_failed), "Shares refused or completed in error"},
    {"shares_unsent", "shares_unsent", P(shares_unsent), "Shares not sent: the subscriber had left, or shutdown"},
    {"chunks_unread_at_leave", "chunks_unread_at_leave", P(chunks_unread_at_leave), "Of the chunks sent, those subscribers that left in order never read (by their BYE's count)"},
    {"chunks_abandoned", "chunks_abandoned", P(chunks_abandoned), "Chunks queued at shutdown, given back without a send"},
    {"queue_full", "queue_full", P(queue_full), "Times the readout found this thread's queue full (backpressure)"},
    {"blocked", "publisher_blocked", P(blocked), "Times a chunk waited for a subscriber or resources"},
    {"subscriber_overflow", "subscriber_overflow", P(subscriber_overflow), "Chunks with more subscribers than one fan-out holds"},
    {"table_errors", "table_errors", P(table_errors), "Subscription table updates refused"},
    {"subscribers_untracked", "subscribers_untracked", P(subscribers_untracked), "Subscribers that left beyond the records kept"},
    {"chunks_queued", "chunks_queued", P(chunks_queued), "Queue entries to this thread"},
    {"fanout_refused", "fanout_refused", P(fanout_refused), "Fan-out completions refused: bookkeeping errors"},
    {"subscribers_cut_off", "subscribers_cut_off", P(subscribers_cut_off), "Subscribers cut off by slow_cut_after or block_cut_after"},
    {"subscribers_kicked", "subscribers_kicked", P(subscribers_kicked), "Subscribers closed by ringcast-ctl kick"},
    {"subscribers_cut_by_allow", "subscribers_cut_by_allow", P(subscribers_cut_by_allow), "Subscribers closed because a reloaded allow list excludes them"},
    {"doorbell_rings", "doorbell_rings", P(doorbell_rings), "Wake-ups of this thread from its idle sleep by a queued chunk or request"},
    {"fabric_polls_deferred", "fabric_polls_deferred", P(fabric_polls_deferred), "Busy turns of the publisher thread that left the fabric unpolled (polled at most every 40 us while its queues keep it busy)"},
    {"shares_deferred", "shares_deferred", P(shares_deferred), "slow_policy = block: shares put in their subscriber's backlog while it could not take them (the others went on)"},
    {"backlog_full_waits", "backlog_full_waits", P(backlog_full_waits), "slow_policy = block: times a subscriber's full backlog made its lane wait"},
};

/* A thread's gauges (json: publishers[] only: the totals have no sum of them). */
static const struct totals_row thread_gauge_rows[] = {
    {"deferred_shares", "shares_deferred_now", P(shares_deferred_now), "Shares in the thread's block backlogs now"},
    {"deferred_high_water", "deferred_high_water", P(deferred_high_water), "The most shares in the thread's block backlogs at once"},
};
#undef P

static void thread_labels(const struct rci_pipeline *pb, unsigned t, char *thread, char *port)
{
    snprintf(thread, 12, "%u", t);
    snprintf(port, 12, "%u", rci_pipeline_thread_port(pb, t));
}

/* The publisher threads' registered pools (control buffers, pages): per
 * thread and class (label use), as the JSON's publisher.pool_USE_* figures. */
static uint64_t pool_count(const struct rci_mem_class_stats *k) { return k->count; }
static uint64_t pool_in_use(const struct rci_mem_class_stats *k) { return k->in_use; }
static uint64_t pool_high_water(const struct rci_mem_class_stats *k) { return k->high_water; }
static uint64_t pool_exhausted(const struct rci_mem_class_stats *k) { return k->exhausted; }

static const struct pool_row {
    const char *name, *json, *help;
    enum rci_prom_type type;
    uint64_t (*get)(const struct rci_mem_class_stats *k);
} pool_rows[] = {
    {"ringcast_fabric_pool_buffers", "count", "Buffers of this class of the publisher's registered pool",
     RCI_PROM_GAUGE, pool_count},
    {"ringcast_fabric_pool_in_use", "in_use", "Buffers of the class handed out now (pages filling or in flight, "
     "control messages in flight, control receives posted)", RCI_PROM_GAUGE, pool_in_use},
    {"ringcast_fabric_pool_high_water", "high_water", "Most buffers of the class handed out at once",
     RCI_PROM_GAUGE, pool_high_water},
    {"ringcast_fabric_pool_exhausted_total", "exhausted", "Gets that found the class empty",
     RCI_PROM_COUNTER, pool_exhausted},
};

static int collect_pool(struct rci_prom *p, unsigned n, const struct rci_publisher_stats *ps,
                        char thread[][12], char port[][12])
{
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < sizeof pool_rows / sizeof pool_rows[0]; r++) {
        char help[320];
        snprintf(help, sizeof help, "%s (json: publishers[].publisher.pool_{use}_%s; sum publisher.pool_{use}_%s)",
                 pool_rows[r].help, pool_rows[r].json, pool_rows[r].json);
        rc = family(p, pool_rows[r].name, pool_rows[r].type, help);
        for (unsigned i = 0; rc == 0 && i < n; i++)
            for (unsigned c = 0; rc == 0 && c < RCI_MEM_CLASSES; c++) {
                const struct rci_mem_class_stats *k = &ps[i].pool[c];
                if (!k->count || !k->use)
                    continue;
                struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}, {"use", k->use}};
                uint64_t v = pool_rows[r].get(k);
                rc = pool_rows[r].type == RCI_PROM_COUNTER ? rci_prom_counter(p, l, 3, v)
                                                          : rci_prom_gauge(p, l, 3, (double)v);
            }
    }
    return rc;
}

static int collect_threads(const struct rci_daemon_metrics *m, struct rci_prom *p)
{
    const struct rci_pipeline *pb = m->pipeline;
    unsigned n = rci_pipeline_threads(pb);
    struct rci_publish_totals t[RCI_MAX_PUBLISHER_THREADS];
    struct rci_publisher_stats ps[RCI_MAX_PUBLISHER_THREADS];
    char thread[RCI_MAX_PUBLISHER_THREADS][12], port[RCI_MAX_PUBLISHER_THREADS][12];
    for (unsigned i = 0; i < n; i++) {
        rci_pipeline_get_thread_totals(pb, i, &t[i]);
        rci_pipeline_get_publisher_stats(pb, i, &ps[i]);
        thread_labels(pb, i, thread[i], port[i]);
    }
    int rc = family(p, "ringcast_publisher_threads", RCI_PROM_GAUGE, "Publisher threads (json: publisher_threads)");
    if (rc == 0)
        rc = rci_prom_gauge(p, NULL, 0, n);
    for (size_t r = 0; rc == 0 && r < sizeof totals_rows / sizeof totals_rows[0]; r++) {
        char name[128], help[256];
        snprintf(name, sizeof name, "ringcast_publisher_%s_total", totals_rows[r].name);
        snprintf(help, sizeof help, "%s (json: publishers[].%s; sum %s)", totals_rows[r].help, totals_rows[r].json,
                 totals_rows[r].json);
        rc = family(p, name, RCI_PROM_COUNTER, help);
        for (unsigned i = 0; rc == 0 && i < n; i++) {
            struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}};
            uint64_t v;
            memcpy(&v, (const char *)&t[i] + totals_rows[r].offset, sizeof v);
            rc = rci_prom_counter(p, l, 2, v);
        }
    }
    for (size_t r = 0; rc == 0 && r < sizeof thread_gauge_rows / sizeof thread_gauge_rows[0]; r++) {
        char name[128], help[256];
        snprintf(name, sizeof name, "ringcast_publisher_%s", thread_gauge_rows[r].name);
        snprintf(help, sizeof help, "%s (json: publishers[].%s)", thread_gauge_rows[r].help, thread_gauge_rows[r].json);
        rc = family(p, name, RCI_PROM_GAUGE, help);
        for (unsigned i = 0; rc == 0 && i < n; i++) {
            struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}};
            uint64_t v;
            memcpy(&v, (const char *)&t[i] + thread_gauge_rows[r].offset, sizeof v);
            rc = rci_prom_gauge(p, l, 2, (double)v);
        }
    }
    if (rc == 0)
        rc = family(p, "ringcast_publisher_loops_total", RCI_PROM_COUNTER,
                    "Turns of the publisher thread's loop: its sign of life for the watchdog");
    for (unsigned i = 0; rc == 0 && i < n; i++) {
        struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}};
        rc = rci_prom_counter(p, l, 2, rci_pipeline_thread_heartbeat(pb, i));
    }
#define FABRIC_FAMILY(field)                                                                         \
    if (rc == 0)                                                                                     \
        rc = family(p, "ringcast_fabric_" #field "_total", RCI_PROM_COUNTER,                         \
                    "The fabric layer's " #field " counter (json: publishers[].publisher." #field    \
                    "; sum publisher." #field ")");                                                  \
    for (unsigned i = 0; rc == 0 && i < n; i++) {                                                    \
        struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}};                      \
        rc = rci_prom_counter(p, l, 2, ps[i].field);                                                 \
    }
    RCI_PUBLISHER_JSON_FIELDS(FABRIC_FAMILY)
#undef FABRIC_FAMILY
    if (rc == 0)
        rc = collect_pool(p, n, ps, thread, port);
    if (rc == 0)
        rc = family(p, "ringcast_fabric_malformed_total", RCI_PROM_COUNTER,
                    "Rejected incoming messages, every kind (json: publishers[].publisher.malformed_total; sum publisher.malformed_total)");
    for (unsigned i = 0; rc == 0 && i < n; i++) {
        struct rci_prom_label l[] = {{"thread", thread[i]}, {"port", port[i]}};
        uint64_t sum = 0;
        for (unsigned k = 0; k < RCI_WIRE_ERROR_KINDS; k++)
            sum += ps[i].malformed[k];
        rc = rci_prom_counter(p, l, 2, sum);
    }
    return rc;
}

/* ---- subscribers ---------------------------------------------------------------- */

struct sub_row {
    const char *name;
    enum value_kind kind;
    const char *json;
    const char *help;
};

static const struct sub_row sub_rows[] = {
    {"ringcast_subscriber_chunks_sent_total", V_COUNT, "chunks_sent", "Shares sent to the subscriber and completed"},
    {"ringcast_subscriber_sent_bytes_total", V_COUNT, "bytes_sent", "Bytes of those shares"},
    {"ringcast_subscriber_chunks_dropped_total", V_COUNT, "chunks_dropped", "Shares dropped by slow_policy = drop"},
    {"ringcast_subscriber_dropped_by_age_total", V_COUNT, "dropped_by_age", "Drops because its oldest share was older than slow_drop_after"},
    {"ringcast_subscriber_dropped_by_quota_total", V_COUNT, "dropped_by_quota", "Drops because it held its fair share"},
    {"ringcast_subscriber_chunks_failed_total", V_COUNT, "chunks_failed", "Shares refused or completed in error"},
    {"ringcast_subscriber_shares_unsent_total", V_COUNT, "shares_unsent", "Shares looked up for it that it left before"},
    {"ringcast_subscriber_cut_off", V_GAUGE, "cut_off", "1 if it was cut off by the slow policy's age bound"},
    {"ringcast_subscriber_cut_off_age_seconds", V_GAUGE_NS, "cut_off_age_ms", "Its oldest share's age when it was cut off"},
    {"ringcast_subscriber_connected", V_GAUGE, "active", "1 while connected, 0 once it left"},
    {"ringcast_subscriber_handled_reported", V_GAUGE, "handled_reported", "1 if its BYE said how many chunks it handled"},
    {"ringcast_subscriber_chunks_handled", V_GAUGE, "chunks_handled", "Chunks its BYE said it handled (0 if it said none)"},
    {"ringcast_subscriber_chunks_unread_at_leave_total", V_COUNT, "chunks_unread_at_leave", "Chunks sent to it that it never read, by its BYE's count"},
    {"ringcast_subscriber_outstanding_shares", V_GAUGE, NULL, "Zero-copy shares posted to it, not completed: its backlog"},
    {"ringcast_subscriber_oldest_send_age_seconds", V_GAUGE_NS, NULL, "Age of its oldest outstanding send"},
    {"ringcast_subscriber_shares_deferred_total", V_COUNT, "shares_deferred", "slow_policy = block: shares put in its backlog while it could not take them"},
    {"ringcast_subscriber_deferred_high_water", V_GAUGE, "deferred_high_water", "The most shares in its block backlog at once"},
    {"ringcast_subscriber_backlog_full_waits_total", V_COUNT, "backlog_full_waits", "Times its full block backlog made its lane wait"},
    {"ringcast_subscriber_deferred_shares", V_GAUGE, NULL, "Shares in its block backlog now (not posted yet)"},
};

struct sub_walk {
    struct rci_prom *p;
    size_t row;                 /* sub_rows index, or SIZE_MAX: the info family */
    int rc;
};

static uint64_t sub_value(const struct rci_pipeline_sub_view *s, size_t row)
{
    switch (row) {
    case 0: return s->c.chunks_sent;
    case 1: return s->c.bytes_sent;
    case 2: return s->c.chunks_dropped;
    case 3: return s->c.dropped_by_age;
    case 4: return s->c.dropped_by_quota;
    case 5: return s->c.chunks_failed;
    case 6: return s->c.shares_unsent;
    case 7: return s->c.cut_off;
    case 8: return s->c.cut_off_age_ns;
    case 9: return s->active;
    case 10: return s->c.handled_reported;
    case 11: return s->c.chunks_handled;
    case 12: return s->c.chunks_unread_at_leave;
    case 13: return s->outstanding;
    case 14: return s->oldest_age_ns;
    case 15: return s->c.shares_deferred;
    case 16: return s->c.deferred_high_water;
    case 17: return s->c.backlog_full_waits;
    default: return s->deferred;
    }
}

static void sub_sample(void *ctx, const struct rci_pipeline_sub_view *s)
{
    struct sub_walk *w = ctx;
    if (w->rc != 0)
        return;
    char thread[12], peer[24];
    snprintf(thread, sizeof thread, "%u", s->thread);
    snprintf(peer, sizeof peer, "%" PRIu64, s->peer);
    struct rci_prom_label l[] = {{"thread", thread}, {"peer", peer}, {"address", s->address}, {"tags", s->tags}};
    if (w->row == SIZE_MAX)
        w->rc = rci_prom_gauge(w->p, l, 4, 1);
    else
        w->rc = sample(w->p, sub_rows[w->row].kind, l, 3, sub_value(s, w->row));
}

static int collect_subscribers(const struct rci_daemon_metrics *m, struct rci_prom *p)
{
    struct sub_walk w = {.p = p, .row = SIZE_MAX};
    w.rc = family(p, "ringcast_subscriber_info", RCI_PROM_GAUGE,
                  "Every subscriber seen (connected or left), with the tags it subscribed (json: subscribers[].tags)");
    if (w.rc == 0)
        rci_pipeline_for_each_subscriber(m->pipeline, sub_sample, &w);
    for (size_t r = 0; w.rc == 0 && r < sizeof sub_rows / sizeof sub_rows[0]; r++) {
        char help[256];
        if (sub_rows[r].json)
            snprintf(help, sizeof help, "%s (json: subscribers[].%s)", sub_rows[r].help, sub_rows[r].json);
        else
            snprintf(help, sizeof help, "%s", sub_rows[r].help);
        w.rc = family(p, sub_rows[r].name, type_of(sub_rows[r].kind), help);
        w.row = r;
        if (w.rc == 0)
            rci_pipeline_for_each_subscriber(m->pipeline, sub_sample, &w);
    }
    return w.rc;
}

/* ---- the process ------------------------------------------------------------------ */

static int collect_process(const struct rci_daemon_metrics *m, struct rci_prom *p)
{
    int rc = family(p, "process_start_time_seconds", RCI_PROM_GAUGE,
                    "Start time of the process since the Unix epoch in seconds");
    if (rc == 0)
        rc = rci_prom_gauge(p, NULL, 0, m->start_unix);
    if (rc == 0)
        rc = family(p, "ringcast_build_info", RCI_PROM_GAUGE, "ringcast's version and compiler, value 1");
    if (rc == 0) {
        struct rci_prom_label l[] = {{"version", RCI_VERSION}, {"compiler", __VERSION__}};
        rc = rci_prom_gauge(p, l, 2, 1);
    }
    uint64_t start = atomic_load(&m->run_start_ns), end = atomic_load(&m->run_end_ns);
    if (rc == 0)
        rc = family(p, "ringcast_run_seconds", RCI_PROM_GAUGE,
                    "Seconds from the cards' start to the end of the run, or to now while it runs (json: seconds)");
    if (rc == 0 && start)
        rc = rci_prom_gauge(p, NULL, 0, (double)((end ? end : rci_now_ns()) - start) / NS_PER_S);
    if (rc == 0)
        rc = family(p, "ringcast_threads_stuck", RCI_PROM_GAUGE,
                    "Readout and publisher threads whose loop stood still for readout.thread_stuck_after (json: threads_stuck)");
    if (rc == 0)
        rc = rci_prom_gauge(p, NULL, 0, atomic_load(&m->threads_stuck));
    if (rc == 0)
        rc = family(p, "ringcast_thread_stuck_episodes_total", RCI_PROM_COUNTER,
                    "Times a readout or publisher thread became stuck (json: thread_stuck_episodes)");
    if (rc == 0)
        rc = rci_prom_counter(p, NULL, 0, atomic_load(&m->thread_stuck_episodes));
    if (rc == 0)
        rc = family(p, "ringcast_threads_abandoned", RCI_PROM_GAUGE,
                    "Publisher threads stuck at the stop, left behind (json: threads_abandoned)");
    if (rc == 0)
        rc = rci_prom_gauge(p, NULL, 0, atomic_load(&m->threads_abandoned));
    if (rc == 0)
        rc = family(p, "ringcast_state", RCI_PROM_GAUGE,
                    "1 for the daemon's state now: starting, waiting (for subscribers), running, stopping, stopped");
    static const char *const states[] = {"starting", "waiting", "running", "stopping", "stopped"};
    int now = atomic_load(&m->state);
    for (int i = 0; rc == 0 && i < 5; i++) {
        struct rci_prom_label l[] = {{"state", states[i]}};
        rc = rci_prom_gauge(p, l, 1, i == now);
    }
    return rc;
}

const char *rci_daemon_state_name(int state)
{
    static const char *const names[] = {
        [RCI_DAEMON_STARTING] = "starting", [RCI_DAEMON_WAITING] = "waiting for subscribers",
        [RCI_DAEMON_RUNNING] = "running", [RCI_DAEMON_STOPPING] = "stopping", [RCI_DAEMON_STOPPED] = "stopped",
    };
    if (state < 0 || state >= (int)(sizeof names / sizeof names[0]))
        return "unknown";
    return names[state];
}

int rci_daemon_metrics_collect(void *ctx, struct rci_prom *p)
{
    const struct rci_daemon_metrics *m = ctx;
    int rc = collect_process(m, p);
    if (rc == 0)
        rc = collect_cards(m, p);
    if (rc == 0)
        rc = collect_elinks(m, p);
    if (rc == 0)
        rc = collect_threads(m, p);
    if (rc == 0)
        rc = collect_subscribers(m, p);
    return rc;
}
