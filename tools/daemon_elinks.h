/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_elinks.h — per-e-link figures of ringcast-readout in the log and in
 * --stats-json. Each stats interval (and once at the end): a WARN naming the
 * e-link for every e-link whose errors changed (malformed blocks by kind,
 * sequence gaps, bad starts, orphans, oversize, chunks dropped, chunks the
 * card flagged: CRC, truncated, error, busy), with its rate; at log_level =
 * debug also a line per e-link whose counts changed (rates and totals).
 * The main thread's; reads the readout's per-e-link copies (no lock). */
#ifndef RCI_DAEMON_ELINKS_H
#define RCI_DAEMON_ELINKS_H
#include <stdbool.h>
#include <stdio.h>

#include "readout/readout.h"

struct rci_elink_watch {
    unsigned card;                       /* card.N, for the messages */
    struct rci_elink_stats *prev;        /* RCI_READOUT_MAX_ELINKS, at the last check (NULL: none yet) */
    uint64_t last_ns;                    /* monotonic time of the last check, 0: none */
};

/* Compare with the last check and log. 0, or -ENOMEM (nothing logged). */
int  rci_elink_watch_check(struct rci_elink_watch *w, const struct rci_readout *r, uint64_t now_ns);
void rci_elink_watch_free(struct rci_elink_watch *w);

/* ,"elinks":[{"elink":E,"blocks":..,"chunks":..,"bytes":..,"chunks_truncated":..,
 * "chunks_crc":..,"chunks_error":..,"chunks_busy":..,"errors":..},...]:
 * every e-link the card has seen. */
void rci_elinks_write_json(FILE *f, const struct rci_readout *r);

#endif
