/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_model.h — ringcast-bench model: CPU seconds per chunk of each stage
 * of the pipeline, measured at a few chunk sizes, fitted as
 * cost(size) = per_chunk + per_byte * size (least squares, neither below
 * 0), and the cores each stage needs at a given rate and chunk size.
 */
#ifndef RCI_BENCH_MODEL_H
#define RCI_BENCH_MODEL_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RCI_MODEL_MAX_POINTS 16u

enum rci_model_stage {
    RCI_STAGE_DECODE,        /* the block decoder alone (decode runs, one core) */
    RCI_STAGE_DISPATCH,      /* the readout thread less decode: sink, queues, fan-out */
    RCI_STAGE_SEND,          /* the publisher threads: posting sends and reaping completions */
    RCI_STAGE_DAEMON_OTHER,  /* the daemon's other threads (main, provider threads) */
    RCI_STAGE_SUBSCRIBER,    /* the ringcast-sub process */
    RCI_STAGE_COUNT
};

struct rci_model_point {
    uint64_t chunk_size;
    double cpu_per_chunk[RCI_STAGE_COUNT];   /* seconds */
};

struct rci_model_fit {
    double per_chunk, per_byte;              /* seconds, seconds per byte */
};

struct rci_model {
    struct rci_model_point points[RCI_MODEL_MAX_POINTS];
    unsigned npoints;
    struct rci_model_fit fit[RCI_STAGE_COUNT];
};

/* A named target: `rate` chunks per second of `chunk_size` bytes. */
struct rci_model_target {
    const char *name;
    double chunks_per_s;
    uint64_t chunk_size;
};

const char *rci_model_stage_name(enum rci_model_stage s);
/* Fit every stage over the points (at least 2 sizes give a slope; 1 gives
 * a per-chunk cost only). */
void rci_model_fit(struct rci_model *m);
/* The stage's CPU seconds per chunk of this size, by the fit. */
double rci_model_cost(const struct rci_model *m, enum rci_model_stage s, uint64_t chunk_size);
/* Stage costs per measured size, the fit, then per target the cores of each
 * stage, of the daemon (decode + dispatch + send + other) and of the
 * subscribers: a table, or JSON lines ("test":"model_stage" / "model_target"). */
void rci_model_print(const struct rci_model *m, const struct rci_model_target *targets, unsigned ntargets,
                     bool json, FILE *out);

#endif
