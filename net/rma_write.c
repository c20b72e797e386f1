/* SPDX-License-Identifier: BSD-3-Clause */
/* rma_write.c — RMA delivery on the publisher side (net/README.md, "RMA
 * delivery"): a subscriber that announced a receive ring in HELLO gets each
 * chunk as one or more records (DATA messages: the 40-byte header from a
 * header slot, the payload pieces from the card ring) written with
 * fi_writemsg + FI_REMOTE_CQ_DATA at the next free place of its ring
 * (net/rma_ring.h decides where). It gives space back with CREDIT; nothing is
 * written into space it has not released.
 *
 * Records reuse the zero-copy send's machinery (zc_send.c): header slots,
 * fragments (a chunk larger than one record, or with more pieces than one
 * write carries, is several records with consecutive sequence numbers), the
 * op list and generations, so keys come back exactly once by the same rules
 * as sends, dead peers included. The per-record difference is only the post
 * (rci_rma_post instead of fi_sendv). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fi_rma.h>

#include "common/errbuf.h"
#include "net/pub_internal.h"
#include "net/rma_ring.h"

/* Can the provider write the ring the subscriber announced? What we can
 * judge here: the key fits the provider's key size, the region does not wrap
 * the address space, and records of useful size fit it. NULL when fine. */
static const char *region_problem(const struct rci_publisher *p, const struct rci_wire_hello_rma *r,
                                  uint64_t max_record)
{
    size_t key_size = p->fab.info->domain_attr->mr_key_size;
    if (key_size < 8 && r->key >> (8 * key_size))
        return "key larger than the provider's keys";
    if (r->base + r->len < r->base)
        return "region wraps the address space";
    if (p->fab.mr_virt_addr && r->base == 0)
        return "address 0 where the provider writes to virtual addresses";
    if (max_record < sizeof(struct rci_wire_data) + 8u)
        return "ring too small for a record";
    return NULL;
}

bool rci_rma_hello(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_hello_rma r;
    peer->rma = (struct rci_pub_rma){0};
    if (!rci_wire_hello_rma(buf, len, &r))
        return true;   /* send delivery, as asked */
    peer->rma.asked = true;
    if (!p->fab.rma) {
        peer->rma.fallback = RCI_RMA_NO_CAPABILITY;
        p->st.rma_fallbacks++;
        rci_set_err(p->err, sizeof p->err, "%s: asked for RMA delivery, served by send (%s)", peer->name,
                    "the provider has no FI_RMA with 8 bytes of CQ data");
        return true;
    }
    uint64_t cap = p->fab.copy_max;   /* shm: only what it copies at post (letgo rule) */
    if (p->fab.max_msg_size && (!cap || p->fab.max_msg_size < cap))
        cap = p->fab.max_msg_size;
    uint64_t max_record = rci_rma_max_record(r.len, cap);
    if (max_record > UINT32_MAX)
        max_record = UINT32_MAX & ~(uint64_t)7u;
    const char *why = region_problem(p, &r, max_record);
    if (why) {
        char detail[96];
        snprintf(detail, sizeof detail, " (%s: %" PRIu64 " B at 0x%" PRIx64 ", key 0x%" PRIx64 ")", why,
                 r.len, r.base, r.key);
        p->st.rma_refused_region++;
        rci_pub_refuse_peer(p, peer, RCI_REFUSED_RMA_REGION, detail);
        return false;
    }
    peer->rma.on = true;
    peer->rma.base = r.base;
    peer->rma.size = r.len;
    peer->rma.key = r.key;
    peer->rma.max_record = max_record;
    /* zc_send.c plans fragments by rx_max: for this peer a fragment is a record. */
    peer->rx_max = (uint32_t)max_record;
    p->st.rma_subscribers++;
    return true;
}

ssize_t rci_rma_welcome(const struct rci_pub_peer *peer, uint8_t *msg, size_t cap, ssize_t len)
{
    if (len < 0 || !peer->rma.asked)
        return len;
    return rci_wire_add_welcome_rma(msg, cap, (size_t)len, peer->rma.on ? RCI_DELIVERY_RMA : RCI_DELIVERY_SEND,
                                    peer->rma.fallback);
}

void rci_rma_credit(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len)
{
    struct rci_wire_credit c;
    rci_wire_check_credit(buf, len, &c);   /* checked by the caller: decodes only */
    if (!peer->rma.on || !rci_rma_credit_valid(peer->rma.credit, c.read_pos, peer->rma.wpos)) {
        p->st.rma_bad_credits++;
        rci_set_err(p->err, sizeof p->err, "%s: CREDIT %" PRIu64 " impossible (released %" PRIu64
                    ", written %" PRIu64 "%s): subscriber closed", peer->name, c.read_pos, peer->rma.credit,
                    peer->rma.wpos, peer->rma.on ? "" : ", no RMA delivery");
        rci_pub_peer_fail(p, (uint32_t)(peer - p->peers), RCI_DOOM_ERROR);
        return;
    }
    peer->rma.credit = c.read_pos;
    p->st.rma_credits++;
    /* It released space: its ring is no longer "full since" then. Without
     * this only a send attempt (rci_rma_room) cleared it, and under
     * slow_policy = drop the pipeline makes none while the age says the
     * subscriber is behind: one full ring dropped all its later chunks for
     * good. The next rci_rma_room without room starts the age anew. */
    peer->rma.full_since_ns = 0;
}

bool rci_rma_room(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t len)
{
    uint64_t start;
    if (len > peer->rma.max_record)
        len = peer->rma.max_record;
    bool room = rci_rma_place(peer->rma.wpos, peer->rma.size, len, &start) &&
                rci_rma_fits(start, len, peer->rma.credit, peer->rma.size);
    /* How long it has been full is its age for the slow policy
     * (rci_publisher_peer_oldest_age): under drop it loses its own chunks. */
    if (room)
        peer->rma.full_since_ns = 0;
    else if (!peer->rma.full_since_ns)
        peer->rma.full_since_ns = p->last_progress_ns ? p->last_progress_ns : rci_now_ns();
    return room;
}

int rci_rma_post(struct rci_publisher *p, struct rci_pub_peer *peer, const struct iovec *iov, void **desc,
                 size_t n, void *ctx)
{
    struct fid_ep *ep = p->fab.rdm ? p->fab.ep : peer->ep;
    if (!ep)
        return -FI_ENOTCONN;
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += iov[i].iov_len;
    uint64_t start;
    if (len > peer->rma.max_record || !rci_rma_place(peer->rma.wpos, peer->rma.size, len, &start))
        return -FI_EMSGSIZE;   /* a plan zc_send.c never makes */
    if (!rci_rma_fits(start, len, peer->rma.credit, peer->rma.size)) {
        p->st.rma_wait_credit++;
        if (!peer->rma.credit_stalled)
            pub_debug(p, "%s: RMA ring full, waiting for CREDIT (written to %" PRIu64 ", released to %" PRIu64 ")",
                      peer->name, peer->rma.wpos, peer->rma.credit);
        peer->rma.credit_stalled = true;
        if (!peer->rma.full_since_ns)   /* its age for the slow policy, as rci_rma_room's */
            peer->rma.full_since_ns = p->last_progress_ns ? p->last_progress_ns : rci_now_ns();
        return -FI_EAGAIN;     /* deferred: progress posts it once CREDIT made room */
    }
    if (peer->rma.credit_stalled) {
        pub_debug(p, "%s: CREDIT made room, RMA writes go on", peer->name);
        peer->rma.credit_stalled = false;
    }
    int rc = rci_pub_rma_post(p, peer, ep, 0, iov, desc, n, start, len, ctx);
    if (rc)
        return rc;
    peer->rma.wpos = start + rci_rma_span(len);
    p->st.rma_records++;
    p->st.rma_bytes += len;
    return 0;
}

int rci_pub_rma_post(struct rci_publisher *p, struct rci_pub_peer *peer, struct fid_ep *ep, uint32_t imm_flags,
                     const struct iovec *iov, void **desc, size_t n, uint64_t pos, uint64_t len, void *ctx)
{
    if (rci_pub_fault_refuse_post(p, (uint32_t)(peer - p->peers), ctx, NULL))
        return -FI_EAGAIN;
    uint64_t off = pos % peer->rma.size;
    struct fi_rma_iov target = { .addr = peer->rma.base + off, .len = len, .key = peer->rma.key };
    struct fi_msg_rma msg = {
        .msg_iov = iov, .desc = desc, .iov_count = n,
        .addr = peer->has_addr ? peer->addr : FI_ADDR_UNSPEC,
        .rma_iov = &target, .rma_iov_count = 1, .context = ctx,
        .data = rci_rma_imm(off, (uint32_t)len | imm_flags),
    };
    return (int)fi_writemsg(ep, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION);
}

bool rci_publisher_peer_rma(struct rci_publisher *p, rci_peer_id id)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, id);
    return peer && peer->rma.on;
}
