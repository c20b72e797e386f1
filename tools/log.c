#include "tools/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *log_program = "ringcast";
static enum rc_log_level log_level = RC_LOG_INFO;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void rc_log_init(const char *program, enum rc_log_level level)
{
    const char *slash = strrchr(program, '/');
    log_program = slash ? slash + 1 : program;
    log_level = level;
}

void rc_log(enum rc_log_level level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

    /* Build the whole line first so that lines from several threads never
     * interleave: one fputs of one buffer is atomic enough for stderr. */
    char line[1024];
    int n = snprintf(line, sizeof line, "%s.%03ldZ %s[%d] %s: ", stamp, (long)(tv.tv_usec / 1000),
                     log_program, (int)getpid(), level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    } else {
        line[sizeof line - 2] = '\n';
    }
    fputs(line, stderr);
}
