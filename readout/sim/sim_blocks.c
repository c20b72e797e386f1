/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_blocks.c — FELIX ToHost block writer of the simulated card (see
 * sim_blocks.h for the API and readout/README.md for the byte layout). */
#include "readout/sim/sim_blocks.h"
#include "common/errbuf.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/monotonic.h"
#include "readout/sim/pattern.h"

/* Longest chunk the generator makes: far beyond any real e-link packet, and
 * small enough that every length and offset fits in 32 bits. */
#define RCI_SIM_MAX_CHUNK (256u << 20)


static inline void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static const char *format_name(enum felix_format fmt)
{
    switch (fmt) {
    case FELIX_FMT_ABCD: return "abcd";
    case FELIX_FMT_ABCE: return "abce";
    case FELIX_FMT_C0CE: return "c0ce";
    }
    return "unknown";
}

/* ---- encoding ----------------------------------------------------------- */

int rci_felix_check_format(enum felix_format fmt, uint32_t block_size, char *err, size_t errlen)
{
    switch (fmt) {
    case FELIX_FMT_ABCD:
    case FELIX_FMT_ABCE:
        if (block_size != FELIX_MIN_BLOCK) {
            rci_set_err(err, errlen, "format %s needs 1024-byte blocks, not %" PRIu32,
                    format_name(fmt), block_size);
            return -EINVAL;
        }
        return 0;
    case FELIX_FMT_C0CE:
        if (block_size < FELIX_MIN_BLOCK || block_size > FELIX_MAX_BLOCK ||
            block_size % FELIX_MIN_BLOCK != 0) {
            rci_set_err(err, errlen,
                    "format c0ce needs a block size of 1..64 KiB in 1 KiB steps, not %" PRIu32,
                    block_size);
            return -EINVAL;
        }
        return 0;
    }
    rci_set_err(err, errlen, "unknown block format %d", (int)fmt);
    return -EINVAL;
}

uint16_t rci_felix_marker(enum felix_format fmt, uint32_t block_size)
{
    switch (fmt) {
    case FELIX_FMT_ABCD: return FELIX_MARKER_ABCD;
    case FELIX_FMT_ABCE: return FELIX_MARKER_ABCE;
    case FELIX_FMT_C0CE: break;
    }
    return (uint16_t)(FELIX_MARKER_C0CE | ((block_size / FELIX_MIN_BLOCK - 1) & 0x3fu) << 8);
}

bool rci_felix_marker_ok(uint16_t marker, enum felix_format fmt, uint32_t block_size)
{
    return rci_felix_check_format(fmt, block_size, NULL, 0) == 0 &&
           marker == rci_felix_marker(fmt, block_size);
}

unsigned rci_felix_trailer_bytes(enum felix_format fmt) { return fmt == FELIX_FMT_ABCD ? 2u : 4u; }

uint32_t rci_felix_max_len(enum felix_format fmt)
{
    return fmt == FELIX_FMT_ABCD ? FELIX_T16_LEN_MASK : FELIX_T32_LEN_MASK;
}

uint32_t rci_felix_trailer(enum felix_format fmt, enum felix_sub_type type, uint32_t len,
                          uint32_t flags)
{
    uint32_t t = (uint32_t)type & 7u;
    if (fmt == FELIX_FMT_ABCD) {
        uint32_t w = (len & FELIX_T16_LEN_MASK) | t << FELIX_T16_TYPE_SHIFT;
        if (flags & RCI_CHUNK_CRC_ERROR) w |= FELIX_T16_CRC;
        if (flags & RCI_CHUNK_ERROR)     w |= FELIX_T16_ERROR;
        if (flags & RCI_CHUNK_TRUNCATED) w |= FELIX_T16_TRUNC;
        return w;
    }
    uint32_t w = (len & FELIX_T32_LEN_MASK) | t << FELIX_T32_TYPE_SHIFT;
    if (flags & RCI_CHUNK_BUSY)      w |= FELIX_T32_BUSY;
    if (flags & RCI_CHUNK_CRC_ERROR) w |= FELIX_T32_CRC;
    if (flags & RCI_CHUNK_ERROR)     w |= FELIX_T32_ERROR;
    if (flags & RCI_CHUNK_TRUNCATED) w |= FELIX_T32_TRUNC;
    return w;
}

static void put_trailer(uint8_t *p, unsigned tbytes, uint32_t w)
{
    if (tbytes == 2)
        put_le16(p, (uint16_t)w);
    else
        put_le32(p, w);
}

/* ---- composing one block ---------------------------------------------- */

int rci_blk_begin(struct rci_blk *b, uint8_t *dst, enum felix_format fmt, uint32_t block_size,
                 unsigned elink, unsigned seq)
{
    if (rci_felix_check_format(fmt, block_size, NULL, 0) != 0 || elink > FELIX_ELINK_MASK)
        return -EINVAL;
    b->blk = dst;
    b->size = block_size;
    b->pos = FELIX_HEADER_BYTES;
    b->tbytes = rci_felix_trailer_bytes(fmt);
    b->fmt = fmt;
    put_le16(dst, rci_felix_header_word(elink, seq));
    put_le16(dst + 2, rci_felix_marker(fmt, block_size));
    return 0;
}

uint8_t *rci_blk_add(struct rci_blk *b, enum felix_sub_type type, uint32_t len, uint32_t flags)
{
    if (len > rci_felix_max_len(b->fmt) || len > b->size ||
        rci_blk_footprint(b, len) > rci_blk_space(b))
        return NULL;
    uint8_t *payload = b->blk + b->pos;
    uint32_t trailer_at = b->pos + rci_blk_footprint(b, len) - b->tbytes;
    memset(payload + len, 0, trailer_at - (b->pos + len));       /* padding */
    put_trailer(b->blk + trailer_at, b->tbytes, rci_felix_trailer(b->fmt, type, len, flags));
    b->pos = trailer_at + b->tbytes;
    return payload;
}

void rci_blk_finish(struct rci_blk *b)
{
    memset(b->blk + b->pos, 0, b->size - b->pos);
    b->pos = b->size;
}

/* ---- accounting walk ---------------------------------------------------- */

int rci_sim_block_count(const uint8_t *blk, enum felix_format fmt, uint32_t block_size,
                       struct rci_block_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    if (!rci_felix_marker_ok(get_le16(blk + 2), fmt, block_size))
        return -EINVAL;
    unsigned tb = rci_felix_trailer_bytes(fmt);
    uint32_t pos = block_size;          /* everything from pos on is walked */
    while (pos > FELIX_HEADER_BYTES) {
        pos -= tb;
        uint32_t w = tb == 2 ? get_le16(blk + pos) : get_le32(blk + pos);
        if (w == 0)
            continue;                   /* null trailer */
        unsigned type = tb == 2 ? w >> FELIX_T16_TYPE_SHIFT : w >> FELIX_T32_TYPE_SHIFT;
        uint32_t len = w & (tb == 2 ? FELIX_T16_LEN_MASK : FELIX_T32_LEN_MASK);
        uint32_t padded = (len + tb - 1) / tb * tb;
        if (type == FELIX_SUB_NULL || padded > pos - FELIX_HEADER_BYTES)
            return -EINVAL;
        pos -= padded;
        counts->subchunks++;
        counts->payload_bytes += len;
        if (type == FELIX_SUB_WHOLE || type == FELIX_SUB_LAST)
            counts->chunks_completed++;
        if (type == FELIX_SUB_WHOLE || type == FELIX_SUB_FIRST)
            counts->chunks_started++;
    }
    return 0;
}

/* ---- generator ---------------------------------------------------------- */

struct sim_elink {
    uint32_t seq;            /* block sequence number of its next block (mod 32 on write) */
    uint32_t next_len;       /* size drawn for its next chunk; 0 = not drawn yet */
    uint64_t next_tag_seq;   /* pattern sequence number of its next chunk */
    /* the chunk in progress (active) */
    bool active;
    uint32_t len, done;
    uint32_t flags;          /* injected RCI_CHUNK_* flags, put on its final subchunk */
    uint64_t tag_seq;
};

struct replay_counts {
    uint32_t chunks_started, chunks_completed;
    uint64_t payload_bytes;
};

struct rci_sim_gen {
    struct rci_sim_gen_config c;
    unsigned tbytes;
    struct sim_elink *el;
    uint32_t next_elink;     /* round robin */
    uint32_t active_chunks;  /* e-links with a chunk in progress */
    uint64_t rng;
    bool stop_new, done;
    bool pending_malformed, pending_seqskip;
    struct rci_sim_gen_stats st;
    /* replay */
    uint8_t *replay;
    uint64_t replay_blocks, replay_next;
    struct replay_counts *replay_counts;
};

/* splitmix64: fast, and every seed (including 0) gives a good sequence. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static bool chance(struct rci_sim_gen *g, double p)
{
    return p > 0 && (double)(rng_next(&g->rng) >> 11) * 0x1.0p-53 < p;
}

static bool prob_ok(double p) { return p >= 0.0 && p <= 1.0; }   /* false for NaN */

static int validate_sim(const struct rci_sim_gen_config *c, char *err, size_t errlen)
{
    const struct rci_sim_params *s = &c->sim;
    if (s->elinks < 1 || s->elinks > FELIX_ELINK_MASK + 1) {
        rci_set_err(err, errlen, "sim: elinks must be 1..2048, not %" PRIu32, s->elinks);
        return -EINVAL;
    }
    if (s->chunk_size_min < 1 || s->chunk_size_min > s->chunk_size_max ||
        s->chunk_size_max > RCI_SIM_MAX_CHUNK) {
        rci_set_err(err, errlen, "sim: chunk size %" PRIu32 "-%" PRIu32 " is not within 1..%u with min <= max",
                s->chunk_size_min, s->chunk_size_max, RCI_SIM_MAX_CHUNK);
        return -EINVAL;
    }
    if (s->fill != RCI_FILL_PATTERN && s->fill != RCI_FILL_NONE && s->fill != RCI_FILL_TIMESTAMP) {
        rci_set_err(err, errlen, "sim: unknown fill %d", (int)s->fill);
        return -EINVAL;
    }
    if (s->fill == RCI_FILL_TIMESTAMP && s->chunk_size_min < RCI_SIM_STAMP_BYTES) {
        rci_set_err(err, errlen, "sim: fill = timestamp needs chunk_size_min >= %u (the stamp), not %" PRIu32,
                   RCI_SIM_STAMP_BYTES, s->chunk_size_min);
        return -EINVAL;
    }
    const struct { const char *name; double p; } probs[] = {
        { "err_truncated", s->err_truncated }, { "err_crc", s->err_crc },
        { "err_malformed", s->err_malformed }, { "err_seqskip", s->err_seqskip },
    };
    for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++) {
        if (!prob_ok(probs[i].p)) {
            rci_set_err(err, errlen, "sim: %s must be a probability in [0, 1], not %g", probs[i].name,
                    probs[i].p);
            return -EINVAL;
        }
    }
    return 0;
}

/* Read the whole file: replay must not touch the disk while it runs. */
static int read_file(const char *path, uint8_t **data, uint64_t *size, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        rci_set_err(err, errlen, "replay file %s: cannot open: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rci_set_err(err, errlen, "replay file %s: not a regular file", path);
        fclose(f);
        return -EINVAL;
    }
    *size = (uint64_t)st.st_size;
    *data = malloc(*size ? *size : 1);
    if (!*data) {
        rci_set_err(err, errlen, "replay file %s: cannot allocate %" PRIu64 " bytes", path, *size);
        fclose(f);
        return -ENOMEM;
    }
    size_t got = fread(*data, 1, *size, f);
    fclose(f);
    if (got != *size) {
        rci_set_err(err, errlen, "replay file %s: read %zu of %" PRIu64 " bytes", path, got, *size);
        free(*data);
        *data = NULL;
        return -EIO;
    }
    return 0;
}

/* Check every block's marker and count what it holds, so statistics and
 * a run length in chunks work for replays too. */
static int index_replay(struct rci_sim_gen *g, const char *path, char *err, size_t errlen)
{
    uint32_t bs = g->c.block_size;
    g->replay_counts = calloc(g->replay_blocks, sizeof *g->replay_counts);
    if (!g->replay_counts) {
        rci_set_err(err, errlen, "replay file %s: cannot allocate the block index", path);
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < g->replay_blocks; i++) {
        const uint8_t *blk = g->replay + i * bs;
        uint16_t marker = get_le16(blk + 2);
        if (!rci_felix_marker_ok(marker, g->c.format, bs)) {
            rci_set_err(err, errlen,
                    "replay file %s: block %" PRIu64 " at byte offset %" PRIu64
                    " has marker 0x%04x, expected 0x%04x (format %s, %" PRIu32 "-byte blocks)",
                    path, i, i * bs, marker, rci_felix_marker(g->c.format, bs),
                    format_name(g->c.format), bs);
            return -EINVAL;
        }
        /* A block with a broken trailer chain may be there on purpose (to
         * test a decoder): it counts as a block without chunks. */
        struct rci_block_counts bc;
        if (rci_sim_block_count(blk, g->c.format, bs, &bc) == 0)
            g->replay_counts[i] = (struct replay_counts){ bc.chunks_started, bc.chunks_completed,
                                                          bc.payload_bytes };
    }
    return 0;
}

static int load_replay(struct rci_sim_gen *g, char *err, size_t errlen)
{
    const char *path = g->c.sim.replay_file;
    uint64_t size = 0;
    int rc = read_file(path, &g->replay, &size, err, errlen);
    if (rc != 0)
        return rc;
    uint32_t bs = g->c.block_size;
    if (size == 0) {
        rci_set_err(err, errlen, "replay file %s: empty (byte offset 0)", path);
        return -EINVAL;
    }
    if (size % bs != 0) {
        rci_set_err(err, errlen,
                "replay file %s: %" PRIu64 " bytes is not a multiple of the %" PRIu32
                "-byte block size: the block at byte offset %" PRIu64 " is incomplete",
                path, size, bs, size - size % bs);
        return -EINVAL;
    }
    g->replay_blocks = size / bs;
    return index_replay(g, path, err, errlen);
}

int rci_sim_gen_create(const struct rci_sim_gen_config *c, struct rci_sim_gen **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    int rc = rci_felix_check_format(c->format, c->block_size, err, errlen);
    if (rc == 0)
        rc = validate_sim(c, err, errlen);
    if (rc != 0)
        return rc;
    struct rci_sim_gen *g = calloc(1, sizeof *g);
    if (!g) {
        rci_set_err(err, errlen, "sim: out of memory");
        return -ENOMEM;
    }
    g->c = *c;
    g->c.sim.replay_file[sizeof g->c.sim.replay_file - 1] = '\0';
    g->tbytes = rci_felix_trailer_bytes(c->format);
    g->rng = c->sim.seed;
    g->el = calloc(c->sim.elinks, sizeof *g->el);
    if (!g->el) {
        rci_set_err(err, errlen, "sim: out of memory for %" PRIu32 " e-links", c->sim.elinks);
        rci_sim_gen_destroy(g);
        return -ENOMEM;
    }
    if (g->c.sim.replay_file[0]) {
        rc = load_replay(g, err, errlen);
        if (rc != 0) {
            rci_sim_gen_destroy(g);
            return rc;
        }
    }
    *out = g;
    return 0;
}

void rci_sim_gen_destroy(struct rci_sim_gen *g)
{
    if (!g)
        return;
    free(g->el);
    free(g->replay);
    free(g->replay_counts);
    free(g);
}

void rci_sim_gen_stop_new_chunks(struct rci_sim_gen *g) { g->stop_new = true; }
bool rci_sim_gen_done(const struct rci_sim_gen *g) { return g->done; }
void rci_sim_gen_get_stats(const struct rci_sim_gen *g, struct rci_sim_gen_stats *s) { *s = g->st; }
uint64_t rci_sim_gen_replay_blocks(const struct rci_sim_gen *g) { return g->replay_blocks; }

/* Run length and time limit allow another chunk. */
static bool run_allows_new(const struct rci_sim_gen *g)
{
    return !g->stop_new &&
           (g->c.sim.run_chunks == 0 || g->st.chunks_started < g->c.sim.run_chunks);
}

static bool budget_allows_new(const struct rci_sim_budget *b, const struct rci_sim_block_info *info)
{
    return !b || (info->chunks_started < b->new_chunks && info->payload_bytes < b->payload_bytes);
}

/* The stamp goes into the subchunk that holds the chunk's first bytes, i.e.
 * when the firmware writes the chunk's first block (chunks are >= 8 bytes,
 * and a first subchunk holds at least 8: first_subchunk_min()). */
static void fill_payload(const struct rci_sim_gen *g, uint8_t *dst, uint32_t from, uint32_t n,
                         unsigned elink, uint64_t tag_seq)
{
    if (g->c.sim.fill == RCI_FILL_PATTERN) {
        rci_pattern_fill(dst, from, n, g->c.tag_base + elink, tag_seq);
    } else if (g->c.sim.fill == RCI_FILL_TIMESTAMP && from == 0) {
        uint64_t le = htole64(rci_now_ns());
        memcpy(dst, &le, RCI_SIM_STAMP_BYTES);
    }
}

/* Append one subchunk of the e-link's current chunk and account for it. */
static void put_subchunk(struct rci_sim_gen *g, struct rci_blk *b, unsigned elink,
                         enum felix_sub_type type, uint32_t n, struct rci_sim_block_info *info)
{
    struct sim_elink *el = &g->el[elink];
    bool final = type == FELIX_SUB_WHOLE || type == FELIX_SUB_LAST;
    uint8_t *p = rci_blk_add(b, type, n, final ? el->flags : 0);
    fill_payload(g, p, el->done, n, elink, el->tag_seq);
    el->done += n;
    info->subchunks++;
    info->payload_bytes += n;
    g->st.payload_bytes += n;
    if (type == FELIX_SUB_WHOLE || type == FELIX_SUB_FIRST) {
        info->chunks_started++;
        g->st.chunks_started++;
    }
    if (final) {
        el->active = false;
        g->active_chunks--;
        info->chunks_completed++;
        g->st.chunks_completed++;
    }
}

static uint32_t draw_len(struct rci_sim_gen *g)
{
    uint32_t lo = g->c.sim.chunk_size_min, hi = g->c.sim.chunk_size_max;
    return lo == hi ? lo : lo + (uint32_t)(rng_next(&g->rng) % ((uint64_t)hi - lo + 1));
}

/* Begin the e-link's next chunk: its length, pattern sequence and errors. */
static void open_chunk(struct rci_sim_gen *g, struct sim_elink *el)
{
    if (el->next_len == 0)
        el->next_len = draw_len(g);
    el->len = el->next_len;
    el->next_len = 0;
    el->done = 0;
    el->tag_seq = el->next_tag_seq++;
    el->flags = 0;
    if (chance(g, g->c.sim.err_truncated)) {
        el->flags |= RCI_CHUNK_TRUNCATED;
        g->st.injected_truncated++;
    }
    if (chance(g, g->c.sim.err_crc)) {
        el->flags |= RCI_CHUNK_CRC_ERROR;
        g->st.injected_crc++;
    }
    el->active = true;
    g->active_chunks++;
}

/* The chunk in progress goes on: as its last subchunk if the rest fits,
 * else as a middle subchunk filling the block. */
static void continue_chunk(struct rci_sim_gen *g, struct rci_blk *b, unsigned elink,
                           struct rci_sim_block_info *info)
{
    struct sim_elink *el = &g->el[elink];
    uint32_t rest = el->len - el->done;
    if (rci_blk_footprint(b, rest) <= rci_blk_space(b))
        put_subchunk(g, b, elink, FELIX_SUB_LAST, rest, info);
    else
        put_subchunk(g, b, elink, FELIX_SUB_MIDDLE, rci_blk_room(b), info);
}

/* A timestamp must lie whole in the chunk's first block. */
static uint32_t first_subchunk_min(const struct rci_sim_gen *g)
{
    return g->c.sim.fill == RCI_FILL_TIMESTAMP ? RCI_SIM_STAMP_BYTES : 1;
}

/* New chunks as whole subchunks while they fit; the first that does not fit
 * becomes the block's last subchunk (type first), filling it exactly. With
 * allow_first false the block ends instead, so that the e-link's next block
 * starts at a chunk boundary (where errors are injected). */
static void add_new_chunks(struct rci_sim_gen *g, struct rci_blk *b, unsigned elink,
                           const struct rci_sim_budget *budget, bool allow_first,
                           struct rci_sim_block_info *info)
{
    struct sim_elink *el = &g->el[elink];
    while (run_allows_new(g) && budget_allows_new(budget, info)) {
        if (el->next_len == 0)
            el->next_len = draw_len(g);
        if (rci_blk_footprint(b, el->next_len) <= rci_blk_space(b)) {
            open_chunk(g, el);
            put_subchunk(g, b, elink, FELIX_SUB_WHOLE, el->len, info);
            continue;
        }
        if (allow_first && rci_blk_room(b) >= first_subchunk_min(g)) {
            open_chunk(g, el);
            put_subchunk(g, b, elink, FELIX_SUB_FIRST, rci_blk_room(b), info);
        }
        return;
    }
}

/* A block whose only trailer claims more payload than the block holds: a
 * decoder must skip it. It carries no chunk, so none is lost. */
static void write_malformed(struct rci_sim_gen *g, struct rci_blk *b, struct rci_sim_block_info *info)
{
    rci_blk_finish(b);
    put_trailer(b->blk + b->size - g->tbytes, g->tbytes,
                rci_felix_trailer(g->c.format, FELIX_SUB_WHOLE, rci_felix_max_len(g->c.format), 0));
    info->malformed = true;
    g->st.injected_malformed++;
    g->pending_malformed = false;
}

static void gen_block(struct rci_sim_gen *g, unsigned elink, uint8_t *dst,
                      const struct rci_sim_budget *budget, struct rci_sim_block_info *info)
{
    struct sim_elink *el = &g->el[elink];
    /* Per-block errors go where the e-link is between chunks, so a decoder
     * that handles them loses no chunk. */
    bool at_boundary = !el->active;
    if (at_boundary && g->pending_seqskip) {
        el->seq++;
        info->seqskip = true;
        g->st.injected_seqskip++;
        g->pending_seqskip = false;
    }
    struct rci_blk b;
    rci_blk_begin(&b, dst, g->c.format, g->c.block_size, elink, el->seq);
    info->elink = elink;
    info->seq = el->seq % FELIX_SEQ_MOD;
    el->seq = (el->seq + 1) % FELIX_SEQ_MOD;
    if (at_boundary && g->pending_malformed) {
        write_malformed(g, &b, info);
        return;
    }
    if (el->active)
        continue_chunk(g, &b, elink, info);
    if (!el->active)
        add_new_chunks(g, &b, elink, budget, !(g->pending_malformed || g->pending_seqskip), info);
    rci_blk_finish(&b);
}

/* The e-link whose turn it is: any e-link when new chunks may start, else
 * only e-links with a chunk to finish. UINT32_MAX if none. */
static uint32_t pick_elink(struct rci_sim_gen *g, bool may_start)
{
    uint32_t n = g->c.sim.elinks;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = (g->next_elink + i) % n;
        if (may_start || g->el[e].active) {
            g->next_elink = (e + 1) % n;
            return e;
        }
    }
    return UINT32_MAX;
}

static int replay_next(struct rci_sim_gen *g, uint8_t *dst, struct rci_sim_block_info *info)
{
    if (!g->done && g->replay_next == g->replay_blocks && g->c.sim.replay_loop) {
        g->replay_next = 0;
        g->st.replay_loops++;
    }
    if (g->done || g->stop_new || g->replay_next == g->replay_blocks ||
        (g->c.sim.run_chunks && g->st.chunks_completed >= g->c.sim.run_chunks)) {
        g->done = true;
        return 0;
    }
    uint32_t bs = g->c.block_size;
    memcpy(dst, g->replay + g->replay_next * bs, bs);
    const struct replay_counts *rc = &g->replay_counts[g->replay_next++];
    uint16_t w0 = get_le16(dst);
    *info = (struct rci_sim_block_info){
        .elink = w0 & FELIX_ELINK_MASK, .seq = w0 >> FELIX_SEQ_SHIFT,
        .chunks_started = rc->chunks_started, .chunks_completed = rc->chunks_completed,
        .payload_bytes = rc->payload_bytes,
    };
    g->st.blocks++;
    g->st.chunks_started += rc->chunks_started;
    g->st.chunks_completed += rc->chunks_completed;
    g->st.payload_bytes += rc->payload_bytes;
    return 1;
}

int rci_sim_gen_next(struct rci_sim_gen *g, uint8_t *dst, const struct rci_sim_budget *budget,
                    struct rci_sim_block_info *info)
{
    struct rci_sim_block_info scratch;
    if (!info)
        info = &scratch;
    memset(info, 0, sizeof *info);
    if (g->replay)
        return replay_next(g, dst, info);
    if (g->done)
        return 0;
    bool run_new = run_allows_new(g);
    if (!run_new && g->active_chunks == 0) {
        g->done = true;
        return 0;
    }
    bool may_start = run_new && budget_allows_new(budget, info);
    uint32_t e = pick_elink(g, may_start);
    if (e == UINT32_MAX)
        return 0;                       /* the budget allows nothing to start */
    if (chance(g, g->c.sim.err_malformed))
        g->pending_malformed = true;
    if (chance(g, g->c.sim.err_seqskip))
        g->pending_seqskip = true;
    gen_block(g, e, dst, budget, info);
    g->st.blocks++;
    return 1;
}
