/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_mmio.c — the simulated firmware behind a plain BAR file (sim_mmio.h). */
#include "readout/sim/sim_mmio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/monotonic.h"
#include "dma/dma_mem.h"
#include "readout/pcie_card.h"
#include "readout/wupper_regs.h"

#if !defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#error "the bar-file stand-in needs a 16-byte compare-and-swap (x86-64: -mcx16)"
#endif

#define IDLE_SPIN_NS     (1000000ull)   /* keep passing quickly this long after a change */
#define IDLE_SLEEP_NS    (100000ull)    /* then sleep this long between passes */
#define BUSY_SLEEP_NS    (10000ull)     /* between passes while things change */
#define LIVENESS_NS      (100000000ull) /* look at the daemon's lock this often */

struct rci_sim_mmio {
    int bar_fd;
    uint8_t *file_bar;                     /* the host's BAR: the file */
    struct rci_mem_region ring;            /* the daemon's ring, attached */
    struct rci_card *card;                 /* firmware over a private simulated BAR */
    uint64_t fwd[WUPPER_BAR0_SIZE / 8];    /* last host value forwarded, per register */
    uint64_t status[WUPPER_MAX_DESCRIPTORS][2];   /* last status stored into the file */
    char bar_file[RCI_CARD_PATH_MAX + 1];
    bool host_seen;                        /* a daemon held the file's lock once */
};

static uint64_t file_load(const struct rci_sim_mmio *m, uint32_t off)
{
    return __atomic_load_n((const uint64_t *)(m->file_bar + off), __ATOMIC_ACQUIRE);
}

/* One 16-byte atomic store, as the card updates its 128-bit register. */
static void file_store128(struct rci_sim_mmio *m, uint32_t off, uint64_t lo, uint64_t hi)
{
    unsigned __int128 *p = (unsigned __int128 *)(void *)(m->file_bar + off);
    unsigned __int128 want = ((unsigned __int128)hi << 64) | lo, old = *p;
    while (!__sync_bool_compare_and_swap(p, old, want))
        old = *p;
}

/* Forward one host register if it changed; true if it did. */
static bool forward(struct rci_sim_mmio *m, uint32_t off, uint64_t v)
{
    if (m->fwd[off / 8] == v)
        return false;
    m->fwd[off / 8] = v;
    rci_bar_write64(&m->card->bar, off, v);
    return true;
}

static bool forward_host_writes(struct rci_sim_mmio *m)
{
    /* DESC_ENABLE first: what the host wrote before enabling is then visible. */
    uint64_t enable = file_load(m, WUPPER_DESC_ENABLE);
    bool changed = false;
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++) {
        changed |= forward(m, WUPPER_DESC_START(n), file_load(m, WUPPER_DESC_START(n)));
        changed |= forward(m, WUPPER_DESC_END(n), file_load(m, WUPPER_DESC_END(n)));
        changed |= forward(m, WUPPER_DESC_CTRL(n), file_load(m, WUPPER_DESC_CTRL(n)));
        changed |= forward(m, WUPPER_DESC_RD_POINTER(n), file_load(m, WUPPER_DESC_RD_POINTER(n)));
    }
    changed |= forward(m, WUPPER_DESC_ENABLE, enable);
    return changed;
}

static bool mirror_status(struct rci_sim_mmio *m)
{
    bool changed = false;
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++) {
        uint64_t lo, hi;
        rci_bar_read128(&m->card->bar, WUPPER_STATUS(n), &lo, &hi);
        if (lo == m->status[n][0] && hi == m->status[n][1])
            continue;
        file_store128(m, WUPPER_STATUS(n), lo, hi);
        m->status[n][0] = lo;
        m->status[n][1] = hi;
        changed = true;
    }
    return changed;
}

static int map_bar_file(struct rci_sim_mmio *m, char *err, size_t errlen)
{
    m->bar_fd = open(m->bar_file, O_RDWR | O_CLOEXEC);
    if (m->bar_fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "bar file %s: %s%s", m->bar_file, strerror(e),
                    e == ENOENT ? " (start ringcast-readout first: it creates it)" : "");
        return -e;
    }
    struct stat st;
    if (fstat(m->bar_fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)WUPPER_BAR0_SIZE) {
        rci_set_err(err, errlen, "bar file %s is not a regular file of at least %u bytes",
                    m->bar_file, WUPPER_BAR0_SIZE);
        return -EINVAL;
    }
    void *p = mmap(NULL, WUPPER_BAR0_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, m->bar_fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        rci_set_err(err, errlen, "bar file %s: mmap: %s", m->bar_file, strerror(e));
        return -e;
    }
    m->file_bar = p;
    return 0;
}

/* The file holds whatever the host left: the first pass forwards every
 * register the host set (an enabled descriptor starts a run) and overwrites
 * every status register with the firmware's (zero before its first
 * enable), so nothing of an earlier run remains. */
static void sync_initial(struct rci_sim_mmio *m)
{
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++)
        m->status[n][0] = m->status[n][1] = UINT64_MAX;   /* store at the first pass */
    memset(m->fwd, 0, sizeof m->fwd);
}

int rci_sim_mmio_create(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                       const char *bar_file, struct rci_sim_mmio **out, char *err, size_t errlen)
{
    struct rci_sim_mmio *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->bar_fd = -1;
    snprintf(m->bar_file, sizeof m->bar_file, "%s", bar_file);
    char ring_name[RCI_MEM_NAME_MAX + 1], bar_name[RCI_MEM_NAME_MAX + 1];
    int rc = map_bar_file(m, err, errlen);
    if (rc == 0)
        rc = rci_sim_shm_names(cp->shm_name, ring_name, bar_name, err, errlen);
    if (rc == 0)
        rc = rci_mem_map(cp->memory, cp->ring_size, ring_name, false, false, &m->ring, err, errlen);
    if (rc == 0)
        rc = rci_sim_card_create(cp, sp, m->ring.addr, m->ring.size, &m->card, err, errlen);
    if (rc == 0)
        rc = rci_card_start(m->card);
    if (rc != 0) {
        rci_sim_mmio_destroy(m);
        return rc;
    }
    sync_initial(m);
    *out = m;
    return 0;
}

/* false once a daemon held the file's lock and no longer does. */
static bool host_still_there(struct rci_sim_mmio *m)
{
    pid_t holder = rci_pcie_bar_file_holder(m->bar_file);
    if (holder > 0)
        m->host_seen = true;
    return !(m->host_seen && holder <= 0);
}

enum rci_sim_exit rci_sim_mmio_run(struct rci_sim_mmio *m, volatile sig_atomic_t *stop)
{
    uint64_t last_change = rci_now_ns(), next_liveness = 0;
    while (!*stop) {
        bool changed = forward_host_writes(m);
        changed |= mirror_status(m);
        uint64_t now = rci_now_ns();
        if (changed)
            last_change = now;
        if (now >= next_liveness) {
            if (!host_still_there(m))
                return RCI_SIM_EXIT_HOST_CLOSED;
            next_liveness = now + LIVENESS_NS;
        }
        rci_sleep_ns(now - last_change < IDLE_SPIN_NS ? BUSY_SLEEP_NS : IDLE_SLEEP_NS);
    }
    return RCI_SIM_EXIT_SIGNAL;
}

void rci_sim_mmio_get_stats(struct rci_sim_mmio *m, struct rci_card_stats *s)
{
    rci_card_get_stats(m->card, s);
}

void rci_sim_mmio_destroy(struct rci_sim_mmio *m)
{
    if (!m)
        return;
    /* Powered off: no status of this run may look like the next run's. */
    if (m->file_bar)
        for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++)
            file_store128(m, WUPPER_STATUS(n), 0, 0);
    if (m->card) {
        rci_card_stop(m->card);
        rci_card_destroy(m->card);
    }
    rci_mem_unmap(&m->ring);
    if (m->file_bar)
        munmap(m->file_bar, WUPPER_BAR0_SIZE);
    if (m->bar_fd >= 0)
        close(m->bar_fd);
    free(m);
}
