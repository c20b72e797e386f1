/* SPDX-License-Identifier: BSD-3-Clause */
/* block_parse.c — FELIX ToHost block parser (see block_parse.h). */
#include "readout/block_parse.h"

#include <endian.h>
#include <string.h>
#include "readout/felix_block.h"

static uint16_t load_le16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return le16toh(v);
}

static uint32_t load_le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

enum rci_readout_bad_kind rci_block_parse_header(const uint8_t *blk, uint32_t block_size,
                                               struct rci_block_header *h)
{
    uint16_t word0 = load_le16(blk);
    uint16_t marker = load_le16(blk + 2);

    if (marker == FELIX_MARKER_ABCD || marker == FELIX_MARKER_ABCE) {
        /* The classic formats only exist as 1 KiB blocks. */
        if (block_size != FELIX_MIN_BLOCK)
            return RCI_BAD_BLOCK_SIZE;
        h->trailer_bytes = marker == FELIX_MARKER_ABCD ? 2 : 4;
    } else if ((marker & FELIX_C0CE_MASK) == FELIX_MARKER_C0CE) {
        uint32_t size_code = (marker >> 8) & 0x3fu;
        if ((size_code + 1) * 1024u != block_size)
            return RCI_BAD_BLOCK_SIZE;
        h->trailer_bytes = 4;
    } else {
        return RCI_BAD_MARKER;
    }
    h->elink = word0 & FELIX_ELINK_MASK;
    h->seq = word0 >> FELIX_SEQ_SHIFT;
    return RCI_BAD_NONE;
}

/* Decode one trailer word into type, length and chunk flags. */
static void decode_trailer(const uint8_t *p, unsigned trailer_bytes, unsigned *type,
                           uint32_t *len, uint8_t *flags, bool *all_zero)
{
    if (trailer_bytes == 2) {
        uint16_t t = load_le16(p);
        *all_zero = t == 0;
        *type = t >> FELIX_T16_TYPE_SHIFT;
        *len = t & FELIX_T16_LEN_MASK;
        *flags = (uint8_t)(((t & FELIX_T16_TRUNC) ? RCI_CHUNK_TRUNCATED : 0) |
                           ((t & FELIX_T16_ERROR) ? RCI_CHUNK_ERROR : 0) |
                           ((t & FELIX_T16_CRC) ? RCI_CHUNK_CRC_ERROR : 0));
    } else {
        uint32_t t = load_le32(p);
        *all_zero = t == 0;
        *type = t >> FELIX_T32_TYPE_SHIFT;
        *len = t & FELIX_T32_LEN_MASK;
        *flags = (uint8_t)(((t & FELIX_T32_TRUNC) ? RCI_CHUNK_TRUNCATED : 0) |
                           ((t & FELIX_T32_ERROR) ? RCI_CHUNK_ERROR : 0) |
                           ((t & FELIX_T32_CRC) ? RCI_CHUNK_CRC_ERROR : 0) |
                           ((t & FELIX_T32_BUSY) ? RCI_CHUNK_BUSY : 0));
    }
}

static bool is_data_type(unsigned type)
{
    return type == FELIX_SUB_FIRST || type == FELIX_SUB_LAST || type == FELIX_SUB_WHOLE ||
           type == FELIX_SUB_MIDDLE;
}

/* A chunk continues across blocks only at a block's edges: FIRST must be the
 * last data subchunk, LAST the first one, MIDDLE the only one. Timeout,
 * out-of-band and reserved subchunks do not take part in the order. Checked
 * during the backward walk: *seen counts data subchunks met so far (they
 * follow this one in the block), *must_be_first is set by a LAST or MIDDLE
 * (nothing may precede them). */
static bool type_order_ok(unsigned type, unsigned *seen, bool *must_be_first)
{
    if (!is_data_type(type))
        return true;
    if (*must_be_first)
        return false;
    if ((type == FELIX_SUB_FIRST || type == FELIX_SUB_MIDDLE) && *seen != 0)
        return false;
    *must_be_first = type == FELIX_SUB_LAST || type == FELIX_SUB_MIDDLE;
    (*seen)++;
    return true;
}

/* The padding between a payload's end and its trailer is zero. A length
 * lowered by a corrupt bit then usually shows as non-zero "padding". */
static bool padding_is_zero(const uint8_t *blk, uint32_t payload_pos, uint32_t len,
                            uint32_t padded)
{
    for (uint32_t i = len; i < padded; i++)
        if (blk[payload_pos + i] != 0)
            return false;
    return true;
}

/* A FIRST or MIDDLE carries at least one byte: a chunk is cut only where its
 * block is full, so an empty head or middle is never written. (An empty LAST
 * may carry flags found at the chunk's end.) */
static bool split_ok(unsigned type, uint32_t len)
{
    return len != 0 || (type != FELIX_SUB_FIRST && type != FELIX_SUB_MIDDLE);
}

/* One non-null trailer at pos (its payload padded ends there). */
static enum rci_readout_bad_kind check_subchunk(const uint8_t *blk, uint32_t pos,
                                               unsigned trailer_bytes, unsigned type,
                                               uint32_t len)
{
    uint32_t padded = (len + trailer_bytes - 1) / trailer_bytes * trailer_bytes;
    if (padded > pos - FELIX_HEADER_BYTES || (type == FELIX_SUB_OOB && len != 0))
        return RCI_BAD_LENGTH;
    if (!split_ok(type, len))
        return RCI_BAD_SPLIT;
    if (!padding_is_zero(blk, pos - padded, len, padded))
        return RCI_BAD_PADDING;
    return RCI_BAD_NONE;
}

enum rci_readout_bad_kind rci_block_parse_subchunks(const uint8_t *blk, uint32_t block_size,
                                                  unsigned trailer_bytes,
                                                  struct rci_subchunk *subs, unsigned cap,
                                                  unsigned *first)
{
    uint32_t pos = block_size;      /* everything at or after pos is parsed */
    unsigned out = cap;             /* subs[out .. cap-1] are filled, forward order */
    unsigned data_seen = 0;
    bool must_be_first = false;

    while (pos > FELIX_HEADER_BYTES) {
        unsigned type;
        uint32_t len;
        uint8_t flags;
        bool all_zero;
        if (pos - FELIX_HEADER_BYTES < trailer_bytes)
            return RCI_BAD_LENGTH;
        pos -= trailer_bytes;
        decode_trailer(blk + pos, trailer_bytes, &type, &len, &flags, &all_zero);
        if (type == FELIX_SUB_NULL) {
            /* Filler, only after the last subchunk. */
            if (!all_zero || out != cap)
                return RCI_BAD_NULL_TRAILER;
            continue;
        }
        enum rci_readout_bad_kind bad = check_subchunk(blk, pos, trailer_bytes, type, len);
        if (bad != RCI_BAD_NONE)
            return bad;
        if (!type_order_ok(type, &data_seen, &must_be_first))
            return RCI_BAD_TYPE_ORDER;
        pos -= (len + trailer_bytes - 1) / trailer_bytes * trailer_bytes;
        if (out == 0)   /* cannot happen with cap >= block_size / 2; guards a bad caller */
            return RCI_BAD_LENGTH;
        out--;
        subs[out] = (struct rci_subchunk){ .offset = pos, .len = len, .type = (uint8_t)type,
                                          .flags = flags };
    }
    *first = out;
    return RCI_BAD_NONE;
}
