/* SPDX-License-Identifier: BSD-3-Clause */
/* publish.c — the publishing half of ringcast-readout: life cycle, the
 * readout threads' sink that hands chunks to the publisher threads, and the
 * figures. The publisher threads are in publish_thread.c; the flow and
 * the thread rules are in publish.h. */
#include "pipeline/publish.h"
#include "pipeline/publish_internal.h"
#include "common/cpus.h"
#include "common/errbuf.h"
#include "common/prefault.h"
#include "common/monotonic.h"
#include "common/thread_watch.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/dpdk_env.h"
#include "net/allow_list.h"

/* ---- readout side ------------------------------------------------------------ */

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
    rci_sub_table_unregister_thread();
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
    rci_sub_table_register_thread();
    pthread_setspecific(rcu_reader_key, &rcu_reader_registered);
    rcu_reader_registered = true;
}

/* The chunk's subscribers: the one lookup per chunk, split by publisher
 * thread (s[t] for thread t). Returns the threads that have one, a bit
 * each. More than RCI_FANOUT_MAX_SENDS subscribers: the first ones get the
 * chunk, the extras are skipped (counted). */
static uint32_t look_up(struct rci_publish_card *c, uint64_t tag, struct lane_subs *s)
{
    uint32_t ids[RCI_FANOUT_MAX_SENDS];
    unsigned found = rci_sub_table_lookup(c->pb->table, tag, ids, RCI_FANOUT_MAX_SENDS);
    if (found > RCI_FANOUT_MAX_SENDS) {
        rci_counter_add(&c->subscriber_overflow, 1);
        found = RCI_FANOUT_MAX_SENDS;
    }
    uint32_t threads = 0;
    for (unsigned i = 0; i < found; i++) {
        unsigned t = sub_id_thread(ids[i]);
        if (t >= c->pb->nthreads)
            continue;   /* never: ids are made by our threads */
        if (!(threads & (1u << t))) {
            threads |= 1u << t;
            s[t].n = 0;
        }
        s[t].ids[s[t].n++] = ids[i];
    }
    return threads;
}

/* Fill the lane's entry of a chunk about to be enqueued: one subscriber in
 * the entry, several in the lane's next side set (producer only). */
static void lane_entry_set(struct publish_lane *lane, struct lane_entry *e, const struct rci_chunk *chunk,
                           uint64_t key, const struct lane_subs *s)
{
    e->chunk = chunk;
    e->key = key;
    e->nsubs = s->n;
    e->sub = s->ids[0];
    if (s->n > 1) {
        memcpy(lane->side[lane->side_head], s->ids, s->n * sizeof s->ids[0]);
        lane->side_head = lane->side_head + 1 == lane->nside ? 0 : lane->side_head + 1;
    }
}

/* The first lane of the set whose queue is full, or NULL. The sink is each
 * queue's only producer, so room seen here is still there at the enqueue
 * (the consumer only makes more): a chunk goes into all its queues or none. */
static struct publish_lane *full_lane(struct rci_publish_card *c, uint32_t threads)
{
    for (uint32_t m = threads; m; m &= m - 1) {
        struct publish_lane *lane = &c->lanes[__builtin_ctz(m)];
        if (rci_chunk_queue_count(lane->queue) >= c->pb->queue_capacity)
            return lane;
    }
    return NULL;
}

/* Enqueue n entries into a lane whose room was counted first, so all fit.
 * Should one not, this thread's share goes back at once (counted) instead of
 * being kept forever. */
static void lane_push_burst(struct publish_lane *lane, const struct lane_entry *e, unsigned n)
{
    unsigned put = rci_chunk_queue_enqueue(lane->queue, e, n);
    rci_counter_add(&lane->produced, put);
    for (unsigned i = n; i-- > put;) {   /* last first: their side sets are the last written */
        rci_counter_add(&lane->card->dispatch_errors, 1);
        if (e[i].nsubs > 1)
            lane->side_head = (lane->side_head == 0 ? lane->nside : lane->side_head) - 1;
        rci_publish_lane_release(lane, e[i].key);
    }
}

/* The publisher threads are behind. The readout thread will offer the rest
 * of the burst again soon; give the core to a publisher meanwhile (only on
 * this backpressure path: a machine with fewer cores than busy threads would
 * otherwise spend its time re-offering chunks). */
static void backpressure(void)
{
    sched_yield();
}

/* One chunk, several publisher threads (one uses sink_one_thread): 0
 * (queued, or released for want of a subscriber) or -EAGAIN; *woke gets the
 * threads it was queued to. */
static int dispatch(struct rci_publish_card *c, const struct rci_chunk *chunk, uint32_t *woke)
{
    struct lane_subs s[RCI_MAX_PUBLISHER_THREADS];
    uint32_t threads = look_up(c, chunk->tag, s);
    if (threads == 0) {
        rci_counter_add(&c->no_subscriber, 1);
        rci_readout_release(c->readout, chunk->key);
        return 0;
    }
    struct publish_lane *full = full_lane(c, threads);
    if (full) {
        rci_counter_add(&full->queue_full, 1);
        return -EAGAIN;
    }
    uint64_t first;
    if (rci_fanout_begin(c->fanout, chunk->key, (unsigned)__builtin_popcount(threads), &first) != 0) {
        rci_counter_add(&c->records_exhausted, 1); /* not expected: see add_card */
        return -EAGAIN;
    }
    unsigned share = 0;
    for (uint32_t m = threads; m; m &= m - 1) {
        unsigned t = (unsigned)__builtin_ctz(m);
        struct lane_entry e;
        lane_entry_set(&c->lanes[t], &e, chunk, rci_fanout_send_handle(first, share++), &s[t]);
        lane_push_burst(&c->lanes[t], &e, 1);
    }
    rci_counter_add(&c->dispatched, 1);
    *woke |= threads;
    return 0;
}

/* One publisher thread (no card-level fan-out): the burst goes into the
 * thread's lane with one look at the queue's room and one enqueue, where
 * dispatch() reads the consumer's position and enqueues once per chunk
 * (cache lines the publisher thread writes on the other core; issue 17,
 * per-chunk cost). Each chunk's subscribers are looked up straight into its
 * lane entry. Returns how many chunks it took, as the sink contract says. */
static unsigned sink_one_thread(struct rci_publish_card *c, const struct rci_chunk *const *chunks, unsigned n)
{
    struct publish_lane *lane = &c->lanes[0];
    struct lane_entry batch[RCI_READOUT_BURST];
    struct lane_subs subs;
    unsigned queued = rci_chunk_queue_count(lane->queue);
    unsigned room = queued < c->pb->queue_capacity ? c->pb->queue_capacity - queued : 0;
    unsigned taken = 0, nbatch = 0;
    if (n > RCI_READOUT_BURST)
        n = RCI_READOUT_BURST;   /* never, by the contract; the rest would be offered again */
    for (; taken < n; taken++) {
        const struct rci_chunk *chunk = chunks[taken];
        if (look_up(c, chunk->tag, &subs) == 0) {
            rci_counter_add(&c->no_subscriber, 1);
            rci_readout_release(c->readout, chunk->key);
            continue;
        }
        if (nbatch == room) {
            rci_counter_add(&lane->queue_full, 1);
            break;
        }
        lane_entry_set(lane, &batch[nbatch++], chunk, chunk->key, &subs);
    }
    if (nbatch > 0) {
        lane_push_burst(lane, batch, nbatch);
        rci_counter_add(&c->dispatched, nbatch);
        rci_publish_thread_wake(&c->pb->threads[0]);
    }
    if (taken < n)
        backpressure();
    return taken;
}

unsigned rci_pipeline_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct rci_publish_card *c = ctx;
    ensure_rcu_reader();
    if (!c->fanout)
        return sink_one_thread(c, chunks, n);
    uint32_t woke = 0;
    unsigned i = 0;
    for (; i < n; i++)
        if (dispatch(c, chunks[i], &woke) != 0)
            break;
    /* Once per burst, never per chunk: a syscall only for a thread asleep. */
    for (uint32_t m = woke; m; m &= m - 1)
        rci_publish_thread_wake(&c->pb->threads[__builtin_ctz(m)]);
    if (i < n)
        backpressure();
    return i;
}

/* ---- life cycle (main thread) --------------------------------------------- */

static const char *mode_name(int mode)
{
    switch (mode) {
    case RCI_MODE_BUFFERED: return "buffered";
    case RCI_MODE_AUTO: return "auto";
    default: return "zerocopy";
    }
}

static void copy_modes(struct rci_pipeline *pb, const struct rci_pipeline_params *params)
{
    for (unsigned i = 0; i < params->nmodes && i < RCI_MAX_MODE_RULES; i++) {
        const struct rci_mode_rule *r = &params->mode_rule[i];
        pb->modes[pb->nmodes++] = (struct mode_range){.first = r->first, .last = r->last,
            .buffered_threshold = r->buffered_threshold, .mode = r->mode};
        pl_info(pb, "send mode of tags 0x%" PRIx64 "-0x%" PRIx64 ": %s ([mode.%u])", r->first, r->last,
                mode_name(r->mode), i);
    }
    pb->modes[pb->nmodes++] = (struct mode_range){.first = 0, .last = UINT64_MAX,
        .buffered_threshold = params->buffered_threshold, .mode = params->publish_mode};
}

/* Thread i listens on fabric.port + i: every one must be a port. (The
 * schema holds publisher_threads to 1..RCI_MAX_PUBLISHER_THREADS and the port
 * to 1..65535, each alone.) */
/* fabric.cpus: the publisher threads' CPUs (config/ checked it at load; an
 * embedding program's params are checked here). */
static int parse_cpus(struct rci_pipeline *pb, char *err, size_t errlen)
{
    const char *cpus = pb->params.fabric.cpus;
    if (!memchr(cpus, '\0', sizeof pb->params.fabric.cpus)) {
        rci_set_err(err, errlen, "fabric.cpus: not a terminated string");
        return -EINVAL;
    }
    if (!cpus[0])
        return 0;
    char why[192];
    if (rci_cpus_parse_allowed(cpus, &pb->cpuset, why, sizeof why) != 0) {
        rci_set_err(err, errlen, "fabric.cpus: %s", why);
        return -EINVAL;
    }
    pb->pinned = true;
    return 0;
}

static int check_ports(const struct rci_pipeline_params *params, char *err, size_t errlen)
{
    unsigned n = params->publisher_threads, last = params->fabric.port + n - 1;
    if (last <= UINT16_MAX)
        return 0;
    rci_set_err(err, errlen, "fabric.port = %u with readout.publisher_threads = %u: thread %u would listen "
               "on port %u, beyond 65535", params->fabric.port, n, n - 1, last);
    return -EINVAL;
}

void rci_publish_live_from_params(const struct rci_pipeline *pb, const struct rci_pipeline_params *p,
                                  const struct mode_range *modes, unsigned nmodes, struct live_params *out)
{
    (void)pb;
    memset(out, 0, sizeof *out);
    out->slow_policy = p->slow_policy;
    out->slow_drop_after_ns = p->slow_drop_after_ns;
    out->slow_cut_after_ns = p->slow_cut_after_ns;
    out->block_cut_after_ns = p->block_cut_after_ns;
    out->stats_interval_ns = p->stats_interval_ns;
    out->nmodes = nmodes;
    memcpy(out->modes, modes, nmodes * sizeof *modes);
    snprintf(out->allow, sizeof out->allow, "%s", p->fabric.allow);
    out->max_subscribers = p->fabric.max_subscribers;
}

int rci_pipeline_create(const struct rci_pipeline_params *params, struct rci_pipeline **out, char *err,
                             size_t errlen)
{
    int rc = check_ports(params, err, errlen);
    if (rc == 0)
        rc = rci_dpdk_init(err, errlen);
    if (rc != 0)
        return rc;
    struct rci_pipeline *pb = calloc(1, sizeof *pb);
    if (!pb)
        return -ENOMEM;
    pb->params = *params;
    pthread_mutex_init(&pb->table_lock, NULL);
    copy_modes(pb, params);
    pb->nthreads = params->publisher_threads;
    pb->all_threads = (1u << pb->nthreads) - 1;
    pb->queue_capacity = params->queue_size;
    for (unsigned i = 0; i < RCI_MAX_PUBLISHER_THREADS; i++)
        pb->threads[i].doorbell_fd = -1;   /* fini closes only what init opened */
    struct rci_sub_table_params tp = {.max_subs_per_tag = RCI_FANOUT_MAX_SENDS};
    rc = parse_cpus(pb, err, errlen);
    if (rc == 0)
        rc = rci_sub_table_create(&tp, &pb->table, err, errlen);
    for (unsigned i = 0; rc == 0 && i < pb->nthreads; i++)
        rc = rci_publish_thread_init(&pb->threads[i], pb, i, err, errlen);
    if (rc != 0) {
        if (rc == -ENOMEM && !err[0])
            rci_set_err(err, errlen, "out of memory");
        rci_pipeline_destroy(pb);
        return rc;
    }
    *out = pb;
    return 0;
}

/* The card-level fan-out's release callback: every thread is done. */
static void release_key(void *ctx, uint64_t key)
{
    struct rci_publish_card *c = ctx;
    rci_readout_release(c->readout, key);
}

static int lane_create(struct rci_publish_card *c, struct publish_thread *th, char *err, size_t errlen)
{
    struct publish_lane *lane = &c->lanes[th->index];
    lane->card = c;
    char name[RCI_CHUNK_QUEUE_NAME_MAX + 1];
    snprintf(name, sizeof name, "rc-card%u-pub%u", c->index, th->index);
    struct rci_chunk_queue_params qp = {.name = name, .capacity = c->pb->queue_capacity,
                                        .elem_size = sizeof(struct lane_entry)};
    int rc = rci_chunk_queue_create(&qp, &lane->queue, err, errlen);
    if (rc != 0)
        return rc;
    lane->nside = c->pb->queue_capacity + BURST;
    lane->side = calloc(lane->nside, sizeof *lane->side);
    if (!lane->side) {
        rci_set_err(err, errlen, "publisher lane %s: cannot allocate %u subscriber sets", name, lane->nside);
        return -ENOMEM;
    }
    rci_prefault(lane->side, (size_t)lane->nside * sizeof *lane->side);
    /* A lane's records in use: its current chunk's, one per chunk with a
     * posted zero-copy share, which holds one of the thread's tokens, and one
     * per chunk deferred in a block backlog: room for one subscriber's full
     * backlog (several holders of different chunks may empty the pool first;
     * then the lane waits, as for a full backlog). */
    return rci_fanout_create(th->ntokens + 1 + th->backlog_cap, rci_publish_lane_release, lane, &lane->fanout,
                             err, errlen);
}

static void card_fini(struct rci_publish_card *c)
{
    for (unsigned t = 0; t < RCI_MAX_PUBLISHER_THREADS; t++) {
        struct publish_lane *lane = &c->lanes[t];
        rci_chunk_queue_destroy(lane->queue);
        rci_fanout_destroy(lane->fanout);
        free(lane->side);
        lane->side = NULL;
        lane->queue = NULL;
        lane->fanout = NULL;
    }
    rci_fanout_destroy(c->fanout);
    c->fanout = NULL;
    rci_stream_card_fini(c);
}

static int register_ring(struct rci_pipeline *pb, const struct rci_card_params *cp,
                         struct rci_dma_ring *ring, char *err, size_t errlen)
{
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct publish_thread *th = &pb->threads[i];
        int rc = rci_publisher_register(th->pub, rci_dma_ring_addr(ring), rci_dma_ring_size(ring), err, errlen);
        if (rc != 0)
            return rc;
        if (cp->max_chunk_pieces > th->max_pieces) {
            struct iovec *iov = realloc(th->iov, cp->max_chunk_pieces * sizeof *iov);
            if (!iov)
                return -ENOMEM;
            th->iov = iov;
            th->max_pieces = cp->max_chunk_pieces;
        }
    }
    return 0;
}

int rci_pipeline_add_card(struct rci_pipeline *pb, const struct rci_card_params *cp,
                               struct rci_dma_ring *ring, struct rci_publish_card **sink_ctx, char *err,
                               size_t errlen)
{
    if (pb->ncards == RCI_MAX_CARDS)
        return -ENOSPC;
    int rc = register_ring(pb, cp, ring, err, errlen);
    if (rc != 0)
        return rc;
    struct rci_publish_card *c = &pb->cards[pb->ncards];
    memset(c, 0, sizeof *c);
    c->pb = pb;
    c->index = cp->index;
    /* Several threads: a record per chunk in flight (one per descriptor),
     * plus one per thread: a thread releases a key a moment before it frees
     * the key's record, and the readout may offer the descriptor anew. */
    uint64_t records = (uint64_t)cp->max_chunks_in_flight + pb->nthreads;
    if (records > RCI_FANOUT_MAX_RECORDS)
        records = RCI_FANOUT_MAX_RECORDS;
    if (pb->nthreads > 1)
        rc = rci_fanout_create((uint32_t)records, release_key, c, &c->fanout, err, errlen);
    for (unsigned t = 0; rc == 0 && t < pb->nthreads; t++)
        rc = lane_create(c, &pb->threads[t], err, errlen);
    if (rc == 0)
        rc = rci_stream_card_init(c, ring, cp, err, errlen);
    if (rc != 0) {
        card_fini(c);
        return rc;
    }
    pb->ncards++;
    *sink_ctx = c;
    return 0;
}

int rci_pipeline_set_readout(struct rci_publish_card *c, struct rci_readout *r, char *err,
                                  size_t errlen)
{
    c->readout = r;
    int trc = rci_stream_set_tap(c);   /* block streams: every block taken goes by the tap */
    if (trc != 0) {
        rci_set_err(err, errlen, "card.%u: the block tap could not be set (%s)", c->index, strerror(-trc));
        return trc;
    }
    void *spill;
    size_t len;
    rci_readout_spill_area(r, &spill, &len);
    for (unsigned i = 0; i < c->pb->nthreads; i++) {
        int rc = rci_publisher_register(c->pb->threads[i].pub, spill, len, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Each thread starts on its CPUs (its first pages land on their node). */
static int start_thread(struct rci_pipeline *pb, struct publish_thread *th)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    int rc = pb->pinned ? pthread_attr_setaffinity_np(&attr, sizeof pb->cpuset, &pb->cpuset) : 0;
    if (rc == 0)
        rc = pthread_create(&th->tid, &attr, rci_publish_thread_main, th);
    pthread_attr_destroy(&attr);
    return rc;
}

int rci_pipeline_start(struct rci_pipeline *pb)
{
    if (pb->pinned) {
        char list[128];
        rci_cpus_format(&pb->cpuset, list, sizeof list);
        pl_info(pb, "publisher threads pinned to CPUs %s (fabric.cpus)", list);
    }
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct publish_thread *th = &pb->threads[i];
        int rc = start_thread(pb, th);
        if (rc != 0)
            return -rc; /* stop() joins those already started */
        th->started = true;
        char name[16]; /* the kernel's limit; i < 16 (the modulo tells the compiler) */
        snprintf(name, sizeof name, "rc-publish%u", i % RCI_MAX_PUBLISHER_THREADS);
        pthread_setname_np(th->tid, name);
    }
    return 0;
}

unsigned rci_pipeline_subscribed(const struct rci_pipeline *pb)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pb->nthreads; i++)
        n += atomic_load_explicit(&pb->threads[i].subscribed, memory_order_acquire);
    return n;
}

unsigned rci_pipeline_threads(const struct rci_pipeline *pb)
{
    return pb->nthreads;
}

static uint64_t thread_heartbeat(const void *ctx)
{
    return rci_counter_get(&((const struct publish_thread *)ctx)->heartbeat);
}

unsigned rci_pipeline_stop_bounded(struct rci_pipeline *pb, uint64_t linger_ns, uint64_t stuck_after_ns)
{
    if (!pb)
        return 0;
    pb->linger_ns = linger_ns; /* read by the threads after they see stop */
    atomic_store_explicit(&pb->stop, true, memory_order_release);
    unsigned abandoned = 0;
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct publish_thread *th = &pb->threads[i];
        if (!th->started || th->abandoned)
            continue;
        rci_publish_thread_wake(th);
        if (rci_thread_join_unless_stuck(th->tid, thread_heartbeat, th, stuck_after_ns)) {
            th->started = false;
            continue;
        }
        th->abandoned = true;
        abandoned++;
        pl_error(pb, "publisher %u: its loop has not turned for %.1f s while stopping: left behind, not joined"
                 " (stuck in a call that does not return; its keys stay outstanding)", i,
                 (double)stuck_after_ns / 1e9);
    }
    return abandoned;
}

void rci_pipeline_stop(struct rci_pipeline *pb, uint64_t linger_ns)
{
    (void)rci_pipeline_stop_bounded(pb, linger_ns, 0);
}

unsigned rci_pipeline_abandoned(const struct rci_pipeline *pb)
{
    unsigned n = 0;
    for (unsigned i = 0; pb && i < pb->nthreads; i++)
        n += pb->threads[i].abandoned;
    return n;
}

void rci_pipeline_destroy(struct rci_pipeline *pb)
{
    if (!pb || rci_pipeline_abandoned(pb))
        return;   /* an abandoned thread may still use all of it */
    rci_pipeline_stop(pb, 0);
    /* Publishers first: destroying one completes its sends into the lanes. */
    for (unsigned i = 0; i < pb->nthreads; i++)
        rci_publish_thread_fini(&pb->threads[i]);
    for (unsigned i = 0; i < pb->ncards; i++)
        card_fini(&pb->cards[i]);
    if (pb->table)
        rci_sub_table_destroy(pb->table);
    pthread_mutex_destroy(&pb->table_lock);
    free(pb);
    /* The rings are gone; the EAL's runtime directory goes with it. */
    rci_dpdk_cleanup();
}

/* ---- figures -------------------------------------------------------------- */

/* Refusals of a fan-out pool: each would be a bookkeeping error. */
static uint64_t fanout_refused(const struct rci_fanout *f)
{
    if (!f)
        return 0;
    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    return s.stale_done + s.double_done + s.bad_handle;
}

/* One thread's figures; the card-level ones (sink) are left 0. */
static void thread_totals(const struct rci_pipeline *pb, const struct publish_thread *th,
                          struct rci_publish_totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < pb->ncards; i++) {
        const struct publish_lane *lane = &pb->cards[i].lanes[th->index];
        t->chunks_queued += rci_counter_get(&lane->produced);
        t->queue_full += rci_counter_get(&lane->queue_full);
        t->fanout_refused += fanout_refused(lane->fanout);
    }
    t->chunks_no_subscriber = rci_counter_get(&th->t.no_subscriber);
    t->chunks_published = rci_counter_get(&th->t.published);
    t->shares = rci_counter_get(&th->t.shares);
    t->chunks_sent = rci_counter_get(&th->t.sent);
    t->bytes_sent = rci_counter_get(&th->t.bytes_sent);
    t->chunks_dropped = rci_counter_get(&th->t.dropped);
    t->shares_failed = rci_counter_get(&th->t.failed);
    t->shares_unsent = rci_counter_get(&th->t.unsent);
    t->chunks_unread_at_leave = rci_counter_get(&th->t.unread_at_leave);
    t->chunks_abandoned = rci_counter_get(&th->t.abandoned);
    t->blocked = rci_counter_get(&th->t.blocked);
    t->table_errors = rci_counter_get(&th->t.table_errors);
    t->subscribers_untracked = rci_counter_get(&th->departed_untracked);
    t->subscribers_cut_off = rci_counter_get(&th->t.cut_off);
    t->subscribers_kicked = rci_counter_get(&th->t.kicked);
    t->subscribers_cut_by_allow = rci_counter_get(&th->t.cut_by_allow);
    t->doorbell_rings = rci_shared_counter_get(&th->doorbell_rings);
    t->fabric_polls_deferred = rci_counter_get(&th->polls_deferred);
    t->shares_deferred = rci_counter_get(&th->t.deferred);
    t->backlog_full_waits = rci_counter_get(&th->t.backlog_full_waits);
    t->shares_deferred_now = rci_counter_get(&th->t.deferred_now);
    t->deferred_high_water = rci_counter_get(&th->t.deferred_high_water);
}

/* Every field of struct rci_publish_totals: a thread's figures add up to the whole. */
#define TOTALS_FIELDS(X)                                                                            \
    X(chunks_no_subscriber) X(chunks_published) X(shares) X(chunks_sent) X(bytes_sent)              \
    X(chunks_dropped) X(shares_failed) X(shares_unsent) X(chunks_unread_at_leave) X(chunks_abandoned) \
    X(queue_full) X(blocked)                                                                        \
    X(subscriber_overflow) X(table_errors) X(subscribers_untracked) X(chunks_queued)                \
    X(chunks_dispatched) X(dispatch_errors) X(records_exhausted) X(fanout_refused) X(subscribers_cut_off) \
    X(subscribers_kicked) X(subscribers_cut_by_allow) X(doorbell_rings) X(fabric_polls_deferred) \
    X(shares_deferred)                                                                              \
    X(backlog_full_waits) X(shares_deferred_now) X(deferred_high_water)
#define COUNT_FIELD(field) +1
_Static_assert(sizeof(struct rci_publish_totals) == (0 TOTALS_FIELDS(COUNT_FIELD)) * sizeof(uint64_t),
               "TOTALS_FIELDS must name every field");
#undef COUNT_FIELD

static void add_totals(struct rci_publish_totals *sum, const struct rci_publish_totals *t)
{
#define ADD_FIELD(field) sum->field += t->field;
    TOTALS_FIELDS(ADD_FIELD)
#undef ADD_FIELD
}

void rci_pipeline_get_totals(const struct rci_pipeline *pb, struct rci_publish_totals *t)
{
    memset(t, 0, sizeof *t);
    uint64_t high_water = 0;
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct rci_publish_totals one;
        thread_totals(pb, &pb->threads[i], &one);
        add_totals(t, &one);
        if (one.deferred_high_water > high_water)
            high_water = one.deferred_high_water;
    }
    t->deferred_high_water = high_water;   /* a high-water mark is not a sum */
    for (unsigned i = 0; i < pb->ncards; i++) {
        const struct rci_publish_card *c = &pb->cards[i];
        t->chunks_no_subscriber += rci_counter_get(&c->no_subscriber);
        t->chunks_dispatched += rci_counter_get(&c->dispatched);
        t->dispatch_errors += rci_counter_get(&c->dispatch_errors);
        t->records_exhausted += rci_counter_get(&c->records_exhausted);
        t->subscriber_overflow += rci_counter_get(&c->subscriber_overflow);
        t->fanout_refused += fanout_refused(c->fanout);
    }
}

void rci_pipeline_get_card_totals(const struct rci_pipeline *pb, unsigned card,
                                  struct rci_publish_totals *t)
{
    memset(t, 0, sizeof *t);
    if (card >= pb->ncards)
        return;
    const struct rci_publish_card *c = &pb->cards[card];
    t->chunks_no_subscriber = rci_counter_get(&c->no_subscriber);
    t->chunks_dispatched = rci_counter_get(&c->dispatched);
    t->dispatch_errors = rci_counter_get(&c->dispatch_errors);
    t->records_exhausted = rci_counter_get(&c->records_exhausted);
    t->fanout_refused = fanout_refused(c->fanout);
}

void rci_pipeline_get_thread_totals(const struct rci_pipeline *pb, unsigned thread,
                                    struct rci_publish_totals *t)
{
    if (thread < pb->nthreads)
        thread_totals(pb, &pb->threads[thread], t);
    else
        memset(t, 0, sizeof *t);
}

unsigned rci_pipeline_thread_port(const struct rci_pipeline *pb, unsigned thread)
{
    return thread < pb->nthreads ? pb->threads[thread].port : 0;
}

uint64_t rci_pipeline_thread_heartbeat(const struct rci_pipeline *pb, unsigned thread)
{
    return thread < pb->nthreads ? rci_counter_get(&pb->threads[thread].heartbeat) : 0;
}

/* The view's lock is the reader's; the thread only try-locks it. */
static pthread_mutex_t *view_lock(const struct publish_thread *th)
{
    return (pthread_mutex_t *)&th->view.lock;
}

void rci_pipeline_for_each_subscriber(const struct rci_pipeline *pb, rci_pipeline_sub_fn fn, void *ctx)
{
    for (int pass = 0; pass < 2; pass++) { /* those that left, then the connected ones */
        for (unsigned t = 0; t < pb->nthreads; t++) {
            const struct publish_thread *th = &pb->threads[t];
            pthread_mutex_lock(view_lock(th));
            for (uint32_t i = 0; i < th->view.nsubs; i++) {
                const struct view_sub *v = &th->view.subs[i];
                if (v->active != (pass == 1))
                    continue;
                struct rci_pipeline_sub_view sv = {.address = v->r.name, .tags = v->r.tags, .peer = v->r.peer,
                    .thread = t, .active = v->active, .outstanding = v->outstanding, .deferred = v->deferred,
                    .oldest_age_ns = v->oldest_age_ns, .c = v->r.c};
                fn(ctx, &sv);
            }
            pthread_mutex_unlock(view_lock(th));
        }
    }
}

int rci_pipeline_get_publisher_stats(const struct rci_pipeline *pb, unsigned thread,
                                     struct rci_publisher_stats *s)
{
    if (thread >= pb->nthreads)
        return -EINVAL;
    const struct publish_thread *th = &pb->threads[thread];
    pthread_mutex_lock(view_lock(th));
    *s = th->view.stats;
    pthread_mutex_unlock(view_lock(th));
    return 0;
}

void rci_pipeline_log_stats(struct rci_pipeline *pb, double interval_s)
{
    struct rci_publish_totals t;
    rci_pipeline_get_totals(pb, &t);
    unsigned queued = 0;
    for (unsigned i = 0; i < pb->ncards; i++)
        for (unsigned k = 0; k < pb->nthreads; k++)
            queued += rci_chunk_queue_count(pb->cards[i].lanes[k].queue);
    double dt = interval_s > 0 ? interval_s : 1.0;
    pl_info_unlimited(pb, "publish: %.3f Mchunk/s %.3f GB/s sent | subscribers %u | sent %" PRIu64 " dropped %" PRIu64
            " failed %" PRIu64 " unsent %" PRIu64 " no-subscriber %" PRIu64 " cut-off %" PRIu64
            " | queued %u blocked %" PRIu64,
            (double)(t.chunks_sent - pb->last_log_sent) / dt / 1e6,
            (double)(t.bytes_sent - pb->last_log_bytes) / dt / 1e9, rci_pipeline_subscribed(pb),
            t.chunks_sent, t.chunks_dropped, t.shares_failed, t.shares_unsent, t.chunks_no_subscriber,
            t.subscribers_cut_off, queued, t.blocked);
    pb->last_log_sent = t.chunks_sent;
    pb->last_log_bytes = t.bytes_sent;
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

static void write_sub_json(FILE *f, const char *name, const char *tags, rci_peer_id peer, unsigned thread,
                           const struct rci_pipeline_sub_counters *c, bool active)
{
    fputs("{\"address\":", f);
    write_json_string(f, name);
    fputs(",\"tags\":", f);
    write_json_string(f, tags);
    fprintf(f,
            ",\"peer\":%" PRIu64 ",\"publisher_thread\":%u,\"active\":%s,\"chunks_sent\":%" PRIu64
            ",\"bytes_sent\":%" PRIu64 ",\"chunks_dropped\":%" PRIu64 ",\"chunks_failed\":%" PRIu64
            ",\"shares_unsent\":%" PRIu64 ",\"dropped_by_age\":%" PRIu64 ",\"dropped_by_quota\":%" PRIu64
            ",\"cut_off\":%" PRIu64 ",\"cut_off_age_ms\":%" PRIu64 ",\"handled_reported\":%s"
            ",\"chunks_handled\":%" PRIu64 ",\"chunks_unread_at_leave\":%" PRIu64
            ",\"shares_deferred\":%" PRIu64 ",\"deferred_high_water\":%" PRIu64 ",\"backlog_full_waits\":%" PRIu64 "}",
            peer, thread, active ? "true" : "false", c->chunks_sent, c->bytes_sent, c->chunks_dropped,
            c->chunks_failed, c->shares_unsent, c->dropped_by_age, c->dropped_by_quota, c->cut_off,
            c->cut_off_age_ns / 1000000u, c->handled_reported ? "true" : "false", c->chunks_handled,
            c->chunks_unread_at_leave, c->shares_deferred, c->deferred_high_water, c->backlog_full_waits);
}

/* Every subscriber seen: per thread those that left (in that order), then the
 * connected ones. */
static void write_subscribers_json(const struct rci_pipeline *pb, FILE *f)
{
    const char *sep = "";
    for (unsigned t = 0; t < pb->nthreads; t++) {
        const struct publish_thread *th = &pb->threads[t];
        for (uint32_t i = 0; i < th->ndeparted; i++, sep = ",") {
            fputs(sep, f);
            write_sub_json(f, th->departed[i].name, th->departed[i].tags, th->departed[i].peer, t, &th->departed[i].c, false);
        }
    }
    for (unsigned t = 0; t < pb->nthreads; t++) {
        const struct publish_thread *th = &pb->threads[t];
        for (uint32_t i = 0; i < th->nsubs_max; i++) {
            if (!th->subs[i].in_use)
                continue;
            fputs(sep, f);
            sep = ",";
            write_sub_json(f, th->subs[i].name, th->subs[i].tags, th->subs[i].peer, t, &th->subs[i].c, true);
        }
    }
}

/* Rejected incoming messages of every kind (stats.malformed[]), summed. */
static uint64_t malformed_total(const struct rci_publisher_stats *s)
{
    uint64_t sum = 0;
    for (unsigned k = 0; k < RCI_WIRE_ERROR_KINDS; k++)
        sum += s->malformed[k];
    return sum;
}

/* The registered pool of the control buffers and pages (net/README.md,
 * "Registered memory"), per class with buffers: "pool_USE_count", "_in_use",
 * "_high_water", "_exhausted", summed over the threads (every thread has the
 * same classes; a sum of high-waters is at least the most held at once). */
static void write_pool_json(FILE *f, const struct publish_thread *threads, unsigned n)
{
    for (unsigned c = 0; n && c < RCI_MEM_CLASSES; c++) {
        const struct rci_mem_class_stats *k0 = &threads[0].final_stats.pool[c];
        if (!k0->count || !k0->use)
            continue;
        uint64_t count = 0, in_use = 0, high_water = 0, exhausted = 0;
        for (unsigned i = 0; i < n; i++) {
            const struct rci_mem_class_stats *k = &threads[i].final_stats.pool[c];
            count += k->count;
            in_use += k->in_use;
            high_water += k->high_water;
            exhausted += k->exhausted;
        }
        fprintf(f, ",\"pool_%s_count\":%" PRIu64 ",\"pool_%s_in_use\":%" PRIu64 ",\"pool_%s_high_water\":%" PRIu64
                ",\"pool_%s_exhausted\":%" PRIu64, k0->use, count, k0->use, in_use, k0->use, high_water, k0->use,
                exhausted);
    }
}

static void write_publisher_json(FILE *f, const struct publish_thread *threads, unsigned n)
{
    const char *sep = "";
    fputc('{', f);
#define WRITE_SUM(field)                                                                            \
    {                                                                                               \
        uint64_t sum = 0;                                                                           \
        for (unsigned i = 0; i < n; i++)                                                            \
            sum += threads[i].final_stats.field;                                                    \
        fprintf(f, "%s\"" #field "\":%" PRIu64, sep, sum);                                          \
        sep = ",";                                                                                  \
    }
    RCI_PUBLISHER_JSON_FIELDS(WRITE_SUM)
#undef WRITE_SUM
    uint64_t malformed = 0;
    for (unsigned i = 0; i < n; i++)
        malformed += malformed_total(&threads[i].final_stats);
    fprintf(f, ",\"malformed_total\":%" PRIu64, malformed);
    write_pool_json(f, threads, n);
    fputc('}', f);
}

/* The counters a thread and the whole have in common, each with a leading comma. */
static void write_totals_json(FILE *f, const struct rci_publish_totals *t)
{
    fprintf(f,
            ",\"chunks_sent\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"chunks_dropped\":%" PRIu64
            ",\"chunks_no_subscriber\":%" PRIu64 ",\"chunks_published\":%" PRIu64 ",\"shares\":%" PRIu64
            ",\"shares_failed\":%" PRIu64 ",\"shares_unsent\":%" PRIu64 ",\"chunks_unread_at_leave\":%" PRIu64
            ",\"chunks_abandoned\":%" PRIu64 ",\"queue_full\":%" PRIu64 ",\"publisher_blocked\":%" PRIu64 ",\"subscriber_overflow\":%" PRIu64
            ",\"table_errors\":%" PRIu64 ",\"subscribers_untracked\":%" PRIu64 ",\"chunks_queued\":%" PRIu64
            ",\"fanout_refused\":%" PRIu64 ",\"subscribers_cut_off\":%" PRIu64
            ",\"subscribers_kicked\":%" PRIu64 ",\"subscribers_cut_by_allow\":%" PRIu64
            ",\"doorbell_rings\":%" PRIu64 ",\"fabric_polls_deferred\":%" PRIu64
            ",\"shares_deferred\":%" PRIu64 ",\"backlog_full_waits\":%" PRIu64,
            t->chunks_sent, t->bytes_sent, t->chunks_dropped, t->chunks_no_subscriber, t->chunks_published,
            t->shares, t->shares_failed, t->shares_unsent, t->chunks_unread_at_leave, t->chunks_abandoned,
            t->queue_full, t->blocked,
            t->subscriber_overflow, t->table_errors, t->subscribers_untracked, t->chunks_queued,
            t->fanout_refused, t->subscribers_cut_off, t->subscribers_kicked, t->subscribers_cut_by_allow,
            t->doorbell_rings, t->fabric_polls_deferred, t->shares_deferred, t->backlog_full_waits);
}

static void write_threads_json(const struct rci_pipeline *pb, FILE *f)
{
    for (unsigned i = 0; i < pb->nthreads; i++) {
        const struct publish_thread *th = &pb->threads[i];
        struct rci_publish_totals t;
        thread_totals(pb, th, &t);
        fprintf(f, "%s{\"thread\":%u,\"port\":%u", i ? "," : "", i, th->port);
        write_totals_json(f, &t);
        /* Gauges of one thread (the JSON's totals have no sum of them). */
        fprintf(f, ",\"shares_deferred_now\":%" PRIu64 ",\"deferred_high_water\":%" PRIu64, t.shares_deferred_now,
                t.deferred_high_water);
        fputs(",\"publisher\":", f);
        write_publisher_json(f, th, 1);
        fputc('}', f);
    }
}

void rci_pipeline_write_json(const struct rci_pipeline *pb, FILE *f)
{
    struct rci_publish_totals t;
    rci_pipeline_get_totals(pb, &t);
    write_totals_json(f, &t);
    fprintf(f, ",\"publisher_threads\":%u,\"chunks_dispatched\":%" PRIu64 ",\"dispatch_errors\":%" PRIu64
            ",\"records_exhausted\":%" PRIu64 ",\"subscribers\":[",
            pb->nthreads, t.chunks_dispatched, t.dispatch_errors, t.records_exhausted);
    write_subscribers_json(pb, f);
    fputs("],\"publisher\":", f);
    write_publisher_json(f, pb->threads, pb->nthreads);
    fputs(",\"publishers\":[", f);
    write_threads_json(pb, f);
    fputs("],", f);
    rci_stream_write_json(pb, f);
}

/* ---- control (main thread) -------------------------------------------------- */

#define CONTROL_POLL_NS 1000000ull

static bool threads_idle(const struct rci_pipeline *pb)
{
    for (unsigned i = 0; i < pb->nthreads; i++) {
        const struct publish_thread *th = &pb->threads[i];
        if (atomic_load_explicit(&th->req.done, memory_order_acquire) !=
                atomic_load_explicit(&th->req.posted, memory_order_relaxed) ||
            atomic_load_explicit(&th->live_acked, memory_order_acquire) !=
                atomic_load_explicit(&pb->live_gen, memory_order_relaxed))
            return false;
    }
    return true;
}

/* Wait until every thread answered (done == posted, live_acked == live_gen). */
static int wait_threads(const struct rci_pipeline *pb, uint64_t timeout_ns)
{
    uint64_t deadline = rci_now_ns() + timeout_ns;
    while (!threads_idle(pb)) {
        if (rci_now_ns() >= deadline)
            return -ETIMEDOUT;
        rci_sleep_ns(CONTROL_POLL_NS);
    }
    return 0;
}

/* Post one request to thread i (the previous one was answered). */
static void post_request(struct publish_thread *th, int op, const char *arg, struct rci_sub_info *out,
                         unsigned max)
{
    struct ctl_request *r = &th->req;
    r->op = op;
    snprintf(r->arg, sizeof r->arg, "%s", arg ? arg : "");
    r->out = out;
    r->max = max;
    r->n = 0;
    r->result = 0;
    atomic_store_explicit(&r->posted, atomic_load_explicit(&r->posted, memory_order_relaxed) + 1,
                          memory_order_release);
    rci_publish_thread_wake(th);
}

int rci_pipeline_list_subscribers(struct rci_pipeline *pb, struct rci_sub_info *out, unsigned max,
                                  unsigned *n, uint64_t timeout_ns)
{
    *n = 0;
    if (!threads_idle(pb))
        return -EBUSY;
    /* Each thread fills its own part of out: at most its nsubs_max. */
    unsigned offset = 0;
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct publish_thread *th = &pb->threads[i];
        unsigned room = max - offset < th->nsubs_max ? max - offset : th->nsubs_max;
        post_request(th, CTL_LIST, NULL, out + offset, room);
        offset += room;
    }
    int rc = wait_threads(pb, timeout_ns);
    if (rc != 0)
        return rc;
    /* Close the gaps between the threads' parts. */
    for (unsigned i = 0; i < pb->nthreads; i++) {
        struct publish_thread *th = &pb->threads[i];
        memmove(out + *n, th->req.out, th->req.n * sizeof *out);
        *n += th->req.n;
    }
    return 0;
}

int rci_pipeline_kick(struct rci_pipeline *pb, const char *name, uint64_t timeout_ns)
{
    if (!threads_idle(pb))
        return -EBUSY;
    for (unsigned i = 0; i < pb->nthreads; i++)
        post_request(&pb->threads[i], CTL_KICK, name, NULL, 0);
    int rc = wait_threads(pb, timeout_ns);
    if (rc != 0)
        return rc;
    for (unsigned i = 0; i < pb->nthreads; i++)
        if (pb->threads[i].req.result == 0)
            return 0;
    return -ENOENT;
}

int rci_pipeline_reload(struct rci_pipeline *pb, const struct rci_pipeline_params *p, char *err,
                        size_t errlen, uint64_t timeout_ns)
{
    struct rci_allow_list list;
    char why[160];
    if (rci_allow_list_parse(p->fabric.allow, &list, why, sizeof why) != 0) {
        rci_set_err(err, errlen, "[fabric] allow: %s", why);
        return -EINVAL;
    }
    if (p->fabric.max_subscribers == 0 || p->fabric.max_subscribers > pb->params.fabric.max_subscribers) {
        rci_set_err(err, errlen, "[fabric] max_subscribers = %u: must be 1 .. %u, the value the publishers started "
                    "with (their buffers are sized for that many; a restart raises it)",
                    p->fabric.max_subscribers, pb->params.fabric.max_subscribers);
        return -EINVAL;
    }
    if (!threads_idle(pb)) {
        rci_set_err(err, errlen, "a publisher thread has not answered the previous request yet");
        return -EBUSY;
    }
    struct mode_range modes[RCI_MAX_MODE_RULES + 1];
    unsigned nmodes = 0;
    for (unsigned i = 0; i < p->nmodes && i < RCI_MAX_MODE_RULES; i++) {
        const struct rci_mode_rule *r = &p->mode_rule[i];
        modes[nmodes++] = (struct mode_range){.first = r->first, .last = r->last,
            .buffered_threshold = r->buffered_threshold, .mode = r->mode};
    }
    modes[nmodes++] = (struct mode_range){.first = 0, .last = UINT64_MAX,
        .buffered_threshold = p->buffered_threshold, .mode = p->publish_mode};
    rci_publish_live_from_params(pb, p, modes, nmodes, &pb->pending);
    atomic_store_explicit(&pb->live_gen, atomic_load_explicit(&pb->live_gen, memory_order_relaxed) + 1,
                          memory_order_release);
    for (unsigned i = 0; i < pb->nthreads; i++)
        rci_publish_thread_wake(&pb->threads[i]);
    int rc = wait_threads(pb, timeout_ns);
    if (rc != 0)
        rci_set_err(err, errlen, "a publisher thread did not take the new values within %.1f s",
                    (double)timeout_ns / 1e9);
    return rc;
}
