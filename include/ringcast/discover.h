/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/discover.h — subscribe to tags, not to a publisher (public API,
 * in libringcast-client and libringcast). Overview: API.md, "Subscribing by
 * tags".
 *
 * The readout daemons announce each publisher thread at their [discovery]
 * url: "dir:PATH" (one file per publisher) or "etcd://HOST:PORT[,...]"
 * (etcd v3). An rc_discover looks the entries up (every refresh_ns), keeps
 * one rc_sub connection to each publisher serving any of the wanted tags
 * (one thread per daemon), subscribed to the part it serves, and follows
 * them: a publisher that appears is connected, one whose entry vanished and
 * that fell silent is dropped, a daemon that restarted is subscribed anew.
 * When discovery cannot be read, the connections stay as they are.
 *
 * Discovery is read by a thread of its own (a read may block while an etcd
 * host is down; the connections are never held up by it). Otherwise
 * single-threaded like rc_sub: the application calls rc_discover_poll() in
 * a loop and every callback runs inside it; no function may be called from
 * two threads at once, nor poll/destroy from a callback. */
#ifndef RINGCAST_DISCOVER_H
#define RINGCAST_DISCOVER_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/common.h"
#include "ringcast/sub.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rc_discover;

enum rc_discover_event {
    RC_DISCOVER_FOUND = 0,       /* a publisher serving wanted tags: connecting */
    RC_DISCOVER_GONE,            /* its entry vanished and it fell silent: dropped */
    RC_DISCOVER_RESTARTED,       /* a new daemon at an address seen before: its tags start anew */
    RC_DISCOVER_CONNECTED,       /* WELCOME from it */
    RC_DISCOVER_DISCONNECTED,    /* connection lost; reconnecting while its entry lives */
};

/* One publisher, as announced. first/last: the part of the wanted tag
 * ranges it serves (valid during the callback, or until the next poll). */
struct rc_discover_publisher {
    char host[128];
    uint16_t port;
    char provider[64];
    char endpoint[8];              /* "msg" or "rdm" */
    char deliveries[64];           /* "zerocopy", "buffered", "auto" (+rules) */
    char daemon_id[96];            /* HOSTNAME-PID-STARTMS */
    uint64_t start_time_ms;        /* wall clock, ms since the epoch */
    unsigned thread, threads;      /* publisher thread of its daemon, and how many it runs */
    size_t nranges;
    const uint64_t *first, *last;
    const char *last_error;        /* its connection's last problem (rc_sub_last_error), "" if none */
};

struct rc_discover_params {
    char url[256];                 /* "dir:PATH" or "etcd://HOST:PORT[,HOST:PORT...]" */
    char prefix[64];               /* etcd key prefix */
    struct rc_sub_params sub;      /* template of every connection: buffers, timeouts; provider,
                                    * endpoint, host and port come from the entries; sub.cb is unused */
    uint64_t refresh_ns;           /* look discovery up this often */
    void *ctx;                     /* first argument of the callbacks */
    void (*on_data)(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len);
    void (*on_event)(void *ctx, enum rc_discover_event ev, const struct rc_discover_publisher *p);
    /* Views (ringcast/view.h), as rc_sub_params.on_view: when set, every
     * chunk goes to on_view() instead of on_data(), as a view the program
     * may keep (rc_view_retain) and release later from any thread. A
     * publisher dropped (its entry vanished) while views of it are held
     * keeps its connection's memory, no longer polled, until the last is
     * released; release every view before rc_discover_destroy(). */
    void (*on_view)(void *ctx, struct rc_view *view);
};

struct rc_discover_stats {
    uint64_t publishers;           /* followed now */
    uint64_t found, gone, restarts;
    uint64_t lookups, lookup_failures;
    uint64_t malformed, foreign, stale;  /* entries skipped by the last lookup */
    uint64_t connect_setup_failures;     /* a connection could not be created for an entry */
    struct rc_sub_stats total;     /* summed over every connection, also those dropped */
    uint64_t over_limit;           /* entries not followed: 256 publishers followed already */
    uint64_t parked;               /* dropped publishers' connections kept now for views the program holds */
    uint64_t parks;                /* publishers dropped while the program held views of them */
};

/* Defaults: url "", prefix "/ringcast/", rc_sub_params_default() for sub,
 * refresh 1 s, callbacks NULL. */
RC_API void rc_discover_params_default(struct rc_discover_params *p);
/* Wanted inclusive tag ranges [first[i], last[i]] (copied). No I/O yet.
 * -EINVAL for a bad URL, neither on_data nor on_view, or a bad range, with a
 * message in err. */
RC_API int rc_discover_create(const struct rc_discover_params *p, const uint64_t *first, const uint64_t *last,
                              size_t count, struct rc_discover **out, char *err, size_t errlen);
/* Look discovery up when due, drive every connection; wait up to
 * timeout_ns when nothing happens. Returns the messages received. */
RC_API int rc_discover_poll(struct rc_discover *d, uint64_t timeout_ns);
RC_API void rc_discover_get_stats(const struct rc_discover *d, struct rc_discover_stats *st);
/* The publishers followed now, 0 .. count-1: what was announced and the
 * statistics of its connection. -ENOENT past the end. */
RC_API size_t rc_discover_count(const struct rc_discover *d);
RC_API int rc_discover_publisher(const struct rc_discover *d, size_t i, struct rc_discover_publisher *p,
                                 struct rc_sub_stats *st);
/* The last discovery problem ("etcd http://...: Couldn't connect to server"), "" if none. */
RC_API const char *rc_discover_last_error(const struct rc_discover *d);
/* Close every connection (BYE) and free d (NULL is fine). */
RC_API void rc_discover_destroy(struct rc_discover *d);

#ifdef __cplusplus
}
#endif
#endif
