/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-dump — print the records of a `ringcast-sub --out` file (the
 * format of include/ringcast/record.h): tag, flags, length and the first
 * bytes of each, or per-tag statistics; a damaged file is rejected at the
 * byte offset of the first record that cannot be right.
 *
 *   ringcast-dump [--tag LIST] [--json] [--stats] [--bytes N] FILE
 *
 * Exit status: 0 the whole file is sound, 1 it is damaged (the records
 * before the damage were printed), 2 usage error or the file cannot be read. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringcast/record.h"
#include "tools/cli.h"

#define EXIT_DAMAGED 1
#define EXIT_USAGE 2
#define MAX_TAG_ITEMS 1024u
#define DEFAULT_BYTES 16u
#define MAX_BYTES 4096u

struct options {
    const char *file;
    bool json, stats;
    unsigned bytes;                       /* payload bytes shown per record */
    size_t ntags;                         /* 0: every tag */
    uint64_t first[MAX_TAG_ITEMS], last[MAX_TAG_ITEMS];
};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: ringcast-dump [--tag LIST] [--json] [--stats] [--bytes N] FILE\n"
            "Print the records of a `ringcast-sub --out` FILE (include/ringcast/record.h):\n"
            "byte offset, tag, flags, length and the first payload bytes of each.\n"
            "\n"
            "  -t, --tag LIST   only these tags: 5,0x10-0x1f,100 (decimal or 0x hex)\n"
            "  -j, --json       one JSON object per record (with --stats: per tag)\n"
            "  -s, --stats      per tag instead of per record: records, bytes, flagged\n"
            "  -b, --bytes N    payload bytes shown per record (default %u, at most %u)\n"
            "  -h, --help       print this help\n"
            "      --version    print the version\n"
            "\n"
            "A record that cannot be right (its length runs past the end of the file,\n"
            "nonzero padding, unknown flag bits) ends the dump with the byte offset of\n"
            "that record. Exit status: 0 the file is sound, 1 it is damaged, 2 usage\n"
            "error or the file cannot be read.\n",
            DEFAULT_BYTES, MAX_BYTES);
}


/* "N" or "A-B" (A <= B). */
static int parse_tag_item(char *item, uint64_t *first, uint64_t *last)
{
    char *dash = strchr(item, '-');
    if (!dash)
        return rci_cli_parse_u64(item, first) || (*last = *first, 0);
    *dash = '\0';
    return rci_cli_parse_u64(item, first) || rci_cli_parse_u64(dash + 1, last) || *first > *last;
}

static int parse_tags(const char *arg, struct options *o)
{
    size_t len = strlen(arg);
    if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
        return rci_cli_usage_error("ringcast-dump", "--tag '%s': empty item", arg);
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return rci_cli_usage_error("ringcast-dump", "%s", "out of memory");
    int rc = 0;
    for (char *item = strtok_r(copy, ",", &save); !rc && item; item = strtok_r(NULL, ",", &save)) {
        if (o->ntags == MAX_TAG_ITEMS)
            rc = rci_cli_usage_error("ringcast-dump", "--tag: more than %s items", "1024");
        else if (parse_tag_item(item, &o->first[o->ntags], &o->last[o->ntags]))
            rc = rci_cli_usage_error("ringcast-dump", "--tag: an item is not a tag (N) or a range (A-B with A <= B): '%s'", arg);
        else
            o->ntags++;
    }
    free(copy);
    return rc;
}

/* 0: run; 1: help or version printed; -1: usage error (reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"tag", required_argument, NULL, 't'}, {"json", no_argument, NULL, 'j'},
        {"stats", no_argument, NULL, 's'},     {"bytes", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},      {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    o->bytes = DEFAULT_BYTES;
    int c;
    uint64_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "t:jsb:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': if (parse_tags(optarg, o)) return -1; break;
        case 'j': o->json = true; break;
        case 's': o->stats = true; break;
        case 'b':
            if (rci_cli_parse_u64(optarg, &v) || v > MAX_BYTES)
                return rci_cli_usage_error("ringcast-dump", "--bytes '%s': expected 0..4096", optarg);
            o->bytes = (unsigned)v;
            break;
        case 'h': usage(stdout); return 1;
        case 'V': printf("ringcast-dump %s\n", RCI_VERSION); return 1;
        default: return rci_cli_usage_error("ringcast-dump", "unknown option or missing argument: '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return rci_cli_usage_error("ringcast-dump", "%s", optind < argc ? "one FILE, please" : "no FILE given");
    o->file = argv[optind];
    return 0;
}

static bool wanted(const struct options *o, uint64_t tag)
{
    if (o->ntags == 0)
        return true;
    for (size_t i = 0; i < o->ntags; i++)
        if (tag >= o->first[i] && tag <= o->last[i])
            return true;
    return false;
}

/* ---- per-tag statistics: open addressing, grows with new tags ----------- */

struct tag_stat {
    uint64_t tag, records, bytes, flagged;
    bool used;
};

struct tag_table {
    struct tag_stat *slot;
    size_t cap, used;
};

static struct tag_stat *tag_slot(struct tag_stat *slots, size_t cap, uint64_t tag)
{
    size_t i = (size_t)((tag * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
    while (slots[i].used && slots[i].tag != tag)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static struct tag_stat *tag_get(struct tag_table *t, uint64_t tag)
{
    if ((t->used + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct tag_stat *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i].used)
                *tag_slot(slots, cap, t->slot[i].tag) = t->slot[i];
        free(t->slot);
        t->slot = slots;
        t->cap = cap;
    }
    struct tag_stat *s = tag_slot(t->slot, t->cap, tag);
    if (!s->used) {
        *s = (struct tag_stat){.tag = tag, .used = true};
        t->used++;
    }
    return s;
}

static int cmp_tag(const void *a, const void *b)
{
    uint64_t x = ((const struct tag_stat *)a)->tag, y = ((const struct tag_stat *)b)->tag;
    return x < y ? -1 : x > y;
}

static void print_stats(const struct options *o, struct tag_table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].used)
            t->slot[n++] = t->slot[i];   /* compact in place: the table is not used again */
    qsort(t->slot, n, sizeof *t->slot, cmp_tag);
    for (size_t i = 0; i < n; i++) {
        const struct tag_stat *s = &t->slot[i];
        if (o->json)
            printf("{\"tag\":%" PRIu64 ",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"flagged\":%" PRIu64 "}\n",
                   s->tag, s->records, s->bytes, s->flagged);
        else
            printf("tag 0x%" PRIx64 ": %" PRIu64 " records, %" PRIu64 " bytes, %" PRIu64 " flagged\n", s->tag,
                   s->records, s->bytes, s->flagged);
    }
}

/* ---- records --------------------------------------------------------------- */

static void print_record(const struct options *o, uint64_t offset, const struct rc_record *r)
{
    unsigned show = r->len < o->bytes ? r->len : o->bytes;
    if (o->json) {
        printf("{\"offset\":%" PRIu64 ",\"tag\":%" PRIu64 ",\"flags\":%u,\"length\":%u,\"first\":\"", offset,
               r->tag, (unsigned)r->flags, (unsigned)r->len);
        for (unsigned i = 0; i < show; i++)
            printf("%02x", r->payload[i]);
        printf("\"}\n");
        return;
    }
    printf("%10" PRIu64 "  tag 0x%" PRIx64 "  flags 0x%x  length %u ", offset, r->tag, (unsigned)r->flags,
           (unsigned)r->len);
    for (unsigned i = 0; i < show; i++)
        printf(" %02x", r->payload[i]);
    printf("%s\n", show < r->len ? " ..." : "");
}

/* What is wrong with the record at offset, or NULL: it is sound. */
static const char *record_damage(const uint8_t *p, size_t avail, struct rc_record *r, size_t *size,
                                 char *why, size_t whylen)
{
    *size = rc_record_parse(p, avail, r);
    if (*size == 0) {
        if (avail < RC_RECORD_HEADER_BYTES)
            snprintf(why, whylen, "the file ends inside a record header (%zu of %u bytes)", avail,
                     RC_RECORD_HEADER_BYTES);
        else
            snprintf(why, whylen, "the record's length %" PRIu64 " runs past the end of the file (%zu bytes left)",
                     rc_record_le(p + 12, 4), avail - RC_RECORD_HEADER_BYTES);
        return why;
    }
    if (r->flags & ~RC_CHUNK_FLAGS_ALL) {
        snprintf(why, whylen, "unknown flag bits 0x%x (tag 0x%" PRIx64 ", length %u)",
                 (unsigned)(r->flags & ~RC_CHUNK_FLAGS_ALL), r->tag, (unsigned)r->len);
        return why;
    }
    for (size_t i = RC_RECORD_HEADER_BYTES + r->len; i < *size; i++)
        if (p[i] != 0) {
            snprintf(why, whylen, "nonzero padding byte at +%zu (tag 0x%" PRIx64 ", length %u)", i, r->tag,
                     (unsigned)r->len);
            return why;
        }
    return NULL;
}

static int dump(const struct options *o, const uint8_t *data, size_t size, struct tag_table *stats)
{
    size_t offset = 0;
    uint64_t records = 0, shown = 0;
    while (offset < size) {
        struct rc_record r;
        size_t rsize;
        char why[256];
        if (record_damage(data + offset, size - offset, &r, &rsize, why, sizeof why)) {
            fflush(stdout);
            fprintf(stderr, "ringcast-dump: %s: damaged at byte offset %zu (record %" PRIu64 "): %s\n", o->file,
                    offset, records, why);
            return EXIT_DAMAGED;
        }
        records++;
        if (wanted(o, r.tag)) {
            shown++;
            if (o->stats) {
                struct tag_stat *s = tag_get(stats, r.tag);
                if (!s) {
                    fprintf(stderr, "ringcast-dump: out of memory\n");
                    return EXIT_USAGE;
                }
                s->records++;
                s->bytes += r.len;
                s->flagged += r.flags != 0;
            } else {
                print_record(o, offset, &r);
            }
        }
        offset += rsize;
    }
    if (o->stats)
        print_stats(o, stats);
    if (!o->json)
        printf("%" PRIu64 " records (%" PRIu64 " shown), %zu bytes: sound\n", records, shown, size);
    return 0;
}

int main(int argc, char **argv)
{
    static struct options o;
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : EXIT_USAGE;
    int fd = open(o.file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "ringcast-dump: %s: %s\n", o.file, strerror(errno));
        return EXIT_USAGE;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ringcast-dump: %s: not a regular file\n", o.file);
        close(fd);
        return EXIT_USAGE;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *data = NULL;
    if (size > 0) {
        data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            fprintf(stderr, "ringcast-dump: %s: %s\n", o.file, strerror(errno));
            close(fd);
            return EXIT_USAGE;
        }
    }
    close(fd);
    struct tag_table stats = {0};
    int status = dump(&o, data, size, &stats);
    free(stats.slot);
    if (data)
        munmap((void *)data, size);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "ringcast-dump: writing the output: %s\n", strerror(errno));
        return EXIT_USAGE;
    }
    return status;
}
