/* SPDX-License-Identifier: BSD-3-Clause */
/* log.h — logging for the programs in tools/: one line per message on stderr,
 * "2026-11-21T05:40:01.123Z ringcast-readout[1234] INFO: text", so journald
 * and a terminal both read it well. Libraries do not log: they return errors
 * and count; the tools decide what to say.
 *
 * Repeated lines are rate-limited: one line per cause per interval (default
 * 10 s, rci_log_set_repeat_interval). A cause is the call site together with
 * the line's subject, the text before its first ": " (at most 48 characters:
 * "card.1", "subscriber 10.0.0.7:5555"), so that one card or one peer flooding
 * the log does not hide the others. Lines of a cause within the interval after
 * one was printed are suppressed and counted; the next line printed for that
 * cause ends with "[N more like this in the last S s]"; a cause that went
 * quiet gets its count printed by the next log call or rci_log_flush() once its
 * interval is over. Periodic statistics and the summary (rci_info_unlimited)
 * are never limited: readout.stats_interval is their rate, or they are once. */
#ifndef RCI_LOG_H
#define RCI_LOG_H
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/log_hook.h"   /* enum rci_log_level, struct rci_log_hook (header only) */

#define RCI_LOG_REPEAT_INTERVAL_NS 10000000000ull /* the default */

void rci_log_init(const char *program, enum rci_log_level level);
/* 0: every line is printed. */
void rci_log_set_repeat_interval(uint64_t ns);
/* Change the level while the program runs (any thread): control socket, reload. */
void rci_log_set_level(enum rci_log_level level);
enum rci_log_level rci_log_get_level(void);
/* For tests: the clock the interval is measured on (NULL: CLOCK_MONOTONIC). */
void rci_log_set_clock(uint64_t (*now_ns)(void));
/* Prints the counts of suppressed lines whose interval is over (all of them
 * when `all`, e.g. at exit). */
void rci_log_flush(bool all);

void rci_log_at(enum rci_log_level level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Never rate-limited: periodic statistics, summaries. */
void rci_log_unlimited(enum rci_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The level set by rci_log_init. */
enum rci_log_level rci_log_level(void);
/* The end of a run: labelled INFO, never rate-limited, and printed at
 * log_level = warn too (a run's figures must not vanish with the chatter);
 * only log_level = error leaves it out. */
void rci_log_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The library modules' log hook (common/log_hook.h): their messages, rate
 * limited like ours. ctx is unused. */
void rci_log_hook_fn(void *ctx, enum rci_log_level level, bool unlimited, const char *file, int line,
                    const char *fmt, va_list ap);
static inline struct rci_log_hook rci_log_hook(void)
{
    return (struct rci_log_hook){.fn = rci_log_hook_fn, .ctx = NULL};
}

#define rci_log(level, ...) rci_log_at(level, __FILE__, __LINE__, __VA_ARGS__)
#define rci_error(...) rci_log_at(RCI_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define rci_warn(...)  rci_log_at(RCI_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define rci_info(...)  rci_log_at(RCI_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define rci_debug(...) rci_log_at(RCI_LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__)
#define rci_info_unlimited(...) rci_log_unlimited(RCI_LOG_INFO, __VA_ARGS__)

#endif
