/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_fabric.c — the [fabric] section: struct rci_fabric_params
 * (net/fabric_params.h).
 *
 * To add a key: add the member to struct rci_fabric_params, then one row here:
 *   {.key = "name", .type = RCI_CFG_..., .def = "default text",
 *    .min = ..., .max = ...,           (in bytes / ns / count / characters)
 *    RCI_CFG_FIELD(T, member), .help = "One line."},
 * optionally .multiple, .flags = RCI_CFG_F_POW2, .choices = "a|b" (RCI_CFG_ENUM,
 * in the order of the C enum). The default is parsed like user input, so a bad
 * default fails every load (and test_config). Checks that involve two keys go
 * into check_fabric() in config.c. Then run `make config-example`. */
#include "config/schema.h"
#include "common/cpus.h"
#include "net/allow_list.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define T struct rci_fabric_params
#define MS 1000000ull
#define S  1000000000ull

/* A DNS label: 1..63 of [A-Za-z0-9-], no '-' at either end (RFC 1123). */
static bool is_host_label(const char *label, size_t len)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
    if (len == 0 || len > 63 || label[0] == '-' || label[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!memchr(chars, label[i], sizeof chars - 1))
            return false;
    return true;
}

static bool is_host_name(const char *text)
{
    for (const char *p = text;;) {
        size_t n = strcspn(p, ".");
        if (!is_host_label(p, n))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

/* Checked here so that a typo is reported at its line rather than as a
 * failing fi_getinfo at start. Names are not resolved: that is the
 * provider's job when the daemon starts, on the machine it runs on. */
static int validate_address(const char *text, char *why, size_t whylen)
{
    unsigned char buf[16];
    const char *problem = NULL;
    if (text[0] == '[') {
        problem = "write an IPv6 address without brackets";
    } else if (strchr(text, ':')) {
        if (inet_pton(AF_INET6, text, buf) != 1)
            problem = "not an IPv6 address";
    } else if (strspn(text, "0123456789.") == strlen(text)) {
        if (inet_pton(AF_INET, text, buf) != 1)
            problem = "not an IPv4 address (a.b.c.d, each 0..255)";
    } else if (!is_host_name(text)) {
        problem = "not an IPv4 or IPv6 address nor a host name ([A-Za-z0-9-] labels separated by '.')";
    }
    if (!problem)
        return 0;
    snprintf(why, whylen, "%s", problem);
    return -EINVAL;
}

/* The publisher parses the list again at create; checking it here names the line. */
static int validate_allow(const char *text, char *why, size_t whylen)
{
    struct rci_allow_list list;
    return rci_allow_list_parse(text, &list, why, whylen);
}

/* Checked at load so that the line is named; the pipeline checks it again
 * when it pins its threads. */
static int validate_cpus(const char *text, char *why, size_t whylen)
{
    cpu_set_t set;
    return rci_cpus_parse_allowed(text, &set, why, whylen);
}

static const struct rci_cfg_key fabric_keys[] = {
    {.key = "provider", .type = RCI_CFG_STRING, .def = "tcp", .min = 1, .max = 63,
     RCI_CFG_FIELD(T, provider),
     .help = "libfabric provider: tcp, tcp;ofi_rxm, verbs, shm, ... (see fi_info -l)."},
    {.key = "endpoint", .type = RCI_CFG_ENUM, .def = "msg", .choices = "msg|rdm",
     RCI_CFG_FIELD(T, endpoint),
     .help = "Endpoint type: msg (connections) or rdm (reliable datagrams)."},
    {.key = "address", .type = RCI_CFG_STRING, .def = "127.0.0.1", .min = 1, .max = 127,
     RCI_CFG_FIELD(T, address), .validate = validate_address,
     .help = "Address the publisher listens on: IPv4, IPv6 (without brackets) or a host name."},
    {.key = "port", .type = RCI_CFG_UINT, .def = "12345", .min = 1, .max = 65535,
     RCI_CFG_FIELD(T, port),
     .help = "Port the publisher listens on."},
    {.key = "tx_queue", .type = RCI_CFG_UINT, .def = "256", .min = 1, .max = 65536,
     RCI_CFG_FIELD(T, tx_queue),
     .help = "Requested transmit context size (sends in flight per endpoint)."},
    {.key = "rx_queue", .type = RCI_CFG_UINT, .def = "256", .min = 1, .max = 65536,
     RCI_CFG_FIELD(T, rx_queue),
     .help = "Requested receive context size."},
    {.key = "cq_size", .type = RCI_CFG_UINT, .def = "1024", .min = 1, .max = 1u << 20,
     RCI_CFG_FIELD(T, cq_size),
     .help = "Completion queue entries; at least tx_queue."},
    {.key = "header_slots", .type = RCI_CFG_UINT, .def = "1024", .min = 1, .max = 1u << 20,
     RCI_CFG_FIELD(T, header_slots),
     .help = "Zero-copy header slots (one per zero-copy send in flight)."},
    {.key = "header_slot_size", .type = RCI_CFG_SIZE, .def = "64", .min = 40, .max = 4096,
     RCI_CFG_FIELD(T, header_slot_size),
     .help = "Bytes of one zero-copy header slot."},
    {.key = "buffered_pages", .type = RCI_CFG_UINT, .def = "64", .min = 1, .max = 65536,
     RCI_CFG_FIELD(T, buffered_pages),
     .help = "Pages of the buffered-mode pool."},
    {.key = "buffered_page_size", .type = RCI_CFG_SIZE, .def = "64k", .min = 1024,
     .max = 64ull << 20, RCI_CFG_FIELD(T, buffered_page_size),
     .help = "Bytes of one buffered-mode page; at most rx_buffer_size."},
    {.key = "bounce_buffers", .type = RCI_CFG_UINT, .def = "32", .min = 0, .max = 65536,
     RCI_CFG_FIELD(T, bounce_buffers),
     .help = "mode = auto: copy chunks of more pieces than a message carries into these registered"
             " buffers of buffered_page_size (32 x 64k = 2 MiB per publisher thread); 0 = off."},
    {.key = "stream_span", .type = RCI_CFG_SIZE, .def = "256k", .min = 1024, .max = 64ull << 20,
     RCI_CFG_FIELD(T, stream_span),
     .help = "Block streams (ringcast-sub --stream CARD): most bytes of ring-adjacent blocks written to"
             " a stream subscriber in one write; a span goes as soon as no more blocks wait."},
    {.key = "flush_timeout", .type = RCI_CFG_DURATION, .def = "1ms", .min = 1000, .max = 10 * S,
     RCI_CFG_FIELD(T, flush_timeout_ns),
     .help = "A buffered page that is not full is sent at the latest after this (the daemon sends it"
             " at once when its queues run empty)."},
    {.key = "rx_buffers", .type = RCI_CFG_UINT, .def = "64", .min = 1, .max = 65536,
     RCI_CFG_FIELD(T, rx_buffers),
     .help = "Receive buffers of a subscriber."},
    {.key = "rx_buffer_size", .type = RCI_CFG_SIZE, .def = "64k", .min = 1024, .max = 64ull << 20,
     RCI_CFG_FIELD(T, rx_buffer_size),
     .help = "Bytes of one receive buffer; must hold the largest page."},
    {.key = "peer_timeout", .type = RCI_CFG_DURATION, .def = "3s", .min = 10 * MS, .max = 600 * S,
     RCI_CFG_FIELD(T, peer_timeout_ns),
     .help = "A peer silent this long is dead and its chunks are released."},
    {.key = "heartbeat", .type = RCI_CFG_DURATION, .def = "500ms", .min = 1 * MS, .max = 60 * S,
     RCI_CFG_FIELD(T, heartbeat_ns),
     .help = "Both sides send a heartbeat this often; less than peer_timeout."},
    {.key = "poll_spin", .type = RCI_CFG_DURATION, .def = "20us", .min = 0, .max = 1 * S,
     RCI_CFG_FIELD(T, poll_spin_ns),
     .help = "Poll the completion queue this long before sleeping on its file descriptor."},
    {.key = "max_subscribers", .type = RCI_CFG_UINT, .def = "64", .min = 1, .max = 4096,
     RCI_CFG_FIELD(T, max_subscribers),
     .help = "Subscribers connected at the same time."},
    {.key = "max_tags_per_subscriber", .type = RCI_CFG_UINT, .def = "0", .min = 0,
     .max = UINT32_MAX, RCI_CFG_FIELD(T, max_tags_per_subscriber),
     .help = "Tags one subscriber may subscribe to, a range counting as its size; 0 = no limit"
             " ('all' is 2^64 tags). Memory per subscriber is bounded by its at most 1024 ranges."},
    {.key = "allow", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 191,
     RCI_CFG_FIELD(T, allow), .validate = validate_allow,
     .help = "Subscriber networks accepted, comma-separated CIDR (127.0.0.0/8, 10.1.0.0/16, fd00::/8;"
             " at most 16); empty = everyone. Others are refused and counted."},
    {.key = "cpus", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 63,
     RCI_CFG_FIELD(T, cpus), .validate = validate_cpus,
     .help = "Pin the daemon's publisher threads to these CPUs (e.g. 2 or 2,3 or 4-7), each one this"
             " process may run on; empty = not pinned. Best on the NIC's NUMA node."},
    /* Fault injection: for tests of the error paths, never for production. */
    {.key = "fault_send_error_every", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, faults.send_error_every),
     .help = "TESTING ONLY: report every Nth successful data send completion as an error"
             " (its subscriber is then declared dead); 0 = off."},
    {.key = "fault_eagain_every", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, faults.eagain_every),
     .help = "TESTING ONLY: every Nth data send starts a storm of provider -FI_EAGAIN refusals; 0 = off."},
    {.key = "fault_eagain_burst", .type = RCI_CFG_UINT, .def = "100", .min = 1, .max = UINT32_MAX,
     RCI_CFG_FIELD(T, faults.eagain_burst),
     .help = "TESTING ONLY: sends refused in a row by one -FI_EAGAIN storm."},
    {.key = "fault_eagain_streak", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 600 * S,
     RCI_CFG_FIELD(T, faults.eagain_streak_ns),
     .help = "TESTING ONLY: every Nth data send (fault_eagain_every) starts a streak this long"
             " refusing sends to that subscriber only; 0 = storms instead."},
    {.key = "fault_hold_after", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = UINT64_MAX,
     RCI_CFG_FIELD(T, faults.hold_after),
     .help = "TESTING ONLY: the Nth data send is reported posted but never handed to the provider"
             " (a send the provider keeps unwritten); 0 = off."},
};

/* Set by the program, not by a key: the daemon turns fair shares on
 * (net/fabric_params.h); the loader leaves it false. */
static const struct rci_cfg_implicit fabric_implicit[] = {
    {.field = "peer_fair_share", .offset = offsetof(T, peer_fair_share),
     .size = sizeof(((T *)0)->peer_fair_share), .align = _Alignof(__typeof__(((T *)0)->peer_fair_share))},
    {.field = "rma", .offset = offsetof(T, rma),
     .size = sizeof(((T *)0)->rma), .align = _Alignof(__typeof__(((T *)0)->rma))},
};

const struct rci_cfg_section rci_cfg_section_fabric = {
    .name = "fabric",
    .repeated = false,
    .help = "The libfabric layer (net/): listening address, queues, buffers, liveness; the daemon publishes on address:port.",
    .keys = fabric_keys,
    .nkeys = sizeof fabric_keys / sizeof fabric_keys[0],
    .implicit = fabric_implicit,
    .nimplicit = sizeof fabric_implicit / sizeof fabric_implicit[0],
    .cfg_offset = offsetof(struct rci_config, fabric),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
