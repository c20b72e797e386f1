/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery_params.h — where publishers are announced and looked up: the
 * [discovery] section (config/schema_discovery.c). url "" = no discovery. */
#ifndef RCI_DISCOVERY_PARAMS_H
#define RCI_DISCOVERY_PARAMS_H
#include <stdint.h>

struct rci_discovery_params {
    char url[256];          /* "", "dir:PATH" or "etcd://HOST:PORT[,HOST:PORT...]" */
    char prefix[64];        /* etcd key prefix, "/ringcast/" */
    uint64_t ttl_ns;        /* an entry not refreshed this long is dead (etcd lease TTL) */
};

#endif
