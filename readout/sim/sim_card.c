/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_card.c — simulated cards as rc_card objects: the in-process card
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

#define STOP_WAIT_NS 1000000000ull   /* rc_card_stop waits this long for a process to pause */
#define FW_HEARTBEAT_TIMEOUT_NS (3ull * 1000000000ull)  /* firmware silent this long: hung */
#define HOST_GONE_NS (1000000000ull)  /* host pid gone and its heartbeat this old: orphaned */
#define HOST_CHECK_NS (100000000ull)  /* ringcast-sim looks at its host this often */


static int check_card_params(const struct rc_card_params *cp, char *err, size_t errlen)
{
    char why[160];
    if (rc_felix_check_format(cp->block_format, cp->block_size, why, sizeof why) != 0) {
        rc_set_err(err, errlen, "card.%u: %s", cp->index, why);
        return -EINVAL;
    }
    if (cp->dma_descriptor >= WUPPER_MAX_DESCRIPTORS) {
        rc_set_err(err, errlen, "card.%u: DMA descriptor %u is not 0..%u", cp->index,
                cp->dma_descriptor, WUPPER_MAX_DESCRIPTORS - 1);
        return -EINVAL;
    }
    return 0;
}

/* ---- in-process card ------------------------------------------------------ */

struct sim_card {
    struct rc_card card;
    uint8_t *bar;                  /* RC_SIM_BAR_BYTES, private to this process */
    struct rc_sim_fw *fw;
    pthread_t thread;
    bool thread_running;
    atomic_bool stop_requested;
    unsigned index;
};

static enum rc_sim_loop_cmd thread_control(void *ctx, const struct rc_sim_fw *fw)
{
    (void)fw;
    struct sim_card *sc = ctx;
    return atomic_load_explicit(&sc->stop_requested, memory_order_acquire) ? RC_SIM_LOOP_EXIT
                                                                           : RC_SIM_LOOP_RUN;
}

static void *firmware_thread(void *arg)
{
    struct sim_card *sc = arg;
    rc_sim_fw_run(sc->fw, thread_control, sc);
    return NULL;
}

static int sim_start(struct rc_card *c)
{
    struct sim_card *sc = c->impl;
    if (sc->thread_running)
        return 0;
    atomic_store(&sc->stop_requested, false);
    RC_SIM_STORE(&rc_sim_priv(sc->bar)->run_request, 1);
    int rc = pthread_create(&sc->thread, NULL, firmware_thread, sc);
    if (rc != 0) {
        RC_SIM_STORE(&rc_sim_priv(sc->bar)->run_request, 0);
        return -rc;
    }
    char name[16];
    snprintf(name, sizeof name, "rc-sim-%u", sc->index % 1000u);
    pthread_setname_np(sc->thread, name);
    sc->thread_running = true;
    return 0;
}

static void sim_stop(struct rc_card *c)
{
    struct sim_card *sc = c->impl;
    if (!sc->thread_running)
        return;
    atomic_store_explicit(&sc->stop_requested, true, memory_order_release);
    pthread_join(sc->thread, NULL);
    sc->thread_running = false;
    RC_SIM_STORE(&rc_sim_priv(sc->bar)->run_request, 0);
    RC_SIM_STORE(&rc_sim_priv(sc->bar)->fw_state, (uint64_t)RC_FW_IDLE);
}

static void sim_get_stats(struct rc_card *c, struct rc_card_stats *s)
{
    struct sim_card *sc = c->impl;
    rc_sim_bar_read_stats(sc->bar, s);
}

static void sim_destroy(struct rc_card *c)
{
    struct sim_card *sc = c->impl;
    sim_stop(c);
    rc_sim_fw_destroy(sc->fw);
    free(sc->bar);
    free(sc);
}

static const struct rc_card_ops sim_card_ops = {
    .kind = "sim",
    .start = sim_start,
    .stop = sim_stop,
    .get_stats = sim_get_stats,
    .destroy = sim_destroy,
};

int rc_sim_card_create(const struct rc_card_params *cp, const struct rc_sim_params *sp,
                       uint8_t *ring, size_t ring_size, struct rc_card **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    int rc = check_card_params(cp, err, errlen);
    if (rc != 0)
        return rc;
    struct sim_card *sc = calloc(1, sizeof *sc);
    uint8_t *bar = aligned_alloc(4096, RC_SIM_BAR_BYTES);
    if (!sc || !bar) {
        free(sc);
        free(bar);
        rc_set_err(err, errlen, "card.%u: out of memory for the simulated card", cp->index);
        return -ENOMEM;
    }
    struct rc_card_params described = *cp;
    described.ring_size = ring_size;
    rc_sim_bar_format(bar, &described);
    rc = rc_sim_fw_create(bar, cp, sp, ring, ring_size, &sc->fw, err, errlen);
    if (rc != 0) {
        free(bar);
        free(sc);
        return rc;
    }
    sc->bar = bar;
    sc->index = cp->index;
    sc->card.ops = &sim_card_ops;
    sc->card.impl = sc;
    rc_sim_bar_init_ops(&sc->card.bar, bar);
    *out = &sc->card;
    return 0;
}

struct rc_sim_fw *rc_sim_card_fw(struct rc_card *c)
{
    return c->ops == &sim_card_ops ? ((struct sim_card *)c->impl)->fw : NULL;
}

/* ---- shared-memory names ---------------------------------------------------- */

int rc_sim_shm_names(const char *base, char ring[RC_MEM_NAME_MAX + 1],
                     char bar[RC_MEM_NAME_MAX + 1], char *err, size_t errlen)
{
    if (!base || !base[0]) {
        rc_set_err(err, errlen, "shm_name is empty: a sim-process card needs one");
        return -EINVAL;
    }
    size_t room = RC_MEM_NAME_MAX + 1;
    int n1 = snprintf(ring, room, "%s%s", base, RC_SIM_SHM_RING_SUFFIX);
    int n2 = snprintf(bar, room, "%s%s", base, RC_SIM_SHM_BAR_SUFFIX);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= room || (size_t)n2 >= room) {
        rc_set_err(err, errlen, "shm_name \"%s\" is too long: with \"%s\" it must fit in %d characters",
                base, RC_SIM_SHM_RING_SUFFIX, RC_MEM_NAME_MAX);
        return -ENAMETOOLONG;
    }
    return 0;
}

/* ---- daemon side of a sim-process card -------------------------------------- */

struct shm_card {
    struct rc_card card;
    struct rc_mem_region bar;
    unsigned index;
    uint64_t watched_pid;       /* the firmware process last seen alive, 0 = none */
    bool hung_reported;         /* its silent heartbeat was reported */
};

static struct rc_sim_priv *shm_priv(struct rc_card *c)
{
    return rc_sim_priv(((struct shm_card *)c->impl)->bar.addr);
}

static bool process_alive(uint64_t pid)
{
    return pid != 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int shm_start(struct rc_card *c)
{
    RC_SIM_STORE(&shm_priv(c)->run_request, 1);
    return 0;
}

static bool fw_writing(uint64_t state)
{
    return state == RC_FW_RUNNING || state == RC_FW_STALLED || state == RC_FW_RATE_LIMITED;
}

static void shm_stop(struct rc_card *c)
{
    struct rc_sim_priv *p = shm_priv(c);
    RC_SIM_STORE(&p->run_request, 0);
    uint64_t deadline = rc_now_ns() + STOP_WAIT_NS;
    while (process_alive(RC_SIM_LOAD(&p->fw_pid)) && fw_writing(RC_SIM_LOAD(&p->fw_state)) &&
           rc_now_ns() < deadline) {
        rc_sleep_ns(1000000);
    }
}

static void shm_get_stats(struct rc_card *c, struct rc_card_stats *s)
{
    rc_sim_bar_read_stats(((struct shm_card *)c->impl)->bar.addr, s);
}

static void shm_destroy(struct rc_card *c)
{
    struct shm_card *sc = c->impl;
    RC_SIM_STORE(&shm_priv(c)->run_request, 0);
    RC_SIM_STORE(&shm_priv(c)->host_closed, 1);
    rc_mem_unmap(&sc->bar);
    free(sc);
}

/* The host's half: its heartbeat. The firmware's: a ringcast-sim that was
 * attached is gone (killed: its pid is dead; or it detached) or alive but
 * silent (stopped, hung). Each loss is reported once; a new process that
 * attaches is watched from then on. */
static int shm_check(struct rc_card *c, char *why, size_t whylen)
{
    struct shm_card *sc = c->impl;
    struct rc_sim_priv *p = shm_priv(c);
    uint64_t now = rc_now_ns();
    RC_SIM_RELAXED_STORE(&p->host_heartbeat_ns, now);
    uint64_t pid = RC_SIM_LOAD(&p->fw_pid);
    uint64_t state = RC_SIM_LOAD(&p->fw_state);
    if (pid != 0 && process_alive(pid)) {
        if (pid != sc->watched_pid) {
            sc->watched_pid = pid;
            sc->hung_reported = false;
        }
        uint64_t beat = RC_SIM_LOAD(&p->fw_heartbeat_ns);
        bool silent = beat != 0 && now > beat && now - beat > FW_HEARTBEAT_TIMEOUT_NS;
        if (!silent || sc->hung_reported || state == RC_FW_FINISHED)
            return RC_CARD_FW_OK;
        sc->hung_reported = true;
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " is alive but its firmware heartbeat is"
                 " %.1f s old (stopped or hung)", pid, (double)(now - beat) / 1e9);
        return RC_CARD_FW_LOST;
    }
    if (sc->watched_pid == 0)
        return RC_CARD_FW_OK;           /* nothing attached yet */
    uint64_t gone = sc->watched_pid;
    sc->watched_pid = 0;
    if (state == RC_FW_FINISHED || RC_SIM_LOAD(&p->stats.finished))
        return RC_CARD_FW_OK;           /* it finished its run and left */
    if (pid == gone)
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " died (killed?) while attached", gone);
    else
        snprintf(why, whylen, "ringcast-sim pid %" PRIu64 " exited before its run was over", gone);
    return RC_CARD_FW_LOST;
}

static const struct rc_card_ops shm_card_ops = {
    .kind = "sim-process",
    .start = shm_start,
    .stop = shm_stop,
    .get_stats = shm_get_stats,
    .destroy = shm_destroy,
    .check = shm_check,
};

int rc_sim_bar_create_shm(const struct rc_card_params *cp, struct rc_card **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    char ring_name[RC_MEM_NAME_MAX + 1], bar_name[RC_MEM_NAME_MAX + 1];
    int rc = check_card_params(cp, err, errlen);
    if (rc == 0)
        rc = rc_sim_shm_names(cp->shm_name, ring_name, bar_name, err, errlen);
    if (rc != 0)
        return rc;
    struct shm_card *sc = calloc(1, sizeof *sc);
    if (!sc) {
        rc_set_err(err, errlen, "card.%u: out of memory", cp->index);
        return -ENOMEM;
    }
    char why[256] = "";
    rc = rc_mem_map(RC_MEM_SHM, RC_SIM_BAR_BYTES, bar_name, true, false, &sc->bar, why, sizeof why);
    if (rc != 0) {
        rc_set_err(err, errlen, "card.%u: simulated BAR: %s", cp->index, why);
        free(sc);
        return rc;
    }
    rc_sim_bar_format(sc->bar.addr, cp);
    sc->index = cp->index;
    RC_SIM_STORE(&rc_sim_priv(sc->bar.addr)->host_pid, (uint64_t)getpid());
    RC_SIM_STORE(&rc_sim_priv(sc->bar.addr)->host_heartbeat_ns, rc_now_ns());
    sc->card.ops = &shm_card_ops;
    sc->card.impl = sc;
    rc_sim_bar_init_ops(&sc->card.bar, sc->bar.addr);
    /* A warning (a stale object from a killed daemon was replaced) is worth
     * passing on even on success. */
    rc_set_err(err, errlen, "%s", why);
    *out = &sc->card;
    return 0;
}

/* ---- process side (ringcast-sim) -------------------------------------------- */

struct rc_sim_process {
    struct rc_mem_region bar, ring;
    struct rc_sim_fw *fw;
    volatile sig_atomic_t *stop;
    enum rc_sim_exit why;
    uint64_t next_host_check;
    char last_error[sizeof ((struct rc_sim_priv *)0)->fw_error];
};

static int map_bar(const char *shm_name, struct rc_mem_region *bar, char *ring_name,
                   char *err, size_t errlen)
{
    char bar_name[RC_MEM_NAME_MAX + 1], why[256] = "";
    int rc = rc_sim_shm_names(shm_name, ring_name, bar_name, err, errlen);
    if (rc != 0)
        return rc;
    rc = rc_mem_map(RC_MEM_SHM, RC_SIM_BAR_BYTES, bar_name, false, false, bar, why, sizeof why);
    if (rc != 0) {
        rc_set_err(err, errlen, "simulated BAR /dev/shm/%s: %s", bar_name, why);
        return rc;
    }
    char where[RC_MEM_NAME_MAX + 16];
    snprintf(where, sizeof where, "/dev/shm/%s", bar_name);
    rc = rc_sim_bar_validate(bar->addr, bar->size, where, err, errlen);
    if (rc != 0)
        rc_mem_unmap(bar);
    return rc;
}

int rc_sim_bar_describe(const char *shm_name, struct rc_card_params *cp, char *err, size_t errlen)
{
    struct rc_mem_region bar = { 0 };
    char ring_name[RC_MEM_NAME_MAX + 1], name[sizeof cp->shm_name];
    snprintf(name, sizeof name, "%s", shm_name);     /* shm_name may be cp->shm_name */
    int rc = map_bar(name, &bar, ring_name, err, errlen);
    if (rc != 0)
        return rc;
    const struct rc_sim_priv *p = rc_sim_priv(bar.addr);
    cp->type = RC_CARD_SIM_PROCESS;
    cp->ring_size = p->ring_size;
    cp->block_size = (uint32_t)p->block_size;
    cp->block_format = (enum felix_format)p->block_format;
    cp->tag_base = p->tag_base;
    cp->dma_descriptor = (unsigned)p->descriptor;
    memcpy(cp->shm_name, name, sizeof name);
    rc_mem_unmap(&bar);
    return 0;
}

/* The process's configuration must describe the daemon's card. */
static int check_against_bar(const struct rc_card_params *cp, const struct rc_sim_priv *p,
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
            rc_set_err(err, errlen, "shm %s: %s %" PRIu64 " differs from the daemon's %" PRIu64,
                    cp->shm_name, f[i].what, f[i].mine, f[i].daemon);
            return -EINVAL;
        }
    }
    return 0;
}

/* One firmware per card: take the claim, or over from a dead process. */
static int claim(struct rc_sim_priv *p, const char *shm_name, char *err, size_t errlen)
{
    uint64_t me = (uint64_t)getpid(), cur = 0;
    while (!__atomic_compare_exchange_n(&p->fw_pid, &cur, me, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
        if (process_alive(cur)) {
            rc_set_err(err, errlen, "shm %s: ringcast-sim pid %" PRIu64 " is already attached",
                    shm_name, cur);
            return -EBUSY;
        }
        /* cur now holds the dead claimant: the next attempt replaces it. */
    }
    /* A fresh heartbeat at once: a dead predecessor's stale one must not
     * make the host think this process hung before its loop runs. */
    RC_SIM_RELAXED_STORE(&p->fw_heartbeat_ns, rc_now_ns());
    return 0;
}

int rc_sim_card_attach(const struct rc_card_params *cp, const struct rc_sim_params *sp,
                       struct rc_sim_process **out, char *err, size_t errlen)
{
    *out = NULL;
    struct rc_sim_process *proc = calloc(1, sizeof *proc);
    if (!proc) {
        rc_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    char ring_name[RC_MEM_NAME_MAX + 1], why[256] = "";
    int rc = check_card_params(cp, err, errlen);
    if (rc == 0)
        rc = map_bar(cp->shm_name, &proc->bar, ring_name, err, errlen);
    if (rc != 0) {
        free(proc);
        return rc;
    }
    struct rc_sim_priv *p = rc_sim_priv(proc->bar.addr);
    rc = check_against_bar(cp, p, err, errlen);
    if (rc == 0) {
        rc = rc_mem_map(RC_MEM_SHM, p->ring_size, ring_name, false, false, &proc->ring, why,
                        sizeof why);
        if (rc != 0)
            rc_set_err(err, errlen, "ring /dev/shm/%s: %s", ring_name, why);
    }
    if (rc == 0)
        rc = claim(p, cp->shm_name, err, errlen);
    if (rc == 0) {
        rc = rc_sim_fw_create(proc->bar.addr, cp, sp, proc->ring.addr, proc->ring.size, &proc->fw,
                              err, errlen);
        if (rc != 0)
            RC_SIM_STORE(&p->fw_pid, 0);
    }
    if (rc != 0) {
        rc_mem_unmap(&proc->ring);
        rc_mem_unmap(&proc->bar);
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
static bool host_gone(struct rc_sim_process *sp, struct rc_sim_priv *p)
{
    uint64_t now = rc_now_ns();
    if (now < sp->next_host_check)
        return false;
    sp->next_host_check = now + HOST_CHECK_NS;
    uint64_t beat = RC_SIM_LOAD(&p->host_heartbeat_ns);
    bool silent = now > beat && now - beat > HOST_GONE_NS;
    return silent && !process_alive(RC_SIM_LOAD(&p->host_pid));
}

static enum rc_sim_loop_cmd process_control(void *ctx, const struct rc_sim_fw *fw)
{
    struct rc_sim_process *sp = ctx;
    struct rc_sim_priv *p = rc_sim_priv(sp->bar.addr);
    if (*sp->stop) {
        sp->why = RC_SIM_EXIT_SIGNAL;
        return RC_SIM_LOOP_EXIT;
    }
    if (RC_SIM_LOAD(&p->host_closed)) {
        sp->why = RC_SIM_EXIT_HOST_CLOSED;
        return RC_SIM_LOOP_EXIT;
    }
    if (host_gone(sp, p)) {
        sp->why = RC_SIM_EXIT_HOST_GONE;
        return RC_SIM_LOOP_EXIT;
    }
    if (rc_sim_fw_state(fw) == RC_FW_FINISHED) {
        sp->why = RC_SIM_EXIT_FINISHED;
        return RC_SIM_LOOP_EXIT;
    }
    return RC_SIM_LOAD(&p->run_request) ? RC_SIM_LOOP_RUN : RC_SIM_LOOP_PAUSE;
}

enum rc_sim_exit rc_sim_process_run(struct rc_sim_process *p, volatile sig_atomic_t *stop)
{
    p->stop = stop;
    rc_sim_fw_run(p->fw, process_control, p);
    return p->why;
}

void rc_sim_process_get_stats(struct rc_sim_process *p, struct rc_card_stats *s)
{
    rc_sim_bar_read_stats(p->bar.addr, s);
}

const char *rc_sim_process_last_error(struct rc_sim_process *p)
{
    memcpy(p->last_error, rc_sim_priv(p->bar.addr)->fw_error, sizeof p->last_error);
    p->last_error[sizeof p->last_error - 1] = '\0';
    return p->last_error;
}

struct rc_sim_fw *rc_sim_process_fw(struct rc_sim_process *p) { return p->fw; }

void rc_sim_card_detach(struct rc_sim_process *p)
{
    if (!p)
        return;
    struct rc_sim_priv *priv = rc_sim_priv(p->bar.addr);
    RC_SIM_STORE(&priv->fw_state, (uint64_t)RC_FW_EXITED);
    uint64_t me = (uint64_t)getpid();
    __atomic_compare_exchange_n(&priv->fw_pid, &me, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    rc_sim_fw_destroy(p->fw);
    rc_mem_unmap(&p->ring);
    rc_mem_unmap(&p->bar);
    free(p);
}
