/* SPDX-License-Identifier: BSD-3-Clause */
/* cpus.c — CPU lists and NUMA facts (cpus.h). */
#include "common/cpus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errbuf.h"

int rci_cpus_parse(const char *s, cpu_set_t *set, char *why, size_t whylen)
{
    CPU_ZERO(set);
    const char *p = s;
    if (!*p) {
        rci_set_err(why, whylen, "empty CPU list");
        return -EINVAL;
    }
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0) {
            rci_set_err(why, whylen, "'%s': expected CPU numbers like 0-3,8", s);
            return -EINVAL;
        }
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a) {
                rci_set_err(why, whylen, "'%s': a range must be a-b with a <= b", s);
                return -EINVAL;
            }
            p = end;
        }
        if (b >= CPU_SETSIZE) {
            rci_set_err(why, whylen, "'%s': CPU %ld is beyond %d", s, b, CPU_SETSIZE - 1);
            return -EINVAL;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, set);
        if (*p == ',' && p[1])
            p++;
        else if (*p) {
            rci_set_err(why, whylen, "'%s': unexpected '%c'", s, *p);
            return -EINVAL;
        }
    }
    return 0;
}

int rci_cpus_first_missing(const cpu_set_t *set)
{
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        char path[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", c);
        if (access(path, F_OK) != 0)
            return c;
    }
    return -1;
}

int rci_cpus_first_not_allowed(const cpu_set_t *set)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -2;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set) && !CPU_ISSET(c, &allowed))
            return c;
    return -1;
}

int rci_cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return -ENOSPC;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int n = last > c ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, last)
                         : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
        if (n < 0 || (size_t)n >= len - used) {
            if (len >= 4)
                snprintf(buf + len - 4, 4, "...");
            return -ENOSPC;
        }
        used += (size_t)n;
        c = last;
    }
    return used ? 0 : -EINVAL;
}

int rci_cpus_parse_allowed(const char *s, cpu_set_t *set, char *why, size_t whylen)
{
    int rc = rci_cpus_parse(s, set, why, whylen);
    if (rc != 0)
        return rc;
    int bad = rci_cpus_first_not_allowed(set);
    if (bad == -1)
        return 0;
    cpu_set_t allowed;
    char list[128] = "?";
    if (bad == -2 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        rci_set_err(why, whylen, "'%s': cannot read this process's CPUs (sched_getaffinity: %s)", s,
                    strerror(errno));
        return -EINVAL;
    }
    rci_cpus_format(&allowed, list, sizeof list);
    rci_set_err(why, whylen, "CPU %d is not one this process may run on (it may use %s)", bad, list);
    return -EINVAL;
}

int rci_numa_node_exists(int n)
{
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
    return n >= 0 && access(path, F_OK) == 0;
}

static int read_node(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n < 0 ? -1 : n;
}

int rci_pci_numa_node(const char *pci_address)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%.32s/numa_node", pci_address);
    return read_node(path);
}

int rci_nic_numa_node(const char *addr, char *ifname, size_t len)
{
    struct ifaddrs *ifa = NULL;
    int node = -2;
    if (len)
        ifname[0] = '\0';
    if (getifaddrs(&ifa) != 0)
        return -2;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        char buf[INET_ADDRSTRLEN] = "";
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf, sizeof buf);
        if (strcmp(buf, addr) != 0)
            continue;
        char path[128];
        snprintf(ifname, len, "%s", i->ifa_name);
        snprintf(path, sizeof path, "/sys/class/net/%.32s/device/numa_node", i->ifa_name);
        node = read_node(path);
        break;
    }
    freeifaddrs(ifa);
    return node;
}
