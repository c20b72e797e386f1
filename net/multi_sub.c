/* SPDX-License-Identifier: BSD-3-Clause */
/* multi_sub.c — one subscriber over every publisher serving its tags
 * (multi_sub.h). */
#include "net/multi_sub.h"
#include "net/sub_internal.h"
#include "net/sub_stream.h"
#include "common/errbuf.h"
#include "common/monotonic.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSUB_WAIT_SLICE_NS  1000000ull    /* longest wait on one connection while others may have work */
#define MSUB_MAX_ENTRIES    4096u         /* entries read per lookup */
#define MSUB_HISTORY        256u          /* host:port of publishers gone, to recognise restarts */
#define MSUB_TAKE_EVERY_NS  10000000ull   /* look for a new lookup result this often */
#define MSUB_UNLISTED_GRACE_NS 1500000000ull /* an unlisted publisher stays while it spoke this recently */

struct rci_msub;

/* A slot stays allocated while it is parked: its connection's callbacks
 * (on_disconnect from rc_sub_destroy) still get it as their ctx. */
struct pub_slot {
    struct rci_msub_publisher pub;   /* first: the callbacks' ctx is the slot */
    struct rci_msub *m;
    bool parked;                     /* dropped, kept for its views: says nothing more */
};

struct rci_msub {
    struct rci_msub_params p;
    struct rci_disc *disc;
    size_t nwanted;
    uint64_t *want_first, *want_last;
    size_t npub;
    struct rci_msub_publisher *pub[RCI_MSUB_MAX_PUBLISHERS];
    /* Dropped publishers' connections whose views the program still holds
     * (on_view): not polled, destroyed once their last view is released.
     * parked_cap >= nparked + npub at all times (add_publisher makes the
     * room), so a drop never allocates and never has to free a connection
     * under the program's views. */
    size_t nparked, parked_cap;
    struct pub_slot **parked;
    struct rci_disc_entry *entries;       /* the lookup being applied (poll thread) */
    /* The lookup thread: discovery reads block (an etcd host that is down
     * costs a connect timeout), so they run beside the connections, never in
     * rci_msub_poll. Its result waits in fresh[] until poll takes it. */
    pthread_t looker;
    bool looker_started;
    pthread_mutex_t lock;                 /* everything below */
    pthread_cond_t wake;
    bool stop, fresh_ready;
    int fresh_rc;
    size_t nfresh;
    struct rci_disc_entry *fresh, *scratch;
    struct rci_disc_list_stats fresh_st;
    char fresh_err[512];
    bool *chosen;
    char history[MSUB_HISTORY][136];      /* "host:port" of publishers dropped */
    unsigned history_next;
    uint64_t next_lookup_ns;
    size_t turn;                          /* which connection waits next */
    struct rci_msub_stats st;
    struct rc_sub_stats retired;          /* of connections gone */
    char err[512];
};

/* ---- stats ------------------------------------------------------------------ */

#define SUB_COUNTERS(X) X(messages) X(chunks) X(bytes) X(data_messages) X(pages) X(records) X(fragments) \
    X(reassembled) X(reassembly_drops) X(too_big) X(unwanted) X(reordered) X(seq_lost) X(seq_late)       \
    X(held_dropped) X(malformed_total) X(truncated) X(unexpected) X(connects) X(connect_failures)         \
    X(reconnects) X(disconnects) X(publisher_restarts) X(garbage_disconnects) X(heartbeats_sent)          \
    X(heartbeats_received) X(sub_requests) X(sub_refused) X(rx_errors) X(tx_errors) X(send_again)        \
    X(refused) X(shm_stale_removed) X(chunks_gathered) X(chunks_reassembled_copied) X(views_allocated)      \
    X(view_failures) X(poll_spin_hits) X(poll_spin_misses) X(poll_spin_preempted) X(poll_sleeps) \
    X(poll_coalesced)

static void add_stats(struct rc_sub_stats *to, const struct rc_sub_stats *from)
{
#define ADD(f) to->f += from->f;
    SUB_COUNTERS(ADD)
#undef ADD
    for (unsigned k = 0; k < RC_SUB_MALFORMED_KINDS; k++)
        to->malformed[k] += from->malformed[k];
    to->connected += from->connected;
}

void rci_msub_get_stats(const struct rci_msub *m, struct rci_msub_stats *st)
{
    *st = m->st;
    st->publishers = m->npub;
    st->parked = m->nparked;
    st->total = m->retired;
    st->total.connected = 0;
    st->total.views_outstanding = 0;
    for (size_t i = 0; i < m->npub; i++) {
        struct rc_sub_stats s;
        rc_sub_get_stats(m->pub[i]->sub, &s);
        add_stats(&st->total, &s);
        st->total.views_outstanding += s.views_outstanding;
    }
    for (size_t i = 0; i < m->nparked; i++) {
        struct rc_sub_stats s;
        rc_sub_get_stats(m->parked[i]->pub.sub, &s);
        st->total.views_outstanding += s.views_outstanding;
    }
}

size_t rci_msub_count(const struct rci_msub *m) { return m->npub; }

const struct rci_msub_publisher *rci_msub_publisher(const struct rci_msub *m, size_t i)
{
    return i < m->npub ? m->pub[i] : NULL;
}

const char *rci_msub_last_error(const struct rci_msub *m) { return m->err; }

/* ---- the publishers' callbacks -------------------------------------------- */


static void slot_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    struct pub_slot *s = ctx;
    s->m->p.on_data(s->m->p.ctx, &s->pub, tag, flags, data, len);
}

static void slot_view(void *ctx, struct rc_view *view)
{
    struct pub_slot *s = ctx;
    s->m->p.on_view(s->m->p.ctx, &s->pub, view);
}

static void slot_event(struct pub_slot *s, enum rci_msub_event ev)
{
    if (!s->parked && s->m->p.on_event)
        s->m->p.on_event(s->m->p.ctx, ev, &s->pub);
}

/* A WELCOME with another publisher id than the last one: the daemon behind
 * this address restarted and rc_sub reconnected to it. */
static void slot_connect(void *ctx)
{
    struct pub_slot *s = ctx;
    struct rc_sub_stats st;
    rc_sub_get_stats(s->pub.sub, &st);
    bool restarted = s->pub.publisher_id && st.publisher_id != s->pub.publisher_id;
    s->pub.publisher_id = st.publisher_id;
    slot_event(s, RCI_MSUB_CONNECTED);
    if (restarted) {
        s->m->st.restarts++;
        slot_event(s, RCI_MSUB_RESTARTED);
    }
}

static void slot_disconnect(void *ctx, enum rc_sub_disconnect_reason reason)
{
    struct pub_slot *s = ctx;
    s->pub.last_reason = reason;
    if (reason != RC_SUB_DISC_CLOSED)
        slot_event(s, RCI_MSUB_DISCONNECTED);
}

/* ---- ranges ----------------------------------------------------------------- */

/* The wanted ranges an entry serves, into first/last (at most cap). */
static size_t served_part(const struct rci_msub *m, const struct rci_disc_entry *e, uint64_t *first,
                          uint64_t *last, size_t cap)
{
    size_t n = 0;
    for (size_t w = 0; w < m->nwanted; w++)
        for (unsigned r = 0; r < e->nranges && n < cap; r++) {
            uint64_t f = m->want_first[w] > e->first[r] ? m->want_first[w] : e->first[r];
            uint64_t l = m->want_last[w] < e->last[r] ? m->want_last[w] : e->last[r];
            if (f <= l) {
                first[n] = f;
                last[n++] = l;
            }
        }
    return n;
}

static bool serves_wanted(const struct rci_msub *m, const struct rci_disc_entry *e)
{
    uint64_t f, l;
    return served_part(m, e, &f, &l, 1) > 0;
}

/* ---- following the entries ------------------------------------------------ */

/* The same publisher thread of the same daemon run. */
static bool same_entry(const struct rci_disc_entry *a, const struct rci_disc_entry *b)
{
    return a->thread == b->thread && strcmp(a->daemon_id, b->daemon_id) == 0;
}

static bool same_address(const struct rci_disc_entry *a, const struct rci_disc_entry *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static void host_port(const struct rci_disc_entry *e, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%u", e->host, (unsigned)e->port);
}

/* Of a daemon's threads (each serves every tag), the one this subscriber
 * takes: spread over subscribers by pid, the lowest present when that one
 * is not. Of two daemons announcing the same host:port (one restarted before
 * the old entry expired), the younger. */
static void choose(struct rci_msub *m, size_t n)
{
    unsigned me = (unsigned)getpid();
    for (size_t i = 0; i < n; i++)
        m->chosen[i] = serves_wanted(m, &m->entries[i]);
    for (size_t i = 0; i < n; i++) {
        struct rci_disc_entry *a = &m->entries[i];
        for (size_t j = 0; m->chosen[i] && j < n; j++) {
            struct rci_disc_entry *b = &m->entries[j];
            if (i == j || !m->chosen[j])
                continue;
            if (same_address(a, b) && (b->start_time_ms > a->start_time_ms ||
                                        (b->start_time_ms == a->start_time_ms && j < i)))
                m->chosen[i] = false;   /* an older daemon on the same address */
            else if (strcmp(a->daemon_id, b->daemon_id) == 0) {
                unsigned want = me % a->threads;
                bool b_better = b->thread == want || (a->thread != want && b->thread < a->thread);
                if (b_better)
                    m->chosen[i] = false;
            }
        }
    }
}

static bool in_history(struct rci_msub *m, const char *hp)
{
    for (unsigned i = 0; i < MSUB_HISTORY; i++)
        if (strcmp(m->history[i], hp) == 0)
            return true;
    return false;
}

static void free_slot(struct pub_slot *s)
{
    rc_sub_destroy(s->pub.sub);   /* may call slot_disconnect: s is still valid here */
    free(s->pub.first);
    free(s);
}

static void drop_publisher(struct rci_msub *m, size_t i, bool say)
{
    struct pub_slot *s = (struct pub_slot *)m->pub[i];
    if (say) {
        m->st.gone++;
        slot_event(s, RCI_MSUB_GONE);
    }
    /* Not polled from here on: a chunk it was gathering can never end, and
     * its view (counted in views_outstanding) would keep it parked for ever. */
    rci_sub_park(s->pub.sub);
    struct rc_sub_stats st;
    rc_sub_get_stats(s->pub.sub, &st);
    st.connected = 0;
    add_stats(&m->retired, &st);
    host_port(&s->pub.entry, m->history[m->history_next], sizeof m->history[0]);
    m->history_next = (m->history_next + 1) % MSUB_HISTORY;
    m->pub[i] = m->pub[--m->npub];
    if (st.views_outstanding) {   /* its views' memory stays until they are released */
        m->st.parks++;
        if (m->nparked >= m->p.parked_room)
            m->st.parks_past_room++;   /* the room grew for it (add_publisher) */
        s->parked = true;
        m->parked[m->nparked++] = s;   /* room made when it was added */
        return;
    }
    free_slot(s);
}

/* Room in parked[] for `need` connections: every publisher followed and
 * every one parked, so that dropping any of them never needs memory. Grows
 * past params.parked_room when needed (rare: a program holding views of
 * many dropped publishers). */
static int parked_reserve(struct rci_msub *m, size_t need)
{
    if (need <= m->parked_cap)
        return 0;
    size_t cap = 2 * m->parked_cap > need ? 2 * m->parked_cap : need;
    struct pub_slot **grown = realloc(m->parked, cap * sizeof *grown);
    if (!grown)
        return -ENOMEM;
    m->parked = grown;
    m->parked_cap = cap;
    return 0;
}

static int add_publisher(struct rci_msub *m, const struct rci_disc_entry *e)
{
    if (m->npub >= m->p.max_publishers) {   /* not followed: counted, named, tried at every lookup */
        m->st.publishers_over_limit++;
        rci_set_err(m->err, sizeof m->err, "%s:%u: not followed: already %zu publishers (the most)", e->host,
                    (unsigned)e->port, m->p.max_publishers);
        return -ENOSPC;
    }
    struct pub_slot *s = NULL;
    size_t cap = m->nwanted * e->nranges;
    if (parked_reserve(m, m->npub + m->nparked + 1) || !(s = calloc(1, sizeof *s)) ||
        !(s->pub.first = calloc(2 * cap, sizeof *s->pub.first))) {
        free(s);
        m->st.create_failures++;   /* not connected: tried again at the next lookup */
        rci_set_err(m->err, sizeof m->err, "%s:%u: out of memory for its connection", e->host,
                    (unsigned)e->port);
        return -ENOMEM;
    }
    s->m = m;
    s->pub.entry = *e;
    s->pub.last = s->pub.first + cap;
    s->pub.nranges = served_part(m, e, s->pub.first, s->pub.last, cap);
    s->pub.added_ns = s->pub.heard_ns = rci_now_ns();
    struct rc_sub_params sp = m->p.sub;
    snprintf(sp.provider, sizeof sp.provider, "%s", e->provider);
    sp.endpoint = strcmp(e->endpoint, "rdm") == 0 ? RC_SUB_EP_RDM : RC_SUB_EP_MSG;
    snprintf(sp.host, sizeof sp.host, "%s", e->host);
    sp.port = e->port;
    sp.cb = (struct rc_sub_callbacks){.ctx = s, .on_data = m->p.on_data ? slot_data : NULL,
                                     .on_connect = slot_connect, .on_disconnect = slot_disconnect};
    sp.on_view = m->p.on_view ? slot_view : NULL;
    int rc = rci_sub_create(&sp, NULL, &s->pub.sub, m->err, sizeof m->err);   /* never a block stream */
    if (rc == 0)   /* not connected yet: recorded, sent after WELCOME */
        rc = rc_sub_subscribe(s->pub.sub, s->pub.first, s->pub.last, s->pub.nranges);
    if (rc) {
        rc_sub_destroy(s->pub.sub);
        free(s->pub.first);
        free(s);
        m->st.create_failures++;
        return rc;
    }
    m->pub[m->npub++] = &s->pub;
    char hp[136];
    host_port(e, hp, sizeof hp);
    if (in_history(m, hp)) {
        m->st.restarts++;
        slot_event(s, RCI_MSUB_RESTARTED);
    } else {
        m->st.appeared++;
        slot_event(s, RCI_MSUB_ADDED);
    }
    return 0;
}

/* A publisher stays while its entry is listed and chosen. One whose entry
 * is not listed at all stays as long as its connection is up, it sent
 * something (data or heartbeat) within MSUB_UNLISTED_GRACE_NS and no other
 * entry claims its address: discovery may lag behind (an etcd member that
 * came back, a directory refreshed late), and dropping a live connection
 * would lose chunks; a dead daemon falls silent, and then it goes. */
static bool keep(struct rci_msub *m, const struct rci_msub_publisher *p, size_t n)
{
    bool listed = false, claimed = false;
    for (size_t j = 0; j < n; j++) {
        if (same_entry(&p->entry, &m->entries[j])) {
            if (m->chosen[j])
                return true;
            listed = true;
        }
        if (m->chosen[j] && same_address(&p->entry, &m->entries[j]))
            claimed = true;
    }
    struct rc_sub_stats st;
    rc_sub_get_stats(p->sub, &st);
    if (!listed && !claimed && st.connected && rci_now_ns() - p->heard_ns < MSUB_UNLISTED_GRACE_NS) {
        m->st.unlisted_kept++;
        return true;
    }
    return false;
}

/* A connection that already reached the daemon now announced at its
 * address (restarted within the ttl: rc_sub reconnected to it by itself)
 * takes that daemon's entry instead of being dropped and made anew, which
 * would lose what is in flight. Only when it serves the same ranges. */
static bool adopt(struct rci_msub *m, struct rci_msub_publisher *p, size_t n)
{
    struct rc_sub_stats st;
    rc_sub_get_stats(p->sub, &st);
    if (!st.connected)
        return false;
    for (size_t j = 0; j < n; j++) {
        if (!m->chosen[j] || !same_address(&p->entry, &m->entries[j]))
            continue;
        for (size_t i = 0; i < m->npub; i++)
            if (same_entry(&m->pub[i]->entry, &m->entries[j]))
                return false;   /* it has its own connection already */
        uint64_t f[RCI_DISC_MAX_RANGES], l[RCI_DISC_MAX_RANGES];
        size_t k = served_part(m, &m->entries[j], f, l, RCI_DISC_MAX_RANGES);
        if (k != p->nranges || memcmp(f, p->first, k * sizeof *f) || memcmp(l, p->last, k * sizeof *l))
            return false;
        p->entry = m->entries[j];
        return true;
    }
    return false;
}

/* When each publisher was last heard from, to the lookup interval. */
static void note_heard(struct rci_msub *m)
{
    uint64_t now = rci_now_ns();
    for (size_t i = 0; i < m->npub; i++) {
        struct rc_sub_stats st;
        rc_sub_get_stats(m->pub[i]->sub, &st);
        if (st.messages != m->pub[i]->heard_messages) {
            m->pub[i]->heard_messages = st.messages;
            m->pub[i]->heard_ns = now;
        }
    }
}

static void *looker_main(void *arg)
{
    struct rci_msub *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        pthread_mutex_unlock(&m->lock);
        size_t n = 0;
        struct rci_disc_list_stats ls;
        char err[512] = "";
        int rc = rci_disc_list(m->disc, m->scratch, MSUB_MAX_ENTRIES, &n, &ls, err, sizeof err);
        pthread_mutex_lock(&m->lock);
        m->fresh_rc = rc;
        m->nfresh = rc ? 0 : n;
        memcpy(m->fresh, m->scratch, m->nfresh * sizeof *m->fresh);
        m->fresh_st = ls;
        memcpy(m->fresh_err, err, sizeof err);
        m->fresh_ready = true;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + m->p.refresh_ns;
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
        while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* The lookup thread's latest result into m->entries; false when there is
 * none new (or the thread holds the lock right now: next poll). */
static bool take_fresh(struct rci_msub *m, size_t *n)
{
    if (pthread_mutex_trylock(&m->lock) != 0)
        return false;
    bool ready = m->fresh_ready;
    if (ready) {
        m->fresh_ready = false;
        m->st.lookups++;
        if (m->fresh_rc) {
            m->st.lookup_failures++;   /* keep what we have: connections do not need discovery */
            memcpy(m->err, m->fresh_err, sizeof m->err);
            ready = false;
        } else {
            *n = m->nfresh;
            memcpy(m->entries, m->fresh, *n * sizeof *m->entries);
            m->st.malformed = m->fresh_st.malformed;
            m->st.foreign = m->fresh_st.foreign;
            m->st.stale = m->fresh_st.stale;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return ready;
}

static void lookup(struct rci_msub *m)
{
    size_t n = 0;
    if (!take_fresh(m, &n))
        return;
    note_heard(m);
    choose(m, n);
    for (size_t i = m->npub; i-- > 0;)
        if (!keep(m, m->pub[i], n) && !adopt(m, m->pub[i], n))
            drop_publisher(m, i, true);
    for (size_t j = 0; j < n; j++) {
        if (!m->chosen[j])
            continue;
        bool have = false;
        for (size_t i = 0; !have && i < m->npub; i++)
            have = same_entry(&m->pub[i]->entry, &m->entries[j]);
        if (!have)
            add_publisher(m, &m->entries[j]);
    }
}

/* Destroy the parked connections whose views are all released. */
static void unpark(struct rci_msub *m)
{
    for (size_t i = 0; i < m->nparked;) {
        struct rc_sub_stats st;
        rc_sub_get_stats(m->parked[i]->pub.sub, &st);
        if (st.views_outstanding) {
            i++;
            continue;
        }
        free_slot(m->parked[i]);
        m->parked[i] = m->parked[--m->nparked];
    }
}

int rci_msub_poll(struct rci_msub *m, uint64_t timeout_ns)
{
    uint64_t now = rci_now_ns(), until = now + timeout_ns;
    if (m->nparked)
        unpark(m);
    if (now >= m->next_lookup_ns) {
        lookup(m);
        m->next_lookup_ns = rci_now_ns() + MSUB_TAKE_EVERY_NS;
    }
    int handled = 0;
    do {
        for (size_t i = 0; i < m->npub; i++)
            handled += rc_sub_poll(m->pub[i]->sub, 0);
        if (handled)
            break;
        now = rci_now_ns();
        uint64_t left = until > now ? until - now : 0;
        if (m->next_lookup_ns > now && m->next_lookup_ns - now < left)
            left = m->next_lookup_ns - now;
        if (m->npub == 0) {
            rci_sleep_ns(left);
            break;
        }
        uint64_t slice = left < MSUB_WAIT_SLICE_NS ? left : MSUB_WAIT_SLICE_NS;
        handled += rc_sub_poll(m->pub[m->turn++ % m->npub]->sub, slice);
    } while (!handled && rci_now_ns() < until && rci_now_ns() < m->next_lookup_ns);
    return handled;
}

int rci_msub_create(const struct rci_msub_params *p, const uint64_t *first, const uint64_t *last,
                    size_t nranges, struct rci_msub **out, char *err, size_t errlen)
{
    *out = NULL;
    if ((!p->on_data && !p->on_view) || nranges == 0 || nranges > RCI_MSUB_MAX_RANGES) {
        rci_set_err(err, errlen, "need on_data or on_view and 1..%u tag ranges", RCI_MSUB_MAX_RANGES);
        return -EINVAL;
    }
    for (size_t i = 0; i < nranges; i++)
        if (first[i] > last[i]) {
            rci_set_err(err, errlen, "tag range %zu: first > last", i);
            return -EINVAL;
        }
    struct rci_msub *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->p = *p;
    if (!m->p.refresh_ns)
        m->p.refresh_ns = 1000000000ull;
    if (!m->p.parked_room)
        m->p.parked_room = RCI_MSUB_MAX_PUBLISHERS;
    if (!m->p.max_publishers || m->p.max_publishers > RCI_MSUB_MAX_PUBLISHERS)
        m->p.max_publishers = RCI_MSUB_MAX_PUBLISHERS;
    m->parked = calloc(m->p.parked_room, sizeof *m->parked);
    m->parked_cap = m->parked ? m->p.parked_room : 0;
    m->want_first = calloc(2 * nranges, sizeof *m->want_first);
    m->entries = calloc(MSUB_MAX_ENTRIES, sizeof *m->entries);
    m->fresh = calloc(MSUB_MAX_ENTRIES, sizeof *m->fresh);
    m->scratch = calloc(MSUB_MAX_ENTRIES, sizeof *m->scratch);
    m->chosen = calloc(MSUB_MAX_ENTRIES, sizeof *m->chosen);
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
    int rc = -ENOMEM;
    if (m->want_first && m->entries && m->fresh && m->scratch && m->chosen && m->parked)
        rc = rci_disc_open(&p->disc, &m->disc, err, errlen);
    if (rc) {
        rci_msub_destroy(m);
        return rc;
    }
    m->want_last = m->want_first + nranges;
    memcpy(m->want_first, first, nranges * sizeof *first);
    memcpy(m->want_last, last, nranges * sizeof *last);
    m->nwanted = nranges;
    rc = pthread_create(&m->looker, NULL, looker_main, m);
    if (rc) {
        rci_set_err(err, errlen, "cannot start the discovery lookup thread: %s", strerror(rc));
        rci_msub_destroy(m);
        return -rc;
    }
    m->looker_started = true;
    *out = m;
    return 0;
}

void rci_msub_destroy(struct rci_msub *m)
{
    if (!m)
        return;
    if (m->looker_started) {
        pthread_mutex_lock(&m->lock);
        m->stop = true;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->looker, NULL);
    }
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    while (m->npub)
        drop_publisher(m, m->npub - 1, false);
    for (size_t i = 0; i < m->nparked; i++)
        free_slot(m->parked[i]);   /* views still held now are the program's error (multi_sub.h) */
    rci_disc_close(m->disc);
    free(m->parked);
    free(m->want_first);
    free(m->entries);
    free(m->fresh);
    free(m->scratch);
    free(m->chosen);
    free(m);
}
