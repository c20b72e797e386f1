/* SPDX-License-Identifier: BSD-3-Clause */
/* sub_table.h — the publisher's subscription table: tag -> subscribers.
 *
 * Contract
 *  - Subscribers are opaque uint32 ids (the publisher's peer index). A
 *    subscriber's tag set is the union of the ranges it added minus the
 *    ranges it removed; rci_sub_table_lookup(tag) returns every subscriber
 *    whose set holds tag, each at most once.
 *  - ONE updater thread (the connection thread) calls add / remove /
 *    remove_subscriber. A second thread calling at the same moment is refused
 *    with -EBUSY and counted, never corrupts the table.
 *  - ANY number of reader threads (publishers) call lookup: lock-free, no
 *    allocation; no syscall except liburcu's futex wake-up of a grace period
 *    that waits for this reader (at most once per grace period, i.e. per
 *    batch of updates, never per chunk while the table is unchanged).
 *  - Every thread that calls lookup or the updater functions must
 *    first call rci_sub_table_register_thread() (it registers the thread with
 *    liburcu's memb flavour) and rci_sub_table_unregister_thread() before it
 *    exits (not urcu_memb_register_thread() as well: registering a thread
 *    twice corrupts liburcu's reader list). A call from an unregistered
 *    thread is refused and counted (lookup then returns 0), because an
 *    unregistered reader would not hold back the grace period and could
 *    read freed memory. Destroy registers its thread for the call if needed.
 *  - lookup opens its own RCU read-side critical section: it copies ids out,
 *    so no pointer into the table escapes and callers need no read lock.
 *
 * Consistency: each tag's subscriber list is switched atomically (a lookup
 * sees the list before or after an update, never a mix); an update that
 * touches several tags becomes visible tag by tag. A lookup may therefore
 * name a subscriber that was removed a moment ago: unsubscribe and disconnect
 * do not wait for publishers. That is safe because the table only hands out
 * ids: a send to a departed peer fails or completes through the publisher
 * (whose peer ids carry a generation), and the fan-out record of that send
 * is completed either way (pipeline/fanout.h).
 *
 * Storage
 *  - Narrow ranges (at most exact_limit tags, default 4096) are stored tag by
 *    tag in an RCU hash table (liburcu cds_lfht): tag -> immutable sorted array
 *    of ids. An update builds a new array and swaps it in (copy-on-write); the
 *    old one is freed with call_rcu after a grace period.
 *  - Wider ranges (including "all" = [0, UINT64_MAX]) go into one immutable
 *    array of (first, last, id) entries, published with rcu_assign_pointer and
 *    replaced as a whole. A subscriber's entries are kept disjoint (merged on
 *    add, trimmed or split on remove). Cost: every lookup scans the whole array,
 *    so it is meant for a few monitoring-style subscribers (max_ranges bounds it).
 *  - Updates allocate everything they need before publishing anything: a
 *    refused update (-ENOMEM, -ENOSPC) leaves the table unchanged.
 *  - Update cost: add/remove of a narrow range O(width); removing a wide range
 *    and remove_subscriber walk the whole hash table (control path, rare).
 *  - Measured (2-core development VM, one thread): a lookup of a tag with 4
 *    tag-by-tag subscribers and 2 wide entries takes about 37 ns.
 *  - Readers write nothing shared (no lookup counter): only a truncated or
 *    refused lookup touches a counter.
 */
#ifndef RCI_SUB_TABLE_H
#define RCI_SUB_TABLE_H
#include <stddef.h>
#include <stdint.h>

#define RCI_SUB_TABLE_DEFAULT_MAX_PER_TAG  32u
#define RCI_SUB_TABLE_DEFAULT_MAX_RANGES   256u
#define RCI_SUB_TABLE_DEFAULT_EXACT_LIMIT  4096u
#define RCI_SUB_TABLE_MAX_LIMIT            (1u << 20)   /* upper bound of each parameter */

struct rci_sub_table_params {
    uint32_t max_subs_per_tag;  /* subscribers stored per tag in the hash table; 0: default */
    uint32_t max_ranges;        /* wide range entries, all subscribers together; 0: default */
    uint64_t exact_limit;       /* ranges of at most this many tags are stored tag by tag;
                                   0: default */
};

struct rci_sub_table_stats {
    uint64_t adds, removes, subscriber_removals;   /* updates that succeeded */
    uint64_t refused_tag_full;      /* add: a tag already has max_subs_per_tag subscribers */
    uint64_t refused_ranges_full;   /* add/remove: wide entries would exceed max_ranges */
    uint64_t refused_nomem;         /* allocation failed: table unchanged */
    uint64_t refused_bad_args;      /* first > last */
    uint64_t refused_busy;          /* another thread was updating at the same moment */
    uint64_t refused_unregistered;  /* call from a thread not registered (lookups included) */
    uint64_t lookups_truncated;     /* lookups that found more subscribers than max */
    uint64_t exact_tags;            /* tags in the hash table */
    uint64_t exact_entries;         /* (tag, subscriber) pairs in the hash table */
    uint64_t range_entries;         /* wide range entries */
    uint64_t frees_pending;         /* replaced versions waiting for their grace period */
};

struct rci_sub_table;

/* p may be NULL (defaults). Returns 0 or -EINVAL / -ENOMEM with err filled. */
int  rci_sub_table_create(const struct rci_sub_table_params *p, struct rci_sub_table **out,
                         char *err, size_t errlen);
/* No lookup may run on the table any more. The calling thread is registered
 * for the duration if it was not. Waits for pending frees. */
void rci_sub_table_destroy(struct rci_sub_table *t);

/* Register / unregister the calling thread as an RCU reader (idempotent). */
void rci_sub_table_register_thread(void);
void rci_sub_table_unregister_thread(void);

/* Updater thread only. 0, or -EINVAL (first > last), -ENOSPC (a limit, see
 * the statistics), -ENOMEM, -EBUSY, -EPERM (thread not registered). Adding
 * what is already there and removing what is not are successes. */
int  rci_sub_table_add(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last);
int  rci_sub_table_remove(struct rci_sub_table *t, uint32_t sub_id, uint64_t first, uint64_t last);
/* The subscriber disconnected: remove its whole tag set. */
int  rci_sub_table_remove_subscriber(struct rci_sub_table *t, uint32_t sub_id);

/* Subscribers of tag: up to max ids are written to out (tag-by-tag entries
 * first, in ascending id order, then wide-range ones). Returns the number of
 * subscribers found, which may exceed max (counted in lookups_truncated).
 * rci_sub_table_max_result() is a max that is never exceeded. */
unsigned rci_sub_table_lookup(struct rci_sub_table *t, uint64_t tag, uint32_t *out, unsigned max);
unsigned rci_sub_table_max_result(const struct rci_sub_table *t);

/* Any thread; the figures are read one by one, not as one snapshot. */
void rci_sub_table_get_stats(const struct rci_sub_table *t, struct rci_sub_table_stats *s);

#endif
