/* SPDX-License-Identifier: BSD-3-Clause */
/* pub_control.c — the publisher's side of the control protocol: every
 * incoming message is checked with rci_wire_check() (net/wire.c) before use
 * and counted by rejection kind; HELLO -> WELCOME, (UN)SUBSCRIBE -> SUB_ACK,
 * HEARTBEAT, BYE. Control messages go out from registered buffers with
 * fi_sendv and a completion, like data: they sit on the peer's op list, so
 * the dead-peer rules see them and their buffers come back when the peer
 * dies, and nothing depends on the provider's inject_size. A small per-peer
 * queue holds them while no buffer is free or the provider says -FI_EAGAIN.
 * Also the per-subscriber tag sets. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "net/allow_list.h"
#include "net/pub_internal.h"
#include "net/sub_ranges.h"

/* ---- control sends --------------------------------------------------------- */

/* Control op ids only: their buffers come from the publisher's pool (class
 * pool_cls[RCI_PUB_USE_CTRL], made and registered by publisher.c), taken per
 * message and given back at its completion or release. */
int rci_pub_ctrl_init(struct rci_publisher *p, char *err, size_t errlen)
{
    p->nctrl = RCI_PUB_CTRL_PER_PEER * p->npeers + RCI_PUB_CTRL_SPARE;
    p->ctrl_free = calloc(p->nctrl, sizeof *p->ctrl_free);
    if (!p->ctrl_free)
        return rci_fabric_error(&p->fab, err, errlen, "control buffers(alloc)", -FI_ENOMEM);
    uint32_t first = p->nslots + p->npages;
    for (uint32_t i = 0; i < p->nctrl; i++)
        p->ctrl_free[i] = first + p->nctrl - 1 - i;
    p->nctrl_free = p->nctrl;
    return 0;
}

void rci_pub_ctrl_fini(struct rci_publisher *p)
{
    free(p->ctrl_free);
    p->ctrl_free = NULL;
}

void rci_pub_ctrl_done(struct rci_publisher *p, uint32_t op_id)
{
    struct rci_pub_txop *op = &p->ops[op_id];
    if (op->peer == RCI_PUB_NONE)
        p->ctrl_peerless--;
    rci_pub_op_unlink(p, op_id);
    op->state = RCI_TXOP_FREE;
    op->gen++;
    rci_mem_pool_put(p->pool, p->op_buf[op_id - p->nslots]);
    p->op_buf[op_id - p->nslots] = NULL;
    p->ctrl_free[p->nctrl_free++] = op_id;
}

/* Post one control message from a registered buffer. A peer's buffers are
 * on its op list (released if it dies); peer NULL (a refusal to an RDM
 * sender without a peer slot) may only use the spare buffers. */
static int ctrl_post(struct rci_publisher *p, struct rci_pub_peer *peer, fi_addr_t addr,
                     const void *msg, size_t len)
{
    if (p->nctrl_free == 0 || (!peer && p->ctrl_peerless >= RCI_PUB_CTRL_SPARE))
        return -FI_EAGAIN;
    struct fid_ep *ep = p->fab.rdm ? p->fab.ep : peer->ep;
    if (!ep)
        return -FI_ENOTCONN;
    uint32_t op_id = p->ctrl_free[p->nctrl_free - 1];
    struct rci_pub_txop *op = &p->ops[op_id];
    struct rci_mem_buf *mb = rci_pub_buf_get(p, RCI_PUB_USE_CTRL);
    if (!mb)
        return -FI_EAGAIN;   /* not expected: the class holds a buffer per control op */
    memcpy(mb->data, msg, len);
    struct iovec iov = { .iov_base = mb->data, .iov_len = len };
    void *desc = rci_mem_pool_desc(p->pool, mb);
    void *ctx = rci_pub_ctx(RCI_CTX_TXOP, op_id, op->gen);
    p->op_buf[op_id - p->nslots] = mb;
    int rc = (int)fi_sendv(ep, &iov, &desc, 1, addr, ctx);
    if (rc) {
        p->op_buf[op_id - p->nslots] = NULL;
        rci_mem_pool_put(p->pool, mb);
        return rc;
    }
    p->nctrl_free--;
    op->state = RCI_TXOP_POSTED;
    op->peer = RCI_PUB_NONE;
    op->prev = op->next = RCI_PUB_NONE;
    if (peer)
        rci_pub_op_link(p, (uint32_t)(peer - p->peers), op_id, rci_now_ns());
    else
        p->ctrl_peerless++;  /* never released if it never completes: bounded */
    return 0;
}

static int send_control(struct rci_publisher *p, struct rci_pub_peer *peer, const void *msg, size_t len)
{
    return ctrl_post(p, peer, peer->has_addr ? peer->addr : FI_ADDR_UNSPEC, msg, len);
}

static void flush_peer(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (!peer->connected)
        return;  /* MSG: sent once FI_CONNECTED is read */
    while (peer->ctrl_count) {
        struct rci_pub_ctrl_msg *m = &peer->ctrl[peer->ctrl_head];
        int rc = send_control(p, peer, m->bytes, m->len);
        if (rc == -FI_EAGAIN) {
            p->st.control_send_retries++;
            return;
        }
        if (rc) {
            p->st.control_dropped++;
            char err[200];
            rci_fabric_error(&p->fab, err, sizeof err, "fi_sendv(control)", rc);
            rci_set_err(p->err, sizeof p->err, "%.100s: %.200s", peer->name, err);
        }
        peer->ctrl_head = (peer->ctrl_head + 1) % RCI_PUB_CTRL_QUEUE;
        if (--peer->ctrl_count == 0)
            p->ctrl_waiting--;
    }
}

static void enqueue(struct rci_publisher *p, struct rci_pub_peer *peer, const void *msg, ssize_t len)
{
    if (len <= 0 || (size_t)len > RCI_PUB_CTRL_MAX)
        return;  /* encoders only fail on our own bad arguments */
    if (peer->ctrl_count == RCI_PUB_CTRL_QUEUE) {
        p->st.control_dropped++;
        rci_set_err(p->err, sizeof p->err, "%s: control queue full, message dropped", peer->name);
        return;
    }
    struct rci_pub_ctrl_msg *m = &peer->ctrl[(peer->ctrl_head + peer->ctrl_count) % RCI_PUB_CTRL_QUEUE];
    memcpy(m->bytes, msg, (size_t)len);
    m->len = (uint8_t)len;
    if (peer->ctrl_count++ == 0)
        p->ctrl_waiting++;
    flush_peer(p, peer);
}

void rci_pub_flush_control(struct rci_publisher *p)
{
    for (uint32_t i = 0; i < p->npeers && p->ctrl_waiting; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->ctrl_count && peer->state != RCI_PEER_CLOSED && peer->state != RCI_PEER_FREE)
            flush_peer(p, peer);
    }
}

void rci_pub_drop_control(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (peer->ctrl_count) {
        flush_peer(p, peer);  /* a last BYE may still get out */
        if (peer->ctrl_count)
            p->ctrl_waiting--;
        p->st.control_dropped += peer->ctrl_count;
    }
    peer->ctrl_count = 0;
}

void rci_pub_send_heartbeat(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t now)
{
    uint8_t msg[sizeof(struct rci_wire_heartbeat)];
    enqueue(p, peer, msg, rci_wire_build_heartbeat(msg, sizeof msg, now));
    p->st.heartbeats_sent++;
}

void rci_pub_send_bye(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_bye_reason why)
{
    uint8_t msg[sizeof(struct rci_wire_bye)];
    enqueue(p, peer, msg, rci_wire_build_bye(msg, sizeof msg, why));
}

/* Refuse a peer that has a slot: counted, said (last error, the daemon logs
 * it), BYE(refused) with the cause, then closed (the BYE is best effort). */
void rci_pub_refuse_peer(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_refusal why,
                        const char *detail)
{
    char code[24];
    p->st.connections_refused++;
    rci_set_err(p->err, sizeof p->err, "subscriber %s refused: %s%s", peer->name,
               rci_wire_refusal_name(why, code, sizeof code), detail);
    pub_debug(p, "%s", p->err);
    uint8_t msg[sizeof(struct rci_wire_bye)];
    enqueue(p, peer, msg, rci_wire_build_bye_refused(msg, sizeof msg, why));
    rci_pub_peer_fail(p, (uint32_t)(peer - p->peers), RCI_DOOM_LOCAL);
}

/* ---- tag sets: sorted, disjoint, non-adjacent inclusive ranges ------------- */

/* Number of tags in the set, saturating (the full range has 2^64). */
static uint64_t tag_count(const struct rci_wire_range *a, uint32_t n)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t size = a[i].last - a[i].first;
        if (size == UINT64_MAX || total + size + 1 < total)
            return UINT64_MAX;
        total += size + 1;
    }
    return total;
}

/* The peer's tag set viewed as the shared range-set type (read only here). */
static bool set_contains(const struct rci_wire_range *a, uint32_t n, uint64_t tag)
{
    const struct rci_tag_ranges set = { .r = (struct rci_wire_range *)a, .count = n, .cap = n };
    return rci_tag_ranges_contains(&set, tag);
}

unsigned rci_publisher_subscribers_of(struct rci_publisher *p, uint64_t tag, rci_peer_id *out,
                                     unsigned max)
{
    unsigned found = 0;
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state != RCI_PEER_ACTIVE || peer->doom || !peer->connected ||
            !set_contains(peer->ranges, peer->nranges, tag))
            continue;
        if (found < max)
            out[found] = rci_pub_peer_id(p, peer);
        found++;
    }
    return found;
}

/* ---- incoming messages -------------------------------------------------------- */

static void reject(struct rci_publisher *p, const char *who, enum rci_wire_error why)
{
    p->st.malformed[why]++;
    rci_set_err(p->err, sizeof p->err, "message from %s rejected: %s", who, rci_wire_error_name(why));
}

static void peer_event(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_pub_peer_event ev)
{
    if (p->cb.on_peer_event)
        p->cb.on_peer_event(p->cb.arg, rci_pub_peer_id(p, peer), ev);
}

static void send_welcome(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    uint8_t msg[sizeof(struct rci_wire_welcome) + sizeof(struct rci_wire_welcome_rma) +
                sizeof(struct rci_wire_welcome_stream)];
    uint64_t hb_ms = p->fab.params.heartbeat_ns / 1000000u;
    ssize_t len = rci_wire_build_welcome_version(msg, sizeof msg, peer->version,
                                                 p->fab.params.max_tags_per_subscriber,
                                                 hb_ms ? (uint32_t)hb_ms : 1u, p->publisher_id);
    enqueue(p, peer, msg, peer->stream.on ? rci_stream_welcome(peer, msg, sizeof msg, len)
                                          : rci_rma_welcome(peer, msg, sizeof msg, len));
}

/* A HELLO again from a peer already joined must ask for what it joined with:
 * the same delivery, the same RMA ring (base, size, key) and the same
 * streamed card. Answering a changed one with WELCOME would keep writing
 * into the ring it joined with while it reads another. */
static bool hello_asks_as_joined(const struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_hello_rma r;
    struct rci_wire_hello_stream st;
    bool has_rma = rci_wire_hello_rma(buf, len, &r);
    bool has_stream = rci_wire_hello_stream(buf, len, &st);
    if (has_stream != peer->stream.on || (has_stream && st.card != peer->stream.card))
        return false;
    if (has_rma != (peer->rma.asked || peer->stream.on))
        return false;
    return !has_rma || !peer->rma.on ||
           (r.base == peer->rma.base && r.len == peer->rma.size && r.key == peer->rma.key);
}

static void on_hello(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_hello h;
    rci_wire_check_hello(buf, len, &h);
    pub_debug(p, "HELLO from %s: versions %u..%u, receive buffer %u B, client %#" PRIx64 ", address %u B%s%s",
              peer->name, h.min_version, h.max_version, h.rx_buffer_size, h.client_id, h.addr_len,
              len > sizeof h + h.addr_len ? ", RMA ring" : "", peer->joined ? " (again)" : "");
    if (peer->joined && h.client_id != peer->client_id) {
        /* RDM: a new subscriber process at the address of one we still serve
         * (its port reused): that one is gone. Ending it tells the address
         * BYE (close_transport), and the newcomer says HELLO again to a
         * fresh peer, with its stream numbered from 0. */
        rci_set_err(p->err, sizeof p->err, "%s: HELLO from a new subscriber at this address", peer->name);
        rci_pub_peer_fail(p, (uint32_t)(peer - p->peers), RCI_DOOM_ERROR);
        return;
    }
    if (peer->joined && !hello_asks_as_joined(peer, buf, len)) {
        rci_set_err(p->err, sizeof p->err, "%s: HELLO again with another delivery, RMA ring or streamed card"
                    " than it joined with: ended (a client reconnects for that)", peer->name);
        rci_pub_peer_fail(p, (uint32_t)(peer - p->peers), RCI_DOOM_ERROR);
        return;
    }
    if (peer->joined) {  /* repeated HELLO (our WELCOME was lost?): answer again */
        send_welcome(p, peer);
        return;
    }
    char detail[64];
    peer->version = rci_wire_negotiate(h.min_version, h.max_version);
    if (peer->version == 0) {
        snprintf(detail, sizeof detail, " (it speaks %u..%u)", h.min_version, h.max_version);
        rci_pub_refuse_peer(p, peer, RCI_REFUSED_VERSION, detail);
        return;
    }
    peer->rx_max = h.rx_buffer_size;
    if (p->fab.max_msg_size && p->fab.max_msg_size < peer->rx_max)
        peer->rx_max = (uint32_t)p->fab.max_msg_size;
    if (peer->rx_max < RCI_PUB_MIN_RX_BUFFER) {
        p->st.connections_refused_rx_buffer++;
        snprintf(detail, sizeof detail, " (%u B announced, %u B needed)", h.rx_buffer_size,
                 RCI_PUB_MIN_RX_BUFFER);
        rci_pub_refuse_peer(p, peer, RCI_REFUSED_RX_BUFFER, detail);
        return;
    }
    /* shm: no message past what it copies at post (fabric.c, shm_copy_max):
     * DATA fragments and PAGEs follow rx_max. */
    if (p->fab.copy_max && p->fab.copy_max < peer->rx_max)
        peer->rx_max = (uint32_t)p->fab.copy_max;
    int stream = rci_stream_hello(p, peer, buf, len);
    if (stream < 0)
        return;   /* refused: the block stream it asked cannot be served */
    if (stream == 0 && !rci_rma_hello(p, peer, buf, len))
        return;   /* refused: its RMA ring cannot be written */
    peer->client_id = h.client_id;
    peer->joined = true;
    peer->state = RCI_PEER_ACTIVE;
    p->st.connections++;
    p->st.peers_active++;
    send_welcome(p, peer);
    peer_event(p, peer, RCI_PUB_PEER_JOINED);
    if (p->run_over)
        rci_pub_send_bye(p, peer, RCI_BYE_NORMAL);   /* nothing more will come (rci_publisher_end_run) */
}

/* An orderly leave. A version-3 subscriber says how many chunks it
 * handled: kept for rci_publisher_peer_chunks_handled, which the BYE
 * event's handler may call. */
static void on_bye(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    peer->said_handled = rci_wire_bye_handled(buf, len, &peer->chunks_handled);
    if (peer->said_handled)
        pub_debug(p, "%s said BYE: %" PRIu64 " chunks handled", peer->name, peer->chunks_handled);
    else
        pub_debug(p, "%s said BYE", peer->name);
    if (peer->joined)
        peer_event(p, peer, RCI_PUB_PEER_BYE);
}

bool rci_publisher_peer_chunks_handled(struct rci_publisher *p, rci_peer_id id, uint64_t *chunks)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    if (!peer || !peer->said_handled)
        return false;
    *chunks = peer->chunks_handled;
    return true;
}

static enum rci_sub_status edit_tags(struct rci_publisher *p, struct rci_pub_peer *peer,
                                    const uint8_t *buf, const struct rci_wire_sub *s)
{
    bool add = s->hdr.type == RCI_MSG_SUBSCRIBE;
    /* Edited in scratch, so a refused request leaves the peer's set as it was. */
    struct rci_tag_ranges set = { .r = p->scratch, .count = peer->nranges,
                                 .cap = RCI_WIRE_MAX_RANGES, .limit = RCI_WIRE_MAX_RANGES };
    memcpy(p->scratch, peer->ranges, set.count * sizeof *p->scratch);
    /* rci_wire_check() has rejected ranges with first > last already. */
    for (uint32_t i = 0; i < s->count; i++) {
        struct rci_wire_range r = rci_wire_sub_range(buf, i);
        if ((add ? rci_tag_ranges_add(&set, r.first, r.last)
                 : rci_tag_ranges_remove(&set, r.first, r.last)) != 0)
            return RCI_SUB_TOO_MANY_TAGS;
    }
    uint32_t limit = p->fab.params.max_tags_per_subscriber;
    if (add && limit && tag_count(p->scratch, set.count) > limit)
        return RCI_SUB_TOO_MANY_TAGS;
    memcpy(peer->ranges, p->scratch, set.count * sizeof *p->scratch);
    peer->nranges = set.count;
    return RCI_SUB_OK;
}

static void on_sub(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_sub s;
    rci_wire_check_sub(buf, len, &s);
    if (s.hdr.type == RCI_MSG_SUBSCRIBE)
        p->st.subscribe_requests++;
    else
        p->st.unsubscribe_requests++;
    enum rci_sub_status status = edit_tags(p, peer, buf, &s);
    uint8_t ack[sizeof(struct rci_wire_sub_ack)];
    enqueue(p, peer, ack, rci_wire_build_sub_ack(ack, sizeof ack, s.request_id, status));
    if (status != RCI_SUB_OK) {
        p->st.subscriptions_refused++;
        rci_set_err(p->err, sizeof p->err, "%s: (un)subscribe %u refused (status %d)", peer->name,
                 s.request_id, (int)status);
        return;
    }
    peer_event(p, peer, RCI_PUB_PEER_SUBSCRIPTIONS);
}

/* ---- RDM: a HELLO from an address we do not know yet --------------------------- */

void rci_pub_forget_refused(struct rci_publisher *p, uint64_t now)
{
    if (p->nrefused == 0 || now - p->refused_ns < p->fab.params.heartbeat_ns)
        return;
    for (uint32_t i = 0; i < p->nrefused; i++) {
        char err[200];
        if (rci_fabric_av_remove(&p->fab, p->refused[i], err, sizeof err))
            rci_set_err(p->err, sizeof p->err, "%s", err);
    }
    p->nrefused = 0;
}

void rci_pub_bye_address(struct rci_publisher *p, fi_addr_t addr, enum rci_bye_reason reason,
                        enum rci_refusal why)
{
    uint8_t bye[sizeof(struct rci_wire_bye)];
    ssize_t len = reason == RCI_BYE_REFUSED ? rci_wire_build_bye_refused(bye, sizeof bye, why)
                                           : rci_wire_build_bye(bye, sizeof bye, reason);
    if (len > 0 && ctrl_post(p, NULL, addr, bye, (size_t)len))
        p->st.control_dropped++;
    if (p->nrefused == sizeof p->refused / sizeof p->refused[0])
        rci_pub_forget_refused(p, UINT64_MAX);
    if (p->nrefused == 0)
        p->refused_ns = rci_now_ns();
    p->refused[p->nrefused++] = addr;
}

static void refuse_address(struct rci_publisher *p, fi_addr_t addr, const char *name,
                           enum rci_refusal why)
{
    char code[24];
    p->st.connections_refused++;
    rci_set_err(p->err, sizeof p->err, "subscriber %s refused: %s", name,
               rci_wire_refusal_name(why, code, sizeof code));
    pub_debug(p, "%s", p->err);
    rci_pub_bye_address(p, addr, RCI_BYE_REFUSED, why);
}

/* A HELLO whose address we cannot use: no BYE can reach its sender, so it
 * is counted (bad_field and connections_refused, which the daemon logs) and
 * named in the last error. */
static void refuse_unreachable(struct rci_publisher *p, const char *why)
{
    p->st.malformed[RCI_WIRE_BAD_FIELD]++;
    p->st.connections_refused++;
    rci_set_err(p->err, sizeof p->err, "HELLO from an unknown RDM sender refused: %s", why);
}

static void rdm_hello(struct rci_publisher *p, const uint8_t *buf, size_t len, uint64_t now)
{
    struct rci_wire_hello h;
    rci_wire_check_hello(buf, len, &h);
    char name[RCI_PUB_PEER_NAME_MAX];
    if (h.addr_len == 0) {
        refuse_unreachable(p, "no address in it");
        return;
    }
    const uint8_t *addr = buf + sizeof(struct rci_wire_hello);
    if (!rci_fabric_addr_plausible(&p->fab, addr, h.addr_len)) {
        char why[64];
        snprintf(why, sizeof why, "its %u-byte address is not a %s address", h.addr_len,
                 p->fab.info ? fi_tostr(&p->fab.info->addr_format, FI_TYPE_ADDR_FORMAT) : "?");
        refuse_unreachable(p, why);
        return;
    }
    rci_fabric_addr_str(&p->fab, addr, h.addr_len, name, sizeof name);
    fi_addr_t fa;
    char err[200];
    if (rci_fabric_av_insert(&p->fab, addr, h.addr_len, &fa, err, sizeof err)) {
        refuse_unreachable(p, err);
        return;
    }
    /* An address still waiting for its deferred removal (refused, or told BYE)
     * stays: libfabric's AV counts inserts of the same address, so that
     * removal drops only the earlier reference. */
    /* The address HELLO declares; net/README.md (Security) says why that is
     * what can be checked here, and what keeps a forged one from gaining data. */
    if (!rci_allow_list_text_permits(p->fab.params.allow, addr, h.addr_len)) {
        p->st.connections_refused_allowlist++;
        refuse_address(p, fa, name, RCI_REFUSED_ALLOW_LIST);
        return;
    }
    struct rci_pub_peer *peer = rci_pub_peer_by_addr(p, fa);
    if (!peer) {
        peer = rci_pub_new_peer(p, now);
        if (!peer) {
            refuse_address(p, fa, name, RCI_REFUSED_FULL);
            return;
        }
        peer->addr = fa;
        peer->has_addr = true;
        memcpy(peer->decl, addr, h.addr_len);
        peer->decl_len = h.addr_len;
        snprintf(peer->name, sizeof peer->name, "%s", name);
    }
    peer->last_rx_ns = now;
    on_hello(p, peer, buf, len);
}

/* Is this HELLO (checked) from the peer that declared the same address?
 * shm in libfabric 1.17 reports the source of a message from a sender not
 * yet in the AV as fi_addr 0, the first subscriber's: a second subscriber's
 * HELLO then looked like a new process at the first one's address, ended it
 * and was never served. A HELLO declaring another address is handled as
 * coming from an unknown sender (its own address is inserted). tcp;ofi_rxm
 * reports FI_ADDR_NOTAVAIL there, so nothing changes for it. */
static bool declared_by(const struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_hello h;
    rci_wire_check_hello(buf, len, &h);
    return h.addr_len == peer->decl_len &&
           memcmp(buf + sizeof(struct rci_wire_hello), peer->decl, h.addr_len) == 0;
}

void rci_pub_control_message(struct rci_publisher *p, struct rci_pub_peer *owner,
                            const uint8_t *buf, size_t len)
{
    enum rci_wire_error why = RCI_WIRE_OK;
    int type = rci_wire_check(buf, len, RCI_WIRE_TO_PUBLISHER, &why);
    const char *who = owner ? owner->name : "unknown RDM sender";
    if (type <= 0) {
        reject(p, who, why);
        return;
    }
    uint64_t now = rci_now_ns();
    if (owner && type == RCI_MSG_HELLO && p->fab.rdm && !declared_by(owner, buf, len))
        owner = NULL;  /* shm: the sender is not who the CQ says (declared_by) */
    if (!owner) {
        if (type == RCI_MSG_HELLO && p->fab.rdm)
            rdm_hello(p, buf, len, now);
        else
            p->st.unknown_sender++;
        return;
    }
    owner->last_rx_ns = now;
    bool joined = owner->state == RCI_PEER_ACTIVE;
    switch (type) {
    case RCI_MSG_HELLO:
        on_hello(p, owner, buf, len);
        break;
    case RCI_MSG_SUBSCRIBE:
    case RCI_MSG_UNSUBSCRIBE:
        if (joined)
            on_sub(p, owner, buf, len);
        else
            reject(p, who, RCI_WIRE_BAD_TYPE);  /* before HELLO */
        break;
    case RCI_MSG_HEARTBEAT:
        p->st.heartbeats_received++;
        break;
    case RCI_MSG_CREDIT:
        if (joined)
            rci_rma_credit(p, owner, buf, len);
        else
            reject(p, who, RCI_WIRE_BAD_TYPE);  /* before HELLO */
        break;
    case RCI_MSG_BYE:
        on_bye(p, owner, buf, len);
        rci_pub_peer_fail(p, (uint32_t)(owner - p->peers), RCI_DOOM_BYE);
        break;
    default:
        reject(p, who, RCI_WIRE_BAD_TYPE);
        break;
    }
}
