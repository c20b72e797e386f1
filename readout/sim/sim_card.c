/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_card.c — simulated cards as rci_card objects: the in-process card
 * (firmware thread), the daemon side of a sim-process card (BAR in shared
 * memory) and the ringcast-sim process side (attach and run). */
#include "readout/sim/sim_card.h"
#include "common/errbuf.h"
#include "common/monotonic.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readout/sim/sim_bar.h"
#include "readout/sim/sim_blocks.h"
#include "readout/sim/sim_firmware.h"
#include "readout/sim/sim_irq.h"

#include <sys/eventfd.h>

#define STOP_WAIT_NS 1000000000ull   /* rci_card_stop waits this long for a process to pause */
#define FW_HEARTBEAT_TIMEOUT_NS (3ull * 1000000000ull)  /* firmware silent this long: hung */
#define HOST_GONE_NS (1000000000ull)  /* host pid gone and its heartbeat this old: orphaned */
#define HOST_CHECK_NS (100000000ull)  /* ringcast-sim looks at its host this often */


static int check_card_params(const struct rci_card_params *cp, char *err, size_t errlen)
{
    char why[160];
    if (rci_felix_check_format(cp->block_format, cp->block_size, why, sizeof why) != 0) {
        rci_set_err(err, errlen, "card.%u: %s", cp->index, why);
        return -EINVAL;
    }
    if (cp->dma_descriptor >= WUPPER_MAX_DESCRIPTORS) {
        rci_set_err(err, errlen, "card.%u: DMA descriptor %u is not 0..%u", cp->index,
                cp->dma_descriptor, WUPPER_MAX_DESCRIPTORS - 1);
        return -EINVAL;
    }
    return 0;
}

/* ---- in-process card ------------------------------------------------------ */

struct sim_card {
    struct rci_card card;
    uint8_t *bar;                  /* RCI_SIM_BAR_BYTES, private to this process */
    struct rci_sim_fw *fw;
    pthread_t thread;
    bool thread_running;
    atomic_bool stop_requested;
    unsigned index;
    int irq_fd;                    /* card.N.wait = interrupt: the firmware raises it; else -1 */
};

static enum rci_sim_loop_cmd thread_control(void *ctx, const struct rci_sim_fw *fw)
{
    (void)fw;
    struct sim_card *sc = ctx;
    return atomic_load_explicit(&sc->stop_requested, memory_order_acquire) ? RCI_SIM_LOOP_EXIT
                                                                           : RCI_SIM_LOOP_RUN;
}

static void *firmware_thread(void *arg)
{
    struct sim_card *sc = arg;
    rci_sim_fw_run(sc->fw, thread_control, sc);
    return NULL;
}

static int sim_start(struct rci_card *c)
{
    struct sim_card *sc = c->impl;
    if (sc->thread_running)
        return 0;
    atomic_store(&sc->stop_requested, false);
    RCI_SIM_STORE(&rci_sim_priv(sc->bar)->run_request, 1);
    int rc = pthread_create(&sc->thread, NULL, firmware_thread, sc);
    if (rc != 0) {
        RCI_SIM_STORE(&rci_sim_priv(sc->bar)->run_request, 0);
        return -rc;
    }
    char name[16];
    snprintf(name, sizeof name, "rc-sim-%u", sc->index % 1000u);
    pthread_setname_np(sc->thread, name);
    sc->thread_running = true;
    return 0;
}

static void sim_stop(struct rci_card *c)
{
    struct sim_card *sc = c->impl;
    if (!sc->thread_running)
        return;
    atomic_store_explicit(&sc->stop_requested, true, memory_order_release);
    pthread_join(sc->thread, NULL);
    sc->thread_running = false;
    RCI_SIM_STORE(&rci_sim_priv(sc->bar)->run_request, 0);
    RCI_SIM_STORE(&rci_sim_priv(sc->bar)->fw_state, (uint64_t)RCI_FW_IDLE);
}

static void sim_get_stats(struct rci_card *c, struct rci_card_stats *s)
{
    struct sim_card *sc = c->impl;
    rci_sim_bar_read_stats(sc->bar, s);
}

static void sim_destroy(struct rci_card *c)
{
    struct sim_card *sc = c->impl;
    sim_stop(c);
    rci_sim_fw_destroy(sc->fw);
    if (sc->irq_fd >= 0)
        close(sc->irq_fd);
    free(sc->bar);
    free(sc);
}

static int sim_irq_fd(struct rci_card *c)
{
    return ((struct sim_card *)c->impl)->irq_fd;
}

static const struct rci_card_ops sim_card_ops = {
    .kind = "sim",
    .start = sim_start,
    .stop = sim_stop,
    .get_stats = sim_get_stats,
    .destroy = sim_destroy,
    .irq_fd = sim_irq_fd,
};

/* card.N.wait = interrupt: the eventfd the firmware raises. */
static int make_irq_fd(const struct rci_card_params *cp, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    if (cp->wait != RCI_WAIT_INTERRUPT)
        return 0;
    *fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (*fd < 0) {
        int e = errno;
        rci_set_err(err, errlen, "card.%u: eventfd for the interrupt: %s", cp->index, strerror(e));
        return -e;
    }
    return 0;
}

int rci_sim_card_create(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                       uint8_t *ring, size_t ring_size, struct rci_card **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    int rc = check_card_params(cp, err, errlen);
    if (rc != 0)
        return rc;
    struct sim_card *sc = calloc(1, sizeof *sc);
    uint8_t *bar = aligned_alloc(4096, RCI_SIM_BAR_BYTES);
    if (!sc || !bar) {
        free(sc);
        free(bar);
        rci_set_err(err, errlen, "card.%u: out of memory for the simulated card", cp->index);
        return -ENOMEM;
    }
    struct rci_card_params described = *cp;
    described.ring_size = ring_size;
    rci_sim_bar_format(bar, &described);
    rc = rci_sim_fw_create(bar, cp, sp, ring, ring_size, &sc->fw, err, errlen);
    if (rc == 0) {
        rc = make_irq_fd(cp, &sc->irq_fd, err, errlen);
        if (rc != 0)
            rci_sim_fw_destroy(sc->fw);
    }
    if (rc != 0) {
        free(bar);
        free(sc);
        return rc;
    }
    rci_sim_fw_set_irq(sc->fw, sc->irq_fd, sp->irq_blocks, sp->irq_timeout_ns);
    sc->bar = bar;
    sc->index = cp->index;
    sc->card.ops = &sim_card_ops;
    sc->card.impl = sc;
    rci_sim_bar_init_ops(&sc->card.bar, bar);
    *out = &sc->card;
    return 0;
}

struct rci_sim_fw *rci_sim_card_fw(struct rci_card *c)
{
    return c->ops == &sim_card_ops ? ((struct sim_card *)c->impl)->fw : NULL;
}

/* ---- shared-memory names ---------------------------------------------------- */

int rci_sim_shm_names(const char *base, char ring[RCI_MEM_NAME_MAX + 1],
                     char bar[RCI_MEM_NAME_MAX + 1], char *err, size_t errlen)
{
    if (!base || !base[0]) {
        rci_set_err(err, errlen, "shm_name is empty: a sim-process card needs one");
        return -EINVAL;
    }
    size_t room = RCI_MEM_NAME_MAX + 1;
    int n1 = snprintf(ring, room, "%s%s", base, RCI_SIM_SHM_RING_SUFFIX);
    int n2 = snprintf(bar, room, "%s%s", base, RCI_SIM_SHM_BAR_SUFFIX);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= room || (size_t)n2 >= room) {
        rci_set_err(err, errlen, "shm_name \"%s\" is too long: with \"%s\" it must fit in %d characters",
                base, RCI_SIM_SHM_RING_SUFFIX, RCI_MEM_NAME_MAX);
        return -ENAMETOOLONG;
    }
    return 0;
}

/* ---- daemon side of a sim-process card -------------------------------------- */

struct shm_card {
    struct rci_card card;
    struct rci_mem_region bar;
    unsigned index;
    uint64_t watched_pid;       /* the firmware process last seen alive, 0 = none */
    bool hung_reported;         /* its silent heartbeat was reported */
    int irq_fd;                 /* card.N.wait = interrupt: handed to ringcast-sim; else -1 */
    struct rci_sim_irq_server *irq_server;
};

static struct rci_sim_priv *shm_priv(struct rci_card *c)
{
    return rci_sim_priv(((struct shm_card *)c->impl)->bar.addr);
}

static bool process_alive(uint64_t pid)
{
    return pid != 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int shm_start(struct rci_card *c)
{
    RCI_SIM_STORE(&shm_priv(c)->run_request, 1);
    return 0;
}

static bool fw_writing(uint64_t state)
{
    return state == RCI_FW_RUNNING || state == RCI_FW_STALLED || state == RCI_FW_RATE_LIMITED;
}

static void shm_stop(struct rci_card *c)
{
    struct rci_sim_priv *p = shm_priv(c);
    RCI_SIM_STORE(&p->run_request, 0);
    uint64_t deadline = rci_now_ns() + STOP_WAIT_NS;
    while (process_alive(RCI_SIM_LOAD(&p->fw_pid)) && fw_writing(RCI_SIM_LOAD(&p->fw_state)) &&
           rci_now_ns() < deadline) {
        rci_sleep_ns(1000000);
    }
}

static void shm_get_stats(struct rci_card *c, struct rci_card_stats *s)
{
    rci_sim_bar_read_stats(((struct shm_card *)c->impl)->bar.addr, s);
}

static void shm_destroy(struct rci_card *c)
{
    struct shm_card *sc = c->impl;
    RCI_SIM_STORE(&shm_priv(c)->run_request, 0);
    RCI_SIM_STORE(&shm_priv(c)->host_closed, 1);
    rci_sim_irq_server_stop(sc->irq_server);
    if (sc->irq_fd >= 0)
        close(sc->irq_fd);
    rci_mem_unmap(&sc->bar);
    free(sc);
}

static int shm_irq_fd(struct rci_card *c)
{
    return ((struct shm_card *)c->impl)->irq_fd;
}

/* The host's half: its heartbeat. The firmware's: a ringcast-sim that was
 * attached is gone (killed: its pid is dead; or it detached) or alive but
 * silent (stopped, hung). Each loss is reported once; a new process that
 * attaches is watched from then on. */
static int shm_check(struct rci_card *c, char *why, size_t whylen)
{
    struct shm_card *sc = c->impl;
    struct rci_sim_priv *p = shm_priv(c);
    uint64_t now = rci_now_ns();
    RCI_SIM_RELAXED_STORE(&p->host_heartbeat_ns, now);
    uint64_t pid = RCI_SIM_LOAD(&p->fw_pid);
    uint64_t state = RCI_SIM_LOAD(&p->fw_state);
    if (pid != 0 && process_alive(pid)) {
        if (pid != sc->watched_pid) {
            sc->watched_pid = pid;
            sc->hung_reported = false;
        }
        uint64_t beat = RCI_SIM_LOAD(&p->fw_heartbeat_ns);
        bool silent = beat != 0 && now > beat && now - beat > FW_HEARTBEAT_TIMEOUT_NS;
        if (!silent || sc->hung_reported || state == RCI_FW_FINISHED)
            return RCI_CARD_FW_OK;
        sc->hung_reported = true;
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " is alive but its firmware heartbeat is"
                 " %.1f s old (stopped or hung)", pid, (double)(now - beat) / 1e9);
        return RCI_CARD_FW_LOST;
    }
    if (sc->watched_pid == 0)
        return RCI_CARD_FW_OK;           /* nothing attached yet */
    uint64_t gone = sc->watched_pid;
    sc->watched_pid = 0;
    if (state == RCI_FW_FINISHED || RCI_SIM_LOAD(&p->stats.finished))
        return RCI_CARD_FW_OK;           /* it finished its run and left */
    if (pid == gone)
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " died (killed?) while attached", gone);
    else
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " exited before its run was over", gone);
    return RCI_CARD_FW_LOST;
}

static const struct rci_card_ops shm_card_ops = {
    .kind = "sim-process",
    .start = shm_start,
    .stop = shm_stop,
    .get_stats = shm_get_stats,
    .destroy = shm_destroy,
    .check = shm_check,
    .irq_fd = shm_irq_fd,
};

int rci_sim_bar_create_shm(const struct rci_card_params *cp, struct rci_card **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    char ring_name[RCI_MEM_NAME_MAX + 1], bar_name[RCI_MEM_NAME_MAX + 1];
    int rc = check_card_params(cp, err, errlen);
    if (rc == 0)
        rc = rci_sim_shm_names(cp->shm_name, ring_name, bar_name, err, errlen);
    if (rc != 0)
        return rc;
    struct shm_card *sc = calloc(1, sizeof *sc);
    if (!sc) {
        rci_set_err(err, errlen, "card.%u: out of memory", cp->index);
        return -ENOMEM;
    }
    char why[256] = "";
    rc = rci_mem_map(RCI_MEM_SHM, RCI_SIM_BAR_BYTES, bar_name, true, false, &sc->bar, why, sizeof why);
    if (rc != 0) {
        rci_set_err(err, errlen, "card.%u: simulated BAR: %s", cp->index, why);
        free(sc);
        return rc;
    }
    rc = make_irq_fd(cp, &sc->irq_fd, err, errlen);
    if (rc == 0 && sc->irq_fd >= 0) {
        rc = rci_sim_irq_server_start(cp->shm_name, sc->irq_fd, &sc->irq_server, why, sizeof why);
        if (rc != 0) {
            rci_set_err(err, errlen, "card.%u: %s", cp->index, why);
            close(sc->irq_fd);
        }
    }
    if (rc != 0) {
        rci_mem_unmap(&sc->bar);
        free(sc);
        return rc;
    }
    why[0] = '\0';
    rci_sim_bar_format(sc->bar.addr, cp);
    sc->index = cp->index;
    RCI_SIM_STORE(&rci_sim_priv(sc->bar.addr)->host_pid, (uint64_t)getpid());
    RCI_SIM_STORE(&rci_sim_priv(sc->bar.addr)->host_heartbeat_ns, rci_now_ns());
    sc->card.ops = &shm_card_ops;
    sc->card.impl = sc;
    rci_sim_bar_init_ops(&sc->card.bar, sc->bar.addr);
    /* A warning (a stale object from a killed daemon was replaced) is worth
     * passing on even on success. */
    rci_set_err(err, errlen, "%s", why);
    *out = &sc->card;
    return 0;
}

/* ---- process side (ringcast-sim) -------------------------------------------- */

struct rci_sim_process {
    struct rci_mem_region bar, ring;
    struct rci_sim_fw *fw;
    volatile sig_atomic_t *stop;
    enum rci_sim_exit why;
    int irq_fd;                 /* the daemon's interrupt eventfd, -1: it polls */
    uint64_t next_host_check;
    char last_error[sizeof ((struct rci_sim_priv *)0)->fw_error];
};

static int map_bar(const char *shm_name, struct rci_mem_region *bar, char *ring_name,
                   char *err, size_t errlen)
{
    char bar_name[RCI_MEM_NAME_MAX + 1], why[256] = "";
    int rc = rci_sim_shm_names(shm_name, ring_name, bar_name, err, errlen);
    if (rc != 0)
        return rc;
    rc = rci_mem_map(RCI_MEM_SHM, RCI_SIM_BAR_BYTES, bar_name, false, false, bar, why, sizeof why);
    if (rc != 0) {
        rci_set_err(err, errlen, "simulated BAR /dev/shm/%s: %s", bar_name, why);
        return rc;
    }
    char where[RCI_MEM_NAME_MAX + 16];
    snprintf(where, sizeof where, "/dev/shm/%s", bar_name);
    rc = rci_sim_bar_validate(bar->addr, bar->size, where, err, errlen);
    if (rc != 0)
        rci_mem_unmap(bar);
    return rc;
}

int rci_sim_bar_describe(const char *shm_name, struct rci_card_params *cp, char *err, size_t errlen)
{
    struct rci_mem_region bar = { 0 };
    char ring_name[RCI_MEM_NAME_MAX + 1], name[sizeof cp->shm_name];
    snprintf(name, sizeof name, "%s", shm_name);     /* shm_name may be cp->shm_name */
    int rc = map_bar(name, &bar, ring_name, err, errlen);
    if (rc != 0)
        return rc;
    const struct rci_sim_priv *p = rci_sim_priv(bar.addr);
    cp->type = RCI_CARD_SIM_PROCESS;
    cp->ring_size = p->ring_size;
    cp->block_size = (uint32_t)p->block_size;
    cp->block_format = (enum felix_format)p->block_format;
    cp->tag_base = p->tag_base;
    cp->dma_descriptor = (unsigned)p->descriptor;
    memcpy(cp->shm_name, name, sizeof name);
    rci_mem_unmap(&bar);
    return 0;
}

/* The process's configuration must describe the daemon's card. */
static int check_against_bar(const struct rci_card_params *cp, const struct rci_sim_priv *p,
                             char *err, size_t errlen)
{
    const struct { const char *what; uint64_t mine, daemon; } f[] = {
        { "ring size", cp->ring_size, p->ring_size },
        { "block size", cp->block_size, p->block_size },
        { "block format", (uint64_t)cp->block_format, p->block_format },
        { "tag base", cp->tag_base, p->tag_base },
        { "DMA descriptor", cp->dma_descriptor, p->descriptor },
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].mine != f[i].daemon) {
            rci_set_err(err, errlen, "shm %s: %s %" PRIu64 " differs from the daemon's %" PRIu64,
                    cp->shm_name, f[i].what, f[i].mine, f[i].daemon);
            return -EINVAL;
        }
    }
    return 0;
}

/* One firmware per card: take the claim, or over from a dead process. */
static int claim(struct rci_sim_priv *p, const char *shm_name, char *err, size_t errlen)
{
    uint64_t me = (uint64_t)getpid(), cur = 0;
    while (!__atomic_compare_exchange_n(&p->fw_pid, &cur, me, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
        if (process_alive(cur)) {
            rci_set_err(err, errlen, "shm %s: ringcast-sim pid %" PRIu64 " is already attached",
                    shm_name, cur);
            return -EBUSY;
        }
        /* cur now holds the dead claimant: the next attempt replaces it. */
    }
    /* A fresh heartbeat at once: a dead predecessor's stale one must not
     * make the host think this process hung before its loop runs. */
    RCI_SIM_RELAXED_STORE(&p->fw_heartbeat_ns, rci_now_ns());
    return 0;
}

int rci_sim_card_attach(const struct rci_card_params *cp, const struct rci_sim_params *sp,
                       struct rci_sim_process **out, char *err, size_t errlen)
{
    *out = NULL;
    struct rci_sim_process *proc = calloc(1, sizeof *proc);
    if (!proc) {
        rci_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    char ring_name[RCI_MEM_NAME_MAX + 1], why[256] = "";
    int rc = check_card_params(cp, err, errlen);
    if (rc == 0)
        rc = map_bar(cp->shm_name, &proc->bar, ring_name, err, errlen);
    if (rc != 0) {
        free(proc);
        return rc;
    }
    struct rci_sim_priv *p = rci_sim_priv(proc->bar.addr);
    rc = check_against_bar(cp, p, err, errlen);
    if (rc == 0) {
        rc = rci_mem_map(RCI_MEM_SHM, p->ring_size, ring_name, false, false, &proc->ring, why,
                        sizeof why);
        if (rc != 0)
            rci_set_err(err, errlen, "ring /dev/shm/%s: %s", ring_name, why);
    }
    if (rc == 0)
        rc = claim(p, cp->shm_name, err, errlen);
    if (rc == 0) {
        rc = rci_sim_fw_create(proc->bar.addr, cp, sp, proc->ring.addr, proc->ring.size, &proc->fw,
                              err, errlen);
        if (rc != 0)
            RCI_SIM_STORE(&p->fw_pid, 0);
    }
    proc->irq_fd = -1;
    if (rc == 0) {
        int irc = rci_sim_irq_fetch(cp->shm_name, &proc->irq_fd, err, errlen);
        if (irc == 0)
            rci_sim_fw_set_irq(proc->fw, proc->irq_fd, sp->irq_blocks, sp->irq_timeout_ns);
        else if (irc != -ECONNREFUSED && irc != -ENOENT) {
            rc = irc;                /* the daemon wants interrupts and could not get them */
            rci_sim_fw_destroy(proc->fw);
            RCI_SIM_STORE(&p->fw_pid, 0);
        }
    }
    if (rc != 0) {
        rci_mem_unmap(&proc->ring);
        rci_mem_unmap(&proc->bar);
        free(proc);
        return rc;
    }
    *out = proc;
    return 0;
}

/* The daemon died without closing the card (SIGKILL): its pid is gone and
 * its heartbeat stopped. Both must say so: a pid in another pid namespace
 * looks dead while the heartbeat goes on; a daemon that is only stopped
 * keeps its pid. Checked every HOST_CHECK_NS. */
static bool host_gone(struct rci_sim_process *sp, struct rci_sim_priv *p)
{
    uint64_t now = rci_now_ns();
    if (now < sp->next_host_check)
        return false;
    sp->next_host_check = now + HOST_CHECK_NS;
    uint64_t beat = RCI_SIM_LOAD(&p->host_heartbeat_ns);
    bool silent = now > beat && now - beat > HOST_GONE_NS;
    return silent && !process_alive(RCI_SIM_LOAD(&p->host_pid));
}

static enum rci_sim_loop_cmd process_control(void *ctx, const struct rci_sim_fw *fw)
{
    struct rci_sim_process *sp = ctx;
    struct rci_sim_priv *p = rci_sim_priv(sp->bar.addr);
    if (*sp->stop) {
        sp->why = RCI_SIM_EXIT_SIGNAL;
        return RCI_SIM_LOOP_EXIT;
    }
    if (RCI_SIM_LOAD(&p->host_closed)) {
        sp->why = RCI_SIM_EXIT_HOST_CLOSED;
        return RCI_SIM_LOOP_EXIT;
    }
    if (host_gone(sp, p)) {
        sp->why = RCI_SIM_EXIT_HOST_GONE;
        return RCI_SIM_LOOP_EXIT;
    }
    if (rci_sim_fw_state(fw) == RCI_FW_FINISHED) {
        sp->why = RCI_SIM_EXIT_FINISHED;
        return RCI_SIM_LOOP_EXIT;
    }
    return RCI_SIM_LOAD(&p->run_request) ? RCI_SIM_LOOP_RUN : RCI_SIM_LOOP_PAUSE;
}

enum rci_sim_exit rci_sim_process_run(struct rci_sim_process *p, volatile sig_atomic_t *stop)
{
    p->stop = stop;
    rci_sim_fw_run(p->fw, process_control, p);
    return p->why;
}

void rci_sim_process_get_stats(struct rci_sim_process *p, struct rci_card_stats *s)
{
    rci_sim_bar_read_stats(p->bar.addr, s);
}

const char *rci_sim_process_last_error(struct rci_sim_process *p)
{
    memcpy(p->last_error, rci_sim_priv(p->bar.addr)->fw_error, sizeof p->last_error);
    p->last_error[sizeof p->last_error - 1] = '\0';
    return p->last_error;
}

struct rci_sim_fw *rci_sim_process_fw(struct rci_sim_process *p) { return p->fw; }

void rci_sim_card_detach(struct rci_sim_process *p)
{
    if (!p)
        return;
    struct rci_sim_priv *priv = rci_sim_priv(p->bar.addr);
    RCI_SIM_STORE(&priv->fw_state, (uint64_t)RCI_FW_EXITED);
    uint64_t me = (uint64_t)getpid();
    __atomic_compare_exchange_n(&priv->fw_pid, &me, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    rci_sim_fw_destroy(p->fw);
    if (p->irq_fd >= 0)
        close(p->irq_fd);
    rci_mem_unmap(&p->ring);
    rci_mem_unmap(&p->bar);
    free(p);
}
