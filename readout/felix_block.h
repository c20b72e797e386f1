/* SPDX-License-Identifier: BSD-3-Clause */
/* felix_block.h — the FELIX ToHost block format (little-endian), shared by the
 * simulator (writer) and the decoder (reader). See readout/README.md. */
#ifndef RCI_FELIX_BLOCK_H
#define RCI_FELIX_BLOCK_H
#include <stdint.h>

#define FELIX_MARKER_ABCD   0xABCDu   /* 1 KiB blocks, 16-bit trailers */
#define FELIX_MARKER_ABCE   0xABCEu   /* 1 KiB blocks, 32-bit trailers */
#define FELIX_MARKER_C0CE   0xC0CEu   /* phase-2: bits 13:8 = size/1KiB - 1, 32-bit trailers */
#define FELIX_C0CE_MASK     0xC0FFu   /* marker bits outside the size code */
#define FELIX_HEADER_BYTES  4u
#define FELIX_ELINK_MASK    0x7ffu    /* header word 0 bits 10:0 */
#define FELIX_SEQ_SHIFT     11u       /* header word 0 bits 15:11 */
#define FELIX_SEQ_MOD       32u
#define FELIX_MIN_BLOCK     1024u
#define FELIX_MAX_BLOCK     65536u

enum felix_format { FELIX_FMT_ABCD = 0, FELIX_FMT_ABCE, FELIX_FMT_C0CE };

enum felix_sub_type {
    FELIX_SUB_NULL = 0, FELIX_SUB_FIRST = 1, FELIX_SUB_LAST = 2, FELIX_SUB_WHOLE = 3,
    FELIX_SUB_MIDDLE = 4, FELIX_SUB_TIMEOUT = 5, FELIX_SUB_RESERVED = 6, FELIX_SUB_OOB = 7
};

/* 32-bit trailer */
#define FELIX_T32_LEN_MASK   0xffffu
#define FELIX_T32_BUSY       (1u << 25)
#define FELIX_T32_CRC        (1u << 26)
#define FELIX_T32_ERROR      (1u << 27)
#define FELIX_T32_TRUNC      (1u << 28)
#define FELIX_T32_TYPE_SHIFT 29u
/* 16-bit trailer */
#define FELIX_T16_LEN_MASK   0x3ffu
#define FELIX_T16_CRC        (1u << 10)
#define FELIX_T16_ERROR      (1u << 11)
#define FELIX_T16_TRUNC      (1u << 12)
#define FELIX_T16_TYPE_SHIFT 13u

#endif
