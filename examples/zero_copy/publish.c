/* SPDX-License-Identifier: BSD-3-Clause */
/* publish — send chunks from this program's own memory, zero copy, to ringcast
 * subscribers (ringcast/pub.h).
 *
 *   publish PORT CHUNKS CHUNK_SIZE
 *
 * Listens on 127.0.0.1:PORT, waits until a subscriber subscribed, then sends
 * CHUNKS chunks of CHUNK_SIZE bytes (tags 0..3) to every subscriber of each
 * chunk's tag. Chunk i is written into one of NBUF buffers of a registered
 * region and sent from there: the buffer is written again only after every
 * send from it completed (its key came back). Chunk i holds i as 8 bytes
 * little-endian, then bytes (i + j) & 0xff. Then it waits until the
 * subscribers left (a completed send means the provider has the data, not
 * that the subscriber read it) and exits 0 if every key came back sent. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringcast/ringcast.h>

#define NBUF 16u          /* buffers of the registered region */
#define MAX_SUBS 8u

struct app {
    uint8_t *region;      /* NBUF x chunk_size, registered once */
    size_t chunk_size;
    unsigned sends_in_flight[NBUF];   /* per buffer: sends whose key has not come back */
    uint64_t completed_ok, completed_failed;
    unsigned subscription_changes, left;
};

/* Runs inside rc_pub_progress/wait/destroy only: only bookkeeping. */
static void on_send_complete(void *ctx, uint64_t key, int status)
{
    struct app *a = ctx;
    a->sends_in_flight[key % NBUF]--;
    if (status == 0)
        a->completed_ok++;
    else
        a->completed_failed++;
}

static void on_peer_event(void *ctx, rc_pub_peer peer, enum rc_pub_event ev)
{
    (void)peer;
    struct app *a = ctx;
    if (ev == RC_PUB_EVENT_SUBSCRIPTIONS)
        a->subscription_changes++;
    else if (ev == RC_PUB_EVENT_GONE)
        a->left++;
}

static void fill_chunk(uint8_t *buf, size_t len, uint64_t i)
{
    for (size_t j = 0; j < len; j++)
        buf[j] = j < 8 ? (uint8_t)(i >> (8 * j)) : (uint8_t)(i + j);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Send chunk i (already in its buffer) to every subscriber of its tag. */
static int send_chunk(struct rc_pub *pub, struct app *a, uint64_t i)
{
    uint64_t tag = i % 4;
    rc_pub_peer subs[MAX_SUBS];
    unsigned n = rc_pub_subscribers_of(pub, tag, subs, MAX_SUBS);
    struct iovec iov = {.iov_base = a->region + (i % NBUF) * a->chunk_size, .iov_len = a->chunk_size};
    for (unsigned k = 0; k < n && k < MAX_SUBS; k++) {
        int rc;
        while ((rc = rc_pub_send(pub, subs[k], tag, 0, &iov, 1, i)) == -EAGAIN)
            rc_pub_wait(pub, 1000 * 1000);   /* no free slot: let completions come back */
        if (rc == 0)
            a->sends_in_flight[i % NBUF]++;
        else if (rc != -ENOTCONN)   /* a subscriber that just left is not an error */
            return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CHUNKS CHUNK_SIZE\n", argv[0]);
        return 2;
    }
    static struct app a;
    uint64_t chunks = strtoull(argv[2], NULL, 0);
    a.chunk_size = strtoull(argv[3], NULL, 0);
    if (a.chunk_size < 8 || a.chunk_size > (1u << 20)) {
        fprintf(stderr, "CHUNK_SIZE must be 8 .. 1 MiB\n");
        return 2;
    }
    a.region = aligned_alloc(4096, NBUF * a.chunk_size);
    struct rc_pub_params p;
    rc_pub_params_default(&p);
    p.port = (uint16_t)atoi(argv[1]);
    p.cb = (struct rc_pub_callbacks){
        .ctx = &a, .on_send_complete = on_send_complete, .on_peer_event = on_peer_event};
    char err[256] = "";
    struct rc_pub *pub;
    if (!a.region || rc_pub_create(&p, &pub, err, sizeof err) != 0) {
        fprintf(stderr, "rc_pub_create: %s\n", err);
        return 1;
    }
    if (rc_pub_register(pub, a.region, NBUF * a.chunk_size, err, sizeof err) != 0) {
        fprintf(stderr, "rc_pub_register: %s\n", err);
        rc_pub_destroy(pub);
        return 1;
    }
    double deadline = now_s() + 30;
    while (a.subscription_changes == 0 && now_s() < deadline)   /* they join only while we poll */
        rc_pub_wait(pub, 10 * 1000 * 1000);
    rc_pub_peer peers[MAX_SUBS];
    unsigned npeers = rc_pub_peers(pub, peers, MAX_SUBS);
    int rc = a.subscription_changes ? 0 : -ETIMEDOUT;
    for (uint64_t i = 0; rc == 0 && i < chunks; i++) {
        while (a.sends_in_flight[i % NBUF] > 0)   /* the buffer is still being sent */
            rc_pub_wait(pub, 1000 * 1000);
        fill_chunk(a.region + (i % NBUF) * a.chunk_size, a.chunk_size, i);
        rc = send_chunk(pub, &a, i);
    }
    struct rc_pub_stats st;
    deadline = now_s() + 30;
    do {   /* every key back, and the subscribers gone (or 30 s) */
        rc_pub_wait(pub, 10 * 1000 * 1000);
        rc_pub_get_stats(pub, &st);
    } while ((st.slots_free < st.slots_total || st.peers_active > 0) && now_s() < deadline);
    printf("sent %" PRIu64 " chunks to %u subscriber(s): %" PRIu64 " sends completed, %" PRIu64
           " failed, %u free slots at the lowest\n", chunks, npeers, a.completed_ok,
           a.completed_failed, rc_pub_free_slots(pub));
    if (rc)
        fprintf(stderr, "publish: %s %s\n", strerror(-rc), rc_pub_last_error(pub));
    rc_pub_destroy(pub);   /* keys still out would come back here as -ECANCELED */
    free(a.region);        /* only after destroy: until then the provider may read it */
    return rc == 0 && a.completed_failed == 0 && a.completed_ok > 0 ? 0 : 1;
}
