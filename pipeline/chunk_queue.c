/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_queue.c — rte_ring of chunk-descriptor pointers with statistics.
 * See chunk_queue.h for the contract. */
#include "pipeline/chunk_queue.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_ring.h>

#include "common/cacheline.h"
#include "common/counter.h"
#include "common/errbuf.h"
#include "pipeline/dpdk_env.h"

_Static_assert(RCI_CHUNK_QUEUE_NAME_MAX + 1 <= RTE_RING_NAMESIZE, "queue names must fit rte_ring's");
_Static_assert(RCI_CHUNK_QUEUE_MAX_CAPACITY <= RTE_RING_SZ_MASK, "capacity must fit rte_ring's");


/* A side's counter: single-writer when that side has one thread, shared
 * (an atomic read-modify-write) when it has several; chosen at create, so
 * both views of the same word (common/counter.h). */
union side_counter {
    rci_counter one;
    rci_shared_counter many;
};

/* Producer and consumer counters on separate lines: each side writes only
 * its own, so they never bounce a line between the two threads. */
struct producer_stats {
    alignas(RCI_CACHE_LINE) union side_counter enqueued, full_events, refused;
    _Atomic uint64_t high_water;        /* a maximum: compare-and-swap */
};

struct consumer_stats {
    alignas(RCI_CACHE_LINE) union side_counter dequeued, empty_polls;
};

struct rci_chunk_queue {
    struct rte_ring *ring;
    uint32_t capacity, elem_size;
    bool multi_producer, multi_consumer;
    struct producer_stats prod;
    struct consumer_stats cons;
};

static void side_add(union side_counter *c, uint64_t n, bool shared)
{
    if (shared)
        rci_shared_counter_add(&c->many, n);
    else
        rci_counter_add(&c->one, n);
}

static uint64_t side_get(const union side_counter *c)
{
    return rci_counter_get(&c->one);
}

static void note_high_water(struct rci_chunk_queue *q, uint64_t count)
{
    uint64_t hw = atomic_load_explicit(&q->prod.high_water, memory_order_relaxed);
    while (count > hw && !atomic_compare_exchange_weak_explicit(&q->prod.high_water, &hw, count,
                                                                memory_order_relaxed, memory_order_relaxed))
        ;
}

static int check_params(const struct rci_chunk_queue_params *p, char *err, size_t errlen)
{
    size_t name_len = p->name ? strlen(p->name) : 0;
    if (name_len == 0 || name_len > RCI_CHUNK_QUEUE_NAME_MAX) {
        rci_set_err(err, errlen, "chunk queue: a name of 1..%u characters is needed (got %zu)",
                   RCI_CHUNK_QUEUE_NAME_MAX, name_len);
        return -EINVAL;
    }
    if (p->capacity == 0 || p->capacity > RCI_CHUNK_QUEUE_MAX_CAPACITY) {
        rci_set_err(err, errlen, "chunk queue %s: capacity %u must be 1..%u", p->name, p->capacity,
                   RCI_CHUNK_QUEUE_MAX_CAPACITY);
        return -EINVAL;
    }
    if (p->elem_size % 4 != 0 || p->elem_size > RCI_CHUNK_QUEUE_MAX_ELEM) {
        rci_set_err(err, errlen, "chunk queue %s: element size %u must be a multiple of 4 up to %u",
                   p->name, p->elem_size, RCI_CHUNK_QUEUE_MAX_ELEM);
        return -EINVAL;
    }
    if (!rci_dpdk_started()) {
        rci_set_err(err, errlen, "chunk queue %s: the DPDK EAL is not started (call rci_dpdk_init first)",
                   p->name);
        return -ENODEV;
    }
    return 0;
}

static unsigned ring_flags(const struct rci_chunk_queue_params *p)
{
    /* EXACT_SZ: the capacity asked for, not the next power of two minus one. */
    unsigned flags = RING_F_EXACT_SZ;
    if (!p->multi_producer)
        flags |= RING_F_SP_ENQ;
    if (!p->multi_consumer)
        flags |= RING_F_SC_DEQ;
    return flags;
}

int rci_chunk_queue_create(const struct rci_chunk_queue_params *p, struct rci_chunk_queue **out,
                          char *err, size_t errlen)
{
    *out = NULL;
    int rc = check_params(p, err, errlen);
    if (rc != 0)
        return rc;
    struct rci_chunk_queue *q = aligned_alloc(RCI_CACHE_LINE, sizeof *q);
    if (!q) {
        rci_set_err(err, errlen, "chunk queue %s: out of memory", p->name);
        return -ENOMEM;
    }
    memset(q, 0, sizeof *q);
    q->elem_size = p->elem_size ? p->elem_size : (uint32_t)sizeof(const struct rci_chunk *);
    q->ring = rte_ring_create_elem(p->name, q->elem_size, p->capacity, SOCKET_ID_ANY, ring_flags(p));
    if (!q->ring) {
        int e = rte_errno ? rte_errno : ENOMEM;
        rci_set_err(err, errlen, "chunk queue %s: rte_ring_create_elem(%u): %s", p->name, p->capacity,
                   rte_strerror(e));
        free(q);
        return -e;
    }
    q->capacity = p->capacity;
    q->multi_producer = p->multi_producer;
    q->multi_consumer = p->multi_consumer;
    *out = q;
    return 0;
}

void rci_chunk_queue_destroy(struct rci_chunk_queue *q)
{
    if (!q)
        return;
    rte_ring_free(q->ring);
    free(q);
}

unsigned rci_chunk_queue_enqueue(struct rci_chunk_queue *q, const void *elems, unsigned n)
{
    unsigned free_space = 0;
    unsigned done = rte_ring_enqueue_burst_elem(q->ring, elems, q->elem_size, n, &free_space);
    bool shared = q->multi_producer;
    if (done)
        side_add(&q->prod.enqueued, done, shared);
    if (done < n) {
        side_add(&q->prod.full_events, 1, shared);
        side_add(&q->prod.refused, n - done, shared);
    }
    note_high_water(q, q->capacity - free_space);
    return done;
}

unsigned rci_chunk_queue_dequeue(struct rci_chunk_queue *q, void *elems, unsigned max)
{
    unsigned done = rte_ring_dequeue_burst_elem(q->ring, elems, q->elem_size, max, NULL);
    if (done)
        side_add(&q->cons.dequeued, done, q->multi_consumer);
    else
        side_add(&q->cons.empty_polls, 1, q->multi_consumer);
    return done;
}

/* rte_ring_count() with atomic loads: DPDK's inline version reads both tails
 * with plain loads while the other side's thread stores them (a data race,
 * reported by ThreadSanitizer when one thread asks how full the queue is
 * while another dequeues). Relaxed is enough: the count is a snapshot. */
static unsigned ring_count(const struct rte_ring *r)
{
    /* Consumer first: a third thread (statistics) that read the producer's
     * tail first could see the consumer pass it and report a full queue. */
    uint32_t cons_tail = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
    uint32_t prod_tail = __atomic_load_n(&r->prod.tail, __ATOMIC_RELAXED);
    uint32_t count = (prod_tail - cons_tail) & r->mask;
    return count > r->capacity ? r->capacity : count;
}

unsigned rci_chunk_queue_count(const struct rci_chunk_queue *q)
{
    return ring_count(q->ring);
}

void rci_chunk_queue_get_stats(const struct rci_chunk_queue *q, struct rci_chunk_queue_stats *s)
{
    *s = (struct rci_chunk_queue_stats){
        .capacity = q->capacity,
        .count = ring_count(q->ring),
        .enqueued = side_get(&q->prod.enqueued),
        .dequeued = side_get(&q->cons.dequeued),
        .full_events = side_get(&q->prod.full_events),
        .refused = side_get(&q->prod.refused),
        .empty_polls = side_get(&q->cons.empty_polls),
        .high_water = atomic_load_explicit(&q->prod.high_water, memory_order_relaxed),
    };
}
