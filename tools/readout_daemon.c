/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_daemon.c — cards -> DMA rings -> readout threads -> publisher, as
 * run by ringcast-readout. The readout threads hand chunks to the publishing
 * half (pipeline/publish.c): chunks of tags nobody subscribed go back to
 * the ring at once, the others are sent to every subscriber of their tag by
 * the publisher threads (one per port, fabric.port + i). */
#include "common/errbuf.h"
#include "tools/readout_daemon.h"
#include "common/monotonic.h"
#include "common/thread_watch.h"

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
#include "readout/sim/configured_card.h"
#include "common/cpus.h"
#include "pipeline/publish.h"
#include "net/fabric.h"
#include "tools/control.h"
#include "tools/daemon_announce.h"
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
    bool stopped_by_control;           /* `ringcast-ctl card N stop`, not started again yet */
    bool readout_abandoned;            /* its readout thread was stuck at the stop: left running */
    struct rci_elink_watch elinks;     /* per-e-link errors and rates for the log */
    /* Previous sample for rates. */
    uint64_t last_chunks, last_bytes;
};

struct daemon {
    const struct rci_config *cfg;
    unsigned ncards;
    struct daemon_card cards[RCI_MAX_CARDS];
    struct rci_pipeline *publish;
    struct rci_announce *announce;     /* [discovery] url set: our publishers' entries */
    bool publishers_listening;         /* announcing may start (and restart on a reload) */
    uint64_t start_ns, last_stats_ns;
    uint64_t end_ns;                   /* run over (finished or stop requested) */
    /* Control socket and reload (the main thread's). */
    struct rci_control *control;
    uint64_t reloads, reloads_refused, reload_keys_kept;
    struct rci_daemon_metrics metrics; /* what /metrics reads ([metrics] listen) */
    struct rci_metrics_http *http;
    struct rci_notify notify;          /* systemd: READY, STATUS, WATCHDOG */
    struct rci_thread_watch watch;     /* readout.thread_stuck_after: which threads stand still */
    unsigned threads_abandoned;        /* stuck at the stop: left running, not joined */
    /* Previous totals for the STATUS rate. */
    uint64_t status_bytes;
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;   /* SIGHUP */

/* Where the configuration came from, read again on reload (rci_daemon_set_source). */
static struct {
    const char *file;
    const char *const *overrides;
    unsigned noverrides;
} source;

void rci_daemon_set_source(const char *file, const char *const *overrides, unsigned noverrides)
{
    source.file = file;
    source.overrides = overrides;
    source.noverrides = noverrides;
}

static void on_reload_signal(int sig)
{
    (void)sig;
    reload_requested = 1;
}

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
    sa.sa_handler = on_reload_signal;   /* SIGHUP reloads; it used to end the daemon (exit 129) */
    if (sigaction(SIGHUP, &sa, NULL))
        return -errno;
    signal(SIGPIPE, SIG_IGN);
    return 0;
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
    int rc = setup_step(rci_configured_card_open(dc->params, d->cfg->has_sim[n] ? &d->cfg->sim[n] : NULL,
                                                 &dc->ring, &dc->card, err, sizeof err), n, err);
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
    if (dc->params->type == RCI_CARD_SIM_PROCESS) {
        char extra[512] = "";   /* the -o overrides the daemon was started with: the firmware needs them too */
        size_t used = 0;
        for (unsigned i = 0; i < source.noverrides && used < sizeof extra; i++) {
            int w = snprintf(extra + used, sizeof extra - used, " -o '%s'", source.overrides[i]);
            used += w > 0 ? (size_t)w : 0;
        }
        rci_info("card.%u: waiting for `ringcast-sim -c %s --card %u%s` to attach to shm %s",
                n, d->cfg->source[0] ? d->cfg->source : "FILE", n, extra, dc->params->shm_name);
    }
    int card_node = dc->params->type == RCI_CARD_PCIE && dc->params->device[0]
                    ? rci_pci_numa_node(dc->params->device) : -1;
    char nic[64];
    int nic_node = rci_nic_numa_node(d->cfg->fabric.address, nic, sizeof nic);
    if (card_node >= 0 && nic_node >= 0 && card_node != nic_node)
        rci_warn("card.%u: the card is on NUMA node %d but the NIC %s (%s) on node %d: every chunk "
                 "crosses the link between the nodes", n, card_node, nic, d->cfg->fabric.address, nic_node);
    if (dc->params->type == RCI_CARD_PCIE && dc->params->bar_file[0])
        rci_info("card.%u: BAR0 is the file %s: `ringcast-sim --bar-file %s -c %s --card %u` plays "
                 "the firmware", n, dc->params->bar_file, dc->params->bar_file,
                 d->cfg->source[0] ? d->cfg->source : "FILE", n);
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
    rci_configured_card_close(dc->ring, dc->card);
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

/* The threads' signs of life: each started card's readout polls and each
 * publisher thread's loop turns. slot[] is fixed per thread (card i: i,
 * publisher thread t: RCI_MAX_CARDS + t) for the stuck-thread watch. */
struct thread_beats {
    unsigned n;
    uint64_t beat[RCI_NOTIFY_MAX_THREADS];
    unsigned slot[RCI_NOTIFY_MAX_THREADS];
    char names[RCI_NOTIFY_MAX_THREADS][40];
    const char *name_of[RCI_NOTIFY_MAX_THREADS];
};
_Static_assert(RCI_MAX_CARDS + RCI_MAX_PUBLISHER_THREADS <= RCI_NOTIFY_MAX_THREADS &&
               RCI_NOTIFY_MAX_THREADS <= RCI_THREAD_WATCH_MAX, "every thread has a slot");

static void collect_beats(struct daemon *d, struct thread_beats *b)
{
    b->n = 0;
    for (unsigned i = 0; i < d->ncards; i++) {
        if (!d->cards[i].started)
            continue;
        struct rci_readout_stats rs;
        rci_readout_get_stats(d->cards[i].readout, &rs);
        snprintf(b->names[b->n], sizeof b->names[b->n], "the readout thread of card.%u", d->cards[i].params->index);
        b->slot[b->n] = i;
        b->beat[b->n++] = rs.polls;
    }
    for (unsigned t = 0; t < rci_pipeline_threads(d->publish) && t < RCI_MAX_PUBLISHER_THREADS; t++) {
        snprintf(b->names[b->n], sizeof b->names[b->n], "publisher thread %u", t);
        b->slot[b->n] = RCI_MAX_CARDS + t;
        b->beat[b->n++] = rci_pipeline_thread_heartbeat(d->publish, t);
    }
    for (unsigned i = 0; i < b->n; i++)
        b->name_of[i] = b->names[i];
}

static void notify_watchdog(struct daemon *d, uint64_t now)
{
    if (!d->notify.enabled || !d->notify.watchdog_ns)
        return;
    struct thread_beats b;
    collect_beats(d, &b);
    rci_notify_watchdog(&d->notify, now, b.beat, b.name_of, b.n);
}

/* readout.thread_stuck_after: a thread whose loop stands still that long is
 * stuck for good as far as we can tell (e.g. libfabric 1.17's shm spins for
 * ever posting to a peer SIGKILLed while it held its region lock). The run
 * ends (exit status 3) so a supervisor restarts the daemon: hanging on
 * silently would hold the card and every subscriber of that thread. True
 * when some thread is stuck. */
static bool watch_threads(struct daemon *d, uint64_t now)
{
    uint64_t after = d->cfg->daemon.thread_stuck_after_ns;   /* a reload may change it */
    struct thread_beats b;
    collect_beats(d, &b);
    for (unsigned i = 0; i < b.n; i++) {
        uint64_t still = rci_thread_watch_still_ns(&d->watch, b.slot[i], now);
        switch (rci_thread_watch_feed(&d->watch, b.slot[i], b.beat[i], now, after)) {
        case RCI_THREAD_NOW_STUCK:
            rci_error("%s is stuck: its loop has not turned for %.1f s (readout.thread_stuck_after); ending the"
                      " run, exit status 3 (a thread inside a call that does not return, such as libfabric"
                      " 1.17's shm posting to a subscriber killed at the wrong moment)", b.names[i],
                      (double)rci_thread_watch_still_ns(&d->watch, b.slot[i], now) / 1e9);
            break;
        case RCI_THREAD_MOVES_AGAIN:
            rci_warn("%s moves again after %.1f s", b.names[i], (double)still / 1e9);
            break;
        case RCI_THREAD_SAME:
            break;
        }
    }
    return d->watch.nstuck > 0;
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
    if (dc->stopped_by_control)
        return false;   /* waits for `card N start` */
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
            if (rc == -ETIMEDOUT && dc->params->type == RCI_CARD_PCIE)
                rci_error("card.%u: the card did not take DMA descriptor %u: its status stayed outside"
                          " the ring for 2 s after enabling (no firmware?%s)", dc->params->index,
                          dc->params->dma_descriptor, dc->params->bar_file[0]
                          ? " start `ringcast-sim --bar-file FILE -c CONFIG` first" : "");
            else
                rci_error("card.%u: cannot start the readout: %s", dc->params->index, strerror(-rc));
            return rc;
        }
        dc->started = true;
    }
    return 0;
}

/* ---- control socket and reload (main thread) -------------------------------
 * `ringcast-ctl` requests (tools/control.c) and SIGHUP are served between the
 * main loop's ticks, on this thread; what acts on subscribers goes to the
 * publisher threads through the pipeline's control calls (pipeline/publish.h). */

#define CONTROL_REPLY_NS (2ull * 1000 * 1000 * 1000)   /* publisher threads answer within */

/* The running configuration: the one the daemon started with, with the
 * live keys of every accepted reload. d->cfg points here. */
static struct rci_config running;
/* fabric.max_subscribers at the start: the publishers' buffers are sized for
 * that many, so a reload may lower it and raise it back up to this only. */
static uint32_t started_max_subscribers;

/* "section.key" -> "value" of a configuration as rci_config_print writes it. */
struct config_lines {
    char *text;
    size_t len;
    unsigned n;
    char *key[1024], *value[1024];
};

static int config_lines(const struct rci_config *cfg, struct config_lines *cl)
{
    memset(cl, 0, sizeof *cl);
    FILE *f = open_memstream(&cl->text, &cl->len);
    if (!f)
        return -ENOMEM;
    rci_config_print(cfg, f);
    if (fclose(f) != 0)
        return -ENOMEM;
    char section[64] = "";
    for (char *line = strtok(cl->text, "\n"); line && cl->n < 1024; line = strtok(NULL, "\n")) {
        if (line[0] == '[') {
            snprintf(section, sizeof section, "%.*s", (int)strcspn(line + 1, "]"), line + 1);
            continue;
        }
        char *eq = strstr(line, " =");
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        char *value = eq[2] == ' ' ? eq + 3 : eq + 2;
        if (asprintf(&cl->key[cl->n], "%s.%s", section, line) < 0)
            break;
        cl->value[cl->n++] = value;
    }
    return 0;
}

static void config_lines_free(struct config_lines *cl)
{
    for (unsigned i = 0; i < cl->n; i++)
        free(cl->key[i]);
    free(cl->text);
}

static const char *config_value(const struct config_lines *cl, const char *key)
{
    for (unsigned i = 0; i < cl->n; i++)
        if (strcmp(cl->key[i], key) == 0)
            return cl->value[i];
    return NULL;
}

/* What a reload may change in a running daemon ([metrics] restarts the
 * listener, [discovery] announces again: reload_services). */
static bool key_is_live(const char *key)
{
    static const char *const live[] = {
        "readout.log_level", "readout.stats_interval", "readout.log_repeat_interval",
        "readout.slow_policy", "readout.slow_drop_after", "readout.slow_cut_after",
        "readout.block_cut_after", "readout.mode", "readout.buffered_threshold", "fabric.allow",
        "fabric.max_subscribers",
    };
    if (strncmp(key, "mode.", 5) == 0 || strncmp(key, "metrics.", 8) == 0 || strncmp(key, "discovery.", 10) == 0)
        return true;
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        if (strcmp(key, live[i]) == 0)
            return true;
    return false;
}

/* The keys whose values differ between a and b (either side's keys). */
static void compare_configs(const struct config_lines *a, const struct config_lines *b, json_t *changed,
                            json_t *kept)
{
    for (int side = 0; side < 2; side++) {
        const struct config_lines *x = side ? b : a, *y = side ? a : b;
        for (unsigned i = 0; i < x->n; i++) {
            const char *other = config_value(y, x->key[i]);
            if (other && (side || strcmp(other, x->value[i]) == 0))
                continue;   /* same, or seen from the other side already */
            const char *was = side ? other : x->value[i], *now = side ? x->value[i] : other;
            json_t *item = json_pack("{s:s, s:s?, s:s?}", "key", x->key[i], "running", was, "file", now);
            bool live = key_is_live(x->key[i]);
            if (!live)
                json_object_set_new(item, "reason", json_string("set at the start: a restart changes it"));
            json_array_append_new(live ? changed : kept, item);
        }
    }
}

/* The live keys of next into running. */
static void take_live_keys(const struct rci_config *next)
{
    struct rci_daemon_params *r = &running.daemon;
    const struct rci_daemon_params *n = &next->daemon;
    r->log_level = n->log_level;
    r->stats_interval_ns = n->stats_interval_ns;
    r->log_repeat_interval_ns = n->log_repeat_interval_ns;
    r->slow_policy = n->slow_policy;
    r->slow_drop_after_ns = n->slow_drop_after_ns;
    r->slow_cut_after_ns = n->slow_cut_after_ns;
    r->block_cut_after_ns = n->block_cut_after_ns;
    r->publish_mode = n->publish_mode;
    r->buffered_threshold = n->buffered_threshold;
    running.nmodes = next->nmodes;
    memcpy(running.mode_rule, next->mode_rule, sizeof running.mode_rule);
    memcpy(running.fabric.allow, next->fabric.allow, sizeof running.fabric.allow);
    running.fabric.max_subscribers = next->fabric.max_subscribers;
    running.metrics = next->metrics;
    running.discovery = next->discovery;
}

/* Move key from changed to kept, with the reason. */
static void keep_key(json_t *changed, json_t *kept, const char *key, const char *reason)
{
    size_t i;
    json_t *item;
    json_array_foreach(changed, i, item) {
        if (strcmp(json_string_value(json_object_get(item, "key")), key) != 0)
            continue;
        json_object_set_new(item, "reason", json_string(reason));
        json_array_append(kept, item);
        json_array_remove(changed, i);
        return;
    }
}

/* A max_subscribers above the one the daemon started with stays as it is
 * (the publishers' buffers are sized at the start). */
static void check_max_subscribers(struct rci_config *next, json_t *changed, json_t *kept)
{
    if (next->fabric.max_subscribers <= started_max_subscribers)
        return;
    char reason[160];
    snprintf(reason, sizeof reason, "above %u, the value the daemon started with: the publishers' buffers are "
             "sized for that many, a restart raises it", started_max_subscribers);
    keep_key(changed, kept, "fabric.max_subscribers", reason);
    next->fabric.max_subscribers = running.fabric.max_subscribers;
}

/* [metrics] listen changed: the new listener first, then the old one goes;
 * when the new one cannot start, the old one stays (named as kept). */
static void reload_metrics(struct daemon *d, struct rci_config *next, json_t *changed, json_t *kept)
{
    if (strcmp(next->metrics.listen, running.metrics.listen) == 0)
        return;
    struct rci_metrics_http *fresh = NULL;
    char err[512] = "";
    if (next->metrics.listen[0] &&
        rci_metrics_http_start(next->metrics.listen, rci_daemon_metrics_collect, &d->metrics, &fresh, err,
                               sizeof err) != 0) {
        rci_log_unlimited(RCI_LOG_ERROR, "reload: %s: the metrics stay at %s", err,
                          running.metrics.listen[0] ? running.metrics.listen : "(off)");
        keep_key(changed, kept, "metrics.listen", err);
        memcpy(next->metrics.listen, running.metrics.listen, sizeof next->metrics.listen);
        return;
    }
    rci_metrics_http_stop(d->http);
    d->http = fresh;
    if (fresh)
        rci_info_unlimited("reload: metrics now at http://%s/metrics", next->metrics.listen);
    else
        rci_info_unlimited("reload: metrics off");
}

/* [discovery] changed: the old entries go, the new ones are announced
 * (running holds the new values already). */
static void reload_discovery(struct daemon *d, const struct rci_discovery_params *was)
{
    if (memcmp(was, &running.discovery, sizeof *was) == 0 || !d->publishers_listening)
        return;
    rci_announce_stop(d->announce);
    d->announce = rci_daemon_announce_start(&running, rci_pipeline_threads(d->publish));
    rci_info_unlimited("reload: discovery %s", d->announce ? "announced again" : "off");
}

static void log_key_list(const char *what, json_t *list)
{
    char text[1024] = "";
    size_t used = 0;
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        int w = snprintf(text + used, sizeof text - used, "%s%s", i ? ", " : "",
                         json_string_value(json_object_get(item, "key")));
        if (w < 0 || (size_t)w >= sizeof text - used)
            break;
        used += (size_t)w;
    }
    if (json_array_size(list))
        rci_info_unlimited("reload: %s: %s", what, text);
}

/* Read the configuration file again (SIGHUP, `ringcast-ctl reload`). A file
 * with errors is refused whole; otherwise the live keys change and the
 * others keep their running values, named in the answer and the log. */
static int reload_config(struct daemon *d, json_t *answer, char *err, size_t errlen)
{
    static struct rci_config next;  /* large: off the stack */
    struct rci_config_error cerr;
    char *errors = NULL;
    size_t errors_len = 0;
    FILE *log = open_memstream(&errors, &errors_len);
    int rc = rci_config_load(&next, source.file, source.overrides, source.noverrides, log, &cerr);
    if (log)
        fclose(log);
    if (rc != 0) {
        d->reloads_refused++;
        json_t *list = json_array();
        for (char *line = errors ? strtok(errors, "\n") : NULL; line; line = strtok(NULL, "\n")) {
            rci_log_unlimited(RCI_LOG_ERROR, "reload refused: %s", line);   /* every line, not one per cause */
            json_array_append_new(list, json_string(line));
        }
        json_object_set_new(answer, "errors", list);
        free(errors);
        rci_set_err(err, errlen, "%s: %u configuration error%s: nothing changed", source.file ? source.file : "defaults",
                    cerr.count, cerr.count == 1 ? "" : "s");
        return -EINVAL;
    }
    free(errors);
    static struct config_lines now, then;   /* 16 KiB each: off the stack */
    if (config_lines(&running, &now) != 0 || config_lines(&next, &then) != 0) {
        rci_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    json_t *changed = json_array(), *kept = json_array();
    compare_configs(&now, &then, changed, kept);
    config_lines_free(&now);
    config_lines_free(&then);
    json_object_set_new(answer, "changed", changed);
    json_object_set_new(answer, "kept", kept);
    check_max_subscribers(&next, changed, kept);
    struct rci_pipeline_params pp;
    rci_config_pipeline_params(&next, &pp);
    rc = rci_pipeline_reload(d->publish, &pp, err, errlen, CONTROL_REPLY_NS);
    if (rc == -EBUSY || rc == -EINVAL) {
        d->reloads_refused++;
        return rc;
    }
    reload_metrics(d, &next, changed, kept);
    struct rci_discovery_params was = running.discovery;
    take_live_keys(&next);
    reload_discovery(d, &was);
    rci_log_set_level(running.daemon.log_level);
    rci_log_set_repeat_interval(running.daemon.log_repeat_interval_ns);
    d->reloads++;
    d->reload_keys_kept += json_array_size(kept);
    rci_info_unlimited("reload %" PRIu64 " of %s: %zu key%s changed, %zu kept", d->reloads,
             source.file ? source.file : "defaults", json_array_size(changed),
             json_array_size(changed) == 1 ? "" : "s", json_array_size(kept));
    log_key_list("changed", changed);
    log_key_list("kept their running values (a restart changes them)", kept);
    return rc;   /* -ETIMEDOUT: taken by the threads that answered, the others take it later */
}

static json_t *card_status(struct daemon_card *dc)
{
    struct card_snapshot snap;
    snapshot_card(dc, &snap);
    return json_pack("{s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "card", (int)dc->params->index, "started", dc->started,
                     "stopped_by_control", dc->stopped_by_control,
                     "chunks_produced", (json_int_t)snap.cs.chunks_produced,
                     "chunks_decoded", (json_int_t)snap.rs.chunks, "bytes_decoded", (json_int_t)snap.rs.bytes,
                     "keys_outstanding", (json_int_t)snap.rs.chunks_in_flight,
                     "decode_errors", (json_int_t)rci_decode_errors(&snap.rs),
                     "chunks_lost", (json_int_t)rci_chunks_lost(&snap.rs),
                     "ring_size", (json_int_t)snap.ring.size, "ring_bytes_in_use", (json_int_t)snap.ring.in_use,
                     "ring_high_water", (json_int_t)snap.ring.high_water,
                     "card_stall_ns", (json_int_t)snap.cs.stall_ns);
}

static int control_status(struct daemon *d, json_t *answer)
{
    json_t *cards = json_array();
    for (unsigned i = 0; i < d->ncards; i++)
        json_array_append_new(cards, card_status(&d->cards[i]));
    struct rci_publish_totals pt;
    rci_pipeline_get_totals(d->publish, &pt);
    struct rci_control_stats cs;
    rci_control_get_stats(d->control, &cs);
    json_object_set_new(answer, "state", json_string(rci_daemon_state_name(atomic_load(&d->metrics.state))));
    json_object_set_new(answer, "version", json_string(RCI_VERSION));
    json_object_set_new(answer, "config", json_string(running.source));
    json_object_set_new(answer, "seconds", json_real(d->start_ns ? run_seconds(d) : 0.0));
    static const char *const level_names[] = {"error", "warn", "info", "debug"};
    json_object_set_new(answer, "log_level", json_string(level_names[rci_log_get_level()]));
    json_object_set_new(answer, "subscribers", json_integer(rci_pipeline_subscribed(d->publish)));
    json_object_set_new(answer, "cards", cards);
    json_object_set_new(answer, "publish",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "chunks_sent", (json_int_t)pt.chunks_sent,
                  "bytes_sent", (json_int_t)pt.bytes_sent, "chunks_dropped", (json_int_t)pt.chunks_dropped,
                  "chunks_no_subscriber", (json_int_t)pt.chunks_no_subscriber,
                  "shares_failed", (json_int_t)pt.shares_failed, "shares_unsent", (json_int_t)pt.shares_unsent,
                  "chunks_unread_at_leave", (json_int_t)pt.chunks_unread_at_leave,
                  "subscribers_cut_off", (json_int_t)pt.subscribers_cut_off,
                  "subscribers_kicked", (json_int_t)pt.subscribers_kicked,
                  "subscribers_cut_by_allow", (json_int_t)pt.subscribers_cut_by_allow));
    json_object_set_new(answer, "control",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "requests", (json_int_t)cs.requests,
                  "refused", (json_int_t)cs.refused, "failed", (json_int_t)cs.failed,
                  "io_errors", (json_int_t)cs.io_errors, "reloads", (json_int_t)d->reloads,
                  "reloads_refused", (json_int_t)d->reloads_refused,
                  "reload_keys_kept", (json_int_t)d->reload_keys_kept));
    return 0;
}

static int control_subscribers(struct daemon *d, json_t *answer, char *err, size_t errlen)
{
    static struct rci_sub_info info[4096];
    unsigned n = 0;
    int rc = rci_pipeline_list_subscribers(d->publish, info, sizeof info / sizeof info[0], &n, CONTROL_REPLY_NS);
    if (rc != 0) {
        rci_set_err(err, errlen, "publisher threads did not answer: %s", strerror(-rc));
        return rc;
    }
    json_t *list = json_array();
    for (unsigned i = 0; i < n; i++) {
        const struct rci_sub_info *s = &info[i];
        json_t *tags = json_array();   /* "0x0-0x3" strings: a tag may not fit JSON's integers */
        for (uint32_t k = 0; k < s->nranges && k < RCI_SUB_INFO_RANGES; k++) {
            char range[48];
            if (s->first[k] == s->last[k])
                snprintf(range, sizeof range, "0x%" PRIx64, s->first[k]);
            else
                snprintf(range, sizeof range, "0x%" PRIx64 "-0x%" PRIx64, s->first[k], s->last[k]);
            json_array_append_new(tags, json_string(range));
        }
        json_array_append_new(list, json_pack("{s:s, s:i, s:i, s:i, s:o, s:i, s:i, s:f, s:I, s:I, s:I, s:I, s:b}",
            "address", s->name, "thread", (int)s->thread, "port", (int)(d->cfg->fabric.port + s->thread),
            "tag_ranges", (int)s->nranges, "tags", tags, "backlog", (int)s->outstanding,
            "deferred", (int)s->deferred,
            "oldest_ms", (double)s->oldest_age_ns / 1e6, "chunks_sent", (json_int_t)s->chunks_sent,
            "bytes_sent", (json_int_t)s->bytes_sent, "chunks_dropped", (json_int_t)s->chunks_dropped,
            "chunks_failed", (json_int_t)s->chunks_failed, "closing", s->cut));
    }
    json_object_set_new(answer, "subscribers", list);
    return 0;
}

static int control_card(struct daemon *d, const struct rci_ctl_cmd *cmd, json_t *answer, char *err,
                        size_t errlen)
{
    if (cmd->card >= d->ncards) {
        rci_set_err(err, errlen, "no card %u (the daemon runs %u card%s)", cmd->card, d->ncards,
                    d->ncards == 1 ? "" : "s");
        return -ENOENT;
    }
    struct daemon_card *dc = &d->cards[cmd->card];
    if (!dc->started || dc->stopped_by_loss) {
        rci_set_err(err, errlen, "card %u is not running (%s)", cmd->card,
                    dc->stopped_by_loss ? "stopped: firmware lost" : "not started yet");
        return -EAGAIN;
    }
    if (cmd->card_start && dc->stopped_by_control) {
        int rc = rci_card_start(dc->card);
        if (rc != 0) {
            rci_set_err(err, errlen, "card %u: cannot start: %s", cmd->card, strerror(-rc));
            return rc;
        }
        dc->stopped_by_control = false;
        rci_info("card.%u: DMA started again (ringcast-ctl)", cmd->card);
    } else if (!cmd->card_start && !dc->stopped_by_control) {
        /* The card stops writing; the readout thread keeps decoding what it
         * wrote and the publishers keep sending: nothing is lost. */
        rci_card_stop(dc->card);
        dc->stopped_by_control = true;
        rci_info("card.%u: DMA stopped (ringcast-ctl); the readout goes on with what was written", cmd->card);
    }
    json_object_set_new(answer, "card", card_status(dc));
    return 0;
}

static int control_handler(void *ctx, const struct rci_ctl_cmd *cmd, json_t *answer, char *err, size_t errlen)
{
    struct daemon *d = ctx;
    switch (cmd->op) {
    case RCI_CTL_STATUS: return control_status(d, answer);
    case RCI_CTL_SUBSCRIBERS: return control_subscribers(d, answer, err, errlen);
    case RCI_CTL_KICK: {
        int rc = rci_pipeline_kick(d->publish, cmd->address, CONTROL_REPLY_NS);
        if (rc == -ENOENT)
            rci_set_err(err, errlen, "no subscriber %s (see `ringcast-ctl subscribers`)", cmd->address);
        else if (rc == 0)
            rci_info("subscriber %s kicked (ringcast-ctl)", cmd->address);
        return rc;
    }
    case RCI_CTL_CARD: return control_card(d, cmd, answer, err, errlen);
    case RCI_CTL_RELOAD: return reload_config(d, answer, err, errlen);
    case RCI_CTL_LOG_LEVEL:
        rci_log_set_level((enum rci_log_level)cmd->level);
        running.daemon.log_level = (enum rci_log_level)cmd->level;
        rci_info("log level set to %s (ringcast-ctl)", (const char *[]){"error", "warn", "info", "debug"}[cmd->level]);
        return 0;
    }
    rci_set_err(err, errlen, "unknown command");
    return -EINVAL;
}

/* Wait up to ns between the main loop's ticks, serving the control socket
 * and a SIGHUP reload meanwhile. */
static void daemon_idle(struct daemon *d, uint64_t ns)
{
    if (reload_requested) {
        reload_requested = 0;
        rci_info("SIGHUP: reading %s again", source.file ? source.file : "the configuration");
        json_t *answer = json_object();
        char err[512] = "";
        if (reload_config(d, answer, err, sizeof err) != 0)
            rci_log_unlimited(RCI_LOG_ERROR, "reload: %s", err);
        json_decref(answer);
    }
    if (d->control)
        rci_control_serve(d->control, ns, control_handler, d);
    else
        rci_sleep_ns(ns);
}

static int open_control(struct daemon *d)
{
    if (!d->cfg->control.socket[0])
        return 0;
    char err[512] = "";
    int rc = rci_control_open(&d->cfg->control, &d->control, err, sizeof err);
    if (rc != 0) {
        rci_error("%s", err[0] ? err : strerror(-rc));
        return rc;
    }
    rci_info("control socket %s (ringcast-ctl --socket %s)", d->cfg->control.socket, d->cfg->control.socket);
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
        daemon_idle(d, SUBSCRIBER_POLL_NS);
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
    while (!stop_requested) {
        daemon_idle(d, DAEMON_TICK_NS);
        uint64_t interval = d->cfg->daemon.stats_interval_ns;   /* a reload may change it */
        uint64_t now = rci_now_ns();
        for (unsigned i = 0; i < d->ncards; i++) {
            check_firmware(&d->cards[i]);
            check_ring_alarm(&d->cards[i]);
        }
        if (interval && now - d->last_stats_ns >= interval)
            log_stats(d, now);
        notify_watchdog(d, now);
        bool stuck = watch_threads(d, now);
        atomic_store(&d->metrics.threads_stuck, d->watch.nstuck);
        atomic_store(&d->metrics.thread_stuck_episodes, d->watch.episodes);
        rci_log_flush(false); /* counts of suppressed lines whose interval is over */
        if (stuck)
            return;
        if (all_cards(d, card_finished) && all_cards(d, card_drained)) {
            rci_info("every card finished its run and everything was drained");
            return;
        }
    }
    rci_info("stop requested");
}

/* Publisher threads left behind keep their endpoints open (nothing is torn
 * down under them), so shm's fi_close never unlinks their 16 MiB region files
 * (/dev/shm/ADDRESS:PORT); a daemon not restarted on that port would leave
 * them for good. Mappings stay valid for whoever has them. */
static void remove_stuck_shm_regions(struct daemon *d)
{
    if (strcmp(d->cfg->fabric.provider, "shm") != 0)
        return;
    for (unsigned t = 0; t < rci_pipeline_threads(d->publish); t++) {
        unsigned port = d->cfg->fabric.port + t;
        int rc = rci_fabric_shm_remove_bound(d->cfg->fabric.address, port);
        if (rc > 0)
            rci_info("removed /dev/shm/%s:%u: publisher thread %u's shm region, its endpoint left open",
                     d->cfg->fabric.address, port, t);
        else if (rc < 0)
            rci_warn("cannot remove /dev/shm/%s:%u (publisher thread %u's shm region): %s",
                     d->cfg->fabric.address, port, t, strerror(-rc));
    }
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
    for (unsigned i = 0; i < d->ncards; i++) {
        if (d->cards[i].started &&
            rci_readout_stop_bounded(d->cards[i].readout, d->cfg->daemon.thread_stuck_after_ns) != 0) {
            d->threads_abandoned++;
            d->cards[i].readout_abandoned = true;
            rci_error("card.%u: its readout thread has not turned its loop for %.1f s while stopping: left behind,"
                      " not joined", d->cards[i].params->index, (double)d->cfg->daemon.thread_stuck_after_ns / 1e9);
        }
    }
    /* A finished run lingers for the subscribers to read the end of it; a
     * stop by signal does not. */
    unsigned publishers_abandoned = rci_pipeline_stop_bounded(d->publish, stop_requested ? 0 : d->cfg->daemon.linger_ns,
                                                              d->cfg->daemon.thread_stuck_after_ns);
    d->threads_abandoned += publishers_abandoned;
    if (publishers_abandoned)
        remove_stuck_shm_regions(d);
    atomic_store(&d->metrics.threads_abandoned, d->threads_abandoned);
    if (d->threads_abandoned)
        atomic_store(&d->metrics.threads_stuck, d->watch.nstuck > d->threads_abandoned ? d->watch.nstuck
                                                                                     : d->threads_abandoned);
    /* The publishers' end gave their last keys back after the readouts' final
     * advance: move the read pointer over them too (the readout threads are
     * joined, so this thread owns the rings now). */
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->cards[i].started && !d->cards[i].readout_abandoned)
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
            " not sent (subscriber gone or shutdown); of those sent, %" PRIu64 " never read by subscribers"
            " that left (their BYE's count)",
            pt.chunks_sent, (double)pt.bytes_sent / 1e9, secs > 0 ? (double)pt.bytes_sent / 1e9 / secs : 0.0,
            pt.chunks_no_subscriber, pt.chunks_dropped, pt.shares_failed, pt.shares_unsent,
            pt.chunks_unread_at_leave);
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
            ",\"sink_errors\":%" PRIu64 ",\"card_bad_status\":%" PRIu64 ",\"card_status_lagging\":%" PRIu64 ",\"irq_waits\":%" PRIu64 ",\"interrupts\":%" PRIu64
            ",\"chunks_truncated\":%" PRIu64 ",\"chunks_error\":%" PRIu64 ",\"chunks_crc\":%" PRIu64
            ",\"chunks_busy\":%" PRIu64 ",\"keys_outstanding\":%" PRIu64 ",\"bad_releases\":%" PRIu64
            ",\"chunks_cut_at_stop\":%" PRIu64 ",\"bytes_cut_at_stop\":%" PRIu64
            ",\"ring_size\":%" PRIu64 ",\"ring_bytes_in_use\":%" PRIu64 ",\"ring_high_water\":%" PRIu64
            ",\"ring_full_ns\":%" PRIu64 ",\"injected_truncated\":%" PRIu64 ",\"injected_crc\":%" PRIu64
            ",\"injected_malformed\":%" PRIu64 ",\"injected_seqskip\":%" PRIu64 ",\"card_host_errors\":%" PRIu64 ",\"firmware_losses\":%" PRIu64
            ",\"decode_errors\":%" PRIu64 ",\"ring_alarms_high\":%" PRIu64 ",\"ring_alarms_full\":%" PRIu64
            ",\"ring_alarms_cleared\":%" PRIu64 ",\"chunks_flagged\":%" PRIu64
            ",\"tap_blocks\":%" PRIu64 ",\"tap_releases\":%" PRIu64 ",\"tap_stalls\":%" PRIu64
            ",\"bad_tap_releases\":%" PRIu64,
            dc->params->index, cs.chunks_produced, cs.bytes_produced, cs.stall_ns, rs.chunks, rs.bytes,
            rs.blocks, rs.bad_header, rs.err_malformed, rs.err_seq_gap, rs.err_oversize, rs.err_orphan,
            rs.chunks_dropped_gap, rs.chunks_incomplete, rs.chunks_dropped_pool,
            rs.chunks_dropped_ring, rci_chunks_lost(&rs), rs.chunks_spilled, rs.bytes_spilled,
            rs.err_bad_start, rs.malformed_length, rs.malformed_null, rs.malformed_order,
            rs.malformed_padding, rs.malformed_split,
            rs.sink_errors, rs.card_bad_status, rs.card_status_lagging, rs.irq_waits, rs.interrupts,
            rs.chunks_truncated, rs.chunks_error, rs.chunks_crc, rs.chunks_busy, rs.chunks_in_flight,
            rs.bad_releases, rs.chunks_cut_at_stop, rs.bytes_cut_at_stop, ring.size, ring.in_use,
            ring.high_water, ring.full_ns, cs.injected_truncated, cs.injected_crc, cs.injected_malformed,
            cs.injected_seqskip, cs.host_errors, atomic_load(&dc->firmware_losses), rci_decode_errors(&rs),
            rci_counter_get(&dc->alarm.high), rci_counter_get(&dc->alarm.full), rci_counter_get(&dc->alarm.cleared),
            rci_chunks_flagged(&rs), rs.tap_blocks, rs.tap_releases, rs.tap_stalls, rs.bad_tap_releases);
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
    rci_daemon_announce_json(d->announce, f);
    fprintf(f, ",\"threads_stuck\":%u,\"thread_stuck_episodes\":%" PRIu64 ",\"threads_abandoned\":%u",
            atomic_load(&d->metrics.threads_stuck), atomic_load(&d->metrics.thread_stuck_episodes),
            atomic_load(&d->metrics.threads_abandoned));
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
    running = *cfg;   /* reloads change its live keys */
    started_max_subscribers = cfg->fabric.max_subscribers;
    d.cfg = &running;
    atomic_store(&d.metrics.state, RCI_DAEMON_STARTING);
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
    if (setup_all(&d) == 0 && open_control(&d) == 0 && start_metrics(&d) == 0) {
        int rc = rci_pipeline_start(d.publish);
        d.publishers_listening = rc == 0;
        if (rc == 0)   /* the publishers listen: say where */
            d.announce = rci_daemon_announce_start(&running, rci_pipeline_threads(d.publish));
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
        if (d.watch.nstuck || d.threads_abandoned) {
            rci_error("ended because a thread was stuck (%u stuck, %u left behind at the stop): exit status %d",
                      d.watch.nstuck, d.threads_abandoned, RCI_DAEMON_EXIT_STUCK);
            status = RCI_DAEMON_EXIT_STUCK;
        }
        if (stats && write_stats_json(&d, &t, stats, stats_name) != 0)
            status = 1;
        atomic_store(&d.metrics.state, RCI_DAEMON_STOPPED);
        hold_metrics(&d);
    }
    rci_announce_stop(d.announce);   /* a clean exit: the entries go at once */
    rci_metrics_http_stop(d.http); /* it reads the cards and the pipeline */
    d.http = NULL;
    /* The publisher may still hold keys (a failed setup): they go back to
     * the readouts, so it goes first. */
    rci_control_close(d.control);
    d.control = NULL;
    if (d.threads_abandoned)   /* it may still use the rings and the pipeline: the process ends instead */
        return status;
    rci_pipeline_destroy(d.publish);
    for (unsigned i = 0; i < d.ncards; i++)
        teardown_card(&d.cards[i]);
    return status;
}
