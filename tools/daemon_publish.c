/* daemon_publish.c — readout threads -> chunk queues -> the publisher thread
 * -> subscribers, with fan-out, slow-subscriber policies and statistics.
 * The flow and the thread rules are in daemon_publish.h. */
#include "tools/daemon_publish.h"
#include "dma/monotonic.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/publisher.h"
#include "net/sub_table.h"
#include "readout/chunk_queue.h"
#include "readout/dpdk_env.h"
#include "readout/fanout.h"
#include "tools/log.h"

/* Subscription-table ids: [31:12] generation of the slot, [11:0] slot. The
 * generation keeps a chunk looked up for a subscriber that left from going
 * to the next subscriber of the same slot. max_subscribers is at most 4096. */
#define SUB_SLOT_BITS   12u
#define SUB_SLOT_MASK   ((1u << SUB_SLOT_BITS) - 1u)
#define MAX_SUBS        (1u << SUB_SLOT_BITS)
#define BURST           32u
#define IDLE_WAIT_NS    (200ull * 1000)
#define FLUSH_WAIT_NS   (1000ull * 1000 * 1000)
#define MAX_DEPARTED    1024u   /* subscribers that left, kept for the final statistics */

struct sub_counters {
    uint64_t chunks_sent, bytes_sent;   /* shares completed ok */
    uint64_t chunks_dropped;            /* policy drop */
    uint64_t chunks_failed;             /* refused or completed in error */
    uint64_t shares_unsent;             /* looked up for it, it had left before the send */
};

/* A subscriber known to the publisher thread (only that thread touches it
 * while it runs; the main thread reads after the join). */
struct pub_sub {
    bool in_use;
    rc_peer_id peer;
    uint32_t table_id;
    char name[112];
    struct rc_wire_range *ranges;       /* what the table holds for it */
    uint32_t nranges;
    uint32_t outstanding;               /* zero-copy shares posted, not completed */
    bool page_filling;                  /* buffered records may wait in its page */
    struct sub_counters c;
    uint64_t last_sent;                 /* for the interval rate */
};

struct sub_record {
    rc_peer_id peer;
    char name[112];
    struct sub_counters c;
};

/* One posted share: the publisher's key for it is the token's index. */
struct send_token {
    uint64_t handle;                    /* fan-out handle of the share */
    struct rc_publish_card *card;
    uint32_t sub_slot, table_id, bytes;
    uint32_t next_free;
};

struct rc_publish_card {
    struct rc_daemon_publish *pb;
    unsigned index;
    struct rc_readout *readout;
    struct rc_chunk_queue *queue;
    struct rc_fanout *fanout;
    /* Written by the card's readout thread. */
    _Atomic uint64_t no_subscriber, queue_full;
    /* Publisher thread: the chunk being sent and what is queued behind it. */
    const struct rc_chunk *batch[BURST];
    unsigned batch_pos, batch_len;
    const struct rc_chunk *cur;
    bool cur_begun;
    uint64_t cur_first;                 /* fan-out handle of share 0 */
    uint32_t cur_k, cur_next;           /* shares, next share to send */
    bool cur_buffered;                  /* its send mode, decided once when it is begun */
    uint32_t cur_subs[RC_FANOUT_MAX_SENDS];
};

/* How the chunks of a tag range are sent: [mode.N], then [readout] as the
 * rule that holds every tag. Copied out of the configuration so that the
 * per-chunk scan reads a few contiguous cache lines. */
struct mode_range {
    uint64_t first, last;
    uint64_t buffered_threshold;
    int mode;                           /* enum rc_publish_mode */
};

/* Totals changed by the publisher thread, read by others. */
struct pub_totals {
    _Atomic uint64_t no_subscriber, published, shares, sent, bytes_sent, dropped, failed,
        unsent, blocked, overflow, table_errors, abandoned;
};

struct rc_daemon_publish {
    const struct rc_config *cfg;
    struct rc_publisher *pub;
    struct rc_sub_table *table;
    struct rc_publish_card cards[RC_MAX_CARDS];
    unsigned ncards;
    uint32_t max_pieces;
    struct iovec *iov;                  /* max_pieces entries, publisher thread */

    struct pub_sub subs[MAX_SUBS];
    uint32_t nsubs_max, next_slot;
    uint32_t slot_gen[MAX_SUBS];
    struct sub_record *departed;
    uint32_t ndeparted;
    uint64_t departed_untracked;
    _Atomic unsigned subscribed;

    struct send_token *tokens;
    uint32_t ntokens, free_token;
    uint32_t sub_send_limit;            /* zero-copy shares outstanding per subscriber */

    /* [mode.0] .. [mode.n-1], then the global mode with the full tag range. */
    struct mode_range modes[RC_MAX_MODE_RULES + 1];
    unsigned nmodes;                    /* including the global one */

    struct pub_totals t;
    uint64_t last_stats_ns, last_sent_total, last_bytes_total;
    struct rc_publisher_stats final_stats;
    pthread_t thread;
    bool thread_started;
    uint64_t linger_ns;                 /* set before stop */
    atomic_bool stop;
    bool fabric_failed;
};

static void bump(_Atomic uint64_t *x, uint64_t n)
{
    atomic_fetch_add_explicit(x, n, memory_order_relaxed);
}

static uint64_t get(const _Atomic uint64_t *x)
{
    return atomic_load_explicit(x, memory_order_relaxed);
}

/* ---- readout side -------------------------------------------------------- */

/* A readout thread must be a registered RCU reader before its first lookup
 * and unregistered before it exits (an exited, still registered thread would
 * be read by the next grace period). The readout threads are not ours, so the
 * registration is made on the first chunk and undone by a thread-exit
 * destructor. */
static pthread_key_t rcu_reader_key;
static pthread_once_t rcu_reader_once = PTHREAD_ONCE_INIT;
static __thread bool rcu_reader_registered;

static void rcu_reader_exit(void *unused)
{
    (void)unused;
    rc_sub_table_unregister_thread();
}

static void rcu_reader_key_create(void)
{
    pthread_key_create(&rcu_reader_key, rcu_reader_exit);
}

static void ensure_rcu_reader(void)
{
    if (rcu_reader_registered)
        return;
    pthread_once(&rcu_reader_once, rcu_reader_key_create);
    rc_sub_table_register_thread();
    pthread_setspecific(rcu_reader_key, &rcu_reader_registered);
    rcu_reader_registered = true;
}

int rc_daemon_publish_sink(void *ctx, const struct rc_chunk *chunk)
{
    struct rc_publish_card *c = ctx;
    ensure_rcu_reader();
    uint32_t ids[RC_FANOUT_MAX_SENDS]; /* only whether there is one matters here */
    if (rc_sub_table_lookup(c->pb->table, chunk->tag, ids, RC_FANOUT_MAX_SENDS) == 0) {
        bump(&c->no_subscriber, 1);
        rc_readout_release(c->readout, chunk->key);
        return 0;
    }
    if (rc_chunk_queue_enqueue(c->queue, &chunk, 1) == 1)
        return 0;
    /* The publisher is behind. The readout thread will offer the chunk again
     * at once; give the core to the publisher meanwhile (only on this
     * backpressure path: a machine with fewer cores than busy threads would
     * otherwise spend its time re-offering chunks). */
    bump(&c->queue_full, 1);
    sched_yield();
    return -EAGAIN;
}

/* ---- subscribers (publisher thread) --------------------------------------- */

static struct pub_sub *sub_of_peer(struct rc_daemon_publish *pb, rc_peer_id peer)
{
    for (uint32_t i = 0; i < pb->nsubs_max; i++)
        if (pb->subs[i].in_use && pb->subs[i].peer == peer)
            return &pb->subs[i];
    return NULL;
}

static struct pub_sub *sub_of_table_id(struct rc_daemon_publish *pb, uint32_t id)
{
    uint32_t slot = id & SUB_SLOT_MASK;
    if (slot >= pb->nsubs_max)
        return NULL;
    struct pub_sub *s = &pb->subs[slot];
    return s->in_use && s->table_id == id ? s : NULL;
}

static void update_subscribed(struct rc_daemon_publish *pb)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < pb->nsubs_max; i++)
        n += pb->subs[i].in_use && pb->subs[i].nranges > 0;
    atomic_store_explicit(&pb->subscribed, n, memory_order_release);
}

static void sub_join(struct rc_daemon_publish *pb, rc_peer_id peer)
{
    for (uint32_t n = 0; n < pb->nsubs_max; n++) {
        uint32_t slot = (pb->next_slot + n) % pb->nsubs_max;
        struct pub_sub *s = &pb->subs[slot];
        if (s->in_use)
            continue;
        memset(s, 0, sizeof *s);
        s->in_use = true;
        s->peer = peer;
        pb->slot_gen[slot] = (pb->slot_gen[slot] + 1) & ((1u << (32 - SUB_SLOT_BITS)) - 1);
        s->table_id = (pb->slot_gen[slot] << SUB_SLOT_BITS) | slot;
        snprintf(s->name, sizeof s->name, "%s", rc_publisher_peer_name(pb->pub, peer));
        pb->next_slot = (slot + 1) % pb->nsubs_max;
        rc_info("subscriber %s joined", s->name);
        return;
    }
    /* The publisher admits at most max_subscribers, which is nsubs_max. */
    rc_warn("subscriber %s: no free subscriber record", rc_publisher_peer_name(pb->pub, peer));
    rc_publisher_close_peer(pb->pub, peer);
}

static void table_update(struct rc_daemon_publish *pb, struct pub_sub *s, bool add,
                         uint64_t first, uint64_t last)
{
    int rc = add ? rc_sub_table_add(pb->table, s->table_id, first, last)
                 : rc_sub_table_remove(pb->table, s->table_id, first, last);
    if (rc != 0) {
        bump(&pb->t.table_errors, 1);
        rc_warn("subscriber %s: subscription table %s of 0x%" PRIx64 "-0x%" PRIx64 " refused: %s",
                s->name, add ? "add" : "remove", first, last, strerror(-rc));
    }
}

/* Remove from the table what the old set [a, b] holds and the new set does
 * not: the gaps between the new ranges that overlap [a, b]. */
static void remove_uncovered(struct rc_daemon_publish *pb, struct pub_sub *s, uint64_t a, uint64_t b,
                             const struct rc_wire_range *nr, unsigned n)
{
    uint64_t cur = a;
    for (unsigned i = 0; i < n; i++) {
        uint64_t f = nr[i].first, l = nr[i].last;
        if (l < cur)
            continue;
        if (f > b)
            break;
        if (f > cur)
            table_update(pb, s, false, cur, f - 1);
        if (l >= b)
            return;
        cur = l + 1;
    }
    table_update(pb, s, false, cur, b);
}

/* Mirror the peer's tag set into the table: add the new set first, then
 * remove what is gone, so that tags in both are never missing in between. */
static void sub_sync_ranges(struct rc_daemon_publish *pb, rc_peer_id peer)
{
    struct pub_sub *s = sub_of_peer(pb, peer);
    if (!s)
        return;
    const struct rc_wire_range *nr;
    unsigned n = rc_publisher_peer_ranges(pb->pub, peer, &nr);
    struct rc_wire_range *copy = NULL;
    if (n > 0) {
        copy = malloc((size_t)n * sizeof *copy);
        if (!copy) {
            bump(&pb->t.table_errors, 1);
            rc_warn("subscriber %s: out of memory for its subscriptions", s->name);
            return;
        }
        memcpy(copy, nr, (size_t)n * sizeof *copy);
    }
    for (unsigned i = 0; i < n; i++)
        table_update(pb, s, true, copy[i].first, copy[i].last);
    for (unsigned i = 0; i < s->nranges; i++)
        remove_uncovered(pb, s, s->ranges[i].first, s->ranges[i].last, copy, n);
    free(s->ranges);
    s->ranges = copy;
    s->nranges = n;
    update_subscribed(pb);
    rc_info("subscriber %s: %u tag range%s subscribed", s->name, n, n == 1 ? "" : "s");
}

static void keep_departed(struct rc_daemon_publish *pb, const struct pub_sub *s)
{
    if (pb->ndeparted == MAX_DEPARTED) {
        pb->departed_untracked++;
        return;
    }
    struct sub_record *r = &pb->departed[pb->ndeparted++];
    r->peer = s->peer;
    memcpy(r->name, s->name, sizeof r->name);
    r->c = s->c;
}

static void sub_leave(struct rc_daemon_publish *pb, rc_peer_id peer)
{
    struct pub_sub *s = sub_of_peer(pb, peer);
    if (!s)
        return;
    int rc = rc_sub_table_remove_subscriber(pb->table, s->table_id);
    if (rc != 0) {
        bump(&pb->t.table_errors, 1);
        rc_warn("subscriber %s: removing it from the table failed: %s", s->name, strerror(-rc));
    }
    rc_info("subscriber %s left: sent %" PRIu64 ", dropped %" PRIu64 ", failed %" PRIu64, s->name,
            s->c.chunks_sent, s->c.chunks_dropped, s->c.chunks_failed);
    keep_departed(pb, s);
    free(s->ranges);
    s->ranges = NULL;
    s->nranges = 0;
    s->in_use = false;
    update_subscribed(pb);
}

/* Runs inside rc_publisher_progress; the getters used here only read. */
static void on_peer_event(void *arg, rc_peer_id peer, enum rc_pub_peer_event ev)
{
    struct rc_daemon_publish *pb = arg;
    switch (ev) {
    case RC_PUB_PEER_JOINED: sub_join(pb, peer); break;
    case RC_PUB_PEER_SUBSCRIPTIONS: sub_sync_ranges(pb, peer); break;
    case RC_PUB_PEER_GONE: sub_leave(pb, peer); break;
    }
}

/* ---- sends (publisher thread) --------------------------------------------- */

static void share_done(struct rc_publish_card *c, uint64_t first, unsigned i)
{
    rc_fanout_done(c->fanout, rc_fanout_send_handle(first, i));
}

static void on_send_complete(void *arg, uint64_t key, int status)
{
    struct rc_daemon_publish *pb = arg;
    if (key >= pb->ntokens)
        return; /* never: keys are our token indices */
    struct send_token *tok = &pb->tokens[key];
    struct pub_sub *s = sub_of_table_id(pb, tok->table_id);
    if (status == 0) {
        bump(&pb->t.sent, 1);
        bump(&pb->t.bytes_sent, tok->bytes);
    } else {
        bump(&pb->t.failed, 1);
    }
    if (s) {
        if (status == 0) {
            s->c.chunks_sent++;
            s->c.bytes_sent += tok->bytes;
        } else {
            s->c.chunks_failed++;
        }
        s->outstanding--;
    }
    rc_fanout_done(tok->card->fanout, tok->handle);
    tok->next_free = pb->free_token;
    pb->free_token = (uint32_t)key;
}

static unsigned build_iov(struct rc_daemon_publish *pb, const struct rc_chunk *chunk)
{
    unsigned n = chunk->npieces < pb->max_pieces ? chunk->npieces : pb->max_pieces;
    for (unsigned i = 0; i < n; i++) {
        pb->iov[i].iov_base = (void *)chunk->pieces[i].addr;
        pb->iov[i].iov_len = chunk->pieces[i].len;
    }
    return n;
}

/* The first rule whose range holds the tag decides (at most 17 compares;
 * the last rule holds every tag). */
static bool use_buffered(const struct rc_daemon_publish *pb, const struct rc_chunk *chunk)
{
    const struct mode_range *m = pb->modes;
    while (chunk->tag < m->first || chunk->tag > m->last)
        m++;
    switch (m->mode) {
    case RC_MODE_BUFFERED: return true;
    case RC_MODE_AUTO: return chunk->length < m->buffered_threshold;
    default: return false;
    }
}

static int post_share(struct rc_daemon_publish *pb, struct rc_publish_card *c, struct pub_sub *s,
                      uint32_t tok_index)
{
    const struct rc_chunk *chunk = c->cur;
    unsigned n = build_iov(pb, chunk);
    int rc = -EMSGSIZE;
    if (c->cur_buffered) {
        rc = rc_publisher_send_buffered(pb->pub, s->peer, chunk->tag, chunk->flags, pb->iov, n,
                                        tok_index);
        s->page_filling |= rc == 0;
    }
    if (rc != -EMSGSIZE)
        return rc;
    /* Zero copy (or a record larger than a page). Records waiting in the
     * subscriber's page go first: each tag's chunks must arrive in order. */
    if (s->page_filling) {
        rc = rc_publisher_flush(pb->pub, s->peer);
        if (rc != 0)
            return rc;
        s->page_filling = false;
    }
    return rc_publisher_send(pb->pub, s->peer, chunk->tag, chunk->flags, pb->iov, n, tok_index);
}

/* Send share i of the current chunk. 0: posted (it completes through
 * on_send_complete); -ENOTCONN: its subscriber left; -EAGAIN: that
 * subscriber is behind (sub_send_limit shares outstanding); -EBUSY: the
 * publisher said -EAGAIN (header slots, pages, the provider's queue):
 * a moment's congestion, wait; other: refused. Only on 0 does the share
 * belong to the publisher. */
static int send_share(struct rc_daemon_publish *pb, struct rc_publish_card *c, unsigned i)
{
    struct pub_sub *s = sub_of_table_id(pb, c->cur_subs[i]);
    if (!s)
        return -ENOTCONN;
    if (s->outstanding >= pb->sub_send_limit)
        return -EAGAIN;
    if (pb->free_token == UINT32_MAX)
        return -EBUSY;
    uint32_t k = pb->free_token;
    struct send_token *tok = &pb->tokens[k];
    pb->free_token = tok->next_free;
    tok->handle = rc_fanout_send_handle(c->cur_first, i);
    tok->card = c;
    tok->sub_slot = (uint32_t)(s - pb->subs);
    tok->table_id = s->table_id;
    tok->bytes = c->cur->length;
    s->outstanding++;
    int rc = post_share(pb, c, s, k);
    if (rc == 0)
        return 0; /* c->cur may be released already (buffered, last share) */
    s->outstanding--;
    tok->next_free = pb->free_token;
    pb->free_token = k;
    return rc == -EAGAIN ? -EBUSY : rc;
}

/* A share that will not be sent: count it against its subscriber, complete it. */
static void share_not_sent(struct rc_daemon_publish *pb, struct rc_publish_card *c, unsigned i, int why)
{
    struct pub_sub *s = sub_of_table_id(pb, c->cur_subs[i]);
    if (why == -EAGAIN) {
        bump(&pb->t.dropped, 1);
        if (s)
            s->c.chunks_dropped++;
    } else if (why == -ENOTCONN) {
        bump(&pb->t.unsent, 1);
        if (s)
            s->c.shares_unsent++;
    } else {
        bump(&pb->t.failed, 1);
        if (s) {
            s->c.chunks_failed++;
            rc_warn("subscriber %s: send refused: %s (%s)", s->name, strerror(-why),
                    rc_publisher_last_error(pb->pub));
        }
    }
    share_done(c, c->cur_first, i);
}

/* The publisher's lookup defines the chunk's subscribers; the record of k
 * shares is taken before the first send. 1: released at once (nobody),
 * 0: begun, -EAGAIN: no fan-out record free (retry). */
static int begin_chunk(struct rc_daemon_publish *pb, struct rc_publish_card *c)
{
    const struct rc_chunk *chunk = c->cur;
    unsigned found = rc_sub_table_lookup(pb->table, chunk->tag, c->cur_subs, RC_FANOUT_MAX_SENDS);
    if (found > RC_FANOUT_MAX_SENDS) {
        bump(&pb->t.overflow, 1);
        found = RC_FANOUT_MAX_SENDS;
    }
    if (found == 0) {
        bump(&pb->t.no_subscriber, 1);
        rc_readout_release(c->readout, chunk->key);
        return 1;
    }
    if (rc_fanout_begin(c->fanout, chunk->key, found, &c->cur_first) != 0)
        return -EAGAIN;
    c->cur_begun = true;
    c->cur_buffered = use_buffered(pb, chunk);
    c->cur_k = found;
    c->cur_next = 0;
    bump(&pb->t.published, 1);
    bump(&pb->t.shares, found);
    return 0;
}

/* Send the current chunk's remaining shares. 0: every share is posted or
 * settled (the chunk is no longer ours); -EAGAIN: wait and resume here. */
static int advance_chunk(struct rc_daemon_publish *pb, struct rc_publish_card *c)
{
    if (!c->cur_begun) {
        int rc = begin_chunk(pb, c);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
    bool block = pb->cfg->daemon.slow_policy == RC_SLOW_BLOCK;
    while (c->cur_next < c->cur_k) {
        unsigned i = c->cur_next;
        int rc = send_share(pb, c, i);
        if (rc == -EBUSY || (rc == -EAGAIN && block))
            return -EAGAIN;
        if (rc != 0)
            share_not_sent(pb, c, i, rc);
        c->cur_next++;
    }
    return 0;
}

static bool next_chunk(struct rc_publish_card *c)
{
    if (c->batch_pos == c->batch_len) {
        c->batch_len = rc_chunk_queue_dequeue(c->queue, c->batch, BURST);
        c->batch_pos = 0;
        if (c->batch_len == 0)
            return false;
    }
    c->cur = c->batch[c->batch_pos++];
    c->cur_begun = false;
    return true;
}

/* Up to BURST chunks of one card. A chunk that must wait stays current and
 * nothing behind it is taken: the queue fills and the readout waits. */
static unsigned pump_card(struct rc_daemon_publish *pb, struct rc_publish_card *c)
{
    unsigned done = 0;
    while (done < BURST) {
        if (!c->cur && !next_chunk(c))
            break;
        if (advance_chunk(pb, c) != 0) {
            bump(&pb->t.blocked, 1);
            break;
        }
        c->cur = NULL;
        done++;
    }
    return done;
}

/* ---- statistics log (publisher thread) ------------------------------------ */

static void log_publish_stats(struct rc_daemon_publish *pb, uint64_t now)
{
    double dt = (double)(now - pb->last_stats_ns) / 1e9;
    uint64_t sent = get(&pb->t.sent), bytes = get(&pb->t.bytes_sent);
    unsigned queued = 0;
    for (unsigned i = 0; i < pb->ncards; i++)
        queued += rc_chunk_queue_count(pb->cards[i].queue);
    struct rc_publish_totals t;
    rc_daemon_publish_get_totals(pb, &t);
    rc_info("publish: %.3f Mchunk/s %.3f GB/s sent | subscribers %u | sent %" PRIu64 " dropped %" PRIu64
            " failed %" PRIu64 " unsent %" PRIu64 " no-subscriber %" PRIu64 " | queued %u blocked %" PRIu64,
            (double)(sent - pb->last_sent_total) / dt / 1e6, (double)(bytes - pb->last_bytes_total) / dt / 1e9,
            atomic_load(&pb->subscribed), t.chunks_sent, t.chunks_dropped, t.shares_failed, t.shares_unsent,
            t.chunks_no_subscriber, queued, t.blocked);
    pb->last_sent_total = sent;
    pb->last_bytes_total = bytes;
    for (uint32_t i = 0; i < pb->nsubs_max; i++) {
        struct pub_sub *s = &pb->subs[i];
        if (!s->in_use)
            continue;
        rc_info("subscriber %s: %.3f Mchunk/s | sent %" PRIu64 " dropped %" PRIu64 " failed %" PRIu64
                " | outstanding %u", s->name, (double)(s->c.chunks_sent - s->last_sent) / dt / 1e6,
                s->c.chunks_sent, s->c.chunks_dropped, s->c.chunks_failed, s->outstanding);
        s->last_sent = s->c.chunks_sent;
    }
    pb->last_stats_ns = now;
}

/* ---- the publisher thread -------------------------------------------------- */

/* Shutdown: chunks still queued get no more sends; their keys go back. */
static void abandon_queued(struct rc_daemon_publish *pb, struct rc_publish_card *c)
{
    do {
        if (!c->cur)
            continue;
        if (c->cur_begun) {
            for (unsigned i = c->cur_next; i < c->cur_k; i++) {
                bump(&pb->t.unsent, 1);
                share_done(c, c->cur_first, i);
            }
        } else {
            bump(&pb->t.abandoned, 1);
            rc_readout_release(c->readout, c->cur->key);
        }
        c->cur = NULL;
    } while (next_chunk(c));
}

/* Buffered pages still filling hold records whose keys are already back:
 * send them before the publisher goes (bounded wait). */
static void flush_pages(struct rc_daemon_publish *pb)
{
    for (uint32_t i = 0; i < pb->nsubs_max; i++)
        if (pb->subs[i].in_use)
            rc_publisher_flush(pb->pub, pb->subs[i].peer);
    uint64_t deadline = rc_now_ns() + FLUSH_WAIT_NS;
    struct rc_publisher_stats st;
    do {
        if (rc_publisher_wait(pb->pub, IDLE_WAIT_NS) < 0)
            break;
        rc_publisher_get_stats(pb->pub, &st);
    } while ((st.pages_free < st.pages_total || st.slots_free < st.slots_total) && rc_now_ns() < deadline);
}

static unsigned subscribers_connected(const struct rc_daemon_publish *pb)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < pb->nsubs_max; i++)
        n += pb->subs[i].in_use;
    return n;
}

/* Serve until every subscriber has left (BYE, or dead) or linger_ns passed. */
static void linger(struct rc_daemon_publish *pb)
{
    if (pb->linger_ns == 0 || subscribers_connected(pb) == 0)
        return;
    rc_info("waiting up to %.1f s for %u subscriber%s to leave", (double)pb->linger_ns / 1e9,
            subscribers_connected(pb), subscribers_connected(pb) == 1 ? "" : "s");
    uint64_t deadline = rc_now_ns() + pb->linger_ns;
    while (subscribers_connected(pb) > 0 && rc_now_ns() < deadline)
        if (rc_publisher_wait(pb->pub, IDLE_WAIT_NS) < 0)
            break;
}

static void publisher_finish(struct rc_daemon_publish *pb)
{
    for (unsigned i = 0; i < pb->ncards; i++)
        abandon_queued(pb, &pb->cards[i]);
    flush_pages(pb);
    linger(pb);
    rc_publisher_get_stats(pb->pub, &pb->final_stats);
    /* Outstanding sends complete here with -ECANCELED, releasing their keys. */
    rc_publisher_destroy(pb->pub);
    pb->pub = NULL;
}

static void *publisher_thread(void *arg)
{
    struct rc_daemon_publish *pb = arg;
    rc_sub_table_register_thread();
    uint64_t interval = pb->cfg->daemon.stats_interval_ns;
    pb->last_stats_ns = rc_now_ns();
    while (!atomic_load_explicit(&pb->stop, memory_order_acquire)) {
        unsigned work = 0;
        for (unsigned i = 0; i < pb->ncards; i++)
            work += pump_card(pb, &pb->cards[i]);
        int rc = work ? rc_publisher_progress(pb->pub) : rc_publisher_wait(pb->pub, IDLE_WAIT_NS);
        if (rc < 0 && !pb->fabric_failed) {
            pb->fabric_failed = true;
            rc_error("publisher: the fabric failed: %s (%s)", strerror(-rc),
                     rc_publisher_last_error(pb->pub));
        }
        uint64_t now = rc_now_ns();
        if (interval && now - pb->last_stats_ns >= interval)
            log_publish_stats(pb, now);
    }
    publisher_finish(pb);
    rc_sub_table_unregister_thread();
    return NULL;
}

/* ---- life cycle (main thread) --------------------------------------------- */

static const char *mode_name(int mode)
{
    switch (mode) {
    case RC_MODE_BUFFERED: return "buffered";
    case RC_MODE_AUTO: return "auto";
    default: return "zerocopy";
    }
}

static void copy_modes(struct rc_daemon_publish *pb, const struct rc_config *cfg)
{
    for (unsigned i = 0; i < cfg->nmodes && i < RC_MAX_MODE_RULES; i++) {
        const struct rc_mode_rule *r = &cfg->mode_rule[i];
        pb->modes[pb->nmodes++] = (struct mode_range){.first = r->first, .last = r->last,
            .buffered_threshold = r->buffered_threshold, .mode = r->mode};
        rc_info("send mode of tags 0x%" PRIx64 "-0x%" PRIx64 ": %s ([mode.%u])", r->first, r->last,
                mode_name(r->mode), i);
    }
    pb->modes[pb->nmodes++] = (struct mode_range){.first = 0, .last = UINT64_MAX,
        .buffered_threshold = cfg->daemon.buffered_threshold, .mode = cfg->daemon.publish_mode};
}

static int create_tokens(struct rc_daemon_publish *pb)
{
    /* Zero-copy shares outstanding are bounded by the header slots (buffered
     * ones give their token back before the send returns). */
    pb->ntokens = pb->cfg->fabric.header_slots + 1;
    pb->tokens = calloc(pb->ntokens, sizeof *pb->tokens);
    if (!pb->tokens)
        return -ENOMEM;
    for (uint32_t i = 0; i < pb->ntokens; i++)
        pb->tokens[i].next_free = i + 1 < pb->ntokens ? i + 1 : UINT32_MAX;
    pb->free_token = 0;
    /* A subscriber with this many shares outstanding is behind. At most a
     * quarter of the header slots, so a slow one cannot starve the others,
     * and half the provider's tx queue, so that its queue is not full before
     * (a full queue below the limit is congestion, waited out, not a reason
     * to drop). */
    uint32_t limit = pb->cfg->fabric.header_slots / 4;
    if (limit > pb->cfg->fabric.tx_queue / 2)
        limit = pb->cfg->fabric.tx_queue / 2;
    pb->sub_send_limit = limit ? limit : 1;
    return 0;
}

int rc_daemon_publish_create(const struct rc_config *cfg, struct rc_daemon_publish **out, char *err,
                             size_t errlen)
{
    int rc = rc_dpdk_init(err, errlen);
    if (rc != 0)
        return rc;
    struct rc_daemon_publish *pb = calloc(1, sizeof *pb);
    if (!pb)
        return -ENOMEM;
    pb->cfg = cfg;
    copy_modes(pb, cfg);
    pb->nsubs_max = cfg->fabric.max_subscribers < MAX_SUBS ? cfg->fabric.max_subscribers : MAX_SUBS;
    pb->departed = calloc(MAX_DEPARTED, sizeof *pb->departed);
    rc = pb->departed ? create_tokens(pb) : -ENOMEM;
    if (rc == 0) {
        struct rc_sub_table_params tp = {.max_subs_per_tag = RC_FANOUT_MAX_SENDS};
        rc = rc_sub_table_create(&tp, &pb->table, err, errlen);
    }
    if (rc == 0) {
        struct rc_publisher_callbacks cb = {
            .on_send_complete = on_send_complete, .on_peer_event = on_peer_event, .arg = pb};
        rc = rc_publisher_create(&cfg->fabric, &cb, &pb->pub, err, errlen);
    }
    if (rc != 0) {
        if (rc == -ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
        rc_daemon_publish_destroy(pb);
        return rc;
    }
    *out = pb;
    return 0;
}

/* The fan-out's release callback: the last share of a chunk is over. */
static void release_key(void *ctx, uint64_t key)
{
    struct rc_publish_card *c = ctx;
    rc_readout_release(c->readout, key);
}

int rc_daemon_publish_add_card(struct rc_daemon_publish *pb, const struct rc_card_params *cp,
                               struct rc_dma_ring *ring, struct rc_publish_card **sink_ctx, char *err,
                               size_t errlen)
{
    if (pb->ncards == RC_MAX_CARDS)
        return -ENOSPC;
    int rc = rc_publisher_register(pb->pub, rc_dma_ring_addr(ring), rc_dma_ring_size(ring), err, errlen);
    if (rc != 0)
        return rc;
    if (cp->max_chunk_pieces > pb->max_pieces) {
        struct iovec *iov = realloc(pb->iov, cp->max_chunk_pieces * sizeof *iov);
        if (!iov)
            return -ENOMEM;
        pb->iov = iov;
        pb->max_pieces = cp->max_chunk_pieces;
    }
    struct rc_publish_card *c = &pb->cards[pb->ncards];
    memset(c, 0, sizeof *c);
    c->pb = pb;
    c->index = cp->index;
    char name[RC_CHUNK_QUEUE_NAME_MAX + 1];
    snprintf(name, sizeof name, "rc-card%u", cp->index);
    struct rc_chunk_queue_params qp = {.name = name, .capacity = pb->cfg->daemon.queue_size};
    rc = rc_chunk_queue_create(&qp, &c->queue, err, errlen);
    if (rc != 0)
        return rc;
    /* Every chunk in flight may be fanned out: one record per descriptor. */
    uint32_t records = cp->max_chunks_in_flight < RC_FANOUT_MAX_RECORDS ? cp->max_chunks_in_flight
                                                                         : RC_FANOUT_MAX_RECORDS;
    rc = rc_fanout_create(records, release_key, c, &c->fanout, err, errlen);
    if (rc != 0) {
        rc_chunk_queue_destroy(c->queue);
        c->queue = NULL;
        return rc;
    }
    pb->ncards++;
    *sink_ctx = c;
    return 0;
}

void rc_daemon_publish_set_readout(struct rc_publish_card *c, struct rc_readout *r)
{
    c->readout = r;
}

int rc_daemon_publish_start(struct rc_daemon_publish *pb)
{
    int rc = pthread_create(&pb->thread, NULL, publisher_thread, pb);
    if (rc != 0)
        return -rc;
    pb->thread_started = true;
    return 0;
}

unsigned rc_daemon_publish_subscribed(const struct rc_daemon_publish *pb)
{
    return atomic_load_explicit(&pb->subscribed, memory_order_acquire);
}

void rc_daemon_publish_stop(struct rc_daemon_publish *pb, uint64_t linger_ns)
{
    if (!pb || !pb->thread_started)
        return;
    pb->linger_ns = linger_ns; /* read by the thread after it sees stop */
    atomic_store_explicit(&pb->stop, true, memory_order_release);
    pthread_join(pb->thread, NULL);
    pb->thread_started = false;
}

void rc_daemon_publish_destroy(struct rc_daemon_publish *pb)
{
    if (!pb)
        return;
    rc_daemon_publish_stop(pb, 0);
    if (pb->pub)
        rc_publisher_destroy(pb->pub);
    for (unsigned i = 0; i < pb->ncards; i++) {
        rc_chunk_queue_destroy(pb->cards[i].queue);
        rc_fanout_destroy(pb->cards[i].fanout);
    }
    for (uint32_t i = 0; i < MAX_SUBS; i++)
        free(pb->subs[i].ranges);
    if (pb->table)
        rc_sub_table_destroy(pb->table);
    free(pb->departed);
    free(pb->tokens);
    free(pb->iov);
    free(pb);
    /* The rings are gone; the EAL's runtime directory goes with it. */
    rc_dpdk_cleanup();
}

/* ---- figures -------------------------------------------------------------- */

void rc_daemon_publish_get_totals(const struct rc_daemon_publish *pb, struct rc_publish_totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < pb->ncards; i++) {
        t->chunks_no_subscriber += get(&pb->cards[i].no_subscriber);
        t->queue_full += get(&pb->cards[i].queue_full);
    }
    t->chunks_no_subscriber += get(&pb->t.no_subscriber);
    t->chunks_published = get(&pb->t.published);
    t->shares = get(&pb->t.shares);
    t->chunks_sent = get(&pb->t.sent);
    t->bytes_sent = get(&pb->t.bytes_sent);
    t->chunks_dropped = get(&pb->t.dropped);
    t->shares_failed = get(&pb->t.failed);
    t->shares_unsent = get(&pb->t.unsent);
    t->chunks_abandoned = get(&pb->t.abandoned);
    t->blocked = get(&pb->t.blocked);
    t->subscriber_overflow = get(&pb->t.overflow);
    t->table_errors = get(&pb->t.table_errors);
}

/* Addresses come from the provider; escape anything JSON would not take. */
static void write_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void write_sub_json(FILE *f, const char *name, rc_peer_id peer, const struct sub_counters *c,
                           bool active)
{
    fputs("{\"address\":", f);
    write_json_string(f, name);
    fprintf(f,
            ",\"peer\":%" PRIu64 ",\"active\":%s,\"chunks_sent\":%" PRIu64 ",\"bytes_sent\":%" PRIu64
            ",\"chunks_dropped\":%" PRIu64 ",\"chunks_failed\":%" PRIu64 ",\"shares_unsent\":%" PRIu64 "}",
            peer, active ? "true" : "false", c->chunks_sent, c->bytes_sent, c->chunks_dropped,
            c->chunks_failed, c->shares_unsent);
}

void rc_daemon_publish_write_json(const struct rc_daemon_publish *pb, FILE *f)
{
    struct rc_publish_totals t;
    rc_daemon_publish_get_totals(pb, &t);
    fprintf(f,
            ",\"chunks_sent\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"chunks_dropped\":%" PRIu64
            ",\"chunks_no_subscriber\":%" PRIu64 ",\"chunks_published\":%" PRIu64 ",\"shares\":%" PRIu64
            ",\"shares_failed\":%" PRIu64 ",\"shares_unsent\":%" PRIu64 ",\"chunks_abandoned\":%" PRIu64
            ",\"queue_full\":%" PRIu64 ",\"publisher_blocked\":%" PRIu64 ",\"subscriber_overflow\":%" PRIu64
            ",\"table_errors\":%" PRIu64 ",\"subscribers_untracked\":%" PRIu64 ",\"subscribers\":[",
            t.chunks_sent, t.bytes_sent, t.chunks_dropped, t.chunks_no_subscriber, t.chunks_published,
            t.shares, t.shares_failed, t.shares_unsent, t.chunks_abandoned, t.queue_full, t.blocked,
            t.subscriber_overflow, t.table_errors, pb->departed_untracked);
    bool first = true;
    for (uint32_t i = 0; i < pb->ndeparted; i++, first = false) {
        if (!first)
            fputc(',', f);
        write_sub_json(f, pb->departed[i].name, pb->departed[i].peer, &pb->departed[i].c, false);
    }
    for (uint32_t i = 0; i < pb->nsubs_max; i++) {
        if (!pb->subs[i].in_use)
            continue;
        if (!first)
            fputc(',', f);
        first = false;
        write_sub_json(f, pb->subs[i].name, pb->subs[i].peer, &pb->subs[i].c, true);
    }
    const struct rc_publisher_stats *ps = &pb->final_stats;
    fprintf(f,
            "],\"publisher\":{\"sends\":%" PRIu64 ",\"messages\":%" PRIu64 ",\"fragmented_sends\":%" PRIu64
            ",\"again_no_slot\":%" PRIu64 ",\"again_provider\":%" PRIu64 ",\"buffered_records\":%" PRIu64
            ",\"pages_sent\":%" PRIu64 ",\"pages_failed\":%" PRIu64 ",\"connections\":%" PRIu64
            ",\"connections_refused\":%" PRIu64 ",\"peers_closed\":%" PRIu64 ",\"peers_dead\":%" PRIu64
            ",\"keys_released_by_peer_death\":%" PRIu64 ",\"completions_error\":%" PRIu64 "}",
            ps->sends, ps->messages, ps->fragmented_sends, ps->again_no_slot, ps->again_provider,
            ps->buffered_records, ps->pages_sent, ps->pages_failed, ps->connections,
            ps->connections_refused, ps->peers_closed, ps->peers_dead, ps->keys_released_by_peer_death,
            ps->completions_error);
}
