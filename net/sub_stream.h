/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_stream.h — a block stream on the subscriber side (net/README.md,
 * "Block stream"): the ring the publisher writes a card's blocks into, the
 * checks every span passes before it is decoded, and the hook through which
 * the decoder (which net/ may not include: api/client_stream.c) is driven.
 *
 * The ring is a dma/ ring with 1 KiB units (every block size is a multiple):
 * the decoder over it (readout.h, card = NULL) takes blocks from it and gives
 * them back, in any order and from any thread, as their chunks' views are
 * released; the read position it reaches is what CREDIT gives back.
 *
 * Connection positions: the publisher's positions of a connection start at
 * the ring offset HELLO named (start_offset = the ring's read position modulo
 * its size: nothing of the old connection may be held then); connection
 * position q is ring position base + q, base = read - read % size.
 *
 * Before HELLO the ring's (idle) positions are moved on to an offset that
 * every block size this ring can take divides (rci_sub_stream_realign): the
 * card's block size is known only from WELCOME, and a daemon restarted with
 * a larger one refuses a start_offset that is not a multiple of it.
 *
 * A span completion (immediate data: offset / 8 and length, net/rma_ring.h;
 * RCI_RMA_IMM_STREAM_GAP in the length: blocks were dropped before it, told
 * to on_gap when the span is taken, in turn)
 * is taken when it starts where the previous span ended, is a whole number
 * of blocks inside the ring and lies inside credited space; one before its
 * turn is held (at most RCI_SUB_STREAM_HOLD, none overlapping another or a
 * span taken); anything else is bad
 * (counted; the connection ends). */
#ifndef RCI_SUB_STREAM_H
#define RCI_SUB_STREAM_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "dma/dma_ring.h"
#include "net/fabric.h"
#include "net/wire.h"
#include "ringcast/sub.h"

#define RCI_SUB_STREAM_HOLD 64u
#define RCI_SUB_STREAM_UNIT 1024u
#define RCI_SUB_STREAM_MAX_BLOCK 65536u   /* block sizes: 1 KiB steps up to this (wire.h) */

/* The decoder's side, given to rci_sub_create (api/client_stream.c). Every
 * hook runs on the subscriber's thread (inside rc_sub_poll / destroy). */
struct rci_sub_stream_ops {
    /* WELCOME granted the stream: decode blocks of block_size over ring
     * (first time, the block size or tag base changed, or new_publisher: a
     * restarted daemon's blocks number their sequences anew: the hook
     * creates its decoder; otherwise the decoder goes on, and blocks missed
     * meanwhile show as sequence gaps). 0, or -errno with the reason in err
     * (the connection ends). */
    int  (*open)(void *ctx, struct rc_sub *s, struct rci_dma_ring *ring, uint32_t block_size,
                 uint64_t tag_base, bool new_publisher, char *err, size_t errlen);
    /* New blocks noted written (or views released): decode what is there,
     * advance the ring over what is given back. */
    void (*decode)(void *ctx);
    /* The connection ended: decode what is complete, cut the chunks left
     * open (their ends will not come). */
    void (*disconnect)(void *ctx);
    /* The ring was moved on while idle (rci_sub_stream_realign: nothing
     * there to decode): the decoder's position follows. */
    void (*moved)(void *ctx);
    /* The decoder's figures into st->stream_* (decoder counters). */
    void (*stats)(void *ctx, struct rc_sub_stats *st);
    void (*destroy)(void *ctx);
    /* Blocks were dropped for us just before ring position pos (a span
     * marked RCI_RMA_IMM_STREAM_GAP was taken; pos is not decoded yet):
     * chunks open when the decoder gets there must be dropped. */
    void (*gap)(void *ctx, uint64_t pos);
    void *ctx;
};

struct rci_sub_stream_held { uint64_t off; uint32_t len; bool gap; };

struct rci_sub_stream {
    struct rci_dma_ring *ring;     /* allocated once (create) */
    uint8_t *mem;
    uint64_t size;
    uint64_t align;                /* every block size that divides size divides this (create) */
    struct rci_fabric_mr mr;       /* registered per connection */
    bool on;                       /* this connection: the publisher writes */
    uint32_t block_size;
    uint64_t base;                 /* ring position of connection position 0 */
    uint64_t start;                /* connection position of the first span (HELLO's start_offset) */
    uint64_t expect;               /* connection position where the next span starts */
    uint64_t credit_sent;          /* connection position last given back (CREDIT) */
    struct rci_sub_stream_held held[RCI_SUB_STREAM_HOLD];
    uint32_t nheld;
    /* A span marked RCI_RMA_IMM_STREAM_GAP is taken: blocks were dropped
     * just before ring position pos (set by the caller after create). */
    void (*on_gap)(void *ctx, uint64_t pos);
    void *gap_ctx;
    uint64_t gaps;                 /* such spans taken */
    char why[160];                 /* the last bad span */
};

/* Allocate the ring (size: a multiple of RCI_SUB_STREAM_UNIT,
 * RCI_WIRE_RMA_MIN_RING..MAX). */
int  rci_sub_stream_create(struct rci_sub_stream *r, uint64_t size, char *err, size_t errlen);
void rci_sub_stream_destroy(struct rci_sub_stream *r);
/* Nothing taken and not given back: a new connection may start. */
bool rci_sub_stream_idle(const struct rci_sub_stream *r);
/* Only while idle, before connect: move the ring's positions on (a take
 * given back at once: nothing is decoded there) to the next offset that is
 * a multiple of align (a new lap when none is left in this one), so that
 * start_offset suits any card's block size. Returns the bytes skipped (0:
 * aligned already), or -EBUSY when not idle. The caller tells the decoder
 * (ops->moved) when it returns more than 0. */
int64_t rci_sub_stream_realign(struct rci_sub_stream *r);
/* A new connection: register the ring for remote write, fill what HELLO
 * announces. Only while idle. */
int  rci_sub_stream_connect(struct rci_sub_stream *r, struct rci_fabric *f, struct fid_ep *ep,
                           struct rci_wire_hello_rma *ring, uint64_t *start_offset, char *err, size_t errlen);
/* The positions part of connect (tests use it without a fabric). */
void rci_sub_stream_start(struct rci_sub_stream *r);
void rci_sub_stream_disconnect(struct rci_sub_stream *r);
/* A span completion: 1 when it (and perhaps held ones after it) was taken:
 * the ring's written position moved, decode; 0 held; -EPROTO bad (r->why). */
int  rci_sub_stream_arrived(struct rci_sub_stream *r, uint64_t imm, uint64_t *spans, uint64_t *bytes);
/* Connection position to give back in CREDIT, or 0 when not worth a message
 * (under a quarter of the ring more than credit_sent while the publisher
 * has over a quarter of the ring left to write; force: any progress). */
uint64_t rci_sub_stream_credit_due(struct rci_sub_stream *r, bool force);

/* Called by the decoder's sink (inside ops->decode): hand one chunk on as a
 * view (on_view) or to on_data; key goes back by release(ctx, key) once the
 * program is done with it (at once for on_data, at the view's last release).
 * pieces: the chunk's bytes in the ring (or the decoder's spill area). */
void rci_sub_stream_deliver(struct rc_sub *s, uint64_t tag, uint32_t flags, const struct iovec *pieces,
                            unsigned n, uint32_t len, uint64_t key, void (*release)(void *ctx, uint64_t key),
                            void *ctx);

/* The subscriber with a block-stream decoder (ops for delivery =
 * RC_SUB_DELIVERY_STREAM, NULL otherwise); rc_sub_create in api/ calls it.
 * ops->destroy runs in rc_sub_destroy (also when this fails after taking ops). */
int  rci_sub_create(const struct rc_sub_params *params, const struct rci_sub_stream_ops *ops,
                    struct rc_sub **out, char *err, size_t errlen);

#endif
