/* log.h — logging for the programs in tools/: one line per message on stderr,
 * "2026-11-21T05:40:01.123Z ringcast-readout[1234] INFO: text", so journald
 * and a terminal both read it well. Libraries do not log: they return errors
 * and count; the tools decide what to say. */
#ifndef RC_LOG_H
#define RC_LOG_H
#include "config/config.h"

void rc_log_init(const char *program, enum rc_log_level level);
void rc_log(enum rc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rc_error(...) rc_log(RC_LOG_ERROR, __VA_ARGS__)
#define rc_warn(...)  rc_log(RC_LOG_WARN, __VA_ARGS__)
#define rc_info(...)  rc_log(RC_LOG_INFO, __VA_ARGS__)
#define rc_debug(...) rc_log(RC_LOG_DEBUG, __VA_ARGS__)

#endif
