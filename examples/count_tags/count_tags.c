/* SPDX-License-Identifier: BSD-3-Clause */
/* count_tags — subscribe to every tag of a ringcast publisher (the readout
 * daemon, or any rc_pub program) and count the chunks received per tag.
 *
 *   count_tags HOST PORT COUNT
 *
 * Stops after COUNT chunks (or 60 s without reaching them: exit 1) and prints
 * one line per tag, "tag 0x...: N chunks, B bytes, F flagged", then the total. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringcast/ringcast.h>

#define MAX_TAGS 4096

struct tag_count {
    uint64_t tag, chunks, bytes, flagged;
};

struct counts {
    struct tag_count tag[MAX_TAGS];
    unsigned ntags;
    uint64_t total, untracked;
};

/* Linear search: a publisher has few tags per card (e-links); fine here. */
static struct tag_count *find_tag(struct counts *c, uint64_t tag)
{
    for (unsigned i = 0; i < c->ntags; i++)
        if (c->tag[i].tag == tag)
            return &c->tag[i];
    if (c->ntags == MAX_TAGS)
        return NULL;
    c->tag[c->ntags].tag = tag;
    return &c->tag[c->ntags++];
}

/* Runs inside rc_sub_poll(); data is valid only during the call. */
static void on_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    (void)data;
    struct counts *c = ctx;
    struct tag_count *t = find_tag(c, tag);
    c->total++;
    if (!t) {
        c->untracked++;
        return;
    }
    t->chunks++;
    t->bytes += len;
    if (flags & RC_CHUNK_FLAGS_ALL)
        t->flagged++;
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
        fprintf(stderr, "usage: %s HOST PORT COUNT\n", argv[0]);
        return 2;
    }
    static struct counts counts;   /* static: 128 KiB, not on the stack */
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    snprintf(p.host, sizeof p.host, "%s", argv[1]);
    p.port = (uint16_t)atoi(argv[2]);
    uint64_t want = strtoull(argv[3], NULL, 0);
    p.cb.ctx = &counts;
    p.cb.on_data = on_data;

    char err[256];
    struct rc_sub *s;
    if (rc_sub_create(&p, &s, err, sizeof err) != 0) {
        fprintf(stderr, "rc_sub_create: %s\n", err);
        return 1;
    }
    int rc = rc_sub_subscribe_all(s);   /* sent once the connection is up */
    if (rc != 0) {
        fprintf(stderr, "rc_sub_subscribe_all: %s\n", strerror(-rc));
        rc_sub_destroy(s);
        return 1;
    }
    double deadline = now_s() + 60;
    while (counts.total < want && now_s() < deadline)
        rc_sub_poll(s, 100 * 1000 * 1000);   /* connects, reconnects, delivers */

    for (unsigned i = 0; i < counts.ntags; i++)
        printf("tag 0x%" PRIx64 ": %" PRIu64 " chunks, %" PRIu64 " bytes, %" PRIu64 " flagged\n",
               counts.tag[i].tag, counts.tag[i].chunks, counts.tag[i].bytes, counts.tag[i].flagged);
    printf("total: %" PRIu64 " chunks in %u tags (ringcast %s)\n", counts.total, counts.ntags,
           rc_version());
    if (counts.total < want)
        fprintf(stderr, "only %" PRIu64 " of %" PRIu64 " chunks: %s\n", counts.total, want,
                rc_sub_last_error(s));
    rc_sub_destroy(s);
    return counts.total >= want ? 0 : 1;
}
