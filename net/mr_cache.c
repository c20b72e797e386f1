/* SPDX-License-Identifier: BSD-3-Clause */
/* mr_cache.c — registration cache (see mr_cache.h).
 *
 * Regions live in a fixed array of entries (allocated at create). Cached
 * ("indexed") regions never overlap and are kept in `index`, sorted by
 * start address. Unreferenced indexed regions are also on a doubly linked
 * LRU list (head = least recently released). A region replaced by a merge
 * or forgotten while referenced is "detached": out of the index, so never
 * found again, and deregistered at its last release. */
#include "net/mr_cache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu/compiler.h>
#include <urcu/lfstack.h>

#include "common/errbuf.h"
#include "common/tsan.h"

#define NIL UINT32_MAX

enum region_state { REGION_FREE = 0, REGION_INDEXED, REGION_DETACHED };

struct rci_mr_region {
    struct rci_fabric_mr mr;       /* addr, len, desc */
    uint32_t refs;
    uint8_t state;                 /* enum region_state */
    uint32_t prev, next;           /* LRU (indexed, unreferenced) or free list (next) */
};

struct forget_req {
    struct cds_lfs_node node;
    uintptr_t addr;
    size_t len;
};

struct rci_mr_cache {
    struct rci_mr_cache_params p;
    struct rci_fabric *f;
    struct fid_ep *ep;
    uintptr_t page;
    struct rci_mr_region *r;       /* p.max_regions entries */
    uint32_t *index;               /* indexed entries, sorted by mr.addr */
    uint32_t nindex;
    uint32_t free_head;
    uint32_t lru_head, lru_tail;
    struct __cds_lfs_stack forgets;   /* forget_req, pushed by any thread */
    atomic_bool forget_everything;    /* a request could not be allocated */
    struct rci_mr_cache_stats st;
};

static uintptr_t r_start(const struct rci_mr_region *r) { return (uintptr_t)r->mr.addr; }
static uintptr_t r_end(const struct rci_mr_region *r) { return (uintptr_t)r->mr.addr + r->mr.len; }

void *rci_mr_region_desc(const struct rci_mr_region *r) { return r->mr.desc; }
const void *rci_mr_region_addr(const struct rci_mr_region *r) { return r->mr.addr; }
uint64_t rci_mr_region_key(const struct rci_mr_region *r) { return fi_mr_key(r->mr.mr); }
size_t rci_mr_region_len(const struct rci_mr_region *r) { return r->mr.len; }

bool rci_mr_region_contains(const struct rci_mr_region *r, const void *addr, size_t len)
{
    return rci_fabric_mr_contains(&r->mr, addr, len);
}

int rci_mr_cache_create(const struct rci_mr_cache_params *params, struct rci_fabric *f,
                       struct fid_ep *ep, struct rci_mr_cache **out, char *err, size_t errlen)
{
    *out = NULL;
    if (params->max_regions == 0 || params->max_regions >= NIL || params->max_bytes == 0) {
        rci_set_err(err, errlen, "mr cache: max_regions (%u) and max_bytes (%llu) must be > 0",
                    params->max_regions, (unsigned long long)params->max_bytes);
        return -EINVAL;
    }
    struct rci_mr_cache *c = calloc(1, sizeof *c);
    if (c) {
        c->r = calloc(params->max_regions, sizeof *c->r);
        c->index = calloc(params->max_regions, sizeof *c->index);
    }
    if (!c || !c->r || !c->index) {
        if (c) {
            free(c->r);
            free(c->index);
        }
        free(c);
        rci_set_err(err, errlen, "mr cache: out of memory for %u regions", params->max_regions);
        return -ENOMEM;
    }
    c->p = *params;
    c->f = f;
    c->ep = ep;
    long page = sysconf(_SC_PAGESIZE);
    c->page = page > 0 ? (uintptr_t)page : 4096;
    for (uint32_t i = 0; i < params->max_regions; i++)
        c->r[i].next = i + 1 < params->max_regions ? i + 1 : NIL;
    c->free_head = 0;
    c->lru_head = c->lru_tail = NIL;
    __cds_lfs_init(&c->forgets);
    atomic_init(&c->forget_everything, false);
    *out = c;
    return 0;
}

static void free_queued_forgets(struct rci_mr_cache *c)
{
    struct cds_lfs_head *h = __cds_lfs_pop_all(&c->forgets);
    struct cds_lfs_node *n = h ? &h->node : NULL;
    while (n) {
        RCI_TSAN_ACQUIRE(caa_container_of(n, struct forget_req, node));
        struct cds_lfs_node *next = n->next;
        free(caa_container_of(n, struct forget_req, node));
        n = next;
    }
}

void rci_mr_cache_destroy(struct rci_mr_cache *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->p.max_regions; i++)
        if (c->r[i].state != REGION_FREE)
            rci_fabric_mr_close(&c->r[i].mr);
    free_queued_forgets(c);
    free(c->r);
    free(c->index);
    free(c);
}

/* ---- LRU list and entries ------------------------------------------------- */

static void lru_unlink(struct rci_mr_cache *c, uint32_t i)
{
    struct rci_mr_region *r = &c->r[i];
    if (r->prev != NIL)
        c->r[r->prev].next = r->next;
    else
        c->lru_head = r->next;
    if (r->next != NIL)
        c->r[r->next].prev = r->prev;
    else
        c->lru_tail = r->prev;
    r->prev = r->next = NIL;
}

static void lru_append(struct rci_mr_cache *c, uint32_t i)
{
    struct rci_mr_region *r = &c->r[i];
    r->prev = c->lru_tail;
    r->next = NIL;
    if (c->lru_tail != NIL)
        c->r[c->lru_tail].next = i;
    else
        c->lru_head = i;
    c->lru_tail = i;
}

/* Deregister and return the entry to the free list. */
static void close_entry(struct rci_mr_cache *c, uint32_t i)
{
    struct rci_mr_region *r = &c->r[i];
    c->st.registered_bytes -= r->mr.len;
    c->st.regions--;
    rci_fabric_mr_close(&r->mr);
    r->state = REGION_FREE;
    r->refs = 0;
    r->prev = NIL;
    r->next = c->free_head;
    c->free_head = i;
}

/* ---- the index ------------------------------------------------------------- */

/* Position of the first indexed region starting above addr. */
static uint32_t upper_bound(const struct rci_mr_cache *c, uintptr_t addr)
{
    uint32_t lo = 0, hi = c->nindex;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r_start(&c->r[c->index[mid]]) <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void index_remove_at(struct rci_mr_cache *c, uint32_t pos)
{
    memmove(&c->index[pos], &c->index[pos + 1], (c->nindex - pos - 1) * sizeof *c->index);
    c->nindex--;
}

static void index_insert(struct rci_mr_cache *c, uint32_t i)
{
    uint32_t pos = upper_bound(c, r_start(&c->r[i]));
    memmove(&c->index[pos + 1], &c->index[pos], (c->nindex - pos) * sizeof *c->index);
    c->index[pos] = i;
    c->nindex++;
}

/* Take an indexed region out of the index: deregistered now if unreferenced,
 * else detached (deregistered at its last release). */
static void unindex_at(struct rci_mr_cache *c, uint32_t pos)
{
    uint32_t i = c->index[pos];
    index_remove_at(c, pos);
    if (c->r[i].refs == 0) {
        lru_unlink(c, i);
        close_entry(c, i);
    } else {
        c->r[i].state = REGION_DETACHED;
    }
}

/* [first, last) positions of indexed regions overlapping [a, b). Regions
 * do not overlap, so those are consecutive. */
static void overlapping(const struct rci_mr_cache *c, uintptr_t a, uintptr_t b, uint32_t *first,
                        uint32_t *last)
{
    uint32_t hi = b > 0 ? upper_bound(c, b - 1) : 0;   /* regions starting before b */
    uint32_t lo = hi;
    while (lo > 0 && r_end(&c->r[c->index[lo - 1]]) > a)
        lo--;
    *first = lo;
    *last = hi;
}

/* ---- eviction -------------------------------------------------------------- */

static bool evict_lru(struct rci_mr_cache *c)
{
    uint32_t i = c->lru_head;
    if (i == NIL)
        return false;
    uint32_t pos = upper_bound(c, r_start(&c->r[i])) - 1;   /* its own position */
    index_remove_at(c, pos);
    lru_unlink(c, i);
    close_entry(c, i);
    c->st.evictions++;
    return true;
}

static void evict_above_limit(struct rci_mr_cache *c)
{
    while (c->st.registered_bytes > c->p.max_bytes && evict_lru(c))
        ;
}

/* ---- forgetting ------------------------------------------------------------ */

void rci_mr_cache_forget(struct rci_mr_cache *c, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    uintptr_t b = len > UINTPTR_MAX - a ? UINTPTR_MAX : a + len;
    c->st.forgets++;
    if (len == 0)
        return;
    uint32_t first, last;
    overlapping(c, a, b, &first, &last);
    for (uint32_t pos = last; pos-- > first;) {
        c->st.forgotten_regions++;
        c->st.forgotten_in_use += c->r[c->index[pos]].refs > 0;
        unindex_at(c, pos);
    }
}

void rci_mr_cache_forget_async(struct rci_mr_cache *c, const void *addr, size_t len)
{
    struct forget_req *req = malloc(sizeof *req);
    if (!req) {   /* cannot say which: forget everything rather than keep a stale one */
        atomic_store_explicit(&c->forget_everything, true, memory_order_release);
        return;
    }
    req->addr = (uintptr_t)addr;
    req->len = len;
    cds_lfs_node_init(&req->node);
    RCI_TSAN_RELEASE(req);
    cds_lfs_push(&c->forgets, &req->node);
}

unsigned rci_mr_cache_apply_forgets(struct rci_mr_cache *c)
{
    unsigned applied = 0;
    if (atomic_exchange_explicit(&c->forget_everything, false, memory_order_acquire)) {
        c->st.forget_all++;
        rci_mr_cache_forget(c, NULL, SIZE_MAX);
        applied++;
    }
    if (cds_lfs_empty(&c->forgets))
        return applied;
    struct cds_lfs_head *h = __cds_lfs_pop_all(&c->forgets);   /* the owner is the only popper */
    struct cds_lfs_node *n = h ? &h->node : NULL;
    while (n) {
        struct forget_req *req = caa_container_of(n, struct forget_req, node);
        RCI_TSAN_ACQUIRE(req);   /* before anything of it is read: its push was the release */
        struct cds_lfs_node *next = n->next;
        rci_mr_cache_forget(c, (const void *)req->addr, req->len);
        free(req);
        applied++;
        n = next;
    }
    return applied;
}

/* ---- acquire / release ------------------------------------------------------ */

static int register_range(struct rci_mr_cache *c, uintptr_t a, uintptr_t b, uint32_t *out,
                          char *err, size_t errlen)
{
    if (c->free_head == NIL && !evict_lru(c)) {
        rci_set_err(err, errlen, "mr cache: all %u regions in use", c->p.max_regions);
        return -ENOSPC;
    }
    uint32_t i = c->free_head;
    struct rci_mr_region *r = &c->r[i];
    int rc = rci_fabric_mr_reg(c->f, (const void *)a, b - a, c->p.access, c->ep, &r->mr, err, errlen);
    if (rc)
        return rc;
    c->free_head = r->next;
    r->state = REGION_INDEXED;
    r->refs = 0;
    r->prev = r->next = NIL;
    c->st.registrations++;
    c->st.registered_bytes += b - a;
    c->st.regions++;
    index_insert(c, i);
    *out = i;
    return 0;
}

/* A miss: register [addr, addr + len) rounded out to pages, together with
 * the cached regions it overlaps (they are replaced: merged). If the merged
 * range cannot be registered (a replaced region's memory may be gone), the
 * request's own pages are registered instead. */
static int miss(struct rci_mr_cache *c, uintptr_t addr, size_t len, uint32_t *out, char *err,
                size_t errlen)
{
    uintptr_t a = addr & ~(c->page - 1);
    uintptr_t end = addr + len;
    uintptr_t b = end > UINTPTR_MAX - (c->page - 1) ? UINTPTR_MAX & ~(c->page - 1)
                                                     : (end + c->page - 1) & ~(c->page - 1);
    uint32_t first, last;
    overlapping(c, a, b, &first, &last);
    uintptr_t ma = a, mb = b;
    if (first < last) {
        uintptr_t s = r_start(&c->r[c->index[first]]);
        uintptr_t e = r_end(&c->r[c->index[last - 1]]);
        ma = s < a ? s : a;
        mb = e > b ? e : b;
    }
    for (uint32_t pos = last; pos-- > first;) {
        c->st.merged++;
        unindex_at(c, pos);
    }
    int rc = register_range(c, ma, mb, out, err, errlen);
    if (rc && (ma != a || mb != b))
        rc = register_range(c, a, b, out, err, errlen);
    return rc;
}

int rci_mr_cache_acquire(struct rci_mr_cache *c, const void *addr, size_t len,
                        struct rci_mr_region **out, char *err, size_t errlen)
{
    uintptr_t a = (uintptr_t)addr;
    if (!addr || len == 0 || len > UINTPTR_MAX - a) {
        rci_set_err(err, errlen, "mr cache: bad range (%p, %zu)", addr, len);
        c->st.failures++;
        return -EINVAL;
    }
    rci_mr_cache_apply_forgets(c);
    uint32_t pos = upper_bound(c, a);
    uint32_t i = pos > 0 ? c->index[pos - 1] : NIL;
    if (i != NIL && rci_fabric_mr_contains(&c->r[i].mr, addr, len)) {
        c->st.hits++;
    } else {
        int rc = miss(c, a, len, &i, err, errlen);
        if (rc) {
            c->st.failures++;
            return rc;
        }
        c->st.misses++;
    }
    struct rci_mr_region *r = &c->r[i];
    if (r->refs++ == 0) {
        if (r->prev != NIL || c->lru_head == i)
            lru_unlink(c, i);
        c->st.regions_in_use++;
    }
    evict_above_limit(c);
    c->st.over_limit += c->st.registered_bytes > c->p.max_bytes;
    *out = r;
    return 0;
}

void rci_mr_cache_release(struct rci_mr_cache *c, struct rci_mr_region *r)
{
    if (r->refs == 0 || --r->refs > 0)
        return;
    c->st.regions_in_use--;
    uint32_t i = (uint32_t)(r - c->r);
    if (r->state == REGION_DETACHED) {
        close_entry(c, i);
        return;
    }
    lru_append(c, i);
    evict_above_limit(c);
}

void rci_mr_cache_get_stats(const struct rci_mr_cache *c, struct rci_mr_cache_stats *st)
{
    *st = c->st;
}
