/* SPDX-License-Identifier: BSD-3-Clause */
/* test_net_subscriber.c — the subscriber library (net/subscriber.c) against
 * the real publisher (net/publisher.h) over tcp MSG and tcp;ofi_rxm RDM, and
 * against a fake publisher built from raw libfabric calls (net/fabric.h)
 * that sends malformed and awkward messages on purpose. With on_view, a
 * chunk larger than one receive buffer comes as one view of one piece per
 * fragment, each holding its own receive buffer ("views" below).
 *
 * Everything runs on one thread: the publisher's progress and rc_sub_poll()
 * are called in turn (neither blocks). Waits are bounded by generous
 * deadlines: a test fails when something does not happen, never because it
 * was slow. */
#include "net/publisher.h"
#include "ringcast/sub.h"
#include "net/sub_ranges.h"
#include "net/wire.h"
#include "tests/unit/cunit_main.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 10.0
#define SRC_LEN (1u << 20)
#define SUB_RX_SIZE 4096u

static uint64_t now_ns(void) { return rci_now_ns(); }

/* ---- the variant under test ------------------------------------------------ */

struct variant {
    const char *provider;
    enum rci_ep_kind ep;
};
static const struct variant msg_variant = {"tcp", RCI_EP_MSG};
static const struct variant rdm_variant = {"tcp;ofi_rxm", RCI_EP_RDM};
static const struct variant *cur = &msg_variant;

static int use_msg(void) { cur = &msg_variant; return 0; }
static int use_rdm(void) { cur = &rdm_variant; return 0; }

/* A port nobody uses right now (other tests may run at the same time). */
static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* ---- what the subscriber saw ------------------------------------------------- */

struct got {
    uint64_t tag;
    uint32_t flags, len;
    size_t off;   /* payload copy in arena */
    unsigned pieces;   /* on_view: the view's pieces */
};

/* How sub_open makes the subscriber: on_data (default) or on_view, keeping
 * each view (E.held) or not, and its receive buffers. The view tests set
 * it; env_close puts the default back. */
struct sub_mode {
    bool views, retain;
    uint32_t rx_buffers;
};
#define DEFAULT_MODE ((struct sub_mode){.rx_buffers = 16})
static struct sub_mode M = {.rx_buffers = 16};

static struct env {
    struct rci_publisher *pub;
    struct rc_sub *sub;
    uint16_t port;
    unsigned connects, disconnects, resubscribed;
    enum rc_sub_disconnect_reason last_reason;
    struct got got[512];
    unsigned ngot;
    uint8_t arena[4u << 20];
    size_t arena_used;
    unsigned completed, completed_bad;
    uint64_t next_key;
    struct rc_view *held[64];   /* M.retain: views kept, released by the test */
    unsigned nheld;
} E;

static uint8_t *src;   /* the publisher's registered source memory */

static void on_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    (void)ctx;
    if (E.ngot == sizeof E.got / sizeof E.got[0] || E.arena_used + len > sizeof E.arena) {
        CU_FAIL("test buffer full");
        return;
    }
    E.got[E.ngot++] = (struct got){tag, flags, (uint32_t)len, E.arena_used};
    memcpy(E.arena + E.arena_used, data, len);
    E.arena_used += len;
}
/* on_view: the bytes are copied like on_data's (the tests compare them the
 * same way), the view kept when M.retain. */
static void on_view(void *ctx, struct rc_view *v)
{
    (void)ctx;
    size_t len = rc_view_len(v);
    if (E.ngot == sizeof E.got / sizeof E.got[0] || E.arena_used + len > sizeof E.arena ||
        (M.retain && E.nheld == sizeof E.held / sizeof E.held[0])) {
        CU_FAIL("test buffer full");
        return;
    }
    E.got[E.ngot++] = (struct got){rc_view_tag(v), rc_view_flags(v), (uint32_t)len, E.arena_used,
                                   rc_view_piece_count(v)};
    CU_ASSERT_EQUAL(rc_view_copy(v, 0, E.arena + E.arena_used, len), len);
    E.arena_used += len;
    if (M.retain)
        E.held[E.nheld++] = rc_view_retain(v);
}

static void on_connect(void *ctx) { (void)ctx; E.connects++; }
static void on_disconnect(void *ctx, enum rc_sub_disconnect_reason r)
{
    (void)ctx;
    E.disconnects++;
    E.last_reason = r;
}
static void on_resubscribed(void *ctx) { (void)ctx; E.resubscribed++; }

static void on_send_complete(void *arg, uint64_t key, int status)
{
    (void)arg;
    (void)key;
    E.completed++;
    E.completed_bad += status != 0;
}

/* ---- driving ------------------------------------------------------------------ */

static void fake_progress(void);
static bool fake_running;

static void pump_once(void)
{
    if (E.pub)
        rci_publisher_progress(E.pub);
    if (fake_running)
        fake_progress();
    if (E.sub)
        rc_sub_poll(E.sub, 100000);
}

#define PUMP_UNTIL(cond)                                                     \
    ({                                                                       \
        uint64_t end_ = now_ns() + (uint64_t)(WAIT_S * 1e9);                 \
        bool ok_ = true;                                                     \
        while (!(cond)) {                                                    \
            if (now_ns() > end_) {                                           \
                ok_ = false;                                                 \
                break;                                                       \
            }                                                                \
            pump_once();                                                     \
        }                                                                    \
        ok_;                                                                 \
    })

static void pump_for(double seconds)
{
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    while (now_ns() < end)
        pump_once();
}

/* ---- set up and tear down ------------------------------------------------------ */

static int pub_open(void)
{
    struct rci_fabric_params fp = {0};
    snprintf(fp.provider, sizeof fp.provider, "%s", cur->provider);
    fp.endpoint = cur->ep;
    snprintf(fp.address, sizeof fp.address, "127.0.0.1");
    fp.port = E.port;
    fp.tx_queue = 256;
    fp.rx_queue = 64;
    fp.header_slots = 64;
    fp.header_slot_size = 64;
    fp.buffered_pages = 8;
    fp.buffered_page_size = 2048;
    fp.flush_timeout_ns = 1000000;
    fp.peer_timeout_ns = 2000000000ull;
    fp.heartbeat_ns = 100000000ull;
    fp.max_subscribers = 4;
    struct rci_publisher_callbacks cb = {.on_send_complete = on_send_complete};
    char err[256];
    int rc = rci_publisher_create(&fp, &cb, &E.pub, err, sizeof err);
    if (rc) {
        fprintf(stderr, "publisher: %s\n", err);
        return rc;
    }
    rc = rci_publisher_register(E.pub, src, SRC_LEN, err, sizeof err);
    if (rc)
        fprintf(stderr, "register: %s\n", err);
    return rc;
}

/* A restarted publisher may need its port a moment after the old one closed. */
static int pub_reopen(void)
{
    for (int i = 0; i < 50; i++) {
        if (pub_open() == 0)
            return 0;
        pump_for(0.1);
    }
    return -1;
}

static void pub_close(void)
{
    rci_publisher_destroy(E.pub);
    E.pub = NULL;
}

static int sub_open(uint32_t max_chunk)
{
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    snprintf(p.provider, sizeof p.provider, "%s", cur->provider);
    p.endpoint = cur->ep == RCI_EP_RDM ? RC_SUB_EP_RDM : RC_SUB_EP_MSG;
    snprintf(p.host, sizeof p.host, "127.0.0.1");
    p.port = E.port;
    p.rx_buffers = M.rx_buffers;
    p.rx_buffer_size = SUB_RX_SIZE;
    p.max_chunk_size = max_chunk;
    p.heartbeat_ns = 100000000ull;
    p.peer_timeout_ns = 1000000000ull;
    p.reconnect_interval_ns = 50000000ull;
    p.poll_spin_ns = 0;
    p.malformed_limit = 8;
    p.cb = (struct rc_sub_callbacks){.on_data = M.views ? NULL : on_data, .on_connect = on_connect,
                                     .on_disconnect = on_disconnect, .on_resubscribed = on_resubscribed};
    p.on_view = M.views ? on_view : NULL;
    char err[256];
    int rc = rc_sub_create(&p, &E.sub, err, sizeof err);
    if (rc)
        fprintf(stderr, "subscriber: %s\n", err);
    return rc;
}

static void env_reset(void)
{
    memset(&E, 0, sizeof E);
    E.port = free_port();
    E.next_key = 1;
}

static void env_close(void)
{
    for (unsigned i = 0; i < E.nheld; i++)   /* a test that failed half way */
        rc_view_release(E.held[i]);
    E.nheld = 0;
    M = DEFAULT_MODE;
    rc_sub_destroy(E.sub);
    E.sub = NULL;
    if (E.pub)
        pub_close();
}

/* Publisher and subscriber up, connected. */
static bool env_open(uint32_t max_chunk)
{
    env_reset();
    if (pub_open() || sub_open(max_chunk))
        return false;
    return PUMP_UNTIL(E.connects == 1);
}

static unsigned subscribers_of(uint64_t tag)
{
    rci_peer_id ids[4];
    return rci_publisher_subscribers_of(E.pub, tag, ids, 4);
}

static rci_peer_id the_peer(void)
{
    rci_peer_id ids[4];
    return rci_publisher_peers(E.pub, ids, 4) == 1 ? ids[0] : 0;
}

static struct rc_sub_stats sub_stats(void)
{
    struct rc_sub_stats st;
    rc_sub_get_stats(E.sub, &st);
    return st;
}

/* ---- sending chunks made of pieces of src -------------------------------------- */

struct piece_spec {
    uint32_t off, len;
};

static int send_chunk(bool buffered, uint64_t tag, uint32_t flags, const struct piece_spec *ps, unsigned n)
{
    struct iovec iov[16];
    for (unsigned i = 0; i < n; i++)
        iov[i] = (struct iovec){src + ps[i].off, ps[i].len};
    uint64_t end = now_ns() + (uint64_t)(WAIT_S * 1e9);
    for (;;) {
        int rc = buffered ? rci_publisher_send_buffered(E.pub, the_peer(), tag, flags, iov, n)
                          : rci_publisher_send(E.pub, the_peer(), tag, flags, iov, n, E.next_key);
        if (rc != -EAGAIN) {
            E.next_key += rc == 0 && !buffered;
            return rc;
        }
        if (now_ns() > end)
            return rc;
        pump_once();
    }
}

/* Did delivery i carry exactly the bytes of these pieces? */
static bool got_equals(unsigned i, uint64_t tag, uint32_t flags, const struct piece_spec *ps, unsigned n)
{
    if (i >= E.ngot || E.got[i].tag != tag || E.got[i].flags != flags)
        return false;
    size_t pos = E.got[i].off, total = 0;
    for (unsigned k = 0; k < n; k++) {
        if (total + ps[k].len > E.got[i].len || memcmp(E.arena + pos, src + ps[k].off, ps[k].len))
            return false;
        pos += ps[k].len;
        total += ps[k].len;
    }
    return total == E.got[i].len;
}

/* ---- tests against the real publisher ------------------------------------------- */

static void test_subscribe_and_unsubscribe(void)
{
    env_reset();
    CU_ASSERT_FATAL(pub_open() == 0);
    CU_ASSERT_FATAL(sub_open(1u << 20) == 0);
    /* Subscribed before the connection exists: sent after WELCOME. */
    const uint64_t f1[] = {0, 1000}, l1[] = {63, 1000};
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, f1, l1, 2), 0);
    CU_ASSERT(PUMP_UNTIL(E.connects == 1));
    CU_ASSERT(PUMP_UNTIL(subscribers_of(5) == 1 && subscribers_of(1000) == 1));
    CU_ASSERT_EQUAL(subscribers_of(64), 0);
    CU_ASSERT_EQUAL(subscribers_of(999), 0);

    const uint64_t f2 = 10, l2 = 20;
    CU_ASSERT_EQUAL(rc_sub_unsubscribe(E.sub, &f2, &l2, 1), 0);
    CU_ASSERT(PUMP_UNTIL(subscribers_of(15) == 0));
    CU_ASSERT_EQUAL(subscribers_of(9), 1);
    CU_ASSERT_EQUAL(subscribers_of(21), 1);

    CU_ASSERT_EQUAL(rc_sub_subscribe_all(E.sub), 0);
    CU_ASSERT(PUMP_UNTIL(subscribers_of(1ull << 60) == 1 && subscribers_of(15) == 1));
    const uint64_t f3 = 0, l3 = UINT64_MAX;
    CU_ASSERT_EQUAL(rc_sub_unsubscribe(E.sub, &f3, &l3, 1), 0);
    CU_ASSERT(PUMP_UNTIL(subscribers_of(5) == 0 && subscribers_of(1ull << 60) == 0));

    const uint64_t bad_f = 5, bad_l = 4;
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, &bad_f, &bad_l, 1), -EINVAL);
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, &bad_f, &bad_l, 0), -EINVAL);
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(st.sub_requests, 4);   /* resync + unsub + all + unsub all */
    CU_ASSERT_EQUAL(st.sub_refused, 0);
    CU_ASSERT_EQUAL(st.connected, 1);
    CU_ASSERT_EQUAL(E.resubscribed, 0);    /* only after a reconnection */
    CU_ASSERT_EQUAL(st.malformed_total, 0);
    env_close();
}

static const struct rc_sub_pool_class *pool_class(const struct rc_sub_stats *st, const char *use)
{
    for (unsigned c = 0; c < RC_SUB_POOL_CLASSES; c++)
        if (strcmp(st->pool[c].use, use) == 0)
            return &st->pool[c];
    return NULL;
}

static uint64_t tx_in_use(void)
{
    struct rc_sub_stats st = sub_stats();
    const struct rc_sub_pool_class *k = pool_class(&st, "control_send");
    return k ? k->in_use : UINT64_MAX;
}

/* The receive buffers and the control send buffers come from the
 * subscriber's pool: the receive class holds rx_buffers of rx_buffer_size,
 * all got at create; each HELLO, SUBSCRIBE, heartbeat ... takes a control
 * send buffer and gives it back at its completion (in use 0 once quiet). */
static void test_buffers_from_the_pool(void)
{
    CU_ASSERT_FATAL(env_open(1u << 20));
    struct rc_sub_stats st = sub_stats();
    const struct rc_sub_pool_class *rx = pool_class(&st, "receive"), *tx = pool_class(&st, "control_send");
    CU_ASSERT_FATAL(rx != NULL && tx != NULL);
    CU_ASSERT_EQUAL(rx->count, 16);
    CU_ASSERT_EQUAL(rx->size, (SUB_RX_SIZE + 63) / 64 * 64);
    CU_ASSERT_EQUAL(rx->in_use, 16);
    CU_ASSERT_EQUAL(tx->count, 16);
    CU_ASSERT(tx->size >= RCI_WIRE_MAX_CONTROL);
    CU_ASSERT(tx->gets >= 1);   /* HELLO */
    CU_ASSERT(PUMP_UNTIL(tx_in_use() == 0));
    uint64_t before = pool_class((st = sub_stats(), &st), "control_send")->gets;
    for (uint64_t i = 0; i < 5; i++) {   /* five SUBSCRIBE messages at once: five buffers */
        const uint64_t f = 100 * i, l = 100 * i + 9;
        CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, &f, &l, 1), 0);
    }
    st = sub_stats();
    tx = pool_class(&st, "control_send");
    CU_ASSERT(tx->gets >= before + 5);
    CU_ASSERT(tx->high_water >= 1);
    CU_ASSERT(PUMP_UNTIL(subscribers_of(405) == 1 && tx_in_use() == 0));
    st = sub_stats();
    tx = pool_class(&st, "control_send");
    CU_ASSERT_EQUAL(tx->exhausted, 0);
    CU_ASSERT_EQUAL(pool_class(&st, "receive")->in_use, 16);
    env_close();
}

/* Run with on_data (M default) and with on_view (views released in the
 * callback): the same bytes either way. */
static void data_byte_exact_case(void)
{
    CU_ASSERT_FATAL(env_open(1u << 20));
    const uint64_t f = 0, l = 99;
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, &f, &l, 1), 0);
    CU_ASSERT_FATAL(PUMP_UNTIL(subscribers_of(0) == 1));

    /* Sizes around the subscriber's 4096-byte receive buffer (32 of it are
     * the DATA header), several pieces, more pieces than any iov limit. */
    static const struct piece_spec c0[] = {{0, 1}};
    static const struct piece_spec c1[] = {{100, 7}};
    static const struct piece_spec c2[] = {{1000, 4064}};
    static const struct piece_spec c3[] = {{5000, 4065}};
    static const struct piece_spec c4[] = {{3, 20000}};
    static const struct piece_spec c5[] = {{70000, 100}, {80001, 3}, {90000, 999}};
    static const struct piece_spec c6[] = {{1, 10}, {50, 700}, {900, 1}, {2000, 3000}, {9000, 64},
                                           {12000, 5000}, {20000, 9}, {30000, 33}};
    static const struct { const struct piece_spec *p; unsigned n; uint32_t flags; } chunks[] = {
        {c0, 1, 0}, {c1, 1, 1}, {c2, 1, 0}, {c3, 1, 8}, {c4, 1, 0}, {c5, 3, 2}, {c6, 8, 0},
    };
    const unsigned n = sizeof chunks / sizeof chunks[0];
    for (unsigned i = 0; i < n; i++)
        CU_ASSERT_EQUAL(send_chunk(false, 10 + i, chunks[i].flags, chunks[i].p, chunks[i].n), 0);
    /* A tag not subscribed (the publisher sends what it is told to). */
    CU_ASSERT_EQUAL(send_chunk(false, 500, 0, c1, 1), 0);
    CU_ASSERT(PUMP_UNTIL(E.ngot == n && E.completed == n + 1 && sub_stats().unwanted == 1));
    for (unsigned i = 0; i < n; i++)
        CU_ASSERT(got_equals(i, 10 + i, chunks[i].flags, chunks[i].p, chunks[i].n));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT(st.reassembled >= 2);   /* 4065 and 20000 bytes do not fit 4096 */
    CU_ASSERT(st.fragments >= 2 + 5);
    if (M.views) {   /* gathered: one piece per fragment, every buffer back */
        CU_ASSERT_EQUAL(st.chunks_gathered, st.reassembled);
        CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 0);
        CU_ASSERT_EQUAL(E.got[4].pieces, 5);   /* 20000 B in 4056-byte fragments */
        CU_ASSERT_EQUAL(st.rx_buffers_held, 0);
        CU_ASSERT_EQUAL(st.views_outstanding, 0);
    } else {         /* on_data: one contiguous piece, copied */
        CU_ASSERT_EQUAL(st.chunks_reassembled_copied, st.reassembled);
        CU_ASSERT_EQUAL(st.chunks_gathered, 0);
    }
    CU_ASSERT_EQUAL(st.reassembly_drops, 0);
    CU_ASSERT_EQUAL(st.chunks, n);
    CU_ASSERT_EQUAL(E.completed_bad, 0);
    CU_ASSERT_EQUAL(st.malformed_total, 0);
    env_close();
}

static void test_data_byte_exact_and_fragments(void) { data_byte_exact_case(); }

static void test_data_byte_exact_views(void)
{
    M = (struct sub_mode){.views = true, .rx_buffers = 16};
    data_byte_exact_case();
}

/* ---- views of chunks larger than one receive buffer ---------------------------- */

/* Fragments of a chunk of len bytes: 4096-byte receive buffers less the
 * 40-byte DATA header. */
static unsigned frags_of(uint32_t len)
{
    const uint32_t payload = SUB_RX_SIZE - sizeof(struct rci_wire_data);
    return (len + payload - 1) / payload;
}

/* The view's pieces, in order, are src[off, off + len). */
static bool view_is_src(const struct rc_view *v, size_t off, size_t len)
{
    size_t pos = 0;
    for (unsigned i = 0; i < rc_view_piece_count(v); i++) {
        struct rc_view_piece pc = rc_view_piece(v, i);
        if (pos + pc.len > len || memcmp(pc.data, src + off + pos, pc.len) != 0)
            return false;
        pos += pc.len;
    }
    return pos == len && rc_view_len(v) == len;
}

/* Every piece lies in a receive buffer of its own (one fragment each). */
static bool pieces_in_own_buffers(const struct rc_view *v)
{
    for (unsigned i = 0; i < rc_view_piece_count(v); i++) {
        struct rc_view_piece a = rc_view_piece(v, i);
        if (a.len > SUB_RX_SIZE - sizeof(struct rci_wire_data))
            return false;
        for (unsigned j = 0; j < i; j++) {
            const uint8_t *b = rc_view_piece(v, j).data;
            if ((const uint8_t *)a.data < b + SUB_RX_SIZE && b < (const uint8_t *)a.data + SUB_RX_SIZE)
                return false;
        }
    }
    return true;
}

/* Another thread checks each kept view's bytes once more and releases it,
 * in the order given, while the subscriber receives more. */
struct late_release {
    struct rc_view *v[8];
    size_t off[8], len[8];
    unsigned order[8], n, bad;
    atomic_bool go;
    atomic_uint released;
};

static void *release_late(void *arg)
{
    struct late_release *r = arg;
    while (!atomic_load(&r->go))
        sched_yield();
    for (unsigned i = 0; i < r->n; i++) {
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        unsigned k = r->order[i];
        r->bad += !view_is_src(r->v[k], r->off[k], r->len[k]);
        rc_view_release(r->v[k]);
        atomic_fetch_add(&r->released, 1);
    }
    return NULL;
}

static bool send_one(uint64_t tag, uint32_t off, uint32_t len, struct piece_spec *ps)
{
    *ps = (struct piece_spec){off, len};
    return send_chunk(false, tag, 0, ps, 1) == 0;
}

/* Chunks of 1..5 receive buffers (2..6 fragments) on_view: each is one view
 * of one piece per fragment, each piece inside its own receive buffer, the
 * buffers held until the view's last release (also by a slice of it), and
 * released out of order from another thread while more chunks come; a chunk
 * that would make more than half the 64 buffers busy, or has more fragments
 * than that, is copied, counted. Bit-exact throughout; at the end every
 * view and receive buffer is back. */
static void test_views_of_large_chunks(void)
{
    M = (struct sub_mode){.views = true, .retain = true, .rx_buffers = 64};
    CU_ASSERT_FATAL(env_open(1u << 20));
    CU_ASSERT_EQUAL(rc_sub_subscribe_all(E.sub), 0);
    CU_ASSERT_FATAL(PUMP_UNTIL(subscribers_of(0) == 1));

    struct piece_spec ps[32];
    unsigned bufs = 0;
    for (unsigned k = 1; k <= 5; k++) {
        CU_ASSERT(send_one(k, k * 10007, k * SUB_RX_SIZE, &ps[k - 1]));
        bufs += frags_of(k * SUB_RX_SIZE);
    }
    CU_ASSERT_FATAL(PUMP_UNTIL(E.ngot == 5));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(bufs, 20);
    CU_ASSERT_EQUAL(st.chunks_gathered, 5);
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 0);
    CU_ASSERT_EQUAL(st.rx_buffers_held, bufs);
    for (unsigned i = 0; i < 5; i++) {
        CU_ASSERT(got_equals(i, i + 1, 0, &ps[i], 1));
        CU_ASSERT_EQUAL(E.got[i].pieces, frags_of(ps[i].len));
        CU_ASSERT(pieces_in_own_buffers(E.held[i]));
        CU_ASSERT(view_is_src(E.held[i], ps[i].off, ps[i].len));
    }

    /* A slice across three fragments of the 4-fragment view, and copies
     * across their boundaries; the slice keeps all four buffers. */
    const size_t frag = SUB_RX_SIZE - sizeof(struct rci_wire_data);
    size_t s_off = frag - 5, s_len = frag + 10;
    struct rc_view *slice = rc_view_slice(E.held[2], s_off, s_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(slice);
    CU_ASSERT_EQUAL(rc_view_piece_count(slice), 3);
    CU_ASSERT(view_is_src(slice, ps[2].off + s_off, s_len));
    CU_ASSERT_PTR_NULL(rc_view_slice(E.held[2], ps[2].len - 3, 4));
    uint8_t tmp[2 * SUB_RX_SIZE];
    CU_ASSERT_EQUAL(rc_view_copy(E.held[2], frag - 7, tmp, sizeof tmp), sizeof tmp);
    CU_ASSERT_EQUAL(memcmp(tmp, src + ps[2].off + frag - 7, sizeof tmp), 0);
    CU_ASSERT_EQUAL(rc_view_copy(slice, 0, tmp, sizeof tmp), s_len);
    CU_ASSERT_EQUAL(memcmp(tmp, src + ps[2].off + s_off, s_len), 0);
    rc_view_release(E.held[2]);
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, bufs);

    /* Out of order, from another thread, while ten more chunks come (those
     * released in on_view). */
    static struct late_release r;
    memset(&r, 0, sizeof r);
    static const unsigned order[] = {3, 0, 4, 2, 1};
    r.n = 5;
    for (unsigned i = 0; i < 5; i++) {
        r.v[i] = E.held[i];
        r.off[i] = ps[i].off;
        r.len[i] = ps[i].len;
        r.order[i] = order[i];
    }
    r.v[2] = slice;
    r.off[2] = ps[2].off + s_off;
    r.len[2] = s_len;
    E.nheld = 0;
    M.retain = false;
    pthread_t t;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, release_late, &r) == 0);
    atomic_store(&r.go, true);
    for (unsigned i = 0; i < 10; i++)
        CU_ASSERT(send_one(100 + i, 50000 + i * 3001, (i % 5 + 1) * SUB_RX_SIZE, &ps[5 + i]));
    CU_ASSERT(PUMP_UNTIL(E.ngot == 15 && atomic_load(&r.released) == 5));
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(r.bad, 0);
    for (unsigned i = 5; i < 15; i++)
        CU_ASSERT(got_equals(i, 100 + i - 5, 0, &ps[i], 1));
    st = sub_stats();
    CU_ASSERT_EQUAL(st.rx_buffers_held, 0);
    CU_ASSERT_EQUAL(st.chunks_gathered, 15);   /* at most 20 + 6 of 64 busy: all gathered */
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 0);

    /* Kept 6-fragment chunks: the sixth would make 36 of 64 buffers busy. */
    M.retain = true;
    for (unsigned i = 0; i < 7; i++)
        CU_ASSERT(send_one(200 + i, 200000 + i * 20011, 5 * SUB_RX_SIZE, &ps[15 + i]));
    CU_ASSERT(PUMP_UNTIL(E.ngot == 22));
    st = sub_stats();
    CU_ASSERT_EQUAL(st.chunks_gathered, 20);
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 2);
    CU_ASSERT_EQUAL(st.rx_buffers_held, 5 * 6);
    CU_ASSERT(E.got[19].pieces == 6 && E.got[20].pieces == 1 && E.got[21].pieces == 1);
    for (unsigned i = 15; i < 22; i++)
        CU_ASSERT(got_equals(i, 200 + i - 15, 0, &ps[i], 1) && view_is_src(E.held[i - 15], ps[i].off, ps[i].len));
    while (E.nheld)
        rc_view_release(E.held[--E.nheld]);
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, 0);

    /* 40 fragments: more than half the buffers even with all free. */
    CU_ASSERT(send_one(300, 1000, 40 * (uint32_t)frag, &ps[22]));
    CU_ASSERT(PUMP_UNTIL(E.ngot == 23));
    CU_ASSERT(got_equals(22, 300, 0, &ps[22], 1));
    CU_ASSERT_EQUAL(E.got[22].pieces, 1);
    rc_view_release(E.held[--E.nheld]);
    st = sub_stats();
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 3);
    CU_ASSERT_EQUAL(st.reassembled, 23);
    CU_ASSERT_EQUAL(st.chunks, 23);
    CU_ASSERT_EQUAL(st.reassembly_drops, 0);
    CU_ASSERT_EQUAL(st.rx_buffers_held, 0);
    CU_ASSERT_EQUAL(st.views_outstanding, 0);
    CU_ASSERT_EQUAL(E.completed_bad, 0);
    env_close();
}

static void test_buffered_pages(void)
{
    CU_ASSERT_FATAL(env_open(1u << 20));
    CU_ASSERT_EQUAL(rc_sub_subscribe_all(E.sub), 0);
    CU_ASSERT_FATAL(PUMP_UNTIL(subscribers_of(0) == 1));
    struct piece_spec ps[20][2];
    for (unsigned i = 0; i < 20; i++) {
        ps[i][0] = (struct piece_spec){i * 100, i + 1};
        ps[i][1] = (struct piece_spec){50000 + i * 7, i};
        int rc = send_chunk(true, 1ull << 40 | i, i & 3, ps[i], i ? 2 : 1);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "send_buffered: %s (%s)\n", strerror(-rc), rci_publisher_last_error(E.pub));
    }
    CU_ASSERT_EQUAL(rci_publisher_flush(E.pub, the_peer()), 0);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 20));
    for (unsigned i = 0; i < 20; i++)
        CU_ASSERT(got_equals(i, 1ull << 40 | i, i & 3, ps[i], i ? 2 : 1));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT(st.pages >= 1);
    CU_ASSERT_EQUAL(st.records, 20);
    env_close();
}

static void test_publisher_restart(void)
{
    CU_ASSERT_FATAL(env_open(1u << 20));
    const uint64_t f[] = {5, 100}, l[] = {6, 200};
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, f, l, 2), 0);
    CU_ASSERT_FATAL(PUMP_UNTIL(subscribers_of(150) == 1));
    uint64_t first_id = sub_stats().publisher_id;

    pub_close();
    CU_ASSERT_FATAL(pub_reopen() == 0);
    CU_ASSERT(PUMP_UNTIL(E.resubscribed == 1));
    CU_ASSERT(PUMP_UNTIL(subscribers_of(150) == 1 && subscribers_of(5) == 1));
    CU_ASSERT_EQUAL(subscribers_of(7), 0);
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(E.connects, 2);
    CU_ASSERT_EQUAL(E.disconnects, 1);
    CU_ASSERT_EQUAL(st.reconnects, 1);
    CU_ASSERT_EQUAL(st.publisher_restarts, 1);
    CU_ASSERT_NOT_EQUAL(st.publisher_id, first_id);

    static const struct piece_spec c[] = {{4242, 1234}};
    CU_ASSERT_EQUAL(send_chunk(false, 150, 0, c, 1), 0);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 1));
    CU_ASSERT(got_equals(0, 150, 0, c, 1));
    env_close();
}

/* The publisher vanishes without a word: the subscriber notices by silence
 * (or by the connection going down) and keeps trying. */
static void test_publisher_gone_then_back(void)
{
    CU_ASSERT_FATAL(env_open(1u << 20));
    CU_ASSERT_EQUAL(rc_sub_subscribe_all(E.sub), 0);
    CU_ASSERT_FATAL(PUMP_UNTIL(subscribers_of(1) == 1));
    pub_close();
    CU_ASSERT(PUMP_UNTIL(E.disconnects == 1));
    /* Attempts fail while nobody listens (MSG: refused; RDM: HELLO unanswered). */
    CU_ASSERT(PUMP_UNTIL(sub_stats().connect_failures >= 1));
    CU_ASSERT_EQUAL(sub_stats().connected, 0);
    CU_ASSERT_FATAL(pub_reopen() == 0);
    CU_ASSERT(PUMP_UNTIL(E.resubscribed == 1 && subscribers_of(1) == 1));
    env_close();
}

/* ---- a fake publisher: raw libfabric (tcp MSG), sends what we want ------------------ */

#define FAKE_RX 8u
static struct fake {
    struct rci_fabric f;
    struct fid_ep *ep;
    bool connected, shutdown;
    uint8_t rx[FAKE_RX][RCI_WIRE_MAX_CONTROL];
    uint8_t tx[8192];
    unsigned tx_done, tx_posted;
    unsigned hellos, subs, byes, heartbeats;
    uint32_t last_sub_request, bye_reason;
    bool bye_has_count;           /* the last BYE carried chunks_handled (version 3) */
    uint64_t bye_handled;
    uint64_t ranges_total;        /* ranges in every SUBSCRIBE received */
    uint32_t unacked[64];         /* request ids still to answer */
    unsigned nunacked;
    uint32_t next_seq;            /* stream sequence number of the next DATA/PAGE */
    struct rci_wire_hello hello;
} F;

static void fake_handle(const uint8_t *buf, size_t len)
{
    enum rci_wire_error why;
    int type = rci_wire_check(buf, len, RCI_WIRE_TO_PUBLISHER, &why);
    CU_ASSERT_NOT_EQUAL(type, 0);   /* the subscriber only sends valid messages */
    if (type == RCI_MSG_HELLO) {
        F.hellos++;
        rci_wire_check_hello(buf, len, &F.hello);
    } else if (type == RCI_MSG_SUBSCRIBE || type == RCI_MSG_UNSUBSCRIBE) {
        struct rci_wire_sub s;
        rci_wire_check_sub(buf, len, &s);
        F.subs++;
        F.last_sub_request = s.request_id;
        F.ranges_total += s.count;
        if (F.nunacked < 64)
            F.unacked[F.nunacked++] = s.request_id;
    } else if (type == RCI_MSG_BYE) {
        struct rci_wire_bye b;
        rci_wire_check_bye(buf, len, &b);
        F.byes++;
        F.bye_reason = b.reason;
        F.bye_has_count = rci_wire_bye_handled(buf, len, &F.bye_handled);
    } else if (type == RCI_MSG_HEARTBEAT) {
        F.heartbeats++;
    }
}

static void fake_events(void)
{
    struct rci_fabric_event ev;
    char err[256];
    while (rci_fabric_eq_poll(&F.f, &ev, err, sizeof err) == 1) {
        if (ev.event == FI_CONNREQ && !ev.err && !F.ep) {
            CU_ASSERT_FATAL(rci_fabric_msg_ep_open(&F.f, ev.info, NULL, &F.ep, err, sizeof err) == 0);
            for (uintptr_t i = 0; i < FAKE_RX; i++)
                CU_ASSERT(fi_recv(F.ep, F.rx[i], sizeof F.rx[i], NULL, 0, (void *)(i + 1)) == 0);
            CU_ASSERT(fi_accept(F.ep, NULL, 0) == 0);
        } else if (ev.event == FI_CONNECTED) {
            F.connected = true;
        } else if (ev.event == FI_SHUTDOWN || ev.err) {
            F.shutdown = true;   /* ready for the subscriber's next connection */
            rci_fabric_ep_close(F.ep);
            F.ep = NULL;
            F.connected = false;
        }
        if (ev.info)
            fi_freeinfo(ev.info);
    }
}

static void fake_progress(void)
{
    fake_events();
    struct rci_fabric_cqe c[16];
    char err[256];
    int n = rci_fabric_cq_poll(&F.f, c, 16, err, sizeof err);
    for (int i = 0; i < n; i++) {
        uintptr_t ctx = (uintptr_t)c[i].context;
        if (ctx == 0) {   /* our send */
            F.tx_done++;
        } else if (!c[i].err) {
            fake_handle(F.rx[ctx - 1], c[i].len);
            fi_recv(F.ep, F.rx[ctx - 1], sizeof F.rx[0], NULL, 0, (void *)ctx);
        }
    }
}

static bool fake_open(void)
{
    memset(&F, 0, sizeof F);
    struct rci_fabric_params fp = {0};
    snprintf(fp.provider, sizeof fp.provider, "tcp");
    fp.endpoint = RCI_EP_MSG;
    snprintf(fp.address, sizeof fp.address, "127.0.0.1");
    fp.port = E.port;
    char err[256];
    if (rci_fabric_open(&F.f, &fp, RCI_FABRIC_LISTEN, 64, err, sizeof err)) {
        fprintf(stderr, "fake publisher: %s\n", err);
        return false;
    }
    /* tcp needs no registration; the fake relies on that. */
    fake_running = !F.f.mr_local;
    return fake_running;
}

static void fake_close(void)
{
    fake_running = false;
    rci_fabric_ep_close(F.ep);
    rci_fabric_close(&F.f);
}

/* Send len bytes as one message and wait until the provider is done. */
static bool fake_send(const void *msg, size_t len)
{
    memcpy(F.tx, msg, len);
    unsigned want = F.tx_done + 1;
    ssize_t rc;
    uint64_t end = now_ns() + (uint64_t)(WAIT_S * 1e9);
    while ((rc = fi_send(F.ep, F.tx, len, NULL, 0, NULL)) == -FI_EAGAIN && now_ns() < end)
        pump_once();
    return rc == 0 && PUMP_UNTIL(F.tx_done >= want);
}

/* A DATA or PAGE numbered like a publisher does: the next stream number. */
static bool fake_send_stream(uint8_t *msg, size_t len)
{
    rci_wire_set_stream_seq(msg, F.next_seq++);
    return fake_send(msg, len);
}

static size_t build_data(uint8_t *m, size_t cap, uint64_t tag, uint32_t chunk_len, uint32_t off,
                         uint16_t idx, uint16_t cnt, const char *payload, uint32_t len)
{
    ssize_t h = rci_wire_build_data_hdr(m, cap, tag, 0, chunk_len, off, idx, cnt, len);
    CU_ASSERT_FATAL(h == 40);
    memcpy(m + h, payload, len);
    return (size_t)h + len;
}

static void send_data(uint64_t tag, uint32_t chunk_len, uint32_t off, uint16_t idx, uint16_t cnt,
                      const char *payload, uint32_t len)
{
    uint8_t m[4096];
    CU_ASSERT(fake_send_stream(m, build_data(m, sizeof m, tag, chunk_len, off, idx, cnt, payload, len)));
}

static void send_heartbeat(void)
{
    uint8_t m[64];
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_heartbeat(m, sizeof m, 1)));
}

/* A one-fragment chunk of tag `tag` with an explicit stream number. */
static void send_numbered(uint32_t seq, uint64_t tag)
{
    uint8_t m[128];
    size_t len = build_data(m, sizeof m, tag, 4, 0, 0, 1, "abcd", 4);
    rci_wire_set_stream_seq(m, seq);
    CU_ASSERT(fake_send(m, len));
}

/* Bring the subscriber through HELLO/WELCOME/SUBSCRIBE with the fake, whose
 * WELCOME says `version`. */
static bool fake_session_version(uint32_t max_chunk, uint8_t version)
{
    env_reset();
    if (!fake_open() || sub_open(max_chunk))
        return false;
    const uint64_t f = 0, l = 1000;
    CU_ASSERT(rc_sub_subscribe(E.sub, &f, &l, 1) == 0);
    if (!PUMP_UNTIL(F.hellos == 1))
        return false;
    uint8_t m[64];
    if (!fake_send(m, (size_t)rci_wire_build_welcome_version(m, sizeof m, version, 0, 100, 1234)))
        return false;
    if (!PUMP_UNTIL(E.connects == 1 && F.subs == 1))
        return false;
    return fake_send(m, (size_t)rci_wire_build_sub_ack(m, sizeof m, F.last_sub_request, RCI_SUB_OK));
}

static bool fake_session(uint32_t max_chunk) { return fake_session_version(max_chunk, RCI_WIRE_BASE_VERSION); }

static void test_hello_contents(void)
{
    CU_ASSERT_FATAL(fake_session(1u << 20));
    CU_ASSERT_EQUAL(F.hello.rx_buffer_size, SUB_RX_SIZE);
    CU_ASSERT_EQUAL(F.hello.addr_len, 0);   /* MSG: the connection is the address */
    CU_ASSERT_EQUAL(F.hello.min_version, RCI_WIRE_MIN_VERSION);
    CU_ASSERT_EQUAL(F.hello.max_version, RCI_WIRE_VERSION);
    CU_ASSERT_EQUAL(sub_stats().publisher_id, 1234);
    /* Heartbeats flow (every 100 ms here). */
    CU_ASSERT(PUMP_UNTIL(F.heartbeats >= 2));
    env_close();
    fake_close();
}

static void test_malformed_counted_and_survived(void)
{
    CU_ASSERT_FATAL(fake_session(1u << 20));
    uint8_t m[256];
    size_t hb = (size_t)rci_wire_build_heartbeat(m, sizeof m, 1);
    uint8_t bad[6][64];
    size_t bad_len[6];
    for (int k = 0; k < 6; k++) {
        memcpy(bad[k], m, hb);
        bad_len[k] = hb;
    }
    bad_len[0] = 4;                           /* RCI_WIRE_SHORT */
    bad[1][0] ^= 0xff;                        /* RCI_WIRE_BAD_MAGIC */
    bad[2][2] = 7;                            /* RCI_WIRE_BAD_VERSION */
    bad[3][3] = RCI_MSG_HELLO;                 /* RCI_WIRE_BAD_TYPE: wrong direction */
    bad[4][4] = 17;                           /* RCI_WIRE_BAD_LENGTH */
    bad_len[5] = (size_t)rci_wire_build_bye(bad[5], 64, RCI_BYE_NORMAL);
    bad[5][8] = 9;                            /* RCI_WIRE_BAD_FIELD: bye reason */
    for (int k = 0; k < 6; k++)
        CU_ASSERT(fake_send(bad[k], bad_len[k]));
    send_data(7, 5, 0, 0, 1, "hello", 5);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 1));
    struct rc_sub_stats st = sub_stats();
    for (int k = RCI_WIRE_SHORT; k <= RCI_WIRE_BAD_FIELD; k++)
        CU_ASSERT_EQUAL(st.malformed[k], 1);
    CU_ASSERT_EQUAL(st.malformed_total, 6);
    CU_ASSERT_EQUAL(st.connected, 1);
    CU_ASSERT_EQUAL(E.disconnects, 0);
    CU_ASSERT(E.ngot == 1 && E.got[0].tag == 7 && E.got[0].len == 5 &&
              memcmp(E.arena + E.got[0].off, "hello", 5) == 0);

    /* A WELCOME in the middle of a session is out of place. */
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_welcome(m, sizeof m, 0, 100, 99)));
    CU_ASSERT(PUMP_UNTIL(sub_stats().unexpected == 1));

    /* Past malformed_limit (8 per connection; 7 used): disconnect, BYE(protocol). */
    CU_ASSERT(fake_send(bad[1], bad_len[1]));
    CU_ASSERT(fake_send(bad[1], bad_len[1]));
    CU_ASSERT(PUMP_UNTIL(E.disconnects == 1));
    CU_ASSERT_EQUAL(E.last_reason, RC_SUB_DISC_PROTOCOL);
    CU_ASSERT_EQUAL(sub_stats().garbage_disconnects, 1);
    CU_ASSERT(PUMP_UNTIL(F.byes == 1 || F.shutdown));
    if (F.byes == 1)
        CU_ASSERT_EQUAL(F.bye_reason, RCI_BYE_PROTOCOL);
    env_close();
    fake_close();
}

static void test_fragment_rules(void)
{
    CU_ASSERT_FATAL(fake_session(1024));
    const char *abc = "aaaaaaaaaabbbbbbbbbbcccccccccc";
    /* Fragment 1 of 3 missing: the chunk is dropped, never delivered. */
    send_data(8, 30, 0, 0, 3, abc, 10);
    send_data(8, 30, 20, 2, 3, abc + 20, 10);
    /* A complete chunk in three fragments. */
    send_data(9, 30, 0, 0, 3, abc, 10);
    send_data(9, 30, 10, 1, 3, abc + 10, 10);
    send_data(9, 30, 20, 2, 3, abc + 20, 10);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 1));
    CU_ASSERT(E.got[0].tag == 9 && E.got[0].len == 30 && memcmp(E.arena + E.got[0].off, abc, 30) == 0);
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(st.reassembly_drops, 1);
    CU_ASSERT_EQUAL(st.reassembled, 1);

    /* Interleaved chunks: the first is cut by the second's fragment 0. */
    send_data(10, 20, 0, 0, 2, abc, 10);
    send_data(11, 20, 0, 0, 2, abc, 10);
    send_data(11, 20, 10, 1, 2, abc + 10, 10);
    send_data(10, 20, 10, 1, 2, abc + 10, 10);   /* orphan: part of the lost chunk */
    CU_ASSERT(PUMP_UNTIL(E.ngot == 2));
    CU_ASSERT(E.got[1].tag == 11 && E.got[1].len == 20);

    /* Larger than max_chunk_size (1024): counted once, nothing delivered. */
    static char big[1000];
    send_data(12, 2000, 0, 0, 2, big, 1000);
    send_data(12, 2000, 1000, 1, 2, big, 1000);
    /* Tag not subscribed: dropped and counted. */
    send_data(5000, 3, 0, 0, 1, "xyz", 3);
    /* A page of three records. */
    uint8_t page[256];
    rci_wire_page_init(page, sizeof page);
    rci_wire_page_append(page, sizeof page, 1, 0, "one", 3);
    rci_wire_page_append(page, sizeof page, 2, 4, "", 0);
    rci_wire_page_append(page, sizeof page, 3, 0, "three333", 8);
    CU_ASSERT(fake_send_stream(page, rci_wire_page_length(page)));
    CU_ASSERT(PUMP_UNTIL(E.ngot == 5));
    st = sub_stats();
    /* 1 above, the cut chunk 10, and the orphan run of chunk 10's fragment 1. */
    CU_ASSERT_EQUAL(st.reassembly_drops, 3);
    CU_ASSERT_EQUAL(st.too_big, 1);
    CU_ASSERT_EQUAL(st.unwanted, 1);
    CU_ASSERT_EQUAL(st.records, 3);
    CU_ASSERT(E.got[2].tag == 1 && E.got[2].len == 3 && !memcmp(E.arena + E.got[2].off, "one", 3));
    CU_ASSERT(E.got[3].tag == 2 && E.got[3].len == 0 && E.got[3].flags == 4);
    CU_ASSERT(E.got[4].tag == 3 && E.got[4].len == 8 && !memcmp(E.arena + E.got[4].off, "three333", 8));
    CU_ASSERT_EQUAL(st.malformed_total, 0);
    env_close();
    fake_close();
}

static bool got_tags_in_order(unsigned from, uint64_t first_tag, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (E.got[from + i].tag != first_tag + i)
            return false;
    return true;
}

/* Messages that complete out of order are handed on in stream order; a
 * message missing while every spare receive buffer holds a later one is
 * counted lost, and when it turns up after all it is dropped as late. */
static void test_stream_order(void)
{
    CU_ASSERT_FATAL(fake_session(1024));
    send_numbered(2, 102);
    send_numbered(1, 101);
    send_numbered(3, 103);
    send_numbered(0, 100);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 4));
    CU_ASSERT(got_tags_in_order(0, 100, 4));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(st.reordered, 3);
    CU_ASSERT_EQUAL(st.seq_lost + st.seq_late, 0);

    send_numbered(3, 999);                  /* a duplicate of a handled number */
    CU_ASSERT(PUMP_UNTIL(sub_stats().seq_late == 1));

    /* Number 4 never comes: 15 of the 16 receive buffers may wait for it;
     * the 16th later message gives it up. */
    for (uint32_t seq = 5; seq < 5 + 16; seq++)
        send_numbered(seq, 100 + seq);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 4 + 16));
    CU_ASSERT(got_tags_in_order(4, 105, 16));
    st = sub_stats();
    CU_ASSERT_EQUAL(st.seq_lost, 1);
    CU_ASSERT_EQUAL(st.reordered, 3 + 16);
    send_numbered(4, 104);                  /* too late: dropped, counted */
    send_numbered(21, 121);                 /* the stream goes on */
    CU_ASSERT(PUMP_UNTIL(E.ngot == 21));
    CU_ASSERT_EQUAL(E.got[20].tag, 121);
    CU_ASSERT_EQUAL(sub_stats().seq_late, 2);
    /* Number 22 is slow (a rendezvous message on a starved machine): 23
     * waits for it as long as the connection lives, here 0.8 s, beyond half
     * the peer timeout (the old rule gave 22 up after 0.5 s and dropped it as
     * late when it came), with heartbeats keeping the connection alive. */
    send_numbered(23, 123);
    for (int i = 0; i < 8; i++) {
        pump_for(0.1);
        send_heartbeat();
    }
    CU_ASSERT_EQUAL(E.ngot, 21);
    send_numbered(22, 122);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 23));
    CU_ASSERT(got_tags_in_order(21, 122, 2));
    CU_ASSERT_EQUAL(sub_stats().seq_lost, 1);
    CU_ASSERT_EQUAL(sub_stats().seq_late, 2);
    CU_ASSERT_EQUAL(E.disconnects, 0);
    /* Number 24 never comes and only the publisher's BYE follows 25: 25 is
     * handed on before the connection ends and 24 counts lost. */
    send_numbered(25, 125);
    pump_for(0.2);
    CU_ASSERT_EQUAL(E.ngot, 23);
    uint8_t bye[64];
    CU_ASSERT(fake_send(bye, (size_t)rci_wire_build_bye(bye, sizeof bye, RCI_BYE_NORMAL)));
    CU_ASSERT(PUMP_UNTIL(E.ngot == 24));
    CU_ASSERT_EQUAL(E.got[23].tag, 125);
    CU_ASSERT_EQUAL(sub_stats().seq_lost, 2);
    CU_ASSERT_EQUAL(sub_stats().held_dropped, 0);
    env_close();
    fake_close();
}

/* Answer every SUBSCRIBE received so far with OK. */
static bool fake_ack_all(void)
{
    uint8_t m[64];
    bool ok = true;
    while (F.nunacked > 0 && ok)
        ok = fake_send(m, (size_t)rci_wire_build_sub_ack(m, sizeof m, F.unacked[--F.nunacked], RCI_SUB_OK));
    return ok;
}

/* A DATA fragment with an explicit stream number. */
static void send_data_numbered(uint32_t seq, uint64_t tag, uint32_t chunk_len, uint32_t off, uint16_t idx,
                               uint16_t cnt, const char *payload, uint32_t len)
{
    uint8_t m[4096];
    size_t n = build_data(m, sizeof m, tag, chunk_len, off, idx, cnt, payload, len);
    rci_wire_set_stream_seq(m, seq);
    CU_ASSERT(fake_send(m, n));
}

/* Gathered views whose chunk breaks (a gap, another chunk's fragment, a
 * whole chunk, the publisher leaving): the fragments gathered so far give
 * their receive buffers back, each once; kept views hold exactly theirs;
 * after a reconnection every buffer is free again. */
static void test_gathered_views_broken(void)
{
    M = (struct sub_mode){.views = true, .retain = true, .rx_buffers = 16};
    CU_ASSERT_FATAL(fake_session(1024));
    const char *abc = "aaaaaaaaaabbbbbbbbbbcccccccccc";
    send_data(9, 30, 0, 0, 3, abc, 10);
    send_data(9, 30, 10, 1, 3, abc + 10, 10);
    send_data(9, 30, 20, 2, 3, abc + 20, 10);
    CU_ASSERT_FATAL(PUMP_UNTIL(E.ngot == 1));
    CU_ASSERT(E.got[0].pieces == 3 && E.got[0].len == 30 && memcmp(E.arena + E.got[0].off, abc, 30) == 0);
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, 3);
    /* A gap: fragment 2 of 4 never comes. */
    send_data(8, 40, 0, 0, 4, abc, 10);
    send_data(8, 40, 10, 1, 4, abc + 10, 10);
    send_data(8, 40, 30, 3, 4, abc, 10);
    /* Another chunk's fragment 0 cuts chunk 10; 10's fragment 1 is then an orphan. */
    send_data(10, 20, 0, 0, 2, abc, 10);
    send_data(11, 20, 0, 0, 2, abc, 10);
    send_data(11, 20, 10, 1, 2, abc + 10, 10);
    send_data(10, 20, 10, 1, 2, abc + 10, 10);
    /* A whole chunk cuts chunk 12. */
    send_data(12, 30, 0, 0, 3, abc, 10);
    send_data(13, 5, 0, 0, 1, "whole", 5);
    CU_ASSERT(PUMP_UNTIL(sub_stats().data_messages == 12));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(E.ngot, 3);
    CU_ASSERT(E.got[1].tag == 11 && E.got[1].pieces == 2 && E.got[2].tag == 13 && E.got[2].pieces == 1);
    CU_ASSERT_EQUAL(st.reassembly_drops, 4);   /* chunk 8, chunk 10, 10's orphan, chunk 12 */
    CU_ASSERT_EQUAL(st.chunks_gathered, 2);
    CU_ASSERT_EQUAL(st.rx_buffers_held, 3 + 2 + 1);   /* the kept views' only */
    CU_ASSERT_EQUAL(st.views_outstanding, 3);
    rc_view_release(E.held[0]);
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, 3);

    /* The publisher leaves with a chunk half gathered. */
    send_data(14, 30, 0, 0, 3, abc, 10);
    send_data(14, 30, 10, 1, 3, abc + 10, 10);
    CU_ASSERT(PUMP_UNTIL(sub_stats().data_messages == 14));
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, 5);
    uint8_t m[64];
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_bye(m, sizeof m, RCI_BYE_NORMAL)));
    CU_ASSERT(PUMP_UNTIL(E.disconnects == 1));
    st = sub_stats();
    CU_ASSERT_EQUAL(st.rx_buffers_held, 3);
    CU_ASSERT_EQUAL(st.views_outstanding, 2);
    rc_view_release(E.held[2]);
    rc_view_release(E.held[1]);
    E.nheld = 0;
    CU_ASSERT_EQUAL(sub_stats().rx_buffers_held, 0);

    /* Reconnected: all 16 buffers are free, so an 8-fragment chunk (half of
     * them) is gathered. */
    CU_ASSERT_FATAL(PUMP_UNTIL(F.hellos == 2 && F.ep != NULL));
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_welcome(m, sizeof m, 0, 100, 1234)));
    CU_ASSERT_FATAL(PUMP_UNTIL(E.connects == 2 && F.subs == 2));
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_sub_ack(m, sizeof m, F.last_sub_request, RCI_SUB_OK)));
    F.next_seq = 0;   /* each connection numbers its stream from 0 */
    char eight[80];
    for (unsigned i = 0; i < 80; i++)
        eight[i] = (char)('A' + i % 26);
    for (uint16_t i = 0; i < 8; i++)
        send_data(15, 80, i * 10u, i, 8, eight + i * 10, 10);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 4));
    CU_ASSERT(E.got[3].pieces == 8 && E.got[3].len == 80 && memcmp(E.arena + E.got[3].off, eight, 80) == 0);
    st = sub_stats();
    CU_ASSERT_EQUAL(st.chunks_gathered, 3);
    CU_ASSERT_EQUAL(st.rx_buffers_held, 8);
    rc_view_release(E.held[--E.nheld]);
    st = sub_stats();
    CU_ASSERT_EQUAL(st.rx_buffers_held, 0);
    CU_ASSERT_EQUAL(st.views_outstanding, 0);
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 0);
    env_close();
    fake_close();
}

/* Gathering never leaves no receive buffer: 9 fragments (more than half of
 * 16 buffers) are copied; and a chunk half gathered when later messages,
 * held for stream order, take every other buffer is copied after all, so
 * that its missing fragments can still arrive. */
static void test_gather_keeps_a_buffer(void)
{
    M = (struct sub_mode){.views = true, .rx_buffers = 16};
    CU_ASSERT_FATAL(fake_session(1u << 20));
    const char *abc = "aaaaaaaaaabbbbbbbbbbccccccccccdddddddddd";
    char nine[90];
    for (unsigned i = 0; i < 90; i++)
        nine[i] = (char)('a' + i % 26);
    for (uint16_t i = 0; i < 9; i++)
        send_data(30, 90, i * 10u, i, 9, nine + i * 10, 10);
    CU_ASSERT_FATAL(PUMP_UNTIL(E.ngot == 1));
    CU_ASSERT(E.got[0].pieces == 1 && E.got[0].len == 90 && memcmp(E.arena + E.got[0].off, nine, 90) == 0);
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 1);
    CU_ASSERT_EQUAL(st.chunks_gathered, 0);

    /* Fragments 0 and 1 of 4 gathered (2 buffers), then 14 later messages
     * held for order (fragment 2 is slow): 16 of 16 busy. */
    uint32_t base = F.next_seq;
    send_data_numbered(base, 40, 40, 0, 0, 4, abc, 10);
    send_data_numbered(base + 1, 40, 40, 10, 1, 4, abc + 10, 10);
    for (uint32_t i = 0; i < 14; i++)
        send_numbered(base + 4 + i, 41 + i);
    CU_ASSERT_FATAL(PUMP_UNTIL(sub_stats().reordered == 14));
    send_data_numbered(base + 2, 40, 40, 20, 2, 4, abc + 20, 10);
    send_data_numbered(base + 3, 40, 40, 30, 3, 4, abc + 30, 10);
    F.next_seq = base + 18;
    CU_ASSERT(PUMP_UNTIL(E.ngot == 1 + 1 + 14));
    CU_ASSERT(E.got[1].tag == 40 && E.got[1].len == 40 && E.got[1].pieces == 1 &&
              memcmp(E.arena + E.got[1].off, abc, 40) == 0);
    CU_ASSERT(got_tags_in_order(2, 41, 14));
    st = sub_stats();
    CU_ASSERT_EQUAL(st.chunks_reassembled_copied, 2);
    CU_ASSERT_EQUAL(st.chunks_gathered, 0);
    CU_ASSERT_EQUAL(st.seq_lost, 0);
    CU_ASSERT_EQUAL(st.reassembly_drops, 0);
    CU_ASSERT_EQUAL(st.rx_buffers_held, 0);
    CU_ASSERT_EQUAL(st.views_outstanding, 0);
    /* Everything free again: 8 fragments are gathered. */
    for (uint16_t i = 0; i < 8; i++)
        send_data(31, 80, i * 10u, i, 8, nine + i * 10, 10);
    CU_ASSERT(PUMP_UNTIL(E.ngot == 17));
    CU_ASSERT(E.got[16].pieces == 8 && memcmp(E.arena + E.got[16].off, nine, 80) == 0);
    CU_ASSERT_EQUAL(sub_stats().chunks_gathered, 1);
    CU_ASSERT_EQUAL(E.disconnects, 0);
    env_close();
    fake_close();
}

/* 2500 disjoint ranges go out in messages of at most 1024, after the first
 * WELCOME and again after a reconnection to a restarted publisher; the
 * resubscribed callback waits for every acknowledgement. */
static void test_resubscribe_in_batches(void)
{
    env_reset();
    CU_ASSERT_FATAL(fake_open() && sub_open(1u << 20) == 0);
    static uint64_t first[2500], last[2500];
    for (unsigned i = 0; i < 2500; i++) {
        first[i] = 3ull * i;
        last[i] = 3ull * i + 1;
    }
    CU_ASSERT_EQUAL(rc_sub_subscribe(E.sub, first, last, 2500), 0);
    uint8_t m[64];
    CU_ASSERT_FATAL(PUMP_UNTIL(F.hellos == 1));
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_welcome(m, sizeof m, 0, 100, 1)));
    CU_ASSERT(PUMP_UNTIL(F.subs == 3));
    CU_ASSERT_EQUAL(F.ranges_total, 2500);
    CU_ASSERT(fake_ack_all());

    /* The publisher leaves and comes back as a new process (new id). */
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_bye(m, sizeof m, RCI_BYE_NORMAL)));
    CU_ASSERT(PUMP_UNTIL(E.disconnects == 1 && F.ep == NULL));
    CU_ASSERT_FATAL(PUMP_UNTIL(F.hellos == 2));
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_welcome(m, sizeof m, 0, 100, 2)));
    CU_ASSERT(PUMP_UNTIL(F.subs == 6));
    CU_ASSERT_EQUAL(F.ranges_total, 5000);
    pump_for(0.05);
    CU_ASSERT_EQUAL(E.resubscribed, 0);   /* not before the acknowledgements */
    CU_ASSERT(fake_ack_all());
    CU_ASSERT(PUMP_UNTIL(E.resubscribed == 1));
    struct rc_sub_stats st = sub_stats();
    CU_ASSERT_EQUAL(st.reconnects, 1);
    CU_ASSERT_EQUAL(st.publisher_restarts, 1);
    CU_ASSERT_EQUAL(st.sub_refused, 0);
    CU_ASSERT_EQUAL(st.unexpected, 0);
    env_close();
    fake_close();
}

/* The publisher says BYE: disconnect with that reason, then reconnect. */
static void test_bye_from_publisher(void)
{
    CU_ASSERT_FATAL(fake_session(1u << 20));
    uint8_t m[64];
    CU_ASSERT(fake_send(m, (size_t)rci_wire_build_bye(m, sizeof m, RCI_BYE_NORMAL)));
    CU_ASSERT(PUMP_UNTIL(E.disconnects == 1));
    CU_ASSERT_EQUAL(E.last_reason, RC_SUB_DISC_BYE);
    env_close();
    fake_close();
}

/* Closing in order: to a publisher whose WELCOME says version 3 the BYE
 * carries the chunks handled on this connection (not one held for order);
 * to a version-2 publisher it is the 16-byte BYE it knows. */
static void bye_count_case(uint8_t version)
{
    CU_ASSERT_FATAL(fake_session_version(1u << 20, version));
    for (uint32_t seq = 0; seq < 5; seq++)
        send_numbered(seq, 5);
    send_numbered(7, 5);   /* 5 and 6 never come: held for order, not handled */
    CU_ASSERT(PUMP_UNTIL(E.ngot == 5));
    pump_for(0.05);
    CU_ASSERT_EQUAL(E.ngot, 5);
    rc_sub_destroy(E.sub);   /* says BYE; the fake reads it below */
    E.sub = NULL;
    CU_ASSERT(PUMP_UNTIL(F.byes == 1));
    CU_ASSERT_EQUAL(F.bye_reason, RCI_BYE_NORMAL);
    CU_ASSERT_EQUAL(F.bye_has_count, version >= 3);
    if (version >= 3)
        CU_ASSERT_EQUAL(F.bye_handled, 5);
    env_close();
    fake_close();
}

static void test_bye_count_v3(void) { bye_count_case(3); }
static void test_bye_count_v2(void) { bye_count_case(2); }

/* ---- no network ---------------------------------------------------------------- */

static void test_params_rejected(void)
{
    struct rc_sub_params p;
    struct rc_sub *s = NULL;
    char err[256];
    rc_sub_params_default(&p);
    CU_ASSERT_EQUAL(rc_sub_create(&p, &s, err, sizeof err), -EINVAL);   /* no on_data */
    CU_ASSERT(strstr(err, "on_data") != NULL);
    p.cb.on_data = on_data;
    p.rx_buffer_size = 63;
    CU_ASSERT_EQUAL(rc_sub_create(&p, &s, err, sizeof err), -EINVAL);
    rc_sub_params_default(&p);
    p.cb.on_data = on_data;
    p.peer_timeout_ns = p.heartbeat_ns;
    CU_ASSERT_EQUAL(rc_sub_create(&p, &s, err, sizeof err), -EINVAL);
    rc_sub_params_default(&p);
    p.cb.on_data = on_data;
    p.port = 0;
    CU_ASSERT_EQUAL(rc_sub_create(&p, &s, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(s);
    rc_sub_destroy(NULL);
}

static void test_tag_ranges(void)
{
    struct rci_tag_ranges s = {0};
    CU_ASSERT_EQUAL(rci_tag_ranges_add(&s, 10, 20), 0);
    CU_ASSERT_EQUAL(rci_tag_ranges_add(&s, 30, 40), 0);
    CU_ASSERT_EQUAL(rci_tag_ranges_add(&s, 21, 29), 0);   /* adjacent on both sides: one range */
    CU_ASSERT_EQUAL(s.count, 1);
    CU_ASSERT(s.r[0].first == 10 && s.r[0].last == 40);
    CU_ASSERT_EQUAL(rci_tag_ranges_remove(&s, 15, 35), 0);  /* split */
    CU_ASSERT_EQUAL(s.count, 2);
    CU_ASSERT(rci_tag_ranges_contains(&s, 14) && !rci_tag_ranges_contains(&s, 15));
    CU_ASSERT(!rci_tag_ranges_contains(&s, 35) && rci_tag_ranges_contains(&s, 36));
    CU_ASSERT(!rci_tag_ranges_contains(&s, 9) && !rci_tag_ranges_contains(&s, 41));
    CU_ASSERT_EQUAL(rci_tag_ranges_add(&s, 0, UINT64_MAX), 0);
    CU_ASSERT(s.count == 1 && rci_tag_ranges_contains(&s, UINT64_MAX));
    CU_ASSERT_EQUAL(rci_tag_ranges_remove(&s, 0, 0), 0);
    CU_ASSERT_EQUAL(rci_tag_ranges_remove(&s, UINT64_MAX, UINT64_MAX), 0);
    CU_ASSERT(s.count == 1 && s.r[0].first == 1 && s.r[0].last == UINT64_MAX - 1);
    CU_ASSERT_EQUAL(rci_tag_ranges_add(&s, 5, 4), -EINVAL);
    rci_tag_ranges_free(&s);

    /* Slicing walks every range once, in batches, from a tag position. */
    for (uint64_t t = 0; t < 2500; t++)
        rci_tag_ranges_add(&s, 3 * t, 3 * t + 1);
    struct rci_wire_range out[1024];
    uint64_t from = 0, total = 0;
    int done = 0, batches = 0;
    while (!done) {
        uint32_t n = rci_tag_ranges_slice(&s, &from, &done, out, 1024);
        for (uint32_t i = 0; i < n; i++)
            total += out[i].last - out[i].first + 1;
        batches++;
    }
    CU_ASSERT_EQUAL(total, 5000);
    CU_ASSERT_EQUAL(batches, 3);
    from = 4;   /* inside the second range [3,4]: clipped */
    rci_tag_ranges_slice(&s, &from, &done, out, 1);
    CU_ASSERT(out[0].first == 4 && out[0].last == 4 && !done && from == 5);
    rci_tag_ranges_free(&s);
}

static void register_tests(void)
{
    src = malloc(SRC_LEN);
    for (size_t i = 0; i < SRC_LEN; i++)
        src[i] = (uint8_t)(i * 131 + (i >> 8));
    RCI_SUITE("subscriber (local)", {"params rejected", test_params_rejected},
             {"tag ranges", test_tag_ranges});

    static const struct { const char *n; CU_TestFunc f; } real[] = {
        {"subscribe and unsubscribe", test_subscribe_and_unsubscribe},
        {"receive and control send buffers from the pool", test_buffers_from_the_pool},
        {"data byte-exact and fragments", test_data_byte_exact_and_fragments},
        {"data byte-exact and fragments, as views", test_data_byte_exact_views},
        {"views of chunks larger than a receive buffer", test_views_of_large_chunks},
        {"buffered pages", test_buffered_pages},
        {"publisher restart", test_publisher_restart},
        {"publisher gone, then back", test_publisher_gone_then_back},
    };
    CU_pSuite msg = CU_add_suite("subscriber vs publisher, tcp msg", use_msg, NULL);
    CU_pSuite rdm = CU_add_suite("subscriber vs publisher, tcp;ofi_rxm rdm", use_rdm, NULL);
    for (size_t i = 0; msg && rdm && i < sizeof real / sizeof real[0]; i++) {
        CU_add_test(msg, real[i].n, real[i].f);
        CU_add_test(rdm, real[i].n, real[i].f);
    }
    CU_pSuite fake = CU_add_suite("subscriber vs fake publisher, tcp msg", use_msg, NULL);
    if (fake) {
        CU_add_test(fake, "hello contents and heartbeats", test_hello_contents);
        CU_add_test(fake, "malformed counted and survived", test_malformed_counted_and_survived);
        CU_add_test(fake, "fragment rules", test_fragment_rules);
        CU_add_test(fake, "gathered views: broken chunks give buffers back once", test_gathered_views_broken);
        CU_add_test(fake, "gathering always leaves a receive buffer", test_gather_keeps_a_buffer);
        CU_add_test(fake, "stream order restored, losses counted", test_stream_order);
        CU_add_test(fake, "bye from publisher", test_bye_from_publisher);
        CU_add_test(fake, "bye with the handled count (publisher of version 3)", test_bye_count_v3);
        CU_add_test(fake, "plain bye to a publisher of version 2", test_bye_count_v2);
        CU_add_test(fake, "resubscribe in batches", test_resubscribe_in_batches);
    }
}

RCI_CUNIT_MAIN(register_tests)
