/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_config.c — libFuzzer target: the INI loader rci_config_load() (config/
 * config.c with inih, schema.c, units.c) on arbitrary file contents and
 * command-line overrides. The input is the file; if it holds a line "%%",
 * the lines after it are overrides ("section.key=value", at most 8).
 *
 * The loader reads a named file, so the input is written to a memfd and
 * loaded through /proc/self/fd/N: the same code path as a file on disk.
 * Besides the sanitizers, it checks the loader's contract: a rejected input
 * has a message and an error count and leaves the configuration zeroed; an
 * accepted one prints (rci_config_print) as an INI file that loads back and
 * prints the same again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "config/config.h"

#define FZ_MAX_OVERRIDES 8
#define FZ_OVERRIDE_LEN 600   /* longer than the loader's limit: it must refuse those */

#define FZ_TARGET "fuzz_config"
#include "tests/fuzz/fuzz_check.h"

struct memfile {
    int fd;
    char path[64];
};

static void memfile_open(struct memfile *m, const char *name)
{
    m->fd = memfd_create(name, 0);
    FZ_CHECK(m->fd >= 0, "memfd_create: %s", strerror(errno));
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

static void memfile_set(struct memfile *m, const void *data, size_t len)
{
    FZ_CHECK(ftruncate(m->fd, 0) == 0, "ftruncate: %s", strerror(errno));
    FZ_CHECK(pwrite(m->fd, data, len, 0) == (ssize_t)len, "pwrite: %s", strerror(errno));
}

/* Where the override part starts ("%%" line), or len if there is none. */
static size_t split_at(const uint8_t *data, size_t len, size_t *overrides_at)
{
    for (size_t i = 0; i + 2 <= len; i++) {
        bool line_start = i == 0 || data[i - 1] == '\n';
        bool line_end = i + 2 == len || data[i + 2] == '\n';
        if (line_start && line_end && data[i] == '%' && data[i + 1] == '%') {
            *overrides_at = i + 2 < len ? i + 3 : len;
            return i;
        }
    }
    *overrides_at = len;
    return len;
}

static unsigned parse_overrides(const uint8_t *p, size_t len,
                                char text[FZ_MAX_OVERRIDES][FZ_OVERRIDE_LEN],
                                const char *ptr[FZ_MAX_OVERRIDES])
{
    unsigned n = 0;
    while (len > 0 && n < FZ_MAX_OVERRIDES) {
        const uint8_t *nl = memchr(p, '\n', len);
        size_t l = nl ? (size_t)(nl - p) : len;
        size_t keep = l < FZ_OVERRIDE_LEN - 1 ? l : FZ_OVERRIDE_LEN - 1;
        memcpy(text[n], p, keep);
        text[n][keep] = '\0';   /* an embedded NUL just ends the override early */
        ptr[n] = text[n];
        n++;
        size_t used = nl ? l + 1 : l;
        p += used;
        len -= used;
    }
    return n;
}

static bool all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++)
        if (b[i]) return false;
    return true;
}

/* The printed configuration without its comment lines (the first names the
 * source file, which differs between the two loads). */
static char *print_without_comments(const struct rci_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    FZ_CHECK(out != NULL, "open_memstream");
    rci_config_print(cfg, out);
    fclose(out);
    char *w = text;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (line[0] != '#') {
            memmove(w, line, l);
            w += l;
        }
        line += l;
    }
    *w = '\0';
    return text;
}

static void check_round_trip(const struct rci_config *cfg, struct memfile *printed)
{
    static struct rci_config again;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    FZ_CHECK(out != NULL, "open_memstream");
    rci_config_print(cfg, out);
    fclose(out);
    memfile_set(printed, text, len);
    free(text);

    struct rci_config_error err;
    int rc = rci_config_load(&again, printed->path, NULL, 0, NULL, &err);
    FZ_CHECK(rc == 0, "the printed configuration does not load: %s", err.msg);
    char *first = print_without_comments(cfg), *second = print_without_comments(&again);
    FZ_CHECK(strcmp(first, second) == 0, "printed configuration changed on reload:\n%s\n---\n%s",
             first, second);
    free(first);
    free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct memfile input, printed;
    static struct rci_config cfg;
    static char override_text[FZ_MAX_OVERRIDES][FZ_OVERRIDE_LEN];
    if (input.path[0] == '\0') {
        memfile_open(&input, "fuzz_config.ini");
        memfile_open(&printed, "fuzz_config_printed.ini");
    }
    size_t overrides_at;
    size_t file_len = split_at(data, size, &overrides_at);
    const char *overrides[FZ_MAX_OVERRIDES];
    unsigned n = parse_overrides(data + overrides_at, size - overrides_at, override_text, overrides);
    memfile_set(&input, data, file_len);

    struct rci_config_error err;
    int rc = rci_config_load(&cfg, input.path, overrides, n, NULL, &err);
    if (rc != 0) {
        FZ_CHECK(rc == -EINVAL, "rci_config_load returned %d", rc);
        FZ_CHECK(err.count > 0 && err.msg[0] != '\0', "rejected without a message");
        FZ_CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL, "message not terminated");
        FZ_CHECK(all_zero(&cfg, sizeof cfg), "a rejected configuration is not zeroed");
        return 0;
    }
    FZ_CHECK(err.count == 0, "accepted with %u errors", err.count);
    check_round_trip(&cfg, &printed);
    return 0;
}
