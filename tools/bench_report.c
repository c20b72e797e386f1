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
#define TARGET_P99_US          200.0    /* zero copy p99 at half load */
/* Issue 17, target 2: what mode auto picks, at every chunk size from 1 KiB
 * to 1 MiB with 4 KiB blocks, >= 0.9 x the link's peak (the best raw row). */
#define TARGET_BW_RATIO        0.90
#define TARGET_BW_MIN_SIZE     1024u
#define TARGET_BW_MAX_SIZE     (1u << 20)
#define TARGET_BW_BLOCK        4096u
#define TARGET_BW_PEAK_SIZE    (1u << 20)   /* the peak needs a raw row of 1 MiB messages or more */

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
        snprintf(extra, sizeof extra, "%s: p50 %.1f p99 %.1f p99.9 %.1f max %.1f us; ", w->mode, w->p50_us,
                 w->p99_us, w->p999_us, w->max_us);
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

static const char *verdict(bool pass) { return pass ? "pass" : "MISS"; }

static void target_zc_ratio(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "  zero copy >= %.2f x raw at >= 8 KiB (fill=none):", TARGET_ZC_RATIO);
    unsigned n = 0;
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "zerocopy") || !w->fill || strcmp(w->fill, "none") ||
            w->chunk_size < TARGET_ZC_MIN_SIZE ||
            !w->has_ratio)
            continue;
        char size[32];
        fprintf(out, "%s %s %.3f %s", n++ ? "," : "", rci_format_size(w->chunk_size, size, sizeof size),
                w->ratio_to_raw, verdict(w->ratio_to_raw >= TARGET_ZC_RATIO));
    }
    fprintf(out, "%s\n", n ? "" : " not measured");
}

static void target_buffered_rate(const struct rci_bench_report *r, FILE *out)
{
    const struct rci_bench_row *b = rci_bench_find(r, "buffered", TARGET_BUF_SIZE, "none");
    const struct rci_bench_row *raw = rci_bench_find(r, "raw", TARGET_BUF_SIZE, NULL);
    fprintf(out, "  buffered at 64 B >= %.0f x raw's message rate:", TARGET_BUF_RATE_FACTOR);
    if (!b || !raw || raw->chunks_per_s <= 0) {
        fprintf(out, " not measured\n");
        return;
    }
    double factor = b->chunks_per_s / raw->chunks_per_s;
    fprintf(out, " %.2f M/s vs %.2f M/s = %.1f x %s\n", b->chunks_per_s / 1e6, raw->chunks_per_s / 1e6, factor,
            verdict(factor >= TARGET_BUF_RATE_FACTOR));
}

static void target_hygiene(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "  zero copy steady state, 0 allocations and 0 payload bytes copied per chunk:");
    unsigned n = 0;
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "zerocopy") || !w->has_hygiene)
            continue;
        char size[32];
        bool pass = w->mallocs_counted && w->mallocs_per_chunk == 0 && w->copied_bytes_per_chunk == 0;
        fprintf(out, "%s %s/%s %s", n++ ? "," : "", rci_format_size(w->chunk_size, size, sizeof size), w->fill,
                verdict(pass));
    }
    fprintf(out, "%s\n", n ? "" : " not measured");
}

static void target_latency(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "  zero copy p99 latency at half load <= %.0f us:", TARGET_P99_US);
    unsigned n = 0;
    for (unsigned i = 0; i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (strcmp(w->test, "latency") || !w->mode || strcmp(w->mode, "zerocopy"))
            continue;
        char size[32];
        fprintf(out, "%s %s %.0f us %s", n++ ? "," : "", rci_format_size(w->chunk_size, size, sizeof size),
                w->p99_us, verdict(w->p99_us <= TARGET_P99_US));
    }
    fprintf(out, "%s\n", n ? "" : " not measured");
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
    return !strcmp(w->test, "auto") && w->fill && !strcmp(w->fill, "none") &&
           w->chunk_size >= TARGET_BW_MIN_SIZE && w->chunk_size <= TARGET_BW_MAX_SIZE;
}

static void bandwidth_json(const struct rci_bench_report *r, const struct rci_bench_row *w,
                           const struct rci_bench_row *peak, bool peak_valid, double ratio, bool pass)
{
    printf("{\"test\":\"target\",\"target\":\"bandwidth_auto\",\"chunk_size\":%" PRIu64
           ",\"gbytes_per_s\":%.4f,\"peak_gbytes_per_s\":%.4f,\"peak_chunk_size\":%" PRIu64
           ",\"peak_valid\":%s,\"ratio_to_peak\":%.4f,\"min_ratio\":%.2f,\"block_size\":%" PRIu64
           ",\"pass\":%s}\n", w->chunk_size, w->gbytes_per_s, peak->gbytes_per_s, peak->chunk_size,
           peak_valid ? "true" : "false", ratio, TARGET_BW_RATIO, r->block_size, pass ? "true" : "false");
    fflush(stdout);
}

/* Every auto row (fill none) from 1 KiB to 1 MiB against the best raw row;
 * a point measured with other than 4 KiB blocks, or in a run without a raw
 * row of 1 MiB messages (the peak is then not the link's), cannot pass. */
static void target_bandwidth(const struct rci_bench_report *r, FILE *out)
{
    const struct rci_bench_row *peak = raw_peak(r);
    char psize[32];
    fprintf(out, "  bandwidth: what auto mode picks >= %.2f x the link's peak", TARGET_BW_RATIO);
    if (peak)
        fprintf(out, " (best raw row: %.3f GB/s at %s)", peak->gbytes_per_s,
                rci_format_size(peak->chunk_size, psize, sizeof psize));
    fprintf(out, " at every size 1 KiB..1 MiB, 4 KiB blocks (fill=none)");
    if (r->block_size != TARGET_BW_BLOCK)
        fprintf(out, " [this run: %" PRIu64 " B blocks, so no pass]", r->block_size);
    bool peak_valid = peak && peak->chunk_size >= TARGET_BW_PEAK_SIZE;
    for (unsigned i = 0; !peak_valid && i < r->nrows; i++)
        peak_valid = !strcmp(r->rows[i].test, "raw") && r->rows[i].chunk_size >= TARGET_BW_PEAK_SIZE;
    if (peak && !peak_valid)
        fprintf(out, " [no raw row of 1 MiB messages in this run: the peak is not the link's, so no pass]");
    fprintf(out, ":");
    unsigned n = 0, passed = 0;
    for (unsigned i = 0; peak && peak->gbytes_per_s > 0 && i < r->nrows; i++) {
        const struct rci_bench_row *w = &r->rows[i];
        if (!bandwidth_point(w))
            continue;
        double ratio = w->gbytes_per_s / peak->gbytes_per_s;
        bool pass = ratio >= TARGET_BW_RATIO && r->block_size == TARGET_BW_BLOCK && peak_valid;
        char size[32];
        fprintf(out, "%s %s %.3f %s", n++ ? "," : "", rci_format_size(w->chunk_size, size, sizeof size), ratio,
                verdict(pass));
        passed += pass;
        if (r->json)
            bandwidth_json(r, w, peak, peak_valid, ratio, pass);
    }
    if (n)
        fprintf(out, "; %u of %u points pass\n", passed, n);
    else
        fprintf(out, " not measured (needs raw rows and auto rows: pipeline or all without --mode, or --mode "
                     "with auto)\n");
}

void rci_bench_print_targets(const struct rci_bench_report *r, FILE *out)
{
    fprintf(out, "targets (benchmark issue; pass/MISS per measured point):\n");
    target_bandwidth(r, out);
    target_zc_ratio(r, out);
    target_buffered_rate(r, out);
    target_hygiene(r, out);
    target_latency(r, out);
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
