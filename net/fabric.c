/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric.c — libfabric setup, registration, completion/event reading and
 * adaptive waiting. See fabric.h for the contract and net/README.md for the
 * rules (why each provider answer is honoured the way it is). */
#include "net/fabric.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <poll.h>
#include <pthread.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errbuf.h"

#define RCI_FABRIC_EQ_SIZE 256u
#define RCI_FABRIC_CQ_BATCH 64u

int rci_fabric_error(const struct rci_fabric *f, char *err, size_t errlen, const char *call, int rc)
{
    int code = rc < 0 ? -rc : rc;
    if (code == 0)
        code = FI_EOTHER;
    rci_set_err(err, errlen, "%s(%s): %s", call, f ? f->where : "", fi_strerror(code));
    return -code;
}

/* ---- FI_AV_REMOVE_CLEANUP (net/README.md, "Dead peers") ------------------ */

#define RCI_FABRIC_CLEANUP_ENV "FI_AV_REMOVE_CLEANUP"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static char env_refused[64];    /* the user's value when it reads as false */

/* libfabric's boolean parameter parsing (fi_param_get_bool): these are false. */
static bool reads_false(const char *v)
{
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strcasecmp(v, no[i]) == 0)
            return true;
    return false;
}

static void env_init_once(void)
{
    const char *v = getenv(RCI_FABRIC_CLEANUP_ENV);
    if (!v || !*v)
        setenv(RCI_FABRIC_CLEANUP_ENV, "1", 1);
    else if (reads_false(v))
        snprintf(env_refused, sizeof env_refused, "%s", v);
}

void rci_fabric_env_init(void)
{
    pthread_once(&env_once, env_init_once);
}

/* An ofi_rxm publisher without FI_AV_REMOVE_CLEANUP could not prove that a
 * removed subscriber's sends stopped reading the ring: refused. */
static int check_cleanup_env(struct rci_fabric *f, char *err, size_t errlen)
{
    if (!f->rxm || f->role != RCI_FABRIC_LISTEN || !env_refused[0])
        return 0;
    rci_set_err(err, errlen, "%s=%s in the environment (%s): a publisher over ofi_rxm needs 1, "
               "or a dead subscriber's sends could read released ring memory; unset it",
               RCI_FABRIC_CLEANUP_ENV, env_refused, f->where);
    return -EINVAL;
}

/* How a cut-off peer's operations are let go (fabric.h). */
static enum rci_fabric_letgo letgo_rule(const struct rci_fabric *f)
{
    if (!f->rdm)
        return RCI_LETGO_EP_CLOSE;
    if (f->rxm)
        return RCI_LETGO_AV_REMOVE;  /* FI_AV_REMOVE_CLEANUP=1: check_cleanup_env */
    if (f->copy_max)
        return RCI_LETGO_AT_POST;    /* shm: nothing above inject_size, copied at post (shm_copy_max) */
    return RCI_LETGO_COMPLETION;
}

static const char *ep_kind_name(enum rci_ep_kind k)
{
    return k == RCI_EP_RDM ? "rdm" : "msg";
}

/* MR modes we can handle. FI_MR_ENDPOINT is left out for a MSG listener:
 * there one registration must serve every accepted endpoint. */
static uint64_t offered_mr_mode(enum rci_ep_kind kind, enum rci_fabric_role role)
{
    uint64_t m = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    if (!(kind == RCI_EP_MSG && role == RCI_FABRIC_LISTEN))
        m |= FI_MR_ENDPOINT;
    return m;
}

static int get_info(struct rci_fabric *f, char *err, size_t errlen)
{
    const struct rci_fabric_params *p = &f->params;
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return rci_fabric_error(f, err, errlen, "fi_allocinfo", -FI_ENOMEM);
    hints->caps = FI_MSG | FI_SEND | FI_RECV;
    /* The RDM publisher must know who sent a control message. */
    if (p->endpoint == RCI_EP_RDM && f->role == RCI_FABRIC_LISTEN)
        hints->caps |= FI_SOURCE;
    hints->mode = 0;  /* no FI_CONTEXT: contexts are opaque values (fabric.h) */
    hints->ep_attr->type = p->endpoint == RCI_EP_RDM ? FI_EP_RDM : FI_EP_MSG;
    hints->domain_attr->mr_mode = (int)offered_mr_mode(p->endpoint, f->role);
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    /* Send-after-send order is what we need, so we ask for it. It is not
     * what guarantees order, though: tcp;ofi_rxm completed receives out of
     * order with or without it, and the subscriber restores the order from
     * the stream sequence numbers (wire.h, net/README.md). */
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->fabric_attr->prov_name = strdup(p->provider);
    if (!hints->fabric_attr->prov_name) {
        fi_freeinfo(hints);
        return rci_fabric_error(f, err, errlen, "strdup", -FI_ENOMEM);
    }
    char service[16];
    snprintf(service, sizeof service, "%u", (unsigned)p->port);
    uint64_t flags = f->role == RCI_FABRIC_LISTEN ? FI_SOURCE : 0;
    rci_fabric_env_init();  /* before libfabric initialises itself */
    /* RMA (delivery into a subscriber's ring, net/README.md "RMA delivery")
     * when asked (params.rma) and the provider has it; without it the same
     * endpoint serves sends only (f->rma false). FI_REMOTE_CQ_DATA is an operation flag, not a
     * capability: cq_data_size is checked instead (honour_info). */
    if (p->rma)
        hints->caps |= FI_RMA;
    int rc = fi_getinfo(RCI_FABRIC_API_VERSION, p->address, service, flags, hints, &f->info);
    if (rc == -FI_ENODATA && p->rma) {
        hints->caps &= ~(uint64_t)FI_RMA;
        rc = fi_getinfo(RCI_FABRIC_API_VERSION, p->address, service, flags, hints, &f->info);
    }
    fi_freeinfo(hints);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_getinfo", rc);
    return 0;
}

/* shm (libfabric 1.17, prov/shm/src smr_select_proto) copies a message of
 * at most inject_size (4096) bytes into the receiver's region while the send
 * is posted and completes it there (inline/inject). Above that it lets the
 * RECEIVER read our memory with process_vm_readv whenever it gets to the
 * command (or copies it in pieces during our later progress, SAR): a ring
 * reference would outlive the post, and a peer declared dead could still
 * read ring memory given back meanwhile (or shm touches the region of a peer
 * we removed). So a shm publisher sends nothing larger than inject_size. */
static size_t shm_copy_max(const struct fi_info *i)
{
    const char *prov = i->fabric_attr->prov_name;
    if (!prov || strcmp(prov, "shm") != 0)
        return 0;
    return i->tx_attr->inject_size;
}

/* Record what the provider answered and clamp queue sizes to our request. */
static void honour_info(struct rci_fabric *f)
{
    struct fi_info *i = f->info;
    uint64_t mr = (uint64_t)i->domain_attr->mr_mode;
    f->rdm = i->ep_attr->type == FI_EP_RDM;
    f->rxm = i->fabric_attr->prov_name && strstr(i->fabric_attr->prov_name, "ofi_rxm");
    f->source_addr = f->rdm && (i->caps & FI_SOURCE);
    f->mr_local = mr & FI_MR_LOCAL;
    f->mr_virt_addr = mr & FI_MR_VIRT_ADDR;
    f->mr_allocated = mr & FI_MR_ALLOCATED;
    f->mr_prov_key = mr & FI_MR_PROV_KEY;
    f->mr_endpoint = mr & FI_MR_ENDPOINT;
    f->tx_iov_limit = i->tx_attr->iov_limit;
    if (f->rxm && f->tx_iov_limit > RCI_FABRIC_RXM_TX_IOV_MAX)
        f->tx_iov_limit = RCI_FABRIC_RXM_TX_IOV_MAX;
    f->rx_iov_limit = i->rx_attr->iov_limit;
    f->inject_size = i->tx_attr->inject_size;
    f->max_msg_size = i->ep_attr->max_msg_size;
    f->copy_max = shm_copy_max(i);
    /* Offsets and lengths of RMA records travel in 8 bytes of CQ data. */
    f->rma = (i->caps & FI_RMA) && i->domain_attr->cq_data_size >= 8;
    if (f->params.tx_queue && f->params.tx_queue < i->tx_attr->size)
        i->tx_attr->size = f->params.tx_queue;
    if (f->params.rx_queue && f->params.rx_queue < i->rx_attr->size)
        i->rx_attr->size = f->params.rx_queue;
    f->tx_size = i->tx_attr->size;
    f->rx_size = i->rx_attr->size;
    f->next_requested_key = 1;
    f->letgo = letgo_rule(f);
}

static int open_cq(struct rci_fabric *f, size_t min_entries, char *err, size_t errlen)
{
    struct fi_cq_attr attr = {
        .size = f->params.cq_size > min_entries ? f->params.cq_size : min_entries,
        .format = FI_CQ_FORMAT_DATA,   /* RMA records: immediate data */
        .wait_obj = FI_WAIT_FD,
    };
    f->cq_entries = attr.size;
    int rc = fi_cq_open(f->domain, &attr, &f->cq, NULL);
    if (rc) {  /* some providers have no fd: poll without one */
        attr.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(f->domain, &attr, &f->cq, NULL);
        if (rc)
            return rci_fabric_error(f, err, errlen, "fi_cq_open", rc);
        return 0;
    }
    if (fi_control(&f->cq->fid, FI_GETWAIT, &f->cq_fd))
        f->cq_fd = -1;
    return 0;
}

static int open_eq(struct rci_fabric *f, char *err, size_t errlen)
{
    struct fi_eq_attr attr = { .size = RCI_FABRIC_EQ_SIZE, .wait_obj = FI_WAIT_FD };
    int rc = fi_eq_open(f->fabric, &attr, &f->eq, NULL);
    if (rc) {
        attr.wait_obj = FI_WAIT_NONE;
        rc = fi_eq_open(f->fabric, &attr, &f->eq, NULL);
        if (rc)
            return rci_fabric_error(f, err, errlen, "fi_eq_open", rc);
        return 0;
    }
    if (fi_control(&f->eq->fid, FI_GETWAIT, &f->eq_fd))
        f->eq_fd = -1;
    return 0;
}

static int open_rdm_endpoint(struct rci_fabric *f, char *err, size_t errlen)
{
    struct fi_av_attr av_attr = {
        .type = FI_AV_UNSPEC,
        .count = f->params.max_subscribers ? f->params.max_subscribers + 1u : 64u,
    };
    int rc = fi_av_open(f->domain, &av_attr, &f->av, NULL);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_av_open", rc);
    rc = fi_endpoint(f->domain, f->info, &f->ep, NULL);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_endpoint", rc);
    rc = fi_ep_bind(f->ep, &f->av->fid, 0);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_ep_bind(av)", rc);
    rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_ep_bind(cq)", rc);
    rc = fi_enable(f->ep);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_enable", rc);
    return 0;
}

static int open_listener(struct rci_fabric *f, char *err, size_t errlen)
{
    int rc = fi_passive_ep(f->fabric, f->info, &f->pep, NULL);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_passive_ep", rc);
    rc = fi_pep_bind(f->pep, &f->eq->fid, 0);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_pep_bind", rc);
    rc = fi_listen(f->pep);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_listen", rc);
    return 0;
}

static int open_all(struct rci_fabric *f, size_t min_cq_entries, char *err, size_t errlen)
{
    int rc = get_info(f, err, errlen);
    if (rc)
        return rc;
    honour_info(f);
    rc = check_cleanup_env(f, err, errlen);
    if (rc)
        return rc;
    rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_fabric", rc);
    rc = fi_domain(f->fabric, f->info, &f->domain, NULL);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_domain", rc);
    rc = open_cq(f, min_cq_entries, err, errlen);
    if (rc)
        return rc;
    if (f->rdm)
        return open_rdm_endpoint(f, err, errlen);
    rc = open_eq(f, err, errlen);
    if (rc || f->role != RCI_FABRIC_LISTEN)
        return rc;
    return open_listener(f, err, errlen);
}

int rci_fabric_open(struct rci_fabric *f, const struct rci_fabric_params *params,
                   enum rci_fabric_role role, size_t min_cq_entries, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->params = *params;
    f->role = role;
    f->cq_fd = f->eq_fd = -1;
    snprintf(f->where, sizeof f->where, "prov=%s, ep=%s, %s:%u", params->provider,
             ep_kind_name(params->endpoint), params->address, (unsigned)params->port);
    int rc = open_all(f, min_cq_entries, err, errlen);
    if (rc)
        rci_fabric_close(f);
    return rc;
}

static void close_fid(fid_t fid)
{
    if (fid)
        fi_close(fid);
}

void rci_fabric_close(struct rci_fabric *f)
{
    if (f->ep)
        close_fid(&f->ep->fid);
    if (f->pep)
        close_fid(&f->pep->fid);
    if (f->av)
        close_fid(&f->av->fid);
    if (f->cq)
        close_fid(&f->cq->fid);
    if (f->eq)
        close_fid(&f->eq->fid);
    if (f->domain)
        close_fid(&f->domain->fid);
    if (f->fabric)
        close_fid(&f->fabric->fid);
    if (f->info)
        fi_freeinfo(f->info);
    struct rci_fabric_params keep = f->params;
    char where[sizeof f->where];
    memcpy(where, f->where, sizeof where);
    memset(f, 0, sizeof *f);
    f->params = keep;
    memcpy(f->where, where, sizeof where);
    f->cq_fd = f->eq_fd = -1;
}

int rci_fabric_msg_ep_open(struct rci_fabric *f, struct fi_info *info, void *context,
                          struct fid_ep **ep, char *err, size_t errlen)
{
    if (f->rdm || !f->eq)
        return rci_fabric_error(f, err, errlen, "rci_fabric_msg_ep_open", -FI_EINVAL);
    if (!info)
        info = f->info;
    /* A CONNREQ's info carries the provider's sizes: clamp them as ours. */
    if (info->tx_attr && f->tx_size && f->tx_size < info->tx_attr->size)
        info->tx_attr->size = f->tx_size;
    if (info->rx_attr && f->rx_size && f->rx_size < info->rx_attr->size)
        info->rx_attr->size = f->rx_size;
    *ep = NULL;
    int rc = fi_endpoint(f->domain, info, ep, context);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_endpoint", rc);
    rc = fi_ep_bind(*ep, &f->eq->fid, 0);
    if (!rc)
        rc = fi_ep_bind(*ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc) {
        rci_fabric_ep_close(*ep);
        *ep = NULL;
        return rci_fabric_error(f, err, errlen, "fi_ep_bind", rc);
    }
    rc = fi_enable(*ep);
    if (rc) {
        rci_fabric_ep_close(*ep);
        *ep = NULL;
        return rci_fabric_error(f, err, errlen, "fi_enable", rc);
    }
    return 0;
}

int rci_fabric_msg_connect(struct rci_fabric *f, struct fid_ep *ep, uint64_t timeout_ns,
                          char *err, size_t errlen)
{
    int rc = fi_connect(ep, f->info->dest_addr, NULL, 0);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_connect", rc);
    uint64_t deadline = rci_now_ns() + timeout_ns;
    for (;;) {
        struct rci_fabric_event ev;
        rc = rci_fabric_eq_poll(f, &ev, err, errlen);
        if (rc < 0)
            return rc;
        if (rc == 1 && ev.fid == &ep->fid) {
            if (ev.err)
                return rci_fabric_error(f, err, errlen, "fi_connect(event)", ev.err);
            if (ev.event == FI_CONNECTED)
                return 0;
            if (ev.event == FI_SHUTDOWN)
                return rci_fabric_error(f, err, errlen, "fi_connect(shutdown)", -FI_ECONNREFUSED);
        }
        if (rc == 1 && ev.info)
            fi_freeinfo(ev.info);
        if (rc == 1)
            continue;
        uint64_t now = rci_now_ns();
        if (now >= deadline)
            return rci_fabric_error(f, err, errlen, "fi_connect(wait)", -FI_ETIMEDOUT);
        rci_fabric_wait(f, deadline - now);
    }
}

void rci_fabric_ep_close(struct fid_ep *ep)
{
    if (ep)
        fi_close(&ep->fid);
}

int rci_fabric_mr_reg(struct rci_fabric *f, const void *addr, size_t len, uint64_t access,
                     struct fid_ep *ep, struct rci_fabric_mr *mr, char *err, size_t errlen)
{
    memset(mr, 0, sizeof *mr);
    if (f->mr_endpoint && !ep)
        return rci_fabric_error(f, err, errlen, "fi_mr_reg(no endpoint for FI_MR_ENDPOINT)",
                               -FI_EINVAL);
    if (f->rma && (access & FI_SEND))
        access |= FI_WRITE;   /* the same memory is written to RMA subscribers */
    /* Without FI_MR_PROV_KEY duplicate keys fail with -FI_ENOKEY. */
    uint64_t key = f->mr_prov_key ? 0 : f->next_requested_key++;
    int rc = fi_mr_reg(f->domain, addr, len, access, 0, key, 0, &mr->mr, NULL);
    if (rc) {
        mr->mr = NULL;
        return rci_fabric_error(f, err, errlen, "fi_mr_reg", rc);
    }
    if (f->mr_endpoint) {
        rc = fi_mr_bind(mr->mr, &ep->fid, 0);
        if (!rc)
            rc = fi_mr_enable(mr->mr);
        if (rc) {
            rci_fabric_mr_close(mr);
            return rci_fabric_error(f, err, errlen, "fi_mr_bind/enable", rc);
        }
    }
    mr->desc = fi_mr_desc(mr->mr);
    mr->addr = addr;
    mr->len = len;
    return 0;
}

void rci_fabric_mr_close(struct rci_fabric_mr *mr)
{
    if (mr->mr)
        fi_close(&mr->mr->fid);
    memset(mr, 0, sizeof *mr);
}

int rci_fabric_av_insert(struct rci_fabric *f, const void *addr, size_t addrlen,
                        fi_addr_t *out, char *err, size_t errlen)
{
    (void)addrlen;  /* the provider knows its address format's length */
    if (!f->av)
        return rci_fabric_error(f, err, errlen, "fi_av_insert(no AV)", -FI_EINVAL);
    int rc = fi_av_insert(f->av, addr, 1, out, 0, NULL);
    if (rc != 1)
        return rci_fabric_error(f, err, errlen, "fi_av_insert", rc < 0 ? rc : -FI_EADDRNOTAVAIL);
    return 0;
}

int rci_fabric_av_remove(struct rci_fabric *f, fi_addr_t addr, char *err, size_t errlen)
{
    if (!f->av)
        return rci_fabric_error(f, err, errlen, "fi_av_remove(no AV)", -FI_EINVAL);
    int rc = fi_av_remove(f->av, &addr, 1, 0);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_av_remove", rc);
    return 0;
}

int rci_fabric_getname(struct rci_fabric *f, struct fid_ep *ep, void *buf, size_t *len,
                      char *err, size_t errlen)
{
    int rc = fi_getname(&ep->fid, buf, len);
    if (rc)
        return rci_fabric_error(f, err, errlen, "fi_getname", rc);
    return 0;
}

/* FI_ADDR_STR (shm): a printable "proto://..." string, its NUL the last
 * byte. Providers read such addresses with strlen() (shm's fi_av_insert
 * does), so a missing NUL would let them read past the message. Names of
 * different lengths are normal: a shm publisher bound to address:port is
 * "fi_ns://127.0.0.1:PORT", a subscriber "fi_shm://PID:UID:INDEX". */
static bool addr_str_plausible(const uint8_t *addr, size_t addrlen)
{
    if (addrlen < 2 || addr[addrlen - 1] != '\0')
        return false;
    for (size_t i = 0; i + 1 < addrlen; i++)
        if (addr[i] < 0x21 || addr[i] > 0x7e)
            return false;
    return strstr((const char *)addr, "://") != NULL;
}

bool rci_fabric_addr_plausible(const struct rci_fabric *f, const void *addr, size_t addrlen)
{
    size_t own = f->info ? f->info->src_addrlen : 0;
    sa_family_t family;
    if (addrlen < sizeof family)
        return false;
    memcpy(&family, addr, sizeof family);
    switch (f->info ? f->info->addr_format : FI_FORMAT_UNSPEC) {
    case FI_SOCKADDR_IN:
        return family == AF_INET && addrlen >= sizeof(struct sockaddr_in);
    case FI_SOCKADDR_IN6:
        return family == AF_INET6 && addrlen >= sizeof(struct sockaddr_in6);
    case FI_SOCKADDR:
        return (family == AF_INET && addrlen >= sizeof(struct sockaddr_in)) ||
               (family == AF_INET6 && addrlen >= sizeof(struct sockaddr_in6));
    case FI_ADDR_STR:
        return addr_str_plausible(addr, addrlen);
    default:
        return addrlen >= own;
    }
}

void rci_fabric_addr_str(const struct rci_fabric *f, const void *addr, size_t addrlen,
                        char *buf, size_t buflen)
{
    if (!buflen)
        return;
    buf[0] = '\0';
    size_t n = buflen;
    if (f->av && fi_av_straddr(f->av, addr, buf, &n))
        return;
    if (!f->av || !buf[0])
        snprintf(buf, buflen, "<%zu-byte address>", addrlen);
}

static int read_cq_error(struct rci_fabric *f, struct rci_fabric_cqe *out, char *err, size_t errlen)
{
    struct fi_cq_err_entry e = {0};
    ssize_t rc = fi_cq_readerr(f->cq, &e, 0);
    if (rc == -FI_EAGAIN)
        return 0;
    if (rc < 0)
        return rci_fabric_error(f, err, errlen, "fi_cq_readerr", (int)rc);
    out->context = e.op_context;
    out->len = e.len;
    out->src = FI_ADDR_NOTAVAIL;
    out->err = e.err ? e.err : FI_EOTHER;
    const char *text = fi_cq_strerror(f->cq, e.prov_errno, e.err_data, NULL, 0);
    snprintf(f->cq_error_text, sizeof f->cq_error_text, "%s (provider errno %d: %s)", fi_strerror(out->err),
             e.prov_errno, text ? text : "?");
    return 1;
}

int rci_fabric_cq_poll(struct rci_fabric *f, struct rci_fabric_cqe *out, size_t max,
                      char *err, size_t errlen)
{
    struct fi_cq_data_entry e[RCI_FABRIC_CQ_BATCH];
    fi_addr_t src[RCI_FABRIC_CQ_BATCH];
    size_t want = max < RCI_FABRIC_CQ_BATCH ? max : RCI_FABRIC_CQ_BATCH;
    if (want == 0)
        return 0;
    ssize_t n = f->source_addr ? fi_cq_readfrom(f->cq, e, want, src)
                               : fi_cq_read(f->cq, e, want);
    if (n == -FI_EAGAIN)
        return 0;
    if (n == -FI_EAVAIL)
        return read_cq_error(f, out, err, errlen);
    if (n < 0)
        return rci_fabric_error(f, err, errlen, "fi_cq_read", (int)n);
    for (ssize_t i = 0; i < n; i++) {
        out[i] = (struct rci_fabric_cqe){
            .context = e[i].op_context, .len = e[i].len,
            .src = f->source_addr ? src[i] : FI_ADDR_NOTAVAIL,
            .flags = e[i].flags, .data = e[i].data,
        };
    }
    return (int)n;
}

int rci_fabric_eq_poll(struct rci_fabric *f, struct rci_fabric_event *ev, char *err, size_t errlen)
{
    memset(ev, 0, sizeof *ev);
    if (!f->eq)
        return 0;
    union {
        struct fi_eq_cm_entry cm;
        uint8_t raw[sizeof(struct fi_eq_cm_entry) + 256];
    } entry;
    uint32_t event = 0;
    ssize_t rc = fi_eq_read(f->eq, &event, &entry, sizeof entry, 0);
    if (rc == -FI_EAGAIN)
        return 0;
    if (rc == -FI_EAVAIL) {
        struct fi_eq_err_entry e = {0};
        rc = fi_eq_readerr(f->eq, &e, 0);
        if (rc == -FI_EAGAIN)
            return 0;
        if (rc < 0)
            return rci_fabric_error(f, err, errlen, "fi_eq_readerr", (int)rc);
        ev->fid = e.fid;
        ev->context = e.fid ? e.fid->context : e.context;
        ev->err = e.err ? e.err : FI_EOTHER;
        return 1;
    }
    if (rc < 0)
        return rci_fabric_error(f, err, errlen, "fi_eq_read", (int)rc);
    ev->event = event;
    ev->fid = entry.cm.fid;
    ev->context = entry.cm.fid ? entry.cm.fid->context : NULL;
    if (event == FI_CONNREQ)
        ev->info = entry.cm.info;
    return 1;
}

bool rci_fabric_wait_with(struct rci_fabric *f, int extra_fd, uint64_t timeout_ns)
{
    return rci_fabric_wait_bounded(f, extra_fd, timeout_ns, RCI_FABRIC_NOFD_SLEEP_NS);
}

bool rci_fabric_wait_bounded(struct rci_fabric *f, int extra_fd, uint64_t timeout_ns, uint64_t nofd_max_ns)
{
    struct pollfd pfd[3];
    struct fid *fids[2];
    int n = 0;
    if (f->cq && f->cq_fd >= 0) {
        fids[n] = &f->cq->fid;
        pfd[n++] = (struct pollfd){ .fd = f->cq_fd, .events = POLLIN };
    }
    if (f->eq && f->eq_fd >= 0) {
        fids[n] = &f->eq->fid;
        pfd[n++] = (struct pollfd){ .fd = f->eq_fd, .events = POLLIN };
    }
    /* Without a fabric fd the provider only makes progress when polled: a
     * long sleep would stall it, so sleep briefly (still woken by extra_fd). */
    bool on_fds = f->cq == NULL || f->cq_fd >= 0;
    if (!on_fds && timeout_ns > nofd_max_ns)
        timeout_ns = nofd_max_ns;
    /* trywait: work is pending (or the provider must be polled): no block. */
    if (n > 0 && fi_trywait(f->fabric, fids, n) != FI_SUCCESS)
        return on_fds;
    int nfds = n;
    if (extra_fd >= 0)
        pfd[nfds++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
    if (nfds == 0) {
        rci_sleep_ns(timeout_ns);
        return on_fds;
    }
    struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000u),
                           .tv_nsec = (long)(timeout_ns % 1000000000u) };
    ppoll(pfd, (nfds_t)nfds, &ts, NULL);
    return on_fds;
}

void rci_fabric_wait(struct rci_fabric *f, uint64_t timeout_ns)
{
    rci_fabric_wait_with(f, -1, timeout_ns);
}

int rci_fabric_wait_adaptive(struct rci_fabric *f, int (*poll_fn)(void *arg), void *arg,
                            uint64_t timeout_ns)
{
    return rci_fabric_wait_spin(f, poll_fn, arg, timeout_ns, NULL);
}

/* The spin: poll_fn until it does something or spin_end; the longest time
 * between two polls goes to o (a long one: the process lost its CPU). */
static int spin_until(int (*poll_fn)(void *arg), void *arg, uint64_t start, uint64_t spin_end,
                      struct rci_spin_outcome *o)
{
    uint64_t prev = start;
    for (;;) {
        int rc = poll_fn(arg);
        uint64_t now = rci_now_ns();
        if (now - prev > o->longest_gap_ns)
            o->longest_gap_ns = now - prev;
        prev = now;
        if (rc) {
            o->found = o->while_spinning = true;
            o->after_ns = now - start;
            return rc;
        }
        if (now >= spin_end)
            return 0;
    }
}

/* Coalescing (spin_policy.h): sleep on a timer, off the fds' wait queues, so
 * that the messages sent meanwhile are there together and their sender does
 * not wake us for each; then poll once. */
static int coalesce(int (*poll_fn)(void *arg), void *arg, const struct rci_spin_policy *sp, uint64_t start,
                    uint64_t timeout_ns, struct rci_spin_outcome *o)
{
    uint64_t t = rci_spin_policy_coalesce(sp);
    if (t == 0 || t >= timeout_ns)
        return 0;
    o->coalesced_ns = t;
    rci_sleep_ns(t);
    int rc = poll_fn(arg);
    if (rc) {
        o->found = true;
        o->after_ns = rci_now_ns() - start;
    }
    return rc;
}

/* The calling thread's involuntary context switches so far (preemptions);
 * the last sample's when getrusage fails (no contention seen). */
static uint64_t thread_preemptions(const struct rci_spin_policy *sp)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return sp->sample_nivcsw;
    return (uint64_t)ru.ru_nivcsw;
}

int rci_fabric_wait_spin(struct rci_fabric *f, int (*poll_fn)(void *arg), void *arg, uint64_t timeout_ns,
                         struct rci_spin_policy *sp)
{
    /* Work already there is no wait: nothing to learn from it. */
    int rc = poll_fn(arg);
    if (rc || timeout_ns == 0)
        return rc;
    uint64_t start = rci_now_ns(), deadline = start + timeout_ns;
    uint64_t spin = sp ? rci_spin_policy_next(sp) : f->params.poll_spin_ns;
    /* A spin cut short by the caller's timeout says nothing of the traffic. */
    bool learn = sp != NULL && spin <= timeout_ns;
    struct rci_spin_outcome o = { .spun_ns = spin < timeout_ns ? spin : timeout_ns };
    if (o.spun_ns > 0)
        rc = spin_until(poll_fn, arg, start, start + o.spun_ns, &o);
    else if (learn)
        rc = coalesce(poll_fn, arg, sp, start, timeout_ns, &o);
    for (uint64_t now = rci_now_ns(); rc == 0 && now < deadline; now = rci_now_ns()) {
        rci_fabric_wait(f, deadline - now);
        rc = poll_fn(arg);
        if (rc) {
            o.found = true;
            o.after_ns = rci_now_ns() - start;
        }
    }
    if (learn) {
        rci_spin_policy_update(sp, &o);
        if (rci_spin_policy_sample_due(sp))
            rci_spin_policy_cpu_sample(sp, thread_preemptions(sp));
    }
    return rc;
}

/* ---- shm: region files of dead peers ---------------------------------------
 * libfabric 1.17's shm (prov/util/src/util_shm.c smr_create, prov/shm/src
 * smr_ep.c smr_endpoint_name) keeps each endpoint's region in
 * /dev/shm/<name without "fi_shm://">, 16 MiB here. An endpoint opened
 * without an address (a subscriber) is "fi_shm://PID:UID:INDEX"; a publisher
 * bound to address:port is "fi_ns://ADDRESS:PORT" (file ADDRESS:PORT, which
 * shm itself takes over from a dead owner at the next start). shm unlinks
 * its files at fi_close and from a signal handler, never after SIGKILL.
 * A file is removed here only if its name is PID:UID:INDEX with our uid, we
 * own it, and PID does not exist or is exiting (process_gone): shm's own
 * takeover (smr_retry_map) makes the same assumption that processes sharing
 * /dev/shm share a pid namespace. */
#define SHM_DIR "/dev/shm"

/* Unlink /dev/shm/<file> if it is a regular file we own: 1 removed, 0 left
 * alone (absent, or not ours), -errno. */
static int remove_own_shm_file(const char *file)
{
    int dir = open(SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstatat(dir, file, &st, AT_SYMLINK_NOFOLLOW) != 0)
        rc = errno == ENOENT ? 0 : -errno;
    else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
        rc = 0;
    else
        rc = unlinkat(dir, file, 0) == 0 ? 1 : (errno == ENOENT ? 0 : -errno);
    close(dir);
    return rc;
}

static bool parse_shm_name(const char *name, long *pid, long *uid)
{
    char *end;
    if (strncmp(name, "fi_shm://", 9) == 0)
        name += 9;
    if (*name < '1' || *name > '9')
        return false;
    *pid = strtol(name, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9')
        return false;
    *uid = strtol(end + 1, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9')
        return false;
    strtol(end + 1, &end, 10);
    return *end == '\0' && *pid > 0 && *pid <= INT32_MAX;
}

/* The process has ended, or is ending: it cannot use its region again.
 * kill(pid, 0) alone calls a SIGKILLed process alive until its parent reaps
 * it (a zombie) and while the kernel tears down its memory (after SIGKILL
 * that can take longer than the publisher's peer_timeout, as under ASan in
 * CI: the region file then stayed). /proc/PID/stat says both: state Z or X,
 * or no address space left (vsize 0: past exit_mm; a kernel thread that
 * took the pid over means the owner is gone too). */
static bool process_gone(long pid)
{
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;   /* EPERM: someone else's: alive */
    char path[32], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0)
        return false;
    stat[n] = '\0';
    const char *after_comm = strrchr(stat, ')');   /* the name may hold spaces and ')' */
    char state;
    unsigned long vsize;
    /* Field 3 (state), fields 4-22 skipped (19), field 23 (vsize): proc(5). */
    if (!after_comm || sscanf(after_comm + 1, " %c"
                              " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s"   /* 4-13 */
                              " %*s %*s %*s %*s %*s %*s %*s %*s %*s"       /* 14-22 */
                              " %lu", &state, &vsize) != 2)
        return false;
    return state == 'Z' || state == 'X' || vsize == 0;
}

int rci_fabric_shm_reclaim(const char *name)
{
    long pid, uid;
    if (!parse_shm_name(name, &pid, &uid) || uid != (long)getuid())
        return 0;
    if (!process_gone(pid))
        return 0;  /* alive (or not ours to ask): its file stays */
    return remove_own_shm_file(strncmp(name, "fi_shm://", 9) == 0 ? name + 9 : name);
}

int rci_fabric_shm_remove_bound(const char *address, unsigned port)
{
    char file[sizeof ((struct rci_fabric_params *)0)->address + 8];
    if (snprintf(file, sizeof file, "%s:%u", address, port) >= (int)sizeof file || strchr(file, '/'))
        return -EINVAL;
    return remove_own_shm_file(file);
}

int rci_fabric_shm_reclaim_all(void)
{
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (rci_fabric_shm_reclaim(e->d_name) > 0)
            removed++;
    closedir(d);
    return removed;
}
