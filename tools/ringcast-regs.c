/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-regs — a read-only dump of a Wupper card's DMA registers while the
 * daemon runs it: the enable bits, each descriptor's START, END, CTRL and
 * RD_POINTER, its status (CURRENT_ADDRESS, EVEN_DMA, EVEN_PC, DESC_DONE) and
 * how far the card is ahead of the host's read pointer. BAR0 is mapped
 * PROT_READ from a real card's sysfs resource0 (--pci), a pcie card's BAR
 * file (--bar-file) or a sim-process card's shm BAR (--shm); nothing is ever
 * written. Exit status: 0, 1 the BAR cannot be mapped, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readout/card_bar.h"
#include "readout/wupper_regs.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringcast-regs --pci DDDD:BB:DD.F | --bar-file PATH | --shm NAME\n"
            "\n"
            "Read-only dump of a Wupper card's DMA registers (BAR0, mapped PROT_READ):\n"
            "DESC_ENABLE and, per descriptor, START, END, CTRL (NUM_WORDS, WRAP_AROUND,\n"
            "direction), RD_POINTER, the status (CURRENT_ADDRESS, EVEN_DMA, EVEN_PC,\n"
            "DESC_DONE) and the bytes the card is ahead of RD_POINTER.\n"
            "\n"
            "  --pci ADDR       a real card: /sys/bus/pci/devices/ADDR/resource0 (root)\n"
            "  --bar-file PATH  a pcie card's card.N.bar_file\n"
            "  --shm NAME       a sim-process card: /dev/shm/NAME-bar (card.N.shm_name)\n"
            "\n"
            "Exit status: 0, 1 the BAR cannot be mapped, 2 usage error.\n");
}

/* Bytes written and not yet given back, from the positions and parities
 * (readout/README.md, "Positions and the two parity bits"). */
static uint64_t ahead(uint64_t start, uint64_t end, uint64_t rd, uint64_t cur, uint64_t bits)
{
    uint64_t size = end - start;
    if (end <= start || cur < start || cur >= end || rd < start || rd >= end)
        return UINT64_MAX;
    bool same_lap = !(bits & WUPPER_STATUS_EVEN_DMA) == !(bits & WUPPER_STATUS_EVEN_PC);
    uint64_t w = cur - start, r = rd - start;
    return same_lap ? w - r : size - r + w;
}

static void dump(const struct rci_bar *bar, const char *what)
{
    uint64_t en = rci_bar_read64(bar, WUPPER_DESC_ENABLE);
    printf("%s\nDMA_DESC_ENABLE 0x%02" PRIx64 "\n", what, en & 0xff);
    printf("desc enabled START              END                CTRL   words wrap dir      "
           "RD_POINTER         CURRENT_ADDRESS    EVEN_DMA EVEN_PC DONE ahead\n");
    for (unsigned n = 0; n < WUPPER_MAX_DESCRIPTORS; n++) {
        uint64_t start = rci_bar_read64(bar, WUPPER_DESC_START(n));
        uint64_t end = rci_bar_read64(bar, WUPPER_DESC_END(n));
        uint64_t ctrl = rci_bar_read64(bar, WUPPER_DESC_CTRL(n));
        uint64_t rd = rci_bar_read64(bar, WUPPER_DESC_RD_POINTER(n));
        uint64_t cur, bits;
        rci_bar_read128(bar, WUPPER_STATUS(n), &cur, &bits);
        uint64_t a = ahead(start, end, rd, cur, bits);
        char ahead_s[24] = "-";
        if (a != UINT64_MAX)
            snprintf(ahead_s, sizeof ahead_s, "%" PRIu64, a);
        printf("%-4u %-7s 0x%016" PRIx64 " 0x%016" PRIx64 " 0x%04" PRIx64 " %5" PRIu64 " %-4s %-8s"
               " 0x%016" PRIx64 " 0x%016" PRIx64 " %-8u %-7u %-4u %s\n",
               n, (en >> n) & 1 ? "yes" : "no", start, end, ctrl & 0xffff,
               (uint64_t)(ctrl & WUPPER_CTRL_NUM_WORDS_MASK), ctrl & WUPPER_CTRL_WRAP_AROUND ? "yes" : "no",
               ctrl & WUPPER_CTRL_READ_WRITE ? "FromHost" : "ToHost", rd, cur,
               (unsigned)!!(bits & WUPPER_STATUS_EVEN_DMA), (unsigned)!!(bits & WUPPER_STATUS_EVEN_PC),
               (unsigned)!!(bits & WUPPER_STATUS_DESC_DONE), ahead_s);
    }
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pci", required_argument, NULL, 'p'}, {"bar-file", required_argument, NULL, 'b'},
        {"shm", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    char path[512] = "";
    int c, given = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/resource0", optarg); given++; break;
        case 'b': snprintf(path, sizeof path, "%s", optarg); given++; break;
        case 's': snprintf(path, sizeof path, "/dev/shm/%s-bar", optarg); given++; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (given != 1 || optind < argc) {
        usage(stderr);
        return 2;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size < (off_t)WUPPER_BAR0_SIZE)) {
        fprintf(stderr, "ringcast-regs: %s: %s\n", path, fd < 0 ? strerror(errno) : "smaller than the register map");
        return 1;
    }
    void *m = mmap(NULL, WUPPER_BAR0_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "ringcast-regs: mmap %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct rci_bar bar;
    rci_bar_init_mmio(&bar, m);   /* reads only: read64 and read128 never write */
    dump(&bar, path);
    munmap(m, WUPPER_BAR0_SIZE);
    return 0;
}
