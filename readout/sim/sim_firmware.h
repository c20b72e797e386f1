/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_firmware.h — internal to readout/ (and its tests): the simulated
 * card's firmware. It watches its descriptor's registers in the sim BAR,
 * writes blocks from a generator (sim_blocks.h) into the ring from START to
 * END and wraps, publishes CURRENT_ADDRESS / EVEN_DMA under the status
 * seqlock, never overtakes the host (free space = ring size - (its monotonic
 * write total - the host's monotonic read total)), and counts everything in
 * the BAR's private page.
 *
 * rci_sim_fw_step() is one deterministic tick (no threads, no sleeping):
 * tests call it by hand; rci_sim_fw_run() is the loop of the firmware thread
 * and of the ringcast-sim process.
 */
#ifndef RCI_SIM_FIRMWARE_H
#define RCI_SIM_FIRMWARE_H
#include <stddef.h>
#include <stdint.h>
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/sim/sim_bar.h"
#include "readout/sim/sim_params.h"

struct rci_sim_fw;

/* bar: a formatted sim BAR (rci_sim_bar_format); ring: this process's mapping
 * of the ring the host will program (bus address START maps to ring[0]).
 * 0 or -errno with the reason in err. */
int  rci_sim_fw_create(uint8_t *bar, const struct rci_card_params *cp,
                      const struct rci_sim_params *sp, uint8_t *ring, uint64_t ring_size,
                      struct rci_sim_fw **out, char *err, size_t errlen);
void rci_sim_fw_destroy(struct rci_sim_fw *fw);

/* One tick: react to the registers (enable, reset), then write up to
 * max_blocks blocks while the ring has room and the rate limiter allows,
 * publish the write pointer and the statistics. Returns blocks written. */
unsigned rci_sim_fw_step(struct rci_sim_fw *fw, unsigned max_blocks);
/* Raise the data-available interrupt on eventfd fd (not owned): after
 * blocks blocks or timeout_ns after the oldest unsignalled one, and at once
 * when the ring is full or the run finished. fd -1: no interrupts. */
void rci_sim_fw_set_irq(struct rci_sim_fw *fw, int fd, uint32_t blocks, uint64_t timeout_ns);
enum rci_sim_fw_state rci_sim_fw_state(const struct rci_sim_fw *fw);
/* Monotonic bytes written in the current run. */
uint64_t rci_sim_fw_write_total(const struct rci_sim_fw *fw);

enum rci_sim_loop_cmd { RCI_SIM_LOOP_RUN = 0, RCI_SIM_LOOP_PAUSE, RCI_SIM_LOOP_EXIT };
/* Tick until control() says EXIT; while it says PAUSE the firmware writes
 * nothing (state idle). Waits adaptively: spins briefly, then sleeps
 * half the time stalled so far (30 us .. 500 us) while stalled; sleeps
 * for the rate limiter; 1 ms while idle. */
void rci_sim_fw_run(struct rci_sim_fw *fw,
                   enum rci_sim_loop_cmd (*control)(void *ctx, const struct rci_sim_fw *fw),
                   void *ctx);

/* The firmware of an in-process simulated card (rci_sim_card_create), for
 * tests that step it by hand instead of starting its thread. */
struct rci_sim_fw *rci_sim_card_fw(struct rci_card *c);
/* The firmware of an attached ringcast-sim process (sim_card.h), likewise. */
struct rci_sim_process;
struct rci_sim_fw *rci_sim_process_fw(struct rci_sim_process *p);

#endif
