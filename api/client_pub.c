/* SPDX-License-Identifier: BSD-3-Clause */
/* client_pub.c — the public client publisher (ringcast/pub.h) over the
 * fabric layer's publisher (net/publisher.h): public parameter, stats and
 * event types mapped onto the internal ones, and the registration cache
 * (net/mr_cache.h) for pieces the program did not register.
 *
 * With the cache, every accepted send gets a record (allocated at create)
 * that keeps the user's key and the cached regions it references; the key
 * given to the publisher is the record's index, and completion (or
 * rc_pub_pending_sends) releases the regions and hands back the user's key.
 * Descriptors of every piece are passed to the publisher with the send
 * (rci_publisher_send_desc), so a fragment posted later uses the region the
 * send holds, whatever the cache does meanwhile.
 *
 * rc_mem_forget has no publisher argument: a process-wide list of the
 * caches (under a mutex, touched only at create, destroy and forget) lets
 * it queue the range on each; the owner thread applies it lock-free. */
#include "ringcast/pub.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/mr_cache.h"
#include "net/publisher.h"

#define CACHE_SEND_PIECES 256u   /* pieces of a send through the cache (the publisher
                                  * keeps at most that many for a deferred fragment) */

_Static_assert((int)RC_PUB_EVENT_JOINED == (int)RCI_PUB_PEER_JOINED, "peer event values");
_Static_assert((int)RC_PUB_EVENT_SUBSCRIPTIONS == (int)RCI_PUB_PEER_SUBSCRIPTIONS, "peer event values");
_Static_assert((int)RC_PUB_EVENT_GONE == (int)RCI_PUB_PEER_GONE, "peer event values");
_Static_assert((int)RC_PUB_EP_MSG == (int)RCI_EP_MSG && (int)RC_PUB_EP_RDM == (int)RCI_EP_RDM,
               "endpoint values");
_Static_assert(RC_PUB_MAX_REGIONS == 16u, "public RC_PUB_MAX_REGIONS is net/publisher.h's");
_Static_assert(sizeof(rc_pub_peer) == sizeof(rci_peer_id), "peer id type");

/* One accepted send while the cache is on. */
struct cache_send {
    uint64_t user_key;
    uint32_t nregions;
    struct rci_mr_region *region[RC_PUB_CACHE_PIECES];
};

struct rc_pub {
    struct rci_publisher *pub;
    struct rc_pub_callbacks cb;
    struct rci_mr_cache *cache;           /* NULL: mr_cache_bytes 0 */
    struct cache_send *sends;             /* nsends records */
    uint32_t *send_free, nsends, nsend_free;
    void **desc;                          /* CACHE_SEND_PIECES, one send's descriptors */
    uint64_t cache_failures;              /* beyond the cache's own: too many regions/pieces */
    char err[256];                        /* a registration refused in rc_pub_send */
    char pub_err_then[256];               /* the publisher's last error at that time: */
                                          /* err is the last problem while it is unchanged */
    struct rc_pub *next;                  /* on the process-wide list (rc_mem_forget) */
};

static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rc_pub *caches;             /* publishers with a cache */

static void caches_add(struct rc_pub *p)
{
    pthread_mutex_lock(&caches_lock);
    p->next = caches;
    caches = p;
    pthread_mutex_unlock(&caches_lock);
}

static void caches_remove(struct rc_pub *p)
{
    pthread_mutex_lock(&caches_lock);
    for (struct rc_pub **q = &caches; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    pthread_mutex_unlock(&caches_lock);
}

int rc_mem_forget(const void *addr, size_t len)
{
    if (!addr || len == 0)
        return -EINVAL;
    pthread_mutex_lock(&caches_lock);
    for (struct rc_pub *p = caches; p; p = p->next)
        rci_mr_cache_forget_async(p->cache, addr, len);
    pthread_mutex_unlock(&caches_lock);
    return 0;
}

/* The send record of an internal key: release its regions, free it, and
 * return the user's key. */
static uint64_t finish_send(struct rc_pub *p, uint64_t key)
{
    struct cache_send *s = &p->sends[key];
    for (uint32_t i = 0; i < s->nregions; i++)
        rci_mr_cache_release(p->cache, s->region[i]);
    s->nregions = 0;
    p->send_free[p->nsend_free++] = (uint32_t)key;
    return s->user_key;
}

static void send_complete(void *arg, uint64_t key, int status)
{
    struct rc_pub *p = arg;
    if (p->cache)
        key = finish_send(p, key);
    p->cb.on_send_complete(p->cb.ctx, key, status);
}

/* Before the publisher's domain closes (every key is back by then). */
static void publisher_closing(void *arg)
{
    struct rc_pub *p = arg;
    if (!p->cache)
        return;
    caches_remove(p);
    rci_mr_cache_destroy(p->cache);
    p->cache = NULL;
}

static void peer_event(void *arg, rci_peer_id peer, enum rci_pub_peer_event ev)
{
    struct rc_pub *p = arg;
    if (ev == RCI_PUB_PEER_BYE)
        return;   /* internal: the daemon's accounting of an orderly leave; GONE follows */
    if (p->cb.on_peer_event)
        p->cb.on_peer_event(p->cb.ctx, peer, (enum rc_pub_event)ev);
}

void rc_pub_params_default(struct rc_pub_params *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->provider, sizeof p->provider, "tcp");
    p->endpoint = RC_PUB_EP_MSG;
    snprintf(p->address, sizeof p->address, "127.0.0.1");
    p->port = 12345;
    p->header_slots = 1024;
    p->max_subscribers = 64;
    p->tx_queue = 256;
    p->rx_queue = 256;
    p->cq_size = 1024;
    p->heartbeat_ns = 500ull * 1000 * 1000;
    p->peer_timeout_ns = 3ull * 1000 * 1000 * 1000;
    p->poll_spin_ns = 20ull * 1000;
    p->mr_cache_bytes = 64ull << 20;
    p->mr_cache_regions = 1024;
}

static int to_fabric_params(const struct rc_pub_params *pp, struct rci_fabric_params *fp, char *err,
                            size_t errlen)
{
    const char *bad = NULL;
    if (!memchr(pp->provider, 0, sizeof pp->provider) || !pp->provider[0])
        bad = "provider is empty or not terminated";
    else if (!memchr(pp->address, 0, sizeof pp->address) || !pp->address[0])
        bad = "address is empty or not terminated";
    else if (pp->port == 0)
        bad = "port is 0";
    else if (pp->endpoint != RC_PUB_EP_MSG && pp->endpoint != RC_PUB_EP_RDM)
        bad = "endpoint is neither msg nor rdm";
    else if (pp->tx_queue == 0 || pp->rx_queue == 0 || pp->cq_size == 0)
        bad = "tx_queue, rx_queue and cq_size must be > 0";
    else if (!pp->cb.on_send_complete)
        bad = "on_send_complete callback required";
    else if (pp->mr_cache_bytes && (pp->mr_cache_regions == 0 || pp->mr_cache_regions > (1u << 20)))
        bad = "mr_cache_regions must be 1..1048576 when mr_cache_bytes > 0";
    if (bad) {
        rci_set_err(err, errlen, "rc_pub_create: %s", bad);
        return -EINVAL;
    }
    memset(fp, 0, sizeof *fp);
    memcpy(fp->provider, pp->provider, sizeof fp->provider);
    fp->endpoint = pp->endpoint == RC_PUB_EP_RDM ? RCI_EP_RDM : RCI_EP_MSG;
    memcpy(fp->address, pp->address, sizeof fp->address);
    fp->port = pp->port;
    fp->tx_queue = pp->tx_queue;
    fp->rx_queue = pp->rx_queue;
    fp->cq_size = pp->cq_size;
    fp->header_slots = pp->header_slots;
    fp->header_slot_size = 64;          /* one DATA header (40 bytes), cache-line sized */
    fp->buffered_pages = 0;             /* zero copy only: no page pool */
    fp->peer_timeout_ns = pp->peer_timeout_ns;
    fp->heartbeat_ns = pp->heartbeat_ns;
    fp->poll_spin_ns = pp->poll_spin_ns;
    fp->max_subscribers = pp->max_subscribers;
    fp->max_tags_per_subscriber = pp->max_tags_per_subscriber;
    memcpy(fp->allow, pp->allow, sizeof fp->allow);  /* checked (terminated, CIDR) at create */
    return 0;
}

static void free_client(struct rc_pub *p)
{
    free(p->sends);
    free(p->send_free);
    free(p->desc);
    free(p);
}

/* Records for every send that can be in flight: one per header slot, plus
 * one per subscriber for a fragmented send whose rest waits in progress. */
static int cache_create(struct rc_pub *p, const struct rc_pub_params *pp, char *err, size_t errlen)
{
    p->nsends = pp->header_slots + pp->max_subscribers;
    p->sends = calloc(p->nsends, sizeof *p->sends);
    p->send_free = calloc(p->nsends, sizeof *p->send_free);
    p->desc = calloc(CACHE_SEND_PIECES, sizeof *p->desc);
    if (!p->sends || !p->send_free || !p->desc) {
        rci_set_err(err, errlen, "rc_pub_create: out of memory for %u send records", p->nsends);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < p->nsends; i++)
        p->send_free[i] = p->nsends - 1 - i;
    p->nsend_free = p->nsends;
    struct rci_mr_cache_params cp = {
        .max_bytes = pp->mr_cache_bytes, .max_regions = pp->mr_cache_regions, .access = FI_SEND,
    };
    /* The cache registers in the publisher's domain, from the publisher's
     * thread: the one place where the fabric is used beside it. */
    struct rci_fabric *f = (struct rci_fabric *)rci_publisher_fabric(p->pub);
    int rc = rci_mr_cache_create(&cp, f, f->ep, &p->cache, err, errlen);
    if (rc)
        return rc;
    caches_add(p);
    return 0;
}

int rc_pub_create(const struct rc_pub_params *params, struct rc_pub **out, char *err, size_t errlen)
{
    *out = NULL;
    struct rci_fabric_params fp;
    int rc = to_fabric_params(params, &fp, err, errlen);
    if (rc)
        return rc;
    struct rc_pub *p = calloc(1, sizeof *p);
    if (!p) {
        rci_set_err(err, errlen, "rc_pub_create: out of memory");
        return -ENOMEM;
    }
    p->cb = params->cb;
    struct rci_publisher_callbacks cb = {
        .on_send_complete = send_complete, .on_peer_event = peer_event,
        .on_closing = publisher_closing, .arg = p,
    };
    rc = rci_publisher_create(&fp, &cb, &p->pub, err, errlen);
    if (rc) {
        free_client(p);
        return rc;
    }
    if (params->mr_cache_bytes) {
        rc = cache_create(p, params, err, errlen);
        if (rc) {
            rc_pub_destroy(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

int rc_pub_register(struct rc_pub *p, const void *addr, size_t len, char *err, size_t errlen)
{
    if (!addr || len == 0) {
        rci_set_err(err, errlen, "rc_pub_register: empty region");
        return -EINVAL;
    }
    return rci_publisher_register(p->pub, addr, len, err, errlen);
}

/* The descriptor of piece [base, base + len) for send record s: a region
 * of rc_pub_register(), one the send holds already, or one from the cache
 * (acquired: s holds it from now on). 0 or -errno. */
static int piece_desc(struct rc_pub *p, struct cache_send *s, const void *base, size_t len,
                      void **desc)
{
    bool found;
    *desc = rci_publisher_region_desc(p->pub, base, len, &found);
    if (found)
        return 0;
    for (uint32_t i = 0; i < s->nregions; i++)
        if (rci_mr_region_contains(s->region[i], base, len)) {
            *desc = rci_mr_region_desc(s->region[i]);
            return 0;
        }
    if (s->nregions == RC_PUB_CACHE_PIECES) {
        p->cache_failures++;
        return -EMSGSIZE;
    }
    struct rci_mr_region *r;
    int rc = rci_mr_cache_acquire(p->cache, base, len, &r, p->err, sizeof p->err);
    if (rc) {
        snprintf(p->pub_err_then, sizeof p->pub_err_then, "%s", rci_publisher_last_error(p->pub));
        return rc;
    }
    s->region[s->nregions++] = r;
    *desc = rci_mr_region_desc(r);
    return 0;
}

static int send_through_cache(struct rc_pub *p, rc_pub_peer peer, uint64_t tag, uint32_t flags,
                              const struct iovec *iov, unsigned n, uint64_t key)
{
    if (n > CACHE_SEND_PIECES) {
        p->cache_failures++;
        return -EMSGSIZE;
    }
    if (p->nsend_free == 0)
        return -EAGAIN;   /* every record's send is in flight: completions free them */
    uint32_t rec = p->send_free[--p->nsend_free];
    struct cache_send *s = &p->sends[rec];
    s->user_key = key;
    s->nregions = 0;
    for (unsigned i = 0; i < n; i++) {
        p->desc[i] = NULL;
        int rc = iov[i].iov_len ? piece_desc(p, s, iov[i].iov_base, iov[i].iov_len, &p->desc[i]) : 0;
        if (rc) {
            finish_send(p, rec);
            return rc;
        }
    }
    int rc = rci_publisher_send_desc(p->pub, peer, tag, flags, iov, (void *const *)p->desc, n, rec);
    if (rc)
        finish_send(p, rec);
    return rc;
}

int rc_pub_send(struct rc_pub *p, rc_pub_peer peer, uint64_t tag, uint32_t flags,
                const struct iovec *iov, unsigned n, uint64_t key)
{
    if (!iov && n)
        return -EINVAL;
    int rc = p->cache ? send_through_cache(p, peer, tag, flags, iov, n, key)
                      : rci_publisher_send(p->pub, peer, tag, flags, iov, n, key);
    /* -ENOBUFS (this subscriber's own wait: its RMA ring full, its previous
     * chunk's rest not posted yet) is a "retry later" like any other here. */
    return rc == -ENOBUFS ? -EAGAIN : rc;
}

int rc_pub_progress(struct rc_pub *p)
{
    if (p->cache)
        rci_mr_cache_apply_forgets(p->cache);
    return rci_publisher_progress(p->pub);
}

int rc_pub_wait(struct rc_pub *p, uint64_t timeout_ns) { return rci_publisher_wait(p->pub, timeout_ns); }

uint32_t rc_pub_free_slots(struct rc_pub *p) { return rci_publisher_available_slots(p->pub); }

unsigned rc_pub_subscribers_of(struct rc_pub *p, uint64_t tag, rc_pub_peer *out, unsigned max)
{
    return rci_publisher_subscribers_of(p->pub, tag, out, max);
}

unsigned rc_pub_peers(struct rc_pub *p, rc_pub_peer *out, unsigned max)
{
    return rci_publisher_peers(p->pub, out, max);
}

const char *rc_pub_peer_name(struct rc_pub *p, rc_pub_peer peer)
{
    return rci_publisher_peer_name(p->pub, peer);
}

int rc_pub_close_peer(struct rc_pub *p, rc_pub_peer peer) { return rci_publisher_close_peer(p->pub, peer); }

int rc_pub_pending_sends(struct rc_pub *p, rc_pub_peer peer, uint64_t *keys, unsigned max)
{
    int n = rci_publisher_pending_sends(p->pub, peer, keys, max);
    for (int i = 0; p->cache && i < n; i++)
        keys[i] = finish_send(p, keys[i]);
    return n;
}

void rc_pub_get_stats(const struct rc_pub *p, struct rc_pub_stats *st)
{
    struct rci_publisher_stats s;
    rci_publisher_get_stats(p->pub, &s);
    uint64_t malformed = 0;
    for (unsigned i = 0; i < RCI_WIRE_ERROR_KINDS; i++)
        malformed += s.malformed[i];
    *st = (struct rc_pub_stats){
        .sends = s.sends, .send_bytes = s.send_bytes, .messages = s.messages,
        .fragmented_sends = s.fragmented_sends, .again_no_slot = s.again_no_slot,
        .again_provider = s.again_provider, .send_errors = s.send_errors,
        .unregistered_pieces = s.unregistered_pieces, .keys_completed_ok = s.keys_completed_ok,
        .keys_completed_error = s.keys_completed_error, .connections = s.connections,
        .connections_refused = s.connections_refused, .peers_closed = s.peers_closed,
        .peers_dead = s.peers_dead, .keys_released_by_peer_death = s.keys_released_by_peer_death,
        .malformed_total = malformed, .slots_total = s.slots_total, .slots_free = s.slots_free,
        .peers_active = s.peers_active,
    };
    if (!p->cache)
        return;
    struct rci_mr_cache_stats c;
    rci_mr_cache_get_stats(p->cache, &c);
    st->mr_cache_hits = c.hits;
    st->mr_cache_misses = c.misses;
    st->mr_cache_evictions = c.evictions;
    st->mr_cache_forgotten = c.forgotten_regions;
    st->mr_cache_failures = c.failures + p->cache_failures;
    st->mr_cache_registered_bytes = c.registered_bytes;
    st->mr_cache_regions = c.regions;
    st->mr_cache_regions_in_use = c.regions_in_use;
}

const char *rc_pub_last_error(const struct rc_pub *p)
{
    const char *e = rci_publisher_last_error(p->pub);
    return p->err[0] && strncmp(e, p->pub_err_then, sizeof p->pub_err_then) == 0 ? p->err : e;
}

void rc_pub_destroy(struct rc_pub *p)
{
    if (!p)
        return;
    /* Runs on_send_complete(-ECANCELED) and publisher_closing (the cache
     * goes) through p: free p after. */
    rci_publisher_destroy(p->pub);
    free_client(p);
}
