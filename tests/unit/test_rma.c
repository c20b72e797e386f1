/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rma.c — RMA delivery without a fabric: the placement and credit
 * arithmetic both sides share (net/rma_ring.[ch]), the subscriber's record
 * checks (net/sub_rma.[ch]: a writer simulated by memcpy into the ring, the
 * immediate data built as the publisher builds it), and the wire's RMA parts
 * (HELLO's ring, WELCOME's delivery, CREDIT); then the real publisher over
 * tcp;ofi_rxm with a raw client: a ring it can write is answered WELCOME
 * (delivery rma), one it cannot (a region wrapping the address space) is
 * refused at HELLO with BYE(refused, RMA region), counted and named. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/monotonic.h"
#include "net/fabric.h"
#include "net/publisher.h"
#include "net/rma_ring.h"
#include "net/sub_rma.h"
#include "net/wire.h"
#include "tests/unit/cunit_main.h"

/* ---- placement arithmetic ------------------------------------------------- */

static void test_place(void)
{
    uint64_t start = 1;
    CU_ASSERT(rci_rma_place(0, 1024, 40, &start));
    CU_ASSERT_EQUAL(start, 0);
    CU_ASSERT(rci_rma_place(1000, 1024, 24, &start));   /* ends exactly at the end */
    CU_ASSERT_EQUAL(start, 1000);
    CU_ASSERT(rci_rma_place(1000, 1024, 25, &start));   /* 32 B would straddle: next lap */
    CU_ASSERT_EQUAL(start, 1024);
    CU_ASSERT(rci_rma_place(2048 + 8, 1024, 1016, &start));
    CU_ASSERT_EQUAL(start, 2048 + 8);
    CU_ASSERT(rci_rma_place(2048 + 16, 1024, 1016, &start));
    CU_ASSERT_EQUAL(start, 3072);
    CU_ASSERT(rci_rma_place(3, 1024, 8, &start));       /* a stray position is rounded up */
    CU_ASSERT_EQUAL(start, 8);
    CU_ASSERT(rci_rma_place(5, 1024, 1024, &start));    /* the whole ring: next lap */
    CU_ASSERT_EQUAL(start, 1024);
    CU_ASSERT_FALSE(rci_rma_place(0, 1024, 1025, &start));   /* never fits */
    CU_ASSERT_FALSE(rci_rma_place(0, 1024, 0, &start));
    CU_ASSERT_FALSE(rci_rma_place(0, 0, 8, &start));
    CU_ASSERT_EQUAL(rci_rma_span(1), 8);
    CU_ASSERT_EQUAL(rci_rma_span(8), 8);
    CU_ASSERT_EQUAL(rci_rma_span(41), 48);
}

static void test_fits_and_credit(void)
{
    CU_ASSERT(rci_rma_fits(0, 1024, 0, 1024));          /* an empty ring takes all of it */
    CU_ASSERT_FALSE(rci_rma_fits(8, 1024, 0, 1024));
    CU_ASSERT(rci_rma_fits(1024, 1024, 1024, 1024));
    CU_ASSERT(rci_rma_fits(1024, 512, 512, 1024));
    CU_ASSERT_FALSE(rci_rma_fits(1024, 520, 512, 1024));
    CU_ASSERT_FALSE(rci_rma_fits(8, 8, 16, 1024));      /* a credit past the start is impossible */
    CU_ASSERT(rci_rma_credit_valid(0, 0, 0));
    CU_ASSERT(rci_rma_credit_valid(100, 200, 200));
    CU_ASSERT_FALSE(rci_rma_credit_valid(100, 99, 200));    /* going back */
    CU_ASSERT_FALSE(rci_rma_credit_valid(100, 208, 200));   /* past what was written */
    CU_ASSERT_EQUAL(rci_rma_max_record(65536, 0), 8192);
    CU_ASSERT_EQUAL(rci_rma_max_record(65536, 4096), 4096);
    CU_ASSERT_EQUAL(rci_rma_max_record(65536, 4099), 4096);
    CU_ASSERT_EQUAL(rci_rma_max_record(65536 + 8 * 7, 0), 8192);   /* 8-byte multiple */
}

static void test_imm(void)
{
    uint64_t offs[] = {0, 8, 4096, (32ull << 30) - 8};
    uint32_t lens[] = {40, 41, 8192, UINT32_MAX};
    for (unsigned i = 0; i < 4; i++) {
        uint64_t imm = rci_rma_imm(offs[i], lens[i]);
        CU_ASSERT_EQUAL(rci_rma_imm_offset(imm), offs[i]);
        CU_ASSERT_EQUAL(rci_rma_imm_len(imm), lens[i]);
    }
}

/* ---- the subscriber's record checks ---------------------------------------- */

#define RING 65536u

/* A simulated publisher: places records by the shared rule, honours credit,
 * and writes what fi_writemsg would (header + payload) straight into the ring. */
struct writer {
    uint64_t wpos, credit;
    uint32_t seq;
};

static uint8_t pattern(uint32_t seq, uint32_t i) { return (uint8_t)(seq * 31u + i * 7u + 1u); }

/* Build record seq with payload len at the writer's next place; returns the
 * immediate data, or 0 when the ring has no room (ignore_credit: write anyway). */
static uint64_t write_record(struct rci_sub_rma *r, struct writer *w, uint32_t payload, bool ignore_credit)
{
    uint32_t len = (uint32_t)sizeof(struct rci_wire_data) + payload;
    uint64_t start;
    CU_ASSERT_FATAL(rci_rma_place(w->wpos, RING, len, &start));
    if (!ignore_credit && !rci_rma_fits(start, len, w->credit, RING))
        return 0;
    uint64_t off = start % RING;
    uint8_t *p = r->mem + off;
    CU_ASSERT_FATAL(rci_wire_build_data_hdr(p, len, 5, 0, payload, 0, 0, 1, payload) ==
                    (ssize_t)sizeof(struct rci_wire_data));
    rci_wire_set_stream_seq(p, w->seq);
    for (uint32_t i = 0; i < payload; i++)
        p[sizeof(struct rci_wire_data) + i] = pattern(w->seq, i);
    w->wpos = start + rci_rma_span(len);
    w->seq++;
    return rci_rma_imm(off, len);
}

static bool payload_ok(const struct rci_sub_rma_record *rec, uint32_t seq)
{
    uint32_t payload = rec->len - (uint32_t)sizeof(struct rci_wire_data);
    for (uint32_t i = 0; i < payload; i++)
        if (rec->buf[sizeof(struct rci_wire_data) + i] != pattern(seq, i))
            return false;
    return rci_wire_stream_seq(rec->buf) == seq;
}

static void reader_open(struct rci_sub_rma *r)
{
    char err[200];
    CU_ASSERT_FATAL(rci_sub_rma_create(r, RING, err, sizeof err) == 0);
    rci_sub_rma_start(r);
    r->on = true;
}

/* 200 000 records of random sizes (48 B .. an eighth of the ring) through a
 * 64 KiB ring: every one arrives intact, in place, after hundreds of laps;
 * the writer never finds the ring full for long, since the reader gives a
 * quarter of the ring back at a time. */
static void test_wrap_many_sizes(void)
{
    struct rci_sub_rma r;
    reader_open(&r);
    struct writer w = {0};
    uint32_t next = 0;
    uint64_t max_payload = rci_rma_max_record(RING, 0) - sizeof(struct rci_wire_data);
    srand(7);
    unsigned stalls = 0, bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t payload = (uint32_t)((uint64_t)rand() % (max_payload + 1));
        uint64_t imm = write_record(&r, &w, payload, false);
        if (imm == 0) {   /* no room: the reader would have sent CREDIT by now */
            stalls++;
            uint64_t c = rci_sub_rma_credit_due(&r, true);
            CU_ASSERT_FATAL(c > w.credit);
            w.credit = c;
            r.credit_sent = c;
            imm = write_record(&r, &w, payload, false);
            CU_ASSERT_FATAL(imm != 0);
        }
        struct rci_sub_rma_record rec;
        int rc = rci_sub_rma_arrived(&r, imm, next, &rec);
        CU_ASSERT_EQUAL_FATAL(rc, 1);
        bad += !payload_ok(&rec, next);
        CU_ASSERT_EQUAL(rec.len, sizeof(struct rci_wire_data) + payload);
        next++;
        rci_sub_rma_release(&r, rec.key);
        uint64_t c = rci_sub_rma_credit_due(&r, false);
        if (c) {
            CU_ASSERT(rci_rma_credit_valid(w.credit, c, w.wpos));
            w.credit = c;
            r.credit_sent = c;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(r.skipped > 0);                 /* ends were skipped */
    CU_ASSERT(w.wpos / RING > 100);           /* many laps */
    CU_ASSERT(stalls < 200000 / 100);         /* quarter credits keep the writer going */
    rci_sub_rma_destroy(&r);
}

/* Completions out of order are held and taken in sequence. */
static void test_out_of_order(void)
{
    struct rci_sub_rma r;
    reader_open(&r);
    struct writer w = {0};
    uint64_t imm0 = write_record(&r, &w, 100, false);
    uint64_t imm1 = write_record(&r, &w, 200, false);
    uint64_t imm2 = write_record(&r, &w, 300, false);
    struct rci_sub_rma_record rec;
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, imm2, 0, &rec), 0);
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, imm1, 0, &rec), 0);
    CU_ASSERT_EQUAL(r.nheld, 2);
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, imm0, 0, &rec), 1);
    CU_ASSERT(payload_ok(&rec, 0));
    rci_sub_rma_release(&r, rec.key);
    CU_ASSERT_EQUAL(rci_sub_rma_next_held(&r, 1, &rec), 1);
    CU_ASSERT(payload_ok(&rec, 1));
    rci_sub_rma_release(&r, rec.key);
    CU_ASSERT_EQUAL(rci_sub_rma_next_held(&r, 2, &rec), 1);
    CU_ASSERT(payload_ok(&rec, 2));
    rci_sub_rma_release(&r, rec.key);
    CU_ASSERT_EQUAL(rci_sub_rma_next_held(&r, 3, &rec), 0);
    /* released out of order too: the key tracker advances over the prefix */
    CU_ASSERT_EQUAL(rci_sub_rma_credit_due(&r, true), w.wpos);
    rci_sub_rma_destroy(&r);
}

static void expect_bad(struct rci_sub_rma *r, uint64_t imm, uint32_t next, const char *why)
{
    struct rci_sub_rma_record rec;
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(r, imm, next, &rec), -EPROTO);
    CU_ASSERT(strstr(r->why, why) != NULL);
}

/* Every record the reader cannot verify is refused, never handed on. */
static void test_bad_records(void)
{
    struct rci_sub_rma r;
    reader_open(&r);
    struct writer w = {0};
    expect_bad(&r, rci_rma_imm(RING, 48), 0, "outside the ring");
    expect_bad(&r, rci_rma_imm(RING - 8, 48), 0, "outside the ring");
    expect_bad(&r, rci_rma_imm(0, 16), 0, "outside the ring");          /* shorter than a header */
    uint64_t imm = write_record(&r, &w, 64, false);
    r.mem[0] ^= 0xff;                                                   /* magic */
    expect_bad(&r, imm, 0, "header rejected");
    r.mem[0] ^= 0xff;
    expect_bad(&r, rci_rma_imm(0, 48 + 64), 0, "header rejected");       /* length disagrees */
    struct rci_sub_rma_record rec;
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, imm, 0, &rec), 1);
    rci_sub_rma_release(&r, rec.key);
    expect_bad(&r, imm, 1, "again");                                     /* sequence number 0 again */
    /* in turn but not where the rule puts it */
    struct writer skew = w;
    skew.wpos += 64;
    uint64_t imm_skewed = write_record(&r, &skew, 32, false);
    expect_bad(&r, imm_skewed, 1, "due at");
    rci_sub_rma_destroy(&r);

    /* a writer that ignores the credit overwrites space not released */
    reader_open(&r);
    w = (struct writer){0};
    uint32_t next = 0;
    uint64_t held_imm[16];
    unsigned n = 0;
    while ((held_imm[n] = write_record(&r, &w, 8000, false)) != 0)   /* fill the ring, nothing released */
        n++;
    CU_ASSERT(n >= 7);
    for (unsigned i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, held_imm[i], next, &rec), 1);
        next++;   /* taken, never released */
    }
    uint64_t over = write_record(&r, &w, 8000, true);
    expect_bad(&r, over, next, "not released");
    rci_sub_rma_destroy(&r);

    /* records while RMA delivery is off (before WELCOME said so) */
    reader_open(&r);
    r.on = false;
    expect_bad(&r, rci_rma_imm(0, 48), 0, "delivery is off");
    rci_sub_rma_destroy(&r);
}

static void test_ring_size_checked(void)
{
    struct rci_sub_rma r;
    char err[200];
    CU_ASSERT_EQUAL(rci_sub_rma_create(&r, 65536 + 4, err, sizeof err), -EINVAL);
    CU_ASSERT_EQUAL(rci_sub_rma_create(&r, 4096, err, sizeof err), -EINVAL);
    CU_ASSERT(strstr(err, "rma_ring_size") != NULL);
}

/* A new connection starts at a ring lap, whatever the last one left. */
static void test_reconnect_origin(void)
{
    struct rci_sub_rma r;
    reader_open(&r);
    struct writer w = {0};
    struct rci_sub_rma_record rec;
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, write_record(&r, &w, 1000, false), 0, &rec), 1);
    rci_sub_rma_release(&r, rec.key);
    rci_sub_rma_start(&r);   /* the publisher's positions start again from 0 */
    r.on = true;
    CU_ASSERT_EQUAL(r.base % RING, 0);
    CU_ASSERT(r.base > 0);
    w = (struct writer){0};
    CU_ASSERT_EQUAL(rci_sub_rma_arrived(&r, write_record(&r, &w, 500, false), 0, &rec), 1);
    CU_ASSERT(payload_ok(&rec, 0));
    rci_sub_rma_release(&r, rec.key);
    CU_ASSERT_EQUAL(rci_sub_rma_credit_due(&r, true), w.wpos);
    rci_sub_rma_destroy(&r);
}

/* ---- the wire's RMA parts ----------------------------------------------------- */

static void test_wire_rma(void)
{
    uint8_t buf[256];
    uint8_t addr[16] = {1, 2, 3};
    ssize_t len = rci_wire_build_hello(buf, sizeof buf, 77, 65536, addr, sizeof addr);
    CU_ASSERT_FATAL(len > 0);
    struct rci_wire_hello_rma out, in = {.base = 0x7f0000001000ull, .len = 1u << 20, .key = 0xabcdef};
    CU_ASSERT_FALSE(rci_wire_hello_rma(buf, (size_t)len, &out));
    ssize_t len2 = rci_wire_add_hello_rma(buf, sizeof buf, (size_t)len, &in);
    CU_ASSERT_EQUAL(len2, len + 24);
    CU_ASSERT_EQUAL(rci_wire_check(buf, (size_t)len2, RCI_WIRE_TO_PUBLISHER, NULL), RCI_MSG_HELLO);
    CU_ASSERT(rci_wire_hello_rma(buf, (size_t)len2, &out));
    CU_ASSERT(out.base == in.base && out.len == in.len && out.key == in.key);
    enum rci_wire_error why;
    CU_ASSERT_EQUAL(rci_wire_check(buf, (size_t)len2 - 1, RCI_WIRE_TO_PUBLISHER, &why), 0);
    buf[len + 8] = 0x04;   /* len 1 MiB + 4: not a multiple of 8 */
    CU_ASSERT_EQUAL(rci_wire_check_hello(buf, (size_t)len2, NULL), RCI_WIRE_BAD_FIELD);
    struct rci_wire_hello_rma small = {.len = 4096};
    CU_ASSERT_EQUAL(rci_wire_add_hello_rma(buf, sizeof buf, (size_t)len, &small), -EINVAL);

    len = rci_wire_build_welcome(buf, sizeof buf, 0, 1000, 99);
    struct rci_wire_welcome_rma w;
    CU_ASSERT_FALSE(rci_wire_welcome_rma(buf, (size_t)len, &w));
    len2 = rci_wire_add_welcome_rma(buf, sizeof buf, (size_t)len, RCI_DELIVERY_RMA, RCI_RMA_OK);
    CU_ASSERT_EQUAL(len2, 32);
    CU_ASSERT_EQUAL(rci_wire_check(buf, (size_t)len2, RCI_WIRE_TO_SUBSCRIBER, NULL), RCI_MSG_WELCOME);
    CU_ASSERT(rci_wire_welcome_rma(buf, (size_t)len2, &w));
    CU_ASSERT_EQUAL(w.delivery, RCI_DELIVERY_RMA);
    buf[24] = 2;   /* delivery 2 */
    CU_ASSERT_EQUAL(rci_wire_check_welcome(buf, (size_t)len2, NULL), RCI_WIRE_BAD_FIELD);

    len = rci_wire_build_credit(buf, sizeof buf, 123456);
    CU_ASSERT_EQUAL(len, 16);
    struct rci_wire_credit c;
    CU_ASSERT_EQUAL(rci_wire_check_credit(buf, (size_t)len, &c), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(c.read_pos, 123456);
    CU_ASSERT_EQUAL(rci_wire_check(buf, (size_t)len, RCI_WIRE_TO_PUBLISHER, NULL), RCI_MSG_CREDIT);
    CU_ASSERT_EQUAL(rci_wire_check(buf, (size_t)len, RCI_WIRE_TO_SUBSCRIBER, &why), 0);
    CU_ASSERT_EQUAL(why, RCI_WIRE_BAD_TYPE);
    CU_ASSERT_EQUAL(rci_wire_check_credit(buf, 15, NULL), RCI_WIRE_SHORT);
}

/* ---- the publisher's answer to HELLO's ring (raw RDM client) -------------- */

#define BUF 4096u

struct raw_client {
    struct rci_fabric f;
    fi_addr_t pub;
    uint8_t *tx, *rx;
    struct rci_fabric_mr txmr, rxmr;
    bool sent;
    int got;                   /* type of the first message received, 0 none */
    uint8_t msg[64];
    size_t msg_len;
};

static void fabric_params(struct rci_fabric_params *fp, uint16_t port)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->provider, sizeof fp->provider, "tcp;ofi_rxm");
    fp->endpoint = RCI_EP_RDM;
    snprintf(fp->address, sizeof fp->address, "127.0.0.1");
    fp->port = port;
    fp->header_slots = 16;
    fp->header_slot_size = 64;
    fp->flush_timeout_ns = 1000000ull;
    fp->peer_timeout_ns = 5000000000ull;
    fp->heartbeat_ns = 200000000ull;
    fp->max_subscribers = 4;
}

static void raw_open(struct raw_client *c, uint16_t port)
{
    struct rci_fabric_params fp;
    char err[256];
    fabric_params(&fp, port);
    memset(c, 0, sizeof *c);
    CU_ASSERT_EQUAL_FATAL(rci_fabric_open(&c->f, &fp, RCI_FABRIC_CONNECT, 64, err, sizeof err), 0);
    c->tx = aligned_alloc(4096, BUF);
    c->rx = aligned_alloc(4096, BUF);
    CU_ASSERT_EQUAL_FATAL(rci_fabric_av_insert(&c->f, c->f.info->dest_addr, c->f.info->dest_addrlen, &c->pub,
                                               err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rci_fabric_mr_reg(&c->f, c->tx, BUF, FI_SEND, c->f.ep, &c->txmr, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rci_fabric_mr_reg(&c->f, c->rx, BUF, FI_RECV, c->f.ep, &c->rxmr, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(fi_recv(c->f.ep, c->rx, BUF, c->rxmr.desc, FI_ADDR_UNSPEC, c->rx), 0);
}

static void raw_close(struct raw_client *c)
{
    rci_fabric_mr_close(&c->txmr);
    rci_fabric_mr_close(&c->rxmr);
    rci_fabric_close(&c->f);
    free(c->tx);
    free(c->rx);
}

/* HELLO with the ring `ring`; run publisher and client until an answer came. */
static void hello_and_answer(struct rci_publisher *p, struct raw_client *c, const struct rci_wire_hello_rma *ring)
{
    uint8_t addr[RCI_WIRE_MAX_ADDR];
    size_t alen = sizeof addr;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(rci_fabric_getname(&c->f, c->f.ep, addr, &alen, err, sizeof err), 0);
    ssize_t n = rci_wire_build_hello(c->tx, BUF, 42, BUF, addr, (uint16_t)alen);
    n = rci_wire_add_hello_rma(c->tx, BUF, (size_t)n, ring);
    CU_ASSERT_FATAL(n > 0);
    uint64_t end = rci_now_ns() + 10000000000ull;
    while (!c->got && rci_now_ns() < end) {
        rci_publisher_progress(p);
        if (!c->sent)
            c->sent = fi_send(c->f.ep, c->tx, (size_t)n, c->txmr.desc, c->pub, c->tx) == 0;
        struct rci_fabric_cqe e[8];
        int k = rci_fabric_cq_poll(&c->f, e, 8, err, sizeof err);
        for (int i = 0; i < k; i++) {
            if (e[i].context != c->rx || e[i].err)
                continue;
            c->got = rci_wire_check(c->rx, e[i].len, RCI_WIRE_TO_SUBSCRIBER, NULL);
            c->msg_len = e[i].len < sizeof c->msg ? e[i].len : sizeof c->msg;
            memcpy(c->msg, c->rx, c->msg_len);
        }
        usleep(200);
    }
}

static void no_send(void *arg, uint64_t key, int status) { (void)arg, (void)key, (void)status; }

static void test_publisher_answers_ring(void)
{
    uint16_t port = (uint16_t)(40000 + getpid() % 20000);
    struct rci_fabric_params fp;
    fabric_params(&fp, port);
    struct rci_publisher_callbacks cb = {.on_send_complete = no_send};
    struct rci_publisher *p = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(rci_publisher_create(&fp, &cb, &p, err, sizeof err), 0);
    CU_ASSERT_FATAL(rci_publisher_fabric(p)->rma);

    struct raw_client good;
    raw_open(&good, port);
    struct rci_wire_hello_rma ring = {.base = 0, .len = 1u << 20, .key = 5};
    hello_and_answer(p, &good, &ring);
    CU_ASSERT_EQUAL(good.got, RCI_MSG_WELCOME);
    struct rci_wire_welcome_rma w = {0};
    CU_ASSERT(rci_wire_welcome_rma(good.msg, good.msg_len, &w));
    CU_ASSERT_EQUAL(w.delivery, RCI_DELIVERY_RMA);

    struct raw_client bad;
    raw_open(&bad, port);
    struct rci_wire_hello_rma wraps = {.base = UINT64_MAX - 7, .len = 1u << 20, .key = 6};
    hello_and_answer(p, &bad, &wraps);
    CU_ASSERT_EQUAL(bad.got, RCI_MSG_BYE);
    struct rci_wire_bye bye = {0};
    CU_ASSERT_EQUAL(rci_wire_check_bye(bad.msg, bad.msg_len, &bye), RCI_WIRE_OK);
    CU_ASSERT_EQUAL(bye.reason, RCI_BYE_REFUSED);
    CU_ASSERT_EQUAL(bye.detail, RCI_REFUSED_RMA_REGION);
    char code[24];
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_wire_refusal_name(bye.detail, code, sizeof code), "RMA ring"));
    struct rci_publisher_stats st;
    rci_publisher_get_stats(p, &st);
    CU_ASSERT_EQUAL(st.rma_subscribers, 1);
    CU_ASSERT_EQUAL(st.rma_refused_region, 1);
    CU_ASSERT_EQUAL(st.connections_refused, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "region wraps the address space"));
    raw_close(&good);
    raw_close(&bad);
    rci_publisher_destroy(p);
}

static void register_tests(void)
{
    RCI_SUITE("placement", {"place", test_place}, {"fits and credit", test_fits_and_credit},
             {"immediate data", test_imm});
    RCI_SUITE("subscriber ring", {"wrap, many sizes", test_wrap_many_sizes},
             {"out of order", test_out_of_order}, {"bad records", test_bad_records},
             {"ring size checked", test_ring_size_checked}, {"reconnect origin", test_reconnect_origin});
    RCI_SUITE("wire", {"rma parts", test_wire_rma});
    RCI_SUITE("publisher", {"tcp;ofi_rxm: ring answered, bad region refused", test_publisher_answers_ring});
}

RCI_CUNIT_MAIN(register_tests)
