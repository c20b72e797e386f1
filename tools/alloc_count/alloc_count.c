/* SPDX-License-Identifier: BSD-3-Clause */
/* alloc_count.c — an LD_PRELOAD shim that counts heap allocations, for
 * ringcast-bench's hot-path hygiene figures (mallocs per chunk).
 *
 *   RCI_ALLOC_COUNT_FILE=/tmp/counts LD_PRELOAD=build/lib/librc_alloc_count.so prog
 *
 * Every call of malloc, calloc, realloc, reallocarray, aligned_alloc,
 * posix_memalign, memalign, valloc and pvalloc in the process (every thread, every library)
 * is counted, then served by glibc's own allocator (the __libc_* entry
 * points, so no dlsym and no recursion while the loader itself allocates).
 * At exit the totals are written to the file named by RCI_ALLOC_COUNT_FILE as
 * one line "allocations N frees M" (nothing is written without the variable).
 * Counters are relaxed atomics: a counted call costs one uncontended
 * increment.
 *
 * Not part of libringcast: built on its own by the Makefile into
 * $(BUILD)/lib/librc_alloc_count.so. glibc only. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *p);

static atomic_uint_fast64_t allocations, frees;

static inline void count_allocation(void)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void *malloc(size_t size)
{
    count_allocation();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    count_allocation();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    count_allocation();
    return __libc_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
    count_allocation();
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, bytes);
}

void *memalign(size_t align, size_t size)
{
    count_allocation();
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    count_allocation();
    return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    count_allocation();
    /* A power of two and a multiple of sizeof(void *), as POSIX demands. */
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    void *p = __libc_memalign(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    count_allocation();
    return __libc_valloc(size);
}

void *pvalloc(size_t size)
{
    count_allocation();
    return __libc_pvalloc(size);
}

void free(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(p);
}

/* write(2) and a stack buffer: nothing here may allocate while counting ends. */
__attribute__((destructor)) static void write_counts(void)
{
    const char *path = getenv("RCI_ALLOC_COUNT_FILE");
    if (!path || !*path)
        return;
    char line[96];
    int n = snprintf(line, sizeof line, "allocations %llu frees %llu\n",
                     (unsigned long long)atomic_load(&allocations),
                     (unsigned long long)atomic_load(&frees));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (n > 0 && write(fd, line, (size_t)n) != n)
        (void)unlink(path);   /* a partial line would be misread: leave none */
    close(fd);
}
