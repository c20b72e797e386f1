/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/record.h — the record format of `ringcast-sub --out FILE` (and of
 * the records inside a buffered PAGE message): how to read such a file.
 * Header only (static inline), so it needs no library.
 *
 * The file is a plain sequence of records, one per received chunk in arrival
 * order, with no file header:
 *
 *   offset  size  field
 *   0       8     tag, unsigned, little-endian
 *   8       4     flags (RC_CHUNK_FLAG_*), unsigned, little-endian
 *   12      4     length L of the payload in bytes, unsigned, little-endian
 *   16      L     the payload
 *   16 + L  0..7  zero bytes, so that the record's size is a multiple of 8
 *
 * So the next record starts 16 + ((L + 7) & ~7) bytes after this one.
 */
#ifndef RINGCAST_RECORD_H
#define RINGCAST_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include "ringcast/common.h"

#define RC_RECORD_HEADER_BYTES 16u

struct rc_record {
    uint64_t tag;
    uint32_t flags;          /* RC_CHUNK_FLAG_* */
    uint32_t len;            /* payload bytes */
    const uint8_t *payload;  /* points into the buffer given to rc_record_parse() */
};

static inline uint64_t rc_record_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = bytes; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

/* Parse the record at the start of buf[0..avail). Returns its size on the
 * file (header, payload and padding: the offset of the next record), or 0
 * when buf does not hold a whole record (read more, or the file ends in the
 * middle of one). */
static inline size_t rc_record_parse(const void *buf, size_t avail, struct rc_record *r)
{
    const uint8_t *p = (const uint8_t *)buf;
    if (avail < RC_RECORD_HEADER_BYTES)
        return 0;
    uint32_t len = (uint32_t)rc_record_le(p + 12, 4);
    size_t size = RC_RECORD_HEADER_BYTES + (((size_t)len + 7u) & ~(size_t)7u);
    if (avail < size)
        return 0;
    r->tag = rc_record_le(p, 8);
    r->flags = (uint32_t)rc_record_le(p + 8, 4);
    r->len = len;
    r->payload = p + RC_RECORD_HEADER_BYTES;
    return size;
}

#endif
