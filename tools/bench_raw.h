/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_raw.h — ringcast-bench's "raw" measurement: the transport's own limit.
 *
 * A plain libfabric message stream (the equivalent of fabtests' fi_msg_bw),
 * set up with the same net/fabric.h code and [fabric] settings as the
 * publisher and subscriber, so provider, endpoint type, queue sizes and
 * memory registration are identical: one sender thread keeps up to `window`
 * sends of msg_size bytes outstanding from a registered buffer the size of
 * the pipeline's DMA ring; one receiver thread keeps rx_buffers receives of
 * msg_size bytes posted and re-posts each as it completes. Both drive
 * progress by reading their completion queue. Over loopback in one process.
 *
 * With rma (the "raw-rma" row): the receiver registers its buffers for
 * remote write instead and hands address, key and length to the sender in
 * memory; the sender keeps up to `window` fi_writedata of msg_size bytes
 * outstanding into them, slot after slot, each with FI_REMOTE_CQ_DATA
 * carrying its length (tcp and rxm report len 0 at the target), and the
 * receiver counts the remote completions: what RMA delivery can reach.
 */
#ifndef RCI_BENCH_RAW_H
#define RCI_BENCH_RAW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/fabric_params.h"

struct rci_bench_raw_params {
    struct rci_fabric_params fabric;   /* provider, endpoint, queues, port (address is used) */
    uint32_t msg_size;
    uint32_t window;                  /* sends outstanding at most (the pipeline's header slots) */
    uint64_t send_buffer_size;        /* registered source memory (the pipeline's ring size) */
    double seconds;                   /* sending time */
    bool rma;                         /* fi_writedata stream instead of fi_send */
};

struct rci_bench_raw_result {
    uint64_t messages, bytes;         /* received */
    double seconds;                   /* first send posted .. last receive completed */
    double cpu_seconds;               /* both threads (getrusage of this process) */
};

/* 0, or -errno with the reason in err. */
int rci_bench_raw_run(const struct rci_bench_raw_params *p, struct rci_bench_raw_result *out,
                     char *err, size_t errlen);

#endif
