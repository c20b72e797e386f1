/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_raw.c — the raw libfabric stream of ringcast-bench (see bench_raw.h). */
#include "tools/bench_raw.h"

#include <errno.h>
#include <pthread.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/errbuf.h"
#include "tools/bench_report.h"
#include "common/monotonic.h"
#include "net/fabric.h"

#define RAW_CQ_BATCH 64
#define RAW_SETUP_TIMEOUT_NS (10ull * 1000000000ull)
/* After the sender stopped: the last receives must come within this. */
#define RAW_DRAIN_TIMEOUT_NS (30ull * 1000000000ull)
#define RAW_PAGE 4096u
#define RAW_WAIT_NS 1000000ull          /* longest single wait for completions */

enum receiver_state { RX_STARTING = 0, RX_LISTENING, RX_FAILED };

struct raw_run {
    const struct rci_bench_raw_params *p;
    atomic_int rx_state;
    atomic_bool abort;                 /* either side failed: the other stops */
    atomic_uint_fast64_t expected;     /* messages the sender got out; UINT64_MAX while sending */
    uint64_t received, bytes, last_rx_ns;
    /* rma: the receiver's registered buffers, published before rma_ready. */
    atomic_bool rma_ready;
    uint64_t rma_base, rma_key, rma_len;
    int rx_rc;
    char rx_err[256];
};

struct raw_endpoint {
    struct rci_fabric f;
    struct fid_ep *ep;                 /* MSG: own endpoint; RDM: f.ep */
    struct rci_fabric_mr mr;
    uint8_t *mem;
    size_t mem_len;
};

static void endpoint_close(struct raw_endpoint *e)
{
    if (e->ep && e->ep != e->f.ep)
        rci_fabric_ep_close(e->ep);
    rci_fabric_mr_close(&e->mr);
    rci_fabric_close(&e->f);
    free(e->mem);
}

/* Page-aligned memory, touched so page faults are not measured. */
static int endpoint_alloc(struct raw_endpoint *e, size_t len, char *err, size_t errlen)
{
    e->mem_len = (len + RAW_PAGE - 1) / RAW_PAGE * RAW_PAGE;
    e->mem = aligned_alloc(RAW_PAGE, e->mem_len);
    if (!e->mem) {
        rci_set_err(err, errlen, "raw: cannot allocate %zu bytes", e->mem_len);
        return -ENOMEM;
    }
    memset(e->mem, 0x5a, e->mem_len);
    return 0;
}

/* ---- receiver ------------------------------------------------------------ */

static int post_recv(struct raw_endpoint *e, uint32_t msg_size, uint32_t i)
{
    return (int)fi_recv(e->ep, e->mem + (size_t)i * msg_size, msg_size, e->mr.desc, FI_ADDR_UNSPEC,
                        (void *)(uintptr_t)(i + 1));
}

/* Where the sender may write (an offset where the provider does not use
 * virtual addresses), told through memory: no wire protocol in the raw row. */
static void publish_rma_region(struct raw_run *r, const struct raw_endpoint *e)
{
    r->rma_base = e->f.mr_virt_addr ? (uint64_t)(uintptr_t)e->mem : 0;
    r->rma_key = fi_mr_key(e->mr.mr);
    r->rma_len = e->mem_len;
    atomic_store(&r->rma_ready, true);
}

static int post_all_recvs(struct raw_run *r, struct raw_endpoint *e, uint32_t n)
{
    uint64_t access = r->p->rma ? FI_RECV | FI_REMOTE_WRITE : FI_RECV;
    int rc = rci_fabric_mr_reg(&e->f, e->mem, e->mem_len, access, e->ep, &e->mr, r->rx_err,
                              sizeof r->rx_err);
    if (rc == 0 && r->p->rma)
        publish_rma_region(r, e);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = post_recv(e, r->p->msg_size, i);
        if (rc)
            rc = rci_fabric_error(&e->f, r->rx_err, sizeof r->rx_err, "fi_recv", rc);
    }
    return rc;
}

/* Wait for one EQ event of the wanted kind (MSG); other events are dropped. */
static int wait_event(struct raw_run *r, struct raw_endpoint *e, uint32_t want,
                      struct rci_fabric_event *ev)
{
    uint64_t deadline = rci_now_ns() + RAW_SETUP_TIMEOUT_NS;
    while (!atomic_load(&r->abort)) {
        int rc = rci_fabric_eq_poll(&e->f, ev, r->rx_err, sizeof r->rx_err);
        if (rc < 0)
            return rc;
        if (rc == 1 && ev->err)
            return rci_fabric_error(&e->f, r->rx_err, sizeof r->rx_err, "raw: connection event", ev->err);
        if (rc == 1 && ev->event == want)
            return 0;
        if (rc == 1 && ev->info)
            fi_freeinfo(ev->info);
        if (rci_now_ns() > deadline) {
            rci_set_err(r->rx_err, sizeof r->rx_err, "raw: no connection event %u within 10 s", want);
            return -ETIMEDOUT;
        }
        rci_fabric_wait(&e->f, 1000000);
    }
    return -ECANCELED;
}

static int accept_sender(struct raw_run *r, struct raw_endpoint *e, uint32_t nrecv)
{
    struct rci_fabric_event ev;
    int rc = wait_event(r, e, FI_CONNREQ, &ev);
    if (rc)
        return rc;
    rc = rci_fabric_msg_ep_open(&e->f, ev.info, NULL, &e->ep, r->rx_err, sizeof r->rx_err);
    if (rc == 0)
        rc = post_all_recvs(r, e, nrecv);
    if (rc == 0 && (rc = fi_accept(e->ep, NULL, 0)) != 0)
        rc = rci_fabric_error(&e->f, r->rx_err, sizeof r->rx_err, "fi_accept", rc);
    fi_freeinfo(ev.info);
    return rc ? rc : wait_event(r, e, FI_CONNECTED, &ev);
}

static bool receiving_done(struct raw_run *r)
{
    return r->received >= atomic_load(&r->expected) || atomic_load(&r->abort);
}

struct receiver {
    struct raw_run *r;
    struct raw_endpoint *e;
};

/* One batch of receive completions, each receive posted again: the count,
 * or -errno. */
static int receive_some(void *arg)
{
    struct receiver *rx = arg;
    struct raw_run *r = rx->r;
    struct raw_endpoint *e = rx->e;
    struct rci_fabric_cqe cqe[RAW_CQ_BATCH];
    int n = rci_fabric_cq_poll(&e->f, cqe, RAW_CQ_BATCH, r->rx_err, sizeof r->rx_err);
    uint64_t now = rci_now_ns();
    for (int i = 0; i < n; i++) {
        if (cqe[i].err)
            return rci_fabric_error(&e->f, r->rx_err, sizeof r->rx_err, "raw: receive completion", cqe[i].err);
        r->received++;
        r->last_rx_ns = now;
        if (cqe[i].flags & FI_REMOTE_CQ_DATA) {   /* a write: its length is the immediate data */
            r->bytes += cqe[i].data;
            continue;
        }
        r->bytes += cqe[i].len;
        int rc = post_recv(e, r->p->msg_size, (uint32_t)((uintptr_t)cqe[i].context - 1));
        if (rc)
            return rci_fabric_error(&e->f, r->rx_err, sizeof r->rx_err, "fi_recv(again)", rc);
    }
    return n;
}

/* Waits like the pipeline's threads: spin fabric.poll_spin, then sleep on
 * the CQ's fd (rci_fabric_wait_adaptive), so two spinning threads do not
 * take the cores the kernel needs to move the data. */
static int receive_loop(struct raw_run *r, struct raw_endpoint *e)
{
    struct receiver rx = { r, e };
    uint64_t drain_deadline = 0;
    while (!receiving_done(r)) {
        int n = rci_fabric_wait_adaptive(&e->f, receive_some, &rx, RAW_WAIT_NS);
        if (n < 0)
            return n;
        uint64_t now = rci_now_ns();
        if (atomic_load(&r->expected) != UINT64_MAX && drain_deadline == 0)
            drain_deadline = now + RAW_DRAIN_TIMEOUT_NS;
        if (drain_deadline && now > drain_deadline) {
            rci_set_err(r->rx_err, sizeof r->rx_err, "raw: %llu of %llu messages arrived",
                       (unsigned long long)r->received, (unsigned long long)atomic_load(&r->expected));
            return -ETIMEDOUT;
        }
    }
    return 0;
}

static void *receiver_main(void *arg)
{
    struct raw_run *r = arg;
    const struct rci_bench_raw_params *p = r->p;
    struct raw_endpoint e = {0};
    uint32_t nrecv = p->fabric.rx_buffers;
    int rc = endpoint_alloc(&e, (size_t)nrecv * p->msg_size, r->rx_err, sizeof r->rx_err);
    if (rc == 0)
        rc = rci_fabric_open(&e.f, &p->fabric, RCI_FABRIC_LISTEN, nrecv, r->rx_err, sizeof r->rx_err);
    if (rc == 0 && e.f.rdm) {
        e.ep = e.f.ep;
        rc = post_all_recvs(r, &e, nrecv);
    }
    if (rc == 0)
        atomic_store(&r->rx_state, RX_LISTENING);
    if (rc == 0 && !e.f.rdm)
        rc = accept_sender(r, &e, nrecv);
    if (rc == 0)
        rc = receive_loop(r, &e);
    if (rc) {
        r->rx_rc = rc;
        atomic_store(&r->rx_state, RX_FAILED);
        atomic_store(&r->abort, true);
    }
    endpoint_close(&e);
    return NULL;
}

/* ---- sender -------------------------------------------------------------- */

static int sender_open(struct raw_run *r, struct raw_endpoint *e, fi_addr_t *dest, char *err,
                       size_t errlen)
{
    const struct rci_bench_raw_params *p = r->p;
    int rc = endpoint_alloc(e, p->send_buffer_size, err, errlen);
    if (rc == 0)
        rc = rci_fabric_open(&e->f, &p->fabric, RCI_FABRIC_CONNECT, p->window, err, errlen);
    if (rc)
        return rc;
    *dest = FI_ADDR_UNSPEC;
    if (e->f.rdm) {
        e->ep = e->f.ep;
        rc = rci_fabric_av_insert(&e->f, e->f.info->dest_addr, e->f.info->dest_addrlen, dest, err, errlen);
    } else {
        rc = rci_fabric_msg_ep_open(&e->f, NULL, NULL, &e->ep, err, errlen);
    }
    if (rc == 0 && p->rma && !e->f.rma) {
        rci_set_err(err, errlen, "raw-rma: %s grants no FI_RMA with remote CQ data", e->f.where);
        rc = -ENOTSUP;
    }
    if (rc == 0)
        rc = rci_fabric_mr_reg(&e->f, e->mem, e->mem_len, p->rma ? FI_WRITE : FI_SEND, e->ep, &e->mr, err, errlen);
    if (rc == 0 && !e->f.rdm)
        rc = rci_fabric_msg_connect(&e->f, e->ep, RAW_SETUP_TIMEOUT_NS, err, errlen);
    return rc;
}

struct send_state {
    struct raw_endpoint *e;
    uint64_t sent, outstanding, offset;
    char *err;
    size_t errlen;
};

/* Completions of sends: how many, or -errno. */
static int reap_sends(void *arg)
{
    struct send_state *s = arg;
    struct rci_fabric_cqe cqe[RAW_CQ_BATCH];
    int n = rci_fabric_cq_poll(&s->e->f, cqe, RAW_CQ_BATCH, s->err, s->errlen);
    for (int i = 0; i < n; i++)
        if (cqe[i].err)
            return rci_fabric_error(&s->e->f, s->err, s->errlen, "raw: send completion", cqe[i].err);
    if (n > 0)
        s->outstanding -= (uint64_t)n;
    return n;
}

/* One write of msg_size bytes into the receiver's next slot (slots reused
 * in turn, as the send stream reuses its source buffer). */
static ssize_t write_one(struct raw_run *r, struct send_state *s, fi_addr_t dest)
{
    const uint32_t size = r->p->msg_size;
    uint64_t slots = r->rma_len / size;
    uint64_t target = r->rma_base + (s->sent % slots) * size;
    return fi_writedata(s->e->ep, s->e->mem + s->offset, size, s->e->mr.desc, size, dest, target, r->rma_key,
                        NULL);
}

/* Keep the window full until the deadline; when it is full (or the
 * provider's queue is), wait for completions as the publisher does. */
static int send_loop(struct raw_run *r, fi_addr_t dest, uint64_t deadline, struct send_state *s)
{
    struct raw_endpoint *e = s->e;
    const uint32_t size = r->p->msg_size;
    while (!atomic_load(&r->abort) && rci_now_ns() < deadline) {
        while (s->outstanding < r->p->window) {
            if (s->offset + size > e->mem_len)
                s->offset = 0;
            ssize_t rc = r->p->rma ? write_one(r, s, dest) : fi_send(e->ep, e->mem + s->offset, size, e->mr.desc,
                                                                     dest, NULL);
            if (rc == -FI_EAGAIN)
                break;
            if (rc)
                return rci_fabric_error(&e->f, s->err, s->errlen, r->p->rma ? "fi_writedata" : "fi_send", (int)rc);
            s->offset += size;
            s->outstanding++;
            s->sent++;
        }
        int n = rci_fabric_wait_adaptive(&e->f, reap_sends, s, RAW_WAIT_NS);
        if (n < 0)
            return n;
    }
    return 0;
}

static int drain_sends(struct raw_run *r, struct send_state *s)
{
    uint64_t deadline = rci_now_ns() + RAW_DRAIN_TIMEOUT_NS;
    while (s->outstanding > 0 && !atomic_load(&r->abort)) {
        int n = rci_fabric_wait_adaptive(&s->e->f, reap_sends, s, RAW_WAIT_NS);
        if (n < 0)
            return n;
        if (rci_now_ns() > deadline) {
            rci_set_err(s->err, s->errlen, "raw: %llu sends never completed", (unsigned long long)s->outstanding);
            return -ETIMEDOUT;
        }
    }
    return 0;
}

static bool wait_receiver_listening(struct raw_run *r)
{
    uint64_t deadline = rci_now_ns() + RAW_SETUP_TIMEOUT_NS;
    while (atomic_load(&r->rx_state) == RX_STARTING && rci_now_ns() < deadline)
        rci_sleep_ns(1000000);
    return atomic_load(&r->rx_state) == RX_LISTENING;
}

/* MSG: the receiver registers after it accepted the connection. */
static bool wait_rma_region(struct raw_run *r)
{
    uint64_t deadline = rci_now_ns() + RAW_SETUP_TIMEOUT_NS;
    while (!atomic_load(&r->rma_ready) && !atomic_load(&r->abort) && rci_now_ns() < deadline)
        rci_sleep_ns(1000000);
    return atomic_load(&r->rma_ready);
}

/* The caller closes e after the receiver finished: closing it earlier
 * would end the connection, and the receiver's posted receives would
 * complete as cancelled while the last messages may still be on their way. */
static int run_sender(struct raw_run *r, struct raw_endpoint *e, uint64_t *t0, char *err, size_t errlen)
{
    fi_addr_t dest;
    struct send_state s = { .e = e, .err = err, .errlen = errlen };
    int rc = 0;
    if (!wait_receiver_listening(r)) {
        rci_set_err(err, errlen, "raw: the receiver did not start listening within 10 s");
        rc = -ECANCELED;
    }
    if (rc == 0)
        rc = sender_open(r, e, &dest, err, errlen);
    if (rc == 0 && r->p->rma && !wait_rma_region(r)) {
        rci_set_err(err, errlen, "raw-rma: the receiver did not register its buffers within 10 s");
        rc = -ECANCELED;
    }
    *t0 = rci_now_ns();
    if (rc == 0)
        rc = send_loop(r, dest, *t0 + (uint64_t)(r->p->seconds * 1e9), &s);
    if (rc == 0)
        rc = drain_sends(r, &s);
    atomic_store(&r->expected, s.sent);
    if (rc)
        atomic_store(&r->abort, true);
    return rc;
}

int rci_bench_raw_run(const struct rci_bench_raw_params *p, struct rci_bench_raw_result *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (p->msg_size == 0 || p->window == 0 || p->send_buffer_size < p->msg_size) {
        rci_set_err(err, errlen, "raw: message size %u, window %u and buffer %llu do not fit", p->msg_size,
                   p->window, (unsigned long long)p->send_buffer_size);
        return -EINVAL;
    }
    struct raw_run *r = calloc(1, sizeof *r);
    if (!r) {
        rci_set_err(err, errlen, "raw: out of memory");
        return -ENOMEM;
    }
    r->p = p;
    atomic_init(&r->expected, UINT64_MAX);
    double cpu0 = rci_bench_cpu_seconds(RUSAGE_SELF);
    pthread_t rx;
    int rc = pthread_create(&rx, NULL, receiver_main, r);
    if (rc) {
        free(r);
        rci_set_err(err, errlen, "raw: cannot start the receiver thread: %s", strerror(rc));
        return -rc;
    }
    uint64_t t0 = 0;
    struct raw_endpoint sender = {0};
    rc = run_sender(r, &sender, &t0, err, errlen);
    pthread_join(rx, NULL);
    endpoint_close(&sender);
    /* The sender stops without an error of its own when the receiver
     * failed: then the receiver's reason is the one to report. */
    if (r->rx_rc && (rc == 0 || rc == -ECANCELED)) {
        rc = r->rx_rc;
        rci_set_err(err, errlen, "%s", r->rx_err);
    }
    if (rc == 0) {
        out->messages = r->received;
        out->bytes = r->bytes;
        out->seconds = (double)(r->last_rx_ns - t0) / 1e9;
        out->cpu_seconds = rci_bench_cpu_seconds(RUSAGE_SELF) - cpu0;
    }
    free(r);
    return rc;
}
