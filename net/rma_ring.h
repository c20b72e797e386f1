/* SPDX-License-Identifier: BSD-3-Clause */
/* rma_ring.h — the arithmetic of RMA delivery, shared by the writer (the
 * publisher, net/rma_write.c) and the reader (the subscriber library), so
 * that both sides place records by the same rule (net/README.md, "RMA
 * delivery").
 *
 * A subscriber's receive ring of `size` bytes (a multiple of 8) is addressed
 * by monotonic 64-bit positions; position p lives at offset p % size. Records
 * (a DATA message: 40-byte header, payload) are written back to back at
 * 8-byte aligned positions; a record takes its length rounded up to 8. A
 * record never straddles the ring's end: when it does not fit before the end,
 * the rest of the ring is skipped and it goes to offset 0. The writer may
 * write [start, start + span) only when start + span <= credit + size, where
 * credit is the reader's released position (CREDIT message).
 *
 * Immediate data (FI_REMOTE_CQ_DATA, 8 bytes): offset / 8 in the high 32 bits,
 * record length in bytes in the low 32 bits (tcp and tcp;ofi_rxm report
 * len = 0 at the target, so the length must travel here). */
#ifndef RCI_RMA_RING_H
#define RCI_RMA_RING_H
#include <stdbool.h>
#include <stdint.h>

/* Bytes a record of len bytes takes in the ring. */
static inline uint64_t rci_rma_span(uint64_t len) { return (len + 7u) & ~(uint64_t)7u; }

/* Where a record of len bytes starts when the writer is at wpos: wpos itself,
 * or the next multiple of size when it would straddle the end. Returns false
 * when the record can never fit (len 0 or span > size). */
bool rci_rma_place(uint64_t wpos, uint64_t size, uint64_t len, uint64_t *start);

/* May a record of len bytes placed at start (rci_rma_place) be written with the
 * reader's ring free from credit on? */
static inline bool rci_rma_fits(uint64_t start, uint64_t len, uint64_t credit, uint64_t size)
{
    return start >= credit && start - credit + rci_rma_span(len) <= size;
}

/* Largest record written to a ring of `size` bytes: an eighth of it, so that a
 * reader that returns space in quarters of the ring (credit threshold) never
 * leaves the writer waiting for a record it could take (span plus the skip
 * before it stay under a quarter). `cap` (0: none) is a provider limit
 * (shm: what it copies at post). */
uint64_t rci_rma_max_record(uint64_t size, uint64_t cap);

static inline uint64_t rci_rma_imm(uint64_t offset, uint32_t len)
{
    return ((offset >> 3) << 32) | len;
}
static inline uint64_t rci_rma_imm_offset(uint64_t imm) { return (imm >> 32) << 3; }
/* Block-stream spans (whole blocks: their length is a multiple of 1 KiB, so
 * its low bit is free): set in the length of the first span written after
 * blocks of the stream were dropped for this subscriber (slow_policy =
 * drop). Its decoder then drops the chunks left open before the hole, which
 * the e-links' 5-bit block sequence misses when a multiple of 32 of an
 * e-link's blocks went. */
#define RCI_RMA_IMM_STREAM_GAP 1u
static inline uint32_t rci_rma_imm_len(uint64_t imm) { return (uint32_t)imm; }

/* A credit the reader sent: valid when it never goes back and never passes
 * what was written (written: the writer's position after its last record). */
static inline bool rci_rma_credit_valid(uint64_t old_credit, uint64_t credit, uint64_t written)
{
    return credit >= old_credit && credit <= written;
}

#endif
