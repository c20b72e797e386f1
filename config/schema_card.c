/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_card.c — the [card.N] sections: struct rci_card_params
 * (readout/card_params.h). card.index is N, not a key. Rows follow the pattern
 * described in schema_fabric.c; two-key checks live in check_card() in config.c. */
#include "config/schema.h"

#include <stdio.h>
#include <string.h>

#define T struct rci_card_params
#define S  1000000000ull

static const struct rci_cfg_key card_keys[] = {
    {.key = "type", .type = RCI_CFG_ENUM, .def = "sim", .choices = "sim|sim-process|pcie",
     RCI_CFG_FIELD(T, type),
     .help = "sim: firmware thread in this process; sim-process: a ringcast-sim process (memory = shm);"
             " pcie: a Wupper card through VFIO (device) or a file as BAR0 (bar_file)."},
    {.key = "device", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = RCI_CARD_DEVICE_MAX,
     RCI_CFG_FIELD(T, device),
     .help = "type = pcie: PCI address of the card bound to vfio-pci (DDDD:BB:DD.F, e.g. 0000:41:00.0)."},
    {.key = "bar_file", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = RCI_CARD_PATH_MAX,
     RCI_CFG_FIELD(T, bar_file),
     .help = "type = pcie without a card: this file is BAR0 (created if missing);"
             " `ringcast-sim --bar-file FILE` plays the firmware (memory = shm)."},
    {.key = "tag_base", .type = RCI_CFG_UINT, .def = "auto", .min = 0, .max = UINT64_MAX,
     .flags = RCI_CFG_F_AUTO | RCI_CFG_F_HEX, RCI_CFG_FIELD(T, tag_base),
     .help = "Tag of e-link 0 (tag = tag_base + e-link); auto = N * 65536."},
    {.key = "dma_descriptor", .type = RCI_CFG_UINT, .def = "0", .min = 0, .max = 7,
     RCI_CFG_FIELD(T, dma_descriptor),
     .help = "Wupper DMA descriptor of the ToHost ring."},
    /* at most 4G: the readout's piece offsets into the ring are 32-bit */
    {.key = "ring_size", .type = RCI_CFG_SIZE, .def = "64M", .min = 4096, .max = 4ull << 30,
     RCI_CFG_FIELD(T, ring_size),
     .help = "Bytes of the DMA ring: a multiple of block_size, at least 4 blocks."},
    {.key = "block_size", .type = RCI_CFG_SIZE, .def = "4k", .min = 1024, .max = 65536,
     .multiple = 1024, RCI_CFG_FIELD(T, block_size),
     .help = "Bytes of one FELIX block as the firmware writes it."},
    {.key = "block_format", .type = RCI_CFG_ENUM, .def = "c0ce", .choices = "abcd|abce|c0ce",
     RCI_CFG_FIELD(T, block_format),
     .help = "Block header marker: abcd and abce need block_size = 1k; c0ce any size."},
    {.key = "memory", .type = RCI_CFG_ENUM, .def = "anon", .choices = "anon|hugetlb|shm|hugetlbfs",
     RCI_CFG_FIELD(T, memory),
     .help = "Ring memory: anonymous, 2 MiB huge pages (ring_size a multiple of 2M), POSIX shm,"
             " or hugetlbfs: a shared file on 2 MiB pages in the hugetlbfs mount."},
    {.key = "on_firmware_loss", .type = RCI_CFG_ENUM, .def = "wait", .choices = "wait|stop",
     RCI_CFG_FIELD(T, on_firmware_loss),
     .help = "Firmware died or hung (ringcast-sim killed, or no heartbeat for 3 s): wait = a new"
             " ringcast-sim takes over the running DMA; stop = stop this card."},
    {.key = "shm_name", .type = RCI_CFG_STRING, .def = "auto", .min = 0, .max = RCI_CFG_SHM_NAME_MAX,
     .flags = RCI_CFG_F_AUTO, RCI_CFG_FIELD(T, shm_name),
     .help = "Base name of the card's objects in /dev/shm ([A-Za-z0-9._-]); auto = ringcast-card<N>."},
    {.key = "poll_spin", .type = RCI_CFG_DURATION, .def = "50us", .min = 0, .max = 1 * S,
     RCI_CFG_FIELD(T, poll_spin_ns),
     .help = "The readout thread spins at most this long on an idle ring, and no longer than its last"
             " stretch of work took (poll mode) ..."},
    {.key = "poll_sleep", .type = RCI_CFG_DURATION, .def = "150us", .min = 0, .max = 1 * S,
     RCI_CFG_FIELD(T, poll_sleep_ns),
     .help = "... then sleeps between polls: poll_sleep / 8 after data, doubling up to this."},
    {.key = "wait", .type = RCI_CFG_ENUM, .def = "poll", .choices = "poll|interrupt",
     RCI_CFG_FIELD(T, wait),
     .help = "Idle readout thread: poll (every poll_sleep) or interrupt (sleep until the card's data"
             " interrupt; sim and sim-process cards, see sim.N.irq_blocks)."},
    {.key = "cpus", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 63,
     RCI_CFG_FIELD(T, cpus),
     .help = "Pin this card's readout thread to these CPUs (e.g. 2 or 2,3 or 4-7); empty = not pinned."
             " Best on the card's NUMA node."},
    {.key = "rd_update_bytes", .type = RCI_CFG_SIZE, .def = "1M", .min = 1, .max = 128ull << 30,
     RCI_CFG_FIELD(T, rd_update_bytes),
     .help = "Write the read pointer to the card at the latest every N released bytes; at most ring_size/2."},
    {.key = "max_chunk_size", .type = RCI_CFG_SIZE, .def = "1M", .min = 1, .max = 1ull << 30,
     RCI_CFG_FIELD(T, max_chunk_size),
     .help = "Larger chunks are dropped and counted (oversize)."},
    {.key = "max_chunk_pieces", .type = RCI_CFG_UINT, .def = "64", .min = 1, .max = 65536,
     RCI_CFG_FIELD(T, max_chunk_pieces),
     .help = "Chunks in more pieces (subchunks) are dropped and counted (oversize)."},
    {.key = "max_chunks_in_flight", .type = RCI_CFG_UINT, .def = "65536", .min = 1,
     .max = 1u << 24, RCI_CFG_FIELD(T, max_chunks_in_flight),
     .help = "Chunk descriptors; when all are in flight the readout thread waits."},
    {.key = "fault_readout_hang_after", .type = RCI_CFG_DURATION, .def = "0", .min = 0, .max = 3600 * S,
     RCI_CFG_FIELD(T, fault_hang_after_ns),
     .help = "For tests only: this card's readout thread stops turning its loop this long after it started,"
             " until the daemon stops (the stuck-thread test); 0 = never."},
    {.key = "fault_readout_hang_through_stop", .type = RCI_CFG_BOOL, .def = "false",
     RCI_CFG_FIELD(T, fault_hang_through_stop),
     .help = "For tests only: that hang goes on through the stop, as a thread in a call that never returns."},
};

static const struct rci_cfg_implicit card_implicit[] = {
    {.field = "index", .offset = offsetof(T, index), .size = sizeof(((T *)0)->index),
     .align = _Alignof(__typeof__(((T *)0)->index))},
};

static void card_init(void *params, unsigned index)
{
    ((T *)params)->index = index;
}

static void card_resolve_auto(const struct rci_cfg_key *k, void *params, unsigned index)
{
    T *card = params;
    if (strcmp(k->key, "tag_base") == 0)
        card->tag_base = (uint64_t)index * RCI_CFG_TAG_STRIDE;
    else if (strcmp(k->key, "shm_name") == 0)
        snprintf(card->shm_name, sizeof card->shm_name, "ringcast-card%u", index);
}

const struct rci_cfg_section rci_cfg_section_card = {
    .name = "card",
    .repeated = true,
    .max_instances = RCI_MAX_CARDS,
    .help = "One card, its DMA ring and its readout thread; cards are numbered 0..n-1 without gaps.",
    .keys = card_keys,
    .nkeys = sizeof card_keys / sizeof card_keys[0],
    .implicit = card_implicit,
    .nimplicit = sizeof card_implicit / sizeof card_implicit[0],
    .cfg_offset = offsetof(struct rci_config, card),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
    .resolve_auto = card_resolve_auto,
    .init_instance = card_init,
};
