/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_notify.c — systemd readiness, status and watchdog (daemon_notify.h). */
#include "tools/daemon_notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "tools/log.h"

void rci_notify_init(struct rci_notify *n)
{
    memset(n, 0, sizeof *n);
    const char *sock = getenv("NOTIFY_SOCKET");
    n->enabled = sock && sock[0];
    uint64_t usec = 0;
    if (n->enabled && sd_watchdog_enabled(0, &usec) > 0)
        n->watchdog_ns = usec * 1000u;
    if (n->enabled)
        rci_debug("systemd: notify socket %s, watchdog %s", sock, n->watchdog_ns ? "on" : "off");
}

/* STATUS= takes one line: a newline would end the assignment. */
static void send_with_status(struct rci_notify *n, const char *first, const char *status)
{
    if (!n->enabled)
        return;
    char msg[1024];
    size_t used = (size_t)snprintf(msg, sizeof msg, "%s%sSTATUS=", first, first[0] ? "\n" : "");
    for (const char *s = status; *s && used + 1 < sizeof msg; s++)
        msg[used++] = *s == '\n' ? ' ' : *s;
    msg[used] = '\0';
    int rc = sd_notify(0, msg);
    if (rc < 0)
        rci_warn("systemd: sd_notify failed: %s", strerror(-rc));
}

void rci_notify_ready(struct rci_notify *n, const char *status)
{
    send_with_status(n, "READY=1", status);
}

void rci_notify_status(struct rci_notify *n, const char *status)
{
    send_with_status(n, "", status);
}

void rci_notify_stopping(struct rci_notify *n, const char *status)
{
    send_with_status(n, "STOPPING=1", status);
    n->watchdog_ns = 0; /* systemd stops watching once it was told */
}

void rci_notify_watchdog(struct rci_notify *n, uint64_t now_ns, const uint64_t *beats,
                         const char *const *names, unsigned count)
{
    if (!n->enabled || n->watchdog_ns == 0 || now_ns - n->last_check_ns < n->watchdog_ns / 2)
        return;
    n->last_check_ns = now_ns;
    if (count > RCI_NOTIFY_MAX_THREADS)
        count = RCI_NOTIFY_MAX_THREADS;
    if (count != n->nbeats) { /* threads started: compare from the next check on */
        memcpy(n->last_beats, beats, count * sizeof *beats);
        n->nbeats = count;
        sd_notify(0, "WATCHDOG=1");
        n->pings++;
        return;
    }
    char stuck[512] = "";
    size_t used = 0;
    for (unsigned i = 0; i < count; i++) {
        if (beats[i] != n->last_beats[i])
            continue;
        int m = snprintf(stuck + used, sizeof stuck - used, "%s%s", used ? ", " : "", names[i]);
        if (m > 0 && (size_t)m < sizeof stuck - used)
            used += (size_t)m;
    }
    memcpy(n->last_beats, beats, count * sizeof *beats);
    if (!stuck[0]) {
        if (n->withholding)
            rci_info("systemd watchdog: every thread makes progress again");
        n->withholding = false;
        sd_notify(0, "WATCHDOG=1");
        n->pings++;
        return;
    }
    n->withheld++;
    if (!n->withholding)
        rci_error("systemd watchdog: no progress for %.1f s in %s: not telling systemd we are alive"
                  " (it restarts the service once WatchdogSec passes)", (double)n->watchdog_ns / 2e9, stuck);
    n->withholding = true;
}
