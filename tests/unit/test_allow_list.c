/* SPDX-License-Identifier: BSD-3-Clause */
/* test_allow_list.c — net/allow_list.[ch]: parsing the [fabric] allow text
 * (every error kind with its message), matching IPv4, IPv6 and IPv4-mapped
 * peers against prefixes of every length class, and the config key that
 * carries the text (a bad entry is reported at its file line).
 * Then the publisher with raw libfabric clients on loopback, in one thread
 * (publisher and clients progressed in turn): a refused MSG connection and a
 * refused RDM HELLO (BYE(refused), counted), and the limit of the RDM check:
 * a HELLO declaring another endpoint's address makes the publisher talk to
 * that endpoint, while the forger's own messages come from a sender not in
 * the AV and are dropped (net/README.md, Security). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "common/monotonic.h"
#include "net/allow_list.h"
#include "net/fabric.h"
#include "net/publisher.h"
#include "net/wire.h"
#include "tests/unit/cunit_main.h"

static struct sockaddr_in v4(const char *text)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(4242)};
    CU_ASSERT_FATAL(inet_pton(AF_INET, text, &in.sin_addr) == 1);
    return in;
}

static struct sockaddr_in6 v6(const char *text)
{
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(4242)};
    CU_ASSERT_FATAL(inet_pton(AF_INET6, text, &in6.sin6_addr) == 1);
    return in6;
}

static bool permits4(const struct rci_allow_list *l, const char *addr)
{
    struct sockaddr_in in = v4(addr);
    return rci_allow_list_permits(l, &in, sizeof in);
}

static bool permits6(const struct rci_allow_list *l, const char *addr)
{
    struct sockaddr_in6 in6 = v6(addr);
    return rci_allow_list_permits(l, &in6, sizeof in6);
}

static void test_parse_ok(void)
{
    struct rci_allow_list l;
    char why[160] = "";
    CU_ASSERT_EQUAL(rci_allow_list_parse("", &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 0);
    CU_ASSERT_EQUAL(rci_allow_list_parse(NULL, &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 0);
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse(" 127.0.0.0/8 ,10.1.0.0/16,\t192.168.7.9, fd00::/8,::1",
                                              &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 5);
    CU_ASSERT_EQUAL(l.net[0].family, 4);
    CU_ASSERT_EQUAL(l.net[0].prefix_len, 8);
    CU_ASSERT_EQUAL(l.net[2].prefix_len, 32);  /* a host */
    CU_ASSERT_EQUAL(l.net[3].family, 6);
    CU_ASSERT_EQUAL(l.net[3].prefix_len, 8);
    CU_ASSERT_EQUAL(l.net[4].prefix_len, 128);
    CU_ASSERT_EQUAL(rci_allow_list_parse("0.0.0.0/0, ::/0", &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 2);
    char sixteen[400] = "";
    for (int i = 0; i < 16; i++)
        snprintf(sixteen + strlen(sixteen), sizeof sixteen - strlen(sixteen), "%s10.%d.0.0/16",
                 i ? "," : "", i);
    CU_ASSERT_EQUAL(rci_allow_list_parse(sixteen, &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, RCI_ALLOW_MAX_NETS);
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"10.0.0.0/8,", "empty entry"},
        {",10.0.0.0/8", "empty entry"},
        {"10.0.0.0/8,,127.0.0.1", "empty entry"},
        {"10.0.0.0/33", "'10.0.0.0/33': the prefix length must be a number 0..32"},
        {"fd00::/129", "0..128"},
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/8x", "prefix length"},
        {"10.0.0.0/-8", "prefix length"},
        {"10.0.0.0/0008", "prefix length"},
        {"10.0.0", "'10.0.0': not an IPv4 (a.b.c.d) address"},
        {"10.0.0.256/8", "not an IPv4"},
        {"010.0.0.0/8", "not an IPv4"},
        {"localhost", "not an IPv4"},
        {"fd00:::1/8", "not an IPv6 address"},
        {"10.1.2.3/16", "host bits set after /16 (did you mean 10.1.0.0/16?)"},
        {"fd00::1/64", "did you mean fd00::/64?"},
        {"10.0.0.0 /8", "not an IPv4"},
        {"10.0.0.0/8 10.1.0.0/16", "prefix length"},
        {"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd/64", "too long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rci_allow_list l;
        char why[160] = "";
        int rc = rci_allow_list_parse(cases[i].text, &l, why, sizeof why);
        if (rc != -EINVAL || !strstr(why, cases[i].why))
            fprintf(stderr, "\n'%s': rc %d, why '%s', expected '%s'\n", cases[i].text, rc, why,
                    cases[i].why);
        CU_ASSERT_EQUAL(rc, -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, cases[i].why));
    }
    char seventeen[400] = "";
    for (int i = 0; i < 17; i++)
        snprintf(seventeen + strlen(seventeen), sizeof seventeen - strlen(seventeen), "%s10.%d.0.0/16",
                 i ? "," : "", i);
    struct rci_allow_list l;
    char why[160] = "";
    CU_ASSERT_EQUAL(rci_allow_list_parse(seventeen, &l, why, sizeof why), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than 16 networks"));
    /* NULL why is allowed */
    CU_ASSERT_EQUAL(rci_allow_list_parse("bad", &l, NULL, 0), -EINVAL);
}

static void test_match_ipv4(void)
{
    struct rci_allow_list l;
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse("10.0.0.0/8, 192.168.4.0/22, 172.16.5.7", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits4(&l, "10.0.0.0"));
    CU_ASSERT_TRUE(permits4(&l, "10.255.255.255"));
    CU_ASSERT_FALSE(permits4(&l, "11.0.0.0"));
    CU_ASSERT_FALSE(permits4(&l, "9.255.255.255"));
    CU_ASSERT_FALSE(permits4(&l, "127.0.0.1"));
    /* /22: a prefix that ends inside a byte */
    CU_ASSERT_TRUE(permits4(&l, "192.168.4.0"));
    CU_ASSERT_TRUE(permits4(&l, "192.168.7.255"));
    CU_ASSERT_FALSE(permits4(&l, "192.168.8.0"));
    CU_ASSERT_FALSE(permits4(&l, "192.168.3.255"));
    /* a host */
    CU_ASSERT_TRUE(permits4(&l, "172.16.5.7"));
    CU_ASSERT_FALSE(permits4(&l, "172.16.5.6"));
    /* IPv4 rules say nothing about IPv6 peers, except IPv4-mapped ones */
    CU_ASSERT_FALSE(permits6(&l, "::1"));
    CU_ASSERT_TRUE(permits6(&l, "::ffff:10.1.2.3"));
    CU_ASSERT_FALSE(permits6(&l, "::ffff:127.0.0.1"));
    /* everyone */
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse("0.0.0.0/0", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits4(&l, "1.2.3.4"));
    CU_ASSERT_TRUE(permits4(&l, "255.255.255.255"));
}

static void test_match_ipv6(void)
{
    struct rci_allow_list l;
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse("fd00::/8, 2001:db8:1234::/49, ::1", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits6(&l, "fd12:3456::1"));
    CU_ASSERT_FALSE(permits6(&l, "fe80::1"));
    CU_ASSERT_TRUE(permits6(&l, "::1"));
    CU_ASSERT_FALSE(permits6(&l, "::2"));
    /* /49 ends inside the seventh byte: 2001:db8:1234:0000..7fff */
    CU_ASSERT_TRUE(permits6(&l, "2001:db8:1234:7fff::1"));
    CU_ASSERT_FALSE(permits6(&l, "2001:db8:1234:8000::1"));
    CU_ASSERT_FALSE(permits4(&l, "127.0.0.1"));  /* IPv6 rules say nothing about IPv4 */
}

static void test_match_edge_cases(void)
{
    struct rci_allow_list empty, l;
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse("", &empty, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rci_allow_list_parse("127.0.0.0/8", &l, NULL, 0), 0);
    struct sockaddr_in in = v4("127.0.0.1");
    /* an empty list allows anything, even what is not an IP address */
    CU_ASSERT_TRUE(rci_allow_list_permits(&empty, NULL, 0));
    uint8_t ib[32] = {0xab};
    CU_ASSERT_TRUE(rci_allow_list_permits(&empty, ib, sizeof ib));
    /* a list refuses what it cannot judge: short, unknown family, NULL */
    CU_ASSERT_TRUE(rci_allow_list_permits(&l, &in, sizeof in));
    CU_ASSERT_FALSE(rci_allow_list_permits(&l, &in, sizeof in - 1));
    CU_ASSERT_FALSE(rci_allow_list_permits(&l, ib, sizeof ib));
    CU_ASSERT_FALSE(rci_allow_list_permits(&l, NULL, 0));
    /* the text form */
    CU_ASSERT_TRUE(rci_allow_list_text_permits("", &in, sizeof in));
    CU_ASSERT_TRUE(rci_allow_list_text_permits("127.0.0.0/8", &in, sizeof in));
    CU_ASSERT_FALSE(rci_allow_list_text_permits("10.0.0.0/8", &in, sizeof in));
    CU_ASSERT_FALSE(rci_allow_list_text_permits("127.0.0.0/88", &in, sizeof in)); /* unparsable */
}

/* The [fabric] allow key: checked at load with file:line, printed back as written. */
static void test_config_key(void)
{
    char path[] = "/tmp/rci_allow_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("[fabric]\nport = 12000\nallow = 10.0.0.0/8, 10.1.2.3/16\n", f);
    fclose(f);
    static struct rci_config cfg;
    struct rci_config_error err;
    CU_ASSERT_EQUAL(rci_config_load(&cfg, path, NULL, 0, NULL, &err), -EINVAL);
    char expect[128];
    snprintf(expect, sizeof expect, "%s:3: [fabric] allow = 10.0.0.0/8, 10.1.2.3/16: '10.1.2.3/16'",
             path);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, expect));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "did you mean 10.1.0.0/16?"));
    unlink(path);

    const char *ov[] = {"fabric.allow=127.0.0.0/8, ::1"};
    CU_ASSERT_EQUAL_FATAL(rci_config_load(&cfg, NULL, ov, 1, NULL, &err), 0);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.allow, "127.0.0.0/8, ::1");
    const char *bad[] = {"fabric.allow=127.0.0.0/8,"};
    CU_ASSERT_EQUAL(rci_config_load(&cfg, NULL, bad, 1, NULL, &err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "-o fabric.allow=127.0.0.0/8,: [fabric] allow"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "empty entry"));
    CU_ASSERT_EQUAL_FATAL(rci_config_load(&cfg, NULL, NULL, 0, NULL, &err), 0);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.allow, "");  /* default: everyone */
}

/* ---- the publisher and raw clients --------------------------------------------- */

#define MS 1000000ull
#define SEC 1000000000ull
#define CLIENT_RX 4u
#define CLIENT_BUF 65536u
#define TX_CONTEXT ((void *)(uintptr_t)1000)

static uint16_t next_port(void)
{
    static uint16_t port;
    if (!port)
        port = (uint16_t)(30000 + getpid() % 20000);
    return port++;
}

static void fabric_params(struct rci_fabric_params *fp, const char *prov, enum rci_ep_kind ep,
                          uint16_t port, const char *allow)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->provider, sizeof fp->provider, "%s", prov);
    fp->endpoint = ep;
    snprintf(fp->address, sizeof fp->address, "127.0.0.1");
    fp->port = port;
    fp->header_slots = 16;
    fp->header_slot_size = 64;
    fp->buffered_pages = 0;
    fp->flush_timeout_ns = 1 * MS;
    fp->peer_timeout_ns = 5 * SEC;
    fp->heartbeat_ns = 200 * MS;
    fp->max_subscribers = 4;
    snprintf(fp->allow, sizeof fp->allow, "%s", allow);
}

/* A raw client: sends what the test builds, counts what arrives by type. */
struct client {
    struct rci_fabric f;
    struct fid_ep *ep;
    fi_addr_t pub;
    uint8_t *tx, *rx;
    struct rci_fabric_mr txmr, rxmr;
    size_t to_send;            /* bytes of tx waiting to be posted (retried on EAGAIN) */
    bool in_flight;
    unsigned received[RCI_MSG_TYPE_MAX + 1];
    uint32_t bye_reason;
};

static int client_post_rx(struct client *c, unsigned i)
{
    return (int)fi_recv(c->ep, c->rx + (size_t)i * CLIENT_BUF, CLIENT_BUF, c->rxmr.desc,
                        FI_ADDR_UNSPEC, (void *)(uintptr_t)(i + 1));
}

/* MSG: only the endpoint (the connect is the test's); RDM: ready to send. */
static int client_open(struct client *c, const char *prov, enum rci_ep_kind ep, uint16_t port,
                       char *err, size_t len)
{
    struct rci_fabric_params fp;
    fabric_params(&fp, prov, ep, port, "");
    memset(c, 0, sizeof *c);
    int rc = rci_fabric_open(&c->f, &fp, RCI_FABRIC_CONNECT, 64, err, len);
    if (rc)
        return rc;
    c->tx = aligned_alloc(4096, CLIENT_BUF);
    c->rx = aligned_alloc(4096, CLIENT_RX * CLIENT_BUF);
    if (c->f.rdm) {
        c->ep = c->f.ep;
        rc = rci_fabric_av_insert(&c->f, c->f.info->dest_addr, c->f.info->dest_addrlen, &c->pub,
                                 err, len);
    } else {
        rc = rci_fabric_msg_ep_open(&c->f, NULL, NULL, &c->ep, err, len);
    }
    if (!rc)
        rc = rci_fabric_mr_reg(&c->f, c->tx, CLIENT_BUF, FI_SEND, c->ep, &c->txmr, err, len);
    if (!rc)
        rc = rci_fabric_mr_reg(&c->f, c->rx, CLIENT_RX * CLIENT_BUF, FI_RECV, c->ep, &c->rxmr, err,
                              len);
    for (unsigned i = 0; !rc && i < CLIENT_RX; i++)
        rc = client_post_rx(c, i);
    return rc;
}

static void client_close(struct client *c)
{
    rci_fabric_ep_close(c->ep);
    if (c->f.rdm)
        c->f.ep = NULL;
    rci_fabric_mr_close(&c->txmr);
    rci_fabric_mr_close(&c->rxmr);
    rci_fabric_close(&c->f);
    free(c->tx);
    free(c->rx);
}

static void client_poll(struct client *c)
{
    if (c->to_send && !c->in_flight) {
        int rc = (int)fi_send(c->ep, c->tx, c->to_send, c->txmr.desc,
                              c->f.rdm ? c->pub : FI_ADDR_UNSPEC, TX_CONTEXT);
        if (rc == 0)
            c->in_flight = true;
        else
            CU_ASSERT_EQUAL(rc, -FI_EAGAIN);
    }
    struct rci_fabric_cqe e[8];
    char err[256];
    int n = rci_fabric_cq_poll(&c->f, e, 8, err, sizeof err);
    for (int i = 0; i < n; i++) {
        if (e[i].context == TX_CONTEXT) {
            c->in_flight = false;
            c->to_send = 0;
            continue;
        }
        unsigned k = (unsigned)(uintptr_t)e[i].context - 1;
        if (k >= CLIENT_RX)
            continue;
        const uint8_t *m = c->rx + (size_t)k * CLIENT_BUF;
        int type = e[i].err ? 0 : rci_wire_check(m, e[i].len, RCI_WIRE_TO_SUBSCRIBER, NULL);
        if (type > 0)
            c->received[type]++;
        struct rci_wire_bye bye;
        if (type == RCI_MSG_BYE && rci_wire_check_bye(m, e[i].len, &bye) == RCI_WIRE_OK)
            c->bye_reason = bye.reason;
        client_post_rx(c, k);
    }
}

/* Run publisher and clients in turn until cond(arg) or 10 s. */
static bool pump(struct rci_publisher *p, struct client *a, struct client *b,
                 bool (*cond)(void *), void *arg)
{
    uint64_t end = rci_now_ns() + 10 * SEC;
    while (rci_now_ns() < end) {
        rci_publisher_progress(p);
        if (a)
            client_poll(a);
        if (b)
            client_poll(b);
        if (cond(arg))
            return true;
        usleep(200);
    }
    return false;
}

static bool got_bye(void *arg) { return ((struct client *)arg)->received[RCI_MSG_BYE] > 0; }
static bool got_welcome(void *arg) { return ((struct client *)arg)->received[RCI_MSG_WELCOME] > 0; }

static void no_send(void *arg, uint64_t key, int status) { (void)arg, (void)key, (void)status; }

static struct rci_publisher *open_publisher(const char *prov, enum rci_ep_kind ep, uint16_t port,
                                           const char *allow)
{
    struct rci_fabric_params fp;
    fabric_params(&fp, prov, ep, port, allow);
    struct rci_publisher_callbacks cb = {.on_send_complete = no_send};
    struct rci_publisher *p = NULL;
    char err[256] = "";
    int rc = rci_publisher_create(&fp, &cb, &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "\npublisher: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return p;
}

/* A publisher refuses to start with an allow list that does not parse. */
static void test_publisher_bad_list(void)
{
    struct rci_fabric_params fp;
    fabric_params(&fp, "tcp", RCI_EP_MSG, next_port(), "10.0.0.0/8, 10.1.2.3/16");
    struct rci_publisher_callbacks cb = {.on_send_complete = no_send};
    struct rci_publisher *p = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL(rci_publisher_create(&fp, &cb, &p, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "allow: '10.1.2.3/16': host bits set"));
}

/* MSG: the connection request from 127.0.0.1 is rejected (nothing allocated for it). */
static void test_publisher_msg_refused(void)
{
    uint16_t port = next_port();
    struct rci_publisher *p = open_publisher("tcp", RCI_EP_MSG, port, "10.0.0.0/8");
    struct client c;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(client_open(&c, "tcp", RCI_EP_MSG, port, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(fi_connect(c.ep, c.f.info->dest_addr, NULL, 0), 0);
    /* the refusal arrives as an error event on the client's EQ */
    uint64_t end = rci_now_ns() + 10 * SEC;
    int event_err = 0;
    while (!event_err && rci_now_ns() < end) {
        rci_publisher_progress(p);
        struct rci_fabric_event ev;
        if (rci_fabric_eq_poll(&c.f, &ev, err, sizeof err) == 1) {
            event_err = ev.err ? ev.err : -1;
            if (ev.info)
                fi_freeinfo(ev.info);
        }
        usleep(200);
    }
    CU_ASSERT_EQUAL(event_err, FI_ECONNREFUSED);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(p, &st);
    CU_ASSERT_EQUAL(st.connections_refused_allowlist, 1);
    CU_ASSERT_EQUAL(st.connections_refused, 1);
    CU_ASSERT_EQUAL(st.connections, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "connection from 127.0.0.1:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "not in [fabric] allow"));
    client_close(&c);
    rci_publisher_destroy(p);
}

/* Send HELLO declaring the address `as` (RDM). */
static void send_hello(struct client *c, const void *as, size_t aslen, uint64_t client_id)
{
    ssize_t n = rci_wire_build_hello(c->tx, CLIENT_BUF, client_id, CLIENT_BUF, as, (uint16_t)aslen);
    CU_ASSERT_FATAL(n > 0);
    c->to_send = (size_t)n;
}

static void own_address(struct client *c, uint8_t *addr, size_t *len)
{
    char err[256];
    *len = RCI_WIRE_MAX_ADDR;
    CU_ASSERT_EQUAL_FATAL(rci_fabric_getname(&c->f, c->ep, addr, len, err, sizeof err), 0);
}

/* An RDM publisher on a new port allowing `allow`, and client c with its own
 * address (addr, *alen) that has a HELLO with client_id ready to go. */
static struct rci_publisher *rdm_publisher_and_hello(const char *allow, struct client *c, uint8_t *addr,
                                                     size_t *alen, uint64_t client_id)
{
    uint16_t port = next_port();
    struct rci_publisher *p = open_publisher("tcp;ofi_rxm", RCI_EP_RDM, port, allow);
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(client_open(c, "tcp;ofi_rxm", RCI_EP_RDM, port, err, sizeof err), 0);
    own_address(c, addr, alen);
    send_hello(c, addr, *alen, client_id);
    return p;
}

/* RDM: a HELLO from an address outside the list gets BYE(refused), counted. */
static void test_publisher_rdm_refused(void)
{
    struct client c;
    uint8_t addr[RCI_WIRE_MAX_ADDR];
    size_t alen;
    struct rci_publisher *p = rdm_publisher_and_hello("10.0.0.0/8, ::1", &c, addr, &alen, 7);
    CU_ASSERT(pump(p, &c, NULL, got_bye, &c));
    CU_ASSERT_EQUAL(c.bye_reason, RCI_BYE_REFUSED);
    CU_ASSERT_EQUAL(c.received[RCI_MSG_WELCOME], 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(p, &st);
    CU_ASSERT_EQUAL(st.connections_refused_allowlist, 1);
    CU_ASSERT_EQUAL(st.connections, 0);
    /* the peer as libfabric names it: "fi_sockaddr_in://127.0.0.1:PORT" */
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "127.0.0.1:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "not in [fabric] allow"));
    client_close(&c);
    rci_publisher_destroy(p);
}

struct forged {
    struct rci_publisher *p;
    uint64_t unknown_before;
};

static bool forged_dropped(void *arg)
{
    struct forged *f = arg;
    struct rci_publisher_stats st;
    rci_publisher_get_stats(f->p, &st);
    return st.unknown_sender > f->unknown_before;
}

/* RDM: client A declares client B's address in its HELLO. The publisher
 * answers B (the declared address), and A's SUBSCRIBE, which libfabric
 * attributes to A's own connection, is dropped as from an unknown sender. */
static void test_publisher_rdm_forged_hello(void)
{
    uint16_t port = next_port();
    struct rci_publisher *p = open_publisher("tcp;ofi_rxm", RCI_EP_RDM, port, "127.0.0.0/8");
    struct client a, b;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(client_open(&a, "tcp;ofi_rxm", RCI_EP_RDM, port, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(client_open(&b, "tcp;ofi_rxm", RCI_EP_RDM, port, err, sizeof err), 0);
    uint8_t addr_b[RCI_WIRE_MAX_ADDR];
    size_t alen_b;
    own_address(&b, addr_b, &alen_b);
    send_hello(&a, addr_b, alen_b, 66);
    CU_ASSERT(pump(p, &a, &b, got_welcome, &b));  /* the answer goes to the declared address */
    CU_ASSERT_EQUAL(a.received[RCI_MSG_WELCOME], 0);
    struct forged f = {.p = p};
    struct rci_publisher_stats st;
    rci_publisher_get_stats(p, &st);
    f.unknown_before = st.unknown_sender;
    struct rci_wire_range all = {0, UINT64_MAX};
    ssize_t n = rci_wire_build_sub(a.tx, CLIENT_BUF, RCI_MSG_SUBSCRIBE, 1, &all, 1);
    CU_ASSERT_FATAL(n > 0);
    a.to_send = (size_t)n;
    CU_ASSERT(pump(p, &a, &b, forged_dropped, &f));
    rci_publisher_get_stats(p, &st);
    CU_ASSERT_EQUAL(st.subscribe_requests, 0);
    CU_ASSERT_EQUAL(a.received[RCI_MSG_SUB_ACK], 0);
    CU_ASSERT_EQUAL(rci_publisher_subscribers_of(p, 0, NULL, 0), 0);
    client_close(&a);
    client_close(&b);
    rci_publisher_destroy(p);
}

static bool got_two_welcomes(void *arg) { return ((struct client *)arg)->received[RCI_MSG_WELCOME] >= 2; }

/* RDM: a HELLO repeated as it was (a lost WELCOME) is answered again; one
 * that now asks for an RMA ring the peer did not join with ends the peer
 * (BYE, dead_by_error) instead of being answered as if nothing changed. */
static void test_publisher_rdm_hello_changed(void)
{
    struct client c;
    uint8_t addr[RCI_WIRE_MAX_ADDR];
    size_t alen;
    struct rci_publisher *p = rdm_publisher_and_hello("127.0.0.0/8", &c, addr, &alen, 9);
    CU_ASSERT_FATAL(pump(p, &c, NULL, got_welcome, &c));
    send_hello(&c, addr, alen, 9);
    CU_ASSERT(pump(p, &c, NULL, got_two_welcomes, &c));
    CU_ASSERT_EQUAL(c.received[RCI_MSG_BYE], 0);

    send_hello(&c, addr, alen, 9);
    struct rci_wire_hello_rma ring = {.base = 0x100000, .len = 1u << 20, .key = 42};
    ssize_t n = rci_wire_add_hello_rma(c.tx, CLIENT_BUF, c.to_send, &ring);
    CU_ASSERT_FATAL(n > 0);
    c.to_send = (size_t)n;
    CU_ASSERT(pump(p, &c, NULL, got_bye, &c));
    CU_ASSERT_EQUAL(c.received[RCI_MSG_WELCOME], 2);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(p, &st);
    CU_ASSERT_EQUAL(st.dead_by_error, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_publisher_last_error(p), "HELLO again with another delivery"));
    client_close(&c);
    rci_publisher_destroy(p);
}

static void register_tests(void)
{
    RCI_SUITE("allow list", {"parse ok", test_parse_ok}, {"parse errors", test_parse_errors},
             {"match ipv4", test_match_ipv4}, {"match ipv6", test_match_ipv6},
             {"match edge cases", test_match_edge_cases}, {"config key", test_config_key});
    RCI_SUITE("publisher", {"bad list refused at create", test_publisher_bad_list},
             {"tcp msg: connection refused", test_publisher_msg_refused},
             {"tcp;ofi_rxm rdm: HELLO refused", test_publisher_rdm_refused},
             {"tcp;ofi_rxm rdm: forged HELLO gains nothing", test_publisher_rdm_forged_hello},
             {"tcp;ofi_rxm rdm: HELLO again asking for another ring", test_publisher_rdm_hello_changed});
}

RCI_CUNIT_MAIN(register_tests)
