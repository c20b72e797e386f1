/* SPDX-License-Identifier: BSD-3-Clause */
/* pcie_card.c — card.N.type = pcie: a Wupper card's BAR0 through VFIO, or a
 * file mapped as BAR0 (pcie_card.h). */
#include "readout/pcie_card.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/monotonic.h"
#include "readout/vfio.h"
#include "readout/wupper_regs.h"

#define PCIE_START_TIMEOUT_NS (2000000000ull)

struct pcie_card {
    struct rci_card card;
    struct rci_vfio_dev vfio;      /* device: the VFIO mapping */
    int bar_fd;                    /* bar_file: the locked file, else -1 */
    void *bar_map;                 /* bar_file: its mapping */
    const uint8_t *ring;
    size_t ring_size;
    unsigned desc;
};

static struct pcie_card *impl(struct rci_card *c) { return c->impl; }

/* The card writes while its descriptor is enabled; this makes it stop after
 * the block it is writing (DESC_ENABLE is read-modify-written: the caller
 * must not start or stop another descriptor of this card meanwhile). */
static void disable_descriptor(struct pcie_card *p)
{
    uint64_t en = rci_bar_read64(&p->card.bar, WUPPER_DESC_ENABLE);
    rci_bar_write64(&p->card.bar, WUPPER_DESC_ENABLE, en & ~(1ull << p->desc));
}

/* A Wupper card writes as soon as the host enables its descriptor
 * (rci_wupper_dma_start, before this is called). Enabling resets the
 * descriptor's status to START; until the card did, the status is whatever
 * it was (a file's zeros, a previous run's position), which the readout
 * thread would count as bad status reads or, worse, take as data. So wait
 * until CURRENT_ADDRESS lies in [START, END): at once on hardware, one pass
 * of the bridge for the bar-file stand-in. A card that never gets there has
 * no working firmware. */
static int pcie_start(struct rci_card *c)
{
    struct pcie_card *p = impl(c);
    uint64_t start = rci_bar_read64(&c->bar, WUPPER_DESC_START(p->desc));
    uint64_t end = rci_bar_read64(&c->bar, WUPPER_DESC_END(p->desc));
    uint64_t deadline = rci_now_ns() + PCIE_START_TIMEOUT_NS;
    for (;;) {
        uint64_t cur, bits;
        rci_bar_read128(&c->bar, WUPPER_STATUS(p->desc), &cur, &bits);
        if (cur >= start && cur < end)
            return 0;
        if (rci_now_ns() >= deadline)
            return -ETIMEDOUT;
        rci_sleep_ns(100000);
    }
}

static void pcie_stop(struct rci_card *c)
{
    disable_descriptor(impl(c));
}

/* The Wupper register map has no production counters: what the host
 * decodes is all it knows. */
static void pcie_get_stats(struct rci_card *c, struct rci_card_stats *s)
{
    (void)c;
    memset(s, 0, sizeof *s);
}

static uint64_t pcie_bus_address(struct rci_card *c, const void *addr)
{
    struct pcie_card *p = impl(c);
    const uint8_t *a = addr;
    if (a < p->ring || a >= p->ring + p->ring_size)
        return UINT64_MAX;
    return RCI_PCIE_RING_IOVA + (uint64_t)(a - p->ring);
}

static void pcie_destroy(struct rci_card *c)
{
    struct pcie_card *p = impl(c);
    /* never leave a card writing into memory about to be freed */
    if (p->card.bar.ops)
        disable_descriptor(p);
    rci_vfio_close(&p->vfio);
    if (p->bar_map)
        munmap(p->bar_map, WUPPER_BAR0_SIZE);
    if (p->bar_fd >= 0)
        close(p->bar_fd);   /* drops the fcntl lock */
    free(p);
}

static const struct rci_card_ops pcie_ops = {
    .kind = "pcie",
    .start = pcie_start,
    .stop = pcie_stop,
    .get_stats = pcie_get_stats,
    .destroy = pcie_destroy,
    .bus_address = pcie_bus_address,
};

static struct flock whole_file_lock(short type)
{
    return (struct flock){ .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
}

pid_t rci_pcie_bar_file_holder(const char *bar_file)
{
    int fd = open(bar_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct flock fl = whole_file_lock(F_WRLCK);
    int rc = fcntl(fd, F_GETLK, &fl);
    close(fd);
    if (rc != 0)
        return -errno;
    return fl.l_type == F_UNLCK ? 0 : fl.l_pid;
}

/* Open, lock (one user at a time), size and map the file. */
static int open_bar_file(struct pcie_card *p, const char *path, char *err, size_t errlen)
{
    p->bar_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (p->bar_fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "bar_file %s: %s", path, strerror(e));
        return -e;
    }
    struct flock fl = whole_file_lock(F_WRLCK);
    if (fcntl(p->bar_fd, F_SETLK, &fl) != 0) {
        pid_t holder = rci_pcie_bar_file_holder(path);
        rci_set_err(err, errlen, "card in use: bar_file %s is locked by process %ld (another "
                    "ringcast-readout?)", path, (long)holder);
        return -EBUSY;
    }
    struct stat st;
    if (fstat(p->bar_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rci_set_err(err, errlen, "bar_file %s is not a regular file", path);
        return -EINVAL;
    }
    if (st.st_size < (off_t)WUPPER_BAR0_SIZE && ftruncate(p->bar_fd, WUPPER_BAR0_SIZE) != 0) {
        int e = errno;
        rci_set_err(err, errlen, "bar_file %s: cannot size it to %u bytes: %s", path,
                    WUPPER_BAR0_SIZE, strerror(e));
        return -e;
    }
    void *m = mmap(NULL, WUPPER_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, p->bar_fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        rci_set_err(err, errlen, "bar_file %s: mmap: %s", path, strerror(e));
        return -e;
    }
    p->bar_map = m;
    rci_bar_init_mmio(&p->card.bar, m);
    return 0;
}

static int open_vfio(struct pcie_card *p, const char *addr, uint8_t *ring, size_t ring_size,
                     char *err, size_t errlen)
{
    int rc = rci_vfio_open(addr, &p->vfio, err, errlen);
    if (rc != 0)
        return rc;
    rci_bar_init_mmio(&p->card.bar, p->vfio.bar0);
    return rci_vfio_dma_map(&p->vfio, ring, ring_size, RCI_PCIE_RING_IOVA, err, errlen);
}

int rci_pcie_card_open(const struct rci_card_params *cp, uint8_t *ring, size_t ring_size,
                      struct rci_card **out, char *err, size_t errlen)
{
    if (!cp->device[0] == !cp->bar_file[0] || cp->dma_descriptor >= WUPPER_MAX_DESCRIPTORS) {
        rci_set_err(err, errlen, "a pcie card needs exactly one of device and bar_file");
        return -EINVAL;
    }
    struct pcie_card *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->vfio = (struct rci_vfio_dev){ .container = -1, .group = -1, .device = -1 };
    p->bar_fd = -1;
    p->ring = ring;
    p->ring_size = ring_size;
    p->desc = cp->dma_descriptor;
    p->card.ops = &pcie_ops;
    p->card.impl = p;
    int rc = cp->device[0] ? open_vfio(p, cp->device, ring, ring_size, err, errlen)
                           : open_bar_file(p, cp->bar_file, err, errlen);
    if (rc != 0) {
        p->card.bar.ops = NULL;   /* do not touch a BAR we could not fully open */
        pcie_destroy(&p->card);
        return rc;
    }
    if (err && errlen)
        err[0] = '\0';
    *out = &p->card;
    return 0;
}
