/* SPDX-License-Identifier: BSD-3-Clause */
/* config.h — ringcast configuration: INI files parsed with inih, validated
 * against one schema table (config/schema_*.c) that is the single source of
 * truth for parsing, validation, --help-config and deploy/ringcast.ini.
 *
 * Callers: tools/ and api/full_readout.c (ringcast/readout.h loads a file for an
 * embedding program). Modules get their own *_params structs, filled here.
 */
#ifndef RCI_CONFIG_H
#define RCI_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "net/fabric_params.h"
#include "net/discovery_params.h"
#include "readout/card_params.h"
#include "readout/sim/sim_params.h"
#include "pipeline/pipeline_params.h"
#include "common/log_hook.h"

/* [readout] — the daemon as a whole. */
struct rci_daemon_params {
    enum rci_log_level log_level;
    uint64_t stats_interval_ns;   /* statistics to the log every N; 0 = never */
    uint64_t log_repeat_interval_ns; /* one line per cause per N (tools/log.h); 0 = no limit */
    uint32_t publisher_threads;   /* 1..RCI_MAX_PUBLISHER_THREADS; thread i listens on fabric.port + i */
    uint32_t queue_size;          /* readout -> publisher queue entries per card (power of 2) */
    int slow_policy;              /* enum rci_slow_policy */
    int publish_mode;             /* enum rci_publish_mode */
    uint64_t buffered_threshold;  /* auto: chunks smaller than this go buffered */
    uint32_t wait_subscribers;    /* hold the cards until this many subscribers subscribed */
    uint64_t linger_ns;           /* after a finished run: BYE, serve until the subscribers left, at most this */
    /* How long one subscriber's oldest share may stay outstanding (README,
     * "Slow subscribers"); 0 = no bound. */
    uint64_t slow_drop_after_ns;  /* drop: its new chunks are dropped while its oldest share is older */
    uint64_t slow_cut_after_ns;   /* drop: older still: it is cut off */
    uint64_t block_cut_after_ns;  /* block: older: it is cut off (the card stalled that long for it) */
    uint32_t block_backlog;       /* block: shares deferred per subscriber (0 = none, head-of-line) */
    uint64_t thread_stuck_after_ns; /* a thread whose loop has not turned this long is stuck; 0 = never */
    uint64_t fault_publisher_hang_after_ns; /* tests only: publisher thread 0 hangs after this; 0 = never */
    bool fault_publisher_hang_through_stop; /* tests only: ... and does not come back for the stop */
};

/* [metrics] — the Prometheus endpoint (tools/metrics_http.c). */
struct rci_metrics_params {
    char listen[128];             /* HOST:PORT, "" = off */
    uint64_t hold_after_run_ns;   /* after a finished run: serve the final figures this long */
};

/* [control] — the control socket (tools/control.c, ringcast-ctl). */
#define RCI_CONTROL_SOCKET_MAX 108u   /* sun_path */
#define RCI_CONTROL_GROUP_MAX 33u
struct rci_control_params {
    char socket[RCI_CONTROL_SOCKET_MAX];  /* empty: no control socket */
    char group[RCI_CONTROL_GROUP_MAX];    /* empty: the daemon's group */
};

struct rci_config {
    struct rci_daemon_params daemon;
    struct rci_control_params control;
    struct rci_metrics_params metrics;
    unsigned nmodes;                          /* send-mode rules [mode.0] .. [mode.nmodes-1] */
    struct rci_mode_rule mode_rule[RCI_MAX_MODE_RULES];
    struct rci_fabric_params fabric;
    struct rci_discovery_params discovery;
    unsigned ncards;                          /* cards are [card.0] .. [card.ncards-1] */
    struct rci_card_params card[RCI_MAX_CARDS];
    bool has_sim[RCI_MAX_CARDS];               /* a [sim.N] section was given */
    struct rci_sim_params sim[RCI_MAX_CARDS];
    char source[256];                         /* the file it came from */
};

/* Schema value types. */
enum rci_cfg_type {
    RCI_CFG_BOOL,      /* true/false, yes/no, on/off, 1/0 */
    RCI_CFG_UINT,      /* decimal or 0x hex */
    RCI_CFG_SIZE,      /* bytes, k/M/G suffix = powers of 1024 */
    RCI_CFG_DURATION,  /* ns stored; units ns, us, ms, s required */
    RCI_CFG_RATE,      /* struct rci_rate: unlimited | 2.5GB/s | 10Mchunks/s (SI) */
    RCI_CFG_PROB,      /* double in [0, 1] */
    RCI_CFG_STRING,    /* char[size] */
    RCI_CFG_ENUM,      /* one of choices "a|b|c"; stored as int index */
};

/* Error collected while loading. */
struct rci_config_error {
    char msg[512];    /* "file:line: [section] key: what is wrong" (the first error) */
    unsigned count;   /* how many errors were found in total */
};

/* Fill cfg with defaults, parse file (may be NULL: defaults only), then apply
 * overrides "section.key=value" (same validation). On any error returns
 * -EINVAL (-ENOMEM if memory ran out) with the first error in err (all errors
 * are printed to errlog if non-NULL, one per line) and cfg zeroed: a process
 * never starts half-configured. err may be NULL. */
int rci_config_load(struct rci_config *cfg, const char *file, const char *const *overrides,
                   unsigned noverrides, FILE *errlog, struct rci_config_error *err);

/* Print the effective configuration as an INI file that loads back to the
 * same values: every key of [readout], each [mode.N], [fabric] and, for each card, [card.N]
 * and [sim.N] (every card runs a simulator, so [sim.N] is printed even when
 * it was not given; has_sim then reads true after a reload). */
void rci_config_print(const struct rci_config *cfg, FILE *out);
/* Print every section and key: type, default, range, help. */
void rci_config_print_help(FILE *out);
/* Print the documented example configuration (deploy/ringcast.ini). */
void rci_config_print_example(FILE *out);
/* The same example with some keys set otherwise ("section.key=value", the
 * -o syntax, first instance of a repeated section only, e.g. "sim.0.rate=10MB/s";
 * the caller has checked them by loading them): each such key shows the value
 * and its default in the comment. deploy/ringcast-server.ini is made this way. */
void rci_config_print_example_with(FILE *out, const char *const *overrides, unsigned noverrides);

/* The pipeline's parameters from [readout], [mode.N] and [fabric] (the log
 * hook is left empty: the program sets it). */
void rci_config_pipeline_params(const struct rci_config *cfg, struct rci_pipeline_params *p);

/* Unit parsers, shared with command-line options. Return 0 or -EINVAL/-ERANGE.
 *   size:     4096, 4k, 4K, 64M, 1G, 1T, 1.5k, 0x1000, 4KiB, 64MiB, 4096B
 *             (k/M/G/T = powers of 1024; kB/MB/GB are rejected as ambiguous)
 *   duration: 250ns, 50us, 1.5ms, 3s; a unit is required except for "0"
 *   rate:     unlimited, 2.5GB/s, 800MB/s, 10Mchunks/s, 5000chunks/s
 *             (k/K/M/G = powers of 1000)
 *   bool:     true/false, yes/no, on/off, 1/0 (any case)
 *   uint:     decimal or 0x hexadecimal
 * A blank may separate the number from its unit ("64 M"). */
int rci_parse_size(const char *s, uint64_t *out);
int rci_parse_duration(const char *s, uint64_t *ns);
int rci_parse_rate(const char *s, struct rci_rate *out);
int rci_parse_bool(const char *s, bool *out);
int rci_parse_uint(const char *s, uint64_t *out);

/* Formatters whose output the parsers above read back to the same value
 * (the largest exact unit is chosen: 65536 -> "64k", 1500000 -> "1500us").
 * They return buf; 32 bytes are always enough. */
char *rci_format_size(uint64_t bytes, char *buf, size_t len);
char *rci_format_duration(uint64_t ns, char *buf, size_t len);
char *rci_format_rate(const struct rci_rate *rate, char *buf, size_t len);

#endif
