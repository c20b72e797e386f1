/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_daemon.c — cards -> DMA rings -> readout threads -> publisher, as
 * run by ringcast-readout. The readout threads hand chunks to the publishing
 * half (pipeline/publish.c): chunks of tags nobody subscribed go back to
 * the ring at once, the others are sent to every subscriber of their tag by
 * the publisher threads (one per port, fabric.port + i). */
#include "common/errbuf.h"
#include "tools/readout_daemon.h"
#include "common/monotonic.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dma/dma_ring.h"
#include "readout/readout.h"
#include "readout/sim/sim_card.h"
#include "pipeline/publish.h"
#include "tools/daemon_figures.h"
#include "tools/daemon_elinks.h"
#include "tools/daemon_metrics.h"
#include "tools/daemon_notify.h"
#include "tools/metrics_http.h"
#include "tools/log.h"

#define DAEMON_TICK_NS      (100ull * 1000 * 1000)
#define DRAIN_MIN_NS        (2ull * 1000 * 1000 * 1000)
#define SUBSCRIBER_POLL_NS  (10ull * 1000 * 1000)

struct daemon_card {
    const struct rci_card_params *params;
    struct rci_dma_ring *ring;
    struct rci_card *card;
    struct rci_readout *readout;
    struct rci_publish_card *publish;   /* the readout's sink context */
    bool started;
    _Atomic uint64_t firmware_losses;  /* times rci_card_check reported the firmware lost */
    struct rci_ring_alarm alarm;       /* occupancy alarms at 90 %, 100 %, back under 80 % */
    bool stopped_by_loss;              /* on_firmware_loss = stop did stop it */
    struct rci_elink_watch elinks;     /* per-e-link errors and rates for the log */
    /* Previous sample for rates. */
    uint64_t last_chunks, last_bytes;
};

struct daemon {
    const struct rci_config *cfg;
    unsigned ncards;
    struct daemon_card cards[RCI_MAX_CARDS];
    struct rci_pipeline *publish;
    uint64_t start_ns, last_stats_ns;
    uint64_t end_ns;                   /* run over (finished or stop requested) */
    struct rci_daemon_metrics metrics; /* what /metrics reads ([metrics] listen) */
    struct rci_metrics_http *http;
    struct rci_notify notify;          /* systemd: READY, STATUS, WATCHDOG */
    /* Previous totals for the STATUS rate. */
    uint64_t status_bytes;
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Seconds from the cards' start to the end of the run (or to now while it
 * runs): the time rates are computed over, lingering excluded. */
static double run_seconds(const struct daemon *d)
{
    uint64_t end = d->end_ns ? d->end_ns : rci_now_ns();
    return (double)(end - d->start_ns) / 1e9;
}

static int install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
        return -errno;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int create_ring(struct daemon_card *dc, char *err, size_t errlen)
{
    const struct rci_card_params *p = dc->params;
    char shm_name[96];
    snprintf(shm_name, sizeof shm_name, "%s-ring", p->shm_name);
    struct rci_dma_ring_params rp = {
        .size = p->ring_size,
        .unit_size = p->block_size,
        .backend = p->memory,
        .shm_name = shm_name,
        .lock_memory = true,
    };
    return rci_dma_ring_create(&rp, &dc->ring, err, errlen);
}

static int create_card(struct daemon *d, struct daemon_card *dc, char *err, size_t errlen)
{
    const struct rci_card_params *p = dc->params;
    unsigned n = p->index;
    switch (p->type) {
    case RCI_CARD_SIM:
        if (!d->cfg->has_sim[n]) {
            rci_set_err(err, errlen, "card.%u is a simulated card but there is no [sim.%u] section", n, n);
            return -EINVAL;
        }
        return rci_sim_card_create(p, &d->cfg->sim[n], rci_dma_ring_addr(dc->ring),
                                  rci_dma_ring_size(dc->ring), &dc->card, err, errlen);
    case RCI_CARD_SIM_PROCESS:
        /* The firmware runs in `ringcast-sim -c FILE --card N`, attached to
         * the BAR created here and to the ring's shm object. */
        return rci_sim_bar_create_shm(p, &dc->card, err, errlen);
    }
    rci_set_err(err, errlen, "card.%u: unknown card type %d", n, (int)p->type);
    return -EINVAL;
}

/* A step that succeeded may still leave a warning in err (mlock failed, a
 * stale shm object from a killed run was replaced): say it. */
static int setup_step(int rc, unsigned card, char *err)
{
    if (rc != 0)
        rci_error("card.%u: %s", card, err[0] ? err : strerror(-rc));
    else if (err[0])
        rci_warn("card.%u: %s", card, err);
    err[0] = '\0';
    return rc;
}

static int setup_card(struct daemon *d, struct daemon_card *dc)
{
    char err[512] = "";
    unsigned n = dc->params->index;
    int rc = setup_step(create_ring(dc, err, sizeof err), n, err);
    if (rc == 0)
        rc = setup_step(create_card(d, dc, err, sizeof err), n, err);
    if (rc == 0)
        rc = setup_step(rci_pipeline_add_card(d->publish, dc->params, dc->ring, &dc->publish,
                                                   err, sizeof err), n, err);
    if (rc == 0)
        rc = setup_step(rci_readout_create(dc->params, dc->ring, dc->card, rci_pipeline_sink,
                                          dc->publish, &dc->readout, err, sizeof err), n, err);
    if (rc == 0)
        rc = setup_step(rci_pipeline_set_readout(dc->publish, dc->readout, err, sizeof err), n, err);
    if (rc != 0)
        return rc;
    if (!rci_dma_ring_region(dc->ring)->locked)
        rci_warn("card.%u: the %" PRIu64 " MiB ring is not locked in memory: it may be paged out;"
                " give the service CAP_IPC_LOCK or a larger memlock limit",
                n, dc->params->ring_size >> 20);
    if (dc->params->type == RCI_CARD_SIM_PROCESS)
        rci_info("card.%u: waiting for `ringcast-sim -c %s --card %u` to attach to shm %s",
                n, d->cfg->source[0] ? d->cfg->source : "FILE", n, dc->params->shm_name);
    rci_info("card.%u: %s card, ring %" PRIu64 " MiB (%s memory), %u B blocks, tag base 0x%" PRIx64, n,
            dc->card->ops->kind, dc->params->ring_size >> 20, rci_mem_backend_name(dc->params->memory),
            dc->params->block_size, dc->params->tag_base);
    return 0;
}

static void teardown_card(struct daemon_card *dc)
{
    rci_elink_watch_free(&dc->elinks);
    if (dc->readout)
        rci_readout_destroy(dc->readout);
    if (dc->card)
        rci_card_destroy(dc->card);
    if (dc->ring)
        rci_dma_ring_destroy(dc->ring);
    dc->readout = NULL;
    dc->card = NULL;
    dc->ring = NULL;
}

/* The three statistics of one card, taken together. */
struct card_snapshot {
    struct rci_readout_stats rs;
    struct rci_dma_ring_stats ring;
    struct rci_card_stats cs;
};

static void snapshot_card(struct daemon_card *dc, struct card_snapshot *snap)
{
    rci_readout_get_stats(dc->readout, &snap->rs);
    rci_dma_ring_get_stats(dc->ring, &snap->ring);
    rci_card_get_stats(dc->card, &snap->cs);
}

/* One line per card with losses, naming the e-links (the first few). */
#define LOSS_LOG_ELINKS 8u
static void log_card_losses(struct daemon_card *dc)
{
    char line[1024];
    size_t used = 0;
    unsigned shown = 0, more = 0;
    for (unsigned e = 0; e < RCI_READOUT_MAX_ELINKS; e++) {
        struct rci_elink_stats es;
        if (rci_readout_get_elink_stats(dc->readout, e, &es) != 0 || rci_elink_lost(&es) == 0)
            continue;
        if (shown == LOSS_LOG_ELINKS) {
            more++;
            continue;
        }
        int n = snprintf(line + used, sizeof line - used,
                         "%s e-link %u: ring %" PRIu64 " pool %" PRIu64 " gap %" PRIu64
                         " incomplete %" PRIu64 " oversize %" PRIu64, shown ? ";" : "", e,
                         es.chunks_dropped_ring, es.chunks_dropped_pool, es.chunks_dropped_gap,
                         es.chunks_incomplete, es.err_oversize);
        if (n > 0 && (size_t)n < sizeof line - used)
            used += (size_t)n;
        shown++;
    }
    if (shown)
        rci_warn("card.%u: chunks lost by e-link:%s%s", dc->params->index, line,
                more ? " (and more e-links: see --stats-json)" : "");
}

static void log_card_stats(struct daemon_card *dc, double interval_s)
{
    struct card_snapshot snap;
    snapshot_card(dc, &snap);
    const struct rci_readout_stats *rs = &snap.rs;
    const struct rci_dma_ring_stats *ring = &snap.ring;
    uint64_t chunks = rs->chunks, bytes = rs->bytes;
    double chunk_rate = interval_s > 0 ? (double)(chunks - dc->last_chunks) / interval_s : 0;
    double byte_rate = interval_s > 0 ? (double)(bytes - dc->last_bytes) / interval_s : 0;
    dc->last_chunks = chunks;
    dc->last_bytes = bytes;
    rci_info_unlimited("card.%u: %.3f Mchunk/s %.3f GB/s | produced %" PRIu64 " decoded %" PRIu64
            " in flight %" PRIu64 " | ring %.1f%% (hwm %.1f%%) full %.3f s | card stalled %.3f s"
            " | errors %" PRIu64 " lost %" PRIu64 " flagged %" PRIu64 " (crc %" PRIu64 ")",
            dc->params->index, chunk_rate / 1e6, byte_rate / 1e9, snap.cs.chunks_produced, rs->chunks,
            rs->chunks_in_flight, 100.0 * (double)ring->in_use / (double)ring->size,
            100.0 * (double)ring->high_water / (double)ring->size, (double)ring->full_ns / 1e9,
            (double)snap.cs.stall_ns / 1e9, rci_decode_errors(rs), rci_chunks_lost(rs), rci_chunks_flagged(rs),
            rs->chunks_crc);
    dc->elinks.card = dc->params->index;
    if (rci_elink_watch_check(&dc->elinks, dc->readout, rci_now_ns()) != 0)
        rci_warn("card.%u: out of memory for the per-e-link figures", dc->params->index);
}

/* systemd's STATUS=: one line on the run so far. */
static void notify_status(struct daemon *d, double interval_s)
{
    if (!d->notify.enabled)
        return;
    uint64_t bytes = 0, errors = 0, lost = 0, in_use_max = 0;
    for (unsigned i = 0; i < d->ncards; i++) {
        struct card_snapshot snap;
        snapshot_card(&d->cards[i], &snap);
        bytes += snap.rs.bytes;
        errors += rci_decode_errors(&snap.rs);
        lost += rci_chunks_lost(&snap.rs);
        uint64_t pct = snap.ring.size ? 1000u * snap.ring.in_use / snap.ring.size : 0;
        in_use_max = pct > in_use_max ? pct : in_use_max;
    }
    struct rci_publish_totals pt;
    rci_pipeline_get_totals(d->publish, &pt);
    char status[256];
    snprintf(status, sizeof status, "running %.0f s: %u card%s, %.3f GB/s decoded, fullest ring %.1f %%,"
             " %u subscribers, sent %" PRIu64 ", dropped %" PRIu64 ", lost %" PRIu64 ", errors %" PRIu64,
             run_seconds(d), d->ncards, d->ncards == 1 ? "" : "s",
             interval_s > 0 ? (double)(bytes - d->status_bytes) / interval_s / 1e9 : 0.0,
             (double)in_use_max / 10.0, rci_pipeline_subscribed(d->publish), pt.chunks_sent, pt.chunks_dropped,
             lost, errors);
    d->status_bytes = bytes;
    rci_notify_status(&d->notify, status);
}

/* The watchdog's signs of life: each started card's readout polls and each
 * publisher thread's loop turns. */
static void notify_watchdog(struct daemon *d, uint64_t now)
{
    if (!d->notify.enabled || !d->notify.watchdog_ns)
        return;
    uint64_t beats[RCI_NOTIFY_MAX_THREADS];
    char names[RCI_NOTIFY_MAX_THREADS][32];
    const char *name_of[RCI_NOTIFY_MAX_THREADS];
    unsigned n = 0;
    for (unsigned i = 0; i < d->ncards && n < RCI_NOTIFY_MAX_THREADS; i++) {
        if (!d->cards[i].started)
            continue;
        struct rci_readout_stats rs;
        rci_readout_get_stats(d->cards[i].readout, &rs);
        snprintf(names[n], sizeof names[n], "the readout thread of card.%u", d->cards[i].params->index);
        beats[n++] = rs.polls;
    }
    for (unsigned t = 0; t < rci_pipeline_threads(d->publish) && n < RCI_NOTIFY_MAX_THREADS; t++) {
        snprintf(names[n], sizeof names[n], "publisher thread %u", t);
        beats[n++] = rci_pipeline_thread_heartbeat(d->publish, t);
    }
    for (unsigned i = 0; i < n; i++)
        name_of[i] = names[i];
    rci_notify_watchdog(&d->notify, now, beats, name_of, n);
}

static void log_stats(struct daemon *d, uint64_t now)
{
    double interval_s = (double)(now - d->last_stats_ns) / 1e9;
    d->last_stats_ns = now;
    for (unsigned i = 0; i < d->ncards; i++)
        log_card_stats(&d->cards[i], interval_s);
    rci_pipeline_log_stats(d->publish, interval_s);
    notify_status(d, interval_s);
}

/* "12345" or "12345-12347": the ports the publisher threads listen on. */
static const char *publisher_ports(const struct daemon *d, char *buf, size_t len)
{
    unsigned first = d->cfg->fabric.port, n = rci_pipeline_threads(d->publish);
    if (n == 1)
        snprintf(buf, len, "%u", first);
    else
        snprintf(buf, len, "%u-%u", first, first + n - 1);
    return buf;
}

static bool card_finished(struct daemon_card *dc)
{
    if (dc->stopped_by_loss)
        return true;
    struct rci_card_stats cs;
    rci_card_get_stats(dc->card, &cs);
    return cs.finished;
}

/* A snapshot: decoded everything seen written, and every key came back. */
static bool card_drained(struct daemon_card *dc)
{
    return rci_readout_drained(dc->readout);
}

static bool all_cards(struct daemon *d, bool (*pred)(struct daemon_card *))
{
    for (unsigned i = 0; i < d->ncards; i++)
        if (!pred(&d->cards[i]))
            return false;
    return true;
}

static int start_cards(struct daemon *d)
{
    for (unsigned i = 0; i < d->ncards; i++) {
        struct daemon_card *dc = &d->cards[i];
        int rc = rci_readout_start(dc->readout);
        if (rc != 0) {
            rci_error("card.%u: cannot start the readout: %s", dc->params->index, strerror(-rc));
            return rc;
        }
        dc->started = true;
    }
    return 0;
}

/* readout.wait_subscribers: hold the cards until that many subscribers have
 * a tag set, so that a fixed run reaches them from its first chunk. */
static bool wait_for_subscribers(struct daemon *d)
{
    unsigned want = d->cfg->daemon.wait_subscribers;
    if (want == 0)
        return true;
    if (want > d->cfg->fabric.max_subscribers) {
        rci_error("readout.wait_subscribers = %u can never be reached: fabric.max_subscribers = %u", want,
                 d->cfg->fabric.max_subscribers);
        return false;
    }
    char ports[16];
    rci_info("waiting for %u subscriber%s to subscribe on %s port %s before starting the cards", want,
            want == 1 ? "" : "s", d->cfg->fabric.address, publisher_ports(d, ports, sizeof ports));
    char status[160];
    snprintf(status, sizeof status, "waiting for %u subscriber%s on port %s before starting the cards", want,
             want == 1 ? "" : "s", publisher_ports(d, ports, sizeof ports));
    rci_notify_status(&d->notify, status);
    while (!stop_requested) {
        notify_watchdog(d, rci_now_ns());
        if (rci_pipeline_subscribed(d->publish) >= want) {
            rci_info("%u subscriber%s subscribed: starting the cards", want, want == 1 ? "" : "s");
            return true;
        }
        rci_sleep_ns(SUBSCRIBER_POLL_NS);
    }
    rci_info("stop requested while waiting for subscribers");
    return false;
}

/* A card whose firmware died or hung: say so, then wait for a successor
 * (it adopts the running DMA) or stop the card, per card.N.on_firmware_loss. */
static void check_firmware(struct daemon_card *dc)
{
    char why[256] = "";
    if (!dc->started || dc->stopped_by_loss || rci_card_check(dc->card, why, sizeof why) != RCI_CARD_FW_LOST)
        return;
    dc->firmware_losses++;
    unsigned n = dc->params->index;
    if (dc->params->on_firmware_loss == RCI_FW_LOSS_STOP) {
        rci_warn("card.%u: firmware lost: %s; on_firmware_loss = stop: stopping the card", n, why);
        rci_card_stop(dc->card);
        dc->stopped_by_loss = true;
    } else {
        rci_warn("card.%u: firmware lost: %s; on_firmware_loss = wait: waiting for a new"
                " `ringcast-sim --card %u` to take over", n, why, n);
    }
}

/* Ring occupancy alarms, each tick (README.md, "Metrics and alarms"). */
static void check_ring_alarm(struct daemon_card *dc)
{
    if (!dc->started)
        return;
    struct rci_dma_ring_stats s;
    rci_dma_ring_get_stats(dc->ring, &s);
    double pct = s.size ? 100.0 * (double)s.in_use / (double)s.size : 0;
    unsigned n = dc->params->index;
    switch (rci_ring_alarm_update(&dc->alarm, &s)) {
    case RCI_RING_ALARM_HIGH:
        rci_warn("card.%u: ring alarm: %.1f %% in use (over %u %%)", n, pct, RCI_RING_ALARM_HIGH_PCT);
        break;
    case RCI_RING_ALARM_FULL:
        rci_warn("card.%u: ring alarm: the ring is full (%.1f %% in use now): the card stalls", n, pct);
        break;
    case RCI_RING_ALARM_CLEAR:
        rci_info("card.%u: ring alarm over: %.1f %% in use (under %u %%)", n, pct, RCI_RING_ALARM_CLEAR_PCT);
        break;
    case RCI_RING_ALARM_NONE:
        break;
    }
}

static void run_until_done(struct daemon *d)
{
    uint64_t interval = d->cfg->daemon.stats_interval_ns;
    while (!stop_requested) {
        rci_sleep_ns(DAEMON_TICK_NS);
        uint64_t now = rci_now_ns();
        for (unsigned i = 0; i < d->ncards; i++) {
            check_firmware(&d->cards[i]);
            check_ring_alarm(&d->cards[i]);
        }
        if (interval && now - d->last_stats_ns >= interval)
            log_stats(d, now);
        notify_watchdog(d, now);
        rci_log_flush(false); /* counts of suppressed lines whose interval is over */
        if (all_cards(d, card_finished) && all_cards(d, card_drained)) {
            rci_info("every card finished its run and everything was drained");
            return;
        }
    }
    rci_info("stop requested");
}

/* Stop order: cards stop writing; the readouts decode what was written and
 * wait for every key while the publisher keeps sending (bounded by the
 * fabric's peer_timeout: a dead subscriber's keys come back by then); the
 * readout threads stop; then the publisher threads, whose end releases
 * whatever it still held. */
static void stop_cards(struct daemon *d)
{
    uint64_t drain_ns = d->cfg->fabric.peer_timeout_ns + 1000000000ull;
    if (drain_ns < DRAIN_MIN_NS)
        drain_ns = DRAIN_MIN_NS;
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->cards[i].started)
            rci_card_stop(d->cards[i].card);
    /* wait_drained counts what the card wrote before it stopped, even if the
     * readout thread had not polled it yet. */
    for (unsigned i = 0; i < d->ncards; i++) {
        struct daemon_card *dc = &d->cards[i];
        if (dc->started && rci_readout_wait_drained(dc->readout, drain_ns) != 0)
            rci_warn("card.%u: not drained within %.1f s", dc->params->index, (double)drain_ns / 1e9);
    }
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->cards[i].started)
            rci_readout_stop(d->cards[i].readout);
    /* A finished run lingers for the subscribers to read the end of it; a
     * stop by signal does not. */
    rci_pipeline_stop(d->publish, stop_requested ? 0 : d->cfg->daemon.linger_ns);
    /* The publishers' end gave their last keys back after the readouts' final
     * advance: move the read pointer over them too (the readout threads are
     * joined, so this thread owns the rings now). */
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->cards[i].started)
            rci_dma_ring_advance(d->cards[i].ring);
    /* The drained ring ends an alarm: the first sample takes in the time the
     * ring was full since the last tick, the second sees the ring now. */
    for (unsigned i = 0; i < d->ncards; i++) {
        check_ring_alarm(&d->cards[i]);
        check_ring_alarm(&d->cards[i]);
    }
}

struct totals {
    uint64_t produced, decoded, bytes, in_flight, ring_in_use, errors, cut_chunks, cut_bytes;
};

static void sum_totals(struct daemon *d, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < d->ncards; i++) {
        struct card_snapshot snap;
        snapshot_card(&d->cards[i], &snap);
        t->produced += snap.cs.chunks_produced;
        t->decoded += snap.rs.chunks;
        t->bytes += snap.rs.bytes;
        t->in_flight += snap.rs.chunks_in_flight;
        t->ring_in_use += snap.ring.in_use;
        t->errors += rci_decode_errors(&snap.rs);
        t->cut_chunks += snap.rs.chunks_cut_at_stop;
        t->cut_bytes += snap.rs.bytes_cut_at_stop;
    }
}

static void log_summary(struct daemon *d, const struct totals *t)
{
    double secs = run_seconds(d);
    rci_log_summary("summary: %.2f s, %u card%s together: %" PRIu64 " chunks produced, %" PRIu64 " decoded (%.3f GB,"
            " %.3f GB/s), %" PRIu64 " decode errors, %" PRIu64 " keys outstanding, %" PRIu64 " ring bytes in"
            " use, %" PRIu64 " chunks cut off by the stop (%" PRIu64 " bytes)",
            secs, d->ncards, d->ncards == 1 ? "" : "s", t->produced, t->decoded, (double)t->bytes / 1e9,
            secs > 0 ? (double)t->bytes / 1e9 / secs : 0.0, t->errors, t->in_flight, t->ring_in_use,
            t->cut_chunks, t->cut_bytes);
    /* Times are per card: each card stalls on its own ring, and the cards run
     * side by side, so a sum over cards would exceed the run. */
    for (unsigned i = 0; i < d->ncards; i++) {
        struct card_snapshot snap;
        snapshot_card(&d->cards[i], &snap);
        rci_log_summary("summary: card.%u: %" PRIu64 " chunks produced, %" PRIu64 " decoded; card stalled %.3f s"
                " and ring full %.3f s of the %.2f s run", d->cards[i].params->index,
                snap.cs.chunks_produced, snap.rs.chunks, (double)snap.cs.stall_ns / 1e9,
                (double)snap.ring.full_ns / 1e9, secs);
        d->cards[i].elinks.card = d->cards[i].params->index;
        rci_elink_watch_check(&d->cards[i].elinks, d->cards[i].readout, rci_now_ns()); /* since the last interval */
        log_card_losses(&d->cards[i]);
    }
    struct rci_publish_totals pt;
    rci_pipeline_get_totals(d->publish, &pt);
    rci_log_summary("summary: %" PRIu64 " chunks sent to subscribers (%.3f GB, %.3f GB/s), %" PRIu64
            " without subscriber, %" PRIu64 " dropped (slow subscriber), %" PRIu64 " failed, %" PRIu64
            " not sent (subscriber gone or shutdown)",
            pt.chunks_sent, (double)pt.bytes_sent / 1e9, secs > 0 ? (double)pt.bytes_sent / 1e9 / secs : 0.0,
            pt.chunks_no_subscriber, pt.chunks_dropped, pt.shares_failed, pt.shares_unsent);
}

/* ,"elinks_lost":[{"elink":E,...}]: every e-link that lost a chunk or saw a
 * decode error, with the loss by cause and the error by kind. */
static void write_elink_losses_json(FILE *f, struct daemon_card *dc)
{
    fputs(",\"elinks_lost\":[", f);
    bool first = true;
    for (unsigned e = 0; e < RCI_READOUT_MAX_ELINKS; e++) {
        struct rci_elink_stats es;
        if (rci_readout_get_elink_stats(dc->readout, e, &es) != 0 ||
            rci_elink_lost(&es) + rci_elink_errors(&es) == 0)
            continue;
        fprintf(f, "%s{\"elink\":%u,\"chunks_lost\":%" PRIu64 ",\"chunks_dropped_ring\":%" PRIu64
                   ",\"chunks_dropped_pool\":%" PRIu64 ",\"chunks_dropped_gap\":%" PRIu64
                   ",\"chunks_incomplete\":%" PRIu64 ",\"err_oversize\":%" PRIu64
                   ",\"err_seq_gap\":%" PRIu64 ",\"err_orphan\":%" PRIu64 ",\"err_bad_start\":%" PRIu64
                   ",\"err_malformed\":%" PRIu64 ",\"malformed_length\":%" PRIu64
                   ",\"malformed_null\":%" PRIu64 ",\"malformed_order\":%" PRIu64
                   ",\"malformed_padding\":%" PRIu64 ",\"malformed_split\":%" PRIu64 "}",
                first ? "" : ",", e, rci_elink_lost(&es), es.chunks_dropped_ring, es.chunks_dropped_pool,
                es.chunks_dropped_gap, es.chunks_incomplete, es.err_oversize, es.err_seq_gap,
                es.err_orphan, es.err_bad_start, es.err_malformed, es.malformed_length,
                es.malformed_null, es.malformed_order, es.malformed_padding, es.malformed_split);
        first = false;
    }
    fputc(']', f);
}

static void write_card_json(FILE *f, struct daemon_card *dc)
{
    struct card_snapshot snap;
    snapshot_card(dc, &snap);
    const struct rci_readout_stats rs = snap.rs;
    const struct rci_dma_ring_stats ring = snap.ring;
    const struct rci_card_stats cs = snap.cs;
    fprintf(f,
            "{\"card\":%u,\"chunks_produced\":%" PRIu64 ",\"bytes_produced\":%" PRIu64
            ",\"card_stall_ns\":%" PRIu64 ",\"chunks_decoded\":%" PRIu64 ",\"bytes_decoded\":%" PRIu64
            ",\"blocks\":%" PRIu64 ",\"bad_header\":%" PRIu64 ",\"err_malformed\":%" PRIu64
            ",\"err_seq_gap\":%" PRIu64 ",\"err_oversize\":%" PRIu64 ",\"err_orphan\":%" PRIu64
            ",\"chunks_dropped_gap\":%" PRIu64 ",\"chunks_incomplete\":%" PRIu64
            ",\"chunks_dropped_pool\":%" PRIu64 ",\"chunks_dropped_ring\":%" PRIu64
            ",\"chunks_lost\":%" PRIu64 ",\"chunks_spilled\":%" PRIu64 ",\"bytes_spilled\":%" PRIu64
            ",\"err_bad_start\":%" PRIu64 ",\"malformed_length\":%" PRIu64 ",\"malformed_null\":%" PRIu64
            ",\"malformed_order\":%" PRIu64 ",\"malformed_padding\":%" PRIu64 ",\"malformed_split\":%" PRIu64
            ",\"sink_errors\":%" PRIu64 ",\"card_bad_status\":%" PRIu64
            ",\"chunks_truncated\":%" PRIu64 ",\"chunks_error\":%" PRIu64 ",\"chunks_crc\":%" PRIu64
            ",\"chunks_busy\":%" PRIu64 ",\"keys_outstanding\":%" PRIu64 ",\"bad_releases\":%" PRIu64
            ",\"chunks_cut_at_stop\":%" PRIu64 ",\"bytes_cut_at_stop\":%" PRIu64
            ",\"ring_size\":%" PRIu64 ",\"ring_bytes_in_use\":%" PRIu64 ",\"ring_high_water\":%" PRIu64
            ",\"ring_full_ns\":%" PRIu64 ",\"injected_truncated\":%" PRIu64 ",\"injected_crc\":%" PRIu64
            ",\"injected_malformed\":%" PRIu64 ",\"injected_seqskip\":%" PRIu64 ",\"card_host_errors\":%" PRIu64 ",\"firmware_losses\":%" PRIu64
            ",\"decode_errors\":%" PRIu64 ",\"ring_alarms_high\":%" PRIu64 ",\"ring_alarms_full\":%" PRIu64
            ",\"ring_alarms_cleared\":%" PRIu64 ",\"chunks_flagged\":%" PRIu64,
            dc->params->index, cs.chunks_produced, cs.bytes_produced, cs.stall_ns, rs.chunks, rs.bytes,
            rs.blocks, rs.bad_header, rs.err_malformed, rs.err_seq_gap, rs.err_oversize, rs.err_orphan,
            rs.chunks_dropped_gap, rs.chunks_incomplete, rs.chunks_dropped_pool,
            rs.chunks_dropped_ring, rci_chunks_lost(&rs), rs.chunks_spilled, rs.bytes_spilled,
            rs.err_bad_start, rs.malformed_length, rs.malformed_null, rs.malformed_order,
            rs.malformed_padding, rs.malformed_split,
            rs.sink_errors, rs.card_bad_status,
            rs.chunks_truncated, rs.chunks_error, rs.chunks_crc, rs.chunks_busy, rs.chunks_in_flight,
            rs.bad_releases, rs.chunks_cut_at_stop, rs.bytes_cut_at_stop, ring.size, ring.in_use,
            ring.high_water, ring.full_ns, cs.injected_truncated, cs.injected_crc, cs.injected_malformed,
            cs.injected_seqskip, cs.host_errors, atomic_load(&dc->firmware_losses), rci_decode_errors(&rs),
            atomic_load(&dc->alarm.high), atomic_load(&dc->alarm.full), atomic_load(&dc->alarm.cleared),
            rci_chunks_flagged(&rs));
    write_elink_losses_json(f, dc);
    rci_elinks_write_json(f, dc->readout);
    fputc('}', f);
}

static int write_stats_json(struct daemon *d, const struct totals *t, FILE *f, const char *path)
{
    fprintf(f,
            "{\"seconds\":%.3f,\"chunks_produced\":%" PRIu64 ",\"chunks_decoded\":%" PRIu64
            ",\"bytes_decoded\":%" PRIu64 ",\"keys_outstanding\":%" PRIu64
            ",\"ring_bytes_in_use\":%" PRIu64 ",\"decode_errors\":%" PRIu64
            ",\"chunks_cut_at_stop\":%" PRIu64 ",\"bytes_cut_at_stop\":%" PRIu64,
            run_seconds(d), t->produced, t->decoded, t->bytes, t->in_flight,
            t->ring_in_use, t->errors, t->cut_chunks, t->cut_bytes);
    rci_pipeline_write_json(d->publish, f);
    fputs(",\"cards\":[", f);
    for (unsigned i = 0; i < d->ncards; i++) {
        if (i)
            fputc(',', f);
        write_card_json(f, &d->cards[i]);
    }
    fputs("]}\n", f);
    if (fflush(f) != 0 || ferror(f)) { /* the caller closes it */
        rci_error("--stats-json %s: %s", path, strerror(errno));
        return -EIO;
    }
    return 0;
}

static int setup_all(struct daemon *d)
{
    char err[512] = "";
    struct rci_pipeline_params pp;
    rci_config_pipeline_params(d->cfg, &pp);
    pp.log = rci_log_hook();
    int rc = rci_pipeline_create(&pp, &d->publish, err, sizeof err);
    if (rc != 0) {
        rci_error("publisher: %s", err[0] ? err : strerror(-rc));
        return rc;
    }
    unsigned nthreads = rci_pipeline_threads(d->publish);
    char ports[16];
    rci_info("publishing on %s port %s (provider %s, %s endpoint): %u publisher thread%s, each port serves"
            " every tag", d->cfg->fabric.address, publisher_ports(d, ports, sizeof ports),
            d->cfg->fabric.provider, d->cfg->fabric.endpoint == RCI_EP_RDM ? "rdm" : "msg", nthreads,
            nthreads == 1 ? "" : "s");
    for (unsigned i = 0; i < nthreads; i++)
        rci_info("publisher %u listening on %s:%u", i, d->cfg->fabric.address, d->cfg->fabric.port + i);
    for (unsigned i = 0; i < d->ncards; i++) {
        d->cards[i].params = &d->cfg->card[i];
        int rc = setup_card(d, &d->cards[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* [metrics] listen: what /metrics reads, and the server. 0 or -errno. */
static int start_metrics(struct daemon *d)
{
    struct rci_daemon_metrics *m = &d->metrics;
    m->pipeline = d->publish;
    for (unsigned i = 0; i < d->ncards; i++) {
        struct daemon_card *dc = &d->cards[i];
        m->cards[i] = (struct rci_metrics_card_src){.index = dc->params->index, .ring = dc->ring,
            .card = dc->card, .readout = dc->readout, .firmware_losses = &dc->firmware_losses,
            .alarm = &dc->alarm};
    }
    m->ncards = d->ncards;
    const char *listen = d->cfg->metrics.listen;
    if (!listen[0])
        return 0;
    char err[512] = "";
    int rc = rci_metrics_http_start(listen, rci_daemon_metrics_collect, m, &d->http, err, sizeof err);
    if (rc != 0)
        rci_error("%s", err);
    else
        rci_info("metrics at http://%s/metrics", listen);
    return rc;
}

/* [metrics] hold_after_run: after a run that finished by itself, keep
 * serving the final figures for a last scrape (until SIGINT/SIGTERM). */
static void hold_metrics(struct daemon *d)
{
    uint64_t hold = d->cfg->metrics.hold_after_run_ns;
    if (!d->http || hold == 0 || stop_requested)
        return;
    rci_info("serving the final figures at http://%s/metrics for up to %.1f s (SIGTERM ends it)",
             d->cfg->metrics.listen, (double)hold / 1e9);
    uint64_t deadline = rci_now_ns() + hold;
    while (!stop_requested && rci_now_ns() < deadline)
        rci_sleep_ns(DAEMON_TICK_NS);
}

int rci_daemon_run(const struct rci_config *cfg, FILE *stats, const char *stats_name)
{
    static struct daemon d;
    memset(&d, 0, sizeof d);
    d.cfg = cfg;
    d.ncards = cfg->ncards;
    if (d.ncards == 0) {
        rci_error("%s: no [card.N] section: nothing to read out", cfg->source[0] ? cfg->source : "configuration");
        return 2;
    }
    if (install_signal_handlers() != 0) {
        rci_error("cannot install signal handlers: %s", strerror(errno));
        return 1;
    }
    int status = 1;
    rci_notify_init(&d.notify);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    d.metrics.start_unix = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
    if (setup_all(&d) == 0 && start_metrics(&d) == 0) {
        int rc = rci_pipeline_start(d.publish);
        atomic_store(&d.metrics.state, RCI_DAEMON_WAITING);
        if (rc != 0)
            rci_error("cannot start the publisher threads: %s", strerror(-rc));
        else if (!wait_for_subscribers(&d))
            status = stop_requested ? 0 : 1;
        else {
            d.start_ns = d.last_stats_ns = rci_now_ns();
            atomic_store(&d.metrics.run_start_ns, d.start_ns);
            atomic_store(&d.metrics.state, RCI_DAEMON_RUNNING);
            if (start_cards(&d) == 0) {
                char ready[160], ports[16];
                snprintf(ready, sizeof ready, "running: %u card%s, publishers listening on port %s", d.ncards,
                         d.ncards == 1 ? "" : "s", publisher_ports(&d, ports, sizeof ports));
                rci_notify_ready(&d.notify, ready);
                run_until_done(&d);
                status = 0;
            }
        }
        if (d.start_ns == 0)
            d.start_ns = rci_now_ns();
        d.end_ns = rci_now_ns();
        atomic_store(&d.metrics.run_start_ns, d.start_ns);
        atomic_store(&d.metrics.run_end_ns, d.end_ns);
        atomic_store(&d.metrics.state, RCI_DAEMON_STOPPING);
        rci_notify_stopping(&d.notify, stop_requested ? "stopping: draining the rings" :
                                                        "the run finished: draining the rings");
        stop_cards(&d);
        struct totals t;
        sum_totals(&d, &t);
        log_summary(&d, &t);
        if (t.in_flight != 0) {
            rci_error("%" PRIu64 " keys still outstanding after the drain", t.in_flight);
            status = 1;
        }
        if (stats && write_stats_json(&d, &t, stats, stats_name) != 0)
            status = 1;
        atomic_store(&d.metrics.state, RCI_DAEMON_STOPPED);
        hold_metrics(&d);
    }
    rci_metrics_http_stop(d.http); /* it reads the cards and the pipeline */
    d.http = NULL;
    /* The publisher may still hold keys (a failed setup): they go back to
     * the readouts, so it goes first. */
    rci_pipeline_destroy(d.publish);
    for (unsigned i = 0; i < d.ncards; i++)
        teardown_card(&d.cards[i]);
    return status;
}
