/* SPDX-License-Identifier: BSD-3-Clause */
/* allow_list.c — parsing and matching the [fabric] allow list (allow_list.h). */
#include "net/allow_list.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

#define ENTRY_MAX 64u  /* longest IPv6 text (45) + "/128", with room to spare */

/* Say why in the caller's buffer and return -EINVAL. */
#define fail(why, whylen, ...) (rci_set_err((why), (whylen), __VA_ARGS__), -EINVAL)

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* "/len": 1 to 3 digits, at most max. */
static int parse_prefix_len(const char *text, unsigned max, uint8_t *out)
{
    size_t n = strlen(text);
    if (n == 0 || n > 3 || strspn(text, "0123456789") != n)
        return -EINVAL;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned)(text[i] - '0');
    if (v > max)
        return -ERANGE;
    *out = (uint8_t)v;
    return 0;
}

/* Are the bits of addr below prefix_len all zero? */
static bool host_bits_clear(const uint8_t *addr, unsigned nbytes, unsigned prefix_len)
{
    for (unsigned bit = prefix_len; bit < nbytes * 8; bit++)
        if (addr[bit / 8] & (0x80u >> (bit % 8)))
            return false;
    return true;
}

static void clear_host_bits(uint8_t *addr, unsigned nbytes, unsigned prefix_len)
{
    for (unsigned bit = prefix_len; bit < nbytes * 8; bit++)
        addr[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

/* One entry, blanks trimmed: "a.b.c.d[/len]" or "ipv6[/len]". */
static int parse_entry(const char *entry, struct rci_allow_net *net, char *why, size_t whylen)
{
    char buf[ENTRY_MAX];
    if (strlen(entry) >= sizeof buf)
        return fail(why, whylen, "'%.40s...': too long for an address", entry);
    snprintf(buf, sizeof buf, "%s", entry);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    bool v6 = strchr(buf, ':') != NULL;
    unsigned nbytes = v6 ? 16 : 4;
    memset(net, 0, sizeof *net);
    net->family = v6 ? 6 : 4;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, net->addr) != 1)
        return fail(why, whylen, "'%s': not an %s address", entry,
                          v6 ? "IPv6" : "IPv4 (a.b.c.d)");
    net->prefix_len = (uint8_t)(nbytes * 8);
    if (slash && parse_prefix_len(slash + 1, nbytes * 8, &net->prefix_len) != 0)
        return fail(why, whylen, "'%s': the prefix length must be a number 0..%u", entry,
                          nbytes * 8);
    if (!host_bits_clear(net->addr, nbytes, net->prefix_len)) {
        /* 10.1.2.3/16 is most likely a typo for a host or for 10.1.0.0/16: ask */
        uint8_t masked[16];
        char text[INET6_ADDRSTRLEN];
        memcpy(masked, net->addr, sizeof masked);
        clear_host_bits(masked, nbytes, net->prefix_len);
        inet_ntop(v6 ? AF_INET6 : AF_INET, masked, text, sizeof text);
        return fail(why, whylen, "'%s': host bits set after /%u (did you mean %s/%u?)",
                          entry, net->prefix_len, text, net->prefix_len);
    }
    return 0;
}

int rci_allow_list_parse(const char *text, struct rci_allow_list *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return 0;
    const char *p = text;
    while (is_blank(*p))
        p++;
    if (!*p)
        return 0;
    for (;;) {
        size_t n = strcspn(p, ",");
        char entry[ENTRY_MAX + 8];
        size_t start = 0, len = n;
        while (start < len && is_blank(p[start]))
            start++;
        while (len > start && is_blank(p[len - 1]))
            len--;
        if (len == start)
            return fail(why, whylen, "empty entry (two commas, or a comma at an end)");
        if (out->count == RCI_ALLOW_MAX_NETS)
            return fail(why, whylen, "more than %u networks", RCI_ALLOW_MAX_NETS);
        snprintf(entry, sizeof entry, "%.*s", (int)(len - start), p + start);
        if (parse_entry(entry, &out->net[out->count], why, whylen) != 0)
            return -EINVAL;
        out->count++;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

static bool prefix_matches(const uint8_t *addr, const struct rci_allow_net *net)
{
    unsigned whole = net->prefix_len / 8, rest = net->prefix_len % 8;
    if (memcmp(addr, net->addr, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (addr[whole] & mask) == net->addr[whole];
}

/* The peer as (family, address bytes); false if it is neither IPv4 nor IPv6. */
static bool peer_address(const void *sockaddr, size_t addrlen, uint8_t *family, uint8_t addr[16])
{
    sa_family_t sa_family;
    if (!sockaddr || addrlen < sizeof sa_family)
        return false;
    memcpy(&sa_family, sockaddr, sizeof sa_family);
    if (sa_family == AF_INET && addrlen >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sockaddr, sizeof in);
        memcpy(addr, &in.sin_addr, 4);
        *family = 4;
        return true;
    }
    if (sa_family == AF_INET6 && addrlen >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sockaddr, sizeof in6);
        if (memcmp(in6.sin6_addr.s6_addr, v4_mapped_prefix, sizeof v4_mapped_prefix) == 0) {
            memcpy(addr, in6.sin6_addr.s6_addr + 12, 4);
            *family = 4;
        } else {
            memcpy(addr, in6.sin6_addr.s6_addr, 16);
            *family = 6;
        }
        return true;
    }
    return false;
}

bool rci_allow_list_permits(const struct rci_allow_list *list, const void *sockaddr, size_t addrlen)
{
    if (list->count == 0)
        return true;
    uint8_t family, addr[16];
    if (!peer_address(sockaddr, addrlen, &family, addr))
        return false;
    for (unsigned i = 0; i < list->count; i++)
        if (list->net[i].family == family && prefix_matches(addr, &list->net[i]))
            return true;
    return false;
}

bool rci_allow_list_text_permits(const char *text, const void *sockaddr, size_t addrlen)
{
    struct rci_allow_list list;
    return rci_allow_list_parse(text, &list, NULL, 0) == 0 &&
           rci_allow_list_permits(&list, sockaddr, addrlen);
}
