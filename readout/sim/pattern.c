/* SPDX-License-Identifier: BSD-3-Clause */
/* pattern.c — the simulator's deterministic payload (layout in pattern.h).
 *
 * Chunk word k (bytes 8k .. 8k+7) is the sequence number for k = 0 and
 * rci_pattern_word(tag, seq, k) otherwise, stored little-endian. Fill and check
 * work a word at a time; only a partial first or last word goes byte by byte. */
#include "readout/sim/pattern.h"

#include <endian.h>
#include <string.h>

static inline uint64_t chunk_word(uint64_t tag, uint64_t seq, uint64_t k)
{
    return k == 0 ? seq : rci_pattern_word(tag, seq, k);
}

static inline uint8_t chunk_byte(uint64_t tag, uint64_t seq, size_t i)
{
    return (uint8_t)(chunk_word(tag, seq, i / 8) >> (8 * (i % 8)));
}

void rci_pattern_fill(uint8_t *dst, size_t from, size_t len, uint64_t tag, uint64_t seq)
{
    size_t i = from, end = from + len;
    while (i < end && i % 8 != 0) {
        *dst++ = chunk_byte(tag, seq, i);
        i++;
    }
    for (; end - i >= 8; i += 8, dst += 8) {
        uint64_t w = htole64(chunk_word(tag, seq, i / 8));
        memcpy(dst, &w, 8);
    }
    while (i < end) {
        *dst++ = chunk_byte(tag, seq, i);
        i++;
    }
}

/* Offset of the first differing byte of an 8-byte word, as a chunk offset. */
static long first_diff(const uint8_t *got, uint64_t want_le, size_t chunk_off)
{
    uint8_t want[8];
    memcpy(want, &want_le, 8);
    for (unsigned b = 0; b < 8; b++)
        if (got[b] != want[b])
            return (long)(chunk_off + b);
    return -1;
}

long rci_pattern_check(const uint8_t *src, size_t from, size_t len, uint64_t tag, uint64_t seq)
{
    size_t i = from, end = from + len;
    while (i < end && i % 8 != 0) {
        if (*src != chunk_byte(tag, seq, i))
            return (long)i;
        src++;
        i++;
    }
    for (; end - i >= 8; i += 8, src += 8) {
        uint64_t want = htole64(chunk_word(tag, seq, i / 8));
        uint64_t got;
        memcpy(&got, src, 8);
        if (got != want)
            return first_diff(src, want, i);
    }
    while (i < end) {
        if (*src != chunk_byte(tag, seq, i))
            return (long)i;
        src++;
        i++;
    }
    return -1;
}

uint64_t rci_pattern_seq(const uint8_t *src, size_t len)
{
    uint64_t seq = 0;
    size_t n = len < 8 ? len : 8;
    for (size_t b = 0; b < n; b++)
        seq |= (uint64_t)src[b] << (8 * b);
    return seq;
}
