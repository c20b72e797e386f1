/* SPDX-License-Identifier: BSD-3-Clause */
/* test_api.c — the public API (include/ringcast/) against the internals it
 * mirrors: parameter defaults equal the daemon's configuration defaults
 * (rc_sub_params_default used port 4711 while the daemon listens on 12345),
 * rc_pub_create refuses bad parameters with a message, ringcast/record.h
 * parses records exactly as net/wire.c lays them out, rc_version() is the
 * VERSION file, and rc_daq_* reads out a simulated card: every chunk once,
 * pieces inside rc_daq_card_memory(), -EAGAIN offered again, a refused chunk
 * counted, nothing left in flight; rc_pub against a real rc_sub, including
 * close_peer and destroy with sends outstanding (every key back exactly once).
 * (The install test checks the exports.) */
#include "ringcast/ringcast.h"
#include "tests/unit/cunit_main.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "net/wire.h"

static void load_defaults(struct rci_config *cfg)
{
    struct rci_config_error e;
    CU_ASSERT_EQUAL_FATAL(rci_config_load(cfg, NULL, NULL, 0, NULL, &e), 0);
}

static void test_sub_default_port_is_the_daemons(void)
{
    static struct rci_config cfg;
    load_defaults(&cfg);
    struct rc_sub_params p;
    rc_sub_params_default(&p);
    CU_ASSERT_EQUAL(p.port, cfg.fabric.port);
    CU_ASSERT_EQUAL(p.port, RC_SUB_DEFAULT_PORT);
    CU_ASSERT_STRING_EQUAL(p.host, cfg.fabric.address);
    CU_ASSERT_STRING_EQUAL(p.provider, cfg.fabric.provider);
}

static void test_pub_defaults_are_the_daemons(void)
{
    static struct rci_config cfg;
    load_defaults(&cfg);
    const struct rci_fabric_params *f = &cfg.fabric;
    struct rc_pub_params p;
    rc_pub_params_default(&p);
    CU_ASSERT_STRING_EQUAL(p.provider, f->provider);
    CU_ASSERT_EQUAL((int)p.endpoint, (int)f->endpoint);
    CU_ASSERT_STRING_EQUAL(p.address, f->address);
    CU_ASSERT_EQUAL(p.port, f->port);
    CU_ASSERT_EQUAL(p.header_slots, f->header_slots);
    CU_ASSERT_EQUAL(p.max_subscribers, f->max_subscribers);
    CU_ASSERT_EQUAL(p.max_tags_per_subscriber, f->max_tags_per_subscriber);
    CU_ASSERT_EQUAL(p.tx_queue, f->tx_queue);
    CU_ASSERT_EQUAL(p.rx_queue, f->rx_queue);
    CU_ASSERT_EQUAL(p.cq_size, f->cq_size);
    CU_ASSERT_EQUAL(p.heartbeat_ns, f->heartbeat_ns);
    CU_ASSERT_EQUAL(p.peer_timeout_ns, f->peer_timeout_ns);
    CU_ASSERT_EQUAL(p.poll_spin_ns, f->poll_spin_ns);
    CU_ASSERT_STRING_EQUAL(p.allow, f->allow);
}

static void ignore_completion(void *ctx, uint64_t key, int status)
{
    (void)ctx;
    (void)key;
    (void)status;
}

/* rc_pub_create(p) must fail with -EINVAL and an err containing `word`. */
static void expect_refused(const struct rc_pub_params *p, const char *word)
{
    char err[256] = "";
    struct rc_pub *pub = (struct rc_pub *)1;
    CU_ASSERT_EQUAL(rc_pub_create(p, &pub, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(pub);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, word));
    if (!strstr(err, word))
        fprintf(stderr, "expected '%s' in: %s\n", word, err);
}

static void test_pub_create_refuses_bad_params(void)
{
    struct rc_pub_params p;
    rc_pub_params_default(&p);
    expect_refused(&p, "on_send_complete");
    p.cb.on_send_complete = ignore_completion;
    struct rc_pub_params bad = p;
    bad.port = 0;
    expect_refused(&bad, "port");
    bad = p;
    bad.endpoint = (enum rc_pub_endpoint)7;
    expect_refused(&bad, "endpoint");
    bad = p;
    bad.provider[0] = '\0';
    expect_refused(&bad, "provider");
    bad = p;
    bad.heartbeat_ns = bad.peer_timeout_ns;
    expect_refused(&bad, "heartbeat");
    bad = p;
    snprintf(bad.allow, sizeof bad.allow, "10.0.0.0/33");
    expect_refused(&bad, "allow");
    bad = p;
    bad.header_slots = 0;
    expect_refused(&bad, "header_slots");
}

/* A publisher on a free port: create, register, no subscriber, destroy. */
static void test_pub_lifecycle_without_subscribers(void)
{
    struct rc_pub_params p;
    rc_pub_params_default(&p);
    p.cb.on_send_complete = ignore_completion;
    p.port = (uint16_t)(30000 + getpid() % 20000);
    char err[256] = "";
    struct rc_pub *pub = NULL;
    int rc = rc_pub_create(&p, &pub, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    static uint8_t region[8192];
    CU_ASSERT_EQUAL(rc_pub_register(pub, region, sizeof region, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rc_pub_register(pub, NULL, 0, err, sizeof err), -EINVAL);
    struct iovec iov = {.iov_base = region, .iov_len = 100};
    CU_ASSERT_EQUAL(rc_pub_send(pub, 1, 0, 0, &iov, 1, 7), -ENOTCONN);   /* no such subscriber */
    CU_ASSERT_EQUAL(rc_pub_send(pub, 1, 0, 0, NULL, 1, 7), -EINVAL);
    CU_ASSERT(rc_pub_progress(pub) >= 0);
    CU_ASSERT_EQUAL(rc_pub_free_slots(pub), p.header_slots);
    rc_pub_peer peers[4];
    CU_ASSERT_EQUAL(rc_pub_peers(pub, peers, 4), 0);
    CU_ASSERT_EQUAL(rc_pub_subscribers_of(pub, 0, peers, 4), 0);
    struct rc_pub_stats st;
    rc_pub_get_stats(pub, &st);
    CU_ASSERT_EQUAL(st.slots_total, p.header_slots);
    CU_ASSERT_EQUAL(st.slots_free, p.header_slots);
    CU_ASSERT_EQUAL(st.sends, 0);
    CU_ASSERT_EQUAL(st.send_errors, 1);   /* the -ENOTCONN (a NULL iov is refused before) */
    rc_pub_destroy(pub);
}

/* record.h reads what net/wire.c writes into a PAGE (the same layout as
 * ringcast-sub --out): lengths 0..17 cover every padding. */
static void test_record_parse_reads_wire_records(void)
{
    static uint8_t page[4096];
    uint8_t payload[17];
    for (unsigned i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(0xa0 + i);
    CU_ASSERT_FATAL(rci_wire_page_init(page, sizeof page) > 0);
    for (uint32_t len = 0; len <= 17; len++)
        CU_ASSERT_FATAL(rci_wire_page_append(page, sizeof page, 0x1000 + len, len & RC_CHUNK_FLAGS_ALL,
                                            payload, len) > 0);
    size_t end = rci_wire_page_length(page), pos = sizeof(struct rci_wire_page);
    uint32_t len = 0;
    struct rc_record r;
    size_t n;
    while ((n = rc_record_parse(page + pos, end - pos, &r)) > 0) {
        CU_ASSERT_EQUAL(r.tag, 0x1000 + len);
        CU_ASSERT_EQUAL(r.flags, len & RC_CHUNK_FLAGS_ALL);
        CU_ASSERT_EQUAL(r.len, len);
        CU_ASSERT_EQUAL(memcmp(r.payload, payload, len), 0);
        CU_ASSERT_EQUAL(n % 8, 0);
        pos += n;
        len++;
    }
    CU_ASSERT_EQUAL(len, 18);
    CU_ASSERT_EQUAL(pos, end);
    /* A record cut short is not returned. */
    CU_ASSERT_EQUAL(rc_record_parse(page + sizeof(struct rci_wire_page), 15, &r), 0);
    CU_ASSERT_EQUAL(rc_record_parse(page + end - 24, 23, &r), 0);   /* the last (17 B) needs 40 */
}

static void test_version(void)
{
    char macros[32];
    snprintf(macros, sizeof macros, "%d.%d.%d", RINGCAST_VERSION_MAJOR, RINGCAST_VERSION_MINOR,
             RINGCAST_VERSION_PATCH);
    CU_ASSERT_STRING_EQUAL(rc_version(), RCI_VERSION);
    CU_ASSERT_STRING_EQUAL(rc_version(), macros);
    CU_ASSERT(RINGCAST_VERSION >= RINGCAST_VERSION_NUM(0, 1, 0));
}

/* ---- rc_pub with a real rc_sub, both polled by this thread -------------------- */

#define PS_CHUNKS 64u
#define PS_SIZE 1000u

struct pubsub {
    struct rc_pub *pub;
    struct rc_sub *sub;
    uint8_t region[PS_CHUNKS * PS_SIZE];
    unsigned key_seen[PS_CHUNKS];     /* times each key came back */
    int key_status[PS_CHUNKS];
    unsigned bad_keys, subscriptions, gone;
    rc_pub_peer peer;
    unsigned received, received_bad;
};

static void ps_complete(void *ctx, uint64_t key, int status)
{
    struct pubsub *ps = ctx;
    if (key >= PS_CHUNKS) {
        ps->bad_keys++;
        return;
    }
    ps->key_seen[key]++;
    ps->key_status[key] = status;
}

static void ps_event(void *ctx, rc_pub_peer peer, enum rc_pub_event ev)
{
    struct pubsub *ps = ctx;
    if (ev == RC_PUB_EVENT_SUBSCRIPTIONS) {
        ps->subscriptions++;
        ps->peer = peer;
    } else if (ev == RC_PUB_EVENT_GONE) {
        ps->gone++;
    }
}

/* Chunk i: tag i % 4, flags i & RC_CHUNK_FLAGS_ALL, bytes (i * 7 + j). */
static void ps_data(void *ctx, uint64_t tag, uint32_t flags, const void *data, size_t len)
{
    struct pubsub *ps = ctx;
    const uint8_t *b = data;
    unsigned i = ps->received++;
    int ok = len == PS_SIZE && tag == i % 4 && flags == (i & RC_CHUNK_FLAGS_ALL);
    for (size_t j = 0; ok && j < len; j++)
        ok = b[j] == (uint8_t)(i * 7 + j);
    ps->received_bad += !ok;
}

static void ps_poll(struct pubsub *ps)
{
    rc_pub_progress(ps->pub);
    if (ps->sub)
        rc_sub_poll(ps->sub, 1000 * 1000);
}

/* A publisher and a subscriber of tags 0..3 on a fresh port, subscribed. */
static struct pubsub *ps_start(void)
{
    static unsigned round;
    static struct pubsub ps;
    memset(&ps, 0, sizeof ps);
    for (unsigned i = 0; i < PS_CHUNKS; i++)
        for (unsigned j = 0; j < PS_SIZE; j++)
            ps.region[i * PS_SIZE + j] = (uint8_t)(i * 7 + j);
    struct rc_pub_params pp;
    rc_pub_params_default(&pp);
    pp.port = (uint16_t)(30000 + (getpid() % 2000) * 10 + 1 + round++ % 9);
    pp.cb = (struct rc_pub_callbacks){.ctx = &ps, .on_send_complete = ps_complete, .on_peer_event = ps_event};
    char err[256] = "";
    if (rc_pub_create(&pp, &ps.pub, err, sizeof err) != 0 ||
        rc_pub_register(ps.pub, ps.region, sizeof ps.region, err, sizeof err) != 0) {
        fprintf(stderr, "publisher: %s\n", err);
        return NULL;
    }
    struct rc_sub_params sp;
    rc_sub_params_default(&sp);
    sp.port = pp.port;
    sp.cb.ctx = &ps;
    sp.cb.on_data = ps_data;
    uint64_t first = 0, last = 3;
    if (rc_sub_create(&sp, &ps.sub, err, sizeof err) != 0 || rc_sub_subscribe(ps.sub, &first, &last, 1) != 0) {
        fprintf(stderr, "subscriber: %s\n", err);
        return NULL;
    }
    for (int i = 0; i < 20000 && ps.subscriptions == 0; i++)   /* a hang guard, not a speed limit */
        ps_poll(&ps);
    return ps.subscriptions ? &ps : NULL;
}

static void ps_send_all(struct pubsub *ps)
{
    for (unsigned i = 0; i < PS_CHUNKS; i++) {
        struct iovec iov[2] = {{.iov_base = ps->region + i * PS_SIZE, .iov_len = 300},
                               {.iov_base = ps->region + i * PS_SIZE + 300, .iov_len = PS_SIZE - 300}};
        int rc;
        while ((rc = rc_pub_send(ps->pub, ps->peer, i % 4, i & RC_CHUNK_FLAGS_ALL, iov, 2, i)) == -EAGAIN)
            rc_pub_progress(ps->pub);
        CU_ASSERT_EQUAL(rc, 0);
    }
}

static unsigned keys_returned_once(const struct pubsub *ps)
{
    unsigned once = 0;
    for (unsigned i = 0; i < PS_CHUNKS; i++)
        once += ps->key_seen[i] == 1;
    return once;
}

static void test_pub_sends_to_sub(void)
{
    struct pubsub *ps = ps_start();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    rc_pub_peer subs[4];
    CU_ASSERT_EQUAL(rc_pub_subscribers_of(ps->pub, 2, subs, 4), 1);
    CU_ASSERT_EQUAL(subs[0], ps->peer);
    CU_ASSERT_EQUAL(rc_pub_subscribers_of(ps->pub, 4, subs, 4), 0);
    CU_ASSERT_STRING_NOT_EQUAL(rc_pub_peer_name(ps->pub, ps->peer), "");
    uint64_t keys[4];
    CU_ASSERT_EQUAL(rc_pub_pending_sends(ps->pub, ps->peer, keys, 4), -EBUSY);   /* alive */
    ps_send_all(ps);
    for (int i = 0; i < 20000 && (ps->received < PS_CHUNKS || keys_returned_once(ps) < PS_CHUNKS); i++)
        ps_poll(ps);
    CU_ASSERT_EQUAL(ps->received, PS_CHUNKS);
    CU_ASSERT_EQUAL(ps->received_bad, 0);
    CU_ASSERT_EQUAL(keys_returned_once(ps), PS_CHUNKS);
    CU_ASSERT_EQUAL(ps->bad_keys, 0);
    for (unsigned i = 0; i < PS_CHUNKS; i++)
        CU_ASSERT_EQUAL(ps->key_status[i], 0);
    struct rc_pub_stats st;
    rc_pub_get_stats(ps->pub, &st);
    CU_ASSERT_EQUAL(st.sends, PS_CHUNKS);
    CU_ASSERT_EQUAL(st.send_bytes, PS_CHUNKS * PS_SIZE);
    CU_ASSERT_EQUAL(st.keys_completed_ok, PS_CHUNKS);
    CU_ASSERT_EQUAL(st.slots_free, st.slots_total);
    CU_ASSERT_EQUAL(st.peers_active, 1);
    CU_ASSERT(rc_pub_free_slots(ps->pub) < st.slots_total);   /* the watermark saw the sends */
    rc_sub_destroy(ps->sub);                                   /* BYE */
    ps->sub = NULL;
    for (int i = 0; i < 20000 && ps->gone == 0; i++)
        ps_poll(ps);
    CU_ASSERT_EQUAL(ps->gone, 1);
    rc_pub_destroy(ps->pub);
}

/* Close the subscriber with sends outstanding: every key comes back exactly
 * once, through rc_pub_pending_sends() or on_send_complete(). */
static void test_pub_close_peer_returns_every_key(void)
{
    struct pubsub *ps = ps_start();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    ps_send_all(ps);
    CU_ASSERT_EQUAL(rc_pub_close_peer(ps->pub, ps->peer), 0);
    uint64_t keys[PS_CHUNKS];
    int n = rc_pub_pending_sends(ps->pub, ps->peer, keys, PS_CHUNKS);
    CU_ASSERT(n >= 0);
    printf("\nclose_peer: %d of %u keys returned by rc_pub_pending_sends\n", n, PS_CHUNKS);
    for (int i = 0; i < n; i++)
        ps_complete(ps, keys[i], -ECONNRESET);   /* ours again: count them like a callback */
    for (int i = 0; i < 2000 && keys_returned_once(ps) < PS_CHUNKS; i++)
        ps_poll(ps);
    CU_ASSERT_EQUAL(keys_returned_once(ps), PS_CHUNKS);
    CU_ASSERT_EQUAL(ps->bad_keys, 0);
    CU_ASSERT_EQUAL(rc_pub_send(ps->pub, ps->peer, 0, 0, NULL, 0, 0), -ENOTCONN);
    rc_sub_destroy(ps->sub);
    rc_pub_destroy(ps->pub);
    for (unsigned i = 0; i < PS_CHUNKS; i++)   /* destroy returned nothing twice */
        CU_ASSERT_EQUAL(ps->key_seen[i], 1);
}

/* Destroy with sends outstanding: the rest come back from inside destroy. */
static void test_pub_destroy_returns_every_key(void)
{
    struct pubsub *ps = ps_start();
    CU_ASSERT_PTR_NOT_NULL_FATAL(ps);
    ps_send_all(ps);
    unsigned before = keys_returned_once(ps);
    rc_pub_destroy(ps->pub);
    printf("\ndestroy: %u of %u keys returned from inside rc_pub_destroy\n", PS_CHUNKS - before, PS_CHUNKS);
    CU_ASSERT_EQUAL(keys_returned_once(ps), PS_CHUNKS);
    CU_ASSERT_EQUAL(ps->bad_keys, 0);
    for (unsigned i = 0; i < PS_CHUNKS; i++)
        CU_ASSERT(ps->key_status[i] == 0 || ps->key_status[i] == -ECANCELED);
    rc_sub_destroy(ps->sub);
}

/* ---- rc_daq: one simulated card -------------------------------------------- */

struct daq_run {
    struct rc_daq *d;
    void *ring;
    size_t ring_len;
    atomic_uint calls;
    atomic_uint accepted;
    atomic_uint outside_ring;
    atomic_uint bad_lengths;
};

/* The first 10 offers are pushed back (-EAGAIN), offer 20 is refused (-EIO),
 * every other chunk is checked and released at once. */
static int daq_on_chunk(void *ctx, const struct rc_daq_chunk *c)
{
    struct daq_run *run = ctx;
    unsigned call = atomic_fetch_add(&run->calls, 1);
    if (call < 10)
        return -EAGAIN;
    if (call == 20)
        return -EIO;
    size_t sum = 0;
    for (unsigned i = 0; i < c->npieces; i++) {
        const uint8_t *a = c->pieces[i].iov_base, *base = run->ring;
        if (a < base || a + c->pieces[i].iov_len > base + run->ring_len)
            atomic_fetch_add(&run->outside_ring, 1);
        sum += c->pieces[i].iov_len;
    }
    if (sum != c->length || c->card != 0)
        atomic_fetch_add(&run->bad_lengths, 1);
    atomic_fetch_add(&run->accepted, 1);
    rc_daq_release(run->d, c->card, c->key);
    return 0;
}

static void test_daq_reads_out_a_simulated_card(void)
{
    static struct daq_run run;
    const char *ov[] = {"sim.0.run_chunks=5000", "sim.0.chunk_size_max=5000", "card.0.ring_size=1M",
                        "card.0.rd_update_bytes=64k"};
    char err[512] = "";
    int rc = rc_daq_open(NULL, ov, 4, daq_on_chunk, &run, &run.d, err, sizeof err);
    if (rc)
        fprintf(stderr, "rc_daq_open: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(rc_daq_cards(run.d), 1);
    CU_ASSERT_EQUAL(rc_daq_card_memory(run.d, 0, &run.ring, &run.ring_len), 0);
    CU_ASSERT_EQUAL(run.ring_len, 1u << 20);
    CU_ASSERT_EQUAL(rc_daq_card_memory(run.d, 1, &run.ring, &run.ring_len), -EINVAL);
    void *spill;
    size_t spill_len = 0;
    CU_ASSERT_EQUAL(rc_daq_card_spill_memory(run.d, 0, &spill, &spill_len), 0);
    CU_ASSERT(spill != NULL && spill_len >= 2048u * 4096u);   /* a block per e-link */
    CU_ASSERT_EQUAL(rc_daq_card_spill_memory(run.d, 1, &spill, &spill_len), -EINVAL);
    CU_ASSERT_EQUAL(rc_daq_stop(run.d, 1000), -EINVAL);   /* not started */
    CU_ASSERT_EQUAL_FATAL(rc_daq_start(run.d), 0);
    CU_ASSERT_EQUAL(rc_daq_start(run.d), -EALREADY);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 6000 && !rc_daq_finished(run.d); i++)   /* 60 s: only a hang fails */
        nanosleep(&tick, NULL);
    CU_ASSERT(rc_daq_finished(run.d));
    CU_ASSERT_EQUAL(rc_daq_stop(run.d, 5000000000ull), 0);
    struct rc_daq_stats st;
    CU_ASSERT_EQUAL(rc_daq_get_stats(run.d, 0, &st), 0);
    CU_ASSERT_EQUAL(rc_daq_get_stats(run.d, 1, &st), -EINVAL);
    rc_daq_get_stats(run.d, 0, &st);
    CU_ASSERT_EQUAL(st.chunks_produced, 5000);
    CU_ASSERT_EQUAL(atomic_load(&run.accepted), 4999);          /* one refused */
    CU_ASSERT_EQUAL(atomic_load(&run.calls), 5000 + 10);        /* ten offered twice */
    CU_ASSERT_EQUAL(st.chunks, 4999);
    CU_ASSERT_EQUAL(st.sink_again, 10);
    CU_ASSERT_EQUAL(st.sink_errors, 1);
    CU_ASSERT_EQUAL(st.chunks_in_flight, 0);
    CU_ASSERT_EQUAL(st.decode_errors, 0);
    CU_ASSERT_EQUAL(st.ring_in_use, 0);
    CU_ASSERT_EQUAL(st.ring_size, 1u << 20);
    CU_ASSERT(st.finished);
    CU_ASSERT_EQUAL(atomic_load(&run.outside_ring), 0);
    CU_ASSERT_EQUAL(atomic_load(&run.bad_lengths), 0);
    rc_daq_release(run.d, 0, 12345);   /* a key never handed out: counted, ignored */
    rc_daq_get_stats(run.d, 0, &st);
    CU_ASSERT_EQUAL(st.bad_releases, 1);
    rc_daq_destroy(run.d);
}

static int never_called(void *ctx, const struct rc_daq_chunk *c)
{
    (void)ctx;
    (void)c;
    return -EIO;
}

static void test_daq_open_refuses_bad_configuration(void)
{
    char err[512] = "";
    struct rc_daq *d = (struct rc_daq *)1;
    const char *bad[] = {"card.0.block_size=3000"};
    CU_ASSERT_EQUAL(rc_daq_open(NULL, bad, 1, never_called, NULL, &d, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "block_size"));
    CU_ASSERT_EQUAL(rc_daq_open(NULL, NULL, 0, NULL, NULL, &d, err, sizeof err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "on_chunk"));
    CU_ASSERT_NOT_EQUAL(rc_daq_open("/nonexistent/ringcast.ini", NULL, 0, never_called, NULL, &d, err,
                                    sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/ringcast.ini"));
    rc_daq_destroy(NULL);
}

static void register_tests(void)
{
    RCI_SUITE("api", {"sub default port is the daemon's", test_sub_default_port_is_the_daemons},
             {"pub defaults are the daemon's", test_pub_defaults_are_the_daemons},
             {"pub create refuses bad params", test_pub_create_refuses_bad_params},
             {"pub lifecycle without subscribers", test_pub_lifecycle_without_subscribers},
             {"record parse reads wire records", test_record_parse_reads_wire_records},
             {"version", test_version},
             {"pub sends to sub", test_pub_sends_to_sub},
             {"pub close_peer returns every key", test_pub_close_peer_returns_every_key},
             {"pub destroy returns every key", test_pub_destroy_returns_every_key},
             {"daq reads out a simulated card", test_daq_reads_out_a_simulated_card},
             {"daq open refuses bad configuration", test_daq_open_refuses_bad_configuration});
}

RCI_CUNIT_MAIN(register_tests)
