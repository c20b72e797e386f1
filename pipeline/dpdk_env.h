/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk_env.h — start DPDK's EAL once per process, for rte_ring only.
 *
 * ringcast uses DPDK for its lock-free rings (pipeline/chunk_queue.h), not for
 * devices, so the EAL is started with what this machine allows and nothing
 * it would grab:
 *  - memory: hugepages when /sys/kernel/mm/hugepages reports free pages and a
 *    hugetlbfs is mounted (`--in-memory`: no shared files, pages unlinked);
 *    otherwise `--no-huge --no-shconf -m 256` (256 MiB of ordinary memory,
 *    IOVA = VA: fine for rings, not DMA-capable for real devices).
 *    (DPDK 22.11 refuses --no-huge together with --in-memory.)
 *  - `--no-pci`: the EAL never probes or binds PCI devices (the card is
 *    driven by ringcast's own BAR mapping);
 *  - `--no-telemetry`: no telemetry thread or socket;
 *  - `--file-prefix=ringcast-<pid>`: a unique runtime directory per process,
 *    so several daemons and tests never share EAL state;
 *  - `--log-level=lib.eal:error`: the EAL says only what failed;
 *  - `--lcores=0@(<this thread's CPUs>)`: one lcore whose CPU set is the
 *    calling thread's whole affinity. A plain `-l 0` would pin the caller
 *    to one CPU, and every thread it starts afterwards would inherit that.
 *    The affinity is compared after start and restored if the EAL changed it.
 *
 * Call from the main thread before other threads use rings. Threads that are
 * not EAL lcores may use rte_ring (they have no lcore id; rings need none).
 * rte_eal_init() works once per process: the result (success or the error)
 * is kept and every later call returns it.
 */
#ifndef RCI_DPDK_ENV_H
#define RCI_DPDK_ENV_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RCI_DPDK_NO_HUGE_MB 256u

enum rci_dpdk_memory {
    RCI_DPDK_AUTO = 0,      /* hugepages if free pages and a hugetlbfs mount exist */
    RCI_DPDK_NO_HUGE,       /* always --no-huge */
    RCI_DPDK_HUGE,          /* hugepages or fail (checked before the EAL is touched) */
};

/* Start the EAL (RCI_DPDK_AUTO). 0, or -errno with the reason in err:
 * -ENOMEM (HUGE without free hugepages; the EAL was not touched and a later
 * call may still start it), -EALREADY (after rci_dpdk_cleanup), or the EAL's
 * own error, with its arguments, which is then final for this process. */
int  rci_dpdk_init(char *err, size_t errlen);
int  rci_dpdk_init_mode(enum rci_dpdk_memory mode, char *err, size_t errlen);

/* The EAL is up (rings may be created). */
bool rci_dpdk_started(void);
/* How it was started, for the log ("" before): memory mode and arguments. */
const char *rci_dpdk_describe(void);

/* Free hugepages of all sizes (from sysfs), and whether hugetlbfs is mounted. */
uint64_t rci_dpdk_free_hugepages(void);
bool rci_dpdk_hugetlbfs_mounted(void);

/* The EAL arguments init would use for mode, space-separated, into buf.
 * AUTO is resolved first. Returns 0 or -ENOSPC. */
int  rci_dpdk_eal_args(enum rci_dpdk_memory mode, char *buf, size_t len);

/* Release the EAL's resources and remove its runtime directory. Every ring
 * must be destroyed first; the EAL cannot start again in this process. */
void rci_dpdk_cleanup(void);

#endif
