/* SPDX-License-Identifier: BSD-3-Clause */
/* test_sub_table.c — the subscription table: set semantics of add / remove /
 * remove_subscriber over single tags, narrow and wide ranges and "all";
 * dedupe; limits and refusals; and readers racing with the updater, checked
 * against a per-(tag, subscriber) sequence counter (see the concurrency
 * section). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/urcu-memb.h>

#include "pipeline/sub_table.h"
#include "tests/unit/cunit_main.h"

#define ALL_FIRST 0ull
#define ALL_LAST  UINT64_MAX
#define MAX_OUT   64u

static struct rci_sub_table *make_table(uint32_t max_per_tag, uint32_t max_ranges, uint64_t exact_limit)
{
    rci_sub_table_register_thread();
    struct rci_sub_table_params p = {
        .max_subs_per_tag = max_per_tag, .max_ranges = max_ranges, .exact_limit = exact_limit};
    struct rci_sub_table *t = NULL;
    char err[160] = "";
    CU_ASSERT_EQUAL_FATAL(rci_sub_table_create(&p, &t, err, sizeof err), 0);
    return t;
}

/* The subscribers of tag as a bit set (ids < 64); a duplicate or an id out
 * of range fails the test. */
static uint64_t subs_of(struct rci_sub_table *t, uint64_t tag)
{
    uint32_t out[MAX_OUT];
    unsigned n = rci_sub_table_lookup(t, tag, out, MAX_OUT);
    CU_ASSERT_FATAL(n <= MAX_OUT);
    uint64_t set = 0;
    for (unsigned i = 0; i < n; i++) {
        CU_ASSERT_FATAL(out[i] < 64);
        CU_ASSERT((set & (1ull << out[i])) == 0);
        set |= 1ull << out[i];
    }
    return set;
}

#define BIT(id) (1ull << (id))

static struct rci_sub_table_stats stats_of(struct rci_sub_table *t)
{
    struct rci_sub_table_stats s;
    rci_sub_table_get_stats(t, &s);
    return s;
}

static void test_create_validates_params(void)
{
    rci_sub_table_register_thread();
    struct rci_sub_table *t = (struct rci_sub_table *)1;
    char err[160] = "";
    struct rci_sub_table_params p = {.exact_limit = (uint64_t)RCI_SUB_TABLE_MAX_LIMIT + 1};
    CU_ASSERT_EQUAL(rci_sub_table_create(&p, &t, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "exact_limit"));
    CU_ASSERT_EQUAL_FATAL(rci_sub_table_create(NULL, &t, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rci_sub_table_max_result(t),
                    RCI_SUB_TABLE_DEFAULT_MAX_PER_TAG + RCI_SUB_TABLE_DEFAULT_MAX_RANGES);
    rci_sub_table_destroy(t);
}

static void test_single_tags(void)
{
    struct rci_sub_table *t = make_table(0, 0, 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 5, 5), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 2, 5, 5), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 6, 6), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 5, 5), 0);         /* again: no change */
    CU_ASSERT_EQUAL(subs_of(t, 5), BIT(1) | BIT(2));
    CU_ASSERT_EQUAL(subs_of(t, 6), BIT(1));
    CU_ASSERT_EQUAL(subs_of(t, 7), 0);
    CU_ASSERT_EQUAL(stats_of(t).exact_tags, 2);
    CU_ASSERT_EQUAL(stats_of(t).exact_entries, 3);

    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 1, 5, 5), 0);
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 3, 5, 5), 0);      /* never there: no change */
    CU_ASSERT_EQUAL(subs_of(t, 5), BIT(2));
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 2, 5, 5), 0);
    CU_ASSERT_EQUAL(subs_of(t, 5), 0);
    CU_ASSERT_EQUAL(stats_of(t).exact_tags, 1);
    CU_ASSERT_EQUAL(stats_of(t).exact_entries, 1);
    CU_ASSERT_EQUAL(stats_of(t).adds, 4);
    CU_ASSERT_EQUAL(stats_of(t).removes, 3);
    rci_sub_table_destroy(t);
}

static void test_narrow_ranges(void)
{
    struct rci_sub_table *t = make_table(0, 0, 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 3, 100, 199), 0);
    for (uint64_t tag = 100; tag <= 199; tag++)
        CU_ASSERT_EQUAL(subs_of(t, tag), BIT(3));
    CU_ASSERT_EQUAL(subs_of(t, 99), 0);
    CU_ASSERT_EQUAL(subs_of(t, 200), 0);
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 3, 150, 160), 0);
    CU_ASSERT_EQUAL(subs_of(t, 149), BIT(3));
    CU_ASSERT_EQUAL(subs_of(t, 150), 0);
    CU_ASSERT_EQUAL(subs_of(t, 160), 0);
    CU_ASSERT_EQUAL(subs_of(t, 161), BIT(3));
    CU_ASSERT_EQUAL(stats_of(t).exact_tags, 89);
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 0);
    /* Tags at the top of the 64-bit space do not wrap around. */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 4, UINT64_MAX - 2, UINT64_MAX), 0);
    CU_ASSERT_EQUAL(subs_of(t, UINT64_MAX), BIT(4));
    CU_ASSERT_EQUAL(subs_of(t, 0), 0);
    rci_sub_table_destroy(t);
}

/* exact_limit 16: ranges of 17 tags and more are wide entries. */
static void test_wide_ranges_and_all(void)
{
    struct rci_sub_table *t = make_table(0, 0, 16);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 4, 0, 999), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 5, ALL_FIRST, ALL_LAST), 0);
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 2);
    CU_ASSERT_EQUAL(stats_of(t).exact_tags, 0);
    CU_ASSERT_EQUAL(subs_of(t, 0), BIT(4) | BIT(5));
    CU_ASSERT_EQUAL(subs_of(t, 999), BIT(4) | BIT(5));
    CU_ASSERT_EQUAL(subs_of(t, 1000), BIT(5));
    CU_ASSERT_EQUAL(subs_of(t, UINT64_MAX), BIT(5));

    /* A narrow remove cuts a hole into "all": the entry splits in two. */
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 5, 10, 20), 0);
    CU_ASSERT_EQUAL(subs_of(t, 9), BIT(4) | BIT(5));
    CU_ASSERT_EQUAL(subs_of(t, 10), BIT(4));
    CU_ASSERT_EQUAL(subs_of(t, 20), BIT(4));
    CU_ASSERT_EQUAL(subs_of(t, 21), BIT(4) | BIT(5));
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 3);
    /* Trim both ends. */
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 5, 0, 0), 0);
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 5, UINT64_MAX, UINT64_MAX), 0);
    CU_ASSERT_EQUAL(subs_of(t, 0), BIT(4));
    CU_ASSERT_EQUAL(subs_of(t, 1), BIT(4) | BIT(5));
    CU_ASSERT_EQUAL(subs_of(t, UINT64_MAX), 0);
    CU_ASSERT_EQUAL(subs_of(t, UINT64_MAX - 1), BIT(5));

    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 4, ALL_FIRST, ALL_LAST), 0);
    CU_ASSERT_EQUAL(subs_of(t, 500), BIT(5));
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 2);
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 5, ALL_FIRST, ALL_LAST), 0);
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 0);
    CU_ASSERT_EQUAL(subs_of(t, 500), 0);
    rci_sub_table_destroy(t);
}

static void test_overlapping_ranges_merge(void)
{
    struct rci_sub_table *t = make_table(0, 0, 16);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 0, 99), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 50, 199), 0);     /* overlaps */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 200, 299), 0);    /* adjacent */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 1000, 1099), 0);  /* separate */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 7, 0, 99), 0);       /* other subscriber: kept apart */
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 3);
    CU_ASSERT_EQUAL(subs_of(t, 250), BIT(6));
    CU_ASSERT_EQUAL(subs_of(t, 50), BIT(6) | BIT(7));
    CU_ASSERT_EQUAL(subs_of(t, 500), 0);
    /* Bridging the gap merges everything of subscriber 6 into one entry. */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 300, 999), 0);
    CU_ASSERT_EQUAL(stats_of(t).range_entries, 2);
    CU_ASSERT_EQUAL(subs_of(t, 500), BIT(6));
    /* Overlapping narrow and wide subscriptions of the same subscriber. */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 6, 40, 45), 0);
    CU_ASSERT_EQUAL(subs_of(t, 42), BIT(6) | BIT(7));
    rci_sub_table_destroy(t);
}

static void test_exact_and_range_dedupe(void)
{
    struct rci_sub_table *t = make_table(0, 0, 16);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 7, 5, 5), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 7, 0, 1000), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 8, 5, 5), 0);
    uint32_t out[4];
    CU_ASSERT_EQUAL(rci_sub_table_lookup(t, 5, out, 4), 2);   /* 7 once, 8 once */
    CU_ASSERT_EQUAL(subs_of(t, 5), BIT(7) | BIT(8));
    /* Removing tag 5 removes it from both places. */
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 7, 5, 5), 0);
    CU_ASSERT_EQUAL(subs_of(t, 5), BIT(8));
    CU_ASSERT_EQUAL(subs_of(t, 6), BIT(7));
    rci_sub_table_destroy(t);
}

static void test_remove_subscriber(void)
{
    struct rci_sub_table *t = make_table(0, 0, 16);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 8, 1, 1), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 8, 30, 39), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 8, 1000, 5000), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 8, 1ull << 40, ALL_LAST), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 9, 1, 1), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 9, 2000, 3000), 0);
    CU_ASSERT_EQUAL(rci_sub_table_remove_subscriber(t, 8), 0);
    CU_ASSERT_EQUAL(subs_of(t, 1), BIT(9));
    CU_ASSERT_EQUAL(subs_of(t, 35), 0);
    CU_ASSERT_EQUAL(subs_of(t, 2500), BIT(9));
    CU_ASSERT_EQUAL(subs_of(t, 1ull << 50), 0);
    struct rci_sub_table_stats s = stats_of(t);
    CU_ASSERT_EQUAL(s.exact_tags, 1);
    CU_ASSERT_EQUAL(s.exact_entries, 1);
    CU_ASSERT_EQUAL(s.range_entries, 1);
    CU_ASSERT_EQUAL(s.subscriber_removals, 1);
    CU_ASSERT_EQUAL(rci_sub_table_remove_subscriber(t, 8), 0);   /* nothing left: still fine */
    rci_sub_table_destroy(t);
}

static void test_limits_refuse_whole_update(void)
{
    struct rci_sub_table *t = make_table(2, 2, 16);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 10, 10), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 2, 10, 10), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 3, 10, 10), -ENOSPC);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 10, 10), 0);          /* already there */
    /* A range touching the full tag is refused as a whole. */
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 3, 5, 15), -ENOSPC);
    CU_ASSERT_EQUAL(subs_of(t, 5), 0);
    CU_ASSERT_EQUAL(subs_of(t, 15), 0);
    CU_ASSERT_EQUAL(stats_of(t).refused_tag_full, 2);

    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 1000, 1999), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 2, 1000, 1999), 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 3, 1000, 1999), -ENOSPC);
    /* A hole would split subscriber 1's entry: three entries > max 2. */
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 1, 1500, 1500), -ENOSPC);
    CU_ASSERT_EQUAL(subs_of(t, 1500), BIT(1) | BIT(2));
    /* Trimming an end keeps the count: allowed. */
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 1, 1000, 1000), 0);
    CU_ASSERT_EQUAL(subs_of(t, 1000), BIT(2));
    CU_ASSERT_EQUAL(stats_of(t).refused_ranges_full, 2);

    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 20, 19), -EINVAL);
    CU_ASSERT_EQUAL(rci_sub_table_remove(t, 1, 20, 19), -EINVAL);
    CU_ASSERT_EQUAL(stats_of(t).refused_bad_args, 2);

    /* A lookup with a small max reports how many there are. */
    uint32_t out[2] = {77, 77};
    CU_ASSERT_EQUAL(rci_sub_table_lookup(t, 1500, out, 1), 2);
    CU_ASSERT_EQUAL(out[1], 77);                                  /* nothing past max */
    CU_ASSERT(out[0] == 1 || out[0] == 2);
    CU_ASSERT_EQUAL(stats_of(t).lookups_truncated, 1);
    rci_sub_table_destroy(t);
}

struct unregistered_call {
    struct rci_sub_table *t;
    unsigned found;
    int add_rc;
};

static void *call_unregistered(void *p)
{
    struct unregistered_call *c = p;
    uint32_t out[4];
    c->found = rci_sub_table_lookup(c->t, 1, out, 4);
    c->add_rc = rci_sub_table_add(c->t, 2, 1, 1);
    return NULL;
}

static void test_unregistered_thread_refused(void)
{
    struct rci_sub_table *t = make_table(0, 0, 0);
    CU_ASSERT_EQUAL(rci_sub_table_add(t, 1, 1, 1), 0);
    struct unregistered_call c = {.t = t};
    pthread_t tid;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, call_unregistered, &c), 0);
    pthread_join(tid, NULL);
    CU_ASSERT_EQUAL(c.found, 0);
    CU_ASSERT_EQUAL(c.add_rc, -EPERM);
    CU_ASSERT_EQUAL(stats_of(t).refused_unregistered, 2);
    CU_ASSERT_EQUAL(subs_of(t, 1), BIT(1));
    rci_sub_table_destroy(t);
}

static void test_old_versions_freed_after_grace_period(void)
{
    struct rci_sub_table *t = make_table(0, 0, 16);
    for (uint32_t i = 0; i < 100; i++) {
        CU_ASSERT_EQUAL(rci_sub_table_add(t, i % 8, i, i + 3), 0);
        CU_ASSERT_EQUAL(rci_sub_table_add(t, i % 8, 0, 1000 + i), 0);
    }
    urcu_memb_barrier();   /* every call_rcu so far has run */
    CU_ASSERT_EQUAL(stats_of(t).frees_pending, 0);
    rci_sub_table_destroy(t);
}

/* ---- concurrency -----------------------------------------------------
 * Invariant checked: for every (tag, subscriber) pair the updater keeps a
 * sequence number, made odd before it changes the pair and even after the
 * change is published, and the pair's state in between. A reader takes the
 * sequence, the state, the lookup, then the sequence again: if the sequence
 * was even and unchanged, the pair did not change during the lookup, so the
 * lookup must report exactly that state. Otherwise either answer is a state
 * the pair had during the lookup. Ids must also be valid (freed versions are
 * poisoned) and unique. */

#define C_SUBS       8u
#define C_TAGS       17u           /* tags 0..15 and BIG */
#define C_BIG        (1ull << 40)
#define C_READERS    2u
#define C_SECONDS    1.0

struct shared_state {
    struct rci_sub_table *t;
    _Atomic uint64_t seq[C_TAGS][C_SUBS];
    atomic_bool subscribed[C_TAGS][C_SUBS];
    atomic_bool stop;
};

struct reader_result {
    struct shared_state *s;
    unsigned seed;
    uint64_t lookups, checked, bad_ids, duplicates, too_many, violations;
};

static uint64_t tag_value(unsigned i)
{
    return i < C_TAGS - 1 ? i : C_BIG;
}

static void check_one_lookup(struct reader_result *r, unsigned ti)
{
    struct shared_state *s = r->s;
    uint64_t before[C_SUBS];
    bool state[C_SUBS];
    for (unsigned j = 0; j < C_SUBS; j++) {
        before[j] = atomic_load_explicit(&s->seq[ti][j], memory_order_acquire);
        state[j] = atomic_load_explicit(&s->subscribed[ti][j], memory_order_acquire);
    }
    uint32_t out[2 * C_SUBS];
    unsigned n = rci_sub_table_lookup(s->t, tag_value(ti), out, 2 * C_SUBS);
    atomic_thread_fence(memory_order_acquire);
    bool seen[C_SUBS] = {false};
    r->too_many += n > C_SUBS;
    for (unsigned i = 0; i < n && i < 2 * C_SUBS; i++) {
        if (out[i] >= C_SUBS) {
            r->bad_ids++;
            continue;
        }
        r->duplicates += seen[out[i]];
        seen[out[i]] = true;
    }
    for (unsigned j = 0; j < C_SUBS; j++) {
        uint64_t after = atomic_load_explicit(&s->seq[ti][j], memory_order_acquire);
        if (after != before[j] || (before[j] & 1))
            continue;   /* changed during the lookup: both answers are states it had */
        r->checked++;
        r->violations += seen[j] != state[j];
    }
    r->lookups++;
}

static void *reader(void *p)
{
    struct reader_result *r = p;
    rci_sub_table_register_thread();
    while (!atomic_load_explicit(&r->s->stop, memory_order_relaxed))
        check_one_lookup(r, (unsigned)rand_r(&r->seed) % C_TAGS);
    rci_sub_table_unregister_thread();
    return NULL;
}

/* Mark every tracked pair of (sub, [first,last]) as changing (odd) or done (even). */
static void bump_pairs(struct shared_state *s, uint32_t sub, uint64_t first, uint64_t last)
{
    for (unsigned i = 0; i < C_TAGS; i++)
        if (tag_value(i) >= first && tag_value(i) <= last)
            atomic_fetch_add(&s->seq[i][sub], 1);
}

static void set_pairs(struct shared_state *s, uint32_t sub, uint64_t first, uint64_t last, bool on)
{
    for (unsigned i = 0; i < C_TAGS; i++)
        if (tag_value(i) >= first && tag_value(i) <= last)
            atomic_store(&s->subscribed[i][sub], on);
}

/* One random update; returns its result code. Ranges: narrow and wide
 * within 0..15 (exact_limit is 4), up to BIG and beyond, and "all". */
static int random_update(struct shared_state *s, unsigned *seed)
{
    uint32_t sub = (uint32_t)rand_r(seed) % C_SUBS;
    unsigned kind = (unsigned)rand_r(seed) % 100;
    uint64_t first = (uint64_t)rand_r(seed) % 16, last = first + (uint64_t)rand_r(seed) % (16 - first);
    if (kind % 10 == 0)
        last = C_BIG + (uint64_t)rand_r(seed) % 3;          /* wide, through BIG */
    if (kind % 25 == 1) {
        first = ALL_FIRST;
        last = ALL_LAST;
    }
    bool remove = kind >= 50;
    bool whole = kind >= 95;
    if (whole) {
        first = ALL_FIRST;
        last = ALL_LAST;
    }
    bump_pairs(s, sub, first, last);
    int rc = whole ? rci_sub_table_remove_subscriber(s->t, sub)
         : remove ? rci_sub_table_remove(s->t, sub, first, last)
                  : rci_sub_table_add(s->t, sub, first, last);
    if (rc == 0)
        set_pairs(s, sub, first, last, !remove);
    bump_pairs(s, sub, first, last);
    return rc;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_readers_see_consistent_snapshots(void)
{
    struct shared_state *s = calloc(1, sizeof *s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    s->t = make_table(C_SUBS, 1024, 4);
    struct reader_result r[C_READERS];
    pthread_t tid[C_READERS];
    for (unsigned i = 0; i < C_READERS; i++) {
        r[i] = (struct reader_result){.s = s, .seed = 1000 + i};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, reader, &r[i]), 0);
    }
    unsigned seed = 42;
    uint64_t updates = 0, failed = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (seconds_since(&t0) < C_SECONDS) {
        for (int i = 0; i < 64; i++, updates++)
            failed += random_update(s, &seed) != 0;
    }
    atomic_store(&s->stop, true);
    uint64_t lookups = 0, checked = 0;
    for (unsigned i = 0; i < C_READERS; i++) {
        pthread_join(tid[i], NULL);
        CU_ASSERT_EQUAL(r[i].bad_ids, 0);
        CU_ASSERT_EQUAL(r[i].duplicates, 0);
        CU_ASSERT_EQUAL(r[i].too_many, 0);
        CU_ASSERT_EQUAL(r[i].violations, 0);
        lookups += r[i].lookups;
        checked += r[i].checked;
    }
    CU_ASSERT_EQUAL(failed, 0);
    CU_ASSERT(updates > 1000);
    CU_ASSERT(lookups > 1000);
    CU_ASSERT(checked > lookups);   /* most pairs are stable during a lookup */
    /* Final state: the table agrees with the model everywhere. */
    for (unsigned i = 0; i < C_TAGS; i++) {
        uint64_t want = 0;
        for (unsigned j = 0; j < C_SUBS; j++)
            want |= atomic_load(&s->subscribed[i][j]) ? BIT(j) : 0;
        CU_ASSERT_EQUAL(subs_of(s->t, tag_value(i)), want);
    }
    rci_sub_table_destroy(s->t);
    free(s);
}

/* Two threads updating at once: the second is turned away with -EBUSY
 * (counted), never both inside. Each thread owns one subscriber and keeps a
 * model of its successful calls; the table must end equal to both models. */
#define U_TAGS 64u

struct updater_run {
    struct rci_sub_table *t;
    uint32_t sub;
    unsigned seed;
    bool model[U_TAGS];
    uint64_t calls, busy, other_errors;
    atomic_bool *stop;
};

static void *updater(void *p)
{
    struct updater_run *u = p;
    rci_sub_table_register_thread();
    while (!atomic_load(u->stop)) {
        uint64_t first = (uint64_t)rand_r(&u->seed) % U_TAGS;
        uint64_t last = first + (uint64_t)rand_r(&u->seed) % (U_TAGS - first);
        bool add = rand_r(&u->seed) % 2;
        int rc = add ? rci_sub_table_add(u->t, u->sub, first, last)
                     : rci_sub_table_remove(u->t, u->sub, first, last);
        u->calls++;
        if (rc == -EBUSY)
            u->busy++;
        else if (rc != 0)
            u->other_errors++;
        else
            for (uint64_t tag = first; tag <= last; tag++)
                u->model[tag] = add;
    }
    rci_sub_table_unregister_thread();
    return NULL;
}

static void test_second_updater_turned_away(void)
{
    struct rci_sub_table *t = make_table(0, 0, 8);
    atomic_bool stop = false;
    struct updater_run u[2] = {{.t = t, .sub = 1, .seed = 5, .stop = &stop},
                               {.t = t, .sub = 2, .seed = 6, .stop = &stop}};
    pthread_t tid[2];
    for (unsigned i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, updater, &u[i]), 0);
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    atomic_store(&stop, true);
    for (unsigned i = 0; i < 2; i++) {
        pthread_join(tid[i], NULL);
        CU_ASSERT_EQUAL(u[i].other_errors, 0);
        CU_ASSERT(u[i].calls > u[i].busy);
    }
    CU_ASSERT_EQUAL(stats_of(t).refused_busy, u[0].busy + u[1].busy);
    for (uint64_t tag = 0; tag < U_TAGS; tag++)
        CU_ASSERT_EQUAL(subs_of(t, tag), (u[0].model[tag] ? BIT(1) : 0) | (u[1].model[tag] ? BIT(2) : 0));
    rci_sub_table_destroy(t);
}

static void register_tests(void)
{
    RCI_SUITE("sub_table",
             {"create validates parameters", test_create_validates_params},
             {"single tags", test_single_tags},
             {"narrow ranges", test_narrow_ranges},
             {"wide ranges and all", test_wide_ranges_and_all},
             {"overlapping ranges merge", test_overlapping_ranges_merge},
             {"exact and range dedupe", test_exact_and_range_dedupe},
             {"remove_subscriber", test_remove_subscriber},
             {"limits refuse the whole update", test_limits_refuse_whole_update},
             {"unregistered thread refused", test_unregistered_thread_refused},
             {"old versions freed after a grace period", test_old_versions_freed_after_grace_period},
             {"second updater turned away", test_second_updater_turned_away},
             {"2 readers vs updater: consistent snapshots", test_readers_see_consistent_snapshots});
}

RCI_CUNIT_MAIN(register_tests)
