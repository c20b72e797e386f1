/* SPDX-License-Identifier: BSD-3-Clause */
/* cacheline.h — the cache-line size every module pads to, so that counters of
 * one thread never share a line with another thread's (false sharing). 64
 * bytes on every x86-64 and most arm64 servers; DPDK's RTE_CACHE_LINE_SIZE
 * says the same for this build, but dma/ and net/ must not need DPDK. */
#ifndef RCI_CACHELINE_H
#define RCI_CACHELINE_H

#define RCI_CACHE_LINE 64

#endif
