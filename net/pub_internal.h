/* SPDX-License-Identifier: BSD-3-Clause */
/* pub_internal.h — the publisher's state, shared by publisher.c (peers,
 * control protocol, progress), zc_send.c (header slots, fragments) and
 * buffered.c (pages). Not for use outside net/.
 *
 * Outstanding transmit operations ("tx ops") are header slots (one per DATA
 * message) and pages (one per PAGE message). Both live in one array: ids
 * 0..nslots-1 are slots, nslots..nslots+npages-1 are pages. A posted op is on
 * its peer's doubly linked list (through the array: no malloc), oldest first,
 * so a dead peer's ops can be found and released, and the age of its oldest
 * send (rci_publisher_peer_oldest_age) only needs to look at the list head.
 *
 * Every op carries a generation, bumped each time it is released; the
 * op_context given to libfabric encodes (kind, index, generation), so a
 * completion arriving after its op was released (dead peer) is recognised
 * and ignored. */
#ifndef RCI_PUB_INTERNAL_H
#define RCI_PUB_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include "net/fabric.h"
#include "net/half_open.h"
#include "net/mem_pool.h"
#include "net/publisher.h"
#include "net/wire.h"

/* A DEBUG line through the creator's hook (rci_publisher_callbacks.log). */
#define pub_debug(p, ...) \
    rci_log_hook_say(&(p)->cb.log, RCI_LOG_DEBUG, false, __FILE__, __LINE__, __VA_ARGS__)

#define RCI_PUB_NONE UINT32_MAX
#define RCI_PUB_MAX_IOV 16u             /* stack iov arrays; tx_iov_limit is clamped to it */
#define RCI_PUB_RX_PER_PEER 4u          /* control receives posted per subscriber */
#define RCI_PUB_CTRL_QUEUE 8u           /* control messages waiting for the provider */
#define RCI_PUB_CTRL_PER_PEER 4u        /* control send buffers per subscriber */
#define RCI_PUB_CTRL_SPARE 8u           /* for refusals to senders without a peer slot */
#define RCI_PUB_CTRL_MAX 48u            /* largest control message we send (WELCOME granting a stream) */
#define RCI_PUB_CQ_BATCH 32u
#define RCI_PUB_PEER_NAME_MAX 112u      /* a subscriber's printable address (fi_av_straddr, shm names) */
/* Smallest rx_buffer_size served: 4 KiB (a DATA header and 4056 B of
 * payload per fragment). Below it one chunk costs many fragments (header
 * slots, messages, completions: a 9000 B chunk at the wire's floor of 72 B
 * needs 282 messages, and a subscriber announcing such a buffer produced a
 * WARN per chunk, issue 12); at 4 KiB a 1 MiB chunk needs 259. */
#define RCI_PUB_MIN_RX_BUFFER 4096u

/* op_context = kind << 60 | generation << 28 | index (index < 2^28). */
enum rci_pub_ctx_kind { RCI_CTX_TXOP = 1, RCI_CTX_RX = 2 };
#define RCI_PUB_INDEX_BITS 28u
#define RCI_PUB_GEN_MASK 0xffffffffu
static inline void *rci_pub_ctx(enum rci_pub_ctx_kind kind, uint32_t index, uint32_t gen)
{
    return (void *)(uintptr_t)(((uint64_t)kind << 60) | ((uint64_t)gen << RCI_PUB_INDEX_BITS) | index);
}
static inline enum rci_pub_ctx_kind rci_pub_ctx_kind(void *ctx)
{
    return (enum rci_pub_ctx_kind)((uint64_t)(uintptr_t)ctx >> 60);
}
static inline uint32_t rci_pub_ctx_index(void *ctx)
{
    return (uint32_t)((uint64_t)(uintptr_t)ctx & ((1u << RCI_PUB_INDEX_BITS) - 1));
}
static inline uint32_t rci_pub_ctx_gen(void *ctx)
{
    return (uint32_t)(((uint64_t)(uintptr_t)ctx >> RCI_PUB_INDEX_BITS) & RCI_PUB_GEN_MASK);
}

enum rci_txop_state { RCI_TXOP_FREE = 0, RCI_TXOP_FILLING, RCI_TXOP_POSTED };

struct rci_pub_txop {
    uint32_t gen;
    uint8_t state;             /* enum rci_txop_state */
    uint32_t peer;             /* peer index while FILLING/POSTED */
    uint32_t prev, next;       /* the peer's list of posted ops */
    uint64_t since_ns;         /* POSTED: when posted; FILLING: first record */
    uint64_t key;              /* slot without record: the key it completes */
    uint32_t record;           /* slot of a fragmented send: its record */
    uint32_t bounce;           /* slot of a gathered fragment: its bounce buffer, or RCI_PUB_NONE */
};

/* A fragmented send: the key completes after its last fragment. */
struct rci_pub_sendrec {
    uint64_t key;
    uint32_t remaining;        /* fragments posted and not yet completed/released */
    int status;                /* first error among the fragments */
};

/* Where the next fragment of a chunk starts: piece index and offset inside
 * it, bytes of payload planned so far. */
struct rci_pub_frag_cursor { unsigned piece; size_t off; uint64_t done; };

#define RCI_PUB_RESUME_PIECES 256u   /* pieces a deferred fragmented send can keep */

/* A fragmented send whose later fragment met -FI_EAGAIN: its key is accepted
 * already, fragment 0.. next_index-1 are posted; the rest is posted from
 * progress (fragments of a chunk stay back to back: further sends to the
 * peer return -EAGAIN until it is done). Fixed per-peer storage. */
struct rci_pub_resume {
    bool active;
    uint16_t next_index, frag_count;
    uint32_t record;           /* its rci_pub_sendrec: holds the posting reference */
    uint32_t flags, total;
    uint64_t tag, max_payload;
    uint64_t since_ns;         /* when the first fragment was deferred */
    struct rci_pub_frag_cursor c;   /* over iov[0..n-1] */
    unsigned n;
    struct iovec *iov;         /* RCI_PUB_RESUME_PIECES, allocated at create */
    bool gather;               /* its fragments are gather-copied into bounce buffers */
    bool has_desc;             /* sent with the caller's descriptors (send_desc): */
    void **desc;               /* ... one per iov, RCI_PUB_RESUME_PIECES, allocated at create */
};

/* RMA delivery to one subscriber (net/rma_write.c): its receive ring as its
 * HELLO announced it, where the next record goes and how far it released. */
struct rci_pub_rma {
    bool asked;                /* its HELLO carried an RMA ring: WELCOME says what we do */
    bool on;                   /* records are written into its ring */
    enum rci_rma_fallback fallback;  /* asked but served by send: why */
    uint64_t base, size, key;  /* remote address of offset 0 (or 0), ring bytes, MR key */
    uint64_t wpos;             /* position after the last record written */
    uint64_t credit;           /* its released position (CREDIT) */
    uint64_t max_record;       /* largest record (header + payload) */
    uint64_t full_since_ns;    /* since when its ring had no room for the next chunk (0: room) */
    bool credit_stalled;       /* waiting for CREDIT (said once at DEBUG, and when it ends) */
};

/* A block-stream subscriber (net/stream_write.c): which card it takes.
 * Its ring is described by its struct rci_pub_rma (on as well). */
struct rci_pub_stream {
    bool on;
    uint32_t card, block_size;
    uint64_t tag_base;
};

enum rci_peer_state {
    RCI_PEER_FREE = 0,
    RCI_PEER_CONNECTING,        /* MSG: accepted, FI_CONNECTED not yet seen */
    RCI_PEER_CONNECTED,         /* waiting for HELLO */
    RCI_PEER_ACTIVE,            /* through HELLO: may receive data */
    RCI_PEER_CLOSED,            /* transport gone and the provider let go (close_transport
                                * returned true): outstanding ops still to release */
    RCI_PEER_DRAINING,          /* cut off, out of the table, no new sends; its posted ops may
                                * still read the ring: keys come back with their completions.
                                * RDM: its address stays until drain_deadline_ns (its BYE can
                                * go out) or until nothing is outstanding; the removal
                                * releases the rest if it proves the provider let go
                                * (has_addr false afterwards); otherwise completions only. */
};

enum rci_peer_doom { RCI_DOOM_NONE = 0, RCI_DOOM_BYE, RCI_DOOM_SHUTDOWN, RCI_DOOM_SILENCE,
                    RCI_DOOM_STUCK, RCI_DOOM_ERROR, RCI_DOOM_LOCAL, RCI_DOOM_PROVIDER };

/* tcp MSG: the watch over a peer's oldest outstanding send (publisher.c,
 * check_send_stall; net/README.md "Stalled sends"). */
struct rci_pub_stall {
    uint32_t op, gen;           /* the op watched, RCI_PUB_NONE: none */
    uint64_t since_ns;          /* when the watch began (a timer after it became the oldest) */
    uint64_t starved_base_ns;   /* p->starved_ns when the watch began */
    uint32_t probes;            /* probes run on it */
    uint32_t held;              /* ... that found its socket's send queue empty */
};

struct rci_pub_ctrl_msg { uint8_t len; uint8_t bytes[RCI_PUB_CTRL_MAX]; };

/* The pool's uses (publisher.c, init_pool). */
enum rci_pub_use { RCI_PUB_USE_CTRL, RCI_PUB_USE_RX, RCI_PUB_USE_PAGES, RCI_PUB_USES };

struct rci_pub_peer {
    uint32_t gen;
    enum rci_peer_state state;
    enum rci_peer_doom doom;    /* set by handlers; teardown happens in progress */
    struct fid_ep *ep;         /* MSG */
    struct rci_pub_stall stall; /* MSG: its oldest send, watched */
    fi_addr_t addr;            /* RDM */
    bool has_addr;
    uint16_t decl_len;         /* RDM: the address its HELLO declared (decl) */
    uint8_t decl[RCI_WIRE_MAX_ADDR];
    uint32_t rx_max;           /* HELLO.rx_buffer_size */
    uint64_t client_id;
    uint8_t version;           /* negotiated at HELLO (WELCOME carries it) */
    bool said_handled;         /* its BYE carried chunks_handled (version 3) */
    uint64_t chunks_handled;   /* ... that count */
    bool joined;               /* HELLO accepted (counted in peers_active) */
    bool gone_due;             /* left the table; RCI_PUB_PEER_GONE(gone_id) not yet reported */
    rci_peer_id gone_id;
    bool connected;            /* MSG: FI_CONNECTED read (a HELLO may come first); RDM: true */
    uint64_t last_rx_ns, last_hb_tx_ns;
    uint64_t rx_seen_ns, starved_base_ns;  /* check_liveness: p->starved_ns when last_rx_ns was seen */
    uint32_t op_head, op_tail, nops;
    uint32_t nslots_held;      /* header slots posted to it (its share of the pool) */
    uint32_t npages_held;      /* pages filling or posted to it */
    uint32_t page;             /* page being filled, or RCI_PUB_NONE */
    uint32_t data_seq;         /* stream sequence number of the next DATA/PAGE posted */
    uint64_t drain_deadline_ns;  /* RCI_PEER_DRAINING: address removed at the latest then */
    struct rci_pub_resume resume;
    struct rci_pub_rma rma;
    struct rci_pub_stream stream;
    struct rci_wire_range *ranges;   /* sorted, disjoint, not adjacent */
    uint32_t nranges;
    struct rci_pub_ctrl_msg ctrl[RCI_PUB_CTRL_QUEUE];
    uint32_t ctrl_head, ctrl_count;
    char name[RCI_PUB_PEER_NAME_MAX];
};

struct rci_pub_rxbuf {
    struct rci_mem_buf *mb;    /* its pool buffer while posted (NULL while on rx_free) */
    uint32_t gen;
    uint32_t peer;             /* MSG: owner; RDM: RCI_PUB_NONE */
    bool posted;
};

struct rci_publisher {
    struct rci_fabric fab;
    struct rci_publisher_callbacks cb;
    uint64_t eagain_streak;    /* sends refused -FI_EAGAIN in a row (DEBUG at its start and end) */
    struct rci_fabric_mr region[RC_PUB_MAX_REGIONS];
    unsigned nregions;
    unsigned iov_max;          /* usable iovs per message, header included */

    uint8_t *slot_mem;
    struct rci_fabric_mr slot_mr;
    /* Control send and receive buffers and buffered pages come from one
     * registered pool (net/mem_pool.h), a class each (pool_cls[RCI_PUB_USE_*]),
     * registered once per class block; taken when a page opens, a control
     * message is posted or a receive is posted, given back when done. */
    struct rci_mem_pool *pool;
    int pool_cls[RCI_PUB_USES];
    struct rci_mem_buf **op_buf;   /* page and control ops' buffers (index op - nslots), NULL while free */
    uint32_t nslots, slot_size, npages, page_size, nrx, rx_size, nctrl;
    uint32_t *ctrl_free, nctrl_free;
    uint32_t ctrl_peerless;    /* refusals in flight (at most RCI_PUB_CTRL_SPARE) */

    struct rci_pub_txop *ops;   /* nslots + npages */
    uint32_t *slot_free, nslot_free, min_free_slots;
    uint32_t *page_free, npage_free;
    uint8_t *bounce_mem;       /* gather-copy bounce buffers (bounce.c) */
    struct rci_fabric_mr bounce_mr;
    uint32_t nbounce, bounce_size, nbounce_free;
    uint32_t *bounce_free;
    struct rci_pub_sendrec *recs;
    uint32_t *rec_free, nrec_free;
    struct rci_pub_rxbuf *rx;
    uint32_t *rx_free, nrx_free;

    struct rci_pub_peer *peers;
    uint32_t npeers;
    uint32_t admit_max;        /* peers admitted at most: max_subscribers, a reload may lower it (<= npeers) */
    bool run_over;             /* rci_publisher_end_run: every active peer was told BYE, later ones
                                * are told at their WELCOME */
    uint64_t publisher_id;
    uint64_t next_timer_ns, timer_period_ns;
    uint64_t last_timers_ns;   /* when run_timers last ran */
    uint64_t idle_period_ns;   /* timer period with nothing in flight (rci_publisher_sleep) */
    uint32_t ndoomed;          /* peers marked for teardown (done in progress only) */
    /* shm: region files of closed peers whose process still looked alive
     * then (a SIGKILLed subscriber can take longer than peer_timeout to be
     * gone on a loaded machine): tried again at each timer tick for
     * RCI_PUB_SHM_RETRY_NS (publisher.c, retry_shm_reclaims). */
    struct { char name[RCI_PUB_PEER_NAME_MAX]; uint64_t since_ns; } shm_retry[8];
    uint32_t nshm_retry;
    uint32_t nclosed;          /* closed peers whose keys are not yet reported */
    uint32_t ndraining;        /* peers in RCI_PEER_DRAINING */
    uint32_t ngone_due;        /* peers whose GONE event progress has yet to report */
    uint32_t nresuming;        /* peers with resume.active */
    uint64_t last_progress_ns; /* start of the previous progress call */
    uint64_t starved_ns;       /* total of the pauses between progress calls over 50 ms */
    uint32_t ctrl_waiting;     /* peers with control messages waiting */
    struct rci_wire_range *scratch;  /* RCI_WIRE_MAX_RANGES: subscription edits */
    fi_addr_t refused[8];      /* RDM: refused addresses, removed from the AV later */
    uint64_t refused_ns;       /* when the oldest of them was refused */
    uint32_t nrefused;

    struct rci_pub_fault_state {
        uint64_t posts, completions;   /* data/page posts and ok completions seen */
        uint64_t hold_posts;           /* data/page posts seen by fault_hold_after */
        uint32_t storm_left;           /* -FI_EAGAIN refusals still to give */
        uint32_t streak_peer;          /* peer index of the current streak */
        uint64_t streak_until_ns;      /* posts to it are refused until then */
        bool streak_armed;             /* the Nth post came: the streak begins at the next
                                          later fragment (frag_index > 0) of a DATA send */
    } fault;

    struct rci_pub_stream_card stream_cards[RCI_PUB_MAX_STREAM_CARDS];   /* rci_publisher_set_stream_cards */
    unsigned nstream_cards;

    struct rci_half_open half_open;   /* tcp MSG: connections stuck in the handshake */
    bool half_open_on;

    struct rci_publisher_stats st;
    char err[320];
};

/* publisher.c */
/* A buffer of the pool's class for `use`, or NULL (counted exhausted by the pool). */
struct rci_mem_buf *rci_pub_buf_get(struct rci_publisher *p, enum rci_pub_use use);
struct rci_pub_peer *rci_pub_peer_of(struct rci_publisher *p, rci_peer_id id);
int  rci_pub_poll_cq(struct rci_publisher *p);
void rci_pub_peer_fail(struct rci_publisher *p, uint32_t peer, enum rci_peer_doom why);
/* Post one message [iov...] to a peer: fi_sendv to its ep / fi_addr. */
int  rci_pub_post(struct rci_publisher *p, struct rci_pub_peer *peer, const struct iovec *iov,
                 void **desc, size_t n, void *ctx);

rci_peer_id rci_pub_peer_id(const struct rci_publisher *p, const struct rci_pub_peer *peer);
/* A free peer slot, reset, state CONNECTED; NULL when max_subscribers. */
struct rci_pub_peer *rci_pub_new_peer(struct rci_publisher *p, uint64_t now);
struct rci_pub_peer *rci_pub_peer_by_addr(struct rci_publisher *p, fi_addr_t addr);

/* pub_control.c: validate and act on one received message. owner is the peer
 * it came from (NULL: an RDM sender not known yet; only HELLO is accepted). */
void rci_pub_control_message(struct rci_publisher *p, struct rci_pub_peer *owner,
                            const uint8_t *buf, size_t len);
void rci_pub_send_heartbeat(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t now);
void rci_pub_send_bye(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_bye_reason why);
/* Refuse a peer with a slot: counted in connections_refused, named in the
 * last error (why + detail), told BYE(refused, why), then closed. */
void rci_pub_refuse_peer(struct rci_publisher *p, struct rci_pub_peer *peer, enum rci_refusal why,
                        const char *detail);
int  rci_pub_ctrl_init(struct rci_publisher *p, char *err, size_t errlen);
void rci_pub_ctrl_fini(struct rci_publisher *p);
/* A control buffer's send completed or was released. */
void rci_pub_ctrl_done(struct rci_publisher *p, uint32_t op_id);
/* Retry queued control messages of every peer (provider queue was full). */
void rci_pub_flush_control(struct rci_publisher *p);
/* Drop a closing peer's queued control messages. */
void rci_pub_drop_control(struct rci_publisher *p, struct rci_pub_peer *peer);
/* RDM: remove refused addresses from the AV once their BYE had a heartbeat
 * period to go out (all of them when `now` is UINT64_MAX). */
void rci_pub_forget_refused(struct rci_publisher *p, uint64_t now);
/* RDM: send a peerless BYE to addr and remove it from the AV a heartbeat
 * period later (with the refused addresses). */
void rci_pub_bye_address(struct rci_publisher *p, fi_addr_t addr, enum rci_bye_reason reason,
                        enum rci_refusal why);

/* pub_faults.c: fault injection ([fabric] fault_*), data and page ops only. */
/* true: refuse this post to peer index `peer` (op_context ctx) with
 * -FI_EAGAIN (a storm or that peer's streak is on). */
/* hdr: the message's first iov (its wire header) or NULL (RMA and stream
 * writes: no streak waits for a later fragment there). */
bool rci_pub_fault_refuse_post(struct rci_publisher *p, uint32_t peer, void *ctx, const struct iovec *hdr);
/* true: report this post as done without handing it to the provider
 * (fault_hold_after): it never completes, as a send the provider keeps. */
/* One RMA write of [iov...] (len bytes) at connection position pos of the
 * peer's ring, with the immediate data the subscriber checks it by
 * (rma_ring.h), imm_flags OR-ed into its length (RCI_RMA_IMM_STREAM_GAP):
 * RMA records (rma_write.c) and stream spans (stream_write.c).
 * Returns fi_writemsg's result, or -FI_EAGAIN for an injected refusal. */
int rci_pub_rma_post(struct rci_publisher *p, struct rci_pub_peer *peer, struct fid_ep *ep, uint32_t imm_flags,
                     const struct iovec *iov, void **desc, size_t n, uint64_t pos, uint64_t len, void *ctx);
bool rci_pub_fault_hold_post(struct rci_publisher *p, void *ctx);
/* Turn a successful completion into an error one when it is due. */
void rci_pub_fault_completion(struct rci_publisher *p, struct rci_fabric_cqe *e);

/* zc_send.c */
int  rci_zc_init(struct rci_publisher *p, char *err, size_t errlen);
void rci_zc_fini(struct rci_publisher *p);
/* A txop completed (status 0 or -errno) or was released (peer dead). */
void rci_zc_slot_done(struct rci_publisher *p, uint32_t slot, int status, uint64_t *pulled_key,
                     bool *pulled);

/* bounce.c: gather-copy bounce buffers for chunks whose pieces need more
 * messages than their bytes do (rci_publisher_send_gather). */
int  rci_bounce_init(struct rci_publisher *p, char *err, size_t errlen);
void rci_bounce_fini(struct rci_publisher *p);
/* A free buffer's index, or RCI_PUB_NONE when none is free. */
uint32_t rci_bounce_take(struct rci_publisher *p);
void rci_bounce_give(struct rci_publisher *p, uint32_t b);
uint8_t *rci_bounce_addr(const struct rci_publisher *p, uint32_t b);
/* Copy the next fragment's payload (at most max bytes, from the cursor on)
 * into buffer b; advances the cursor like the zero-copy plan. Returns the
 * bytes copied. */
uint32_t rci_bounce_gather(struct rci_publisher *p, uint32_t b, const struct iovec *src, unsigned n,
                           struct rci_pub_frag_cursor *c, uint64_t max);

/* Post what deferred fragmented sends still have to post (from progress). */
void rci_zc_resume_all(struct rci_publisher *p);
/* The peer leaves: its deferred fragments are not sent; the posting
 * reference of their send goes (-ECONNRESET), so the key completes with the
 * last posted fragment. keys != NULL: a key completing now is written to
 * keys[(*count)++] (at most max) instead of the callback. */
void rci_zc_resume_abandon(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t *keys,
                          unsigned max, unsigned *count);

/* rma_write.c: RMA delivery (net/README.md, "RMA delivery"). */
/* HELLO's RMA part (if any): decide the peer's delivery. Returns false when
 * the peer was refused (the region cannot be written). */
bool rci_rma_hello(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len);
/* Append WELCOME's RMA part for a peer that asked; returns the new length. */
ssize_t rci_rma_welcome(const struct rci_pub_peer *peer, uint8_t *msg, size_t cap, ssize_t len);
/* CREDIT from an RMA peer. */
void rci_rma_credit(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len);
/* Is there room for a first record of at most len bytes? (false: -ENOBUFS) */
bool rci_rma_room(struct rci_publisher *p, struct rci_pub_peer *peer, uint64_t len);
/* Write one record [iov...] at the peer's next place with FI_REMOTE_CQ_DATA.
 * -FI_EAGAIN when its ring has no room (or the provider's queue is full). */
int  rci_rma_post(struct rci_publisher *p, struct rci_pub_peer *peer, const struct iovec *iov,
                 void **desc, size_t n, void *ctx);

/* stream_write.c: block streams (net/README.md, "Block stream"). */
/* HELLO's stream part: 0 none, 1 a stream subscriber (its ring set up),
 * -1 refused (told BYE(refused) with the reason). */
int  rci_stream_hello(struct rci_publisher *p, struct rci_pub_peer *peer, const uint8_t *buf, size_t len);
/* Append WELCOME's stream part for a stream subscriber; returns the new length. */
ssize_t rci_stream_welcome(const struct rci_pub_peer *peer, uint8_t *msg, size_t cap, ssize_t len);

/* buffered.c */
int  rci_buf_init(struct rci_publisher *p, char *err, size_t errlen);
void rci_buf_fini(struct rci_publisher *p);
void rci_buf_page_done(struct rci_publisher *p, uint32_t page, int status);
/* Post pages whose flush timeout passed; returns pages posted. */
int  rci_buf_flush_due(struct rci_publisher *p, uint64_t now);
/* The peer leaves: drop its filling page (records were already released). */
void rci_buf_drop_filling(struct rci_publisher *p, struct rci_pub_peer *peer);

/* Per-subscriber quotas (publisher.c): may this peer take `more` header
 * slots / one more page? Its fair share of each pool is pool / (active
 * subscribers + 1) (pages: at least 2), and of the RDM endpoint's tx queue
 * tx_size / (active + 1) operations (MSG: its own endpoint's queue). It may
 * borrow beyond while a fair share stays free after the take. So subscribers
 * that stopped taking their data never hold all a newcomer or a fast one
 * needs: what they hold leaves at least a fair share free. One over-sized
 * send is let through while the peer holds no slot. false: refuse with
 * -ENOBUFS (counted in again_peer_quota). */
bool rci_pub_slots_within_quota(struct rci_publisher *p, const struct rci_pub_peer *peer, uint32_t more);
bool rci_pub_page_within_quota(struct rci_publisher *p, const struct rci_pub_peer *peer);

/* Shared op list helpers (publisher.c). */
void rci_pub_op_link(struct rci_publisher *p, uint32_t peer, uint32_t op, uint64_t now);
void rci_pub_op_unlink(struct rci_publisher *p, uint32_t op);

#endif
