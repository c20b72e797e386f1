/* SPDX-License-Identifier: BSD-3-Clause */
/* pipeline_params.h — what the pipeline (pipeline/publish.h) is told: how
 * many publisher threads, the queues between readout and publishers, what to
 * do with a slow subscriber, how each tag range is sent, the fabric to serve
 * on, and where to say things. config/ fills it from [readout], [mode.N] and
 * [fabric] (rci_config_pipeline_params); an embedding program may fill it
 * itself. No pipeline file includes config/. */
#ifndef RCI_PIPELINE_PARAMS_H
#define RCI_PIPELINE_PARAMS_H
#include <stdint.h>

#include "common/log_hook.h"
#include "net/fabric_params.h"

#define RCI_MAX_CARDS 8u
#define RCI_MAX_MODE_RULES 16u
#define RCI_MAX_PUBLISHER_THREADS 16u  /* thread i listens on fabric.port + i */
#define RCI_MODE_TAGS_MAX 48u  /* "0xffffffffffffffff-0xffffffffffffffff" is 37 characters */

/* What the publisher does when a subscriber cannot take a chunk now. */
enum rci_slow_policy {
    RCI_SLOW_BLOCK = 0,   /* wait: the ring fills and the card stalls (backpressure) */
    RCI_SLOW_DROP = 1,    /* drop that subscriber's share of the chunk, count it */
};

/* How chunks are sent. */
enum rci_publish_mode {
    RCI_MODE_ZEROCOPY = 0,  /* from the ring, no copy */
    RCI_MODE_BUFFERED = 1,  /* copied into pages of records */
    RCI_MODE_AUTO = 2,      /* buffered below buffered_threshold, zero copy otherwise */
};

/* [mode.N]: the send mode of a range of tags. The rule with the lowest N
 * whose range holds a chunk's tag decides; a tag in no rule's range is sent
 * as the pipeline's publish_mode and buffered_threshold say. Ranges may
 * overlap (the lower N wins), so a narrow exception can precede a wide rule. */
struct rci_mode_rule {
    char tags[RCI_MODE_TAGS_MAX];  /* as written: "first-last" or one tag, decimal or 0x hex */
    uint64_t first, last;         /* the inclusive range, parsed from tags by the loader */
    int mode;                     /* enum rci_publish_mode */
    uint64_t buffered_threshold;  /* mode auto: chunks smaller than this go buffered */
};

struct rci_pipeline_params {
    uint32_t publisher_threads;   /* 1..RCI_MAX_PUBLISHER_THREADS; thread i listens on fabric.port + i */
    uint32_t queue_size;          /* readout -> publisher queue entries per card (power of 2) */
    int slow_policy;              /* enum rci_slow_policy */
    int publish_mode;             /* enum rci_publish_mode: tags in no mode rule */
    uint64_t buffered_threshold;  /* auto: chunks smaller than this go buffered */
    /* How long one subscriber's oldest share may stay outstanding (README,
     * "Slow subscribers"); 0 = no bound. */
    uint64_t slow_drop_after_ns;  /* drop: its new chunks are dropped while its oldest share is older */
    uint64_t slow_cut_after_ns;   /* drop: older still: it is cut off */
    uint64_t block_cut_after_ns;  /* block: older: it is cut off (the card stalled that long for it) */
    uint32_t block_backlog;       /* block: shares deferred per subscriber while it cannot take them,
                                     so the others go on (pipeline/share_backlog.h); 0 = none: its
                                     lane waits for it (head-of-line) */
    uint64_t stats_interval_ns;   /* each publisher thread logs its rates this often; 0 = never */
    uint64_t fault_hang_after_ns; /* tests only: publisher thread 0 stops going round its loop this
                                     long after its start, until stop (0 = never) */
    bool fault_hang_through_stop; /* tests only: ... and does not come back for the stop either (as a
                                     thread inside a libfabric call that never returns) */
    unsigned nmodes;              /* mode rules in use */
    struct rci_mode_rule mode_rule[RCI_MAX_MODE_RULES];
    struct rci_fabric_params fabric;
    struct rci_log_hook log;       /* where the pipeline's messages go (none: silent) */
};

#endif
