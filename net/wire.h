/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.h — the ringcast wire protocol (versions 2 and 3). Documented in net/README.md.
 *
 * Every message starts with an 8-byte common header; all integers are
 * little-endian, all structs are packed with explicit sizes (checked by
 * static asserts), so the format does not depend on the compiler.
 *
 *   publisher <- subscriber : HELLO, SUBSCRIBE, UNSUBSCRIBE, HEARTBEAT, BYE, CREDIT
 *   publisher -> subscriber : WELCOME, SUB_ACK, DATA, PAGE, HEARTBEAT, BYE
 *
 * Every message from the network is validated with rci_wire_check_*() before
 * any field is used; the checkers never read past `len`.
 */
#ifndef RCI_WIRE_H
#define RCI_WIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RCI_WIRE_MAGIC        0x5243u   /* "RC" */
/* Version 2 added the stream sequence number of DATA and PAGE. Version 1
 * peers are refused at HELLO: without the sequence number a subscriber
 * cannot restore the order some providers lose (net/README.md).
 * Version 3 adds one thing: a subscriber's BYE may say how many chunks it
 * handled (struct rci_wire_bye_handled). A publisher that speaks 3 says so
 * with WELCOME's hdr.version = 3 (the negotiated version); only then does a
 * subscriber send that BYE, so builds speaking only 2 (which reject a
 * 24-byte BYE and a WELCOME of version 3) keep working with this one both
 * ways. Every other message has the same layout in 2 and 3 and carries
 * hdr.version 2 (RCI_WIRE_BASE_VERSION) whatever was negotiated: a version-2
 * peer accepts it, and the data path needs no per-peer version. */
#define RCI_WIRE_VERSION      3u        /* the highest version this build speaks */
#define RCI_WIRE_MIN_VERSION  2u
#define RCI_WIRE_BASE_VERSION 2u        /* hdr.version of messages laid out as in version 2 */
#define RCI_WIRE_VERSION_BYE_HANDLED 3u /* first version with BYE's handled count */

enum rci_msg_type {
    RCI_MSG_HELLO = 1,        /* sub -> pub: versions, rx buffer size, own address (RDM) */
    RCI_MSG_WELCOME = 2,      /* pub -> sub: chosen version, limits */
    RCI_MSG_SUBSCRIBE = 3,    /* sub -> pub: tag ranges */
    RCI_MSG_UNSUBSCRIBE = 4,  /* sub -> pub: tag ranges */
    RCI_MSG_SUB_ACK = 5,      /* pub -> sub: result of (un)subscribe */
    RCI_MSG_DATA = 6,         /* pub -> sub: one chunk, or one fragment of it */
    RCI_MSG_PAGE = 7,         /* pub -> sub: buffered page of records */
    RCI_MSG_HEARTBEAT = 8,    /* both ways: liveness */
    RCI_MSG_BYE = 9,          /* both ways: orderly close */
    RCI_MSG_CREDIT = 10,      /* sub -> pub: RMA delivery, ring space released */
    RCI_MSG_TYPE_MAX = 10
};

struct __attribute__((packed)) rci_wire_hdr {
    uint16_t magic;          /* RCI_WIRE_MAGIC */
    uint8_t  version;        /* negotiated version (HELLO: highest the sender speaks) */
    uint8_t  type;           /* enum rci_msg_type */
    uint32_t length;         /* whole message in bytes, this header included */
};

/* HELLO: the subscriber's offer. addr is its fabric address (fi_getname) for
 * RDM endpoints (addr_len 0 for MSG). */
#define RCI_WIRE_MAX_ADDR 128u
struct __attribute__((packed)) rci_wire_hello {
    struct rci_wire_hdr hdr;
    uint8_t  min_version, max_version;
    uint16_t addr_len;
    uint32_t rx_buffer_size; /* largest message the subscriber can receive */
    uint64_t client_id;      /* random per subscriber process: reconnect identity */
    uint8_t  addr[];         /* addr_len bytes */
};

/* HELLO of a subscriber that asks for RMA delivery: this follows the
 * address (HELLO is then 24 + addr_len + 24 bytes). The receive ring it
 * registered for remote write: records go at base + offset (base is the
 * ring's virtual address where the provider has FI_MR_VIRT_ADDR, else 0),
 * len bytes (a multiple of 8, RCI_WIRE_RMA_MIN_RING..RCI_WIRE_RMA_MAX_RING),
 * key from fi_mr_key(). */
struct __attribute__((packed)) rci_wire_hello_rma {
    uint64_t base;
    uint64_t len;
    uint64_t key;
};
/* HELLO of a block-stream subscriber (net/README.md, "Block stream"): the
 * RMA part (its ring) is followed by this (HELLO is then 24 + addr_len +
 * 24 + 16 bytes): the card whose blocks it wants and the ring offset where
 * the publisher's first write goes (a multiple of 1 KiB inside the ring;
 * the publisher's positions of this connection start there). */
struct __attribute__((packed)) rci_wire_hello_stream {
    uint32_t card;           /* the card's index ([card.N]) */
    uint32_t flags;          /* 0 */
    uint64_t start_offset;
};
#define RCI_WIRE_STREAM_ALIGN 1024u   /* block sizes are multiples of 1 KiB */
#define RCI_WIRE_MAX_CARD 255u
#define RCI_WIRE_RMA_MIN_RING (64u * 1024u)
#define RCI_WIRE_RMA_MAX_RING (32ull << 30)   /* offsets travel in 8-byte units, 32 bits */

/* WELCOME: the publisher's answer. */
struct __attribute__((packed)) rci_wire_welcome {
    struct rci_wire_hdr hdr;
    uint32_t max_tags;       /* tags (ranges count as their size) a subscriber may hold */
    uint32_t heartbeat_ms;   /* both sides send HEARTBEAT at least this often */
    uint64_t publisher_id;   /* random per publisher process: a restart is visible */
};
/* WELCOME to a HELLO that asked for RMA (32 bytes then): whether the
 * publisher will write, and if not, why (enum rci_rma_fallback). */
enum rci_delivery { RCI_DELIVERY_SEND = 0, RCI_DELIVERY_RMA = 1, RCI_DELIVERY_STREAM = 2 };
enum rci_rma_fallback {
    RCI_RMA_OK = 0,
    RCI_RMA_NO_CAPABILITY = 1,   /* the publisher's provider has no FI_RMA or < 8 B of CQ data */
    RCI_RMA_FALLBACK_MAX = 0xffff
};
struct __attribute__((packed)) rci_wire_welcome_rma {
    uint32_t delivery;       /* enum rci_delivery */
    uint32_t fallback;       /* delivery send: enum rci_rma_fallback (unknown values printed as numbers) */
};

/* WELCOME granting a block stream (48 bytes then: the RMA part says
 * delivery stream, fallback 0, and this follows). A stream that cannot be
 * granted is refused with BYE(refused, RCI_REFUSED_STREAM_*) instead. */
struct __attribute__((packed)) rci_wire_welcome_stream {
    uint32_t card;
    uint32_t block_size;     /* the card's block size: 1..64 KiB in steps of 1 KiB */
    uint64_t tag_base;       /* tag of e-link 0 */
};

/* CREDIT (RMA delivery): the subscriber's ring is free up to read_pos, a
 * monotonic byte count over the ring (position p is at offset p % len). */
struct __attribute__((packed)) rci_wire_credit {
    struct rci_wire_hdr hdr;
    uint64_t read_pos;
};

/* SUBSCRIBE / UNSUBSCRIBE: inclusive tag ranges; "all" is [0, UINT64_MAX]. */
#define RCI_WIRE_MAX_RANGES 1024u
struct __attribute__((packed)) rci_wire_range { uint64_t first, last; };
struct __attribute__((packed)) rci_wire_sub {
    struct rci_wire_hdr hdr;
    uint32_t request_id;
    uint32_t count;          /* number of ranges, 1..RCI_WIRE_MAX_RANGES */
    struct rci_wire_range range[];
};

enum rci_sub_status {
    RCI_SUB_OK = 0, RCI_SUB_BAD_REQUEST = 1, RCI_SUB_TOO_MANY_TAGS = 2, RCI_SUB_REFUSED = 3
};
struct __attribute__((packed)) rci_wire_sub_ack {
    struct rci_wire_hdr hdr;
    uint32_t request_id;
    uint32_t status;         /* enum rci_sub_status */
};

/* Stream sequence number: DATA and PAGE messages to one subscriber carry
 * 0, 1, 2, ... (mod 2^32) in the order the publisher posted them, counted
 * per connection (a reconnect starts again at 0). The subscriber hands data
 * on in this order whatever order its receive completions come in. */

/* DATA: header (from a registered header slot) followed by payload bytes that
 * the publisher sends from the DMA ring without copying. A chunk larger than
 * the subscriber's rx buffer, or with more pieces than the provider's
 * iov_limit allows, goes as several fragments 0..frag_count-1 in order
 * (consecutive sequence numbers). */
#define RCI_WIRE_MAX_FRAGS 65535u
struct __attribute__((packed)) rci_wire_data {
    struct rci_wire_hdr hdr;
    uint64_t tag;
    uint32_t flags;          /* chunk flags (readout/chunk.h bits) */
    uint32_t chunk_len;      /* whole chunk */
    uint32_t frag_offset;    /* offset of this fragment's payload in the chunk */
    uint16_t frag_index;
    uint16_t frag_count;     /* 1 = not fragmented */
    uint32_t seq;            /* stream sequence number */
    uint32_t reserved;       /* zero; keeps the payload 8-byte aligned */
    /* payload: hdr.length - sizeof(struct rci_wire_data) bytes */
};

/* PAGE: buffered mode. Records back to back, each 8-byte aligned:
 *   u64 tag, u32 flags, u32 len, len payload bytes, zero padding to 8. */
struct __attribute__((packed)) rci_wire_page {
    struct rci_wire_hdr hdr;
    uint32_t records;
    uint32_t seq;            /* stream sequence number */
};
struct __attribute__((packed)) rci_wire_record {
    uint64_t tag;
    uint32_t flags;
    uint32_t len;
};

struct __attribute__((packed)) rci_wire_heartbeat {
    struct rci_wire_hdr hdr;
    uint64_t sent_ns;        /* sender's CLOCK_MONOTONIC, informative */
};

struct __attribute__((packed)) rci_wire_bye {
    struct rci_wire_hdr hdr;
    uint32_t reason;         /* 0 normal shutdown, 1 refused, 2 protocol error */
    uint32_t detail;         /* reason refused: enum rci_refusal (why); otherwise 0 */
};
/* Version 3, subscriber -> publisher, reason normal only, and only to a
 * publisher whose WELCOME said version 3: BYE is then 24 bytes with
 * hdr.version 3. Chunks the subscriber handed to its application on this
 * connection (every whole chunk: a DATA chunk once reassembled, each PAGE
 * record, each RMA record set); what the publisher counted as sent to it
 * beyond that was never read (chunks_unread_at_leave). */
struct __attribute__((packed)) rci_wire_bye_handled {
    uint64_t chunks_handled;
};

_Static_assert(sizeof(struct rci_wire_hdr) == 8, "wire header size");
_Static_assert(sizeof(struct rci_wire_hello) == 24, "hello size");
_Static_assert(sizeof(struct rci_wire_welcome) == 24, "welcome size");
_Static_assert(sizeof(struct rci_wire_hello_rma) == 24, "hello rma size");
_Static_assert(sizeof(struct rci_wire_welcome_rma) == 8, "welcome rma size");
_Static_assert(sizeof(struct rci_wire_hello_stream) == 16, "hello stream size");
_Static_assert(sizeof(struct rci_wire_welcome_stream) == 16, "welcome stream size");
_Static_assert(sizeof(struct rci_wire_credit) == 16, "credit size");
_Static_assert(sizeof(struct rci_wire_sub) == 16, "sub size");
_Static_assert(sizeof(struct rci_wire_range) == 16, "range size");
_Static_assert(sizeof(struct rci_wire_sub_ack) == 16, "sub ack size");
_Static_assert(sizeof(struct rci_wire_data) == 40, "data header size");
_Static_assert(sizeof(struct rci_wire_page) == 16, "page header size");
_Static_assert(sizeof(struct rci_wire_record) == 16, "record header size");
_Static_assert(sizeof(struct rci_wire_heartbeat) == 16, "heartbeat size");
_Static_assert(sizeof(struct rci_wire_bye) == 16, "bye size");
_Static_assert(sizeof(struct rci_wire_bye_handled) == 8, "bye handled part size");

/* Why a message was rejected: counted per kind by both sides. */
enum rci_wire_error {
    RCI_WIRE_OK = 0,
    RCI_WIRE_SHORT,           /* fewer bytes than the header or the type's fixed part */
    RCI_WIRE_BAD_MAGIC,
    RCI_WIRE_BAD_VERSION,
    RCI_WIRE_BAD_TYPE,        /* unknown type, or a type not allowed in this direction */
    RCI_WIRE_BAD_LENGTH,      /* hdr.length != received bytes, or inconsistent counts */
    RCI_WIRE_BAD_FIELD,       /* a field out of range (ranges, fragments, records...) */
    RCI_WIRE_ERROR_KINDS
};


/* ---- Checkers, decoders and encoders (net/wire.c) ----------------------
 * Added by the subscriber helper; everything above is the lead's protocol. */
#include <sys/types.h>
#include <sys/uio.h>

/* Which way a message travels: decides which types are allowed. */
enum rci_wire_dir {
    RCI_WIRE_TO_PUBLISHER = 0,   /* HELLO, SUBSCRIBE, UNSUBSCRIBE, HEARTBEAT, BYE */
    RCI_WIRE_TO_SUBSCRIBER = 1   /* WELCOME, SUB_ACK, DATA, PAGE, HEARTBEAT, BYE */
};

enum rci_bye_reason { RCI_BYE_NORMAL = 0, RCI_BYE_REFUSED = 1, RCI_BYE_PROTOCOL = 2 };

/* Why a publisher refused a subscriber: BYE(refused).detail. A receiver
 * must accept codes it does not know (a newer publisher may add some) and
 * print them as numbers; rci_wire_refusal_name() does that. */
enum rci_refusal {
    RCI_REFUSED_UNSPECIFIED = 0,
    RCI_REFUSED_ALLOW_LIST = 1,       /* the subscriber's address is not in [fabric] allow */
    RCI_REFUSED_FULL = 2,             /* max_subscribers are served */
    RCI_REFUSED_VERSION = 3,          /* no common protocol version */
    RCI_REFUSED_RX_BUFFER = 4,        /* rx_buffer_size too small for what the publisher sends */
    RCI_REFUSED_RMA_REGION = 5,       /* the announced RMA ring cannot be written (bad region) */
    RCI_REFUSED_STREAM_CARD = 6,      /* block stream: no such card here (or no streams served) */
    RCI_REFUSED_STREAM_BLOCK = 7,     /* block stream: the ring does not fit the card's blocks (size or
                                       * start not a multiple of the block size, fewer than 8 blocks), or
                                       * a block larger than shm copies at post (its inject size) */
    RCI_REFUSED_STREAM_RMA = 8,       /* block stream: the publisher's provider has no FI_RMA */
    RCI_REFUSED_MAX_DETAIL = 0xffff   /* larger detail values are malformed */
};

/* Smallest rx_buffer_size a HELLO may announce: a DATA header plus 32 bytes
 * of payload, so every control message and some payload always fit. */
#define RCI_WIRE_MIN_RX_BUFFER 72u
/* Largest message a subscriber sends (a SUBSCRIBE with the most ranges):
 * the publisher's receive buffers must hold this much. */
#define RCI_WIRE_MAX_CONTROL (sizeof(struct rci_wire_sub) + RCI_WIRE_MAX_RANGES * sizeof(struct rci_wire_range))

/* Rules beyond the struct comments, enforced by the checkers:
 * - every type but HELLO carries RCI_WIRE_MIN_VERSION <= hdr.version <=
 *   RCI_WIRE_VERSION (this build sends RCI_WIRE_BASE_VERSION but in WELCOME
 *   and in a BYE with its handled count); HELLO's
 *   layout never changes, its hdr.version must equal its max_version and
 *   1 <= min_version <= max_version (overlap with ours: rci_wire_negotiate);
 * - hdr.length equals the received byte count, fixed-size types have exactly
 *   their size, HELLO is 24 + addr_len, SUBSCRIBE is 16 + 16 * count;
 * - HELLO: addr_len <= RCI_WIRE_MAX_ADDR, rx_buffer_size >= RCI_WIRE_MIN_RX_BUFFER;
 * - WELCOME: heartbeat_ms > 0;  SUB_ACK: status <= RCI_SUB_REFUSED;
 * - DATA: 1 <= frag_count, frag_index < frag_count, frag_offset + payload <=
 *   chunk_len; fragment 0 starts at offset 0, the last one ends at chunk_len,
 *   an unfragmented chunk is all there, a fragment of a non-empty chunk
 *   carries at least one byte; reserved == 0;
 * - PAGE: records >= 1, every record header and payload inside
 *   the message, padding bytes zero, no bytes after the last record;
 * - BYE: reason <= RCI_BYE_PROTOCOL, detail 0 unless refused (<= 65535);
 *   16 bytes, or 24 (the handled count) with hdr.version >= 3 and reason normal;
 * - HELLO may carry the RMA part (exactly 24 more bytes): len a multiple of 8
 *   in [RCI_WIRE_RMA_MIN_RING, RCI_WIRE_RMA_MAX_RING], base a multiple of 8;
 * - WELCOME may carry its RMA part (32 bytes): delivery <= RCI_DELIVERY_RMA,
 *   fallback <= RCI_RMA_FALLBACK_MAX;  CREDIT: exactly 16 bytes;
 * - HELLO may carry the stream part after the RMA part (exactly 16 more):
 *   card <= RCI_WIRE_MAX_CARD, flags 0, start_offset a multiple of
 *   RCI_WIRE_STREAM_ALIGN below the ring's len;
 * - WELCOME may carry the stream part after its RMA part (48 bytes in all):
 *   delivery RCI_DELIVERY_STREAM (only then), fallback 0, card <=
 *   RCI_WIRE_MAX_CARD, block_size 1..64 KiB in steps of 1 KiB. */

/* Check any message travelling in direction `dir`. Returns its type (> 0)
 * when valid; 0 when rejected, with the reason in *why (may be NULL). */
int rci_wire_check(const void *buf, size_t len, enum rci_wire_dir dir, enum rci_wire_error *why);

/* Per-type checkers: RCI_WIRE_OK (0) or the reason. When `out` is not NULL and
 * the message is valid, it receives the fixed part with every integer
 * converted to host byte order (variable parts stay in `buf`). */
enum rci_wire_error rci_wire_check_hello(const void *buf, size_t len, struct rci_wire_hello *out);
enum rci_wire_error rci_wire_check_welcome(const void *buf, size_t len, struct rci_wire_welcome *out);
/* SUBSCRIBE or UNSUBSCRIBE (the type is in out->hdr.type). */
enum rci_wire_error rci_wire_check_sub(const void *buf, size_t len, struct rci_wire_sub *out);
enum rci_wire_error rci_wire_check_sub_ack(const void *buf, size_t len, struct rci_wire_sub_ack *out);
enum rci_wire_error rci_wire_check_data(const void *buf, size_t len, struct rci_wire_data *out);
enum rci_wire_error rci_wire_check_page(const void *buf, size_t len, struct rci_wire_page *out);
enum rci_wire_error rci_wire_check_heartbeat(const void *buf, size_t len, struct rci_wire_heartbeat *out);
enum rci_wire_error rci_wire_check_bye(const void *buf, size_t len, struct rci_wire_bye *out);
enum rci_wire_error rci_wire_check_credit(const void *buf, size_t len, struct rci_wire_credit *out);
/* The RMA part of a checked HELLO: true and *out (host order) when it has one. */
bool rci_wire_hello_rma(const void *buf, size_t len, struct rci_wire_hello_rma *out);
/* The RMA part of a checked WELCOME: true and *out when it has one. */
bool rci_wire_welcome_rma(const void *buf, size_t len, struct rci_wire_welcome_rma *out);
/* The stream parts of a checked HELLO / WELCOME: true and *out when present. */
bool rci_wire_hello_stream(const void *buf, size_t len, struct rci_wire_hello_stream *out);
bool rci_wire_welcome_stream(const void *buf, size_t len, struct rci_wire_welcome_stream *out);
/* The handled count of a checked BYE: true and *chunks_handled when it has one. */
bool rci_wire_bye_handled(const void *buf, size_t len, uint64_t *chunks_handled);
/* Does the publisher of this checked WELCOME take a BYE with the handled count? */
bool rci_wire_welcome_takes_bye_handled(const void *buf);

/* Short stable name of an error kind ("short", "bad_magic", ...) for
 * counters and JSON; "unknown" for values out of range. */
const char *rci_wire_error_name(enum rci_wire_error e);

/* The version both sides speak: the highest in [peer_min, peer_max] that
 * this build speaks, or 0 when the ranges do not overlap. */
uint8_t rci_wire_negotiate(uint8_t peer_min, uint8_t peer_max);

/* Decoders for the variable parts of messages that passed their checker. */
/* The stream sequence number of a valid DATA or PAGE message. */
uint32_t rci_wire_stream_seq(const void *buf);
/* Stamp it into a built DATA header or PAGE (the publisher does this when it
 * posts the message: a message that was not posted used no number). */
void rci_wire_set_stream_seq(void *buf, uint32_t seq);
/* Range i (0 <= i < count) of a valid SUBSCRIBE/UNSUBSCRIBE, host order. */
struct rci_wire_range rci_wire_sub_range(const void *buf, uint32_t i);

/* One PAGE record, host order, payload pointing into the page. */
struct rci_wire_record_view {
    uint64_t tag;
    uint32_t flags;
    uint32_t len;
    const uint8_t *payload;
};
/* Walk the records of a valid PAGE: start with *pos = 0; returns 1 and fills
 * *rec while there is a record, 0 at the end (or if the walk would leave
 * the buffer, which a checked page never does). */
int rci_wire_page_next(const void *buf, size_t len, size_t *pos, struct rci_wire_record_view *rec);

/* Encoders: write a complete message into buf (capacity cap) and return its
 * length, or -ENOSPC (cap too small) / -EINVAL (arguments the checker would
 * reject). Integers are given in host order. */
ssize_t rci_wire_build_hello(void *buf, size_t cap, uint64_t client_id, uint32_t rx_buffer_size,
                            const void *addr, uint16_t addr_len);
/* WELCOME of version RCI_WIRE_BASE_VERSION; _version: of the negotiated
 * version (rci_wire_negotiate), RCI_WIRE_MIN_VERSION..RCI_WIRE_VERSION. */
ssize_t rci_wire_build_welcome(void *buf, size_t cap, uint32_t max_tags, uint32_t heartbeat_ms,
                              uint64_t publisher_id);
ssize_t rci_wire_build_welcome_version(void *buf, size_t cap, uint8_t version, uint32_t max_tags,
                                      uint32_t heartbeat_ms, uint64_t publisher_id);
/* Append the RMA part to a built HELLO / WELCOME of length len; returns the new length. */
ssize_t rci_wire_add_hello_rma(void *buf, size_t cap, size_t len, const struct rci_wire_hello_rma *rma);
ssize_t rci_wire_add_welcome_rma(void *buf, size_t cap, size_t len, enum rci_delivery delivery,
                                enum rci_rma_fallback fallback);
/* Append the stream part to a HELLO that has its RMA part / a WELCOME of
 * 24 bytes (the RMA part saying stream is written too). */
ssize_t rci_wire_add_hello_stream(void *buf, size_t cap, size_t len, const struct rci_wire_hello_stream *st);
ssize_t rci_wire_add_welcome_stream(void *buf, size_t cap, size_t len, const struct rci_wire_welcome_stream *st);
ssize_t rci_wire_build_credit(void *buf, size_t cap, uint64_t read_pos);
/* type is RCI_MSG_SUBSCRIBE or RCI_MSG_UNSUBSCRIBE. */
ssize_t rci_wire_build_sub(void *buf, size_t cap, enum rci_msg_type type, uint32_t request_id,
                          const struct rci_wire_range *ranges, uint32_t count);
ssize_t rci_wire_build_sub_ack(void *buf, size_t cap, uint32_t request_id, enum rci_sub_status status);
/* Only the 40-byte DATA header (sequence number 0: rci_wire_set_stream_seq); hdr.length counts payload_len more bytes,
 * which the caller sends right behind it (zero copy: a separate iov). */
ssize_t rci_wire_build_data_hdr(void *buf, size_t cap, uint64_t tag, uint32_t flags, uint32_t chunk_len,
                               uint32_t frag_offset, uint16_t frag_index, uint16_t frag_count,
                               uint32_t payload_len);
/* PAGE built in place (sequence number 0): init, then append records while they fit (-ENOSPC
 * when the next one does not; the page stays valid). The message length is
 * the page's hdr.length: rci_wire_page_length(). */
ssize_t rci_wire_page_init(void *buf, size_t cap);
ssize_t rci_wire_page_append(void *buf, size_t cap, uint64_t tag, uint32_t flags, const void *payload,
                            uint32_t len);
/* The same, gathering the record's payload from n pieces (buffered sends:
 * one layout code for both). */
ssize_t rci_wire_page_appendv(void *buf, size_t cap, uint64_t tag, uint32_t flags,
                             const struct iovec *iov, unsigned n);
size_t rci_wire_page_length(const void *buf);
ssize_t rci_wire_build_heartbeat(void *buf, size_t cap, uint64_t sent_ns);
ssize_t rci_wire_build_bye(void *buf, size_t cap, enum rci_bye_reason reason);
/* BYE(normal) of a subscriber with the chunks it handled (24 bytes, version 3). */
ssize_t rci_wire_build_bye_handled(void *buf, size_t cap, uint64_t chunks_handled);
/* BYE(refused) saying why. */
ssize_t rci_wire_build_bye_refused(void *buf, size_t cap, enum rci_refusal why);
/* "allow list", "max_subscribers reached", ... or "cause N" (buf) for a code unknown here. */
const char *rci_wire_refusal_name(uint32_t detail, char *buf, size_t len);

#endif
