/* SPDX-License-Identifier: BSD-3-Clause */
/* spin_policy.c — the subscriber's adaptive spin (spin_policy.h says the rule). */
#include "net/spin_policy.h"

void rci_spin_policy_init(struct rci_spin_policy *sp, uint64_t max_ns, uint64_t coalesce_ns, bool fixed)
{
    *sp = (struct rci_spin_policy){ .max_ns = max_ns, .spin_ns = max_ns, .fixed = fixed,
                                    .coalesce_ns = coalesce_ns };
}

uint64_t rci_spin_policy_coalesce(const struct rci_spin_policy *sp)
{
    return !sp->fixed && sp->spin_ns == 0 && sp->contended && sp->dense ? sp->coalesce_ns : 0;
}

bool rci_spin_policy_sample_due(const struct rci_spin_policy *sp)
{
    /* Without coalescing the verdict is not needed: no syscall for it. */
    return sp->coalesce_ns > 0 && !sp->fixed &&
           (!sp->sampled || sp->waits - sp->sample_waits >= RCI_SPIN_SAMPLE_WAITS);
}

void rci_spin_policy_cpu_sample(struct rci_spin_policy *sp, uint64_t nivcsw)
{
    if (sp->sampled) {
        uint64_t waits = sp->waits - sp->sample_waits, preempted = nivcsw - sp->sample_nivcsw;
        sp->contended = nivcsw >= sp->sample_nivcsw && waits > 0 &&
                        preempted * RCI_SPIN_CONTENDED_WAITS >= waits;
    }
    sp->sampled = true;
    sp->sample_waits = sp->waits;
    sp->sample_nivcsw = nivcsw;
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
    sp->waits++;
    /* Dense: the work came within coalesce_ns of the wait's start, or of the
     * end of its timer sleep. */
    sp->dense = o->found && o->after_ns <= sp->coalesce_ns + o->coalesced_ns;
    if (o->spun_ns == 0) {
        /* Slept at once: had a spin of the maximum caught the work? (Not
         * known after a timer sleep: the work waited for the timer. And on a
         * contended CPU a spin would take the core from someone else.) */
        sp->sleeps++;
        sp->coalesced += o->coalesced_ns > 0;
        if (adapt && o->found && o->after_ns <= sp->max_ns && sp->spin_ns == 0 && o->coalesced_ns == 0 &&
            !sp->contended)
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
