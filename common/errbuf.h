/* SPDX-License-Identifier: BSD-3-Clause */
/* errbuf.h — the one way ringcast modules fill a caller's error buffer
 * (char *err, size_t errlen): a message a tool can print as it is. In common/
 * so that every module may include it. */
#ifndef RCI_ERRBUF_H
#define RCI_ERRBUF_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Write a formatted message into err (if the caller gave a buffer). */
static inline __attribute__((format(printf, 3, 4))) void
rci_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif
