/* SPDX-License-Identifier: BSD-3-Clause */
/* client_pattern.c — ringcast/pattern.h over the simulator's pattern
 * (readout/sim/pattern.c, linked into both libraries). */
#include "ringcast/pattern.h"

#include "readout/sim/pattern.h"
#include "readout/sim/sim_params.h"

_Static_assert(RC_PATTERN_STAMP_BYTES == RCI_SIM_STAMP_BYTES, "the public stamp size is the simulator's");

uint64_t rc_pattern_seq(const uint8_t *chunk, size_t len) { return rci_pattern_seq(chunk, len); }

long rc_pattern_check(const uint8_t *bytes, size_t from, size_t len, uint64_t tag, uint64_t seq)
{
    return rci_pattern_check(bytes, from, len, tag, seq);
}

void rc_pattern_fill(uint8_t *dst, size_t from, size_t len, uint64_t tag, uint64_t seq)
{
    rci_pattern_fill(dst, from, len, tag, seq);
}
