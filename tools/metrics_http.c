/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_http.c — GET /metrics through libmicrohttpd (metrics_http.h). */
#include "tools/metrics_http.h"
#include "common/errbuf.h"

#include <errno.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define MAX_CONNECTIONS 16u
#define CONNECTION_TIMEOUT_S 10u

struct rci_metrics_http {
    struct MHD_Daemon *mhd;
    rci_metrics_collect_fn collect;
    void *ctx;
    _Atomic uint64_t ok, failed;
};

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
                              const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    return answer(conn, status, "text/plain; charset=utf-8", text, strlen(text));
}

static enum MHD_Result scrape(struct rci_metrics_http *m, struct MHD_Connection *conn)
{
    struct rci_prom p;
    rci_prom_init(&p);
    int rc = m->collect(m->ctx, &p);
    const char *why = rci_prom_error(&p);
    enum MHD_Result res;
    if (rc != 0 || why) {
        char msg[320];
        snprintf(msg, sizeof msg, "metrics could not be collected: %s\n", why ? why : strerror(-rc));
        atomic_fetch_add(&m->failed, 1);
        res = answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    } else {
        size_t len;
        const char *text = rci_prom_text(&p, &len);
        atomic_fetch_add(&m->ok, 1);
        res = answer(conn, MHD_HTTP_OK, CONTENT_TYPE, text, len);
    }
    rci_prom_fini(&p);
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    struct rci_metrics_http *m = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    /* A GET carries no body; one that does is answered once it is read. */
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    (void)state;
    if (strcmp(url, "/metrics") == 0)
        return scrape(m, conn);
    if (strcmp(url, "/") == 0)
        return answer(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                      "<html><body><a href=\"/metrics\">ringcast metrics</a></body></html>\n", 66);
    return answer_text(conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
}

/* "HOST:PORT" or "[V6]:PORT" into host and port strings. */
static int split_listen(const char *listen, char *host, size_t hostlen, const char **port)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || !colon[1])
        return -EINVAL;
    const char *h = listen;
    size_t n = (size_t)(colon - listen);
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']')
            return -EINVAL;
        h++;
        n -= 2;
    }
    if (n >= hostlen)
        return -EINVAL;
    memcpy(host, h, n);
    host[n] = '\0';
    *port = colon + 1;
    return 0;
}

int rci_metrics_http_start(const char *listen, rci_metrics_collect_fn collect, void *ctx,
                           struct rci_metrics_http **out, char *err, size_t errlen)
{
    char host[128];
    const char *port;
    if (split_listen(listen, host, sizeof host, &port) != 0) {
        rci_set_err(err, errlen, "metrics.listen = %s: not HOST:PORT", listen);
        return -EINVAL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int grc = getaddrinfo(host, port, &hints, &ai);
    if (grc != 0) {
        rci_set_err(err, errlen, "metrics.listen = %s: %s", listen, gai_strerror(grc));
        return -EINVAL;
    }
    struct rci_metrics_http *m = calloc(1, sizeof *m);
    if (!m) {
        freeaddrinfo(ai);
        return -ENOMEM;
    }
    m->collect = collect;
    m->ctx = ctx;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    m->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                              MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
                              CONNECTION_TIMEOUT_S, MHD_OPTION_END);
    int saved = errno;
    freeaddrinfo(ai);
    if (!m->mhd) {
        rci_set_err(err, errlen, "metrics.listen = %s: cannot serve HTTP there (%s)", listen,
                    saved ? strerror(saved) : "libmicrohttpd refused");
        free(m);
        return -EADDRNOTAVAIL;
    }
    *out = m;
    return 0;
}

void rci_metrics_http_counts(const struct rci_metrics_http *m, uint64_t *ok, uint64_t *failed)
{
    *ok = m ? atomic_load(&m->ok) : 0;
    *failed = m ? atomic_load(&m->failed) : 0;
}

void rci_metrics_http_stop(struct rci_metrics_http *m)
{
    if (!m)
        return;
    MHD_stop_daemon(m->mhd);
    free(m);
}
