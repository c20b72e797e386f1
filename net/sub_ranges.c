/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_ranges.c — sorted disjoint tag ranges (see sub_ranges.h). Ranges that
 * touch or overlap are merged, so the set has one canonical form: the
 * subscriber can resend it after a reconnect without duplicates. */
#include "net/sub_ranges.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rci_tag_ranges_reserve(struct rci_tag_ranges *s, uint32_t more)
{
    if (more > UINT32_MAX - s->count)
        return -ENOMEM;
    uint32_t need = s->count + more;
    if (need <= s->cap)
        return 0;
    if (s->limit)
        return -ENOSPC;   /* a fixed array: cap already covers the limit */
    uint32_t cap = s->cap ? s->cap : 8;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? need : cap * 2;
    struct rci_wire_range *r = realloc(s->r, (size_t)cap * sizeof *r);
    if (!r)
        return -ENOMEM;
    s->r = r;
    s->cap = cap;
    return 0;
}

/* Replace r[i..j) by the k ranges in repl (the caller reserved room). */
static void splice(struct rci_tag_ranges *s, uint32_t i, uint32_t j, const struct rci_wire_range *repl,
                   uint32_t k)
{
    memmove(&s->r[i + k], &s->r[j], (size_t)(s->count - j) * sizeof s->r[0]);
    memcpy(&s->r[i], repl, (size_t)k * sizeof s->r[0]);
    s->count = s->count - (j - i) + k;
}

/* First index whose range ends at or after tag (count if none). */
static uint32_t first_ending_at_or_after(const struct rci_tag_ranges *s, uint64_t tag)
{
    uint32_t lo = 0, hi = s->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].last < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int rci_tag_ranges_add(struct rci_tag_ranges *s, uint64_t first, uint64_t last)
{
    if (first > last)
        return -EINVAL;
    /* Ranges adjacent to [first, last] merge with it too. */
    uint64_t touch_lo = first == 0 ? 0 : first - 1;
    uint64_t touch_hi = last == UINT64_MAX ? UINT64_MAX : last + 1;
    uint32_t i = first_ending_at_or_after(s, touch_lo);
    uint32_t j = i;
    struct rci_wire_range merged = {first, last};
    while (j < s->count && s->r[j].first <= touch_hi) {
        if (s->r[j].first < merged.first)
            merged.first = s->r[j].first;
        if (s->r[j].last > merged.last)
            merged.last = s->r[j].last;
        j++;
    }
    int rc = i == j ? rci_tag_ranges_reserve(s, 1) : 0;   /* nothing merged: one more */
    if (rc)
        return rc;
    splice(s, i, j, &merged, 1);
    return 0;
}

int rci_tag_ranges_remove(struct rci_tag_ranges *s, uint64_t first, uint64_t last)
{
    if (first > last)
        return -EINVAL;
    uint32_t i = first_ending_at_or_after(s, first);
    uint32_t j = i;
    while (j < s->count && s->r[j].first <= last)
        j++;
    if (i == j)
        return 0;
    struct rci_wire_range keep[2];
    uint32_t k = 0;
    if (s->r[i].first < first)
        keep[k++] = (struct rci_wire_range){s->r[i].first, first - 1};
    if (s->r[j - 1].last > last)
        keep[k++] = (struct rci_wire_range){last + 1, s->r[j - 1].last};
    int rc = k > j - i ? rci_tag_ranges_reserve(s, 1) : 0;   /* one range split in two */
    if (rc)
        return rc;
    splice(s, i, j, keep, k);
    return 0;
}

int rci_tag_ranges_contains(const struct rci_tag_ranges *s, uint64_t tag)
{
    uint32_t i = first_ending_at_or_after(s, tag);
    return i < s->count && s->r[i].first <= tag;
}

uint32_t rci_tag_ranges_slice(const struct rci_tag_ranges *s, uint64_t *from, int *done,
                             struct rci_wire_range *out, uint32_t max)
{
    uint32_t i = first_ending_at_or_after(s, *from);
    uint32_t n = 0;
    if (max == 0) {
        *done = i >= s->count;
        return 0;
    }
    for (; i < s->count && n < max; i++, n++) {
        out[n] = s->r[i];
        if (out[n].first < *from)
            out[n].first = *from;
    }
    if (i >= s->count) {
        *done = 1;
    } else {
        *done = 0;
        *from = out[n - 1].last + 1;   /* not UINT64_MAX: a later range exists */
    }
    return n;
}

void rci_tag_ranges_free(struct rci_tag_ranges *s)
{
    free(s->r);
    memset(s, 0, sizeof *s);
}
