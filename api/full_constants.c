/* SPDX-License-Identifier: BSD-3-Clause */
/* full_constants.c — ties the public constants (include/ringcast/) to the
 * internal definitions they mirror, so that they cannot drift: the build
 * fails when one changes without the other. Only the full library compiles
 * it (it sees readout/); it has no code. */
#include "ringcast/common.h"
#include "ringcast/sub.h"
#include "readout/chunk.h"
#include "net/wire.h"

_Static_assert(RC_CHUNK_FLAG_TRUNCATED == RCI_CHUNK_TRUNCATED, "public chunk flag differs from readout/chunk.h");
_Static_assert(RC_CHUNK_FLAG_ERROR == RCI_CHUNK_ERROR, "public chunk flag differs from readout/chunk.h");
_Static_assert(RC_CHUNK_FLAG_CRC_ERROR == RCI_CHUNK_CRC_ERROR, "public chunk flag differs from readout/chunk.h");
_Static_assert(RC_CHUNK_FLAG_BUSY == RCI_CHUNK_BUSY, "public chunk flag differs from readout/chunk.h");
_Static_assert(RC_CHUNK_FLAGS_ALL == (RCI_CHUNK_TRUNCATED | RCI_CHUNK_ERROR | RCI_CHUNK_CRC_ERROR | RCI_CHUNK_BUSY),
               "public RC_CHUNK_FLAGS_ALL is not every readout flag");
_Static_assert(RC_SUB_MIN_RX_BUFFER == RCI_WIRE_MIN_RX_BUFFER, "public RC_SUB_MIN_RX_BUFFER differs from net/wire.h");
