/* SPDX-License-Identifier: BSD-3-Clause */
/* dma_ring.c — the DMA ring and its lock-free out-of-order release tracker.
 *
 * Bookkeeping is per unit (unit_size bytes). take() writes, into the slot of
 * the take's first unit, the value key << 1 ("taken, not released"); every
 * other slot is 0. release(key) flips that slot to (key << 1) | 1 with one
 * compare-and-swap; advance() walks from read while the slot under read is
 * released, clears it and jumps over the take.
 *
 * Key = (T mod 2^tag_bits) << count_bits | count, where T is the monotonic
 * unit index of the take's first unit, count its length in units, count_bits
 * the bits needed for `units` and tag_bits = 63 - count_bits (bit 63 is 0, so
 * key << 1 fits). Because the slot holds the whole key, the CAS itself checks
 * lap, start and length: a stale key (its slot cleared or retaken by a later
 * take with another T) or a duplicate (slot already released) cannot match.
 *
 * Positions are kept in units (read, taken are unit aligned); written is in
 * bytes because the card may stop mid-unit.
 */
#include "dma/dma_ring.h"
#include "common/cacheline.h"
#include "common/counter.h"
#include "common/errbuf.h"
#include "common/monotonic.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_RELEASED 1ull

struct rci_dma_ring {
    /* Immutable after create. */
    struct rci_mem_region mem;
    uint64_t size, unit, units;
    unsigned count_bits;
    uint64_t count_mask, tag_mask;
    _Atomic uint64_t *slots;            /* one per unit */

    /* Written by the owner, read by releasers on every release: kept apart
     * from the owner's other fields so that those writes do not invalidate
     * this line under the releasing threads. */
    _Alignas(RCI_CACHE_LINE) _Atomic uint64_t read_units;
    _Atomic uint64_t taken_units;

    /* Written by the owner only (single-writer counters, common/counter.h):
     * getters on other threads read whole values; relaxed, each is a
     * statistic or a single position. */
    _Alignas(RCI_CACHE_LINE) rci_counter written;
    rci_counter high_water, takes, releases, bad_written;
    rci_counter full_since_ns;          /* 0: not full */
    _Atomic uint64_t full_ns;           /* release/acquire: see note_full_end */

    /* Written by any thread, rarely (bad keys only). */
    _Alignas(RCI_CACHE_LINE) rci_shared_counter bad_releases;
};

/* The owner reads a field only it writes: relaxed is enough. */
static inline uint64_t owner_load(const _Atomic uint64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

static unsigned bits_for(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

static int check_params(const struct rci_dma_ring_params *p, char *err, size_t errlen)
{
    if (!p) {
        rci_set_err(err, errlen, "dma ring: no parameters");
        return -EINVAL;
    }
    if (p->unit_size == 0 || p->size == 0 || p->size % p->unit_size != 0) {
        rci_set_err(err, errlen, "dma ring: size %zu must be a non-zero multiple of unit size %zu",
                p->size, p->unit_size);
        return -EINVAL;
    }
    if (p->size / p->unit_size > RCI_DMA_RING_MAX_UNITS) {
        rci_set_err(err, errlen, "dma ring: %zu units of %zu bytes, at most %llu allowed",
                p->size / p->unit_size, p->unit_size, RCI_DMA_RING_MAX_UNITS);
        return -EINVAL;
    }
    return 0;
}

static int alloc_ring(uint64_t units, struct rci_dma_ring **out)
{
    struct rci_dma_ring *r = NULL;
    void *slots = NULL;
    if (posix_memalign((void **)&r, RCI_CACHE_LINE, sizeof *r) != 0) return -ENOMEM;
    if (posix_memalign(&slots, RCI_CACHE_LINE, units * sizeof(_Atomic uint64_t)) != 0) {
        free(r);
        return -ENOMEM;
    }
    memset(r, 0, sizeof *r);
    r->slots = slots;
    for (uint64_t i = 0; i < units; i++) atomic_init(&r->slots[i], 0);
    *out = r;
    return 0;
}

int rci_dma_ring_create(const struct rci_dma_ring_params *p, struct rci_dma_ring **out,
                       char *err, size_t errlen)
{
    rci_set_err(err, errlen, "%s", "");
    int rc = check_params(p, err, errlen);
    if (rc < 0) return rc;
    struct rci_dma_ring *r;
    uint64_t units = p->size / p->unit_size;
    if (alloc_ring(units, &r) < 0) {
        rci_set_err(err, errlen, "dma ring: no memory for %llu unit slots",
                (unsigned long long)units);
        return -ENOMEM;
    }
    rc = rci_mem_map(p->backend, p->size, p->shm_name, true, p->lock_memory, &r->mem, err,
                    errlen);
    if (rc == 0 && p->bind_node) {
        char warn[256];
        snprintf(warn, sizeof warn, "%s", err ? err : "");
        rc = rci_mem_bind_node(&r->mem, p->numa_node, err, errlen);
        if (rc != 0)
            rci_mem_unmap(&r->mem);
        else if (err && errlen)
            snprintf(err, errlen, "%s", warn);   /* keep a mapping warning */
    }
    if (rc < 0) {
        free(r->slots);
        free(r);
        return rc;
    }
    r->size = p->size;
    r->unit = p->unit_size;
    r->units = units;
    r->count_bits = bits_for(units);
    r->count_mask = (1ull << r->count_bits) - 1;
    r->tag_mask = (1ull << (63 - r->count_bits)) - 1;
    *out = r;
    return 0;
}

void rci_dma_ring_destroy(struct rci_dma_ring *r)
{
    if (!r) return;
    rci_mem_unmap(&r->mem);
    free(r->slots);
    free(r);
}

uint8_t *rci_dma_ring_addr(const struct rci_dma_ring *r) { return r->mem.addr; }
size_t rci_dma_ring_size(const struct rci_dma_ring *r) { return r->size; }
size_t rci_dma_ring_unit(const struct rci_dma_ring *r) { return r->unit; }
const struct rci_mem_region *rci_dma_ring_region(const struct rci_dma_ring *r) { return &r->mem; }

/* Acquire pairs with the release store in advance(): a reader that sees a
 * read position also sees the written position that allowed it, so
 * written - read computed afterwards never underflows. */
uint64_t rci_dma_ring_read_pos(const struct rci_dma_ring *r)
{
    return atomic_load_explicit(&r->read_units, memory_order_acquire) * r->unit;
}

uint64_t rci_dma_ring_written_pos(const struct rci_dma_ring *r) { return rci_counter_get(&r->written); }

uint64_t rci_dma_ring_taken_pos(const struct rci_dma_ring *r)
{
    return atomic_load_explicit(&r->taken_units, memory_order_relaxed) * r->unit;
}

/* Owner thread. A full ring is the only state that stalls the card; time it
 * on transitions only (here and in advance), never per release. */
static void note_full_start(struct rci_dma_ring *r, uint64_t in_use)
{
    if (in_use == r->size && rci_counter_get(&r->full_since_ns) == 0) {
        uint64_t t = rci_now_ns();
        rci_counter_set(&r->full_since_ns, t ? t : 1);
    }
}

static void note_full_end(struct rci_dma_ring *r)
{
    uint64_t since = rci_counter_get(&r->full_since_ns);
    if (since == 0) return;
    uint64_t stalled = rci_now_ns() - since;
    /* Clear `since` before publishing the new total (release): a stats
     * reader that sees the new total then also sees since == 0, so an ending
     * stall is never counted twice (it may be briefly under-counted). */
    rci_counter_set(&r->full_since_ns, 0);
    atomic_store_explicit(&r->full_ns, owner_load(&r->full_ns) + stalled, memory_order_release);
}

int rci_dma_ring_note_written(struct rci_dma_ring *r, uint64_t written)
{
    uint64_t old = rci_counter_get(&r->written);
    uint64_t read = owner_load(&r->read_units) * r->unit;
    uint64_t limit = read + r->size;
    int rc = 0;
    if (written < old) {               /* card went backwards: keep what we had */
        written = old;
        rc = -EINVAL;
    } else if (written > limit) {      /* card overtook read: data below is lost */
        written = limit;
        rc = -EINVAL;
    }
    if (rc < 0) rci_counter_add(&r->bad_written, 1);
    rci_counter_set(&r->written, written);
    uint64_t in_use = written - read;
    if (in_use > rci_counter_get(&r->high_water)) rci_counter_set(&r->high_water, in_use);
    note_full_start(r, in_use);
    return rc;
}

static void fill_span(const struct rci_dma_ring *r, uint64_t start, uint64_t len,
                      struct rci_dma_span *span)
{
    uint64_t off = start % r->size;
    uint64_t first = r->size - off < len ? r->size - off : len;
    span->count = first == len ? 1 : 2;
    span->piece[0].offset = off;
    span->piece[0].len = first;
    span->piece[1].offset = 0;
    span->piece[1].len = len - first;
}

int rci_dma_ring_take(struct rci_dma_ring *r, size_t len, struct rci_dma_span *span,
                     uint64_t *key)
{
    if (len == 0 || len > r->size || len % r->unit != 0) return -EINVAL;
    uint64_t taken = owner_load(&r->taken_units);
    uint64_t count = len / r->unit;
    if ((taken + count) * r->unit > rci_counter_get(&r->written)) return -EAGAIN;

    uint64_t k = ((taken & r->tag_mask) << r->count_bits) | count;
    /* Relaxed: the key travels to the releaser through a channel that orders
     * memory (see header), which carries this store with it. The slot is 0
     * here: its previous take was advanced past before written could reach
     * this far. */
    atomic_store_explicit(&r->slots[taken % r->units], k << 1, memory_order_relaxed);
    /* Relaxed for the same reason: releasers only bound-check against it. */
    atomic_store_explicit(&r->taken_units, taken + count, memory_order_relaxed);
    rci_counter_add(&r->takes, 1);
    fill_span(r, taken * r->unit, len, span);
    *key = k;
    return 0;
}

static int reject(struct rci_dma_ring *r)
{
    /* Any thread may count; bad keys are rare, so the shared RMW is too. */
    rci_shared_counter_add(&r->bad_releases, 1);
    return -EINVAL;
}

int rci_dma_ring_release(struct rci_dma_ring *r, uint64_t key)
{
    uint64_t count = key & r->count_mask;
    if ((key >> 63) != 0 || count == 0 || count > r->units) return reject(r);

    /* Rebuild the full start unit T from its truncated tag. For a live key
     * read <= T < read + units, where `read` may be any value loaded after the
     * take (read only grows, and never past an unreleased take). Relaxed is
     * enough: the key's channel orders the take before this load, so we see
     * at least the read and taken of take time. A stale or corrupt key gives
     * T outside that window or a slot that does not match. */
    uint64_t read = atomic_load_explicit(&r->read_units, memory_order_relaxed);
    uint64_t delta = ((key >> r->count_bits) - read) & r->tag_mask;
    if (delta >= r->units) return reject(r);
    uint64_t start = read + delta;
    if (start + count > atomic_load_explicit(&r->taken_units, memory_order_relaxed))
        return reject(r);

    /* The slot must still hold exactly this take, not released. Release on
     * success: the caller's reads of the range happen before advance()
     * (acquire) lets the card overwrite it. Relaxed on failure: nothing was
     * published and nothing is read afterwards. Of two racing duplicates the
     * CAS lets exactly one through. */
    uint64_t expected = key << 1;
    if (!atomic_compare_exchange_strong_explicit(&r->slots[start % r->units], &expected,
                                                 (key << 1) | SLOT_RELEASED,
                                                 memory_order_release, memory_order_relaxed))
        return reject(r);
    return 0;
}

uint64_t rci_dma_ring_advance(struct rci_dma_ring *r)
{
    uint64_t read = owner_load(&r->read_units);
    uint64_t taken = owner_load(&r->taken_units);
    uint64_t retired = 0;
    while (read < taken) {
        _Atomic uint64_t *slot = &r->slots[read % r->units];
        /* Acquire pairs with the releasing CAS: the releaser's use of the
         * range is complete before we hand it back to the card. */
        uint64_t v = atomic_load_explicit(slot, memory_order_acquire);
        if (!(v & SLOT_RELEASED)) break;
        /* Relaxed: only this thread writes a released slot; late duplicate
         * releases compare against "taken" and fail either way. */
        atomic_store_explicit(slot, 0, memory_order_relaxed);
        read += (v >> 1) & r->count_mask;
        retired++;
    }
    if (retired == 0) return read * r->unit;
    rci_counter_add(&r->releases, retired);
    /* Release: readers of read (getters, stats) also see the written
     * position and counters that preceded it. */
    atomic_store_explicit(&r->read_units, read, memory_order_release);
    note_full_end(r);
    return read * r->unit;
}

void rci_dma_ring_get_stats(const struct rci_dma_ring *r, struct rci_dma_ring_stats *s)
{
    memset(s, 0, sizeof *s);
    s->size = r->size;
    /* read before written: see rci_dma_ring_read_pos */
    s->read = rci_dma_ring_read_pos(r);
    s->taken = rci_dma_ring_taken_pos(r);
    s->written = rci_counter_get(&r->written);
    s->in_use = s->written - s->read;
    s->high_water = rci_counter_get(&r->high_water);
    /* full_ns first (acquire, see note_full_end), then any stall in progress */
    s->full_ns = atomic_load_explicit(&r->full_ns, memory_order_acquire);
    uint64_t since = rci_counter_get(&r->full_since_ns);
    uint64_t now = since ? rci_now_ns() : 0;
    if (since && now > since) s->full_ns += now - since;
    s->takes = rci_counter_get(&r->takes);
    s->releases = rci_counter_get(&r->releases);
    s->bad_releases = rci_shared_counter_get(&r->bad_releases);
    s->bad_written = rci_counter_get(&r->bad_written);
}
