/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_discovery.c — the [discovery] section: where the daemon announces
 * its publisher threads (net/README.md, "Discovery"). Rows follow the pattern
 * described in schema_fabric.c. */
#include "config/schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define T struct rci_discovery_params

/* The backend is chosen by the scheme; the rest is checked when the daemon
 * opens it (net/discovery.c), but a wrong scheme is a typo worth its line. */
static int validate_url(const char *text, char *why, size_t whylen)
{
    if ((strncmp(text, "dir:", 4) == 0 && text[4]) || (strncmp(text, "etcd://", 7) == 0 && text[7]))
        return 0;
    snprintf(why, whylen, "expected dir:PATH or etcd://HOST:PORT[,HOST:PORT...]");
    return -EINVAL;
}

static int validate_prefix(const char *text, char *why, size_t whylen)
{
    if (text[0] == '/' && !strchr(text, ' '))
        return 0;
    snprintf(why, whylen, "an etcd key prefix starts with '/' and has no spaces");
    return -EINVAL;
}

static const struct rci_cfg_key discovery_keys[] = {
    {.key = "url", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = 190, RCI_CFG_FIELD(T, url),
     .validate = validate_url,
     .help = "Announce the publishers at dir:PATH (a file each; one host or a shared filesystem) or"
             " etcd://HOST:PORT[,HOST:PORT...]; empty = none."},
    {.key = "prefix", .type = RCI_CFG_STRING, .def = "/ringcast/", .min = 1, .max = 63,
     RCI_CFG_FIELD(T, prefix), .validate = validate_prefix,
     .help = "etcd: the entries' keys start with this (PREFIX DAEMONID.THREAD)."},
    {.key = "ttl", .type = RCI_CFG_DURATION, .def = "5s", .min = 1000000000ull, .max = 3600000000000ull,
     .multiple = 1000000000ull, RCI_CFG_FIELD(T, ttl_ns),
     .help = "A dead daemon's entries vanish after this (etcd lease; dir: stale); refreshed every ttl/3."},
};

const struct rci_cfg_section rci_cfg_section_discovery = {
    .name = "discovery",
    .repeated = false,
    .help = "Discovery: where subscribers find the publishers serving their tags.",
    .keys = discovery_keys,
    .nkeys = sizeof discovery_keys / sizeof discovery_keys[0],
    .cfg_offset = offsetof(struct rci_config, discovery),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
