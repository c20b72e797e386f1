/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-ls — who serves which tags: the publishers announced at a
 * discovery URL (net/README.md, "Discovery"), as a table or as JSON.
 *
 *   ringcast-ls URL [--prefix P] [--json]
 *
 * URL is dir:PATH or etcd://HOST:PORT[,HOST:PORT...], as in the daemons'
 * [discovery] url. Exit status: 0 listed (also when nobody is announced),
 * 1 the discovery backend could not be read, 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/discovery.h"

#define LS_MAX_ENTRIES 4096u

static void usage(FILE *f)
{
    fprintf(f, "usage: ringcast-ls URL [--prefix P] [--json]\n"
               "  URL           dir:PATH or etcd://HOST:PORT[,HOST:PORT...]\n"
               "  --prefix P    etcd key prefix (default /ringcast/)\n"
               "  --json        one JSON object instead of the table\n");
}

static int by_host_port(const void *x, const void *y)
{
    const struct rci_disc_entry *a = x, *b = y;
    int c = strcmp(a->host, b->host);
    return c ? c : (int)a->port - (int)b->port;
}

/* "2026-11-24 01:02:03" (UTC) from ms since the epoch. */
static const char *since(uint64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

static void print_tags(const struct rci_disc_entry *e)
{
    for (unsigned r = 0; r < e->nranges; r++)
        printf("%s0x%" PRIx64 "-0x%" PRIx64, r ? "," : "", e->first[r], e->last[r]);
}

static void print_table(const struct rci_disc_entry *e, size_t n)
{
    printf("%-24s %5s %-12s %-3s %-10s %-19s %-34s %s\n", "HOST", "PORT", "PROVIDER", "EP", "DELIVERY",
           "SINCE (UTC)", "DAEMON.THREAD", "TAGS");
    for (size_t i = 0; i < n; i++) {
        char buf[32];
        printf("%-24s %5u %-12s %-3s %-10s %-19s %s.%-*u ", e[i].host, (unsigned)e[i].port, e[i].provider,
               e[i].endpoint, e[i].deliveries, since(e[i].start_time_ms, buf, sizeof buf), e[i].daemon_id,
               (int)(33 - (strlen(e[i].daemon_id) < 33 ? strlen(e[i].daemon_id) : 33)), e[i].thread);
        print_tags(&e[i]);
        putchar('\n');
    }
}

static void print_json(const struct rci_disc_entry *e, size_t n, const struct rci_disc_list_stats *st)
{
    printf("{\"publishers\":[");
    for (size_t i = 0; i < n; i++) {
        char *text = rci_disc_entry_to_json(&e[i]);
        printf("%s%s", i ? "," : "", text ? text : "null");
        free(text);
    }
    printf("],\"skipped\":{\"malformed\":%" PRIu64 ",\"foreign\":%" PRIu64 ",\"stale\":%" PRIu64
           ",\"truncated\":%" PRIu64 "}}\n", st->malformed, st->foreign, st->stale, st->truncated);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"prefix", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct rci_discovery_params p = {.prefix = "/ringcast/", .ttl_ns = 5000000000ull};
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        } else if (c == 'j') {
            json = 1;
        } else if (c == 'p' && optarg[0] == '/' && strlen(optarg) < sizeof p.prefix) {
            strcpy(p.prefix, optarg);
        } else {
            fprintf(stderr, "ringcast-ls: bad option or argument '%s' (try --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind != argc - 1 || strlen(argv[optind]) >= sizeof p.url) {
        fprintf(stderr, "ringcast-ls: expected one URL (try --help)\n");
        return 2;
    }
    strcpy(p.url, argv[optind]);
    char err[512];
    struct rci_disc *d;
    if (rci_disc_open(&p, &d, err, sizeof err) != 0) {
        fprintf(stderr, "ringcast-ls: %s\n", err);
        return 2;
    }
    static struct rci_disc_entry entries[LS_MAX_ENTRIES];
    size_t n = 0;
    struct rci_disc_list_stats st;
    int rc = rci_disc_list(d, entries, LS_MAX_ENTRIES, &n, &st, err, sizeof err);
    rci_disc_close(d);
    if (rc) {
        fprintf(stderr, "ringcast-ls: %s\n", err);
        return 1;
    }
    qsort(entries, n, sizeof entries[0], by_host_port);
    if (json)
        print_json(entries, n, &st);
    else
        print_table(entries, n);
    if (!json && st.malformed + st.foreign + st.stale + st.truncated)
        fprintf(stderr, "ringcast-ls: skipped %" PRIu64 " malformed, %" PRIu64 " foreign, %" PRIu64
                " stale entries%s\n", st.malformed, st.foreign, st.stale,
                st.truncated ? " (and more than fit the list)" : "");
    return 0;
}
