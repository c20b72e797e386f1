/* SPDX-License-Identifier: BSD-3-Clause */
/* fanout.c — fan-out records: a pending-send bit mask and a generation in one
 * atomic word per record, and a lock-free free list (Treiber stack with an
 * ABA tag). See fanout.h for the contract. */
#include "pipeline/fanout.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cacheline.h"
#include "common/counter.h"
#include "common/errbuf.h"

/* Handle: [63:32] generation, [31:5] record index, [4:0] send slot. */
#define SLOT_BITS   5u
#define INDEX_MASK  (RCI_FANOUT_MAX_RECORDS - 1u)
/* Record state: [63:32] generation of the current (or next) life,
 * [31:0] one bit per send not yet completed; 0 = the record is free. */
#define PENDING_MASK 0xffffffffull
/* Free-list head: [63:32] ABA tag bumped by every change, [31:0] index + 1
 * of the top record (0 = empty). */
#define HEAD_EMPTY   0u


struct fanout_record {
    _Atomic uint64_t state;
    uint64_t key;                /* written by begin before state is published */
    _Atomic uint32_t next_free;  /* index + 1 of the next free record */
};

struct rci_fanout {
    rci_fanout_release_fn release;
    void *ctx;
    uint32_t capacity;
    struct fanout_record *records;
    /* Each hot counter on its own line: begin and done run on different
     * threads and would otherwise bounce one line between them. */
    alignas(RCI_CACHE_LINE) _Atomic uint64_t free_head;
    alignas(RCI_CACHE_LINE) rci_shared_counter begun;
    alignas(RCI_CACHE_LINE) _Atomic uint64_t released;   /* read with acquire: records_in_use() */
    alignas(RCI_CACHE_LINE) rci_shared_counter released_at_once, exhausted, too_many_sends,
        stale_done, double_done, bad_handle;
    _Atomic uint64_t high_water;   /* a maximum: compare-and-swap */
};

/* Generation 0 never appears, so handle 0 (RCI_FANOUT_NO_HANDLE) never matches. */
static uint32_t next_generation(uint32_t gen)
{
    return gen == UINT32_MAX ? 1u : gen + 1u;
}

/* Pop a free record; -1 when there is none. The tag in the head makes the
 * compare-and-swap fail if the top was popped and pushed back meanwhile. */
static int64_t pop_free(struct rci_fanout *f)
{
    uint64_t head = atomic_load_explicit(&f->free_head, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)head;
        if (top == HEAD_EMPTY)
            return -1;
        uint32_t next = atomic_load_explicit(&f->records[top - 1].next_free, memory_order_relaxed);
        uint64_t new_head = (((head >> 32) + 1) << 32) | next;
        if (atomic_compare_exchange_weak_explicit(&f->free_head, &head, new_head,
                                                  memory_order_acquire, memory_order_acquire))
            return (int64_t)top - 1;
    }
}

static void push_free(struct rci_fanout *f, uint32_t index)
{
    uint64_t head = atomic_load_explicit(&f->free_head, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&f->records[index].next_free, (uint32_t)head, memory_order_relaxed);
        uint64_t new_head = (((head >> 32) + 1) << 32) | (index + 1u);
        if (atomic_compare_exchange_weak_explicit(&f->free_head, &head, new_head,
                                                  memory_order_release, memory_order_relaxed))
            return;
    }
}

int rci_fanout_create(uint32_t capacity, rci_fanout_release_fn release, void *ctx,
                     struct rci_fanout **out, char *err, size_t errlen)
{
    *out = NULL;
    if (capacity == 0 || capacity > RCI_FANOUT_MAX_RECORDS || !release) {
        rci_set_err(err, errlen, "fan-out pool: capacity %u must be 1..%u and a release callback is needed",
                   capacity, RCI_FANOUT_MAX_RECORDS);
        return -EINVAL;
    }
    struct rci_fanout *f = aligned_alloc(RCI_CACHE_LINE, sizeof *f);
    struct fanout_record *records = calloc(capacity, sizeof *records);
    if (!f || !records) {
        free(f);
        free(records);
        rci_set_err(err, errlen, "fan-out pool: cannot allocate %u records", capacity);
        return -ENOMEM;
    }
    memset(f, 0, sizeof *f);
    f->release = release;
    f->ctx = ctx;
    f->capacity = capacity;
    f->records = records;
    /* Chain every record, record 0 on top; every record starts in life 1. */
    for (uint32_t i = 0; i < capacity; i++) {
        atomic_init(&records[i].state, (uint64_t)1 << 32);
        atomic_init(&records[i].next_free, i + 1 < capacity ? i + 2 : HEAD_EMPTY);
    }
    atomic_init(&f->free_head, 1u);
    *out = f;
    return 0;
}

void rci_fanout_destroy(struct rci_fanout *f)
{
    if (!f)
        return;
    free(f->records);
    free(f);
}

/* released is read first: both only grow, so begun read later is never
 * smaller than it (the clamp covers a reordering of the two loads). */
static uint64_t records_in_use(const struct rci_fanout *f)
{
    uint64_t released = atomic_load_explicit(&f->released, memory_order_acquire);
    uint64_t begun = rci_shared_counter_get(&f->begun);
    return begun > released ? begun - released : 0;
}

static void note_high_water(struct rci_fanout *f)
{
    uint64_t in_use = records_in_use(f);
    uint64_t hw = atomic_load_explicit(&f->high_water, memory_order_relaxed);
    while (in_use > hw &&
           !atomic_compare_exchange_weak_explicit(&f->high_water, &hw, in_use, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

int rci_fanout_begin(struct rci_fanout *f, uint64_t key, unsigned k, uint64_t *first)
{
    *first = RCI_FANOUT_NO_HANDLE;
    if (k == 0) {
        /* Nobody subscribed: the ring gets the memory back at once. */
        rci_shared_counter_add(&f->released_at_once, 1);
        f->release(f->ctx, key);
        return 0;
    }
    if (k > RCI_FANOUT_MAX_SENDS) {
        rci_shared_counter_add(&f->too_many_sends, 1);
        return -E2BIG;
    }
    int64_t index = pop_free(f);
    if (index < 0) {
        rci_shared_counter_add(&f->exhausted, 1);
        return -EAGAIN;
    }
    struct fanout_record *rec = &f->records[index];
    /* The record is ours: its state holds the generation of this life. */
    uint64_t gen = atomic_load_explicit(&rec->state, memory_order_relaxed) >> 32;
    uint64_t pending = k == RCI_FANOUT_MAX_SENDS ? PENDING_MASK : ((1ull << k) - 1);
    rec->key = key;
    /* Release: whoever completes a send sees key written. */
    atomic_store_explicit(&rec->state, (gen << 32) | pending, memory_order_release);
    rci_shared_counter_add(&f->begun, 1);
    note_high_water(f);
    *first = (gen << 32) | ((uint64_t)index << SLOT_BITS);
    return 0;
}

/* Clear the send's bit; the last bit also moves the record to its next
 * generation, in the same step, so no later completion can match it. */
static int clear_pending(struct rci_fanout *f, struct fanout_record *rec, uint32_t gen, unsigned slot)
{
    uint64_t bit = 1ull << slot;
    uint64_t state = atomic_load_explicit(&rec->state, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(state >> 32) != gen) {
            rci_shared_counter_add(&f->stale_done, 1);
            return -ESTALE;
        }
        if (!(state & bit)) {
            rci_shared_counter_add(&f->double_done, 1);
            return -EALREADY;
        }
        uint64_t next = state & ~bit;
        bool last = (next & PENDING_MASK) == 0;
        if (last)
            next = (uint64_t)next_generation(gen) << 32;
        if (atomic_compare_exchange_weak_explicit(&rec->state, &state, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return last ? 1 : 0;
    }
}

int rci_fanout_done(struct rci_fanout *f, uint64_t handle)
{
    uint32_t gen = (uint32_t)(handle >> 32);
    uint32_t index = (uint32_t)(handle >> SLOT_BITS) & INDEX_MASK;
    unsigned slot = (unsigned)(handle & (RCI_FANOUT_MAX_SENDS - 1));
    if (gen == 0 || index >= f->capacity) {
        rci_shared_counter_add(&f->bad_handle, 1);
        return -EINVAL;
    }
    struct fanout_record *rec = &f->records[index];
    int rc = clear_pending(f, rec, gen, slot);
    if (rc != 1)
        return rc;
    /* The record cannot be reused before push_free below: key is stable. */
    uint64_t key = rec->key;
    f->release(f->ctx, key);
    atomic_fetch_add_explicit(&f->released, 1, memory_order_relaxed);
    push_free(f, index);
    return 1;
}

void rci_fanout_get_stats(const struct rci_fanout *f, struct rci_fanout_stats *s)
{
    *s = (struct rci_fanout_stats){
        .capacity = f->capacity,
        .begun = rci_shared_counter_get(&f->begun),
        .released = atomic_load_explicit(&f->released, memory_order_relaxed),
        .released_at_once = rci_shared_counter_get(&f->released_at_once),
        .in_use = records_in_use(f),
        .high_water = atomic_load_explicit(&f->high_water, memory_order_relaxed),
        .exhausted = rci_shared_counter_get(&f->exhausted),
        .too_many_sends = rci_shared_counter_get(&f->too_many_sends),
        .stale_done = rci_shared_counter_get(&f->stale_done),
        .double_done = rci_shared_counter_get(&f->double_done),
        .bad_handle = rci_shared_counter_get(&f->bad_handle),
    };
}
