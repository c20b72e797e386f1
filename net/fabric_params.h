/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric_params.h — settings of the libfabric layer (the [fabric] section).
 * net/ knows nothing of cards: it gets only these and registered memory. */
#ifndef RCI_FABRIC_PARAMS_H
#define RCI_FABRIC_PARAMS_H
#include <stdbool.h>
#include <stdint.h>

enum rci_ep_kind { RCI_EP_MSG = 0, RCI_EP_RDM };

/* Fault injection for tests (net/pub_faults.c). Counter based, not random,
 * so a test knows exactly which operations failed. All zero: off. */
struct rci_fault_params {
    uint64_t send_error_every;    /* every Nth successful data/page completion reported as an error */
    uint64_t eagain_every;        /* every Nth data/page post starts a storm of -FI_EAGAIN ... */
    uint32_t eagain_burst;        /* ... refusing this many posts in a row */
    uint64_t eagain_streak_ns;    /* nonzero: instead, every Nth post starts a streak of this
                                   * long in which posts to that one subscriber are refused */
    uint64_t hold_after;          /* the Nth data/page post (1-based) is reported posted and never
                                   * handed to the provider: a send the provider keeps unwritten */
};

struct rci_fabric_params {
    char provider[64];            /* "tcp", "tcp;ofi_rxm", "verbs", "shm", ... */
    enum rci_ep_kind endpoint;     /* msg (connections) or rdm (reliable datagrams) */
    char address[128];            /* address to listen on (publisher) */
    uint16_t port;
    uint32_t tx_queue;            /* requested tx context size */
    uint32_t rx_queue;
    uint32_t cq_size;             /* at least the sum of tx sizes bound to it */
    uint32_t header_slots;        /* zero-copy header-slot pool */
    uint32_t header_slot_size;
    uint32_t buffered_pages;      /* buffered-mode page pool */
    uint32_t buffered_page_size;
    /* Gather-copy bounce buffers (net/bounce.c), each buffered_page_size
     * bytes; 0 = none. Used only by rci_publisher_send_gather(). */
    uint32_t bounce_buffers;
    /* Block streams (pipeline/README.md, "Block stream"): the largest span
     * of ring-adjacent blocks written to a stream subscriber at once; 0 =
     * the default, 256 KiB. */
    uint32_t stream_span;
    uint64_t flush_timeout_ns;    /* buffered page sent at latest after this */
    uint32_t rx_buffers;          /* subscriber receive buffers */
    uint32_t rx_buffer_size;
    uint64_t peer_timeout_ns;     /* a peer silent this long is dead; its keys come back */
    uint64_t heartbeat_ns;        /* both sides send a heartbeat this often */
    uint64_t poll_spin_ns;        /* adaptive polling: spin, then wait on the CQ fd */
    uint32_t max_subscribers;
    uint32_t max_tags_per_subscriber; /* 0 = no limit (see net/README.md, Security) */
    /* Subscriber networks the publisher accepts, "10.1.0.0/16, fd00::/8"
     * (net/allow_list.h); empty = everyone. Kept as text so that the
     * effective configuration prints back as written; the publisher parses
     * it at create (and config/ at load, to report a bad entry at its line). */
    char allow[192];
    /* The daemon's publisher threads run on these CPUs ("2,3", "4-7"; "" =
     * not pinned): pipeline/ applies it, net/ does not use it. */
    char cpus[64];
    struct rci_fault_params faults;
    /* Not a [fabric] key: set by the caller (the daemon does). Each subscriber
     * may hold only its fair share of header slots, pages and tx queue
     * (net/README.md, "Fair shares"); sends beyond get -ENOBUFS. Off: one
     * subscriber may take every free resource (what the unit tests of the
     * pools rely on). */
    bool peer_fair_share;
    /* Not a [fabric] key: ask fi_getinfo for FI_RMA (and fall back to the same
     * hints without it). The publisher sets it (it writes into the rings of RMA
     * subscribers); a subscriber only when it asks for RMA delivery: with
     * FI_RMA, tcp;ofi_rxm sets up its core endpoint's memory registration
     * differently (prov/rxm, rxm_info_to_core_mr_modes), so endpoints that
     * do not use RMA do not ask (net/README.md, "RMA delivery"). */
    bool rma;
};

#endif
