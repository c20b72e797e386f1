/* SPDX-License-Identifier: BSD-3-Clause */
/* control.h — the daemon's control socket ([control] socket): a unix stream
 * socket, mode 0660, owned by [control] group. One request per connection:
 * the client writes one line (common/control_proto.h), the daemon answers one
 * JSON object on one line and closes. Served from the daemon's main thread
 * (rci_control_serve between its ticks); a client gets CONTROL_IO_TIMEOUT
 * to send its line and take the answer, so a stuck client holds the main
 * thread at most that long. */
#ifndef RCI_TOOLS_CONTROL_H
#define RCI_TOOLS_CONTROL_H
#include <jansson.h>
#include <stdint.h>

#include "common/control_proto.h"
#include "config/config.h"

struct rci_control;

/* Runs one parsed request: fills answer (a JSON object) with its result.
 * Returns 0 ({"ok":true}), or -errno with the reason in err ({"ok":false,
 * "error":err}; answer's members are kept). */
typedef int (*rci_control_handler)(void *ctx, const struct rci_ctl_cmd *cmd, json_t *answer, char *err,
                                   size_t errlen);

struct rci_control_stats {
    uint64_t requests;      /* connections answered */
    uint64_t refused;       /* malformed or unknown requests (answered with an error) */
    uint64_t failed;        /* well-formed requests whose handler said no */
    uint64_t io_errors;     /* a client that sent nothing in time, or went before the answer */
};

/* Create the socket at p->socket (a stale socket file nobody listens on is
 * replaced; one a live daemon listens on is not). 0 or -errno with err. */
int rci_control_open(const struct rci_control_params *p, struct rci_control **out, char *err, size_t errlen);
/* Accept and answer every waiting client; waits up to wait_ns for the first. */
void rci_control_serve(struct rci_control *c, uint64_t wait_ns, rci_control_handler fn, void *ctx);
void rci_control_get_stats(const struct rci_control *c, struct rci_control_stats *s);
/* Close and remove the socket. NULL is fine. */
void rci_control_close(struct rci_control *c);

#endif
