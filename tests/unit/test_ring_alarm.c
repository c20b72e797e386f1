/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ring_alarm.c — ring occupancy alarms (readout/ring_alarm.c): 90 %,
 * 100 % (also when the ring was full only between two samples) and back
 * under 80 %, with hysteresis, and their counters. */
#include "readout/ring_alarm.h"

#include "tests/unit/cunit_main.h"

static enum rci_ring_alarm_event sample(struct rci_ring_alarm *a, uint64_t in_use, uint64_t full_ns)
{
    struct rci_dma_ring_stats s = {.size = 1000, .in_use = in_use, .full_ns = full_ns};
    return rci_ring_alarm_update(a, &s);
}

static void test_thresholds(void)
{
    struct rci_ring_alarm a;
    rci_ring_alarm_init(&a);
    CU_ASSERT_EQUAL(sample(&a, 0, 0), RCI_RING_ALARM_NONE);
    CU_ASSERT_EQUAL(sample(&a, 899, 0), RCI_RING_ALARM_NONE);
    CU_ASSERT_EQUAL(sample(&a, 900, 0), RCI_RING_ALARM_HIGH);
    CU_ASSERT_EQUAL(sample(&a, 950, 0), RCI_RING_ALARM_NONE);      /* still high: said once */
    CU_ASSERT_EQUAL(sample(&a, 850, 0), RCI_RING_ALARM_NONE);      /* between 80 and 90: no change */
    CU_ASSERT_EQUAL(sample(&a, 920, 0), RCI_RING_ALARM_NONE);
    CU_ASSERT_EQUAL(sample(&a, 1000, 0), RCI_RING_ALARM_FULL);
    CU_ASSERT_EQUAL(sample(&a, 1000, 5), RCI_RING_ALARM_NONE);     /* still full */
    CU_ASSERT_EQUAL(sample(&a, 880, 5), RCI_RING_ALARM_NONE);      /* hysteresis */
    CU_ASSERT_EQUAL(sample(&a, 800, 5), RCI_RING_ALARM_NONE);      /* 80 % is not under 80 % */
    CU_ASSERT_EQUAL(sample(&a, 799, 5), RCI_RING_ALARM_CLEAR);
    CU_ASSERT_EQUAL(sample(&a, 10, 5), RCI_RING_ALARM_NONE);
    CU_ASSERT_EQUAL(rci_counter_get(&a.high), 1);
    CU_ASSERT_EQUAL(rci_counter_get(&a.full), 1);
    CU_ASSERT_EQUAL(rci_counter_get(&a.cleared), 1);
}

/* Full between two samples (the full-time counter grew) counts as full,
 * even when the sample itself sees a ring that emptied meanwhile; the
 * all-clear comes at the next sample that sees no new full time. */
static void test_full_between_samples(void)
{
    struct rci_ring_alarm a;
    rci_ring_alarm_init(&a);
    CU_ASSERT_EQUAL(sample(&a, 100, 0), RCI_RING_ALARM_NONE);
    CU_ASSERT_EQUAL(sample(&a, 100, 7000), RCI_RING_ALARM_FULL);
    CU_ASSERT_EQUAL(sample(&a, 100, 9000), RCI_RING_ALARM_NONE);  /* full again meanwhile: no clear */
    CU_ASSERT_EQUAL(sample(&a, 100, 9000), RCI_RING_ALARM_CLEAR);
    CU_ASSERT_EQUAL(sample(&a, 1000, 9000), RCI_RING_ALARM_FULL); /* straight from normal to full */
    CU_ASSERT_EQUAL(rci_counter_get(&a.high), 0);
    CU_ASSERT_EQUAL(rci_counter_get(&a.full), 2);
    CU_ASSERT_EQUAL(rci_counter_get(&a.cleared), 1);
    struct rci_dma_ring_stats empty = {0};
    CU_ASSERT_EQUAL(rci_ring_alarm_update(&a, &empty), RCI_RING_ALARM_NONE); /* no ring: nothing */
}

static void register_tests(void)
{
    RCI_SUITE("ring_alarm", {"thresholds and hysteresis", test_thresholds},
              {"full between samples", test_full_between_samples});
}

RCI_CUNIT_MAIN(register_tests)
