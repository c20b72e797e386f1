/* SPDX-License-Identifier: BSD-3-Clause */
/* announce.c — the announcing thread (announce.h). */
#include "net/announce.h"
#include "common/errbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rci_announce {
    struct rci_disc *disc;
    struct rci_log_hook log;
    size_t n;
    struct rci_disc_entry *entries;
    uint64_t period_ns;
    pthread_t thread;
    pthread_mutex_t lock;     /* stop flag and stats */
    pthread_cond_t wake;
    bool stop;
    struct rci_announce_stats st;
};

#define say(a, level, ...) rci_log_hook_say(&(a)->log, level, false, __FILE__, __LINE__, __VA_ARGS__)

static void one_round(struct rci_announce *a)
{
    char err[512] = "";
    bool was_up = a->st.up;
    int rc = rci_disc_announce(a->disc, a->entries, a->n, err, sizeof err);
    pthread_mutex_lock(&a->lock);
    a->st.lease_lost = rci_disc_leases_lost(a->disc);
    if (rc == 0) {
        if (was_up) {
            a->st.refreshes++;
        } else {
            a->st.announces++;
            a->st.up = 1;
        }
    } else {
        a->st.failures++;
        if (was_up)
            a->st.outages++;
        a->st.up = 0;
    }
    uint64_t announces = a->st.announces, failures = a->st.failures;
    pthread_mutex_unlock(&a->lock);
    if (rc == 0 && !was_up)
        say(a, RCI_LOG_INFO, "discovery: %zu publisher%s announced at %s%s", a->n, a->n == 1 ? "" : "s",
            rci_disc_url(a->disc), announces > 1 ? " again" : "");
    else if (rc != 0 && (was_up || failures == 1))
        say(a, RCI_LOG_WARN, "discovery: cannot announce at %s: %s; readout and publishing go on, retrying"
            " every %.1f s", rci_disc_url(a->disc), err, (double)a->period_ns / 1e9);
}

static void *announce_main(void *arg)
{
    struct rci_announce *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stop) {
        pthread_mutex_unlock(&a->lock);
        one_round(a);
        pthread_mutex_lock(&a->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + a->period_ns;
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
        while (!a->stop && pthread_cond_timedwait(&a->wake, &a->lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

int rci_announce_start(const struct rci_discovery_params *p, const struct rci_disc_entry *e, size_t n,
                       struct rci_log_hook log, struct rci_announce **out, char *err, size_t errlen)
{
    *out = NULL;
    struct rci_announce *a = calloc(1, sizeof *a);
    if (!a || !(a->entries = calloc(n ? n : 1, sizeof *e))) {
        free(a);
        return -ENOMEM;
    }
    int rc = rci_disc_open(p, &a->disc, err, errlen);
    if (rc) {
        free(a->entries);
        free(a);
        return rc;
    }
    memcpy(a->entries, e, n * sizeof *e);
    a->n = n;
    a->log = log;
    a->period_ns = p->ttl_ns / 3;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&a->lock, NULL);
    rc = pthread_create(&a->thread, NULL, announce_main, a);
    if (rc) {
        rci_set_err(err, errlen, "discovery: cannot start the announcing thread: %s", strerror(rc));
        rci_disc_close(a->disc);
        free(a->entries);
        free(a);
        return -rc;
    }
    *out = a;
    return 0;
}

void rci_announce_get_stats(struct rci_announce *a, struct rci_announce_stats *st)
{
    pthread_mutex_lock(&a->lock);
    *st = a->st;
    pthread_mutex_unlock(&a->lock);
}

void rci_announce_stop(struct rci_announce *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    char err[512] = "";
    if (rci_disc_withdraw(a->disc, err, sizeof err) != 0)
        say(a, RCI_LOG_WARN, "discovery: withdrawing the entries: %s (they expire within the ttl)", err);
    else
        say(a, RCI_LOG_INFO, "discovery: entries withdrawn from %s", rci_disc_url(a->disc));
    rci_disc_close(a->disc);
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
    free(a->entries);
    free(a);
}
