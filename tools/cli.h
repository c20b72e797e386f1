/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.h — what the programs' command lines share: a whole-string number and
 * the one way a usage error is printed. Header-only and without library
 * includes, so ringcast-sub (built as an outside program would be, against
 * the public headers only: tests/check-includes.sh) may use it too. */
#ifndef RCI_TOOLS_CLI_H
#define RCI_TOOLS_CLI_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The leading unsigned decimal or 0x-hex number of s, refusing what
 * strtoull would take silently (an empty string, a sign, a blank: it reads
 * " -1" as a huge number); *end after its digits. 0 or -1. */
static inline int rci_cli_leading_u64(const char *s, uint64_t *out, char **end)
{
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, end, 0);
    if (errno || *end == s)
        return -1;
    *out = v;
    return 0;
}

/* A whole-string number: nothing after it. 0 or -1. */
static inline int rci_cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    return rci_cli_leading_u64(s, out, &end) || *end ? -1 : 0;
}

/* Bytes: a number with an optional suffix k, M or G, powers of 1024 as in
 * the INI files (64k = 65536, 8M). 0, or -1 for anything else (another
 * suffix, an overflow). */
static inline int rci_cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t v;
    if (rci_cli_leading_u64(s, &v, &end))
        return -1;
    unsigned shift = *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

/* "PROG: <fmt with arg>" and where to look, on stderr; returns -1 so that
 * an option parser can `return rci_cli_usage_error(...)`. */
static inline int rci_cli_usage_error(const char *prog, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    return -1;
}

#endif
