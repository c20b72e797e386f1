/* SPDX-License-Identifier: BSD-3-Clause */
/* buffered.c — buffered sends: small chunks are copied as records into a
 * registered page (one per subscriber being filled), and the page goes out as
 * one PAGE message when full, when the caller has no more records for now
 * (rci_publisher_flush_idle) or flush_timeout after its first record. The
 * chunk's key never becomes the publisher's: once the record is copied the
 * caller releases it itself (no callback). Pages are recycled on their send
 * completion (or when their subscriber dies). Nothing here reads the CQ:
 * completions, and so every callback, run only from progress (a send that
 * finds no free page returns -EAGAIN and leaves the rest to progress). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/pub_internal.h"

/* The page op's pool buffer (taken by open_page, given back by recycle). */
static uint8_t *page_addr(const struct rci_publisher *p, uint32_t op)
{
    return p->op_buf[op - p->nslots]->data;
}

/* Page op ids only: the pages themselves come from the publisher's pool
 * (class pool_cls[RCI_PUB_USE_PAGES], made and registered by publisher.c). */
int rci_buf_init(struct rci_publisher *p, char *err, size_t errlen)
{
    if (p->npages == 0)
        return 0;  /* buffered mode off */
    p->page_size = p->fab.params.buffered_page_size;
    p->page_free = calloc(p->npages, sizeof *p->page_free);
    if (!p->page_free)
        return rci_fabric_error(&p->fab, err, errlen, "rci_buf_init(alloc)", -FI_ENOMEM);
    for (uint32_t i = 0; i < p->npages; i++)
        p->page_free[i] = p->nslots + p->npages - 1 - i;
    p->npage_free = p->npages;
    return 0;
}

void rci_buf_fini(struct rci_publisher *p)
{
    free(p->page_free);
    p->page_free = NULL;
}

static void recycle(struct rci_publisher *p, uint32_t op_id)
{
    struct rci_pub_txop *op = &p->ops[op_id];
    if (op->peer < p->npeers)
        p->peers[op->peer].npages_held--;
    op->peer = RCI_PUB_NONE;
    op->state = RCI_TXOP_FREE;
    op->gen++;
    rci_mem_pool_put(p->pool, p->op_buf[op_id - p->nslots]);
    p->op_buf[op_id - p->nslots] = NULL;
    p->page_free[p->npage_free++] = op_id;
}

void rci_buf_page_done(struct rci_publisher *p, uint32_t op_id, int status)
{
    rci_pub_op_unlink(p, op_id);
    recycle(p, op_id);
    if (status) {
        p->st.pages_failed++;
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "PAGE completion", status);
    }
}

void rci_buf_drop_filling(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (peer->page == RCI_PUB_NONE)
        return;
    /* Its records' keys were released at copy time: the data is lost. */
    p->st.pages_failed++;
    recycle(p, peer->page);
    peer->page = RCI_PUB_NONE;
}

/* Post the peer's filling page. 0, -EAGAIN (still filling, retried later), or
 * another error (page dropped and counted: its records are lost). */
static int post_page(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (peer->resume.active)
        return -EAGAIN;  /* a chunk's fragments go back to back, and before later records */
    uint32_t op_id = peer->page;
    struct rci_pub_txop *op = &p->ops[op_id];
    uint8_t *buf = page_addr(p, op_id);
    struct iovec iov = { .iov_base = buf, .iov_len = rci_wire_page_length(buf) };
    void *desc = rci_mem_pool_desc(p->pool, p->op_buf[op_id - p->nslots]);
    rci_wire_set_stream_seq(buf, peer->data_seq);
    int rc = rci_pub_post(p, peer, &iov, &desc, 1, rci_pub_ctx(RCI_CTX_TXOP, op_id, op->gen));
    if (rc == -FI_EAGAIN)
        return -EAGAIN;
    peer->page = RCI_PUB_NONE;
    if (rc == 0)
        peer->data_seq++;
    if (rc) {
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_sendv(page)", rc);
        p->st.pages_failed++;
        recycle(p, op_id);
        return rc < 0 ? rc : -rc;
    }
    op->state = RCI_TXOP_POSTED;
    rci_pub_op_link(p, (uint32_t)(peer - p->peers), op_id, rci_now_ns());
    p->st.pages_sent++;
    return 0;
}

static int open_page(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    if (!rci_pub_page_within_quota(p, peer)) {
        p->st.again_peer_quota++;
        return -ENOBUFS;
    }
    if (p->npage_free == 0) {
        p->st.again_no_page++;
        return -EAGAIN;
    }
    /* One pool get per page, on the publisher's thread (like every call
     * here); the pool holds npages pages, so a free page op finds one. */
    struct rci_mem_buf *mb = rci_pub_buf_get(p, RCI_PUB_USE_PAGES);
    if (!mb) {
        p->st.again_no_page++;
        return -EAGAIN;
    }
    uint32_t op_id = p->page_free[--p->npage_free];
    struct rci_pub_txop *op = &p->ops[op_id];
    p->op_buf[op_id - p->nslots] = mb;
    rci_wire_page_init(page_addr(p, op_id), p->page_size);
    op->state = RCI_TXOP_FILLING;
    op->peer = (uint32_t)(peer - p->peers);
    op->since_ns = rci_now_ns();
    peer->page = op_id;
    peer->npages_held++;
    return 0;
}

static uint32_t page_capacity(const struct rci_publisher *p, const struct rci_pub_peer *peer)
{
    return peer->rx_max < p->page_size ? peer->rx_max : p->page_size;
}

int rci_publisher_send_buffered(struct rci_publisher *p, rci_peer_id peer_id, uint64_t tag,
                               uint32_t flags, const struct iovec *iov, unsigned n)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, peer_id);
    if (!peer || peer->state != RCI_PEER_ACTIVE || peer->doom != RCI_DOOM_NONE || !peer->connected)
        return -ENOTCONN;
    if (peer->rma.on)
        return -EMSGSIZE;   /* RMA delivery: every chunk goes as records (rci_publisher_send) */
    if (p->npages == 0)
        return -ENOTSUP;
    uint64_t len = 0;
    for (unsigned i = 0; i < n; i++)
        len += iov[i].iov_len;
    uint64_t rec_size = sizeof(struct rci_wire_record) + ((len + 7u) & ~(uint64_t)7u);
    uint32_t cap = page_capacity(p, peer);
    if (sizeof(struct rci_wire_page) + rec_size > cap)
        return -EMSGSIZE;
    if (peer->page != RCI_PUB_NONE &&
        rci_wire_page_length(page_addr(p, peer->page)) + rec_size > cap) {
        int rc = post_page(p, peer);
        if (rc == -EAGAIN)
            return rc;
    }
    if (peer->page == RCI_PUB_NONE) {
        int rc = open_page(p, peer);
        if (rc)
            return rc;
    }
    /* Fits: checked against `cap` above (pieces come from the ring, never NULL). */
    ssize_t used = rci_wire_page_appendv(page_addr(p, peer->page), cap, tag, flags, iov, n);
    p->st.buffered_records++;
    p->st.buffered_bytes += len;
    p->st.keys_completed_ok++;   /* copied: the key is done (the caller's again, no callback) */
    /* Full: not even an empty record fits any more. */
    if ((size_t)used + sizeof(struct rci_wire_record) > cap)
        post_page(p, peer);
    return 0;
}

int rci_publisher_flush(struct rci_publisher *p, rci_peer_id peer_id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, peer_id);
    if (!peer || peer->state != RCI_PEER_ACTIVE)
        return -ENOTCONN;
    if (peer->page == RCI_PUB_NONE)
        return 0;
    return post_page(p, peer);
}

int rci_publisher_flush_idle(struct rci_publisher *p, rci_peer_id peer_id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, peer_id);
    bool filling = peer && peer->page != RCI_PUB_NONE;
    int rc = rci_publisher_flush(p, peer_id);
    if (rc || !filling)
        return rc;
    p->st.pages_flushed_idle++;
    return 1;
}

int rci_buf_flush_due(struct rci_publisher *p, uint64_t now)
{
    int posted = 0;
    for (uint32_t i = 0; i < p->npeers; i++) {
        struct rci_pub_peer *peer = &p->peers[i];
        if (peer->page == RCI_PUB_NONE || peer->state != RCI_PEER_ACTIVE)
            continue;
        if (now - p->ops[peer->page].since_ns < p->fab.params.flush_timeout_ns)
            continue;
        if (post_page(p, peer) == 0) {
            p->st.pages_flushed_by_timeout++;
            posted++;
        }
    }
    return posted;
}
