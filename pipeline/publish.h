/* SPDX-License-Identifier: BSD-3-Clause */
/* publish.h — the publishing half of ringcast-readout: readout
 * threads -> per-(card, publisher thread) chunk queues -> publisher threads
 * -> subscribers.
 *
 * Publisher threads ([readout] publisher_threads = P): thread i owns its own
 * net/publisher listening on fabric.port + i (its own endpoint, buffers and
 * registration of every ring). Every port serves every tag; a subscriber
 * connects to one of them. The subscription table (pipeline/sub_table.h) is shared:
 * its ids name the thread that owns the subscriber.
 *
 * Flow of one chunk (readout thread, in the card's sink, which takes the
 * readout's bursts chunk by chunk):
 *   look the tag up in the RCU subscription table (the chunk's one lookup:
 *   it defines the chunk's subscribers);
 *   no subscriber -> the key goes back to the ring at once;
 *   otherwise the chunk, with its key and that thread's subscribers, goes
 *   into the SPSC queue (pipeline/chunk_queue.h) of each thread that has a
 *   subscriber of the tag, or into none: if one of
 *   those queues is full the sink takes no more of the burst (backpressure)
 *   and the readout offers the rest again later. With P > 1 a card-level fan-out
 *   record (pipeline/fanout.h) holds one share per thread it went to; its
 *   last share releases the key.
 * Publisher thread (owns its net/publisher and every callback of it):
 *   takes each chunk of its queues in queue order with the subscribers the
 *   sink found (a subscriber that left since gets nothing: the ids carry a
 *   generation, so a new subscriber in the same slot is not mistaken for
 *   it; one that joined after the lookup gets the chunks looked up after
 *   it joined), begins a
 *   fan-out record with k shares and sends each share zero-copy or buffered
 *   (the mode of the first [mode.N] whose tag range holds the chunk's tag,
 *   else [readout] mode; decided once per chunk); the last completion of the
 *   k releases the key to the ring (P = 1) or completes the thread's share of
 *   the card-level record (P > 1).
 * A subscriber that cannot take a share now (it holds all it may: its
 * outstanding shares at the limit, or its fair share of the publisher's
 * header slots, pages or tx queue, or an RMA ring full of what it has not
 * released): policy block puts the share in that subscriber's backlog
 * (pipeline/share_backlog.h, block_backlog entries) and goes on with the
 * others; its later shares queue behind it, and each turn of the loop sends
 * from the backlogs first. Only when its backlog is full does block keep the
 * chunk and retry it, taking nothing else from that card meanwhile (the
 * thread's queue, the ring fill, the card stalls, and with it the other
 * threads);
 * policy drop counts a drop for that subscriber and goes on, unless it is
 * only a moment behind (its oldest share younger than slow_drop_after / 2:
 * then it is waited for), and also drops while its oldest share is older
 * than slow_drop_after. A subscriber whose oldest share is older than
 * slow_cut_after (drop) or block_cut_after (block, 0 = never) is cut off
 * (rci_publisher_close_peer), counted and logged. Congestion (the publisher
 * says -EAGAIN: header slots, pages, provider queue empty for everyone) and
 * running out of fan-out records always wait. README.md, "Slow subscribers".
 *
 * Threads: create/add_card/start/stop/destroy, log_stats, the getters of
 * final figures and the control calls (reload, list_subscribers, kick) run on
 * the main thread; the sink on each card's readout thread; everything else on
 * the publisher threads. A control call hands its request to each publisher
 * thread (struct ctl_request, live_gen in publish_internal.h), which runs it
 * at the top of its loop, and waits for the answer, bounded.
 */
#ifndef RCI_PIPELINE_PUBLISH_H
#define RCI_PIPELINE_PUBLISH_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pipeline/pipeline_params.h"
#include "dma/dma_ring.h"
#include "readout/readout.h"
#include "net/publisher.h"

struct rci_pipeline;
struct rci_publish_card;

/* Start the EAL (rings), create the subscription table, open the
 * readout.publisher_threads publishers (thread i listening on fabric.port + i;
 * -EINVAL when that passes 65535). 0 or -errno with the reason in err. */
int  rci_pipeline_create(const struct rci_pipeline_params *params, struct rci_pipeline **out,
                              char *err, size_t errlen);
/* Register card n's ring with every publisher, create its queue and fan-out
 * pool per publisher thread (and its card-level pool with several threads).
 * *sink_ctx is what rci_readout_create gets with rci_pipeline_sink. */
int  rci_pipeline_add_card(struct rci_pipeline *pb, const struct rci_card_params *cp,
                                struct rci_dma_ring *ring, struct rci_publish_card **sink_ctx,
                                char *err, size_t errlen);
/* The readout of the card, once created: where keys go back. Registers the
 * readout's spill area (rci_readout_spill_area) with every publisher thread:
 * chunk heads copied out of a full ring are sent from there. 0 or -errno. */
int  rci_pipeline_set_readout(struct rci_publish_card *c, struct rci_readout *r, char *err,
                                   size_t errlen);
/* The readout sink (rci_chunk_sink_fn, a burst), ctx = the card from
 * add_card. It takes the chunks in order up to the first that meets a full
 * queue (or, never expected, no free card-level record) and returns how many. */
unsigned rci_pipeline_sink(void *ctx, const struct rci_chunk *const *chunks, unsigned n);

/* Start the publisher threads. 0 or -errno (stop() joins those started).
 * Every stats interval each logs one line for itself and one per subscriber. */
int  rci_pipeline_start(struct rci_pipeline *pb);
/* Subscribers connected now with a non-empty tag set, all threads (any thread). */
unsigned rci_pipeline_subscribed(const struct rci_pipeline *pb);
/* readout.publisher_threads. */
unsigned rci_pipeline_threads(const struct rci_pipeline *pb);
/* Main thread: one log line of the publishing totals and rates over the last
 * interval_s seconds (the threads log their own lines). */
void rci_pipeline_log_stats(struct rci_pipeline *pb, double interval_s);
/* Stop the publisher threads: chunks still queued get no more sends, buffered
 * pages are flushed (bounded), then for up to linger_ns each thread keeps
 * serving until every subscriber of it has left (a completed send only means
 * the provider has the data: a subscriber still reading it would lose the
 * rest when its connection closes), then its publisher is destroyed
 * (outstanding sends complete with -ECANCELED), so every key is back. Call
 * after the readout threads stopped. */
void rci_pipeline_stop(struct rci_pipeline *pb, uint64_t linger_ns);
/* The same, but a thread whose loop has not turned (its heartbeat) for
 * stuck_after_ns while it is being stopped is abandoned, not joined: a
 * thread inside a libfabric call that never returns (libfabric 1.17's shm
 * spins for ever posting to a peer killed while it held its region lock)
 * would otherwise hang the stop for good. Returns the threads abandoned.
 * An abandoned thread keeps running; its keys stay outstanding and
 * rci_pipeline_destroy then frees nothing (the thread may still touch it):
 * the process should end soon after. stuck_after_ns 0: join for ever. */
unsigned rci_pipeline_stop_bounded(struct rci_pipeline *pb, uint64_t linger_ns, uint64_t stuck_after_ns);
/* Threads rci_pipeline_stop_bounded abandoned (0 before it ran). */
unsigned rci_pipeline_abandoned(const struct rci_pipeline *pb);
/* After stop: free the queues, fan-out pools, the table. NULL is fine.
 * With a thread abandoned it frees nothing (see above). */
void rci_pipeline_destroy(struct rci_pipeline *pb);

/* Publishing totals (any thread, figures read one by one): the sums over the
 * publisher threads, plus the sink's own figures. A chunk queued to several
 * threads is counted by each of them (chunks_queued - chunks_dispatched such
 * extra entries), so at the end chunks_decoded + chunks_queued -
 * chunks_dispatched = chunks_no_subscriber + chunks_published +
 * chunks_abandoned, and per thread chunks_queued = chunks_no_subscriber +
 * chunks_published + chunks_abandoned. */
struct rci_publish_totals {
    uint64_t chunks_no_subscriber;  /* released by the sink, or by a thread that found none of its own */
    uint64_t chunks_published;      /* chunks a thread began with k > 0 shares */
    uint64_t shares;                /* sum of k */
    uint64_t chunks_sent;           /* shares completed ok */
    uint64_t bytes_sent;
    uint64_t chunks_dropped;        /* shares dropped by slow_policy = drop */
    uint64_t shares_failed;         /* shares refused or completed in error (dead subscriber, shutdown) */
    uint64_t shares_unsent;         /* shares not sent: subscriber gone, or queued at shutdown */
    uint64_t chunks_unread_at_leave; /* of chunks_sent: never read by subscribers that left in order
                                      * saying how many they handled (their sum) */
    uint64_t chunks_abandoned;      /* queued at shutdown, given back without a send */
    uint64_t queue_full;            /* sink backpressure: a thread's queue of the card was full */
    uint64_t blocked;               /* times a chunk waited for a subscriber (policy block) or resources */
    uint64_t subscriber_overflow;   /* chunks with over RCI_FANOUT_MAX_SENDS subscribers: extras skipped */
    uint64_t table_errors;          /* subscription-table updates refused */
    uint64_t subscribers_untracked; /* subscribers that left beyond the records kept for the statistics */
    uint64_t chunks_queued;         /* queue entries: one per chunk and thread it went to */
    uint64_t chunks_dispatched;     /* chunks the sink queued (to one thread or more) */
    uint64_t dispatch_errors;       /* enqueues refused after the room check: never expected */
    uint64_t records_exhausted;     /* sink backpressure: no card-level fan-out record free: never expected */
    uint64_t fanout_refused;        /* fan-out completions refused (stale, double, bad): bookkeeping errors */
    uint64_t subscribers_cut_off;   /* cut off by the slow policy's age bound (slow_cut_after, block_cut_after) */
    uint64_t subscribers_kicked;    /* closed by rci_pipeline_kick (ringcast-ctl kick) */
    uint64_t subscribers_cut_by_allow; /* closed by a reload whose allow list excludes them */
    uint64_t doorbell_rings;        /* wake-ups of a sleeping publisher thread (eventfd writes): at
                                     * full rate far fewer than chunks_queued */
    uint64_t fabric_polls_deferred; /* busy loop turns that left the fabric unpolled (polled at most
                                     * every 40 us while the lanes keep the thread busy) */
    uint64_t shares_deferred;       /* block: shares put in their subscriber's backlog (it could not
                                     * take them; the lane went on to the others) */
    uint64_t backlog_full_waits;    /* block: times a full backlog made the lane wait (once per
                                     * subscriber until its backlog moves again) */
    uint64_t shares_deferred_now;   /* in backlogs now (the totals: the sum over threads) */
    uint64_t deferred_high_water;   /* most shares in a thread's backlogs at once (the totals: the
                                     * largest of the threads') */
};
void rci_pipeline_get_totals(const struct rci_pipeline *pb, struct rci_publish_totals *t);

/* ---- control (main thread, while the publisher threads run) ---------------- */

#define RCI_SUB_INFO_RANGES 8u
/* One subscriber as its publisher thread sees it. */
struct rci_sub_info {
    unsigned thread;                /* publisher thread (port fabric.port + thread) */
    char name[112];                 /* its address, "IP:PORT" */
    uint32_t nranges;               /* tag ranges subscribed (the first RCI_SUB_INFO_RANGES below) */
    uint64_t first[RCI_SUB_INFO_RANGES], last[RCI_SUB_INFO_RANGES];
    uint32_t outstanding;           /* backlog: zero-copy shares posted, not completed */
    uint32_t deferred;              /* shares in its block backlog (not posted yet) */
    uint64_t oldest_age_ns;         /* age of its oldest outstanding share */
    uint64_t chunks_sent, bytes_sent, chunks_dropped, chunks_failed;
    bool cut;                       /* cut off or kicked, its GONE not seen yet */
};
/* Every subscriber of every thread, up to max, into out; *n how many.
 * 0, or -ETIMEDOUT when a thread did not answer within timeout_ns (-EBUSY:
 * one still has not answered an earlier request). */
int rci_pipeline_list_subscribers(struct rci_pipeline *pb, struct rci_sub_info *out, unsigned max,
                                  unsigned *n, uint64_t timeout_ns);
/* Close the subscriber named name ("IP:PORT" as listed): BYE, its keys come
 * back as for a cut-off subscriber (counted subscribers_kicked). 0, -ENOENT
 * (no such subscriber), -ETIMEDOUT or -EBUSY as above. */
int rci_pipeline_kick(struct rci_pipeline *pb, const char *name, uint64_t timeout_ns);
/* Take what may change live from p: slow_policy, slow_drop_after,
 * slow_cut_after, block_cut_after, stats_interval, the [mode.N] rules and
 * [readout] mode / buffered_threshold, the fabric allow list. Subscribers
 * the new allow list excludes are closed (subscribers_cut_by_allow). Every
 * thread takes the new values between two chunks. 0, -EINVAL (a bad allow
 * list: nothing changed, reason in err), -ETIMEDOUT / -EBUSY as above (the
 * threads that answered have the new values; the others take them later). */
int rci_pipeline_reload(struct rci_pipeline *pb, const struct rci_pipeline_params *p, char *err,
                        size_t errlen, uint64_t timeout_ns);

/* The sink's figures of one card (the n-th added, 0-based), live:
 * chunks_no_subscriber (released at once), chunks_dispatched,
 * dispatch_errors, records_exhausted and fanout_refused (its card-level
 * records); the other fields 0. */
void rci_pipeline_get_card_totals(const struct rci_pipeline *pb, unsigned card,
                                  struct rci_publish_totals *t);
/* One publisher thread's figures, live (atomics; any thread). */
void rci_pipeline_get_thread_totals(const struct rci_pipeline *pb, unsigned thread,
                                    struct rci_publish_totals *t);
/* Its listening port. */
unsigned rci_pipeline_thread_port(const struct rci_pipeline *pb, unsigned thread);
/* Turns of the thread's loop so far (any thread): it goes round at least
 * every 200 us while it runs, with or without work, so a count that stands
 * still for seconds means the thread is stuck (the systemd watchdog). */
uint64_t rci_pipeline_thread_heartbeat(const struct rci_pipeline *pb, unsigned thread);

/* A subscriber's counters (per publisher thread, in the JSON's "subscribers"). */
struct rci_pipeline_sub_counters {
    uint64_t chunks_sent, bytes_sent;   /* shares completed ok */
    uint64_t chunks_dropped;            /* policy drop, all causes: */
    uint64_t dropped_by_age;            /*   its oldest share was older than slow_drop_after */
    uint64_t dropped_by_quota;          /*   it held its fair share of slots, pages or tx queue */
    uint64_t cut_off;                   /* 1: cut off for an oldest share older than the bound */
    uint64_t cut_off_age_ns;            /* that share's age when it was cut off */
    uint64_t chunks_failed;             /* refused or completed in error */
    uint64_t shares_unsent;             /* looked up for it, it had left before the send */
    uint64_t handled_reported;          /* 1: its BYE said how many chunks it handled (wire version 3) */
    uint64_t chunks_handled;            /* ... that count (0 if it said none) */
    uint64_t chunks_unread_at_leave;    /* chunks_sent - chunks_handled when it left saying the count:
                                         * sent (the provider had them) but never read by it */
    uint64_t shares_deferred;           /* block: shares put in its backlog while it could not take them */
    uint64_t deferred_high_water;       /* the most of them in its backlog at once */
    uint64_t backlog_full_waits;        /* times its full backlog made its lane wait (everyone stalled) */
};

/* A subscriber as another thread sees it: as of its thread's last refresh
 * (at most about 250 ms old while the thread runs; final after stop). */
struct rci_pipeline_sub_view {
    const char *address;
    const char *tags;                   /* subscribed ranges, "0x0-0x7,0x100" ("" none; long lists end "...") */
    uint64_t peer;
    unsigned thread;
    bool active;                        /* connected (false: it left) */
    uint32_t outstanding;               /* zero-copy shares posted, not completed */
    uint32_t deferred;                  /* shares in its block backlog now */
    uint64_t oldest_age_ns;             /* age of its oldest outstanding send */
    struct rci_pipeline_sub_counters c;
};
typedef void (*rci_pipeline_sub_fn)(void *ctx, const struct rci_pipeline_sub_view *s);
/* Any thread: fn for every subscriber seen, per thread those that left, then
 * the connected ones (the JSON's order). fn runs under the thread's view lock,
 * which its publisher thread only try-locks: keep it short. */
void rci_pipeline_for_each_subscriber(const struct rci_pipeline *pb, rci_pipeline_sub_fn fn, void *ctx);
/* Any thread: the fabric layer's counters of publisher thread `thread`, as of
 * its last refresh (final after stop). 0, or -EINVAL for no such thread. */
int rci_pipeline_get_publisher_stats(const struct rci_pipeline *pb, unsigned thread,
                                     struct rci_publisher_stats *s);

/* The fabric layer's main counters (struct rci_publisher_stats) that the JSON's
 * "publisher" objects and the metrics show. */
#define RCI_PUBLISHER_JSON_FIELDS(X)                                                                    \
    X(sends) X(messages) X(fragmented_sends) X(again_no_slot) X(again_provider) X(again_peer_quota) \
    X(buffered_records)                                                                             \
    X(buffered_bytes) X(pages_sent) X(pages_flushed_idle) X(pages_flushed_by_timeout) X(pages_failed) X(again_no_page) X(send_errors)                 \
    X(unregistered_pieces) X(fragment_retry_timeouts) X(stale_completions) X(keys_completed_error) \
    X(connections) X(connections_refused) X(connections_refused_allowlist) X(peers_closed)          \
    X(connections_refused_rx_buffer) X(shm_files_reclaimed) X(half_open_closed_timeout)           \
    X(half_open_closed_cap) X(half_open_closed_eof) X(half_open_closed_allowlist) X(fd_pressure)   \
    X(peers_dead) X(keys_released_by_peer_death) X(drained_peers) X(drain_timeouts) X(drain_no_proof) \
    X(completions_error) X(subscriptions_refused)                                                   \
    X(control_dropped) X(rx_errors) X(connection_errors) X(unknown_sender)                         \
    X(faults_send_error) X(faults_eagain) X(faults_eagain_streaks) X(faults_held) X(fragments_deferred) X(fragments_abandoned)             \
    X(again_resuming) X(gather_sends) X(gather_bytes) X(again_no_bounce) X(bounce_free) X(stall_probes)    \
    X(stalls_provider_held) X(stalls_no_pollout) X(dead_by_provider_stall) X(dead_by_stuck_send) X(liveness_restarts) X(idle_sleeps) X(idle_sleeps_short)                                                      \
    X(rma_subscribers) X(rma_fallbacks) X(rma_refused_region) X(rma_records) X(rma_bytes)         \
    X(rma_again_credit) X(rma_wait_credit) X(rma_credits) X(rma_bad_credits)                       \
    X(stream_subscribers) X(stream_refused) X(stream_spans) X(stream_bytes)

/* After stop: the JSON members "chunks_sent":..., ..., "subscribers":[...],
 * "publisher":{...} (summed over threads), "publishers":[{"thread":i,
 * "port":...,"chunks_sent":...,"publisher":{...}},...] (no braces around, a
 * leading comma). */
void rci_pipeline_write_json(const struct rci_pipeline *pb, FILE *f);

#endif
