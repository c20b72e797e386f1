/* SPDX-License-Identifier: BSD-3-Clause */
/* client_discover.c — the public subscriber by tags (ringcast/discover.h)
 * over net/multi_sub.h: public types mapped onto the internal ones. Chunks
 * go straight through (one extra call); events carry a public copy of the
 * publisher's entry, made on the stack (events are rare). */
#include "ringcast/discover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/multi_sub.h"

_Static_assert((int)RC_DISCOVER_FOUND == (int)RCI_MSUB_ADDED && (int)RC_DISCOVER_GONE == (int)RCI_MSUB_GONE &&
               (int)RC_DISCOVER_RESTARTED == (int)RCI_MSUB_RESTARTED &&
               (int)RC_DISCOVER_CONNECTED == (int)RCI_MSUB_CONNECTED &&
               (int)RC_DISCOVER_DISCONNECTED == (int)RCI_MSUB_DISCONNECTED, "event values");

struct rc_discover {
    struct rci_msub *m;
    struct rc_discover_params p;
};

void rc_discover_params_default(struct rc_discover_params *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->prefix, sizeof p->prefix, "/ringcast/");
    rc_sub_params_default(&p->sub);
    p->refresh_ns = 1000000000ull;
}

static void public_view(const struct rci_msub_publisher *in, struct rc_discover_publisher *out)
{
    const struct rci_disc_entry *e = &in->entry;
    memset(out, 0, sizeof *out);
    snprintf(out->host, sizeof out->host, "%s", e->host);
    out->port = e->port;
    snprintf(out->provider, sizeof out->provider, "%s", e->provider);
    snprintf(out->endpoint, sizeof out->endpoint, "%s", e->endpoint);
    snprintf(out->deliveries, sizeof out->deliveries, "%s", e->deliveries);
    snprintf(out->daemon_id, sizeof out->daemon_id, "%s", e->daemon_id);
    out->start_time_ms = e->start_time_ms;
    out->thread = e->thread;
    out->threads = e->threads;
    out->nranges = in->nranges;
    out->first = in->first;
    out->last = in->last;
    out->last_error = rc_sub_last_error(in->sub);
}

static void on_data(void *ctx, const struct rci_msub_publisher *p, uint64_t tag, uint32_t flags,
                    const void *data, size_t len)
{
    (void)p;
    struct rc_discover *d = ctx;
    d->p.on_data(d->p.ctx, tag, flags, data, len);
}

static void on_view(void *ctx, const struct rci_msub_publisher *p, struct rc_view *view)
{
    (void)p;
    struct rc_discover *d = ctx;
    d->p.on_view(d->p.ctx, view);
}

static void on_event(void *ctx, enum rci_msub_event ev, const struct rci_msub_publisher *p)
{
    struct rc_discover *d = ctx;
    if (!d->p.on_event)
        return;
    struct rc_discover_publisher pub;
    public_view(p, &pub);
    d->p.on_event(d->p.ctx, (enum rc_discover_event)ev, &pub);
}

int rc_discover_create(const struct rc_discover_params *p, const uint64_t *first, const uint64_t *last,
                       size_t count, struct rc_discover **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!p || (!p->on_data && !p->on_view) || !first || !last) {
        rci_set_err(err, errlen, "rc_discover_create: params, on_data or on_view, and the tag ranges are required");
        return -EINVAL;
    }
    struct rc_discover *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->p = *p;
    struct rci_msub_params mp = {.sub = p->sub, .refresh_ns = p->refresh_ns, .ctx = d,
                                 .on_data = p->on_data ? on_data : NULL, .on_view = p->on_view ? on_view : NULL,
                                 .on_event = on_event};
    snprintf(mp.disc.url, sizeof mp.disc.url, "%s", p->url);
    snprintf(mp.disc.prefix, sizeof mp.disc.prefix, "%s", p->prefix);
    mp.disc.ttl_ns = 5000000000ull;   /* unused by readers: each entry carries its own ttl */
    int rc = rci_msub_create(&mp, first, last, count, &d->m, err, errlen);
    if (rc) {
        free(d);
        return rc == -ENOENT ? -EINVAL : rc;   /* an empty url */
    }
    *out = d;
    return 0;
}

int rc_discover_poll(struct rc_discover *d, uint64_t timeout_ns) { return rci_msub_poll(d->m, timeout_ns); }

void rc_discover_get_stats(const struct rc_discover *d, struct rc_discover_stats *st)
{
    struct rci_msub_stats ms;
    rci_msub_get_stats(d->m, &ms);
    *st = (struct rc_discover_stats){
        .publishers = ms.publishers, .found = ms.appeared, .gone = ms.gone, .restarts = ms.restarts,
        .lookups = ms.lookups, .lookup_failures = ms.lookup_failures, .malformed = ms.malformed,
        .foreign = ms.foreign, .stale = ms.stale, .connect_setup_failures = ms.create_failures,
        .total = ms.total, .over_limit = ms.publishers_over_limit, .parked = ms.parked, .parks = ms.parks,
    };
}

size_t rc_discover_count(const struct rc_discover *d) { return rci_msub_count(d->m); }

int rc_discover_publisher(const struct rc_discover *d, size_t i, struct rc_discover_publisher *p,
                          struct rc_sub_stats *st)
{
    const struct rci_msub_publisher *mp = rci_msub_publisher(d->m, i);
    if (!mp)
        return -ENOENT;
    if (p)
        public_view(mp, p);
    if (st)
        rc_sub_get_stats(mp->sub, st);
    return 0;
}

const char *rc_discover_last_error(const struct rc_discover *d) { return rci_msub_last_error(d->m); }

void rc_discover_destroy(struct rc_discover *d)
{
    if (!d)
        return;
    rci_msub_destroy(d->m);
    free(d);
}
