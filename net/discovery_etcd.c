/* SPDX-License-Identifier: BSD-3-Clause */
/* discovery_etcd.c — the etcd backend: etcd's v3 JSON gateway (POST
 * /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/kv/put,
 * /v3/kv/range) through libcurl, bodies built and parsed with jansson. Keys
 * and values are base64 as the gateway wants them. Several endpoints: the
 * one that answered last is tried first, then the others in order. */
#include "net/discovery_internal.h"
#include "common/errbuf.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ETCD_CONNECT_TIMEOUT_MS 1000L
#define ETCD_REQUEST_TIMEOUT_MS 2000L
#define ETCD_MAX_RESPONSE       (16u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static int parse_endpoints(struct rci_disc *d, const char *spec, char *err, size_t errlen)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", spec);
    char *save = NULL;
    for (char *hp = strtok_r(copy, ",", &save); hp; hp = strtok_r(NULL, ",", &save)) {
        const char *colon = strrchr(hp, ':');
        char *end;
        unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
        if (!colon || colon == hp || !colon[1] || *end || port == 0 || port > 65535 || strchr(hp, '/')) {
            rci_set_err(err, errlen, "discovery url 'etcd://%s': '%s' is not HOST:PORT", spec, hp);
            return -EINVAL;
        }
        if (d->nendpoints == RCI_DISC_MAX_ENDPOINTS) {
            rci_set_err(err, errlen, "discovery url 'etcd://%s': more than %u endpoints", spec,
                        RCI_DISC_MAX_ENDPOINTS);
            return -EINVAL;
        }
        snprintf(d->endpoint[d->nendpoints++], sizeof d->endpoint[0], "http://%s", hp);
    }
    if (d->nendpoints == 0) {
        rci_set_err(err, errlen, "discovery url 'etcd://%s': no HOST:PORT", spec);
        return -EINVAL;
    }
    return 0;
}

int rci_disc_etcd_open(struct rci_disc *d, const char *spec, char *err, size_t errlen)
{
    d->kind = RCI_DISC_ETCD;
    size_t plen = strlen(d->p.prefix);
    if (plen == 0 || d->p.prefix[0] != '/') {
        rci_set_err(err, errlen, "discovery prefix '%s' must start with '/'", d->p.prefix);
        return -EINVAL;
    }
    int rc = parse_endpoints(d, spec, err, errlen);
    if (rc)
        return rc;
    pthread_once(&curl_once, curl_init);
    d->curl = curl_init_rc == CURLE_OK ? curl_easy_init() : NULL;
    if (!d->curl) {
        rci_set_err(err, errlen, "libcurl could not be initialised");
        return -ENOMEM;
    }
    return 0;
}

void rci_disc_etcd_close(struct rci_disc *d)
{
    if (d->curl)
        curl_easy_cleanup(d->curl);
    d->curl = NULL;
}

struct body {
    char *data;
    size_t len;
    bool too_big;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    struct body *b = ctx;
    size_t n = size * nmemb;
    if (b->len + n > ETCD_MAX_RESPONSE) {
        b->too_big = true;
        return 0;   /* libcurl stops the transfer */
    }
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, ptr, n);
    b->data = grown;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* One POST to one endpoint. 0 with *resp (an object); -EIO when the
 * endpoint could not be reached (try the next); -EPROTO for an answer that
 * is an error or not JSON. */
static int post_one(struct rci_disc *d, const char *endpoint, const char *path, const char *req,
                    json_t **resp, char *err, size_t errlen)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", endpoint, path);
    struct body b = {0};
    CURL *c = d->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ETCD_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ETCD_REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");   /* etcd is reached directly: http_proxy is ignored */
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int rc = 0;
    if (cc != CURLE_OK) {
        rci_set_err(err, errlen, "etcd %s: %s", url, b.too_big ? "answer too large" : curl_easy_strerror(cc));
        rc = b.too_big ? -EPROTO : -EIO;
    } else {
        json_error_t jerr;
        *resp = b.data ? json_loads(b.data, 0, &jerr) : NULL;
        if (status != 200 || !json_is_object(*resp)) {
            json_t *m = json_is_object(*resp) ? json_object_get(*resp, "message") : NULL;
            rci_set_err(err, errlen, "etcd %s: HTTP %ld: %s", url, status,
                        json_is_string(m) ? json_string_value(m) : "answer is not a JSON object");
            json_decref(*resp);
            *resp = NULL;
            rc = -EPROTO;
        }
    }
    free(b.data);
    return rc;
}

/* POST req (consumed) to the endpoints, the last good one first. */
static int post(struct rci_disc *d, const char *path, json_t *req, json_t **resp, char *err, size_t errlen)
{
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text) {
        rci_set_err(err, errlen, "etcd %s: out of memory", path);
        return -ENOMEM;
    }
    int rc = -EIO;
    for (unsigned i = 0; i < d->nendpoints && rc == -EIO; i++) {
        unsigned k = (d->current + i) % d->nendpoints;
        rc = post_one(d, d->endpoint[k], path, text, resp, err, errlen);
        if (rc != -EIO)
            d->current = k;
    }
    free(text);
    return rc;
}

/* The gateway prints int64 as strings ("7587899115212867333"). */
static int64_t json_int64(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (!json_is_string(v))
        return 0;
    char *end;
    long long x = strtoll(json_string_value(v), &end, 10);
    return *end ? 0 : x;
}

static json_t *b64_json(const char *data, size_t len)
{
    size_t cap = (len + 2) / 3 * 4 + 1;
    char *buf = malloc(cap);
    json_t *s = buf && rci_base64_encode(data, len, buf, cap) == cap - 1 ? json_string(buf) : NULL;
    free(buf);
    return s;
}

static int grant(struct rci_disc *d, char *err, size_t errlen)
{
    json_int_t ttl_s = (json_int_t)((d->p.ttl_ns + 999999999u) / 1000000000u);
    json_t *resp = NULL;
    int rc = post(d, "/v3/lease/grant", json_pack("{s:I}", "TTL", ttl_s), &resp, err, errlen);
    if (rc)
        return rc;
    d->lease = json_int64(json_object_get(resp, "ID"));
    json_decref(resp);
    if (d->lease <= 0) {
        rci_set_err(err, errlen, "etcd lease grant: no lease ID in the answer");
        return -EPROTO;
    }
    return 0;
}

static int put(struct rci_disc *d, const struct rci_disc_entry *e, char *err, size_t errlen)
{
    char name[128], key[256], lease[24];
    rci_disc_entry_name(e, name, sizeof name);
    snprintf(key, sizeof key, "%s%s", d->p.prefix, name);
    snprintf(lease, sizeof lease, "%" PRId64, d->lease);
    struct rci_disc_entry with_ttl = *e;
    with_ttl.ttl_ms = d->p.ttl_ns / 1000000u;
    char *value = rci_disc_entry_to_json(&with_ttl);
    json_t *req = value ? json_pack("{s:o, s:o, s:s}", "key", b64_json(key, strlen(key)), "value",
                                    b64_json(value, strlen(value)), "lease", lease)
                        : NULL;
    free(value);
    json_t *resp = NULL;
    int rc = post(d, "/v3/kv/put", req, &resp, err, errlen);
    json_decref(resp);
    return rc ? rc : rci_disc_remember(d, name);
}

/* 1: the lease lives; 0: it expired (the entries are gone); -errno. */
static int keepalive(struct rci_disc *d, char *err, size_t errlen)
{
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRId64, d->lease);
    json_t *resp = NULL;
    int rc = post(d, "/v3/lease/keepalive", json_pack("{s:s}", "ID", lease), &resp, err, errlen);
    if (rc)
        return rc;
    json_t *result = json_object_get(resp, "result");
    int64_t ttl = json_int64(json_object_get(result ? result : resp, "TTL"));
    json_decref(resp);
    return ttl > 0;
}

int rci_disc_etcd_announce(struct rci_disc *d, const struct rci_disc_entry *e, size_t n, char *err,
                           size_t errlen)
{
    if (d->registered) {
        int alive = keepalive(d, err, errlen);
        if (alive < 0)
            return alive;
        if (alive)
            return 0;
        d->registered = false;   /* expired while etcd was away: put everything again */
        d->leases_lost++;
        d->lease = 0;
    }
    int rc = d->lease ? 0 : grant(d, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put(d, &e[i], err, errlen);
    d->registered = rc == 0;
    if (rc)
        d->lease = 0;   /* start over with a new lease: this one may expire meanwhile (it does by itself) */
    return rc;
}

int rci_disc_etcd_withdraw(struct rci_disc *d, char *err, size_t errlen)
{
    if (!d->lease)
        return 0;
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRId64, d->lease);
    json_t *resp = NULL;
    int rc = post(d, "/v3/lease/revoke", json_pack("{s:s}", "ID", lease), &resp, err, errlen);
    json_decref(resp);
    d->lease = 0;
    d->registered = false;
    d->nown = 0;
    return rc;
}

/* One key-value of a range answer. */
static void take_kv(json_t *kv, struct rci_disc_entry *out, size_t max, size_t *n, struct rci_disc_list_stats *st)
{
    json_t *v = json_object_get(kv, "value");
    const char *b64v = json_is_string(v) ? json_string_value(v) : "";
    size_t blen = strlen(b64v);
    char *text = malloc(blen / 4 * 3 + 1);
    long len = text ? rci_base64_decode(b64v, blen, text, blen / 4 * 3) : -1;
    if (len < 0)
        st->malformed++;
    else
        rci_disc_take(text, (size_t)len, "etcd", out, max, n, st, 0, false);
    free(text);
}

int rci_disc_etcd_list(struct rci_disc *d, struct rci_disc_entry *out, size_t max, size_t *n,
                       struct rci_disc_list_stats *st, char *err, size_t errlen)
{
    char end[sizeof d->p.prefix];
    size_t plen = strlen(d->p.prefix);
    memcpy(end, d->p.prefix, plen + 1);
    end[plen - 1]++;   /* every key that starts with the prefix sorts below this */
    json_t *req = json_pack("{s:o, s:o}", "key", b64_json(d->p.prefix, plen), "range_end", b64_json(end, plen));
    json_t *resp = NULL;
    int rc = post(d, "/v3/kv/range", req, &resp, err, errlen);
    if (rc)
        return rc;
    json_t *kvs = json_object_get(resp, "kvs");
    size_t i;
    json_t *kv;
    if (kvs && !json_is_array(kvs))
        st->malformed++;
    json_array_foreach(kvs, i, kv)
        take_kv(kv, out, max, n, st);
    json_decref(resp);
    return 0;
}
