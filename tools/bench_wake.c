/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_wake.c — one hand-off to a sleeping thread on another CPU (bench_wake.h). */
#include "tools/bench_wake.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/monotonic.h"

struct wake_run {
    int ring_fd, ack_fd;              /* waker -> waiter; waiter -> waker */
    int cpu_waiter;
    unsigned samples;
    _Atomic uint64_t woke_ns;         /* the waiter's clock right after poll() returned */
    _Atomic int waiter_err;           /* errno of the waiter's pinning, 0 = pinned */
};

/* The first two CPUs this process may run on; false if it has fewer. */
static bool two_cpus(int *a, int *b)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return false;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set))
            *(found++ ? b : a) = c;
    return found == 2;
}

static int pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Block until fd is readable (drain_fd then takes its count). */
static void wait_fd(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
}

static void drain_fd(int fd)
{
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0) {
        /* EAGAIN cannot happen after POLLIN on a blocking eventfd we alone read */
    }
}

static void post_fd(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) {
        /* only at the counter's maximum, far beyond one outstanding write */
    }
}

static void *waiter_main(void *arg)
{
    struct wake_run *w = arg;
    int rc = pin_self(w->cpu_waiter);
    atomic_store_explicit(&w->waiter_err, rc, memory_order_release);
    post_fd(w->ack_fd);               /* pinned (or not): the waker may start */
    if (rc)
        return NULL;
    for (unsigned i = 0; i < w->samples; i++) {
        wait_fd(w->ring_fd);
        atomic_store_explicit(&w->woke_ns, rci_now_ns(), memory_order_release);
        drain_fd(w->ring_fd);
        post_fd(w->ack_fd);
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *sorted, unsigned n, double q)
{
    unsigned i = (unsigned)(q * (n - 1) + 0.5);
    return (double)sorted[i] / 1e3;
}

/* The waker's loop: gap, stamp, ring, wait for the acknowledgement. */
static void measure(struct wake_run *w, uint64_t gap_ns, uint64_t *took)
{
    for (unsigned i = 0; i < w->samples; i++) {
        rci_sleep_ns(gap_ns);
        uint64_t rung = rci_now_ns();
        post_fd(w->ring_fd);
        wait_fd(w->ack_fd);
        drain_fd(w->ack_fd);
        uint64_t woke = atomic_load_explicit(&w->woke_ns, memory_order_acquire);
        took[i] = woke > rung ? woke - rung : 0;
    }
}

static int run_pinned(struct wake_run *w, int cpu_waker, uint64_t gap_ns, uint64_t *took, char *err,
                      size_t errlen)
{
    int rc = pin_self(cpu_waker);
    if (rc) {
        rci_set_err(err, errlen, "wake: cannot pin the waker to CPU %d: %s", cpu_waker, strerror(rc));
        return -rc;
    }
    pthread_t t;
    rc = pthread_create(&t, NULL, waiter_main, w);
    if (rc) {
        rci_set_err(err, errlen, "wake: cannot start the waiting thread: %s", strerror(rc));
        return -rc;
    }
    wait_fd(w->ack_fd);
    drain_fd(w->ack_fd);
    int waiter_err = atomic_load_explicit(&w->waiter_err, memory_order_acquire);
    if (waiter_err == 0)
        measure(w, gap_ns, took);
    pthread_join(t, NULL);
    if (waiter_err) {
        rci_set_err(err, errlen, "wake: cannot pin the waiting thread to CPU %d: %s", w->cpu_waiter,
                    strerror(waiter_err));
        return -waiter_err;
    }
    return 0;
}

/* run_pinned with the caller's CPU affinity put back afterwards: the rest
 * of the benchmark runs where it ran before. */
static int measure_with_fds(struct wake_run *w, int cpu_waker, uint64_t gap_ns, uint64_t *took, char *err,
                            size_t errlen)
{
    cpu_set_t before;
    if (pthread_getaffinity_np(pthread_self(), sizeof before, &before) != 0)
        CPU_ZERO(&before);
    int rc = run_pinned(w, cpu_waker, gap_ns, took, err, errlen);
    if (CPU_COUNT(&before) > 0)
        (void)pthread_setaffinity_np(pthread_self(), sizeof before, &before);
    return rc;
}

int rci_bench_wake(unsigned samples, uint64_t gap_ns, struct rci_bench_wake_result *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    int cpu_waker, cpu_waiter;
    if (samples == 0 || !two_cpus(&cpu_waker, &cpu_waiter)) {
        rci_set_err(err, errlen, "wake: needs two CPUs to run on and at least one sample");
        return -ENODEV;
    }
    uint64_t *took = calloc(samples, sizeof *took);
    struct wake_run w = { .ring_fd = -1, .ack_fd = -1, .cpu_waiter = cpu_waiter, .samples = samples };
    int rc = 0;
    if (!took) {
        rc = -ENOMEM;
        rci_set_err(err, errlen, "wake: out of memory for %u samples", samples);
    } else if ((w.ring_fd = eventfd(0, EFD_CLOEXEC)) < 0 || (w.ack_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
        rc = -errno;
        rci_set_err(err, errlen, "wake: eventfd: %s", strerror(errno));
    } else {
        uint64_t t0 = rci_now_ns();
        rc = measure_with_fds(&w, cpu_waker, gap_ns, took, err, errlen);
        out->seconds = (double)(rci_now_ns() - t0) / 1e9;
    }
    if (rc == 0) {
        qsort(took, samples, sizeof *took, cmp_u64);
        *out = (struct rci_bench_wake_result){ .samples = samples, .cpu_waker = cpu_waker,
            .cpu_waiter = cpu_waiter, .p50_us = pct_us(took, samples, 0.50), .p99_us = pct_us(took, samples, 0.99),
            .p999_us = pct_us(took, samples, 0.999), .max_us = (double)took[samples - 1] / 1e3,
            .seconds = out->seconds };
    }
    if (w.ring_fd >= 0)
        close(w.ring_fd);
    if (w.ack_fd >= 0)
        close(w.ack_fd);
    free(took);
    return rc;
}
