/* SPDX-License-Identifier: BSD-3-Clause */
/* spin_policy.h — how long rc_sub_poll() spins before it sleeps on the
 * fabric's wait fds, learnt from its own recent waits (net/README.md,
 * "Subscriber library", "Adaptive spinning").
 *
 * Spinning pays when the next message comes while we spin: it saves a sleep
 * and a wake-up (latency and two context switches). It does not pay when the
 * spin runs out (the CPU was burnt for nothing) or when the process is
 * preempted while it spins: then other threads want this core (eight
 * subscriber processes and the daemon on two cores), and every microsecond
 * spun is taken from the publisher that would send the data. So:
 *   - a wait that found work while spinning, without being preempted (a
 *     hit), doubles the spin of the next wait, up to the configured maximum;
 *   - a spin that ran out, or that was preempted (two polls further apart
 *     than RCI_SPIN_PREEMPTED_NS), halves it; below max / RCI_SPIN_MIN_DIV it
 *     is 0: the next waits sleep at once;
 *   - with the spin at 0, a sleep whose work came within the maximum (a spin
 *     would have caught it) starts spinning again at max / RCI_SPIN_MIN_DIV,
 *     unless the CPU is contended (below; sampled only with coalescing on).
 * One subscriber alone on a core keeps spinning the maximum (its hits come
 * within a few microseconds); subscribers that share the cores with the
 * daemon stop spinning after a few waits.
 *
 * Coalescing (with coalesce_ns > 0; off by default): a subscriber that does
 * not spin sleeps on the fds and is woken
 * by each message: two context switches per message, and the sender pays
 * for the wake-up inside its send (the kernel wakes us from the socket's
 * send path: 18 % of the daemon's publisher thread with 8 sleeping
 * subscribers). When the CPU is contended (the thread was preempted at least
 * once per RCI_SPIN_CONTENDED_WAITS waits, sampled every
 * RCI_SPIN_SAMPLE_WAITS waits from getrusage's involuntary context switches)
 * and the traffic is dense (the last wait's work came within coalesce_ns),
 * a wait with the spin at 0 first sleeps coalesce_ns on a timer, off every
 * wait queue, so that several messages are there when it polls: one wake-up
 * for all of them, none paid by the sender. Only then, if nothing came, does
 * it sleep on the fds. A subscriber with a core of its own is not preempted
 * and never coalesces.
 * The state is one subscriber's: single-threaded, no atomics. */
#ifndef RCI_SPIN_POLICY_H
#define RCI_SPIN_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* Two polls of a spin further apart than this: the process lost its CPU in
 * between (one poll without work takes 1-3 us with tcp). */
#define RCI_SPIN_PREEMPTED_NS 20000u
/* The smallest spin is max / RCI_SPIN_MIN_DIV; halving below it stops spinning. */
#define RCI_SPIN_MIN_DIV 8u
/* Contention is sampled every RCI_SPIN_SAMPLE_WAITS waits; the CPU counts
 * as contended when the thread was preempted at least once per
 * RCI_SPIN_CONTENDED_WAITS waits since the last sample. */
#define RCI_SPIN_SAMPLE_WAITS 64u
#define RCI_SPIN_CONTENDED_WAITS 16u

struct rci_spin_policy {
    uint64_t max_ns;       /* the configured spin (poll_spin_ns); 0: never spin */
    uint64_t spin_ns;      /* the next wait's spin */
    bool fixed;            /* always spin max_ns, never coalesce (poll_spin_fixed) */
    uint64_t coalesce_ns;  /* the timer sleep of a coalescing wait (poll_coalesce_ns); 0: never */
    bool contended;        /* the last sample saw the thread preempted often */
    bool dense;            /* the last wait's work came within coalesce_ns */
    bool sampled;          /* sample_nivcsw holds a sample */
    uint64_t waits;        /* waits learnt from */
    uint64_t sample_waits, sample_nivcsw; /* waits and preemptions at the last sample */
    /* Counted, for rc_sub_stats */
    uint64_t hits;         /* waits whose spin found work */
    uint64_t misses;       /* spins that ran out, then slept */
    uint64_t preempted;    /* spins during which the process lost its CPU */
    uint64_t sleeps;       /* waits that slept at once (spin 0) */
    uint64_t coalesced;    /* of those, waits that slept coalesce_ns on a timer first */
};

/* How one wait went (rci_fabric_wait_spin fills it). */
struct rci_spin_outcome {
    uint64_t spun_ns;      /* the spin the wait was given (0: it slept at once) */
    uint64_t coalesced_ns; /* the timer sleep it took first (0: none) */
    bool found;            /* work came (false: the wait timed out) */
    bool while_spinning;   /* it came during the spin */
    uint64_t after_ns;     /* from the wait's start to the work (found only) */
    uint64_t longest_gap_ns; /* the longest time between two polls of the spin */
};

void rci_spin_policy_init(struct rci_spin_policy *sp, uint64_t max_ns, uint64_t coalesce_ns, bool fixed);
/* The spin of the next wait. */
static inline uint64_t rci_spin_policy_next(const struct rci_spin_policy *sp) { return sp->spin_ns; }
/* The timer sleep the next wait takes before it sleeps on the fds: coalesce_ns
 * when it does not spin, the CPU is contended and the traffic dense; else 0. */
uint64_t rci_spin_policy_coalesce(const struct rci_spin_policy *sp);
/* Learn from one wait (see above). */
void rci_spin_policy_update(struct rci_spin_policy *sp, const struct rci_spin_outcome *o);
/* Is a contention sample due (every RCI_SPIN_SAMPLE_WAITS waits; never
 * without coalescing: coalesce_ns 0 or fixed)? */
bool rci_spin_policy_sample_due(const struct rci_spin_policy *sp);
/* Give the sample: the thread's involuntary context switches so far
 * (getrusage RUSAGE_THREAD ru_nivcsw). The first sample only sets the base. */
void rci_spin_policy_cpu_sample(struct rci_spin_policy *sp, uint64_t nivcsw);

#endif
