/* SPDX-License-Identifier: BSD-3-Clause */
/* vfio.h — internal to readout/: a PCIe card's BAR0 and DMA mappings through
 * the kernel's VFIO interface, with the VFIO ioctls directly (why not DPDK's
 * PCI bus: readout/README.md, "Real cards").
 *
 * rci_vfio_open checks, in this order, and names what is missing with the fix:
 * /dev/vfio/vfio exists (the kernel has VFIO), the PCI device exists in sysfs,
 * it is bound to vfio-pci, it has an IOMMU group (the IOMMU is on), the group
 * is viable (every device of the group bound to vfio-pci or unbound) and not
 * open in another process (the kernel allows one: a card in use is refused
 * with -EBUSY). Then it maps BAR0 and turns on bus mastering.
 * Not thread-safe; one struct per card. */
#ifndef RCI_VFIO_H
#define RCI_VFIO_H
#include <stddef.h>
#include <stdint.h>

struct rci_vfio_dev {
    int container, group, device;   /* descriptors, -1 when closed */
    volatile uint8_t *bar0;          /* mapping of BAR0 */
    size_t bar0_size;
    uint64_t dma_iova, dma_size;     /* the one DMA mapping (0 size: none) */
};

/* 0, or -errno with the reason and the fix in err. */
int  rci_vfio_open(const char *pci_address, struct rci_vfio_dev *d, char *err, size_t errlen);
/* Map [vaddr, vaddr + size) for the card's DMA at iova (read and write;
 * the kernel pins the pages). One mapping per device. 0 or -errno. */
int  rci_vfio_dma_map(struct rci_vfio_dev *d, void *vaddr, size_t size, uint64_t iova,
                     char *err, size_t errlen);
/* Undo everything rci_vfio_open and rci_vfio_dma_map did; safe on a
 * half-opened or closed struct. */
void rci_vfio_close(struct rci_vfio_dev *d);

#endif
