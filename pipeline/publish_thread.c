/* SPDX-License-Identifier: BSD-3-Clause */
/* publish_thread.c — one publisher thread of ringcast-readout: its own
 * rci_publisher on fabric.port + i, its subscribers (mirrored into the shared
 * subscription table), and the sends of the chunks the readout threads queued
 * for it. The flow is described in publish.h. */
#include "pipeline/publish_internal.h"
#include "common/errbuf.h"
#include "common/monotonic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net/allow_list.h"
#include "readout/readout.h"

#define IDLE_WAIT_NS    (200ull * 1000)
#define FLUSH_WAIT_NS   (1000ull * 1000 * 1000)
/* The longest idle sleep: the loop still turns (its heartbeat, which the
 * systemd watchdog reads every WatchdogSec / 2) a few times a second. */
#define SLEEP_MAX_NS    (200ull * 1000 * 1000)

/* ---- subscribers ----------------------------------------------------------- */

static void backlog_settle_all(struct publish_thread *th, struct pub_sub *s);

static struct pub_sub *sub_of_peer(struct publish_thread *th, rci_peer_id peer)
{
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->subs[i].in_use && th->subs[i].peer == peer)
            return &th->subs[i];
    return NULL;
}

/* The subscriber of a table id, if it is this thread's and still the one the
 * id was made for. */
static struct pub_sub *sub_of_table_id(struct publish_thread *th, uint32_t id)
{
    uint32_t slot = id & SUB_SLOT_MASK;
    if (slot >= th->nsubs_max || sub_id_thread(id) != th->index)
        return NULL;
    struct pub_sub *s = &th->subs[slot];
    return s->in_use && s->table_id == id ? s : NULL;
}

static void update_subscribed(struct publish_thread *th)
{
    unsigned subscribed = 0, connected = 0;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        connected += th->subs[i].in_use;
        subscribed += th->subs[i].in_use && (th->subs[i].nranges > 0 || th->subs[i].stream);
    }
    th->nsubscribed = subscribed;
    atomic_store_explicit(&th->subscribed, subscribed, memory_order_release);
    atomic_store_explicit(&th->connected, connected, memory_order_release);
}

static void sub_join(struct publish_thread *th, rci_peer_id peer)
{
    for (uint32_t n = 0; n < th->nsubs_max; n++) {
        uint32_t slot = (th->next_slot + n) % th->nsubs_max;
        struct pub_sub *s = &th->subs[slot];
        if (s->in_use)
            continue;
        memset(s, 0, sizeof *s);
        rci_share_backlog_init(&s->backlog, th->backlog_store ? th->backlog_store + (size_t)slot * th->backlog_cap : NULL,
                               th->backlog_cap);
        s->in_use = true;
        s->peer = peer;
        s->stream = rci_publisher_peer_stream(th->pub, peer, NULL);   /* takes a card's blocks */
        th->slot_gen[slot] = (th->slot_gen[slot] + 1) & SUB_GEN_MASK;
        s->table_id = (th->slot_gen[slot] << SUB_GEN_SHIFT) | (th->index << SUB_THREAD_SHIFT) | slot;
        snprintf(s->name, sizeof s->name, "%s", rci_publisher_peer_name(th->pub, peer));
        th->next_slot = (slot + 1) % th->nsubs_max;
        update_subscribed(th);
        pl_info(th->pb, "subscriber %s joined (publisher %u, port %u)", s->name, th->index, th->port);
        return;
    }
    /* The publisher admits at most max_subscribers, which is nsubs_max. */
    pl_warn(th->pb, "subscriber %s: no free subscriber record", rci_publisher_peer_name(th->pub, peer));
    rci_publisher_close_peer(th->pub, peer);
}

/* Caller holds the table lock. */
static void table_update(struct publish_thread *th, struct pub_sub *s, bool add, uint64_t first,
                         uint64_t last)
{
    struct rci_sub_table *table = th->pb->table;
    int rc = add ? rci_sub_table_add(table, s->table_id, first, last)
                 : rci_sub_table_remove(table, s->table_id, first, last);
    if (rc != 0) {
        rci_counter_add(&th->t.table_errors, 1);
        pl_warn(th->pb, "subscriber %s: subscription table %s of 0x%" PRIx64 "-0x%" PRIx64 " refused: %s",
                s->name, add ? "add" : "remove", first, last, strerror(-rc));
    }
}

/* Remove from the table what the old set [a, b] holds and the new set does
 * not: the gaps between the new ranges that overlap [a, b]. */
static void remove_uncovered(struct publish_thread *th, struct pub_sub *s, uint64_t a, uint64_t b,
                             const struct rci_wire_range *nr, unsigned n)
{
    uint64_t cur = a;
    for (unsigned i = 0; i < n; i++) {
        uint64_t f = nr[i].first, l = nr[i].last;
        if (l < cur)
            continue;
        if (f > b)
            break;
        if (f > cur)
            table_update(th, s, false, cur, f - 1);
        if (l >= b)
            return;
        cur = l + 1;
    }
    table_update(th, s, false, cur, b);
}

/* "0x0-0x7,0x100": the ranges as text for logs, JSON and metrics; a list
 * too long for the buffer ends "...". */
static void format_tags(char *buf, size_t len, const struct rci_wire_range *r, unsigned n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        char one[48];
        if (r[i].first == r[i].last)
            snprintf(one, sizeof one, "%s0x%" PRIx64, i ? "," : "", r[i].first);
        else
            snprintf(one, sizeof one, "%s0x%" PRIx64 "-0x%" PRIx64, i ? "," : "", r[i].first, r[i].last);
        size_t m = strlen(one);
        if (used + m + 4 > len) { /* room for "..." and the NUL */
            snprintf(buf + used, len - used, "%s", i ? ",..." : "...");
            return;
        }
        memcpy(buf + used, one, m + 1);
        used += m;
    }
}

/* Mirror the peer's tag set into the table: add the new set first, then
 * remove what is gone, so that tags in both are never missing in between. */
static void sub_sync_ranges(struct publish_thread *th, rci_peer_id peer)
{
    struct pub_sub *s = sub_of_peer(th, peer);
    if (!s)
        return;
    const struct rci_wire_range *nr;
    unsigned n = rci_publisher_peer_ranges(th->pub, peer, &nr);
    struct rci_wire_range *copy = NULL;
    if (n > 0) {
        copy = malloc((size_t)n * sizeof *copy);
        if (!copy) {
            rci_counter_add(&th->t.table_errors, 1);
            pl_warn(th->pb, "subscriber %s: out of memory for its subscriptions", s->name);
            return;
        }
        memcpy(copy, nr, (size_t)n * sizeof *copy);
    }
    pthread_mutex_lock(&th->pb->table_lock);
    for (unsigned i = 0; i < n; i++)
        table_update(th, s, true, copy[i].first, copy[i].last);
    for (unsigned i = 0; i < s->nranges; i++)
        remove_uncovered(th, s, s->ranges[i].first, s->ranges[i].last, copy, n);
    pthread_mutex_unlock(&th->pb->table_lock);
    free(s->ranges);
    s->ranges = copy;
    s->nranges = n;
    format_tags(s->tags, sizeof s->tags, copy, n);
    update_subscribed(th);
    pl_info(th->pb, "subscriber %s: %u tag range%s subscribed: %s", s->name, n, n == 1 ? "" : "s",
            n ? s->tags : "none");
}

static void keep_departed(struct publish_thread *th, const struct pub_sub *s)
{
    if (th->ndeparted == MAX_DEPARTED) {
        rci_counter_add(&th->departed_untracked, 1);
        return;
    }
    struct sub_record *r = &th->departed[th->ndeparted++];
    r->peer = s->peer;
    memcpy(r->name, s->name, sizeof r->name);
    memcpy(r->tags, s->tags, sizeof r->tags);
    r->c = s->c;
}

/* At its GONE: a subscriber whose BYE said how many chunks it handled never
 * read what it was sent beyond that (it sat in its socket or receive
 * buffers, or it discarded it while leaving). Counted apart from chunks_sent
 * (which stays what the provider took). Over MSG every send of it has
 * completed by now; over RDM a send completing after GONE is not counted
 * for the subscriber any more (its record is kept), so chunks_sent is then
 * the figure of this moment. More handled than sent (never expected) counts
 * no unread chunk. Returns whether the count was given. */
static bool count_unread_at_leave(struct publish_thread *th, struct pub_sub *s)
{
    if (!s->c.handled_reported)
        return false;
    uint64_t unread = s->c.chunks_sent > s->c.chunks_handled ? s->c.chunks_sent - s->c.chunks_handled : 0;
    s->c.chunks_unread_at_leave = unread;
    rci_counter_add(&th->t.unread_at_leave, unread);
    return true;
}

static void sub_leave(struct publish_thread *th, rci_peer_id peer)
{
    struct pub_sub *s = sub_of_peer(th, peer);
    if (!s)
        return;
    pthread_mutex_lock(&th->pb->table_lock);
    int rc = rci_sub_table_remove_subscriber(th->pb->table, s->table_id);
    pthread_mutex_unlock(&th->pb->table_lock);
    if (rc != 0) {
        rci_counter_add(&th->t.table_errors, 1);
        pl_warn(th->pb, "subscriber %s: removing it from the table failed: %s", s->name, strerror(-rc));
    }
    backlog_settle_all(th, s);   /* before its record is kept: they count as not sent */
    char unread[96] = "";
    if (count_unread_at_leave(th, s))
        snprintf(unread, sizeof unread, "; never read %" PRIu64 " (it handled %" PRIu64 ")",
                 s->c.chunks_unread_at_leave, s->c.chunks_handled);
    pl_info(th->pb, "subscriber %s left%s: sent %" PRIu64 ", dropped %" PRIu64 " (by age %" PRIu64 ", by quota %" PRIu64
            "), failed %" PRIu64 ", not sent %" PRIu64 "%s, deferred %" PRIu64 " (at most %" PRIu64
            " at once); tags %s", s->name,
            s->cut ? " (cut off)" : s->said_bye ? " (BYE)" : "", s->c.chunks_sent,
            s->c.chunks_dropped, s->c.dropped_by_age, s->c.dropped_by_quota, s->c.chunks_failed,
            s->c.shares_unsent, unread, s->c.shares_deferred, s->c.deferred_high_water,
            s->tags[0] ? s->tags : "none");
    keep_departed(th, s);
    free(s->ranges);
    s->ranges = NULL;
    s->nranges = 0;
    s->in_use = false;
    update_subscribed(th);
}

/* Runs inside rci_publisher_progress; the getters used here only read. */
static void on_peer_event(void *arg, rci_peer_id peer, enum rci_pub_peer_event ev)
{
    struct publish_thread *th = arg;
    switch (ev) {
    case RCI_PUB_PEER_JOINED:
        sub_join(th, peer);
        rci_stream_join(th, peer);   /* a block-stream subscriber too (stream_lane.c) */
        break;
    case RCI_PUB_PEER_SUBSCRIPTIONS:
        if (!rci_publisher_peer_stream(th->pub, peer, NULL))   /* its ring takes blocks only */
            sub_sync_ranges(th, peer);
        break;
    case RCI_PUB_PEER_GONE:
        rci_stream_leave(th, peer);
        sub_leave(th, peer);
        break;
    case RCI_PUB_PEER_BYE: {
        struct pub_sub *s = sub_of_peer(th, peer);
        if (!s)
            break;
        s->said_bye = true;
        s->c.handled_reported = rci_publisher_peer_chunks_handled(th->pub, peer, &s->c.chunks_handled);
        break;
    }
    }
}

/* ---- sends ------------------------------------------------------------------ */

void rci_publish_lane_release(void *ctx, uint64_t key)
{
    struct publish_lane *lane = ctx;
    struct rci_publish_card *c = lane->card;
    if (c->fanout)
        rci_fanout_done(c->fanout, key);   /* this thread's share of the card-level record */
    else
        rci_readout_release(c->readout, key);
}

/* A share is done whose lane may have moved on: `direct` (the chunk's only
 * share on this thread) gives the key back, else its fan-out send handle. */
static void settle_handle(struct publish_lane *lane, bool direct, uint64_t handle)
{
    if (direct)
        rci_publish_lane_release(lane, handle);
    else
        rci_fanout_done(lane->fanout, handle);
}

static void lane_flush_keys(struct publish_lane *lane)
{
    if (lane->nkeys)
        rci_readout_release_burst(lane->card->readout, lane->keys, lane->nkeys);
    lane->nkeys = 0;
}

/* A key the lane's current chunk gives back. Inside pump_lane, which ends by
 * flushing them, keys are collected and given back as one burst: at 64 B a
 * chunk is done every few hundred nanoseconds, and a release costs four
 * atomics on lines the readout thread also uses, two of which (the block's
 * reference, the releases counter) a burst pays once per block or burst
 * (issue 17, per-chunk cost). A card shared by several publisher threads
 * gives keys back through its fan-out record instead: not collected. */
static void lane_give_back(struct publish_lane *lane, uint64_t key)
{
    if (!lane->pumping || lane->card->fanout) {
        rci_publish_lane_release(lane, key);
        return;
    }
    lane->keys[lane->nkeys++] = key;
    if (lane->nkeys == BURST)
        lane_flush_keys(lane);
}

/* Share i of the lane's current chunk is done (sent, copied, dropped or
 * not sent). A chunk with one share here gives its key back at once. */
static void share_done(struct publish_lane *lane, unsigned i)
{
    if (lane->cur_direct)
        lane_give_back(lane, lane->cur_key);
    else
        rci_fanout_done(lane->fanout, rci_fanout_send_handle(lane->cur_first, i));
}

/* A share that reached its subscriber's page (buffered) or came back from
 * the publisher: count it for the thread and the subscriber. */
static void count_share(struct publish_thread *th, struct pub_sub *s, uint64_t bytes, int status)
{
    /* After its BYE a subscriber reads nothing more: what it had outstanding
     * comes back -ECONNRESET, not sent because it left (not a failure). */
    bool left_in_order = status != 0 && s && s->said_bye;
    if (status == 0) {
        rci_counter_add(&th->t.sent, 1);
        rci_counter_add(&th->t.bytes_sent, bytes);
    } else {
        rci_counter_add(left_in_order ? &th->t.unsent : &th->t.failed, 1);
    }
    if (!s)
        return;
    if (status == 0) {
        s->c.chunks_sent++;
        s->c.bytes_sent += bytes;
    } else if (left_in_order) {
        s->c.shares_unsent++;
    } else {
        s->c.chunks_failed++;
    }
}

/* Runs inside rci_publisher_progress/wait/destroy only (never inside a
 * send): the token was filled when its send returned 0. */
static void on_send_complete(void *arg, uint64_t key, int status)
{
    struct publish_thread *th = arg;
    if (key >= th->ntokens)
        return; /* never: keys are our token indices */
    struct send_token *tok = &th->tokens[key];
    if (tok->stream) {   /* a block-stream span (stream_lane.c) */
        rci_stream_token_done(th, tok, status);
        tok->next_free = th->free_token;
        th->free_token = (uint32_t)key;
        return;
    }
    struct pub_sub *s = sub_of_table_id(th, tok->table_id);
    count_share(th, s, tok->bytes, status);
    if (s)
        s->outstanding--;
    settle_handle(tok->lane, tok->direct, tok->handle);
    tok->next_free = th->free_token;
    th->free_token = (uint32_t)key;
}

static unsigned build_iov(struct publish_thread *th, const struct rci_chunk *chunk)
{
    unsigned n = chunk->npieces < th->max_pieces ? chunk->npieces : th->max_pieces;
    for (unsigned i = 0; i < n; i++) {
        th->iov[i].iov_base = (void *)chunk->pieces[i].addr;
        th->iov[i].iov_len = chunk->pieces[i].len;
    }
    return n;
}

/* The first rule whose range holds the tag decides (at most 17 compares;
 * the last rule holds every tag). *gather: mode auto, whose zero-copy sends
 * may gather-copy a chunk of more pieces than a message carries
 * (rci_publisher_send_gather). */
static bool use_buffered(const struct publish_thread *th, const struct rci_chunk *chunk, bool *gather)
{
    const struct mode_range *m = th->live.modes;
    while (chunk->tag < m->first || chunk->tag > m->last)
        m++;
    *gather = m->mode == RCI_MODE_AUTO;
    switch (m->mode) {
    case RCI_MODE_BUFFERED: return true;
    case RCI_MODE_AUTO: return chunk->length < m->buffered_threshold;
    default: return false;
    }
}

/* Send chunk to s under key `tok_index`, buffered or zero copy (gather:
 * mode auto's gather-copy allowed) as decided when it was begun. 0: the
 * publisher holds the share (it completes through on_send_complete); 1: the
 * chunk was copied into the subscriber's page (buffered): the share is done;
 * <0: nothing sent. */
static int post_share(struct publish_thread *th, struct pub_sub *s, const struct rci_chunk *chunk,
                      bool buffered, bool gather, uint32_t tok_index)
{
    unsigned n = build_iov(th, chunk);
    if (buffered) {
        int rc = rci_publisher_send_buffered(th->pub, s->peer, chunk->tag, chunk->flags, th->iov, n);
        if (rc == 0) {
            s->page_filling = true;
            th->pages_filling = true;
            return 1;
        }
        if (rc != -EMSGSIZE)
            return rc;
    }
    /* Zero copy (or a record larger than a page). Records waiting in the
     * subscriber's page go first: each tag's chunks must arrive in order. */
    if (s->page_filling) {
        int rc = rci_publisher_flush(th->pub, s->peer);
        if (rc != 0)
            return rc;
        s->page_filling = false;
    }
    if (gather)
        return rci_publisher_send_gather(th->pub, s->peer, chunk->tag, chunk->flags, th->iov, n, tok_index);
    return rci_publisher_send(th->pub, s->peer, chunk->tag, chunk->flags, th->iov, n, tok_index);
}

/* Is the subscriber behind by the age of its oldest share (slow_policy =
 * drop only: under block a behind subscriber is waited for anyway)? Then
 * it gets no new chunks until that share completed: it catches up, or, if
 * the share never completes, cut_stalled() cuts it off. */
static bool behind_by_age(struct publish_thread *th, const struct pub_sub *s)
{
    uint64_t limit = th->live.slow_drop_after_ns;
    return limit && th->live.slow_policy == RCI_SLOW_DROP &&
           rci_publisher_peer_oldest_age(th->pub, s->peer) > limit;
}

/* The subscriber holds all it may: sub_send_limit shares, or (the
 * publisher's -ENOBUFS) its fair share of the header slots, pages or tx
 * queue. Keeping up but busy for a moment (its oldest share younger than
 * half of slow_drop_after: on a loaded machine a reading subscriber is
 * often tens of milliseconds behind, and rxm's connection setup holds the
 * first sends), it is waited for like congestion; otherwise it is behind.
 * Under block it is always waited for. */
static bool behind_at_limit(struct publish_thread *th, const struct pub_sub *s)
{
    const struct live_params *d = &th->live;
    return d->slow_policy == RCI_SLOW_DROP &&
           rci_publisher_peer_oldest_age(th->pub, s->peer) >= d->slow_drop_after_ns / 2;
}

/* May s take a share now? 0: yes; -EAGAIN: it is behind (th->behind says
 * why: its oldest share is older than slow_drop_after, or it holds all it
 * may and behind_at_limit); -ENOBUFS: it holds all it may (sub_send_limit
 * shares) but is not behind: wait for it, or under block defer the share to
 * its backlog; -EBUSY: no token free (everyone waits a moment). */
static int sub_can_take(struct publish_thread *th, const struct pub_sub *s)
{
    th->behind = BEHIND_LIMIT;
    if (s->outstanding >= th->sub_send_limit)
        return behind_at_limit(th, s) ? -EAGAIN : -ENOBUFS;
    th->behind = BEHIND_AGE;
    if (behind_by_age(th, s))
        return -EAGAIN;
    th->behind = BEHIND_QUOTA;
    return th->free_token == UINT32_MAX ? -EBUSY : 0;
}

/* The publisher refused a share to s (rc < 0 from post_share): -ENOBUFS, it
 * holds its fair share of slots, pages, tx queue or RMA ring: as at its
 * limit (behind, or only busy); -EAGAIN, a pool or the provider's queue is
 * empty for everyone: -EBUSY. */
static int publisher_refusal(struct publish_thread *th, const struct pub_sub *s, int rc)
{
    if (rc == -ENOBUFS)
        return behind_at_limit(th, s) ? -EAGAIN : -ENOBUFS;
    return rc == -EAGAIN ? -EBUSY : rc;
}

/* The publisher holds a zero-copy share under token k: remember how it
 * settles (on_send_complete). */
static void track_share(struct publish_thread *th, struct pub_sub *s, uint32_t k, struct publish_lane *lane,
                        bool direct, uint64_t handle, uint32_t bytes)
{
    struct send_token *tok = &th->tokens[k];
    th->free_token = tok->next_free;
    tok->stream = false;
    tok->direct = direct;
    tok->handle = handle;
    tok->lane = lane;
    tok->table_id = s->table_id;
    tok->bytes = bytes;
    s->outstanding++;
}

/* Send share i of the lane's current chunk. 0: posted (it completes through
 * on_send_complete); -ENOTCONN: its subscriber left; -EAGAIN: that
 * subscriber is behind (th->behind says why); -ENOBUFS: it holds all it
 * may but keeps up (wait, or under block defer it: defer_share), or it has
 * deferred shares, which go first; -EBUSY: wait a moment: a pool or the
 * provider's queue is empty; other: refused. Only on 0 does the share
 * belong to the publisher. */
static int send_share(struct publish_thread *th, struct publish_lane *lane, unsigned i)
{
    struct pub_sub *s = sub_of_table_id(th, lane->cur_subs[i]);
    if (!s || s->cut)
        return -ENOTCONN;
    /* Its deferred shares go first (its order is kept). One compare of a
     * plain field while no backlog holds anything. */
    if (th->deferred_now && !rci_share_backlog_empty(&s->backlog))
        return -ENOBUFS;
    int rc = sub_can_take(th, s);
    if (rc != 0)
        return rc;
    /* No callback runs inside a send (net/publisher.h): the token is taken
     * only once the publisher holds the share. */
    uint32_t k = th->free_token;
    rc = post_share(th, s, lane->cur, lane->cur_buffered, lane->cur_gather, k);
    if (rc == 1) {  /* copied: lane->cur may be released by this share_done */
        count_share(th, s, lane->cur->length, 0);
        share_done(lane, i);
        return 0;
    }
    if (rc == 0) {
        track_share(th, s, k, lane, lane->cur_direct,
                    lane->cur_direct ? lane->cur_key : rci_fanout_send_handle(lane->cur_first, i),
                    lane->cur->length);
        return 0;
    }
    return publisher_refusal(th, s, rc);
}

/* A share that will not be sent: count it against its subscriber (s may be NULL). */
static void count_not_sent(struct publish_thread *th, struct pub_sub *s, int why)
{
    if (why == -EAGAIN) {
        rci_counter_add(&th->t.dropped, 1);
        if (s) {
            s->c.chunks_dropped++;
            s->c.dropped_by_age += th->behind == BEHIND_AGE;
            s->c.dropped_by_quota += th->behind == BEHIND_QUOTA;
        }
    } else if (why == -ENOTCONN) {
        rci_counter_add(&th->t.unsent, 1);
        if (s)
            s->c.shares_unsent++;
    } else {
        rci_counter_add(&th->t.failed, 1);
        if (s) {
            s->c.chunks_failed++;
            pl_warn(th->pb, "subscriber %s: send refused: %s (%s)", s->name, strerror(-why),
                    rci_publisher_last_error(th->pub));
        }
    }
}

/* Share i of the lane's current chunk will not be sent: count it, complete it. */
static void share_not_sent(struct publish_thread *th, struct publish_lane *lane, unsigned i, int why)
{
    count_not_sent(th, sub_of_table_id(th, lane->cur_subs[i]), why);
    share_done(lane, i);
}

/* ---- block backlogs (pipeline/share_backlog.h) ------------------------------ */

static void deferred_changed(struct publish_thread *th, uint32_t now)
{
    th->deferred_now = now;
    rci_counter_set(&th->t.deferred_now, now);
    if (now > rci_counter_get(&th->t.deferred_high_water))
        rci_counter_set(&th->t.deferred_high_water, now);
}

/* slow_policy = block, share i of the lane's current chunk: its subscriber
 * cannot take it now (send_share said -ENOBUFS). Put it in the subscriber's
 * backlog so the lane goes on with the others; false when the backlog is full
 * (or there is none, block_backlog = 0, or it is the only subscriber of the
 * thread): the lane waits for it as before.
 * A full backlog's wait is counted once until the backlog moves again. */
static bool defer_share(struct publish_thread *th, struct publish_lane *lane, unsigned i)
{
    struct pub_sub *s = sub_of_table_id(th, lane->cur_subs[i]);
    /* Alone on its thread nobody would gain: waiting costs less. */
    if (!s || s->backlog.cap == 0 || th->nsubscribed < 2)
        return false;
    struct rci_deferred_share d = {
        .chunk = lane->cur, .lane = lane, .direct = lane->cur_direct,
        .handle = lane->cur_direct ? lane->cur_key : rci_fanout_send_handle(lane->cur_first, i),
        .buffered = lane->cur_buffered, .gather = lane->cur_gather, .deferred_ns = rci_now_ns(),
    };
    if (!rci_share_backlog_push(&s->backlog, &d)) {
        if (!s->backlog_full_counted) {
            s->backlog_full_counted = true;
            s->c.backlog_full_waits++;
            rci_counter_add(&th->t.backlog_full_waits, 1);
        }
        return false;
    }
    s->c.shares_deferred++;
    s->c.deferred_high_water = s->backlog.high_water;
    rci_counter_add(&th->t.deferred, 1);
    deferred_changed(th, th->deferred_now + 1);
    return true;
}

/* Post the oldest deferred share of s. Results as send_share's. */
static int post_deferred(struct publish_thread *th, struct pub_sub *s, const struct rci_deferred_share *d)
{
    if (s->cut)
        return -ENOTCONN;
    int rc = sub_can_take(th, s);
    if (rc != 0)
        return rc;
    uint32_t k = th->free_token;
    rc = post_share(th, s, d->chunk, d->buffered, d->gather, k);
    if (rc == 1) {
        count_share(th, s, d->chunk->length, 0);
        settle_handle(d->lane, d->direct, d->handle);
        return 0;
    }
    if (rc == 0) {
        track_share(th, s, k, d->lane, d->direct, d->handle, d->chunk->length);
        return 0;
    }
    return publisher_refusal(th, s, rc);
}

static void backlog_pop(struct publish_thread *th, struct pub_sub *s)
{
    rci_share_backlog_pop(&s->backlog);
    s->backlog_full_counted = false;
    deferred_changed(th, th->deferred_now - 1);
}

/* Send from s's backlog, oldest first, until it cannot take more. Under drop
 * (a reload changed the policy) what it cannot take now is dropped and
 * counted (chunks_dropped), also where a new share of a subscriber at its
 * limit but keeping up would be waited for: it fell behind under block, and
 * its new shares wait until its backlog is empty. Congestion (-EBUSY) waits
 * either way. A share refused or for a subscriber cut off is settled and
 * counted as today. (test_daemon_slow.sh "hold-reload": every share sent or
 * dropped once, in order.) */
static unsigned drain_backlog(struct publish_thread *th, struct pub_sub *s)
{
    bool drop = th->live.slow_policy == RCI_SLOW_DROP;
    unsigned moved = 0;
    struct rci_deferred_share *d;
    while ((d = rci_share_backlog_head(&s->backlog)) != NULL) {
        int rc = post_deferred(th, s, d);
        if (rc == -EBUSY || (rc == -ENOBUFS && !drop))
            break;
        if (rc == -ENOBUFS)
            rc = -EAGAIN;   /* drop: behind at its limit */
        if (rc != 0) {
            count_not_sent(th, s, rc);
            settle_handle(d->lane, d->direct, d->handle);
        }
        backlog_pop(th, s);
        moved++;
    }
    return moved;
}

/* Each turn of the loop, before new chunks: the backlogs. */
static unsigned drain_backlogs(struct publish_thread *th)
{
    unsigned moved = 0;
    for (uint32_t i = 0; th->deferred_now && i < th->nsubs_max; i++)
        if (th->subs[i].in_use && !rci_share_backlog_empty(&th->subs[i].backlog))
            moved += drain_backlog(th, &th->subs[i]);
    return moved;
}

/* s was cut off, closed, left, or the thread ends: its deferred shares will
 * not be sent. Each is counted as not sent (shares_unsent) and settled once,
 * so its key comes back. */
static void backlog_settle_all(struct publish_thread *th, struct pub_sub *s)
{
    struct rci_deferred_share *d;
    while ((d = rci_share_backlog_head(&s->backlog)) != NULL) {
        count_not_sent(th, s, -ENOTCONN);
        settle_handle(d->lane, d->direct, d->handle);
        backlog_pop(th, s);
    }
}

/* How long s's oldest share has waited: the publisher's oldest send (or an
 * RMA ring's time without room), or the head of its backlog, whichever
 * waited longer. The backlog counts: an RMA subscriber's writes complete
 * when they leave and each CREDIT ends its ring-full time, so one that gives
 * its ring back in small steps would otherwise never look old, however long
 * its deferred chunks (and their ring space) wait. */
static uint64_t oldest_share_age(struct publish_thread *th, struct pub_sub *s, uint64_t now)
{
    uint64_t age = rci_publisher_peer_oldest_age(th->pub, s->peer);
    const struct rci_deferred_share *d = rci_share_backlog_head(&s->backlog);
    if (d && now > d->deferred_ns && now - d->deferred_ns > age)
        age = now - d->deferred_ns;
    return age;
}

/* The age bound of the slow policy: a subscriber whose oldest share
 * (oldest_share_age) has waited longer than slow_cut_after (drop) or
 * block_cut_after (block) is cut off, so that the ring's read pointer (it
 * advances only over released chunks) moves on for the others. Through
 * rci_publisher_close_peer: its keys come back as the publisher releases a
 * closed peer's sends (net/README.md, "Dead peers"); GONE then removes it.
 * Checked a few times per bound, not per chunk. */
#define STALL_CHECK_MAX_NS 10000000ull
static void cut_stalled(struct publish_thread *th, uint64_t now)
{
    const struct live_params *d = &th->live;
    bool drop = d->slow_policy == RCI_SLOW_DROP;
    uint64_t limit = drop ? d->slow_cut_after_ns : d->block_cut_after_ns;
    uint64_t period = limit / 8 < STALL_CHECK_MAX_NS ? limit / 8 : STALL_CHECK_MAX_NS;
    if (limit == 0 || now - th->last_stall_check_ns < period)
        return;
    th->last_stall_check_ns = now;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        struct pub_sub *s = &th->subs[i];
        if (!s->in_use || s->cut)
            continue;
        uint64_t age = oldest_share_age(th, s, now);
        if (age <= limit)
            continue;
        s->cut = true;
        s->c.cut_off = 1;
        s->c.cut_off_age_ns = age;
        rci_counter_add(&th->t.cut_off, 1);
        pl_warn(th->pb, "subscriber %s cut off: its oldest share waited %.0f ms, more than "
                "%s = %.0f ms (slow_policy = %s); sent %" PRIu64 ", dropped %" PRIu64 ", outstanding %u"
                ", deferred %u (not sent)",
                s->name, (double)age / 1e6, drop ? "slow_cut_after" : "block_cut_after",
                (double)limit / 1e6, drop ? "drop" : "block", s->c.chunks_sent, s->c.chunks_dropped,
                s->outstanding, s->backlog.count);
        int rc = rci_publisher_close_peer(th->pub, s->peer);
        if (rc != 0)
            pl_warn(th->pb, "subscriber %s: closing it failed: %s", s->name, strerror(-rc));
        backlog_settle_all(th, s);
    }
}

/* net/ counts refused connections (max_subscribers, allow list, version)
 * and keeps the reason of the last one; an operator must see them in the
 * log. Checked a few times a second, not per chunk. */
#define REFUSAL_CHECK_NS 100000000ull
static void log_new_refusals(struct publish_thread *th, uint64_t now)
{
    if (now - th->last_refusal_check_ns < REFUSAL_CHECK_NS)
        return;
    th->last_refusal_check_ns = now;
    struct rci_publisher_stats st;
    rci_publisher_get_stats(th->pub, &st);
    /* At most one line per 10 s while it lasts (a scan counts it 4 times a second). */
    if (st.fd_pressure != th->fd_pressure_logged && now - th->fd_pressure_log_ns >= 10000000000ull) {
        pl_warn(th->pb, "publisher %u: file descriptors nearly exhausted (%" PRIu64 " open, %" PRIu64
                " times seen): raise ulimit -n; connections stuck in their handshake are closed"
                " after peer_timeout", th->index, st.fds_in_use, st.fd_pressure);
        th->fd_pressure_logged = st.fd_pressure;
        th->fd_pressure_log_ns = now;
    }
    if (st.connections_refused == th->refusals_logged)
        return;
    pl_warn(th->pb, "publisher %u: %" PRIu64 " connection(s) refused, the last: %s", th->index,
            st.connections_refused - th->refusals_logged, rci_publisher_last_error(th->pub));
    th->refusals_logged = st.connections_refused;
}

/* The sink's lookup gave the chunk's subscribers on this thread (one that
 * left since is skipped at its send); with k > 1 the record of k shares is
 * taken before the first send. 1: given back at once (none), 0: begun,
 * -EAGAIN: no fan-out record free (retry). */
static int begin_chunk(struct publish_thread *th, struct publish_lane *lane)
{
    const struct rci_chunk *chunk = lane->cur;
    unsigned k = lane->cur_nsubs;
    if (k == 0) {
        rci_counter_add(&th->t.no_subscriber, 1);
        lane_give_back(lane, lane->cur_key);
        return 1;
    }
    /* One share (the common case: one subscriber of the tag on this
     * thread) needs no record: its completion gives the key back itself,
     * which saves the record's two compare-and-swaps on the free list and
     * the one of the completion per chunk (issue 17, per-chunk cost). */
    lane->cur_direct = k == 1;
    if (!lane->cur_direct && rci_fanout_begin(lane->fanout, lane->cur_key, k, &lane->cur_first) != 0)
        return -EAGAIN;
    lane->cur_begun = true;
    lane->cur_buffered = use_buffered(th, chunk, &lane->cur_gather);
    lane->cur_k = k;
    lane->cur_next = 0;
    rci_counter_add(&th->t.published, 1);
    rci_counter_add(&th->t.shares, k);
    return 0;
}

/* Send the current chunk's remaining shares. 0: every share is posted or
 * settled (the chunk is no longer ours); -EAGAIN: wait and resume here. */
static int advance_chunk(struct publish_thread *th, struct publish_lane *lane)
{
    if (!lane->cur_begun) {
        int rc = begin_chunk(th, lane);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
    bool block = th->live.slow_policy == RCI_SLOW_BLOCK;
    while (lane->cur_next < lane->cur_k) {
        unsigned i = lane->cur_next;
        int rc = send_share(th, lane, i);
        if (rc == -ENOBUFS && block && defer_share(th, lane, i))
            rc = 0;   /* in its subscriber's backlog now: the others go on */
        if (rc == -EBUSY || rc == -ENOBUFS || (rc == -EAGAIN && block))
            return -EAGAIN;
        if (rc != 0)
            share_not_sent(th, lane, i, rc);
        lane->cur_next++;
    }
    return 0;
}

/* The chunk records of a fresh batch were just written by the readout thread,
 * mostly on the other core. Loading them one by one as each chunk is sent
 * stalls on every record in turn (issue 17's profile: the first loads of
 * chunk->tag and of the piece slot were 16 % of all samples at 64 B); the
 * records are asked for all at once here, and each chunk's first piece slot
 * two chunks ahead (prefetch_ahead), when its record has had time to arrive.
 * Hints only. */
static void prefetch_records(const struct publish_lane *lane)
{
    for (unsigned i = 0; i < lane->batch_len; i++) {
        const struct rci_chunk *c = lane->batch[i].chunk;
        __builtin_prefetch(c);
        __builtin_prefetch((const char *)(c + 1) - 1);   /* a record may straddle two lines */
    }
}

/* The payload is read once, by the page copy (buffered) or by the transport's
 * send (zero copy), straight after the chunk is taken: at 1 KiB buffered the
 * copy's first loads were most of its time (issue 17's profile: memmove 11 %
 * of all samples, three quarters of it on the first load of each chunk). The
 * next chunk's first bytes are asked for while this one is sent, and the
 * piece slot of the one after it, whose payload address is needed then. Up to
 * PAYLOAD_PREFETCH bytes: beyond them the hardware's stream prefetch follows. */
#define PAYLOAD_PREFETCH 1024u

static void prefetch_payload(const struct rci_chunk *c)
{
    if (c->npieces == 0)
        return;
    uintptr_t at = (uintptr_t)c->pieces[0].addr;
    uintptr_t end = at + (c->pieces[0].len < PAYLOAD_PREFETCH ? c->pieces[0].len : PAYLOAD_PREFETCH);
    for (uintptr_t line = at & ~(uintptr_t)63; line < end; line += 64)
        __builtin_prefetch((const void *)line);
}

static void prefetch_ahead(const struct publish_lane *lane)
{
    unsigned next = lane->batch_pos;   /* the chunk after the one being taken */
    if (next + 1 < lane->batch_len)
        __builtin_prefetch(lane->batch[next + 1].chunk->pieces);
    if (next < lane->batch_len)
        prefetch_payload(lane->batch[next].chunk);
}

/* Take the next queued chunk with the key its shares give back. */
static bool next_chunk(struct publish_lane *lane)
{
    if (lane->batch_pos == lane->batch_len) {
        lane->batch_len = rci_chunk_queue_dequeue(lane->queue, lane->batch, BURST);
        lane->batch_pos = 0;
        if (lane->batch_len == 0)
            return false;
        prefetch_records(lane);
    }
    const struct lane_entry *e = &lane->batch[lane->batch_pos++];
    prefetch_ahead(lane);
    lane->cur_key = e->key;
    lane->cur = e->chunk;
    lane->cur_nsubs = e->nsubs;
    if (e->nsubs > 1) {   /* in the lane's side store, in queue order (publish_internal.h) */
        memcpy(lane->cur_subs, lane->side[lane->side_tail], e->nsubs * sizeof lane->cur_subs[0]);
        lane->side_tail = lane->side_tail + 1 == lane->nside ? 0 : lane->side_tail + 1;
    } else {
        lane->cur_subs[0] = e->sub;
    }
    lane->cur_begun = false;
    return true;
}

/* Up to BURST chunks of one lane. A chunk that must wait stays current and
 * nothing behind it is taken: the queue fills and the readout waits. */
static unsigned pump_lane(struct publish_thread *th, struct publish_lane *lane)
{
    unsigned done = 0;
    lane->pumping = true;
    while (done < BURST) {
        if (!lane->cur && !next_chunk(lane))
            break;
        if (advance_chunk(th, lane) != 0) {
            rci_counter_add(&th->t.blocked, 1);
            break;
        }
        lane->cur = NULL;
        done++;
    }
    lane_flush_keys(lane);
    lane->pumping = false;
    return done;
}

/* ---- statistics log ---------------------------------------------------------- */

static void log_thread_stats(struct publish_thread *th, uint64_t now)
{
    struct rci_pipeline *pb = th->pb;
    double dt = (double)(now - th->last_stats_ns) / 1e9;
    uint64_t sent = rci_counter_get(&th->t.sent), bytes = rci_counter_get(&th->t.bytes_sent);
    unsigned queued = 0;
    for (unsigned i = 0; i < pb->ncards; i++)
        queued += rci_chunk_queue_count(pb->cards[i].lanes[th->index].queue);
    pl_info_unlimited(th->pb, "publisher %u (port %u): %.3f Mchunk/s %.3f GB/s sent | subscribers %u | sent %" PRIu64
            " dropped %" PRIu64 " failed %" PRIu64 " unsent %" PRIu64 " no-subscriber %" PRIu64
            " | queued %u blocked %" PRIu64,
            th->index, th->port, (double)(sent - th->last_sent_total) / dt / 1e6,
            (double)(bytes - th->last_bytes_total) / dt / 1e9, atomic_load(&th->subscribed), sent,
            rci_counter_get(&th->t.dropped), rci_counter_get(&th->t.failed), rci_counter_get(&th->t.unsent), rci_counter_get(&th->t.no_subscriber), queued,
            rci_counter_get(&th->t.blocked));
    th->last_sent_total = sent;
    th->last_bytes_total = bytes;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        struct pub_sub *s = &th->subs[i];
        if (!s->in_use)
            continue;
        pl_info_unlimited(th->pb, "subscriber %s: %.3f Mchunk/s | sent %" PRIu64 " dropped %" PRIu64 " (by age %" PRIu64
                ", by quota %" PRIu64 ") failed %" PRIu64 " | outstanding %u, deferred %u, oldest %.1f ms | tags %s",
                s->name, (double)(s->c.chunks_sent - s->last_sent) / dt / 1e6, s->c.chunks_sent, s->c.chunks_dropped,
                s->c.dropped_by_age, s->c.dropped_by_quota, s->c.chunks_failed, s->outstanding, s->backlog.count,
                (double)rci_publisher_peer_oldest_age(th->pub, s->peer) / 1e6, s->nranges ? s->tags : "none");
        s->last_sent = s->c.chunks_sent;
    }
    th->last_stats_ns = now;
}

/* ---- the view for other threads (metrics) ------------------------------------- */

static void view_copy(struct publish_thread *th, struct thread_view *v)
{
    if (th->pub)
        rci_publisher_get_stats(th->pub, &v->stats);
    else
        v->stats = th->final_stats;
    /* Records of subscribers that left never change: append the new ones. */
    for (; v->ndeparted < th->ndeparted; v->ndeparted++)
        v->subs[v->ndeparted] = (struct view_sub){.r = th->departed[v->ndeparted]};
    v->nsubs = v->ndeparted;
    for (uint32_t i = 0; i < th->nsubs_max && v->nsubs < v->cap; i++) {
        const struct pub_sub *s = &th->subs[i];
        if (!s->in_use)
            continue;
        struct view_sub *o = &v->subs[v->nsubs++];
        o->r.peer = s->peer;
        memcpy(o->r.name, s->name, sizeof o->r.name);
        memcpy(o->r.tags, s->tags, sizeof o->r.tags);
        o->r.c = s->c;
        o->active = true;
        o->outstanding = s->outstanding;
        o->deferred = s->backlog.count;
        o->oldest_age_ns = th->pub ? rci_publisher_peer_oldest_age(th->pub, s->peer) : 0;
    }
}

/* Every VIEW_REFRESH_NS, never waiting for a reader (final: after the end,
 * waiting, so that the view holds the final figures). */
static void view_refresh(struct publish_thread *th, uint64_t now, bool final)
{
    struct thread_view *v = &th->view;
    if (!final && now - v->refreshed_ns < VIEW_REFRESH_NS)
        return;
    if (final)
        pthread_mutex_lock(&v->lock);
    else if (pthread_mutex_trylock(&v->lock) != 0)
        return;
    view_copy(th, v);
    v->refreshed_ns = now;
    pthread_mutex_unlock(&v->lock);
}

/* ---- the end --------------------------------------------------------------- */

/* Shutdown: chunks still queued get no more sends from this thread; its
 * shares of them go back. */
static void abandon_queued(struct publish_thread *th, struct publish_lane *lane)
{
    do {
        if (!lane->cur)
            continue;
        if (lane->cur_begun) {
            for (unsigned i = lane->cur_next; i < lane->cur_k; i++) {
                rci_counter_add(&th->t.unsent, 1);
                share_done(lane, i);
            }
        } else {
            rci_counter_add(&th->t.abandoned, 1);
            rci_publish_lane_release(lane, lane->cur_key);
        }
        lane->cur = NULL;
    } while (next_chunk(lane));
}

/* Buffered pages still filling hold records whose keys are already back:
 * send them before the publisher goes (bounded wait). */
static void flush_pages(struct publish_thread *th)
{
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->subs[i].in_use)
            rci_publisher_flush(th->pub, th->subs[i].peer);
    uint64_t deadline = rci_now_ns() + FLUSH_WAIT_NS;
    struct rci_publisher_stats st;
    do {
        rci_counter_add(&th->heartbeat, 1);   /* the stop's stuck rule watches it here too */
        if (rci_publisher_wait(th->pub, IDLE_WAIT_NS) < 0)
            break;
        rci_publisher_get_stats(th->pub, &st);
    } while ((st.pages_free < st.pages_total || st.slots_free < st.slots_total) && rci_now_ns() < deadline);
}

static unsigned subscribers_connected(const struct publish_thread *th)
{
    return atomic_load_explicit(&th->connected, memory_order_relaxed);
}

/* A finished run: tell every subscriber (BYE after its last chunk), then
 * serve until every subscriber of this thread has left (its answering BYE,
 * or dead) or linger_ns passed. Without it the publisher's end closes the
 * connections at once and a subscriber still reading loses the rest of
 * what was sent: a completed send only means the provider has it. */
static void linger(struct publish_thread *th)
{
    uint64_t linger_ns = th->pb->linger_ns;
    if (linger_ns == 0)
        return;
    rci_publisher_end_run(th->pub);
    if (subscribers_connected(th) == 0)
        return;
    pl_info(th->pb, "publisher %u: waiting up to %.1f s for %u subscriber%s to leave", th->index,
            (double)linger_ns / 1e9, subscribers_connected(th), subscribers_connected(th) == 1 ? "" : "s");
    uint64_t deadline = rci_now_ns() + linger_ns;
    while (subscribers_connected(th) > 0 && rci_now_ns() < deadline) {
        rci_counter_add(&th->heartbeat, 1);
        if (rci_publisher_wait(th->pub, IDLE_WAIT_NS) < 0)
            break;
        cut_stalled(th, rci_now_ns());
    }
}

static void publisher_finish(struct publish_thread *th)
{
    struct rci_pipeline *pb = th->pb;
    for (unsigned i = 0; i < pb->ncards; i++)
        abandon_queued(th, &pb->cards[i].lanes[th->index]);
    rci_stream_abandon(th);   /* queued blocks go back; spans in flight complete at destroy */
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->subs[i].in_use)
            backlog_settle_all(th, &th->subs[i]);
    flush_pages(th);
    linger(th);
    rci_publisher_get_stats(th->pub, &th->final_stats);
    /* Outstanding sends complete here with -ECANCELED, releasing their keys. */
    rci_publisher_destroy(th->pub);
    th->pub = NULL;
    view_refresh(th, rci_now_ns(), true);
    pl_info(th->pb, "publisher %u (port %u): %" PRIu64 " chunks sent, %" PRIu64 " dropped, %" PRIu64
            " failed, %" PRIu64 " not sent", th->index, th->port, rci_counter_get(&th->t.sent), rci_counter_get(&th->t.dropped),
            rci_counter_get(&th->t.failed), rci_counter_get(&th->t.unsent));
}

/* ---- control: reload, list, kick (top of the loop, between chunks) -------- */

/* "1.2.3.4:5" or "[::1]:5" (a subscriber's name) as a socket address. */
static bool name_to_sockaddr(const char *name, struct sockaddr_storage *ss, size_t *len)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(name, ':');
    if (!colon || (size_t)(colon - name) >= sizeof host)
        return false;
    memcpy(host, name, (size_t)(colon - name));
    host[colon - name] = '\0';
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        host[strlen(host) - 1] = '\0';
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        *len = sizeof *a6;
        return inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    *len = sizeof *a4;
    return inet_pton(AF_INET, host, &a4->sin_addr) == 1;
}

/* Close one subscriber on the control path (kick, allow list): its keys
 * come back as for a cut-off one (cut_stalled). */
static void close_by_control(struct publish_thread *th, struct pub_sub *s, const char *why)
{
    s->cut = true;
    pl_warn(th->pb, "subscriber %s closed: %s; sent %" PRIu64 ", dropped %" PRIu64 ", outstanding %u", s->name,
            why, s->c.chunks_sent, s->c.chunks_dropped, s->outstanding);
    int rc = rci_publisher_close_peer(th->pub, s->peer);
    if (rc != 0)
        pl_warn(th->pb, "subscriber %s: closing it failed: %s", s->name, strerror(-rc));
    backlog_settle_all(th, s);
}

/* A new allow list: new connections are checked against it, subscribers it
 * excludes are closed. */
static void apply_allow(struct publish_thread *th, const char *allow)
{
    char err[256] = "";
    if (rci_publisher_set_allow(th->pub, allow, err, sizeof err) != 0) {
        pl_error(th->pb, "publisher %u: %s (the old allow list stays)", th->index, err);   /* checked before */
        return;
    }
    struct rci_allow_list list;
    char why[160];
    if (rci_allow_list_parse(allow, &list, why, sizeof why) != 0)
        return;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        struct pub_sub *s = &th->subs[i];
        struct sockaddr_storage ss;
        size_t len;
        if (!s->in_use || s->cut || !name_to_sockaddr(s->name, &ss, &len) ||
            rci_allow_list_permits(&list, &ss, len))
            continue;
        rci_counter_add(&th->t.cut_by_allow, 1);
        close_by_control(th, s, "not in the reloaded [fabric] allow list");
    }
}

static void take_live_params(struct publish_thread *th, uint64_t gen)
{
    bool allow_changed = strcmp(th->live.allow, th->pb->pending.allow) != 0;
    bool max_changed = th->live.max_subscribers != th->pb->pending.max_subscribers;
    th->live = th->pb->pending;
    th->live_gen = gen;
    if (allow_changed)
        apply_allow(th, th->live.allow);
    char err[256] = "";
    if (max_changed && rci_publisher_set_max_subscribers(th->pub, th->live.max_subscribers, err, sizeof err) != 0)
        pl_error(th->pb, "publisher %u: %s", th->index, err);   /* checked before: not expected */
    atomic_store_explicit(&th->live_acked, gen, memory_order_release);
}

static void list_subscribers(struct publish_thread *th, struct ctl_request *r)
{
    r->n = 0;
    for (uint32_t i = 0; i < th->nsubs_max && r->n < r->max; i++) {
        const struct pub_sub *s = &th->subs[i];
        if (!s->in_use)
            continue;
        struct rci_sub_info *o = &r->out[r->n++];
        memset(o, 0, sizeof *o);
        o->thread = th->index;
        snprintf(o->name, sizeof o->name, "%s", s->name);
        o->nranges = s->nranges;
        for (uint32_t k = 0; k < s->nranges && k < RCI_SUB_INFO_RANGES; k++) {
            o->first[k] = s->ranges[k].first;
            o->last[k] = s->ranges[k].last;
        }
        o->outstanding = s->outstanding;
        o->deferred = s->backlog.count;
        o->oldest_age_ns = rci_publisher_peer_oldest_age(th->pub, s->peer);
        o->chunks_sent = s->c.chunks_sent;
        o->bytes_sent = s->c.bytes_sent;
        o->chunks_dropped = s->c.chunks_dropped;
        o->chunks_failed = s->c.chunks_failed;
        o->cut = s->cut;
    }
}

static void kick_subscriber(struct publish_thread *th, struct ctl_request *r)
{
    r->result = -ENOENT;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        struct pub_sub *s = &th->subs[i];
        if (!s->in_use || s->cut || strcmp(s->name, r->arg) != 0)
            continue;
        rci_counter_add(&th->t.kicked, 1);
        close_by_control(th, s, "kicked (ringcast-ctl kick)");
        r->result = 0;
        return;
    }
}

static void serve_control(struct publish_thread *th)
{
    uint64_t gen = atomic_load_explicit(&th->pb->live_gen, memory_order_acquire);
    if (gen != th->live_gen)
        take_live_params(th, gen);
    struct ctl_request *r = &th->req;
    uint64_t posted = atomic_load_explicit(&r->posted, memory_order_acquire);
    if (posted == atomic_load_explicit(&r->done, memory_order_relaxed))
        return;
    if (r->op == CTL_LIST)
        list_subscribers(th, r);
    else if (r->op == CTL_KICK)
        kick_subscriber(th, r);
    atomic_store_explicit(&r->done, posted, memory_order_release);
}

/* readout.fault_publisher_hang_after (tests only): a stuck thread, as a
 * deadlock would leave it; it comes back only for the stop, or with
 * fault_publisher_hang_through_stop never (as a thread inside a libfabric
 * call that does not return). */
static void hang_for_test(struct publish_thread *th)
{
    pl_warn(th->pb, "publisher %u: hanging on purpose (readout.fault_publisher_hang_after%s, for tests)", th->index,
            th->pb->params.fault_hang_through_stop ? " and _through_stop" : "");
    while (th->pb->params.fault_hang_through_stop || !atomic_load_explicit(&th->pb->stop, memory_order_acquire))
        rci_sleep_ns(10ull * 1000 * 1000);
}

/* ---- the idle sleep and its doorbell ------------------------------------------ */

void rci_publish_thread_wake(struct publish_thread *th)
{
    /* Pairs with the fence in sleep_idle: either the sleeper sees the work
     * queued before this call, or this sees sleeping set and rings. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&th->sleeping, memory_order_relaxed) ||
        !atomic_exchange_explicit(&th->sleeping, false, memory_order_acq_rel))
        return;
    uint64_t one = 1;
    if (th->doorbell_fd >= 0 && write(th->doorbell_fd, &one, sizeof one) == (ssize_t)sizeof one)
        rci_shared_counter_add(&th->doorbell_rings, 1);
}

/* A chunk queued or being sent (perhaps waiting for its subscriber, or
 * deferred in a subscriber's backlog). */
static bool lanes_hold_chunks(struct publish_thread *th)
{
    struct rci_pipeline *pb = th->pb;
    if (th->deferred_now || rci_stream_holds(th))
        return true;
    for (unsigned i = 0; i < pb->ncards; i++) {
        const struct publish_lane *lane = &pb->cards[i].lanes[th->index];
        if (lane->cur || lane->batch_pos < lane->batch_len || rci_chunk_queue_count(lane->queue) > 0)
            return true;
    }
    return false;
}

/* Anything for the loop to do without the fabric: a chunk, a control
 * request or reload, the stop. */
static bool work_waiting(struct publish_thread *th)
{
    struct rci_pipeline *pb = th->pb;
    return atomic_load_explicit(&pb->stop, memory_order_acquire) ||
           atomic_load_explicit(&pb->live_gen, memory_order_acquire) != th->live_gen ||
           atomic_load_explicit(&th->req.posted, memory_order_acquire) !=
               atomic_load_explicit(&th->req.done, memory_order_relaxed) ||
           lanes_hold_chunks(th);
}

/* When the thread's own timers are next due (after now): the stats log, the
 * slow-policy check while a subscriber has shares outstanding, the view for
 * the metrics, the test hang; at most SLEEP_MAX_NS ahead. */
static uint64_t next_thread_timer(const struct publish_thread *th, uint64_t now, uint64_t hang_at)
{
    uint64_t due = now + SLEEP_MAX_NS;
    uint64_t interval = th->live.stats_interval_ns;
    if (interval && th->last_stats_ns + interval < due)
        due = th->last_stats_ns + interval;
    if (th->view.refreshed_ns + VIEW_REFRESH_NS < due)
        due = th->view.refreshed_ns + VIEW_REFRESH_NS;
    if (hang_at < due)
        due = hang_at;
    for (uint32_t i = 0; i < th->nsubs_max; i++)
        if (th->subs[i].in_use && th->subs[i].outstanding > 0) {
            uint64_t check = th->last_stall_check_ns + STALL_CHECK_MAX_NS;
            if (check < due)
                due = check;
            break;
        }
    return due > now ? due : now;
}

/* ---- the idle backoff (a provider without a CQ wait fd) ------------------------ */

/* libfabric 1.17's shm CQ has no wait fd: its idle sleep is a timed one. It
 * starts at the fabric layer's 50 us and doubles with each idle sleep that
 * ended with nothing to do, up to IDLE_BACKOFF_MAX_NS. The doorbell still
 * ends it at once (a chunk or request queued: the eventfd is in the same
 * poll), and while a send is posted the fabric layer keeps 50 us (its
 * completion needs the provider polled). A provider with a wait fd sleeps
 * on it and never meets the bound. */
#define IDLE_BACKOFF_MAX_NS (2000ull * 1000)

/* The bound of this idle sleep. Back to the shortest when the loop turned
 * more than once since the last idle sleep ended: it had work (or waited for
 * a subscriber) in between. */
static uint64_t idle_backoff_bound(struct publish_thread *th)
{
    uint64_t turn = rci_counter_get(&th->heartbeat);
    if (turn != th->idle_backoff_turn + 1 || th->idle_backoff_ns < RCI_FABRIC_NOFD_SLEEP_NS)
        th->idle_backoff_ns = RCI_FABRIC_NOFD_SLEEP_NS;
    return th->idle_backoff_ns;
}

/* After an idle sleep: work found (a completion, a message) or the doorbell
 * resets the bound; nothing doubles it. */
static void idle_backoff_after(struct publish_thread *th, bool woken_for_work)
{
    th->idle_backoff_turn = rci_counter_get(&th->heartbeat);
    if (woken_for_work)
        th->idle_backoff_ns = RCI_FABRIC_NOFD_SLEEP_NS;
    else if (th->idle_backoff_ns < IDLE_BACKOFF_MAX_NS)
        th->idle_backoff_ns = th->idle_backoff_ns * 2 < IDLE_BACKOFF_MAX_NS ? th->idle_backoff_ns * 2
                                                                          : IDLE_BACKOFF_MAX_NS;
}

/* Nothing queued: sleep on the fabric's wait fds and the doorbell until a
 * completion, connection event or message arrives, a chunk or request is
 * queued (the doorbell), or a timer of the thread or its publisher is due.
 * The flag is set before the queues are looked at again, so a chunk queued
 * meanwhile is either seen here or rings the doorbell. */
static int sleep_idle(struct publish_thread *th, uint64_t hang_at)
{
    atomic_store_explicit(&th->sleeping, true, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (work_waiting(th)) {
        atomic_store_explicit(&th->sleeping, false, memory_order_relaxed);
        return rci_publisher_progress(th->pub);
    }
    uint64_t now = rci_now_ns();
    int rc = rci_publisher_sleep_nofd(th->pub, th->doorbell_fd, next_thread_timer(th, now, hang_at) - now,
                                      idle_backoff_bound(th));
    bool rung = !atomic_exchange_explicit(&th->sleeping, false, memory_order_acq_rel);
    if (rung) {
        /* A waker cleared the flag: it wrote (or is about to write) the
         * eventfd; read it now. Should the write come after this read, the
         * next sleep wakes at once, reads it, and sleeps again. */
        uint64_t v;
        if (th->doorbell_fd >= 0 && read(th->doorbell_fd, &v, sizeof v) < 0) {
            /* EAGAIN: that late write; nothing to do */
        }
    }
    idle_backoff_after(th, rung || rc != 0);
    return rc;
}

/* The queues ran empty: send the buffered pages still filling now instead
 * of after flush_timeout (pipeline/README.md, "Buffered pages"). While chunks
 * keep coming the queues are not empty and pages fill (coalescing only while
 * busy, as Nagle's rule). A page that cannot go now (-EAGAIN) stays marked:
 * a later zero-copy send must still flush it first, and flush_timeout sends
 * it otherwise. Returns the pages posted. */
static unsigned flush_idle_pages(struct publish_thread *th)
{
    unsigned posted = 0;
    bool left = false;
    for (uint32_t i = 0; i < th->nsubs_max; i++) {
        struct pub_sub *s = &th->subs[i];
        if (!s->in_use || !s->page_filling)
            continue;
        int rc = rci_publisher_flush_idle(th->pub, s->peer);
        if (rc >= 0) {
            s->page_filling = false;
            posted += (unsigned)rc;
        } else {
            left = true;
        }
    }
    th->pages_filling = left;
    return posted;
}

/* Nothing sent this turn. A chunk that waits (its subscriber holds all it
 * may, a pool is empty) is retried after today's short wait on the CQ;
 * with no chunk at all the pages filling go out, and the thread sleeps until
 * something is due. */
static int sleep_or_wait(struct publish_thread *th, uint64_t hang_at)
{
    bool holding = lanes_hold_chunks(th);
    if (!holding && th->pages_filling && flush_idle_pages(th) > 0)
        return rci_publisher_progress(th->pub);
    if (th->doorbell_fd < 0 || holding)
        return rci_publisher_wait(th->pub, IDLE_WAIT_NS);
    return sleep_idle(th, hang_at);
}

/* A turn that did work polls the fabric (completions, messages, connection
 * events, the publisher's timers) unless the lanes kept the thread busy (a
 * full burst) and the last poll is under BUSY_POLL_NS old. Each poll of
 * libfabric's tcp provider runs its progress (epoll_wait system calls)
 * whatever it finds: at 64 B buffered a poll every 32 chunks made 125-172 K
 * of them a second, 27 % of the publisher thread's samples (issue 17),
 * while a page went out every 30 turns. A turn that found the queues short,
 * or could not send (a pool or the provider's queue empty), polls as before,
 * and an idle thread sleeps on the fabric (sleep_or_wait). */
#define BUSY_POLL_NS (40ull * 1000)

static int progress_after_work(struct publish_thread *th, unsigned work)
{
    if (work >= BURST && th->turn_end_ns - th->last_poll_ns < BUSY_POLL_NS) {
        rci_counter_add(&th->polls_deferred, 1);
        return 0;
    }
    th->last_poll_ns = th->turn_end_ns;
    return rci_publisher_progress(th->pub);
}

void *rci_publish_thread_main(void *arg)
{
    struct publish_thread *th = arg;
    struct rci_pipeline *pb = th->pb;
    rci_sub_table_register_thread();
    th->last_stats_ns = rci_now_ns();
    uint64_t hang_at = pb->params.fault_hang_after_ns && th->index == 0 ?
                       th->last_stats_ns + pb->params.fault_hang_after_ns : UINT64_MAX;
    while (!atomic_load_explicit(&pb->stop, memory_order_acquire)) {
        rci_counter_add(&th->heartbeat, 1);
        serve_control(th);
        uint64_t interval = th->live.stats_interval_ns;
        unsigned work = drain_backlogs(th);
        for (unsigned i = 0; i < pb->ncards; i++) {
            work += pump_lane(th, &pb->cards[i].lanes[th->index]);
            work += rci_stream_pump(th, &pb->cards[i]);
        }
        int rc = work ? progress_after_work(th, work) : sleep_or_wait(th, hang_at);
        if (rc < 0 && !th->fabric_failed) {
            th->fabric_failed = true;
            pl_error(th->pb, "publisher %u: the fabric failed: %s (%s)", th->index, strerror(-rc),
                     rci_publisher_last_error(th->pub));
        }
        uint64_t now = rci_now_ns();
        th->turn_end_ns = now;
        if (now >= hang_at)
            hang_for_test(th);
        cut_stalled(th, now);
        if (interval && now - th->last_stats_ns >= interval)
            log_thread_stats(th, now);
        log_new_refusals(th, now);
        view_refresh(th, now, false);
    }
    publisher_finish(th);
    rci_sub_table_unregister_thread();
    return NULL;
}

/* ---- life cycle (main thread) --------------------------------------------- */

static int create_tokens(struct publish_thread *th, const struct rci_fabric_params *fp)
{
    /* Zero-copy shares outstanding are bounded by the header slots (buffered
     * ones give their token back before the send returns). */
    th->ntokens = fp->header_slots + 1;
    th->tokens = calloc(th->ntokens, sizeof *th->tokens);
    if (!th->tokens)
        return -ENOMEM;
    for (uint32_t i = 0; i < th->ntokens; i++)
        th->tokens[i].next_free = i + 1 < th->ntokens ? i + 1 : UINT32_MAX;
    th->free_token = 0;
    /* A subscriber with this many shares outstanding holds all it may: at
     * most a quarter of the header slots and half the provider's tx queue.
     * The publisher bounds what one subscriber holds more finely (a share
     * may be several fragments): its fair share of the header slots, pages
     * and tx queue, refused with -ENOBUFS. Either way behind_at_limit()
     * decides between waiting a moment and dropping. */
    uint32_t limit = fp->header_slots / 4;
    if (limit > fp->tx_queue / 2)
        limit = fp->tx_queue / 2;
    th->sub_send_limit = limit ? limit : 1;
    return 0;
}

/* Thread index's records and its publisher, listening on fabric.port + index. */
int rci_publish_thread_init(struct publish_thread *th, struct rci_pipeline *pb, unsigned index,
                           char *err, size_t errlen)
{
    const struct rci_fabric_params *fp = &pb->params.fabric;
    th->pb = pb;
    th->index = index;
    th->port = (uint16_t)(fp->port + index);
    th->nsubs_max = fp->max_subscribers < MAX_SUBS ? fp->max_subscribers : MAX_SUBS;
    th->subs = calloc(th->nsubs_max, sizeof *th->subs);
    th->slot_gen = calloc(th->nsubs_max, sizeof *th->slot_gen);
    th->departed = calloc(MAX_DEPARTED, sizeof *th->departed);
    th->view.cap = th->nsubs_max + MAX_DEPARTED;
    th->view.subs = calloc(th->view.cap, sizeof *th->view.subs);
    th->ssubs = calloc(th->nsubs_max, sizeof *th->ssubs);
    pthread_mutex_init(&th->view.lock, NULL);
    th->view_ready = true;
    th->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (th->doorbell_fd < 0)   /* the thread then waits as before: at most IDLE_WAIT_NS */
        pl_warn(pb, "publisher %u: no doorbell (eventfd: %s): its idle waits stay short", index, strerror(errno));
    /* Block backlogs, allocated once (pipeline/share_backlog.h). */
    th->backlog_cap = pb->params.block_backlog;
    if (th->backlog_cap)
        th->backlog_store = calloc((size_t)th->nsubs_max * th->backlog_cap, sizeof *th->backlog_store);
    if (th->backlog_cap && !th->backlog_store) {
        rci_set_err(err, errlen, "publisher %u: out of memory for block backlogs (%u subscribers x "
                    "block_backlog = %u shares of %zu bytes)", index, th->nsubs_max, th->backlog_cap,
                    sizeof *th->backlog_store);
        return -ENOMEM;
    }
    if (!th->subs || !th->slot_gen || !th->departed || !th->view.subs || !th->ssubs || create_tokens(th, fp) != 0) {
        rci_set_err(err, errlen, "publisher %u: out of memory", index);
        return -ENOMEM;
    }
    rci_publish_live_from_params(pb, &pb->params, pb->modes, pb->nmodes, &th->live);
    struct rci_fabric_params own = *fp;
    own.port = th->port;
    own.peer_fair_share = true;   /* README.md, "Slow subscribers" */
    struct rci_publisher_callbacks cb = {
        .on_send_complete = on_send_complete, .on_peer_event = on_peer_event, .arg = th, .log = pb->params.log};
    return rci_publisher_create(&own, &cb, &th->pub, err, errlen);
}

/* After the thread ended (or never started). */
void rci_publish_thread_fini(struct publish_thread *th)
{
    if (th->pub)
        rci_publisher_destroy(th->pub);
    th->pub = NULL;
    for (uint32_t i = 0; th->subs && i < th->nsubs_max; i++)
        free(th->subs[i].ranges);
    free(th->subs);
    free(th->ssubs);
    th->ssubs = NULL;
    free(th->slot_gen);
    free(th->departed);
    if (th->view_ready)
        pthread_mutex_destroy(&th->view.lock);
    th->view_ready = false;
    free(th->view.subs);
    th->view.subs = NULL;
    free(th->tokens);
    free(th->backlog_store);
    th->backlog_store = NULL;
    free(th->iov);
    if (th->doorbell_fd >= 0)
        close(th->doorbell_fd);
    th->doorbell_fd = -1;
}
