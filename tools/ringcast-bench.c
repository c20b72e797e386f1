/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-bench — ringcast measured next to this machine's own limits.
 *
 *   ringcast-bench [decode|raw|pipeline|latency|fanout|idle|model|all]
 *                  [--provider P] [--endpoint msg|rdm] [--sizes 64,8k,...]
 *                  [--seconds S] [--fanout-size B] [--block-size B] [--elinks N]
 *                  [--rate R] [--mode LIST] [--publisher-threads P]
 *                  [--target R,SIZE]... [--json] [--plot DIR]
 *
 * Modes live in a table (bench_modes[]); `all` runs every one in turn, and
 * `make bench` runs `all` with the defaults. Every figure of one run is
 * measured in that run, so ratios compare like with like. What each mode
 * does is written at its function; tools/README.md has the whole story.
 * Rows are printed as they are measured (bench_report.h: table or JSON).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "config/config.h"
#include "dma/dma_ring.h"
#include "common/monotonic.h"
#include "readout/readout.h"
#include "readout/sim/sim_blocks.h"
#include "tools/bench_model.h"
#include "tools/bench_pipeline.h"
#include "tools/bench_raw.h"
#include "tools/bench_report.h"
#include "tools/bench_wake.h"

#define MAX_SIZES 32u
#define MIN_CHUNK 8u                  /* fill = timestamp needs the 8-byte stamp */
#define MAX_CHUNK (16u << 20)         /* the simulator's largest chunk setting */
#define FANOUT_MAX 8u

struct bench_opts {
    bool json;
    double seconds;                   /* per measurement */
    char provider[64];
    bool rdm;
    uint64_t sizes[MAX_SIZES];
    unsigned nsizes;
    uint64_t fanout_size;
    uint64_t block_size;              /* 0: the [card.N] default */
    const char *plot_dir;
    bool sizes_given;                 /* --sizes on the command line (model has its own default) */
    uint32_t elinks;                  /* the simulated card's e-links (decode and pipeline runs) */
    const char *rate;                 /* sim.0.rate of pipeline and fanout runs; NULL = unlimited */
    unsigned publisher_threads;       /* readout.publisher_threads */
    const char *modes[3];             /* readout.mode of pipeline, latency and model runs */
    unsigned nmodes;
    bool modes_given;                 /* --mode on the command line */
    const char *deliveries[3];        /* ringcast-sub --delivery of pipeline runs: send, rma, stream */
    unsigned ndeliveries;
    bool deliveries_given;            /* --delivery on the command line (else: send, and stream rows) */
    struct model_target { char text[64]; struct rci_rate rate; uint64_t size; } targets[8];
    unsigned ntargets;
};

struct bench {
    struct bench_opts o;
    struct rci_bench_report report;
    struct rci_config cfg;             /* defaults + provider/endpoint: the pipeline's settings */
    char bindir[PATH_MAX];
    char shim[PATH_MAX + 32];         /* "" when the allocation counter is not built */
    char workdir[PATH_MAX];           /* "" until a pipeline run needs one */
};

struct bench_mode {
    const char *name;
    const char *summary;
    int (*run)(struct bench *b);
};

/* Decode and memcpy run on one core, timed: their CPU time is their time. */
static void emit_one_core(struct bench *b, const char *test, uint64_t chunk_size, double chunks_per_s,
                          double gbytes_per_s, const char *note)
{
    struct rci_bench_row row = { .test = test, .chunk_size = chunk_size, .chunks_per_s = chunks_per_s,
                                .gbytes_per_s = gbytes_per_s,
                                .cpu_s_per_gb = gbytes_per_s > 0 ? 1.0 / gbytes_per_s : 0 };
    snprintf(row.note, sizeof row.note, "%s", note);
    rci_bench_emit(&b->report, &row);
}

/* ---- decode ------------------------------------------------------------ */

#define DEC_RING_SIZE  (64ull << 20)
#define DEC_BLOCK_SIZE 4096u
#define DEC_BLOCK_PAYLOAD (DEC_BLOCK_SIZE - 8u)   /* less the header and one trailer */

struct dec_ctx {
    struct rci_dma_ring *ring;
    struct rci_readout *r;
    uint8_t *base;
    uint32_t nblocks;
    unsigned next_seq[2048];   /* per e-link, continuing across laps */
    uint64_t chunks_per_lap;
    uint32_t elinks;
    uint32_t finish_margin;    /* blocks kept back at the end of the fill so that every chunk
                                  started can finish: each e-link's open chunk needs up to
                                  pieces blocks, and the generator serves e-links in turn */
};

static unsigned release_at_once(void *ctx, const struct rci_chunk *const *chunks, unsigned n)
{
    struct dec_ctx *d = ctx;
    for (unsigned i = 0; i < n; i++)
        rci_readout_release(d->r, chunks[i]->key);
    return n;
}

static void note_seq(struct dec_ctx *d, unsigned elink, unsigned seq)
{
    d->next_seq[elink] = (seq + 1) % FELIX_SEQ_MOD;
}

/* A block with no subchunks: keeps the ring full without starting chunks. */
static int write_empty_block(struct dec_ctx *d, uint8_t *dst, unsigned elink)
{
    struct rci_blk b;
    int rc = rci_blk_begin(&b, dst, FELIX_FMT_C0CE, DEC_BLOCK_SIZE, elink, d->next_seq[elink]);
    if (rc != 0)
        return rc;
    rci_blk_finish(&b);
    note_seq(d, elink, d->next_seq[elink]);
    return 0;
}

/* Fill the whole ring: generator blocks, every chunk finished before the
 * end, then empty blocks. */
static int fill_ring(struct dec_ctx *d, uint32_t chunk_size, char *err, size_t errlen)
{
    struct rci_sim_gen_config gc = {
        .format = FELIX_FMT_C0CE, .block_size = DEC_BLOCK_SIZE, .tag_base = 0,
        .sim = { .chunk_size_min = chunk_size,
                 .chunk_size_max = chunk_size, .fill = RCI_FILL_PATTERN, .seed = 1 } };
    gc.sim.elinks = d->elinks;
    struct rci_sim_gen *g;
    int rc = rci_sim_gen_create(&gc, &g, err, errlen);
    if (rc != 0)
        return rc;
    memset(d->next_seq, 0, sizeof d->next_seq);
    for (uint32_t i = 0; i < d->nblocks && rc == 0; i++) {
        uint8_t *dst = d->base + (size_t)i * DEC_BLOCK_SIZE;
        if (d->nblocks - i == d->finish_margin)
            rci_sim_gen_stop_new_chunks(g);
        struct rci_sim_block_info info;
        if (rci_sim_gen_next(g, dst, NULL, &info) == 1)
            note_seq(d, info.elink, info.seq);
        else
            rc = write_empty_block(d, dst, i % d->elinks);
    }
    struct rci_sim_gen_stats st;
    rci_sim_gen_get_stats(g, &st);
    bool finished = rci_sim_gen_done(g);
    rci_sim_gen_destroy(g);
    if (rc != 0) {
        rci_set_err(err, errlen, "decode bench: cannot write an empty block (%s)", strerror(-rc));
        return rc;
    }
    if (!finished || st.chunks_started != st.chunks_completed) {
        rci_set_err(err, errlen, "decode bench: %" PRIu64 " chunks still open at the end of the "
                 "ring (margin of %u blocks too small)", st.chunks_started - st.chunks_completed,
                 d->finish_margin);
        return -EOVERFLOW;
    }
    d->chunks_per_lap = st.chunks_completed;
    return 0;
}

/* The next lap continues every e-link's block sequence (untimed). */
static void renumber_lap(struct dec_ctx *d)
{
    for (uint32_t i = 0; i < d->nblocks; i++) {
        uint8_t *h = d->base + (size_t)i * DEC_BLOCK_SIZE;
        unsigned elink = (unsigned)(h[0] | (h[1] << 8)) & FELIX_ELINK_MASK;
        uint16_t w0 = rci_felix_header_word(elink, d->next_seq[elink]);
        h[0] = (uint8_t)w0;
        h[1] = (uint8_t)(w0 >> 8);
        note_seq(d, elink, d->next_seq[elink]);
    }
}

static int dec_open(struct dec_ctx *d, uint32_t chunk_size, uint32_t elinks, char *err, size_t errlen)
{
    uint32_t pieces = chunk_size / DEC_BLOCK_PAYLOAD + 2u;
    d->elinks = elinks;
    d->nblocks = (uint32_t)(DEC_RING_SIZE / DEC_BLOCK_SIZE);
    d->finish_margin = elinks * (pieces + 3u);
    if (d->finish_margin > d->nblocks / 2) {
        rci_set_err(err, errlen, "decode bench: %" PRIu32 " B chunks on %" PRIu32 " e-links need more than "
                    "half of the decode bench's %llu MiB ring to finish: use smaller --sizes or fewer --elinks",
                    chunk_size, elinks, DEC_RING_SIZE >> 20);
        return -E2BIG;
    }
    struct rci_dma_ring_params rp = { .size = DEC_RING_SIZE, .unit_size = DEC_BLOCK_SIZE,
                                     .backend = RCI_MEM_ANON, .lock_memory = false };
    int rc = rci_dma_ring_create(&rp, &d->ring, err, errlen);
    if (rc != 0)
        return rc;
    struct rci_card_params cp = {
        .ring_size = DEC_RING_SIZE, .block_size = DEC_BLOCK_SIZE,
        .block_format = FELIX_FMT_C0CE, .rd_update_bytes = 1 << 20,
        .max_chunk_size = chunk_size > (1u << 20) ? chunk_size : 1u << 20,
        .max_chunk_pieces = pieces > 64 ? pieces : 64, .max_chunks_in_flight = 1024 + 2 * elinks };
    d->base = rci_dma_ring_addr(d->ring);
    return rci_readout_create(&cp, d->ring, NULL, release_at_once, d, &d->r, err, errlen);
}

static void dec_close(struct dec_ctx *d)
{
    rci_readout_destroy(d->r);
    rci_dma_ring_destroy(d->ring);
}

static uint64_t decode_errors(const struct rci_readout_stats *s)
{
    return s->bad_header + s->err_malformed + s->err_seq_gap + s->err_oversize + s->err_orphan +
           s->chunks_incomplete + s->chunks_dropped_gap + s->bad_releases + s->sink_errors;
}

/* Decode lap after lap until o->seconds of decoding; 0 or -errno. */
static int bench_decode_size(struct bench *b, uint32_t chunk_size)
{
    char err[256] = "";
    struct dec_ctx *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    int rc = dec_open(d, chunk_size, b->o.elinks, err, sizeof err);
    if (rc == 0)
        rc = fill_ring(d, chunk_size, err, sizeof err);
    uint64_t timed_ns = 0, laps = 0;
    while (rc == 0 && (laps < 3 || timed_ns < (uint64_t)(b->o.seconds * 1e9))) {
        if (laps > 0)
            renumber_lap(d);
        uint64_t t0 = rci_now_ns();
        rci_dma_ring_note_written(d->ring, (laps + 1) * DEC_RING_SIZE);
        rci_readout_decode(d->r);
        timed_ns += rci_now_ns() - t0;
        laps++;
    }
    if (rc == 0) {
        struct rci_readout_stats s;
        rci_readout_get_stats(d->r, &s);
        if (s.chunks != laps * d->chunks_per_lap || decode_errors(&s) != 0 ||
            rci_dma_ring_read_pos(d->ring) != laps * DEC_RING_SIZE) {
            snprintf(err, sizeof err, "decode bench: %" PRIu64 " chunks decoded, %" PRIu64
                     " expected, %" PRIu64 " errors", s.chunks, laps * d->chunks_per_lap,
                     decode_errors(&s));
            rc = -EPROTO;
        } else {
            double secs = (double)timed_ns / 1e9;
            char note[96];
            snprintf(note, sizeof note, "%" PRIu64 " laps of %llu MiB, payload %.2f GB/s",
                     laps, DEC_RING_SIZE >> 20, (double)s.bytes / secs / 1e9);
            emit_one_core(b, "decode", chunk_size, (double)s.chunks / secs,
                          (double)(laps * DEC_RING_SIZE) / secs / 1e9, note);
        }
    }
    if (rc != 0)
        fprintf(stderr, "ringcast-bench: %s\n", err[0] ? err : strerror(-rc));
    if (d->r || d->ring)
        dec_close(d);
    free(d);
    return rc;
}

/* Single-core memcpy of 256 MiB, best of 3: the scale for the GB/s above. */
static int bench_memcpy(struct bench *b)
{
    const size_t size = 256u << 20;
    uint8_t *src = malloc(size), *dst = malloc(size);
    if (!src || !dst) {
        free(src);
        free(dst);
        fprintf(stderr, "ringcast-bench: memcpy: cannot allocate 2 x 256 MiB\n");
        return -ENOMEM;
    }
    memset(src, 0x5a, size);               /* fault every page in before timing */
    memset(dst, 0, size);
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = rci_now_ns();
        memcpy(dst, src, size);
        /* The copies are identical: without this the compiler may drop all
         * but one of them. */
        __asm__ volatile("" : : "r"(dst), "r"(src) : "memory");
        uint64_t t = rci_now_ns() - t0;
        best = t < best ? t : best;
    }
    double secs = (double)best / 1e9;
    emit_one_core(b, "memcpy", size, 1.0 / secs, (double)size / secs / 1e9, "256 MiB, best of 3");
    free(src);
    free(dst);
    return 0;
}

/* decode: the block decoder alone on one core (see bench_decode_size), at
 * every --sizes size, and this machine's memcpy for scale. */
static int run_decode(struct bench *b)
{
    for (unsigned i = 0; i < b->o.nsizes; i++) {
        int rc = bench_decode_size(b, (uint32_t)b->o.sizes[i]);
        if (rc != 0)
            return rc;
    }
    return bench_memcpy(b);
}

/* ---- raw ----------------------------------------------------------------- */

static double per_gb(double cpu_s, uint64_t bytes) { return bytes ? cpu_s / ((double)bytes / 1e9) : 0; }

/* One raw libfabric stream of messages of `size` (bench_raw.h) with the
 * pipeline's [fabric] settings: window = header_slots, source memory = the
 * DMA ring's size. */
/* raw: a fi_send stream; raw-rma (rma): a fi_writedata stream (bench_raw.h). */
static int measure_raw_kind(struct bench *b, uint64_t size, bool rma)
{
    struct rci_bench_raw_params p = { .fabric = b->cfg.fabric, .msg_size = (uint32_t)size,
                                     .window = b->cfg.fabric.header_slots,
                                     .send_buffer_size = b->cfg.card[0].ring_size, .seconds = b->o.seconds,
                                     .rma = rma };
    p.fabric.rma = rma;
    snprintf(p.fabric.address, sizeof p.fabric.address, "127.0.0.1");
    p.fabric.port = rci_bench_free_port();
    struct rci_bench_raw_result r;
    char err[512] = "";
    int rc = rci_bench_raw_run(&p, &r, err, sizeof err);
    if (rc == 0 && (r.messages == 0 || r.seconds <= 0)) {
        snprintf(err, sizeof err, "raw: nothing arrived");
        rc = -EPROTO;
    }
    if (rc != 0) {
        fprintf(stderr, "ringcast-bench: %s %" PRIu64 " B: %s\n", rma ? "raw-rma" : "raw", size,
                err[0] ? err : strerror(-rc));
        return rc;
    }
    struct rci_bench_row row = { .test = rma ? "raw-rma" : "raw", .chunk_size = size,
                                .gbytes_per_s = (double)r.bytes / r.seconds / 1e9,
                                .chunks_per_s = (double)r.messages / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes) };
    snprintf(row.note, sizeof row.note, "window %u, %s %s", p.window, b->o.provider, b->o.rdm ? "rdm" : "msg");
    rci_bench_emit(&b->report, &row);
    return 0;
}

static int measure_raw(struct bench *b, uint64_t size) { return measure_raw_kind(b, size, false); }

/* raw: the transport's limit at every size (bench_raw.h). */
static int run_raw(struct bench *b)
{
    for (unsigned i = 0; i < b->o.nsizes; i++) {
        int rc = measure_raw(b, b->o.sizes[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- pipeline runs --------------------------------------------------------- */

static int ensure_workdir(struct bench *b)
{
    if (b->workdir[0])
        return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(b->workdir, sizeof b->workdir, "%s/ringcast-bench.XXXXXX",
             tmp && *tmp && strlen(tmp) < 256 ? tmp : "/tmp");
    if (!mkdtemp(b->workdir)) {
        fprintf(stderr, "ringcast-bench: cannot create %s: %s\n", b->workdir, strerror(errno));
        b->workdir[0] = '\0';
        return -errno;
    }
    return 0;
}

static struct rci_bench_pipe_params pipe_params(const struct bench *b, uint64_t size, const char *mode,
                                               enum rci_sim_fill fill)
{
    return (struct rci_bench_pipe_params){
        .bindir = b->bindir, .workdir = b->workdir, .provider = b->o.provider, .rdm = b->o.rdm,
        .chunk_size = (uint32_t)size, .block_size = b->cfg.card[0].block_size, .mode = mode,
        .fill = fill, .seconds = b->o.seconds, .rate = b->o.rate, .elinks = b->o.elinks,
        .publisher_threads = b->o.publisher_threads, .subscribers = 1 };
}

/* The CPU of the daemon without its simulated card, of the subscribers and
 * of the card, per GB delivered (they add up to cpu_s_per_gb). */
static void split_cpu(struct rci_bench_row *row, const struct rci_bench_pipe_result *r)
{
    row->has_cpu_split = true;
    /* A sim card's firmware is a thread of the daemon (0 for a sim-process card) */
    row->daemon_cpu_s_per_gb = per_gb(r->daemon_cpu_seconds - r->sim_thread_cpu, r->bytes_sent);
    row->sub_cpu_s_per_gb = per_gb(r->sub_cpu_seconds, r->bytes_sent);
    row->sim_cpu_s_per_gb = per_gb(r->sim_cpu_seconds, r->bytes_sent);
}

static int pipe_run(struct bench *b, const struct rci_bench_pipe_params *p, struct rci_bench_pipe_result *r)
{
    int rc = ensure_workdir(b);
    char err[768] = "";
    if (rc == 0)
        rc = rci_bench_pipe_run(p, r, err, sizeof err);
    if (rc)
        fprintf(stderr, "ringcast-bench: %s %" PRIu32 " B fill=%s, %u subscriber(s): %s\n",
                p->mode, p->chunk_size, rci_bench_fill_name(p->fill), p->subscribers,
                err[0] ? err : strerror(-rc));
    return rc;
}

/* Steady-state allocations per chunk without guessing a warm-up: a second
 * run of half the first run's chunks (run_chunks) under the same counter;
 * everything that does not depend on the chunk count (setup, connection,
 * teardown) is the same in both and cancels out. */
static int measure_hygiene(struct bench *b, const struct rci_bench_pipe_params *p1,
                           const struct rci_bench_pipe_result *r1, struct rci_bench_row *row)
{
    row->has_hygiene = true;
    row->copied_bytes_per_chunk = (double)r1->copied_bytes / (double)r1->chunks_sent;
    if (!p1->alloc_shim)
        return 0;
    struct rci_bench_pipe_params p2 = *p1;
    p2.run_chunks = r1->chunks_decoded / 2;
    struct rci_bench_pipe_result r2;
    int rc = p2.run_chunks ? pipe_run(b, &p2, &r2) : -EPROTO;
    if (rc)
        return rc;
    if (r2.chunks_decoded >= r1->chunks_decoded) {
        fprintf(stderr, "ringcast-bench: hygiene: the half run decoded %" PRIu64 " chunks, not fewer than %" PRIu64
                "\n", r2.chunks_decoded, r1->chunks_decoded);
        return -EPROTO;
    }
    row->mallocs_counted = true;
    row->mallocs_per_chunk = ((double)r1->allocations - (double)r2.allocations) /
                             (double)(r1->chunks_decoded - r2.chunks_decoded);
    /* The counts themselves: a few allocations that do not grow with the
     * run (a provider pool reaching a higher peak in one run) read very
     * differently from one per chunk. */
    if (r1->allocations != r2.allocations)
        snprintf(row->note, sizeof row->note, "allocations %" PRIu64 " - %" PRIu64 " over chunks %" PRIu64
                 " - %" PRIu64, r1->allocations, r2.allocations, r1->chunks_decoded, r2.chunks_decoded);
    return 0;
}

/* One pipeline point of p (one subscriber, the --rate); with its ratio to
 * the raw row of its size (raw-rma for RMA delivery) and, with hygiene,
 * the allocations per chunk (a second, shorter run). */
static int measure_point(struct bench *b, struct rci_bench_pipe_params *p, bool hygiene, bool comparison)
{
    p->alloc_shim = hygiene && b->shim[0] ? b->shim : NULL;
    struct rci_bench_pipe_result r;
    int rc = pipe_run(b, p, &r);
    if (rc)
        return rc;
    bool rma = p->delivery && !strcmp(p->delivery, "rma");
    const char *mode = p->mode;
    uint64_t size = p->chunk_size;
    struct rci_bench_row row = { .test = mode, .chunk_size = size, .delivery = rma ? "rma" : "send",
                                .block_size = p->block_size, .delivery_comparison = comparison,
                                .fill = rci_bench_fill_name(p->fill), .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent) };
    split_cpu(&row, &r);
    const struct rci_bench_row *raw = rci_bench_find(&b->report, rma ? "raw-rma" : "raw", size, NULL);
    if (raw && raw->gbytes_per_s > 0) {
        row.has_ratio = true;
        row.ratio_to_raw = row.gbytes_per_s / raw->gbytes_per_s;
    }
    if (rma)
        snprintf(row.note, sizeof row.note, "RMA delivery (ratio to raw-rma), %u B blocks", p->block_size);
    rc = measure_hygiene(b, p, &r, &row);   /* without the counter (no hygiene): copied bytes only */
    if (rc)
        return rc;
    if (!strcmp(mode, "buffered") && r.buffered_records == 0 && !row.note[0])
        snprintf(row.note, sizeof row.note, "no record fits a buffered page: all sent zero copy");
    rci_bench_emit(&b->report, &row);
    return 0;
}

/* The card's block stream (ringcast-sub --stream 0, README.md "Block
 * stream"): one row per size, fill none, test "stream"; its ratio is to the
 * raw row of the size; no allocation count (the daemon sends no chunk). */
static int measure_stream(struct bench *b, uint64_t size)
{
    struct rci_bench_pipe_params p = pipe_params(b, size, "zerocopy", RCI_FILL_NONE);
    p.delivery = "stream";
    p.alloc_shim = NULL;
    struct rci_bench_pipe_result r;
    int rc = pipe_run(b, &p, &r);
    if (rc)
        return rc;
    struct rci_bench_row row = { .test = "stream", .chunk_size = size, .delivery = "stream",
                                .block_size = p.block_size, .fill = rci_bench_fill_name(p.fill),
                                .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent) };
    split_cpu(&row, &r);
    const struct rci_bench_row *raw = rci_bench_find(&b->report, "raw", size, NULL);
    if (raw && raw->gbytes_per_s > 0) {
        row.has_ratio = true;
        row.ratio_to_raw = row.gbytes_per_s / raw->gbytes_per_s;
    }
    snprintf(row.note, sizeof row.note, "block stream of card 0, decoded by ringcast-sub");
    rci_bench_emit(&b->report, &row);
    return 0;
}

static int measure_pipeline(struct bench *b, uint64_t size, const char *mode, enum rci_sim_fill fill,
                            const char *delivery)
{
    struct rci_bench_pipe_params p = pipe_params(b, size, mode, fill);
    p.delivery = delivery;
    return measure_point(b, &p, true, false);
}

/* pipeline: at every size, raw (unless measured already in this run), then
 * every --mode (zero copy and buffered by default) with fill none and
 * pattern (bench_pipeline.h). Without --mode also auto, fill none, from 1 KiB
 * to 1 MiB: the bandwidth target's points (bench_report.c). */
static int run_pipeline(struct bench *b)
{
    for (unsigned i = 0; i < b->o.nsizes; i++) {
        uint64_t size = b->o.sizes[i];
        int rc = rci_bench_find(&b->report, "raw", size, NULL) ? 0 : measure_raw(b, size);
        for (unsigned d = 0; rc == 0 && d < b->o.ndeliveries; d++) {
            const char *delivery = b->o.deliveries[d];
            if (!strcmp(delivery, "stream")) {   /* one row per size, whatever --mode says */
                rc = measure_stream(b, size);
                continue;
            }
            if (!strcmp(delivery, "rma") && !rci_bench_find(&b->report, "raw-rma", size, NULL))
                rc = measure_raw_kind(b, size, true);
            for (unsigned m = 0; rc == 0 && m < b->o.nmodes; m++) {
                rc = measure_pipeline(b, size, b->o.modes[m], RCI_FILL_NONE, delivery);
                if (rc == 0)
                    rc = measure_pipeline(b, size, b->o.modes[m], RCI_FILL_PATTERN, delivery);
            }
        }
        if (rc == 0 && !b->o.modes_given && size >= 1024 && size <= (1u << 20))
            rc = measure_pipeline(b, size, "auto", RCI_FILL_NONE, "send");
        if (rc == 0 && !b->o.deliveries_given && !b->o.modes_given)   /* make bench: stream rows beside */
            rc = measure_stream(b, size);
        if (rc)
            return rc;
    }
    return 0;
}

/* rma: RMA delivery beside send delivery, zero copy, fill none, at 8 KiB and
 * 64 KiB with 64 KiB blocks (each chunk one piece: what is compared is the
 * delivery, not the piece count), with the raw and raw-rma streams of the
 * same sizes; no allocation count (the pipeline mode has it). */
#define RMA_BLOCK_SIZE 65536u
static int run_rma(struct bench *b)
{
    static const uint64_t sizes[] = { 8192, 65536 };
    static const char *const deliveries[] = { "send", "rma" };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int rc = rci_bench_find(&b->report, "raw", sizes[i], NULL) ? 0 : measure_raw(b, sizes[i]);
        if (rc == 0 && !rci_bench_find(&b->report, "raw-rma", sizes[i], NULL))
            rc = measure_raw_kind(b, sizes[i], true);
        for (size_t d = 0; rc == 0 && d < 2; d++) {
            struct rci_bench_pipe_params p = pipe_params(b, sizes[i], "zerocopy", RCI_FILL_NONE);
            p.block_size = RMA_BLOCK_SIZE;
            p.delivery = deliveries[d];
            rc = measure_point(b, &p, false, true);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- latency ----------------------------------------------------------------- */

/* The pipeline's maximum chunk rate at this size and mode (fill none): from
 * this run's row, or measured now (not printed: a calibration). */
static int max_chunk_rate(struct bench *b, uint64_t size, const char *mode, double *rate)
{
    const struct rci_bench_row *w = rci_bench_find(&b->report, mode, size, "none");
    if (w) {
        *rate = w->chunks_per_s;
        return 0;
    }
    struct rci_bench_pipe_params p = pipe_params(b, size, mode, RCI_FILL_NONE);
    struct rci_bench_pipe_result r;
    int rc = pipe_run(b, &p, &r);
    if (rc == 0)
        *rate = (double)r.chunks_sent / r.seconds;
    return rc;
}

/* Card-write-to-callback latency at half the maximum rate: the simulator
 * stamps CLOCK_MONOTONIC into each chunk (fill = timestamp) when it writes
 * the chunk's first block; ringcast-sub --latency takes the difference in
 * its callback. Same clock, same machine. */
static int measure_latency(struct bench *b, uint64_t size, const char *mode)
{
    double max_rate;
    int rc = max_chunk_rate(b, size, mode, &max_rate);
    if (rc)
        return rc;
    struct rci_bench_pipe_params p = pipe_params(b, size, mode, RCI_FILL_TIMESTAMP);
    p.rate_chunks = fmax(1.0, max_rate / 2);
    p.latency = true;
    struct rci_bench_pipe_result r;
    rc = pipe_run(b, &p, &r);
    if (rc)
        return rc;
    struct rci_bench_row row = { .test = "latency", .chunk_size = size, .fill = "timestamp",
                                .mode = mode,
                                .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent), .has_latency = true,
                                .p50_us = r.p50_us, .p99_us = r.p99_us, .p999_us = r.p999_us, .max_us = r.max_us };
    split_cpu(&row, &r);
    /* The cores the point kept busy (the daemon's threads as sampled, the
     * subscriber): near the machine's cores, its latency is queueing for
     * CPU, not the pipeline's hand-offs (tools/README.md, "Latency at half
     * the maximum rate: the CPU it takes"). */
    snprintf(row.note, sizeof row.note, "rate %.0f chunks/s = max/2; cores: all %.2f, readout %.2f, publish %.2f, sub %.2f",
             p.rate_chunks, r.cpu_seconds / r.seconds, r.readout_thread_cpu / r.seconds,
             r.publish_thread_cpu / r.seconds, r.sub_cpu_seconds / r.seconds);
    rci_bench_emit(&b->report, &row);
    return 0;
}

/* The floor under the latency rows when the pipeline's threads sleep
 * between chunks: one wake-up of a thread on another, idle CPU
 * (bench_wake.h), WAKE_SAMPLES of them WAKE_GAP_NS apart. Not measured (a
 * note on stderr, no row) on a machine that gives this process one CPU. */
#define WAKE_SAMPLES 2000u
#define WAKE_GAP_NS  (1000ull * 1000)
static int measure_wake(struct bench *b)
{
    struct rci_bench_wake_result w;
    char err[160];
    int rc = rci_bench_wake(WAKE_SAMPLES, WAKE_GAP_NS, &w, err, sizeof err);
    if (rc == -ENODEV) {
        fprintf(stderr, "ringcast-bench: %s: no wake row\n", err);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "ringcast-bench: %s\n", err);
        return rc;
    }
    struct rci_bench_row row = { .test = "wake", .chunk_size = sizeof(uint64_t), .has_latency = true,
                                .chunks_per_s = w.samples / w.seconds, .p50_us = w.p50_us, .p99_us = w.p99_us,
                                .p999_us = w.p999_us, .max_us = w.max_us };
    snprintf(row.note, sizeof row.note, "eventfd wake-up of a thread on idle CPU %d from CPU %d, %u samples %g ms apart",
             w.cpu_waiter, w.cpu_waker, w.samples, (double)WAKE_GAP_NS / 1e6);
    rci_bench_emit(&b->report, &row);
    return 0;
}

/* latency: one hand-off's cost (wake), then every --mode (zero copy and
 * buffered by default) at every size. */
static int run_latency(struct bench *b)
{
    int rc = measure_wake(b);
    if (rc)
        return rc;
    for (unsigned i = 0; i < b->o.nsizes; i++)
        for (unsigned m = 0; m < b->o.nmodes; m++) {
            rc = measure_latency(b, b->o.sizes[i], b->o.modes[m]);
            if (rc)
                return rc;
        }
    return 0;
}

/* ---- fanout ------------------------------------------------------------------ */

/* fanout: 1, 2, 4, 8 subscribers of every tag, zero copy, fill none, at
 * --fanout-size; GB/s and chunks/s count what all subscribers received. */
static int run_fanout(struct bench *b)
{
    for (unsigned k = 1; k <= FANOUT_MAX; k *= 2) {
        struct rci_bench_pipe_params p = pipe_params(b, b->o.fanout_size, "zerocopy", RCI_FILL_NONE);
        p.subscribers = k;
        struct rci_bench_pipe_result r;
        int rc = pipe_run(b, &p, &r);
        if (rc)
            return rc;
        struct rci_bench_row row = { .test = "fanout", .chunk_size = b->o.fanout_size, .fill = "none",
                                    .subscribers = k, .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                    .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                    .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent) };
        split_cpu(&row, &r);
        snprintf(row.note, sizeof row.note, "card %.3f GB/s; all subscribers together",
                 (double)r.chunks_decoded * (double)b->o.fanout_size / r.seconds / 1e9);
        rci_bench_emit(&b->report, &row);
    }
    return 0;
}

/* ---- idle: the daemon's CPU at a low rate ------------------------------------- */

#define IDLE_RATE 100.0   /* chunks per second */
#define IDLE_SIZE 1024u

/* A sim-process card (ringcast-sim writes, not a thread of the daemon) at
 * 100 chunks/s of 1 KiB, fill = timestamp, one subscriber measuring
 * latency; the daemon's CPU over its whole life (start-up included) per
 * second of run, with card.0.wait = poll and = interrupt. */
static int measure_idle(struct bench *b, bool interrupt)
{
    struct rci_bench_pipe_params p = pipe_params(b, IDLE_SIZE, "zerocopy", RCI_FILL_TIMESTAMP);
    p.rate_chunks = IDLE_RATE;
    p.latency = true;
    p.sim_process = true;
    p.interrupt = interrupt;
    struct rci_bench_pipe_result r;
    int rc = pipe_run(b, &p, &r);
    if (rc)
        return rc;
    struct rci_bench_row row = { .test = "idle", .chunk_size = IDLE_SIZE, .fill = "timestamp",
                                .mode = interrupt ? "interrupt" : "poll",
                                .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent), .has_latency = true,
                                .p50_us = r.p50_us, .p99_us = r.p99_us, .p999_us = r.p999_us, .max_us = r.max_us };
    split_cpu(&row, &r);
    char steady[32] = "n/a (--seconds < 6)";
    if (r.daemon_steady_cpu >= 0)
        snprintf(steady, sizeof steady, "%.1f %%", 100.0 * r.daemon_steady_cpu);
    snprintf(row.note, sizeof row.note, "daemon CPU %s of a core running, %.2f s in its life",
             steady, r.daemon_cpu_seconds);
    rci_bench_emit(&b->report, &row);
    return 0;
}

static int run_idle(struct bench *b)
{
    int rc = measure_idle(b, false);
    return rc ? rc : measure_idle(b, true);
}


/* ---- model: CPU per stage, and the cores a target needs ------------------------ */

/* CPU seconds of r1 less r2 per chunk of r1 less r2. When that is not
 * above 0 (the fixed costs of the two runs differed by more than the half
 * run's work: a loaded machine), the whole of r1's CPU per chunk instead,
 * which includes those fixed costs (an upper bound), said on stderr. */
static double diff_per_chunk(double cpu1, double cpu2, uint64_t chunks1, uint64_t chunks2, const char *what,
                             uint64_t size)
{
    double d = (cpu1 - cpu2) / (double)(chunks1 - chunks2);
    if (d > 0)
        return d;
    fprintf(stderr, "ringcast-bench: model: %s at %" PRIu64 " B: the run and its half differ by %.3f s of CPU"
            " (noise): the whole run's CPU per chunk is used, fixed costs included\n", what, size, cpu1 - cpu2);
    return chunks1 && cpu1 > 0 ? cpu1 / (double)chunks1 : 0;
}

/* One size of the model: the decoder alone (this run's decode row, or
 * measured now), then two pipeline runs (first --mode, fill none) with the
 * daemon's threads' CPU: a timed one and one of half its chunks; the
 * differences per chunk leave out what does not grow with the chunk count
 * (start-up, ring and memory registration, connection, teardown). */
static int model_point(struct bench *b, uint64_t size, struct rci_model_point *pt)
{
    const struct rci_bench_row *dec = rci_bench_find(&b->report, "decode", size, NULL);
    int rc = dec ? 0 : bench_decode_size(b, (uint32_t)size);
    dec = rc == 0 ? rci_bench_find(&b->report, "decode", size, NULL) : NULL;
    if (!dec)
        return rc ? rc : -EPROTO;
    struct rci_bench_pipe_params p = pipe_params(b, size, b->o.modes[0], RCI_FILL_NONE);
    struct rci_bench_pipe_result r, h;
    rc = pipe_run(b, &p, &r);
    p.run_chunks = r.chunks_decoded / 2;
    if (rc == 0 && p.run_chunks == 0)
        rc = -EPROTO;
    if (rc == 0)
        rc = pipe_run(b, &p, &h);
    if (rc == 0 && (h.chunks_decoded >= r.chunks_decoded || h.chunks_sent >= r.chunks_sent)) {
        fprintf(stderr, "ringcast-bench: model: the half run sent %" PRIu64 " chunks, not fewer than %" PRIu64
                "\n", h.chunks_sent, r.chunks_sent);
        rc = -EPROTO;
    }
    if (rc)
        return rc;
    struct rci_bench_row row = { .test = b->o.modes[0], .chunk_size = size, .fill = "none",
                                .gbytes_per_s = (double)r.bytes_sent / r.seconds / 1e9,
                                .chunks_per_s = (double)r.chunks_sent / r.seconds,
                                .cpu_s_per_gb = per_gb(r.cpu_seconds, r.bytes_sent) };
    split_cpu(&row, &r);
    snprintf(row.note, sizeof row.note, "model run: threads readout %.2f publish %.2f other %.2f s",
             r.readout_thread_cpu, r.publish_thread_cpu, r.other_thread_cpu);
    rci_bench_emit(&b->report, &row);
    double decode = 1.0 / dec->chunks_per_s;
    double readout = diff_per_chunk(r.readout_thread_cpu, h.readout_thread_cpu, r.chunks_decoded, h.chunks_decoded,
                                    "readout", size);
    *pt = (struct rci_model_point){ .chunk_size = size };
    pt->cpu_per_chunk[RCI_STAGE_DECODE] = decode;
    pt->cpu_per_chunk[RCI_STAGE_DISPATCH] = readout > decode ? readout - decode : 0;
    pt->cpu_per_chunk[RCI_STAGE_SEND] =
        diff_per_chunk(r.publish_thread_cpu, h.publish_thread_cpu, r.chunks_sent, h.chunks_sent, "send+completion",
                       size);
    pt->cpu_per_chunk[RCI_STAGE_DAEMON_OTHER] =
        diff_per_chunk(r.other_thread_cpu, h.other_thread_cpu, r.chunks_sent, h.chunks_sent, "daemon-other", size);
    pt->cpu_per_chunk[RCI_STAGE_SUBSCRIBER] =
        diff_per_chunk(r.sub_cpu_seconds, h.sub_cpu_seconds, r.chunks_sent, h.chunks_sent, "subscriber", size);
    return 0;
}

/* model: CPU seconds per chunk and per GB of each stage at --sizes (default
 * 100 B, 8 KiB, 64 KiB), fitted over size, and the cores each stage needs
 * for every --target (default the two of the benchmark issue). */
static int run_model(struct bench *b)
{
    static const uint64_t default_sizes[] = { 100, 8192, 65536 };
    const uint64_t *sizes = b->o.sizes_given ? b->o.sizes : default_sizes;
    unsigned nsizes = b->o.sizes_given ? b->o.nsizes : 3;
    static struct rci_model m;
    m.npoints = 0;
    for (unsigned i = 0; i < nsizes && i < RCI_MODEL_MAX_POINTS; i++) {
        int rc = model_point(b, sizes[i], &m.points[m.npoints]);
        if (rc)
            return rc;
        m.npoints++;
    }
    rci_model_fit(&m);
    struct rci_model_target t[8 + 2] = {
        { "24 links x 1 MHz x 100 B", 24e6, 100 },
        { "2 x 200 Gb/s of 8 KiB chunks", 2 * 200e9 / 8 / 8192, 8192 },
    };
    unsigned nt = 2;
    for (unsigned i = 0; i < b->o.ntargets; i++) {
        const struct model_target *mt = &b->o.targets[i];
        double cps = mt->rate.unit == RCI_RATE_CHUNKS ? mt->rate.per_second
                                                      : mt->rate.per_second / (double)mt->size;
        t[nt++] = (struct rci_model_target){ mt->text, cps, mt->size };
    }
    rci_model_print(&m, t, nt, b->o.json, stdout);
    if (!b->o.json)
        printf("(decode: the decoder alone on one core; dispatch: the readout thread's CPU less decode; "
               "send+completion: the publisher threads; daemon-other: its other threads; subscriber: "
               "ringcast-sub. Threads that poll count their waiting too: figures are upper bounds. "
               "%s mode, %s %s.)\n", b->o.modes[0], b->o.provider, b->o.rdm ? "rdm" : "msg");
    return 0;
}

static int run_all(struct bench *b);

static const struct bench_mode bench_modes[] = {
    { "decode", "block decoder on one core at every --sizes size, and memcpy", run_decode },
    { "raw", "plain libfabric message stream per size: the transport's limit", run_raw },
    { "pipeline", "simulated card -> daemon -> ringcast-sub, every --mode, fill none/pattern, "
                  "with allocations and copied bytes per chunk (runs raw too, for the ratio); without --mode "
                  "and --delivery also auto and the block stream (stream) per size", run_pipeline },
    { "latency", "one wake-up of a thread on another CPU (wake), then card-write-to-callback latency at half "
                 "the maximum rate, every --mode", run_latency },
    { "fanout", "1, 2, 4, 8 subscribers of every tag (--fanout-size)", run_fanout },
    { "rma", "RMA delivery beside send delivery (zero copy) at 8 KiB and 64 KiB with 64 KiB blocks, "
             "with the raw and raw-rma (fi_writedata) streams", run_rma },
    { "idle", "the daemon's CPU and latency at 100 chunks/s from a sim-process card, card.0.wait = poll "
              "and interrupt", run_idle },
    { "model", "CPU per chunk and per GB of each stage (decode, dispatch, send+completion, subscriber) "
               "at --sizes (default 100,8k,64k) and the cores needed for each --target", run_model },
    { "all", "every mode above except model, in turn", run_all },
};
#define NMODES (sizeof bench_modes / sizeof bench_modes[0])

static int run_all(struct bench *b)
{
    for (size_t i = 0; i < NMODES; i++) {
        if (bench_modes[i].run == run_all || bench_modes[i].run == run_model)
            continue;
        int rc = bench_modes[i].run(b);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- setup ------------------------------------------------------------------- */

/* The daemon and subscriber next to this program; the allocation counter
 * in ../lib (both as `make` builds them). */
static int find_programs(struct bench *b)
{
    ssize_t n = readlink("/proc/self/exe", b->bindir, sizeof b->bindir - 1);
    if (n <= 0) {
        fprintf(stderr, "ringcast-bench: cannot read /proc/self/exe: %s\n", strerror(errno));
        return -errno;
    }
    b->bindir[n] = '\0';
    char *slash = strrchr(b->bindir, '/');
    if (slash)
        *slash = '\0';
    snprintf(b->shim, sizeof b->shim, "%s/../lib/librc_alloc_count.so", b->bindir);
    if (access(b->shim, R_OK) != 0) {
        fprintf(stderr, "ringcast-bench: %s not found (make all builds it): mallocs_per_chunk is not measured\n",
                b->shim);
        b->shim[0] = '\0';
    }
    return 0;
}

/* The pipeline's settings: every default of [fabric] and [card.N], with
 * this run's provider and endpoint (the raw stream uses the same). */
static int load_defaults(struct bench *b)
{
    char prov[96], ep[48], block[48];
    snprintf(prov, sizeof prov, "fabric.provider=%s", b->o.provider);
    snprintf(ep, sizeof ep, "fabric.endpoint=%s", b->o.rdm ? "rdm" : "msg");
    snprintf(block, sizeof block, "card.0.block_size=%" PRIu64, b->o.block_size);
    const char *ov[] = { prov, ep, "card.0.type=sim", block };
    struct rci_config_error e;
    if (rci_config_load(&b->cfg, NULL, ov, b->o.block_size ? 4 : 3, NULL, &e) != 0) {
        fprintf(stderr, "ringcast-bench: %s\n", e.msg);
        return -EINVAL;
    }
    return 0;
}

static void remove_workdir(struct bench *b, bool failed)
{
    if (!b->workdir[0])
        return;
    if (failed) {
        fprintf(stderr, "ringcast-bench: the failed run's configuration and logs are in %s\n", b->workdir);
        return;
    }
    static const char *const names[] = { "bench.ini", "daemon.json", "daemon.log", "daemon.allocs", "sim.log" };
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", b->workdir, names[i]);
        unlink(path);
    }
    for (unsigned i = 0; i < RCI_BENCH_MAX_SUBSCRIBERS; i++) {
        snprintf(path, sizeof path, "%s/sub%u.json", b->workdir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/sub%u.log", b->workdir, i);
        unlink(path);
    }
    rmdir(b->workdir);
}

/* ---- options ----------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: ringcast-bench [MODE] [--provider P] [--endpoint msg|rdm] [--sizes LIST]\n"
               "                      [--seconds S] [--fanout-size B] [--block-size B] [--elinks N]\n"
               "                      [--rate R] [--mode LIST] [--publisher-threads P]\n"
               "                      [--target R,SIZE]... [--json] [--plot DIR]\n"
               "       ringcast-bench --help | --version\n\n"
               "modes (default all):\n");
    for (size_t i = 0; i < NMODES; i++)
        fprintf(f, "  %-8s %s\n", bench_modes[i].name, bench_modes[i].summary);
    fprintf(f, "\noptions:\n"
               "  --provider P      libfabric provider (default tcp; e.g. \"tcp;ofi_rxm\")\n"
               "  --endpoint E      msg (default) or rdm\n"
               "  --sizes LIST      chunk sizes, 8 B .. 16M (default 64,256,1k,8k,64k,1m; model:\n"
               "                    100,8k,64k; k/m = KiB/MiB); every mode but fanout and idle uses them\n"
               "  --seconds S       seconds per measurement (default 2)\n"
               "  --fanout-size B   chunk size of the fanout mode (default 8k)\n"
               "  --block-size B    the simulated card's FELIX block size, c0ce 1k..64k (default\n"
               "                    4k, the [card.N] default); a zero-copy message carries at most\n"
               "                    iov_limit - 1 blocks' pieces of a chunk\n"
               "  --elinks N        the simulated card's e-links, 1..2048 (default 8; decode and\n"
               "                    the daemon's runs)\n"
               "  --rate R          the card's rate in pipeline, fanout and model runs, as sim.N.rate:\n"
               "                    unlimited (default), 2.5GB/s or 10Mchunks/s (latency and idle set\n"
               "                    their own)\n"
               "  --mode LIST       readout.mode of pipeline and latency runs: zerocopy, buffered,\n"
               "                    auto, comma-separated (default zerocopy,buffered); model uses\n"
               "                    the first; fanout and idle are always zerocopy\n"
               "  --delivery LIST   ringcast-sub --delivery of pipeline runs: send, rma, stream,\n"
               "                    comma-separated (default send, and without --mode a stream row\n"
               "                    per size); rma adds the raw-rma row of each size; stream is\n"
               "                    ringcast-sub --stream 0 (the card's block stream, decoded by the\n"
               "                    subscriber): one row \"stream\" per size, fill none\n"
               "  --publisher-threads P  readout.publisher_threads, 1..16 (default 1); subscriber i\n"
               "                    connects to port + i %% P\n"
               "  --target R,SIZE   model: also the cores for rate R (as --rate) of SIZE chunks\n"
               "                    (up to 8; the two of the benchmark issue are always printed)\n"
               "  --json            one JSON object per line and measurement (fields: tools/README.md);\n"
               "                    the targets summary goes to stderr\n"
               "  --plot DIR        write DIR/bench.csv, and with gnuplot installed PNG plots of\n"
               "                    throughput and chunk rate vs chunk size\n"
               "  --version         the version\n"
               "  --help            this text\n"
               "\nExit status: 0 ok, 1 a measurement failed, 2 usage error.\n");
}

/* "64k" and "1m" as KiB and MiB (the config parser's units, m read as M). */
static int parse_one_size(const char *item, uint64_t *out)
{
    char buf[32];
    size_t n = strlen(item);
    if (n == 0 || n >= sizeof buf)
        return -EINVAL;
    memcpy(buf, item, n + 1);
    if (buf[n - 1] == 'm' || buf[n - 1] == 'g')
        buf[n - 1] = (char)(buf[n - 1] - 'a' + 'A');
    return rci_parse_size(buf, out);
}

static int parse_sizes(const char *arg, struct bench_opts *o)
{
    char copy[512];
    /* strtok_r would skip empty items: an empty item is a typo, refuse it. */
    if (strlen(arg) >= sizeof copy || !*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
        strstr(arg, ",,"))
        return -EINVAL;
    strcpy(copy, arg);
    o->nsizes = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (o->nsizes == MAX_SIZES || parse_one_size(item, &v) != 0 || v < MIN_CHUNK || v > MAX_CHUNK)
            return -EINVAL;
        o->sizes[o->nsizes++] = v;
    }
    return o->nsizes ? 0 : -EINVAL;
}

static int option_error(const char *what, const char *arg)
{
    fprintf(stderr, "ringcast-bench: %s: \"%s\"\n(try --help)\n", what, arg);
    return -EINVAL;
}

static int parse_deliveries(const char *arg, struct bench_opts *o)
{
    static const char *const known[] = { "send", "rma", "stream" };
    char list[64];
    snprintf(list, sizeof list, "%s", arg);
    o->ndeliveries = 0;
    o->deliveries_given = true;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const char *d = NULL;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            if (!strcmp(tok, known[k]))
                d = known[k];
        for (unsigned i = 0; d && i < o->ndeliveries; i++)
            if (o->deliveries[i] == d)
                d = NULL;
        if (!d || o->ndeliveries == 3)
            return option_error("--delivery: expected send, rma and/or stream, each once, separated by commas",
                                arg);
        o->deliveries[o->ndeliveries++] = d;
    }
    return o->ndeliveries ? 0 : option_error("--delivery: expected send, rma and/or stream", arg);
}

static int parse_modes(const char *arg, struct bench_opts *o)
{
    static const char *const known[] = { "zerocopy", "buffered", "auto" };
    o->nmodes = 0;
    o->modes_given = true;
    for (const char *at = arg;;) {
        size_t len = strcspn(at, ",");
        size_t k = 0;
        while (k < 3 && !(strlen(known[k]) == len && !strncmp(at, known[k], len)))
            k++;
        for (unsigned i = 0; k < 3 && i < o->nmodes; i++)
            if (o->modes[i] == known[k])
                k = 3;   /* twice: refused */
        if (k == 3)
            return option_error("--mode: expected zerocopy, buffered and/or auto, each once, "
                                "separated by commas", arg);
        o->modes[o->nmodes++] = known[k];
        if (!at[len])
            return 0;
        at += len + 1;
    }
}

static int parse_rate(const char *arg, const char *opt, struct rci_rate *out)
{
    char what[96];
    snprintf(what, sizeof what, "%s: expected unlimited, a byte rate (2.5GB/s) or a chunk rate "
             "(10Mchunks/s)", opt);
    return rci_parse_rate(arg, out) ? option_error(what, arg) : 0;
}

/* --target RATE,SIZE (a limited rate; size 8..16M). */
static int parse_target(const char *arg, struct bench_opts *o)
{
    const char *comma = strrchr(arg, ',');
    struct model_target *t = &o->targets[o->ntargets];
    if (o->ntargets == sizeof o->targets / sizeof o->targets[0] || !comma || strlen(arg) >= sizeof t->text)
        return option_error("--target: expected RATE,SIZE (at most 8 targets)", arg);
    char rate[64];
    snprintf(rate, sizeof rate, "%.*s", (int)(comma - arg), arg);
    if (parse_rate(rate, "--target", &t->rate))
        return -EINVAL;
    if (t->rate.unit == RCI_RATE_UNLIMITED || parse_one_size(comma + 1, &t->size) || t->size < MIN_CHUNK ||
        t->size > MAX_CHUNK)
        return option_error("--target: expected a limited RATE and a SIZE 8..16M", arg);
    snprintf(t->text, sizeof t->text, "%s", arg);
    o->ntargets++;
    return 0;
}

static int parse_option(int c, const char *arg, struct bench_opts *o)
{
    char *end;
    uint64_t v;
    switch (c) {
    case 'j': o->json = true; return 0;
    case 'P': o->plot_dir = arg; return 0;
    case 'p':
        if (!*arg || strlen(arg) >= sizeof o->provider)
            return option_error("--provider: empty or too long", arg);
        strcpy(o->provider, arg);
        return 0;
    case 'e':
        if (strcmp(arg, "msg") && strcmp(arg, "rdm"))
            return option_error("--endpoint: expected msg or rdm", arg);
        o->rdm = strcmp(arg, "rdm") == 0;
        return 0;
    case 'z':
        o->sizes_given = true;
        return parse_sizes(arg, o) ? option_error("--sizes: expected sizes 8..16M separated by commas", arg) : 0;
    case 'E':
        v = strtoull(arg, &end, 10);
        if (*end || end == arg || arg[0] == '-' || v < 1 || v > 2048)
            return option_error("--elinks: expected 1..2048", arg);
        o->elinks = (uint32_t)v;
        return 0;
    case 'r': {
        struct rci_rate r;
        if (parse_rate(arg, "--rate", &r))
            return -EINVAL;
        o->rate = arg;
        return 0;
    }
    case 'm':
        return parse_modes(arg, o);
    case 'D':
        return parse_deliveries(arg, o);
    case 'T':
        v = strtoull(arg, &end, 10);
        if (*end || end == arg || arg[0] == '-' || v < 1 || v > 16)
            return option_error("--publisher-threads: expected 1..16", arg);
        o->publisher_threads = (unsigned)v;
        return 0;
    case 't':
        return parse_target(arg, o);
    case 'f':
        if (parse_one_size(arg, &v) || v < MIN_CHUNK || v > MAX_CHUNK)
            return option_error("--fanout-size: expected a size 8..16M", arg);
        o->fanout_size = v;
        return 0;
    case 'b':
        if (parse_one_size(arg, &v) || v > UINT32_MAX ||
            rci_felix_check_format(FELIX_FMT_C0CE, (uint32_t)v, NULL, 0) != 0)
            return option_error("--block-size: expected 1k..64k in steps of 1k", arg);
        o->block_size = v;
        return 0;
    case 's':
        o->seconds = strtod(arg, &end);
        if (*end != '\0' || end == arg || !(o->seconds >= 0.05 && o->seconds <= 3600))
            return option_error("--seconds: expected 0.05..3600", arg);
        return 0;
    default:
        return -EINVAL;
    }
}

/* 0: run bench_modes[*mode]; 1: --help or --version printed; -1: usage error. */
static int parse_args(int argc, char **argv, struct bench_opts *o, size_t *mode)
{
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },           { "seconds", required_argument, NULL, 's' },
        { "provider", required_argument, NULL, 'p' }, { "endpoint", required_argument, NULL, 'e' },
        { "sizes", required_argument, NULL, 'z' },    { "fanout-size", required_argument, NULL, 'f' },
        { "plot", required_argument, NULL, 'P' },     { "help", no_argument, NULL, 'h' },
        { "block-size", required_argument, NULL, 'b' },
        { "elinks", required_argument, NULL, 'E' },   { "rate", required_argument, NULL, 'r' },
        { "mode", required_argument, NULL, 'm' },     { "delivery", required_argument, NULL, 'D' },     { "publisher-threads", required_argument, NULL, 'T' },
        { "target", required_argument, NULL, 't' },   { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    static const uint64_t default_sizes[] = { 64, 256, 1024, 8192, 65536, 1048576 };
    *o = (struct bench_opts){ .seconds = 2.0, .provider = "tcp", .fanout_size = 8192,
                              .nsizes = sizeof default_sizes / sizeof default_sizes[0], .elinks = 8,
                              .publisher_threads = 1, .modes = { "zerocopy", "buffered" }, .nmodes = 2,
                              .deliveries = { "send" }, .ndeliveries = 1 };
    memcpy(o->sizes, default_sizes, sizeof default_sizes);
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        if (c == 'V') {
            printf("ringcast-bench %s\n", RCI_VERSION);
            return 1;
        }
        if (c == '?' || parse_option(c, optarg, o) != 0)
            return -1;
    }
    const char *name = optind < argc ? argv[optind] : "all";
    if (optind < argc - 1)
        return option_error("one mode only", argv[optind + 1]), -1;
    for (*mode = 0; *mode < NMODES; (*mode)++)
        if (strcmp(name, bench_modes[*mode].name) == 0)
            return 0;
    option_error("unknown mode", name);
    return -1;
}

/* The conditions a reader needs to judge the figures: other processes on
 * the same cores move them by a factor of 2. */
static void print_conditions(const struct bench *b, FILE *out, const char *when)
{
    double load[3] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
        load[0] = load[1] = load[2] = -1;
    if (f)
        fclose(f);
    fprintf(out, "# %s: %s %s on %ld cores, %.2g s per point, load average %.2f %.2f %.2f\n", when,
            b->o.provider, b->o.rdm ? "rdm" : "msg", sysconf(_SC_NPROCESSORS_ONLN), b->o.seconds, load[0],
            load[1], load[2]);
}

static bool pipeline_rows(const struct rci_bench_report *r)
{
    for (unsigned i = 0; i < r->nrows; i++)
        if (!strcmp(r->rows[i].test, "zerocopy") || !strcmp(r->rows[i].test, "buffered") ||
            !strcmp(r->rows[i].test, "auto") ||
            !strcmp(r->rows[i].test, "latency"))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    static struct bench b;   /* large (rows, configuration): not on the stack */
    size_t mode;
    int prc = parse_args(argc, argv, &b.o, &mode);
    if (prc)
        return prc > 0 ? 0 : 2;
    b.report.json = b.o.json;
    int rc = find_programs(&b);
    if (rc == 0)
        rc = load_defaults(&b);
    FILE *notes = b.o.json ? stderr : stdout;
    b.report.block_size = b.cfg.card[0].block_size;
    if (rc == 0) {
        print_conditions(&b, notes, "start");
        rc = bench_modes[mode].run(&b);
        print_conditions(&b, notes, "end");
    }
    if (pipeline_rows(&b.report) && bench_modes[mode].run != run_model)
        rci_bench_print_targets(&b.report, notes);
    if (b.o.plot_dir && b.report.nrows > 0 && rci_bench_write_plots(&b.report, b.o.plot_dir) != 0)
        rc = rc ? rc : -EIO;
    remove_workdir(&b, rc != 0);
    return rc == 0 ? 0 : 1;
}
