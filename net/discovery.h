/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery.h — announcing publishers and finding them (net/README.md,
 * "Discovery"). One entry per publisher thread says what it serves (tag
 * ranges), where (host, port, provider, endpoint), how (deliveries) and who
 * (daemon id, host name, pid, start time). Two backends behind one interface,
 * chosen by the URL:
 *   dir:PATH            one JSON file per entry in PATH, written atomically
 *                       (temp file + rename), refreshed every ttl/3, removed
 *                       at withdraw; an entry not refreshed within ttl, or
 *                       whose pid is gone on this host, is stale.
 *   etcd://H:P[,H:P]    etcd's v3 JSON gateway (libcurl + jansson): a lease of
 *                       ttl, every entry put under prefix with it, kept alive
 *                       every ttl/3, revoked at withdraw.
 * Entries read back are validated; malformed or foreign ones (not our
 * format) are counted and skipped. Nothing here is thread-safe: one handle
 * per thread. Calls block for at most a few seconds (HTTP timeouts). */
#ifndef RCI_DISCOVERY_H
#define RCI_DISCOVERY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/discovery_params.h"

#define RCI_DISC_MAX_RANGES   16u     /* tag ranges per entry (one per card) */
#define RCI_DISC_ENTRY_MAX    4096u   /* bytes of one entry's JSON */
#define RCI_DISC_FORMAT       "ringcast-publisher-1"

struct rci_disc_entry {
    char daemon_id[96];     /* HOSTNAME-PID-STARTNS: unique per daemon run */
    char hostname[64];
    int64_t pid;
    uint64_t start_time_ms; /* wall clock, ms since the epoch */
    uint64_t refreshed_ms;  /* dir backend: last refresh (wall clock) */
    uint64_t ttl_ms;        /* the announcer's ttl: stale when not refreshed within it */
    unsigned thread, threads; /* publisher thread index, and how many the daemon runs */
    char host[128];         /* address subscribers connect to */
    uint16_t port;
    char provider[64];
    char endpoint[8];       /* "msg" or "rdm" */
    char deliveries[64];    /* "zerocopy", "buffered", "auto", plus per-range rules */
    unsigned nranges;
    uint64_t first[RCI_DISC_MAX_RANGES], last[RCI_DISC_MAX_RANGES];
};

struct rci_disc_list_stats {
    uint64_t entries;       /* valid entries returned */
    uint64_t malformed;     /* not JSON, or JSON that breaks a rule */
    uint64_t foreign;       /* JSON of another format (no/other "format") */
    uint64_t stale;         /* dir: not refreshed within ttl, or its pid gone */
    uint64_t truncated;     /* valid entries beyond the caller's array */
};

struct rci_disc;

/* Parse the URL (no I/O). -EINVAL with the reason for a bad URL; url "" is
 * -ENOENT (no discovery configured). */
int  rci_disc_open(const struct rci_discovery_params *p, struct rci_disc **out, char *err, size_t errlen);
void rci_disc_close(struct rci_disc *d);
const char *rci_disc_url(const struct rci_disc *d);

/* Announce (or refresh) entries: dir writes every file; etcd grants a lease
 * when it has none (or lost it), puts every entry, and on later calls only
 * keeps the lease alive (re-putting everything when the lease was gone).
 * 0, or -errno with the reason in err (etcd unreachable, disk full). */
int  rci_disc_announce(struct rci_disc *d, const struct rci_disc_entry *e, size_t n, char *err, size_t errlen);
/* etcd: times the lease was found expired (then re-granted); dir: 0. */
uint64_t rci_disc_leases_lost(const struct rci_disc *d);
/* Remove what announce put (files; etcd: revoke the lease). */
int  rci_disc_withdraw(struct rci_disc *d, char *err, size_t errlen);
/* Every valid entry, up to max. */
int  rci_disc_list(struct rci_disc *d, struct rci_disc_entry *out, size_t max, size_t *n,
                   struct rci_disc_list_stats *st, char *err, size_t errlen);

/* Entry <-> JSON text (jansson). to_json returns malloc'd text or NULL. */
char *rci_disc_entry_to_json(const struct rci_disc_entry *e);
/* 0; -EINVAL malformed (why says what); -ENOENT foreign (not our format). */
int  rci_disc_entry_from_json(const char *text, size_t len, struct rci_disc_entry *e, char *why, size_t whylen);
/* The entry's name below prefix / in the directory: DAEMONID.THREAD */
void rci_disc_entry_name(const struct rci_disc_entry *e, char *buf, size_t len);
/* Wall clock in ms since the epoch. */
uint64_t rci_disc_wall_ms(void);

/* Base64 (RFC 4648, with padding), for the etcd gateway's keys and values. */
size_t rci_base64_encode(const void *in, size_t len, char *out, size_t outlen);
/* -1 on a character outside the alphabet, bad padding or a non-canonical
 * last quantum (pad bits not 0). */
long rci_base64_decode(const char *in, size_t len, void *out, size_t outlen);

#endif
