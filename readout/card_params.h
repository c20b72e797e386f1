/* SPDX-License-Identifier: BSD-3-Clause */
/* card_params.h — settings of one card, its DMA ring and its readout thread.
 * Filled by config/ from the [card.N] section; see `ringcast-readout --help-config`. */
#ifndef RCI_CARD_PARAMS_H
#define RCI_CARD_PARAMS_H
#include <stdbool.h>
#include <stdint.h>
#include "dma/dma_mem.h"
#include "readout/felix_block.h"

enum rci_card_type {
    RCI_CARD_SIM = 0,        /* simulated card: firmware thread in this process */
    RCI_CARD_SIM_PROCESS,    /* simulated card: ringcast-sim process attached via shm */
    RCI_CARD_PCIE            /* a Wupper PCIe card: BAR0 through VFIO (device), or a file
                                mapped as BAR0 that `ringcast-sim --bar-file` serves (bar_file) */
};

#define RCI_CARD_DEVICE_MAX   15   /* "0000:41:00.0" is 12 */
#define RCI_CARD_PATH_MAX    180   /* a key = value line holds at most 200 characters */

enum rci_card_wait {
    RCI_WAIT_POLL = 0,       /* an idle readout thread polls every poll_sleep */
    RCI_WAIT_INTERRUPT       /* an idle readout thread sleeps until the card's data interrupt */
};

enum rci_fw_loss_policy {
    RCI_FW_LOSS_WAIT = 0,    /* keep the card: a new ringcast-sim takes over the running DMA */
    RCI_FW_LOSS_STOP         /* stop the card cleanly; the others go on */
};

struct rci_card_params {
    unsigned index;                /* N of [card.N] */
    enum rci_card_type type;
    uint64_t tag_base;             /* default: index * 65536 */
    unsigned dma_descriptor;       /* Wupper descriptor number 0..7 */
    uint64_t ring_size;            /* bytes, multiple of block_size */
    uint32_t block_size;           /* 1 KiB .. 64 KiB, multiple of 1 KiB */
    enum felix_format block_format;/* abcd / abce need 1 KiB blocks */
    enum rci_mem_backend memory;
    char shm_name[64];             /* base name for shm objects (sim-process) */
    char device[RCI_CARD_DEVICE_MAX + 1];   /* pcie: PCI address DDDD:BB:DD.F ("" = none) */
    char bar_file[RCI_CARD_PATH_MAX + 1];   /* pcie: a file mapped as BAR0 instead ("" = none) */
    /* readout thread */
    uint64_t poll_spin_ns;         /* spin at most this long on an idle ring (poll mode: no longer
                                      than the last stretch of work took) ... */
    uint64_t poll_sleep_ns;        /* ... then sleep this long between polls */
    enum rci_card_wait wait;       /* poll, or sleep on the card's interrupt when the ring is empty */
    char cpus[64];                 /* the readout thread's CPUs ("2,3", "4-7"); "" = not pinned */
    uint64_t rd_update_bytes;      /* batch RD_POINTER writes: at most every N bytes released */
    uint32_t max_chunk_size;       /* larger chunks are dropped and counted (oversize) */
    uint32_t max_chunk_pieces;     /* more pieces: dropped and counted (oversize) */
    uint32_t max_chunks_in_flight; /* descriptor pool; when empty the reader waits */
    enum rci_fw_loss_policy on_firmware_loss;  /* what the daemon does when the firmware dies */
    uint64_t fault_hang_after_ns;  /* tests only: the readout thread stops turning its loop this long
                                      after it started (0 = never) ... */
    bool fault_hang_through_stop;  /* ... and does not come back for the stop either */
};

#endif
