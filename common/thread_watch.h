/* SPDX-License-Identifier: BSD-3-Clause */
/* thread_watch.h — which threads are stuck: each thread counts the turns of
 * its loop (its heartbeat); one whose count has not moved for stuck_after_ns
 * is stuck, until it moves again. A state machine the caller feeds (the
 * daemon, every tick, with its readout and publisher threads' heartbeats);
 * it never reads a clock or prints. Single-threaded: the feeding thread's. */
#ifndef RCI_THREAD_WATCH_H
#define RCI_THREAD_WATCH_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define RCI_THREAD_WATCH_MAX 96u

enum rci_thread_change {
    RCI_THREAD_SAME = 0,        /* moving as before, or stuck as before */
    RCI_THREAD_NOW_STUCK,       /* its heartbeat stood still for stuck_after_ns */
    RCI_THREAD_MOVES_AGAIN,     /* was stuck; its heartbeat moved */
};

struct rci_thread_watch {
    unsigned n;                               /* slots seen (the highest fed + 1) */
    bool seen[RCI_THREAD_WATCH_MAX];
    bool stuck[RCI_THREAD_WATCH_MAX];
    uint64_t beat[RCI_THREAD_WATCH_MAX];      /* heartbeat at the last move */
    uint64_t moved_ns[RCI_THREAD_WATCH_MAX];  /* when it last moved (or was first fed) */
    unsigned nstuck;                          /* slots stuck now */
    uint64_t episodes;                        /* times a slot became stuck */
};

/* Zeroed: nothing seen. */
void rci_thread_watch_init(struct rci_thread_watch *w);

/* Slot `slot`'s heartbeat at now_ns. The first feed of a slot starts its
 * clock. stuck_after_ns 0: never stuck (a slot stuck before is released).
 * A slot >= RCI_THREAD_WATCH_MAX is ignored (RCI_THREAD_SAME). */
enum rci_thread_change rci_thread_watch_feed(struct rci_thread_watch *w, unsigned slot, uint64_t beat,
                                             uint64_t now_ns, uint64_t stuck_after_ns);

/* How long slot has stood still at now_ns (0 for a slot never fed). */
uint64_t rci_thread_watch_still_ns(const struct rci_thread_watch *w, unsigned slot, uint64_t now_ns);

/* Join tid, but give up once beat(ctx), its heartbeat, has not moved for
 * stuck_after_ns (looked at every 100 ms): a thread inside a call that never
 * returns would hang the joiner for good. True when joined; false leaves the
 * thread running (the caller must then keep everything it may touch).
 * stuck_after_ns 0: join for ever. Reads the clock; not for a hot path. */
bool rci_thread_join_unless_stuck(pthread_t tid, uint64_t (*beat)(const void *ctx), const void *ctx,
                                  uint64_t stuck_after_ns);

#endif
