/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery_entry.c — one publisher's discovery entry as JSON (jansson), and
 * the base64 the etcd gateway wants. Everything read is checked: an entry
 * is trusted only when every field is present, of the right type and within
 * its bounds. */
#include "net/discovery.h"
#include "common/errbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t rci_disc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rci_disc_entry_name(const struct rci_disc_entry *e, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%u", e->daemon_id, e->thread);
}

/* Tags are 64-bit unsigned: JSON numbers (int64 in jansson) cannot hold them
 * all, so they travel as "0x..." strings. */
static json_t *tag_json(uint64_t tag)
{
    char buf[24];
    snprintf(buf, sizeof buf, "0x%" PRIx64, tag);
    return json_string(buf);
}

char *rci_disc_entry_to_json(const struct rci_disc_entry *e)
{
    json_t *tags = json_array();
    for (unsigned i = 0; tags && i < e->nranges; i++)
        json_array_append_new(tags, json_pack("[oo]", tag_json(e->first[i]), tag_json(e->last[i])));
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:o}",
                          "format", RCI_DISC_FORMAT, "daemon_id", e->daemon_id, "hostname", e->hostname,
                          "pid", (json_int_t)e->pid, "start_time_ms", (json_int_t)e->start_time_ms,
                          "refreshed_ms", (json_int_t)e->refreshed_ms, "ttl_ms", (json_int_t)e->ttl_ms, "thread", (int)e->thread,
                          "threads", (int)e->threads, "host", e->host, "port", (int)e->port,
                          "provider", e->provider, "endpoint", e->endpoint, "deliveries", e->deliveries,
                          "tags", tags);
    if (!o)
        return NULL;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* A string field that must fit buf (and be non-empty unless may_be_empty). */
static int get_string(json_t *o, const char *key, char *buf, size_t len, bool may_be_empty, char *why,
                      size_t whylen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        rci_set_err(why, whylen, "\"%s\" missing or not a string", key);
        return -EINVAL;
    }
    size_t n = json_string_length(v);
    if (n >= len || (n == 0 && !may_be_empty) || strlen(json_string_value(v)) != n) {
        rci_set_err(why, whylen, "\"%s\" empty, too long or with a NUL byte", key);
        return -EINVAL;
    }
    memcpy(buf, json_string_value(v), n + 1);
    return 0;
}

static int get_int(json_t *o, const char *key, json_int_t min, json_int_t max, json_int_t *out, char *why,
                   size_t whylen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        rci_set_err(why, whylen, "\"%s\" missing, not an integer or outside %lld..%lld", key,
                    (long long)min, (long long)max);
        return -EINVAL;
    }
    *out = json_integer_value(v);
    return 0;
}

static int parse_tag(json_t *v, uint64_t *out)
{
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    if (strncmp(s, "0x", 2) != 0 || !s[2] || strlen(s) > 18)
        return -1;
    char *end;
    *out = strtoull(s + 2, &end, 16);
    return *end ? -1 : 0;
}

static int get_tags(json_t *o, struct rci_disc_entry *e, char *why, size_t whylen)
{
    json_t *tags = json_object_get(o, "tags");
    if (!json_is_array(tags) || json_array_size(tags) == 0 || json_array_size(tags) > RCI_DISC_MAX_RANGES) {
        rci_set_err(why, whylen, "\"tags\" missing, empty or more than %u ranges", RCI_DISC_MAX_RANGES);
        return -EINVAL;
    }
    e->nranges = (unsigned)json_array_size(tags);
    for (unsigned i = 0; i < e->nranges; i++) {
        json_t *r = json_array_get(tags, i);
        if (!json_is_array(r) || json_array_size(r) != 2 || parse_tag(json_array_get(r, 0), &e->first[i]) ||
            parse_tag(json_array_get(r, 1), &e->last[i]) || e->first[i] > e->last[i]) {
            rci_set_err(why, whylen, "\"tags\"[%u] is not [\"0xFIRST\", \"0xLAST\"] with FIRST <= LAST", i);
            return -EINVAL;
        }
    }
    return 0;
}

static int entry_fields(json_t *o, struct rci_disc_entry *e, char *why, size_t whylen)
{
    json_int_t pid, start, refreshed, ttl, thread, threads, port;
    int rc = get_string(o, "daemon_id", e->daemon_id, sizeof e->daemon_id, false, why, whylen);
    if (!rc) rc = get_string(o, "hostname", e->hostname, sizeof e->hostname, false, why, whylen);
    if (!rc) rc = get_int(o, "pid", 1, INT32_MAX, &pid, why, whylen);
    if (!rc) rc = get_int(o, "start_time_ms", 0, INT64_MAX, &start, why, whylen);
    if (!rc) rc = get_int(o, "refreshed_ms", 0, INT64_MAX, &refreshed, why, whylen);
    if (!rc) rc = get_int(o, "ttl_ms", 1000, 3600000, &ttl, why, whylen);
    if (!rc) rc = get_int(o, "threads", 1, 1024, &threads, why, whylen);
    if (!rc) rc = get_int(o, "thread", 0, threads - 1, &thread, why, whylen);
    if (!rc) rc = get_string(o, "host", e->host, sizeof e->host, false, why, whylen);
    if (!rc) rc = get_int(o, "port", 1, 65535, &port, why, whylen);
    if (!rc) rc = get_string(o, "provider", e->provider, sizeof e->provider, false, why, whylen);
    if (!rc) rc = get_string(o, "endpoint", e->endpoint, sizeof e->endpoint, false, why, whylen);
    if (!rc) rc = get_string(o, "deliveries", e->deliveries, sizeof e->deliveries, true, why, whylen);
    if (!rc) rc = get_tags(o, e, why, whylen);
    if (rc)
        return rc;
    if (strcmp(e->endpoint, "msg") != 0 && strcmp(e->endpoint, "rdm") != 0) {
        rci_set_err(why, whylen, "\"endpoint\" '%s' is neither msg nor rdm", e->endpoint);
        return -EINVAL;
    }
    e->pid = pid;
    e->start_time_ms = (uint64_t)start;
    e->refreshed_ms = (uint64_t)refreshed;
    e->ttl_ms = (uint64_t)ttl;
    e->thread = (unsigned)thread;
    e->threads = (unsigned)threads;
    e->port = (uint16_t)port;
    return 0;
}

int rci_disc_entry_from_json(const char *text, size_t len, struct rci_disc_entry *e, char *why, size_t whylen)
{
    memset(e, 0, sizeof *e);
    if (len > RCI_DISC_ENTRY_MAX) {
        rci_set_err(why, whylen, "%zu bytes, more than an entry may have (%u)", len, RCI_DISC_ENTRY_MAX);
        return -EINVAL;
    }
    json_error_t jerr;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        rci_set_err(why, whylen, "not JSON: %s (at %d)", jerr.text, jerr.position);
        return -EINVAL;
    }
    int rc;
    json_t *fmt = json_is_object(o) ? json_object_get(o, "format") : NULL;
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), RCI_DISC_FORMAT) != 0) {
        rci_set_err(why, whylen, "not a ringcast publisher entry (format is not \"%s\")", RCI_DISC_FORMAT);
        rc = -ENOENT;
    } else {
        rc = entry_fields(o, e, why, whylen);
    }
    json_decref(o);
    return rc;
}

/* ---- base64 ---------------------------------------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t rci_base64_encode(const void *in, size_t len, char *out, size_t outlen)
{
    const uint8_t *p = in;
    size_t need = (len + 2) / 3 * 4;
    if (outlen < need + 1)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len) v |= p[i + 2];
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

long rci_base64_decode(const char *in, size_t len, void *out, size_t outlen)
{
    uint8_t *o = out;
    size_t n = 0;
    if (len % 4)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        int pad = (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=');
        if (pad && i + 4 != len)
            return -1;
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = k >= 4 - pad ? 0 : b64_value(in[i + k]);
            if (v[k] < 0)
                return -1;
        }
        /* canonical only: the bits a padded quantum leaves over must be 0 */
        if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15)))
            return -1;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if (n + 3 - (size_t)pad > outlen)
            return -1;
        o[n++] = (uint8_t)(w >> 16);
        if (pad < 2) o[n++] = (uint8_t)(w >> 8);
        if (pad < 1) o[n++] = (uint8_t)w;
    }
    return (long)n;
}
