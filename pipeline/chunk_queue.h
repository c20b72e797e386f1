/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk_queue.h — a lock-free queue of chunk references: how a readout
 * thread hands chunks to publisher threads (DPDK rte_ring).
 *
 * An element is elem_size bytes that the queue copies in and out: by
 * default one descriptor pointer; the pipeline's lanes carry the pointer
 * with the key the consumer gives back and the chunk's subscribers
 * (pipeline/publish_internal.h). Never the payload: a descriptor
 * (readout/chunk.h) stays valid until its key is released, so the consumer
 * reads it in place and releases the key when it is done. rte_ring's enqueue
 * publishes with release ordering and dequeue reads with acquire ordering,
 * so everything the producer wrote into a descriptor before enqueueing it
 * is visible to the consumer.
 *
 * Producers and consumers: single (SP/SC: cheaper, one thread each side) or
 * multi (MP/MC: any number of threads), chosen at create. Bursts are
 * all-or-part: enqueue takes as many as fit, in order, and says how many;
 * the rest stay the caller's (backpressure: keep them, retry later).
 *
 * Needs the EAL: rci_dpdk_init() (pipeline/dpdk_env.h) first. Hot path: no
 * allocation, no lock, no syscall; statistics cost one relaxed atomic add per
 * burst and side (a plain add when that side has a single thread).
 */
#ifndef RCI_CHUNK_QUEUE_H
#define RCI_CHUNK_QUEUE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "readout/chunk.h"

/* rte_ring names: 29 bytes with the NUL ("RG_" + name fills a memzone name). */
#define RCI_CHUNK_QUEUE_NAME_MAX      28u
#define RCI_CHUNK_QUEUE_MAX_CAPACITY  (1u << 24)
#define RCI_CHUNK_QUEUE_MAX_ELEM      1024u

struct rci_chunk_queue_params {
    const char *name;          /* unique among the process's rings, 1..NAME_MAX chars */
    uint32_t capacity;         /* elements it holds: 1..RCI_CHUNK_QUEUE_MAX_CAPACITY */
    uint32_t elem_size;        /* bytes per element, a multiple of 4 up to
                                  RCI_CHUNK_QUEUE_MAX_ELEM; 0: one descriptor pointer */
    bool multi_producer;       /* false: exactly one thread enqueues */
    bool multi_consumer;       /* false: exactly one thread dequeues */
};

struct rci_chunk_queue_stats {
    uint64_t capacity, count;  /* count: in the queue now */
    uint64_t enqueued;         /* descriptors accepted */
    uint64_t dequeued;         /* descriptors taken out */
    uint64_t full_events;      /* enqueue bursts that did not fit entirely */
    uint64_t refused;          /* descriptors those bursts left with the caller */
    uint64_t empty_polls;      /* dequeue calls that found nothing */
    uint64_t high_water;       /* most descriptors in the queue after an enqueue */
};

struct rci_chunk_queue;

/* 0, or -EINVAL (parameters), -ENODEV (EAL not started), -EEXIST (name in
 * use), -ENOMEM, with the reason in err. */
int  rci_chunk_queue_create(const struct rci_chunk_queue_params *p, struct rci_chunk_queue **out,
                           char *err, size_t errlen);
/* Descriptors still queued are forgotten (their keys never released):
 * dequeue until empty first. */
void rci_chunk_queue_destroy(struct rci_chunk_queue *q);

/* Enqueue up to n elements (an array of n * elem_size bytes) in order;
 * returns how many were taken (the first ones). */
unsigned rci_chunk_queue_enqueue(struct rci_chunk_queue *q, const void *elems, unsigned n);
/* Dequeue up to max elements into elems, in queue order; returns how many. */
unsigned rci_chunk_queue_dequeue(struct rci_chunk_queue *q, void *elems, unsigned max);

/* Descriptors in the queue now (a snapshot: others may change it). */
unsigned rci_chunk_queue_count(const struct rci_chunk_queue *q);
/* Any thread; the figures are read one by one, not as one snapshot. */
void rci_chunk_queue_get_stats(const struct rci_chunk_queue *q, struct rci_chunk_queue_stats *s);

#endif
