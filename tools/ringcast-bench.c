/* ringcast-bench — micro-benchmarks of ringcast's building blocks.
 *
 *   ringcast-bench MODE [--json] [--seconds S]
 *
 * Modes live in a table (bench_modes[]); `all` runs every one in turn.
 *
 * decode: the block decoder alone, on the calling thread. A 64 MiB ring is
 *   filled once with 4 KiB c0ce blocks from the simulator's generator (fixed
 *   chunk sizes 64 B, 1 KiB, 16 KiB on 8 e-links, pattern payload), then
 *   decoded again and again: each pass re-marks the ring as written (one
 *   more lap) and decodes it; the sink releases every chunk at once. Only
 *   rc_readout_decode() is timed. Between passes (untimed) the blocks'
 *   sequence numbers are renumbered so every lap is a valid continuation.
 *   The same run measures this machine's single-core memcpy bandwidth
 *   (256 MiB, best of 3) for scale.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dma/dma_ring.h"
#include "dma/monotonic.h"
#include "readout/readout.h"
#include "readout/sim_blocks.h"

struct bench_opts {
    bool json;
    double seconds;            /* minimum timed seconds per measurement */
};

struct bench_mode {
    const char *name;
    const char *summary;
    int (*run)(const struct bench_opts *o);
};

static void report(const struct bench_opts *o, const char *test, uint64_t chunk_size,
                   double chunks_per_s, double gbytes_per_s, const char *note)
{
    if (o->json)
        printf("{\"test\":\"%s\",\"chunk_size\":%" PRIu64 ",\"chunks_per_s\":%.0f,"
               "\"gbytes_per_s\":%.3f}\n", test, chunk_size, chunks_per_s, gbytes_per_s);
    else
        printf("%-8s %10" PRIu64 " %16.0f %10.3f   %s\n", test, chunk_size, chunks_per_s,
               gbytes_per_s, note);
    fflush(stdout);
}

/* ---- decode ------------------------------------------------------------ */

#define DEC_RING_SIZE  (64ull << 20)
#define DEC_BLOCK_SIZE 4096u
#define DEC_ELINKS     8u
/* Blocks kept back at the end of the fill so every chunk started can finish
 * (a 16 KiB chunk spans 5 blocks; the generator serves e-links in turn). */
#define DEC_FINISH_MARGIN (DEC_ELINKS * 8u)

struct dec_ctx {
    struct rc_dma_ring *ring;
    struct rc_readout *r;
    uint8_t *base;
    uint32_t nblocks;
    unsigned next_seq[2048];   /* per e-link, continuing across laps */
    uint64_t chunks_per_lap;
};

static int release_at_once(void *ctx, const struct rc_chunk *c)
{
    struct dec_ctx *d = ctx;
    rc_readout_release(d->r, c->key);
    return 0;
}

static void note_seq(struct dec_ctx *d, unsigned elink, unsigned seq)
{
    d->next_seq[elink] = (seq + 1) % FELIX_SEQ_MOD;
}

/* A block with no subchunks: keeps the ring full without starting chunks. */
static int write_empty_block(struct dec_ctx *d, uint8_t *dst, unsigned elink)
{
    struct rc_blk b;
    int rc = rc_blk_begin(&b, dst, FELIX_FMT_C0CE, DEC_BLOCK_SIZE, elink, d->next_seq[elink]);
    if (rc != 0)
        return rc;
    rc_blk_finish(&b);
    note_seq(d, elink, d->next_seq[elink]);
    return 0;
}

/* Fill the whole ring: generator blocks, every chunk finished before the
 * end, then empty blocks. */
static int fill_ring(struct dec_ctx *d, uint32_t chunk_size, char *err, size_t errlen)
{
    struct rc_sim_gen_config gc = {
        .format = FELIX_FMT_C0CE, .block_size = DEC_BLOCK_SIZE, .tag_base = 0,
        .sim = { .elinks = DEC_ELINKS, .chunk_size_min = chunk_size,
                 .chunk_size_max = chunk_size, .fill = RC_FILL_PATTERN, .seed = 1 } };
    struct rc_sim_gen *g;
    int rc = rc_sim_gen_create(&gc, &g, err, errlen);
    if (rc != 0)
        return rc;
    memset(d->next_seq, 0, sizeof d->next_seq);
    for (uint32_t i = 0; i < d->nblocks && rc == 0; i++) {
        uint8_t *dst = d->base + (size_t)i * DEC_BLOCK_SIZE;
        if (d->nblocks - i == DEC_FINISH_MARGIN)
            rc_sim_gen_stop_new_chunks(g);
        struct rc_sim_block_info info;
        if (rc_sim_gen_next(g, dst, NULL, &info) == 1)
            note_seq(d, info.elink, info.seq);
        else
            rc = write_empty_block(d, dst, i % DEC_ELINKS);
    }
    struct rc_sim_gen_stats st;
    rc_sim_gen_get_stats(g, &st);
    bool finished = rc_sim_gen_done(g);
    rc_sim_gen_destroy(g);
    if (rc != 0) {
        snprintf(err, errlen, "decode bench: cannot write an empty block (%s)", strerror(-rc));
        return rc;
    }
    if (!finished || st.chunks_started != st.chunks_completed) {
        snprintf(err, errlen, "decode bench: %" PRIu64 " chunks still open at the end of the "
                 "ring (margin of %u blocks too small)", st.chunks_started - st.chunks_completed,
                 DEC_FINISH_MARGIN);
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
        uint16_t w0 = rc_felix_header_word(elink, d->next_seq[elink]);
        h[0] = (uint8_t)w0;
        h[1] = (uint8_t)(w0 >> 8);
        note_seq(d, elink, d->next_seq[elink]);
    }
}

static int dec_open(struct dec_ctx *d, char *err, size_t errlen)
{
    struct rc_dma_ring_params rp = { .size = DEC_RING_SIZE, .unit_size = DEC_BLOCK_SIZE,
                                     .backend = RC_MEM_ANON, .lock_memory = false };
    int rc = rc_dma_ring_create(&rp, &d->ring, err, errlen);
    if (rc != 0)
        return rc;
    struct rc_card_params cp = {
        .ring_size = DEC_RING_SIZE, .block_size = DEC_BLOCK_SIZE,
        .block_format = FELIX_FMT_C0CE, .rd_update_bytes = 1 << 20,
        .max_chunk_size = 1 << 20, .max_chunk_pieces = 64, .max_chunks_in_flight = 1024 };
    d->base = rc_dma_ring_addr(d->ring);
    d->nblocks = (uint32_t)(DEC_RING_SIZE / DEC_BLOCK_SIZE);
    return rc_readout_create(&cp, d->ring, NULL, release_at_once, d, &d->r, err, errlen);
}

static void dec_close(struct dec_ctx *d)
{
    rc_readout_destroy(d->r);
    rc_dma_ring_destroy(d->ring);
}

static uint64_t decode_errors(const struct rc_readout_stats *s)
{
    return s->bad_header + s->err_malformed + s->err_seq_gap + s->err_oversize + s->err_orphan +
           s->chunks_incomplete + s->chunks_dropped_gap + s->bad_releases + s->sink_errors;
}

/* Decode lap after lap until o->seconds of decoding; 0 or -errno. */
static int bench_decode_size(const struct bench_opts *o, uint32_t chunk_size)
{
    char err[256] = "";
    struct dec_ctx *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    int rc = dec_open(d, err, sizeof err);
    if (rc == 0)
        rc = fill_ring(d, chunk_size, err, sizeof err);
    uint64_t timed_ns = 0, laps = 0;
    while (rc == 0 && (laps < 3 || timed_ns < (uint64_t)(o->seconds * 1e9))) {
        if (laps > 0)
            renumber_lap(d);
        uint64_t t0 = rc_now_ns();
        rc_dma_ring_note_written(d->ring, (laps + 1) * DEC_RING_SIZE);
        rc_readout_decode(d->r);
        timed_ns += rc_now_ns() - t0;
        laps++;
    }
    if (rc == 0) {
        struct rc_readout_stats s;
        rc_readout_get_stats(d->r, &s);
        if (s.chunks != laps * d->chunks_per_lap || decode_errors(&s) != 0 ||
            rc_dma_ring_read_pos(d->ring) != laps * DEC_RING_SIZE) {
            snprintf(err, sizeof err, "decode bench: %" PRIu64 " chunks decoded, %" PRIu64
                     " expected, %" PRIu64 " errors", s.chunks, laps * d->chunks_per_lap,
                     decode_errors(&s));
            rc = -EPROTO;
        } else {
            double secs = (double)timed_ns / 1e9;
            char note[96];
            snprintf(note, sizeof note, "%" PRIu64 " laps of %llu MiB, payload %.2f GB/s",
                     laps, DEC_RING_SIZE >> 20, (double)s.bytes / secs / 1e9);
            report(o, "decode", chunk_size, (double)s.chunks / secs,
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
static int bench_memcpy(const struct bench_opts *o)
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
        uint64_t t0 = rc_now_ns();
        memcpy(dst, src, size);
        /* The copies are identical: without this the compiler may drop all
         * but one of them. */
        __asm__ volatile("" : : "r"(dst), "r"(src) : "memory");
        uint64_t t = rc_now_ns() - t0;
        best = t < best ? t : best;
    }
    double secs = (double)best / 1e9;
    report(o, "memcpy", size, 1.0 / secs, (double)size / secs / 1e9, "256 MiB, best of 3");
    free(src);
    free(dst);
    return 0;
}

static int run_decode(const struct bench_opts *o)
{
    static const uint32_t sizes[] = { 64, 1024, 16384 };
    if (!o->json)
        printf("%-8s %10s %16s %10s   %s\n", "test", "chunk_size", "chunks/s", "GB/s",
               "(decode: GB/s of ring decoded, one core)");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int rc = bench_decode_size(o, sizes[i]);
        if (rc != 0)
            return rc;
    }
    return bench_memcpy(o);
}

static int run_all(const struct bench_opts *o);

static const struct bench_mode bench_modes[] = {
    { "decode", "block decoder on one core (64 B, 1 KiB, 16 KiB chunks) and memcpy", run_decode },
    { "all", "every mode above, in turn", run_all },
};
#define NMODES (sizeof bench_modes / sizeof bench_modes[0])

static int run_all(const struct bench_opts *o)
{
    for (size_t i = 0; i < NMODES; i++) {
        if (bench_modes[i].run == run_all)
            continue;
        int rc = bench_modes[i].run(o);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ringcast-bench MODE [--json] [--seconds S]\n"
               "       ringcast-bench --help\n\n"
               "modes:\n");
    for (size_t i = 0; i < NMODES; i++)
        fprintf(f, "  %-8s %s\n", bench_modes[i].name, bench_modes[i].summary);
    fprintf(f, "\noptions:\n"
               "  --json       one JSON object per line: test, chunk_size, chunks_per_s,\n"
               "               gbytes_per_s (GB = 1e9 bytes)\n"
               "  --seconds S  time each measurement for at least S seconds (default 0.5)\n"
               "  --help       this text\n"
               "\nExit status: 0 ok, 1 a benchmark failed its own checks, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    struct bench_opts o = { .json = false, .seconds = 0.5 };
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "seconds", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j':
            o.json = true;
            break;
        case 's':
            o.seconds = strtod(optarg, &end);
            if (*end != '\0' || end == optarg || !(o.seconds >= 0 && o.seconds <= 3600)) {
                fprintf(stderr, "ringcast-bench: --seconds: expected 0..3600, got \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    for (size_t i = 0; i < NMODES; i++)
        if (strcmp(argv[optind], bench_modes[i].name) == 0)
            return bench_modes[i].run(&o) == 0 ? 0 : 1;
    fprintf(stderr, "ringcast-bench: unknown mode \"%s\"\n", argv[optind]);
    usage(stderr);
    return 2;
}
