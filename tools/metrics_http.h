/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_http.h — the HTTP side of [metrics] listen: libmicrohttpd serves
 * GET /metrics (the Prometheus text format, built by a collect callback with
 * common/prom_text.h on the server's own thread at each scrape) and a short
 * page at /. Nothing runs on the daemon's data path: the callback reads the
 * counters the threads keep anyway (atomics, and the publisher threads'
 * views), at scrape time only. */
#ifndef RCI_METRICS_HTTP_H
#define RCI_METRICS_HTTP_H
#include <stddef.h>
#include <stdint.h>

#include "common/prom_text.h"

/* Fills the document; returns 0, or -errno (the scrape gets a 500). Runs on
 * the server's thread, one scrape at a time. */
typedef int (*rci_metrics_collect_fn)(void *ctx, struct rci_prom *p);

struct rci_metrics_http;

/* listen: HOST:PORT ([IPv6]:PORT); the host is resolved here. 0 or -errno
 * with the reason in err. */
int  rci_metrics_http_start(const char *listen, rci_metrics_collect_fn collect, void *ctx,
                            struct rci_metrics_http **out, char *err, size_t errlen);
/* Scrapes answered with 200, and those answered with 500 (collect failed). */
void rci_metrics_http_counts(const struct rci_metrics_http *m, uint64_t *ok, uint64_t *failed);
/* Stops the server thread (a scrape in progress finishes first). NULL is fine. */
void rci_metrics_http_stop(struct rci_metrics_http *m);

#endif
