/* SPDX-License-Identifier: BSD-3-Clause */
/* card_bar.c — register accessors for a memory-mapped BAR (a real card's
 * resource0 mapping, or any plain memory laid out like one).
 *
 * A 128-bit register is two 64-bit PCIe reads, so the halves may come from
 * different moments. read128 reads hi, lo, hi and accepts the pair when both
 * hi reads agree: then lo was read while hi held that value, so (lo, hi) is a
 * value the register really had. (A hi that changes and changes back between
 * two reads a microsecond apart would defeat this; for the DMA status
 * register that takes two full ring wraps.) Asking for two identical
 * (hi, lo) pairs instead would almost never succeed on a running DMA, whose
 * CURRENT_ADDRESS moves every few tens of nanoseconds. */
#include "readout/card_bar.h"

#include <stdbool.h>

/* Far more than a torn read ever needs; bounded so a card that stops
 * answering consistently cannot hang the readout thread. The caller
 * validates what it gets (see rci_wupper_dma_poll). */
#define MMIO_READ128_TRIES 16

static inline volatile uint64_t *mmio_reg(void *ctx, uint32_t off)
{
    return (volatile uint64_t *)((volatile uint8_t *)ctx + off);
}

static uint64_t mmio_read64(void *ctx, uint32_t off)
{
    uint64_t v = *mmio_reg(ctx, off);
    /* Ring memory the card wrote before this register value must be read
     * after it. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return v;
}

static void mmio_write64(void *ctx, uint32_t off, uint64_t value)
{
    /* Everything the host did before (e.g. finished reading the ring) happens
     * before the card sees the register write. */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *mmio_reg(ctx, off) = value;
}

static void mmio_read128(void *ctx, uint32_t off, uint64_t *lo, uint64_t *hi)
{
    uint64_t h1 = *mmio_reg(ctx, off + 8), l = 0, h2 = h1;
    for (int i = 0; i < MMIO_READ128_TRIES; i++) {
        l = *mmio_reg(ctx, off);
        h2 = *mmio_reg(ctx, off + 8);
        if (h1 == h2)
            break;
        h1 = h2;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    *lo = l;
    *hi = h2;
}

static const struct rci_bar_ops mmio_ops = {
    .read64 = mmio_read64,
    .write64 = mmio_write64,
    .read128 = mmio_read128,
};

void rci_bar_init_mmio(struct rci_bar *b, volatile void *base)
{
    b->ops = &mmio_ops;
    b->ctx = (void *)(uintptr_t)base;
}
