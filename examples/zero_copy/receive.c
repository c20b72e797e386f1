/* SPDX-License-Identifier: BSD-3-Clause */
/* receive — the subscriber side of the zero-copy example: subscribes to tags
 * 0..3 of `publish` and checks every chunk's bytes.
 *
 *   receive HOST PORT CHUNKS
 *
 * Chunk i holds i as 8 bytes little-endian, then bytes (i + j) & 0xff, and
 * arrives with tag i % 4, in order. Exit 0 when CHUNKS chunks arrived, all
 * intact and in order (within 60 s). */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringcast/ringcast.h>

struct check {
    uint64_t received, bad, next;
};

static void on_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    struct check *c = ctx;
    const uint8_t *b = data;
    uint64_t i = 0;
    for (unsigned j = 0; j < 8 && j < len; j++)
        i |= (uint64_t)b[j] << (8 * j);
    int ok = len >= 8 && flags == 0 && i == c->next && tag == i % 4;
    for (size_t j = 8; ok && j < len; j++)
        ok = b[j] == (uint8_t)(i + j);
    c->bad += !ok;
    c->next = i + 1;
    c->received++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST PORT CHUNKS\n", argv[0]);
        return 2;
    }
    struct check c = {0};
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    snprintf(p.host, sizeof p.host, "%s", argv[1]);
    p.port = (uint16_t)atoi(argv[2]);
    uint64_t want = strtoull(argv[3], NULL, 0);
    p.cb.ctx = &c;
    p.cb.on_data = on_data;
    char err[256];
    struct rc_sub *s;
    if (rc_sub_create(&p, &s, err, sizeof err) != 0) {
        fprintf(stderr, "rc_sub_create: %s\n", err);
        return 1;
    }
    uint64_t first = 0, last = 3;
    if (rc_sub_subscribe(s, &first, &last, 1) != 0) {
        fprintf(stderr, "rc_sub_subscribe failed\n");
        rc_sub_destroy(s);
        return 1;
    }
    double deadline = now_s() + 60;
    while (c.received < want && now_s() < deadline)
        rc_sub_poll(s, 100 * 1000 * 1000);
    printf("received %" PRIu64 " chunks, %" PRIu64 " bad\n", c.received, c.bad);
    rc_sub_destroy(s);   /* says BYE: the publisher sees us leave */
    return c.received == want && c.bad == 0 ? 0 : 1;
}
