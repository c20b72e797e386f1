/* SPDX-License-Identifier: BSD-3-Clause */
/* test_spin_policy.c — net/spin_policy (rc_sub_poll's adaptive spin): hits
 * double the spin up to the maximum, misses and preempted spins halve it down
 * to 0, a quick sleep at 0 starts it again at max/8, a fixed policy only
 * counts; and rci_fabric_wait_spin tells the policy what a wait saw (a hit,
 * a miss, a preemption) and nothing when the first poll found work, the
 * timeout was 0 or it cut the spin short. */
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
    rci_spin_policy_init(&sp, MAX_NS, false);
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
    rci_spin_policy_init(&sp, MAX_NS, false);
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
    rci_spin_policy_init(&sp, MAX_NS, false);
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
    rci_spin_policy_init(&sp, MAX_NS, false);
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
    rci_spin_policy_init(&sp, MAX_NS, true);
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
    rci_spin_policy_init(&sp, 0, false);
    struct rci_spin_outcome o = slept(true, 0);
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), 0);
}

static void test_huge_max_does_not_overflow(void)
{
    struct rci_spin_policy sp;
    rci_spin_policy_init(&sp, UINT64_MAX, false);
    sp.spin_ns = UINT64_MAX / 2 + 1;
    struct rci_spin_outcome o = hit(sp.spin_ns, 1);
    rci_spin_policy_update(&sp, &o);
    CU_ASSERT_EQUAL(rci_spin_policy_next(&sp), UINT64_MAX);
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
    rci_spin_policy_init(&sp, 1000000000ull, false);   /* a spin that outlasts any scheduling hiccup */
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
    rci_spin_policy_init(&sp, 100000, false);
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
    rci_spin_policy_init(&sp, 1000000000ull, false);
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
    rci_spin_policy_init(&sp, 1000000, false);
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

static void register_tests(void)
{
    RCI_SUITE("spin_policy", {"starts at max, hits keep it", test_starts_at_max_and_hits_keep_it},
              {"misses halve down to zero", test_misses_halve_down_to_zero},
              {"preempted spin halves", test_preempted_spin_halves_even_when_it_found_work},
              {"quick sleep restarts the spin", test_quick_sleep_restarts_the_spin},
              {"fixed only counts", test_fixed_only_counts}, {"zero max never spins", test_zero_max_never_spins},
              {"huge max does not overflow", test_huge_max_does_not_overflow});
    RCI_SUITE("fabric_wait_spin", {"a hit", test_wait_spin_reports_a_hit},
              {"a miss, then sleeps", test_wait_spin_reports_a_miss_then_sleeps},
              {"a lost CPU", test_wait_spin_sees_a_lost_cpu},
              {"nothing learnt without a wait", test_wait_spin_learns_nothing_without_a_wait});
}

RCI_CUNIT_MAIN(register_tests)
