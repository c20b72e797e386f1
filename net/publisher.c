/* SPDX-License-Identifier: BSD-3-Clause */
/* publisher.c — the publisher's life cycle, subscribers (peers), completion
 * dispatch, timers (heartbeats, flush timeouts, dead-peer rule) and the
 * progress/wait loop. The control protocol lives in pub_control.c, data
 * sends in zc_send.c and buffered.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "net/allow_list.h"
#include "net/half_open.h"
#include "net/pub_internal.h"
#include "net/stall_probe.h"

#define RCI_PUB_TIMER_MIN_NS 100000u      /* 100 us */
#define RCI_PUB_TIMER_MAX_NS 10000000u    /* 10 ms */
#define RCI_PUB_IDLE_TIMER_MAX_NS 250000000ull  /* 250 ms: rci_publisher_sleep with nothing in flight */
#define RCI_PUB_STARVED_NS 50000000u      /* 50 ms between progress calls: starved */

/* ---- peers and their op lists ------------------------------------------ */

rci_peer_id rci_pub_peer_id(const struct rci_publisher *p, const struct rci_pub_peer *peer)
{
    return ((uint64_t)peer->gen << 32) | (uint64_t)(peer - p->peers + 1);
}

struct rci_pub_peer *rci_pub_peer_of(struct rci_publisher *p, rci_peer_id id)
{
    uint32_t idx = (uint32_t)(id & 0xffffffffu);
    if (idx == 0 || idx > p->npeers)
        return NULL;
    struct rci_pub_peer *peer = &p->peers[idx - 1];
    if (peer->state == RCI_PEER_FREE || peer->gen != (uint32_t)(id >> 32))
        return NULL;
    return peer;
}

void rci_pub_op_link(struct rci_publisher *p, uint32_t peer_idx, uint32_t op_id, uint64_t now)
{
    struct rci_pub_peer *peer = &p->peers[peer_idx];
    struct rci_pub_txop *op = &p->ops[op_id];
    op->peer = peer_idx;
    op->since_ns = now;
    op->next = RCI_PUB_NONE;
    op->prev = peer->op_tail;
    if (peer->op_tail != RCI_PUB_NONE)
        p->ops[peer->op_tail].next = op_id;
    else
        peer->op_head = op_id;
    peer->op_tail = op_id;
    peer->nops++;
}

void rci_pub_op_unlink(struct rci_publisher *p, uint32_t op_id)
{
    struct rci_pub_txop *op = &p->ops[op_id];
    if (op->state != RCI_TXOP_POSTED || op->peer == RCI_PUB_NONE)
        return;
    struct rci_pub_peer *peer = &p->peers[op->peer];
    if (op->prev != RCI_PUB_NONE)
        p->ops[op->prev].next = op->next;
    else
        peer->op_head = op->next;
    if (op->next != RCI_PUB_NONE)
        p->ops[op->next].prev = op->prev;
    else
        peer->op_tail = op->prev;
    peer->nops--;
    op->prev = op->next = RCI_PUB_NONE;
}

/* pool / (active subscribers + 1): n subscribers at their quota leave a
 * newcomer at least its own. */
static uint32_t fair_share(const struct rci_publisher *p, uint64_t pool, uint32_t floor)
{
    uint64_t q = pool / (p->st.peers_active + 1);
    return q < floor ? floor : (uint32_t)q;
}

/* A subscriber may hold its fair share, and borrow beyond it while what
 * stays free after the take covers `reserve`: a newcomer's fair share plus
 * what the others may still claim of theirs (unclaimed()). */
static bool within_share(uint64_t held, uint64_t more, uint64_t pool, uint64_t free, uint32_t fair,
                         uint64_t reserve)
{
    return held + more <= fair || (free >= more && free - more >= reserve && held + more <= pool);
}

/* What the other active subscribers are still owed up to their fair share of
 * a pool (`held` reads their holding). Without it several subscribers below
 * their share could together claim the one share borrowers leave free, and a
 * subscriber within its share then found nothing free (again_no_slot).
 * Called only when a subscriber wants to borrow beyond its share: O(peers),
 * on the contended path only. */
static uint64_t unclaimed(const struct rci_publisher *p, const struct rci_pub_peer *self, uint32_t fair,
                          uint32_t (*held)(const struct rci_pub_peer *))
{
    uint64_t owed = 0;
    for (uint32_t i = 0; i < p->npeers; i++) {
        const struct rci_pub_peer *o = &p->peers[i];
        if (o != self && o->joined && held(o) < fair)
            owed += fair - held(o);
    }
    return owed;
}

static uint32_t slots_held(const struct rci_pub_peer *peer) { return peer->nslots_held; }
static uint32_t pages_held(const struct rci_pub_peer *peer) { return peer->npages_held; }

/* Operations posted on the provider's tx queues (header slots, pages, control). */
static uint64_t ops_posted(const struct rci_publisher *p)
{
    return (uint64_t)(p->nslots - p->nslot_free) + (p->npages - p->npage_free) + (p->nctrl - p->nctrl_free);
}

/* The provider's tx queue: RDM shares one endpoint (tx_size) among all; a
 * MSG subscriber has its own endpoint, of which its control messages need
 * a few entries. */
static bool tx_within_share(const struct rci_publisher *p, const struct rci_pub_peer *peer, uint32_t more)
{
    uint64_t size = p->fab.tx_size;
    if (size == 0)
        return true;
    if (!p->fab.rdm)
        return peer->nops + more <= (size > 2u * RCI_PUB_CTRL_PER_PEER ? size - RCI_PUB_CTRL_PER_PEER : size);
    uint64_t used = ops_posted(p);
    uint32_t fair = fair_share(p, size, 1);
    return within_share(peer->nops, more, size, used < size ? size - used : 0, fair, fair);
}

bool rci_pub_slots_within_quota(struct rci_publisher *p, const struct rci_pub_peer *peer, uint32_t more)
{
    if (!p->fab.params.peer_fair_share || peer->nslots_held == 0)
        return true;   /* one over-sized send of a peer holding nothing */
    uint32_t fair = fair_share(p, p->nslots, 1);
    if (peer->nslots_held + more > fair &&
        !within_share(peer->nslots_held, more, p->nslots, p->nslot_free, fair,
                      fair + unclaimed(p, peer, fair, slots_held)))
        return false;
    return tx_within_share(p, peer, more);
}

bool rci_pub_page_within_quota(struct rci_publisher *p, const struct rci_pub_peer *peer)
{
    if (!p->fab.params.peer_fair_share)
        return true;
    /* At least 2: one posted while the next fills. */
    uint32_t fair = fair_share(p, p->npages, 2);
    if (peer->npages_held + 1 > fair &&
        !within_share(peer->npages_held, 1, p->npages, p->npage_free, fair,
                      fair + unclaimed(p, peer, fair, pages_held)))
        return false;
    return tx_within_share(p, peer, 1);
}

uint64_t rci_publisher_peer_oldest_age(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    if (!peer)
        return 0;
    /* An RMA subscriber's writes complete when they left (tcp: in the
     * socket), whether it reads or not: what shows it is behind is how long
     * its ring has had no room (rma_write.c). */
    uint64_t since = peer->rma.full_since_ns ? peer->rma.full_since_ns : UINT64_MAX;
    if (peer->op_head != RCI_PUB_NONE && p->ops[peer->op_head].since_ns < since)
        since = p->ops[peer->op_head].since_ns;
    return since != UINT64_MAX && p->last_progress_ns > since ? p->last_progress_ns - since : 0;
}

int rci_pub_post(struct rci_publisher *p, struct rci_pub_peer *peer, const struct iovec *iov,
                void **desc, size_t n, void *ctx)
{
    struct fid_ep *ep = p->fab.rdm ? p->fab.ep : peer->ep;
    if (!ep)
        return -FI_ENOTCONN;
    if (rci_pub_fault_refuse_post(p, (uint32_t)(peer - p->peers), ctx, n ? &iov[0] : NULL))
        return -FI_EAGAIN;
    if (rci_pub_fault_hold_post(p, ctx))
        return 0;   /* injected: "posted", never handed to the provider */
    return (int)fi_sendv(ep, iov, desc, n, peer->has_addr ? peer->addr : FI_ADDR_UNSPEC, ctx);
}

void rci_pub_peer_fail(struct rci_publisher *p, uint32_t idx, enum rci_peer_doom why)
{
    struct rci_pub_peer *peer = &p->peers[idx];
    if (peer->state == RCI_PEER_FREE || peer->state == RCI_PEER_CLOSED || peer->state == RCI_PEER_DRAINING ||
        peer->doom)
        return;
    peer->doom = why;
    p->ndoomed++;
}

/* Release every op still on the peer's list; keys complete with `status`. */
static void release_ops(struct rci_publisher *p, struct rci_pub_peer *peer, int status,
                        uint64_t *keys, unsigned max, unsigned *count)
{
    while (peer->op_head != RCI_PUB_NONE && (!keys || *count < max)) {
        uint32_t op = peer->op_head;
        if (op >= p->nslots + p->npages) {
            rci_pub_ctrl_done(p, op);
            continue;
        }
        if (op >= p->nslots) {
            rci_buf_page_done(p, op, status);
            continue;
        }
        uint64_t key = 0;
        bool pulled = false;
        rci_zc_slot_done(p, op, status, keys ? &key : NULL, keys ? &pulled : NULL);
        if (pulled)
            keys[(*count)++] = key;
    }
}

static void post_rdm_receives(struct rci_publisher *p);
static void rx_to_free(struct rci_publisher *p, uint32_t i);

/* Give a MSG peer's receive buffers back: its endpoint is closed, so the
 * provider no longer owns them; late completions fail the generation check. */
static void reclaim_peer_rx(struct rci_publisher *p, uint32_t idx)
{
    for (uint32_t i = 0; i < p->nrx; i++) {
        struct rci_pub_rxbuf *b = &p->rx[i];
        if (b->peer != idx || !b->posted)
            continue;
        b->posted = false;
        b->gen++;
        b->peer = RCI_PUB_NONE;
        rx_to_free(p, i);
    }
}

/* shm: remove a dead subscriber's region file (16 MiB each) and count it;
 * false while its process still looks alive. */
static bool reclaim_shm_counted(struct rci_publisher *p, const char *name)
{
    if (rci_fabric_shm_reclaim(name) <= 0)
        return false;
    p->st.shm_files_reclaimed++;
    return true;
}

/* A closed shm peer's region file goes once its process is gone; one that
 * still looks alive is tried again by the timers (retry_shm_reclaims). */
static void reclaim_shm_file(struct rci_publisher *p, const char *name)
{
    if (reclaim_shm_counted(p, name))
        return;
    if (p->nshm_retry == sizeof p->shm_retry / sizeof p->shm_retry[0])
        return;   /* full: the next subscriber to start removes it (rci_fabric_shm_reclaim_all) */
    snprintf(p->shm_retry[p->nshm_retry].name, sizeof p->shm_retry[0].name, "%s", name);
    p->shm_retry[p->nshm_retry++].since_ns = rci_now_ns();
}

#define RCI_PUB_SHM_RETRY_NS (10ull * 1000 * 1000 * 1000)

/* now = UINT64_MAX (destroy): a last try for each, none kept. */
static void retry_shm_reclaims(struct rci_publisher *p, uint64_t now)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->nshm_retry; i++) {
        if (!reclaim_shm_counted(p, p->shm_retry[i].name) &&
            now - p->shm_retry[i].since_ns < RCI_PUB_SHM_RETRY_NS)
            p->shm_retry[kept++] = p->shm_retry[i];   /* still alive: again next tick */
    }
    p->nshm_retry = kept;
}

/* Close the transport to a peer: afterwards it can neither send nor receive.
 * Returns true when the provider has provably let go of every operation
 * posted to it (fabric.h, enum rci_fabric_letgo): only then may the keys still
 * on its op list be released, since until then the provider may still read
 * the ring memory behind them and hand it to a subscriber that is alive
 * (issue 10). MSG: fi_close of its endpoint flushes or cancels everything.
 * RDM over ofi_rxm: fi_av_remove with FI_AV_REMOVE_CLEANUP=1 (fabric.c sets
 * it) closes the hidden connection, i.e. rxm's core endpoint of that peer. */
static bool close_transport(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    uint32_t idx = (uint32_t)(peer - p->peers);
    rci_pub_drop_control(p, peer);  /* while a last BYE can still go out */
    bool let_go = peer->nops == 0 || p->fab.letgo == RCI_LETGO_AT_POST;
    if (peer->ep) {
        rci_fabric_ep_close(peer->ep);
        peer->ep = NULL;
        reclaim_peer_rx(p, idx);
        let_go = true;
    }
    if (peer->has_addr) {
        char err[256];
        if (rci_fabric_av_remove(&p->fab, peer->addr, err, sizeof err))
            rci_set_err(p->err, sizeof p->err, "%.100s: %.200s", peer->name, err);
        else if (p->fab.letgo == RCI_LETGO_AV_REMOVE)
            let_go = true;
        peer->has_addr = false;
        if (p->fab.copy_max)
            reclaim_shm_file(p, peer->name);
    }
    rci_buf_drop_filling(p, peer);
    peer->state = RCI_PEER_CLOSED;
    return let_go;
}

static void count_doom(struct rci_publisher *p, enum rci_peer_doom why)
{
    switch (why) {
    case RCI_DOOM_BYE:
    case RCI_DOOM_LOCAL:
    case RCI_DOOM_NONE:
        p->st.peers_closed++;
        return;
    case RCI_DOOM_SHUTDOWN: p->st.dead_by_shutdown++; break;
    case RCI_DOOM_SILENCE: p->st.dead_by_silence++; break;
    case RCI_DOOM_STUCK: p->st.dead_by_stuck_send++; break;
    case RCI_DOOM_ERROR: p->st.dead_by_error++; break;
    case RCI_DOOM_PROVIDER: p->st.dead_by_provider_stall++; break;
    }
    p->st.peers_dead++;
}

/* Leave the daemon's table now: no new sends go to this peer. GONE is
 * reported by progress (report_gone): close_peer and pending_sends, which
 * get here too, run no callback. */
static void leave_table(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (!peer->joined)
        return;
    peer->joined = false;
    p->st.peers_active--;
    peer->gone_id = rci_pub_peer_id(p, peer);
    if (!peer->gone_due)
        p->ngone_due++;
    peer->gone_due = true;
}

/* RCI_PUB_PEER_GONE for every peer that left the table. Progress calls it
 * before it reads anything (a slot freed since is not yet reused: new peers
 * come only from what progress reads) and before it returns. */
static void report_gone(struct rci_publisher *p)
{
    for (uint32_t i = 0; i < p->npeers && p->ngone_due; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (!peer->gone_due)
            continue;
        peer->gone_due = false;
        p->ngone_due--;
        if (p->cb.on_peer_event)
            p->cb.on_peer_event(p->cb.arg, peer->gone_id, RCI_PUB_PEER_GONE);
    }
}

/* A closed peer whose provider let go (close_transport returned true): its
 * remaining ops complete with -ECONNRESET; the slot is free. */
static void reap(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    uint64_t before = p->st.keys_completed_error;
    rci_zc_resume_abandon(p, peer, NULL, 0, NULL);
    release_ops(p, peer, -ECONNRESET, NULL, 0, NULL);
    p->st.keys_released_by_peer_death += p->st.keys_completed_error - before;
    leave_table(p, peer);
    peer->state = RCI_PEER_FREE;
    peer->gen++;
}

/* RDM (MSG closes the endpoint at once: FI_SHUTDOWN tells the subscriber).
 * The shared endpoint keeps sending what was posted to a dead peer, and rxm
 * reads its large messages from the ring only when the subscriber asks for
 * them: a subscriber declared dead may well be alive (stopped, slow, an
 * error completion). So the peer leaves the table at once, is told BYE on
 * its own op list (behind its data, best effort), and keeps its address for
 * at most a heartbeat period so that the BYE can go out; its keys come back
 * as its sends complete. Then its address is removed; what is still
 * outstanding is released only if that removal proves the provider let go
 * (fabric.h), otherwise only by each operation's completion: never on a
 * timer. */
static void start_draining(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t now,
                           bool tell)
{
    /* No further fragments (resume_peer skips a peer that is not active);
     * the deferred rest is abandoned by reap() or pending_sends(), so that
     * close_peer runs no callback. */
    if (tell && peer->state == RCI_PEER_ACTIVE)
        rci_pub_send_bye(p, peer, RCI_BYE_NORMAL);
    rci_pub_drop_control(p, peer);   /* posts the BYE if it can, drops the rest */
    rci_buf_drop_filling(p, peer);
    peer->state = RCI_PEER_DRAINING;
    peer->drain_deadline_ns = now + p->fab.params.heartbeat_ns;
    p->ndraining++;
    leave_table(p, peer);
}

static void finish_drains(struct rci_publisher *p, uint64_t now)
{
    for (uint32_t i = 0; i < p->npeers && p->ndraining; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state != RCI_PEER_DRAINING)
            continue;
        if (peer->has_addr && (peer->nops == 0 || now >= peer->drain_deadline_ns)) {
            if (peer->nops)
                p->st.drain_timeouts++;
            if (!close_transport(p, peer)) {
                peer->state = RCI_PEER_DRAINING;  /* no proof: completions only */
                p->st.drain_no_proof++;
                continue;
            }
        } else if (peer->nops) {
            continue;
        }
        p->ndraining--;
        p->st.drained_peers++;
        reap(p, peer);
    }
}

/* Closed, but the provider gave no proof that it let go (not MSG, not rxm
 * with FI_AV_REMOVE_CLEANUP): the keys come back with their completions. */
static void drain_without_proof(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    peer->state = RCI_PEER_DRAINING;
    p->ndraining++;
    p->st.drain_no_proof++;
    leave_table(p, peer);
}

static void bury_doomed(struct rci_publisher *p, uint64_t now)
{
    for (uint32_t i = 0; i < p->npeers && p->ndoomed; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->doom == RCI_DOOM_NONE)
            continue;
        enum rci_peer_doom why = peer->doom;
        peer->doom = RCI_DOOM_NONE;
        p->ndoomed--;
        if (peer->state == RCI_PEER_FREE || peer->state == RCI_PEER_DRAINING ||
            peer->state == RCI_PEER_CLOSED)
            continue;  /* leaving already */
        count_doom(p, why);
        if (p->fab.rdm && peer->has_addr) {
            start_draining(p, peer, now, why != RCI_DOOM_BYE);  /* it said BYE: gone */
            continue;
        }
        if (close_transport(p, peer))
            reap(p, peer);
        else
            drain_without_proof(p, peer);
    }
}

/* Peers closed with rci_publisher_close_peer(): report what was not pulled. */
static void reap_closed(struct rci_publisher *p)
{
    for (uint32_t i = 0; i < p->npeers && p->nclosed; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state != RCI_PEER_CLOSED)
            continue;
        p->nclosed--;
        reap(p, peer);
    }
}

/* Peers in any state but free: what max_subscribers limits. */
static uint32_t peers_in_use(const struct rci_publisher *p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->npeers; i++)
        n += p->peers[i].state != RCI_PEER_FREE;
    return n;
}

struct rci_pub_peer *rci_pub_new_peer(struct rci_publisher *p, uint64_t now)
{
    if (p->admit_max < p->npeers && peers_in_use(p) >= p->admit_max)
        return NULL;   /* a reload lowered max_subscribers (connection events only: not per chunk) */
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state != RCI_PEER_FREE)
            continue;
        peer->state = RCI_PEER_CONNECTED;
        peer->doom = RCI_DOOM_NONE;
        peer->ep = NULL;
        peer->has_addr = false;
        peer->rx_max = 0;
        peer->client_id = 0;
        peer->version = RCI_WIRE_BASE_VERSION;
        peer->said_handled = false;
        peer->chunks_handled = 0;
        peer->joined = false;
        peer->stall = (struct rci_pub_stall){ .op = RCI_PUB_NONE };
        peer->connected = p->fab.rdm;
        peer->last_rx_ns = peer->last_hb_tx_ns = now;
        peer->rx_seen_ns = 0;
        peer->op_head = peer->op_tail = RCI_PUB_NONE;
        peer->nops = 0;
        peer->nslots_held = peer->npages_held = 0;
        peer->page = RCI_PUB_NONE;
        peer->data_seq = 0;
        peer->nranges = 0;
        peer->ctrl_head = peer->ctrl_count = 0;
        peer->name[0] = '\0';
        return peer;
    }
    return NULL;
}

/* ---- receive buffers ----------------------------------------------------- */

/* A receive buffer goes back to the pool when its index goes back on
 * rx_free (nothing posted in it any more). */
static void rx_to_free(struct rci_publisher *p, uint32_t i)
{
    struct rci_pub_rxbuf *b = &p->rx[i];
    if (b->mb)
        rci_mem_pool_put(p->pool, b->mb);
    b->mb = NULL;
    p->rx_free[p->nrx_free++] = i;
}

/* Post receive i (taking its pool buffer if it has none yet). On failure a
 * buffer taken here goes back at once. */
static int post_rx(struct rci_publisher *p, struct fid_ep *ep, uint32_t i, uint32_t owner)
{
    struct rci_pub_rxbuf *b = &p->rx[i];
    bool taken = !b->mb;
    if (taken && !(b->mb = rci_pub_buf_get(p, RCI_PUB_USE_RX)))
        return -FI_EAGAIN;   /* not expected: the class holds a buffer per receive */
    int rc = (int)fi_recv(ep, b->mb->data, p->rx_size, rci_mem_pool_desc(p->pool, b->mb), FI_ADDR_UNSPEC,
                          rci_pub_ctx(RCI_CTX_RX, i, b->gen));
    if (rc) {
        if (taken) {
            rci_mem_pool_put(p->pool, b->mb);
            b->mb = NULL;
        }
        return rc;
    }
    b->posted = true;
    b->peer = owner;
    return 0;
}

static void post_rdm_receives(struct rci_publisher *p)
{
    while (p->nrx_free) {
        uint32_t i = p->rx_free[p->nrx_free - 1];
        int rc = post_rx(p, p->fab.ep, i, RCI_PUB_NONE);
        if (rc) {
            if (rc != -FI_EAGAIN)
                rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_recv", rc);
            return;
        }
        p->nrx_free--;
    }
}

/* MSG: RCI_PUB_RX_PER_PEER buffers on the new endpoint, or an error. */
static int post_peer_receives(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (p->nrx_free < RCI_PUB_RX_PER_PEER)
        return -FI_ENOMEM;
    for (unsigned k = 0; k < RCI_PUB_RX_PER_PEER; k++) {
        uint32_t i = p->rx_free[p->nrx_free - 1];
        int rc = post_rx(p, peer->ep, i, (uint32_t)(peer - p->peers));
        if (rc)
            return rc;
        p->nrx_free--;
    }
    return 0;
}

static void repost_rx(struct rci_publisher *p, uint32_t i, struct rci_pub_peer *owner)
{
    struct rci_pub_rxbuf *b = &p->rx[i];
    b->gen++;
    if (p->fab.rdm) {
        if (post_rx(p, p->fab.ep, i, RCI_PUB_NONE))
            rx_to_free(p, i);  /* the timer posts it again */
        return;
    }
    if (owner && owner->ep && owner->state != RCI_PEER_CLOSED &&
        post_rx(p, owner->ep, i, (uint32_t)(owner - p->peers)) == 0)
        return;
    b->peer = RCI_PUB_NONE;
    rx_to_free(p, i);
    if (owner && owner->state != RCI_PEER_CLOSED)  /* it would starve of receives */
        rci_pub_peer_fail(p, (uint32_t)(owner - p->peers), RCI_DOOM_ERROR);
}

struct rci_pub_peer *rci_pub_peer_by_addr(struct rci_publisher *p, fi_addr_t addr)
{
    if (addr == FI_ADDR_NOTAVAIL || addr == FI_ADDR_UNSPEC)
        return NULL;
    for (uint32_t i = 0; i < p->npeers; i++)
        if (p->peers[i].state != RCI_PEER_FREE && p->peers[i].state != RCI_PEER_DRAINING &&
            p->peers[i].has_addr && p->peers[i].addr == addr)
            return &p->peers[i];
    return NULL;
}

static void on_rx(struct rci_publisher *p, const struct rci_fabric_cqe *e)
{
    uint32_t i = rci_pub_ctx_index(e->context);
    if (i >= p->nrx || p->rx[i].gen != rci_pub_ctx_gen(e->context) || !p->rx[i].posted) {
        p->st.stale_completions++;
        return;
    }
    struct rci_pub_rxbuf *b = &p->rx[i];
    b->posted = false;
    struct rci_pub_peer *owner = p->fab.rdm ? rci_pub_peer_by_addr(p, e->src)
                                           : (b->peer < p->npeers ? &p->peers[b->peer] : NULL);
    if (e->err) {
        if (e->err == FI_ETRUNC)
            p->st.malformed[RCI_WIRE_BAD_LENGTH]++;
        else if (e->err != FI_ECANCELED)
            p->st.rx_errors++;
        if (e->err != FI_ECANCELED)
            pub_debug(p, "receive completion error from %s: %s", owner ? owner->name : "?", p->fab.cq_error_text);
        if (e->err != FI_ETRUNC && e->err != FI_ECANCELED && owner)
            rci_pub_peer_fail(p, (uint32_t)(owner - p->peers), RCI_DOOM_ERROR);
    } else {
        rci_pub_control_message(p, owner, b->mb->data, e->len);
    }
    repost_rx(p, i, owner);
}

/* ---- completions ---------------------------------------------------------- */

static void on_tx(struct rci_publisher *p, const struct rci_fabric_cqe *e)
{
    uint32_t op_id = rci_pub_ctx_index(e->context);
    if (op_id >= p->nslots + p->npages + p->nctrl || p->ops[op_id].gen != rci_pub_ctx_gen(e->context) ||
        p->ops[op_id].state != RCI_TXOP_POSTED) {
        p->st.stale_completions++;  /* released already: its peer died */
        return;
    }
    int status = e->err ? -e->err : 0;
    uint32_t peer = p->ops[op_id].peer;
    if (status) {
        p->st.completions_error++;
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "send completion", e->err);
        pub_debug(p, "send completion error to %s: %s", peer != RCI_PUB_NONE ? p->peers[peer].name : "?",
                  p->fab.cq_error_text);
        if (peer != RCI_PUB_NONE)
            rci_pub_peer_fail(p, peer, RCI_DOOM_ERROR);
    } else {
        p->st.completions_ok++;
    }
    if (op_id >= p->nslots + p->npages)
        rci_pub_ctrl_done(p, op_id);
    else if (op_id < p->nslots)
        rci_zc_slot_done(p, op_id, status, NULL, NULL);
    else
        rci_buf_page_done(p, op_id, status);
}

int rci_pub_poll_cq(struct rci_publisher *p)
{
    struct rci_fabric_cqe e[RCI_PUB_CQ_BATCH];
    int total = 0;
    for (;;) {
        int n = rci_fabric_cq_poll(&p->fab, e, RCI_PUB_CQ_BATCH, p->err, sizeof p->err);
        if (n <= 0)
            return n < 0 ? n : total;
        for (int k = 0; k < n; k++) {
            if (rci_pub_ctx_kind(e[k].context) == RCI_CTX_RX)
                on_rx(p, &e[k]);
            else if (rci_pub_ctx_kind(e[k].context) == RCI_CTX_TXOP) {
                rci_pub_fault_completion(p, &e[k]);
                on_tx(p, &e[k]);
            }
            else
                p->st.stale_completions++;
        }
        total += n;
        if (n < (int)RCI_PUB_CQ_BATCH)
            return total;
    }
}

/* ---- connection events (MSG) --------------------------------------------- */

static void sockaddr_name(const void *sa, char *buf, size_t len)
{
    const struct sockaddr *s = sa;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (s && s->sa_family == AF_INET) {
        const struct sockaddr_in *in = sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
    } else if (s && s->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%u", host, port);
}

static void refuse_connreq(struct rci_publisher *p, struct fi_info *info, const char *why)
{
    p->st.connections_refused++;
    char who[64];
    sockaddr_name(info->dest_addr, who, sizeof who);
    rci_set_err(p->err, sizeof p->err, "connection from %s refused: %s", who, why);
    pub_debug(p, "publisher port %u: connection from %s refused: %s", p->fab.params.port, who, why);
    fi_reject(p->fab.pep, info->handle, NULL, 0);
}

static void on_connreq(struct rci_publisher *p, struct fi_info *info, uint64_t now)
{
    /* dest_addr is the connecting socket's peer address as the provider saw it */
    if (!rci_allow_list_text_permits(p->fab.params.allow, info->dest_addr, info->dest_addrlen)) {
        p->st.connections_refused_allowlist++;
        refuse_connreq(p, info, "address not in [fabric] allow");
        return;
    }
    struct rci_pub_peer *peer = rci_pub_new_peer(p, now);
    if (!peer) {
        refuse_connreq(p, info, "max_subscribers reached");
        return;
    }
    sockaddr_name(info->dest_addr, peer->name, sizeof peer->name);
    pub_debug(p, "publisher port %u: connection request from %s (subscriber %u of at most %u)", p->fab.params.port,
              peer->name, peers_in_use(p), p->admit_max);
    void *ctx = (void *)(uintptr_t)rci_pub_peer_id(p, peer);
    char err[256];
    int rc = rci_fabric_msg_ep_open(&p->fab, info, ctx, &peer->ep, err, sizeof err);
    if (rc == 0)
        rc = post_peer_receives(p, peer);
    if (rc == 0)
        rc = fi_accept(peer->ep, NULL, 0);
    if (rc) {
        refuse_connreq(p, info, rc == -FI_ENOMEM ? "no receive buffers" : fi_strerror(-rc));
        close_transport(p, peer);  /* nothing was posted to it */
        peer->state = RCI_PEER_FREE;
        peer->gen++;
        return;
    }
    peer->state = RCI_PEER_CONNECTING;
}

static void on_eq_event(struct rci_publisher *p, struct rci_fabric_event *ev, uint64_t now)
{
    if (ev->event == FI_CONNREQ && !ev->err) {
        on_connreq(p, ev->info, now);
        return;
    }
    if (ev->err) {
        p->st.connection_errors++;
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "connection event", ev->err);
        pub_debug(p, "publisher port %u: connection event error: %s", p->fab.params.port, p->err);
    }
    struct rci_pub_peer *peer = rci_pub_peer_of(p, (rci_peer_id)(uintptr_t)ev->context);
    if (!peer || peer->state == RCI_PEER_CLOSED)
        return;  /* the listener's, or an endpoint we already closed */
    uint32_t idx = (uint32_t)(peer - p->peers);
    if (ev->err) {
        rci_pub_peer_fail(p, idx, RCI_DOOM_ERROR);
    } else if (ev->event == FI_CONNECTED) {
        /* The subscriber's HELLO may have been read before this event. */
        if (peer->state == RCI_PEER_CONNECTING)
            peer->state = RCI_PEER_CONNECTED;
        peer->connected = true;
        peer->last_rx_ns = now;
        rci_pub_flush_control(p);
    } else if (ev->event == FI_SHUTDOWN) {
        pub_debug(p, "%s: connection shut down (FI_SHUTDOWN)", peer->name);
        rci_pub_peer_fail(p, idx, RCI_DOOM_SHUTDOWN);
    }
}

static int poll_eq(struct rci_publisher *p, uint64_t now)
{
    int handled = 0;
    for (;;) {
        struct rci_fabric_event ev;
        int rc = rci_fabric_eq_poll(&p->fab, &ev, p->err, sizeof p->err);
        if (rc <= 0)
            return rc < 0 ? rc : handled;
        on_eq_event(p, &ev, now);
        if (ev.info)
            fi_freeinfo(ev.info);
        handled++;
    }
}

/* ---- timers ---------------------------------------------------------------- */

/* The dead-peer rule (net/README.md): silent for peer_timeout. Liveness is
 * what the subscriber sends (messages, heartbeats), never how fast it takes
 * its data: a subscriber that reads slowly on a loaded machine is alive.
 * (An RDM rule "oldest send outstanding for peer_timeout = dead" cut off
 * live, reading subscribers under load; whether a slow subscriber is
 * dropped or cut off is the caller's policy: rci_publisher_peer_oldest_age,
 * -ENOBUFS and rci_publisher_close_peer.) */
static void check_liveness(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t now)
{
    uint64_t limit = p->fab.params.peer_timeout_ns;
    uint32_t idx = (uint32_t)(peer - p->peers);
    /* Silence counts only the time this thread was listening: while it was
     * starved (note_progress_gap), heartbeats may have waited unread. */
    if (peer->last_rx_ns != peer->rx_seen_ns) {
        peer->rx_seen_ns = peer->last_rx_ns;
        peer->starved_base_ns = p->starved_ns;
    }
    uint64_t silent = now - peer->last_rx_ns;
    uint64_t away = p->starved_ns - peer->starved_base_ns;
    if (silent > away && silent - away > limit)
        rci_pub_peer_fail(p, idx, RCI_DOOM_SILENCE);
    else if (peer->resume.active && !peer->rma.credit_stalled && now - peer->resume.since_ns > limit)
        rci_pub_peer_fail(p, idx, RCI_DOOM_STUCK);  /* its chunk's rest never accepted */
    /* (An RMA peer whose chunk's rest waits for CREDIT is slow, not dead: its
     * ring is full of views it holds. Its age is the slow policy's business,
     * rci_publisher_peer_oldest_age.) */
}

/* Connections that never finish the tcp provider's handshake: shut down
 * (half_open.h), counted as refused; descriptors running short are counted. */
static void reap_half_open(struct rci_publisher *p, uint64_t now)
{
    struct rci_half_open *h = &p->half_open;
    uint64_t allowlist_before = h->closed_allowlist;
    int closed = rci_half_open_scan(h, p->fab.params.allow, now, p->err, sizeof p->err);
    p->st.connections_refused += (uint64_t)closed;
    p->st.connections_refused_allowlist += h->closed_allowlist - allowlist_before;
    p->st.half_open_closed_timeout = h->closed_timeout;
    p->st.half_open_closed_cap = h->closed_cap;
    p->st.half_open_closed_eof = h->closed_eof;
    p->st.half_open_closed_allowlist = h->closed_allowlist;
    p->st.fd_pressure = h->fd_pressure;
    p->st.fds_in_use = h->fds_in_use;
}

/* Probe the socket of a peer whose oldest send is being watched; returns
 * true when its send queue was empty (the provider holds the send). */
static bool probe_held(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    struct sockaddr_storage local, remote;
    size_t llen = sizeof local, rlen = sizeof remote;
    struct rci_stall_probe pr;
    if (fi_getname(&peer->ep->fid, &local, &llen) || fi_getpeer(peer->ep, &remote, &rlen) ||
        rci_stall_probe_tcp((struct sockaddr *)&local, (struct sockaddr *)&remote, p->fab.cq_fd, &pr) ||
        !pr.found || pr.outq != 0)
        return false;   /* not found, or bytes in flight: the subscriber is behind, not the provider */
    bool no_pollout = pr.watched == RCI_STALL_NOT_WATCHED || (pr.watched >= 0 && !(pr.watched & 0x4));
    if (peer->stall.held == 0) {
        p->st.stalls_provider_held++;
        p->st.stalls_no_pollout += no_pollout;
    }
    rci_log_hook_say(&p->cb.log, RCI_LOG_WARN, false, __FILE__, __LINE__,
                     "%s: a send waited %s without the provider writing it: socket %d has 0 bytes to send "
                     "and %d unread, the CQ's wait set watches it for %s", peer->name,
                     peer->stall.held ? "twice peer_timeout" : "peer_timeout", pr.fd, pr.inq,
                     pr.watched == RCI_STALL_NOT_WATCHED ? "nothing (not in the set)"
                     : pr.watched == RCI_STALL_WATCH_UNKNOWN ? "? (unknown)"
                     : (pr.watched & 0x4) ? "reading and writing" : "reading only");
    return true;
}

/* tcp MSG: a send the provider keeps without writing it would hold its key
 * (and, under slow_policy = block, the card) for ever. Once the peer's
 * oldest send has waited peer_timeout of the time this thread ran, its
 * socket is examined (stall_probe.h); an empty send queue means the kernel
 * has nothing of ours for the subscriber, so it is not a slow subscriber.
 * Held so again a peer_timeout later, the connection is closed like a dead
 * peer's: its keys come back and the subscriber reconnects (net/README.md,
 * "Stalled sends"). */
static void check_send_stall(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t now)
{
    struct rci_pub_stall *w = &peer->stall;
    uint32_t op = peer->op_head;
    if (op == RCI_PUB_NONE || !peer->ep) {
        w->op = RCI_PUB_NONE;
        return;
    }
    if (w->op != op || w->gen != p->ops[op].gen) {   /* a new oldest send */
        *w = (struct rci_pub_stall){ .op = op, .gen = p->ops[op].gen, .since_ns = now,
                                     .starved_base_ns = p->starved_ns };
        return;
    }
    uint64_t limit = p->fab.params.peer_timeout_ns;
    uint64_t away = p->starved_ns - w->starved_base_ns;
    uint64_t waited = now > w->since_ns + away ? now - w->since_ns - away : 0;
    if (waited < (uint64_t)(w->probes + 1) * limit)
        return;
    w->probes++;
    p->st.stall_probes++;
    if (!probe_held(p, peer)) {
        w->held = 0;
        return;
    }
    if (++w->held >= 2)
        rci_pub_peer_fail(p, (uint32_t)(peer - p->peers), RCI_DOOM_PROVIDER);
}

static void run_timers(struct rci_publisher *p, uint64_t now)
{
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state == RCI_PEER_FREE || peer->state == RCI_PEER_CLOSED || peer->state == RCI_PEER_DRAINING)
            continue;
        check_liveness(p, peer, now);
        if (!p->fab.rdm && peer->state == RCI_PEER_ACTIVE && !peer->doom)
            check_send_stall(p, peer, now);
        if (peer->state == RCI_PEER_ACTIVE && now - peer->last_hb_tx_ns >= p->fab.params.heartbeat_ns) {
            peer->last_hb_tx_ns = now;
            rci_pub_send_heartbeat(p, peer, now);
        }
    }
    if (p->npages)
        rci_buf_flush_due(p, now);
    if (p->fab.rdm) {
        post_rdm_receives(p);
        rci_pub_forget_refused(p, now);
    }
    if (p->half_open_on)
        reap_half_open(p, now);
    if (p->nshm_retry)
        retry_shm_reclaims(p, now);
}

/* A progress call after a long pause (this thread starved, or the
 * application away): messages may have waited unread in the provider, so
 * the pause does not count as a subscriber's silence (check_liveness). */
static void note_progress_gap(struct rci_publisher *p, uint64_t now)
{
    if (p->last_progress_ns && now - p->last_progress_ns > RCI_PUB_STARVED_NS) {
        p->starved_ns += now - p->last_progress_ns;
        p->st.liveness_restarts++;
    }
    p->last_progress_ns = now;
}

int rci_publisher_progress(struct rci_publisher *p)
{
    note_progress_gap(p, rci_now_ns());
    if (p->ngone_due)
        report_gone(p);   /* peers closed by close_peer/pending_sends since */
    int work = rci_pub_poll_cq(p);
    if (work < 0)
        return work;
    if (p->nresuming)
        rci_zc_resume_all(p);
    uint64_t now = rci_now_ns();
    if (!p->fab.rdm) {
        int rc = poll_eq(p, now);
        if (rc < 0)
            return rc;
        work += rc;
    }
    if (now >= p->next_timer_ns) {
        run_timers(p, now);
        p->last_timers_ns = now;
        p->next_timer_ns = now + p->timer_period_ns;
    }
    if (p->ctrl_waiting)
        rci_pub_flush_control(p);
    if (p->ndoomed) {
        work++;
        bury_doomed(p, now);
    }
    if (p->nclosed) {
        work++;
        reap_closed(p);
    }
    if (p->ndraining)
        finish_drains(p, now);
    if (p->ngone_due)
        report_gone(p);
    return work;
}

static int progress_thunk(void *arg)
{
    return rci_publisher_progress(arg);
}

int rci_publisher_wait(struct rci_publisher *p, uint64_t timeout_ns)
{
    /* Never sleep through a timer (heartbeats, flushes, dead peers). */
    uint64_t now = rci_now_ns();
    uint64_t to_timer = p->next_timer_ns > now ? p->next_timer_ns - now : 0;
    if (to_timer < timeout_ns)
        timeout_ns = to_timer;
    return rci_fabric_wait_adaptive(&p->fab, progress_thunk, p, timeout_ns);
}

/* Nothing in flight that the short timer period serves: no page waiting
 * for its flush timeout, no peer being closed, drained or resumed, no
 * control message or report waiting. Heartbeats and the dead-peer check
 * then need the timers only every idle_period_ns. */
static bool nothing_in_flight(const struct rci_publisher *p)
{
    if (p->ndoomed || p->nclosed || p->ndraining || p->nresuming || p->ctrl_waiting || p->ngone_due)
        return false;
    for (uint32_t i = 0; p->npages && i < p->npeers; i++)
        if (p->peers[i].page != RCI_PUB_NONE)
            return false;
    return true;
}

int rci_publisher_sleep(struct rci_publisher *p, int wake_fd, uint64_t timeout_ns)
{
    return rci_publisher_sleep_nofd(p, wake_fd, timeout_ns, RCI_FABRIC_NOFD_SLEEP_NS);
}

int rci_publisher_sleep_nofd(struct rci_publisher *p, int wake_fd, uint64_t timeout_ns, uint64_t nofd_max_ns)
{
    int rc = rci_publisher_progress(p);
    if (rc)
        return rc;
    uint64_t now = rci_now_ns();
    uint64_t due = nothing_in_flight(p) ? p->last_timers_ns + p->idle_period_ns : p->next_timer_ns;
    uint64_t to_due = due > now ? due - now : 0;
    if (to_due < timeout_ns)
        timeout_ns = to_due;
    if (timeout_ns == 0)
        return 0;
    /* Posted operations complete only when the provider is polled: keep
     * the short bound for them; the caller's longer one only when idle. */
    if (ops_posted(p) > 0 && nofd_max_ns > RCI_FABRIC_NOFD_SLEEP_NS)
        nofd_max_ns = RCI_FABRIC_NOFD_SLEEP_NS;
    p->st.idle_sleeps++;
    if (!rci_fabric_wait_bounded(&p->fab, wake_fd, timeout_ns, nofd_max_ns))
        p->st.idle_sleeps_short++;
    /* Asleep on the wait fds this thread was listening: the pause is no
     * starvation (note_progress_gap). */
    p->last_progress_ns = rci_now_ns();
    return rci_publisher_progress(p);
}

/* ---- life cycle ------------------------------------------------------------- */

/* Checked once here, so that a connection request or HELLO never meets a bad list. */
static int check_allow_list(const struct rci_fabric_params *fp, char *err, size_t errlen)
{
    struct rci_allow_list allow;
    char why[160];
    if (!memchr(fp->allow, '\0', sizeof fp->allow)) {
        rci_set_err(err, errlen, "publisher [fabric] allow: not a terminated string");
        return -EINVAL;
    }
    if (rci_allow_list_parse(fp->allow, &allow, why, sizeof why) == 0)
        return 0;
    rci_set_err(err, errlen, "publisher [fabric] allow: %s", why);
    return -EINVAL;
}

static int check_params(const struct rci_fabric_params *fp, char *err, size_t errlen)
{
    const char *bad = NULL;
    if (fp->header_slots == 0 || fp->header_slots >= (1u << RCI_PUB_INDEX_BITS) / 2)
        bad = "header_slots must be 1 .. 2^27";
    else if (fp->header_slot_size < sizeof(struct rci_wire_data))
        bad = "header_slot_size must hold a 40-byte DATA header";
    else if (fp->buffered_pages && fp->buffered_page_size < RCI_WIRE_MIN_RX_BUFFER)
        bad = "buffered_page_size must be at least 72 bytes";
    else if (fp->buffered_pages >= (1u << RCI_PUB_INDEX_BITS) / 2)
        bad = "buffered_pages must be below 2^27";
    else if (fp->max_subscribers == 0 || fp->max_subscribers > 65536)
        bad = "max_subscribers must be 1 .. 65536";
    else if (fp->peer_timeout_ns == 0 || fp->heartbeat_ns == 0 ||
             fp->heartbeat_ns >= fp->peer_timeout_ns)
        bad = "need 0 < heartbeat < peer_timeout";
    if (!bad)
        return check_allow_list(fp, err, errlen);
    rci_set_err(err, errlen, "publisher [fabric]: %s", bad);
    return -EINVAL;
}

/* Control receives: RCI_PUB_RX_PER_PEER per subscriber (MSG: posted on its
 * endpoint at accept; RDM: shared, RCI_PUB_RX_PER_PEER more). RDM: never
 * more receives than the endpoint's rx queue. shm fails fi_recv past it
 * ("not enough space to post recv"), and with rx_queue 256 and 64
 * subscribers (260 receives) the publisher stopped hearing its subscribers
 * and timed them out. */
static uint32_t rx_count(const struct rci_publisher *p)
{
    uint32_t n = RCI_PUB_RX_PER_PEER * p->npeers + (p->fab.rdm ? RCI_PUB_RX_PER_PEER : 0);
    if (p->fab.rdm && p->fab.rx_size && n > p->fab.rx_size)
        n = (uint32_t)p->fab.rx_size;
    return n;
}

static int init_rx(struct rci_publisher *p, char *err, size_t errlen)
{
    p->rx = calloc(p->nrx, sizeof *p->rx);
    p->rx_free = calloc(p->nrx, sizeof *p->rx_free);
    if (!p->rx || !p->rx_free)
        return rci_fabric_error(&p->fab, err, errlen, "init_rx(alloc)", -FI_ENOMEM);
    for (uint32_t i = 0; i < p->nrx; i++) {
        p->rx[i].peer = RCI_PUB_NONE;
        p->rx_free[i] = p->nrx - 1 - i;
    }
    p->nrx_free = p->nrx;
    if (p->fab.rdm)
        post_rdm_receives(p);
    return 0;
}

/* One registered pool for the control send buffers (RCI_PUB_CTRL_MAX each,
 * one per control op), the control receive buffers (RCI_WIRE_MAX_CONTROL,
 * one per receive) and the buffered pages (buffered_page_size, one per page
 * op): a class each, each class's block registered once (FI_SEND | FI_RECV,
 * and FI_WRITE with RMA like every FI_SEND region here: rci_fabric_mr_reg). */
static int init_pool(struct rci_publisher *p, char *err, size_t errlen)
{
    p->rx_size = (uint32_t)RCI_WIRE_MAX_CONTROL;
    p->nrx = rx_count(p);
    uint32_t nctrl = RCI_PUB_CTRL_PER_PEER * p->npeers + RCI_PUB_CTRL_SPARE;
    struct rci_mem_use uses[RCI_PUB_USES] = {
        [RCI_PUB_USE_CTRL] = { "control_send", RCI_PUB_CTRL_MAX, nctrl },
        [RCI_PUB_USE_RX] = { "control_receive", p->rx_size, p->nrx },
        [RCI_PUB_USE_PAGES] = { "pages", p->fab.params.buffered_page_size, p->npages },
    };
    p->op_buf = calloc((size_t)p->npages + nctrl, sizeof *p->op_buf);
    if (!p->op_buf)
        return rci_fabric_error(&p->fab, err, errlen, "publisher pool(alloc)", -FI_ENOMEM);
    int rc = rci_mem_pool_create_uses(uses, RCI_PUB_USES, &p->pool, p->pool_cls, err, errlen);
    if (!rc)
        rc = rci_mem_pool_register(p->pool, &p->fab, p->fab.ep, FI_SEND | FI_RECV, err, errlen);
    return rc;
}

struct rci_mem_buf *rci_pub_buf_get(struct rci_publisher *p, enum rci_pub_use use)
{
    return p->pool_cls[use] < 0 ? NULL : rci_mem_pool_get_class(p->pool, (enum rci_mem_class)p->pool_cls[use]);
}

static int init_peers(struct rci_publisher *p)
{
    p->npeers = p->fab.params.max_subscribers;
    p->admit_max = p->npeers;
    p->peers = calloc(p->npeers, sizeof *p->peers);
    if (!p->peers)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->npeers; i++) {
        p->peers[i].gen = 1;
        p->peers[i].page = RCI_PUB_NONE;
        p->peers[i].op_head = p->peers[i].op_tail = RCI_PUB_NONE;
        p->peers[i].ranges = calloc(RCI_WIRE_MAX_RANGES, sizeof(struct rci_wire_range));
        p->peers[i].resume.iov = calloc(RCI_PUB_RESUME_PIECES, sizeof(struct iovec));
        p->peers[i].resume.desc = calloc(RCI_PUB_RESUME_PIECES, sizeof(void *));
        if (!p->peers[i].ranges || !p->peers[i].resume.iov || !p->peers[i].resume.desc)
            return -ENOMEM;
    }
    return 0;
}

static uint64_t timer_period(const struct rci_fabric_params *fp)
{
    uint64_t t = fp->heartbeat_ns;
    if (fp->peer_timeout_ns < t)
        t = fp->peer_timeout_ns;
    if (fp->buffered_pages && fp->flush_timeout_ns && fp->flush_timeout_ns < t)
        t = fp->flush_timeout_ns;
    t /= 4;
    return t < RCI_PUB_TIMER_MIN_NS ? RCI_PUB_TIMER_MIN_NS : t > RCI_PUB_TIMER_MAX_NS ? RCI_PUB_TIMER_MAX_NS : t;
}

/* Heartbeats and the dead-peer check, when nothing is in flight: a quarter
 * of the shorter of the two, between the busy period and 250 ms. */
static uint64_t idle_period(const struct rci_fabric_params *fp)
{
    uint64_t t = fp->heartbeat_ns < fp->peer_timeout_ns ? fp->heartbeat_ns : fp->peer_timeout_ns;
    t /= 4;
    uint64_t busy = timer_period(fp);
    return t < busy ? busy : t > RCI_PUB_IDLE_TIMER_MAX_NS ? RCI_PUB_IDLE_TIMER_MAX_NS : t;
}

static int setup(struct rci_publisher *p, const struct rci_fabric_params *fp, char *err, size_t errlen)
{
    p->nslots = fp->header_slots;
    p->npages = fp->buffered_pages;
    size_t nctrl = RCI_PUB_CTRL_PER_PEER * (size_t)fp->max_subscribers + RCI_PUB_CTRL_SPARE;
    size_t max_ops = (size_t)p->nslots + p->npages + nctrl;
    size_t nrx = RCI_PUB_RX_PER_PEER * ((size_t)fp->max_subscribers + 1);
    /* Each posted op completes at most once, but an op released with a dead
     * peer may still complete after its slot was reused: room for twice. */
    struct rci_fabric_params with_rma = *fp;
    with_rma.rma = true;   /* RMA subscribers' rings are written (net/README.md, "RMA delivery") */
    int rc = rci_fabric_open(&p->fab, &with_rma, RCI_FABRIC_LISTEN, 2 * (max_ops + nrx) + 16, err, errlen);
    if (rc)
        return rc;
    p->iov_max = (unsigned)(p->fab.tx_iov_limit < RCI_PUB_MAX_IOV ? p->fab.tx_iov_limit
                                                                 : RCI_PUB_MAX_IOV);
    if (p->iov_max < 2)
        return rci_fabric_error(&p->fab, err, errlen, "tx iov_limit below 2", -FI_ENOSYS);
    p->ops = calloc(max_ops, sizeof *p->ops);
    p->scratch = calloc(RCI_WIRE_MAX_RANGES, sizeof *p->scratch);
    if (!p->ops || !p->scratch || init_peers(p))
        return rci_fabric_error(&p->fab, err, errlen, "publisher(alloc)", -FI_ENOMEM);
    rc = init_pool(p, err, errlen);
    if (!rc)
        rc = rci_zc_init(p, err, errlen);
    if (!rc)
        rc = rci_buf_init(p, err, errlen);
    if (!rc)
        rc = rci_pub_ctrl_init(p, err, errlen);
    if (!rc)
        rc = init_rx(p, err, errlen);
    if (!rc && !p->fab.rdm && p->fab.info->fabric_attr->prov_name &&
        strcmp(p->fab.info->fabric_attr->prov_name, "tcp") == 0) {
        /* tcp MSG: connections stuck in the provider's handshake (half_open.h). */
        p->half_open_on = true;
        if (rci_half_open_init(&p->half_open, fp->port, fp->max_subscribers, fp->peer_timeout_ns))
            rc = rci_fabric_error(&p->fab, err, errlen, "half_open(alloc)", -FI_ENOMEM);
    }
    if (rc)
        return rc;
    if (getrandom(&p->publisher_id, sizeof p->publisher_id, 0) != sizeof p->publisher_id)
        p->publisher_id = rci_now_ns() ^ ((uint64_t)getpid() << 32);
    p->timer_period_ns = timer_period(fp);
    p->idle_period_ns = idle_period(fp);
    p->last_timers_ns = rci_now_ns();
    p->next_timer_ns = p->last_timers_ns + p->timer_period_ns;
    p->st.slots_total = p->nslots;
    p->st.pages_total = p->npages;
    return 0;
}

int rci_publisher_create(const struct rci_fabric_params *params,
                        const struct rci_publisher_callbacks *cb, struct rci_publisher **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    if (!cb || !cb->on_send_complete) {
        rci_set_err(err, errlen, "publisher: on_send_complete callback required");
        return -EINVAL;
    }
    int rc = check_params(params, err, errlen);
    if (rc)
        return rc;
    struct rci_publisher *p = calloc(1, sizeof *p);
    if (!p) {
        rci_set_err(err, errlen, "publisher: out of memory");
        return -ENOMEM;
    }
    p->cb = *cb;
    p->fab.cq_fd = p->fab.eq_fd = -1;
    rc = setup(p, params, err, errlen);
    if (rc) {
        rci_publisher_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

static void free_peers(struct rci_publisher *p)
{
    for (uint32_t i = 0; p->peers && i < p->npeers; i++) {
        free(p->peers[i].ranges);
        free(p->peers[i].resume.iov);
        free(p->peers[i].resume.desc);
    }
    free(p->peers);
}

/* RDM: a subscriber learns of the end only from a BYE (with MSG the
 * endpoint's close tells it); without one it would wait out its peer_timeout.
 * Each active peer is told, and the completions are awaited at most
 * RCI_PUB_BYE_FLUSH_NS: a BYE behind stuck sends does not hold the shutdown. */
#define RCI_PUB_BYE_FLUSH_NS 200000000ull

void rci_publisher_end_run(struct rci_publisher *p)
{
    p->run_over = true;
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state == RCI_PEER_ACTIVE && !peer->doom && (!p->fab.rdm || peer->has_addr))
            rci_pub_send_bye(p, peer, RCI_BYE_NORMAL);
    }
}

static void tell_rdm_peers_bye(struct rci_publisher *p)
{
    /* After rci_publisher_end_run every active peer was told already. */
    if (!p->fab.rdm || !p->peers || !p->ops || !p->fab.ep || p->run_over)
        return;
    unsigned told = 0;
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state == RCI_PEER_ACTIVE && peer->has_addr) {
            rci_pub_send_bye(p, peer, RCI_BYE_NORMAL);
            told++;
        }
    }
    uint64_t deadline = rci_now_ns() + RCI_PUB_BYE_FLUSH_NS;
    while (told && (p->ctrl_waiting || p->nctrl_free < p->nctrl) && rci_now_ns() < deadline) {
        if (rci_pub_poll_cq(p) < 0)
            break;
        rci_pub_flush_control(p);
        rci_sleep_ns(100000);
    }
}

void rci_publisher_destroy(struct rci_publisher *p)
{
    if (!p)
        return;
    tell_rdm_peers_bye(p);
    for (uint32_t i = 0; p->peers && p->ops && i < p->npeers; i++)
        if (p->peers[i].state != RCI_PEER_FREE)
            close_transport(p, &p->peers[i]);
    if (p->fab.rdm)
        rci_pub_forget_refused(p, UINT64_MAX);
    retry_shm_reclaims(p, UINT64_MAX);
    /* The RDM endpoint goes before the MRs its operations used, and before
     * any key is released: closing it is what lets go of every send. */
    rci_fabric_ep_close(p->fab.ep);
    p->fab.ep = NULL;
    for (uint32_t i = 0; p->peers && p->ops && i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state == RCI_PEER_FREE)
            continue;
        rci_zc_resume_abandon(p, peer, NULL, 0, NULL);
        release_ops(p, peer, -ECANCELED, NULL, 0, NULL);
        peer->state = RCI_PEER_FREE;
    }
    if (p->cb.on_closing)
        p->cb.on_closing(p->cb.arg);
    for (unsigned i = 0; i < p->nregions; i++)
        rci_fabric_mr_close(&p->region[i]);
    if (p->slot_free)
        rci_zc_fini(p);
    rci_buf_fini(p);
    rci_pub_ctrl_fini(p);
    rci_half_open_fini(&p->half_open);
    rci_mem_pool_destroy(p->pool);   /* its MRs close before the domain */
    free(p->op_buf);
    rci_fabric_close(&p->fab);
    free(p->rx);
    free(p->rx_free);
    free(p->ops);
    free(p->scratch);
    free_peers(p);
    free(p);
}

int rci_publisher_register(struct rci_publisher *p, const void *addr, size_t len, char *err,
                          size_t errlen)
{
    if (p->nregions == RC_PUB_MAX_REGIONS) {
        rci_set_err(err, errlen, "publisher: at most %u registered regions", RC_PUB_MAX_REGIONS);
        return -ENOSPC;
    }
    int rc = rci_fabric_mr_reg(&p->fab, addr, len, FI_SEND, p->fab.ep, &p->region[p->nregions],
                              err, errlen);
    if (rc)
        return rc;
    p->nregions++;
    return 0;
}

/* ---- peers seen from outside ------------------------------------------------- */

int rci_publisher_set_allow(struct rci_publisher *p, const char *allow, char *err, size_t errlen)
{
    struct rci_fabric_params fp;
    if (strlen(allow) >= sizeof fp.allow) {
        rci_set_err(err, errlen, "publisher [fabric] allow: longer than %zu characters", sizeof fp.allow - 1);
        return -EINVAL;
    }
    snprintf(fp.allow, sizeof fp.allow, "%s", allow);
    int rc = check_allow_list(&fp, err, errlen);
    if (rc == 0)
        memcpy(p->fab.params.allow, fp.allow, sizeof fp.allow);
    return rc;
}

int rci_publisher_set_max_subscribers(struct rci_publisher *p, uint32_t n, char *err, size_t errlen)
{
    if (n == 0 || n > p->npeers) {
        rci_set_err(err, errlen, "publisher [fabric] max_subscribers = %u: must be 1 .. %u, the value it started "
                    "with (its buffers are sized for that many; a restart raises it)", n, p->npeers);
        return -ERANGE;
    }
    p->admit_max = n;
    return 0;
}

int rci_publisher_close_peer(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    if (!peer)
        return -ENOTCONN;
    if (peer->state == RCI_PEER_CLOSED || peer->state == RCI_PEER_DRAINING)
        return 0;   /* leaving already */
    if (peer->doom) {
        peer->doom = RCI_DOOM_NONE;
        p->ndoomed--;
    }
    count_doom(p, RCI_DOOM_LOCAL);
    if (p->fab.rdm && peer->has_addr) {  /* BYE first, see start_draining */
        start_draining(p, peer, rci_now_ns(), true);
        return 0;
    }
    if (peer->state == RCI_PEER_ACTIVE)
        rci_pub_send_bye(p, peer, RCI_BYE_NORMAL);
    if (close_transport(p, peer))
        p->nclosed++;
    else
        drain_without_proof(p, peer);
    return 0;
}

/* A dead or closing peer, now: close its transport. True when the provider
 * let go, so its keys may be handed out. */
static bool close_now(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (peer->state == RCI_PEER_CLOSED)
        return true;
    if (peer->state == RCI_PEER_DRAINING && !peer->has_addr)
        return false;   /* removed already, without proof */
    if (peer->state == RCI_PEER_DRAINING) {
        p->ndraining--;
    } else {  /* dead, not yet buried */
        count_doom(p, peer->doom);
        peer->doom = RCI_DOOM_NONE;
        p->ndoomed--;
    }
    if (close_transport(p, peer)) {
        p->nclosed++;
        return true;
    }
    drain_without_proof(p, peer);
    return false;
}

int rci_publisher_pending_sends(struct rci_publisher *p, rci_peer_id id, uint64_t *keys, unsigned max)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    if (!peer)
        return -ENOTCONN;
    if (peer->state != RCI_PEER_CLOSED && peer->state != RCI_PEER_DRAINING && peer->doom == RCI_DOOM_NONE)
        return -EBUSY;
    if (!close_now(p, peer))
        return 0;   /* they come back through on_send_complete as they complete */
    unsigned count = 0;
    rci_zc_resume_abandon(p, peer, keys, max, &count);
    release_ops(p, peer, -ECONNRESET, keys, max, &count);
    p->st.keys_released_by_peer_death += count;
    return (int)count;
}

unsigned rci_publisher_peers(struct rci_publisher *p, rci_peer_id *out, unsigned max)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->state != RCI_PEER_ACTIVE || peer->doom || !peer->connected)
            continue;
        if (n < max)
            out[n] = rci_pub_peer_id(p, peer);
        n++;
    }
    return n;
}

const char *rci_publisher_peer_name(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    return peer ? peer->name : "";
}

unsigned rci_publisher_peer_ranges(struct rci_publisher *p, rci_peer_id id,
                                  const struct rci_wire_range **ranges)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    *ranges = peer ? peer->ranges : NULL;
    return peer ? peer->nranges : 0;
}

void rci_publisher_get_stats(const struct rci_publisher *p, struct rci_publisher_stats *s)
{
    *s = p->st;
    s->slots_free = p->nslot_free;
    s->pages_free = p->npage_free;
    s->bounce_free = p->nbounce_free;
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++)
        rci_mem_pool_class_stats(p->pool, (enum rci_mem_class)c, &s->pool[c]);
}

const struct rci_fabric *rci_publisher_fabric(const struct rci_publisher *p)
{
    return &p->fab;
}

const char *rci_publisher_last_error(const struct rci_publisher *p)
{
    return p->err;
}
