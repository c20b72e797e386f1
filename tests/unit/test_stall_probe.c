/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stall_probe.c — net/stall_probe: a loopback tcp connection is found by
 * both of its addresses (and not by a wrong one), its queues are read (bytes
 * the peer did not read; bytes we could not deliver to a peer that does not
 * read), and an epoll set's watch on it is read from /proc/self/fdinfo. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/stall_probe.h"
#include "tests/unit/cunit_main.h"

struct conn {
    int listener, client, server;
    struct sockaddr_in server_addr, client_addr;
};

static int open_conn(struct conn *c)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    c->listener = socket(AF_INET, SOCK_STREAM, 0);
    c->client = socket(AF_INET, SOCK_STREAM, 0);
    if (c->listener < 0 || c->client < 0 || bind(c->listener, (struct sockaddr *)&a, sizeof a) ||
        listen(c->listener, 1) || getsockname(c->listener, (struct sockaddr *)&a, &len) ||
        connect(c->client, (struct sockaddr *)&a, sizeof a))
        return -1;
    c->server = accept(c->listener, NULL, NULL);
    len = sizeof c->server_addr;
    if (c->server < 0 || getsockname(c->server, (struct sockaddr *)&c->server_addr, &len))
        return -1;
    len = sizeof c->client_addr;
    return getsockname(c->client, (struct sockaddr *)&c->client_addr, &len);
}

static void close_conn(struct conn *c)
{
    close(c->client);
    close(c->server);
    close(c->listener);
}

static void test_found_by_both_addresses(void)
{
    struct conn c;
    CU_ASSERT_FATAL(open_conn(&c) == 0);
    struct rci_stall_probe pr;
    CU_ASSERT_EQUAL(rci_stall_probe_tcp((struct sockaddr *)&c.server_addr, (struct sockaddr *)&c.client_addr,
                                        -1, &pr), 0);
    CU_ASSERT_TRUE(pr.found);
    CU_ASSERT_EQUAL(pr.fd, c.server);   /* the server's end, not the client's */
    CU_ASSERT_EQUAL(pr.outq, 0);
    CU_ASSERT_EQUAL(pr.inq, 0);
    CU_ASSERT_EQUAL(pr.watched, RCI_STALL_WATCH_UNKNOWN);
    /* The client's end, asked the other way round. */
    CU_ASSERT_EQUAL(rci_stall_probe_tcp((struct sockaddr *)&c.client_addr, (struct sockaddr *)&c.server_addr,
                                        -1, &pr), 0);
    CU_ASSERT_TRUE(pr.found);
    CU_ASSERT_EQUAL(pr.fd, c.client);
    /* A peer port nobody has. */
    struct sockaddr_in wrong = c.client_addr;
    wrong.sin_port = htons((uint16_t)(ntohs(wrong.sin_port) ^ 1u));
    CU_ASSERT_EQUAL(rci_stall_probe_tcp((struct sockaddr *)&c.server_addr, (struct sockaddr *)&wrong, -1, &pr), 0);
    CU_ASSERT_FALSE(pr.found);
    close_conn(&c);
}

static void test_queues(void)
{
    struct conn c;
    CU_ASSERT_FATAL(open_conn(&c) == 0);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    CU_ASSERT_EQUAL(write(c.client, buf, 100), 100);
    struct rci_stall_probe pr;
    for (int i = 0; i < 100; i++) {   /* loopback delivers at once; allow the stack a moment */
        rci_stall_probe_tcp((struct sockaddr *)&c.server_addr, (struct sockaddr *)&c.client_addr, -1, &pr);
        if (pr.inq == 100)
            break;
        usleep(1000);
    }
    CU_ASSERT_EQUAL(pr.inq, 100);   /* received, not read */
    CU_ASSERT_EQUAL(pr.outq, 0);
    /* The client never reads: what the server writes beyond its window stays queued. */
    fcntl(c.server, F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    while (sent < (64u << 20) && write(c.server, buf, sizeof buf) > 0)
        sent += sizeof buf;
    rci_stall_probe_tcp((struct sockaddr *)&c.server_addr, (struct sockaddr *)&c.client_addr, -1, &pr);
    CU_ASSERT_TRUE(pr.found);
    CU_ASSERT_TRUE(pr.outq > 0);
    close_conn(&c);
}

static void test_epoll_watch(void)
{
    struct conn c;
    CU_ASSERT_FATAL(open_conn(&c) == 0);
    int ep = epoll_create1(0);
    CU_ASSERT_FATAL(ep >= 0);
    CU_ASSERT_EQUAL(rci_stall_probe_watched(ep, c.server), RCI_STALL_NOT_WATCHED);
    struct epoll_event ev = { .events = EPOLLIN };
    CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, c.server, &ev), 0);
    CU_ASSERT_EQUAL(rci_stall_probe_watched(ep, c.server) & (EPOLLIN | EPOLLOUT), EPOLLIN);
    ev.events = EPOLLIN | EPOLLOUT;
    CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_MOD, c.server, &ev), 0);
    struct rci_stall_probe pr;
    rci_stall_probe_tcp((struct sockaddr *)&c.server_addr, (struct sockaddr *)&c.client_addr, ep, &pr);
    CU_ASSERT_TRUE(pr.found);
    CU_ASSERT_EQUAL(pr.watched & (EPOLLIN | EPOLLOUT), EPOLLIN | EPOLLOUT);
    CU_ASSERT_EQUAL(rci_stall_probe_watched(ep, c.client), RCI_STALL_NOT_WATCHED);
    CU_ASSERT_EQUAL(rci_stall_probe_watched(-1, c.server), RCI_STALL_WATCH_UNKNOWN);
    close(ep);
    close_conn(&c);
}

static void register_tests(void)
{
    RCI_SUITE("stall_probe", {"found by both addresses", test_found_by_both_addresses},
              {"send and receive queues", test_queues}, {"epoll watch from fdinfo", test_epoll_watch});
}

RCI_CUNIT_MAIN(register_tests)
