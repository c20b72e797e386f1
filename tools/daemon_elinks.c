/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_elinks.c — per-e-link log lines and JSON (daemon_elinks.h). */
#include "tools/daemon_elinks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/daemon_figures.h"
#include "tools/log.h"

/* Decode errors, losses and flagged chunks of one e-link: what its WARN is about. */
static uint64_t elink_trouble(const struct rci_elink_stats *e)
{
    return rci_elink_errors(e) + rci_elink_lost(e) + e->err_truncated + e->err_crc + e->err_flag + e->err_busy;
}

/* Appends " N WHAT" (with a comma after the first) when n > 0. */
static void add_kind(char *buf, size_t len, size_t *used, uint64_t n, const char *what)
{
    if (n == 0 || *used >= len)
        return;
    int m = snprintf(buf + *used, len - *used, "%s%" PRIu64 " %s", *used ? ", " : "", n, what);
    if (m > 0)
        *used += (size_t)m < len - *used ? (size_t)m : len - *used - 1;
}

#define D(field) (e->field - p->field)
static void warn_elink(unsigned card, unsigned elink, const struct rci_elink_stats *e,
                       const struct rci_elink_stats *p, double interval_s)
{
    char what[512];
    size_t used = 0;
    what[0] = '\0';
    if (D(err_malformed)) {
        char m[160];
        snprintf(m, sizeof m, "malformed blocks (length %" PRIu64 ", null %" PRIu64 ", order %" PRIu64
                 ", padding %" PRIu64 ", split %" PRIu64 ")", D(malformed_length), D(malformed_null),
                 D(malformed_order), D(malformed_padding), D(malformed_split));
        add_kind(what, sizeof what, &used, D(err_malformed), m);
    }
    add_kind(what, sizeof what, &used, D(err_seq_gap), "blocks missing (sequence gap)");
    add_kind(what, sizeof what, &used, D(err_bad_start), "blocks that did not go on with the open chunk");
    add_kind(what, sizeof what, &used, D(err_orphan), "orphan subchunks");
    add_kind(what, sizeof what, &used, D(err_oversize), "oversize chunks dropped");
    add_kind(what, sizeof what, &used, D(chunks_dropped_gap), "chunks dropped for a gap");
    add_kind(what, sizeof what, &used, D(chunks_incomplete), "incomplete chunks dropped");
    add_kind(what, sizeof what, &used, D(chunks_dropped_pool), "chunks dropped (no descriptor)");
    add_kind(what, sizeof what, &used, D(chunks_dropped_ring), "chunks dropped (full ring)");
    add_kind(what, sizeof what, &used, D(err_crc), "CRC-flagged chunks");
    add_kind(what, sizeof what, &used, D(err_truncated), "truncated-flagged chunks");
    add_kind(what, sizeof what, &used, D(err_flag), "error-flagged chunks");
    add_kind(what, sizeof what, &used, D(err_busy), "busy-flagged chunks");
    char when[48] = "since the start";
    if (interval_s > 0)
        snprintf(when, sizeof when, "in the last %.1f s (%.3f Mchunk/s)", interval_s, (double)D(chunks) / interval_s / 1e6);
    rci_warn("card.%u e-link %u: %s %s; since the start: %" PRIu64 " errors, %" PRIu64 " chunks lost, %" PRIu64
             " flagged", card, elink, what, when, rci_elink_errors(e), rci_elink_lost(e),
             e->err_truncated + e->err_crc + e->err_flag + e->err_busy);
}

static void debug_elink(unsigned card, unsigned elink, const struct rci_elink_stats *e,
                        const struct rci_elink_stats *p, double interval_s)
{
    double dt = interval_s > 0 ? interval_s : 1.0;
    rci_debug("card.%u e-link %u: %.3f Mchunk/s %.3f GB/s | blocks %" PRIu64 " chunks %" PRIu64 " bytes %" PRIu64
              " | errors %" PRIu64 " lost %" PRIu64 " flagged %" PRIu64, card, elink, (double)D(chunks) / dt / 1e6,
              (double)D(bytes) / dt / 1e9, e->blocks, e->chunks, e->bytes, rci_elink_errors(e), rci_elink_lost(e),
              e->err_truncated + e->err_crc + e->err_flag + e->err_busy);
}
#undef D

int rci_elink_watch_check(struct rci_elink_watch *w, const struct rci_readout *r, uint64_t now_ns)
{
    double interval_s = w->last_ns ? (double)(now_ns - w->last_ns) / 1e9 : 0.0;
    w->last_ns = now_ns;
    if (!w->prev) {
        w->prev = calloc(RCI_READOUT_MAX_ELINKS, sizeof *w->prev);
        if (!w->prev)
            return -ENOMEM;
    }
    bool debug = rci_log_level() >= RCI_LOG_DEBUG;
    for (unsigned e = 0; e < RCI_READOUT_MAX_ELINKS; e++) {
        struct rci_elink_stats now;
        if (rci_readout_get_elink_stats(r, e, &now) != 0)
            continue;
        struct rci_elink_stats *p = &w->prev[e];
        if (elink_trouble(&now) != elink_trouble(p))
            warn_elink(w->card, e, &now, p, interval_s);
        if (debug && (now.blocks != p->blocks || now.chunks != p->chunks))
            debug_elink(w->card, e, &now, p, interval_s);
        *p = now;
    }
    return 0;
}

void rci_elink_watch_free(struct rci_elink_watch *w)
{
    free(w->prev);
    w->prev = NULL;
}

void rci_elinks_write_json(FILE *f, const struct rci_readout *r)
{
    fputs(",\"elinks\":[", f);
    const char *sep = "";
    for (unsigned e = 0; e < RCI_READOUT_MAX_ELINKS; e++) {
        struct rci_elink_stats s;
        if (rci_readout_get_elink_stats(r, e, &s) != 0)
            continue;
        fprintf(f, "%s{\"elink\":%u,\"blocks\":%" PRIu64 ",\"chunks\":%" PRIu64 ",\"bytes\":%" PRIu64
                   ",\"chunks_truncated\":%" PRIu64 ",\"chunks_crc\":%" PRIu64 ",\"chunks_error\":%" PRIu64
                   ",\"chunks_busy\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"chunks_lost\":%" PRIu64 "}",
                sep, e, s.blocks, s.chunks, s.bytes, s.err_truncated, s.err_crc, s.err_flag, s.err_busy,
                rci_elink_errors(&s), rci_elink_lost(&s));
        sep = ",";
    }
    fputc(']', f);
}
