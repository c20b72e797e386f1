/* SPDX-License-Identifier: BSD-3-Clause */
/* log_hook.h — how a library module says something without deciding where it
 * goes. Libraries do not print: a module that has news for the operator (a
 * subscriber joined, a send refused, a periodic rate) calls the hook its
 * params struct carries; the program (tools/log.c for ours) formats, rate
 * limits and writes it. No hook (fn == NULL): nothing is said, errors are still
 * returned and counted. */
#ifndef RCI_LOG_HOOK_H
#define RCI_LOG_HOOK_H
#include <stdarg.h>
#include <stdbool.h>

enum rci_log_level { RCI_LOG_ERROR = 0, RCI_LOG_WARN, RCI_LOG_INFO, RCI_LOG_DEBUG };

/* file and line name the call site (a program's rate limiter keys on it);
 * unlimited: periodic statistics and summaries, which must never be
 * suppressed as repeats. Called from the module's own threads. */
typedef void (*rci_log_fn)(void *ctx, enum rci_log_level level, bool unlimited, const char *file,
                          int line, const char *fmt, va_list ap);

struct rci_log_hook {
    rci_log_fn fn;
    void *ctx;
};

static inline __attribute__((format(printf, 6, 7))) void
rci_log_hook_say(const struct rci_log_hook *h, enum rci_log_level level, bool unlimited, const char *file,
                int line, const char *fmt, ...)
{
    if (!h->fn)
        return;
    va_list ap;
    va_start(ap, fmt);
    h->fn(h->ctx, level, unlimited, file, line, fmt, ap);
    va_end(ap);
}

#endif
