/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast/readout.h — embed the readout in your program: open the cards of a
 * ringcast configuration file (the daemon's INI format, deploy/ringcast.ini),
 * start them, receive every decoded chunk in a callback, stop, read the
 * statistics (public API, in libringcast only: it needs DPDK, liburcu and
 * inih; includes only other public ringcast headers and system headers).
 *
 * What it is: per [card.N] section a DMA ring, the card (today the simulated
 * card, `type = sim` or `sim-process`) and a readout thread that decodes the
 * card's blocks into chunks. Each chunk is handed to your on_chunk callback
 * as pieces pointing into the card's ring (zero copy). The chunk's ring memory
 * stays yours until you give its key back with rc_daq_release(); while keys
 * are out the ring fills and, when it is full, the card stalls (backpressure:
 * nothing is lost). The [readout], [mode.N] and [fabric] sections are checked
 * but not used: publishing stays with you, e.g. with ringcast/pub.h
 * (register rc_daq_card_memory() and rc_daq_card_spill_memory() and pass a
 * chunk's pieces to rc_pub_send,
 * releasing the key in on_send_complete).
 *
 * Lifecycle:
 *   open     rc_daq_open(): load and validate the configuration (with
 *            overrides "section.key=value"), create every ring, card and
 *            readout thread object. Nothing runs yet; no callback.
 *   start    rc_daq_start(): start each card's readout thread and the card.
 *   run      on_chunk runs on card N's readout thread for each of its chunks
 *            (cards run in parallel: one thread each). Poll rc_daq_finished()
 *            / rc_daq_get_stats() from your own thread as you like.
 *   stop     rc_daq_stop(): stop the cards, wait until everything they wrote
 *            is decoded and every key came back (bounded by drain_timeout_ns:
 *            keep releasing meanwhile), stop the readout threads. After it
 *            returns on_chunk is not called any more.
 *   destroy  rc_daq_destroy(): stops if needed, frees the rings. Keys not
 *            released by then are void: their memory is gone.
 *
 * Threads: rc_daq_open/start/stop/destroy from one thread (the owner), never
 * from inside on_chunk. rc_daq_release() and the getters from any thread,
 * also from on_chunk. on_chunk must not block for long: it holds up its card.
 *
 * Callbacks: on_chunk is the only one. It runs only on the card's readout
 * thread, from rc_daq_start() until rc_daq_stop() (or rc_daq_destroy())
 * returns; never inside an rc_daq_* call of yours on your own thread.
 */
#ifndef RINGCAST_READOUT_H
#define RINGCAST_READOUT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "ringcast/common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rc_daq;

struct rc_daq_chunk {
    unsigned card;                 /* N of [card.N] */
    uint32_t elink;
    uint64_t tag;                  /* the card's tag_base + e-link */
    uint64_t key;                  /* give back with rc_daq_release(d, card, key) */
    uint32_t flags;                /* RC_CHUNK_FLAG_* */
    uint32_t length;               /* payload bytes: the sum of the pieces */
    unsigned npieces;
    const struct iovec *pieces;    /* payload in the ring (a chunk spanning blocks has several
                                    * pieces); the memory is valid until the key is released,
                                    * the array only during the call */
};

/* Return 0: you took the chunk (release its key later, from any thread, or
 * now). -EAGAIN: not now, offer it again (the readout waits and retries:
 * backpressure). Anything else: dropped, counted in sink_errors; do not
 * release its key then (the readout did). */
typedef int (*rc_daq_chunk_fn)(void *ctx, const struct rc_daq_chunk *chunk);

struct rc_daq_stats {
    /* the card */
    uint64_t chunks_produced;      /* what the (simulated) card wrote */
    uint64_t card_stall_ns;        /* time the card waited for ring space */
    int finished;                  /* the card reached a fixed run length ([sim.N] run_chunks) */
    /* the readout */
    uint64_t chunks, bytes;        /* decoded and handed to on_chunk */
    uint64_t chunks_in_flight;     /* taken by on_chunk, key not released yet */
    uint64_t flagged_truncated, flagged_error, flagged_crc, flagged_busy;
    uint64_t decode_errors;        /* blocks or chunks the decoder had to skip or drop */
    uint64_t sink_again;           /* times on_chunk returned -EAGAIN */
    uint64_t sink_errors;          /* chunks on_chunk refused for good */
    uint64_t bad_releases;         /* rc_daq_release with a stale, duplicate or bad key */
    /* the ring */
    uint64_t ring_size, ring_in_use, ring_high_water;
    uint64_t ring_full_ns;         /* time the ring was full */
};

/* Load config_file (NULL: defaults only) with overrides, create every card.
 * on_chunk is required; ctx is its first argument. Returns 0 and *out, or
 * -EINVAL (configuration: err has "file:line: ..."), -ENOMEM or the failing
 * step's -errno with err naming the card. On success err is "" or a warning
 * to show (e.g. the ring could not be locked in memory). */
RC_API int rc_daq_open(const char *config_file, const char *const *overrides, unsigned noverrides,
                       rc_daq_chunk_fn on_chunk, void *ctx, struct rc_daq **out, char *err,
                       size_t errlen);

/* Number of cards ([card.0] .. [card.N-1]). */
RC_API unsigned rc_daq_cards(const struct rc_daq *d);
/* The ring of a card: the memory the chunks of that card lie in (register
 * it once with rc_pub_register to send chunks zero copy). 0 or -EINVAL. */
RC_API int rc_daq_card_memory(const struct rc_daq *d, unsigned card, void **addr, size_t *len);
/* The card's spill area: when open chunks hold a completely full ring (more
 * e-links interleave chunks across blocks than the ring has blocks), their
 * heads are copied here instead of being dropped, and such a chunk's first
 * piece lies here. Register it too. 0 or -EINVAL. */
RC_API int rc_daq_card_spill_memory(const struct rc_daq *d, unsigned card, void **addr,
                                    size_t *len);

/* Start every card. 0, or -errno (-EALREADY when started before); on an
 * error the cards started so far are stopped again. */
RC_API int rc_daq_start(struct rc_daq *d);

/* Any thread: the chunk with this key (of this card) is done; its ring memory
 * may be reused. Lock-free. A wrong key is ignored and counted in
 * bad_releases. */
RC_API void rc_daq_release(struct rc_daq *d, unsigned card, uint64_t key);

/* 1 when every card finished a fixed run and everything it wrote was decoded
 * and released; else 0. Any thread. */
RC_API int rc_daq_finished(const struct rc_daq *d);

/* Stop the cards, drain (decode what they wrote, wait for every key, at most
 * drain_timeout_ns), stop the readout threads. 0, -ETIMEDOUT (keys were still
 * out: they stay valid until destroy), or -EINVAL if not started. */
RC_API int rc_daq_stop(struct rc_daq *d, uint64_t drain_timeout_ns);

/* Statistics of one card, any thread. 0 or -EINVAL (no such card). */
RC_API int rc_daq_get_stats(const struct rc_daq *d, unsigned card, struct rc_daq_stats *st);

/* Stop (without waiting for keys) if running, free everything. NULL is fine. */
RC_API void rc_daq_destroy(struct rc_daq *d);

#ifdef __cplusplus
}
#endif
#endif
