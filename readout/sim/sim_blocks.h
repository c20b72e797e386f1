/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_blocks.h — writing FELIX ToHost blocks: the simulated card's block
 * writer, and the API tests use to build blocks (decoder tests, round trips).
 * The byte layout is specified in readout/README.md ("Block format").
 *
 * Three layers, each usable on its own:
 *
 *  1. Encoding helpers. rci_felix_marker() gives the header's second word for
 *     a format and block size; rci_felix_trailer() encodes a 16- or 32-bit
 *     trailer from (type, length, RCI_CHUNK_* flags); rci_felix_check_format()
 *     says whether a (format, block size) pair exists.
 *
 *  2. rci_blk_*: compose one block by hand, any layout, including ones a
 *     decoder must reject:
 *         struct rci_blk b;
 *         rci_blk_begin(&b, dst, FELIX_FMT_C0CE, 4096, elink, seq);   // header
 *         uint8_t *p = rci_blk_add(&b, FELIX_SUB_WHOLE, 100, 0);       // pad + trailer
 *         memcpy(p, payload, 100);                                    // payload slot
 *         rci_blk_finish(&b);                                          // null trailers
 *     rci_blk_add() returns the payload slot (NULL if the subchunk does not
 *     fit); the caller writes the payload there (or not).
 *
 *  3. rci_sim_gen: the simulator's data source. Chunks of the configured sizes
 *     on e-links 0..elinks-1 (tag = tag_base + e-link), one block per e-link
 *     in turn (round robin), so the blocks of a long chunk are interleaved
 *     with other e-links' blocks; payload = pattern.h (per-tag sequence
 *     numbers from 0), nothing (fill = none) or a CLOCK_MONOTONIC stamp in
 *     the first 8 bytes taken as the chunk's first block is written (fill =
 *     timestamp, for latency); error injection; a run length in chunks; or
 *     the replay of a block file. Deterministic for a seed (except the
 *     stamps): the same config gives the same bytes. rci_sim_gen_next() writes one block.
 *
 * rci_sim_block_count() is a minimal trailer walk for accounting (replay
 * statistics, tests); the decoder proper is readout/readout.c.
 *
 * Not thread-safe: one generator per thread.
 */
#ifndef RCI_SIM_BLOCKS_H
#define RCI_SIM_BLOCKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "readout/chunk.h"
#include "readout/felix_block.h"
#include "readout/sim/sim_params.h"

/* ---- 1. encoding -------------------------------------------------------- */

/* 0 if fmt exists with this block size (abcd/abce: 1 KiB; c0ce: 1..64 KiB in
 * 1 KiB steps), else -EINVAL with the reason in err (may be NULL). */
int rci_felix_check_format(enum felix_format fmt, uint32_t block_size, char *err, size_t errlen);
/* The header's second 16-bit word (c0ce: 0xC0CE | (size/1KiB - 1) << 8). */
uint16_t rci_felix_marker(enum felix_format fmt, uint32_t block_size);
/* Does the marker word belong to (fmt, block_size)? */
bool rci_felix_marker_ok(uint16_t marker, enum felix_format fmt, uint32_t block_size);
/* 2 for abcd, 4 otherwise. */
unsigned rci_felix_trailer_bytes(enum felix_format fmt);
/* Largest length the trailer's length field holds: 1023 or 65535. */
uint32_t rci_felix_max_len(enum felix_format fmt);
/* Encode a trailer. flags are RCI_CHUNK_* (chunk.h); the 16-bit trailer has no
 * busy bit, so RCI_CHUNK_BUSY is dropped there. len is masked to the field. */
uint32_t rci_felix_trailer(enum felix_format fmt, enum felix_sub_type type, uint32_t len,
                          uint32_t flags);
/* Header first word: e-link [10:0], sequence [15:11]. */
static inline uint16_t rci_felix_header_word(unsigned elink, unsigned seq)
{
    return (uint16_t)((elink & FELIX_ELINK_MASK) | ((seq % FELIX_SEQ_MOD) << FELIX_SEQ_SHIFT));
}

/* ---- 2. composing one block ------------------------------------------- */

struct rci_blk {
    uint8_t *blk;            /* block start */
    uint32_t size;           /* block size */
    uint32_t pos;            /* next free byte (starts after the header) */
    uint32_t tbytes;         /* trailer size: 2 or 4 */
    enum felix_format fmt;
};

/* Write the header (e-link, seq % 32, marker) at dst. 0, or -EINVAL for a
 * bad format/size pair or elink > 2047 (nothing written). */
int rci_blk_begin(struct rci_blk *b, uint8_t *dst, enum felix_format fmt, uint32_t block_size,
                 unsigned elink, unsigned seq);
/* Bytes not yet used (a multiple of the trailer size). */
static inline uint32_t rci_blk_space(const struct rci_blk *b) { return b->size - b->pos; }
/* Largest payload one more subchunk can carry (0 when only an empty one fits
 * or nothing does: check rci_blk_space() >= tbytes for the former). */
static inline uint32_t rci_blk_room(const struct rci_blk *b)
{
    return rci_blk_space(b) > b->tbytes ? rci_blk_space(b) - b->tbytes : 0;
}
/* Bytes a subchunk of len payload bytes occupies: payload rounded up to the
 * trailer size, plus the trailer. */
static inline uint32_t rci_blk_footprint(const struct rci_blk *b, uint32_t len)
{
    return (len + b->tbytes - 1) / b->tbytes * b->tbytes + b->tbytes;
}
/* Append a subchunk: zero padding after the payload slot and the trailer are
 * written; returns the payload slot (len bytes, not touched) or NULL if it
 * does not fit or len exceeds the trailer's length field. */
uint8_t *rci_blk_add(struct rci_blk *b, enum felix_sub_type type, uint32_t len, uint32_t flags);
/* Fill the rest of the block with null trailers (zero bytes). */
void rci_blk_finish(struct rci_blk *b);

/* ---- 3. the simulator's generator ------------------------------------- */

struct rci_sim_gen_config {
    enum felix_format format;
    uint32_t block_size;
    uint64_t tag_base;
    /* Used: elinks, chunk_size_min/max, fill, err_*, replay_file, replay_loop,
     * run_chunks, seed. Not used here (the firmware's): rate, run_ns. */
    struct rci_sim_params sim;
};

/* What a block may start: new chunks start only while fewer than new_chunks
 * were started and fewer than payload_bytes were written in this block.
 * Continuations of chunks already started are always written. A rate
 * limiter passes its tokens here; NULL means no limit. */
struct rci_sim_budget {
    uint64_t new_chunks;
    uint64_t payload_bytes;
};

struct rci_sim_block_info {
    unsigned elink, seq;            /* from the header written */
    uint32_t subchunks;
    uint32_t chunks_started;        /* first or whole subchunks */
    uint32_t chunks_completed;      /* whole or last subchunks */
    uint64_t payload_bytes;         /* sum of subchunk lengths */
    bool malformed;                 /* an injected malformed block (no chunks) */
    bool seqskip;                   /* its sequence number skipped one */
};

struct rci_sim_gen_stats {
    uint64_t blocks;
    uint64_t chunks_started, chunks_completed;
    uint64_t payload_bytes;
    uint64_t injected_truncated, injected_crc, injected_malformed, injected_seqskip;
    uint64_t replay_loops;          /* times a looped replay file restarted */
};

struct rci_sim_gen;

/* Validates the config (errors name the setting or, for a replay file, the
 * file and byte offset) and loads the replay file if any. 0 or -errno. */
int  rci_sim_gen_create(const struct rci_sim_gen_config *c, struct rci_sim_gen **out,
                       char *err, size_t errlen);
void rci_sim_gen_destroy(struct rci_sim_gen *g);

/* Write the next block (block_size bytes at dst). Returns 1 and fills info
 * (may be NULL), or 0 when nothing is left: the run length was reached and
 * every chunk started is complete, or a replay played once has ended.
 * No allocation, no system call. */
int  rci_sim_gen_next(struct rci_sim_gen *g, uint8_t *dst, const struct rci_sim_budget *budget,
                     struct rci_sim_block_info *info);
/* Start no more chunks (a time limit ran out); chunks already started are
 * still completed by later blocks. A replay stops at once. */
void rci_sim_gen_stop_new_chunks(struct rci_sim_gen *g);
/* True once rci_sim_gen_next() has nothing left to write. */
bool rci_sim_gen_done(const struct rci_sim_gen *g);
void rci_sim_gen_get_stats(const struct rci_sim_gen *g, struct rci_sim_gen_stats *s);
/* Blocks in the replay file (0 when not replaying). */
uint64_t rci_sim_gen_replay_blocks(const struct rci_sim_gen *g);

/* ---- accounting walk -------------------------------------------------- */

struct rci_block_counts {
    uint32_t subchunks;             /* non-null trailers */
    uint32_t chunks_completed;      /* whole + last */
    uint32_t chunks_started;        /* whole + first */
    uint64_t payload_bytes;
};

/* Walk the trailer chain of one block backwards from its end (header
 * checked against fmt/block_size). 0 and counts, or -EINVAL if the marker is
 * wrong or a length runs past the header (counts then hold what was walked). */
int rci_sim_block_count(const uint8_t *blk, enum felix_format fmt, uint32_t block_size,
                       struct rci_block_counts *counts);

#endif
