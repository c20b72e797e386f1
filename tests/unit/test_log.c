/* SPDX-License-Identifier: BSD-3-Clause */
/* test_log.c — the log's rate limit (tools/log.c, compiled in here: tools/ is
 * not part of the library): one line per cause per interval, counts of the
 * suppressed ones, causes told apart by call site and subject, periodic lines
 * never limited. The clock is the test's own, so no test waits. */
#include "tools/log.c"

#include <stdlib.h>
#include <unistd.h>

#include "tests/unit/cunit_main.h"

static uint64_t fake_now;
static uint64_t fake_clock(void) { return fake_now; }

#define S 1000000000ull

static int saved_fd = -1;
static FILE *capture;
static char captured[1 << 20];

static void capture_begin(void)
{
    fflush(stderr);
    capture = tmpfile();
    CU_ASSERT_FATAL(capture != NULL);
    saved_fd = dup(STDERR_FILENO);
    dup2(fileno(capture), STDERR_FILENO);
}

/* Returns what was logged since capture_begin(). */
static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    rewind(capture);
    size_t n = fread(captured, 1, sizeof captured - 1, capture);
    captured[n] = '\0';
    fclose(capture);
    return captured;
}

static unsigned count_lines(const char *text, const char *with)
{
    unsigned n = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        if (strstr(buf, with)) n++;
        line += len;
    }
    return n;
}

static void setup(uint64_t interval)
{
    rci_log_init("test_log", RCI_LOG_DEBUG);
    rci_log_set_clock(fake_clock); /* also forgets every cause */
    rci_log_set_repeat_interval(interval);
    fake_now = 1000 * S;
}

static void flood(unsigned n, uint64_t step, unsigned subject)
{
    for (unsigned i = 0; i < n; i++) {
        rci_warn("peer %u: chunk %u does not fit the receive buffer", subject, i);
        fake_now += step;
    }
}

static void test_one_line_per_interval(void)
{
    setup(10 * S);
    capture_begin();
    flood(5901, S / 2000, 7);   /* 5901 lines within 2.95 s: the flood */
    fake_now += 10 * S;          /* the interval is over: the next line says how many were left out */
    flood(1, 0, 7);
    const char *log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "peer 7: chunk"), 2);
    CU_ASSERT_EQUAL(count_lines(log, "WARN: peer 7: chunk 0 does not fit the receive buffer\n"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "WARN: peer 7: chunk 0 does not fit the receive buffer [5900 more "
                                     "like this in the last 13.0 s]"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 2);
}

static void test_quiet_cause_count_printed(void)
{
    setup(10 * S);
    capture_begin();
    flood(100, S / 100, 3);
    rci_log_flush(false);         /* 1 s later: its interval is not over */
    const char *log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 1);
    capture_begin();
    fake_now += 9 * S;
    rci_log_flush(false);         /* now it is: the count of the 99 left out, with the last one */
    log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "WARN: [99 more like this in the last 10.0 s, suppressed; the "
                                     "last: peer 3: chunk 99 does not fit"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 1);
    capture_begin();
    flood(3, S, 3);              /* the count line opened a new interval: these wait */
    rci_log_flush(true);          /* at exit: everything still counted is printed */
    log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "[3 more like this in the last 3.0 s, suppressed; the last: peer 3: "
                                     "chunk 2"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 1);
}

static void test_causes_apart(void)
{
    setup(10 * S);
    capture_begin();
    for (unsigned round = 0; round < 50; round++) {
        for (unsigned peer = 0; peer < 4; peer++) /* four subjects at one call site */
            flood(1, 0, peer);
        rci_error("other call site: %u", round);
        rci_info("card.%u: started", round % 2);   /* subject with a digit */
    }
    const char *log = capture_end();
    for (unsigned peer = 0; peer < 4; peer++) {
        char what[64];
        snprintf(what, sizeof what, "peer %u: chunk", peer);
        CU_ASSERT_EQUAL(count_lines(log, what), 1);
    }
    CU_ASSERT_EQUAL(count_lines(log, "other call site"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "card.0: started"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "card.1: started"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 7);
}

static void test_many_causes_evicted_with_count(void)
{
    setup(10 * S);
    capture_begin();
    flood(10, 0, 9999);          /* 9 suppressed, then pushed out by 200 new causes */
    for (unsigned peer = 0; peer < 200; peer++) {
        fake_now += 1000;
        flood(1, 0, peer);
    }
    const char *log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "peer 9999: chunk 0"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "[9 more like this"), 1); /* said when its slot was taken */
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 1 + 200 + 1);
}

static void test_periodic_and_disabled(void)
{
    setup(10 * S);
    capture_begin();
    for (unsigned i = 0; i < 30; i++)
        rci_info_unlimited("card.0: %u Mchunk/s", i);
    const char *log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "card.0: "), 30);
    setup(0);                     /* readout.log_repeat_interval = 0 */
    capture_begin();
    flood(500, 1, 1);
    log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "peer 1: chunk"), 500);
    CU_ASSERT_EQUAL(count_lines(log, "more like this"), 0);
    setup(10 * S);                /* below the log level: neither printed nor counted */
    rci_log_init("test_log", RCI_LOG_WARN);
    capture_begin();
    for (unsigned i = 0; i < 10; i++)
        rci_info("quiet: %u", i);
    rci_log_flush(true);
    log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 0);
}

/* The run's summary: printed at warn (labelled INFO, never limited), left
 * out only at error; the level can be read back. */
static void test_summary_at_warn(void)
{
    setup(10 * S);
    rci_log_init("test_log", RCI_LOG_WARN);
    CU_ASSERT_EQUAL(rci_log_level(), RCI_LOG_WARN);
    capture_begin();
    for (unsigned i = 0; i < 3; i++)
        rci_log_summary("summary: card.0: %u chunks", i);
    rci_info("not at warn");
    const char *log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "INFO: summary: card.0: "), 3);
    CU_ASSERT_EQUAL(count_lines(log, "not at warn"), 0);
    rci_log_init("test_log", RCI_LOG_ERROR);
    capture_begin();
    rci_log_summary("summary: hidden");
    log = capture_end();
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 0);
    rci_log_init("test_log", RCI_LOG_INFO);
}

static void register_tests(void)
{
    RCI_SUITE("log rate limit", {"one line per cause per interval", test_one_line_per_interval},
             {"a quiet cause's count is printed", test_quiet_cause_count_printed},
             {"causes told apart", test_causes_apart},
             {"table full: evicted with its count", test_many_causes_evicted_with_count},
             {"periodic lines, limit off, below level", test_periodic_and_disabled},
             {"the summary at warn", test_summary_at_warn});
}

RCI_CUNIT_MAIN(register_tests)
