/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_internal.h — internal to readout/: the state shared by the decoder
 * (decoder.c), object management (readout.c) and the thread (readout_thread.c). */
#ifndef RCI_READOUT_INTERNAL_H
#define RCI_READOUT_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include "common/counter.h"
#include "readout/block_parse.h"
#include "readout/chunk_pool.h"
#include "readout/readout.h"
#include "readout/wupper_dma.h"


/* Every field of struct rci_elink_stats, for the live counters below and for
 * copying and summing (readout.c checks that the list is complete). */
#define RCI_ELINK_STAT_FIELDS(X)                                                      \
    X(blocks) X(chunks) X(bytes) X(err_truncated) X(err_crc) X(err_flag) X(err_busy) \
    X(err_malformed) X(err_seq_gap) X(err_oversize) X(err_orphan)                    \
    X(chunks_dropped_gap) X(chunks_incomplete) X(timeouts) X(oob) X(reserved)         \
    X(chunks_spilled) X(chunks_dropped_pool) X(chunks_dropped_ring)                  \
    X(malformed_length) X(malformed_null) X(malformed_order) X(malformed_padding)    \
    X(malformed_split) X(err_bad_start)

/* One e-link's live statistics: the decoder thread writes them
 * (common/counter.h), rci_readout_get_elink_stats() copies them out as a
 * struct rci_elink_stats. */
struct rci_elink_counters {
#define RCI_ELINK_COUNTER(f) rci_counter f;
    RCI_ELINK_STAT_FIELDS(RCI_ELINK_COUNTER)
#undef RCI_ELINK_COUNTER
};

/* One ring block. While the decoder parses it, refs holds RCI_BLOCK_BIAS (the
 * decoder's reference and room for every piece it will hand out) minus the
 * pieces already released; when the decoder is done with the block it
 * subtracts the bias less the pieces it made, leaving one count per piece
 * still held. This spares an atomic increment per piece. The block tap's
 * reference (rci_readout_set_block_tap) is folded in the same way: it counts
 * as one more piece. At 0 the block goes back to the ring. */
#define RCI_BLOCK_BIAS (1u << 30)   /* > any block's piece count (<= 32768) */

struct rci_block_meta {
    _Atomic uint32_t refs;
    _Atomic bool tap_held;      /* the block tap holds a reference (one per taken block) */
    uint64_t ring_key;
    bool gap_before;            /* blocks were lost just before this one (rci_readout_mark_gap) */
};

/* Assembly state of one e-link (decoder thread only). */
struct rci_elink_state {
    struct rci_chunk_rec *open;  /* chunk started by a FIRST, awaiting its LAST */
    uint8_t expected_seq;
    bool seen;                  /* a block of this e-link has been decoded */
    bool skipping;              /* the rest of an oversize chunk: ignore until it ends */
};

/* The block being decoded; it survives a stall (empty pool, a sink that took
 * less than it was offered). */
struct rci_cur_block {
    bool active;
    uint32_t block;             /* index into blocks[] */
    unsigned elink;
    unsigned next;              /* subchunks subs[next .. subs_cap-1] still to handle */
    uint32_t pieces;            /* pieces made from this block so far */
};

/* Counters that releasing threads change. Chunks in flight are
 * st.accepted - releases - st.releases_local: releases is incremented
 * (release order) after the record is back on the free stack. */
struct rci_shared_counters {
    _Atomic uint64_t releases;          /* release order: see rci_readout_in_flight() */
    rci_shared_counter bad_releases;
    rci_shared_counter sink_errors;     /* rci_readout_refuse() from any thread */
    _Atomic uint64_t tap_releases;      /* rci_readout_release_block(): see rci_readout_drained */
    rci_shared_counter bad_tap_releases;
};

struct rci_readout {
    int irq_fd;                   /* card.N.wait = interrupt: the card's eventfd; else -1 */
    bool pinned;                  /* card.N.cpus given: the thread runs on cpuset */
    cpu_set_t cpuset;
    struct rci_card_params p;
    struct rci_dma_ring *ring;
    struct rci_card *card;
    rci_chunk_sink_fn sink;
    void *sink_ctx;
    /* block tap (rci_readout_set_block_tap): tap_refs is 1 with a tap, else 0 */
    rci_block_room_fn tap_room;
    rci_block_tap_fn tap_fn;
    void *tap_ctx;
    uint32_t tap_refs;
    uint8_t *ring_base;
    uint64_t ring_size;
    uint32_t nblocks;

    struct rci_block_meta *blocks;           /* nblocks */
    struct rci_chunk_pool pool;
    struct rci_elink_state *elinks;          /* RCI_READOUT_MAX_ELINKS */
    struct rci_elink_counters *elink_stats;  /* RCI_READOUT_MAX_ELINKS */
    struct rci_subchunk *subs;               /* rci_block_max_subchunks(block_size) */
    uint8_t *spill;                         /* RCI_READOUT_MAX_ELINKS slots of spill_slot bytes */
    size_t spill_bytes;                     /* the mapping's size */
    uint32_t spill_slot;                    /* = block_size */
    unsigned subs_cap;

    /* decoder state (owner thread) */
    struct rci_cur_block cur;
    /* Decoded chunks not yet taken by the sink, in decode order: offered
     * when RCI_READOUT_BURST are held, when a pass ends and before the
     * decoder concludes that the pool is empty; what the sink leaves is
     * offered again first. */
    struct rci_chunk_rec *burst[RCI_READOUT_BURST];
    unsigned nburst;
    unsigned pass_emitted;                  /* chunks the sink took in this pass */
    uint64_t pool_empty_since;              /* 0 = not waiting for a descriptor */

    /* Written by the decoding thread only (common/counter.h). */
    struct {
        rci_counter accepted;               /* chunks handed to the sink and kept by it */
        rci_counter releases_local;         /* releases made by the decoding thread */
        rci_counter bad_header, sink_again, bytes_spilled;
        rci_counter chunks_cut_at_stop, bytes_cut_at_stop;
        rci_counter pool_empty_ns;
        rci_counter polls, sleeps, rd_writes, last_bad_pos;
        rci_counter irq_waits, interrupts;  /* sleeps on the interrupt; those it ended */
        rci_counter card_bad_status;        /* mirror of dma.bad_status for other threads */
        rci_counter card_status_lagging;    /* mirror of dma.status_lagging */
        rci_counter last_bad_kind;
        rci_counter tap_blocks, tap_stalls; /* block tap: blocks handed on, passes stalled */
        rci_counter written_seen;           /* ring position, mirrored for other threads */
        rci_counter pending_or_active;      /* 1 while a block or a chunk is held over */
        /* Ring position taken so far: stored with release after
         * pending_or_active is set (see rci_readout_drained). */
        _Atomic uint64_t taken;
    } st;

    /* card DMA (thread) */
    struct rci_wupper_dma dma;
    bool dma_active;
    uint64_t rd_sent;                       /* last RD_POINTER written (monotonic) */

    /* thread control */
    pthread_t thread;
    bool thread_running, thread_used;
    bool thread_abandoned;              /* stuck at the stop: left running (rci_readout_stop_bounded) */
    _Atomic bool stop_requested;
    _Atomic uint64_t loop_iter;             /* iterations started */
    _Atomic uint64_t drained_iter;          /* last iteration that ended drained */
    _Atomic unsigned drain_waiters;         /* rci_readout_wait_drained calls under way */
    bool irq_spin;                          /* interrupt mode: spin poll_spin before the wait (thread) */
    uint64_t poll_sleep_next;               /* poll mode: the next sleep (0: the first after data) */

    _Alignas(64) struct rci_shared_counters shared;
};

/* Chunks accepted by the sink and not yet released (any thread). */
uint64_t rci_readout_in_flight(const struct rci_readout *r);

/* Blocks the block tap holds (any thread). */
uint64_t rci_readout_tap_in_flight(const struct rci_readout *r);

/* decoder.c: one pass, bounded to a quarter of the ring; *took_blocks tells
 * whether any block was taken, *more that the bound stopped it early. */
unsigned rci_readout_decode_pass(struct rci_readout *r, bool *took_blocks, bool *more);
/* decoder.c: advance the ring over released blocks and write RD_POINTER to
 * the card when worthwhile (idle: this poll found nothing new). */
void rci_readout_update_read(struct rci_readout *r, bool idle, bool force);
void rci_readout_cut_open_chunks(struct rci_readout *r);
/* decoder.c: the ring's owner moved read, taken and written on together
 * while the decoder had nothing taken (a block stream's subscriber,
 * net/sub_stream.h rci_sub_stream_realign): its position follows. */
void rci_readout_ring_moved(struct rci_readout *r);

#endif
