/* SPDX-License-Identifier: BSD-3-Clause */
/* bad_peer.c — misbehaving subscribers for the daemon's fault tests
 * (tests/integration/test_daemon_faults.sh). Not installed.
 *
 *   bad_peer vanish    HOST PORT PROVIDER msg|rdm
 *       connect, get WELCOME, then exit at once: no SUBSCRIBE, no BYE.
 *   bad_peer many-tags HOST PORT PROVIDER msg|rdm N
 *       subscribe to N single, non-adjacent tags (0, 2, 4, ...) in requests of
 *       1024 ranges, wait for every answer, print {"sub_requests":R,
 *       "sub_acks":A,"sub_refused":F,"connected":C}, say BYE.
 *   bad_peer garbage   HOST PORT PROVIDER msg|rdm N
 *       raw libfabric: a valid HELLO, then N messages each invalid in one of
 *       the five ways rci_wire_check() names first (short, bad magic, bad
 *       version, bad type, bad length), N/5 of each; then exit without BYE.
 * Exit status 0 when the peer did what it was asked, 1 otherwise. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/fabric.h"
#include "ringcast/sub.h"
#include "net/wire.h"

#define WAIT_NS (10ull * 1000000000ull)

struct peer_args {
    const char *mode, *host, *provider;
    uint16_t port;
    bool rdm;
    uint64_t n;
};

static int usage(void)
{
    fprintf(stderr, "usage: bad_peer vanish|many-tags|garbage HOST PORT PROVIDER msg|rdm [N]\n");
    return 2;
}

/* ---- through the subscriber library --------------------------------------- */

static void ignore_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    (void)ctx, (void)tag, (void)flags, (void)data, (void)len;
}

static struct rc_sub *open_sub(const struct peer_args *a)
{
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    snprintf(p.provider, sizeof p.provider, "%s", a->provider);
    p.endpoint = a->rdm ? RC_SUB_EP_RDM : RC_SUB_EP_MSG;
    snprintf(p.host, sizeof p.host, "%s", a->host);
    p.port = a->port;
    p.cb.on_data = ignore_data;
    struct rc_sub *s = NULL;
    char err[256];
    if (rc_sub_create(&p, &s, err, sizeof err))
        fprintf(stderr, "bad_peer: %s\n", err);
    return s;
}

static bool poll_until_connected(struct rc_sub *s)
{
    struct rc_sub_stats st;
    uint64_t end = rci_now_ns() + WAIT_NS;
    do {
        rc_sub_poll(s, 10000000ull);
        rc_sub_get_stats(s, &st);
    } while (!st.connected && rci_now_ns() < end);
    return st.connected;
}

static int vanish(const struct peer_args *a)
{
    struct rc_sub *s = open_sub(a);
    if (!s || !poll_until_connected(s))
        return 1;
    _exit(0);   /* no destroy: no BYE, the endpoint just goes away */
}

/* SUB_ACKs received so far: every valid message but WELCOME, heartbeats and data. */
static uint64_t acks_received(const struct rc_sub_stats *st)
{
    return st->messages - st->connects - st->heartbeats_received - st->data_messages - st->pages;
}

static int many_tags(const struct peer_args *a)
{
    uint64_t *tags = calloc(a->n, sizeof *tags);
    struct rc_sub *s = open_sub(a);
    if (!tags || !s || !poll_until_connected(s))
        return 1;
    for (uint64_t i = 0; i < a->n; i++)
        tags[i] = 2 * i;
    int rc = 0;
    for (uint64_t i = 0; i < a->n && rc == 0; i += RCI_WIRE_MAX_RANGES) {
        uint64_t k = a->n - i < RCI_WIRE_MAX_RANGES ? a->n - i : RCI_WIRE_MAX_RANGES;
        while ((rc = rc_sub_subscribe(s, tags + i, tags + i, k)) == -EAGAIN)
            rc_sub_poll(s, 1000000ull);
    }
    struct rc_sub_stats st;
    uint64_t end = rci_now_ns() + WAIT_NS;
    do {
        rc_sub_poll(s, 10000000ull);
        rc_sub_get_stats(s, &st);
    } while (st.connected && rci_now_ns() < end && acks_received(&st) < st.sub_requests);
    printf("{\"sub_requests\":%" PRIu64 ",\"sub_acks\":%" PRIu64 ",\"sub_refused\":%" PRIu64
           ",\"connected\":%d}\n", st.sub_requests, acks_received(&st), st.sub_refused, st.connected);
    rc_sub_destroy(s);
    free(tags);
    return rc == 0 && st.connected && acks_received(&st) == st.sub_requests ? 0 : 1;
}

/* ---- raw libfabric ------------------------------------------------------------ */

struct raw_peer {
    struct rci_fabric f;
    struct fid_ep *ep;
    fi_addr_t dest;
    uint8_t rx[4][4096];   /* a publisher serves rx_buffer_size >= 4096 B (net/README.md) */
    char err[256];
};

static int raw_connect(struct raw_peer *r, const struct peer_args *a)
{
    struct rci_fabric_params fp = {0};
    snprintf(fp.provider, sizeof fp.provider, "%s", a->provider);
    fp.endpoint = a->rdm ? RCI_EP_RDM : RCI_EP_MSG;
    snprintf(fp.address, sizeof fp.address, "%s", a->host);
    fp.port = a->port;
    int rc = rci_fabric_open(&r->f, &fp, RCI_FABRIC_CONNECT, 256, r->err, sizeof r->err);
    if (rc)
        return rc;
    if (r->f.mr_local) {
        snprintf(r->err, sizeof r->err, "provider needs registered memory; bad_peer sends unregistered");
        return -ENOTSUP;
    }
    r->dest = FI_ADDR_UNSPEC;
    if (a->rdm) {
        r->ep = r->f.ep;
        rc = rci_fabric_av_insert(&r->f, r->f.info->dest_addr, r->f.info->dest_addrlen, &r->dest, r->err,
                                 sizeof r->err);
    } else {
        rc = rci_fabric_msg_ep_open(&r->f, NULL, r, &r->ep, r->err, sizeof r->err);
    }
    for (uintptr_t i = 0; !rc && i < 4; i++)   /* WELCOME and heartbeats land somewhere */
        rc = (int)fi_recv(r->ep, r->rx[i], sizeof r->rx[i], NULL, FI_ADDR_UNSPEC, (void *)(i + 1));
    if (!rc && !a->rdm)
        rc = rci_fabric_msg_connect(&r->f, r->ep, WAIT_NS, r->err, sizeof r->err);
    return rc;
}

/* Send one message and wait for its completion (receives are not reposted:
 * what the publisher sends us does not matter). */
static int raw_send(struct raw_peer *r, const void *buf, size_t len)
{
    static uint8_t tx[RCI_WIRE_MAX_CONTROL];
    memcpy(tx, buf, len);
    uint64_t end = rci_now_ns() + WAIT_NS;
    ssize_t rc;
    while ((rc = fi_send(r->ep, tx, len, NULL, r->dest, NULL)) == -FI_EAGAIN && rci_now_ns() < end)
        rci_fabric_cq_poll(&r->f, (struct rci_fabric_cqe[4]){0}, 4, NULL, 0);
    if (rc)
        return rci_fabric_error(&r->f, r->err, sizeof r->err, "fi_send", (int)rc);
    struct rci_fabric_cqe c[4];
    while (rci_now_ns() < end) {
        int n = rci_fabric_cq_poll(&r->f, c, 4, NULL, 0);
        for (int i = 0; i < n; i++)
            if (c[i].context == NULL)
                return c[i].err ? -c[i].err : 0;
    }
    return -ETIMEDOUT;
}

static int raw_hello(struct raw_peer *r, bool rdm)
{
    uint8_t addr[RCI_WIRE_MAX_ADDR], msg[RCI_WIRE_MAX_CONTROL];
    size_t addr_len = 0;
    if (rdm) {
        addr_len = sizeof addr;
        int rc = rci_fabric_getname(&r->f, r->ep, addr, &addr_len, r->err, sizeof r->err);
        if (rc)
            return rc;
    }
    ssize_t len = rci_wire_build_hello(msg, sizeof msg, 0xbadbad, sizeof r->rx[0], addr, (uint16_t)addr_len);
    return len < 0 ? (int)len : raw_send(r, msg, (size_t)len);
}

/* Garbage message k: a heartbeat broken in the k % 5-th way. */
static size_t garbage_message(uint8_t *m, uint64_t k)
{
    size_t len = (size_t)rci_wire_build_heartbeat(m, RCI_WIRE_MAX_CONTROL, k);
    switch (k % 5) {
    case 0: return 3;                              /* short */
    case 1: m[0] ^= 0x5a; break;                   /* bad magic */
    case 2: m[2] = RCI_WIRE_VERSION + 7; break;     /* bad version */
    case 3: m[3] = RCI_MSG_DATA; break;             /* bad type: DATA goes to subscribers */
    default: m[4] ^= 0x40; break;                  /* bad length */
    }
    return len;
}

static int garbage(const struct peer_args *a)
{
    static struct raw_peer r;
    int rc = raw_connect(&r, a);
    if (!rc)
        rc = raw_hello(&r, a->rdm);
    uint8_t m[RCI_WIRE_MAX_CONTROL];
    for (uint64_t k = 0; !rc && k < a->n; k++)
        rc = raw_send(&r, m, garbage_message(m, k));
    if (rc) {
        fprintf(stderr, "bad_peer garbage: %s (%d)\n", r.err, rc);
        return 1;
    }
    _exit(0);   /* leave without BYE, like a crashed peer */
}

int main(int argc, char **argv)
{
    if (argc < 6)
        return usage();
    struct peer_args a = {.mode = argv[1], .host = argv[2], .port = (uint16_t)atoi(argv[3]),
                          .provider = argv[4], .rdm = strcmp(argv[5], "rdm") == 0,
                          .n = argc > 6 ? strtoull(argv[6], NULL, 0) : 0};
    if (!strcmp(a.mode, "vanish"))
        return vanish(&a);
    if (!strcmp(a.mode, "many-tags") && a.n > 0)
        return many_tags(&a);
    if (!strcmp(a.mode, "garbage") && a.n > 0)
        return garbage(&a);
    return usage();
}
