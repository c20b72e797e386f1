/* SPDX-License-Identifier: BSD-3-Clause */
/* test_views.c — views of received chunks (net/sub_view.h, ringcast/view.h):
 * retain, release in any order and from another thread, slices (inside,
 * outside, of several pieces, keeping their parent alive), copy across
 * pieces, the pool running out (malloc'd views, freed at release), a
 * reassembly buffer outliving its subscriber's reference, and what each
 * piece holds (its receive buffer, its RMA ring key) given back once, only
 * with the last view; the subscriber thread's own release reused first. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "net/sub_view.h"
#include "dma/dma_ring.h"
#include "tests/unit/cunit_main.h"

static const uint8_t DATA[] = "0123456789abcdefghijklmnopqrstuvwxyz";

/* A root view of the receive-buffer kind with the pieces [0,10), [10,20),
 * [20,36) of DATA, each in its own receive buffer (refs[0..2], as the
 * fragments of a gathered chunk). */
static struct rc_view *three_pieces(struct rci_view_pool *p, atomic_uint *refs)
{
    struct rc_view *v = rci_view_get(p, RCI_VIEW_RX, 7, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_TRUE(rci_view_add_rx_piece(v, DATA, 10, &refs[0]));
    CU_ASSERT_TRUE(rci_view_add_rx_piece(v, DATA + 10, 10, &refs[1]));
    CU_ASSERT_TRUE(rci_view_add_rx_piece(v, DATA + 20, 16, &refs[2]));
    return v;
}

/* Each of the three buffers is held exactly `n` times. */
static bool held_each(const atomic_uint *refs, unsigned n)
{
    return refs[0] == n && refs[1] == n && refs[2] == n;
}

static void test_accessors_and_copy(void)
{
    struct rci_view_pool *p = rci_view_pool_create(4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    atomic_uint refs[3] = {0};
    struct rc_view *v = three_pieces(p, refs);
    CU_ASSERT_TRUE(held_each(refs, 1));
    CU_ASSERT_EQUAL(rc_view_tag(v), 7);
    CU_ASSERT_EQUAL(rc_view_flags(v), 1);
    CU_ASSERT_EQUAL(rc_view_len(v), 36);
    CU_ASSERT_EQUAL(rc_view_piece_count(v), 3);
    CU_ASSERT_PTR_EQUAL(rc_view_piece(v, 1).data, DATA + 10);
    CU_ASSERT_PTR_NULL(rc_view_piece(v, 3).data);
    char buf[40] = {0};
    CU_ASSERT_EQUAL(rc_view_copy(v, 5, buf, 20), 20);   /* across all three pieces */
    CU_ASSERT_EQUAL(memcmp(buf, DATA + 5, 20), 0);
    CU_ASSERT_EQUAL(rc_view_copy(v, 30, buf, 20), 6);   /* past the end: what there is */
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 1);
    rc_view_release(v);
    CU_ASSERT_TRUE(held_each(refs, 0));   /* every buffer once */
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    rci_view_pool_destroy(p);
}

static void test_retain_release_any_order(void)
{
    struct rci_view_pool *p = rci_view_pool_create(4);
    atomic_uint ra[3] = {0}, rb[3] = {0};
    struct rc_view *a = three_pieces(p, ra), *b = three_pieces(p, rb);
    CU_ASSERT_PTR_EQUAL(rc_view_retain(a), a);
    rc_view_retain(b);
    rc_view_release(a);   /* the library's reference, as after on_view */
    rc_view_release(b);
    CU_ASSERT_TRUE(held_each(ra, 1));   /* still held: no buffer is reposted */
    CU_ASSERT_TRUE(held_each(rb, 1));
    rc_view_release(b);   /* newer one first */
    CU_ASSERT_TRUE(held_each(rb, 0));
    CU_ASSERT_TRUE(held_each(ra, 1));
    rc_view_release(a);
    CU_ASSERT_TRUE(held_each(ra, 0));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    rc_view_release(NULL);   /* fine */
    rci_view_pool_destroy(p);
}

static void test_slice_inside_and_outside(void)
{
    struct rci_view_pool *p = rci_view_pool_create(2);
    atomic_uint refs[3] = {0};
    struct rc_view *v = three_pieces(p, refs);
    CU_ASSERT_PTR_NULL(rc_view_slice(v, 37, 0));        /* offset past the end */
    CU_ASSERT_PTR_NULL(rc_view_slice(v, 30, 7));        /* end past the end */
    CU_ASSERT_PTR_NULL(rc_view_slice(v, 1, SIZE_MAX));  /* offset + len overflows */
    CU_ASSERT_PTR_NULL(rc_view_slice(NULL, 0, 0));
    struct rc_view *empty = rc_view_slice(v, 36, 0);    /* empty, at the end: inside */
    CU_ASSERT_PTR_NOT_NULL_FATAL(empty);
    CU_ASSERT_EQUAL(rc_view_len(empty), 0);
    CU_ASSERT_EQUAL(rc_view_piece_count(empty), 0);
    rc_view_release(empty);

    struct rc_view *s = rc_view_slice(v, 8, 14);   /* [8,22): pieces 2+10+2 bytes */
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(rc_view_tag(s), 7);
    CU_ASSERT_EQUAL(rc_view_len(s), 14);
    CU_ASSERT_EQUAL(rc_view_piece_count(s), 3);
    CU_ASSERT_PTR_EQUAL(rc_view_piece(s, 0).data, DATA + 8);
    CU_ASSERT_EQUAL(rc_view_piece(s, 0).len, 2);
    CU_ASSERT_EQUAL(rc_view_piece(s, 2).len, 2);
    char buf[16];
    CU_ASSERT_EQUAL(rc_view_copy(s, 0, buf, 14), 14);
    CU_ASSERT_EQUAL(memcmp(buf, DATA + 8, 14), 0);

    /* The slice keeps its parent (and all its buffers) alive. */
    rc_view_release(v);
    CU_ASSERT_TRUE(held_each(refs, 1));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 1);
    struct rc_view *ss = rc_view_slice(s, 3, 4);   /* a slice of a slice: DATA[11..15) */
    CU_ASSERT_PTR_NOT_NULL_FATAL(ss);
    CU_ASSERT_EQUAL(rc_view_piece_count(ss), 1);
    CU_ASSERT_PTR_EQUAL(rc_view_piece(ss, 0).data, DATA + 11);
    rc_view_release(s);
    CU_ASSERT_TRUE(held_each(refs, 1));
    rc_view_release(ss);
    CU_ASSERT_TRUE(held_each(refs, 0));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    rci_view_pool_destroy(p);
}

/* ---- another thread ---------------------------------------------------------- */

#define HANDOVER 256u
#define ROUNDS 20000u

/* A single-producer single-consumer hand-over of views to the releaser. */
struct handover {
    struct rc_view *slot[HANDOVER];
    atomic_uint head, tail;
    atomic_bool done;
};

static void *releaser(void *arg)
{
    struct handover *h = arg;
    for (;;) {
        unsigned t = atomic_load_explicit(&h->tail, memory_order_relaxed);
        if (t == atomic_load_explicit(&h->head, memory_order_acquire)) {
            if (atomic_load(&h->done) && t == atomic_load(&h->head))
                return NULL;
            sched_yield();
            continue;
        }
        struct rc_view *v = h->slot[t % HANDOVER];
        /* A slice made and dropped here, then the view itself. */
        rc_view_release(rc_view_slice(v, 1, 2));
        rc_view_release(v);
        atomic_store_explicit(&h->tail, t + 1, memory_order_release);
    }
}

static void test_release_from_another_thread(void)
{
    enum { POOL = 64 };
    struct rci_view_pool *p = rci_view_pool_create(POOL);
    static atomic_uint refs[HANDOVER];
    static struct handover h;
    memset(&h, 0, sizeof h);
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, releaser, &h), 0);
    for (unsigned i = 0; i < ROUNDS; i++) {
        unsigned head = atomic_load_explicit(&h.head, memory_order_relaxed);
        while (head - atomic_load_explicit(&h.tail, memory_order_acquire) >= POOL / 2)
            sched_yield();   /* the releaser keeps up: the pool never runs out */
        atomic_uint *r = &refs[head % HANDOVER];
        struct rc_view *v = rci_view_get(p, RCI_VIEW_RX, i, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        rci_view_add_rx_piece(v, DATA, 4, r);
        rc_view_retain(v);    /* kept for the other thread */
        rc_view_release(v);   /* the library's own reference */
        h.slot[head % HANDOVER] = v;
        atomic_store_explicit(&h.head, head + 1, memory_order_release);
    }
    atomic_store(&h.done, true);
    pthread_join(t, NULL);
    unsigned held = 0;
    for (unsigned i = 0; i < HANDOVER; i++)
        held += refs[i];
    CU_ASSERT_EQUAL(held, 0);
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    CU_ASSERT_EQUAL(rci_view_pool_allocated(p), 0);   /* reused through the lock-free stack */
    rci_view_pool_destroy(p);
}

static void test_pool_runs_out_malloc(void)
{
    struct rci_view_pool *p = rci_view_pool_create(1);
    atomic_uint refs[3] = {0};
    struct rc_view *a = three_pieces(p, refs), *b = three_pieces(p, refs);
    CU_ASSERT_EQUAL(rci_view_pool_allocated(p), 1);
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 2);
    rc_view_release(b);   /* malloc'd: freed (ASan: no leak) */
    rc_view_release(a);
    CU_ASSERT_TRUE(held_each(refs, 0));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    struct rc_view *c = three_pieces(p, refs);   /* the pool's one again */
    CU_ASSERT_EQUAL(rci_view_pool_allocated(p), 1);
    atomic_uint more = 0;
    for (unsigned i = 3; i < RC_VIEW_MAX_PIECES; i++)
        CU_ASSERT_TRUE(rci_view_add_rx_piece(c, DATA, 1, &more));
    CU_ASSERT_FALSE(rci_view_add_rx_piece(c, DATA, 1, &more));   /* full: nothing taken */
    CU_ASSERT_EQUAL(more, RC_VIEW_MAX_PIECES - 3);
    rc_view_release(c);
    CU_ASSERT_EQUAL(more, 0);
    CU_ASSERT_TRUE(held_each(refs, 0));
    rci_view_pool_destroy(p);
}

static void test_reasm_outlives_owner(void)
{
    struct rci_view_pool *p = rci_view_pool_create(2);
    struct rci_reasm *r = rci_reasm_new(64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    memcpy(r->data, DATA, 36);
    struct rc_view *v = rci_view_get(p, RCI_VIEW_REASM, 1, 0);
    v->hold.reasm = r;
    atomic_fetch_add(&r->refs, 1);
    rci_view_add_piece(v, r->data, 36);
    rci_reasm_put(r);   /* the subscriber moves on to a new buffer */
    char buf[36];
    CU_ASSERT_EQUAL(rc_view_copy(v, 0, buf, 36), 36);   /* still there (ASan: no use after free) */
    CU_ASSERT_EQUAL(memcmp(buf, DATA, 36), 0);
    rc_view_release(v);   /* frees the buffer */
    rci_view_pool_destroy(p);
}

/* RMA views give their ring keys back only with the last reference. */
static void test_rma_keys_released_with_last_view(void)
{
    struct rci_sub_rma rma;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_sub_rma_create(&rma, 65536, err, sizeof err), 0);
    rci_sub_rma_start(&rma);
    struct rci_view_pool *p = rci_view_pool_create(2);
    struct rc_view *v = rci_view_get(p, RCI_VIEW_RMA, 3, 0);
    v->hold.rma = &rma;
    for (unsigned i = 0; i < 2; i++) {   /* two records of one chunk */
        struct rci_dma_span span;
        uint64_t pos = rci_dma_ring_taken_pos(rma.ring);
        rci_dma_ring_note_written(rma.ring, pos + 64);
        uint64_t key;
        CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(rma.ring, 64, &span, &key), 0);
        CU_ASSERT_TRUE(rci_view_add_rma_piece(v, rma.mem + span.piece[0].offset, 64, key));
    }
    CU_ASSERT_TRUE(rci_sub_rma_busy(&rma));
    struct rc_view *s = rc_view_slice(v, 60, 8);   /* across both records */
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(rc_view_piece_count(s), 2);
    rc_view_release(v);
    CU_ASSERT_TRUE(rci_sub_rma_busy(&rma));   /* the slice still holds both */
    rc_view_release(s);
    CU_ASSERT_FALSE(rci_sub_rma_busy(&rma));
    struct rci_dma_ring_stats st;
    rci_dma_ring_get_stats(rma.ring, &st);
    CU_ASSERT_EQUAL(st.bad_releases, 0);
    CU_ASSERT_EQUAL(st.read, 128);
    rci_view_pool_destroy(p);
    rci_sub_rma_destroy(&rma);
}

/* The subscriber thread's own last release (rci_view_release_owner) puts the
 * view back first in line: the next get returns it, still in cache; a view
 * kept by the program (retained) is freed by the program's release, through
 * the shared stack, and comes back only after the rest of the pool. What
 * the view holds goes back either way, and the counts stay exact. */
static void test_owner_release_reused_first(void)
{
    struct rci_view_pool *p = rci_view_pool_create(4);
    atomic_uint refs[3] = {0};
    struct rc_view *a = three_pieces(p, refs);
    rci_view_release_owner(a);
    CU_ASSERT_TRUE(held_each(refs, 0));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    for (int i = 0; i < 10; i++) {   /* always the same one: more views than the pool has */
        struct rc_view *b = three_pieces(p, refs);
        CU_ASSERT_PTR_EQUAL(b, a);
        CU_ASSERT_EQUAL(rc_view_len(b), 36);
        rci_view_release_owner(b);
    }
    CU_ASSERT_TRUE(held_each(refs, 0));
    struct rc_view *kept = three_pieces(p, refs);   /* a, kept by the program */
    CU_ASSERT_PTR_EQUAL(kept, a);
    rc_view_retain(kept);
    rci_view_release_owner(kept);   /* not the last reference: nothing goes back */
    CU_ASSERT_TRUE(held_each(refs, 1));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 1);
    rc_view_release(kept);          /* the program's, from any thread: the shared stack */
    CU_ASSERT_TRUE(held_each(refs, 0));
    struct rc_view *others[3];
    for (int i = 0; i < 3; i++) {   /* the three never used come first */
        others[i] = three_pieces(p, refs);
        CU_ASSERT_PTR_NOT_EQUAL(others[i], a);
    }
    struct rc_view *last = three_pieces(p, refs);   /* then the stack: a again */
    CU_ASSERT_PTR_EQUAL(last, a);
    CU_ASSERT_EQUAL(rci_view_pool_allocated(p), 0);
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 4);
    for (int i = 0; i < 3; i++)
        rci_view_release_owner(others[i]);
    rci_view_release_owner(last);
    CU_ASSERT_TRUE(held_each(refs, 0));
    CU_ASSERT_EQUAL(rci_view_pool_outstanding(p), 0);
    rci_view_pool_destroy(p);
}

/* A connection that went away while the program held its views (a parked
 * one of net/multi_sub.c) is destroyed the moment its pool's outstanding
 * count reads 0: a release on another thread must touch nothing of the pool
 * after that count drops (it used to push the view onto the pool's stack
 * after: a use after free ASan sees within a few thousand rounds). */
#define LAST_RELEASE_ROUNDS 200000u

struct last_release {
    _Atomic(struct rc_view *) v;
    atomic_bool done;
};

static void *last_releaser(void *arg)
{
    struct last_release *lr = arg;
    while (!atomic_load(&lr->done)) {
        struct rc_view *v = atomic_exchange(&lr->v, NULL);
        if (v)
            rc_view_release(v);
        else
            sched_yield();
    }
    return NULL;
}

static void test_pool_destroyed_at_last_release(void)
{
    static struct last_release lr;
    memset(&lr, 0, sizeof lr);
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, last_releaser, &lr), 0);
    atomic_uint refs = 0;
    for (unsigned i = 0; i < LAST_RELEASE_ROUNDS; i++) {
        struct rci_view_pool *p = rci_view_pool_create(4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        struct rc_view *v = rci_view_get(p, RCI_VIEW_RX, i, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        rci_view_add_rx_piece(v, DATA, 4, &refs);
        atomic_store(&lr.v, v);   /* the program's last reference, released over there */
        while (rci_view_pool_outstanding(p) != 0)
            sched_yield();
        rci_view_pool_destroy(p);   /* what multi_sub's unpark does at 0 */
    }
    atomic_store(&lr.done, true);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(atomic_load(&refs), 0);
}

static void register_tests(void)
{
    RCI_SUITE("views", {"accessors and copy", test_accessors_and_copy},
              {"retain, release in any order", test_retain_release_any_order},
              {"slices: inside, outside, parent kept", test_slice_inside_and_outside},
              {"release from another thread", test_release_from_another_thread},
              {"pool runs out: malloc'd views", test_pool_runs_out_malloc},
              {"reassembly buffer outlives its owner", test_reasm_outlives_owner},
              {"RMA keys go back with the last view", test_rma_keys_released_with_last_view},
              {"the owner's release is reused first", test_owner_release_reused_first},
              {"pool destroyed at the last release", test_pool_destroyed_at_last_release});
}

RCI_CUNIT_MAIN(register_tests)
