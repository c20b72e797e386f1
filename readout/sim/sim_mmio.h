/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_mmio.h — the simulated firmware serving a plain BAR file: the stand-in
 * for a real card that `card.N.type = pcie` + `card.N.bar_file` talks to
 * with the same MMIO accessors as a VFIO mapping (readout/pcie_card.h).
 *
 * A real BAR turns register writes into events; a file does not. So the
 * firmware runs as usual on a private simulated BAR (sim_bar.c, in this
 * process) and a bridge loop connects the two:
 *   host -> card: DESC_ENABLE is read first, then the descriptor registers
 *     (START, END, CTRL, RD_POINTER); a value that differs from the last one
 *     forwarded is written into the private BAR (descriptor registers
 *     before DESC_ENABLE, as the host wrote them), where it acts as the
 *     event it is on hardware;
 *   card -> host: each DMA_DESC_STATUS_n is read consistently from the
 *     private BAR and, when it changed, stored into the file as one 16-byte
 *     atomic store, as the card's register changes, so the host's
 *     hi-lo-hi read (card_bar.c) sees either the old or the new value.
 * Limits of sampling (readout/README.md, "The bar-file stand-in"): writes
 * the host makes between two passes are seen as one (the last value); a
 * disable and re-enable between two passes is missed; a ring advance of
 * exactly one ring, which the host writes as two RD_POINTER writes back to
 * back, would be missed (it needs a completely full ring released at once).
 *
 * Bus addresses are translated as in every simulated card: the firmware
 * maps START..END onto its mapping of the ring shm object. */
#ifndef RCI_SIM_MMIO_H
#define RCI_SIM_MMIO_H
#include <signal.h>
#include <stdint.h>
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/sim/sim_card.h"
#include "readout/sim/sim_params.h"

struct rci_sim_mmio;

/* Map bar_file (at least WUPPER_BAR0_SIZE bytes) and the ring shm object
 * "<cp->shm_name>-ring" (its size must be cp->ring_size), create the
 * firmware over that ring and start it. -ENOENT while the daemon has not
 * created them yet; other -errno with the reason in err. */
int  rci_sim_mmio_create(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                        const char *bar_file, struct rci_sim_mmio **out, char *err, size_t errlen);
/* Serve the registers until *stop or until the daemon that locked the BAR
 * file (seen at least once) lets it go: RCI_SIM_EXIT_SIGNAL or
 * RCI_SIM_EXIT_HOST_CLOSED. */
enum rci_sim_exit rci_sim_mmio_run(struct rci_sim_mmio *m, volatile sig_atomic_t *stop);
void rci_sim_mmio_get_stats(struct rci_sim_mmio *m, struct rci_card_stats *s);
/* Stop the firmware and unmap everything. */
void rci_sim_mmio_destroy(struct rci_sim_mmio *m);

#endif
