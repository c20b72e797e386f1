/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-doctor — checks a host before its first run: IOMMU, VFIO and the
 * cards, hugepages per NUMA node, the memlock limit, the libfabric provider,
 * the CPU frequency governor and NUMA placement. Each check is PASS, WARN or
 * FAIL with the fix to apply; exit 0 when nothing FAILed, 1 otherwise, 2 on a
 * usage or configuration error. Read-only: it opens a VFIO group only to see
 * whether another process holds it, and closes it at once.
 *
 * What a real card needs (IOMMU, VFIO, the card) FAILs when the configuration
 * has a card.N.device or when no configuration is given (the host is being
 * prepared for a card), and is a WARN for a configuration of simulated cards
 * only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <rdma/fabric.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/cpus.h"
#include "common/symlink.h"
#include "config/config.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define MAX_CHECKS 64
#define MAX_OVERRIDES 64
#define MAX_NODES 64
#define HUGE_2M (2ull << 20)
#define CERN_PCI_VENDOR 0x10dc   /* FELIX / Wupper cards */

enum status { PASS, WARN, FAIL };
static const char *const status_name[] = { "PASS", "WARN", "FAIL" };

struct check {
    char name[48];
    enum status status;
    char detail[512];
    char fix[512];
};

static struct check checks[MAX_CHECKS];
static unsigned nchecks;

static void __attribute__((format(printf, 4, 5)))
add(const char *name, enum status st, const char *fix, const char *fmt, ...)
{
    if (nchecks >= MAX_CHECKS)
        return;
    struct check *c = &checks[nchecks++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->status = st;
    snprintf(c->fix, sizeof c->fix, "%s", st == PASS || !fix ? "" : fix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

/* ---- small sysfs helpers ------------------------------------------------------------ */

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    if (!fgets(buf, (int)len, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static long read_long(const char *path, long dflt)
{
    char buf[64];
    if (read_line(path, buf, sizeof buf) != 0 || !buf[0])
        return dflt;
    return strtol(buf, NULL, 0);
}

static unsigned count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    unsigned n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ---- the configuration's needs -------------------------------------------------------- */

static struct rci_config cfg;
static bool have_config;

static bool config_wants_real_card(void)
{
    if (!have_config)
        return true;
    for (unsigned i = 0; i < cfg.ncards; i++)
        if (cfg.card[i].type == RCI_CARD_PCIE && cfg.card[i].device[0])
            return true;
    return false;
}

/* FAIL where a real card is wanted, else WARN. */
static enum status real_card_problem(void) { return config_wants_real_card() ? FAIL : WARN; }

/* ---- checks ------------------------------------------------------------------------------ */

static void check_iommu(void)
{
    unsigned n = count_entries("/sys/class/iommu");
    char cmdline[1024] = "";
    read_line("/proc/cmdline", cmdline, sizeof cmdline);
    bool asked = strstr(cmdline, "intel_iommu=on") || strstr(cmdline, "amd_iommu=on");
    if (n > 0)
        add("iommu", PASS, NULL, "%u IOMMU unit(s) active (/sys/class/iommu)", n);
    else
        add("iommu", real_card_problem(),
            "enable VT-d / AMD-Vi in the BIOS and boot with intel_iommu=on (Intel) or amd_iommu=on "
            "(AMD), plus iommu=pt",
            "no IOMMU is active: /sys/class/iommu is empty; the kernel command line %s",
            asked ? "asks for one (the BIOS has it off?)" : "has neither intel_iommu=on nor amd_iommu=on");
}

static void check_vfio(void)
{
    if (access("/dev/vfio/vfio", F_OK) == 0)
        add("vfio", PASS, NULL, "/dev/vfio/vfio exists");
    else
        add("vfio", real_card_problem(), "modprobe vfio-pci (a kernel with VFIO is needed)",
            "no VFIO: /dev/vfio/vfio does not exist");
}

/* FELIX / Wupper cards present (PCI vendor 0x10dc), for the "no card" case. */
static unsigned list_cern_cards(char *out, size_t len)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    unsigned n = 0;
    out[0] = '\0';
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[PATH_MAX];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", e->d_name);
        if (read_long(path, -1) == CERN_PCI_VENDOR) {
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s%s", n ? ", " : "", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Every device of the group bound to vfio-pci or to nothing. */
static bool group_viable(const char *group, char *bad, size_t len)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/sys/kernel/iommu_groups/%s/devices", group);
    DIR *d = opendir(dir);
    bool ok = d != NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[PATH_MAX], drv[64];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/driver", dir, e->d_name);
        if (rci_link_basename(path, drv, sizeof drv) == 0 && strcmp(drv, "vfio-pci") != 0) {
            snprintf(bad, len, "%.64s (bound to %.32s)", e->d_name, drv);
            ok = false;
        }
    }
    if (d)
        closedir(d);
    return ok;
}

static void check_one_card(unsigned i, const char *addr)
{
    char name[32], path[PATH_MAX], drv[64], group[32], fix[256];
    snprintf(name, sizeof name, "card.%u", i);
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", addr);
    if (access(path, F_OK) != 0) {
        char found[256];
        unsigned n = list_cern_cards(found, sizeof found);
        add(name, FAIL, "set card.N.device to the address of a card (lspci -D -d 10dc:)",
            "no PCI device %s; FELIX/Wupper cards (vendor 0x10dc) on this host: %s", addr,
            n ? found : "none");
        return;
    }
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/driver", addr);
    if (rci_link_basename(path, drv, sizeof drv) != 0 || strcmp(drv, "vfio-pci") != 0) {
        snprintf(fix, sizeof fix, "echo vfio-pci > /sys/bus/pci/devices/%s/driver_override; echo %s > "
                 "/sys/bus/pci/drivers_probe (unbind it from its driver first)", addr, addr);
        add(name, FAIL, fix, "%s is not bound to vfio-pci", addr);
        return;
    }
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/iommu_group", addr);
    if (rci_link_basename(path, group, sizeof group) != 0) {
        add(name, FAIL, "turn the IOMMU on (see the iommu check)", "%s has no IOMMU group", addr);
        return;
    }
    char bad[160] = "";
    if (!group_viable(group, bad, sizeof bad)) {
        add(name, FAIL, "bind every device of the IOMMU group to vfio-pci, or move the card to "
            "another slot", "IOMMU group %s of %s is not viable: %s", group, addr, bad);
        return;
    }
    snprintf(path, sizeof path, "/dev/vfio/%s", group);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        add(name, FAIL, e == EBUSY ? "stop the process holding it (fuser -v /dev/vfio/N)"
                                   : "run as root or give the service user the group file",
            "%s: cannot open %s: %s%s", addr, path, strerror(e), e == EBUSY ? " (card in use)" : "");
        return;
    }
    close(fd);
    add(name, PASS, NULL, "%s bound to vfio-pci, IOMMU group %s usable", addr, group);
}

static void check_cards(void)
{
    bool any = false;
    for (unsigned i = 0; have_config && i < cfg.ncards; i++)
        if (cfg.card[i].type == RCI_CARD_PCIE && cfg.card[i].device[0]) {
            check_one_card(i, cfg.card[i].device);
            any = true;
        }
    if (any)
        return;
    char found[256];
    unsigned n = list_cern_cards(found, sizeof found);
    if (n)
        add("card", have_config ? WARN : PASS, "configure it: card.N.type = pcie, card.N.device = ADDRESS",
            "FELIX/Wupper card(s) on this host: %s%s", found,
            have_config ? "; the configuration uses none" : "");
    else
        add("card", real_card_problem(), "install a card, or run simulated cards (card.N.type = sim)",
            "no FELIX/Wupper card on this host (no PCI device of vendor 0x10dc)");
}

/* NUMA node of a card (-1 unknown / single node). */
static int card_node(const struct rci_card_params *c)
{
    if (c->type != RCI_CARD_PCIE || !c->device[0])
        return -1;
    return rci_pci_numa_node(c->device);
}

static void check_hugepages(void)
{
    uint64_t need[MAX_NODES] = { 0 }, need_any = 0;
    for (unsigned i = 0; have_config && i < cfg.ncards; i++) {
        if (cfg.card[i].memory != RCI_MEM_HUGETLB && cfg.card[i].memory != RCI_MEM_HUGETLBFS)
            continue;
        int node = card_node(&cfg.card[i]);
        if (node >= 0 && node < MAX_NODES)
            need[node] += cfg.card[i].ring_size / HUGE_2M;
        else
            need_any += cfg.card[i].ring_size / HUGE_2M;
    }
    unsigned nodes = 0;
    char detail[400] = "";
    long free_total = 0;
    bool short_node = false;
    for (int n = 0; n < MAX_NODES; n++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path,
                 "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/free_hugepages", n);
        long fr = read_long(path, -1);
        if (fr < 0)
            continue;
        nodes++;
        free_total += fr;
        size_t used = strlen(detail);
        snprintf(detail + used, sizeof detail - used, "%snode %d: %ld free, %" PRIu64 " needed", used ? "; " : "",
                 n, fr, need[n]);
        short_node |= (uint64_t)fr < need[n];
    }
    uint64_t need_total = need_any;
    for (int n = 0; n < MAX_NODES; n++)
        need_total += need[n];
    char fix[256];
    snprintf(fix, sizeof fix, "reserve 2 MiB pages on the card's node: echo N > "
             "/sys/devices/system/node/nodeX/hugepages/hugepages-2048kB/nr_hugepages (or vm.nr_hugepages)");
    char mnt[256];
    bool need_mount = false;
    for (unsigned i = 0; have_config && i < cfg.ncards; i++)
        need_mount |= cfg.card[i].memory == RCI_MEM_HUGETLBFS;
    if (need_mount && rci_mem_hugetlbfs_mount(mnt, sizeof mnt) != 0)
        add("hugepages", FAIL, "mount -t hugetlbfs nodev /dev/hugepages (or pagesize=2M)",
            "a ring has memory = hugetlbfs but no hugetlbfs with 2 MiB pages is mounted; 2 MiB pages: %s",
            detail[0] ? detail : "none");
    else if (short_node || (uint64_t)free_total < need_total)
        add("hugepages", FAIL, fix, "2 MiB pages: %s (%u node(s)); the rings need %" PRIu64 " in all",
            detail, nodes, need_total);
    else if (need_total == 0)
        add("hugepages", WARN, "card.N.memory = hugetlb for a real card's ring (fewer IOMMU and TLB entries)",
            "no ring uses hugepages; 2 MiB pages: %s", detail[0] ? detail : "none");
    else
        add("hugepages", PASS, NULL, "2 MiB pages: %s", detail);
}

/* CAP_IPC_LOCK (bit 14) in this process's effective set: mlock ignores the limit. */
static bool has_cap_ipc_lock(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long eff = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "CapEff: %llx", &eff) == 1)
            break;
    if (f)
        fclose(f);
    return eff & (1ull << 14);
}

static void check_memlock(void)
{
    uint64_t need = 0;
    for (unsigned i = 0; have_config && i < cfg.ncards; i++)
        need += cfg.card[i].ring_size;
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    char lim[32];
    if (rl.rlim_cur == RLIM_INFINITY)
        snprintf(lim, sizeof lim, "unlimited");
    else
        snprintf(lim, sizeof lim, "%" PRIu64 " MiB", (uint64_t)rl.rlim_cur >> 20);
    const char *fix = "LimitMEMLOCK=infinity in the service unit (or ulimit -l unlimited), or "
                      "AmbientCapabilities=CAP_IPC_LOCK";
    if (has_cap_ipc_lock())
        add("memlock", PASS, NULL, "CAP_IPC_LOCK: the rings' %" PRIu64 " MiB can be locked whatever "
            "RLIMIT_MEMLOCK (%s) says", need >> 20, lim);
    else if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        add("memlock", FAIL, fix, "RLIMIT_MEMLOCK %s is less than the rings' %" PRIu64 " MiB", lim,
            need >> 20);
    else
        add("memlock", PASS, NULL, "RLIMIT_MEMLOCK %s covers the rings' %" PRIu64 " MiB", lim, need >> 20);
}

/* name is one of the ", "-separated entries of list. */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* Distinct provider names libfabric offers, comma-separated. */
static void list_providers(char *out, size_t len)
{
    struct fi_info *info = NULL;
    out[0] = '\0';
    if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info) != 0)
        return;
    for (struct fi_info *i = info; i; i = i->next) {
        const char *p = i->fabric_attr ? i->fabric_attr->prov_name : NULL;
        if (!p || in_list(out, p))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? ", " : "", p);
    }
    fi_freeinfo(info);
}

static void check_provider(void)
{
    const char *prov = have_config ? cfg.fabric.provider : "tcp";
    bool rdm = have_config && cfg.fabric.endpoint == RCI_EP_RDM;
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    if (!hints) {
        add("fabric.provider", FAIL, NULL, "out of memory");
        return;
    }
    hints->caps = FI_MSG;
    hints->ep_attr->type = rdm ? FI_EP_RDM : FI_EP_MSG;
    hints->fabric_attr->prov_name = strdup(prov);
    int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc == 0) {
        add("fabric.provider", PASS, NULL, "libfabric provider %s offers %s endpoints (fi_getinfo)",
            prov, rdm ? "rdm" : "msg");
        fi_freeinfo(info);
        return;
    }
    char have[256];
    list_providers(have, sizeof have);
    add("fabric.provider", FAIL, "set fabric.provider to one of the providers present, or install "
        "the one named (and its kernel driver / hardware)",
        "fi_getinfo finds no provider %s with %s endpoints (%s); present: %s", prov,
        rdm ? "rdm" : "msg", fi_strerror(-rc), have[0] ? have : "none");
}

static void check_governor(void)
{
    unsigned ncpu = 0, perf = 0;
    char other[64] = "";
    for (int cpu = 0; cpu < 4096; cpu++) {
        char path[PATH_MAX], gov[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
        if (read_line(path, gov, sizeof gov) != 0)
            continue;
        ncpu++;
        if (strcmp(gov, "performance") == 0)
            perf++;
        else if (!other[0])
            snprintf(other, sizeof other, "%s", gov);
    }
    const char *fix = "cpupower frequency-set -g performance (the readout and publisher threads "
                      "poll; a low clock adds latency)";
    if (ncpu == 0)
        add("cpu.governor", WARN, "check the BIOS power profile (no cpufreq driver: a virtual machine?)",
            "no CPU frequency scaling information (/sys/devices/system/cpu/cpu*/cpufreq)");
    else if (perf == ncpu)
        add("cpu.governor", PASS, NULL, "all %u CPUs use the performance governor", ncpu);
    else
        add("cpu.governor", WARN, fix, "%u of %u CPUs do not use the performance governor (e.g. %s)",
            ncpu - perf, ncpu, other);
}

static void check_numa(void)
{
    unsigned nodes = 0;
    for (int n = 0; n < MAX_NODES; n++) {
        char path[64];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
        nodes += access(path, F_OK) == 0;
    }
    char ifname[64];
    const char *addr = have_config ? cfg.fabric.address : "127.0.0.1";
    int nic = rci_nic_numa_node(addr, ifname, sizeof ifname);
    char nicdesc[320];
    if (nic == -2)
        snprintf(nicdesc, sizeof nicdesc, "no interface has fabric.address %.128s", addr);
    else if (nic < 0)
        snprintf(nicdesc, sizeof nicdesc, "NIC %s (%s) has no NUMA node (virtual or single node)", ifname, addr);
    else
        snprintf(nicdesc, sizeof nicdesc, "NIC %s (%s) on node %d", ifname, addr, nic);
    bool mismatch = false;
    char cards[256] = "";
    for (unsigned i = 0; have_config && i < cfg.ncards; i++) {
        int node = card_node(&cfg.card[i]);
        if (node < 0)
            continue;
        size_t used = strlen(cards);
        snprintf(cards + used, sizeof cards - used, "; card.%u on node %d", i, node);
        mismatch |= nic >= 0 && node != nic;
    }
    if (mismatch)
        add("numa", WARN, "put the card and the NIC in slots of the same NUMA node (every chunk "
            "crosses the inter-socket link otherwise)", "%u node(s); %s%s", nodes, nicdesc, cards);
    else
        add("numa", PASS, NULL, "%u node(s); %s%s%s", nodes, nicdesc, cards,
            cards[0] ? "" : "; no card with a NUMA node configured (rings are allocated where the "
            "daemon runs)");
}

/* ---- output --------------------------------------------------------------------------- */

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_json(void)
{
    printf("{\"checks\":[");
    for (unsigned i = 0; i < nchecks; i++) {
        printf("%s{\"name\":", i ? "," : "");
        json_string(checks[i].name);
        printf(",\"status\":");
        json_string(status_name[checks[i].status]);
        printf(",\"detail\":");
        json_string(checks[i].detail);
        printf(",\"fix\":");
        json_string(checks[i].fix);
        putchar('}');
    }
    printf("]}\n");
}

static void print_text(void)
{
    unsigned count[3] = { 0 };
    for (unsigned i = 0; i < nchecks; i++) {
        const struct check *c = &checks[i];
        count[c->status]++;
        printf("%-4s  %-16s %s\n", status_name[c->status], c->name, c->detail);
        if (c->fix[0])
            printf("      %-16s fix: %s\n", "", c->fix);
    }
    printf("%u passed, %u warnings, %u failed\n", count[PASS], count[WARN], count[FAIL]);
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: ringcast-doctor [-c FILE] [-o section.key=value]... [--json]\n"
            "\n"
            "Checks this host for ringcast-readout with the configuration FILE (without one:\n"
            "for a real card): IOMMU, VFIO, the configured cards (bound to vfio-pci, IOMMU group\n"
            "usable), 2 MiB hugepages free per NUMA node against the rings with memory = hugetlb,\n"
            "RLIMIT_MEMLOCK against the rings, the libfabric provider of fabric.provider\n"
            "(fi_getinfo), the CPU frequency governor and the NUMA nodes of cards and NIC.\n"
            "Each check is PASS, WARN or FAIL, with the fix to apply.\n"
            "\n"
            "  -c, --config FILE       the daemon's configuration\n"
            "  -o section.key=value    set one key of it; repeatable\n"
            "      --json              {\"checks\":[{\"name\",\"status\",\"detail\",\"fix\"}...]}\n"
            "  -h, --help              this help\n"
            "\n"
            "Exit status: 0 nothing failed, 1 a check failed, 2 usage or configuration error.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *file = NULL, *ov[MAX_OVERRIDES];
    unsigned nov = 0;
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "c:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': file = optarg; break;
        case 'o':
            if (nov >= MAX_OVERRIDES) { fprintf(stderr, "ringcast-doctor: too many -o\n"); return EXIT_USAGE; }
            ov[nov++] = optarg;
            break;
        case 'j': json = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc || (nov && !file)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (file) {
        struct rci_config_error err;
        if (rci_config_load(&cfg, file, ov, nov, NULL, &err) != 0) {
            fprintf(stderr, "ringcast-doctor: %s\n", err.msg);
            return EXIT_USAGE;
        }
        have_config = true;
    }
    check_iommu();
    check_vfio();
    check_cards();
    check_hugepages();
    check_memlock();
    check_provider();
    check_governor();
    check_numa();
    if (json)
        print_json();
    else
        print_text();
    for (unsigned i = 0; i < nchecks; i++)
        if (checks[i].status == FAIL)
            return EXIT_FAILED;
    return 0;
}
