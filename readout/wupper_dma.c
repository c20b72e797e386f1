/* SPDX-License-Identifier: BSD-3-Clause */
/* wupper_dma.c — host side of Wupper's endless ToHost DMA (see wupper_dma.h
 * for the position arithmetic). */
#include "readout/wupper_dma.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "readout/wupper_regs.h"

static void set_enable_bit(const struct rci_bar *bar, unsigned desc, bool on)
{
    uint64_t en = rci_bar_read64(bar, WUPPER_DESC_ENABLE);
    en = on ? en | (1ull << desc) : en & ~(1ull << desc);
    rci_bar_write64(bar, WUPPER_DESC_ENABLE, en);
}

int rci_wupper_dma_start(struct rci_wupper_dma *d, const struct rci_bar *bar, unsigned desc,
                        uint64_t bus_start, uint64_t size)
{
    if (desc >= WUPPER_MAX_DESCRIPTORS || size == 0 || size % RCI_WUPPER_ALIGN != 0 ||
        bus_start % RCI_WUPPER_ALIGN != 0 || bus_start + size < bus_start)
        return -EINVAL;
    memset(d, 0, sizeof *d);
    d->bar = bar;
    d->desc = desc;
    d->start = bus_start;
    d->end = bus_start + size;
    d->size = size;
    set_enable_bit(bar, desc, false);
    rci_bar_write64(bar, WUPPER_DESC_START(desc), d->start);
    rci_bar_write64(bar, WUPPER_DESC_END(desc), d->end);
    rci_bar_write64(bar, WUPPER_DESC_CTRL(desc), RCI_WUPPER_TLP_WORDS | WUPPER_CTRL_WRAP_AROUND);
    rci_bar_write64(bar, WUPPER_DESC_RD_POINTER(desc), d->start);
    set_enable_bit(bar, desc, true);
    return 0;
}

/* The monotonic position a status value stands for, if it can be right. */
static bool status_to_written(const struct rci_wupper_dma *d, uint64_t current, uint64_t bits,
                              uint64_t read_total, uint64_t *written)
{
    if (current < d->start || current >= d->end)
        return false;
    uint64_t woff = current - d->start;
    uint64_t rlap = read_total / d->size, roff = read_total % d->size;
    bool dma_odd = bits & WUPPER_STATUS_EVEN_DMA;
    bool pc_odd = bits & WUPPER_STATUS_EVEN_PC;
    if (pc_odd != (bool)(rlap & 1))
        return false;               /* the card disagrees about the host's own wraps */
    uint64_t w;
    if (dma_odd == pc_odd) {        /* same lap: the card is at or ahead of RD_POINTER */
        if (woff < roff)
            return false;
        w = rlap * d->size + woff;
    } else {                        /* one lap ahead: the card is at or behind RD_POINTER */
        if (woff > roff)
            return false;
        w = (rlap + 1) * d->size + woff;
    }
    if (w < d->written_total)
        return false;
    *written = w;
    return true;
}

uint64_t rci_wupper_dma_poll(struct rci_wupper_dma *d)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t current, bits, w;
        rci_bar_read128(d->bar, WUPPER_STATUS(d->desc), &current, &bits);
        if (status_to_written(d, current, bits, d->read_total, &w)) {
            d->written_total = w;
            return w;
        }
        /* The card has not taken our last RD_POINTER write that crossed the
         * ring's end yet (its EVEN_PC is the previous lap's): judge the
         * status by the read position it still knows. Only this parity
         * reaches here, so the two readings never compete. */
        if (d->read_before_wrap != d->read_total &&
            status_to_written(d, current, bits, d->read_before_wrap, &w)) {
            d->status_lagging++;
            d->written_total = w;
            return w;
        }
        d->bad_status++;
    }
    return d->written_total;
}

static void write_rd_pointer(struct rci_wupper_dma *d, uint64_t read_total)
{
    if (read_total / d->size != d->read_total / d->size)
        d->read_before_wrap = d->read_total;
    rci_bar_write64(d->bar, WUPPER_DESC_RD_POINTER(d->desc), d->start + read_total % d->size);
    d->read_total = read_total;
    d->rd_writes++;
}

void rci_wupper_dma_set_read(struct rci_wupper_dma *d, uint64_t read_total)
{
    if (read_total < d->read_total || read_total > d->written_total) {
        d->bad_set_read++;
        return;
    }
    /* An advance of a whole ring would leave RD_POINTER where it was: the
     * card could not tell it from no advance. Go half-way first (rounded to
     * the TLP size, so the pointer stays TLP-aligned). */
    uint64_t half = d->size / 2 / (RCI_WUPPER_TLP_WORDS * 4) * (RCI_WUPPER_TLP_WORDS * 4);
    while (read_total - d->read_total >= d->size)
        write_rd_pointer(d, d->read_total + half);
    if (read_total != d->read_total)
        write_rd_pointer(d, read_total);
}

void rci_wupper_dma_stop(struct rci_wupper_dma *d)
{
    if (d->bar)
        set_enable_bit(d->bar, d->desc, false);
}
