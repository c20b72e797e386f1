/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_daemon.h — the running part of ringcast-readout: cards, DMA rings
 * and readout threads wired together, statistics, clean shutdown. */
#ifndef RCI_READOUT_DAEMON_H
#define RCI_READOUT_DAEMON_H
#include "config/config.h"

#include <stdio.h>

/* Runs until every card finished its fixed run and everything was drained,
 * or until SIGINT/SIGTERM. Writes the final statistics as one JSON object to
 * stats (opened by the caller before the run, so that a path that cannot be
 * written is refused at start; named stats_name in messages; the caller
 * closes it) when it is not NULL. Returns the process exit status:
 * RCI_DAEMON_EXIT_STUCK when a thread was stuck (readout.thread_stuck_after).
 * A publisher thread stuck at the stop is still running then, inside the
 * pipeline and rings this left in place: end the process at once with
 * _exit (exit()'s handlers would unload libfabric under it). */
#define RCI_DAEMON_EXIT_STUCK 3
int rci_daemon_run(const struct rci_config *cfg, FILE *stats, const char *stats_name);
/* Where cfg came from (the file, NULL for defaults, and the -o overrides):
 * a reload (SIGHUP, `ringcast-ctl reload`) loads them again; the hint for a
 * sim-process card names the overrides. The strings must outlive the run. */
void rci_daemon_set_source(const char *file, const char *const *overrides, unsigned noverrides);

#endif
