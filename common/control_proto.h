/* SPDX-License-Identifier: BSD-3-Clause */
/* control_proto.h — the request side of the daemon's control socket
 * ([control] socket, ringcast-ctl). A request is one line of text, the
 * words ringcast-ctl was given:
 *
 *   status                     state and counters
 *   subscribers                who is subscribed: address, tags, backlog
 *   kick ADDRESS               close one subscriber ("IP:PORT" as listed)
 *   card N stop|start          stop / restart one card's DMA
 *   reload                     read the configuration file again
 *   log-level error|warn|info|debug
 *
 * Words are separated by blanks; at most RCI_CTL_MAX_LINE bytes, printable
 * ASCII, one optional trailing newline. The answer is one JSON object on one
 * line (tools/control.c): {"ok":true,...} or {"ok":false,"error":"..."}.
 * This parser is all a client controls: it is fuzzed (tests/fuzz/fuzz_control.c). */
#ifndef RCI_CONTROL_PROTO_H
#define RCI_CONTROL_PROTO_H
#include <stdbool.h>
#include <stddef.h>

#define RCI_CTL_MAX_LINE 512u
#define RCI_CTL_MAX_ADDRESS 111u   /* a subscriber's name without its terminator */

enum rci_ctl_op {
    RCI_CTL_STATUS = 1,
    RCI_CTL_SUBSCRIBERS,
    RCI_CTL_KICK,
    RCI_CTL_CARD,
    RCI_CTL_RELOAD,
    RCI_CTL_LOG_LEVEL,
};

struct rci_ctl_cmd {
    enum rci_ctl_op op;
    char address[RCI_CTL_MAX_ADDRESS + 1];  /* KICK */
    unsigned card;                          /* CARD: N */
    bool card_start;                        /* CARD: start (else stop) */
    int level;                              /* LOG_LEVEL: enum rci_log_level */
};

/* Parse one request of len bytes (not necessarily terminated). 0, or
 * -EINVAL with the reason in err (naming the offending word). */
int rci_ctl_parse(const char *buf, size_t len, struct rci_ctl_cmd *cmd, char *err, size_t errlen);
/* "status", "kick", ...: the command word of op. */
const char *rci_ctl_op_name(enum rci_ctl_op op);

#endif
