/* SPDX-License-Identifier: BSD-3-Clause */
/* test_net_publisher.c — the publisher (net/publisher.h) against real
 * subscribers over loopback, with tcp (msg) and tcp;ofi_rxm (rdm):
 *  - 10^6 zero-copy messages, 8 B .. 64 KiB, 1..N pieces from one registered
 *    buffer; every byte checked by the subscriber, every key back once;
 *  - -EAGAIN when header slots run out, and recovery;
 *  - closing a subscriber: pending_sends() returns its keys exactly once,
 *    no callback inside close_peer/pending_sends (GONE from progress);
 *  - the iov_limit / rx-buffer fallback (fragments counted, bytes right);
 *  - buffered pages;
 *  - no callback inside a send: -EAGAIN (no slot, no page) leaves the
 *    completions waiting in the CQ to the progress call;
 *  - a subscriber leaving mid-stream: its keys come back, the other one is
 *    still served;
 *  - malformed control messages (raw libfabric client) rejected and counted,
 *    refused subscriptions, a client vanishing without BYE;
 *  - max_subscribers: one more subscriber is refused (again and again);
 *  - a ringcast-sub process SIGKILLed mid-stream.
 * The publisher runs in the test thread, subscribers in threads (the
 * subscriber library ringcast/sub.h) or a child process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net/fabric.h"
#include "net/publisher.h"
#include "ringcast/sub.h"
#include "net/wire.h"
#include "tests/unit/cunit_main.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define SRC_SIZE (1u << 20)
#define MAX_PIECES 16u
#define STREAM_MESSAGES 1000000u

extern char **environ;

/* ---- providers and ports ------------------------------------------------------ */

struct prov { const char *name; enum rci_ep_kind ep; enum rc_sub_endpoint sub_ep; };
static const struct prov PROVS[] = {
    { "tcp", RCI_EP_MSG, RC_SUB_EP_MSG },
    { "tcp;ofi_rxm", RCI_EP_RDM, RC_SUB_EP_RDM },
};

static uint16_t next_port(void)
{
    static unsigned k;
    return (uint16_t)(20000u + ((unsigned)getpid() % 2000u) * 20u + (k++ % 20u));
}

static void pub_params(struct rci_fabric_params *fp, const struct prov *pv, uint16_t port)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->provider, sizeof fp->provider, "%s", pv->name);
    fp->endpoint = pv->ep;
    snprintf(fp->address, sizeof fp->address, "127.0.0.1");
    fp->port = port;
    fp->header_slots = 256;
    fp->header_slot_size = 64;
    fp->buffered_pages = 16;
    fp->buffered_page_size = 8192;
    fp->flush_timeout_ns = 1 * MS;
    fp->peer_timeout_ns = 3 * SEC;   /* generous: a busy 2-core box stalls threads */
    fp->heartbeat_ns = 100 * MS;
    fp->poll_spin_ns = 20000;
    fp->max_subscribers = 4;
}

/* ---- source buffer and message layouts --------------------------------------- */

static uint8_t *src_buf;

static void fill_source(void)
{
    if (src_buf)
        return;
    src_buf = aligned_alloc(4096, SRC_SIZE);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < SRC_SIZE; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        src_buf[i] = (uint8_t)x;
    }
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct layout { unsigned n; uint32_t total; uint32_t off[MAX_PIECES], len[MAX_PIECES]; };

/* Deterministic from (seq, max_pieces, max_size): sender and checker agree.
 * Mostly small messages (8..256 B), some medium, 1 % up to max_size. */
static void make_layout(uint64_t seq, unsigned max_pieces, uint32_t max_size, struct layout *l)
{
    uint64_t r = mix(seq);
    unsigned cls = (unsigned)(r % 100);
    uint32_t lo = 8, hi = 256;
    if (cls >= 99) { lo = 4096; hi = max_size; }
    else if (cls >= 90) { lo = 256; hi = 4096 < max_size ? 4096 : max_size; }
    if (hi < lo) hi = lo;
    l->total = lo + (uint32_t)((r >> 8) % (hi - lo + 1));
    l->n = 1 + (unsigned)((r >> 40) % max_pieces);
    if (l->n > l->total)
        l->n = l->total;
    uint32_t each = l->total / l->n;
    for (unsigned i = 0; i < l->n; i++) {
        l->len[i] = i + 1 == l->n ? l->total - each * (l->n - 1) : each;
        l->off[i] = (uint32_t)(mix(seq * 31 + i) % (SRC_SIZE - l->len[i] + 1));
    }
}

static bool layout_matches(const struct layout *l, const uint8_t *data, size_t len)
{
    if (len != l->total)
        return false;
    for (unsigned i = 0; i < l->n; i++) {
        if (memcmp(data, src_buf + l->off[i], l->len[i]))
            return false;
        data += l->len[i];
    }
    return true;
}

static unsigned to_iov(const struct layout *l, struct iovec *iov)
{
    for (unsigned i = 0; i < l->n; i++)
        iov[i] = (struct iovec){ .iov_base = src_buf + l->off[i], .iov_len = l->len[i] };
    return l->n;
}

/* ---- keys: each one must come back exactly once ------------------------------ */

struct keys {
    uint8_t *seen;
    uint64_t n;
    uint64_t ok, err, dup, out_of_range;
};

static void keys_init(struct keys *k, uint64_t n)
{
    memset(k, 0, sizeof *k);
    k->seen = calloc(n, 1);
    k->n = n;
}

static void on_key(void *arg, uint64_t key, int status)
{
    struct keys *k = arg;
    if (key >= k->n) {
        k->out_of_range++;
        return;
    }
    if (k->seen[key]) {
        k->dup++;
        return;
    }
    k->seen[key] = 1;
    if (status)
        k->err++;
    else
        k->ok++;
}

static uint64_t keys_back(const struct keys *k) { return k->ok + k->err; }

/* ---- subscriber threads (ringcast/sub.h) --------------------------------- */

struct sub_thread {
    pthread_t th;
    const struct prov *pv;
    uint16_t port;
    uint32_t rx_buffer_size;
    unsigned max_pieces;
    uint32_t max_size;
    uint64_t tag_base;             /* tag = tag_base + seq */
    unsigned odd_pieces;           /* ODD_TAG: odd_pieces x odd_len (0: 16) B at src + 1000 i */
    uint32_t odd_len;
    atomic_bool stop;
    atomic_bool started;
    atomic_int create_rc;
    atomic_uint_fast64_t chunks, bad, reassembled;
    struct rc_sub_stats final;
    char last_error[256];          /* the subscriber's rc_sub_last_error() at its end */
};

#define ODD_TAG (UINT64_C(1) << 40)

static void sub_on_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    struct sub_thread *t = ctx;
    struct layout l;
    if (tag == ODD_TAG && t->odd_pieces) {
        uint32_t each = t->odd_len ? t->odd_len : 16;
        l.n = t->odd_pieces;
        l.total = each * l.n;
        for (unsigned i = 0; i < l.n; i++) {
            l.off[i] = 1000 * i;
            l.len[i] = each;
        }
    } else {
        make_layout(tag - t->tag_base, t->max_pieces, t->max_size, &l);
    }
    if (flags != (uint32_t)(tag & 0xf) || !layout_matches(&l, data, len))
        atomic_fetch_add(&t->bad, 1);
    atomic_fetch_add(&t->chunks, 1);
}

static void *sub_main(void *arg)
{
    struct sub_thread *t = arg;
    struct rc_sub_params sp;
    rc_sub_params_default(&sp);
    snprintf(sp.provider, sizeof sp.provider, "%s", t->pv->name);
    sp.endpoint = t->pv->sub_ep;
    sp.port = t->port;
    sp.rx_buffer_size = t->rx_buffer_size;
    sp.heartbeat_ns = 100 * MS;
    sp.peer_timeout_ns = 5 * SEC;
    sp.reconnect_interval_ns = 100 * MS;
    sp.cb = (struct rc_sub_callbacks){ .ctx = t, .on_data = sub_on_data };
    struct rc_sub *s = NULL;
    char err[256];
    int rc = rc_sub_create(&sp, &s, err, sizeof err);
    if (rc == 0)
        rc = rc_sub_subscribe_all(s);
    if (rc)
        fprintf(stderr, "subscriber: %s\n", err);
    atomic_store(&t->create_rc, rc);
    atomic_store(&t->started, true);
    while (rc == 0 && !atomic_load(&t->stop))
        rc_sub_poll(s, 1 * MS);
    if (s) {
        rc_sub_get_stats(s, &t->final);
        snprintf(t->last_error, sizeof t->last_error, "%s", rc_sub_last_error(s));
        atomic_store(&t->reassembled, t->final.reassembled);
        rc_sub_destroy(s);
    }
    return NULL;
}

static void sub_start(struct sub_thread *t, const struct prov *pv, uint16_t port,
                      uint32_t rx_buffer_size, unsigned max_pieces, uint32_t max_size,
                      uint64_t tag_base)
{
    memset(t, 0, sizeof *t);
    t->pv = pv;
    t->port = port;
    t->rx_buffer_size = rx_buffer_size;
    t->max_pieces = max_pieces;
    t->max_size = max_size;
    t->tag_base = tag_base;
    pthread_create(&t->th, NULL, sub_main, t);
}

static void sub_stop(struct sub_thread *t)
{
    atomic_store(&t->stop, true);
    pthread_join(t->th, NULL);
}

/* ---- publisher helpers ------------------------------------------------------- */

struct pubctx {
    struct rci_publisher *p;
    struct keys keys;
    uint64_t gone_ns;              /* when the last RCI_PUB_PEER_GONE came */
    unsigned gone;                 /* how many */
    char err[256];
};

/* Set around a send call by the no-callback-inside-a-send test: a callback
 * that runs while it is set ran inside the send. */
static bool in_send;
static unsigned callbacks_in_send;

static void on_peer(void *arg, rci_peer_id peer, enum rci_pub_peer_event ev)
{
    struct pubctx *c = arg;
    (void)peer;
    callbacks_in_send += in_send;
    if (ev == RCI_PUB_PEER_GONE) {
        c->gone_ns = rci_now_ns();
        c->gone++;
    }
}

static void on_send_done(void *arg, uint64_t key, int status)
{
    callbacks_in_send += in_send;
    on_key(&((struct pubctx *)arg)->keys, key, status);
}

static int pub_open(struct pubctx *c, const struct rci_fabric_params *fp, uint64_t nkeys)
{
    fill_source();
    keys_init(&c->keys, nkeys);
    c->gone_ns = 0;
    c->gone = 0;
    struct rci_publisher_callbacks cb = { .on_send_complete = on_send_done,
                                         .on_peer_event = on_peer, .arg = c };
    int rc = rci_publisher_create(fp, &cb, &c->p, c->err, sizeof c->err);
    if (rc) {
        fprintf(stderr, "publisher: %s\n", c->err);
        return rc;
    }
    rc = rci_publisher_register(c->p, src_buf, SRC_SIZE, c->err, sizeof c->err);
    if (rc)
        fprintf(stderr, "register: %s\n", c->err);
    return rc;
}

static void pub_close(struct pubctx *c)
{
    rci_publisher_destroy(c->p);
    free(c->keys.seen);
    c->p = NULL;
}

/* ---- idle sleep (rci_publisher_sleep) ------------------------------------------ */

/* With nothing in flight the sleep is bounded by heartbeat / 4 (25 ms here),
 * not by the busy timer period (flush_timeout / 4 = 250 us): a second of
 * sleeps is a few dozen, never thousands (a loaded machine makes fewer). */
static void idle_sleep_timer_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    struct pubctx c = {0};
    CU_ASSERT_FATAL(pub_open(&c, &fp, 16) == 0);
    uint64_t end = rci_now_ns() + 1 * SEC;
    while (rci_now_ns() < end)
        rci_publisher_sleep(c.p, -1, 10 * SEC);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT(st.idle_sleeps > 0);
    CU_ASSERT(st.idle_sleeps < 400);
    CU_ASSERT_EQUAL(st.idle_sleeps_short, 0);   /* tcp and rxm have a CQ wait fd */
    pub_close(&c);
}

/* A readable wake fd ends the sleep at once: 50 sleeps take far less than
 * the 50 x 250 ms they would take bounded by the timers only (heartbeat
 * 10 s, peer_timeout 30 s: the idle timer period is capped at 250 ms). */
static void idle_sleep_wake_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    fp.heartbeat_ns = 10 * SEC;
    fp.peer_timeout_ns = 30 * SEC;
    struct pubctx c = {0};
    CU_ASSERT_FATAL(pub_open(&c, &fp, 16) == 0);
    int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    CU_ASSERT_FATAL(fd >= 0);
    uint64_t start = rci_now_ns();
    for (int i = 0; i < 50; i++)
        rci_publisher_sleep(c.p, fd, 10 * SEC);
    CU_ASSERT(rci_now_ns() - start < 5 * SEC);
    close(fd);
    pub_close(&c);
}

/* A provider without a CQ wait fd (shm): with nothing posted,
 * rci_publisher_sleep_nofd sleeps up to the caller's bound (the publisher
 * thread's idle backoff, 2 ms at most): 20 sleeps take at least 40 ms (with
 * rci_publisher_sleep's 50 us they took about 1 ms), each counted in
 * idle_sleeps_short; a readable wake fd still ends each at once (20 sleeps of
 * a 2 s bound in far less than 40 s). */
static void test_idle_sleep_nofd_shm(void)
{
    static const struct prov shm = { "shm", RCI_EP_RDM, RC_SUB_EP_RDM };
    struct rci_fabric_params fp;
    pub_params(&fp, &shm, next_port());
    fp.heartbeat_ns = 10 * SEC;
    fp.peer_timeout_ns = 30 * SEC;
    struct pubctx c = {0};
    CU_ASSERT_FATAL(pub_open(&c, &fp, 16) == 0);
    uint64_t start = rci_now_ns();
    for (int i = 0; i < 20; i++)
        rci_publisher_sleep_nofd(c.p, -1, 10 * SEC, 2 * MS);
    CU_ASSERT(rci_now_ns() - start >= 40 * MS);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.idle_sleeps, 20);
    CU_ASSERT_EQUAL(st.idle_sleeps_short, 20);   /* shm has no CQ wait fd */
    int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    CU_ASSERT_FATAL(fd >= 0);
    start = rci_now_ns();
    for (int i = 0; i < 20; i++)
        rci_publisher_sleep_nofd(c.p, fd, 10 * SEC, 2 * SEC);
    CU_ASSERT(rci_now_ns() - start < 20 * SEC);
    close(fd);
    pub_close(&c);
}

static void test_idle_sleep_timer_msg(void) { idle_sleep_timer_test(&PROVS[0]); }
static void test_idle_sleep_timer_rdm(void) { idle_sleep_timer_test(&PROVS[1]); }
static void test_idle_sleep_wake_msg(void) { idle_sleep_wake_test(&PROVS[0]); }
static void test_idle_sleep_wake_rdm(void) { idle_sleep_wake_test(&PROVS[1]); }

/* Drive the publisher until cond(arg) or timeout; returns cond's last value. */
static bool pump_until(struct pubctx *c, bool (*cond)(struct pubctx *, void *), void *arg,
                       uint64_t timeout_ns)
{
    uint64_t end = rci_now_ns() + timeout_ns;
    while (!cond(c, arg)) {
        if (rci_now_ns() > end)
            return false;
        rci_publisher_wait(c->p, 1 * MS);
    }
    return true;
}

static bool n_subscribed(struct pubctx *c, void *arg)
{
    rci_peer_id ids[8];
    return rci_publisher_subscribers_of(c->p, 0, ids, 8) >= *(unsigned *)arg;
}

static bool keys_reached(struct pubctx *c, void *arg)
{
    return keys_back(&c->keys) >= *(uint64_t *)arg;
}

struct chunks_goal { struct sub_thread *t; uint64_t n; };
static bool chunks_reached(struct pubctx *c, void *arg)
{
    (void)c;
    struct chunks_goal *g = arg;
    return atomic_load(&g->t->chunks) >= g->n;
}

/* rxm completes small sends as soon as they are buffered: without a window
 * the publisher runs far ahead of a subscriber that checks every byte, and
 * its sends wait longer and longer in the provider. A window keeps the
 * test's memory and latency bounded (how long a slow subscriber may hold
 * sends is the daemon's slow policy, not this layer's). */
#define WINDOW 2048u
static void throttle(struct pubctx *c, struct sub_thread *t, uint64_t sent)
{
    struct chunks_goal g = { t, sent > WINDOW ? sent - WINDOW : 0 };
    pump_until(c, chunks_reached, &g, 10 * SEC);
}

/* Subscribers joined and subscribed: their ids (in join order unknown). */
static unsigned wait_subscribers(struct pubctx *c, unsigned n, rci_peer_id *ids)
{
    pump_until(c, n_subscribed, &n, 10 * SEC);
    return rci_publisher_subscribers_of(c->p, 0, ids, n);
}

/* Send one message, retrying on -EAGAIN (which drives progress itself). */
static int send_one(struct pubctx *c, rci_peer_id peer, uint64_t seq, uint64_t tag_base,
                    unsigned max_pieces, uint32_t max_size, uint64_t key)
{
    struct layout l;
    struct iovec iov[MAX_PIECES];
    make_layout(seq, max_pieces, max_size, &l);
    unsigned n = to_iov(&l, iov);
    uint64_t tag = tag_base + seq;
    uint64_t end = rci_now_ns() + 10 * SEC;
    for (;;) {
        int rc = rci_publisher_send(c->p, peer, tag, (uint32_t)(tag & 0xf), iov, n, key);
        if (rc != -EAGAIN)
            return rc;
        rci_publisher_progress(c->p);
        if (rci_now_ns() > end)
            return -ETIMEDOUT;
    }
}

/* ---- 1. the stream: 10^6 messages, every byte and key checked ---------------- */

static void stream_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, STREAM_MESSAGES), 0);
    unsigned max_pieces = (unsigned)rci_publisher_fabric(c.p)->tx_iov_limit - 1;
    struct sub_thread t;
    sub_start(&t, pv, port, 128 * 1024, max_pieces, 65536, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    int failed = 0;
    for (uint64_t seq = 0; seq < STREAM_MESSAGES && !failed; seq++) {
        int rc = send_one(&c, peer, seq, 0, max_pieces, 65536, seq);
        if (rc) {
            fprintf(stderr, "send %llu: %s (%s)\n", (unsigned long long)seq, strerror(-rc),
                    rci_publisher_last_error(c.p));
            failed++;
        }
        if ((seq & 255) == 0)
            throttle(&c, &t, seq);
    }
    CU_ASSERT_EQUAL(failed, 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    if (failed)
        fprintf(stderr, "sub chunks %llu; dead: shutdown %llu silence %llu error %llu closed %llu\n",
                (unsigned long long)atomic_load(&t.chunks),
                (unsigned long long)st.dead_by_shutdown, (unsigned long long)st.dead_by_silence,
                (unsigned long long)st.dead_by_error,
                (unsigned long long)st.peers_closed);
    uint64_t want = STREAM_MESSAGES;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 30 * SEC));
    struct chunks_goal g = { &t, STREAM_MESSAGES };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 30 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&t.chunks), STREAM_MESSAGES);
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    CU_ASSERT_EQUAL(c.keys.ok, STREAM_MESSAGES);
    CU_ASSERT_EQUAL(c.keys.err + c.keys.dup + c.keys.out_of_range, 0);
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.sends, STREAM_MESSAGES);
    CU_ASSERT_EQUAL(st.fragmented_sends, 0);
    CU_ASSERT_EQUAL(st.slots_free, fp.header_slots);
    sub_stop(&t);
    if (t.final.chunks != STREAM_MESSAGES)   /* say what the subscriber saw */
        fprintf(stderr, "\nsubscriber: %llu chunks, %llu reconnects, %llu seq_lost, %llu malformed, "
                "%llu rx errors; last error: %s\n", (unsigned long long)t.final.chunks,
                (unsigned long long)t.final.reconnects, (unsigned long long)t.final.seq_lost,
                (unsigned long long)t.final.malformed_total, (unsigned long long)t.final.rx_errors,
                t.last_error);
    pub_close(&c);
}

static void test_stream_msg(void) { stream_test(&PROVS[0]); }
static void test_stream_rdm(void) { stream_test(&PROVS[1]); }

/* ---- 2. -EAGAIN when slots run out, then recovery ----------------------------- */

static void again_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.header_slots = 8;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 2000), 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    CU_ASSERT_EQUAL(rci_publisher_available_slots(c.p), 8);
    struct layout l;
    struct iovec iov[MAX_PIECES];
    /* No progress between sends: the ninth finds every slot taken. */
    int rc = 0;
    uint64_t seq = 0;
    for (; seq < 8 && rc == 0; seq++) {
        make_layout(seq, 1, 65536, &l);
        rc = rci_publisher_send(c.p, peer, seq, (uint32_t)(seq & 0xf), iov, to_iov(&l, iov), seq);
    }
    CU_ASSERT_EQUAL(rc, 0);
    make_layout(seq, 1, 65536, &l);
    rc = rci_publisher_send(c.p, peer, seq, (uint32_t)(seq & 0xf), iov, to_iov(&l, iov), seq);
    CU_ASSERT_EQUAL(rc, -EAGAIN);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT(st.again_no_slot >= 1);
    CU_ASSERT_EQUAL(rci_publisher_available_slots(c.p), 0);
    uint64_t want = 8;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 10 * SEC));
    rci_publisher_available_slots(c.p);                      /* low mark of the last period */
    CU_ASSERT_EQUAL(rci_publisher_available_slots(c.p), 8);  /* all free again */
    for (; seq < 2000; seq++)
        CU_ASSERT_EQUAL_FATAL(send_one(&c, peer, seq, 0, 1, 65536, seq), 0);
    want = 2000;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 10 * SEC));
    struct chunks_goal g = { &t, 2000 };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 10 * SEC));
    CU_ASSERT_EQUAL(c.keys.ok, 2000);
    CU_ASSERT_EQUAL(c.keys.dup, 0);
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    sub_stop(&t);
    pub_close(&c);
}

/* ---- 2b. fair shares: one subscriber that takes no data leaves the other its share */

/* Send to peer without progress until it is refused; returns the accepted count. */
static unsigned send_until_refused(struct pubctx *c, rci_peer_id peer, uint64_t *seq, int *rc)
{
    struct layout l;
    struct iovec iov[MAX_PIECES];
    unsigned n = 0;
    for (;; (*seq)++, n++) {
        make_layout(*seq, 1, 65536, &l);
        *rc = rci_publisher_send(c->p, peer, *seq, (uint32_t)(*seq & 0xf), iov, to_iov(&l, iov), *seq);
        if (*rc)
            return n;
    }
}

static void fair_share_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.header_slots = 12;       /* 2 subscribers: fair share 12 / 3 = 4 */
    fp.peer_fair_share = true;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 100), 0);
    struct sub_thread ta, tb;
    sub_start(&ta, pv, port, 128 * 1024, 1, 65536, 0);
    sub_start(&tb, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id ids[2];
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 2, ids), 2);
    /* No progress: nothing completes. The first may borrow beyond its 4
     * only while a newcomer's 4 and the other's unclaimed 4 stay free, so it
     * gets just its 4; then -ENOBUFS, not -EAGAIN. */
    uint64_t seq = 0;
    int rc;
    CU_ASSERT_EQUAL(send_until_refused(&c, ids[0], &seq, &rc), 4);
    CU_ASSERT_EQUAL(rc, -ENOBUFS);
    /* The other still finds its fair share free; with nothing left unclaimed
     * it could borrow only beyond a newcomer's 4, which are all that is free. */
    CU_ASSERT_EQUAL(send_until_refused(&c, ids[1], &seq, &rc), 4);
    CU_ASSERT_EQUAL(rc, -ENOBUFS);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.again_peer_quota, 2);
    CU_ASSERT_EQUAL(st.again_no_slot, 0);
    CU_ASSERT_EQUAL(st.slots_free, 4);
    uint64_t want = 8;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 10 * SEC));
    CU_ASSERT_EQUAL(c.keys.ok, 8);
    sub_stop(&ta);
    sub_stop(&tb);
    pub_close(&c);
}

static void test_fair_share_msg(void) { fair_share_test(&PROVS[0]); }
static void test_fair_share_rdm(void) { fair_share_test(&PROVS[1]); }

static void test_again_msg(void) { again_test(&PROVS[0]); }
static void test_again_rdm(void) { again_test(&PROVS[1]); }

/* ---- 2b. closing a subscriber: its keys are collected, not called back ----- */

static void pending_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.header_slots = 8;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 8), 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    /* No progress call: the 8 completions stay unread in the CQ. */
    for (uint64_t seq = 0; seq < 8; seq++) {
        struct layout l;
        struct iovec iov[MAX_PIECES];
        make_layout(seq, 1, 65536, &l);
        CU_ASSERT_EQUAL(rci_publisher_send(c.p, peer, seq, (uint32_t)(seq & 0xf), iov,
                                          to_iov(&l, iov), seq), 0);
    }
    uint64_t keys[16];
    CU_ASSERT_EQUAL(rci_publisher_pending_sends(c.p, peer, keys, 16), -EBUSY);
    /* No callback inside close_peer or pending_sends: GONE comes from progress. */
    callbacks_in_send = 0;
    in_send = true;
    CU_ASSERT_EQUAL(rci_publisher_close_peer(c.p, peer), 0);
    CU_ASSERT_EQUAL(rci_publisher_pending_sends(c.p, peer, keys, 3), 3);
    CU_ASSERT_EQUAL(rci_publisher_pending_sends(c.p, peer, keys + 3, 13), 5);
    CU_ASSERT_EQUAL(rci_publisher_pending_sends(c.p, peer, keys, 16), 0);
    in_send = false;
    CU_ASSERT_EQUAL(callbacks_in_send, 0);
    CU_ASSERT_EQUAL(c.gone, 0);
    unsigned seen = 0;
    for (unsigned i = 0; i < 8; i++)
        if (keys[i] < 8)
            seen |= 1u << keys[i];
    CU_ASSERT_EQUAL(seen, 0xff);
    /* Late completions for the released slots are recognised and ignored. */
    uint64_t end = rci_now_ns() + 300 * MS;
    while (rci_now_ns() < end)
        rci_publisher_wait(c.p, 1 * MS);
    CU_ASSERT_EQUAL(c.gone, 1);
    CU_ASSERT_EQUAL(keys_back(&c.keys), 0);
    CU_ASSERT_EQUAL(rci_publisher_pending_sends(c.p, peer, keys, 16), -ENOTCONN);
    struct layout l;
    struct iovec iov[MAX_PIECES];
    make_layout(0, 1, 65536, &l);
    CU_ASSERT_EQUAL(rci_publisher_send(c.p, peer, 0, 0, iov, to_iov(&l, iov), 0), -ENOTCONN);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.keys_released_by_peer_death, 8);
    CU_ASSERT_EQUAL(st.peers_closed, 1);
    CU_ASSERT_EQUAL(st.slots_free, 8);
    sub_stop(&t);
    pub_close(&c);
}

static void test_pending_msg(void) { pending_test(&PROVS[0]); }
static void test_pending_rdm(void) { pending_test(&PROVS[1]); }

/* ---- 3. fragments: more pieces than iov_limit, chunks above the rx buffer ---- */

static void fragment_test(const struct prov *pv)
{
    enum { N = 3000 };
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, N + 1), 0);
    unsigned iov_limit = (unsigned)rci_publisher_fabric(c.p)->tx_iov_limit;
    unsigned n = 3 * iov_limit < MAX_PIECES ? 3 * iov_limit : MAX_PIECES;
    struct sub_thread t;
    sub_start(&t, pv, port, 4096, MAX_PIECES, 65536, 0);
    t.odd_pieces = n;
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);

    /* One small chunk with 3 x iov_limit pieces: split by the iov limit only. */
    struct iovec iov[MAX_PIECES];
    for (unsigned i = 0; i < n; i++)
        iov[i] = (struct iovec){ .iov_base = src_buf + 1000 * i, .iov_len = 16 };
    struct rci_publisher_stats before, after;
    rci_publisher_get_stats(c.p, &before);
    int rc;
    while ((rc = rci_publisher_send(c.p, peer, ODD_TAG, 0, iov, n, N)) == -EAGAIN)
        rci_publisher_progress(c.p);
    CU_ASSERT_EQUAL(rc, 0);
    rci_publisher_get_stats(c.p, &after);
    CU_ASSERT_EQUAL(after.fragmented_sends, before.fragmented_sends + 1);
    /* pieces per message: iov_limit - 1 (one iov is the header) */
    unsigned per = iov_limit - 1;
    CU_ASSERT_EQUAL(after.fragments - before.fragments, (n + per - 1) / per);

    for (uint64_t seq = 0; seq < N; seq++) {
        CU_ASSERT_EQUAL_FATAL(send_one(&c, peer, seq, 0, MAX_PIECES, 65536, seq), 0);
        if ((seq & 255) == 0)
            throttle(&c, &t, seq);
    }
    uint64_t want = N + 1;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 20 * SEC));
    struct chunks_goal g = { &t, N + 1 };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 20 * SEC));
    CU_ASSERT_EQUAL(c.keys.ok, N + 1);
    CU_ASSERT_EQUAL(c.keys.dup + c.keys.err, 0);
    rci_publisher_get_stats(c.p, &after);
    CU_ASSERT(after.fragmented_sends > 100);
    CU_ASSERT(after.fragments > 2 * after.fragmented_sends - 1);
    sub_stop(&t);
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    CU_ASSERT(atomic_load(&t.reassembled) >= after.fragmented_sends);
    pub_close(&c);
}

static void test_fragments_msg(void) { fragment_test(&PROVS[0]); }
static void test_fragments_rdm(void) { fragment_test(&PROVS[1]); }

/* A later fragment meets -FI_EAGAIN (an injected streak: the 2nd post starts
 * 300 ms in which posts to that subscriber are refused, so fragment 2 is
 * refused): the send returns 0 at once without running any callback, the
 * rest is posted by progress, the next send to that subscriber waits
 * (-EAGAIN) until then, and the key completes once, the chunk intact. */
static void deferred_fragments_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.faults.eagain_every = 2;
    fp.faults.eagain_streak_ns = 300 * MS;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 2), 0);
    unsigned iov_limit = (unsigned)rci_publisher_fabric(c.p)->tx_iov_limit;
    unsigned n = 3 * iov_limit < MAX_PIECES ? 3 * iov_limit : MAX_PIECES;
    unsigned per = iov_limit - 1;
    struct sub_thread t;
    sub_start(&t, pv, port, 4096, MAX_PIECES, 65536, 0);
    t.odd_pieces = n;
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    struct iovec iov[MAX_PIECES];
    for (unsigned i = 0; i < n; i++)
        iov[i] = (struct iovec){ .iov_base = src_buf + 1000 * i, .iov_len = 16 };

    uint64_t t0 = rci_now_ns();
    CU_ASSERT_EQUAL(rci_publisher_send(c.p, peer, ODD_TAG, 0, iov, n, 0), 0);
    uint64_t took = rci_now_ns() - t0;
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.fragments_deferred, 1);
    CU_ASSERT_EQUAL(st.fragments, 2);             /* fragments 0 and 1 posted */
    CU_ASSERT(took < 100 * MS);                   /* did not wait out the 300 ms streak */
    CU_ASSERT_EQUAL(c.keys.ok + c.keys.err, 0);   /* no callback inside send */
    CU_ASSERT_EQUAL(rci_publisher_send(c.p, peer, ODD_TAG, 0, iov, 1, 1), -ENOBUFS);   /* its own wait */
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.again_resuming, 1);

    uint64_t want = 1;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 10 * SEC));
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.fragments, (n + per - 1) / per);
    CU_ASSERT(st.faults_eagain > 0);
    CU_ASSERT_EQUAL(st.peers_dead, 0);
    CU_ASSERT_EQUAL(c.keys.ok, 1);
    CU_ASSERT_EQUAL(c.keys.dup + c.keys.err, 0);
    struct chunks_goal g = { &t, 1 };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 10 * SEC));
    sub_stop(&t);
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    CU_ASSERT_EQUAL(atomic_load(&t.reassembled), 1);
    pub_close(&c);
}

static void test_deferred_msg(void) { deferred_fragments_test(&PROVS[0]); }
static void test_deferred_rdm(void) { deferred_fragments_test(&PROVS[1]); }

/* ---- 3b'. gather-copy (rci_publisher_send_gather, net/bounce.c) --------------------
 * A chunk of more pieces than one message carries: copied into bounce
 * buffers (8 KiB here), one message per buffer instead of one per
 * iov_limit - 1 pieces; it arrives byte-exact, its bytes are counted as
 * copied, its key comes back exactly once (also when its completion is an
 * error or a later fragment is deferred), and the buffers come back with
 * the completions: a send that finds the pool empty gets -EAGAIN
 * (again_no_bounce) without running a callback. A chunk whose pieces fit
 * a message, and rci_publisher_send, stay zero copy. */
#define GATHER_PIECES 16u
#define GATHER_BOUNCE 8192u

struct gather_run { struct pubctx c; struct sub_thread t; rci_peer_id peer; struct iovec iov[MAX_PIECES]; };

static bool gather_open(struct gather_run *g, const struct prov *pv, struct rci_fabric_params *fp,
                        uint32_t piece_len, uint64_t nkeys)
{
    fp->buffered_page_size = GATHER_BOUNCE;
    fp->bounce_buffers = 4;
    if (pub_open(&g->c, fp, nkeys) != 0)
        return false;
    sub_start(&g->t, pv, fp->port, 65536, MAX_PIECES, 65536, 0);
    g->t.odd_pieces = GATHER_PIECES;
    g->t.odd_len = piece_len;
    for (unsigned i = 0; i < GATHER_PIECES; i++)
        g->iov[i] = (struct iovec){ .iov_base = src_buf + 1000 * i, .iov_len = piece_len };
    return wait_subscribers(&g->c, 1, &g->peer) == 1;
}

/* Every bounce buffer is back in the pool. */
static void expect_pool_whole(struct gather_run *g)
{
    struct rci_publisher_stats st;
    rci_publisher_get_stats(g->c.p, &st);
    CU_ASSERT_EQUAL(st.bounce_free, 4);
}

static void gather_test(const struct prov *pv)
{
    enum { KEYS = 16 };
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    struct gather_run g;
    CU_ASSERT_FATAL(gather_open(&g, pv, &fp, 1000, KEYS));   /* 16 x 1000 B: 2 bounce buffers */
    unsigned per = (unsigned)rci_publisher_fabric(g.c.p)->tx_iov_limit - 1;
    struct rci_publisher_stats a, b;
    rci_publisher_get_stats(g.c.p, &a);
    in_send = true;
    CU_ASSERT_EQUAL(rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, 0), 0);
    CU_ASSERT_EQUAL(rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, 1), 0);
    /* 4 buffers, both sends hold 2 until progress reads their completions */
    CU_ASSERT_EQUAL(rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, 2), -EAGAIN);
    in_send = false;
    CU_ASSERT_EQUAL(callbacks_in_send, 0);
    rci_publisher_get_stats(g.c.p, &b);
    CU_ASSERT_EQUAL(b.gather_sends - a.gather_sends, 2);
    CU_ASSERT_EQUAL(b.gather_bytes - a.gather_bytes, 2 * GATHER_PIECES * 1000);
    CU_ASSERT_EQUAL(b.again_no_bounce - a.again_no_bounce, 1);
    CU_ASSERT_EQUAL(b.messages - a.messages, 4);   /* 2 per chunk, not ceil(16 / per) */
    uint64_t want = 2;
    CU_ASSERT(pump_until(&g.c, keys_reached, &want, 10 * SEC));
    expect_pool_whole(&g);
    /* zero copy stays zero copy: send() and a chunk whose pieces fit a message */
    rci_publisher_get_stats(g.c.p, &a);
    CU_ASSERT_EQUAL(rci_publisher_send(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, 2), 0);
    struct iovec fits[1] = { { .iov_base = src_buf + 50000, .iov_len = 16 } };
    CU_ASSERT_EQUAL(rci_publisher_send_gather(g.c.p, g.peer, 7, 7, fits, 1, 3), 0);
    rci_publisher_get_stats(g.c.p, &b);
    CU_ASSERT_EQUAL(b.gather_sends, a.gather_sends);
    CU_ASSERT_EQUAL(b.gather_bytes, a.gather_bytes);
    CU_ASSERT_EQUAL(b.messages - a.messages, (GATHER_PIECES + per - 1) / per + 1);
    want = 4;
    CU_ASSERT(pump_until(&g.c, keys_reached, &want, 10 * SEC));
    CU_ASSERT_EQUAL(g.c.keys.ok, 4);
    CU_ASSERT_EQUAL(g.c.keys.dup + g.c.keys.err + g.c.keys.out_of_range, 0);
    struct chunks_goal cg = { &g.t, 4 };   /* tag 7's chunk is not an ODD_TAG layout: counted as bad */
    CU_ASSERT(pump_until(&g.c, chunks_reached, &cg, 10 * SEC));
    sub_stop(&g.t);
    CU_ASSERT_EQUAL(atomic_load(&g.t.chunks), 4);
    CU_ASSERT_EQUAL(atomic_load(&g.t.bad), 1);
    pub_close(&g.c);
}

/* Error completions: the 3rd successful completion is reported as an
 * error, which fails the subscriber (as a real error completion does).
 * Every accepted gathered key still comes back exactly once, with the
 * error where one of its fragments failed, and every buffer goes back. */
static void gather_error_test(const struct prov *pv)
{
    enum { N = 64 };
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    fp.faults.send_error_every = 3;
    struct gather_run g;
    CU_ASSERT_FATAL(gather_open(&g, pv, &fp, 1000, N));
    uint64_t accepted = 0;
    for (uint64_t k = 0; k < N; k++) {
        int rc;
        while ((rc = rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, k)) == -EAGAIN)
            rci_publisher_progress(g.c.p);
        if (rc == -ENOTCONN)
            break;   /* the error completion failed it */
        CU_ASSERT_EQUAL(rc, 0);
        accepted++;
    }
    CU_ASSERT(accepted >= 2 && accepted < N);
    CU_ASSERT(pump_until(&g.c, keys_reached, &accepted, 10 * SEC));
    CU_ASSERT_EQUAL(keys_back(&g.c.keys), accepted);
    CU_ASSERT(g.c.keys.err > 0);
    CU_ASSERT_EQUAL(g.c.keys.dup + g.c.keys.out_of_range, 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(g.c.p, &st);
    CU_ASSERT_EQUAL(st.gather_sends, accepted);
    CU_ASSERT_EQUAL(st.keys_completed_error, g.c.keys.err);
    expect_pool_whole(&g);
    sub_stop(&g.t);
    pub_close(&g.c);
}

/* A later fragment meets -FI_EAGAIN (an injected streak, as in the deferred
 * test): the rest is gathered and posted by progress, the chunk arrives
 * intact, the key once. */
static void gather_deferred_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    fp.faults.eagain_every = 2;
    fp.faults.eagain_streak_ns = 300 * MS;
    struct gather_run g;
    CU_ASSERT_FATAL(gather_open(&g, pv, &fp, 1500, 1));   /* 24000 B: 3 bounce buffers */
    CU_ASSERT_EQUAL(rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, 0), 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(g.c.p, &st);
    CU_ASSERT_EQUAL(st.fragments_deferred, 1);
    CU_ASSERT_EQUAL(g.c.keys.ok + g.c.keys.err, 0);
    uint64_t want = 1;
    CU_ASSERT(pump_until(&g.c, keys_reached, &want, 10 * SEC));
    rci_publisher_get_stats(g.c.p, &st);
    CU_ASSERT_EQUAL(st.gather_sends, 1);
    CU_ASSERT(st.gather_bytes >= GATHER_PIECES * 1500);   /* a refused fragment is copied again */
    CU_ASSERT_EQUAL(g.c.keys.ok, 1);
    CU_ASSERT_EQUAL(g.c.keys.dup + g.c.keys.err, 0);
    struct chunks_goal cg = { &g.t, 1 };
    CU_ASSERT(pump_until(&g.c, chunks_reached, &cg, 10 * SEC));
    sub_stop(&g.t);
    CU_ASSERT_EQUAL(atomic_load(&g.t.bad), 0);
    CU_ASSERT_EQUAL(atomic_load(&g.t.reassembled), 1);
    pub_close(&g.c);
}

/* The subscriber leaves with gathered sends outstanding: every key comes
 * back exactly once (from completions or the peer's release). */
static void gather_peer_gone_test(const struct prov *pv)
{
    enum { N = 200 };
    struct rci_fabric_params fp;
    pub_params(&fp, pv, next_port());
    struct gather_run g;
    CU_ASSERT_FATAL(gather_open(&g, pv, &fp, 1000, N));
    uint64_t sent = 0;
    for (; sent < N; sent++) {
        int rc;
        while ((rc = rci_publisher_send_gather(g.c.p, g.peer, ODD_TAG, 0, g.iov, GATHER_PIECES, sent)) == -EAGAIN)
            rci_publisher_progress(g.c.p);
        if (rc)
            break;
        if (sent == N / 2)
            sub_stop(&g.t);   /* gone mid-stream: later sends may be refused */
    }
    CU_ASSERT(sent > N / 2);
    uint64_t want = sent;
    CU_ASSERT(pump_until(&g.c, keys_reached, &want, 20 * SEC));
    CU_ASSERT_EQUAL(keys_back(&g.c.keys), sent);
    CU_ASSERT_EQUAL(g.c.keys.dup + g.c.keys.out_of_range, 0);
    expect_pool_whole(&g);
    pub_close(&g.c);
}

static void test_gather_msg(void) { gather_test(&PROVS[0]); }
static void test_gather_rdm(void) { gather_test(&PROVS[1]); }
static void test_gather_error_msg(void) { gather_error_test(&PROVS[0]); }
static void test_gather_error_rdm(void) { gather_error_test(&PROVS[1]); }
static void test_gather_deferred_msg(void) { gather_deferred_test(&PROVS[0]); }
static void test_gather_deferred_rdm(void) { gather_deferred_test(&PROVS[1]); }
static void test_gather_gone_msg(void) { gather_peer_gone_test(&PROVS[0]); }
static void test_gather_gone_rdm(void) { gather_peer_gone_test(&PROVS[1]); }

/* ---- 3c. callbacks run only from progress ----------------------------------------
 * Sends that meet a full pool (no header slot, no free page) return -EAGAIN
 * without reading the CQ: completions waiting there (8 zero-copy sends, given
 * time to complete) come back only from the progress call afterwards, never
 * inside the send, flush or send_buffered (the old buffered path read the
 * CQ on -EAGAIN and ran on_send_complete of earlier sends re-entrantly). */
static int send_marked(struct pubctx *c, rci_peer_id peer, bool buffered, uint64_t seq)
{
    struct layout l;
    struct iovec iov[MAX_PIECES];
    unsigned n = MAX_PIECES;
    if (buffered)   /* the subscriber's ODD_TAG layout: 16 x 16 B */
        for (unsigned i = 0; i < n; i++)
            iov[i] = (struct iovec){ .iov_base = src_buf + 1000 * i, .iov_len = 16 };
    else
        make_layout(seq, 1, 65536, &l), n = to_iov(&l, iov);
    in_send = true;
    int rc = buffered ? rci_publisher_send_buffered(c->p, peer, ODD_TAG, 0, iov, n)
                      : rci_publisher_send(c->p, peer, seq, (uint32_t)(seq & 0xf), iov, n, seq);
    in_send = false;
    return rc;
}

static void no_callback_in_send_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.header_slots = 8;
    fp.buffered_pages = 2;
    fp.flush_timeout_ns = 10 * SEC;   /* pages go out only when full */
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 64), 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 128 * 1024, 1, 65536, 0);
    t.odd_pieces = MAX_PIECES;
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    callbacks_in_send = 0;
    uint64_t seq = 0;
    for (; seq < 8; seq++)
        CU_ASSERT_EQUAL(send_marked(&c, peer, false, seq), 0);
    /* The subscriber reads them; their completions wait for a CQ read. */
    struct timespec pause = { 0, 300 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    CU_ASSERT_EQUAL(send_marked(&c, peer, false, seq), -EAGAIN);   /* no header slot */
    /* Buffered records (256 B) into the 2 pages of 8 KiB until none is free. */
    int rc = 0;
    unsigned copied = 0;
    for (seq = 100; seq < 300 && rc == 0; seq++) {
        rc = send_marked(&c, peer, true, seq);
        copied += rc == 0;
    }
    CU_ASSERT_EQUAL(rc, -EAGAIN);
    CU_ASSERT(copied >= 8);
    in_send = true;
    rc = rci_publisher_flush(c.p, peer);
    in_send = false;
    CU_ASSERT(rc == 0 || rc == -EAGAIN);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT(st.again_no_slot >= 1);
    CU_ASSERT(st.again_no_page >= 1);
    CU_ASSERT_EQUAL(callbacks_in_send, 0);
    CU_ASSERT_EQUAL(keys_back(&c.keys), 0);         /* nobody read the CQ yet */
    /* Progress hands the 8 keys back. */
    uint64_t want = 8;
    CU_ASSERT(pump_until(&c, keys_reached, &want, 10 * SEC));
    CU_ASSERT_EQUAL(c.keys.ok, 8);
    CU_ASSERT_EQUAL(c.keys.dup + c.keys.err, 0);
    CU_ASSERT_EQUAL(callbacks_in_send, 0);
    struct chunks_goal g = { &t, 8 + copied };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 10 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    sub_stop(&t);
    pub_close(&c);
}

static void test_no_callback_in_send_msg(void) { no_callback_in_send_test(&PROVS[0]); }
static void test_no_callback_in_send_rdm(void) { no_callback_in_send_test(&PROVS[1]); }

/* ---- 4. buffered pages --------------------------------------------------------- */

static void buffered_test(const struct prov *pv)
{
    enum { N = 100000 };
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, N), 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 64 * 1024, 3, 256, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    for (uint64_t seq = 0; seq < N; seq++) {
        struct layout l;
        struct iovec iov[MAX_PIECES];
        make_layout(seq, 3, 256, &l);
        unsigned n = to_iov(&l, iov);
        int rc;
        while ((rc = rci_publisher_send_buffered(c.p, peer, seq, (uint32_t)(seq & 0xf), iov,
                                                n)) == -EAGAIN)
            rci_publisher_progress(c.p);
        if (rc)
            fprintf(stderr, "send_buffered %llu: %s (%s)\n", (unsigned long long)seq,
                    strerror(-rc), rci_publisher_last_error(c.p));
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        /* Copied: the chunk is ours again at once, and no key is called back. */
        CU_ASSERT_EQUAL_FATAL(keys_back(&c.keys), 0);
    }
    /* The last page goes out by flush_timeout, without an explicit flush. */
    struct chunks_goal g = { &t, N };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 20 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.buffered_records, N);
    CU_ASSERT_EQUAL(st.keys_completed_ok, N);
    CU_ASSERT(st.pages_sent > 0 && st.pages_sent < N / 10);
    CU_ASSERT(st.pages_flushed_by_timeout >= 1);
    CU_ASSERT_EQUAL(st.pages_failed, 0);
    sub_stop(&t);
    pub_close(&c);
}

/* rci_publisher_flush_idle sends the filling page at once: with a
 * flush_timeout of 10 s the records arrive within the test's 5 s only
 * through it; a second call finds no page. */
static void test_buffered_flush_idle(void)
{
    const struct prov *pv = &PROVS[0];
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.flush_timeout_ns = 10 * SEC;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 3), 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 64 * 1024, 3, 256, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    CU_ASSERT_EQUAL(rci_publisher_flush_idle(c.p, peer), 0);   /* nothing filling yet */
    for (uint64_t seq = 0; seq < 3; seq++) {
        struct layout l;
        struct iovec iov[MAX_PIECES];
        make_layout(seq, 3, 256, &l);
        CU_ASSERT_EQUAL_FATAL(rci_publisher_send_buffered(c.p, peer, seq, (uint32_t)(seq & 0xf), iov,
                                                         to_iov(&l, iov)), 0);
    }
    CU_ASSERT_EQUAL(rci_publisher_flush_idle(c.p, peer), 1);
    CU_ASSERT_EQUAL(rci_publisher_flush_idle(c.p, peer), 0);
    struct chunks_goal g = { &t, 3 };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 5 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.pages_sent, 1);
    CU_ASSERT_EQUAL(st.pages_flushed_idle, 1);
    CU_ASSERT_EQUAL(st.pages_flushed_by_timeout, 0);
    CU_ASSERT_EQUAL(rci_publisher_flush_idle(c.p, 9999), -ENOTCONN);
    sub_stop(&t);
    pub_close(&c);
}

static void test_buffered_msg(void) { buffered_test(&PROVS[0]); }
static void test_buffered_rdm(void) { buffered_test(&PROVS[1]); }

/* ---- 4b. pages and control buffers come from the registered pool --------------- */

static const struct rci_mem_class_stats *pool_class(const struct rci_publisher_stats *st, const char *use)
{
    for (unsigned c = 0; c < RCI_MEM_CLASSES; c++)
        if (strcmp(st->pool[c].use, use) == 0)
            return &st->pool[c];
    return NULL;
}

static struct rci_mem_class_stats pool_now(struct pubctx *c, const char *use)
{
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c->p, &st);
    const struct rci_mem_class_stats *k = pool_class(&st, use);
    struct rci_mem_class_stats none = { .use = "missing" };
    return k ? *k : none;
}

static bool pages_all_free(struct pubctx *c, void *arg)
{
    (void)arg;
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c->p, &st);
    return st.pages_free == st.pages_total && pool_class(&st, "pages")->in_use == 0;
}

static bool ctrl_all_back(struct pubctx *c, void *arg)
{
    (void)arg;
    return pool_now(c, "control_send").in_use == 0;
}

/* Every page filling or in flight holds one buffer of the pool's page class
 * (in_use = pages_total - pages_free while the CQ is not read), and each
 * comes back at its completion: in_use 0 after. Control messages
 * (WELCOME, SUB_ACK, heartbeats) take a buffer of the control send class
 * each and give it back; control receives hold one of the receive class
 * while posted (MSG: 4 per connected subscriber, none after it left; RDM:
 * the shared receives, all posted from create). */
static void pool_test(const struct prov *pv)
{
    enum { N = 160 };   /* about 60 KB of records: 8 of the 16 pages of 8 KiB */
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.flush_timeout_ns = 10 * SEC;   /* pages leave full or flushed, not by time */
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, N), 0);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    const struct rci_mem_class_stats *pg = pool_class(&st, "pages"), *cs = pool_class(&st, "control_send"),
                                     *cr = pool_class(&st, "control_receive");
    CU_ASSERT_FATAL(pg && cs && cr);
    CU_ASSERT_EQUAL(pg->count, fp.buffered_pages);
    CU_ASSERT_EQUAL(pg->size, fp.buffered_page_size);
    CU_ASSERT_EQUAL(pg->in_use, 0);
    CU_ASSERT_EQUAL(cs->count, 4 * fp.max_subscribers + 8);
    CU_ASSERT(cr->size >= RCI_WIRE_MAX_CONTROL);
    CU_ASSERT_EQUAL(cr->in_use, pv->ep == RCI_EP_RDM ? cr->count : 0);
    struct sub_thread t;
    sub_start(&t, pv, port, 64 * 1024, 3, 256, 0);
    rci_peer_id peer;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &peer), 1);
    CU_ASSERT(pool_now(&c, "control_send").gets >= 2);   /* WELCOME, SUB_ACK */
    if (pv->ep == RCI_EP_MSG)
        CU_ASSERT_EQUAL(pool_now(&c, "control_receive").in_use, 4);
    /* No progress between the sends: completed pages are not taken back. */
    for (uint64_t seq = 0; seq < N; seq++) {
        struct layout l;
        struct iovec iov[MAX_PIECES];
        make_layout(seq, 3, 256, &l);
        int rc = rci_publisher_send_buffered(c.p, peer, seq, (uint32_t)(seq & 0xf), iov, to_iov(&l, iov));
        CU_ASSERT_EQUAL_FATAL(rc, 0);
    }
    rci_publisher_get_stats(c.p, &st);
    pg = pool_class(&st, "pages");
    CU_ASSERT(st.pages_sent >= 2);
    CU_ASSERT_EQUAL(pg->in_use, st.pages_total - st.pages_free);
    CU_ASSERT(pg->in_use >= st.pages_sent && pg->in_use <= st.pages_sent + 1);   /* posted, filling */
    CU_ASSERT(pg->high_water >= pg->in_use);
    CU_ASSERT_EQUAL(pg->exhausted, 0);
    CU_ASSERT_EQUAL(rci_publisher_flush(c.p, peer), 0);
    struct chunks_goal g = { &t, N };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 20 * SEC));
    CU_ASSERT(pump_until(&c, pages_all_free, NULL, 10 * SEC));
    rci_publisher_get_stats(c.p, &st);
    pg = pool_class(&st, "pages");
    CU_ASSERT_EQUAL(pg->in_use, 0);
    CU_ASSERT_EQUAL(pg->gets, pg->puts);
    CU_ASSERT_EQUAL(pg->gets, st.pages_sent);
    CU_ASSERT_EQUAL(atomic_load(&t.bad), 0);
    CU_ASSERT(pump_until(&c, ctrl_all_back, NULL, 5 * SEC));
    sub_stop(&t);
    if (pv->ep == RCI_EP_MSG) {   /* its receives go back when its endpoint closes */
        unsigned gone = c.gone + 1;
        uint64_t end = rci_now_ns() + 10 * SEC;
        while (c.gone < gone && rci_now_ns() < end)
            rci_publisher_wait(c.p, 1 * MS);
        CU_ASSERT_EQUAL(pool_now(&c, "control_receive").in_use, 0);
    }
    struct rci_mem_class_stats k = pool_now(&c, "control_send");
    CU_ASSERT_EQUAL(k.exhausted, 0);
    CU_ASSERT_EQUAL(k.bad_puts, 0);
    pub_close(&c);
}

static void test_pool_msg(void) { pool_test(&PROVS[0]); }
static void test_pool_rdm(void) { pool_test(&PROVS[1]); }

/* ---- 5. a subscriber leaves mid-stream ------------------------------------------ */

struct gone { rci_peer_id peer; };
static bool peer_gone(struct pubctx *c, void *arg)
{
    return rci_publisher_peer_name(c->p, ((struct gone *)arg)->peer)[0] == '\0';
}

/* Stream to a and b (keys: seq * 2 + index); stop a after `stop_after`
 * sends by calling leave(); check a's keys all come back in time and b gets
 * everything. */
static void two_subscriber_stream(struct pubctx *c, rci_peer_id pa, rci_peer_id pb,
                                  struct sub_thread *tb, uint64_t n, uint64_t stop_after,
                                  void (*leave)(void *), void *leave_arg, uint64_t bound_ns,
                                  uint32_t max_size)
{
    uint64_t sent_a = 0, left_at = 0;
    bool a_alive = true;
    for (uint64_t seq = 0; seq < n; seq++) {
        if (seq == stop_after) {
            leave(leave_arg);
            left_at = rci_now_ns();
        }
        if (a_alive) {
            int rc = send_one(c, pa, seq, 0, 1, max_size, seq * 2);
            if (rc == 0)
                sent_a++;
            else
                a_alive = false;  /* -ENOTCONN once the publisher buried it */
            CU_ASSERT(rc == 0 || rc == -ENOTCONN);
        }
        CU_ASSERT_EQUAL_FATAL(send_one(c, pb, seq, 0, 1, max_size, seq * 2 + 1), 0);
        if ((seq & 255) == 0)
            throttle(c, tb, seq);
    }
    struct gone gn = { pa };
    CU_ASSERT(pump_until(c, peer_gone, &gn, bound_ns));
    uint64_t want = sent_a + n;
    CU_ASSERT(pump_until(c, keys_reached, &want, bound_ns));
    /* a's keys are all reported before its GONE event, within the bound */
    CU_ASSERT_EQUAL(c->gone, 1);
    CU_ASSERT(c->gone_ns >= left_at && c->gone_ns - left_at < bound_ns);
    CU_ASSERT_EQUAL(keys_back(&c->keys), sent_a + n);
    CU_ASSERT_EQUAL(c->keys.dup + c->keys.out_of_range, 0);
    for (uint64_t seq = 0; seq < n; seq++)
        if (!c->keys.seen[seq * 2 + 1] || (seq < sent_a && !c->keys.seen[seq * 2])) {
            CU_FAIL("a key did not come back");
            break;
        }
    struct chunks_goal g = { tb, n };
    CU_ASSERT(pump_until(c, chunks_reached, &g, 20 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&tb->bad), 0);
}

static void stop_thread(void *arg) { sub_stop(arg); }

static void disconnect_test(const struct prov *pv)
{
    enum { N = 20000 };
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 2 * N), 0);
    struct sub_thread ta, tb;
    sub_start(&ta, pv, port, 128 * 1024, 1, 65536, 0);
    unsigned one = 1;
    pump_until(&c, n_subscribed, &one, 10 * SEC);
    rci_peer_id pa;
    CU_ASSERT_EQUAL_FATAL(rci_publisher_subscribers_of(c.p, 0, &pa, 1), 1);
    sub_start(&tb, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id ids[2], pb = 0;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 2, ids), 2);
    pb = ids[0] == pa ? ids[1] : ids[0];
    two_subscriber_stream(&c, pa, pb, &tb, N, N / 4, stop_thread, &ta,
                          fp.peer_timeout_ns + 2 * SEC, 65536);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.peers_closed + st.peers_dead, 1);
    CU_ASSERT_EQUAL(st.peers_active, 1);
    sub_stop(&tb);
    pub_close(&c);
}

static void test_disconnect_msg(void) { disconnect_test(&PROVS[0]); }
static void test_disconnect_rdm(void) { disconnect_test(&PROVS[1]); }

/* ---- 6. malformed control messages from a raw libfabric client ----------------- */

struct raw_client {
    pthread_t th;
    const struct prov *pv;
    uint16_t port;
    atomic_int step;               /* progress marker, -1 = failed */
    atomic_bool done, close_now;
    char failure[256];
    uint32_t ack_status[2];
};

#define RAW_RX 4u
#define RAW_RX_SIZE 65536u

struct raw {
    struct rci_fabric f;
    struct fid_ep *ep;             /* MSG endpoint, or f.ep */
    fi_addr_t pub;
    uint8_t *tx, *rx;
    struct rci_fabric_mr txmr, rxmr;
    unsigned pending[RAW_RX], npending;   /* received while waiting for a send */
    size_t pending_len[RAW_RX];
};


static int raw_post_rx(struct raw *r, unsigned i)
{
    return (int)fi_recv(r->ep, r->rx + (size_t)i * RAW_RX_SIZE, RAW_RX_SIZE, r->rxmr.desc,
                        FI_ADDR_UNSPEC, (void *)(uintptr_t)(i + 1));
}

static int raw_open(struct raw *r, const struct prov *pv, uint16_t port, char *err, size_t len)
{
    struct rci_fabric_params fp;
    pub_params(&fp, pv, port);
    memset(r, 0, sizeof *r);
    int rc = rci_fabric_open(&r->f, &fp, RCI_FABRIC_CONNECT, 64, err, len);
    if (rc)
        return rc;
    r->tx = aligned_alloc(4096, 65536);
    r->rx = aligned_alloc(4096, RAW_RX * RAW_RX_SIZE);
    if (r->f.rdm) {
        r->ep = r->f.ep;
        rc = rci_fabric_av_insert(&r->f, r->f.info->dest_addr, r->f.info->dest_addrlen, &r->pub,
                                 err, len);
    } else {
        rc = rci_fabric_msg_ep_open(&r->f, NULL, NULL, &r->ep, err, len);
    }
    if (!rc)
        rc = rci_fabric_mr_reg(&r->f, r->tx, 65536, FI_SEND, r->ep, &r->txmr, err, len);
    if (!rc)
        rc = rci_fabric_mr_reg(&r->f, r->rx, RAW_RX * RAW_RX_SIZE, FI_RECV, r->ep, &r->rxmr, err, len);
    for (unsigned i = 0; !rc && i < RAW_RX; i++)
        rc = raw_post_rx(r, i);
    if (!rc && !r->f.rdm)
        rc = rci_fabric_msg_connect(&r->f, r->ep, 10 * SEC, err, len);
    return rc;
}

static void raw_close(struct raw *r)
{
    if (!r->f.rdm)
        rci_fabric_ep_close(r->ep);
    else
        rci_fabric_ep_close(r->f.ep);
    r->f.ep = NULL;
    rci_fabric_mr_close(&r->txmr);
    rci_fabric_mr_close(&r->rxmr);
    rci_fabric_close(&r->f);
    free(r->tx);
    free(r->rx);
}

static void raw_keep(struct raw *r, const struct rci_fabric_cqe *e)
{
    unsigned k = (unsigned)(uintptr_t)e->context;
    if (k == 0 || k > RAW_RX)
        return;
    if (e->err) {
        raw_post_rx(r, k - 1);
        return;
    }
    r->pending_len[r->npending] = e->len;
    r->pending[r->npending++] = k - 1;
}

/* Send len bytes of r->tx and wait for the completion (receives that come in
 * meanwhile are kept for raw_expect). */
static int raw_send(struct raw *r, size_t len)
{
    int rc;
    uint64_t end = rci_now_ns() + 10 * SEC;
    while ((rc = (int)fi_send(r->ep, r->tx, len, r->txmr.desc, r->f.rdm ? r->pub : FI_ADDR_UNSPEC,
                              (void *)(uintptr_t)1000)) == -FI_EAGAIN) {
        struct rci_fabric_cqe e[4];
        char err[256];
        int n = rci_fabric_cq_poll(&r->f, e, 4, err, sizeof err);
        for (int i = 0; i < n; i++)
            raw_keep(r, &e[i]);
        if (rci_now_ns() > end)
            return -ETIMEDOUT;
    }
    if (rc)
        return rc;
    for (;;) {
        struct rci_fabric_cqe e[4];
        char err[256];
        int n = rci_fabric_cq_poll(&r->f, e, 4, err, sizeof err);
        bool sent = false;
        for (int i = 0; i < n; i++) {  /* keep receives read in the same batch */
            if ((uintptr_t)e[i].context == 1000) {
                sent = true;
                rc = e[i].err ? -e[i].err : 0;
            } else {
                raw_keep(r, &e[i]);
            }
        }
        if (sent)
            return rc;
        if (rci_now_ns() > end)
            return -ETIMEDOUT;
    }
}

/* Wait for a message of `type`; copies it to out (len bytes max). Other
 * messages (heartbeats) are dropped. */
static int raw_expect(struct raw *r, int type, void *out, size_t len)
{
    uint64_t end = rci_now_ns() + 10 * SEC;
    while (rci_now_ns() < end) {
        struct rci_fabric_cqe e[4];
        char err[256];
        int n = rci_fabric_cq_poll(&r->f, e, 4, err, sizeof err);
        for (int i = 0; i < n; i++)
            raw_keep(r, &e[i]);
        bool found = false;
        while (r->npending) {
            unsigned k = r->pending[--r->npending];
            const uint8_t *m = r->rx + (size_t)k * RAW_RX_SIZE;
            size_t mlen = r->pending_len[r->npending];
            if (!found && rci_wire_check(m, mlen, RCI_WIRE_TO_SUBSCRIBER, NULL) == type) {
                memcpy(out, m, mlen < len ? mlen : len);
                found = true;
            }
            raw_post_rx(r, k);
        }
        if (found)
            return 0;
        rci_fabric_wait(&r->f, 1 * MS);
    }
    return -ETIMEDOUT;
}

static int raw_subscribe(struct raw *r, uint32_t id, uint64_t first, uint64_t last, uint32_t *status)
{
    struct rci_wire_range range = { first, last };
    ssize_t n = rci_wire_build_sub(r->tx, 65536, RCI_MSG_SUBSCRIBE, id, &range, 1);
    int rc = n > 0 ? raw_send(r, (size_t)n) : -EINVAL;
    struct rci_wire_sub_ack ack;
    if (!rc)
        rc = raw_expect(r, RCI_MSG_SUB_ACK, &ack, sizeof ack);
    if (!rc && rci_wire_check_sub_ack(&ack, sizeof ack, &ack) == RCI_WIRE_OK)
        *status = ack.status;
    return rc;
}

#define RAW_STEP(cond, what)                                                     \
    do {                                                                         \
        if (!(cond)) {                                                           \
            snprintf(c->failure, sizeof c->failure, "%s", what);                 \
            goto out;                                                            \
        }                                                                        \
        atomic_fetch_add(&c->step, 1);                                           \
    } while (0)

static void *raw_main(void *arg)
{
    struct raw_client *c = arg;
    struct raw r;
    char err[256] = "";
    int rc = raw_open(&r, c->pv, c->port, err, sizeof err);
    RAW_STEP(rc == 0, err);
    uint8_t addr[RCI_WIRE_MAX_ADDR];
    size_t alen = sizeof addr;
    if (r.f.rdm)
        RAW_STEP(rci_fabric_getname(&r.f, r.ep, addr, &alen, err, sizeof err) == 0, err);
    ssize_t n;
    if (r.f.rdm) {  /* a HELLO whose address cannot be one: rejected, no WELCOME */
        static const uint8_t bogus[4] = { 0xff, 0xff, 0, 0 };
        n = rci_wire_build_hello(r.tx, 65536, 41, 65536, bogus, sizeof bogus);
        RAW_STEP(n > 0 && raw_send(&r, (size_t)n) == 0, "send bogus HELLO");
    }
    n = rci_wire_build_hello(r.tx, 65536, 42, 65536, addr, r.f.rdm ? (uint16_t)alen : 0);
    RAW_STEP(n > 0 && raw_send(&r, (size_t)n) == 0, "send HELLO");
    struct rci_wire_welcome w;
    RAW_STEP(raw_expect(&r, RCI_MSG_WELCOME, &w, sizeof w) == 0, "no WELCOME");
    /* Our HELLO offered 2..3: WELCOME says 3, so a BYE may carry the handled count. */
    RAW_STEP(rci_wire_welcome_takes_bye_handled(&w), "WELCOME not of version 3");
    /* A BYE with its count cut short, and one whose version-2 header cannot
     * carry a count: rejected (bad length), counted, and the peer stays. */
    n = rci_wire_build_bye_handled(r.tx, 65536, 5);
    ((struct rci_wire_hdr *)r.tx)->length = (uint32_t)n - 4;
    RAW_STEP(raw_send(&r, (size_t)n - 4) == 0, "send truncated BYE");
    n = rci_wire_build_bye_handled(r.tx, 65536, 5);
    r.tx[2] = 2;
    RAW_STEP(raw_send(&r, (size_t)n) == 0, "send version-2 BYE with a count");
    /* Garbage: short, bad magic, a type not allowed towards the publisher. */
    memset(r.tx, 0xab, 64);
    RAW_STEP(raw_send(&r, 4) == 0, "send short");
    n = rci_wire_build_heartbeat(r.tx, 65536, 1);
    r.tx[0] ^= 0xff;
    RAW_STEP(raw_send(&r, (size_t)n) == 0, "send bad magic");
    n = rci_wire_build_data_hdr(r.tx, 65536, 7, 0, 0, 0, 0, 1, 0);
    RAW_STEP(raw_send(&r, (size_t)n) == 0, "send DATA to publisher");
    n = rci_wire_build_heartbeat(r.tx, 65536, 1);
    ((struct rci_wire_hdr *)r.tx)->length = 9999;
    RAW_STEP(raw_send(&r, (size_t)n) == 0, "send bad length");
    /* Too many tags (limit 100), then an acceptable subscription. */
    RAW_STEP(raw_subscribe(&r, 1, 0, 1000, &c->ack_status[0]) == 0, "SUB_ACK 1");
    RAW_STEP(raw_subscribe(&r, 2, 0, 9, &c->ack_status[1]) == 0, "SUB_ACK 2");
    atomic_store(&c->done, true);
    while (!atomic_load(&c->close_now))
        usleep(1000);
out:
    if (c->failure[0])
        atomic_store(&c->step, -1);
    raw_close(&r);  /* no BYE: the publisher must notice by itself */
    atomic_store(&c->done, true);
    return NULL;
}

static bool raw_done(struct pubctx *c, void *arg)
{
    (void)c;
    return atomic_load(&((struct raw_client *)arg)->done);
}

static void malformed_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.max_tags_per_subscriber = 100;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 1), 0);
    struct raw_client rc = { .pv = pv, .port = port };
    pthread_create(&rc.th, NULL, raw_main, &rc);
    CU_ASSERT(pump_until(&c, raw_done, &rc, 30 * SEC));
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    if (atomic_load(&rc.step) < 0)
        fprintf(stderr, "raw client failed: %s (publisher: %llu joined, %llu unknown, "
                "%llu control retries, %llu dropped, %llu heartbeats in, %llu subscribes, %s)\n",
                rc.failure, (unsigned long long)st.connections,
                (unsigned long long)st.unknown_sender, (unsigned long long)st.control_send_retries,
                (unsigned long long)st.control_dropped, (unsigned long long)st.heartbeats_received,
                (unsigned long long)st.subscribe_requests, rci_publisher_last_error(c.p));
    CU_ASSERT(atomic_load(&rc.step) >= 0);
    CU_ASSERT(st.malformed[RCI_WIRE_SHORT] >= 1);
    CU_ASSERT(st.malformed[RCI_WIRE_BAD_MAGIC] >= 1);
    CU_ASSERT(st.malformed[RCI_WIRE_BAD_TYPE] >= 1);
    CU_ASSERT(st.malformed[RCI_WIRE_BAD_LENGTH] >= 3);   /* bad length, and two bad BYEs */
    if (pv->ep == RCI_EP_RDM)
        CU_ASSERT_EQUAL(st.malformed[RCI_WIRE_BAD_FIELD], 1);
    CU_ASSERT_EQUAL(st.connections, 1);
    CU_ASSERT_EQUAL(rc.ack_status[0], RCI_SUB_TOO_MANY_TAGS);
    CU_ASSERT_EQUAL(rc.ack_status[1], RCI_SUB_OK);
    CU_ASSERT_EQUAL(st.subscriptions_refused, 1);
    rci_peer_id ids[2];
    CU_ASSERT_EQUAL(rci_publisher_subscribers_of(c.p, 5, ids, 2), 1);
    CU_ASSERT_EQUAL(rci_publisher_subscribers_of(c.p, 10, ids, 2), 0);
    /* The client vanishes without BYE: gone within peer_timeout (+ margin). */
    struct gone gn = { ids[0] };
    atomic_store(&rc.close_now, true);
    pthread_join(rc.th, NULL);
    uint64_t t0 = rci_now_ns();
    CU_ASSERT(pump_until(&c, peer_gone, &gn, fp.peer_timeout_ns + 2 * SEC));
    CU_ASSERT(rci_now_ns() - t0 < fp.peer_timeout_ns + 2 * SEC);
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.peers_dead, 1);
    CU_ASSERT_EQUAL(st.peers_active, 0);
    pub_close(&c);
}

static void test_malformed_msg(void) { malformed_test(&PROVS[0]); }
static void test_malformed_rdm(void) { malformed_test(&PROVS[1]); }

/* ---- 6b. max_subscribers: the next one is refused, the first still served -- */

struct refusals { uint64_t n; };
static bool refused_enough(struct pubctx *c, void *arg)
{
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c->p, &st);
    return st.connections_refused >= ((struct refusals *)arg)->n;
}

static void max_subscribers_test(const struct prov *pv)
{
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    fp.max_subscribers = 1;
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 100), 0);
    struct sub_thread ta, tb;
    sub_start(&ta, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id pa;
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 1, &pa), 1);
    sub_start(&tb, pv, port, 128 * 1024, 1, 65536, 0);
    struct refusals want = { 2 };   /* it retries: refused again and again */
    CU_ASSERT(pump_until(&c, refused_enough, &want, 10 * SEC));
    rci_peer_id ids[2];
    CU_ASSERT_EQUAL(rci_publisher_peers(c.p, ids, 2), 1);
    for (uint64_t seq = 0; seq < 100; seq++)
        CU_ASSERT_EQUAL_FATAL(send_one(&c, pa, seq, 0, 1, 65536, seq), 0);
    struct chunks_goal g = { &ta, 100 };
    CU_ASSERT(pump_until(&c, chunks_reached, &g, 10 * SEC));
    CU_ASSERT_EQUAL(atomic_load(&tb.chunks), 0);
    sub_stop(&tb);
    sub_stop(&ta);
    pub_close(&c);
}

static void test_max_subscribers_msg(void) { max_subscribers_test(&PROVS[0]); }
static void test_max_subscribers_rdm(void) { max_subscribers_test(&PROVS[1]); }

/* ---- 7. ringcast-sub SIGKILLed mid-stream ---------------------------------------- */

static int find_sub_tool(char *path, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');   /* .../build/tests/test_x -> .../build */
    if (!slash)
        return -1;
    *slash = '\0';
    slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    static const char tail[] = "/bin/ringcast-sub";
    size_t dir = strlen(self);
    if (dir + sizeof tail > len)
        return -1;
    memcpy(path, self, dir);
    memcpy(path + dir, tail, sizeof tail);
    return access(path, X_OK);
}

struct killer { pid_t pid; };
static void kill_child(void *arg)
{
    kill(((struct killer *)arg)->pid, SIGKILL);
}

static void sigkill_test(const struct prov *pv)
{
    enum { N = 6000 };
    char tool[PATH_MAX];
    if (find_sub_tool(tool, sizeof tool)) {
        CU_FAIL("build/bin/ringcast-sub not built (make all)");
        return;
    }
    struct rci_fabric_params fp;
    uint16_t port = next_port();
    pub_params(&fp, pv, port);
    struct pubctx c;
    CU_ASSERT_EQUAL_FATAL(pub_open(&c, &fp, 2 * N), 0);
    char connect[64];
    snprintf(connect, sizeof connect, "127.0.0.1:%u", port);
    char *argv[] = { tool, "--connect", connect, "--provider", (char *)pv->name, "--endpoint",
                     pv->ep == RCI_EP_RDM ? "rdm" : "msg", "--tags", "all", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    struct killer k = { 0 };
    int rc = posix_spawn(&k.pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    unsigned one = 1;
    CU_ASSERT(pump_until(&c, n_subscribed, &one, 10 * SEC));
    rci_peer_id pa;
    if (rci_publisher_subscribers_of(c.p, 0, &pa, 1) != 1) {
        CU_FAIL("ringcast-sub did not subscribe");
        kill(k.pid, SIGKILL);
        waitpid(k.pid, NULL, 0);
        pub_close(&c);
        return;
    }
    struct sub_thread tb;
    sub_start(&tb, pv, port, 128 * 1024, 1, 65536, 0);
    rci_peer_id ids[2];
    CU_ASSERT_EQUAL_FATAL(wait_subscribers(&c, 2, ids), 2);
    rci_peer_id pb = ids[0] == pa ? ids[1] : ids[0];
    /* Large chunks: above rxm's eager size, the sends to a killed peer hang. */
    two_subscriber_stream(&c, pa, pb, &tb, N, N / 3, kill_child, &k, fp.peer_timeout_ns + 2 * SEC,
                          65536);
    int status = 0;
    waitpid(k.pid, &status, 0);
    CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    struct rci_publisher_stats st;
    rci_publisher_get_stats(c.p, &st);
    CU_ASSERT_EQUAL(st.peers_dead, 1);
    sub_stop(&tb);
    pub_close(&c);
}


/* A region file named like a shm subscriber's ("PID:UID:INDEX") in /dev/shm. */
static void make_shm_file(char *name, size_t len, long pid)
{
    snprintf(name, len, "%ld:%ld:7", pid, (long)getuid());
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
}

static bool shm_file_exists(const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    return access(path, F_OK) == 0;
}

/* A SIGKILLed subscriber whose parent has not reaped it yet (a zombie) is
 * dead: its region file goes (kill(pid, 0) alone called it alive, and the
 * file stayed). A live process's file stays, with or without "fi_shm://". */
static void test_shm_reclaim_zombie(void)
{
    pid_t child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0)
        _exit(0);
    char path[64], state = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)child);
    for (int i = 0; i < 5000 && state != 'Z'; i++) {   /* generous: 5 s for the child to end */
        FILE *f = fopen(path, "r");
        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT_FATAL(fscanf(f, "%*d (%*[^)]) %c", &state) == 1);
        fclose(f);
        if (state != 'Z')
            usleep(1000);
    }
    CU_ASSERT_EQUAL_FATAL(state, 'Z');
    char zombie[48], alive[48], uri[64];
    make_shm_file(zombie, sizeof zombie, child);
    make_shm_file(alive, sizeof alive, getpid());
    snprintf(uri, sizeof uri, "fi_shm://%s", zombie);
    CU_ASSERT_EQUAL(rci_fabric_shm_reclaim(uri), 1);
    CU_ASSERT_FALSE(shm_file_exists(zombie));
    CU_ASSERT_EQUAL(rci_fabric_shm_reclaim(alive), 0);
    CU_ASSERT_TRUE(shm_file_exists(alive));
    snprintf(uri, sizeof uri, "fi_shm://%s", alive);
    CU_ASSERT_EQUAL(rci_fabric_shm_reclaim(uri), 0);
    CU_ASSERT_TRUE(shm_file_exists(alive));
    char path_alive[96];
    snprintf(path_alive, sizeof path_alive, "/dev/shm/%s", alive);
    unlink(path_alive);
    CU_ASSERT_EQUAL(waitpid(child, NULL, 0), child);
    /* Reaped: gone the plain way, and nothing left to remove. */
    make_shm_file(zombie, sizeof zombie, child);
    CU_ASSERT_EQUAL(rci_fabric_shm_reclaim(zombie), 1);
    CU_ASSERT_EQUAL(rci_fabric_shm_reclaim(zombie), 0);
}

static void test_sigkill_msg(void) { sigkill_test(&PROVS[0]); }
static void test_sigkill_rdm(void) { sigkill_test(&PROVS[1]); }

struct named_test { const char *name; CU_TestFunc fn; };

/* RCI_TEST_FILTER=substring runs only the matching tests (for debugging). */
static void add_suite(const char *name, const struct named_test *t, size_t n)
{
    const char *filter = getenv("RCI_TEST_FILTER");
    CU_pSuite s = CU_add_suite(name, NULL, NULL);
    for (size_t i = 0; s && i < n; i++)
        if (!filter || strstr(t[i].name, filter))
            CU_add_test(s, t[i].name, t[i].fn);
}

static void register_tests(void)
{
    static const struct named_test msg[] = {
        { "stream 10^6 msgs, tcp msg", test_stream_msg },
        { "EAGAIN and recovery, tcp msg", test_again_msg },
        { "fair share of header slots, tcp msg", test_fair_share_msg },
        { "close_peer and pending_sends, tcp msg", test_pending_msg },
        { "iov_limit / rx buffer fragments, tcp msg", test_fragments_msg },
        { "later fragment deferred on -FI_EAGAIN, tcp msg", test_deferred_msg },
        { "gather-copy into bounce buffers, tcp msg", test_gather_msg },
        { "gather-copy with error completions, tcp msg", test_gather_error_msg },
        { "gather-copy fragment deferred, tcp msg", test_gather_deferred_msg },
        { "gather-copy, subscriber gone, tcp msg", test_gather_gone_msg },
        { "buffered pages, tcp msg", test_buffered_msg },
        { "buffered page sent when idle (flush_idle)", test_buffered_flush_idle },
        { "pages and control buffers from the pool, tcp msg", test_pool_msg },
        { "no callback inside a send that meets -EAGAIN, tcp msg", test_no_callback_in_send_msg },
        { "subscriber leaves mid-stream, tcp msg", test_disconnect_msg },
        { "malformed control messages, tcp msg", test_malformed_msg },
        { "max_subscribers refusal, tcp msg", test_max_subscribers_msg },
        { "ringcast-sub SIGKILLed, tcp msg", test_sigkill_msg },
        { "idle sleep bounded by heartbeat, not flush period, tcp msg", test_idle_sleep_timer_msg },
        { "idle sleep ends on the wake fd, tcp msg", test_idle_sleep_wake_msg },
    };
    static const struct named_test rdm[] = {
        { "stream 10^6 msgs, tcp;ofi_rxm rdm", test_stream_rdm },
        { "EAGAIN and recovery, tcp;ofi_rxm rdm", test_again_rdm },
        { "fair share of header slots, tcp;ofi_rxm rdm", test_fair_share_rdm },
        { "close_peer and pending_sends, tcp;ofi_rxm rdm", test_pending_rdm },
        { "iov_limit / rx buffer fragments, tcp;ofi_rxm rdm", test_fragments_rdm },
        { "later fragment deferred on -FI_EAGAIN, tcp;ofi_rxm rdm", test_deferred_rdm },
        { "gather-copy into bounce buffers, tcp;ofi_rxm rdm", test_gather_rdm },
        { "gather-copy with error completions, tcp;ofi_rxm rdm", test_gather_error_rdm },
        { "gather-copy fragment deferred, tcp;ofi_rxm rdm", test_gather_deferred_rdm },
        { "gather-copy, subscriber gone, tcp;ofi_rxm rdm", test_gather_gone_rdm },
        { "buffered pages, tcp;ofi_rxm rdm", test_buffered_rdm },
        { "pages and control buffers from the pool, tcp;ofi_rxm rdm", test_pool_rdm },
        { "no callback inside a send that meets -EAGAIN, tcp;ofi_rxm rdm", test_no_callback_in_send_rdm },
        { "subscriber leaves mid-stream, tcp;ofi_rxm rdm", test_disconnect_rdm },
        { "malformed control messages, tcp;ofi_rxm rdm", test_malformed_rdm },
        { "max_subscribers refusal, tcp;ofi_rxm rdm", test_max_subscribers_rdm },
        { "ringcast-sub SIGKILLed, tcp;ofi_rxm rdm", test_sigkill_rdm },
        { "idle sleep bounded by heartbeat, not flush period, tcp;ofi_rxm rdm", test_idle_sleep_timer_rdm },
        { "idle sleep ends on the wake fd, tcp;ofi_rxm rdm", test_idle_sleep_wake_rdm },
        { "idle sleep up to the caller's bound without a CQ wait fd, shm rdm", test_idle_sleep_nofd_shm },
        { "shm region file of a zombie reclaimed, a live process's kept", test_shm_reclaim_zombie },
    };
    add_suite("net_publisher_msg", msg, sizeof msg / sizeof msg[0]);
    add_suite("net_publisher_rdm", rdm, sizeof rdm / sizeof rdm[0]);
}

RCI_CUNIT_MAIN(register_tests)
