/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_discovery.c — libFuzzer target: what discovery reads from etcd or a
 * directory, written by anyone: rci_disc_entry_from_json() on arbitrary
 * bytes and rci_base64_decode() (the etcd gateway's encoding) on them.
 * Properties: a refused entry says why; an accepted one keeps every bound
 * (terminated strings, ranges first <= last, thread < threads, port > 0)
 * and survives a round trip to JSON and back unchanged; base64 that decodes
 * encodes back to the same text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/discovery.h"

#define FZ_TARGET "fuzz_discovery"
#include "tests/fuzz/fuzz_check.h"

static void check_entry(const uint8_t *data, size_t size)
{
    struct rci_disc_entry e, back;
    char why[256] = "";
    int rc = rci_disc_entry_from_json((const char *)data, size, &e, why, sizeof why);
    if (rc) {
        FZ_CHECK(rc == -EINVAL || rc == -ENOENT, "rc %d", rc);
        FZ_CHECK(why[0], "refused without a reason");
        return;
    }
    FZ_CHECK(memchr(e.host, 0, sizeof e.host) && e.host[0], "host");
    FZ_CHECK(memchr(e.daemon_id, 0, sizeof e.daemon_id), "daemon_id");
    FZ_CHECK(e.port > 0 && e.thread < e.threads, "port %u thread %u/%u", e.port, e.thread, e.threads);
    FZ_CHECK(e.nranges >= 1 && e.nranges <= RCI_DISC_MAX_RANGES, "nranges %u", e.nranges);
    for (unsigned r = 0; r < e.nranges; r++)
        FZ_CHECK(e.first[r] <= e.last[r], "range %u", r);
    char *text = rci_disc_entry_to_json(&e);
    FZ_CHECK(text != NULL, "to_json failed");
    FZ_CHECK(rci_disc_entry_from_json(text, strlen(text), &back, why, sizeof why) == 0, "round trip: %s", why);
    FZ_CHECK(memcmp(&e, &back, sizeof e) == 0, "round trip changed the entry");
    free(text);
}

static void check_base64(const uint8_t *data, size_t size)
{
    static uint8_t out[1 << 16];
    static char again[(1 << 16) / 3 * 4 + 8];
    if (size > sizeof out)
        return;
    long n = rci_base64_decode((const char *)data, size, out, sizeof out);
    if (n < 0)
        return;
    size_t len = rci_base64_encode(out, (size_t)n, again, sizeof again);
    FZ_CHECK(len == size && memcmp(again, data, size) == 0, "base64 of %zu bytes does not encode back", size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_entry(data, size);
    check_base64(data, size);
    return 0;
}
