/* SPDX-License-Identifier: BSD-3-Clause */
/* readout_thread.c — the readout thread: programs the card's DMA over the
 * ring, then polls the write pointer, decodes and gives space back.
 *
 * Adaptive polling: while blocks keep coming the loop spins (a PCIe register
 * read per poll, no syscall); after poll_spin_ns without progress it sleeps
 * poll_sleep_ns between polls, trading latency for an idle core. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>
#include <urcu/arch.h>
#include "common/monotonic.h"
#include "readout/readout_internal.h"

#define IRQ_WAIT_MAX_MS 100   /* safety: a lost interrupt costs at most this; stop kicks */

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

/* Nothing written is unreleased: only the card can bring work. (While
 * chunks are in flight their releases move the read pointer, which must
 * reach the card: keep polling then.) */
static bool ring_idle(const struct rci_readout *r)
{
    return rci_dma_ring_read_pos(r->ring) == rci_dma_ring_written_pos(r->ring);
}

/* Sleep until the card's data interrupt (or a kick from stop / wait_drained,
 * or the safety timeout: an interrupt lost would otherwise stall the ring),
 * then reset the eventfd. A block the card published after the last poll
 * but before this sleep has raised it, or will within its irq timeout. */
static void wait_for_interrupt(struct rci_readout *r)
{
    struct pollfd p = { .fd = r->irq_fd, .events = POLLIN };
    rci_counter_add(&r->st.irq_waits, 1);
    if (poll(&p, 1, IRQ_WAIT_MAX_MS) > 0) {
        uint64_t count;
        if (read(r->irq_fd, &count, sizeof count) == sizeof count)
            rci_counter_add(&r->st.interrupts, 1);
    }
}

/* Wake a thread sleeping in wait_for_interrupt. */
static void kick(struct rci_readout *r)
{
    uint64_t one = 1;
    if (r->irq_fd >= 0 && write(r->irq_fd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is full, the thread wakes anyway */
    }
}

static void *readout_main(void *arg)
{
    struct rci_readout *r = arg;
    uint64_t idle_since = 0;
    while (!atomic_load_explicit(&r->stop_requested, memory_order_acquire)) {
        uint64_t iter = atomic_fetch_add_explicit(&r->loop_iter, 1, memory_order_acq_rel) + 1;
        bool progress = poll_once(r);
        if (rci_readout_drained(r))
            atomic_store_explicit(&r->drained_iter, iter, memory_order_release);
        if (progress) {
            idle_since = 0;
            continue;
        }
        uint64_t now = rci_now_ns();
        if (idle_since == 0)
            idle_since = now;
        if (now - idle_since >= r->p.poll_spin_ns && r->irq_fd >= 0 && ring_idle(r)) {
            wait_for_interrupt(r);
        } else if (now - idle_since >= r->p.poll_spin_ns && r->p.poll_sleep_ns > 0) {
            rci_counter_add(&r->st.sleeps, 1);
            rci_sleep_ns(r->p.poll_sleep_ns);
        } else {
            caa_cpu_relax();
        }
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

void rci_readout_stop(struct rci_readout *r)
{
    if (!r->thread_running)
        return;
    atomic_store_explicit(&r->stop_requested, true, memory_order_release);
    kick(r);
    pthread_join(r->thread, NULL);
    r->thread_running = false;
    rci_readout_cut_open_chunks(r);
    /* Whatever was released meanwhile goes back to the card. */
    rci_readout_update_read(r, true, true);
    rci_wupper_dma_stop(&r->dma);
    r->dma_active = false;
}

int rci_readout_wait_drained(struct rci_readout *r, uint64_t timeout_ns)
{
    if (!r->thread_running)
        return -EINVAL;
    /* Iteration `start` may have begun before this call; a later one has not. */
    uint64_t start = atomic_load_explicit(&r->loop_iter, memory_order_acquire);
    uint64_t deadline = rci_now_ns() + timeout_ns;
    kick(r);
    while (atomic_load_explicit(&r->drained_iter, memory_order_acquire) <= start) {
        if (rci_now_ns() >= deadline)
            return -ETIMEDOUT;
        rci_sleep_ns(100000);
    }
    return 0;
}
