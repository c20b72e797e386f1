/* SPDX-License-Identifier: BSD-3-Clause */
/* vfio.c — BAR0 and DMA mappings of a PCIe card through VFIO (vfio.h).
 * The sequence is the kernel's (Documentation/driver-api/vfio.rst): container,
 * group, IOMMU type, device, region info, mmap; DMA through
 * VFIO_IOMMU_MAP_DMA. This machine has no VFIO: only the checks before the
 * first ioctl have run here (readout/README.md, "What was tested"). */
#include "readout/vfio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/vfio.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/symlink.h"
#include "readout/wupper_regs.h"

#define PCI_COMMAND_OFFSET   0x04
#define PCI_COMMAND_MEMORY   0x2     /* respond to memory accesses (the BAR) */
#define PCI_COMMAND_MASTER   0x4     /* bus mastering: the card may DMA */

/* Everything that can be checked in sysfs before opening anything. */
static int check_sysfs(const char *addr, char *group, size_t grouplen, char *err, size_t errlen)
{
    char path[PATH_MAX], driver[64];
    if (access("/dev/vfio/vfio", F_OK) != 0) {
        rci_set_err(err, errlen, "VFIO is not available: /dev/vfio/vfio does not exist (%s); load it "
                    "with `modprobe vfio-pci` (a kernel with VFIO and an IOMMU is needed)",
                    strerror(errno));
        return -ENODEV;
    }
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", addr);
    if (access(path, F_OK) != 0) {
        rci_set_err(err, errlen, "no PCI device %s (%s: %s); `lspci -D -d 10dc:` lists the cards",
                    addr, path, strerror(errno));
        return -ENODEV;
    }
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/driver", addr);
    int rc = rci_link_basename(path, driver, sizeof driver);
    if (rc != 0 || strcmp(driver, "vfio-pci") != 0) {
        rci_set_err(err, errlen, "PCI device %s is %s%s, not to vfio-pci: `echo vfio-pci > "
                    "/sys/bus/pci/devices/%s/driver_override; echo %s > /sys/bus/pci/drivers_probe` "
                    "(after unbinding it)", addr, rc != 0 ? "bound to no driver" : "bound to ",
                    rc != 0 ? "" : driver, addr, addr);
        return -ENODEV;
    }
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/iommu_group", addr);
    if (rci_link_basename(path, group, grouplen) != 0) {
        rci_set_err(err, errlen, "PCI device %s has no IOMMU group: the IOMMU is off (boot with "
                    "intel_iommu=on or amd_iommu=on, and enable VT-d / AMD-Vi in the BIOS)", addr);
        return -ENODEV;
    }
    return 0;
}

static int open_group(const char *addr, const char *group, struct rci_vfio_dev *d, char *err,
                      size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/vfio/%s", group);
    d->group = open(path, O_RDWR | O_CLOEXEC);
    if (d->group < 0) {
        int e = errno;
        if (e == EBUSY)
            rci_set_err(err, errlen, "card %s is in use: its VFIO group %s is open in another process "
                        "(another ringcast-readout? `fuser -v %s`)", addr, path, path);
        else
            rci_set_err(err, errlen, "card %s: cannot open %s: %s%s", addr, path, strerror(e),
                        e == EACCES ? " (run as root or give the user the group file)" : "");
        return -e;
    }
    struct vfio_group_status st = { .argsz = sizeof st };
    if (ioctl(d->group, VFIO_GROUP_GET_STATUS, &st) != 0 || !(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
        rci_set_err(err, errlen, "card %s: VFIO group %s is not viable: bind every device of "
                    "/sys/kernel/iommu_groups/%s/devices to vfio-pci (or unbind it)", addr, group, group);
        return -EPERM;
    }
    return 0;
}

static int open_container(const char *addr, struct rci_vfio_dev *d, char *err, size_t errlen)
{
    d->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
    if (d->container < 0) {
        int e = errno;
        rci_set_err(err, errlen, "card %s: cannot open /dev/vfio/vfio: %s", addr, strerror(e));
        return -e;
    }
    if (ioctl(d->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
        ioctl(d->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) <= 0) {
        rci_set_err(err, errlen, "card %s: the kernel's VFIO has no type-1 v2 IOMMU support", addr);
        return -ENOTSUP;
    }
    if (ioctl(d->group, VFIO_GROUP_SET_CONTAINER, &d->container) != 0 ||
        ioctl(d->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "card %s: cannot attach its VFIO group to a container: %s", addr,
                    strerror(e));
        return -e;
    }
    return 0;
}

/* Memory decoding and bus mastering on, through the config-space region. */
static int enable_bus_master(const char *addr, struct rci_vfio_dev *d, char *err, size_t errlen)
{
    struct vfio_region_info cfg = { .argsz = sizeof cfg, .index = VFIO_PCI_CONFIG_REGION_INDEX };
    uint16_t cmd;
    if (ioctl(d->device, VFIO_DEVICE_GET_REGION_INFO, &cfg) != 0 ||
        pread(d->device, &cmd, sizeof cmd, (off_t)(cfg.offset + PCI_COMMAND_OFFSET)) != sizeof cmd) {
        rci_set_err(err, errlen, "card %s: cannot read its PCI command register: %s", addr,
                    strerror(errno));
        return -EIO;
    }
    cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    if (pwrite(d->device, &cmd, sizeof cmd, (off_t)(cfg.offset + PCI_COMMAND_OFFSET)) != sizeof cmd) {
        rci_set_err(err, errlen, "card %s: cannot enable bus mastering: %s", addr, strerror(errno));
        return -EIO;
    }
    return 0;
}

static int map_bar0(const char *addr, struct rci_vfio_dev *d, char *err, size_t errlen)
{
    d->device = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, addr);
    if (d->device < 0) {
        int e = errno;
        rci_set_err(err, errlen, "card %s: VFIO gives no device descriptor: %s", addr, strerror(e));
        return -e;
    }
    struct vfio_region_info bar = { .argsz = sizeof bar, .index = VFIO_PCI_BAR0_REGION_INDEX };
    if (ioctl(d->device, VFIO_DEVICE_GET_REGION_INFO, &bar) != 0 ||
        !(bar.flags & VFIO_REGION_INFO_FLAG_MMAP) || bar.size < WUPPER_BAR0_SIZE) {
        rci_set_err(err, errlen, "card %s: BAR0 cannot be mapped (size %llu, flags 0x%x): not a "
                    "Wupper card?", addr, (unsigned long long)bar.size, (unsigned)bar.flags);
        return -ENODEV;
    }
    void *p = mmap(NULL, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, d->device, (off_t)bar.offset);
    if (p == MAP_FAILED) {
        int e = errno;
        rci_set_err(err, errlen, "card %s: mmap of BAR0 failed: %s", addr, strerror(e));
        return -e;
    }
    d->bar0 = p;
    d->bar0_size = bar.size;
    return enable_bus_master(addr, d, err, errlen);
}

int rci_vfio_open(const char *addr, struct rci_vfio_dev *d, char *err, size_t errlen)
{
    *d = (struct rci_vfio_dev){ .container = -1, .group = -1, .device = -1 };
    char group[32];
    int rc = check_sysfs(addr, group, sizeof group, err, errlen);
    if (rc == 0)
        rc = open_group(addr, group, d, err, errlen);
    if (rc == 0)
        rc = open_container(addr, d, err, errlen);
    if (rc == 0)
        rc = map_bar0(addr, d, err, errlen);
    if (rc != 0)
        rci_vfio_close(d);
    return rc;
}

int rci_vfio_dma_map(struct rci_vfio_dev *d, void *vaddr, size_t size, uint64_t iova, char *err,
                    size_t errlen)
{
    if (d->dma_size != 0)
        return -EEXIST;
    struct vfio_iommu_type1_dma_map m = {
        .argsz = sizeof m,
        .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
        .vaddr = (uint64_t)(uintptr_t)vaddr,
        .iova = iova,
        .size = size,
    };
    if (ioctl(d->container, VFIO_IOMMU_MAP_DMA, &m) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "IOMMU mapping of the %zu-byte ring at IOVA 0x%llx failed: %s%s", size,
                    (unsigned long long)iova, strerror(e),
                    e == ENOMEM ? " (RLIMIT_MEMLOCK too low? `ringcast-doctor` checks it)" : "");
        return -e;
    }
    d->dma_iova = iova;
    d->dma_size = size;
    return 0;
}

void rci_vfio_close(struct rci_vfio_dev *d)
{
    if (d->dma_size) {
        struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof u, .iova = d->dma_iova,
                                                .size = d->dma_size };
        (void)ioctl(d->container, VFIO_IOMMU_UNMAP_DMA, &u);
        d->dma_size = 0;
    }
    if (d->bar0)
        munmap((void *)(uintptr_t)d->bar0, d->bar0_size);
    d->bar0 = NULL;
    if (d->device >= 0)
        close(d->device);
    if (d->group >= 0)
        close(d->group);
    if (d->container >= 0)
        close(d->container);
    d->device = d->group = d->container = -1;
}
