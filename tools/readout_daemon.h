/* readout_daemon.h — the running part of ringcast-readout: cards, DMA rings
 * and readout threads wired together, statistics, clean shutdown. */
#ifndef RC_READOUT_DAEMON_H
#define RC_READOUT_DAEMON_H
#include "config/config.h"

/* Runs until every card finished its fixed run and everything was drained,
 * or until SIGINT/SIGTERM. Writes the final statistics as one JSON object to
 * stats_json when it is not NULL. Returns the process exit status. */
int rc_daemon_run(const struct rc_config *cfg, const char *stats_json);

#endif
