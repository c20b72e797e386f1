/* SPDX-License-Identifier: BSD-3-Clause */
/* pub_faults.c — fault injection for the error-path tests ([fabric] fault_*
 * keys, struct rci_fault_params).
 *
 * Faults a real provider produces and loopback tcp almost never does:
 * - error completions: every Nth successful completion of a data or page send
 *   is handed on as an FI_EIO error completion (the data did go out; the
 *   publisher must treat it like any failed send: the subscriber is declared
 *   dead and every key it held comes back exactly once);
 * - -FI_EAGAIN storms: every Nth data or page post starts a run of `burst`
 *   posts refused with -FI_EAGAIN, as a full provider queue does;
 * - -FI_EAGAIN streaks (fault_eagain_streak): every Nth post arms a time in
 *   which the posts to one subscriber are refused, as a congested connection
 *   does; it begins at the next later fragment of a chunk (to whichever
 *   subscriber that is), so a fragmented send is cut in its middle;
 * - a held send (fault_hold_after): one data post is reported done and never
 *   handed to the provider, as a provider that keeps a send unwritten (the
 *   stall the tcp MSG probe finds: net/README.md, "Stalled sends").
 * Counters, not randomness, decide, so a test knows exactly what it caused.
 * Control messages are never touched: their paths are tested elsewhere. When
 * off (the default) each hook costs one predictable branch. */
#include "net/pub_internal.h"

static bool is_data_op(const struct rci_publisher *p, void *ctx)
{
    return rci_pub_ctx_kind(ctx) == RCI_CTX_TXOP && rci_pub_ctx_index(ctx) < p->nslots + p->npages;
}

/* Only a completion that on_tx will act on counts as a fault caused (one of
 * an op released with its dead peer is ignored there as stale). */
static bool is_live_op(const struct rci_publisher *p, void *ctx)
{
    const struct rci_pub_txop *op = &p->ops[rci_pub_ctx_index(ctx)];
    return op->gen == rci_pub_ctx_gen(ctx) && op->state == RCI_TXOP_POSTED;
}

/* A later fragment of a fragmented DATA send (fragment 0 was posted). */
static bool is_later_fragment(const struct iovec *hdr)
{
    if (!hdr || hdr->iov_len < sizeof(struct rci_wire_data))
        return false;
    const struct rci_wire_data *d = hdr->iov_base;
    return d->hdr.type == RCI_MSG_DATA && d->frag_index > 0;
}

/* A streak: one subscriber's posts refused for a while (a peer whose
 * connection is congested), the others' not. The Nth post arms it; it
 * begins at the next later fragment of a chunk, refused there, so the test
 * always sees a fragmented send cut in the middle (beginning at whatever
 * post came next met a chunk's fragment 0 in about a third of the runs).
 * Clock read only when on. */
static bool refuse_streak(struct rci_publisher *p, uint32_t peer, const struct iovec *hdr)
{
    const struct rci_fault_params *f = &p->fab.params.faults;
    uint64_t now = rci_now_ns();
    if (p->fault.streak_peer == peer && now < p->fault.streak_until_ns) {
        p->st.faults_eagain++;
        return true;
    }
    if (p->fault.streak_armed && is_later_fragment(hdr)) {
        p->fault.streak_armed = false;
        p->fault.streak_peer = peer;
        p->fault.streak_until_ns = now + f->eagain_streak_ns;
        p->st.faults_eagain_streaks++;
        p->st.faults_eagain++;
        return true;
    }
    if (++p->fault.posts % f->eagain_every == 0)
        p->fault.streak_armed = true;
    return false;
}

bool rci_pub_fault_refuse_post(struct rci_publisher *p, uint32_t peer, void *ctx, const struct iovec *hdr)
{
    const struct rci_fault_params *f = &p->fab.params.faults;
    if (f->eagain_every == 0 || !is_data_op(p, ctx))
        return false;
    if (f->eagain_streak_ns)
        return refuse_streak(p, peer, hdr);
    if (p->fault.storm_left == 0 && ++p->fault.posts % f->eagain_every == 0)
        p->fault.storm_left = f->eagain_burst;
    if (p->fault.storm_left == 0)
        return false;
    p->fault.storm_left--;
    p->st.faults_eagain++;
    return true;
}

bool rci_pub_fault_hold_post(struct rci_publisher *p, void *ctx)
{
    const struct rci_fault_params *f = &p->fab.params.faults;
    if (f->hold_after == 0 || !is_data_op(p, ctx) || ++p->fault.hold_posts != f->hold_after)
        return false;
    p->st.faults_held++;
    return true;
}

void rci_pub_fault_completion(struct rci_publisher *p, struct rci_fabric_cqe *e)
{
    const struct rci_fault_params *f = &p->fab.params.faults;
    if (f->send_error_every == 0 || e->err || !is_data_op(p, e->context) || !is_live_op(p, e->context))
        return;
    if (++p->fault.completions % f->send_error_every)
        return;
    e->err = FI_EIO;
    p->st.faults_send_error++;
}
