/* SPDX-License-Identifier: BSD-3-Clause */
/* announce.h — a thread that keeps a daemon's discovery entries announced
 * (net/README.md, "Discovery"): it announces at start, refreshes every ttl/3
 * (etcd: lease keepalive; dir: rewrite with a new timestamp) and withdraws
 * at stop. When the backend cannot be reached (etcd down, at start or later)
 * it logs once, counts every failed attempt and tries again every ttl/3; when
 * it is back it announces everything again and says so. It never blocks the
 * caller: the readout and the publishers go on regardless. */
#ifndef RCI_ANNOUNCE_H
#define RCI_ANNOUNCE_H
#include <stddef.h>
#include <stdint.h>
#include "common/log_hook.h"
#include "net/discovery.h"

struct rci_announce_stats {
    uint64_t announces;     /* times every entry was (re)put: 1 + comebacks */
    uint64_t refreshes;     /* successful refreshes (keepalives, rewrites) */
    uint64_t failures;      /* attempts that failed (etcd unreachable, disk full) */
    uint64_t outages;       /* times the backend went from reachable to not */
    uint64_t lease_lost;    /* etcd: the lease had expired when etcd was back */
    int up;                 /* 1 while the entries are known to be announced */
};

struct rci_announce;

/* Copies the entries; starts the thread. Fails only for a bad URL or no
 * thread: an unreachable backend is not an error here. */
int  rci_announce_start(const struct rci_discovery_params *p, const struct rci_disc_entry *e, size_t n,
                        struct rci_log_hook log, struct rci_announce **out, char *err, size_t errlen);
void rci_announce_get_stats(struct rci_announce *a, struct rci_announce_stats *st);
/* Withdraw the entries (a clean exit), stop the thread, free. NULL is fine. */
void rci_announce_stop(struct rci_announce *a);

#endif
