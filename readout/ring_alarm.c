/* SPDX-License-Identifier: BSD-3-Clause */
/* ring_alarm.c — ring occupancy alarms (ring_alarm.h). */
#include "readout/ring_alarm.h"

#include <string.h>

enum { LEVEL_NORMAL = 0, LEVEL_HIGH, LEVEL_FULL };

void rci_ring_alarm_init(struct rci_ring_alarm *a)
{
    memset(a, 0, sizeof *a);
}

enum rci_ring_alarm_event rci_ring_alarm_update(struct rci_ring_alarm *a, const struct rci_dma_ring_stats *s)
{
    if (s->size == 0)
        return RCI_RING_ALARM_NONE;
    /* Full now, or full for a while since the last sample. */
    bool full = s->in_use >= s->size || s->full_ns > a->last_full_ns;
    a->last_full_ns = s->full_ns;
    /* in_use * 100 cannot overflow: a ring is far below 2^57 bytes. */
    bool high = s->in_use * 100u >= (uint64_t)RCI_RING_ALARM_HIGH_PCT * s->size;
    bool clear = s->in_use * 100u < (uint64_t)RCI_RING_ALARM_CLEAR_PCT * s->size;
    if (full && a->level != LEVEL_FULL) {
        a->level = LEVEL_FULL;
        rci_counter_add(&a->full, 1);
        return RCI_RING_ALARM_FULL;
    }
    if (high && a->level == LEVEL_NORMAL) {
        a->level = LEVEL_HIGH;
        rci_counter_add(&a->high, 1);
        return RCI_RING_ALARM_HIGH;
    }
    if (clear && !full && a->level != LEVEL_NORMAL) {
        a->level = LEVEL_NORMAL;
        rci_counter_add(&a->cleared, 1);
        return RCI_RING_ALARM_CLEAR;
    }
    return RCI_RING_ALARM_NONE;
}
