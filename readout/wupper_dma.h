/* wupper_dma.h — the host side of Wupper's endless ToHost DMA, written only
 * against the BAR accessors. It turns (CURRENT_ADDRESS, EVEN_DMA) and the
 * host's own read pointer and EVEN_PC into monotonic byte positions, and
 * writes RD_POINTER back (batched by the caller).
 *
 * Host rule the simulator relies on, as real FELIX software does: a single
 * RD_POINTER write never advances by a full ring (set_read splits it). */
#ifndef RC_WUPPER_DMA_H
#define RC_WUPPER_DMA_H
#include <stdint.h>
#include "readout/card_bar.h"

struct rc_wupper_dma {
    const struct rc_bar *bar;
    unsigned desc;
    uint64_t start, end, size;     /* bus addresses [start, end) */
    uint64_t read_total;           /* monotonic host read position */
    uint64_t written_total;        /* monotonic card write position, last seen */
    uint64_t bad_status;           /* CURRENT_ADDRESS out of range, re-read */
};

/* Program descriptor desc for endless ToHost DMA over [bus_start, bus_start+size)
 * and enable it. Returns 0 or -EINVAL (bad alignment / descriptor). */
int  rc_wupper_dma_start(struct rc_wupper_dma *d, const struct rc_bar *bar, unsigned desc,
                         uint64_t bus_start, uint64_t size);
/* Read the status register; returns the monotonic written position. */
uint64_t rc_wupper_dma_poll(struct rc_wupper_dma *d);
/* Tell the card the host has consumed everything below monotonic read_total. */
void rc_wupper_dma_set_read(struct rc_wupper_dma *d, uint64_t read_total);
/* Disable the descriptor (the card stops writing). */
void rc_wupper_dma_stop(struct rc_wupper_dma *d);

#endif
