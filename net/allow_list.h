/* SPDX-License-Identifier: BSD-3-Clause */
/* allow_list.h — the subscriber networks a publisher accepts ([fabric] allow):
 * a comma-separated list of IPv4 and IPv6 networks in CIDR notation
 * ("127.0.0.0/8, 10.1.0.0/16, fd00::/8"; an address without "/len" is one
 * host). An empty list accepts everyone.
 *
 * Parsed once where the text comes from (config/ checks it at load, the
 * publisher again at create) and matched against the socket address of a
 * connection request (MSG) or a HELLO (RDM). An IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d, as a dual-stack socket reports IPv4 peers) is matched as
 * the IPv4 address it holds. An address that is neither IPv4 nor IPv6
 * (shm, InfiniBand GIDs, ...) is refused by a non-empty list: the list
 * cannot say anything about it, and a list is there to keep strangers out.
 *
 * No allocation, no globals: usable from any thread, on the stack. */
#ifndef RCI_ALLOW_LIST_H
#define RCI_ALLOW_LIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RCI_ALLOW_MAX_NETS 16u

struct rci_allow_net {
    uint8_t family;      /* 4 or 6 */
    uint8_t prefix_len;  /* 0..32 or 0..128 */
    uint8_t addr[16];    /* network address, host bits zero; IPv4 in the first 4 bytes */
};

struct rci_allow_list {
    unsigned count;      /* 0: everyone is allowed */
    struct rci_allow_net net[RCI_ALLOW_MAX_NETS];
};

/* Parse text (NULL or "" gives the empty list). Returns 0, or -EINVAL with
 * the entry and the reason in why: a bad address, a prefix length that is
 * not a number or too long for the family, host bits set below the prefix
 * ("10.1.2.3/16": did you mean 10.1.0.0/16?), an empty entry, or more than
 * RCI_ALLOW_MAX_NETS entries. */
int rci_allow_list_parse(const char *text, struct rci_allow_list *out, char *why, size_t whylen);

/* Does the list allow the peer at this socket address (struct sockaddr_in
 * or sockaddr_in6, addrlen bytes)? True for an empty list. */
bool rci_allow_list_permits(const struct rci_allow_list *list, const void *sockaddr, size_t addrlen);

/* Parse text and match in one call, for callers that meet a peer rarely
 * (a connection request, a HELLO) and keep only the text. A text that does
 * not parse allows nobody (it was to be checked where it came from). */
bool rci_allow_list_text_permits(const char *text, const void *sockaddr, size_t addrlen);

#endif
