/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk_env.c — the EAL started once per process with arguments that fit
 * this machine (see dpdk_env.h for each choice). */
#include "pipeline/dpdk_env.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "common/cpus.h"
#include "common/errbuf.h"

#define HUGEPAGES_SYSFS "/sys/kernel/mm/hugepages"
#define MAX_EAL_ARGS    12
#define EAL_ARG_LEN     1024

enum eal_state { EAL_DOWN = 0, EAL_UP, EAL_FAILED, EAL_CLEANED };

struct eal_args {
    int argc;
    char *argv[MAX_EAL_ARGS + 1];
    char text[MAX_EAL_ARGS][EAL_ARG_LEN];
};

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static enum eal_state eal_state;
static int eal_error;                 /* -errno of the failed start */
static char eal_message[1280];        /* the failed start's message */
static char eal_description[1024];    /* how it was started */
static char eal_runtime_dir[512];     /* removed by cleanup */

/* ---- what the machine offers ------------------------------------------ */

static uint64_t read_u64_file(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

uint64_t rci_dpdk_free_hugepages(void)
{
    DIR *d = opendir(HUGEPAGES_SYSFS);
    if (!d)
        return 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "hugepages-", 10) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, HUGEPAGES_SYSFS "/%s/free_hugepages", e->d_name);
        total += read_u64_file(path);
    }
    closedir(d);
    return total;
}

bool rci_dpdk_hugetlbfs_mounted(void)
{
    FILE *f = fopen("/proc/mounts", "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, " hugetlbfs ") != NULL;
    fclose(f);
    return found;
}

static enum rci_dpdk_memory resolve_mode(enum rci_dpdk_memory mode)
{
    if (mode != RCI_DPDK_AUTO)
        return mode;
    return rci_dpdk_free_hugepages() > 0 && rci_dpdk_hugetlbfs_mounted() ? RCI_DPDK_HUGE : RCI_DPDK_NO_HUGE;
}

/* ---- arguments ---------------------------------------------------------- */

static int add_arg(struct eal_args *a, const char *fmt, const char *value)
{
    if (a->argc >= MAX_EAL_ARGS)
        return -ENOSPC;
    char *slot = a->text[a->argc];
    int n = snprintf(slot, EAL_ARG_LEN, fmt, value);
    if (n < 0 || n >= EAL_ARG_LEN)
        return -ENOSPC;
    a->argv[a->argc++] = slot;
    a->argv[a->argc] = NULL;
    return 0;
}

static int build_args(enum rci_dpdk_memory mode, struct eal_args *a)
{
    cpu_set_t cpus;
    char cpu_list[EAL_ARG_LEN - 32], prefix[64];
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0)
        return -errno;
    int rc = rci_cpus_format(&cpus, cpu_list, sizeof cpu_list);
    if (rc != 0)
        return rc;
    snprintf(prefix, sizeof prefix, "ringcast-%ld", (long)getpid());
    memset(a, 0, sizeof *a);
    rc = add_arg(a, "%s", "ringcast");
    rc = rc ? rc : add_arg(a, "--file-prefix=%s", prefix);
    rc = rc ? rc : add_arg(a, "--lcores=0@(%s)", cpu_list);
    rc = rc ? rc : add_arg(a, "%s", "--no-pci");
    rc = rc ? rc : add_arg(a, "%s", "--no-telemetry");
    rc = rc ? rc : add_arg(a, "%s", "--log-level=lib.eal:error");
    if (mode == RCI_DPDK_HUGE) {
        rc = rc ? rc : add_arg(a, "%s", "--in-memory");
    } else {
        char mb[16];
        snprintf(mb, sizeof mb, "%u", RCI_DPDK_NO_HUGE_MB);
        rc = rc ? rc : add_arg(a, "%s", "--no-huge");
        rc = rc ? rc : add_arg(a, "%s", "--no-shconf");
        rc = rc ? rc : add_arg(a, "%s", "-m");
        rc = rc ? rc : add_arg(a, "%s", mb);
    }
    return rc;
}

static int join_args(const struct eal_args *a, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 1; i < a->argc; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i > 1 ? " " : "", a->argv[i]);
        if (n < 0 || (size_t)n >= len - used)
            return -ENOSPC;
        used += (size_t)n;
    }
    return 0;
}

int rci_dpdk_eal_args(enum rci_dpdk_memory mode, char *buf, size_t len)
{
    struct eal_args a;
    int rc = build_args(resolve_mode(mode), &a);
    return rc ? rc : join_args(&a, buf, len);
}

/* ---- start ---------------------------------------------------------------- */

/* The EAL leaves its runtime directory behind (empty with our arguments);
 * rmdir removes only an empty one. */
static void remove_runtime_dir(const char *dir)
{
    if (dir && dir[0])
        rmdir(dir);
}

/* Where the EAL puts runtime directories (eal_create_runtime_dir in 22.11). */
static const char *runtime_base(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    snprintf(buf, len, "%s/dpdk", getuid() == 0 ? "/var/run" : (xdg && xdg[0] ? xdg : "/tmp"));
    return buf;
}

/* A process killed before rci_dpdk_cleanup leaves an empty ringcast-<pid>
 * directory: remove those whose process is gone (rmdir keeps non-empty ones,
 * kill(pid, 0) keeps those of live processes). Returns how many went. */
static unsigned remove_stale_runtime_dirs(void)
{
    char base[512], path[1024];
    DIR *d = opendir(runtime_base(base, sizeof base));
    if (!d)
        return 0;
    unsigned removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "ringcast-", 9) != 0)
            continue;
        long pid = strtol(e->d_name + 9, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        removed += rmdir(path) == 0;
    }
    closedir(d);
    return removed;
}

/* The EAL may re-pin the main thread to its lcore's CPUs; threads created
 * later inherit the affinity, so put the caller's back. */
static bool restore_affinity(const cpu_set_t *before)
{
    cpu_set_t after;
    if (sched_getaffinity(0, sizeof after, &after) != 0 || CPU_EQUAL(before, &after))
        return false;
    return sched_setaffinity(0, sizeof *before, before) == 0;
}

static int start_eal(enum rci_dpdk_memory mode)
{
    struct eal_args a;
    /* Room left in eal_description for the prefix, memory[64] and notes[96]
     * below, so the description is never cut (gcc -O1 proves it). */
    char joined[sizeof eal_description - 256];
    int rc = build_args(mode, &a);
    if (rc == 0)
        rc = join_args(&a, joined, sizeof joined);
    if (rc != 0) {
        snprintf(eal_message, sizeof eal_message, "DPDK EAL: cannot build its arguments: %s", strerror(-rc));
        return rc;
    }
    unsigned stale = remove_stale_runtime_dirs();
    cpu_set_t before;
    bool have_before = sched_getaffinity(0, sizeof before, &before) == 0;
    if (rte_eal_init(a.argc, a.argv) < 0) {
        int e = rte_errno ? rte_errno : EINVAL;
        snprintf(eal_message, sizeof eal_message,
                 "DPDK EAL failed to start (rte_eal_init: %s) with arguments: %s", rte_strerror(e), joined);
        remove_runtime_dir(rte_eal_get_runtime_dir());
        return -e;
    }
    bool restored = have_before && restore_affinity(&before);
    snprintf(eal_runtime_dir, sizeof eal_runtime_dir, "%s", rte_eal_get_runtime_dir());
    char memory[64];
    if (mode == RCI_DPDK_HUGE)
        snprintf(memory, sizeof memory, "hugepages");
    else
        snprintf(memory, sizeof memory, "no hugepages: %u MiB of ordinary memory", RCI_DPDK_NO_HUGE_MB);
    char notes[96] = "";
    if (stale)
        snprintf(notes, sizeof notes, "; %u stale runtime director%s of dead processes removed", stale,
                 stale == 1 ? "y" : "ies");
    snprintf(eal_description, sizeof eal_description, "DPDK EAL started (%s%s%s): %s", memory,
             restored ? "; thread affinity restored" : "", notes, joined);
    return 0;
}

/* HUGE without hugepages fails before the EAL is touched: the EAL's failure
 * would be final for the process, this one is not. */
static int check_hugepages(char *err, size_t errlen)
{
    uint64_t free_pages = rci_dpdk_free_hugepages();
    if (free_pages > 0 && rci_dpdk_hugetlbfs_mounted())
        return 0;
    rci_set_err(err, errlen, "DPDK EAL: hugepages requested but %s (see %s and /proc/mounts)",
               free_pages ? "no hugetlbfs is mounted" : "none is free", HUGEPAGES_SYSFS);
    return -ENOMEM;
}

static int report_state(char *err, size_t errlen)
{
    switch (eal_state) {
    case EAL_UP:
        return 0;
    case EAL_FAILED:
        rci_set_err(err, errlen, "%s", eal_message);
        return eal_error;
    case EAL_CLEANED:
        rci_set_err(err, errlen, "DPDK EAL was cleaned up; it cannot start again in this process");
        return -EALREADY;
    case EAL_DOWN:
        break;
    }
    return -EAGAIN;
}

int rci_dpdk_init_mode(enum rci_dpdk_memory mode, char *err, size_t errlen)
{
    pthread_mutex_lock(&eal_lock);
    int rc = report_state(err, errlen);
    if (rc == -EAGAIN) {
        enum rci_dpdk_memory resolved = resolve_mode(mode);
        rc = resolved == RCI_DPDK_HUGE ? check_hugepages(err, errlen) : 0;
        if (rc == 0) {
            rc = start_eal(resolved);
            eal_state = rc == 0 ? EAL_UP : EAL_FAILED;
            eal_error = rc;
            rc = report_state(err, errlen);
        }
    }
    pthread_mutex_unlock(&eal_lock);
    return rc;
}

int rci_dpdk_init(char *err, size_t errlen)
{
    return rci_dpdk_init_mode(RCI_DPDK_AUTO, err, errlen);
}

bool rci_dpdk_started(void)
{
    pthread_mutex_lock(&eal_lock);
    bool up = eal_state == EAL_UP;
    pthread_mutex_unlock(&eal_lock);
    return up;
}

const char *rci_dpdk_describe(void)
{
    return eal_description;
}

void rci_dpdk_cleanup(void)
{
    pthread_mutex_lock(&eal_lock);
    if (eal_state == EAL_UP) {
        rte_eal_cleanup();
        remove_runtime_dir(eal_runtime_dir);
        eal_state = EAL_CLEANED;
    }
    pthread_mutex_unlock(&eal_lock);
}
