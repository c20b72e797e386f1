/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_card.h — the simulated card: plays the firmware. It owns an in-memory
 * BAR with Wupper semantics and writes FELIX ToHost blocks into the ring the
 * host programmed, never overtaking the host's RD_POINTER (it stalls instead).
 * Register model, private BAR page and block layout: readout/README.md.
 *
 * Bus addresses: the host programs START/END with the ring's bus address.
 * For a simulated card that is the host process's virtual address of the
 * ring (IOVA = VA); the firmware maps bus address a to its own mapping
 * ring_local + (a - START) and refuses a descriptor whose END - START is not
 * the size of the ring it has mapped.
 *
 * Two ways to run it:
 *  - in-process: rci_sim_card_create(); rci_card_start() starts a firmware
 *    thread, rci_card_stop() joins it;
 *  - separate process: the daemon creates the BAR in shared memory with
 *    rci_sim_bar_create_shm() and the ring as the shm object
 *    "<shm_name>-ring" (rci_sim_shm_names()); `ringcast-sim` attaches to both
 *    with rci_sim_card_attach() and runs the same firmware loop. The daemon's
 *    rci_card_start/stop set a flag in the BAR's private page that the process
 *    obeys; rci_card_get_stats reads the statistics the process publishes
 *    there.
 * Either way the firmware waits until the host enables its DMA descriptor.
 */
#ifndef RCI_SIM_CARD_H
#define RCI_SIM_CARD_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "dma/dma_mem.h"
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/sim/sim_params.h"

#define RCI_SIM_SHM_RING_SUFFIX "-ring"
#define RCI_SIM_SHM_BAR_SUFFIX  "-bar"

/* In-process simulated card writing into ring memory [ring, ring+ring_size).
 * Validates cp (block format and size, descriptor, ring size a multiple of
 * the block size) and sp (see sim_blocks.h; a replay file is loaded here).
 * 0 or -errno with the reason in err. */
int rci_sim_card_create(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                       uint8_t *ring, size_t ring_size, struct rci_card **out,
                       char *err, size_t errlen);

/* The shm object names of a sim-process card: "<base>-ring", "<base>-bar".
 * 0, or -ENAMETOOLONG / -EINVAL (empty base) with the reason in err. */
int rci_sim_shm_names(const char *base, char ring[RCI_MEM_NAME_MAX + 1],
                     char bar[RCI_MEM_NAME_MAX + 1], char *err, size_t errlen);

/* Daemon side of a sim-process card: create the BAR shm object
 * "<cp->shm_name>-bar" and describe the card in its private page (ring size,
 * block size and format, tag base, descriptor). The returned card's start /
 * stop ask the attached process to run / pause (stop waits up to 1 s for it
 * to pause); get_stats reads what it published; destroy tells it the card
 * is gone and unlinks the BAR. 0 or -errno with the reason in err; on
 * success err is "" or a warning to log (a stale BAR left by a killed
 * daemon was replaced). */
int rci_sim_bar_create_shm(const struct rci_card_params *cp, struct rci_card **out,
                          char *err, size_t errlen);

/* Process side (ringcast-sim). */
struct rci_sim_process;

/* Read the card description a daemon wrote into "<shm_name>-bar": fills
 * ring_size, block_size, block_format, tag_base, dma_descriptor, shm_name
 * and type of cp. 0 or -errno (e.g. -ENOENT: no daemon created it yet). */
int rci_sim_bar_describe(const char *shm_name, struct rci_card_params *cp, char *err,
                        size_t errlen);
/* Attach to "<cp->shm_name>-bar" and "<cp->shm_name>-ring" (rci_mem_map,
 * RCI_MEM_SHM, create = false), check cp against the daemon's description
 * (ring size, block size and format, tag base, descriptor must agree),
 * claim the card (one process at a time; a dead predecessor's claim is taken
 * over) and build the firmware from sp. 0 or -errno with the reason in err. */
int rci_sim_card_attach(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                       struct rci_sim_process **out, char *err, size_t errlen);

enum rci_sim_exit {
    RCI_SIM_EXIT_SIGNAL = 0,   /* *stop became non-zero */
    RCI_SIM_EXIT_FINISHED,     /* the run length was reached / a replay played once */
    RCI_SIM_EXIT_HOST_CLOSED,  /* the daemon destroyed the card */
    RCI_SIM_EXIT_HOST_GONE     /* the daemon died (pid gone, heartbeat stopped) */
};
/* Run the firmware loop until one of enum rci_sim_exit happens. */
enum rci_sim_exit rci_sim_process_run(struct rci_sim_process *p, volatile sig_atomic_t *stop);
void rci_sim_process_get_stats(struct rci_sim_process *p, struct rci_card_stats *s);
/* Why the firmware refused the host's descriptor programming ("" if never). */
const char *rci_sim_process_last_error(struct rci_sim_process *p);
/* Release the claim and unmap (the daemon's objects stay). */
void rci_sim_card_detach(struct rci_sim_process *p);

#endif
