/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/sub.h — the ringcast subscriber (public API, in libringcast-client
 * and libringcast; it includes only other public ringcast headers and system
 * headers). Overview, lifecycle and threads: API.md, installed next to it.
 *
 * A subscriber connects to one publisher over libfabric (MSG connection or
 * RDM endpoint), says HELLO, subscribes to tag ranges and receives chunks
 * through on_data() or on_view(). It is single-threaded: the application
 * calls rc_sub_poll() in a loop; every callback runs inside rc_sub_poll()
 * (or rc_sub_destroy() for the last on_disconnect), and no rc_sub_*
 * function may be called from two threads at once. From inside a callback
 * the application may call rc_sub_subscribe/unsubscribe/get_stats, not poll
 * or destroy. The one exception: the rc_view_* calls (ringcast/view.h) may
 * run in any thread at any time, concurrently with rc_sub_poll(); they never
 * run callbacks.
 *
 * Lifecycle (as libuv documents its handles):
 *   create   rc_sub_params_default(), rc_sub_create(): allocates every
 *            buffer, does not connect. No callback runs.
 *   start    rc_sub_subscribe() / rc_sub_subscribe_all() / rc_sub_unsubscribe():
 *            any time, also before the first poll and from callbacks; kept
 *            across reconnections.
 *   poll     rc_sub_poll(s, timeout_ns) in a loop: connects, reconnects,
 *            receives; every callback runs in here. Nothing happens between
 *            calls (no thread of its own).
 *   stop     stop polling (or unsubscribe); there is no separate stop call.
 *   destroy  rc_sub_destroy(): BYE, close, free; the last
 *            on_disconnect(RC_SUB_DISC_CLOSED) runs inside it.
 *            on_data()'s payload is valid only during the call; views kept
 *            with rc_view_retain() must be released before destroy
 *            (stats.views_outstanding counts them).
 * Callbacks run only inside rc_sub_poll() and rc_sub_destroy().
 *
 * Connection life: rc_sub_create() only prepares; rc_sub_poll() connects,
 * and whenever the publisher is lost (connection shut down, BYE, nothing
 * received for peer_timeout, too much garbage, a send or receive error) it
 * reconnects every reconnect_interval, then re-sends every subscription and
 * calls on_resubscribed() once the publisher acknowledged them all. A
 * restarted publisher is recognised by its new publisher_id.
 *
 * Data: on_data() gets one chunk: its tag, its flags (RC_CHUNK_FLAG_*:
 * truncated, error, CRC error, busy; ringcast/common.h) and the payload, valid
 * only during the call. With params.on_view set, on_view() gets each chunk
 * as a view instead (ringcast/view.h): the same bytes as one or more pieces,
 * which the program may keep (rc_view_retain) and release later from any
 * thread. Fragmented chunks (send delivery) are reassembled into one buffer of max_chunk_size
 * bytes allocated at create (a view of one kept while the next fragmented
 * chunk comes makes the subscriber allocate another, counted in
 * views_allocated). A fragment that does not continue the chunk
 * being reassembled (other tag, index or offset, or a chunk bigger than
 * max_chunk_size) makes the subscriber drop the incomplete chunk and count it
 * (reassembly_drops / too_big): it never delivers a chunk with a hole. The
 * publisher sends one chunk's fragments back to back to a given subscriber.
 * After rc_sub_unsubscribe() returns, on_data() is not called for those tags
 * any more (chunks still in flight are counted as unwanted and dropped).
 */
#ifndef RINGCAST_SUB_H
#define RINGCAST_SUB_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/common.h"
#include "ringcast/view.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rc_sub;

/* The daemon's default port ([fabric] port of ringcast-readout). */
#define RC_SUB_DEFAULT_PORT 12345u
/* Smallest rx_buffer_size the wire protocol allows in HELLO (one PAGE header
 * and one record header with 40 payload bytes). ringcast's publisher serves
 * 4096 B and more: a smaller announcement is refused with BYE(refused) and
 * its cause ("rx_buffer_size too small"), which rc_sub_last_error() names. */
#define RC_SUB_MIN_RX_BUFFER 72u

enum rc_sub_endpoint { RC_SUB_EP_MSG = 0, RC_SUB_EP_RDM = 1 };

/* Why on_disconnect() was called. */
enum rc_sub_disconnect_reason {
    RC_SUB_DISC_SHUTDOWN = 0,   /* the connection went down (FI_SHUTDOWN, send/recv error) */
    RC_SUB_DISC_TIMEOUT,        /* nothing received for peer_timeout */
    RC_SUB_DISC_BYE,            /* the publisher said BYE */
    RC_SUB_DISC_PROTOCOL,       /* the publisher sent too many malformed messages */
    RC_SUB_DISC_CLOSED,         /* rc_sub_destroy() */
};

enum rc_sub_delivery {
    RC_SUB_DELIVERY_SEND = 0,   /* the publisher sends messages (default) */
    RC_SUB_DELIVERY_RMA = 1,    /* the publisher writes records into our ring */
    RC_SUB_DELIVERY_STREAM = 2, /* a block stream: every block of card stream_card, written as it
                                 * is into our ring and decoded here (README.md, "Block stream") */
};

struct rc_sub_callbacks {
    void *ctx;   /* first argument of every callback */
    void (*on_data)(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len);
    void (*on_connect)(void *ctx);                      /* WELCOME received */
    void (*on_disconnect)(void *ctx, enum rc_sub_disconnect_reason reason);
    void (*on_resubscribed)(void *ctx);                 /* after a reconnection */
};

struct rc_sub_params {
    char provider[64];             /* "tcp", "tcp;ofi_rxm", "verbs", ... */
    enum rc_sub_endpoint endpoint;
    char host[128];                /* the publisher */
    uint16_t port;
    uint32_t rx_buffers;           /* receive buffers kept posted */
    uint32_t rx_buffer_size;       /* largest message; announced in HELLO */
    uint32_t max_chunk_size;       /* reassembly buffer for fragmented chunks */
    uint64_t heartbeat_ns;         /* send HEARTBEAT at least this often */
    uint64_t peer_timeout_ns;      /* publisher silent this long: reconnect */
    uint64_t reconnect_interval_ns;/* between connection attempts */
    uint64_t poll_spin_ns;         /* rc_sub_poll spins at most this long before sleeping
                                    * (0: never spins); how long it does, see rc_sub_poll */
    uint32_t malformed_limit;      /* malformed messages tolerated per connection */
    struct rc_sub_callbacks cb;
    /* For tests of the publisher's slow-subscriber policy; 0 = off. Once
     * on_data() ran this many times the subscriber stops reading: receive
     * buffers that complete are not posted again (those still posted may
     * deliver up to rx_buffers more messages), so the publisher's sends to it
     * back up, while rc_sub_poll() keeps sending heartbeats and no longer
     * times the publisher out for silence (it chose not to read). A live
     * subscriber that stopped reading. */
    uint64_t test_stall_after_chunks;
    /* How chunks arrive (net/README.md, "RMA delivery"). RC_SUB_DELIVERY_SEND
     * (default): messages into the receive buffers. RC_SUB_DELIVERY_RMA: the
     * subscriber allocates a receive ring of rma_ring_size bytes, registers it
     * for remote write and announces it in HELLO; the publisher writes each
     * chunk into it as one or more records (stats.rma_active says whether it
     * does; a provider without RMA at either end falls back to send, counted
     * in stats.rma_fallbacks and said in rc_sub_last_error()). */
    enum rc_sub_delivery delivery;
    uint64_t rma_ring_size;        /* RMA ring bytes: a multiple of 8, 64 KiB .. 32 GiB (default 2 MiB) */
    /* Views (ringcast/view.h): when set, every chunk goes to on_view()
     * instead of on_data() (cb.ctx is its first argument), as a view the
     * program may keep with rc_view_retain() and give back with
     * rc_view_release() from any thread. The memory behind a kept view is
     * reposted (send) or credited (RMA) only after its release. */
    void (*on_view)(void *ctx, struct rc_view *view);
    uint32_t views;                /* views allocated at create (default 1024; more are
                                    * malloc'd while the program holds these, counted) */    /* For tests of the publisher's handling of a bad RMA announcement; 0 =
     * off. The key announced in HELLO is the ring's key XOR this: the
     * publisher's writes then carry a key the provider rejects at our end
     * (tcp drops the connection, shm drops the write silently). */
    uint64_t test_rma_key_xor;
    /* Block stream (delivery = RC_SUB_DELIVERY_STREAM; README.md, "Block
     * stream"): the card ([card.N] of the daemon) whose every block the
     * publisher writes, as the card wrote it, into a ring of
     * stream_ring_size bytes here (a multiple of the card's block size, at
     * least 8 blocks; default 64 MiB, the card ring's default: open chunks
     * of every e-link hold their blocks here until they end); this library decodes the blocks with
     * the daemon's own decoder and hands on every chunk of every e-link of
     * the card (tag = the card's tag base + e-link) as on_view() views
     * pointing into the ring (or to on_data()). A view held holds the
     * blocks its chunk lies in, and the ring's space after them (given back
     * in order): views held must span well under half the ring's blocks, or
     * nothing more arrives until some are released. No subscription is needed
     * (rc_sub_subscribe is not used). The decoder's counters are in the
     * stats (stream_*). Needs FI_RMA at both ends; over shm a block must
     * not exceed 4096 B. */
    uint32_t stream_card;
    uint64_t stream_ring_size;
    /* 1: every wait of rc_sub_poll spins poll_spin_ns, as ringcast 0.1 did
     * (for a subscriber alone on its core that wants the lowest latency in
     * every case); 0 (default): the spin adapts (see rc_sub_poll). */
    int poll_spin_fixed;
    /* Coalescing (see rc_sub_poll): a wait that does not spin, of a thread
     * often preempted (the CPU is contended) with messages coming within this
     * long, first sleeps this long on a timer, so that one wake-up handles
     * the messages sent meanwhile. 0 (default): never; at most 1 s. It
     * delays messages by up to this long: for throughput, not latency
     * (500 us: net/README.md, "Coalescing", has what it saved and cost). */
    uint64_t poll_coalesce_ns;
};

/* Error kinds of malformed messages (index 0 is unused; names from
 * rc_sub_malformed_name()). */
#define RC_SUB_MALFORMED_KINDS 7

#define RC_SUB_POOL_CLASSES 4      /* size classes of the subscriber's memory pool */

struct rc_sub_stats {
    uint64_t messages;             /* valid messages received */
    uint64_t chunks;               /* on_data() / on_view() calls */
    uint64_t bytes;                /* payload bytes passed to them */
    uint64_t data_messages, pages, records;
    uint64_t fragments;            /* DATA messages that were one fragment of several */
    uint64_t reassembled;          /* chunks delivered from fragments */
    uint64_t reassembly_drops;     /* incomplete chunks abandoned, and runs of
                                    * fragments whose fragment 0 never came */
    uint64_t too_big;              /* fragmented chunks larger than max_chunk_size */
    uint64_t unwanted;             /* chunks for tags not subscribed (in flight) */
    uint64_t reordered;            /* DATA/PAGE received before an earlier one: held, then
                                    * handled in stream order */
    uint64_t seq_lost;             /* DATA/PAGE never received (stream numbers skipped when
                                    * every spare receive buffer held a later one, a message
                                    * came truncated or malformed, or the publisher said BYE) */
    uint64_t seq_late;             /* DATA/PAGE dropped: arrived after being counted lost, or twice */
    uint64_t held_dropped;         /* DATA/PAGE received but dropped at a disconnect while
                                    * waiting for an earlier one */
    uint64_t malformed[RC_SUB_MALFORMED_KINDS]; /* by kind: rc_sub_malformed_name(i) */
    uint64_t malformed_total;
    uint64_t truncated;            /* messages larger than rx_buffer_size */
    uint64_t unexpected;           /* valid but out of place (DATA before WELCOME, unknown ack) */
    uint64_t connects;             /* WELCOMEs received */
    uint64_t connect_failures;     /* attempts that did not reach WELCOME */
    uint64_t reconnects;           /* connects after the first */
    uint64_t disconnects;
    uint64_t publisher_restarts;   /* WELCOME with a publisher_id not seen before */
    uint64_t garbage_disconnects;  /* disconnects for malformed_limit */
    uint64_t heartbeats_sent, heartbeats_received;
    uint64_t sub_requests;         /* SUBSCRIBE/UNSUBSCRIBE sent */
    uint64_t sub_refused;          /* SUB_ACK with a status other than OK */
    uint64_t rx_errors, tx_errors; /* error completions */
    uint64_t send_again;           /* control sends delayed (no free send slot) */
    int connected;                 /* 1 after WELCOME, until the connection is lost */
    uint64_t publisher_id;         /* of the current (or last) publisher */
    uint64_t refused;              /* BYE(refused) received (rc_sub_last_error() says why) */
    uint64_t shm_stale_removed;    /* shm: files of dead subscribers of this user removed at
                                    * create (provider "shm" only, net/README.md) */
    /* RMA delivery (params.delivery = RC_SUB_DELIVERY_RMA) */
    int rma_active;                /* 1 while the publisher writes into our ring */
    uint64_t rma_fallbacks;        /* connections that asked for RMA and were served by send */
    uint64_t rma_records;          /* records taken from the ring (DATA messages) */
    uint64_t rma_bytes;            /* their bytes, headers included */
    uint64_t rma_reordered;        /* record completions before their turn: held, then taken in order */
    uint64_t rma_bad_records;      /* records outside the ring or unreleased space, at the wrong
                                    * place, with an impossible header or sequence number: never
                                    * handed on; the connection ends (and reconnects) */
    uint64_t rma_credits_sent;     /* CREDIT messages (released ring space given back) */
    uint64_t rma_skipped_bytes;    /* ring ends skipped (records never straddle the end) */
    /* Views (params.on_view) */
    uint64_t views_outstanding;    /* views handed out and not yet released (now) */
    uint64_t views_allocated;      /* views and reassembly buffers malloc'd because the program
                                    * held the ones allocated at create */
    uint64_t view_failures;        /* chunks not handed on: no memory for their view (counted,
                                    * also in reassembly_drops for a fragmented chunk) */
    uint64_t rma_chunks_gathered;  /* chunks of several records handed on as one view of
                                    * several pieces, without copying */
    uint64_t rma_chunks_copied;    /* chunks of several records copied into one piece (on_data,
                                    * or more than RC_VIEW_MAX_PIECES records or half the ring) */
    uint64_t rma_ring_busy;        /* connections served by send because views still held
                                    * ring space of an earlier connection */
    /* Send delivery: chunks larger than one receive buffer (several fragments) */
    uint64_t chunks_gathered;      /* handed on (on_view) as one view of one piece per fragment,
                                    * each in its own receive buffer, without copying */
    uint64_t chunks_reassembled_copied; /* copied into the reassembly buffer instead: on_data, more
                                    * than RC_VIEW_MAX_PIECES fragments, receive buffers more than
                                    * half busy with the chunk, or none left to receive its rest */
    uint64_t rx_buffers_held;      /* receive buffers held by views now (and by a chunk being
                                    * gathered): posted again only at their last view's release */
    /* The registered memory pool the receive and control send buffers come
     * from, per size class (classes without buffers: use "" and count 0). */
    struct rc_sub_pool_class {
        char use[24];              /* "receive" (got at create, kept) or "control_send"
                                    * (taken per message, back at its completion) */
        uint64_t size, count;      /* buffer size and buffers of the class */
        uint64_t in_use;           /* buffers handed out now */
        uint64_t high_water;       /* most handed out at once */
        uint64_t gets;             /* buffers handed out so far */
        uint64_t exhausted;        /* gets that found the class empty */
    } pool[RC_SUB_POOL_CLASSES];
    /* Block stream (params.delivery = RC_SUB_DELIVERY_STREAM) */
    int stream_active;             /* 1 while the publisher writes the card's blocks into our ring */
    uint32_t stream_block_size;    /* the card's, from WELCOME */
    uint64_t stream_tag_base;      /* the card's tag of e-link 0, from WELCOME */
    uint64_t stream_spans;         /* spans written into our ring (one completion each) */
    uint64_t stream_bytes;         /* their bytes (whole blocks) */
    uint64_t stream_reordered;     /* span completions before their turn: held, then taken in order */
    uint64_t stream_bad_spans;     /* spans outside the ring or credited space, not whole blocks,
                                    * at the wrong place: never decoded; the connection ends */
    uint64_t stream_credits_sent;  /* CREDIT messages (decoded, released ring space given back) */
    uint64_t stream_ring_busy;     /* connection attempts put off: views (of blocks) still held */
    uint64_t stream_skipped_bytes; /* ring bytes passed over before a connection so that it
                                    * starts at an offset any card's block size divides */
    uint64_t stream_gap_marks;     /* spans the publisher marked: blocks were dropped for us
                                    * before them (slow_policy = drop); the chunks open there
                                    * are dropped (stream_chunks_dropped_gap), never joined */
    /* The decoder's figures (readout/README.md, "Block decoder"): blocks decoded, blocks with
     * a bad header, blocks missing by sequence number (a gap: dropped blocks under slow_policy
     * = drop, a reconnect), malformed blocks, chunks dropped or cut short and why. */
    uint64_t stream_blocks, stream_bad_header, stream_seq_gaps, stream_malformed;
    uint64_t stream_orphans, stream_oversize, stream_bad_start, stream_chunks_dropped_gap;
    uint64_t stream_chunks_incomplete, stream_chunks_cut;
    uint64_t stream_chunks_truncated, stream_chunks_error, stream_chunks_crc, stream_chunks_busy;
    uint64_t stream_timeouts, stream_oob;
    /* rc_sub_poll's waits (a wait: a poll that found nothing to do, then
     * spun and/or slept until work came or its timeout) */
    uint64_t poll_spin_hits;       /* waits whose spin found work */
    uint64_t poll_spin_misses;     /* spins that ran out, then slept */
    uint64_t poll_spin_preempted;  /* spins during which the process lost its CPU */
    uint64_t poll_sleeps;          /* waits that slept at once (the spin had shrunk to 0) */
    uint64_t poll_spin_ns_now;     /* the next wait's spin (now) */
    uint64_t poll_coalesced;       /* of poll_sleeps, waits that slept poll_coalesce_ns on a
                                    * timer first (the CPU contended, the traffic dense) */
    int poll_contended;            /* 1: the last sample saw the thread preempted at least
                                    * once per 16 waits (now) */
};

/* Defaults: tcp msg 127.0.0.1:RC_SUB_DEFAULT_PORT (12345, the daemon's), 64 x 64 KiB rx buffers, 16 MiB max
 * chunk, heartbeat 1 s, peer timeout 5 s, reconnect 1 s, spin up to 50 us (adaptive),
 * no coalescing,
 * malformed_limit 16, 1024 views. Callbacks zero. */
RC_API void rc_sub_params_default(struct rc_sub_params *p);

/* Validate params and allocate every buffer (none is allocated later).
 * Returns 0 and *out, or -errno with a message in err. Does not connect. */
RC_API int rc_sub_create(const struct rc_sub_params *params, struct rc_sub **out, char *err, size_t errlen);

/* Add inclusive tag ranges [first[i], last[i]] to the subscription (merged
 * with what is there). Sent at once when connected, otherwise at connect.
 * -EINVAL for first > last or count 0; -EAGAIN when every control send slot
 * is busy (call rc_sub_poll and retry; nothing changed). */
RC_API int rc_sub_subscribe(struct rc_sub *s, const uint64_t *first, const uint64_t *last, size_t count);
RC_API int rc_sub_subscribe_all(struct rc_sub *s);
/* Remove ranges (also parts of subscribed ranges). Same results. */
RC_API int rc_sub_unsubscribe(struct rc_sub *s, const uint64_t *first, const uint64_t *last, size_t count);

/* Do the work that is due (connect, receive and deliver, heartbeats,
 * timeouts); wait up to timeout_ns for work when there is none (spinning
 * first, then sleeping on the completion queue's fd). Never blocks longer: a
 * MSG connect proceeds across calls. Returns the number of messages received
 * (0 when none came before the timeout). Connection problems are not errors
 * here: they are counted, reported through on_disconnect() and
 * rc_sub_last_error(), and retried.
 * The spin adapts to what recent waits saw (unless poll_spin_fixed): it
 * starts at poll_spin_ns; a wait whose spin found work doubles the next spin
 * (up to poll_spin_ns); a spin that ran out, or during which the process lost
 * its CPU to another, halves it, down to 0 below poll_spin_ns / 8 (the waits
 * then sleep at once); with the spin at 0, a wait whose work came within
 * poll_spin_ns starts spinning again at poll_spin_ns / 8. So a subscriber
 * alone on a core spins as before, and subscribers sharing the cores with
 * their publisher stop taking its CPU. stats.poll_spin_* count the waits.
 * Coalescing (only with poll_coalesce_ns > 0, not poll_spin_fixed): when the
 * spin is 0, the thread was preempted at least once per 16 waits (sampled
 * every 64 waits with getrusage) and the last wait's work came within
 * poll_coalesce_ns, a wait first sleeps poll_coalesce_ns on a timer and
 * polls, and only then, if nothing came, sleeps on the fd: one wake-up for
 * the messages of that time instead of one per message; and a quick sleep
 * does not restart the spin while contended. That delays a message by up
 * to poll_coalesce_ns, only on a CPU that is contended already
 * (stats.poll_coalesced, poll_contended). */
RC_API int rc_sub_poll(struct rc_sub *s, uint64_t timeout_ns);

RC_API void rc_sub_get_stats(const struct rc_sub *s, struct rc_sub_stats *st);
/* The last connection problem, "" if none ("fi_connect(...): Connection refused"). */
RC_API const char *rc_sub_last_error(const struct rc_sub *s);
/* Name of a wire error kind (index into stats.malformed): "short", ... */
RC_API const char *rc_sub_malformed_name(unsigned kind);

/* Say BYE if connected, close everything, free s (NULL is fine). */
RC_API void rc_sub_destroy(struct rc_sub *s);

#ifdef __cplusplus
}
#endif
#endif
