/* SPDX-License-Identifier: BSD-3-Clause */
/* configured_card.h — a card as its [card.N] section describes it: its DMA
 * ring and the card of its `type`, created in one call. The one card setup
 * of the daemon (tools/readout_daemon.c) and of the embedding API
 * (api/full_readout.c, ringcast/readout.h).
 *
 * Why here, in readout/sim/: creating a card by type must see every card
 * type. Today both types are simulated (sim: firmware thread; sim-process:
 * a BAR in shared memory for `ringcast-sim`), and readout/ may not include
 * readout/sim/ (tests/check-includes.sh: the card side never depends on its
 * simulator), nor may pipeline/. readout/sim/ may include readout/ and dma/,
 * so a real card type (readout/) can be added to this switch as well. */
#ifndef RCI_CONFIGURED_CARD_H
#define RCI_CONFIGURED_CARD_H
#include <stddef.h>

#include "dma/dma_ring.h"
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/sim/sim_params.h"

/* Create card p->index's ring (shm object "<shm_name>-ring" for the shm
 * backend) and its card. sim: the card's [sim.N] parameters, NULL when the
 * configuration has no such section (an error for type = sim). Returns 0 with
 * *ring and *card set, or -errno with the reason in err and nothing left
 * behind. On success err is "" or holds a warning the caller should log
 * (mlock failed, a stale shm object of a killed run was replaced). */
int rci_configured_card_open(const struct rci_card_params *p, const struct rci_sim_params *sim,
                             struct rci_dma_ring **ring, struct rci_card **card, char *err,
                             size_t errlen);
/* Destroy what rci_configured_card_open created (either may be NULL): the
 * card first (it writes into the ring), then the ring. */
void rci_configured_card_close(struct rci_dma_ring *ring, struct rci_card *card);

#endif
