/* SPDX-License-Identifier: BSD-3-Clause */
/* publish_internal.h — state shared by pipeline/publish.c (life
 * cycle, the readout threads' sink, figures) and pipeline/publish_thread.c
 * (the publisher threads). Not for use elsewhere: the contract is in
 * publish.h.
 *
 * Ownership: a publisher thread owns its struct publish_thread (its
 * rci_publisher, subscribers, tokens) and the consumer half of its lanes; the
 * readout thread of card c owns the producer half of the lanes of card c.
 * Figures others read are atomics. */
#ifndef RCI_PIPELINE_PUBLISH_INTERNAL_H
#define RCI_PIPELINE_PUBLISH_INTERNAL_H
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include "common/cacheline.h"
#include "common/counter.h"
#include "net/publisher.h"
#include "pipeline/sub_table.h"
#include "pipeline/chunk_queue.h"
#include "pipeline/fanout.h"
#include "pipeline/publish.h"
#include "pipeline/share_backlog.h"

/* The pipeline's messages go to the hook of its params (common/log_hook.h). */
#define pl_say(pb, level, unlimited, ...) \
    rci_log_hook_say(&(pb)->params.log, level, unlimited, __FILE__, __LINE__, __VA_ARGS__)
#define pl_error(pb, ...) pl_say(pb, RCI_LOG_ERROR, false, __VA_ARGS__)
#define pl_warn(pb, ...)  pl_say(pb, RCI_LOG_WARN, false, __VA_ARGS__)
#define pl_info(pb, ...)  pl_say(pb, RCI_LOG_INFO, false, __VA_ARGS__)
#define pl_debug(pb, ...) pl_say(pb, RCI_LOG_DEBUG, false, __VA_ARGS__)
#define pl_info_unlimited(pb, ...) pl_say(pb, RCI_LOG_INFO, true, __VA_ARGS__)

/* Subscription-table ids: [31:16] generation of the slot, [15:12] publisher
 * thread, [11:0] slot in that thread's subscriber array. The thread bits let
 * the sink see which threads a tag needs; the generation keeps a chunk looked
 * up for a subscriber that left from going to the next subscriber of the
 * same slot (it would take 65536 joins of that slot while one chunk waits). */
#define SUB_SLOT_BITS    12u
#define SUB_SLOT_MASK    ((1u << SUB_SLOT_BITS) - 1u)
#define SUB_THREAD_SHIFT SUB_SLOT_BITS
#define SUB_THREAD_BITS  4u
#define SUB_GEN_SHIFT    (SUB_SLOT_BITS + SUB_THREAD_BITS)
#define SUB_GEN_MASK     ((1u << (32u - SUB_GEN_SHIFT)) - 1u)
#define MAX_SUBS         (1u << SUB_SLOT_BITS)   /* per publisher thread */
_Static_assert(RCI_MAX_PUBLISHER_THREADS <= (1u << SUB_THREAD_BITS), "thread index must fit a table id");
_Static_assert(RCI_MAX_PUBLISHER_THREADS <= 32u, "thread sets are 32-bit masks");

#define BURST            32u
#define MAX_DEPARTED     1024u   /* per thread: subscribers that left, kept for the final statistics */

static inline unsigned sub_id_thread(uint32_t id)
{
    return (id >> SUB_THREAD_SHIFT) & ((1u << SUB_THREAD_BITS) - 1u);
}

/* A subscriber's counters: struct rci_pipeline_sub_counters (publish.h). */
#define TAGS_TEXT 160u   /* the subscribed ranges as text, for logs, JSON and metrics */

/* A subscriber of one publisher thread (only that thread touches it while
 * it runs; the main thread reads after the join). */
struct pub_sub {
    bool in_use;
    rci_peer_id peer;
    uint32_t table_id;
    char name[112];
    struct rci_wire_range *ranges;       /* what the table holds for it */
    uint32_t nranges;
    uint32_t outstanding;               /* zero-copy shares posted, not completed */
    bool page_filling;                  /* buffered records may wait in its page */
    bool cut;                           /* cut off: closed, waiting for its GONE */
    bool said_bye;                      /* it left in order: shares completing in error are unsent */
    bool stream;                        /* a block-stream subscriber (stream_lane.c): subscribed to
                                         * its card as a whole, no tags */
    char tags[TAGS_TEXT];               /* its ranges as text ("" none) */
    struct rci_pipeline_sub_counters c;
    uint64_t last_sent;                 /* for the interval rate */
    /* Block: shares it could not take, in order (storage: the thread's
     * backlog_store, slot * backlog_cap; set at its join). */
    struct rci_share_backlog backlog;
    bool backlog_full_counted;          /* this wait on its full backlog is counted */
};

/* A block-stream subscriber of one publisher thread (stream_lane.c). */
struct stream_sub {
    bool in_use;
    rci_peer_id peer;
    struct rci_publish_card *card;
    uint32_t outstanding;               /* span writes posted, not completed */
    uint64_t spans, blocks, bytes;      /* written and completed ok */
    uint64_t blocks_dropped;            /* slow_policy = drop: blocks it had no room for */
    bool gap;                           /* blocks it lost since its last span: the next one says so */
    uint64_t spans_failed;              /* writes completed in error (or refused) */
    char name[112];
};

struct sub_record {
    rci_peer_id peer;
    char name[112];
    char tags[TAGS_TEXT];
    struct rci_pipeline_sub_counters c;
};

struct publish_lane;

/* One posted share: the publisher's key for it is the token's index. */
struct send_token {
    uint64_t handle;                    /* fan-out handle of the share in its lane's pool; direct: the key */
    struct publish_lane *lane;
    bool direct;                        /* the chunk's only share on this thread: no fan-out record */
    bool stream;                        /* a block-stream span write (stream_lane.c): lane is unused,
                                         * stream_card and first_block/nblocks say what it holds */
    struct rci_publish_card *stream_card;
    uint32_t first_block, nblocks;
    uint32_t table_id, bytes;
    uint32_t next_free;
};

/* Totals a publisher thread changes, others read (single-writer counters,
 * like every counter of this file: common/counter.h). */
struct pub_totals {
    rci_counter no_subscriber, published, shares, sent, bytes_sent, dropped, failed,
        unsent, unread_at_leave, blocked, table_errors, abandoned, cut_off, kicked, cut_by_allow,
        deferred, backlog_full_waits, deferred_now, deferred_high_water;
};

/* A lane's queue element: the chunk with the key its shares give back when
 * this thread is done with it, and its subscribers on this thread. With one
 * publisher thread the key is the ring key; with several it is this
 * thread's share of the card-level fan-out record (rci_publish_card.fanout),
 * whose last share releases the ring key. The subscribers are the sink's
 * lookup (the only one per chunk), table ids with a generation: one that
 * left before its share is sent is no longer found (sub_of_table_id). */
struct lane_entry {
    const struct rci_chunk *chunk;
    uint64_t key;
    uint32_t nsubs;
    uint32_t sub;                       /* the subscriber when nsubs == 1 */
};
/* 24 bytes: the sink writes and the publisher thread reads each entry on
 * the other core, and rte_ring copies the whole element. With the ids of
 * up to RCI_FANOUT_MAX_SENDS subscribers in it (152 bytes) that copy was
 * most of the enqueue's and the dequeue's time (each 5 % of all samples at
 * 64 B buffered, issue 17). A chunk with several subscribers on one thread
 * keeps their ids in the lane's side store (struct publish_lane). */
_Static_assert(sizeof(struct lane_entry) == 24, "a lane entry is 24 bytes");

/* A chunk's subscribers on one publisher thread, as the sink looked them up. */
struct lane_subs {
    uint32_t n;
    uint32_t ids[RCI_FANOUT_MAX_SENDS];
};

/* The chunks of one card for one publisher thread: an SPSC queue of
 * lane_entry from the card's readout thread. */
struct publish_lane {
    struct rci_publish_card *card;
    struct rci_chunk_queue *queue;
    struct rci_fanout *fanout;           /* this thread's shares of the lane's chunks */
    /* The side store: the subscriber ids of entries with nsubs > 1, in
     * queue order (a FIFO of its own beside the queue: the producer writes
     * an entry's ids before it enqueues the entry, the consumer reads them
     * after it dequeued it). Queue capacity + BURST sets, so that none is
     * written again while its entry is queued or in the consumer's batch. */
    uint32_t (*side)[RCI_FANOUT_MAX_SENDS];
    uint32_t nside;
    /* Producer: the card's readout thread. */
    alignas(RCI_CACHE_LINE) rci_counter produced;   /* entries enqueued so far */
    rci_counter queue_full;             /* times the sink stopped a burst because this queue was full */
    uint32_t side_head;                 /* the next side set to write */
    /* Consumer: the publisher thread. */
    alignas(RCI_CACHE_LINE) struct lane_entry batch[BURST];
    unsigned batch_pos, batch_len;
    uint32_t side_tail;                 /* the next side set to read */
    const struct rci_chunk *cur;         /* the chunk being sent, NULL: none */
    uint64_t cur_key;                   /* what its shares give back */
    bool cur_begun;
    uint64_t cur_first;                 /* fan-out handle of share 0 (not direct) */
    bool cur_direct;                    /* one share: it gives cur_key back itself, no fan-out record */
    uint32_t cur_k, cur_next;           /* shares, next share to send */
    bool cur_buffered;                  /* its send mode, decided once when it is begun */
    bool cur_gather;                    /* mode auto: zero-copy sends may gather-copy it */
    uint32_t cur_nsubs;                 /* its subscribers on this thread (lane_entry) */
    uint32_t cur_subs[RCI_FANOUT_MAX_SENDS];
    bool pumping;                       /* inside pump_lane: keys given back go to `keys` */
    unsigned nkeys;
    uint64_t keys[BURST];               /* given back in one rci_readout_release_burst */
};

/* One card's block stream on one publisher thread (pipeline/stream_lane.c,
 * pipeline/README.md "Block stream"): the card's readout thread (the block
 * tap) queues the index of every block it takes while this thread has
 * stream subscribers of the card; the thread writes spans of ring-adjacent
 * blocks to each of them. */
#define STREAM_HOLD 64u
struct stream_lane {
    struct rci_chunk_queue *queue;      /* uint32_t block indices, capacity >= the ring's blocks */
    alignas(RCI_CACHE_LINE) _Atomic uint32_t subscribers;   /* the thread's stream subscribers of
                                         * the card: the tap queues only while > 0 */
    /* Consumer (the publisher thread). */
    alignas(RCI_CACHE_LINE) uint32_t hold[STREAM_HOLD];   /* dequeued, not yet in a span */
    unsigned hold_pos, hold_len;
    uint16_t *pending;                  /* per ring block: 1 while its span is dispatched, + one per
                                         * span write outstanding; at 0 this thread is done with it */
    uint32_t span_first, span_n;        /* the span being dispatched (span_n 0: none) */
    uint32_t span_next;                 /* next stream-subscriber slot to write it to */
    uint32_t span_part;                 /* blocks of the span already written to that slot (a
                                         * subscriber's writes stay in order: its positions are
                                         * consecutive) */
};

struct rci_publish_card {
    struct rci_pipeline *pb;
    unsigned index;
    struct rci_readout *readout;
    /* Block stream (stream_lane.c): the ring, and per ring block the
     * publisher threads still holding it; the last gives it back to the
     * readout (rci_readout_release_block). */
    uint8_t *ring_base;
    uint32_t block_size, nblocks;
    uint64_t tag_base;
    _Atomic uint8_t *block_threads;
    rci_counter stream_blocks, stream_blocks_unwatched;   /* tapped; of those, with no stream subscriber */
    struct stream_lane streams[RCI_MAX_PUBLISHER_THREADS];
    /* Several publisher threads: one record per chunk with one share per
     * thread it was queued to. NULL with one thread. */
    struct rci_fanout *fanout;
    /* Written by the card's readout thread. */
    rci_counter no_subscriber, dispatched, dispatch_errors, records_exhausted, subscriber_overflow;
    struct publish_lane lanes[RCI_MAX_PUBLISHER_THREADS];
};

/* How the chunks of a tag range are sent: [mode.N], then [readout] as the
 * rule that holds every tag. Copied out of the configuration so that the
 * per-chunk scan reads a few contiguous cache lines. */
struct mode_range {
    uint64_t first, last;
    uint64_t buffered_threshold;
    int mode;                           /* enum rci_publish_mode */
};

/* What a reload may change while the pipeline runs (rci_pipeline_reload):
 * each publisher thread reads its own copy; the main thread writes
 * rci_pipeline.pending and bumps live_gen; a thread takes the new values at
 * the top of its loop (never in the middle of a chunk) and acknowledges. */
struct live_params {
    int slow_policy;                    /* enum rci_slow_policy */
    uint64_t slow_drop_after_ns, slow_cut_after_ns, block_cut_after_ns;
    uint64_t stats_interval_ns;
    unsigned nmodes;                    /* including the global one */
    struct mode_range modes[RCI_MAX_MODE_RULES + 1];
    char allow[sizeof(((struct rci_fabric_params *)0)->allow)];
    uint32_t max_subscribers;           /* <= the one the publishers were created with */
};

/* A control request to one publisher thread (list its subscribers, close
 * one): the main thread fills it and bumps posted; the thread runs it at the
 * top of its loop and sets done = posted. Never per chunk. */
enum ctl_op { CTL_LIST = 1, CTL_KICK = 2 };
struct ctl_request {
    _Atomic uint64_t posted, done;
    int op;                             /* enum ctl_op */
    char arg[112];                      /* KICK: the subscriber's name (address) */
    struct rci_sub_info *out;           /* LIST: room for max entries; n filled */
    unsigned max, n;
    int result;                         /* KICK: 0 closed, -ENOENT not here */
};

/* A publisher thread's figures for other threads while it runs (metrics):
 * the thread copies them here every VIEW_REFRESH_NS, taking the lock only
 * with trylock (it never waits for a reader), and once more after its end.
 * Subscribers that left are appended once (their records do not change). */
#define VIEW_REFRESH_NS (250ull * 1000 * 1000)
struct view_sub {
    struct sub_record r;
    bool active;
    uint32_t outstanding;
    uint32_t deferred;
    uint64_t oldest_age_ns;
};
struct thread_view {
    pthread_mutex_t lock;
    struct rci_publisher_stats stats;
    struct view_sub *subs;              /* departed first (ndeparted), then the active ones */
    uint32_t ndeparted, nsubs, cap;
    uint64_t refreshed_ns;
};

struct publish_thread {
    struct rci_pipeline *pb;
    unsigned index;
    uint16_t port;                      /* fabric.port + index */
    struct rci_publisher *pub;
    struct iovec *iov;                  /* max_pieces entries */
    uint32_t max_pieces;

    struct pub_sub *subs;               /* nsubs_max entries */
    uint32_t *slot_gen;
    uint32_t nsubs_max, next_slot;
    struct sub_record *departed;
    uint32_t ndeparted;
    rci_counter departed_untracked;
    _Atomic unsigned subscribed, connected;
    unsigned nsubscribed;               /* subscribed, for this thread's own reads */

    bool pages_filling;                 /* some subscriber's page_filling is set */
    struct send_token *tokens;
    uint32_t ntokens, free_token;
    uint32_t sub_send_limit;            /* zero-copy shares outstanding per subscriber */
    /* Block backlogs (pipeline/share_backlog.h): backlog_cap entries per
     * subscriber slot, allocated at init; deferred_now: entries in all of
     * them (0: the per-share check is one compare of this plain field). */
    struct rci_deferred_share *backlog_store;
    uint32_t backlog_cap;
    uint32_t deferred_now;
    enum { BEHIND_LIMIT, BEHIND_AGE, BEHIND_QUOTA } behind;  /* why send_share last said -EAGAIN */
    uint64_t last_stall_check_ns;
    /* Busy turns poll the fabric at most every BUSY_POLL_NS (publish_thread.c,
     * progress_after_work): when the last turn ended, when it last polled,
     * and the busy turns that did not poll. */
    uint64_t turn_end_ns, last_poll_ns;
    rci_counter polls_deferred;

    struct stream_sub *ssubs;           /* nsubs_max entries (block-stream subscribers) */
    uint32_t nssubs;                    /* in use */
    rci_counter stream_spans, stream_bytes, stream_blocks_dropped, stream_spans_failed;

    struct pub_totals t;
    struct live_params live;            /* this thread's copy (see struct live_params) */
    uint64_t live_gen;                  /* the generation live holds */
    _Atomic uint64_t live_acked;        /* published: the generation taken */
    struct ctl_request req;
    uint64_t last_stats_ns, last_sent_total, last_bytes_total;
    uint64_t last_refusal_check_ns, refusals_logged;   /* connections_refused already logged */
    uint64_t fd_pressure_logged, fd_pressure_log_ns;   /* stats.fd_pressure logged, when */
    struct rci_publisher_stats final_stats;
    struct thread_view view;
    bool view_ready;                    /* its lock is initialised */
    rci_counter heartbeat;              /* turns of its loop: the watchdog's sign of life */
    /* The doorbell (pipeline/README.md, "Idle publisher threads"): an
     * eventfd the sinks and the control path write only while the thread
     * sleeps (sleeping set), on the sleeping -> woken edge. */
    int doorbell_fd;                    /* -1: none (eventfd failed; short sleeps then) */
    alignas(RCI_CACHE_LINE) atomic_bool sleeping;
    rci_shared_counter doorbell_rings;  /* eventfd writes (any thread) */
    /* Idle backoff for a provider without a CQ wait fd (shm): the bound of
     * the next idle sleep, and the loop turn the last idle sleep ended in. */
    uint64_t idle_backoff_ns;
    uint64_t idle_backoff_turn;
    pthread_t tid;
    bool started;
    bool abandoned;                     /* stuck at the stop: left running, its memory kept */
    bool fabric_failed;
};

struct rci_pipeline {
    struct rci_pipeline_params params;   /* a copy: the caller's may go */
    struct rci_sub_table *table;
    /* The table takes one updater at a time; the publisher threads update it
     * from their peer events (control path, never per chunk). */
    pthread_mutex_t table_lock;
    struct rci_publish_card cards[RCI_MAX_CARDS];
    unsigned ncards;
    struct publish_thread threads[RCI_MAX_PUBLISHER_THREADS];
    unsigned nthreads;
    uint32_t all_threads;               /* mask with a bit per thread */
    uint32_t queue_capacity;            /* entries of each lane's queue */

    /* [mode.0] .. [mode.n-1], then the global mode with the full tag range. */
    struct mode_range modes[RCI_MAX_MODE_RULES + 1];
    unsigned nmodes;                    /* including the global one */

    /* Reload (main thread writes pending only while every thread has
     * acknowledged the previous generation). */
    struct live_params pending;
    _Atomic uint64_t live_gen;

    uint64_t linger_ns;                 /* set before stop */
    bool pinned;                        /* fabric.cpus given: the threads start on cpuset */
    cpu_set_t cpuset;
    atomic_bool stop;
    /* Main thread: the previous totals for the interval rate of the log. */
    uint64_t last_log_sent, last_log_bytes;
};

/* publish_thread.c */
/* Wake thread th if it sleeps (any thread, after making work visible: the
 * caller's stores are ordered before the flag's load by a full fence). */
void rci_publish_thread_wake(struct publish_thread *th);
void *rci_publish_thread_main(void *arg);
int  rci_publish_thread_init(struct publish_thread *th, struct rci_pipeline *pb, unsigned index,
                            char *err, size_t errlen);
void rci_publish_thread_fini(struct publish_thread *th);
/* The release callback of a lane's fan-out pool; also gives back an entry
 * this thread will not send (no subscriber of its own, shutdown). */
void rci_publish_lane_release(void *lane, uint64_t key);
/* stream_lane.c */
int  rci_stream_card_init(struct rci_publish_card *c, struct rci_dma_ring *ring, const struct rci_card_params *cp,
                          char *err, size_t errlen);
void rci_stream_card_fini(struct rci_publish_card *c);
/* The readout's block tap (rci_readout_set_block_tap) for card c. */
int  rci_stream_set_tap(struct rci_publish_card *c);
/* Publisher thread: a peer joined / left; true when it is a stream subscriber. */
bool rci_stream_join(struct publish_thread *th, rci_peer_id peer);
bool rci_stream_leave(struct publish_thread *th, rci_peer_id peer);
/* Publisher thread: a span write's token came back. */
void rci_stream_token_done(struct publish_thread *th, struct send_token *tok, int status);
/* Publisher thread: write what card c's lane holds; returns the work done. */
unsigned rci_stream_pump(struct publish_thread *th, struct rci_publish_card *c);
/* Publisher thread: blocks queued or a span being dispatched. */
bool rci_stream_holds(const struct publish_thread *th);
/* Publisher thread at its end: every queued block goes back. */
void rci_stream_abandon(struct publish_thread *th);
/* The stream figures as JSON members ("stream": {...}) of the daemon's --stats-json. */
void rci_stream_write_json(const struct rci_pipeline *pb, FILE *f);

/* The live values of the pipeline's parameters (modes from pb->modes). */
void rci_publish_live_from_params(const struct rci_pipeline *pb, const struct rci_pipeline_params *p,
                                  const struct mode_range *modes, unsigned nmodes, struct live_params *out);

#endif
