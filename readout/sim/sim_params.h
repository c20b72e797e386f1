/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_params.h — settings of the simulated card's firmware (the [sim.N] section). */
#ifndef RCI_SIM_PARAMS_H
#define RCI_SIM_PARAMS_H
#include <stdbool.h>
#include <stdint.h>
#include "readout/sim/pattern.h"

/* timestamp: the first 8 bytes of each chunk hold CLOCK_MONOTONIC in ns
 * (little-endian) taken when the firmware writes the chunk's first block;
 * the rest is not written. For latency measurements (ringcast-sub --latency);
 * chunks must be at least 8 bytes. */
enum rci_sim_fill { RCI_FILL_PATTERN = 0, RCI_FILL_NONE, RCI_FILL_TIMESTAMP };
#define RCI_SIM_STAMP_BYTES 8u
enum rci_rate_unit { RCI_RATE_UNLIMITED = 0, RCI_RATE_BYTES, RCI_RATE_CHUNKS };
struct rci_rate { enum rci_rate_unit unit; double per_second; };

struct rci_sim_params {
    uint32_t elinks;               /* e-links 0..elinks-1, round-robin */
    uint32_t chunk_size_min;       /* equal min/max: fixed size */
    uint32_t chunk_size_max;
    struct rci_rate rate;           /* unlimited, bytes/s or chunks/s */
    enum rci_sim_fill fill;
    double err_truncated;          /* probability per chunk, 0..1 */
    double err_crc;
    double err_malformed;          /* per block: a trailer whose length does not fit */
    double err_seqskip;            /* per block: skip a sequence number */
    char replay_file[256];         /* raw blocks to replay instead of generating */
    bool replay_loop;
    uint64_t run_chunks;           /* 0 = unlimited */
    uint64_t run_ns;               /* 0 = unlimited */
    uint64_t pause_every_ns;       /* the source goes quiet once per period (0 = never) ... */
    uint64_t pause_for_ns;         /* ... for this long, at the period's end */
    uint64_t seed;
    /* data-available interrupt (card.N.wait = interrupt): raised after this
     * many blocks, or this long after the oldest block not yet signalled */
    uint32_t irq_blocks;
    uint64_t irq_timeout_ns;
};

#endif
