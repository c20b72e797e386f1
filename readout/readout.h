/* readout.h — the readout thread and block decoder of one DMA ring.
 *
 * It follows the card's write pointer (adaptive polling: spin, then sleep),
 * takes every new block from the ring, decodes FELIX blocks (all three
 * markers) into chunks and hands each chunk to a sink as a descriptor whose
 * pieces point into the ring. A block goes back to the ring when every chunk
 * touching it has been released; the ring's read pointer is then written to
 * the card in batches.
 */
#ifndef RC_READOUT_H
#define RC_READOUT_H
#include <stdbool.h>
#include <stdint.h>
#include "dma/dma_ring.h"
#include "readout/card.h"
#include "readout/card_params.h"
#include "readout/chunk.h"

/* The sink takes a chunk: returns 0 (accepted: it will release the key) or
 * -EAGAIN (not now: the same chunk is offered again later; backpressure). */
typedef int (*rc_chunk_sink_fn)(void *ctx, const struct rc_chunk *chunk);

struct rc_elink_stats {
    uint64_t blocks, chunks, bytes;
    uint64_t err_truncated, err_crc, err_flag, err_busy;   /* flagged chunks by kind */
    uint64_t err_malformed;        /* blocks with a bad trailer chain: skipped */
    uint64_t err_seq_gap;          /* blocks missing by sequence number */
    uint64_t err_oversize;         /* chunks over max size / pieces: dropped */
    uint64_t err_orphan;           /* middle/last without a first: dropped */
};

struct rc_readout_stats {
    uint64_t blocks, chunks, bytes;
    uint64_t bad_header;           /* blocks with an unknown marker or e-link: skipped */
    uint64_t err_malformed, err_seq_gap, err_oversize, err_orphan;
    uint64_t chunks_truncated, chunks_error, chunks_crc, chunks_busy;
    uint64_t releases, bad_releases;
    uint64_t chunks_in_flight;     /* emitted, not yet released */
    uint64_t sink_again;           /* times the sink said -EAGAIN */
    uint64_t pool_empty_ns;        /* time waiting for free descriptors */
    uint64_t polls, sleeps, rd_writes;
};

struct rc_readout;

/* card may be NULL (tests drive the ring directly with rc_readout_decode). */
int  rc_readout_create(const struct rc_card_params *p, struct rc_dma_ring *ring,
                       struct rc_card *card, rc_chunk_sink_fn sink, void *sink_ctx,
                       struct rc_readout **out, char *err, size_t errlen);
void rc_readout_destroy(struct rc_readout *r);

/* Start / stop the readout thread (which programs the card's DMA). */
int  rc_readout_start(struct rc_readout *r);
void rc_readout_stop(struct rc_readout *r);

/* One decode pass over everything written up to the ring's written position;
 * returns the number of chunks emitted. Used by the thread, tests and bench. */
unsigned rc_readout_decode(struct rc_readout *r);

/* Any thread: the chunk with this key is done. Lock-free. */
void rc_readout_release(struct rc_readout *r, uint64_t key);

void rc_readout_get_stats(const struct rc_readout *r, struct rc_readout_stats *s);
/* Per e-link statistics (elink < 2048); NULL if never seen. */
const struct rc_elink_stats *rc_readout_elink_stats(const struct rc_readout *r, unsigned elink);

#endif
