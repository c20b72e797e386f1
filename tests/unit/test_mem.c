/* SPDX-License-Identifier: BSD-3-Clause */
/* test_mem.c — registered memory (issue 13): the size-class pool
 * (net/mem_pool.h) alone and under threads, the registration cache
 * (net/mr_cache.h) on a real libfabric domain (tcp), and the cache behind
 * the public publisher (rc_pub_send from memory the program never
 * registered, rc_mem_forget, memory freed and mapped again at the same
 * address). The fabric layer asks every provider for FI_MR_LOCAL; tcp does
 * not keep it, so the publisher tests check instead that every piece outside
 * rc_pub_register() went through the cache (hits + misses) and that without
 * the cache such a piece is refused (-EFAULT). */
#include "tests/unit/cunit_main.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "net/fabric.h"
#include "net/mem_pool.h"
#include "net/mr_cache.h"
#include "ringcast/ringcast.h"

/* ---- the pool alone ------------------------------------------------------- */

static struct rci_mem_pool *pool_with(uint32_t small, uint32_t medium, uint32_t large, uint32_t huge)
{
    struct rci_mem_pool_params p;
    rci_mem_pool_params_default(&p);
    p.count[RCI_MEM_SMALL] = small;
    p.count[RCI_MEM_MEDIUM] = medium;
    p.count[RCI_MEM_LARGE] = large;
    p.count[RCI_MEM_HUGE] = huge;
    struct rci_mem_pool *pool = NULL;
    char err[256] = "";
    if (rci_mem_pool_create(&p, &pool, err, sizeof err))
        fprintf(stderr, "pool: %s\n", err);
    return pool;
}

static void test_pool_refuses_bad_params(void)
{
    struct rci_mem_pool_params p;
    rci_mem_pool_params_default(&p);
    p.count[RCI_MEM_SMALL] = p.count[RCI_MEM_MEDIUM] = 1;
    struct rci_mem_pool *pool = (struct rci_mem_pool *)1;
    char err[256] = "";
    p.size[RCI_MEM_MEDIUM] = 1000;   /* not a multiple of 64 */
    CU_ASSERT_EQUAL(rci_mem_pool_create(&p, &pool, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(pool);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "class medium"));
    p.size[RCI_MEM_MEDIUM] = 4096;   /* not above small */
    CU_ASSERT_EQUAL(rci_mem_pool_create(&p, &pool, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger"));
}

/* A pool made for uses (the publisher's and the subscriber's): a class per
 * use with buffers, in the order of the sizes; equal sizes get 64 B more;
 * a use of count 0 gets none; each class says its use. */
static void test_pool_for_uses(void)
{
    const struct rci_mem_use uses[] = {
        { "control_send", 32, 24 }, { "control_receive", 16400, 20 }, { "pages", 8192, 16 },
        { "spare", 100, 0 },
    };
    int cls[4];
    struct rci_mem_pool *pool = NULL;
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_mem_pool_create_uses(uses, 4, &pool, cls, err, sizeof err), 0);
    CU_ASSERT_EQUAL(cls[0], RCI_MEM_SMALL);
    CU_ASSERT_EQUAL(cls[2], RCI_MEM_MEDIUM);
    CU_ASSERT_EQUAL(cls[1], RCI_MEM_LARGE);
    CU_ASSERT_EQUAL(cls[3], -1);
    struct rci_mem_class_stats st;
    rci_mem_pool_class_stats(pool, RCI_MEM_SMALL, &st);
    CU_ASSERT_STRING_EQUAL(st.use, "control_send");
    CU_ASSERT_EQUAL(st.size, 64);
    CU_ASSERT_EQUAL(st.count, 24);
    rci_mem_pool_class_stats(pool, RCI_MEM_LARGE, &st);
    CU_ASSERT_STRING_EQUAL(st.use, "control_receive");
    CU_ASSERT_EQUAL(st.size, 16448);
    rci_mem_pool_class_stats(pool, RCI_MEM_HUGE, &st);
    CU_ASSERT_STRING_EQUAL(st.use, "");
    CU_ASSERT_EQUAL(st.count, 0);
    struct rci_mem_buf *b = rci_mem_pool_get_class(pool, (enum rci_mem_class)cls[2]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(b->size, 8192);
    rci_mem_pool_put(pool, b);
    rci_mem_pool_destroy(pool);

    const struct rci_mem_use same[] = { { "receive", 16400, 4 }, { "control_send", 16400, 16 } };
    CU_ASSERT_EQUAL_FATAL(rci_mem_pool_create_uses(same, 2, &pool, cls, err, sizeof err), 0);
    CU_ASSERT_EQUAL(cls[0], RCI_MEM_SMALL);
    CU_ASSERT_EQUAL(cls[1], RCI_MEM_MEDIUM);
    rci_mem_pool_class_stats(pool, RCI_MEM_MEDIUM, &st);
    CU_ASSERT_EQUAL(st.size, 16448 + 64);   /* as large as the class below: 64 B more */
    rci_mem_pool_destroy(pool);

    const struct rci_mem_use zero[] = { { "empty", 0, 4 } };
    CU_ASSERT_EQUAL(rci_mem_pool_create_uses(zero, 1, &pool, cls, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(pool);
}

static void test_pool_classes_and_counters(void)
{
    struct rci_mem_pool *pool = pool_with(8, 4, 2, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, 1), RCI_MEM_SMALL);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, 4096), RCI_MEM_SMALL);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, 4097), RCI_MEM_MEDIUM);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, 65536), RCI_MEM_LARGE);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, 1u << 20), RCI_MEM_HUGE);
    CU_ASSERT_EQUAL(rci_mem_pool_class_for(pool, (1u << 20) + 1), -1);
    CU_ASSERT_PTR_NULL(rci_mem_pool_get(pool, (1u << 20) + 1));

    struct rci_mem_buf *m = rci_mem_pool_get(pool, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->cls, RCI_MEM_MEDIUM);
    CU_ASSERT_EQUAL(m->size, 16384);
    CU_ASSERT_EQUAL((uintptr_t)m->data % RCI_MEM_POOL_ALIGN, 0);
    memset(m->data, 0xab, m->size);   /* all of it is ours (ASan checks) */

    struct rci_mem_buf *small[9];
    for (unsigned i = 0; i < 8; i++) {
        small[i] = rci_mem_pool_get_class(pool, RCI_MEM_SMALL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(small[i]);
        for (unsigned j = 0; j < i; j++)
            CU_ASSERT_PTR_NOT_EQUAL(small[i]->data, small[j]->data);
    }
    small[8] = rci_mem_pool_get_class(pool, RCI_MEM_SMALL);
    CU_ASSERT_PTR_NULL(small[8]);   /* exhausted: no borrowing from medium */
    struct rci_mem_class_stats st;
    rci_mem_pool_class_stats(pool, RCI_MEM_SMALL, &st);
    CU_ASSERT_EQUAL(st.count, 8);
    CU_ASSERT_EQUAL(st.in_use, 8);
    CU_ASSERT_EQUAL(st.high_water, 8);
    CU_ASSERT_EQUAL(st.exhausted, 1);
    CU_ASSERT_EQUAL(st.gets, 8);
    for (unsigned i = 0; i < 8; i++)
        rci_mem_pool_put(pool, small[i]);
    rci_mem_pool_put(pool, small[3]);   /* a second put is refused */
    rci_mem_pool_class_stats(pool, RCI_MEM_SMALL, &st);
    CU_ASSERT_EQUAL(st.in_use, 0);
    CU_ASSERT_EQUAL(st.high_water, 8);
    CU_ASSERT_EQUAL(st.puts, 8);
    CU_ASSERT_EQUAL(st.bad_puts, 1);
    /* The refused put pushed nothing: exactly 8 come out again. */
    unsigned again = 0;
    while ((small[0] = rci_mem_pool_get_class(pool, RCI_MEM_SMALL)) != NULL)
        again++;
    CU_ASSERT_EQUAL(again, 8);
    rci_mem_pool_class_stats(pool, RCI_MEM_MEDIUM, &st);
    CU_ASSERT_EQUAL(st.in_use, 1);
    CU_ASSERT_EQUAL(st.exhausted, 0);
    rci_mem_pool_destroy(pool);
}

/* ---- a real domain (tcp; nothing listens: no connection is made) ------------ */

static int open_tcp(struct rci_fabric *f, char *err, size_t errlen)
{
    struct rci_fabric_params fp;
    memset(&fp, 0, sizeof fp);
    snprintf(fp.provider, sizeof fp.provider, "tcp");
    fp.endpoint = RCI_EP_MSG;
    snprintf(fp.address, sizeof fp.address, "127.0.0.1");
    fp.port = (uint16_t)(20000 + getpid() % 20000);
    fp.tx_queue = fp.rx_queue = fp.cq_size = 64;
    fp.peer_timeout_ns = 3000000000ull;
    fp.heartbeat_ns = 500000000ull;
    return rci_fabric_open(f, &fp, RCI_FABRIC_CONNECT, 64, err, errlen);
}

static void test_pool_registered_once_per_block(void)
{
    struct rci_fabric f;
    char err[256] = "";
    int rc = open_tcp(&f, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    struct rci_mem_pool *pool = pool_with(16, 0, 4, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    CU_ASSERT_EQUAL(rci_mem_pool_register(pool, &f, NULL, FI_SEND | FI_RECV, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_mem_pool_registrations(pool), 2);   /* two classes with buffers */
    CU_ASSERT_EQUAL(rci_mem_pool_register(pool, &f, NULL, FI_SEND, err, sizeof err), -EBUSY);
    struct rci_mem_buf *a = rci_mem_pool_get_class(pool, RCI_MEM_SMALL);
    struct rci_mem_buf *b = rci_mem_pool_get_class(pool, RCI_MEM_SMALL);
    struct rci_mem_buf *l = rci_mem_pool_get_class(pool, RCI_MEM_LARGE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a && b && l ? a : NULL);
    CU_ASSERT_PTR_NOT_NULL(rci_mem_pool_desc(pool, a));
    CU_ASSERT_PTR_EQUAL(rci_mem_pool_desc(pool, a), rci_mem_pool_desc(pool, b));   /* one MR */
    CU_ASSERT_PTR_NOT_EQUAL(rci_mem_pool_desc(pool, a), rci_mem_pool_desc(pool, l));
    CU_ASSERT_EQUAL(rci_mem_pool_key(pool, a), rci_mem_pool_key(pool, b));
    /* tcp does not keep FI_MR_VIRT_ADDR: buffers are named by their offset. */
    uint64_t ra = rci_mem_pool_remote_addr(pool, a), rb = rci_mem_pool_remote_addr(pool, b);
    if (f.mr_virt_addr) {
        CU_ASSERT_EQUAL(ra, (uint64_t)(uintptr_t)a->data);
    } else {
        CU_ASSERT_EQUAL(ra % 4096, 0);
        CU_ASSERT(ra < 16 * 4096);
    }
    CU_ASSERT_EQUAL(rb > ra ? rb - ra : ra - rb, 4096);
    rci_mem_pool_deregister(pool);
    CU_ASSERT_PTR_NULL(rci_mem_pool_desc(pool, a));
    CU_ASSERT_EQUAL(rci_mem_pool_register(pool, &f, NULL, FI_RECV, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_mem_pool_registrations(pool), 4);
    rci_mem_pool_put(pool, a);
    rci_mem_pool_put(pool, b);
    rci_mem_pool_put(pool, l);
    rci_mem_pool_deregister(pool);   /* before the domain closes */
    rci_fabric_close(&f);
    rci_mem_pool_destroy(pool);
}

/* ---- the pool under threads ------------------------------------------------ */

/* One getter thread per class, three putter threads, and a hand-off queue (a mutex: test code) from getters to
 * putters. Each buffer carries a marker word claimed with an atomic exchange
 * at get and cleared before put: a buffer handed out twice at once would
 * find it claimed. */
#define STORM_GETS 20000u
#define STORM_PUTTERS 3
#define HANDOFF 256u

struct storm {
    struct rci_mem_pool *pool;
    pthread_mutex_t lock;
    struct rci_mem_buf *q[HANDOFF];
    unsigned head, len;
    atomic_uint getters_done;
    atomic_uint empty_gets[RCI_MEM_CLASSES];
    atomic_uint in_use_seen[RCI_MEM_CLASSES], max_seen[RCI_MEM_CLASSES];
    atomic_uint double_handout, wrong_class, direct_puts;
};

struct getter { struct storm *s; enum rci_mem_class cls; };

static void note_in_use(struct storm *s, unsigned cls)
{
    unsigned now = atomic_fetch_add(&s->in_use_seen[cls], 1) + 1;
    unsigned m = atomic_load(&s->max_seen[cls]);
    while (now > m && !atomic_compare_exchange_weak(&s->max_seen[cls], &m, now))
        ;
}

static void storm_put(struct storm *s, struct rci_mem_buf *b)
{
    _Atomic uint64_t *mark = (_Atomic uint64_t *)(void *)b->data;
    if (atomic_exchange(mark, 0) == 0)
        atomic_fetch_add(&s->double_handout, 1);
    atomic_fetch_sub(&s->in_use_seen[b->cls], 1);
    rci_mem_pool_put(s->pool, b);
}

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    struct storm *s = g->s;
    for (unsigned got = 0; got < STORM_GETS;) {
        struct rci_mem_buf *b = rci_mem_pool_get_class(s->pool, g->cls);
        if (!b) {
            atomic_fetch_add(&s->empty_gets[g->cls], 1);
            sched_yield();
            continue;
        }
        got++;
        note_in_use(s, g->cls);
        _Atomic uint64_t *mark = (_Atomic uint64_t *)(void *)b->data;
        if (atomic_exchange(mark, 0x1000u + g->cls) != 0)
            atomic_fetch_add(&s->double_handout, 1);
        if (got % 5 == 0) {   /* some come back from the getter's own thread */
            atomic_fetch_add(&s->direct_puts, 1);
            storm_put(s, b);
            continue;
        }
        pthread_mutex_lock(&s->lock);
        s->q[(s->head + s->len++) % HANDOFF] = b;   /* never full: the pool holds < HANDOFF */
        pthread_mutex_unlock(&s->lock);
    }
    atomic_fetch_add(&s->getters_done, 1);
    return NULL;
}

static void *putter_main(void *arg)
{
    struct storm *s = arg;
    for (;;) {
        struct rci_mem_buf *b = NULL;
        pthread_mutex_lock(&s->lock);
        if (s->len) {
            b = s->q[s->head];
            s->head = (s->head + 1) % HANDOFF;
            s->len--;
        }
        bool done = !b && atomic_load(&s->getters_done) == RCI_MEM_CLASSES;
        pthread_mutex_unlock(&s->lock);
        if (done)
            return NULL;
        if (!b) {
            sched_yield();
            continue;
        }
        if (atomic_load((_Atomic uint64_t *)(void *)b->data) != 0x1000u + b->cls)
            atomic_fetch_add(&s->wrong_class, 1);
        storm_put(s, b);
    }
}

static void test_pool_get_put_storm(void)
{
    static struct storm s;
    memset(&s, 0, sizeof s);
    const uint32_t counts[RCI_MEM_CLASSES] = {64, 32, 16, 8};
    s.pool = pool_with(counts[0], counts[1], counts[2], counts[3]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s.pool);
    pthread_mutex_init(&s.lock, NULL);
    pthread_t gt[RCI_MEM_CLASSES], pt[STORM_PUTTERS];
    struct getter g[RCI_MEM_CLASSES];
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++) {
        g[c] = (struct getter){ .s = &s, .cls = (enum rci_mem_class)c };
        CU_ASSERT_EQUAL_FATAL(pthread_create(&gt[c], NULL, getter_main, &g[c]), 0);
    }
    for (unsigned i = 0; i < STORM_PUTTERS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&pt[i], NULL, putter_main, &s), 0);
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++)
        pthread_join(gt[c], NULL);
    for (unsigned i = 0; i < STORM_PUTTERS; i++)
        pthread_join(pt[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&s.double_handout), 0);
    CU_ASSERT_EQUAL(atomic_load(&s.wrong_class), 0);
    CU_ASSERT_EQUAL(atomic_load(&s.direct_puts), RCI_MEM_CLASSES * STORM_GETS / 5);
    uint64_t exhausted = 0;
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++) {
        struct rci_mem_class_stats st;
        rci_mem_pool_class_stats(s.pool, (enum rci_mem_class)c, &st);
        printf("\n  %-6s %2u buffers: %u gets, high-water %u (test saw %u), exhausted %llu",
               rci_mem_class_name((enum rci_mem_class)c), st.count, (unsigned)st.gets,
               st.high_water, atomic_load(&s.max_seen[c]), (unsigned long long)st.exhausted);
        CU_ASSERT_EQUAL(st.gets, STORM_GETS);
        CU_ASSERT_EQUAL(st.puts, STORM_GETS);
        CU_ASSERT_EQUAL(st.in_use, 0);
        CU_ASSERT_EQUAL(st.bad_puts, 0);
        CU_ASSERT_EQUAL(st.exhausted, atomic_load(&s.empty_gets[c]));
        CU_ASSERT(st.high_water <= counts[c]);
        /* The test counts a buffer after the pool did and stops counting it
         * before the pool does: it never sees more than the pool's mark. */
        CU_ASSERT(st.high_water >= atomic_load(&s.max_seen[c]));
        CU_ASSERT(st.high_water >= 1);
        exhausted += st.exhausted;
        /* Every buffer is back: exactly count of them come out again. */
        unsigned n = 0;
        struct rci_mem_buf *held[64];
        while (n < 64 && (held[n] = rci_mem_pool_get_class(s.pool, (enum rci_mem_class)c)) != NULL)
            n++;
        CU_ASSERT_EQUAL(n, counts[c]);
        rci_mem_pool_class_stats(s.pool, (enum rci_mem_class)c, &st);
        CU_ASSERT_EQUAL(st.high_water, counts[c]);
        for (unsigned i = 0; i < n; i++) {
            atomic_store((_Atomic uint64_t *)(void *)held[i]->data, 0);
            rci_mem_pool_put(s.pool, held[i]);
        }
    }
    printf("\n  exhausted gets in all: %llu\n", (unsigned long long)exhausted);
    pthread_mutex_destroy(&s.lock);
    rci_mem_pool_destroy(s.pool);
}

/* ---- the registration cache on a tcp domain --------------------------------- */

#define PAGE 4096u
#define CACHE_PAGES 16u

struct cache_fixture {
    struct rci_fabric f;
    struct rci_mr_cache *c;
    uint8_t *mem;   /* CACHE_PAGES pages, mmap'ed */
};

static bool cache_open(struct cache_fixture *x, uint64_t max_bytes, uint32_t max_regions)
{
    char err[256] = "";
    memset(x, 0, sizeof *x);
    if (sysconf(_SC_PAGESIZE) != PAGE) {
        fprintf(stderr, "page size is not 4096\n");
        return false;
    }
    if (open_tcp(&x->f, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return false;
    }
    struct rci_mr_cache_params p = { .max_bytes = max_bytes, .max_regions = max_regions,
                                     .access = FI_SEND };
    if (rci_mr_cache_create(&p, &x->f, NULL, &x->c, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return false;
    }
    x->mem = mmap(NULL, CACHE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return x->mem != MAP_FAILED;
}

static void cache_close(struct cache_fixture *x)
{
    rci_mr_cache_destroy(x->c);
    rci_fabric_close(&x->f);
    if (x->mem && x->mem != MAP_FAILED)
        munmap(x->mem, CACHE_PAGES * PAGE);
}

static struct rci_mr_cache_stats cstats(const struct cache_fixture *x)
{
    struct rci_mr_cache_stats st;
    rci_mr_cache_get_stats(x->c, &st);
    return st;
}

/* Acquire and release at once; returns the region's key (0 on failure). */
static uint64_t touch(struct cache_fixture *x, size_t off, size_t len)
{
    struct rci_mr_region *r;
    char err[256];
    if (rci_mr_cache_acquire(x->c, x->mem + off, len, &r, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 0;
    }
    uint64_t key = rci_mr_region_key(r);
    rci_mr_cache_release(x->c, r);
    return key;
}

static void test_cache_hits_misses_merge(void)
{
    struct cache_fixture x;
    CU_ASSERT_FATAL(cache_open(&x, 1u << 20, 64));
    struct rci_mr_region *r1, *r2, *r3;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem + 100, 200, &r1, err, sizeof err), 0);
    CU_ASSERT(rci_mr_region_contains(r1, x.mem + 100, 200));
    CU_ASSERT_PTR_EQUAL(rci_mr_region_addr(r1), x.mem);   /* rounded out to its page */
    CU_ASSERT_EQUAL(rci_mr_region_len(r1), PAGE);
    CU_ASSERT_PTR_NOT_NULL(rci_mr_region_desc(r1));
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem + 3000, 1000, &r2, err, sizeof err), 0);
    CU_ASSERT_PTR_EQUAL(r2, r1);   /* a hit: the same region, referenced twice */
    struct rci_mr_cache_stats st = cstats(&x);
    CU_ASSERT_EQUAL(st.misses, 1);
    CU_ASSERT_EQUAL(st.hits, 1);
    CU_ASSERT_EQUAL(st.regions, 1);
    CU_ASSERT_EQUAL(st.regions_in_use, 1);
    CU_ASSERT_EQUAL(st.registered_bytes, PAGE);
    /* Spanning pages 0-1: overlaps the cached page 0, so one region [0, 2
     * pages) replaces it; the old one, still referenced, stays registered
     * until its last release but is never found again. */
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem + 4000, 200, &r3, err, sizeof err), 0);
    CU_ASSERT_PTR_NOT_EQUAL(r3, r1);
    CU_ASSERT_EQUAL(rci_mr_region_len(r3), 2 * PAGE);
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.misses, 2);
    CU_ASSERT_EQUAL(st.merged, 1);
    CU_ASSERT_EQUAL(st.regions, 2);
    CU_ASSERT_EQUAL(st.registered_bytes, 3 * PAGE);
    rci_mr_cache_release(x.c, r1);
    rci_mr_cache_release(x.c, r2);   /* the last reference: the replaced region goes */
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.regions, 1);
    CU_ASSERT_EQUAL(st.registered_bytes, 2 * PAGE);
    CU_ASSERT_EQUAL(st.regions_in_use, 1);
    CU_ASSERT_EQUAL(touch(&x, 10, 10), rci_mr_region_key(r3));   /* page 0: now r3 */
    rci_mr_cache_release(x.c, r3);
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.hits, 2);
    CU_ASSERT_EQUAL(st.regions_in_use, 0);
    CU_ASSERT_EQUAL(st.regions, 1);   /* cached for the next send */
    CU_ASSERT_EQUAL(st.registrations, 2);
    CU_ASSERT_EQUAL(rci_mr_cache_acquire(x.c, NULL, 10, &r1, err, sizeof err), -EINVAL);
    CU_ASSERT_EQUAL(rci_mr_cache_acquire(x.c, x.mem, 0, &r1, err, sizeof err), -EINVAL);
    cache_close(&x);
}

/* Limit 3 pages; regions on pages 0, 2, 4, 6 (apart: no merging). */
static void test_cache_evicts_least_recently_used(void)
{
    struct cache_fixture x;
    CU_ASSERT_FATAL(cache_open(&x, 3 * PAGE, 64));
    uint64_t ka = touch(&x, 0 * PAGE, 8);
    uint64_t kb = touch(&x, 2 * PAGE, 8);
    uint64_t kc = touch(&x, 4 * PAGE, 8);
    CU_ASSERT(ka && kb && kc);
    CU_ASSERT_EQUAL(touch(&x, 0 * PAGE + 100, 8), ka);   /* A used again: order B, C, A */
    CU_ASSERT_EQUAL(cstats(&x).evictions, 0);
    touch(&x, 6 * PAGE, 8);                              /* D: 4 pages > 3: B goes */
    struct rci_mr_cache_stats st = cstats(&x);
    CU_ASSERT_EQUAL(st.evictions, 1);
    CU_ASSERT_EQUAL(st.registered_bytes, 3 * PAGE);
    CU_ASSERT_EQUAL(touch(&x, 4 * PAGE, 8), kc);         /* C still there (a hit): order A, D, C */
    CU_ASSERT_EQUAL(touch(&x, 0 * PAGE, 8), ka);         /* A too: order D, C, A */
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.hits, 3);
    CU_ASSERT_EQUAL(st.misses, 4);
    CU_ASSERT_NOT_EQUAL(touch(&x, 2 * PAGE, 8), kb);     /* B again: a miss, D goes */
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.misses, 5);
    CU_ASSERT_EQUAL(st.evictions, 2);
    touch(&x, 6 * PAGE, 8);                              /* D: a miss (evicted), C goes */
    CU_ASSERT_EQUAL(cstats(&x).misses, 6);
    CU_ASSERT_EQUAL(touch(&x, 0 * PAGE, 8), ka);         /* A survived: a hit */
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.hits, 4);
    CU_ASSERT_EQUAL(st.evictions, 3);
    /* Regions in use are never evicted: hold all three, add a fourth. */
    struct rci_mr_region *held[3];
    char err[256];
    const size_t pages[3] = {0, 2, 6};
    for (unsigned i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem + pages[i] * PAGE, 8, &held[i], err,
                                                  sizeof err), 0);
    touch(&x, 8 * PAGE, 8);   /* above the limit while acquired; released: evicted at once */
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.over_limit, 1);
    CU_ASSERT_EQUAL(st.evictions, 4);
    CU_ASSERT_EQUAL(st.registered_bytes, 3 * PAGE);
    for (unsigned i = 0; i < 3; i++)
        rci_mr_cache_release(x.c, held[i]);
    CU_ASSERT_EQUAL(cstats(&x).regions_in_use, 0);
    cache_close(&x);
}

/* Forget, unmap, map again at the same address: the new memory must get a
 * new registration (a miss with a new key), never the old one. */
static void test_cache_forget_and_reuse_same_address(void)
{
    struct cache_fixture x;
    CU_ASSERT_FATAL(cache_open(&x, 1u << 20, 64));
    uint64_t k1 = touch(&x, 0, 100);
    CU_ASSERT_EQUAL(touch(&x, 50, 100), k1);   /* a hit */
    rci_mr_cache_forget(x.c, x.mem, CACHE_PAGES * PAGE);
    struct rci_mr_cache_stats st = cstats(&x);
    CU_ASSERT_EQUAL(st.forgotten_regions, 1);
    CU_ASSERT_EQUAL(st.regions, 0);
    CU_ASSERT_EQUAL(st.registered_bytes, 0);
    uint8_t *old = x.mem;
    CU_ASSERT_EQUAL_FATAL(munmap(x.mem, CACHE_PAGES * PAGE), 0);
    x.mem = mmap(old, CACHE_PAGES * PAGE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CU_ASSERT_PTR_EQUAL_FATAL(x.mem, old);
    uint64_t k2 = touch(&x, 0, 100);
    CU_ASSERT(k2 != 0 && k2 != k1);
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.misses, 2);
    CU_ASSERT_EQUAL(st.hits, 1);

    /* From another thread's point of view: queued, applied before the next
     * acquire. A region in use is only detached (deregistered at release). */
    struct rci_mr_region *busy;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem, 100, &busy, err, sizeof err), 0);
    rci_mr_cache_forget_async(x.c, x.mem, 1);
    CU_ASSERT_EQUAL(cstats(&x).forgets, 1);   /* not applied yet */
    uint64_t k3 = touch(&x, 0, 100);          /* applies it: a miss, a new region */
    CU_ASSERT(k3 != 0 && k3 != k2);
    st = cstats(&x);
    CU_ASSERT_EQUAL(st.forgets, 2);
    CU_ASSERT_EQUAL(st.forgotten_in_use, 1);
    CU_ASSERT_EQUAL(st.regions, 2);           /* the detached one is still registered */
    rci_mr_cache_release(x.c, busy);
    CU_ASSERT_EQUAL(cstats(&x).regions, 1);
    CU_ASSERT_EQUAL(rci_mr_cache_apply_forgets(x.c), 0);
    cache_close(&x);
}

/* rci_mr_cache_forget_async from another thread while the owner acquires
 * and releases (under TSan: the queue's hand-over is what it checks). */
#define FORGETS 2000u

struct forgetter { struct rci_mr_cache *c; uint8_t *mem; atomic_bool done; };

static void *forgetter_main(void *arg)
{
    struct forgetter *f = arg;
    for (unsigned i = 0; i < FORGETS; i++)
        rci_mr_cache_forget_async(f->c, f->mem + (i % CACHE_PAGES) * PAGE, 1);
    atomic_store(&f->done, true);
    return NULL;
}

static void test_cache_forget_from_another_thread(void)
{
    struct cache_fixture x;
    CU_ASSERT_FATAL(cache_open(&x, 1u << 20, 64));
    static struct forgetter f;
    f.c = x.c;
    f.mem = x.mem;
    atomic_init(&f.done, false);
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, forgetter_main, &f), 0);
    unsigned touches = 0, failed = 0;
    while (!atomic_load(&f.done) || touches < 100) {
        failed += touch(&x, (touches % CACHE_PAGES) * PAGE + 8, 64) == 0;
        touches++;
    }
    pthread_join(t, NULL);
    rci_mr_cache_apply_forgets(x.c);
    struct rci_mr_cache_stats st = cstats(&x);
    CU_ASSERT_EQUAL(failed, 0);
    CU_ASSERT_EQUAL(st.forgets, FORGETS);
    CU_ASSERT_EQUAL(st.hits + st.misses, touches);
    CU_ASSERT_EQUAL(st.regions_in_use, 0);
    /* Every page was forgotten at least once after its last touch, or is
     * still cached: what is registered is what the cache says it holds. */
    CU_ASSERT_EQUAL(st.registered_bytes, st.regions * PAGE);
    cache_close(&x);
}

static void test_cache_region_limit(void)
{
    struct cache_fixture x;
    CU_ASSERT_FATAL(cache_open(&x, 1u << 20, 2));
    struct rci_mr_region *a, *b, *c;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem, 8, &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rci_mr_cache_acquire(x.c, x.mem + 2 * PAGE, 8, &b, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_mr_cache_acquire(x.c, x.mem + 4 * PAGE, 8, &c, err, sizeof err), -ENOSPC);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in use"));
    rci_mr_cache_release(x.c, a);   /* now evictable for a free entry */
    CU_ASSERT_EQUAL(rci_mr_cache_acquire(x.c, x.mem + 4 * PAGE, 8, &c, err, sizeof err), 0);
    struct rci_mr_cache_stats st = cstats(&x);
    CU_ASSERT_EQUAL(st.failures, 1);
    CU_ASSERT_EQUAL(st.evictions, 1);
    rci_mr_cache_release(x.c, b);
    rci_mr_cache_release(x.c, c);
    cache_close(&x);
}

/* ---- the cache behind rc_pub_send ------------------------------------------ */

#define PC_CHUNKS 48u
#define PC_SIZE 3000u

struct pubcache {
    struct rc_pub *pub;
    struct rc_sub *sub;
    rc_pub_peer peer;
    unsigned subscriptions, completed, completed_bad, bad_keys;
    unsigned received, received_bad;
    uint8_t seed;                 /* payload byte j of chunk i: seed + i * 13 + j */
    unsigned expect_len;
};

static void pc_complete(void *ctx, uint64_t key, int status)
{
    struct pubcache *pc = ctx;
    pc->completed++;
    pc->completed_bad += status != 0;
    pc->bad_keys += key >= 1000 + PC_CHUNKS || key < 1000;
}

static void pc_event(void *ctx, rc_pub_peer peer, enum rc_pub_event ev)
{
    struct pubcache *pc = ctx;
    if (ev == RC_PUB_EVENT_SUBSCRIPTIONS) {
        pc->subscriptions++;
        pc->peer = peer;
    }
}

static void pc_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    struct pubcache *pc = ctx;
    (void)flags;
    const uint8_t *b = data;
    bool ok = len == pc->expect_len && tag < PC_CHUNKS;
    for (size_t j = 0; ok && j < len; j++)
        ok = b[j] == (uint8_t)(pc->seed + tag * 13 + j);
    pc->received++;
    pc->received_bad += !ok;
}

static void pc_poll(struct pubcache *pc)
{
    rc_pub_progress(pc->pub);
    rc_sub_poll(pc->sub, 1000 * 1000);
}

static bool pc_start(struct pubcache *pc, uint64_t cache_bytes)
{
    static unsigned round;
    memset(pc, 0, sizeof *pc);
    struct rc_pub_params pp;
    rc_pub_params_default(&pp);
    pp.port = (uint16_t)(40000 + (getpid() % 2000) * 10 + round++ % 9);
    pp.mr_cache_bytes = cache_bytes;
    pp.cb = (struct rc_pub_callbacks){.ctx = pc, .on_send_complete = pc_complete, .on_peer_event = pc_event};
    char err[256] = "";
    if (rc_pub_create(&pp, &pc->pub, err, sizeof err)) {
        fprintf(stderr, "publisher: %s\n", err);
        return false;
    }
    struct rc_sub_params sp;
    rc_sub_params_default(&sp);
    sp.port = pp.port;
    sp.rx_buffer_size = 4096;   /* small chunks: the pool's small class */
    sp.cb.ctx = pc;
    sp.cb.on_data = pc_data;
    if (rc_sub_create(&sp, &pc->sub, err, sizeof err) || rc_sub_subscribe_all(pc->sub)) {
        fprintf(stderr, "subscriber: %s\n", err);
        return false;
    }
    for (int i = 0; i < 20000 && pc->subscriptions == 0; i++)   /* a hang guard */
        pc_poll(pc);
    return pc->subscriptions > 0;
}

/* Each chunk i in two pieces of `mem` (never registered by the program). */
static int pc_send_all(struct pubcache *pc, uint8_t *mem)
{
    pc->expect_len = PC_SIZE;
    for (unsigned i = 0; i < PC_CHUNKS; i++)
        for (unsigned j = 0; j < PC_SIZE; j++)
            mem[i * PC_SIZE + j] = (uint8_t)(pc->seed + i * 13 + j);
    for (unsigned i = 0; i < PC_CHUNKS; i++) {
        struct iovec iov[2] = {{.iov_base = mem + i * PC_SIZE, .iov_len = 1000},
                               {.iov_base = mem + i * PC_SIZE + 1000, .iov_len = PC_SIZE - 1000}};
        int rc;
        while ((rc = rc_pub_send(pc->pub, pc->peer, i, 0, iov, 2, 1000 + i)) == -EAGAIN)
            pc_poll(pc);
        if (rc)
            return rc;
    }
    return 0;
}

static void pc_wait(struct pubcache *pc, unsigned received, unsigned completed)
{
    for (int i = 0; i < 40000 && (pc->received < received || pc->completed < completed); i++)
        pc_poll(pc);
}

static struct rc_pub_stats pc_stats(const struct pubcache *pc)
{
    struct rc_pub_stats st;
    rc_pub_get_stats(pc->pub, &st);
    return st;
}

static void test_pub_sends_unregistered_memory_through_cache(void)
{
    static struct pubcache pc;
    CU_ASSERT_FATAL(pc_start(&pc, 64u << 20));
    size_t len = PC_CHUNKS * PC_SIZE;
    size_t maplen = (len + PAGE - 1) / PAGE * PAGE;
    uint8_t *mem = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(mem != MAP_FAILED);
    pc.seed = 1;
    CU_ASSERT_EQUAL(pc_send_all(&pc, mem), 0);
    pc_wait(&pc, PC_CHUNKS, PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.received, PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.received_bad, 0);
    CU_ASSERT_EQUAL(pc.completed, PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.completed_bad, 0);
    CU_ASSERT_EQUAL(pc.bad_keys, 0);
    struct rc_pub_stats st = pc_stats(&pc);
    /* Every piece outside rc_pub_register() regions went through the cache
     * (one acquire per region per send: a chunk whose pieces share a region
     * takes it once). */
    printf("\n  first run: %llu hits, %llu misses, %llu regions, %llu bytes registered\n",
           (unsigned long long)st.mr_cache_hits, (unsigned long long)st.mr_cache_misses,
           (unsigned long long)st.mr_cache_regions, (unsigned long long)st.mr_cache_registered_bytes);
    CU_ASSERT(st.mr_cache_misses >= 1);
    CU_ASSERT(st.mr_cache_hits + st.mr_cache_misses >= PC_CHUNKS);
    CU_ASSERT(st.mr_cache_hits + st.mr_cache_misses <= 2 * PC_CHUNKS);
    CU_ASSERT_EQUAL(st.mr_cache_regions_in_use, 0);   /* every key back: no reference left */
    CU_ASSERT(st.mr_cache_registered_bytes >= len);
    CU_ASSERT_EQUAL(st.mr_cache_failures, 0);
    uint64_t misses_before = st.mr_cache_misses, hits_before = st.mr_cache_hits;

    /* The same memory again: hits only. */
    pc.seed = 2;
    CU_ASSERT_EQUAL(pc_send_all(&pc, mem), 0);
    pc_wait(&pc, 2 * PC_CHUNKS, 2 * PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.received_bad, 0);
    st = pc_stats(&pc);
    CU_ASSERT_EQUAL(st.mr_cache_misses, misses_before);
    CU_ASSERT(st.mr_cache_hits >= hits_before + PC_CHUNKS);

    /* Forget, unmap, map again at the same address with other data: new
     * registrations (misses), none of the old ones handed out. */
    CU_ASSERT_EQUAL(rc_mem_forget(mem, maplen), 0);
    CU_ASSERT_EQUAL(rc_mem_forget(NULL, 10), -EINVAL);
    CU_ASSERT_EQUAL(munmap(mem, maplen), 0);
    uint8_t *again = mmap(mem, maplen, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CU_ASSERT_PTR_EQUAL_FATAL(again, mem);
    rc_pub_progress(pc.pub);   /* applies the forget */
    st = pc_stats(&pc);
    CU_ASSERT(st.mr_cache_forgotten >= 1);
    CU_ASSERT_EQUAL(st.mr_cache_regions, 0);
    CU_ASSERT_EQUAL(st.mr_cache_registered_bytes, 0);
    uint64_t hits = st.mr_cache_hits;
    pc.seed = 3;
    CU_ASSERT_EQUAL(pc_send_all(&pc, mem), 0);
    pc_wait(&pc, 3 * PC_CHUNKS, 3 * PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.received, 3 * PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.received_bad, 0);
    st = pc_stats(&pc);
    CU_ASSERT(st.mr_cache_misses > misses_before);
    /* The first piece after the forget cannot have been a hit. */
    CU_ASSERT(st.mr_cache_hits - hits < 2 * PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.completed, 3 * PC_CHUNKS);
    rc_sub_destroy(pc.sub);
    rc_pub_destroy(pc.pub);
    munmap(mem, maplen);
}

static void test_pub_without_cache_refuses_unregistered(void)
{
    static struct pubcache pc;
    CU_ASSERT_FATAL(pc_start(&pc, 0));
    static uint8_t mem[PC_CHUNKS * PC_SIZE];
    CU_ASSERT_EQUAL(pc_send_all(&pc, mem), -EFAULT);
    struct rc_pub_stats st = pc_stats(&pc);
    CU_ASSERT_EQUAL(st.unregistered_pieces, 1);
    CU_ASSERT_EQUAL(st.mr_cache_hits + st.mr_cache_misses, 0);
    rc_sub_destroy(pc.sub);
    rc_pub_destroy(pc.pub);
}

/* Destroy with sends through the cache outstanding: keys come back, the
 * cache's registrations close before the domain (ASan/valgrind would see a
 * use after free otherwise). */
static void test_pub_destroy_with_cached_sends_outstanding(void)
{
    static struct pubcache pc;
    CU_ASSERT_FATAL(pc_start(&pc, 64u << 20));
    static uint8_t mem[PC_CHUNKS * PC_SIZE];
    pc.seed = 9;
    CU_ASSERT_EQUAL(pc_send_all(&pc, mem), 0);
    rc_pub_destroy(pc.pub);
    CU_ASSERT_EQUAL(pc.completed, PC_CHUNKS);
    CU_ASSERT_EQUAL(pc.bad_keys, 0);
    rc_sub_destroy(pc.sub);
}

/* Two threads get from the same class of 4 buffers at once (any thread may
 * get: mem_pool.h) and hand every buffer to the other thread to put. Each
 * buffer's marker word is claimed with an atomic exchange at get and cleared
 * before put: one handed out twice at once would find it claimed. */
#define SAME_GETS 40000u
#define SAME_SLOTS 64u

struct same_class {
    struct rci_mem_pool *pool;
    /* to_put[i]: buffers thread i got for thread 1 - i to put (SPSC rings) */
    struct rci_mem_buf *ring[2][SAME_SLOTS];
    atomic_uint head[2], tail[2];
    atomic_uint double_handout, gets_done;
};

struct same_thread { struct same_class *sc; unsigned id; };

static void same_put_one(struct same_class *sc, unsigned from)
{
    unsigned t = atomic_load_explicit(&sc->tail[from], memory_order_relaxed);
    if (t == atomic_load_explicit(&sc->head[from], memory_order_acquire))
        return;
    struct rci_mem_buf *b = sc->ring[from][t % SAME_SLOTS];
    _Atomic uint64_t *mark = (_Atomic uint64_t *)(void *)b->data;
    if (atomic_exchange(mark, 0) != 0x2000u + from)
        atomic_fetch_add(&sc->double_handout, 1);
    rci_mem_pool_put(sc->pool, b);
    atomic_store_explicit(&sc->tail[from], t + 1, memory_order_release);
}

static void *same_main(void *arg)
{
    struct same_thread *st = arg;
    struct same_class *sc = st->sc;
    unsigned me = st->id, other = 1 - me;
    for (unsigned got = 0; got < SAME_GETS;) {
        same_put_one(sc, other);   /* the other thread's buffers come back through us */
        unsigned h = atomic_load_explicit(&sc->head[me], memory_order_relaxed);
        if (h - atomic_load_explicit(&sc->tail[me], memory_order_acquire) == SAME_SLOTS) {
            sched_yield();
            continue;
        }
        struct rci_mem_buf *b = rci_mem_pool_get_class(sc->pool, RCI_MEM_SMALL);
        if (!b) {
            sched_yield();
            continue;
        }
        _Atomic uint64_t *mark = (_Atomic uint64_t *)(void *)b->data;
        if (atomic_exchange(mark, 0x2000u + me) != 0)
            atomic_fetch_add(&sc->double_handout, 1);
        sc->ring[me][h % SAME_SLOTS] = b;
        atomic_store_explicit(&sc->head[me], h + 1, memory_order_release);
        got++;
    }
    atomic_fetch_add(&sc->gets_done, 1);
    /* Put what the other thread still gets, until it is done too. */
    while (atomic_load(&sc->gets_done) < 2 ||
           atomic_load(&sc->tail[other]) != atomic_load(&sc->head[other]))
        same_put_one(sc, other);
    return NULL;
}

static void test_pool_two_getters_one_class(void)
{
    struct rci_mem_pool_params p;
    rci_mem_pool_params_default(&p);
    p.count[RCI_MEM_SMALL] = 4;   /* few buffers: the getters fight over each one */
    static struct same_class sc;
    memset(&sc, 0, sizeof sc);
    char err[200];
    CU_ASSERT_EQUAL_FATAL(rci_mem_pool_create(&p, &sc.pool, err, sizeof err), 0);
    struct same_thread th[2] = { { &sc, 0 }, { &sc, 1 } };
    pthread_t t[2];
    for (unsigned i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, same_main, &th[i]), 0);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    struct rci_mem_class_stats st;
    rci_mem_pool_class_stats(sc.pool, RCI_MEM_SMALL, &st);
    CU_ASSERT_EQUAL(sc.double_handout, 0);
    CU_ASSERT_EQUAL(st.gets, 2ull * SAME_GETS);
    CU_ASSERT_EQUAL(st.puts, 2ull * SAME_GETS);
    CU_ASSERT_EQUAL(st.in_use, 0);
    CU_ASSERT_EQUAL(st.bad_puts, 0);
    CU_ASSERT(st.high_water <= 4);
    /* Every buffer is on the stack again, exactly once. */
    struct rci_mem_buf *all[5];
    for (unsigned i = 0; i < 5; i++)
        all[i] = rci_mem_pool_get_class(sc.pool, RCI_MEM_SMALL);
    CU_ASSERT_PTR_NULL(all[4]);
    for (unsigned i = 0; i < 4; i++) {
        CU_ASSERT_PTR_NOT_NULL(all[i]);
        for (unsigned j = 0; j < i; j++)
            CU_ASSERT_PTR_NOT_EQUAL(all[i], all[j]);
    }
    for (unsigned i = 0; i < 4; i++)
        rci_mem_pool_put(sc.pool, all[i]);
    rci_mem_pool_destroy(sc.pool);
}

static void register_tests(void)
{
    RCI_SUITE("mem_pool", {"refuses bad params", test_pool_refuses_bad_params},
              {"classes and counters", test_pool_classes_and_counters},
              {"a class per use", test_pool_for_uses},
              {"registered once per block (tcp)", test_pool_registered_once_per_block},
              {"get/put storm under threads", test_pool_get_put_storm},
              {"two getters of one class", test_pool_two_getters_one_class});
    RCI_SUITE("mr_cache", {"hits, misses, merge", test_cache_hits_misses_merge},
              {"evicts least recently used", test_cache_evicts_least_recently_used},
              {"forget, same address reused", test_cache_forget_and_reuse_same_address},
              {"forget from another thread", test_cache_forget_from_another_thread},
              {"region limit", test_cache_region_limit});
    RCI_SUITE("rc_pub cache", {"unregistered memory sent", test_pub_sends_unregistered_memory_through_cache},
              {"no cache: -EFAULT", test_pub_without_cache_refuses_unregistered},
              {"destroy with cached sends", test_pub_destroy_with_cached_sends_outstanding});
}

RCI_CUNIT_MAIN(register_tests)
