/* SPDX-License-Identifier: BSD-3-Clause */
/* multi_sub.h — subscribe to tag ranges, not to a publisher (net/README.md,
 * "Discovery"): the publishers serving any of the wanted tags are found
 * through discovery (net/discovery.h), one rc_sub connection is made to each
 * (one publisher thread per daemon: every thread of a daemon serves all its
 * tags), each is subscribed to the part of the wanted ranges it serves, and
 * the set follows the discovery entries: a publisher that appears is
 * connected, one whose entry vanished is dropped, a daemon that restarted on
 * the same host and port (new daemon id) is counted as a restart and
 * subscribed anew. rci_msub_poll() drives every connection in one loop: it
 * polls each without waiting and, when none had work, waits on one of them
 * (in turn) for at most 1 ms. Discovery is read by a thread of its own every
 * refresh_ns (a read may block for seconds when an etcd host is down), and
 * poll applies its latest result; when discovery cannot be read the
 * connections stay as they are: a subscriber loses nothing by it. Otherwise
 * single-threaded like rc_sub; callbacks run inside rci_msub_poll(). */
#ifndef RCI_MULTI_SUB_H
#define RCI_MULTI_SUB_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/sub.h"
#include "net/discovery.h"

#define RCI_MSUB_MAX_PUBLISHERS 256u
#define RCI_MSUB_MAX_RANGES     1024u

enum rci_msub_event {
    RCI_MSUB_ADDED,          /* a publisher serving wanted tags was found: connecting */
    RCI_MSUB_GONE,           /* its entry vanished (daemon stopped or died): dropped */
    RCI_MSUB_RESTARTED,      /* a new daemon on the host:port of one seen before (a new
                              * entry, or the connection found a new publisher id) */
    RCI_MSUB_CONNECTED,      /* WELCOME from it */
    RCI_MSUB_DISCONNECTED,   /* connection lost (rc_sub reconnects while the entry lives) */
};

struct rci_msub_publisher {
    struct rci_disc_entry entry;  /* what discovery said */
    struct rc_sub *sub;
    size_t nranges;               /* the part of the wanted ranges it serves */
    uint64_t *first, *last;
    uint64_t added_ns;
    uint64_t publisher_id;        /* of the last WELCOME, 0 before */
    uint64_t heard_messages, heard_ns; /* messages received, and when that count last grew */
    enum rc_sub_disconnect_reason last_reason;
};

struct rci_msub_params {
    struct rci_discovery_params disc;
    struct rc_sub_params sub;     /* template: buffers, timeouts; provider, endpoint, host and
                                   * port come from each entry; sub.cb is not used */
    uint64_t refresh_ns;          /* read discovery this often (0: 1 s) */
    size_t max_publishers;        /* publishers followed at most (0 or more than
                                   * RCI_MSUB_MAX_PUBLISHERS: that); further entries are counted
                                   * in publishers_over_limit */
    size_t parked_room;           /* room made at create for parked connections (see on_view;
                                   * 0: RCI_MSUB_MAX_PUBLISHERS); more grow it, never a limit */
    void *ctx;
    void (*on_data)(void *ctx, const struct rci_msub_publisher *p, uint64_t tag, uint32_t flags,
                    const void *data, size_t len);
    /* Set: every chunk goes here as a view instead (rc_sub_params.on_view,
     * ringcast/view.h). A publisher dropped while the program still holds
     * views of it keeps its connection object (parked: no longer polled, out
     * of the list) until the last of them is released (checked at every
     * poll), however many are parked: the room for parking a connection is
     * made when it is added (memory lacking then: not added, counted in
     * create_failures, tried again at the next lookup), so a drop never
     * frees memory a held view points into. Counted: parked, parks,
     * parks_past_room. Every view must be released before rci_msub_destroy. */
    void (*on_view)(void *ctx, const struct rci_msub_publisher *p, struct rc_view *view);
    void (*on_event)(void *ctx, enum rci_msub_event ev, const struct rci_msub_publisher *p);
};

struct rci_msub_stats {
    uint64_t publishers;          /* connected-to now (entries followed) */
    uint64_t appeared, gone, restarts;
    uint64_t lookups, lookup_failures;     /* discovery reads */
    uint64_t malformed, foreign, stale;    /* entries skipped (last read) */
    uint64_t create_failures;     /* an entry's connection could not be made (rc_sub_create
                                   * failed, or no memory for it) */
    uint64_t unlisted_kept;       /* lookups that kept a connected publisher without entry */
    uint64_t publishers_over_limit;   /* entries not followed: params.max_publishers followed already
                                       * (once per lookup that found them) */
    uint64_t parked;              /* dropped publishers' connections kept now for held views */
    uint64_t parks;               /* publishers dropped while the program held views of them */
    uint64_t parks_past_room;     /* of those, parked beyond params.parked_room (the room grew) */
    struct rc_sub_stats total;    /* sum over every connection, gone ones included */
};

struct rci_msub;

/* Copies params and the wanted ranges; opens discovery (no I/O yet). Needs
 * on_data or on_view. */
int  rci_msub_create(const struct rci_msub_params *p, const uint64_t *first, const uint64_t *last,
                     size_t nranges, struct rci_msub **out, char *err, size_t errlen);
/* Look up discovery when due, then drive every connection; waits up to
 * timeout_ns when nothing happens. Returns the messages handled. */
int  rci_msub_poll(struct rci_msub *m, uint64_t timeout_ns);
void rci_msub_get_stats(const struct rci_msub *m, struct rci_msub_stats *st);
/* The publishers followed now: index 0 .. count-1 (NULL past the end). */
size_t rci_msub_count(const struct rci_msub *m);
const struct rci_msub_publisher *rci_msub_publisher(const struct rci_msub *m, size_t i);
/* The last discovery problem, "" if none. */
const char *rci_msub_last_error(const struct rci_msub *m);
void rci_msub_destroy(struct rci_msub *m);

#endif
