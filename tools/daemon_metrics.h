/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_metrics.h — what ringcast-readout shows at /metrics ([metrics]
 * listen): every counter of --stats-json, labelled by card, e-link,
 * publisher thread and subscriber, plus ring occupancy, alarms, process start
 * time and build info. Each family's HELP ends with "(json: ...)" naming the
 * --stats-json figure it equals (tests/integration/test_metrics.sh compares
 * them). Read at scrape time on the HTTP server's thread: atomics and the
 * publisher threads' views, no lock on the data path. */
#ifndef RCI_DAEMON_METRICS_H
#define RCI_DAEMON_METRICS_H
#include <stdatomic.h>
#include <stdint.h>

#include "common/prom_text.h"
#include "dma/dma_ring.h"
#include "pipeline/publish.h"
#include "readout/readout.h"
#include "readout/ring_alarm.h"

struct rci_metrics_card_src {
    unsigned index;                          /* card.N */
    struct rci_dma_ring *ring;
    struct rci_card *card;
    struct rci_readout *readout;
    const _Atomic uint64_t *firmware_losses;
    const struct rci_ring_alarm *alarm;
};

enum rci_daemon_state {
    RCI_DAEMON_STARTING = 0, RCI_DAEMON_WAITING, RCI_DAEMON_RUNNING, RCI_DAEMON_STOPPING, RCI_DAEMON_STOPPED
};
/* The state as `ringcast-ctl status` says it: "starting", "waiting for
 * subscribers", "running", "stopping", "stopped" ("unknown" out of range).
 * The metric's label values are shorter ("waiting"). */
const char *rci_daemon_state_name(int state);

/* Filled by the daemon before the server starts; the pointers stay valid
 * until it stops. The atomics are the daemon's to update. */
struct rci_daemon_metrics {
    unsigned ncards;                         /* cards set up (slot i = the i-th added to the pipeline) */
    struct rci_metrics_card_src cards[RCI_MAX_CARDS];
    struct rci_pipeline *pipeline;
    double start_unix;                       /* process start, seconds since the epoch */
    _Atomic uint64_t run_start_ns, run_end_ns;   /* monotonic; 0 = not yet */
    _Atomic int state;                       /* enum rci_daemon_state */
    _Atomic unsigned threads_stuck;          /* readout.thread_stuck_after: threads stuck now */
    _Atomic uint64_t thread_stuck_episodes;  /* times a thread became stuck */
    _Atomic unsigned threads_abandoned;      /* stuck at the stop: left behind */
};

/* The collect callback of tools/metrics_http.h (ctx = struct rci_daemon_metrics). */
int rci_daemon_metrics_collect(void *ctx, struct rci_prom *p);

#endif
