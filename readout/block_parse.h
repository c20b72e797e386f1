/* SPDX-License-Identifier: BSD-3-Clause */
/* block_parse.h — internal to readout/: a stateless parser of one FELIX
 * ToHost block (header, then the trailer chain walked backwards from the end).
 * The whole chain is validated before anything is used, so a malformed block
 * has no effect beyond being counted. */
#ifndef RCI_BLOCK_PARSE_H
#define RCI_BLOCK_PARSE_H
#include <stdint.h>
#include "readout/readout.h"

struct rci_block_header {
    unsigned elink;          /* 0..2047 */
    unsigned seq;            /* 0..31 */
    unsigned trailer_bytes;  /* 2 (abcd) or 4 (abce, c0ce) */
};

struct rci_subchunk {
    uint32_t offset;         /* of the payload, from the block start */
    uint32_t len;            /* payload bytes, before padding */
    uint8_t type;            /* enum felix_sub_type, never NULL */
    uint8_t flags;           /* RCI_CHUNK_* */
};

/* Most subchunks one block can hold: one per trailer slot. */
static inline unsigned rci_block_max_subchunks(uint32_t block_size)
{
    return block_size / 2;
}

/* Returns RCI_BAD_NONE and fills h, or RCI_BAD_MARKER / RCI_BAD_BLOCK_SIZE. */
enum rci_readout_bad_kind rci_block_parse_header(const uint8_t *blk, uint32_t block_size,
                                               struct rci_block_header *h);

/* Parses the trailer chain of a block whose header gave trailer_bytes.
 * On success (RCI_BAD_NONE) the subchunks in forward order are
 * subs[*first .. cap - 1]; cap must be >= rci_block_max_subchunks(). Null
 * trailers (filler) are skipped. Otherwise returns why the block is malformed. */
enum rci_readout_bad_kind rci_block_parse_subchunks(const uint8_t *blk, uint32_t block_size,
                                                  unsigned trailer_bytes,
                                                  struct rci_subchunk *subs, unsigned cap,
                                                  unsigned *first);

#endif
