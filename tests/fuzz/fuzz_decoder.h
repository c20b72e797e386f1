/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_decoder.h — the input layout of fuzz_decoder, shared with the corpus
 * generator (make_corpus.c) so that seeds mean what the fuzzer reads.
 *
 *   byte 0  block format: value % 3 = abcd, abce, c0ce (1 KiB blocks)
 *   byte 1  ring size: 2 + value % 7 blocks
 *   byte 2  descriptor pool: 1 + (value & 63) chunks in flight;
 *           value >> 6 = sink behaviour (enum fz_sink)
 *   byte 3  max_chunk_pieces = 1 + (value & 15); max_chunk_size = 64 << (value >> 4)
 *   then operations, one byte each (value % FZ_OPS), some followed by operands:
 *     FZ_OP_WRITE     the next 1024 bytes (fewer at the end: zero filled) are
 *                     written at the card's write position, which advances
 *                     by 1024 (skipped while the ring is full)
 *     FZ_OP_POINTER   2 bytes d: the card reports write position read + d
 *                     (any value: unaligned, beyond the ring, backwards)
 *     FZ_OP_DECODE    one decode pass
 *     FZ_OP_RELEASE_OLDEST, FZ_OP_RELEASE_ONE (1 byte: which held chunk)
 *     FZ_OP_RELEASE_BOGUS  8 bytes: a key that was never handed out
 */
#ifndef RCI_FUZZ_DECODER_H
#define RCI_FUZZ_DECODER_H

#define FZ_BLOCK_SIZE 1024u
#define FZ_HEADER_BYTES 4u

enum fz_op {
    FZ_OP_WRITE = 0,
    FZ_OP_WRITE2,          /* writes are the common case: two codes */
    FZ_OP_POINTER,
    FZ_OP_DECODE,
    FZ_OP_RELEASE_OLDEST,
    FZ_OP_RELEASE_ONE,
    FZ_OP_RELEASE_BOGUS,
    FZ_OPS
};

enum fz_sink {
    FZ_SINK_ACCEPT = 0,    /* keep every chunk until an operation releases it */
    FZ_SINK_AGAIN,         /* -EAGAIN on every third offer (backpressure) */
    FZ_SINK_REFUSE,        /* -EIO on every fifth offer (chunk dropped) */
    FZ_SINK_RELEASE_NOW    /* release the key inside the sink */
};

#endif
