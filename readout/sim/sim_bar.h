/* SPDX-License-Identifier: BSD-3-Clause */
/* sim_bar.h — internal to readout/: the simulated card's BAR, a memory
 * region shared by the host side (through rci_bar accessors) and the
 * simulated firmware (thread or ringcast-sim process).
 *
 *   [0x0000, 0x1000)  Wupper BAR0 registers, 64-bit words at their offsets
 *   [0x1000, 0x2000)  simulator-private page (struct rci_sim_priv): not part of
 *                     the Wupper map; no real card has it.
 *
 * Register writes are events in hardware; the sim BAR's write64 carries out
 * the firmware's reaction in the writer's context (see sim_bar.c). The status
 * register DMA_DESC_STATUS_n is guarded by a per-descriptor seqlock in the
 * private page: writers (firmware publishing CURRENT_ADDRESS/EVEN_DMA, host
 * enable and reset events) take it exclusively, readers (read128) retry
 * until they saw no writer. See readout/README.md ("Simulated card").
 */
#ifndef RCI_SIM_BAR_H
#define RCI_SIM_BAR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/monotonic.h"
#include "readout/card_bar.h"
#include "readout/card_params.h"
#include "readout/wupper_regs.h"

#define RCI_SIM_BAR_MAGIC    0x5241425f4d495352ull   /* "RSIM_BAR" little-endian */
#define RCI_SIM_BAR_VERSION  2u
#define RCI_SIM_PRIV_OFFSET  WUPPER_BAR0_SIZE
#define RCI_SIM_BAR_BYTES    (RCI_SIM_PRIV_OFFSET + 0x1000u)

/* What the firmware is doing, for the daemon and the ringcast-sim summary. */
enum rci_sim_fw_state {
    RCI_FW_NONE = 0,        /* no firmware attached (sim-process card, before attach) */
    RCI_FW_IDLE,            /* waiting: descriptor not enabled, or paused by rci_card_stop */
    RCI_FW_RUNNING,         /* writing blocks */
    RCI_FW_STALLED,         /* ring full: waiting for the host's RD_POINTER */
    RCI_FW_RATE_LIMITED,    /* waiting for the rate limiter */
    RCI_FW_FINISHED,        /* run length reached (or replay played once) */
    RCI_FW_REFUSED,         /* the descriptor programming is unusable (fw_error says why) */
    RCI_FW_EXITED           /* the ringcast-sim process has detached */
};

struct rci_sim_desc_priv {
    uint64_t seq;               /* seqlock over DMA_DESC_STATUS_n: odd while written */
    uint64_t host_read_total;   /* monotonic bytes the host gave back via RD_POINTER */
    uint64_t run_gen;           /* bumped by an enable rising edge and by DMA_RESET */
    uint64_t bad_rd_writes;     /* RD_POINTER writes outside [START, END): ignored */
    uint64_t reserved[4];
};

/* Everything the firmware counts; written by the firmware only (relaxed
 * atomic stores), read by anyone. */
struct rci_sim_priv_stats {
    uint64_t chunks_produced, bytes_produced, blocks_written;
    uint64_t stall_ns, stall_events;
    uint64_t injected_truncated, injected_crc, injected_malformed, injected_seqskip;
    uint64_t replay_loops;
    uint64_t host_errors;       /* refused programming + host read beyond written */
    uint64_t finished;
    uint64_t write_total;       /* monotonic bytes written in the current run */
    uint64_t reserved[3];
};

struct rci_sim_priv {
    uint64_t magic, version, bar_bytes;
    /* The card as its creator configured it; an attaching process checks
     * its own configuration against these. */
    uint64_t ring_size, block_size, block_format, tag_base, descriptor;
    /* control */
    uint64_t run_request;       /* rci_card_start = 1 / rci_card_stop = 0 */
    uint64_t host_closed;       /* the creator destroyed the card */
    uint64_t fw_pid;            /* attached ringcast-sim process, 0 = none */
    uint64_t fw_state;          /* enum rci_sim_fw_state */
    uint64_t lock_steals;       /* seqlock taken over from a writer that held it > 100 ms */
    uint64_t torn_reads;        /* read128 gave up waiting for a stable status */
    char fw_error[192];         /* last reason the firmware refused to run */
    struct rci_sim_desc_priv desc[WUPPER_MAX_DESCRIPTORS];
    struct rci_sim_priv_stats stats;
    /* liveness, both ways (see readout/README.md, "A firmware that dies") */
    uint64_t fw_heartbeat_ns;   /* CLOCK_MONOTONIC, written by the firmware loop every pass */
    uint64_t host_pid;          /* the daemon that created the BAR */
    uint64_t host_heartbeat_ns; /* CLOCK_MONOTONIC, written by the daemon every tick */
    uint64_t fw_armed_gen;      /* run_gen the firmware last armed: a successor adopts it */
};

_Static_assert(offsetof(struct rci_sim_priv, fw_heartbeat_ns) == 0x3b0 &&
                   offsetof(struct rci_sim_priv, fw_armed_gen) == 0x3c8,
               "liveness words moved: update readout/README.md (simulator-private page)");
_Static_assert(sizeof(struct rci_sim_priv) <= RCI_SIM_BAR_BYTES - RCI_SIM_PRIV_OFFSET,
               "private page overflows the simulated BAR");

static inline uint64_t *rci_sim_reg(uint8_t *bar, uint32_t off) { return (uint64_t *)(bar + off); }
static inline struct rci_sim_priv *rci_sim_priv(uint8_t *bar)
{
    return (struct rci_sim_priv *)(bar + RCI_SIM_PRIV_OFFSET);
}

#define RCI_SIM_LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define RCI_SIM_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define RCI_SIM_RELAXED_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* Zero the region and write the private page header for card cp. */
void rci_sim_bar_format(uint8_t *bar, const struct rci_card_params *cp);
/* 0 if bar (of size bytes) has a private page header of this version, else
 * -EPROTO with the reason in err (named after where, e.g. the shm object). */
int  rci_sim_bar_validate(uint8_t *bar, size_t size, const char *where, char *err, size_t errlen);
/* Host-side accessors over the region. */
void rci_sim_bar_init_ops(struct rci_bar *b, uint8_t *bar);

/* Status seqlock, writer side (exclusive among writers). lock returns the
 * odd sequence value it set; pass it to unlock. A writer that held the lock
 * for more than 100 ms is taken to be dead (a killed process) and the lock
 * is taken over (counted in lock_steals). */
uint64_t rci_sim_status_lock(uint8_t *bar, unsigned desc);
void     rci_sim_status_unlock(uint8_t *bar, unsigned desc, uint64_t locked);

/* The library uses rci_now_ns() (common/monotonic.h); this name stays for the
 * unit tests that time the simulated card with it. */
static inline uint64_t rci_sim_now_ns(void) { return rci_now_ns(); }
void     rci_sim_cpu_relax(void);

/* rci_card_stats from the private page. */
struct rci_card_stats;
void rci_sim_bar_read_stats(uint8_t *bar, struct rci_card_stats *s);

#endif
