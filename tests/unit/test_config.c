/* SPDX-License-Identifier: BSD-3-Clause */
/* test_config.c — config/: unit parsers, loading, every kind of error with its
 * location, overrides, printing round trips, and the schema's coverage of the
 * params structs. INI files are written to a mkdtemp directory. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/schema.h"
#include "tests/unit/cunit_main.h"

/* ---- scratch files ---- */

#define MAX_FILES 256
static char tmpdir[64];
static char *created[MAX_FILES];
static unsigned ncreated;

static void remove_scratch(void)
{
    for (unsigned i = 0; i < ncreated; i++) {
        unlink(created[i]);
        free(created[i]);
    }
    if (tmpdir[0]) rmdir(tmpdir);
}

/* A new path in the scratch directory (removed at exit). */
static const char *scratch_path(const char *name)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/rci_test_config.XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(remove_scratch);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%u-%s", tmpdir, ncreated, name);
    if (ncreated == MAX_FILES) exit(2);
    created[ncreated] = strdup(path);
    return created[ncreated++];
}

static const char *write_file(const char *text)
{
    const char *path = scratch_path("t.ini");
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- loading with every message captured ---- */

struct result {
    int rc;
    char *log;                   /* every error, one per line */
    struct rci_config_error err;
    const char *path;
};

static struct rci_config cfg;     /* large: not on the stack */

static struct result load_path(const char *path, const char *const *ov, unsigned nov)
{
    struct result r = {.path = path};
    size_t len;
    FILE *log = open_memstream(&r.log, &len);
    r.rc = rci_config_load(&cfg, path, ov, nov, log, &r.err);
    fclose(log);
    return r;
}

static struct result load_text(const char *text, const char *const *ov, unsigned nov)
{
    return load_path(write_file(text), ov, nov);
}

/* Does one line of the log contain a, b and c? */
static bool log_has(const char *log, const char *a, const char *b, const char *c)
{
    for (const char *line = log; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)n, line);
        if (strstr(buf, a) && strstr(buf, b) && strstr(buf, c)) return true;
        line = nl ? nl + 1 : NULL;
    }
    return false;
}

static unsigned log_lines(const char *log)
{
    unsigned n = 0;
    for (const char *p = log; *p; p++) n += *p == '\n';
    return n;
}

/* The load failed and one message names file:line, the key and the problem. */
static void expect_error_at(const char *text, unsigned line, const char *key, const char *what)
{
    struct result r = load_text(text, NULL, 0);
    char where[320];
    snprintf(where, sizeof where, "%s:%u: ", r.path, line);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    bool found = log_has(r.log, where, key, what);
    if (!found) fprintf(stderr, "\nexpected '%s' '%s' '%s' in:\n%s", where, key, what, r.log);
    CU_ASSERT(found);
    CU_ASSERT(r.err.count >= 1);
    CU_ASSERT_EQUAL(r.err.count, log_lines(r.log));
    CU_ASSERT(strncmp(r.log, r.err.msg, strlen(r.err.msg)) == 0); /* err holds the first */
    free(r.log);
}

static void expect_override_error(const char *text, const char *ov, const char *key,
                                  const char *what)
{
    const char *ovs[] = {ov};
    struct result r = text ? load_text(text, ovs, 1) : load_path(NULL, ovs, 1);
    char where[320];
    snprintf(where, sizeof where, "-o %s: ", ov);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    bool found = log_has(r.log, where, key, what);
    if (!found) fprintf(stderr, "\nexpected '%s' '%s' '%s' in:\n%s", where, key, what, r.log);
    CU_ASSERT(found);
    free(r.log);
}

static void expect_ok(struct result r)
{
    if (r.rc != 0) fprintf(stderr, "\nunexpected errors:\n%s", r.log);
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.err.count, 0);
    free(r.log);
}

/* ==== unit parsers ==== */

static void test_size_ok(void)
{
    static const struct { const char *text; uint64_t v; } ok[] = {
        {"0", 0}, {"4096", 4096}, {"4k", 4096}, {"4K", 4096}, {"64M", 64ull << 20},
        {"1G", 1ull << 30}, {"1T", 1ull << 40}, {"1.5k", 1536}, {"0x1000", 4096},
        {"4KiB", 4096}, {"64MiB", 64ull << 20}, {"1GiB", 1ull << 30}, {"4096B", 4096},
        {"64 M", 64ull << 20}, {"18446744073709551615", UINT64_MAX}, {"0.5M", 512ull << 10},
        {"1.25T", 5ull << 38}, {"1.998046875T", 1023ull << 31}, /* fraction * 2^40 > 2^64 */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        CU_ASSERT_EQUAL(rci_parse_size(ok[i].text, &v), 0);
        CU_ASSERT_EQUAL(v, ok[i].v);
    }
}

static void test_size_errors(void)
{
    static const struct { const char *text; int rc; const char *why; } bad[] = {
        {"", -EINVAL, "empty"}, {"4kx", -EINVAL, "unknown unit 'kx'"},
        {"k", -EINVAL, "not a number"}, {"-1", -EINVAL, "negative"},
        {"1.1k", -EINVAL, "whole number of bytes"}, {"99999999999G", -ERANGE, "too large"},
        {"18446744073709551616", -ERANGE, "too large"}, {"16777216T", -ERANGE, "too large"},
        {"4MB", -EINVAL, "ambiguous"}, {"4kB", -EINVAL, "ambiguous"}, {"1.", -EINVAL, "decimal"},
        {"0x", -EINVAL, "hex"}, {"1.0000000001k", -EINVAL, "digits after"},
        {" 4k", -EINVAL, "not a number"}, {"4m", -EINVAL, "unknown unit"},
        {"1.999999999T", -EINVAL, "whole number of bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        char why[256] = "";
        CU_ASSERT_EQUAL(rci_parse_size(bad[i].text, &v), bad[i].rc);
        CU_ASSERT_EQUAL(rci_cfg_parse_size(bad[i].text, &v, why, sizeof why), bad[i].rc);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].why));
        CU_ASSERT_EQUAL(v, 7); /* untouched on failure */
    }
}

static void test_duration(void)
{
    static const struct { const char *text; uint64_t ns; } ok[] = {
        {"0", 0}, {"0s", 0}, {"250ns", 250}, {"50us", 50000}, {"1.5ms", 1500000},
        {"3s", 3000000000ull}, {"1 s", 1000000000ull}, {"18446744073709551615ns", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        CU_ASSERT_EQUAL(rci_parse_duration(ok[i].text, &v), 0);
        CU_ASSERT_EQUAL(v, ok[i].ns);
    }
    static const struct { const char *text; int rc; const char *why; } bad[] = {
        {"5", -EINVAL, "needs a unit"}, {"0.0", -EINVAL, "needs a unit"},
        {"5m", -EINVAL, "unknown unit 'm'"}, {"1.5ns", -EINVAL, "whole number of ns"},
        {"18446744074s", -ERANGE, "too large"}, {"", -EINVAL, "empty"}, {"ms", -EINVAL, "number"},
        {"5msx", -EINVAL, "unknown unit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        char why[256] = "";
        CU_ASSERT_EQUAL(rci_cfg_parse_duration(bad[i].text, &v, why, sizeof why), bad[i].rc);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].why));
    }
}

static void test_rate(void)
{
    static const struct { const char *text; enum rci_rate_unit unit; double v; } ok[] = {
        {"unlimited", RCI_RATE_UNLIMITED, 0}, {"2.5GB/s", RCI_RATE_BYTES, 2.5e9},
        {"800MB/s", RCI_RATE_BYTES, 8e8}, {"10Mchunks/s", RCI_RATE_CHUNKS, 1e7},
        {"5000chunks/s", RCI_RATE_CHUNKS, 5000}, {"1kB/s", RCI_RATE_BYTES, 1000},
        {"2.5 GB/s", RCI_RATE_BYTES, 2.5e9}, {"0.5chunks/s", RCI_RATE_CHUNKS, 0.5},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct rci_rate r = {.unit = 9};
        CU_ASSERT_EQUAL(rci_parse_rate(ok[i].text, &r), 0);
        CU_ASSERT_EQUAL(r.unit, ok[i].unit);
        CU_ASSERT_DOUBLE_EQUAL(r.per_second, ok[i].v, 1e-9 * ok[i].v);
    }
    static const struct { const char *text; const char *why; } bad[] = {
        {"2.5G", "needs a unit"}, {"10M", "needs a unit"}, {"0B/s", "more than 0"},
        {"10Mchunks", "unknown unit"}, {"fastB/s", "not a number"}, {"2.5GiB/s", "unknown unit 'GiB/s'"},
        {"", "empty"}, {"Unlimited", "not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rci_rate r;
        char why[256] = "";
        CU_ASSERT_EQUAL(rci_cfg_parse_rate(bad[i].text, &r, why, sizeof why), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].why));
    }
}

static void test_bool_uint(void)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "TRUE", "Yes"};
    static const char *const no[] = {"false", "no", "off", "0", "Off"};
    bool b;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        b = false;
        CU_ASSERT(rci_parse_bool(yes[i], &b) == 0 && b);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        b = true;
        CU_ASSERT(rci_parse_bool(no[i], &b) == 0 && !b);
    }
    CU_ASSERT_EQUAL(rci_parse_bool("maybe", &b), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_bool("", &b), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_bool("truex", &b), -EINVAL);

    uint64_t v;
    CU_ASSERT(rci_parse_uint("42", &v) == 0 && v == 42);
    CU_ASSERT(rci_parse_uint("0x2A", &v) == 0 && v == 42);
    CU_ASSERT(rci_parse_uint("010", &v) == 0 && v == 10); /* decimal, not octal */
    CU_ASSERT(rci_parse_uint("18446744073709551615", &v) == 0 && v == UINT64_MAX);
    CU_ASSERT_EQUAL(rci_parse_uint("18446744073709551616", &v), -ERANGE);
    CU_ASSERT_EQUAL(rci_parse_uint("0x10000000000000000", &v), -ERANGE);
    CU_ASSERT_EQUAL(rci_parse_uint("1.5", &v), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_uint("12abc", &v), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_uint("-3", &v), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_uint("", &v), -EINVAL);
    CU_ASSERT_EQUAL(rci_parse_uint("4k", &v), -EINVAL);

    double d;
    CU_ASSERT(rci_cfg_parse_double("1e-6", &d, NULL, 0) == 0 && d == 1e-6);
    CU_ASSERT(rci_cfg_parse_double(".25", &d, NULL, 0) == 0 && d == 0.25);
    CU_ASSERT_EQUAL(rci_cfg_parse_double("nan", &d, NULL, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_cfg_parse_double("0x1p-2", &d, NULL, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_cfg_parse_double("1e999", &d, NULL, 0), -ERANGE);
    CU_ASSERT_EQUAL(rci_cfg_parse_double("1e", &d, NULL, 0), -EINVAL);
}

static void test_formatters(void)
{
    char buf[32];
    CU_ASSERT_STRING_EQUAL(rci_format_size(65536, buf, sizeof buf), "64k");
    CU_ASSERT_STRING_EQUAL(rci_format_size(1536, buf, sizeof buf), "1536");
    CU_ASSERT_STRING_EQUAL(rci_format_size(0, buf, sizeof buf), "0");
    CU_ASSERT_STRING_EQUAL(rci_format_duration(1500000, buf, sizeof buf), "1500us");
    CU_ASSERT_STRING_EQUAL(rci_format_duration(3000000000ull, buf, sizeof buf), "3s");
    CU_ASSERT_STRING_EQUAL(rci_format_duration(0, buf, sizeof buf), "0");
    struct rci_rate r = {RCI_RATE_BYTES, 2.5e9};
    CU_ASSERT_STRING_EQUAL(rci_format_rate(&r, buf, sizeof buf), "2.5GB/s");
    r = (struct rci_rate){RCI_RATE_CHUNKS, 5000};
    CU_ASSERT_STRING_EQUAL(rci_format_rate(&r, buf, sizeof buf), "5kchunks/s");
    r = (struct rci_rate){RCI_RATE_UNLIMITED, 0};
    CU_ASSERT_STRING_EQUAL(rci_format_rate(&r, buf, sizeof buf), "unlimited");

    static const uint64_t sizes[] = {1, 1023, 1024, 1025, 64ull << 20, (1ull << 30) + 1,
                                     1ull << 40, UINT64_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t back = 0;
        CU_ASSERT(rci_parse_size(rci_format_size(sizes[i], buf, sizeof buf), &back) == 0);
        CU_ASSERT_EQUAL(back, sizes[i]);
        CU_ASSERT(rci_parse_duration(rci_format_duration(sizes[i], buf, sizeof buf), &back) == 0);
        CU_ASSERT_EQUAL(back, sizes[i]);
    }
    static const char *const rates[] = {"1234567.891B/s", "0.001chunks/s", "999999999999B/s",
                                        "3.3Mchunks/s", "0.1GB/s", "7B/s"};
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        struct rci_rate in, back;
        CU_ASSERT_FATAL(rci_parse_rate(rates[i], &in) == 0);
        CU_ASSERT(rci_parse_rate(rci_format_rate(&in, buf, sizeof buf), &back) == 0);
        CU_ASSERT(back.unit == in.unit && back.per_second == in.per_second);
    }
}

static void test_edit_distance(void)
{
    CU_ASSERT_EQUAL(rci_cfg_edit_distance("block_sise", "block_size"), 1);
    CU_ASSERT_EQUAL(rci_cfg_edit_distance("", "abc"), 3);
    CU_ASSERT_EQUAL(rci_cfg_edit_distance("Ring_Size", "ring_size"), 0);
    CU_ASSERT_EQUAL(rci_cfg_edit_distance("kitten", "sitting"), 3);
}

/* ==== loading ==== */

static void test_defaults_only(void)
{
    expect_ok(load_path(NULL, NULL, 0));
    CU_ASSERT_EQUAL(cfg.ncards, 0);
    CU_ASSERT_STRING_EQUAL(cfg.source, "");
    CU_ASSERT_EQUAL(cfg.daemon.log_level, RCI_LOG_INFO);
    CU_ASSERT_EQUAL(cfg.daemon.stats_interval_ns, 1000000000ull);
    CU_ASSERT_EQUAL(cfg.daemon.publisher_threads, 1);
    CU_ASSERT_EQUAL(cfg.daemon.queue_size, 4096);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.provider, "tcp");
    CU_ASSERT_EQUAL(cfg.fabric.endpoint, RCI_EP_MSG);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.address, "127.0.0.1");
    CU_ASSERT_EQUAL(cfg.fabric.port, 12345);
    CU_ASSERT_EQUAL(cfg.fabric.cq_size, 1024);
    CU_ASSERT_EQUAL(cfg.fabric.flush_timeout_ns, 1000000);
    CU_ASSERT_EQUAL(cfg.fabric.rx_buffer_size, 65536);
    CU_ASSERT_EQUAL(cfg.fabric.heartbeat_ns, 500000000ull);
    CU_ASSERT_EQUAL(cfg.fabric.max_tags_per_subscriber, 0);
    for (unsigned i = 0; i < RCI_MAX_CARDS; i++) {
        CU_ASSERT_EQUAL(cfg.card[i].index, i);
        CU_ASSERT_EQUAL(cfg.card[i].tag_base, (uint64_t)i * 65536);
        CU_ASSERT_EQUAL(cfg.sim[i].elinks, 8);
    }
    CU_ASSERT_EQUAL(cfg.card[0].type, RCI_CARD_SIM);
    CU_ASSERT_EQUAL(cfg.card[0].ring_size, 64ull << 20);
    CU_ASSERT_EQUAL(cfg.card[0].block_size, 4096);
    CU_ASSERT_EQUAL(cfg.card[0].block_format, FELIX_FMT_C0CE);
    CU_ASSERT_EQUAL(cfg.card[0].memory, RCI_MEM_ANON);
    CU_ASSERT_STRING_EQUAL(cfg.card[2].shm_name, "ringcast-card2");
    CU_ASSERT_EQUAL(cfg.card[0].poll_spin_ns, 50000);
    CU_ASSERT_EQUAL(cfg.card[0].max_chunk_pieces, 64);
    CU_ASSERT_EQUAL(cfg.sim[0].chunk_size_min, 1024);
    CU_ASSERT_EQUAL(cfg.sim[0].rate.unit, RCI_RATE_UNLIMITED);
    CU_ASSERT_EQUAL(cfg.sim[0].fill, RCI_FILL_PATTERN);
    CU_ASSERT_EQUAL(cfg.sim[0].err_crc, 0.0);
    CU_ASSERT_STRING_EQUAL(cfg.sim[0].replay_file, "");
    CU_ASSERT_EQUAL(cfg.sim[0].run_ns, 0);
    CU_ASSERT_EQUAL(cfg.sim[0].seed, 1);
}

static void test_empty_sections_count(void)
{
    expect_ok(load_text("[card.0]\n[card.1]\n", NULL, 0));
    CU_ASSERT_EQUAL(cfg.ncards, 2);
    CU_ASSERT_EQUAL(cfg.card[1].tag_base, 65536);
    CU_ASSERT(!cfg.has_sim[0] && !cfg.has_sim[1]);
    expect_ok(load_text("; nothing but a comment\n", NULL, 0));
    CU_ASSERT_EQUAL(cfg.ncards, 0);
}

static void test_file_syntax(void)
{
    /* BOM, CRLF, comments of both kinds, inline comment, indented keys, blanks */
    const char *text = "\xEF\xBB\xBF; ringcast\r\n"
                       "# another comment\r\n"
                       "[readout]\r\n"
                       "  log_level = debug   ; inline comment\r\n"
                       "\tstats_interval=0\r\n"
                       "\r\n"
                       "  [card.0]  ; card zero\n"
                       "ring_size = 1M\n"
                       "rd_update_bytes = 64k\n"
                       "memory = shm\n"
                       "shm_name = my-ring.0\n"
                       "tag_base = 0x100000\n"
                       "[sim.0]\n"
                       "rate = 2.5GB/s\n"
                       "err_crc = 1e-6\n"
                       "replay_loop = yes\n"
                       "run_time = 1.5ms\n"
                       "chunk_size_max = 4k\n";
    expect_ok(load_text(text, NULL, 0));
    CU_ASSERT_EQUAL(cfg.daemon.log_level, RCI_LOG_DEBUG);
    CU_ASSERT_EQUAL(cfg.daemon.stats_interval_ns, 0);
    CU_ASSERT_EQUAL(cfg.ncards, 1);
    CU_ASSERT(cfg.has_sim[0]);
    CU_ASSERT_EQUAL(cfg.card[0].ring_size, 1ull << 20);
    CU_ASSERT_EQUAL(cfg.card[0].memory, RCI_MEM_SHM);
    CU_ASSERT_STRING_EQUAL(cfg.card[0].shm_name, "my-ring.0");
    CU_ASSERT_EQUAL(cfg.card[0].tag_base, 0x100000);
    CU_ASSERT_EQUAL(cfg.sim[0].rate.unit, RCI_RATE_BYTES);
    CU_ASSERT_EQUAL(cfg.sim[0].rate.per_second, 2.5e9);
    CU_ASSERT_EQUAL(cfg.sim[0].err_crc, 1e-6);
    CU_ASSERT(cfg.sim[0].replay_loop);
    CU_ASSERT_EQUAL(cfg.sim[0].run_ns, 1500000);
    CU_ASSERT_EQUAL(cfg.sim[0].chunk_size_max, 4096);
}

static void test_enum_order_matches_c(void)
{
    const char *ov[] = {"card.0.block_format=abce", "card.0.block_size=1k",
                        "card.0.memory=hugetlb", "card.0.ring_size=2M",
                        "card.1.type=sim-process", "card.1.memory=shm",
                        "readout.log_level=warn", "fabric.endpoint=rdm", "sim.0.fill=none"};
    expect_ok(load_path(NULL, ov, sizeof ov / sizeof ov[0]));
    CU_ASSERT_EQUAL(cfg.card[0].block_format, FELIX_FMT_ABCE);
    CU_ASSERT_EQUAL(cfg.card[0].memory, RCI_MEM_HUGETLB);
    CU_ASSERT_EQUAL(cfg.card[1].type, RCI_CARD_SIM_PROCESS);
    CU_ASSERT_EQUAL(cfg.card[1].memory, RCI_MEM_SHM);
    CU_ASSERT_EQUAL(cfg.daemon.log_level, RCI_LOG_WARN);
    CU_ASSERT_EQUAL(cfg.fabric.endpoint, RCI_EP_RDM);
    CU_ASSERT_EQUAL(cfg.sim[0].fill, RCI_FILL_NONE);
    const char *ov2[] = {"card.0.block_format=abcd", "card.0.block_size=1k",
                         "readout.log_level=error"};
    expect_ok(load_path(NULL, ov2, 3));
    CU_ASSERT_EQUAL(cfg.card[0].block_format, FELIX_FMT_ABCD);
    CU_ASSERT_EQUAL(cfg.daemon.log_level, RCI_LOG_ERROR);
}

static void test_override_success(void)
{
    const char *ov[] = {"card.0.block_size=8k", "readout.log_level = debug",
                        "card.1.ring_size=128M", "sim.1.elinks=16"};
    expect_ok(load_text("[card.0]\nblock_size = 4k\n", ov, 4));
    CU_ASSERT_EQUAL(cfg.card[0].block_size, 8192); /* the override beats the file */
    CU_ASSERT_EQUAL(cfg.daemon.log_level, RCI_LOG_DEBUG);
    CU_ASSERT_EQUAL(cfg.ncards, 2);                /* card.1 created by an override */
    CU_ASSERT_EQUAL(cfg.card[1].ring_size, 128ull << 20);
    CU_ASSERT(cfg.has_sim[1]);
    CU_ASSERT_EQUAL(cfg.sim[1].elinks, 16);
    const char *ov2[] = {"card.0.shm_name=auto", "card.0.tag_base=auto"};
    expect_ok(load_text("[card.0]\nshm_name = x\ntag_base = 5\n", ov2, 2));
    CU_ASSERT_STRING_EQUAL(cfg.card[0].shm_name, "ringcast-card0");
    CU_ASSERT_EQUAL(cfg.card[0].tag_base, 0);
    /* listening addresses: IPv4, IPv6 without brackets, host names (not resolved) */
    static const char *const addresses[] = {"0.0.0.0", "10.1.2.3", "::1", "fe80::1:2",
                                            "localhost", "daq-01.example.org", "node7"};
    for (size_t i = 0; i < sizeof addresses / sizeof addresses[0]; i++) {
        char o[64];
        snprintf(o, sizeof o, "fabric.address=%s", addresses[i]);
        const char *ov3[] = {o};
        expect_ok(load_text("", ov3, 1));
        CU_ASSERT_STRING_EQUAL(cfg.fabric.address, addresses[i]);
    }
}

/* ==== errors ==== */

static void test_unknown_section_and_key(void)
{
    expect_error_at("[fabrik]\nport = 1\n", 1, "[fabrik]", "did you mean [fabric]?");
    expect_error_at("[card.0]\n[cards.1]\n", 2, "[cards.1]", "did you mean [card.1]?");
    expect_error_at("[card.0]\nblock_sise = 4k\n", 2, "[card.0] block_sise",
                    "unknown key (did you mean 'block_size'?)");
    expect_error_at("[card.0]\nelinks = 4\n", 2, "[card.0] elinks", "belongs in [sim.N]");
    expect_error_at("[readout]\nzzz = 1\n", 2, "[readout] zzz", "unknown key");
    expect_error_at("port = 1\n[fabric]\n", 1, "port", "key before any section");
    expect_error_at("[card.8]\n", 1, "[card.8]", "index must be a number 0..7");
    expect_error_at("[card.01]\n", 1, "[card.01]", "index must be a number");
    expect_error_at("[card]\n", 1, "[card]", "needs an index");
    expect_error_at("[readout.0]\n", 1, "[readout.0]", "takes no index");
    /* keys of an unknown section are not reported one by one */
    struct result r = load_text("[nosuch]\na = 1\nb = 2\n", NULL, 0);
    CU_ASSERT_EQUAL(r.err.count, 1);
    free(r.log);
}

static void test_syntax_errors(void)
{
    expect_error_at("[card.0\n", 1, "'[card.0'", "section header without ']'");
    expect_error_at("[readout]\n[card.0] junk\n", 2, "[card.0]", "unexpected text after ']'");
    expect_error_at("[readout]\njustaword\nlog_level = info\n", 2, "'justaword'",
                    "expected 'key = value'");
    expect_error_at("[readout]\n= 5\n", 2, "[readout]", "without a key");
    /* every bad line is reported once, not only inih's first */
    struct result r = load_text("[readout]\nfoo\nbar\n", NULL, 0);
    CU_ASSERT_EQUAL(r.err.count, 2);
    free(r.log);
    r = load_text("[readout] junk\nfoo\n", NULL, 0);
    CU_ASSERT_EQUAL(r.err.count, 2);
    free(r.log);
    /* a NUL byte is an error, and the line count goes on */
    const char *path = scratch_path("nul.ini");
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fwrite("[readout]\nlog_level = info\0x\nqueue_size = 3\n", 1, 44, f);
    fclose(f);
    r = load_path(path, NULL, 0);
    char where[320];
    snprintf(where, sizeof where, "%s:2: NUL byte", path);
    CU_ASSERT(log_has(r.log, where, "", ""));
    snprintf(where, sizeof where, "%s:3: [readout] queue_size = 3", path);
    CU_ASSERT(log_has(r.log, where, "out of range", ""));
    CU_ASSERT_EQUAL(r.err.count, 2);
    free(r.log);
}

static void test_duplicates(void)
{
    expect_error_at("[card.0]\nblock_size = 4k\nblock_size = 8k\n", 3, "[card.0] block_size",
                    "duplicate key (first given at ");
    struct result r = load_text("[card.0]\nblock_size = 4k\nblock_size = 8k\n", NULL, 0);
    char first[300];
    snprintf(first, sizeof first, "first given at %s:2", r.path);
    CU_ASSERT(log_has(r.log, first, "", ""));
    free(r.log);
    expect_error_at("[card.0]\n[sim.0]\n[card.0]\n", 3, "[card.0]", "section given twice");
    /* the same key in a repeated section is still a duplicate */
    expect_error_at("[fabric]\nport = 1\n[fabric]\nport = 2\n", 4, "[fabric] port", "duplicate key");
}

static void test_bad_values(void)
{
    static const struct { const char *text; const char *key; const char *what; } bad[] = {
        {"[sim.0]\nreplay_loop = maybe\n", "replay_loop = maybe", "not a boolean"},
        {"[card.0]\ndma_descriptor = two\n", "dma_descriptor = two", "not a number"},
        {"[card.0]\ndma_descriptor = 8\n", "dma_descriptor = 8", "out of range (allowed: 0..7)"},
        {"[card.0]\nblock_size = 128k\n", "block_size = 128k", "out of range (allowed: 1k..64k"},
        {"[card.0]\nblock_size = 3000\n", "block_size = 3000", "not a multiple of 1k"},
        {"[card.0]\nblock_size = 4q\n", "block_size = 4q", "unknown unit 'q'"},
        {"[card.0]\nblock_size = 4kx\n", "block_size = 4kx", "unknown unit 'kx'"},
        {"[card.0]\nring_size = 64MB\n", "ring_size = 64MB", "ambiguous"},
        {"[card.0]\nring_size = 99999999999G\n", "ring_size = 99999999999G", "too large"},
        /* the readout addresses ring pieces with 32-bit offsets: refuse here, at file:line,
         * what rci_readout_create() would refuse only when the daemon starts */
        {"[card.0]\nring_size = 8G\n", "ring_size = 8G", "out of range (allowed: 4k..4G)"},
        {"[card.0]\npoll_spin = 50\n", "poll_spin = 50", "needs a unit"},
        {"[card.0]\nmax_chunk_pieces = 0\n", "max_chunk_pieces = 0", "out of range"},
        {"[card.0]\nblock_format = abcf\n", "block_format = abcf", "not one of abcd|abce|c0ce"},
        {"[card.0]\nmemory = tmpfs\n", "memory = tmpfs", "not one of anon|hugetlb|shm"},
        {"[card.0]\ntag_base = automatic\n", "tag_base = automatic", "not a number"},
        {"[card.0]\nblock_size =\n", "block_size", "empty value"},
        {"[card.0]\nshm_name = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
         "shm_name", "too long (58 characters, at most 48)"},
        {"[sim.0]\nrate = 2.5G\n", "rate = 2.5G", "needs a unit"},
        {"[sim.0]\nrate = 0chunks/s\n", "rate", "more than 0"},
        {"[sim.0]\nrate = 5000GB/s\n", "rate = 5000GB/s", "out of range"},
        {"[sim.0]\nerr_crc = 1.5\n", "err_crc = 1.5", "within 0..1"},
        {"[sim.0]\nerr_crc = often\n", "err_crc = often", "not a number"},
        {"[sim.0]\nelinks = 0\n", "elinks = 0", "out of range (allowed: 1..2048)"},
        {"[sim.0]\nelinks = 2049\n", "elinks = 2049", "out of range"},
        {"[readout]\nqueue_size = 1000\n", "queue_size = 1000", "not a power of two"},
        {"[readout]\nlog_level = verbose\n", "log_level = verbose", "not one of error|warn|info|debug"},
        {"[fabric]\nprovider =\n", "[fabric] provider", "empty value"},
        {"[fabric]\nport = 65536\n", "port = 65536", "out of range (allowed: 1..65535)"},
        {"[fabric]\naddress = a\tb\n", "address", "control character"},
        {"[fabric]\naddress = 10.0.0.256\n", "address = 10.0.0.256", "not an IPv4 address"},
        {"[fabric]\naddress = 10.0.0\n", "address = 10.0.0", "not an IPv4 address"},
        {"[fabric]\naddress = fe80:::1\n", "address = fe80:::1", "not an IPv6 address"},
        {"[fabric]\naddress = [::1]\n", "address = [::1]", "without brackets"},
        {"[fabric]\naddress = daq_host\n", "address = daq_host", "nor a host name"},
        {"[fabric]\naddress = -daq.cern.ch\n", "address = -daq.cern.ch", "nor a host name"},
        {"[fabric]\naddress = daq..cern.ch\n", "address = daq..cern.ch", "nor a host name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "; line 1\n%s", bad[i].text);
        expect_error_at(text, 3, bad[i].key, bad[i].what);
    }
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_long_lines(void)
{
    char *value = repeat('a', 190);
    char *comment200 = repeat('#', 200);
    char *comment201 = repeat('#', 201);
    char text[2048];
    /* line 3: 204 characters; line 5 must still be reported as line 5 */
    snprintf(text, sizeof text, "[card.0]\n[sim.0]\nreplay_file = %s\n%s\nseed = x\n", value,
             comment200);
    expect_error_at(text, 3, "[sim.0] replay_file", "line too long (204 characters, at most 200)");
    expect_error_at(text, 5, "seed = x", "not a number");
    struct result r = load_text(text, NULL, 0);
    CU_ASSERT_EQUAL(r.err.count, 2); /* the 200-character comment on line 4 is fine */
    free(r.log);
    snprintf(text, sizeof text, "[card.0]\n%s\n", comment201);
    expect_error_at(text, 2, "", "line too long (201 characters, at most 200)");
    /* a key line of exactly 200 characters, inline comment included, is fine */
    snprintf(text, sizeof text, "[card.0]\n[sim.0]\nseed = 5 ;%s\n", comment200 + 10);
    CU_ASSERT_EQUAL(strlen(strstr(text, "seed")) - 1, 200);
    expect_ok(load_text(text, NULL, 0));
    CU_ASSERT_EQUAL(cfg.sim[0].seed, 5);
    free(value);
    free(comment200);
    free(comment201);
}

/* Not files: each refused at once by the loader itself, without blocking at
 * open (a FIFO with no writer) or reading on (devices never end). */
static void expect_refused_path(const char *path, const char *what)
{
    struct result r = load_path(path, NULL, 0);
    char where[320];
    snprintf(where, sizeof where, "%s: is %s, not a regular file: refused", path, what);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    CU_ASSERT_EQUAL(r.err.count, 1);
    if (!log_has(r.log, where, "", "")) fprintf(stderr, "\nexpected '%s' in:\n%s", where, r.log);
    CU_ASSERT(log_has(r.log, where, "", ""));
    free(r.log);
}

static void test_not_files(void)
{
    expect_refused_path("/dev/zero", "a character device");
    expect_refused_path("/dev/urandom", "a character device");
    const char *fifo = scratch_path("fifo.ini");
    CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
    expect_refused_path(fifo, "a FIFO");
    /* a regular file whose second line never ends: reading stops at the limit */
    const char *path = scratch_path("endless.ini");
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("[card.0]\n", f);
    for (int i = 0; i < 1000000; i++) fputc('a', f);
    fputs("\n[fabrik]\n", f); /* never reached: would be a second error */
    fclose(f);
    struct result r = load_path(path, NULL, 0);
    char where[320];
    snprintf(where, sizeof where, "%s:2: line longer than 4096 characters", path);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    CU_ASSERT(log_has(r.log, where, "stopped reading it here", ""));
    CU_ASSERT_EQUAL(r.err.count, 1);
    free(r.log);
}

/* One rule for files and -o: blanks around key and value are dropped the same
 * way, quoted values are refused the same way, and -o has no comments. */
static void test_quotes_and_blanks(void)
{
    expect_ok(load_text("[card.0]\n[fabric]\nport =   5   \nprovider = tcp\n", NULL, 0));
    unsigned file_port = cfg.fabric.port;
    const char *blanks[] = {"fabric.port= 5", " fabric.provider =tcp "};
    expect_ok(load_text("[card.0]\n", blanks, 2));
    CU_ASSERT_EQUAL(file_port, 5);
    CU_ASSERT_EQUAL(cfg.fabric.port, file_port);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.provider, "tcp");
    const char *quoted[] = {"\"tcp\"", "'tcp'", "\"tcp", "tcp'"};
    for (unsigned i = 0; i < 4; i++) {
        char text[128], ov[128];
        snprintf(text, sizeof text, "[card.0]\n[fabric]\nprovider = %s\n", quoted[i]);
        expect_error_at(text, 3, "[fabric] provider", "quotes are not part of the value");
        snprintf(ov, sizeof ov, "fabric.provider=%s", quoted[i]);
        expect_override_error("[card.0]\n", ov, "[fabric] provider", "quotes are not part of the value");
    }
    expect_error_at("[card.0]\n[fabric]\nport = \"5\"\n", 3, "[fabric] port", "quotes");
    expect_override_error("[card.0]\n", "fabric.address=127.0.0.1 ;x", "[fabric] address",
                          "-o takes no comments");
    /* in a file the same text is a value and a comment */
    expect_ok(load_text("[card.0]\n[fabric]\naddress = 127.0.0.1 ;x\n", NULL, 0));
    CU_ASSERT_STRING_EQUAL(cfg.fabric.address, "127.0.0.1");
}

static void test_structure_errors(void)
{
    expect_error_at("[card.0]\n[sim.1]\n", 2, "[sim.1]", "there is no [card.1]");
    expect_error_at("[card.0]\n[card.2]\n", 2, "[card.1] is missing",
                    "numbered 0..n-1 without gaps");
    expect_error_at("[card.3]\n", 1, "[card.0] is missing", "[card.3] is given");
    expect_override_error(NULL, "sim.1.elinks=4", "[sim.1]", "there is no [card.1]");
}

static void test_cross_errors(void)
{
    expect_error_at("[card.0]\nblock_format = abcd\n", 2, "[card.0] block_format",
                    "abcd needs block_size = 1k (block_size is 4k)");
    expect_ok(load_text("[card.0]\nblock_size = 1k\nblock_format = abce\nring_size = 1M\n"
                        "rd_update_bytes = 256k\n", NULL, 0));
    expect_error_at("[card.0]\nblock_size = 8k\nring_size = 4100k\n", 3, "[card.0] ring_size",
                    "4100k is not a multiple of block_size 8k");
    expect_error_at("[card.0]\nring_size = 12k\nrd_update_bytes = 4k\n", 2, "[card.0] ring_size",
                    "fewer than 4 blocks");
    expect_error_at("[card.0]\nring_size = 1M\n", 1, "[card.0] rd_update_bytes",
                    "more than half of ring_size 1M");
    expect_error_at("[card.0]\nmemory = hugetlb\nring_size = 3M\nrd_update_bytes = 4k\n", 3,
                    "ring_size", "multiple of 2M");
    expect_error_at("[card.0]\ntype = sim-process\n", 1, "[card.0] memory",
                    "type = sim-process needs memory = shm");
    expect_error_at("[card.0]\nmemory = shm\nshm_name =\n", 3, "[card.0] shm_name", "empty");
    expect_error_at("[card.0]\nshm_name = a/b\n", 2, "shm_name", "may hold only");
    expect_error_at("[card.0]\nshm_name = .hidden\n", 2, "shm_name", "must not start with '.'");
    expect_error_at("[card.0]\n[sim.0]\nchunk_size_min = 2k\n", 3, "[sim.0] chunk_size_min",
                    "larger than chunk_size_max 1k");
    expect_error_at("[card.0]\n[sim.0]\nreplay_file = /nonexistent/blocks.raw\n", 3,
                    "replay_file", "cannot read '/nonexistent/blocks.raw'");
    expect_error_at("[card.0]\ntag_base = 18446744073709551615\n", 2, "tag_base",
                    "passes the largest tag");
    expect_error_at("[card.0]\n[card.1]\ntag_base = 4\n", 3, "[card.1] tag_base",
                    "overlap the tags 0..7 of [card.0]");
    expect_error_at("[card.0]\nmemory = shm\nshm_name = ring\n[card.1]\nmemory = shm\nshm_name = ring\n",
                    6, "[card.1] shm_name", "also the shm_name of [card.0]");
    expect_error_at("[fabric]\ncq_size = 100\n", 2, "[fabric] cq_size",
                    "100 is less than tx_queue 256");
    expect_error_at("[fabric]\nbuffered_page_size = 1M\n", 1, "rx_buffer_size",
                    "cannot hold a page of buffered_page_size 1M");
    expect_error_at("[fabric]\nheartbeat = 5s\n", 2, "[fabric] heartbeat",
                    "not less than peer_timeout 3s");
    /* tags of different cards that do not overlap are fine */
    expect_ok(load_text("[card.0]\n[card.1]\ntag_base = 8\n", NULL, 0));
}

/* ==== [mode.N]: send modes of tag ranges ==== */

static void test_mode_rules(void)
{
    expect_ok(load_text("[mode.0]\ntags = 0-3\nmode = buffered\n"
                        "[mode.1]\ntags = 0x10 - 0x1f\nmode = auto\nbuffered_threshold = 1k\n"
                        "[mode.2]\ntags = 0x20\nmode = zerocopy\n"
                        "[mode.3]\ntags = 0-18446744073709551615\nmode = auto\n", NULL, 0));
    CU_ASSERT_EQUAL(cfg.nmodes, 4);
    const struct rci_mode_rule *r = cfg.mode_rule;
    CU_ASSERT(r[0].first == 0 && r[0].last == 3 && r[0].mode == RCI_MODE_BUFFERED);
    CU_ASSERT(r[1].first == 16 && r[1].last == 31 && r[1].mode == RCI_MODE_AUTO);
    CU_ASSERT_EQUAL(r[1].buffered_threshold, 1024);
    CU_ASSERT(r[2].first == 32 && r[2].last == 32 && r[2].mode == RCI_MODE_ZEROCOPY);
    CU_ASSERT(r[3].first == 0 && r[3].last == UINT64_MAX);
    CU_ASSERT_EQUAL(r[3].buffered_threshold, 16384);
    CU_ASSERT_STRING_EQUAL(r[1].tags, "0x10 - 0x1f"); /* kept as written */
    /* overrides create rules and beat the file */
    const char *ov[] = {"mode.0.tags=0-3", "mode.1.tags=4-7", "mode.1.mode=buffered"};
    expect_ok(load_text("[mode.0]\ntags = 100\nmode = auto\n", ov, 3));
    CU_ASSERT_EQUAL(cfg.nmodes, 2);
    CU_ASSERT(cfg.mode_rule[0].first == 0 && cfg.mode_rule[0].last == 3);
    CU_ASSERT_EQUAL(cfg.mode_rule[0].mode, RCI_MODE_AUTO);
    CU_ASSERT(cfg.mode_rule[1].first == 4 && cfg.mode_rule[1].last == 7);
    CU_ASSERT_EQUAL(cfg.mode_rule[1].mode, RCI_MODE_BUFFERED);
}

static void test_mode_rule_errors(void)
{
    expect_error_at("[mode.0]\ntags = 3-x\nmode = buffered\n", 2, "[mode.0] tags = 3-x",
                    "not a number");
    expect_error_at("[mode.0]\nmode = buffered\ntags = 7-3\n", 3, "[mode.0] tags = 7-3",
                    "the first tag 7 is larger than the last 3");
    expect_error_at("[mode.0]\ntags = 1-2-3\nmode = auto\n", 2, "[mode.0] tags",
                    "expected first-last or one tag");
    expect_error_at("[mode.0]\ntags = -3\nmode = auto\n", 2, "[mode.0] tags",
                    "a tag is missing around '-'");
    expect_error_at("[mode.0]\ntags = 0-0x1ffffffffffffffff\nmode = auto\n", 2, "[mode.0] tags",
                    "more than 64 bits");
    expect_error_at("[mode.0]\ntags = 0-3\nmode = fast\n", 3, "[mode.0] mode = fast",
                    "not one of zerocopy|buffered|auto");
    expect_error_at("[mode.0]\ntags = 0-3\nmode = auto\nbuffered_threshold = 0\n", 4,
                    "[mode.0] buffered_threshold", "out of range");
    expect_error_at("[mode.0]\ntags = 0-3\nmode = auto\n[mode.2]\ntags = 5\nmode = auto\n", 4,
                    "[mode.1] is missing", "numbered 0..n-1 without gaps ([mode.2] is given)");
    expect_error_at("[mode.0]\ntag = 0-3\n", 2, "[mode.0] tag",
                    "unknown key (did you mean 'tags'?)");
    expect_error_at("[mode.0]\nelinks = 4\n", 2, "[mode.0] elinks", "belongs in [sim.N]");
    expect_error_at("[mode.16]\n", 1, "[mode.16]", "index must be a number 0..15");
    expect_error_at("[modes.0]\n", 1, "[modes.0]", "did you mean [mode.0]?");
    /* a rule must say which tags and which mode (located at its header) */
    expect_error_at("[readout]\n[mode.0]\nmode = buffered\n", 2, "[mode.0] tags", "missing");
    expect_error_at("[readout]\n[mode.0]\ntags =\nmode = buffered\n", 2, "[mode.0] tags",
                    "missing");
    expect_error_at("[mode.0]\ntags = 5\n", 1, "[mode.0] mode", "missing");
    expect_override_error(NULL, "mode.0.tags=5-1", "[mode.0] tags = 5-1", "larger than the last 1");
    expect_override_error(NULL, "mode.0.mode=auto", "[mode.0] tags", "missing");
}

/* A rule whose every tag an earlier rule decides can never apply. */
static void test_mode_rule_shadowed(void)
{
    expect_error_at("[mode.0]\ntags = 0-100\nmode = auto\n[mode.1]\ntags = 10-20\nmode = buffered\n",
                    5, "[mode.1] tags", "10-20 never applies: every tag of it is decided by "
                    "[mode.0] 0-100 before it");
    /* by the union of two earlier rules, each holding only a part */
    expect_error_at("[mode.0]\ntags = 0-5\nmode = auto\n[mode.1]\ntags = 6-10\nmode = auto\n"
                    "[mode.2]\ntags = 3-8\nmode = buffered\n", 8, "[mode.2] tags",
                    "decided by [mode.0] 0-5, [mode.1] 6-10 before it");
    /* the same range twice; the full range at the top end */
    expect_error_at("[mode.0]\ntags = 7\nmode = auto\n[mode.1]\ntags = 7\nmode = buffered\n", 5,
                    "[mode.1] tags", "never applies");
    expect_error_at("[mode.0]\ntags = 0x10-0xffffffffffffffff\nmode = auto\n"
                    "[mode.1]\ntags = 0xffffffffffffffff\nmode = buffered\n", 5, "[mode.1] tags",
                    "never applies");
    expect_override_error("[mode.0]\ntags = 0-100\nmode = auto\n[mode.1]\nmode = buffered\n",
                          "mode.1.tags=50", "[mode.1] tags", "never applies");
    /* overlaps that leave the later rule some tags are fine: exceptions first, a hole */
    expect_ok(load_text("[mode.0]\ntags = 10-20\nmode = zerocopy\n[mode.1]\ntags = 0-100\nmode = auto\n",
                        NULL, 0));
    expect_ok(load_text("[mode.0]\ntags = 0-5\nmode = auto\n[mode.1]\ntags = 7-10\nmode = auto\n"
                        "[mode.2]\ntags = 0-10\nmode = buffered\n", NULL, 0));
    expect_ok(load_text("[mode.0]\ntags = 0-0xfffffffffffffffe\nmode = auto\n"
                        "[mode.1]\ntags = 0-0xffffffffffffffff\nmode = buffered\n", NULL, 0));
}

static void test_override_errors(void)
{
    expect_override_error("[card.0]\n", "card.0.block_size=1.5k", "[card.0] block_size = 1.5k",
                          "not a multiple of 1k");
    expect_override_error("[card.0]\n", "nodot=1", "", "expected section.key=value");
    expect_override_error("[card.0]\n", "card.0.block_size", "", "expected section.key=value");
    expect_override_error("[card.0]\n", "card.0.blocksize=4k", "[card.0] blocksize",
                          "did you mean 'block_size'?");
    expect_override_error("[card.0]\n", "card.9.block_size=4k", "[card.9]", "index must be");
    expect_override_error("[card.0]\n", "fabrc.port=1", "[fabrc]", "did you mean [fabric]?");
    expect_override_error(NULL, "card.0.memory=ram", "memory = ram", "not one of anon|hugetlb|shm");
    expect_override_error(NULL, "card.0.ring_size=", "ring_size", "empty value");
    /* printed as "provider = ;tcp", inih would read the value as a comment:
     * --check-config output must load back, so such a string is refused */
    expect_override_error(NULL, "fabric.provider=;tcp", "[fabric] provider", "';'");
    /* a cross-field error caused by an override is located at the override */
    expect_override_error("[card.0]\n", "card.0.block_format=abcd", "[card.0] block_format",
                          "needs block_size = 1k");
    const char *twice[] = {"readout.queue_size=64", "readout.queue_size=128"};
    struct result r = load_path(NULL, twice, 2);
    CU_ASSERT(log_has(r.log, "-o readout.queue_size=128: ", "duplicate key",
                      "first given at -o readout.queue_size=64"));
    free(r.log);
}

static void test_file_errors_and_failure_state(void)
{
    struct result r = load_path("/nonexistent/ringcast.ini", NULL, 0);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    CU_ASSERT(log_has(r.log, "/nonexistent/ringcast.ini: cannot open", "No such file", ""));
    free(r.log);
    const char *dir = scratch_path("dir");
    CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
    r = load_path(dir, NULL, 0);
    CU_ASSERT_EQUAL(r.rc, -EINVAL);
    CU_ASSERT(log_has(r.log, dir, ": is a directory, not a configuration file", ""));
    free(r.log);
    rmdir(dir);
    /* a failed load leaves nothing half-configured, and err may be NULL */
    CU_ASSERT_EQUAL(rci_config_load(&cfg, write_file("[card.0]\n[card.1]\nring_size = 1x\n"), NULL,
                                   0, NULL, NULL), -EINVAL);
    CU_ASSERT_EQUAL(cfg.ncards, 0);
    CU_ASSERT_EQUAL(cfg.card[0].ring_size, 0);
    CU_ASSERT_EQUAL(cfg.fabric.port, 0);
    /* every error of a file is reported, the first in err */
    r = load_text("[card.0]\nblock_size = 1x\nring_size = 2x\n[nosuch]\n", NULL, 0);
    CU_ASSERT_EQUAL(r.err.count, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err.msg, "block_size = 1x"));
    free(r.log);
}

/* ==== printing ==== */

static bool same_rule(const struct rci_mode_rule *a, const struct rci_mode_rule *b)
{
    return strcmp(a->tags, b->tags) == 0 && a->first == b->first && a->last == b->last &&
           a->mode == b->mode && a->buffered_threshold == b->buffered_threshold;
}

static bool same_values(const struct rci_config *a, const struct rci_config *b)
{
    if (a->ncards != b->ncards || a->nmodes != b->nmodes) return false;
    for (unsigned i = 0; i < a->nmodes; i++)
        if (!same_rule(&a->mode_rule[i], &b->mode_rule[i])) return false;
    if (memcmp(&a->daemon, &b->daemon, sizeof a->daemon) != 0) return false;
    if (memcmp(&a->fabric, &b->fabric, sizeof a->fabric) != 0) return false;
    for (unsigned i = 0; i < a->ncards; i++)
        if (memcmp(&a->card[i], &b->card[i], sizeof a->card[i]) != 0 ||
            memcmp(&a->sim[i], &b->sim[i], sizeof a->sim[i]) != 0)
            return false;
    return true;
}

static char *print_to_string(void (*print)(FILE *))
{
    char *text;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    print(f);
    fclose(f);
    return text;
}

/* Is line (after "# ") the header of s's instance 0 or one of its "key = value" lines? */
static bool is_commented_setting(const char *line, const struct rci_cfg_section *s)
{
    char header[40];
    snprintf(header, sizeof header, "[%s.0]\n", s->name);
    if (strncmp(line, header, strlen(header)) == 0) return true;
    for (size_t k = 0; k < s->nkeys; k++) {
        size_t n = strlen(s->keys[k].key);
        if (strncmp(line, s->keys[k].key, n) == 0 && strncmp(line + n, " = ", 3) == 0) return true;
    }
    return false;
}

/* The example with the commented-out instance of s made active. */
static char *uncomment_section(const char *example, const struct rci_cfg_section *s)
{
    char *out = malloc(strlen(example) + 1), *o = out;
    CU_ASSERT_FATAL(out != NULL);
    bool in_section = false;
    for (const char *line = example; *line;) {
        size_t n = strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n');
        if (line[0] == '[') in_section = false;
        if (strncmp(line, "# ", 2) == 0 && is_commented_setting(line + 2, s) &&
            (in_section || line[2] == '[')) {
            in_section = true;
            line += 2;
            n -= 2;
        }
        memcpy(o, line, n);
        o += n;
        line += n;
    }
    *o = '\0';
    return out;
}

static void test_example_round_trip(void)
{
    static struct rci_config defaults;
    CU_ASSERT_FATAL(rci_config_load(&defaults, NULL, NULL, 0, stderr, NULL) == 0);
    char *example = print_to_string(rci_config_print_example);
    expect_ok(load_text(example, NULL, 0));
    CU_ASSERT_EQUAL(cfg.ncards, 1);
    CU_ASSERT(cfg.has_sim[0]);
    defaults.ncards = 1;
    CU_ASSERT(same_values(&cfg, &defaults));
    CU_ASSERT_EQUAL(cfg.nmodes, 0); /* the [mode.0] example is commented out */
    /* every key appears as "key = ..." in its section ("# key = ..." if commented out) */
    for (unsigned s = 0; s < RCI_CFG_NSECTIONS; s++)
        for (size_t k = 0; k < rci_cfg_sections[s]->nkeys; k++) {
            char needle[80];
            snprintf(needle, sizeof needle, "\n%s%s =",
                     rci_cfg_sections[s]->example_commented ? "# " : "",
                     rci_cfg_sections[s]->keys[k].key);
            CU_ASSERT_PTR_NOT_NULL(strstr(example, needle));
        }
    /* uncommented, the example rule is valid */
    char *uncommented = uncomment_section(example, &rci_cfg_section_mode);
    expect_ok(load_text(uncommented, NULL, 0));
    CU_ASSERT_EQUAL(cfg.nmodes, 1);
    CU_ASSERT_EQUAL(cfg.mode_rule[0].first, 0);
    CU_ASSERT_EQUAL(cfg.mode_rule[0].last, 3);
    CU_ASSERT_EQUAL(cfg.mode_rule[0].mode, RCI_MODE_BUFFERED);
    free(uncommented);
    free(example);
}

static void test_print_round_trip(void)
{
    const char *text = "[readout]\nlog_level = warn\nstats_interval = 250ms\nqueue_size = 64\n"
                       "[mode.0]\ntags = 0x10-0x1f\nmode = auto\nbuffered_threshold = 1k\n"
                       "[mode.1]\ntags = 7\nmode = zerocopy\n"
                       "[fabric]\nprovider = tcp;ofi_rxm\nendpoint = rdm\naddress = 10.0.0.1\n"
                       "port = 7000\nflush_timeout = 1500us\n"
                       "[card.0]\nblock_size = 1k\nblock_format = abce\nring_size = 3M\n"
                       "rd_update_bytes = 1536\ntag_base = 0x1000000\n"
                       "[sim.0]\nrate = 2.5GB/s\nerr_crc = 0.1\nerr_truncated = 1e-6\n"
                       "chunk_size_min = 100\nchunk_size_max = 70000\nrun_chunks = 1000000\n"
                       "seed = 18446744073709551615\n"
                       "[card.1]\nmemory = shm\nshm_name = other\ntype = sim-process\n"
                       "[sim.1]\nrate = 3.3Mchunks/s\nfill = none\nreplay_loop = true\n";
    static struct rci_config first;
    struct result r = load_text(text, NULL, 0);
    expect_ok(r);
    memcpy(&first, &cfg, sizeof first);
    char *printed;
    size_t len;
    FILE *f = open_memstream(&printed, &len);
    rci_config_print(&first, f);
    fclose(f);
    expect_ok(load_text(printed, NULL, 0));
    CU_ASSERT(same_values(&first, &cfg));
    CU_ASSERT_PTR_NOT_NULL(strstr(printed, "rate = 2.5GB/s\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(printed, "tag_base = 0x1000000\n"));   /* tags print as hex */
    CU_ASSERT_PTR_NOT_NULL(strstr(printed, "replay_file =\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(printed, "[mode.1]\ntags = 7\nmode = zerocopy\n"));
    CU_ASSERT_EQUAL(first.nmodes, 2);
    free(printed);
}

static void test_help_lists_everything(void)
{
    char *help = print_to_string(rci_config_print_help);
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "[card.N]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "[sim.N]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "[mode.N]  (N = 0..15)"));
    for (unsigned s = 0; s < RCI_CFG_NSECTIONS; s++)
        for (size_t k = 0; k < rci_cfg_sections[s]->nkeys; k++) {
            const struct rci_cfg_key *key = &rci_cfg_sections[s]->keys[k];
            char needle[80];
            snprintf(needle, sizeof needle, "  %s ", key->key);
            CU_ASSERT_PTR_NOT_NULL(strstr(help, needle));
            CU_ASSERT_PTR_NOT_NULL(strstr(help, key->help));
        }
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "abcd|abce|c0ce"));
    CU_ASSERT_PTR_NOT_NULL(strstr(help, "1k..64k, multiple of 1k"));
    free(help);
}

/* ==== the schema covers the structs ==== */

struct span {
    const char *field;
    size_t offset, size, align;
};

static int by_offset(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Rows (and implicit members) sorted by offset must be laid out exactly as C
 * lays out consecutive members: any other gap is a member without a row, any
 * overlap two rows for one member. */
static void check_layout(const struct rci_cfg_section *s)
{
    struct span spans[RCI_CFG_MAX_KEYS + 4];
    size_t n = 0;
    for (size_t i = 0; i < s->nkeys; i++)
        spans[n++] = (struct span){s->keys[i].field, s->keys[i].offset, s->keys[i].size,
                                   s->keys[i].align};
    for (size_t i = 0; i < s->nimplicit; i++)
        spans[n++] = (struct span){s->implicit[i].field, s->implicit[i].offset,
                                   s->implicit[i].size, s->implicit[i].align};
    qsort(spans, n, sizeof spans[0], by_offset);
    size_t end = 0, max_align = 1;
    for (size_t i = 0; i < n; i++) {
        bool ok = spans[i].offset == align_up(end, spans[i].align);
        if (!ok) fprintf(stderr, "\n[%s] %s at %zu, expected %zu: a member without a row?\n",
                         s->name, spans[i].field, spans[i].offset, align_up(end, spans[i].align));
        CU_ASSERT(ok);
        end = spans[i].offset + spans[i].size;
        if (spans[i].align > max_align) max_align = spans[i].align;
    }
    CU_ASSERT_EQUAL(s->struct_size, align_up(end, max_align));
    CU_ASSERT_EQUAL(s->struct_align, max_align);
}

#ifdef __clang__
/* clang can list a struct's members: compare their names with the rows. */
static char dump[16384];
static size_t dump_len;

static int dump_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dump + dump_len, sizeof dump - dump_len, fmt, ap);
    va_end(ap);
    if (n > 0) dump_len += (size_t)n < sizeof dump - dump_len ? (size_t)n : 0;
    return n;
}

static bool field_is(const char *row_field, const char *member)
{
    size_t n = strlen(member);
    return strncmp(row_field, member, n) == 0 && (row_field[n] == '\0' || row_field[n] == '.');
}

/* Rows of a member: 1 for a plain member, one per field of a nested struct
 * (rows named "member.field"). */
static unsigned rows_for_field(const struct rci_cfg_section *s, const char *field)
{
    unsigned n = 0;
    for (size_t i = 0; i < s->nkeys; i++) n += field_is(s->keys[i].field, field);
    for (size_t i = 0; i < s->nimplicit; i++) n += field_is(s->implicit[i].field, field);
    return n;
}

static bool is_nested(const struct rci_cfg_section *s, const char *field)
{
    for (size_t i = 0; i < s->nkeys; i++)
        if (field_is(s->keys[i].field, field) && strcmp(s->keys[i].field, field) != 0)
            return true;
    return false;
}

/* Top-level member lines are those indented like the first one; the name is
 * the word before " : " (clang 14) or " = " (clang 15+). */
static void check_dumped_members(const struct rci_cfg_section *s)
{
    unsigned members = 0, rows = 0;
    size_t top_indent = (size_t)-1;
    char *save, *line = strtok_r(dump, "\n", &save); /* "struct x {" */
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        size_t indent = strspn(line, " ");
        if (line[indent] == '}' || line[indent] == '\0') continue;
        if (top_indent == (size_t)-1) top_indent = indent;
        if (indent != top_indent) continue;
        char *sep = strstr(line, " : ");
        if (!sep) sep = strstr(line, " = ");
        if (!sep) continue;
        *sep = '\0';
        char *name = strrchr(line, ' ');
        name = name ? name + 1 : line + indent;
        members++;
        unsigned n = rows_for_field(s, name);
        rows += n;
        if (n != 1 && !(n > 1 && is_nested(s, name)))
            fprintf(stderr, "\n[%s] member %s: %u rows\n", s->name, name, n);
        CU_ASSERT(n == 1 || (n > 1 && is_nested(s, name)));
    }
    CU_ASSERT(members > 0);
    CU_ASSERT_EQUAL(rows, s->nkeys + s->nimplicit);
}

#define DUMP_AND_CHECK(type, section)                                         \
    do {                                                                      \
        type zero_ = {0};                                                     \
        dump_len = 0;                                                         \
        __builtin_dump_struct(&zero_, &dump_printf);                          \
        check_dumped_members(section);                                        \
    } while (0)
#endif

static void test_schema_covers_structs(void)
{
    CU_ASSERT_PTR_EQUAL(rci_cfg_sections[0], &rci_cfg_section_readout);
    for (unsigned s = 0; s < RCI_CFG_NSECTIONS; s++) check_layout(rci_cfg_sections[s]);
    CU_ASSERT_EQUAL(rci_cfg_section_readout.struct_size, sizeof(struct rci_daemon_params));
    CU_ASSERT_EQUAL(rci_cfg_section_fabric.struct_size, sizeof(struct rci_fabric_params));
    CU_ASSERT_EQUAL(rci_cfg_section_card.struct_size, sizeof(struct rci_card_params));
    CU_ASSERT_EQUAL(rci_cfg_section_sim.struct_size, sizeof(struct rci_sim_params));
    CU_ASSERT_EQUAL(rci_cfg_section_mode.struct_size, sizeof(struct rci_mode_rule));
    CU_ASSERT_EQUAL(rci_cfg_section_metrics.struct_size, sizeof(struct rci_metrics_params));
#ifdef __clang__
    DUMP_AND_CHECK(struct rci_daemon_params, &rci_cfg_section_readout);
    DUMP_AND_CHECK(struct rci_fabric_params, &rci_cfg_section_fabric);
    DUMP_AND_CHECK(struct rci_card_params, &rci_cfg_section_card);
    DUMP_AND_CHECK(struct rci_sim_params, &rci_cfg_section_sim);
    DUMP_AND_CHECK(struct rci_mode_rule, &rci_cfg_section_mode);
#endif
}

static uint64_t member_max(size_t size)
{
    return size >= 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
}

static void check_row(const struct rci_cfg_section *s, const struct rci_cfg_key *k)
{
    CU_ASSERT(k->help && k->help[0] && !strchr(k->help, '\n'));
    CU_ASSERT_PTR_EQUAL(rci_cfg_find_key(s, k->key), k); /* names are unique */
    CU_ASSERT(k->def != NULL);
    if (k->example) { /* what the example file shows must load */
        union rci_cfg_value v;
        char why[256];
        CU_ASSERT_EQUAL(rci_cfg_parse_value(k, k->example, &v, why, sizeof why), 0);
    }
    switch (k->type) {
    case RCI_CFG_UINT:
    case RCI_CFG_SIZE:
    case RCI_CFG_DURATION:
        CU_ASSERT(k->min <= k->max && k->max <= member_max(k->size));
        break;
    case RCI_CFG_STRING: /* "key = value" must fit one line, the value its array */
        CU_ASSERT(k->max < k->size && strlen(k->key) + 3 + k->max < RCI_CFG_MAX_LINE);
        break;
    case RCI_CFG_ENUM:
        CU_ASSERT(k->choices && k->size == sizeof(unsigned));
        break;
    case RCI_CFG_RATE: CU_ASSERT(k->size == sizeof(struct rci_rate) && k->min >= 1); break;
    case RCI_CFG_PROB: CU_ASSERT(k->size == sizeof(double)); break;
    case RCI_CFG_BOOL: CU_ASSERT(k->size == sizeof(bool)); break;
    }
}

static void test_schema_rows(void)
{
    for (unsigned s = 0; s < RCI_CFG_NSECTIONS; s++) {
        const struct rci_cfg_section *sec = rci_cfg_sections[s];
        CU_ASSERT(sec->nkeys <= RCI_CFG_MAX_KEYS);
        for (size_t k = 0; k < sec->nkeys; k++) check_row(sec, &sec->keys[k]);
    }
    /* every line of the example fits the line limit */
    char *example = print_to_string(rci_config_print_example);
    for (char *line = example; *line;) {
        size_t n = strcspn(line, "\n");
        CU_ASSERT(n <= RCI_CFG_MAX_LINE);
        line += n + (line[n] == '\n');
    }
    free(example);
}

static void register_tests(void)
{
    RCI_SUITE("units", {"size ok", test_size_ok}, {"size errors", test_size_errors},
             {"duration", test_duration}, {"rate", test_rate}, {"bool uint double", test_bool_uint},
             {"formatters round trip", test_formatters}, {"edit distance", test_edit_distance});
    RCI_SUITE("load", {"defaults only", test_defaults_only},
             {"empty sections count", test_empty_sections_count}, {"file syntax", test_file_syntax},
             {"enum order matches C", test_enum_order_matches_c},
             {"override success", test_override_success}, {"mode rules", test_mode_rules});
    RCI_SUITE("errors", {"unknown section and key", test_unknown_section_and_key},
             {"syntax", test_syntax_errors}, {"duplicates", test_duplicates},
             {"bad values", test_bad_values}, {"long lines", test_long_lines},
             {"not files", test_not_files},
             {"quotes and blanks", test_quotes_and_blanks},
             {"structure", test_structure_errors}, {"cross-field", test_cross_errors},
             {"overrides", test_override_errors}, {"mode rules", test_mode_rule_errors},
             {"mode rule never applies", test_mode_rule_shadowed},
             {"file errors, failure state", test_file_errors_and_failure_state});
    RCI_SUITE("print", {"example round trip", test_example_round_trip},
             {"print round trip", test_print_round_trip},
             {"help lists everything", test_help_lists_everything});
    RCI_SUITE("schema", {"covers the structs", test_schema_covers_structs},
             {"rows", test_schema_rows});
}

RCI_CUNIT_MAIN(register_tests)
