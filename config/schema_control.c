/* SPDX-License-Identifier: BSD-3-Clause */
/* schema_control.c — the [control] section: the daemon's control socket
 * (ringcast-ctl; tools/control.c). Rows follow the pattern described in
 * schema_fabric.c. */
#include "config/schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define T struct rci_control_params

/* An absolute path: a relative one would depend on the daemon's working
 * directory, which systemd sets to /. */
static int validate_socket(const char *text, char *why, size_t whylen)
{
    if (text[0] != '/') {
        snprintf(why, whylen, "'%s': must be an absolute path", text);
        return -EINVAL;
    }
    return 0;
}

/* A group name as useradd/groupadd accept it: [a-z_][a-z0-9_-]*, or a number. */
static int validate_group(const char *text, char *why, size_t whylen)
{
    static const char first[] = "abcdefghijklmnopqrstuvwxyz_0123456789";
    static const char rest[] = "abcdefghijklmnopqrstuvwxyz_0123456789-";
    bool ok = strchr(first, text[0]) != NULL && strspn(text + 1, rest) == strlen(text + 1);
    if (!ok) {
        snprintf(why, whylen, "'%s': not a group name ([a-z_][a-z0-9_-]*) or number", text);
        return -EINVAL;
    }
    return 0;
}

static const struct rci_cfg_key control_keys[] = {
    {.key = "socket", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = RCI_CONTROL_SOCKET_MAX - 1,
     RCI_CFG_FIELD(T, socket), .validate = validate_socket, .example = "/run/ringcast/control",
     .help = "Unix socket for ringcast-ctl (status, subscribers, kick, card N stop|start, reload, log-level), mode 0660; empty = no control socket."},
    {.key = "group", .type = RCI_CFG_STRING, .def = "", .min = 0, .max = RCI_CONTROL_GROUP_MAX - 1,
     RCI_CFG_FIELD(T, group), .validate = validate_group, .example = "ringcast",
     .help = "Group that owns the control socket (its members may use ringcast-ctl); empty = the daemon's group."},
};

const struct rci_cfg_section rci_cfg_section_control = {
    .name = "control",
    .repeated = false,
    .example_commented = true,
    .help = "The control socket (ringcast-ctl).",
    .keys = control_keys,
    .nkeys = sizeof control_keys / sizeof control_keys[0],
    .cfg_offset = offsetof(struct rci_config, control),
    .struct_size = sizeof(T),
    .struct_align = _Alignof(T),
};
