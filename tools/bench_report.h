/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_report.h — ringcast-bench's results: one row per measurement,
 * printed as it is made (a human table, or one JSON object per line), kept
 * for ratios and the summary, written as CSV (and PNG plots with gnuplot)
 * for --plot DIR, and checked against the targets of the benchmark issue.
 *
 * JSON fields (the names; absent when they do not apply):
 *   test, chunk_size, gbytes_per_s, chunks_per_s, cpu_s_per_gb;
 *   daemon_cpu_s_per_gb, sub_cpu_s_per_gb, sim_cpu_s_per_gb (rows of the real
 *   programs: the daemon without its simulated card, the subscribers, the
 *   simulated card; their sum is cpu_s_per_gb up to the bench's sampling);
 *   ratio_to_raw, mallocs_per_chunk, copied_bytes_per_chunk (pipeline rows);
 *   p50_us, p99_us, p999_us, max_us (latency, idle and wake rows: a "wake" row
 *   is one eventfd wake-up of a thread on another CPU, bench_wake.h, with no
 *   bytes and no CPU figure); subscribers (fanout rows);
 * and, to tell rows of the same test and size apart: fill (pipeline,
 * latency, fanout rows: the simulator's payload) and mode (latency rows:
 * zerocopy or buffered); delivery ("send" or "rma") and block_size on pipeline
 * rows; "raw-rma" rows are the fi_writedata stream (bench_raw.h). GB = 1e9 bytes.
 *
 * After the rows, with --json, one object per measured point of each target
 * of the benchmark issue: {"test":"target","target":ID,"point":P,
 * "measured":M,"limit":L,"pass":true|false}, ID one of per_chunk_cost,
 * zero_copy_vs_raw, buffered_vs_raw_rate, zero_copy_hygiene, latency_p50_us,
 * latency_p99_us, fanout_vs_one, rma_vs_raw_rma, rma_sub_cpu_vs_send (the
 * same points as the text summary).
 */
#ifndef RCI_BENCH_REPORT_H
#define RCI_BENCH_REPORT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RCI_BENCH_MAX_ROWS 512u

/* User + system CPU seconds of getrusage(who): RUSAGE_SELF or RUSAGE_CHILDREN. */
double rci_bench_cpu_seconds(int who);

struct rci_bench_row {
    const char *test;              /* raw zerocopy buffered memcpy latency fanout decode */
    uint64_t chunk_size;
    double gbytes_per_s, chunks_per_s, cpu_s_per_gb;
    bool has_cpu_split;            /* rows of the real programs */
    double daemon_cpu_s_per_gb, sub_cpu_s_per_gb, sim_cpu_s_per_gb;
    const char *fill;              /* NULL: no fill field */
    const char *mode;              /* latency rows: zerocopy / buffered */
    const char *delivery;          /* pipeline rows: "send" or "rma" (ringcast-sub --delivery) */
    uint32_t block_size;           /* pipeline rows: the card's block size; 0 = not said */
    bool delivery_comparison;      /* a row of the rma mode (64 KiB blocks): only the RMA targets use it */
    bool has_ratio;
    double ratio_to_raw;
    bool has_latency;
    double p50_us, p99_us, p999_us, max_us;
    unsigned subscribers;          /* fanout rows; 0 otherwise */
    bool has_hygiene;
    bool mallocs_counted;          /* false: the counter was not available (JSON null) */
    double mallocs_per_chunk, copied_bytes_per_chunk;
    char note[96];                 /* human table only */
};

struct rci_bench_report {
    bool json;
    uint64_t block_size;           /* the simulated card's block size of the pipeline runs */
    bool header_printed;
    struct rci_bench_row rows[RCI_BENCH_MAX_ROWS];
    unsigned nrows;
};

/* Print the row (table line or JSON line) and keep it. */
void rci_bench_emit(struct rci_bench_report *r, const struct rci_bench_row *row);
/* The kept row of this test, size and fill (fill NULL: any), or NULL. */
const struct rci_bench_row *rci_bench_find(const struct rci_bench_report *r, const char *test,
                                         uint64_t chunk_size, const char *fill);
/* Each target of the issue: measured, pass or miss, or not measured in this
 * run. To out (the table's stream, or stderr with --json). */
void rci_bench_print_targets(const struct rci_bench_report *r, FILE *out);
/* DIR/bench.csv (every row), and with gnuplot on PATH DIR/throughput.png and
 * DIR/chunk_rate.png (raw, zerocopy, buffered vs chunk size). Says on
 * stderr what it wrote, and that gnuplot is missing if it is. 0 or -errno. */
int rci_bench_write_plots(const struct rci_bench_report *r, const char *dir);

#endif
