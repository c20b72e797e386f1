/* SPDX-License-Identifier: BSD-3-Clause */
/* thread_watch.c — stuck-thread detection from heartbeats (thread_watch.h). */
#include "common/thread_watch.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/monotonic.h"

#define JOIN_SLICE_NS (100ull * 1000 * 1000)

void rci_thread_watch_init(struct rci_thread_watch *w)
{
    memset(w, 0, sizeof *w);
}

static enum rci_thread_change set_stuck(struct rci_thread_watch *w, unsigned slot, bool stuck)
{
    if (w->stuck[slot] == stuck)
        return RCI_THREAD_SAME;
    w->stuck[slot] = stuck;
    if (!stuck) {
        w->nstuck--;
        return RCI_THREAD_MOVES_AGAIN;
    }
    w->nstuck++;
    w->episodes++;
    return RCI_THREAD_NOW_STUCK;
}

enum rci_thread_change rci_thread_watch_feed(struct rci_thread_watch *w, unsigned slot, uint64_t beat,
                                             uint64_t now_ns, uint64_t stuck_after_ns)
{
    if (slot >= RCI_THREAD_WATCH_MAX)
        return RCI_THREAD_SAME;
    if (!w->seen[slot] || beat != w->beat[slot]) {
        w->seen[slot] = true;
        w->beat[slot] = beat;
        w->moved_ns[slot] = now_ns;
        if (slot >= w->n)
            w->n = slot + 1;
        return set_stuck(w, slot, false);
    }
    /* A clock that went backwards (a caller's mistake) is no stand-still. */
    bool still = stuck_after_ns != 0 && now_ns >= w->moved_ns[slot] &&
                 now_ns - w->moved_ns[slot] >= stuck_after_ns;
    return set_stuck(w, slot, still);
}

uint64_t rci_thread_watch_still_ns(const struct rci_thread_watch *w, unsigned slot, uint64_t now_ns)
{
    if (slot >= RCI_THREAD_WATCH_MAX || !w->seen[slot] || now_ns < w->moved_ns[slot])
        return 0;
    return now_ns - w->moved_ns[slot];
}

bool rci_thread_join_unless_stuck(pthread_t tid, uint64_t (*beat)(const void *ctx), const void *ctx,
                                  uint64_t stuck_after_ns)
{
    if (stuck_after_ns == 0)
        return pthread_join(tid, NULL) == 0;
    uint64_t last = beat(ctx);
    uint64_t moved_ns = rci_now_ns();
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);   /* pthread_timedjoin_np takes CLOCK_REALTIME */
        uint64_t ns = (uint64_t)until.tv_nsec + JOIN_SLICE_NS;
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
        int rc = pthread_timedjoin_np(tid, NULL, &until);
        if (rc != ETIMEDOUT)
            return rc == 0;
        uint64_t now = rci_now_ns(), b = beat(ctx);
        if (b != last) {
            last = b;
            moved_ns = now;
        } else if (now - moved_ns >= stuck_after_ns) {
            return false;
        }
    }
}
