/* SPDX-License-Identifier: BSD-3-Clause */
/* rma_ring.c — record placement in a subscriber's RMA receive ring (rma_ring.h). */
#include "net/rma_ring.h"

bool rci_rma_place(uint64_t wpos, uint64_t size, uint64_t len, uint64_t *start)
{
    uint64_t span = rci_rma_span(len);
    if (len == 0 || size == 0 || span > size)
        return false;
    wpos = rci_rma_span(wpos);   /* positions are 8-byte aligned; a stray one is rounded */
    uint64_t off = wpos % size;
    if (off + span > size)
        wpos += size - off;
    *start = wpos;
    return true;
}

uint64_t rci_rma_max_record(uint64_t size, uint64_t cap)
{
    uint64_t max = (size / 8u) & ~(uint64_t)7u;
    if (cap && cap < max)
        max = cap & ~(uint64_t)7u;
    return max;
}
