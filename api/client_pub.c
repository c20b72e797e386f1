/* SPDX-License-Identifier: BSD-3-Clause */
/* client_pub.c — the public client publisher (ringcast/pub.h) over the
 * fabric layer's publisher (net/publisher.h): public parameter, stats and
 * event types mapped onto the internal ones, nothing else added. The hot
 * calls (send, progress) are one extra function call each. */
#include "ringcast/pub.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/publisher.h"

_Static_assert((int)RC_PUB_EVENT_JOINED == (int)RCI_PUB_PEER_JOINED, "peer event values");
_Static_assert((int)RC_PUB_EVENT_SUBSCRIPTIONS == (int)RCI_PUB_PEER_SUBSCRIPTIONS, "peer event values");
_Static_assert((int)RC_PUB_EVENT_GONE == (int)RCI_PUB_PEER_GONE, "peer event values");
_Static_assert((int)RC_PUB_EP_MSG == (int)RCI_EP_MSG && (int)RC_PUB_EP_RDM == (int)RCI_EP_RDM,
               "endpoint values");
_Static_assert(RC_PUB_MAX_REGIONS == 16u, "public RC_PUB_MAX_REGIONS is net/publisher.h's");
_Static_assert(sizeof(rc_pub_peer) == sizeof(rci_peer_id), "peer id type");

struct rc_pub {
    struct rci_publisher *pub;
    struct rc_pub_callbacks cb;
};

static void send_complete(void *arg, uint64_t key, int status)
{
    struct rc_pub *p = arg;
    p->cb.on_send_complete(p->cb.ctx, key, status);
}

static void peer_event(void *arg, rci_peer_id peer, enum rci_pub_peer_event ev)
{
    struct rc_pub *p = arg;
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
        .on_send_complete = send_complete, .on_peer_event = peer_event, .arg = p,
    };
    rc = rci_publisher_create(&fp, &cb, &p->pub, err, errlen);
    if (rc) {
        free(p);
        return rc;
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

int rc_pub_send(struct rc_pub *p, rc_pub_peer peer, uint64_t tag, uint32_t flags,
                const struct iovec *iov, unsigned n, uint64_t key)
{
    if (!iov && n)
        return -EINVAL;
    return rci_publisher_send(p->pub, peer, tag, flags, iov, n, key);
}

int rc_pub_progress(struct rc_pub *p) { return rci_publisher_progress(p->pub); }

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
    return rci_publisher_pending_sends(p->pub, peer, keys, max);
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
}

const char *rc_pub_last_error(const struct rc_pub *p) { return rci_publisher_last_error(p->pub); }

void rc_pub_destroy(struct rc_pub *p)
{
    if (!p)
        return;
    rci_publisher_destroy(p->pub);   /* runs on_send_complete(-ECANCELED) through p: free p after */
    free(p);
}
