/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-sub — subscribe to a ringcast publisher, count (and optionally
 * verify and record) what arrives. See tools/README.md.
 *
 *   ringcast-sub --connect HOST:PORT [--provider P] [--endpoint msg|rdm]
 *                (or --discover URL: every publisher serving the tags)
 *                --tags LIST [--verify] [--duration S] [--count N]
 *                [--out FILE] [--json] [--latency] [--delivery send|rma]
 *                [--poll-spin US] [--poll-spin-fixed] [--poll-coalesce US]
 *   ringcast-sub --connect HOST:PORT --stream CARD [...]: every chunk of the
 *                card, as blocks written into our ring and decoded here
 *
 * Exit status: 0 fine, 1 verification failed or a runtime error, 2 usage. */
#include <endian.h>
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ringcast/sub.h"
#include "ringcast/discover.h"
#include "ringcast/pattern.h"
#include "tools/cli.h"
#include "tools/log.h"

/* ringcast-sub is built as an outside program would be (public headers and
 * the client library's exported symbols only), so it keeps its own clock. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

#define EXIT_USAGE 2
#define MAX_TAG_ITEMS 4096u
#define RX_BUFFERS 64u   /* receive buffers of the subscriber (the library's default) */

/* Receive buffers with --hold N on send delivery: a view of a chunk larger
 * than one buffer holds one buffer per fragment, and the library gathers
 * such a chunk only while at most half the buffers are busy; with 2N + 2
 * the N kept views (and the one being handed on) never hold them all. */
static uint32_t rx_buffers_for(uint32_t hold)
{
    return 2 * hold + 2 > RX_BUFFERS ? 2 * hold + 2 : RX_BUFFERS;
}

/* A chunk's payload as the pieces of its view. */
struct payload {
    struct rc_view_piece piece[RC_VIEW_MAX_PIECES];
    unsigned n;
    size_t len;
};

/* Copy up to len bytes from the start of the payload; returns how many. */
static size_t payload_head(const struct payload *pl, uint8_t *dst, size_t len)
{
    size_t done = 0;
    for (unsigned i = 0; i < pl->n && done < len; i++) {
        size_t k = pl->piece[i].len < len - done ? pl->piece[i].len : len - done;
        memcpy(dst + done, pl->piece[i].data, k);
        done += k;
    }
    return done;
}

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ---- options ------------------------------------------------------------- */

struct options {
    const char *discover;     /* --discover URL instead of --connect */
    char discover_prefix[64];
    char host[128];
    uint16_t port;
    char provider[64];
    enum rc_sub_endpoint endpoint;
    bool all_tags;
    uint64_t first[MAX_TAG_ITEMS], last[MAX_TAG_ITEMS];
    size_t ntags;
    bool verify, json;
    bool latency;         /* chunks carry a sim fill=timestamp stamp */
    bool exit_on_close;   /* the publisher closing the connection ends the run (no reconnect) */
    double duration;      /* seconds, 0 = until stopped */
    double peer_timeout;  /* --peer-timeout S: publisher silent this long = gone; 0 = the library's 5 s */
    uint64_t count;       /* chunks, 0 = no limit */
    const char *out;
    uint32_t rx_buffer_size, max_chunk_size;
    uint32_t slow_us;     /* sleep per chunk (a deliberately slow consumer), 0 = none */
    uint64_t stall_after; /* stop reading after this many chunks, keep heartbeating; 0 = never */
    enum rc_sub_delivery delivery;
    uint64_t rma_ring_size;   /* 0: the library's default */
    uint32_t hold;            /* --hold N: keep the last N views, release them late and out of order */
    uint32_t hold_ms;         /* --hold-ms MS: none of them goes before it was kept MS ms */
    bool wrong_rma_key;       /* --test-wrong-rma-key: announce a key that is not the ring's */
    bool stream;              /* --stream CARD: the card's block stream */
    uint32_t stream_card;
    uint64_t stream_ring_size;    /* 0: the library's default */
    bool poll_spin_set;       /* --poll-spin US given */
    uint64_t poll_spin_us;
    bool poll_spin_fixed;     /* --poll-spin-fixed */
    bool poll_coalesce_set;   /* --poll-coalesce US given */
    uint64_t poll_coalesce_us;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ringcast-sub --connect HOST:PORT --tags LIST [options]\n"
            "  --connect HOST:PORT     the publisher (IPv6: [ADDR]:PORT)\n"
            "  --discover URL          instead of --connect: every publisher serving the tags,\n"
            "                          found at dir:PATH or etcd://HOST:PORT[,...] (the daemons'\n"
            "                          [discovery] url); provider and endpoint come from there\n"
            "  --discover-prefix P     etcd key prefix (default /ringcast/)\n"
            "  --provider P            libfabric provider (default tcp; e.g. \"tcp;ofi_rxm\")\n"
            "  --endpoint msg|rdm      endpoint type (default msg)\n"
            "  --tags LIST             'all' or tags and ranges: 0-63,1000,0x100-0x1ff\n"
            "  --verify                check simulator pattern data and per-tag sequences\n"
            "  --duration S            stop after S seconds\n"
            "  --count N               stop after N chunks\n"
            "  --peer-timeout S        a publisher silent for S seconds is taken as gone:\n"
            "                          reconnect (default 5; more than the 1 s heartbeat,\n"
            "                          at most 3600)\n"
            "  --out FILE              write every chunk as a record (tools/README.md)\n"
            "  --json                  print the summary as one JSON object\n"
            "  --exit-on-close         exit when the publisher closes the connection or says\n"
            "                          BYE (the end of its run) instead of reconnecting\n"
            "  --latency               chunks carry the simulator's timestamp (sim fill =\n"
            "                          timestamp): report card-write-to-callback latency\n"
            "                          percentiles (p50, p99, p99.9, max)\n"
            "  --rx-buffer-size B      receive buffer size in bytes (default 65536; the\n"
            "                          publisher refuses less than 4096)\n"
            "  --max-chunk-size B      largest reassembled chunk (default 16777216)\n"
            "  --slow-us N             sleep N microseconds per chunk: a slow consumer, for tests\n"
            "  --stall-after N         after N chunks stop reading (receives are not posted\n"
            "                          again) but keep polling and heartbeating: a live\n"
            "                          subscriber that stopped reading, for tests\n"
            "  --delivery send|rma     send (default): the publisher sends messages; rma: it\n"
            "                          writes chunks into a ring registered here for remote\n"
            "                          write (falls back to send, said, where the provider\n"
            "                          has no RMA)\n"
            "  --rma-ring-size B       the RMA ring (default 2097152; multiple of 8, >= 65536)\n"
            "  --hold N                keep the last N chunks' views (1..63 with send delivery,\n"
            "                          1..4096 with rma; also with --discover): when a new one\n"
            "                          comes, one of the 8 oldest is released at random (the\n"
            "                          oldest once 2N newer came), so receive buffers or ring\n"
            "                          space are given back late and out of order; --verify\n"
            "                          checks each again at release. With send, max(64, 2N+2)\n"
            "                          receive buffers are posted (a chunk larger than one is\n"
            "                          one view holding a buffer per fragment). With rma, N\n"
            "                          chunks must take well under half the ring, or the flow\n"
            "                          stops; with --stream (1..512) each kept chunk holds its\n"
            "                          blocks: N chunks must span well under half the stream\n"
            "                          ring's blocks, or the flow stops the same way\n"
            "  --hold-ms MS            with --hold: a kept view goes only once it was kept MS ms\n"
            "                          (1..600000): with N kept, a new one is kept as well when\n"
            "                          the one to go is younger; views beyond N that are old\n"
            "                          enough go at the next chunk or poll (at most 100 ms\n"
            "                          apart). So a subscriber holds its buffers or ring for\n"
            "                          seconds and its flow stops meanwhile (slow-policy tests)\n"
            "  --test-wrong-rma-key    with --delivery rma: announce a wrong key for the ring\n"
            "                          (tests of the publisher's handling of it)\n"
            "  --stream CARD           instead of --tags: the block stream of card CARD (its\n"
            "                          [card.N]): every block the card writes, written as it\n"
            "                          is into a ring here and decoded here (every e-link's\n"
            "                          chunks; README.md, \"Block stream\"); needs FI_RMA\n"
            "                          (tcp, tcp;ofi_rxm; shm only with blocks <= 4096 B)\n"
            "  --stream-ring-size B    the stream's ring (default 67108864; a multiple of the\n"
            "                          card's block size, at least 8 blocks)\n"
            "  --poll-spin US          spin at most US microseconds (0..1000000, default 50)\n"
            "                          when waiting for data, before sleeping on the fabric's\n"
            "                          fd; 0: never spin. The spin adapts: it halves after a\n"
            "                          spin that found nothing or lost the CPU to another\n"
            "                          process (down to none) and doubles after one that\n"
            "                          found data (net/README.md, \"Adaptive spinning\")\n"
            "  --poll-spin-fixed       spin the whole --poll-spin at every wait (no adapting,\n"
            "                          no coalescing: a subscriber alone on its core)\n"
            "  --poll-coalesce US      when it does not spin, is often preempted (the CPU is\n"
            "                          contended) and data comes within US: sleep US on a\n"
            "                          timer before polling, one wake-up for all that came\n"
            "                          meanwhile (0..1000000, default 0: never). Delays data\n"
            "                          by up to US: for throughput, not latency\n"
            "  -h, --help              print this help\n"
            "  --version               print the version\n"
            "Sizes (B) are bytes, or with k, M or G: KiB, MiB, GiB (--stream-ring-size 64M).\n");
}


static int parse_connect(const char *arg, struct options *o)
{
    const char *colon;
    const char *host = arg;
    size_t host_len;
    if (arg[0] == '[') {   /* [v6addr]:port */
        const char *close = strchr(arg, ']');
        if (!close || close[1] != ':')
            return rci_cli_usage_error("ringcast-sub", "--connect '%s': expected [ADDRESS]:PORT", arg);
        host = arg + 1;
        host_len = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(arg, ':');
        if (!colon)
            return rci_cli_usage_error("ringcast-sub", "--connect '%s': expected HOST:PORT", arg);
        host_len = (size_t)(colon - arg);
    }
    uint64_t port;
    if (host_len == 0 || host_len >= sizeof o->host)
        return rci_cli_usage_error("ringcast-sub", "--connect '%s': host missing or too long", arg);
    if (rci_cli_parse_u64(colon + 1, &port) || port == 0 || port > 65535)
        return rci_cli_usage_error("ringcast-sub", "--connect '%s': port must be 1..65535", arg);
    memcpy(o->host, host, host_len);
    o->host[host_len] = '\0';
    o->port = (uint16_t)port;
    return 0;
}

/* One item of a tag list: N or A-B. */
static int parse_tag_item(const char *item, uint64_t *first, uint64_t *last)
{
    char buf[64];
    if (strlen(item) >= sizeof buf)
        return -1;
    strcpy(buf, item);
    char *dash = strchr(buf, '-');
    if (dash)
        *dash = '\0';
    if (rci_cli_parse_u64(buf, first))
        return -1;
    if (!dash) {
        *last = *first;
        return 0;
    }
    return rci_cli_parse_u64(dash + 1, last) || *first > *last ? -1 : 0;
}

static int parse_tags(const char *arg, struct options *o)
{
    if (strcmp(arg, "all") == 0) {
        o->all_tags = true;
        return 0;
    }
    char *copy = strdup(arg);
    if (!copy)
        return rci_cli_usage_error("ringcast-sub", "%s", "out of memory");
    int rc = 0;
    char *save = NULL;
    size_t len = strlen(arg);
    if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
        rc = rci_cli_usage_error("ringcast-sub", "--tags '%s': empty item", arg);
    for (char *item = strtok_r(copy, ",", &save); !rc && item; item = strtok_r(NULL, ",", &save)) {
        if (o->ntags == MAX_TAG_ITEMS)
            rc = rci_cli_usage_error("ringcast-sub", "--tags: more than %s items", "4096");
        else if (parse_tag_item(item, &o->first[o->ntags], &o->last[o->ntags]))
            rc = rci_cli_usage_error("ringcast-sub", "--tags: '%s' is not a tag (N) or a range (A-B with A <= B)", item);
        else
            o->ntags++;
    }
    free(copy);
    return rc;
}

static int parse_size(const char *name, const char *arg, uint32_t min, uint32_t *out)
{
    uint64_t v;
    if (rci_cli_parse_size(arg, &v) || v < min || v > (1u << 30)) {
        fprintf(stderr, "ringcast-sub: %s '%s': expected bytes (k, M suffixes: KiB, MiB), %u..1073741824\n", name,
                arg, min);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int parse_option(int c, const char *arg, struct options *o)
{
    uint64_t v;
    char *end;
    switch (c) {
    case 'c': return parse_connect(arg, o);
    case 'D': o->discover = arg; return 0;
    case 'P':
        if (arg[0] != '/' || strlen(arg) >= sizeof o->discover_prefix)
            return rci_cli_usage_error("ringcast-sub", "--discover-prefix '%s': must start with '/', at most 63 characters", arg);
        strcpy(o->discover_prefix, arg);
        return 0;
    case 'p':
        if (strlen(arg) == 0 || strlen(arg) >= sizeof o->provider)
            return rci_cli_usage_error("ringcast-sub", "--provider '%s': empty or too long", arg);
        strcpy(o->provider, arg);
        return 0;
    case 'e':
        if (strcmp(arg, "msg") == 0)
            o->endpoint = RC_SUB_EP_MSG;
        else if (strcmp(arg, "rdm") == 0)
            o->endpoint = RC_SUB_EP_RDM;
        else
            return rci_cli_usage_error("ringcast-sub", "--endpoint '%s': expected msg or rdm", arg);
        return 0;
    case 't': return parse_tags(arg, o);
    case 'v': o->verify = true; return 0;
    case 'j': o->json = true; return 0;
    case 'L': o->latency = true; return 0;
    case 'X': o->exit_on_close = true; return 0;
    case 'o': o->out = arg; return 0;
    case 'd':
        errno = 0;
        o->duration = strtod(arg, &end);
        if (errno || *end || !(o->duration > 0) || !isfinite(o->duration))
            return rci_cli_usage_error("ringcast-sub", "--duration '%s': expected seconds > 0", arg);
        return 0;
    case 'T':
        errno = 0;
        o->peer_timeout = strtod(arg, &end);
        if (errno || *end || !(o->peer_timeout > 1.0) || !(o->peer_timeout <= 3600.0))
            return rci_cli_usage_error("ringcast-sub", "--peer-timeout '%s': expected seconds > 1 (the heartbeat) and <= 3600", arg);
        return 0;
    case 'n':
        if (rci_cli_parse_u64(arg, &v) || v == 0)
            return rci_cli_usage_error("ringcast-sub", "--count '%s': expected a number of chunks > 0", arg);
        o->count = v;
        return 0;
    case 'r': return parse_size("--rx-buffer-size", arg, RC_SUB_MIN_RX_BUFFER, &o->rx_buffer_size);
    case 'm': return parse_size("--max-chunk-size", arg, 1, &o->max_chunk_size);
    case 's':
        if (rci_cli_parse_u64(arg, &v) || v == 0 || v > 1000000)
            return rci_cli_usage_error("ringcast-sub", "--slow-us '%s': expected microseconds 1..1000000", arg);
        o->slow_us = (uint32_t)v;
        return 0;
    case 'Y':
        if (strcmp(arg, "send") == 0)
            o->delivery = RC_SUB_DELIVERY_SEND;
        else if (strcmp(arg, "rma") == 0)
            o->delivery = RC_SUB_DELIVERY_RMA;
        else
            return rci_cli_usage_error("ringcast-sub", "--delivery '%s': expected send or rma", arg);
        return 0;
    case 'Z':
        if (rci_cli_parse_size(arg, &v) || v % 8 || v < 65536 || v > (32ull << 30))
            return rci_cli_usage_error("ringcast-sub", "--rma-ring-size '%s': expected bytes, a multiple of 8, 65536..32 GiB", arg);
        o->rma_ring_size = v;
        return 0;
    case 'K': o->wrong_rma_key = true; return 0;
    case 'G':
        if (rci_cli_parse_u64(arg, &v) || v > 255)
            return rci_cli_usage_error("ringcast-sub", "--stream '%s': expected a card number 0..255", arg);
        o->stream = true;
        o->stream_card = (uint32_t)v;
        o->delivery = RC_SUB_DELIVERY_STREAM;
        return 0;
    case 'R':
        if (rci_cli_parse_size(arg, &v) || v % 1024 || v < 65536 || v > (32ull << 30))
            return rci_cli_usage_error("ringcast-sub", "--stream-ring-size '%s': expected bytes, a multiple of 1024, 65536..32 GiB", arg);
        o->stream_ring_size = v;
        return 0;
    case 'W':
        if (rci_cli_parse_u64(arg, &v) || v > 1000000)
            return rci_cli_usage_error("ringcast-sub", "--poll-spin '%s': expected microseconds 0..1000000", arg);
        o->poll_spin_us = v;
        o->poll_spin_set = true;
        return 0;
    case 'F': o->poll_spin_fixed = true; return 0;
    case 'Q':
        if (rci_cli_parse_u64(arg, &v) || v > 1000000)
            return rci_cli_usage_error("ringcast-sub", "--poll-coalesce '%s': expected microseconds 0..1000000", arg);
        o->poll_coalesce_us = v;
        o->poll_coalesce_set = true;
        return 0;
    case 'H':
        if (rci_cli_parse_u64(arg, &v) || v == 0 || v > 4096)
            return rci_cli_usage_error("ringcast-sub", "--hold '%s': expected a number of chunks 1..4096", arg);
        o->hold = (uint32_t)v;
        return 0;
    case 'M':
        if (rci_cli_parse_u64(arg, &v) || v == 0 || v > 600000)
            return rci_cli_usage_error("ringcast-sub", "--hold-ms '%s': expected milliseconds 1..600000", arg);
        o->hold_ms = (uint32_t)v;
        return 0;
    case 'S':
        if (rci_cli_parse_u64(arg, &v) || v == 0)
            return rci_cli_usage_error("ringcast-sub", "--stall-after '%s': expected a number of chunks > 0", arg);
        o->stall_after = v;
        return 0;
    default: return -1;
    }
}

/* 0: run; 1: --help or --version printed; -1: usage error (already reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"connect", required_argument, NULL, 'c'},  {"provider", required_argument, NULL, 'p'},
        {"endpoint", required_argument, NULL, 'e'}, {"tags", required_argument, NULL, 't'},
        {"verify", no_argument, NULL, 'v'},         {"duration", required_argument, NULL, 'd'},
        {"count", required_argument, NULL, 'n'},    {"out", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'j'},           {"rx-buffer-size", required_argument, NULL, 'r'},
        {"max-chunk-size", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        {"slow-us", required_argument, NULL, 's'},  {"latency", no_argument, NULL, 'L'},
        {"stall-after", required_argument, NULL, 'S'}, {"version", no_argument, NULL, 'V'},
        {"exit-on-close", no_argument, NULL, 'X'},
        {"discover", required_argument, NULL, 'D'}, {"discover-prefix", required_argument, NULL, 'P'},
        {"delivery", required_argument, NULL, 'Y'}, {"rma-ring-size", required_argument, NULL, 'Z'},
        {"hold", required_argument, NULL, 'H'},     {"test-wrong-rma-key", no_argument, NULL, 'K'},
        {"hold-ms", required_argument, NULL, 'M'},
        {"stream", required_argument, NULL, 'G'},   {"stream-ring-size", required_argument, NULL, 'R'},
        {"poll-spin", required_argument, NULL, 'W'}, {"poll-spin-fixed", no_argument, NULL, 'F'},
        {"poll-coalesce", required_argument, NULL, 'Q'}, {"peer-timeout", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    strcpy(o->provider, "tcp");
    strcpy(o->discover_prefix, "/ringcast/");
    o->endpoint = RC_SUB_EP_MSG;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        if (c == 'V') {
            printf("ringcast-sub %s\n", RCI_VERSION);
            return 1;
        }
        if (c == '?' || c == ':')
            return rci_cli_usage_error("ringcast-sub", "unknown option or missing argument: '%s'", argv[optind - 1]);
        if (parse_option(c, optarg, o))
            return -1;
    }
    if (optind < argc)
        return rci_cli_usage_error("ringcast-sub", "unexpected argument '%s'", argv[optind]);
    if (!o->host[0] && !o->discover)
        return rci_cli_usage_error("ringcast-sub", "%s", "--connect HOST:PORT or --discover URL is required");
    if (o->host[0] && o->discover)
        return rci_cli_usage_error("ringcast-sub", "%s", "--connect and --discover exclude each other");
    if (o->stream && (o->all_tags || o->ntags))
        return rci_cli_usage_error("ringcast-sub", "%s", "--stream takes the whole card: no --tags");
    if (o->stream && o->discover)
        return rci_cli_usage_error("ringcast-sub", "%s", "--stream needs --connect (one publisher)");
    if (o->stream && o->hold > 512)
        return rci_cli_usage_error("ringcast-sub", "%s", "--hold with --stream: at most 512 (the decoder's records)");
    if (o->stream_ring_size && !o->stream)
        return rci_cli_usage_error("ringcast-sub", "%s", "--stream-ring-size needs --stream CARD");
    if (!o->stream && !o->all_tags && o->ntags == 0)
        return rci_cli_usage_error("ringcast-sub", "%s", "--tags LIST is required ('all' for every tag)");
    if (o->latency && o->verify)
        return rci_cli_usage_error("ringcast-sub", "%s", "--latency and --verify exclude each other (a stamp is not the pattern)");
    if (o->hold_ms && !o->hold)
        return rci_cli_usage_error("ringcast-sub", "%s", "--hold-ms needs --hold N");
    /* Send delivery: every held chunk holds a receive buffer or more; with
     * all held nothing more could arrive to release one (rx_buffers_for). */
    if (o->hold >= RX_BUFFERS && o->delivery == RC_SUB_DELIVERY_SEND)
        return rci_cli_usage_error("ringcast-sub", "%s", "--hold with send delivery: at most 63");
    return 0;
}

/* ---- per-tag state: open addressing, grows rarely (new tags only) -------- */

struct tag_state {
    uint64_t tag;
    uint64_t chunks;
    uint64_t next_seq;
    bool used, seen_seq;
};

struct tag_table {
    struct tag_state *slot;
    size_t cap, used;
};

static size_t tag_hash(uint64_t tag, size_t cap)
{
    return (size_t)((tag * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct tag_state *tag_find_slot(struct tag_state *slots, size_t cap, uint64_t tag)
{
    size_t i = tag_hash(tag, cap);
    while (slots[i].used && slots[i].tag != tag)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int tag_grow(struct tag_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct tag_state *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].used)
            *tag_find_slot(slots, cap, t->slot[i].tag) = t->slot[i];
    free(t->slot);
    t->slot = slots;
    t->cap = cap;
    return 0;
}

static struct tag_state *tag_get(struct tag_table *t, uint64_t tag)
{
    if ((t->used + 1) * 2 > t->cap && tag_grow(t))
        return NULL;
    struct tag_state *st = tag_find_slot(t->slot, t->cap, tag);
    if (!st->used) {
        *st = (struct tag_state){.tag = tag, .used = true};
        t->used++;
    }
    return st;
}

/* ---- latency histogram ---------------------------------------------------- */

/* Log-linear buckets (as in HdrHistogram): values below 2^LAT_SUB_BITS ns
 * exactly, above that 2^LAT_SUB_BITS buckets per power of two, so a bucket
 * is at most 1/32 (3 %) of its value wide. Fixed size: recording is an
 * increment, no allocation per chunk. */
#define LAT_SUB_BITS 5u
#define LAT_SUB_COUNT (1u << LAT_SUB_BITS)
#define LAT_BUCKETS ((65u - LAT_SUB_BITS) << LAT_SUB_BITS)

struct latency_hist {
    uint64_t count[LAT_BUCKETS];
    uint64_t samples, max_ns;
    uint64_t skipped;     /* shorter than the stamp, or flagged by the card */
    uint64_t future;      /* stamp later than the receive time: clock or data broken */
};

static unsigned lat_bucket(uint64_t ns)
{
    if (ns < LAT_SUB_COUNT)
        return (unsigned)ns;
    unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
    unsigned shift = msb - LAT_SUB_BITS;
    return ((msb - LAT_SUB_BITS + 1u) << LAT_SUB_BITS) + (unsigned)((ns >> shift) - LAT_SUB_COUNT);
}

/* Largest value that falls into bucket i. */
static uint64_t lat_bucket_top(unsigned i)
{
    if (i < LAT_SUB_COUNT)
        return i;
    unsigned group = i >> LAT_SUB_BITS;
    unsigned shift = group - 1u;
    uint64_t lo = (uint64_t)(LAT_SUB_COUNT + (i & (LAT_SUB_COUNT - 1u))) << shift;
    return lo + ((1ull << shift) - 1u);
}

static void lat_record(struct latency_hist *h, uint32_t flags, const struct payload *pl)
{
    if (flags || pl->len < RC_PATTERN_STAMP_BYTES) {
        h->skipped++;
        return;
    }
    uint64_t le;
    payload_head(pl, (uint8_t *)&le, sizeof le);
    uint64_t stamp = le64toh(le), now = now_ns();
    if (stamp > now) {
        h->future++;
        return;
    }
    uint64_t ns = now - stamp;
    h->count[lat_bucket(ns)]++;
    h->samples++;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

/* The value below which a fraction q of the samples lie (upper edge of its
 * bucket, never above the largest sample), in microseconds. */
static double lat_quantile_us(const struct latency_hist *h, double q)
{
    if (h->samples == 0)
        return 0.0;
    uint64_t rank = (uint64_t)ceil(q * (double)h->samples), seen = 0;
    if (rank == 0)
        rank = 1;
    for (unsigned i = 0; i < LAT_BUCKETS; i++) {
        seen += h->count[i];
        if (seen >= rank) {
            uint64_t top = lat_bucket_top(i);
            return (double)(top < h->max_ns ? top : h->max_ns) / 1e3;
        }
    }
    return (double)h->max_ns / 1e3;
}

/* ---- the --out file ---------------------------------------------------------
 * Records are gathered in a buffer and written with write(2), whose every
 * result is checked (stdio would report a failure records later, and leave a
 * partial record). After the first failure (disk full, RLIMIT_FSIZE, I/O error)
 * nothing more is written: every record from then on is counted lost, and at
 * the end the file is cut at the last complete record. */

#define OUT_BUF_SIZE (1u << 20)
#define OUT_HDR_SIZE 16u

struct record_file {
    const char *path;
    int fd;                  /* -1: no --out */
    bool regular;            /* can be truncated */
    uint8_t *buf;
    size_t buf_len;          /* bytes of whole records in buf */
    uint64_t buf_records;
    uint64_t good_end;       /* file offset after the last complete record written */
    uint64_t written;        /* records completely in the file */
    uint64_t lost;           /* records not (completely) in the file */
    int error;               /* errno of the first failure, 0: none */
    const char *failed_op;   /* "write", "fsync", "truncate", "close" */
};

static size_t record_size(size_t len)
{
    return OUT_HDR_SIZE + len + (8 - len % 8) % 8;
}

/* Writes all of data, retrying short writes; returns the bytes written (less
 * than len only with errno set). */
static size_t write_all(int fd, const uint8_t *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            break;
        }
        done += (size_t)n;
    }
    return done;
}

static void record_file_fail(struct record_file *rf, const char *op, int err)
{
    if (!rf->error) {
        rf->error = err;
        rf->failed_op = op;
    }
}

/* Writes the buffered records. On a failure the records that reached the
 * file whole are kept (counted written), the rest counted lost. */
static void record_file_flush(struct record_file *rf)
{
    if (rf->buf_len == 0)
        return;
    size_t done = write_all(rf->fd, rf->buf, rf->buf_len);
    if (done < rf->buf_len) {
        record_file_fail(rf, "write", errno);
        size_t off = 0;
        uint64_t whole = 0;
        while (off + OUT_HDR_SIZE <= rf->buf_len) {
            uint32_t len = (uint32_t)rf->buf[off + 12] | (uint32_t)rf->buf[off + 13] << 8 |
                           (uint32_t)rf->buf[off + 14] << 16 | (uint32_t)rf->buf[off + 15] << 24;
            if (off + record_size(len) > done)
                break;
            off += record_size(len);
            whole++;
        }
        rf->good_end += off;
        rf->written += whole;
        rf->lost += rf->buf_records - whole;
    } else {
        rf->good_end += done;
        rf->written += rf->buf_records;
    }
    rf->buf_len = 0;
    rf->buf_records = 0;
}

static int record_file_open(struct record_file *rf, const char *path)
{
    *rf = (struct record_file){.path = path, .fd = -1};
    if (!path)
        return 0;
    rf->buf = malloc(OUT_BUF_SIZE);
    rf->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!rf->buf || rf->fd < 0) {
        rci_error("--out %s: %s", path, strerror(rf->buf ? errno : ENOMEM));
        return -1;
    }
    struct stat st;
    rf->regular = fstat(rf->fd, &st) == 0 && S_ISREG(st.st_mode);
    /* past RLIMIT_FSIZE write() then fails with EFBIG instead of the signal killing us */
    signal(SIGXFSZ, SIG_IGN);
    return 0;
}

/* Writes a record straight from the view's pieces (no copy of the chunk
 * before it goes into the file buffer, or to write(2) when larger). */
static void record_file_add(struct record_file *rf, uint64_t tag, uint32_t flags, const struct payload *pl)
{
    size_t len = pl->len;
    if (rf->error) {
        rf->lost++;
        return;
    }
    size_t size = record_size(len);
    if (rf->buf_len + size > OUT_BUF_SIZE)
        record_file_flush(rf);
    uint8_t hdr[OUT_HDR_SIZE];
    for (int i = 0; i < 8; i++)
        hdr[i] = (uint8_t)(tag >> (8 * i));
    for (int i = 0; i < 4; i++) {
        hdr[8 + i] = (uint8_t)(flags >> (8 * i));
        hdr[12 + i] = (uint8_t)((uint32_t)len >> (8 * i));
    }
    if (rf->error) { /* the flush just failed */
        rf->lost++;
        return;
    }
    if (size > OUT_BUF_SIZE) { /* a record larger than the buffer goes on its own */
        static const uint8_t zeros[8];
        size_t pad = size - len - sizeof hdr;
        bool ok = write_all(rf->fd, hdr, sizeof hdr) == sizeof hdr;
        for (unsigned i = 0; ok && i < pl->n; i++)
            ok = write_all(rf->fd, pl->piece[i].data, pl->piece[i].len) == pl->piece[i].len;
        if (!ok || write_all(rf->fd, zeros, pad) < pad) {
            record_file_fail(rf, "write", errno); /* a part of it may be in: cut at the end */
            rf->lost++;
        } else {
            rf->good_end += size;
            rf->written++;
        }
        return;
    }
    uint8_t *p = rf->buf + rf->buf_len;
    memcpy(p, hdr, sizeof hdr);
    payload_head(pl, p + sizeof hdr, len);
    memset(p + sizeof hdr + len, 0, size - len - sizeof hdr);
    rf->buf_len += size;
    rf->buf_records++;
}

/* Flushes, syncs and closes; on a failure cuts the file at the last complete
 * record. Returns 0 if every record is in the file. */
static int record_file_close(struct record_file *rf)
{
    if (rf->fd < 0) {
        free(rf->buf);
        return 0;
    }
    record_file_flush(rf);
    if (!rf->error && rf->regular && fsync(rf->fd) != 0)
        record_file_fail(rf, "fsync", errno); /* written, but not known to be on disk */
    bool truncated = false;
    if (rf->error && rf->regular) {
        if (ftruncate(rf->fd, (off_t)rf->good_end) == 0)
            truncated = true;
        else
            rci_error("--out %s: cannot cut the file at its last complete record (%" PRIu64
                     " bytes): %s", rf->path, rf->good_end, strerror(errno));
    }
    if (close(rf->fd) != 0)
        record_file_fail(rf, "close", errno);
    rf->fd = -1;
    free(rf->buf);
    rf->buf = NULL;
    if (!rf->error)
        return 0;
    rci_error("--out %s: %s failed: %s; %" PRIu64 " records written, %" PRIu64 " lost%s", rf->path,
             rf->failed_op, strerror(rf->error), rf->written, rf->lost,
             truncated ? "; the file ends at the last complete record" : "");
    return -1;
}

/* ---- receiving ----------------------------------------------------------- */

struct results {
    uint64_t chunks, bytes;
    uint64_t gaps, missing, corrupt, duplicates, flagged;
    uint64_t held, held_corrupt;   /* --hold: views kept; of them, changed while kept */
    uint64_t held_max;             /* --hold: the most kept at once (above N only with --hold-ms) */
    uint64_t hold_errors;          /* --hold-ms: no memory to keep one more (it went at once) */
    uint64_t table_errors;
    uint64_t first_corrupt_tag;
    long first_corrupt_offset;
};

struct app {
    const struct options *o;
    struct tag_table tags;
    struct results r;
    struct latency_hist lat;
    struct record_file out;
    struct rc_sub *sub;
    struct rc_discover *disc;  /* --discover */
    struct rc_view **held;     /* --hold: held_cap slots (o->hold, more with --hold-ms), a FIFO from held_head */
    uint64_t *held_seq;        /* each one's number among the views kept (its age) */
    uint64_t *held_ns;         /* when each was kept (--hold-ms) */
    uint32_t nheld, held_head, held_cap;
    uint64_t rng;              /* --hold: which one goes (xorshift) */
    bool have_publisher_id;
    uint64_t publisher_id;
};

/* Sequence continuity of one tag. The first chunk of a tag only sets the
 * expectation: a subscriber may join a running stream. */
static void check_sequence(struct results *r, struct tag_state *ts, uint64_t seq)
{
    if (ts->seen_seq && seq < ts->next_seq) {
        r->duplicates++;   /* repeated or reordered: the expectation stays */
        return;
    }
    if (ts->seen_seq && seq > ts->next_seq) {
        r->gaps++;
        r->missing += seq - ts->next_seq;
    }
    ts->seen_seq = true;
    ts->next_seq = seq + 1;
}

/* A chunk of fewer than 8 bytes carries only the low len bytes of its
 * sequence number: take the first number at or after the expected one that
 * ends in those bytes (exact unless 2^(8*len) chunks went missing). Returns
 * false when nothing is expected yet (the high bytes are unknown). */
static bool complete_short_seq(const struct tag_state *ts, uint64_t partial, size_t len, uint64_t *seq)
{
    if (!ts->seen_seq)
        return false;
    uint64_t mask = len == 0 ? 0 : (UINT64_MAX >> (64 - 8 * len));
    uint64_t s = (ts->next_seq & ~mask) | (partial & mask);
    if (s < ts->next_seq)
        s += mask + 1;
    *seq = s;
    return true;
}

static void follow_sequence(struct results *r, struct tag_state *ts, uint64_t seq, size_t len)
{
    if (len >= 8 || complete_short_seq(ts, seq, len, &seq))
        check_sequence(r, ts, seq);
}

/* The first wrong byte of the payload against the pattern of (tag, seq),
 * or -1: each piece checked in place. */
static long pattern_check(const struct payload *pl, uint64_t tag, uint64_t seq)
{
    size_t from = 0;
    for (unsigned i = 0; i < pl->n; i++) {
        long bad = rc_pattern_check(pl->piece[i].data, from, pl->piece[i].len, tag, seq);
        if (bad >= 0)
            return bad;
        from += pl->piece[i].len;
    }
    return -1;
}

static uint64_t payload_seq(const struct payload *pl)
{
    uint8_t head[8];
    size_t n = payload_head(pl, head, sizeof head);
    return rc_pattern_seq(head, n);
}

static void count_corrupt(struct app *a, uint64_t tag, long bad)
{
    if (a->r.corrupt++ == 0) {
        a->r.first_corrupt_tag = tag;
        a->r.first_corrupt_offset = bad;
    }
}

/* Flagged chunks (truncated, error, CRC error, busy) are counted and their
 * sequence number is followed, but their bytes are not checked: the card
 * said they are damaged. */
static void verify_chunk(struct app *a, struct tag_state *ts, uint64_t tag, uint32_t flags,
                         const struct payload *pl)
{
    uint64_t seq = payload_seq(pl);
    if (flags) {   /* counted in on_data, with or without --verify */
        follow_sequence(&a->r, ts, seq, pl->len);
        return;
    }
    long bad = pattern_check(pl, tag, seq);
    if (bad >= 0) {
        count_corrupt(a, tag, bad);
        /* Count it as the expected chunk: its sequence bytes may be the
         * damaged ones, and a second error (a gap) would be invented. */
        if (ts->seen_seq)
            ts->next_seq++;
        return;
    }
    follow_sequence(&a->r, ts, seq, pl->len);
}

static void handle_chunk(struct app *a, uint64_t tag, uint32_t flags, const struct payload *pl)
{
    a->r.chunks++;
    a->r.bytes += pl->len;
    if (flags)
        a->r.flagged++;   /* the card marked it damaged (truncated, error, CRC, busy) */
    struct tag_state *ts = tag_get(&a->tags, tag);
    if (!ts) {
        a->r.table_errors++;
    } else {
        ts->chunks++;
        if (a->o->verify)
            verify_chunk(a, ts, tag, flags, pl);
    }
    if (a->o->latency)
        lat_record(&a->lat, flags, pl);
    if (a->out.fd >= 0)
        record_file_add(&a->out, tag, flags, pl);
    if (a->o->count && a->r.chunks >= a->o->count)
        stop_requested = 1;
    if (a->o->slow_us)
        sleep_ns((uint64_t)a->o->slow_us * 1000u);
}

static void view_payload(struct rc_view *v, struct payload *pl)
{
    pl->n = rc_view_piece_count(v);
    if (pl->n > RC_VIEW_MAX_PIECES)
        pl->n = RC_VIEW_MAX_PIECES;   /* never: the library's bound */
    for (unsigned i = 0; i < pl->n; i++)
        pl->piece[i] = rc_view_piece(v, i);
    pl->len = rc_view_len(v);
}

/* --hold: a held view is released; with --verify its bytes must still be
 * what they were (the library must not have reused the memory behind it). */
static void release_held(struct app *a, struct rc_view *v)
{
    if (a->o->verify && rc_view_flags(v) == 0) {
        struct payload pl;
        view_payload(v, &pl);
        long bad = pattern_check(&pl, rc_view_tag(v), payload_seq(&pl));
        if (bad >= 0) {
            a->r.held_corrupt++;
            count_corrupt(a, rc_view_tag(v), bad);
        }
    }
    rc_view_release(v);
}

static uint32_t next_random(struct app *a, uint32_t below)
{
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 7;
    a->rng ^= a->rng << 17;
    return (uint32_t)(a->rng % below);
}

/* Once o->hold are kept, one of the HOLD_WINDOW oldest goes, chosen at
 * random (out of order), or the oldest when it has waited for 2 x hold newer
 * chunks. The age is bounded because a ring gives space back only over its
 * released prefix: one view kept forever would stop the RMA flow. With
 * --hold-ms none goes before it was kept that long: the pick, else the
 * oldest, else none (UINT32_MAX). */
#define HOLD_WINDOW 8u
static bool kept_long_enough(const struct app *a, uint32_t slot, uint64_t now)
{
    return !a->o->hold_ms || now - a->held_ns[slot] >= (uint64_t)a->o->hold_ms * 1000000u;
}

static uint32_t pick_release(struct app *a, uint64_t now)
{
    uint32_t head = a->held_head, pick = head;
    if (a->r.held - a->held_seq[head] < 2ull * a->o->hold) {
        uint32_t window = a->nheld < HOLD_WINDOW ? a->nheld : HOLD_WINDOW;
        pick = (head + next_random(a, window)) % a->held_cap;
    }
    if (kept_long_enough(a, pick, now))
        return pick;
    return kept_long_enough(a, head, now) ? head : UINT32_MAX;
}

static void release_slot(struct app *a, uint32_t pick)
{
    uint32_t head = a->held_head;
    release_held(a, a->held[pick]);
    a->held[pick] = a->held[head];   /* the oldest takes the freed place */
    a->held_seq[pick] = a->held_seq[head];
    a->held_ns[pick] = a->held_ns[head];
    a->held_head = (head + 1) % a->held_cap;
    a->nheld--;
}

/* --hold-ms: room for one more view (the FIFO doubles, in order from 0). */
static bool grow_held(struct app *a)
{
    uint32_t cap = a->held_cap * 2;
    struct rc_view **v = calloc(cap, sizeof *v);
    uint64_t *seq = calloc(cap, sizeof *seq), *ns = calloc(cap, sizeof *ns);
    if (!v || !seq || !ns) {
        free(v);
        free(seq);
        free(ns);
        return false;
    }
    for (uint32_t i = 0; i < a->nheld; i++) {
        uint32_t from = (a->held_head + i) % a->held_cap;
        v[i] = a->held[from];
        seq[i] = a->held_seq[from];
        ns[i] = a->held_ns[from];
    }
    free(a->held);
    free(a->held_seq);
    free(a->held_ns);
    a->held = v;
    a->held_seq = seq;
    a->held_ns = ns;
    a->held_head = 0;
    a->held_cap = cap;
    return true;
}

/* Keep v (see pick_release for which one goes to make room). */
static void hold_view(struct app *a, struct rc_view *v)
{
    uint64_t now = a->o->hold_ms ? now_ns() : 0;
    if (a->nheld >= a->o->hold) {
        uint32_t pick = pick_release(a, now);
        if (pick != UINT32_MAX)
            release_slot(a, pick);
    }
    if (a->nheld == a->held_cap && !grow_held(a)) {
        a->r.hold_errors++;   /* not kept: it goes when on_view returns */
        return;
    }
    uint32_t tail = (a->held_head + a->nheld) % a->held_cap;
    a->held[tail] = rc_view_retain(v);
    a->held_seq[tail] = a->r.held++;
    a->held_ns[tail] = now;
    if (++a->nheld > a->r.held_max)
        a->r.held_max = a->nheld;
}

/* --hold-ms, between polls: the views beyond N kept long enough go. */
static void release_aged(struct app *a)
{
    uint64_t now = now_ns();
    while (a->nheld > a->o->hold) {
        uint32_t pick = pick_release(a, now);
        if (pick == UINT32_MAX)
            return;
        release_slot(a, pick);
    }
}

static void release_all_held(struct app *a)
{
    for (uint32_t i = 0; i < a->nheld; i++)
        release_held(a, a->held[(a->held_head + i) % a->held_cap]);
    a->nheld = 0;
}

static void on_view(void *ctx, struct rc_view *v)
{
    struct app *a = ctx;
    struct payload pl;
    view_payload(v, &pl);
    handle_chunk(a, rc_view_tag(v), rc_view_flags(v), &pl);
    if (a->o->hold)
        hold_view(a, v);
}

/* A restarted publisher starts every tag's sequence anew: what came before
 * says nothing about what comes now. (A reconnect to the same publisher
 * keeps the expectations: chunks lost during the outage are real gaps.) */
static void forget_sequences(struct tag_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        t->slot[i].seen_seq = false;
}

static void on_connect(void *ctx)
{
    struct app *a = ctx;
    struct rc_sub_stats st;
    rc_sub_get_stats(a->sub, &st);
    rci_info("connected to %s:%u (publisher id %016" PRIx64 ")", a->o->host, (unsigned)a->o->port,
            st.publisher_id);
    if (a->have_publisher_id && st.publisher_id != a->publisher_id) {
        rci_warn("publisher %s:%u restarted: per-tag sequences start anew", a->o->host, (unsigned)a->o->port);
        forget_sequences(&a->tags);
    }
    a->have_publisher_id = true;
    a->publisher_id = st.publisher_id;
    if (a->o->delivery == RC_SUB_DELIVERY_RMA && !st.rma_active)
        rci_warn("%s", rc_sub_last_error(a->sub));   /* why it is send delivery after all */
    else if (a->o->delivery == RC_SUB_DELIVERY_RMA)
        rci_info("RMA delivery: the publisher writes into our ring");
    else if (a->o->stream)
        rci_info("block stream of card %u: %u B blocks, tags from %" PRIu64 ", decoded here", a->o->stream_card,
                 st.stream_block_size, st.stream_tag_base);
}

static void on_disconnect(void *ctx, enum rc_sub_disconnect_reason reason)
{
    static const char *const names[] = {"connection shut down", "publisher silent (timeout)",
                                        "publisher said BYE", "too many malformed messages", "closing"};
    struct app *a = ctx;
    if (reason == RC_SUB_DISC_CLOSED)
        return;
    if (a->o->exit_on_close && (reason == RC_SUB_DISC_SHUTDOWN || reason == RC_SUB_DISC_BYE)) {
        /* The publisher ended the connection: with --exit-on-close that is the
         * normal end of the run, not a failure to recover from. */
        rci_info("%s:%u closed the connection (%s): exiting (--exit-on-close)", a->o->host,
                 (unsigned)a->o->port, names[reason]);
        stop_requested = 1;
        return;
    }
    rci_warn("disconnected from %s:%u: %s%s%s; reconnecting", a->o->host, (unsigned)a->o->port,
            (unsigned)reason < 5 ? names[reason] : "?", rc_sub_last_error(a->sub)[0] ? " - " : "",
            rc_sub_last_error(a->sub));
}

static void on_resubscribed(void *ctx)
{
    struct app *a = ctx;
    rci_info("resubscribed at %s:%u", a->o->host, (unsigned)a->o->port);
}

/* ---- --discover: every publisher of the tags (net/multi_sub.h) ------------- */

/* A publisher that is new to us, or restarted, starts its tags' sequences
 * anew; the other publishers' tags keep their expectations. */
static void forget_served(struct tag_table *t, const struct rc_discover_publisher *p)
{
    for (size_t i = 0; i < t->cap; i++)
        for (size_t r = 0; t->slot[i].used && r < p->nranges; r++)
            if (t->slot[i].tag >= p->first[r] && t->slot[i].tag <= p->last[r])
                t->slot[i].seen_seq = false;
}

static void on_discover_event(void *ctx, enum rc_discover_event ev, const struct rc_discover_publisher *p)
{
    struct app *a = ctx;
    const struct rc_discover_publisher *e = p;
    /* "publisher HOST:PORT: ..." : the address is the log line's subject,
     * so one publisher's lines do not suppress another's (tools/log.h). */
    switch (ev) {
    case RC_DISCOVER_FOUND:
        rci_info("publisher %s:%u: found (%s %s, daemon %s thread %u): %zu tag range%s from 0x%" PRIx64,
                 e->host, (unsigned)e->port, e->provider, e->endpoint, e->daemon_id, e->thread, p->nranges,
                 p->nranges == 1 ? "" : "s", p->nranges ? p->first[0] : 0);
        forget_served(&a->tags, p);
        break;
    case RC_DISCOVER_RESTARTED:
        rci_info("publisher %s:%u: restarted (daemon %s thread %u): its tags' sequences start anew",
                 e->host, (unsigned)e->port, e->daemon_id, e->thread);
        forget_served(&a->tags, p);
        break;
    case RC_DISCOVER_GONE:
        rci_warn("publisher %s:%u: gone (daemon %s): its discovery entry vanished", e->host,
                 (unsigned)e->port, e->daemon_id);
        break;
    case RC_DISCOVER_CONNECTED:
        rci_info("publisher %s:%u: connected", e->host, (unsigned)e->port);
        break;
    case RC_DISCOVER_DISCONNECTED:
        rci_warn("publisher %s:%u: disconnected: %s", e->host, (unsigned)e->port, p->last_error);
        break;
    }
}

static int setup_discover(struct app *a, const struct options *o, const struct rc_sub_params *sp)
{
    struct rc_discover_params dp;
    rc_discover_params_default(&dp);
    dp.sub = *sp;
    dp.ctx = a;
    dp.on_view = on_view;   /* as with --connect: --out, --verify and --hold read the views */
    dp.on_event = on_discover_event;
    snprintf(dp.url, sizeof dp.url, "%s", o->discover);
    snprintf(dp.prefix, sizeof dp.prefix, "%s", o->discover_prefix);
    const uint64_t all_first = 0, all_last = UINT64_MAX;
    char err[512];
    int rc = o->all_tags ? rc_discover_create(&dp, &all_first, &all_last, 1, &a->disc, err, sizeof err)
                         : rc_discover_create(&dp, o->first, o->last, o->ntags, &a->disc, err, sizeof err);
    if (rc) {
        rci_error("--discover %s: %s", o->discover, err);
        return -1;
    }
    return record_file_open(&a->out, o->out);
}

static void print_discover_json(const struct app *a)
{
    struct rc_discover_stats ms;
    rc_discover_get_stats(a->disc, &ms);
    printf(",\"discovery\":{\"publishers\":%" PRIu64 ",\"appeared\":%" PRIu64 ",\"gone\":%" PRIu64
           ",\"restarts\":%" PRIu64 ",\"lookups\":%" PRIu64 ",\"lookup_failures\":%" PRIu64
           ",\"malformed\":%" PRIu64 ",\"foreign\":%" PRIu64 ",\"stale\":%" PRIu64 ",\"over_limit\":%" PRIu64
           ",\"parked\":%" PRIu64 ",\"parks\":%" PRIu64 "}",
           ms.publishers, ms.found, ms.gone, ms.restarts, ms.lookups, ms.lookup_failures, ms.malformed,
           ms.foreign, ms.stale, ms.over_limit, ms.parked, ms.parks);
    printf(",\"publishers\":[");
    for (size_t i = 0; i < rc_discover_count(a->disc); i++) {
        struct rc_discover_publisher pub, *p = &pub;
        struct rc_sub_stats st;
        rc_discover_publisher(a->disc, i, p, &st);
        printf("%s{\"host\":\"%s\",\"port\":%u,\"daemon_id\":\"%s\",\"chunks\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"connects\":%" PRIu64 ",\"disconnects\":%" PRIu64
               ",\"connected\":%d}", i ? "," : "", p->host, (unsigned)p->port,
               p->daemon_id, st.chunks, st.bytes, st.connects, st.disconnects, st.connected);
    }
    printf("]");
}

/* ---- reporting ----------------------------------------------------------- */

static double now_s(void) { return (double)now_ns() / 1e9; }

static bool verification_failed(const struct app *a)
{
    const struct results *r = &a->r;
    return a->o->verify && (r->gaps || r->corrupt || r->duplicates);
}

static int cmp_tag(const void *x, const void *y)
{
    uint64_t a = ((const struct tag_state *)x)->tag, b = ((const struct tag_state *)y)->tag;
    return a < b ? -1 : a > b;
}

/* Used tag states, sorted by tag (caller frees). */
static struct tag_state *sorted_tags(const struct tag_table *t, size_t *n)
{
    struct tag_state *v = malloc((t->used ? t->used : 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].used)
            v[(*n)++] = t->slot[i];
    qsort(v, *n, sizeof *v, cmp_tag);
    return v;
}

/* The subscriber's registered pool, per class with buffers (--connect: the
 * one connection's; --discover sums no pools, each connection has its own). */
/* The block stream's figures: the ring's and every decoder counter. */
static void print_stream_json(const struct app *a, const struct rc_sub_stats *st)
{
    printf(",\"stream\":{\"card\":%u,\"active\":%d,\"block_size\":%u,\"tag_base\":%" PRIu64
           ",\"spans\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"reordered\":%" PRIu64 ",\"bad_spans\":%" PRIu64
           ",\"credits_sent\":%" PRIu64 ",\"ring_busy\":%" PRIu64 ",\"skipped_bytes\":%" PRIu64
           ",\"gap_marks\":%" PRIu64
           ",\"blocks\":%" PRIu64 ",\"bad_header\":%" PRIu64
           ",\"seq_gaps\":%" PRIu64 ",\"malformed\":%" PRIu64 ",\"orphans\":%" PRIu64 ",\"oversize\":%" PRIu64
           ",\"bad_start\":%" PRIu64 ",\"chunks_dropped\":%" PRIu64 ",\"chunks_incomplete\":%" PRIu64
           ",\"chunks_cut\":%" PRIu64 ",\"truncated\":%" PRIu64 ",\"error\":%" PRIu64 ",\"crc\":%" PRIu64
           ",\"busy\":%" PRIu64 ",\"timeouts\":%" PRIu64 ",\"oob\":%" PRIu64 "}",
           (unsigned)a->o->stream_card, st->stream_active, (unsigned)st->stream_block_size, st->stream_tag_base,
           st->stream_spans, st->stream_bytes, st->stream_reordered, st->stream_bad_spans,
           st->stream_credits_sent, st->stream_ring_busy, st->stream_skipped_bytes, st->stream_gap_marks,
           st->stream_blocks,
           st->stream_bad_header,
           st->stream_seq_gaps, st->stream_malformed, st->stream_orphans, st->stream_oversize,
           st->stream_bad_start, st->stream_chunks_dropped_gap, st->stream_chunks_incomplete,
           st->stream_chunks_cut, st->stream_chunks_truncated, st->stream_chunks_error, st->stream_chunks_crc,
           st->stream_chunks_busy, st->stream_timeouts, st->stream_oob);
}

static void print_pool_json(const struct rc_sub_stats *st)
{
    printf(",\"pool\":[");
    const char *sep = "";
    for (unsigned c = 0; c < RC_SUB_POOL_CLASSES; c++) {
        const struct rc_sub_pool_class *k = &st->pool[c];
        if (!k->count)
            continue;
        printf("%s{\"use\":\"%s\",\"size\":%" PRIu64 ",\"count\":%" PRIu64 ",\"in_use\":%" PRIu64
               ",\"high_water\":%" PRIu64 ",\"gets\":%" PRIu64 ",\"exhausted\":%" PRIu64 "}",
               sep, k->use, k->size, k->count, k->in_use, k->high_water, k->gets, k->exhausted);
        sep = ",";
    }
    printf("]");
}

static void print_json(const struct app *a, const struct rc_sub_stats *st, double seconds)
{
    const struct results *r = &a->r;
    printf("{\"chunks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.3f", r->chunks, r->bytes, seconds);
    printf(",\"verify\":%s,\"verified\":%s", a->o->verify ? "true" : "false",
           a->o->verify && !verification_failed(a) ? "true" : "false");
    printf(",\"gaps\":%" PRIu64 ",\"missing\":%" PRIu64 ",\"corrupt\":%" PRIu64 ",\"duplicates\":%" PRIu64
           ",\"flagged\":%" PRIu64,
           r->gaps, r->missing, r->corrupt, r->duplicates, r->flagged);
    printf(",\"reassembled\":%" PRIu64 ",\"reassembly_drops\":%" PRIu64 ",\"too_big\":%" PRIu64
           ",\"unwanted\":%" PRIu64 ",\"reconnects\":%" PRIu64 ",\"publisher_restarts\":%" PRIu64
           ",\"connect_failures\":%" PRIu64 ",\"truncated\":%" PRIu64,
           st->reassembled, st->reassembly_drops, st->too_big, st->unwanted, st->reconnects,
           st->publisher_restarts, st->connect_failures, st->truncated);
    if (a->o->out)
        printf(",\"out_records\":%" PRIu64 ",\"out_lost\":%" PRIu64 ",\"out_bytes\":%" PRIu64
               ",\"out_error\":\"%s\"", a->out.written, a->out.lost, a->out.good_end,
               a->out.error ? strerror(a->out.error) : "");
    printf(",\"reordered\":%" PRIu64 ",\"seq_lost\":%" PRIu64 ",\"seq_late\":%" PRIu64
           ",\"held_dropped\":%" PRIu64 ",\"disconnects\":%" PRIu64 ",\"heartbeats_sent\":%" PRIu64,
           st->reordered, st->seq_lost, st->seq_late, st->held_dropped, st->disconnects, st->heartbeats_sent);
    printf(",\"refused\":%" PRIu64 ",\"shm_stale_removed\":%" PRIu64, st->refused,
           st->shm_stale_removed);
    printf(",\"delivery\":\"%s\",\"rma_records\":%" PRIu64 ",\"rma_bytes\":%" PRIu64
           ",\"rma_fallbacks\":%" PRIu64 ",\"rma_bad_records\":%" PRIu64 ",\"rma_reordered\":%" PRIu64
           ",\"rma_credits_sent\":%" PRIu64 ",\"rma_skipped_bytes\":%" PRIu64,
           a->o->stream ? "stream" : a->o->delivery == RC_SUB_DELIVERY_RMA ? "rma" : "send", st->rma_records,
           st->rma_bytes,
           st->rma_fallbacks, st->rma_bad_records, st->rma_reordered, st->rma_credits_sent,
           st->rma_skipped_bytes);
    printf(",\"hold_ms\":%u,\"held_max\":%" PRIu64 ",\"hold_errors\":%" PRIu64, (unsigned)a->o->hold_ms,
           r->held_max, r->hold_errors);
    printf(",\"hold\":%u,\"held\":%" PRIu64 ",\"held_corrupt\":%" PRIu64 ",\"views_outstanding\":%" PRIu64
           ",\"views_allocated\":%" PRIu64 ",\"view_failures\":%" PRIu64 ",\"rma_chunks_gathered\":%" PRIu64
           ",\"rma_chunks_copied\":%" PRIu64 ",\"rma_ring_busy\":%" PRIu64,
           (unsigned)a->o->hold, r->held, r->held_corrupt, st->views_outstanding, st->views_allocated,
           st->view_failures, st->rma_chunks_gathered, st->rma_chunks_copied, st->rma_ring_busy);
    printf(",\"chunks_gathered\":%" PRIu64 ",\"chunks_reassembled_copied\":%" PRIu64 ",\"rx_buffers_held\":%" PRIu64,
           st->chunks_gathered, st->chunks_reassembled_copied, st->rx_buffers_held);
    printf(",\"poll_spin_hits\":%" PRIu64 ",\"poll_spin_misses\":%" PRIu64 ",\"poll_spin_preempted\":%" PRIu64
           ",\"poll_sleeps\":%" PRIu64 ",\"poll_spin_ns_now\":%" PRIu64 ",\"poll_coalesced\":%" PRIu64
           ",\"poll_contended\":%d",
           st->poll_spin_hits, st->poll_spin_misses, st->poll_spin_preempted, st->poll_sleeps,
           st->poll_spin_ns_now, st->poll_coalesced, st->poll_contended);
    print_pool_json(st);
    if (a->o->stream)
        print_stream_json(a, st);
    printf(",\"malformed\":{");
    for (unsigned k = 1; k < RC_SUB_MALFORMED_KINDS; k++)
        printf("%s\"%s\":%" PRIu64, k > 1 ? "," : "", rc_sub_malformed_name(k), st->malformed[k]);
    printf("}");
    if (a->o->latency) {
        const struct latency_hist *h = &a->lat;
        printf(",\"latency\":{\"samples\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"future\":%" PRIu64
               ",\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f}",
               h->samples, h->skipped, h->future, lat_quantile_us(h, 0.50), lat_quantile_us(h, 0.99),
               lat_quantile_us(h, 0.999), (double)h->max_ns / 1e3);
    }
    if (a->disc)
        print_discover_json(a);
    printf(",\"per_tag\":{");
    size_t n = 0;
    struct tag_state *v = sorted_tags(&a->tags, &n);
    for (size_t i = 0; v && i < n; i++)
        printf("%s\"%" PRIu64 "\":%" PRIu64, i ? "," : "", v[i].tag, v[i].chunks);
    free(v);
    printf("}}\n");
}

static void print_text(const struct app *a, const struct rc_sub_stats *st, double seconds)
{
    const struct results *r = &a->r;
    double mb = (double)r->bytes / 1e6;
    printf("received %" PRIu64 " chunks, %.3f MB in %.3f s (%.1f chunks/s, %.2f MB/s) on %zu tags\n",
           r->chunks, mb, seconds, seconds > 0 ? (double)r->chunks / seconds : 0.0,
           seconds > 0 ? mb / seconds : 0.0, a->tags.used);
    if (!a->o->verify && r->flagged)
        printf("flagged by the card: %" PRIu64 " chunks\n", r->flagged);
    if (a->o->verify) {
        printf("verify: %s - gaps %" PRIu64 " (%" PRIu64 " chunks missing), corrupt %" PRIu64
               ", duplicates %" PRIu64 ", flagged %" PRIu64 "\n",
               verification_failed(a) ? "FAILED" : "ok", r->gaps, r->missing, r->corrupt, r->duplicates,
               r->flagged);
        if (r->corrupt)
            printf("verify: first corrupt chunk on tag %" PRIu64 ", first wrong byte at offset %ld\n",
                   r->first_corrupt_tag, r->first_corrupt_offset);
    }
    if (a->o->latency)
        printf("latency (card write to callback) of %" PRIu64 " chunks: p50 %.1f us, p99 %.1f us, "
               "p99.9 %.1f us, max %.1f us (%" PRIu64 " without a stamp, %" PRIu64 " stamped in the future)\n",
               a->lat.samples, lat_quantile_us(&a->lat, 0.50), lat_quantile_us(&a->lat, 0.99),
               lat_quantile_us(&a->lat, 0.999), (double)a->lat.max_ns / 1e3, a->lat.skipped, a->lat.future);
    if (a->o->out)
        printf("out: %" PRIu64 " records written (%" PRIu64 " bytes), %" PRIu64 " lost%s%s\n",
               a->out.written, a->out.good_end, a->out.lost, a->out.error ? ": " : "",
               a->out.error ? strerror(a->out.error) : "");
    printf("connection: %" PRIu64 " reconnects, %" PRIu64 " publisher restarts, %" PRIu64
           " failed attempts; %" PRIu64 " malformed messages, %" PRIu64 " reassembly drops\n",
           st->reconnects, st->publisher_restarts, st->connect_failures, st->malformed_total,
           st->reassembly_drops);
    if (a->o->delivery == RC_SUB_DELIVERY_RMA)
        printf("rma: %" PRIu64 " records (%" PRIu64 " bytes) from our ring, %" PRIu64 " bad, %" PRIu64
               " fallbacks to send, %" PRIu64 " credits sent\n", st->rma_records, st->rma_bytes,
               st->rma_bad_records, st->rma_fallbacks, st->rma_credits_sent);
    if (a->o->stream)
        printf("stream of card %u: %" PRIu64 " spans (%" PRIu64 " bytes, %" PRIu64 " blocks decoded), %" PRIu64
               " bad spans, %" PRIu64 " credits sent; decoder: %" PRIu64 " sequence gaps, %" PRIu64 " malformed, %"
               PRIu64 " bad headers, %" PRIu64 " orphans, %" PRIu64 " oversize, %" PRIu64 " chunks dropped, %" PRIu64
               " cut at disconnects\n", (unsigned)a->o->stream_card, st->stream_spans, st->stream_bytes,
               st->stream_blocks, st->stream_bad_spans, st->stream_credits_sent, st->stream_seq_gaps,
               st->stream_malformed, st->stream_bad_header, st->stream_orphans, st->stream_oversize,
               st->stream_chunks_dropped_gap + st->stream_chunks_incomplete, st->stream_chunks_cut);
    if (a->o->delivery == RC_SUB_DELIVERY_RMA && !a->disc)
        printf("rma: %" PRIu64 " chunks of several records as one view (no copy), %" PRIu64 " copied\n",
               st->rma_chunks_gathered, st->rma_chunks_copied);
    if (!a->disc && (st->chunks_gathered || st->chunks_reassembled_copied))
        printf("fragments: %" PRIu64 " chunks larger than a receive buffer as one view (no copy), %" PRIu64
               " copied\n", st->chunks_gathered, st->chunks_reassembled_copied);
    for (unsigned c = 0; c < RC_SUB_POOL_CLASSES; c++) {
        const struct rc_sub_pool_class *k = &st->pool[c];
        if (k->count)
            printf("pool %s: %" PRIu64 " x %" PRIu64 " B, %" PRIu64 " in use, high-water %" PRIu64
                   ", %" PRIu64 " gets, %" PRIu64 " exhausted\n", k->use, k->count, k->size, k->in_use,
                   k->high_water, k->gets, k->exhausted);
    }
    if (a->o->hold)
        printf("hold: %" PRIu64 " views kept (last %u, released out of order), %" PRIu64
               " changed while kept; %" PRIu64 " views still out at the end\n", r->held,
               (unsigned)a->o->hold, r->held_corrupt, st->views_outstanding);
    if (a->disc) {
        struct rc_discover_stats ms;
        rc_discover_get_stats(a->disc, &ms);
        printf("discovery: %" PRIu64 " publishers now; %" PRIu64 " found, %" PRIu64 " gone, %" PRIu64
               " restarted; %" PRIu64 " lookups, %" PRIu64 " failed; entries skipped: %" PRIu64
               " malformed, %" PRIu64 " foreign, %" PRIu64 " stale\n", ms.publishers, ms.found, ms.gone,
               ms.restarts, ms.lookups, ms.lookup_failures, ms.malformed, ms.foreign, ms.stale);
        for (size_t i = 0; i < rc_discover_count(a->disc); i++) {
            struct rc_discover_publisher pub, *p = &pub;
            struct rc_sub_stats ps;
            rc_discover_publisher(a->disc, i, p, &ps);
            printf("  %s:%u (daemon %s): %" PRIu64 " chunks, %" PRIu64 " bytes, %" PRIu64 " connects%s\n",
                   p->host, (unsigned)p->port, p->daemon_id, ps.chunks, ps.bytes,
                   ps.connects, ps.connected ? "" : " (not connected)");
        }
    }
}

static void print_rate(const struct app *a, double elapsed, uint64_t dchunks, uint64_t dbytes, double dt)
{
    printf("%8.1f s  %10.0f chunks/s  %9.2f MB/s  total %" PRIu64 " chunks%s\n", elapsed,
           (double)dchunks / dt, (double)dbytes / dt / 1e6, a->r.chunks,
           a->o->verify && verification_failed(a) ? "  VERIFY FAILED" : "");
    fflush(stdout);
}

/* ---- main ------------------------------------------------------------------ */

/* Called before the first poll: the subscriber is not connected yet, so the
 * ranges are only recorded (sent after WELCOME) and -EAGAIN cannot happen. */
static int subscribe(struct app *a)
{
    if (a->o->all_tags)
        return rc_sub_subscribe_all(a->sub);
    return rc_sub_subscribe(a->sub, a->o->first, a->o->last, a->o->ntags);
}

static void run(struct app *a)
{
    const struct options *o = a->o;
    double start = now_s(), last_print = start;
    uint64_t last_chunks = 0, last_bytes = 0;
    bool live = isatty(STDOUT_FILENO) && !o->json;
    while (!stop_requested) {
        if (a->disc)
            rc_discover_poll(a->disc, 100000000ull);
        else
            rc_sub_poll(a->sub, 100000000ull);   /* connection trouble is retried inside */
        if (o->hold_ms)
            release_aged(a);
        double now = now_s();
        if (o->duration > 0 && now - start >= o->duration)
            break;
        if (live && now - last_print >= 1.0) {
            print_rate(a, now - start, a->r.chunks - last_chunks, a->r.bytes - last_bytes, now - last_print);
            last_print = now;
            last_chunks = a->r.chunks;
            last_bytes = a->r.bytes;
        }
    }
}

static int setup(struct app *a, const struct options *o)
{
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    snprintf(p.provider, sizeof p.provider, "%s", o->provider);
    p.endpoint = o->endpoint;
    snprintf(p.host, sizeof p.host, "%s", o->host);
    p.port = o->port;
    if (o->rx_buffer_size)
        p.rx_buffer_size = o->rx_buffer_size;
    if (o->max_chunk_size)
        p.max_chunk_size = o->max_chunk_size;
    p.test_stall_after_chunks = o->stall_after;
    if (o->peer_timeout > 0)
        p.peer_timeout_ns = (uint64_t)(o->peer_timeout * 1e9);
    if (o->poll_spin_set)
        p.poll_spin_ns = o->poll_spin_us * 1000u;
    p.poll_spin_fixed = o->poll_spin_fixed;
    if (o->poll_coalesce_set)
        p.poll_coalesce_ns = o->poll_coalesce_us * 1000u;
    p.delivery = o->delivery;
    if (o->wrong_rma_key)
        p.test_rma_key_xor = 0x5a5a5a5a00000000ull;   /* far from the keys asked for (1, 2, ...) */
    if (o->rma_ring_size)
        p.rma_ring_size = o->rma_ring_size;
    p.stream_card = o->stream_card;
    if (o->stream_ring_size)
        p.stream_ring_size = o->stream_ring_size;
    p.rx_buffers = o->delivery == RC_SUB_DELIVERY_SEND ? rx_buffers_for(o->hold) : RX_BUFFERS;
    if (o->stream) {   /* only control messages arrive by receive: the blocks come into the ring */
        p.rx_buffers = 8;
        if (!o->rx_buffer_size)
            p.rx_buffer_size = 4096;
    }
    if (o->hold) {
        a->held_cap = o->hold;
        a->held = calloc(o->hold, sizeof *a->held);
        a->held_seq = calloc(o->hold, sizeof *a->held_seq);
        a->held_ns = calloc(o->hold, sizeof *a->held_ns);
        if (!a->held || !a->held_seq || !a->held_ns) {
            rci_error("--hold %u: out of memory", (unsigned)o->hold);
            return -1;
        }
        a->rng = 0x9e3779b97f4a7c15ull;
    }
    if (o->discover)
        return setup_discover(a, o, &p);
    p.cb = (struct rc_sub_callbacks){.ctx = a, .on_connect = on_connect,
                                     .on_disconnect = on_disconnect, .on_resubscribed = on_resubscribed};
    p.on_view = on_view;   /* chunks as views: --out and --verify read their pieces in place */
    char err[256];
    if (rc_sub_create(&p, &a->sub, err, sizeof err)) {
        rci_error("%s", err);
        return -1;
    }
    if (record_file_open(&a->out, o->out) != 0)
        return -1;
    int rc = o->stream ? 0 : subscribe(a);   /* a stream takes the whole card unasked */
    if (rc) {
        rci_error("subscribe: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    rci_log_init(argv[0], RCI_LOG_INFO);
    static struct options o;
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : EXIT_USAGE;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct app a = {.o = &o, .out = {.fd = -1}};
    int status = 0;
    double start = now_s();
    if (setup(&a, &o))
        status = 1;
    else
        run(&a);
    double seconds = now_s() - start;
    struct rc_sub_stats st = {0};
    if (a.disc) {
        struct rc_discover_stats ms;
        rc_discover_get_stats(a.disc, &ms);
        st = ms.total;
        if (st.connects == 0 && status == 0) {
            const char *why = rc_discover_last_error(a.disc);
            rci_error("--discover %s: never connected to a publisher of the tags%s%s", o.discover,
                      why[0] ? ": " : "", why);
            status = 1;
        }
        if (st.sub_refused) {
            rci_error("%" PRIu64 " subscription request(s) refused", st.sub_refused);
            status = 1;
        }
    }
    if (a.sub) {
        rc_sub_get_stats(a.sub, &st);
        if (st.connects == 0 && status == 0) {
            const char *why = rc_sub_last_error(a.sub);
            rci_error("never connected to %s:%u: %s", o.host, (unsigned)o.port,
                     why[0] ? why : "no answer from the publisher");
            status = 1;
        }
        if (st.sub_refused) {   /* some of the asked-for tags never came */
            rci_error("%" PRIu64 " subscription request(s) refused: %s", st.sub_refused,
                     rc_sub_last_error(a.sub));
            status = 1;
        }
    }
    if (a.r.hold_errors) {
        rci_error("--hold-ms: %" PRIu64 " views could not be kept (out of memory)", a.r.hold_errors);
        status = 1;
    }
    release_all_held(&a);   /* every view goes back before the subscriber */
    if (a.sub)
        rc_sub_get_stats(a.sub, &st);   /* again: views_outstanding is 0 now */
    if (a.disc) {
        struct rc_discover_stats ms;
        rc_discover_get_stats(a.disc, &ms);
        st.views_outstanding = ms.total.views_outstanding;
    }
    rc_sub_destroy(a.sub);
    free(a.held);
    free(a.held_seq);
    free(a.held_ns);
    if (record_file_close(&a.out) != 0)
        status = 1;
    rci_log_flush(true);
    if (o.json)
        print_json(&a, &st, seconds);
    else
        print_text(&a, &st, seconds);
    if (verification_failed(&a) || a.r.table_errors)
        status = 1;
    rc_discover_destroy(a.disc);   /* after the summary, which lists its publishers */
    free(a.tags.slot);
    return status;
}
