/* SPDX-License-Identifier: BSD-3-Clause */
/* daemon_announce.c — one discovery entry per publisher thread of the
 * daemon (net/README.md, "Discovery"): tag ranges of its cards, the address
 * and port subscribers connect to, provider, endpoint, send mode, and who
 * (daemon id, host, pid, start time). */
#include "tools/daemon_announce.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "readout/readout.h"
#include "tools/log.h"

static const char *const mode_names[] = {"zerocopy", "buffered", "auto"};

/* What a subscriber connects to: the listening address, or this host's name
 * when the daemon listens on every address. */
static void announced_host(const struct rci_config *cfg, char *buf, size_t len)
{
    const char *a = cfg->fabric.address;
    if (strcmp(a, "0.0.0.0") != 0 && strcmp(a, "::") != 0) {
        snprintf(buf, len, "%s", a);
        return;
    }
    gethostname(buf, len - 1);
    buf[len - 1] = '\0';
}

/* Everything but the thread: the same for every publisher of the daemon. */
static void fill_daemon(const struct rci_config *cfg, unsigned nthreads, struct rci_disc_entry *e)
{
    memset(e, 0, sizeof *e);
    gethostname(e->hostname, sizeof e->hostname - 1);
    e->pid = getpid();
    e->start_time_ms = rci_disc_wall_ms();
    snprintf(e->daemon_id, sizeof e->daemon_id, "%.60s-%lld-%llu", e->hostname, (long long)e->pid,
             (unsigned long long)e->start_time_ms);
    e->threads = nthreads;
    announced_host(cfg, e->host, sizeof e->host);
    snprintf(e->provider, sizeof e->provider, "%s", cfg->fabric.provider);
    snprintf(e->endpoint, sizeof e->endpoint, "%s", cfg->fabric.endpoint == RCI_EP_RDM ? "rdm" : "msg");
    snprintf(e->deliveries, sizeof e->deliveries, "%s%s", mode_names[cfg->daemon.publish_mode % 3],
             cfg->nmodes ? "+rules" : "");
    /* The e-links a card will use are not known: its whole 11-bit e-link space. */
    e->nranges = cfg->ncards < RCI_DISC_MAX_RANGES ? cfg->ncards : RCI_DISC_MAX_RANGES;
    for (unsigned i = 0; i < e->nranges; i++) {
        e->first[i] = cfg->card[i].tag_base;
        e->last[i] = cfg->card[i].tag_base + (RCI_READOUT_MAX_ELINKS - 1);
    }
}

struct rci_announce *rci_daemon_announce_start(const struct rci_config *cfg, unsigned nthreads)
{
    if (!cfg->discovery.url[0] || nthreads == 0)
        return NULL;
    static struct rci_disc_entry entries[RCI_MAX_PUBLISHER_THREADS];
    if (nthreads > RCI_MAX_PUBLISHER_THREADS)
        nthreads = RCI_MAX_PUBLISHER_THREADS;
    fill_daemon(cfg, nthreads, &entries[0]);
    for (unsigned i = 0; i < nthreads; i++) {
        entries[i] = entries[0];
        entries[i].thread = i;
        entries[i].port = (uint16_t)(cfg->fabric.port + i);
    }
    char err[512] = "";
    struct rci_announce *a = NULL;
    if (rci_announce_start(&cfg->discovery, entries, nthreads, rci_log_hook(), &a, err, sizeof err)) {
        rci_error("discovery: %s; running without it", err);
        return NULL;
    }
    rci_info("discovery: announcing %u publisher%s as %s at %s", nthreads, nthreads == 1 ? "" : "s",
             entries[0].daemon_id, cfg->discovery.url);
    return a;
}

void rci_daemon_announce_json(struct rci_announce *a, FILE *f)
{
    struct rci_announce_stats st = {0};
    if (a)
        rci_announce_get_stats(a, &st);
    fprintf(f, ",\"discovery\":{\"enabled\":%s,\"announces\":%" PRIu64 ",\"refreshes\":%" PRIu64
               ",\"failures\":%" PRIu64 ",\"outages\":%" PRIu64 ",\"lease_lost\":%" PRIu64 ",\"up\":%d}",
            a ? "true" : "false", st.announces, st.refreshes, st.failures, st.outages, st.lease_lost, st.up);
}
