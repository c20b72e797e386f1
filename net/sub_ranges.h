/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_ranges.h — a set of 64-bit tags kept as sorted, disjoint, non-adjacent
 * inclusive ranges: the subscriber's record of what it subscribed to, and the
 * publisher's record of each subscriber's tags (fixed arrays: `limit`). Used
 * only inside net/. Changes may allocate (control path); lookups (per chunk)
 * do not. */
#ifndef RCI_SUB_RANGES_H
#define RCI_SUB_RANGES_H
#include <stddef.h>
#include <stdint.h>
#include "net/wire.h"

struct rci_tag_ranges {
    struct rci_wire_range *r;   /* sorted by first, r[i].last + 1 < r[i+1].first */
    uint32_t count, cap;
    uint32_t limit;            /* 0: grow with realloc; else at most this many
                                  ranges, in a caller-owned array of cap >= limit */
};

/* Make room so that `more` further changes (each add or remove adds at most
 * one range) cannot fail: 0, -ENOMEM, or -ENOSPC beyond `limit` (the set is
 * unchanged then). */
int  rci_tag_ranges_reserve(struct rci_tag_ranges *s, uint32_t more);
/* Add / remove [first, last] (first <= last). Room is needed only when the
 * change adds a range. Return 0, or -ENOMEM / -ENOSPC when no room was
 * reserved and none could be had (set unchanged). */
int  rci_tag_ranges_add(struct rci_tag_ranges *s, uint64_t first, uint64_t last);
int  rci_tag_ranges_remove(struct rci_tag_ranges *s, uint64_t first, uint64_t last);
/* 1 when tag is in the set: binary search, no allocation. */
int  rci_tag_ranges_contains(const struct rci_tag_ranges *s, uint64_t tag);
/* Copy up to max ranges of the set clipped to [*from, UINT64_MAX] into out;
 * advance *from past the last one copied and set *done when nothing of the
 * set lies at or after *from any more. Returns the number copied. */
uint32_t rci_tag_ranges_slice(const struct rci_tag_ranges *s, uint64_t *from, int *done,
                             struct rci_wire_range *out, uint32_t max);
void rci_tag_ranges_free(struct rci_tag_ranges *s);

#endif
