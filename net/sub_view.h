/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_view.h — the subscriber's views (public contract: ringcast/view.h).
 *
 * A root view is what on_view() gets; it holds the memory behind it:
 *  - RX: a receive buffer, through the buffer's reference count (the
 *    subscriber posts the buffer again only while that count is 0);
 *  - REASM: a reassembly buffer (struct rci_reasm, freed by its last
 *    reference when the subscriber moved on to another one);
 *  - RMA: the ring keys of its records (rci_sub_rma_release at the end).
 * A slice holds its parent. The last release gives the memory back and
 * returns the view to its pool (or frees it: slices, overflow views).
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

enum rci_view_kind { RCI_VIEW_RX, RCI_VIEW_REASM, RCI_VIEW_RMA, RCI_VIEW_SLICE };

/* A reassembly buffer: the subscriber holds one reference to its current
 * one, each view of a reassembled chunk another. */
struct rci_reasm {
    atomic_uint refs;
    size_t size;
    uint8_t data[];
};

struct rci_view_pool;

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
        atomic_uint *rx_refs;        /* RX */
        struct rci_reasm *reasm;     /* REASM */
        struct rc_view *parent;      /* SLICE */
        struct rci_sub_rma *rma;     /* RMA: whose keys */
    } hold;
    uint64_t *key;                   /* RMA: one ring key per piece */
};

/* count views; NULL when out of memory. */
struct rci_view_pool *rci_view_pool_create(uint32_t count);
/* Views still held by the program are not waited for (view.h). */
void rci_view_pool_destroy(struct rci_view_pool *p);
/* Subscriber's thread: a root view with refs 1, no pieces, or NULL when
 * malloc failed too. */
struct rc_view *rci_view_get(struct rci_view_pool *p, enum rci_view_kind kind, uint64_t tag,
                             uint32_t flags);
/* The subscriber's per-record fast path (issue 17, per-chunk cost): most
 * views handed to on_view are not retained, so the holds a view takes (its
 * receive buffer, the pool's outstanding count: three atomic read-modify-
 * writes and a compare-and-swap per record) are taken only for one that
 * is. Subscriber's thread:
 *   v = rci_view_get_unheld(...)   a pool view of kind RX with refs 1 and
 *                                  no hold (NULL: the pool is empty: use
 *                                  rci_view_get instead);
 *   on_view(v);
 *   refs still 1 (nobody retained it; only the subscriber's thread may
 *   have, during the call): rci_view_put_unheld(p, v) puts it straight
 *   back on the private list; otherwise rci_view_hold_rx(p, v, rx_refs)
 *   takes the holds before the subscriber's own reference goes
 *   (rc_view_release): a retained view then holds its buffer as any other.
 * A release by another thread cannot free the view before that: the
 * subscriber's reference is still there. */
struct rc_view *rci_view_get_unheld(struct rci_view_pool *p, uint64_t tag, uint32_t flags);
void rci_view_put_unheld(struct rci_view_pool *p, struct rc_view *v);
void rci_view_hold_rx(struct rci_view_pool *p, struct rc_view *v, atomic_uint *rx_refs);
/* Add a piece (false: the view is full). */
bool rci_view_add_piece(struct rc_view *v, const void *data, size_t len);
/* Views handed out and not yet released; views malloc'd because the pool was empty. */
uint64_t rci_view_pool_outstanding(const struct rci_view_pool *p);
uint64_t rci_view_pool_allocated(const struct rci_view_pool *p);

/* A reassembly buffer of size bytes with refs 1 (NULL: out of memory). */
struct rci_reasm *rci_reasm_new(size_t size);
/* Drop one reference; the last frees it. NULL is fine. */
void rci_reasm_put(struct rci_reasm *r);

#endif
