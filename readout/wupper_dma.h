/* SPDX-License-Identifier: BSD-3-Clause */
/* wupper_dma.h — the host side of Wupper's endless ToHost DMA, written only
 * against the BAR accessors. It turns (CURRENT_ADDRESS, EVEN_DMA, EVEN_PC)
 * and the host's own monotonic read position into a monotonic written
 * position, and writes RD_POINTER back (batched by the caller).
 *
 * Positions are monotonic byte counts since start: written W and read R,
 * R <= W <= R + size. The card's CURRENT_ADDRESS = start + W % size and
 * EVEN_DMA = (W / size) & 1; RD_POINTER = start + R % size and EVEN_PC =
 * (R / size) & 1. Equal parity: W is in R's lap (W - R = CURRENT - RD, 0 =
 * empty); different parity: W is one lap ahead (W - R = size - (RD -
 * CURRENT), size = full). See readout/README.md ("Register model").
 *
 * Host rule the simulator relies on, as real FELIX software does: a single
 * RD_POINTER write never advances by a full ring (set_read splits it).
 *
 * Threads: poll and set_read from one thread (the readout thread); start
 * and stop read-modify-write DESC_ENABLE, so the callers that start or stop
 * descriptors of one card must not do so concurrently.
 */
#ifndef RCI_WUPPER_DMA_H
#define RCI_WUPPER_DMA_H
#include <stdint.h>
#include "readout/card_bar.h"

/* START and the ring size must be multiples of this (a multiple of the TLP
 * size the descriptor is programmed with, and of every block size). */
#define RCI_WUPPER_ALIGN       1024u
/* NUM_WORDS programmed: 32-bit words per TLP (64 = 256 bytes). */
#define RCI_WUPPER_TLP_WORDS   64u

struct rci_wupper_dma {
    const struct rci_bar *bar;
    unsigned desc;
    uint64_t start, end, size;     /* bus addresses [start, end) */
    uint64_t read_total;           /* monotonic host read position (last RD_POINTER written) */
    uint64_t written_total;        /* monotonic card write position, last seen */
    uint64_t read_before_wrap;     /* read_total before the last RD_POINTER write that wrapped */
    uint64_t bad_status;           /* status reads rejected (see rci_wupper_dma_poll) */
    uint64_t status_lagging;       /* status reads taken with the previous lap's EVEN_PC:
                                      the card had not yet seen a wrapping RD_POINTER write */
    uint64_t bad_set_read;         /* set_read calls outside [read_total, written_total]: ignored */
    uint64_t rd_writes;            /* RD_POINTER register writes */
};

/* Program descriptor desc for endless ToHost DMA over [bus_start,
 * bus_start + size): disable it, write START, END, CTRL (ToHost,
 * WRAP_AROUND, NUM_WORDS), RD_POINTER = START, then enable it. Returns 0 or
 * -EINVAL (desc > 7, size 0, start or size not a multiple of
 * RCI_WUPPER_ALIGN, range wrapping the address space). */
int  rci_wupper_dma_start(struct rci_wupper_dma *d, const struct rci_bar *bar, unsigned desc,
                         uint64_t bus_start, uint64_t size);
/* Read the status register; returns the monotonic written position. A status
 * whose EVEN_PC is the lap parity before the host's last wrapping RD_POINTER
 * write is judged against the read position before that write (the card has
 * not taken the write yet; counted in status_lagging). A status that cannot
 * be right (CURRENT_ADDRESS outside [start, end), EVEN_PC neither, a position
 * behind the last one or beyond read_total + size) is counted in bad_status
 * and read once more; if that is bad too, the last good position is
 * returned. */
uint64_t rci_wupper_dma_poll(struct rci_wupper_dma *d);
/* Tell the card the host has consumed everything below monotonic read_total
 * (which must lie in [d->read_total, d->written_total]). An advance of a
 * full ring is written as two RD_POINTER writes. */
void rci_wupper_dma_set_read(struct rci_wupper_dma *d, uint64_t read_total);
/* Disable the descriptor (the card stops writing after its current block). */
void rci_wupper_dma_stop(struct rci_wupper_dma *d);

#endif
