/* SPDX-License-Identifier: BSD-3-Clause */
/* spin_policy.c — the subscriber's adaptive spin (spin_policy.h says the rule). */
#include "net/spin_policy.h"

void rci_spin_policy_init(struct rci_spin_policy *sp, uint64_t max_ns, bool fixed)
{
    *sp = (struct rci_spin_policy){ .max_ns = max_ns, .spin_ns = max_ns, .fixed = fixed };
}

static uint64_t min_spin(const struct rci_spin_policy *sp) { return sp->max_ns / RCI_SPIN_MIN_DIV; }

static void grow(struct rci_spin_policy *sp)
{
    if (sp->spin_ns == 0)
        sp->spin_ns = min_spin(sp);
    else
        sp->spin_ns = sp->spin_ns > sp->max_ns / 2 ? sp->max_ns : sp->spin_ns * 2;
}

static void shrink(struct rci_spin_policy *sp)
{
    uint64_t next = sp->spin_ns / 2;
    sp->spin_ns = next >= min_spin(sp) && next > 0 ? next : 0;
}

void rci_spin_policy_update(struct rci_spin_policy *sp, const struct rci_spin_outcome *o)
{
    bool adapt = !sp->fixed;
    if (o->spun_ns == 0) {
        /* Slept at once: had a spin of the maximum caught the work? */
        sp->sleeps++;
        if (adapt && o->found && o->after_ns <= sp->max_ns && sp->spin_ns == 0)
            grow(sp);
    } else if (o->longest_gap_ns > RCI_SPIN_PREEMPTED_NS) {
        /* Lost the CPU while spinning: someone else wants this core. */
        sp->preempted++;
        if (adapt)
            shrink(sp);
    } else if (o->found && o->while_spinning) {
        sp->hits++;
        if (adapt)
            grow(sp);
    } else {
        sp->misses++;
        if (adapt)
            shrink(sp);
    }
}
