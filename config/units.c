/* SPDX-License-Identifier: BSD-3-Clause */
/* units.c — parsers and formatters for sizes, durations, rates, booleans and
 * integers (syntax in config.h). Every parser rejects empty input, trailing
 * garbage and overflow, and says why in `why` (which may be NULL). Integer
 * values are computed exactly (no floating point): "1.5k" is 1536 bytes, and
 * "1.1k" is an error because it is not a whole number of bytes. */
#include "config/schema.h"
#include "common/intmath.h"
#include "common/errbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_FRACTION_DIGITS 9u   /* more precision than any size or duration needs */

struct unit {
    const char *name;
    uint64_t mult;
};

static const struct unit size_units[] = {
    {"", 1}, {"B", 1},
    {"k", 1ull << 10}, {"K", 1ull << 10}, {"KiB", 1ull << 10},
    {"M", 1ull << 20}, {"MiB", 1ull << 20},
    {"G", 1ull << 30}, {"GiB", 1ull << 30},
    {"T", 1ull << 40}, {"TiB", 1ull << 40},
};
/* Decimal (SI) or binary? Users mean both, so we refuse to guess. */
static const char *const ambiguous_size_units[] = {"kB", "KB", "MB", "GB", "TB"};

static const struct unit duration_units[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000},
};

static const struct unit rate_multipliers[] = {
    {"", 1}, {"k", 1000}, {"K", 1000}, {"M", 1000000}, {"G", 1000000000},
};

/* A decimal number whole.frac with `digits` fraction digits, or a hex integer. */
struct number {
    uint64_t whole;
    uint64_t frac;
    uint64_t scale;          /* 10^digits */
    unsigned digits;
    const char *text;        /* where it starts in the input */
    size_t len;              /* its length in the input */
};

/* Say why in the caller's buffer and return rc. */
#define fail(rc, why, whylen, ...) (rci_set_err((why), (whylen), __VA_ARGS__), (rc))

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_digit(char c)
{
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static const char *skip_blanks(const char *p)
{
    while (is_blank(*p)) p++;
    return p;
}

static int parse_hex(const char *s, struct number *n, const char **end, char *why, size_t whylen)
{
    const char *p = s + 2;
    if (hex_digit(*p) < 0) return fail(-EINVAL, why, whylen, "'0x' without hex digits");
    for (; hex_digit(*p) >= 0; p++) {
        if (n->whole > (UINT64_MAX >> 4))
            return fail(-ERANGE, why, whylen, "number too large (more than 64 bits)");
        n->whole = (n->whole << 4) | (uint64_t)hex_digit(*p);
    }
    *end = p;
    return 0;
}

static int parse_decimal(const char *s, struct number *n, const char **end, char *why,
                         size_t whylen)
{
    const char *p = s;
    for (; is_digit(*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (n->whole > (UINT64_MAX - d) / 10)
            return fail(-ERANGE, why, whylen, "number too large (more than 64 bits)");
        n->whole = n->whole * 10 + d;
    }
    if (*p == '.') {
        p++;
        if (!is_digit(*p)) return fail(-EINVAL, why, whylen, "no digit after the decimal point");
        for (; is_digit(*p); p++) {
            if (++n->digits > MAX_FRACTION_DIGITS)
                return fail(-EINVAL, why, whylen, "more than %u digits after the decimal point",
                            MAX_FRACTION_DIGITS);
            n->frac = n->frac * 10 + (uint64_t)(*p - '0');
            n->scale *= 10;
        }
    }
    *end = p;
    return 0;
}

/* Parse the number at the start of s; *end is set after it. */
static int parse_number(const char *s, bool allow_hex, struct number *n, const char **end,
                        char *why, size_t whylen)
{
    *n = (struct number){.scale = 1, .text = s};
    if (!s || !*s) return fail(-EINVAL, why, whylen, "empty value");
    if (*s == '-') return fail(-EINVAL, why, whylen, "negative values are not allowed");
    if (!is_digit(*s)) return fail(-EINVAL, why, whylen, "not a number");
    int rc = (allow_hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                 ? parse_hex(s, n, end, why, whylen)
                 : parse_decimal(s, n, end, why, whylen);
    n->len = (size_t)(*end - s);
    return rc;
}

/* A number followed by its unit (size, duration, rate): *unit is set to
 * where the unit starts, blanks between the two skipped. */
static int parse_quantity(const char *s, bool allow_hex, struct number *n, const char **unit,
                          char *why, size_t whylen)
{
    int rc = parse_number(s, allow_hex, n, unit, why, whylen);
    if (rc == 0) *unit = skip_blanks(*unit);
    return rc;
}


/* whole.frac * mult as an exact integer. frac / scale * mult is computed as
 * frac * (mult / g) / (scale / g): frac * mult itself could pass 64 bits
 * (frac < 10^9, mult up to 2^40). */
static int scale_exact(const struct number *n, uint64_t mult, const char *base, uint64_t *out,
                       char *why, size_t whylen)
{
    uint64_t g = rci_gcd_u64(mult, n->scale), whole, frac_part;
    if (__builtin_mul_overflow(n->frac, mult / g, &frac_part))
        return fail(-ERANGE, why, whylen, "too large (more than 2^64-1 %s)", base);
    if (frac_part % (n->scale / g) != 0)
        return fail(-EINVAL, why, whylen, "not a whole number of %s", base);
    if (__builtin_mul_overflow(n->whole, mult, &whole) ||
        __builtin_add_overflow(whole, frac_part / (n->scale / g), out))
        return fail(-ERANGE, why, whylen, "too large (more than 2^64-1 %s)", base);
    return 0;
}

static const struct unit *find_unit(const struct unit *units, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(units[i].name, name) == 0) return &units[i];
    return NULL;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int rci_cfg_parse_size(const char *s, uint64_t *out, char *why, size_t whylen)
{
    struct number n;
    const char *p;
    int rc = parse_quantity(s, true, &n, &p, why, whylen);
    if (rc) return rc;
    const struct unit *u = find_unit(size_units, NELEM(size_units), p);
    if (!u) {
        for (size_t i = 0; i < NELEM(ambiguous_size_units); i++)
            if (strcmp(p, ambiguous_size_units[i]) == 0)
                return fail(-EINVAL, why, whylen,
                            "unit '%s' is ambiguous (powers of 1000 or 1024?): write '%c' or "
                            "'%ciB' (powers of 1024)",
                            p, p[0] == 'k' ? 'k' : p[0], p[0] == 'k' ? 'K' : p[0]);
        return fail(-EINVAL, why, whylen,
                    "unknown unit '%s' (use k, M, G, T or KiB, MiB, GiB, TiB: powers of 1024; "
                    "B or nothing for bytes)", p);
    }
    return scale_exact(&n, u->mult, "bytes", out, why, whylen);
}

int rci_cfg_parse_duration(const char *s, uint64_t *ns, char *why, size_t whylen)
{
    if (s && strcmp(s, "0") == 0) { /* the one value whose unit does not matter */
        *ns = 0;
        return 0;
    }
    struct number n;
    const char *p;
    int rc = parse_quantity(s, false, &n, &p, why, whylen);
    if (rc) return rc;
    if (!*p)
        return fail(-EINVAL, why, whylen,
                    "a duration needs a unit: ns, us, ms or s (only 0 may be written without one)");
    const struct unit *u = find_unit(duration_units, NELEM(duration_units), p);
    if (!u) return fail(-EINVAL, why, whylen, "unknown unit '%s' (use ns, us, ms or s)", p);
    return scale_exact(&n, u->mult, "ns", ns, why, whylen);
}

/* The number as a double, correctly rounded by strtod. */
static double number_value(const struct number *n)
{
    char text[64];
    size_t len = n->len < sizeof text - 1 ? n->len : sizeof text - 1;
    memcpy(text, n->text, len);
    text[len] = '\0';
    return strtod(text, NULL);
}

static const char *rate_unit_hint = "write e.g. 2.5GB/s, 800MB/s, 10Mchunks/s, 5000chunks/s or "
                                    "'unlimited' (k/M/G = powers of 1000)";

int rci_cfg_parse_rate(const char *s, struct rci_rate *out, char *why, size_t whylen)
{
    if (s && strcmp(s, "unlimited") == 0) {
        *out = (struct rci_rate){.unit = RCI_RATE_UNLIMITED, .per_second = 0};
        return 0;
    }
    struct number n;
    const char *p;
    int rc = parse_quantity(s, false, &n, &p, why, whylen);
    if (rc) return rc;
    const char *unit_text = p;
    double mult = 1;
    for (size_t i = 1; i < NELEM(rate_multipliers); i++)
        if (*p == rate_multipliers[i].name[0]) {
            mult = (double)rate_multipliers[i].mult;
            p++;
            break;
        }
    enum rci_rate_unit unit;
    if (strcmp(p, "B/s") == 0) unit = RCI_RATE_BYTES;
    else if (strcmp(p, "chunks/s") == 0) unit = RCI_RATE_CHUNKS;
    else if (!*p) return fail(-EINVAL, why, whylen, "a rate needs a unit: %s", rate_unit_hint);
    else return fail(-EINVAL, why, whylen, "unknown unit '%s': %s", unit_text, rate_unit_hint);
    double v = number_value(&n) * mult;
    if (!isfinite(v)) return fail(-ERANGE, why, whylen, "too large");
    if (v <= 0) return fail(-EINVAL, why, whylen, "must be more than 0 (write 'unlimited' for no limit)");
    *out = (struct rci_rate){.unit = unit, .per_second = v};
    return 0;
}

int rci_cfg_parse_bool(const char *s, bool *out, char *why, size_t whylen)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    if (!s || !*s) return fail(-EINVAL, why, whylen, "empty value");
    for (size_t i = 0; i < NELEM(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = true; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = false; return 0; }
    }
    return fail(-EINVAL, why, whylen, "not a boolean (use true/false, yes/no, on/off or 1/0)");
}

int rci_cfg_parse_uint(const char *s, uint64_t *out, char *why, size_t whylen)
{
    struct number n;
    const char *p;
    int rc = parse_number(s, true, &n, &p, why, whylen);
    if (rc) return rc;
    if (n.scale != 1) return fail(-EINVAL, why, whylen, "not a whole number");
    if (*p) return fail(-EINVAL, why, whylen, "unexpected '%s' after the number", p);
    *out = n.whole;
    return 0;
}

/* [0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)? or .[0-9]+ (exponent optional): what
 * strtod reads minus hex floats, inf, nan and leading blanks. */
static bool is_plain_float(const char *s)
{
    const char *p = s;
    bool digits = false;
    for (; is_digit(*p); p++) digits = true;
    if (*p == '.')
        for (p++; is_digit(*p); p++) digits = true;
    if (!digits) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!is_digit(*p)) return false;
        while (is_digit(*p)) p++;
    }
    return *p == '\0';
}

int rci_cfg_parse_double(const char *s, double *out, char *why, size_t whylen)
{
    if (!s || !*s) return fail(-EINVAL, why, whylen, "empty value");
    if (*s == '-') return fail(-EINVAL, why, whylen, "negative values are not allowed");
    if (!is_plain_float(s))
        return fail(-EINVAL, why, whylen, "not a number (write e.g. 0, 0.001 or 1e-6)");
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE || !isfinite(v)) return fail(-ERANGE, why, whylen, "out of the range of a double");
    *out = v;
    return 0;
}

char *rci_cfg_format_double(double d, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    return buf;
}

/* ---- public wrappers ---- */

int rci_parse_size(const char *s, uint64_t *out) { return rci_cfg_parse_size(s, out, NULL, 0); }
int rci_parse_duration(const char *s, uint64_t *ns) { return rci_cfg_parse_duration(s, ns, NULL, 0); }
int rci_parse_rate(const char *s, struct rci_rate *out) { return rci_cfg_parse_rate(s, out, NULL, 0); }
int rci_parse_bool(const char *s, bool *out) { return rci_cfg_parse_bool(s, out, NULL, 0); }
int rci_parse_uint(const char *s, uint64_t *out) { return rci_cfg_parse_uint(s, out, NULL, 0); }

/* ---- formatters ---- */

static char *format_exact(uint64_t v, const struct unit *units, size_t n, char *buf, size_t len)
{
    if (v == 0) { /* "0" needs no unit, and 0 is a multiple of every unit */
        snprintf(buf, len, "0");
        return buf;
    }
    /* units are ordered from the largest multiplier down; the last is 1 */
    for (size_t i = 0; i < n; i++)
        if (v % units[i].mult == 0) {
            snprintf(buf, len, "%" PRIu64 "%s", v / units[i].mult, units[i].name);
            return buf;
        }
    snprintf(buf, len, "%" PRIu64, v);
    return buf;
}

char *rci_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const struct unit out_units[] = {
        {"T", 1ull << 40}, {"G", 1ull << 30}, {"M", 1ull << 20}, {"k", 1ull << 10}, {"", 1},
    };
    return format_exact(bytes, out_units, NELEM(out_units), buf, len);
}

char *rci_format_duration(uint64_t ns, char *buf, size_t len)
{
    static const struct unit out_units[] = {
        {"s", 1000000000}, {"ms", 1000000}, {"us", 1000}, {"ns", 1},
    };
    return format_exact(ns, out_units, NELEM(out_units), buf, len);
}

/* Try the largest SI multiplier and the fewest decimals whose text reads back
 * to exactly the same double, so that printed configurations round-trip. */
char *rci_format_rate(const struct rci_rate *rate, char *buf, size_t len)
{
    static const struct unit mults[] = {{"G", 1000000000}, {"M", 1000000}, {"k", 1000}, {"", 1}};
    if (rate->unit == RCI_RATE_UNLIMITED) {
        snprintf(buf, len, "unlimited");
        return buf;
    }
    const char *unit = rate->unit == RCI_RATE_CHUNKS ? "chunks/s" : "B/s";
    for (size_t m = 0; m < NELEM(mults); m++) {
        double v = rate->per_second / (double)mults[m].mult;
        if (v < 1 && mults[m].mult != 1) continue;
        for (int decimals = 0; decimals <= (int)MAX_FRACTION_DIGITS; decimals++) {
            struct rci_rate back;
            snprintf(buf, len, "%.*f%s%s", decimals, v, mults[m].name, unit);
            if (rci_cfg_parse_rate(buf, &back, NULL, 0) == 0 && back.unit == rate->unit &&
                back.per_second == rate->per_second)
                return buf;
        }
    }
    /* Not produced by our parser (e.g. more precision than 9 decimals): closest text. */
    snprintf(buf, len, "%.*f%s", (int)MAX_FRACTION_DIGITS, rate->per_second, unit);
    return buf;
}
