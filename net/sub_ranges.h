/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_ranges.h — a set of 64-bit tags kept as sorted, disjoint, non-adjacent
 * inclusive ranges: the subscriber's record of what it subscribed to, and the
 * publisher's record of each subscriber's tags (fixed arrays: `limit`). Used
 * only inside net/. Changes may allocate (control path); lookups (per chunk)
 * do not. */
#ifndef RC_SUB_RANGES_H
#define RC_SUB_RANGES_H
#include <stddef.h>
#include <stdint.h>
#include "net/wire.h"

struct rc_tag_ranges {
    struct rc_wire_range *r;   /* sorted by first, r[i].last + 1 < r[i+1].first */
    uint32_t count, cap;
    uint32_t limit;            /* 0: grow with realloc; else at most this many
                                  ranges, in a caller-owned array of cap >= limit */
};

/* Make room so that `more` further changes (each add or remove adds at most
 * one range) cannot fail: 0, -ENOMEM, or -ENOSPC beyond `limit` (the set is
 * unchanged then). */
int  rc_tag_ranges_reserve(struct rc_tag_ranges *s, uint32_t more);
/* Add / remove [first, last] (first <= last). Room is needed only when the
 * change adds a range. Return 0, or -ENOMEM / -ENOSPC when no room was
 * reserved and none could be had (set unchanged). */
int  rc_tag_ranges_add(struct rc_tag_ranges *s, uint64_t first, uint64_t last);
int  rc_tag_ranges_remove(struct rc_tag_ranges *s, uint64_t first, uint64_t last);
/* 1 when tag is in the set: binary search, no allocation. */
int  rc_tag_ranges_contains(const struct rc_tag_ranges *s, uint64_t tag);
/* Copy up to max ranges of the set clipped to [*from, UINT64_MAX] into out;
 * advance *from past the last one copied and set *done when nothing of the
 * set lies at or after *from any more. Returns the number copied. */
uint32_t rc_tag_ranges_slice(const struct rc_tag_ranges *s, uint64_t *from, int *done,
                             struct rc_wire_range *out, uint32_t max);
void rc_tag_ranges_free(struct rc_tag_ranges *s);

#endif
