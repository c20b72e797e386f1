/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_metrics.c — the [metrics] section: the Prometheus endpoint of
 * ringcast-readout (tools/metrics_http.c). Rows follow the pattern described
 * in schema_fabric.c. */
#include "config/schema.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T struct rci_metrics_params

/* "" (off), or HOST:PORT with HOST an IPv4 address, [IPv6] or a host name
 * and PORT 1..65535. The name is resolved when the daemon starts. */
static int validate_listen(const char *text, char *why, size_t whylen)
{
    if (!text[0])
        return 0;
    const char *colon = strrchr(text, ':');
    const char *problem = NULL;
    char *end = NULL;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!colon || colon == text)
        problem = "write HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464), or nothing to turn metrics off";
    else if (!colon[1] || *end || port < 1 || port > 65535 || colon[1] == '+' || colon[1] == '-')
        problem = "the port after the last ':' must be 1..65535";
    else if (text[0] == '[') {
        char host[64];
        size_t n = (size_t)(colon - text);
        unsigned char buf[16];
        if (n < 3 || text[n - 1] != ']' || n - 2 >= sizeof host)
            problem = "an IPv6 address is written [ADDRESS]:PORT";
        else {
            memcpy(host, text + 1, n - 2);
            host[n - 2] = '\0';
            if (inet_pton(AF_INET6, host, buf) != 1)
                problem = "not an IPv6 address between the brackets";
        }
    } else if (memchr(text, ':', (size_t)(colon - text))) {
        problem = "an IPv6 address is written [ADDRESS]:PORT";
    } else if (strcspn(text, " \t/") < (size_t)(colon - text)) {
        problem = "a host name has no spaces or slashes";
    }
    if (!problem)
        return 0;
    snprintf(why, whylen, "%s", problem);
    return -EINVAL;
}

static const struct rci_cfg_key metrics_keys[] = {
    {.key = "listen", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 127,
     RCI_CFG_FIELD(T, listen), .validate = validate_listen,
     .help = "Serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464; [::1]:9464 for IPv6); empty = off."},
    {.key = "hold_after_run", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 3600000000000ull,
     RCI_CFG_FIELD(T, hold_after_run_ns),
     .help = "After a run that finished by itself (fixed run length): keep serving the final figures this long, or until SIGINT/SIGTERM, so that a last scrape sees them; 0 = exit at once."},
};

const struct rci_cfg_section rci_cfg_section_metrics = {
    .name = "metrics",
    .repeated = false,
    .help = "Prometheus metrics of the daemon (every counter of --stats-json, live).",
    .keys = metrics_keys,
    .nkeys = sizeof metrics_keys / sizeof metrics_keys[0],
    .cfg_offset = offsetof(struct rci_config, metrics),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
