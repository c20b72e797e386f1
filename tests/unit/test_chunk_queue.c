/* SPDX-License-Identifier: BSD-3-Clause */
/* test_chunk_queue.c — the EAL wrapper and the chunk-descriptor queue:
 * EAL arguments and start without hugepages, a failed start reported with
 * its arguments (in a child process: the EAL starts once per process),
 * queue parameters, full/empty behaviour and burst sizes, and 10^6
 * descriptors through SPSC and MPMC queues across threads.
 * The tests run in order: the first ones need the EAL not yet started. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pipeline/chunk_queue.h"
#include "pipeline/dpdk_env.h"
#include "tests/unit/cunit_main.h"

static struct rci_chunk_queue *make_queue(const char *name, uint32_t capacity, bool mp, bool mc)
{
    struct rci_chunk_queue_params p = {
        .name = name, .capacity = capacity, .multi_producer = mp, .multi_consumer = mc};
    struct rci_chunk_queue *q = NULL;
    char err[256] = "";
    int rc = rci_chunk_queue_create(&p, &q, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return q;
}

static void test_queue_needs_eal(void)
{
    CU_ASSERT_FALSE(rci_dpdk_started());
    struct rci_chunk_queue_params p = {.name = "early", .capacity = 8};
    struct rci_chunk_queue *q = (struct rci_chunk_queue *)1;
    char err[256] = "";
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -ENODEV);
    CU_ASSERT_PTR_NULL(q);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "rci_dpdk_init"));
}

static void test_eal_arguments(void)
{
    char args[2048];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "--file-prefix=ringcast-%ld ", (long)getpid());
    CU_ASSERT_EQUAL_FATAL(rci_dpdk_eal_args(RCI_DPDK_NO_HUGE, args, sizeof args), 0);
    const char *want_no_huge[] = {prefix, "--lcores=0@(", "--no-pci", "--no-telemetry",
                                  "--log-level=lib.eal:error", "--no-huge", "--no-shconf", "-m 256"};
    for (size_t i = 0; i < sizeof want_no_huge / sizeof want_no_huge[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(args, want_no_huge[i]));
    CU_ASSERT_PTR_NULL(strstr(args, "--in-memory"));

    CU_ASSERT_EQUAL_FATAL(rci_dpdk_eal_args(RCI_DPDK_HUGE, args, sizeof args), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(args, "--in-memory"));
    CU_ASSERT_PTR_NULL(strstr(args, "--no-huge"));
    CU_ASSERT_PTR_NOT_NULL(strstr(args, "--no-pci"));
    CU_ASSERT_EQUAL(rci_dpdk_eal_args(RCI_DPDK_NO_HUGE, args, 16), -ENOSPC);
}

/* Asking for hugepages where none are free fails before the EAL is touched,
 * so the EAL can still start afterwards (next test). */
static void test_hugepages_required_but_missing(void)
{
    if (rci_dpdk_free_hugepages() > 0 && rci_dpdk_hugetlbfs_mounted()) {
        fprintf(stderr, "(this machine has free hugepages: refusal not testable here) ");
        return;
    }
    char err[256] = "";
    CU_ASSERT_EQUAL(rci_dpdk_init_mode(RCI_DPDK_HUGE, err, sizeof err), -ENOMEM);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "hugepages"));
    CU_ASSERT_FALSE(rci_dpdk_started());
}

/* Child: start the EAL under an address-space limit too small for its
 * memory reservation, then ask again; report both results on the pipe. */
static void failing_start_child(int fd)
{
    struct rlimit lim = {.rlim_cur = 96ull << 20, .rlim_max = 96ull << 20};
    char err1[1400] = "", err2[1400] = "";
    int rc1 = -1, rc2 = -1;
    if (setrlimit(RLIMIT_AS, &lim) == 0) {
        rc1 = rci_dpdk_init_mode(RCI_DPDK_NO_HUGE, err1, sizeof err1);
        rc2 = rci_dpdk_init(err2, sizeof err2);
    }
    char msg[3000];
    int n = snprintf(msg, sizeof msg, "%d\n%d\n%d\n%s\n%s\n", rc1, rc2, rci_dpdk_started(), err1, err2);
    if (write(fd, msg, (size_t)n) != n)
        _exit(3);
    _exit(0);
}

/* gcc says __SANITIZE_ADDRESS__; clang before 17 only answers __has_feature. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RCI_TEST_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RCI_TEST_UNDER_SANITIZER 1
#endif

static void test_eal_failure_reported_with_arguments(void)
{
#ifdef RCI_TEST_UNDER_SANITIZER
    fprintf(stderr, "(sanitizer shadow memory defeats the address-space limit: not run) ");
    return;
#endif
    int fds[2];
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        failing_start_child(fds[1]);
    }
    close(fds[1]);
    char buf[3000] = "";
    ssize_t got, used = 0;
    while ((got = read(fds[0], buf + used, sizeof buf - 1 - (size_t)used)) > 0)
        used += got;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int rc1 = 0, rc2 = 0, started = 1;
    CU_ASSERT_EQUAL_FATAL(sscanf(buf, "%d\n%d\n%d\n", &rc1, &rc2, &started), 3);
    CU_ASSERT(rc1 < 0);
    CU_ASSERT_EQUAL(rc2, rc1);          /* the failure is final and repeated */
    CU_ASSERT_EQUAL(started, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "DPDK EAL failed to start"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "--no-huge"));
    /* Both messages name the arguments (the second one repeats the first). */
    char *second = strstr(buf, "DPDK EAL failed to start");
    CU_ASSERT(second && strstr(second + 1, "DPDK EAL failed to start") != NULL);
}

static void test_eal_starts_without_hugepages(void)
{
    cpu_set_t before, after;
    CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof before, &before), 0);
    char err[1400] = "";
    int rc = rci_dpdk_init_mode(RCI_DPDK_NO_HUGE, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_TRUE(rci_dpdk_started());
    CU_ASSERT_EQUAL(rci_dpdk_init(err, sizeof err), 0);    /* once per process: later calls succeed */
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_dpdk_describe(), "--no-huge"));
    /* The EAL must not have pinned this thread to one CPU. */
    CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof after, &after), 0);
    CU_ASSERT(CPU_EQUAL(&before, &after));
}

static void test_queue_parameters_checked(void)
{
    struct rci_chunk_queue *q = NULL;
    char err[256] = "";
    struct rci_chunk_queue_params p = {.name = "params", .capacity = 0};
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "capacity 0"));
    p.capacity = RCI_CHUNK_QUEUE_MAX_CAPACITY + 1;
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    p = (struct rci_chunk_queue_params){.name = NULL, .capacity = 8};
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    p.name = "a-name-that-is-longer-than-28-chars";
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    p = (struct rci_chunk_queue_params){.name = "elem", .capacity = 8, .elem_size = 6};
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "element size 6"));
    p.elem_size = RCI_CHUNK_QUEUE_MAX_ELEM + 4;
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EINVAL);
    p.elem_size = 0;
    struct rci_chunk_queue *first = make_queue("twice", 8, false, false);
    p.name = "twice";
    CU_ASSERT_EQUAL(rci_chunk_queue_create(&p, &q, err, sizeof err), -EEXIST);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "twice"));
    rci_chunk_queue_destroy(first);
    /* The name is free again once the queue is gone. */
    first = make_queue("twice", 8, false, false);
    rci_chunk_queue_destroy(first);
}

/* Elements larger than a pointer (the pipeline's: a chunk with its key)
 * are copied whole, in order. */
struct entry {
    const struct rci_chunk *chunk;
    uint64_t key;
    uint32_t extra[3];
};

static void test_wide_elements(void)
{
    struct rci_chunk items[5];
    struct entry in[5], out[8];
    for (unsigned i = 0; i < 5; i++) {
        items[i] = (struct rci_chunk){.key = i};
        in[i] = (struct entry){.chunk = &items[i], .key = 100 + i, .extra = {i, 2 * i, 3 * i}};
    }
    struct rci_chunk_queue_params p = {.name = "wide", .capacity = 4, .elem_size = sizeof(struct entry)};
    struct rci_chunk_queue *q = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(rci_chunk_queue_create(&p, &q, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in, 5), 4);
    CU_ASSERT_EQUAL(rci_chunk_queue_dequeue(q, out, 8), 4);
    for (unsigned i = 0; i < 4; i++) {
        CU_ASSERT_PTR_EQUAL(out[i].chunk, &items[i]);
        CU_ASSERT_EQUAL(out[i].key, 100 + i);
        CU_ASSERT_EQUAL(out[i].extra[2], 3 * i);
    }
    rci_chunk_queue_destroy(q);
}

static void test_full_and_empty(void)
{
    struct rci_chunk queue_items[12];
    const struct rci_chunk *in[12], *out[16];
    for (unsigned i = 0; i < 12; i++) {
        queue_items[i] = (struct rci_chunk){.key = i};
        in[i] = &queue_items[i];
    }
    struct rci_chunk_queue *q = make_queue("full-empty", 8, false, false);
    CU_ASSERT_EQUAL(rci_chunk_queue_dequeue(q, out, 16), 0);          /* empty */
    CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in, 3), 3);
    CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in + 3, 9), 5);        /* 8 fit: the first 5 of 9 */
    CU_ASSERT_EQUAL(rci_chunk_queue_count(q), 8);
    CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in + 8, 1), 0);        /* full */
    CU_ASSERT_EQUAL(rci_chunk_queue_dequeue(q, out, 1), 1);
    CU_ASSERT_PTR_EQUAL(out[0], in[0]);
    CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in + 8, 4), 1);        /* one slot was freed */
    CU_ASSERT_EQUAL(rci_chunk_queue_dequeue(q, out, 16), 8);
    for (unsigned i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(out[i]->key, i + 1);                         /* order kept */
    CU_ASSERT_EQUAL(rci_chunk_queue_dequeue(q, out, 16), 0);
    struct rci_chunk_queue_stats s;
    rci_chunk_queue_get_stats(q, &s);
    CU_ASSERT_EQUAL(s.capacity, 8);
    CU_ASSERT_EQUAL(s.count, 0);
    CU_ASSERT_EQUAL(s.enqueued, 9);
    CU_ASSERT_EQUAL(s.dequeued, 9);
    CU_ASSERT_EQUAL(s.full_events, 3);
    CU_ASSERT_EQUAL(s.refused, 4 + 1 + 3);
    CU_ASSERT_EQUAL(s.empty_polls, 2);
    CU_ASSERT_EQUAL(s.high_water, 8);
    rci_chunk_queue_destroy(q);
}

static void test_burst_sizes(void)
{
    enum { N = 1000 };
    static struct rci_chunk items[N];
    static const struct rci_chunk *in[N], *out[N];
    for (unsigned i = 0; i < N; i++) {
        items[i] = (struct rci_chunk){.key = i};
        in[i] = &items[i];
    }
    struct rci_chunk_queue *q = make_queue("bursts", 100, true, true);  /* not a power of two */
    const unsigned sizes[] = {1, 3, 32, 64, 99, 100, 101, 1000};
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
        unsigned n = sizes[b], want = n < 100 ? n : 100;
        CU_ASSERT_EQUAL(rci_chunk_queue_enqueue(q, in, n), want);
        CU_ASSERT_EQUAL(rci_chunk_queue_count(q), want);
        unsigned got = 0;
        while (got < want) {
            unsigned d = rci_chunk_queue_dequeue(q, out + got, 7);     /* drain in bursts of 7 */
            CU_ASSERT_FATAL(d > 0);
            got += d;
        }
        for (unsigned i = 0; i < want; i++)
            CU_ASSERT_EQUAL(out[i]->key, i);
    }
    struct rci_chunk_queue_stats s;
    rci_chunk_queue_get_stats(q, &s);
    CU_ASSERT_EQUAL(s.high_water, 100);
    CU_ASSERT_EQUAL(s.full_events, 2);          /* 101 and 1000 */
    rci_chunk_queue_destroy(q);
}

/* ---- across threads --------------------------------------------------- */

#define TOTAL_ITEMS  1000000u
#define MAX_BURST    64u

struct producer_arg {
    struct rci_chunk_queue *q;
    struct rci_chunk *items;          /* this producer's descriptors */
    uint32_t id, count;
    unsigned seed;
    uint64_t count_over_capacity;    /* rci_chunk_queue_count() beyond the 1024 slots */
};

/* Fill each descriptor just before it is enqueued: the consumer must see
 * what was written (the ring publishes with release ordering). */
static void *produce(void *p)
{
    struct producer_arg *a = p;
    const struct rci_chunk *burst[MAX_BURST];
    uint32_t next = 0;
    while (next < a->count) {
        unsigned n = 1 + (unsigned)rand_r(&a->seed) % MAX_BURST;
        if (n > a->count - next)
            n = a->count - next;
        for (unsigned i = 0; i < n; i++) {
            struct rci_chunk *c = &a->items[next + i];
            *c = (struct rci_chunk){.tag = a->id, .key = next + i, .length = (uint32_t)(next + i) ^ 0x5a5a};
            burst[i] = c;
        }
        unsigned sent = 0;
        while (sent < n) {
            unsigned d = rci_chunk_queue_enqueue(a->q, burst + sent, n - sent);
            if (d == 0)
                sched_yield();
            sent += d;
        }
        /* The daemon's readout thread asks how full the queue is while the
         * publisher dequeues (ThreadSanitizer checks this in make test-tsan). */
        a->count_over_capacity += rci_chunk_queue_count(a->q) > 1024;
        next += n;
    }
    return NULL;
}

struct consumer_arg {
    struct rci_chunk_queue *q;
    _Atomic uint8_t *seen;           /* per item (producer * per_producer + key) */
    uint32_t producers, per_producer;
    _Atomic uint32_t *taken;         /* shared count of items dequeued */
    unsigned seed;
    uint64_t bad_content, out_of_order, foreign;
};

static void check_item(struct consumer_arg *a, const struct rci_chunk *c, uint64_t *last_key)
{
    if (c->tag >= a->producers || c->key >= a->per_producer) {
        a->foreign++;
        return;
    }
    if (c->length != ((uint32_t)c->key ^ 0x5a5a))
        a->bad_content++;
    /* Each consumer sees a producer's items in the producer's order. */
    if (last_key[c->tag] != UINT64_MAX && c->key <= last_key[c->tag])
        a->out_of_order++;
    last_key[c->tag] = c->key;
    atomic_fetch_add_explicit(&a->seen[c->tag * a->per_producer + c->key], 1, memory_order_relaxed);
}

static void *consume(void *p)
{
    struct consumer_arg *a = p;
    const struct rci_chunk *burst[MAX_BURST];
    uint64_t last_key[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    uint32_t total = a->producers * a->per_producer;
    while (atomic_load_explicit(a->taken, memory_order_relaxed) < total) {
        unsigned max = 1 + (unsigned)rand_r(&a->seed) % MAX_BURST;
        unsigned n = rci_chunk_queue_dequeue(a->q, burst, max);
        if (n == 0) {
            sched_yield();
            continue;
        }
        for (unsigned i = 0; i < n; i++)
            check_item(a, burst[i], last_key);
        atomic_fetch_add_explicit(a->taken, n, memory_order_relaxed);
    }
    return NULL;
}

static void run_threads(const char *name, unsigned producers, unsigned consumers)
{
    uint32_t per_producer = TOTAL_ITEMS / producers;
    struct rci_chunk *items = calloc(TOTAL_ITEMS, sizeof *items);
    _Atomic uint8_t *seen = calloc(TOTAL_ITEMS, sizeof *seen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(items);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    struct rci_chunk_queue *q = make_queue(name, 1024, producers > 1, consumers > 1);
    _Atomic uint32_t taken = 0;
    struct producer_arg pa[2];
    struct consumer_arg ca[2];
    pthread_t pt[2], ct[2];
    for (unsigned i = 0; i < consumers; i++) {
        ca[i] = (struct consumer_arg){.q = q, .seen = seen, .producers = producers,
                                      .per_producer = per_producer, .taken = &taken, .seed = 7 + i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&ct[i], NULL, consume, &ca[i]), 0);
    }
    for (unsigned i = 0; i < producers; i++) {
        pa[i] = (struct producer_arg){.q = q, .items = items + (size_t)i * per_producer, .id = i,
                                      .count = per_producer, .seed = 100 + i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&pt[i], NULL, produce, &pa[i]), 0);
    }
    for (unsigned i = 0; i < producers; i++) {
        pthread_join(pt[i], NULL);
        CU_ASSERT_EQUAL(pa[i].count_over_capacity, 0);
    }
    for (unsigned i = 0; i < consumers; i++) {
        pthread_join(ct[i], NULL);
        CU_ASSERT_EQUAL(ca[i].foreign, 0);
        CU_ASSERT_EQUAL(ca[i].bad_content, 0);
        CU_ASSERT_EQUAL(ca[i].out_of_order, 0);
    }
    uint32_t not_once = 0;
    for (uint32_t i = 0; i < producers * per_producer; i++)
        not_once += atomic_load(&seen[i]) != 1;
    CU_ASSERT_EQUAL(not_once, 0);
    struct rci_chunk_queue_stats s;
    rci_chunk_queue_get_stats(q, &s);
    CU_ASSERT_EQUAL(s.enqueued, producers * per_producer);
    CU_ASSERT_EQUAL(s.dequeued, producers * per_producer);
    CU_ASSERT_EQUAL(s.count, 0);
    CU_ASSERT(s.high_water <= 1024);
    rci_chunk_queue_destroy(q);
    free(items);
    free((void *)seen);
}

static void test_spsc_threads(void)
{
    run_threads("spsc", 1, 1);
}

static void test_mpmc_threads(void)
{
    run_threads("mpmc", 2, 2);
}

/* Last: the EAL cannot start again afterwards. */
static void test_cleanup_removes_runtime_dir(void)
{
    char dir[512];
    const char *desc = rci_dpdk_describe();
    CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(desc, "--file-prefix=ringcast-"));
    /* root: /var/run/dpdk/<prefix>; others: $XDG_RUNTIME_DIR/dpdk/<prefix> or /tmp/dpdk/<prefix>. */
    const char *base = getuid() == 0 ? "/var/run" : (getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "/tmp");
    snprintf(dir, sizeof dir, "%s/dpdk/ringcast-%ld", base, (long)getpid());
    struct stat st;
    CU_ASSERT_EQUAL(stat(dir, &st), 0);
    rci_dpdk_cleanup();
    CU_ASSERT_NOT_EQUAL(stat(dir, &st), 0);
    CU_ASSERT_FALSE(rci_dpdk_started());
    char err[256] = "";
    CU_ASSERT_EQUAL(rci_dpdk_init(err, sizeof err), -EALREADY);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cleaned up"));
}

static void register_tests(void)
{
    RCI_SUITE("dpdk_env + chunk_queue",
             {"queue needs the EAL", test_queue_needs_eal},
             {"EAL arguments", test_eal_arguments},
             {"hugepages required but missing", test_hugepages_required_but_missing},
             {"EAL failure reported with its arguments", test_eal_failure_reported_with_arguments},
             {"EAL starts without hugepages", test_eal_starts_without_hugepages},
             {"queue parameters checked", test_queue_parameters_checked},
             {"full and empty", test_full_and_empty},
             {"wide elements", test_wide_elements},
             {"burst sizes", test_burst_sizes},
             {"SPSC, 10^6 descriptors across threads", test_spsc_threads},
             {"MPMC 2x2, 10^6 descriptors across threads", test_mpmc_threads},
             {"cleanup removes the runtime directory", test_cleanup_removes_runtime_dir});
}

RCI_CUNIT_MAIN(register_tests)
