/* SPDX-License-Identifier: BSD-3-Clause */
/* test_prom_text.c — the Prometheus text exposition writer (common/prom_text.c):
 * the exact bytes of HELP/TYPE lines and samples, escaping of label values and
 * HELP text, one family per name, no duplicate series (whatever the label
 * order), name checks, value formats, and that a refused call leaves the
 * document unchanged. */
#include "common/prom_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/cunit_main.h"

#define L(n, v) {.name = (n), .value = (v)}

static const char *doc(const struct rci_prom *p)
{
    return rci_prom_text(p, NULL);
}

static void test_family_and_samples(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "ringcast_chunks_total", RCI_PROM_COUNTER, "Chunks decoded."), 0);
    struct rci_prom_label l0[] = {L("card", "0")}, l1[] = {L("card", "1")};
    CU_ASSERT_EQUAL(rci_prom_counter(&p, l0, 1, 18446744073709551615ull), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, l1, 1, 0), 0);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "ringcast_up", RCI_PROM_GAUGE, "One."), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, NULL, 0, 1), 0);
    CU_ASSERT_STRING_EQUAL(doc(&p),
        "# HELP ringcast_chunks_total Chunks decoded.\n"
        "# TYPE ringcast_chunks_total counter\n"
        "ringcast_chunks_total{card=\"0\"} 18446744073709551615\n"
        "ringcast_chunks_total{card=\"1\"} 0\n"
        "# HELP ringcast_up One.\n"
        "# TYPE ringcast_up gauge\n"
        "ringcast_up 1\n");
    CU_ASSERT_PTR_NULL(rci_prom_error(&p));
    size_t len;
    rci_prom_text(&p, &len);
    CU_ASSERT_EQUAL(len, strlen(doc(&p)));
    rci_prom_fini(&p);
}

/* A family without a sample writes nothing: no HELP/TYPE without series. */
static void test_empty_family_left_out(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "a_total", RCI_PROM_COUNTER, "x"), 0);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "b", RCI_PROM_GAUGE, "y"), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, NULL, 0, 2.5), 0);
    CU_ASSERT_STRING_EQUAL(doc(&p), "# HELP b y\n# TYPE b gauge\nb 2.5\n");
    /* Its name stays taken all the same. */
    CU_ASSERT_NOT_EQUAL(rci_prom_family(&p, "a_total", RCI_PROM_COUNTER, "x"), 0);
    rci_prom_fini(&p);
}

static void test_label_escaping(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "g", RCI_PROM_GAUGE, "help with \\ and\nnewline and \"quotes\""), 0);
    struct rci_prom_label l[] = {L("address", "a\\b\"c\nd"), L("empty", ""), L("utf8", "f\xc3\xbcr")};
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, l, 3, 0), 0);
    CU_ASSERT_STRING_EQUAL(doc(&p),
        "# HELP g help with \\\\ and\\nnewline and \"quotes\"\n"
        "# TYPE g gauge\n"
        "g{address=\"a\\\\b\\\"c\\nd\",empty=\"\",utf8=\"f\xc3\xbcr\"} 0\n");
    rci_prom_fini(&p);
}

static void test_one_family_per_name(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "x_total", RCI_PROM_COUNTER, "x"), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, NULL, 0, 1), 0);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "y", RCI_PROM_GAUGE, "y"), 0);
    const char *before = "# HELP x_total x\n# TYPE x_total counter\nx_total 1\n";
    CU_ASSERT_STRING_EQUAL(doc(&p), before);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "x_total", RCI_PROM_COUNTER, "again"), -EINVAL);
    CU_ASSERT_STRING_EQUAL(doc(&p), before);
    CU_ASSERT_PTR_NOT_NULL(rci_prom_error(&p));
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_prom_error(&p), "x_total"));
    rci_prom_fini(&p);
}

static void test_no_duplicate_series(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "s_total", RCI_PROM_COUNTER, "s"), 0);
    struct rci_prom_label ab[] = {L("a", "1"), L("b", "2")}, ba[] = {L("b", "2"), L("a", "1")};
    struct rci_prom_label a1[] = {L("a", "1")}, a12[] = {L("a", "12")}, b1[] = {L("b", "1")};
    CU_ASSERT_EQUAL(rci_prom_counter(&p, ab, 2, 1), 0);
    size_t len;
    rci_prom_text(&p, &len);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, ba, 2, 2), -EINVAL);   /* same set, other order */
    CU_ASSERT_EQUAL(rci_prom_counter(&p, ab, 2, 3), -EINVAL);
    size_t after;
    rci_prom_text(&p, &after);
    CU_ASSERT_EQUAL(after, len);
    /* Sets that only look alike are different series. */
    CU_ASSERT_EQUAL(rci_prom_counter(&p, a1, 1, 4), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, a12, 1, 5), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, b1, 1, 6), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, NULL, 0, 7), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, NULL, 0, 8), -EINVAL);
    /* Another family may reuse the label sets. */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "t_total", RCI_PROM_COUNTER, "t"), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, ab, 2, 1), 0);
    rci_prom_fini(&p);
}

/* Thousands of series (2048 e-links): the set grows and still finds repeats. */
static void test_many_series(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "e_total", RCI_PROM_COUNTER, "e"), 0);
    char v[16];
    int bad = 0;
    for (unsigned i = 0; i < 5000; i++) {
        snprintf(v, sizeof v, "%u", i);
        struct rci_prom_label l[] = {L("card", "0"), L("elink", v)};
        bad += rci_prom_counter(&p, l, 2, i) != 0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (unsigned i = 0; i < 5000; i += 7) {
        snprintf(v, sizeof v, "%u", i);
        struct rci_prom_label l[] = {L("elink", v), L("card", "0")};
        bad += rci_prom_counter(&p, l, 2, i) == 0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(doc(&p), "e_total{card=\"0\",elink=\"4999\"} 4999\n"));
    rci_prom_fini(&p);
}

static void test_names(void)
{
    CU_ASSERT_TRUE(rci_prom_valid_metric_name("ringcast_x:y_1"));
    CU_ASSERT_TRUE(rci_prom_valid_metric_name("_x"));
    CU_ASSERT_FALSE(rci_prom_valid_metric_name("1x"));
    CU_ASSERT_FALSE(rci_prom_valid_metric_name("a-b"));
    CU_ASSERT_FALSE(rci_prom_valid_metric_name("a b"));
    CU_ASSERT_FALSE(rci_prom_valid_metric_name(""));
    CU_ASSERT_FALSE(rci_prom_valid_metric_name(NULL));
    CU_ASSERT_TRUE(rci_prom_valid_label_name("card_1"));
    CU_ASSERT_FALSE(rci_prom_valid_label_name("a:b"));
    CU_ASSERT_FALSE(rci_prom_valid_label_name("__name__"));
    CU_ASSERT_FALSE(rci_prom_valid_label_name("9"));

    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "bad name", RCI_PROM_GAUGE, ""), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "chunks", RCI_PROM_COUNTER, ""), -EINVAL); /* no _total */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "g", (enum rci_prom_type)7, ""), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, NULL, 0, 1), -EINVAL); /* no family yet */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "g", RCI_PROM_GAUGE, ""), 0);
    struct rci_prom_label bad[] = {L("__x", "1")}, twice[] = {L("a", "1"), L("a", "2")};
    struct rci_prom_label noval[] = {{.name = "a", .value = NULL}};
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, bad, 1, 1), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, twice, 2, 1), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, noval, 1, 1), -EINVAL);
    CU_ASSERT_STRING_EQUAL(doc(&p), "");
    /* The first error is kept. */
    CU_ASSERT_PTR_NOT_NULL(strstr(rci_prom_error(&p), "bad name"));
    rci_prom_fini(&p);
}

static void test_value_kinds(void)
{
    struct rci_prom p;
    rci_prom_init(&p);
    CU_ASSERT_EQUAL(rci_prom_family(&p, "c_total", RCI_PROM_COUNTER, ""), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, NULL, 0, 1.5), -EINVAL); /* a counter takes integers */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "g", RCI_PROM_GAUGE, ""), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, NULL, 0, 1), -EINVAL);
    struct rci_prom_label a[] = {L("v", "a")}, b[] = {L("v", "b")}, c[] = {L("v", "c")}, d[] = {L("v", "d")};
    struct rci_prom_label e[] = {L("v", "e")}, f[] = {L("v", "f")};
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, a, 1, NAN), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, b, 1, INFINITY), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, c, 1, -INFINITY), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, d, 1, 0.9), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, e, 1, 1795000000.123456), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, f, 1, 9007199254740993.0), 0);
    CU_ASSERT_STRING_EQUAL(doc(&p),
        "# HELP g \n# TYPE g gauge\n"
        "g{v=\"a\"} NaN\ng{v=\"b\"} +Inf\ng{v=\"c\"} -Inf\ng{v=\"d\"} 0.9\n"
        "g{v=\"e\"} 1795000000.123456\ng{v=\"f\"} 9007199254740992\n");
    /* Counters in seconds: fractional, but never negative or infinite. */
    CU_ASSERT_EQUAL(rci_prom_counter_f(&p, a, 1, 1.5), -EINVAL); /* g is a gauge */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "t_seconds_total", RCI_PROM_COUNTER, "t"), 0);
    CU_ASSERT_EQUAL(rci_prom_counter_f(&p, a, 1, 1.5), 0);
    CU_ASSERT_EQUAL(rci_prom_counter_f(&p, b, 1, -1), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_counter_f(&p, c, 1, INFINITY), -EINVAL);
    CU_ASSERT_EQUAL(rci_prom_counter_f(&p, d, 1, NAN), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(doc(&p), "t_seconds_total{v=\"a\"} 1.5\n"));
    CU_ASSERT_PTR_NULL(strstr(doc(&p), "t_seconds_total{v=\"b\"}"));
    /* Untyped takes both. */
    CU_ASSERT_EQUAL(rci_prom_family(&p, "u", RCI_PROM_UNTYPED, "u"), 0);
    CU_ASSERT_EQUAL(rci_prom_counter(&p, a, 1, 3), 0);
    CU_ASSERT_EQUAL(rci_prom_gauge(&p, b, 1, 0.25), 0);
    rci_prom_fini(&p);
}

static void register_tests(void)
{
    RCI_SUITE("prom_text", {"family and samples", test_family_and_samples},
              {"empty family left out", test_empty_family_left_out},
              {"label and HELP escaping", test_label_escaping},
              {"one family per name", test_one_family_per_name},
              {"no duplicate series", test_no_duplicate_series}, {"many series", test_many_series},
              {"names", test_names}, {"value kinds", test_value_kinds});
}

RCI_CUNIT_MAIN(register_tests)
