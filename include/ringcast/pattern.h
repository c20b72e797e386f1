/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/pattern.h — checking the simulated card's payload: what
 * `ringcast-sub --verify` does, for a program of your own that receives a
 * simulated card's chunks (in both libraries; no callbacks, any thread).
 *
 * With `sim.N.fill = pattern` a chunk of length L on tag T with per-tag
 * sequence number S holds S as a little-endian u64 in its first bytes (only
 * the first L if L < 8), then a deterministic function of (T, S, offset). A
 * verifier reads S (rc_pattern_seq), checks that each tag's S goes up by one,
 * then checks every byte (rc_pattern_check). With `sim.N.fill = timestamp`
 * the first RC_PATTERN_STAMP_BYTES bytes are the card's write time,
 * CLOCK_MONOTONIC nanoseconds, little-endian (one host only). */
#ifndef RINGCAST_PATTERN_H
#define RINGCAST_PATTERN_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/common.h"

#define RC_PATTERN_STAMP_BYTES 8u

/* The sequence number stored in a chunk's first bytes (len may be < 8). */
RC_API uint64_t rc_pattern_seq(const uint8_t *chunk, size_t len);
/* Check bytes [from, from + len) of a chunk of (tag, seq): the offset within
 * the chunk of the first wrong byte, or -1 when every byte is right. */
RC_API long rc_pattern_check(const uint8_t *bytes, size_t from, size_t len, uint64_t tag, uint64_t seq);
/* Write the pattern of (tag, seq) for bytes [from, from + len) of a chunk
 * (a test publisher's payload). */
RC_API void rc_pattern_fill(uint8_t *dst, size_t from, size_t len, uint64_t tag, uint64_t seq);

#endif
