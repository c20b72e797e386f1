/* SPDX-License-Identifier: BSD-3-Clause */
/* decoder.c — turns ring blocks into chunk descriptors (see readout.h and the
 * "Block decoder" section of readout/README.md).
 *
 * Reference counting: a block's refs hold the decoder's own reference while
 * it parses the block (as a bias, see RCI_BLOCK_BIAS) plus one per chunk piece
 * in the block. Pieces belong to a chunk record — an open chunk still being
 * assembled, a chunk the sink has not taken yet, or one in flight — and are
 * dropped when that record is discarded or released. The last drop gives the
 * block back to the ring.
 *
 * Complete chunks are held and handed to the sink in bursts (readout.h).
 *
 * A stall (no free record, or the sink took less than a burst) leaves the decoder in a
 * state it resumes from on the next pass: every step below either completes
 * or changes nothing it would redo.
 */
#include <errno.h>
#include <string.h>
#include "common/monotonic.h"
#include "readout/felix_block.h"
#include "readout/readout_internal.h"

enum step { STEP_DONE, STEP_STALL };

static bool offer_burst(struct rci_readout *r);

/* ---- block references ------------------------------------------------- */

static void block_unref_n(struct rci_readout *r, uint32_t block, uint32_t n)
{
    struct rci_block_meta *m = &r->blocks[block];
    if (atomic_fetch_sub_explicit(&m->refs, n, memory_order_acq_rel) == n)
        /* Nobody references the block: its slot stays ours until the ring
         * gets it back, so reading ring_key here is safe. A failure is
         * counted by the ring itself (bad_releases). */
        (void)rci_dma_ring_release(r->ring, m->ring_key);
}

/* A spilled piece (copied out of the ring) holds no block. */
static void drop_piece_refs(struct rci_readout *r, const struct rci_chunk *c)
{
    for (uint32_t i = 0; i < c->npieces; i++)
        if (c->pieces[i].ring_offset != RCI_PIECE_SPILLED)
            block_unref_n(r, c->pieces[i].ring_offset / r->p.block_size, 1);
}

/* The decoder is done with the current block: trade the bias for the
 * pieces it made and the block tap's reference (see RCI_BLOCK_BIAS). */
static void finish_block_refs(struct rci_readout *r, uint32_t block, uint32_t pieces)
{
    block_unref_n(r, block, RCI_BLOCK_BIAS - pieces - r->tap_refs);
}

/* ---- block tap (readout.h: rci_readout_set_block_tap) --------------------- */

int rci_readout_set_block_tap(struct rci_readout *r, rci_block_room_fn room_fn,
                              rci_block_tap_fn tap_fn, void *ctx)
{
    if (r->tap_fn)
        return -EBUSY;
    /* Blocks taken without the tap's reference must not meet its release. */
    if (!tap_fn || r->thread_used || atomic_load(&r->st.taken) != rci_dma_ring_read_pos(r->ring) ||
        rci_counter_get(&r->st.pending_or_active))
        return -EINVAL;
    r->tap_room = room_fn;
    r->tap_fn = tap_fn;
    r->tap_ctx = ctx;
    r->tap_refs = 1;
    return 0;
}

void rci_readout_release_block(struct rci_readout *r, uint32_t block_index)
{
    if (block_index >= r->nblocks ||
        !atomic_exchange_explicit(&r->blocks[block_index].tap_held, false, memory_order_acq_rel)) {
        rci_shared_counter_add(&r->shared.bad_tap_releases, 1);
        return;
    }
    /* Counted before the unref: once the ring has the block back, a drained
     * readout must also see its tap reference gone (rci_readout_drained). */
    atomic_fetch_add_explicit(&r->shared.tap_releases, 1, memory_order_release);
    block_unref_n(r, block_index, 1);
}

/* Blocks the tap holds (any thread; tap_blocks first, as for in_flight). */
uint64_t rci_readout_tap_in_flight(const struct rci_readout *r)
{
    uint64_t released = atomic_load_explicit(&r->shared.tap_releases, memory_order_acquire);
    return rci_counter_get(&r->st.tap_blocks) - released;
}

uint64_t rci_readout_in_flight(const struct rci_readout *r)
{
    /* releases first (acquire): every release counted there was of a chunk
     * whose acceptance the decoder had already counted. */
    uint64_t released = atomic_load_explicit(&r->shared.releases, memory_order_acquire);
    return rci_counter_get(&r->st.accepted) - rci_counter_get(&r->st.releases_local) - released;
}

/* Decoder thread: a record the sink never kept goes back to the pool with
 * its references. */
static void discard_rec(struct rci_readout *r, struct rci_chunk_rec *rec)
{
    drop_piece_refs(r, &rec->chunk);
    rci_chunk_pool_put_local(&r->pool, rec);
}

/* ---- releases (any thread) ---------------------------------------------- */

/* The readout whose decode pass runs on this thread, if any. A sink that
 * releases in place (consumes or drops the chunk at once) then gives the
 * record straight back to the decoder's private free list. */
static _Thread_local const struct rci_readout *decoding_here;

void rci_readout_release(struct rci_readout *r, uint64_t key)
{
    struct rci_chunk_rec *rec = rci_chunk_pool_claim(&r->pool, key);
    if (!rec) {
        rci_shared_counter_add(&r->shared.bad_releases, 1);
        return;
    }
    drop_piece_refs(r, &rec->chunk);
    if (decoding_here == r) {
        rci_chunk_pool_put_local(&r->pool, rec);
        rci_counter_add(&r->st.releases_local, 1);
        return;
    }
    rci_chunk_pool_put(&r->pool, rec);
    /* After the put: a decoder that finds the pool empty with nothing in
     * flight knows no put is on its way (see get_record). */
    atomic_fetch_add_explicit(&r->shared.releases, 1, memory_order_release);
}

/* Block references of a release burst: consecutive pieces in one block
 * (small chunks: dozens per block) drop theirs with one atomic. */
struct unref_run {
    uint32_t block, n;
};

static void unref_run_flush(struct rci_readout *r, struct unref_run *run)
{
    if (run->n)
        block_unref_n(r, run->block, run->n);
    run->n = 0;
}

static void unref_run_add(struct rci_readout *r, struct unref_run *run, const struct rci_chunk *c)
{
    for (uint32_t i = 0; i < c->npieces; i++) {
        if (c->pieces[i].ring_offset == RCI_PIECE_SPILLED)
            continue;
        uint32_t block = c->pieces[i].ring_offset / r->p.block_size;
        if (run->n && block != run->block)
            unref_run_flush(r, run);
        run->block = block;
        run->n++;
    }
}

#define RELEASE_BURST_MAX 64u

/* In the order of rci_readout_release(): every record's block references
 * are dropped before it goes back to the pool (a reused record's pieces are
 * overwritten), and the releases are counted after the puts. */
static void release_some(struct rci_readout *r, const uint64_t *keys, unsigned n)
{
    struct rci_chunk_rec *recs[RELEASE_BURST_MAX];
    struct unref_run run = { 0, 0 };
    unsigned claimed = 0;
    for (unsigned i = 0; i < n; i++) {
        struct rci_chunk_rec *rec = rci_chunk_pool_claim(&r->pool, keys[i]);
        if (!rec) {
            rci_shared_counter_add(&r->shared.bad_releases, 1);
            continue;
        }
        unref_run_add(r, &run, &rec->chunk);
        recs[claimed++] = rec;
    }
    unref_run_flush(r, &run);
    if (claimed == 0)
        return;
    if (decoding_here == r) {
        for (unsigned i = 0; i < claimed; i++)
            rci_chunk_pool_put_local(&r->pool, recs[i]);
        rci_counter_add(&r->st.releases_local, claimed);
        return;
    }
    rci_chunk_pool_put_batch(&r->pool, recs, claimed);
    atomic_fetch_add_explicit(&r->shared.releases, claimed, memory_order_release);
}

void rci_readout_release_burst(struct rci_readout *r, const uint64_t *keys, unsigned n)
{
    while (n > 0) {
        unsigned some = n < RELEASE_BURST_MAX ? n : RELEASE_BURST_MAX;
        release_some(r, keys, some);
        keys += some;
        n -= some;
    }
}

void rci_readout_refuse(struct rci_readout *r, uint64_t key)
{
    struct rci_chunk_rec *rec = rci_chunk_pool_claim(&r->pool, key);
    if (!rec) {
        rci_shared_counter_add(&r->shared.bad_releases, 1);
        return;
    }
    rci_shared_counter_add(&r->shared.sink_errors, 1);
    drop_piece_refs(r, &rec->chunk);
    if (decoding_here == r) {   /* inside the sink call: offer_burst() sees the mark */
        rec->refused_in_sink = true;
        rci_chunk_pool_put_local(&r->pool, rec);
        rci_counter_add(&r->st.releases_local, 1);
        return;
    }
    rci_chunk_pool_put(&r->pool, rec);
    atomic_fetch_add_explicit(&r->shared.releases, 1, memory_order_release);
}

unsigned rci_readout_sink_each(struct rci_readout *r, rci_chunk_fn fn, void *ctx,
                               const struct rci_chunk *const *chunks, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int rc = fn(ctx, chunks[i]);
        if (rc == -EAGAIN)
            return i;
        if (rc != 0)
            rci_readout_refuse(r, chunks[i]->key);
    }
    return n;
}

/* ---- chunk records -------------------------------------------------------- */

static void note_bad_block(struct rci_readout *r, uint64_t pos, enum rci_readout_bad_kind kind)
{
    rci_counter_set(&r->st.last_bad_pos, pos);
    rci_counter_set(&r->st.last_bad_kind, (uint64_t)kind);
}

/* Drop the e-link's open chunk (if any), counting it in *counter. */
static void drop_open(struct rci_readout *r, struct rci_elink_state *e, rci_counter *counter)
{
    if (!e->open)
        return;
    discard_rec(r, e->open);
    e->open = NULL;
    rci_counter_add(counter, 1);
}

/* Every record is an open chunk waiting for blocks we cannot reach: without
 * this the decoder would wait forever. Counted; only bad input or a pool
 * smaller than the number of interleaved e-links gets here. */
static void drop_all_open(struct rci_readout *r)
{
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++) {
        struct rci_elink_state *e = &r->elinks[i];
        if (e->open) {
            e->skipping = true;   /* its remaining pieces must not become orphans */
            drop_open(r, e, &r->elink_stats[i].chunks_dropped_pool);
        }
    }
}

static struct rci_chunk_rec *get_record(struct rci_readout *r)
{
    struct rci_chunk_rec *rec = rci_chunk_pool_get(&r->pool);
    if (!rec && r->nburst > 0) {
        /* The held burst may hold the records: hand it on first (a sink that
         * is done at once gives them straight back). While the sink leaves
         * some, they are neither open nor in flight: wait for it. */
        if (offer_burst(r))
            rec = rci_chunk_pool_get(&r->pool);
        else
            goto empty;
    }
    if (!rec && rci_readout_in_flight(r) == 0) {
        /* A release may have put its record back just before it counted
         * itself: look once more before concluding that only open chunks
         * hold records. */
        rec = rci_chunk_pool_get(&r->pool);
        if (!rec) {
            drop_all_open(r);
            rec = rci_chunk_pool_get(&r->pool);
        }
    }
    if (!rec) {
empty:
        if (r->pool_empty_since == 0)
            r->pool_empty_since = rci_now_ns();
        return NULL;
    }
    if (r->pool_empty_since != 0) {
        rci_counter_add(&r->st.pool_empty_ns, rci_now_ns() - r->pool_empty_since);
        r->pool_empty_since = 0;
    }
    return rec;
}

static struct rci_piece *rec_pieces(struct rci_readout *r, struct rci_chunk_rec *rec)
{
    return &r->pool.piece_store[(size_t)rec->index * r->pool.max_pieces];
}

/* Add a subchunk of the current block to a chunk; false if the chunk would
 * exceed max_chunk_size or max_chunk_pieces. Empty subchunks add only flags. */
static bool add_piece(struct rci_readout *r, struct rci_chunk_rec *rec, const struct rci_subchunk *sc)
{
    struct rci_chunk *c = &rec->chunk;
    c->flags |= sc->flags;
    if (sc->len == 0)
        return true;
    if (c->npieces >= r->pool.max_pieces || sc->len > r->p.max_chunk_size - c->length)
        return false;
    uint32_t ring_offset = r->cur.block * r->p.block_size + sc->offset;
    struct rci_piece piece = { .addr = r->ring_base + ring_offset, .len = sc->len, .ring_offset = ring_offset };
    if (c->npieces == 0) {
        rec->first_piece = piece;   /* c->pieces points there (rci_chunk_pool_get) */
    } else {
        struct rci_piece *slots = rec_pieces(r, rec);
        if (c->npieces == 1) {      /* a second piece: all go to the piece slots */
            slots[0] = rec->first_piece;
            c->pieces = slots;
        }
        slots[c->npieces] = piece;
    }
    c->npieces++;
    c->length += sc->len;
    r->cur.pieces++;   /* covered by the block's bias until finish_block_refs() */
    return true;
}

/* ---- handing chunks to the sink ------------------------------------------- */

static void count_chunk(struct rci_readout *r, unsigned elink, uint32_t length, uint32_t flags)
{
    struct rci_elink_counters *s = &r->elink_stats[elink];
    rci_counter_add(&s->chunks, 1);
    rci_counter_add(&s->bytes, length);
    if (flags & RCI_CHUNK_TRUNCATED)
        rci_counter_add(&s->err_truncated, 1);
    if (flags & RCI_CHUNK_ERROR)
        rci_counter_add(&s->err_flag, 1);
    if (flags & RCI_CHUNK_CRC_ERROR)
        rci_counter_add(&s->err_crc, 1);
    if (flags & RCI_CHUNK_BUSY)
        rci_counter_add(&s->err_busy, 1);
}

/* Take a chunk the sink did not take back from the live state; false if
 * the sink released it anyway (then the release already returned the
 * record). */
static bool take_back(struct rci_readout *r, struct rci_chunk_rec *rec)
{
    uint64_t expected = rec->chunk.key;
    if (!atomic_compare_exchange_strong_explicit(&rec->live_key, &expected, 0,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;
    rci_counter_set(&r->st.accepted, rci_counter_get(&r->st.accepted) - 1);
    return true;
}

/* What count_chunk() needs of a chunk, copied before the offer: once taken,
 * the chunk may be released (and its record reused) at any moment. */
struct offered {
    uint32_t elink, length, flags;
};

/* Count what the sink took; keep what it left, in order, at the front of
 * the burst. */
static void settle_offer(struct rci_readout *r, const struct offered *o, unsigned n, unsigned took)
{
    for (unsigned i = 0; i < took; i++) {
        struct rci_chunk_rec *rec = r->burst[i];
        if (rec->refused_in_sink) {   /* handed back inside the call: not decoded */
            rec->refused_in_sink = false;
            continue;
        }
        count_chunk(r, o[i].elink, o[i].length, o[i].flags);
        r->pass_emitted++;
    }
    unsigned kept = 0;
    for (unsigned i = took; i < n; i++) {
        struct rci_chunk_rec *rec = r->burst[i];
        if (take_back(r, rec))
            r->burst[kept++] = rec;
        else   /* released although not taken: it is gone */
            rci_shared_counter_add(&r->shared.sink_errors, 1);
    }
    r->nburst = kept;
}

/* Offer the held burst to the sink. True when the sink took all of it. */
static bool offer_burst(struct rci_readout *r)
{
    unsigned n = r->nburst;
    if (n == 0)
        return true;
    const struct rci_chunk *chunks[RCI_READOUT_BURST];
    struct offered o[RCI_READOUT_BURST];
    for (unsigned i = 0; i < n; i++) {
        const struct rci_chunk *c = &r->burst[i]->chunk;
        chunks[i] = c;
        o[i] = (struct offered){.elink = c->elink, .length = c->length, .flags = c->flags};
    }
    /* Counted before the keys are live: a release (perhaps from inside the
     * sink) is then never seen before its acceptance. */
    rci_counter_add(&r->st.accepted, n);
    for (unsigned i = 0; i < n; i++)
        rci_chunk_rec_make_live(r->burst[i]);
    unsigned took = r->sink(r->sink_ctx, chunks, n);
    if (took > n)   /* a sink bug: it cannot take more than it was given */
        took = n;
    settle_offer(r, o, n, took);
    if (took == n)
        return true;
    rci_counter_add(&r->st.sink_again, 1);
    return false;
}

/* A chunk is complete: hold it for the next burst. False when the burst was
 * full and the sink did not take all of it (the decoder stalls). */
static bool hold(struct rci_readout *r, struct rci_chunk_rec *rec)
{
    r->burst[r->nburst++] = rec;
    return r->nburst < RCI_READOUT_BURST || offer_burst(r);
}

/* ---- subchunks ------------------------------------------------------------ */

/* WHOLE or FIRST: a new chunk begins; whatever was open never got its LAST. */
static enum step start_chunk(struct rci_readout *r, struct rci_elink_state *e,
                             struct rci_elink_counters *s, const struct rci_subchunk *sc,
                             struct rci_chunk_rec **ready)
{
    bool whole = sc->type == FELIX_SUB_WHOLE;
    if (e->open) {
        /* The e-link's blocks came without a gap, so this block must go on
         * with the open chunk's MIDDLE or LAST: either that chunk's FIRST
         * or this trailer is corrupt (a LAST read as WHOLE would deliver a
         * chunk's tail as a chunk). Neither can be trusted: drop both. */
        drop_open(r, e, &s->chunks_incomplete);
        rci_counter_add(&s->err_bad_start, 1);
        e->skipping = !whole;
        return STEP_DONE;
    }
    e->skipping = false;
    if (sc->len > r->p.max_chunk_size) {
        rci_counter_add(&s->err_oversize, 1);
        e->skipping = !whole;
        return STEP_DONE;
    }
    struct rci_chunk_rec *rec = get_record(r);
    if (!rec)
        return STEP_STALL;
    rec->chunk.tag = r->p.tag_base + r->cur.elink;
    rec->chunk.elink = r->cur.elink;
    add_piece(r, rec, sc);   /* cannot fail: len <= max_chunk_size, pieces >= 1 */
    if (whole)
        *ready = rec;
    else
        e->open = rec;
    return STEP_DONE;
}

/* MIDDLE or LAST: extend the open chunk; LAST completes it. */
static void continue_chunk(struct rci_readout *r, struct rci_elink_state *e,
                           struct rci_elink_counters *s, const struct rci_subchunk *sc,
                           struct rci_chunk_rec **ready)
{
    bool last = sc->type == FELIX_SUB_LAST;
    if (e->skipping) {
        e->skipping = !last;
        return;
    }
    if (!e->open) {
        rci_counter_add(&s->err_orphan, 1);
        return;
    }
    if (!add_piece(r, e->open, sc)) {
        drop_open(r, e, &s->err_oversize);
        e->skipping = !last;
        return;
    }
    if (last) {
        *ready = e->open;
        e->open = NULL;
    }
}

static enum step handle_subchunk(struct rci_readout *r, const struct rci_subchunk *sc,
                                 struct rci_chunk_rec **ready)
{
    struct rci_elink_state *e = &r->elinks[r->cur.elink];
    struct rci_elink_counters *s = &r->elink_stats[r->cur.elink];
    switch (sc->type) {
    case FELIX_SUB_WHOLE:
    case FELIX_SUB_FIRST:
        return start_chunk(r, e, s, sc, ready);
    case FELIX_SUB_MIDDLE:
    case FELIX_SUB_LAST:
        continue_chunk(r, e, s, sc, ready);
        return STEP_DONE;
    case FELIX_SUB_TIMEOUT:
        rci_counter_add(&s->timeouts, 1);
        return STEP_DONE;
    case FELIX_SUB_OOB:
        rci_counter_add(&s->oob, 1);
        return STEP_DONE;
    default:   /* FELIX_SUB_RESERVED; NULL trailers never reach here */
        rci_counter_add(&s->reserved, 1);
        return STEP_DONE;
    }
}

/* Handle the current block's remaining subchunks. */
static enum step continue_block(struct rci_readout *r)
{
    while (r->cur.next < r->subs_cap) {
        struct rci_chunk_rec *ready = NULL;
        if (handle_subchunk(r, &r->subs[r->cur.next], &ready) == STEP_STALL)
            return STEP_STALL;
        r->cur.next++;
        if (ready && !hold(r, ready))
            return STEP_STALL;
    }
    r->cur.active = false;
    finish_block_refs(r, r->cur.block, r->cur.pieces);
    return STEP_DONE;
}

/* ---- blocks --------------------------------------------------------------- */

static void count_malformed(struct rci_elink_counters *s, enum rci_readout_bad_kind bad)
{
    switch (bad) {
    case RCI_BAD_NULL_TRAILER: rci_counter_add(&s->malformed_null, 1); break;
    case RCI_BAD_TYPE_ORDER: rci_counter_add(&s->malformed_order, 1); break;
    case RCI_BAD_PADDING: rci_counter_add(&s->malformed_padding, 1); break;
    case RCI_BAD_SPLIT: rci_counter_add(&s->malformed_split, 1); break;
    default: rci_counter_add(&s->malformed_length, 1); break;
    }
}

static void check_sequence(struct rci_readout *r, struct rci_elink_state *e,
                           struct rci_elink_counters *s, unsigned seq)
{
    if (e->seen) {
        unsigned missing = (seq - e->expected_seq) % FELIX_SEQ_MOD;
        if (missing != 0) {
            rci_counter_add(&s->err_seq_gap, missing);
            drop_open(r, e, &s->chunks_dropped_gap);
            e->skipping = false;   /* what follows the gap cannot be matched */
        }
    }
    e->seen = true;
    e->expected_seq = (uint8_t)((seq + 1) % FELIX_SEQ_MOD);
}

/* With a chunk open, the e-link's next block (no gap) must go on with it: its
 * first data subchunk is the chunk's MIDDLE or LAST. A WHOLE or FIRST there
 * is handled by start_chunk(); a block with no data subchunk at all is
 * checked here. */
static bool continues_open(const struct rci_readout *r, unsigned first)
{
    for (unsigned i = first; i < r->subs_cap; i++) {
        unsigned t = r->subs[i].type;
        if (t == FELIX_SUB_WHOLE || t == FELIX_SUB_FIRST || t == FELIX_SUB_MIDDLE ||
            t == FELIX_SUB_LAST)
            return true;
    }
    return false;
}

/* The open chunk's continuation is missing (a MIDDLE or LAST whose type bits
 * were corrupted into timeout, reserved or out-of-band): the chunk cannot be
 * completed correctly. */
static void drop_discontinued(struct rci_readout *r, struct rci_elink_state *e,
                              struct rci_elink_counters *s)
{
    drop_open(r, e, &s->chunks_incomplete);
    rci_counter_add(&s->err_bad_start, 1);
    e->skipping = true;                 /* what is left of it must not become orphans */
}

enum take { TAKE_BLOCK, TAKE_NONE, TAKE_TAP_FULL };

/* Hand the block just taken to the block tap with its reference. */
static void tap_block(struct rci_readout *r, uint32_t block, uint64_t offset)
{
    atomic_store_explicit(&r->blocks[block].tap_held, true, memory_order_relaxed);
    rci_counter_add(&r->st.tap_blocks, 1);
    r->tap_fn(r->tap_ctx, block, offset, r->p.block_size);
}

void rci_readout_mark_gap(struct rci_readout *r, uint64_t pos)
{
    r->blocks[pos % r->ring_size / r->p.block_size].gap_before = true;
}

/* Blocks were lost before this one: what is open cannot be completed. */
static void drop_open_at_gap(struct rci_readout *r)
{
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++) {
        struct rci_elink_state *e = &r->elinks[i];
        if (e->open) {
            e->skipping = true;   /* its remaining pieces must not become orphans */
            drop_open(r, e, &r->elink_stats[i].chunks_dropped_gap);
        }
    }
}

/* Take the next complete block and parse it. TAKE_NONE when none is written
 * yet, TAKE_TAP_FULL when the block tap has no room (nothing taken). A bad
 * block is counted and given back at once (the tap still gets it). */
static enum take begin_block(struct rci_readout *r)
{
    struct rci_dma_span span;
    uint64_t ring_key;
    uint32_t bs = r->p.block_size;
    if (r->tap_room && rci_dma_ring_written_pos(r->ring) - rci_dma_ring_taken_pos(r->ring) >= bs &&
        !r->tap_room(r->tap_ctx)) {
        rci_counter_add(&r->st.tap_stalls, 1);
        return TAKE_TAP_FULL;
    }
    if (rci_dma_ring_take(r->ring, bs, &span, &ring_key) != 0)
        return TAKE_NONE;
    uint64_t pos = atomic_load_explicit(&r->st.taken, memory_order_relaxed);
    uint32_t block = (uint32_t)(span.piece[0].offset / bs);
    atomic_store_explicit(&r->blocks[block].refs, RCI_BLOCK_BIAS, memory_order_relaxed);
    r->blocks[block].ring_key = ring_key;
    if (r->blocks[block].gap_before) {
        r->blocks[block].gap_before = false;
        drop_open_at_gap(r);
    }
    /* Busy before taken moves, so rci_readout_drained() never sees the taken
     * block as done while it is being decoded. */
    rci_counter_set(&r->st.pending_or_active, 1);
    atomic_store_explicit(&r->st.taken, pos + bs, memory_order_release);
    if (r->tap_fn)
        tap_block(r, block, span.piece[0].offset);

    const uint8_t *blk = r->ring_base + span.piece[0].offset;
    struct rci_block_header h;
    enum rci_readout_bad_kind bad = rci_block_parse_header(blk, bs, &h);
    if (bad != RCI_BAD_NONE) {
        rci_counter_add(&r->st.bad_header, 1);
        note_bad_block(r, pos, bad);
        finish_block_refs(r, block, 0);
        return TAKE_BLOCK;
    }
    struct rci_elink_state *e = &r->elinks[h.elink];
    struct rci_elink_counters *s = &r->elink_stats[h.elink];
    rci_counter_add(&s->blocks, 1);
    check_sequence(r, e, s, h.seq);

    unsigned first;
    bad = rci_block_parse_subchunks(blk, bs, h.trailer_bytes, r->subs, r->subs_cap, &first);
    if (bad != RCI_BAD_NONE) {
        rci_counter_add(&s->err_malformed, 1);
        count_malformed(s, bad);
        note_bad_block(r, pos, bad);
        drop_open(r, e, &s->chunks_incomplete);
        e->skipping = false;
        finish_block_refs(r, block, 0);
        return TAKE_BLOCK;
    }
    if (e->open && !continues_open(r, first))
        drop_discontinued(r, e, s);
    r->cur = (struct rci_cur_block){ .active = true, .block = block, .elink = h.elink,
                                    .next = first, .pieces = 0 };
    return TAKE_BLOCK;
}

/* ---- a ring held by open chunks ------------------------------------------- */

/* The open chunk's first piece still in the ring (a spilled head is not). */
static const struct rci_piece *first_ring_piece(const struct rci_chunk *c)
{
    for (uint32_t i = 0; i < c->npieces; i++)
        if (c->pieces[i].ring_offset != RCI_PIECE_SPILLED)
            return &c->pieces[i];
    return NULL;
}

/* The open chunk whose first ring piece lies nearest after the read position
 * (it holds the oldest block), or NULL. */
static struct rci_elink_state *oldest_open(struct rci_readout *r, uint64_t read)
{
    struct rci_elink_state *oldest = NULL;
    uint64_t oldest_dist = UINT64_MAX, read_off = read % r->ring_size;
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++) {
        struct rci_elink_state *e = &r->elinks[i];
        const struct rci_piece *pc = e->open ? first_ring_piece(&e->open->chunk) : NULL;
        if (!pc)
            continue;
        uint64_t dist = (pc->ring_offset + r->ring_size - read_off) % r->ring_size;
        if (dist < oldest_dist) {
            oldest_dist = dist;
            oldest = e;
        }
    }
    return oldest;
}

/* Copy what an open chunk has so far into its e-link's spill slot, so that
 * its blocks can go back to the ring: the chunk then has one piece outside
 * the ring and takes its next pieces from the ring as usual. The slot is the
 * e-link's alone: it is reused only by the e-link's next spilled chunk,
 * which happens when nothing is in flight, so the previous user was
 * released. Returns false (nothing changed) when the chunk is longer than
 * the slot. */
static bool spill_open(struct rci_readout *r, unsigned elink, struct rci_chunk_rec *rec)
{
    struct rci_chunk *c = &rec->chunk;
    if (c->length > r->spill_slot || !first_ring_piece(c))
        return false;
    uint8_t *slot = r->spill + (size_t)elink * r->spill_slot;
    const struct rci_piece *pcs = c->pieces;
    uint32_t off = 0;
    for (uint32_t i = 0; i < c->npieces; i++) {
        /* A spilled head is already at the slot's start (off 0). */
        if (pcs[i].ring_offset != RCI_PIECE_SPILLED)
            memcpy(slot + off, pcs[i].addr, pcs[i].len);
        off += pcs[i].len;
    }
    drop_piece_refs(r, c);
    rec->first_piece = (struct rci_piece){ .addr = slot, .len = c->length, .ring_offset = RCI_PIECE_SPILLED };
    c->pieces = &rec->first_piece;
    c->npieces = 1;
    rci_counter_add(&r->elink_stats[elink].chunks_spilled, 1);
    rci_counter_add(&r->st.bytes_spilled, c->length);
    return true;
}

static void spill_all_open(struct rci_readout *r)
{
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++)
        if (r->elinks[i].open)
            (void)spill_open(r, i, r->elinks[i].open);
}

/* Called when everything written is decoded. If the ring is completely full
 * and no chunk is in flight, only open chunks hold the ring: their ends can
 * only come in blocks the card cannot write until their first blocks are
 * back. That happens when more e-links interleave chunks across blocks than
 * the ring has blocks (2048 e-links of small chunks, each block ending with
 * a FIRST) as well as for a chunk spanning more than the ring. Every open
 * chunk that fits its e-link's spill slot is copied out, which gives its
 * blocks back; nothing is lost. Only if the ring is still full (the oldest
 * block is held by a chunk longer than a slot) is that chunk dropped
 * (counted per e-link); a later pass looks again. In flight is checked
 * before advancing, so that a release that completes meanwhile is seen. */
static void unblock_full_ring(struct rci_readout *r)
{
    if (rci_readout_in_flight(r) != 0 || rci_readout_tap_in_flight(r) != 0)
        return;                         /* a release may still move the read pointer */
    uint64_t read = rci_dma_ring_advance(r->ring);
    /* Completely full: a real card moves CURRENT_ADDRESS per TLP and may be
     * finishing a block whose room it already has (the chunk may end there). */
    if (rci_dma_ring_written_pos(r->ring) - read < r->ring_size)
        return;
    spill_all_open(r);
    read = rci_dma_ring_advance(r->ring);
    if (rci_dma_ring_written_pos(r->ring) - read < r->ring_size)
        return;
    struct rci_elink_state *e = oldest_open(r, read);
    if (!e)
        return;
    e->skipping = true;                 /* its remaining pieces must not become orphans */
    drop_open(r, e, &r->elink_stats[e - r->elinks].chunks_dropped_ring);
}

/* At the final stop: a chunk still open will never get its last piece (the
 * card stopped). Count it and its bytes so far, and give its blocks back, so
 * that the card's bytes add up (produced = decoded + cut) and the ring ends
 * empty once every key is back. */
void rci_readout_cut_open_chunks(struct rci_readout *r)
{
    for (unsigned i = 0; i < RCI_READOUT_MAX_ELINKS; i++) {
        struct rci_elink_state *e = &r->elinks[i];
        if (!e->open)
            continue;
        rci_counter_add(&r->st.bytes_cut_at_stop, e->open->chunk.length);
        e->skipping = true;
        drop_open(r, e, &r->st.chunks_cut_at_stop);
    }
}

/* A block stream's subscriber (api/client_stream.c) moved its ring on while
 * nothing was taken (read = taken = written, before and after): its next
 * connection starts at an offset every block size divides. The decoder's
 * mirrors of the positions follow; nothing else of it points into the ring. */
void rci_readout_ring_moved(struct rci_readout *r)
{
    atomic_store_explicit(&r->st.taken, rci_dma_ring_taken_pos(r->ring), memory_order_release);
    rci_counter_set(&r->st.written_seen, rci_dma_ring_written_pos(r->ring));
}

/* ---- passes --------------------------------------------------------------- */

unsigned rci_readout_decode_pass(struct rci_readout *r, bool *took_blocks, bool *more)
{
    /* Bounded so that the read pointer moves (and the card can write again)
     * while a large backlog is decoded. */
    uint64_t budget = r->ring_size / 4 > r->p.block_size ? r->ring_size / 4 : r->p.block_size;
    uint64_t start = atomic_load_explicit(&r->st.taken, memory_order_relaxed);
    *took_blocks = false;
    *more = false;
    r->pass_emitted = 0;
    rci_counter_set(&r->st.written_seen, rci_dma_ring_written_pos(r->ring));
    decoding_here = r;

    /* What the sink left last time goes first; while it leaves some, nothing
     * new is decoded. */
    if (!offer_burst(r))
        goto out;
    for (;;) {
        if (!r->cur.active) {
            if (atomic_load_explicit(&r->st.taken, memory_order_relaxed) - start >= budget) {
                *more = true;
                break;
            }
            enum take took = begin_block(r);
            if (took != TAKE_BLOCK) {
                /* Held chunks hold blocks too: only with none held can open
                 * chunks alone be what fills the ring. A full tap is a
                 * stall: its blocks come back when the tap's consumer
                 * releases them, not by spilling open chunks. */
                if (offer_burst(r) && took == TAKE_NONE)
                    unblock_full_ring(r);
                goto out;
            }
            *took_blocks = true;
            if (!r->cur.active)
                continue;
        }
        if (continue_block(r) == STEP_STALL)
            goto out;   /* the held burst was just offered, or the pool is empty */
    }
    (void)offer_burst(r);
out:
    decoding_here = NULL;
    rci_counter_set(&r->st.pending_or_active, (uint64_t)(r->cur.active || r->nburst > 0));
    return r->pass_emitted;
}

void rci_readout_update_read(struct rci_readout *r, bool idle, bool force)
{
    uint64_t read = rci_dma_ring_advance(r->ring);
    if (!r->dma_active || read == r->rd_sent)
        return;
    /* Batch RD_POINTER writes (each costs PCIe bandwidth), but never leave
     * the card starved: write when idle or once the card sees the ring more
     * than half full. */
    bool batch_full = read - r->rd_sent >= r->p.rd_update_bytes;
    bool card_half_full = rci_counter_get(&r->st.written_seen) - r->rd_sent > r->ring_size / 2;
    if (force || idle || batch_full || card_half_full) {
        rci_wupper_dma_set_read(&r->dma, read);
        r->rd_sent = read;
        rci_counter_add(&r->st.rd_writes, 1);
    }
}

unsigned rci_readout_decode(struct rci_readout *r)
{
    unsigned emitted = 0;
    bool took, more;
    do {
        emitted += rci_readout_decode_pass(r, &took, &more);
        rci_readout_update_read(r, !took, false);
    } while (more);
    return emitted;
}
