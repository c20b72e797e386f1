/* SPDX-License-Identifier: BSD-3-Clause */
/* card_bar.h — register accessors. Host code reads and writes card registers
 * only through these, so that a memory-mapped BAR of a real card and the
 * simulator's in-memory BAR run exactly the same host code.
 *
 * read128 reads a 128-bit register as one consistent value: on real hardware
 * by reading the two halves until two successive reads agree (a torn read is
 * transient there); on the simulator through its own consistency protocol.
 */
#ifndef RCI_CARD_BAR_H
#define RCI_CARD_BAR_H
#include <stdint.h>

struct rci_bar_ops {
    uint64_t (*read64)(void *ctx, uint32_t off);
    void     (*write64)(void *ctx, uint32_t off, uint64_t value);
    void     (*read128)(void *ctx, uint32_t off, uint64_t *lo, uint64_t *hi);
};

struct rci_bar {
    const struct rci_bar_ops *ops;
    void *ctx;
};

static inline uint64_t rci_bar_read64(const struct rci_bar *b, uint32_t off)
{ return b->ops->read64(b->ctx, off); }
static inline void rci_bar_write64(const struct rci_bar *b, uint32_t off, uint64_t v)
{ b->ops->write64(b->ctx, off, v); }
static inline void rci_bar_read128(const struct rci_bar *b, uint32_t off, uint64_t *lo, uint64_t *hi)
{ b->ops->read128(b->ctx, off, lo, hi); }

/* Accessors for a plain memory-mapped BAR (a real card's resource0 mapping). */
void rci_bar_init_mmio(struct rci_bar *b, volatile void *base);

#endif
