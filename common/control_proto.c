/* SPDX-License-Identifier: BSD-3-Clause */
/* control_proto.c — parse one control request line (control_proto.h). */
#include "common/control_proto.h"
#include "common/errbuf.h"
#include "common/log_hook.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define MAX_WORDS 4u

struct words {
    const char *w[MAX_WORDS];
    size_t len[MAX_WORDS];
    unsigned n;
};

static bool word_is(const struct words *ws, unsigned i, const char *text)
{
    return ws->len[i] == strlen(text) && memcmp(ws->w[i], text, ws->len[i]) == 0;
}

/* Split into words; refuse what is not one line of printable ASCII. */
static int split(const char *buf, size_t len, struct words *ws, char *err, size_t errlen)
{
    if (len > 0 && buf[len - 1] == '\n')
        len--;
    if (len > RCI_CTL_MAX_LINE) {
        rci_set_err(err, errlen, "request longer than %u bytes", RCI_CTL_MAX_LINE);
        return -EINVAL;
    }
    ws->n = 0;
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)buf[i];
        if (c == ' ' || c == '\t') {
            i++;
            continue;
        }
        if (c < 0x21 || c > 0x7e) {
            rci_set_err(err, errlen, "byte 0x%02x at offset %zu: a request is one line of printable ASCII",
                        c, i);
            return -EINVAL;
        }
        if (ws->n == MAX_WORDS) {
            rci_set_err(err, errlen, "too many words (at most %u)", MAX_WORDS);
            return -EINVAL;
        }
        size_t start = i;
        while (i < len && buf[i] != ' ' && buf[i] != '\t' && (unsigned char)buf[i] >= 0x21 &&
               (unsigned char)buf[i] <= 0x7e)
            i++;
        ws->w[ws->n] = buf + start;
        ws->len[ws->n++] = i - start;
    }
    if (ws->n == 0) {
        rci_set_err(err, errlen, "empty request");
        return -EINVAL;
    }
    return 0;
}

static int want_words(const struct words *ws, unsigned n, const char *usage, char *err, size_t errlen)
{
    if (ws->n == n)
        return 0;
    rci_set_err(err, errlen, "usage: %s", usage);
    return -EINVAL;
}

/* A card number: decimal, 1..3 digits. */
static int parse_card(const struct words *ws, struct rci_ctl_cmd *cmd, char *err, size_t errlen)
{
    if (want_words(ws, 3, "card N stop|start", err, errlen) != 0)
        return -EINVAL;
    unsigned n = 0;
    if (ws->len[1] == 0 || ws->len[1] > 3) {
        rci_set_err(err, errlen, "card '%.*s': expected a card number", (int)(ws->len[1] > 16 ? 16 : ws->len[1]),
                    ws->w[1]);
        return -EINVAL;
    }
    for (size_t i = 0; i < ws->len[1]; i++) {
        char c = ws->w[1][i];
        if (c < '0' || c > '9') {
            rci_set_err(err, errlen, "card '%.*s': expected a card number", (int)ws->len[1], ws->w[1]);
            return -EINVAL;
        }
        n = n * 10 + (unsigned)(c - '0');
    }
    if (!word_is(ws, 2, "stop") && !word_is(ws, 2, "start")) {
        rci_set_err(err, errlen, "card %u '%.*s': expected stop or start", n,
                    (int)(ws->len[2] > 16 ? 16 : ws->len[2]), ws->w[2]);
        return -EINVAL;
    }
    cmd->card = n;
    cmd->card_start = word_is(ws, 2, "start");
    return 0;
}

static int parse_level(const struct words *ws, struct rci_ctl_cmd *cmd, char *err, size_t errlen)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (want_words(ws, 2, "log-level error|warn|info|debug", err, errlen) != 0)
        return -EINVAL;
    for (int i = 0; i < 4; i++)
        if (word_is(ws, 1, names[i])) {
            cmd->level = RCI_LOG_ERROR + i;
            return 0;
        }
    rci_set_err(err, errlen, "log-level '%.*s': expected error, warn, info or debug",
                (int)(ws->len[1] > 16 ? 16 : ws->len[1]), ws->w[1]);
    return -EINVAL;
}

int rci_ctl_parse(const char *buf, size_t len, struct rci_ctl_cmd *cmd, char *err, size_t errlen)
{
    memset(cmd, 0, sizeof *cmd);
    struct words ws;
    if (split(buf, len, &ws, err, errlen) != 0)
        return -EINVAL;
    if (word_is(&ws, 0, "status")) {
        cmd->op = RCI_CTL_STATUS;
        return want_words(&ws, 1, "status", err, errlen);
    }
    if (word_is(&ws, 0, "subscribers")) {
        cmd->op = RCI_CTL_SUBSCRIBERS;
        return want_words(&ws, 1, "subscribers", err, errlen);
    }
    if (word_is(&ws, 0, "reload")) {
        cmd->op = RCI_CTL_RELOAD;
        return want_words(&ws, 1, "reload", err, errlen);
    }
    if (word_is(&ws, 0, "kick")) {
        cmd->op = RCI_CTL_KICK;
        if (want_words(&ws, 2, "kick ADDRESS (IP:PORT, as `subscribers` lists it)", err, errlen) != 0)
            return -EINVAL;
        if (ws.len[1] > RCI_CTL_MAX_ADDRESS) {
            rci_set_err(err, errlen, "kick: address longer than %u characters", RCI_CTL_MAX_ADDRESS);
            return -EINVAL;
        }
        memcpy(cmd->address, ws.w[1], ws.len[1]);
        cmd->address[ws.len[1]] = '\0';
        return 0;
    }
    if (word_is(&ws, 0, "card")) {
        cmd->op = RCI_CTL_CARD;
        return parse_card(&ws, cmd, err, errlen);
    }
    if (word_is(&ws, 0, "log-level")) {
        cmd->op = RCI_CTL_LOG_LEVEL;
        return parse_level(&ws, cmd, err, errlen);
    }
    rci_set_err(err, errlen, "unknown command '%.*s' (status, subscribers, kick, card, reload, log-level)",
                (int)(ws.len[0] > 32 ? 32 : ws.len[0]), ws.w[0]);
    cmd->op = 0;
    return -EINVAL;
}

const char *rci_ctl_op_name(enum rci_ctl_op op)
{
    switch (op) {
    case RCI_CTL_STATUS: return "status";
    case RCI_CTL_SUBSCRIBERS: return "subscribers";
    case RCI_CTL_KICK: return "kick";
    case RCI_CTL_CARD: return "card";
    case RCI_CTL_RELOAD: return "reload";
    case RCI_CTL_LOG_LEVEL: return "log-level";
    }
    return "?";
}
