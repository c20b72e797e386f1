/* SPDX-License-Identifier: BSD-3-Clause */
/* counter.h — the one counter idiom of ringcast: statistics that one thread
 * writes and any thread reads, and, named apart, the few that several
 * threads write.
 *
 * rci_counter (single writer): exactly one thread changes it — the thread
 * that owns the object (a readout thread, a publisher thread, the ring's
 * owner). A change is a relaxed load, an add and a relaxed store: no locked
 * read-modify-write on per-chunk paths (on x86 a plain mov each). Readers on
 * other threads get whole values (never torn) and the program has no data
 * race; they may see a value a moment old. Set stores a value (a position or
 * a state mirrored for other threads).
 *
 * rci_shared_counter (multi writer): any thread may add (an atomic fetch-add,
 * a locked instruction): for the rare events several threads count (a bad
 * key released by whichever thread, a refused table update).
 *
 * Both are relaxed: a counter orders nothing else. A value that must publish
 * other memory (a position with acquire/release) is an explicit _Atomic next
 * to its ordering comment, not a counter.
 *
 * The two are distinct struct types so that the compiler refuses a
 * single-writer add on a shared counter and the reverse, and refuses plain
 * reads and writes (each would be a seq_cst access or a data race).
 * Zero-filled memory (calloc, memset, = {0}) is a counter at 0.
 */
#ifndef RCI_COUNTER_H
#define RCI_COUNTER_H
#include <stdatomic.h>
#include <stdint.h>

typedef struct {
    _Atomic uint64_t v;
} rci_counter;

typedef struct {
    _Atomic uint64_t v;
} rci_shared_counter;

/* Owner thread only. */
static inline void rci_counter_add(rci_counter *c, uint64_t n)
{
    atomic_store_explicit(&c->v, atomic_load_explicit(&c->v, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Owner thread only. */
static inline void rci_counter_set(rci_counter *c, uint64_t value)
{
    atomic_store_explicit(&c->v, value, memory_order_relaxed);
}

/* Any thread. */
static inline uint64_t rci_counter_get(const rci_counter *c)
{
    return atomic_load_explicit(&c->v, memory_order_relaxed);
}

/* Any thread. */
static inline void rci_shared_counter_add(rci_shared_counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

/* Any thread. */
static inline uint64_t rci_shared_counter_get(const rci_shared_counter *c)
{
    return atomic_load_explicit(&c->v, memory_order_relaxed);
}

#endif
