/* SPDX-License-Identifier: BSD-3-Clause */
/* test_spin_policy.c — net/spin_policy (rc_sub_poll's adaptive spin): hits
 * double the spin up to the maximum, misses and preempted spins halve it down
 * to 0, a quick sleep at 0 starts it again at max/8, a fixed policy only
 * counts; coalescing only with the spin at 0, a contended CPU (sampled
 * preemptions) and dense traffic; and rci_fabric_wait_spin tells the policy
 * what a wait saw (a hit, a miss, a preemption), sleeps the coalescing timer
 * and learns nothing when the first poll found work, the timeout was 0 or it
 * cut the spin short. */
#include <CUnit/CUnit.h>
#include <string.h>

#include "common/monotonic.h"
#include "net/fabric.h"
#include "net/spin_policy.h"
#include "tests/unit/cunit_main.h"

#define MAX_NS 64000u

static struct rci_spin_outcome hit(uint64_t spun, uint64_t after)
{
    return (struct rci_spin_outcome){ .spun_ns = spun, .found = true, .while_spinning = true, .after_ns = after,
                                      .longest_gap_ns = 2000 };
}

static struct rci_spin_outcome miss(uint64_t spun, bool found_later, uint64_t after)
{
    return (struct rci_spin_outcome){ .spun_ns = spun, .found = found_later, .after_ns = after,
                                      .longest_gap_ns = 2000 };
}

static struct rci_spin_outcome slept(bool found, uint64_t after)
{
    return (struct rci_spin_outcome){ .spun_ns = 0, .found = found, .after_ns = after };
}

static void test_starts_at_max_and_hits_keep_it(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 0, false);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS);
    for (int i = 0; i < 10; i++) {
        struct rci_spin_outcome o = hit(MAX_NS, 3000);
        rci_spin_policy_update(&sp, &o);
    }
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS);
    CU_ASSERT_EQUAL(sp.hits, 10);
    CU_ASSERT_EQUAL(sp.misses + sp.preempted + sp.sleeps, 0);
}

static void test_misses_halve_down_to_zero(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 0, false);
    uint64_t expect[] = { 32000, 16000, 8000, 0, 0 };   /* below MAX_NS / 8: none */
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        uint64_t spin = rci_spin_policy_next(&sp);
        struct rci_spin_outcome o = spin ? miss(spin, true, 900000) : slept(true, 900000);
        rci_spin_policy_update(&sp, &o);
        CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), expect[i]);
    }
    CU_ASSERT_EQUAL(sp.misses, 4);
    CU_ASSERT_EQUAL(sp.sleeps, 1);   /* work came long after: a spin would not have caught it */
}

static void test_preempted_spin_halves_even_when_it_found_work(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 0, false);
    struct rci_spin_outcome o = hit(MAX_NS, 40000);
    o.longest_gap_ns = RCI_SPIN_PREEMPTED_NS + 1;
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS / 2);
    CU_ASSERT_EQUAL(sp.preempted, 1);
    CU_ASSERT_EQUAL(sp.hits, 0);
    o.longest_gap_ns = RCI_SPIN_PREEMPTED_NS;   /* at the bound: still a hit */
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS);
    CU_ASSERT_EQUAL(sp.hits, 1);
}

static void test_quick_sleep_restarts_the_spin(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 0, false);
    sp.spin_ns = 0;
    struct rci_spin_outcome timed_out = slept(false, 0);
    rci_spin_policy_update(&sp, &timed_out);          /* no work at all: stays off */
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
    struct rci_spin_outcome late = slept(true, MAX_NS + 1);
    rci_spin_policy_update(&sp, &late);               /* beyond any spin: stays off */
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
    struct rci_spin_outcome quick = slept(true, MAX_NS);
    rci_spin_policy_update(&sp, &quick);              /* the maximum would have caught it */
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS / RCI_SPIN_MIN_DIV);
    uint64_t expect[] = { 16000, 32000, 64000, 64000 };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        struct rci_spin_outcome o = hit(rci_spin_policy_next(&sp), 1000);
        rci_spin_policy_update(&sp, &o);
        CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), expect[i]);
    }
    CU_ASSERT_EQUAL(sp.sleeps, 3);
}

static void test_fixed_only_counts(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 0, true);
    for (int i = 0; i < 8; i++) {
        struct rci_spin_outcome o = miss(MAX_NS, false, 0);
        rci_spin_policy_update(&sp, &o);
    }
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS);
    CU_ASSERT_EQUAL(sp.misses, 8);
}

static void test_zero_max_never_spins(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, 0, 0, false);
    struct rci_spin_outcome o = slept(true, 0);
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
}

static void test_huge_max_does_not_overflow(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, UINT64_MAX, 0, false);
    sp.spin_ns = UINT64_MAX / 2 + 1;
    struct rci_spin_outcome o = hit(sp.spin_ns, 1);
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), UINT64_MAX);
}

/* Coalescing: only with the spin at 0, the CPU contended and dense traffic. */
static void make_contended(struct rci_spin_policy *sp, uint64_t *nivcsw, bool contended)
{
    rci_spin_policy_cpu_sample(sp, *nivcsw);   /* a base (the first sample only sets it) */
    for (unsigned i = 0; i < RCI_SPIN_SAMPLE_WAITS; i++) {
        struct rci_spin_outcome o = slept(true, MAX_NS + 1);   /* dense, not quick: the spin stays 0 */
        rci_spin_policy_update(sp, &o);
    }
    CU_ASSERT_TRUE(rci_spin_policy_sample_due(sp));
    /* one preemption per RCI_SPIN_CONTENDED_WAITS waits is contended, one fewer is not */
    *nivcsw += RCI_SPIN_SAMPLE_WAITS / RCI_SPIN_CONTENDED_WAITS - (contended ? 0 : 1);
    rci_spin_policy_cpu_sample(sp, *nivcsw);
    CU_ASSERT_FALSE(rci_spin_policy_sample_due(sp));
    CU_ASSERT_EQUAL(sp->contended, contended);
}

static void test_coalesce_needs_contention_dense_traffic_and_no_spin(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 500000, false);
    uint64_t nivcsw = 12345;
    CU_ASSERT_TRUE(rci_spin_policy_sample_due(&sp));   /* no base yet */
    rci_spin_policy_cpu_sample(&sp, nivcsw);
    CU_ASSERT_FALSE(sp.contended);                      /* the base alone says nothing */
    sp.spin_ns = 0;
    make_contended(&sp, &nivcsw, false);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 0);  /* not contended */
    make_contended(&sp, &nivcsw, true);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 500000);
    /* sparse traffic: the last wait's work came later than coalesce_ns */
    struct rci_spin_outcome late = slept(true, 500001);
    rci_spin_policy_update(&sp, &late);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 0);
    struct rci_spin_outcome none = slept(false, 0);     /* a timeout: not dense either */
    rci_spin_policy_update(&sp, &none);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 0);
    /* a coalesced wait whose work was there after its timer stays dense, and
     * does not restart the spin (its work waited for the timer) */
    struct rci_spin_outcome dense = slept(true, 1000);   /* quick, but contended: no spin */
    rci_spin_policy_update(&sp, &dense);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
    struct rci_spin_outcome c = slept(true, 560000);
    c.coalesced_ns = 500000;
    rci_spin_policy_update(&sp, &c);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 500000);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
    CU_ASSERT_EQUAL(sp.coalesced, 1);
    /* not contended any more, a quick wake spins again: no coalescing while it spins */
    make_contended(&sp, &nivcsw, false);
    struct rci_spin_outcome quick = slept(true, 1000);
    rci_spin_policy_update(&sp, &quick);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), MAX_NS / RCI_SPIN_MIN_DIV);
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&sp), 0);
}

static void test_coalesce_off(void)
{
    struct rci_spin_policy fixed, zero;
    rci_spin_policy_init(&fixed, MAX_NS, 500000, true);
    rci_spin_policy_init(&zero, MAX_NS, 0, false);
    fixed.spin_ns = zero.spin_ns = 0;
    /* never sampled (no getrusage), and contended given anyway changes nothing */
    for (unsigned i = 0; i < 2 * RCI_SPIN_SAMPLE_WAITS; i++) {
        struct rci_spin_outcome o = slept(true, MAX_NS + 1);
        rci_spin_policy_update(&fixed, &o);
        rci_spin_policy_update(&zero, &o);
        CU_ASSERT_FALSE(rci_spin_policy_sample_due(&fixed));
        CU_ASSERT_FALSE(rci_spin_policy_sample_due(&zero));
    }
    fixed.contended = zero.contended = true;
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&fixed), 0);   /* poll_spin_fixed */
    CU_ASSERT_EQUAL(rci_spin_policy_coalesce(&zero), 0);    /* poll_coalesce_ns 0 */
}

/* ---- rci_fabric_wait_spin with a poll function of our own ----------------- */

struct fake_poll {
    int calls;
    int work_at;          /* the call that returns work (0: never) */
    int stall_at;         /* the call that loses the CPU for stall_ns first */
    uint64_t stall_ns;
};

static int fake_poll(void *arg)
{
    struct fake_poll *fp = arg;
    fp->calls++;
    if (fp->calls == fp->stall_at)
        rci_sleep_ns(fp->stall_ns);
    return fp->calls == fp->work_at;
}

/* A fabric without CQ or EQ: its wait only sleeps. */
static void fabric_without_queues(struct rci_fabric *f)
{
    memset(f, 0, sizeof *f);
    f->cq_fd = f->eq_fd = -1;
}

static void test_wait_spin_reports_a_hit(void)
{
    struct rci_fabric f;
    fabric_without_queues(&f);
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, 1000000000ull, 0, false);   /* a spin that outlasts any scheduling hiccup */
    struct fake_poll fp = { .work_at = 5 };
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &fp, 2000000000ull, &sp), 1);
    CU_ASSERT_EQUAL(fp.calls, 5);
    CU_ASSERT_EQUAL(sp.hits + sp.preempted, 1);   /* a loaded machine may preempt us */
    CU_ASSERT_EQUAL(sp.misses + sp.sleeps, 0);
}

static void test_wait_spin_reports_a_miss_then_sleeps(void)
{
    struct rci_fabric f;
    fabric_without_queues(&f);
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, 100000, 0, false);
    struct fake_poll fp = { 0 };
    uint64_t t0 = rci_now_ns();
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &fp, 5000000, &sp), 0);
    CU_ASSERT(rci_now_ns() - t0 >= 5000000);
    CU_ASSERT_EQUAL(sp.misses + sp.preempted, 1);
    CU_ASSERT_EQUAL(sp.hits, 0);
    CU_ASSERT(rci_spin_policy_next(&sp) == 50000);   /* halved either way */
}

static void test_wait_spin_sees_a_lost_cpu(void)
{
    struct rci_fabric f;
    fabric_without_queues(&f);
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, 1000000000ull, 0, false);
    struct fake_poll fp = { .work_at = 4, .stall_at = 3, .stall_ns = 2 * RCI_SPIN_PREEMPTED_NS };
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &fp, 2000000000ull, &sp), 1);
    CU_ASSERT_EQUAL(sp.preempted, 1);
    CU_ASSERT_EQUAL(sp.hits, 0);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 500000000ull);
}

static void test_wait_spin_learns_nothing_without_a_wait(void)
{
    struct rci_fabric f;
    fabric_without_queues(&f);
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, 1000000, 0, false);
    struct fake_poll now = { .work_at = 1 };
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &now, 1000000, &sp), 1);   /* work was there */
    struct fake_poll zero = { 0 };
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &zero, 0, &sp), 0);        /* poll(0) */
    CU_ASSERT_EQUAL(zero.calls, 1);
    struct fake_poll cut = { 0 };
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &cut, 200000, &sp), 0);    /* timeout < spin */
    CU_ASSERT_EQUAL(sp.hits + sp.misses + sp.preempted + sp.sleeps, 0);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 1000000);
}

static void test_wait_spin_coalesces(void)
{
    struct rci_fabric f;
    fabric_without_queues(&f);
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, MAX_NS, 2000000, false);
    uint64_t nivcsw = 0;
    sp.spin_ns = 0;
    make_contended(&sp, &nivcsw, true);
    struct fake_poll fp = { .work_at = 2 };   /* the poll after the timer finds work */
    uint64_t t0 = rci_now_ns();
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &fp, 100000000ull, &sp), 1);
    CU_ASSERT(rci_now_ns() - t0 >= 2000000);   /* it slept the timer, not on fds */
    CU_ASSERT_EQUAL(fp.calls, 2);
    CU_ASSERT_EQUAL(sp.coalesced, 1);
    struct fake_poll cut = { .work_at = 2 };  /* a timeout shorter than the timer: no timer */
    CU_ASSERT_EQUAL(rci_fabric_wait_spin(&f, fake_poll, &cut, 1000000, &sp), 1);
    CU_ASSERT_EQUAL(sp.coalesced, 1);
}

static void register_tests(void)
{
    RCI_SUITE("spin_policy", {"starts at max, hits keep it", test_starts_at_max_and_hits_keep_it},
              {"misses halve down to zero", test_misses_halve_down_to_zero},
              {"preempted spin halves", test_preempted_spin_halves_even_when_it_found_work},
              {"quick sleep restarts the spin", test_quick_sleep_restarts_the_spin},
              {"fixed only counts", test_fixed_only_counts}, {"zero max never spins", test_zero_max_never_spins},
              {"huge max does not overflow", test_huge_max_does_not_overflow},
              {"coalesce needs contention, dense traffic, no spin",
               test_coalesce_needs_contention_dense_traffic_and_no_spin},
              {"coalesce off", test_coalesce_off});
    RCI_SUITE("fabric_wait_spin", {"a hit", test_wait_spin_reports_a_hit},
              {"a miss, then sleeps", test_wait_spin_reports_a_miss_then_sleeps},
              {"a lost CPU", test_wait_spin_sees_a_lost_cpu},
              {"nothing learnt without a wait", test_wait_spin_learns_nothing_without_a_wait},
              {"coalesces", test_wait_spin_coalesces});
}

RCI_CUNIT_MAIN(register_tests)
