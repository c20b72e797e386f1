/* SPDX-License-Identifier: BSD-3-Clause */
/* chunk.h — what the readout layer hands on: a chunk descriptor whose payload
 * pieces point into the DMA ring (never copied). The descriptor stays valid
 * until its key is released with rci_readout_release(). */
#ifndef RCI_CHUNK_H
#define RCI_CHUNK_H
#include <stdint.h>

/* Chunk flags: the OR over the chunk's subchunk trailers. */
#define RCI_CHUNK_TRUNCATED  (1u << 0)
#define RCI_CHUNK_ERROR      (1u << 1)
#define RCI_CHUNK_CRC_ERROR  (1u << 2)
#define RCI_CHUNK_BUSY       (1u << 3)

struct rci_piece {
    const uint8_t *addr;   /* inside the registered ring (or its spill area) */
    uint32_t len;
    uint32_t ring_offset;  /* addr - ring base, for diagnostics; RCI_PIECE_SPILLED
                              for the head of a chunk copied out of a full ring
                              (rci_readout_spill_area) */
};
#define RCI_PIECE_SPILLED UINT32_MAX

struct rci_chunk {
    uint64_t tag;          /* tag_base + e-link */
    uint64_t key;          /* give back with rci_readout_release() */
    uint32_t flags;        /* RCI_CHUNK_* */
    uint32_t length;       /* sum of piece lengths */
    uint32_t npieces;
    uint32_t elink;
    const struct rci_piece *pieces;
};

#endif
