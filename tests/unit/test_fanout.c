/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fanout.c — fan-out reference counting: every key released exactly
 * once after its k-th completion, refusals counted, and the same under
 * completions from four threads racing with record reuse, and with two
 * levels of records (one share per thread, each thread's own shares). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/fanout.h"
#include "tests/unit/cunit_main.h"

#define MAX_KEYS 16u

/* Single-threaded tests: which keys were released, how often. */
struct release_log {
    unsigned count[MAX_KEYS];
    unsigned total;
};

static void log_release(void *ctx, uint64_t key)
{
    struct release_log *log = ctx;
    CU_ASSERT_FATAL(key < MAX_KEYS);
    log->count[key]++;
    log->total++;
}

static struct rci_fanout *make_pool(uint32_t capacity, struct release_log *log)
{
    memset(log, 0, sizeof *log);
    struct rci_fanout *f = NULL;
    char err[128] = "";
    CU_ASSERT_EQUAL_FATAL(rci_fanout_create(capacity, log_release, log, &f, err, sizeof err), 0);
    return f;
}

static void test_create_rejects_bad_arguments(void)
{
    struct rci_fanout *f = (struct rci_fanout *)1;
    char err[128] = "";
    CU_ASSERT_EQUAL(rci_fanout_create(0, log_release, NULL, &f, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "capacity 0"));
    CU_ASSERT_EQUAL(rci_fanout_create(RCI_FANOUT_MAX_RECORDS + 1, log_release, NULL, &f, err, sizeof err),
                    -EINVAL);
    CU_ASSERT_EQUAL(rci_fanout_create(4, NULL, NULL, &f, err, sizeof err), -EINVAL);
}

static void test_no_subscriber_releases_at_once(void)
{
    struct release_log log;
    struct rci_fanout *f = make_pool(4, &log);
    uint64_t h = 123;
    CU_ASSERT_EQUAL(rci_fanout_begin(f, 7, 0, &h), 0);
    CU_ASSERT_EQUAL(h, RCI_FANOUT_NO_HANDLE);
    CU_ASSERT_EQUAL(log.count[7], 1);
    CU_ASSERT_EQUAL(rci_fanout_done(f, h), -EINVAL);   /* the no-handle is never valid */
    CU_ASSERT_EQUAL(log.count[7], 1);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    CU_ASSERT_EQUAL(s.released_at_once, 1);
    CU_ASSERT_EQUAL(s.begun, 0);
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.bad_handle, 1);
    rci_fanout_destroy(f);
}

static void test_kth_completion_releases(void)
{
    struct release_log log;
    struct rci_fanout *f = make_pool(4, &log);
    uint64_t a, b;
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 3, 3, &a), 0);
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 5, 2, &b), 0);
    /* Completions in any order, interleaved between records. */
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(a, 2)), 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(b, 1)), 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(a, 0)), 0);
    CU_ASSERT_EQUAL(log.total, 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(b, 0)), 1);
    CU_ASSERT_EQUAL(log.count[5], 1);
    CU_ASSERT_EQUAL(log.count[3], 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(a, 1)), 1);
    CU_ASSERT_EQUAL(log.count[3], 1);
    CU_ASSERT_EQUAL(log.total, 2);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    CU_ASSERT_EQUAL(s.begun, 2);
    CU_ASSERT_EQUAL(s.released, 2);
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.high_water, 2);
    rci_fanout_destroy(f);
}

static void test_double_and_stale_completions_refused(void)
{
    struct release_log log;
    struct rci_fanout *f = make_pool(1, &log);   /* one record: every begin reuses it */
    uint64_t old;
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 1, 2, &old), 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 0)), 0);
    /* The same send again, before the record is finished: must not count. */
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 0)), -EALREADY);
    /* A send that was never issued (slot >= k). */
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 5)), -EALREADY);
    CU_ASSERT_EQUAL(log.total, 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 1)), 1);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 1)), -ESTALE);

    /* The record's next life: the old handles must not touch it. */
    uint64_t cur;
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 2, 2, &cur), 0);
    CU_ASSERT_NOT_EQUAL(cur, old);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 0)), -ESTALE);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(old, 1)), -ESTALE);
    CU_ASSERT_EQUAL(log.count[2], 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(cur, 0)), 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(cur, 1)), 1);
    CU_ASSERT_EQUAL(log.count[1], 1);
    CU_ASSERT_EQUAL(log.count[2], 1);

    /* Handles that name no record at all. */
    CU_ASSERT_EQUAL(rci_fanout_done(f, (1ull << 32) | (7u << 5)), -EINVAL);
    CU_ASSERT_EQUAL(rci_fanout_done(f, 0), -EINVAL);

    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    CU_ASSERT_EQUAL(s.double_done, 2);
    CU_ASSERT_EQUAL(s.stale_done, 3);
    CU_ASSERT_EQUAL(s.bad_handle, 2);
    CU_ASSERT_EQUAL(s.released, 2);
    rci_fanout_destroy(f);
}

static void test_exhaustion_and_limits(void)
{
    struct release_log log;
    struct rci_fanout *f = make_pool(2, &log);
    uint64_t h[3];
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 0, 1, &h[0]), 0);
    CU_ASSERT_EQUAL_FATAL(rci_fanout_begin(f, 1, 1, &h[1]), 0);
    CU_ASSERT_EQUAL(rci_fanout_begin(f, 2, 1, &h[2]), -EAGAIN);
    CU_ASSERT_EQUAL(log.count[2], 0);            /* the key stays the caller's */
    CU_ASSERT_EQUAL(rci_fanout_begin(f, 2, RCI_FANOUT_MAX_SENDS + 1, &h[2]), -E2BIG);
    CU_ASSERT_EQUAL(rci_fanout_done(f, h[0]), 1);
    CU_ASSERT_EQUAL(rci_fanout_begin(f, 2, RCI_FANOUT_MAX_SENDS, &h[2]), 0);
    for (unsigned i = 0; i + 1 < RCI_FANOUT_MAX_SENDS; i++)
        CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(h[2], i)), 0);
    CU_ASSERT_EQUAL(log.count[2], 0);
    CU_ASSERT_EQUAL(rci_fanout_done(f, rci_fanout_send_handle(h[2], RCI_FANOUT_MAX_SENDS - 1)), 1);
    CU_ASSERT_EQUAL(log.count[2], 1);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(f, &s);
    CU_ASSERT_EQUAL(s.exhausted, 1);
    CU_ASSERT_EQUAL(s.too_many_sends, 1);
    CU_ASSERT_EQUAL(s.in_use, 1);
    CU_ASSERT_EQUAL(s.high_water, 2);
    rci_fanout_destroy(f);
}

/* ---- four completion threads ---------------------------------------- */

#define THREAD_KEYS     1000000u
#define WORKERS         4u
#define POOL_RECORDS    1024u
#define QUEUE_SLOTS     4096u    /* per worker, power of two */
#define REPLAY_EVERY    16u      /* every 16th handle is completed a second time */
#define REPLAY_DELAY    8u       /* ...eight completions later, racing with reuse */

/* Handles from the main thread to one worker: single producer, single consumer. */
struct handle_queue {
    _Atomic uint64_t head, tail;
    uint64_t slot[QUEUE_SLOTS];
};

struct thread_run {
    struct rci_fanout *f;
    _Atomic uint8_t *released;           /* per key: times released */
    struct handle_queue queue[WORKERS];
    atomic_bool producer_done;
    _Atomic uint64_t replays, replay_refused, replay_released;
};

static void count_release(void *ctx, uint64_t key)
{
    _Atomic uint8_t *released = ctx;
    if (key < THREAD_KEYS)
        atomic_fetch_add_explicit(&released[key], 1, memory_order_relaxed);
}

static void queue_push(struct handle_queue *q, uint64_t h)
{
    uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    while (tail - atomic_load_explicit(&q->head, memory_order_acquire) == QUEUE_SLOTS)
        sched_yield();
    q->slot[tail % QUEUE_SLOTS] = h;
    atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
}

static bool queue_pop(struct handle_queue *q, uint64_t *h)
{
    uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (head == atomic_load_explicit(&q->tail, memory_order_acquire))
        return false;
    *h = q->slot[head % QUEUE_SLOTS];
    atomic_store_explicit(&q->head, head + 1, memory_order_release);
    return true;
}

struct worker_arg {
    struct thread_run *run;
    unsigned id;
};

/* A replayed handle is a second completion: it must be refused, whether its
 * record is still pending, released, or already reused by a later key. */
static void replay(struct thread_run *run, uint64_t h)
{
    int rc = rci_fanout_done(run->f, h);
    atomic_fetch_add(&run->replays, 1);
    if (rc == -EALREADY || rc == -ESTALE)
        atomic_fetch_add(&run->replay_refused, 1);
    else if (rc == 1)
        atomic_fetch_add(&run->replay_released, 1);
}

static void *complete_handles(void *p)
{
    struct worker_arg *a = p;
    struct thread_run *run = a->run;
    struct handle_queue *q = &run->queue[a->id];
    uint64_t recent[REPLAY_DELAY] = {0};
    uint64_t n = 0, h;
    for (;;) {
        if (!queue_pop(q, &h)) {
            if (atomic_load(&run->producer_done) && !queue_pop(q, &h))
                break;
            sched_yield();
            continue;
        }
        rci_fanout_done(run->f, h);
        if (recent[n % REPLAY_DELAY])
            replay(run, recent[n % REPLAY_DELAY]);
        recent[n % REPLAY_DELAY] = (n % REPLAY_EVERY == 0) ? h : 0;
        n++;
    }
    for (unsigned i = 0; i < REPLAY_DELAY; i++)
        if (recent[i])
            replay(run, recent[i]);
    return NULL;
}

/* Spread one record's sends over the workers, starting at a rotating one so
 * the last completion lands on every thread. */
static unsigned produce(struct thread_run *run)
{
    unsigned seed = 12345, next_worker = 0, refused = 0;
    for (uint64_t key = 0; key < THREAD_KEYS; key++) {
        unsigned k = (unsigned)(rand_r(&seed) % 7);   /* 0..6 sends */
        uint64_t first;
        int rc;
        while ((rc = rci_fanout_begin(run->f, key, k, &first)) == -EAGAIN)
            sched_yield();   /* backpressure: workers free records */
        if (rc != 0) {
            refused++;
            continue;
        }
        for (unsigned i = 0; i < k; i++)
            queue_push(&run->queue[(next_worker + i) % WORKERS], rci_fanout_send_handle(first, i));
        next_worker++;
    }
    atomic_store(&run->producer_done, true);
    return refused;
}

static void test_four_threads_release_every_key_once(void)
{
    struct thread_run *run = calloc(1, sizeof *run);
    CU_ASSERT_PTR_NOT_NULL_FATAL(run);
    run->released = calloc(THREAD_KEYS, sizeof *run->released);
    CU_ASSERT_PTR_NOT_NULL_FATAL(run->released);
    char err[128];
    CU_ASSERT_EQUAL_FATAL(rci_fanout_create(POOL_RECORDS, count_release, (void *)run->released, &run->f,
                                           err, sizeof err), 0);
    pthread_t tid[WORKERS];
    struct worker_arg args[WORKERS];
    for (unsigned i = 0; i < WORKERS; i++) {
        args[i] = (struct worker_arg){.run = run, .id = i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, complete_handles, &args[i]), 0);
    }
    CU_ASSERT_EQUAL(produce(run), 0);
    for (unsigned i = 0; i < WORKERS; i++)
        pthread_join(tid[i], NULL);

    unsigned not_once = 0;
    for (uint64_t key = 0; key < THREAD_KEYS; key++)
        not_once += atomic_load(&run->released[key]) != 1;
    CU_ASSERT_EQUAL(not_once, 0);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(run->f, &s);
    CU_ASSERT_EQUAL(s.released + s.released_at_once, THREAD_KEYS);
    CU_ASSERT_EQUAL(s.begun, s.released);
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT(s.high_water <= POOL_RECORDS);
    CU_ASSERT_EQUAL(s.bad_handle, 0);
    CU_ASSERT(atomic_load(&run->replays) > 10000);
    CU_ASSERT_EQUAL(atomic_load(&run->replay_released), 0);
    CU_ASSERT_EQUAL(atomic_load(&run->replay_refused), atomic_load(&run->replays));
    CU_ASSERT_EQUAL(s.stale_done + s.double_done, atomic_load(&run->replays));
    rci_fanout_destroy(run->f);
    free((void *)run->released);
    free(run);
}

/* ---- two levels: one share per thread, each thread's own shares ---------
 * As the readout daemon uses it with several publisher threads: the
 * producer takes a card-level record with one share per thread that gets the
 * key; each thread takes its own record, keyed by its card-level share handle,
 * with as many shares as it decides itself, and completes them out of order;
 * its record's release completes its card-level share. */

#define LEVEL_THREADS   3u
#define LEVEL_KEYS      300000u
#define THREAD_RECORDS  4u       /* fewer than THREAD_PENDING: begin meets -EAGAIN */
#define THREAD_PENDING  8u       /* shares a thread holds before completing the oldest */

struct level_run {
    struct rci_fanout *card;
    _Atomic uint8_t *released;
    struct handle_queue queue[LEVEL_THREADS];
    atomic_bool producer_done;
};

struct level_thread {
    struct level_run *run;
    unsigned id;
    struct rci_fanout *own;
    uint64_t pending[THREAD_PENDING];
    unsigned npending;
    unsigned seed;
};

/* A thread's record is over: its share of the card-level record is. */
static void complete_card_share(void *ctx, uint64_t card_handle)
{
    rci_fanout_done(ctx, card_handle);
}

static void complete_oldest(struct level_thread *t)
{
    rci_fanout_done(t->own, t->pending[0]);
    memmove(t->pending, t->pending + 1, --t->npending * sizeof t->pending[0]);
}

/* Take a record for this card-level share with 0..4 shares of its own. */
static void take_share(struct level_thread *t, uint64_t card_handle)
{
    unsigned k = (unsigned)(rand_r(&t->seed) % 5);
    uint64_t first;
    while (rci_fanout_begin(t->own, card_handle, k, &first) == -EAGAIN)
        complete_oldest(t);   /* every record in use holds a pending share of ours */
    for (unsigned i = 0; i < k; i++) {
        if (t->npending == THREAD_PENDING)
            complete_oldest(t);
        /* Insert at a random place: completions leave out of order. */
        unsigned at = (unsigned)(rand_r(&t->seed) % (t->npending + 1));
        memmove(t->pending + at + 1, t->pending + at, (t->npending - at) * sizeof t->pending[0]);
        t->pending[at] = rci_fanout_send_handle(first, i);
        t->npending++;
    }
}

static void *level_worker(void *p)
{
    struct level_thread *t = p;
    struct handle_queue *q = &t->run->queue[t->id];
    uint64_t h;
    for (;;) {
        if (queue_pop(q, &h)) {
            take_share(t, h);
            continue;
        }
        if (atomic_load(&t->run->producer_done) && !queue_pop(q, &h))
            break;
        if (t->npending)
            complete_oldest(t);
        else
            sched_yield();
    }
    while (t->npending)
        complete_oldest(t);
    return NULL;
}

static void level_produce(struct level_run *run)
{
    unsigned seed = 777;
    for (uint64_t key = 0; key < LEVEL_KEYS; key++) {
        unsigned threads = (unsigned)(rand_r(&seed) % (1u << LEVEL_THREADS)); /* which threads get it */
        uint64_t first;
        while (rci_fanout_begin(run->card, key, (unsigned)__builtin_popcount(threads), &first) == -EAGAIN)
            sched_yield();
        unsigned share = 0;
        for (unsigned t = 0; t < LEVEL_THREADS; t++)
            if (threads & (1u << t))
                queue_push(&run->queue[t], rci_fanout_send_handle(first, share++));
    }
    atomic_store(&run->producer_done, true);
}

static void test_two_levels_release_every_key_once(void)
{
    struct level_run *run = calloc(1, sizeof *run);
    CU_ASSERT_PTR_NOT_NULL_FATAL(run);
    run->released = calloc(LEVEL_KEYS, sizeof *run->released);
    CU_ASSERT_PTR_NOT_NULL_FATAL(run->released);
    char err[128];
    CU_ASSERT_EQUAL_FATAL(rci_fanout_create(POOL_RECORDS, count_release, (void *)run->released, &run->card,
                                           err, sizeof err), 0);
    struct level_thread threads[LEVEL_THREADS];
    pthread_t tid[LEVEL_THREADS];
    for (unsigned i = 0; i < LEVEL_THREADS; i++) {
        threads[i] = (struct level_thread){.run = run, .id = i, .seed = 100 + i};
        CU_ASSERT_EQUAL_FATAL(rci_fanout_create(THREAD_RECORDS, complete_card_share, run->card,
                                               &threads[i].own, err, sizeof err), 0);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, level_worker, &threads[i]), 0);
    }
    level_produce(run);
    for (unsigned i = 0; i < LEVEL_THREADS; i++)
        pthread_join(tid[i], NULL);

    unsigned not_once = 0;
    for (uint64_t key = 0; key < LEVEL_KEYS; key++)
        not_once += atomic_load(&run->released[key]) != 1;
    CU_ASSERT_EQUAL(not_once, 0);
    struct rci_fanout_stats s;
    rci_fanout_get_stats(run->card, &s);
    CU_ASSERT_EQUAL(s.released + s.released_at_once, LEVEL_KEYS);
    CU_ASSERT(s.released_at_once > 0);   /* keys no thread got */
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.stale_done + s.double_done + s.bad_handle, 0);
    for (unsigned i = 0; i < LEVEL_THREADS; i++) {
        rci_fanout_get_stats(threads[i].own, &s);
        CU_ASSERT_EQUAL(s.in_use, 0);
        CU_ASSERT(s.released_at_once > 0);   /* k == 0: the card-level share completes at once */
        CU_ASSERT(s.exhausted > 0);          /* the small pool ran out and was waited for */
        CU_ASSERT_EQUAL(s.stale_done + s.double_done + s.bad_handle, 0);
        rci_fanout_destroy(threads[i].own);
    }
    rci_fanout_destroy(run->card);
    free((void *)run->released);
    free(run);
}

static void register_tests(void)
{
    RCI_SUITE("fanout",
             {"create rejects bad arguments", test_create_rejects_bad_arguments},
             {"k == 0 releases at once", test_no_subscriber_releases_at_once},
             {"k-th completion releases", test_kth_completion_releases},
             {"double and stale completions refused", test_double_and_stale_completions_refused},
             {"exhaustion and send limits", test_exhaustion_and_limits},
             {"4 threads, 10^6 keys, each released once", test_four_threads_release_every_key_once},
             {"two levels, 3 threads, each key released once", test_two_levels_release_every_key_once});
}

RCI_CUNIT_MAIN(register_tests)
