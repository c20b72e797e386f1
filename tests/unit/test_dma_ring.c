/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dma_ring.c — the DMA ring (positions, spans, keys, out-of-order and
 * concurrent releases, stats) and its memory backends (anon, hugetlb, shm). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <numaif.h>
#include "dma/dma_ring.h"
#include "tests/unit/cunit_main.h"

/* ---------- helpers ---------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static struct rci_dma_ring *make_ring(size_t units, size_t unit)
{
    struct rci_dma_ring_params p = {
        .size = units * unit, .unit_size = unit, .backend = RCI_MEM_ANON, .lock_memory = false,
    };
    struct rci_dma_ring *r = NULL;
    char err[256];
    int rc = rci_dma_ring_create(&p, &r, err, sizeof err);
    if (rc != 0) fprintf(stderr, "ring create: %s\n", err);
    return rc == 0 ? r : NULL;
}

static struct rci_dma_ring_stats stats_of(const struct rci_dma_ring *r)
{
    struct rci_dma_ring_stats s;
    rci_dma_ring_get_stats(r, &s);
    return s;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Loops that wait for other threads give up after this, so that a broken ring
 * fails the test instead of hanging it. */
#define WAIT_LIMIT_NS (20ull * 1000000000ull)

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void unique_name(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "rc-test-%s-%d", what, (int)getpid());
}

static bool shm_exists(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    return access(path, F_OK) == 0;
}

/* ---------- positions, spans, takes ---------- */

static void test_sequential(void)
{
    struct rci_dma_ring *r = make_ring(8, 64);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(rci_dma_ring_size(r), 512);
    CU_ASSERT_EQUAL(rci_dma_ring_unit(r), 64);
    CU_ASSERT_PTR_NOT_NULL(rci_dma_ring_addr(r));
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 256), 0);

    uint64_t keys[4];
    for (unsigned i = 0; i < 4; i++) {
        struct rci_dma_span sp;
        CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, 64, &sp, &keys[i]), 0);
        CU_ASSERT_EQUAL(sp.count, 1);
        CU_ASSERT_EQUAL(sp.piece[0].offset, i * 64);
        CU_ASSERT_EQUAL(sp.piece[0].len, 64);
    }
    struct rci_dma_span sp;
    uint64_t k;
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 64, &sp, &k), -EAGAIN);
    CU_ASSERT_EQUAL(rci_dma_ring_taken_pos(r), 256);

    for (unsigned i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(rci_dma_ring_release(r, keys[i]), 0);
        CU_ASSERT_EQUAL(rci_dma_ring_advance(r), (i + 1) * 64);
        CU_ASSERT_EQUAL(rci_dma_ring_read_pos(r), (i + 1) * 64);
    }
    struct rci_dma_ring_stats s = stats_of(r);
    CU_ASSERT_EQUAL(s.size, 512);
    CU_ASSERT_EQUAL(s.written, 256);
    CU_ASSERT_EQUAL(s.taken, 256);
    CU_ASSERT_EQUAL(s.read, 256);
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.high_water, 256);
    CU_ASSERT_EQUAL(s.takes, 4);
    CU_ASSERT_EQUAL(s.releases, 4);
    CU_ASSERT_EQUAL(s.bad_releases, 0);
    CU_ASSERT_EQUAL(s.bad_written, 0);
    rci_dma_ring_destroy(r);
}

static void test_take_limits(void)
{
    struct rci_dma_ring *r = make_ring(4, 64);
    CU_ASSERT_FATAL(r != NULL);
    struct rci_dma_span sp;
    uint64_t k;
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 64, &sp, &k), -EAGAIN);   /* nothing written */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 100), 0);         /* card stopped mid-unit */
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 0, &sp, &k), -EINVAL);
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 65, &sp, &k), -EINVAL);
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 320, &sp, &k), -EINVAL);  /* more than the ring */
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 128, &sp, &k), -EAGAIN);  /* only 100 written */
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 64, &sp, &k), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 64, &sp, &k), -EAGAIN);   /* 64..100 is partial */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 128), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, 64, &sp, &k), 0);
    CU_ASSERT_EQUAL(stats_of(r).takes, 2);
    CU_ASSERT_EQUAL(rci_dma_ring_taken_pos(r), 128);
    rci_dma_ring_destroy(r);
}

struct take_rec { uint64_t start, len, key; bool released; };

/* Fill the free space and take it in random 1..4 unit pieces. */
static unsigned take_all(struct rci_dma_ring *r, struct take_rec *t, unsigned max)
{
    size_t unit = rci_dma_ring_unit(r);
    rci_dma_ring_note_written(r, rci_dma_ring_read_pos(r) + rci_dma_ring_size(r));
    unsigned n = 0;
    while (n < max) {
        uint64_t left = (rci_dma_ring_written_pos(r) - rci_dma_ring_taken_pos(r)) / unit;
        uint64_t count = 1 + rng_next(&rng_state) % 4;
        if (count > left) count = left;
        if (count == 0) break;
        struct rci_dma_span sp;
        t[n].start = rci_dma_ring_taken_pos(r);
        t[n].len = count * unit;
        t[n].released = false;
        if (rci_dma_ring_take(r, t[n].len, &sp, &t[n].key) != 0) break;
        n++;
    }
    return n;
}

static uint64_t expected_read(const struct take_rec *t, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (!t[i].released) return t[i].start;
    return t[n - 1].start + t[n - 1].len;
}

static void shuffle(unsigned *a, unsigned n)
{
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)(rng_next(&rng_state) % i);
        unsigned x = a[i - 1];
        a[i - 1] = a[j];
        a[j] = x;
    }
}

static void test_out_of_order(void)
{
    enum { UNITS = 64, LAPS = 50 };
    struct rci_dma_ring *r = make_ring(UNITS, 32);
    CU_ASSERT_FATAL(r != NULL);
    struct take_rec t[UNITS];
    unsigned order[UNITS];
    unsigned mismatches = 0, total_takes = 0;
    for (unsigned lap = 0; lap < LAPS; lap++) {
        unsigned n = take_all(r, t, UNITS);
        CU_ASSERT_FATAL(n > 0);
        total_takes += n;
        CU_ASSERT_EQUAL(rci_dma_ring_taken_pos(r), rci_dma_ring_read_pos(r) + UNITS * 32);
        for (unsigned i = 0; i < n; i++) order[i] = i;
        shuffle(order, n);
        for (unsigned i = 0; i < n; i++) {
            CU_ASSERT_EQUAL(rci_dma_ring_release(r, t[order[i]].key), 0);
            t[order[i]].released = true;
            if (rci_dma_ring_advance(r) != expected_read(t, n)) mismatches++;
            if (rci_dma_ring_read_pos(r) != expected_read(t, n)) mismatches++;
        }
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    struct rci_dma_ring_stats s = stats_of(r);
    CU_ASSERT_EQUAL(s.read, s.taken);
    CU_ASSERT_EQUAL(s.read, (uint64_t)LAPS * UNITS * 32);
    CU_ASSERT_EQUAL(s.takes, total_takes);
    CU_ASSERT_EQUAL(s.releases, total_takes);
    CU_ASSERT_EQUAL(s.bad_releases, 0);
    rci_dma_ring_destroy(r);
}

static void take_expect(struct rci_dma_ring *r, size_t len, unsigned count, size_t off0,
                        size_t len0, size_t len1, uint64_t *key)
{
    struct rci_dma_span sp;
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, len, &sp, key), 0);
    CU_ASSERT_EQUAL(sp.count, count);
    CU_ASSERT_EQUAL(sp.piece[0].offset, off0);
    CU_ASSERT_EQUAL(sp.piece[0].len, len0);
    if (count == 2) {
        CU_ASSERT_EQUAL(sp.piece[1].offset, 0);
        CU_ASSERT_EQUAL(sp.piece[1].len, len1);
    }
    CU_ASSERT_EQUAL(sp.piece[0].len + (count == 2 ? sp.piece[1].len : 0), len);
}

static void test_wrap_spans(void)
{
    /* 10 units of 96 bytes: neither is a power of two. */
    struct rci_dma_ring *r = make_ring(10, 96);
    CU_ASSERT_FATAL(r != NULL);
    uint64_t k1, k2;
    rci_dma_ring_note_written(r, 960);
    take_expect(r, 768, 1, 0, 768, 0, &k1);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k1), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 768);

    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 768 + 960), 0);
    take_expect(r, 384, 2, 768, 192, 192, &k1);        /* wraps: 768..960 + 0..192 */
    take_expect(r, 576, 1, 192, 576, 0, &k2);          /* ends exactly at 768 */
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k2), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 768);      /* k1 still held */
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k1), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 1728);

    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 1728 + 960), 0);
    take_expect(r, 192, 1, 768, 192, 0, &k1);          /* ends exactly at the end */
    take_expect(r, 768, 1, 0, 768, 0, &k2);            /* starts exactly at 0 */
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k1), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k2), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 2688);

    /* A whole-ring take starting mid-ring. */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 2688 + 960), 0);
    take_expect(r, 960, 2, 768, 192, 768, &k1);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k1), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 3648);
    CU_ASSERT_EQUAL(stats_of(r).bad_releases, 0);
    rci_dma_ring_destroy(r);
}

/* ---------- stats ---------- */

static void test_full_ring(void)
{
    struct rci_dma_ring *r = make_ring(16, 64);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 512), 0);
    CU_ASSERT_EQUAL(stats_of(r).full_ns, 0);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 1024), 0);
    struct rci_dma_ring_stats s = stats_of(r);
    CU_ASSERT_EQUAL(s.in_use, 1024);
    CU_ASSERT_EQUAL(s.high_water, 1024);

    uint64_t k;
    struct rci_dma_span sp;
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, 1024, &sp, &k), 0);
    sleep_ms(5);
    CU_ASSERT(stats_of(r).full_ns >= 5000000);          /* a stall in progress counts */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 1024), 0);   /* still full: same stall */
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 1024);
    uint64_t stalled = stats_of(r).full_ns;
    CU_ASSERT(stalled >= 5000000);
    sleep_ms(2);
    s = stats_of(r);
    CU_ASSERT_EQUAL(s.full_ns, stalled);                /* the stall has ended */
    CU_ASSERT_EQUAL(s.in_use, 0);
    CU_ASSERT_EQUAL(s.high_water, 1024);

    /* A second stall adds to the first. */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 2048), 0);
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, 64, &sp, &k), 0);
    sleep_ms(2);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 1088);
    CU_ASSERT(stats_of(r).full_ns >= stalled + 2000000);
    rci_dma_ring_destroy(r);
}

static void test_note_written_violations(void)
{
    struct rci_dma_ring *r = make_ring(4, 64);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 128), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 100), -EINVAL);      /* backwards */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r), 128);
    CU_ASSERT_EQUAL(stats_of(r).bad_written, 1);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 300), -EINVAL);      /* past read + size */
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r), 256);
    CU_ASSERT_EQUAL(stats_of(r).bad_written, 2);
    CU_ASSERT_EQUAL(stats_of(r).in_use, 256);

    uint64_t k;
    struct rci_dma_span sp;
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, 256, &sp, &k), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 256);
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 512), 0);            /* exactly read + size */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 512), 0);            /* unchanged is fine */
    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 513), -EINVAL);
    CU_ASSERT_EQUAL(rci_dma_ring_written_pos(r), 512);
    CU_ASSERT_EQUAL(stats_of(r).bad_written, 3);
    rci_dma_ring_destroy(r);
}

/* ---------- bad keys ---------- */

static uint64_t take_one(struct rci_dma_ring *r, size_t len)
{
    uint64_t k = 0;
    struct rci_dma_span sp;
    CU_ASSERT_EQUAL(rci_dma_ring_take(r, len, &sp, &k), 0);
    return k;
}

static void test_bad_keys(void)
{
    struct rci_dma_ring *r = make_ring(8, 64);
    CU_ASSERT_FATAL(r != NULL);
    unsigned rejected = 0;
#define EXPECT_REJECT(key)                                         \
    do {                                                           \
        CU_ASSERT_EQUAL(rci_dma_ring_release(r, (key)), -EINVAL);   \
        rejected++;                                                \
    } while (0)

    EXPECT_REJECT(0);                    /* nothing taken yet */
    EXPECT_REJECT(~0ull);
    EXPECT_REJECT(1);
    EXPECT_REJECT(1ull << 63);

    rci_dma_ring_note_written(r, 512);
    uint64_t a = take_one(r, 64), b = take_one(r, 64);
    CU_ASSERT_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, a), 0);
    EXPECT_REJECT(a);                    /* duplicate before advance */
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 64);
    EXPECT_REJECT(a);                    /* stale: advanced past */
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, b), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 128);
    EXPECT_REJECT(b);

    /* Lap around so that a's unit 0 is taken again by a new take. */
    uint64_t c = take_one(r, 384);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, c), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 512);
    rci_dma_ring_note_written(r, 1024);
    uint64_t d = take_one(r, 64);        /* unit 0 again, next lap */
    CU_ASSERT_NOT_EQUAL(a, d);
    EXPECT_REJECT(a);                    /* stale: its unit is live for d */
    EXPECT_REJECT(c);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 512);   /* a's rejection moved nothing */

    /* d is the only live take: every single-bit corruption of it is refused. */
    for (unsigned bit = 0; bit < 64; bit++) EXPECT_REJECT(d ^ (1ull << bit));
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 512);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, d), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 576);

    /* Random garbage next to a live multi-unit take. */
    uint64_t e = take_one(r, 192);
    uint64_t s = 12345;
    for (unsigned i = 0; i < 10000; i++) {
        uint64_t g = rng_next(&s);
        if (g == e) continue;
        EXPECT_REJECT(g);
    }
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 576);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, e), 0);
    CU_ASSERT_EQUAL(rci_dma_ring_advance(r), 768);
#undef EXPECT_REJECT

    struct rci_dma_ring_stats st = stats_of(r);
    CU_ASSERT_EQUAL(st.bad_releases, rejected);
    CU_ASSERT_EQUAL(st.takes, 5);
    CU_ASSERT_EQUAL(st.releases, 5);
    CU_ASSERT_EQUAL(st.read, st.taken);
    rci_dma_ring_destroy(r);
}

/* Two threads release the same key at once while the owner advances. */
enum { DUP_ROUNDS = 2000 };

struct dup_race {
    struct rci_dma_ring *ring;
    pthread_barrier_t go, done;
    _Atomic uint64_t key;
    int rc[2];
};

struct dup_worker { struct dup_race *race; unsigned id; };

static void *dup_worker_main(void *arg)
{
    struct dup_worker *w = arg;
    for (unsigned i = 0; i < DUP_ROUNDS; i++) {
        pthread_barrier_wait(&w->race->go);
        uint64_t key = atomic_load_explicit(&w->race->key, memory_order_relaxed);
        w->race->rc[w->id] = rci_dma_ring_release(w->race->ring, key);
        pthread_barrier_wait(&w->race->done);
    }
    return NULL;
}

static void test_concurrent_duplicate(void)
{
    struct dup_race race = { .ring = make_ring(8, 64) };
    CU_ASSERT_FATAL(race.ring != NULL);
    pthread_barrier_init(&race.go, NULL, 3);
    pthread_barrier_init(&race.done, NULL, 3);
    struct dup_worker w[2] = { { &race, 0 }, { &race, 1 } };
    pthread_t th[2];
    for (unsigned i = 0; i < 2; i++) pthread_create(&th[i], NULL, dup_worker_main, &w[i]);

    unsigned not_exactly_one = 0, timeouts = 0;
    uint64_t deadline = mono_ns() + WAIT_LIMIT_NS;
    for (unsigned i = 0; i < DUP_ROUNDS; i++) {
        struct rci_dma_ring *r = race.ring;
        rci_dma_ring_note_written(r, rci_dma_ring_read_pos(r) + rci_dma_ring_size(r));
        atomic_store_explicit(&race.key, take_one(r, 64 * (1 + i % 3)), memory_order_relaxed);
        pthread_barrier_wait(&race.go);       /* orders the take before both releases */
        while (rci_dma_ring_advance(r) != rci_dma_ring_taken_pos(r) && mono_ns() < deadline)
            sched_yield();
        timeouts += mono_ns() >= deadline;
        pthread_barrier_wait(&race.done);
        unsigned winners = (race.rc[0] == 0) + (race.rc[1] == 0);
        unsigned losers = (race.rc[0] == -EINVAL) + (race.rc[1] == -EINVAL);
        if (winners != 1 || losers != 1) not_exactly_one++;
    }
    for (unsigned i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(timeouts, 0);
    CU_ASSERT_EQUAL(not_exactly_one, 0);
    struct rci_dma_ring_stats s = stats_of(race.ring);
    CU_ASSERT_EQUAL(s.bad_releases, DUP_ROUNDS);
    CU_ASSERT_EQUAL(s.releases, DUP_ROUNDS);
    CU_ASSERT_EQUAL(s.read, s.taken);
    pthread_barrier_destroy(&race.go);
    pthread_barrier_destroy(&race.done);
    rci_dma_ring_destroy(race.ring);
}

/* ---------- many releasing threads, owner taking and advancing ---------- */

enum { MT_UNITS = 64, MT_UNIT = 64, MT_THREADS = 4, MT_BATCH = 8 };
#define MT_TOTAL_UNITS (1ull << 20)

struct mt_take { uint64_t start, len, key; };

struct mt_shared {
    struct rci_dma_ring *ring;
    pthread_mutex_t lock;               /* guards the bag (test scaffolding only) */
    struct mt_take bag[MT_UNITS];       /* at most one take per unit outstanding */
    unsigned bag_n;
    atomic_bool done;
    _Atomic uint64_t released_bytes, bad_data, bad_rc;
};

struct mt_worker { struct mt_shared *sh; uint64_t rng; };

/* Pick up to MT_BATCH random entries from the bag. */
static unsigned mt_grab(struct mt_worker *w, struct mt_take *out)
{
    struct mt_shared *sh = w->sh;
    pthread_mutex_lock(&sh->lock);
    unsigned n = 0;
    while (n < MT_BATCH && sh->bag_n > 0) {
        unsigned j = (unsigned)(rng_next(&w->rng) % sh->bag_n);
        out[n++] = sh->bag[j];
        sh->bag[j] = sh->bag[--sh->bag_n];
    }
    pthread_mutex_unlock(&sh->lock);
    return n;
}

/* Each unit carries its own monotonic position, stamped by the "card": if read
 * ever passed an unreleased take, the card would have overwritten it. */
static void mt_check_and_release(struct mt_shared *sh, const struct mt_take *t)
{
    const uint8_t *base = rci_dma_ring_addr(sh->ring);
    for (uint64_t pos = t->start; pos < t->start + t->len; pos += MT_UNIT) {
        uint64_t stamp;
        memcpy(&stamp, base + pos % (MT_UNITS * MT_UNIT), sizeof stamp);
        if (stamp != pos) atomic_fetch_add(&sh->bad_data, 1);
    }
    if (rci_dma_ring_release(sh->ring, t->key) != 0) atomic_fetch_add(&sh->bad_rc, 1);
    atomic_fetch_add(&sh->released_bytes, t->len);
}

static void *mt_worker_main(void *arg)
{
    struct mt_worker *w = arg;
    struct mt_take got[MT_BATCH];
    for (;;) {
        unsigned n = mt_grab(w, got);
        if (n == 0) {
            if (atomic_load(&w->sh->done)) return NULL;
            sched_yield();
            continue;
        }
        for (unsigned i = 0; i < n; i++) mt_check_and_release(w->sh, &got[i]);
    }
}

/* The owner plays the card (stamps free units), takes and advances. */
static void mt_card_fill(struct mt_shared *sh)
{
    struct rci_dma_ring *r = sh->ring;
    uint64_t limit = rci_dma_ring_read_pos(r) + MT_UNITS * MT_UNIT;
    for (uint64_t pos = rci_dma_ring_written_pos(r); pos < limit; pos += MT_UNIT)
        memcpy(rci_dma_ring_addr(r) + pos % (MT_UNITS * MT_UNIT), &pos, sizeof pos);
    rci_dma_ring_note_written(r, limit);
}

static unsigned mt_take_batch(struct mt_shared *sh, uint64_t *rng, struct mt_take *out,
                              unsigned *span_errors)
{
    struct rci_dma_ring *r = sh->ring;
    unsigned n = 0;
    while (n < MT_UNITS && rci_dma_ring_taken_pos(r) < MT_TOTAL_UNITS * MT_UNIT) {
        uint64_t start = rci_dma_ring_taken_pos(r);
        size_t len = (1 + rng_next(rng) % 4) * MT_UNIT;
        struct rci_dma_span sp;
        uint64_t key;
        if (rci_dma_ring_take(r, len, &sp, &key) != 0) break;
        size_t covered = sp.piece[0].len + (sp.count == 2 ? sp.piece[1].len : 0);
        if (sp.piece[0].offset != start % (MT_UNITS * MT_UNIT) || covered != len)
            (*span_errors)++;
        out[n++] = (struct mt_take){ start, len, key };
    }
    return n;
}

static void test_multithread_release(void)
{
    static struct mt_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.ring = make_ring(MT_UNITS, MT_UNIT);
    CU_ASSERT_FATAL(sh.ring != NULL);
    pthread_mutex_init(&sh.lock, NULL);
    struct mt_worker w[MT_THREADS];
    pthread_t th[MT_THREADS];
    for (unsigned i = 0; i < MT_THREADS; i++) {
        w[i] = (struct mt_worker){ &sh, 0x1234567ull * (i + 1) };
        pthread_create(&th[i], NULL, mt_worker_main, &w[i]);
    }

    uint64_t rng = 42, takes = 0;
    unsigned span_errors = 0;
    struct mt_take batch[MT_UNITS];
    uint64_t deadline = mono_ns() + WAIT_LIMIT_NS;
    while (rci_dma_ring_taken_pos(sh.ring) < MT_TOTAL_UNITS * MT_UNIT && mono_ns() < deadline) {
        rci_dma_ring_advance(sh.ring);
        mt_card_fill(&sh);
        unsigned n = mt_take_batch(&sh, &rng, batch, &span_errors);
        if (n == 0) { sched_yield(); continue; }
        pthread_mutex_lock(&sh.lock);
        /* More than one take per unit outstanding: the ring gave out memory
         * that was not released. */
        bool overflow = sh.bag_n + n > MT_UNITS;
        if (!overflow) {
            memcpy(&sh.bag[sh.bag_n], batch, n * sizeof batch[0]);
            sh.bag_n += n;
        }
        pthread_mutex_unlock(&sh.lock);
        CU_ASSERT_FALSE(overflow);
        if (overflow) break;
        takes += n;
    }
    uint64_t total = rci_dma_ring_taken_pos(sh.ring);
    while (rci_dma_ring_advance(sh.ring) != total && mono_ns() < deadline) sched_yield();
    CU_ASSERT(mono_ns() < deadline);
    atomic_store(&sh.done, true);
    for (unsigned i = 0; i < MT_THREADS; i++) pthread_join(th[i], NULL);

    struct rci_dma_ring_stats s = stats_of(sh.ring);
    CU_ASSERT(total >= MT_TOTAL_UNITS * MT_UNIT);
    CU_ASSERT_EQUAL(s.read, total);
    CU_ASSERT_EQUAL(s.taken, total);
    CU_ASSERT_EQUAL(atomic_load(&sh.released_bytes), total);
    CU_ASSERT_EQUAL(atomic_load(&sh.bad_data), 0);
    CU_ASSERT_EQUAL(atomic_load(&sh.bad_rc), 0);
    CU_ASSERT_EQUAL(span_errors, 0);
    CU_ASSERT_EQUAL(s.takes, takes);
    CU_ASSERT_EQUAL(s.releases, takes);
    CU_ASSERT_EQUAL(s.bad_releases, 0);
    CU_ASSERT_EQUAL(s.bad_written, 0);
    CU_ASSERT(s.high_water <= MT_UNITS * MT_UNIT);
    pthread_mutex_destroy(&sh.lock);
    rci_dma_ring_destroy(sh.ring);
}

/* ---------- ring creation ---------- */

static void test_ring_create_errors(void)
{
    char err[256];
    struct rci_dma_ring *r = NULL;
    struct rci_dma_ring_params p = { .size = 1000, .unit_size = 64 };
    CU_ASSERT_EQUAL(rci_dma_ring_create(NULL, &r, err, sizeof err), -EINVAL);
    CU_ASSERT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "1000"));
    p.unit_size = 0;
    CU_ASSERT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), -EINVAL);
    p = (struct rci_dma_ring_params){ .size = 0, .unit_size = 64 };
    CU_ASSERT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), -EINVAL);
    p = (struct rci_dma_ring_params){ .size = 1 << 20, .unit_size = 1024, .backend = RCI_MEM_HUGETLB };
    CU_ASSERT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 MiB"));
    p = (struct rci_dma_ring_params){ .size = 1 << 20, .unit_size = 1024, .backend = RCI_MEM_SHM,
                                     .shm_name = "no/slash" };
    CU_ASSERT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(r);
}

/* A child process attaches to the ring's shm and plays the card. */
static void test_ring_shm_backend(void)
{
    char name[64], err[256];
    unique_name(name, sizeof name, "ring");
    struct rci_dma_ring_params p = { .size = 16 * 1024, .unit_size = 1024,
                                    .backend = RCI_MEM_SHM, .shm_name = name };
    struct rci_dma_ring *r = NULL;
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&p, &r, err, sizeof err), 0);
    const struct rci_mem_region *m = rci_dma_ring_region(r);
    CU_ASSERT_EQUAL(m->backend, RCI_MEM_SHM);
    CU_ASSERT_STRING_EQUAL(m->name, name);
    CU_ASSERT(m->owner);
    CU_ASSERT(shm_exists(name));

    pid_t pid = fork();
    if (pid == 0) {
        struct rci_mem_region card;
        if (rci_mem_map(RCI_MEM_SHM, p.size, name, false, false, &card, err, sizeof err) != 0)
            _exit(1);
        for (size_t i = 0; i < 3 * 1024; i++) card.addr[i] = (uint8_t)(i * 13 + 1);
        rci_mem_unmap(&card);
        _exit(0);
    }
    int status = -1;
    CU_ASSERT_FATAL(pid > 0);
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CU_ASSERT_EQUAL(rci_dma_ring_note_written(r, 3 * 1024), 0);
    struct rci_dma_span sp;
    uint64_t k;
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_take(r, 3 * 1024, &sp, &k), 0);
    unsigned wrong = 0;
    for (size_t i = 0; i < sp.piece[0].len; i++)
        if (rci_dma_ring_addr(r)[sp.piece[0].offset + i] != (uint8_t)(i * 13 + 1)) wrong++;
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(rci_dma_ring_release(r, k), 0);
    rci_dma_ring_destroy(r);
    CU_ASSERT(!shm_exists(name));
}

/* ---------- memory backends ---------- */

static void test_mem_backend_names(void)
{
    enum rci_mem_backend b;
    const char *names[] = { "anon", "hugetlb", "shm", "hugetlbfs" };
    for (unsigned i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(rci_mem_backend_parse(names[i], &b), 0);
        CU_ASSERT_EQUAL((unsigned)b, i);
        CU_ASSERT_STRING_EQUAL(rci_mem_backend_name(b), names[i]);
    }
    CU_ASSERT_EQUAL(rci_mem_backend_parse("ANON", &b), -EINVAL);
    CU_ASSERT_EQUAL(rci_mem_backend_parse("", &b), -EINVAL);
    CU_ASSERT_EQUAL(rci_mem_backend_parse(NULL, &b), -EINVAL);
    CU_ASSERT_STRING_EQUAL(rci_mem_backend_name((enum rci_mem_backend)7), "unknown");
}

/* A ring bound to a NUMA node: the kernel reports MPOL_BIND to that node for
 * its pages; a node that does not exist is refused. (One node here: node 0.) */
static void test_ring_numa_bind(void)
{
    struct rci_dma_ring_params p = { .size = 1 << 20, .unit_size = 4096, .backend = RCI_MEM_ANON,
                                    .bind_node = true, .numa_node = 0 };
    struct rci_dma_ring *r;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_dma_ring_create(&p, &r, err, sizeof err), 0);
    int mode = -1;
    unsigned long mask[16] = { 0 };
    CU_ASSERT_EQUAL(syscall(SYS_get_mempolicy, &mode, mask, sizeof mask * 8, rci_dma_ring_addr(r),
                            MPOL_F_ADDR), 0);
    CU_ASSERT_EQUAL(mode, MPOL_BIND);
    CU_ASSERT_EQUAL(mask[0], 1ul);
    rci_dma_ring_destroy(r);
    p.numa_node = 63;   /* no such node on this host */
    CU_ASSERT_NOT_EQUAL(rci_dma_ring_create(&p, &r, err, sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "NUMA node 63"));
}

static void test_mem_anon(void)
{
    struct rci_mem_region m;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_ANON, 1 << 20, NULL, true, false, &m, err,
                                     sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT(!m.locked);
    CU_ASSERT_EQUAL(m.lock_errno, 0);
    CU_ASSERT_EQUAL((uintptr_t)m.addr % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    CU_ASSERT_EQUAL(m.addr[0] | m.addr[(1 << 20) - 1], 0);
    memset(m.addr, 0xa5, 1 << 20);
    rci_mem_unmap(&m);
    CU_ASSERT_PTR_NULL(m.addr);
    rci_mem_unmap(&m);                               /* twice is harmless */

    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_ANON, 1 << 20, NULL, true, true, &m, err,
                                     sizeof err), 0);
    if (m.locked) {
        CU_ASSERT_EQUAL(m.lock_errno, 0);
        CU_ASSERT_STRING_EQUAL(err, "");
    } else {
        CU_ASSERT_NOT_EQUAL(m.lock_errno, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "mlock"));
    }
    rci_mem_unmap(&m);

    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_ANON, 0, NULL, true, false, &m, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "size 0"));
    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_ANON, 4096, NULL, false, false, &m, err, sizeof err),
                    -EINVAL);
    CU_ASSERT_EQUAL(rci_mem_map((enum rci_mem_backend)9, 4096, NULL, true, false, &m, err,
                               sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(m.addr);
}

/* ASan and TSan replace mlock() with a no-op that returns 0, so under them
 * the failure path cannot be provoked. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MLOCK_IS_REAL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MLOCK_IS_REAL 0
#endif
#endif
#ifndef MLOCK_IS_REAL
#define MLOCK_IS_REAL 1
#endif

/* Without CAP_IPC_LOCK and with RLIMIT_MEMLOCK 0, mlock must fail; the region
 * is still handed out, unlocked, with a warning. Runs in a child so the
 * dropped privilege does not leak into other tests. */
static int child_map_without_mlock(void)
{
    struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
    struct __user_cap_data_struct cap[2];
    if (syscall(SYS_capget, &hdr, cap) != 0) return 2;
    cap[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    if (syscall(SYS_capset, &hdr, cap) != 0) return 3;
    struct rlimit rl = { 0, 0 };
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 4;

    struct rci_mem_region m;
    char err[256];
    if (rci_mem_map(RCI_MEM_ANON, 1 << 20, NULL, true, true, &m, err, sizeof err) != 0) return 5;
    int rc = 0;
    if (MLOCK_IS_REAL && (m.locked || (m.lock_errno != EPERM && m.lock_errno != ENOMEM)))
        rc = 6;
    else if (MLOCK_IS_REAL && (!strstr(err, "mlock") || !strstr(err, "1048576")))
        rc = 7;
    m.addr[12345] = 1;                              /* still usable */
    rci_mem_unmap(&m);
    return rc;
}

static void test_mem_mlock_failure(void)
{
    pid_t pid = fork();
    if (pid == 0) _exit(child_map_without_mlock());
    CU_ASSERT_FATAL(pid > 0);
    int status = -1;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "mlock-failure child: check %d failed\n", WEXITSTATUS(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
}

static void test_mem_hugetlb(void)
{
    struct rci_mem_region m;
    char err[512];
    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_HUGETLB, 3 << 20, NULL, true, false, &m, err, sizeof err),
                    -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 MiB"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "3145728"));

    /* Machines differ: either huge pages are reserved and this works, or the
     * error says what was asked for and where to reserve pages. */
    int rc = rci_mem_map(RCI_MEM_HUGETLB, 2 << 20, NULL, true, false, &m, err, sizeof err);
    if (rc == 0) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(m.addr);
        m.addr[0] = 1;
        rci_mem_unmap(&m);
    } else {
        CU_ASSERT(rc < 0);
        CU_ASSERT_PTR_NULL(m.addr);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "hugetlb"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "2097152"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "/proc/sys/vm/nr_hugepages"));
    }
}

static void fill_pattern(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + seed);
}

static size_t pattern_errors(const uint8_t *p, size_t n, uint8_t seed)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += p[i] != (uint8_t)(i * 7 + seed);
    return bad;
}

/* Child: attach with a wrong size (must fail), then with the right one, write. */
static int child_attach_and_write(const char *name, size_t size)
{
    struct rci_mem_region m;
    char err[256];
    if (rci_mem_map(RCI_MEM_SHM, size * 2, name, false, false, &m, err, sizeof err) != -EINVAL)
        return 2;
    if (!strstr(err, "expected")) return 3;
    if (rci_mem_map(RCI_MEM_SHM, size, name, false, false, &m, err, sizeof err) != 0) return 4;
    if (m.owner) return 5;
    fill_pattern(m.addr, size, 3);
    rci_mem_unmap(&m);
    return 0;
}

static void test_mem_shm_create_attach(void)
{
    char name[64], err[256];
    const size_t size = 64 * 1024;
    unique_name(name, sizeof name, "mem");
    struct rci_mem_region m;
    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_SHM, size, name, true, false, &m, err, sizeof err), 0);
    CU_ASSERT(m.owner);
    CU_ASSERT(m.fd >= 0);
    CU_ASSERT(shm_exists(name));

    pid_t pid = fork();
    if (pid == 0) _exit(child_attach_and_write(name, size));
    CU_ASSERT_FATAL(pid > 0);
    int status = -1;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    CU_ASSERT_EQUAL(pattern_errors(m.addr, size, 3), 0);

    /* A second, non-owning mapping in this process sees the same bytes and
     * does not unlink on unmap. */
    struct rci_mem_region a;
    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_SHM, size, name, false, false, &a, err, sizeof err), 0);
    CU_ASSERT(a.addr != m.addr);
    CU_ASSERT_EQUAL(pattern_errors(a.addr, size, 3), 0);
    rci_mem_unmap(&a);
    CU_ASSERT(shm_exists(name));

    rci_mem_unmap(&m);
    CU_ASSERT(!shm_exists(name));
    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_SHM, size, name, false, false, &a, err, sizeof err),
                    -ENOENT);
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
}

static void test_mem_shm_names(void)
{
    const char *bad[] = { "", "a/b", "/lead", "..", ".hidden", "sp ace", "tab\t",
        "x234567890123456789012345678901234567890123456789012345678901234" /* 64 */ };
    struct rci_mem_region m;
    char err[256];
    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_SHM, 4096, NULL, true, false, &m, err, sizeof err), -EINVAL);
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_SHM, 4096, bad[i], true, false, &m, err, sizeof err),
                        -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "shm: "));
        CU_ASSERT_PTR_NULL(m.addr);
    }
    char longest[RCI_MEM_NAME_MAX + 1];
    int n = snprintf(longest, sizeof longest, "rc-test-long-%d-", (int)getpid());
    memset(longest + n, 'z', sizeof longest - 1 - (size_t)n);
    longest[RCI_MEM_NAME_MAX] = 0;
    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_SHM, 4096, longest, true, false, &m, err, sizeof err), 0);
    CU_ASSERT(shm_exists(longest));
    rci_mem_unmap(&m);
    CU_ASSERT(!shm_exists(longest));
}

/* A leftover object from a killed run is replaced; one in use is not. */
static void test_mem_shm_stale_and_in_use(void)
{
    char name[64], path[96], err[256];
    unique_name(name, sizeof name, "stale");
    snprintf(path, sizeof path, "/%s", name);
    int fd = shm_open(path, O_CREAT | O_EXCL | O_RDWR, 0600);   /* no liveness lock */
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, 12345), 0);
    close(fd);

    struct rci_mem_region m, m2;
    CU_ASSERT_EQUAL_FATAL(rci_mem_map(RCI_MEM_SHM, 8192, name, true, false, &m, err, sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "stale"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, name));
    CU_ASSERT_EQUAL(m.addr[8191], 0);                /* a fresh, zeroed object */

    CU_ASSERT_EQUAL(rci_mem_map(RCI_MEM_SHM, 8192, name, true, false, &m2, err, sizeof err),
                    -EEXIST);
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in use"));
    CU_ASSERT(shm_exists(name));                     /* the live one was left alone */
    m.addr[0] = 7;
    rci_mem_unmap(&m);
    CU_ASSERT(!shm_exists(name));
}

static void register_tests(void)
{
    RCI_SUITE("dma_ring",
             {"sequential take/release/advance", test_sequential},
             {"take limits and -EAGAIN", test_take_limits},
             {"out-of-order release advances over the prefix", test_out_of_order},
             {"wrap-around spans", test_wrap_spans},
             {"full ring, high water, full time", test_full_ring},
             {"note_written violations", test_note_written_violations},
             {"bad keys rejected and counted", test_bad_keys},
             {"concurrent duplicate release: one wins", test_concurrent_duplicate},
             {"4 threads release while the owner takes", test_multithread_release},
             {"create errors", test_ring_create_errors},
             {"shm-backed ring written by another process", test_ring_shm_backend});
    RCI_SUITE("dma_mem",
             {"backend names", test_mem_backend_names},
             {"anon", test_mem_anon},
             {"mlock failure is a warning", test_mem_mlock_failure},
             {"hugetlb", test_mem_hugetlb},
             {"shm create + attach from a child", test_mem_shm_create_attach},
             {"shm names", test_mem_shm_names},
             {"shm stale object replaced, live one kept", test_mem_shm_stale_and_in_use},
             {"ring bound to a NUMA node", test_ring_numa_bind});
}

RCI_CUNIT_MAIN(register_tests)
