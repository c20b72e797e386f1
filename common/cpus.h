/* SPDX-License-Identifier: BSD-3-Clause */
/* cpus.h — CPU lists ("0-3,8,10-11") for pinning threads, and the NUMA
 * facts of this host the readout needs (sysfs). */
#ifndef RCI_CPUS_H
#define RCI_CPUS_H
#include <sched.h>
#include <stddef.h>

/* Parse a CPU list into set: numbers and ranges a-b (a <= b) separated by
 * commas, each below CPU_SETSIZE. 0, or -EINVAL with the reason in why. */
int rci_cpus_parse(const char *s, cpu_set_t *set, char *why, size_t whylen);
/* The first CPU of set that this host does not have
 * (/sys/devices/system/cpu/cpuN), or -1 if it has them all. */
int rci_cpus_first_missing(const cpu_set_t *set);
/* The first CPU of set this process may not run on (not in its affinity
 * mask, sched_getaffinity: a CPU the host lacks or has offline, or one
 * outside a taskset or cgroup cpuset), -1 if it may run on them all, -2 if
 * the mask cannot be read. */
int rci_cpus_first_not_allowed(const cpu_set_t *set);
/* set as a CPU list ("0-3,6,8-9") into buf. 0; -EINVAL for an empty set
 * (buf ""); -ENOSPC when it does not fit (buf ends in "...": fine for a
 * message, not for an argument such as DPDK's -l). */
int rci_cpus_format(const cpu_set_t *set, char *buf, size_t len);
/* rci_cpus_parse, then every CPU must be one this process may run on:
 * 0, or -EINVAL with the reason in why ("CPU 5 is not one this process may
 * run on (it may use 0-1)"). For keys that pin threads. */
int rci_cpus_parse_allowed(const char *s, cpu_set_t *set, char *why, size_t whylen);
/* Whether NUMA node n exists (/sys/devices/system/node/nodeN). */
int rci_numa_node_exists(int n);
/* NUMA node of PCI device DDDD:BB:DD.F (sysfs numa_node), -1 if unknown. */
int rci_pci_numa_node(const char *pci_address);
/* NUMA node of the PCI NIC that has IPv4 address addr: the node (>= 0),
 * -1 when the interface has none (virtual, single node), -2 when no
 * interface has the address. ifname gets the interface's name. */
int rci_nic_numa_node(const char *addr, char *ifname, size_t len);

#endif
