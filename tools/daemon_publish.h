/* daemon_publish.h — the publishing half of ringcast-readout: readout
 * threads -> per-card chunk queues -> one publisher thread -> subscribers.
 *
 * Flow of one chunk (readout thread, in the card's sink):
 *   look the tag up in the RCU subscription table (net/sub_table.h);
 *   no subscriber -> the key goes back to the ring at once;
 *   otherwise the chunk pointer goes into the card's SPSC queue
 *   (readout/chunk_queue.h); queue full -> -EAGAIN (backpressure).
 * Publisher thread (owns net/publisher and every callback):
 *   takes each chunk in queue order, looks its subscribers up again (that
 *   lookup defines the set: a subscriber that left meanwhile gets nothing, one
 *   that joined gets the chunk), begins a fan-out record with k shares
 *   (readout/fanout.h) and sends each share zero-copy or buffered (the mode
 *   of the first [mode.N] whose tag range holds the chunk's tag, else
 *   [readout] mode; decided once per chunk); the last completion of the k
 *   releases the key to the ring.
 * A subscriber that cannot take a share now (its outstanding sends at the
 * limit): policy block keeps the chunk and retries it, taking nothing else
 * from that card meanwhile (the queue and then the ring fill, the card
 * stalls); policy drop counts a drop for that subscriber and goes on.
 * Congestion (the publisher says -EAGAIN: header slots, pages, provider
 * queue) and running out of fan-out records always wait.
 *
 * Threads: create/add_card/start/stop/destroy and the getters of final
 * figures run on the main thread; the sink on each card's readout thread;
 * everything else on the publisher thread.
 */
#ifndef RC_DAEMON_PUBLISH_H
#define RC_DAEMON_PUBLISH_H
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "dma/dma_ring.h"
#include "readout/readout.h"

struct rc_daemon_publish;
struct rc_publish_card;

/* Start the EAL (rings), open the publisher (listening on [fabric]), create
 * the subscription table. 0 or -errno with the reason in err. */
int  rc_daemon_publish_create(const struct rc_config *cfg, struct rc_daemon_publish **out,
                              char *err, size_t errlen);
/* Register card n's ring with the publisher, create its queue and fan-out
 * pool. *sink_ctx is what rc_readout_create gets with rc_daemon_publish_sink. */
int  rc_daemon_publish_add_card(struct rc_daemon_publish *pb, const struct rc_card_params *cp,
                                struct rc_dma_ring *ring, struct rc_publish_card **sink_ctx,
                                char *err, size_t errlen);
/* The readout of the card, once created: where keys go back. */
void rc_daemon_publish_set_readout(struct rc_publish_card *c, struct rc_readout *r);
/* The readout sink (rc_chunk_sink_fn), ctx = the card from add_card. */
int  rc_daemon_publish_sink(void *ctx, const struct rc_chunk *chunk);

/* Start the publisher thread. 0 or -errno. Every stats interval it logs one
 * line for publishing and one per subscriber. */
int  rc_daemon_publish_start(struct rc_daemon_publish *pb);
/* Subscribers connected now with a non-empty tag set (any thread). */
unsigned rc_daemon_publish_subscribed(const struct rc_daemon_publish *pb);
/* Stop the publisher thread: chunks still queued get no more sends, buffered
 * pages are flushed (bounded), then for up to linger_ns it keeps serving
 * until every subscriber has left (a completed send only means the provider
 * has the data: a subscriber still reading it would lose the rest when its
 * connection closes), then the publisher is destroyed (outstanding sends
 * complete with -ECANCELED), so every key it held is back. Call after the
 * readout threads stopped. */
void rc_daemon_publish_stop(struct rc_daemon_publish *pb, uint64_t linger_ns);
/* After stop: free the queues, fan-out pools, the table. NULL is fine. */
void rc_daemon_publish_destroy(struct rc_daemon_publish *pb);

/* Publishing totals (any thread, figures read one by one). */
struct rc_publish_totals {
    uint64_t chunks_no_subscriber;  /* released at once by the sink or the publisher */
    uint64_t chunks_published;      /* chunks with k > 0 shares */
    uint64_t shares;                /* sum of k */
    uint64_t chunks_sent;           /* shares completed ok */
    uint64_t bytes_sent;
    uint64_t chunks_dropped;        /* shares dropped by slow_policy = drop */
    uint64_t shares_failed;         /* shares refused or completed in error (dead subscriber, shutdown) */
    uint64_t shares_unsent;         /* shares not sent: subscriber gone, or queued at shutdown */
    uint64_t chunks_abandoned;      /* queued at shutdown, released without a send */
    uint64_t queue_full;            /* sink -EAGAIN: card queue full */
    uint64_t blocked;               /* times a chunk waited for a subscriber (policy block) or resources */
    uint64_t subscriber_overflow;   /* chunks with more subscribers than RC_FANOUT_MAX_SENDS: extras skipped */
    uint64_t table_errors;          /* subscription-table updates refused */
};
void rc_daemon_publish_get_totals(const struct rc_daemon_publish *pb, struct rc_publish_totals *t);

/* After stop: the JSON members "chunks_sent":..., ..., "subscribers":[...],
 * "publisher":{...} (no braces around, a leading comma). */
void rc_daemon_publish_write_json(const struct rc_daemon_publish *pb, FILE *f);

#endif
