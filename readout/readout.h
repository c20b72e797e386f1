/* SPDX-License-Identifier: BSD-3-Clause */
/* readout.h — the readout thread and block decoder of one DMA ring.
 *
 * It follows the card's write pointer (adaptive polling: spin, then sleep),
 * takes every new block from the ring, decodes FELIX blocks (all three
 * markers) into chunks and hands each chunk to a sink as a descriptor whose
 * pieces point into the ring. A block goes back to the ring when every chunk
 * touching it has been released; the ring's read pointer is then written to
 * the card in batches.
 *
 * Threads: one owner runs the decoder — the readout thread once started,
 * otherwise the caller of rci_readout_decode(). rci_readout_release() and the
 * statistics getters may be called from any thread. See readout/README.md
 * ("Block decoder") for the decoding rules and what each counter means.
 */
#ifndef RCI_READOUT_H
#define RCI_READOUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dma/dma_ring.h"
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/chunk.h"

/* The sink takes a burst (DPDK's burst style): chunks[0..n-1] in decode
 * order, 1 <= n <= RCI_READOUT_BURST. It returns how many it took: the first
 * ones, 0..n. What it took is its own: it releases each key when it is done
 * (it may release before it returns). What it did not take stays the
 * readout's and is offered again later, first and in the same order
 * (backpressure: nothing is lost, order is kept); the readout decodes nothing
 * more in that pass. A chunk the sink refuses for good is taken and handed
 * back with rci_readout_refuse(): released and counted in sink_errors. The
 * chunks pointed to stay valid until their keys are released; the array
 * itself only for the call. */
#define RCI_READOUT_BURST 32u
typedef unsigned (*rci_chunk_sink_fn)(void *ctx, const struct rci_chunk *const *chunks, unsigned n);

/* A sink that handles one chunk at a time: 0 (taken), -EAGAIN (not now) or
 * another -errno (refused for good). */
typedef int (*rci_chunk_fn)(void *ctx, const struct rci_chunk *chunk);

/* Per e-link counters, as rci_readout_get_elink_stats() copies them out (the
 * live ones are single-writer counters of the readout thread). */
#define RCI_READOUT_MAX_ELINKS 2048u   /* 11-bit e-link field */

struct rci_elink_stats {
    uint64_t blocks, chunks, bytes;
    uint64_t err_truncated, err_crc, err_flag, err_busy;   /* flagged chunks by kind */
    uint64_t err_malformed;        /* blocks with a bad trailer chain: skipped; by kind: */
    uint64_t malformed_length;     /*   a length running past the header, out-of-band with payload */
    uint64_t malformed_null;       /*   a null trailer with bits set or between subchunks */
    uint64_t malformed_order;      /*   type order (RCI_BAD_TYPE_ORDER) */
    uint64_t malformed_padding;    /*   non-zero padding */
    uint64_t malformed_split;      /*   RCI_BAD_SPLIT */
    uint64_t err_bad_start;        /* a block that must go on with the open chunk does not
                                      (starts with a whole/first, or has no data subchunk):
                                      the open chunk and that whole/first are dropped */
    uint64_t err_seq_gap;          /* blocks missing by sequence number */
    uint64_t err_oversize;         /* chunks over max size / pieces: dropped */
    uint64_t err_orphan;           /* middle/last without a first: dropped */
    uint64_t chunks_dropped_gap;   /* open chunks dropped because blocks were missing */
    uint64_t chunks_incomplete;    /* open chunks ended by a first/whole or a malformed block */
    uint64_t timeouts, oob, reserved; /* subchunks of these types: counted, skipped */
    uint64_t chunks_spilled;       /* open chunks copied out of a full ring (not lost) */
    uint64_t chunks_dropped_pool;  /* open chunks dropped: they held every descriptor */
    uint64_t chunks_dropped_ring;  /* open chunks dropped: they held a full ring and were
                                      too long to copy out (longer than a block) */
};

/* Why the last bad block was skipped (rci_readout_stats.last_bad_kind). */
enum rci_readout_bad_kind {
    RCI_BAD_NONE = 0,
    RCI_BAD_MARKER,         /* unknown format marker */
    RCI_BAD_BLOCK_SIZE,     /* marker's block size differs from the configured one */
    RCI_BAD_LENGTH,         /* a trailer's length runs past the block header */
    RCI_BAD_NULL_TRAILER,   /* a type-0 trailer with other bits set */
    RCI_BAD_TYPE_ORDER,     /* first not last / last not first / middle not alone */
    RCI_BAD_PADDING,        /* a padding byte after a subchunk's payload is not zero */
    RCI_BAD_SPLIT           /* an empty first or middle (a chunk is cut only where
                              its block is full) */
};
#define RCI_BAD_KINDS 8     /* RCI_BAD_NONE .. RCI_BAD_SPLIT */

struct rci_readout_stats {
    uint64_t blocks, chunks, bytes;
    uint64_t bad_header;           /* blocks with an unknown marker or block size: skipped */
    uint64_t err_malformed, err_seq_gap, err_oversize, err_orphan;
    uint64_t malformed_length, malformed_null, malformed_order, malformed_padding, malformed_split;
    uint64_t err_bad_start;
    uint64_t chunks_dropped_gap, chunks_incomplete;
    uint64_t timeouts, oob, reserved;
    uint64_t chunks_truncated, chunks_error, chunks_crc, chunks_busy;
    uint64_t releases, bad_releases;
    uint64_t chunks_in_flight;     /* accepted by the sink, not yet released */
    uint64_t sink_again;           /* offers the sink took only part of (or none): backpressure */
    uint64_t sink_errors;          /* chunks the sink refused for good (rci_readout_refuse), or
                                      released without taking them: dropped */
    uint64_t chunks_dropped_pool;  /* open chunks dropped because they held every descriptor */
    uint64_t chunks_dropped_ring;  /* open chunks dropped because they held the full ring's
                                      oldest block and could not be copied out */
    uint64_t chunks_spilled;       /* open chunks copied out of a full ring: nothing lost */
    uint64_t bytes_spilled;        /* payload bytes those copies took */
    uint64_t chunks_cut_at_stop;   /* open chunks the stop cut off: the card stopped (SIGTERM)
                                      before their last piece; their blocks go back to the ring */
    uint64_t bytes_cut_at_stop;    /* their bytes received so far (the card counted them produced) */
    uint64_t pool_empty_ns;        /* time waiting for free descriptors */
    uint64_t polls, sleeps, rd_writes;
    uint64_t irq_waits;            /* wait = interrupt: sleeps on the card's interrupt (ring empty) */
    uint64_t interrupts;           /* ... that an interrupt ended (not the 100 ms safety timeout) */
    uint64_t card_bad_status;      /* card status reads that could not be right: rejected
                                      (CURRENT_ADDRESS outside the ring, wrong parity, ...) */
    uint64_t card_status_lagging;  /* status reads that still showed the read pointer's
                                      previous lap (the card had not yet taken a wrapping
                                      RD_POINTER write): used, not an error */
    uint64_t tap_blocks;           /* blocks handed to the block tap (rci_readout_set_block_tap) */
    uint64_t tap_releases;         /* ... whose tap reference came back */
    uint64_t tap_stalls;           /* decode passes that stopped: the tap had no room */
    uint64_t bad_tap_releases;     /* rci_readout_release_block of a block holding no tap reference */
    uint64_t last_bad_pos;         /* ring position (monotonic) of the last bad block */
    enum rci_readout_bad_kind last_bad_kind;
};

struct rci_readout;

/* card may be NULL (tests drive the ring directly with rci_readout_decode).
 * Validates p against the ring: block_size 1..64 KiB in 1 KiB steps, ring
 * size a multiple of it, pool and piece limits non-zero. */
int  rci_readout_create(const struct rci_card_params *p, struct rci_dma_ring *ring,
                       struct rci_card *card, rci_chunk_sink_fn sink, void *sink_ctx,
                       struct rci_readout **out, char *err, size_t errlen);
/* Stops the thread if running. Chunks still held by a sink become invalid. */
void rci_readout_destroy(struct rci_readout *r);

/* Start the readout thread: it programs the card's DMA over the ring, starts
 * the card and polls. Once per readout object; needs a card. 0 or -errno. */
int  rci_readout_start(struct rci_readout *r);
/* Stop the thread (join), advance the ring and write the final RD_POINTER,
 * then disable the DMA descriptor. It does not stop the card: the caller
 * stops the card first, waits with rci_readout_wait_drained(), then stops. */
void rci_readout_stop(struct rci_readout *r);
/* The same, but when the thread's loop has not turned for stuck_after_ns
 * (0: wait for ever) it is left running, not joined: -ETIMEDOUT, nothing
 * else done, and rci_readout_destroy then frees nothing (the thread may
 * still use it): the process should end soon after. 0 when stopped. */
int rci_readout_stop_bounded(struct rci_readout *r, uint64_t stuck_after_ns);

/* Block tap (a block-stream subscription, pipeline/README.md "Block
 * stream"): every block the decoder takes from the ring, good or bad, is
 * also handed to tap_fn(ctx, block_index, ring_offset, len) right after the
 * take, holding one more reference on the block; the ring's read pointer
 * passes the block only once its chunks are released AND
 * rci_readout_release_block(r, block_index) dropped that reference (any
 * thread, any order). Before each take the decoder asks room_fn(ctx): false
 * stalls it exactly like a full sink (nothing taken, resumed on a later
 * pass, counted in tap_stalls). Set before rci_readout_start / the first
 * decode, once; room_fn may be NULL (always room). tap_fn runs on the
 * decoding thread: no locks, no malloc (a queue push). 0, or -EINVAL (no
 * tap_fn, or set after decoding began) / -EBUSY (a tap is set already). */
typedef bool (*rci_block_room_fn)(void *ctx);
typedef void (*rci_block_tap_fn)(void *ctx, uint32_t block_index, uint64_t ring_offset, uint32_t len);
int  rci_readout_set_block_tap(struct rci_readout *r, rci_block_room_fn room_fn,
                              rci_block_tap_fn tap_fn, void *ctx);
/* Any thread: the tap's reference on block_index is dropped. A block that
 * holds no tap reference (never tapped, released twice, out of range) is
 * rejected and counted in bad_tap_releases. */
void rci_readout_release_block(struct rci_readout *r, uint32_t block_index);

/* Owner thread, a ring without a card (a block-stream subscriber's,
 * api/client_stream.c): blocks were lost just before ring position pos
 * (the publisher dropped some for this subscriber and said so). An e-link's
 * 5-bit block sequence misses a loss of 32 of its blocks, so when the
 * decoder takes the block at pos it drops every open chunk (counted in
 * chunks_dropped_gap) and skips the rest of them, instead of joining an
 * open head to another chunk's tail. pos must be a block's start not yet
 * taken; each mark is used once. */
void rci_readout_mark_gap(struct rci_readout *r, uint64_t pos);

/* One decode pass over everything written up to the ring's written position;
 * returns the number of chunks emitted. Owner thread only: the thread, or
 * tests and the bench when no thread runs (they call note_written first). */
unsigned rci_readout_decode(struct rci_readout *r);

/* The memory a chunk piece may point to besides the ring: the spill area
 * (one block per e-link) where the heads of open chunks are copied when they
 * hold a full ring. A publisher registers it like the ring. */
void rci_readout_spill_area(const struct rci_readout *r, void **addr, size_t *len);

/* Any thread: the chunk with this key is done. Lock-free. A stale,
 * duplicate or corrupt key is rejected and counted in bad_releases. */
void rci_readout_release(struct rci_readout *r, uint64_t key);
/* Any thread: rci_readout_release() of keys[0..n-1] (bad keys counted as
 * there), with one atomic per run of pieces in the same block for the block
 * references and one per 64 keys for the releases counter, not one each per
 * chunk. */
void rci_readout_release_burst(struct rci_readout *r, const uint64_t *keys, unsigned n);
/* Any thread: the sink took the chunk but refuses it for good (it is
 * dropped): released like rci_readout_release() and counted in sink_errors.
 * Refused inside the sink call, the chunk is not counted as decoded (chunks,
 * bytes, the return of rci_readout_decode); refused later, it was. */
void rci_readout_refuse(struct rci_readout *r, uint64_t key);
/* The burst sink for a per-chunk one: offers chunks[0..n-1] to fn in order
 * and returns how many it took, stopping at the first -EAGAIN; a chunk fn
 * refuses (any other error) is handed back with rci_readout_refuse(). Call it
 * from a sink with the sink's arguments. */
unsigned rci_readout_sink_each(struct rci_readout *r, rci_chunk_fn fn, void *ctx,
                               const struct rci_chunk *const *chunks, unsigned n);

/* Everything the decoder has seen written is decoded, nothing waits for the
 * sink and every emitted chunk has been released. Any thread. */
bool rci_readout_drained(const struct rci_readout *r);
/* With the thread running: wait until a poll that started after this call
 * found the ring drained (so data the card wrote before the call counts).
 * Returns 0, -ETIMEDOUT, or -EINVAL if the thread is not running. */
int  rci_readout_wait_drained(struct rci_readout *r, uint64_t timeout_ns);

void rci_readout_get_stats(const struct rci_readout *r, struct rci_readout_stats *s);
/* Has a block of this e-link (< 2048) been decoded? Any thread. */
bool rci_readout_elink_seen(const struct rci_readout *r, unsigned elink);
/* Copy one e-link's statistics; 0, or -ENOENT if never seen / out of range. */
int  rci_readout_get_elink_stats(const struct rci_readout *r, unsigned elink,
                                struct rci_elink_stats *out);

#endif
