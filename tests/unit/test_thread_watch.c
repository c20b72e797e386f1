/* SPDX-License-Identifier: BSD-3-Clause */
/* test_thread_watch.c — stuck-thread detection from heartbeats
 * (common/thread_watch.c): a heartbeat that stands still for stuck_after_ns
 * is stuck once, moving again clears it, slots are independent, 0 = never. */
#include "common/thread_watch.h"

#include <stdatomic.h>

#include "common/monotonic.h"
#include "tests/unit/cunit_main.h"

#define S 1000000000ull

static void test_stuck_and_back(void)
{
    struct rci_thread_watch w;
    rci_thread_watch_init(&w);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 5, 100 * S, 10 * S), RCI_THREAD_SAME);   /* first feed */
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 5, 109 * S, 10 * S), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(rci_thread_watch_still_ns(&w, 0, 109 * S), 9 * S);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 5, 110 * S, 10 * S), RCI_THREAD_NOW_STUCK);
    CU_ASSERT_EQUAL(w.nstuck, 1);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 5, 130 * S, 10 * S), RCI_THREAD_SAME);   /* said once */
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 6, 131 * S, 10 * S), RCI_THREAD_MOVES_AGAIN);
    CU_ASSERT_EQUAL(w.nstuck, 0);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 6, 140 * S, 10 * S), RCI_THREAD_SAME);   /* 9 s still */
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, 6, 141 * S, 10 * S), RCI_THREAD_NOW_STUCK);
    CU_ASSERT_EQUAL(w.episodes, 2);
}

/* A heartbeat that moves between every feed is never stuck, however long
 * the run; slots do not share their clocks. */
static void test_slots_independent(void)
{
    struct rci_thread_watch w;
    rci_thread_watch_init(&w);
    for (uint64_t t = 0; t < 100; t++) {
        CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 0, t, t * S, 2 * S), RCI_THREAD_SAME);
        enum rci_thread_change c = rci_thread_watch_feed(&w, 3, 42, t * S, 2 * S);
        CU_ASSERT_EQUAL(c, t == 2 ? RCI_THREAD_NOW_STUCK : RCI_THREAD_SAME);
    }
    CU_ASSERT_EQUAL(w.n, 4);
    CU_ASSERT_EQUAL(w.nstuck, 1);
    CU_ASSERT_FALSE(w.stuck[0]);
    CU_ASSERT_TRUE(w.stuck[3]);
    CU_ASSERT_EQUAL(rci_thread_watch_still_ns(&w, 1, 50 * S), 0);   /* never fed */
}

/* stuck_after 0 never calls a thread stuck, and releases one that was;
 * slots beyond the table and a clock going backwards change nothing. */
static void test_never_and_bad_input(void)
{
    struct rci_thread_watch w;
    rci_thread_watch_init(&w);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 1, 7, 0, 0), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 1, 7, 1000 * S, 0), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 1, 7, 1001 * S, 1 * S), RCI_THREAD_NOW_STUCK);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 1, 7, 1002 * S, 0), RCI_THREAD_MOVES_AGAIN);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 2, 3, 100 * S, 1 * S), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, 2, 3, 50 * S, 1 * S), RCI_THREAD_SAME);   /* backwards */
    CU_ASSERT_EQUAL(rci_thread_watch_still_ns(&w, 2, 50 * S), 0);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, RCI_THREAD_WATCH_MAX, 1, 0, 1), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(rci_thread_watch_feed(&w, RCI_THREAD_WATCH_MAX, 1, 9 * S, 1), RCI_THREAD_SAME);
    CU_ASSERT_EQUAL(w.n, 3);
    CU_ASSERT_EQUAL(w.nstuck, 0);
    CU_ASSERT_EQUAL(w.episodes, 1);
}

/* rci_thread_join_unless_stuck: a thread that beats on until it ends is
 * joined, however long it takes past stuck_after; one that stops beating is
 * given up after stuck_after (and still runs: joined here afterwards). */
struct beater {
    _Atomic uint64_t beat;
    _Atomic bool stand_still, end;
    uint64_t run_ns;
};

static uint64_t beater_beat(const void *ctx)
{
    return atomic_load(&((const struct beater *)ctx)->beat);
}

static void *beater_main(void *arg)
{
    struct beater *b = arg;
    uint64_t until = rci_now_ns() + b->run_ns;
    while (!atomic_load(&b->end) && rci_now_ns() < until) {
        if (!atomic_load(&b->stand_still))
            atomic_fetch_add(&b->beat, 1);
        rci_sleep_ns(10ull * 1000 * 1000);
    }
    return NULL;
}

static void test_join_unless_stuck(void)
{
    struct beater moving = {.run_ns = 1500ull * 1000 * 1000};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, beater_main, &moving), 0);
    CU_ASSERT_TRUE(rci_thread_join_unless_stuck(t, beater_beat, &moving, 1000ull * 1000 * 1000));

    struct beater stuck = {.run_ns = 60ull * 1000000000};
    atomic_store(&stuck.stand_still, true);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, beater_main, &stuck), 0);
    uint64_t t0 = rci_now_ns();
    CU_ASSERT_FALSE(rci_thread_join_unless_stuck(t, beater_beat, &stuck, 300ull * 1000 * 1000));
    uint64_t took = rci_now_ns() - t0;
    CU_ASSERT(took >= 300ull * 1000 * 1000 && took < 30ull * 1000000000);
    atomic_store(&stuck.end, true);
    CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);   /* it was left running, not joined */
}

static void register_tests(void)
{
    RCI_SUITE("thread_watch", {"stuck, once, and back", test_stuck_and_back},
              {"slots are independent", test_slots_independent},
              {"0 = never, bad input", test_never_and_bad_input},
              {"join unless stuck", test_join_unless_stuck});
}

RCI_CUNIT_MAIN(register_tests)
