/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_sim.c — the [sim.N] sections: struct rci_sim_params
 * (readout/sim/sim_params.h), the simulated firmware of card N. Rows follow the
 * pattern described in schema_fabric.c; two-key checks live in check_sim()
 * in config.c. */
#include "config/schema.h"

#define T struct rci_sim_params

static const struct rci_cfg_key sim_keys[] = {
    {.key = "elinks", .type = RCI_CFG_UINT, .def = "8", .min = 1, .max = 2048,
     RCI_CFG_FIELD(T, elinks),
     .help = "E-links 0..elinks-1; chunks are produced round-robin over them."},
    {.key = "chunk_size_min", .type = RCI_CFG_SIZE, .def = "1k", .min = 1, .max = 16ull << 20,
     RCI_CFG_FIELD(T, chunk_size_min),
     .help = "Smallest chunk; equal to chunk_size_max for a fixed size."},
    {.key = "chunk_size_max", .type = RCI_CFG_SIZE, .def = "1k", .min = 1, .max = 16ull << 20,
     RCI_CFG_FIELD(T, chunk_size_max),
     .help = "Largest chunk."},
    {.key = "rate", .type = RCI_CFG_RATE, .def = "unlimited", .min = 1,
     .max = 1000000000000ull, RCI_CFG_FIELD(T, rate),
     .help = "Production rate: unlimited, bytes (2.5GB/s) or chunks (10Mchunks/s) per second."},
    {.key = "fill", .type = RCI_CFG_ENUM, .def = "pattern", .choices = "pattern|none|timestamp",
     RCI_CFG_FIELD(T, fill),
     .help = "Payload: the pattern of readout/sim/pattern.h, none (not written), or timestamp (first 8 bytes: CLOCK_MONOTONIC ns at writing; chunks >= 8 B)."},
    {.key = "err_truncated", .type = RCI_CFG_PROB, .def = "0", RCI_CFG_FIELD(T, err_truncated),
     .help = "Probability per chunk to mark it truncated."},
    {.key = "err_crc", .type = RCI_CFG_PROB, .def = "0", RCI_CFG_FIELD(T, err_crc),
     .help = "Probability per chunk to mark a CRC error."},
    {.key = "err_malformed", .type = RCI_CFG_PROB, .def = "0", RCI_CFG_FIELD(T, err_malformed),
     .help = "Probability per block to write a trailer whose length does not fit."},
    {.key = "err_seqskip", .type = RCI_CFG_PROB, .def = "0", RCI_CFG_FIELD(T, err_seqskip),
     .help = "Probability per block to skip a sequence number."},
    {.key = "replay_file", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 180,
     RCI_CFG_FIELD(T, replay_file),
     .help = "File of raw blocks to replay instead of generating chunks (path relative to the working directory); empty = generate."},
    {.key = "replay_loop", .type = RCI_CFG_BOOL, .def = "false", RCI_CFG_FIELD(T, replay_loop),
     .help = "Start the replay file again at its end."},
    {.key = "irq_blocks", .type = RCI_CFG_UINT, .def = "16", .min = 1, .max = 1u << 20,
     RCI_CFG_FIELD(T, irq_blocks),
     .help = "card.N.wait = interrupt: raise the data interrupt after this many blocks ..."},
    {.key = "irq_timeout", .type = RCI_CFG_DURATION, .def = "20us", .min = 1000, .max = 1000000000ull,
     RCI_CFG_FIELD(T, irq_timeout_ns),
     .help = "... or this long after the oldest block not yet signalled."},
    {.key = "run_chunks", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, run_chunks),
     .help = "Stop after this many chunks; 0 = unlimited."},
    {.key = "run_time", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, run_ns),
     .help = "Stop after this long; 0 = unlimited."},
    {.key = "pause_every", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, pause_every_ns),
     .help = "The detector goes quiet once per this period (no blocks written; a test of waiting"
             " and resuming); 0 = never."},
    {.key = "pause_for", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, pause_for_ns),
     .help = "How long each quiet time of pause_every lasts; less than pause_every."},
    {.key = "seed", .type = RCI_CFG_UINT, .def = "1", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, seed),
     .help = "Seed of the random chunk sizes and error injection."},
};

const struct rci_cfg_section rci_cfg_section_sim = {
    .name = "sim",
    .repeated = true,
    .max_instances = RCI_MAX_CARDS,
    .help = "The simulated firmware of card N (needs a [card.N]).",
    .keys = sim_keys,
    .nkeys = sizeof sim_keys / sizeof sim_keys[0],
    .cfg_offset = offsetof(struct rci_config, sim),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
