/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_announce.h — ringcast-readout's discovery wiring: the daemon's
 * publisher threads as discovery entries, announced by net/announce.c. */
#ifndef RCI_DAEMON_ANNOUNCE_H
#define RCI_DAEMON_ANNOUNCE_H
#include <stdio.h>
#include "config/config.h"
#include "net/announce.h"

/* Start announcing the nthreads publisher threads at [discovery] url; NULL
 * when no url is set or announcing could not start (logged). An
 * unreachable backend is not a failure: the announcing thread retries. */
struct rci_announce *rci_daemon_announce_start(const struct rci_config *cfg, unsigned nthreads);
/* ,"discovery":{...} for --stats-json (a NULL a: "enabled":false). */
void rci_daemon_announce_json(struct rci_announce *a, FILE *f);

#endif
