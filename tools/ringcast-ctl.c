/* SPDX-License-Identifier: BSD-3-Clause */
/* ringcast-ctl — talk to a running ringcast-readout through its control
 * socket ([control] socket): send one request, print the JSON answer.
 *
 *   ringcast-ctl [--socket PATH] [--compact] COMMAND [ARG]...
 *
 * Exit status: 0 the daemon did it ("ok":true), 1 the daemon refused or
 * failed it ("ok":false, "error" says why), 2 usage error, 3 the daemon
 * could not be reached or did not answer. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/control_proto.h"

#define DEFAULT_SOCKET "/run/ringcast/control"
#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define ANSWER_TIMEOUT_S 10   /* reload and subscribers wait up to 2 s for the publisher threads */
#define ANSWER_MAX (16u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: ringcast-ctl [--socket PATH] [--compact] COMMAND [ARG]...\n"
            "Send one command to a running ringcast-readout ([control] socket) and print\n"
            "its answer, one JSON object (\"ok\": true or false, \"error\" saying why).\n"
            "\n"
            "Commands:\n"
            "  status                       state, counters per card, publishing totals\n"
            "  subscribers                  every subscriber: address, tags, backlog, counters\n"
            "  kick ADDRESS                 disconnect a subscriber (IP:PORT as listed); its\n"
            "                               chunks' ring memory comes back\n"
            "  card N stop|start            stop / restart card N's DMA (the daemon goes on;\n"
            "                               what the card wrote is still read out and sent)\n"
            "  reload                       read the configuration file again (like SIGHUP)\n"
            "  log-level error|warn|info|debug\n"
            "\n"
            "  -s, --socket PATH   the daemon's control socket (default " DEFAULT_SOCKET ")\n"
            "  -c, --compact       print the answer on one line\n"
            "  -h, --help          print this help\n"
            "      --version       print the version\n"
            "\n"
            "Exit status: 0 done, 1 the daemon refused or failed it, 2 usage error,\n"
            "3 no answer from the daemon.\n");
}

/* The request: the command words, blank-separated, one line. Checked here
 * with the daemon's own parser, so that a typo gets a usage error at once. */
static int build_request(int argc, char **argv, char *line, size_t cap)
{
    size_t used = 0;
    for (int i = 0; i < argc; i++) {
        int w = snprintf(line + used, cap - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0 || (size_t)w >= cap - used) {
            fprintf(stderr, "ringcast-ctl: request too long\n");
            return -1;
        }
        used += (size_t)w;
    }
    struct rci_ctl_cmd cmd;
    char err[256];
    if (rci_ctl_parse(line, used, &cmd, err, sizeof err) != 0) {
        fprintf(stderr, "ringcast-ctl: %s\nTry 'ringcast-ctl --help'.\n", err);
        return -1;
    }
    snprintf(line + used, cap - used, "\n");
    return 0;
}

static int connect_daemon(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "ringcast-ctl: socket path too long: %s\n", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "ringcast-ctl: cannot reach the daemon at %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct timeval tv = {.tv_sec = ANSWER_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

/* Send the line, read the answer to the end. NULL on failure (said why). */
static char *exchange(int fd, const char *line, const char *path)
{
    size_t len = strlen(line);
    if (write(fd, line, len) != (ssize_t)len) {
        fprintf(stderr, "ringcast-ctl: %s: sending the request: %s\n", path, strerror(errno));
        return NULL;
    }
    shutdown(fd, SHUT_WR);
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (used + 1 == cap) {
            char *bigger = cap < ANSWER_MAX ? realloc(buf, cap * 2) : NULL;
            if (!bigger) {
                fprintf(stderr, "ringcast-ctl: %s: answer too large\n", path);
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "ringcast-ctl: %s: no answer: %s\n", path, strerror(errno));
            free(buf);
            return NULL;
        }
        used += (size_t)n;
    }
    if (buf)
        buf[used] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'}, {"compact", no_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    const char *path = DEFAULT_SOCKET;
    bool compact = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "s:ch", longopts, NULL)) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'c': compact = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("ringcast-ctl %s\n", RCI_VERSION); return 0;
        default:
            fprintf(stderr, "ringcast-ctl: unknown option or missing argument: '%s'\n"
                            "Try 'ringcast-ctl --help'.\n", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ringcast-ctl: no command\nTry 'ringcast-ctl --help'.\n");
        return EXIT_USAGE;
    }
    char line[RCI_CTL_MAX_LINE + 2];
    if (build_request(argc - optind, argv + optind, line, sizeof line) != 0)
        return EXIT_USAGE;
    int fd = connect_daemon(path);
    if (fd < 0)
        return EXIT_UNREACHABLE;
    char *text = exchange(fd, line, path);
    close(fd);
    if (!text)
        return EXIT_UNREACHABLE;
    json_error_t jerr;
    json_t *answer = json_loads(text, 0, &jerr);
    if (!answer || !json_is_object(answer)) {
        fprintf(stderr, "ringcast-ctl: %s: the answer is not a JSON object (%s): %.200s\n", path, jerr.text, text);
        free(text);
        json_decref(answer);
        return EXIT_UNREACHABLE;
    }
    free(text);
    char *out = json_dumps(answer, compact ? JSON_COMPACT : JSON_INDENT(2));
    if (out)
        puts(out);
    free(out);
    bool ok = json_is_true(json_object_get(answer, "ok"));
    if (!ok)
        fprintf(stderr, "ringcast-ctl: %s\n", json_string_value(json_object_get(answer, "error")) ?: "failed");
    json_decref(answer);
    return ok ? 0 : EXIT_REFUSED;
}
