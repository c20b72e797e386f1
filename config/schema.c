/* SPDX-License-Identifier: BSD-3-Clause */
/* schema.c — the list of sections and the typed value helpers every table
 * row goes through: parse + check the row's own constraints, store into the
 * struct member, format back to text, describe the allowed range. The same
 * code handles defaults, file values and -o overrides. */
#include "config/schema.h"
#include "common/errbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const struct rci_cfg_section *const rci_cfg_sections[RCI_CFG_NSECTIONS] = {
    &rci_cfg_section_readout, &rci_cfg_section_metrics, &rci_cfg_section_mode,
    &rci_cfg_section_fabric,  &rci_cfg_section_discovery, &rci_cfg_section_card,
    &rci_cfg_section_sim,     &rci_cfg_section_control,
};

void *rci_cfg_params(const struct rci_cfg_section *s, struct rci_config *cfg, unsigned index)
{
    return (char *)cfg + s->cfg_offset + (size_t)index * s->struct_size;
}

const void *rci_cfg_params_const(const struct rci_cfg_section *s, const struct rci_config *cfg,
                                unsigned index)
{
    return (const char *)cfg + s->cfg_offset + (size_t)index * s->struct_size;
}

const struct rci_cfg_key *rci_cfg_find_key(const struct rci_cfg_section *s, const char *key)
{
    for (size_t i = 0; i < s->nkeys; i++)
        if (strcmp(s->keys[i].key, key) == 0) return &s->keys[i];
    return NULL;
}

void rci_cfg_instance_name(const struct rci_cfg_section *s, unsigned index, char *buf, size_t len)
{
    if (s->repeated) snprintf(buf, len, "%s.%u", s->name, index);
    else snprintf(buf, len, "%s", s->name);
}

const char *rci_cfg_type_name(enum rci_cfg_type t)
{
    switch (t) {
    case RCI_CFG_BOOL: return "bool";
    case RCI_CFG_UINT: return "integer";
    case RCI_CFG_SIZE: return "size";
    case RCI_CFG_DURATION: return "duration";
    case RCI_CFG_RATE: return "rate";
    case RCI_CFG_PROB: return "probability";
    case RCI_CFG_STRING: return "string";
    case RCI_CFG_ENUM: return "choice";
    }
    return "?";
}

/* Say why in the caller's buffer and return -EINVAL. */
#define fail(why, whylen, ...) (rci_set_err((why), (whylen), __VA_ARGS__), -EINVAL)

/* ---- integers (UINT, SIZE, DURATION) ---- */

static void format_integer(enum rci_cfg_type t, uint64_t v, char *buf, size_t len)
{
    if (t == RCI_CFG_SIZE) rci_format_size(v, buf, len);
    else if (t == RCI_CFG_DURATION) rci_format_duration(v, buf, len);
    else snprintf(buf, len, "%" PRIu64, v);
}

static uint64_t member_max(const struct rci_cfg_key *k)
{
    return k->size >= 8 ? UINT64_MAX : (1ull << (8 * k->size)) - 1;
}

static int check_integer(const struct rci_cfg_key *k, uint64_t v, char *why, size_t whylen)
{
    if (v < k->min || v > k->max || v > member_max(k)) {
        char range[96];
        rci_cfg_format_range(k, range, sizeof range);
        return fail(why, whylen, "out of range (allowed: %s)", range);
    }
    if (k->multiple && v % k->multiple != 0) {
        char m[32];
        format_integer(k->type, k->multiple, m, sizeof m);
        return fail(why, whylen, "not a multiple of %s", m);
    }
    if ((k->flags & RCI_CFG_F_POW2) && (v & (v - 1)) != 0)
        return fail(why, whylen, "not a power of two");
    return 0;
}

static int parse_integer(const struct rci_cfg_key *k, const char *text, uint64_t *v, char *why,
                         size_t whylen)
{
    int rc;
    if (k->type == RCI_CFG_SIZE) rc = rci_cfg_parse_size(text, v, why, whylen);
    else if (k->type == RCI_CFG_DURATION) rc = rci_cfg_parse_duration(text, v, why, whylen);
    else rc = rci_cfg_parse_uint(text, v, why, whylen);
    return rc ? rc : check_integer(k, *v, why, whylen);
}

/* ---- other types ---- */

static int parse_rate(const struct rci_cfg_key *k, const char *text, struct rci_rate *r, char *why,
                      size_t whylen)
{
    int rc = rci_cfg_parse_rate(text, r, why, whylen);
    if (rc || r->unit == RCI_RATE_UNLIMITED) return rc;
    if (r->per_second < (double)k->min || r->per_second > (double)k->max) {
        char range[96];
        rci_cfg_format_range(k, range, sizeof range);
        return fail(why, whylen, "out of range (allowed: %s)", range);
    }
    return 0;
}

static int parse_probability(const char *text, double *d, char *why, size_t whylen)
{
    int rc = rci_cfg_parse_double(text, d, why, whylen);
    if (rc) return rc;
    if (*d < 0 || *d > 1) return fail(why, whylen, "a probability must be within 0..1");
    return 0;
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

static int check_string(const struct rci_cfg_key *k, const char *text, char *why, size_t whylen)
{
    size_t len = strlen(text);
    if (len < k->min) return fail(why, whylen, len ? "too short" : "empty value");
    if (len > k->max || len + 1 > k->size)
        return fail(why, whylen, "too long (%zu characters, at most %" PRIu64 ")", len,
                    k->max < k->size - 1 ? k->max : (uint64_t)(k->size - 1));
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f) return fail(why, whylen, "contains a control character");
        /* an INI file would read the rest as a comment: the value could not be written back
         * (a leading ';' follows the blank of the printed "key = value") */
        if (c == ';' && (i == 0 || blank(text[i - 1])))
            return fail(why, whylen, "%s ';' (the start of a comment in an INI file)",
                        i == 0 ? "starts with" : "contains a blank followed by");
    }
    if (len && (blank(text[0]) || blank(text[len - 1])))
        return fail(why, whylen, "starts or ends with a blank");
    return 0;
}

/* Index of text among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *text)
{
    size_t tlen = strlen(text);
    int index = 0;
    for (const char *p = choices; *p; index++) {
        size_t n = strcspn(p, "|");
        if (n == tlen && strncmp(p, text, n) == 0) return index;
        p += n;
        if (*p == '|') p++;
    }
    return -1;
}

/* The text of choice `index` (for printing). */
static void choice_name(const char *choices, unsigned index, char *buf, size_t len)
{
    const char *p = choices;
    for (unsigned i = 0; i < index && *p; i++) {
        p += strcspn(p, "|");
        if (*p == '|') p++;
    }
    snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
}

int rci_cfg_parse_value(const struct rci_cfg_key *k, const char *text, union rci_cfg_value *v,
                       char *why, size_t whylen)
{
    if (!text[0] && !(k->type == RCI_CFG_STRING && k->min == 0))
        return fail(why, whylen, "empty value");
    switch (k->type) {
    case RCI_CFG_BOOL: return rci_cfg_parse_bool(text, &v->b, why, whylen);
    case RCI_CFG_UINT:
    case RCI_CFG_SIZE:
    case RCI_CFG_DURATION: return parse_integer(k, text, &v->u, why, whylen);
    case RCI_CFG_RATE: return parse_rate(k, text, &v->rate, why, whylen);
    case RCI_CFG_PROB: return parse_probability(text, &v->d, why, whylen);
    case RCI_CFG_STRING: {
        v->s = text;
        int rc = check_string(k, text, why, whylen);
        /* an empty value is what a string with minimum length 0 means by "not given" */
        return rc == 0 && k->validate && text[0] ? k->validate(text, why, whylen) : rc;
    }
    case RCI_CFG_ENUM: {
        int i = choice_index(k->choices, text);
        if (i < 0) return fail(why, whylen, "not one of %s", k->choices);
        v->e = (unsigned)i;
        return 0;
    }
    }
    return fail(why, whylen, "unknown type");
}

/* ---- storing and reading struct members ---- */

static void store_uint(void *dst, size_t size, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (size) {
    case 1: memcpy(dst, &u8, 1); break;
    case 2: memcpy(dst, &u16, 2); break;
    case 4: memcpy(dst, &u32, 4); break;
    default: memcpy(dst, &v, 8); break;
    }
}

static uint64_t load_uint(const void *src, size_t size)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1: memcpy(&u8, src, 1); return u8;
    case 2: memcpy(&u16, src, 2); return u16;
    case 4: memcpy(&u32, src, 4); return u32;
    default: memcpy(&u64, src, 8); return u64;
    }
}

/* Field by field into zeroed bytes: the padding of struct rci_rate stays zero,
 * so equal configurations compare equal with memcmp. */
static void store_rate(void *dst, const struct rci_rate *rate)
{
    struct rci_rate r;
    memset(&r, 0, sizeof r);
    r.unit = rate->unit;
    r.per_second = rate->per_second;
    memcpy(dst, &r, sizeof r);
}

void rci_cfg_store(const struct rci_cfg_key *k, void *params, const union rci_cfg_value *v)
{
    char *dst = (char *)params + k->offset;
    switch (k->type) {
    case RCI_CFG_BOOL: memcpy(dst, &v->b, sizeof v->b); break;
    case RCI_CFG_UINT:
    case RCI_CFG_SIZE:
    case RCI_CFG_DURATION: store_uint(dst, k->size, v->u); break;
    case RCI_CFG_RATE: store_rate(dst, &v->rate); break;
    case RCI_CFG_PROB: memcpy(dst, &v->d, sizeof v->d); break;
    case RCI_CFG_STRING: snprintf(dst, k->size, "%s", v->s); break;
    case RCI_CFG_ENUM: store_uint(dst, k->size, v->e); break; /* enum members are int-sized */
    }
}

void rci_cfg_format_value(const struct rci_cfg_key *k, const void *params, char *buf, size_t len)
{
    const char *src = (const char *)params + k->offset;
    switch (k->type) {
    case RCI_CFG_BOOL: {
        bool b;
        memcpy(&b, src, sizeof b);
        snprintf(buf, len, "%s", b ? "true" : "false");
        break;
    }
    case RCI_CFG_UINT:
        if (k->flags & RCI_CFG_F_HEX) {
            snprintf(buf, len, "0x%" PRIx64, load_uint(src, k->size));
            break;
        }
        /* fall through */
    case RCI_CFG_SIZE:
    case RCI_CFG_DURATION: format_integer(k->type, load_uint(src, k->size), buf, len); break;
    case RCI_CFG_RATE: {
        struct rci_rate r;
        memcpy(&r, src, sizeof r);
        rci_format_rate(&r, buf, len);
        break;
    }
    case RCI_CFG_PROB: {
        double d;
        memcpy(&d, src, sizeof d);
        rci_cfg_format_double(d, buf, len);
        break;
    }
    case RCI_CFG_STRING: snprintf(buf, len, "%.*s", (int)strnlen(src, k->size), src); break;
    case RCI_CFG_ENUM: choice_name(k->choices, (unsigned)load_uint(src, k->size), buf, len); break;
    }
}

/* ---- describing the allowed values ---- */

/* A per-second count with the largest exact SI multiplier: 1000000000000 -> "1000G". */
static void format_si(uint64_t v, char *buf, size_t len)
{
    static const struct { const char *name; uint64_t mult; } m[] = {
        {"G", 1000000000}, {"M", 1000000}, {"k", 1000},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (v && v % m[i].mult == 0) {
            snprintf(buf, len, "%" PRIu64 "%s", v / m[i].mult, m[i].name);
            return;
        }
    snprintf(buf, len, "%" PRIu64, v);
}

static void format_integer_range(const struct rci_cfg_key *k, char *buf, size_t len)
{
    char lo[32], hi[32];
    uint64_t max = k->max < member_max(k) ? k->max : member_max(k);
    format_integer(k->type, k->min, lo, sizeof lo);
    format_integer(k->type, max, hi, sizeof hi);
    int n = max == UINT64_MAX ? (k->min ? snprintf(buf, len, "at least %s", lo)
                                        : snprintf(buf, len, "any"))
                              : snprintf(buf, len, "%s..%s", lo, hi);
    if (n < 0 || (size_t)n >= len) return;
    if (k->multiple) {
        char m[32];
        format_integer(k->type, k->multiple, m, sizeof m);
        n += snprintf(buf + n, len - (size_t)n, ", multiple of %s", m);
    }
    if ((k->flags & RCI_CFG_F_POW2) && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", power of two");
    if ((k->flags & RCI_CFG_F_AUTO) && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", or auto");
}

void rci_cfg_format_range(const struct rci_cfg_key *k, char *buf, size_t len)
{
    char lo[32], hi[32];
    switch (k->type) {
    case RCI_CFG_BOOL: snprintf(buf, len, "true|false"); break;
    case RCI_CFG_UINT:
    case RCI_CFG_SIZE:
    case RCI_CFG_DURATION: format_integer_range(k, buf, len); break;
    case RCI_CFG_RATE:
        format_si(k->min, lo, sizeof lo);
        format_si(k->max, hi, sizeof hi);
        snprintf(buf, len, "unlimited, or %s..%s B/s or chunks/s", lo, hi);
        break;
    case RCI_CFG_PROB: snprintf(buf, len, "0..1"); break;
    case RCI_CFG_STRING:
        snprintf(buf, len, "%" PRIu64 "..%" PRIu64 " characters%s", k->min,
                 k->max < k->size - 1 ? k->max : (uint64_t)(k->size - 1),
                 (k->flags & RCI_CFG_F_AUTO) ? ", or auto" : "");
        break;
    case RCI_CFG_ENUM: snprintf(buf, len, "%s", k->choices); break;
    }
}
