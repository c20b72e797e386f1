/* SPDX-License-Identifier: BSD-3-Clause */
/* zc_send.c — zero-copy DATA sends: registered header slots, the iov plan
 * (iov_limit and the subscriber's receive buffer decide the fragments), and
 * exactly-once key completion (directly from the slot, or through a per-send
 * record counting the fragments still outstanding). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/pub_internal.h"

int rci_zc_init(struct rci_publisher *p, char *err, size_t errlen)
{
    p->slot_size = p->fab.params.header_slot_size;
    size_t bytes = (size_t)p->nslots * p->slot_size;
    p->slot_mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    p->slot_free = calloc(p->nslots, sizeof *p->slot_free);
    p->recs = calloc(p->nslots, sizeof *p->recs);
    p->rec_free = calloc(p->nslots, sizeof *p->rec_free);
    if (!p->slot_mem || !p->slot_free || !p->recs || !p->rec_free)
        return rci_fabric_error(&p->fab, err, errlen, "rci_zc_init(alloc)", -FI_ENOMEM);
    memset(p->slot_mem, 0, bytes);
    for (uint32_t i = 0; i < p->nslots; i++) {
        p->slot_free[i] = p->nslots - 1 - i;   /* pop order 0, 1, 2 ... */
        p->rec_free[i] = p->nslots - 1 - i;
        p->ops[i].record = RCI_PUB_NONE;
        p->ops[i].bounce = RCI_PUB_NONE;
    }
    p->nslot_free = p->min_free_slots = p->nslots;
    p->nrec_free = p->nslots;
    int rc = rci_fabric_mr_reg(&p->fab, p->slot_mem, bytes, FI_SEND, p->fab.ep, &p->slot_mr,
                               err, errlen);
    return rc ? rc : rci_bounce_init(p, err, errlen);
}

void rci_zc_fini(struct rci_publisher *p)
{
    rci_bounce_fini(p);
    rci_fabric_mr_close(&p->slot_mr);
    free(p->slot_mem);
    free(p->slot_free);
    free(p->recs);
    free(p->rec_free);
    p->slot_mem = NULL;
    p->slot_free = p->rec_free = NULL;
    p->recs = NULL;
}

static void finish_key(struct rci_publisher *p, uint64_t key, int status, uint64_t *pulled_key,
                       bool *pulled)
{
    if (status)
        p->st.keys_completed_error++;
    else
        p->st.keys_completed_ok++;
    if (pulled) {
        *pulled_key = key;
        *pulled = true;
        return;
    }
    p->cb.on_send_complete(p->cb.arg, key, status);
}

/* Drop one reference of a fragmented send; the last one completes the key
 * with the first error seen (or 0). */
static void record_release(struct rci_publisher *p, uint32_t r, int status, uint64_t *pulled_key,
                           bool *pulled)
{
    struct rci_pub_sendrec *rec = &p->recs[r];
    if (status && !rec->status)
        rec->status = status;
    if (--rec->remaining)
        return;
    p->rec_free[p->nrec_free++] = r;
    finish_key(p, rec->key, rec->status, pulled_key, pulled);
}

void rci_zc_slot_done(struct rci_publisher *p, uint32_t slot, int status, uint64_t *pulled_key,
                     bool *pulled)
{
    struct rci_pub_txop *op = &p->ops[slot];
    if (op->state == RCI_TXOP_POSTED && op->peer < p->npeers)
        p->peers[op->peer].nslots_held--;
    rci_pub_op_unlink(p, slot);
    op->state = RCI_TXOP_FREE;
    op->gen++;
    p->slot_free[p->nslot_free++] = slot;
    if (op->bounce != RCI_PUB_NONE) {   /* a gathered fragment: its buffer goes back with it */
        rci_bounce_give(p, op->bounce);
        op->bounce = RCI_PUB_NONE;
    }
    uint32_t rec = op->record;
    op->record = RCI_PUB_NONE;
    if (rec != RCI_PUB_NONE)
        record_release(p, rec, status, pulled_key, pulled);
    else
        finish_key(p, op->key, status, pulled_key, pulled);
}

static uint32_t take_slot(struct rci_publisher *p)
{
    uint32_t s = p->slot_free[--p->nslot_free];
    if (p->nslot_free < p->min_free_slots)
        p->min_free_slots = p->nslot_free;
    return s;
}

static void give_back_slot(struct rci_publisher *p, uint32_t s)
{
    p->slot_free[p->nslot_free++] = s;
}

static void *region_desc(const struct rci_publisher *p, const void *addr, size_t len, bool *found)
{
    for (unsigned i = 0; i < p->nregions; i++)
        if (rci_fabric_mr_contains(&p->region[i], addr, len)) {
            *found = true;
            return p->region[i].desc;
        }
    *found = false;
    return NULL;
}


void *rci_publisher_region_desc(const struct rci_publisher *p, const void *addr, size_t len,
                                bool *found)
{
    return region_desc(p, addr, len, found);
}

/* Fill iov[1..] with the next fragment's payload: at most max_iov - 1 pieces
 * and max_payload bytes. Returns the number of iovs used (header included).
 * src_desc: the caller's descriptor of each piece (rci_publisher_send_desc),
 * or NULL: looked up in the registered regions. */
static unsigned next_fragment(const struct rci_publisher *p, const struct iovec *src,
                              void *const *src_desc, unsigned n, struct rci_pub_frag_cursor *c,
                              unsigned max_iov, uint64_t max_payload, struct iovec *iov,
                              void **desc, uint32_t *payload)
{
    unsigned k = 1;
    uint64_t bytes = 0;
    while (c->piece < n && src[c->piece].iov_len == 0)
        c->piece++;
    while (k < max_iov && bytes < max_payload && c->piece < n) {
        const uint8_t *base = (const uint8_t *)src[c->piece].iov_base + c->off;
        size_t left = src[c->piece].iov_len - c->off;
        size_t take = left < max_payload - bytes ? left : (size_t)(max_payload - bytes);
        if (iov) {
            bool found;
            iov[k] = (struct iovec){ .iov_base = (void *)base, .iov_len = take };
            desc[k] = src_desc ? src_desc[c->piece] : region_desc(p, base, take, &found);
        }
        k++;
        bytes += take;
        c->off += take;
        if (c->off == src[c->piece].iov_len) {
            c->piece++;
            c->off = 0;
            while (c->piece < n && src[c->piece].iov_len == 0)
                c->piece++;
        }
    }
    c->done += bytes;
    *payload = (uint32_t)bytes;
    return k;
}

/* Fragments of a gathered send: each carries a bounce buffer's worth. */
static uint64_t gather_payload(const struct rci_publisher *p, uint64_t max_payload)
{
    return max_payload < p->bounce_size ? max_payload : p->bounce_size;
}

static uint64_t count_fragments(const struct rci_publisher *p, const struct iovec *iov, unsigned n,
                                uint64_t total, uint64_t max_payload)
{
    /* The common case needs no walk: every piece gets its own iov next to
     * the header, and the whole chunk fits the subscriber's buffer. */
    if (n < p->iov_max && total <= max_payload)
        return 1;
    struct rci_pub_frag_cursor c = {0};
    uint64_t frags = 0;
    uint32_t got;
    do {
        next_fragment(p, iov, NULL, n, &c, p->iov_max, max_payload, NULL, NULL, &got);
        frags++;
    } while (c.done < total && frags <= RCI_WIRE_MAX_FRAGS);
    return frags;
}

/* Pieces must be registered (or come with the caller's descriptors); the
 * chunk must fit the protocol's u32 length. */
static int check_pieces(struct rci_publisher *p, const struct iovec *iov, void *const *desc,
                        unsigned n, uint64_t *total)
{
    *total = 0;
    for (unsigned i = 0; i < n; i++) {
        bool found = true;
        if (iov[i].iov_len && !desc)
            region_desc(p, iov[i].iov_base, iov[i].iov_len, &found);
        if (!found) {
            p->st.unregistered_pieces++;
            return -EFAULT;
        }
        *total += iov[i].iov_len;
    }
    return *total > UINT32_MAX - sizeof(struct rci_wire_data) ? -EMSGSIZE : 0;
}

struct zc_send {
    struct rci_pub_peer *peer;
    bool gather;               /* fragments copied into bounce buffers (bounce.c) */
    uint32_t peer_index;
    uint64_t tag, key;
    uint32_t flags, total;
    uint16_t frag_count;
    uint32_t record;           /* RCI_PUB_NONE when not fragmented */
    uint64_t max_payload;
    void *const *desc;         /* the caller's descriptors per piece, or NULL */
};

/* Build fragment `index` into a fresh slot and post it. Returns 0 or the
 * libfabric error (-FI_EAGAIN: the slot went back, nothing posted). */
static int post_fragment(struct rci_publisher *p, const struct zc_send *s, const struct iovec *src,
                         unsigned n, struct rci_pub_frag_cursor *c, uint16_t index)
{
    struct iovec iov[RCI_PUB_MAX_IOV];
    void *desc[RCI_PUB_MAX_IOV];
    struct rci_pub_frag_cursor before = *c;
    uint32_t payload;
    uint32_t offset = (uint32_t)c->done;
    uint32_t bounce = RCI_PUB_NONE;
    unsigned k;
    if (s->gather) {   /* the caller checked that a buffer is free */
        bounce = rci_bounce_take(p);
        payload = rci_bounce_gather(p, bounce, src, n, c, s->max_payload);
        iov[1] = (struct iovec){ .iov_base = rci_bounce_addr(p, bounce), .iov_len = payload };
        desc[1] = p->bounce_mr.desc;
        k = 2;
    } else {
        k = next_fragment(p, src, s->desc, n, c, p->iov_max, s->max_payload, iov, desc, &payload);
    }
    uint32_t slot = take_slot(p);
    struct rci_pub_txop *op = &p->ops[slot];
    uint8_t *hdr = p->slot_mem + (size_t)slot * p->slot_size;
    ssize_t hlen = rci_wire_build_data_hdr(hdr, p->slot_size, s->tag, s->flags, s->total, offset,
                                          index, s->frag_count, payload);
    if (hlen < 0) {  /* a plan the checker would reject: a bug, never sent */
        give_back_slot(p, slot);
        if (bounce != RCI_PUB_NONE)
            rci_bounce_give(p, bounce);
        *c = before;
        return -FI_EINVAL;
    }
    rci_wire_set_stream_seq(hdr, s->peer->data_seq);
    iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = (size_t)hlen };
    desc[0] = p->slot_mr.desc;
    void *ctx = rci_pub_ctx(RCI_CTX_TXOP, slot, op->gen);
    int rc = s->peer->rma.on ? rci_rma_post(p, s->peer, iov, desc, k, ctx)   /* a record in its ring */
                             : rci_pub_post(p, s->peer, iov, desc, k, ctx);
    if (rc) {
        give_back_slot(p, slot);
        if (bounce != RCI_PUB_NONE)
            rci_bounce_give(p, bounce);
        *c = before;
        return rc;
    }
    s->peer->data_seq++;
    s->peer->nslots_held++;
    op->state = RCI_TXOP_POSTED;
    op->key = s->key;
    op->record = s->record;
    op->bounce = bounce;
    rci_pub_op_link(p, s->peer_index, slot, rci_now_ns());
    p->st.messages++;
    return 0;
}

/* Keep the rest of a fragmented send for progress to post: fragment `index`
 * met -FI_EAGAIN. Its pieces from the cursor on are copied (iovecs, not
 * payload) into the peer's fixed storage. Returns false when they do not fit
 * (more than RCI_PUB_RESUME_PIECES pieces left). */
static bool defer_rest(struct rci_publisher *p, const struct zc_send *s, const struct iovec *src,
                       unsigned n, const struct rci_pub_frag_cursor *c, uint16_t index)
{
    struct rci_pub_resume *r = &s->peer->resume;
    if (n - c->piece > RCI_PUB_RESUME_PIECES)
        return false;
    r->n = n - c->piece;
    memcpy(r->iov, src + c->piece, r->n * sizeof *src);
    r->has_desc = s->desc != NULL;
    r->gather = s->gather;
    if (s->desc)
        memcpy(r->desc, s->desc + c->piece, r->n * sizeof *s->desc);
    r->c = (struct rci_pub_frag_cursor){ .piece = 0, .off = c->off, .done = c->done };
    r->tag = s->tag;
    r->flags = s->flags;
    r->total = s->total;
    r->frag_count = s->frag_count;
    r->next_index = index;
    r->record = s->record;
    r->max_payload = s->max_payload;
    r->since_ns = rci_now_ns();
    r->active = true;
    p->nresuming++;
    p->st.fragments_deferred++;
    return true;
}

/* A gathered send's next fragment finds no free bounce buffer (counted). */
static bool no_bounce(struct rci_publisher *p, const struct zc_send *s)
{
    if (!s->gather || p->nbounce_free)
        return false;
    p->st.again_no_bounce++;
    return true;
}

/* Post fragment 0 now; later fragments as long as the provider takes them.
 * One that meets -FI_EAGAIN is deferred with the rest (posted from
 * progress, rci_zc_resume_all): this never waits, so the thread's timers,
 * heartbeats and other subscribers keep running. */
static int send_fragmented(struct rci_publisher *p, struct zc_send *s, const struct iovec *iov,
                           unsigned n)
{
    s->record = p->rec_free[--p->nrec_free];
    struct rci_pub_sendrec *rec = &p->recs[s->record];
    /* One reference held while posting, so early completions cannot finish
     * the key before the last fragment is out. */
    *rec = (struct rci_pub_sendrec){ .key = s->key, .remaining = 1, .status = 0 };
    struct rci_pub_frag_cursor c = {0};
    for (uint16_t i = 0; i < s->frag_count; i++) {
        /* A later fragment without a free bounce buffer waits like one the
         * provider refused (fragment 0 has one: rci_publisher_send checked). */
        bool starved = no_bounce(p, s);
        int rc = starved ? -FI_EAGAIN : post_fragment(p, s, iov, n, &c, i);
        if (rc && i == 0) {
            p->rec_free[p->nrec_free++] = s->record;
            return rc;
        }
        if (rc == -FI_EAGAIN) {
            if (!starved)
                p->st.again_provider++;
            if (defer_rest(p, s, iov, n, &c, i)) {
                pub_debug(p, "%s: fragments %u..%u of a chunk deferred (-FI_EAGAIN)", s->peer->name, i,
                          s->frag_count - 1u);
                p->st.fragmented_sends++;
                return 0;  /* the posting reference stays with the deferred rest */
            }
        }
        if (rc) {  /* key accepted already: it completes with this error */
            rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_sendv(fragment)", rc);
            p->st.fragment_retry_timeouts += rc == -FI_EAGAIN;
            rec->status = rc < 0 ? rc : -rc;
            break;
        }
        rec->remaining++;
        p->st.fragments++;
    }
    p->st.fragmented_sends++;
    /* Not the last reference: fragment 0 is outstanding (completions are
     * read only by progress), so no callback runs inside a send. */
    record_release(p, s->record, rec->status, NULL, NULL);
    return 0;
}

/* Post a peer's deferred fragments until the provider says -FI_EAGAIN again
 * or no header slot is free; the last one drops the posting reference. */
static void resume_peer(struct rci_publisher *p, struct rci_pub_peer *peer)
{
    struct rci_pub_resume *r = &peer->resume;
    if (peer->doom != RCI_DOOM_NONE || peer->state != RCI_PEER_ACTIVE)
        return;  /* it is leaving: rci_zc_resume_abandon() ends this */
    struct zc_send s = {
        .peer = peer, .peer_index = (uint32_t)(peer - p->peers), .tag = r->tag,
        .key = p->recs[r->record].key, .flags = r->flags, .total = r->total,
        .frag_count = r->frag_count, .record = r->record, .max_payload = r->max_payload,
        .desc = r->has_desc ? r->desc : NULL, .gather = r->gather,
    };
    struct rci_pub_sendrec *rec = &p->recs[r->record];
    while (r->next_index < r->frag_count) {
        if (p->nslot_free == 0 || no_bounce(p, &s))
            return;
        int rc = post_fragment(p, &s, r->iov, r->n, &r->c, r->next_index);
        if (rc == -FI_EAGAIN) {
            p->st.again_provider++;
            return;
        }
        if (rc) {
            rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_sendv(fragment)", rc);
            rec->status = rc < 0 ? rc : -rc;
            p->st.fragments_abandoned += r->frag_count - r->next_index;
            break;
        }
        rec->remaining++;
        p->st.fragments++;
        r->next_index++;
        r->since_ns = rci_now_ns();   /* accepted: the stuck rule (check_liveness) counts from here */
    }
    pub_debug(p, "%s: deferred fragments posted (up to %u of %u)", peer->name, r->next_index, r->frag_count);
    r->active = false;
    p->nresuming--;
    record_release(p, r->record, rec->status, NULL, NULL);
}

void rci_zc_resume_all(struct rci_publisher *p)
{
    for (uint32_t i = 0; i < p->npeers && p->nresuming; i++)
        if (p->peers[i].resume.active)
            resume_peer(p, &p->peers[i]);
}

void rci_zc_resume_abandon(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t *keys,
                          unsigned max, unsigned *count)
{
    struct rci_pub_resume *r = &peer->resume;
    if (!r->active || (keys && *count >= max))
        return;
    r->active = false;
    p->nresuming--;
    p->st.fragments_abandoned += r->frag_count - r->next_index;
    uint64_t key = 0;
    bool pulled = false;
    record_release(p, r->record, -ECONNRESET, keys ? &key : NULL, keys ? &pulled : NULL);
    if (pulled)
        keys[(*count)++] = key;
}

static int refuse(struct rci_publisher *p, int rc)
{
    if (rc == -EAGAIN)
        return rc;
    p->st.send_errors++;
    return rc;
}

int rci_publisher_send(struct rci_publisher *p, rci_peer_id peer_id, uint64_t tag, uint32_t flags,
                      const struct iovec *iov, unsigned n, uint64_t key)
{
    return rci_publisher_send_desc(p, peer_id, tag, flags, iov, NULL, n, key);
}

/* Gather-copy this chunk? Only when its pieces cost more messages than its
 * bytes do, and the pool could ever hold all its fragments (a larger one
 * goes zero copy rather than wait forever). */
static bool want_gather(const struct rci_publisher *p, uint64_t zc_frags, uint64_t total, uint64_t max_payload,
                        uint64_t *gather_frags)
{
    if (p->nbounce == 0)
        return false;
    uint64_t per = gather_payload(p, max_payload);
    *gather_frags = total ? (total + per - 1) / per : 1;
    return *gather_frags < zc_frags && *gather_frags <= p->nbounce;
}

static int send_chunk(struct rci_publisher *p, rci_peer_id peer_id, uint64_t tag, uint32_t flags,
                      const struct iovec *iov, void *const *desc, unsigned n, uint64_t key, bool may_gather)
{
    struct rci_pub_peer *peer = rci_pub_peer_of(p, peer_id);
    if (!peer || peer->state != RCI_PEER_ACTIVE || peer->doom != RCI_DOOM_NONE || !peer->connected)
        return refuse(p, -ENOTCONN);
    if (peer->resume.active) {  /* its previous chunk's fragments go first */
        p->st.again_resuming++;
        return -ENOBUFS;   /* this peer's own wait (an RMA ring full of its views, its queue): not everyone's */
    }
    uint64_t total;
    int rc = check_pieces(p, iov, desc, n, &total);
    if (rc)
        return refuse(p, rc);
    struct zc_send s = {
        .peer = peer, .peer_index = (uint32_t)(peer - p->peers), .tag = tag, .key = key,
        .flags = flags, .total = (uint32_t)total, .record = RCI_PUB_NONE,
        .max_payload = peer->rx_max - sizeof(struct rci_wire_data), .desc = desc,
    };
    uint64_t frags = count_fragments(p, iov, n, total, s.max_payload), gather_frags;
    if (may_gather && want_gather(p, frags, total, s.max_payload, &gather_frags)) {
        if (gather_frags > p->nbounce_free) {
            p->st.again_no_bounce++;
            return -EAGAIN;
        }
        s.gather = true;
        s.max_payload = gather_payload(p, s.max_payload);
        frags = gather_frags;
    }
    if (frags > RCI_WIRE_MAX_FRAGS || frags > p->nslots) {
        /* This subscriber's buffer cannot take the chunk in the fragments we
         * have: it would lose this tag's chunks one by one (a WARN each);
         * it is told and closed at the first one instead. */
        char detail[96];
        snprintf(detail, sizeof detail, " (a %" PRIu64 " B chunk needs %" PRIu64 " fragments of %"
                 PRIu64 " B)", total, frags, s.max_payload);
        p->st.connections_refused_rx_buffer++;
        rci_pub_refuse_peer(p, peer, RCI_REFUSED_RX_BUFFER, detail);
        return refuse(p, -EMSGSIZE);
    }
    if (!rci_pub_slots_within_quota(p, peer, (uint32_t)frags)) {
        p->st.again_peer_quota++;
        return -ENOBUFS;
    }
    if (peer->rma.on && !rci_rma_room(p, peer, sizeof(struct rci_wire_data) + total)) {
        p->st.rma_again_credit++;   /* its ring is full of what it has not released */
        return -ENOBUFS;
    }
    if (frags > p->nslot_free) {
        p->st.again_no_slot++;
        return -EAGAIN;
    }
    s.frag_count = (uint16_t)frags;
    if (frags == 1) {
        struct rci_pub_frag_cursor c = {0};
        rc = post_fragment(p, &s, iov, n, &c, 0);
    } else {
        rc = send_fragmented(p, &s, iov, n);
    }
    if (rc == -FI_EAGAIN) {
        p->st.again_provider++;
        if (p->eagain_streak++ == 0)
            pub_debug(p, "%s: the provider's queue is full (-FI_EAGAIN): sends wait", s.peer->name);
        return -EAGAIN;
    }
    if (rc) {
        rci_fabric_error(&p->fab, p->err, sizeof p->err, "fi_sendv(data)", rc);
        return refuse(p, rc < 0 ? rc : -rc);
    }
    if (p->eagain_streak) {   /* the end of a streak: an event, not per chunk */
        pub_debug(p, "%s: the provider takes sends again after %" PRIu64 " -FI_EAGAIN in a row", s.peer->name,
                  p->eagain_streak);
        p->eagain_streak = 0;
    }
    p->st.sends++;
    p->st.send_bytes += total;
    p->st.gather_sends += s.gather;
    return 0;
}

int rci_publisher_send_desc(struct rci_publisher *p, rci_peer_id peer_id, uint64_t tag,
                           uint32_t flags, const struct iovec *iov, void *const *desc, unsigned n,
                           uint64_t key)
{
    return send_chunk(p, peer_id, tag, flags, iov, desc, n, key, false);
}

int rci_publisher_send_gather(struct rci_publisher *p, rci_peer_id peer_id, uint64_t tag, uint32_t flags,
                             const struct iovec *iov, unsigned n, uint64_t key)
{
    return send_chunk(p, peer_id, tag, flags, iov, NULL, n, key, true);
}

uint32_t rci_publisher_available_slots(struct rci_publisher *p)
{
    uint32_t low = p->min_free_slots;
    p->min_free_slots = p->nslot_free;
    return low;
}
