/* SPDX-License-Identifier: BSD-3-Clause */
/* test_share_backlog.c — a subscriber's block backlog (pipeline/share_backlog.h):
 * FIFO order across the wrap, the bound (full: nothing changed), the
 * high-water mark, no backlog (block_backlog = 0); and the contract the
 * publisher thread builds on it, with a real fan-out pool: a chunk's key goes
 * back only after its last share, deferred ones included (k = 2 through the
 * record, k = 1 holding the key itself), and settling a cut subscriber's
 * backlog gives every key back exactly once. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pipeline/fanout.h"
#include "pipeline/share_backlog.h"
#include "tests/unit/cunit_main.h"

#define NKEYS 64u

static void test_fifo_order_and_bound(void)
{
    struct rci_deferred_share store[4];
    struct rci_share_backlog b;
    rci_share_backlog_init(&b, store, 4);
    CU_ASSERT_TRUE(rci_share_backlog_empty(&b));
    CU_ASSERT_PTR_NULL(rci_share_backlog_head(&b));
    uint64_t next_in = 0, next_out = 0;
    /* Push and pop in uneven steps so the head wraps several times. */
    for (int round = 0; round < 50; round++) {
        unsigned push = 1u + (unsigned)round % 4u, pop = 1u + (unsigned)(round * 7) % 4u;
        for (unsigned i = 0; i < push; i++) {
            struct rci_deferred_share d = {.handle = next_in};
            bool room = !rci_share_backlog_full(&b);
            CU_ASSERT_EQUAL(rci_share_backlog_push(&b, &d), room);
            next_in += room;
        }
        CU_ASSERT(b.count <= 4);
        for (unsigned i = 0; i < pop && !rci_share_backlog_empty(&b); i++) {
            CU_ASSERT_EQUAL(rci_share_backlog_head(&b)->handle, next_out);
            rci_share_backlog_pop(&b);
            next_out++;
        }
    }
    CU_ASSERT_EQUAL(next_in - next_out, b.count);
    CU_ASSERT_EQUAL(b.high_water, 4);
    CU_ASSERT(next_in > 100);
}

static void test_full_changes_nothing(void)
{
    struct rci_deferred_share store[3];
    struct rci_share_backlog b;
    rci_share_backlog_init(&b, store, 3);
    for (uint64_t i = 0; i < 3; i++)
        CU_ASSERT_TRUE(rci_share_backlog_push(&b, &(struct rci_deferred_share){.handle = i}));
    CU_ASSERT_TRUE(rci_share_backlog_full(&b));
    CU_ASSERT_FALSE(rci_share_backlog_push(&b, &(struct rci_deferred_share){.handle = 99}));
    CU_ASSERT_EQUAL(b.count, 3);
    for (uint64_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(rci_share_backlog_head(&b)->handle, i);
        rci_share_backlog_pop(&b);
    }
    CU_ASSERT_TRUE(rci_share_backlog_empty(&b));
}

static void test_no_backlog(void)
{
    struct rci_share_backlog b;
    rci_share_backlog_init(&b, NULL, 1024);   /* block_backlog = 0: no storage */
    CU_ASSERT_EQUAL(b.cap, 0);
    CU_ASSERT_TRUE(rci_share_backlog_full(&b));
    CU_ASSERT_FALSE(rci_share_backlog_push(&b, &(struct rci_deferred_share){.handle = 1}));
    CU_ASSERT_TRUE(rci_share_backlog_empty(&b));
}

/* ---- the publisher thread's use of it, modelled ---------------------------- */

struct keys {
    unsigned released[NKEYS];
};

static void release_key(void *ctx, uint64_t key)
{
    struct keys *k = ctx;
    CU_ASSERT_FATAL(key < NKEYS);
    k->released[key]++;
}

/* What publish_thread.c's settle_handle does. B's deferred share is always
 * its chunk's last (A's went at once): done() says 1, the key went back. */
static void settle(struct rci_fanout *f, struct keys *k, const struct rci_deferred_share *d)
{
    if (d->direct)
        release_key(k, d->handle);
    else
        CU_ASSERT_EQUAL(rci_fanout_done(f, d->handle), 1);
}

/* Chunks 0..n-1: even ones have two subscribers (A takes its share at once,
 * B defers), odd ones only B (k = 1: the deferred entry holds the key). B
 * drains `drained` of its backlog; then it is cut and the rest is settled. */
static void run_model(unsigned n, unsigned drained)
{
    struct keys k;
    memset(&k, 0, sizeof k);
    struct rci_fanout *f = NULL;
    char err[128];
    CU_ASSERT_EQUAL_FATAL(rci_fanout_create(NKEYS, release_key, &k, &f, err, sizeof err), 0);
    struct rci_deferred_share store[NKEYS];
    struct rci_share_backlog b;
    rci_share_backlog_init(&b, store, NKEYS);
    for (uint64_t key = 0; key < n; key++) {
        struct rci_deferred_share d = {.handle = key, .direct = true};
        if (key % 2 == 0) {
            uint64_t first;
            CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, key, 2, &first), 0);
            CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(first, 0)), 0);   /* A: sent */
            d = (struct rci_deferred_share){.handle = rci_fanout_send_handle(first, 1)};
        }
        CU_ASSERT_TRUE_FATAL(rci_share_backlog_push(&b, &d));
        CU_ASSERT_EQUAL(k.released[key], 0);   /* B's share is still deferred */
    }
    for (unsigned i = 0; i < drained; i++) {   /* B takes the oldest ones */
        settle(f, &k, rci_share_backlog_head(&b));
        rci_share_backlog_pop(&b);
    }
    for (uint64_t key = 0; key < n; key++)
        CU_ASSERT_EQUAL(k.released[key], key < drained ? 1u : 0u);
    while (!rci_share_backlog_empty(&b)) {     /* B is cut off: the rest settles once */
        settle(f, &k, rci_share_backlog_head(&b));
        rci_share_backlog_pop(&b);
    }
    for (uint64_t key = 0; key < n; key++)
        CU_ASSERT_EQUAL(k.released[key], 1u);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.stale_done + s.double_done + s.bad_handle, 0);
    rci_fanout_destroy(f);
}

static void test_keys_after_last_share(void) { run_model(40, 40); }
static void test_cut_settles_once(void) { run_model(40, 13); }
static void test_cut_with_nothing_drained(void) { run_model(NKEYS, 0); }

static void register_tests(void)
{
    RCI_SUITE("share_backlog", {"fifo order across the wrap, bound, high water", test_fifo_order_and_bound},
              {"a full backlog changes nothing", test_full_changes_nothing},
              {"block_backlog = 0: no backlog", test_no_backlog},
              {"keys back only after the deferred share", test_keys_after_last_share},
              {"cut: every deferred share settled once", test_cut_settles_once},
              {"cut with nothing drained", test_cut_with_nothing_drained});
}

RCI_CUNIT_MAIN(register_tests)
