/* SPDX-License-Identifier: BSD-3-Clause */
/* subscriber.c — the ringcast subscriber library (contract: ringcast/sub.h,
 * protocol: wire.h, libfabric setup: fabric.h).
 *
 * One connection at a time. Every fabric object of a connection (fabric,
 * domain, CQ, EQ/AV, endpoint, memory registrations) is opened when it starts
 * and closed when it ends: after a publisher restart nothing of the old
 * connection can linger (with rxm a send to a dead peer never completes, so
 * our send slots are simply reclaimed when the endpoint is closed). The
 * buffers themselves are allocated once in rc_sub_create().
 *
 * States: IDLE (no connection; next attempt at next_attempt_ns) ->
 * CONNECTING (MSG only: fi_connect issued, waiting for FI_CONNECTED) ->
 * HELLO_SENT (waiting for WELCOME) -> ACTIVE. CONNECTING and HELLO_SENT
 * last at most peer_timeout each. Nothing blocks: the connect completes in
 * rc_sub_poll(), so one thread may drive a publisher and a subscriber.
 */
#include "ringcast/sub.h"
#include "net/sub_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "net/fabric.h"
#include "net/mem_pool.h"
#include "net/sub_ranges.h"
#include "net/sub_rma.h"
#include "net/sub_stream.h"
#include "net/sub_view.h"
#include "net/wire.h"

_Static_assert(RC_SUB_MALFORMED_KINDS == RCI_WIRE_ERROR_KINDS, "malformed kinds follow wire.h");

#define TX_SLOTS 16u                      /* control messages in flight */
#define TX_SLOT_SIZE RCI_WIRE_MAX_CONTROL  /* the largest SUBSCRIBE */
#define RESYNC_BIT 0x80000000u            /* request_id of a resubscription */
#define BYE_FLUSH_NS 100000000ull         /* how long a BYE may take to leave */
#define BYE_LINGER_NS 300000000ull        /* how long to wait for the publisher to close (MSG) or go quiet (RDM) after it */
#define BYE_RDM_QUIET_NS 100000000ull     /* RDM: the publisher is taken to have read our BYE after this long without a message */
#define SHM_CONNREQ_WAIT_NS 1000000000ull /* shm: wait for the publisher to read our request */
#define CQ_BATCH 32u
#define KNOWN_LOST_MAX 8u                 /* truncated stream numbers remembered until their turn */

enum sub_state { ST_IDLE, ST_CONNECTING, ST_HELLO_SENT, ST_ACTIVE };
enum tx_state { TX_FREE, TX_QUEUED, TX_POSTED };
enum sub_use { SUB_USE_RX, SUB_USE_TX, SUB_USES };   /* the pool's uses (pool_create) */

struct rx_slot {
    uint8_t *buf;
    atomic_uint refs;          /* views of this buffer still held: posted again only at 0 */
    bool posted;
    bool held;                 /* a DATA/PAGE that came before its turn */
    uint32_t seq;              /* held: its stream sequence number */
    size_t len;                /* held: its length */
};

struct tx_slot {
    struct rci_mem_buf *mb;    /* its pool buffer while taken (NULL while TX_FREE) */
    uint8_t *buf;
    size_t len;
    enum tx_state state;
};

/* Reassembly of one fragmented chunk. `discard` follows the fragments of a
 * chunk that is already counted as lost, so that it is counted once. With
 * on_view a chunk is gathered, not copied: `gather` is the view of its
 * fragments so far, one piece per fragment, each holding the receive buffer
 * (send) or ring record (RMA) it lies in ("Gathering" below). */
struct reassembly {
    bool active, discard;
    enum rci_view_kind src_kind;   /* where fragment 0 came from: RCI_VIEW_RX or RCI_VIEW_RMA */
    struct rc_view *gather;    /* on_view: the fragments so far, not copied (NULL: copied) */
    uint64_t tag;
    uint32_t flags, chunk_len, next_offset;
    uint16_t frag_count, next_index;
};

struct rc_sub {
    struct rc_sub_params p;
    uint64_t client_id;

    /* Buffers: allocated once. */
    struct rci_reasm *reasm;              /* reassembly buffer (we hold one reference) */
    struct rci_view_pool *views;          /* on_view's views */
    /* What the stream message being handled lives in (views hold it). */
    enum rci_view_kind src_kind;          /* RCI_VIEW_RX or RCI_VIEW_RMA */
    struct rx_slot *src_slot;             /* RX */
    uint64_t src_key;                     /* RMA: the record's ring key */
    bool src_key_owned;                   /* RMA: not yet handed to a view */
    struct rx_slot *rx;
    uint32_t rx_posted;                   /* slots posted now: post_all_rx scans only when some are not */
    struct rci_mem_pool *pool;            /* receive and control send buffers (pool_create) */
    int pool_cls[SUB_USES];               /* their classes */
    struct rci_mem_buf **rx_mb;           /* rx[i].buf's pool buffer */
    void *rx_desc;                        /* their class block's descriptor (connection) */
    struct tx_slot tx[TX_SLOTS];
    uint32_t tx_queue[TX_SLOTS];          /* FIFO of TX_QUEUED slots: send order */
    uint32_t tx_queue_head, tx_queue_len;

    /* The current connection. */
    enum sub_state state;
    bool fabric_open;
    struct rci_fabric f;
    struct fid_ep *ep;                    /* MSG: own endpoint; RDM: f.ep */
    fi_addr_t peer;                       /* RDM: the publisher */
    uint64_t next_attempt_ns, deadline_ns, last_rx_ns, last_hb_ns, heartbeat_ns;
    uint32_t conn_malformed;
    bool lost;                            /* set while handling: tear down after */
    enum rc_sub_disconnect_reason lost_reason;

    /* Subscriptions and their resending after a (re)connect. */
    struct rci_tag_ranges subs;
    struct rci_wire_range batch[RCI_WIRE_MAX_RANGES];   /* one message's ranges */
    bool resync_active, resync_done_sending, resync_is_reconnect;
    uint64_t resync_from;
    uint32_t resync_outstanding, user_outstanding, next_request;

    uint32_t next_seq;                    /* stream sequence number handled next */
    uint32_t known_lost[KNOWN_LOST_MAX];  /* numbers ahead of next_seq that came truncated */
    uint32_t nknown_lost;
    uint32_t nheld;                       /* rx slots held for order */
    struct reassembly ra;
    struct rci_sub_rma rma;               /* RMA delivery: the receive ring (sub_rma.h) */
    bool rma_announced;                   /* this connection's HELLO offered the ring */
    struct rci_wire_hello_rma rma_offer;  /* what it offered */
    /* Block stream (delivery = RC_SUB_DELIVERY_STREAM, sub_stream.h). */
    struct rci_sub_stream stream;
    struct rci_sub_stream_ops sops;       /* the decoder (api/client_stream.c) */
    bool has_sops;
    bool stream_announced;                /* this connection's HELLO asked for the stream */
    uint64_t stream_start;                /* ... starting at this ring offset */
    struct rc_sub_stats st;
    /* Leaving in order (leave_count_*): the chunks this connection handled,
     * told in the BYE when the publisher's WELCOME said it takes the count. */
    uint64_t conn_chunks_handled;
    bool publisher_takes_count;
    bool answer_bye;                      /* the publisher said BYE(normal): the end of its run,
                                           * everything before it was read; answered on leaving */
    bool ever_connected;
    int handled;                          /* messages handled in this rc_sub_poll */
    struct rci_spin_policy spin;          /* how long rc_sub_poll spins (spin_policy.h) */
    char err[256];
};

/* ---- parameters ---------------------------------------------------------- */

void rc_sub_params_default(struct rc_sub_params *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->provider, sizeof p->provider, "tcp");
    p->endpoint = RC_SUB_EP_MSG;
    snprintf(p->host, sizeof p->host, "127.0.0.1");
    p->port = RC_SUB_DEFAULT_PORT;
    p->rx_buffers = 64;
    p->rx_buffer_size = 64u * 1024u;
    p->max_chunk_size = 16u * 1024u * 1024u;
    p->heartbeat_ns = 1000000000ull;
    p->peer_timeout_ns = 5000000000ull;
    p->reconnect_interval_ns = 1000000000ull;
    p->poll_spin_ns = 50000ull;
    p->poll_coalesce_ns = 0;   /* off: it delays messages (net/README.md, "Coalescing") */
    p->malformed_limit = 16;
    p->delivery = RC_SUB_DELIVERY_SEND;
    /* 2 MiB: the ring is where the kernel copies every record, and a ring
     * that stays in cache costs the subscriber less CPU per GB than a larger
     * one (net/README.md, "RMA delivery", "Ring size and speed"). */
    p->rma_ring_size = 2u * 1024u * 1024u;
    p->views = 1024;
    /* The card ring's default size: open chunks interleaved over the card's
     * e-links hold their blocks here as in the card's ring (8 e-links of
     * 1 MiB chunks fill 8 MiB, and the decoder then drops them whole). A
     * multiple of every power-of-two block size. */
    p->stream_ring_size = 64u * 1024u * 1024u;
}

static int check_params(const struct rc_sub_params *p, char *err, size_t errlen)
{
    const char *why = NULL;
    if (!memchr(p->provider, 0, sizeof p->provider) || !p->provider[0])
        why = "provider is empty";
    else if (!memchr(p->host, 0, sizeof p->host) || !p->host[0])
        why = "host is empty";
    else if (p->port == 0)
        why = "port is 0";
    else if (p->endpoint != RC_SUB_EP_MSG && p->endpoint != RC_SUB_EP_RDM)
        why = "endpoint is neither msg nor rdm";
    else if (p->rx_buffers < 2 || p->rx_buffers > 65536)
        why = "rx_buffers must be 2..65536";
    else if (p->rx_buffer_size < RCI_WIRE_MIN_RX_BUFFER || p->rx_buffer_size > (1u << 30))
        why = "rx_buffer_size must be 64 B..1 GiB";
    else if (p->max_chunk_size < 1 || p->max_chunk_size > (1u << 30))
        why = "max_chunk_size must be 1 B..1 GiB";
    else if (p->heartbeat_ns == 0 || p->reconnect_interval_ns == 0)
        why = "heartbeat and reconnect_interval must be > 0";
    else if (p->peer_timeout_ns <= p->heartbeat_ns)
        why = "peer_timeout must be longer than heartbeat";
    else if (!p->cb.on_data && !p->on_view)
        why = "on_data or on_view callback missing";
    else if (p->views > (1u << 20))
        why = "views must be 0..1048576";
    else if (p->delivery != RC_SUB_DELIVERY_SEND && p->delivery != RC_SUB_DELIVERY_RMA &&
             p->delivery != RC_SUB_DELIVERY_STREAM)
        why = "delivery is neither send, rma nor stream";
    else if (p->delivery == RC_SUB_DELIVERY_STREAM && p->stream_card > RCI_WIRE_MAX_CARD)
        why = "stream_card above 255";
    else if (p->poll_coalesce_ns > 1000000000ull)
        why = "poll_coalesce_ns must be 0..1 s";
    /* %.*s: a host without its NUL is one of the defects reported here. */
    if (why)
        rci_set_err(err, errlen, "rc_sub_create(%.*s:%u): %s", (int)sizeof p->host, p->host,
                   (unsigned)p->port, why);
    return why ? -EINVAL : 0;
}

/* ---- create / destroy ---------------------------------------------------- */

static uint64_t random_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = rci_now_ns() ^ ((uint64_t)getpid() << 32);
    return id;
}

/* Receive buffers and control send buffers come from one registered pool
 * (net/mem_pool.h), a class each: rx_buffers receive buffers of exactly
 * rx_buffer_size (rounded up to 64 B), got once here and kept, and TX_SLOTS
 * control send buffers of TX_SLOT_SIZE, taken per message (take_tx_slot) and
 * given back at its completion (tx_release). Exactly rx_buffer_size, not a
 * default class size: 64 KiB chunks with --rx-buffer-size 69632 got 1 MiB
 * buffers, 64 MiB touched round-robin by the receives instead of 4.4 MiB
 * (ringcast-sub VmHWM 77 MB, 7 MB before the pool; tcp loopback 64 KiB zero
 * copy slowed). The pool is registered once per connection (one MR per class
 * block) when the provider asks for FI_MR_LOCAL. */
static int pool_create(struct rc_sub *s, char *err, size_t errlen)
{
    struct rci_mem_use uses[SUB_USES] = {
        [SUB_USE_RX] = { "receive", s->p.rx_buffer_size, s->p.rx_buffers },
        [SUB_USE_TX] = { "control_send", TX_SLOT_SIZE, TX_SLOTS },
    };
    int rc = rci_mem_pool_create_uses(uses, SUB_USES, &s->pool, s->pool_cls, err, errlen);
    s->rx_mb = rc ? NULL : calloc(s->p.rx_buffers, sizeof *s->rx_mb);
    if (rc || !s->rx_mb)
        return rc ? rc : -ENOMEM;
    for (uint32_t i = 0; i < s->p.rx_buffers; i++) {
        s->rx_mb[i] = rci_mem_pool_get_class(s->pool, (enum rci_mem_class)s->pool_cls[SUB_USE_RX]);
        s->rx[i].buf = s->rx_mb[i]->data;   /* the class holds exactly rx_buffers */
    }
    return 0;
}

static void pool_destroy(struct rc_sub *s)
{
    for (uint32_t i = 0; s->pool && s->rx_mb && i < s->p.rx_buffers; i++)
        if (s->rx_mb[i])
            rci_mem_pool_put(s->pool, s->rx_mb[i]);
    free(s->rx_mb);
    rci_mem_pool_destroy(s->pool);
}

int rci_sub_create(const struct rc_sub_params *params, const struct rci_sub_stream_ops *ops,
                   struct rc_sub **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = check_params(params, err, errlen);
    if (!rc && (params->delivery == RC_SUB_DELIVERY_STREAM) != (ops != NULL)) {
        rci_set_err(err, errlen, "rc_sub_create(%s:%u): a block stream needs its decoder", params->host,
                    (unsigned)params->port);
        rc = -EINVAL;
    }
    if (rc) {
        if (ops)
            ops->destroy(ops->ctx);
        return rc;
    }
    struct rc_sub *s = calloc(1, sizeof *s);
    if (!s) {
        if (ops)
            ops->destroy(ops->ctx);
        rci_set_err(err, errlen, "rc_sub_create(%s:%u): out of memory", params->host, (unsigned)params->port);
        return -ENOMEM;
    }
    if (ops) {
        s->sops = *ops;
        s->has_sops = true;
    }
    s->p = *params;
    s->client_id = random_id();
    rci_spin_policy_init(&s->spin, params->poll_spin_ns, params->poll_coalesce_ns, params->poll_spin_fixed != 0);
    s->reasm = rci_reasm_new(params->max_chunk_size);
    s->views = params->on_view ? rci_view_pool_create(params->views) : NULL;
    s->rx = calloc(params->rx_buffers, sizeof *s->rx);
    if (!s->reasm || (params->on_view && !s->views) || !s->rx || pool_create(s, NULL, 0))
        goto nomem;
    if (params->delivery == RC_SUB_DELIVERY_STREAM) {
        char why[200];
        rc = rci_sub_stream_create(&s->stream, params->stream_ring_size, why, sizeof why);
        if (rc) {
            rci_set_err(err, errlen, "rc_sub_create(%s:%u): %s", params->host, (unsigned)params->port, why);
            rc_sub_destroy(s);
            return rc;
        }
        s->stream.on_gap = s->sops.gap;   /* blocks dropped for us: the decoder drops what is open */
        s->stream.gap_ctx = s->sops.ctx;
    }
    if (params->delivery == RC_SUB_DELIVERY_RMA) {
        char why[200];
        rc = rci_sub_rma_create(&s->rma, params->rma_ring_size, why, sizeof why);
        if (rc) {
            rci_set_err(err, errlen, "rc_sub_create(%s:%u): %s", params->host, (unsigned)params->port, why);
            rc_sub_destroy(s);
            return rc;
        }
    }
    s->state = ST_IDLE;
    s->next_attempt_ns = 0;   /* connect at the first poll */
    /* shm leaves a 16 MiB /dev/shm file per SIGKILLed subscriber: take back
     * those of dead processes of this user (net/fabric.c says which). */
    if (strcmp(params->provider, "shm") == 0) {
        int removed = rci_fabric_shm_reclaim_all();
        s->st.shm_stale_removed = removed > 0 ? (uint64_t)removed : 0;
    }
    *out = s;
    return 0;
nomem:
    rc_sub_destroy(s);
    rci_set_err(err, errlen, "rc_sub_create(%s:%u): out of memory", params->host, (unsigned)params->port);
    return -ENOMEM;
}

/* ---- sending control messages -------------------------------------------- */

/* Mark the connection lost; it is torn down once the current handling is
 * over (never in the middle of walking completions). The first reason wins. */
static void lose(struct rc_sub *s, enum rc_sub_disconnect_reason reason)
{
    if (!s->lost) {
        s->lost = true;
        s->lost_reason = reason;
    }
}

static uint32_t free_tx_slots(const struct rc_sub *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < TX_SLOTS; i++)
        n += s->tx[i].state == TX_FREE;
    return n;
}

/* A free control send slot with a pool buffer (one get; the class holds a
 * buffer per slot), or NULL. Queue it (queue_tx) or give it back (tx_release). */
static struct tx_slot *take_tx_slot(struct rc_sub *s)
{
    for (uint32_t i = 0; i < TX_SLOTS; i++) {
        struct tx_slot *t = &s->tx[i];
        if (t->state != TX_FREE)
            continue;
        if (!t->mb && !(t->mb = rci_mem_pool_get_class(s->pool, (enum rci_mem_class)s->pool_cls[SUB_USE_TX])))
            return NULL;
        t->buf = t->mb->data;
        return t;
    }
    return NULL;
}

/* The slot is free again: its buffer goes back to the pool. */
static void tx_release(struct rc_sub *s, struct tx_slot *t)
{
    t->state = TX_FREE;
    if (t->mb)
        rci_mem_pool_put(s->pool, t->mb);
    t->mb = NULL;
    t->buf = NULL;
}

/* Post queued sends in order; stop at the first the provider cannot take yet
 * (-FI_EAGAIN: rxm before its connection is up, or a full queue). */
static int flush_tx_queue(struct rc_sub *s)
{
    int posted = 0;
    while (s->tx_queue_len > 0) {
        struct tx_slot *t = &s->tx[s->tx_queue[s->tx_queue_head]];
        ssize_t rc = fi_send(s->ep, t->buf, t->len, rci_mem_pool_desc(s->pool, t->mb), s->peer, t);
        if (rc == -FI_EAGAIN)
            break;
        s->tx_queue_head = (s->tx_queue_head + 1) % TX_SLOTS;
        s->tx_queue_len--;
        if (rc) {
            rci_fabric_error(&s->f, s->err, sizeof s->err, "fi_send", (int)rc);
            s->st.tx_errors++;
            tx_release(s, t);
            lose(s, RC_SUB_DISC_SHUTDOWN);
            return posted;
        }
        t->state = TX_POSTED;
        posted++;
    }
    return posted;
}

/* Queue a message built into slot t (length len) and try to post it. */
static void queue_tx(struct rc_sub *s, struct tx_slot *t, size_t len)
{
    t->len = len;
    t->state = TX_QUEUED;
    s->tx_queue[(s->tx_queue_head + s->tx_queue_len) % TX_SLOTS] = (uint32_t)(t - s->tx);
    s->tx_queue_len++;
    flush_tx_queue(s);
}

static void send_heartbeat(struct rc_sub *s, uint64_t now)
{
    struct tx_slot *t = take_tx_slot(s);
    s->last_hb_ns = now;
    if (!t) {   /* control traffic is queued: the publisher hears from us anyway */
        s->st.send_again++;
        return;
    }
    queue_tx(s, t, (size_t)rci_wire_build_heartbeat(t->buf, TX_SLOT_SIZE, now));
    s->st.heartbeats_sent++;
}

/* Send one SUBSCRIBE/UNSUBSCRIBE of at most RCI_WIRE_MAX_RANGES ranges; false
 * when no slot is free or the ranges are invalid (callers check both first). */
static bool send_ranges(struct rc_sub *s, enum rci_msg_type type, uint32_t request_id,
                        const struct rci_wire_range *r, uint32_t count)
{
    struct tx_slot *t = take_tx_slot(s);
    ssize_t len = t ? rci_wire_build_sub(t->buf, TX_SLOT_SIZE, type, request_id, r, count) : -ENOSPC;
    if (len < 0) {
        if (t)
            tx_release(s, t);
        return false;
    }
    s->st.sub_requests++;
    queue_tx(s, t, (size_t)len);
    return true;
}

static uint32_t new_request_id(struct rc_sub *s, bool resync)
{
    s->next_request = (s->next_request + 1) & ~RESYNC_BIT;
    return s->next_request | (resync ? RESYNC_BIT : 0);
}

/* Resend the subscription set after WELCOME, as many messages as free send
 * slots allow now; continued from poll until done (resync_from keeps the
 * position by tag value, so changes to the set meanwhile are safe: a change
 * is also sent on its own). */
static void continue_resync(struct rc_sub *s)
{
    struct rci_wire_range *batch = s->batch;
    while (s->resync_active && !s->resync_done_sending && !s->lost && take_tx_slot(s)) {
        int done = 0;
        uint32_t n = rci_tag_ranges_slice(&s->subs, &s->resync_from, &done, batch, RCI_WIRE_MAX_RANGES);
        if (n > 0 && send_ranges(s, RCI_MSG_SUBSCRIBE, new_request_id(s, true), batch, n))
            s->resync_outstanding++;
        s->resync_done_sending = done;
    }
    if (s->resync_active && s->resync_done_sending && s->resync_outstanding == 0) {
        s->resync_active = false;
        if (s->resync_is_reconnect && s->p.cb.on_resubscribed)
            s->p.cb.on_resubscribed(s->p.cb.ctx);
    }
}

/* ---- connection setup and teardown -------------------------------------- */

static void fill_fabric_params(const struct rc_sub *s, struct rci_fabric_params *fp)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->provider, sizeof fp->provider, "%s", s->p.provider);
    fp->endpoint = s->p.endpoint == RC_SUB_EP_RDM ? RCI_EP_RDM : RCI_EP_MSG;
    snprintf(fp->address, sizeof fp->address, "%s", s->p.host);
    fp->port = s->p.port;
    fp->tx_queue = TX_SLOTS;
    fp->rx_queue = s->p.rx_buffers;
    fp->rx_buffers = s->p.rx_buffers;
    fp->rx_buffer_size = s->p.rx_buffer_size;
    fp->peer_timeout_ns = s->p.peer_timeout_ns;
    fp->heartbeat_ns = s->p.heartbeat_ns;
    fp->poll_spin_ns = s->p.poll_spin_ns;
    fp->rma = s->p.delivery == RC_SUB_DELIVERY_RMA ||   /* only then: see fabric_params.h */
              s->p.delivery == RC_SUB_DELIVERY_STREAM;
}

/* rc_sub_params.test_stall_after_chunks: it stopped reading on purpose. */
static bool stalled_on_purpose(const struct rc_sub *s)
{
    return s->p.test_stall_after_chunks && s->st.chunks >= s->p.test_stall_after_chunks;
}

/* Views of the buffer still held by the program (released from any thread:
 * acquire, so that their reads are done before the buffer is reused). */
static bool rx_held_by_views(struct rx_slot *r)
{
    return atomic_load_explicit(&r->refs, memory_order_acquire) != 0;
}

static int post_rx(struct rc_sub *s, struct rx_slot *r)
{
    if (stalled_on_purpose(s) || rx_held_by_views(r))
        return 0;   /* not posted: nothing more is read (stall), or later (views) */
    ssize_t rc = fi_recv(s->ep, r->buf, s->p.rx_buffer_size, s->rx_desc, FI_ADDR_UNSPEC, r);
    if (rc == -FI_EAGAIN)
        return 0;   /* retried from poll */
    if (rc)
        return rci_fabric_error(&s->f, s->err, sizeof s->err, "fi_recv", (int)rc);
    r->posted = true;
    s->rx_posted++;
    return 0;
}

/* A slot's receive completed (or the endpoint closed): no longer posted. */
static void rx_unposted(struct rc_sub *s, struct rx_slot *r)
{
    if (r->posted)
        s->rx_posted--;
    r->posted = false;
}

static int post_all_rx(struct rc_sub *s)
{
    int done = 0;
    /* Every poll (also each turn of the spin) comes here: the scan of
     * every slot is for the ones not posted only (issue 17: with 8
     * subscribers on 2 cores the empty scans took 8 % of a subscriber). */
    if (s->rx_posted == s->p.rx_buffers)
        return 0;
    for (uint32_t i = 0; i < s->p.rx_buffers; i++) {
        if (s->rx[i].posted || s->rx[i].held || rx_held_by_views(&s->rx[i]))
            continue;
        int rc = post_rx(s, &s->rx[i]);
        if (rc)
            return rc;
        done += s->rx[i].posted;
    }
    return done;
}

static int register_buffers(struct rc_sub *s)
{
    if (!s->f.mr_local)
        return 0;   /* descriptors stay NULL: the provider needs none */
    int rc = rci_mem_pool_register(s->pool, &s->f, s->ep, FI_RECV | FI_SEND, s->err, sizeof s->err);
    s->rx_desc = rc ? NULL : rci_mem_pool_desc(s->pool, s->rx_mb[0]);
    return rc;
}

static int send_hello(struct rc_sub *s)
{
    uint8_t addr[RCI_WIRE_MAX_ADDR];
    size_t addr_len = 0;
    if (s->f.rdm) {   /* the publisher answers to the address we announce */
        addr_len = sizeof addr;
        int rc = rci_fabric_getname(&s->f, s->ep, addr, &addr_len, s->err, sizeof s->err);
        if (rc)
            return rc;
    }
    struct tx_slot *t = take_tx_slot(s);   /* a new connection: all are free */
    if (!t)
        return -ENOBUFS;
    ssize_t len = rci_wire_build_hello(t->buf, TX_SLOT_SIZE, s->client_id, s->p.rx_buffer_size, addr,
                                      (uint16_t)addr_len);
    if (len > 0 && (s->rma_announced || s->stream_announced))
        len = rci_wire_add_hello_rma(t->buf, TX_SLOT_SIZE, (size_t)len, &s->rma_offer);
    if (len > 0 && s->stream_announced) {
        struct rci_wire_hello_stream st = { .card = s->p.stream_card, .start_offset = s->stream_start };
        len = rci_wire_add_hello_stream(t->buf, TX_SLOT_SIZE, (size_t)len, &st);
    }
    if (len < 0) {
        tx_release(s, t);
        return (int)len;
    }
    queue_tx(s, t, (size_t)len);
    if (s->lost)
        return -EIO;
    s->state = ST_HELLO_SENT;
    s->deadline_ns = rci_now_ns() + s->p.peer_timeout_ns;
    return 0;
}

/* RMA delivery asked: register the ring for remote write and offer it in
 * HELLO; a provider without RMA here means send delivery, said and counted. */
static int offer_rma_ring(struct rc_sub *s)
{
    s->rma_announced = false;
    if (s->p.delivery != RC_SUB_DELIVERY_RMA)
        return 0;
    if (!s->f.rma) {
        s->st.rma_fallbacks++;
        rci_set_err(s->err, sizeof s->err, "RMA delivery asked, served by send: provider %s has no FI_RMA "
                    "with 8 bytes of CQ data here", s->p.provider);
        return 0;
    }
    if (rci_sub_rma_busy(&s->rma)) {   /* views of the last connection still hold ring space */
        s->st.rma_fallbacks++;
        s->st.rma_ring_busy++;
        rci_set_err(s->err, sizeof s->err, "RMA delivery asked, served by send: views still hold "
                    "ring space of the previous connection");
        return 0;
    }
    char why[200];
    int rc = rci_sub_rma_connect(&s->rma, &s->f, s->ep, &s->rma_offer, why, sizeof why);
    if (rc) {
        rci_set_err(s->err, sizeof s->err, "RMA receive ring (%llu B) not registered for remote write: %s",
                    (unsigned long long)s->rma.size, why);
        return rc;
    }
    s->rma_offer.key ^= s->p.test_rma_key_xor;   /* 0 but in tests of a wrong key */
    s->rma_announced = true;
    return 0;
}

/* Block stream: register the ring and ask for the card in HELLO. Needs
 * FI_RMA here (no fallback: blocks cannot come by send) and a ring whose
 * blocks of the last connection were all given back, no view held. */
static int offer_stream_ring(struct rc_sub *s)
{
    s->stream_announced = false;
    if (s->p.delivery != RC_SUB_DELIVERY_STREAM)
        return 0;
    if (!s->f.rma) {
        rci_set_err(s->err, sizeof s->err, "block stream asked: provider %s has no FI_RMA with 8 bytes of CQ "
                    "data here", s->p.provider);
        return -ENOTSUP;
    }
    s->sops.decode(s->sops.ctx);   /* views released since: the ring moves on */
    /* The views too: one of a chunk whose head was spilled out of a full
     * ring and whose end came without a byte holds no ring block, only the
     * decoder's memory, which a new connection may replace (a restarted
     * daemon, another block size: api/client_stream.c dec_open). */
    if (!rci_sub_stream_idle(&s->stream) || rci_view_pool_outstanding(s->views) != 0) {
        s->st.stream_ring_busy++;
        rci_set_err(s->err, sizeof s->err, "block stream: views still hold blocks of the previous "
                    "connection; connecting once they are released");
        return -EBUSY;
    }
    /* start_offset must suit the card's block size, which only WELCOME
     * tells (a restarted daemon may have a larger one). */
    int64_t skipped = rci_sub_stream_realign(&s->stream);
    if (skipped < 0) {
        rci_set_err(s->err, sizeof s->err, "block stream: the ring could not be moved to an aligned start: %s",
                    strerror((int)-skipped));
        return (int)skipped;
    }
    if (skipped > 0) {
        s->sops.moved(s->sops.ctx);
        s->st.stream_skipped_bytes += (uint64_t)skipped;
    }
    char why[200];
    int rc = rci_sub_stream_connect(&s->stream, &s->f, s->ep, &s->rma_offer, &s->stream_start, why, sizeof why);
    if (rc) {
        rci_set_err(s->err, sizeof s->err, "stream ring (%llu B) not registered for remote write: %s",
                    (unsigned long long)s->stream.size, why);
        return rc;
    }
    s->stream_announced = true;
    return 0;
}

/* Open everything of one connection; RDM: send HELLO, MSG: start the
 * connect (HELLO follows FI_CONNECTED). Receives are posted first so that
 * nothing the publisher sends can find no buffer. */
static int open_connection(struct rc_sub *s)
{
    struct rci_fabric_params fp;
    fill_fabric_params(s, &fp);
    int rc = rci_fabric_open(&s->f, &fp, RCI_FABRIC_CONNECT, s->p.rx_buffers + TX_SLOTS, s->err,
                            sizeof s->err);
    if (rc)
        return rc;
    s->fabric_open = true;
    s->peer = FI_ADDR_UNSPEC;
    if (s->f.rdm) {
        s->ep = s->f.ep;
        rc = rci_fabric_av_insert(&s->f, s->f.info->dest_addr, s->f.info->dest_addrlen, &s->peer, s->err,
                                 sizeof s->err);
    } else {
        rc = rci_fabric_msg_ep_open(&s->f, NULL, s, &s->ep, s->err, sizeof s->err);
    }
    if (!rc)
        rc = register_buffers(s);
    if (!rc)
        rc = offer_rma_ring(s);
    if (!rc)
        rc = offer_stream_ring(s);
    if (rc)
        return rc;
    int posted = post_all_rx(s);
    if (posted < 0)
        return posted;
    if (s->f.rdm)
        return send_hello(s);
    rc = fi_connect(s->ep, s->f.info->dest_addr, NULL, 0);
    if (rc)
        return rci_fabric_error(&s->f, s->err, sizeof s->err, "fi_connect", rc);
    s->state = ST_CONNECTING;
    s->deadline_ns = rci_now_ns() + s->p.peer_timeout_ns;
    return 0;
}

/* shm 1.17: our first send to the publisher queues a connection request in
 * its region and returns -FI_EAGAIN until the publisher has read it. If our
 * endpoint (and its /dev/shm file) is gone before that, the publisher reads
 * the request, cannot map our region and dereferences NULL
 * (smr_progress_connreq): it crashes. So while a send is still queued here,
 * wait (bounded) for the publisher to take the request before closing. */
static void let_shm_connreq_land(struct rc_sub *s)
{
    if (!s->fabric_open || !s->ep || s->tx_queue_len == 0 || strcmp(s->p.provider, "shm") != 0)
        return;
    uint64_t deadline = rci_now_ns() + SHM_CONNREQ_WAIT_NS;
    while (s->tx_queue_len > 0 && rci_now_ns() < deadline) {
        struct rci_fabric_cqe c[CQ_BATCH];
        if (rci_fabric_cq_poll(&s->f, c, CQ_BATCH, NULL, 0) < 0)
            break;
        if (flush_tx_queue(s) == 0 && s->tx_queue_len > 0) {
            struct timespec pause = { 0, 1000000 };
            nanosleep(&pause, NULL);
        }
    }
}

/* The endpoint goes before the memory registrations its operations use (as
 * in rci_publisher_destroy): tcp;ofi_rxm completes or flushes receives and
 * rendezvous reads while it closes, through the descriptors they were posted
 * with, and a registration closed first sent fi_close into freed memory
 * (test_net_publisher's disconnect test, about 1 run in 10 under load). */
static void close_endpoint(struct rc_sub *s)
{
    if (!s->fabric_open)
        return;
    if (s->f.rdm) {
        rci_fabric_ep_close(s->f.ep);
        s->f.ep = NULL;
    } else {
        rci_fabric_ep_close(s->ep);
    }
    s->ep = NULL;
}

static void close_connection(struct rc_sub *s)
{
    let_shm_connreq_land(s);
    close_endpoint(s);
    rci_mem_pool_deregister(s->pool);
    s->rx_desc = NULL;
    if (s->p.delivery == RC_SUB_DELIVERY_RMA)
        rci_sub_rma_disconnect(&s->rma);   /* nothing posted is ours to wait for: writes land or not */
    s->rma_announced = false;
    s->st.rma_active = 0;
    if (s->p.delivery == RC_SUB_DELIVERY_STREAM) {
        rci_sub_stream_disconnect(&s->stream);   /* writes in flight land or not: never decoded */
        s->sops.disconnect(s->sops.ctx);
    }
    s->stream_announced = false;
    s->st.stream_active = 0;
    if (s->fabric_open)
        rci_fabric_close(&s->f);
    s->fabric_open = false;
    s->ep = NULL;
    /* Nothing posted on a closed endpoint completes: every slot is ours. */
    for (uint32_t i = 0; i < s->p.rx_buffers; i++)
        s->rx[i].posted = s->rx[i].held = false;
    s->rx_posted = 0;
    s->st.held_dropped += s->nheld;   /* received, but an earlier one never came */
    s->nheld = 0;
    s->nknown_lost = 0;
    s->next_seq = 0;   /* each connection numbers its stream from 0 */
    for (uint32_t i = 0; i < TX_SLOTS; i++)
        tx_release(s, &s->tx[i]);
    s->tx_queue_head = s->tx_queue_len = 0;
    s->ra.active = false;
    rc_view_release(s->ra.gather);   /* a chunk cut by the disconnect: its records go back */
    s->ra.gather = NULL;
    s->resync_active = false;
    s->resync_outstanding = s->user_outstanding = 0;
    s->lost = false;
    s->state = ST_IDLE;
}

static bool is_tx_context(const struct rc_sub *s, const void *ctx)
{
    return (uintptr_t)ctx >= (uintptr_t)s->tx && (uintptr_t)ctx < (uintptr_t)(s->tx + TX_SLOTS);
}

/* MSG, after a BYE left: wait (up to BYE_LINGER_NS) for the publisher to
 * read it and close. Receives meanwhile are discarded and posted again:
 * closing first, with its sends unread in our socket, resets the connection
 * (tcp), the publisher's sends fail before it sees the BYE and a normal
 * leave looks like a failure there. Nothing is delivered any more. */
static bool is_rx_context(const struct rc_sub *s, const void *ctx)
{
    return (uintptr_t)ctx >= (uintptr_t)s->rx && (uintptr_t)ctx < (uintptr_t)(s->rx + s->p.rx_buffers);
}

/* A receive completion while leaving: discarded, the buffer posted again so
 * the publisher's sends go on completing. false: stop. */
static bool repost_rx(struct rc_sub *s, const struct rci_fabric_cqe *c)
{
    struct rx_slot *r = (struct rx_slot *)c->context;
    rx_unposted(s, r);
    return !c->err && !r->held && post_rx(s, r) == 0;
}

/* The same while the BYE leaves (MSG only: RDM lingers afterwards). */
static bool discard_rx(struct rc_sub *s, const struct rci_fabric_cqe *c)
{
    if (s->f.rdm || !is_rx_context(s, c->context))
        return true;
    return repost_rx(s, c);
}

static void linger_after_bye(struct rc_sub *s)
{
    uint64_t deadline = rci_now_ns() + BYE_LINGER_NS;
    while (rci_now_ns() < deadline) {
        struct rci_fabric_event ev;
        if (rci_fabric_eq_poll(&s->f, &ev, NULL, 0) == 1) {
            if (ev.info)
                fi_freeinfo(ev.info);
            if (ev.fid == &s->ep->fid && (ev.err || ev.event == FI_SHUTDOWN))
                return;   /* the publisher closed: nothing of ours is unread any more */
        }
        struct rci_fabric_cqe c[CQ_BATCH];
        int n = rci_fabric_cq_poll(&s->f, c, CQ_BATCH, NULL, 0);
        if (n < 0)
            return;
        for (int i = 0; i < n; i++)
            if (!discard_rx(s, &c[i]))
                return;
    }
}

/* RDM, after a BYE left: the publisher does not answer it (net/README.md,
 * "Dead peers"), so read and discard its sends until none came for
 * BYE_RDM_QUIET_NS (at most BYE_LINGER_NS). Closing at once, with its sends
 * in flight, made them fail at the publisher, which then ended us as dead
 * before it read the BYE: a normal leave logged as a failure, its handled
 * count lost. */
static void linger_rdm_after_bye(struct rc_sub *s)
{
    uint64_t now = rci_now_ns();
    uint64_t deadline = now + BYE_LINGER_NS, last_rx = now;
    while (now < deadline && now - last_rx < BYE_RDM_QUIET_NS) {
        struct rci_fabric_cqe c[CQ_BATCH];
        int n = rci_fabric_cq_poll(&s->f, c, CQ_BATCH, NULL, 0);
        if (n < 0)
            return;
        now = rci_now_ns();
        for (int i = 0; i < n; i++) {
            if (!is_rx_context(s, c[i].context))
                continue;
            last_rx = now;
            if (!repost_rx(s, &c[i]))
                return;
        }
    }
}

/* ---- the handled count of an orderly BYE (wire version 3) ----------------- */

/* A new connection: nothing handled on it yet; its WELCOME says whether the
 * publisher takes the count (a version-2 publisher rejects a 24-byte BYE). */
static void leave_count_start(struct rc_sub *s, const uint8_t *welcome)
{
    s->conn_chunks_handled = 0;
    s->publisher_takes_count = rci_wire_welcome_takes_bye_handled(welcome);
}

/* The BYE to send: with the count when leaving in order to a publisher that
 * takes it, so that what it sent and we never read is counted there. */
static size_t leave_count_bye(struct rc_sub *s, uint8_t *buf, enum rci_bye_reason reason)
{
    if (reason == RCI_BYE_NORMAL && s->publisher_takes_count)
        return (size_t)rci_wire_build_bye_handled(buf, TX_SLOT_SIZE, s->conn_chunks_handled);
    return (size_t)rci_wire_build_bye(buf, TX_SLOT_SIZE, reason);
}

/* Give a BYE a short chance to leave before the endpoint closes. Only send
 * completions are looked at: nothing is delivered any more. */
static void say_bye(struct rc_sub *s, enum rci_bye_reason reason)
{
    struct tx_slot *t = take_tx_slot(s);
    if (!t)
        return;
    queue_tx(s, t, leave_count_bye(s, t->buf, reason));
    uint64_t deadline = rci_now_ns() + BYE_FLUSH_NS;
    while (t->state != TX_FREE && rci_now_ns() < deadline) {
        struct rci_fabric_cqe c[CQ_BATCH];
        int n = rci_fabric_cq_poll(&s->f, c, CQ_BATCH, NULL, 0);
        if (n < 0)
            break;
        for (int i = 0; i < n; i++)
            if (is_tx_context(s, c[i].context))
                tx_release(s, (struct tx_slot *)c[i].context);
            else if (reason == RCI_BYE_NORMAL)
                discard_rx(s, &c[i]);
        flush_tx_queue(s);
    }
    if (t->state == TX_FREE && s->ep && reason == RCI_BYE_NORMAL) {
        if (s->f.rdm)
            linger_rdm_after_bye(s);
        else
            linger_after_bye(s);
    }
}

/* End the connection: callbacks, counters, next attempt. */
static void drop_connection(struct rc_sub *s, enum rc_sub_disconnect_reason reason)
{
    bool was_active = s->state == ST_ACTIVE;
    if (was_active && (reason == RC_SUB_DISC_PROTOCOL || reason == RC_SUB_DISC_CLOSED ||
                       (reason == RC_SUB_DISC_BYE && s->answer_bye)))
        say_bye(s, reason == RC_SUB_DISC_PROTOCOL ? RCI_BYE_PROTOCOL : RCI_BYE_NORMAL);
    s->answer_bye = false;
    close_connection(s);
    s->next_attempt_ns = rci_now_ns() + s->p.reconnect_interval_ns;
    if (!was_active) {
        s->st.connect_failures++;
        return;
    }
    s->st.disconnects++;
    s->st.connected = 0;
    if (reason == RC_SUB_DISC_PROTOCOL)
        s->st.garbage_disconnects++;
    if (s->p.cb.on_disconnect)
        s->p.cb.on_disconnect(s->p.cb.ctx, reason);
}

static void try_connect(struct rc_sub *s)
{
    /* s->err keeps the previous attempt's failure: a run that ends during a
     * new attempt must still say why the last one failed. */
    s->conn_malformed = 0;
    if (open_connection(s)) {
        close_connection(s);
        s->st.connect_failures++;
        s->next_attempt_ns = rci_now_ns() + s->p.reconnect_interval_ns;
        return;
    }
    s->last_rx_ns = s->last_hb_ns = rci_now_ns();
    s->heartbeat_ns = s->p.heartbeat_ns;
}

void rc_sub_destroy(struct rc_sub *s)
{
    if (!s)
        return;
    if (s->state == ST_ACTIVE)
        drop_connection(s, RC_SUB_DISC_CLOSED);
    else if (s->fabric_open)
        close_connection(s);   /* not connected yet: nobody to tell */
    rci_tag_ranges_free(&s->subs);
    if (s->p.delivery == RC_SUB_DELIVERY_RMA)
        rci_sub_rma_destroy(&s->rma);
    if (s->has_sops)
        s->sops.destroy(s->sops.ctx);   /* its views must be released by now (view.h) */
    if (s->p.delivery == RC_SUB_DELIVERY_STREAM)
        rci_sub_stream_destroy(&s->stream);
    pool_destroy(s);
    free(s->rx);
    rci_reasm_put(s->reasm);
    rci_view_pool_destroy(s->views);
    free(s);
}

/* ---- receiving ------------------------------------------------------------- */

static bool wanted(struct rc_sub *s, uint64_t tag)
{
    s->conn_chunks_handled++;   /* read whole: handed on, or not wanted any more */
    if (rci_tag_ranges_contains(&s->subs, tag))
        return true;
    s->st.unwanted++;
    return false;
}

/* Hand a view to on_view; the library's own reference goes after the call. */
static void hand_on_view(struct rc_sub *s, struct rc_view *v)
{
    s->st.chunks++;
    s->st.bytes += v->len;
    s->p.on_view(s->p.cb.ctx, v);
    rci_view_release_owner(v);   /* our thread: a view not kept is reused next, in cache */
}

/* A view of one piece of the memory the message being handled lives in (or
 * of the reassembly buffer): it holds that memory until released. NULL
 * when no memory was left for the view (counted). */
static struct rc_view *source_view(struct rc_sub *s, enum rci_view_kind kind, uint64_t tag, uint32_t flags,
                                   const void *data, size_t len)
{
    struct rc_view *v = rci_view_get(s->views, kind, tag, flags);
    if (!v) {
        s->st.view_failures++;
        return NULL;
    }
    if (kind == RCI_VIEW_RX) {
        rci_view_add_rx_piece(v, data, len, &s->src_slot->refs);
    } else if (kind == RCI_VIEW_RMA) {
        v->hold.rma = &s->rma;
        rci_view_add_rma_piece(v, data, len, s->src_key);
        s->src_key_owned = false;
    } else {
        rci_view_add_piece(v, data, len);
        v->hold.reasm = s->reasm;
        atomic_fetch_add_explicit(&s->reasm->refs, 1, memory_order_relaxed);
    }
    return v;
}

/* One chunk in one piece, from the current message's memory (kind RX or
 * RMA) or from the reassembly buffer (REASM). */
static void deliver(struct rc_sub *s, enum rci_view_kind kind, uint64_t tag, uint32_t flags,
                    const void *data, size_t len)
{
    if (!wanted(s, tag))
        return;
    if (!s->p.on_view) {
        s->st.chunks++;
        s->st.bytes += len;
        s->p.cb.on_data(s->p.cb.ctx, tag, flags, data, len);
        return;
    }
    struct rc_view *v = source_view(s, kind, tag, flags, data, len);
    if (v)
        hand_on_view(s, v);
}

/* The reassembly is over (done or abandoned): a gathered view goes back. */
static void drop_gather(struct rc_sub *s)
{
    rc_view_release(s->ra.gather);
    s->ra.gather = NULL;
}

void rci_sub_park(struct rc_sub *s)
{
    if (s->ra.active && !s->ra.discard)
        s->st.reassembly_drops++;
    drop_gather(s);
    s->ra.active = false;
}

/* A fragment that does not continue the chunk under reassembly: that chunk
 * (if any, and not already counted) is lost; so is the chunk the fragment
 * belongs to unless it is its fragment 0 or the same, already counted chunk.
 * The rest of a lost chunk's fragments are then skipped without counting. */
static void reassembly_broken(struct rc_sub *s, const struct rci_wire_data *d)
{
    struct reassembly *ra = &s->ra;
    bool same_chunk = ra->active && d->tag == ra->tag && d->frag_count == ra->frag_count &&
                      d->chunk_len == ra->chunk_len;
    if (ra->active && !ra->discard)
        s->st.reassembly_drops++;
    drop_gather(s);
    if (d->frag_index == 0) {
        ra->active = false;
        return;
    }
    if (!same_chunk)
        s->st.reassembly_drops++;
    *ra = (struct reassembly){.active = true, .discard = true, .tag = d->tag,
                              .chunk_len = d->chunk_len, .frag_count = d->frag_count};
    ra->next_index = d->frag_index;
}

static bool continues(const struct reassembly *ra, const struct rci_wire_data *d)
{
    return ra->active && d->tag == ra->tag && d->frag_count == ra->frag_count &&
           d->chunk_len == ra->chunk_len && d->frag_index == ra->next_index &&
           (ra->discard || d->frag_offset == ra->next_offset);
}

/* A reassembly buffer of at least len bytes that no view holds: ours if
 * free, else a new one (the held one is freed by its last view). */
static bool reasm_ready(struct rc_sub *s, size_t len)
{
    if (atomic_load_explicit(&s->reasm->refs, memory_order_acquire) == 1 && s->reasm->size >= len)
        return true;
    struct rci_reasm *fresh = rci_reasm_new(len);
    if (!fresh) {
        s->st.view_failures++;
        return false;
    }
    rci_reasm_put(s->reasm);
    s->reasm = fresh;
    s->st.views_allocated++;
    return true;
}

/* ---- gathering: a fragmented chunk as one view of its fragments ------------
 * With on_view a chunk that came in several messages (send delivery: it is
 * larger than one receive buffer) or records (RMA) is handed on as one view
 * of one piece per fragment, each piece inside the receive buffer or ring
 * record it arrived in, not copied. Each piece holds its buffer (record)
 * until the view's last release (sub_view.h), so an incomplete chunk holds
 * the buffers of its fragments so far. What bounds that:
 *  - send: a chunk is gathered only when it has at most RC_VIEW_MAX_PIECES
 *    fragments and, with it, at most half the receive buffers are busy
 *    (held by views or for order): its last fragment always finds a
 *    buffer, and a program keeping at most rx_buffers / 2 views never holds
 *    them all. While it is gathered, if no buffer can be posted any more
 *    (the program or the stream order took the rest), it is copied after
 *    all, and its buffers go back (gather_keep_receiving);
 *  - RMA: at most RC_VIEW_MAX_PIECES records and half the ring (gather_add).
 * Otherwise, and always with on_data, the chunk is copied into the
 * reassembly buffer, counted (chunks_reassembled_copied, rma_chunks_copied).
 * A reassembly that ends without a chunk (a gap, another chunk's fragment,
 * a disconnect) releases the gathered view: each buffer or record it holds
 * goes back once. */

/* Receive buffers that cannot take a message now: held by views (the
 * program's, or a chunk being gathered) or holding a message for order. */
static uint32_t rx_buffers_busy(const struct rc_sub *s)
{
    uint32_t busy = 0;
    for (uint32_t i = 0; i < s->p.rx_buffers; i++)
        busy += s->rx[i].held || atomic_load_explicit(&s->rx[i].refs, memory_order_relaxed) != 0;
    return busy;
}

/* A receive buffer is posted, or free to be posted. Stops at the first
 * one: while receiving goes on that is one of the first few. */
static bool rx_can_receive(struct rc_sub *s)
{
    for (uint32_t i = 0; i < s->p.rx_buffers; i++)
        if (s->rx[i].posted || (!s->rx[i].held && !rx_held_by_views(&s->rx[i])))
            return true;
    return false;
}

/* Send delivery: may a chunk of frag_count fragments hold its buffers? */
static bool rx_gather_fits(const struct rc_sub *s, uint32_t frag_count)
{
    return frag_count <= RC_VIEW_MAX_PIECES && rx_buffers_busy(s) + frag_count <= s->p.rx_buffers / 2;
}

static void start_reassembly(struct rc_sub *s, const struct rci_wire_data *d)
{
    bool fits = d->chunk_len <= s->p.max_chunk_size;
    if (!fits)
        s->st.too_big++;
    s->ra = (struct reassembly){.active = true, .discard = !fits, .src_kind = s->src_kind, .tag = d->tag,
                                .flags = d->flags, .chunk_len = d->chunk_len, .frag_count = d->frag_count};
    /* RMA records are gathered optimistically (gather_add bounds them);
     * receive buffers only when the whole chunk fits the rule above. */
    bool gather = s->src_kind == RCI_VIEW_RMA || rx_gather_fits(s, d->frag_count);
    if (fits && s->p.on_view && gather)
        s->ra.gather = rci_view_get(s->views, s->src_kind, d->tag, d->flags);
    if (s->ra.gather) {
        if (s->src_kind == RCI_VIEW_RMA)
            s->ra.gather->hold.rma = &s->rma;
    } else if (fits && !reasm_ready(s, d->chunk_len)) {
        s->ra.discard = true;   /* counted in view_failures */
        s->st.reassembly_drops++;
    }
}

/* Add this fragment's payload to the gathered view, holding the buffer or
 * record it lies in. false when it cannot be: the view is full, the
 * fragment came the other way (send vs RMA) than fragment 0, or, RMA, the
 * chunk would hold more than half the ring (the publisher could then wait
 * for space we cannot release before the chunk is complete). */
static bool gather_add(struct rc_sub *s, const uint8_t *payload, uint32_t len)
{
    struct rc_view *v = s->ra.gather;
    if (v->kind != s->src_kind)
        return false;
    if (v->kind == RCI_VIEW_RX)
        return rci_view_add_rx_piece(v, payload, len, &s->src_slot->refs);
    if (s->ra.next_offset + (uint64_t)len > s->rma.size / 2 ||
        !rci_view_add_rma_piece(v, payload, len, s->src_key))
        return false;
    s->src_key_owned = false;
    return true;
}

/* The gathered fragments go into the reassembly buffer after all (their
 * buffers or ring space go back), the rest of the chunk is copied too. */
static void gather_to_copy(struct rc_sub *s)
{
    struct rc_view *v = s->ra.gather;
    if (!reasm_ready(s, s->ra.chunk_len)) {
        s->ra.discard = true;   /* counted in view_failures */
        s->st.reassembly_drops++;
        drop_gather(s);
        return;
    }
    rc_view_copy(v, 0, s->reasm->data, v->len);
    drop_gather(s);
}

/* After a receive: a chunk being gathered from receive buffers must not
 * leave none to receive its next fragment with (the program's views or
 * messages held for order took the others): copy it instead. */
static void gather_keep_receiving(struct rc_sub *s)
{
    if (s->lost || !s->ra.gather || s->ra.gather->kind != RCI_VIEW_RX || stalled_on_purpose(s))
        return;
    if (!rx_can_receive(s))
        gather_to_copy(s);
}

static void reassembly_done(struct rc_sub *s)
{
    struct reassembly *ra = &s->ra;
    ra->active = false;
    if (ra->discard) {
        drop_gather(s);
        return;
    }
    s->st.reassembled++;
    if (!ra->gather) {
        if (ra->src_kind == RCI_VIEW_RMA)
            s->st.rma_chunks_copied++;
        else
            s->st.chunks_reassembled_copied++;
        deliver(s, RCI_VIEW_REASM, ra->tag, ra->flags, s->reasm->data, ra->chunk_len);
        return;
    }
    struct rc_view *v = ra->gather;
    ra->gather = NULL;
    if (v->kind == RCI_VIEW_RMA)
        s->st.rma_chunks_gathered++;
    else
        s->st.chunks_gathered++;
    v->flags = ra->flags;
    if (wanted(s, ra->tag))
        hand_on_view(s, v);
    else
        rc_view_release(v);
}

static void handle_fragment(struct rc_sub *s, const struct rci_wire_data *d, const uint8_t *payload,
                            uint32_t len)
{
    struct reassembly *ra = &s->ra;
    s->st.fragments++;
    if (!continues(ra, d)) {
        if (ra->active || d->frag_index != 0)
            reassembly_broken(s, d);
        if (d->frag_index == 0)
            start_reassembly(s, d);
    }
    if (!ra->discard) {
        if (ra->gather && !gather_add(s, payload, len))
            gather_to_copy(s);
        if (!ra->gather && !ra->discard)
            memcpy(s->reasm->data + ra->next_offset, payload, len);
        ra->flags |= d->flags;
    }
    ra->next_offset += len;
    ra->next_index++;
    if (ra->next_index == ra->frag_count)
        reassembly_done(s);
}

static void rma_bad_record(struct rc_sub *s);

static void handle_data(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    struct rci_wire_data d;
    /* Checked by the caller; read once more into d, and only d is used
     * below. A receive buffer cannot change, but an RMA record lies in our
     * ring, which the publisher can write at any moment: a header changed
     * since its check would leave d unset (chunk_len, frag_offset: the
     * reassembly's bounds). */
    if (rci_wire_check_data(buf, len, &d) != RCI_WIRE_OK) {
        rci_set_err(s->rma.why, sizeof s->rma.why, "bad RMA record: its header changed after it was checked");
        rma_bad_record(s);
        return;
    }
    const uint8_t *payload = buf + sizeof d;
    uint32_t plen = (uint32_t)(len - sizeof d);
    s->st.data_messages++;
    if (d.frag_count > 1) {
        handle_fragment(s, &d, payload, plen);
        return;
    }
    if (s->ra.active && !s->ra.discard)
        s->st.reassembly_drops++;   /* a whole chunk cut into a fragmented one */
    s->ra.active = false;
    drop_gather(s);
    deliver(s, s->src_kind, d.tag, d.flags, payload, plen);
}

static void handle_page(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    struct rci_wire_record_view rec;
    size_t pos = 0;
    s->st.pages++;
    while (rci_wire_page_next(buf, len, &pos, &rec)) {
        s->st.records++;
        deliver(s, s->src_kind, rec.tag, rec.flags, rec.payload, rec.len);
    }
}

/* ---- stream order -----------------------------------------------------------
 * DATA and PAGE carry the publisher's stream sequence number (wire.h). Some
 * providers complete receives out of order (tcp;ofi_rxm does with mixed
 * message sizes: a rendezvous message completes after the eager ones behind
 * it, net/README.md), so a message that comes before its turn keeps its
 * receive buffer, unposted, until the ones before it were handled.
 *
 * How long to wait for the missing one: the providers here match receives
 * in order and complete every matched receive or fail the connection, so
 * while the connection lives the missing message is in flight, however slow
 * (under CPU starvation rxm took 2.6 s for a run of 20-60 KiB rendezvous
 * messages while 43 later ones completed: a timer declared them lost, then
 * they came). Waiting ends only on evidence:
 *   - the hold is full: at most rx_buffers - 1 are held (one buffer stays
 *     posted for the missing message); one more means it cannot be matched;
 *   - a stream message came unusable (malformed, or truncated with its number
 *     unreadable): it may have been the missing one;
 *   - a truncated message with a readable number: that number is lost
 *     (known_lost), the others are still awaited;
 *   - the publisher ends the connection (BYE): what is held is handed on.
 * The missing messages are then declared lost (seq_lost) and the held ones
 * are handled; a message that arrives after that, or twice, is dropped
 * (seq_late). A connection that dies drops what is held (held_dropped). All
 * of it is counted. */

static bool seq_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

static void handle_stream_message(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    /* An RMA record was checked as DATA (sub_rma.c); its type byte is not
     * read again: pages would hand one record's key to several views. */
    if (s->src_kind != RCI_VIEW_RMA && buf[offsetof(struct rci_wire_hdr, type)] == RCI_MSG_PAGE)
        handle_page(s, buf, len);
    else
        handle_data(s, buf, len);
    s->next_seq++;
}

/* next_seq is a number that came truncated: count it lost, forget it. */
static bool skip_known_lost(struct rc_sub *s)
{
    for (uint32_t i = 0; i < s->nknown_lost; i++) {
        if (s->known_lost[i] == s->next_seq) {
            s->known_lost[i] = s->known_lost[--s->nknown_lost];
            s->st.seq_lost++;
            s->next_seq++;
            return true;
        }
    }
    return false;
}

/* Linear: only walked while something is held, i.e. after a reordering. */
static struct rx_slot *held_slot(struct rc_sub *s, uint32_t seq)
{
    for (uint32_t i = 0; i < s->p.rx_buffers; i++)
        if (s->rx[i].held && s->rx[i].seq == seq)
            return &s->rx[i];
    return NULL;
}

static uint32_t lowest_held_seq(const struct rc_sub *s)
{
    bool any = false;
    uint32_t low = 0;
    for (uint32_t i = 0; i < s->p.rx_buffers; i++) {
        const struct rx_slot *r = &s->rx[i];
        if (r->held && (!any || seq_before(r->seq, low))) {
            low = r->seq;
            any = true;
        }
    }
    return low;
}

/* Handle held messages whose turn has come; their buffers are reposted by
 * the poll loop. */
static void handle_held_in_order(struct rc_sub *s)
{
    struct rx_slot *r;
    while (!s->lost && (s->nheld || s->nknown_lost)) {
        if (skip_known_lost(s))
            continue;
        if ((r = held_slot(s, s->next_seq)) == NULL)
            break;
        r->held = false;
        s->nheld--;
        s->src_slot = r;
        handle_stream_message(s, r->buf, r->len);
    }
}

/* Give up waiting for next_seq: everything before the lowest held message
 * counts as lost, and the held ones are handled. */
static void skip_to_lowest_held(struct rc_sub *s)
{
    uint32_t low = lowest_held_seq(s);
    s->st.seq_lost += low - s->next_seq;
    s->next_seq = low;
    handle_held_in_order(s);
}

/* A stream message came unusable: if it was the one awaited, it never will
 * come, so what is held goes on now (the stream-order rules above). */
static void unusable_stream_message(struct rc_sub *s)
{
    if (s->state == ST_ACTIVE && !s->lost && s->nheld)
        skip_to_lowest_held(s);
}

/* The publisher ends the connection: what is held is handed on, each gap
 * before it counted lost; nothing more will come to fill them. */
static void hand_on_held_at_end(struct rc_sub *s)
{
    while (s->state == ST_ACTIVE && !s->lost && s->nheld)
        skip_to_lowest_held(s);
}

/* A truncated receive of a stream message: its number is lost, counted, and
 * the stream goes on without waiting for it (at once when it was due, else
 * when its turn comes). Without a readable number it is unusable. */
static void truncated_stream_message(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    uint8_t type = len >= sizeof(struct rci_wire_hdr) ? buf[offsetof(struct rci_wire_hdr, type)] : 0;
    bool numbered = (type == RCI_MSG_DATA && len >= sizeof(struct rci_wire_data)) ||
                    (type == RCI_MSG_PAGE && len >= sizeof(struct rci_wire_page));
    if (s->state != ST_ACTIVE)
        return;
    if (!numbered) {
        unusable_stream_message(s);
        return;
    }
    uint32_t seq = rci_wire_stream_seq(buf);
    if (seq_before(seq, s->next_seq))
        return;   /* already given up: a late one */
    if (seq != s->next_seq && s->nknown_lost < KNOWN_LOST_MAX) {
        s->known_lost[s->nknown_lost++] = seq;
        return;
    }
    if (seq != s->next_seq) {   /* no room to remember it: stop waiting for anything */
        unusable_stream_message(s);
        return;
    }
    s->st.seq_lost++;
    s->next_seq++;
    handle_held_in_order(s);
}

/* A valid DATA or PAGE on an active connection. Returns true when its buffer
 * is held (the caller must not repost it). */
static bool sequence_stream_message(struct rc_sub *s, struct rx_slot *r, size_t len)
{
    uint32_t seq = rci_wire_stream_seq(r->buf);
    if (seq == s->next_seq) {
        s->src_slot = r;
        handle_stream_message(s, r->buf, len);
        handle_held_in_order(s);
        return false;
    }
    if (seq_before(seq, s->next_seq) || held_slot(s, seq)) {
        s->st.seq_late++;
        return false;
    }
    s->st.reordered++;
    *r = (struct rx_slot){.buf = r->buf, .held = true, .seq = seq, .len = len};
    s->nheld++;
    if (s->nheld > s->p.rx_buffers - 1)
        skip_to_lowest_held(s);
    return true;
}

/* WELCOME granting the block stream: the card's block size and tag base;
 * the decoder is set up for them (anew for a new publisher). */
static void welcome_stream(struct rc_sub *s, const uint8_t *buf, size_t len, bool new_publisher)
{
    struct rci_wire_welcome_stream w;
    char why[200] = "";
    if (!rci_wire_welcome_stream(buf, len, &w))
        snprintf(why, sizeof why, "the publisher did not grant the block stream (it does not serve streams)");
    else if (w.card != s->p.stream_card)
        snprintf(why, sizeof why, "the publisher granted card %u, not card %u", w.card, s->p.stream_card);
    else if (s->stream.size % w.block_size || s->stream_start % w.block_size)
        snprintf(why, sizeof why, "the ring (%llu B) does not fit the card's %u B blocks",
                 (unsigned long long)s->stream.size, w.block_size);
    else if (s->sops.open(s->sops.ctx, s, s->stream.ring, w.block_size, w.tag_base, new_publisher, why,
                          sizeof why) == 0) {
        s->stream.block_size = w.block_size;
        s->stream.on = true;
        s->st.stream_active = 1;
        s->st.stream_block_size = w.block_size;
        s->st.stream_tag_base = w.tag_base;
        return;
    }
    rci_set_err(s->err, sizeof s->err, "block stream of card %u: %s", s->p.stream_card, why);
    lose(s, RC_SUB_DISC_PROTOCOL);
}

/* WELCOME says whether the publisher writes into the ring we offered. */
static void welcome_delivery(struct rc_sub *s, const uint8_t *buf, size_t len, bool new_publisher)
{
    struct rci_wire_welcome_rma w;
    if (s->stream_announced) {
        welcome_stream(s, buf, len, new_publisher);
        return;
    }
    if (!s->rma_announced)
        return;
    if (rci_wire_welcome_rma(buf, len, &w) && w.delivery == RCI_DELIVERY_RMA) {
        s->rma.on = true;
        s->st.rma_active = 1;
        return;
    }
    s->st.rma_fallbacks++;
    if (!rci_wire_welcome_rma(buf, len, &w))
        rci_set_err(s->err, sizeof s->err, "RMA delivery asked, served by send: the publisher does not "
                    "offer RMA delivery");
    else
        rci_set_err(s->err, sizeof s->err, "RMA delivery asked, served by send: %s",
                    w.fallback == RCI_RMA_NO_CAPABILITY ? "the publisher's provider has no FI_RMA"
                                                        : "the publisher gave no reason");
}

static void handle_welcome(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    struct rci_wire_welcome w;
    rci_wire_check_welcome(buf, len, &w);
    bool new_publisher = s->ever_connected && w.publisher_id != s->st.publisher_id;
    if (new_publisher)
        s->st.publisher_restarts++;
    s->st.publisher_id = w.publisher_id;
    uint64_t hb = (uint64_t)w.heartbeat_ms * 1000000ull;
    s->heartbeat_ns = hb < s->p.heartbeat_ns ? hb : s->p.heartbeat_ns;
    welcome_delivery(s, buf, len, new_publisher);
    leave_count_start(s, buf);
    s->state = ST_ACTIVE;
    s->st.connected = 1;
    s->st.connects++;
    if (s->ever_connected)
        s->st.reconnects++;
    s->resync_is_reconnect = s->ever_connected;
    s->ever_connected = true;
    s->resync_active = true;
    s->resync_done_sending = false;
    s->resync_from = 0;
    s->resync_outstanding = 0;
    if (s->p.cb.on_connect)
        s->p.cb.on_connect(s->p.cb.ctx);
    continue_resync(s);
}

static void handle_sub_ack(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    struct rci_wire_sub_ack a;
    rci_wire_check_sub_ack(buf, len, &a);
    uint32_t *outstanding = (a.request_id & RESYNC_BIT) ? &s->resync_outstanding : &s->user_outstanding;
    if (*outstanding == 0) {
        s->st.unexpected++;
        return;
    }
    (*outstanding)--;
    if (a.status != RCI_SUB_OK) {
        s->st.sub_refused++;
        rci_set_err(s->err, sizeof s->err, "subscription refused by the publisher: %s",
                   a.status == RCI_SUB_TOO_MANY_TAGS ? "too many tags (max_tags_per_subscriber,"
                                                      " or more than 1024 ranges)"
                                                    : "refused");
    }
    continue_resync(s);
}

/* The publisher ends the connection; a refusal is said in last_error, since
 * the user must learn why a subscriber never gets data. */
static void handle_bye(struct rc_sub *s, const uint8_t *buf, size_t len)
{
    struct rci_wire_bye b;
    rci_wire_check_bye(buf, len, &b);
    char code[24];
    if (b.reason == RCI_BYE_REFUSED) {
        s->st.refused++;
        rci_set_err(s->err, sizeof s->err, "refused by the publisher: %s",
                   rci_wire_refusal_name(b.detail, code, sizeof code));
    }
    else if (b.reason == RCI_BYE_PROTOCOL)
        rci_set_err(s->err, sizeof s->err, "the publisher closed the connection: protocol error");
    /* Its run is over and we read all of it: our BYE (with the count) tells
     * it so, and it stops waiting for us (readout.linger). */
    s->answer_bye = b.reason == RCI_BYE_NORMAL;
    hand_on_held_at_end(s);
    lose(s, RC_SUB_DISC_BYE);
}

static void count_malformed(struct rc_sub *s, enum rci_wire_error why)
{
    s->st.malformed[(unsigned)why < RC_SUB_MALFORMED_KINDS ? why : RCI_WIRE_BAD_FIELD]++;
    s->st.malformed_total++;
    if (++s->conn_malformed > s->p.malformed_limit)
        lose(s, RC_SUB_DISC_PROTOCOL);
}

/* A valid message arriving in a state where it makes no sense. */
static void count_unexpected(struct rc_sub *s)
{
    s->st.unexpected++;
    if (++s->conn_malformed > s->p.malformed_limit)
        lose(s, RC_SUB_DISC_PROTOCOL);
}

/* Validate and act on one received message. Returns true when the message
 * keeps its buffer (held for order). */
static bool handle_message(struct rc_sub *s, struct rx_slot *r, size_t len)
{
    const uint8_t *buf = r->buf;
    enum rci_wire_error why;
    int type = rci_wire_check(buf, len, RCI_WIRE_TO_SUBSCRIBER, &why);
    if (type == 0) {
        count_malformed(s, why);
        unusable_stream_message(s);
        return false;
    }
    s->st.messages++;
    s->last_rx_ns = rci_now_ns();
    bool active = s->state == ST_ACTIVE;
    switch (type) {
    case RCI_MSG_WELCOME:
        if (s->state == ST_HELLO_SENT)
            handle_welcome(s, buf, len);
        else
            count_unexpected(s);
        break;
    case RCI_MSG_SUB_ACK:
        if (active)
            handle_sub_ack(s, buf, len);
        else
            count_unexpected(s);
        break;
    case RCI_MSG_DATA:
    case RCI_MSG_PAGE:
        if (active)
            return sequence_stream_message(s, r, len);
        count_unexpected(s);
        break;
    case RCI_MSG_HEARTBEAT:
        s->st.heartbeats_received++;
        break;
    case RCI_MSG_BYE:
        handle_bye(s, buf, len);
        break;
    default:
        count_unexpected(s);
        break;
    }
    return false;
}

static void rx_completion(struct rc_sub *s, struct rx_slot *r, const struct rci_fabric_cqe *c)
{
    rx_unposted(s, r);
    if (c->err == FI_ETRUNC) {
        s->st.truncated++;   /* the peer ignored our rx_buffer_size */
        count_malformed(s, RCI_WIRE_BAD_LENGTH);
        truncated_stream_message(s, r->buf, c->len < s->p.rx_buffer_size ? c->len : s->p.rx_buffer_size);
    } else if (c->err) {
        s->st.rx_errors++;
        rci_fabric_error(&s->f, s->err, sizeof s->err, "fi_recv(completion)", c->err);
        lose(s, RC_SUB_DISC_SHUTDOWN);
        return;
    } else {
        s->handled++;
        if (handle_message(s, r, c->len)) {
            gather_keep_receiving(s);
            return;   /* held for order: reposted once handled */
        }
    }
    if (!s->lost && post_rx(s, r))
        lose(s, RC_SUB_DISC_SHUTDOWN);
    gather_keep_receiving(s);
}

static void tx_completion(struct rc_sub *s, struct tx_slot *t, const struct rci_fabric_cqe *c)
{
    tx_release(s, t);
    if (c->err) {
        s->st.tx_errors++;
        rci_fabric_error(&s->f, s->err, sizeof s->err, "fi_send(completion)", c->err);
        lose(s, RC_SUB_DISC_SHUTDOWN);
    }
}

/* ---- RMA delivery: records in our ring (sub_rma.h) -------------------------- */

static void rma_bad_record(struct rc_sub *s)
{
    s->st.rma_bad_records++;
    rci_set_err(s->err, sizeof s->err, "%s: connection ended", s->rma.why);
    lose(s, RC_SUB_DISC_PROTOCOL);
}

/* A record whose turn came (its space taken): handed on like a DATA message.
 * Its space goes back when the view that took its key is released, at once
 * when none did (on_data, a tag not wanted, a chunk copied). With on_view a
 * chunk of several records is gathered into one view of several pieces
 * (reassembly above); with on_data it is copied like fragments. */
static void rma_hand_on(struct rc_sub *s, const struct rci_sub_rma_record *rec)
{
    s->st.messages++;
    s->st.rma_records++;
    s->st.rma_bytes += rec->len;
    s->st.rma_skipped_bytes = s->rma.skipped;
    s->src_kind = RCI_VIEW_RMA;
    s->src_key = rec->key;
    s->src_key_owned = true;
    handle_stream_message(s, rec->buf, rec->len);
    s->src_kind = RCI_VIEW_RX;
    if (s->src_key_owned)   /* no view took it */
        rci_sub_rma_release(&s->rma, rec->key);
}

/* Give released ring space back (a quarter of the ring at a time; force:
 * whatever was released, at heartbeat time). A subscriber stalled on
 * purpose gives nothing back: the publisher then stops writing to it. */
static void rma_send_credit(struct rc_sub *s, bool force)
{
    if (!s->rma.on || s->state != ST_ACTIVE || stalled_on_purpose(s))
        return;
    uint64_t pos = rci_sub_rma_credit_due(&s->rma, force);
    if (pos == 0)
        return;
    struct tx_slot *t = take_tx_slot(s);
    if (!t) {
        s->st.send_again++;
        return;   /* again at the next record or heartbeat */
    }
    queue_tx(s, t, (size_t)rci_wire_build_credit(t->buf, TX_SLOT_SIZE, pos));
    s->rma.credit_sent = pos;
    s->st.rma_credits_sent++;
}

/* One record written into our ring. The clock (last_rx_ns) and the credit
 * are looked at once per batch of completions (poll_completions), not per
 * record. */
static void rma_completion(struct rc_sub *s, uint64_t imm)
{
    struct rci_sub_rma_record rec;
    s->handled++;
    if (s->state != ST_ACTIVE || !s->rma.on) {
        rci_set_err(s->rma.why, sizeof s->rma.why, "bad RMA record: written before WELCOME or without "
                    "RMA delivery");
        rma_bad_record(s);
        return;
    }
    int rc = rci_sub_rma_arrived(&s->rma, imm, s->next_seq, &rec);
    if (rc == 0)
        s->st.rma_reordered++;
    while (rc == 1 && !s->lost) {
        rma_hand_on(s, &rec);
        rc = rci_sub_rma_next_held(&s->rma, s->next_seq, &rec);
    }
    if (rc < 0)
        rma_bad_record(s);
}

/* ---- block stream: spans in our ring (sub_stream.h) ------------------------ */

static void stream_send_credit(struct rc_sub *s, bool force)
{
    if (!s->stream.on || s->state != ST_ACTIVE || stalled_on_purpose(s))
        return;
    uint64_t pos = rci_sub_stream_credit_due(&s->stream, force);
    if (pos == 0)
        return;
    struct tx_slot *t = take_tx_slot(s);
    if (!t) {
        s->st.send_again++;
        return;   /* again at the next span or heartbeat */
    }
    queue_tx(s, t, (size_t)rci_wire_build_credit(t->buf, TX_SLOT_SIZE, pos));
    s->stream.credit_sent = pos;
    s->st.stream_credits_sent++;
}

/* One span written into our ring: checked, then decoded (the decoder's sink
 * hands each chunk on: rci_sub_stream_deliver). */
static void stream_completion(struct rc_sub *s, uint64_t imm)
{
    s->handled++;
    int rc = s->state == ST_ACTIVE ? rci_sub_stream_arrived(&s->stream, imm, &s->st.stream_spans,
                                                           &s->st.stream_bytes)
                                   : -EPROTO;
    if (rc == 0)
        s->st.stream_reordered++;
    if (rc == 1) {
        s->sops.decode(s->sops.ctx);
        return;
    }
    if (rc < 0) {
        s->st.stream_bad_spans++;
        rci_set_err(s->err, sizeof s->err, "%s: connection ended",
                    s->state == ST_ACTIVE ? s->stream.why : "bad stream span: written before WELCOME");
        lose(s, RC_SUB_DISC_PROTOCOL);
    }
}

void rci_sub_stream_deliver(struct rc_sub *s, uint64_t tag, uint32_t flags, const struct iovec *pieces,
                            unsigned n, uint32_t len, uint64_t key, void (*release)(void *ctx, uint64_t key),
                            void *ctx)
{
    s->conn_chunks_handled++;
    if (s->p.on_view && n <= RC_VIEW_MAX_PIECES) {
        struct rc_view *v = rci_view_get(s->views, RCI_VIEW_EXT, tag, flags);
        if (!v) {
            s->st.view_failures++;
            release(ctx, key);
            return;
        }
        for (unsigned i = 0; i < n; i++)
            rci_view_add_piece(v, pieces[i].iov_base, pieces[i].iov_len);
        v->hold.ext = (struct rci_view_ext){ release, ctx };
        v->ext_key = key;
        hand_on_view(s, v);
        return;
    }
    const void *data = n ? pieces[0].iov_base : "";
    if (n > 1) {   /* on_data takes one pointer: copy into the reassembly buffer */
        if (!reasm_ready(s, len)) {
            release(ctx, key);
            return;
        }
        size_t at = 0;
        for (unsigned i = 0; i < n; i++) {
            memcpy(s->reasm->data + at, pieces[i].iov_base, pieces[i].iov_len);
            at += pieces[i].iov_len;
        }
        data = s->reasm->data;
        s->st.reassembled++;
    }
    if (s->p.on_view) {   /* more pieces than a view holds: one piece in the reassembly buffer */
        struct rc_view *v = source_view(s, RCI_VIEW_REASM, tag, flags, data, len);
        release(ctx, key);
        if (v)
            hand_on_view(s, v);
        return;
    }
    s->st.chunks++;
    s->st.bytes += len;
    s->p.cb.on_data(s->p.cb.ctx, tag, flags, data, len);
    release(ctx, key);
}

/* Contexts are pointers to our own slots: which array tells rx from tx
 * (error entries do not reliably carry FI_RECV/FI_SEND flags). */
static bool completion(struct rc_sub *s, const struct rci_fabric_cqe *c)
{
    if (!c->err && (c->flags & FI_REMOTE_CQ_DATA)) {   /* a record (or span) written into our ring */
        if (s->p.delivery == RC_SUB_DELIVERY_STREAM)
            stream_completion(s, c->data);
        else
            rma_completion(s, c->data);
        return true;
    }
    uintptr_t ctx = (uintptr_t)c->context;
    if (ctx >= (uintptr_t)s->rx && ctx < (uintptr_t)(s->rx + s->p.rx_buffers))
        rx_completion(s, (struct rx_slot *)c->context, c);
    else if (is_tx_context(s, c->context))
        tx_completion(s, (struct tx_slot *)c->context, c);
    else
        s->st.rx_errors++;   /* not ours: a provider-internal entry */
    return false;
}

static int poll_completions(struct rc_sub *s)
{
    struct rci_fabric_cqe c[CQ_BATCH];
    int n = rci_fabric_cq_poll(&s->f, c, CQ_BATCH, s->err, sizeof s->err);
    if (n < 0) {
        lose(s, RC_SUB_DISC_SHUTDOWN);
        return 1;
    }
    bool records = false;
    for (int i = 0; i < n && !s->lost; i++)
        records |= completion(s, &c[i]);
    if (records && !s->lost) {   /* once per batch: the clock, and CREDIT if a quarter is free */
        s->last_rx_ns = rci_now_ns();
        rma_send_credit(s, false);
        stream_send_credit(s, false);
    }
    return n;
}

static int poll_events(struct rc_sub *s)
{
    struct rci_fabric_event ev;
    int n = 0;
    while (!s->lost && rci_fabric_eq_poll(&s->f, &ev, s->err, sizeof s->err) == 1) {
        n++;
        if (ev.info)
            fi_freeinfo(ev.info);
        if (ev.fid != &s->ep->fid)
            continue;
        if (ev.err) {
            rci_fabric_error(&s->f, s->err, sizeof s->err, "connection", ev.err);
            lose(s, RC_SUB_DISC_SHUTDOWN);
        } else if (ev.event == FI_CONNECTED && s->state == ST_CONNECTING) {
            if (send_hello(s))
                lose(s, RC_SUB_DISC_SHUTDOWN);
        } else if (ev.event == FI_SHUTDOWN) {
            rci_set_err(s->err, sizeof s->err, "connection to %s:%u shut down", s->p.host, (unsigned)s->p.port);
            lose(s, RC_SUB_DISC_SHUTDOWN);
        }
    }
    return n;
}

/* One round of work on the open connection; > 0 when something happened
 * (a lost connection counts: the waiting must stop so it is torn down). */
static int poll_once(void *arg)
{
    struct rc_sub *s = arg;
    int work = poll_completions(s);
    if (!s->lost)
        work += poll_events(s);
    if (!s->lost)
        work += flush_tx_queue(s);
    if (!s->lost) {
        int reposted = post_all_rx(s);
        work += reposted > 0 ? reposted : 0;
    }
    if (!s->lost && s->resync_active)
        continue_resync(s);
    if (!s->lost && s->views)
        rma_send_credit(s, false);   /* views released meanwhile, maybe in other threads */
    if (!s->lost && s->stream.on) {
        s->sops.decode(s->sops.ctx);   /* blocks given back by views released meanwhile */
        stream_send_credit(s, false);
    }
    return s->lost ? 1 : work;
}

/* ---- timers and the poll loop ------------------------------------------- */

/* No receive buffer is posted because the program holds views of them: the
 * publisher cannot reach us, its silence is ours (as a stall on purpose). */
static bool receiving_held_by_views(const struct rc_sub *s)
{
    bool held = false;
    for (uint32_t i = 0; s->views && i < s->p.rx_buffers; i++) {
        if (s->rx[i].posted)
            return false;
        held |= atomic_load_explicit(&s->rx[i].refs, memory_order_relaxed) != 0;
    }
    return held;
}

static void run_timers(struct rc_sub *s)
{
    uint64_t now = rci_now_ns();
    if (s->state == ST_IDLE) {
        if (now >= s->next_attempt_ns)
            try_connect(s);
        return;
    }
    if (s->state == ST_CONNECTING && now >= s->deadline_ns) {
        rci_set_err(s->err, sizeof s->err, "no connection to %s:%u within the peer timeout", s->p.host,
                 (unsigned)s->p.port);
        lose(s, RC_SUB_DISC_TIMEOUT);
    } else if (s->state == ST_HELLO_SENT && now >= s->deadline_ns) {
        rci_set_err(s->err, sizeof s->err, "no WELCOME from %s:%u within the peer timeout", s->p.host,
                 (unsigned)s->p.port);
        lose(s, RC_SUB_DISC_TIMEOUT);
    } else if (s->state == ST_ACTIVE && now - s->last_rx_ns >= s->p.peer_timeout_ns &&
               !stalled_on_purpose(s) && !receiving_held_by_views(s)) {
        rci_set_err(s->err, sizeof s->err, "publisher %s:%u silent for the peer timeout", s->p.host,
                 (unsigned)s->p.port);
        lose(s, RC_SUB_DISC_TIMEOUT);
    } else if (s->state != ST_CONNECTING && now - s->last_hb_ns >= s->heartbeat_ns) {
        send_heartbeat(s, now);
        rma_send_credit(s, true);
        stream_send_credit(s, true);
    }
}

/* How long poll may wait before a timer is due. */
static uint64_t until_next_timer(const struct rc_sub *s, uint64_t now)
{
    uint64_t due;
    if (s->state == ST_IDLE)
        due = s->next_attempt_ns;
    else if (s->state == ST_CONNECTING || s->state == ST_HELLO_SENT)
        due = s->deadline_ns;
    else if (stalled_on_purpose(s) || receiving_held_by_views(s))
        due = UINT64_MAX;
    else
        due = s->last_rx_ns + s->p.peer_timeout_ns;
    if (s->state >= ST_HELLO_SENT && s->last_hb_ns + s->heartbeat_ns < due)
        due = s->last_hb_ns + s->heartbeat_ns;
    return due > now ? due - now : 0;
}

static void settle(struct rc_sub *s)
{
    if (s->lost)
        drop_connection(s, s->lost_reason);
}

int rc_sub_poll(struct rc_sub *s, uint64_t timeout_ns)
{
    s->handled = 0;
    run_timers(s);
    settle(s);
    uint64_t now = rci_now_ns();
    uint64_t wait = until_next_timer(s, now);
    if (wait > timeout_ns)
        wait = timeout_ns;
    if (s->state == ST_IDLE) {
        rci_sleep_ns(wait);
    } else {
        rci_fabric_wait_spin(&s->f, poll_once, s, wait, &s->spin);
        settle(s);
    }
    run_timers(s);
    settle(s);
    return s->handled;
}

/* ---- subscriptions -------------------------------------------------------- */

static int change_subscription(struct rc_sub *s, enum rci_msg_type type, const uint64_t *first,
                               const uint64_t *last, size_t count)
{
    if (count == 0 || count > UINT32_MAX / 2 || !first || !last)
        return -EINVAL;
    for (size_t i = 0; i < count; i++)
        if (first[i] > last[i])
            return -EINVAL;
    bool send = s->state == ST_ACTIVE;
    uint32_t messages = (uint32_t)((count + RCI_WIRE_MAX_RANGES - 1) / RCI_WIRE_MAX_RANGES);
    if (send && free_tx_slots(s) < messages) {
        s->st.send_again++;
        return -EAGAIN;
    }
    if (rci_tag_ranges_reserve(&s->subs, (uint32_t)count))
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        if (type == RCI_MSG_SUBSCRIBE)
            rci_tag_ranges_add(&s->subs, first[i], last[i]);
        else
            rci_tag_ranges_remove(&s->subs, first[i], last[i]);
    }
    struct rci_wire_range *batch = s->batch;
    for (size_t done = 0; send && done < count;) {
        uint32_t n = 0;
        for (; n < RCI_WIRE_MAX_RANGES && done < count; n++, done++)
            batch[n] = (struct rci_wire_range){first[done], last[done]};
        if (send_ranges(s, type, new_request_id(s, false), batch, n))
            s->user_outstanding++;
    }
    return 0;
}

int rc_sub_subscribe(struct rc_sub *s, const uint64_t *first, const uint64_t *last, size_t count)
{
    return change_subscription(s, RCI_MSG_SUBSCRIBE, first, last, count);
}

int rc_sub_subscribe_all(struct rc_sub *s)
{
    const uint64_t first = 0, last = UINT64_MAX;
    return change_subscription(s, RCI_MSG_SUBSCRIBE, &first, &last, 1);
}

int rc_sub_unsubscribe(struct rc_sub *s, const uint64_t *first, const uint64_t *last, size_t count)
{
    return change_subscription(s, RCI_MSG_UNSUBSCRIBE, first, last, count);
}

/* ---- statistics ----------------------------------------------------------- */

void rc_sub_get_stats(const struct rc_sub *s, struct rc_sub_stats *st)
{
    *st = s->st;
    st->poll_spin_hits = s->spin.hits;
    st->poll_spin_misses = s->spin.misses;
    st->poll_spin_preempted = s->spin.preempted;
    st->poll_sleeps = s->spin.sleeps;
    st->poll_coalesced = s->spin.coalesced;
    st->poll_contended = s->spin.contended;
    st->poll_spin_ns_now = rci_spin_policy_next(&s->spin);
    st->rx_buffers_held = 0;
    for (uint32_t i = 0; i < s->p.rx_buffers; i++)
        st->rx_buffers_held += atomic_load_explicit(&s->rx[i].refs, memory_order_relaxed) != 0;
    st->views_outstanding = rci_view_pool_outstanding(s->views);
    st->views_allocated += rci_view_pool_allocated(s->views);
    if (s->has_sops)
        s->sops.stats(s->sops.ctx, st);
    st->stream_gap_marks = s->stream.gaps;
    _Static_assert(RC_SUB_POOL_CLASSES == RCI_MEM_CLASSES, "pool classes follow mem_pool.h");
    for (unsigned c = 0; c < RC_SUB_POOL_CLASSES; c++) {
        struct rci_mem_class_stats k;
        rci_mem_pool_class_stats(s->pool, (enum rci_mem_class)c, &k);
        struct rc_sub_pool_class *o = &st->pool[c];
        snprintf(o->use, sizeof o->use, "%s", k.use);
        o->size = k.size;
        o->count = k.count;
        o->in_use = k.in_use;
        o->high_water = k.high_water;
        o->gets = k.gets;
        o->exhausted = k.exhausted;
    }
}

const char *rc_sub_last_error(const struct rc_sub *s) { return s->err; }

const char *rc_sub_malformed_name(unsigned kind) { return rci_wire_error_name((enum rci_wire_error)kind); }
