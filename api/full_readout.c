/* SPDX-License-Identifier: BSD-3-Clause */
/* full_readout.c — the public readout embedding (ringcast/readout.h) over
 * config/, dma/ and readout/: per card a ring, the (simulated) card and a
 * readout thread whose sink converts each chunk into the public descriptor.
 *
 * The card setup (ring from [card.N], card by type) is the daemon's too:
 * readout/sim/configured_card.h (which says why it lives there). */
#include "ringcast/readout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "dma/dma_ring.h"
#include "common/errbuf.h"
#include "readout/chunk.h"
#include "readout/readout.h"
#include "readout/sim/configured_card.h"

struct daq_card {
    struct rc_daq *daq;
    unsigned index;
    struct rci_dma_ring *ring;
    struct rci_card *card;
    struct rci_readout *readout;
    struct iovec *pieces;          /* max_chunk_pieces; used by this card's readout thread only */
    int started;
};

struct rc_daq {
    struct rci_config cfg;
    rc_daq_chunk_fn on_chunk;
    void *ctx;
    unsigned ncards;
    int started;
    struct daq_card card[RCI_MAX_CARDS];
};

/* The readout's sink, on the card's readout thread: the chunk as the public
 * descriptor (pieces converted into this card's iovec scratch; no payload
 * is touched). */
static int card_sink(void *arg, const struct rci_chunk *c)
{
    struct daq_card *dc = arg;
    for (uint32_t i = 0; i < c->npieces; i++)
        dc->pieces[i] = (struct iovec){.iov_base = (void *)(uintptr_t)c->pieces[i].addr,
                                       .iov_len = c->pieces[i].len};
    struct rc_daq_chunk pub = {
        .card = dc->index, .elink = c->elink, .tag = c->tag, .key = c->key, .flags = c->flags,
        .length = c->length, .npieces = c->npieces, .pieces = dc->pieces,
    };
    return dc->daq->on_chunk(dc->daq->ctx, &pub);
}

/* A step that succeeded may leave a warning in its buffer: keep the first
 * one for the caller; a failure's message names the card. */
static int setup_step(int rc, unsigned card, const char *step_err, char *err, size_t errlen)
{
    if (rc != 0)
        rci_set_err(err, errlen, "card.%u: %s", card, step_err[0] ? step_err : strerror(-rc));
    else if (step_err[0] && err && errlen && !err[0])
        rci_set_err(err, errlen, "card.%u: %s", card, step_err);
    return rc;
}

static int setup_card(struct rc_daq *d, struct daq_card *dc, char *err, size_t errlen)
{
    const struct rci_card_params *p = &d->cfg.card[dc->index];
    char step[512] = "";
    const struct rci_sim_params *sim = d->cfg.has_sim[dc->index] ? &d->cfg.sim[dc->index] : NULL;
    int rc = setup_step(rci_configured_card_open(p, sim, &dc->ring, &dc->card, step, sizeof step),
                        dc->index, step, err, errlen);
    step[0] = '\0';
    if (rc == 0) {
        dc->pieces = calloc(p->max_chunk_pieces ? p->max_chunk_pieces : 1, sizeof *dc->pieces);
        if (!dc->pieces)
            return setup_step(-ENOMEM, dc->index, "", err, errlen);
        rc = setup_step(rci_readout_create(p, dc->ring, dc->card, card_sink, dc, &dc->readout, step,
                                          sizeof step), dc->index, step, err, errlen);
    }
    return rc;
}

int rc_daq_open(const char *config_file, const char *const *overrides, unsigned noverrides,
                rc_daq_chunk_fn on_chunk, void *ctx, struct rc_daq **out, char *err, size_t errlen)
{
    *out = NULL;
    rci_set_err(err, errlen, "%s", "");
    if (!on_chunk) {
        rci_set_err(err, errlen, "rc_daq_open: on_chunk callback required");
        return -EINVAL;
    }
    struct rc_daq *d = calloc(1, sizeof *d);
    if (!d) {
        rci_set_err(err, errlen, "rc_daq_open: out of memory");
        return -ENOMEM;
    }
    struct rci_config_error cerr;
    int rc = rci_config_load(&d->cfg, config_file, overrides, noverrides, NULL, &cerr);
    if (rc == 0 && d->cfg.ncards == 0) {
        snprintf(cerr.msg, sizeof cerr.msg, "%s: no [card.N] section: nothing to read out",
                 config_file ? config_file : "configuration");
        rc = -EINVAL;
    }
    if (rc != 0) {
        rci_set_err(err, errlen, "%s", cerr.msg);
        free(d);
        return rc;
    }
    d->on_chunk = on_chunk;
    d->ctx = ctx;
    d->ncards = d->cfg.ncards;
    for (unsigned i = 0; i < d->ncards && rc == 0; i++) {
        d->card[i].daq = d;
        d->card[i].index = i;
        rc = setup_card(d, &d->card[i], err, errlen);
    }
    if (rc != 0) {
        rc_daq_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

unsigned rc_daq_cards(const struct rc_daq *d) { return d->ncards; }

static const struct daq_card *card_of(const struct rc_daq *d, unsigned card)
{
    return d && card < d->ncards ? &d->card[card] : NULL;
}

int rc_daq_card_memory(const struct rc_daq *d, unsigned card, void **addr, size_t *len)
{
    const struct daq_card *dc = card_of(d, card);
    if (!dc)
        return -EINVAL;
    *addr = rci_dma_ring_addr(dc->ring);
    *len = rci_dma_ring_size(dc->ring);
    return 0;
}

int rc_daq_card_spill_memory(const struct rc_daq *d, unsigned card, void **addr, size_t *len)
{
    const struct daq_card *dc = card_of(d, card);
    if (!dc)
        return -EINVAL;
    rci_readout_spill_area(dc->readout, addr, len);
    return 0;
}

static void stop_started_cards(struct rc_daq *d)
{
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->card[i].started)
            rci_card_stop(d->card[i].card);
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->card[i].started)
            rci_readout_stop(d->card[i].readout);
}

int rc_daq_start(struct rc_daq *d)
{
    if (d->started)
        return -EALREADY;
    d->started = 1;
    for (unsigned i = 0; i < d->ncards; i++) {
        int rc = rci_readout_start(d->card[i].readout);   /* programs the DMA, starts the card */
        if (rc != 0) {
            stop_started_cards(d);
            return rc;
        }
        d->card[i].started = 1;
    }
    return 0;
}

void rc_daq_release(struct rc_daq *d, unsigned card, uint64_t key)
{
    const struct daq_card *dc = card_of(d, card);
    if (dc)
        rci_readout_release(dc->readout, key);   /* a bad key is counted in bad_releases */
}

int rc_daq_finished(const struct rc_daq *d)
{
    for (unsigned i = 0; i < d->ncards; i++) {
        struct rci_card_stats cs;
        rci_card_get_stats(d->card[i].card, &cs);
        if (!cs.finished || !rci_readout_drained(d->card[i].readout))
            return 0;
    }
    return 1;
}

int rc_daq_stop(struct rc_daq *d, uint64_t drain_timeout_ns)
{
    if (!d->started)
        return -EINVAL;
    int status = 0;
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->card[i].started)
            rci_card_stop(d->card[i].card);
    /* wait_drained counts what a card wrote before it stopped, even if its
     * readout thread had not polled it yet. */
    for (unsigned i = 0; i < d->ncards; i++)
        if (d->card[i].started && rci_readout_wait_drained(d->card[i].readout, drain_timeout_ns) != 0)
            status = -ETIMEDOUT;
    for (unsigned i = 0; i < d->ncards; i++) {
        if (d->card[i].started)
            rci_readout_stop(d->card[i].readout);
        d->card[i].started = 0;
    }
    return status;
}

static uint64_t decode_errors(const struct rci_readout_stats *s)
{
    return s->bad_header + s->err_malformed + s->err_seq_gap + s->err_oversize + s->err_orphan +
           s->err_bad_start + s->chunks_dropped_gap + s->chunks_incomplete +
           s->chunks_dropped_pool + s->chunks_dropped_ring + s->card_bad_status;
}

int rc_daq_get_stats(const struct rc_daq *d, unsigned card, struct rc_daq_stats *st)
{
    const struct daq_card *dc = card_of(d, card);
    if (!dc)
        return -EINVAL;
    struct rci_card_stats cs;
    struct rci_readout_stats rs;
    struct rci_dma_ring_stats ring;
    rci_card_get_stats(dc->card, &cs);
    rci_readout_get_stats(dc->readout, &rs);
    rci_dma_ring_get_stats(dc->ring, &ring);
    *st = (struct rc_daq_stats){
        .chunks_produced = cs.chunks_produced, .card_stall_ns = cs.stall_ns, .finished = cs.finished,
        .chunks = rs.chunks, .bytes = rs.bytes, .chunks_in_flight = rs.chunks_in_flight,
        .flagged_truncated = rs.chunks_truncated, .flagged_error = rs.chunks_error,
        .flagged_crc = rs.chunks_crc, .flagged_busy = rs.chunks_busy,
        .decode_errors = decode_errors(&rs), .sink_again = rs.sink_again,
        .sink_errors = rs.sink_errors, .bad_releases = rs.bad_releases,
        .ring_size = ring.size, .ring_in_use = ring.in_use, .ring_high_water = ring.high_water,
        .ring_full_ns = ring.full_ns,
    };
    return 0;
}

void rc_daq_destroy(struct rc_daq *d)
{
    if (!d)
        return;
    stop_started_cards(d);
    for (unsigned i = 0; i < d->ncards; i++) {
        struct daq_card *dc = &d->card[i];
        if (dc->readout)
            rci_readout_destroy(dc->readout);
        rci_configured_card_close(dc->ring, dc->card);
        free(dc->pieces);
    }
    free(d);
}
