/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_figures.h — figures ringcast-readout derives from the readout's
 * counters, the same for the log, --stats-json and the metrics. */
#ifndef RCI_DAEMON_FIGURES_H
#define RCI_DAEMON_FIGURES_H
#include <stdint.h>

#include "readout/readout.h"

/* Everything the decoder counted as wrong in the card's data. */
static inline uint64_t rci_decode_errors(const struct rci_readout_stats *s)
{
    return s->bad_header + s->err_malformed + s->err_seq_gap + s->err_oversize + s->err_orphan +
           s->err_bad_start +
           s->chunks_dropped_gap + s->chunks_incomplete + s->chunks_dropped_pool +
           s->chunks_dropped_ring + s->sink_errors + s->card_bad_status;
}

/* Accepted-looking data the readout threw away: chunks dropped whole. */
static inline uint64_t rci_chunks_lost(const struct rci_readout_stats *s)
{
    return s->chunks_dropped_gap + s->chunks_incomplete + s->chunks_dropped_pool +
           s->chunks_dropped_ring + s->err_oversize + s->sink_errors;
}

/* Chunks the card itself flagged (truncated, error, CRC error, busy). */
static inline uint64_t rci_chunks_flagged(const struct rci_readout_stats *s)
{
    return s->chunks_truncated + s->chunks_error + s->chunks_crc + s->chunks_busy;
}

static inline uint64_t rci_elink_lost(const struct rci_elink_stats *e)
{
    return e->chunks_dropped_gap + e->chunks_incomplete + e->chunks_dropped_pool +
           e->chunks_dropped_ring + e->err_oversize;
}

/* Decode errors of one e-link that are not losses of whole chunks. */
static inline uint64_t rci_elink_errors(const struct rci_elink_stats *e)
{
    return e->err_malformed + e->err_seq_gap + e->err_orphan + e->err_bad_start;
}

#endif
