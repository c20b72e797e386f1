/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.c — validation, decoding and encoding of ringcast wire messages.
 *
 * Every checker first makes sure the bytes it is about to read lie inside
 * [buf, buf + len): a message comes from the network and may be truncated,
 * lying about its length or pure garbage. Fields are read with memcpy and
 * converted from little-endian, so neither alignment nor host byte order
 * matter. Checks run in a fixed order (size, magic, version, type, length,
 * fields) so that one defect always gives the same error kind. */
#include "net/wire.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- little-endian loads and stores at byte offsets -------------------- */

static uint16_t load16(const void *buf, size_t off)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)buf + off, sizeof v);
    return le16toh(v);
}

static uint32_t load32(const void *buf, size_t off)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)buf + off, sizeof v);
    return le32toh(v);
}

static uint64_t load64(const void *buf, size_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)buf + off, sizeof v);
    return le64toh(v);
}

static void store16(void *buf, size_t off, uint16_t v)
{
    v = htole16(v);
    memcpy((uint8_t *)buf + off, &v, sizeof v);
}

static void store32(void *buf, size_t off, uint32_t v)
{
    v = htole32(v);
    memcpy((uint8_t *)buf + off, &v, sizeof v);
}

static void store64(void *buf, size_t off, uint64_t v)
{
    v = htole64(v);
    memcpy((uint8_t *)buf + off, &v, sizeof v);
}

#define OFF(type, field) offsetof(struct type, field)

/* ---- common header ----------------------------------------------------- */

static void decode_hdr(const void *buf, struct rci_wire_hdr *hdr)
{
    hdr->magic = load16(buf, OFF(rci_wire_hdr, magic));
    hdr->version = ((const uint8_t *)buf)[OFF(rci_wire_hdr, version)];
    hdr->type = ((const uint8_t *)buf)[OFF(rci_wire_hdr, type)];
    hdr->length = load32(buf, OFF(rci_wire_hdr, length));
}

static void encode_hdr(void *buf, uint8_t version, enum rci_msg_type type, uint32_t length)
{
    store16(buf, OFF(rci_wire_hdr, magic), RCI_WIRE_MAGIC);
    ((uint8_t *)buf)[OFF(rci_wire_hdr, version)] = version;
    ((uint8_t *)buf)[OFF(rci_wire_hdr, type)] = (uint8_t)type;
    store32(buf, OFF(rci_wire_hdr, length), length);
}

static bool version_spoken(uint8_t version)
{
    return version >= RCI_WIRE_MIN_VERSION && version <= RCI_WIRE_VERSION;
}

/* Checks shared by every type: at least `fixed` bytes, right magic, a
 * version this build speaks (check_version false: HELLO, whose versions are
 * checked against its own fields), right type, and a header length equal
 * to the bytes received. */
static enum rci_wire_error check_hdr(const void *buf, size_t len, size_t fixed, enum rci_msg_type type,
                                    bool check_version, struct rci_wire_hdr *hdr)
{
    if (buf == NULL || len < sizeof(struct rci_wire_hdr))
        return RCI_WIRE_SHORT;
    decode_hdr(buf, hdr);
    if (hdr->magic != RCI_WIRE_MAGIC)
        return RCI_WIRE_BAD_MAGIC;
    if (check_version && !version_spoken(hdr->version))
        return RCI_WIRE_BAD_VERSION;
    if (hdr->type != type)
        return RCI_WIRE_BAD_TYPE;
    if (len < fixed)
        return RCI_WIRE_SHORT;
    if (hdr->length != len)
        return RCI_WIRE_BAD_LENGTH;
    return RCI_WIRE_OK;
}

/* A fixed-size message must be exactly its size. */
static enum rci_wire_error check_fixed(const void *buf, size_t len, size_t size, enum rci_msg_type type,
                                      struct rci_wire_hdr *hdr)
{
    enum rci_wire_error e = check_hdr(buf, len, size, type, true, hdr);
    if (e == RCI_WIRE_OK && len != size)
        return RCI_WIRE_BAD_LENGTH;
    return e;
}

/* ---- per-type checkers ------------------------------------------------- */

enum rci_wire_error rci_wire_check_hello(const void *buf, size_t len, struct rci_wire_hello *out)
{
    struct rci_wire_hello h;
    enum rci_wire_error e = check_hdr(buf, len, sizeof h, RCI_MSG_HELLO, false, &h.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    const uint8_t *p = buf;
    h.min_version = p[OFF(rci_wire_hello, min_version)];
    h.max_version = p[OFF(rci_wire_hello, max_version)];
    h.addr_len = load16(buf, OFF(rci_wire_hello, addr_len));
    h.rx_buffer_size = load32(buf, OFF(rci_wire_hello, rx_buffer_size));
    h.client_id = load64(buf, OFF(rci_wire_hello, client_id));
    if (h.min_version < 1 || h.min_version > h.max_version || h.hdr.version != h.max_version)
        return RCI_WIRE_BAD_VERSION;
    if (h.addr_len > RCI_WIRE_MAX_ADDR)
        return RCI_WIRE_BAD_FIELD;
    size_t base_len = sizeof h + h.addr_len;
    size_t rma_len = base_len + sizeof(struct rci_wire_hello_rma);
    if (len != base_len && len != rma_len && len != rma_len + sizeof(struct rci_wire_hello_stream))
        return RCI_WIRE_BAD_LENGTH;
    if (h.rx_buffer_size < RCI_WIRE_MIN_RX_BUFFER)
        return RCI_WIRE_BAD_FIELD;
    if (len != base_len) {
        uint64_t rbase = load64(buf, base_len + OFF(rci_wire_hello_rma, base));
        uint64_t rlen = load64(buf, base_len + OFF(rci_wire_hello_rma, len));
        if (rlen % 8 || rbase % 8 || rlen < RCI_WIRE_RMA_MIN_RING || rlen > RCI_WIRE_RMA_MAX_RING)
            return RCI_WIRE_BAD_FIELD;
        if (len != rma_len) {
            uint64_t start = load64(buf, rma_len + OFF(rci_wire_hello_stream, start_offset));
            if (load32(buf, rma_len + OFF(rci_wire_hello_stream, card)) > RCI_WIRE_MAX_CARD ||
                load32(buf, rma_len + OFF(rci_wire_hello_stream, flags)) != 0 ||
                start % RCI_WIRE_STREAM_ALIGN || start >= rlen)
                return RCI_WIRE_BAD_FIELD;
        }
    }
    if (out)
        memcpy(out, &h, sizeof h);
    return RCI_WIRE_OK;
}

enum rci_wire_error rci_wire_check_welcome(const void *buf, size_t len, struct rci_wire_welcome *out)
{
    struct rci_wire_welcome w;
    enum rci_wire_error e = check_hdr(buf, len, sizeof w, RCI_MSG_WELCOME, true, &w.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    size_t rma_len = sizeof w + sizeof(struct rci_wire_welcome_rma);
    if (len != sizeof w && len != rma_len && len != rma_len + sizeof(struct rci_wire_welcome_stream))
        return RCI_WIRE_BAD_LENGTH;
    uint32_t delivery = len == sizeof w ? 0 : load32(buf, sizeof w + OFF(rci_wire_welcome_rma, delivery));
    if (len == rma_len && (delivery > RCI_DELIVERY_RMA ||
                           load32(buf, sizeof w + OFF(rci_wire_welcome_rma, fallback)) > RCI_RMA_FALLBACK_MAX))
        return RCI_WIRE_BAD_FIELD;
    if (len > rma_len) {
        uint32_t bs = load32(buf, rma_len + OFF(rci_wire_welcome_stream, block_size));
        if (delivery != RCI_DELIVERY_STREAM || load32(buf, sizeof w + OFF(rci_wire_welcome_rma, fallback)) ||
            load32(buf, rma_len + OFF(rci_wire_welcome_stream, card)) > RCI_WIRE_MAX_CARD ||
            bs == 0 || bs > 65536 || bs % RCI_WIRE_STREAM_ALIGN)
            return RCI_WIRE_BAD_FIELD;
    }
    w.max_tags = load32(buf, OFF(rci_wire_welcome, max_tags));
    w.heartbeat_ms = load32(buf, OFF(rci_wire_welcome, heartbeat_ms));
    w.publisher_id = load64(buf, OFF(rci_wire_welcome, publisher_id));
    if (w.heartbeat_ms == 0)
        return RCI_WIRE_BAD_FIELD;
    if (out)
        *out = w;
    return RCI_WIRE_OK;
}

struct rci_wire_range rci_wire_sub_range(const void *buf, uint32_t i)
{
    size_t off = sizeof(struct rci_wire_sub) + (size_t)i * sizeof(struct rci_wire_range);
    struct rci_wire_range r = {load64(buf, off), load64(buf, off + 8)};
    return r;
}

enum rci_wire_error rci_wire_check_sub(const void *buf, size_t len, struct rci_wire_sub *out)
{
    struct rci_wire_sub s;
    if (buf != NULL && len >= sizeof(struct rci_wire_hdr) &&
        ((const uint8_t *)buf)[OFF(rci_wire_hdr, type)] == RCI_MSG_UNSUBSCRIBE)
        s.hdr.type = RCI_MSG_UNSUBSCRIBE;
    else
        s.hdr.type = RCI_MSG_SUBSCRIBE;
    enum rci_wire_error e = check_hdr(buf, len, sizeof s, s.hdr.type, true, &s.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    s.request_id = load32(buf, OFF(rci_wire_sub, request_id));
    s.count = load32(buf, OFF(rci_wire_sub, count));
    if (s.count < 1 || s.count > RCI_WIRE_MAX_RANGES)
        return RCI_WIRE_BAD_FIELD;
    if (len != sizeof s + (size_t)s.count * sizeof(struct rci_wire_range))
        return RCI_WIRE_BAD_LENGTH;
    for (uint32_t i = 0; i < s.count; i++) {
        struct rci_wire_range r = rci_wire_sub_range(buf, i);
        if (r.first > r.last)
            return RCI_WIRE_BAD_FIELD;
    }
    if (out)
        memcpy(out, &s, sizeof s);
    return RCI_WIRE_OK;
}

enum rci_wire_error rci_wire_check_sub_ack(const void *buf, size_t len, struct rci_wire_sub_ack *out)
{
    struct rci_wire_sub_ack a;
    enum rci_wire_error e = check_fixed(buf, len, sizeof a, RCI_MSG_SUB_ACK, &a.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    a.request_id = load32(buf, OFF(rci_wire_sub_ack, request_id));
    a.status = load32(buf, OFF(rci_wire_sub_ack, status));
    if (a.status > RCI_SUB_REFUSED)
        return RCI_WIRE_BAD_FIELD;
    if (out)
        *out = a;
    return RCI_WIRE_OK;
}

/* The fragment fields must describe a piece lying inside the chunk, and the
 * first and last fragments must touch the chunk's ends: a receiver that
 * reassembles in order then never has a hole it cannot see. */
static int fragment_is_consistent(const struct rci_wire_data *d, uint64_t payload)
{
    if (d->frag_count < 1 || d->frag_index >= d->frag_count)
        return 0;
    if ((uint64_t)d->frag_offset + payload > d->chunk_len)
        return 0;
    if (d->frag_index == 0 && d->frag_offset != 0)
        return 0;
    if (d->frag_index == d->frag_count - 1 && (uint64_t)d->frag_offset + payload != d->chunk_len)
        return 0;
    if (d->chunk_len > 0 && payload == 0)
        return 0;
    return 1;
}

enum rci_wire_error rci_wire_check_data(const void *buf, size_t len, struct rci_wire_data *out)
{
    struct rci_wire_data d;
    enum rci_wire_error e = check_hdr(buf, len, sizeof d, RCI_MSG_DATA, true, &d.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    d.tag = load64(buf, OFF(rci_wire_data, tag));
    d.flags = load32(buf, OFF(rci_wire_data, flags));
    d.chunk_len = load32(buf, OFF(rci_wire_data, chunk_len));
    d.frag_offset = load32(buf, OFF(rci_wire_data, frag_offset));
    d.frag_index = load16(buf, OFF(rci_wire_data, frag_index));
    d.frag_count = load16(buf, OFF(rci_wire_data, frag_count));
    d.seq = load32(buf, OFF(rci_wire_data, seq));
    d.reserved = load32(buf, OFF(rci_wire_data, reserved));
    if (!fragment_is_consistent(&d, (uint64_t)(len - sizeof d)) || d.reserved != 0)
        return RCI_WIRE_BAD_FIELD;
    if (out)
        memcpy(out, &d, sizeof d);
    return RCI_WIRE_OK;
}

static uint64_t padded8(uint64_t n) { return (n + 7u) & ~(uint64_t)7u; }

/* Walk one record starting at byte `pos` of a page of `len` bytes: returns
 * the position after it (padding included), or 0 when the record does not
 * fit; *err tells why (BAD_LENGTH: leaves the buffer, BAD_FIELD: padding). */
static size_t walk_record(const uint8_t *p, size_t len, size_t pos, enum rci_wire_error *err)
{
    *err = RCI_WIRE_BAD_LENGTH;
    if (len - pos < sizeof(struct rci_wire_record))
        return 0;
    uint64_t payload = load32(p, pos + OFF(rci_wire_record, len));
    uint64_t body = padded8(payload);
    if (body > len - pos - sizeof(struct rci_wire_record))
        return 0;
    size_t start = pos + sizeof(struct rci_wire_record);
    for (uint64_t i = payload; i < body; i++) {
        if (p[start + i] != 0) {
            *err = RCI_WIRE_BAD_FIELD;
            return 0;
        }
    }
    *err = RCI_WIRE_OK;
    return start + (size_t)body;
}

enum rci_wire_error rci_wire_check_page(const void *buf, size_t len, struct rci_wire_page *out)
{
    struct rci_wire_page pg;
    enum rci_wire_error e = check_hdr(buf, len, sizeof pg, RCI_MSG_PAGE, true, &pg.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    pg.records = load32(buf, OFF(rci_wire_page, records));
    pg.seq = load32(buf, OFF(rci_wire_page, seq));
    if (pg.records < 1)
        return RCI_WIRE_BAD_FIELD;
    /* Every record takes at least 16 bytes: a count the length cannot hold
     * is rejected before walking, so a huge count costs nothing. */
    if (pg.records > (len - sizeof pg) / sizeof(struct rci_wire_record))
        return RCI_WIRE_BAD_LENGTH;
    size_t pos = sizeof pg;
    for (uint32_t i = 0; i < pg.records; i++) {
        pos = walk_record(buf, len, pos, &e);
        if (pos == 0)
            return e;
    }
    if (pos != len)
        return RCI_WIRE_BAD_LENGTH;
    if (out)
        memcpy(out, &pg, sizeof pg);
    return RCI_WIRE_OK;
}

int rci_wire_page_next(const void *buf, size_t len, size_t *pos, struct rci_wire_record_view *rec)
{
    if (*pos == 0)
        *pos = sizeof(struct rci_wire_page);
    if (*pos >= len)
        return 0;
    enum rci_wire_error err;
    size_t next = walk_record(buf, len, *pos, &err);
    if (next == 0)
        return 0;
    rec->tag = load64(buf, *pos + OFF(rci_wire_record, tag));
    rec->flags = load32(buf, *pos + OFF(rci_wire_record, flags));
    rec->len = load32(buf, *pos + OFF(rci_wire_record, len));
    rec->payload = (const uint8_t *)buf + *pos + sizeof(struct rci_wire_record);
    *pos = next;
    return 1;
}

enum rci_wire_error rci_wire_check_heartbeat(const void *buf, size_t len, struct rci_wire_heartbeat *out)
{
    struct rci_wire_heartbeat h;
    enum rci_wire_error e = check_fixed(buf, len, sizeof h, RCI_MSG_HEARTBEAT, &h.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    h.sent_ns = load64(buf, OFF(rci_wire_heartbeat, sent_ns));
    if (out)
        *out = h;
    return RCI_WIRE_OK;
}

enum rci_wire_error rci_wire_check_credit(const void *buf, size_t len, struct rci_wire_credit *out)
{
    struct rci_wire_credit c;
    enum rci_wire_error e = check_fixed(buf, len, sizeof c, RCI_MSG_CREDIT, &c.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    c.read_pos = load64(buf, OFF(rci_wire_credit, read_pos));
    if (out)
        *out = c;
    return RCI_WIRE_OK;
}

bool rci_wire_hello_rma(const void *buf, size_t len, struct rci_wire_hello_rma *out)
{
    size_t base_len = sizeof(struct rci_wire_hello) + load16(buf, OFF(rci_wire_hello, addr_len));
    if (len != base_len + sizeof *out && len != base_len + sizeof *out + sizeof(struct rci_wire_hello_stream))
        return false;
    out->base = load64(buf, base_len + OFF(rci_wire_hello_rma, base));
    out->len = load64(buf, base_len + OFF(rci_wire_hello_rma, len));
    out->key = load64(buf, base_len + OFF(rci_wire_hello_rma, key));
    return true;
}

bool rci_wire_hello_stream(const void *buf, size_t len, struct rci_wire_hello_stream *out)
{
    size_t at = sizeof(struct rci_wire_hello) + load16(buf, OFF(rci_wire_hello, addr_len)) +
                sizeof(struct rci_wire_hello_rma);
    if (len != at + sizeof *out)
        return false;
    out->card = load32(buf, at + OFF(rci_wire_hello_stream, card));
    out->flags = load32(buf, at + OFF(rci_wire_hello_stream, flags));
    out->start_offset = load64(buf, at + OFF(rci_wire_hello_stream, start_offset));
    return true;
}

bool rci_wire_welcome_stream(const void *buf, size_t len, struct rci_wire_welcome_stream *out)
{
    size_t at = sizeof(struct rci_wire_welcome) + sizeof(struct rci_wire_welcome_rma);
    if (len != at + sizeof *out)
        return false;
    out->card = load32(buf, at + OFF(rci_wire_welcome_stream, card));
    out->block_size = load32(buf, at + OFF(rci_wire_welcome_stream, block_size));
    out->tag_base = load64(buf, at + OFF(rci_wire_welcome_stream, tag_base));
    return true;
}

bool rci_wire_welcome_rma(const void *buf, size_t len, struct rci_wire_welcome_rma *out)
{
    if (len != sizeof(struct rci_wire_welcome) + sizeof *out &&
        len != sizeof(struct rci_wire_welcome) + sizeof *out + sizeof(struct rci_wire_welcome_stream))
        return false;
    out->delivery = load32(buf, sizeof(struct rci_wire_welcome) + OFF(rci_wire_welcome_rma, delivery));
    out->fallback = load32(buf, sizeof(struct rci_wire_welcome) + OFF(rci_wire_welcome_rma, fallback));
    return true;
}

enum rci_wire_error rci_wire_check_bye(const void *buf, size_t len, struct rci_wire_bye *out)
{
    struct rci_wire_bye b;
    enum rci_wire_error e = check_hdr(buf, len, sizeof b, RCI_MSG_BYE, true, &b.hdr);
    if (e != RCI_WIRE_OK)
        return e;
    /* The handled count only in a version-3 BYE: a version-2 BYE is 16 bytes. */
    bool handled = len == sizeof b + sizeof(struct rci_wire_bye_handled);
    if (len != sizeof b && !(handled && b.hdr.version >= RCI_WIRE_VERSION_BYE_HANDLED))
        return RCI_WIRE_BAD_LENGTH;
    b.reason = load32(buf, OFF(rci_wire_bye, reason));
    b.detail = load32(buf, OFF(rci_wire_bye, detail));
    if (b.reason > RCI_BYE_PROTOCOL || (b.reason != RCI_BYE_REFUSED && b.detail != 0) ||
        b.detail > RCI_REFUSED_MAX_DETAIL || (handled && b.reason != RCI_BYE_NORMAL))
        return RCI_WIRE_BAD_FIELD;
    if (out)
        *out = b;
    return RCI_WIRE_OK;
}

bool rci_wire_bye_handled(const void *buf, size_t len, uint64_t *chunks_handled)
{
    if (len != sizeof(struct rci_wire_bye) + sizeof(struct rci_wire_bye_handled))
        return false;
    *chunks_handled = load64(buf, sizeof(struct rci_wire_bye) + OFF(rci_wire_bye_handled, chunks_handled));
    return true;
}

bool rci_wire_welcome_takes_bye_handled(const void *buf)
{
    return ((const uint8_t *)buf)[OFF(rci_wire_hdr, version)] >= RCI_WIRE_VERSION_BYE_HANDLED;
}

/* ---- generic checker --------------------------------------------------- */

static int type_allowed(uint8_t type, enum rci_wire_dir dir)
{
    switch (type) {
    case RCI_MSG_HELLO:
    case RCI_MSG_SUBSCRIBE:
    case RCI_MSG_UNSUBSCRIBE:
    case RCI_MSG_CREDIT:
        return dir == RCI_WIRE_TO_PUBLISHER;
    case RCI_MSG_WELCOME:
    case RCI_MSG_SUB_ACK:
    case RCI_MSG_DATA:
    case RCI_MSG_PAGE:
        return dir == RCI_WIRE_TO_SUBSCRIBER;
    case RCI_MSG_HEARTBEAT:
    case RCI_MSG_BYE:
        return 1;
    default:
        return 0;
    }
}

static enum rci_wire_error check_by_type(const void *buf, size_t len, uint8_t type)
{
    switch (type) {
    case RCI_MSG_HELLO:       return rci_wire_check_hello(buf, len, NULL);
    case RCI_MSG_WELCOME:     return rci_wire_check_welcome(buf, len, NULL);
    case RCI_MSG_SUBSCRIBE:
    case RCI_MSG_UNSUBSCRIBE: return rci_wire_check_sub(buf, len, NULL);
    case RCI_MSG_SUB_ACK:     return rci_wire_check_sub_ack(buf, len, NULL);
    case RCI_MSG_DATA:        return rci_wire_check_data(buf, len, NULL);
    case RCI_MSG_PAGE:        return rci_wire_check_page(buf, len, NULL);
    case RCI_MSG_HEARTBEAT:   return rci_wire_check_heartbeat(buf, len, NULL);
    case RCI_MSG_BYE:         return rci_wire_check_bye(buf, len, NULL);
    case RCI_MSG_CREDIT:      return rci_wire_check_credit(buf, len, NULL);
    default:                 return RCI_WIRE_BAD_TYPE;
    }
}

int rci_wire_check(const void *buf, size_t len, enum rci_wire_dir dir, enum rci_wire_error *why)
{
    enum rci_wire_error e = RCI_WIRE_OK;
    struct rci_wire_hdr hdr;
    if (buf == NULL || len < sizeof hdr) {
        e = RCI_WIRE_SHORT;
    } else {
        decode_hdr(buf, &hdr);
        /* Magic and version come first, as in the per-type checkers, so a
         * stray non-ringcast message is always "bad magic". */
        if (hdr.magic != RCI_WIRE_MAGIC)
            e = RCI_WIRE_BAD_MAGIC;
        else if (hdr.type != RCI_MSG_HELLO && !version_spoken(hdr.version))
            e = RCI_WIRE_BAD_VERSION;
        else if (!type_allowed(hdr.type, dir))
            e = RCI_WIRE_BAD_TYPE;
        else
            e = check_by_type(buf, len, hdr.type);
    }
    if (why)
        *why = e;
    return e == RCI_WIRE_OK ? hdr.type : 0;
}

const char *rci_wire_error_name(enum rci_wire_error e)
{
    static const char *const names[RCI_WIRE_ERROR_KINDS] = {
        [RCI_WIRE_OK] = "ok",
        [RCI_WIRE_SHORT] = "short",
        [RCI_WIRE_BAD_MAGIC] = "bad_magic",
        [RCI_WIRE_BAD_VERSION] = "bad_version",
        [RCI_WIRE_BAD_TYPE] = "bad_type",
        [RCI_WIRE_BAD_LENGTH] = "bad_length",
        [RCI_WIRE_BAD_FIELD] = "bad_field",
    };
    if ((unsigned)e >= RCI_WIRE_ERROR_KINDS)
        return "unknown";
    return names[e];
}

uint8_t rci_wire_negotiate(uint8_t peer_min, uint8_t peer_max)
{
    if (peer_min > peer_max || peer_min < 1)
        return 0;
    uint8_t high = peer_max < RCI_WIRE_VERSION ? peer_max : (uint8_t)RCI_WIRE_VERSION;
    uint8_t low = peer_min > RCI_WIRE_MIN_VERSION ? peer_min : (uint8_t)RCI_WIRE_MIN_VERSION;
    return high >= low ? high : 0;
}

/* ---- encoders ---------------------------------------------------------- */

ssize_t rci_wire_build_hello(void *buf, size_t cap, uint64_t client_id, uint32_t rx_buffer_size,
                            const void *addr, uint16_t addr_len)
{
    size_t len = sizeof(struct rci_wire_hello) + addr_len;
    if (addr_len > RCI_WIRE_MAX_ADDR || (addr_len > 0 && addr == NULL) ||
        rx_buffer_size < RCI_WIRE_MIN_RX_BUFFER)
        return -EINVAL;
    if (cap < len)
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_VERSION, RCI_MSG_HELLO, (uint32_t)len);
    uint8_t *p = buf;
    p[OFF(rci_wire_hello, min_version)] = RCI_WIRE_MIN_VERSION;
    p[OFF(rci_wire_hello, max_version)] = RCI_WIRE_VERSION;
    store16(buf, OFF(rci_wire_hello, addr_len), addr_len);
    store32(buf, OFF(rci_wire_hello, rx_buffer_size), rx_buffer_size);
    store64(buf, OFF(rci_wire_hello, client_id), client_id);
    if (addr_len > 0)
        memcpy(p + sizeof(struct rci_wire_hello), addr, addr_len);
    return (ssize_t)len;
}

ssize_t rci_wire_build_welcome(void *buf, size_t cap, uint32_t max_tags, uint32_t heartbeat_ms,
                              uint64_t publisher_id)
{
    return rci_wire_build_welcome_version(buf, cap, RCI_WIRE_BASE_VERSION, max_tags, heartbeat_ms,
                                          publisher_id);
}

ssize_t rci_wire_build_welcome_version(void *buf, size_t cap, uint8_t version, uint32_t max_tags,
                                      uint32_t heartbeat_ms, uint64_t publisher_id)
{
    if (heartbeat_ms == 0 || !version_spoken(version))
        return -EINVAL;
    if (cap < sizeof(struct rci_wire_welcome))
        return -ENOSPC;
    encode_hdr(buf, version, RCI_MSG_WELCOME, sizeof(struct rci_wire_welcome));
    store32(buf, OFF(rci_wire_welcome, max_tags), max_tags);
    store32(buf, OFF(rci_wire_welcome, heartbeat_ms), heartbeat_ms);
    store64(buf, OFF(rci_wire_welcome, publisher_id), publisher_id);
    return sizeof(struct rci_wire_welcome);
}

ssize_t rci_wire_build_sub(void *buf, size_t cap, enum rci_msg_type type, uint32_t request_id,
                          const struct rci_wire_range *ranges, uint32_t count)
{
    if ((type != RCI_MSG_SUBSCRIBE && type != RCI_MSG_UNSUBSCRIBE) || count < 1 ||
        count > RCI_WIRE_MAX_RANGES || ranges == NULL)
        return -EINVAL;
    for (uint32_t i = 0; i < count; i++)
        if (ranges[i].first > ranges[i].last)
            return -EINVAL;
    size_t len = sizeof(struct rci_wire_sub) + (size_t)count * sizeof(struct rci_wire_range);
    if (cap < len)
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, type, (uint32_t)len);
    store32(buf, OFF(rci_wire_sub, request_id), request_id);
    store32(buf, OFF(rci_wire_sub, count), count);
    for (uint32_t i = 0; i < count; i++) {
        size_t off = sizeof(struct rci_wire_sub) + (size_t)i * sizeof(struct rci_wire_range);
        store64(buf, off, ranges[i].first);
        store64(buf, off + 8, ranges[i].last);
    }
    return (ssize_t)len;
}

ssize_t rci_wire_build_sub_ack(void *buf, size_t cap, uint32_t request_id, enum rci_sub_status status)
{
    if ((unsigned)status > RCI_SUB_REFUSED)
        return -EINVAL;
    if (cap < sizeof(struct rci_wire_sub_ack))
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_SUB_ACK, sizeof(struct rci_wire_sub_ack));
    store32(buf, OFF(rci_wire_sub_ack, request_id), request_id);
    store32(buf, OFF(rci_wire_sub_ack, status), (uint32_t)status);
    return sizeof(struct rci_wire_sub_ack);
}

ssize_t rci_wire_build_data_hdr(void *buf, size_t cap, uint64_t tag, uint32_t flags, uint32_t chunk_len,
                               uint32_t frag_offset, uint16_t frag_index, uint16_t frag_count,
                               uint32_t payload_len)
{
    struct rci_wire_data d = {.chunk_len = chunk_len, .frag_offset = frag_offset,
                             .frag_index = frag_index, .frag_count = frag_count};
    if (!fragment_is_consistent(&d, payload_len) ||
        payload_len > UINT32_MAX - sizeof(struct rci_wire_data))
        return -EINVAL;
    if (cap < sizeof d)
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_DATA, (uint32_t)(sizeof d + payload_len));
    store64(buf, OFF(rci_wire_data, tag), tag);
    store32(buf, OFF(rci_wire_data, flags), flags);
    store32(buf, OFF(rci_wire_data, chunk_len), chunk_len);
    store32(buf, OFF(rci_wire_data, frag_offset), frag_offset);
    store16(buf, OFF(rci_wire_data, frag_index), frag_index);
    store16(buf, OFF(rci_wire_data, frag_count), frag_count);
    store32(buf, OFF(rci_wire_data, seq), 0);
    store32(buf, OFF(rci_wire_data, reserved), 0);
    return sizeof d;
}

ssize_t rci_wire_page_init(void *buf, size_t cap)
{
    if (cap < sizeof(struct rci_wire_page))
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_PAGE, sizeof(struct rci_wire_page));
    store32(buf, OFF(rci_wire_page, records), 0);
    store32(buf, OFF(rci_wire_page, seq), 0);
    return sizeof(struct rci_wire_page);
}

/* DATA and PAGE keep the number at different offsets; both are checked
 * messages (or our own), so the type byte is trusted here. */
static size_t stream_seq_offset(const void *buf)
{
    uint8_t type = ((const uint8_t *)buf)[OFF(rci_wire_hdr, type)];
    return type == RCI_MSG_PAGE ? OFF(rci_wire_page, seq) : OFF(rci_wire_data, seq);
}

uint32_t rci_wire_stream_seq(const void *buf) { return load32(buf, stream_seq_offset(buf)); }

void rci_wire_set_stream_seq(void *buf, uint32_t seq) { store32(buf, stream_seq_offset(buf), seq); }

size_t rci_wire_page_length(const void *buf) { return load32(buf, OFF(rci_wire_hdr, length)); }

ssize_t rci_wire_page_appendv(void *buf, size_t cap, uint64_t tag, uint32_t flags,
                             const struct iovec *iov, unsigned n)
{
    uint64_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        if (iov[i].iov_len > 0 && iov[i].iov_base == NULL)
            return -EINVAL;
        len += iov[i].iov_len;
    }
    size_t used = rci_wire_page_length(buf);
    uint64_t need = sizeof(struct rci_wire_record) + padded8(len);
    if (used > cap || need > cap - used || used + need > UINT32_MAX)
        return -ENOSPC;
    uint8_t *rec = (uint8_t *)buf + used;
    store64(rec, OFF(rci_wire_record, tag), tag);
    store32(rec, OFF(rci_wire_record, flags), flags);
    store32(rec, OFF(rci_wire_record, len), (uint32_t)len);
    uint8_t *dst = rec + sizeof(struct rci_wire_record);
    for (unsigned i = 0; i < n; i++) {
        if (iov[i].iov_len > 0)
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    memset(dst, 0, (size_t)(padded8(len) - len));
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)(used + need));
    store32(buf, OFF(rci_wire_page, records), load32(buf, OFF(rci_wire_page, records)) + 1);
    return (ssize_t)(used + need);
}

ssize_t rci_wire_page_append(void *buf, size_t cap, uint64_t tag, uint32_t flags, const void *payload,
                            uint32_t len)
{
    struct iovec one = { .iov_base = (void *)payload, .iov_len = len };
    return rci_wire_page_appendv(buf, cap, tag, flags, &one, 1);
}

ssize_t rci_wire_build_heartbeat(void *buf, size_t cap, uint64_t sent_ns)
{
    if (cap < sizeof(struct rci_wire_heartbeat))
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_HEARTBEAT, sizeof(struct rci_wire_heartbeat));
    store64(buf, OFF(rci_wire_heartbeat, sent_ns), sent_ns);
    return sizeof(struct rci_wire_heartbeat);
}

ssize_t rci_wire_add_hello_rma(void *buf, size_t cap, size_t len, const struct rci_wire_hello_rma *rma)
{
    if (cap < len + sizeof *rma)
        return -ENOSPC;
    if (rma->len % 8 || rma->base % 8 || rma->len < RCI_WIRE_RMA_MIN_RING || rma->len > RCI_WIRE_RMA_MAX_RING)
        return -EINVAL;
    store64(buf, len + OFF(rci_wire_hello_rma, base), rma->base);
    store64(buf, len + OFF(rci_wire_hello_rma, len), rma->len);
    store64(buf, len + OFF(rci_wire_hello_rma, key), rma->key);
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)(len + sizeof *rma));
    return (ssize_t)(len + sizeof *rma);
}

ssize_t rci_wire_add_welcome_rma(void *buf, size_t cap, size_t len, enum rci_delivery delivery,
                                enum rci_rma_fallback fallback)
{
    if (len != sizeof(struct rci_wire_welcome))
        return -EINVAL;
    if (cap < len + sizeof(struct rci_wire_welcome_rma))
        return -ENOSPC;
    store32(buf, len + OFF(rci_wire_welcome_rma, delivery), (uint32_t)delivery);
    store32(buf, len + OFF(rci_wire_welcome_rma, fallback), (uint32_t)fallback);
    len += sizeof(struct rci_wire_welcome_rma);
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)len);
    return (ssize_t)len;
}

ssize_t rci_wire_add_hello_stream(void *buf, size_t cap, size_t len, const struct rci_wire_hello_stream *st)
{
    size_t at = sizeof(struct rci_wire_hello) + load16(buf, OFF(rci_wire_hello, addr_len)) +
                sizeof(struct rci_wire_hello_rma);
    if (len != at)
        return -EINVAL;
    if (cap < len + sizeof *st)
        return -ENOSPC;
    uint64_t rlen = load64(buf, at - sizeof(struct rci_wire_hello_rma) + OFF(rci_wire_hello_rma, len));
    if (st->card > RCI_WIRE_MAX_CARD || st->flags || st->start_offset % RCI_WIRE_STREAM_ALIGN ||
        st->start_offset >= rlen)
        return -EINVAL;
    store32(buf, len + OFF(rci_wire_hello_stream, card), st->card);
    store32(buf, len + OFF(rci_wire_hello_stream, flags), 0);
    store64(buf, len + OFF(rci_wire_hello_stream, start_offset), st->start_offset);
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)(len + sizeof *st));
    return (ssize_t)(len + sizeof *st);
}

ssize_t rci_wire_add_welcome_stream(void *buf, size_t cap, size_t len, const struct rci_wire_welcome_stream *st)
{
    if (len != sizeof(struct rci_wire_welcome))
        return -EINVAL;
    size_t total = len + sizeof(struct rci_wire_welcome_rma) + sizeof *st;
    if (cap < total)
        return -ENOSPC;
    if (st->card > RCI_WIRE_MAX_CARD || st->block_size == 0 || st->block_size > 65536 ||
        st->block_size % RCI_WIRE_STREAM_ALIGN)
        return -EINVAL;
    store32(buf, len + OFF(rci_wire_welcome_rma, delivery), RCI_DELIVERY_STREAM);
    store32(buf, len + OFF(rci_wire_welcome_rma, fallback), 0);
    len += sizeof(struct rci_wire_welcome_rma);
    store32(buf, len + OFF(rci_wire_welcome_stream, card), st->card);
    store32(buf, len + OFF(rci_wire_welcome_stream, block_size), st->block_size);
    store64(buf, len + OFF(rci_wire_welcome_stream, tag_base), st->tag_base);
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)total);
    return (ssize_t)total;
}

ssize_t rci_wire_build_credit(void *buf, size_t cap, uint64_t read_pos)
{
    if (cap < sizeof(struct rci_wire_credit))
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_CREDIT, sizeof(struct rci_wire_credit));
    store64(buf, OFF(rci_wire_credit, read_pos), read_pos);
    return sizeof(struct rci_wire_credit);
}

ssize_t rci_wire_build_bye(void *buf, size_t cap, enum rci_bye_reason reason)
{
    if ((unsigned)reason > RCI_BYE_PROTOCOL)
        return -EINVAL;
    if (cap < sizeof(struct rci_wire_bye))
        return -ENOSPC;
    encode_hdr(buf, RCI_WIRE_BASE_VERSION, RCI_MSG_BYE, sizeof(struct rci_wire_bye));
    store32(buf, OFF(rci_wire_bye, reason), (uint32_t)reason);
    store32(buf, OFF(rci_wire_bye, detail), 0);
    return sizeof(struct rci_wire_bye);
}

ssize_t rci_wire_build_bye_handled(void *buf, size_t cap, uint64_t chunks_handled)
{
    size_t len = sizeof(struct rci_wire_bye) + sizeof(struct rci_wire_bye_handled);
    if (cap < len)
        return -ENOSPC;
    rci_wire_build_bye(buf, cap, RCI_BYE_NORMAL);
    ((uint8_t *)buf)[OFF(rci_wire_hdr, version)] = RCI_WIRE_VERSION_BYE_HANDLED;
    store32(buf, OFF(rci_wire_hdr, length), (uint32_t)len);
    store64(buf, sizeof(struct rci_wire_bye) + OFF(rci_wire_bye_handled, chunks_handled), chunks_handled);
    return (ssize_t)len;
}

ssize_t rci_wire_build_bye_refused(void *buf, size_t cap, enum rci_refusal why)
{
    if ((unsigned)why > RCI_REFUSED_MAX_DETAIL)
        return -EINVAL;
    ssize_t len = rci_wire_build_bye(buf, cap, RCI_BYE_REFUSED);
    if (len > 0)
        store32(buf, OFF(rci_wire_bye, detail), (uint32_t)why);
    return len;
}

const char *rci_wire_refusal_name(uint32_t detail, char *buf, size_t len)
{
    switch (detail) {
    case RCI_REFUSED_UNSPECIFIED: return "no cause given";
    case RCI_REFUSED_ALLOW_LIST:  return "address not in [fabric] allow";
    case RCI_REFUSED_FULL:        return "max_subscribers reached";
    case RCI_REFUSED_VERSION:     return "no common protocol version";
    case RCI_REFUSED_RX_BUFFER:   return "rx_buffer_size too small for this publisher";
    case RCI_REFUSED_RMA_REGION:  return "announced RMA ring refused (the provider cannot write it)";
    case RCI_REFUSED_STREAM_CARD: return "block stream refused: the publisher has no such card";
    case RCI_REFUSED_STREAM_BLOCK: return "block stream refused: the ring does not fit the card's blocks "
                                         "(size or start not a multiple of the block size, under 8 blocks, "
                                         "or a block larger than shm's inject size)";
    case RCI_REFUSED_STREAM_RMA:  return "block stream refused: the publisher's provider has no FI_RMA";
    default:
        snprintf(buf, len, "cause %u", (unsigned)detail);
        return buf;
    }
}
