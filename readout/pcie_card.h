/* SPDX-License-Identifier: BSD-3-Clause */
/* pcie_card.h — a Wupper PCIe card (card.N.type = pcie). BAR0 is either a
 * real card's, mapped through VFIO (card.N.device), or a file mapped the same
 * way (card.N.bar_file) that `ringcast-sim --bar-file` serves as firmware.
 * Either way the host reaches it only through the plain MMIO accessors
 * (rci_bar_init_mmio), so the stand-in runs exactly the host code a real
 * card runs.
 *
 * The ring's bus address is RCI_PCIE_RING_IOVA, never its virtual address:
 * VFIO maps the ring there in the card's IOMMU domain; for a bar_file the
 * simulator translates it (readout/README.md, "Bus addresses").
 *
 * One process per card: a VFIO group can be open in one process only, and a
 * bar_file is write-locked (fcntl) by its user; a second one is refused with
 * -EBUSY naming the holder. */
#ifndef RCI_PCIE_CARD_H
#define RCI_PCIE_CARD_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "readout/card.h"
#include "readout/card_params.h"

/* 64 GiB: within the 39-bit address width of the smallest IOMMUs, and not a
 * user-space virtual address, so a host that wrongly used virtual addresses
 * as bus addresses fails at once. */
#define RCI_PCIE_RING_IOVA (1ull << 36)

/* Open card cp and make the ring [ring, ring + ring_size) reachable by its
 * DMA. 0 or -errno with the reason and the fix in err. */
int rci_pcie_card_open(const struct rci_card_params *cp, uint8_t *ring, size_t ring_size,
                      struct rci_card **out, char *err, size_t errlen);

/* The process holding bar_file's lock (a running daemon), 0 if none, -errno
 * if the file cannot be opened. For ringcast-sim's "is the daemon there". */
pid_t rci_pcie_bar_file_holder(const char *bar_file);

#endif
