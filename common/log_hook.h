/* SPDX-License-Identifier: BSD-3-Clause */
/* log_hook.h — how a library module says something without deciding where it
 * goes. Libraries do not print: a module that has news for the operator (a
 * subscriber joined, a send refused, a periodic rate) calls the hook its
 * params struct carries; the program (tools/log.c for ours) formats, rate
 * limits and writes it. No hook (fn == NULL): nothing is said, errors are still
 * returned and counted. */
#ifndef RC_LOG_HOOK_H
#define RC_LOG_HOOK_H
#include <stdarg.h>
#include <stdbool.h>

enum rc_log_level { RC_LOG_ERROR = 0, RC_LOG_WARN, RC_LOG_INFO, RC_LOG_DEBUG };

/* file and line name the call site (a program's rate limiter keys on it);
 * unlimited: periodic statistics and summaries, which must never be
 * suppressed as repeats. Called from the module's own threads. */
typedef void (*rc_log_fn)(void *ctx, enum rc_log_level level, bool unlimited, const char *file,
                          int line, const char *fmt, va_list ap);

struct rc_log_hook {
    rc_log_fn fn;
    void *ctx;
};

static inline __attribute__((format(printf, 6, 7))) void
rc_log_hook_say(const struct rc_log_hook *h, enum rc_log_level level, bool unlimited, const char *file,
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
