/* SPDX-License-Identifier: BSD-3-Clause */
/* stream_write.c — block streams on the publisher side (net/README.md,
 * "Block stream"): a subscriber that asked for a card's blocks in HELLO
 * (its RMA ring plus the stream part) gets contiguous spans of the card's
 * ring written as they are into its ring with fi_writemsg +
 * FI_REMOTE_CQ_DATA, at consecutive positions, never past its CREDIT.
 *
 * The subscriber's ring state is the RMA one (struct rci_pub_rma: base,
 * size, key, wpos, credit, full_since_ns), so CREDIT handling, the slow
 * subscriber's age and the dead-peer rules are RMA delivery's. A span is a
 * txop on a header slot without a header (zc_send.c's completion path gives
 * its key back exactly once, dead peers included). The caller (the
 * pipeline) forms spans out of whole blocks and never asks past
 * rci_publisher_stream_room(). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fi_rma.h>

#include "common/errbuf.h"
#include "common/monotonic.h"
#include "net/pub_internal.h"
#include "net/rma_ring.h"

int rci_publisher_set_stream_cards(struct rci_publisher *p, const struct rci_pub_stream_card *cards,
                                   unsigned n)
{
    if (n > RCI_PUB_MAX_STREAM_CARDS)
        return -E2BIG;
    memcpy(p->stream_cards, cards, n * sizeof *cards);
    p->nstream_cards = n;
    return 0;
}

static const struct rci_pub_stream_card *stream_card(const struct rci_publisher *p, uint32_t index)
{
    for (unsigned i = 0; i < p->nstream_cards; i++)
        if (p->stream_cards[i].index == index)
            return &p->stream_cards[i];
    return NULL;
}

/* Why this ring cannot take the card's blocks, or NULL. */
static const char *ring_problem(const struct rci_publisher *p, const struct rci_wire_hello_rma *r,
                                const struct rci_wire_hello_stream *st, uint32_t bs)
{
    if (r->len % bs || st->start_offset % bs)
        return "ring size or start not a multiple of the block size";
    if (r->len / bs < 8)
        return "ring smaller than 8 blocks";
    if (p->fab.copy_max && bs > p->fab.copy_max)
        return "block larger than what shm copies at post (its inject size)";
    if (p->fab.max_msg_size && bs > p->fab.max_msg_size)
        return "block larger than the provider's largest message";
    if (r->base + r->len < r->base)
        return "region wraps the address space";
    if (p->fab.mr_virt_addr && r->base == 0)
        return "address 0 where the provider writes to virtual addresses";
    size_t key_size = p->fab.info->domain_attr->mr_key_size;
    if (key_size < 8 && r->key >> (8 * key_size))
        return "key larger than the provider's keys";
    return NULL;
}

static void refuse(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_refusal why, const char *detail)
{
    p->st.stream_refused++;
    rci_pub_refuse_peer(p, peer, why, detail);
}

int rci_stream_hello(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_hello_stream st;
    struct rci_wire_hello_rma r;
    peer->stream = (struct rci_pub_stream){0};
    if (!rci_wire_hello_stream(buf, len, &st))
        return 0;
    rci_wire_hello_rma(buf, len, &r);   /* checked: a stream part follows the RMA part */
    const struct rci_pub_stream_card *c = stream_card(p, st.card);
    char detail[200];
    if (!c) {
        snprintf(detail, sizeof detail, " (card %" PRIu32 " asked; %u cards streamed here)", st.card,
                 p->nstream_cards);
        refuse(p, peer, RCI_REFUSED_STREAM_CARD, detail);
        return -1;
    }
    if (!p->fab.rma) {
        snprintf(detail, sizeof detail, " (card %" PRIu32 ": no FI_RMA with 8 bytes of CQ data here)", st.card);
        refuse(p, peer, RCI_REFUSED_STREAM_RMA, detail);
        return -1;
    }
    const char *why = ring_problem(p, &r, &st, c->block_size);
    if (why) {
        snprintf(detail, sizeof detail, " (%s: ring %" PRIu64 " B from offset %" PRIu64 ", card %" PRIu32
                 " blocks %" PRIu32 " B)", why, r.len, st.start_offset, st.card, c->block_size);
        refuse(p, peer, RCI_REFUSED_STREAM_BLOCK, detail);
        return -1;
    }
    peer->stream = (struct rci_pub_stream){ .on = true, .card = st.card, .block_size = c->block_size,
                                           .tag_base = c->tag_base };
    /* The ring is an RMA ring written by spans: credits, age and dead-peer
     * rules are RMA delivery's. Positions of this connection start at the
     * offset the subscriber named. */
    peer->rma = (struct rci_pub_rma){ .on = true, .base = r.base, .size = r.len, .key = r.key,
                                     .wpos = st.start_offset, .credit = st.start_offset,
                                     .max_record = r.len / 8 };
    p->st.stream_subscribers++;
    return 1;
}

ssize_t rci_stream_welcome(const struct rci_pub_peer *peer, uint8_t *msg, size_t cap, ssize_t len)
{
    if (len < 0 || !peer->stream.on)
        return len;
    struct rci_wire_welcome_stream w = { .card = peer->stream.card, .block_size = peer->stream.block_size,
                                         .tag_base = peer->stream.tag_base };
    return rci_wire_add_welcome_stream(msg, cap, (size_t)len, &w);
}

static struct rci_pub_peer *stream_peer(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    if (!peer || peer->state != RCI_PEER_ACTIVE || peer->doom != RCI_DOOM_NONE || !peer->connected ||
        !peer->stream.on)
        return NULL;
    return peer;
}

bool rci_publisher_peer_stream(struct rci_publisher *p, rci_peer_id id, uint32_t *card)
{
    struct rci_pub_peer *peer = stream_peer(p, id);
    if (peer && card)
        *card = peer->stream.card;
    return peer != NULL;
}

uint64_t rci_publisher_stream_room(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = stream_peer(p, id);
    if (!peer)
        return 0;
    struct rci_pub_rma *m = &peer->rma;
    uint64_t free_bytes = m->credit + m->size - m->wpos;
    uint64_t to_end = m->size - m->wpos % m->size;
    uint64_t room = free_bytes < to_end ? free_bytes : to_end;
    /* At most an eighth of its ring (it credits by quarters: a span it can
     * take is never left waiting), and over shm no more than shm copies at
     * post (the "at post" let-go rule of net/README.md, "Dead peers"). */
    uint64_t cap = m->max_record;
    if (p->fab.copy_max && p->fab.copy_max < cap)
        cap = p->fab.copy_max;
    if (p->fab.max_msg_size && p->fab.max_msg_size < cap)
        cap = p->fab.max_msg_size;
    if (room > cap)
        room = cap;
    room -= room % peer->stream.block_size;
    /* Its age for the slow policy (rci_publisher_peer_oldest_age), as for
     * an RMA ring: since when it has had no room for a block. */
    if (room >= peer->stream.block_size)
        m->full_since_ns = 0;
    else if (!m->full_since_ns)
        m->full_since_ns = p->last_progress_ns ? p->last_progress_ns : rci_now_ns();
    return room;
}

/* Post one write of [iov...] at the peer's next position. */
static int post_span(struct rci_publisher *p, struct rci_pub_peer *peer, const struct iovec *iov,
                     void **desc, unsigned n, uint64_t len, bool gap_before, void *ctx)
{
    struct fid_ep *ep = p->fab.rdm ? p->fab.ep : peer->ep;
    if (!ep)
        return -FI_ENOTCONN;
    return rci_pub_rma_post(p, peer, ep, gap_before ? RCI_RMA_IMM_STREAM_GAP : 0, iov, desc, n, peer->rma.wpos,
                            len, ctx);
}

int rci_publisher_stream_write(struct rci_publisher *p, rci_peer_id id, const struct iovec *iov, unsigned n,
                               bool gap_before, uint64_t key)
{
    struct rci_pub_peer *peer = stream_peer(p, id);
    if (!peer)
        return -ENOTCONN;
    if (n == 0 || n > p->iov_max) {
        p->st.send_errors++;
        return -EINVAL;
    }
    void *desc[RCI_PUB_MAX_IOV];
    uint64_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        bool found;
        desc[i] = rci_publisher_region_desc(p, iov[i].iov_base, iov[i].iov_len, &found);
        if (!found) {
            p->st.unregistered_pieces++;
            return -EFAULT;
        }
        len += iov[i].iov_len;
    }
    if (len == 0 || len % peer->stream.block_size || len > UINT32_MAX ||
        len > rci_publisher_stream_room(p, id)) {
        p->st.send_errors++;
        return -EINVAL;    /* a span the caller must not form */
    }
    if (!rci_pub_slots_within_quota(p, peer, 1)) {
        p->st.again_peer_quota++;
        return -ENOBUFS;
    }
    if (p->nslot_free == 0) {
        p->st.again_no_slot++;
        return -EAGAIN;
    }
    uint32_t slot = p->slot_free[p->nslot_free - 1];
    struct rci_pub_txop *op = &p->ops[slot];
    int rc = post_span(p, peer, iov, desc, n, len, gap_before, rci_pub_ctx(RCI_CTX_TXOP, slot, op->gen));
    if (rc == -FI_EAGAIN) {
        p->st.again_provider++;
        return -EAGAIN;
    }
    if (rc) {
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_writemsg(stream span)", rc);
        p->st.send_errors++;
        return rc < 0 ? rc : -rc;
    }
    p->nslot_free--;
    if (p->nslot_free < p->min_free_slots)
        p->min_free_slots = p->nslot_free;
    peer->rma.wpos += len;
    peer->nslots_held++;
    op->state = RCI_TXOP_POSTED;
    op->key = key;
    op->record = RCI_PUB_NONE;
    op->bounce = RCI_PUB_NONE;
    rci_pub_op_link(p, (uint32_t)(peer - p->peers), slot, rci_now_ns());
    p->st.stream_spans++;
    p->st.stream_bytes += len;
    return 0;
}
