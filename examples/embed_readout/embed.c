/* SPDX-License-Identifier: BSD-3-Clause */
/* embed — run ringcast's readout inside this program (ringcast/readout.h):
 * open the cards of a configuration file, start them, take every chunk in a
 * callback, stop when the cards finished their run, print the statistics.
 *
 *   embed CONFIG [section.key=value ...]
 *
 * e.g. `embed deploy/ringcast.ini sim.0.run_chunks=100000`. The callback runs
 * on each card's readout thread; here it only counts and releases the chunk
 * at once. A program that keeps a chunk (to send it with rc_pub_send, or to
 * process it in another thread) releases its key later, from any thread.
 * Exit 0 when every card finished and each chunk the card produced arrived
 * here, none left unreleased. */
#define _POSIX_C_SOURCE 200809L   /* nanosleep */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ringcast/ringcast.h>

#define MAX_CARDS 8

struct card_count {
    uint64_t chunks, bytes, flagged;
} counts[MAX_CARDS];   /* counts[N] is written only by card N's readout thread */

static struct rc_daq *daq;

static int on_chunk(void *ctx, const struct rc_daq_chunk *c)
{
    (void)ctx;
    struct card_count *n = &counts[c->card % MAX_CARDS];
    n->chunks++;
    n->bytes += c->length;   /* the payload is c->pieces[0 .. c->npieces-1], in the ring */
    if (c->flags & RC_CHUNK_FLAGS_ALL)
        n->flagged++;
    rc_daq_release(daq, c->card, c->key);   /* done with it: the ring may reuse the memory */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CONFIG [section.key=value ...]\n", argv[0]);
        return 2;
    }
    char err[512];
    int rc = rc_daq_open(argv[1], (const char *const *)argv + 2, (unsigned)(argc - 2), on_chunk, NULL,
                         &daq, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "rc_daq_open: %s\n", err);
        return 1;
    }
    if (err[0])
        fprintf(stderr, "warning: %s\n", err);
    unsigned ncards = rc_daq_cards(daq);
    if (ncards > MAX_CARDS || (rc = rc_daq_start(daq)) != 0) {
        fprintf(stderr, "rc_daq_start: %s\n", ncards > MAX_CARDS ? "too many cards" : strerror(-rc));
        rc_daq_destroy(daq);
        return 1;
    }
    struct timespec tick = {0, 50 * 1000 * 1000};
    for (int i = 0; i < 1200 && !rc_daq_finished(daq); i++)   /* at most 60 s */
        nanosleep(&tick, NULL);
    rc = rc_daq_stop(daq, 2000000000ull);
    int ok = rc == 0;
    for (unsigned i = 0; i < ncards; i++) {
        struct rc_daq_stats st;
        rc_daq_get_stats(daq, i, &st);
        printf("card %u: received %" PRIu64 " chunks (%" PRIu64 " bytes, %" PRIu64 " flagged);"
               " card produced %" PRIu64 ", decoded %" PRIu64 ", in flight %" PRIu64
               ", decode errors %" PRIu64 ", ring high water %" PRIu64 " of %" PRIu64 " bytes\n",
               i, counts[i].chunks, counts[i].bytes, counts[i].flagged, st.chunks_produced, st.chunks,
               st.chunks_in_flight, st.decode_errors, st.ring_high_water, st.ring_size);
        ok = ok && st.finished && counts[i].chunks == st.chunks_produced && st.chunks_in_flight == 0;
    }
    rc_daq_destroy(daq);
    return ok ? 0 : 1;
}
