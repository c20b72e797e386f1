/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_notify.h — ringcast-readout under systemd (Type=notify): READY=1
 * once the cards run and the publishers listen, STATUS= a one-line summary
 * every stats interval, STOPPING=1 when the run ends, and WATCHDOG=1 (when
 * the unit sets WatchdogSec=) only while every readout and publisher thread
 * makes progress. Through libsystemd's sd_notify; without NOTIFY_SOCKET
 * (not started by systemd) every call does nothing.
 *
 * Progress: a thread went round its loop since the last check. A readout
 * thread polls its card at least every poll_sleep even when no data comes
 * (a card that is silent, or a ringcast-sim that is SIGSTOPped, is not a
 * stuck thread: its loop goes on, and the firmware check reports the card);
 * under backpressure it offers the chunk again each turn. A publisher thread
 * turns at least every 200 us with or without work. So a thread whose count
 * stands still for half the watchdog interval is stuck: blocked in a call
 * that does not return, deadlocked, or spinning inside one turn. Then the
 * daemon stops pinging, logs which thread, and systemd restarts it. */
#ifndef RCI_DAEMON_NOTIFY_H
#define RCI_DAEMON_NOTIFY_H
#include <stdbool.h>
#include <stdint.h>

#define RCI_NOTIFY_MAX_THREADS 48u

struct rci_notify {
    bool enabled;                 /* NOTIFY_SOCKET was set */
    uint64_t watchdog_ns;         /* WatchdogSec, 0 = none */
    uint64_t last_check_ns;
    unsigned nbeats;
    uint64_t last_beats[RCI_NOTIFY_MAX_THREADS];
    bool withholding;             /* a thread was stuck at the last check */
    uint64_t pings, withheld;     /* WATCHDOG=1 sent; checks that sent none */
};

void rci_notify_init(struct rci_notify *n);
void rci_notify_ready(struct rci_notify *n, const char *status);
void rci_notify_status(struct rci_notify *n, const char *status);
void rci_notify_stopping(struct rci_notify *n, const char *status);
/* Every tick: each half watchdog interval, beats[i] (a count that grows while
 * thread i makes progress, named names[i]) is compared with the previous
 * check's; all grew: WATCHDOG=1. The first check after the set of threads
 * changed (count differs) only records. */
void rci_notify_watchdog(struct rci_notify *n, uint64_t now_ns, const uint64_t *beats,
                         const char *const *names, unsigned count);

#endif
