/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_view.c — views of received chunks (sub_view.h, ringcast/view.h). */
#include "net/sub_view.h"

#include <stdlib.h>
#include <string.h>

#include "common/tsan.h"

struct rci_view_pool {
    struct __cds_lfs_stack released;   /* pushed by any thread's last release */
    struct cds_lfs_node *mine;         /* the subscriber thread's private free list */
    struct rc_view *views;             /* count of them */
    struct rc_view_piece *pieces;      /* count * RC_VIEW_MAX_PIECES */
    union rci_view_piece_hold *holds;  /* count * RC_VIEW_MAX_PIECES */
    uint32_t count;
    atomic_uint_fast64_t outstanding, allocated;
};

struct rci_view_pool *rci_view_pool_create(uint32_t count)
{
    struct rci_view_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->count = count;
    p->views = calloc(count ? count : 1, sizeof *p->views);
    p->pieces = calloc((size_t)(count ? count : 1) * RC_VIEW_MAX_PIECES, sizeof *p->pieces);
    p->holds = calloc((size_t)(count ? count : 1) * RC_VIEW_MAX_PIECES, sizeof *p->holds);
    if (!p->views || !p->pieces || !p->holds) {
        rci_view_pool_destroy(p);
        return NULL;
    }
    __cds_lfs_init(&p->released);
    for (uint32_t i = 0; i < count; i++) {
        struct rc_view *v = &p->views[i];
        v->pool = p;
        v->cap = RC_VIEW_MAX_PIECES;
        v->piece = &p->pieces[(size_t)i * RC_VIEW_MAX_PIECES];
        v->piece_hold = &p->holds[(size_t)i * RC_VIEW_MAX_PIECES];
        cds_lfs_node_init(&v->node);
        v->node.next = p->mine;
        p->mine = &v->node;
    }
    return p;
}

void rci_view_pool_destroy(struct rci_view_pool *p)
{
    if (!p)
        return;
    free(p->views);
    free(p->pieces);
    free(p->holds);
    free(p);
}

uint64_t rci_view_pool_outstanding(const struct rci_view_pool *p)
{
    return p ? atomic_load_explicit(&p->outstanding, memory_order_acquire) : 0;
}

uint64_t rci_view_pool_allocated(const struct rci_view_pool *p)
{
    return p ? atomic_load_explicit(&p->allocated, memory_order_relaxed) : 0;
}

/* A malloc'd view with its pieces and per-piece holds behind it (cap of
 * each; slices hold their parent, not pieces: no holds). */
static struct rc_view *view_alloc(unsigned cap, bool holds)
{
    size_t size = sizeof(struct rc_view) + cap * sizeof(struct rc_view_piece) +
                  (holds ? cap * sizeof(union rci_view_piece_hold) : 0);
    struct rc_view *v = calloc(1, size);
    if (!v)
        return NULL;
    v->cap = cap;
    v->heap = true;
    v->piece = (struct rc_view_piece *)(v + 1);
    v->piece_hold = holds ? (union rci_view_piece_hold *)(v->piece + cap) : NULL;
    return v;
}

static struct rc_view *pool_take(struct rci_view_pool *p)
{
    if (!p->mine) {
        struct cds_lfs_head *all = __cds_lfs_pop_all(&p->released);   /* the only popper */
        p->mine = all ? &all->node : NULL;
    }
    struct cds_lfs_node *n = p->mine;
    if (!n)
        return NULL;
    p->mine = n->next;
    struct rc_view *v = caa_container_of(n, struct rc_view, node);
    RCI_TSAN_ACQUIRE(v);
    return v;
}

struct rc_view *rci_view_get(struct rci_view_pool *p, enum rci_view_kind kind, uint64_t tag,
                             uint32_t flags)
{
    struct rc_view *v = pool_take(p);
    if (!v) {
        v = view_alloc(RC_VIEW_MAX_PIECES, true);
        if (!v)
            return NULL;
        v->pool = p;
        v->heap = true;
        atomic_fetch_add_explicit(&p->allocated, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&p->outstanding, 1, memory_order_relaxed);
    atomic_init(&v->refs, 1);
    v->kind = kind;
    v->tag = tag;
    v->flags = flags;
    v->len = 0;
    v->npieces = 0;
    memset(&v->hold, 0, sizeof v->hold);
    return v;
}

bool rci_view_add_piece(struct rc_view *v, const void *data, size_t len)
{
    if (v->npieces == v->cap)
        return false;
    v->piece[v->npieces++] = (struct rc_view_piece){ data, len };
    v->len += len;
    return true;
}

bool rci_view_add_rx_piece(struct rc_view *v, const void *data, size_t len, atomic_uint *rx_refs)
{
    if (!rci_view_add_piece(v, data, len))
        return false;
    v->piece_hold[v->npieces - 1].rx_refs = rx_refs;
    atomic_fetch_add_explicit(rx_refs, 1, memory_order_relaxed);
    return true;
}

bool rci_view_add_rma_piece(struct rc_view *v, const void *data, size_t len, uint64_t key)
{
    if (!rci_view_add_piece(v, data, len))
        return false;
    v->piece_hold[v->npieces - 1].key = key;
    return true;
}

struct rci_reasm *rci_reasm_new(size_t size)
{
    struct rci_reasm *r = malloc(sizeof *r + (size ? size : 1));
    if (!r)
        return NULL;
    atomic_init(&r->refs, 1);
    r->size = size;
    return r;
}

void rci_reasm_put(struct rci_reasm *r)
{
    if (r && atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        free(r);
}

/* ---- public API (ringcast/view.h) ------------------------------------------ */

uint64_t rc_view_tag(const struct rc_view *v) { return v->tag; }
uint32_t rc_view_flags(const struct rc_view *v) { return v->flags; }
size_t rc_view_len(const struct rc_view *v) { return v->len; }
unsigned rc_view_piece_count(const struct rc_view *v) { return v->npieces; }

struct rc_view_piece rc_view_piece(const struct rc_view *v, unsigned i)
{
    return i < v->npieces ? v->piece[i] : (struct rc_view_piece){ NULL, 0 };
}

size_t rc_view_copy(const struct rc_view *v, size_t offset, void *dst, size_t len)
{
    size_t done = 0;
    for (unsigned i = 0; i < v->npieces && done < len; i++) {
        const struct rc_view_piece *pc = &v->piece[i];
        if (offset >= pc->len) {
            offset -= pc->len;
            continue;
        }
        size_t n = pc->len - offset < len - done ? pc->len - offset : len - done;
        memcpy((uint8_t *)dst + done, (const uint8_t *)pc->data + offset, n);
        done += n;
        offset = 0;
    }
    return done;
}

struct rc_view *rc_view_retain(struct rc_view *v)
{
    if (v)
        atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
    return v;
}

/* The last reference is gone: give back what the view holds. `owner`: the
 * release runs on the subscriber's thread, the pool's only taker, so the
 * view goes onto its private list and is the next one taken, still in cache;
 * any other thread pushes it onto the shared stack, taken only once the
 * private list ran empty (after every other view of the pool was used). */
static void view_free(struct rc_view *v, bool owner)
{
    struct rci_view_pool *pool = v->pool;
    switch (v->kind) {
    case RCI_VIEW_RX:   /* each piece's buffer, once: it is posted again at 0 */
        for (unsigned i = 0; i < v->npieces; i++)
            atomic_fetch_sub_explicit(v->piece_hold[i].rx_refs, 1, memory_order_release);
        break;
    case RCI_VIEW_REASM:
        rci_reasm_put(v->hold.reasm);
        break;
    case RCI_VIEW_RMA:
        for (unsigned i = 0; i < v->npieces; i++)
            rci_sub_rma_release(v->hold.rma, v->piece_hold[i].key);
        break;
    case RCI_VIEW_EXT:
        v->hold.ext.release(v->hold.ext.ctx, v->ext_key);
        break;
    case RCI_VIEW_SLICE:
        rc_view_release(v->hold.parent);
        free(v);   /* slices are always malloc'd and not counted */
        return;
    }
    if (v->heap) {
        free(v);   /* an overflow view */
    } else if (owner) {
        v->node.next = pool->mine;
        pool->mine = &v->node;
    } else {
        RCI_TSAN_RELEASE(v);
        cds_lfs_push(&pool->released, &v->node);
    }
    /* Last, and nothing of the pool after it: once outstanding reads 0 the
     * pool's owner may destroy it at once (a connection parked for its views,
     * net/multi_sub.c), while this may run on any thread. Release: what was
     * done above happens before that owner's acquire load sees the count. */
    atomic_fetch_sub_explicit(&pool->outstanding, 1, memory_order_release);
}

void rc_view_release(struct rc_view *v)
{
    if (!v)
        return;
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1)
        view_free(v, false);
}

void rci_view_release_owner(struct rc_view *v)
{
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1)
        view_free(v, true);
}

struct rc_view *rc_view_slice(struct rc_view *v, size_t offset, size_t len)
{
    if (!v || offset > v->len || len > v->len - offset)
        return NULL;
    struct rc_view *s = view_alloc(v->npieces ? v->npieces : 1, false);
    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    s->kind = RCI_VIEW_SLICE;
    s->tag = v->tag;
    s->flags = v->flags;
    for (unsigned i = 0; i < v->npieces && s->len < len; i++) {
        const struct rc_view_piece *pc = &v->piece[i];
        if (offset >= pc->len) {
            offset -= pc->len;
            continue;
        }
        size_t n = pc->len - offset < len - s->len ? pc->len - offset : len - s->len;
        rci_view_add_piece(s, (const uint8_t *)pc->data + offset, n);
        offset = 0;
    }
    s->hold.parent = rc_view_retain(v);
    return s;
}
