/* SPDX-License-Identifier: BSD-3-Clause */
/* configured_card.c — ring + card by type for one [card.N] (configured_card.h). */
#include "readout/sim/configured_card.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "readout/sim/sim_card.h"

static int create_ring(const struct rci_card_params *p, struct rci_dma_ring **ring, char *err,
                       size_t errlen)
{
    char shm_name[96];
    snprintf(shm_name, sizeof shm_name, "%s-ring", p->shm_name);
    struct rci_dma_ring_params rp = {
        .size = p->ring_size,
        .unit_size = p->block_size,
        .backend = p->memory,
        .shm_name = shm_name,
        .lock_memory = true,
    };
    return rci_dma_ring_create(&rp, ring, err, errlen);
}

static int create_card(const struct rci_card_params *p, const struct rci_sim_params *sim,
                       struct rci_dma_ring *ring, struct rci_card **card, char *err, size_t errlen)
{
    switch (p->type) {
    case RCI_CARD_SIM:
        if (!sim) {
            rci_set_err(err, errlen, "card.%u is a simulated card but there is no [sim.%u] section",
                        p->index, p->index);
            return -EINVAL;
        }
        return rci_sim_card_create(p, sim, rci_dma_ring_addr(ring), rci_dma_ring_size(ring), card,
                                   err, errlen);
    case RCI_CARD_SIM_PROCESS:
        /* The firmware runs in `ringcast-sim -c FILE --card N`, attached to
         * the BAR created here and to the ring's shm object. */
        return rci_sim_bar_create_shm(p, card, err, errlen);
    }
    rci_set_err(err, errlen, "card.%u: unknown card type %d", p->index, (int)p->type);
    return -EINVAL;
}

int rci_configured_card_open(const struct rci_card_params *p, const struct rci_sim_params *sim,
                             struct rci_dma_ring **ring, struct rci_card **card, char *err,
                             size_t errlen)
{
    *ring = NULL;
    *card = NULL;
    rci_set_err(err, errlen, "%s", "");
    int rc = create_ring(p, ring, err, errlen);
    if (rc != 0)
        return rc;
    /* The ring's warning (if any) stays in err unless the card fails or
     * has a warning of its own while the ring had none. */
    char step[512] = "";
    rc = create_card(p, sim, *ring, card, step, sizeof step);
    if (rc != 0 || (step[0] && err && errlen && !err[0]))
        rci_set_err(err, errlen, "%s", step[0] ? step : strerror(-rc));
    if (rc != 0) {
        rci_dma_ring_destroy(*ring);
        *ring = NULL;
        *card = NULL;
    }
    return rc;
}

void rci_configured_card_close(struct rci_dma_ring *ring, struct rci_card *card)
{
    if (card)
        rci_card_destroy(card);
    if (ring)
        rci_dma_ring_destroy(ring);
}
