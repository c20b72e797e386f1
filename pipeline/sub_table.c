/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_table.c — subscription table on liburcu (memb flavour): a cds_lfht of
 * immutable per-tag id arrays plus one RCU-published array of wide ranges.
 * See sub_table.h for the contract and the costs.
 *
 * _LGPL_SOURCE: liburcu's read-side lock and unlock (and rcu_dereference)
 * are inlined into rci_sub_table_lookup() instead of being calls into
 * liburcu-memb, on the per-chunk path. liburcu allows it for LGPL-compatible
 * code (BSD-3-Clause is); the library must still be linked (the Makefile's
 * -lurcu-memb), and the inlined code follows the headers' version of
 * liburcu's reader state, so this file must be built against headers of the
 * installed library's major version (a distribution package does). Only
 * this file defines it: nothing else of ours calls into liburcu per chunk. */
#define _LGPL_SOURCE
#include "pipeline/sub_table.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#include "common/counter.h"
#include "common/errbuf.h"

/* Written over ids before a retired version is freed: a reader that outlived
 * the grace period (a bug) then reports an impossible id instead of a
 * plausible one, which tests catch even without a sanitizer. */
#define POISON_ID 0xdeadbeefu

struct tag_node {
    struct cds_lfht_node lfht;
    struct rcu_head rcu;
    struct rci_sub_table *owner;   /* for the free callback's counter */
    uint64_t tag;
    uint32_t count;
    uint32_t ids[];               /* sorted, unique; never changed once published */
};

struct range_entry {
    uint64_t first, last;
    uint32_t sub_id;
};

struct range_set {
    struct rcu_head rcu;
    struct rci_sub_table *owner;
    uint32_t count;
    struct range_entry e[];       /* never changed once published */
};

/* One change to the hash table, prepared before anything is published.
 * old == NULL: insert new_node; new_node == NULL: delete old. */
struct plan_step {
    struct tag_node *old, *new_node;
};

struct rci_sub_table {
    struct cds_lfht *ht;
    struct range_set *ranges;     /* RCU-published; NULL when empty */
    uint32_t max_per_tag, max_ranges;
    uint64_t exact_limit;
    atomic_flag updating;
    /* Updater-only scratch, reused between updates. */
    struct plan_step *plan;
    size_t plan_len, plan_cap;
    /* Counters: updater fields are relaxed atomics so get_stats may read
     * them from any thread. */
    rci_shared_counter adds, removes, subscriber_removals;
    rci_shared_counter refused_tag_full, refused_ranges_full, refused_nomem, refused_bad_args,
        refused_busy, refused_unregistered, lookups_truncated;
    /* Gauges (go up and down), not counters. */
    _Atomic uint64_t exact_tags, exact_entries, range_entries, frees_pending;
};

/* Set by rci_sub_table_register_thread: liburcu offers no "am I registered"
 * query, and registering twice corrupts its reader list. */
static __thread bool thread_registered;

static void gauge_add(_Atomic uint64_t *c, int64_t delta)
{
    atomic_fetch_add_explicit(c, (uint64_t)delta, memory_order_relaxed);
}

/* splitmix64's finaliser: cds_lfht orders buckets by the reversed hash, so
 * every bit must depend on every tag bit (tags differ in their low bits). */
static unsigned long hash_tag(uint64_t tag)
{
    tag ^= tag >> 30;
    tag *= 0xbf58476d1ce4e5b9ull;
    tag ^= tag >> 27;
    tag *= 0x94d049bb133111ebull;
    tag ^= tag >> 31;
    return (unsigned long)tag;
}

static int match_tag(struct cds_lfht_node *node, const void *key)
{
    const struct tag_node *n = caa_container_of(node, struct tag_node, lfht);
    return n->tag == *(const uint64_t *)key;
}

/* Caller holds the read lock. */
static struct tag_node *find_node(struct rci_sub_table *t, uint64_t tag)
{
    struct cds_lfht_iter iter;
    cds_lfht_lookup(t->ht, hash_tag(tag), match_tag, &tag, &iter);
    struct cds_lfht_node *node = cds_lfht_iter_get_node(&iter);
    return node ? caa_container_of(node, struct tag_node, lfht) : NULL;
}

static bool node_has(const struct tag_node *n, uint32_t sub_id)
{
    uint32_t lo = 0, hi = n->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (n->ids[mid] == sub_id)
            return true;
        if (n->ids[mid] < sub_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* ---- retiring old versions after a grace period ----------------------- */

static void poison_ids(uint32_t *ids, uint32_t n)
{
    /* volatile: a store right before free() is otherwise removed as dead. */
    volatile uint32_t *v = ids;
    for (uint32_t i = 0; i < n; i++)
        v[i] = POISON_ID;
}

static void free_node_rcu(struct rcu_head *head)
{
    struct tag_node *n = caa_container_of(head, struct tag_node, rcu);
    atomic_fetch_sub_explicit(&n->owner->frees_pending, 1, memory_order_relaxed);
    poison_ids(n->ids, n->count);
    free(n);
}

static void free_ranges_rcu(struct rcu_head *head)
{
    struct range_set *rs = caa_container_of(head, struct range_set, rcu);
    atomic_fetch_sub_explicit(&rs->owner->frees_pending, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < rs->count; i++)
        poison_ids(&rs->e[i].sub_id, 1);
    free(rs);
}

static void retire_node(struct rci_sub_table *t, struct tag_node *n)
{
    gauge_add(&t->frees_pending, 1);
    urcu_memb_call_rcu(&n->rcu, free_node_rcu);
}

static void retire_ranges(struct rci_sub_table *t, struct range_set *rs)
{
    if (!rs)
        return;
    gauge_add(&t->frees_pending, 1);
    urcu_memb_call_rcu(&rs->rcu, free_ranges_rcu);
}

/* ---- create / destroy / threads --------------------------------------- */

void rci_sub_table_register_thread(void)
{
    if (thread_registered)
        return;
    urcu_memb_register_thread();
    thread_registered = true;
}

void rci_sub_table_unregister_thread(void)
{
    if (!thread_registered)
        return;
    urcu_memb_unregister_thread();
    thread_registered = false;
}

static int apply_defaults(const struct rci_sub_table_params *p, struct rci_sub_table *t,
                          char *err, size_t errlen)
{
    struct rci_sub_table_params d = p ? *p : (struct rci_sub_table_params){0};
    t->max_per_tag = d.max_subs_per_tag ? d.max_subs_per_tag : RCI_SUB_TABLE_DEFAULT_MAX_PER_TAG;
    t->max_ranges = d.max_ranges ? d.max_ranges : RCI_SUB_TABLE_DEFAULT_MAX_RANGES;
    t->exact_limit = d.exact_limit ? d.exact_limit : RCI_SUB_TABLE_DEFAULT_EXACT_LIMIT;
    /* exact_limit bounds the work and memory of one narrow update (one node
     * per tag); the others bound a lookup's result. */
    if (t->exact_limit > RCI_SUB_TABLE_MAX_LIMIT || t->max_per_tag > RCI_SUB_TABLE_MAX_LIMIT ||
        t->max_ranges > RCI_SUB_TABLE_MAX_LIMIT) {
        rci_set_err(err, errlen, "subscription table: exact_limit, max_subs_per_tag and max_ranges"
                   " must be at most %u", RCI_SUB_TABLE_MAX_LIMIT);
        return -EINVAL;
    }
    return 0;
}

int rci_sub_table_create(const struct rci_sub_table_params *p, struct rci_sub_table **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    struct rci_sub_table *t = calloc(1, sizeof *t);
    if (!t) {
        rci_set_err(err, errlen, "subscription table: out of memory");
        return -ENOMEM;
    }
    int rc = apply_defaults(p, t, err, errlen);
    if (rc != 0) {
        free(t);
        return rc;
    }
    atomic_flag_clear(&t->updating);
    t->ht = cds_lfht_new_flavor(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                &urcu_memb_flavor, NULL);
    if (!t->ht) {
        free(t);
        rci_set_err(err, errlen, "subscription table: cannot create the RCU hash table");
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

/* Unlink every node, retire it and the range set, then wait for all frees. */
static void empty_table(struct rci_sub_table *t)
{
    urcu_memb_read_lock();
    struct cds_lfht_iter iter;
    for (cds_lfht_first(t->ht, &iter); cds_lfht_iter_get_node(&iter); cds_lfht_next(t->ht, &iter)) {
        struct cds_lfht_node *node = cds_lfht_iter_get_node(&iter);
        if (cds_lfht_del(t->ht, node) == 0)
            retire_node(t, caa_container_of(node, struct tag_node, lfht));
    }
    struct range_set *rs = t->ranges;
    rcu_assign_pointer(t->ranges, NULL);
    retire_ranges(t, rs);
    urcu_memb_read_unlock();
    /* Runs every callback queued so far: nothing refers to t afterwards. */
    urcu_memb_barrier();
}

void rci_sub_table_destroy(struct rci_sub_table *t)
{
    if (!t)
        return;
    bool was_registered = thread_registered;
    rci_sub_table_register_thread();
    empty_table(t);
    cds_lfht_destroy(t->ht, NULL);
    if (!was_registered)
        rci_sub_table_unregister_thread();
    free(t->plan);
    free(t);
}

/* ---- lookup (any registered thread) ----------------------------------- */

static unsigned copy_exact(const struct tag_node *n, uint32_t *out, unsigned max)
{
    unsigned take = n->count < max ? n->count : max;
    memcpy(out, n->ids, take * sizeof *out);
    return n->count;
}

/* A subscriber's wide entries are disjoint, so it matches at most one of
 * them; it may also be in the tag's exact list: skip it there. */
static unsigned add_range_matches(const struct range_set *rs, const struct tag_node *n, uint64_t tag,
                                  uint32_t *out, unsigned max, unsigned found)
{
    for (uint32_t i = 0; rs && i < rs->count; i++) {
        const struct range_entry *e = &rs->e[i];
        if (tag < e->first || tag > e->last || (n && node_has(n, e->sub_id)))
            continue;
        if (found < max)
            out[found] = e->sub_id;
        found++;
    }
    return found;
}

unsigned rci_sub_table_lookup(struct rci_sub_table *t, uint64_t tag, uint32_t *out, unsigned max)
{
    if (!thread_registered) {
        rci_shared_counter_add(&t->refused_unregistered, 1);
        return 0;
    }
    urcu_memb_read_lock();
    const struct tag_node *n = find_node(t, tag);
    unsigned found = n ? copy_exact(n, out, max) : 0;
    found = add_range_matches(rcu_dereference(t->ranges), n, tag, out, max, found);
    urcu_memb_read_unlock();
    if (found > max)
        rci_shared_counter_add(&t->lookups_truncated, 1);
    return found;
}

unsigned rci_sub_table_max_result(const struct rci_sub_table *t)
{
    return t->max_per_tag + t->max_ranges;
}

/* ---- building new versions (updater) ---------------------------------- */

static struct tag_node *alloc_node(struct rci_sub_table *t, uint64_t tag, uint32_t count)
{
    struct tag_node *n = malloc(sizeof *n + (size_t)count * sizeof n->ids[0]);
    if (n) {
        cds_lfht_node_init(&n->lfht);
        n->owner = t;
        n->tag = tag;
        n->count = count;
    }
    return n;
}

/* A copy of old (may be NULL) with sub_id inserted in order. */
static struct tag_node *node_with(struct rci_sub_table *t, const struct tag_node *old, uint64_t tag,
                                  uint32_t sub_id)
{
    uint32_t n_old = old ? old->count : 0;
    struct tag_node *n = alloc_node(t, tag, n_old + 1);
    if (!n)
        return NULL;
    uint32_t i = 0, j = 0;
    while (i < n_old && old->ids[i] < sub_id)
        n->ids[j++] = old->ids[i++];
    n->ids[j++] = sub_id;
    while (i < n_old)
        n->ids[j++] = old->ids[i++];
    return n;
}

/* A copy of old without sub_id (which it holds). */
static struct tag_node *node_without(struct rci_sub_table *t, const struct tag_node *old, uint32_t sub_id)
{
    struct tag_node *n = alloc_node(t, old->tag, old->count - 1);
    if (!n)
        return NULL;
    uint32_t j = 0;
    for (uint32_t i = 0; i < old->count; i++)
        if (old->ids[i] != sub_id)
            n->ids[j++] = old->ids[i];
    return n;
}

static int plan_push(struct rci_sub_table *t, struct tag_node *old, struct tag_node *new_node)
{
    if (t->plan_len == t->plan_cap) {
        size_t cap = t->plan_cap ? 2 * t->plan_cap : 64;
        struct plan_step *p = realloc(t->plan, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        t->plan = p;
        t->plan_cap = cap;
    }
    t->plan[t->plan_len++] = (struct plan_step){.old = old, .new_node = new_node};
    return 0;
}

static void plan_discard(struct rci_sub_table *t)
{
    for (size_t i = 0; i < t->plan_len; i++)
        free(t->plan[i].new_node);
    t->plan_len = 0;
}

/* Publish every prepared step; nothing here can fail (single updater). */
static void plan_apply(struct rci_sub_table *t)
{
    for (size_t i = 0; i < t->plan_len; i++) {
        struct plan_step *s = &t->plan[i];
        int64_t old_count = s->old ? s->old->count : 0;
        int64_t new_count = s->new_node ? s->new_node->count : 0;
        if (!s->old) {
            cds_lfht_add(t->ht, hash_tag(s->new_node->tag), &s->new_node->lfht);
        } else if (!s->new_node) {
            cds_lfht_del(t->ht, &s->old->lfht);
            retire_node(t, s->old);
        } else {
            struct cds_lfht_node *replaced =
                cds_lfht_add_replace(t->ht, hash_tag(s->new_node->tag), match_tag, &s->new_node->tag,
                                     &s->new_node->lfht);
            if (replaced)
                retire_node(t, caa_container_of(replaced, struct tag_node, lfht));
        }
        gauge_add(&t->exact_tags, (new_count > 0) - (old_count > 0));
        gauge_add(&t->exact_entries, new_count - old_count);
    }
    t->plan_len = 0;
}

/* Plan to drop sub_id from node n (if it is there). */
static int plan_drop(struct rci_sub_table *t, struct tag_node *n, uint32_t sub_id)
{
    if (!node_has(n, sub_id))
        return 0;
    struct tag_node *repl = NULL;
    if (n->count > 1 && !(repl = node_without(t, n, sub_id)))
        return -ENOMEM;
    if (plan_push(t, n, repl) != 0) {
        free(repl);
        return -ENOMEM;
    }
    return 0;
}

/* Narrow add: one step per tag that lacks sub_id; refused as a whole when a
 * tag is full. */
static int plan_add_exact(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    for (uint64_t tag = first;; tag++) {
        struct tag_node *old = find_node(t, tag);
        if (!old || !node_has(old, sub_id)) {
            if (old && old->count >= t->max_per_tag) {
                rci_shared_counter_add(&t->refused_tag_full, 1);
                return -ENOSPC;
            }
            struct tag_node *n = node_with(t, old, tag, sub_id);
            if (!n || plan_push(t, old, n) != 0) {
                free(n);
                return -ENOMEM;
            }
        }
        if (tag == last)
            return 0;
    }
}

/* Narrow remove: visit the tags of the range. */
static int plan_remove_by_tags(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    for (uint64_t tag = first;; tag++) {
        struct tag_node *n = find_node(t, tag);
        if (n && plan_drop(t, n, sub_id) != 0)
            return -ENOMEM;
        if (tag == last)
            return 0;
    }
}

/* Wide remove: visit every stored tag (cheaper than the range's tags). The
 * table is not changed while walking: the plan is applied afterwards. */
static int plan_remove_by_scan(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    struct cds_lfht_iter iter;
    for (cds_lfht_first(t->ht, &iter); cds_lfht_iter_get_node(&iter); cds_lfht_next(t->ht, &iter)) {
        struct tag_node *n = caa_container_of(cds_lfht_iter_get_node(&iter), struct tag_node, lfht);
        if (n->tag >= first && n->tag <= last && plan_drop(t, n, sub_id) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* ---- wide ranges (updater) -------------------------------------------- */

/* [a1,b1] and [a2,b2] overlap or are adjacent (mergeable); no overflow. */
static bool touches(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2)
{
    bool gap_after_1 = b1 < a2 && a2 - b1 > 1;
    bool gap_after_2 = b2 < a1 && a1 - b2 > 1;
    return !gap_after_1 && !gap_after_2;
}

static struct range_set *alloc_ranges(struct rci_sub_table *t, uint32_t count)
{
    if (count == 0)
        return NULL;
    struct range_set *rs = malloc(sizeof *rs + (size_t)count * sizeof rs->e[0]);
    if (rs) {
        rs->owner = t;
        rs->count = 0;
    }
    return rs;
}

static uint32_t ranges_count(const struct range_set *rs)
{
    return rs ? rs->count : 0;
}

static void publish_ranges(struct rci_sub_table *t, struct range_set *rs)
{
    struct range_set *old = t->ranges;
    rcu_assign_pointer(t->ranges, rs);
    gauge_add(&t->range_entries, (int64_t)ranges_count(rs) - (int64_t)ranges_count(old));
    retire_ranges(t, old);
}

/* The set with [first,last] added for sub_id, merged with the subscriber's
 * entries it touches so that they stay disjoint. */
static int ranges_with(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last,
                       struct range_set **out)
{
    const struct range_set *old = t->ranges;
    uint32_t n_old = ranges_count(old), merged = 0;
    for (uint32_t i = 0; i < n_old; i++)
        merged += old->e[i].sub_id == sub_id && touches(old->e[i].first, old->e[i].last, first, last);
    if (n_old - merged + 1 > t->max_ranges) {
        rci_shared_counter_add(&t->refused_ranges_full, 1);
        return -ENOSPC;
    }
    struct range_set *rs = alloc_ranges(t, n_old - merged + 1);
    if (!rs)
        return -ENOMEM;
    struct range_entry add = {.first = first, .last = last, .sub_id = sub_id};
    for (uint32_t i = 0; i < n_old; i++) {
        const struct range_entry *e = &old->e[i];
        if (e->sub_id == sub_id && touches(e->first, e->last, first, last)) {
            add.first = e->first < add.first ? e->first : add.first;
            add.last = e->last > add.last ? e->last : add.last;
        } else {
            rs->e[rs->count++] = *e;
        }
    }
    rs->e[rs->count++] = add;
    *out = rs;
    return 0;
}

/* An entry of sub_id sharing tags with [first,last]: a remove changes it. */
static bool cut_by(const struct range_entry *e, uint32_t sub_id, uint64_t first, uint64_t last)
{
    return e->sub_id == sub_id && e->last >= first && e->first <= last;
}

/* Entries left of e after the remove: kept (1), trimmed (1), split (2), gone (0). */
static uint32_t pieces_left(const struct range_entry *e, uint32_t sub_id, uint64_t first, uint64_t last)
{
    if (!cut_by(e, sub_id, first, last))
        return 1;
    return (uint32_t)(e->first < first) + (uint32_t)(e->last > last);
}

/* A trimmed piece may be narrower than exact_limit: it stays a range entry
 * (lookups are right either way; only the scan cost counts it). */
static void cut_entry(const struct range_entry *e, uint32_t sub_id, uint64_t first, uint64_t last,
                      struct range_set *rs)
{
    if (!cut_by(e, sub_id, first, last)) {
        rs->e[rs->count++] = *e;
        return;
    }
    if (e->first < first)
        rs->e[rs->count++] = (struct range_entry){.first = e->first, .last = first - 1, .sub_id = sub_id};
    if (e->last > last)
        rs->e[rs->count++] = (struct range_entry){.first = last + 1, .last = e->last, .sub_id = sub_id};
}

/* *changed = false when no entry of sub_id intersects [first,last]. */
static int ranges_without(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last,
                          struct range_set **out, bool *changed)
{
    const struct range_set *old = t->ranges;
    uint32_t n_old = ranges_count(old), n_new = 0;
    bool hit = false;
    for (uint32_t i = 0; i < n_old; i++) {
        hit |= cut_by(&old->e[i], sub_id, first, last);
        n_new += pieces_left(&old->e[i], sub_id, first, last);
    }
    *changed = hit;
    *out = NULL;
    if (!hit)
        return 0;
    if (n_new > t->max_ranges) {
        rci_shared_counter_add(&t->refused_ranges_full, 1);
        return -ENOSPC;
    }
    struct range_set *rs = alloc_ranges(t, n_new);
    if (n_new > 0 && !rs)
        return -ENOMEM;
    for (uint32_t i = 0; i < n_old; i++)
        cut_entry(&old->e[i], sub_id, first, last, rs);
    *out = rs;
    return 0;
}

/* ---- updates ------------------------------------------------------------ */

static bool is_wide(const struct rci_sub_table *t, uint64_t first, uint64_t last)
{
    return last - first >= t->exact_limit;   /* more than exact_limit tags */
}

/* Enter the updater role: registered thread, valid range, nobody else in. */
static int begin_update(struct rci_sub_table *t, uint64_t first, uint64_t last)
{
    if (!thread_registered) {
        rci_shared_counter_add(&t->refused_unregistered, 1);
        return -EPERM;
    }
    if (first > last) {
        rci_shared_counter_add(&t->refused_bad_args, 1);
        return -EINVAL;
    }
    if (atomic_flag_test_and_set_explicit(&t->updating, memory_order_acquire)) {
        rci_shared_counter_add(&t->refused_busy, 1);
        return -EBUSY;
    }
    urcu_memb_read_lock();   /* cds_lfht updates and walks need it */
    return 0;
}

static int end_update(struct rci_sub_table *t, int rc, rci_shared_counter *success_counter)
{
    if (rc == 0)
        rci_shared_counter_add(success_counter, 1);
    else if (rc == -ENOMEM)
        rci_shared_counter_add(&t->refused_nomem, 1);
    urcu_memb_read_unlock();
    atomic_flag_clear_explicit(&t->updating, memory_order_release);
    return rc;
}

static int add_range(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    if (is_wide(t, first, last)) {
        struct range_set *rs;
        int rc = ranges_with(t, sub_id, first, last, &rs);
        if (rc == 0)
            publish_ranges(t, rs);
        return rc;
    }
    int rc = plan_add_exact(t, sub_id, first, last);
    if (rc != 0) {
        plan_discard(t);
        return rc;
    }
    plan_apply(t);
    return 0;
}

static int remove_range(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    int rc = is_wide(t, first, last) ? plan_remove_by_scan(t, sub_id, first, last)
                                     : plan_remove_by_tags(t, sub_id, first, last);
    struct range_set *rs = NULL;
    bool ranges_changed = false;
    if (rc == 0)
        rc = ranges_without(t, sub_id, first, last, &rs, &ranges_changed);
    if (rc != 0) {
        plan_discard(t);
        return rc;
    }
    plan_apply(t);
    if (ranges_changed)
        publish_ranges(t, rs);
    return 0;
}

int rci_sub_table_add(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    int rc = begin_update(t, first, last);
    if (rc != 0)
        return rc;
    return end_update(t, add_range(t, sub_id, first, last), &t->adds);
}

int rci_sub_table_remove(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last)
{
    int rc = begin_update(t, first, last);
    if (rc != 0)
        return rc;
    return end_update(t, remove_range(t, sub_id, first, last), &t->removes);
}

int rci_sub_table_remove_subscriber(struct rci_sub_table *t, uint32_t sub_id)
{
    int rc = begin_update(t, 0, UINT64_MAX);
    if (rc != 0)
        return rc;
    return end_update(t, remove_range(t, sub_id, 0, UINT64_MAX), &t->subscriber_removals);
}

static uint64_t gauge_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void rci_sub_table_get_stats(const struct rci_sub_table *t, struct rci_sub_table_stats *s)
{
    *s = (struct rci_sub_table_stats){
        .adds = rci_shared_counter_get(&t->adds),
        .removes = rci_shared_counter_get(&t->removes),
        .subscriber_removals = rci_shared_counter_get(&t->subscriber_removals),
        .refused_tag_full = rci_shared_counter_get(&t->refused_tag_full),
        .refused_ranges_full = rci_shared_counter_get(&t->refused_ranges_full),
        .refused_nomem = rci_shared_counter_get(&t->refused_nomem),
        .refused_bad_args = rci_shared_counter_get(&t->refused_bad_args),
        .refused_busy = rci_shared_counter_get(&t->refused_busy),
        .refused_unregistered = rci_shared_counter_get(&t->refused_unregistered),
        .lookups_truncated = rci_shared_counter_get(&t->lookups_truncated),
        .exact_tags = gauge_get(&t->exact_tags),
        .exact_entries = gauge_get(&t->exact_entries),
        .range_entries = gauge_get(&t->range_entries),
        .frees_pending = gauge_get(&t->frees_pending),
    };
}
