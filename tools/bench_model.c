/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_model.c — the sizing model's fit and its tables (bench_model.h). */
#include "tools/bench_model.h"

#include <inttypes.h>

static const char *const stage_names[RCI_STAGE_COUNT] = {
    [RCI_STAGE_DECODE] = "decode",          [RCI_STAGE_DISPATCH] = "dispatch",
    [RCI_STAGE_SEND] = "send+completion",   [RCI_STAGE_DAEMON_OTHER] = "daemon-other",
    [RCI_STAGE_SUBSCRIBER] = "subscriber",
};

const char *rci_model_stage_name(enum rci_model_stage s)
{
    return s < RCI_STAGE_COUNT ? stage_names[s] : "?";
}

/* Least squares of cost = a + b * size over the points, a and b >= 0 (a
 * negative one is set to 0 and the other refitted alone). */
static struct rci_model_fit fit_stage(const struct rci_model *m, enum rci_model_stage st)
{
    double n = m->npoints, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (unsigned i = 0; i < m->npoints; i++) {
        double x = (double)m->points[i].chunk_size, y = m->points[i].cpu_per_chunk[st];
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    struct rci_model_fit f = { 0, 0 };
    if (n == 0)
        return f;
    double det = n * sxx - sx * sx;
    if (det > 0) {
        f.per_byte = (n * sxy - sx * sy) / det;
        f.per_chunk = (sy - f.per_byte * sx) / n;
    }
    if (det <= 0 || f.per_byte < 0) {          /* no slope: the mean per chunk */
        f.per_byte = 0;
        f.per_chunk = sy / n;
    } else if (f.per_chunk < 0) {              /* through the origin */
        f.per_chunk = 0;
        f.per_byte = sxy / sxx;
    }
    return f;
}

void rci_model_fit(struct rci_model *m)
{
    for (int s = 0; s < RCI_STAGE_COUNT; s++)
        m->fit[s] = fit_stage(m, (enum rci_model_stage)s);
}

double rci_model_cost(const struct rci_model *m, enum rci_model_stage s, uint64_t chunk_size)
{
    return m->fit[s].per_chunk + m->fit[s].per_byte * (double)chunk_size;
}

static double per_gb(double per_chunk, uint64_t size) { return size ? per_chunk / ((double)size / 1e9) : 0; }

static void print_stages(const struct rci_model *m, bool json, FILE *out)
{
    if (!json)
        fprintf(out, "\nmodel: CPU per chunk of each stage (measured), us/chunk | s/GB\n%-16s", "stage");
    for (unsigned i = 0; !json && i < m->npoints; i++)
        fprintf(out, " %10" PRIu64 " B          ", m->points[i].chunk_size);
    if (!json)
        fprintf(out, "  fit: ns/chunk + ns/KiB\n");
    for (int s = 0; s < RCI_STAGE_COUNT; s++) {
        if (!json)
            fprintf(out, "%-16s", stage_names[s]);
        for (unsigned i = 0; i < m->npoints; i++) {
            const struct rci_model_point *p = &m->points[i];
            double c = p->cpu_per_chunk[s];
            if (json)
                fprintf(out, "{\"test\":\"model_stage\",\"stage\":\"%s\",\"chunk_size\":%" PRIu64
                        ",\"cpu_s_per_chunk\":%.6g,\"cpu_s_per_gb\":%.6g}\n", stage_names[s], p->chunk_size, c,
                        per_gb(c, p->chunk_size));
            else
                fprintf(out, " %9.3f | %9.3f ", c * 1e6, per_gb(c, p->chunk_size));
        }
        if (json)
            fprintf(out, "{\"test\":\"model_fit\",\"stage\":\"%s\",\"cpu_s_per_chunk\":%.6g,"
                    "\"cpu_s_per_byte\":%.6g}\n", stage_names[s], m->fit[s].per_chunk, m->fit[s].per_byte);
        else
            fprintf(out, "  %.0f + %.1f\n", m->fit[s].per_chunk * 1e9, m->fit[s].per_byte * 1e9 * 1024);
    }
}

static void print_target(const struct rci_model *m, const struct rci_model_target *t, bool json, FILE *out)
{
    double cores[RCI_STAGE_COUNT], daemon = 0;
    for (int s = 0; s < RCI_STAGE_COUNT; s++) {
        cores[s] = rci_model_cost(m, (enum rci_model_stage)s, t->chunk_size) * t->chunks_per_s;
        if (s != RCI_STAGE_SUBSCRIBER)
            daemon += cores[s];
    }
    double gbytes = t->chunks_per_s * (double)t->chunk_size / 1e9;
    if (json) {
        fprintf(out, "{\"test\":\"model_target\",\"target\":\"%s\",\"chunk_size\":%" PRIu64
                ",\"chunks_per_s\":%.0f,\"gbytes_per_s\":%.4f", t->name, t->chunk_size, t->chunks_per_s, gbytes);
        for (int s = 0; s < RCI_STAGE_COUNT; s++)
            fprintf(out, ",\"cores_%s\":%.3f", s == RCI_STAGE_SEND ? "send" : s == RCI_STAGE_DAEMON_OTHER
                                                                           ? "daemon_other" : stage_names[s],
                    cores[s]);
        fprintf(out, ",\"cores_daemon\":%.3f}\n", daemon);
        return;
    }
    fprintf(out, "%-32s %10.2f %7.2f", t->name, t->chunks_per_s / 1e6, gbytes);
    for (int s = 0; s < RCI_STAGE_COUNT; s++)
        fprintf(out, " %9.2f", cores[s]);
    fprintf(out, " %9.2f\n", daemon);
}

void rci_model_print(const struct rci_model *m, const struct rci_model_target *targets, unsigned ntargets,
                     bool json, FILE *out)
{
    print_stages(m, json, out);
    if (!json) {
        fprintf(out, "\nmodel: cores needed (fit x rate)\n%-32s %10s %7s", "target", "Mchunks/s", "GB/s");
        static const char *const short_names[RCI_STAGE_COUNT] = { "decode", "dispatch", "send+cq",
                                                                  "dmn-other", "subscr" };
        for (int s = 0; s < RCI_STAGE_COUNT; s++)
            fprintf(out, " %9s", short_names[s]);
        fprintf(out, " %9s\n", "daemon");
    }
    for (unsigned i = 0; i < ntargets; i++)
        print_target(m, &targets[i], json, out);
}
