/* test_allow_list.c — net/allow_list.[ch]: parsing the [fabric] allow text
 * (every error kind with its message), matching IPv4, IPv6 and IPv4-mapped
 * peers against prefixes of every length class, and the config key that
 * carries the text (a bad entry is reported at its file line). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "net/allow_list.h"
#include "tests/unit/cunit_main.h"

static struct sockaddr_in v4(const char *text)
{
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(4242)};
    CU_ASSERT_FATAL(inet_pton(AF_INET, text, &in.sin_addr) == 1);
    return in;
}

static struct sockaddr_in6 v6(const char *text)
{
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(4242)};
    CU_ASSERT_FATAL(inet_pton(AF_INET6, text, &in6.sin6_addr) == 1);
    return in6;
}

static bool permits4(const struct rc_allow_list *l, const char *addr)
{
    struct sockaddr_in in = v4(addr);
    return rc_allow_list_permits(l, &in, sizeof in);
}

static bool permits6(const struct rc_allow_list *l, const char *addr)
{
    struct sockaddr_in6 in6 = v6(addr);
    return rc_allow_list_permits(l, &in6, sizeof in6);
}

static void test_parse_ok(void)
{
    struct rc_allow_list l;
    char why[160] = "";
    CU_ASSERT_EQUAL(rc_allow_list_parse("", &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 0);
    CU_ASSERT_EQUAL(rc_allow_list_parse(NULL, &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 0);
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse(" 127.0.0.0/8 ,10.1.0.0/16,\t192.168.7.9, fd00::/8,::1",
                                              &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 5);
    CU_ASSERT_EQUAL(l.net[0].family, 4);
    CU_ASSERT_EQUAL(l.net[0].prefix_len, 8);
    CU_ASSERT_EQUAL(l.net[2].prefix_len, 32);  /* a host */
    CU_ASSERT_EQUAL(l.net[3].family, 6);
    CU_ASSERT_EQUAL(l.net[3].prefix_len, 8);
    CU_ASSERT_EQUAL(l.net[4].prefix_len, 128);
    CU_ASSERT_EQUAL(rc_allow_list_parse("0.0.0.0/0, ::/0", &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, 2);
    char sixteen[400] = "";
    for (int i = 0; i < 16; i++)
        snprintf(sixteen + strlen(sixteen), sizeof sixteen - strlen(sixteen), "%s10.%d.0.0/16",
                 i ? "," : "", i);
    CU_ASSERT_EQUAL(rc_allow_list_parse(sixteen, &l, why, sizeof why), 0);
    CU_ASSERT_EQUAL(l.count, RC_ALLOW_MAX_NETS);
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"10.0.0.0/8,", "empty entry"},
        {",10.0.0.0/8", "empty entry"},
        {"10.0.0.0/8,,127.0.0.1", "empty entry"},
        {"10.0.0.0/33", "'10.0.0.0/33': the prefix length must be a number 0..32"},
        {"fd00::/129", "0..128"},
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/8x", "prefix length"},
        {"10.0.0.0/-8", "prefix length"},
        {"10.0.0.0/0008", "prefix length"},
        {"10.0.0", "'10.0.0': not an IPv4 (a.b.c.d) address"},
        {"10.0.0.256/8", "not an IPv4"},
        {"010.0.0.0/8", "not an IPv4"},
        {"localhost", "not an IPv4"},
        {"fd00:::1/8", "not an IPv6 address"},
        {"10.1.2.3/16", "host bits set after /16 (did you mean 10.1.0.0/16?)"},
        {"fd00::1/64", "did you mean fd00::/64?"},
        {"10.0.0.0 /8", "not an IPv4"},
        {"10.0.0.0/8 10.1.0.0/16", "prefix length"},
        {"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc:dddd/64", "too long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rc_allow_list l;
        char why[160] = "";
        int rc = rc_allow_list_parse(cases[i].text, &l, why, sizeof why);
        if (rc != -EINVAL || !strstr(why, cases[i].why))
            fprintf(stderr, "\n'%s': rc %d, why '%s', expected '%s'\n", cases[i].text, rc, why,
                    cases[i].why);
        CU_ASSERT_EQUAL(rc, -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, cases[i].why));
    }
    char seventeen[400] = "";
    for (int i = 0; i < 17; i++)
        snprintf(seventeen + strlen(seventeen), sizeof seventeen - strlen(seventeen), "%s10.%d.0.0/16",
                 i ? "," : "", i);
    struct rc_allow_list l;
    char why[160] = "";
    CU_ASSERT_EQUAL(rc_allow_list_parse(seventeen, &l, why, sizeof why), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than 16 networks"));
    /* NULL why is allowed */
    CU_ASSERT_EQUAL(rc_allow_list_parse("bad", &l, NULL, 0), -EINVAL);
}

static void test_match_ipv4(void)
{
    struct rc_allow_list l;
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse("10.0.0.0/8, 192.168.4.0/22, 172.16.5.7", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits4(&l, "10.0.0.0"));
    CU_ASSERT_TRUE(permits4(&l, "10.255.255.255"));
    CU_ASSERT_FALSE(permits4(&l, "11.0.0.0"));
    CU_ASSERT_FALSE(permits4(&l, "9.255.255.255"));
    CU_ASSERT_FALSE(permits4(&l, "127.0.0.1"));
    /* /22: a prefix that ends inside a byte */
    CU_ASSERT_TRUE(permits4(&l, "192.168.4.0"));
    CU_ASSERT_TRUE(permits4(&l, "192.168.7.255"));
    CU_ASSERT_FALSE(permits4(&l, "192.168.8.0"));
    CU_ASSERT_FALSE(permits4(&l, "192.168.3.255"));
    /* a host */
    CU_ASSERT_TRUE(permits4(&l, "172.16.5.7"));
    CU_ASSERT_FALSE(permits4(&l, "172.16.5.6"));
    /* IPv4 rules say nothing about IPv6 peers, except IPv4-mapped ones */
    CU_ASSERT_FALSE(permits6(&l, "::1"));
    CU_ASSERT_TRUE(permits6(&l, "::ffff:10.1.2.3"));
    CU_ASSERT_FALSE(permits6(&l, "::ffff:127.0.0.1"));
    /* everyone */
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse("0.0.0.0/0", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits4(&l, "1.2.3.4"));
    CU_ASSERT_TRUE(permits4(&l, "255.255.255.255"));
}

static void test_match_ipv6(void)
{
    struct rc_allow_list l;
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse("fd00::/8, 2001:db8:1234::/49, ::1", &l, NULL, 0), 0);
    CU_ASSERT_TRUE(permits6(&l, "fd12:3456::1"));
    CU_ASSERT_FALSE(permits6(&l, "fe80::1"));
    CU_ASSERT_TRUE(permits6(&l, "::1"));
    CU_ASSERT_FALSE(permits6(&l, "::2"));
    /* /49 ends inside the seventh byte: 2001:db8:1234:0000..7fff */
    CU_ASSERT_TRUE(permits6(&l, "2001:db8:1234:7fff::1"));
    CU_ASSERT_FALSE(permits6(&l, "2001:db8:1234:8000::1"));
    CU_ASSERT_FALSE(permits4(&l, "127.0.0.1"));  /* IPv6 rules say nothing about IPv4 */
}

static void test_match_edge_cases(void)
{
    struct rc_allow_list empty, l;
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse("", &empty, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rc_allow_list_parse("127.0.0.0/8", &l, NULL, 0), 0);
    struct sockaddr_in in = v4("127.0.0.1");
    /* an empty list allows anything, even what is not an IP address */
    CU_ASSERT_TRUE(rc_allow_list_permits(&empty, NULL, 0));
    uint8_t ib[32] = {0xab};
    CU_ASSERT_TRUE(rc_allow_list_permits(&empty, ib, sizeof ib));
    /* a list refuses what it cannot judge: short, unknown family, NULL */
    CU_ASSERT_TRUE(rc_allow_list_permits(&l, &in, sizeof in));
    CU_ASSERT_FALSE(rc_allow_list_permits(&l, &in, sizeof in - 1));
    CU_ASSERT_FALSE(rc_allow_list_permits(&l, ib, sizeof ib));
    CU_ASSERT_FALSE(rc_allow_list_permits(&l, NULL, 0));
    /* the text form */
    CU_ASSERT_TRUE(rc_allow_list_text_permits("", &in, sizeof in));
    CU_ASSERT_TRUE(rc_allow_list_text_permits("127.0.0.0/8", &in, sizeof in));
    CU_ASSERT_FALSE(rc_allow_list_text_permits("10.0.0.0/8", &in, sizeof in));
    CU_ASSERT_FALSE(rc_allow_list_text_permits("127.0.0.0/88", &in, sizeof in)); /* unparsable */
}

/* The [fabric] allow key: checked at load with file:line, printed back as written. */
static void test_config_key(void)
{
    char path[] = "/tmp/rc_allow_XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("[fabric]\nport = 12000\nallow = 10.0.0.0/8, 10.1.2.3/16\n", f);
    fclose(f);
    static struct rc_config cfg;
    struct rc_config_error err;
    CU_ASSERT_EQUAL(rc_config_load(&cfg, path, NULL, 0, NULL, &err), -EINVAL);
    char expect[128];
    snprintf(expect, sizeof expect, "%s:3: [fabric] allow = 10.0.0.0/8, 10.1.2.3/16: '10.1.2.3/16'",
             path);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, expect));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "did you mean 10.1.0.0/16?"));
    unlink(path);

    const char *ov[] = {"fabric.allow=127.0.0.0/8, ::1"};
    CU_ASSERT_EQUAL_FATAL(rc_config_load(&cfg, NULL, ov, 1, NULL, &err), 0);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.allow, "127.0.0.0/8, ::1");
    const char *bad[] = {"fabric.allow=127.0.0.0/8,"};
    CU_ASSERT_EQUAL(rc_config_load(&cfg, NULL, bad, 1, NULL, &err), -EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "-o fabric.allow=127.0.0.0/8,: [fabric] allow"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "empty entry"));
    CU_ASSERT_EQUAL_FATAL(rc_config_load(&cfg, NULL, NULL, 0, NULL, &err), 0);
    CU_ASSERT_STRING_EQUAL(cfg.fabric.allow, "");  /* default: everyone */
}

static void register_tests(void)
{
    RC_SUITE("allow list", {"parse ok", test_parse_ok}, {"parse errors", test_parse_errors},
             {"match ipv4", test_match_ipv4}, {"match ipv6", test_match_ipv6},
             {"match edge cases", test_match_edge_cases}, {"config key", test_config_key});
}

RC_CUNIT_MAIN(register_tests)
