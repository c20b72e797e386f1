/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_view.h — the subscriber's views (public contract: ringcast/view.h).
 *
 * A root view is what on_view() gets; it holds the memory behind it:
 *  - RX: the receive buffer of each piece, through the buffer's reference
 *    count (the subscriber posts a buffer again only while its count is 0):
 *    one piece for a DATA message or a page record, one per fragment for a
 *    chunk that came in fragments and was gathered, not copied;
 *  - REASM: a reassembly buffer (struct rci_reasm, freed by its last
 *    reference when the subscriber moved on to another one);
 *  - RMA: the ring key of each piece's record (rci_sub_rma_release at the end).
 * RX and RMA views hold per piece (union rci_view_piece_hold), so the pieces
 * of one chunk gathered from several messages or records are given back
 * together, each exactly once, by the view's last release. A slice holds
 * its parent. The last release gives the memory back and returns the view
 * to its pool (or frees it: slices, overflow views).
 *
 * The pool: `count` views of RC_VIEW_MAX_PIECES pieces, allocated at
 * create. Only the subscriber's thread takes views (rci_view_get), from a
 * private list refilled with one __cds_lfs_pop_all of the stack that
 * releases push onto from any thread (as readout/chunk_pool.c): one popper,
 * so no ABA. When both are empty (the program holds them all) a view is
 * allocated with malloc and freed at its release (counted: allocated). */
#ifndef RCI_SUB_VIEW_H
#define RCI_SUB_VIEW_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>
#include "ringcast/view.h"
#include "net/sub_rma.h"

enum rci_view_kind { RCI_VIEW_RX, RCI_VIEW_REASM, RCI_VIEW_RMA, RCI_VIEW_SLICE, RCI_VIEW_EXT };

/* EXT views (a block stream's chunk, net/sub_stream.h): one key of their
 * owner's, given back once by release(ctx, key) at the view's last release. */
struct rci_view_ext {
    void (*release)(void *ctx, uint64_t key);
    void *ctx;
};

/* A reassembly buffer: the subscriber holds one reference to its current
 * one, each view of a reassembled chunk another. */
struct rci_reasm {
    atomic_uint refs;
    size_t size;
    uint8_t data[];
};

struct rci_view_pool;

/* What one piece of an RX or RMA view holds until the view's last release. */
union rci_view_piece_hold {
    atomic_uint *rx_refs;            /* RX: the view count of the receive buffer it lies in */
    uint64_t key;                    /* RMA: the ring key of the record it lies in */
};

struct rc_view {
    struct cds_lfs_node node;        /* on the pool's stack while free */
    atomic_uint refs;
    struct rci_view_pool *pool;      /* its pool (NULL: a slice) */
    bool heap;                       /* malloc'd: freed at the end, not pushed */
    uint64_t tag;
    uint32_t flags;
    enum rci_view_kind kind;
    size_t len;
    unsigned npieces, cap;
    struct rc_view_piece *piece;     /* cap entries */
    union {
        struct rci_reasm *reasm;     /* REASM */
        struct rc_view *parent;      /* SLICE */
        struct rci_sub_rma *rma;     /* RMA: whose keys */
        struct rci_view_ext ext;     /* EXT: who takes the key back */
    } hold;
    uint64_t ext_key;                /* EXT: the key */
    union rci_view_piece_hold *piece_hold;   /* RX, RMA: cap entries, one per piece */
};

/* count views; NULL when out of memory. */
struct rci_view_pool *rci_view_pool_create(uint32_t count);
/* Views still held by the program are not waited for (view.h). */
void rci_view_pool_destroy(struct rci_view_pool *p);
/* Subscriber's thread: a root view with refs 1, no pieces, or NULL when
 * malloc failed too. */
struct rc_view *rci_view_get(struct rci_view_pool *p, enum rci_view_kind kind, uint64_t tag,
                             uint32_t flags);
/* Add a piece (false: the view is full). REASM views: the piece lies in
 * the view's reassembly buffer and holds nothing of its own. */
bool rci_view_add_piece(struct rc_view *v, const void *data, size_t len);
/* RX views: add a piece lying in a receive buffer whose view count is
 * *rx_refs; the count is raised here (only when the piece was added) and
 * lowered once at the view's last release. false: the view is full. */
bool rci_view_add_rx_piece(struct rc_view *v, const void *data, size_t len, atomic_uint *rx_refs);
/* RMA views: add a piece lying in the record of ring key `key`, released
 * once at the view's last release. false: the view is full (the key is
 * still the caller's). */
bool rci_view_add_rma_piece(struct rc_view *v, const void *data, size_t len, uint64_t key);
/* Views handed out and not yet released; views malloc'd because the pool was empty. */
uint64_t rci_view_pool_outstanding(const struct rci_view_pool *p);
uint64_t rci_view_pool_allocated(const struct rci_view_pool *p);

/* A reassembly buffer of size bytes with refs 1 (NULL: out of memory). */
struct rci_reasm *rci_reasm_new(size_t size);
/* Drop one reference; the last frees it. NULL is fine. */
void rci_reasm_put(struct rci_reasm *r);

#endif
