/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_wire.c — libFuzzer target: every network message parser of net/wire.h
 * on arbitrary bytes, as a publisher (RCI_WIRE_TO_PUBLISHER) and as a
 * subscriber (RCI_WIRE_TO_SUBSCRIBER) receive them: rci_wire_check() both
 * ways, every rci_wire_check_*(), and for accepted messages the decoders of
 * their variable parts (rci_wire_sub_range, rci_wire_page_next walk, HELLO
 * address, BYE's handled count). Only the public checker API is used, so the harness follows the
 * protocol as net/wire.c defines it.
 *
 * libFuzzer hands over a heap copy of exactly `size` bytes, so AddressSanitizer
 * catches any read past the message. Beyond that, it checks what the header
 * promises: a rejected message has a reason, an accepted one passes its own
 * type's checker too and is allowed in that direction, counts and lengths
 * agree with hdr.length, and a checked PAGE walks to its record count without
 * leaving the buffer. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/wire.h"

#define FZ_TARGET "fuzz_wire"
#include "tests/fuzz/fuzz_check.h"

static volatile uint64_t sink;   /* keeps the reads of decoded bytes */

static enum rci_wire_error check_as(int type, const uint8_t *buf, size_t len)
{
    union {
        struct rci_wire_hello hello;
        struct rci_wire_welcome welcome;
        struct rci_wire_sub sub;
        struct rci_wire_sub_ack ack;
        struct rci_wire_data data;
        struct rci_wire_page page;
        struct rci_wire_heartbeat hb;
        struct rci_wire_bye bye;
        struct rci_wire_credit credit;
    } out;
    switch (type) {
    case RCI_MSG_HELLO: return rci_wire_check_hello(buf, len, &out.hello);
    case RCI_MSG_WELCOME: return rci_wire_check_welcome(buf, len, &out.welcome);
    case RCI_MSG_SUBSCRIBE:
    case RCI_MSG_UNSUBSCRIBE: return rci_wire_check_sub(buf, len, &out.sub);
    case RCI_MSG_SUB_ACK: return rci_wire_check_sub_ack(buf, len, &out.ack);
    case RCI_MSG_DATA: return rci_wire_check_data(buf, len, &out.data);
    case RCI_MSG_PAGE: return rci_wire_check_page(buf, len, &out.page);
    case RCI_MSG_HEARTBEAT: return rci_wire_check_heartbeat(buf, len, &out.hb);
    case RCI_MSG_BYE: return rci_wire_check_bye(buf, len, &out.bye);
    case RCI_MSG_CREDIT: return rci_wire_check_credit(buf, len, &out.credit);
    default: return RCI_WIRE_BAD_TYPE;
    }
}

static bool allowed(int type, enum rci_wire_dir dir)
{
    if (type == RCI_MSG_HEARTBEAT || type == RCI_MSG_BYE)
        return true;
    if (dir == RCI_WIRE_TO_PUBLISHER)
        return type == RCI_MSG_HELLO || type == RCI_MSG_SUBSCRIBE || type == RCI_MSG_UNSUBSCRIBE ||
               type == RCI_MSG_CREDIT;
    return type == RCI_MSG_WELCOME || type == RCI_MSG_SUB_ACK || type == RCI_MSG_DATA ||
           type == RCI_MSG_PAGE;
}

static void check_direction(const uint8_t *buf, size_t len, enum rci_wire_dir dir)
{
    enum rci_wire_error why = RCI_WIRE_ERROR_KINDS;
    int type = rci_wire_check(buf, len, dir, &why);
    if (type == 0) {
        FZ_CHECK(why > RCI_WIRE_OK && why < RCI_WIRE_ERROR_KINDS, "rejected with reason %d", why);
        FZ_CHECK(strcmp(rci_wire_error_name(why), "unknown") != 0, "reason %d has no name", why);
        return;
    }
    FZ_CHECK(type > 0 && type <= RCI_MSG_TYPE_MAX, "type %d", type);
    FZ_CHECK(allowed(type, dir), "type %d accepted in direction %d", type, dir);
    FZ_CHECK(check_as(type, buf, len) == RCI_WIRE_OK, "type %d valid for rci_wire_check only", type);
}

static void walk_sub(const uint8_t *buf, size_t len)
{
    struct rci_wire_sub s;
    if (rci_wire_check_sub(buf, len, &s) != RCI_WIRE_OK)
        return;
    FZ_CHECK(s.hdr.length == len, "hdr.length %u, %zu bytes", s.hdr.length, len);
    FZ_CHECK(s.count >= 1 && s.count <= RCI_WIRE_MAX_RANGES, "count %u", s.count);
    FZ_CHECK(len == sizeof s + (size_t)s.count * sizeof(struct rci_wire_range), "count %u in %zu bytes",
             s.count, len);
    for (uint32_t i = 0; i < s.count; i++) {
        struct rci_wire_range r = rci_wire_sub_range(buf, i);
        FZ_CHECK(r.first <= r.last, "range %u: %llu > %llu", i, (unsigned long long)r.first,
                 (unsigned long long)r.last);
    }
}

static void walk_page(const uint8_t *buf, size_t len)
{
    struct rci_wire_page p;
    if (rci_wire_check_page(buf, len, &p) != RCI_WIRE_OK)
        return;
    FZ_CHECK(p.hdr.length == len, "hdr.length %u, %zu bytes", p.hdr.length, len);
    size_t pos = 0;
    uint32_t n = 0;
    struct rci_wire_record_view rec;
    while (rci_wire_page_next(buf, len, &pos, &rec)) {
        n++;
        FZ_CHECK(n <= p.records, "more than %u records", p.records);
        FZ_CHECK(rec.len == 0 || (rec.payload >= buf && rec.payload + rec.len <= buf + len),
                 "record %u payload outside the page", n);
        for (uint32_t i = 0; i < rec.len; i++)
            sink += rec.payload[i];
        FZ_CHECK(pos <= len, "walk position %zu past %zu", pos, len);
    }
    FZ_CHECK(n == p.records, "walked %u records of %u", n, p.records);
    FZ_CHECK(pos == len, "walk ended at %zu of %zu", pos, len);
}

static void walk_hello(const uint8_t *buf, size_t len)
{
    struct rci_wire_hello h;
    if (rci_wire_check_hello(buf, len, &h) != RCI_WIRE_OK)
        return;
    struct rci_wire_hello_rma rma;
    struct rci_wire_hello_stream st;
    bool has_rma = rci_wire_hello_rma(buf, len, &rma);
    bool has_stream = rci_wire_hello_stream(buf, len, &st);
    /* The stream part rides only behind an RMA part (it names the ring). */
    FZ_CHECK(!has_stream || has_rma, "stream part without an RMA part in %zu bytes", len);
    FZ_CHECK(h.addr_len <= RCI_WIRE_MAX_ADDR &&
                 len == sizeof h + h.addr_len + (has_rma ? sizeof rma : 0) + (has_stream ? sizeof st : 0),
             "addr_len %u in %zu bytes", h.addr_len, len);
    FZ_CHECK(!has_stream || (st.card <= RCI_WIRE_MAX_CARD && st.flags == 0 &&
                             st.start_offset % RCI_WIRE_STREAM_ALIGN == 0 && st.start_offset < rma.len),
             "stream card %u flags %u start %llu of %llu", st.card, st.flags,
             (unsigned long long)st.start_offset, (unsigned long long)rma.len);
    FZ_CHECK(!has_rma || (rma.len % 8 == 0 && rma.base % 8 == 0 && rma.len >= RCI_WIRE_RMA_MIN_RING &&
                          rma.len <= RCI_WIRE_RMA_MAX_RING), "rma ring %llu B at %llu",
             (unsigned long long)rma.len, (unsigned long long)rma.base);
    FZ_CHECK(h.min_version >= 1 && h.min_version <= h.max_version, "versions %u..%u",
             h.min_version, h.max_version);
    for (size_t i = 0; i < h.addr_len; i++)
        sink += buf[sizeof h + i];
}

static void walk_data(const uint8_t *buf, size_t len)
{
    struct rci_wire_data d;
    if (rci_wire_check_data(buf, len, &d) != RCI_WIRE_OK)
        return;
    size_t payload = len - sizeof d;
    FZ_CHECK(d.hdr.length == len, "hdr.length %u, %zu bytes", d.hdr.length, len);
    FZ_CHECK(d.frag_count >= 1 && d.frag_index < d.frag_count, "fragment %u of %u", d.frag_index,
             d.frag_count);
    FZ_CHECK((uint64_t)d.frag_offset + payload <= d.chunk_len, "fragment %u+%zu of %u",
             d.frag_offset, payload, d.chunk_len);
}

/* WELCOME: an RMA part (delivery, fallback), then perhaps a stream part,
 * which only a stream delivery may carry. */
static void walk_welcome(const uint8_t *buf, size_t len)
{
    struct rci_wire_welcome w;
    if (rci_wire_check_welcome(buf, len, &w) != RCI_WIRE_OK)
        return;
    struct rci_wire_welcome_rma rma;
    struct rci_wire_welcome_stream st;
    bool has_rma = rci_wire_welcome_rma(buf, len, &rma);
    bool has_stream = rci_wire_welcome_stream(buf, len, &st);
    FZ_CHECK(!has_stream || has_rma, "stream part without an RMA part in %zu bytes", len);
    FZ_CHECK(len == sizeof w + (has_rma ? sizeof rma : 0) + (has_stream ? sizeof st : 0),
             "WELCOME of %zu bytes", len);
    FZ_CHECK(w.heartbeat_ms > 0, "heartbeat 0");
    FZ_CHECK(!has_stream || (rma.delivery == RCI_DELIVERY_STREAM && rma.fallback == 0 &&
                             st.card <= RCI_WIRE_MAX_CARD && st.block_size >= RCI_WIRE_STREAM_ALIGN &&
                             st.block_size <= 65536 && st.block_size % RCI_WIRE_STREAM_ALIGN == 0),
             "stream welcome: delivery %u card %u block %u", rma.delivery, st.card, st.block_size);
    sink += w.publisher_id;
}

/* BYE: the handled count (version 3) only in a 24-byte orderly BYE. */
static void walk_bye(const uint8_t *buf, size_t len)
{
    struct rci_wire_bye b;
    if (rci_wire_check_bye(buf, len, &b) != RCI_WIRE_OK)
        return;
    uint64_t handled = 0;
    bool has_count = rci_wire_bye_handled(buf, len, &handled);
    FZ_CHECK(len == sizeof b + (has_count ? sizeof(struct rci_wire_bye_handled) : 0), "BYE of %zu bytes", len);
    FZ_CHECK(!has_count || (b.reason == RCI_BYE_NORMAL && b.hdr.version >= RCI_WIRE_VERSION_BYE_HANDLED),
             "handled count in a BYE of reason %u, version %u", b.reason, b.hdr.version);
    sink += handled;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_direction(data, size, RCI_WIRE_TO_PUBLISHER);
    check_direction(data, size, RCI_WIRE_TO_SUBSCRIBER);
    /* The per-type checkers are called by type after rci_wire_check in net/,
     * but each must stand alone on any bytes too. */
    for (int type = RCI_MSG_HELLO; type <= RCI_MSG_TYPE_MAX; type++)
        (void)check_as(type, data, size);
    walk_hello(data, size);
    walk_welcome(data, size);
    walk_sub(data, size);
    walk_data(data, size);
    walk_page(data, size);
    walk_bye(data, size);
    return 0;
}
