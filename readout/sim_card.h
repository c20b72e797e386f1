/* sim_card.h — the simulated card: plays the firmware. It owns an in-memory
 * BAR with Wupper semantics and writes FELIX ToHost blocks into the ring the
 * host programmed, never overtaking the host's RD_POINTER (it stalls instead).
 *
 * Two ways to run it:
 *  - in-process: rc_sim_card_create() starts a firmware thread;
 *  - separate process: the daemon creates the BAR in shared memory with
 *    rc_sim_bar_create_shm() and `ringcast-sim` attaches to the BAR and the ring
 *    with rc_sim_card_attach() and runs the same firmware loop.
 */
#ifndef RC_SIM_CARD_H
#define RC_SIM_CARD_H
#include <stddef.h>
#include <stdint.h>
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/sim_params.h"

/* In-process simulated card writing into ring memory [ring, ring+ring_size). */
int rc_sim_card_create(const struct rc_card_params *cp, const struct rc_sim_params *sp,
                       uint8_t *ring, size_t ring_size, struct rc_card **out,
                       char *err, size_t errlen);

#endif
