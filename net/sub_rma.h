/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_rma.h — RMA delivery on the subscriber side (net/README.md, "RMA
 * delivery"): the receive ring the publisher writes records into, and the
 * checks every record passes before the subscriber hands it on.
 *
 * The ring is a dma/ ring (struct rci_dma_ring) with its key tracker: a
 * record's space is taken when the record's turn comes and released (from
 * any thread, in any order) when it was handed on; the released prefix is
 * what CREDIT gives back to the publisher.
 *
 * Records come as remote-write completions carrying (offset, length) in
 * their immediate data (net/rma_ring.h). A completion may come before its
 * turn (providers complete out of order): it is held (at most
 * RCI_SUB_RMA_HOLD) until the records before it were taken. A record is
 * taken only when all of these hold, otherwise it is bad (counted; the
 * connection ends):
 *  - it lies inside the ring and is at least a DATA header long;
 *  - its header passes rci_wire_check_data() with the announced length;
 *  - its stream sequence number is not one already taken (or held);
 *  - in turn, it starts exactly where the placement rule puts the record
 *    after the previous one (rci_rma_place), and it lies in released space.
 * Used by one thread (the subscriber's); only rci_sub_rma_release() may run
 * elsewhere (a view released in another thread, net/sub_view.h). */
#ifndef RCI_SUB_RMA_H
#define RCI_SUB_RMA_H
#include <stdbool.h>
#include <stdint.h>
#include "dma/dma_ring.h"
#include "net/fabric.h"
#include "net/wire.h"

#define RCI_SUB_RMA_HOLD 64u

struct rci_sub_rma_held { uint32_t seq, len; uint64_t off; };

struct rci_sub_rma {
    struct rci_dma_ring *ring;     /* allocated once (create) */
    uint8_t *mem;
    uint64_t size;
    struct rci_fabric_mr mr;       /* registered per connection */
    bool on;                       /* this connection: the publisher writes */
    uint64_t base;                 /* ring position of this connection's position 0 */
    uint64_t expect;               /* where the placement of the next record starts */
    uint64_t credit_sent;          /* released position last given back (the caller sets it
                                    * once its CREDIT is queued) */
    struct rci_sub_rma_held held[RCI_SUB_RMA_HOLD];
    uint32_t nheld;
    uint64_t skipped;              /* bytes skipped at the ring's end, over all connections */
    char why[160];                 /* the last bad record */
};

/* What the next record is. */
struct rci_sub_rma_record {
    const uint8_t *buf;            /* the DATA message in the ring */
    uint32_t len;
    uint64_t key;                  /* give to rci_sub_rma_release() once handed on */
};

/* Allocate the ring (size: multiple of 8, RCI_WIRE_RMA_MIN_RING..MAX). */
int  rci_sub_rma_create(struct rci_sub_rma *r, uint64_t size, char *err, size_t errlen);
void rci_sub_rma_destroy(struct rci_sub_rma *r);
/* A new connection: register the ring for remote write (ep: for FI_MR_ENDPOINT)
 * and fill what HELLO announces. Positions start again at the ring's current
 * released position (nothing of an old connection is outstanding). */
int  rci_sub_rma_connect(struct rci_sub_rma *r, struct rci_fabric *f, struct fid_ep *ep,
                        struct rci_wire_hello_rma *announce, char *err, size_t errlen);
/* The positions part of connect (tests use it without a fabric). */
void rci_sub_rma_start(struct rci_sub_rma *r);
/* A subscriber's receive ring of size bytes (a multiple of unit, within
 * the range HELLO allows), for RMA delivery and the block stream; what:
 * the parameter's name for the error. */
int  rci_sub_ring_create(const char *what, uint64_t size, uint32_t unit, struct rci_dma_ring **ring,
                         char *err, size_t errlen);
/* Register a subscriber's receive ring [mem, mem + size) for remote write
 * on this connection and fill what HELLO announces of it (base, as
 * FI_MR_VIRT_ADDR says, length, key): RMA delivery's ring and the block
 * stream's (sub_stream.c). */
int  rci_sub_ring_announce(struct rci_fabric *f, struct fid_ep *ep, void *mem, uint64_t size,
                           struct rci_fabric_mr *mr, struct rci_wire_hello_rma *announce, char *err, size_t errlen);
/* The connection ended: deregister, forget held completions. */
void rci_sub_rma_disconnect(struct rci_sub_rma *r);

/* A remote-write completion (immediate data imm), with next_seq the
 * stream sequence number due. Returns 1 when the record is due now (*rec
 * filled, its space taken: hand it on, then release), 0 when it was held,
 * -EPROTO when it is bad (r->why says why). */
int  rci_sub_rma_arrived(struct rci_sub_rma *r, uint64_t imm, uint32_t next_seq,
                        struct rci_sub_rma_record *rec);
/* The held record whose turn came with next_seq: 1 (*rec filled as above),
 * 0 when none is held for it, -EPROTO when it is bad. */
int  rci_sub_rma_next_held(struct rci_sub_rma *r, uint32_t next_seq, struct rci_sub_rma_record *rec);
/* Give a taken record's space back (any thread). */
void rci_sub_rma_release(struct rci_sub_rma *r, uint64_t key);
/* Space taken and not yet released (views of records still held). */
bool rci_sub_rma_busy(struct rci_sub_rma *r);
/* Released position (of this connection) to give back in a CREDIT, or 0
 * when not worth a message yet (less than a quarter of the ring more than
 * credit_sent; force: any progress). */
uint64_t rci_sub_rma_credit_due(struct rci_sub_rma *r, bool force);

#endif
