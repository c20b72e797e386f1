/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wire.c — the wire checkers, decoders and encoders (net/wire.c).
 *
 * Every message under test is copied so that it ends exactly at a page that
 * is mapped PROT_NONE: a checker reading one byte past `len` gets SIGSEGV and
 * the test program dies, so "never reads past len" is really tested. */
#include "net/wire.h"
#include "tests/unit/cunit_main.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- guarded buffer ---------------------------------------------------- */

#define GUARD_AREA (64u * 1024u)
static uint8_t *guard_base;   /* GUARD_AREA readable bytes, then a PROT_NONE page */

static int guard_setup(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, GUARD_AREA + (size_t)page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m + GUARD_AREA, (size_t)page, PROT_NONE))
        return -1;
    guard_base = m;
    return 0;
}

/* Copy len bytes so that they end right before the inaccessible page. */
static const uint8_t *guarded(const void *msg, size_t len)
{
    uint8_t *p = guard_base + GUARD_AREA - len;
    memcpy(p, msg, len);
    return p;
}

static int check_guarded(const void *msg, size_t len, enum rci_wire_dir dir, enum rci_wire_error *why)
{
    return rci_wire_check(guarded(msg, len), len, dir, why);
}

/* ---- message fixtures -------------------------------------------------- */

static uint8_t msg[RCI_WIRE_MAX_CONTROL + 64];

static size_t make_hello(void)
{
    uint8_t addr[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    return (size_t)rci_wire_build_hello(msg, sizeof msg, 0x1122334455667788ull, 8192, addr, sizeof addr);
}
static size_t make_welcome(void) { return (size_t)rci_wire_build_welcome(msg, sizeof msg, 4096, 500, 77); }
static size_t make_sub(void)
{
    struct rci_wire_range r[3] = {{0, 63}, {1000, 1000}, {5000, UINT64_MAX}};
    return (size_t)rci_wire_build_sub(msg, sizeof msg, RCI_MSG_SUBSCRIBE, 9, r, 3);
}
static size_t make_sub_ack(void) { return (size_t)rci_wire_build_sub_ack(msg, sizeof msg, 9, RCI_SUB_OK); }
/* A middle fragment: 100 payload bytes at offset 200 of a 1000-byte chunk. */
static size_t make_data(void)
{
    ssize_t h = rci_wire_build_data_hdr(msg, sizeof msg, 42, 3, 1000, 200, 2, 10, 100);
    for (int i = 0; i < 100; i++)
        msg[h + i] = (uint8_t)i;
    return (size_t)h + 100;
}
static size_t make_page(void)
{
    rci_wire_page_init(msg, sizeof msg);
    uint8_t p[13] = "hello, page!";
    rci_wire_page_append(msg, sizeof msg, 1, 0, p, 5);
    rci_wire_page_append(msg, sizeof msg, 2, 1, p, 8);
    rci_wire_page_append(msg, sizeof msg, 3, 0, NULL, 0);
    return (size_t)rci_wire_page_append(msg, sizeof msg, 4, 2, p, 13);
}
static size_t make_heartbeat(void) { return (size_t)rci_wire_build_heartbeat(msg, sizeof msg, 123456789); }
static size_t make_bye(void) { return (size_t)rci_wire_build_bye(msg, sizeof msg, RCI_BYE_NORMAL); }
static size_t make_bye_handled(void) { return (size_t)rci_wire_build_bye_handled(msg, sizeof msg, 123456); }

struct fixture {
    const char *name;
    enum rci_msg_type type;
    enum rci_wire_dir dir;
    size_t (*make)(void);
    int resizable;  /* a middle DATA fragment stays valid at any payload size */
    size_t valid_prefix;  /* an optional tail: cut here (length patched) it is still valid */
};

static const struct fixture fixtures[] = {
    {"hello", RCI_MSG_HELLO, RCI_WIRE_TO_PUBLISHER, make_hello, 0},
    {"welcome", RCI_MSG_WELCOME, RCI_WIRE_TO_SUBSCRIBER, make_welcome, 0},
    {"subscribe", RCI_MSG_SUBSCRIBE, RCI_WIRE_TO_PUBLISHER, make_sub, 0},
    {"sub_ack", RCI_MSG_SUB_ACK, RCI_WIRE_TO_SUBSCRIBER, make_sub_ack, 0},
    {"data", RCI_MSG_DATA, RCI_WIRE_TO_SUBSCRIBER, make_data, 1},
    {"page", RCI_MSG_PAGE, RCI_WIRE_TO_SUBSCRIBER, make_page, 0},
    {"heartbeat", RCI_MSG_HEARTBEAT, RCI_WIRE_TO_SUBSCRIBER, make_heartbeat, 0},
    {"bye", RCI_MSG_BYE, RCI_WIRE_TO_PUBLISHER, make_bye, 0},
    {"bye with handled count", RCI_MSG_BYE, RCI_WIRE_TO_PUBLISHER, make_bye_handled, 0, 16},
};
#define NFIX (sizeof fixtures / sizeof fixtures[0])

static void set_len(uint8_t *m, uint32_t len)
{
    uint32_t le = htole32(len);
    memcpy(m + 4, &le, 4);
}
static void put32(uint8_t *m, size_t off, uint32_t v)
{
    v = htole32(v);
    memcpy(m + off, &v, 4);
}
static void put16(uint8_t *m, size_t off, uint16_t v)
{
    v = htole16(v);
    memcpy(m + off, &v, 2);
}
static void put64(uint8_t *m, size_t off, uint64_t v)
{
    v = htole64(v);
    memcpy(m + off, &v, 8);
}

static enum rci_wire_error why_of(const uint8_t *m, size_t len, enum rci_wire_dir dir)
{
    enum rci_wire_error why = RCI_WIRE_OK;
    int type = check_guarded(m, len, dir, &why);
    CU_ASSERT((why != RCI_WIRE_OK) == (type == 0));
    return why;
}

/* ---- tests: valid messages --------------------------------------------- */

static void test_every_fixture_is_valid(void)
{
    for (size_t i = 0; i < NFIX; i++) {
        size_t len = fixtures[i].make();
        enum rci_wire_error why = RCI_WIRE_SHORT;
        CU_ASSERT_EQUAL(check_guarded(msg, len, fixtures[i].dir, &why), (int)fixtures[i].type);
        CU_ASSERT_EQUAL(why, RCI_WIRE_OK);
    }
}

static void test_direction_is_enforced(void)
{
    for (size_t i = 0; i < NFIX; i++) {
        size_t len = fixtures[i].make();
        enum rci_wire_dir other = fixtures[i].dir == RCI_WIRE_TO_PUBLISHER ? RCI_WIRE_TO_SUBSCRIBER
                                                                          : RCI_WIRE_TO_PUBLISHER;
        int both_ways = fixtures[i].type == RCI_MSG_HEARTBEAT || fixtures[i].type == RCI_MSG_BYE;
        CU_ASSERT_EQUAL(why_of(msg, len, other), both_ways ? RCI_WIRE_OK : RCI_WIRE_BAD_TYPE);
    }
}

/* ---- tests: header errors for every type -------------------------------- */

static void test_header_errors_every_type(void)
{
    for (size_t i = 0; i < NFIX; i++) {
        const struct fixture *f = &fixtures[i];
        size_t len = f->make();
        msg[0] ^= 0xff;
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_MAGIC);
        msg[0] ^= 0xff;
        msg[2] = RCI_WIRE_VERSION + 1;   /* HELLO: hdr.version != max_version */
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_VERSION);
        msg[2] = RCI_WIRE_VERSION;
        uint8_t type = msg[3];
        msg[3] = 0;
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_TYPE);
        msg[3] = RCI_MSG_TYPE_MAX + 1;
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_TYPE);
        msg[3] = 0xff;
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_TYPE);
        msg[3] = type;
        set_len(msg, (uint32_t)len + 1);
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_LENGTH);
        set_len(msg, (uint32_t)len - 1);
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_LENGTH);
        set_len(msg, UINT32_MAX);
        CU_ASSERT_EQUAL(why_of(msg, len, f->dir), RCI_WIRE_BAD_LENGTH);
        /* One trailing byte, header length patched to match. */
        f->make();
        msg[len] = 0;
        set_len(msg, (uint32_t)len + 1);
        enum rci_wire_error e = why_of(msg, len + 1, f->dir);
        if (f->resizable) {
            CU_ASSERT_EQUAL(e, RCI_WIRE_OK);
        } else {
            CU_ASSERT(e == RCI_WIRE_BAD_LENGTH || e == RCI_WIRE_BAD_FIELD);
        }
    }
}

/* Every truncation is rejected: as received (hdr.length still says the full
 * size) and with hdr.length patched to the truncated size. */
static void test_truncated_at_every_length(void)
{
    for (size_t i = 0; i < NFIX; i++) {
        const struct fixture *f = &fixtures[i];
        size_t full = f->make();
        uint8_t copy[sizeof msg];
        memcpy(copy, msg, full);
        for (size_t len = 0; len < full; len++) {
            enum rci_wire_error e = why_of(copy, len, f->dir);
            CU_ASSERT(e == RCI_WIRE_SHORT || (len >= 8 && e == RCI_WIRE_BAD_LENGTH));
            if (len >= 8) {
                memcpy(msg, copy, full);
                set_len(msg, (uint32_t)len);
                e = why_of(msg, len, f->dir);
                if ((f->resizable && len > sizeof(struct rci_wire_data)) || len == f->valid_prefix) {
                    CU_ASSERT_EQUAL(e, RCI_WIRE_OK);
                } else {
                    CU_ASSERT_NOT_EQUAL(e, RCI_WIRE_OK);
                }
            }
        }
        CU_ASSERT_EQUAL(why_of(copy, full, f->dir), RCI_WIRE_OK);
    }
}

static void test_short_fixed_part(void)
{
    /* A header that claims exactly its 8 bytes is too short for every type. */
    for (size_t i = 0; i < NFIX; i++) {
        fixtures[i].make();
        set_len(msg, 8);
        CU_ASSERT_EQUAL(why_of(msg, 8, fixtures[i].dir), RCI_WIRE_SHORT);
    }
    CU_ASSERT_EQUAL(rci_wire_check(NULL, 100, RCI_WIRE_TO_PUBLISHER, NULL), 0);
}

/* ---- tests: fields of each type ---------------------------------------- */

static void test_hello_fields(void)
{
    size_t len = make_hello();
    struct rci_wire_hello h;
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, &h), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(h.client_id, 0x1122334455667788ull);
    CU_ASSERT_EQUAL(h.rx_buffer_size, 8192);
    CU_ASSERT_EQUAL(h.addr_len, 16);
    CU_ASSERT_EQUAL(h.min_version, RCI_WIRE_MIN_VERSION);
    CU_ASSERT_EQUAL(h.max_version, RCI_WIRE_VERSION);
    CU_ASSERT_EQUAL(memcmp(msg + sizeof h, "\x01\x02\x03\x04", 4), 0);

    msg[8] = 0;                                   /* min_version 0 */
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_VERSION);
    make_hello();
    msg[8] = 2; msg[9] = 1; msg[2] = 1;           /* min > max */
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_VERSION);
    make_hello();
    msg[9] = 3; msg[2] = 3;                       /* a future peer offering 1..3 is valid */
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_OK);
    make_hello();
    put16(msg, 10, RCI_WIRE_MAX_ADDR + 1);
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    make_hello();
    put16(msg, 10, 17);                           /* addr_len longer than the message */
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_hello();
    put16(msg, 10, 15);                           /* one byte left over */
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_hello();
    put32(msg, 12, RCI_WIRE_MIN_RX_BUFFER - 1);
    CU_ASSERT_EQUAL(rci_wire_check_hello(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
}

static void test_welcome_fields(void)
{
    size_t len = make_welcome();
    struct rci_wire_welcome w;
    CU_ASSERT_EQUAL(rci_wire_check_welcome(guarded(msg, len), len, &w), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(w.max_tags, 4096);
    CU_ASSERT_EQUAL(w.heartbeat_ms, 500);
    CU_ASSERT_EQUAL(w.publisher_id, 77);
    put32(msg, 12, 0);
    CU_ASSERT_EQUAL(rci_wire_check_welcome(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    make_hello();   /* a HELLO given to the WELCOME checker */
    CU_ASSERT_EQUAL(rci_wire_check_welcome(guarded(msg, 24), 24, NULL), RCI_WIRE_BAD_TYPE);
}

static void test_sub_fields(void)
{
    size_t len = make_sub();
    struct rci_wire_sub s;
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, &s), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(s.hdr.type, RCI_MSG_SUBSCRIBE);
    CU_ASSERT_EQUAL(s.request_id, 9);
    CU_ASSERT_EQUAL(s.count, 3);
    struct rci_wire_range r = rci_wire_sub_range(msg, 2);
    CU_ASSERT_EQUAL(r.first, 5000);
    CU_ASSERT_EQUAL(r.last, UINT64_MAX);

    put32(msg, 12, 0);
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    put32(msg, 12, RCI_WIRE_MAX_RANGES + 1);
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    put32(msg, 12, UINT32_MAX);   /* count*16 would overflow 32 bits */
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    put32(msg, 12, 2);            /* count disagrees with the length */
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    put32(msg, 12, 4);
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_sub();
    put64(msg, 16 + 16, 1001);    /* range 1: first 1001 > last 1000 */
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);

    struct rci_wire_range all = {0, UINT64_MAX};
    len = (size_t)rci_wire_build_sub(msg, sizeof msg, RCI_MSG_UNSUBSCRIBE, 1, &all, 1);
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, &s), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(s.hdr.type, RCI_MSG_UNSUBSCRIBE);

    /* The largest SUBSCRIBE is exactly RCI_WIRE_MAX_CONTROL bytes. */
    static struct rci_wire_range many[RCI_WIRE_MAX_RANGES + 1];
    for (uint32_t i = 0; i <= RCI_WIRE_MAX_RANGES; i++)
        many[i] = (struct rci_wire_range){2ull * i, 2ull * i};
    len = (size_t)rci_wire_build_sub(msg, sizeof msg, RCI_MSG_SUBSCRIBE, 2, many, RCI_WIRE_MAX_RANGES);
    CU_ASSERT_EQUAL(len, RCI_WIRE_MAX_CONTROL);
    CU_ASSERT_EQUAL(rci_wire_check_sub(guarded(msg, len), len, NULL), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(rci_wire_build_sub(msg, sizeof msg, RCI_MSG_SUBSCRIBE, 2, many, RCI_WIRE_MAX_RANGES + 1),
                    -EINVAL);
}

static void test_sub_ack_fields(void)
{
    size_t len = (size_t)rci_wire_build_sub_ack(msg, sizeof msg, 31, RCI_SUB_TOO_MANY_TAGS);
    struct rci_wire_sub_ack a;
    CU_ASSERT_EQUAL(rci_wire_check_sub_ack(guarded(msg, len), len, &a), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(a.request_id, 31);
    CU_ASSERT_EQUAL(a.status, RCI_SUB_TOO_MANY_TAGS);
    put32(msg, 12, RCI_SUB_REFUSED + 1);
    CU_ASSERT_EQUAL(rci_wire_check_sub_ack(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
}

/* Build a DATA header with arbitrary (possibly invalid) fragment fields. */
static size_t raw_data(uint32_t chunk_len, uint32_t off, uint16_t idx, uint16_t cnt, uint32_t payload)
{
    make_data();
    put32(msg, 20, chunk_len);
    put32(msg, 24, off);
    put16(msg, 28, idx);
    put16(msg, 30, cnt);
    set_len(msg, 40 + payload);
    return 40 + payload;
}

static enum rci_wire_error data_why(size_t len) { return rci_wire_check_data(guarded(msg, len), len, NULL); }

static void test_data_fields(void)
{
    size_t len = make_data();
    struct rci_wire_data d;
    CU_ASSERT_EQUAL(rci_wire_check_data(guarded(msg, len), len, &d), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(d.tag, 42);
    CU_ASSERT_EQUAL(d.flags, 3);
    CU_ASSERT_EQUAL(d.chunk_len, 1000);
    CU_ASSERT_EQUAL(d.frag_offset, 200);
    CU_ASSERT_EQUAL(d.frag_index, 2);
    CU_ASSERT_EQUAL(d.frag_count, 10);
    CU_ASSERT_EQUAL(d.seq, 0);
    CU_ASSERT_EQUAL(msg[40 + 99], 99);
    rci_wire_set_stream_seq(msg, 0xfedcba98u);
    CU_ASSERT_EQUAL(rci_wire_check_data(guarded(msg, len), len, &d), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(d.seq, 0xfedcba98u);
    CU_ASSERT_EQUAL(rci_wire_stream_seq(msg), 0xfedcba98u);
    CU_ASSERT_EQUAL(msg[32], 0x98);                   /* little-endian at offset 32 */
    CU_ASSERT_EQUAL(d.frag_count, 10);                /* stamping touched nothing else */
    put32(msg, 36, 1);                                /* reserved */
    CU_ASSERT_EQUAL(data_why(len), RCI_WIRE_BAD_FIELD);

    CU_ASSERT_EQUAL(data_why(raw_data(100, 0, 0, 1, 100)), RCI_WIRE_OK);   /* whole chunk */
    CU_ASSERT_EQUAL(data_why(raw_data(0, 0, 0, 1, 0)), RCI_WIRE_OK);       /* empty chunk */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 60, 1, 2, 40)), RCI_WIRE_OK);   /* last fragment */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 0, 0, 0, 100)), RCI_WIRE_BAD_FIELD);  /* count 0 */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 0, 2, 2, 50)), RCI_WIRE_BAD_FIELD);   /* index = count */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 0, 0, 1, 99)), RCI_WIRE_BAD_FIELD);   /* short whole */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 0, 0, 1, 101)), RCI_WIRE_BAD_FIELD);  /* past chunk */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 10, 0, 3, 10)), RCI_WIRE_BAD_FIELD);  /* first not at 0 */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 50, 2, 3, 40)), RCI_WIRE_BAD_FIELD);  /* last short */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 90, 1, 3, 20)), RCI_WIRE_BAD_FIELD);  /* past end */
    CU_ASSERT_EQUAL(data_why(raw_data(100, 50, 1, 3, 0)), RCI_WIRE_BAD_FIELD);   /* empty frag */
    CU_ASSERT_EQUAL(data_why(raw_data(UINT32_MAX, UINT32_MAX, 1, 3, 8)), RCI_WIRE_BAD_FIELD);
    CU_ASSERT_EQUAL(data_why(raw_data(UINT32_MAX, UINT32_MAX - 8, 1, 3, 8)), RCI_WIRE_OK);
}

static void test_page_fields_and_walk(void)
{
    size_t len = make_page();
    struct rci_wire_page pg;
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, &pg), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(pg.records, 4);
    CU_ASSERT_EQUAL(len, rci_wire_page_length(msg));
    CU_ASSERT_EQUAL(len, 16 + (16 + 8) + (16 + 8) + 16 + (16 + 16));
    const uint8_t *g = guarded(msg, len);
    size_t pos = 0;
    struct rci_wire_record_view rec;
    const uint32_t want_len[4] = {5, 8, 0, 13};
    int n = 0;
    while (rci_wire_page_next(g, len, &pos, &rec)) {
        CU_ASSERT_EQUAL(rec.tag, (uint64_t)n + 1);
        CU_ASSERT_EQUAL(rec.len, want_len[n]);
        CU_ASSERT_EQUAL(memcmp(rec.payload, "hello, page!", rec.len), 0);
        n++;
    }
    CU_ASSERT_EQUAL(n, 4);

    make_page();
    put32(msg, 8, 0);                     /* no records */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    make_page();
    CU_ASSERT_EQUAL(rci_wire_stream_seq(msg), 0);
    rci_wire_set_stream_seq(msg, 7);       /* the sequence number sits at offset 12 */
    CU_ASSERT_EQUAL(msg[12], 7);
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, &pg), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(pg.seq, 7);
    CU_ASSERT_EQUAL(pg.records, 4);
    make_page();
    put32(msg, 8, 5);                     /* more records than present */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_page();
    put32(msg, 8, UINT32_MAX);
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_page();
    put32(msg, 8, 3);                     /* fewer: the last record is trailing garbage */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_page();
    put32(msg, 16 + 12, 9);               /* record 0 len 5 -> 9: padding moves, lengths break */
    CU_ASSERT_NOT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_OK);
    make_page();
    put32(msg, 16 + 12, 1u << 31);        /* record length far past the end */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_page();
    put32(msg, 16 + 12, UINT32_MAX);      /* padding arithmetic must not wrap */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_LENGTH);
    make_page();
    msg[16 + 16 + 6] = 1;                 /* a padding byte of record 0 */
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);

    /* Appending stops cleanly when full; the page stays valid. */
    uint8_t small[64];
    CU_ASSERT_EQUAL(rci_wire_page_init(small, sizeof small), 16);
    CU_ASSERT_EQUAL(rci_wire_page_append(small, sizeof small, 7, 0, "abcdefgh", 8), 40);
    CU_ASSERT_EQUAL(rci_wire_page_append(small, sizeof small, 8, 0, "abcdefghi", 9), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_check_page(guarded(small, 40), 40, NULL), RCI_WIRE_OK);
}

static void test_heartbeat_and_bye_fields(void)
{
    size_t len = make_heartbeat();
    struct rci_wire_heartbeat h;
    CU_ASSERT_EQUAL(rci_wire_check_heartbeat(guarded(msg, len), len, &h), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(h.sent_ns, 123456789);
    len = (size_t)rci_wire_build_bye(msg, sizeof msg, RCI_BYE_PROTOCOL);
    struct rci_wire_bye b;
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, &b), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(b.reason, RCI_BYE_PROTOCOL);
    put32(msg, 8, RCI_BYE_PROTOCOL + 1);
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    put32(msg, 8, 0);
    put32(msg, 12, 5);
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    /* BYE(refused) says why; a cause this build does not know is still valid. */
    len = (size_t)rci_wire_build_bye_refused(msg, sizeof msg, RCI_REFUSED_RX_BUFFER);
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, &b), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(b.reason, RCI_BYE_REFUSED);
    CU_ASSERT_EQUAL(b.detail, RCI_REFUSED_RX_BUFFER);
    put32(msg, 12, 99);
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, &b), RCI_WIRE_OK);
    char code[24];
    CU_ASSERT_STRING_EQUAL(rci_wire_refusal_name(b.detail, code, sizeof code), "cause 99");
    CU_ASSERT_STRING_EQUAL(rci_wire_refusal_name(RCI_REFUSED_ALLOW_LIST, code, sizeof code),
                           "address not in [fabric] allow");
    put32(msg, 12, RCI_REFUSED_MAX_DETAIL + 1);
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, NULL), RCI_WIRE_BAD_FIELD);
    CU_ASSERT_EQUAL(rci_wire_build_bye_refused(msg, sizeof msg, (enum rci_refusal)0x10000), -EINVAL);
}

/* Version 3: WELCOME says which version was negotiated; a subscriber's
 * orderly BYE carries the chunks it handled only in version 3. */
static void test_bye_handled_count(void)
{
    size_t len = make_bye_handled();
    CU_ASSERT_EQUAL(len, 24);
    CU_ASSERT_EQUAL(msg[2], 3);
    struct rci_wire_bye b;
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, &b), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(b.reason, RCI_BYE_NORMAL);
    uint64_t handled = 0;
    CU_ASSERT(rci_wire_bye_handled(guarded(msg, len), len, &handled));
    CU_ASSERT_EQUAL(handled, 123456);
    put64(msg, 16, UINT64_MAX);   /* any count is valid: the publisher bounds it by what it sent */
    CU_ASSERT_EQUAL(rci_wire_check_bye(guarded(msg, len), len, NULL), RCI_WIRE_OK);
    /* A version-2 header cannot carry the count: what a 2-only peer expects. */
    msg[2] = 2;
    CU_ASSERT_EQUAL(why_of(msg, len, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_LENGTH);
    msg[2] = 3;
    /* Only an orderly leave has a count. */
    put32(msg, 8, RCI_BYE_PROTOCOL);
    CU_ASSERT_EQUAL(why_of(msg, len, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_FIELD);
    put32(msg, 8, RCI_BYE_REFUSED);
    put32(msg, 12, RCI_REFUSED_FULL);
    CU_ASSERT_EQUAL(why_of(msg, len, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_FIELD);
    /* Garbage lengths around it. */
    make_bye_handled();
    for (size_t n = 17; n < 24; n++) {
        set_len(msg, (uint32_t)n);
        CU_ASSERT_EQUAL(why_of(msg, n, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_LENGTH);
    }
    msg[24] = 0;
    set_len(msg, 25);
    CU_ASSERT_EQUAL(why_of(msg, 25, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_LENGTH);
    msg[2] = RCI_WIRE_VERSION + 1;
    set_len(msg, 24);
    CU_ASSERT_EQUAL(why_of(msg, 24, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_BAD_VERSION);
    /* A plain BYE has no count (version 2 or 3). */
    len = make_bye();
    CU_ASSERT_EQUAL(msg[2], RCI_WIRE_BASE_VERSION);
    CU_ASSERT(!rci_wire_bye_handled(msg, len, &handled));
    msg[2] = 3;
    CU_ASSERT_EQUAL(why_of(msg, len, RCI_WIRE_TO_PUBLISHER), RCI_WIRE_OK);
    uint8_t small[23];
    CU_ASSERT_EQUAL(rci_wire_build_bye_handled(small, sizeof small, 1), -ENOSPC);

    /* WELCOME of each version; only 3 takes the count. */
    len = (size_t)rci_wire_build_welcome_version(msg, sizeof msg, 3, 0, 100, 5);
    CU_ASSERT_EQUAL(len, 24);
    struct rci_wire_welcome w;
    CU_ASSERT_EQUAL(rci_wire_check_welcome(guarded(msg, len), len, &w), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(w.hdr.version, 3);
    CU_ASSERT(rci_wire_welcome_takes_bye_handled(msg));
    len = (size_t)rci_wire_build_welcome(msg, sizeof msg, 0, 100, 5);
    CU_ASSERT_EQUAL(msg[2], 2);
    CU_ASSERT_EQUAL(why_of(msg, len, RCI_WIRE_TO_SUBSCRIBER), RCI_WIRE_OK);
    CU_ASSERT(!rci_wire_welcome_takes_bye_handled(msg));
    CU_ASSERT_EQUAL(rci_wire_build_welcome_version(msg, sizeof msg, 1, 0, 100, 5), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_welcome_version(msg, sizeof msg, RCI_WIRE_VERSION + 1, 0, 100, 5), -EINVAL);
    /* HELLO offers up to 3 (a 2-only publisher negotiates 2 from it). */
    len = make_hello();
    struct rci_wire_hello h;
    CU_ASSERT_EQUAL(rci_wire_check_hello(msg, len, &h), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(h.min_version, 2);
    CU_ASSERT_EQUAL(h.max_version, 3);
}

/* ---- tests: encoders, negotiation, names -------------------------------- */

static void test_encoder_limits(void)
{
    uint8_t b[16];
    uint8_t addr[RCI_WIRE_MAX_ADDR + 1] = {0};
    CU_ASSERT_EQUAL(rci_wire_build_hello(b, 23, 1, 4096, NULL, 0), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_hello(msg, sizeof msg, 1, 4096, addr, RCI_WIRE_MAX_ADDR + 1), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_hello(msg, sizeof msg, 1, RCI_WIRE_MIN_RX_BUFFER - 1, NULL, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_hello(msg, sizeof msg, 1, 4096, NULL, 4), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_hello(msg, sizeof msg, 1, 4096, addr, RCI_WIRE_MAX_ADDR),
                    24 + RCI_WIRE_MAX_ADDR);
    CU_ASSERT_EQUAL(rci_wire_build_welcome(b, sizeof b, 1, 1, 1), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_welcome(msg, sizeof msg, 1, 0, 1), -EINVAL);
    struct rci_wire_range bad = {5, 4}, good = {4, 5};
    CU_ASSERT_EQUAL(rci_wire_build_sub(msg, sizeof msg, RCI_MSG_SUBSCRIBE, 1, &bad, 1), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_sub(msg, sizeof msg, RCI_MSG_SUBSCRIBE, 1, &good, 0), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_sub(msg, sizeof msg, RCI_MSG_DATA, 1, &good, 1), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_sub(b, sizeof b, RCI_MSG_SUBSCRIBE, 1, &good, 1), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_sub_ack(b, 15, 1, RCI_SUB_OK), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_sub_ack(b, sizeof b, 1, (enum rci_sub_status)9), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_data_hdr(b, sizeof b, 1, 0, 10, 0, 0, 1, 10), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_data_hdr(msg, sizeof msg, 1, 0, 10, 0, 0, 1, 9), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_data_hdr(msg, sizeof msg, 1, 0, 10, 0, 1, 1, 10), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_build_heartbeat(b, 15, 0), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_bye(b, 15, RCI_BYE_NORMAL), -ENOSPC);
    CU_ASSERT_EQUAL(rci_wire_build_bye(b, sizeof b, (enum rci_bye_reason)3), -EINVAL);
    CU_ASSERT_EQUAL(rci_wire_page_init(b, 15), -ENOSPC);
}

static void test_byte_order_is_little_endian(void)
{
    rci_wire_build_heartbeat(msg, sizeof msg, 0x0102030405060708ull);
    const uint8_t want[16] = {0x43, 0x52, RCI_WIRE_BASE_VERSION, RCI_MSG_HEARTBEAT, 16, 0, 0, 0,
                              8, 7, 6, 5, 4, 3, 2, 1};
    CU_ASSERT_EQUAL(memcmp(msg, want, sizeof want), 0);
}

static void test_negotiate(void)
{
    /* Versions 2 and 3: a version-1 peer (no stream sequence numbers) is
     * refused; a version-2 peer gets 2 (no BYE count), a newer one 3. */
    CU_ASSERT_EQUAL(rci_wire_negotiate(1, 1), 0);
    CU_ASSERT_EQUAL(rci_wire_negotiate(1, 2), 2);
    CU_ASSERT_EQUAL(rci_wire_negotiate(2, 2), 2);
    CU_ASSERT_EQUAL(rci_wire_negotiate(1, 5), RCI_WIRE_VERSION);
    CU_ASSERT_EQUAL(rci_wire_negotiate(2, 5), 3);
    CU_ASSERT_EQUAL(rci_wire_negotiate(3, 5), 3);
    CU_ASSERT_EQUAL(rci_wire_negotiate(4, 5), 0);
    CU_ASSERT_EQUAL(rci_wire_negotiate(0, 0), 0);
    CU_ASSERT_EQUAL(rci_wire_negotiate(3, 1), 0);
}

static void test_error_names(void)
{
    CU_ASSERT_STRING_EQUAL(rci_wire_error_name(RCI_WIRE_OK), "ok");
    CU_ASSERT_STRING_EQUAL(rci_wire_error_name(RCI_WIRE_BAD_FIELD), "bad_field");
    CU_ASSERT_STRING_EQUAL(rci_wire_error_name(RCI_WIRE_ERROR_KINDS), "unknown");
    for (int e = 0; e < RCI_WIRE_ERROR_KINDS; e++)
        CU_ASSERT_STRING_NOT_EQUAL(rci_wire_error_name((enum rci_wire_error)e), "unknown");
}

/* ---- tests: garbage ----------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* An accepted message must be self-consistent: its header says its size. */
static void assert_accepted_is_sane(const uint8_t *m, size_t len, int type, enum rci_wire_dir dir)
{
    uint32_t hlen;
    memcpy(&hlen, m + 4, 4);
    CU_ASSERT_EQUAL(le32toh(hlen), len);
    CU_ASSERT_EQUAL(m[3], type);
    CU_ASSERT(type >= 1 && type <= RCI_MSG_TYPE_MAX);
    (void)dir;
}

/* 10^5 random buffers; half of them get a plausible header so that the
 * checks behind the header run on random bodies too. */
static void test_random_garbage(void)
{
    uint8_t buf[512];
    unsigned accepted = 0;
    for (int n = 0; n < 100000; n++) {
        size_t len = rng() % sizeof buf;
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rng();
        if ((n & 1) && len >= 8) {
            buf[0] = 0x43; buf[1] = 0x52;
            buf[2] = (uint8_t)(rng() % 4 ? RCI_WIRE_VERSION : rng());
            buf[3] = (uint8_t)(1 + rng() % RCI_MSG_TYPE_MAX);
            set_len(buf, (uint32_t)len);
        }
        enum rci_wire_dir dir = (enum rci_wire_dir)(n >> 1 & 1);
        enum rci_wire_error why;
        const uint8_t *g = guarded(buf, len);
        int type = rci_wire_check(g, len, dir, &why);
        CU_ASSERT((type == 0) == (why != RCI_WIRE_OK));
        CU_ASSERT((unsigned)why < RCI_WIRE_ERROR_KINDS);
        if (type > 0) {
            accepted++;
            assert_accepted_is_sane(g, len, type, dir);
        }
    }
    /* Random bodies behind a valid header pass now and then (heartbeats). */
    CU_ASSERT(accepted > 0);
}

/* Valid messages with random bytes changed: rejected or still sane; the
 * checkers never fault. */
static void test_mutated_messages(void)
{
    uint8_t copy[sizeof msg];
    for (int n = 0; n < 50000; n++) {
        const struct fixture *f = &fixtures[n % NFIX];
        size_t len = f->make();
        memcpy(copy, msg, len);
        int flips = 1 + (int)(rng() % 3);
        for (int i = 0; i < flips; i++)
            copy[rng() % len] ^= (uint8_t)(1u << (rng() % 8));
        enum rci_wire_error why;
        const uint8_t *g = guarded(copy, len);
        int type = rci_wire_check(g, len, f->dir, &why);
        if (type > 0)
            assert_accepted_is_sane(g, len, type, f->dir);
        size_t pos = 0;
        struct rci_wire_record_view rec;
        while (type == RCI_MSG_PAGE && rci_wire_page_next(g, len, &pos, &rec)) {
            CU_ASSERT(rec.payload + rec.len <= g + len);
        }
    }
}

static void register_tests(void)
{
    if (guard_setup()) {
        fprintf(stderr, "cannot map the guard page\n");
        exit(2);
    }
    RCI_SUITE("wire",
             {"every fixture is valid", test_every_fixture_is_valid},
             {"direction is enforced", test_direction_is_enforced},
             {"header errors for every type", test_header_errors_every_type},
             {"truncated at every length", test_truncated_at_every_length},
             {"short fixed part", test_short_fixed_part},
             {"hello fields", test_hello_fields},
             {"welcome fields", test_welcome_fields},
             {"subscribe fields", test_sub_fields},
             {"sub ack fields", test_sub_ack_fields},
             {"data fields", test_data_fields},
             {"page fields and walk", test_page_fields_and_walk},
             {"heartbeat and bye fields", test_heartbeat_and_bye_fields},
             {"bye with the handled count (version 3)", test_bye_handled_count},
             {"encoder limits", test_encoder_limits},
             {"little-endian on the wire", test_byte_order_is_little_endian},
             {"version negotiation", test_negotiate},
             {"error names", test_error_names},
             {"random garbage", test_random_garbage},
             {"mutated messages", test_mutated_messages});
}

RCI_CUNIT_MAIN(register_tests)
