/* SPDX-License-Identifier: BSD-3-Clause */
/* monotonic.h — CLOCK_MONOTONIC in nanoseconds, and a nanosleep for a count of
 * them: the one copy every module and tool uses (clock_gettime is a vDSO call,
 * not a system call, so it is fine on hot paths at block or batch rate). */
#ifndef RCI_MONOTONIC_H
#define RCI_MONOTONIC_H
#include <stdint.h>
#include <time.h>

static inline uint64_t rci_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void rci_sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

#endif
