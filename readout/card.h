/* SPDX-License-Identifier: BSD-3-Clause */
/* card.h — a card is an ops table plus its BAR. The host side (wupper_dma.h,
 * readout.h) uses only the BAR accessors, so real and simulated cards run the
 * same host code. */
#ifndef RCI_CARD_H
#define RCI_CARD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "readout/card_bar.h"

/* What the card's firmware reports about itself (simulator: everything it produced). */
struct rci_card_stats {
    uint64_t chunks_produced;
    uint64_t bytes_produced;       /* payload bytes */
    uint64_t blocks_written;
    uint64_t stall_ns;             /* time stalled by backpressure (ring full) */
    uint64_t stall_events;         /* times the ring was found full */
    uint64_t injected_truncated, injected_crc, injected_malformed, injected_seqskip;
    uint64_t replay_loops;         /* times a looped replay file restarted */
    uint64_t host_errors;          /* host protocol errors the card saw: unusable descriptor
                                      programming, RD_POINTER outside the ring or beyond
                                      the write pointer (see readout/README.md) */
    bool finished;                 /* a fixed run length was reached */
};

struct rci_card;
struct rci_card_ops {
    const char *kind;
    int  (*start)(struct rci_card *c);      /* begin producing once the host enables the DMA
                                              descriptor (either order works); 0 or -errno */
    void (*stop)(struct rci_card *c);       /* stop producing; returns when stopped */
    void (*get_stats)(struct rci_card *c, struct rci_card_stats *s);
    void (*destroy)(struct rci_card *c);
    /* Optional, called by the host every tick (~100 ms): keeps the host's
     * side of a liveness handshake and looks at the firmware's. Returns
     * RCI_CARD_FW_LOST once per loss (why says what happened), else
     * RCI_CARD_FW_OK (running, or no firmware attached yet). */
    int  (*check)(struct rci_card *c, char *why, size_t whylen);
    /* Optional: the bus address (IOVA) the card's DMA uses for host address
     * addr, which must lie in memory the card was given when it was created
     * (the ring); UINT64_MAX if it does not. NULL: the bus address is the
     * virtual address (simulated cards, whose firmware translates it). */
    uint64_t (*bus_address)(struct rci_card *c, const void *addr);
    /* Optional: an eventfd the card's data-available interrupt increments
     * (card.N.wait = interrupt), owned by the card; NULL or -1: none. */
    int (*irq_fd)(struct rci_card *c);
};

enum { RCI_CARD_FW_OK = 0, RCI_CARD_FW_LOST = 1 };

struct rci_card {
    const struct rci_card_ops *ops;
    struct rci_bar bar;
    void *impl;
};

static inline int  rci_card_start(struct rci_card *c) { return c->ops->start(c); }
static inline void rci_card_stop(struct rci_card *c) { c->ops->stop(c); }
static inline void rci_card_get_stats(struct rci_card *c, struct rci_card_stats *s) { c->ops->get_stats(c, s); }
static inline void rci_card_destroy(struct rci_card *c) { c->ops->destroy(c); }
static inline int  rci_card_check(struct rci_card *c, char *why, size_t whylen)
{
    return c->ops->check ? c->ops->check(c, why, whylen) : RCI_CARD_FW_OK;
}

static inline int rci_card_irq_fd(struct rci_card *c)
{
    return c->ops->irq_fd ? c->ops->irq_fd(c) : -1;
}

static inline uint64_t rci_card_bus_address(struct rci_card *c, const void *addr)
{
    return c->ops->bus_address ? c->ops->bus_address(c, addr) : (uint64_t)(uintptr_t)addr;
}

#endif
