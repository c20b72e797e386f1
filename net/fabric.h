/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric.h — libfabric setup shared by the publisher and the subscriber:
 * provider selection, memory registration, completion/event reading,
 * adaptive waiting and error strings. Described in net/README.md.
 *
 * Rules this layer enforces (libfabric 1.17 pitfalls, see README):
 *  - fi_getinfo(FI_VERSION(1,17)) is asked for FI_MSG|FI_SEND|FI_RECV with
 *    mr_mode hints LOCAL|VIRT_ADDR|ALLOCATED|PROV_KEY|ENDPOINT (ENDPOINT is not
 *    offered to a MSG listener: one registration there serves many endpoints);
 *    what the provider returns is honoured (flags below).
 *  - tx_iov_limit is what callers may use: the provider's limit, at most 3 for
 *    ofi_rxm (it adds its own header iov). libfabric does not check it.
 *  - progress is always driven by the caller reading the CQ/EQ (tcp reports
 *    FI_PROGRESS_AUTO but progresses only then).
 *  - the application context of an operation is returned untouched: the
 *    provider is not asked for FI_CONTEXT memory (mode bits are not offered),
 *    so callers may encode (kind, index, generation) in the pointer value.
 *
 * Threads: one struct rci_fabric belongs to one thread (the publisher or the
 * subscriber thread); nothing here locks. Every function returns 0 (or a
 * count) / -errno and writes "call(prov=P, ep=E, HOST:PORT): reason" to err.
 */
#ifndef RCI_FABRIC_H
#define RCI_FABRIC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "common/monotonic.h"
#include "net/fabric_params.h"
#include "net/spin_policy.h"

#define RCI_FABRIC_API_VERSION FI_VERSION(1, 17)
#define RCI_FABRIC_RXM_TX_IOV_MAX 3u   /* rxm adds one iov of its own */

enum rci_fabric_role {
    RCI_FABRIC_LISTEN,   /* publisher: bind to params.address:port */
    RCI_FABRIC_CONNECT,  /* subscriber: params.address:port is the publisher */
};

/* How the provider lets go of the operations posted to one peer when we cut
 * that peer off: what proves that it no longer reads the memory of those
 * sends, so that their keys (ring memory) may be released
 * (net/README.md, "Dead peers"). */
enum rci_fabric_letgo {
    RCI_LETGO_COMPLETION = 0, /* nothing but each operation's own completion:
                              * a dead peer's keys wait for their completions */
    RCI_LETGO_EP_CLOSE,       /* MSG: fi_close of the peer's endpoint flushes or
                              * cancels everything posted on it */
    RCI_LETGO_AV_REMOVE,      /* ofi_rxm with FI_AV_REMOVE_CLEANUP=1: fi_av_remove
                              * closes the hidden connection (its core endpoint) */
    RCI_LETGO_AT_POST,        /* the provider copies a message when it is posted:
                              * no posted operation reads our memory later
                              * (a provider whose sends are all inject-sized) */
};

/* Read-only for callers after rci_fabric_open(). */
struct rci_fabric {
    struct rci_fabric_params params;
    enum rci_fabric_role role;
    struct fi_info *info;          /* what the provider returned */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;             /* one CQ: tx and rx of every endpoint */
    struct fid_eq *eq;             /* MSG: connection events (NULL for RDM) */
    struct fid_av *av;             /* RDM: peer addresses (NULL for MSG) */
    struct fid_pep *pep;           /* MSG + LISTEN: the listening endpoint */
    struct fid_ep *ep;             /* RDM: the one endpoint, bound and enabled */
    int cq_fd, eq_fd;              /* wait fds, -1 if the provider has none */
    size_t cq_entries;             /* size the CQ was created with */
    bool rdm;                      /* FI_EP_RDM */
    bool rxm;                      /* prov_name contains "ofi_rxm" */
    bool source_addr;              /* RDM: CQ reports the sender (FI_SOURCE) */
    bool mr_local;                 /* FI_MR_LOCAL: pass descriptors */
    bool mr_virt_addr, mr_allocated;
    bool mr_prov_key;              /* cleared: every MR gets a distinct key */
    bool mr_endpoint;              /* MRs are bound to an endpoint and enabled */
    size_t tx_iov_limit;           /* iovs a send may use (rxm: <= 3) */
    size_t rx_iov_limit;
    size_t inject_size;
    size_t max_msg_size;
    size_t copy_max;               /* shm: largest message copied at post (inject_size); a
                                    * publisher sends nothing larger (0: no such cap) */
    size_t tx_size, rx_size;       /* provider tx/rx context sizes */
    bool rma;                      /* FI_RMA granted and >= 8 B of remote CQ data: RMA delivery
                                    * possible (net/README.md, "RMA delivery") */
    enum rci_fabric_letgo letgo;    /* how a cut-off peer's sends are let go */
    uint64_t next_requested_key;   /* for !mr_prov_key */
    char where[224];               /* "prov=tcp, ep=msg, 127.0.0.1:12345" */
    char cq_error_text[192];       /* the provider's text of the last error completion */
};

/* Open fabric, domain, CQ (at least max(params.cq_size, min_cq_entries)
 * entries: callers pass the number of operations they can have outstanding,
 * since a CQ overrun is fatal), then
 *   MSG + LISTEN : EQ and a passive endpoint listening on address:port;
 *   MSG + CONNECT: EQ (endpoints come from rci_fabric_msg_ep_open());
 *   RDM          : AV and the endpoint f->ep, bound to CQ and AV, enabled
 *                  (LISTEN binds it to address:port; CONNECT lets the
 *                  provider choose, the publisher's address is
 *                  f->info->dest_addr, insert it with rci_fabric_av_insert()).
 * On failure everything opened is closed and f is zeroed (close is safe). */
/* Every process of ours must run libfabric with FI_AV_REMOVE_CLEANUP=1 (the
 * only way ofi_rxm lets go of a removed peer's sends). rci_fabric_open()
 * calls this before its first fi_getinfo; libfabric reads the variable once,
 * at its own initialisation, so an application that calls libfabric itself
 * earlier must call this first (or set the variable). Sets it to 1 when it
 * is unset; a value libfabric reads as false is left alone, and then an
 * ofi_rxm publisher refuses to open (rci_fabric_open). Thread-safe, once. */
void rci_fabric_env_init(void);

int  rci_fabric_open(struct rci_fabric *f, const struct rci_fabric_params *params,
                    enum rci_fabric_role role, size_t min_cq_entries,
                    char *err, size_t errlen);
/* Close in reverse order. Endpoints from rci_fabric_msg_ep_open() and MRs
 * must be closed before. Safe on a zeroed or failed struct. */
void rci_fabric_close(struct rci_fabric *f);

/* MSG: an endpoint for `info` (a FI_CONNREQ's info on the publisher, NULL =
 * f->info on the subscriber), bound to f->cq (send+recv) and f->eq, enabled.
 * `context` is returned in that endpoint's EQ events (fid->context). Post
 * receives, then fi_accept() / rci_fabric_msg_connect(). */
int  rci_fabric_msg_ep_open(struct rci_fabric *f, struct fi_info *info, void *context,
                           struct fid_ep **ep, char *err, size_t errlen);
/* MSG + CONNECT: fi_connect to the publisher and wait (reading only the EQ)
 * until FI_CONNECTED for ep, a rejection, or timeout_ns. */
int  rci_fabric_msg_connect(struct rci_fabric *f, struct fid_ep *ep, uint64_t timeout_ns,
                           char *err, size_t errlen);
/* Close an endpoint (NULL is fine). Its pending operations never complete
 * afterwards as far as the caller is concerned: release them yourself. */
void rci_fabric_ep_close(struct fid_ep *ep);

/* Memory registration: one region per buffer, registered once. */
struct rci_fabric_mr {
    struct fid_mr *mr;
    void *desc;                    /* fi_mr_desc(): pass in every iov's desc */
    const uint8_t *addr;
    size_t len;
};
/* access: FI_SEND and/or FI_RECV. With mr_endpoint the region is bound to
 * `ep` (required then, ignored otherwise) and enabled. */
int  rci_fabric_mr_reg(struct rci_fabric *f, const void *addr, size_t len, uint64_t access,
                      struct fid_ep *ep, struct rci_fabric_mr *mr, char *err, size_t errlen);
void rci_fabric_mr_close(struct rci_fabric_mr *mr);
/* True when [p, p+len) lies inside the region. */
static inline bool rci_fabric_mr_contains(const struct rci_fabric_mr *mr, const void *p, size_t len)
{
    const uint8_t *b = p;
    return mr->mr && b >= mr->addr && len <= mr->len && (size_t)(b - mr->addr) <= mr->len - len;
}

/* RDM address vector. */
int  rci_fabric_av_insert(struct rci_fabric *f, const void *addr, size_t addrlen,
                         fi_addr_t *out, char *err, size_t errlen);
int  rci_fabric_av_remove(struct rci_fabric *f, fi_addr_t addr, char *err, size_t errlen);
/* Own fabric address of ep (RDM: for HELLO.addr). *len: in buffer size, out used. */
int  rci_fabric_getname(struct rci_fabric *f, struct fid_ep *ep, void *buf, size_t *len,
                       char *err, size_t errlen);
/* Could addr (addrlen bytes, from the network) be an address of this
 * fabric's format? For socket formats: the family matches and the length
 * holds it; FI_ADDR_STR (shm): a printable "proto://..." string whose NUL
 * is its last byte (any length: names differ in length); other formats: at
 * least the provider's own address length. */
bool rci_fabric_addr_plausible(const struct rci_fabric *f, const void *addr, size_t addrlen);
/* Printable form of a fabric address ("fi_sockaddr_in://127.0.0.1:4711"). */
void rci_fabric_addr_str(const struct rci_fabric *f, const void *addr, size_t addrlen,
                        char *buf, size_t buflen);

/* One completion, success or error. */
struct rci_fabric_cqe {
    void *context;                 /* the op_context given when posting */
    size_t len;                    /* received bytes (FI_RECV) */
    fi_addr_t src;                 /* RDM + source_addr: sender, else FI_ADDR_NOTAVAIL */
    int err;                       /* 0, or the positive FI errno of an error entry */
    uint64_t flags;                /* the entry's flags (FI_REMOTE_CQ_DATA ...); 0 for errors */
    uint64_t data;                 /* FI_REMOTE_CQ_DATA: the immediate data */
};
/* Read up to max completions without blocking (this drives progress: call it
 * even when nothing is expected). Error entries come back as entries with
 * err != 0. Returns the count (0 = nothing), or -errno if the CQ itself failed. */
int  rci_fabric_cq_poll(struct rci_fabric *f, struct rci_fabric_cqe *out, size_t max,
                       char *err, size_t errlen);

/* One EQ event (MSG). For FI_CONNREQ, info must be freed with fi_freeinfo()
 * (or handed to rci_fabric_msg_ep_open + fi_accept/fi_reject, then freed). */
struct rci_fabric_event {
    uint32_t event;                /* FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, ... */
    fid_t fid;                     /* the endpoint (or pep) concerned */
    void *context;                 /* fid->context */
    struct fi_info *info;          /* FI_CONNREQ only */
    int err;                       /* 0, or positive FI errno of an error event */
};
/* Returns 1 with an event, 0 if none waits (or no EQ), -errno on failure.
 * An error event (fi_eq_readerr) is returned as 1 with ev->err set. */
int  rci_fabric_eq_poll(struct rci_fabric *f, struct rci_fabric_event *ev, char *err, size_t errlen);

/* Block until the CQ or EQ may have something or timeout_ns passes: fi_trywait
 * + poll() on the wait fds; if trywait says work is pending it returns at
 * once; without fds it sleeps min(timeout, 50 us). Never consumes entries. */
void rci_fabric_wait(struct rci_fabric *f, uint64_t timeout_ns);
/* The same, also woken by extra_fd (readable; -1: none; never read here):
 * the idle sleep of a publisher thread with its doorbell. Without a CQ wait
 * fd (the provider has none) it sleeps at most 50 us and returns false (the
 * caller counts those short sleeps); true when it could sleep on fds. */
bool rci_fabric_wait_with(struct rci_fabric *f, int extra_fd, uint64_t timeout_ns);
/* The same with the bound for a provider without a CQ wait fd given
 * (rci_fabric_wait_with: RCI_FABRIC_NOFD_SLEEP_NS): an idle caller that
 * knows nothing of its own is in flight may back off further. */
#define RCI_FABRIC_NOFD_SLEEP_NS 50000u
bool rci_fabric_wait_bounded(struct rci_fabric *f, int extra_fd, uint64_t timeout_ns, uint64_t nofd_max_ns);
/* Adaptive wait: call poll_fn(arg) in a loop for params.poll_spin_ns; if it
 * did nothing, alternate rci_fabric_wait() and poll_fn until timeout_ns. Stops
 * as soon as poll_fn returns non-zero and returns that value (>0 work done,
 * <0 error), or 0 at the timeout. */
int  rci_fabric_wait_adaptive(struct rci_fabric *f, int (*poll_fn)(void *arg), void *arg,
                             uint64_t timeout_ns);
/* The same with the spin chosen by sp (spin_policy.h: learnt from the
 * caller's recent waits; rc_sub_poll) and what this wait saw told to it.
 * NULL: the fixed params.poll_spin_ns (rci_fabric_wait_adaptive). A first
 * poll that finds work, a timeout of 0 and a spin cut short by the timeout
 * teach sp nothing. */
int  rci_fabric_wait_spin(struct rci_fabric *f, int (*poll_fn)(void *arg), void *arg, uint64_t timeout_ns,
                         struct rci_spin_policy *sp);

/* Format "call(where): fi_strerror" into err and return the libfabric return
 * code as -errno (rc may be negative FI code or positive errno). f may be NULL. */
int  rci_fabric_error(const struct rci_fabric *f, char *err, size_t errlen, const char *call,
                     int rc);

/* shm: remove the region file of a dead shm endpoint named `name`
 * ("fi_shm://PID:UID:INDEX" or "PID:UID:INDEX"): only when the name has our
 * uid, the file is ours and PID does not exist, or is a zombie or exiting
 * (fabric.c says why that is safe). 1 removed, 0 left alone, -errno. */
int rci_fabric_shm_reclaim(const char *name);
/* The same for every such file in /dev/shm; returns how many were removed. */
int rci_fabric_shm_reclaim_all(void);
/* shm: remove the region file of our own endpoint bound to address:port
 * (fi_ns://ADDRESS:PORT keeps /dev/shm/ADDRESS:PORT) when it cannot be closed
 * because a thread stays stuck in it: fi_close would unlink it, and shm takes
 * it over only at the next start on that port. The mapping stays valid for
 * whoever has it. 1 removed, 0 absent or not ours, -errno. */
int rci_fabric_shm_remove_bound(const char *address, unsigned port);

#endif
