/* SPDX-License-Identifier: BSD-3-Clause */
/* ring_alarm.h — ring occupancy alarms, as ALICE's Readout raises them: one
 * when the ring passes 90 %, one when it is full (100 %: the card stalls),
 * and an all-clear once it is back under 80 %. The hysteresis keeps a ring
 * that hovers around a threshold from raising an alarm per sample.
 *
 * The owner (the daemon's main thread, every ~100 ms tick) feeds it ring
 * statistics; "full" is seen also between two samples, from the ring's
 * full-time counter having grown. Counters are atomics: any thread may read
 * them (metrics). No cost on the data path. */
#ifndef RCI_RING_ALARM_H
#define RCI_RING_ALARM_H
#include <stdatomic.h>
#include "common/counter.h"
#include <stdbool.h>
#include <stdint.h>

#include "dma/dma_ring.h"

#define RCI_RING_ALARM_HIGH_PCT  90u
#define RCI_RING_ALARM_CLEAR_PCT 80u

enum rci_ring_alarm_event {
    RCI_RING_ALARM_NONE = 0,
    RCI_RING_ALARM_HIGH,     /* passed 90 % (from under it) */
    RCI_RING_ALARM_FULL,     /* full, or was full since the last sample */
    RCI_RING_ALARM_CLEAR,    /* back under 80 % after HIGH or FULL */
};

struct rci_ring_alarm {
    int level;                        /* 0 normal, 1 high, 2 full: the owner's state */
    uint64_t last_full_ns;            /* the ring's full_ns at the last sample */
    rci_counter high, full, cleared;        /* events so far (the updating thread writes) */
};

/* Zeroed state: normal. */
void rci_ring_alarm_init(struct rci_ring_alarm *a);
/* One sample; returns the event it raises, if any. */
enum rci_ring_alarm_event rci_ring_alarm_update(struct rci_ring_alarm *a, const struct rci_dma_ring_stats *s);

#endif
