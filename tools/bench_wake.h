/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_wake.h — ringcast-bench's "wake" measurement: what one hand-off to a
 * sleeping thread costs on this machine, the floor under card-to-callback
 * latency when the pipeline's threads sleep between chunks.
 *
 * Two threads pinned to two different CPUs of the process's allowed set.
 * The waiter blocks in poll() on an eventfd, as the publisher's doorbell and
 * the readout's interrupt do; the waker sleeps gap_ns (so the waiter's CPU
 * goes idle, as between chunks at a low rate), takes the time, writes the
 * eventfd and waits for the waiter's acknowledgement on a second eventfd.
 * The waiter takes the time as soon as poll() returns: the difference is
 * one wake-up of a thread on another, idle core (on a virtual machine, an
 * interrupt to a halted virtual CPU). The acknowledgement is not measured.
 */
#ifndef RCI_BENCH_WAKE_H
#define RCI_BENCH_WAKE_H
#include <stddef.h>
#include <stdint.h>

struct rci_bench_wake_result {
    unsigned samples;
    int cpu_waker, cpu_waiter;        /* the two CPUs used */
    double p50_us, p99_us, p999_us, max_us;
    double seconds;                   /* wall time of the measurement */
};

/* samples wake-ups, gap_ns apart. 0; -ENODEV when fewer than two CPUs are
 * allowed (nothing measured, err says so); another -errno on a failure of
 * eventfd, the threads or the pinning (err says which). */
int rci_bench_wake(unsigned samples, uint64_t gap_ns, struct rci_bench_wake_result *out, char *err,
                   size_t errlen);

#endif
