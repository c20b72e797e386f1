/* SPDX-License-Identifier: BSD-3-Clause */
/* log.c — see log.h. One mutex serialises the rate-limit table and the output:
 * logging is never on a per-chunk path by design, and a flood is exactly when
 * the cost of a suppressed line (a table lookup) beats that of a printed one. */
#include "tools/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CAUSES 128          /* causes followed at once; the least recent one makes room */
#define SUBJECT_MAX 48      /* characters of a line's subject that tell causes apart */
#define LINE_MAX_LEN 1024

static const char *log_program = "ringcast";
/* Atomic: the control socket and SIGHUP reload change it while threads log. */
static _Atomic int log_level = RCI_LOG_INFO;
static uint64_t repeat_interval_ns = RCI_LOG_REPEAT_INTERVAL_NS;
static uint64_t (*log_clock)(void);
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

/* One cause: a call site and a subject. */
struct cause {
    const char *file;        /* NULL: free slot */
    int line;
    uint64_t subject_hash;
    enum rci_log_level level;
    uint64_t window_start;   /* when its last line was printed */
    uint64_t last_used;
    uint64_t suppressed;     /* lines since then not printed */
    char last_text[160];     /* the last suppressed one, for the count line */
};

static struct cause causes[CAUSES];

void rci_log_init(const char *program, enum rci_log_level level)
{
    const char *slash = strrchr(program, '/');
    log_program = slash ? slash + 1 : program;
    log_level = level;
}

void rci_log_set_level(enum rci_log_level level)
{
    log_level = level;
}

enum rci_log_level rci_log_get_level(void)
{
    return (enum rci_log_level)log_level;
}

void rci_log_set_repeat_interval(uint64_t ns)
{
    pthread_mutex_lock(&log_lock);
    repeat_interval_ns = ns;
    pthread_mutex_unlock(&log_lock);
}

void rci_log_set_clock(uint64_t (*now_ns)(void))
{
    pthread_mutex_lock(&log_lock);
    log_clock = now_ns;
    memset(causes, 0, sizeof causes);
    pthread_mutex_unlock(&log_lock);
}

static uint64_t now_ns(void)
{
    if (log_clock)
        return log_clock();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes "stamp program[pid] LEVEL: text" as one fputs: lines from several
 * threads never interleave. */
static void emit(enum rci_log_level level, const char *text)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char line[LINE_MAX_LEN + 128];
    int n = snprintf(line, sizeof line, "%s.%03ldZ %s[%d] %s: %s", stamp, (long)(tv.tv_usec / 1000),
                     log_program, (int)getpid(), level_names[level], text);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    } else {
        line[sizeof line - 2] = '\n';
    }
    fputs(line, stderr);
}

/* FNV-1a of the text before the first ": " (at most SUBJECT_MAX characters). */
static uint64_t subject_hash(const char *text)
{
    const char *end = strstr(text, ": ");
    size_t n = end ? (size_t)(end - text) : strlen(text);
    if (n > SUBJECT_MAX)
        n = SUBJECT_MAX;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    return h;
}

static void print_suppressed(struct cause *c, uint64_t now)
{
    char text[LINE_MAX_LEN];
    snprintf(text, sizeof text, "[%llu more like this in the last %.1f s, suppressed; the last: %s]",
             (unsigned long long)c->suppressed, (double)(now - c->window_start) / 1e9,
             c->last_text);
    emit(c->level, text);
    c->suppressed = 0;
}

/* Counts of causes whose interval is over (or of all); under log_lock. */
static void flush_locked(uint64_t now, bool all)
{
    for (unsigned i = 0; i < CAUSES; i++) {
        struct cause *c = &causes[i];
        if (c->file && c->suppressed && (all || now - c->window_start >= repeat_interval_ns)) {
            print_suppressed(c, now);
            c->window_start = now; /* a line now would start a new interval anyway */
        }
    }
}

void rci_log_flush(bool all)
{
    pthread_mutex_lock(&log_lock);
    flush_locked(now_ns(), all);
    pthread_mutex_unlock(&log_lock);
}

/* The cause's slot, a new one (the least recently used when the table is full,
 * after its count was printed), under log_lock. */
static struct cause *find_cause(const char *file, int line, uint64_t hash, uint64_t now, bool *is_new)
{
    struct cause *victim = &causes[0];
    for (unsigned i = 0; i < CAUSES; i++) {
        struct cause *c = &causes[i];
        if (c->file == file && c->line == line && c->subject_hash == hash) {
            *is_new = false;
            return c;
        }
        if (!c->file || (victim->file && c->last_used < victim->last_used))
            victim = c;
    }
    if (victim->file && victim->suppressed)
        print_suppressed(victim, now);
    *is_new = true;
    memset(victim, 0, sizeof *victim);
    return victim;
}

/* Should this line be printed? Counts it if not. Under log_lock. */
static bool admit(enum rci_log_level level, const char *file, int line, const char *text, uint64_t now,
                  uint64_t *suppressed_before, double *window_s)
{
    bool is_new;
    struct cause *c = find_cause(file, line, subject_hash(text), now, &is_new);
    c->last_used = now;
    if (!is_new && now - c->window_start < repeat_interval_ns) {
        c->suppressed++;
        snprintf(c->last_text, sizeof c->last_text, "%s", text);
        return false;
    }
    *suppressed_before = c->suppressed;
    *window_s = is_new ? 0 : (double)(now - c->window_start) / 1e9;
    *c = (struct cause){.file = file, .line = line, .subject_hash = subject_hash(text),
                        .level = level, .window_start = now, .last_used = now};
    return true;
}

static void log_limited(enum rci_log_level level, const char *file, int line, const char *fmt, va_list ap)
{
    if ((int)level > log_level)
        return;
    char text[LINE_MAX_LEN];
    vsnprintf(text, sizeof text, fmt, ap);
    pthread_mutex_lock(&log_lock);
    uint64_t now = now_ns();
    uint64_t suppressed = 0;
    double window_s = 0;
    if (repeat_interval_ns == 0) {
        emit(level, text);
    } else if (admit(level, file, line, text, now, &suppressed, &window_s)) {
        if (suppressed) {
            size_t n = strlen(text);
            snprintf(text + n, sizeof text - n, " [%llu more like this in the last %.1f s]",
                     (unsigned long long)suppressed, window_s);
        }
        emit(level, text);
    }
    flush_locked(now, false); /* after: this cause's count went into its line */
    pthread_mutex_unlock(&log_lock);
}

static void log_unlimited(enum rci_log_level level, const char *fmt, va_list ap)
{
    if ((int)level > log_level)
        return;
    char text[LINE_MAX_LEN];
    vsnprintf(text, sizeof text, fmt, ap);
    pthread_mutex_lock(&log_lock);
    emit(level, text);
    pthread_mutex_unlock(&log_lock);
}

void rci_log_at(enum rci_log_level level, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_limited(level, file, line, fmt, ap);
    va_end(ap);
}

void rci_log_unlimited(enum rci_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_unlimited(level, fmt, ap);
    va_end(ap);
}

enum rci_log_level rci_log_level(void)
{
    return log_level;
}

void rci_log_summary(const char *fmt, ...)
{
    if (log_level < RCI_LOG_WARN)
        return;
    char text[LINE_MAX_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    emit(RCI_LOG_INFO, text);
    pthread_mutex_unlock(&log_lock);
}

void rci_log_hook_fn(void *ctx, enum rci_log_level level, bool unlimited, const char *file, int line,
                    const char *fmt, va_list ap)
{
    (void)ctx;
    if (unlimited)
        log_unlimited(level, fmt, ap);
    else
        log_limited(level, file, line, fmt, ap);
}
