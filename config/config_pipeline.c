/* SPDX-License-Identifier: BSD-3-Clause */
/* config_pipeline.c — the pipeline's params struct from a loaded
 * configuration: [readout]'s publishing keys, [mode.N], [fabric]. */
#include "config/config.h"

#include <string.h>

void rci_config_pipeline_params(const struct rci_config *cfg, struct rci_pipeline_params *p)
{
    const struct rci_daemon_params *d = &cfg->daemon;
    memset(p, 0, sizeof *p);
    p->publisher_threads = d->publisher_threads;
    p->queue_size = d->queue_size;
    p->slow_policy = d->slow_policy;
    p->publish_mode = d->publish_mode;
    p->buffered_threshold = d->buffered_threshold;
    p->slow_drop_after_ns = d->slow_drop_after_ns;
    p->slow_cut_after_ns = d->slow_cut_after_ns;
    p->block_cut_after_ns = d->block_cut_after_ns;
    p->block_backlog = d->block_backlog;
    p->stats_interval_ns = d->stats_interval_ns;
    p->fault_hang_after_ns = d->fault_publisher_hang_after_ns;
    p->fault_hang_through_stop = d->fault_publisher_hang_through_stop;
    p->nmodes = cfg->nmodes < RCI_MAX_MODE_RULES ? cfg->nmodes : RCI_MAX_MODE_RULES;
    memcpy(p->mode_rule, cfg->mode_rule, sizeof p->mode_rule);
    p->fabric = cfg->fabric;
}
