/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_control.c — libFuzzer target: the control socket's request parser
 * rci_ctl_parse() (common/control_proto.c), everything a ringcast-ctl client
 * controls. Besides the sanitizers it checks the parser's contract: a refused
 * request has a message; an accepted one has a known command with arguments
 * in range, and written back as a request line it parses to the same command. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/control_proto.h"
#include "common/log_hook.h"

#define FZ_TARGET "fuzz_control"
#include "tests/fuzz/fuzz_check.h"

/* The command as ringcast-ctl would send it. */
static int request_line(const struct rci_ctl_cmd *c, char *buf, size_t len)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    switch (c->op) {
    case RCI_CTL_KICK: return snprintf(buf, len, "kick %s\n", c->address);
    case RCI_CTL_CARD: return snprintf(buf, len, "card %u %s\n", c->card, c->card_start ? "start" : "stop");
    case RCI_CTL_LOG_LEVEL: return snprintf(buf, len, "log-level %s\n", levels[c->level]);
    default: return snprintf(buf, len, "%s\n", rci_ctl_op_name(c->op));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rci_ctl_cmd cmd;
    char err[256] = "";
    if (rci_ctl_parse((const char *)data, size, &cmd, err, sizeof err) != 0) {
        FZ_CHECK(err[0] != '\0', "refused without a message");
        return 0;
    }
    FZ_CHECK(cmd.op >= RCI_CTL_STATUS && cmd.op <= RCI_CTL_LOG_LEVEL, "op %d", (int)cmd.op);
    FZ_CHECK(memchr(cmd.address, '\0', sizeof cmd.address) != NULL, "address not terminated");
    FZ_CHECK(cmd.op != RCI_CTL_KICK || cmd.address[0] != '\0', "kick without an address");
    FZ_CHECK(cmd.op != RCI_CTL_CARD || cmd.card < 1000, "card %u", cmd.card);
    FZ_CHECK(cmd.op != RCI_CTL_LOG_LEVEL || (cmd.level >= RCI_LOG_ERROR && cmd.level <= RCI_LOG_DEBUG),
             "level %d", cmd.level);
    char line[RCI_CTL_MAX_LINE + 2];
    int n = request_line(&cmd, line, sizeof line);
    FZ_CHECK(n > 0 && (size_t)n < sizeof line, "request line of %d bytes", n);
    struct rci_ctl_cmd again;
    FZ_CHECK(rci_ctl_parse(line, (size_t)n, &again, err, sizeof err) == 0, "written back, refused: %s", err);
    FZ_CHECK(memcmp(&again, &cmd, sizeof cmd) == 0, "written back, parsed differently: %s", line);
    return 0;
}
