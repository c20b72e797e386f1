/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_report.c — ringcast-bench's rows, table, JSON, CSV, plots and
 * targets (see bench_report.h). */
#include "tools/bench_report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"

extern char **environ;

/* The targets. */
#define TARGET_ZC_RATIO        0.90     /* zero copy vs raw ... */
#define TARGET_ZC_MIN_SIZE     8192u    /* ... at chunk sizes from 8 KiB */
#define TARGET_BUF_SIZE        64u      /* buffered at 64 B chunks ... */
#define TARGET_BUF_RATE_FACTOR 10.0     /* ... at 10 x raw's message rate */
/* Issue 17, target 2: what mode auto picks, at every chunk size from 1 KiB
 * to 1 MiB with 4 KiB blocks, >= 0.9 x the link's peak (the best raw row). */
#define TARGET_BW_RATIO        0.90
#define TARGET_BW_MIN_SIZE     1024u
#define TARGET_BW_MAX_SIZE     (1u << 20)
#define TARGET_BW_BLOCK        4096u
#define TARGET_BW_PEAK_SIZE    (1u << 20)   /* the peak needs a raw row of 1 MiB messages or more */
#define TARGET_PER_CHUNK       0.30     /* pipeline vs decoder chunk rate at 64 B, 256 B */
#define TARGET_P50_US          50.0     /* p50 at half load ... */
#define TARGET_P99_US          200.0    /* ... and p99, each mode ... */
#define TARGET_LATENCY_MAX_SIZE 8192u   /* ... 64 B to 8 KiB */
#define TARGET_FANOUT          0.80     /* k subscribers' bytes vs one's */
#define TARGET_RMA_RATIO       0.95     /* RMA delivery vs raw-rma, blocks >= the chunk ... */
#define TARGET_RMA_SIZE_MIN    8192u    /* ... at 8 KiB ... */
#define TARGET_RMA_SIZE_MAX    65536u   /* ... and 64 KiB */

/* ---- table and JSON ---------------------------------------------------------- */

static void print_header(FILE *f)
{
    fprintf(f, "%-9s %-9s %6s %8s %10s %9s %17s %6s %10s %10s  %s\n", "test", "fill", "size", "GB/s",
            "Mchunks/s", "cpu s/GB", "daemon/sub/sim", "ratio", "mallocs/ch", "copied/ch", "notes");
}

static void fmt_opt(char *buf, size_t len, bool has, const char *fmt, double v)
{
    if (has)
        snprintf(buf, len, fmt, v);
    else
        snprintf(buf, len, "-");
}

static void print_line(FILE *f, const struct rci_bench_row *w)
{
    char size[32], ratio[16], mallocs[24], copied[24], extra[160], split[48] = "-";
    rci_format_size(w->chunk_size, size, sizeof size);
    fmt_opt(ratio, sizeof ratio, w->has_ratio, "%.2f", w->ratio_to_raw);
    fmt_opt(mallocs, sizeof mallocs, w->has_hygiene && w->mallocs_counted, "%.4f", w->mallocs_per_chunk);
    fmt_opt(copied, sizeof copied, w->has_hygiene, "%.1f", w->copied_bytes_per_chunk);
    if (w->has_cpu_split)
        snprintf(split, sizeof split, "%.2f/%.2f/%.2f", w->daemon_cpu_s_per_gb, w->sub_cpu_s_per_gb,
                 w->sim_cpu_s_per_gb);
    extra[0] = '\0';
    if (w->has_latency)
        snprintf(extra, sizeof extra, "%s%sp50 %.1f p99 %.1f p99.9 %.1f max %.1f us; ", w->mode ? w->mode : "",
                 w->mode ? ": " : "", w->p50_us, w->p99_us, w->p999_us, w->max_us);
    else if (w->subscribers)
        snprintf(extra, sizeof extra, "%u subscriber%s; ", w->subscribers, w->subscribers == 1 ? "" : "s");
    fprintf(f, "%-9s %-9s %6s %8.3f %10.4f %9.2f %17s %6s %10s %10s  %s%s\n", w->test, w->fill ? w->fill : "-",
            size, w->gbytes_per_s, w->chunks_per_s / 1e6, w->cpu_s_per_gb, split, ratio, mallocs, copied, extra,
            w->note);
}

static void print_json(FILE *f, const struct rci_bench_row *w)
{
    fprintf(f, "{\"test\":\"%s\",\"chunk_size\":%" PRIu64 ",\"gbytes_per_s\":%.4f,\"chunks_per_s\":%.0f,"
               "\"cpu_s_per_gb\":%.4f", w->test, w->chunk_size, w->gbytes_per_s, w->chunks_per_s,
            w->cpu_s_per_gb);
    if (w->fill)
        fprintf(f, ",\"fill\":\"%s\"", w->fill);
    if (w->mode)
        fprintf(f, ",\"mode\":\"%s\"", w->mode);
    if (w->delivery)
        fprintf(f, ",\"delivery\":\"%s\"", w->delivery);
    if (w->block_size)
        fprintf(f, ",\"block_size\":%u", w->block_size);
    if (w->has_cpu_split)
        fprintf(f, ",\"daemon_cpu_s_per_gb\":%.4f,\"sub_cpu_s_per_gb\":%.4f,\"sim_cpu_s_per_gb\":%.4f",
                w->daemon_cpu_s_per_gb, w->sub_cpu_s_per_gb, w->sim_cpu_s_per_gb);
    if (w->has_ratio)
        fprintf(f, ",\"ratio_to_raw\":%.4f", w->ratio_to_raw);
    if (w->has_latency)
        fprintf(f, ",\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f", w->p50_us, w->p99_us,
                w->p999_us, w->max_us);
    if (w->subscribers)
        fprintf(f, ",\"subscribers\":%u", w->subscribers);
    if (w->has_hygiene) {
        if (w->mallocs_counted)
            fprintf(f, ",\"mallocs_per_chunk\":%.6f", w->mallocs_per_chunk);
        else
            fprintf(f, ",\"mallocs_per_chunk\":null");
        fprintf(f, ",\"copied_bytes_per_chunk\":%.3f", w->copied_bytes_per_chunk);
    }
    fprintf(f, "}\n");
}

void rci_bench_emit(struct rci_bench_report *r, const struct rci_bench_row *row)
{
    if (r->json) {
        print_json(stdout, row);
    } else {
        if (!r->header_printed)
            print_header(stdout);
        print_line(stdout, row);
    }
    r->header_printed = true;
    fflush(stdout);
    if (r->nrows < RCI_BENCH_MAX_ROWS)
        r->rows[r->nrows++] = *row;
}

const struct rci_bench_row *rci_bench_find(const struct rci_bench_report *r, const char *test,
                                         uint64_t chunk_size, const char *fill)
{
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, test) == 0 && w->chunk_size == chunk_size &&
            (!fill || (w->fill && strcmp(w->fill, fill) == 0)))
            return w;
    }
    return NULL;
}

/* ---- targets ------------------------------------------------------------------ */

/* One measured point of a target: a line's item in the table's summary, and
 * with --json also one object on stdout:
 * {"test":"target","target":ID,"point":P,"measured":M,"limit":L,"pass":B}. */
struct target_line {
    const struct rci_bench_report *r;
    FILE *out;
    const char *id;
    unsigned points;
};

static void target_begin(struct target_line *t, const struct rci_bench_report *r, FILE *out, const char *id,
                         const char *title)
{
    *t = (struct target_line){ .r = r, .out = out, .id = id };
    fprintf(out, "  %s:", title);
}

/* shown: the point as the table shows it (a ratio, "540 us", ...). */
static void target_point(struct target_line *t, const char *point, double measured, double limit, bool pass,
                         const char *shown)
{
    fprintf(t->out, "%s %s %s %s", t->points++ ? "," : "", point, shown, pass ? "pass" : "MISS");
    if (t->r->json)
        fprintf(stdout, "{\"test\":\"target\",\"target\":\"%s\",\"point\":\"%s\",\"measured\":%.6g,"
                        "\"limit\":%.6g,\"pass\":%s}\n", t->id, point, measured, limit, pass ? "true" : "false");
}

static void target_end(struct target_line *t)
{
    fprintf(t->out, "%s\n", t->points ? "" : " not measured");
    fflush(stdout);
}

static bool is_pipeline_test(const char *test)
{
    return !strcmp(test, "zerocopy") || !strcmp(test, "buffered") || !strcmp(test, "auto");
}

static void target_zc_ratio(const struct rci_bench_report *r, FILE *out)
{
    struct target_line t;
    char title[96], size[32], shown[32];
    snprintf(title, sizeof title, "zero copy >= %.2f x raw at >= 8 KiB (fill=none)", TARGET_ZC_RATIO);
    target_begin(&t, r, out, "zero_copy_vs_raw", title);
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "zerocopy") || !w->fill || strcmp(w->fill, "none") ||
            w->chunk_size < TARGET_ZC_MIN_SIZE || !w->has_ratio || w->delivery_comparison)
            continue;
        snprintf(shown, sizeof shown, "%.3f", w->ratio_to_raw);
        target_point(&t, rci_format_size(w->chunk_size, size, sizeof size), w->ratio_to_raw, TARGET_ZC_RATIO,
                     w->ratio_to_raw >= TARGET_ZC_RATIO, shown);
    }
    target_end(&t);
}

/* Target 1: the pipeline's best chunk rate (any mode, fill none) against the
 * decoder's on one core, at the same size in the same run. */
static void target_per_chunk(const struct rci_bench_report *r, FILE *out)
{
    static const uint64_t sizes[] = { 64, 256 };
    struct target_line t;
    char title[96], size[32], shown[64];
    snprintf(title, sizeof title, "per-chunk cost, pipeline >= %.2f x the decoder's chunk rate", TARGET_PER_CHUNK);
    target_begin(&t, r, out, "per_chunk_cost", title);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const struct rci_bench_row *dec = rci_bench_find(r, "decode", sizes[k], NULL);
        const struct rci_bench_row *best = NULL;
        for (unsigned i = 0; i < r->nrows; i++) {
            const struct rci_bench_row *w = &r->rows[i];
            if (w->chunk_size == sizes[k] && is_pipeline_test(w->test) && w->fill && !strcmp(w->fill, "none") &&
                !w->delivery_comparison && (!best || w->chunks_per_s > best->chunks_per_s))
                best = w;
        }
        if (!dec || !best || dec->chunks_per_s <= 0)
            continue;
        double ratio = best->chunks_per_s / dec->chunks_per_s;
        snprintf(shown, sizeof shown, "%.3f (%s %.2f M/s vs %.2f M/s)", ratio, best->test, best->chunks_per_s / 1e6,
                 dec->chunks_per_s / 1e6);
        target_point(&t, rci_format_size(sizes[k], size, sizeof size), ratio, TARGET_PER_CHUNK,
                     ratio >= TARGET_PER_CHUNK, shown);
    }
    target_end(&t);
}

static void target_buffered_rate(const struct rci_bench_report *r, FILE *out)
{
    struct target_line t;
    char title[96], shown[64];
    snprintf(title, sizeof title, "buffered at 64 B >= %.0f x raw's message rate", TARGET_BUF_RATE_FACTOR);
    target_begin(&t, r, out, "buffered_vs_raw_rate", title);
    const struct rci_bench_row *b = rci_bench_find(r, "buffered", TARGET_BUF_SIZE, "none");
    const struct rci_bench_row *raw = rci_bench_find(r, "raw", TARGET_BUF_SIZE, NULL);
    if (b && raw && raw->chunks_per_s > 0) {
        double factor = b->chunks_per_s / raw->chunks_per_s;
        snprintf(shown, sizeof shown, "%.2f M/s vs %.2f M/s = %.1f x", b->chunks_per_s / 1e6,
                 raw->chunks_per_s / 1e6, factor);
        target_point(&t, "64", factor, TARGET_BUF_RATE_FACTOR, factor >= TARGET_BUF_RATE_FACTOR, shown);
    }
    target_end(&t);
}

static void target_hygiene(const struct rci_bench_report *r, FILE *out)
{
    struct target_line t;
    char point[64], size[32], shown[64];
    target_begin(&t, r, out, "zero_copy_hygiene",
                 "zero copy steady state, 0 allocations and 0 payload bytes copied per chunk");
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "zerocopy") || !w->has_hygiene || w->delivery_comparison)
            continue;
        bool pass = w->mallocs_counted && w->mallocs_per_chunk == 0 && w->copied_bytes_per_chunk == 0;
        snprintf(point, sizeof point, "%s/%s", rci_format_size(w->chunk_size, size, sizeof size), w->fill);
        if (w->mallocs_counted)
            snprintf(shown, sizeof shown, "%.4g mallocs %.4g B copied", w->mallocs_per_chunk,
                     w->copied_bytes_per_chunk);
        else
            snprintf(shown, sizeof shown, "mallocs not counted, %.4g B copied", w->copied_bytes_per_chunk);
        target_point(&t, point, w->mallocs_per_chunk + w->copied_bytes_per_chunk, 0, pass, shown);
    }
    target_end(&t);
}

/* Target 3: p50 and p99 at half the maximum rate, 64 B to 8 KiB, each mode. */
static void target_latency_pct(const struct rci_bench_report *r, FILE *out, bool p99)
{
    struct target_line t;
    char title[96], point[64], size[32], shown[32];
    double limit = p99 ? TARGET_P99_US : TARGET_P50_US;
    snprintf(title, sizeof title, "%s latency at half load <= %.0f us, 64 B to 8 KiB", p99 ? "p99" : "p50", limit);
    target_begin(&t, r, out, p99 ? "latency_p99_us" : "latency_p50_us", title);
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "latency") || !w->mode || w->chunk_size > TARGET_LATENCY_MAX_SIZE)
            continue;
        double us = p99 ? w->p99_us : w->p50_us;
        snprintf(point, sizeof point, "%s/%s", rci_format_size(w->chunk_size, size, sizeof size), w->mode);
        snprintf(shown, sizeof shown, "%.0f us", us);
        target_point(&t, point, us, limit, us <= limit, shown);
    }
    target_end(&t);
}

/* Beside target 3, not judged: a chunk is handed on LATENCY_HANDOFFS times
 * to a thread that sleeps while it has nothing to do (card -> readout by the
 * interrupt or the poll timer, readout -> publisher by the doorbell,
 * publisher -> subscriber by the socket). When each hand-off wakes a thread
 * on another, idle core, the chunk waits at least that many wake-ups (the
 * "wake" row). At half load the threads are busy and queue for the cores
 * instead (the latency rows' cores note). */
#define LATENCY_HANDOFFS 3u
static void latency_floor(const struct rci_bench_report *r, FILE *out)
{
    const struct rci_bench_row *wake = NULL;
    for (unsigned i = 0; i < r->nrows && !wake; i++)
        if (!strcmp(r->rows[i].test, "wake"))
            wake = &r->rows[i];
    fprintf(out, "  latency floor from wake-ups (beside target 3, not judged: %u hand-offs to a sleeping thread"
            " x one wake-up on another, idle core):", LATENCY_HANDOFFS);
    if (!wake) {
        fprintf(out, " not measured\n");
        return;
    }
    fprintf(out, " p50 %.0f us (%u x %.1f us; one wake-up's p99 %.1f us)\n", LATENCY_HANDOFFS * wake->p50_us,
            LATENCY_HANDOFFS, wake->p50_us, wake->p99_us);
}

/* Target 4: all subscribers together keep >= 0.8 of one subscriber's bytes. */
static void target_fanout(const struct rci_bench_report *r, FILE *out)
{
    struct target_line t;
    char title[96], point[32], shown[32];
    snprintf(title, sizeof title, "fan-out, k subscribers together >= %.2f x the bytes of k = 1", TARGET_FANOUT);
    target_begin(&t, r, out, "fanout_vs_one", title);
    const struct rci_bench_row *one = NULL;
    for (unsigned i = 0; i < r->nrows && !one; i++)
        if (!strcmp(r->rows[i].test, "fanout") && r->rows[i].subscribers == 1)
            one = &r->rows[i];
    for (unsigned i = 0; one && one->gbytes_per_s > 0 && i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "fanout") || w->subscribers < 2)
            continue;
        double ratio = w->gbytes_per_s / one->gbytes_per_s;
        snprintf(point, sizeof point, "k=%u", w->subscribers);
        snprintf(shown, sizeof shown, "%.3f", ratio);
        target_point(&t, point, ratio, TARGET_FANOUT, ratio >= TARGET_FANOUT, shown);
    }
    target_end(&t);
}

/* The rma mode's row of this size and delivery (zero copy, fill none,
 * blocks as large as the chunk). */
static const struct rci_bench_row *delivery_row(const struct rci_bench_report *r, uint64_t size,
                                                const char *delivery)
{
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (w->chunk_size == size && w->delivery_comparison && w->delivery && !strcmp(w->delivery, delivery))
            return w;
    }
    return NULL;
}

/* The RMA issue's targets: RMA delivery >= 0.95 x raw-rma at 8 KiB and
 * 64 KiB (blocks as large as the chunk), and the subscriber's CPU per GB
 * no higher with RMA than with send delivery. */
static void target_rma(const struct rci_bench_report *r, FILE *out)
{
    struct target_line t;
    char title[112], size[32], shown[64];
    snprintf(title, sizeof title, "RMA delivery >= %.2f x raw-rma at 8 KiB and 64 KiB, blocks >= chunk",
             TARGET_RMA_RATIO);
    target_begin(&t, r, out, "rma_vs_raw_rma", title);
    for (uint64_t sz = TARGET_RMA_SIZE_MIN; sz <= TARGET_RMA_SIZE_MAX; sz *= 8) {
        const struct rci_bench_row *w = delivery_row(r, sz, "rma");
        const struct rci_bench_row *raw = rci_bench_find(r, "raw-rma", sz, NULL);
        if (!w || !raw || raw->gbytes_per_s <= 0)
            continue;
        double ratio = w->gbytes_per_s / raw->gbytes_per_s;
        snprintf(shown, sizeof shown, "%.3f", ratio);
        target_point(&t, rci_format_size(sz, size, sizeof size), ratio, TARGET_RMA_RATIO, ratio >= TARGET_RMA_RATIO,
                     shown);
    }
    target_end(&t);
    target_begin(&t, r, out, "rma_sub_cpu_vs_send", "subscriber CPU s/GB with RMA delivery <= with send");
    for (uint64_t sz = TARGET_RMA_SIZE_MIN; sz <= TARGET_RMA_SIZE_MAX; sz *= 8) {
        const struct rci_bench_row *rma = delivery_row(r, sz, "rma");
        const struct rci_bench_row *send = delivery_row(r, sz, "send");
        if (!rma || !send || !rma->has_cpu_split || !send->has_cpu_split || send->sub_cpu_s_per_gb <= 0)
            continue;
        double ratio = rma->sub_cpu_s_per_gb / send->sub_cpu_s_per_gb;
        snprintf(shown, sizeof shown, "%.3f (%.2f vs %.2f s/GB)", ratio, rma->sub_cpu_s_per_gb,
                 send->sub_cpu_s_per_gb);
        target_point(&t, rci_format_size(sz, size, sizeof size), ratio, 1.0, ratio <= 1.0, shown);
    }
    target_end(&t);
}

/* The link's peak: the best raw row of the run. */
static const struct rci_bench_row *raw_peak(const struct rci_bench_report *r)
{
    const struct rci_bench_row *best = NULL;
    for (unsigned i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].test, "raw") && (!best || r->rows[i].gbytes_per_s > best->gbytes_per_s))
            best = &r->rows[i];
    return best;
}

static bool bandwidth_point(const struct rci_bench_row *w)
{
    return !strcmp(w->test, "auto") && w->fill && !strcmp(w->fill, "none") && !w->delivery_comparison &&
           (!w->delivery || !strcmp(w->delivery, "send")) &&
           w->chunk_size >= TARGET_BW_MIN_SIZE && w->chunk_size <= TARGET_BW_MAX_SIZE;
}

/* Every auto row (fill none, send delivery) from 1 KiB to 1 MiB against the
 * best raw row; a point measured with other than 4 KiB blocks, or in a run
 * without a raw row of 1 MiB messages (the best raw row is then not the
 * link's peak), cannot pass. JSON: target "bandwidth_auto", measured = the
 * ratio to the peak. */
static void target_bandwidth(const struct rci_bench_report *r, FILE *out)
{
    const struct rci_bench_row *peak = raw_peak(r);
    bool peak_valid = false;
    for (unsigned i = 0; i < r->nrows; i++)
        peak_valid |= !strcmp(r->rows[i].test, "raw") && r->rows[i].chunk_size >= TARGET_BW_PEAK_SIZE;
    char title[256], psize[32], size[32], shown[64];
    int len = snprintf(title, sizeof title, "bandwidth: what auto mode picks >= %.2f x the link's peak",
                       TARGET_BW_RATIO);
    if (peak)
        len += snprintf(title + len, sizeof title - (size_t)len, " (best raw row: %.3f GB/s at %s%s)",
                        peak->gbytes_per_s, rci_format_size(peak->chunk_size, psize, sizeof psize),
                        peak_valid ? "" : "; no raw row of 1 MiB messages: not the link's peak, no pass");
    snprintf(title + len, sizeof title - (size_t)len, " at every size 1 KiB..1 MiB, 4 KiB blocks (fill=none)");
    struct target_line t;
    target_begin(&t, r, out, "bandwidth_auto", title);
    unsigned passed = 0;
    for (unsigned i = 0; peak && peak->gbytes_per_s > 0 && i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (!bandwidth_point(w))
            continue;
        double ratio = w->gbytes_per_s / peak->gbytes_per_s;
        bool blocks_ok = w->block_size ? w->block_size == TARGET_BW_BLOCK : r->block_size == TARGET_BW_BLOCK;
        bool pass = ratio >= TARGET_BW_RATIO && blocks_ok && peak_valid;
        snprintf(shown, sizeof shown, "%.3f%s", ratio, blocks_ok ? "" : " (not 4 KiB blocks)");
        target_point(&t, rci_format_size(w->chunk_size, size, sizeof size), ratio, TARGET_BW_RATIO, pass, shown);
        passed += pass;
    }
    if (t.points)
        fprintf(out, "; %u of %u points pass", passed, t.points);
    target_end(&t);   /* none: "not measured" (auto rows come from pipeline/all without --mode, or --mode auto) */
}

/* The cheapest transport per GB of the run: the raw row with the least CPU
 * per GB (large messages), or NULL. */
static const struct rci_bench_row *cheapest_raw(const struct rci_bench_report *r)
{
    const struct rci_bench_row *best = NULL;
    for (unsigned i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].test, "raw") && r->rows[i].cpu_s_per_gb > 0 &&
            (!best || r->rows[i].cpu_s_per_gb < best->cpu_s_per_gb))
            best = &r->rows[i];
    return best;
}

/* Beside target 2, not judged: the most any delivery could reach on this
 * machine's cores when the CPU is what limits it. Every delivery costs at
 * least the cheapest transport's CPU per GB, the decoder's at that chunk
 * size and the simulated card's (the auto row's sim share); the cores
 * divided by their sum, as a fraction of the peak. A point below the
 * target's ratio cannot pass here, whatever the pipeline does. copy_s_per_gb
 * (0: none) adds a copy of every byte: the ceiling of a copying delivery. */
static void print_ceiling(const struct rci_bench_report *r, FILE *out, double copy_s_per_gb)
{
    const struct rci_bench_row *peak = raw_peak(r), *raw = cheapest_raw(r);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char size[32], copy[32] = "";
    unsigned n = 0;
    if (copy_s_per_gb > 0)
        snprintf(copy, sizeof copy, " + %.2f", copy_s_per_gb);
    for (unsigned i = 0; peak && raw && cores > 0 && peak->gbytes_per_s > 0 && i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (!bandwidth_point(w) || !w->has_cpu_split)
            continue;
        const struct rci_bench_row *dec = rci_bench_find(r, "decode", w->chunk_size, NULL);
        if (!dec || dec->cpu_s_per_gb <= 0)
            continue;
        double s_per_gb = raw->cpu_s_per_gb + dec->cpu_s_per_gb + w->sim_cpu_s_per_gb + copy_s_per_gb;
        double ceiling = (double)cores / s_per_gb / peak->gbytes_per_s;
        fprintf(out, "%s %s %.2f (%.2f + %.2f + %.2f%s s/GB)", n++ ? "," : "",
                rci_format_size(w->chunk_size, size, sizeof size), ceiling, raw->cpu_s_per_gb,
                dec->cpu_s_per_gb, w->sim_cpu_s_per_gb, copy);
    }
    fprintf(out, "%s\n", n ? "" : " not measured");
}

static void bandwidth_ceiling(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "  bandwidth ceiling from CPU (beside target 2, not judged: %ld cores / (cheapest raw s/GB + decode"
            " s/GB + simulated card s/GB), x the peak):", sysconf(_SC_NPROCESSORS_ONLN));
    print_ceiling(r, out, 0);
}

/* The same with one copy of every byte at the memcpy row's CPU per GB:
 * what auto mode does with 4 KiB blocks (buffered pages below its
 * threshold, gather-copy above when a chunk has more pieces than one
 * message carries). Its only zero-copy alternative sends at most
 * iov_limit - 1 blocks' pieces per message (three over tcp), at the raw
 * rows' small-message cost. */
static void bandwidth_ceiling_copying(const struct rci_bench_report *r, FILE *out)
{
    const struct rci_bench_row *mc = NULL;
    for (unsigned i = 0; i < r->nrows && !mc; i++)
        if (!strcmp(r->rows[i].test, "memcpy") && r->rows[i].cpu_s_per_gb > 0)
            mc = &r->rows[i];
    fprintf(out, "  bandwidth ceiling of a copying delivery (beside target 2, not judged: the ceiling's sum + memcpy"
            " s/GB, x the peak):");
    if (!mc) {
        fprintf(out, " not measured\n");
        return;
    }
    print_ceiling(r, out, mc->cpu_s_per_gb);
}

/* The block stream's rows beside targets 1 and 2 (ringcast-sub --stream:
 * not what auto mode picks, so it is not judged; printed for comparison,
 * with no pass or MISS): its chunk rate against the decoder's at 64 B and
 * 256 B, its bandwidth against the link's peak at 1 KiB .. 1 MiB. */
static void stream_beside(const struct rci_bench_report *r, FILE *out)
{
    static const uint64_t small[] = { 64, 256 };
    char size[32];
    unsigned n = 0;
    fprintf(out, "  stream (block stream, ringcast-sub --stream; beside targets 1 and 2, not judged):");
    for (size_t k = 0; k < sizeof small / sizeof small[0]; k++) {
        const struct rci_bench_row *dec = rci_bench_find(r, "decode", small[k], NULL);
        const struct rci_bench_row *st = rci_bench_find(r, "stream", small[k], "none");
        if (!dec || !st || dec->chunks_per_s <= 0)
            continue;
        fprintf(out, "%s per chunk %s %.3f x the decoder (%.2f M/s vs %.2f M/s)", n++ ? "," : "",
                rci_format_size(small[k], size, sizeof size), st->chunks_per_s / dec->chunks_per_s,
                st->chunks_per_s / 1e6, dec->chunks_per_s / 1e6);
    }
    const struct rci_bench_row *peak = raw_peak(r);
    for (unsigned i = 0; peak && peak->gbytes_per_s > 0 && i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "stream") || w->chunk_size < 1024 || w->chunk_size > (1u << 20))
            continue;
        fprintf(out, "%s %s %.3f x the peak (%.3f GB/s)", n++ ? "," : "",
                rci_format_size(w->chunk_size, size, sizeof size), w->gbytes_per_s / peak->gbytes_per_s,
                w->gbytes_per_s);
    }
    fprintf(out, "%s\n", n ? "" : " not measured");
}

void rci_bench_print_targets(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "targets (benchmark issue; pass/MISS per measured point):\n");
    target_bandwidth(r, out);
    bandwidth_ceiling(r, out);
    bandwidth_ceiling_copying(r, out);
    target_per_chunk(r, out);
    stream_beside(r, out);
    target_zc_ratio(r, out);
    target_buffered_rate(r, out);
    target_hygiene(r, out);
    target_latency_pct(r, out, false);
    target_latency_pct(r, out, true);
    latency_floor(r, out);
    target_fanout(r, out);
    target_rma(r, out);
}

/* ---- CSV and plots ------------------------------------------------------------ */

static void csv_opt(FILE *f, bool has, double v)
{
    if (has)
        fprintf(f, ",%.6g", v);
    else
        fputc(',', f);
}

static int write_csv(const struct rci_bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fprintf(f, "test,fill,mode,subscribers,chunk_size,gbytes_per_s,chunks_per_s,cpu_s_per_gb,ratio_to_raw,"
               "p50_us,p99_us,p999_us,max_us,mallocs_per_chunk,copied_bytes_per_chunk\n");
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        fprintf(f, "%s,%s,%s,%u,%" PRIu64 ",%.6g,%.6g,%.6g", w->test, w->fill ? w->fill : "",
                w->mode ? w->mode : "", w->subscribers, w->chunk_size, w->gbytes_per_s, w->chunks_per_s,
                w->cpu_s_per_gb);
        csv_opt(f, w->has_ratio, w->ratio_to_raw);
        csv_opt(f, w->has_latency, w->p50_us);
        csv_opt(f, w->has_latency, w->p99_us);
        csv_opt(f, w->has_latency, w->p999_us);
        csv_opt(f, w->has_latency, w->max_us);
        csv_opt(f, w->has_hygiene && w->mallocs_counted, w->mallocs_per_chunk);
        csv_opt(f, w->has_hygiene, w->copied_bytes_per_chunk);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

/* One gnuplot plot of CSV column `col` over chunk size for the series; awk
 * picks each series' rows (gnuplot's own filters leave undefined points
 * that break the lines). */
static void gp_plot(FILE *f, const char *dir, const char *png, const char *ylabel, int col)
{
    static const struct { const char *test, *fill, *title; } series[] = {
        { "raw", "", "raw libfabric" },
        { "zerocopy", "none", "zero copy, fill=none" },
        { "zerocopy", "pattern", "zero copy, fill=pattern" },
        { "buffered", "none", "buffered, fill=none" },
        { "buffered", "pattern", "buffered, fill=pattern" },
    };
    fprintf(f, "set output '%s/%s'\nset ylabel '%s'\nplot ", dir, png, ylabel);
    for (size_t i = 0; i < sizeof series / sizeof series[0]; i++)
        fprintf(f, "%s\"< awk -F, '$1 == \\\"%s\\\" && $2 == \\\"%s\\\"' '%s/bench.csv'\" using 5:%d "
                   "with linespoints title '%s'", i ? ", \\\n     " : "", series[i].test, series[i].fill, dir, col,
                series[i].title);
    fputc('\n', f);
}

static int write_gnuplot_script(const char *dir, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fprintf(f, "# written by ringcast-bench --plot: gnuplot %s\n"
               "set datafile separator ','\nset terminal png size 900,600\nset logscale x 2\n"
               "set logscale y 10\nset grid\nset key top left\nset xlabel 'chunk size (bytes)'\n"
               "set offsets graph 0.03, graph 0.03, 0, 0\n", path);
    gp_plot(f, dir, "throughput.png", "GB/s (1e9 bytes/s)", 6);
    gp_plot(f, dir, "chunk_rate.png", "chunks/s", 7);
    return fclose(f) == 0 ? 0 : -EIO;
}

static bool gnuplot_installed(void)
{
    const char *path = getenv("PATH");
    char dir[512];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < 400) {
            snprintf(dir, sizeof dir, "%.*s/gnuplot", (int)n, path);
            if (access(dir, X_OK) == 0)
                return true;
        }
        path += n + (path[n] == ':');
    }
    return false;
}

static int run_gnuplot(const char *script)
{
    char *argv[] = { "gnuplot", (char *)script, NULL };
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc)
        return -rc;
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -errno;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int rci_bench_write_plots(const struct rci_bench_report *r, const char *dir)
{
    char csv[600], gp[600];
    snprintf(csv, sizeof csv, "%s/bench.csv", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    int rc = mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
    if (rc == 0)
        rc = write_csv(r, csv);
    if (rc) {
        fprintf(stderr, "ringcast-bench: --plot: cannot write %s: %s\n", csv, strerror(-rc));
        return rc;
    }
    fprintf(stderr, "ringcast-bench: wrote %s\n", csv);
    if (!gnuplot_installed()) {
        fprintf(stderr, "ringcast-bench: gnuplot is not installed: no PNG plots, only the CSV "
                        "(install it with RINGCAST_WITH_PLOT=1 deploy/install-deps.sh)\n");
        return 0;
    }
    rc = write_gnuplot_script(dir, gp);
    if (rc == 0)
        rc = run_gnuplot(gp);
    if (rc) {
        fprintf(stderr, "ringcast-bench: gnuplot %s failed (%s): no PNG plots\n", gp, strerror(-rc));
        return rc;
    }
    fprintf(stderr, "ringcast-bench: wrote %s/throughput.png and %s/chunk_rate.png\n", dir, dir);
    return 0;
}

double rci_bench_cpu_seconds(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
