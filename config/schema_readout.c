/* schema_readout.c — the [readout] section: the daemon as a whole.
 * Rows follow the pattern described in schema_fabric.c. */
#include "config/schema.h"

#define T struct rc_daemon_params

static const struct rc_cfg_key readout_keys[] = {
    {.key = "log_level", .type = RC_CFG_ENUM, .def = "info", .choices = "error|warn|info|debug",
     RC_CFG_FIELD(T, log_level),
     .help = "Messages less severe than this are not logged."},
    {.key = "stats_interval", .type = RC_CFG_DURATION, .def = "1s", .min = 0,
     .max = 3600000000000ull, RC_CFG_FIELD(T, stats_interval_ns),
     .help = "Log the statistics this often; 0 = never."},
    {.key = "publisher_threads", .type = RC_CFG_UINT, .def = "1", .min = 1, .max = 64,
     RC_CFG_FIELD(T, publisher_threads),
     .help = "Threads that send chunks to subscribers (reserved: the daemon does not publish yet)."},
    {.key = "queue_size", .type = RC_CFG_UINT, .def = "4096", .min = 16, .max = 1u << 24,
     .flags = RC_CFG_F_POW2, RC_CFG_FIELD(T, queue_size),
     .help = "Entries of the readout -> publisher queue (reserved: the daemon does not publish yet)."},
};

const struct rc_cfg_section rc_cfg_section_readout = {
    .name = "readout",
    .repeated = false,
    .help = "The daemon as a whole.",
    .keys = readout_keys,
    .nkeys = sizeof readout_keys / sizeof readout_keys[0],
    .cfg_offset = offsetof(struct rc_config, daemon),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
