/* SPDX-License-Identifier: BSD-3-Clause */
/* mem_pool.c — registered memory pool with size classes (see mem_pool.h). */
#include "net/mem_pool.h"
#include "common/tsan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"


struct mem_class {
    size_t size;
    uint32_t count;
    uint8_t *block;                /* count * size bytes, page aligned */
    struct rci_mem_buf *bufs;      /* headers, apart from the data */
    struct cds_lfs_stack free_stack;  /* with liburcu's pop mutex: getters of any thread */
    struct rci_fabric_mr mr;       /* the block's one registration */
    bool virt_addr;                /* FI_MR_VIRT_ADDR when registered */
    atomic_uint in_use, high_water;
    atomic_uint_fast64_t gets, puts, exhausted, bad_puts;
};

struct rci_mem_pool {
    struct mem_class cls[RCI_MEM_CLASSES];
    const char *use[RCI_MEM_CLASSES];   /* rci_mem_pool_create_uses: what each class holds */
    bool registered;
    uint64_t registrations;
};

static const char *const class_names[RCI_MEM_CLASSES] = { "small", "medium", "large", "huge" };

const char *rci_mem_class_name(enum rci_mem_class cls)
{
    return (unsigned)cls < RCI_MEM_CLASSES ? class_names[cls] : "?";
}

void rci_mem_pool_params_default(struct rci_mem_pool_params *p)
{
    memset(p, 0, sizeof *p);
    p->size[RCI_MEM_SMALL] = 4096;
    p->size[RCI_MEM_MEDIUM] = 16384;
    p->size[RCI_MEM_LARGE] = 65536;
    p->size[RCI_MEM_HUGE] = 1u << 20;
}

static int check_params(const struct rci_mem_pool_params *p, char *err, size_t errlen)
{
    size_t prev = 0;
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++) {
        if (p->count[c] == 0)
            continue;
        const char *why = NULL;
        if (p->size[c] == 0 || p->size[c] % 64)
            why = "size must be a positive multiple of 64";
        else if (p->size[c] <= prev)
            why = "size must be larger than the smaller classes'";
        else if (p->count[c] > RCI_MEM_POOL_MAX_COUNT)
            why = "count above 2^24";
        else if (p->size[c] > SIZE_MAX / p->count[c])
            why = "count x size overflows";
        if (why) {
            rci_set_err(err, errlen, "mem pool: class %s (size %zu, count %u): %s", class_names[c],
                        p->size[c], p->count[c], why);
            return -EINVAL;
        }
        prev = p->size[c];
    }
    return 0;
}

static int class_init(struct mem_class *c, enum rci_mem_class id, size_t size, uint32_t count)
{
    c->size = size;
    c->count = count;
    cds_lfs_init(&c->free_stack);
    if (count == 0)
        return 0;
    size_t bytes = size * count;
    bytes = (bytes + RCI_MEM_POOL_ALIGN - 1) / RCI_MEM_POOL_ALIGN * RCI_MEM_POOL_ALIGN;
    void *block = NULL;
    if (posix_memalign(&block, RCI_MEM_POOL_ALIGN, bytes))
        return -ENOMEM;
    /* Zeroed: nothing of the heap's earlier contents can leave in a send
     * from a buffer the caller filled only in part, and the pages are
     * resident from the start (registration would pin them anyway). */
    memset(block, 0, bytes);
    c->block = block;
    c->bufs = calloc(count, sizeof *c->bufs);
    if (!c->bufs)
        return -ENOMEM;
    /* Pushed in reverse: the first get returns the block's first buffer. */
    for (uint32_t i = count; i-- > 0;) {
        struct rci_mem_buf *b = &c->bufs[i];
        b->data = c->block + (size_t)i * size;
        b->size = size;
        b->cls = (uint8_t)id;
        atomic_init(&b->out, false);
        cds_lfs_node_init(&b->node);
        cds_lfs_push(&c->free_stack, &b->node);
    }
    return 0;
}

int rci_mem_pool_create(const struct rci_mem_pool_params *params, struct rci_mem_pool **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    int rc = check_params(params, err, errlen);
    if (rc)
        return rc;
    struct rci_mem_pool *pool = calloc(1, sizeof *pool);
    if (!pool) {
        rci_set_err(err, errlen, "mem pool: out of memory");
        return -ENOMEM;
    }
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++) {
        if (class_init(&pool->cls[c], c, params->size[c], params->count[c])) {
            rci_set_err(err, errlen, "mem pool: class %s: cannot allocate %u buffers of %zu B",
                        class_names[c], params->count[c], params->size[c]);
            rci_mem_pool_destroy(pool);
            return -ENOMEM;
        }
    }
    *out = pool;
    return 0;
}

int rci_mem_pool_create_uses(const struct rci_mem_use *uses, unsigned n, struct rci_mem_pool **out,
                            int *cls_of, char *err, size_t errlen)
{
    *out = NULL;
    if (n > RCI_MEM_CLASSES) {
        rci_set_err(err, errlen, "mem pool: %u uses, at most %u", n, (unsigned)RCI_MEM_CLASSES);
        return -EINVAL;
    }
    /* Order the uses with buffers by size (insertion sort of at most 4). */
    unsigned order[RCI_MEM_CLASSES], k = 0;
    for (unsigned i = 0; i < n; i++) {
        cls_of[i] = -1;
        if (uses[i].count == 0)
            continue;
        unsigned j = k++;
        for (; j > 0 && uses[order[j - 1]].size > uses[i].size; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    struct rci_mem_pool_params mp;
    memset(&mp, 0, sizeof mp);
    size_t prev = 0;
    for (unsigned c = 0; c < k; c++) {
        const struct rci_mem_use *u = &uses[order[c]];
        size_t size = u->size > SIZE_MAX - 127 ? 0 : (u->size + 63) / 64 * 64;
        if (size && size <= prev)
            size = prev + 64;   /* as large as the class below: a class must be larger */
        mp.size[c] = size;
        mp.count[c] = u->count;
        prev = size;
        cls_of[order[c]] = (int)c;
    }
    int rc = rci_mem_pool_create(&mp, out, err, errlen);
    for (unsigned c = 0; rc == 0 && c < k; c++)
        (*out)->use[c] = uses[order[c]].name;
    return rc;
}

void rci_mem_pool_destroy(struct rci_mem_pool *pool)
{
    if (!pool)
        return;
    rci_mem_pool_deregister(pool);
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++) {
        cds_lfs_destroy(&pool->cls[c].free_stack);
        free(pool->cls[c].bufs);
        free(pool->cls[c].block);
    }
    free(pool);
}

int rci_mem_pool_register(struct rci_mem_pool *pool, struct rci_fabric *f, struct fid_ep *ep,
                         uint64_t access, char *err, size_t errlen)
{
    if (pool->registered) {
        rci_set_err(err, errlen, "mem pool: registered already");
        return -EBUSY;
    }
    for (unsigned i = 0; i < RCI_MEM_CLASSES; i++) {
        struct mem_class *c = &pool->cls[i];
        if (c->count == 0)
            continue;
        char why[200];
        int rc = rci_fabric_mr_reg(f, c->block, c->size * c->count, access, ep, &c->mr, why,
                                   sizeof why);
        if (rc) {
            rci_set_err(err, errlen, "mem pool: class %s (%u x %zu B): %s", class_names[i], c->count,
                        c->size, why);
            rci_mem_pool_deregister(pool);
            return rc;
        }
        c->virt_addr = f->mr_virt_addr;
        pool->registrations++;
    }
    pool->registered = true;
    return 0;
}

void rci_mem_pool_deregister(struct rci_mem_pool *pool)
{
    if (!pool)
        return;
    for (unsigned i = 0; i < RCI_MEM_CLASSES; i++)
        rci_fabric_mr_close(&pool->cls[i].mr);
    pool->registered = false;
}

uint64_t rci_mem_pool_registrations(const struct rci_mem_pool *pool) { return pool->registrations; }

int rci_mem_pool_class_for(const struct rci_mem_pool *pool, size_t size)
{
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++)
        if (pool->cls[c].count && pool->cls[c].size >= size)
            return (int)c;
    return -1;
}

/* high_water = max(high_water, now), lock-free. */
static void raise_high_water(struct mem_class *c, unsigned now)
{
    unsigned hw = atomic_load_explicit(&c->high_water, memory_order_relaxed);
    while (now > hw &&
           !atomic_compare_exchange_weak_explicit(&c->high_water, &hw, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

struct rci_mem_buf *rci_mem_pool_get_class(struct rci_mem_pool *pool, enum rci_mem_class cls)
{
    if ((unsigned)cls >= RCI_MEM_CLASSES || pool->cls[cls].count == 0)
        return NULL;
    struct mem_class *c = &pool->cls[cls];
    /* Any thread (mem_pool.h): liburcu's pop for several poppers serialises
     * the pops of this class with its mutex (no ABA); puts stay lock-free. */
    struct cds_lfs_node *n = cds_lfs_pop_blocking(&c->free_stack);
    if (!n) {
        atomic_fetch_add_explicit(&c->exhausted, 1, memory_order_relaxed);
        return NULL;
    }
    RCI_TSAN_ACQUIRE(n);
    struct rci_mem_buf *b = caa_container_of(n, struct rci_mem_buf, node);
    atomic_store_explicit(&b->out, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->gets, 1, memory_order_relaxed);
    unsigned now = atomic_fetch_add_explicit(&c->in_use, 1, memory_order_relaxed) + 1;
    raise_high_water(c, now);
    return b;
}

struct rci_mem_buf *rci_mem_pool_get(struct rci_mem_pool *pool, size_t size)
{
    int cls = rci_mem_pool_class_for(pool, size);
    return cls < 0 ? NULL : rci_mem_pool_get_class(pool, (enum rci_mem_class)cls);
}

void rci_mem_pool_put(struct rci_mem_pool *pool, struct rci_mem_buf *b)
{
    struct mem_class *c = &pool->cls[b->cls < RCI_MEM_CLASSES ? b->cls : 0];
    bool inside = b->cls < RCI_MEM_CLASSES && c->count && b >= c->bufs && b < c->bufs + c->count;
    /* Exactly one put per get: the flag's exchange lets one put through. */
    if (!inside || !atomic_exchange_explicit(&b->out, false, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&pool->cls[inside ? b->cls : 0].bad_puts, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_sub_explicit(&c->in_use, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->puts, 1, memory_order_relaxed);
    RCI_TSAN_RELEASE(&b->node);
    cds_lfs_push(&c->free_stack, &b->node);
}

void *rci_mem_pool_desc(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf)
{
    return pool->cls[buf->cls].mr.desc;
}

uint64_t rci_mem_pool_remote_addr(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf)
{
    const struct mem_class *c = &pool->cls[buf->cls];
    return c->virt_addr ? (uint64_t)(uintptr_t)buf->data : (uint64_t)(buf->data - c->block);
}

uint64_t rci_mem_pool_key(const struct rci_mem_pool *pool, const struct rci_mem_buf *buf)
{
    const struct mem_class *c = &pool->cls[buf->cls];
    return c->mr.mr ? fi_mr_key(c->mr.mr) : 0;
}

void rci_mem_pool_class_stats(const struct rci_mem_pool *pool, enum rci_mem_class cls,
                             struct rci_mem_class_stats *st)
{
    memset(st, 0, sizeof *st);
    st->use = "";
    if (!pool || (unsigned)cls >= RCI_MEM_CLASSES)
        return;
    const struct mem_class *c = &pool->cls[cls];
    st->use = pool->use[cls] ? pool->use[cls] : "";
    st->size = c->size;
    st->count = c->count;
    st->in_use = atomic_load(&c->in_use);
    st->high_water = atomic_load(&c->high_water);
    st->gets = atomic_load(&c->gets);
    st->puts = atomic_load(&c->puts);
    st->exhausted = atomic_load(&c->exhausted);
    st->bad_puts = atomic_load(&c->bad_puts);
}
