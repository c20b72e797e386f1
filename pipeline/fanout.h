/* SPDX-License-Identifier: BSD-3-Clause */
/* fanout.h — fan-out reference counting for chunk keys.
 *
 * A chunk subscribed by k subscribers is sent k times from the same ring
 * memory; its key may go back to the ring only after the last of the k send
 * completions. A fan-out pool holds one record per chunk in flight:
 *
 *   rci_fanout_begin(f, key, k, &first)   take a record for key, k sends;
 *                                        k == 0 releases the key at once
 *   rci_fanout_send_handle(first, i)      the handle of send i (i < k): pass it
 *                                        as the send's completion cookie
 *   rci_fanout_done(f, handle)            send i is over (sent, failed, or never
 *                                        posted); the k-th call releases the key
 *                                        through the pool's release callback
 *
 * Every send has its own handle, so a second completion of the same send is
 * recognised even before the k-th one (a bit per send), and a completion that
 * arrives after the record was released and reused is recognised by the
 * record's generation: neither can release a key early. Both are refused and
 * counted. The generation and the pending bits live in one 64-bit word changed
 * by compare-and-swap, so a stale handle can never touch the next life.
 *
 * Threads: begin and done from any threads; lock-free, no allocation after
 * create. The release callback runs on the thread whose done() was last.
 * Exhaustion (-EAGAIN) is the caller's backpressure: keep the chunk and retry.
 * Cost: one CAS per completion on the record plus one on the shared free-list
 * head per chunk.
 */
#ifndef RCI_FANOUT_H
#define RCI_FANOUT_H
#include <stddef.h>
#include <stdint.h>

/* Most sends of one chunk: one pending bit each in a 32-bit mask. */
#define RCI_FANOUT_MAX_SENDS 32u
/* Most records in a pool: the index has 27 bits of a handle. */
#define RCI_FANOUT_MAX_RECORDS (1u << 27)
/* What begin() stores for k == 0: no record, nothing to complete. Never a
 * valid handle (generations start at 1). */
#define RCI_FANOUT_NO_HANDLE 0ull

/* Gives a key back (typically to rci_readout_release). Any thread. */
typedef void (*rci_fanout_release_fn)(void *ctx, uint64_t key);

struct rci_fanout_stats {
    uint64_t capacity;          /* records in the pool */
    uint64_t begun;             /* records taken (k > 0) */
    uint64_t released;          /* keys released after their k-th completion */
    uint64_t released_at_once;  /* keys released by begin() because k == 0 */
    uint64_t in_use;            /* records taken and not yet released */
    uint64_t high_water;        /* most records in use at once */
    uint64_t exhausted;         /* begin refused: every record in use (-EAGAIN) */
    uint64_t too_many_sends;    /* begin refused: k > RCI_FANOUT_MAX_SENDS (-E2BIG) */
    uint64_t stale_done;        /* done refused: the record was released since (-ESTALE) */
    uint64_t double_done;       /* done refused: this send was already completed (-EALREADY) */
    uint64_t bad_handle;        /* done refused: index out of range or generation 0 (-EINVAL) */
};

struct rci_fanout;

/* A pool of capacity records (1..RCI_FANOUT_MAX_RECORDS), allocated here once.
 * Returns 0 or -EINVAL / -ENOMEM with the reason in err. */
int  rci_fanout_create(uint32_t capacity, rci_fanout_release_fn release, void *ctx,
                      struct rci_fanout **out, char *err, size_t errlen);
/* Records still in use are dropped without releasing their keys: drain first
 * (stats.in_use == 0). */
void rci_fanout_destroy(struct rci_fanout *f);

/* Take a record for key with k sends and store the handle of send 0 in
 * *first. Returns 0; -EAGAIN when every record is in use (the key is still
 * the caller's); -E2BIG when k > RCI_FANOUT_MAX_SENDS. With k == 0 the key is
 * released before return and *first = RCI_FANOUT_NO_HANDLE. */
int  rci_fanout_begin(struct rci_fanout *f, uint64_t key, unsigned k, uint64_t *first);

/* The handle of send i (0 <= i < k) of the record whose send 0 is first. */
static inline uint64_t rci_fanout_send_handle(uint64_t first, unsigned i)
{
    return first | (uint64_t)(i & (RCI_FANOUT_MAX_SENDS - 1));
}

/* Send `handle` is over. Returns 1 when this was the last one (the key was
 * released), 0 when sends of the record remain, or a refusal (counted):
 * -ESTALE, -EALREADY, -EINVAL (see the statistics). */
int  rci_fanout_done(struct rci_fanout *f, uint64_t handle);

/* Any thread; the figures are read one by one, not as one snapshot. */
void rci_fanout_get_stats(const struct rci_fanout *f, struct rci_fanout_stats *s);

#endif
