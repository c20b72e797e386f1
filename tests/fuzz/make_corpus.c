/* SPDX-License-Identifier: BSD-3-Clause */
/* make_corpus.c — writes the seed corpus of the fuzz targets from valid
 * input made by the project's own writers: `make fuzz-corpus` runs
 * `build-fuzz/fuzz/make_corpus tests/fuzz/corpus`. The output is committed;
 * regenerate it when a format changes (wire protocol, block format, schema).
 *   fuzz_wire/     one message of every type (net/wire.c encoders)
 *   fuzz_discovery/ a daemon's discovery entry (net/discovery_entry.c), its
 *                  base64 as the etcd gateway holds it, a foreign entry
 *   fuzz_control/  every control-socket command (common/control_proto.h)
 *   fuzz_decoder/  simulator blocks of each format in the fuzz_decoder.h
 *                  layout, clean and with injected errors
 *   fuzz_config/   the example configuration, a printed default one, and a
 *                  small two-card file with mode rules and overrides
 * and the libFuzzer dictionary of the INI loader, ../fuzz_config.dict: every
 * section, key and choice of the schema, and the units the parsers know. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "config/config.h"
#include "config/schema.h"
#include "net/wire.h"
#include "net/discovery.h"
#include "readout/sim/sim_blocks.h"
#include "tests/fuzz/fuzz_decoder.h"

static const char *out_dir;

static void die(const char *what)
{
    fprintf(stderr, "make_corpus: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void put_file(const char *target, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", out_dir, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        die(path);
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die(path);
}

static void put_msg(const char *name, const void *buf, ssize_t len)
{
    if (len < 0) {
        errno = (int)-len;
        die(name);
    }
    put_file("fuzz_wire", name, buf, (size_t)len);
}

/* DATA and PAGE are laid out here from the structs of net/wire.h rather than
 * with the encoders, whose parameters follow protocol changes (a field the
 * structs gain stays zero; `make fuzz-corpus` then still builds). The host is
 * little-endian like the wire (x86-64). */
static ssize_t data_message(uint8_t *buf, uint64_t tag, uint32_t flags, uint32_t chunk_len,
                            uint32_t frag_offset, uint16_t frag_index, uint16_t frag_count,
                            uint32_t payload, uint8_t fill)
{
    struct rci_wire_data d = {
        .hdr = { .magic = RCI_WIRE_MAGIC, .version = RCI_WIRE_BASE_VERSION, .type = RCI_MSG_DATA,
                 .length = (uint32_t)(sizeof d + payload) },
        .tag = tag, .flags = flags, .chunk_len = chunk_len, .frag_offset = frag_offset, .frag_index = frag_index,
        .frag_count = frag_count };
    memcpy(buf, &d, sizeof d);
    memset(buf + sizeof d, fill, payload);
    return (ssize_t)(sizeof d + payload);
}

static ssize_t page_message(uint8_t *buf)
{
    static const char text[] = "ringcast buffered record";
    size_t at = sizeof(struct rci_wire_page);
    uint32_t records = 3;
    for (uint32_t i = 0; i < records; i++) {
        struct rci_wire_record r = { .tag = 100 + i, .flags = i, .len = 5 + 7 * i };
        memcpy(buf + at, &r, sizeof r);
        memcpy(buf + at + sizeof r, text, r.len);
        size_t padded = (sizeof r + r.len + 7) / 8 * 8;
        memset(buf + at + sizeof r + r.len, 0, padded - sizeof r - r.len);
        at += padded;
    }
    struct rci_wire_page p = {
        .hdr = { .magic = RCI_WIRE_MAGIC, .version = RCI_WIRE_BASE_VERSION, .type = RCI_MSG_PAGE,
                 .length = (uint32_t)at },
        .records = records };
    memcpy(buf, &p, sizeof p);
    return (ssize_t)at;
}

static void wire_corpus(void)
{
    static uint8_t buf[8192];
    const uint8_t addr[16] = { 2, 0, 0x30, 0x39, 127, 0, 0, 1 };
    put_msg("hello", buf, rci_wire_build_hello(buf, sizeof buf, 0x1122334455667788ull, 65536, addr, 16));
    put_msg("welcome", buf, rci_wire_build_welcome(buf, sizeof buf, 100000, 1000, 42));
    {
        struct rci_wire_hello_rma ring = {.base = 0x7f0000000000ull, .len = 1u << 20, .key = 3};
        ssize_t n = rci_wire_build_hello(buf, sizeof buf, 0x1122334455667788ull, 65536, addr, 16);
        put_msg("hello_rma", buf, rci_wire_add_hello_rma(buf, sizeof buf, (size_t)n, &ring));
        n = rci_wire_build_welcome(buf, sizeof buf, 100000, 1000, 42);
        put_msg("welcome_rma", buf, rci_wire_add_welcome_rma(buf, sizeof buf, (size_t)n, RCI_DELIVERY_RMA,
                                                            RCI_RMA_OK));
        struct rci_wire_hello_stream st = {.card = 1, .flags = 0, .start_offset = 8192};
        n = rci_wire_build_hello(buf, sizeof buf, 0x1122334455667788ull, 65536, addr, 0);
        n = rci_wire_add_hello_rma(buf, sizeof buf, (size_t)n, &ring);
        put_msg("hello_stream", buf, rci_wire_add_hello_stream(buf, sizeof buf, (size_t)n, &st));
        struct rci_wire_welcome_stream wst = {.card = 1, .block_size = 4096, .tag_base = 0x10000};
        n = rci_wire_build_welcome(buf, sizeof buf, 100000, 1000, 42);
        put_msg("welcome_stream", buf, rci_wire_add_welcome_stream(buf, sizeof buf, (size_t)n, &wst));
        put_msg("credit", buf, rci_wire_build_credit(buf, sizeof buf, 1u << 20));
    }
    const struct rci_wire_range ranges[3] = { { 0, 0 }, { 5, 9 }, { 0x10000, 0x1ffff } };
    put_msg("subscribe", buf, rci_wire_build_sub(buf, sizeof buf, RCI_MSG_SUBSCRIBE, 7, ranges, 3));
    put_msg("unsubscribe", buf, rci_wire_build_sub(buf, sizeof buf, RCI_MSG_UNSUBSCRIBE, 8, ranges + 1, 1));
    put_msg("sub_ack", buf, rci_wire_build_sub_ack(buf, sizeof buf, 7, RCI_SUB_TOO_MANY_TAGS));
    put_msg("data", buf, data_message(buf, 0x10005, 0, 40, 0, 0, 1, 40, 0xab));
    put_msg("data_last_fragment", buf, data_message(buf, 3, RCI_CHUNK_ERROR, 100, 60, 1, 2, 40, 0x5a));
    put_msg("page", buf, page_message(buf));
    put_msg("heartbeat", buf, rci_wire_build_heartbeat(buf, sizeof buf, 123456789));
    put_msg("bye", buf, rci_wire_build_bye(buf, sizeof buf, RCI_BYE_PROTOCOL));
    put_msg("bye_handled", buf, rci_wire_build_bye_handled(buf, sizeof buf, 1234567));
    put_msg("welcome_v3", buf, rci_wire_build_welcome_version(buf, sizeof buf, RCI_WIRE_VERSION, 100000, 1000, 42));
}

/* One decoder seed: header, then WRITE + block for each simulator block,
 * a DECODE after every second block, releases and a pointer report. */
static void decoder_seed(const char *name, enum felix_format fmt, uint8_t sink_and_pool,
                         double err_rate, unsigned nblocks)
{
    struct rci_sim_gen_config c = {
        .format = fmt, .block_size = FZ_BLOCK_SIZE, .tag_base = 0x50000,
        .sim = { .elinks = 3, .chunk_size_min = 1, .chunk_size_max = 2500, .fill = RCI_FILL_PATTERN,
                 .err_truncated = err_rate, .err_crc = err_rate, .err_malformed = err_rate,
                 .err_seqskip = err_rate, .seed = 11 } };
    struct rci_sim_gen *g;
    char err[256];
    if (rci_sim_gen_create(&c, &g, err, sizeof err) != 0) {
        fprintf(stderr, "make_corpus: %s: %s\n", name, err);
        exit(1);
    }
    static uint8_t seed[FZ_HEADER_BYTES + 16 * (FZ_BLOCK_SIZE + 8)];
    size_t len = 0;
    seed[len++] = (uint8_t)fmt;
    seed[len++] = 5;                 /* 7 blocks */
    seed[len++] = sink_and_pool;
    seed[len++] = 0x8f;              /* 16 pieces, 16 KiB chunks */
    for (unsigned b = 0; b < nblocks && b < 16; b++) {
        seed[len++] = FZ_OP_WRITE;
        if (!rci_sim_gen_next(g, seed + len, NULL, NULL))
            memset(seed + len, 0, FZ_BLOCK_SIZE);
        len += FZ_BLOCK_SIZE;
        if (b % 2 == 1) {
            seed[len++] = FZ_OP_DECODE;
            seed[len++] = FZ_OP_RELEASE_OLDEST;
            seed[len++] = FZ_OP_RELEASE_ONE;
            seed[len++] = (uint8_t)b;
        }
    }
    seed[len++] = FZ_OP_POINTER;     /* an unaligned write pointer past the data */
    seed[len++] = 0x10;
    seed[len++] = 0x05;
    seed[len++] = FZ_OP_DECODE;
    rci_sim_gen_destroy(g);
    put_file("fuzz_decoder", name, seed, len);
}

static void decoder_corpus(void)
{
    decoder_seed("abcd", FELIX_FMT_ABCD, 63, 0, 8);
    decoder_seed("abce", FELIX_FMT_ABCE, (FZ_SINK_AGAIN << 6) | 15, 0, 8);
    decoder_seed("c0ce", FELIX_FMT_C0CE, (FZ_SINK_RELEASE_NOW << 6) | 7, 0, 10);
    decoder_seed("c0ce_errors", FELIX_FMT_C0CE, (FZ_SINK_REFUSE << 6) | 31, 0.2, 12);
    decoder_seed("abcd_errors", FELIX_FMT_ABCD, 3, 0.2, 12);
}

static void put_printed(const char *name, void (*print)(FILE *, const void *), const void *arg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        die("open_memstream");
    print(f, arg);
    fclose(f);
    put_file("fuzz_config", name, text, len);
    free(text);
}

static void print_example(FILE *f, const void *arg) { (void)arg; rci_config_print_example(f); }
static void print_config(FILE *f, const void *arg) { rci_config_print(arg, f); }

static void config_corpus(void)
{
    put_printed("example.ini", print_example, NULL);
    static struct rci_config cfg;
    struct rci_config_error err;
    if (rci_config_load(&cfg, NULL, NULL, 0, stderr, &err) != 0) {
        fprintf(stderr, "make_corpus: default configuration: %s\n", err.msg);
        exit(1);
    }
    put_printed("defaults.ini", print_config, &cfg);
    static const char two_cards[] =
        "\xEF\xBB\xBF; two cards, mode rules, units\n"
        "[readout]\nlog_level = debug\nstats_interval = 1.5s\nmode = auto\nbuffered_threshold = 4k\n"
        "[mode.0]\ntags = 0x10000-0x1ffff\nmode = buffered\n"
        "[mode.1]\ntags = 7\nmode = zerocopy\n"
        "[fabric]\nprovider = tcp;ofi_rxm\nendpoint = rdm\nport = 12345\n"
        "[card.0]\nring_size = 16M\nblock_size = 4k  # c0ce\n"
        "[card.1]\ntype = sim-process\nmemory = shm\nshm_name = rc-fuzz\nblock_format = abcd\n"
        "block_size = 1k\n"
        "[sim.1]\nrate = 2.5GB/s\nerr_crc = 0.001\nchunk_size_min = 8\nchunk_size_max = 900\n"
        "%%\n"
        "card.0.ring_size=32M\nsim.0.rate=10Mchunks/s\nreadout.wait_subscribers=2\n";
    put_file("fuzz_config", "two_cards.ini", two_cards, sizeof two_cards - 1);
}

static void dict_token(FILE *f, const char *text, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e)
            fprintf(f, "\\x%02X", c);
        else
            fputc(c, f);
    }
    fputs("\"\n", f);
}

static void config_dictionary(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/../fuzz_config.dict", out_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        die(path);
    fprintf(f, "# Generated by tests/fuzz/make_corpus.c (make fuzz-corpus): the schema's words.\n");
    static const char *const words[] = {
        "[", "]", " = ", "\n", ";", "#", "%%\n", "0x", "auto", "unlimited", "true", "off",
        "k", "M", "G", "T", "KiB", "B", "ns", "us", "ms", "s", "GB/s", "MB/s", "chunks/s",
        "Mchunks/s", "-", ".", "1e308", "18446744073709551616" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        dict_token(f, words[i], strlen(words[i]));
    char name[64];
    for (unsigned i = 0; i < RCI_CFG_NSECTIONS; i++) {
        const struct rci_cfg_section *sec = rci_cfg_sections[i];
        snprintf(name, sizeof name, sec->repeated ? "[%s.0]" : "[%s]", sec->name);
        dict_token(f, name, strlen(name));
        snprintf(name, sizeof name, sec->repeated ? "%s.1." : "%s.", sec->name);
        dict_token(f, name, strlen(name));
        for (size_t k = 0; k < sec->nkeys; k++) {
            const struct rci_cfg_key *key = &sec->keys[k];
            dict_token(f, key->key, strlen(key->key));
            for (const char *c = key->choices; c && *c;) {
                size_t l = strcspn(c, "|");
                dict_token(f, c, l);
                c += l + (c[l] == '|');
            }
        }
    }
    if (fclose(f) != 0)
        die(path);
}

/* fuzz_discovery/: entries as the daemon writes them, and their base64. */
static void discovery_corpus(void)
{
    struct rci_disc_entry e = {.pid = 4242, .start_time_ms = 1795480674510ull, .refreshed_ms = 1795480675000ull,
                               .ttl_ms = 5000, .thread = 1, .threads = 2, .port = 12346, .nranges = 2};
    strcpy(e.daemon_id, "ro01-4242-1795480674510");
    strcpy(e.hostname, "ro01");
    strcpy(e.host, "10.1.0.11");
    strcpy(e.provider, "tcp;ofi_rxm");
    strcpy(e.endpoint, "rdm");
    strcpy(e.deliveries, "zerocopy+rules");
    e.first[0] = 0;
    e.last[0] = 0x7ff;
    e.first[1] = 0x10000;
    e.last[1] = 0x107ff;
    char *text = rci_disc_entry_to_json(&e);
    if (!text)
        die("rci_disc_entry_to_json");
    put_file("fuzz_discovery", "entry.json", text, strlen(text));
    static char b64[8192];
    size_t n = rci_base64_encode(text, strlen(text), b64, sizeof b64);
    put_file("fuzz_discovery", "entry.b64", b64, n);
    free(text);
    static const char foreign[] = "{\"format\":\"someone-else\",\"port\":1}";
    put_file("fuzz_discovery", "foreign.json", foreign, sizeof foreign - 1);
}

/* fuzz_control/: every command of the control socket, and two odd ones. */
static void control_corpus(void)
{
    static const struct { const char *name, *text; } seeds[] = {
        {"status", "status\n"}, {"subscribers", "subscribers\n"}, {"kick", "kick 127.0.0.1:40000\n"},
        {"kick6", "kick [::1]:5\n"}, {"card_stop", "card 0 stop\n"}, {"card_start", "card 7 start"},
        {"reload", "reload\n"}, {"log_level", "log-level debug\n"}, {"blanks", "  log-level\twarn  \n"},
        {"bad_card", "card x stop\n"},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        put_file("fuzz_control", seeds[i].name, seeds[i].text, strlen(seeds[i].text));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT_DIR (tests/fuzz/corpus)\n", argv[0]);
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        die(out_dir);
    wire_corpus();
    decoder_corpus();
    config_corpus();
    config_dictionary();
    discovery_corpus();
    control_corpus();
    return 0;
}
