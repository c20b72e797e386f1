/* SPDX-License-Identifier: BSD-3-Clause */
/* publisher.h — the publishing side of ringcast's fabric layer.
 *
 * A publisher listens on [fabric] address:port (MSG: passive endpoint and
 * connection events; RDM: one endpoint, subscribers announce their address in
 * HELLO). Subscribers say HELLO, then SUBSCRIBE/UNSUBSCRIBE tag ranges; the
 * publisher answers WELCOME and SUB_ACK, sends HEARTBEATs and detects dead
 * subscribers (net/README.md, "Dead peers").
 *
 * Data goes out in two ways, chosen per call:
 *  - rci_publisher_send(): zero copy. A registered header slot carries the
 *    DATA header, the payload pieces are sent from registered memory (the DMA
 *    ring, registered once with rci_publisher_register()). When the provider is
 *    done, on_send_complete(key, status) runs: exactly once per accepted key.
 *  - rci_publisher_send_buffered(): small chunks are copied into registered
 *    pages sent as PAGE messages; the chunk is the caller's again once the
 *    call returned 0 (no key, no callback).
 *
 * Threads: a publisher belongs to ONE thread: every function here, and the
 * callbacks, run on it. Nothing locks. Callbacks must not call back into the
 * publisher (they typically release a ring key).
 *
 * Callbacks (on_send_complete, on_peer_event) run only inside
 * rci_publisher_progress(), rci_publisher_wait() and rci_publisher_destroy().
 * Never inside a send (send, send_buffered, flush: one that meets a full
 * provider queue or an empty pool returns -EAGAIN without reading the CQ),
 * close_peer, pending_sends or the getters: the caller's state is never
 * changed under it while it is in the middle of a send.
 *
 * Hot path (send, send_buffered, progress): no malloc, no locks; syscalls
 * only those the provider makes.
 */
#ifndef RCI_PUBLISHER_H
#define RCI_PUBLISHER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "net/fabric.h"
#include "net/fabric_params.h"
#include "net/mem_pool.h"
#include "common/log_hook.h"
#include "net/wire.h"

/* Identifies one subscriber connection: slot index + generation, so a stale
 * id of a subscriber that left never reaches its successor. 0 is never valid. */
typedef uint64_t rci_peer_id;

enum rci_pub_peer_event {
    RCI_PUB_PEER_JOINED = 1,         /* HELLO accepted, WELCOME sent */
    RCI_PUB_PEER_SUBSCRIPTIONS = 2,  /* its tag set changed */
    RCI_PUB_PEER_GONE = 3,           /* closed or dead; its keys were released */
    RCI_PUB_PEER_BYE = 4,            /* it said BYE (an orderly leave): its outstanding sends complete
                                      * -ECONNRESET next (not a failure), then GONE;
                                      * rci_publisher_peer_chunks_handled says what it read */
};

struct rci_publisher_callbacks {
    /* status 0: sent; <0: -errno (-ECONNRESET: subscriber dead or gone,
     * -ECANCELED: publisher destroyed, other: the provider's error). */
    void (*on_send_complete)(void *arg, uint64_t key, int status);
    /* Optional. */
    void (*on_peer_event)(void *arg, rci_peer_id peer, enum rci_pub_peer_event ev);
    /* Optional: runs in rci_publisher_destroy() after every key came back and
     * before the domain closes: the caller's own registrations in it (e.g. a
     * net/mr_cache.h cache) must be closed here. */
    void (*on_closing)(void *arg);
    void *arg;
    /* Optional: DEBUG lines about network events for a network problem
     * (connection requests, HELLO contents, refusals with their reason,
     * error completions with the provider's text, -FI_EAGAIN streaks,
     * deferred fragments, RMA credit stalls). Said on events only, never per
     * chunk; the hook's owner filters and rate-limits them. */
    struct rci_log_hook log;
};

struct rci_publisher_stats {
    /* data path */
    uint64_t sends;                 /* accepted zero-copy sends (keys) */
    uint64_t send_bytes;            /* their payload bytes */
    uint64_t messages;              /* DATA messages posted (fragments count) */
    uint64_t fragmented_sends;      /* sends that needed more than one message */
    uint64_t fragments;             /* DATA messages of fragmented sends */
    uint64_t again_no_slot;         /* -EAGAIN: header slots exhausted */
    uint64_t again_provider;        /* -EAGAIN: provider queue full */
    uint64_t again_peer_quota;      /* -ENOBUFS: that subscriber holds its share of slots,
                                     * pages or the tx queue (see rci_publisher_send) */
    uint64_t send_errors;           /* sends refused with an error */
    uint64_t unregistered_pieces;   /* pieces outside every registered region */
    uint64_t completions_ok;
    uint64_t completions_error;     /* error completions of DATA/PAGE */
    uint64_t stale_completions;     /* for slots already released (dead peer) */
    uint64_t keys_completed_ok;
    uint64_t keys_completed_error;
    uint64_t fragment_retry_timeouts; /* later fragments never accepted: key failed */
    uint64_t fragments_deferred;    /* fragmented sends whose later fragment met -FI_EAGAIN: the
                                     * rest was posted from progress */
    uint64_t fragments_abandoned;   /* deferred fragments never posted: their peer left */
    uint64_t again_resuming;        /* -ENOBUFS: the peer's previous chunk is still being posted */
    /* gather-copy (rci_publisher_send_gather, net/README.md "Gather-copy") */
    uint64_t gather_sends;          /* accepted sends whose fragments were copied into bounce buffers */
    uint64_t gather_bytes;          /* payload bytes copied into bounce buffers */
    uint64_t again_no_bounce;       /* -EAGAIN (or a deferred fragment): no bounce buffer free */
    uint64_t bounce_free;           /* bounce buffers free now (of [fabric] bounce_buffers) */
    uint64_t faults_send_error;     /* injected: ok completions reported as errors */
    uint64_t faults_eagain;         /* injected: posts refused with -FI_EAGAIN */
    uint64_t faults_eagain_streaks; /* injected: streaks of -FI_EAGAIN for one subscriber */
    uint64_t faults_held;           /* injected: posts reported done, never handed to the provider */
    /* RMA delivery (net/README.md, "RMA delivery") */
    uint64_t rma_subscribers;       /* HELLOs served by RMA writes into the subscriber's ring */
    uint64_t rma_fallbacks;         /* HELLOs that asked for RMA, served by send (no FI_RMA here) */
    uint64_t rma_refused_region;    /* HELLOs refused: the announced ring cannot be written */
    uint64_t rma_records;           /* records written (a chunk is one or more) */
    uint64_t rma_bytes;             /* their bytes, headers included */
    uint64_t rma_again_credit;      /* -ENOBUFS: the subscriber's ring has no room (not released) */
    uint64_t rma_wait_credit;       /* later records of a chunk that waited for room */
    uint64_t rma_credits;           /* CREDIT messages taken */
    uint64_t rma_bad_credits;       /* CREDIT going back or past what was written: peer closed */
    /* block streams (net/README.md, "Block stream") */
    uint64_t stream_subscribers;    /* HELLOs granted a card's block stream */
    uint64_t stream_refused;        /* HELLOs refused one (no such card, ring unfit, no FI_RMA) */
    uint64_t stream_spans;          /* spans written (one fi_writemsg each) */
    uint64_t stream_bytes;          /* their bytes (whole blocks) */
    /* buffered path */
    uint64_t buffered_records;
    uint64_t buffered_bytes;
    uint64_t pages_sent;
    uint64_t pages_flushed_by_timeout;
    uint64_t pages_flushed_idle;    /* posted by rci_publisher_flush_idle: the caller had no more */
    uint64_t pages_failed;          /* page send/completion failed: records lost (counted) */
    uint64_t again_no_page;
    /* subscribers */
    uint64_t connections;           /* accepted HELLOs */
    uint64_t connections_refused;   /* max_subscribers, bad version, no buffers, allow list,
                                     * rx buffer too small, unusable RDM address */
    uint64_t connections_refused_allowlist; /* of those: address not in [fabric] allow */
    uint64_t connections_refused_rx_buffer; /* of those: HELLO's rx_buffer_size too small */
    uint64_t shm_files_reclaimed;   /* shm: /dev/shm files of dead subscribers removed */
    /* tcp MSG: connections shut down before they finished the provider's
     * handshake (also counted in connections_refused; net/README.md) */
    uint64_t half_open_closed_timeout;    /* no connection request within peer_timeout */
    uint64_t half_open_closed_cap;        /* more than max_subscribers in their handshake */
    uint64_t half_open_closed_eof;        /* closed by the peer before its request (the
                                           * provider would keep them and spin) */
    uint64_t half_open_closed_allowlist;  /* peer not in [fabric] allow (also in _allowlist) */
    uint64_t fd_pressure;           /* scans that found file descriptors nearly exhausted */
    uint64_t fds_in_use;            /* descriptors open at the last scan (tcp MSG) */
    uint64_t peers_closed;          /* orderly: BYE or rci_publisher_close_peer() */
    uint64_t peers_dead;            /* shutdown, silence, error, or a chunk's later fragments
                                     * never accepted (not slowness as such: the caller's
                                     * policy cuts slow ones off with close_peer) */
    uint64_t dead_by_shutdown, dead_by_silence, dead_by_stuck_send, dead_by_error;
    /* tcp MSG: sends the provider holds without writing them (net/README.md "Stalled sends") */
    uint64_t stall_probes;          /* a peer's oldest send waited peer_timeout: its socket examined */
    uint64_t stalls_provider_held;  /* ... and its send queue was empty: the provider, not the
                                     * subscriber, held the send (counted once per send) */
    uint64_t stalls_no_pollout;     /* ... of those, the CQ's wait set did not watch the socket
                                     * for EPOLLOUT (nothing would wake the provider to write) */
    uint64_t dead_by_provider_stall; /* peers closed: held so at two probes peer_timeout apart */
    uint64_t keys_released_by_peer_death;
    uint64_t drained_peers;         /* cut-off peers whose sends were let complete (RDM: told BYE,
                                     * address removed after a heartbeat at the latest) */
    uint64_t drain_timeouts;        /* ... with sends outstanding when their address was removed
                                     * (released then, the removal proving the provider let go) */
    uint64_t drain_no_proof;        /* ... whose removal proved nothing (provider without a
                                     * let-go rule): their keys waited for completions */
    uint64_t liveness_restarts;     /* progress not called for over 50 ms (thread starved): that
                                     * pause does not count as any subscriber's silence */
    uint64_t idle_sleeps;           /* rci_publisher_sleep calls that slept (nothing to do) */
    uint64_t idle_sleeps_short;     /* ... of those, capped at 50 us: the provider has no wait fd */
    uint64_t subscribe_requests, unsubscribe_requests;
    uint64_t subscriptions_refused; /* any status but RCI_SUB_OK */
    uint64_t heartbeats_sent, heartbeats_received;
    uint64_t control_send_retries;  /* control message waited for the provider */
    uint64_t control_dropped;       /* control queue of a peer overflowed */
    uint64_t rx_errors;             /* receive error completions */
    uint64_t connection_errors;     /* MSG: error events on the EQ */
    uint64_t malformed[RCI_WIRE_ERROR_KINDS]; /* rejected incoming messages by kind */
    uint64_t unknown_sender;        /* RDM: message from an address not said HELLO */
    /* watermarks */
    uint64_t slots_total, slots_free;
    uint64_t pages_total, pages_free;
    uint64_t peers_active;
    /* The registered pool the control send and receive buffers and the
     * buffered pages come from: per class its use ("control_send", "control
     * receive", "pages"; "" for a class without buffers), size, count, in use
     * now, high-water, gets, exhausted gets (net/mem_pool.h). */
    struct rci_mem_class_stats pool[RCI_MEM_CLASSES];
};

struct rci_publisher;

/* Open the fabric (listening), register the header slots and the pool of
 * control buffers and pages (once per class block). Returns 0 or -errno with the reason in err. */
int  rci_publisher_create(const struct rci_fabric_params *params,
                         const struct rci_publisher_callbacks *cb,
                         struct rci_publisher **out, char *err, size_t errlen);
/* Release every outstanding key (-ECANCELED), close everything. */
void rci_publisher_destroy(struct rci_publisher *p);

/* Register source memory (the DMA ring) once; pieces passed to send() must lie
 * inside a registered region. At most RC_PUB_MAX_REGIONS regions (two per
 * card: its ring and its readout's spill area). */
#define RC_PUB_MAX_REGIONS 16u
int  rci_publisher_register(struct rci_publisher *p, const void *addr, size_t len,
                           char *err, size_t errlen);

/* Zero-copy send of one chunk (tag, flags, pieces iov[0..n-1]) to `peer`.
 * Returns 0: accepted, on_send_complete(key) will run exactly once;
 *   -EAGAIN: nothing sent (no header slot, provider queue full); call
 *            progress/wait, then try again; the key is still the caller's;
 *   -ENOBUFS: nothing sent: this subscriber cannot take it now, the others
 *            may: (params.peer_fair_share) it holds its fair share of the
 *            header slots or of the tx queue (net/README.md, "Fair
 *            shares"), its RMA ring has no room, or its previous chunk
 *            still has fragments to post (again_resuming); the caller's
 *            slow policy decides (wait, defer or drop);
 * A later fragment refused by the provider does not make it wait: the rest
 * of the chunk is posted by progress (net/README.md, Fragments). No
 * callback runs inside this call.
 *   -ENOTCONN: peer unknown, gone, or not yet through HELLO;
 *   -EFAULT: a piece is not in a registered region;  -EMSGSIZE: chunk
 *            needs more fragments than slots/the protocol allow;
 *   other -errno: the provider refused; the key is still the caller's.
 * Split into fragments when 1 + n > the provider's usable iov limit or the
 * chunk does not fit the subscriber's receive buffer. */
int  rci_publisher_send(struct rci_publisher *p, rci_peer_id peer, uint64_t tag, uint32_t flags,
                       const struct iovec *iov, unsigned n, uint64_t key);
/* The same with the caller's descriptor for each piece (desc[0..n-1], e.g.
 * from net/mr_cache.h): the pieces need not lie in regions registered here,
 * and the caller keeps their memory registered until the key completes.
 * desc NULL: rci_publisher_send(). */
int  rci_publisher_send_desc(struct rci_publisher *p, rci_peer_id peer, uint64_t tag,
                            uint32_t flags, const struct iovec *iov, void *const *desc, unsigned n,
                            uint64_t key);
/* rci_publisher_send(), except for a chunk whose pieces need more messages
 * than its bytes do (more pieces than iov_limit - 1 per message): its
 * fragments are copied into registered bounce buffers ([fabric]
 * bounce_buffers of buffered_page_size bytes), one message of up to a
 * buffer (and the subscriber's receive buffer) each, and sent from there.
 * The key is the caller's until on_send_complete, as for rci_publisher_send
 * (the payload is copied at post time, so the key could go earlier; keeping
 * one rule keeps the caller simple). Counted: gather_sends, gather_bytes.
 * Without bounce buffers, or for a chunk whose pieces fit a message, it is
 * rci_publisher_send(). -EAGAIN also when no bounce buffer is free
 * (again_no_bounce). */
int  rci_publisher_send_gather(struct rci_publisher *p, rci_peer_id peer, uint64_t tag, uint32_t flags,
                              const struct iovec *iov, unsigned n, uint64_t key);
/* The descriptor of the registered region (rci_publisher_register) holding
 * [addr, addr + len); *found false (and NULL) when none does. */
void *rci_publisher_region_desc(const struct rci_publisher *p, const void *addr, size_t len,
                                bool *found);
/* Buffered send: copy the chunk as one record into the peer's current page.
 * It takes no key: on 0 the record is copied and the caller may release the
 * chunk's memory at once (no on_send_complete runs for it).
 * -EAGAIN: nothing copied: no free page, or the full page could not be
 * posted yet (call progress/wait, then try again); -ENOBUFS:
 * (params.peer_fair_share) this subscriber holds its fair share of the pages:
 * it is behind; -EMSGSIZE: record larger than a page, or a subscriber
 * served by RMA delivery (use send());
 * -ENOTCONN as above; -ENOTSUP: no pages configured. No callback runs
 * inside this call. */
int  rci_publisher_send_buffered(struct rci_publisher *p, rci_peer_id peer, uint64_t tag,
                                uint32_t flags, const struct iovec *iov, unsigned n);
/* Send the peer's partly filled page now (0, -EAGAIN, -ENOTCONN). No
 * callback runs inside this call. */
int  rci_publisher_flush(struct rci_publisher *p, rci_peer_id peer);
/* The same when the caller has nothing more to add for now (its queues ran
 * empty): the page goes without waiting for flush_timeout, which then only
 * bounds the wait while records keep coming. 1: a page was posted (counted
 * in pages_flushed_idle), 0: none was filling, or -EAGAIN / -ENOTCONN. No
 * callback runs inside this call. */
int  rci_publisher_flush_idle(struct rci_publisher *p, rci_peer_id peer);

/* The run is over (call after the last send was posted): every active
 * peer is told BYE(normal), which reaches it after everything sent before
 * (MSG: one ordered connection; RDM: send-after-send order), and so is
 * every peer that becomes active later. A subscriber that reads it has read
 * the whole stream, answers with its own BYE and leaves: the caller waits
 * for the peers to leave before rci_publisher_destroy, whose close would
 * otherwise cut off what a subscriber had not read yet (a completed send
 * only means the provider has it). */
void rci_publisher_end_run(struct rci_publisher *p);

/* Drive everything without blocking: completions, connection events, control
 * messages, page flush timeouts, heartbeats, dead-peer detection. Returns the
 * number of things handled (>= 0) or -errno if the fabric itself failed. */
int  rci_publisher_progress(struct rci_publisher *p);
/* Adaptive wait: spin poll_spin_ns on progress, then sleep on the CQ/EQ fds,
 * at most timeout_ns. Returns what progress returned (>0 work, 0 timeout). */
int  rci_publisher_wait(struct rci_publisher *p, uint64_t timeout_ns);
/* Idle sleep (no spinning): one progress pass; if it found nothing, block on
 * the fabric's wait fds and wake_fd (-1: none; readable wakes the caller, it
 * is never read here) until something arrives, the next timer work is due or
 * timeout_ns passed, then progress again. With nothing in flight (no page
 * filling, no peer closing or resuming) timer work is due only every
 * min(heartbeat, peer_timeout) / 4 (at most 250 ms), not every flush
 * period. A provider without a wait fd sleeps at most 50 us (counted in
 * idle_sleeps_short). Returns what progress returned (>0 work, 0 none). */
int  rci_publisher_sleep(struct rci_publisher *p, int wake_fd, uint64_t timeout_ns);
/* The same, but a provider without a CQ wait fd sleeps up to nofd_max_ns
 * (not 50 us) while no operation of the publisher is posted: the caller's
 * idle backoff (pipeline/publish_thread.c). Still counted in
 * idle_sleeps_short. */
int  rci_publisher_sleep_nofd(struct rci_publisher *p, int wake_fd, uint64_t timeout_ns, uint64_t nofd_max_ns);

/* How long the peer's oldest outstanding send (DATA, PAGE or control) had
 * been waiting for its completion when progress last read the CQ, or, for an
 * RMA subscriber, how long its ring has had no room if that is longer; 0 when
 * it has none (or for an unknown id). Measured to the last CQ read, not to now,
 * so that a publisher thread that was not scheduled for a while does not see
 * its subscribers as behind. For the caller's slow-subscriber policy: liveness
 * itself (net/README.md, "Dead peers") looks only at what the peer sends. */
uint64_t rci_publisher_peer_oldest_age(struct rci_publisher *p, rci_peer_id peer);

/* Does this subscriber take its chunks by RMA writes into its ring
 * (its HELLO asked and the provider can)? Such a subscriber gets every chunk
 * with rci_publisher_send (send_buffered says -EMSGSIZE). */
bool rci_publisher_peer_rma(struct rci_publisher *p, rci_peer_id peer);
/* The chunks a subscriber said it handled in its BYE (wire version 3: a
 * subscriber of this build leaving in order): true and *chunks; false when
 * it has not said BYE with a count (an older subscriber, or it did not
 * leave in order). Valid in the RCI_PUB_PEER_BYE callback and until GONE. */
bool rci_publisher_peer_chunks_handled(struct rci_publisher *p, rci_peer_id peer, uint64_t *chunks);

/* ---- block streams (net/README.md, "Block stream") ----
 * A subscriber may ask in HELLO for every block of one card, written as they
 * are into its ring. The caller says which cards it streams (before
 * subscribers come: the owner's thread, like everything here); a HELLO for
 * another card, a ring that does not fit the card's blocks or a provider
 * without FI_RMA is refused with BYE(refused, RCI_REFUSED_STREAM_*). */
#define RCI_PUB_MAX_STREAM_CARDS 16u
struct rci_pub_stream_card {
    uint32_t index;             /* [card.N] */
    uint32_t block_size;
    uint64_t tag_base;
};
int  rci_publisher_set_stream_cards(struct rci_publisher *p, const struct rci_pub_stream_card *cards,
                                   unsigned n);
/* Is this an active stream subscriber (and of which card)? */
bool rci_publisher_peer_stream(struct rci_publisher *p, rci_peer_id peer, uint32_t *card);
/* Bytes (whole blocks) one span to it may have now: free space in its ring
 * up to the ring's end, its credit and the write size limits; 0 for an
 * unknown or gone peer. Also starts/ends its "no room" age
 * (rci_publisher_peer_oldest_age), as an RMA ring's. */
uint64_t rci_publisher_stream_room(struct rci_publisher *p, rci_peer_id peer);
/* Write one span (iov[0..n-1]: contiguous card-ring bytes, whole blocks,
 * at most stream_room, n <= the provider's iov limit) at its next ring
 * position. gap_before: blocks of the stream were dropped for it since the
 * last span it was written (its decoder must drop what is open;
 * RCI_RMA_IMM_STREAM_GAP, net/rma_ring.h). 0: on_send_complete(key) runs
 * exactly once later; -EAGAIN (no header slot, provider queue full),
 * -ENOBUFS (its share of the slots): nothing written; -ENOTCONN; -EFAULT
 * (unregistered); -EINVAL (a span it must not form). No callback runs inside. */
int  rci_publisher_stream_write(struct rci_publisher *p, rci_peer_id peer, const struct iovec *iov, unsigned n,
                               bool gap_before, uint64_t key);

/* Lowest number of free header slots since the previous call (watermark). */
uint32_t rci_publisher_available_slots(struct rci_publisher *p);

/* Close a subscriber (BYE, endpoint closed / RDM: address removed a heartbeat
 * later). Its outstanding keys come back through on_send_complete as they
 * complete, the rest (-ECONNRESET) once the provider provably let go
 * (net/README.md, Dead peers); or collect them with
 * rci_publisher_pending_sends(). No callback runs inside this call: its
 * RCI_PUB_PEER_GONE comes from the next progress call. */
int  rci_publisher_close_peer(struct rci_publisher *p, rci_peer_id peer);
/* Replace the allow list ([fabric] allow, CIDR text) that new connections
 * and HELLOs are checked against (the publisher's thread; a reload). Peers
 * already admitted stay: closing the ones the new list excludes is the
 * caller's (rci_publisher_close_peer). 0, or -EINVAL with the reason in err
 * and the old list kept. */
int  rci_publisher_set_allow(struct rci_publisher *p, const char *allow, char *err, size_t errlen);
/* Admit at most n peers from now on (max_subscribers; the publisher's thread;
 * a reload). Peers already admitted stay, new ones are refused while n or more
 * are connected. n may not exceed the max_subscribers the publisher was
 * created with: its buffers were sized for that many (-ERANGE, the reason in
 * err, the old value kept). */
int  rci_publisher_set_max_subscribers(struct rci_publisher *p, uint32_t n, char *err, size_t errlen);
/* Keys of sends to a closed or dead peer: its transport is closed now (RDM:
 * address removed), and if that proves the provider let go of its sends, up
 * to max keys are written to keys[] and released (no callback runs inside
 * this call).
 * Returns the count, 0 when none are left or the provider gave no proof
 * (they come through on_send_complete then), -ENOTCONN for an unknown id,
 * -EBUSY if the peer is still alive. */
int  rci_publisher_pending_sends(struct rci_publisher *p, rci_peer_id peer, uint64_t *keys,
                                unsigned max);

/* Active subscribers whose tag set contains tag (up to max ids; returns the
 * number found, which may exceed max). */
unsigned rci_publisher_subscribers_of(struct rci_publisher *p, uint64_t tag, rci_peer_id *out,
                                     unsigned max);
/* Active subscribers (through HELLO), up to max; returns the number. */
unsigned rci_publisher_peers(struct rci_publisher *p, rci_peer_id *out, unsigned max);
/* Printable address of a peer ("" for an unknown id). */
const char *rci_publisher_peer_name(struct rci_publisher *p, rci_peer_id peer);
/* A peer's tag set: *ranges points to its sorted, disjoint inclusive ranges,
 * valid until the next call into the publisher. Returns their number (0 and
 * *ranges = NULL for an unknown id). For mirroring subscriptions elsewhere,
 * e.g. on RCI_PUB_PEER_SUBSCRIPTIONS. */
unsigned rci_publisher_peer_ranges(struct rci_publisher *p, rci_peer_id peer,
                                  const struct rci_wire_range **ranges);

void rci_publisher_get_stats(const struct rci_publisher *p, struct rci_publisher_stats *s);
/* The fabric (read-only): provider answers such as tx_iov_limit. */
const struct rci_fabric *rci_publisher_fabric(const struct rci_publisher *p);
/* Last error met inside progress (a peer's failure, a lost page...). */
const char *rci_publisher_last_error(const struct rci_publisher *p);

#endif
