/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_thread.c — the readout thread: programs the card's DMA over the
 * ring, then polls the write pointer, decodes and gives space back.
 *
 * Adaptive polling: while blocks keep coming the loop spins (a PCIe register
 * read per poll, no syscall); after poll_spin_ns without progress it sleeps
 * poll_sleep_ns between polls, trading latency for an idle core. With
 * card.N.wait = interrupt it sleeps on the card's interrupt instead whenever
 * only the card can bring the next work (only_card_brings_work), and spins
 * first only while spinning pays (idle_on_interrupt).
 *
 * Poll mode's sleeps between polls grow: the first after data is poll_sleep / 8,
 * each next one doubles up to poll_sleep (a card writing at a moderate rate
 * brings its next block soon: found within a fraction of poll_sleep; an idle
 * card costs a few wake-ups more per block). The thread's timer slack is
 * 1 us instead of the kernel's 50 us, which each sleep would otherwise add.
 *
 * Poll mode spins no longer than its last stretch of work took (and at most
 * poll_spin): a card writing every 50-100 us kept the thread spinning in
 * every gap, up to a core of spin for a few us of decoding per block, and on
 * a machine with fewer cores than busy threads that core was the publisher's
 * and the subscriber's (tools/README.md, "Latency at half the maximum rate:
 * the CPU it takes"). Spinning at most as long as the work bounds the spin's
 * CPU by the work's, whatever the rate. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <urcu/arch.h>
#include "common/monotonic.h"
#include "common/thread_watch.h"
#include "readout/readout_internal.h"

#define IRQ_WAIT_MAX_MS 100   /* safety: a lost interrupt costs at most this; stop kicks */
/* An interrupt that ends a wait within this many poll_spin periods means the
 * card writes densely: spin again before the next wait. */
#define IRQ_DENSE_SPINS 4u
#define POLL_SLEEP_FIRST_DIV 8u      /* the first sleep after data: poll_sleep / 8 */
#define READOUT_TIMER_SLACK_NS 1000ul

/* One poll: read the write pointer, decode, give space back. True if
 * anything moved (new blocks, chunks emitted, read pointer written). */
static bool poll_once(struct rci_readout *r)
{
    rci_counter_add(&r->st.polls, 1);
    uint64_t written = rci_wupper_dma_poll(&r->dma);
    if (r->dma.bad_status != rci_counter_get(&r->st.card_bad_status))   /* rare: store only on change */
        rci_counter_set(&r->st.card_bad_status, r->dma.bad_status);
    if (r->dma.status_lagging != rci_counter_get(&r->st.card_status_lagging))
        rci_counter_set(&r->st.card_status_lagging, r->dma.status_lagging);
    rci_dma_ring_note_written(r->ring, written);
    bool took, more;
    unsigned emitted = rci_readout_decode_pass(r, &took, &more);
    uint64_t rd_before = r->rd_sent;
    rci_readout_update_read(r, !took, false);
    return took || more || emitted > 0 || r->rd_sent != rd_before;
}

/* Nothing written is unreleased: only the card can bring work. */
static bool ring_idle(const struct rci_readout *r)
{
    return rci_dma_ring_read_pos(r->ring) == rci_dma_ring_written_pos(r->ring);
}

/* Interrupt mode: the next thing worth a poll is the card's. Everything it
 * wrote is decoded and the sink took it (a block or chunk held over waits for
 * the descriptor pool or the sink, not for the card), and the card has at
 * least half the ring free. Chunks still in flight then need no watching:
 * their releases give back room the card does not need yet, and reach it with
 * the poll the card's next interrupt brings (it raises one for the blocks it
 * writes, within its moderation timeout, so it cannot fill the other half
 * unseen). A drain waiter wants every release seen: then only an empty ring
 * counts. */
static bool only_card_brings_work(const struct rci_readout *r)
{
    if (r->cur.active || r->nburst > 0)
        return false;
    uint64_t written = rci_dma_ring_written_pos(r->ring);
    if (written - atomic_load_explicit(&r->st.taken, memory_order_relaxed) >= r->p.block_size)
        return false;
    if (atomic_load_explicit(&r->drain_waiters, memory_order_acquire) > 0)
        return ring_idle(r);
    return written - r->rd_sent <= r->ring_size / 2;
}

/* Sleep until the card's data interrupt (or a kick from stop / wait_drained,
 * or the safety timeout: an interrupt lost would otherwise stall the ring),
 * then reset the eventfd. A block the card published after the last poll
 * but before this sleep has raised it, or will within its irq timeout.
 * Returns true if an interrupt (or a kick) ended the sleep. */
static bool wait_for_interrupt(struct rci_readout *r)
{
    struct pollfd p = { .fd = r->irq_fd, .events = POLLIN };
    rci_counter_add(&r->st.irq_waits, 1);
    if (poll(&p, 1, IRQ_WAIT_MAX_MS) > 0) {
        uint64_t count;
        if (read(r->irq_fd, &count, sizeof count) == sizeof count) {
            rci_counter_add(&r->st.interrupts, 1);
            return true;
        }
    }
    return false;
}

/* Wake a thread sleeping in wait_for_interrupt. */
static void kick(struct rci_readout *r)
{
    uint64_t one = 1;
    if (r->irq_fd >= 0 && write(r->irq_fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is full, the thread wakes anyway */
    }
}

/* Interrupt mode, nothing to poll for: sleep on the interrupt. Spinning
 * first (poll_spin) pays only while the card writes densely; at a low rate it
 * is most of the idle thread's CPU. So the thread spins only while the last
 * spin found data or the last interrupt came within IRQ_DENSE_SPINS spin
 * periods of going to sleep. Returns true if it went to sleep (false: keep
 * spinning). */
static bool idle_on_interrupt(struct rci_readout *r, uint64_t idle_for)
{
    if (r->irq_spin && idle_for < r->p.poll_spin_ns)
        return false;
    r->irq_spin = false;   /* this spin (if any) found nothing */
    uint64_t t0 = rci_now_ns();
    if (wait_for_interrupt(r) && rci_now_ns() - t0 < IRQ_DENSE_SPINS * r->p.poll_spin_ns)
        r->irq_spin = true;
    return true;
}

/* Poll mode: the sleep before the next poll, growing from poll_sleep / 8
 * after data to poll_sleep. Interrupt mode polls only for what is not the
 * card's (the sink, the pool, a drain): poll_sleep, few wake-ups. */
static uint64_t next_poll_sleep(struct rci_readout *r)
{
    uint64_t max = r->p.poll_sleep_ns;
    if (r->irq_fd >= 0)
        return max;
    uint64_t ns = r->poll_sleep_next ? r->poll_sleep_next : max / POLL_SLEEP_FIRST_DIV;
    if (ns == 0)
        ns = max;
    r->poll_sleep_next = ns * 2 < max ? ns * 2 : max;
    return ns;
}

/* How long an idle poll-mode thread spins before it sleeps: as long as its
 * last stretch of work took (busy_ns), at most poll_spin. Interrupt mode's
 * polls (sink, pool, drain) keep poll_spin: their spin is no gap between
 * blocks. */
static uint64_t spin_limit(const struct rci_readout *r, uint64_t busy_ns)
{
    if (r->irq_fd >= 0 || busy_ns > r->p.poll_spin_ns)
        return r->p.poll_spin_ns;
    return busy_ns;
}

/* Nothing moved in the last poll; the thread's last stretch of work took
 * busy_ns. Returns true if the thread slept (the next poll starts a new
 * idle period). */
static bool idle_step(struct rci_readout *r, uint64_t idle_since, uint64_t now, uint64_t busy_ns)
{
    uint64_t idle_for = now - idle_since;
    if (r->irq_fd >= 0 && only_card_brings_work(r))
        return idle_on_interrupt(r, idle_for);
    if (idle_for >= spin_limit(r, busy_ns) && r->p.poll_sleep_ns > 0) {
        rci_counter_add(&r->st.sleeps, 1);
        rci_sleep_ns(next_poll_sleep(r));
        return false;   /* still idle: the spin is over */
    }
    caa_cpu_relax();
    return false;
}

/* card.N.fault_readout_hang_after (tests only): a stuck readout thread, as a
 * call that does not return would leave it; it comes back only for the stop,
 * or with fault_readout_hang_through_stop never. Its loop counter stands still,
 * which is what the daemon's stuck-thread watch looks at. */
static void hang_for_test(struct rci_readout *r)
{
    while (r->p.fault_hang_through_stop || !atomic_load_explicit(&r->stop_requested, memory_order_acquire))
        rci_sleep_ns(10ull * 1000 * 1000);
}

static bool time_to_hang(const struct rci_readout *r, uint64_t hang_at, uint64_t now)
{
    return hang_at != 0 && now != 0 && now >= hang_at && !atomic_load(&r->stop_requested);
}

static void *readout_main(void *arg)
{
    struct rci_readout *r = arg;
    uint64_t idle_since = 0;
    uint64_t busy_since = 0, busy_ns = 0;   /* the current (last) stretch of polls that found work */
    r->irq_spin = true;
    r->poll_sleep_next = 0;
    /* Sleeps of tens of microseconds: the default slack (50 us) would add
     * up to half a poll_sleep to each (a failure keeps the default). */
    (void)prctl(PR_SET_TIMERSLACK, READOUT_TIMER_SLACK_NS, 0, 0, 0);
    uint64_t hang_at = r->p.fault_hang_after_ns ? rci_now_ns() + r->p.fault_hang_after_ns : 0;
    while (!atomic_load_explicit(&r->stop_requested, memory_order_acquire)) {
        uint64_t iter = atomic_fetch_add_explicit(&r->loop_iter, 1, memory_order_acq_rel) + 1;
        /* A clock read only where a stretch of work may begin: not on every
         * poll of a busy stretch. */
        uint64_t poll_start = busy_since == 0 ? rci_now_ns() : 0;
        if (time_to_hang(r, hang_at, poll_start)) {
            hang_for_test(r);
            break;
        }
        bool progress = poll_once(r);
        if (rci_readout_drained(r))
            atomic_store_explicit(&r->drained_iter, iter, memory_order_release);
        if (progress) {
            if (idle_since != 0 && r->irq_fd >= 0)
                r->irq_spin = true;   /* a spin (or a poll_sleep) found data */
            if (busy_since == 0)
                busy_since = poll_start;
            idle_since = 0;
            r->poll_sleep_next = 0;
            continue;
        }
        uint64_t now = rci_now_ns();
        if (busy_since != 0) {   /* the stretch of work ended with this poll */
            busy_ns = now - busy_since;
            busy_since = 0;
        }
        if (idle_since == 0)
            idle_since = now;
        if (idle_step(r, idle_since, now, busy_ns))
            idle_since = 0;
    }
    return NULL;
}

int rci_readout_start(struct rci_readout *r)
{
    if (!r->card || r->thread_used)
        return -EINVAL;
    /* The card's positions start at 0 with the descriptor: so must the ring's. */
    if (rci_dma_ring_written_pos(r->ring) != 0 || atomic_load(&r->st.taken) != 0)
        return -EINVAL;
    /* START/END are bus addresses: an IOVA for a card behind an IOMMU. */
    uint64_t bus = rci_card_bus_address(r->card, r->ring_base);
    if (bus == UINT64_MAX)
        return -EFAULT;
    int rc = rci_wupper_dma_start(&r->dma, &r->card->bar, r->p.dma_descriptor, bus, r->ring_size);
    if (rc != 0)
        return rc;
    r->dma_active = true;
    r->rd_sent = 0;
    rc = rci_card_start(r->card);
    if (rc != 0) {
        rci_wupper_dma_stop(&r->dma);
        r->dma_active = false;
        return rc;
    }
    atomic_store(&r->stop_requested, false);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (r->pinned)   /* the thread starts on its CPUs (and its first pages land on their node) */
        pthread_attr_setaffinity_np(&attr, sizeof r->cpuset, &r->cpuset);
    rc = pthread_create(&r->thread, &attr, readout_main, r);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        rci_card_stop(r->card);
        rci_wupper_dma_stop(&r->dma);
        r->dma_active = false;
        return -rc;
    }
    char name[16];
    snprintf(name, sizeof name, "rc-readout-%u", r->p.index % 1000u);
    pthread_setname_np(r->thread, name);
    r->thread_running = true;
    r->thread_used = true;
    return 0;
}

static uint64_t readout_heartbeat(const void *ctx)
{
    return atomic_load_explicit(&((const struct rci_readout *)ctx)->loop_iter, memory_order_relaxed);
}

void rci_readout_stop(struct rci_readout *r)
{
    (void)rci_readout_stop_bounded(r, 0);
}

int rci_readout_stop_bounded(struct rci_readout *r, uint64_t stuck_after_ns)
{
    if (!r->thread_running)
        return r->thread_abandoned ? -ETIMEDOUT : 0;
    atomic_store_explicit(&r->stop_requested, true, memory_order_release);
    kick(r);
    if (!rci_thread_join_unless_stuck(r->thread, readout_heartbeat, r, stuck_after_ns)) {
        r->thread_abandoned = true;
        return -ETIMEDOUT;
    }
    r->thread_running = false;
    rci_readout_cut_open_chunks(r);
    /* Whatever was released meanwhile goes back to the card. */
    rci_readout_update_read(r, true, true);
    rci_wupper_dma_stop(&r->dma);
    r->dma_active = false;
    return 0;
}

int rci_readout_wait_drained(struct rci_readout *r, uint64_t timeout_ns)
{
    if (!r->thread_running)
        return -EINVAL;
    /* Iteration `start` may have begun before this call; a later one has not. */
    uint64_t start = atomic_load_explicit(&r->loop_iter, memory_order_acquire);
    uint64_t deadline = rci_now_ns() + timeout_ns;
    /* Before the kick: the woken thread then watches the releases (polls)
     * instead of sleeping on the interrupt while chunks are in flight. */
    atomic_fetch_add_explicit(&r->drain_waiters, 1, memory_order_acq_rel);
    kick(r);
    int rc = 0;
    while (atomic_load_explicit(&r->drained_iter, memory_order_acquire) <= start) {
        if (rci_now_ns() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        rci_sleep_ns(100000);
    }
    atomic_fetch_sub_explicit(&r->drain_waiters, 1, memory_order_acq_rel);
    return rc;
}
