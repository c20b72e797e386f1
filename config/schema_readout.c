/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_readout.c — the [readout] section: the daemon as a whole.
 * Rows follow the pattern described in schema_fabric.c. */
#include "config/schema.h"

#define T struct rci_daemon_params

static const struct rci_cfg_key readout_keys[] = {
    {.key = "log_level", .type = RCI_CFG_ENUM, .def = "info", .choices = "error|warn|info|debug",
     RCI_CFG_FIELD(T, log_level),
     .help = "Messages less severe than this are not logged."},
    {.key = "stats_interval", .type = RCI_CFG_DURATION, .def = "1s", .min = 0,
     .max = 3600000000000ull, RCI_CFG_FIELD(T, stats_interval_ns),
     .help = "Log the statistics this often; 0 = never."},
    {.key = "log_repeat_interval", .type = RCI_CFG_DURATION, .def = "10s", .min = 0,
     .max = 3600000000000ull, RCI_CFG_FIELD(T, log_repeat_interval_ns),
     .help = "Repeated log lines: one per cause (call site and subject) per interval, then a count of the ones left out; 0 = log every line."},
    {.key = "publisher_threads", .type = RCI_CFG_UINT, .def = "1", .min = 1,
     .max = RCI_MAX_PUBLISHER_THREADS, RCI_CFG_FIELD(T, publisher_threads),
     .help = "Threads that send chunks to subscribers. Thread i listens on fabric.port + i and serves every tag: a subscriber connects to any one of these ports."},
    {.key = "queue_size", .type = RCI_CFG_UINT, .def = "4096", .min = 16, .max = 1u << 24,
     .flags = RCI_CFG_F_POW2, RCI_CFG_FIELD(T, queue_size),
     .help = "Entries of each queue from a card's readout to a publisher thread; when full the readout waits (backpressure)."},
    {.key = "slow_policy", .type = RCI_CFG_ENUM, .def = "block", .choices = "block|drop",
     RCI_CFG_FIELD(T, slow_policy),
     .help = "A subscriber that cannot take a chunk: block (the ring fills, the card stalls) or drop (its share is dropped and counted)."},
    {.key = "slow_drop_after", .type = RCI_CFG_DURATION, .def = "100ms", .min = 0, .max = 600000000000ull,
     RCI_CFG_FIELD(T, slow_drop_after_ns),
     .help = "drop: new chunks for a subscriber whose oldest share is this old are dropped (counted) while it catches up; 0 = off (README, Slow subscribers)."},
    {.key = "slow_cut_after", .type = RCI_CFG_DURATION, .def = "500ms", .min = 0, .max = 600000000000ull,
     RCI_CFG_FIELD(T, slow_cut_after_ns),
     .help = "drop: a subscriber whose oldest share is this old is cut off (counted, logged); keep it below ring_size / rate, the ring's fill time; 0 = never."},
    {.key = "block_cut_after", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 600000000000ull,
     RCI_CFG_FIELD(T, block_cut_after_ns),
     .help = "block: a subscriber whose oldest share is this old is cut off (counted, logged): how long one subscriber may stall the card; 0 = no bound."},
    {.key = "mode", .type = RCI_CFG_ENUM, .def = "zerocopy", .choices = "zerocopy|buffered|auto",
     RCI_CFG_FIELD(T, publish_mode),
     .help = "Send chunks from the ring (zerocopy), copied into pages (buffered), or auto: buffered below buffered_threshold, else zero copy or gather-copied (bounce_buffers)."},
    {.key = "buffered_threshold", .type = RCI_CFG_SIZE, .def = "16k", .min = 1, .max = 64ull << 20,
     RCI_CFG_FIELD(T, buffered_threshold),
     .help = "mode = auto: chunks smaller than this are sent buffered."},
    {.key = "wait_subscribers", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = 4096,
     RCI_CFG_FIELD(T, wait_subscribers),
     .help = "Start the cards only once this many subscribers have subscribed; 0 = start at once."},
    {.key = "linger", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 600000000000ull,
     RCI_CFG_FIELD(T, linger_ns),
     .help = "After the cards finished their run: keep serving until every subscriber left, at most this long (0 = exit at once; not on SIGINT/SIGTERM)."},
    {.key = "fault_publisher_hang_after", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 3600000000000ull,
     RCI_CFG_FIELD(T, fault_publisher_hang_after_ns),
     .help = "For tests only: publisher thread 0 stops making progress this long after it started, until the daemon stops (the systemd watchdog test); 0 = never."},
};

const struct rci_cfg_section rci_cfg_section_readout = {
    .name = "readout",
    .repeated = false,
    .help = "The daemon as a whole.",
    .keys = readout_keys,
    .nkeys = sizeof readout_keys / sizeof readout_keys[0],
    .cfg_offset = offsetof(struct rci_config, daemon),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
