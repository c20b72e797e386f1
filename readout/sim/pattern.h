/* SPDX-License-Identifier: BSD-3-Clause */
/* pattern.h — the simulator's deterministic payload ("fill = pattern").
 *
 * Layout of a chunk of length L on tag T with per-tag sequence number S:
 *   bytes 0..7 : S as little-endian u64 (only the first L bytes if L < 8),
 *   bytes 8..  : byte i = byte (i % 8) of rci_pattern_word(T, S, i / 8), LE.
 * A verifier reads S from the chunk, checks continuity per tag, then checks
 * every byte. Writer (simulator) and verifiers (tests, ringcast-sub) share this.
 */
#ifndef RCI_PATTERN_H
#define RCI_PATTERN_H
#include <stddef.h>
#include <stdint.h>

static inline uint64_t rci_pattern_word(uint64_t tag, uint64_t seq, uint64_t word)
{
    uint64_t x = (tag * 0x9E3779B97F4A7C15ull) ^ (seq * 0xC2B2AE3D27D4EB4Full) ^
                 (word * 0x165667B19E3779F9ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
}

/* Write the pattern of (tag, seq) for bytes [from, from + len) of a chunk. */
void rci_pattern_fill(uint8_t *dst, size_t from, size_t len, uint64_t tag, uint64_t seq);
/* Check bytes [from, from + len) of a chunk; returns the offset (within the
 * chunk) of the first wrong byte, or -1 when all are right. */
long rci_pattern_check(const uint8_t *src, size_t from, size_t len, uint64_t tag, uint64_t seq);
/* The sequence number stored in a chunk's first bytes (len may be < 8). */
uint64_t rci_pattern_seq(const uint8_t *src, size_t len);

#endif
